"""The sysfs traversal: which files the probe reads, in which order, and what it found.

:func:`collect` walks a view (:mod:`.read`) of a sysfs tree:

* ``class/infiniband/<dev>``: device attributes, the ``device`` link to the PCI function
  (walking up to the nearest PCI address for auxiliary and sub-function devices),
  netdevs (``device/net/*``), every ``ports/<n>`` (state, phys_state, rate, link_layer,
  lid, sm_lid, gids/0, counters, hw_counters) and device-level ``hw_counters``;
* ``bus/pci/devices``: GPUs, NICs, NVMe drives and bridges (link speed and width, NUMA
  node, local CPUs, and the parent chain from the resolved path);
* ``devices/system/node``: NUMA nodes, their CPUs and distances;
* ``module/``: whether a GPUDirect RDMA peer-memory module is loaded.

The same traversal runs over the live tree (capture: the evidence holds exactly the
paths it reads), over the recorded evidence (derive), and over ``nvtopo simulate``'s
trees held in memory.  Values stay raw here; :mod:`.build` parses them.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ...safe import ascii_int, is_ascii_digits
from . import nvme
from .net import collect_net
from .parse import pci_of, sysfs_bdf, to_int
from .read import NOT_RECORDED, read_attrs

HOST_BRIDGE_RE = re.compile(r"^pci([0-9a-f]{4,}):([0-9a-f]{2})$")
NODE_RE = re.compile(r"^node([0-9]{1,9})$")

VENDOR_NVIDIA = 0x10DE
VENDOR_MELLANOX = 0x15B3

#: Device attributes read under class/infiniband/<dev>.
HCA_ATTRS = ("node_type", "node_guid", "sys_image_guid", "fw_ver", "hca_type", "board_id")
#: Read like HCA_ATTRS, but where the file is absent (or evidence taken before it was read
#: lacks it) the field is left out rather than unknown.
HCA_NEWER_ATTRS = ("node_desc",)
#: Port attributes read under ports/<n>.
PORT_ATTRS = ("state", "phys_state", "rate", "link_layer", "lid", "sm_lid", "gids/0")
#: PCI attributes read for GPUs, NICs, NVMe drives and bridges.
PCI_ATTRS = ("device", "numa_node", "local_cpulist", "current_link_speed", "current_link_width",
             "max_link_speed", "max_link_width")
#: Read for GPUs and NICs only: the driver bound (``DRIVER=``), see :mod:`.drivers`.
DRIVER_ATTRS = ("uevent",)
#: AER counters (PCIe Advanced Error Reporting, since boot) read for GPUs, NICs and bridges;
#: absent on kernels before 4.17 and on functions without the AER capability: an absent
#: file is not recorded (the evidence of a node without them stays as it was).
AER_ATTRS = ("aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal")
AER_KINDS = ("gpu", "nic", "bridge")
#: Peer-memory modules (GPUDirect RDMA) and GPUDirect Storage.
MODULES = ("nvidia_peermem", "nv_peer_mem", "nvidia_fs")
PEER_MEM_FILES = ("kernel/mm/memory_peers/nv_mem/version",)

#: Most devices of one kind (GPUs, NICs, NVMe drives, RDMA devices) read: the path matrix
#: grows with the square of their number.  Real nodes have tens.
MAX_DEVICES = 1024
#: IB port numbers are 8 bits: a ``ports/`` entry named otherwise is no port.
MAX_PORT = 255


def _pci_kind(vendor: Optional[int], cls: Optional[int]) -> Optional[str]:
    if cls is None:
        return None
    base, sub = cls >> 16, (cls >> 8) & 0xFF
    if vendor == VENDOR_NVIDIA and base == 0x03:
        return "gpu"
    if base == 0x02 and sub in (0x00, 0x07) and vendor == VENDOR_MELLANOX:
        return "nic"
    if base == 0x02 and sub == 0x07:
        return "nic"
    if base == 0x01 and sub == 0x08:
        return "nvme"
    if base == 0x06 and sub == 0x04:
        return "bridge"
    return None


def _chain(real: str) -> Tuple[Optional[str], List[str]]:
    """Host bridge (``pci0000:15``) and the BDFs from the root port down to the device."""
    host = None
    chain: List[str] = []
    for comp in real.split("/"):
        if host is None and HOST_BRIDGE_RE.match(comp):
            host = comp
            continue
        if sysfs_bdf(comp):
            chain.append(comp)
    return host, chain


def _read_pci(v: Any, base: str, bdf: str, kind: str, vendor: Optional[int],
              cls: Optional[int]) -> Dict[str, Any]:
    """The placement facts of one PCI function (``base`` = ``bus/pci/devices/<bdf>``)."""
    real = v.resolve(base)
    host, chain = _chain(real)
    dev: Dict[str, Any] = {"bdf": bdf, "kind": kind, "vendor": vendor, "class": cls,
                           "path": real, "host_bridge": host, "chain": chain,
                           "attrs": {}, "errors": {}}
    read_attrs(v, base, PCI_ATTRS + DRIVER_ATTRS if kind in ("gpu", "nic") else PCI_ATTRS, dev)
    return dev


def _collect_aer(v: Any, out: Dict[str, Any]) -> None:
    """The AER counters of the GPUs, the NICs' functions and the bridges above them, read
    last (the rest of the evidence first, should it reach its limit)."""
    pci: Dict[str, Dict[str, Any]] = out["pci"]
    wanted: Dict[str, None] = {}
    for dev in pci.values():
        if dev["kind"] in ("gpu", "nic"):
            for bdf in dev["chain"] or [dev["bdf"]]:
                wanted[bdf] = None
    for bdf in wanted:
        found = pci.get(bdf)
        if found is not None and found["kind"] in AER_KINDS:
            _read_aer(v, f"bus/pci/devices/{bdf}", found)


def _read_aer(v: Any, base: str, dev: Dict[str, Any]) -> None:
    """The AER counter files that exist into ``dev["aer"]``; an absent one is forgotten by
    the view (not recorded as an error), one unreadable otherwise is kept as its error."""
    for attr in AER_ATTRS:
        val, err = v.read(f"{base}/{attr}")
        if val is not None:
            dev.setdefault("aer", {})[attr] = val
        elif (err or "").startswith("ENOENT"):
            errors = getattr(v, "errors", None)
            if isinstance(errors, dict):
                errors.pop(f"{v.resolve(base)}/{attr}", None)
        else:
            dev.setdefault("aer_errors", {})[attr] = err


def _port_number(name: str) -> Optional[int]:
    """The number of a ``ports/`` entry as the kernel names it (``1``, not ``01`` or ``²``)."""
    n = ascii_int(name, lo=0, hi=MAX_PORT) if is_ascii_digits(name) else None
    return n if n is not None and name == str(n) else None


def collect(v: Any) -> Dict[str, Any]:
    """Walk the tree through view ``v`` and return what was found, values still raw.

    Bounded whatever the tree holds: at most :data:`MAX_DEVICES` devices of each
    kind (the rest counted in ``skipped``), ports named 0-255 only.
    """
    out: Dict[str, Any] = {"pci": {}, "hcas": [], "numa": None, "modules": {},
                           "skipped": {}}
    names = _collect_pci(v, out)
    _collect_rdma(v, out, names)
    _collect_aer(v, out)
    _collect_numa(v, out)
    _collect_modules(v, out)
    out["net"] = collect_net(v)  # class/net: WireGuard interfaces and their underlays

    # -- NVMe controllers and the IOMMU (GPUDirect Storage): an allow-list, see .nvme
    out["nvme"] = nvme.collect(v, out["pci"])
    return out


def _collect_pci(v: Any, out: Dict[str, Any]) -> Optional[List[str]]:
    """PCI devices of the kinds read (at most :data:`MAX_DEVICES` of each but bridges);
    the listing of ``bus/pci/devices`` (None when unreadable)."""
    skipped: Dict[str, int] = out["skipped"]
    per_kind: Dict[str, int] = {}
    names, err = v.listdir("bus/pci/devices")
    out["pci_error"] = err if names is None else None
    for name in names or []:
        bdf = name.lower()
        if not sysfs_bdf(bdf):
            continue
        base = f"bus/pci/devices/{name}"
        cls_raw, cls_err = v.read(base + "/class")
        ven_raw, _ = v.read(base + "/vendor")
        cls, vendor = to_int(cls_raw, 16), to_int(ven_raw, 16)
        kind = _pci_kind(vendor, cls)
        if kind is None:
            continue
        if kind != "bridge":  # bridges are looked up, never paired: no square to bound
            if per_kind.get(kind, 0) >= MAX_DEVICES:
                skipped[kind] = skipped.get(kind, 0) + 1
                continue
            per_kind[kind] = per_kind.get(kind, 0) + 1
        out["pci"][bdf] = _read_pci(v, base, bdf, kind, vendor, cls)
    return names


def _collect_rdma(v: Any, out: Dict[str, Any], names: Optional[List[str]]) -> None:
    """RDMA devices (class/infiniband), their ports, and each one's PCI function."""
    devs, err = v.listdir("class/infiniband")
    out["ib_error"] = err if devs is None else None
    out["ib_absent"] = {}
    if devs is not None and len(devs) > MAX_DEVICES:
        out["skipped"]["rdma"] = len(devs) - MAX_DEVICES
        devs = devs[:MAX_DEVICES]
    for name in devs or []:
        base = f"class/infiniband/{name}"
        # A name whose entry is no directory (a dangling link: the device vanished; a
        # stray file in a copied tree) is absent or unreadable, not a device.  Evidence
        # taken before this listing was recorded has none: the device is read as before.
        listing, lerr = v.listdir(base)
        if listing is None and lerr != NOT_RECORDED:
            out["ib_absent"][name] = lerr
            continue
        hca = _read_hca(v, name, base)
        out["hcas"].append(hca)
        # The PCI function of an RDMA device is read whatever its class and vendor (an
        # Intel E810 or a Broadcom NIC is class 0x0200 from another vendor than 0x15b3).
        bdf = pci_of(hca["device_path"])[0] or pci_of(hca["path"])[0]
        if bdf is not None and bdf not in out["pci"] and bdf in (names or ()):
            base = f"bus/pci/devices/{bdf}"
            cls = to_int(v.read(base + "/class")[0], 16)
            vendor = to_int(v.read(base + "/vendor")[0], 16)
            out["pci"][bdf] = _read_pci(v, base, bdf, "nic", vendor, cls)


