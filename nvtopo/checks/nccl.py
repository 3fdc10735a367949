"""NCCL: why a run chose the path it chose, from its debug log (``extra.nccl-log``) and its
nccl-tests tables (``extra.nccl-tests``: :mod:`.nccl_perf`), traced to
the node's wiring where the node's evidence is given too (``docs/nccl.md``).

A log alone says what NCCL did and, in its own words, some of why; a snapshot of the node
beside it (``nvtopo explain --from LOG --from SNAPSHOT``) says whether a better path existed:
an NVLink between two GPUs NCCL joined through host memory, a PCIe switch shared by a GPU and
the HCA NCCL would not use GPU Direct RDMA with, the role of each HCA NCCL used.  What only the
node could tell is never an error on the log alone.  Findings name the host of the log's
prefix (``host`` subjects); the node's evidence speaks only for the host it is (its hostname,
or the log's one host).
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from . import Finding, finding
from . import roles as R
from . import subject as S
from .select import Selection
from ..model import Topology
from ..model.nccl import NcclConnection, NcclEvent, NcclGdr, NcclLog
from ..model.vocab import pci_bdf

SOURCE = "nccl-log"
#: NCCL's path types, by the number its ``distance N`` prints, per release (topo.h's
#: ``topoPathTypeStr``): before 2.19; 2.19 and later (C2C added); newest (P2C added).
PATH_TYPES = (("LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS", "NET"),
              ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "PHB", "SYS", "NET", "DIS"),
              ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET",
               "DIS"))
#: Interface names of virtual devices (bridges, container and tunnel interfaces).
VIRTUAL_IFS = ("virbr", "docker", "veth", "br-", "lo", "cni", "flannel", "cali", "tun", "tap",
               "vxlan", "kube")
#: Async events that are about the port (the rest are about a queue pair or the device).
PORT_EVENTS = ("port error", "port active", "lid change", "gid table change", "sm change",
               "client reregister", "pkey change")


def check(topo: Topology, sel: Selection) -> List[Finding]:
    out = _log(topo, sel) if topo.nccl_log is not None else []
    if topo.nccl_tests is not None:
        from . import nccl_perf

        out += nccl_perf.check(topo.nccl_tests.tests, sel, out)
    if topo.nccl_topo is not None:
        from . import nccl_topo

        out += nccl_topo.check(topo, sel)
    return out


def _log(topo: Topology, sel: Selection) -> List[Finding]:
    log = topo.nccl_log
    assert log is not None
    node = Node(topo, log, sel)
    out: List[Finding] = []
    out += _socket(log, node)
    out += _socket_ifname(log)
    out += _gdr(log, node)
    out += _p2p(log, node)
    out += _nvls(log, node)
    out += _hca(log, node)
    out += _events(log)
    return out


# --- the node's evidence ---------------------------------------------------------------------


class Node:
    """The node's evidence beside the log: which host of the log it is, its GPUs by NCCL's
    busId, its NICs' roles."""

    def __init__(self, topo: Topology, log: NcclLog, sel: Selection) -> None:
        self.topo = topo
        self.given = bool(topo.gpus or topo.nics)
        name = (topo.host.hostname or "").split(".")[0]
        hosts = log.hosts
        if not self.given:
            self.host: Optional[str] = None
        elif len(hosts) <= 1:
            self.host = hosts[0] if hosts else ""
        else:
            self.host = next((h for h in hosts if h.split(".")[0] == name and name), None)
        self.sel = sel
        self._roles: Optional[R.Roles] = None

    def speaks_for(self, host: Optional[str]) -> bool:
        """Whether the node's evidence is about ``host`` (a log line's host)."""
        return self.given and self.host is not None and (host is None or self.host == ""
                                                         or host == self.host)

    def gpu_of(self, bus: Optional[str]) -> Optional[int]:
        """The node's GPU at NCCL's busId (``18000``: domain, bus, device, function as one
        hex number), or None."""
        want = _bus_int(bus)
        if want is None:
            return None
        for g in self.topo.gpus:
            bdf = pci_bdf(g.pci_bus_id)
            if bdf is not None and (bdf[0] << 20 | bdf[1] << 12 | bdf[2] << 4 | bdf[3]) == want:
                return g.index
        return None

    def gpu_of_rank(self, log: NcclLog, rank: int) -> Optional[int]:
        """The node's GPU a rank ran on: by its busId; where the node's GPUs have no bus id
        (a pasted topo -m), by its cudaDev (CUDA numbers identical GPUs in PCI order, as
        nvidia-smi does)."""
        r = next((x for x in log.ranks if x.rank == rank), None)
        if r is None:
            return None
        found = self.gpu_of(r.bus_id)
        if found is None and r.cuda_dev is not None and self.topo.gpus \
                and all(g.pci_bus_id is None for g in self.topo.gpus) \
                and self.topo.gpu(r.cuda_dev) is not None:
            return r.cuda_dev
        return found

    def roles(self) -> R.Roles:
        if self._roles is None:
            self._roles = R.resolve(self.topo, self.sel.layout)
        return self._roles

    def rdma_nics(self) -> List[str]:
        return [n.name for n in self.topo.nics if n.sysfs is not None and n.sysfs.ports]


