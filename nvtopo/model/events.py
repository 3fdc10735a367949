"""Kernel log events: what a pasted ``dmesg``, ``journalctl -k``, ``kern.log`` or the kernel
part of ``nvidia-bug-report.log`` says happened to the node's devices (``docs/events.md``).

Each event is one line of the log read as a typed fact, with the PCI address it names (the
join key to the GPUs, NICs, NVMe drives and bridges of the model).  The meaning and the
recovery action of each NVIDIA Xid code are data (``xid.json`` beside this module), read by
:func:`xid_info`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from .codec import Record, fld, record

#: The kinds of event (:attr:`KernelEvent.kind`).
XID, SXID, OFF_BUS, GSP_TIMEOUT, AER, PORT, NVME_RESET = (
    "xid", "sxid", "off_bus", "gsp_timeout", "aer", "port", "nvme_reset")
KINDS = (XID, SXID, OFF_BUS, GSP_TIMEOUT, AER, PORT, NVME_RESET)


@record
class KernelEvent(Record):
    """One event line of a kernel log."""

    kind: str = fld("xid, sxid, off_bus, gsp_timeout, aer, port or nvme_reset", default="")
    line: int = fld("the line of the input it was read from (1-based)", default=0)
    time: Optional[str] = fld("the timestamp as printed (null: none printed)")
    seconds: Optional[float] = fld("seconds since boot ([  12.345678]), or since the epoch "
                                   "for a wall-clock stamp (one printed without a year, as "
                                   "syslog's, counted in 1972: only differences hold); null: "
                                   "no stamp")
    pci_address: Optional[str] = fld("the device's PCI address, dddd:bb:dd.f (Xid prints no "
                                     "function: .0); null where the log gives none or "
                                     "redacts it")
    device: Optional[str] = fld("the kernel's device name (nvidia-nvswitch0, mlx5_0, ib0, "
                                "nvme0, GPU0)", omit="none")
    code: Optional[int] = fld("Xid or SXid number", omit="none")
    link: Optional[int] = fld("NVLink number the line names", omit="none")
    port: Optional[int] = fld("IB/NIC port number", omit="none")
    state: Optional[str] = fld("port events: down, up, active, init, armed; Xid 154: the "
                               "recovery action asked; Xid 45: 'after Xid N' where the line names its cause; nvme_reset: reset or timeout (a "
                               "command timed out, aborted, no reset yet)", omit="none")
    severity: Optional[str] = fld("AER: corrected, non-fatal or fatal; Xid and SXid: fatal or "
                                  "non-fatal where the line says so", omit="none")
    error_type: Optional[str] = fld("AER: Physical Layer, Data Link Layer, Transaction "
                                    "Layer", omit="none")
    reporter: Optional[str] = fld("AER: the port that reported it", omit="none")
    errors: Optional[List[str]] = fld("AER: the error bits named ([ 0] RxErr ...)",
                                      omit="none")
    redacted: bool = fld("the log's address was redacted (xx, XXXX, <pci>)", default=False)
    text: str = fld("the message, printable, cut at 240 characters", default="")


@record
class KernelLog(Record):
    """``extra.kernel-log``: a pasted kernel log read as events."""

    format: str = fld("dmesg, dmesg-T, journal, syslog or bare (no stamp)", default="bare")
    lines: int = fld("lines read", default=0)
    cut: bool = fld("more lines than the reader reads (the rest is not read)", default=False)
    boots: int = fld("kernel boots the log shows (a 'Linux version' line, or the monotonic "
                     "stamp going back)", default=1)
    events: List[KernelEvent] = fld("events, in log order", factory=list)
    dropped: int = fld("events past the most kept (MAX_EVENTS), counted, not kept",
                       default=0)


_XID: Optional[Dict[str, Any]] = None


def xid_table() -> Dict[str, Any]:
    """``xid.json``: code (as text) -> its name, meaning, action, whether NVLink."""
    global _XID
    if _XID is None:
        data = json.loads((Path(__file__).with_name("xid.json")).read_text("utf-8"))
        _XID = {k: v for k, v in data["codes"].items()}
    return _XID


def xid_info(code: Optional[int]) -> Optional[Dict[str, Any]]:
    """The table's entry for Xid ``code`` (None: a code the table does not hold)."""
    if code is None:
        return None
    return xid_table().get(str(code))


__all__ = ["KernelEvent", "KernelLog", "KINDS", "XID", "SXID", "OFF_BUS", "GSP_TIMEOUT",
           "AER", "PORT", "NVME_RESET", "xid_info", "xid_table"]
