"""Pasted kernel logs (``dmesg``, ``journalctl -k``, ``kern.log``, the kernel part of
``nvidia-bug-report.log``) read as events on the node's devices (``docs/events.md``).

:func:`looks_like` recognises a kernel log by content; :func:`derive_text` reads it into a
model fragment holding only the log (``extra.kernel-log``): its events join the GPUs, NICs,
NVMe drives and bridges of a snapshot or topology of the same node by PCI address when the
two are read together, in the checks (family ``events``).  The line forms are
:mod:`.lines`'s, the events :mod:`.events`'s.  Pure and bounded.
"""

from __future__ import annotations

import re

from ...model.events import KernelLog
from ...model.topology import Topology
from . import events as _events
from . import lines as _lines

SOURCE = "kernel-log"
#: Most events kept (the rest are counted).
MAX_EVENTS = 5000

#: A line only a kernel log has: an NVIDIA driver event, a PCIe AER report, an SXid.
_EVENT_MARK_RE = re.compile(r"NVRM: |\bXid \(|: SXid \(|\bAER: |PCIe Bus Error: ")
#: A dmesg stamp at a line's start (``[   12.345678] ``), or a syslog ``kernel:`` line.
_KERNEL_LINE_RE = re.compile(r"^(?:<[0-7]>|[a-z]{3,6} {0,4}:[a-z]{3,6} {0,4}: )?"
                             r"\[ {0,12}[0-9]{1,10}\.[0-9]{1,9}\] |"
                             r"^[A-Z][a-z]{2} {1,2}[0-9]{1,2} [0-9:.]{8,18} [^ ]{1,255} "
                             r"kernel: |^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.+\-Z]{8,30} [^ ]{1,255}"
                             r" kernel: |^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} ",
                             re.M)
#: How many stamped kernel lines make a text a kernel log without an event line.
MIN_KERNEL_LINES = 3


def looks_like(text: str) -> bool:
    """Whether ``text`` holds a kernel log: a line of an NVIDIA driver, SXid or AER report,
    or three kernel-stamped lines (a healthy log is a kernel log too)."""
    head = text[:2_000_000]
    if _EVENT_MARK_RE.search(head):
        return True
    found = 0
    for _ in _KERNEL_LINE_RE.finditer(head):
        found += 1
        if found >= MIN_KERNEL_LINES:
            return True
    return False


def parse(text: str) -> KernelLog:
    """The log's events and shape."""
    got = _lines.read(text)
    found, dropped = _events.events(got.lines, MAX_EVENTS)
    return KernelLog(format=got.form, lines=got.read, cut=got.cut, boots=got.boots,
                     events=found, dropped=dropped)


def derive_text(text: str) -> Topology:
    """A model holding only the log (``extra.kernel-log``)."""
    topo = Topology(sources=[SOURCE])
    topo.kernel_log = parse(text)
    return topo


__all__ = ["SOURCE", "MAX_EVENTS", "derive_text", "looks_like", "parse"]
