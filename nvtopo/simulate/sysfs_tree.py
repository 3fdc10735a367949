"""Fake sysfs trees: built in memory, written as ``.sysfs`` archives, read by the real probe.

:class:`Tree` is the builder ``fixtures/sysfs/generate.py`` uses (PCI functions
with their links, RDMA devices with ports and counters, NUMA nodes, modules),
in the kernel's exact formats (``4: ACTIVE``, ``400 Gb/sec (4X NDR)``,
``32.0 GT/s PCIe``, relative ``device`` and ``bus/pci/devices`` links).

:func:`capture` runs the sysfs probe's own traversal
(:func:`nvtopo.probes.sysfs.collect`) over a tree held in memory, recording
exactly what :func:`nvtopo.probes.sysfs.capture` records on a real directory
(the tests check that both give the same evidence): no files are written, so
a simulated DGX H100 takes milliseconds.  :meth:`Tree.text` gives the archive
for :func:`nvtopo.fakesys.materialize` when a real directory is wanted.
"""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import fakesys

ERROR_COUNTERS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
                  "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
                  "port_xmit_discards", "port_xmit_constraint_errors",
                  "port_rcv_constraint_errors", "local_link_integrity_errors",
                  "excessive_buffer_overrun_errors", "VL15_dropped")
DATA_COUNTERS = ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets",
                 "port_xmit_wait", "unicast_xmit_packets", "unicast_rcv_packets",
                 "multicast_xmit_packets", "multicast_rcv_packets")
HW_COUNTERS = ("out_of_buffer", "out_of_sequence", "packet_seq_err", "local_ack_timeout_err",
               "rnr_nak_retry_err", "req_cqe_error")


def _num(*key: object) -> int:
    return int(hashlib.sha256(repr(key).encode()).hexdigest()[:10], 16)


