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

from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from .codec import Record, decode, encoder, fld, record
from ..safe import ascii_int, is_ascii_digits
from .core import GPU, GPU_FACTS, NIC, NIC_FACTS, Disagreement, Matrix, Note, NVLinkPair
from .host import Host, HostNet, Origin, host_problems
from .net import WgNode
from .vocab import path_kind, path_rank, pci_bdf
from .node import SysfsNode, TopoText
from .nvml import NvmlNode, TextNode
from .nccl import NcclLog, NcclTests, NcclTopo
from .storage import GdsCheck
from .events import KernelLog
from .imex import ImexNode

#: Version of the JSON document written by :meth:`Topology.to_dict`.
SCHEMA_VERSION = 1


def _lookup(topo: Any, slot: str, items: List[Any], keys: Any) -> Dict[Any, int]:
    """Position of the first item of each key in ``items`` (one of ``topo``'s lists), built
    once and kept in ``topo.__dict__[slot]`` beside the fields (never encoded or compared);
    built anew when the list is another one or its length changed."""
    memo = topo.__dict__.get(slot)
    if memo is not None and memo[0] is items and memo[1] == len(items):
        return memo[2]
    pos: Dict[Any, int] = {}
    for i, item in enumerate(items):
        for key in keys(item):
            pos.setdefault(key, i)
    topo.__dict__[slot] = (items, len(items), pos)
    return pos


