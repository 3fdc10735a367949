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
  are outlined red, in warnings amber (from the findings' typed subjects); GPUs the report
  says are missing are drawn as dashed placeholders; the findings are listed below the
  picture; a legend closes it.

Public API: ``render(topo, report=None) -> str`` (``report``: the
:class:`nvtopo.checks.Report` of ``nvtopo check``, or ``None`` for ``nvtopo show``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..model import Topology, path_kind, path_rank, pci_bdf
from ..safe import ascii_int, is_ascii_digits, printable, xml

if TYPE_CHECKING:  # pragma: no cover
    from ..checks import Report

# --- geometry and colours ---------------------------------------------------------------

MARGIN = 20
GPU_W, GPU_H = 140, 70
NIC_W, NIC_H, NIC_PITCH = 84, 40, 92
CELL_MIN = GPU_W + 20
FAN_H = 50  # room between the GPU row and the NIC row for the GPU-NIC edges
ARC_H = 90  # room above the GPUs for NVLink arcs of a direct mesh
SW_W, SW_H, SW_PITCH = 110, 40, 118
MAX_ROW_W = 1960
FONT = "DejaVu Sans, Verdana, Arial, sans-serif"

C_ERROR = "#d32f2f"
C_WARN = "#f9a825"
C_NV_OK = "#2e7d32"
C_NV_DOWN = "#c62828"
C_UNKNOWN = "#9e9e9e"
C_PIX = "#1565c0"
C_PXB = "#42a5f5"
C_PHB = "#90a4ae"
C_PORT_UP = "#e8f5e9"
C_PORT_DOWN = "#ffebee"
C_PORT_OTHER = "#f5f5f5"
C_GPU_FILL = "#e3f2fd"
C_NUMA_FILL = "#fafafa"

_SEV_RANK = {"error": 2, "warning": 1}


def _esc(text: Any) -> str:
    """Text for an SVG text node (:func:`nvtopo.safe.xml`).  No attribute holds data as it
    is: ids go through :func:`_id`."""
    return xml(text)


def _id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def _num(x: float) -> str:
    r = round(x, 1)
    return str(int(r)) if r == int(r) else str(r)


def _clip(text: str, n: int) -> str:
    """``text`` made printable, then cut to ``n`` characters (what is drawn is counted)."""
    text = printable(text)
    return text if len(text) <= n else text[: max(1, n - 1)] + "…"


# --- what is faulty ------------------------------------------------------------------------
#
# From the findings' typed subjects; nothing is parsed back from a subject's text: a GPU
# subject marks that GPU, a link its GPU and its NVLink edge, a pair the arc and both GPUs, a
# GPU-NIC subject the PCIe edge and both ends, a port or a NIC the NIC's box, an NVSwitch its
# box.  A subject the picture does not draw (a NIC not in the model, the node, a source's own
# words) marks the frame.


@dataclass
class Faults:
    """Severity per drawn element, from the check's findings."""

    gpus: Dict[int, str] = field(default_factory=dict)
    nics: Dict[str, str] = field(default_factory=dict)
    pairs: Dict[Tuple[int, int], str] = field(default_factory=dict)
    gpu_nic: Dict[Tuple[int, str], str] = field(default_factory=dict)
    gpu_links: Dict[int, str] = field(default_factory=dict)
    switches: Dict[str, str] = field(default_factory=dict)
    node: Optional[str] = None
    #: GPUs the report says are missing that the model does not hold (drawn as placeholders).
    missing: List[int] = field(default_factory=list)
    messages: Dict[str, List[str]] = field(default_factory=dict)

    @staticmethod
    def _put(d: Dict[Any, str], key: Any, sev: str) -> None:
        if _SEV_RANK[sev] > _SEV_RANK.get(d.get(key, ""), 0):
            d[key] = sev


def faults_of(report: Optional["Report"], topo: Topology,
              switch_ids: Mapping[str, str]) -> Faults:
    """Which drawn elements the report's error and warning findings name.

    ``switch_ids``: NVSwitch bus id (as NVML and the short form write it) -> element id."""
    out = Faults()
    if report is None:
        return out
    # a subject names a NIC by its device name or, from a topo text, by its matrix label
    label_to_name = {n.name: n.name for n in topo.nics}
    label_to_name.update({n.label: n.name for n in topo.nics})
    have = {g.index for g in topo.gpus}
    out.missing = [i for i in report.missing_gpus if i not in have]
    missing = set(out.missing)
    for f in report.findings:
        sev = f.severity
        if sev not in _SEV_RANK:
            continue
        s = f.subject
        note = f"{sev}: {f.code}: {f.message or ''}"
        if s.kind in ("gpu", "link") and s.gpu is not None:
            idx = s.gpu
            if idx in missing:
                out.messages.setdefault(f"missing-{idx}", []).append(note)
                continue
            Faults._put(out.gpus, idx, sev)
            out.messages.setdefault(f"gpu-{idx}", []).append(note)
            if s.kind == "link" or f.code.startswith("nvlink."):
                Faults._put(out.gpu_links, idx, sev)
        elif s.kind == "pair" and s.gpu is not None and s.peer is not None:
            a, b = sorted((s.gpu, s.peer))
            Faults._put(out.pairs, (a, b), sev)
            for i in (a, b):
                Faults._put(out.gpus, i, sev)
                out.messages.setdefault(f"gpu-{i}", []).append(note)
        elif s.kind == "gpu_nic" and s.gpu is not None and s.name in label_to_name:
            idx, nic = s.gpu, label_to_name[s.name]
            Faults._put(out.gpu_nic, (idx, nic), sev)
            Faults._put(out.gpus, idx, sev)
            Faults._put(out.nics, nic, sev)
            out.messages.setdefault(f"gpu-{idx}", []).append(note)
            out.messages.setdefault(f"nic-{nic}", []).append(note)
        elif s.kind in ("port", "nic") and s.name in label_to_name:
            nic = label_to_name[s.name]
            Faults._put(out.nics, nic, sev)
            out.messages.setdefault(f"nic-{nic}", []).append(note)
        elif s.kind == "switch" and s.name in switch_ids:
            Faults._put(out.switches, switch_ids[s.name], sev)
            out.messages.setdefault(f"sw-{switch_ids[s.name]}", []).append(note)
        elif _SEV_RANK[sev] > _SEV_RANK.get(out.node or "", 0):
            out.node = sev
    return out


# --- the model, arranged ------------------------------------------------------------------


@dataclass
class Cell:
    gpu: Optional[Any]  # a GPU, or None for the NICs of a NUMA node near no GPU
    nics: List[Tuple[Any, Optional[str]]]  # (NIC, path token)
    missing: Optional[int] = None  # a GPU the check reports missing (placeholder)
    x: float = 0.0
    w: float = 0.0


@dataclass
class Group:
    key: str
    title: str
    cells: List[Cell]
    x: float = 0.0
    w: float = 0.0


def _gpu_numa(g: Any) -> str:
    if g.numa_affinity is not None:
        return str(g.numa_affinity)
    sysfs = g.extra.get("sysfs") if isinstance(g.extra.get("sysfs"), dict) else {}
    node = sysfs.get("numa_node")
    return str(node) if isinstance(node, int) and node >= 0 else ""


MISSING = "missing"


def _numa_sort(key: str) -> Tuple[int, int, str]:
    if key == MISSING:
        return (3, 0, "")
    if key == "":
        return (2, 0, "")
    num = ascii_int(key) if is_ascii_digits(key) else None
    return (0, num, "") if num is not None else (1, 0, key)


def _arrange(topo: Topology, missing: Sequence[int]) -> List[Group]:
    """The NUMA boxes, in order; ``missing``: GPUs drawn as placeholders (a box of their own)."""
    gpus = sorted(topo.gpus, key=lambda g: g.index)
    matrix = topo.matrix
    idx = {d: i for i, d in enumerate(matrix.devices)} if matrix is not None else {}

    def token(a: str, bs: Tuple[str, ...]) -> Optional[str]:
        if matrix is None or a not in idx:
            return None
        for b in bs:
            j = idx.get(b)
            if j is None:
                continue
            tok = matrix.cells[idx[a]][j] or matrix.cells[j][idx[a]]
            if tok is not None:
                return tok
        return None

    cells: Dict[int, Cell] = {g.index: Cell(gpu=g, nics=[]) for g in gpus}
    loose: Dict[str, List[Tuple[Any, Optional[str]]]] = {}
    for n in topo.nics:
        best: Optional[Tuple[int, int, str]] = None
        for g in gpus:
            tok = token(g.label, (n.label, n.name))
            rank = path_rank(tok)
            if rank is None or rank == 0 or tok is None:
                continue
            if best is None or rank < best[0]:
                best = (rank, g.index, tok)
        if best is not None and path_kind(best[2]) in ("PIX", "PXB", "PHB"):
            cells[best[1]].nics.append((n, best[2]))
            continue
        if isinstance(n.numa_node, int) and n.numa_node >= 0:
            key = str(n.numa_node)
        elif best is not None and path_kind(best[2]) == "NODE":
            key = _gpu_numa(cells[best[1]].gpu)
        else:
            key = ""
        loose.setdefault(key, []).append((n, best[2] if best else None))
    by_numa: Dict[str, List[Cell]] = {}
    for g in gpus:
        by_numa.setdefault(_gpu_numa(g), []).append(cells[g.index])
    for key, nics in loose.items():
        by_numa.setdefault(key, []).append(Cell(gpu=None, nics=nics))
    if missing:
        by_numa[MISSING] = [Cell(gpu=None, nics=[], missing=i) for i in missing]
    cpus: Dict[str, str] = {}
    sysfs = topo.extra.get("sysfs") if isinstance(topo.extra.get("sysfs"), dict) else {}
    for nd in ((sysfs.get("numa") or {}).get("nodes") or []):
        if isinstance(nd, dict) and nd.get("node") is not None and nd.get("cpulist"):
            cpus[str(nd["node"])] = str(nd["cpulist"])
    for g in gpus:
        if g.cpu_affinity and _gpu_numa(g) not in cpus:
            cpus[_gpu_numa(g)] = g.cpu_affinity
    groups: List[Group] = []
    for key in sorted(by_numa, key=_numa_sort):
        title = f"NUMA {key}" if key else "NUMA unknown"
        if key == MISSING:
            title = "Missing GPUs"
        if key in cpus:
            title += f" · CPUs {cpus[key]}"
        chunk: List[Cell] = []
        width = 16.0
        part = 0
        for c in by_numa[key]:
            c.w = max(CELL_MIN, len(c.nics) * NIC_PITCH + 10)
            if chunk and width + c.w > MAX_ROW_W:
                groups.append(Group(key, title if part == 0 else f"NUMA {key or '?'} (cont.)",
                                    chunk))
                chunk, width, part = [], 16.0, part + 1
            chunk.append(c)
            width += c.w
        if chunk:
            groups.append(Group(key, title if part == 0 else f"NUMA {key or '?'} (cont.)",
                                chunk))
    return groups


# --- NVLink facts ---------------------------------------------------------------------------


@dataclass
class GpuLink:
    active: Optional[int]
    should: Optional[int]  # links that should be up (active + down)


def _gpu_links(topo: Topology) -> Dict[int, GpuLink]:
    out: Dict[int, GpuLink] = {}
    for g in topo.gpus:
        rec = g.extra.get("nvml")
        nv = rec.get("nvlink") if isinstance(rec, dict) else None
        if not isinstance(nv, dict) or not isinstance(nv.get("active"), int):
            continue
        links = [x for x in nv.get("links") or [] if isinstance(x, dict)]
        should = sum(1 for x in links if x.get("state") in ("active", "down")) if links \
            else nv.get("total")
        out[g.index] = GpuLink(active=nv["active"], should=should)
    return out


def _switches(topo: Topology) -> List[str]:
    nvml = topo.extra.get("nvml") if isinstance(topo.extra.get("nvml"), dict) else {}
    sw = list((nvml.get("switches") or {}).keys())
    return sorted(sw, key=lambda b: (pci_bdf(b) or (1 << 30, 0, 0, 0), b))


def _short_bus(bus: str) -> str:
    bdf = pci_bdf(bus)
    if bdf is None:
        return bus
    dom, b, d, fn = bdf
    s = f"{b:02X}:{d:02X}.{fn}"
    return s if dom == 0 else f"{dom:04X}:{s}"


# --- drawing --------------------------------------------------------------------------------


class _Svg:
    def __init__(self) -> None:
        self.parts: List[str] = []

    def add(self, s: str) -> None:
        self.parts.append(s)

    def rect(self, x: float, y: float, w: float, h: float, *, fill: str, stroke: str,
             sw: float = 1.0, rx: float = 6, dash: str = "", extra: str = "") -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}" '
                 f'rx="{_num(rx)}" fill="{fill}" stroke="{stroke}" stroke-width="{_num(sw)}"'
                 f'{d}{extra}/>')

    def text(self, x: float, y: float, s: str, *, size: float = 11, weight: str = "normal",
             fill: str = "#212121", anchor: str = "start", cls: str = "") -> None:
        c = f' class="{cls}"' if cls else ""
        w = ' font-weight="bold"' if weight == "bold" else ""
        self.add(f'<text x="{_num(x)}" y="{_num(y)}" font-size="{_num(size)}"{w} '
                 f'fill="{fill}" text-anchor="{anchor}"{c}>{_esc(s)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, *, stroke: str,
             sw: float = 1.0, dash: str = "", extra: str = "") -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" '
                 f'stroke="{stroke}" stroke-width="{_num(sw)}"{d}{extra}/>')