def _read_hca(v: Any, name: str, base: str) -> Dict[str, Any]:
    """One RDMA device: its attributes, net devices, counters and numbered ports."""
    hca: Dict[str, Any] = {"name": name, "path": v.resolve(base), "attrs": {}, "errors": {},
                           "ports": [], "netdevs": [], "hw_counters": None,
                           "skipped_ports": []}
    read_attrs(v, base, HCA_ATTRS, hca)
    for attr in HCA_NEWER_ATTRS:
        val, aerr = v.read(f"{base}/{attr}")
        if val is not None:
            hca["attrs"][attr] = val
        elif not (aerr or "").startswith("ENOENT"):  # absent (or not recorded): left out
            hca["errors"][attr] = aerr
    hca["device_path"] = v.resolve(base + "/device")
    nets, _ = v.listdir(base + "/device/net")
    for nd in nets or []:
        entry: Dict[str, Any] = {"name": nd}
        for attr in ("dev_port", "dev_id", "type"):
            val, _ = v.read(f"{base}/device/net/{nd}/{attr}")
            entry[attr] = val
        hca["netdevs"].append(entry)
    hca["hw_counters"], hca["hw_counters_error"] = _read_counter_dir(v, base + "/hw_counters")
    ports, perr = v.listdir(base + "/ports")
    if ports is None:
        hca["errors"]["ports"] = perr
    numbered = []
    for p in ports or []:
        num = _port_number(p)
        if num is None:
            hca["skipped_ports"].append(p)
        else:
            numbered.append((num, p))
    for num, p in sorted(numbered):
        hca["ports"].append(_read_port(v, f"{base}/ports/{p}", num))
    return hca


