"""The sysfs probe: InfiniBand/RoCE ports, the PCI tree and NUMA, read from /sys.

Everything here is readable without root and needs no external tool.  The
probe reads a *sysfs root* (``/sys`` by default, or ``--sysfs-root DIR``
where DIR plays the role of /sys, like node_exporter's ``--path.sysfs``):

* ``class/infiniband/<dev>``: device attributes, the ``device`` link to the
  PCI function (walking up to the nearest PCI address for auxiliary and
  sub-function devices), netdevs (``device/net/*``), every ``ports/<n>``
  (state, phys_state, rate, link_layer, lid, sm_lid, gids/0, counters,
  hw_counters) and device-level ``hw_counters``;
* ``bus/pci/devices``: GPUs, NICs, NVMe drives and bridges (link speed and
  width, NUMA node, local CPUs, and the parent chain from the resolved path);
* ``devices/system/node``: NUMA nodes, their CPUs and distances;
* ``module/``: whether a GPUDirect RDMA peer-memory module is loaded.

Two halves, kept apart, as for every probe:

* :func:`capture` reads the tree and returns the raw evidence: a flat map of
  the paths it read (relative to the root, symlinks resolved *inside* the
  root) to their contents (``files``), link targets (``links``), directory
  listings (``dirs``) and read errors (``errors``, e.g. ``EINVAL``);
* :func:`derive` is a pure function from that evidence to a model fragment.

Both run the same traversal (:func:`_collect`) over a *view*: the live tree
in :func:`capture`, the recorded maps in :func:`derive`; so the evidence holds
exactly the paths the probe reads, and ``--from`` re-derives everything.

Symlinks are resolved link by link and absolute targets are re-rooted, so a
copied tree never leads the probe into the live /sys (like psutil's
``PROCFS_PATH`` and hwloc's fsroot: every read goes through the root).
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import stat
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ..errors import NvtopoError
from ..model import GPU, NIC, Matrix, Topology, path_rank, pci_bdf
from ..safe import MAX_DIGITS, ascii_int, is_ascii_digits

SOURCE = "sysfs"
DEFAULT_ROOT = "/sys"

HOST_BRIDGE_RE = re.compile(r"^pci([0-9a-f]{4,}):([0-9a-f]{2})$")
NODE_RE = re.compile(r"^node([0-9]{1,9})$")

VENDOR_NVIDIA = 0x10DE
VENDOR_MELLANOX = 0x15B3

#: Per-port error counters (PMA PortCounters), and the value at which each
#: saturates (they stick at their maximum instead of wrapping).
ERROR_COUNTERS: Dict[str, int] = {
    "symbol_error": 0xFFFF,
    "link_error_recovery": 0xFF,
    "link_downed": 0xFF,
    "port_rcv_errors": 0xFFFF,
    "port_rcv_remote_physical_errors": 0xFFFF,
    "port_rcv_switch_relay_errors": 0xFFFF,
    "port_xmit_discards": 0xFFFF,
    "port_xmit_constraint_errors": 0xFF,
    "port_rcv_constraint_errors": 0xFF,
    "local_link_integrity_errors": 0xF,
    "excessive_buffer_overrun_errors": 0xF,
    "VL15_dropped": 0xFFFF,
}
#: Other counters with a fixed width.
OTHER_SATURATING = {"port_xmit_wait": 0xFFFFFFFF}
#: Data counters count 4-byte words.
DATA_COUNTERS = {"port_xmit_data": "xmit", "port_rcv_data": "rcv"}

#: PCIe generation by transfer rate (GT/s).
PCIE_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}

#: Device attributes read under class/infiniband/<dev>.
HCA_ATTRS = ("node_type", "node_guid", "sys_image_guid", "fw_ver", "hca_type", "board_id")
#: Port attributes read under ports/<n>.
PORT_ATTRS = ("state", "phys_state", "rate", "link_layer", "lid", "sm_lid", "gids/0")
#: PCI attributes read for GPUs, NICs, NVMe drives and bridges.
PCI_ATTRS = ("device", "numa_node", "local_cpulist", "current_link_speed", "current_link_width",
             "max_link_speed", "max_link_width")
#: Peer-memory modules (GPUDirect RDMA) and GPUDirect Storage.
MODULES = ("nvidia_peermem", "nv_peer_mem", "nvidia_fs")
PEER_MEM_FILES = ("kernel/mm/memory_peers/nv_mem/version",)


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
#: Most devices of one kind (GPUs, NICs, NVMe drives, RDMA devices) read: the path matrix
#: grows with the square of their number.  Real nodes have tens.
MAX_DEVICES = 1024
#: IB port numbers are 8 bits: a ``ports/`` entry named otherwise is no port.
MAX_PORT = 255

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0))
_DIR_FLAGS = _OPEN_FLAGS | getattr(os, "O_DIRECTORY", 0)
_CHUNK = 1 << 16
_S_IFMT, _S_IFREG = 0o170000, stat.S_IFREG


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


class _LiveView:
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


#: What the evidence view answers for a path the capture never read.
NOT_RECORDED = "ENOENT: not in the evidence"
#: The reason of a file not read because the probe's time budget was spent.
DEADLINE = "deadline: not read, the probe's time budget was spent"
#: The reason of a file or directory not read because the evidence was full.
LIMIT = "limit: not read, the evidence reached its size limit"
#: A path under a symlink that did not resolve within 40 links.
ELOOP_TEXT = "ELOOP: Too many levels of symbolic links"
#: The time budget when no options give one (``ProbeOptions.timeout``).
DEFAULT_TIMEOUT = 30.0


class _EvidenceView:
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


# --- capture -----------------------------------------------------------------------


#: Directories only a sysfs tree has (at least one must be there; see :func:`why_not_sysfs`).
SYSFS_MARKERS = ("devices/system", "bus/pci/devices", "class/infiniband")


def why_not_sysfs(root: str) -> Optional[str]:
    """Why directory ``root`` cannot be a sysfs tree, or ``None`` when it can.

    The rule: ``devices/`` is a directory, so is ``bus/`` or ``class/``, and so
    is at least one of :data:`SYSFS_MARKERS` (``devices/system``,
    ``bus/pci/devices``, ``class/infiniband``).  Every real /sys has all of
    them; a copied or minimal tree needs only what it is read for.  /proc is
    refused: it has ``bus/`` but its ``devices`` is a file.
    """
    def isdir(rel: str) -> bool:
        try:
            return stat.S_ISDIR(os.stat(os.path.join(root, rel)).st_mode)
        except PermissionError:
            raise
        except (OSError, ValueError):  # absent, not a directory, a NUL in the path
            return False

    def anydir(*rels: str) -> bool:
        # A directory that may not be searched is "permission denied" only when none of
        # the others is there: one unreadable marker does not refuse a tree.
        denied: Optional[PermissionError] = None
        for rel in rels:
            try:
                if isdir(rel):
                    return True
            except PermissionError as exc:
                denied = denied or exc
        if denied is not None:
            raise denied
        return False

    try:
        if not anydir("devices"):
            return "no devices/ directory"
        if not anydir("bus", "class"):
            return "devices/ but neither bus/ nor class/"
        if not anydir(*SYSFS_MARKERS):
            return f"none of {', '.join(m + '/' for m in SYSFS_MARKERS)}"
    except PermissionError as exc:
        return PERMISSION_DENIED + _denied_where(root, exc)
    return None


#: What :func:`why_not_sysfs` and :func:`check_root` say of a tree they may not look into:
#: not "absent", not "no sysfs tree".
PERMISSION_DENIED = "permission denied"


def _denied_where(root: str, exc: OSError) -> str:
    """`` on DIR/`` for the directory that may not be searched when ``stat(DIR/x)`` is denied,
    or nothing when that directory is ``root`` itself."""
    path = exc.filename if isinstance(exc.filename, str) else ""
    parent = os.path.dirname(os.path.normpath(path)) if path else ""
    if not parent or os.path.normpath(parent) == os.path.normpath(root):
        return ""
    rel = os.path.relpath(parent, root)
    return f" on {_path_shown(rel if not rel.startswith('..') else parent)}/"


def looks_like_sysfs(root: str) -> bool:
    """True when directory ``root`` passes the rule of :func:`why_not_sysfs`."""
    return why_not_sysfs(root) is None


def _path_shown(root: str) -> str:
    """A path as the user could type it: an empty or odd path stays visible, on one line."""
    return shlex.quote(root) if root.isprintable() else repr(root)


def _option_shown(root: str) -> str:
    return f"--sysfs-root {_path_shown(root)}"


def check_root(root: str) -> None:
    """Raise :class:`NvtopoError` when ``--sysfs-root`` is no sysfs tree (exit 2, one line)."""
    where = _option_shown(root)
    try:
        st = os.stat(root) if root else None
    except PermissionError:
        raise NvtopoError(PERMISSION_DENIED, where=where) from None
    except (OSError, ValueError):
        st = None
    if st is None:
        raise NvtopoError("no such directory", where=where)
    if not stat.S_ISDIR(st.st_mode):
        raise NvtopoError("is not a directory (a sysfs tree such as /sys is wanted)",
                          where=where)
    why = why_not_sysfs(root)
    if why is not None and why.startswith(PERMISSION_DENIED):
        raise NvtopoError(f"{why} (run as a user who may read the tree, or copy it)",
                          where=where)
    if why is not None:
        raise NvtopoError(f"is not a sysfs tree ({why}); the directory must play the role "
                          "of /sys", where=where)


def _budget(timeout: Any) -> float:
    """Seconds the capture may take: ``timeout`` when it is a positive number (``inf``:
    no limit), else :data:`DEFAULT_TIMEOUT`."""
    try:
        t = float(timeout)
    except (TypeError, ValueError):
        return DEFAULT_TIMEOUT
    return t if t > 0 else DEFAULT_TIMEOUT  # (NaN is not > 0)


def capture(options: Optional[Any] = None, faults: Optional[Dict[str, str]] = None,
            reader: Optional[Callable[[str], bytes]] = None) -> Dict[str, Any]:
    """Read the sysfs tree and return its raw evidence.

    Never raises for the expected failures: a missing root, unreadable files
    and vanished devices are recorded (``status``, ``errors``).

    The reading runs under a time budget, ``options.timeout`` seconds (reading
    ``counters/`` sends a MAD to the HCA and ``hw_counters/`` a firmware
    command: a failing HCA can stall them).  The traversal runs in a worker
    thread; when the budget is spent, no further file is read (each becomes an
    error with reason :data:`DEADLINE`), and if one read still hangs, capture
    returns without it (at most ``min(budget, 1 s)`` later): ``status`` is
    ``"timeout"`` and ``pending`` names the file that did not answer.
    ``faults`` injects read errors and ``reader`` replaces the file reader
    (both for tests).
    """
    root = getattr(options, "sysfs_root", None)
    if root is None:
        root = DEFAULT_ROOT
    evidence: Dict[str, Any] = {
        "root": root,
        "status": "ok",
        "error": None,
        "uid": os.getuid() if hasattr(os, "getuid") else None,
        "duration_s": None,
        "files": {},
        "links": {},
        "dirs": {},
        "errors": {},
    }
    why = why_not_sysfs(root) if root and os.path.isdir(root) else "no such directory"
    if why is not None:
        evidence["status"] = "missing"
        evidence["error"] = (f"{_path_shown(root)}: {why}" if why.startswith(PERMISSION_DENIED)
                             else f"{_path_shown(root)} is not a sysfs tree ({why})")
        return evidence
    budget = _budget(getattr(options, "timeout", None))
    evidence["timeout_s"] = budget if budget < threading.TIMEOUT_MAX else None  # JSON has no inf
    start = time.monotonic()
    view = _LiveView(root, faults, reader)
    failed: List[BaseException] = []

    def run() -> None:
        try:
            _collect(view)
        except BaseException as exc:  # handed to the caller below
            failed.append(exc)

    worker = threading.Thread(target=run, name="nvtopo-sysfs", daemon=True)
    worker.start()
    worker.join(budget if budget < threading.TIMEOUT_MAX else None)  # inf: no limit
    if worker.is_alive():
        # Budget spent: read nothing more; the rest of the walk (listings, links) is quick.
        view.stopped = True
        worker.join(min(budget, 1.0))
        pending = view.inflight if worker.is_alive() else None
        evidence["status"] = "timeout"
        evidence["error"] = f"sysfs probe did not finish within its {budget:g} s budget"
        if pending is not None:  # one read hangs: leave it behind
            evidence["pending"] = {"path": pending[0],
                                   "waited_s": round(time.monotonic() - pending[1], 3)}
            evidence["error"] += f" ({pending[0]} did not answer)"
        evidence["error"] += "; files not read by then are unknown (deadline)"
    if failed:
        raise failed[0]
    # dict() copies are atomic under the GIL: a hung worker that wakes up later cannot
    # change what is returned
    files, links, dirs, errors, cut = (dict(view.files), dict(view.links), dict(view.dirs),
                                       dict(view.errors), dict(view.cut))
    pending_path = (evidence.get("pending") or {}).get("path")
    if pending_path is not None and pending_path not in files and pending_path not in dirs:
        errors[pending_path] = DEADLINE
    if view.full:
        # Nothing was read or recorded past the limit: what the evidence lacks is unknown
        # for that reason (derive answers LIMIT for it), never absent.
        evidence["status"] = "limit"
        evidence["error"] = (f"sysfs probe stopped at its evidence limit ({MAX_EVIDENCE_ENTRIES} "
                             f"entries or {MAX_EVIDENCE_BYTES // (1024 * 1024)} MiB); files "
                             "not read by then are unknown" + (
                                 f" ({evidence['error']})" if evidence["error"] else ""))
    evidence["duration_s"] = round(time.monotonic() - start, 4)
    evidence["files"] = files
    evidence["links"] = links
    evidence["dirs"] = dirs
    evidence["errors"] = errors
    if cut:
        evidence["cut"] = cut
    return evidence


# --- value parsers (pure) -------------------------------------------------------------


def parse_enum(raw: Optional[str]) -> Tuple[Optional[int], Optional[str]]:
    """``"4: ACTIVE"`` -> ``(4, "ACTIVE")``; ``"7: Phy Test"`` -> ``(7, "Phy Test")``."""
    if raw is None:
        return None, None
    s = raw.strip()
    m = _ENUM_RE.match(s)
    if m:
        return int(m.group(1)), (m.group(2).strip() or None)
    return None, (s or None)


# ASCII digits only, and few of them: Python's \d and int() take any Unicode digit ("٤").
_ENUM_RE = re.compile(r"^([0-9]{1,9})\s*:\s*(.*)$", re.S)


_RATE_RE = re.compile(
    r"^\s*(?P<num>[0-9]{1,9}(?:\.[0-9]{1,9})?)\s*(?P<unit>[GM])[bB]/sec"
    r"(?:\s*\(\s*(?P<lanes>[0-9]{1,3})X(?:\s*(?P<speed>[A-Za-z][A-Za-z0-9]{0,15}))?\s*\))?\s*$")


def parse_rate(raw: Optional[str]) -> Dict[str, Any]:
    """Parse a port ``rate`` in every form the kernels print.

    ``400 Gb/sec (4X NDR)``, ``10 Gb/sec (4X)`` (old kernels), ``0 GB/sec``
    (MLNX_OFED 4.3), ``2.5 Gb/sec (1X SDR)``, ``14.0625 Gb/sec (1X FDR)``,
    ``200 Gb/sec (2X NDR)``, ``800 Gb/sec (4X XDR)``.  The raw string is kept;
    ``gbps`` is ``None`` where the text is not a rate.
    """
    out: Dict[str, Any] = {"raw": raw, "gbps": None, "lanes": None, "width": None,
                           "speed": None}
    if raw is None:
        return out
    m = _RATE_RE.match(raw)
    if not m:
        return out
    num = float(m.group("num"))
    if m.group("unit") == "M":
        num = num / 1000.0
    out["gbps"] = int(num) if num.is_integer() else num
    if m.group("lanes"):
        out["lanes"] = int(m.group("lanes"))
        out["width"] = f"{out['lanes']}X"
    if m.group("speed"):
        out["speed"] = m.group("speed").upper()
    return out


def parse_pcie_speed(raw: Optional[str]) -> Optional[float]:
    """``"32.0 GT/s PCIe"`` (kernel >= 5.7) or ``"8 GT/s"`` (<= 5.6) -> GT/s; ``Unknown`` -> None."""
    if raw is None:
        return None
    m = _GTS_RE.match(raw)
    return float(m.group(1)) if m else None


_GTS_RE = re.compile(r"^\s*([0-9]{1,6}(?:\.[0-9]{1,6})?)\s*GT/s")


def pcie_gen(gts: Optional[float]) -> Optional[int]:
    return PCIE_GEN.get(gts) if gts is not None else None


def _int(raw: Optional[str], base: int = 10, signed: bool = False) -> Optional[int]:
    """An integer in ASCII (:func:`nvtopo.safe.ascii_int`), or ``None``; base 0: hexadecimal
    with ``0x``, else decimal (``lid``: ``0x1a``)."""
    if raw is None:
        return None
    s = raw.strip(" \t\r\n")
    if base == 10 and s.isdigit() and s.isascii() and len(s) <= MAX_DIGITS:  # the usual
        return int(s)
    if base == 0:
        base = 16 if s[:2] in ("0x", "0X") else 10
    return ascii_int(s, base, signed=signed)


def sysfs_bdf(name: str) -> Optional[Tuple[int, int, int, int]]:
    """The PCI address of a sysfs name (``0000:1b:00.0``), or ``None`` for any other name.

    Parsed by :func:`nvtopo.model.pci_bdf`, the one bus-id parser, and accepted
    only in the kernel's own spelling (lower case, 4+ digit domain, function):
    that parser also takes NVML's and short forms, which no sysfs path
    component uses (and names such as ``12:34`` must not pass for a device).
    """
    if len(name) < 12 or name[-2] != ".":  # quick no for the names of a path's other parts
        return None
    t = pci_bdf(name)
    if t is None or name != f"{t[0]:04x}:{t[1]:02x}:{t[2]:02x}.{t[3]}":
        return None
    return t


def cpulist_count(cpulist: Optional[str]) -> Optional[int]:
    """Number of CPUs in a list such as ``0-55,112-167``; 0 for an empty list."""
    if cpulist is None:
        return None
    n = 0
    for part in cpulist.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, _, b = part.partition("-")
            lo, hi = ascii_int(a), ascii_int(b)
            if lo is None or hi is None or hi < lo or not (is_ascii_digits(a)
                                                           and is_ascii_digits(b)):
                return None
            n += hi - lo + 1
        elif is_ascii_digits(part) and ascii_int(part) is not None:
            n += 1
        else:
            return None
    return n


def natural_key(name: str) -> List[Any]:
    """``mlx5_2`` before ``mlx5_10``.  Runs of ASCII digits compare as numbers (by length,
    then digits: no int() of a name, however long); every other character as text."""
    parts: List[Any] = re.split(r"([0-9]+)", name)
    for i in range(1, len(parts), 2):  # odd places: the digit runs
        d = parts[i].lstrip("0")
        parts[i] = (len(d), d, parts[i])
    return parts


def _reason(err: Optional[str]) -> str:
    if err is None:
        return "unknown"
    if err.startswith("ENOENT"):
        return "missing (ENOENT)"
    return err


def _absent_reason(err: Optional[str]) -> str:
    """Why a ``class/infiniband`` entry is no device directory."""
    if err is None:
        return "unknown"
    if err.startswith("ENOENT"):
        return "dangling link, the device is gone (ENOENT)"
    if err.startswith("ENOTDIR"):
        return "not a directory (ENOTDIR)"
    return err


# --- the traversal (shared by capture and derive) ---------------------------------------


def _pci_kind(vendor: Optional[int], cls: Optional[int]) -> Optional[str]:
    if cls is None:
        return None
    base, sub = cls >> 16, (cls >> 8) & 0xFF
    if vendor == VENDOR_NVIDIA and base == 0x03:
        return "gpu"
    if base == 0x02 and sub in (0x00, 0x07) and vendor == VENDOR_MELLANOX:
        return "nic"
    if base == 0x02 and sub == 0x07:
        return "nic"
    if base == 0x01 and sub == 0x08:
        return "nvme"
    if base == 0x06 and sub == 0x04:
        return "bridge"
    return None


def _chain(real: str) -> Tuple[Optional[str], List[str]]:
    """Host bridge (``pci0000:15``) and the BDFs from the root port down to the device."""
    host = None
    chain: List[str] = []
    for comp in real.split("/"):
        if host is None and HOST_BRIDGE_RE.match(comp):
            host = comp
            continue
        if sysfs_bdf(comp):
            chain.append(comp)
    return host, chain


def _read_pci(v: Any, base: str, bdf: str, kind: str, vendor: Optional[int],
              cls: Optional[int]) -> Dict[str, Any]:
    """The placement facts of one PCI function (``base`` = ``bus/pci/devices/<bdf>``)."""
    real = v.resolve(base)
    host, chain = _chain(real)
    dev: Dict[str, Any] = {"bdf": bdf, "kind": kind, "vendor": vendor, "class": cls,
                           "path": real, "host_bridge": host, "chain": chain,
                           "attrs": {}, "errors": {}}
    for attr in PCI_ATTRS:
        val, aerr = v.read(f"{base}/{attr}")
        if val is None:
            dev["errors"][attr] = aerr
        else:
            dev["attrs"][attr] = val
    return dev


def _port_number(name: str) -> Optional[int]:
    """The number of a ``ports/`` entry as the kernel names it (``1``, not ``01`` or ``²``)."""
    n = ascii_int(name, lo=0, hi=MAX_PORT) if is_ascii_digits(name) else None
    return n if n is not None and name == str(n) else None


def _collect(v: Any) -> Dict[str, Any]:
    """Walk the tree through view ``v`` and return what was found, values still raw.

    Bounded whatever the tree holds: at most :data:`MAX_DEVICES` devices of each
    kind (the rest counted in ``skipped``), ports named 0-255 only.
    """
    out: Dict[str, Any] = {"pci": {}, "hcas": [], "numa": None, "modules": {},
                           "skipped": {}}
    skipped: Dict[str, int] = out["skipped"]
    per_kind: Dict[str, int] = {}

    # -- PCI devices
    names, err = v.listdir("bus/pci/devices")
    out["pci_error"] = err if names is None else None
    for name in names or []:
        bdf = name.lower()
        if not sysfs_bdf(bdf):
            continue
        base = f"bus/pci/devices/{name}"
        cls_raw, cls_err = v.read(base + "/class")
        ven_raw, _ = v.read(base + "/vendor")
        cls, vendor = _int(cls_raw, 16), _int(ven_raw, 16)
        kind = _pci_kind(vendor, cls)
        if kind is None:
            continue
        if kind != "bridge":  # bridges are looked up, never paired: no square to bound
            if per_kind.get(kind, 0) >= MAX_DEVICES:
                skipped[kind] = skipped.get(kind, 0) + 1
                continue
            per_kind[kind] = per_kind.get(kind, 0) + 1
        out["pci"][bdf] = _read_pci(v, base, bdf, kind, vendor, cls)

    # -- RDMA devices
    devs, err = v.listdir("class/infiniband")
    out["ib_error"] = err if devs is None else None
    out["ib_absent"] = {}
    if devs is not None and len(devs) > MAX_DEVICES:
        skipped["rdma"] = len(devs) - MAX_DEVICES
        devs = devs[:MAX_DEVICES]
    for name in devs or []:
        base = f"class/infiniband/{name}"
        # A name whose entry is no directory (a dangling link: the device vanished; a
        # stray file in a copied tree) is absent or unreadable, not a device.  Evidence
        # taken before this listing was recorded has none: the device is read as before.
        listing, lerr = v.listdir(base)
        if listing is None and lerr != NOT_RECORDED:
            out["ib_absent"][name] = lerr
            continue
        hca: Dict[str, Any] = {"name": name, "path": v.resolve(base), "attrs": {}, "errors": {},
                               "ports": [], "netdevs": [], "hw_counters": None,
                               "skipped_ports": []}
        for attr in HCA_ATTRS:
            val, aerr = v.read(f"{base}/{attr}")
            if val is None:
                hca["errors"][attr] = aerr
            else:
                hca["attrs"][attr] = val
        hca["device_path"] = v.resolve(base + "/device")
        nets, _ = v.listdir(base + "/device/net")
        for nd in nets or []:
            entry: Dict[str, Any] = {"name": nd}
            for attr in ("dev_port", "dev_id", "type"):
                val, _ = v.read(f"{base}/device/net/{nd}/{attr}")
                entry[attr] = val
            hca["netdevs"].append(entry)
        hca["hw_counters"], hca["hw_counters_error"] = _read_counter_dir(v, base + "/hw_counters")
        ports, perr = v.listdir(base + "/ports")
        if ports is None:
            hca["errors"]["ports"] = perr
        numbered = []
        for p in ports or []:
            num = _port_number(p)
            if num is None:
                hca["skipped_ports"].append(p)
            else:
                numbered.append((num, p))
        for num, p in sorted(numbered):
            pbase = f"{base}/ports/{p}"
            port: Dict[str, Any] = {"port": num, "attrs": {}, "errors": {}}
            for attr in PORT_ATTRS:
                val, aerr = v.read(f"{pbase}/{attr}")
                if val is None:
                    port["errors"][attr] = aerr
                else:
                    port["attrs"][attr] = val
            if (port["attrs"].get("link_layer") or "").strip() == "Ethernet":
                for attr in ("gid_attrs/ndevs/0", "gid_attrs/types/0"):
                    val, aerr = v.read(f"{pbase}/{attr}")
                    if val is None:
                        port["errors"][attr] = aerr
                    else:
                        port["attrs"][attr] = val
            port["counters"], port["counters_error"] = _read_counter_dir(v, pbase + "/counters")
            port["hw_counters"], port["hw_counters_error"] = _read_counter_dir(
                v, pbase + "/hw_counters")
            hca["ports"].append(port)
        out["hcas"].append(hca)
        # The PCI function of an RDMA device is read whatever its class and vendor (an
        # Intel E810 or a Broadcom NIC is class 0x0200 from another vendor than 0x15b3).
        bdf = _pci_of(hca["device_path"])[0] or _pci_of(hca["path"])[0]
        if bdf is not None and bdf not in out["pci"] and bdf in (names or ()):
            base = f"bus/pci/devices/{bdf}"
            cls = _int(v.read(base + "/class")[0], 16)
            vendor = _int(v.read(base + "/vendor")[0], 16)
            out["pci"][bdf] = _read_pci(v, base, bdf, "nic", vendor, cls)

    # -- NUMA
    nodes, err = v.listdir("devices/system/node")
    if nodes is not None:
        numa: Dict[str, Any] = {"nodes": [], "online": v.read("devices/system/node/online")[0]}
        found = sorted((int(m.group(1)), x) for x in nodes for m in (NODE_RE.match(x),) if m)
        for num, n in found[:MAX_DEVICES]:
            cpulist, cerr = v.read(f"devices/system/node/{n}/cpulist")
            dist, derr = v.read(f"devices/system/node/{n}/distance")
            numa["nodes"].append({"node": num, "name": n, "cpulist": cpulist, "distance": dist,
                                  "errors": {k: e for k, e in (("cpulist", cerr),
                                                               ("distance", derr))
                                             if e is not None and k}})
        if len(found) > MAX_DEVICES:
            skipped["numa"] = len(found) - MAX_DEVICES
        out["numa"] = numa
    else:
        out["numa_error"] = err

    # -- GPUDirect modules
    for mod in MODULES:
        listing, _ = v.listdir(f"module/{mod}")
        version = v.read(f"module/{mod}/version")[0] if listing and "version" in listing else None
        out["modules"][mod] = {"loaded": listing is not None, "version": version}
    for path in PEER_MEM_FILES:
        out["modules"][path] = {"loaded": v.read(path)[0] is not None}
    return out


def _read_counter_dir(v: Any, path: str) -> Tuple[Optional[Dict[str, Tuple[Optional[str],
                                                                            Optional[str]]]],
                                                  Optional[str]]:
    """The counters of directory ``path`` (name -> (value, error)), or ``None`` and why not."""
    names, err = v.listdir(path)
    if names is None:
        return None, err
    out = {}
    for n in names:
        if n == "lifespan":  # a writable cache setting, not a counter
            continue
        out[n] = v.read(f"{path}/{n}")
    return out, None


# --- derive (pure) ------------------------------------------------------------------------------


def derive(evidence: Dict[str, Any]) -> Topology:
    """Model facts from recorded sysfs evidence.  Pure: no I/O."""
    topo = Topology(sources=[SOURCE])
    status = evidence.get("status") or "ok"
    if status not in ("ok", "timeout", "limit"):
        topo.note("sysfs.unavailable", f"no sysfs facts: {evidence.get('error') or status}",
                  source=SOURCE, level="warning")
        return topo
    timed_out = status == "timeout"
    unread = LIMIT if status == "limit" else DEADLINE if timed_out else NOT_RECORDED
    raw = _collect(_EvidenceView(evidence, unread=unread))
    if timed_out:
        errors = evidence.get("errors")
        n = sum(1 for e in (errors.values() if isinstance(errors, dict) else ())
                if e == DEADLINE)
        topo.note("sysfs.timeout", f"{evidence.get('error') or 'sysfs probe timed out'} "
                  f"({n} files)", source=SOURCE, level="warning")
    elif status == "limit":
        topo.note("sysfs.limit", str(evidence.get("error") or LIMIT), source=SOURCE,
                  level="warning")
    cut = evidence.get("cut")
    if isinstance(cut, dict) and cut:
        paths = sorted(str(k) for k in cut)
        topo.note("sysfs.listing_cut", f"{len(paths)} director{'ies' if len(paths) > 1 else 'y'}"
                  f" with more than {MAX_DIR_ENTRIES} entries, the rest not read: "
                  + ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4
                                            else ""), source=SOURCE, level="warning")
    return build(raw, root=evidence.get("root"), topo=topo)


def _link(dev: Dict[str, Any]) -> Dict[str, Any]:
    """Current and max link of one PCI device, parsed, with reasons for what is unknown."""
    a, e = dev["attrs"], dev["errors"]
    cur = parse_pcie_speed(a.get("current_link_speed"))
    mx = parse_pcie_speed(a.get("max_link_speed"))
    cw = _int(a.get("current_link_width"))
    mw = _int(a.get("max_link_width"))
    link: Dict[str, Any] = {
        "current_gts": cur, "current_gen": pcie_gen(cur), "current_width": cw,
        "max_gts": mx, "max_gen": pcie_gen(mx), "max_width": mw,
        "raw": {k: a.get(k) for k in ("current_link_speed", "current_link_width",
                                      "max_link_speed", "max_link_width")},
    }
    unknown = {}
    for k in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"):
        if k in e:
            unknown[k] = _reason(e[k])
        elif a.get(k) is not None and (("speed" in k and parse_pcie_speed(a[k]) is None)
                                       or ("width" in k and _int(a[k]) is None)):
            unknown[k] = f"not a value: {a[k]!r}"
    if unknown:
        link["unknown"] = unknown
    link["width_below_max"] = (cw < mw) if cw is not None and mw is not None else None
    link["speed_below_max"] = (cur < mx) if cur is not None and mx is not None else None
    return link


def _hops(dev: Dict[str, Any], pci: Dict[str, Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], bool]:
    """PCIe links from the root port down to the device; ``paired`` False for odd layouts.

    Below the root port, bridges come as switch upstream/downstream port pairs,
    so the physical links are (root port, next), (downstream port, next), ...
    """
    chain = dev["chain"]
    paired = len(chain) % 2 == 0 or len(chain) == 1
    pairs: List[Tuple[str, str]] = []
    if len(chain) >= 2:
        if paired:
            pairs = [(chain[i], chain[i + 1]) for i in range(0, len(chain) - 1, 2)]
        else:
            pairs = [(chain[-2], chain[-1])]
    hops = []
    for up, down in pairs:
        u = pci.get(up)
        d = pci.get(down)
        ul = _link(u) if u else {}
        dl = _link(d) if d else {}
        cur = dl.get("current_gts") if dl.get("current_gts") is not None else ul.get("current_gts")
        cw = dl.get("current_width") if dl.get("current_width") is not None else ul.get("current_width")
        maxes = [x for x in (ul.get("max_gts"), dl.get("max_gts")) if x is not None]
        widths = [x for x in (ul.get("max_width"), dl.get("max_width")) if x is not None]
        exp = min(maxes) if maxes else None
        ew = min(widths) if widths else None
        hops.append({
            "upstream": up, "downstream": down,
            "current_gts": cur, "current_gen": pcie_gen(cur), "current_width": cw,
            "expected_gts": exp, "expected_gen": pcie_gen(exp), "expected_width": ew,
            "width_degraded": (cw < ew) if cw is not None and ew is not None else None,
            "speed_below_expected": (cur < exp) if cur is not None and exp is not None else None,
        })
    return hops, paired


def _narrowest(hops: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    known = [h for h in hops if h["current_gts"] is not None and h["current_width"] is not None]
    if not known:
        return None
    return min(known, key=lambda h: (h["current_gts"] * h["current_width"],
                                     -hops.index(h)))


def _switches(dev: Dict[str, Any]) -> Optional[List[str]]:
    """Switch upstream ports above the device, root first; ``None`` for unpaired layouts."""
    above = dev["chain"][:-1]
    if above and len(above) % 2 == 0:
        return None
    return above[1::2]


def _numa(dev: Dict[str, Any]) -> Optional[int]:
    n = _int(dev["attrs"].get("numa_node"), signed=True)
    return n if n is not None and n >= 0 else None


def path_level(a: Dict[str, Any], b: Dict[str, Any]) -> Optional[str]:
    """PIX/PXB/PHB/NODE/SYS between two PCI devices from the tree; ``None`` when unknown."""
    if a["bdf"] == b["bdf"]:
        return "X"
    if a["bdf"].rsplit(".", 1)[0] == b["bdf"].rsplit(".", 1)[0]:
        return "PIX"  # functions of one device (multi-port NIC)
    if a["host_bridge"] is not None and a["host_bridge"] == b["host_bridge"]:
        sa, sb = _switches(a), _switches(b)
        if sa is None or sb is None:
            return None
        k = 0
        while k < min(len(sa), len(sb)) and sa[k] == sb[k]:
            k += 1
        if k == 0:
            return "PHB"
        return "PIX" if (len(sa) - k) + (len(sb) - k) + 1 == 1 else "PXB"
    if a["host_bridge"] is None or b["host_bridge"] is None:
        return None
    na, nb = _numa(a), _numa(b)
    if na is None or nb is None:
        return None
    return "NODE" if na == nb else "SYS"


def _pci_of(path: str) -> Tuple[Optional[str], str]:
    """Nearest PCI address in a resolved device path, and what the parent is."""
    comps = [c for c in path.split("/") if c]
    if "virtual" in comps:
        return None, "none"
    for i in range(len(comps) - 1, -1, -1):
        if sysfs_bdf(comps[i]):
            return comps[i], ("pci" if i == len(comps) - 1 else "auxiliary")
    return None, "none"


def _counters(raw: Optional[Dict[str, Tuple[Optional[str], Optional[str]]]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"values": {}, "unknown": {}, "saturated": []}
    for name, (val, err) in sorted((raw or {}).items()):
        n = _int(val)
        if n is None:
            out["values"][name] = None
            out["unknown"][name] = _reason(err) if val is None else val.strip() or "empty"
            continue
        out["values"][name] = n
        limit = ERROR_COUNTERS.get(name) or OTHER_SATURATING.get(name)
        if (limit is not None and n >= limit) or n in (0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF):
            out["saturated"].append(name)
    return out


def _port(p: Dict[str, Any], node_type: Optional[str]) -> Dict[str, Any]:
    a, e = p["attrs"], p["errors"]
    state_code, state = parse_enum(a.get("state"))
    phys_code, phys = parse_enum(a.get("phys_state"))
    rate = parse_rate(a.get("rate"))
    layer = (a.get("link_layer") or "").strip() or None
    unknown: Dict[str, str] = {}
    for k in PORT_ATTRS + ("gid_attrs/ndevs/0",):
        if k in e and not (k == "gid_attrs/ndevs/0" and layer != "Ethernet"):
            unknown[k] = _reason(e[k])
    if a.get("rate") is not None and rate["gbps"] is None:
        unknown["rate"] = f"not a rate: {a['rate']!r}"
    # the kernel writes "4: ACTIVE" and nothing else: other text is no state (unknown, not DOWN)
    if a.get("state") is not None and state_code is None:
        unknown["state"], state = f"not a value: {a['state']!r}", None
    if a.get("phys_state") is not None and phys_code is None:
        unknown["phys_state"], phys = f"not a value: {a['phys_state']!r}", None
    if layer == "InfiniBand":
        transport = "IB"
    elif layer == "Ethernet":
        transport = "iWARP" if node_type == "RNIC" else "RoCE"
    else:
        transport = None
    counters = _counters(p.get("counters"))
    hw = _counters(p.get("hw_counters")) if p.get("hw_counters") is not None else None
    errors_nonzero = {k: v for k, v in counters["values"].items()
                      if k in ERROR_COUNTERS and v}
    data = {}
    for k, short in DATA_COUNTERS.items():
        if k in counters["values"]:
            v = counters["values"][k]
            data[short] = v * 4 if v is not None else None
    gid0 = (a.get("gids/0") or "").strip() or None
    active = state == "ACTIVE"
    port: Dict[str, Any] = {
        "port": p["port"],
        "state": state, "state_code": state_code,
        "phys_state": phys, "phys_state_code": phys_code,
        "rate_gbps": rate["gbps"] if active else None,
        "rate": rate,
        "link_layer": layer,
        "transport": transport,
        "netdev": None,
        "lid": _int(a.get("lid"), 0) if a.get("lid") is not None else None,
        "sm_lid": _int(a.get("sm_lid"), 0) if a.get("sm_lid") is not None else None,
        "gid0": gid0,
        "port_guid": (gid0.replace(":", "")[16:] if gid0 and len(gid0.replace(":", "")) == 32
                      else None),
        "gid0_type": (a.get("gid_attrs/types/0") or "").strip() or None,
        "gid0_netdev": (a.get("gid_attrs/ndevs/0") or "").strip() or None,
        "counters": counters["values"] if p.get("counters") is not None else None,
        "counters_unknown": counters["unknown"],
        "counters_saturated": counters["saturated"],
        "error_counters": errors_nonzero,
        "data_bytes": data,
        "hw_counters": hw["values"] if hw else None,
        "hw_counters_unknown": hw["unknown"] if hw else {},
        "unknown": unknown,
    }
    if not active and rate["gbps"] is not None:
        port["rate_note"] = "port not ACTIVE: the rate it shows is meaningless"
    # absent (no PMA), unreadable (EACCES...) and not read (deadline) are three answers
    port["counters_status"] = _dir_status(p.get("counters"), p.get("counters_error"))
    port["hw_counters_status"] = _dir_status(p.get("hw_counters"), p.get("hw_counters_error"))
    if port["counters_status"] == "absent":
        port["counters_note"] = "no counters/ directory (driver without PMA)"
    elif port["counters_status"] != "read":
        port["counters_note"] = f"counters/ {_dir_reason(p.get('counters_error'))}"
    return port


def _dir_status(listing: Any, err: Optional[str]) -> str:
    """``read``, ``absent`` (ENOENT), ``not read`` (deadline, limit) or ``unreadable``."""
    if listing is not None:
        return "read"
    if err is None or err.startswith("ENOENT"):
        return "absent"
    if err in (DEADLINE, LIMIT):
        return "not read"
    return "unreadable"


def _dir_reason(err: Optional[str]) -> str:
    """Why a directory that is there was not read: ``unreadable: permission denied (EACCES)``."""
    if err is None or err.startswith("ENOENT"):
        return "absent"
    if err == DEADLINE:
        return "not read (the probe's time budget was spent)"
    if err == LIMIT:
        return "not read (the evidence reached its size limit)"
    name, _, msg = err.partition(": ")
    if name in ("EACCES", "EPERM"):
        return f"unreadable: permission denied ({name})"
    return f"unreadable: {msg.lower() if msg else err} ({name})" if msg else f"unreadable: {err}"


def build(raw: Dict[str, Any], root: Optional[str] = None,
          topo: Optional[Topology] = None) -> Topology:
    """Turn collected raw values into a model fragment (GPUs, NICs, sysfs path matrix)."""
    topo = topo if topo is not None else Topology(sources=[SOURCE])
    pci: Dict[str, Dict[str, Any]] = raw["pci"]
    info: Dict[str, Any] = {"root": root}

    if raw.get("pci_error"):
        topo.note("sysfs.no_pci", f"bus/pci/devices unreadable: {_reason(raw['pci_error'])}; "
                  "no PCI facts", source=SOURCE, level="warning")

    # -- per-device PCI facts
    def pci_facts(dev: Dict[str, Any]) -> Dict[str, Any]:
        hops, paired = _hops(dev, pci)
        facts: Dict[str, Any] = {
            "pci_address": dev["bdf"],
            "device_id": dev["attrs"].get("device"),
            "class": f"0x{dev['class']:06x}" if dev["class"] is not None else None,
            "numa_node": _numa(dev),
            "local_cpulist": dev["attrs"].get("local_cpulist"),
            "host_bridge": dev["host_bridge"],
            "chain": dev["chain"],
            "link": _link(dev),
            "hops": hops,
            "narrowest_hop": _narrowest(hops),
        }
        if not paired:
            facts["layout_note"] = "unpaired PCIe bridges above this device: switch count unknown"
        raw_numa = dev["attrs"].get("numa_node")
        if raw_numa is None:
            facts["numa_unknown"] = _reason(dev["errors"].get("numa_node"))
        elif _int(raw_numa, signed=True) is None:
            facts["numa_unknown"] = f"not a value: {raw_numa!r}"
        elif _numa(dev) is None:
            facts["numa_unknown"] = f"numa_node is {raw_numa.strip()} (no NUMA information)"
        return facts

    for bdf in sorted(pci, key=lambda b: sysfs_bdf(b) or (0, 0, 0, 0)):
        a = pci[bdf]["attrs"]
        for k in ("numa_node", "current_link_speed", "current_link_width", "max_link_speed",
                  "max_link_width"):
            val = a.get(k)
            if val is None or val.strip() == "" or val.startswith("Unknown"):  # "Unknown speed"
                continue
            ok = (parse_pcie_speed(val) is not None if "speed" in k
                  else _int(val, signed=k == "numa_node") is not None)
            if not ok:
                topo.note("sysfs.bad_value", f"bus/pci/devices/{bdf}/{k}: not a value: "
                          f"{val!r}: unknown", source=SOURCE, level="warning", subject=bdf)

    gpus = sorted((d for d in pci.values() if d["kind"] == "gpu"),
                  key=lambda d: sysfs_bdf(d["bdf"]) or (0, 0, 0, 0))
    gpu_labels: Dict[str, str] = {}
    for i, dev in enumerate(gpus):
        facts = pci_facts(dev)
        label = f"GPU{i}"
        gpu_labels[dev["bdf"]] = label
        g = GPU(index=i, label=label, pci_bus_id=dev["bdf"], sources={"pci_bus_id": SOURCE})
        if facts["local_cpulist"]:
            g.cpu_affinity = facts["local_cpulist"].strip()
            g.sources["cpu_affinity"] = SOURCE
        if facts["numa_node"] is not None:
            g.numa_affinity = str(facts["numa_node"])
            g.sources["numa_affinity"] = SOURCE
        g.extra[SOURCE] = facts
        topo.gpus.append(g)
    if gpus:
        topo.note("sysfs.gpu_order", "sysfs numbers GPUs in PCI bus order (GPU0 = lowest bus "
                  "id), as nvidia-smi does by default; other enumerations (CUDA_DEVICE_ORDER, "
                  "CUDA_VISIBLE_DEVICES) may differ", source=SOURCE)

    # -- HCAs
    hcas: List[Dict[str, Any]] = []
    for h in sorted(raw["hcas"], key=lambda x: natural_key(x["name"])):
        a, e = h["attrs"], h["errors"]
        nt_code, node_type = parse_enum(a.get("node_type"))
        bdf, parent = _pci_of(h["device_path"])
        if bdf is None:
            bdf, parent2 = _pci_of(h["path"])
            parent = parent2 if bdf else "none"
        dev = pci.get(bdf) if bdf else None
        hca: Dict[str, Any] = {
            "name": h["name"],
            "pci_address": bdf,
            "numa_node": _numa(dev) if dev else None,
            "parent": parent,
            "soft": bdf is None,
            "node_type": node_type,
            "node_guid": (a.get("node_guid") or "").strip() or None,
            "sys_image_guid": (a.get("sys_image_guid") or "").strip() or None,
            "fw_ver": (a.get("fw_ver") or "").strip() or None,
            "hca_type": (a.get("hca_type") or "").strip() or None,
            "board_id": (a.get("board_id") or "").strip() or None,
            "device_path": h["device_path"],
            "netdevs": [],
            "unknown": {k: _reason(v) for k, v in e.items()},
        }
        if dev is not None:
            facts = pci_facts(dev)
            hca["pci"] = {k: facts[k] for k in ("device_id", "class", "local_cpulist",
                                                "host_bridge", "chain", "link",
                                                "narrowest_hop")}
            if "numa_unknown" in facts:
                hca["numa_unknown"] = facts["numa_unknown"]
        elif bdf is not None:
            hca["pci"] = None
            hca["pci_note"] = f"{bdf} not found under bus/pci/devices"
            if not raw.get("pci_error"):  # else sysfs.no_pci said it for every device
                topo.note("sysfs.pci_missing", f"{h['name']}: its PCI function {bdf} is not "
                          "under bus/pci/devices: no placement (NUMA node, PCIe link and "
                          "nearest GPU unknown)", source=SOURCE, level="warning",
                          subject=h["name"])
        else:
            hca["pci"] = None
            hca["pci_note"] = "software RDMA device: no PCI parent"
            topo.note("sysfs.soft_device", f"{h['name']} has no PCI parent (software RDMA "
                      "device such as rxe or siw): no placement, by design", source=SOURCE,
                      subject=h["name"])
        for nd in h["netdevs"]:
            hca["netdevs"].append({"name": nd["name"], "dev_port": _int(nd.get("dev_port")),
                                   "dev_id": _int(nd.get("dev_id"), 0) if nd.get("dev_id") else None,
                                   "type": _int(nd.get("type"))})
        hw = _counters(h["hw_counters"]) if h["hw_counters"] is not None else None
        hca["hw_counters"] = hw["values"] if hw else None
        hca["hw_counters_status"] = _dir_status(h["hw_counters"], h.get("hw_counters_error"))
        ports = [_port(p, node_type) for p in h["ports"]]
        for port in ports:
            port["netdev"] = _port_netdev(port, hca["netdevs"])
            for k, why in sorted(port["unknown"].items()):
                if why.startswith(("not a value: ", "not a rate: ")):
                    topo.note("sysfs.bad_value", f"class/infiniband/{h['name']}/ports/"
                              f"{port['port']}/{k}: {why}: unknown", source=SOURCE,
                              level="warning", subject=h["name"])
            if port["counters_status"] == "unreadable":
                topo.note("sysfs.counters_unreadable",
                          f"{h['name']} port {port['port']}: {port['counters_note']}: its error "
                          "counters are unknown (not absent)", source=SOURCE, level="warning",
                          subject=h["name"])
            # counters left unread at the deadline: sysfs.timeout says so, once
            failing = {k: r for k, r in port["counters_unknown"].items()
                       if r not in (DEADLINE, LIMIT)}
            reasons = sorted(set(failing.values()))
            if reasons:
                topo.note("sysfs.counters_unknown",
                          f"{h['name']} port {port['port']}: {len(failing)} "
                          f"counters unreadable ({'; '.join(reasons)})", source=SOURCE,
                          level="warning", subject=h["name"])
            if port["counters_saturated"]:
                topo.note("sysfs.counters_saturated",
                          f"{h['name']} port {port['port']}: counters stuck at their maximum "
                          f"(true value is at least that): {', '.join(port['counters_saturated'])}",
                          source=SOURCE, level="warning", subject=h["name"])
        if "ports" in e:
            topo.note("sysfs.no_ports", f"{h['name']}: ports/ {_dir_reason(e['ports'])}"
                      if e["ports"] in (DEADLINE, LIMIT) else
                      f"{h['name']}: ports/ unreadable ({_reason(e['ports'])})",
                      source=SOURCE, level="warning", subject=h["name"])
        bad = sorted(h.get("skipped_ports") or [])
        hca["skipped_ports"] = bad
        if bad:
            topo.note("sysfs.bad_port", f"class/infiniband/{h['name']}/ports: {len(bad)} "
                      f"entr{'ies' if len(bad) > 1 else 'y'} not named as a port (0-{MAX_PORT}), "
                      "not read: " + ", ".join(repr(x) for x in bad[:4])
                      + (f" and {len(bad) - 4} more" if len(bad) > 4 else ""),
                      source=SOURCE, level="warning", subject=h["name"])
        hca["ports"] = ports
        hcas.append(hca)

    # -- GPU <-> NIC paths from the tree
    devices = [g.label for g in topo.gpus] + [h["name"] for h in hcas]
    pci_by_label: Dict[str, Optional[Dict[str, Any]]] = {gpu_labels[d["bdf"]]: d for d in gpus}
    for h in hcas:
        pci_by_label[h["name"]] = pci.get(h["pci_address"]) if h["pci_address"] else None
    n = len(devices)
    cells: List[List[Optional[str]]] = [[None] * n for _ in range(n)]
    unknown_pairs = []
    for i, da in enumerate(devices):
        cells[i][i] = "X"
        for j in range(i + 1, n):
            db = devices[j]
            if da.startswith("GPU") and db.startswith("GPU") and da in gpu_labels.values() \
                    and db in gpu_labels.values():
                continue  # NVLink is invisible to sysfs: GPU<->GPU left unknown
            pa, pb = pci_by_label.get(da), pci_by_label.get(db)
            tok = path_level(pa, pb) if pa and pb else None
            cells[i][j] = cells[j][i] = tok
            if tok is None and pa is not None and pb is not None:
                unknown_pairs.append(f"{da}-{db}")
    for h in hcas:
        paths = {g.label: cells[devices.index(g.label)][devices.index(h["name"])]
                 for g in topo.gpus}
        h["gpu_paths"] = paths
        ranked = [(path_rank(t), lab) for lab, t in paths.items() if path_rank(t) is not None]
        if ranked:
            best = min(r for r, _ in ranked)
            h["nearest_gpus"] = [lab for r, lab in ranked if r == best]
            h["nearest_gpu_path"] = paths[h["nearest_gpus"][0]]
        else:
            h["nearest_gpus"] = []
            h["nearest_gpu_path"] = None
    if n and hcas:
        topo.matrix = Matrix(devices=devices, cells=cells, source=SOURCE)
        if len(topo.gpus) > 1:
            topo.note("sysfs.no_nvlink", "sysfs does not show NVLink: GPU↔GPU paths are left "
                      "unknown in the sysfs path matrix", source=SOURCE)
        if unknown_pairs:
            shown = ", ".join(unknown_pairs[:6]) + (
                f" and {len(unknown_pairs) - 6} more" if len(unknown_pairs) > 6 else "")
            topo.note("sysfs.path_unknown", f"PCI path level unknown for {len(unknown_pairs)} "
                      f"device pairs (no PCI placement, NUMA node -1, or an unpaired bridge "
                      f"layout): {shown}", source=SOURCE, level="warning")

    for h in hcas:
        nic = NIC(label=h["name"], name=h["name"], sources={"label": SOURCE, "name": SOURCE})
        if h["pci_address"]:
            nic.pci_bus_id = h["pci_address"]
            nic.sources["pci_bus_id"] = SOURCE
        if h["numa_node"] is not None:
            nic.numa_node = h["numa_node"]
            nic.sources["numa_node"] = SOURCE
        nic.extra[SOURCE] = h
        topo.nics.append(nic)

    absent = {name: _absent_reason(err) for name, err in
              sorted((raw.get("ib_absent") or {}).items(), key=lambda x: natural_key(x[0]))}
    info["absent_devices"] = absent
    for name, why in absent.items():
        if why == LIMIT:
            continue  # said once below
        topo.note("sysfs.device_absent", f"class/infiniband/{name}: not read before the "
                  "deadline, so not counted as an RDMA device" if why == DEADLINE else
                  f"class/infiniband/{name} is absent or unreadable ({why}): not counted as "
                  "an RDMA device", source=SOURCE, level="warning", subject=name)
    past = [name for name, why in absent.items() if why == LIMIT]
    if past:
        topo.note("sysfs.device_absent", f"{len(past)} RDMA devices not read once the evidence "
                  f"reached its limit, so not counted: {', '.join(past[:4])}"
                  + (f" and {len(past) - 4} more" if len(past) > 4 else ""), source=SOURCE,
                  level="warning")
    skipped = raw.get("skipped") or {}
    for kind, what, where in (("rdma", "RDMA devices", "class/infiniband"),
                              ("gpu", "GPUs", "bus/pci/devices"),
                              ("nic", "NICs", "bus/pci/devices"),
                              ("nvme", "NVMe drives", "bus/pci/devices"),
                              ("numa", "NUMA nodes", "devices/system/node")):
        if skipped.get(kind):
            topo.note("sysfs.too_many", f"{where}: {skipped[kind]} {what} beyond the first "
                      f"{MAX_DEVICES} not read (no real node has that many)", source=SOURCE,
                      level="warning")
    if raw.get("ib_error") is not None:
        info["rdma"] = f"class/infiniband absent or unreadable: {_reason(raw['ib_error'])}"
    elif not hcas:
        info["rdma"] = "no RDMA devices" + (
            f" ({len(absent)} listed but absent or unreadable: {', '.join(absent)})"
            if absent else "")

    # -- NVMe drives (GPUDirect Storage placement)
    nvme = []
    for dev in sorted((d for d in pci.values() if d["kind"] == "nvme"),
                      key=lambda d: sysfs_bdf(d["bdf"]) or (0, 0, 0, 0)):
        facts = pci_facts(dev)
        paths = {gpu_labels[g["bdf"]]: path_level(dev, g) for g in gpus}
        ranked = [(path_rank(t), lab) for lab, t in paths.items() if path_rank(t) is not None]
        best = min((r for r, _ in ranked), default=None)
        nvme.append({"pci_address": dev["bdf"], "numa_node": facts["numa_node"],
                     "link": facts["link"], "narrowest_hop": facts["narrowest_hop"],
                     "gpu_paths": paths,
                     "nearest_gpus": [lab for r, lab in ranked if r == best]})
    info["nvme"] = nvme
    #: The labels above (nearest_gpus, gpu_paths) are sysfs's own PCI-order numbering; this
    #: map lets a merged model name the same GPUs by bus id (render.ib does).
    info["gpu_bus_ids"] = {label: bdf for bdf, label in gpu_labels.items()}

    # -- NUMA
    numa = raw.get("numa")
    if numa is not None:
        nodes = []
        for nd in numa["nodes"]:
            cpul = nd["cpulist"].strip() if nd["cpulist"] is not None else None
            dist = None
            unknown = {k: _reason(v) for k, v in nd["errors"].items()}
            if nd["distance"] is not None:
                parts = [_int(x) for x in nd["distance"].split()]
                dist = parts if None not in parts else None
                if dist is None:
                    unknown["distance"] = f"not a value: {nd['distance']!r}"
            cpus = cpulist_count(cpul)
            if cpul is not None and cpus is None:
                unknown["cpulist"] = f"not a value: {nd['cpulist']!r}"
            entry = {"node": nd["node"], "cpulist": cpul, "cpus": cpus, "distances": dist}
            if cpul == "":
                entry["memory_only"] = True
            if unknown:
                entry["unknown"] = unknown
            for k in ("cpulist", "distance"):
                if k in unknown and k not in nd["errors"]:
                    topo.note("sysfs.bad_value", f"devices/system/node/{nd.get('name') or nd['node']}"
                              f"/{k}: {unknown[k]}: unknown", source=SOURCE, level="warning")
            nodes.append(entry)
        info["numa"] = {"online": (numa["online"] or "").strip() or None, "nodes": nodes}
    else:
        info["numa"] = None
        topo.note("sysfs.no_numa", "devices/system/node absent or unreadable "
                  f"({_reason(raw.get('numa_error'))}): NUMA layout unknown", source=SOURCE)

    # -- GPUDirect RDMA
    mods = raw["modules"]
    peermem = mods["nvidia_peermem"]["loaded"]
    legacy = mods["nv_peer_mem"]["loaded"] or any(
        v["loaded"] for k, v in mods.items() if k.startswith("kernel/"))
    info["gpudirect"] = {
        "nvidia_peermem": peermem,
        "nvidia_peermem_version": mods["nvidia_peermem"].get("version"),
        "nv_peer_mem": legacy,
        "peermem_loaded": peermem or legacy,
        "dmabuf": "unknown (not visible in sysfs)",
        "nvidia_fs": mods["nvidia_fs"]["loaded"],
    }
    topo.extra[SOURCE] = info
    return topo


def _port_netdev(port: Dict[str, Any], netdevs: List[Dict[str, Any]]) -> Optional[str]:
    """The netdev of a port: RoCE's GID 0 netdev, else the function's netdev for this port."""
    if port.get("link_layer") == "Ethernet":
        nd = port.get("gid0_netdev")
        if nd:
            return nd
    cands = [n for n in netdevs
             if (n["dev_port"] if n["dev_port"] is not None else (n["dev_id"] or 0))
             == port["port"] - 1]
    if not cands and len(netdevs) == 1:
        cands = netdevs
    cands.sort(key=lambda n: ("." in n["name"], n["name"]))  # pkey children (ib0.8001) last
    return cands[0]["name"] if cands else None
