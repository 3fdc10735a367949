"""The storage table of ``nvtopo show``: NVMe drives, their nearest GPUs, and the facts
GPUDirect Storage depends on (``docs/storage.md``)."""

from __future__ import annotations

from typing import Any, List, Optional

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ..model import Topology
from .cells import printable, text
from .layout import Fitted, id_column, text_column
from .matrix import _runs, cell_style


def _size(n: Optional[int]) -> Text:
    if n is None:
        return Text("unknown", style="dim")
    if n >= 10 ** 12:
        return Text(f"{n / 1e12:.2f} TB")
    return Text(f"{n / 1e9:.0f} GB")


def _gpus(labels: List[str]) -> str:
    """``GPU0-3`` for GPU0, GPU1, GPU2, GPU3; the labels as they are otherwise."""
    nums = [lab[3:] for lab in labels]
    if labels and all(lab.startswith("GPU") and n.isascii() and n.isdigit() and len(n) < 6
                      for lab, n in zip(labels, nums)):
        return _runs([int(n) for n in nums], prefix="GPU")
    return ", ".join(labels)


def storage_table(topo: Topology) -> Optional[Table]:
    """One row per NVMe drive sysfs found; ``None`` without any."""
    s = topo.sysfs
    if s is None or not s.nvme:
        return None
    table = Table(title="NVMe drives", title_justify="left", title_style="bold", box=None,
                  pad_edge=False, padding=(0, 2, 0, 0), show_edge=False)
    id_column(table, "drive", style="bold")
    id_column(table, "PCI")
    text_column(table, "model")
    id_column(table, "size")
    text_column(table, "nearest GPU")
    id_column(table, "state")
    for d in s.nvme:
        best = d.best_path
        near: Any
        if best is not None:
            near = Text.assemble((best, cell_style(best)), " ",
                                 printable(_gpus(d.nearest_gpus)))
        elif d.transport not in (None, "pcie"):
            near = Text(f"over {printable(d.transport)}", style="dim")
        else:
            near = Text("unknown", style="dim")
        state = d.state
        table.add_row(text(d.controller) if d.controller else Text("—", style="dim"),
                      text(d.pci_address) if d.pci_address else Text("—", style="dim"),
                      text(d.model) if d.model else Text("unknown", style="dim"),
                      _size(d.size_bytes), near,
                      Text(printable(state), style="" if state == "live" else "bold yellow")
                      if state else Text("unknown", style="dim"))
    return table


def storage_line(topo: Topology) -> Optional[Text]:
    """``IOMMU passthrough · nvidia_fs loaded`` (how the IOMMU state was decided with -v
    in the JSON: ``extra.sysfs.storage.iommu_how``)."""
    s = topo.sysfs
    if s is None or s.storage.nvme_class == "not recorded":
        return None
    line = Text("GPUDirect Storage: ", style="bold")
    line.append(f"IOMMU {printable(s.storage.iommu)}")
    line.append(" · nvidia_fs " + ("loaded" if s.gpudirect.nvidia_fs else "not loaded"))
    return line


def storage_parts(topo: Topology) -> List[RenderableType]:
    """What ``show`` prints about storage, each part preceded by a blank line."""
    table = storage_table(topo)
    if table is None:
        return []
    parts: List[RenderableType] = [Text(""), Fitted(table)]
    line = storage_line(topo)
    if line is not None:
        parts.append(line)
    return parts


__all__ = ["storage_line", "storage_parts", "storage_table"]
