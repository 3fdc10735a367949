"""``nvtopo cluster`` over a simulated fleet: time per node and peak memory, one core.

The fleet is ``simulate gb200-nvl72-tray --nodes N`` output (the same documents,
:func:`nvtopo.simulate.fleet.node_document` sealed by ``snapshot.dumps``; written here with
plain writes in ``--gen-jobs`` processes, since generating is not what is measured), kept in
``--dir`` and reused when it already holds N files.  Then, in a fresh process each, for every
size in ``--sizes``: ``cluster.run(first SIZE files, jobs=1)`` (reading every snapshot through
the front door and the sealed cache, the families, the JSON document), its wall time, CPU time
and peak RSS (``ru_maxrss``).  Flat memory shows as a peak RSS that does not grow with SIZE.

    python benchmarks/bench_cluster.py --nodes 10000 --sizes 1000,10000 [--dir DIR] [--runs 3]
                                       [--repo PATH]

Each size is also measured against its floor: reading and ``json.loads`` of the same files
in a fresh process (CPU time), interleaved with the cluster runs (``--runs`` rounds,
medians), and the ratio printed (issue 29: about 1.3x).  ``--repo PATH`` times another
checkout's cluster in the same rounds (a before/after under the same load).

``--families [--repo PATH]`` times instead the fleet checks alone on synthesised inputs that
were quadratic or cubic before issue 21 (docs/cluster.md §6): the WireGuard mesh check over
2,000 nodes (no peers; hub and spoke; a complete mesh), ``--fabric`` over a spine switch with
60,000 peers and over a leaf with 30,000 nodes, and the rails over one node of 20,000 rails
among 20,000 nodes; CPU seconds each, in a fresh process.  ``--repo`` points at another
checkout (the code before, for a before/after on one machine).  Measured on a 2-CPU Xeon VM
shared with other work, Python 3.11.7, CPU seconds (before issue 21 -> after):

    mesh-no-peers-2000      75.7 -> 0.05     fabric-spine-60000   43.1 -> 2.0
    mesh-hub-2000           80.8 -> 0.05     fabric-leaf-30000    23.5 -> 0.3
    mesh-full-2000           2.2 -> 1.1-1.5  rails-20000x20000    26.0 -> 0.5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _machine import machine  # noqa: E402

LAYOUT = "gb200-nvl72-tray"


def _gen(args: tuple) -> int:
    directory, nodes, start, stop = args
    from nvtopo.layouts import load
    from nvtopo.simulate import fleet
    from nvtopo.snapshot import dumps

    p = fleet.plan(load(LAYOUT), nodes)
    for i in range(start, stop):
        path = os.path.join(directory, f"{fleet.hostname(p, i)}.json")
        if os.path.exists(path):
            continue
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(dumps(fleet.node_document(p, i)))
        os.replace(path + ".tmp", path)
    return stop - start


def generate(directory: str, nodes: int, jobs: int) -> float:
    os.makedirs(directory, exist_ok=True)
    t = time.perf_counter()
    step = 200
    work = [(directory, nodes, a, min(nodes, a + step)) for a in range(0, nodes, step)]
    if jobs <= 1:
        for w in work:
            _gen(w)
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            for _ in pool.imap_unordered(_gen, work):
                pass
    return time.perf_counter() - t


FLOOR = """
import json, os, sys, time
d, size = sys.argv[1], int(sys.argv[2])
files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith('.json'))[:size]
c = time.process_time()
for f in files:
    with open(f, "rb") as fh:
        json.loads(fh.read())
print(time.process_time() - c)
"""


def floor(directory: str, size: int) -> float:
    """One fresh process: CPU seconds to read and ``json.loads`` the same files (the floor)."""
    out = subprocess.run([sys.executable, "-c", FLOOR, directory, str(size)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def measure(directory: str, size: int, repo: str = str(REPO)) -> dict:
    """One fresh process: cluster over the first ``size`` files (``repo``: the checkout)."""
    code = f"""
import json, os, resource, sys, time
sys.path.insert(0, {repo!r})
from nvtopo.commands import cluster
files = sorted(os.path.join({directory!r}, f) for f in os.listdir({directory!r})
               if f.endswith('.json'))[:{size}]
