"""What a source says about the node as a whole, beyond its devices: the topo text's legend
(``docs/topo-text.md``) and sysfs's node facts (``docs/sysfs.md``).  NVML's are in
:mod:`.nvml`, the host probe's in :mod:`.host`.
"""


from __future__ import annotations

from typing import Dict, List, Optional

from .codec import Record, fld, record
from .host import NumaInfo
from .net import NetLink
from .rdma import GpuDirect
from .pcie import AerCounts
from .storage import NvmeDrive, Storage


@record
class TopoText(Record):
    """``extra.topo-text``: what kind of ``nvidia-smi topo`` output, and its legend."""

    command: Optional[str] = fld("the command line the paste kept", omit="none")
    kind: str = fld("paths (topo -m) or p2p (topo -p2p)", default="paths")
    legend: Optional[Dict[str, str]] = fld("token -> the legend's text", omit="none")
    legend_style: Optional[str] = fld("modern, transitional, soc, p2p, or null without one")


@record
class SysfsNode(Record):
    """``extra.sysfs``: the tree read, RDMA absence, NVMe drives, NUMA, GPUDirect."""

    root: str = fld("the sysfs tree read", default="/sys")
    absent_devices: Dict[str, str] = fld("class/infiniband entry -> why it is no device",
                                         factory=dict)
    rdma: Optional[str] = fld("why there is no RDMA device", omit="none")
    nvme: List[NvmeDrive] = fld("NVMe drives", factory=list)
    gpu_bus_ids: Dict[str, str] = fld("GPU label (as the model numbers GPUs) -> the PCI "
                                      "address sysfs found it at", factory=dict)
    numa: Optional[NumaInfo] = fld("devices/system/node (null without it)")
    gpudirect: GpuDirect = fld("GPUDirect RDMA modules", factory=GpuDirect)
    net: Optional[Dict[str, NetLink]] = fld("class/net: interface -> facts, where a WireGuard "
                                            "interface is present; where none is, only those "
                                            "that could be a userspace WireGuard tunnel "
                                            "(type 65534 or unreadable) ({}: listed, none "
                                            "is or could be; null: not read)", omit="none")
    net_cut: Optional[int] = fld("class/net entries past the most read (MAX_NET), not looked "
                                 "at: a WireGuard interface may be among them", omit="none")
    storage: Storage = fld("class/nvme and the IOMMU state (docs/storage.md)",
                           factory=Storage)
    aer: Optional[Dict[str, AerCounts]] = fld(
        "bus/pci/devices/<bdf>/aer_dev_*: PCI address -> AER counters, for the GPUs, NICs and "
        "the bridges above them whose kernel exposes them (left out: none does, or evidence "
        "taken before nvtopo read them)", omit="none")

    def relabel(self, rename: Dict[str, str]) -> None:
        """Name GPUs as the merged model does (``rename``: old label -> new)."""
        for drive in self.nvme:
            drive.relabel(rename)
        self.gpu_bus_ids = {rename.get(k, k): v for k, v in self.gpu_bus_ids.items()}


__all__ = ["TopoText", "SysfsNode"]
