"""PCIe: GPU and NIC links narrower or slower than their hops allow, and the GPUs' PCIe
replay counters.

Expected per hop = min(max of both ends) from sysfs (a Gen5 NIC in a Gen4 slot is not
degraded).  Width below is an error, except on a laptop GPU (a ``Laptop``/``Mobile``/
``Max-Q`` name), whose lane count is the notebook's design: a note.  Generation below is
judged by the GPU's load, as the input states it (:func:`_load`): an NVML or ``-q``
utilisation sample (>= 50 % is busy), the ``-q`` performance state (P0-P2: full
performance; P5 and above: a power-saving state) and the ``-q`` clocks reason ``Idle``.
Under load (or in P0-P2) a slow link is an error; idle (P8, or ``Idle: Active``), GPUs lower
their PCIe speed by design: one note for the node, unless another GPU of the same model,
idle the same way, keeps its link at full speed (then this one's is a fault: an error);
with the load unknown, a warning.  The replay counter (``Replays Since Reset``, NVML's
PCIe replay counter): nonzero is a warning, above the ``replay`` threshold an error.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ..model import Topology
from ..model.pcie import PciPlacement, PcieHop
from . import Finding, catalog, facts as F, finding, roles
from . import subject as S
from .select import Selection

BUSY_UTILISATION = 50
#: performance states at or below this are full performance; at or above IDLE_PSTATE, a
#: power-saving state (P8 is what an idle GPU shows)
FULL_PSTATE = 2
IDLE_PSTATE = 5

HINT_WIDTH = ("a link trained narrower than the slot: reseat the card (and its riser/cable), "
              "check for AER errors in dmesg, then check the slot/board")
HINT_GEN = ("re-check while the GPU is busy (nvidia-smi -q -d PCIE under load); if it stays "
            "slow, check the BIOS PCIe speed setting, reseat, check for AER errors")
#: a GPU name that says the GPU is a notebook's: its PCIe width is the notebook's design
_MOBILE = re.compile(r"\b(?:Laptop|Mobile|Max-Q)\b|\bRTX [0-9]+M\b", re.I)


def _util(g: Any) -> Optional[float]:
    """The GPU's utilisation sample (NVML's, else a pasted ``-q``'s), percent."""
    for u in (g.nvml.utilization if g.nvml is not None else None,
              g.nvml_text.utilization if g.nvml_text is not None else None):
        if u is not None and isinstance(u.gpu, (int, float)):
            return float(u.gpu)
    return None


def _load(g: Any) -> Tuple[Optional[str], str]:
    """GPU ``g``'s load as the input states it: ``("busy" | "idle" | None, why)``.  Busy: a
    utilisation sample >= 50 %, or a full performance state (P0-P2: the link should run at
    full speed); idle: a power-saving state (P5 and above), or the clocks reason Idle active
    with no utilisation sample saying it is busy; None: the input does not say."""
    util = _util(g)
    tx = g.nvml_text
    ps = tx.performance_state if tx is not None else None
    pn = int(ps[1:]) if ps else None
    if util is not None and util >= BUSY_UTILISATION:
        return "busy", f"{util:g} % utilised"
    if pn is not None and pn <= FULL_PSTATE:
        return "busy", f"in {ps} (full performance)"
    if pn is not None and pn >= IDLE_PSTATE:
        return "idle", f"in {ps}" + (", clocks reason Idle active" if tx.clocks_idle else "")
    if tx is not None and tx.clocks_idle and pn is None:
        return "idle", "clocks reason Idle active"
    return None, ""


def _idle_state(g: Any) -> Tuple[Optional[str], Optional[bool]]:
    """How a GPU is idle (performance state, clocks reason Idle), to compare GPUs."""
    tx = g.nvml_text
    return (tx.performance_state, tx.clocks_idle) if tx is not None else (None, None)


def _hop_text(h: PcieHop) -> str:
    return f"{h.upstream} → {h.downstream}"


def _from_sysfs(facts: PciPlacement) -> Tuple[Optional[PcieHop], Optional[PcieHop]]:
    """(worst width hop, worst speed hop) among the hops that are below what they allow."""
    hops: List[PcieHop] = list(facts.hops)
    if not hops and facts.narrowest_hop is not None:
        hops = [facts.narrowest_hop]
    w = [h for h in hops if h.width_degraded]
    s = [h for h in hops if h.speed_below_expected]
    return (min(w, key=lambda h: h.current_width) if w else None,  # type: ignore[arg-type, return-value]  # (a narrowed hop's width is known)
            min(s, key=lambda h: h.current_gts) if s else None)  # type: ignore[arg-type, return-value]  # (a slowed hop's speed is known)


def check(topo: Topology, sel: Selection) -> List[Finding]:
    v = F.view(topo)
    out: List[Finding] = []
    checked = 0
    reads: Dict[int, Tuple[Any, Tuple[_Short, _Short, str]]] = {}
    for i in v.present:
        g = topo.gpu(i)
        if g is None:
            continue
        out.extend(_replays(i, g, sel.layout))
        read = _gpu_link(g)
        if read is None:
            continue
        checked += 1
        reads[i] = (g, read)
    out.extend(_gpu_link_findings(reads))
    nic_out, nics_checked = _nic_findings(topo, sel.layout)
    out.extend(nic_out)
    checked += nics_checked
    if not checked and v.present:
        out.append(finding("info", "pcie.not_checked", S.NODE,
                           "PCIe links not checked: no sysfs or NVML PCIe data in the input",
                           source=", ".join(topo.sources)))
    return out