@record
class Topology(Record):
    """Everything known about one node."""

    __json_order__ = ("origin", "host", "sources", "gpus", "nics", "matrix", "p2p", "nvlinks",
                      "notes", "disagreements", "extra", "topo_text", "nvml",
                      "nvml_text", "sysfs", "host_net", "wireguard", "gds_text", "nccl_log", "nccl_tests", "nccl_topo",
                      "kernel_log", "imex")

    gpus: List[GPU] = fld(factory=list)
    nics: List[NIC] = fld(factory=list)
    matrix: Optional[Matrix] = None
    p2p: Optional[Matrix] = None
    nvlinks: List[NVLinkPair] = fld(factory=list)
    #: ``hostname``, ``kernel``, ``time`` ... where known (other keys a snapshot holds kept).
    host: Host = fld(factory=Host)
    #: Where the facts came from: ``kind`` (snapshot, topo-text, live ...), ``file`` ...
    origin: Origin = fld("set where the model is read", factory=Origin, missing=True)
    #: Names of the sources that contributed facts, in order.
    sources: List[str] = fld(factory=list)
    notes: List[Note] = fld(factory=list)
    disagreements: List[Disagreement] = fld(factory=list)
    #: Keys under ``extra`` this nvtopo does not know, kept as read.
    extra: Dict[str, Any] = fld(factory=dict)
    topo_text: Optional[TopoText] = fld("nvidia-smi topo -m / -p2p", key="topo-text",
                                        nest="extra", omit="none")
    nvml: Optional[NvmlNode] = fld("the NVML probe", nest="extra", omit="none")
    nvml_text: Optional[TextNode] = fld("pasted nvidia-smi nvlink / -q text", key="nvml-text",
                                        nest="extra", omit="none")
    sysfs: Optional[SysfsNode] = fld("sysfs", nest="extra", omit="none")
    host_net: Optional[HostNet] = fld("the host probe (psutil)", key="host", nest="extra",
                                      omit="none")
    wireguard: Optional[WgNode] = fld("the wireguard probe (wg show, /proc/net/route)",
                                      nest="extra", omit="none")
    gds_text: Optional[GdsCheck] = fld("pasted gdscheck -p (docs/storage.md)", key="gds-text",
                                       nest="extra", omit="none")
    nccl_log: Optional[NcclLog] = fld("a pasted NCCL debug log (docs/nccl.md)", key="nccl-log",
                                      nest="extra", omit="none")
    nccl_tests: Optional[NcclTests] = fld("pasted nccl-tests output (docs/nccl.md)",
                                          key="nccl-tests", nest="extra", omit="none")
    nccl_topo: Optional[NcclTopo] = fld("NCCL's topology XML (docs/nccl.md)", key="nccl-topo",
                                        nest="extra", omit="none")
    kernel_log: Optional[KernelLog] = fld("pasted kernel log (docs/events.md)",
                                          key="kernel-log", nest="extra", omit="none")
    imex: Optional[ImexNode] = fld("nvidia-imex-ctl: the IMEX domain (docs/imex.md)",
                                   nest="extra", omit="none")

    # -- lookups -------------------------------------------------------------

    def gpu(self, index: int) -> Optional[GPU]:
        """The first GPU of that index (indexed: O(1) a lookup)."""
        gpus = self.gpus
        i = _lookup(self, "_gpu_index", gpus, lambda g: (g.index,)).get(index)
        if i is not None and gpus[i].index == index:
            return gpus[i]
        for g in gpus:  # absent, or an index changed in place since the index was built
            if g.index == index:
                return g
        return None

    def nic(self, label_or_name: str) -> Optional[NIC]:
        """The first NIC of that label or name (indexed: O(1) a lookup; a linear scan here
        inside the checks' per-GPU NIC searches made them grow as N^3)."""
        nics = self.nics
        i = _lookup(self, "_nic_index", nics, lambda n: (n.label, n.name)).get(label_or_name)
        if i is not None and label_or_name in (nics[i].label, nics[i].name):
            return nics[i]
        for n in nics:  # absent, or renamed in place since the index was built
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

    def numa_node_ids(self) -> List[int]:
        """The NUMA nodes the GPUs' affinities name (``0``, ``0-3``, ``0,2``), sorted, each
        once; ``[]`` where any affinity is not such a list (then only the strings
        :meth:`numa_nodes` gives are known)."""
        from ..safe import ascii_int

        nodes: Set[int] = set()
        for aff in self.numa_nodes():
            for part in aff.split(","):
                lo, sep, hi = part.strip().partition("-")
                a = ascii_int(lo, hi=65535)
                b = ascii_int(hi, hi=65535) if sep else a
                if a is None or b is None or b < a or b - a > 4096:
                    return []
                nodes.update(range(a, b + 1))
        return sorted(nodes)

    def note(self, code: str, message: str, *, source: str = "topo-text",
             level: str = "info", subject: Optional[str] = None) -> None:
        self.notes.append(Note(code=code, message=message, source=source, level=level,
                               subject=subject))

    # -- questions every reader asks the same way ------------------------------------------

    @property
    def nvswitch(self) -> Optional[bool]:
        """Whether the GPUs' NVLinks go through NVSwitches: NVML's answer where NVML read the
        GPUs (links to a switch, or switch-connected links counted); else, from the pair
        counts, ``True`` when more than four GPUs are all NVLinked to each other (no direct
        mesh links every pair of more than four GPUs); else ``None`` (unknown)."""
        if self.nvml is not None and self.nvml.nvswitch is not None:
            return self.nvml.nvswitch
        indexes = sorted({g.index for g in self.gpus})
        if len(indexes) <= 4:
            return None
        linked = {(min(p.a, p.b), max(p.a, p.b)) for p in self.nvlinks if p.count > 0}
        if all((a, b) in linked for i, a in enumerate(indexes) for b in indexes[i + 1:]):
            return True
        return None

    def gpu_nic_path(self, gpu: int, nic_name: str) -> Tuple[Optional[str], str]:
        """The path token between GPU ``gpu`` (by index) and the NIC named ``nic_name``, and
        the source that states it: the path matrix (by the NIC's label, else its name), else
        sysfs's PCI-tree path of the NIC.  ``(None, "")`` where neither says."""
        nic = self.nic(nic_name)
        if nic is None:
            return None, ""
        return self._nic_path(f"GPU{gpu}", nic, self.matrix.get if self.matrix else None)

    def gpu_nic_paths(self, gpus: Sequence[int]) -> Dict[Tuple[int, str], Tuple[Optional[str], str]]:
        """:meth:`gpu_nic_path` of each of ``gpus`` and each NIC's name, all at once (the
        NIC looked up once a name, the matrix's label index read once)."""
        out: Dict[Tuple[int, str], Tuple[Optional[str], str]] = {}
        get = self.matrix.cell_getter() if self.matrix is not None else None
        labels = [(g, f"GPU{g}") for g in gpus]
        for n in self.nics:
            nic = self.nic(n.name)
            if nic is None:  # (a NIC finds itself by name)
                continue
            for g, label in labels:
                out[(g, n.name)] = self._nic_path(label, nic, get)
        return out

    def _nic_path(self, label: str, nic: NIC, get: Any) -> Tuple[Optional[str], str]:
        """:meth:`gpu_nic_path` of the GPU labelled ``label`` and ``nic`` (``get``: the
        matrix's cell lookup, or None without a matrix): the cell, else its mirror, by the
        NIC's label then its name, else sysfs's PCI path."""
        tok = None
        if get is not None:
            for k in (nic.label,) if nic.label == nic.name else (nic.label, nic.name):
                tok = get(label, k)
                if tok is None:
                    tok = get(k, label)
                if tok is not None:
                    break
        if tok is not None and path_kind(tok) is not None:
            return tok, self.matrix.source if self.matrix is not None else ""
        t = nic.sysfs.gpu_paths.get(label) if nic.sysfs is not None else None
        return (t, "sysfs") if t is not None else (None, "")

    def nearest_nics(self, gpu: int, names: Optional[List[str]] = None
                     ) -> Tuple[List[str], Optional[str]]:
        """The NICs (of ``names``, else all, in that order) at the shortest path from GPU
        ``gpu``, and that path's token (the first's); ``([], None)`` where no path is
        known."""
        best: List[str] = []
        best_tok: Optional[str] = None
        best_rank: Optional[int] = None
        for name in (names if names is not None else [n.name for n in self.nics]):
            tok, _ = self.gpu_nic_path(gpu, name)
            rank = path_rank(tok)
            if rank is None or rank == 0:
                continue
            if best_rank is None or rank < best_rank:
                best, best_tok, best_rank = [name], tok, rank
            elif rank == best_rank:
                best.append(name)
        return best, best_tok

    def nearest_compute_nic(self, gpu: int, compute: List[str]
                            ) -> Optional[Tuple[str, str]]:
        """The nearest of the compute NICs ``compute`` to GPU ``gpu``: ``(name, token)``."""
        names, tok = self.nearest_nics(gpu, compute)
        return (names[0], tok) if names and tok is not None else None

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
        _merge(self, other)
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
        if type(d.get("nvtopo_version")) is not str:
            raise ValueError(f"{root}.nvtopo_version: expected text, got "
                             f"{d.get('nvtopo_version', 'nothing')!r:.60}")
        body = {k: v for k, v in d.items() if k not in ("schema_version", "nvtopo_version")}
        topo = decode(cls, body, root)
        bad = host_problems(topo.host.to_dict())
        if bad:
            raise ValueError(f"{root}.{bad[0]}")
        return topo

    @classmethod
    def from_rows(cls, row: Any, root: str = "$") -> "Topology":
        """The model from its rows (:mod:`.rows`: the sealed cache's form, of this schema
        and nvtopo version), as strictly as :meth:`from_dict` reads the JSON form."""
        from .rows import decode_rows

        topo = decode_rows(cls, row, root)
        bad = host_problems(topo.host.to_dict())
        if bad:
            raise ValueError(f"{root}: {bad[0]}")
        return topo

    @classmethod
    def rows_from_dict(cls, d: Any) -> Any:
        """The rows a model's JSON form stands for, no type checked (tools and tests: see
        :func:`.rows.rows_from_json`); a header :meth:`from_dict` refuses gives a row of
        the wrong length."""
        from .rows import rows_from_json

        if not isinstance(d, dict):
            return d
        row = rows_from_json(cls, {k: v for k, v in d.items()
                                   if k not in ("schema_version", "nvtopo_version")})
        version = d.get("schema_version")
        if type(version) is not int or version > SCHEMA_VERSION \
                or type(d.get("nvtopo_version")) is not str:
            row.append("(a header from_dict refuses)")
        return row


