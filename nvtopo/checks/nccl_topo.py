"""NCCL's view of the node (its topology XML: ``NCCL_TOPO_DUMP_FILE``) against the node's own
evidence (``nccl.topo_differs``, ``docs/nccl.md``): GPUs one lists and the other does not, a
GPU and a compute NIC the node puts under one PCIe switch that NCCL's tree joins only through
the CPU (a VM's flattened tree: NCCL then turns GPU Direct RDMA off), a GPU under another NUMA
node.  One finding per kind, naming every case (the first few)."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from . import Finding, finding
from . import roles as R
from . import subject as S
from .select import Selection
from ..model import Topology
from ..model.nccl import NcclTopo
from ..model.vocab import pci_bdf

SOURCE = "nccl-topo"
NEAR = ("PIX", "PXB")
HINT = ("where a VM or container hides the PCIe switches, give NCCL the node's tree: "
        "nvtopo snapshot --format nccl-topo -o topo.xml on the node, then NCCL_TOPO_FILE="
        "topo.xml")


def check(topo: Topology, sel: Selection) -> List[Finding]:
    x = topo.nccl_topo
    if x is None or not topo.gpus:
        return []
    out: List[Finding] = []
    out += _gpus(topo, x)
    out += _pairs(topo, x, sel)
    out += _numa(topo, x)
    out += _graphs(topo, x, sel)
    return out


#: NCCL's graph patterns by number (``NCCL_TOPO_PATTERN_*``).
PATTERNS = {1: "balanced tree", 2: "split tree", 3: "tree", 4: "ring", 5: "NVLS",
            6: "CollNet direct"}


def _graphs(topo: Topology, x: NcclTopo, sel: Selection) -> List[Finding]:
    """A graph reaching the network through the CPU (PHB/SYS) where the node has every GPU's
    compute NIC at PIX/PXB: NCCL's view of the tree is worse than the node's."""
    far = [g for g in x.graphs if g.type_inter in ("PHB", "SYS")]
    if not far:
        return []
    compute = R.resolve(topo, sel.layout).compute or [n.name for n in topo.nics]
    near = [g.index for g in topo.gpus
            if any(topo.gpu_nic_path(g.index, n)[0] in NEAR for n in compute)]
    if not topo.gpus or len(near) < len(topo.gpus):
        return []
    g = far[0]
    return [_differs(f"NCCL's {PATTERNS.get(g.pattern or 0, 'graph')} graph {g.id} reaches the "
                     f"network at {g.type_inter} ({g.bw_inter} GB/s) while the node puts every "
                     "GPU's compute NIC at PIX/PXB: NCCL sees a worse tree than the node has",
                     "PIX/PXB to the network", f"{g.type_inter}")]


def _key(bus: Optional[str]) -> Optional[Tuple[int, int, int, int]]:
    return pci_bdf(bus)


def _differs(msg: str, expected: str, actual: str) -> Finding:
    return finding("warning", "nccl.topo_differs", S.NODE, msg, expected=expected,
                   actual=actual, hint=HINT, source=SOURCE)


def gpu_busids(x: NcclTopo) -> List[str]:
    """The GPUs of NCCL's tree: its ``<gpu>`` elements' busids, and ``<pci>`` functions of a
    display class (``0x0302``, ``0x0300``: an NCCL_TOPO_FILE names GPUs so, with no ``<gpu>``)."""
    out = [g.busid for g in x.gpus]
    out += [p.busid for p in x.pcis if (p.class_ or "").lower().startswith(("0x0302", "0x0300"))
            and p.busid not in out]
    return out


def _gpus(topo: Topology, x: NcclTopo) -> List[Finding]:
    listed = gpu_busids(x)
    nccl = {_key(b) for b in listed} - {None}
    node = {_key(g.pci_bus_id): g for g in topo.gpus if _key(g.pci_bus_id) is not None}
    out = []
    lacks = [g for k, g in sorted(node.items()) if k not in nccl]
    if lacks and listed:
        names = ", ".join(f"GPU{g.index} ({g.pci_bus_id})" for g in lacks[:8])
        out.append(_differs(f"NCCL's topology lacks {len(lacks)} of the node's GPUs: {names} "
                            "(a job given part of the node, CUDA_VISIBLE_DEVICES, or another "
                            "node's dump)", f"{len(node)} GPUs", f"{len(nccl)} GPUs"))
    extra = sorted(k for k in nccl if k not in node and k is not None)
    if extra:
        out.append(_differs(f"NCCL's topology lists {len(extra)} GPU(s) the node's evidence "
                            f"does not: {', '.join(b for b in listed if _key(b) in extra)[:200]}",
                            f"{len(node)} GPUs", f"{len(nccl)} GPUs"))
    return out


def _pairs(topo: Topology, x: NcclTopo, sel: Selection) -> List[Finding]:
    by_bus = {_key(p.busid): p.busid for p in x.pcis if _key(p.busid) is not None}
    compute = R.resolve(topo, sel.layout).compute or [n.name for n in topo.nics]
    flat: List[str] = []
    for g in topo.gpus:
        gb = by_bus.get(_key(g.pci_bus_id))
        if gb is None:
            continue
        above = set(x.ancestors(gb))
        for name in compute:
            tok, _ = topo.gpu_nic_path(g.index, name)
            nic = topo.nic(name)
            nb = by_bus.get(_key(nic.pci_bus_id)) if nic is not None else None
            if tok not in NEAR or nb is None:
                continue
            if not above & set(x.ancestors(nb)):
                flat.append(f"GPU{g.index}-{name} ({tok})")
    if not flat:
        return []
    return [_differs(f"the node puts {len(flat)} GPU/compute-NIC pair(s) under one PCIe switch "
                     f"that NCCL's tree joins only through the CPU: {', '.join(flat[:8])}; "
                     "NCCL computes a longer distance and turns GPU Direct RDMA off for them",
                     "PIX/PXB (one switch)", "through the CPU")]


def _numa(topo: Topology, x: NcclTopo) -> List[Finding]:
    numa: Dict[Optional[Tuple[int, int, int, int]], Optional[int]] = \
        {_key(p.busid): p.numaid for p in x.pcis}
    off = []
    for g in topo.gpus:
        theirs = numa.get(_key(g.pci_bus_id))
        mine = (g.numa_affinity or "").split(",")[0].split("-")[0].strip()
        if theirs is None or not mine.isdigit() or len(mine) > 5 or theirs < 0:
            continue
        if int(mine) != theirs:
            off.append(f"GPU{g.index}: node {mine}, NCCL {theirs}")
    if not off:
        return []
    return [_differs(f"NCCL places {len(off)} GPU(s) under another NUMA node than the node's "
                     f"evidence: {'; '.join(off[:8])}", "the node's NUMA affinity",
                     "another numaid")]


__all__ = ["check"]