_Short = Optional[Tuple[Any, Any, str]]  # (possible, current, which link) or None


def _gpu_link(g: Any) -> Optional[Tuple[_Short, _Short, str]]:
    """GPU ``g``'s PCIe link below what it could be: (width, speed, source), each
    ``(possible, current, which link)`` or None; None when no source reads the link.
    sysfs (every hop up to the root port) first, else NVML (or a pasted -q PCI block)."""
    sy = g.sysfs
    nv = g.nvml.pcie if g.nvml is not None else None
    nv_src = "nvml"
    if nv is None and g.nvml_text is not None:  # pasted nvidia-smi -q PCI block
        nv, nv_src = g.nvml_text.pcie, "nvml-text"
    width: _Short = None
    speed: _Short = None
    if sy is not None and (sy.hops or sy.narrowest_hop is not None):
        wh, sh = _from_sysfs(sy)
        if wh:
            width = (wh.expected_width, wh.current_width, _hop_text(wh))
        if sh:
            speed = (sh.expected_gen, sh.current_gen, _hop_text(sh))
        return width, speed, "sysfs"
    if nv is not None and nv.current_width is not None:
        if isinstance(nv.max_width, int) and nv.current_width < nv.max_width:
            width = (nv.max_width, nv.current_width, "GPU link")
        cg, mg = nv.current_gen, nv.max_gen
        if isinstance(cg, int) and isinstance(mg, int) and cg < mg:
            speed = (mg, cg, "GPU link")
        return width, speed, nv_src
    return None


def _gpu_link_findings(reads: Dict[int, Tuple[Any, Tuple[_Short, _Short, str]]]
                       ) -> List[Finding]:
    """Every read GPU's link findings; the idle ones' slow links as one note."""
    out: List[Finding] = []
    idle: List[Tuple[int, _Short, str, str]] = []
    for i, (g, (width, speed, src)) in reads.items():
        out.extend(_width_finding(i, g, width, src))
        if not speed:
            continue
        load, why = _load(g)
        if load == "idle":
            peer = _full_speed_peer(i, g, speed, reads)
            if peer is None:
                idle.append((i, speed, why, src))
                continue
            why += f", as GPU{peer} is, whose link keeps Gen{speed[0]}"
        out.append(_gen_finding(i, load, why, speed, src))
    if idle:
        groups: Dict[Tuple[str, str], List[int]] = {}
        for i, sp, why, _ in idle:  # (a slow link's speeds are known)
            groups.setdefault((f"Gen{sp[1]} of Gen{sp[0]}", why), []).append(i)  # type: ignore[index]
        who = [("GPU" if len(ix) == 1 else "GPUs ") + ", ".join(map(str, ix))
               + f" at {gen} ({why})" for (gen, why), ix in groups.items()]
        out.append(finding(
            "info", "pcie.gen_idle", S.NODE if len(idle) > 1 else S.gpu(idle[0][0]),
            "PCIe link below its top speed on idle GPUs: "
            + "; ".join(who) + ". Idle GPUs lower their PCIe speed by design; not a fault",
            source=", ".join(sorted({x[3] for x in idle})),
            hint="to test the link, re-check under load (nvidia-smi -q -d PCIE,PERFORMANCE)",
            covers=[S.gpu(x[0]) for x in idle]))
    return out


def _full_speed_peer(i: int, g: Any, speed: _Short,
                     reads: Dict[int, Tuple[Any, Tuple[_Short, _Short, str]]]) -> Optional[int]:
    """Another GPU of the same model, idle the same way, whose link runs at the top speed
    this one's could: then this one's slow link is no power saving."""
    for j, (h, (_, sp, _)) in sorted(reads.items()):
        if j == i or sp or h.name != g.name or _idle_state(h) != _idle_state(g):
            continue
        pc = h.nvml.pcie if h.nvml is not None else None
        if (pc is None or pc.current_gen is None) and h.nvml_text is not None:
            pc = h.nvml_text.pcie
        if pc is not None and pc.current_gen == speed[0]:  # type: ignore[index]
            return j
    return None


def _width_finding(i: int, g: Any, width: _Short, src: str) -> List[Finding]:
    """GPU ``i``'s link narrower than it could be: an error, or a note on a laptop GPU."""
    if not width:
        return []
    if g.name and _MOBILE.search(g.name):
        return [finding(
            "info", "pcie.width_design", S.gpu(i),
            f"GPU{i} ({g.name}) PCIe link is x{width[1]} of x{width[0]} ({width[2]}): a "
            "laptop GPU's lane count is the notebook's design, not a fault",
            expected=f"x{width[0]}", actual=f"x{width[1]}", source=src, covers=[S.gpu(i)])]
    return [finding(
        "error", "pcie.width_low", S.gpu(i),
        f"GPU{i} PCIe link is x{width[1]} where x{width[0]} is possible ({width[2]}): "
        "half the host bandwidth or less", expected=f"x{width[0]}",
        actual=f"x{width[1]}", source=src, hint=HINT_WIDTH, covers=[S.gpu(i)])]


