"""The WireGuard mesh as ``nvtopo show`` prints it: one row per WireGuard interface, under the
NICs (``docs/mesh.md``).  Drawn through :mod:`.layout` (fits 80 columns); every value from the
input is escaped (:mod:`.cells`).  Decides nothing: ``check`` says what is wrong.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from rich.table import Table
from rich.text import Text

from .cells import text


def _underlay(dev: Any, links: Any) -> Text:
    if dev is None or dev.underlay is None:
        return Text("unknown", style="dim")
    under = links.get(dev.underlay)
    parts = [dev.underlay]
    if under is not None and under.mtu is not None:
        parts.append(f"MTU {under.mtu}")
    if under is not None and under.numa_node is not None:
        parts.append(f"NUMA {under.numa_node}")
    by = "route" if (dev.underlay_by or "").startswith("the route") else "default route"
    return text(", ".join(str(p) for p in parts) + f" ({by})")


def _peers(dev: Any, captured: Optional[int]) -> Text:
    if dev is None:
        return Text("not read", style="dim")
    if dev.status != "ok" or dev.peers is None:
        return text(f"not read ({dev.status})", style="dim")
    stale = [p for p in dev.peers if p.stale_at(captured)]
    unknown = [p for p in dev.peers if p.stale_at(captured) is None]
    live = len(dev.peers) - len(stale) - len(unknown)
    out = Text(f"{len(dev.peers)} ({live} live")
    if stale:
        out.append(f", {len(stale)} stale", style="red")
    if unknown:
        out.append(f", {len(unknown)} unknown", style="dim")
    out.append(")")
    return out


def _counters(link: Any) -> Text:
    c = (link.counters if link is not None else None) or {}
    if not c:
        return Text("unknown", style="dim")
    errs = sum(v or 0 for k, v in c.items() if k.endswith("errors"))
    drops = sum(v or 0 for k, v in c.items() if k.endswith("dropped"))
    return Text(f"{errs} / {drops}", style="red" if errs or drops else "")


def _rows(topo: Any) -> List[Tuple[Text, Text, Text, Text, Text]]:
    """One row per WireGuard interface: name, MTU, underlay, peers, errors / drops."""
    links = (topo.sysfs.net if topo.sysfs is not None else None) or {}
    wgn = topo.wireguard
    names: List[str] = sorted({n for n, link in links.items() if link.wireguard}
                              | set(wgn.interfaces if wgn is not None else ()))
    captured = wgn.captured_at if wgn is not None else None
    rows = []
    for name in names:
        link = links.get(name)
        dev = wgn.interfaces.get(name) if wgn is not None else None
        mtu = text(link.mtu) if link is not None and link.mtu is not None else \
            Text("unknown", style="dim")
        rows.append((text(name), mtu, _underlay(dev, links), _peers(dev, captured),
                     _counters(link)))
    return rows


def mesh_table(topo: Any) -> Optional[Table]:
    """The table, or ``None`` where the node has no WireGuard interface."""
    rows = _rows(topo)
    if not rows:
        return None
    table = Table(title="Mesh (WireGuard)", title_justify="left", title_style="bold",
                  box=None, pad_edge=False, padding=(0, 2, 0, 0), show_edge=False)
    table.add_column("interface", style="bold", no_wrap=True)
    table.add_column("MTU", no_wrap=True)
    table.add_column("underlay")
    table.add_column("peers")
    table.add_column("errors / drops", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def mesh_lines(topo: Any) -> List[str]:
    """One plain line per WireGuard interface (the SVG picture's mesh note): printable text
    the caller escapes for its output (XML)."""
    return [f"WireGuard {n.plain} · MTU {m.plain} · underlay {u.plain} · peers {p.plain} · "
            f"errors/drops {c.plain}" for n, m, u, p, c in _rows(topo)]


__all__ = ["mesh_table", "mesh_lines"]
