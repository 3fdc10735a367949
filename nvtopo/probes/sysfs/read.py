"""Reading a sysfs tree safely, and answering the same questions from recorded evidence.

Every read of the sysfs probe goes through a *view* with three methods, ``resolve``,
``read`` and ``listdir``:

* :class:`LiveView` reads a tree through its root and records everything it reads: the
  paths read (relative to the root, symlinks resolved *inside* the root) with their
  contents (``files``), link targets (``links``), directory listings (``dirs``) and read
  errors (``errors``, e.g. ``EINVAL``).  That record is the probe's evidence.
* :class:`EvidenceView` answers the same questions from the recorded maps (pure, no I/O).

Symlinks are resolved link by link and absolute targets are re-rooted
(:func:`resolve_path`), so a copied tree never leads the probe into the live /sys (like
psutil's ``PROCFS_PATH`` and hwloc's fsroot: every read goes through the root).  Files
are read bounded in bytes, only when they are regular files, without following a final
symlink (:func:`read_file`); directories are listed bounded in names (:func:`list_dir`);
the evidence as a whole is bounded in entries and bytes.

The bounds are module globals read at run time (``read.MAX_DIR_ENTRIES``): a test that
changes one changes it for the whole probe.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

# --- path resolution inside the root ---------------------------------------------


#: Symlinks followed to resolve one path, at most (the kernel's limit, ``ELOOP`` past it).
MAX_LINKS = 40


def resolve_path(rel: str, readlink: Callable[[str], Optional[str]],
                 cache: Dict[str, str], _depth: int = 0,
                 on_loop: Optional[Callable[[str], Any]] = None) -> str:
    """Resolve every symlink in ``rel`` (relative to the root), staying inside the root.

    ``readlink(path)`` gives a link's target, or ``None`` when ``path`` is no
    link.  Relative targets resolve against the link's directory; absolute
    ones (``/sys/devices/...`` or ``/devices/...``) are re-rooted; ``..``
    never climbs above the root.  Results are cached per path.  A link met
    after :data:`MAX_LINKS` links (a loop, or a chain that long) is left
    unresolved and handed to ``on_loop``: the live view reads nothing at or
    under it (the OS would follow it, anywhere).  Iterative: a target with
    thousands of components cannot exhaust the stack.
    """
    hit = cache.get(rel)
    if hit is not None:
        return hit
    # The common case, first: the parent is resolved and the last component is no link.
    comp: Optional[str]  # a path component (None: a marker on the stack below)
    head, _, comp = rel.rpartition("/")
    cur = cache.get(head) if head else None
    if cur is not None and comp and comp != "." and comp != "..":
        key = f"{cur}/{comp}" if cur else comp
        res = cache.get(key)
        if res is None and readlink(key) is None:
            cache[key] = res = key
        if res is not None:
            cache[rel] = res
            return res
    # A stack of (component, links followed to reach it) and (None, key) markers: when a
    # marker comes off, ``cur`` is the resolution of ``key`` (a prefix of ``rel`` or a link).
    todo: List[Tuple[Optional[str], Any]] = []
    # start from the longest resolved prefix (usually the parent directory)
    head, cur = rel, ""
    while True:
        todo.append((None, head))
        head, _, comp = head.rpartition("/")
        todo.append((comp, _depth))
        if not head:
            break
        hit = cache.get(head)
        if hit is not None:
            cur = hit
            break
    while todo:
        comp, extra = todo.pop()
        if comp is None:
            cache[extra] = cur
            continue
        if not comp or comp == ".":
            continue
        if comp == "..":
            cur = cur.rsplit("/", 1)[0] if "/" in cur else ""
            continue
        key = f"{cur}/{comp}" if cur else comp
        res = cache.get(key)
        if res is not None:
            cur = res
            continue
        target = readlink(key)
        if target is not None and extra >= MAX_LINKS:
            target = None
            if on_loop is not None:
                on_loop(key)
        if target is None:
            cache[key] = cur = key
            continue
        todo.append((None, key))
        if target.startswith("/"):
            target = target.lstrip("/")
            if target == "sys" or target.startswith("sys/"):
                target = target[3:].lstrip("/")
            cur = ""
        todo.extend((c, extra + 1) for c in reversed(target.split("/")))
    return cur


def _errno_text(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "EIO")
    return f"{name}: {exc.strerror or os.strerror(exc.errno or errno.EIO)}"


#: Largest file read.  A sysfs attribute is at most one page (4096 bytes); anything bigger
#: (a stray file in a copied tree, a sparse file) is no attribute: refused, never cut.
MAX_ATTR_BYTES = 64 * 1024
#: Most names read from one directory.  The largest directories of a real /sys
#: (``bus/pci/devices``, ``hw_counters``) hold hundreds; the rest of a bigger one is not read.
MAX_DIR_ENTRIES = 10_000
#: Most entries (files, errors, links, listed names) and bytes the whole evidence holds:
#: a DGX H100 tree is about 1,500 entries and 100 kB.  Past either, nothing more is read
#: (status ``"limit"``), so a snapshot stays well below what ``--from`` accepts.
MAX_EVIDENCE_ENTRIES = 200_000
MAX_EVIDENCE_BYTES = 16 * 1024 * 1024

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0))
_DIR_FLAGS = _OPEN_FLAGS | getattr(os, "O_DIRECTORY", 0)
_CHUNK = 1 << 16
_S_IFMT, _S_IFREG = 0o170000, stat.S_IFREG


#: What the evidence view answers for a path the capture never read.
NOT_RECORDED = "ENOENT: not in the evidence"
#: The reason of a file not read because the probe's time budget was spent.
DEADLINE = "deadline: not read, the probe's time budget was spent"
#: The reason of a file or directory not read because the evidence was full.
LIMIT = "limit: not read, the evidence reached its size limit"
#: A path under a symlink that did not resolve within 40 links.
ELOOP_TEXT = "ELOOP: Too many levels of symbolic links"


class Refused(OSError):
    """A file the probe does not read because no sysfs attribute looks like it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISLNK, "symbolic link")):
        if test(mode):
            return name
    return f"file type 0o{stat.S_IFMT(mode):o}"


