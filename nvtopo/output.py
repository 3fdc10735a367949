"""Writing ``-o FILE``: atomically for files, directly for streams, never over a link.

* ``-`` (and ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/1``, ``/proc/self/fd/2`` ...):
  written to this process's standard output or error, which are already open.
* A regular file, or a name not yet taken: written through a temporary file in the same
  directory, then renamed over it, so a reader sees the old file or the new one, never
  half of one.  An existing file keeps its permissions (and owner, where this process may
  set it); a new one gets ``0666`` less the umask, as any program's ``open()`` gives.  The
  temporary file is removed whatever goes wrong (a full disk, an I/O error, and SIGTERM,
  SIGHUP or SIGINT: each exits, as Ctrl-C does, by an exception that removes it; a signal
  the process ignores, as under ``nohup``, stays ignored).
* A symbolic link: the file it names (at the end of the chain) is written, atomically;
  the link stays a link.  A dangling link creates its target if the target's directory
  exists.
* A character device (``/dev/null``, a terminal) or a FIFO: written directly (a rename
  would replace the device node).  A FIFO nobody reads is an error, not a hang.
* A directory, a socket or a block device: refused.
* A name ending in ``.gz`` (``-o node.json.gz``): the text is written gzip-compressed
  (:func:`compress`); every command reads such a file back transparently.

Errors are :class:`~nvtopo.errors.NvtopoError` (one line, exit status 2).
"""

from __future__ import annotations

import errno
import os
import re
import signal
import stat
import sys
from typing import Any, Dict, Optional, TextIO

from . import signals
from .errors import NvtopoError

#: How the option is named in errors about its value.
OPTION = "-o"
_FD_ALIAS = re.compile(r"/(?:dev/fd|proc/self/fd)/([0-9]+)")


def _stream(path: str) -> Optional[TextIO]:
    """This process's standard output or error when ``path`` names it, else None."""
    if path == "-":
        return sys.stdout
    if path in ("/dev/stdout", "/dev/stderr"):
        return sys.stdout if path == "/dev/stdout" else sys.stderr
    m = _FD_ALIAS.fullmatch(path)
    if m and m.group(1) in ("1", "2"):
        return sys.stdout if m.group(1) == "1" else sys.stderr
    return None


def _kind(mode: int) -> str:
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "not a regular file")


def _target(path: str) -> str:
    """The file ``path`` names: itself, or for a symbolic link the end of its chain."""
    if not os.path.islink(path):
        return path
    return os.path.realpath(path)


def check(path: Optional[str]) -> None:
    """Refuse, before any probing, an ``-o`` value that cannot be written: empty, a
    directory, a socket or block device, or a file in a directory that does not exist.
    Opens nothing (opening a FIFO would tell its reader the data has ended)."""
    if path is None or _stream(path) is not None:
        return
    _where_to(path)


def _where_to(path: str) -> Optional[os.stat_result]:
    """Checks ``path`` as :func:`check` does; returns the status of the file it names
    (links followed), or None for a file yet to be created."""
    if path == "":
        raise NvtopoError("empty file name", where=OPTION)
    try:
        st = os.stat(path)  # follows every link, /proc's magic ones included
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise NvtopoError(f"cannot write: {exc.strerror or exc}", where=path) from None
    if st is None:
        target = _target(path)
        parent = os.path.dirname(target) or "."
        if not os.path.isdir(parent):
            what = (f"it is a link to {target}, whose directory {parent} does not exist"
                    if target != path else f"directory {parent} does not exist")
            raise NvtopoError(f"cannot write: {what}", where=path)
        return None
    if stat.S_ISDIR(st.st_mode):
        raise NvtopoError("cannot write: is a directory", where=path)
    if stat.S_ISSOCK(st.st_mode) or stat.S_ISBLK(st.st_mode):
        raise NvtopoError(f"cannot write: not a regular file ({_kind(st.st_mode)})",
                          where=path)
    return st


def write(text: str, path: Optional[str]) -> bool:
    """Write ``text`` to ``path`` (see the module's description; ``None``, as ``-``:
    standard output).  Every command's output goes through here, to standard output or a
    file alike; a name ending in ``.gz`` gets the text gzip-compressed.  Returns True when
    a file was written, False for a stream (standard output or error, a device, a FIFO)."""
    stream = sys.stdout if path is None else _stream(path)
    if stream is not None:
        sys.stdout.flush()
        stream.write(text)
        stream.flush()
        return False
    assert path is not None  # (None is standard output, above)
    data = text.encode("utf-8", errors="replace")
    if is_gzip_name(path):
        data = compress(data)
    return write_bytes(data, path)


