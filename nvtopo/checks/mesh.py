"""Mesh: the WireGuard interfaces joining this node to the others (``docs/mesh.md``).

No WireGuard interface: nothing to say.  Peers that could not be read (``wg`` needs
CAP_NET_ADMIN; no ``wg``; an older snapshot) are *not checked*: an info finding, never a
pass on peers.  Handshakes are aged against the capture time the snapshot records, so
``--from`` gives the same verdict later.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from . import Finding, finding
from . import subject as S
from .select import Selection
from ..model import Topology
from ..model.net import HANDSHAKE_STALE_S, OVERHEAD, TROUBLE_COUNTERS, NetLink, WgDevice

#: How long ago a handshake may be before "now" at capture (clock skew), in seconds.
CLOCK_SLACK_S = 5


def _wg_names(topo: Topology) -> List[str]:
    links = (topo.sysfs.net if topo.sysfs is not None else None) or {}
    names = {n for n, link in links.items() if link.wireguard}
    if topo.wireguard is not None:
        names.update(topo.wireguard.interfaces)
    return sorted(names)


def _rdma_up(topo: Topology) -> Optional[bool]:
    """Whether a hardware RDMA port is ACTIVE; ``None`` where sysfs was not read."""
    if topo.sysfs is None:
        return None
    return any(n.sysfs is not None and not n.sysfs.soft and
               any(p.state == "ACTIVE" for p in n.sysfs.ports) for n in topo.nics)


def _short(key: str) -> str:
    return key[:8] + "…"


def _peers(name: str, dev: Optional[WgDevice], captured: Optional[int]) -> List[Finding]:
    out: List[Finding] = []
    if dev is None:
        return [finding("info", "mesh.peers_not_checked", S.nic(name),
                        f"{name}: peers not checked: the wireguard probe did not run (an "
                        "older snapshot, or a sysfs tree of another machine)",
                        source="sysfs")]
    if dev.status != "ok" or dev.peers is None:
        why = ("wg needs CAP_NET_ADMIN to read peers" if dev.status == "not permitted"
               else dev.error or dev.status)
        return [finding("info", "mesh.peers_not_checked", S.nic(name),
                        f"{name}: peers not checked ({dev.status}): {why}",
                        actual=dev.status, source="wireguard",
                        hint="run nvtopo as root or with CAP_NET_ADMIN (capsh, systemd "
                             "AmbientCapabilities) to check handshakes")]
    if not dev.peers:
        return [finding("warning", "mesh.no_peers", S.nic(name),
                        f"{name} has no peers: the tunnel joins this node to nothing",
                        expected="peers", actual=0, source="wireguard")]
    if captured is None:
        return [finding("info", "mesh.peers_not_checked", S.nic(name),
                        f"{name}: handshakes not checked: the capture time is not recorded",
                        source="wireguard")]
    # (a stale peer's age is known: stale_at is None where it is not)
    stale: List[Tuple[Any, int]] = [
        (p, p.age_at(captured)) for p in dev.peers  # type: ignore[misc]
        if p.stale_at(captured, CLOCK_SLACK_S)]
    if not stale:
        return out
    def sev(peers: List[Any]) -> str:
        # with persistent-keepalive the session is kept up: no handshake means the peer is
        # unreachable; without it an idle peer has no session by design
        return "error" if all(p.keepalive_s for p, _ in peers) else "warning"
    def said(age: int) -> str:
        return "never" if age < 0 else f"{age} s ago"
    if len(stale) == len(dev.peers) and len(stale) >= 2:
        out.append(finding(
            sev(stale), "mesh.peers_stale", S.nic(name),
            f"{name}: no live session with any of its {len(stale)} peers (latest handshakes: "
            + ", ".join(f"{_short(p.public_key)} {said(a)}" for p, a in stale[:6])
            + (" …" if len(stale) > 6 else "") + f"): the fault is on this node's side "
            "(its underlay, firewall, or the interface's key)",
            expected=f"a handshake within {HANDSHAKE_STALE_S} s", actual="none",
            source="wireguard",
            hint="check the underlay route and that UDP to the listen port is allowed"))
        return out
    for p, age in stale:
        out.append(finding(
            sev([(p, age)]), "mesh.peer_stale", S.other(f"{name} peer {_short(p.public_key)}"),
            f"{name} peer {p.public_key} ({p.endpoint or 'no endpoint'}): latest handshake "
            f"{said(age)}" + ("" if p.keepalive_s else
                              " (no persistent-keepalive: an idle peer has no session)"),
            expected=f"a handshake within {HANDSHAKE_STALE_S} s", actual=said(age),
            source="wireguard",
            hint="check that peer's node is up and its endpoint reachable over UDP"))
    return out


def _mtu(name: str, link: Optional[NetLink], dev: Optional[WgDevice],
         links: Dict[str, NetLink]) -> List[Finding]:
    if link is None or link.mtu is None or dev is None or dev.underlay is None:
        return [finding("info", "mesh.mtu_not_checked", S.nic(name),
                        f"{name}: tunnel MTU not checked: "
                        + ("its MTU is unknown" if link is None or link.mtu is None
                           else "the underlay interface is unknown"
                           + (f" ({dev.underlay_by})" if dev and dev.underlay_by else "")),
                        source="sysfs")]
    under = links.get(dev.underlay)
    if under is None or under.mtu is None:
        return [finding("info", "mesh.mtu_not_checked", S.nic(name),
                        f"{name}: tunnel MTU not checked: the MTU of its underlay "
                        f"{dev.underlay} is unknown", source="sysfs")]
    fams = [dev.underlay_family] if dev.underlay_family else ["ipv4", "ipv6"]
    over = [f for f in fams if link.mtu + OVERHEAD[f] > under.mtu]
    if not over:
        return []
    by_route = (dev.underlay_by or "").startswith("the route to")
    certain = len(over) == len(fams)
    severity = "error" if by_route and certain else "warning"
    fam = over[0]
    return [finding(
        severity, "mesh.mtu", S.nic(name),
        f"{name} MTU {link.mtu} + {OVERHEAD[fam]} ({fam} underlay overhead) = "
        f"{link.mtu + OVERHEAD[fam]} > {under.mtu}, the MTU of {dev.underlay} "
        f"(decided by {dev.underlay_by}): full-size packets fragment or are dropped",
        expected=f"<= {under.mtu - OVERHEAD[fam]}", actual=link.mtu, source="sysfs, wireguard",
        hint=f"set {name}'s MTU to {under.mtu - OVERHEAD[fam]} (wg-quick: MTU = ...) or raise "
             f"{dev.underlay}'s")]


def _counters(name: str, link: Optional[NetLink]) -> List[Finding]:
    out: List[Finding] = []
    if link is None:
        return out
    if link.operstate == "down":
        out.append(finding("warning", "mesh.down", S.nic(name), f"{name} is down",
                           expected="up", actual="down", source="sysfs",
                           hint=f"ip link set {name} up (or wg-quick up {name})"))
    counts = {c: v for c, v in (link.counters or {}).items()
              if c in TROUBLE_COUNTERS and v}
    errs = {c: v for c, v in counts.items() if c.endswith("errors")}
    drops = {c: v for c, v in counts.items() if c.endswith("dropped")}
    for code, what, got in (("mesh.errors", "errors", errs), ("mesh.drops", "drops", drops)):
        if got:
            out.append(finding(
                "warning", code, S.nic(name),
                f"{name} counted {what} since it came up: "
                + ", ".join(f"{c} {v}" for c, v in sorted(got.items())),
                expected=0, actual=got, source="sysfs",
                hint="tx errors: packets to addresses no peer's allowed IPs cover, or a peer "
                     "with no endpoint; rx: packets failing the allowed-IPs check"))
    return out


def check(topo: Topology, sel: Selection) -> List[Finding]:
    names = _wg_names(topo)
    if not names:
        return []
    links = (topo.sysfs.net if topo.sysfs is not None else None) or {}
    wgn = topo.wireguard
    captured = wgn.captured_at if wgn is not None else None
    out: List[Finding] = []
    for name in names:
        link = links.get(name)
        dev = wgn.interfaces.get(name) if wgn is not None else None
        out.extend(_counters(name, link))
        out.extend(_mtu(name, link, dev, links))
        out.extend(_peers(name, dev, captured))
    if _rdma_up(topo) is False:
        out.append(finding(
            "info", "mesh.sockets_only", S.NODE,
            f"the WireGuard mesh ({', '.join(names)}) is the only inter-node path (no RDMA "
            "port is up): NCCL runs on sockets over it, and GPUDirect RDMA does not cross a "
            "UDP tunnel", source="sysfs",
            hint="expect socket-transport bandwidth for collectives across nodes"))
    return out
