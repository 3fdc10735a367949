"""The sysfs probe's raw values (:func:`~.walk.collect`) as a model fragment: GPUs and
RDMA devices with their PCI placement, ports and counters, the GPU↔NIC path matrix from
the PCI tree, NVMe drives, NUMA nodes and GPUDirect modules (``GPU.sysfs``, ``NIC.sysfs``,
``Topology.sysfs``: the records of :mod:`nvtopo.model`), with a note for everything that
is unknown or absent.  Pure.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...model import GPU, NIC, Matrix, Topology, path_rank
from ...model.node import SysfsNode
from ...model.pcie import PciFunction, PciPlacement
from ...model.rdma import Hca, Netdev
from ...model.storage import NvmeDrive
from .drivers import driver_of, nic_driver_words, nic_model, note_gpu_drivers
from .nvme import build as nvme_facts
from . import walk
from .net import build_net, net_cut
from .system import gpudirect, numa_info
from .facts import aer_counts
from .facts import (absent_reason, counter_facts, dir_reason, dir_status, link_facts,
                    narrowest, numa_node, path_level, pcie_hops, port_facts, port_netdev,
                    reason)
from .parse import (natural_key, parse_enum, parse_pcie_speed, pci_of,
                    sysfs_bdf, to_int)
from .read import DEADLINE, LIMIT

SOURCE = "sysfs"


def build(raw: Dict[str, Any], root: Optional[str] = None,
          topo: Optional[Topology] = None) -> Topology:
    """Turn collected raw values into a model fragment (GPUs, NICs, sysfs path matrix)."""
    topo = topo if topo is not None else Topology(sources=[SOURCE])
    pci: Dict[str, Dict[str, Any]] = raw["pci"]
    # (a sysfs evidence names its root: snapshot.schema.json; the live probe always does)
    info = SysfsNode(root=root)  # type: ignore[arg-type]

    if raw.get("pci_error"):
        topo.note("sysfs.no_pci", f"bus/pci/devices unreadable: {reason(raw['pci_error'])}; "
                  "no PCI facts", source=SOURCE, level="warning")
    _note_bad_pci_values(topo, pci)
    gpus, gpu_labels = _gpus(topo, pci)
    hcas = [_hca(topo, raw, pci, h) for h in sorted(raw["hcas"],
                                                      key=lambda x: natural_key(x["name"]))]
    _paths(topo, pci, gpus, gpu_labels, hcas)
    for h in hcas:
        topo.nics.append(_nic(h))
    absent = _absent_devices(topo, raw)
    info.absent_devices = absent
    _note_too_many(topo, raw)
    rdma = _no_rdma(topo, raw, pci, hcas, absent)
    if rdma is not None:
        info.rdma = rdma
    _nvme(info, raw, pci, gpus, gpu_labels)
    #: The labels above (nearest_gpus, gpu_paths) are sysfs's own PCI-order numbering; this
    #: map lets a merged model name the same GPUs by bus id (render.ib does).
    info.gpu_bus_ids = {label: bdf for bdf, label in gpu_labels.items()}
    info.numa = numa_info(topo, raw)
    info.gpudirect = gpudirect(raw["modules"])
    info.net = build_net(raw.get("net"))
    info.net_cut = net_cut(raw.get("net"))
    info.aer = aer_counts(pci, gpus, hcas)
    topo.sysfs = info
    return topo


def _pci_facts(dev: Dict[str, Any], pci: Dict[str, Dict[str, Any]]) -> PciPlacement:
    """A device's PCI facts: placement, link, the hops up to its root port."""
    hops, paired = pcie_hops(dev, pci)
    facts = PciPlacement(
        pci_address=dev["bdf"],
        device_id=dev["attrs"].get("device"),
        # (None only for an RDMA device's function, whose class sysfs may not give: copied
        # to its PciFunction, where null is allowed; a GPU's class is always known)
        class_=f"0x{dev['class']:06x}" if dev["class"] is not None else None,  # type: ignore[arg-type]
        numa_node=numa_node(dev),
        local_cpulist=dev["attrs"].get("local_cpulist"),
        host_bridge=dev["host_bridge"],
        chain=list(dev["chain"]),
        link=link_facts(dev),
        hops=hops,
        narrowest_hop=narrowest(hops),
        driver=driver_of(dev),
    )
    if not paired:
        facts.layout_note = "unpaired PCIe bridges above this device: switch count unknown"
    raw_numa = dev["attrs"].get("numa_node")
    if raw_numa is None:
        facts.numa_unknown = reason(dev["errors"].get("numa_node"))
    elif to_int(raw_numa, signed=True) is None:
        facts.numa_unknown = f"not a value: {raw_numa!r}"
    elif numa_node(dev) is None:
        facts.numa_unknown = f"numa_node is {raw_numa.strip()} (no NUMA information)"
    return facts