# --- how a source's fragment merges into the model (Topology.merge) ---------------------
#
# GPUs match by PCI bus id where both sources know it (compared as integers), else by index;
# NICs by device name.  A fact the model lacks is taken with its source; one both state
# differently stays as the model has it and becomes a disagreement.  Sources number GPUs
# differently (sysfs in PCI order, NVML by its own index): every fact of the fragment that
# names GPUs (matrix rows, NVLink pairs, an HCA's and an NVMe drive's paths to GPUs, sysfs's
# bus id map) is renamed to the model's GPUs on the way in.  Pairs, GPUs and NICs are looked
# up through indexes, so merging a 144-GPU domain stays linear in its pairs.  (Here, not in a
# module of its own: the merge reads the Topology, and the Topology's merge calls it.)

#: Per-source records of a GPU, a NIC and the node: a fragment's replaces the model's.
GPU_RECORDS = ("nvml", "nvml_text", "sysfs")
NIC_RECORDS = ("affinity", "sysfs")
NODE_RECORDS = ("topo_text", "nvml", "nvml_text", "sysfs", "host_net", "wireguard",
                "gds_text", "nccl_log", "nccl_tests", "nccl_topo", "kernel_log", "imex")
#: Sources whose text may be an excerpt (some GPUs only): a GPU they do not name is not
#: absent, so their silence is never a ``presence`` disagreement.
PARTIAL_SOURCES = ("nvml-text",)


