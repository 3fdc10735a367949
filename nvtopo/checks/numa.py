"""NUMA: GPUs on the NUMA nodes the layout puts them on."""

from __future__ import annotations

from typing import Any, List, Optional

from . import Finding, demote, facts as F, finding
from . import subject as S
from .select import Selection
from ..model import Topology


def check(topo: Topology, sel: Selection) -> List[Finding]:
    v = F.view(topo)
    out: List[Finding] = []
    layout = sel.layout
    if layout is None or not layout.numa.stated:
        return out
    inferred = layout.numa.inferred()
    # auto picked the layout by NVLink shape among equal fits, and one of those states no
    # NUMA map: the map is this layout's, maybe not the node's (a warning, not an error)
    unsure = list(sel.numa_unsure)
    inferred = inferred or bool(unsure)
    why = (f" (the layout {layout.name} was picked by NVLink shape; "
           f"{', '.join(unsure)} fit{'s' if len(unsure) == 1 else ''} as well and state"
           f"{'s' if len(unsure) == 1 else ''} no NUMA map: give --layout NAME to check "
           "against the node's own)") if unsure else ""
    gn = layout.numa.gpu_node
    nodes = {}
    for i in v.present:
        g = topo.gpu(i)
        node = g.numa_node if g is not None else None
        if node is not None:
            nodes[i] = (node, g.numa_node_source)  # type: ignore[union-attr]  # (node is set only where g is)
    if not nodes:
        out.append(finding("info", "numa.not_checked", S.NODE,
                           "NUMA placement not checked: the input gives no NUMA affinity "
                           "(CPU affinity is not used: it shows the caller's cpuset)",
                           source=", ".join(topo.sources)))
        return out
    wrong = []
    if gn is not None and F.renumbered(layout, v, sel.slots_known):
        out.append(finding("info", "numa.not_checked", S.NODE,
                           "NUMA slot per GPU not checked: GPUs are missing and the rest are "
                           "renumbered, so which slot each index is cannot be told",
                           source=", ".join(topo.sources)))
    elif gn is not None:
        off = [(i, node, src, gn.get(i)) for i, (node, src) in sorted(nodes.items())
               if gn.get(i) is not None and node != gn.get(i)]
        wrong = [i for i, _, _, _ in off]
        if len(off) >= 2:
            # one cause, one finding: several GPUs off their NUMA node is the BIOS NUMA
            # setting (NPS/SNC, node interleaving) or a riser moved, not one fault per GPU
            out.append(finding(
                demote("error", inferred), "numa.placement", S.NODE,
                f"{len(off)} GPUs are on other NUMA nodes than the layout's: "
                + ", ".join(f"GPU{i} on {node} (layout {want})" for i, node, _, want in off)
                + ": CPU threads and host buffers bound by the layout's map cross sockets"
                + why,
                expected={f"GPU{i}": want for i, _, _, want in off},
                actual={f"GPU{i}": node for i, node, _, _ in off},
                source=", ".join(sorted({src for _, _, src, _ in off})),
                hint="check the BIOS NUMA settings (NPS/SNC mode, node interleaving) first: "
                     "one setting moves every GPU; then the slots against the vendor's map",
                covers=[S.gpu(i) for i in wrong]))
            off = []
        for i, node, src, want in off:
            out.append(finding(
                demote("error", inferred), "numa.placement", S.gpu(i),
                f"GPU{i} is on NUMA node {node}, the layout has {want}: CPU threads and "
                "host buffers bound by the layout's map cross sockets" + why,
                expected=want, actual=node, source=src,
                hint="check the BIOS NUMA settings (NPS/SNC mode) and that the GPU sits in "
                     "the slot the vendor's map says", covers=[S.gpu(i)]))
    want_nodes = layout.numa.nodes_with_gpus
    have = len({n for n, _ in nodes.values()})
    complete = len(nodes) == len(v.present) and len(v.present) == F.expected_gpus(layout, v)
    if isinstance(want_nodes, int) and have != want_nodes and not wrong and complete:
        out.append(finding(
            demote("error", inferred), "numa.spread", S.NODE,
            f"GPUs sit on {have} NUMA nodes, the layout has {want_nodes}",
            expected=want_nodes, actual=have,
            source=", ".join(sorted({s for _, s in nodes.values()})),
            hint="check the BIOS NUMA settings (NPS/SNC mode)"))
    return out