def _by_bus(devices: Any) -> List[Dict[str, Any]]:
    """PCI devices in bus order."""
    return sorted(devices, key=lambda d: sysfs_bdf(d["bdf"]) or (0, 0, 0, 0))


def _note_bad_pci_values(topo: Topology, pci: Dict[str, Dict[str, Any]]) -> None:
    """A note for each PCI attribute read but not a value (``Unknown speed`` is no fault)."""
    for bdf in sorted(pci, key=lambda b: sysfs_bdf(b) or (0, 0, 0, 0)):
        a = pci[bdf]["attrs"]
        for k in ("numa_node", "current_link_speed", "current_link_width", "max_link_speed",
                  "max_link_width"):
            val = a.get(k)
            if val is None or val.strip() == "" or val.startswith("Unknown"):  # "Unknown speed"
                continue
            ok = (parse_pcie_speed(val) is not None if "speed" in k
                  else to_int(val, signed=k == "numa_node") is not None)
            if not ok:
                topo.note("sysfs.bad_value", f"bus/pci/devices/{bdf}/{k}: not a value: "
                          f"{val!r}: unknown", source=SOURCE, level="warning", subject=bdf)


def _gpus(topo: Topology, pci: Dict[str, Dict[str, Any]]
          ) -> Tuple[List[Dict[str, Any]], Dict[str, str]]:
    """The GPUs, numbered in PCI bus order, added to ``topo``: their PCI devices and
    bus id -> label."""
    gpus = _by_bus(d for d in pci.values() if d["kind"] == "gpu")
    gpu_labels: Dict[str, str] = {}
    for i, dev in enumerate(gpus):
        facts = _pci_facts(dev, pci)
        label = f"GPU{i}"
        gpu_labels[dev["bdf"]] = label
        g = GPU(index=i, label=label, pci_bus_id=dev["bdf"], sources={"pci_bus_id": SOURCE})
        if facts.local_cpulist:
            g.cpu_affinity = facts.local_cpulist.strip()
            g.sources["cpu_affinity"] = SOURCE
        if facts.numa_node is not None:
            g.numa_affinity = str(facts.numa_node)
            g.sources["numa_affinity"] = SOURCE
        g.sysfs = facts
        topo.gpus.append(g)
    note_gpu_drivers(topo, gpus, gpu_labels)
    if len(gpus) > 1:  # (one GPU is GPU0 in every order)
        topo.note("sysfs.gpu_order", "sysfs numbers GPUs in PCI bus order (GPU0 = lowest bus "
                  "id), as nvidia-smi does by default; other enumerations (CUDA_DEVICE_ORDER, "
                  "CUDA_VISIBLE_DEVICES) may differ", source=SOURCE)
    return gpus, gpu_labels


def _stripped(a: Dict[str, Any], key: str) -> Optional[str]:
    return (a.get(key) or "").strip() or None


