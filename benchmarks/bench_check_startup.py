"""End-to-end wall time of ``nvtopo check --from SNAPSHOT`` against importing typer and rich.

Target: at most 1.5x the wall time of ``python -c "import typer, rich.console, rich.table"``
on the same machine (both run as fresh processes, medians of several runs); with
``--format json`` (``check --from SNAPSHOT --format json``) at most 1.25x.

Both commands run as an installed package does: with compiled bytecode.  ``pip install``
compiles every module, typer's and rich's included; an editable checkout under
``PYTHONDONTWRITEBYTECODE=1`` would recompile nvtopo's sources on every run (about 60 ms
here), which no installed nvtopo pays.  So the runs use a private ``PYTHONPYCACHEPREFIX``
(filled by the warm-up runs, for both commands alike) and never write into the checkout.

The snapshot is written as ``nvtopo simulate`` writes one (the evidence and the sealed model
cache); ``--no-cache`` writes the evidence only, so every run re-derives the model.  A plain
script:

    python benchmarks/bench_check_startup.py [--runs 15] [--layout dgx-h100] [--no-cache]
                                             [--format table|json]
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

from _machine import installed_env, machine  # noqa: E402


TARGETS = {"table": 1.5, "json": 1.25}


def wall(cmd, runs: int, env=None) -> list:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                       env=env)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--layout", default="dgx-h100")
    ap.add_argument("--format", choices=sorted(TARGETS), default="table",
                    help="check's output format (target: table 1.5x, json 1.25x)")
    ap.add_argument("--no-cache", action="store_true",
                    help="write the snapshot without the model cache (re-derive every run)")
    args = ap.parse_args()
    from nvtopo import layouts, snapshot
    from nvtopo.simulate import simulate

    tmp = tempfile.mkdtemp(prefix="nvtopo-bench-")
    try:
        snap = os.path.join(tmp, "node.json")
        doc = simulate(layouts.load(args.layout), [], seed=1)
        Path(snap).write_text(json.dumps(doc, indent=2) if args.no_cache
                              else snapshot.dumps(doc))
        env = installed_env(os.path.join(tmp, "pycache"))
        py = sys.executable
        base_cmd = [py, "-c", "import typer, rich.console, rich.table"]
        check_cmd = [py, "-m", "nvtopo", "check", "--from", snap, "--format", args.format]
        wall(base_cmd, 2, env), wall(check_cmd, 2, env)  # warm the page cache, compile .pyc
        base, check = [], []
        for _ in range(args.runs):  # interleaved, so load on the machine hits both alike
            base += wall(base_cmd, 1, env)
            check += wall(check_cmd, 1, env)
        mb, mc = statistics.median(base), statistics.median(check)
        print(f"machine: {machine()}")
        print(f"{args.runs} runs each, interleaved; snapshot {os.path.getsize(snap) / 1e6:.2f} MB "
              f"({args.layout}, {'evidence only' if args.no_cache else 'with the model cache'})"
              "; bytecode compiled for both")
        label = f"nvtopo check --from snapshot --format {args.format}"
        print(f"  {'import typer, rich.console, rich.table':<{len(label)}}  median "
              f"{mb * 1000:7.1f} ms  min {min(base) * 1000:7.1f} ms")
        print(f"  {label}  median {mc * 1000:7.1f} ms  min {min(check) * 1000:7.1f} ms")
        target = TARGETS[args.format]
        print(f"  ratio (medians) {mc / mb:.2f}x   target <= {target}x   "
              f"{'OK' if mc / mb <= target else 'OVER'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
