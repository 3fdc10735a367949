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
