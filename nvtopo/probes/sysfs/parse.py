"""sysfs values parsed: port states and rates, PCIe speeds, integers, PCI addresses, CPU
lists, device names.  Pure; ASCII digits only (:mod:`nvtopo.safe`): the kernel writes
nothing else, and Python's ``int()`` and ``\\d`` take any Unicode digit.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ...model import pci_bdf
from ...safe import MAX_DIGITS, ascii_int, is_ascii_digits

#: PCIe generation by transfer rate (GT/s).
PCIE_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


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


def to_int(raw: Optional[str], base: int = 10, signed: bool = False) -> Optional[int]:
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



def pci_of(path: str) -> Tuple[Optional[str], str]:
    """Nearest PCI address in a resolved device path, and what the parent is."""
    comps = [c for c in path.split("/") if c]
    if "virtual" in comps:
        return None, "none"
    for i in range(len(comps) - 1, -1, -1):
        if sysfs_bdf(comps[i]):
            return comps[i], ("pci" if i == len(comps) - 1 else "auxiliary")
    return None, "none"
