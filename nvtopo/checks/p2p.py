"""P2P: GPUs the layout links by NVLink must be able to talk peer to peer."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..model import Topology
from . import Finding, Subject, demote, facts as F, finding
from . import subject as S
from .select import Selection


def _matrices(topo: Topology) -> Dict[str, Any]:
    """capability -> (devices, cells, source): NVML's matrices, or a pasted -p2p output."""
    out: Dict[str, Any] = {}
    nv = topo.nvml
    for cap, m in ((nv.p2p if nv is not None else None) or {}).items():
        if m.devices and m.cells:
            out[cap] = (m.devices, m.cells, "nvml")
    if topo.p2p is not None:
        cap = {"r": "read", "w": "write", "n": "nvlink", "a": "atomics"}.get(
            topo.p2p.mode or "", topo.p2p.mode or "p2p")
        out.setdefault(cap, (topo.p2p.devices, topo.p2p.cells, topo.p2p.source))
    return out


def check(topo: Topology, sel: Selection) -> List[Finding]:
    layout = sel.layout
    v = F.view(topo)
    out: List[Finding] = []
    if layout is None or F.fabric_down(v, layout) is not None:
        return out
    expected = F.layout_pairs(layout, F.expected_gpus(layout, v))
    want = {k for k, c in expected.items() if c > 0}
    if not want:
        return out
    mats = _matrices(topo)
    if not mats:
        out.append(finding("info", "p2p.not_checked", S.NODE,
                           "P2P not checked: no P2P status in the input (NVML records it; "
                           "nvidia-smi topo -p2p prints it)", source=", ".join(topo.sources)))
        return out
    inferred = layout.nvlink.inferred()
    present = set(v.present)
    bad: Dict[Tuple[int, int], Dict[str, str]] = {}
    srcs: Dict[Tuple[int, int], str] = {}
    for cap, (devs, cells, src) in mats.items():
        # each label's GPU index once, the GPUs present alone (not once per cell)
        gpus = [(i, ia) for i, ia in enumerate(F.gpu_index(a) for a in devs)
                if ia is not None and ia in present]
        for i, ia in gpus:
            for j, ib in gpus:
                if ia >= ib or (ia, ib) not in want:
                    continue
                tok = cells[i][j] if cells[i][j] is not None else cells[j][i]
                if tok is None or tok in ("OK", "X"):
                    continue
                bad.setdefault((ia, ib), {})[cap] = tok
                srcs[(ia, ib)] = src
    wanted = {(a, b) for (a, b) in want if a in present and b in present}
    if len(bad) >= 2 and set(bad) == wanted:
        # one cause, one finding: P2P off on every pair is a setting (IOMMU/ACS, a
        # virtualised node, the driver's registry keys), not a fault per pair
        caps_all = sorted({f"{k}: {val}" for caps in bad.values() for k, val in caps.items()})
        out.append(finding(
            demote("error", inferred), "p2p.not_supported", S.NODE,
            f"P2P is not available between any of the {len(bad)} GPU pairs the layout links "
            f"by NVLink ({', '.join(caps_all)})",
            expected="OK", actual=", ".join(caps_all), source=", ".join(sorted(set(srcs.values()))),
            hint="one setting disables it everywhere: check IOMMU/ACS settings (or the VM's "
                 "passthrough), that the NVLinks are up (nvtopo links) and the driver's P2P "
                 "registry keys (DR = disabled by regkey)",
            covers=[S.pair(a, b) for a, b in sorted(bad)]))
        return out
    # in the order of the subjects' text, as the report always listed them
    for (ia, ib), caps in sorted(bad.items(), key=lambda kv: str(S.pair(*kv[0]))):
        subj: Subject = S.pair(ia, ib)
        out.append(finding(
            demote("error", inferred), "p2p.not_supported", subj,
            f"P2P between {subj} is not available ("
            + ", ".join(f"{k}: {val}" for k, val in sorted(caps.items()))
            + ") though the layout links them by NVLink",
            expected="OK", actual=caps, source=srcs[(ia, ib)],
            hint="check that IOMMU/ACS settings allow P2P, that the NVLinks are up "
                 "(nvtopo links) and the driver's P2P registry keys (DR = disabled by regkey)"))
    return out
