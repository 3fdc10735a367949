"""NICs: compute NICs present, each GPU near its NIC, GPUDirect RDMA loaded."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..model import Topology, path_rank
from . import Finding, demote, facts as F, finding
from . import subject as S


def check(topo: Topology, layout: Optional[Any]) -> List[Finding]:
    v = F.view(topo)
    out: List[Finding] = []
    dropped = getattr(layout, "extra", {}).get("nics_dropped") if layout is not None else None
    if dropped:
        out.append(finding("info", "nic.not_checked", S.NODE,
                           f"NICs not checked against {layout.name}: the node's NICs do not "
                           f"fit its NIC facts ({dropped}); only layout-independent NIC "
                           "checks ran (give --layout NAME to apply a layout's NIC facts)",
                           source=", ".join(topo.sources)))
    if layout is not None and not layout.section("nics") and not dropped and topo.nics:
        out.append(finding("info", "nic.not_checked", S.NODE,
                           f"NIC placement not checked: {layout.name} states no NIC facts "
                           "(an HGX board leaves the NICs to the server maker); only "
                           "layout-independent NIC checks ran",
                           source=", ".join(topo.sources)))
    if layout is None or not layout.section("nics"):
        return out
    if not F.has_nic_data(topo, v):
        out.append(finding("info", "nic.not_checked", S.NODE,
                           "NICs not checked: no NIC data in the input (a topo text without "
                           "NIC columns; take a snapshot with sysfs)",
                           source=", ".join(topo.sources)))
        return out
    comp, how = F.compute_nics(topo, layout, v.present, F.missing_gpus(layout, v))
    inf_count = layout.inferred_only("nics.compute")
    inf_place = layout.inferred_only("nics.placement")
    src = "sysfs" if v.has_sysfs else ", ".join(s for s in topo.sources if s != "host")
    missing_names: List[str] = []
    # -- count
    want = layout.get("nics.compute.count")
    named: List[str] = list(layout.get("nics.compute.names") or [])
    for val in (layout.get("nics.placement.gpu_nic") or {}).values():
        for x in ([val] if isinstance(val, str) else val):
            if x not in named:
                named.append(x)
    gpu_nic = layout.get("nics.placement.gpu_nic")
    want_path = layout.get("nics.placement.gpu_to_nearest_compute_nic") or (
        "PIX" if gpu_nic else None)
    # GPUs matched to NICs by PCI placement, not by name (names change with OS, udev,
    # driver and BIOS): a named NIC that is absent or far while its GPU has another NIC
    # at the expected path is a renaming, reported once with the mapping
    prefer: Dict[int, List[str]] = {}
    if isinstance(gpu_nic, dict):
        for k, val in gpu_nic.items():
            if F.gpu_index(f"GPU{k}") is not None:
                prefer[int(k)] = [val] if isinstance(val, str) else list(val)
    placed = F.nic_by_placement(topo, v.present, want_path, prefer) \
        if want_path is not None and not F.renumbered(layout, v) else {}
    # NIC functions on the bus with no RDMA device: a "missing" NIC may be one of them
    driverless = [n.subject for n in topo.notes if n.code == "sysfs.no_rdma_driver"
                  and n.subject]
    bare_note = (f"; {len(driverless)} NIC function{'s' if len(driverless) > 1 else ''} on "
                 f"the bus without an RDMA driver ({', '.join(driverless[:4])}): the card may "
                 "be there with mlx5_ib unbound") if driverless else ""
    if named:
        missing_names = [x for x in named if topo.nic(x) is None]
        users_of = {x: [k for k, val in (gpu_nic or {}).items()
                        if x == val or (isinstance(val, list) and x in val)]
                    for x in missing_names}
        renamed_only = [x for x in missing_names if users_of[x] and all(
            F.gpu_index(f"GPU{k}") is not None and int(k) in placed for k in users_of[x])]
        if isinstance(want, int) and len(placed) + len(F.missing_gpus(layout, v)) >= want:
            renamed_only = list(missing_names)
        unnamed_near: List[str] = []
        if want_path is not None and F.renumbered(layout, v):
            # which slot each GPU is cannot be told: NICs the port map does not name that
            # sit at its path from some GPU stand for as many absent names (a renaming)
            unnamed_near = sorted({nm for nm, _ in F.nic_by_placement(
                topo, v.present, want_path).values() if nm not in named})
            if missing_names and len(unnamed_near) >= len(missing_names):
                renamed_only = list(missing_names)
        for x in missing_names:
            if x in renamed_only:
                continue
            users = users_of[x]
            out.append(finding(
                demote("error", inf_count), "nic.missing", S.nic(x),
                f"compute NIC {x} is missing"
                + (f" (GPU{', GPU'.join(users)} lose their GPUDirect RDMA path)" if users
                   else "") + bare_note, expected="present", actual="absent", source=src,
                hint="check lspci and dmesg (mlx5_core) for the card; reseat or replace it; "
                     "check that the driver (MLNX_OFED/inbox mlx5) is loaded",
                covers=[S.nic(x)] + [S.gpu_nic(k, x) for k in users]
                + [S.nic(b) for b in driverless]))
        missing_names = [x for x in missing_names if x not in renamed_only]
    elif isinstance(want, int) and len(comp) < want and len(comp) + len(
            F.missing_gpus(layout, v)) < want:
        out.append(finding(
            demote("error", inf_count), "nic.missing", S.NODE,
            f"{len(comp)} compute NICs (told apart by {how}: PIX/PXB to a GPU), the layout "
            f"has {want}", expected=want, actual=len(comp), source=src,
            hint="check lspci and dmesg (mlx5_core) for the missing card; reseat or replace"))
    # -- placement
    renamed: List[str] = []
    absent_named = [x for x in named if topo.nic(x) is None]
    if absent_named and unnamed_near and len(unnamed_near) >= len(absent_named):
        renamed.append(f"{', '.join(absent_named)} absent; {', '.join(unnamed_near)} at "
                       f"{want_path} or closer to a GPU")
    if want_path is not None and isinstance(gpu_nic, dict) and F.renumbered(layout, v):
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
            out.append(finding(
                demote("error", inf_place), "nic.placement", S.gpu(i),
                f"GPU{i} has no NIC at {want_path} or closer (nearest: {near[0][0]} at "
                f"{near[1]}): GPUDirect RDMA traffic crosses the CPU", expected=want_path,
                actual=near[1], source=src,
                hint="check the NIC cards against the vendor's port map (a missing or "
                     "moved card)", covers=[S.gpu(i)]))
    elif want_path is not None:
        for i in v.present:
            wants = (gpu_nic or {}).get(str(i)) if isinstance(gpu_nic, dict) else None
            if isinstance(gpu_nic, dict):
                if wants is None:
                    continue
                for w in ([wants] if isinstance(wants, str) else wants):
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
                    near = (nearest[0][0], nearest[1]) if nearest[0] and nearest[1] else None
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
                nearest = topo.nearest_compute_nic(i, comp)
                if nearest and path_rank(nearest[1]) > path_rank(want_path):
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
            f"every GPU that lacks its port-map NIC has another NIC at {want_path} or "
            f"closer (matched by PCI placement): NIC names differ from {layout.name}'s port "
            "map: " + "; ".join(renamed),
            expected="port map names", actual=len(renamed), source=src,
            hint="GPUDirect RDMA is unaffected; NCCL_IB_HCA lists and job configs that pin "
                 "GPUs to NICs by name must use the names shown (names follow the OS, udev "
                 "rules, driver and BIOS)"))
    # -- GPUDirect RDMA
    if layout.get("nics.gpudirect_rdma") and topo.nics:
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
    return out