def _merge(self: Topology, other: Topology) -> None:
    relabel = _merge_gpus(self, other)
    rename = {k: v for k, v in relabel.items() if k != v}
    if rename:  # sysfs names GPUs in PCI order: name them as this model does
        for n in other.nics:
            if n.sysfs is not None:
                n.sysfs.relabel(rename)
        if other.sysfs is not None:
            other.sysfs.relabel(rename)
    by_name: Dict[str, NIC] = {}
    for x in self.nics:
        by_name.setdefault(x.name, x)
    for n in other.nics:
        mine_nic = by_name.get(n.name)
        if mine_nic is None:
            self.nics.append(n)
            by_name[n.name] = n
            continue
        for fact in NIC_FACTS:
            _merge_fact(self, mine_nic, n, fact, n.name)
        _take(mine_nic, n, NIC_RECORDS)
    for attr in ("matrix", "p2p"):
        _merge_matrix(self, other, attr, relabel)
    index_map = {a: b for k, v in relabel.items()
                 if is_ascii_digits(k[3:]) and is_ascii_digits(v[3:])
                 for a, b in [(ascii_int(k[3:]), ascii_int(v[3:]))]
                 if a is not None and b is not None}
    have: Dict[Tuple[int, int], NVLinkPair] = {}
    for q in self.nvlinks:
        have.setdefault((min(q.a, q.b), max(q.a, q.b)), q)
    for p in other.nvlinks:
        if index_map:
            p = NVLinkPair(a=index_map.get(p.a, p.a), b=index_map.get(p.b, p.b),
                           count=p.count, source=p.source)
        key = (min(p.a, p.b), max(p.a, p.b))
        have_pair = have.get(key)
        if have_pair is None:
            self.nvlinks.append(p)
            have[key] = p
        elif have_pair.count != p.count and have_pair.source != p.source:
            self.disagreements.append(Disagreement(
                subject=f"GPU{p.a}-GPU{p.b}", fact="nvlink_count",
                values={have_pair.source: have_pair.count, p.source: p.count},
                message=f"{have_pair.source} says NV{have_pair.count}, "
                        f"{p.source} says NV{p.count}"))
    for src in other.sources:
        if src not in self.sources:
            self.sources.append(src)
    self.host.fill(other.host)
    self.notes.extend(other.notes)
    self.disagreements.extend(other.disagreements)
    _take(self, other, NODE_RECORDS)


