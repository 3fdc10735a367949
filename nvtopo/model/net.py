"""Network interfaces and the WireGuard mesh (``docs/mesh.md``).

Two sources state them, kept apart as every source is:

* sysfs (``class/net/<if>``, readable without privilege): each interface's type, MTU,
  operstate, NUMA node and, for WireGuard interfaces, the error and drop counters
  (:class:`NetLink`, under ``extra.sysfs.net``);
* the ``wireguard`` probe (``wg show IF <field>``, which needs CAP_NET_ADMIN, and the
  IPv4 routing table ``/proc/net/route``): the interface's public key, its peers with
  their endpoints, allowed IPs, latest handshakes and persistent keepalive, and which
  underlay interface its traffic uses, with how that was decided (:class:`WgNode`, under
  ``extra.wireguard``).  Nothing secret is ever read: no private or preshared key.

"Absent", "unknown" and "bad" stay apart: no WireGuard interface is an empty map; peers
that could not be read (not permitted, no ``wg``) are ``peers: null`` with the status
beside them, never an empty list.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from ..safe import is_ascii_digits
from .codec import Record, fld, record

#: ``statistics/`` counters read for a WireGuard interface (the kernel's net sysfs ABI).
NET_COUNTERS = ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "rx_bytes", "tx_bytes")
#: Those of them that count trouble.
TROUBLE_COUNTERS = ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped")
#: ``class/net/<if>/type`` of a WireGuard interface (ARPHRD_NONE).
ARPHRD_NONE = 65534
#: Bytes a WireGuard packet adds on the underlay: outer IP header + UDP 8 + WireGuard 32
#: (IPv4 20 + 40 = 60; IPv6 40 + 40 = 80), per wg-quick's MTU rule.
OVERHEAD = {"ipv4": 60, "ipv6": 80}
#: Seconds after which a session with no new handshake is dead (REJECT_AFTER_TIME 180 s).
HANDSHAKE_STALE_S = 180


@record
class NetLink(Record):
    """One network interface (``class/net/<if>``)."""

    name: str = fld("the class/net entry", default="")
    type: Optional[int] = fld("type (ARPHRD: 1 Ethernet, 32 InfiniBand, 65534 none)")
    kind: Optional[str] = fld("DEVTYPE from uevent (wireguard, vlan, bond ...); null without")
    mtu: Optional[int] = fld("mtu")
    operstate: Optional[str] = fld("operstate: up, down, unknown ...")
    numa_node: Optional[int] = fld("device/numa_node (null for virtual interfaces)")
    counters: Optional[Dict[str, Optional[int]]] = fld(
        "statistics/<counter>, read for WireGuard interfaces only", omit="none")
    tun: Optional[bool] = fld("tun_flags present: a TUN device (userspace WireGuard, such as "
                              "wireguard-go or boringtun, makes one); read for type 65534 "
                              "without DEVTYPE=wireguard only", omit="none")
    unknown: Optional[Dict[str, str]] = fld("file -> why unreadable", omit="none")

    @property
    def wireguard(self) -> bool:
        return self.kind == "wireguard"

    @property
    def maybe_wireguard(self) -> bool:
        """Could be a WireGuard tunnel that sysfs cannot name as one: type 65534 without
        ``DEVTYPE=wireguard`` (a TUN device: userspace WireGuard has no DEVTYPE), or a
        ``type`` that could not be read."""
        return not self.wireguard and (self.type is None or self.type == ARPHRD_NONE)


@record
class WgPeer(Record):
    """One peer of a WireGuard interface (``wg show IF <field>``)."""

    public_key: str = fld("peers (a public key: not secret)", default="")
    endpoint: Optional[str] = fld("endpoints (null: none known yet)")
    allowed_ips: List[str] = fld("allowed-ips", factory=list)
    latest_handshake: Optional[int] = fld("latest-handshakes, Unix seconds (0: never)")
    rx_bytes: Optional[int] = fld("transfer: received")
    tx_bytes: Optional[int] = fld("transfer: sent")
    keepalive_s: Optional[int] = fld("persistent-keepalive, seconds (null: off)")

    def age_at(self, captured_at: Optional[int]) -> Optional[int]:
        """Seconds from the latest handshake to ``captured_at`` (the capture time: never the
        clock of the reader); ``-1``: never; ``None``: unknown."""
        if self.latest_handshake is None or captured_at is None:
            return None
        if self.latest_handshake == 0:
            return -1
        return max(0, captured_at - self.latest_handshake)

    def stale_at(self, captured_at: Optional[int], slack: int = 5) -> Optional[bool]:
        """No live session at capture: never, or more than :data:`HANDSHAKE_STALE_S` (plus
        ``slack`` for clock skew) ago; ``None``: unknown."""
        age = self.age_at(captured_at)
        return None if age is None else (age < 0 or age > HANDSHAKE_STALE_S + slack)

    def endpoint_family(self) -> Optional[str]:
        """``ipv6`` for ``[addr]:port``, ``ipv4`` for ``a.b.c.d:port``, else ``None``."""
        ep = self.endpoint or ""
        if ep.startswith("["):
            return "ipv6"
        host = ep.rpartition(":")[0]
        parts = host.split(".")
        return "ipv4" if len(parts) == 4 and all(is_ascii_digits(p) for p in parts) else None


@record
class WgDevice(Record):
    """What ``wg`` and the routing table say about one WireGuard interface."""

    name: str = fld("the interface", default="")
    status: str = fld("ok, not permitted, missing (no wg), failed, timeout", default="ok")
    error: Optional[str] = fld("why the peers are unknown", omit="none")
    public_key: Optional[str] = fld("public-key (the interface's own, public)")
    listen_port: Optional[int] = fld("listen-port")
    peers: Optional[List[WgPeer]] = fld("its peers (null: not read, see status)")
    underlay: Optional[str] = fld("the interface its packets leave by (null: unknown)")
    underlay_family: Optional[str] = fld("ipv4 or ipv6: the underlay's IP version")
    underlay_by: Optional[str] = fld("how the underlay was decided")


@record
class WgNode(Record):
    """``extra.wireguard``: the mesh as ``wg`` and the routing table saw it."""

    captured_at: Optional[int] = fld("Unix time of the capture: handshakes are aged "
                                     "against it, so --from gives the same verdict later")
    interfaces: Dict[str, WgDevice] = fld("interface -> its wg facts", factory=dict)
    default_route: Optional[str] = fld("the IPv4 default route's interface (/proc/net/route)")


__all__ = ["NET_COUNTERS", "TROUBLE_COUNTERS", "ARPHRD_NONE", "OVERHEAD", "HANDSHAKE_STALE_S",
           "NetLink", "WgPeer", "WgDevice", "WgNode"]
