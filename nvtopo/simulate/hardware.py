"""The parts of a simulated node: GPUs and their NVLinks, RDMA devices and their ports, PCI
functions, and the :class:`Machine` that holds them with the lookups every renderer uses
(PCI order, NVLink pair counts as NVML counts them, PCIe path levels).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from ..layouts import Layout
from .families import Family


@dataclass
class Link:
    """One NVLink of a GPU: to a switch (``switch`` id, port) or a peer GPU (ident, its link)."""

    index: int
    kind: str  # "switch" or "gpu"
    remote: Union[str, int]  # switch id, or the peer GPU's ident
    remote_link: int = 0
    up: bool = True


@dataclass
class Gpu:
    ident: int  # index on the healthy node; outputs renumber by PCI order
    uuid: str
    serial: str
    numa: int
    cpus: str
    gpu_numa_id: Optional[int]
    links: List[Link] = field(default_factory=list)
    #: NVML's link count (field 91) and switch-connected count (field 147).
    link_count: int = 0
    switch_link_count: int = 0
    pcie_max_gen: int = 5
    pcie_max_width: int = 16
    pcie_gen: Optional[int] = None  # current, when below max
    pcie_width: Optional[int] = None
    bdf: str = ""
    fabric_state: Optional[int] = None  # 3 completed, 1 not started, None: not supported
    #: NVLink-C2C (Grace superchips): link count (0: none), links active, mode enabled.
    c2c_links: int = 0
    c2c_up: Optional[int] = None  # active links when fewer than c2c_links
    c2c_enabled: bool = True


@dataclass
class Port:
    state: str = "4: ACTIVE"
    phys: str = "5: LinkUp"
    rate_gbps: Union[int, float] = 400
    counters: Dict[str, int] = field(default_factory=dict)


@dataclass
class Nic:
    """One RDMA device (a PCI function) with one port."""

    name: str
    role: str  # "compute" or "storage"
    link_layer: str  # "InfiniBand" or "Ethernet"
    guid: str
    port: Port
    pcie_gen: int = 5
    #: PCI place key: the function this device sits on (swapped by nic-affinity-swap).
    place: str = ""
    bdf: str = ""
    numa: int = 0
    netdev: str = ""
    #: the rate the card is built for, where a fault trained its port lower (the card model
    #: follows it, not the degraded rate)
    card_rate: Optional[float] = None


@dataclass
class PciDev:
    """A PCI function: a bridge (root port, switch port) or an endpoint."""

    bdf: str
    host_bridge: str  # "pci0000:17"
    chain: List[str]  # BDFs from the root port down to this function (inclusive)
    numa: int
    vendor: int
    device: int
    cls: int
    gts: float
    width: int
    cur_gts: Optional[float] = None
    cur_width: Optional[int] = None
    #: what sits here: "gpu:<ident>", "nic:<place>", "nvswitch:<id>", or "" for bridges
    role: str = ""

    @property
    def path(self) -> str:
        return f"devices/{self.host_bridge}/" + "/".join(self.chain)


@dataclass
class Machine:
    layout: Layout
    seed: int
    hostname: str
    family: Family
    gpus: List[Gpu]
    nics: List[Nic]
    pci: Dict[str, PciDev]  # bdf -> device
    numa_cpus: Dict[int, str]  # NUMA node -> cpulist ("" for memory-only nodes)
    switches: Dict[str, str]  # NVSwitch id -> bus id (NVML spelling)
    nvswitch: bool
    fabric: bool
    peermem: bool
    nvlink_version: int
    assumptions: List[str]
    #: topo-text-only NV# overrides (nvlink-degraded on NVSwitch systems): (a, b) idents -> n
    topo_pair_override: Dict[Tuple[int, int], int] = field(default_factory=dict)
    faults: List[str] = field(default_factory=list)
    healthy_gpu_count: int = 0
    #: A fleet's per-node settings (simulate --nodes, :mod:`.fleet`): ``driver`` (version,
    #: CUDA version), ``cluster_uuid``, ``clique_id``, ``ports``: NIC -> (lid, sm_lid, gid
    #: prefix).  Empty for a single node.
    fleet: Dict[str, Any] = field(default_factory=dict)
    #: NVMe faults (:mod:`.storage`): ``far`` (data drive numbers on CPU root ports),
    #: ``iommu`` (an IOMMU group type), ``no_nvidia_fs``.
    storage: Dict[str, Any] = field(default_factory=dict)

    # -- lookups ---------------------------------------------------------------------------

    def gpu(self, ident: int) -> Optional[Gpu]:
        return next((g for g in self.gpus if g.ident == ident), None)

    def nic(self, name: str) -> Optional[Nic]:
        return next((n for n in self.nics if n.name == name), None)

    def gpus_in_order(self) -> List[Gpu]:
        """Present GPUs in PCI bus order: NVML, nvidia-smi and sysfs number them so."""
        return sorted(self.gpus, key=lambda g: _bdf_key(g.bdf))

    def index_of(self, ident: int) -> int:
        """The index tools print for a GPU (PCI order among the GPUs present)."""
        return [g.ident for g in self.gpus_in_order()].index(ident)

    def nics_in_order(self) -> List[Nic]:
        return sorted(self.nics, key=lambda n: _bdf_key(n.bdf))

    def dev_of_gpu(self, g: Gpu) -> PciDev:
        return self.pci[g.bdf]

    def dev_of_nic(self, n: Nic) -> PciDev:
        return self.pci[n.bdf]

    # -- NVLink counts ------------------------------------------------------------------------

    def pair_count(self, a: Gpu, b: Gpu) -> int:
        """GPU pair NVLink count as NVML and nvidia-smi count it (direct min + switch min)."""
        d_ab = sum(1 for lk in a.links if lk.up and lk.kind == "gpu" and lk.remote == b.ident)
        d_ba = sum(1 for lk in b.links if lk.up and lk.kind == "gpu" and lk.remote == a.ident)
        sa = sum(1 for lk in a.links if lk.up and lk.kind == "switch")
        sb = sum(1 for lk in b.links if lk.up and lk.kind == "switch")
        return min(d_ab, d_ba) + (min(sa, sb) if sa and sb else 0)

    def topo_pair_count(self, a: Gpu, b: Gpu) -> int:
        key = (min(a.ident, b.ident), max(a.ident, b.ident))
        if key in self.topo_pair_override:
            return self.topo_pair_override[key]
        return self.pair_count(a, b)

    # -- PCI paths ---------------------------------------------------------------------------

    def path_level(self, a: PciDev, b: PciDev) -> str:
        """PIX/PXB/PHB/NODE/SYS between two PCI functions, as nvidia-smi prints it."""
        if a.bdf == b.bdf:
            return "X"
        if a.bdf.rsplit(".", 1)[0] == b.bdf.rsplit(".", 1)[0]:
            return "PIX"
        if a.host_bridge == b.host_bridge:
            sa, sb = _switches(a), _switches(b)
            k = 0
            while k < min(len(sa), len(sb)) and sa[k] == sb[k]:
                k += 1
            if k == 0:
                return "PHB"
            return "PIX" if (len(sa) - k) + (len(sb) - k) == 0 else "PXB"
        return "NODE" if a.numa == b.numa else "SYS"


def _switches(d: PciDev) -> List[str]:
    """Switch upstream ports above a function (chain: rp, usp, dsp, usp, dsp, ..., dev)."""
    above = d.chain[:-1]
    return above[1::2]


def _bdf_key(bdf: str) -> Tuple[int, int, int, int]:
    dom, bus, rest = bdf.split(":")
    dev, fn = rest.split(".")
    return int(dom, 16), int(bus, 16), int(dev, 16), int(fn)

