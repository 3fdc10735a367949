"""Identity: ``cluster.duplicate_hostname`` (error: two snapshots of one name, or two nodes
with one name), ``cluster.duplicate_gpu_uuid`` (error: one GPU seen on two nodes, or one
snapshot twice), ``cluster.engine_name`` (warning: the engine's node name is not the host's
name, by its first label)."""

from __future__ import annotations

from typing import Dict, List, Tuple

from .facts import NodeFacts
from ...checks import subject as S
from ...checks.findings import Finding
from .finding import make


def check(nodes: List[NodeFacts]) -> List[Finding]:
    out: List[Finding] = []
    first_host: Dict[str, str] = {}
    hosts: Dict[str, List[str]] = {}
    first_uuid: Dict[str, str] = {}
    uuids: Dict[str, List[str]] = {}
    renamed: List[Tuple[str, str]] = []
    for n in nodes:
        if n.hostname:
            prev = first_host.setdefault(n.hostname, n.file)
            if prev is not n.file:
                hosts.setdefault(n.hostname, [prev]).append(n.file)
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
    for h, files in sorted(hosts.items()):
        if len(files) > 1:
            out.append(make("error", "cluster.duplicate_hostname", S.host(h),
                            f"hostname {h!r} in {len(files)} snapshots", [h],
                            expected=1, actual=len(files),
                            hint="two nodes share a name, or one node was collected twice"))
    dup = uuids
    for u, ns in sorted(dup.items())[:100]:
        out.append(make("error", "cluster.duplicate_gpu_uuid", S.fleet(u),
                        f"GPU {u} on {len(ns)} nodes", ns, expected=1, actual=len(ns)))
    if len(dup) > 100:
        out.append(make("error", "cluster.duplicate_gpu_uuid", S.fleet("GPUs"),
                        f"{len(dup) - 100} more GPU UUIDs seen twice", []))
    return out
