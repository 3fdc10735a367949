"""``nvtopo audit`` over a simulated fleet of DGX H100 snapshots: throughput, --jobs, memory.

Generates the fleet once into a cache directory (default ``$TMPDIR/nvtopo-bench-fleet``):
``--distinct`` simulated nodes (every tenth one faulty, cycling through fault kinds), copied
under new hostnames up to ``--files`` files (10,000 by default; 4.7 GB), each written as
``nvtopo simulate -o`` writes a snapshot: the evidence and the sealed cache of its model.  Then measures, as
fresh processes:

* the baseline: merely reading and JSON-decoding every file (one process);
* ``nvtopo audit --jobs 1`` and ``--jobs 2`` (``--jobs-list`` for more) over ``--sample``
  files: files per second, and the CPU cost of ``--jobs 1`` against the baseline's
  (target, issue 29: at most 1.3x);
* peak RSS of the audit process (``getrusage(RUSAGE_CHILDREN)`` after each run; every run in
  its own child of a fresh runner, so peaks do not mix) for 1,000 and for all files.

    python benchmarks/bench_audit.py [--files 10000] [--sample 1000] [--runs 3] [--dir DIR]
                                     [--repo PATH]

``--paired [--runs N] [--repo PATH]`` times instead, in one fresh process a run, each file as
``audit --jobs 1`` checks it (``check_file``) right beside read + ``json.loads`` of it
(``_machine.paired``; docs/benchmarks.md §1).

``--repo PATH`` times another checkout's ``audit --jobs 1`` too, in the same rounds (floor,
this checkout, the other's floor, the other), so a before/after pair shares its load.  The
other's fleet is the same simulations written by the other checkout itself (sealed by its
own derivation code, in ``DIR-<its code digest>``), so each reads caches it wrote; each is
compared with the floor of its own files (a cache format that shrinks the files lowers the
floor too).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _machine import installed_env, machine, paired, paired_line, round_ratios  # noqa: E402

FAULTS = [["nvlink-down:GPU3:7"], ["ib-port-down:mlx5_4"], ["gpu-missing:GPU7"],
          ["pcie-width:GPU5:8"], ["counters:mlx5_2:symbol_error=1000"],
          ["nvlink-degraded:GPU2-GPU6"], ["fabric-not-started"], ["ib-rate:mlx5_0:200"]]


FLEET_FORMAT = 2  # 2: files written by snapshot.dumps (evidence + sealed model cache)
_POOL: list = []


def _write_node(job) -> None:
    i, d, distinct, cache = job
    from nvtopo import snapshot

    src = _POOL[i % distinct]
    doc = dict(src, host=dict(src["host"], hostname=f"node{i:05d}"))
    sub = d / f"rack{i // 1000:02d}"
    sub.mkdir(exist_ok=True)
    # as `nvtopo simulate -o` writes it: the model derived from this very document, sealed
    (sub / f"node{i:05d}.json").write_text(snapshot.dumps(doc) if cache
                                           else json.dumps(doc, indent=2) + "\n")


def generate(d: Path, files: int, distinct: int, cache: bool = True) -> int:
    """Write the fleet (idempotent: a complete directory is reused).  Returns faulty count."""
    import multiprocessing

    from nvtopo import snapshot

    # a cache sealed by other derivation code is (rightly) not used: regenerate after changes
    marker = d / f".complete-{files}-{distinct}-v{FLEET_FORMAT}-{snapshot.code_digest()[:16]}"
    faulty = sum(1 for i in range(files) if (i % distinct) % 10 == 3)
    if marker.exists():
        return faulty
    from nvtopo import layouts
    from nvtopo.simulate import simulate

    d.mkdir(parents=True, exist_ok=True)
    lay = layouts.load("dgx-h100")
    t = time.perf_counter()
    _POOL.clear()
    for i in range(distinct):
        faults = FAULTS[(i // 10) % len(FAULTS)] if i % 10 == 3 else []
        _POOL.append(simulate(lay, faults, seed=i, hostname=f"sim{i:05d}"))
    # every file is derived and sealed on its own (its hostname differs), in parallel
    with multiprocessing.get_context("fork").Pool() as pool:
        for _ in pool.imap_unordered(_write_node, [(i, d, distinct, cache) for i in range(files)],
                                     chunksize=50):
            pass
    marker.write_text("ok\n")
    print(f"generated {files} files ({distinct} distinct simulations) in "
          f"{time.perf_counter() - t:.0f} s into {d}")
    return faulty


def list_files(d: Path, n: int) -> Path:
    """A directory of symlinks to the first ``n`` files (so audit walks exactly those)."""
    out = d.parent / f"{d.name}-first{n}"
    if not out.exists():
        out.mkdir()
        for i in range(n):
            src = d / f"rack{i // 1000:02d}" / f"node{i:05d}.json"
            os.symlink(src, out / f"node{i:05d}.json")
    return out


RUNNER = r"""
import resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, ru.ru_maxrss, rc, ru.ru_utime + ru.ru_stime)
"""

BASELINE = r"""
import json, os, sys, time
t = time.perf_counter(); c = time.process_time(); n = 0
for root, dirs, files in os.walk(sys.argv[1]):
    dirs.sort()
    for f in sorted(files):
        with open(os.path.join(root, f), "rb") as fh:
            json.loads(fh.read()); n += 1