class Tree:
    """Entries of one archive, keyed by path (``PATH = VALUE``, ``PATH -> TARGET`` ...)."""

    def __init__(self, new_kernel: bool = True) -> None:
        self.e: Dict[str, str] = {}
        self.new_kernel = new_kernel

    def f(self, path: str, value: object, op: str = "=") -> None:
        self.e[path] = f"{path} {op} {value}".rstrip()

    def link(self, path: str, target: str) -> None:
        self.e[path] = f"{path} -> {target}"

    def fault(self, path: str, spec: str) -> None:
        self.e[path] = f"{path} ! {spec}"

    def dir(self, path: str) -> None:
        """An empty directory (``PATH/``), unless something is already under it."""
        if not any(k.startswith(path + "/") for k in self.e):
            self.e[path] = f"{path}/"

    def drop(self, path: str) -> None:
        self.e.pop(path, None)

    def speed(self, gts: Optional[float]) -> str:
        if gts is None:
            return "Unknown" if self.new_kernel else "Unknown speed"
        if self.new_kernel:
            return f"{gts:.1f} GT/s PCIe"
        return "2.5 GT/s" if gts == 2.5 else f"{gts:g} GT/s"

    # -- PCI
    def pci(self, hb: str, chain: Sequence[str], vendor: int, device: int, cls: int,
            numa: int, cpus: str, gts: Optional[float] = None, width: int = 16,
            cur_gts: Optional[float] = None, cur_width: Optional[int] = None) -> str:
        path = f"devices/{hb}/" + "/".join(chain)
        self.f(f"{path}/vendor", f"0x{vendor:04x}")
        self.f(f"{path}/device", f"0x{device:04x}")
        self.f(f"{path}/class", f"0x{cls:06x}")
        self.f(f"{path}/numa_node", numa)
        self.f(f"{path}/local_cpulist", cpus)
        if gts is not None:
            self.f(f"{path}/max_link_speed", self.speed(gts))
            self.f(f"{path}/max_link_width", width)
            self.f(f"{path}/current_link_speed", self.speed(cur_gts if cur_gts else gts))
            self.f(f"{path}/current_link_width", cur_width if cur_width is not None else width)
        self.link(f"bus/pci/devices/{chain[-1]}", f"../../../{path}")
        return path

    # -- RDMA
    def hca(self, pci_path: str, name: str, *, hca_type: str, fw: str, guid: str,
            board: str, ports: List[Dict[str, object]], netdevs: Sequence[tuple] = (),
            sys_guid: Optional[str] = None, hw_rev: str = "0", parent: Optional[str] = None,
            node_desc: Optional[str] = None) -> str:
        base = f"{pci_path}/infiniband/{name}"
        self.link(f"class/infiniband/{name}", f"../../{base}")
        if parent is None:
            self.link(f"{base}/device", f"../../../{pci_path.rsplit('/', 1)[1]}")
        self.f(f"{base}/node_type", "1: CA")
        self.f(f"{base}/node_guid", guid)
        self.f(f"{base}/sys_image_guid", sys_guid or guid)
        self.f(f"{base}/fw_ver", fw)
        self.f(f"{base}/hca_type", hca_type)
        self.f(f"{base}/hw_rev", hw_rev)
        self.f(f"{base}/board_id", board)
        if node_desc is not None:
            self.f(f"{base}/node_desc", node_desc)
        for ifname, dev_port, typ in netdevs:
            self.f(f"{pci_path}/net/{ifname}/dev_port", dev_port)
            self.f(f"{pci_path}/net/{ifname}/dev_id", "0x0")
            self.f(f"{pci_path}/net/{ifname}/type", typ)
        for i, p in enumerate(ports, 1):
            self.port(f"{base}/ports/{i}", name, guid, **p)  # type: ignore[arg-type]
        return base

    def port(self, pb: str, name: str, guid: str, *, state: str = "4: ACTIVE",
             phys: str = "5: LinkUp", rate: str = "400 Gb/sec (4X NDR)",
             layer: str = "InfiniBand", lid: str = "0x1", sm_lid: str = "0x1",
             gid: Optional[str] = None, ndev: Optional[str] = None, hw: bool = True,
             counters: bool = True, values: Optional[Dict[str, object]] = None) -> None:
        self.f(f"{pb}/state", state)
        self.f(f"{pb}/phys_state", phys)
        self.f(f"{pb}/rate", rate)
        self.f(f"{pb}/link_layer", layer)
        self.f(f"{pb}/lid", lid if layer == "InfiniBand" else "0x0")
        self.f(f"{pb}/sm_lid", sm_lid if layer == "InfiniBand" else "0x0")
        self.f(f"{pb}/lid_mask_count", 0)
        self.f(f"{pb}/cap_mask", "0xa751e848" if layer == "InfiniBand" else "0x00010000")
        self.f(f"{pb}/gids/0", gid or f"fe80:0000:0000:0000:{guid}")
        self.f(f"{pb}/pkeys/0", "0xffff")
        if layer == "Ethernet":
            self.f(f"{pb}/gid_attrs/ndevs/0", ndev)
            self.f(f"{pb}/gid_attrs/types/0", "IB/RoCE v1")
        else:
            self.fault(f"{pb}/gid_attrs/ndevs/0", "EINVAL")
        if counters:
            for c in ERROR_COUNTERS:
                self.f(f"{pb}/counters/{c}", 0)
            for c in DATA_COUNTERS:
                self.f(f"{pb}/counters/{c}", _num(name, pb, c) % 10**9)
        if hw:
            self.f(f"{pb}/hw_counters/lifespan", 10)
            for c in HW_COUNTERS:
                self.f(f"{pb}/hw_counters/{c}", 0)
        for k, v in (values or {}).items():
            if isinstance(v, str) and v.startswith("!"):
                self.fault(f"{pb}/{k}", v[1:].strip())
            elif v is None:
                self.drop(f"{pb}/{k}")
            elif isinstance(v, tuple):  # (op, value): "=tar" etc.
                self.f(f"{pb}/{k}", v[1], op=v[0])
            else:
                self.f(f"{pb}/{k}", v)

    # -- NVMe controllers (class/nvme) and IOMMU groups
    def nvme(self, pci_path: str, name: str, *, model: str, fw: str,
             sectors: Sequence[int], transport: str = "pcie") -> str:
        """Controller ``name`` (nvme0) of the PCI function at ``pci_path``, with one namespace
        per entry of ``sectors`` (512-byte sectors).  Returns the controller directory."""
        base = f"{pci_path}/nvme/{name}"
        self.link(f"class/nvme/{name}", "../../" + base)
        self.link(f"{base}/device", "../" * 2 + "../" + pci_path.rsplit("/", 1)[1])
        for attr, value in (("model", model), ("firmware_rev", fw), ("transport", transport),
                            ("state", "live")):
            self.f(f"{base}/{attr}", value)
        for k, n in enumerate(sectors):
            self.f(f"{base}/{name}n{k + 1}/size", n)
        return base

    def iommu_group(self, pci_path: str, group: int, kind: str = "identity") -> None:
        """Put the PCI function at ``pci_path`` in IOMMU group ``group`` of type ``kind``."""
        up = "../" * (pci_path.count("/") + 1)
        self.link(f"{pci_path}/iommu_group", f"{up}kernel/iommu_groups/{group}")
        self.f(f"kernel/iommu_groups/{group}/type", kind)

    # -- NUMA and modules
    def numa(self, nodes: Dict[int, str], distances: Dict[int, Sequence[int]]) -> None:
        ids = sorted(nodes)
        spec = ",".join(str(i) for i in ids) if len(ids) < 2 or ids != list(
            range(ids[0], ids[-1] + 1)) else f"{ids[0]}-{ids[-1]}"
        for k in ("online", "possible", "has_memory", "has_normal_memory"):
            self.f(f"devices/system/node/{k}", spec)
        self.f("devices/system/node/has_cpu",
               ",".join(str(i) for i in ids if nodes[i]) or "")
        self.e["devices/system/node/power"] = "devices/system/node/power/"
        for n in ids:
            self.f(f"devices/system/node/node{n}/cpulist", nodes[n])
            self.f(f"devices/system/node/node{n}/distance",
                   " ".join(str(d) for d in distances[n]))

    def module(self, name: str) -> None:
        self.f(f"module/{name}/initstate", "live")
        self.f(f"module/{name}/refcnt", 0)

    def text(self, header: Sequence[str]) -> str:
        lines = [f"# {h}" if h else "#" for h in header]
        lines.append("")
        lines.extend(self.e[k] for k in sorted(self.e))
        return "\n".join(lines) + "\n"

    def entries(self) -> List[Tuple[str, str, str]]:
        """``(kind, path, value)`` entries, as :func:`nvtopo.fakesys.parse` reads the archive."""
        return fakesys.parse("\n".join(self.e[k] for k in sorted(self.e)))


