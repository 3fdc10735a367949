"""SIGTERM, SIGHUP and SIGINT during a collection: noted, then obeyed in order.

A collection that is told to stop must still end what it started and say what it has:
the engine's processes (srun's whole process group; Ray's tasks) and the manifest of the
nodes that answered so far.  Killed at once (the default for SIGTERM and SIGHUP), it left
srun and its step running and wrote no manifest; an exception raised from the handler
(as Ctrl-C's ``KeyboardInterrupt``) can land in the middle of that clean-up.  So, while a
:class:`Stop` is entered, the three signals only note themselves; the collection's loops
look at :attr:`Stop.signum` (:meth:`Stop.check` raises :class:`Interrupted` between
steps), end the engine's processes as at a deadline, and the manifest is written with
every node still without an answer marked ``interrupted``.  A second signal asks for
haste (:attr:`Stop.count`: srun's group gets SIGKILL without the grace).

A signal the process was told to ignore (``nohup``: SIGHUP) stays ignored.  Outside the
main thread (where Python cannot set handlers) nothing is installed.  See docs/collect.md.
"""

from __future__ import annotations

import signal
from typing import Any, Dict, Optional

from ... import signals


class Interrupted(Exception):
    """A signal ended the collection (raised by :meth:`Stop.check`, between steps)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal_name(signum)}")
        self.signum = signum

    @property
    def name(self) -> str:
        return signal_name(self.signum)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Stop:
    """While entered, SIGTERM, SIGHUP and SIGINT are noted here (the first one's number in
    :attr:`signum`, how many in :attr:`count`) instead of ending the process; the previous
    handlers are put back on exit."""

    def __init__(self) -> None:
        self.signum: Optional[int] = None
        self.count = 0
        self._old: Dict[int, Any] = {}

    def __enter__(self) -> "Stop":
        # nohup and the like: a signal the caller asked to be ignored stays ignored
        self._old = signals.take(self._noted, replace=lambda h: h != signal.SIG_IGN)
        return self

    def __exit__(self, *exc: Any) -> None:
        signals.give_back(self._old)

    def _noted(self, signum: int, _frame: Any) -> None:
        if self.signum is None:
            self.signum = signum
        self.count += 1

    @property
    def name(self) -> Optional[str]:
        return None if self.signum is None else signal_name(self.signum)

    def check(self) -> None:
        """Raise :class:`Interrupted` if a signal came."""
        if self.signum is not None:
            raise Interrupted(self.signum)


#: A Stop never entered: nothing installed, never stopped (callers that take no signals).
NEVER = Stop()