def _hca(topo: Topology, raw: Dict[str, Any], pci: Dict[str, Dict[str, Any]],
         h: Dict[str, Any]) -> Hca:
    """One RDMA device: its PCI function, netdevs, counters and ports, with its notes."""
    a, e = h["attrs"], h["errors"]
    nt_code, node_type = parse_enum(a.get("node_type"))
    bdf: Optional[str]
    bdf, parent = pci_of(h["device_path"])
    if bdf is None:
        bdf, parent2 = pci_of(h["path"])
        parent = parent2 if bdf else "none"
    dev = pci.get(bdf) if bdf else None
    hca = Hca(
        name=h["name"],
        pci_address=bdf,
        numa_node=numa_node(dev) if dev else None,
        parent=parent,
        soft=bdf is None and is_software(h),
        node_type=node_type,
        node_guid=_stripped(a, "node_guid"),
        sys_image_guid=_stripped(a, "sys_image_guid"),
        fw_ver=_stripped(a, "fw_ver"),
        hca_type=_stripped(a, "hca_type"),
        board_id=_stripped(a, "board_id"),
        node_desc=_stripped(a, "node_desc"),
        device_path=h["device_path"],
        netdevs=[],
        unknown={k: reason(v) for k, v in e.items()},
    )
    _hca_pci(topo, raw, pci, h, hca, dev)
    for nd in h["netdevs"]:
        hca.netdevs.append(Netdev(name=nd["name"], dev_port=to_int(nd.get("dev_port")),
                                  dev_id=to_int(nd.get("dev_id"), 0)
                                  if nd.get("dev_id") else None,
                                  type=to_int(nd.get("type"))))
    hw = counter_facts(h["hw_counters"]) if h["hw_counters"] is not None else None
    hca.hw_counters = hw["values"] if hw else None
    hca.hw_counters_status = dir_status(h["hw_counters"], h.get("hw_counters_error"))
    ports = [port_facts(p, node_type) for p in h["ports"]]
    for port in ports:
        port.netdev = port_netdev(port, hca.netdevs)
        _note_port(topo, h["name"], port)
    if "ports" in e:
        topo.note("sysfs.no_ports", f"{h['name']}: ports/ {dir_reason(e['ports'])}"
                  if e["ports"] in (DEADLINE, LIMIT) else
                  f"{h['name']}: ports/ unreadable ({reason(e['ports'])})",
                  source=SOURCE, level="warning", subject=h["name"])
    bad = sorted(h.get("skipped_ports") or [])
    hca.skipped_ports = bad
    if bad:
        topo.note("sysfs.bad_port", f"class/infiniband/{h['name']}/ports: {len(bad)} "
                  f"entr{'ies' if len(bad) > 1 else 'y'} not named as a port "
                  f"(0-{walk.MAX_PORT}), not read: " + ", ".join(repr(x) for x in bad[:4])
                  + (f" and {len(bad) - 4} more" if len(bad) > 4 else ""),
                  source=SOURCE, level="warning", subject=h["name"])
    hca.ports = ports
    return hca


def _hca_pci(topo: Topology, raw: Dict[str, Any], pci: Dict[str, Dict[str, Any]],
             h: Dict[str, Any], hca: Hca, dev: Optional[Dict[str, Any]]) -> None:
    """An RDMA device's PCI function, or why it has none (a note)."""
    bdf = hca.pci_address
    if dev is not None:
        facts = _pci_facts(dev, pci)
        hca.pci = PciFunction(device_id=facts.device_id, class_=facts.class_,
                              local_cpulist=facts.local_cpulist,
                              host_bridge=facts.host_bridge, chain=facts.chain,
                              link=facts.link, narrowest_hop=facts.narrowest_hop)
        if facts.numa_unknown is not None:
            hca.numa_unknown = facts.numa_unknown
    elif bdf is not None:
        hca.pci = None
        hca.pci_note = f"{bdf} not found under bus/pci/devices"
        if not raw.get("pci_error"):  # else sysfs.no_pci said it for every device
            topo.note("sysfs.pci_missing", f"{h['name']}: its PCI function {bdf} is not "
                      "under bus/pci/devices: no placement (NUMA node, PCIe link and "
                      "nearest GPU unknown)", source=SOURCE, level="warning",
                      subject=h["name"])
    elif not hca.soft:
        # a real HCA whose link names no PCI address (a copied tree, an odd driver): its
        # placement is unknown, but its state, rate and counters are checked as any
        hca.pci = None
        hca.pci_note = "PCI function unknown: its device link names no PCI address"
        topo.note("sysfs.pci_missing", f"{h['name']}: its device link names no PCI "
                  "address: no placement (NUMA node, PCIe link and nearest GPU "
                  "unknown); its ports are checked all the same", source=SOURCE,
                  level="warning", subject=h["name"])
    else:
        hca.pci = None
        hca.pci_note = "software RDMA device: no PCI parent"
        topo.note("sysfs.soft_device", f"{h['name']} has no PCI parent (software RDMA "
                  "device such as rxe or siw): no placement, by design", source=SOURCE,
                  subject=h["name"])