def _bus_int(bus: Optional[str]) -> Optional[int]:
    if not bus or len(bus) > 16 or any(c not in "0123456789abcdefABCDEF" for c in bus):
        return None
    return int(bus, 16)


def _hosts(items: Iterable[Optional[str]]) -> List[Optional[str]]:
    out: List[Optional[str]] = []
    for h in items:
        if h not in out:
            out.append(h)
    return out


def _subject(host: Optional[str]) -> S.Subject:
    return S.host(host) if host else S.NODE


def _version(log: NcclLog) -> Optional[Tuple[int, int]]:
    v = (log.version or "").split("+")[0].split(".")
    if len(v) < 2 or not v[0].isdigit() or not v[1].isdigit():
        return None
    return int(v[0]), int(v[1])


def path_names(log: NcclLog, distance: Optional[int]) -> List[str]:
    """What NCCL's ``distance N`` may mean for this log's NCCL (one name where the version
    decides it, every reading where it does not)."""
    if distance is None:
        return []
    ver = _version(log)
    tables = PATH_TYPES if ver is None else (PATH_TYPES[:1] if ver < (2, 19) else PATH_TYPES[1:])
    names = _hosts(t[distance] if distance < len(t) else None for t in tables)
    return [n for n in names if n is not None]


# --- sockets ---------------------------------------------------------------------------------


def _socket(log: NcclLog, node: Node) -> List[Finding]:
    conns = [c for c in log.connections if c.transport == "NET" and c.net == "Socket"]
    chosen = "Socket" in log.networks and "IB" not in log.networks
    if not conns and not (chosen and (len(log.hosts) > 1
                                      or any(e.kind == "ib_missing" for e in log.events))):
        return []
    socket_hosts = _hosts(c.host for c in conns) or \
        _hosts(e.host for e in log.events if e.kind == "ib_missing") or [None]
    ib_hosts = _hosts(c.host for c in log.connections if c.net == "IB")
    ipoib = sorted({d.name for d in log.net_devices if d.net != "IB" and d.name.startswith("ib")})
    why: List[str] = []
    if ib_hosts and ib_hosts != [None]:
        why.append(f"other hosts ({', '.join(h for h in ib_hosts if h)}) used NET/IB")
    if ipoib:
        why.append(f"{', '.join(ipoib)} is an IPoIB interface, so InfiniBand hardware is there")
    if node.given and node.rdma_nics():
        why.append(f"the node has RDMA devices ({', '.join(node.rdma_nics()[:8])})")
    cause = _socket_cause(log)
    sure = bool(why)
    sev = "error" if sure else "warning"
    out = []
    for h in socket_hosts:
        n = sum(1 for c in conns if c.host == h)
        msg = ((f"NCCL sent inter-node traffic over sockets (NET/Socket, {n} connection(s))"
                if n else "NCCL's network is sockets (Using network Socket)")
               + (f" on {h}" if h else "") + ": " + cause
               + ("; RDMA exists: " + "; ".join(why) if sure else
                  "; if this node has InfiniBand or RoCE NICs, NCCL did not find them"))
        out.append(finding(sev, "nccl.net_socket_fallback", _subject(h), msg,
                           expected="NET/IB (with GDRDMA)", actual="NET/Socket",
                           hint="NCCL needs /dev/infiniband and libibverbs (rdma-core) in the "
                                "container or job, and NCCL_IB_DISABLE unset; check "
                                "`ibv_devinfo` where the job runs; name the HCAs with "
                                "NCCL_IB_HCA",
                           source=SOURCE))
    return out


