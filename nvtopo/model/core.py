"""The devices and relations of a node: GPUs, NICs, the path and P2P matrices, NVLink pair
counts, notes, disagreements between sources.

A GPU's and a NIC's per-source records are typed attributes (``GPU.nvml``,
``GPU.nvml_text``, ``GPU.sysfs``; ``NIC.sysfs``, ``NIC.affinity``), written under the
object's ``extra`` in JSON; ``extra`` itself keeps only keys this nvtopo does not know
(forward compatibility).
"""


from __future__ import annotations

import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .codec import Record, fld, record
from .nvml import NvmlGpu, TextGpu
from .pcie import PciPlacement
from .rdma import Hca

#: GPU fields that sources state and that are compared when merging sources.
GPU_FACTS = ("name", "uuid", "pci_bus_id", "cpu_affinity", "numa_affinity", "gpu_numa_id")
#: NIC fields likewise.
NIC_FACTS = ("pci_bus_id", "numa_node")

_FIRST_NODE = re.compile(r"^\s*([0-9]{1,6})")  # ASCII digits only

@record
class GPU(Record):
    """One GPU.  Fields are ``None`` where no source said anything."""

    index: int
    label: str = fld("GPU<index>, or the matrix row's label", default="")
    name: Optional[str] = fld("nvmlDeviceGetName; nvidia-smi -q Product Name")
    uuid: Optional[str] = fld("nvmlDeviceGetUUID; nvidia-smi -L / -q")
    pci_bus_id: Optional[str] = fld("nvmlDeviceGetPciInfo; sysfs bus/pci/devices; -q")
    cpu_affinity: Optional[str] = fld("topo -m CPU Affinity; nvmlDeviceGetCpuAffinity; sysfs "
                                      "local_cpulist")
    numa_affinity: Optional[str] = fld("topo -m NUMA Affinity; "
                                       "nvmlDeviceGetMemoryAffinity; sysfs numa_node")
    gpu_numa_id: Optional[int] = fld("topo -m GPU NUMA ID; nvmlDeviceGetNumaNodeId (Grace)")
    #: field name -> source name, for every field that has a value.
    sources: Dict[str, str] = fld("field -> the source that stated it", factory=dict)
    #: Keys under ``extra`` this nvtopo does not know, kept as read.
    extra: Dict[str, Any] = fld("unknown keys, kept", factory=dict)
    nvml: Optional[NvmlGpu] = fld("the NVML probe", nest="extra", omit="none")
    nvml_text: Optional[TextGpu] = fld("pasted nvidia-smi nvlink / -q text", key="nvml-text",
                                       nest="extra", omit="none")
    sysfs: Optional[PciPlacement] = fld("sysfs bus/pci/devices", nest="extra", omit="none")

    def __post_init__(self) -> None:
        if not self.label:
            self.label = f"GPU{self.index}"

    @property
    def numa_node(self) -> Optional[int]:
        """The CPU NUMA node the GPU sits on: the first node of its NUMA affinity
        (``0,5-11`` -> 0, as ``topo -m`` or NVML state it), else sysfs's ``numa_node``;
        ``None`` where no source says (sysfs's -1 included).  Not the GPU's own memory node
        (``gpu_numa_id``, Grace)."""
        s = self.numa_affinity
        if isinstance(s, str):
            m = _FIRST_NODE.match(s)
            if m:
                return int(m.group(1))
        placed = self.sysfs.numa_node if self.sysfs is not None else None
        return placed if isinstance(placed, int) and placed >= 0 else None

    @property
    def numa_node_source(self) -> str:
        """The source :attr:`numa_node` comes from (``""`` when it is unknown)."""
        s = self.numa_affinity
        if isinstance(s, str) and _FIRST_NODE.match(s):
            return self.sources.get("numa_affinity", "")
        return "sysfs" if self.numa_node is not None else ""

    @property
    def links(self) -> Any:
        """The GPU's NVLink record: NVML's, else pasted text's, else ``None``."""
        if self.nvml is not None:
            return self.nvml.nvlink
        if self.nvml_text is not None:
            return self.nvml_text.nvlink
        return None


@record
class NIC(Record):
    """One network device as nvidia-smi lists it (an RDMA device: HCA or RoCE NIC).

    ``label`` is what the matrix prints (``NIC0`` or ``mlx5_0``); ``name``
    the device name (through the NIC Legend where there is one, else the
    label).
    """

    label: str
    name: str
    pci_bus_id: Optional[str] = fld("sysfs: the RDMA device's PCI function")
    numa_node: Optional[int] = fld("sysfs: the function's numa_node")
    sources: Dict[str, str] = fld("field -> the source that stated it", factory=dict)
    extra: Dict[str, Any] = fld("unknown keys, kept", factory=dict)
    affinity: Optional[Dict[str, Optional[str]]] = fld(
        "the affinity columns topo -m prints on the NIC's row", nest="extra", omit="none")
    sysfs: Optional[Hca] = fld("sysfs class/infiniband", nest="extra", omit="none")


