"""``nvtopo simulate LAYOUT --nodes N -o DIR``: a consistent simulated fleet.

Every node is :func:`nvtopo.simulate.build` of the layout with a seed of its own, then given
what a fleet shares and what it keeps distinct:

* hostnames ``<prefix>-00000`` ... (distinct), and each node's ``node_desc`` (rdma-ndd's
  ``"<hostname> <device>"``) to match;
* node GUIDs made from the node index and the NIC's rank (distinct by construction); GPU
  UUIDs from the node's own seed;
* NVLink domains of the layout's size (the layout's ``domain.nodes``: a GB200 NVL72 rack holds 18
  trays): every GPU of domain *d* reports the same ClusterUUID and clique id;
* rails: compute NIC rank *r* of every node on subnet ``fe80:0000:<block>:<r>`` (``block``:
  one subnet per :data:`LIDS_PER_SUBNET` nodes, since unicast LIDs end at 0xBFFF) with the
  subnet manager at LID 1, node *i* at LID ``2 + i % LIDS_PER_SUBNET``;
* one driver and one kernel.

Fleet faults (``--fleet-fault``) break one of those on purpose, for tests and demos; per-node
faults are the single-node ones given with a node index (``--fault 5:pcie-width:GPU2:8``).
Files are written one at a time, atomically (:mod:`nvtopo.output`), as ``DIR/<host>.json``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ..errors import NvtopoError
from ..safe import ascii_int, is_ascii_digits

#: The most nodes one fleet may have.
MAX_NODES = 100_000
#: Nodes per IB subnet of one rail (unicast LIDs are 0x0001-0xBFFF; the SM takes LID 1).
LIDS_PER_SUBNET = 40_000
#: The simulated fleet's kernel (all nodes).
KERNEL = "6.8.0-simulated"

#: Fleet fault kinds and their arguments (node and domain indices count from 0).
FLEET_FAULTS: Dict[str, str] = {
    "outside-domain": "NODE: the node's GPUs report a ClusterUUID of their own",
    "split-domain": "DOMAIN: the second half of the domain reports another ClusterUUID",
    "clique": "NODE:ID: the node's GPUs report clique ID (another partition of the domain)",
    "driver": "NODE:VERSION: the node runs another driver (e.g. 570.86.10)",
    "rail-subnet": "NODE:RANK: the node's rank-RANK compute NIC on another subnet and SM",
    "duplicate-guid": "NODE:OTHER: the node's rank-0 NIC has OTHER's node GUID",
    "duplicate-lid": "NODE:OTHER: the node's rank-0 port has OTHER's LID",
    "duplicate-hostname": "NODE:OTHER: the node has OTHER's hostname",
    "rack-slot": "NODE:SLOT: the tray reports slot SLOT of its chassis (two trays in one slot, "
                 "its own slot empty)",
    "missing-tray": "NODE: the tray is not in the fleet (no snapshot written: its rack slot is "
                    "empty)",
}


@dataclass
class FleetFault:
    kind: str
    args: Tuple[str, ...]
    spec: str


@dataclass
class Plan:
    """What the fleet will be: checked before any file is written."""

    layout: Any
    nodes: int
    seed: int = 0
    prefix: str = "node"
    fleet_faults: List[FleetFault] = field(default_factory=list)
    node_faults: Dict[int, List[str]] = field(default_factory=dict)
    #: a WireGuard mesh joining every node (:mod:`.mesh`)
    mesh: bool = False


def _index(text: str, what: str, bound: int, spec: str) -> int:
    if not is_ascii_digits(text):
        raise NvtopoError(f"{what} {text!r} is no number", where=f"fault {spec}")
    value = ascii_int(text)  # None past the digits nvtopo reads as a number
    if value is None or not 0 <= value < bound:
        shown = value if value is not None else text[:20] + "…"
        raise NvtopoError(f"{what} {shown} is out of range (0..{bound - 1})",
                          where=f"fault {spec}")
    return value


def parse_fleet_fault(spec: str, nodes: int, domains: int, layout: Any = None) -> FleetFault:
    from .imex import FLEET_IMEX_FAULTS, domain_nodes, parse_fleet_fault as parse_imex
    from .mesh import FLEET_MESH_FAULTS, parse_fleet_fault as parse_mesh

    kind, _, rest = spec.partition(":")
    if kind in FLEET_IMEX_FAULTS:
        args = tuple(rest.split(":")) if rest else ()
        parse_imex(kind, args, nodes, domain_nodes(layout), spec)
        return FleetFault(kind, args, spec)
    if kind in FLEET_MESH_FAULTS:
        args = tuple(rest.split(":")) if rest else ()
        parse_mesh(kind, args, nodes, spec)
        return FleetFault(kind, args, spec)
    if kind not in FLEET_FAULTS:
        raise NvtopoError(f"unknown fleet fault {kind!r}; known: {', '.join(FLEET_FAULTS)}",
                          where="--fleet-fault")
    args = tuple(rest.split(":")) if rest else ()
    want = 1 if kind in ("outside-domain", "split-domain", "missing-tray") else 2
    if len(args) != want:
        raise NvtopoError(f"expected {FLEET_FAULTS[kind]}", where=f"fault {spec}")
    if kind == "split-domain":
        _index(args[0], "domain", max(domains, 1), spec)
        if domains == 0:
            raise NvtopoError("the layout has no multi-node NVLink domain",
                              where=f"fault {spec}")
    else:
        _index(args[0], "node", nodes, spec)
    if kind in ("duplicate-guid", "duplicate-lid", "duplicate-hostname"):
        _index(args[1], "node", nodes, spec)
    if kind in ("clique", "rail-subnet"):
        _index(args[1], "number", 1 << 15, spec)
    if kind == "rack-slot":
        _index(args[1], "slot", 256, spec)
    if kind in ("outside-domain", "clique", "rack-slot", "missing-tray") and domains == 0:
        raise NvtopoError("the layout has no multi-node NVLink domain", where=f"fault {spec}")
    if kind == "driver" and not all(p.isdigit() and p.isascii() for p in args[1].split(".")):
        raise NvtopoError("a driver version is numbers and dots", where=f"fault {spec}")
    return FleetFault(kind, args, spec)


def plan(layout: Any, nodes: int, *, seed: int = 0, prefix: str = "node",
         fleet_faults: Sequence[str] = (), node_faults: Sequence[str] = (),
         mesh: bool = False) -> Plan:
    """Check every option (node count, prefix, faults) and return the plan (``mesh``, or a
    ``wg-`` fault: every node joined by a WireGuard mesh)."""
    from . import faults as faults_mod
    from . import imex as imex_mod
    from . import mesh as mesh_mod

    if not 1 <= nodes <= MAX_NODES:
        raise NvtopoError(f"--nodes must be 1..{MAX_NODES}, not {nodes}", where="simulate")
    if not prefix or not all(c.isascii() and (c.isalnum() or c == "-") for c in prefix) \
            or len(prefix) > 40:
        raise NvtopoError("--hostname prefix: letters, digits and '-', at most 40",
                          where="simulate")
    domains = _domain_count(layout, nodes)
    p = Plan(layout=layout, nodes=nodes, seed=seed, prefix=prefix)
    p.fleet_faults = [parse_fleet_fault(s, nodes, domains, layout) for s in fleet_faults]
    p.mesh = mesh or any(f.kind in mesh_mod.FLEET_MESH_FAULTS for f in p.fleet_faults)
    for spec in node_faults:
        head, sep, rest = spec.partition(":")
        if not sep or not is_ascii_digits(head):
            raise NvtopoError("with --nodes a fault names its node: NODE:SPEC "
                              "(5:pcie-width:GPU2:8)", where=f"fault {spec}")
        i = _index(head, "node", nodes, spec)
        if mesh_mod.is_mesh_fault(rest):
            mesh_mod.parse(rest)
            p.mesh = True
        elif imex_mod.is_imex_fault(rest):
            imex_mod.parse(rest, layout)
        else:
            faults_mod.parse(rest)  # checked now, before any file is written
        p.node_faults.setdefault(i, []).append(rest)
    return p


def domain_size(layout: Any) -> Optional[int]:
    """Nodes per NVLink domain: the layout's ``domain.nodes`` (None: not a multi-node
    domain)."""
    nodes: Optional[int] = layout.domain.nodes
    return nodes


def _domain_count(layout: Any, nodes: int) -> int:
    size = domain_size(layout)
    return 0 if size is None else (nodes + size - 1) // size


def _uuid_hex(*parts: Any) -> str:
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).hexdigest()[:32]


def hostname(p: Plan, i: int) -> str:
    return f"{p.prefix}-{i:05d}"


def node_document(p: Plan, i: int) -> Dict[str, Any]:
    """The snapshot document of node ``i`` of the fleet."""
    from . import build, snapshot

    name = hostname(p, i)
    ff = p.fleet_faults
    for f in ff:
        if f.kind == "duplicate-hostname" and int(f.args[0]) == i:
            name = hostname(p, int(f.args[1]))
    from . import mesh as mesh_mod

    specs = p.node_faults.get(i, ())
    wg = [s for s in specs if mesh_mod.is_mesh_fault(s)]
    m = build(p.layout, [s for s in specs if s not in wg], seed=p.seed * 1_000_003 + i,
              hostname=name)
    if p.mesh:
        m.mesh = mesh_mod.in_fleet(i, p.nodes, p.seed, p.fleet_faults, wg)  # type: ignore
        m.faults.extend(wg)
    size = domain_size(p.layout)
    _imex(p, i, m, size)
    fleet: Dict[str, Any] = {}
    if size is not None:
        d = i // size
        fleet["cluster_uuid"] = _uuid_hex("fleet", p.seed, "domain", d)
        fleet["clique_id"] = 1
        for f in ff:
            if f.kind == "split-domain" and int(f.args[0]) == d and i % size >= size // 2:
                fleet["cluster_uuid"] = _uuid_hex("fleet", p.seed, "domain", d, "split")
            if f.kind == "outside-domain" and int(f.args[0]) == i:
                fleet["cluster_uuid"] = _uuid_hex("fleet", p.seed, "node", i)
            if f.kind == "clique" and int(f.args[0]) == i:
                fleet["clique_id"] = int(f.args[1])
        fleet["platform"] = rack_place(p, i, size)
    for f in ff:
        if f.kind == "driver" and int(f.args[0]) == i:
            fleet["driver"] = (f.args[1], m.family.driver[1])
    compute = [n for n in m.nics if n.role == "compute"]
    ports: Dict[str, Tuple[int, int, str]] = {}
    for rank, nic in enumerate(m.nics):
        nic.guid = _guid(i, rank)
    for rank, nic in enumerate(compute):
        block = i // LIDS_PER_SUBNET
        prefix = f"fe80:0000:{block:04x}:{rank:04x}"
        sm = 1
        for f in ff:
            if f.kind == "rail-subnet" and int(f.args[0]) == i and int(f.args[1]) == rank:
                prefix, sm = f"fe80:0000:{block:04x}:{0x100 + rank:04x}", 2
        ports[nic.name] = (2 + i % LIDS_PER_SUBNET, sm, prefix)
    for f in ff:
        if f.kind in ("duplicate-guid", "duplicate-lid") and int(f.args[0]) == i and compute:
            other = int(f.args[1])
            if f.kind == "duplicate-guid":
                compute[0].guid = _guid(other, m.nics.index(compute[0]))
            else:
                lid, sm, prefix = ports[compute[0].name]
                ports[compute[0].name] = (2 + other % LIDS_PER_SUBNET, sm, prefix)
    fleet["ports"] = ports
    m.fleet = fleet
    mine = [f.spec for f in ff if f.args and f.kind != "split-domain" and int(f.args[0]) == i]
    if size is not None:
        mine += [f.spec for f in ff if f.kind == "split-domain"
                 and int(f.args[0]) == i // size and i % size >= size // 2]
    doc = snapshot(m)
    doc["host"]["kernel"] = KERNEL
    doc["simulated"]["fleet"] = {"node": i, "nodes": p.nodes, "seed": p.seed,
                                 "faults": mine}
    return doc


def _imex(p: Plan, i: int, m: Any, size: Optional[int]) -> None:
    """Tray ``i``'s view of its rack's IMEX domain (:mod:`.imex`), where the layout has one."""
    from . import imex as imex_mod

    if getattr(m, "imex", None) is None or size is None:
        return
    missing = {int(f.args[0]) for f in p.fleet_faults if f.kind == "missing-tray"}
    m.imex = imex_mod.in_fleet(i, p.nodes, size, m.hostname, p.node_faults, p.fleet_faults,
                               missing)


def chassis_serial(seed: int, rack: int) -> str:
    """Rack ``rack``'s chassis serial number: 13 digits, as GB200 NVL72 chassis print it."""
    return f"1821{(seed * 7919 + rack) % 10 ** 9:09d}"


