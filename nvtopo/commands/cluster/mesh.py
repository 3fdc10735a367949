"""Mesh: the WireGuard mesh across nodes is complete and symmetric (``docs/mesh.md`` §3).

Each node's own public key (``wg show IF public-key``: public) names it; every node with a
WireGuard interface should have every other such node as a peer.  One finding per cause:

* ``cluster.mesh_node_missing``: a node missing from the peer lists of two or more nodes (a
  node added to the mesh but not to their configurations) — one finding naming that node,
  not one per node that lacks it; an error where the node lists them (the tunnels are
  one-sided), else a warning;
* ``cluster.mesh_peer_missing``: the rest, by the node whose peer list lacks them — an error
  for those that list it (one-sided), a warning for those that do not (neither side has the
  other: perhaps a hub-and-spoke design, not a complete mesh);
* ``cluster.mesh_no_interface``: a node with no WireGuard interface at all (its snapshot lists
  its network interfaces, none WireGuard) in a fleet whose other nodes are mostly meshed: one
  finding naming it; the peer keys that most meshed nodes still list and no node has (its old
  key) are folded into it (an error then, a warning where no peer lists a stale key: perhaps a
  node kept out of the mesh on purpose).  A node whose snapshot does not list its network
  interfaces, or lists them cut short, or lists one that could be a userspace WireGuard
  tunnel (a TUN device: wireguard-go and boringtun make one, type 65534 with no
  ``DEVTYPE=wireguard``; ``wg`` is not asked about it) is unknown, never missing;
* ``cluster.mesh_membership_unknown`` (info): those of them with a listing, named with why,
  in a fleet whose other nodes are mostly meshed;
* ``cluster.mesh_unknown_peer`` (warning): a peer key that matches no node in the view (a
  node gone, a key rotated; or a node whose snapshot is not in the view), one per key; a
  node's old key, listed by exactly the nodes that lack its new one, is folded into that
  node's ``cluster.mesh_node_missing`` instead (re-keyed: one cause, one finding);
* ``cluster.mesh_duplicate_key`` (error): one public key on two nodes (a cloned image);
* ``cluster.mesh_mtu`` (warning): a node whose tunnel MTU differs from the majority's;
* ``cluster.mesh_not_checked`` (info): nodes whose peers or key are unknown (``wg`` not
  permitted, no ``wg``, an older snapshot): never counted as complete.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Set, Tuple

from .facts import NodeFacts
from ...checks import subject as S
from ...checks.findings import Finding
from .finding import SHOWN, make, named
from .majority import split

#: At most this many per-key findings (the rest summed up in one).
MAX_KEY_FINDINGS = 20

def check(nodes: List[NodeFacts]) -> List[Finding]:
    meshed = [n for n in nodes if n.mesh]
    if len(meshed) < 2:
        return []
    out: List[Finding] = []
    owner: Dict[str, str] = {}
    dup: Dict[str, Set[str]] = {}
    keys: Dict[str, Set[str]] = {}
    peers: Dict[str, Set[str]] = {}
    unknown: List[str] = []
    for n in meshed:
        for _if, key, _mtu, plist, _st in n.mesh:
            if key is not None:
                if key in owner and owner[key] != n.name:
                    dup.setdefault(key, {owner[key]}).add(n.name)
                owner.setdefault(key, n.name)
                keys.setdefault(n.name, set()).add(key)
            if plist is not None:
                peers.setdefault(n.name, set()).update(plist)
        if n.name not in keys or n.name not in peers:
            unknown.append(n.name)
    if unknown:
        out.append(make("info", "cluster.mesh_not_checked", S.fleet("WireGuard mesh"),
                        f"{len(unknown)} meshed node(s) whose peers or own key are unknown "
                        f"(wg needs CAP_NET_ADMIN; an older snapshot): {named(unknown)}; "
                        "their place in the mesh is not checked", unknown,
                        hint="take their snapshots as root or with CAP_NET_ADMIN"))
    for key, holders in sorted(dup.items()):
        out.append(make("error", "cluster.mesh_duplicate_key", S.fleet(key),
                        f"public key {key} on {len(holders)} nodes: {named(sorted(holders))} "
                        "(a cloned image keeps its private key)", sorted(holders),
                        expected=1, actual=len(holders),
                        hint="generate a key per node (wg genkey) and update the peers"))
    # who lacks whom, among nodes whose keys and peers are both known: indexed by key, never
    # pairwise (a fleet of 2,000 took 104 s so), in time linear in the peer lists' length
    known = list(dict.fromkeys(n.name for n in meshed if n.name in keys and n.name in peers))
    out += _lacks(known, keys, peers)
    everyone_keys = set(owner)
    strays: Dict[str, List[str]] = {}
    for a in known:
        for k in sorted(peers[a] - everyone_keys):
            strays.setdefault(k, []).append(a)
    out += _no_interface(nodes, meshed, known, strays)
    _rekeyed(out, known, keys, peers, strays)
    for k, names in sorted(strays.items())[:MAX_KEY_FINDINGS]:
        out.append(make("warning", "cluster.mesh_unknown_peer", S.fleet(k),
                        f"peer key {k} matches no node in this view; listed by "
                        f"{len(names)} node(s): {named(names)}", names,
                        hint="a node gone or re-keyed: remove the stale peer; or a node "
                             "whose snapshot is not in this view"))
    if len(strays) > MAX_KEY_FINDINGS:
        more = sorted(strays)[MAX_KEY_FINDINGS:]
        out.append(make("warning", "cluster.mesh_unknown_peer", S.fleet("peer keys"),
                        f"{len(more)} more peer keys match no node", []))
    major, minor, _u = split((n.name, n.mesh[0][2]) for n in meshed)
    if major is not None:
        for mtu, names in sorted(minor.items(), key=lambda kv: str(kv[0])):
            out.append(make("warning", "cluster.mesh_mtu", S.fleet(f"MTU {mtu}"),
                            f"{len(names)} node(s) with tunnel MTU {mtu}, the others "
                            f"{major}: {named(names)}", names, expected=major, actual=mtu,
                            hint="one MTU across the mesh (wg-quick: MTU =)"))
    return out


class _Index:
    """Who lists whom in the mesh, indexed by key (see :func:`_lacks` for the cost)."""

    def __init__(self, known: List[str], keys: Dict[str, Set[str]],
                 peers: Dict[str, Set[str]]) -> None:
        self.keys, self.peers = keys, peers
        self.total = len(known) - 1
        self.order = sorted(known)
        self.holders: Dict[str, List[str]] = {}  # key -> the known nodes that have it
        for a in known:
            for k in keys[a]:
                self.holders.setdefault(k, []).append(a)
        # how many known nodes list each key (counted in C: a healthy mesh of 2,000 nodes has
        # 4,000,000 peer entries, and needs nothing more than these counts)
        listed_times: Counter[str] = Counter()
        for a in known:
            listed_times.update(peers[a])
        self.lacked_count: Dict[str, int] = {}
        for b in known:
            if len(keys[b]) == 1:
                (k,) = keys[b]
                self.lacked_count[b] = self.total - (listed_times[k] - (k in peers[b]))
        # who lists whom, by key, only for the keys of the nodes some node lacks (and of nodes
        # with several keys, whose listers are a union)
        wanted = {k for b in known if self.lacked_count.get(b, 1) > 0 for k in keys[b]}
        self.listers_of_key: Dict[str, Set[str]] = {k: set() for k in wanted}
        if wanted:
            for a in known:
                for k in peers[a] & wanted:  # C walks the smaller of the two
                    self.listers_of_key[k].add(a)
        for b in known:
            if len(keys[b]) > 1:
                who = self.listers(b)
                self.lacked_count[b] = self.total - (len(who) - (b in who))

    def listers(self, b: str) -> Set[str]:
        """The known nodes that have ``b`` as a peer (``b`` itself too)."""
        ks = self.keys[b]
        if len(ks) == 1:
            return self.listers_of_key.get(next(iter(ks)), set())
        got: Set[str] = set()
        for k in ks:
            got |= self.listers_of_key.get(k, set())
        return got

    def lists(self, b: str, a: str) -> bool:
        """``b`` has ``a`` as a peer."""
        return not self.keys[a].isdisjoint(self.peers[b])

    def lacked(self, b: str, limit: int, also: str = "") -> List[str]:
        """The first ``limit`` names, in order, of the nodes that lack ``b`` (and ``also``):
        the complement of its listers, walked only as far as needed."""
        who = self.listers(b)
        got: List[str] = []
        for x in self.order:
            if x == also or (x != b and x not in who):
                got.append(x)
                if len(got) >= limit:
                    break
        return got


def _lacks(known: List[str], keys: Dict[str, Set[str]], peers: Dict[str, Set[str]]
           ) -> List[Finding]:
    """``cluster.mesh_node_missing`` and ``cluster.mesh_peer_missing``: node ``a`` lacks
    ``b`` when none of ``b``'s keys is among ``a``'s peers.

    The relation is never built pair by pair: each node's *listers* (the known nodes whose
    peers hold one of its keys) come from an index of the peer lists by key, and whom a node
    lacks is the complement of that, counted (``len(known) - 1 - listers``) and walked in name
    order only as far as a finding shows names (:data:`SHOWN`).  So the cost is the total
    length of the peer lists plus ``SHOWN`` names per finding, however broken the mesh (and,
    for a key several nodes hold, a cloned image reported as ``cluster.mesh_duplicate_key``,
    its holders once for each node that lists it)."""
    if not known:
        return []
    ix = _Index(known, keys, peers)
    return _nodes_missing(ix, known) + _peers_missing(ix, known)


def _nodes_missing(ix: _Index, known: List[str]) -> List[Finding]:
    """A node lacked by two or more is one cause (it was not added to their configurations):
    one finding naming it."""
    out: List[Finding] = []
    total = ix.total
    for b in known:
        count = ix.lacked_count[b]
        if count < 2:
            continue
        who = ix.listers(b)
        one_sided = sorted({a for k in ix.peers[b] for a in ix.holders.get(k, ())
                            if a != b and a not in who})
        first = ix.lacked(b, 5)
        out.append(_counted(
            "error" if one_sided else "warning", "cluster.mesh_node_missing", S.host(b),
            (f"{b} is in no other node's peer list ({count} nodes lack it)" if count == total
             else f"{b} is missing from the peer lists of {count} nodes: "
                  f"{_named_head(first, count)}")
            + (f"; it lists {len(one_sided)} of them: those tunnels are one-sided"
               if one_sided else ""), ix.lacked(b, SHOWN, also=b), count + 1,
            expected=f"a peer of {total} nodes", actual=total - count,
            hint=f"add {b}'s public key to those nodes' WireGuard peers"))
    return out


def _peers_missing(ix: _Index, known: List[str]) -> List[Finding]:
    """A pair no other pair shares is put under the node that lacks."""
    out: List[Finding] = []
    total = ix.total
    rest: Dict[str, List[str]] = {}
    for b in known:
        if ix.lacked_count[b] == 1:
            (a,) = ix.lacked(b, 1)
            rest.setdefault(a, []).append(b)
    for a in known:
        if a not in rest:
            continue
        listed = {x for k in ix.peers[a] for x in ix.holders.get(k, ()) if x != a}
        lacks = total - len(listed)
        one_sided = [b for b in rest[a] if ix.lists(b, a)]
        neither = [b for b in rest[a] if not ix.lists(b, a)]
        for sev, group, why in (("error", one_sided, "which list it: one-sided tunnels"),
                                ("warning", neither, "which do not list it either")):
            if group:
                out.append(make(sev, "cluster.mesh_peer_missing", S.host(a),
                                f"{a}'s peers lack {len(group)} node(s), {why}: "
                                f"{named(group)}", [a] + group,
                                expected=f"{total} peers",
                                actual=f"{total - lacks} of the nodes",
                                hint=f"add the missing nodes' public keys to {a}'s peers"))
    return out


def _counted(severity: str, code: str, subject: S.Subject, message: str, first: List[str],
             count: int, **kw: Any) -> Finding:
    """A finding whose node list is given as its first names (sorted) and their count."""
    f = make(severity, code, subject, message, first, **kw)
    f.node_count = count
    return f


def _named_head(first: List[str], count: int) -> str:
    """:func:`named` of ``count`` names of which ``first`` are the first (sorted)."""
    return ", ".join(first[:5]) + (f" and {count - 5} more" if count > 5 else "")


def _rekeyed(found: List[Finding], known: List[str], keys: Dict[str, Set[str]],
             peers: Dict[str, Set[str]], strays: Dict[str, List[str]]) -> None:
    """A node re-keyed (it left the mesh and came back with a new key) is one cause: the
    others lack its new key (``cluster.mesh_node_missing``) and still list its old one, a key
    no node has, listed by exactly the nodes that lack it.  That key is taken out of
    ``strays`` and named in the node's finding (no ``cluster.mesh_unknown_peer`` listing
    every healthy node).  Only where one node and one key match each other, and for at most
    :data:`MAX_KEY_FINDINGS` such findings (each costs a pass over the nodes)."""
    missing = [f for f in found if f.code == "cluster.mesh_node_missing"]
    if not missing or len(missing) > MAX_KEY_FINDINGS:
        return
    by_listers: Dict[frozenset, List[str]] = {}
    for k, names in strays.items():
        if len(names) >= 2:
            by_listers.setdefault(frozenset(names), []).append(k)
    lacking: Dict[str, frozenset] = {}
    for f in missing:
        b = str(f.subject)
        lacking[b] = frozenset(a for a in known if a != b and not keys.get(b, set()) & peers[a])
    for f in missing:
        b = str(f.subject)
        old = by_listers.get(lacking[b], [])
        if len(old) != 1 or sum(x == lacking[b] for x in lacking.values()) != 1:
            continue  # not one node and one key for each other
        (k,) = old
        del strays[k]
        f.message += (f"; those nodes still list peer key {k}, which no node in this view "
                      f"has: {b}'s old key ({b} was re-keyed)")
        f.hint = f"replace {b}'s old key {k} with its new one in those nodes' WireGuard peers"


def _no_interface(nodes: List[NodeFacts], meshed: List[NodeFacts], known: List[str],
                  strays: Dict[str, List[str]]) -> List[Finding]:
    """Nodes that left the mesh: no WireGuard interface where their snapshot lists the
    network interfaces, while most readable nodes are meshed.  The stray keys most meshed
    nodes list (the dangling entries for them) are taken out of ``strays`` and folded in."""
    readable = [n for n in nodes if n.error is None]
    bare = [n.name for n in readable if not n.mesh and n.net_listed]
    unsure = [n for n in readable if not n.mesh and n.net_unsure]
    if not (bare or unsure) or len(meshed) * 2 <= len(readable):
        return []
    out: List[Finding] = []
    if unsure:
        out.append(make(
            "info", "cluster.mesh_membership_unknown", S.fleet("WireGuard mesh"),
            f"{len(unsure)} node(s) whose place in the mesh could not be judged (sysfs names "
            f"no WireGuard interface, but cannot rule one out) while {len(meshed)} of "
            f"{len(readable)} nodes are in the mesh: "
            + "; ".join(f"{n.name}: {n.net_unsure}" for n in unsure[:5])
            + (f"; and {len(unsure) - 5} more" if len(unsure) > 5 else ""),
            [n.name for n in unsure],
            hint="on those nodes, `wg show interfaces` lists userspace tunnels too"))
    if not bare:
        return out
    wide = sorted(k for k, by in strays.items() if len(by) >= 2 and len(by) * 2 > len(known))
    folded: List[Tuple[str, int]] = []
    if wide and len(wide) <= len(bare):
        folded = [(k, len(strays.pop(k))) for k in wide]
    stale = ""  # the same for every bare node: written once, its keys cut at five
    if folded:
        stale = ("; the meshed nodes still list " + (
            f"peer key {folded[0][0]} ({folded[0][1]} nodes), no node's key in this view: "
            "its old key" if len(folded) == 1 else
            f"{len(folded)} peer keys no node has ({', '.join(k for k, _ in folded[:5])}"
            + (f" and {len(folded) - 5} more" if len(folded) > 5 else "")
            + "): those of the nodes that left"))
    for b in bare:
        out.append(make(
            "error" if folded else "warning", "cluster.mesh_no_interface", S.host(b),
            f"{b} has no WireGuard interface (its snapshot lists its network interfaces, "
            f"none WireGuard) while {len(meshed)} of {len(readable)} nodes are in the mesh"
            + stale, [b], expected="a WireGuard interface", actual="none",
            hint=f"bring {b}'s WireGuard interface up (wg-quick up, or the mesh's service); "
                 "if it left the mesh for good, remove its key from the other nodes' peers"))
    return out


__all__ = ["check"]