def _read_port(v: Any, pbase: str, num: int) -> Dict[str, Any]:
    """One port of an RDMA device: attributes, the RoCE GID's net device, counters."""
    port: Dict[str, Any] = {"port": num, "attrs": {}, "errors": {}}
    read_attrs(v, pbase, PORT_ATTRS, port)
    if (port["attrs"].get("link_layer") or "").strip() == "Ethernet":
        for attr in ("gid_attrs/ndevs/0", "gid_attrs/types/0"):
            val, aerr = v.read(f"{pbase}/{attr}")
            if val is None:
                port["errors"][attr] = aerr
            else:
                port["attrs"][attr] = val
    port["counters"], port["counters_error"] = _read_counter_dir(v, pbase + "/counters")
    # the pre-4.5 (mlx4) layout keeps 64-bit data counters apart: counters_ext/*_64
    ext, _ = _read_counter_dir(v, pbase + "/counters_ext")
    if ext:
        port["counters_ext"] = ext
    port["hw_counters"], port["hw_counters_error"] = _read_counter_dir(
        v, pbase + "/hw_counters")
    return port


def _collect_numa(v: Any, out: Dict[str, Any]) -> None:
    """NUMA nodes: each one's CPU list and distances (at most :data:`MAX_DEVICES`)."""
    nodes, err = v.listdir("devices/system/node")
    if nodes is not None:
        numa: Dict[str, Any] = {"nodes": [], "online": v.read("devices/system/node/online")[0]}
        found = sorted((int(m.group(1)), x) for x in nodes for m in (NODE_RE.match(x),) if m)
        for num, n in found[:MAX_DEVICES]:
            cpulist, cerr = v.read(f"devices/system/node/{n}/cpulist")
            dist, derr = v.read(f"devices/system/node/{n}/distance")
            numa["nodes"].append({"node": num, "name": n, "cpulist": cpulist, "distance": dist,
                                  "errors": {k: e for k, e in (("cpulist", cerr),
                                                               ("distance", derr))
                                             if e is not None and k}})
        if len(found) > MAX_DEVICES:
            out["skipped"]["numa"] = len(found) - MAX_DEVICES
        out["numa"] = numa
    else:
        out["numa_error"] = err


def _collect_modules(v: Any, out: Dict[str, Any]) -> None:
    """GPUDirect modules: loaded or not, and their versions; the peer-memory files."""
    for mod in MODULES:
        listing, _ = v.listdir(f"module/{mod}")
        version = v.read(f"module/{mod}/version")[0] if listing and "version" in listing else None
        out["modules"][mod] = {"loaded": listing is not None, "version": version}
    for path in PEER_MEM_FILES:
        out["modules"][path] = {"loaded": v.read(path)[0] is not None}


def _read_counter_dir(v: Any, path: str) -> Tuple[Optional[Dict[str, Tuple[Optional[str],
                                                                            Optional[str]]]],
                                                  Optional[str]]:
    """The counters of directory ``path`` (name -> (value, error)), or ``None`` and why not."""
    names, err = v.listdir(path)
    if names is None:
        return None, err
    out = {}
    for n in names:
        if n == "lifespan":  # a writable cache setting, not a counter
            continue
        out[n] = v.read(f"{path}/{n}")
    return out, None
