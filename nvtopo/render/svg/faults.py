"""Which drawn elements a check's error and warning findings name, from their typed subjects.

Nothing is parsed back from a subject's text: a GPU subject marks that GPU, a link its GPU
and its NVLink edge, a pair the arc and both GPUs, a GPU-NIC subject the PCIe edge and both
ends, a port or a NIC the NIC's box, an NVSwitch its box.  A subject the picture does not
draw (a NIC not in the model, the node, a source's own words) marks the frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from ...model import Topology

if TYPE_CHECKING:  # pragma: no cover
    from ...checks import Report

#: Severities the picture marks, by rank (info findings mark nothing).
SEV_RANK = {"error": 2, "warning": 1}


@dataclass
class Faults:
    """Severity per drawn element, from the check's findings."""

    gpus: Dict[int, str] = field(default_factory=dict)
    nics: Dict[str, str] = field(default_factory=dict)
    pairs: Dict[Tuple[int, int], str] = field(default_factory=dict)
    gpu_nic: Dict[Tuple[int, str], str] = field(default_factory=dict)
    gpu_links: Dict[int, str] = field(default_factory=dict)
    switches: Dict[str, str] = field(default_factory=dict)
    node: Optional[str] = None
    #: GPUs the report says are missing that the model does not hold (drawn as placeholders).
    missing: List[int] = field(default_factory=list)
    messages: Dict[str, List[str]] = field(default_factory=dict)

    @staticmethod
    def _put(d: Dict[Any, str], key: Any, sev: str) -> None:
        if SEV_RANK[sev] > SEV_RANK.get(d.get(key, ""), 0):
            d[key] = sev


def faults_of(report: Optional["Report"], topo: Topology,
              switch_ids: Mapping[str, str]) -> Faults:
    """Which drawn elements the report's error and warning findings name.

    ``switch_ids``: NVSwitch bus id (as NVML and the short form write it) -> element id."""
    out = Faults()
    if report is None:
        return out
    # a subject names a NIC by its device name or, from a topo text, by its matrix label
    label_to_name = {n.name: n.name for n in topo.nics}
    label_to_name.update({n.label: n.name for n in topo.nics})
    have = {g.index for g in topo.gpus}
    out.missing = [i for i in report.missing_gpus if i not in have]
    missing = set(out.missing)
    for f in report.findings:
        sev = f.severity
        if sev not in SEV_RANK:
            continue
        s = f.subject
        note = f"{sev}: {f.code}: {f.message or ''}"
        if s.kind in ("gpu", "link") and s.gpu is not None:
            idx = s.gpu
            if idx in missing:
                out.messages.setdefault(f"missing-{idx}", []).append(note)
                continue
            Faults._put(out.gpus, idx, sev)
            out.messages.setdefault(f"gpu-{idx}", []).append(note)
            if s.kind == "link" or f.code.startswith("nvlink."):
                Faults._put(out.gpu_links, idx, sev)
        elif s.kind == "pair" and s.gpu is not None and s.peer is not None:
            a, b = sorted((s.gpu, s.peer))
            Faults._put(out.pairs, (a, b), sev)
            for i in (a, b):
                Faults._put(out.gpus, i, sev)
                out.messages.setdefault(f"gpu-{i}", []).append(note)
        elif s.kind == "gpu_nic" and s.gpu is not None and s.name in label_to_name:
            idx, nic = s.gpu, label_to_name[s.name]
            Faults._put(out.gpu_nic, (idx, nic), sev)
            Faults._put(out.gpus, idx, sev)
            Faults._put(out.nics, nic, sev)
            out.messages.setdefault(f"gpu-{idx}", []).append(note)
            out.messages.setdefault(f"nic-{nic}", []).append(note)
        elif s.kind in ("port", "nic") and s.name in label_to_name:
            nic = label_to_name[s.name]
            Faults._put(out.nics, nic, sev)
            out.messages.setdefault(f"nic-{nic}", []).append(note)
        elif s.kind == "switch" and s.name in switch_ids:
            Faults._put(out.switches, switch_ids[s.name], sev)
            out.messages.setdefault(f"sw-{switch_ids[s.name]}", []).append(note)
        elif SEV_RANK[sev] > SEV_RANK.get(out.node or "", 0):
            out.node = sev
    return out
