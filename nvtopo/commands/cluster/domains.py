"""NVLink domains across nodes (GB200 NVL72 and later): ClusterUUID and clique per GPU
(``nvmlDeviceGetGpuFabricInfoV``, [nvml.md §6](../../../docs/nvml.md)).

* ``cluster.fabric_incomplete`` (error): a node whose GPUs report a fabric that is not
  completed with success, a zero ClusterUUID or clique 0: the node is in no domain;
* ``cluster.node_split`` (error): one node's GPUs in several domains or cliques;
* ``cluster.domain_oversize`` (error): more nodes report a domain than the layout's domain
  holds (two racks with one ClusterUUID);
* ``cluster.domain_incomplete`` (warning): fewer (a tray outside its rack, a split rack, or
  trays not collected: the snapshots alone cannot tell which);
* ``cluster.domain_cliques`` (warning): one domain partitioned into several cliques.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set

from ...layouts import domain_nodes
from .facts import NodeFacts
from ...checks import subject as S
from ...checks.findings import Finding
from .finding import make, named
from .majority import split


def expected_size(layout: str) -> Optional[int]:
    return domain_nodes(layout)


def check(nodes: List[NodeFacts]) -> List[Finding]:
    out: List[Finding] = []
    incomplete: Dict[str, List[str]] = {}
    members: Dict[str, List[NodeFacts]] = {}
    for n in nodes:
        if not n.fabric:
            continue
        bad = [f for f in n.fabric
               if f[2] != "completed" or f[3] != "success" or not f[0] or not f[1]]
        if bad:
            f = bad[0]
            why = (f"state {f[2]}" if f[2] != "completed" else
                   f"status {f[3]}" if f[3] != "success" else
                   "a zero ClusterUUID" if not f[0] else "clique 0")
            incomplete.setdefault(why, []).append(n.name)
            continue
        uuids = {f[0] for f in n.fabric if f[0]}  # (every one: none is bad)
        cliques = {f[1] for f in n.fabric}
        if len(uuids) > 1 or len(cliques) > 1:
            out.append(make("error", "cluster.node_split", S.host(n.name),
                            f"{n.name}: its GPUs report {len(uuids)} NVLink domains and "
                            f"{len(cliques)} cliques", [n.name],
                            expected="one domain, one clique",
                            actual=sorted(f"{u}.{c}" for u, c, _s, _t in n.fabric)))
            continue
        members.setdefault(next(iter(uuids)), []).append(n)
    for why, names in sorted(incomplete.items()):
        out.append(make("error", "cluster.fabric_incomplete", S.fleet("NVLink fabric"),
                        f"{len(names)} node(s) in no NVLink domain ({why}): {named(names)}",
                        names, expected="state completed, status success, a ClusterUUID "
                        "and a clique", actual=why,
                        hint="nvidia-smi -q | grep -A6 Fabric; check the fabric manager and "
                             "NVSwitch trays of the rack"))
    for uuid, ns in sorted(members.items()):
        names = [n.name for n in ns]
        sizes = {s for n in ns for s in [expected_size(n.layout)] if s is not None}
        want = min(sizes) if sizes else None
        if want is not None and len(ns) > want:
            out.append(make("error", "cluster.domain_oversize", S.domain(uuid),
                            f"{len(ns)} nodes report NVLink domain {uuid}; one holds {want}",
                            names, expected=want, actual=len(ns)))
        elif want is not None and len(ns) < want:
            lost = sum(len(v) for v in incomplete.values())
            out.append(make("warning", "cluster.domain_incomplete", S.domain(uuid),
                            f"NVLink domain {uuid} has {len(ns)} of {want} nodes: "
                            f"{named(names)}"
                            + (f" ({lost} node(s) of the fleet are in no domain: "
                               "cluster.fabric_incomplete)" if lost else ""),
                            names, expected=want, actual=len(ns),
                            hint="a tray outside its rack, a rack split in two, or trays "
                                 "not collected"))
        major, minor, _unknown = split((n.name, n.fabric[0][1]) for n in ns)
        for clique, cnames in minor.items():
            out.append(make("warning", "cluster.domain_cliques", S.domain(uuid),
                            f"NVLink domain {uuid}: {len(cnames)} node(s) in clique {clique}"
                            + (f", the others in {major}" if major is not None else "")
                            + f": {named(cnames)}", cnames, expected=major, actual=clique))
    return out


def _fabrics(nodes: List[NodeFacts]) -> Dict[str, List[NodeFacts]]:
    """ClusterUUID -> the nodes whose completed fabric reports it."""
    members: Dict[str, List[NodeFacts]] = {}
    for n in nodes:
        d = n.domain
        if d is None or not n.fabric or any(f[2] != "completed" for f in n.fabric):
            continue
        members.setdefault(d, []).append(n)
    return members


def _node_local(ns: List[NodeFacts]) -> bool:
    """A fabric one node reports alone, whose layout has no multi-node domain (an 8-GPU
    NVSwitch board: HGX/DGX H100, B200): the node's own NVSwitches, not an NVLink domain."""
    return len(ns) == 1 and not any((expected_size(n.layout) or 0) > 1 for n in ns)


def domains(nodes: List[NodeFacts]) -> Dict[str, Dict[str, List[Any]]]:
    """Domain -> {"cliques": [...], "nodes": [...]}, for the outputs (nodes in one domain).
    Node-local NVSwitch fabrics (:func:`node_local`) are not domains: listing one per 8-GPU
    box would bury a fleet's findings under hundreds of one-node "domains"."""
    out: Dict[str, Dict[str, List[Any]]] = {}
    for d, ns in sorted(_fabrics(nodes).items()):
        if _node_local(ns):
            continue
        cliques: Set[int] = {f[1] for n in ns for f in n.fabric if f[1] is not None}
        out[d] = {"cliques": sorted(cliques), "nodes": sorted(n.name for n in ns)}
    return out


def node_local(nodes: List[NodeFacts]) -> List[str]:
    """The nodes whose completed fabric is their own NVSwitches (see :func:`_node_local`)."""
    return sorted(ns[0].name for ns in _fabrics(nodes).values() if _node_local(ns))
