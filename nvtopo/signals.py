"""The signals that end nvtopo (SIGTERM, SIGHUP, SIGINT): taking them over for a while, and
giving them back.

Three places need them: an atomic ``-o`` write (remove the temporary file on the way out:
:mod:`nvtopo.output`), a worker pool (end every worker: :mod:`nvtopo.pool`) and a collection
(note the signal, end srun or Ray's tasks, write the manifest:
:mod:`nvtopo.commands.collect.interrupt`).  Each decides which current handler it may replace
(:func:`take`'s ``replace``); the taking over and the putting back are the same everywhere.
Outside the main thread Python sets no handler: nothing is taken there.
"""

from __future__ import annotations

import signal
from typing import Any, Callable, Dict, Optional

#: The signals that end the process, by name (those this platform has are used).
ENDING = ("SIGTERM", "SIGHUP", "SIGINT")


def ending() -> Dict[str, int]:
    """The ending signals this platform has: name -> number."""
    return {n: getattr(signal, n) for n in ENDING if hasattr(signal, n)}


def take(handler: Callable[[int, Any], Any],
         replace: Optional[Callable[[Any], bool]] = None) -> Dict[int, Any]:
    """Install ``handler`` for every ending signal whose current handler ``replace`` accepts
    (every one without it); returns what was replaced, for :func:`give_back`."""
    old: Dict[int, Any] = {}
    for sig in ending().values():
        try:
            if replace is not None and not replace(signal.getsignal(sig)):
                continue
            old[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread
            pass
    return old


def give_back(old: Dict[int, Any]) -> None:
    """Put back the handlers :func:`take` replaced (a handler Python could not name, ``None``,
    as the default)."""
    for sig, handler in old.items():
        try:
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        except (ValueError, OSError):
            pass
    old.clear()
