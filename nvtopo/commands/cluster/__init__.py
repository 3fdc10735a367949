"""``nvtopo cluster PATH...``: the cross-node view of a fleet's snapshots, no layout needed.

Inputs are expanded as ``audit`` expands them (files, directories, globs; lazily).  Each file
is read in worker processes (:func:`.facts.node_facts`: the front door and the sealed model
cache) into a compact :class:`~.facts.NodeFacts`; only those are kept, so memory grows with a
few hundred bytes per node.  A directory's ``collect.json`` (``nvtopo collect``) gives each
file the engine's node name.

The cross-node check families, one module each, all ``check(nodes) -> [Finding]`` (the one
finding type, with the nodes it is about: :mod:`.finding`):
:mod:`.domains` (NVLink domains), :mod:`.racks` (GB200/GB300 racks by chassis), :mod:`.imex`
(IMEX views of a rack's trays), :mod:`.rails` (rails, GUIDs, LIDs), :mod:`.skew` (versions),
:mod:`.shape` (odd nodes out), :mod:`.identity` (names, GPU UUIDs).  A new family (e.g. a
WireGuard mesh across nodes) is a module with that function, added to :data:`FAMILIES`, and
the facts it needs added to :class:`~.facts.NodeFacts`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from . import domains, identity, imex, mesh, racks, rails, shape, skew
from .facts import NodeFacts, node_facts
from ...checks import subject as S
from ...checks.findings import Finding, exit_status, verdict
from .finding import make

#: (name, module) of every cross-node family, in report order.
FAMILIES: Tuple[Tuple[str, Any], ...] = (("identity", identity), ("domains", domains),
                                         ("racks", racks), ("imex", imex), ("rails", rails),
                                         ("skew", skew), ("shape", shape), ("mesh", mesh))
_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass
class ClusterResult:
    nodes: List[NodeFacts] = field(default_factory=list)
    unreadable: List[NodeFacts] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    #: the switch tree of ``--fabric`` (None without one)
    fabric: Optional[Dict[str, Any]] = None

    @property
    def verdict(self) -> str:
        return verdict(self.findings)

    def exit_status(self) -> int:
        """As ``audit``'s: 2 when no snapshot could be read, 1 on an error finding, else 0
        (the one rule: :func:`nvtopo.checks.findings.exit_status`)."""
        return exit_status(self.verdict if self.nodes else None)

    def domains(self) -> Dict[str, Dict[str, Any]]:
        return domains.domains(self.nodes)


def inputs(paths: Sequence[str]) -> Iterator[Tuple[str, Optional[str], Optional[str]]]:
    """``(path, reason, engine name)`` of every input file (``reason``: why it is no file)."""
    from ...audit import NOT_SNAPSHOTS, expand, named

    yield from named((path, why) for path, why in expand(paths)
                     if os.path.basename(path) not in NOT_SNAPSHOTS)


def _work(batch: List[Tuple[str, Optional[str], Optional[str]]]) -> List[NodeFacts]:
    out = []
    for path, why, engine in batch:
        if why is not None:
            out.append(NodeFacts(file=path, name=engine or os.path.basename(path),
                                 engine_name=engine, error=f"{path}: {why}"))
        else:
            out.append(node_facts(path, engine))
    return out


def _batches(items: Iterable[Any], size: int) -> Iterator[List[Any]]:
    batch: List[Any] = []
    for it in items:
        batch.append(it)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def read(paths: Sequence[str], jobs: Optional[int] = None, batch_size: int = 16
         ) -> Iterator[NodeFacts]:
    """Every input's :class:`NodeFacts`, in input order (``jobs`` worker processes; 1: here)."""
    jobs = jobs or os.cpu_count() or 1
    items = inputs(paths)
    from ...pool import fleet_collections, workers

    if jobs <= 1:
        with fleet_collections():
            for batch in _batches(items, batch_size):
                yield from _work(batch)
        return
    import collections
    import concurrent.futures as cf

    from ...audit import _warm

    # the pool ends with this process, whatever ends it (SIGTERM, SIGHUP, Ctrl-C: nvtopo/pool.py)
    with workers(jobs, _warm) as pool:
        pending: "collections.deque[cf.Future]" = collections.deque()
        for batch in _batches(items, batch_size):
            pending.append(pool.submit(_work, batch))
            if len(pending) >= 4 * jobs:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


