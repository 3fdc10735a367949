"""The storage table of ``nvtopo show``: NVMe drives, their nearest GPUs, and the facts
GPUDirect Storage depends on (``docs/storage.md``)."""

from __future__ import annotations

from typing import Any, List, Optional

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from ..model import Topology, int_runs
from .cells import printable, text
from .layout import Fitted, id_column, text_column
from .cells import cell_style


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
        return int_runs([int(n) for n in nums], prefix="GPU")
    return ", ".join(labels)


def storage_table(topo: Topology) -> Optional[Table]:
    """One row per NVMe drive sysfs found; ``None`` without any."""
    s = topo.sysfs
    if s is None or not s.nvme:
        return None
    table = _table("NVMe drives")
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
    parts: List[RenderableType] = gdscheck_parts(topo)
    table = storage_table(topo)
    if table is None:
        return parts
    parts += [Text(""), Fitted(table)]
    line = storage_line(topo)
    if line is not None:
        parts.append(line)
    return parts


def _table(title: str) -> Table:
    """A borderless table under a bold title, as the storage block's three tables are."""
    return Table(title=title, title_justify="left", title_style="bold", box=None,
                 pad_edge=False, padding=(0, 2, 0, 0), show_edge=False)


def _word(value: Optional[str], good: str) -> Text:
    """A gdscheck value, green where it is the good one, yellow otherwise, dim unknown."""
    if value is None:
        return Text("unknown", style="dim")
    return text(value, style="green" if value == good else "bold yellow")


def gdscheck_parts(topo: Topology) -> List[RenderableType]:
    """A pasted ``gdscheck -p`` (``topo.gds_text``): its versions, the DRIVER CONFIGURATION
    list, the GPU INFO lines and the PLATFORM INFO verdicts, as the paste states them."""
    g = topo.gds_text
    if g is None:
        return []
    head = Text("gdscheck -p", style="bold")
    facts = [("GDS", g.gds_version), ("nvidia_fs", g.nvidia_fs_version),
             ("libcufile", g.libcufile_version), ("platform", g.platform)]
    for name, value in facts:
        head.append(f" · {name} ")
        head.append_text(text(value) if value else Text("unknown", style="dim"))
    drivers = _table("GDS driver configuration")
    text_column(drivers, "driver / file system")
    text_column(drivers, "gdscheck says")
    for name, value in g.drivers.items():
        low = value.strip().lower()
        style = "green" if low in ("supported", "enabled") else \
            "dim" if low in ("unsupported", "disabled", "not loaded", "not configured") else ""
        drivers.add_row(text(name), text(value, style=style))
    parts: List[RenderableType] = [Text(""), head, Text(""), Fitted(drivers)]
    if g.gpus:
        gpus = _table("GDS GPU info")
        id_column(gpus, "index", style="bold")
        text_column(gpus, "GPU")
        id_column(gpus, "BAR1")
        text_column(gpus, "GDS")
        id_column(gpus, "IOMMU")
        for x in g.gpus:
            gpus.add_row(text(x.index) if x.index is not None else Text("?", style="dim"),
                         text(x.name) if x.name else Text("unknown", style="dim"),
                         text(f"{x.bar_mib} MiB") if x.bar_mib is not None
                         else Text("unknown", style="dim"),
                         Text(printable(x.support), style="green" if x.supports_gds
                              else "bold yellow" if x.supports_gds is False else "")
                         if x.support else Text("unknown", style="dim"),
                         _word(x.iommu, "disabled") if x.iommu else Text("—", style="dim"))
        parts += [Text(""), Fitted(gpus)]
    line = Text("platform: ", style="bold")
    line.append("IOMMU ")
    line.append_text(_word(g.iommu, "disabled"))
    line.append(" · verification ")
    line.append_text(_word(g.verification, "succeeded"))
    parts += [Text(""), line]
    return parts


def gdscheck_lines(topo: Topology) -> List[str]:
    """The same facts as :func:`gdscheck_parts`, one plain line each (the SVG picture)."""
    g = topo.gds_text
    if g is None:
        return []
    out = ["gdscheck -p: GDS " + (g.gds_version or "?") + " · nvidia_fs "
           + (g.nvidia_fs_version or "?") + " · libcufile " + (g.libcufile_version or "?")
           + " · platform " + (g.platform or "?")]
    said = [k for k, v in g.drivers.items() if v.strip().lower() == "supported"]
    out.append(f"drivers: {len(said)} of {len(g.drivers)} Supported"
               + (": " + ", ".join(said) if said else ""))
    for x in g.gpus:
        out.append(f"GPU index {'?' if x.index is None else x.index} {x.name or '?'}: "
                   f"{x.support or 'GDS support unknown'}"
                   + (f", IOMMU {x.iommu}" if x.iommu else ""))
    out.append(f"platform: IOMMU {g.iommu or 'unknown'} · verification "
               f"{g.verification or 'unknown'}")
    return [printable(line) for line in out]


__all__ = ["gdscheck_lines", "gdscheck_parts", "storage_line", "storage_parts", "storage_table"]
