"""The NVMe drives of ``--format svg`` (``docs/storage.md``): one box per drive under the GPU
rows, labelled with its controller and its best path to a GPU, coloured by that path, outlined
by the severity of a ``gds`` finding about it."""

from __future__ import annotations

from typing import Any, Dict, Optional

from ...model import Topology
from .arrange import MARGIN
from .draw import (C_ERROR, C_PHB, C_PIX, C_PXB, C_UNKNOWN, C_WARN, _clip, _cls, _id, _Svg,
                   _sev_stroke, _title)

DRIVE_W, DRIVE_H, DRIVE_PITCH = 112, 38, 120
_PATH_FILL = {"PIX": C_PIX, "PXB": C_PXB, "PHB": C_PHB}


def _name(d: Any) -> str:
    return f"{d.controller} ({d.pci_address})" if d.controller else d.pci_address


def draw_drives(svg: _Svg, topo: Topology, report: Optional[Any], y: float,
                width: float) -> float:
    """Draw the drive strip at ``y``; returns the y below it (``y`` itself without drives)."""
    s = topo.sysfs
    drives = [d for d in (s.nvme if s is not None else []) if d.pci_address or d.controller]
    if not drives:
        return y
    sev: Dict[str, str] = {}
    if report is not None:
        for f in report.findings:
            if f.code.startswith("gds.") and f.severity in ("error", "warning"):
                key = str(f.subject)
                if sev.get(key) != "error":
                    sev[key] = f.severity
    svg.text(MARGIN, y + 4, f"NVMe drives ({len(drives)})", size=12, weight="bold",
             cls="label")
    y += 14
    per = max(1, int((width - 2 * MARGIN) // DRIVE_PITCH))
    for i, d in enumerate(drives):
        x = MARGIN + (i % per) * DRIVE_PITCH
        top = y + (i // per) * (DRIVE_H + 8)
        best = d.best_path
        near = f"{best} {', '.join(d.nearest_gpus[:2])}" if best else (
            f"over {d.transport}" if d.transport not in (None, "pcie") else "path unknown")
        fault = sev.get(_name(d))
        stroke, sw_ = _sev_stroke(fault, _PATH_FILL.get(best or "", C_UNKNOWN), 1.4)
        tip = [_name(d)] + [x for x in (d.model, d.state and f"state {d.state}") if x]
        tip += [f"{g}: {p}" for g, p in sorted(d.gpu_paths.items()) if p]
        svg.add(f'<g id="nvme-{_id(d.controller or d.pci_address)}" '
                f'class="{_cls("nvme", fault)}">' + _title(tip))
        svg.rect(x, top, DRIVE_W, DRIVE_H, fill="#fff8e1", stroke=stroke, sw=sw_, rx=4)
        svg.text(x + DRIVE_W / 2, top + 15, _clip(d.controller or d.pci_address, 16), size=10,
                 weight="bold", anchor="middle", cls="label")
        svg.text(x + DRIVE_W / 2, top + 30, _clip(near, 18), size=9, anchor="middle",
                 fill=C_ERROR if fault == "error" else C_WARN if fault else "#424242")
        svg.add("</g>")
    rows = (len(drives) + per - 1) // per
    return y + rows * (DRIVE_H + 8) + 10


__all__ = ["draw_drives"]
