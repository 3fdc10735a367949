"""A WireGuard mesh on simulated nodes (``nvtopo simulate --mesh``, ``docs/mesh.md``).

A meshed node gets, in its sysfs tree, an Ethernet underlay ``eth0`` (MTU 1500, NUMA node 0)
and ``wg0`` (``type`` 65534, ``DEVTYPE=wireguard``, MTU 1420, counters 0), and the
``wireguard`` probe's evidence: ``wg show wg0 FIELD`` outputs as wireguard-tools prints them
and a routing table that sends the peers' endpoints out of ``eth0``.  Alone, a node has
:data:`LONE_PEERS` peers of its own; in a fleet every node has every other node as a peer,
keys made from the seed and the node index (public keys only: nothing secret is simulated).

Node faults (``--fault``, with ``--nodes`` as ``NODE:SPEC``): ``wg-stale-peer:PEER`` (that
peer's latest handshake 600 s before the capture, with a 25 s keepalive),
``wg-mtu:MTU`` (wg0's MTU), ``wg-errors:N`` (``rx_errors``).  Fleet faults
(:data:`FLEET_MESH_FAULTS`): ``wg-missing-peer:NODE:OTHER`` (NODE's peer list lacks OTHER),
``wg-unknown-peer:NODE`` (NODE lists a key no node has), ``wg-no-interface:NODE`` (NODE has
no WireGuard interface: it left the mesh, the others still list its key),
``wg-userspace:NODE`` (NODE's wg0 is userspace WireGuard, wireguard-go or boringtun: a TUN
device, type 65534 with ``tun_flags`` and no ``DEVTYPE=wireguard``, which the wireguard
probe does not find; the node is in the mesh).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from ..errors import NvtopoError
from ..safe import ascii_int, is_ascii_digits

#: Node faults of the mesh: kind -> (syntax, what).
MESH_FAULTS: Dict[str, Tuple[str, str]] = {
    "wg-stale-peer": ("wg-stale-peer:<peer>", "that peer's latest handshake is 600 s old "
                                              "(with a 25 s keepalive)"),
    "wg-mtu": ("wg-mtu:<mtu>", "wg0's MTU (1420 fits a 1500 underlay; 1441 and up do not)"),
    "wg-errors": ("wg-errors:<count>", "wg0's rx_errors"),
}
#: Fleet faults of the mesh: kind -> syntax and what.
FLEET_MESH_FAULTS: Dict[str, str] = {
    "wg-missing-peer": "NODE:OTHER: NODE's wg0 lacks OTHER as a peer",
    "wg-unknown-peer": "NODE: NODE's wg0 has a peer key no node has",
    "wg-no-interface": "NODE: NODE has no WireGuard interface (it left the mesh; the other "
                       "nodes still list its key)",
    "wg-userspace": "NODE: NODE's wg0 is userspace WireGuard (wireguard-go, boringtun): a TUN "
                    "device with no DEVTYPE=wireguard, not found by the wireguard probe",
}
#: Peers of a node simulated alone.
LONE_PEERS = 3
MESH_MTU = 1420
UNDERLAY_MTU = 1500
#: The capture time of a simulated snapshot (SIM_TIME, 2026-01-01T00:00:00Z).
SIM_EPOCH = 1767225600
KEEPALIVE = 25
#: Seconds since the latest handshake of a healthy peer (well inside 180).
FRESH_AGE = 40
STALE_AGE = 600


def is_mesh_fault(spec: str) -> bool:
    return spec.strip().partition(":")[0] in MESH_FAULTS


def parse(spec: str) -> Tuple[str, int]:
    """``wg-mtu:1500`` -> ``("wg-mtu", 1500)``; one line naming the syntax when malformed."""
    kind, _, rest = spec.strip().partition(":")
    if kind not in MESH_FAULTS:
        raise NvtopoError(f"unknown mesh fault {kind!r}; known: {', '.join(MESH_FAULTS)}",
                          where=f"--fault {spec}")
    value = ascii_int(rest, lo=0, hi=65535) if is_ascii_digits(rest) else None
    if value is None or (kind == "wg-mtu" and value < 576):
        raise NvtopoError(f"malformed; expected {MESH_FAULTS[kind][0]}"
                          + (" (an MTU of 576 or more)" if kind == "wg-mtu" else ""),
                          where=f"--fault {spec}")
    return kind, value


def public_key(seed: int, index: int) -> str:
    """The public key of node ``index`` (44 characters of base64, as WireGuard's)."""
    raw = hashlib.sha256(f"nvtopo-sim-wg:{seed}:{index}".encode()).digest()
    return base64.b64encode(raw).decode("ascii")


def endpoint_ip(index: int) -> str:
    return f"10.{1 + (index >> 16) % 250}.{(index >> 8) & 255}.{index & 255}"


@dataclass
class Mesh:
    """The mesh as one node sees it."""

    index: int
    seed: int = 0
    #: peer node indices (their keys are made from the seed)
    peers: List[int] = field(default_factory=list)
    extra_keys: List[str] = field(default_factory=list)
    mtu: int = MESH_MTU
    rx_errors: int = 0
    stale: Set[int] = field(default_factory=set)
    #: False: the node has no wg0 (sysfs lists eth0 only; the wireguard probe finds none)
    interface: bool = True
    #: True: wg0 is a TUN device (userspace WireGuard), not the kernel's
    userspace: bool = False

    def fault(self, spec: str) -> None:
        kind, value = parse(spec)
        if kind == "wg-mtu":
            self.mtu = value
        elif kind == "wg-errors":
            self.rx_errors = value
        else:
            if value not in self.peers:
                raise NvtopoError(f"no peer {value} (peers: "
                                  f"{', '.join(map(str, self.peers[:8])) or 'none'})",
                                  where=f"--fault {spec}")
            self.stale.add(value)


def lone(seed: int, specs: List[str]) -> Mesh:
    """The mesh of a node simulated alone: peers 1..:data:`LONE_PEERS` (node 0 is itself)."""
    m = Mesh(index=0, seed=seed, peers=list(range(1, LONE_PEERS + 1)))
    for s in specs:
        m.fault(s)
    return m


def add_to_tree(t: Any, mesh: Mesh) -> None:
    """``class/net`` entries of eth0 and wg0 in a simulated sysfs tree."""
    eth = "devices/pci0000:00/0000:00:1f.6/net/eth0"
    t.link("class/net/eth0", f"../../{eth}")
    for k, v in (("type", 1), ("mtu", UNDERLAY_MTU), ("operstate", "up"),
                 ("uevent", "INTERFACE=eth0\\nIFINDEX=2")):
        t.f(f"{eth}/{k}", v)
    t.f("devices/pci0000:00/0000:00:1f.6/numa_node", 0)
    t.link(f"{eth}/device", "../../../0000:00:1f.6")
    if not mesh.interface:
        return
    wg = "devices/virtual/net/wg0"
    t.link("class/net/wg0", f"../../{wg}")
    for k, v in (("type", 65534), ("mtu", mesh.mtu), ("operstate", "unknown"),
                 ("uevent", "INTERFACE=wg0\\nIFINDEX=5" if mesh.userspace else
                  "DEVTYPE=wireguard\\nINTERFACE=wg0\\nIFINDEX=5")):
        t.f(f"{wg}/{k}", v)
    if mesh.userspace:
        t.f(f"{wg}/tun_flags", "0x1001")  # IFF_TUN | IFF_NO_PI
    for c in ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped"):
        t.f(f"{wg}/statistics/{c}", mesh.rx_errors if c == "rx_errors" else 0)
    t.f(f"{wg}/statistics/rx_bytes", 1000 * (mesh.index + 1))
    t.f(f"{wg}/statistics/tx_bytes", 2000 * (mesh.index + 1))


ROUTE = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
         "eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
         "eth0\t0000000A\t00000000\t0001\t0\t0\t100\t000000FF\t0\t0\t0\n"
         "wg0\t0000640A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n")


