"""A node's IMEX view for the cluster (:class:`.facts.NodeFacts`: :func:`view`) and a rack's
IMEX state from its trays' views (:func:`rack_state`).  The cross-tray check (:mod:`.imex`)
compares them; they live apart from it so that the facts module, which the check reads
through the racks, does not import the check.
"""

from __future__ import annotations

import datetime
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
    #: the tool's timestamp in seconds (None: not given or not read): views compared only
    #: when taken close together
    at: Optional[float] = None


#: Views taken more than this many seconds apart may differ because the domain changed.
SAME_TIME_S = 300.0


def seconds(stamp: Optional[str]) -> Optional[float]:
    """``5/12/2025 06:08:10.580`` as seconds (month first; day first where that is the only
    reading); ``None`` when it is not such a stamp."""
    if not stamp:
        return None
    date, _, clock = stamp.partition(" ")
    d = [ascii_int(x) for x in date.split("/")]
    hms = clock.split(":")
    t = [ascii_int(x) for x in hms[:2]] + [ascii_int(hms[2].split(".")[0]) if len(hms) == 3
                                            else None]
    if len(d) != 3 or None in d or None in t:
        return None
    mo, day, year = d
    if mo is not None and mo > 12:
        mo, day = day, mo
    try:
        when = datetime.datetime(year or 0, mo or 0, day or 0, t[0] or 0, t[1] or 0,
                                 t[2] or 0)
    except ValueError:
        return None
    return (when - datetime.datetime(1970, 1, 1)).total_seconds()


def together(views: List["ImexView"]) -> bool:
    """Whether every view's time is known and all lie within :data:`SAME_TIME_S`."""
    times = [v.at for v in views]
    known = [t for t in times if t is not None]
    return len(known) == len(times) and bool(known) and max(known) - min(known) <= SAME_TIME_S


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
                    tuple(addr[i] for i in sorted(addr)), row, seconds(node.timestamp))


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


__all__ = ["ImexView", "view", "rack_state", "seconds", "together", "ORDER", "SAME_TIME_S"]
