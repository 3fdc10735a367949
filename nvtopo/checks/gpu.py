"""GPUs missing, lost, extra, or not the model the layout says."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

from .. import layouts as layouts_pkg
from ..layouts import name_matches
from ..model import Topology, path_rank, pci_bdf
from . import Finding, Subject, demote, facts as F, finding, roles
from . import subject as S
from .select import Selection


def _pair_subjects(idx: int, n: int) -> List[Subject]:
    return [S.pair(min(idx, j), max(idx, j)) for j in range(max(n, idx + 1)) if j != idx]


def check(topo: Topology, sel: Selection) -> List[Finding]:
    g = _Gpus(topo, sel)
    out = g.lost_and_absent()
    out.extend(g.count_findings())
    if topo.gpus and not any(s in F.DRIVER_SOURCES for s in topo.sources):
        out.append(finding("info", "gpu.not_checked", S.NODE,
                           "GPUs missing/lost not checked: no GPU list from nvidia-smi or "
                           "NVML (sysfs sees the PCI devices, not whether the driver can "
                           "use them)", source=g.src))
    out.extend(g.model_findings())
    out.extend(_drivers(topo, g.n_all))
    return out


#: The driver that drives a GPU; those that hold one for a virtual machine (passthrough).
NVIDIA_DRIVER = "nvidia"
PASSTHROUGH_DRIVERS = ("vfio-pci", "pci-stub")


def _drivers(topo: Topology, n_all: int) -> List[Finding]:
    """GPUs on the PCI bus that no NVIDIA driver holds, as sysfs read their driver: none
    bound, or another driver (nouveau): an error, everything the driver would tell is
    unknown; bound to a passthrough driver (vfio-pci): a note, the GPU is a VM's.  One
    finding per driver state (one cause: the driver not loaded), naming its GPUs.  A driver
    sysfs did not read (an older snapshot) says nothing."""
    names = layouts_pkg.device_names()
    by_state: Dict[str, List[str]] = {}
    idx: Dict[str, List[int]] = {}
    for g in topo.gpus:
        drv = g.sysfs.driver if g.sysfs is not None else None
        if drv is None or drv == NVIDIA_DRIVER:
            continue
        dev_id = str(g.sysfs.device_id or "").strip().lower()  # type: ignore[union-attr]  # (drv is read from it)
        by_state.setdefault(drv, []).append(
            f"GPU{g.index} {g.sysfs.pci_address}" + (  # type: ignore[union-attr]
                f" ({names[dev_id]})" if dev_id in names else f" (device {dev_id or '?'})"))
        idx.setdefault(drv, []).append(g.index)
    out: List[Finding] = []
    for drv, what in by_state.items():
        gpus = idx[drv]
        subj = S.gpu(gpus[0]) if len(gpus) == 1 else S.NODE
        listed = "; ".join(what)
        are = "is" if len(gpus) == 1 else "are"
        if drv in PASSTHROUGH_DRIVERS:
            out.append(finding(
                "info", "gpu.passthrough", subj,
                f"{listed} {are} bound to {drv}: passed through to a virtual machine, not "
                "this host's to drive; NVLink and NVML facts are checked inside the VM",
                expected=None, actual=drv, source="sysfs",
                hint="nothing to do if the GPU is meant for a VM; otherwise unbind it from "
                     f"{drv} and load the NVIDIA driver"))
            continue
        held = "with no driver bound" if drv == "" else f"bound to {drv}, not the NVIDIA driver"
        out.append(finding(
            "error", "gpu.no_driver", subj,
            f"{listed} {are} on the PCI bus {held}: not checked (unknown, not passed): "
            "the GPU list, NVLink, P2P, fabric and every NVML fact",
            expected=NVIDIA_DRIVER, actual=drv or "none", source="sysfs",
            hint=("install or load the NVIDIA driver (modprobe nvidia; dmesg says why it "
                  "did not bind)" if drv == "" else
                  f"blacklist {drv} and load the NVIDIA driver (modprobe -r {drv}; "
                  "modprobe nvidia), or reboot after rebuilding the initramfs"),
            covers=[S.gpu(i) for i in gpus]
            + [p for i in gpus for p in _pair_subjects(i, n_all)]))
    return out


class _Gpus:
    """The GPU family's reading: the layout's GPU count, whether it is inferred, every GPU
    index a pair can name, and the sources the findings cite."""

    def __init__(self, topo: Topology, sel: Selection) -> None:
        self.topo, self.sel = topo, sel
        self.v = F.view(topo)
        self.layout = layout = sel.layout
        self.n_exp = n_exp = layout.gpus.count if layout is not None else None
        self.inferred = layout.gpus.inferred() if layout is not None else False
        self.n_all = max([g.index + 1 for g in topo.gpus] + [n_exp or 0])
        self.src = ", ".join(s for s in topo.sources if s != "host") or "input"

    def lost_and_absent(self) -> List[Finding]:
        """GPUs a driver-level source lost (fell off the bus) or misses (on the PCI bus,
        not usable by the driver)."""
        v, n_all = self.v, self.n_all
        out: List[Finding] = []
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
                expected="present", actual="absent", source=self.src,
                hint="check dmesg for Xid/AER errors and nvidia-smi -q; reset or reboot; "
                     "reseat the GPU if it stays missing",
                covers=[S.gpu(idx)] + _pair_subjects(idx, n_all)))
        return out

    def count_findings(self) -> List[Finding]:
        """The GPU count against the layout's: fewer (missing), more (extra), or not
        checked (pasted per-GPU text, no GPU at all)."""
        v, n_exp, src, topo = self.v, self.n_exp, self.src, self.topo
        present = set(v.present) | set(v.lost) | set(v.absent_in)
        if isinstance(n_exp, int) and not F.lists_every_gpu(topo):
            return [finding(
                "info", "gpu.not_checked", S.NODE,
                f"GPUs missing not checked: the input is pasted per-GPU text (nvidia-smi "
                f"nvlink/-q, dcgmi nvlink -s), which "
                f"states facts about the {len(present)} GPU(s) it names and nothing about the "
                f"others (the layout has {n_exp})", source=src,
                hint="paste nvidia-smi topo -m (or take a snapshot) to check the GPU count")]
        if isinstance(n_exp, int):
            have = len(present)
            if have < n_exp:
                return self._missing(present, n_exp)
            if have > n_exp:
                return [finding(
                    "warning", "gpu.extra", S.NODE,
                    f"{have} GPUs listed, the layout {self.layout.name} has {n_exp}",  # type: ignore[union-attr]  # (n_exp only with a layout)
                    expected=n_exp, actual=have, source=src,
                    hint="is this the right layout? give --layout NAME or --layout-file "
                         "FILE")]
            return []
        if not topo.gpus:
            return [finding("info", "gpu.not_checked", S.NODE, "no GPU in the input",
                            source=src)]
        return []

    def _missing(self, present: Set[int], n_exp: int) -> List[Finding]:
        """Fewer GPUs than the layout's: by the empty slot the port map's NICs show, by
        count on bare metal, else one warning (a VM or container may show a subset)."""
        sel, v, layout = self.sel, self.v, self.layout
        have = len(present)
        gone = [i for i in range(n_exp) if i not in present]
        gone = gone[: n_exp - have]
        # a mesh matched up to renumbering: the NVLink wiring tells which layout slot is
        # absent (the subject stays the index the tools leave out: the last ones)
        slots = sel.absent_slots
        empty = sel.empty_slots
        if not empty and not slots and not v.absent_in and not v.lost \
                and not sel.mapping:
            # a layout given directly (not through select): the same NIC evidence
            placed = F.slots_by_nic(self.topo, layout, sorted(present))
            empty = placed[1] if placed is not None else []
        by_nic: Optional[Dict[int, List[str]]] = None
        if not empty and not slots and F.bare_metal(self.topo, v, present):
            # no port map: the board's PCIe tree, its compute NICs one per GPU slot in bus
            # order, tells which slot's NIC has no GPU near it
            tree = _slots_by_placement(self.topo, layout, sorted(present))
            if tree is not None:
                empty, by_nic = tree
        if empty:
            return self._in_empty_slots(gone, empty, have, n_exp, by_nic)
        if F.bare_metal(self.topo, v, present):
            renumber = bool(present) and max(present) < have
            return self._gone_on_bare_metal(gone, slots, renumber, have, n_exp)
        if sel.how == "user":
            return self._short_of_named(gone, slots, have, n_exp)
        # a count alone cannot tell GPUs that fell off the bus from a VM or a
        # container given part of the board: one warning, never an error
        return [finding(
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
            expected=n_exp, actual=have, source=self.src,
            hint="in a VM or container, check which GPUs are passed through "
                 "(CUDA_VISIBLE_DEVICES); on bare metal, check dmesg for Xid 79 "
                 "(fallen off the bus) and lspci for the device, and take a snapshot "
                 "(nvtopo snapshot) so sysfs can tell",
            covers=[S.gpu(i) for i in gone])]

    def _short_of_named(self, gone: List[int], slots: List[int], have: int, n_exp: int
                        ) -> List[Finding]:
        """Fewer GPUs than a layout the user named (``--layout``/``--layout-file``): the
        name asserts the board, so a shortfall is a fault, not a guess (whether a VM or a
        container shows part of a board is auto-selection's question)."""
        layout = self.layout
        assert layout is not None  # (n_exp only with a layout)
        where = ("; by the NVLink mesh the absent slot" + ("s are" if len(slots) > 1
                                                          else " is")
                 + " the layout's " + ", ".join(f"GPU{t}" for t in slots)
                 if len(slots) == len(gone) else "")
        return [finding(
            demote("error", self.inferred), "gpu.missing", S.NODE,
            f"{have} of {n_exp} GPU{'s' if n_exp != 1 else ''} seen, and the layout "
            f"named, {layout.name}, has {n_exp}: GPUs are missing{where}; the absent "
            "slots' NVLink pairs, NICs and NUMA are not checked",
            expected=n_exp, actual=have, source=self.src,
            hint="check dmesg for Xid 79 (fallen off the bus) and lspci for the device; "
                 "reseat or replace the GPU (the node should be drained); a VM or "
                 "container given part of the board: check it without --layout",
            covers=[S.gpu(i) for i in gone])]

    def _in_empty_slots(self, gone: List[int], empty: List[int], have: int, n_exp: int,
                        by_nic: Optional[Dict[int, List[str]]] = None) -> List[Finding]:
        """The port map's NICs (or, ``by_nic``, the compute NICs in PCI bus order) tell the
        slot, and that its card is on the bus with no GPU near it: the GPU is gone (the
        tools number the GPUs after it one lower)."""
        layout = self.layout
        # the layout slot -> its port-map NICs, as the layout file states them (before the
        # layout was renumbered to the node's GPUs)
        assert layout is not None  # (n_exp only with a layout)
        orig = by_nic or self.sel.port_map or layout.nics.placement.port_map or {}
        # the subject stays the index the tools leave out (the last ones: the node's own
        # GPU numbers are taken by the GPUs present); the message names the slot
        out: List[Finding] = []
        for idx, slot in zip(gone, empty):
            nics = orig.get(slot) or []
            out.append(finding(
                demote("error", self.inferred), "gpu.missing", S.gpu(idx),
                f"GPU{idx} is missing: {have} of {n_exp} GPUs are listed, and the "
                f"empty slot is the layout's GPU{slot} (its NIC "
                f"{'/'.join(nics) or '?'} is on the bus with no GPU near it); the "
                "tools number the GPUs after it one lower" + (
                    " (told by the PCI tree: the compute NICs in bus order are the "
                    "slots); its NVLink pairs and NUMA slot are not checked" if by_nic
                    else ", and those are checked in their own slots"),
                expected=n_exp, actual=have, source=self.src,
                hint="check dmesg for Xid 79 (fallen off the bus) and lspci for the "
                     "device; reseat or replace the GPU (the node should be drained)",
                covers=[S.gpu(idx)] + (_pair_subjects(idx, self.n_all) if by_nic else [])))
        return out

    def _gone_on_bare_metal(self, gone: List[int], slots: List[int], renumber: bool,
                            have: int, n_exp: int) -> List[Finding]:
        """sysfs shows the board's PCIe switches: each GPU short of the count is gone (the
        NVLink mesh tells which slot is absent, not that its GPU is gone: a container
        given 6 of a DGX-1's 8 GPUs shows the same mesh)."""
        out: List[Finding] = []
        for k, idx in enumerate(gone):
            where = (f"; by the NVLink mesh the absent GPU is the layout's "
                     f"GPU{slots[k]}" if len(slots) == len(gone)
                     and slots[k] != idx else "")
            out.append(finding(
                demote("error", self.inferred), "gpu.missing", S.gpu(idx),
                f"GPU{idx} is missing: {have} of {n_exp} GPUs are listed"
                + (" (GPUs are numbered after the ones present, so the missing GPU "
                   "may be another slot; compare PCI bus ids)" if renumber
                   and idx >= have else "") + where
                + ("" if len(slots) == len(gone) else
                   "; sysfs shows the board's PCIe switches (bare metal, not a VM's "
                   "flat bus)")
                + "; its NVLink pairs, NIC placement and NUMA slot are not checked",
                expected=n_exp, actual=have, source=self.src,
                hint="check dmesg for Xid 79 (fallen off the bus) and lspci for the "
                     "device; reseat or replace the GPU (the node should be "
                     "drained); in a VM or container, check which GPUs are passed "
                     "through (CUDA_VISIBLE_DEVICES)",
                covers=[S.gpu(idx)] + _pair_subjects(idx, self.n_all)))
        return out

    def model_findings(self) -> List[Finding]:
        """The GPUs' model name against the layout's pattern."""
        topo, layout = self.topo, self.layout
        pattern = layout.gpus.name_pattern if layout is not None else None
        if not pattern:
            return []
        bad = [g for g in topo.gpus if g.name and not name_matches(pattern, g.name)]
        if bad:
            g = bad[0]
            return [finding(
                demote("error", self.inferred), "gpu.model", S.NODE if len(bad) > 1 else S.gpu(g.index, g.label),
                f"{len(bad)} {'GPU is' if len(bad) == 1 else 'GPUs are'} {g.name!r}, not what {layout.name} has "  # type: ignore[union-attr]  # (pattern only with a layout)
                f"({pattern})", expected=pattern, actual=g.name,
                source=g.sources.get("name", "nvml"),
                hint="is this the right layout? give --layout NAME or --layout-file FILE")]
        if not any(g.name for g in topo.gpus) and topo.gpus:
            return [finding("info", "gpu.not_checked", S.NODE,
                            "GPU model not checked: no GPU names in the input (a topo "
                            "text does not name them; NVML does)", source=self.src)]
        return []


def _slots_by_placement(topo: Topology, layout: Any, present: List[int]
                        ) -> Optional[Tuple[List[int], Dict[int, List[str]]]]:
    """The empty GPU slots of a board with one compute NIC per GPU and no port map, told
    by the PCI tree: the compute NICs in bus order are the slots, each present GPU has
    exactly one of them at the layout's path or closer (in the same order), and each empty
    slot's NIC is on the bus with no GPU near it.  ``(empty slots, slot -> its NIC)``, or
    None where the tree does not tell."""
    place = layout.nics.placement if layout is not None else None
    n_exp = layout.gpus.count if layout is not None else None
    limit = path_rank(place.gpu_to_nearest_compute_nic or "PIX") if place is not None \
        else None
    if place is None or place.gpus_per_compute_nic != 1 or not isinstance(n_exp, int) \
            or limit is None:
        return None
    comp = [topo.nic(x) for x in roles.resolve(topo, layout, present).compute]
    nics = sorted((n for n in comp if n is not None and pci_bdf(n.pci_bus_id) is not None),
                  key=lambda n: pci_bdf(n.pci_bus_id))  # type: ignore[arg-type,return-value]  # (None filtered above)
    if len(nics) != n_exp:
        return None
    owner: Dict[int, int] = {}  # slot (NIC rank) -> the GPU near it
    for g in present:
        near = [k for k, n in enumerate(nics)
                if 0 < (path_rank(topo.gpu_nic_path(g, n.name)[0]) or 0) <= limit]
        if len(near) != 1 or near[0] in owner:
            return None
        owner[near[0]] = g
    if [owner[k] for k in sorted(owner)] != sorted(present):
        return None  # GPUs numbered in bus order sit in the slots in the same order
    empty = [k for k in range(n_exp) if k not in owner]
    if len(empty) != n_exp - len(present):
        return None
    return empty, {k: [n.name] for k, n in enumerate(nics)}