def _socket_cause(log: NcclLog) -> str:
    if log.env.get("NCCL_IB_DISABLE", "").strip() in ("1", "true"):
        return "NCCL_IB_DISABLE=1 turned InfiniBand off"
    missing = [e for e in log.events if e.kind == "ib_missing"]
    if missing:
        return f"NCCL found no usable IB device ({missing[0].text})"
    if log.net_devices and not any(d.net == "IB" for d in log.net_devices):
        return "the log lists no NET/IB device"
    return "NCCL chose sockets"


def _socket_ifname(log: NcclLog) -> List[Finding]:
    out = []
    seen = set()
    for d in log.net_devices:
        if d.net == "IB" or d.name in seen or not d.name.startswith(VIRTUAL_IFS):
            continue
        seen.add(d.name)
        out.append(finding("warning", "nccl.socket_ifname", S.nic(d.name),
                           f"NCCL's {d.net} interfaces include {d.name}, a virtual interface "
                           "(a bridge, container or tunnel device): connections to it fail or "
                           "go nowhere", expected="the node's data or management interface",
                           actual=d.name, hint="set NCCL_SOCKET_IFNAME to the real interface "
                           "(NCCL_SOCKET_IFNAME=eth0, or =^virbr,docker,lo to exclude)",
                           source=SOURCE))
    return out


# --- GPU Direct RDMA -------------------------------------------------------------------------


def _gdr(log: NcclLog, node: Node) -> List[Finding]:
    off = [g for g in log.gdr if not g.enabled]
    if not off:
        plain = [c for c in log.connections if c.net == "IB" and c.gdr is False]
        if plain and not any(g.enabled for g in log.gdr):
            h = plain[0].host
            return [finding("warning", "nccl.gdr_disabled", _subject(h),
                            f"NCCL's InfiniBand connections carry no GDRDMA ({plain[0].via}): "
                            "data is staged through host memory; the log does not say why "
                            "(its GPU Direct RDMA lines are not in the paste)",
                            expected="NET/IB/<n>/GDRDMA", actual=plain[0].via,
                            hint="run with NCCL_DEBUG_SUBSYS=INIT,NET to see NCCL's reason",
                            source=SOURCE)]
        return []
    out = []
    for h in _hosts(g.host for g in off):
        mine = [g for g in off if g.host == h]
        out.append(_gdr_finding(log, node, h, mine))
    return out


