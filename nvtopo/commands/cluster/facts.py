"""What ``cluster`` keeps of each node: a compact, picklable :class:`NodeFacts`.

A worker reads a snapshot through the front door (:func:`nvtopo.snapshot.open_input`, so the
sealed model cache is used where it holds), selects its layout as ``check`` would, and keeps
only the facts the cross-node families compare; the model is dropped at once, so memory grows
with a few hundred bytes per node, not with the snapshots.

"Absent", "unknown" and "bad" stay apart: a fact a snapshot does not hold is ``None`` (the
families do not count it, and say so), never a value that could be outvoted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ...audit import MAX_MANIFEST_BYTES, MAX_MANIFEST_VALUES, read_manifest


class Rail(NamedTuple):
    """One compute NIC of a node, as rank ``rank`` of the rails (a tuple: no per-instance
    dictionary, for a fleet's worth of them)."""

    rank: int
    nic: str
    link_layer: Optional[str]
    rate: Optional[float]
    state: Optional[str]
    prefix: Optional[str]
    lid: Optional[int]
    sm_lid: Optional[int]
    node_guid: Optional[str]
    port_guid: Optional[str]


#: Values many nodes share (layouts, versions, states, prefixes, shapes): one object each.
_SHARED: Dict[Any, Any] = {}
#: At most this many distinct shared values (beyond it values are kept as they are).
_MAX_SHARED = 100_000


def share(value: Any) -> Any:
    """The one shared object equal to ``value`` (a hashable of few distinct values)."""
    if value is None:
        return None
    got = _SHARED.get(value)
    if got is not None:
        return got
    if len(_SHARED) < _MAX_SHARED:
        _SHARED[value] = value
    return value


@dataclass
class NodeFacts:
    """One node's facts for the cross-node checks (``error``: why the file was not read)."""

    file: str
    name: str = ""
    hostname: Optional[str] = None
    engine_name: Optional[str] = None
    error: Optional[str] = None
    layout: str = "none"
    kernel: Optional[str] = None
    nvtopo: Optional[str] = None
    driver: Optional[str] = None
    cuda: Optional[str] = None
    gpu_uuids: List[str] = field(default_factory=list)
    #: per GPU with fabric facts: (cluster_uuid, clique_id, state, status)
    fabric: List[Tuple[Optional[str], Optional[int], str, Optional[str]]] = field(
        default_factory=list)
    #: per GPU with platform info: (chassis serial, slot number, tray index, host id)
    platform: List[Tuple[Optional[str], Optional[int], Optional[int], Optional[int]]] = field(
        default_factory=list)
    #: component -> comparable value (gpus, nvlink, pcie_width, numa, nics)
    shape: Dict[str, Any] = field(default_factory=dict)
    rails: List[Rail] = field(default_factory=list)
    #: every RDMA device: (nic, role, node_guid, port_guid, prefix, lid, link_layer); role as
    #: nvtopo/checks/roles.py decides it: compute, storage, management or unknown
    hcas: List[Tuple[str, str, Optional[str], Optional[str], Optional[str], Optional[int],
                     Optional[str]]] = field(default_factory=list)
    #: (board_id, fw_ver) per NIC with both
    firmware: List[Tuple[str, str]] = field(default_factory=list)
    #: compute NIC -> node_desc
    node_desc: Dict[str, str] = field(default_factory=dict)
    #: WireGuard interfaces: (interface, own public key, MTU, peer keys or None, status)
    mesh: List[Any] = field(default_factory=list)
    #: the snapshot lists the node's network interfaces whole (sysfs class/net, not cut) and
    #: none could be a WireGuard tunnel: an empty ``mesh`` then means "no WireGuard
    #: interface", not "unknown"
    net_listed: bool = False
    #: why an empty ``mesh`` is unknown though class/net was listed (a TUN device, as
    #: userspace WireGuard makes; a listing cut short); ``None`` otherwise
    net_unsure: Optional[str] = None
    #: the node's view of its IMEX domain (:class:`.imexfacts.ImexView`; None: none read)
    imex: Optional[Any] = None

    def compact(self) -> "NodeFacts":
        """Share the values many nodes have (kept per node: only what is its own, such as its
        names, GUIDs, LIDs and GPU UUIDs)."""
        for attr in ("layout", "kernel", "nvtopo", "driver", "cuda"):
            setattr(self, attr, share(getattr(self, attr)))
        self.fabric = share(tuple(share(f) for f in dict.fromkeys(self.fabric)))
        self.platform = tuple(dict.fromkeys(self.platform))  # type: ignore[assignment]
        self.shape = share(tuple(sorted((k, share(v)) for k, v in dict(self.shape).items())))
        self.rails = [r._replace(nic=share(r.nic), link_layer=share(r.link_layer),
                                 rate=share(r.rate), state=share(r.state),
                                 prefix=share(r.prefix)) for r in self.rails]
        self.hcas = [(share(a), share(b), c, d, share(e), f, share(g))
                     for a, b, c, d, e, f, g in self.hcas]
        self.firmware = share(tuple(sorted(set(self.firmware))))
        self.gpu_uuids = tuple(self.gpu_uuids)  # type: ignore[assignment]
        if self.imex is not None:  # a rack's trays list the same members
            self.imex = self.imex._replace(state=share(self.imex.state),
                                           members=share(self.imex.members))
        return self

    @property
    def domain(self) -> Optional[str]:
        """The node's NVLink domain (ClusterUUID) when every GPU with fabric facts agrees."""
        uuids = {f[0] for f in self.fabric if f[0]}
        return next(iter(uuids)) if len(uuids) == 1 else None


    @property
    def place(self) -> Optional[Tuple[str, Optional[int], Optional[int], Optional[int]]]:
        """(chassis, slot, tray, host) where every GPU with platform info agrees, else None."""
        places = set(self.platform)
        if len(places) != 1:
            return None
        chassis, slot, tray, host = next(iter(places))
        return None if chassis is None else (chassis, slot, tray, host)


def node_facts(path: str, engine_name: Optional[str] = None) -> NodeFacts:
    """Read one snapshot and keep its :class:`NodeFacts` (errors become ``error``)."""
    from ...errors import NvtopoError
    from ...snapshot import Input, open_input

    try:
        opened = open_input(Input(path=path, command="cluster"))
    except NvtopoError as e:
        return NodeFacts(file=path, name=engine_name or os.path.basename(path),
                         engine_name=engine_name, error=str(e))
    try:
        return facts_of(opened.model, path, engine_name)
    except Exception as e:  # noqa: BLE001 - one odd model must not end a fleet's run
        from ...safe import printable

        return NodeFacts(file=path, name=engine_name or os.path.basename(path),
                         engine_name=engine_name,
                         error=f"{path}: nvtopo could not take its facts "
                               f"({type(e).__name__}: {printable(str(e))[:200]})")


def facts_of(topo: Any, path: str, engine_name: Optional[str] = None) -> NodeFacts:
    """The node's facts for the fleet checks, its model read once for all of them: the
    layout selection and the NIC roles share one view of it (``shared_views``, as
    ``check`` does), gone when this returns."""
    from ...checks import facts as F

    with F.shared_views():
        return _facts_of(topo, path, engine_name)


def _facts_of(topo: Any, path: str, engine_name: Optional[str]) -> NodeFacts:
    from ...checks import facts as F, roles
    from ...checks.select import select

    host = topo.host
    hostname = host.hostname if isinstance(host.hostname, str) else None
    nf = NodeFacts(file=path, hostname=hostname, engine_name=engine_name,
                   name=engine_name or hostname or os.path.basename(path))
    _versions(topo, nf)
    sel = select(topo)
    nf.layout = sel.name
    v = F.view(topo)
    for g in topo.gpus:
        if g.uuid:
            nf.gpu_uuids.append(g.uuid)
        fab = g.nvml.fabric if g.nvml is not None else None
        if fab is not None and fab.state != "not_supported":
            nf.fabric.append((fab.cluster_uuid, fab.clique_id, fab.state, fab.status))
        plat = g.nvml.platform if g.nvml is not None else None
        if plat is not None and plat.chassis_serial is not None:
            nf.platform.append((plat.chassis_serial, plat.slot_number, plat.tray_index,
                                plat.host_id))
    present = list(v.present)
    nic_roles = roles.resolve(topo, sel.layout, present, ())
    compute = nic_roles.compute
    nf.shape = _shape(topo, v, compute)
    _rails(topo, nf, compute, present)
    _hcas(topo, nf, compute, nic_roles)
    from .wgfacts import mesh_facts, net_unsure

    nf.mesh = mesh_facts(topo)
    nf.net_unsure = None if nf.mesh else net_unsure(topo)
    nf.net_listed = (topo.sysfs is not None and topo.sysfs.net is not None
                     and nf.net_unsure is None)
    from .imexfacts import view

    nf.imex = view(topo)
    return nf


def _versions(topo: Any, nf: NodeFacts) -> None:
    """The node's kernel, nvtopo, driver and CUDA driver versions, into ``nf``."""
    host = topo.host
    nf.kernel = host.kernel if isinstance(host.kernel, str) else None
    version = topo.origin.nvtopo_version
    nf.nvtopo = version if isinstance(version, str) else None
    nvml = topo.nvml
    if nvml is not None:
        system = nvml.system
        drv = getattr(system, "driver_version", None)
        nf.driver = drv if isinstance(drv, str) else None
        cuda = getattr(system, "cuda_driver_version", None)
        if isinstance(cuda, int) and not isinstance(cuda, bool):
            nf.cuda = f"{cuda // 1000}.{cuda % 1000 // 10}"


def _shape(topo: Any, v: Any, compute: Sequence[str]) -> Dict[str, Any]:
    """What "the same kind of node" shares: GPUs, NV# runs, PCIe widths, NUMA, compute NICs."""
    pairs = sorted(c for (_a, _b), (c, _s) in v.pairs.items())
    widths = []
    numa = []
    for g in topo.gpus:
        link = g.sysfs.link if g.sysfs is not None else None
        widths.append(link.current_width if link is not None else None)
        numa.append(g.numa_node)
    nic_rates = []
    for name in compute:
        nic = topo.nic(name)
        port = nic.sysfs.ports[0] if nic is not None and nic.sysfs is not None \
            and nic.sysfs.ports else None
        if port is not None and port.state not in (None, "ACTIVE"):
            continue  # a port that is down reports no rate of its NIC (rail_down says it)
        nic_rates.append(port.rate.gbps if port is not None else None)
    return {"gpus": len(topo.gpus),
            "nvlink": _runs(pairs),
            "pcie_width": tuple(widths),
            "numa": tuple(numa),
            "nics": f"{len(compute)} x " + "/".join(
                sorted({_num(r) for r in nic_rates})) if compute else "0"}


def _rails(topo: Any, nf: NodeFacts, compute: List[str], present: List[int]) -> None:
    """Rank i = the compute NIC of GPU i (nearest, where that is one NIC each), else the
    compute NICs in the layout's (or name) order, into ``nf.rails``."""
    ranks = _ranks(topo, compute, present)
    for rank, name in enumerate(ranks):
        nic = topo.nic(name)
        h = nic.sysfs if nic is not None else None
        port = h.ports[0] if h is not None and h.ports else None
        nf.rails.append(Rail(rank=rank, nic=name,
                             link_layer=port.link_layer if port else None,
                             rate=port.rate.gbps if port else None,
                             state=port.state if port else None,
                             prefix=port.gid_prefix if port else None,
                             lid=port.lid if port else None,
                             sm_lid=port.sm_lid if port else None,
                             node_guid=h.node_guid if h else None,
                             port_guid=port.port_guid if port else None))


def _hcas(topo: Any, nf: NodeFacts, compute: Sequence[str], nic_roles: Any) -> None:
    """Every RDMA device with its role (nvtopo/checks/roles.py), firmware and node_desc."""
    for nic in topo.nics:
        h = nic.sysfs
        if h is None:
            continue
        port = h.ports[0] if h.ports else None
        nf.hcas.append((nic.name, nic_roles.role(nic.name), h.node_guid,
                        port.port_guid if port else None, port.gid_prefix if port else None,
                        port.lid if port else None, port.link_layer if port else None))
        if h.board_id and h.fw_ver:
            nf.firmware.append((h.board_id, h.fw_ver))
        if h.node_desc and nic.name in compute:  # only compute NICs join a switch tree
            nf.node_desc[nic.name] = h.node_desc


def _num(x: Any) -> str:
    if x is None:
        return "?"
    return str(int(x)) if float(x) == int(x) else str(x)


def _runs(values: List[int]) -> str:
    """``[18, 18, 18]`` -> ``"NV18 x3"``; several counts joined with ``,``."""
    out: Dict[int, int] = {}
    for c in values:
        out[c] = out.get(c, 0) + 1
    return ",".join(f"NV{c} x{n}" for c, n in sorted(out.items())) or "none"


def _ranks(topo: Any, compute: List[str], present: List[int]) -> List[str]:
    chosen: List[str] = []
    for g in present:
        names, tok = topo.nearest_nics(g, compute)
        if tok is None or len(names) != 1 or names[0] in chosen:
            chosen = []
            break
        chosen.append(names[0])
    if chosen and len(chosen) == len(compute):
        return chosen
    return list(compute)


__all__ = ["NodeFacts", "Rail", "node_facts", "facts_of", "read_manifest"]