# --- reading a tree held in memory, as the probe reads a directory -----------------------------


class MemView:
    """The sysfs probe's view (``resolve``, ``read``, ``listdir``) over in-memory entries.

    Records what it reads exactly as the probe's live view does: resolved
    file contents (NUL padding and the final newline stripped), link targets
    met while resolving, directory listings, and read errors in the
    ``"ENOENT: No such file or directory"`` form.
    """

    def __init__(self, entries: Sequence[Tuple[str, str, str]]) -> None:
        from ..probes.sysfs import resolve_path

        self._resolve_path = resolve_path
        self._content: Dict[str, str] = {}
        self._targets: Dict[str, str] = {}
        self._faults: Dict[str, str] = {}
        children: Dict[str, set] = {}
        for kind, path, value in entries:
            if kind == "file":
                self._content[path] = value
            elif kind == "link":
                self._targets[path] = value
            elif kind == "fault":
                self._content[path] = ""
                self._faults[path] = fakesys._fault_text(value)
            parts = path.split("/")
            for i in range(1, len(parts) + 1):
                children.setdefault("/".join(parts[:i - 1]), set()).add(parts[i - 1])
            if kind == "dir":
                children.setdefault(path, set())
        self._children = {k: sorted(v) for k, v in children.items()}
        self.files: Dict[str, str] = {}
        self.links: Dict[str, str] = {}
        self.dirs: Dict[str, List[str]] = {}
        self.errors: Dict[str, str] = {}
        self._cache: Dict[str, str] = {}
        # injected faults are keyed by their resolved path, as fakesys.materialize returns them
        self._faults = {self._resolve_quiet(p): e for p, e in self._faults.items()}

    def _resolve_quiet(self, rel: str) -> str:
        return self._resolve_path(rel, self._targets.get, {})

    def _readlink(self, key: str) -> Optional[str]:
        target = self._targets.get(key)
        if target is not None:
            self.links[key] = target
        return target

    def resolve(self, rel: str) -> str:
        return self._resolve_path(rel, self._readlink, self._cache)

    def read(self, rel: str) -> Tuple[Optional[str], Optional[str]]:
        head, _, name = rel.rpartition("/")
        real = f"{self.resolve(head)}/{name}" if head else name
        if real in self._targets:
            real = self.resolve(real)
        if real in self.files:
            return self.files[real], None
        if real in self.errors:
            return None, self.errors[real]
        fault = self._faults.get(real)
        if fault is not None:
            self.errors[real] = fault
            return None, fault
        data = self._content.get(real)
        if data is None:
            err = ("EISDIR: Is a directory" if real in self._children
                   else "ENOENT: No such file or directory")
            self.errors[real] = err
            return None, err
        text = data.rstrip("\x00")
        if text.endswith("\n"):
            text = text[:-1]
        self.files[real] = text
        return text, None

    def listdir(self, rel: str) -> Tuple[Optional[List[str]], Optional[str]]:
        real = self.resolve(rel)
        if real in self.dirs:
            return self.dirs[real], None
        if real in self.errors:
            return None, self.errors[real]
        names = self._children.get(real)
        if names is None or real in self._content:
            err = ("ENOTDIR: Not a directory" if real in self._content
                   else "ENOENT: No such file or directory")
            self.errors[real] = err
            return None, err
        self.dirs[real] = list(names)
        return list(names), None


def capture(tree: Tree, root: str = "/sys") -> Dict[str, Any]:
    """The sysfs probe's evidence for ``tree``, as :func:`nvtopo.probes.sysfs.capture` gives it."""
    from ..probes import sysfs

    view = MemView(tree.entries())
    sysfs.collect(view)
    return {"root": root, "status": "ok", "error": None, "uid": 1000, "duration_s": 0.0,
            "files": view.files, "links": view.links, "dirs": view.dirs,
            "errors": view.errors}
