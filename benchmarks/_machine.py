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
import contextlib, gc, json, os, random, sys, time
clock = time.process_time
PLAIN = gc.get_threshold()  # (Python's own: what a read + json.loads process runs under)
t = clock()
sys.path.insert(0, sys.argv[1])
run = int(sys.argv[2])
warm = int(sys.argv[3])
files = json.loads(sys.stdin.read())
SETUP
imports = clock() - t

def floor(f):
    kept = gc.get_threshold()
    gc.set_threshold(*PLAIN)
    with open(f, "rb") as fh:
        json.loads(fh.read())
    gc.set_threshold(*kept)

out, fixed, fixed_base, cost, base = [], 0.0, 0.0, [], []
first = random.Random(run).choices((0, 1), k=len(files))  # (the same draw in each checkout)
with CONTEXT:
    for i, f in enumerate(files):
        for step in ((0, 1) if first[i] else (1, 0)):  # either first, drawn file by file
            t = clock()
            if step:
                out.append(STEP)
            else:
                floor(f)
            dt = clock() - t
            if i < warm:  # the first files: what a process pays once (decoders, lazy imports)
                if step:
                    fixed += dt
                else:
                    fixed_base += dt
            else:
                (cost if step else base).append(dt)
t = clock(); extra = AFTER; after = clock() - t
print(json.dumps({"cost": cost, "base": base, "imports_s": imports, "fixed_s": fixed,
                  "fixed_base_s": fixed_base, "warm": warm, "after_s": after,
                  "extra": extra}))
"""


def paired(repo: str, files: list, setup: str, step: str, context: str = "contextlib.nullcontext()",
           after: str = "None", warm: int = 20, run: int = 0, env: "dict | None" = None) -> dict:
    """One fresh process running ``repo``'s nvtopo: for each of ``files``, the expression
    ``step`` (of ``f``, the file; its values appended to ``out``) and the floor, read +
    ``json.loads`` of the same file, one right after the other, so whatever slows the
    machine for a moment slows both alike.  Which of the two goes first (the second finds the
    file's bytes in the caches) is drawn file by file, seeded by ``run`` (the run's number):
    an order that alternates lines up with a fleet's own patterns (every tenth node
    faulty), which made a run's ratio depend on its parity.
    ``setup``: the imports (timed); ``context``: the one the steps run in (the floor runs
    under Python's own collector thresholds, as a process of its own would); the first ``warm`` files (at most a quarter)
    are timed apart, both ways (what a process pays once shows as their excess); ``after``
    (an expression of ``out``, e.g. the fleet checks) last.  The file list goes through
    standard input (a list of 10,000 paths is longer than one argument may be).  Returns the
    per-file CPU times (``cost``, ``base``), ``imports_s``, ``fixed_s`` and
    ``fixed_base_s`` (the warm files' two sums), ``after_s`` and ``after``'s value
    (``extra``)."""
    import json
    import subprocess
    import sys

    warm = min(warm, len(files) // 4)
    if len(files) - warm < 1:
        raise ValueError("paired: no file to measure")
    code = _PAIRED.replace("SETUP", setup).replace("CONTEXT", context) \
        .replace("STEP", step).replace("AFTER", after)
    res = subprocess.run([sys.executable, "-c", code, repo, str(run), str(warm)],
                         input=json.dumps(files), capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"paired run failed ({res.returncode}): {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def paired_line(label: str, runs: list, what: str, after: "str | None" = None) -> str:
    """The figure of :func:`paired` runs: each run's ratio is its files' ``what`` CPU over
    their read + ``json.loads`` CPU; the median ratio with the runs' range, the per-file
    medians (each a median of its own: their quotient is near, not equal to, the ratio), and
    what was paid once: the imports, and the warm files' excess over the per-file cost;
    ``after``: what the ``after`` expression timed (None: not shown)."""
    import statistics

    n = len(runs[0]["cost"])
    ratios = [sum(r["cost"]) / sum(r["base"]) for r in runs]
    cost = statistics.median(sum(r["cost"]) for r in runs) / n
    base = statistics.median(sum(r["base"]) for r in runs) / n
    warm = runs[0]["warm"]
    excess = statistics.median(r["fixed_s"] - warm * sum(r["cost"]) / n for r in runs)
    return (f"{label:>7}: {n} files paired, {len(runs)} runs: read + json.loads "
            f"{1000 * base:.2f} ms/file, {what} {1000 * cost:.2f} ms/file: "
            f"{statistics.median(ratios):.2f}x (runs {min(ratios):.2f}-{max(ratios):.2f}); "
            f"paid once: imports {1000 * statistics.median(r['imports_s'] for r in runs):.0f}"
            f" ms, the first {warm} files {1000 * excess:.0f} ms over their per-file cost"
            + (f", {after} {1000 * statistics.median(r['after_s'] for r in runs):.0f} ms"
               if after else "") + f" (load at the end {os.getloadavg()[0]:.1f})")
