"""Rails across nodes: rank *i* is the compute NIC of GPU *i* on every node.

Per rank, over the nodes of one layout (nodes that match none are not compared): the same link layer and rate (``cluster.rail_mismatch``,
error), ACTIVE (``cluster.rail_down``, warning: ``check`` reports the port itself), one subnet
prefix and SM LID (``cluster.rail_subnet``, warning).  The rate and the SM LID of a port that
is not ACTIVE (a DOWN port reports 10 Gb/s and SM LID 0) are not compared: a port down is one
finding, ``cluster.rail_down``, not a mismatch and a subnet besides.  Across every RDMA device of the fleet:
``cluster.duplicate_guid`` (node or port GUID, error) and ``cluster.duplicate_lid`` (one LID
twice in one subnet, error).  Roles are :mod:`nvtopo.checks.roles`'s (the node facts carry
them): storage and management NICs are not ranks; one on a compute rail's subnet is
``cluster.storage_on_rail`` (warning); a NIC whose role is unknown is not called storage.
"""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

from .facts import NodeFacts, Rail
from ...checks import subject as S
from ...checks.findings import Finding
from .finding import make, named
from .majority import show, split

#: Findings listed one by one per duplicate kind; the rest are counted in one more finding.
MAX_LISTED = 100


def check(nodes: List[NodeFacts]) -> List[Finding]:
    out: List[Finding] = []
    by_layout: Dict[str, List[NodeFacts]] = {}
    for n in nodes:
        by_layout.setdefault(n.layout, []).append(n)
    rail_prefixes: Set[str] = set()
    for layout, ns in sorted(by_layout.items()):
        if layout == "none":  # no kind of node: their ranks need not be the same rails
            continue
        # each node's rails walked once, into their ranks (walking every node once per rank
        # cost the longest node's rails times the nodes)
        by_rank: Dict[int, List[Tuple[str, Rail]]] = {}
        for n in ns:
            for r, x in enumerate(n.rails):
                by_rank.setdefault(r, []).append((n.name, x))
        for r, rails in sorted(by_rank.items()):
            out.extend(_rank(layout, r, rails, rail_prefixes))
    # duplicates over every device of the fleet: the first holder of each GUID and LID is
    # kept (one dictionary entry, no list), the others only where there is a duplicate
    first_guid: Dict[str, Tuple[str, str]] = {}
    dup_guid: Dict[str, List[Tuple[str, str]]] = {}
    first_lid: Dict[Tuple[str, int], Tuple[str, str]] = {}
    dup_lid: Dict[Tuple[str, int], List[Tuple[str, str]]] = {}
    storage_on_rail: List[str] = []
    for n in nodes:
        for nic, role, node_guid, port_guid, prefix, lid, layer in n.hcas:
            who = (n.name, nic)
            for g in {node_guid, port_guid and _colons(port_guid)} - {None, ""}:
                prev = first_guid.setdefault(g, who)  # type: ignore[arg-type]
                if prev is not who and prev[0] != n.name:
                    dup_guid.setdefault(g, [prev]).append(who)  # type: ignore[arg-type]
            if layer == "InfiniBand" and prefix and lid and 0 < lid < 0xC000:
                prev = first_lid.setdefault((prefix, lid), who)
                if prev is not who:
                    dup_lid.setdefault((prefix, lid), [prev]).append(who)
            # a NIC whose role is unknown may be a compute NIC: not said to be storage
            if role not in ("compute", "unknown") and layer == "InfiniBand" \
                    and prefix in rail_prefixes:
                storage_on_rail.append(n.name)
    del first_guid, first_lid
    for g, where in sorted(dup_guid.items())[:MAX_LISTED]:
        out.append(make("error", "cluster.duplicate_guid", S.fleet(f"GUID {g}"),
                        f"GUID {g} on {len(where)} devices: "
                        + ", ".join(f"{a} {b}" for a, b in where[:5]),
                        [w[0] for w in where], actual=len(where), expected=1))
    for (prefix, lid), where in sorted(dup_lid.items())[:MAX_LISTED]:
        out.append(make("error", "cluster.duplicate_lid", S.fleet(f"LID {lid} on {prefix}"),
                        f"LID {lid} twice in subnet {prefix}: "
                        + ", ".join(f"{a} {b}" for a, b in where[:5]),
                        [w[0] for w in where], actual=len(where), expected=1))
    for code, what, dups in (("cluster.duplicate_guid", "GUIDs", dup_guid),
                             ("cluster.duplicate_lid", "LIDs", dup_lid)):
        if len(dups) > MAX_LISTED:
            more = sorted(dups.items())[MAX_LISTED:]
            out.append(make("error", code, S.fleet(what), f"{len(more)} more duplicate {what}",
                            [w[0] for _k, ws in more for w in ws]))
    if storage_on_rail:
        out.append(make("warning", "cluster.storage_on_rail", S.fleet("storage NICs"),
                        f"{len(storage_on_rail)} node(s) have a non-compute InfiniBand NIC on "
                        f"a compute rail's subnet: {named(storage_on_rail)}", storage_on_rail))
    return out


def _rank(layout: str, r: int, rails: List[Tuple[str, Rail]], rail_prefixes: Set[str]
          ) -> List[Finding]:
    """One rank's minorities among the nodes of one layout (``rail_prefixes``: the
    majority subnet prefix of each InfiniBand rank is added)."""
    out: List[Finding] = []
    # a port that is not ACTIVE reports a rate (10 Gb/s) and an SM LID (0) that say
    # nothing of its rail: its one finding is rail_down (one cause, one finding)
    for what, code, sev, get in (
            ("link layer", "cluster.rail_mismatch", "error", lambda x: x.link_layer),
            ("rate (Gb/s)", "cluster.rail_mismatch", "error",
             lambda x: x.rate if _up(x) else None),
            ("port state", "cluster.rail_down", "warning", lambda x: x.state),
            ("subnet prefix and SM LID", "cluster.rail_subnet", "warning",
             lambda x: (x.prefix, x.sm_lid) if x.link_layer == "InfiniBand"
             and x.prefix and _up(x) else None)):
        major, minor, _unknown = split((name, get(x)) for name, x in rails)
        if major is not None and code == "cluster.rail_subnet":
            rail_prefixes.add(major[0])
        for value, names in minor.items():
            out.append(make(sev, code, S.rail(r),
                            f"rail {r} ({layout}): {len(names)} node(s) with {what} "
                            f"{show(value)}"
                            + (f" where the others have {show(major)}"
                               if major is not None else " (no majority)")
                            + f": {named(names)}", names,
                            expected=show(major) if major is not None else None,
                            actual=show(value)))
    return out


def _up(x: Rail) -> bool:
    """Whether a rail's port is ACTIVE (or its state unknown): only then are its rate and
    subnet facts of the rail, not of a port that is down."""
    return x.state is None or x.state == "ACTIVE"


def _colons(port_guid: str) -> str:
    """``a088c20000000004`` -> ``a088:c200:0000:0004`` (node GUID spelling: a port GUID of a
    single-port HCA equals its node GUID; both are counted once per device)."""
    s = port_guid.lower()
    return ":".join(s[i:i + 4] for i in range(0, len(s), 4)) if len(s) == 16 else s
