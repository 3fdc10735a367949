"""``--format svg``: a picture of the node's wiring, as one self-contained SVG file.

The XML is written here (no external program, no font or script references), and the
layout is deterministic (the same model gives the same bytes):

* NUMA nodes are boxes, left to right (a row wraps when it gets too wide; a NUMA node with
  many GPUs is split into several boxes marked "cont.");
* GPUs sit in a row inside their NUMA box; each NIC hangs below its nearest GPU (PIX/PXB:
  strong blue edge, PHB: faint dashed edge; NICs only NODE/SYS-near a GPU sit apart in
  their NUMA box, without an edge);
* NVSwitches are boxes on a bar at the top: every GPU is wired to the switch bar (one edge
  per GPU labelled with its active links, ``17/18`` when some are down) instead of n²
  GPU pairs; the bar runs along every row of NUMA boxes.  Without switches (a direct
  mesh, DGX-1, GH200) every NVLinked pair is an arc labelled NV#; on a switched node only
  the pairs short of links that no GPU edge explains are drawn;
* with a check's report (``nvtopo check --format svg``), elements named in error findings
  are outlined red, in warnings amber (:mod:`.faults`: from the findings' typed subjects);
  GPUs the report says are missing are drawn as dashed placeholders; the findings are
  listed below the picture; a legend closes it.

Public API: ``render(topo, report=None) -> str`` (``report``: the
:class:`nvtopo.checks.Report` of ``nvtopo check``, or ``None`` for ``nvtopo show``).

The package: :mod:`.arrange` (the model arranged: NUMA boxes, cells, widths; NVLink facts
per GPU; the switches), :mod:`.faults` (which elements the findings name), :mod:`.draw`
(colours, the SVG writer, the text of the boxes); :func:`render` lays out and draws.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from ...model import GPU, Topology, path_kind
from ...safe import ascii_int, is_ascii_digits
from .arrange import (ARC_H, FAN_H, GPU_H, GPU_W, MARGIN, MAX_ROW_W, MISSING, NIC_H, NIC_PITCH,
                      NIC_W, SW_H, SW_PITCH, SW_W, Cell, Group, _arrange, _gpu_links,
                      _numa_sort, _short_bus, _switches)
from .draw import (C_ERROR, C_GPU_FILL, C_NUMA_FILL, C_NV_DOWN, C_NV_OK, C_PHB, C_PIX,
                   C_PORT_DOWN, C_PORT_UP, C_PXB, C_UNKNOWN, C_WARN, FONT, _clip, _cls, _esc,
                   _gpu_lines, _id, _num, _unique_ids, _port_summary, _sev_stroke, _Svg, _title)
from .faults import SEV_RANK, faults_of

if TYPE_CHECKING:  # pragma: no cover
    from ...checks import Report

__all__ = ["render", "C_ERROR", "C_WARN"]


class _Picture:
    """What the drawing steps share: the model, the report's marks, the layout so far."""

    def __init__(self, topo: Topology, report: Optional["Report"]) -> None:
        self.topo = topo
        self.report = report
        self.switches = _switches(topo)
        self.switch_ids = {b: _id(_short_bus(b)) for b in self.switches}
        self.switch_ids.update({_short_bus(b): _id(_short_bus(b)) for b in self.switches})
        self.faults = faults_of(report, topo, self.switch_ids)
        self.groups = _arrange(topo, self.faults.missing)
        self.links = _gpu_links(topo)
        self.node_switches = (topo.nvml.switches if topo.nvml is not None else None) or {}
        self.pairs = {(min(p.a, p.b), max(p.a, p.b)): p.count for p in topo.nvlinks
                      if p.a != p.b}
        counts = Counter(c for c in self.pairs.values() if c > 0)
        self.mode: Optional[int] = counts.most_common(1)[0][0] if counts else None
        self.switched = bool(self.switches) or topo.nvswitch is True
        self.arcs = self._arcs()
        self.rows, self.row_w = _rows(self.groups)
        self.left = MARGIN + (24 if self.switched else 0)
        self.svg = _Svg()
        self.gpu_pos: Dict[int, Tuple[float, float]] = {}  # index -> (center x, top y)

    def _arcs(self) -> Dict[Tuple[int, int], int]:
        """Which GPU pairs get an arc: every NVLinked pair of a direct mesh; on a switched
        node those short of links that no GPU edge explains; and every pair a finding names."""
        present = sorted(g.index for g in self.topo.gpus)
        arcs: Dict[Tuple[int, int], int] = {}
        if not self.switched:
            arcs = {k: c for k, c in self.pairs.items() if c > 0}
        else:
            for (a, b), c in self.pairs.items():
                if self.mode is None or c >= self.mode:
                    continue
                la, lb = self.links.get(a), self.links.get(b)
                if la is not None and lb is not None and c >= min(la.active or 0,
                                                                  lb.active or 0):
                    continue  # the GPU edge (17/18) already says it
                arcs[(a, b)] = c
        for ab in self.faults.pairs:
            if ab not in arcs and ab[0] in present and ab[1] in present:
                arcs[ab] = self.pairs.get(ab, 0)
        return arcs


