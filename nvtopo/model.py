"""The topology model: one place for every fact nvtopo knows about a node.

Probes add facts to a :class:`Topology`; renderers and checks only read it.
Every fact carries the name of the source it came from (``topo-text``,
later ``nvml`` and ``sysfs``) so that disagreements between sources can be
reported instead of silently resolved.

The model serialises to plain JSON (:meth:`Topology.to_dict`) with a schema
version, and reads back without loss (:meth:`Topology.from_dict`).

"Unknown" is always ``None`` (JSON ``null``); it is never a fault.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .safe import ascii_int, is_ascii_digits

#: Version of the JSON document written by :meth:`Topology.to_dict`.
SCHEMA_VERSION = 1

# --- path vocabulary -------------------------------------------------------

#: Path kinds from strongest to weakest, as nvidia-smi's legend orders them.
PATH_ORDER = ("X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS")

#: Legacy spellings and their modern meaning.  Drivers up to about 384
#: printed SOC where today's print SYS.
PATH_ALIASES = {"SOC": "SYS"}

#: Status tokens of ``nvidia-smi topo -p2p``.
P2P_STATUS = {
    "X": "Self",
    "OK": "Status Ok",
    "CNS": "Chipset not supported",
    "GNS": "GPU not supported",
    "TNS": "Topology not supported",
    "NS": "Not supported",
    "DR": "Disabled by regkey",
    "U": "Unknown",
}

PATH_DESCRIPTIONS = {
    "X": "Self",
    "NV#": "Connection traversing a bonded set of # NVLinks",
    "PIX": "Connection traversing at most a single PCIe bridge",
    "PXB": "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
    "PHB": "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
    "NODE": "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
    "within a NUMA node",
    "SYS": "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
    "(e.g., QPI/UPI)",
    "SOC": "Old drivers' name for SYS: PCIe as well as the SMP link between CPU sockets",
}

_NV_RE = re.compile(r"^NV([0-9]{1,4})$")  # ASCII digits: \d also takes "٣"


@lru_cache(maxsize=512)
def path_kind(token: Optional[str]) -> Optional[str]:
    """Normalise a printed path token to its kind.

    ``NV18`` -> ``NV``, ``SOC`` -> ``SYS``, ``PIX`` -> ``PIX``; ``None`` for
    unknown or unrecognised tokens.
    """
    if token is None:
        return None
    token = PATH_ALIASES.get(token, token)
    if _NV_RE.match(token):
        return "NV"
    return token if token in PATH_ORDER else None


def nvlink_count(token: Optional[str]) -> Optional[int]:
    """Number of bonded NVLinks in an ``NV#`` token, else ``None``."""
    if token is None:
        return None
    m = _NV_RE.match(token)
    return int(m.group(1)) if m else None


@lru_cache(maxsize=512)
def path_rank(token: Optional[str]) -> Optional[int]:
    """Rank of a path token, 0 (self) … 6 (SYS); lower is closer."""
    kind = path_kind(token)
    return PATH_ORDER.index(kind) if kind else None


# --- entities ----------------------------------------------------------------

#: GPU fields that sources state and that are compared when merging sources.
GPU_FACTS = ("name", "uuid", "pci_bus_id", "cpu_affinity", "numa_affinity", "gpu_numa_id")
#: NIC fields likewise.
NIC_FACTS = ("pci_bus_id", "numa_node")