def _gdr_finding(log: NcclLog, node: Node, host: Optional[str], off: List[NcclGdr]
                 ) -> Finding:
    hcas = sorted({_hca_name(log, g, host) for g in off})
    far = [g for g in off if g.distance is not None]
    sev, expected = "error", "GPU Direct RDMA enabled"
    if far:
        g = far[0]
        named = _path_line(log, g, host)
        names = [named] if named else path_names(log, g.distance)
        reading = " or ".join(names) if names else "a path type this nvtopo does not know"
        unsure = "" if len(names) == 1 else " (the NCCL version does not decide the numbering)"
        msg = (f"GPU Direct RDMA disabled for {', '.join(hcas)}: NCCL computed distance "
               f"{g.distance} > {g.limit} ({reading}{unsure}): the GPU and the HCA are not "
               "under one PCIe switch, so NCCL stages data through host memory")
        sev = "warning"
        where = _gdr_path(log, node, g, host)
        if where:
            msg += "; " + where[0]
            sev = "error" if where[1] else "warning"
        actual = f"distance {g.distance} > {g.limit}"
        hint = ("place the job's GPUs next to their HCAs (or the HCAs next to the GPUs); "
                "NCCL_NET_GDR_LEVEL=SYS forces GDR at that distance (it may be slower); in a "
                "VM whose PCIe tree is flattened give NCCL its real tree (nvtopo snapshot "
                "--format nccl-topo, then NCCL_TOPO_FILE)")
    else:
        reason = next((g.reason for g in off if g.reason), None)
        msg = (f"GPU Direct RDMA disabled for {', '.join(hcas)} "
               + (f"({reason}) " if reason else "with no distance given ")
               + "(peer memory support missing: nvidia_peermem not loaded or not registered, "
               "and no dma-buf)")
        msg += _peermem(node, host)
        actual = reason or "disabled"
        hint = ("load nvidia_peermem (modprobe nvidia_peermem; it must be built against the "
                "installed OFED: reinstall the driver after MLNX_OFED), or use dma-buf "
                "(Linux 5.12+, open GPU kernel modules, NCCL 2.19+)")
    return finding(sev, "nccl.gdr_disabled", _subject(host), msg, expected=expected,
                   actual=actual, hint=hint, source=SOURCE)


def _path_line(log: NcclLog, g: NcclGdr, host: Optional[str]) -> Optional[str]:
    """The path type NCCL's own per-GPU path line names between that GPU and HCA
    (``GPU/8F000 :... NET/4 (4/24.000000/PXB)``): better than reading the number."""
    gpu = (g.gpu or "").lower()
    if not gpu and len({r.bus_id for r in log.ranks if r.host == host}) == 1:
        gpu = next(r.bus_id or "" for r in log.ranks if r.host == host)
    for p in log.paths:
        if p.host == host and p.src.lower() == f"gpu/{gpu}" and p.dst == f"NET/{g.hca}":
            return p.type
    return None


def _hca_name(log: NcclLog, g: NcclGdr, host: Optional[str]) -> str:
    if g.hca_name:
        return g.hca_name
    for d in log.net_devices:
        if d.net == "IB" and d.index == g.hca and d.host == host:
            return d.name
    return f"HCA {g.hca}"


def _gdr_path(log: NcclLog, node: Node, g: NcclGdr, host: Optional[str]
              ) -> Optional[Tuple[str, bool]]:
    """What the node's PCI tree says of the GPU–HCA path NCCL judged, and whether it is
    better than NCCL's reading (PIX/PXB where NCCL saw farther: NCCL's view is wrong)."""
    if not node.speaks_for(host):
        return None
    gpu = node.gpu_of(g.gpu)
    if gpu is None:
        rank = next((r for r in log.ranks if r.host == host), None)
        gpu = node.gpu_of(rank.bus_id) if rank is not None else None
    name = _hca_name(log, g, host)
    if gpu is None or node.topo.nic(name) is None:
        return None
    tok, src = node.topo.gpu_nic_path(gpu, name)
    if tok is None:
        return None
    near = tok in ("PIX", "PXB")
    text = f"the node's {src or 'evidence'} puts GPU{gpu} and {name} at {tok}"
    if near:
        text += (" (one PCIe switch: GDR should work, so NCCL sees a worse tree than the node "
                 "has: a VM or container hides the switches)")
    else:
        text += " (" + {"PHB": "through the CPU's host bridge", "NODE": "across PCIe host "
                        "bridges of one NUMA node", "SYS": "across the CPUs' "
                        "interconnect"}.get(tok, "not under one switch") + ")"
    return text, near


def _peermem(node: Node, host: Optional[str]) -> str:
    sysfs = node.topo.sysfs
    if not node.speaks_for(host) or sysfs is None:
        return ""
    gd = sysfs.gpudirect
    if gd.peermem_loaded:
        return ("; the node has the peer-memory module loaded, so it is not registered with "
                "the RDMA stack (/sys/kernel/mm/memory_peers/nv_mem/version missing)")
    return "; the node's sysfs shows neither nvidia_peermem nor nv_peer_mem loaded"


# --- P2P between GPUs ------------------------------------------------------------------------


