"""The SVG writer and the drawing helpers of the picture: colours, text, strokes, the text
of a GPU box and of a NIC box.  No attribute holds data as it is: ids go through
:func:`_id`, text through :func:`nvtopo.safe.xml`."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ...safe import printable, xml
from .arrange import GpuLink

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

FONT = "DejaVu Sans, Verdana, Arial, sans-serif"


def _esc(text: Any) -> str:
    """Text for an SVG text node (:func:`nvtopo.safe.xml`).  No attribute holds data as it
    is: ids go through :func:`_id`."""
    return xml(text)


def _id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def _unique_ids(parts: List[str]) -> List[str]:
    """``parts`` with every ``id`` attribute made unique: :func:`_id` maps names that differ
    only in characters outside ``[A-Za-z0-9_.-]`` (hostile or odd NIC names) to one id, and an
    SVG whose ids repeat is not valid.  A repeated id gets ``-2``, ``-3`` ... appended.  (A
    scan with ``str.find``: linear in the text.)"""
    seen: Dict[str, int] = {}
    out = []
    for part in parts:
        if ' id="' not in part:
            out.append(part)
            continue
        pieces, i = [], 0
        while True:
            j = part.find(' id="', i)
            if j < 0:
                break
            k = part.find('"', j + 5)
            if k < 0:
                break
            ident = part[j + 5:k]
            n = seen.get(ident, 0) + 1
            seen[ident] = n
            if n > 1:
                new = f"{ident}-{n}"
                while new in seen:
                    n += 1
                    new = f"{ident}-{n}"
                seen[ident] = n
                seen[new] = 1
                ident = new
            pieces.append(part[i:j + 5] + ident)
            i = k
        pieces.append(part[i:])
        out.append("".join(pieces))
    return out


def _num(x: float) -> str:
    r = round(x, 1)
    return str(int(r)) if r == int(r) else str(r)


def _clip(text: str, n: int) -> str:
    """``text`` made printable, then cut to ``n`` characters (what is drawn is counted)."""
    text = printable(text)
    return text if len(text) <= n else text[: max(1, n - 1)] + "…"


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
    c2c = g.nvml.c2c if g.nvml is not None else None
    if c2c is not None:  # Grace superchips: the CPU link before PCIe (three lines fit)
        lines.append("C2C off" if c2c.enabled is False else
                     "C2C ?" if c2c.link_count is None else
                     "C2C 0 links" if c2c.link_count == 0 else
                     f"C2C {c2c.links_active if c2c.links_active is not None else '?'}"
                     f"/{c2c.link_count}")
    link = g.sysfs.link if g.sysfs is not None else None
    pcie = g.nvml.pcie if g.nvml is not None else None
    gen = width = None
    if link is not None:
        gen, width = link.current_gen, link.current_width
    elif pcie is not None:
        gen, width = pcie.current_gen, pcie.current_width
    if gen or width:
        lines.append(f"PCIe Gen{gen or '?'} x{width or '?'}")
    return lines[:3]


def _port_summary(n: Any) -> Tuple[str, str]:
    """(text, fill) for a NIC box: its first port's state and rate."""
    ports = n.sysfs.ports if n.sysfs is not None else []
    if not ports:
        return "", C_PORT_OTHER
    states = [str(p.state or "?") for p in ports]
    if all(s == "ACTIVE" for s in states):
        p = ports[0]
        layer = {"InfiniBand": "IB", "Ethernet": "RoCE"}.get(str(p.link_layer),
                                                            str(p.link_layer or ""))
        rate = p.rate_gbps
        rate_s = f" {_num(rate)}G" if isinstance(rate, (int, float)) else ""
        return f"{layer}{rate_s}".strip(), C_PORT_UP
    bad = next(s for s in states if s != "ACTIVE")
    return bad, C_PORT_DOWN if bad in ("DOWN", "INIT", "ARMED") else C_PORT_OTHER
