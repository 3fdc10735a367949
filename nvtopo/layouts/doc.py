"""A layout document as typed records, decoded strictly by the model's codec.

Every section and key is optional (absent or ``null``: no expectation); a key this nvtopo
does not know, or a value of the wrong JSON type, is an error naming its path
(``$.nics.compute.rate_gbps: expected int or float or null, got '400'``).  What the codec
cannot say (hardware bounds, patterns that must compile, GPU pairs) :func:`check_bounds`
says, in the same style.  A section the document leaves out reads as an empty section
(every key ``None``), so a check asks ``layout.numa.gpu_node`` without asking first whether
the section is there; :attr:`Section.stated` says whether it states anything.

Evidence: each section may carry an ``evidence`` string of tags (``[S: key]`` stated by a
vendor, ``[O: key]`` observed, ``[I]`` inferred); :meth:`Section.inferred` says whether an
expectation rests on inference alone (a warning, never a failure).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple, Union

from ..model.codec import Record, fields, fld, record

#: The path levels a layout may state (``nvidia-smi topo -m`` tokens, nearest first).
PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")
LINK_LAYERS = ("InfiniBand", "Ethernet")


def _names_word(text: str, words: str) -> bool:
    """``words`` stand in ``text`` as whole words (no letter, digit or ``_`` either side);
    a plain scan, no pattern built from data."""
    at = text.find(words)
    while at >= 0:
        end = at + len(words)
        if (at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")) and \
                (end == len(text) or not (text[end].isalnum() or text[end] == "_")):
            return True
        at = text.find(words, at + 1)
    return False


def _only_inferred(evidence: str) -> bool:
    tags = re.findall(r"\[([SOI])\b", evidence)
    return bool(tags) and set(tags) == {"I"}


class Section(Record):
    """A layout section: its keys, and the evidence that states them."""

    evidence: Optional[str]

    @property
    def stated(self) -> bool:
        """The section states something (any key, evidence included, not null)."""
        return any(self.__dict__[f.name] is not None and not (
            isinstance(self.__dict__[f.name], Section) and not self.__dict__[f.name].stated)
            for f in fields(self))

    def inferred(self, key: Optional[str] = None) -> bool:
        """The expectations of this section (or of its ``key``) rest on ``[I]`` alone:
        warn, never fail.  A subsection ``key`` is judged by its own evidence where it has
        some, else by this section's; a plain ``key`` also when this section's evidence
        says ``I for KEY`` (``[S: CSCS; I for links_per_gpu: ...]``)."""
        ev = self.evidence or ""
        sub = getattr(self, key) if key is not None else None
        if isinstance(sub, Section):
            return _only_inferred(sub.evidence or ev)
        if _only_inferred(ev):
            return True
        return key is not None and _names_word(ev, "I for " + key)


def _opt() -> Any:
    return fld(missing=True)


@record
class Pcie(Section):
    gen: Optional[int] = _opt()
    width: Optional[int] = _opt()
    evidence: Optional[str] = _opt()


@record
class Gpus(Section):
    count: Optional[int] = _opt()
    #: regular expression, case-insensitive, searched in the GPU name.
    name_pattern: Optional[str] = _opt()
    pcie: Pcie = fld(missing=True, factory=Pcie)
    evidence: Optional[str] = _opt()

    def __post_init__(self) -> None:
        if self.pcie is None:
            self.pcie = Pcie()


@record
class Nvlink(Section):
    generation: Optional[str] = _opt()
    links_per_gpu: Optional[int] = _opt()
    nvswitch: Optional[bool] = _opt()
    nvswitch_count: Optional[int] = _opt()
    #: NV# expected for every GPU pair.
    pair_count: Optional[int] = _opt()
    #: NV# per pair (``"0-1": 2``); pairs not listed have none; ``{}``: no NVLink at all.
    pairs: Optional[Dict[str, int]] = _opt()
    fabric: Optional[bool] = _opt()
    error_thresholds: Optional[Dict[str, int]] = _opt()
    evidence: Optional[str] = _opt()

    def pair_map(self) -> Dict[Tuple[int, int], int]:
        """``pairs`` as (lower GPU, higher GPU) -> NV# (empty when not stated)."""
        out: Dict[Tuple[int, int], int] = {}
        for key, c in (self.pairs or {}).items():
            a, _, b = key.partition("-")
            x, y = int(a), int(b)
            out[(min(x, y), max(x, y))] = c
        return out


@record
class Compute(Section):
    count: Optional[int] = _opt()
    rate_gbps: Optional[Union[int, float]] = _opt()
    link_layer: Optional[str] = _opt()
    #: the compute NICs' RDMA device names.
    names: Optional[List[str]] = _opt()
    evidence: Optional[str] = _opt()


