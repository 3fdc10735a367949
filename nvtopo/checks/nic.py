"""NICs: compute NICs present, each GPU near its NIC, GPUDirect RDMA loaded."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..model import Topology, path_rank
from . import Finding, demote, facts as F, finding, roles as R
from . import subject as S
from ..layouts.doc import PerGpu
from .select import Selection


def check(topo: Topology, sel: Selection) -> List[Finding]:
    v = F.view(topo)
    out: List[Finding] = []
    layout = sel.layout
    dropped = sel.nics_dropped if layout is not None else None
    if dropped:
        out.append(finding("info", "nic.not_checked", S.NODE,
                           f"NICs not checked against {layout.name}: the node's NICs do not "  # type: ignore[union-attr]  # (dropped only with a layout)
                           f"fit its NIC facts ({dropped}); only layout-independent NIC "
                           "checks ran (give --layout NAME to apply a layout's NIC facts)",
                           source=", ".join(topo.sources)))
    nics = layout.nics if layout is not None else None
    stated = nics is not None and nics.facts_stated
    per_gpu = nics.per_gpu if nics is not None and not dropped else None
    if per_gpu is not None and nics is not None and nics.placement.stated:
        per_gpu = None  # a vendor port map (placement) says more: checked below
    if layout is not None and not stated and not dropped and per_gpu is not None:
        return out + _one_per_gpu(topo, layout, v, per_gpu)
    if layout is not None and not stated and not dropped and topo.nics:
        out.append(finding("info", "nic.not_checked", S.NODE,
                           f"NIC placement not checked: {layout.name} states no NIC facts "
                           "(an HGX board leaves the NICs to the server maker); only "
                           "layout-independent NIC checks ran",
                           source=", ".join(topo.sources)))
    if layout is None or nics is None or not stated:
        return out
    if not F.has_nic_data(topo, v):
        out.append(finding("info", "nic.not_checked", S.NODE,
                           "NICs not checked: no NIC data in the input (a topo text without "
                           "NIC columns; take a snapshot with sysfs)",
                           source=", ".join(topo.sources)))
        return out
    reading = _Stated(topo, sel, layout, nics, v)
    out.extend(reading.count_findings())
    out.extend(reading.placement_findings())
    out.extend(reading.names_differ())
    out.extend(_gpudirect_findings(topo, nics, v))
    if per_gpu is not None:
        out.extend(_one_per_gpu(topo, layout, v, per_gpu))
    return out


class _Stated:
    """The NIC family's reading of a layout that states NIC facts (compute count, names,
    port map, path): what the count decided (names missing, NICs standing in for them) is
    kept for the placement and renaming findings that follow it."""

    def __init__(self, topo: Topology, sel: Selection, layout: Any, nics: Any, v: Any
                 ) -> None:
        self.topo, self.layout, self.nics, self.v = topo, layout, nics, v
        self.roles = R.resolve(topo, layout)
        self.comp, self.how = self.roles.compute, self.roles.how
        self.inf_count = nics.inferred("compute")
        self.inf_place = nics.inferred("placement")
        self.src = "sysfs" if v.has_sysfs else ", ".join(s for s in topo.sources
                                                         if s != "host")
        self.want = nics.compute.count
        named: List[str] = list(nics.compute.names or [])
        for x in nics.placement.port_names:
            if x not in named:
                named.append(x)
        self.named = named
        self.gpu_nic: Optional[Dict[int, List[str]]] = nics.placement.port_map
        self.want_path: Optional[str] = (nics.placement.gpu_to_nearest_compute_nic
                                         or ("PIX" if self.gpu_nic else None))
        # GPUs matched to NICs by PCI placement, not by name (names change with OS, udev,
        # driver and BIOS): a named NIC that is absent or far while its GPU has another NIC
        # at the expected path is a renaming, reported once with the mapping
        prefer: Dict[int, List[str]] = dict(self.gpu_nic or {})
        self.renumbered = F.renumbered(layout, v, sel.slots_known)
        self.placed = F.nic_by_placement(topo, v.present, self.want_path, prefer) \
            if self.want_path is not None and not self.renumbered else {}
        # NIC functions on the bus with no RDMA device: a "missing" NIC may be one of them
        self.driverless = [n.subject for n in topo.notes
                           if n.code == "sysfs.no_rdma_driver" and n.subject]
        d = self.driverless
        self.bare_note = (f"; {len(d)} NIC function{'s' if len(d) > 1 else ''} on "
                          f"the bus without an RDMA driver ({', '.join(d[:4])}): the card "
                          "may be there with mlx5_ib unbound") if d else ""
        self.missing_names: List[str] = []  # named, absent, and not a renaming
        self.unnamed_near: List[str] = []  # unnamed NICs near some GPU (renumbered)
        self.renamed: List[str] = []  # the renamings found, for one warning
        self.unplaced: List[int] = []  # GPUs given a placement error: the renaming is not theirs

    # -- count

    def count_findings(self) -> List[Finding]:
        """Compute NICs missing: by the layout's names, else by count of compute roles."""
        if self.named:
            return self._missing_by_name()
        comp, layout, v, want = self.comp, self.layout, self.v, self.want
        if isinstance(want, int) and len(comp) < want and len(comp) + len(
                F.missing_gpus(layout, v)) < want and len(comp) + len(
                [x for x, r in self.roles.roles.items() if r.maybe_compute]) < want:
            return [finding(
                demote("error", self.inf_count), "nic.missing", S.NODE,
                f"{len(comp)} compute NICs (told apart by {self.how}: PIX/PXB to a GPU), the "
                f"layout has {want}", expected=want, actual=len(comp), source=self.src,
                hint="check lspci and dmesg (mlx5_core) for the missing card; reseat or "
                     "replace")]
        return []

    def _missing_by_name(self) -> List[Finding]:
        """Each named compute NIC that is absent and not explained by a renaming."""
        topo, v = self.topo, self.v
        missing = [x for x in self.named if topo.nic(x) is None]
        users_of = {x: [k for k, val in (self.gpu_nic or {}).items() if x in val]
                    for x in missing}
        renamed_only = [x for x in missing if users_of[x] and all(
            k in self.placed for k in users_of[x])]
        near_any = self.placed
        renum = self.want_path is not None and self.renumbered
        if renum:
            # which slot each GPU is cannot be told: NICs the port map does not name that
            # sit at its path from some GPU stand for as many absent names (a renaming)
            near_any = F.nic_by_placement(topo, v.present, self.want_path)
            self.unnamed_near = sorted({nm for nm, _ in near_any.values()
                                        if nm not in self.named})
            if missing and len(self.unnamed_near) >= len(missing):
                renamed_only = list(missing)
        if self._every_gpu_served(near_any, renum):
            renamed_only = list(missing)
        out = [self._missing_one(x, users_of[x]) for x in missing if x not in renamed_only]
        self.missing_names = [x for x in missing if x not in renamed_only]
        return out

    def _every_gpu_served(self, near_any: Dict[int, Tuple[str, str]], renum: bool) -> bool:
        """By count, not by name: every GPU shown has a NIC at the map's path (by PCI
        placement) and the GPUs not shown take their slots' NICs with them: no card can be
        shown missing.  Renumbered (a VM or a container given part of the board, which
        slots unknown; not where sysfs shows the board's own PCIe switches), a GPU shown
        without a NIC that close is reported by placement, not also as the port-map name
        its slot is guessed to have."""
        topo, v = self.topo, self.v
        accounted = len(near_any) + len(F.missing_gpus(self.layout, v))
        if renum and not F.bare_metal(topo, v, v.present):
            accounted += sum(1 for i in v.present if i not in near_any
                             and _near_known(topo, i))
        elif renum:
            accounted = 0
        return isinstance(self.want, int) and accounted >= self.want

    def _missing_one(self, x: str, users: List[int]) -> Finding:
        return finding(
            demote("error", self.inf_count), "nic.missing", S.nic(x),
            f"compute NIC {x} is missing"
            + (f" (GPU{', GPU'.join(str(u) for u in users)} lose their GPUDirect RDMA path)"
               if users else "") + self.bare_note,
            expected="present", actual="absent", source=self.src,
            hint="check lspci and dmesg (mlx5_core) for the card; reseat or replace it; "
                 "check that the driver (MLNX_OFED/inbox mlx5) is loaded",
            covers=[S.nic(x)] + [S.gpu_nic(k, x) for k in users]
            + [S.nic(b) for b in self.driverless])

    # -- placement

    def placement_findings(self) -> List[Finding]:
        """Each GPU's NIC at the layout's path: by the port map, else by the nearest
        compute NIC; renumbered, by placement only."""
        absent_named = [x for x in self.named if self.topo.nic(x) is None]
        unnamed_near = self.unnamed_near
        if absent_named and unnamed_near and (len(unnamed_near) >= len(absent_named)
                                              or not self.missing_names):
            shy = len(absent_named) - len(unnamed_near)
            self.renamed.append(
                f"{', '.join(absent_named)} absent; {', '.join(unnamed_near)} at "
                f"{self.want_path} or closer to a GPU" + (
                    f" (the other {shy} may belong to the GPUs not shown)" if shy > 0 else ""))
        if self.want_path is None:
            return []
        if self.gpu_nic is not None and self.renumbered:
            return self._renumbered_placement(self.want_path)
        out: List[Finding] = []
        for i in self.v.present:
            if self.gpu_nic is None:
                out.extend(self._nearest_compute(i, self.want_path))
                continue
            for w in self.gpu_nic.get(i) or []:
                f = self._port_finding(i, w, self.want_path)
                if f is not None:
                    out.append(f)
        return out

    def _renumbered_placement(self, want_path: str) -> List[Finding]:
        """GPUs renumbered: which slot each GPU is does not matter to this, every GPU needs
        a NIC at the path or closer."""
        topo = self.topo
        out = [finding("info", "nic.not_checked", S.NODE,
                       "GPU-to-NIC map not checked by name: GPUs are missing and the rest "
                       "are renumbered, so which slot each index is cannot be told; each "
                       f"GPU is checked for a NIC at {want_path} or closer by placement",
                       source=self.src)]
        anywhere = F.nic_by_placement(topo, self.v.present, want_path)
        for i in self.v.present:
            near = topo.nearest_nics(i)
            if i in anywhere or not near[0] or near[1] is None:
                continue
            self.unplaced.append(i)
            out.append(finding(
                demote("error", self.inf_place), "nic.placement", S.gpu(i),
                f"GPU{i} has no NIC at {want_path} or closer (nearest: {near[0][0]} at "
                f"{near[1]}): GPUDirect RDMA traffic crosses the CPU", expected=want_path,
                actual=near[1], source=self.src,
                hint="check the NIC cards against the vendor's port map (a missing or "
                     "moved card)", covers=[S.gpu(i)]))
        return out

    def _port_finding(self, i: int, w: str, want_path: str) -> Optional[Finding]:
        """GPU ``i``'s port-map NIC ``w`` beyond ``want_path``: a renaming (noted for the
        warning), a name that is another GPU's NIC here, or a placement error."""
        topo = self.topo
        if w in self.missing_names:
            return None
        tok, psrc = topo.gpu_nic_path(i, w)
        if tok is None and topo.nic(w) is not None:
            return None
        rank, limit = path_rank(tok), path_rank(want_path)
        if tok is not None and (rank is None or limit is None or rank <= limit):
            return None
        if i in self.placed:  # another NIC sits where this one should: a renaming
            if self.placed[i][0] != w:
                self.renamed.append(f"GPU{i} {w} -> {self.placed[i][0]} ({self.placed[i][1]})")
            return None
        if tok is None:
            return None
        names, ntok = topo.nearest_nics(i)
        near = (names[0], ntok) if names and ntok else None
        # the port map's name is another GPU's NIC here (by PCI placement): the names
        # differ, so the GPU is reported by structure, not by that name
        owners = sorted(j for j, (nm, _) in self.placed.items() if nm == w and j != i)
        self.unplaced.append(i)
        if owners:
            return finding(
                demote("error", self.inf_place), "nic.placement", S.gpu(i),
                f"GPU{i} has no NIC at {want_path} or closer"
                + (f" (nearest: {near[0]} at {near[1]})" if near else "")
                + ": GPUDirect RDMA traffic crosses the CPU (NIC names differ "
                f"from the port map: its {w} is GPU{owners[0]}'s NIC on this "
                "node, by PCI placement)",
                expected=want_path, actual=near[1] if near else tok, source=psrc,
                hint="check the NIC cards against the vendor's port map (a "
                     "missing or moved card); NCCL_IB_HCA and job configs that "
                     "pin GPUs to NICs follow the placement",
                covers=[S.gpu(i), S.gpu_nic(i, w)])
        return finding(
            demote("error", self.inf_place), "nic.placement", S.gpu_nic(i, w),
            f"GPU{i} reaches its NIC {w} through {tok}, expected {want_path}, "
            "and no other NIC is that close: GPUDirect RDMA traffic "
            + ("crosses the CPU" if tok in ("PHB", "NODE", "SYS", "SOC")
               else "takes a longer PCIe path")
            + (f" (nearest NIC now: {near[0]} at {near[1]})" if near else ""),
            expected=want_path, actual=tok, source=psrc,
            hint="check that the NIC cards sit in the slots of the vendor's "
                 "port map (a missing or moved card); NCCL_IB_HCA "
                 "and job configs that pin GPUs to NICs follow the map",
            covers=[S.gpu_nic(i, w), S.nic(w)])

    def _nearest_compute(self, i: int, want_path: str) -> List[Finding]:
        """No port map: GPU ``i``'s nearest compute NIC (by role) at the path or closer."""
        if not self.comp:
            return []
        nearest = self.topo.nearest_compute_nic(i, self.comp)
        if nearest and path_rank(nearest[1]) > path_rank(want_path):  # type: ignore[operator]  # (both are path tokens)
            return [finding(
                demote("error", self.inf_place), "nic.placement", S.gpu(i),
                f"GPU{i}'s nearest compute NIC is {nearest[0]} at {nearest[1]}, "
                f"expected {want_path} or closer: GPUDirect RDMA traffic crosses "
                "the CPU", expected=want_path, actual=nearest[1], source=self.src,
                hint="check the NIC and GPU slots against the vendor's map",
                covers=[S.gpu(i)])]
        return []

    # -- renaming

    def names_differ(self) -> List[Finding]:
        """The renamings found by count and placement, as one warning."""
        renamed, unplaced = self.renamed, self.unplaced
        if not renamed:
            return []
        return [finding(
            "warning", "nic.names_differ", S.NODE,
            ("every GPU that lacks its port-map NIC has" if not unplaced else
             "each GPU listed lacks its port-map NIC but has")
            + f" another NIC at {self.want_path} or closer (matched by PCI placement)"
            + (f"; GPU{', GPU'.join(str(i) for i in unplaced)} "
               f"{'has' if len(unplaced) == 1 else 'have'} none and "
               f"{'is' if len(unplaced) == 1 else 'are'} reported apart" if unplaced else "")
            + f": NIC names differ from {self.layout.name}'s port map: " + "; ".join(renamed),
            expected="port map names", actual=len(renamed), source=self.src,
            hint=("GPUDirect RDMA is unaffected" if not unplaced else
                  "the listed GPUs' GPUDirect RDMA is unaffected") + "; NCCL_IB_HCA lists and job configs that pin "
                 "GPUs to NICs by name must use the names shown (names follow the OS, udev "
                 "rules, driver and BIOS)")]


