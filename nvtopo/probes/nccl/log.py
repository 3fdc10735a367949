"""``NCCL_DEBUG=INFO`` logs, as pasted into tickets: what NCCL says it did.

NCCL prints each line as ``host:pid:tid [cudaDev] NCCL INFO message`` (``NCCL WARN`` for a
warning; ``file.cc:line NCCL WARN`` with ``NCCL_DEBUG_SUBSYS`` and in some versions), for
example (NCCL 2.18, two hosts of eight GPUs)::

    node1:2049:2049 [0] NCCL INFO NCCL version 2.18.5+cuda12.2
    node1:2049:2118 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; OOB ib0:...
    node1:2049:2118 [0] NCCL INFO Using network IB
    node1:2049:2118 [0] NCCL INFO comm 0x55e1 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 ...
    node1:2049:2118 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
    node1:2049:2118 [0] NCCL INFO Channel 00/0 : 15[7] -> 0[0] [receive] via NET/IB/0/GDRDMA
    node1:2049:2118 [0] NCCL INFO GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (distance 7 > 4)
    node1:2049:2118 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_3

Tickets mix them with the launcher's own lines (``srun -l``'s ``0:``, ``mpirun``'s
``[1,0]<stdout>:``, torchrun's ``[rank0]:``), cut them, wrap long ones onto a second line, and
paste several ranks and hosts interleaved; some drop the prefix.  A line is NCCL's when it holds
``NCCL INFO``/``NCCL WARN`` (or is the bare ``NCCL version`` banner); whatever precedes the
marker is searched for the prefix.  A line that is not NCCL's, directly after one whose
message stops short (a ``Channel`` line before ``via``, a bracket left open), is its wrapped
tail.  Pure; every line, list and count bounded; every pattern linear.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ...model.nccl import (NcclConnection, NcclEvent, NcclGdr, NcclLog, NcclNetDevice,
                           NcclPath, NcclRank)
from ...model.topology import Topology
from ...safe import ascii_int, printable

SOURCE = "nccl-log"
#: Longest line read (NCCL's lines are under 400 characters; a ring of 1024 ranks is more).
MAX_LINE = 16_384
#: Bounds on what is kept.
MAX_CONNECTIONS = 4096
MAX_EVENTS = 200
MAX_RANKS = 8192
MAX_HOSTS = 1024
MAX_RINGS = 256
MAX_TEXT = 300

_MARKERS = ("NCCL INFO", "NCCL WARN")
_PREFIX_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.\-]{0,62}):(\d{1,9}):(\d{1,9}) \[(\d{1,5})\]")
_VERSION_RE = re.compile(r"\bNCCL version ([0-9][0-9A-Za-z.+\-]{0,40})")
_COMM_RE = re.compile(r"\brank (\d{1,7}) n[Rr]anks (\d{1,7})")
_CUDADEV_RE = re.compile(r"\bcudaDev (\d{1,5})")
_BUSID_RE = re.compile(r"\bbusId ([0-9a-fA-F]{1,16})\b")
_CONN_RE = re.compile(r"^Channel (\d{1,4})(?:/\d{1,4})? : (\d{1,7})\[[0-9a-fA-F]{1,16}\] -> "
                      r"(\d{1,7})\[[0-9a-fA-F]{1,16}\](?: \[(?:send|receive)\])? via "
                      r"(\S[^\r\n]{0,120})")
#: NCCL 2.4 and older: ``Ring 00 : 0 -> 1 [send] via NET/IB/0``.
_OLD_CONN_RE = re.compile(r"^Ring (\d{1,4}) : (\d{1,7}) -> (\d{1,7})(?: \[(?:send|receive)\])? via "
                          r"(\S[^\r\n]{0,120})")
_BOOT_RE = re.compile(r"^Bootstrap ?: ?Using ([A-Za-z0-9_.\-]{1,64}):")
_RING_RE = re.compile(r"^Channel \d{1,4}/\d{1,4} :([ 0-9]{1,16384})$")
_IB_DEV_RE = re.compile(r"\[(\d{1,3})\]([A-Za-z0-9_.\-]{1,64}):(\d{1,3})/(IB|RoCE)")
_SOCK_DEV_RE = re.compile(r"\[(\d{1,3})\]([A-Za-z0-9_.\-]{1,64}):")
_NETWORK_RE = re.compile(r"^Using network ([A-Za-z0-9_ .\-]{1,60})")
_GDR_RE = re.compile(r"GPU Direct RDMA (?:\([\w\-]{1,30}\) )?(enabled|disabled) for "
                     r"(?:GPU ([0-9a-fA-F]{1,16}) / )?HCA (\d{1,3})(?: '([A-Za-z0-9_.\-]{1,64})')?",
                     re.I)
_DIST_RE = re.compile(r"\(distance (\d{1,3}) ?([<>]=?) ?(\d{1,3})\)")
_PAREN_RE = re.compile(r"\(([^()]{1,80})\)")
_ENV_RE = re.compile(r"^(NCCL_[A-Z0-9_]{1,60}) set (?:by environment )?to ?([^\r\n]{0,200})$")
#: ``GPU/8F000 :GPU/16000 (2/264.000000/NVL) CPU/0 (4/9.000000/SYS) NET/4 (...)``.
_PATHS_HEAD_RE = re.compile(r"^GPU/([0-9A-Fa-f]{1,16}) ?:")
_PATH_RE = re.compile(r"\b((?:GPU|CPU|NET|NVS|NIC)/[0-9A-Fa-f\-]{1,16}) \((\d{1,4})/([0-9.]{1,20})/"
                      r"([A-Z0-9]{2,4})\)")
#: The source location before ``NCCL WARN`` (``transport/nvls.cc:254``).
_WHERE_RE = re.compile(r"([A-Za-z0-9_/]{1,80}\.(?:cc|c|h|cpp|cu)):\d{1,6} ?$")
_CHANNELS_RE = re.compile(r"\b(\d{1,4}) nvls channels")
_DEVICE_RE = re.compile(r"\b((?:mlx5|mlx4|irdma|bnxt_re|efa|qedr|hfi1|rxe)_?[A-Za-z0-9]{0,16}"
                        r"(?::\d{1,3})?)")
_NCCL_ERROR_RE = re.compile(r"\bnccl(?:SystemError|InternalError|InvalidUsage|RemoteError|"
                            r"UnhandledCudaError|InvalidArgument)\b|\bNCCL error\b")
#: A message that stops short: its tail is on the next line.
_CUT_RE = re.compile(r"(?:->[^\r\n]{0,40}\]|\bvia|\bset by environment to|\([^)]{0,40})$")


def looks_like(text: str) -> bool:
    """Whether ``text`` holds NCCL log lines (``NCCL INFO``/``NCCL WARN``)."""
    head = text[:8 * 1024 * 1024]
    return any(m in head for m in _MARKERS)


def _message(line: str) -> Optional[Tuple[Optional[str], str, str]]:
    """``(host, level, message)`` of an NCCL line, or None for any other line.  A WARN's
    source location (``transport/nvls.cc:254 NCCL WARN``) is kept before its message, in
    brackets (``[transport/nvls.cc] ...``)."""
    for marker in _MARKERS:
        at = line.find(marker)
        if at >= 0:
            head = line[max(0, at - 300):at]
            found = None
            for found in _PREFIX_RE.finditer(head):
                pass
            host = found.group(1) if found is not None else None
            msg = line[at + len(marker):].strip()
            where = _WHERE_RE.search(head) if marker == "NCCL WARN" else None
            if where is not None:
                msg = f"[{where.group(1)}] {msg}"
            return host, marker[5:].lower(), msg
    if _VERSION_RE.search(line):
        return None, "info", line[line.find("NCCL version"):].strip()
    return None


def nccl_lines(text: str) -> List[Tuple[int, Optional[str], str, str]]:
    """``(line number, host, level, message)`` of every NCCL line, wrapped tails joined back
    (the tail's line number is not listed: see :func:`line_numbers`)."""
    out: List[Tuple[int, Optional[str], str, str]] = []
    last = -2
    for n, raw in enumerate(text.splitlines()):
        line = raw[:MAX_LINE]
        got = _message(line)
        if got is not None:
            out.append((n,) + got)
            last = n
            continue
        tail = line.strip()
        if last == n - 1 and out and tail and _CUT_RE.search(out[-1][3]) \
                and not tail.startswith(("[", "Traceback")):
            k, host, level, msg = out[-1]
            out[-1] = (k, host, level, (msg + " " + tail)[:MAX_LINE])
            last = n
    return out


def line_numbers(text: str) -> List[int]:
    """The line numbers NCCL's lines (and their wrapped tails) take in ``text``."""
    taken: List[int] = []
    last = -2
    previous = ""
    for n, raw in enumerate(text.splitlines()):
        line = raw[:MAX_LINE]
        got = _message(line)
        if got is not None:
            taken.append(n)
            last, previous = n, got[2]
        elif last == n - 1 and line.strip() and _CUT_RE.search(previous) \
                and not line.strip().startswith(("[", "Traceback")):
            taken.append(n)
            last, previous = n, previous + " " + line.strip()
    return taken


def without_lines(text: str) -> str:
    """The text with NCCL's lines blanked (the rest of a ticket, read by the other readers)."""
    taken = set(line_numbers(text))
    return "\n".join("" if n in taken else ln for n, ln in enumerate(text.splitlines()))


class _Read:
    """The state of one :func:`parse`."""

    def __init__(self) -> None:
        self.log = NcclLog()
        self.seen_conn: Dict[Tuple[Optional[str], int, int, int, str], int] = {}
        self.seen_event: Dict[Tuple[str, Optional[str]], NcclEvent] = {}
        self.ranks: Dict[int, NcclRank] = {}
        self.devices: Dict[Tuple[Optional[str], str, int], NcclNetDevice] = {}
        self.gdr: Dict[Tuple[Optional[str], bool, int, Optional[str]], NcclGdr] = {}

    def host(self, host: Optional[str]) -> None:
        if host is not None and host not in self.log.hosts:
            if len(self.log.hosts) < MAX_HOSTS:
                self.log.hosts.append(host)
            else:
                self.log.truncated = True

    def event(self, kind: str, text: str, host: Optional[str]) -> None:
        text = printable(text[:MAX_TEXT])
        key = (text, host)
        if key in self.seen_event:
            self.seen_event[key].count += 1
            return
        if len(self.seen_event) >= MAX_EVENTS:
            self.log.truncated = True
            return
        dev = _DEVICE_RE.search(text)
        ev = NcclEvent(kind=kind, text=text, host=host, device=dev.group(1) if dev else None)
        self.seen_event[key] = ev
        self.log.events.append(ev)


def _int(text: Optional[str]) -> Optional[int]:
    return ascii_int(text) if text is not None else None


def _connection(r: _Read, m: "re.Match[str]", host: Optional[str]) -> None:
    via = m.group(4).strip()
    channel, src, dst = _int(m.group(1)), _int(m.group(2)), _int(m.group(3))
    key = (host, channel or 0, src or 0, dst or 0, via)
    if key in r.seen_conn:
        return
    if len(r.seen_conn) >= MAX_CONNECTIONS:
        r.log.truncated = True
        return
    r.seen_conn[key] = 1
    parts = via.split("/")
    word = parts[0].split()[0] if parts[0].split() else ""
    transport = word if word in ("P2P", "SHM", "NET", "CollNet", "NVLS") else "other"
    conn = NcclConnection(channel=channel, src=src, dst=dst, transport=transport,
                          via=printable(via), host=host)
    if transport == "NET":
        conn.net = printable(parts[1]) if len(parts) > 1 else None
        conn.nic = _int(parts[2]) if len(parts) > 2 else None
        conn.gdr = "GDRDMA" in parts[3:]
    r.log.connections.append(conn)
    if transport == "CollNet":
        r.log.collnet = True


def _rank(r: _Read, msg: str, host: Optional[str]) -> None:
    m = _COMM_RE.search(msg)
    if m is None:
        return
    rank, nranks = ascii_int(m.group(1)), ascii_int(m.group(2))
    if nranks is not None and (r.log.nranks is None or nranks > r.log.nranks):
        r.log.nranks = nranks
    if rank is None or rank in r.ranks:
        return
    if len(r.ranks) >= MAX_RANKS:
        r.log.truncated = True
        return
    dev, bus = _CUDADEV_RE.search(msg), _BUSID_RE.search(msg)
    rec = NcclRank(rank=rank, host=host, cuda_dev=_int(dev.group(1)) if dev else None,
                   bus_id=bus.group(1).lower() if bus else None)
    r.ranks[rank] = rec


def _net_using(r: _Read, msg: str, host: Optional[str]) -> None:
    if msg.startswith("NET/IB"):
        for m in _IB_DEV_RE.finditer(msg):
            _device(r, NcclNetDevice(index=ascii_int(m.group(1)) or 0, name=m.group(2),
                                     port=ascii_int(m.group(3)), link_layer=m.group(4),
                                     net="IB", host=host))
        return
    net = "Socket" if msg.startswith("NET/Socket") else "Bootstrap"
    body = msg.split("Using", 1)[1]
    for m in _SOCK_DEV_RE.finditer(body):
        _device(r, NcclNetDevice(index=ascii_int(m.group(1)) or 0, name=m.group(2),
                                 net=net, host=host))
    one = _BOOT_RE.match(msg)
    if one is not None and net == "Bootstrap":
        _device(r, NcclNetDevice(index=0, name=one.group(1), net=net, host=host))


def _device(r: _Read, dev: NcclNetDevice) -> None:
    key = (dev.host, dev.net, dev.index)
    if key not in r.devices and len(r.devices) < MAX_CONNECTIONS:
        r.devices[key] = dev
        r.log.net_devices.append(dev)


def _gdr(r: _Read, m: "re.Match[str]", msg: str, host: Optional[str]) -> None:
    enabled = m.group(1).lower() == "enabled"
    hca = ascii_int(m.group(3))
    key = (host, enabled, hca or 0, m.group(2))
    if key in r.gdr or len(r.gdr) >= MAX_CONNECTIONS:
        return
    g = NcclGdr(enabled=enabled, hca=hca, hca_name=m.group(4), gpu=m.group(2), host=host)
    d = _DIST_RE.search(msg, m.end())
    if d is not None:
        g.distance, g.limit = ascii_int(d.group(1)), ascii_int(d.group(3))
    else:
        p = _PAREN_RE.search(msg, m.end())
        g.reason = printable(p.group(1)) if p is not None else None
    r.gdr[key] = g
    r.log.gdr.append(g)


def _paths(r: _Read, msg: str, host: Optional[str]) -> None:
    head = _PATHS_HEAD_RE.match(msg)
    if head is None:
        return
    src = f"GPU/{head.group(1)}"
    for m in _PATH_RE.finditer(msg, head.end()):
        if len(r.log.paths) >= MAX_CONNECTIONS:
            r.log.truncated = True
            return
        r.log.paths.append(NcclPath(src=src, dst=m.group(1), hops=ascii_int(m.group(2)),
                                    bw=_float(m.group(3)), type=m.group(4), host=host))


def _float(text: str) -> Optional[float]:
    try:
        return float(text) if text.count(".") <= 1 and text != "." else None
    except ValueError:
        return None


def _info(r: _Read, msg: str, host: Optional[str]) -> None:
    """One INFO message (see the module doc for the lines read)."""
    m = _CONN_RE.match(msg) or _OLD_CONN_RE.match(msg)
    if m is not None:
        _connection(r, m, host)
        return
    if msg.startswith("Channel "):
        ring = _RING_RE.match(msg)
        if ring is not None and len(r.log.rings) < MAX_RINGS:
            r.log.rings.append(" ".join(ring.group(1).split())[:MAX_TEXT])
        return
    if msg.startswith("Trees ") and len(r.log.trees) < MAX_RINGS:
        r.log.trees.append(printable(msg[:MAX_TEXT]))
        return
    v = _VERSION_RE.search(msg)
    if v is not None and r.log.version is None:
        r.log.version = v.group(1)
    if " nranks " in msg or " nRanks " in msg:
        _rank(r, msg, host)
    if msg.startswith("GPU/"):
        _paths(r, msg, host)
    if msg.startswith(("NET/IB", "NET/Socket", "Bootstrap")) and "Using" in msg:
        _net_using(r, msg, host)
    net = _NETWORK_RE.match(msg)
    if net is not None:
        name = net.group(1).strip()
        if name not in r.log.networks:
            r.log.networks.append(name)
    g = _GDR_RE.search(msg)
    if g is not None:
        _gdr(r, g, msg, host)
    env = _ENV_RE.match(msg)
    if env is not None and len(r.log.env) < 200:
        r.log.env.setdefault(env.group(1), printable(env.group(2).strip().rstrip(".")))
    _signals(r, msg, host)


def _signals(r: _Read, msg: str, host: Optional[str]) -> None:
    """The INFO lines that say something is off, and the NVLS/CollNet state."""
    low = msg.lower()
    if "async event" in low:
        r.event("async_event", msg, host)
    elif "p2p is disabled between" in low:
        r.event("p2p_disabled", msg, host)
    elif "nvls" in low and ("not available" in low or "not supported" in low
                            or "disabled" in low):
        r.event("nvls_unavailable", msg, host)
        if r.log.nvls is None:
            r.log.nvls = False
    elif (msg.startswith("NET/IB") and "no device found" in low) \
            or ("libibverbs" in low and "fail" in low):
        r.event("ib_missing", msg, host)
    elif _NCCL_ERROR_RE.search(msg):
        r.event("error", msg, host)
    if msg.startswith("NVLS comm ") or msg.startswith("Connected NVLS"):
        r.log.nvls = True
    ch = _CHANNELS_RE.search(msg)
    if ch is not None and (ascii_int(ch.group(1)) or 0) > 0:
        r.log.nvls = True
    if msg.startswith("CollNet ") and "enabled" in low:
        r.log.collnet = True


def _warn(r: _Read, msg: str, host: Optional[str]) -> None:
    low = msg.lower()
    if "async event" in low or "async fatal event" in low:
        kind = "async_event"
    elif "got completion" in low:
        kind = "completion_error"
    elif "ibv_" in low:
        kind = "ibv_error"
    elif "nvls" in low:
        kind = "nvls_unavailable"
    elif _NCCL_ERROR_RE.search(msg):
        kind = "error"
    else:
        kind = "warn"
    if kind == "nvls_unavailable" and r.log.nvls is None:
        r.log.nvls = False
    r.event(kind, msg, host)


def parse(text: str) -> NcclLog:
    """The log's facts (see the module doc).  Never raises on damage: what is not read is
    absent, and a bound that cut something sets ``truncated``."""
    r = _Read()
    for _, host, level, msg in nccl_lines(text):
        r.log.lines += 1
        r.host(host)
        if level == "warn":
            _warn(r, msg, host)
        else:
            _info(r, msg, host)
        if r.log.version is None and "NCCL version" in msg:
            v = _VERSION_RE.search(msg)
            r.log.version = v.group(1) if v is not None else None
    r.log.ranks = [r.ranks[k] for k in sorted(r.ranks)]
    return r.log


def derive_text(text: str) -> Topology:
    """A model holding only the log's facts (``extra.nccl-log``): a log names no GPU by a
    PCI address nvtopo merges by (its busIds have no domain), so it adds no model GPU."""
    topo = Topology(sources=[SOURCE])
    topo.nccl_log = parse(text)
    return topo


__all__ = ["SOURCE", "derive_text", "line_numbers", "looks_like", "nccl_lines", "parse",
           "without_lines"]
