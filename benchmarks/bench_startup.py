"""Start-up of every command against its floor, the bare ``import typer, rich.console, rich.table``.

Each command runs as a fresh process on a sealed DGX H100 snapshot (as ``nvtopo simulate``
writes one), interleaved with the floor run by run, so load hits both alike; the figure is
the CPU time (user + system) the child used (``getrusage(RUSAGE_CHILDREN)``), which load
on a shared machine disturbs far less than wall time.  Medians of ``--runs``; each ratio is
the median of each run's CPU time over the mean of the floors just before and after it
(``round_ratios``), with their range; the load average is printed with the table.  Targets (issue 29): at most 1.3x the floor, JSON output
nearer 1.1x.

Both run as an installed package does, with compiled bytecode under a private
``PYTHONPYCACHEPREFIX`` filled by warm-up runs (never written into the checkout).

    python benchmarks/bench_startup.py [--runs 11] [--only check,help] [--repo PATH]

``--repo PATH`` runs another checkout's nvtopo too (``PYTHONPATH=PATH``; the code before a
change), interleaved with this one and the floor, for a before/after on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _machine import installed_env, machine, round_ratios  # noqa: E402

FLOOR = ["-c", "import typer, rich.console, rich.table"]
#: name -> (arguments after ``python -m nvtopo``, SNAP standing for the snapshot; target)
COMMANDS = {
    "help": (["--help"], 1.3),
    "check": (["check", "--from", "SNAP"], 1.3),
    "check-json": (["check", "--from", "SNAP", "--format", "json"], 1.1),
    "check-example": (["check", "--example", "dgx-h100-healthy"], 1.3),
    "show": (["show", "--from", "SNAP"], 1.3),
    "show-json": (["show", "--from", "SNAP", "--format", "json"], 1.1),
    "links": (["links", "--from", "SNAP"], 1.3),
}


#: Which nvtopo a run imports (checked before timing: a run must time the checkout named).
WHERE = [sys.executable, "-c", "import nvtopo; print(nvtopo.__file__)"]


def cpu(cmd: List[str], env: Dict[str, str]) -> float:
    """CPU seconds (user + system) of one fresh run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


WRITE_SNAPSHOT = ("import sys; from nvtopo import layouts, snapshot; "
                  "from nvtopo.simulate import simulate; "
                  "open(sys.argv[1], 'w').write(snapshot.dumps("
                  "simulate(layouts.load('dgx-h100'), [], seed=1)))")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--only", default=None, help="commands to run, comma-separated")
    ap.add_argument("--repo", default=None, help="another checkout, measured alike")
    args = ap.parse_args()
    from nvtopo import layouts, snapshot
    from nvtopo.simulate import simulate

    names = args.only.split(",") if args.only else list(COMMANDS)
    tmp = tempfile.mkdtemp(prefix="nvtopo-bench-")
    try:
        snap = os.path.join(tmp, "node.json")
        Path(snap).write_text(snapshot.dumps(simulate(layouts.load("dgx-h100"), [], seed=1)))
        # run from the temporary directory, each checkout named by PYTHONPATH: from a
        # checkout's own directory, `python -m nvtopo` would import that one whatever it says
        os.chdir(tmp)
        env = dict(installed_env(os.path.join(tmp, "pycache")), PYTHONPATH=str(REPO))
        envs = {"": env}
        snaps = {"": snap}
        if args.repo:
            envs["other "] = dict(installed_env(os.path.join(tmp, "pycache-other")),
                                  PYTHONPATH=str(Path(args.repo).resolve()))
            # the other checkout reads a snapshot it sealed itself (else it re-derives)
            snaps["other "] = os.path.join(tmp, "node-other.json")
            subprocess.run([sys.executable, "-c", WRITE_SNAPSHOT, snaps["other "]],
                           env=envs["other "], check=True)
        named = {"": REPO, "other ": Path(args.repo).resolve() if args.repo else REPO}
        for tag in envs:  # each run imports the checkout it is named for
            found = subprocess.run(WHERE, capture_output=True, text=True, env=envs[tag],
                                   check=True).stdout.strip()
            assert Path(found).resolve().is_relative_to(Path(named[tag]).resolve()), \
                (tag, found)
        py = sys.executable
        cmds = {(tag, n): [py, "-m", "nvtopo"] + [snaps[tag] if a == "SNAP" else a
                                                  for a in COMMANDS[n][0]]
                for n in names for tag in envs}
        for (tag, _), cmd in [(("", ""), [py] + FLOOR)] + list(cmds.items()):  # .pyc, cache
            cpu(cmd, envs[tag]), cpu(cmd, envs[tag])
        floor: List[float] = []
        runs: Dict[tuple, List[float]] = {k: [] for k in cmds}
        beside: Dict[tuple, List[float]] = {k: [] for k in cmds}  # the floors around each
        for _ in range(args.runs):  # interleaved: a floor between every two commands
            for (tag, n), cmd in cmds.items():
                floor.append(cpu([py] + FLOOR, env))
                runs[(tag, n)].append(cpu(cmd, envs[tag]))
                beside[(tag, n)].append(len(floor) - 1)
        floor.append(cpu([py] + FLOOR, env))
        base = statistics.median(floor)
        print(f"machine: {machine()}")
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"{args.runs} runs each, interleaved with the floor; CPU time, medians; each "
              "ratio the median of each run's over the floors just before and after it")
        print(f"  {'floor: import typer, rich.console, rich.table':<48} {base * 1000:7.1f} ms")
        out = {"floor_ms": round(base * 1000, 1), "commands": {}}
        for (tag, n), times in runs.items():
            m = statistics.median(times)
            target = COMMANDS[n][1]
            at = beside[(tag, n)]  # each run over the floors just before and after it
            ratios = round_ratios(times, [floor[i] for i in at], [floor[i + 1] for i in at])
            r = statistics.median(ratios)
            print(f"  {tag + 'nvtopo ' + ' '.join(COMMANDS[n][0]):<48} {m * 1000:7.1f} ms  "
                  f"{r:5.2f}x (runs {min(ratios):.2f}-{max(ratios):.2f})  target <= {target}x  "
                  f"{'OK' if r <= target else 'OVER'}")
            out["commands"][tag + n] = {"ms": round(m * 1000, 1), "ratio": round(r, 2),
                                        "ratios": [round(x, 3) for x in ratios]}
        print(json.dumps(out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
