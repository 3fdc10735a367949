"""Kernel messages read as events (``docs/events.md`` §2): NVIDIA Xid and SXid, a GPU fallen
off the bus, GSP timeouts, PCIe AER, NIC port state changes, NVMe controller resets.

Each recogniser first asks for a fixed word in the message (``Xid``, ``AER``, ``nvme``),
then matches one linear pattern; a message none recognises is not an event.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

from ...model import events as E
from ...model.events import KernelEvent
from ...safe import ascii_int, printable
from .lines import Line

#: Longest message text kept in an event.
MAX_TEXT = 240

_HEX = "[0-9a-fA-F]"
#: A PCI address as the kernel prints it (``0000:3b:00.0``; Xid's ``0000:3b:00``).
_ADDR = rf"{_HEX}{{4,8}}:{_HEX}{{2}}:{_HEX}{{2}}(?:\.[0-7])?"
_ADDR_RE = re.compile(rf"(?<![0-9A-Za-z:]){_ADDR}(?![0-9A-Za-z])")
#: An address a log redacted (``0000:xx:00.0``, ``XXXX:XX:XX``, ``<pci>``).
_REDACTED_RE = re.compile(r"[0-9a-fA-FxX*]{4}:[0-9a-fA-FxX*]{2}:[0-9a-fA-FxX*]{2}|<[a-z_ ]{1,20}>")

_XID_RE = re.compile(r"\bXid \((?:PCI:)?([^()\s]{1,40})\): ?([0-9]{1,5})\b")
_SXID_RE = re.compile(r"^(nvidia-nvswitch[0-9]{1,3}): SXid \((?:PCI:)?([^()\s]{1,40})\): ?"
                      r"([0-9]{1,6})\b")
_LINK_RE = re.compile(r"\b[Ll]ink ?#?([0-9]{1,3})\b")
_RECOVERY_RE = re.compile(r"recovery action changed from [^()]{0,20}\([^)]{0,40}\) to "
                          r"[^()]{0,20}\(([^)]{1,40})\)", re.I)
_CAUSED_RE = re.compile(r"caused by previous Xid ([0-9]{1,5})\b")
_GPU_RE = re.compile(r"\bGPU([0-9]{1,3})\b")
_DEV_PREFIX_RE = re.compile(rf"^([A-Za-z0-9_\-]{{1,32}}) ({_ADDR}):? ?")
_AER_BUS_RE = re.compile(r"PCIe Bus Error: severity=([A-Za-z]{1,16}(?: \([A-Za-z\-]{1,12}\))?)"
                         r", type=([A-Za-z ]{1,24}?)(?:,|$| \()")
_AER_BIT_RE = re.compile(r"^(?:AER: )? *\[ ?([0-9]{1,2})\] ([A-Za-z][A-Za-z0-9 ]{0,40})")
_PORT_STATE_RE = re.compile(r"\b[Pp]ort:? ([0-9]{1,3})\b[^\n]{0,60}?\b(ACTIVE|DOWN|INIT|ARMED)\b")
_MLX_DEV_RE = re.compile(r"\b(mlx[45]_[0-9]{1,3})\b")
_LINK_UPDOWN_RE = re.compile(r"(?:^|: )(?:NIC )?[Ll]ink (?:is )?([Uu]p|[Dd]own)\b")
_NETDEV_READY_RE = re.compile(r"(?:^|: )([A-Za-z][A-Za-z0-9_.\-]{0,15}): link becomes ready")
_NVME_RE = re.compile(r"^nvme (nvme[0-9]{1,4}|" + _ADDR + r"): ")


def pci(text: Optional[str]) -> Optional[str]:
    """``dddd:bb:dd.f``, lower case, for an address as printed (``.0`` where Xid gives no
    function); None when it is not one."""
    if not text:
        return None
    m = _ADDR_RE.fullmatch(text.strip())
    if not m:
        return None
    addr = text.strip().lower()
    dom, _, rest = addr.partition(":")
    addr = f"{dom[-4:] if int(dom, 16) <= 0xffff else dom}:{rest}"
    return addr if "." in rest else addr + ".0"


def _redacted(text: str) -> bool:
    return pci(text) is None and _REDACTED_RE.search(text) is not None


def _event(kind: str, line: Line, **facts: object) -> KernelEvent:
    return KernelEvent(kind=kind, line=line.number, time=line.time, seconds=line.seconds,
                       text=printable(line.message)[:MAX_TEXT], **facts)  # type: ignore[arg-type]


def _xid(line: Line) -> Optional[KernelEvent]:
    msg = line.message
    m = _XID_RE.search(msg)
    if m is None:
        return None
    where, code = m.group(1), ascii_int(m.group(2))
    info = E.xid_info(code) or {}
    tail = msg[m.end():]
    link = None
    if info.get("nvlink"):
        lm = _LINK_RE.search(tail)
        link = ascii_int(lm.group(1)) if lm else None
    state = None
    rm = _RECOVERY_RE.search(tail)
    if rm:
        state = printable(rm.group(1).strip())
    cm = _CAUSED_RE.search(tail)
    if cm:  # Xid 45: "Ch 00000001 caused by previous Xid 149"
        state = f"after Xid {cm.group(1)}"
    words = tail[:80].lower()
    sev = "non-fatal" if "nonfatal" in words or "non-fatal" in words else \
        "fatal" if "fatal" in words else None
    return _event(E.XID, line, pci_address=pci(where), code=code, link=link, state=state,
                  severity=sev, redacted=pci(where) is None)


def _sxid(line: Line) -> Optional[KernelEvent]:
    m = _SXID_RE.search(line.message)
    if m is None:
        return None
    tail = line.message[m.end():]
    if tail.lstrip(", ").startswith(("Severity ", "Data {", "Data{")):
        return None  # the companion lines of the SXid above (its engine, its data)
    lm = _LINK_RE.search(tail)
    low = tail[:40].lower()
    sev = "fatal" if "non-fatal" not in low and "fatal" in low else \
        "non-fatal" if "non-fatal" in low else None
    return _event(E.SXID, line, pci_address=pci(m.group(2)), device=m.group(1),
                  code=ascii_int(m.group(3)), link=ascii_int(lm.group(1)) if lm else None,
                  severity=sev, redacted=_redacted(m.group(2)))


def _off_bus(line: Line) -> Optional[KernelEvent]:
    msg = line.message
    if "fallen off the bus" not in msg or "Xid" in msg:
        return None
    am = _ADDR_RE.search(msg)
    gm = _GPU_RE.search(msg)
    return _event(E.OFF_BUS, line, pci_address=pci(am.group(0)) if am else None,
                  device=f"GPU{gm.group(1)}" if gm and am is None else None,
                  redacted=am is None and _REDACTED_RE.search(msg) is not None)


def _gsp(line: Line) -> Optional[KernelEvent]:
    msg = line.message
    low = msg.lower()
    if "gsp" not in low or ("timeout" not in low and "timed out" not in low) or "Xid" in msg \
            or "NVRM" not in msg:
        return None
    am = _ADDR_RE.search(msg)
    gm = _GPU_RE.search(msg)
    return _event(E.GSP_TIMEOUT, line, pci_address=pci(am.group(0)) if am else None,
                  device=f"GPU{gm.group(1)}" if gm else None)


def _severity(text: str) -> str:
    low = text.lower()
    if low.startswith("correct"):
        return "corrected"
    return "non-fatal" if "non-fatal" in low or "nonfatal" in low else "fatal"


class AerState:
    """What AER lines before this one said: the port that reported the error last, the
    latest event of each device (its error bits follow it)."""

    def __init__(self) -> None:
        self.reporter: Optional[str] = None
        self.last: Dict[str, KernelEvent] = {}


def _aer(line: Line, state: AerState) -> Optional[KernelEvent]:
    msg = line.message
    dm = _DEV_PREFIX_RE.match(msg)
    device = pci(dm.group(2)) if dm else None
    body = msg[dm.end():] if dm else msg
    if " received" in body and "error" in body.lower()[:60]:
        state.reporter = device  # "AER: Corrected error received: 0000:03:00.0"
        return None
    bm = _AER_BUS_RE.search(body)
    if bm:
        ev = _event(E.AER, line, pci_address=device, severity=_severity(bm.group(1)),
                    error_type=bm.group(2).strip(), reporter=state.reporter, errors=[],
                    device=dm.group(1) if dm else None)
        if device is not None:
            state.last[device] = ev
        return ev
    xm = _AER_BIT_RE.match(body)
    if xm and device is not None and device in state.last:
        bits = state.last[device].errors
        name = " ".join(xm.group(2).split())  # "Receiver Error", "RxErr"
        if bits is not None and len(bits) < 32 and name not in bits:
            bits.append(name)
    return None


def _port(line: Line) -> Optional[KernelEvent]:
    msg = line.message
    dm = _DEV_PREFIX_RE.match(msg)
    rm = _NETDEV_READY_RE.search(msg)
    if rm:
        return _event(E.PORT, line, pci_address=pci(dm.group(2)) if dm else None,
                      device=rm.group(1), state="up")
    if "mlx" in msg:
        pm = _PORT_STATE_RE.search(msg)
        if pm:
            mm = _MLX_DEV_RE.search(msg)
            return _event(E.PORT, line, pci_address=pci(dm.group(2)) if dm else None,
                          device=mm.group(1) if mm else None, port=ascii_int(pm.group(1)),
                          state=pm.group(2).lower())
    if dm is None:
        return None
    um = _LINK_UPDOWN_RE.search(msg[dm.end():])
    if um is None:
        return None
    body = msg[dm.end():]
    netdev = body.split(":", 1)[0] if ":" in body[:20] and " " not in body.split(":", 1)[0] \
        else None
    return _event(E.PORT, line, pci_address=pci(dm.group(2)), device=netdev,
                  state=um.group(1).lower())


def _nvme(line: Line) -> Optional[KernelEvent]:
    msg = line.message
    m = _NVME_RE.match(msg)
    if m is None:
        return None
    low = msg[m.end():].lower()
    if "reset" not in low and "timeout" not in low and "controller is down" not in low:
        return None
    who = m.group(1)
    return _event(E.NVME_RESET, line, pci_address=pci(who),
                  device=who if who.startswith("nvme") else None,
                  state="reset" if "reset" in low or "controller is down" in low
                  else "timeout")


def event(line: Line, aer: AerState) -> Optional[KernelEvent]:
    """The event ``line`` records, or None (``aer``: the AER lines before it)."""
    msg = line.message
    if "Xid" in msg:
        return _sxid(line) if "SXid" in msg else _xid(line)
    if "AER" in msg or "PCIe Bus Error" in msg or "] " in msg[:60]:
        got = _aer(line, aer)
        if got is not None or "AER" in msg or "PCIe Bus Error" in msg:
            return got
    if "fallen off" in msg:
        return _off_bus(line)
    if "GSP" in msg or "gsp" in msg:
        got = _gsp(line)
        if got is not None:
            return got
    if msg.startswith("nvme "):
        return _nvme(line)
    if "ink" in msg or "port" in msg:
        return _port(line)
    return None


def events(lines: List[Line], limit: int) -> "tuple[List[KernelEvent], int]":
    """The events of ``lines``, at most ``limit`` kept, and how many more were not."""
    out: List[KernelEvent] = []
    dropped = 0
    aer = AerState()
    for line in lines:
        ev = event(line, aer)
        if ev is None:
            continue
        if len(out) < limit:
            out.append(ev)
        else:
            dropped += 1
    return out, dropped


__all__ = ["event", "events", "pci", "AerState", "MAX_TEXT"]
