"""Identity: ``cluster.duplicate_hostname`` (error: two snapshots of one name, or two nodes
with one name; the finding names the nodes carrying it: the engine's names, else the files), ``cluster.duplicate_gpu_uuid`` (error: one GPU seen on two nodes, or one
snapshot twice), ``cluster.engine_name`` (warning: the engine's node name is not the host's
name, by its first label)."""

from __future__ import annotations

from typing import Dict, List, Tuple

from .facts import NodeFacts
from ...checks import subject as S
from ...checks.findings import Finding
from .finding import make, named


def check(nodes: List[NodeFacts]) -> List[Finding]:
    out: List[Finding] = []
    first_host: Dict[str, NodeFacts] = {}
    hosts: Dict[str, List[NodeFacts]] = {}
    first_uuid: Dict[str, str] = {}
    uuids: Dict[str, List[str]] = {}
    renamed: List[Tuple[str, str]] = []
    for n in nodes:
        if n.hostname:
            prev_node = first_host.setdefault(n.hostname, n)
            if prev_node is not n:
                hosts.setdefault(n.hostname, [prev_node]).append(n)
        for u in n.gpu_uuids:
            prev = first_uuid.setdefault(u, n.name)
            if prev is not n.name:
                uuids.setdefault(u, [prev]).append(n.name)
        if n.engine_name and n.hostname and \
                n.hostname.split(".")[0] != n.engine_name.split(".")[0]:
            renamed.append((n.engine_name, n.hostname))
    del first_host, first_uuid
    if renamed:  # one finding, however many nodes (an engine may name every node its way)
        a, b = renamed[0]
        out.append(make("warning", "cluster.engine_name", S.fleet("engine node names"),
                        f"{len(renamed)} node(s) whose engine name is not their hostname, "
                        f"e.g. the engine's {a!r} is {b!r}", [x[0] for x in renamed],
                        expected=a, actual=b))
    for h, carriers in sorted(hosts.items()):
        # the nodes carrying it: the engine's name where collect.json gives one, else the file
        names = [n.engine_name or n.file for n in carriers]
        out.append(make("error", "cluster.duplicate_hostname", S.host(h),
                        f"hostname {h!r} in {len(carriers)} snapshots: {named(names)}", names,
                        expected=1, actual=len(carriers),
                        hint="two nodes share a name, or one node was collected twice"))
    dup = uuids
    for u, ns in sorted(dup.items())[:100]:
        out.append(make("error", "cluster.duplicate_gpu_uuid", S.fleet(u),
                        f"GPU {u} on {len(ns)} nodes", ns, expected=1, actual=len(ns)))
    if len(dup) > 100:
        out.append(make("error", "cluster.duplicate_gpu_uuid", S.fleet("GPUs"),
                        f"{len(dup) - 100} more GPU UUIDs seen twice", []))
    return out