def _gpudirect_findings(topo: Topology, nics: Any, v: Any) -> List[Finding]:
    """``nics.gpudirect_rdma``: the GPUDirect RDMA kernel module is loaded (by sysfs)."""
    if not (nics.gpudirect_rdma and topo.nics):
        return []
    gd = topo.sysfs.gpudirect if v.has_sysfs and topo.sysfs is not None else None
    if gd is None:
        return [finding("info", "nic.not_checked", S.NODE,
                        "GPUDirect RDMA not checked: no sysfs data in the input",
                        source=", ".join(topo.sources))]
    if not gd.peermem_loaded:
        return [finding(
            "error", "nic.gpudirect_missing", S.NODE,
            "GPUDirect RDMA module not loaded (neither nvidia_peermem nor nv_peer_mem): "
            "NCCL over InfiniBand copies through host memory unless it uses dmabuf "
            "(which sysfs cannot show)", expected="nvidia_peermem", actual=None,
            source="sysfs", hint="modprobe nvidia_peermem (and add it to "
                                 "/etc/modules-load.d); or confirm NCCL uses dmabuf "
                                 "(NCCL_DMABUF_ENABLE=1, kernel >= 5.12)")]
    return []


def _one_per_gpu(topo: Topology, layout: Any, v: Any, per_gpu: PerGpu
                 ) -> List[Finding]:
    """``nics.per_gpu``: where the platform's reference design gives each GPU a compute NIC
    behind its own PCIe switch, every GPU needs one at ``path`` or closer (GPUDirect RDMA,
    NCCL).  Told by PCI placement, never by name.  A node with no RDMA NICs, or with fewer
    NICs than GPUs (shared NICs by design), is not a wiring fault: a note says so."""
    want = per_gpu.path or "PXB"
    srcs = ", ".join(topo.sources)
    src = "sysfs" if v.has_sysfs else ", ".join(s for s in topo.sources if s != "host")
    if not F.has_nic_data(topo, v):
        return [finding("info", "nic.not_checked", S.NODE,
                        "NICs not checked: no NIC data in the input (a topo text without "
                        "NIC columns; take a snapshot with sysfs)", source=srcs)]
    present = list(v.present)
    if not present:
        return []
    if not topo.nics:
        return [_no_rdma_nics(topo, layout, src)]
    near = F.nic_by_placement(topo, present, want)
    lacking = _lacking(topo, present, near)
    if not lacking:
        return []
    comp = R.resolve(topo, None, present, F.missing_gpus(layout, v)).compute
    gpus = ", ".join(f"GPU{i}" for i, _, _ in lacking)
    if not comp:
        return [finding("info", "nic.not_checked", S.NODE,
                        f"no NIC behind a GPU's PCIe switch ({len(topo.nics)} RDMA "
                        f"device{'s' if len(topo.nics) > 1 else ''}, none at {want} or "
                        "closer to any GPU): GPUDirect RDMA is not wired by design, so one "
                        f"NIC per GPU ({layout.name}'s reference design) not checked",
                        source=src)]
    # the NICs that could serve the GPUs: the compute NICs by placement and every other
    # RDMA device not known to run another link layer (a RoCE storage NIC beside
    # InfiniBand compute NICs is not a compute NIC moved off its GPU)
    layers = {lay for x in comp for lay in R.layers(topo, x)}
    could = [n.name for n in topo.nics if n.name in comp or not layers
             or not R.layers(topo, n.name) or R.layers(topo, n.name) & layers]
    if len(could) < len(present):
        per = len(present) / max(1, len(comp))
        return [finding("info", "nic.not_checked", S.NODE,
                        f"{len(comp)} compute NIC{'s' if len(comp) > 1 else ''} for "
                        f"{len(present)} GPUs ({per:g} GPUs per NIC): fewer NICs than GPUs "
                        f"by design, not one per GPU as {layout.name}'s reference design; "
                        f"{gpus} ha{'s' if len(lacking) == 1 else 've'} no NIC at {want} or "
                        "closer (their GPUDirect RDMA traffic crosses the CPU)",
                        source=src)]
    far = [x for x in could if x not in comp and R.single_function(topo, x) is not False]
    if not far or len(comp) >= len(present):
        # as many compute NICs behind GPU switches as GPUs, some GPUs with two (dual-port
        # cards, NIC groups), or no other NIC that could be one moved off its place: the
        # integrator's design, not a card off its place
        served = sorted({i for i in near})
        return [finding("info", "nic.not_checked", S.NODE,
                        f"{len(comp)} compute NICs behind the switches of "
                        f"{len(served)} of {len(present)} GPUs: NICs "
                        f"shared or doubled by design, not one per GPU as {layout.name}'s "
                        f"reference design; {gpus} ha{'s' if len(lacking) == 1 else 've'} no "
                        f"NIC at {want} or closer (their GPUDirect RDMA traffic crosses the "
                        "CPU)", source=src)]
    inferred = layout.nics.inferred("per_gpu")
    nearest = "; ".join(f"GPU{i}: nearest {n} at {t}" for i, n, t in lacking)
    return [finding(
        demote("error", inferred), "nic.placement", S.NODE,
        f"{gpus} ha{'s' if len(lacking) == 1 else 've'} no NIC at {want} or closer while "
        f"{', '.join(far)} {'sits' if len(far) == 1 else 'sit'} off the GPU switches "
        f"({layout.name}'s reference design gives each GPU a NIC of its own): GPUDirect RDMA "
        f"traffic crosses the CPU ({nearest})", expected=want,
        actual=max((t for _, _, t in lacking), key=lambda t: path_rank(t) or 0),
        source=src, hint="check the NIC cards' slots against the server maker's port map "
                         "(a card moved to a CPU root port, or missing); NCCL_IB_HCA and job "
                         "configs that pin GPUs to NICs follow the placement",
        covers=[S.gpu(i) for i, _, _ in lacking])]


