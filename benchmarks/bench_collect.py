"""``nvtopo collect slurm`` against a bare ``srun`` round trip, and the collector's reading
and verification of records.

On a single-host test Slurm (munged, slurmctld and ``--nodes`` ``slurmd -N nX``; root and
Debian's slurmctld, slurmd, slurm-client, munge packages: tests/collect_harness.py), as
fresh processes, interleaved, medians of ``--runs``:

* ``srun -N n --ntasks-per-node=1 true``: the engine's own round trip;
* ``srun -N n ... python -m nvtopo collect node-record``: the probe itself on every node,
  through srun, output thrown away;
* ``nvtopo collect slurm --nodelist ... -o DIR``: the whole collection (node list, node
  states, the step, reading and verifying every record, writing the files and manifest).

The nodes run the real probes with a fake ``nvidia-smi`` that prints a DGX H100 matrix (no
GPU here).  Then, in this process, records per second: ``--records`` DGX H100 snapshot
records (simulated, ~28 kB gzipped each), interleaved line by line, read and verified
(length, SHA-256), and read, verified, checked to be a snapshot and written.

    python benchmarks/bench_collect.py [--nodes 4] [--runs 5] [--records 500]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))

from _machine import installed_env, machine  # noqa: E402


def _time(argv, env, cwd) -> float:
    t = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=300)
    took = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]}... failed ({done.returncode}): "
                         f"{done.stderr.decode(errors='replace')[-500:]}")
    return took


def engine(args, tmp: Path) -> None:
    import collect_harness as H

    why = H.slurm_missing()
    if why:
        print(f"srun round trip: not measured ({why})")
        return
    nodes = [f"n{i}" for i in range(1, args.nodes + 1)]
    cluster = H.SlurmCluster(tmp / "slurm", nodes=nodes)
    (tmp / "slurm").mkdir()
    cluster.start()
    try:
        bin_dir = H.fake_nvidia_smi(tmp / "bin").parent
        env = installed_env(str(tmp / "pycache"))
        env.update(SLURM_CONF=str(cluster.conf),
                   PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        n = str(len(nodes))
        listed = ",".join(nodes)
        bare = ["srun", "-N", n, "--ntasks-per-node=1", f"--nodelist={listed}", "true"]
        probe = ["srun", "-N", n, "--ntasks-per-node=1", f"--nodelist={listed}",
                 sys.executable, "-m", "nvtopo", "collect", "node-record", "--timeout", "30"]
        collect = [sys.executable, "-m", "nvtopo", "collect", "slurm", "--nodelist", listed,
                   "-o", str(tmp / "fleet"), "--timeout", "30"]
        for argv in (probe, collect):  # warm-up: bytecode into the private cache
            _time(argv, env, str(tmp))
        times = {"bare": [], "probe": [], "collect": []}
        for _ in range(args.runs):
            for name, argv in (("bare", bare), ("probe", probe), ("collect", collect)):
                times[name].append(_time(argv, env, str(tmp)))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{len(nodes)} nodes, medians of {args.runs} runs:")
        print(f"  srun -N{n} true                          {med['bare'] * 1000:7.0f} ms")
        print(f"  srun -N{n} nvtopo collect node-record    {med['probe'] * 1000:7.0f} ms "
              f"(the probe: +{(med['probe'] - med['bare']) * 1000:.0f} ms)")
        print(f"  nvtopo collect slurm                     {med['collect'] * 1000:7.0f} ms "
              f"(beyond the probe through srun: +{(med['collect'] - med['probe']) * 1000:.0f} ms)")
        print("  (target: collect slurm adds little beyond the probe to a bare srun)")
    finally:
        cluster.stop()


def records(args, tmp: Path) -> None:
    from nvtopo import layouts, output, snapshot
    from nvtopo.commands.collect import collector, record
    from nvtopo.simulate import simulate

    payload = output.compress(snapshot.dumps(simulate(layouts.load("dgx-h100"), [],
                                                      seed=1)).encode())
    nodes = [f"gpu{i:05d}" for i in range(args.records)]
    streams = [list(record.encode(n, payload, {"topology_addr": f"s.l{i % 32}.{n}"}))
               for i, n in enumerate(nodes)]
    rng = random.Random(1)
    merged = []
    cursors = [0] * len(streams)
    live = list(range(len(streams)))
    while live:
        k = rng.randrange(len(live))
        i = live[k]
        merged.append(streams[i][cursors[i]])
        cursors[i] += 1
        if cursors[i] == len(streams[i]):
            live[k] = live[-1]
            live.pop()
    size = sum(map(len, merged))
    print(f"{len(nodes)} records of {len(payload):,} bytes ({size / 2 ** 20:.1f} MiB of "
          "lines, interleaved line by line):")
    got = []
    t = time.perf_counter()
    r = record.Reader(set(nodes), lambda n, p, m: got.append(n), lambda *a: None)
    for line in merged:
        r.feed(line)
    r.close()
    took = time.perf_counter() - t
    assert len(got) == len(nodes)
    print(f"  read and verified (length, SHA-256)      {len(nodes) / took:8.0f} records/s "
          f"({size / took / 2 ** 20:.0f} MiB/s)")
    out = tmp / "records"
    out.mkdir()
    coll = collector.Collection(str(out), "slurm", nodes)
    t = time.perf_counter()
    r = coll.reader(labelled=True)
    for line in merged:
        r.feed(line)
    r.close()
    coll.finish({"mode": "new"}, {"timeout_s": 30, "node_limit_s": 60, "launch_wait_s": 60})
    took = time.perf_counter() - t
    assert all(coll.answered(n) for n in nodes)
    print(f"  + gunzip, snapshot check, file written   {len(nodes) / took:8.0f} records/s")
    memory(payload, args.records * 4, tmp)


def _interleaved(nodes, payload, window, rng):
    """Every node's record lines, ``window`` records in flight at once (as one srun step of
    that many nodes), interleaved line by line, made as they are read."""
    from nvtopo.commands.collect import record

    waiting = list(reversed(nodes))
    live = []
    while waiting or live:
        while waiting and len(live) < window:
            live.append(record.encode(waiting.pop(), payload))
        k = rng.randrange(len(live))
        line = next(live[k], None)
        if line is None:
            live[k] = live[-1]
            live.pop()
            continue
        yield line


def memory(payload, count, tmp: Path) -> None:
    """Memory the collector holds while it reads ``count`` records, 256 in flight."""
    import tracemalloc

    from nvtopo.commands.collect import collector

    nodes = [f"m{i:05d}" for i in range(count)]
    out = tmp / "memory"
    out.mkdir()
    coll = collector.Collection(str(out), "slurm", nodes)
    reader = coll.reader(labelled=True)
    tracemalloc.start()
    for line in _interleaved(nodes, payload, 256, random.Random(2)):
        reader.feed(line)
    reader.close()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert all(coll.answered(n) for n in nodes)
    print(f"  {count} records, 256 in flight: at most {peak / 2 ** 20:.1f} MiB held "
          f"({count * len(payload) / 2 ** 20:.0f} MiB of payloads went through)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--records", type=int, default=500)
    args = ap.parse_args()
    print(machine())
    tmp = Path(tempfile.mkdtemp(prefix="nvtopo-bench-collect-"))
    try:
        engine(args, tmp)
        records(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
