"""The one writer of messages on standard error: errors, warnings, notes, usage errors.

Every ``nvtopo: …`` line goes through :func:`say` (the CLI's ``io.say``/``io.err`` call it,
and so may any command: it imports nothing but :mod:`nvtopo.safe` and :mod:`.tty`).  The
rule is the tables' (``render.layout``): a message is wrapped at the terminal's width, at
spaces only, so no name, path, host, PCI address or option is ever cut in two; a word
longer than the whole width stays whole on a line of its own, and a span in backquotes (a
command to type) is kept whole where it fits.  Continuation lines are indented by
:data:`HANG` so the message reads as one.

When standard error is not a terminal (a pipe, a file, a test runner), a message stays one
line, as before: scripts and logs grep whole messages.  ``TTY_COMPATIBLE=1`` (the variable
Rich reads too) makes it a terminal; ``COLUMNS`` gives the width, else the terminal's.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Callable, List, Optional

from ..safe import printable
from .tty import is_terminal

#: Indentation of a message's continuation lines.
HANG = 2
#: Narrowest width wrapped to (a narrower terminal gets words one per line anyway).
MIN_WIDTH = 20

# a `span in backquotes` (kept whole), or a run of non-spaces; linear: no nested quantifier
_WORDS = re.compile(r"`[^`]*`[^ `]*|[^ ]+")


def width(stream: Any = None) -> Optional[int]:
    """The width to wrap messages at: None when standard error is not a terminal."""
    if not is_terminal(stream):
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isascii() and columns.isdigit() and 0 < int(columns) < 10_000:
        return int(columns)
    try:
        cols = os.get_terminal_size(sys.__stderr__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        cols = 0
    return cols if cols > 0 else 80  # a terminal that says 0 columns (a fresh pty)


def wrap(line: str, at: Optional[int], hang: int = HANG) -> List[str]:
    """``line`` as the lines a terminal ``at`` columns wide shows it: broken at spaces only
    (a word is never cut), continuation lines indented by ``hang``.  ``at`` None: one line."""
    if at is None or len(line) <= at:
        return [line]
    at = max(at, MIN_WIDTH)
    words = _WORDS.findall(line)
    if any(len(w) > at - hang for w in words if w.startswith("`")):
        # a command too long for a line: its words may go on separate lines after all
        words = [p for w in words for p in (w.split(" ") if w.startswith("`") else [w]) if p]
    lines: List[str] = []
    current = ""
    for word in words:
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= at:
            current += " " + word
        else:
            lines.append(current)
            current = " " * hang + word
    if current:
        lines.append(current)
    return lines


#: Called before a message is written: a progress line (:mod:`.progress`) erases itself.
_before: Optional[Callable[[], None]] = None


def before_write(hook: Optional[Callable[[], None]]) -> None:
    """Call ``hook`` before each message (None: no longer)."""
    global _before
    _before = hook


def say(line: str, stream: Any = None) -> None:
    """One message on standard error, flushed (pipes and test runners must see it), made
    printable (file names and evidence may hold escapes and newlines: one message is one
    line before wrapping), wrapped to the terminal's width (see the module's description)."""
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - said by the caller, or at exit (cli.streams)
        pass
    if _before is not None:
        _before()
    out = sys.stderr if stream is None else stream
    text = "\n".join(wrap(printable(line), width(out)))
    out.write(text + "\n")
    out.flush()


def error(message: str) -> None:
    """``nvtopo: error: message``."""
    say(f"nvtopo: error: {message}")


def warning(message: str) -> None:
    """``nvtopo: warning: message``."""
    say(f"nvtopo: warning: {message}")


def note(message: str) -> None:
    """``nvtopo: note: message``."""
    say(f"nvtopo: note: {message}")


__all__ = ["HANG", "before_write", "error", "is_terminal", "note", "say", "warning", "width",
           "wrap"]
