"""``nvtopo layouts capture``: a layout written from a known-good node.

States only what the input knows: a topo text gives GPU count, NV# per pair
and NUMA placement; NVML adds GPU names, links per GPU, NVLink generation,
NVSwitches and fabric; sysfs adds PCIe links, compute NICs (rate, link layer,
placement) and GPUDirect RDMA.  Every section is tagged ``[O: CAPTURE]``:
observed on one machine.

It lives in the commands layer, not beside the layout files (:mod:`nvtopo.layouts`): it
reads the model through the checks' view of its facts, and ``layouts`` sits below
``checks``.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from typing import Any, Dict, List, Optional

from ..model import Topology, path_rank
from ..safe import is_ascii_digits


def layout_of(topo: Topology, name: Optional[str] = None) -> Dict[str, Any]:
    """The layout ``nvtopo layouts capture`` writes for ``topo``, validated: named ``name``,
    else the host name, else ``captured`` (as a layout name: letters, digits, ``.``,
    ``_``, ``-``)."""
    from ..layouts import decode_doc

    nm = name or str(topo.host.hostname or "captured")
    # ASCII only: a layout name starts with a letter or digit (``\w`` would keep "ñ")
    nm = re.sub(r"[^A-Za-z0-9_.-]", "-", nm).lstrip(".-_") or "captured"
    doc = capture(topo, nm, topo.origin.file or "live probe")
    decode_doc(copy.deepcopy(doc), "captured layout")
    return doc


def _uniform(values: List[Any]) -> Optional[Any]:
    vals = [x for x in values if x is not None]
    return vals[0] if vals and len(set(map(str, vals))) == 1 else None


#: The evidence tag of every captured section: observed on one machine.
EVIDENCE = "[O: CAPTURE]"


def capture(topo: Topology, name: str, where: str) -> Dict[str, Any]:
    from ..checks import facts as F

    v = F.view(topo)
    doc: Dict[str, Any] = {
        "schema": 1, "name": name, "title": f"{name} (captured)",
        "description": f"Captured by nvtopo layouts capture from {where}: what that node "
                       "showed, taken as the expectation. Review before use.",
        "sources": {"CAPTURE": f"{where}" + (f" (host {topo.host.hostname})"
                                             if topo.host.hostname else "")},
        "selection": {"family": name, "priority": 0},
    }
    doc["gpus"] = _gpus(topo, v)
    nv = _nvlink(topo, v)
    if nv is not None:
        doc["nvlink"] = nv
    if v.has_sysfs and topo.nics:
        nics = _nics(topo, v)
        if nics:
            doc["nics"] = nics
    # NUMA
    present = v.present
    numa = {str(i): topo.gpu(i).numa_node for i in present  # type: ignore[union-attr]
            if topo.gpu(i) is not None}
    if numa and all(x is not None for x in numa.values()):
        doc["numa"] = {"nodes_with_gpus": len(set(numa.values())), "gpu_numa": numa,
                       "evidence": EVIDENCE}
    return doc



def _gpus(topo: Topology, v: Any) -> Dict[str, Any]:
    """The GPU section: count, a name pattern where every GPU has the one name, the PCIe
    link where every GPU's is the same."""
    present = v.present
    gpus: Dict[str, Any] = {"count": len(present)}
    gnames = [g.name for g in topo.gpus if g.index in present]
    nm = _uniform(gnames)
    if nm and all(gnames):
        gpus["name_pattern"] = re.escape(nm)
    gens, widths = [], []
    for i in present:
        g = topo.gpu(i)
        sy = g.sysfs if g is not None else None
        if sy is not None:
            gens.append(sy.link.max_gen)
            widths.append(sy.link.max_width)
        elif g is not None and g.nvml is not None:
            gens.append(g.nvml.pcie.max_gen)
            widths.append(g.nvml.pcie.max_width)
    if _uniform(gens) is not None and _uniform(widths) is not None and all(gens) \
            and all(widths):
        gpus["pcie"] = {"gen": _uniform(gens), "width": _uniform(widths)}
    gpus["evidence"] = EVIDENCE
    return gpus