@record
class Matrix(Record):
    """A square device matrix, cells as printed (``None`` where unknown).

    ``cells[i][j]`` is row ``devices[i]``, column ``devices[j]``.
    Used for the path matrix (``X``, ``NV18``, ``PIX``, ``SOC`` ...) and
    for the P2P status matrix (``X``, ``OK``, ``GNS`` ...).
    """

    devices: List[str]
    cells: List[List[Optional[str]]]
    source: str = fld("topo-text, nvml or sysfs", default="topo-text")
    #: For P2P matrices: the capability shown (``r``, ``w``, ``n``, ``a``,
    #: ``p``) where the input says so.
    mode: Optional[str] = fld("topo -p2p r/w/n/a/p", omit="none")

    def __post_init__(self) -> None:
        n = len(self.devices)
        if len(self.cells) != n or any(len(row) != n for row in self.cells):
            raise ValueError("matrix cells must be square and match the device list")

    def index(self, label: str) -> int:
        return self.devices.index(label)

    def get(self, a: str, b: str) -> Optional[str]:
        """Cell for row ``a`` and column ``b``, or ``None``."""
        devices = self.devices
        memo = self.__dict__.get("_pos")  # (the devices list it indexes, its length, the index)
        if memo is None or memo[0] is not devices or memo[1] != len(devices):
            memo = self._index()
        pos = memo[2]
        i, j = pos.get(a), pos.get(b)
        if i is None or j is None:
            return None
        if devices[i] != a or devices[j] != b:  # a label changed in place: index anew
            pos = self._index()[2]
            i, j = pos.get(a), pos.get(b)
            if i is None or j is None:
                return None
        return self.cells[i][j]

    def cell_getter(self) -> Callable[[str, str], Optional[str]]:
        """:meth:`get` for many lookups while the matrix does not change (its label index
        read once)."""
        devices, cells = self.devices, self.cells
        memo = self.__dict__.get("_pos")
        if memo is None or memo[0] is not devices or memo[1] != len(devices):
            memo = self._index()
        pos = memo[2]
        if any(devices[k] != lab for lab, k in pos.items()):  # a label changed in place
            return self.get

        def get(a: str, b: str) -> Optional[str]:
            i, j = pos.get(a), pos.get(b)
            return None if i is None or j is None else cells[i][j]
        return get

    def _index(self) -> Tuple[List[str], int, Dict[str, int]]:
        """Each label's row, the first occurrence as ``list.index`` finds it; kept beside the
        fields (O(1) a lookup: a copy of the labels compared on every lookup made the checks
        of an N-GPU domain grow as N^3)."""
        pos: Dict[str, int] = {}
        for k, lab in enumerate(self.devices):
            pos.setdefault(lab, k)
        memo = self.__dict__["_pos"] = (self.devices, len(self.devices), pos)
        return memo

    def pairs(self, rows: Optional[Sequence[int]] = None
              ) -> Iterator[Tuple[str, str, Optional[str]]]:
        """Every unordered pair ``(a, b, token)`` above the diagonal (a missing cell read from
        its mirror); ``rows``: of those rows only (ascending), not every device's."""
        rows = range(len(self.devices)) if rows is None else rows
        devices, cells = self.devices, self.cells
        for k, i in enumerate(rows):
            for j in rows[k + 1:]:
                tok = cells[i][j]
                if tok is None:
                    tok = cells[j][i]
                yield devices[i], devices[j], tok


@record
class NVLinkPair(Record):
    """NVLink count between two GPUs (by index), with its source."""

    a: int
    b: int
    count: int
    source: str = "topo-text"


@record
class Note(Record):
    """Something a probe wants the user to know: damage, unknown tokens, gaps.

    ``level`` is ``info`` (a gap, e.g. no NIC Legend) or ``warning``
    (something was lost or guessed).  Notes are not findings: checks decide
    what is wrong; notes say what the input did and did not tell.
    """

    __json_order__ = ("code", "level", "message", "source", "subject")

    code: str
    message: str
    source: str = "topo-text"
    level: str = "info"
    subject: Optional[str] = fld("the device it is about", omit="none")


@record
class Disagreement(Record):
    """Two sources said different things about the same fact."""

    subject: str
    fact: str
    values: Dict[str, Union[str, int]]
    message: str = ""


__all__ = ["GPU_FACTS", "NIC_FACTS", "GPU", "NIC", "Matrix", "NVLinkPair", "Note",
           "Disagreement"]
