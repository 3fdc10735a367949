"""The legend printed under a ``topo -m`` matrix (``PIX = Connection traversing at most a
single PCIe bridge``): :func:`legend_of`, and the patterns that tell a legend or NIC Legend
line."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

NIC_MAP_RE = re.compile(r"^\s*(NIC[0-9]+)\s*:\s*(\S+)\s*$")
LEGEND_RE = re.compile(r"^\s*(X|SOC|SYS|NODE|PHB|PXB|PIX|NV#|OK|CNS|GNS|TNS|NS|DR|U)\s*=\s*(.*)$")
#: Longest legend description kept (wrapped lines are joined up to this).
MAX_LEGEND_CHARS = 1024


def legend_of(lines: List[str]) -> Tuple[Dict[str, str], Optional[str]]:
    """The legend under a matrix (``PIX = ...``; wrapped lines joined, each entry at most
    :data:`MAX_LEGEND_CHARS`), and its style: ``soc``, ``transitional``, ``p2p`` or
    ``modern`` (None: no legend)."""
    parts: Dict[str, List[str]] = {}  # wrapped lines joined at the end (no quadratic +=)
    size: Dict[str, int] = {}
    last = None
    for line in lines:
        m = LEGEND_RE.match(line.rstrip())
        if m:
            last = m.group(1)
            parts[last] = [m.group(2)]
            size[last] = len(m.group(2))
        elif last and line.strip() and line[:1].isspace() and "=" not in line \
                and not NIC_MAP_RE.match(line) and not line.strip().endswith(":"):
            if size[last] <= MAX_LEGEND_CHARS:  # a wrapped legend line
                parts[last].append(line.strip())
            size[last] += len(line)
        else:
            last = None if not line.strip() or line.strip().endswith(":") else last
    legend: Dict[str, str] = {}
    for key, words in parts.items():
        text = " ".join(words)
        cut = size[key] > MAX_LEGEND_CHARS or len(text) > MAX_LEGEND_CHARS
        legend[key] = text[:MAX_LEGEND_CHARS] + " …" if cut else text
    if not legend:
        return legend, None
    if "SOC" in legend:
        style = "soc"
    elif "switch" in (legend.get("PIX", "") + legend.get("PXB", "")).lower():
        style = "transitional"
    elif "OK" in legend:
        style = "p2p"
    else:
        style = "modern"
    return legend, style
