"""End-to-end wall time of ``nvtopo check --from SNAPSHOT`` against importing typer and rich.

Target: at most 1.5x the wall time of ``python -c "import typer, rich.console, rich.table"``
on the same machine (both run as fresh processes, medians of several runs).  A plain script:

    python benchmarks/bench_check_startup.py [--runs 15] [--layout dgx-h100]
"""

from __future__ import annotations

import argparse
import json
import os
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

from _machine import machine  # noqa: E402


def wall(cmd, runs: int) -> list:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--layout", default="dgx-h100")
    args = ap.parse_args()
    from nvtopo import layouts
    from nvtopo.simulate import simulate

    tmp = tempfile.mkdtemp(prefix="nvtopo-bench-")
    try:
        snap = os.path.join(tmp, "node.json")
        Path(snap).write_text(json.dumps(simulate(layouts.load(args.layout), [], seed=1)))
        py = sys.executable
        base_cmd = [py, "-c", "import typer, rich.console, rich.table"]
        check_cmd = [py, "-m", "nvtopo", "check", "--from", snap]
        wall(base_cmd, 2), wall(check_cmd, 2)  # warm the page cache and .pyc files
        base, check = [], []
        for _ in range(args.runs):  # interleaved, so load on the machine hits both alike
            base += wall(base_cmd, 1)
            check += wall(check_cmd, 1)
        mb, mc = statistics.median(base), statistics.median(check)
        print(f"machine: {machine()}")
        print(f"{args.runs} runs each, interleaved; snapshot {os.path.getsize(snap) / 1e6:.2f} MB "
              f"({args.layout})")
        print(f"  import typer, rich.console, rich.table  median {mb * 1000:7.1f} ms  "
              f"min {min(base) * 1000:7.1f} ms")
        print(f"  nvtopo check --from snapshot           median {mc * 1000:7.1f} ms  "
              f"min {min(check) * 1000:7.1f} ms")
        print(f"  ratio (medians) {mc / mb:.2f}x   target <= 1.5x   "
              f"{'OK' if mc / mb <= 1.5 else 'OVER'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