def _too_big(limit: int) -> Refused:
    return Refused(f"larger than {limit} bytes (a sysfs attribute is at most 4096); not read")


def read_file(path: str, limit: Optional[int] = None) -> bytes:
    """One sysfs file, at most ``limit`` (:data:`MAX_ATTR_BYTES`) bytes, without following a
    final symlink.

    Raises ``OSError`` (``ELOOP`` for a symlink) or :class:`Refused` for what is
    no attribute: anything but a regular file (a device such as ``/dev/zero``,
    a FIFO, a socket: never opened, so nothing blocks and no driver is woken)
    and a file larger than ``limit``.  Opened with ``O_NONBLOCK|O_NOFOLLOW|
    O_CLOEXEC`` and checked again after opening (a file swapped meanwhile is
    refused).
    """
    if limit is None:
        limit = MAX_ATTR_BYTES
    st = os.lstat(path)
    if st.st_mode & _S_IFMT != _S_IFREG:
        if stat.S_ISLNK(st.st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
        raise Refused(f"not a regular file ({_file_kind(st.st_mode)}); not read")
    if st.st_size > limit:  # sysfs says 4096 for every attribute; a sparse 1 GiB file says so
        raise _too_big(limit)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        fst = os.fstat(fd)
        if fst.st_ino != st.st_ino or fst.st_dev != st.st_dev or fst.st_mode != st.st_mode:
            raise Refused("changed while it was opened; not read")
        want = limit + 1 if limit < _CHUNK else _CHUNK
        data = os.read(fd, want)
        if len(data) < want:  # the whole file in one read: every real attribute
            return data
        chunks = [data]  # sysfs binary attributes can exceed a page: read on, up to limit
        total = len(data)
        while total <= limit:
            data = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not data:
                break
            chunks.append(data)
            total += len(data)
        if total > limit:  # st_size lied (procfs-like files say 0)
            raise _too_big(limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def list_dir(path: str, limit: Optional[int] = None) -> Tuple[List[str], bool]:
    """At most ``limit`` (:data:`MAX_DIR_ENTRIES`) names of directory ``path`` (not
    followed if it is a symlink: ``ELOOP``), in the order the directory gives them, and
    whether more were left."""
    if limit is None:
        limit = MAX_DIR_ENTRIES
    fd = os.open(path, _DIR_FLAGS)
    try:
        names: List[str] = []
        with os.scandir(fd) as it:
            for entry in it:
                if len(names) >= limit:
                    return names, True
                names.append(entry.name)
        return names, False
    finally:
        os.close(fd)


def _cost(text: str) -> int:
    """Bytes ``text`` takes in the snapshot's JSON, at most (``\\uXXXX`` for the rest)."""
    return len(text) if text.isascii() and text.isprintable() else 6 * len(text)


#: Bytes counted for each entry on top of its text (JSON quotes, indentation, key).
_ENTRY_COST = 16


class LiveView:
    """Reads a sysfs tree through its root and records everything it reads."""

    def __init__(self, root: str, faults: Optional[Dict[str, str]] = None,
                 reader: Optional[Callable[[str], bytes]] = None,
                 max_entries: Optional[int] = None, max_bytes: Optional[int] = None) -> None:
        self.root = os.path.abspath(root)
        #: Reads one file (absolute path) to bytes; injectable (a slow reader, in tests).
        self._reader = reader or read_file
        #: Set when the time budget is spent: no file is read after that (directory
        #: listings and links are kernfs metadata and never wait on a device).
        self.stopped = False
        #: Set (to :data:`LIMIT`) when the evidence holds :data:`MAX_EVIDENCE_ENTRIES`
        #: entries or :data:`MAX_EVIDENCE_BYTES` bytes: nothing more is read or recorded.
        self.full: Optional[str] = None
        self._room = [MAX_EVIDENCE_ENTRIES if max_entries is None else max_entries,
                      MAX_EVIDENCE_BYTES if max_bytes is None else max_bytes]
        #: The file or directory being read now, and since when (what a hung read waits on).
        self.inflight: Optional[Tuple[str, float]] = None
        self.files: Dict[str, str] = {}
        self.links: Dict[str, str] = {}
        self.dirs: Dict[str, List[str]] = {}
        self.errors: Dict[str, str] = {}
        #: Directories with more than :data:`MAX_DIR_ENTRIES` names (the rest not read).
        self.cut: Dict[str, str] = {}
        self._cache: Dict[str, str] = {}
        #: Paths whose symlinks did not resolve within 40 links (a loop, or a chain too
        #: long): nothing at or under them is read (the OS would follow them anywhere).
        self._loops: Set[str] = set()
        #: Injected read errors (resolved path -> "ERRNO: message"), for tests:
        #: file modes cannot simulate EACCES when tests run as root, and no
        #: plain file can simulate EINVAL.
        self.faults = dict(faults or {})

    def _spend(self, entries: int, nbytes: int) -> None:
        room = self._room
        room[0] -= entries
        room[1] -= nbytes + _ENTRY_COST * entries
        if room[0] < 0 or room[1] < 0:
            self.full = LIMIT

    def _record_error(self, real: str, err: str) -> None:
        self.errors[real] = err
        self._spend(1, _cost(real) + len(err))

    def _readlink(self, key: str) -> Optional[str]:
        if self.full:
            return None
        try:
            target = os.readlink(os.path.join(self.root, key))
        except OSError:
            return None
        self.links[key] = target
        self._spend(1, _cost(key) + _cost(target))
        return target

    def resolve(self, rel: str) -> str:
        return resolve_path(rel, self._readlink, self._cache, on_loop=self._loops.add)

    def _looped(self, real: str) -> bool:
        if real in self._loops:
            return True
        i = real.find("/")
        while i >= 0:
            if real[:i] in self._loops:
                return True
            i = real.find("/", i + 1)
        return False

    def read(self, rel: str) -> Tuple[Optional[str], Optional[str]]:
        if self.full:
            return None, self.full
        # Resolve the directory (cached); open the file itself without following
        # a symlink, and resolve only when it is one (ELOOP): no link is ever
        # followed outside the root.
        head, _, name = rel.rpartition("/")
        real = f"{self.resolve(head)}/{name}" if head else name
        if real in self.files:
            return self.files[real], None
        if real in self.errors:
            return None, self.errors[real]
        fault = self.faults.get(real)
        if fault is not None:
            self._record_error(real, fault)
            return None, fault
        if self._loops and self._looped(real):
            self._record_error(real, ELOOP_TEXT)
            return None, ELOOP_TEXT
        if self.stopped:
            self._record_error(real, DEADLINE)
            return None, DEADLINE
        self.inflight = (real, time.monotonic())
        try:
            data = self._reader(f"{self.root}/{real}")
        except Refused as exc:
            err = f"refused: {exc.reason}"
            self._record_error(real, err)
            return None, err
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                target = self.resolve(real)
                if target != real:
                    return self.read(target)
            err = _errno_text(exc)
            self._record_error(real, err)
            return None, err
        finally:
            self.inflight = None
        text = data.rstrip(b"\x00").decode("utf-8", errors="replace")
        if text.endswith("\n"):
            text = text[:-1]
        self.files[real] = text
        room = self._room  # (inline _spend: this runs once per file)
        room[0] -= 1
        both = real + text
        room[1] -= (len(both) if both.isascii() and both.isprintable() else 6 * len(both)) \
            + _ENTRY_COST
        if room[0] < 0 or room[1] < 0:
            self.full = LIMIT
        return text, None

    def listdir(self, rel: str) -> Tuple[Optional[List[str]], Optional[str]]:
        if self.full:
            return None, self.full
        real = self.resolve(rel)
        if real in self.dirs:
            return self.dirs[real], None
        if real in self.errors:
            return None, self.errors[real]
        fault = self.faults.get(real)
        if fault is not None:
            self._record_error(real, fault)
            return None, fault
        if self._loops and self._looped(real):
            self._record_error(real, ELOOP_TEXT)
            return None, ELOOP_TEXT
        self.inflight = (real, time.monotonic())
        try:
            found, more = list_dir(os.path.join(self.root, real), MAX_DIR_ENTRIES)
        except OSError as exc:
            err = _errno_text(exc)
            self._record_error(real, err)
            return None, err
        finally:
            self.inflight = None
        names = sorted(found)
        if more:
            self.cut[real] = f"more than {MAX_DIR_ENTRIES} entries: only the first read"
        self.dirs[real] = names
        self._spend(1 + len(names), _cost(real) + sum(_cost(n) + _ENTRY_COST for n in names))
        return names, None


class EvidenceView:
    """Answers the same questions from recorded evidence (pure, no I/O)."""

    def __init__(self, evidence: Dict[str, Any], unread: str = NOT_RECORDED) -> None:
        #: The answer for a path the capture never read: not recorded, or (when the
        #: capture ran out of time before reaching it) the deadline.
        self.unread = unread
        self.files: Dict[str, str] = _str_map(evidence.get("files"))
        self.links: Dict[str, str] = _str_map(evidence.get("links"))
        self.errors: Dict[str, str] = _str_map(evidence.get("errors"))
        dirs = evidence.get("dirs")
        # (a capture never lists more than MAX_DIR_ENTRIES names; an edited file may)
        self.dirs: Dict[str, List[str]] = {
            k: [str(x) for x in v[:MAX_DIR_ENTRIES]]
            for k, v in (dirs.items() if isinstance(dirs, dict) else []) if isinstance(v, list)}
        self._cache: Dict[str, str] = {}

    def resolve(self, rel: str) -> str:
        return resolve_path(rel, self.links.get, self._cache)

    def read(self, rel: str) -> Tuple[Optional[str], Optional[str]]:
        real = self.resolve(rel)
        if real in self.files:
            return self.files[real], None
        return None, self.errors.get(real, self.unread)

    def listdir(self, rel: str) -> Tuple[Optional[List[str]], Optional[str]]:
        real = self.resolve(rel)
        if real in self.dirs:
            return self.dirs[real], None
        return None, self.errors.get(real, self.unread)


def _str_map(m: Any) -> Dict[str, str]:
    if not isinstance(m, dict):
        return {}
    return {str(k): v for k, v in m.items() if isinstance(v, str)}


def read_attrs(v: Any, base: str, names: Any, into: Dict[str, Any]) -> None:
    """Read each attribute in ``names`` of ``base`` through the view ``v``: its value into
    ``into["attrs"]``, or why not into ``into["errors"]`` (the one shape every walk keeps)."""
    for attr in names:
        val, err = v.read(f"{base}/{attr}")
        if val is None:
            into["errors"][attr] = err
        else:
            into["attrs"][attr] = val
