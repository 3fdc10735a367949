"""The checks of one NVSwitch domain at 8, 72, 144 and 576 GPUs: CPU time and growth exponent.

An N-GPU domain (``nvtopo.simulate.nvlink_domain``: 18 NVLink5 links a GPU, one 400G NIC a
GPU) holds N(N-1)/2 GPU pairs and N x N GPU-NIC pairs, so checks linear in pairs grow as
N^2: the exponent printed between two sizes, ``log(t2/t1) / log(N2/N1)``, is near 2 (the
floor), and the CPU time per GPU pair stays flat.  Before issue 29 a NIC looked up by a
linear scan inside the per-GPU NIC search, and the matrix's label index checked by comparing
a copy of every label, made them grow as N^3.

    python benchmarks/bench_checks.py [--sizes 8,72,144,576] [--runs 3] [--repo PATH]

Each size's snapshot is simulated once (evidence only) and kept in ``--dir``
(``$TMPDIR/nvtopo-bench-checks``; the 576-GPU one is about 0.3 GB and takes minutes).  Then,
per size, a fresh process derives the model and times ``checks.run`` ``--runs`` times (CPU
time, ``time.process_time``; median).  ``--repo PATH`` measures another checkout (the code
before a change) on the same files, alternating with this one size by size, so load hits
both alike; the load average is printed with every row.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from _machine import machine  # noqa: E402

CHILD = r"""
import json, sys, time, statistics
sys.path.insert(0, sys.argv[1])
from nvtopo import checks, snapshot
from nvtopo.simulate import nvlink_domain
n, runs = int(sys.argv[3]), int(sys.argv[4])
doc = json.loads(open(sys.argv[2]).read())
t = time.process_time()
topo = snapshot.derive(doc)
derive = time.process_time() - t
lay = nvlink_domain(n)
times, codes = [], None
for _ in range(runs):
    t = time.process_time()
    report = checks.run(topo, lay)
    times.append(time.process_time() - t)
    codes = sorted((f.code, str(f.subject)) for f in report.findings)
print(json.dumps({"derive": derive, "check": statistics.median(times), "findings": codes}))
"""


def _snapshot(directory: Path, n: int) -> Path:
    path = directory / f"nvl{n}.json"
    if not path.exists():
        from nvtopo.simulate import build, nvlink_domain, snapshot as sim_snapshot

        t = time.perf_counter()
        doc = sim_snapshot(build(nvlink_domain(n), seed=0))
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc))
        tmp.replace(path)
        print(f"  simulated {n} GPUs in {time.perf_counter() - t:.1f} s "
              f"({path.stat().st_size / 1e6:.0f} MB)", file=sys.stderr)
    return path


def _measure(repo: Path, path: Path, n: int, runs: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(repo), str(path), str(n),
                          str(runs)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _exponent(t1: float, t2: float, n1: int, n2: int) -> str:
    if t1 <= 0 or t2 <= 0:
        return "-"
    return f"{math.log(t2 / t1) / math.log(n2 / n1):.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8,72,144,576")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repo", default=None, help="another checkout to measure alike")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(),
                                                  "nvtopo-bench-checks"))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    repos = {"this": REPO}
    if args.repo:
        repos["other"] = Path(args.repo).resolve()
    print(f"machine: {machine()}")
    print(f"checks.run of an N-GPU NVSwitch domain; CPU s, median of {args.runs}; "
          "floor: exponent 2 (linear in GPU pairs)")
    rows: dict = {name: [] for name in repos}
    for n in sizes:
        path = _snapshot(directory, n)
        pairs = n * (n - 1) // 2
        for name, repo in repos.items():
            r = _measure(repo, path, n, args.runs)
            prev = rows[name][-1] if rows[name] else None
            rows[name].append((n, r))
            exp = _exponent(prev[1]["check"], r["check"], prev[0], n) if prev else "-"
            load = os.getloadavg()[0]
            print(f"{name:>5}  {n:4d} GPUs  {pairs:7d} pairs  derive {r['derive']:8.3f} s  "
                  f"check {r['check']:8.3f} s  ({r['check'] / pairs * 1e6:7.1f} us/pair)  "
                  f"exponent {exp:>5}  load {load:.2f}", flush=True)
        if len(repos) > 1:
            same = rows["this"][-1][1]["findings"] == rows["other"][-1][1]["findings"]
            print(f"       findings {'identical' if same else 'DIFFER'} at {n} GPUs")
    for name in repos:
        if len(rows[name]) > 1:
            (n1, a), (n2, b) = rows[name][0], rows[name][-1]
            print(f"{name}: exponent {n1}->{n2} GPUs: {_exponent(a['check'], b['check'], n1, n2)}"
                  f" (target: near 2)")


if __name__ == "__main__":
    main()
