"""GPUs missing, lost, extra, or not the model the layout says."""

from __future__ import annotations

from typing import Any, List, Optional

from ..layouts import name_matches
from ..model import Topology
from . import Finding, Subject, demote, facts as F, finding
from . import subject as S
from .select import Selection


def _pair_subjects(idx: int, n: int) -> List[Subject]:
    return [S.pair(min(idx, j), max(idx, j)) for j in range(max(n, idx + 1)) if j != idx]


def check(topo: Topology, sel: Selection) -> List[Finding]:
    v = F.view(topo)
    out: List[Finding] = []
    layout = sel.layout
    n_exp = layout.gpus.count if layout is not None else None
    inferred = layout.gpus.inferred() if layout is not None else False
    n_all = max([g.index + 1 for g in topo.gpus] + [n_exp or 0])
    src = ", ".join(s for s in topo.sources if s != "host") or "input"
    for idx, why in sorted(v.lost.items()):
        out.append(finding(
            demote("error", False), "gpu.lost", S.gpu(idx),
            f"GPU{idx} fell off the bus while it was read (NVML: GpuIsLost): {why}; its "
            "NVLinks, P2P and placement are unknown",
            expected="present", actual="lost", source="nvml",
            hint="check dmesg for Xid 79 / AER errors; drain the node, reset the GPU "
                 "(nvidia-smi -r) or reboot; reseat or replace the GPU if it recurs",
            covers=[S.gpu(idx)] + _pair_subjects(idx, n_all)))
    for idx, why in sorted(v.absent_in.items()):
        out.append(finding(
            "error", "gpu.missing", S.gpu(idx),
            f"GPU{idx} is missing: {why} (on the PCI bus but not usable by the driver)",
            expected="present", actual="absent", source=src,
            hint="check dmesg for Xid/AER errors and nvidia-smi -q; reset or reboot; reseat "
                 "the GPU if it stays missing",
            covers=[S.gpu(idx)] + _pair_subjects(idx, n_all)))
    present = set(v.present) | set(v.lost) | set(v.absent_in)
    if isinstance(n_exp, int) and not F.lists_every_gpu(topo):
        out.append(finding(
            "info", "gpu.not_checked", S.NODE,
            f"GPUs missing not checked: the input is pasted per-GPU text (nvidia-smi nvlink/-q, "
            f"dcgmi nvlink -s), which "
            f"states facts about the {len(present)} GPU(s) it names and nothing about the "
            f"others (the layout has {n_exp})", source=src,
            hint="paste nvidia-smi topo -m (or take a snapshot) to check the GPU count"))
    elif isinstance(n_exp, int):
        have = len(present)
        if have < n_exp:
            gone = [i for i in range(n_exp) if i not in present]
            gone = gone[: n_exp - have]
            renumber = bool(present) and max(present) < have
            # a mesh matched up to renumbering: the NVLink wiring tells which layout slot is
            # absent (the subject stays the index the tools leave out: the last ones)
            slots = sel.absent_slots
            empty = sel.empty_slots
            if not empty and not slots and not v.absent_in and not v.lost \
                    and not sel.mapping:
                # a layout given directly (not through select): the same NIC evidence
                placed = F.slots_by_nic(topo, layout, sorted(present))
                empty = placed[1] if placed is not None else []
            if empty:
                # the port map's NICs tell the slot, and that its card is on the bus with no
                # GPU near it: the GPU is gone (the tools number the GPUs after it one lower)
                # the layout slot -> its port-map NICs, as the layout file states them
                # (before the layout was renumbered to the node's GPUs)
                assert layout is not None  # (n_exp only with a layout)
                orig = sel.port_map or layout.nics.placement.port_map or {}
                # the subject stays the index the tools leave out (the last ones: the node's
                # own GPU numbers are taken by the GPUs present); the message names the slot
                for idx, slot in zip(gone, empty):
                    nics = orig.get(slot) or []
                    out.append(finding(
                        demote("error", inferred), "gpu.missing", S.gpu(idx),
                        f"GPU{idx} is missing: {have} of {n_exp} GPUs are listed, and the "
                        f"empty slot is the layout's GPU{slot} (its NIC "
                        f"{'/'.join(nics) or '?'} is on the bus with no GPU near it); the "
                        "tools number the GPUs after it one lower, and those are checked in "
                        "their own slots", expected=n_exp, actual=have, source=src,
                        hint="check dmesg for Xid 79 (fallen off the bus) and lspci for the "
                             "device; reseat or replace the GPU (the node should be drained)",
                        covers=[S.gpu(idx)]))
            elif F.bare_metal(topo, v, present):
                # (the NVLink mesh tells which slot is absent, not that its GPU is gone:
                # a container given 6 of a DGX-1's 8 GPUs shows the same mesh)
                for k, idx in enumerate(gone):
                    where = (f"; by the NVLink mesh the absent GPU is the layout's "
                             f"GPU{slots[k]}" if len(slots) == len(gone)
                             and slots[k] != idx else "")
                    out.append(finding(
                        demote("error", inferred), "gpu.missing", S.gpu(idx),
                        f"GPU{idx} is missing: {have} of {n_exp} GPUs are listed"
                        + (" (GPUs are numbered after the ones present, so the missing GPU "
                           "may be another slot; compare PCI bus ids)" if renumber
                           and idx >= have else "") + where
                        + ("" if len(slots) == len(gone) else
                           "; sysfs shows the board's PCIe switches (bare metal, not a VM's "
                           "flat bus)")
                        + "; its NVLink pairs, NIC placement and NUMA slot are not checked",
                        expected=n_exp, actual=have, source=src,
                        hint="check dmesg for Xid 79 (fallen off the bus) and lspci for the "
                             "device; reseat or replace the GPU (the node should be "
                             "drained); in a VM or container, check which GPUs are passed "
                             "through (CUDA_VISIBLE_DEVICES)",
                        covers=[S.gpu(idx)] + _pair_subjects(idx, n_all)))
            else:
                # a count alone cannot tell GPUs that fell off the bus from a VM or a
                # container given part of the board: one warning, never an error
                out.append(finding(
                    "warning", "gpu.missing", S.NODE,
                    f"{have} of {n_exp} GPU{'s' if n_exp != 1 else ''} seen: GPUs missing, "
                    "or a VM/container given a subset? (no source shows a GPU absent: none "
                    "lists it on the PCI bus, none lost it, no port-map NIC sits in an empty "
                    "slot)" + (
                        "; by the NVLink mesh the absent slot"
                        + ("s are" if len(slots) > 1 else " is") + " the layout's "
                        + ", ".join(f"GPU{t}" for t in slots) if len(slots) == len(gone)
                        else "") + "; the absent slots' NVLink pairs, NICs and NUMA are "
                    "not checked",
                    expected=n_exp, actual=have, source=src,
                    hint="in a VM or container, check which GPUs are passed through "
                         "(CUDA_VISIBLE_DEVICES); on bare metal, check dmesg for Xid 79 "
                         "(fallen off the bus) and lspci for the device, and take a snapshot "
                         "(nvtopo snapshot) so sysfs can tell",
                    covers=[S.gpu(i) for i in gone]))
        elif have > n_exp:
            out.append(finding(
                "warning", "gpu.extra", S.NODE,
                f"{have} GPUs listed, the layout {layout.name} has {n_exp}",  # type: ignore[union-attr]  # (n_exp only with a layout)
                expected=n_exp, actual=have, source=src,
                hint="is this the right layout? give --layout NAME or --layout-file FILE"))
    elif not topo.gpus:
        out.append(finding("info", "gpu.not_checked", S.NODE, "no GPU in the input",
                           source=src))
    if topo.gpus and not any(s in F.DRIVER_SOURCES for s in topo.sources):
        out.append(finding("info", "gpu.not_checked", S.NODE,
                           "GPUs missing/lost not checked: no GPU list from nvidia-smi or "
                           "NVML (sysfs sees the PCI devices, not whether the driver can "
                           "use them)", source=src))
    pattern = layout.gpus.name_pattern if layout is not None else None
    if pattern:
        bad = [g for g in topo.gpus if g.name and not name_matches(pattern, g.name)]
        if bad:
            g = bad[0]
            out.append(finding(
                demote("error", inferred), "gpu.model", S.NODE if len(bad) > 1 else S.gpu(g.index, g.label),
                f"{len(bad)} {'GPU is' if len(bad) == 1 else 'GPUs are'} {g.name!r}, not what {layout.name} has "  # type: ignore[union-attr]  # (pattern only with a layout)
                f"({pattern})", expected=pattern, actual=g.name,
                source=g.sources.get("name", "nvml"),
                hint="is this the right layout? give --layout NAME or --layout-file FILE"))
        elif not any(g.name for g in topo.gpus) and topo.gpus:
            out.append(finding("info", "gpu.not_checked", S.NODE,
                               "GPU model not checked: no GPU names in the input (a topo "
                               "text does not name them; NVML does)", source=src))
    return out