def evidence(mesh: Mesh) -> Dict[str, Any]:
    """The wireguard probe's evidence for this node (as :func:`nvtopo.probes.wireguard.capture`
    records it)."""
    if not mesh.interface or mesh.userspace:  # what capture() records where class/net has
        # no kernel WireGuard entry
        return {"status": "absent", "error": None, "captured_at": SIM_EPOCH, "interfaces": {}}
    rows: List[Tuple[str, int, Optional[int]]] = [
        (public_key(mesh.seed, p), p, STALE_AGE if p in mesh.stale else FRESH_AGE)
        for p in mesh.peers]
    rows += [(k, -1, None) for k in mesh.extra_keys]
    lines: Dict[str, List[str]] = {f: [] for f in ("peers", "endpoints", "allowed-ips",
                                                   "latest-handshakes", "transfer",
                                                   "persistent-keepalive")}
    for key, p, age in rows:
        lines["peers"].append(key)
        lines["endpoints"].append(f"{key}\t{endpoint_ip(p)}:51820" if p >= 0
                                  else f"{key}\t(none)")
        lines["allowed-ips"].append(f"{key}\t10.100.{(p >> 8) & 255}.{p & 255}/32" if p >= 0
                                    else f"{key}\t(none)")
        lines["latest-handshakes"].append(f"{key}\t{SIM_EPOCH - age if age else 0}")
        lines["transfer"].append(f"{key}\t{4096 * (p + 2)}\t{8192 * (p + 2)}")
        lines["persistent-keepalive"].append(f"{key}\t{KEEPALIVE}")
    fields = {"public-key": public_key(mesh.seed, mesh.index) + "\n", "listen-port": "51820\n"}
    fields.update({k: "".join(x + "\n" for x in v) for k, v in lines.items()})
    return {"status": "ok", "error": None, "captured_at": SIM_EPOCH,
            "route": {"text": ROUTE, "error": None},
            "interfaces": {"wg0": {"status": "ok", "error": None, "fields": fields}}}


