"""``nvtopo cluster`` over a simulated fleet: time per node and peak memory, one core.

The fleet is ``simulate gb200-nvl72-tray --nodes N`` output (the same documents,
:func:`nvtopo.simulate.fleet.node_document` sealed by ``snapshot.dumps``; written here with
plain writes in ``--gen-jobs`` processes, since generating is not what is measured), kept in
``--dir`` and reused when it already holds N files.  Then, in a fresh process each, for every
size in ``--sizes``: ``cluster.run(first SIZE files, jobs=1)`` (reading every snapshot through
the front door and the sealed cache, the families, the JSON document), its wall time, CPU time
and peak RSS (``ru_maxrss``).  Flat memory shows as a peak RSS that does not grow with SIZE.

    python benchmarks/bench_cluster.py --nodes 10000 --sizes 1000,10000 [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

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


def measure(directory: str, size: int) -> dict:
    """One fresh process: cluster over the first ``size`` files."""
    code = f"""
import json, os, resource, sys, time
sys.path.insert(0, {str(REPO)!r})
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--sizes", default="")
    ap.add_argument("--dir", default=os.path.join("/tmp", "nvtopo-bench-cluster"))
    ap.add_argument("--gen-jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--generate-only", action="store_true")
    a = ap.parse_args()
    have = len([f for f in os.listdir(a.dir) if f.endswith(".json")]) \
        if os.path.isdir(a.dir) else 0
    if have < a.nodes:
        s = generate(a.dir, a.nodes, a.gen_jobs)
        print(f"generated {a.nodes - have} snapshots in {s:.0f} s ({a.gen_jobs} processes)")
    if a.generate_only:
        return
    sizes = [int(x) for x in a.sizes.split(",") if x] or [a.nodes // 10 or 1, a.nodes]
    for size in sizes:
        m = measure(a.dir, size)
        print(f"cluster over {m['nodes']:6d} snapshots: {m['wall_s']:7.1f} s wall, "
              f"{m['cpu_s']:7.1f} s CPU ({1000 * m['cpu_s'] / max(1, m['nodes']):.2f} ms/node), "
              f"peak RSS {m['peak_rss_mb']:.0f} MB, {m['findings']} findings")


if __name__ == "__main__":
    main()
