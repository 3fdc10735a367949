"""The host probe: hostname, CPU counts, memory and network interfaces, from psutil.

psutil is imported only when probing live, so ``--from`` commands start fast.
The interface facts (up, speed, MTU) enrich the netdevs of RoCE and IPoIB
ports found by the sysfs probe.

They describe *this* machine, so they are not captured when ``--sysfs-root``
points at a copied tree (a directory that is not the sysfs this process
sees): they would not belong to it.
"""

from __future__ import annotations

import platform
from typing import Any, Dict, Optional

from ..model import Topology
from ..model.host import HostNet, NetIf
from . import ProbeOptions

#: Modules :func:`capture` imports (psutil is not imported by ``--from`` commands): the live
#: snapshot imports them before the probe threads start (:func:`nvtopo.probes.prepare`).
CAPTURE_IMPORTS = ("psutil",)

SOURCE = "host"


def _same_sysfs(root: Optional[str]) -> bool:
    """Whether ``root`` is this machine's sysfs: the rule snapshots use to skip this
    machine's probes (:meth:`ProbeOptions.foreign_root`), so ``ib`` and ``snapshot`` agree."""
    return not ProbeOptions(sysfs_root=root).foreign_root()


def capture(options: Optional[Any] = None) -> Dict[str, Any]:
    root = getattr(options, "sysfs_root", None)
    evidence: Dict[str, Any] = {"status": "ok", "error": None}
    if not _same_sysfs(root):
        evidence["status"] = "skipped"
        evidence["error"] = (f"--sysfs-root {root} is not this machine's sysfs: host facts of "
                             "this machine would not belong to it")
        return evidence
    try:
        import psutil
    except ImportError as exc:  # pragma: no cover - psutil is a dependency
        evidence["status"] = "missing"
        evidence["error"] = f"psutil not importable: {exc}"
        return evidence
    evidence["hostname"] = platform.node() or None
    try:
        evidence["cpu_count_logical"] = psutil.cpu_count(logical=True)
        evidence["cpu_count_physical"] = psutil.cpu_count(logical=False)
        evidence["memory_total_bytes"] = int(psutil.virtual_memory().total)
    except Exception as exc:  # psutil raises its own types on odd platforms
        evidence["status"] = "failed"
        evidence["error"] = f"psutil: {exc}"
        return evidence
    net: Dict[str, Dict[str, Any]] = {}
    try:
        for name, st in psutil.net_if_stats().items():
            net[name] = {"up": bool(st.isup), "speed_mbps": int(st.speed) or None,
                         "mtu": int(st.mtu)}
    except Exception as exc:
        evidence["net_error"] = f"psutil.net_if_stats: {exc}"
    evidence["net_if"] = net
    return evidence


def derive(evidence: Dict[str, Any]) -> Topology:
    """Host facts into ``Topology.host`` and interface stats into ``Topology.host_net``
    (an interface whose recorded stats are not what psutil gives is left out, with a note)."""
    topo = Topology(sources=[SOURCE])
    if evidence.get("status") != "ok":
        if evidence.get("status") != "skipped":
            topo.note("host.unavailable", f"no host facts: {evidence.get('error')}",
                      source=SOURCE)
        return topo
    for key in ("hostname", "cpu_count_logical", "cpu_count_physical", "memory_total_bytes"):
        if evidence.get(key) is not None:
            topo.host.put(key, evidence[key])
    net = evidence.get("net_if")
    stats: Dict[str, NetIf] = {}
    for name, st in (net.items() if isinstance(net, dict) else ()):
        try:
            stats[name] = NetIf.from_dict(st, root=f"net_if.{name}")
        except ValueError as exc:
            topo.note("host.bad_fact", f"interface stats dropped: {exc}", source=SOURCE,
                      level="warning")
    topo.host_net = HostNet(net_if=stats)
    return topo