print(time.perf_counter() - t, n, time.process_time() - c)
"""


#: Run nvtopo as an installed package runs: with compiled bytecode (see
#: bench_check_startup.py), cached under a private prefix, never in the checkout.
ENV = installed_env(os.path.join(tempfile.gettempdir(), "nvtopo-bench-pycache"))


def digest_of(repo) -> str:
    """The derivation code digest of a checkout (its sealed caches carry it)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from nvtopo.snapshot import cache; print(cache.code_digest())")
    return subprocess.run([sys.executable, "-c", code, str(repo)], capture_output=True,
                          text=True, check=True).stdout.strip()


def other_fleet(args) -> Path:
    """The fleet as ``--repo`` writes it (sealed by its own derivation code, in a directory
    of its own), so the other checkout reads its caches, as it would in use, rather than
    re-deriving files sealed by this one."""
    d = Path(f"{args.dir}-{digest_of(args.repo)[:12]}")
    subprocess.run([sys.executable, str(Path(args.repo) / "benchmarks" / "bench_audit.py"),
                    "--files", str(args.files), "--distinct", str(args.distinct),
                    "--sample", str(args.sample), "--dir", str(d), "--skip-throughput",
                    "--skip-memory"],
                   cwd=args.repo, check=True, capture_output=True, env=ENV)
    return d


def run_child(cmd, cwd=None):
    out = subprocess.run([sys.executable, "-c", RUNNER, *cmd], capture_output=True, text=True,
                         check=True, env=ENV, cwd=cwd).stdout.split()
    return float(out[0]), int(out[1]), int(out[2]), float(out[3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--distinct", type=int, default=100)
    ap.add_argument("--sample", type=int, default=1000,
                    help="files for the throughput runs (memory uses 1,000 and --files)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs-list", default="1,2")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "nvtopo-bench-fleet"))
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--no-cache", action="store_true",
                    help="a fleet of evidence-only snapshots (as an older nvtopo wrote them, "
                         "or after an upgrade): every file is re-derived")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--repo", default=None,
                    help="another checkout whose audit --jobs 1 is timed alike (before/after)")
    ap.add_argument("--mem-jobs", type=int, default=1,
                    help="--jobs for the memory runs (1: everything in the measured process; "
                         "with more, worker processes are not counted)")
    ap.add_argument("--paired", action="store_true",
                    help="per file, in one process: audit's check of it against read + "
                         "json.loads of it, one right after the other (--runs processes; "
                         "--repo alike)")
    args = ap.parse_args()
    d = Path(args.dir + ("-evidence-only" if args.no_cache else ""))
    faulty = generate(d, args.files, args.distinct, cache=not args.no_cache)
    if args.paired:
        _paired_rounds(args, d)
        return
    nvtopo = [sys.executable, "-m", "nvtopo"]
    sample = list_files(d, args.sample)
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f} at the start "
          "(other processes share the cores: wall times and --jobs speed-up suffer, CPU "
          "time per file less)")
    run_child(nvtopo + ["audit", str(list_files(d, 10))])  # compile bytecode, unmeasured
    print(f"fleet: {args.files} simulated DGX H100 snapshots ({faulty} faulty, "
          f"{'evidence only' if args.no_cache else 'with the sealed model cache'}), "
          f"throughput on the first {args.sample}, medians of {args.runs} runs")

    other_sample = list_files(other_fleet(args), args.sample) if args.repo else None
    base, base_cpu, other_base = [], [], []
    after_cpu: list = []
    other_after: list = []
    jobs_list = [] if args.skip_throughput else [int(x) for x in args.jobs_list.split(",")]
    runs: dict = {jobs: [] for jobs in jobs_list}
    other: list = []
    for _ in range(0 if args.skip_throughput else args.runs):
        # interleaved: load from other processes on the machine hits every variant alike;
        # --jobs 1 (the cost line) between two floors of its own
        out = _floor(sample)
        base.append(float(out[0]))
        base_cpu.append(float(out[2]))
        for jobs in sorted(jobs_list, key=lambda j: j != 1):
            runs[jobs].append(run_child(nvtopo + ["audit", str(sample), "--format", "json",
                                                  "--jobs", str(jobs)]))
            if jobs == 1:
                after_cpu.append(float(_floor(sample)[2]))
        if args.repo:  # the other checkout, on its own files and their floor, same round
            _other_round(args, other_sample, (other_base, other_after), other, nvtopo)
    speeds = {}
    b = statistics.median(base) if base else 0.0
    if base:
        print(f"  read + json.loads          {args.sample / b:8.1f} files/s  ({b:.2f} s)")
    for jobs in jobs_list:
        w = statistics.median(r[0] for r in runs[jobs])
        cpu = statistics.median(r[3] for r in runs[jobs])
        speeds[jobs] = args.sample / w
        # CPU time is only the audit process's own (forkserver workers are not its reaped
        # children), so it is shown for --jobs 1, where every file is checked in-process
        print(f"  nvtopo audit --jobs {jobs:<2}      {speeds[jobs]:8.1f} files/s  ({w:.2f} s"
              + (f"; CPU {cpu:.2f} s = {cpu / args.sample * 1000:.1f} ms/file)" if jobs == 1
                 else ")")
              + (f"  speed-up x{speeds[jobs] / speeds[1]:.2f}" if jobs != 1 and 1 in speeds
                 else ""))
    if 1 in speeds:
        ratio = speeds[1] / (args.sample / b)
        print(f"  --jobs 1 / baseline = {ratio:.2f} (speed)")
        # the cost against the floor, in CPU time (load disturbs it far less than wall time):
        # the audit process (its start-up included) against reading + json.loads
        ratios = round_ratios([r[3] for r in runs[1]], base_cpu, after_cpu)
        cost = statistics.median(ratios)
        print(f"  CPU cost: audit --jobs 1 / (read + json.loads) = {cost:.2f}x (rounds "
              f"{min(ratios):.2f}-{max(ratios):.2f}; each run over the floors beside it)   "
              f"target <= 1.3x   {'OK' if cost <= 1.3 else 'OVER'}   "
              f"(load {os.getloadavg()[0]:.1f})")
    if other:
        _other_cost(args, other, base_cpu, (other_base, other_after))
    if not args.skip_memory:
        _memory(args, d, nvtopo)


