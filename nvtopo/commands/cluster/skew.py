"""Version skew: driver, CUDA driver version, kernel, the nvtopo that took the snapshot, and
NIC firmware per board id.  Inside one NVLink domain a driver or CUDA minority is an error
(drivers cannot be mixed inside an NVL72 rack: NVIDIA/DCGM#313): ``cluster.skew_in_domain``;
elsewhere each minority is a warning: ``cluster.version_skew``.  Each minority is listed with
its nodes; nodes that do not say (no NVML, an older snapshot) are not counted.
"""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

from .facts import NodeFacts
from ...checks import subject as S
from ...checks.findings import Finding
from .finding import make, named
from .majority import split

FIELDS = (("driver", "driver"), ("cuda", "CUDA driver version"), ("kernel", "kernel"),
          ("nvtopo", "nvtopo version (of the snapshot)"))


def check(nodes: List[NodeFacts]) -> List[Finding]:
    out: List[Finding] = []
    in_domain: Dict[str, List[NodeFacts]] = {}
    for n in nodes:
        if n.domain is not None:
            in_domain.setdefault(n.domain, []).append(n)
    flagged: Set[Tuple[str, str]] = set()  # (attribute, node)
    for domain, ns in sorted(in_domain.items()):
        for attr, what in FIELDS[:2]:
            major, minor, _u = split((n.name, getattr(n, attr)) for n in ns)
            for value, names in minor.items():
                flagged.update((attr, name) for name in names)
                out.append(make("error", "cluster.skew_in_domain", S.domain(domain),
                                f"NVLink domain {domain}: {len(names)} node(s) on {what} "
                                f"{value}" + (f", the others on {major}" if major else
                                              " (no majority)") + f": {named(names)}",
                                names, expected=major, actual=value,
                                hint="one driver per NVLink domain (NVIDIA/DCGM#313)"))
    for attr, what in FIELDS:
        major, minor, _u = split((n.name, getattr(n, attr)) for n in nodes)
        for value, names in minor.items():
            names = [x for x in names if (attr, x) not in flagged]
            if names:
                out.append(make("warning", "cluster.version_skew", S.fleet(what),
                                f"{len(names)} node(s) on {what} {value}"
                                + (f", the fleet on {major}" if major else " (no majority)")
                                + f": {named(names)}", names, expected=major, actual=value))
    boards: Dict[str, List[tuple]] = {}
    for n in nodes:
        for board, fw in sorted(set(n.firmware)):
            boards.setdefault(board, []).append((n.name, fw))
    for board, pairs in sorted(boards.items()):
        major, minor, _u = split(pairs)
        for value, names in minor.items():
            out.append(make("warning", "cluster.version_skew", S.fleet(f"firmware {board}"),
                            f"{len(names)} node(s) with {board} NICs on firmware {value}"
                            + (f", the fleet on {major}" if major else " (no majority)")
                            + f": {named(names)}", names, expected=major, actual=value))
    return out
