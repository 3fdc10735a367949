"""A node's IMEX view for the cluster (:class:`.facts.NodeFacts`: :func:`view`) and a rack's
IMEX state from its trays' views (:func:`rack_state`).  The cross-tray check (:mod:`.imex`)
compares them; they live apart from it so that the facts module, which the check reads
through the racks, does not import the check.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from ...safe import ascii_int

#: Worse last.
ORDER = ("UP", "DEGRADED", "DOWN")


class ImexView(NamedTuple):
    """One tray's view of its IMEX domain."""

    state: Optional[str]
    #: this tray's own address among the members (None: not known)
    me: Optional[str]
    #: the members' addresses, in index order
    members: Tuple[str, ...]
    #: this tray's own row: (to address, state) of each connection not CONNECTED
    row: Tuple[Tuple[str, str], ...]


def view(topo: Any) -> Optional[ImexView]:
    """The node's IMEX view (``None``: no IMEX domain read)."""
    node = topo.imex
    if node is None or node.status != "ok" or node.members is None:
        return None
    addr = {m.index: m.address or f"#{m.index}" for m in node.members}
    me = node.member(node.self_index) if node.self_index is not None else None
    row: Tuple[Tuple[str, str], ...] = ()
    if me is not None:
        cells = [(ascii_int(k), v) for k, v in (me.connections or {}).items()]
        row = tuple(sorted((addr.get(k, f"#{k}"), v) for k, v in cells
                           if k is not None and v != "CONNECTED" and k != me.index))
    return ImexView(node.domain_state, addr.get(me.index) if me is not None else None,
                    tuple(addr[i] for i in sorted(addr)), row)


def rack_state(trays: List[Any]) -> Tuple[Optional[str], Dict[str, int]]:
    """The rack's IMEX state (``None``: unknown) and how many trays' views said each."""
    counts: Dict[str, int] = {}
    for t in trays:
        v = t[3].imex
        if v is not None and v.state is not None:
            counts[v.state] = counts.get(v.state, 0) + 1
    if not counts:
        return None, counts
    best = max(counts.values())
    return max((s for s, c in counts.items() if c == best),
               key=lambda s: ORDER.index(s) if s in ORDER else len(ORDER)), counts



__all__ = ["ImexView", "view", "rack_state", "ORDER"]