def _note_port(topo: Topology, name: str, port: Any) -> None:
    """A port's unreadable values and counters, as notes."""
    for k, why in sorted(port.unknown.items()):
        if why.startswith(("not a value: ", "not a rate: ")):
            topo.note("sysfs.bad_value", f"class/infiniband/{name}/ports/"
                      f"{port.port}/{k}: {why}: unknown", source=SOURCE,
                      level="warning", subject=name)
    if port.counters_status == "unreadable":
        topo.note("sysfs.counters_unreadable",
                  f"{name} port {port.port}: {port.counters_note}: its error "
                  "counters are unknown (not absent)", source=SOURCE, level="warning",
                  subject=name)
    # counters left unread at the deadline: sysfs.timeout says so, once
    failing = {k: r for k, r in port.counters_unknown.items()
               if r not in (DEADLINE, LIMIT)}
    reasons = sorted(set(failing.values()))
    if reasons:
        topo.note("sysfs.counters_unknown",
                  f"{name} port {port.port}: {len(failing)} "
                  f"counters unreadable ({'; '.join(reasons)})", source=SOURCE,
                  level="warning", subject=name)
    if port.counters_saturated:
        topo.note("sysfs.counters_saturated",
                  f"{name} port {port.port}: counters stuck at their maximum "
                  f"(true value is at least that): {', '.join(port.counters_saturated)}",
                  source=SOURCE, level="warning", subject=name)


def _path_cells(pci: Dict[str, Dict[str, Any]], gpus: List[Dict[str, Any]],
                gpu_labels: Dict[str, str], hcas: List[Hca], devices: List[str]
                ) -> Tuple[List[List[Optional[str]]], List[str]]:
    """The PCI path level between every two devices (GPU<->GPU: unknown, NVLink is invisible
    to sysfs), and the pairs whose level could not be told."""
    pci_by_label: Dict[str, Optional[Dict[str, Any]]] = {gpu_labels[d["bdf"]]: d for d in gpus}
    for h in hcas:
        pci_by_label[h.name] = pci.get(h.pci_address) if h.pci_address else None
    n = len(devices)
    cells: List[List[Optional[str]]] = [[None] * n for _ in range(n)]
    unknown_pairs = []
    for i, da in enumerate(devices):
        cells[i][i] = "X"
        for j in range(i + 1, n):
            db = devices[j]
            if da.startswith("GPU") and db.startswith("GPU") and da in gpu_labels.values() \
                    and db in gpu_labels.values():
                continue  # NVLink is invisible to sysfs: GPU<->GPU left unknown
            pa, pb = pci_by_label.get(da), pci_by_label.get(db)
            tok = path_level(pa, pb) if pa and pb else None
            cells[i][j] = cells[j][i] = tok
            if tok is None and pa is not None and pb is not None:
                unknown_pairs.append(f"{da}-{db}")
    return cells, unknown_pairs


def _paths(topo: Topology, pci: Dict[str, Dict[str, Any]], gpus: List[Dict[str, Any]],
           gpu_labels: Dict[str, str], hcas: List[Hca]) -> None:
    """GPU <-> NIC paths from the PCI tree: each HCA's paths and nearest GPUs, the matrix."""
    devices = [g.label for g in topo.gpus] + [h.name for h in hcas]
    cells, unknown_pairs = _path_cells(pci, gpus, gpu_labels, hcas, devices)
    at = {d: i for i, d in reversed(list(enumerate(devices)))}  # first index, as list.index
    for h in hcas:
        paths = {g.label: cells[at[g.label]][at[h.name]] for g in topo.gpus}
        h.gpu_paths = paths
        ranked = [(r, lab) for lab, t in paths.items() for r in [path_rank(t)] if r is not None]
        if ranked:
            best: Optional[int] = min(r for r, _ in ranked)
            h.nearest_gpus = [lab for r, lab in ranked if r == best]
            h.nearest_gpu_path = paths[h.nearest_gpus[0]]
        else:
            h.nearest_gpus = []
            h.nearest_gpu_path = None
    if devices and hcas:
        topo.matrix = Matrix(devices=devices, cells=cells, source=SOURCE)
        if len(topo.gpus) > 1:
            topo.note("sysfs.no_nvlink", "sysfs does not show NVLink: GPU↔GPU paths are left "
                      "unknown in the sysfs path matrix", source=SOURCE)
        if unknown_pairs:
            shown = ", ".join(unknown_pairs[:6]) + (
                f" and {len(unknown_pairs) - 6} more" if len(unknown_pairs) > 6 else "")
            topo.note("sysfs.path_unknown", f"PCI path level unknown for {len(unknown_pairs)} "
                      f"device pairs (no PCI placement, NUMA node -1, or an unpaired bridge "
                      f"layout): {shown}", source=SOURCE, level="warning")


