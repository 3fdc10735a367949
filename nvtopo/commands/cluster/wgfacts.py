"""A node's WireGuard facts for the cluster view (:class:`.facts.NodeFacts`): its
interfaces (:func:`mesh_facts`) and why an empty list may still be unknown
(:func:`net_unsure`).  The mesh check (:mod:`.mesh`) compares them across nodes; they live
apart from it so that the facts module, which the check reads, does not import the check.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

#: One WireGuard interface of a node: (interface, own public key, MTU, peer keys or None
#: where unknown, status).
MeshIf = Tuple[str, Optional[str], Optional[int], Optional[Tuple[str, ...]], str]


def mesh_facts(topo: Any) -> List[MeshIf]:
    """The node's WireGuard interfaces, for :class:`NodeFacts` (empty: none)."""
    links = (topo.sysfs.net if topo.sysfs is not None else None) or {}
    wgn = topo.wireguard
    names = {n for n, link in links.items() if link.wireguard}
    if wgn is not None:
        names.update(wgn.interfaces)
    out: List[MeshIf] = []
    for name in sorted(names):
        link = links.get(name)
        dev = wgn.interfaces.get(name) if wgn is not None else None
        peers = (tuple(sorted(p.public_key for p in dev.peers))
                 if dev is not None and dev.peers is not None and dev.status == "ok" else None)
        out.append((name, dev.public_key if dev is not None else None,
                    link.mtu if link is not None else None, peers,
                    dev.status if dev is not None else "not run"))
    return out


def net_unsure(topo: Any) -> Optional[str]:
    """Why a node with no WireGuard interface sysfs names may still be in the mesh (its
    listing cut short; an interface that could be userspace WireGuard); ``None``: it is not,
    or its interfaces were not listed at all."""
    sysfs = topo.sysfs
    if sysfs is None or sysfs.net is None:
        return None
    why = [f"{name} is a TUN device with no DEVTYPE=wireguard (userspace WireGuard, such as "
           "wireguard-go or boringtun, makes one)" if link.tun else
           f"{name} has type 65534 with no DEVTYPE=wireguard (a TUN device, as userspace "
           "WireGuard makes, looks so)" if link.type is not None else
           f"{name}'s type could not be read"
           for name, link in sorted(sysfs.net.items()) if link.maybe_wireguard][:3]
    if sysfs.net_cut:
        why.append(f"class/net was read only in part ({sysfs.net_cut} more entries not looked "
                   "at)")
    return "; ".join(why) or None


__all__ = ["mesh_facts", "net_unsure", "MeshIf"]
