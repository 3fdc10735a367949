"""Host facts: the node's name, kernel, CPUs and memory (a snapshot's host block and
psutil), its NUMA nodes (sysfs ``devices/system/node``) and its network interfaces (psutil).
"""


from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .codec import ABSENT, LIMIT, Record, fields, fld, record
from .spec import absent_as_none

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
class Origin(Record):
    """Where the model's facts came from (``Topology.origin``), set where the model is read.

    Each key is written only when set, so a key that is missing and one that is ``null``
    stay apart: a snapshot read with no file name says ``"file": null``, a live probe has no
    ``file`` at all.  A key not set reads as ``None``."""

    kind: Optional[str] = fld("snapshot, example, live, or the kind of text read",
                              omit="absent")
    file: Optional[str] = fld("the file read (null: read with no file name)", omit="absent")
    nvtopo_version: Any = fld("the nvtopo that took a snapshot's evidence (as the snapshot "
                              "says it)", omit="absent")
    sysfs_root: Optional[str] = fld("the sysfs tree probed live", omit="absent")

    @classmethod
    def of(cls, kind: str, file: Any = ABSENT, nvtopo_version: Any = ABSENT,
           sysfs_root: Any = ABSENT) -> "Origin":
        """An origin of ``kind``; the keys not given are left out of the document."""
        return cls(kind=kind, file=file, nvtopo_version=nvtopo_version, sysfs_root=sysfs_root)


absent_as_none(Origin)


@record
class Host(Record):
    """The host facts (``Topology.host``): those nvtopo derives (:data:`HOST_FACTS`), each
    ``None`` where not known, and the other keys a snapshot's host block holds
    (:attr:`others`), kept as read.

    An open map in JSON: every key at one level, written in the order the keys were set
    (the order of the host block read, the host probe's facts first), each only when set;
    a known fact holds :data:`ABSENT` where it is not set."""

    hostname: Optional[str] = fld("socket.gethostname (null: another machine's tree)",
                                  omit="absent")
    cpu_count_logical: Optional[int] = fld("psutil.cpu_count()", omit="absent")
    cpu_count_physical: Optional[int] = fld("psutil.cpu_count(logical=False)", omit="absent")
    memory_total_bytes: Optional[int] = fld("psutil.virtual_memory().total", omit="absent")
    kernel: Optional[str] = fld("platform.release", omit="absent")
    os: Optional[str] = fld("platform.system", omit="absent")
    machine: Optional[str] = fld("platform.machine", omit="absent")
    time: Optional[str] = fld("when the snapshot was taken (UTC, ISO 8601)", omit="absent")
    sysfs_root: Optional[str] = fld("the sysfs tree read (another machine's)", omit="absent")
    #: Keys nvtopo does not derive, kept as read.
    others: Dict[str, Any] = fld(factory=dict)

    def __post_init__(self) -> None:
        d = self.__dict__
        d["_keys"] = [f for f in _HOST_ORDER if d[f] is not ABSENT] + list(self.others)

    @classmethod
    def of(cls, facts: Dict[str, Any]) -> "Host":
        """The host facts of a host block (values as they are: see :func:`host_problems`),
        keys kept in its order."""
        host = cls()
        for key, value in facts.items():
            host.put(key, value)
        return host

    def put(self, key: str, value: Any) -> None:
        """Set the fact ``key`` (a known one, or one of :attr:`others`)."""
        if key in HOST_FACTS:
            setattr(self, key, value)
        else:
            self.others[key] = value
            keys = self.__dict__.setdefault("_keys", [])
            if key not in keys:
                keys.append(key)

    def fill(self, other: "Host") -> None:
        """Take the facts of ``other`` this one does not have (in ``other``'s order)."""
        mine = self.__json_write__()
        for key, value in other.__json_write__().items():
            if key not in mine:
                self.put(key, value)

    def __json_write__(self) -> Dict[str, Any]:
        """The host block: every key set, in the order set (those given to the constructor
        in the order of the fields, then :attr:`others`)."""
        d = self.__dict__
        out: Dict[str, Any] = {}
        for key in d.get("_keys", ()):
            value = self.others[key] if key in self.others else d.get(key, ABSENT)
            if value is not ABSENT:
                out[key] = value
        for key in _HOST_ORDER:
            if key not in out and d[key] is not ABSENT:
                out[key] = d[key]
        for key, value in self.others.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def __json_read__(cls, d: Dict[str, Any]) -> "Host":
        return cls.of(d)


absent_as_none(Host, order=True)
_HOST_ORDER = tuple(f.name for f in fields(Host) if f.name in HOST_FACTS)


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


__all__ = ["HOST_FACTS", "host_problems", "Host", "Origin", "NetIf", "HostNet", "NumaNode",
           "NumaInfo"]
