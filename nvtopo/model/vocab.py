"""The vocabulary every source shares: path tokens (``NV18``, ``PIX`` ... ``SYS``) as
``nvidia-smi topo -m`` prints them, P2P status tokens (``nvidia-smi topo -p2p``), and PCI
bus ids (compared as integers, never as strings).  Pure.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, List, Literal, Optional, Sequence, Tuple, overload

# --- path vocabulary -------------------------------------------------------

#: Path kinds from strongest to weakest, as nvidia-smi's legend orders them.
PATH_ORDER = ("X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS")

#: Legacy spellings and their modern meaning.  Drivers up to about 384
#: printed SOC where today's print SYS.
PATH_ALIASES = {"SOC": "SYS"}

#: Status tokens of ``nvidia-smi topo -p2p``.
P2P_STATUS = {
    "X": "Self",
    "OK": "Status Ok",
    "CNS": "Chipset not supported",
    "GNS": "GPU not supported",
    "TNS": "Topology not supported",
    "NS": "Not supported",
    "DR": "Disabled by regkey",
    "U": "Unknown",
}

PATH_DESCRIPTIONS = {
    "X": "Self",
    "NV#": "Connection traversing a bonded set of # NVLinks",
    "PIX": "Connection traversing at most a single PCIe bridge",
    "PXB": "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
    "PHB": "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
    "NODE": "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
    "within a NUMA node",
    "SYS": "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
    "(e.g., QPI/UPI)",
    "SOC": "Old drivers' name for SYS: PCIe as well as the SMP link between CPU sockets",
}

_NV_RE = re.compile(r"^NV([0-9]{1,4})$")  # ASCII digits: \d also takes "٣"


#: No path token is longer (``NV9999``, ``NODE``): a longer text is none, answered without
#: being kept in the caches below (text read from a file can be megabytes long).
TOKEN_MAX = 6


def path_kind(token: Optional[str]) -> Optional[str]:
    """Normalise a printed path token to its kind.

    ``NV18`` -> ``NV``, ``SOC`` -> ``SYS``, ``PIX`` -> ``PIX``; ``None`` for
    unknown or unrecognised tokens.
    """
    if token is None or len(token) > TOKEN_MAX:
        return None
    return _path_kind(token)


@lru_cache(maxsize=512)
def _path_kind(token: str) -> Optional[str]:
    token = PATH_ALIASES.get(token, token)
    if _NV_RE.match(token):
        return "NV"
    return token if token in PATH_ORDER else None


def nvlink_count(token: Optional[str]) -> Optional[int]:
    """Number of bonded NVLinks in an ``NV#`` token, else ``None``."""
    if token is None or len(token) > TOKEN_MAX:
        return None
    return _nvlink_count(token)


@lru_cache(maxsize=512)
def _nvlink_count(token: str) -> Optional[int]:
    m = _NV_RE.match(token)
    return int(m.group(1)) if m else None


# a path kind spelled out always has a rank (``path_rank("PXB")`` is 3), for type checkers
@overload
def path_rank(token: Literal["X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC"]) -> int: ...
@overload
def path_rank(token: Optional[str]) -> Optional[int]: ...
def path_rank(token: Optional[str]) -> Optional[int]:
    """Rank of a path token, 0 (self) … 6 (SYS); lower is closer."""
    if token is None or len(token) > TOKEN_MAX:
        return None
    return _path_rank(token)


@lru_cache(maxsize=512)
def _path_rank(token: str) -> Optional[int]:
    kind = path_kind(token)
    return PATH_ORDER.index(kind) if kind else None


_BDF_RE = re.compile(r"^\s*(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})"
                     r"(?:\.([0-7]))?\s*$")


def pci_bdf(bus_id: Any) -> Optional[Tuple[int, int, int, int]]:
    """A PCI bus id as ``(domain, bus, device, function)`` integers, or ``None``.

    NVML (``00000000:1B:00.0``), nvidia-smi and sysfs (``0000:1b:00.0``) spell
    the same device differently; compare these tuples, never the strings.
    """
    if not isinstance(bus_id, str):
        return None
    m = _BDF_RE.match(bus_id)
    if not m:
        return None
    dom, bus, dev, fn = m.groups()
    return (int(dom or "0", 16), int(bus, 16), int(dev, 16), int(fn or "0"))


# --- runs of indices ---------------------------------------------------------


def int_runs(ids: Sequence[int], prefix: str = "", pairs: bool = False, sep: str = ", ") -> str:
    """Integers as runs, the way the tools print CPU and NUMA lists: ``0-3, 5, 7, 8``;
    ``prefix`` before each run (``GPU0-3, GPU6``); ``pairs``: two in a row as a run too
    (``GPU0-1``); ``sep`` between runs (``","``: ``0-3,5``)."""
    ids = sorted(ids)
    out: List[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        if j == i:
            out.append(f"{prefix}{ids[i]}")
        elif j > i + 1 or pairs:
            out.append(f"{prefix}{ids[i]}-{ids[j]}")
        else:
            out.append(f"{prefix}{ids[i]}{sep}{prefix}{ids[j]}")
        i = j + 1
    return sep.join(out)
