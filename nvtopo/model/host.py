"""Host facts: the node's name, kernel, CPUs and memory (a snapshot's host block and
psutil), its NUMA nodes (sysfs ``devices/system/node``) and its network interfaces (psutil).
"""


from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .codec import LIMIT, Record, fld, record

#: The host facts nvtopo derives (``Topology.host``) and the JSON types each has there; a
#: snapshot's host block may hold other keys, which are kept as they are.
HOST_FACTS: Dict[str, Tuple[type, ...]] = {
    "hostname": (str, type(None)), "kernel": (str,), "os": (str,), "machine": (str,),
    "time": (str,), "sysfs_root": (str,), "cpu_count_logical": (int,),
    "cpu_count_physical": (int,), "memory_total_bytes": (int,),
}


def host_problems(host: Dict[str, Any]) -> List[str]:
    """The known host facts whose value has another type than nvtopo derives (bool is no
    int; numbers within the codec's bound)."""
    out = []
    for key, value in host.items():
        want = HOST_FACTS.get(key)
        if want is None:
            continue
        if type(value) not in want or (type(value) is int and not -LIMIT <= value <= LIMIT):
            out.append(f"host.{key}: expected {' or '.join(t.__name__ for t in want)}, "
                       f"got {value!r:.60}")
    return out


@record
class NetIf(Record):
    """One network interface (psutil.net_if_stats)."""

    up: bool = fld("isup", default=False)
    speed_mbps: Optional[int] = fld("speed (null where the driver gives none)")
    mtu: int = fld("mtu", default=0)


@record
class HostNet(Record):
    """The host probe's interface stats (``extra.host``)."""

    net_if: Dict[str, NetIf] = fld("interface -> stats, on the machine that took the "
                                   "snapshot", factory=dict)


@record
class NumaNode(Record):
    """One NUMA node (``devices/system/node/nodeN``)."""

    node: int = fld("N", default=0)
    cpulist: Optional[str] = fld("cpulist")
    cpus: Optional[int] = fld("CPUs in cpulist")
    distances: Optional[List[int]] = fld("distance")
    memory_only: Optional[bool] = fld("an empty cpulist: memory without CPUs", omit="none")
    unknown: Optional[Dict[str, str]] = fld("file -> why unreadable", omit="none")


@record
class NumaInfo(Record):
    online: Optional[str] = fld("devices/system/node/online")
    nodes: List[NumaNode] = fld("every node", factory=list)


__all__ = ["HOST_FACTS", "host_problems", "NetIf", "HostNet", "NumaNode", "NumaInfo"]