def _p2p_variable(log: NcclLog) -> Optional[str]:
    if log.env.get("NCCL_P2P_DISABLE", "").strip() in ("1", "true"):
        return "NCCL_P2P_DISABLE=1"
    level = log.env.get("NCCL_P2P_LEVEL", "").strip()
    if level.upper() in ("LOC", "0"):
        return f"NCCL_P2P_LEVEL={level}"
    return None


def _p2p(log: NcclLog, node: Node) -> List[Finding]:
    shm = [c for c in log.connections if c.transport == "SHM"]
    said = [e for e in log.events if e.kind == "p2p_disabled"]
    variable = _p2p_variable(log)
    if not shm and not said and variable is None:
        return []
    out = []
    for h in _hosts([c.host for c in shm] + [e.host for e in said]) or [None]:
        mine = [c for c in shm if c.host == h]
        out.append(_p2p_finding(log, node, h, mine, [e for e in said if e.host == h],
                                variable))
    return out


def _p2p_finding(log: NcclLog, node: Node, host: Optional[str], shm: List[NcclConnection],
                 said: List[NcclEvent], variable: Optional[str]) -> Finding:
    pairs = sorted({(min(c.src, c.dst), max(c.src, c.dst)) for c in shm
                    if c.src is not None and c.dst is not None})
    what = (f"NCCL joined {len(pairs)} GPU pair(s) through host memory (SHM) instead of "
            f"P2P" if pairs else "NCCL turned P2P off between GPUs")
    if host:
        what += f" on {host}"
    sev, why = "warning", ""
    if said:
        sev, why = "error", (f"NCCL says: {said[0].text[:160]}: peer-to-peer is blocked on "
                             "the PCIe path (ACS redirecting P2P to the root port, or an "
                             "IOMMU translating)")
    elif variable:
        why = f"{variable} turned it off"
    link = _p2p_node(log, node, host, pairs)
    if link:
        why = (why + "; " if why else "") + link[0]
        sev = "error" if link[1] else sev
    subject = _subject(host)
    if link and link[2] is not None:
        subject = S.pair(*link[2])
    return finding(sev, "nccl.p2p_disabled", subject,
                   what + (": " + why if why else ": the log does not say why (no variable "
                           "set; give the node's snapshot to see the path)"),
                   expected="P2P (NVLink or PCIe peer-to-peer)", actual="SHM",
                   hint="unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL where set; with ACS on the "
                        "PCIe switches or root ports disable it (BIOS, or setpci on the "
                        "bridges) or boot with iommu=pt; a bare-metal node whose GPUs "
                        "have NVLink should never need SHM", source=SOURCE)


def _p2p_node(log: NcclLog, node: Node, host: Optional[str],
              pairs: Sequence[Tuple[int, int]]
              ) -> Optional[Tuple[str, bool, Optional[Tuple[int, int]]]]:
    """What the node says of the first SHM pair: NVLink between them (then P2P was
    possible: an error), the PCIe path, the IOMMU."""
    if not node.speaks_for(host):
        return None
    notes: List[str] = []
    possible, first = False, None
    for a, b in pairs[:8]:
        ga, gb = node.gpu_of_rank(log, a), node.gpu_of_rank(log, b)
        if ga is None or gb is None:
            continue
        first = first or (ga, gb)
        count = node.topo.nvlink(ga, gb)
        if count:
            possible = True
            notes.append(f"GPU{ga} and GPU{gb} have {count} NVLink(s)")
            break
        tok = node.topo.path(f"GPU{ga}", f"GPU{gb}")
        p2p = node.topo.p2p.get(f"GPU{ga}", f"GPU{gb}") if node.topo.p2p is not None else None
        if tok or p2p:
            notes.append(f"GPU{ga} and GPU{gb} are at {tok or '?'} on PCIe"
                         + (f"; nvidia-smi topo -p2p says {p2p}" + (
                             " (the driver reports P2P between them)" if p2p == "OK" else
                             " (the driver does not support P2P between them: the chipset, "
                             "the topology or a GPU that lacks it)") if p2p else ""))
            break
    storage = node.topo.sysfs.storage if node.topo.sysfs is not None else None
    if storage is not None and storage.iommu == "translated":
        notes.append(f"the IOMMU translates DMA ({storage.iommu_how})")
    if not notes:
        return None
    return "the node: " + "; ".join(notes), possible, first


