"""Network interfaces from ``class/net`` (the kernel's net sysfs ABI,
``Documentation/ABI/testing/sysfs-class-net``): read where a WireGuard interface is present.

A WireGuard interface is ``type`` 65534 (ARPHRD_NONE) with ``DEVTYPE=wireguard`` in its
``uevent``.  Where one is found, every interface gets its type, MTU, operstate and NUMA node
(one of them is the tunnel's underlay, which sysfs cannot name: the ``wireguard`` probe
decides it), and the WireGuard interfaces their ``statistics/`` counters.  Where none is,
only the ``type`` files are read, and the model keeps only the interfaces that could still
be a WireGuard tunnel: type 65534 without ``DEVTYPE=wireguard`` is also a TUN device, which
userspace WireGuard (wireguard-go, boringtun) makes (its ``tun_flags`` is read to say so),
and a ``type`` that could not be read says nothing.  An empty map (``net: {}``) is "listed,
no interface is or could be WireGuard"; a listing cut at :data:`MAX_NET` names is recorded
(``net_cut``), and WireGuard may be past the cut.  :func:`collect_net` runs in the sysfs
traversal (over the live tree or the recorded evidence); :func:`build_net` is pure.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...model.net import ARPHRD_NONE, NET_COUNTERS, NetLink
from .parse import to_int
from .read import NOT_RECORDED, read_attrs

#: Most interfaces read (a container host has hundreds of veths; real uplinks are few).
MAX_NET = 1024
#: Per-interface attributes read once a WireGuard interface is present.
NET_ATTRS = ("mtu", "operstate", "device/numa_node")


def reason(err: Optional[str]) -> str:
    """Why a file was unreadable, as :func:`.facts.reason` says it (not imported: the walk
    imports this module, and facts imports the walk)."""
    if err is None:
        return "unknown"
    return "missing (ENOENT)" if err.startswith("ENOENT") else err


def _devtype(uevent: Optional[str]) -> Optional[str]:
    for line in (uevent or "").splitlines()[:64]:
        key, sep, val = line.partition("=")
        if sep and key == "DEVTYPE":
            return val.strip()[:64] or None
    return None


def collect_net(v: Any) -> Optional[Dict[str, Any]]:
    """``class/net`` through view ``v``: ``None`` where the listing is not recorded (evidence
    taken before nvtopo read it) or absent, else ``{"links": {...}, "wireguard": bool}``."""
    names, err = v.listdir("class/net")
    if names is None:
        return None if err == NOT_RECORDED or (err or "").startswith("ENOENT") else {
            "error": err, "links": {}, "wireguard": False}
    links: Dict[str, Dict[str, Any]] = {}
    for name in sorted(names)[:MAX_NET]:
        base = f"class/net/{name}"
        raw_type, terr = v.read(base + "/type")
        entry: Dict[str, Any] = {"type": raw_type, "errors": {}, "attrs": {}}
        if raw_type is None:
            entry["errors"]["type"] = terr
        elif to_int(raw_type) == ARPHRD_NONE:
            entry["uevent"] = v.read(base + "/uevent")[0]
            if _devtype(entry["uevent"]) != "wireguard":  # a TUN device? (userspace WireGuard)
                entry["tun_flags"] = v.read(base + "/tun_flags")
        links[name] = entry
    wg = [n for n, e in links.items() if _devtype(e.get("uevent")) == "wireguard"]
    if wg:
        for name, entry in links.items():
            read_attrs(v, f"class/net/{name}", NET_ATTRS, entry)
        for name in wg:
            counters: Dict[str, Any] = {}
            for c in NET_COUNTERS:
                counters[c] = v.read(f"class/net/{name}/statistics/{c}")
            links[name]["counters"] = counters
    return {"links": links, "wireguard": bool(wg), "cut": max(0, len(names) - MAX_NET)}


def _tun(e: Dict[str, Any]) -> Optional[bool]:
    """``tun_flags`` read: a TUN device; missing: not one; else (not recorded) unknown."""
    pair = e.get("tun_flags")
    val, err = pair if isinstance(pair, (list, tuple)) and len(pair) == 2 else (None, None)
    if val is not None:
        return True
    return False if (err or "").startswith("ENOENT") else None


def net_cut(raw: Optional[Dict[str, Any]]) -> Optional[int]:
    """``class/net`` entries not looked at (past :data:`MAX_NET`); ``None``: none."""
    cut = (raw or {}).get("cut")
    return cut if type(cut) is int and cut > 0 else None


def build_net(raw: Optional[Dict[str, Any]]) -> Optional[Dict[str, NetLink]]:
    """The model's interfaces (``extra.sysfs.net``): every interface where a WireGuard one is
    present; where none is, only those that could still be one (:attr:`NetLink.maybe_wireguard`:
    a TUN device, as userspace WireGuard makes, or a type not read), ``{}`` where none could
    (absent: ``nvtopo cluster`` names a node that left the mesh, unless the listing was cut:
    :func:`net_cut`); ``None`` where it was not read or could not be listed (unknown)."""
    if not raw or raw.get("error"):
        return None
    if not raw.get("wireguard"):
        out0: Dict[str, NetLink] = {}
        for name, e in raw["links"].items():
            link = NetLink(name=name, type=to_int(e.get("type")), kind=_devtype(e.get("uevent")))
            if not link.maybe_wireguard:
                continue
            link.tun = _tun(e)
            if link.type is None:
                link.unknown = {"type": reason((e.get("errors") or {}).get("type"))}
            out0[name] = link
        return out0
    out: Dict[str, NetLink] = {}
    for name, e in raw["links"].items():
        attrs, errors = e.get("attrs") or {}, e.get("errors") or {}
        unknown: Dict[str, str] = {}
        for attr, err in errors.items():
            if attr == "device/numa_node" and (err or "").startswith("ENOENT"):
                continue  # a virtual interface: no device, no NUMA node (absent, not unknown)
            unknown[attr] = reason(err)
        numa = to_int(attrs.get("device/numa_node"), signed=True)
        link = NetLink(name=name, type=to_int(e.get("type")), kind=_devtype(e.get("uevent")),
                       mtu=to_int(attrs.get("mtu")),
                       operstate=(attrs.get("operstate") or "").strip()[:32] or None,
                       numa_node=numa if numa is not None and numa >= 0 else None,
                       unknown=unknown or None)
        if "tun_flags" in e:
            link.tun = _tun(e)
        if "counters" in e:
            counters: Dict[str, Optional[int]] = {}
            for c, pair in e["counters"].items():
                val, err = pair if isinstance(pair, (list, tuple)) else (None, None)
                counters[c] = to_int(val)
                if val is None:
                    unknown[f"statistics/{c}"] = reason(err)
            link.counters = counters
            link.unknown = unknown or None
        out[name] = link
    return out


def wireguard_names(links: Optional[Dict[str, NetLink]]) -> List[str]:
    return sorted(n for n, link in (links or {}).items() if link.wireguard)


__all__ = ["MAX_NET", "collect_net", "build_net", "net_cut", "wireguard_names"]