def _sev_stroke(sev: Optional[str], default: str, width: float) -> Tuple[str, float]:
    if sev == "error":
        return C_ERROR, 3.0
    if sev == "warning":
        return C_WARN, 3.0
    return default, width


def _cls(base: str, sev: Optional[str]) -> str:
    return f"{base} fault-{sev}" if sev else base


def _title(parts: List[str]) -> str:
    # one line per part: each part is escaped (a newline in data is shown as \\x0a), the
    # separators stay line feeds
    return f"<title>{chr(10).join(_esc(p) for p in parts)}</title>" if parts else ""


def _gpu_lines(g: Any, gl: Optional[GpuLink]) -> List[str]:
    name = (g.name or "").replace("NVIDIA ", "")
    lines = [_clip(name, 22)] if name else []
    if gl is not None and gl.should is not None:
        lines.append(f"NVLink {gl.active}/{gl.should}")
    sysfs = g.extra.get("sysfs") if isinstance(g.extra.get("sysfs"), dict) else {}
    link = sysfs.get("link") if isinstance(sysfs.get("link"), dict) else None
    nvml = g.extra.get("nvml") if isinstance(g.extra.get("nvml"), dict) else {}
    pcie = nvml.get("pcie") if isinstance(nvml.get("pcie"), dict) else None
    gen = width = None
    if link:
        gen, width = link.get("current_gen"), link.get("current_width")
    elif pcie:
        gen, width = pcie.get("current_gen"), pcie.get("current_width")
    if gen or width:
        lines.append(f"PCIe Gen{gen or '?'} x{width or '?'}")
    return lines[:3]


