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
    nic_roles = R.resolve(topo, layout)
    comp, how = nic_roles.compute, nic_roles.how
    inf_count = nics.inferred("compute")
    inf_place = nics.inferred("placement")
    src = "sysfs" if v.has_sysfs else ", ".join(s for s in topo.sources if s != "host")
    missing_names: List[str] = []
    # -- count
    want = nics.compute.count
    named: List[str] = list(nics.compute.names or [])
    for x in nics.placement.port_names:
        if x not in named:
            named.append(x)
    gpu_nic = nics.placement.port_map
    want_path = nics.placement.gpu_to_nearest_compute_nic or ("PIX" if gpu_nic else None)
    # GPUs matched to NICs by PCI placement, not by name (names change with OS, udev,
    # driver and BIOS): a named NIC that is absent or far while its GPU has another NIC
    # at the expected path is a renaming, reported once with the mapping
    prefer: Dict[int, List[str]] = dict(gpu_nic or {})
    renumbered = F.renumbered(layout, v, sel.slots_known)
    placed = F.nic_by_placement(topo, v.present, want_path, prefer) \
        if want_path is not None and not renumbered else {}
    # NIC functions on the bus with no RDMA device: a "missing" NIC may be one of them
    driverless = [n.subject for n in topo.notes if n.code == "sysfs.no_rdma_driver"
                  and n.subject]
    bare_note = (f"; {len(driverless)} NIC function{'s' if len(driverless) > 1 else ''} on "
                 f"the bus without an RDMA driver ({', '.join(driverless[:4])}): the card may "
                 "be there with mlx5_ib unbound") if driverless else ""
    if named:
        missing_names = [x for x in named if topo.nic(x) is None]
        users_of = {x: [k for k, val in (gpu_nic or {}).items() if x in val]
                    for x in missing_names}
        renamed_only = [x for x in missing_names if users_of[x] and all(
            k in placed for k in users_of[x])]
        unnamed_near: List[str] = []
        near_any = placed
        renum = want_path is not None and renumbered
        if renum:
            # which slot each GPU is cannot be told: NICs the port map does not name that
            # sit at its path from some GPU stand for as many absent names (a renaming)
            near_any = F.nic_by_placement(topo, v.present, want_path)
            unnamed_near = sorted({nm for nm, _ in near_any.values() if nm not in named})
            if missing_names and len(unnamed_near) >= len(missing_names):
                renamed_only = list(missing_names)
        # by count, not by name: every GPU shown has a NIC at the map's path (by PCI
        # placement) and the GPUs not shown take their slots' NICs with them: no card can
        # be shown missing.  Renumbered (a VM or a container given part of the board,
        # which slots unknown; not where sysfs shows the board's own PCIe switches), a GPU
        # shown without a NIC that close is reported by placement below, not also as the
        # port-map name its slot is guessed to have
        accounted = len(near_any) + len(F.missing_gpus(layout, v))
        if renum and not F.bare_metal(topo, v, v.present):
            accounted += sum(1 for i in v.present if i not in near_any
                             and _near_known(topo, i))
        elif renum:
            accounted = 0
        if isinstance(want, int) and accounted >= want:
            renamed_only = list(missing_names)
        for x in missing_names:
            if x in renamed_only:
                continue
            users = users_of[x]
            out.append(finding(
                demote("error", inf_count), "nic.missing", S.nic(x),
                f"compute NIC {x} is missing"
                + (f" (GPU{', GPU'.join(str(u) for u in users)} lose their GPUDirect RDMA path)" if users
                   else "") + bare_note, expected="present", actual="absent", source=src,
                hint="check lspci and dmesg (mlx5_core) for the card; reseat or replace it; "
                     "check that the driver (MLNX_OFED/inbox mlx5) is loaded",
                covers=[S.nic(x)] + [S.gpu_nic(k, x) for k in users]
                + [S.nic(b) for b in driverless]))
        missing_names = [x for x in missing_names if x not in renamed_only]
    elif isinstance(want, int) and len(comp) < want and len(comp) + len(
            F.missing_gpus(layout, v)) < want and len(comp) + len(
            [x for x, r in nic_roles.roles.items() if r.maybe_compute]) < want:
        out.append(finding(
            demote("error", inf_count), "nic.missing", S.NODE,
            f"{len(comp)} compute NICs (told apart by {how}: PIX/PXB to a GPU), the layout "
            f"has {want}", expected=want, actual=len(comp), source=src,
            hint="check lspci and dmesg (mlx5_core) for the missing card; reseat or replace"))
    # -- placement
    renamed: List[str] = []
    unplaced: List[int] = []  # GPUs given a placement error: the renaming is not theirs
    absent_named = [x for x in named if topo.nic(x) is None]
    if absent_named and unnamed_near and (len(unnamed_near) >= len(absent_named)
                                          or not missing_names):
        shy = len(absent_named) - len(unnamed_near)
        renamed.append(f"{', '.join(absent_named)} absent; {', '.join(unnamed_near)} at "
                       f"{want_path} or closer to a GPU" + (
                           f" (the other {shy} may belong to the GPUs not shown)"
                           if shy > 0 else ""))
    if want_path is not None and gpu_nic is not None and renumbered:
        out.append(finding("info", "nic.not_checked", S.NODE,
                           "GPU-to-NIC map not checked by name: GPUs are missing and the rest "
                           "are renumbered, so which slot each index is cannot be told; each "
                           f"GPU is checked for a NIC at {want_path} or closer by placement",
                           source=src))
        # which slot each GPU is does not matter to this: every GPU needs a NIC that close
        anywhere = F.nic_by_placement(topo, v.present, want_path)
        for i in v.present:
            near = topo.nearest_nics(i)
            if i in anywhere or not near[0] or near[1] is None:
                continue
            unplaced.append(i)
            out.append(finding(
                demote("error", inf_place), "nic.placement", S.gpu(i),
                f"GPU{i} has no NIC at {want_path} or closer (nearest: {near[0][0]} at "
                f"{near[1]}): GPUDirect RDMA traffic crosses the CPU", expected=want_path,
                actual=near[1], source=src,
                hint="check the NIC cards against the vendor's port map (a missing or "
                     "moved card)", covers=[S.gpu(i)]))
    elif want_path is not None:
        for i in v.present:
            wants = gpu_nic.get(i) if gpu_nic is not None else None
            if gpu_nic is not None:
                if wants is None:
                    continue
                for w in wants:
                    if w in missing_names:
                        continue
                    tok, psrc = topo.gpu_nic_path(i, w)
                    if tok is None and topo.nic(w) is not None:
                        continue
                    rank, limit = path_rank(tok), path_rank(want_path)
                    if tok is not None and (rank is None or limit is None or rank <= limit):
                        continue
                    if i in placed:  # another NIC sits where this one should: a renaming
                        if placed[i][0] != w:
                            renamed.append(f"GPU{i} {w} -> {placed[i][0]} ({placed[i][1]})")
                        continue
                    if tok is None:
                        continue
                    nearest = topo.nearest_nics(i)
                    near = (nearest[0][0], nearest[1]) if nearest[0] and nearest[1] else None  # type: ignore[assignment]  # (the name is reused)
                    # the port map's name is another GPU's NIC here (by PCI placement): the
                    # names differ, so the GPU is reported by structure, not by that name
                    owners = sorted(j for j, (nm, _) in placed.items() if nm == w and j != i)
                    if owners:
                        unplaced.append(i)
                        out.append(finding(
                            demote("error", inf_place), "nic.placement", S.gpu(i),
                            f"GPU{i} has no NIC at {want_path} or closer"
                            + (f" (nearest: {near[0]} at {near[1]})" if near else "")
                            + ": GPUDirect RDMA traffic crosses the CPU (NIC names differ "
                            f"from the port map: its {w} is GPU{owners[0]}'s NIC on this "
                            "node, by PCI placement)",
                            expected=want_path, actual=near[1] if near else tok, source=psrc,
                            hint="check the NIC cards against the vendor's port map (a "
                                 "missing or moved card); NCCL_IB_HCA and job configs that "
                                 "pin GPUs to NICs follow the placement",
                            covers=[S.gpu(i), S.gpu_nic(i, w)]))
                        continue
                    unplaced.append(i)
                    out.append(finding(
                        demote("error", inf_place), "nic.placement", S.gpu_nic(i, w),
                        f"GPU{i} reaches its NIC {w} through {tok}, expected {want_path}, "
                        "and no other NIC is that close: GPUDirect RDMA traffic "
                        + ("crosses the CPU" if tok in ("PHB", "NODE", "SYS", "SOC")
                           else "takes a longer PCIe path")
                        + (f" (nearest NIC now: {near[0]} at {near[1]})" if near else ""),
                        expected=want_path, actual=tok, source=psrc,
                        hint="check that the NIC cards sit in the slots of the vendor's "
                             "port map (a missing or moved card); NCCL_IB_HCA "
                             "and job configs that pin GPUs to NICs follow the map",
                        covers=[S.gpu_nic(i, w), S.nic(w)]))
            else:
                if not comp:
                    continue
                nearest = topo.nearest_compute_nic(i, comp)  # type: ignore[assignment]  # (the name is reused)
                if nearest and path_rank(nearest[1]) > path_rank(want_path):  # type: ignore[operator]  # (both are path tokens)
                    out.append(finding(
                        demote("error", inf_place), "nic.placement", S.gpu(i),
                        f"GPU{i}'s nearest compute NIC is {nearest[0]} at {nearest[1]}, "
                        f"expected {want_path} or closer: GPUDirect RDMA traffic crosses "
                        "the CPU", expected=want_path, actual=nearest[1], source=src,
                        hint="check the NIC and GPU slots against the vendor's map",
                        covers=[S.gpu(i)]))
    if renamed:
        out.append(finding(
            "warning", "nic.names_differ", S.NODE,
            ("every GPU that lacks its port-map NIC has" if not unplaced else
             "each GPU listed lacks its port-map NIC but has")
            + f" another NIC at {want_path} or closer (matched by PCI placement)"
            + (f"; GPU{', GPU'.join(str(i) for i in unplaced)} "
               f"{'has' if len(unplaced) == 1 else 'have'} none and "
               f"{'is' if len(unplaced) == 1 else 'are'} reported apart" if unplaced else "")
            + f": NIC names differ from {layout.name}'s port map: " + "; ".join(renamed),
            expected="port map names", actual=len(renamed), source=src,
            hint=("GPUDirect RDMA is unaffected" if not unplaced else
                  "the listed GPUs' GPUDirect RDMA is unaffected") + "; NCCL_IB_HCA lists and job configs that pin "
                 "GPUs to NICs by name must use the names shown (names follow the OS, udev "
                 "rules, driver and BIOS)"))
    # -- GPUDirect RDMA
    if nics.gpudirect_rdma and topo.nics:
        gd = topo.sysfs.gpudirect if v.has_sysfs and topo.sysfs is not None else None
        if gd is None:
            out.append(finding("info", "nic.not_checked", S.NODE,
                               "GPUDirect RDMA not checked: no sysfs data in the input",
                               source=", ".join(topo.sources)))
        elif not gd.peermem_loaded:
            out.append(finding(
                "error", "nic.gpudirect_missing", S.NODE,
                "GPUDirect RDMA module not loaded (neither nvidia_peermem nor nv_peer_mem): "
                "NCCL over InfiniBand copies through host memory unless it uses dmabuf "
                "(which sysfs cannot show)", expected="nvidia_peermem", actual=None,
                source="sysfs", hint="modprobe nvidia_peermem (and add it to "
                                     "/etc/modules-load.d); or confirm NCCL uses dmabuf "
                                     "(NCCL_DMABUF_ENABLE=1, kernel >= 5.12)"))
    if per_gpu is not None:
        out.extend(_one_per_gpu(topo, layout, v, per_gpu))
    return out



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
        driverless = [n.subject for n in topo.notes if n.code == "sysfs.no_rdma_driver"
                      and n.subject]
        return [finding("info", "nic.not_checked", S.NODE,
                        "no RDMA NICs: GPUDirect RDMA not in use, so one NIC per GPU "
                        f"({layout.name}'s reference design) not checked"
                        + (f" ({len(driverless)} NIC function"
                           f"{'s' if len(driverless) > 1 else ''} on the bus without an "
                           f"RDMA driver: {', '.join(driverless[:4])})" if driverless else ""),
                        source=src)]
    near = F.nic_by_placement(topo, present, want)
    lacking: List[Tuple[int, str, str]] = []  # (GPU, nearest NIC, its path)
    for i in present:
        if i in near:
            continue
        names, tok = topo.nearest_nics(i)
        if names and tok is not None:  # a GPU no path is known for says nothing
            lacking.append((i, names[0], tok))
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


def _near_known(topo: Topology, i: int) -> bool:
    """GPU ``i``'s nearest NIC and its path are known (a placement finding can name them)."""
    names, tok = topo.nearest_nics(i)
    return bool(names) and tok is not None