def parse_fleet_fault(kind: str, args: Tuple[str, ...], nodes: int, spec: str) -> None:
    """Check a fleet mesh fault's arguments (node indices in range)."""
    want = 2 if kind == "wg-missing-peer" else 1
    if len(args) != want:
        raise NvtopoError(f"expected {FLEET_MESH_FAULTS[kind]}", where=f"fault {spec}")
    for a in args:
        n = ascii_int(a) if is_ascii_digits(a) else None
        if n is None or not 0 <= n < nodes:
            raise NvtopoError(f"node {a!r} is out of range (0..{nodes - 1})",
                              where=f"fault {spec}")


def in_fleet(index: int, nodes: int, seed: int, fleet_faults: List[Any],
             node_specs: List[str]) -> Mesh:
    """Node ``index``'s mesh in a fleet of ``nodes``: every other node a peer, then faults."""
    m = Mesh(index=index, seed=seed, peers=[j for j in range(nodes) if j != index])
    for f in fleet_faults:
        if f.kind == "wg-missing-peer" and int(f.args[0]) == index:
            other = int(f.args[1])
            if other in m.peers:
                m.peers.remove(other)
        elif f.kind == "wg-unknown-peer" and int(f.args[0]) == index:
            m.extra_keys.append(public_key(seed, 10_000_000 + index))
        elif f.kind == "wg-no-interface" and int(f.args[0]) == index:
            m.interface = False
        elif f.kind == "wg-userspace" and int(f.args[0]) == index:
            m.userspace = True
    for s in node_specs:
        m.fault(s)
    return m


__all__ = ["MESH_FAULTS", "FLEET_MESH_FAULTS", "Mesh", "parse", "lone", "in_fleet",
           "add_to_tree", "evidence", "public_key", "is_mesh_fault", "parse_fleet_fault"]