@record
class Placement(Section):
    gpu_to_nearest_compute_nic: Optional[str] = _opt()
    gpus_per_compute_nic: Optional[int] = _opt()
    #: GPU index -> its compute NIC (or NICs) by RDMA name, as the document writes it.
    gpu_nic: Optional[Dict[str, Any]] = _opt()
    evidence: Optional[str] = _opt()

    @property
    def port_map(self) -> Optional[Dict[int, List[str]]]:
        """``gpu_nic`` as GPU index -> NIC names (``None``: no port map stated)."""
        if self.gpu_nic is None:
            return None
        return {int(k): ([v] if isinstance(v, str) else list(v))
                for k, v in self.gpu_nic.items()}

    @property
    def port_names(self) -> List[str]:
        """Every NIC name the port map gives, in GPU order as written."""
        out: List[str] = []
        for v in (self.gpu_nic or {}).values():
            out.extend([v] if isinstance(v, str) else v)
        return out


@record
class PerGpu(Section):
    path: Optional[str] = _opt()
    evidence: Optional[str] = _opt()


@record
class Nics(Section):
    compute: Compute = fld(missing=True, factory=Compute)
    placement: Placement = fld(missing=True, factory=Placement)
    #: each GPU should have a compute NIC of its own at ``path`` or closer.
    per_gpu: Optional[PerGpu] = _opt()
    gpudirect_rdma: Optional[bool] = _opt()
    error_thresholds: Optional[Dict[str, int]] = _opt()
    evidence: Optional[str] = _opt()

    @property
    def facts_stated(self) -> bool:
        """The section states NIC facts beyond ``per_gpu`` (a reference design's rule)."""
        return (self.compute.stated or self.placement.stated or self.gpudirect_rdma is not None
                or self.error_thresholds is not None or self.evidence is not None)

    def __post_init__(self) -> None:
        if self.compute is None:
            self.compute = Compute()
        if self.placement is None:
            self.placement = Placement()


@record
class Numa(Section):
    nodes_with_gpus: Optional[int] = _opt()
    #: GPU index -> NUMA node, as the document writes it.
    gpu_numa: Optional[Dict[str, int]] = _opt()
    evidence: Optional[str] = _opt()

    @property
    def gpu_node(self) -> Optional[Dict[int, int]]:
        """GPU index -> NUMA node (``None``: no map stated)."""
        if self.gpu_numa is None:
            return None
        return {int(k): v for k, v in self.gpu_numa.items()}


@record
class C2c(Section):
    enabled: Optional[bool] = _opt()
    links_per_gpu: Optional[int] = _opt()
    gpu_memory_numa: Optional[bool] = _opt()
    evidence: Optional[str] = _opt()


@record
class Gds(Section):
    expected: Optional[bool] = _opt()
    data_path: Optional[str] = _opt()
    drives_per_switch: Optional[int] = _opt()
    evidence: Optional[str] = _opt()


@record
class Storage(Section):
    os_drives: Optional[int] = _opt()
    data_drives: Optional[int] = _opt()
    evidence: Optional[str] = _opt()
    gds: Optional[Gds] = _opt()


@record
class Choice(Section):
    """How ``--layout auto`` treats the layout (the document's ``selection``)."""

    family: Optional[str] = _opt()
    priority: Optional[int] = _opt()
    auto: Optional[bool] = _opt()
    requires_nic_names: Optional[bool] = _opt()
    #: auto only where the node's GPU names (or PCI device ids) are known and match
    #: ``gpus.name_pattern`` (a PCIe-only server: its shape alone says nothing).
    requires_gpu_name: Optional[bool] = _opt()
    evidence: Optional[str] = _opt()


@record
class Domain(Section):
    """The multi-node NVLink domain one node of this layout belongs to."""

    #: nodes per NVLink domain (GB200 NVL72: 18 compute trays).
    nodes: Optional[int] = _opt()
    evidence: Optional[str] = _opt()


@record
class Figure(Section):
    """One bandwidth the layout's links allow, in GB/s, with its evidence."""

    gbs: Optional[Union[int, float]] = _opt()
    evidence: Optional[str] = _opt()


@record
class Bandwidth(Section):
    """What the layout's links allow NCCL (``expected_bandwidth``): nccl-tests' all-reduce bus
    bandwidth inside one node, and one compute NIC's network bandwidth (docs/nccl.md)."""

    allreduce_busbw: Figure = fld(missing=True, factory=Figure)
    nic: Figure = fld(missing=True, factory=Figure)
    evidence: Optional[str] = _opt()

    def __post_init__(self) -> None:
        if self.allreduce_busbw is None:
            self.allreduce_busbw = Figure()
        if self.nic is None:
            self.nic = Figure()