def rack_place(p: Plan, i: int, size: int) -> Dict[str, Any]:
    """Node ``i``'s platform info: the chassis of its domain (one rack per NVLink domain),
    slot ``i % size + 1``, tray index ``i % size``, host 1 (one host per tray)."""
    slot = i % size + 1
    for f in p.fleet_faults:
        if f.kind == "rack-slot" and int(f.args[0]) == i:
            slot = int(f.args[1])
    return {"chassisSerialNumber": chassis_serial(p.seed, i // size), "slotNumber": slot,
            "trayIndex": i % size, "hostId": 1, "peerType": 0}


def _guid(i: int, rank: int) -> str:
    return f"a088:c2{rank:02x}:{(i >> 16) & 0xffff:04x}:{i & 0xffff:04x}"


def write(p: Plan, directory: str) -> Iterator[str]:
    """Write every node's snapshot into ``directory`` (made if missing); yield each path."""
    from .. import output
    from ..snapshot import dumps, read

    if os.path.exists(directory) and not os.path.isdir(directory):
        raise NvtopoError("not a directory", where=directory)
    os.makedirs(directory, exist_ok=True)
    missing = {int(f.args[0]) for f in p.fleet_faults if f.kind == "missing-tray"}
    for i in range(p.nodes):
        if i in missing:
            continue
        path = os.path.join(directory, f"{hostname(p, i)}.json")
        text = dumps(node_document(p, i))
        try:  # what --from would refuse is not written (the reader's bounds)
            read.within_bounds(text.encode("utf-8", errors="surrogatepass"), path)
        except NvtopoError as exc:
            raise NvtopoError(f"not kept as a snapshot: nvtopo would not read the file back "
                              f"({exc.message})", where=path) from None
        output.write(text, path)
        yield path


__all__ = ["MAX_NODES", "FLEET_FAULTS", "Plan", "plan", "node_document",
           "write", "hostname", "domain_size"]
