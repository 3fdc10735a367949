"""Odd nodes out: per layout, the majority shape (GPU count, NVLink pair counts, PCIe widths
per GPU, NUMA node per GPU, compute NIC count and rates) and each deviant with what differs:
``cluster.odd_node`` (warning: ``check`` against the layout says which is the fault).  Nodes
that match no layout are not compared: they need not be the same kind of machine."""

from __future__ import annotations

from typing import Dict, List

from .facts import NodeFacts
from ...checks import subject as S
from ...checks.findings import Finding
from .finding import make, named
from .majority import show, split

COMPONENTS = (("gpus", "GPU count"), ("nvlink", "NVLink pairs"), ("pcie_width", "PCIe widths"),
              ("numa", "NUMA nodes of the GPUs"), ("nics", "compute NICs"))


def check(nodes: List[NodeFacts]) -> List[Finding]:
    out: List[Finding] = []
    by_layout: Dict[str, List[NodeFacts]] = {}
    for n in nodes:
        by_layout.setdefault(n.layout, []).append(n)
    for layout, ns in sorted(by_layout.items()):
        if len(ns) < 3 or layout == "none":  # two nodes have no majority worth the name;
            continue  # nodes that match no layout are no kind of node to compare
        for key, what in COMPONENTS:
            major, minor, _u = split((n.name, _known(dict(n.shape).get(key))) for n in ns)
            if major is None:
                continue
            for value, names in minor.items():
                out.append(make("warning", "cluster.odd_node", S.fleet(f"{layout} {key}"),
                                f"{len(names)} {layout} node(s) with {what} {show(value)}, "
                                f"the others {show(major)}: {named(names)}", names,
                                expected=show(major), actual=show(value)))
    return out


def _known(value):
    """A shape with an unknown part is compared as it is (unknown parts are ``?``), but a
    wholly unknown one is not counted."""
    if isinstance(value, tuple) and value and all(v is None for v in value):
        return None
    return value