_SECTIONS = {"gpus": Gpus, "nvlink": Nvlink, "nics": Nics, "numa": Numa, "c2c": C2c,
             "storage": Storage, "selection": Choice, "domain": Domain,
             "expected_bandwidth": Bandwidth}


@record
class LayoutDoc(Record):
    """A whole layout document."""

    schema: int
    name: str
    title: Optional[str] = _opt()
    description: Optional[str] = _opt()
    sources: Optional[Dict[str, str]] = _opt()
    selection: Choice = fld(missing=True, factory=Choice)
    gpus: Gpus = fld(missing=True, factory=Gpus)
    nvlink: Nvlink = fld(missing=True, factory=Nvlink)
    nics: Nics = fld(missing=True, factory=Nics)
    numa: Numa = fld(missing=True, factory=Numa)
    c2c: C2c = fld(missing=True, factory=C2c)
    storage: Storage = fld(missing=True, factory=Storage)
    domain: Domain = fld(missing=True, factory=Domain)
    expected_bandwidth: Bandwidth = fld(missing=True, factory=Bandwidth)

    def __post_init__(self) -> None:
        d = self.__dict__
        for key, cls in _SECTIONS.items():  # (null: not stated, as absent)
            if d[key] is None:
                d[key] = cls()


def copy_section(sec: Any, **changes: Any) -> Any:
    """A shallow copy of a record with ``changes``."""
    d = {f.name: sec.__dict__[f.name] for f in fields(sec)}
    d.update(changes)
    return type(sec)(**d)


# --- what the codec cannot say: hardware bounds, patterns, GPU pairs --------------------------

#: The fastest NIC port is 1.6 Tb/s; no layout states one past this (Gb/s).
MAX_RATE_GBPS = 100_000
#: ``selection.priority`` is a tie-break among a few dozen layouts.
MAX_PRIORITY = 1_000_000
#: NUMA node numbers are below this (Linux's largest ``NODES_SHIFT``, 10).
MAX_NUMA_NODES = 1024
#: Error thresholds are compared with counters of at most 64 bits.
MAX_COUNTER = 2 ** 64 - 1


def hardware_limits() -> Dict[str, Tuple[int, str]]:
    """Every integer a layout states -> (the largest it may be, why): what hardware can have,
    by the bounds the probes read it with (a layout past them describes no node, and a count
    of 10**30 would be built GPU by GPU by ``simulate``)."""
    from ..probes.nvml.vocab import MAX_C2C_LINKS, MAX_GPUS, MAX_LINKS
    from ..probes.sysfs.nvme import MAX_CTRLS
    from ..probes.sysfs.parse import PCIE_GEN
    from ..probes.sysfs.walk import MAX_DEVICES

    gpus = (MAX_GPUS, "no node has more GPUs")
    links = (MAX_LINKS, "no GPU has more NVLinks")
    drives = (MAX_CTRLS, "no node has more NVMe controllers")
    devices = (MAX_DEVICES, "PCI devices of one kind a node has")
    return {
        "gpus.count": gpus,
        "gpus.pcie.gen": (2 * max(PCIE_GEN.values()),
                          f"PCIe has {max(PCIE_GEN.values())} generations, with room for more"),
        "gpus.pcie.width": (32, "PCIe links are at most x32"),
        "nvlink.links_per_gpu": links,
        "nvlink.pair_count": links,
        "nvlink.nvswitch_count": devices,
        "nics.compute.count": devices,
        "nics.placement.gpus_per_compute_nic": gpus,
        "numa.nodes_with_gpus": (MAX_NUMA_NODES, "Linux's most NUMA nodes"),
        "c2c.links_per_gpu": (MAX_C2C_LINKS, "no GPU has more NVLink-C2C links"),
        "storage.os_drives": drives,
        "storage.data_drives": drives,
        "storage.gds.drives_per_switch": drives,
        "domain.nodes": (MAX_DEVICES, "no NVLink domain has more nodes"),
    }


def _at(doc: LayoutDoc, path: str) -> Any:
    node: Any = doc
    for part in path.split("."):
        node = getattr(node, part, None) if node is not None else None
    return node


def check_bounds(doc: LayoutDoc) -> Optional[str]:
    """What is wrong with a decoded layout beyond JSON types (one line naming the path), or
    ``None``."""
    if doc.schema > LAYOUT_SCHEMA:
        return (f"$.schema: {doc.schema} is newer than this nvtopo reads ({LAYOUT_SCHEMA}); "
                "upgrade nvtopo")
    if not re.match(r"^[A-Za-z0-9][\w.-]*$", doc.name):
        return '$.name: must be a short name (letters, digits, ".", "_", "-")'
    limits = hardware_limits()
    for path, (top, why) in limits.items():
        v = _at(doc, path)
        if v is not None and not 0 <= v <= top:
            return f"$.{path}: must be an integer from 0 to {top:,} ({why})"
    return (_check_values(doc) or _check_pairs(doc, limits["gpus.count"][0],
                                               limits["nvlink.links_per_gpu"][0])
            or _check_maps(doc, limits["gpus.count"][0]))