def _take(mine: Any, theirs: Any, attrs: Tuple[str, ...]) -> None:
    """The fragment's per-source records (and its unknown ``extra`` keys) replace this
    model's."""
    for attr in attrs:
        value = getattr(theirs, attr, None)
        if value is not None:
            setattr(mine, attr, value)
    mine.extra.update(theirs.extra)


def _merge_matrix(self: Topology, other: Topology, attr: str,
                  relabel: Dict[str, str]) -> None:
    theirs = getattr(other, attr)
    mine_m = getattr(self, attr)
    if theirs is None:
        return
    if any(relabel.get(d, d) != d for d in theirs.devices):
        theirs = Matrix(devices=[relabel.get(d, d) for d in theirs.devices],
                        cells=theirs.cells, source=theirs.source, mode=theirs.mode)
    if mine_m is None:
        setattr(self, attr, theirs)
        return
    # a source that names NICs by device (mlx5_0) is compared with one that labels them NIC0
    # through the NIC's name
    alias = {n.name: n.label for n in self.nics if n.name != n.label}
    for a, b, tok in theirs.pairs():
        a, b = alias.get(a, a), alias.get(b, b)
        have = mine_m.get(a, b) or mine_m.get(b, a)
        if have is not None and tok is not None and have != tok:
            self.disagreements.append(Disagreement(
                subject=f"{a}-{b}", fact="p2p" if attr == "p2p" else "path",
                values={mine_m.source: have, theirs.source: tok},
                message=f"{mine_m.source} says {have}, {theirs.source} says {tok}"))


def _merge_gpus(self: Topology, other: Topology) -> Dict[str, str]:
    """Merge the GPUs of ``other``; returns its labels renamed to this model's."""
    relabel: Dict[str, str] = {}
    by_bdf = {pci_bdf(g.pci_bus_id): g for g in self.gpus if pci_bdf(g.pci_bus_id)}
    by_index: Dict[int, GPU] = {}
    for g in self.gpus:
        by_index.setdefault(g.index, g)
    matched = set()
    unmatched: List[GPU] = []
    for g in other.gpus:
        key = pci_bdf(g.pci_bus_id)
        if key is not None and by_bdf:
            mine = by_bdf.get(key)
        else:
            mine = by_index.get(g.index)
            if mine is not None and key is not None and pci_bdf(mine.pci_bus_id) not in (None,
                                                                                         key):
                mine = None
        if mine is None or id(mine) in matched:
            unmatched.append(g)
            continue
        matched.add(id(mine))
        relabel[g.label] = mine.label
        for fact in GPU_FACTS:
            _merge_fact(self, mine, g, fact, mine.label)
        _take(mine, g, GPU_RECORDS)
    mine_src = ", ".join(self.sources) or "model"
    their_src = ", ".join(other.sources) or "other source"
    had_gpus = bool(self.gpus)
    if had_gpus and other.gpus and not set(other.sources) <= set(PARTIAL_SOURCES):
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
        if had_gpus and not set(self.sources) <= set(PARTIAL_SOURCES):
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


def _same(fact: str, a: Any, b: Any) -> bool:
    if fact == "pci_bus_id" and pci_bdf(a) is not None and pci_bdf(b) is not None:
        return pci_bdf(a) == pci_bdf(b)
    return bool(a == b)


def _merge_fact(topo: Topology, mine: Any, theirs: Any, fact: str, subject: str) -> None:
    """Take ``theirs.fact`` where ``mine`` lacks it; record a disagreement where both differ."""
    new = getattr(theirs, fact)
    src = theirs.sources.get(fact)
    if src is None:
        return
    old = getattr(mine, fact)
    if fact not in mine.sources or (old is None and new is not None):
        setattr(mine, fact, new)
        mine.sources[fact] = src
    elif new is not None and not _same(fact, old, new):
        topo.disagreements.append(Disagreement(
            subject=subject, fact=fact, values={mine.sources[fact]: old, src: new},
            message=f"{mine.sources[fact]} says {old!r}, {src} says {new!r}"))


__all__ = ["SCHEMA_VERSION", "Topology"]
