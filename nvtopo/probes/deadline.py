"""One deadline for a live probe, and the worker thread it runs in.

The live NVML and sysfs captures share one pattern: the capture runs in a daemon worker
thread under the probe's time budget (``ProbeOptions.timeout``); the caller waits for it
at most that long, and when the budget is spent it stops asking (each probe decides how:
NVML abandons the recording, sysfs reads no further file), maybe waits a little longer,
and returns what was recorded.  A call that never returns is left behind in its thread:
the thread is a daemon, it cannot keep nvtopo alive.

:class:`Deadline` is the budget (``remaining()``, ``expired()``); :func:`run_in_thread`
starts the worker and waits for it; the :class:`Worker` it returns says whether the work
finished, its result, and the exception it raised (handed on by :meth:`Worker.result`).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional


class Deadline:
    """A time budget of ``seconds`` from ``start`` (``time.monotonic()``; now by default).

    ``seconds`` may be ``inf`` (no limit).
    """

    def __init__(self, seconds: float, start: Optional[float] = None) -> None:
        self.seconds = float(seconds)
        self.start = time.monotonic() if start is None else start
        self.at = self.start + self.seconds

    def remaining(self) -> float:
        """Seconds left (0 once expired; ``inf`` without a limit)."""
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        """True once the budget is spent."""
        return time.monotonic() > self.at

    def elapsed(self) -> float:
        """Seconds since the start."""
        return time.monotonic() - self.start


def join_timeout(seconds: Optional[float]) -> Optional[float]:
    """``seconds`` as :meth:`threading.Thread.join` takes it: ``None`` (wait for ever) for
    ``None``, ``inf`` or anything past ``threading.TIMEOUT_MAX``."""
    if seconds is None or seconds >= threading.TIMEOUT_MAX:
        return None
    return max(0.0, seconds)


class Worker:
    """``fn()`` running in a daemon thread named ``name``."""

    def __init__(self, fn: Callable[[], Any], name: str) -> None:
        self._fn = fn
        self._value: Any = None
        self.error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as exc:  # handed to the caller by result()
            self.error = exc

    def start(self) -> "Worker":
        self.thread.start()
        return self

    def wait(self, seconds: Optional[float]) -> bool:
        """Wait at most ``seconds`` (``None`` or ``inf``: until done); True when done."""
        self.thread.join(join_timeout(seconds))
        return not self.thread.is_alive()

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()

    def result(self) -> Any:
        """What ``fn`` returned (``None`` while it runs); raises what it raised."""
        if self.error is not None:
            raise self.error
        return self._value


def run_in_thread(fn: Callable[[], Any], timeout: Optional[float], name: str) -> Worker:
    """Start ``fn()`` in a daemon worker thread and wait at most ``timeout`` seconds for it.

    The worker is returned either way: ``done`` says whether it finished; if not, the
    caller stops it its own way (a flag ``fn`` watches) and may :meth:`Worker.wait` more.
    """
    worker = Worker(fn, name).start()
    worker.wait(timeout)
    return worker


__all__ = ["Deadline", "Worker", "join_timeout", "run_in_thread"]
