"""Progress of long work, on standard error: one line that updates in place.

For every command that can run longer than about a second (``simulate --nodes``, ``audit``,
``cluster``, ``collect``): a person at a terminal sees that work goes on, and how far::

    with progress.Progress("auditing", total=300, quiet=quiet) as bar:
        for r in results:
            bar.advance()

or ``for r in progress.track(results, "auditing", total=300)``.  The line reads ``nvtopo:
auditing 120/300 · 4 s`` (no total: ``nvtopo: reading 120 · 4 s``), is drawn at most ten
times a second, only after the work has run :data:`DELAY_S` (short work draws nothing), and
is erased when the work ends, so what the command prints after it starts on a clean line.
A message said meanwhile (:mod:`.messages`) erases it first and the next update draws it
again below.

Silent when standard error is not a terminal (a pipe, a file, a log: nothing but the
messages) and with ``quiet`` (the commands' ``--quiet``).  No Rich: the helper costs
nothing to import.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Iterable, Iterator, Optional, TypeVar

from . import messages

T = TypeVar("T")

#: Seconds of work before the line is first drawn (``NVTOPO_PROGRESS_DELAY`` sets it: a
#: test that drives a real terminal draws from the first step with 0).
DELAY_S = 0.5
#: Seconds between two redraws.
EVERY_S = 0.1


class Progress:
    """One updating line on standard error (see the module's description)."""

    def __init__(self, label: str, total: Optional[int] = None, *, quiet: bool = False,
                 stream: Any = None, ticking: bool = False) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.stream = sys.stderr if stream is None else stream
        self.shown = not quiet and messages.is_terminal(self.stream)
        self.start = time.monotonic()
        self.delay = _delay()
        self._drawn_at = 0.0
        self._width = 0  # characters of the line now on the screen
        self._lock = threading.RLock()
        self._ticker: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self.ticking = ticking

    def __enter__(self) -> "Progress":
        if self.shown:
            messages.before_write(self.erase)
            if self.ticking:  # work that says nothing for a while: the seconds still count
                self._ticker = threading.Thread(target=self._tick, daemon=True)
                self._ticker.start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(EVERY_S * 5):
            self.update(force=True)

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def advance(self, n: int = 1) -> None:
        self.done += n
        self.update(force=self.done == self.total)  # the last count is always drawn

    def relabel(self, label: str, total: Optional[int] = None) -> None:
        """A new phase of the work (``checking``, after ``reading``)."""
        self.label, self.total, self.done = label, total, 0
        self.update(force=True)

    def line(self) -> str:
        count = (f" {self.done}/{self.total}" if self.total is not None
                 else f" {self.done}" if self.done else "")
        secs = int(time.monotonic() - self.start)
        return f"nvtopo: {self.label}{count} \u00b7 {secs} s"

    def update(self, force: bool = False) -> None:
        with self._lock:
            self._update(force)

    def _update(self, force: bool) -> None:
        if not self.shown:
            return
        now = time.monotonic()
        if now - self.start < self.delay or (not force and now - self._drawn_at < EVERY_S):
            return
        self._drawn_at = now
        text = self.line()
        at = messages.width(self.stream)
        if at is not None and len(text) >= at:
            text = text[:max(at - 1, 0)]
        self._write("\r" + text.ljust(self._width))
        self._width = max(len(text), self._width)

    def erase(self) -> None:
        """Take the line off the screen (before a message, and at the end)."""
        with self._lock:
            if self._width:
                self._write("\r" + " " * self._width + "\r")
                self._width = 0

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        if self.shown:
            self.erase()
            messages.before_write(None)
            self.shown = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the work goes on
            self.shown = False


def _delay() -> float:
    import os

    from ..safe import ascii_float

    value = ascii_float(os.environ.get("NVTOPO_PROGRESS_DELAY", ""))
    return value if value is not None and 0 <= value <= 60 else DELAY_S


def track(items: Iterable[T], label: str, total: Optional[int] = None, *,
          quiet: bool = False) -> Iterator[T]:
    """``items``, counted on a :class:`Progress` line as they are taken."""
    with Progress(label, total, quiet=quiet) as bar:
        for item in items:
            yield item
            bar.advance()


__all__ = ["DELAY_S", "Progress", "track"]