def _drop_none(d: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclass
class GPU:
    """One GPU.  Fields are ``None`` where no source said anything."""

    index: int
    label: str = ""
    name: Optional[str] = None
    uuid: Optional[str] = None
    pci_bus_id: Optional[str] = None
    cpu_affinity: Optional[str] = None
    numa_affinity: Optional[str] = None
    gpu_numa_id: Optional[int] = None
    #: field name -> source name, for every field that has a value.
    sources: Dict[str, str] = field(default_factory=dict)
    #: Facts later probes add (PCIe link, memory, ...), keyed by name.
    extra: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.label:
            self.label = f"GPU{self.index}"

    def to_dict(self) -> Dict[str, Any]:
        return {
            "index": self.index,
            "label": self.label,
            "name": self.name,
            "uuid": self.uuid,
            "pci_bus_id": self.pci_bus_id,
            "cpu_affinity": self.cpu_affinity,
            "numa_affinity": self.numa_affinity,
            "gpu_numa_id": self.gpu_numa_id,
            "sources": dict(self.sources),
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "GPU":
        return cls(
            index=int(d["index"]),
            label=d.get("label") or "",
            name=d.get("name"),
            uuid=d.get("uuid"),
            pci_bus_id=d.get("pci_bus_id"),
            cpu_affinity=d.get("cpu_affinity"),
            numa_affinity=d.get("numa_affinity"),
            gpu_numa_id=d.get("gpu_numa_id"),
            sources=dict(d.get("sources") or {}),
            extra=dict(d.get("extra") or {}),
        )


@dataclass
class NIC:
    """One network device as nvidia-smi lists it (an RDMA device: HCA or RoCE NIC).

    ``label`` is what the matrix prints (``NIC0`` or ``mlx5_0``); ``name``
    the device name (through the NIC Legend where there is one, else the
    label).
    """

    label: str
    name: str
    pci_bus_id: Optional[str] = None
    numa_node: Optional[int] = None
    sources: Dict[str, str] = field(default_factory=dict)
    extra: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "label": self.label,
            "name": self.name,
            "pci_bus_id": self.pci_bus_id,
            "numa_node": self.numa_node,
            "sources": dict(self.sources),
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "NIC":
        return cls(
            label=d["label"],
            name=d.get("name") or d["label"],
            pci_bus_id=d.get("pci_bus_id"),
            numa_node=d.get("numa_node"),
            sources=dict(d.get("sources") or {}),
            extra=dict(d.get("extra") or {}),
        )


@dataclass
class Matrix:
    """A square device matrix, cells as printed (``None`` where unknown).

    ``cells[i][j]`` is row ``devices[i]``, column ``devices[j]``.
    Used for the path matrix (``X``, ``NV18``, ``PIX``, ``SOC`` ...) and
    for the P2P status matrix (``X``, ``OK``, ``GNS`` ...).
    """

    devices: List[str]
    cells: List[List[Optional[str]]]
    source: str = "topo-text"
    #: For P2P matrices: the capability shown (``r``, ``w``, ``n``, ``a``,
    #: ``p``) where the input says so.
    mode: Optional[str] = None

    def __post_init__(self) -> None:
        n = len(self.devices)
        if len(self.cells) != n or any(len(row) != n for row in self.cells):
            raise ValueError("matrix cells must be square and match the device list")

    def index(self, label: str) -> int:
        return self.devices.index(label)

    def get(self, a: str, b: str) -> Optional[str]:
        """Cell for row ``a`` and column ``b``, or ``None``."""
        memo = self.__dict__.get("_pos")  # (a copy of the devices it indexes, the index)
        if memo is None or memo[0] != self.devices:
            pos: Dict[str, int] = {}
            for i, lab in enumerate(self.devices):
                pos.setdefault(lab, i)  # the first occurrence, as list.index finds it
            memo = self.__dict__["_pos"] = (list(self.devices), pos)
        pos = memo[1]
        i, j = pos.get(a), pos.get(b)
        if i is None or j is None:
            return None
        return self.cells[i][j]

    def pairs(self) -> Iterator[Tuple[str, str, Optional[str]]]:
        """Every unordered pair ``(a, b, token)`` above the diagonal."""
        n = len(self.devices)
        for i in range(n):
            for j in range(i + 1, n):
                tok = self.cells[i][j]
                if tok is None:
                    tok = self.cells[j][i]
                yield self.devices[i], self.devices[j], tok

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {
            "devices": list(self.devices),
            "cells": [list(r) for r in self.cells],
            "source": self.source,
        }
        if self.mode is not None:
            d["mode"] = self.mode
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Matrix":
        return cls(
            devices=list(d["devices"]),
            cells=[list(r) for r in d["cells"]],
            source=d.get("source") or "topo-text",
            mode=d.get("mode"),
        )


@dataclass
class NVLinkPair:
    """NVLink count between two GPUs (by index), with its source."""

    a: int
    b: int
    count: int
    source: str = "topo-text"

    def to_dict(self) -> Dict[str, Any]:
        return {"a": self.a, "b": self.b, "count": self.count, "source": self.source}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "NVLinkPair":
        return cls(a=int(d["a"]), b=int(d["b"]), count=int(d["count"]),
                   source=d.get("source") or "topo-text")


@dataclass
class Note:
    """Something a probe wants the user to know: damage, unknown tokens, gaps.

    ``level`` is ``info`` (a gap, e.g. no NIC Legend) or ``warning``
    (something was lost or guessed).  Notes are not findings: checks decide
    what is wrong; notes say what the input did and did not tell.
    """

    code: str
    message: str
    source: str = "topo-text"
    level: str = "info"
    subject: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return _drop_none({"code": self.code, "level": self.level, "message": self.message,
                           "source": self.source, "subject": self.subject})

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Note":
        return cls(code=d["code"], message=d["message"], source=d.get("source") or "",
                   level=d.get("level") or "info", subject=d.get("subject"))


@dataclass
class Disagreement:
    """Two sources said different things about the same fact."""

    subject: str
    fact: str
    values: Dict[str, Any]
    message: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return {"subject": self.subject, "fact": self.fact, "values": dict(self.values),
                "message": self.message}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Disagreement":
        return cls(subject=d["subject"], fact=d["fact"], values=dict(d.get("values") or {}),
                   message=d.get("message") or "")


@dataclass
class Topology:
    """Everything known about one node."""

    gpus: List[GPU] = field(default_factory=list)
    nics: List[NIC] = field(default_factory=list)
    matrix: Optional[Matrix] = None
    p2p: Optional[Matrix] = None
    nvlinks: List[NVLinkPair] = field(default_factory=list)
    #: ``hostname``, ``kernel``, ``time`` ... where known.
    host: Dict[str, Any] = field(default_factory=dict)
    #: Where the facts came from: ``{"kind": "snapshot"|"topo-text"|"live", "file": ...}``.
    origin: Dict[str, Any] = field(default_factory=dict)
    #: Names of the sources that contributed facts, in order.
    sources: List[str] = field(default_factory=list)
    notes: List[Note] = field(default_factory=list)
    disagreements: List[Disagreement] = field(default_factory=list)
    #: Facts later probes add at node level, keyed by source name.
    extra: Dict[str, Any] = field(default_factory=dict)

    # -- lookups -------------------------------------------------------------

    def gpu(self, index: int) -> Optional[GPU]:
        for g in self.gpus:
            if g.index == index:
                return g
        return None

    def nic(self, label_or_name: str) -> Optional[NIC]:
        for n in self.nics:
            if n.label == label_or_name or n.name == label_or_name:
                return n
        return None

    def path(self, a: str, b: str) -> Optional[str]:
        """The path token between two device labels as printed, or ``None``.

        Falls back to the mirrored cell when one direction is unknown.
        """
        if self.matrix is None:
            return None
        tok = self.matrix.get(a, b)
        return tok if tok is not None else self.matrix.get(b, a)

    def nvlink(self, a: int, b: int) -> Optional[int]:
        for p in self.nvlinks:
            if {p.a, p.b} == {a, b}:
                return p.count
        return None

    def numa_nodes(self) -> List[str]:
        """Distinct NUMA affinities of the GPUs, in first-seen order."""
        seen: List[str] = []
        for g in self.gpus:
            if g.numa_affinity is not None and g.numa_affinity not in seen:
                seen.append(g.numa_affinity)
        return seen

    def note(self, code: str, message: str, *, source: str = "topo-text",
             level: str = "info", subject: Optional[str] = None) -> None:
        self.notes.append(Note(code=code, message=message, source=source, level=level,
                               subject=subject))

    # -- combining sources -------------------------------------------------------

    def merge(self, other: "Topology") -> "Topology":
        """Add the facts of another source's fragment to this model, in place.

        A fact this model lacks is taken with its source.  A fact both state
        differently is kept as this model has it and recorded in
        :attr:`disagreements`: sources are never trusted blindly.
        GPUs match by PCI bus id where both sources know it (compared as
        integers), else by index; NICs match by device name.  A GPU one
        source lists and the other does not is a ``presence`` disagreement.
        """
        relabel = self._merge_gpus(other)
        for n in other.nics:
            mine_nic = next((x for x in self.nics if x.name == n.name), None)
            if mine_nic is None:
                self.nics.append(n)
                continue
            for fld in NIC_FACTS:
                _merge_fact(self, mine_nic, n, fld, n.name)
            mine_nic.extra.update(n.extra)
        for attr in ("matrix", "p2p"):
            theirs = getattr(other, attr)
            mine_m = getattr(self, attr)
            if theirs is None:
                continue
            if any(relabel.get(d, d) != d for d in theirs.devices):
                theirs = Matrix(devices=[relabel.get(d, d) for d in theirs.devices],
                                cells=theirs.cells, source=theirs.source, mode=theirs.mode)
            if mine_m is None:
                setattr(self, attr, theirs)
                continue
            # a source that names NICs by device (mlx5_0) is compared with one that
            # labels them NIC0 through the NIC's name
            alias = {n.name: n.label for n in self.nics if n.name != n.label}
            for a, b, tok in theirs.pairs():
                a, b = alias.get(a, a), alias.get(b, b)
                have = mine_m.get(a, b) or mine_m.get(b, a)
                if have is not None and tok is not None and have != tok:
                    self.disagreements.append(Disagreement(
                        subject=f"{a}-{b}", fact="p2p" if attr == "p2p" else "path",
                        values={mine_m.source: have, theirs.source: tok},
                        message=f"{mine_m.source} says {have}, {theirs.source} says {tok}"))
        index_map = {a: b for k, v in relabel.items()
                     if is_ascii_digits(k[3:]) and is_ascii_digits(v[3:])
                     for a, b in [(ascii_int(k[3:]), ascii_int(v[3:]))]
                     if a is not None and b is not None}
        for p in other.nvlinks:
            if index_map:
                p = NVLinkPair(a=index_map.get(p.a, p.a), b=index_map.get(p.b, p.b),
                               count=p.count, source=p.source)
            have_pair = next((q for q in self.nvlinks if {q.a, q.b} == {p.a, p.b}), None)
            if have_pair is None:
                self.nvlinks.append(p)
            elif have_pair.count != p.count and have_pair.source != p.source:
                self.disagreements.append(Disagreement(
                    subject=f"GPU{p.a}-GPU{p.b}", fact="nvlink_count",
                    values={have_pair.source: have_pair.count, p.source: p.count},
                    message=f"{have_pair.source} says NV{have_pair.count}, "
                            f"{p.source} says NV{p.count}"))
        for src in other.sources:
            if src not in self.sources:
                self.sources.append(src)
        for k, v in other.host.items():
            self.host.setdefault(k, v)
        self.notes.extend(other.notes)
        self.disagreements.extend(other.disagreements)
        self.extra.update(other.extra)
        return self

    def _merge_gpus(self, other: "Topology") -> Dict[str, str]:
        """Merge the GPUs of ``other``; returns its labels renamed to this model's."""
        relabel: Dict[str, str] = {}
        by_bdf = {pci_bdf(g.pci_bus_id): g for g in self.gpus if pci_bdf(g.pci_bus_id)}
        matched = set()
        unmatched: List[GPU] = []
        for g in other.gpus:
            key = pci_bdf(g.pci_bus_id)
            if key is not None and by_bdf:
                mine = by_bdf.get(key)
            else:
                mine = self.gpu(g.index)
                if mine is not None and key is not None and pci_bdf(mine.pci_bus_id) not in (None, key):
                    mine = None
            if mine is None or id(mine) in matched:
                unmatched.append(g)
                continue
            matched.add(id(mine))
            relabel[g.label] = mine.label
            for fld in GPU_FACTS:
                _merge_fact(self, mine, g, fld, mine.label)
            mine.extra.update(g.extra)
        mine_src = ", ".join(self.sources) or "model"
        their_src = ", ".join(other.sources) or "other source"
        had_gpus = bool(self.gpus)
        if had_gpus and other.gpus:
            for g in self.gpus:
                if id(g) not in matched:
                    self.disagreements.append(Disagreement(
                        subject=g.label, fact="presence",
                        values={mine_src: "present", their_src: "absent"},
                        message=f"{mine_src} lists {g.label}"
                                + (f" ({g.pci_bus_id})" if g.pci_bus_id else "")
                                + f", {their_src} does not"))
        taken = {g.index for g in self.gpus}
        for g in unmatched:
            where = f" at {g.pci_bus_id}" if g.pci_bus_id else ""
            if had_gpus:
                self.disagreements.append(Disagreement(
                    subject=g.label if not where else f"GPU{where}", fact="presence",
                    values={mine_src: "absent", their_src: "present"},
                    message=f"{their_src} lists {g.label}{where}, {mine_src} does not"))
            if g.index in taken:
                # Its index is another GPU's here: keep it out of the GPU list, and give its
                # matrix row a label of its own.
                relabel[g.label] = f"GPU[{g.pci_bus_id or g.label}]"
                continue
            taken.add(g.index)
            self.gpus.append(g)
        self.gpus.sort(key=lambda x: x.index)
        return relabel

    # -- serialisation ---------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        from . import __version__

        return {
            "schema_version": SCHEMA_VERSION,
            "nvtopo_version": __version__,
            "origin": dict(self.origin),
            "host": dict(self.host),
            "sources": list(self.sources),
            "gpus": [g.to_dict() for g in self.gpus],
            "nics": [n.to_dict() for n in self.nics],
            "matrix": self.matrix.to_dict() if self.matrix else None,
            "p2p": self.p2p.to_dict() if self.p2p else None,
            "nvlinks": [p.to_dict() for p in self.nvlinks],
            "notes": [n.to_dict() for n in self.notes],
            "disagreements": [d.to_dict() for d in self.disagreements],
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Topology":
        """Read a model document back.  Raises ``ValueError`` on a newer schema."""
        version = d.get("schema_version")
        if not isinstance(version, int):
            raise ValueError("model document has no schema_version")
        if version > SCHEMA_VERSION:
            raise ValueError(
                f"model schema version {version} is newer than this nvtopo understands "
                f"({SCHEMA_VERSION}); upgrade nvtopo")
        return cls(
            gpus=[GPU.from_dict(g) for g in d.get("gpus") or []],
            nics=[NIC.from_dict(n) for n in d.get("nics") or []],
            matrix=Matrix.from_dict(d["matrix"]) if d.get("matrix") else None,
            p2p=Matrix.from_dict(d["p2p"]) if d.get("p2p") else None,
            nvlinks=[NVLinkPair.from_dict(p) for p in d.get("nvlinks") or []],
            host=dict(d.get("host") or {}),
            origin=dict(d.get("origin") or {}),
            sources=list(d.get("sources") or []),
            notes=[Note.from_dict(n) for n in d.get("notes") or []],
            disagreements=[Disagreement.from_dict(x) for x in d.get("disagreements") or []],
            extra=dict(d.get("extra") or {}),
        )


_BDF_RE = re.compile(r"^\s*(?:([0-9a-fA-F]{1,8}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})"
                     r"(?:\.([0-7]))?\s*$")


def pci_bdf(bus_id: Any) -> Optional[Tuple[int, int, int, int]]:
    """A PCI bus id as ``(domain, bus, device, function)`` integers, or ``None``.

    NVML (``00000000:1B:00.0``), nvidia-smi and sysfs (``0000:1b:00.0``) spell
    the same device differently; compare these tuples, never the strings.
    """
    if not isinstance(bus_id, str):
        return None
    m = _BDF_RE.match(bus_id)
    if not m:
        return None
    dom, bus, dev, fn = m.groups()
    return (int(dom or "0", 16), int(bus, 16), int(dev, 16), int(fn or "0"))


def _same(fld: str, a: Any, b: Any) -> bool:
    if fld == "pci_bus_id" and pci_bdf(a) is not None and pci_bdf(b) is not None:
        return pci_bdf(a) == pci_bdf(b)
    return bool(a == b)


def _merge_fact(topo: Topology, mine: Any, theirs: Any, fld: str, subject: str) -> None:
    """Take ``theirs.fld`` where ``mine`` lacks it; record a disagreement where both differ."""
    new = getattr(theirs, fld)
    src = theirs.sources.get(fld)
    if src is None:
        return
    old = getattr(mine, fld)
    if fld not in mine.sources or (old is None and new is not None):
        setattr(mine, fld, new)
        mine.sources[fld] = src
    elif new is not None and not _same(fld, old, new):
        topo.disagreements.append(Disagreement(
            subject=subject, fact=fld, values={mine.sources[fld]: old, src: new},
            message=f"{mine.sources[fld]} says {old!r}, {src} says {new!r}"))