def is_gzip_name(path: Optional[str]) -> bool:
    """Whether ``-o`` names a file to be written gzip-compressed (``….gz``)."""
    return path is not None and _stream(path) is None and path.lower().endswith(".gz")


def compress(data: bytes) -> bytes:
    """``data`` gzip-compressed, the same bytes for the same data (no time stamp, no name):
    a DGX H100 snapshot of 475 kB becomes about 28 kB."""
    import gzip

    return gzip.compress(data, compresslevel=6, mtime=0)


def write_bytes(data: bytes, path: str) -> bool:
    """Write ``data`` as it is to the file ``path``, as :func:`write` writes (atomically for
    a file, directly to a device or FIFO; standard output or error by their names).
    Returns True when a file was written."""
    stream = _stream(path)
    if stream is not None:
        sys.stdout.flush()
        binary = getattr(stream, "buffer", None)
        if binary is not None:
            binary.write(data)
            binary.flush()
        else:  # a text-only stream (a test runner's): the bytes as text
            stream.write(data.decode("utf-8", errors="replace"))
            stream.flush()
        return False
    st = _where_to(path)
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        # opened by the name given: a link (to /dev/stdout, say) is followed by open()
        _write_stream(data, path, stat.S_ISFIFO(st.st_mode))
        return False
    _write_file(data, path, _target(path), st)
    return True


def _write_stream(data: bytes, path: str, fifo: bool) -> None:
    """Write to a device or FIFO as it is (no temporary file, no rename)."""
    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        # A FIFO opened for writing blocks until someone reads; non-blocking, nobody
        # reading is ENXIO at once.
        fd = os.open(path, flags | (getattr(os, "O_NONBLOCK", 0) if fifo else 0))
    except OSError as exc:
        if fifo and exc.errno == errno.ENXIO:
            raise NvtopoError("cannot write: a FIFO nobody is reading", where=path) from None
        raise NvtopoError(f"cannot write: {exc.strerror or exc}", where=path) from None
    try:
        if fifo:
            os.set_blocking(fd, True)
        _write_all(fd, data)
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            raise NvtopoError("cannot write: the reader went away", where=path) from None
        raise NvtopoError(f"cannot write: {exc.strerror or exc}", where=path) from None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _write_file(data: bytes, path: str, target: str, st: Optional[os.stat_result]) -> None:
    """Through a temporary file beside ``target``, then a rename over it."""
    directory = os.path.dirname(target) or "."
    base = os.path.basename(target)
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_NOFOLLOW", 0))
    tmp = fd = None
    with _interruptible():
        try:
            for _attempt in range(100):
                name = os.path.join(directory, f".{base}.{os.urandom(6).hex()}.tmp")
                try:
                    # a new file: 0666 less the umask, as open() gives; an existing one's
                    # mode is set below (the temporary file is private until then)
                    fd = os.open(name, flags, 0o666 if st is None else 0o600)
                except FileExistsError:
                    continue
                tmp = name
                break
            else:  # pragma: no cover - 100 random names all taken
                raise OSError(errno.EEXIST, "no free temporary file name")
            _write_all(fd, data)
            if st is not None:
                _keep_owner_and_mode(fd, st)
            os.fsync(fd)
            os.close(fd)
            fd = None
            os.replace(tmp, target)
            tmp = None
            _sync_directory(directory)
        except OSError as exc:
            raise NvtopoError(f"cannot write: {exc.strerror or exc}", where=path) from None
        finally:
            if fd is not None:
                os.close(fd)
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _keep_owner_and_mode(fd: int, st: os.stat_result) -> None:
    """The replaced file's owner (where this process may set it) and permission bits."""
    if hasattr(os, "fchown"):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except OSError:
            pass  # not root: the new file is ours, as any editor's rewrite would be
    if hasattr(os, "fchmod"):
        os.fchmod(fd, stat.S_IMODE(st.st_mode))


def _sync_directory(directory: str) -> None:
    """Make the rename durable (best effort: not every system can open a directory)."""
    try:
        dfd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


class _interruptible:
    """While a file is written, SIGTERM, SIGHUP and SIGINT exit as Ctrl-C does, by an
    exception, so the temporary file is removed on the way out; the previous handlers are
    restored after.  Only a signal whose handler is the default (the process would die
    where it stands) is taken over: one the process ignores (``nohup``) stays ignored,
    Python's Ctrl-C handler already raises, and a handler a command installed itself
    (``collect``: it notes the signal and ends in order) is left to it."""

    def __enter__(self) -> "_interruptible":
        self.old = signals.take(_terminated, replace=lambda h: h == signal.SIG_DFL)
        return self

    def __exit__(self, *exc: Any) -> None:
        signals.give_back(self.old)


def _terminated(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)  # the status a process killed by the signal has
