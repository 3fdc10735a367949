"""Standard output and error, whatever they are: any encoding, a full disk, a closed descriptor.

:func:`setup` runs once, at the start of the console script (:func:`nvtopo.cli.run`):

* **Any encoding.**  Tables, help and findings draw boxes and arrows (``─``, ``→``, ``·``).
  Where the stream's encoding cannot carry a character (``LC_ALL=C`` with
  ``PYTHONUTF8=0``, ``PYTHONIOENCODING=latin-1`` or ``ascii``), it is written as its ASCII
  stand-in (:func:`ascii_for`: ``→`` as ``->``, a box line as ``-``, ``|`` or ``+``, an
  accented letter without its accent, anything else as ``?``) instead of ending the
  command with ``UnicodeEncodeError``.  Rich also sees the encoding and draws ASCII boxes.
* **Any standard output.**  A write to standard output that fails (a full disk:
  ``ENOSPC``; a closed descriptor: ``EBADF``; an I/O error) raises :class:`OutputError`, an
  :class:`~nvtopo.errors.NvtopoError`: one line on standard error, exit status 2.  What
  was still buffered is dropped (the descriptor is pointed at ``/dev/null``), so nothing
  fails again at exit.  A reader that went away (``EPIPE``) is still a
  :class:`BrokenPipeError`, handled quietly as before.  A descriptor closed before nvtopo
  started (``>&-``) is held by ``/dev/null`` so that no file nvtopo opens takes its number,
  and writing to it fails as above.
"""


import codecs
import errno
import io
import os
import sys
from typing import Any, Optional, Tuple

from ..errors import NvtopoError

#: The error handler registered with :mod:`codecs` (``errors=`` of the standard streams).
ERRORS = "nvtopo-ascii"

_STAND_INS = {
    "\u2192": "->", "\u2190": "<-", "\u2194": "<->", "\u21d2": "=>", "\u2191": "^",
    "\u2193": "v", "\u00b7": ".", "\u2022": "*", "\u2026": "...", "\u2014": "--",
    "\u2013": "-", "\u2212": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"',
    "\u201d": '"', "\u00ab": "<<", "\u00bb": ">>", "\u2264": "<=", "\u2265": ">=",
    "\u2260": "!=", "\u00d7": "x", "\u2713": "ok", "\u2714": "ok", "\u2717": "x",
    "\u2718": "x", "\u00b1": "+/-", "\u00b5": "u", "\u00a0": " ", "\u2009": " ",
    "\u202f": " ", "\u00b0": "deg", "\u2248": "~", "\u221e": "inf", "\u00a7": "S",
    "\u25b6": ">", "\u25c0": "<", "\u25cf": "*", "\u25cb": "o", "\u2500": "-",
}


def ascii_for(ch: str) -> str:
    """The ASCII stand-in of one character no stream encoding could carry."""
    if ch.isascii():
        return ch
    known = _STAND_INS.get(ch)
    if known is not None:
        return known
    import unicodedata

    code = ord(ch)
    if 0x2500 <= code <= 0x257F:  # box drawing
        name = unicodedata.name(ch, "")
        horizontal, vertical = "HORIZONTAL" in name, "VERTICAL" in name
        if horizontal and not vertical:
            return "=" if "DOUBLE" in name else "-"
        if vertical and not horizontal:
            return "|"
        return "+"
    if 0x2580 <= code <= 0x259F:  # block elements (bars)
        return "#"
    base = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode("ascii")
    return base if base and base.isprintable() else "?"


def _degrade(exc: UnicodeError) -> Tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(ascii_for(c) for c in exc.object[exc.start:exc.end]), exc.end


codecs.register_error(ERRORS, _degrade)


class OutputError(NvtopoError):
    """Standard output could not be written (not a reader gone away: that stays quiet)."""


class _Guarded:
    """A standard stream whose write errors say which stream failed (:class:`OutputError`)
    and leave nothing to fail again.  Everything else is the stream's own."""

    def __init__(self, stream: Any, name: str, fd: Optional[int]) -> None:
        self._stream = stream
        self._name = name
        self._fd = fd
        self._buffer: Optional[_Guarded] = None

    def _fail(self, exc: OSError) -> None:
        if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
            raise exc
        _drop(self._fd)
        if isinstance(_Closed.instance, _Closed):
            _Closed.instance.failed = True
        raise OutputError(f"cannot write: {exc.strerror or exc}", where=self._name) from None

    def write(self, data: Any) -> Any:
        try:
            return self._stream.write(data)
        except OSError as exc:
            self._fail(exc)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._fail(exc)
        except ValueError:  # closed already: nothing left to write
            pass

    @property
    def buffer(self) -> Any:
        if self._buffer is None:
            self._buffer = _Guarded(self._stream.buffer, self._name, self._fd)
        return self._buffer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Closed(io.RawIOBase):
    """Standard output closed before nvtopo started: every write fails as it would, until
    the failure has been said (then what is left goes nowhere, as after :func:`_drop`)."""

    instance: Optional["_Closed"] = None

    def __init__(self) -> None:
        super().__init__()
        self.failed = False
        _Closed.instance = self

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.failed:
            return len(data)
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))


def _drop(fd: Optional[int]) -> None:
    """Point ``fd`` at /dev/null: what is still buffered for it goes nowhere, quietly."""
    if fd is None:
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.dup2(null, fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        if null != fd:
            os.close(null)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def _encoding_errors(stream: Any) -> None:
    """Let ``stream`` write any character: degraded to ASCII where its encoding cannot."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(errors=ERRORS)
        except (ValueError, OSError, LookupError):  # pragma: no cover
            pass


def setup() -> None:
    """Make standard output and error safe to write (see the module's description)."""
    closed_out = not _is_open(1)
    if not _is_open(2):
        _drop(2)  # nothing can be said: keep the number from any file opened later
        sys.stderr = open(2, "w", encoding="utf-8", errors=ERRORS, closefd=False)
    if closed_out:
        _drop(1)
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_Closed()), encoding="utf-8",
                                      errors=ERRORS, write_through=False)
    for stream in (sys.stdout, sys.stderr):
        _encoding_errors(stream)
    if not isinstance(sys.stdout, _Guarded) and sys.stdout is not None:
        sys.stdout = _Guarded(sys.stdout, "standard output", 1)


def finish() -> Optional[OutputError]:
    """Flush standard output before exiting; the error when that fails."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except OutputError as exc:
        return exc
    except (BrokenPipeError, ValueError):
        _drop(1)
    return None


__all__ = ["ERRORS", "OutputError", "ascii_for", "finish", "setup"]
