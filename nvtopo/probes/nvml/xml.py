"""Pasted ``nvidia-smi -q -x`` XML: the same facts as ``-q`` text, read the same way.

The XML (``nvsmi_device_vN.dtd``) holds what ``nvidia-smi -q`` prints, element by element:
``<gpu id="00000000:18:00.0">`` is the text's ``GPU 00000000:18:00.0`` block, ``<pci>``
its ``PCI`` block, ``<fabric>`` its ``Fabric`` block.  :func:`to_q_text` writes the elements
nvtopo reads (product name, UUID, the PCI link block, the Fabric block, the platform info
of an NVL rack's tray, the performance state, the clocks reason Idle, the utilisation) as the
``-q`` text they stand for, and :func:`derive_xml` gives that text to the one ``-q`` reader
(:func:`~.text.derive_text`): one parser of the facts, one set of records (source
``nvml-text``).

The XML is untrusted.  It is parsed by expat with handlers only (no tree of the whole
document is built), and refused with a one-line error when it has a DTD of its own (an
internal subset: entities, as a "billion laughs" or external-entity document declares them,
attribute defaults, which expat copies into every element, element declarations; nvidia-smi
names its DTD file and declares nothing), nests deeper than :data:`MAX_DEPTH`, holds more
than :data:`MAX_ELEMENTS` elements or stands for more than :data:`MAX_LINES` lines of ``-q``
text (every element read under ``<fabric>`` is a line: they count against the bound every
pasted text has).  Nothing is ever
fetched: external entities and DTDs are not loaded.  An XML document cut short (a truncated
attachment) keeps the GPUs read before the cut, with a warning note; one that holds no GPU
before its first error is refused.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple
from xml.parsers import expat

from ...errors import NvtopoError
from ...model import Topology

#: nvidia-smi nests 6 deep; 64 is far past any real output.
MAX_DEPTH = 64
#: An 8-GPU ``-q -x`` holds about 3,000 elements a GPU; 2,000,000 is far past 72 GPUs.
MAX_ELEMENTS = 2_000_000
#: Longest text kept of one element (a UUID is 40 characters).
MAX_VALUE = 256
#: The most lines of ``-q`` text the XML may stand for: the bound any pasted text has
#: (``nvtopo.snapshot.read.MAX_TEXT_LINES``); 72 GPUs' real ``-q -x`` give about 2,000.
MAX_LINES = 100_000

#: Element -> the ``-q`` text's label, for the elements read; ``None``: a block read whole
#: (its children keep their own labels where unmapped).
LABELS: Dict[str, str] = {
    "product_name": "Product Name",
    "uuid": "GPU UUID",
    "pci": "PCI",
    "pci_bus_id": "Bus Id",
    "pci_device_id": "Device Id",
    "pci_gpu_link_info": "GPU Link Info",
    "pcie_gen": "PCIe Generation",
    "max_link_gen": "Max",
    "current_link_gen": "Current",
    "device_current_link_gen": "Device Current",
    "max_device_link_gen": "Device Max",
    "max_host_link_gen": "Host Max",
    "link_widths": "Link Width",
    "max_link_width": "Max",
    "current_link_width": "Current",
    "replay_counter": "Replays Since Reset",
    "replay_rollover_counter": "Replay Number Rollovers",
    "fabric": "Fabric",
    "state": "State",
    "status": "Status",
    "cliqueId": "CliqueId",
    "clusterUuid": "ClusterUUID",
    "health": "Health",
    "bandwidth": "Bandwidth",
    "route_recovery_in_progress": "Route Recovery in progress",
    "route_unhealthy": "Route Unhealthy",
    "access_timeout_recovery": "Access Timeout Recovery",
    "incorrect_configuration": "Incorrect Configuration",
    "summary": "Summary",
    "performance_state": "Performance State",
    "clocks_event_reasons": "Clocks Event Reasons",
    "clocks_throttle_reasons": "Clocks Throttle Reasons",
    "clocks_event_reason_gpu_idle": "Idle",
    "clocks_throttle_reason_gpu_idle": "Idle",
    "utilization": "Utilization",
    "gpu_util": "GPU",
    "memory_util": "Memory",
    "platformInfo": "Platform Info",
    "chassis_serial_number": "Chassis Serial Number",
    "slot_number": "Slot Number",
    "tray_index": "Tray Index",
    "host_id": "Host ID",
    "peer_type": "Peer Type",
    "module_id": "Module Id",
}
#: Blocks of a ``<gpu>`` read (everything else under a GPU is skipped), and the leaves
#: directly under ``<gpu>`` read.
BLOCKS = ("pci", "fabric", "clocks_event_reasons", "clocks_throttle_reasons", "utilization",
          "platformInfo")
GPU_LEAVES = ("product_name", "uuid", "performance_state")
_PCI_READ = ("pci_bus_id", "pci_device_id", "pci_gpu_link_info", "pcie_gen", "link_widths",
             "max_link_gen", "current_link_gen", "device_current_link_gen",
             "max_device_link_gen", "max_host_link_gen", "max_link_width",
             "current_link_width", "replay_counter", "replay_rollover_counter")
#: Block -> the elements read under it (``fabric`` is read whole).
_READ = {"pci": _PCI_READ,
         "clocks_event_reasons": ("clocks_event_reason_gpu_idle",),
         "clocks_throttle_reasons": ("clocks_throttle_reason_gpu_idle",),
         "utilization": ("gpu_util", "memory_util"),
         # where the GPU sits in an NVL rack (GB200/GB300 trays: driver 570 and later)
         "platformInfo": ("chassis_serial_number", "slot_number", "tray_index", "host_id",
                          "peer_type", "module_id")}


def looks_like(text: str) -> bool:
    """True when ``text`` is ``nvidia-smi -q -x`` output (an ``nvidia_smi_log`` document)."""
    head = text.lstrip("\ufeff \t\r\n")
    return head.startswith("<") and "<nvidia_smi_log" in text[:4096]


class _Refused(Exception):
    pass


_Lines = List[Tuple[int, str, Optional[str]]]


class _Reader:
    """expat's element and text handlers: each GPU's read lines, in order."""

    def __init__(self) -> None:
        self.gpus: List[Tuple[str, _Lines]] = []
        self.stack: List[str] = []
        #: depth (in the stack) of the ``<gpu>`` element, and of the block being read
        self.gpu = -1
        self.block = -1
        self.count = 0
        self.lines = 0
        self.text_buf: List[str] = []
        self.pending: List[Optional[int]] = []  # index of each open element's line, or None

    def line_read(self) -> None:
        self.lines += 1
        if self.lines > MAX_LINES:
            raise _Refused(f"XML that stands for more than {MAX_LINES:,} lines of -q text; "
                           "not nvidia-smi output")

    def start(self, name: str, attrs: Dict[str, str]) -> None:
        self.count += 1
        if self.count > MAX_ELEMENTS:
            raise _Refused(f"more than {MAX_ELEMENTS:,} XML elements; not nvidia-smi output")
        stack = self.stack
        if len(stack) >= MAX_DEPTH:
            raise _Refused(f"XML nested deeper than {MAX_DEPTH}; not nvidia-smi output")
        stack.append(name)
        del self.text_buf[:]
        depth = len(stack) - 1
        line: Optional[int] = None
        if name == "gpu" and self.gpu < 0:
            self.gpu = depth
            self.line_read()
            self.gpus.append((str(attrs.get("id", ""))[:64], []))
        elif self.gpu >= 0:
            rel = depth - self.gpu
            lines = self.gpus[-1][1]
            if rel == 1 and name in BLOCKS:
                self.block = depth
                self.line_read()
                lines.append((1, LABELS[name], None))
                line = len(lines) - 1
            elif rel == 1 and name in GPU_LEAVES:
                self.line_read()
                lines.append((1, LABELS[name], ""))
                line = len(lines) - 1
            elif self.block >= 0 and (stack[self.block] == "fabric"
                                      or name in _READ.get(stack[self.block], ())):
                label = LABELS.get(name, name)
                self.line_read()
                lines.append((rel, label, None))
                line = len(lines) - 1
        self.pending.append(line)

    def end(self, name: str) -> None:
        depth = len(self.stack) - 1
        line = self.pending.pop()
        if line is not None:
            lines = self.gpus[-1][1]
            rel, label, _ = lines[line]
            value = "".join(self.text_buf).strip()[:MAX_VALUE]
            if line == len(lines) - 1:  # a leaf: no child line after it
                lines[line] = (rel, label, value)
        del self.text_buf[:]
        if depth == self.block:
            self.block = -1
        if depth == self.gpu:
            self.gpu = -1
        self.stack.pop()

    def chars(self, data: str) -> None:
        if len(self.text_buf) < 64:
            self.text_buf.append(data)


def _entity(*_args: object) -> None:
    raise _Refused("XML declaring entities is refused (nvidia-smi declares none: a "
                   "\"billion laughs\" or external-entity document?)")


def _doctype(_name: str, _system: Optional[str], _public: Optional[str], internal: int) -> None:
    if internal:
        raise _Refused("XML with a DTD of its own (<!DOCTYPE ... [ ... ]>) is refused "
                       "(nvidia-smi only names its DTD file: declared entities or "
                       "attribute defaults would be expanded into the document)")


def _declared(*_args: object) -> None:
    raise _Refused("XML declaring DTD elements or attributes is refused (nvidia-smi "
                   "declares none)")


def _parser(reader: _Reader) -> Any:
    """An expat parser feeding ``reader`` that refuses DTDs, entities and declarations."""
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.chars
    parser.StartDoctypeDeclHandler = _doctype
    parser.ElementDeclHandler = _declared
    parser.AttlistDeclHandler = _declared
    parser.EntityDeclHandler = _entity
    parser.UnparsedEntityDeclHandler = _entity
    parser.ExternalEntityRefHandler = lambda *a: 0  # never fetched: an error
    return parser


def _read(text: str) -> Tuple[List[Tuple[str, _Lines]], Optional[str]]:
    """``([(gpu id, [(depth, label, value)])], cut)``: each GPU's read lines in order;
    ``cut`` says where a document cut short stopped (``None`` when it is whole)."""
    reader = _Reader()
    parser = _parser(reader)
    gpus = reader.gpus
    # blank lines before the document (a paste, the rest of a ticket) are what looks_like
    # accepts; expat refuses any before the XML declaration, so they are skipped (and
    # counted back into the line an error names)
    body = text.lstrip("\ufeff \t\r\n")
    skipped = text.count("\n", 0, len(text) - len(body))
    try:
        parser.Parse(body, True)
    except expat.ExpatError as exc:
        where = f"line {exc.lineno + skipped}"
        if gpus:
            return gpus, f"{expat.ErrorString(exc.code)} at {where}"
        raise _Refused(f"not well-formed XML ({expat.ErrorString(exc.code)} at {where})"
                       ) from None
    return gpus, None


def to_q_text(text: str, where: str) -> Tuple[str, Optional[str]]:
    """The ``-q`` text the XML stands for, and where a cut-short document stopped."""
    try:
        gpus, cut = _read(text)
    except _Refused as exc:
        raise NvtopoError(str(exc), where=where) from None
    except RecursionError:
        raise NvtopoError("XML nested too deep; not nvidia-smi output", where=where) from None
    out: List[str] = []
    for gpu_id, lines in gpus:
        out.append(f"GPU {gpu_id}")
        for depth, label, value in lines:
            pad = "    " * depth
            if value is None:
                out.append(f"{pad}{label}")
            else:
                out.append(f"{(pad + label):<42}: {value}")
    return "\n".join(out) + "\n", cut


def derive_xml(text: str, where: str) -> Topology:
    """The model fragment (source ``nvml-text``) of ``nvidia-smi -q -x`` output."""
    from .text import derive_text

    q, cut = to_q_text(text, where)
    if not q.strip():
        raise NvtopoError("nvidia-smi -q -x output that lists no GPU", where=where)
    topo = derive_text(q)
    if cut is not None:
        topo.note("nvml_text.xml_cut", f"the XML is cut short ({cut}): GPUs and facts after "
                  "the cut are unknown", source="nvml-text", level="warning")
    return topo


__all__ = ["looks_like", "to_q_text", "derive_xml", "MAX_DEPTH", "MAX_ELEMENTS", "MAX_LINES",
           "LABELS"]