def run(paths: Sequence[str], jobs: Optional[int] = None, fabric: Optional[str] = None,
        progress: Optional[Callable[[], None]] = None) -> ClusterResult:
    """Read every snapshot, then run every family over the nodes read.  ``fabric``: an
    ``ibnetdiscover`` dump (read first: a bad one fails before any snapshot is read);
    ``progress``: called once per snapshot read (the CLI's progress line)."""
    from . import fabric as fabric_mod

    dump = fabric_mod.read(fabric) if fabric is not None else None
    result = ClusterResult()
    for nf in read(paths, jobs):
        if progress is not None:
            progress()
        (result.unreadable if nf.error is not None else result.nodes).append(nf.compact())
    result.findings = evaluate(result.nodes, result.unreadable)
    if dump is not None:
        result.fabric = switch_tree(dump, result.nodes)
    return result


def switch_tree(dump: Any, nodes: Sequence[NodeFacts]) -> Dict[str, Any]:
    """The switch tree of an ``ibnetdiscover`` dump, its HCAs joined to the nodes by the
    compute NICs' ``node_desc``; ``nodes_outside``: nodes under no leaf switch."""
    from . import fabric as fabric_mod

    desc_to_node: Dict[str, str] = {}
    for n in nodes:
        compute = {h[0] for h in n.hcas if h[1] == "compute"}
        for nic, desc in n.node_desc.items():
            if nic in compute:
                desc_to_node.setdefault(desc, n.name)
    t = fabric_mod.tree(dump, desc_to_node)
    placed = {x for sw in t["switches"] for x in sw["nodes"]}
    t["nodes_outside"] = sorted(n.name for n in nodes if n.name not in placed)
    return t


def evaluate(nodes: List[NodeFacts], unreadable: Sequence[NodeFacts] = ()
             ) -> List[Finding]:
    found: List[Finding] = []
    if unreadable:
        found.append(make("warning", "cluster.unreadable", S.fleet("snapshots"),
                          f"{len(unreadable)} file(s) could not be read and are not in the "
                          f"view: " + "; ".join(n.error or "" for n in list(unreadable)[:3]),
                          [n.name for n in unreadable]))
    for _name, family in FAMILIES:
        found.extend(family.check(nodes))
    found.sort(key=lambda f: (_ORDER[f.severity], f.code, str(f.subject)))
    return found


__all__ = ["FAMILIES", "ClusterResult", "run", "read", "evaluate", "inputs"]


def document(result: ClusterResult) -> Dict[str, Any]:
    """The JSON document of ``nvtopo cluster --format json`` (docs/cluster.md §4)."""
    from ... import __version__

    doms = result.domains()
    in_domain = {n for d in doms.values() for n in d["nodes"]}
    local = set(domains.node_local(result.nodes))
    rows = []
    for n in result.nodes:
        rails_up = [r for r in n.rails if r.rate is not None]
        rates = {r.rate for r in rails_up}
        rows.append({"name": n.name, "file": n.file, "hostname": n.hostname,
                     "engine_name": n.engine_name, "layout": n.layout, "driver": n.driver,
                     "domain": n.domain if n.name in in_domain else None,
                     "clique": n.fabric[0][1] if n.fabric and n.name in in_domain else None,
                     "rails": len(n.rails),
                     "rail_rate_gbps": _num(next(iter(rates))) if len(rates) == 1 else None})
    rack_list = racks.document(result.nodes)
    errors = sum(f.severity == "error" for f in result.findings)
    warnings = sum(f.severity == "warning" for f in result.findings)
    return {
        "kind": "nvtopo-cluster",
        "schema_version": 1,
        "nvtopo_version": __version__,
        "counts": {"nodes": len(result.nodes), "unreadable": len(result.unreadable),
                   "domains": len(doms), **({"node_local": len(local)} if local else {}),
                   "errors": errors, "warnings": warnings},
        "verdict": result.verdict,
        "exit_status": result.exit_status(),
        "domains": [{"cluster_uuid": d, "cliques": e["cliques"], "nodes": e["nodes"]}
                    for d, e in doms.items()],
        "no_domain": sorted(n.name for n in result.nodes
                            if n.fabric and n.name not in in_domain
                            and n.name not in local),
        "unreadable": [{"file": n.file, "reason": n.error or ""} for n in result.unreadable],
        "findings": [f.to_dict() for f in result.findings],
        "node_rows": rows,
        **({"fabric": result.fabric} if result.fabric is not None else {}),
        **({"racks": rack_list} if rack_list else {}),
    }


def _num(x: Any) -> Any:
    return int(x) if isinstance(x, float) and x == int(x) else x
