"""The simulated machine rendered for the NVML and sysfs probes.

* :func:`nvml_description`: the declarative NVML machine description
  (:func:`nvtopo.simulate.nvml_table.compile_machine` turns it into the call table the
  NVML probe's walker is answered from, :mod:`nvtopo.simulate.nvml_record`).
* :func:`sysfs_tree`: the sysfs tree (PCI functions, RDMA devices, NUMA nodes,
  modules) the real sysfs traversal reads.
"""

from __future__ import annotations

from typing import Any, Dict, List

from ..safe import ascii_int, is_ascii_digits
from .families import CONNECTX, PCIE_GTS, rate_text
from .hardware import Machine
from .sysfs_tree import Tree


def nvml_description(m: Machine) -> Dict[str, Any]:
    fam = m.family
    gpus = m.gpus_in_order()
    index = {g.ident: i for i, g in enumerate(gpus)}
    driver, cuda = m.fleet.get("driver", fam.driver)
    desc: Dict[str, Any] = {
        "description": f"simulated {m.layout.name} (seed {m.seed})",
        "driver_version": driver,
        "nvml_version": f"{cuda // 1000}.{driver}",
        "cuda_driver_version": cuda,
        "switches": dict(m.switches),
        "switch_device_id": "0x22A310DE",
        "gpus": [],
        "links": [],
        "paths": {"pairs": {}},
        "calls": {},
    }
    old = fam.architecture < 7  # Pascal/Volta drivers: no per-link field values, no MIG
    for i, g in enumerate(gpus):
        dom, bus, rest = g.bdf.split(":")
        rec: Dict[str, Any] = {
            "name": fam.name,
            "uuid": g.uuid,
            "serial": g.serial,
            "bus_id": f"{int(dom, 16):08X}:{bus.upper()}:{rest.upper()}",
            "minor": i,
            "architecture": fam.architecture,
            "compute_capability": list(fam.cc),
            "memory_total": fam.memory_gib * 2**30,
            "pci_device_id": f"0x{fam.device_id:04X}10DE",
            "mig_mode": "NotSupported" if old else [0, 0],
            "persistence_mode": 1,
            "cpus": g.cpus,
            "numa": g.numa,
            "pcie": {"current_gen": g.pcie_gen or g.pcie_max_gen, "max_gen": g.pcie_max_gen,
                     "gpu_max_gen": g.pcie_max_gen,
                     "current_width": g.pcie_width or g.pcie_max_width,
                     "max_width": g.pcie_max_width, "replay": 0},
        }
        if g.gpu_numa_id is not None:
            rec["numa_node_id"] = g.gpu_numa_id
        if g.fabric_state is not None:
            done = g.fabric_state == 3
            rec["fabric"] = {"state": g.fabric_state, "status": 0 if done else 27,
                             "clusterUuid": (m.fleet.get("cluster_uuid") or _cluster_uuid(m))
                             if done else "0" * 32,
                             "cliqueId": m.fleet.get("clique_id", 32766) if done else 0,
                             "healthMask": 426 if done else 0,
                             "healthSummary": 1 if done else 0}
        elif fam.architecture >= 9:
            rec["fabric"] = "NotSupported"
        if m.fleet.get("platform") is not None:  # a rack's tray: its place and module id
            rec["platform"] = dict(m.fleet["platform"], moduleId=_module_id(i, len(m.gpus)))
        if g.c2c_links:
            up = g.c2c_links if g.c2c_up is None else g.c2c_up
            rec["c2c"] = {"enabled": g.c2c_enabled, "count": g.c2c_links,
                          "down": list(range(up, g.c2c_links)), "max_bw_mbps": 44712}
        if g.link_count:
            rec["nvlink"] = {"count": g.link_count, "version": m.nvlink_version,
                             "speed_mbps": fam.link_mbps, "link_fields": not old}
            sw = [lk for lk in g.links if lk.kind == "switch"]
            rec["link_switches"] = [lk.remote for lk in sw]
            rec["inactive_links"] = [lk.index for lk in g.links if not lk.up]
            if g.switch_link_count != len(sw):
                rec_key = f"nvmlDeviceGetFieldValues(gpu{i},147:0)"
                desc["calls"][rec_key] = {"value": g.switch_link_count}
            for lk in g.links:
                if lk.kind == "gpu" and lk.remote in index:
                    desc["links"].append([i, lk.index, index[lk.remote], lk.remote_link])
        desc["gpus"].append(rec)
    # explicit links are listed from both ends; inactive ones are popped per end by the
    # compiler (inactive_links), so one end can be down while the other is not
    for a in gpus:
        for b in gpus:
            if index[a.ident] < index[b.ident]:
                desc["paths"]["pairs"][f"{index[a.ident]}-{index[b.ident]}"] = m.path_level(
                    m.dev_of_gpu(a), m.dev_of_gpu(b))
    # NVLink P2P: OK where linked (the compiler decides by wiring), NS elsewhere
    desc["p2p"] = {"read": "OK", "write": "OK", "nvlink": "auto", "atomics": "OK"}
    return desc