# --- NVLS ------------------------------------------------------------------------------------


def _nvls(log: NcclLog, node: Node) -> List[Finding]:
    events = [e for e in log.events if e.kind == "nvls_unavailable"]
    if log.nvls is not False and not events:
        return []
    failed = [e for e in events if e.text.startswith("[") or "failed" in e.text.lower()]
    nvswitch = node.topo.nvswitch if node.speaks_for(events[0].host if events else None) \
        else None
    host = events[0].host if events else None
    if failed:
        sev = "warning"
        msg = (f"NCCL could not set up NVLS (NVLink SHARP): {failed[0].text[:200]}")
    elif nvswitch:
        sev = "warning"
        msg = ("NVLS multicast is not available though the node's GPUs are NVSwitch-"
               "connected: NCCL runs without NVLink SHARP (all-reduce bus bandwidth is lower)"
               + _fabric(node.topo))
    else:
        sev = "info"
        msg = ("NVLS multicast is not available: NCCL runs without NVLink SHARP; that is only "
               "a fault on an NVSwitch system (give the node's snapshot to tell)")
    return [finding(sev, "nccl.nvls_unavailable", _subject(host), msg,
                    expected="NVLS multicast (NVSwitch systems, NCCL 2.17+)",
                    actual="not available",
                    hint="NVLS needs the fabric manager running (nvidia-fabricmanager), CUDA "
                         "12.1+ and driver 530+, /dev/nvidia-caps (and, with IMEX, an IMEX "
                         "channel) visible in the container; a multicast 'out of memory' "
                         "means the switch's multicast objects are used up: fewer "
                         "communicators, or NCCL_NVLS_ENABLE=0", source=SOURCE)]


def _fabric(topo: Topology) -> str:
    """The node's fabric state where a GPU's is not ``completed`` (NVLS needs the fabric
    manager to have registered the GPUs)."""
    states: Dict[str, List[int]] = {}
    for g in topo.gpus:
        fab = g.nvml.fabric if g.nvml is not None else None
        if fab is not None and fab.state not in ("completed", "not_supported", "unknown"):
            states.setdefault(fab.state, []).append(g.index)
    if not states:
        return ""
    return "; the node's fabric state: " + ", ".join(
        f"{state} (GPU{', GPU'.join(map(str, gpus[:8]))})" for state, gpus in states.items()) \
        + ": the fabric manager has not registered the GPUs"


# --- which HCAs ------------------------------------------------------------------------------


def _hca(log: NcclLog, node: Node) -> List[Finding]:
    out: List[Finding] = []
    ib = [d for d in log.net_devices if d.net == "IB"]
    for h in _hosts(d.host for d in ib):
        mine = [d for d in ib if d.host == h]
        layers = {d.link_layer for d in mine if d.link_layer}
        if len(layers) > 1:
            counts = {ll: sum(1 for d in mine if d.link_layer == ll) for ll in layers}
            odd = min(sorted(layers), key=lambda ll: counts[ll])
            names = [d.name for d in mine if d.link_layer == odd]
            out.append(finding(
                "error", "nccl.hca_wrong", S.nic(names[0]),
                f"NCCL uses {', '.join(names)} ({odd}) beside "
                f"{len(mine) - len(names)} port(s) of the other link layer"
                + (f" on {h}" if h else "") + ": a RoCE port mixed into an InfiniBand set "
                "(or the reverse) cannot reach the other ranks' rail",
                expected="one link layer", actual=", ".join(f"{d.name}/{d.link_layer}"
                                                            for d in mine),
                hint="name the compute HCAs with NCCL_IB_HCA (=mlx5_0,mlx5_3,...), leaving "
                     "out the storage/Ethernet ports", source=SOURCE))
        if node.speaks_for(h):
            out += _hca_roles(log, node, h, [d.name for d in mine])
    return out