def _port_summary(n: Any) -> Tuple[str, str]:
    """(text, fill) for a NIC box: its first port's state and rate."""
    sysfs = n.extra.get("sysfs") if isinstance(n.extra.get("sysfs"), dict) else {}
    ports = [p for p in sysfs.get("ports") or [] if isinstance(p, dict)]
    if not ports:
        return "", C_PORT_OTHER
    states = [str(p.get("state") or "?") for p in ports]
    if all(s == "ACTIVE" for s in states):
        p = ports[0]
        layer = {"InfiniBand": "IB", "Ethernet": "RoCE"}.get(str(p.get("link_layer")),
                                                            str(p.get("link_layer") or ""))
        rate = p.get("rate_gbps")
        rate_s = f" {_num(rate)}G" if isinstance(rate, (int, float)) else ""
        return f"{layer}{rate_s}".strip(), C_PORT_UP
    bad = next(s for s in states if s != "ACTIVE")
    return bad, C_PORT_DOWN if bad in ("DOWN", "INIT", "ARMED") else C_PORT_OTHER


def render(topo: Topology, report: Optional["Report"] = None) -> str:
    """The topology picture as an SVG document (text); with ``report``, its findings marked."""
    switches = _switches(topo)
    switch_ids = {b: _id(_short_bus(b)) for b in switches}
    switch_ids.update({_short_bus(b): _id(_short_bus(b)) for b in switches})
    faults = faults_of(report, topo, switch_ids)
    groups = _arrange(topo, faults.missing)
    links = _gpu_links(topo)
    present = sorted(g.index for g in topo.gpus)
    nvml = topo.extra.get("nvml") if isinstance(topo.extra.get("nvml"), dict) else {}
    pairs = {(min(p.a, p.b), max(p.a, p.b)): p.count for p in topo.nvlinks if p.a != p.b}
    counts = Counter(c for c in pairs.values() if c > 0)
    mode = counts.most_common(1)[0][0] if counts else None
    complete = len(present) > 4 and all(
        pairs.get((a, b), 0) > 0 for i, a in enumerate(present) for b in present[i + 1:])
    switched = bool(switches) or nvml.get("nvswitch") is True or (not links and complete)

    # which pairs get an arc
    arcs: Dict[Tuple[int, int], int] = {}
    if not switched:
        arcs = {k: c for k, c in pairs.items() if c > 0}
    else:
        for (a, b), c in pairs.items():
            if mode is None or c >= mode:
                continue
            la, lb = links.get(a), links.get(b)
            if la is not None and lb is not None and c >= min(la.active or 0, lb.active or 0):
                continue  # the GPU edge (17/18) already says it
            arcs[(a, b)] = c
    for k in faults.pairs:
        if k not in arcs and k[0] in present and k[1] in present:
            arcs[k] = pairs.get(k, 0)

    # -- rows of groups
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
    left = MARGIN + (24 if switched else 0)
    row_w = [sum(g.w for g in r) + 16 * (len(r) - 1) for r in rows]

    svg = _Svg()
    y = MARGIN
    # -- title
    host = topo.host.get("hostname") or topo.origin.get("file") or "node"
    head = f"nvtopo · {host}"
    failed = report is not None and report.verdict == "fail"
    if report is not None:
        n = report.counts
        head += (f" · layout {report.layout_name} · {'FAIL' if failed else 'PASS'}: "
                 f"{n['error']} error(s), {n['warning']} warning(s)")
    numas = sorted({grp.key for grp in groups if grp.key and grp.key != MISSING},
                   key=_numa_sort)
    sub = (f"{len(topo.gpus)} GPUs · {len(topo.nics)} NICs · "
           f"{len(switches)} NVSwitches · " if switches else
           f"{len(topo.gpus)} GPUs · {len(topo.nics)} NICs · ")
    sub += f"{len(numas)} NUMA nodes · sources: {', '.join(topo.sources) or 'none'}"
    svg.text(MARGIN, y + 16, head, size=16, weight="bold",
             fill=C_ERROR if faults.node == "error" or failed else "#212121", cls="title")
    svg.text(MARGIN, y + 34, sub, size=11, fill="#616161")
    y += 50

    # -- switch bar
    bus_color = C_NV_OK
    top_of_trunk = y
    if switched:
        per_line = max(1, int((max(row_w + [0]) or MAX_ROW_W) // SW_PITCH)) if rows else 8
        per_line = max(per_line, 8)
        if switches:
            for i, bus in enumerate(switches):
                sx = left + (i % per_line) * SW_PITCH
                sy = y + (i // per_line) * (SW_H + 8)
                sid = switch_ids[bus]
                sev = faults.switches.get(sid)
                stroke, sw_ = _sev_stroke(sev, "#1b5e20", 1.2)
                per_gpu = (nvml.get("switches") or {}).get(bus) or {}
                tip = [f"NVSwitch {bus}"] + [f"GPU{k}: {v} links" for k, v in
                                             sorted(per_gpu.items(), key=lambda kv:
                                                    ascii_int(str(kv[0])) or 0
                                                    if is_ascii_digits(str(kv[0])) else 0)]
                tip += faults.messages.get(f"sw-{sid}", [])
                svg.add(f'<g id="nvswitch-{sid}" class="{_cls("nvswitch", sev)}">'
                        + _title(tip))
                svg.rect(sx, sy, SW_W, SW_H, fill="#c8e6c9", stroke=stroke, sw=sw_, rx=4)
                svg.text(sx + SW_W / 2, sy + 16, "NVSwitch", size=10, weight="bold",
                         anchor="middle")
                svg.text(sx + SW_W / 2, sy + 31, _short_bus(bus), size=10, anchor="middle",
                         cls="label")
                svg.add("</g>")
            n_lines = (len(switches) + per_line - 1) // per_line
            y += n_lines * (SW_H + 8) + 6
            for i in range(len(switches)):
                if i // per_line == n_lines - 1:
                    sx = left + (i % per_line) * SW_PITCH + SW_W / 2
                    svg.line(sx, y - 14, sx, y - 4, stroke=bus_color, sw=3)
            svg.line(left - 12, y - 4, left + (min(len(switches), per_line) - 1) * SW_PITCH
                     + SW_W / 2, y - 4, stroke=bus_color, sw=5, extra=' class="nvswitch-bus"')
        else:
            label = (f"NVLink all-to-all · NV{mode} every pair (NVSwitches not in the input)"
                     if mode else "NVSwitch fabric (switches not in the input)")
            svg.text(left, y + 14, label, size=11, weight="bold", fill=C_NV_OK, cls="fabric")
            y += 22
        top_of_trunk = y

    # -- rows
    bus_ys: List[float] = []
    gpu_pos: Dict[int, Tuple[float, float]] = {}  # index -> (center x, top y)
    for r, row in enumerate(rows):
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
            svg.line(left - 12, bus_y, left + row_w[r], bus_y, stroke=bus_color, sw=5,
                     extra=' class="nvswitch-bus"')
        x = float(left)
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
                    g = cell.gpu
                    gpu_pos[g.index] = (mid, gpu_top)
                    sev = faults.gpus.get(g.index)
                    stroke, sw_ = _sev_stroke(sev, "#1565c0", 1.2)
                    gl = links.get(g.index)
                    tip = [f"{g.label} {g.name or ''}".strip()]
                    if g.pci_bus_id:
                        tip.append(f"PCI {g.pci_bus_id}")
                    if g.uuid:
                        tip.append(g.uuid)
                    tip += faults.messages.get(f"gpu-{g.index}", [])
                    svg.add(f'<g id="gpu-{g.index}" class="{_cls("gpu", sev)}">' + _title(tip))
                    svg.rect(mid - GPU_W / 2, gpu_top, GPU_W, GPU_H, fill=C_GPU_FILL,
                             stroke=stroke, sw=sw_)
                    svg.text(mid, gpu_top + 18, g.label, size=13, weight="bold",
                             anchor="middle", cls="label")
                    for k, line in enumerate(_gpu_lines(g, gl)):
                        svg.text(mid, gpu_top + 34 + 14 * k, line, size=10, anchor="middle",
                                 fill="#424242")
                    svg.add("</g>")
                elif cell.missing is not None:
                    i = cell.missing
                    tip = [f"GPU{i}: missing"] + faults.messages.get(f"missing-{i}", [])
                    svg.add(f'<g id="gpu-missing-{i}" class="gpu missing fault-error">'
                            + _title(tip))
                    svg.rect(mid - GPU_W / 2, gpu_top, GPU_W, GPU_H, fill="#ffffff",
                             stroke=C_ERROR, sw=2.5, dash="6 4")
                    svg.text(mid, gpu_top + 30, f"GPU{i}", size=13, weight="bold",
                             anchor="middle", fill=C_ERROR, cls="label")
                    svg.text(mid, gpu_top + 48, "missing", size=11, anchor="middle",
                             fill=C_ERROR)
                    svg.add("</g>")
                # NICs of the cell
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
                cx += cell.w
            x += grp.w + 16
        # GPU -> switch bus edges
        if switched:
            for grp in row:
                for cell in grp.cells:
                    if cell.gpu is None:
                        continue
                    gi = cell.gpu.index
                    mid, top = gpu_pos[gi]
                    gl = links.get(gi)
                    sev = faults.gpu_links.get(gi)
                    if gl is None or gl.should is None:
                        color, wdt, dash = C_UNKNOWN, 1.5, "4 3"
                        own = [c for (a, b), c in pairs.items() if gi in (a, b) and c > 0]
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
                    svg.line(mid, bus_y, mid, top, stroke=color, sw=wdt, dash=dash,
                             extra=f' class="{_cls("edge nvlink", sev)}" id="nvl-gpu-{gi}"')
                    svg.text(mid + 5, top - 8, label, size=10, fill=color, cls="nvlink-count")
        # arcs between GPU pairs of this row and to other rows
        y = grp_bottom + 24
    if switched and bus_ys:
        svg.line(left - 12, top_of_trunk - 4, left - 12, bus_ys[-1], stroke=bus_color, sw=5,
                 extra=' class="nvswitch-bus"')
    # -- NVLink arcs (direct meshes; pairs short of links on switched nodes)
    if arcs:
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
            sev = faults.pairs.get((a, b))
            color = C_NV_DOWN if (switched and c < (mode or 0)) else C_NV_OK
            wdt = 2.0 if switched else min(6.0, 1.0 + 0.8 * c)
            color, wdt = _sev_stroke(sev, color, wdt)
            svg.add(f'<path d="M{_num(xa)},{_num(ya)} Q{_num(cxm)},{_num(cym)} '
                    f'{_num(xb)},{_num(yb)}" fill="none" stroke="{color}" '
                    f'stroke-width="{_num(wdt)}" stroke-opacity="0.85" '
                    f'class="{_cls("edge nvlink pair", sev)}" id="nvl-{a}-{b}">'
                    + _title([f"GPU{a}-GPU{b}: NV{c}"]) + "</path>")
            svg.text(cxm, top - h + 4, f"NV{c}", size=9, anchor="middle", fill=color,
                     cls="nvlink-count")

    # -- findings list
    width_all = max([left + w for w in row_w] + [700.0]) + MARGIN
    if switches:
        per_line = max(8, int((max(row_w + [0]) or MAX_ROW_W) // SW_PITCH))
        width_all = max(width_all, left + min(len(switches), per_line) * SW_PITCH + MARGIN)
    if report is not None:
        shown = [f for f in report.findings if f.severity in _SEV_RANK]
        if shown:
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
            y += 10

    # -- legend
    items: List[Tuple[str, str, str, float, str]] = [
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
    y += ((len(items) + per - 1) // per) * 20 + MARGIN
    body = svg.parts
    w, h = _num(width_all), _num(y)
    head_xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
                f'viewBox="0 0 {w} {h}" font-family="{FONT}">\n'
                f'<title>{_esc(head)}</title>\n'
                f'<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"'
                + (f' stroke="{C_ERROR if faults.node == "error" else C_WARN}" '
                   f'stroke-width="4" class="node fault-{faults.node}"' if faults.node else "")
                + "/>\n")
    return head_xml + "\n".join(body) + "\n</svg>\n"
