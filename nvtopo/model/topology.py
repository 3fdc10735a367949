"""The topology of one node: every fact nvtopo knows about it, with the source that stated it,
and how fragments of several sources merge into one.

Probes add facts to a :class:`Topology`; renderers and checks only read it.  Every fact
carries the name of the source it came from (``topo-text``, ``nvml``, ``nvml-text``,
``sysfs``, ``host``) so that disagreements between sources can be reported instead of
silently resolved.  The model serialises to plain JSON (:meth:`Topology.to_dict`) with a
schema version, and reads back strictly (:meth:`Topology.from_dict`).

"Unknown" is always ``None`` (JSON ``null``); it is never a fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .codec import Record, decode, encoder, fld
from .core import GPU, NIC, Disagreement, Matrix, Note, NVLinkPair
from .host import HostNet, host_problems
from .node import SysfsNode, TopoText
from .nvml import NvmlNode, TextNode

#: Version of the JSON document written by :meth:`Topology.to_dict`.
SCHEMA_VERSION = 1


@dataclass
class Topology(Record):
    """Everything known about one node."""

    __json_order__ = ("origin", "host", "sources", "gpus", "nics", "matrix", "p2p", "nvlinks",
                      "notes", "disagreements", "extra", "topo_text", "nvml",
                      "nvml_text", "sysfs", "host_net")

    gpus: List[GPU] = field(default_factory=list)
    nics: List[NIC] = field(default_factory=list)
    matrix: Optional[Matrix] = None
    p2p: Optional[Matrix] = None
    nvlinks: List[NVLinkPair] = field(default_factory=list)
    #: ``hostname``, ``kernel``, ``time`` ... where known (other keys a snapshot holds kept).
    host: Dict[str, Any] = field(default_factory=dict)
    #: Where the facts came from: ``{"kind": "snapshot"|"topo-text"|"live", "file": ...}``.
    origin: Dict[str, Any] = fld("set where the model is read", factory=dict, missing=True)
    #: Names of the sources that contributed facts, in order.
    sources: List[str] = field(default_factory=list)
    notes: List[Note] = field(default_factory=list)
    disagreements: List[Disagreement] = field(default_factory=list)
    #: Keys under ``extra`` this nvtopo does not know, kept as read.
    extra: Dict[str, Any] = field(default_factory=dict)
    topo_text: Optional[TopoText] = fld("nvidia-smi topo -m / -p2p", key="topo-text",
                                        nest="extra", omit="none")
    nvml: Optional[NvmlNode] = fld("the NVML probe", nest="extra", omit="none")
    nvml_text: Optional[TextNode] = fld("pasted nvidia-smi nvlink / -q text", key="nvml-text",
                                        nest="extra", omit="none")
    sysfs: Optional[SysfsNode] = fld("sysfs", nest="extra", omit="none")
    host_net: Optional[HostNet] = fld("the host probe (psutil)", key="host", nest="extra",
                                      omit="none")

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
        Every fact the fragment names GPUs in (matrix rows, NVLink pairs, an HCA's
        and an NVMe drive's paths to GPUs, sysfs's bus id map) is renamed to this
        model's GPUs.
        """
        from .merge import merge

        merge(self, other)
        return self

    # -- serialisation ---------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        from .. import __version__

        d = {"schema_version": SCHEMA_VERSION, "nvtopo_version": __version__}
        d.update(encoder(Topology)(self))
        return d

    @classmethod
    def from_dict(cls, d: Any, root: str = "$") -> "Topology":
        """Read a model document back, strictly: ``ValueError`` naming the path on a value of
        the wrong type, a missing or unknown key, or a newer schema.  Keys under an ``extra``
        this nvtopo does not know are kept (the ``extra`` attributes)."""
        if not isinstance(d, dict):
            raise ValueError(f"{root}: expected an object (the model), got {type(d).__name__}")
        version = d.get("schema_version")
        if type(version) is not int:
            raise ValueError("model document has no schema_version")
        if version > SCHEMA_VERSION:
            raise ValueError(
                f"model schema version {version} is newer than this nvtopo understands "
                f"({SCHEMA_VERSION}); upgrade nvtopo")
        if not isinstance(d.get("nvtopo_version", ""), str):
            raise ValueError(f"{root}.nvtopo_version: expected text")
        body = {k: v for k, v in d.items() if k not in ("schema_version", "nvtopo_version")}
        topo = decode(cls, body, root)
        bad = host_problems(topo.host)
        if bad:
            raise ValueError(f"{root}.{bad[0]}")
        return topo


__all__ = ["SCHEMA_VERSION", "Topology"]