def _nic(h: Hca) -> NIC:
    nic = NIC(label=h.name, name=h.name, sources={"label": SOURCE, "name": SOURCE})
    if h.pci_address:
        nic.pci_bus_id = h.pci_address
        nic.sources["pci_bus_id"] = SOURCE
    if h.numa_node is not None:
        nic.numa_node = h.numa_node
        nic.sources["numa_node"] = SOURCE
    nic.sysfs = h
    return nic


def _absent_devices(topo: Topology, raw: Dict[str, Any]) -> Dict[str, str]:
    """class/infiniband entries that are no device, with why (and their notes)."""
    absent = {name: absent_reason(err) for name, err in
              sorted((raw.get("ib_absent") or {}).items(), key=lambda x: natural_key(x[0]))}
    for name, why in absent.items():
        if why == LIMIT:
            continue  # said once below
        topo.note("sysfs.device_absent", f"class/infiniband/{name}: not read before the "
                  "deadline, so not counted as an RDMA device" if why == DEADLINE else
                  f"class/infiniband/{name} is absent or unreadable ({why}): not counted as "
                  "an RDMA device", source=SOURCE, level="warning", subject=name)
    past = [name for name, why in absent.items() if why == LIMIT]
    if past:
        topo.note("sysfs.device_absent", f"{len(past)} RDMA devices not read once the evidence "
                  f"reached its limit, so not counted: {', '.join(past[:4])}"
                  + (f" and {len(past) - 4} more" if len(past) > 4 else ""), source=SOURCE,
                  level="warning")
    return absent


def _note_too_many(topo: Topology, raw: Dict[str, Any]) -> None:
    skipped = raw.get("skipped") or {}
    for kind, what, where in (("rdma", "RDMA devices", "class/infiniband"),
                              ("gpu", "GPUs", "bus/pci/devices"),
                              ("nic", "NICs", "bus/pci/devices"),
                              ("nvme", "NVMe drives", "bus/pci/devices"),
                              ("numa", "NUMA nodes", "devices/system/node")):
        if skipped.get(kind):
            topo.note("sysfs.too_many", f"{where}: {skipped[kind]} {what} beyond the first "
                      f"{walk.MAX_DEVICES} not read (no real node has that many)", source=SOURCE,
                      level="warning")


def _bare_nics(raw: Dict[str, Any], pci: Dict[str, Dict[str, Any]], hcas: List[Hca]
               ) -> List[Dict[str, Any]]:
    """NIC functions with no RDMA device: the RDMA driver (mlx5_ib, ib_core...) is not loaded
    or not bound; they are NICs all the same (a ConnectX in an ordinary PCI slot)."""
    served = {h.pci_address for h in hcas if h.pci_address}
    # RoCE LAG: one RDMA device (mlx5_bond_0, on a bond) serves both ports of the card, so
    # the other function has none by design
    lag = {h.pci_address.rsplit(".", 1)[0] for h in hcas if h.pci_address and (
        "bond" in h.name or any(str(getattr(p, "netdev", "") or "").startswith("bond")
                                for p in h.ports))}
    bare = [d for d in _by_bus(d for d in pci.values() if d["kind"] == "nic")
            if d["bdf"] not in served and _rdma_capable(d)
            and d["bdf"].rsplit(".", 1)[0] not in lag]
    ib_err = raw.get("ib_error")
    if ib_err is not None and not str(ib_err).startswith("ENOENT"):
        bare = []  # class/infiniband unread (a deadline, EACCES): which NIC lacks one is unknown
    return bare