def _cluster_uuid(m: Machine) -> str:
    import hashlib

    return hashlib.sha256(f"{m.layout.name}:{m.seed}:fabric".encode()).hexdigest()[:32]


def sysfs_tree(m: Machine) -> Tree:
    t = Tree(new_kernel=m.family.architecture >= 7)
    nodes = sorted(m.numa_cpus)
    t.numa({n: m.numa_cpus[n] for n in nodes},
           {a: tuple(10 if a == b else 21 for b in nodes) for a in nodes})
    by_bdf_gpu = {g.bdf: g for g in m.gpus}
    by_bdf_nic = {n.bdf: n for n in m.nics}
    # a parent bridge's current link follows the device trained below it
    cur: Dict[str, Dict[str, Any]] = {}
    for g in m.gpus:
        parent = m.pci[g.bdf].chain[-2] if len(m.pci[g.bdf].chain) > 1 else None
        if parent is not None:
            cur[parent] = {"gts": PCIE_GTS.get(g.pcie_gen) if g.pcie_gen else None,
                           "width": g.pcie_width}
    present = {g.bdf for g in m.gpus}
    for bdf in sorted(m.pci):
        d = m.pci[bdf]
        if d.role.startswith("gpu:") and bdf not in present:
            continue
        if d.role.startswith("gpu:"):
            g = by_bdf_gpu[bdf]
            t.pci(d.host_bridge, d.chain, d.vendor, d.device, d.cls, d.numa,
                  m.numa_cpus[d.numa], d.gts, d.width,
                  cur_gts=PCIE_GTS.get(g.pcie_gen) if g.pcie_gen else None,
                  cur_width=g.pcie_width)
        else:
            c = cur.get(bdf, {})
            t.pci(d.host_bridge, d.chain, d.vendor, d.device, d.cls, d.numa,
                  m.numa_cpus[d.numa], d.gts, d.width, cur_gts=c.get("gts"),
                  cur_width=c.get("width"))
        nic = by_bdf_nic.get(bdf)
        if nic is not None:
            _hca(t, m, nic, d.path)
    t.module("nvidia")
    if m.peermem:
        t.module("nvidia_peermem")
    from .storage import add as add_drives
    add_drives(t, m)
    t.dir("kernel")  # a real /sys always has it (no kernel/iommu_groups: no IOMMU driver)
    return t


def _hca(t: Tree, m: Machine, nic: Any, path: str) -> None:
    last = nic.name.rsplit("_", 1)[-1]
    i = (ascii_int(last) if is_ascii_digits(last) else None) or 0
    rate = nic.port.rate_gbps
    built = nic.card_rate or rate  # the card's model follows its own rate, not a degraded one
    cx = CONNECTX.get(int(built) if float(built) in (100, 200, 400, 800) else 400,
                      CONNECTX[400])
    if nic.role == "storage":
        cx = CONNECTX[200]
    values: Dict[str, Any] = {}
    for k, v in nic.port.counters.items():
        values[f"counters/{k}"] = v
    port: Dict[str, Any] = dict(state=nic.port.state, phys=nic.port.phys,
                                rate=rate_text(rate), layer=nic.link_layer,
                                lid=f"0x{0x30 + i:x}", values=values)
    fleet_port = m.fleet.get("ports", {}).get(nic.name)
    if fleet_port is not None and nic.link_layer == "InfiniBand":
        port["lid"], port["sm_lid"] = f"0x{fleet_port[0]:x}", f"0x{fleet_port[1]:x}"
        port["gid"] = f"{fleet_port[2]}:{nic.guid}"
    if nic.port.state != "4: ACTIVE":
        port["lid"] = "0xffff" if nic.link_layer == "InfiniBand" else "0x0"
        port["sm_lid"] = "0x0"
    if nic.link_layer == "Ethernet":
        port["ndev"] = nic.netdev
        port["gid"] = "fe80:0000:0000:0000:" + nic.guid[:9] + "ff:fe" + nic.guid[12:]
    netdevs: List[tuple] = [(nic.netdev, 0, 32 if nic.link_layer == "InfiniBand" else 1)]
    t.hca(path, nic.name, hca_type=cx[1], fw=cx[2], guid=nic.guid, board=cx[3],
          ports=[port], netdevs=netdevs, node_desc=f"{m.hostname} {nic.name}")


#: Module ids a 4-GPU Grace tray's GPUs report, GPU 0..3: real GB200 and GB300 trays print
#: 2, 1, 4, 3, not the index order (NVIDIA/k8s-test-infra's real nvidia-smi -q -x captures
#: and its PR 727; docs/layouts.md).  Other boards: index + 1.
_TRAY_MODULE_IDS = (2, 1, 4, 3)


def _module_id(index: int, gpus: int) -> int:
    if gpus == len(_TRAY_MODULE_IDS):
        return _TRAY_MODULE_IDS[index]
    return index + 1