def _paired_rounds(args, d: Path) -> None:
    """``--paired``: ``--runs`` fresh processes per checkout (alternating), each timing every
    file of the sample for ``audit`` (``check_file``, as ``audit --jobs 1`` checks it) and
    read + ``json.loads`` of it (:func:`_machine.paired`)."""
    samples = {"this": (str(REPO), list_files(d, args.sample))}
    if args.repo:
        samples["--repo"] = (args.repo, list_files(other_fleet(args), args.sample))
    print(f"machine: {machine()}; {args.sample} simulated DGX H100 snapshots")
    got: dict = {k: [] for k in samples}
    for run in range(args.runs):
        for k, (repo, sample) in samples.items():
            files = [str(sample / f) for f in sorted(os.listdir(sample))]
            # (audit streams its results: a file's verdict is all that is kept of it here)
            got[k].append(paired(repo, files,
                                 setup="from nvtopo.audit import check_file\n"
                                       "from nvtopo.pool import fleet_collections",
                                 step="check_file(f).verdict", context="fleet_collections()",
                                 after="sum(v != 'pass' for v in out)", run=run, env=ENV))
    for k, runs in got.items():
        print(paired_line(k, runs, "audit's check") + f"; {runs[-1]['extra']} not passing")


def _floor(sample) -> list:
    """One fresh process reading and ``json.loads``-ing the files: its output's fields."""
    return subprocess.run([sys.executable, "-c", BASELINE, str(sample)], capture_output=True,
                          text=True, check=True, env=ENV).stdout.split()


def _other_round(args, sample, floors, runs, nvtopo) -> None:
    """One round of the other checkout (``--repo``): its files' floor, its audit, the floor
    again (``floors``: the lists before and after)."""
    floors[0].append(float(_floor(sample)[2]))
    runs.append(run_child(nvtopo + ["audit", str(sample), "--format", "json", "--jobs", "1"],
                          cwd=args.repo))
    floors[1].append(float(_floor(sample)[2]))


def _other_cost(args, other, base_cpu, floors) -> None:
    """The other checkout's audit --jobs 1 (``--repo``) on the files it writes, against
    their floor and against this checkout's files' floor."""
    cpu = statistics.median(r[3] for r in other)
    floor = statistics.median(floors[0] + floors[1])
    ratios = round_ratios([r[3] for r in other], floors[0], floors[1])
    print(f"  --repo {args.repo}: its files' read + json.loads {floor:.2f} s CPU "
          f"({floor / args.sample * 1000:.2f} ms/file); its audit --jobs 1 CPU {cpu:.2f} s = "
          f"{cpu / args.sample * 1000:.1f} ms/file; / its floor = "
          f"{statistics.median(ratios):.2f}x (rounds {min(ratios):.2f}-{max(ratios):.2f}); "
          f"/ this checkout's files' floor = {cpu / statistics.median(base_cpu):.2f}x")


def _memory(args, d, nvtopo) -> None:
    """Peak RSS of the audit process for 1,000 and for all files, JSON and table."""
    for n in sorted({1000, args.files}):
        target = list_files(d, n) if n != args.files else d
        for fmt in ("json", "table"):
            wall, rss_kb, rc, _cpu = run_child(nvtopo + ["audit", str(target), "--format", fmt,
                                                   "--jobs", str(args.mem_jobs)])
            print(f"  peak RSS, {n:>6} files, --format {fmt:<5} --jobs {args.mem_jobs}: "
                  f"{rss_kb / 1024:6.1f} MiB"
                  f"  ({wall:.0f} s, exit {rc})")


if __name__ == "__main__":
    main()
