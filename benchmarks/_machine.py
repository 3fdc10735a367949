"""The one-line description of the machine every benchmark prints with its figures, and the
helpers the benchmarks share."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def installed_env(pycache: str) -> dict:
    """The environment to run nvtopo as an installed package runs: with compiled bytecode
    (pip compiles every module), kept under ``pycache``, never written into the checkout
    (``PYTHONDONTWRITEBYTECODE=1`` would recompile nvtopo's sources on every start)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.node()} · {cpu} · {os.cpu_count()} CPUs · "
            f"Python {platform.python_version()} · {platform.system()} {platform.release()}")


def round_ratios(costs: list, before: list, after: list) -> list:
    """Each run's cost over the mean of the floors measured just before and just after it
    (``before[i]``, ``after[i]``: adjacent to run ``i``, so a steady drift cancels): the
    ratio within a round, where the machine's speed is nearly the same, and not a ratio of
    medians taken minutes apart (on a shared VM the same work's CPU time drifts by a fifth
    within minutes)."""
    assert len(costs) == len(before) == len(after), (len(costs), len(before), len(after))
    return [c / ((b + a) / 2) for c, b, a in zip(costs, before, after)]


#: One fresh process timing each file both ways (:func:`paired`).
_PAIRED = """
import contextlib, json, os, sys, time
sys.path.insert(0, sys.argv[1])
files = json.loads(sys.argv[2])
warm = int(sys.argv[3])
SETUP
clock = time.process_time

def floor(f):
    with open(f, "rb") as fh:
        json.loads(fh.read())

out, fixed, cost, base = [], 0.0, [], []
with CONTEXT:
    for i, f in enumerate(files):
        if i < warm:  # the first files: what a process pays once (imports, decoders)
            t = clock(); out.append(STEP); fixed += clock() - t
            floor(f)
            continue
        for step in ((0, 1) if i % 2 else (1, 0)):  # either first, alternately
            t = clock()
            if step:
                out.append(STEP)
            else:
                floor(f)
            (cost if step else base).append(clock() - t)
t = clock(); extra = AFTER; after = clock() - t
print(json.dumps({"cost": cost, "base": base, "fixed_s": fixed, "after_s": after,
                  "extra": extra}))
"""


def paired(repo: str, files: list, setup: str, step: str, context: str = "contextlib.nullcontext()",
           after: str = "None", warm: int = 20) -> dict:
    """One fresh process running ``repo``'s nvtopo: for each of ``files``, the expression
    ``step`` (of ``f``, the file; its values kept in ``out``, as a command keeps what it
    reads) and the floor, read + ``json.loads`` of the same file, one right after the other
    (either first, alternately), so whatever slows the machine for a moment slows both
    alike.  ``setup``: the imports; ``context``: the one the steps run in; the first ``warm``
    files are timed apart (what a process pays once), and ``after`` (an expression of
    ``out``, e.g. the fleet checks) last.  Returns the per-file CPU times (``cost``,
    ``base``), ``fixed_s``, ``after_s`` and ``after``'s value (``extra``)."""
    import json
    import subprocess
    import sys

    code = _PAIRED.replace("SETUP", setup).replace("CONTEXT", context) \
        .replace("STEP", step).replace("AFTER", after)
    res = subprocess.run([sys.executable, "-c", code, repo, json.dumps(files), str(warm)],
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def paired_line(label: str, runs: list, what: str) -> str:
    """The figure of :func:`paired` runs: each run's ratio is its files' ``what`` CPU over
    their read + ``json.loads`` CPU; the median ratio with the runs' range, the per-file
    medians, and what was paid once."""
    import statistics

    n = len(runs[0]["cost"])
    ratios = [sum(r["cost"]) / sum(r["base"]) for r in runs]
    cost = statistics.median(sum(r["cost"]) for r in runs) / n
    base = statistics.median(sum(r["base"]) for r in runs) / n
    return (f"{label:>7}: {n} files paired, {len(runs)} runs: read + json.loads "
            f"{1000 * base:.2f} ms/file, {what} {1000 * cost:.2f} ms/file: "
            f"{statistics.median(ratios):.2f}x (runs {min(ratios):.2f}-{max(ratios):.2f}); "
            f"paid once: {1000 * statistics.median(r['fixed_s'] for r in runs):.0f} ms over "
            f"the first files, then {1000 * statistics.median(r['after_s'] for r in runs):.0f}"
            f" ms (load {os.getloadavg()[0]:.1f})")