t, c = time.perf_counter(), time.process_time()
r = cluster.run(files, jobs=1)
doc = cluster.document(r)
print(json.dumps({{"nodes": len(r.nodes), "findings": len(r.findings),
                  "wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


FAMILY_CASES = ["mesh-no-peers-2000", "mesh-hub-2000", "mesh-full-2000", "fabric-spine-60000",
                "fabric-leaf-30000", "rails-20000x20000"]

_FAMILY_CODE = """
import sys, time
sys.path.insert(0, REPO)
case = CASE
if case.startswith("mesh"):
    from nvtopo.commands.cluster import mesh
    from nvtopo.commands.cluster.facts import NodeFacts
    n = 2000
    key = ["%043d=" % i for i in range(n)]
    def peers(i):
        if "no-peers" in case:
            return ()
        if "hub" in case:
            return tuple(key[1:]) if i == 0 else (key[0],)
        return tuple(key[:i] + key[i + 1:])
    nodes = [NodeFacts(file="n%d" % i, name="node-%05d" % i,
                       mesh=[("wg0", key[i], 1420, peers(i), "ok")]) for i in range(n)]
    t = time.process_time()
    found = len(mesh.check(nodes))
elif case.startswith("fabric"):
    from nvtopo.commands.cluster import fabric
    n = int(case.rsplit("-", 1)[1])
    if "spine" in case:
        lines = ['Switch\\t%d "S-%016x"\\t# "spine"' % (n, 1)]
        lines += ['[%d]\\t"S-%016x"[1]\\t# "leaf%d"' % (p + 1, p + 2, p) for p in range(n)]
        lines.append("")
        for p in range(n):
            lines += ['Switch\\t2 "S-%016x"\\t# "leaf%d"' % (p + 2, p),
                      '[1]\\t"S-%016x"[%d]\\t# "spine"' % (1, p + 1),
                      '[2]\\t"H-%016x"[1]\\t# "n%05d mlx5_0"' % (p, p), ""]
        d2n = {"n%05d mlx5_0" % p: "node-%05d" % p for p in range(n)}
    else:
        lines = ['Switch\\t%d "S-%016x"\\t# "leaf"' % (2 * n, 1)]
        lines += ['[%d]\\t"H-%016x"[1]\\t# "n%05d mlx5_%d"' % (h + 1, h, h // 2, h % 2)
                  for h in range(2 * n)]
        d2n = {"n%05d mlx5_%d" % (h // 2, h % 2): "node-%05d" % (h // 2) for h in range(2 * n)}
    text = "\\n".join(lines + [""])
    t = time.process_time()
    found = len(fabric.tree(fabric.parse(text, "bench"), d2n)["switches"])
else:
    from nvtopo.commands.cluster import rails
    from nvtopo.commands.cluster.facts import NodeFacts, Rail
    n = 20000
    def rail(r):
        return Rail(r, "mlx5_%d" % r, "InfiniBand", 400, "ACTIVE", "fe80::", 10, 1, None, None)
    nodes = [NodeFacts(file="n%d" % i, name="n%05d" % i, layout="dgx-h100",
                       rails=[rail(0), rail(1)]) for i in range(n)]
    nodes[7].rails = [rail(r) for r in range(n)]
    t = time.process_time()
    found = len(rails.check(nodes))
print(time.process_time() - t, found)
"""


def families(repo: str, timeout: float) -> None:
    """``--families``: each case in a fresh process (``timeout`` seconds at most)."""
    for case in FAMILY_CASES:
        code = _FAMILY_CODE.replace("REPO", repr(repo)).replace("CASE", repr(case))
        try:
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"{case:22s} more than {timeout:.0f} s CPU (stopped)")
            continue
        cpu, found = out.stdout.split()
        print(f"{case:22s} {float(cpu):8.3f} s CPU  ({found} findings or switches)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--sizes", default="")
    ap.add_argument("--dir", default=os.path.join("/tmp", "nvtopo-bench-cluster"))
    ap.add_argument("--gen-jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--families", action="store_true",
                    help="time the fleet checks alone on synthesised worst cases")
    ap.add_argument("--repo", default=str(REPO),
                    help="another checkout to time alike (--families; or the fleet, in the "
                         "same rounds as this one)")
    ap.add_argument("--runs", type=int, default=1,
                    help="rounds of (floor, cluster[, --repo's cluster]); medians")
    ap.add_argument("--timeout", type=float, default=600.0)
    a = ap.parse_args()
    if a.families:
        families(a.repo, a.timeout)
        return
    have = len([f for f in os.listdir(a.dir) if f.endswith(".json")]) \
        if os.path.isdir(a.dir) else 0
    if have < a.nodes:
        s = generate(a.dir, a.nodes, a.gen_jobs)
        print(f"generated {a.nodes - have} snapshots in {s:.0f} s ({a.gen_jobs} processes)")
    if a.generate_only:
        return
    sizes = [int(x) for x in a.sizes.split(",") if x] or [a.nodes // 10 or 1, a.nodes]
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.1f}")
    for size in sizes:
        _rounds(a, size)


def _rounds(a: argparse.Namespace, size: int) -> None:
    """``--runs`` rounds over the first ``size`` files: the floor (read + json.loads), this
    checkout's cluster and, with ``--repo``, the other's, interleaved; medians."""
    repos = {"this": str(REPO)}
    if os.path.realpath(a.repo) != os.path.realpath(str(REPO)):
        repos["--repo"] = a.repo
    base: list = []
    got: dict = {k: [] for k in repos}
    for _ in range(a.runs):
        base.append(floor(a.dir, size))
        for k, repo in repos.items():
            got[k].append(measure(a.dir, size, repo))
    b = statistics.median(base)
    print(f"read + json.loads of {size} snapshots: {b:.2f} s CPU "
          f"({1000 * b / size:.2f} ms/node; median of {a.runs})")
    for k, ms in got.items():
        m = ms[-1]
        cpu = statistics.median(x["cpu_s"] for x in ms)
        wall = statistics.median(x["wall_s"] for x in ms)
        print(f"{k:>7}: cluster over {m['nodes']:6d} snapshots: {wall:7.1f} s wall, "
              f"{cpu:7.1f} s CPU ({1000 * cpu / max(1, m['nodes']):.2f} ms/node), "
              f"CPU / (read + json.loads) = {cpu / b:.2f}x, peak RSS "
              f"{max(x['peak_rss_mb'] for x in ms):.0f} MB, {m['findings']} findings "
              f"(load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