def _rows(groups: List[Group]) -> Tuple[List[List[Group]], List[float]]:
    """The NUMA boxes in rows no wider than MAX_ROW_W, and each row's width."""
    rows: List[List[Group]] = []
    width = 0.0
    for grp in groups:
        grp.w = sum(c.w for c in grp.cells) + 16
        if rows and width + grp.w + 16 <= MAX_ROW_W:
            rows[-1].append(grp)
            width += grp.w + 16
        else:
            rows.append([grp])
            width = grp.w
    return rows, [sum(g.w for g in r) + 16 * (len(r) - 1) for r in rows]


def render(topo: Topology, report: Optional["Report"] = None) -> str:
    """The topology picture as an SVG document (text); with ``report``, its findings marked."""
    pic = _Picture(topo, report)
    svg = pic.svg
    head, y = _draw_title(pic, MARGIN)
    y = _draw_switch_bar(pic, y)
    top_of_trunk = y
    bus_ys: List[float] = []
    for r, row in enumerate(pic.rows):
        y = _draw_row(pic, r, row, y, bus_ys)
    if pic.switched and bus_ys:
        svg.line(pic.left - 12, top_of_trunk - 4, pic.left - 12, bus_ys[-1], stroke=C_NV_OK,
                 sw=5, extra=' class="nvswitch-bus"')
    _draw_arcs(pic)

    # -- the WireGuard mesh, one line per interface (docs/mesh.md)
    from ..mesh import mesh_lines

    for line in mesh_lines(topo):
        svg.text(MARGIN, y + 4, _clip(line, 120), size=11, fill="#37474f", cls="mesh")
        y += 16

    # -- findings list
    width_all = max([pic.left + w for w in pic.row_w] + [700.0]) + MARGIN
    if pic.switches:
        per_line = max(8, int((max(pic.row_w + [0]) or MAX_ROW_W) // SW_PITCH))
        width_all = max(width_all, pic.left + min(len(pic.switches), per_line) * SW_PITCH
                        + MARGIN)
    from .drives import draw_drives  # NVMe drives (docs/storage.md)
    y = draw_drives(svg, topo, report, y, width_all)
    from ..storage import gdscheck_lines  # a pasted gdscheck -p (docs/storage.md)

    for line in gdscheck_lines(topo):
        svg.text(MARGIN, y + 4, _clip(line, int((width_all - 2 * MARGIN) // 6.3)), size=11,
                 fill="#37474f", cls="gdscheck")
        y += 16
    if report is not None:
        y = _draw_findings(svg, report, y, width_all)
    y = _draw_legend(svg, y, width_all)
    return _document(svg, pic.faults.node, head, width_all, y)


def _draw_title(pic: _Picture, y: float) -> Tuple[str, float]:
    """The title and the line of counts under it: the title (the document's too), and the
    y below them."""
    topo, report, svg = pic.topo, pic.report, pic.svg
    host = topo.host.hostname or topo.origin.file or "node"
    head = f"nvtopo · {host}"
    failed = report is not None and report.verdict == "fail"
    if report is not None:
        n = report.counts
        head += (f" · layout {report.layout_name} · {'FAIL' if failed else 'PASS'}: "
                 f"{n['error']} error(s), {n['warning']} warning(s)")
    numas = sorted({grp.key for grp in pic.groups if grp.key and grp.key != MISSING},
                   key=_numa_sort)
    sub = (f"{len(topo.gpus)} GPUs · {len(topo.nics)} NICs · "
           f"{len(pic.switches)} NVSwitches · " if pic.switches else
           f"{len(topo.gpus)} GPUs · {len(topo.nics)} NICs · ")
    sub += f"{len(numas)} NUMA nodes · sources: {', '.join(topo.sources) or 'none'}"
    svg.text(MARGIN, y + 16, head, size=16, weight="bold",
             fill=C_ERROR if pic.faults.node == "error" or failed else "#212121", cls="title")
    svg.text(MARGIN, y + 34, sub, size=11, fill="#616161")
    return head, y + 50


def _draw_switch_bar(pic: _Picture, y: float) -> float:
    """The NVSwitches on a bar at the top (switched nodes only); the y below it."""
    if not pic.switched:
        return y
    svg, switches, left = pic.svg, pic.switches, pic.left
    if not switches:
        label = (f"NVLink all-to-all · NV{pic.mode} every pair (NVSwitches not in the input)"
                 if pic.mode else "NVSwitch fabric (switches not in the input)")
        svg.text(left, y + 14, label, size=11, weight="bold", fill=C_NV_OK, cls="fabric")
        return y + 22
    per_line = max(1, int((max(pic.row_w + [0]) or MAX_ROW_W) // SW_PITCH)) if pic.rows else 8
    per_line = max(per_line, 8)
    for i, bus in enumerate(switches):
        _draw_switch(pic, bus, left + (i % per_line) * SW_PITCH,
                     y + (i // per_line) * (SW_H + 8))
    n_lines = (len(switches) + per_line - 1) // per_line
    y += n_lines * (SW_H + 8) + 6
    for i in range(len(switches)):
        if i // per_line == n_lines - 1:
            sx = left + (i % per_line) * SW_PITCH + SW_W / 2
            svg.line(sx, y - 14, sx, y - 4, stroke=C_NV_OK, sw=3)
    svg.line(left - 12, y - 4, left + (min(len(switches), per_line) - 1) * SW_PITCH
             + SW_W / 2, y - 4, stroke=C_NV_OK, sw=5, extra=' class="nvswitch-bus"')
    return y


def _draw_switch(pic: _Picture, bus: str, sx: float, sy: float) -> None:
    svg = pic.svg
    sid = pic.switch_ids[bus]
    sev = pic.faults.switches.get(sid)
    stroke, sw_ = _sev_stroke(sev, "#1b5e20", 1.2)
    per_gpu = pic.node_switches.get(bus) or {}
    tip = [f"NVSwitch {bus}"] + [f"GPU{k}: {v} links" for k, v in
                                 sorted(per_gpu.items(), key=lambda kv:
                                        ascii_int(str(kv[0])) or 0
                                        if is_ascii_digits(str(kv[0])) else 0)]
    tip += pic.faults.messages.get(f"sw-{sid}", [])
    svg.add(f'<g id="nvswitch-{sid}" class="{_cls("nvswitch", sev)}">'
            + _title(tip))
    svg.rect(sx, sy, SW_W, SW_H, fill="#c8e6c9", stroke=stroke, sw=sw_, rx=4)
    svg.text(sx + SW_W / 2, sy + 16, "NVSwitch", size=10, weight="bold",
             anchor="middle")
    svg.text(sx + SW_W / 2, sy + 31, _short_bus(bus), size=10, anchor="middle",
             cls="label")
    svg.add("</g>")


def _draw_row(pic: _Picture, r: int, row: List[Group], y: float,
              bus_ys: List[float]) -> float:
    """One row of NUMA boxes with their GPUs and NICs (and, switched, its bus and the GPUs'
    edges to it); the y below it."""
    svg, arcs, switched = pic.svg, pic.arcs, pic.switched
    has_nics = any(c.nics for grp in row for c in grp.cells)
    bus_y = y + 10
    grp_top = y + (30 if switched else 8)
    gpu_top = grp_top + 14 + (ARC_H if arcs and not switched else 0) + (
        ARC_H // 2 if arcs and switched else 0)
    nic_top = gpu_top + GPU_H + FAN_H
    content_bottom = (nic_top + NIC_H) if has_nics else gpu_top + GPU_H
    grp_bottom = content_bottom + 26
    if switched:
        bus_ys.append(bus_y)
        svg.line(pic.left - 12, bus_y, pic.left + pic.row_w[r], bus_y, stroke=C_NV_OK, sw=5,
                 extra=' class="nvswitch-bus"')
    x = float(pic.left)
    for grp in row:
        grp.x = x
        svg.add(f'<g class="numa" id="numa-{_id(grp.key or "unknown")}-{_num(x)}">')
        svg.rect(x, grp_top, grp.w, grp_bottom - grp_top, fill=C_NUMA_FILL,
                 stroke="#bdbdbd", sw=1, rx=10)
        svg.text(x + 8, grp_bottom - 8, _clip(grp.title, int(grp.w // 6.2)), size=11,
                 fill="#616161", weight="bold", cls="label")
        svg.add("</g>")
        cx = x + 8
        for cell in grp.cells:
            cell.x = cx
            mid = cx + cell.w / 2
            if cell.gpu is not None:
                _draw_gpu(pic, cell.gpu, mid, gpu_top)
            elif cell.missing is not None:
                _draw_missing(pic, cell.missing, mid, gpu_top)
            _draw_nics(pic, cell, mid, gpu_top, nic_top)
            cx += cell.w
        x += grp.w + 16
    if switched:
        _draw_bus_edges(pic, row, bus_y)
    return grp_bottom + 24


def _draw_gpu(pic: _Picture, g: GPU, mid: float, gpu_top: float) -> None:
    svg = pic.svg
    pic.gpu_pos[g.index] = (mid, gpu_top)
    sev = pic.faults.gpus.get(g.index)
    stroke, sw_ = _sev_stroke(sev, "#1565c0", 1.2)
    gl = pic.links.get(g.index)
    tip = [f"{g.label} {g.name or ''}".strip()]
    if g.pci_bus_id:
        tip.append(f"PCI {g.pci_bus_id}")
    if g.uuid:
        tip.append(g.uuid)
    tip += pic.faults.messages.get(f"gpu-{g.index}", [])
    svg.add(f'<g id="gpu-{g.index}" class="{_cls("gpu", sev)}">' + _title(tip))
    svg.rect(mid - GPU_W / 2, gpu_top, GPU_W, GPU_H, fill=C_GPU_FILL,
             stroke=stroke, sw=sw_)
    svg.text(mid, gpu_top + 18, g.label, size=13, weight="bold",
             anchor="middle", cls="label")
    for k, line in enumerate(_gpu_lines(g, gl)):
        svg.text(mid, gpu_top + 34 + 14 * k, line, size=10, anchor="middle",
                 fill="#424242")
    svg.add("</g>")


def _draw_missing(pic: _Picture, i: int, mid: float, gpu_top: float) -> None:
    """A GPU the report says is missing: a dashed placeholder."""
    svg = pic.svg
    tip = [f"GPU{i}: missing"] + pic.faults.messages.get(f"missing-{i}", [])
    svg.add(f'<g id="gpu-missing-{i}" class="gpu missing fault-error">'
            + _title(tip))
    svg.rect(mid - GPU_W / 2, gpu_top, GPU_W, GPU_H, fill="#ffffff",
             stroke=C_ERROR, sw=2.5, dash="6 4")
    svg.text(mid, gpu_top + 30, f"GPU{i}", size=13, weight="bold",
             anchor="middle", fill=C_ERROR, cls="label")
    svg.text(mid, gpu_top + 48, "missing", size=11, anchor="middle",
             fill=C_ERROR)
    svg.add("</g>")


def _draw_nics(pic: _Picture, cell: Cell, mid: float, gpu_top: float, nic_top: float) -> None:
    """The NICs of a cell, in a row under it, each with its edge to the cell's GPU."""
    svg, faults = pic.svg, pic.faults
    k_n = len(cell.nics)
    start = mid - (k_n * NIC_PITCH - (NIC_PITCH - NIC_W)) / 2
    for k, (n, tok) in enumerate(cell.nics):
        nx = start + k * NIC_PITCH
        ncx = nx + NIC_W / 2
        kind = path_kind(tok)
        if cell.gpu is not None and kind in ("PIX", "PXB", "PHB"):
            gi = cell.gpu.index
            esev = faults.gpu_nic.get((gi, n.name))
            color, wdt = {"PIX": (C_PIX, 2.5), "PXB": (C_PXB, 1.6),
                          "PHB": (C_PHB, 1.0)}[kind]
            color, wdt = _sev_stroke(esev, color, wdt)
            svg.line(mid, gpu_top + GPU_H, ncx, nic_top, stroke=color, sw=wdt,
                     dash="4 3" if kind == "PHB" else "",
                     extra=f' class="{_cls("edge pcie", esev)}" '
                           f'id="pcie-{cell.gpu.index}-{_id(n.name)}"')
            svg.text(ncx, nic_top - 4, str(tok), size=9, anchor="middle",
                     fill=color)
        sev = faults.nics.get(n.name)
        text, fill = _port_summary(n)
        stroke, sw_ = _sev_stroke(sev, "#546e7a", 1.0)
        tip = [n.name + (f" ({n.label})" if n.label != n.name else "")]
        if n.pci_bus_id:
            tip.append(f"PCI {n.pci_bus_id}")
        if tok:
            tip.append(f"path to nearest GPU: {tok}")
        tip += faults.messages.get(f"nic-{n.name}", [])
        svg.add(f'<g id="nic-{_id(n.name)}" class="{_cls("nic", sev)}">'
                + _title(tip))
        svg.rect(nx, nic_top, NIC_W, NIC_H, fill=fill, stroke=stroke, sw=sw_, rx=4)
        svg.text(ncx, nic_top + 16, _clip(n.name, 13), size=10, weight="bold",
                 anchor="middle", cls="label")
        if text:
            svg.text(ncx, nic_top + 31, _clip(text, 13), size=9, anchor="middle",
                     fill=C_NV_DOWN if fill == C_PORT_DOWN else "#424242")
        svg.add("</g>")


def _draw_bus_edges(pic: _Picture, row: List[Group], bus_y: float) -> None:
    """GPU -> switch bus edges, each labelled with its active links (17/18: some down)."""
    for grp in row:
        for cell in grp.cells:
            if cell.gpu is None:
                continue
            gi = cell.gpu.index
            mid, top = pic.gpu_pos[gi]
            gl = pic.links.get(gi)
            sev = pic.faults.gpu_links.get(gi)
            if gl is None or gl.should is None:
                color, wdt, dash = C_UNKNOWN, 1.5, "4 3"
                own = [c for (a, b), c in pic.pairs.items() if gi in (a, b) and c > 0]
                label = f"NV{Counter(own).most_common(1)[0][0]}" if own else "?"
                if own:
                    color, dash = C_NV_OK, ""
            else:
                ok = gl.active == gl.should and gl.should > 0
                color = C_NV_OK if ok else C_NV_DOWN
                wdt = 1.0 + 3.0 * (gl.active or 0) / max(gl.should, 1)
                dash = "" if gl.active else "4 3"
                label = str(gl.active) if ok else f"{gl.active}/{gl.should}"
            color, wdt = _sev_stroke(sev, color, wdt)
            pic.svg.line(mid, bus_y, mid, top, stroke=color, sw=wdt, dash=dash,
                         extra=f' class="{_cls("edge nvlink", sev)}" id="nvl-gpu-{gi}"')
            pic.svg.text(mid + 5, top - 8, label, size=10, fill=color, cls="nvlink-count")


def _draw_arcs(pic: _Picture) -> None:
    """NVLink arcs (direct meshes; pairs short of links on switched nodes)."""
    arcs, gpu_pos, switched = pic.arcs, pic.gpu_pos, pic.switched
    if not arcs:
        return
    span = max([abs(gpu_pos[a][0] - gpu_pos[b][0]) for (a, b) in arcs
                if a in gpu_pos and b in gpu_pos] + [1.0])
    for (a, b), c in sorted(arcs.items()):
        if a not in gpu_pos or b not in gpu_pos:
            continue
        (xa, ya), (xb, yb) = gpu_pos[a], gpu_pos[b]
        xa, xb = xa - 10 + 20 * (b % 2), xb - 10 + 20 * (a % 2)
        room = ARC_H if not switched else ARC_H // 2
        h = 12 + (room - 22) * abs(xb - xa) / span
        top = min(ya, yb)
        cxm, cym = (xa + xb) / 2, top - 2 * h
        sev = pic.faults.pairs.get((a, b))
        color = C_NV_DOWN if (switched and c < (pic.mode or 0)) else C_NV_OK
        wdt = 2.0 if switched else min(6.0, 1.0 + 0.8 * c)
        color, wdt = _sev_stroke(sev, color, wdt)
        pic.svg.add(f'<path d="M{_num(xa)},{_num(ya)} Q{_num(cxm)},{_num(cym)} '
                    f'{_num(xb)},{_num(yb)}" fill="none" stroke="{color}" '
                    f'stroke-width="{_num(wdt)}" stroke-opacity="0.85" '
                    f'class="{_cls("edge nvlink pair", sev)}" id="nvl-{a}-{b}">'
                    + _title([f"GPU{a}-GPU{b}: NV{c}"]) + "</path>")
        pic.svg.text(cxm, top - h + 4, f"NV{c}", size=9, anchor="middle", fill=color,
                     cls="nvlink-count")


def _draw_findings(svg: _Svg, report: "Report", y: float, width_all: float) -> float:
    """The report's errors and warnings (the first 40), listed under the picture."""
    shown = [f for f in report.findings if f.severity in SEV_RANK]
    if not shown:
        return y
    svg.text(MARGIN, y + 4, f"Findings ({len(shown)})", size=12, weight="bold")
    y += 20
    chars = int((width_all - 2 * MARGIN) // 6.3)
    for f in shown[:40]:
        sev = f.severity
        mark = "✗" if sev == "error" else "!"
        line = f"{mark} {f.code} · {f.subject} — {f.message}"
        svg.text(MARGIN, y + 4, _clip(line, chars), size=10,
                 fill=C_ERROR if sev == "error" else "#e65100", cls="finding")
        y += 15
    if len(shown) > 40:
        svg.text(MARGIN, y + 4, f"… {len(shown) - 40} more", size=10, fill="#616161")
        y += 15
    return y + 10


#: The legend's entries: (line or box, label, colour, width, dash or stroke).
_LEGEND: List[Tuple[str, str, str, float, str]] = [
    ("line", "NVLink, all links up", C_NV_OK, 3.0, ""),
    ("line", "NVLink, links down", C_NV_DOWN, 2.0, ""),
    ("line", "NVLink facts unknown", C_UNKNOWN, 1.5, "4 3"),
    ("line", "PCIe PIX (one switch)", C_PIX, 2.5, ""),
    ("line", "PCIe PXB (switches)", C_PXB, 1.6, ""),
    ("line", "PCIe PHB (host bridge)", C_PHB, 1.0, "4 3"),
    ("box", "port ACTIVE", C_PORT_UP, 1.0, "#546e7a"),
    ("box", "port DOWN", C_PORT_DOWN, 1.0, "#546e7a"),
    ("box", "error finding", "#ffffff", 3.0, C_ERROR),
    ("box", "warning finding", "#ffffff", 3.0, C_WARN),
]


def _draw_legend(svg: _Svg, y: float, width_all: float) -> float:
    items = _LEGEND
    svg.add('<g class="legend">')
    svg.text(MARGIN, y + 4, "Legend (NICs only NODE/SYS-near a GPU have no edge)", size=11,
             weight="bold")
    y += 14
    per = max(1, int((width_all - 2 * MARGIN) // 175))
    for i, (kind, label, color, wdt, extra) in enumerate(items):
        lx = MARGIN + (i % per) * 175
        ly = y + (i // per) * 20
        if kind == "line":
            svg.line(lx, ly + 6, lx + 26, ly + 6, stroke=color, sw=wdt, dash=extra)
        else:
            svg.rect(lx, ly, 26, 12, fill=color, stroke=extra, sw=wdt, rx=2)
        svg.text(lx + 32, ly + 10, label, size=10, fill="#424242")
    svg.add("</g>")
    return y + ((len(items) + per - 1) // per) * 20 + MARGIN


def _document(svg: _Svg, node_fault: Optional[str], head: str, width_all: float,
              y: float) -> str:
    """The SVG document: its header, a white page (framed where the node itself has a
    finding), the drawing."""
    body = _unique_ids(svg.parts)
    wide, high = _num(width_all), _num(y)
    head_xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<svg xmlns="http://www.w3.org/2000/svg" width="{wide}" height="{high}" '
                f'viewBox="0 0 {wide} {high}" font-family="{FONT}">\n'
                f'<title>{_esc(head)}</title>\n'
                f'<rect x="0" y="0" width="{wide}" height="{high}" fill="#ffffff"'
                + (f' stroke="{C_ERROR if node_fault == "error" else C_WARN}" '
                   f'stroke-width="4" class="node fault-{node_fault}"' if node_fault else "")
                + "/>\n")
    return head_xml + "\n".join(body) + "\n</svg>\n"
