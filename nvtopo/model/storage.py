"""NVMe drives and where they sit relative to the GPUs (GPUDirect Storage placement), from
sysfs (``bus/pci/devices``, ``docs/sysfs.md``).
"""


from __future__ import annotations

from typing import Dict, List, Optional

from .codec import Record, fld, record
from .pcie import NarrowestHop, PcieLink


@record
class NvmeDrive(Record):
    """One NVMe drive (a PCI function of class 0x0108)."""

    pci_address: str = fld("the bus/pci/devices entry", default="")
    numa_node: Optional[int] = fld("numa_node")
    link: PcieLink = fld("its PCIe link", factory=PcieLink)
    narrowest_hop: Optional[NarrowestHop] = fld("its slowest hop")
    gpu_paths: Dict[str, Optional[str]] = fld("GPU label (as the model numbers GPUs) -> path "
                                              "level from the PCI tree", factory=dict)
    nearest_gpus: List[str] = fld("the GPUs at the best path", factory=list)

    def relabel(self, rename: Dict[str, str]) -> None:
        """Name GPUs as the merged model does (``rename``: old label -> new)."""
        self.gpu_paths = {rename.get(k, k): v for k, v in self.gpu_paths.items()}
        self.nearest_gpus = [rename.get(k, k) for k in self.nearest_gpus]


__all__ = ["NvmeDrive"]
