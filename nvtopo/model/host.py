"""Host facts: the node's name, kernel, CPUs and memory (a snapshot's host block and
psutil), its NUMA nodes (sysfs ``devices/system/node``) and its network interfaces (psutil).
"""


from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .codec import ABSENT, LIMIT, Record, fld, record

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


def _known(value: Any) -> Any:
    """``None`` for a key that is not there (:data:`ABSENT`), else the value."""
    return None if value is ABSENT else value


@record
class Origin(Record):
    """Where the model's facts came from (``Topology.origin``), set where the model is read.

    Each key is written only when set, so a key that is missing and one that is ``null``
    stay apart: a snapshot read with no file name says ``"file": null``, a live probe has no
    ``file`` at all.  Readers take the properties (``None`` where a key is not set); the
    producers build one with :meth:`of`."""

    kind_: str = fld("snapshot, example, live, or the kind of text read", key="kind",
                     omit="absent")
    file_: Optional[str] = fld("the file read (null: read with no file name)", key="file",
                               omit="absent")
    nvtopo_version_: Any = fld("the nvtopo that took a snapshot's evidence (as the "
                               "snapshot says it)", key="nvtopo_version", omit="absent")
    sysfs_root_: Optional[str] = fld("the sysfs tree probed live", key="sysfs_root",
                                     omit="absent")

    @classmethod
    def of(cls, kind: str, file: Any = ABSENT, nvtopo_version: Any = ABSENT,
           sysfs_root: Any = ABSENT) -> "Origin":
        """An origin of ``kind``; the keys not given are left out of the document."""
        return cls(kind_=kind, file_=file, nvtopo_version_=nvtopo_version,
                   sysfs_root_=sysfs_root)

    @property
    def kind(self) -> Optional[str]:
        return _known(self.kind_)

    @property
    def file(self) -> Optional[str]:
        return _known(self.file_)

    @property
    def nvtopo_version(self) -> Any:
        return _known(self.nvtopo_version_)

    @property
    def sysfs_root(self) -> Optional[str]:
        return _known(self.sysfs_root_)


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


__all__ = ["HOST_FACTS", "host_problems", "Origin", "NetIf", "HostNet", "NumaNode", "NumaInfo"]