def _nvlink(topo: Topology, v: Any) -> Optional[Dict[str, Any]]:
    """The NVLink section: NV# per pair (one count, or each pair), NVSwitches; with NVML
    the links per GPU, generation, switch count and fabric.  None: unstated."""
    present = v.present
    if not v.pairs:
        return None
    nv: Dict[str, Any] = {}
    counts = {k: c for k, (c, _) in v.pairs.items()}
    nonzero = [c for c in counts.values() if c]
    switch = topo.nvswitch
    if nonzero:
        if len(set(counts.values())) == 1:
            nv["pair_count"] = nonzero[0]
        else:
            nv["pairs"] = {f"{a}-{b}": c for (a, b), c in sorted(counts.items()) if c}
        nv["nvswitch"] = bool(switch)
        if v.has_nvml:
            act = [v.links[i].active for i in present if i in v.links]
            if _uniform(act):
                nv["links_per_gpu"] = _uniform(act)
            vers = [x.version for i in present if i in v.links
                    for x in v.links[i].links if x.state == "active"]
            if _uniform(vers):
                nv["generation"] = _uniform(vers)
            if switch and v.switches:
                nv["nvswitch_count"] = len(v.switches)
            fab = [f.state for i, f in v.fabric.items()]
            if fab and all(s == "completed" for s in fab):
                nv["fabric"] = True
        nv["evidence"] = EVIDENCE
        return nv
    if len(present) > 1 and len(counts) == len(present) * (len(present) - 1) // 2:
        # every pair's path is known and none is NV#: a node without NVLink.  Say so
        # ("pairs": {}: no NVLink between any pair, checked) rather than leave NVLink
        # unstated, which would check nothing.
        return {"pairs": {}, "evidence": EVIDENCE}
    return None


def _nics(topo: Topology, v: Any) -> Dict[str, Any]:
    """The NIC section: the compute NICs (by role) with their rate and link layer where
    uniform, each GPU's nearest compute NICs, GPUDirect RDMA."""
    from ..checks import roles

    present = v.present
    comp = roles.resolve(topo, None, present).compute
    nics: Dict[str, Any] = {}
    if comp:
        rates, layers = [], []
        for nme in comp:
            h = topo.nic(nme).sysfs  # type: ignore[union-attr]
            for p in h.ports if h is not None else []:
                rates.append(p.rate_gbps)
                layers.append(p.link_layer)
        compute: Dict[str, Any] = {"count": len(comp)}
        if _uniform(rates) and all(rates):
            compute["rate_gbps"] = _uniform(rates)
        if _uniform(layers) in ("InfiniBand", "Ethernet") and all(layers):
            compute["link_layer"] = _uniform(layers)
        compute["evidence"] = EVIDENCE
        nics["compute"] = compute
        placement = _placement(topo, present, comp)
        if placement is not None:
            nics["placement"] = placement
    if topo.sysfs is not None and topo.sysfs.gpudirect.peermem_loaded:
        nics["gpudirect_rdma"] = True
    return nics


def _placement(topo: Topology, present: List[int], comp: List[str]
               ) -> Optional[Dict[str, Any]]:
    """Each GPU's nearest compute NIC(s) at PXB or closer, the worst such path, and the
    GPUs per NIC where every GPU has one NIC and every NIC as many GPUs."""
    gpu_nic: Dict[str, Any] = {}
    worst, worst_rank = None, -1
    for i in present:
        paths = [(topo.gpu_nic_path(i, nme)[0], nme) for nme in comp]
        ranked = [(r, t, nme) for t, nme in paths for r in [path_rank(t)] if r is not None]
        if not ranked:
            continue
        best = min(r for r, _, _ in ranked)
        if best > path_rank("PXB"):
            continue
        near = sorted((nme for r, _, nme in ranked if r == best), key=_natural)
        gpu_nic[str(i)] = near[0] if len(near) == 1 else near
        tok = next(t for r, t, _ in ranked if r == best)
        if worst is None or best > worst_rank:  # (best is path_rank(tok))
            worst, worst_rank = tok, best
    if not gpu_nic:
        return None
    per = Counter(x for val in gpu_nic.values()
                  for x in ([val] if isinstance(val, str) else val))
    placement: Dict[str, Any] = {"gpu_to_nearest_compute_nic": worst, "gpu_nic": gpu_nic,
                                 "evidence": EVIDENCE}
    if len(set(per.values())) == 1 and all(isinstance(x, str) for x in gpu_nic.values()):
        placement["gpus_per_compute_nic"] = next(iter(per.values()))
    return placement


def _natural(s: str) -> List[Any]:
    # digit runs compare as numbers of any length, without int() (ASCII digits only)
    return [(len(t.lstrip("0")), t.lstrip("0")) if is_ascii_digits(t) else t
            for t in re.split(r"([0-9]+)", s)]
