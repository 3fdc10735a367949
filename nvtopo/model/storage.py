"""NVMe drives and where they sit relative to the GPUs (GPUDirect Storage placement), from
sysfs (``bus/pci/devices`` and ``class/nvme``, ``docs/sysfs.md``, ``docs/storage.md``), and
the node's IOMMU state.
"""


from __future__ import annotations

from typing import Dict, List, Optional

from .codec import Record, fld, record
from .pcie import NarrowestHop, PcieLink


@record
class NvmeNamespace(Record):
    """One namespace of an NVMe controller (``class/nvme/nvmeX/nvmeXnY``)."""

    name: str = fld("the namespace's directory name (nvme0n1; nvme0c0n1 under native "
                    "multipath)", default="")
    size_bytes: Optional[int] = fld("size (512-byte sectors) x 512; null when unreadable")


@record
class NvmeDrive(Record):
    """One NVMe drive (a PCI function of class 0x0108), with its controller's facts where
    ``class/nvme`` was read."""

    pci_address: str = fld("the bus/pci/devices entry", default="")
    numa_node: Optional[int] = fld("numa_node")
    link: PcieLink = fld("its PCIe link", factory=PcieLink)
    narrowest_hop: Optional[NarrowestHop] = fld("its slowest hop")
    gpu_paths: Dict[str, Optional[str]] = fld("GPU label (as the model numbers GPUs) -> path "
                                              "level from the PCI tree", factory=dict)
    nearest_gpus: List[str] = fld("the GPUs at the best path", factory=list)
    controller: Optional[str] = fld("class/nvme entry (nvme0)", omit="none")
    model: Optional[str] = fld("class/nvme/<c>/model", omit="none")
    firmware: Optional[str] = fld("class/nvme/<c>/firmware_rev", omit="none")
    transport: Optional[str] = fld("class/nvme/<c>/transport (pcie, rdma, tcp, fc, loop)",
                                   omit="none")
    state: Optional[str] = fld("class/nvme/<c>/state (live, resetting, dead...)", omit="none")
    namespaces: Optional[List[NvmeNamespace]] = fld("class/nvme/<c>/<namespace>/size",
                                                    omit="none")

    def relabel(self, rename: Dict[str, str]) -> None:
        """Name GPUs as the merged model does (``rename``: old label -> new)."""
        self.gpu_paths = {rename.get(k, k): v for k, v in self.gpu_paths.items()}
        self.nearest_gpus = [rename.get(k, k) for k in self.nearest_gpus]

    @property
    def size_bytes(self) -> Optional[int]:
        """The sum of its namespaces' sizes; None when a size is unknown or none was read."""
        if not self.namespaces:
            return None
        sizes = [n.size_bytes for n in self.namespaces]
        return None if None in sizes else sum(s for s in sizes if s is not None)

    @property
    def best_path(self) -> Optional[str]:
        """The best path level from this drive to any GPU (PIX before PXB, NODE, SYS)."""
        for level in ("PIX", "PXB", "PHB", "NODE", "SYS"):
            if level in self.gpu_paths.values():
                return level
        return None


@record
class Storage(Record):
    """``extra.sysfs.storage``: what ``class/nvme`` and the IOMMU files said."""

    nvme_class: str = fld("class/nvme: read, absent, unreadable or not recorded (evidence "
                          "taken before nvtopo read it)", default="not recorded")
    iommu: str = fld("off, passthrough, translated or unknown", default="unknown")
    iommu_how: str = fld("how the IOMMU state was decided", default="")
    iommu_units: Optional[List[str]] = fld("class/iommu entries (dmar0, ivhd0...)",
                                           omit="none")


@record
class GdsGpu(Record):
    """One ``GPU INFO`` line of ``gdscheck -p``: ``GPU index 0 NVIDIA H100 80GB HBM3 bar:1 bar
    size (MiB):131072 supports GDS, IOMMU State: Disabled``."""

    index: Optional[int] = fld("GPU index N (the CUDA device index)")
    name: Optional[str] = fld("the product name, as printed")
    bar_mib: Optional[int] = fld("bar size (MiB): the BAR1 size")
    supports_gds: Optional[bool] = fld("true: 'supports GDS'; false: the line says it does not "
                                       "('does not support GDS'); null: neither")
    support: Optional[str] = fld("the verdict words as printed (before ', IOMMU State:')")
    iommu: Optional[str] = fld("IOMMU State: enabled or disabled (null: not printed, as "
                               "before GDS 1.7)")


@record
class GdsCheck(Record):
    """``extra.gds-text``: a pasted ``gdscheck -p`` (NVIDIA GPUDirect Storage's own check)."""

    gds_version: Optional[str] = fld("GDS release version")
    nvidia_fs_version: Optional[str] = fld("nvidia_fs version")
    libcufile_version: Optional[str] = fld("libcufile version")
    platform: Optional[str] = fld("Platform: (x86_64, aarch64)")
    drivers: Dict[str, str] = fld("DRIVER CONFIGURATION: name -> Supported, Unsupported...",
                                  factory=dict)
    iommu: Optional[str] = fld("PLATFORM INFO IOMMU: enabled or disabled")
    verification: Optional[str] = fld("Platform verification: succeeded or failed")
    gpus: List[GdsGpu] = fld("GPU INFO: one per GPU line", factory=list)

    def supported(self, name: str) -> Optional[bool]:
        """Whether the list says ``name`` (``NVMe``) is supported; None where it is not listed
        or says something else.  GDS 1.16+ lists the driver's I/O modes instead: one that
        goes direct (``nvfs``: nvidia_fs, ``p2pdma``: the kernel's PCI P2PDMA) is support;
        ``compat`` alone (the page cache, a CPU bounce buffer) is not GPUDirect."""
        value = self.drivers.get(name)
        if value is None:
            return None
        words = value.replace(",", " ").replace("(", " ").replace(")", " ").lower().split()
        if "nvfs" in words or "p2pdma" in words:
            return True
        if "compat" in words or words[:1] == ["unsupported"]:
            return False
        return True if words[:1] == ["supported"] else None

    def compat_only(self, name: str) -> bool:
        """Whether ``name``'s value lists compatibility mode and no direct mode."""
        value = (self.drivers.get(name) or "").lower()
        return "compat" in value and self.supported(name) is False


__all__ = ["GdsCheck", "GdsGpu", "NvmeDrive", "NvmeNamespace", "Storage"]