def _check_values(doc: LayoutDoc) -> Optional[str]:
    rate = doc.nics.compute.rate_gbps
    if rate is not None and not 0 <= rate <= MAX_RATE_GBPS:
        return (f"$.nics.compute.rate_gbps: must be a number from 0 to {MAX_RATE_GBPS:,} "
                "(Gb/s of one NIC port)")
    for key in ("allreduce_busbw", "nic"):
        gbs = getattr(doc.expected_bandwidth, key).gbs
        if gbs is not None and not 0 < gbs <= MAX_RATE_GBPS:
            return (f"$.expected_bandwidth.{key}.gbs: must be a number above 0 and at most "
                    f"{MAX_RATE_GBPS:,} (GB/s)")
    prio = doc.selection.priority
    if prio is not None and abs(prio) > MAX_PRIORITY:
        return (f"$.selection.priority: must be an integer from -{MAX_PRIORITY:,} to "
                f"{MAX_PRIORITY:,}")
    if doc.gpus.name_pattern is not None:
        try:
            re.compile(doc.gpus.name_pattern)
        except re.error:
            return "$.gpus.name_pattern: not a valid regular expression"
    enums = (("nics.placement.gpu_to_nearest_compute_nic", PATHS),
             ("nics.per_gpu.path", PATHS[:2]), ("storage.gds.data_path", PATHS),
             ("nics.compute.link_layer", LINK_LAYERS))
    for path, allowed in enums:
        v = _at(doc, path)
        if v is not None and v not in allowed:
            return f"$.{path}: must be " + ", ".join(allowed[:-1]) + f" or {allowed[-1]}"
    if doc.nvlink.generation is not None and not re.match(r"^[0-9]+\.[0-9]+$",
                                                          doc.nvlink.generation):
        return '$.nvlink.generation: must be a version such as "4.0"'
    from ..safe import printable

    for path in ("nvlink.error_thresholds", "nics.error_thresholds"):
        for key, v in (_at(doc, path) or {}).items():
            if not 0 <= v <= MAX_COUNTER:
                return (f"$.{path}.{printable(str(key))[:40]}: must be an integer from 0 to "
                        "2^64 - 1 (counters are 64-bit)")
    return None


def _check_pairs(doc: LayoutDoc, gpus: int, links: int) -> Optional[str]:
    count = doc.gpus.count
    seen = set()
    for k, v in (doc.nvlink.pairs or {}).items():
        if not re.match(r"^[0-9]{1,6}-[0-9]{1,6}$", k):
            return '$.nvlink.pairs: must map "A-B" GPU pairs to NVLink counts'
        a, b = (int(x) for x in k.split("-"))
        where = f'$.nvlink.pairs["{k}"]'
        if max(a, b) >= gpus or v > links:
            return (f"{where}: must name GPUs below {gpus:,} and at most {links} NVLinks a "
                    "pair (what hardware can have)")
        if a == b:
            return f"{where}: names GPU{a} paired with itself"
        if count is not None and max(a, b) >= count:
            return (f"{where}: names GPU{max(a, b)}, the layout has {count} GPUs "
                    f"(GPU0-GPU{count - 1})")
        if v < 0:
            return f"{where}: must be a non-negative NVLink count"
        if (min(a, b), max(a, b)) in seen:
            return f"{where}: states the pair {min(a, b)}-{max(a, b)} twice"
        seen.add((min(a, b), max(a, b)))
    return None


def _check_maps(doc: LayoutDoc, gpus: int) -> Optional[str]:
    def gpu_key(k: str) -> bool:
        return re.match(r"^[0-9]{1,6}$", k) is not None and int(k) < gpus

    for k, v in (doc.nics.placement.gpu_nic or {}).items():
        if not gpu_key(k) or not (isinstance(v, str) or (
                isinstance(v, list) and all(isinstance(x, str) for x in v))):
            return (f'$.nics.placement.gpu_nic["{k[:20]}"]: must map GPU indexes (below '
                    f"{gpus:,}) to NIC names (or lists)")
    for k, v in (doc.numa.gpu_numa or {}).items():
        if not gpu_key(k) or not 0 <= v < MAX_NUMA_NODES:
            return (f'$.numa.gpu_numa["{k[:20]}"]: must map GPU indexes (below {gpus:,}) to '
                    f"NUMA node numbers (0 to {MAX_NUMA_NODES - 1:,})")
    return None


#: Version of the layout file format.
LAYOUT_SCHEMA = 1