def _gen_finding(i: int, load: Optional[str], why: str, speed: _Short, src: str) -> Finding:
    """GPU ``i``'s slow link: an error under load (or beside an idle peer at full speed), a
    warning where the load is unknown."""
    assert speed is not None
    head = (f"GPU{i} PCIe link runs at Gen{speed[1]} where Gen{speed[0]} is possible "
            f"({speed[2]}); ")
    if load is None:
        return finding(
            "warning", "pcie.gen_low", S.gpu(i), head + "the GPU is idle or its load is "
            "unknown: idle GPUs lower their PCIe speed, so re-check under load",
            expected=f"Gen{speed[0]}", actual=f"Gen{speed[1]}", source=src, hint=HINT_GEN,
            covers=[S.gpu(i)])
    return finding(
        "error", "pcie.gen_low", S.gpu(i),
        head + f"the GPU is {why}, so this is not idle power saving",
        expected=f"Gen{speed[0]}", actual=f"Gen{speed[1]}", source=src, hint=HINT_GEN,
        covers=[S.gpu(i)])


def _replays(i: int, g: Any, layout: Any) -> List[Finding]:
    """GPU ``i``'s PCIe replay counter (NVML, or a pasted ``-q``): nonzero is a warning,
    above the ``replay`` threshold an error (the link retransmits: signal integrity)."""
    pc = g.nvml.pcie if g.nvml is not None else None
    src = "nvml"
    if (pc is None or pc.replay_counter is None) and g.nvml_text is not None:
        pc, src = g.nvml_text.pcie, "nvml-text"
    n = pc.replay_counter if pc is not None else None
    if not isinstance(n, int) or n <= 0:
        return []
    given = getattr(getattr(layout, "pcie", None), "error_thresholds", None)
    limit = catalog.threshold("pcie", catalog.thresholds("pcie", given), "replay")
    above = n > limit
    return [finding(
        "error" if above else "warning", "pcie.replays", S.gpu(i),
        f"GPU{i} PCIe link replayed {n} packets since the driver loaded"
        + (f", above the threshold of {limit}: the link corrupts packets"
           if above else f" (threshold {limit})"),
        expected=f"<= {limit}" if above else "0", actual=str(n), source=src,
        hint="watch whether the counter grows (nvidia-smi -q -d PCIE); check AER errors in "
             "dmesg; reseat the card (and its riser/cable)", covers=[S.gpu(i)])]


def _nic_findings(topo: Topology, layout: Any) -> Tuple[List[Finding], int]:
    """The RDMA devices' PCIe links below what they could be, and how many were read.  One
    degraded PCIe link is one finding, whatever RDMA devices sit behind it (a RoCE bond on
    a PF, a sub-function, both ports of a dual-port card): grouped by the link."""
    comp_names = roles.resolve(topo, layout).compute
    checked = 0
    groups: Dict[Tuple[str, str, str], List[Any]] = {}
    for n in topo.nics:
        pci = n.sysfs.pci if n.sysfs is not None else None
        hop = pci.narrowest_hop if pci is not None else None
        if hop is None:
            continue
        checked += 1
        kind = "width" if hop.width_degraded else "gen" if hop.speed_below_expected else ""
        if kind:
            groups.setdefault((kind, hop.upstream, hop.downstream), []).append(n)
    out: List[Finding] = []
    for (kind, _, down), nics in groups.items():
        # the device on the link's own PCI function first, then by name
        nics = sorted(nics, key=lambda n: (n.sysfs.pci_address != down, n.name))
        hop = nics[0].sysfs.pci.narrowest_hop
        names = [n.name for n in nics]
        who = (f"{names[0]} PCIe link" if len(names) == 1 else
               f"{', '.join(names[:-1])} and {names[-1]} share one PCIe link, which")
        covers = [S.nic(x) for x in names]
        if kind == "width":
            out.append(finding(
                "error" if any(x in comp_names for x in names) else "warning",
                "pcie.width_low", S.nic(names[0]),
                f"{who} is x{hop.current_width} where x{hop.expected_width} "
                f"is possible ({_hop_text(hop)})", expected=f"x{hop.expected_width}",
                actual=f"x{hop.current_width}", source="sysfs", hint=HINT_WIDTH,
                covers=covers))
        else:
            out.append(finding(
                "warning", "pcie.gen_low", S.nic(names[0]),
                f"{who} runs at Gen{hop.current_gen} where "
                f"Gen{hop.expected_gen} is possible ({_hop_text(hop)})",
                expected=f"Gen{hop.expected_gen}", actual=f"Gen{hop.current_gen}",
                source="sysfs", hint="check the BIOS PCIe speed setting, reseat, check for AER "
                                     "errors", covers=covers))
    return out, checked
