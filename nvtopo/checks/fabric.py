"""NVSwitch systems: is the NVLink fabric up (Fabric Manager), are the switches there?"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..model import Topology
from . import Finding, Subject, demote, facts as F, finding
from . import subject as S
from .select import Selection

HINT_FM = ("check the fabric manager: systemctl status nvidia-fabricmanager (its version "
           "must match the driver), journalctl -u nvidia-fabricmanager; on NVL72 racks check "
           "the NVLink switch trays and NMX; then reset the GPUs or reboot")



def _gpus(n: int) -> str:
    """``GPU`` or ``GPUs`` for a count (plural agreement in messages built from counts)."""
    return "GPU" if n == 1 else "GPUs"

def _all_pairs(v: F.View) -> List[Subject]:
    p = sorted(v.present)
    return [S.pair(a, b) for i, a in enumerate(p) for b in p[i + 1:]] + \
        [S.gpu(a) for a in p] + [S.NODE]


def _fabric_source(topo: Topology, i: int) -> str:
    """Who stated GPU ``i``'s fabric facts: NVML, or a pasted ``nvidia-smi -q``."""
    g = topo.gpu(i)
    return "nvml" if g is not None and g.nvml is not None and g.nvml.fabric is not None \
        else "nvml-text"


def check(topo: Topology, sel: Selection) -> List[Finding]:
    layout = sel.layout
    v = F.view(topo)
    # without a layout, a GPU that reports a fabric state (NVML, or a pasted -q Fabric
    # block) is on an NVLink fabric: its state is a fact to check
    nvswitch = bool(layout.nvlink.nvswitch) if layout is not None else bool(
        topo.nvswitch) or any(i in v.fabric for i in v.present)
    if not nvswitch:
        return []
    fab = _Fabric(topo, layout, v, nvswitch)
    down = fab.down()
    if down is not None:
        return [down]
    return fab.health()


