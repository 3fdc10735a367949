"""PCIe: GPU and NIC links narrower or slower than their hops allow.

Expected per hop = min(max of both ends) from sysfs (a Gen5 NIC in a Gen4
slot is not degraded).  Width below is an error.  Generation below is a
warning unless the GPU is known to be busy: idle GPUs lower their PCIe speed
(P8 at Gen1) by design.  "Busy" is judged from an NVML utilisation sample
(``GPU.nvml.utilization.gpu`` >= 50 %) where the input records one; this
nvtopo's NVML probe records none, so a slow link reads as "idle or unknown".
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..model import Topology
from ..model.pcie import PciPlacement, PcieHop
from . import Finding, facts as F, finding, roles
from . import subject as S
from .select import Selection

BUSY_UTILISATION = 50

HINT_WIDTH = ("a link trained narrower than the slot: reseat the card (and its riser/cable), "
              "check for AER errors in dmesg, then check the slot/board")


def _busy(g: Any) -> Optional[bool]:
    util = g.nvml.utilization.gpu if g.nvml is not None and g.nvml.utilization is not None \
        else None
    if isinstance(util, (int, float)):
        return util >= BUSY_UTILISATION
    return None


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
    for i in v.present:
        g = topo.gpu(i)
        if g is None:
            continue
        read = _gpu_link(g)
        if read is None:
            continue
        checked += 1
        out.extend(_gpu_findings(i, g, *read))
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


def _gpu_findings(i: int, g: Any, width: _Short, speed: _Short, src: str
                  ) -> List[Finding]:
    """GPU ``i``'s link narrower (an error) or slower (an error only under load: idle GPUs
    lower their PCIe speed) than it could be."""
    out: List[Finding] = []
    if width:
        out.append(finding(
            "error", "pcie.width_low", S.gpu(i),
            f"GPU{i} PCIe link is x{width[1]} where x{width[0]} is possible ({width[2]}): "
            "half the host bandwidth or less", expected=f"x{width[0]}",
            actual=f"x{width[1]}", source=src, hint=HINT_WIDTH, covers=[S.gpu(i)]))
    if speed:
        busy = _busy(g)
        out.append(finding(
            "error" if busy else "warning", "pcie.gen_low", S.gpu(i),
            f"GPU{i} PCIe link runs at Gen{speed[1]} where Gen{speed[0]} is possible "
            f"({speed[2]}); "
            + ("the GPU is busy, so this is not idle power saving" if busy else
               "the GPU is idle or its load is unknown: idle GPUs lower their PCIe "
               "speed, so re-check under load"),
            expected=f"Gen{speed[0]}", actual=f"Gen{speed[1]}", source=src,
            hint="re-check while the GPU is busy (nvidia-smi -q -d PCIE under load); if it "
                 "stays slow, check the BIOS PCIe speed setting, reseat, check for AER "
                 "errors", covers=[S.gpu(i)]))
    return out


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
