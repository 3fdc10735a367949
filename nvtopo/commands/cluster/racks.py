"""Racks (GB200/GB300 NVL72): trays grouped by the chassis NVML names
(``nvmlDeviceGetPlatformInfo``: chassis serial number, slot number, tray index, host id).

* ``cluster.rack_slots``: two trays reporting one slot of a chassis (error: two trays cannot
  sit in one slot, one of them reports a place it does not have), or a chassis with fewer
  trays than the layout's rack holds (warning: a tray not collected, or not there; the
  snapshots alone cannot tell which);
* ``cluster.rack_domain_mismatch`` (error): trays of one chassis in different NVLink domains
  (ClusterUUIDs): the majority's domain is the rack's, the others are out of it (on a tie
  every tray is named).

Nodes without platform info (older drivers, recordings made before nvtopo asked, hosts that
are not trays) are in no rack and judged by nothing here.  A rack's IMEX state is what most
of its trays' views say (:mod:`.imexfacts`); no tray's snapshot holding one: unknown (``null``),
never an error.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...checks import subject as S
from ...checks.findings import Finding
from .domains import expected_size
from .facts import NodeFacts
from .finding import make, named
from .imexfacts import rack_state
from .majority import split

#: chassis serial -> [(slot, tray, host, node)], sorted by slot
Racks = Dict[str, List[Tuple[Optional[int], Optional[int], Optional[int], NodeFacts]]]


def racks(nodes: List[NodeFacts]) -> Racks:
    """Every chassis with the trays that report it, by slot (unknown slots last)."""
    out: Racks = {}
    for n in nodes:
        place = n.place
        if place is None:
            continue
        chassis, slot, tray, host = place
        out.setdefault(chassis, []).append((slot, tray, host, n))
    for trays in out.values():
        trays.sort(key=lambda t: (t[0] is None, t[0] or 0, t[3].name))
    return dict(sorted(out.items()))


def rack_size(trays: List[Any]) -> Optional[int]:
    """Trays the rack holds: the layout's NVLink domain size (one rack, one domain)."""
    sizes = {s for t in trays for s in [expected_size(t[3].layout)] if s is not None}
    return min(sizes) if sizes else None


def check(nodes: List[NodeFacts]) -> List[Finding]:
    out: List[Finding] = []
    for chassis, trays in racks(nodes).items():
        out.extend(_slots(chassis, trays))
        out.extend(_domains(chassis, trays))
    return out


def _slots(chassis: str, trays: List[Any]) -> List[Finding]:
    out: List[Finding] = []
    subject = S.fleet(f"rack {chassis}")
    by_slot: Dict[int, List[str]] = {}
    for slot, _tray, _host, n in trays:
        if slot is not None:
            by_slot.setdefault(slot, []).append(n.name)
    for slot, names in sorted(by_slot.items()):
        if len(names) > 1:
            out.append(make("error", "cluster.rack_slots", subject,
                            f"rack {chassis}: {len(names)} trays report slot {slot}: "
                            f"{named(names)}", names, expected="one tray per slot",
                            actual=len(names),
                            hint="nvidia-smi -q | grep -A8 'Platform Info' on each node "
                                 "named; a tray moved or a board's FRU data rewritten"))
    size = rack_size(trays)
    if size is None or len(trays) >= size:
        return out
    empty = [s for s in range(1, size + 1) if s not in by_slot]
    known = all(s is not None and 1 <= s <= size for s in by_slot) and by_slot
    where = (f"; empty slot(s): {', '.join(str(s) for s in empty)}"
             if known and empty else "")
    out.append(make("warning", "cluster.rack_slots", subject,
                    f"rack {chassis}: {len(trays)} of {size} trays{where}",
                    [t[3].name for t in trays], expected=size, actual=len(trays),
                    hint="collect every tray of the rack; a tray that is not there is a "
                         "smaller NVLink domain"))
    return out


def _domains(chassis: str, trays: List[Any]) -> List[Finding]:
    major, minor, _unknown = split((t[3].name, t[3].domain) for t in trays)
    if not minor:
        return []
    names = sorted(x for ns in minor.values() for x in ns)
    if major is None:
        msg = (f"rack {chassis}: its trays are in {len(minor)} NVLink domains, none of them "
               f"the majority's: {named(names)}")
    else:
        msg = (f"rack {chassis}: {len(names)} tray(s) outside the rack's NVLink domain "
               f"{major}: {named(names)}")
    return [make("error", "cluster.rack_domain_mismatch", S.fleet(f"rack {chassis}"), msg,
                 names, expected=major, actual=sorted(minor),
                 hint="one NVL72 rack is one NVLink domain: check the fabric manager's "
                      "partition and the tray's NVLink cables; nvidia-smi -q | grep -A6 Fabric")]


def document(nodes: List[NodeFacts]) -> List[Dict[str, Any]]:
    """The racks as the JSON document lists them."""
    out = []
    for chassis, trays in racks(nodes).items():
        state, views = rack_state(trays)
        out.append({"chassis_serial": chassis, "trays": rack_size(trays), "imex": state,
                    "imex_views": views,
                    "slots": [{"slot": slot, "tray_index": tray, "host_id": host,
                               "node": n.name, "domain": n.domain,
                               "imex": n.imex.state if n.imex is not None else None}
                              for slot, tray, host, n in trays]})
    return out


__all__ = ["check", "racks", "rack_size", "document"]