class _Fabric:
    """The fabric family's reading of an NVSwitch node: each GPU's fabric state, where it
    was read, and what a fabric that is down takes with it (pairs without NVLink, links
    down)."""

    def __init__(self, topo: Topology, layout: Any, v: Any, nvswitch: bool) -> None:
        self.topo, self.layout, self.v = topo, layout, v
        self.want_fabric = bool(layout.nvlink.fabric) if layout is not None else nvswitch
        self.inferred = layout.nvlink.inferred() if layout is not None else True
        self.present = present = [i for i in v.present]
        self.states = states = {i: v.fabric[i] for i in present if i in v.fabric}
        self.fsrc = ", ".join(sorted({_fabric_source(topo, i) for i in states})) or "nvml"
        links_down = sum(len(v.links[i].down) for i in present if i in v.links)
        no_nv = sum(1 for (c, _) in v.pairs.values() if c == 0)
        consequences = []
        if no_nv:
            consequences.append(f"{no_nv} GPU pairs without NVLink")
        if links_down:
            consequences.append(f"{links_down} link{'s' if links_down != 1 else ''} down")
        self.tail = ("; " + ", ".join(consequences) + " as a result") if consequences else ""

    def down(self) -> Optional[Finding]:
        """The fabric not started, still training, failed, or (by the pairs) down: one
        finding for the node, the root cause of the NVLink findings it covers."""
        v, present, states, fsrc, tail = self.v, self.present, self.states, self.fsrc, self.tail
        layout = self.layout
        by_state: Dict[str, List[int]] = {}
        for i, f in states.items():
            by_state.setdefault(f.state, []).append(i)
        if by_state.get("not_started"):
            gpus = by_state["not_started"]
            return finding(
                # NVML's own fabric state: an error whatever the layout's evidence (demotion
                # is for findings that rest on an inferred layout fact alone)
                "error" if self.want_fabric else "warning", "fabric.not_started",
                S.NODE, f"NVLink fabric not started on {len(gpus)} of {len(present)} {_gpus(len(present))} "
                f"(GPU {', '.join(map(str, gpus))}): Fabric Manager is not running or has not "
                f"trained the NVSwitch fabric{tail}",
                expected="completed/success", actual="not_started", source=fsrc, hint=HINT_FM,
                covers=_all_pairs(v))
        if by_state.get("in_progress"):
            gpus = by_state["in_progress"]
            return finding(
                "error", "fabric.in_progress", S.NODE,
                f"NVLink fabric training still in progress on {len(gpus)} {_gpus(len(gpus))}{tail}",
                expected="completed/success", actual="in_progress", source=fsrc,
                hint="wait a minute and re-check; if it stays in progress: " + HINT_FM,
                covers=_all_pairs(v))
        failed = {i: f.status for i, f in states.items()
                  if f.state == "completed" and f.status not in (None, "success")}
        if failed:
            st = sorted(set(map(str, failed.values())))
            return finding(
                "error", "fabric.failed", S.NODE,
                f"NVLink fabric registration failed on {len(failed)} {_gpus(len(failed))} (status "
                f"{', '.join(st)}){tail}", expected="completed/success",
                actual=f"completed/{st[0]}", source=fsrc, hint=HINT_FM, covers=_all_pairs(v))
        if F.fabric_down(v, layout) == "no_nvlink":
            src = sorted({s for _, s in v.pairs.values()})
            return finding(
                demote("error", self.inferred), "fabric.not_started", S.NODE,
                f"no NVLink between any of the {len(present)} {_gpus(len(present))} of an NVSwitch system "
                f"({layout.name if layout is not None else 'NVSwitch'}): the NVLink fabric is "
                "down (Fabric Manager not running or failed)"
                + ("" if states else "; fabric state unknown (no NVML fabric data)"),
                expected=f"NV{layout.nvlink.pair_count if layout is not None else '#'}",
                actual="no NV#", source=", ".join(src), hint=HINT_FM, covers=_all_pairs(v))
        return None

    def health(self) -> List[Finding]:
        """A fabric that is up: its health, the GPUs in no NVLink partition, the fabric
        state not read, NVSwitches missing."""
        layout, states, fsrc, inferred = self.layout, self.states, self.fsrc, self.inferred
        want_fabric, v = self.want_fabric, self.v
        out: List[Finding] = []
        unhealthy = {i: f.health_summary for i, f in states.items()
                     if f.health_summary in ("unhealthy", "limited_capacity")}
        if unhealthy:
            worst = "unhealthy" if "unhealthy" in unhealthy.values() else "limited_capacity"
            out.append(finding(
                demote("error", inferred) if worst == "unhealthy" else "warning",
                "fabric.unhealthy", S.NODE,
                f"NVLink fabric reports {worst} on {len(unhealthy)} {_gpus(len(unhealthy))} "
                f"(GPU {', '.join(map(str, sorted(unhealthy)))})",
                expected="healthy", actual=worst, source=fsrc, hint=HINT_FM))
        no_uuid = [i for i, f in states.items() if f.state == "completed"
                   and f.status == "success" and not f.cluster_uuid]
        if no_uuid and want_fabric and layout is not None and layout.nvlink.nvswitch_count is None:
            # multi-node NVLink (NVL72): a zero cluster UUID means the GPU joined no partition
            out.append(finding(
                demote("error", inferred), "fabric.no_clique", S.NODE,
                f"{len(no_uuid)} {_gpus(len(no_uuid))} {'has' if len(no_uuid) == 1 else 'have'} no NVLink cluster UUID: not part of an NVLink "
                "partition", expected="cluster UUID", actual=None, source=fsrc, hint=HINT_FM))
        if want_fabric and not states:
            out.append(finding("info", "fabric.not_checked", S.NODE,
                               "fabric state not checked: no NVML fabric data in the input "
                               "(A100 and older report none; a topo text has none)",
                               source=", ".join(self.topo.sources)))
        want_sw = layout.nvlink.nvswitch_count if layout is not None else None
        if isinstance(want_sw, int) and want_sw and v.switches:
            if len(v.switches) < want_sw:
                out.append(finding(
                    demote("error", inferred), "nvswitch.missing", S.NODE,
                    f"NVLinks reach {len(v.switches)} NVSwitches, the layout has {want_sw}",
                    expected=want_sw, actual=len(v.switches), source="nvml",
                    hint="nvidia-smi nvlink -R shows which switch each link reaches; a missing "
                         "switch needs the baseboard serviced"))
        return out