def _no_rdma(topo: Topology, raw: Dict[str, Any], pci: Dict[str, Dict[str, Any]],
             hcas: List[Hca], absent: Dict[str, str]) -> Optional[str]:
    """Notes for RDMA-capable NICs with no RDMA driver; why there is no RDMA device (None:
    there are some)."""
    bare = _bare_nics(raw, pci, hcas)
    for d in bare:
        dev_id = d["attrs"].get("device")
        model = nic_model(d)
        topo.note("sysfs.no_rdma_driver", f"PCI function {d['bdf']} ("
                  + (f"{model}, " if model else "") + f"vendor "
                  f"0x{d['vendor'] or 0:04x}, device {(dev_id or '?').strip()}) is an RDMA-capable "
                  f"NIC with no RDMA device under class/infiniband: {nic_driver_words(d)}, so "
                  "it cannot carry RDMA or GPUDirect RDMA traffic", source=SOURCE,
                  level="warning", subject=d["bdf"])
    if raw.get("ib_error") is not None:
        rdma = f"class/infiniband absent or unreadable: {reason(raw['ib_error'])}"
        if bare:
            rdma += (f"; {len(bare)} RDMA-capable NIC function"
                     f"{'s' if len(bare) > 1 else ''} without an RDMA driver: "
                     + ", ".join(d["bdf"] for d in bare[:8])
                     + (f" and {len(bare) - 8} more" if len(bare) > 8 else ""))
        return rdma
    if not hcas:
        return "no RDMA devices" + (
            f" ({len(absent)} listed but absent or unreadable: {', '.join(absent)})"
            if absent else "") + (
            f"; {len(bare)} RDMA-capable NIC function{'s' if len(bare) > 1 else ''} without "
            "an RDMA driver: " + ", ".join(d["bdf"] for d in bare[:8])
            + (f" and {len(bare) - 8} more" if len(bare) > 8 else "") if bare else "")
    return None


def _nvme(info: SysfsNode, raw: Dict[str, Any], pci: Dict[str, Dict[str, Any]],
          gpus: List[Dict[str, Any]], gpu_labels: Dict[str, str]) -> None:
    """NVMe drives (GPUDirect Storage placement); controller facts from class/nvme."""
    storage, ctrl_by_pci, ctrl_fabric = nvme_facts(raw.get("nvme"))
    nvme = []
    for dev in _by_bus(d for d in pci.values() if d["kind"] == "nvme"):
        facts = _pci_facts(dev, pci)
        paths = {gpu_labels[g["bdf"]]: path_level(dev, g) for g in gpus}
        ranked = [(r, lab) for lab, t in paths.items() for r in [path_rank(t)] if r is not None]
        best = min((r for r, _ in ranked), default=None)
        nvme.append(NvmeDrive(pci_address=dev["bdf"], numa_node=facts.numa_node,
                              link=facts.link, narrowest_hop=facts.narrowest_hop,
                              gpu_paths=paths,
                              nearest_gpus=[lab for r, lab in ranked if r == best],
                              **ctrl_by_pci.get(dev["bdf"], {})))
    nvme.extend(NvmeDrive(**c) for c in ctrl_fabric)  # NVMe-oF: no PCI function
    info.nvme = nvme
    info.storage = storage


#: Devices under devices/virtual/infiniband are software RDMA (rxe, siw): no PCI function by
#: design.  The driver's own device names are the fallback where the path is not recorded.
SOFT_PREFIXES = ("rxe", "siw")


def is_software(h: Dict[str, Any]) -> bool:
    """A software RDMA device (rxe, siw and their kind), known by where the kernel puts it
    (``devices/virtual/``), never merely by a missing PCI address."""
    path = str(h.get("path") or "")
    if "/devices/virtual/" in "/" + path.lstrip("/"):
        return True
    if path and "/devices/" in "/" + path.lstrip("/"):
        return False
    return str(h.get("name") or "").startswith(SOFT_PREFIXES)


#: ConnectX virtual-function PCI device ids (ConnectX-4 .. the mlx5 generic VF), from the
#: PCI ID repository (pci-ids.ucw.cz, vendor 15b3).
MLX_VF_IDS = frozenset({0x1014, 0x1016, 0x1018, 0x101A, 0x101C, 0x101E})


def _rdma_capable(dev: Dict[str, Any]) -> bool:
    """A PCI NIC function that would carry an RDMA device: class 0x0207 (InfiniBand), or a
    Mellanox/NVIDIA Ethernet function (ConnectX: RoCE).  SR-IOV virtual functions are not:
    on a host they are routinely given to VMs (vfio-pci), with no RDMA device by design."""
    cls = dev.get("class")
    if cls is None:
        return False
    dev_id = to_int((dev.get("attrs") or {}).get("device"), 16)
    if dev.get("vendor") == walk.VENDOR_MELLANOX and dev_id in MLX_VF_IDS:
        return False
    if (cls >> 8) == 0x0207:
        return True
    return dev.get("vendor") == walk.VENDOR_MELLANOX and (cls >> 8) == 0x0200