def _no_rdma_nics(topo: Topology, layout: Any, src: str) -> Finding:
    """No RDMA device at all: one NIC per GPU is not checked (NIC functions without an
    RDMA driver named)."""
    driverless = [n.subject for n in topo.notes if n.code == "sysfs.no_rdma_driver"
                  and n.subject]
    return finding("info", "nic.not_checked", S.NODE,
                   "no RDMA NICs: GPUDirect RDMA not in use, so one NIC per GPU "
                   f"({layout.name}'s reference design) not checked"
                   + (f" ({len(driverless)} NIC function"
                      f"{'s' if len(driverless) > 1 else ''} on the bus without an "
                      f"RDMA driver: {', '.join(driverless[:4])})" if driverless else ""),
                   source=src)


def _lacking(topo: Topology, present: List[int], near: Dict[int, Tuple[str, str]]
             ) -> List[Tuple[int, str, str]]:
    """(GPU, nearest NIC, its path) for each present GPU with no NIC in ``near``; a GPU no
    path is known for says nothing."""
    lacking: List[Tuple[int, str, str]] = []
    for i in present:
        if i in near:
            continue
        names, tok = topo.nearest_nics(i)
        if names and tok is not None:
            lacking.append((i, names[0], tok))
    return lacking


def _near_known(topo: Topology, i: int) -> bool:
    """GPU ``i``'s nearest NIC and its path are known (a placement finding can name them)."""
    names, tok = topo.nearest_nics(i)
    return bool(names) and tok is not None