def _hca_roles(log: NcclLog, node: Node, host: Optional[str], used: List[str]
               ) -> List[Finding]:
    roles = node.roles()
    out = []
    for name in used:
        role = roles.get(name)
        if role is None or role.role not in (R.STORAGE, R.MANAGEMENT):
            continue
        out.append(finding("error", "nccl.hca_wrong", S.nic(name),
                           f"NCCL uses {name} for compute traffic; the node's evidence makes "
                           f"it a {role.role} NIC ({role.why()})",
                           expected="compute NICs", actual=f"{name} ({role.role})",
                           hint="name the compute HCAs with NCCL_IB_HCA", source=SOURCE))
    left = [n for n in roles.compute if n not in used]
    if used and left:
        env = log.env.get("NCCL_IB_HCA")
        out.append(finding("warning", "nccl.hca_wrong", _subject(host),
                           f"NCCL does not use the compute NIC(s) {', '.join(left)}"
                           + (f" (NCCL_IB_HCA={env} leaves them out)" if env else
                              " (not found by NCCL: down, or not visible to the job)"),
                           expected=", ".join(roles.compute), actual=", ".join(used),
                           hint="include every compute HCA in NCCL_IB_HCA; check the ports "
                                "are up (nvtopo ib)", source=SOURCE))
    return out


# --- warnings and errors ---------------------------------------------------------------------


def _port_subject(device: Optional[str], host: Optional[str] = None) -> S.Subject:
    if not device:
        return _subject(host)
    name, _, port = device.partition(":")
    return S.port(name, int(port)) if port.isdigit() else S.nic(name)


def _events(log: NcclLog) -> List[Finding]:
    """One finding per port (or device, or host) and kind: a port that flaps a hundred times
    is one fault, its count and first words said once."""
    groups: Dict[Tuple[str, Optional[str], Optional[str]], List[NcclEvent]] = {}
    for e in log.events:
        low = e.text.lower()
        if e.kind == "async_event" and any(w in low for w in PORT_EVENTS):
            code = "nccl.port_error"
        elif e.kind in ("async_event", "completion_error", "ibv_error", "error"):
            code = "nccl.net_error"
        else:
            continue
        groups.setdefault((code, e.device, e.host), []).append(e)
    out = []
    for (code, device, host), evs in groups.items():
        times = sum(e.count for e in evs)
        first = evs[0].text
        where = f" on {host}" if host else ""
        also = f" (and {len(evs) - 1} other line(s))" if len(evs) > 1 else ""
        count = f" ({times} times)" if times > 1 else ""
        if code == "nccl.port_error":
            out.append(finding("error", "nccl.port_error", _port_subject(device),
                               f"NCCL saw an InfiniBand port event{where}{count}: {first}{also}",
                               expected="the port stays active", actual=first[:120],
                               hint="a port that goes down and up mid-run is a cable, "
                                    "transceiver or switch port fault: read its error "
                                    "counters (nvtopo check on the node) and the switch log",
                               source=SOURCE))
        else:
            out.append(finding("error", "nccl.net_error", _port_subject(device, host),
                               f"NCCL's network failed{where}{count}: {first}{also}",
                               expected="no error", actual=first[:120],
                               hint=_net_hint(first.lower(), log), source=SOURCE))
    return out


def _net_hint(low: str, log: NcclLog) -> str:
    if "ibv_modify_qp" in low and "unreachable" in low:
        gid = log.env.get("NCCL_IB_GID_INDEX")
        return ("RoCE: the GID index NCCL used has no route to the peer"
                + (f" (NCCL_IB_GID_INDEX={gid})" if gid is not None else "")
                + "; use the RoCE v2 IPv4 GID (show_gids) and check the peer is reachable")
    if "status=12" in low or "error 12" in low:
        return ("transport retry exceeded: packets lost between the ranks; check the ports' "
                "error counters, cables and the switch")
    return ("check the HCAs' state and counters on each host (nvtopo check, nvtopo ib) and "
            "that every host reaches the others over the fabric")
