"""Expected layouts: one JSON data file per system (the format: docs/layouts.md §2).

A layout states what a healthy node of a system looks like; what it does not
state is not checked.  Bundled layouts live beside this module; users give
their own with ``--layout-file``.
"""

from __future__ import annotations

import json
import re
from ..plain import field, plain
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Tuple

from ..errors import NvtopoError
from ..safe import json_loads

#: Nodes per NVLink domain for the layouts that are one tray of a multi-node NVLink domain
#: (GB200 NVL72: 18 compute trays of 4 GPUs per rack; NVIDIA DGX GB200 User Guide): what
#: ``cluster`` expects of a domain and what ``simulate --nodes`` builds.
DOMAIN_NODES: Dict[str, int] = {"gb200-nvl72-tray": 18}

#: Version of the layout file format.
LAYOUT_SCHEMA = 1

_SECTIONS = ("gpus", "nvlink", "nics", "numa", "c2c", "storage")
#: The bundled layout files live beside this module.


def _bundle() -> Any:
    """The directory of bundled layouts: a plain path when installed as files (fast), else
    importlib.resources' traversable (nvtopo imported from a zip)."""
    here = Path(__file__).resolve().parent
    if here.is_dir():
        return here
    from importlib import resources

    return resources.files(__name__)


#: NVML names a GPU in at most 96 bytes: a layout's name pattern searches no more than this
#: much of a name (a pattern like ``H100.*SXM`` is quadratic in the text it searches, and a
#: name read from a file can be megabytes long).
NAME_SEARCH_LIMIT = 256


@lru_cache(maxsize=256)
def _name_rx(pattern: str) -> "re.Pattern[str]":
    return re.compile(pattern, re.I)


def name_matches(pattern: str, name: str) -> bool:
    """Whether GPU ``name`` matches a layout's ``gpus.name_pattern`` (a case-insensitive
    search of the name's first :data:`NAME_SEARCH_LIMIT` characters)."""
    return _name_rx(pattern).search(name[:NAME_SEARCH_LIMIT]) is not None


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


@plain
class Layout:
    """A parsed layout file."""

    name: str
    data: Dict[str, Any]
    #: Where it came from: ``bundled`` or the user's file path.
    origin: str = "bundled"
    title: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> Dict[str, Any]:
        """A section (``gpus``, ``nvlink``, ``nics``, ``numa``), ``{}`` when not stated."""
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}

    def get(self, path: str, default: Any = None) -> Any:
        """A dotted lookup: ``get("nics.compute.rate_gbps")``; ``default`` when not stated."""
        node: Any = self.data
        for part in path.split("."):
            if not isinstance(node, dict) or node.get(part) is None:
                return default
            node = node[part]
        return node

    def evidence(self, path: str) -> str:
        """The evidence string of the innermost section of ``path`` that has one."""
        parts = path.split(".")
        for i in range(len(parts), 0, -1):
            node = self.get(".".join(parts[:i]))
            if isinstance(node, dict) and isinstance(node.get("evidence"), str):
                return node["evidence"]
        return ""

    def inferred_only(self, path: str) -> bool:
        """True when the evidence for ``path`` is only ``[I]`` (warn, never fail), or when
        ``path`` is one key whose section evidence says ``I for KEY`` (``[S: CSCS; I for
        links_per_gpu: ...]``: the section is stated, that one value inferred)."""
        ev = self.evidence(path)
        tags = re.findall(r"\[([SOI])\b", ev)
        if bool(tags) and set(tags) == {"I"}:
            return True
        if "." not in path or isinstance(self.get(path), dict):
            return False
        return _names_word(ev, "I for " + path.rsplit(".", 1)[-1])


    @property
    def priority(self) -> int:
        """Tie-break for automatic selection: the more common system has the higher number."""
        v = self.get("selection.priority", 0)
        return v if isinstance(v, int) else 0

    @property
    def family(self) -> str:
        """Systems that share a board and wiring (``h100-8``: DGX H100, HGX H100, ...)."""
        return str(self.get("selection.family") or self.name)

    def summary(self) -> Dict[str, Any]:
        """Name, title, GPUs, NV# and compute NICs, for ``nvtopo layouts``."""
        nv = self.section("nvlink")
        if nv.get("pairs") == {}:
            nvs = "no NVLink"
        elif nv.get("pairs"):
            nvs = "mesh " + "/".join(f"NV{c}" for c in sorted(set(nv["pairs"].values())))
        elif nv.get("pair_count"):
            nvs = f"NV{nv['pair_count']}" + (" (NVSwitch)" if nv.get("nvswitch") else "")
        else:
            nvs = None
        comp = self.get("nics.compute") or {}
        nics = None
        layer: Any = comp.get("link_layer")  # (a layout's JSON value)
        if comp.get("count") is not None or comp.get("rate_gbps") is not None:
            parts = [str(comp["count"]) + "x" if comp.get("count") is not None else "",
                     f"{comp['rate_gbps']:g}G" if comp.get("rate_gbps") is not None else "",
                     {"InfiniBand": "IB", "Ethernet": "RoCE/Eth"}.get(layer, "")]
            nics = " ".join(p for p in parts if p)
        return {"name": self.name, "title": self.title, "gpus": self.get("gpus.count"),
                "nvlink": nvs, "nics": nics, "family": self.family, "origin": self.origin}


def names() -> List[str]:
    """Names of the bundled layouts."""
    return list(_names())


#: The NVIDIA PCI device id table (not a layout): :func:`device_names`.
DEVICE_IDS = "device_ids.json"


@lru_cache(maxsize=1)
def device_names() -> Dict[str, str]:
    """PCI device id (``0x2330``) -> the GPU model name NVML reports, for the bundled
    layouts' GPUs (``device_ids.json``): how a sysfs-only input is matched by name."""
    data = json.loads((_bundle() / DEVICE_IDS).read_text(encoding="utf-8"))
    return {str(k).lower(): str(v) for k, v in data["ids"].items()}


@lru_cache(maxsize=1)
def _names() -> Tuple[str, ...]:
    # bundled files do not change while the process runs; auto selection asks for every
    # layout per node, which a fleet audit does thousands of times
    return tuple(sorted(p.name[:-5] for p in _bundle().iterdir() if p.name.endswith(".json")
                        and p.name != DEVICE_IDS))


def load(name: str) -> Layout:
    """A bundled layout by name (parsed once per process; a fresh :class:`Layout` each call,
    sharing the parsed data, which nothing changes: renumbering copies it)."""
    if name not in _names():
        raise NvtopoError(f"no bundled layout named {name!r}; `nvtopo layouts` lists them",
                          where="--layout")
    lay = _load_bundled(name)
    return Layout(name=lay.name, data=lay.data, origin=lay.origin, title=lay.title,
                  extra=dict(lay.extra))


@lru_cache(maxsize=None)
def _load_bundled(name: str) -> Layout:
    # Bundled layouts are data shipped with the code and validated by its test suite
    # (tests/test_layout_files.py), so reading one does not validate it again, unless it
    # does not read as a layout at all (a damaged install): then validation says why.
    text = (_bundle() / f"{name}.json").read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
        return Layout(name=doc["name"], data=doc, origin="bundled",
                      title=doc.get("title") or doc["name"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return parse(text, where=f"layout {name}", origin="bundled")


#: The largest layout file read (the bundled ones are under 10 kB).
MAX_FILE_BYTES = 1024 * 1024


def load_file(path: str) -> Layout:
    """A user's layout file (``-``: standard input), read through the one bounded reader
    every input has (a FIFO or device refused, never more than :data:`MAX_FILE_BYTES`)."""
    from ..snapshot import read

    data, where = read.read_bytes(path, option="--layout-file", limit=MAX_FILE_BYTES,
                                  what="a layout file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NvtopoError(f"cannot read layout: {exc}", where=where) from None
    return parse(text, where=where, origin=path)


def parse(text: str, where: str, origin: str = "bundled") -> Layout:
    """Parse and validate a layout document; one-line :class:`NvtopoError` when it is bad."""
    if not text.strip():
        raise NvtopoError("layout file is empty", where=where)
    try:
        doc = json_loads(text)
    except json.JSONDecodeError as exc:
        raise NvtopoError(f"layout is not valid JSON (line {exc.lineno} column {exc.colno}: "
                          f"{exc.msg})", where=where) from None
    except ValueError as exc:
        raise NvtopoError(f"layout is not valid JSON ({exc})", where=where) from None
    validate(doc, where)
    return Layout(name=doc["name"], data=doc, origin=origin, title=doc.get("title") or doc["name"])


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
    return {
        "gpus.count": gpus,
        "gpus.pcie.gen": (2 * max(PCIE_GEN.values()),
                          f"PCIe has {max(PCIE_GEN.values())} generations, with room for more"),
        "gpus.pcie.width": (32, "PCIe links are at most x32"),
        "nvlink.links_per_gpu": links,
        "nvlink.pair_count": links,
        "nvlink.nvswitch_count": (MAX_DEVICES, "PCI devices of one kind a node has"),
        "nics.compute.count": (MAX_DEVICES, "PCI devices of one kind a node has"),
        "nics.placement.gpus_per_compute_nic": gpus,
        "numa.nodes_with_gpus": (MAX_NUMA_NODES, "Linux's most NUMA nodes"),
        "c2c.links_per_gpu": (MAX_C2C_LINKS, "no GPU has more NVLink-C2C links"),
        "storage.os_drives": drives,
        "storage.data_drives": drives,
        "storage.gds.drives_per_switch": drives,
    }


def _below_counter_bound(probe: Layout, path: str, bad: Any) -> None:
    """Each threshold of ``path`` fits the 64-bit counter it is compared with."""
    from ..safe import printable

    for key, v in (probe.get(path) or {}).items():
        if v > MAX_COUNTER:
            raise bad(f'"{path}.{printable(str(key))[:40]}" must be at most 2^64 - 1 '
                      "(counters are 64-bit)")


def validate(doc: Any, where: str) -> None:
    """Check the shape of a layout document (types of the keys it states)."""
    def bad(msg: str) -> NvtopoError:
        return NvtopoError(f"bad layout: {msg}", where=where)

    if not isinstance(doc, dict):
        raise bad("the document is not a JSON object")
    schema = doc.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise bad('"schema" must be an integer (1)')
    if schema > LAYOUT_SCHEMA:
        raise bad(f"schema {schema} is newer than this nvtopo reads ({LAYOUT_SCHEMA}); "
                  "upgrade nvtopo")
    if not isinstance(doc.get("name"), str) or not re.match(r"^[A-Za-z0-9][\w.-]*$", doc["name"]):
        raise bad('"name" must be a short name (letters, digits, ".", "_", "-")')
    for sec in _SECTIONS:
        if doc.get(sec) is not None and not isinstance(doc[sec], dict):
            raise bad(f'"{sec}" must be an object')
    probe = Layout(name=str(doc["name"]), data=doc)
    limits = hardware_limits()
    for path, (top, why) in limits.items():
        v = probe.get(path)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0
                              or v > top):
            raise bad(f'"{path}" must be an integer from 0 to {top:,} ({why})')
    rate = probe.get("nics.compute.rate_gbps")
    if rate is not None and (not isinstance(rate, (int, float)) or isinstance(rate, bool)
                             or not 0 <= rate <= MAX_RATE_GBPS):
        raise bad(f'"nics.compute.rate_gbps" must be a number from 0 to {MAX_RATE_GBPS:,} '
                  "(Gb/s of one NIC port)")
    prio = probe.get("selection.priority")
    if prio is not None and (not isinstance(prio, int) or isinstance(prio, bool)
                             or abs(prio) > MAX_PRIORITY):
        raise bad(f'"selection.priority" must be an integer from -{MAX_PRIORITY:,} to '
                  f"{MAX_PRIORITY:,}")
    pattern = probe.get("gpus.name_pattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except (re.error, TypeError):
            raise bad('"gpus.name_pattern" is not a valid regular expression') from None
    pairs = probe.get("nvlink.pairs")
    if pairs is not None:
        if not isinstance(pairs, dict) or not all(
                isinstance(k, str) and re.match(r"^[0-9]{1,6}-[0-9]{1,6}$", k) and isinstance(v, int)
                for k, v in pairs.items()):
            raise bad('"nvlink.pairs" must map "A-B" GPU pairs to NVLink counts')
        gpus, links = limits["gpus.count"][0], limits["nvlink.links_per_gpu"][0]
        for k, v in pairs.items():
            a, _, b = k.partition("-")
            if int(a) >= gpus or int(b) >= gpus or v > links:
                raise bad(f'"nvlink.pairs" must name GPUs below {gpus:,} and at most {links} '
                          "NVLinks a pair (what hardware can have)")
        count = probe.get("gpus.count")
        seen = set()
        for k, v in pairs.items():
            a, b = (int(x) for x in k.split("-"))
            if a == b:
                raise bad(f'"nvlink.pairs" names GPU{a} paired with itself ("{k}")')
            if isinstance(count, int) and not isinstance(count, bool) and max(a, b) >= count:
                raise bad(f'"nvlink.pairs" "{k}" names GPU{max(a, b)}, the layout has '
                          f'{count} GPUs (GPU0-GPU{count - 1})')
            if v < 0 or isinstance(v, bool):
                raise bad(f'"nvlink.pairs" "{k}" must be a non-negative NVLink count')
            if (min(a, b), max(a, b)) in seen:
                raise bad(f'"nvlink.pairs" states the pair {min(a, b)}-{max(a, b)} twice')
            seen.add((min(a, b), max(a, b)))
    path = probe.get("nics.placement.gpu_to_nearest_compute_nic")
    if path is not None and path not in ("PIX", "PXB", "PHB", "NODE", "SYS"):
        raise bad('"nics.placement.gpu_to_nearest_compute_nic" must be PIX, PXB, PHB, NODE or SYS')
    per_gpu = probe.get("nics.per_gpu")
    if per_gpu is not None and (not isinstance(per_gpu, dict)
                                or per_gpu.get("path", "PXB") not in ("PIX", "PXB")):
        raise bad('"nics.per_gpu" must be an object whose "path" is PIX or PXB')
    gpu_nic = probe.get("nics.placement.gpu_nic")
    if gpu_nic is not None and (not isinstance(gpu_nic, dict) or not all(
            re.match(r"^[0-9]{1,6}$", str(k)) and int(k) < limits["gpus.count"][0]
            and (isinstance(v, str) or (isinstance(v, list)
                                        and all(isinstance(x, str) for x in v)))
            for k, v in gpu_nic.items())):
        raise bad('"nics.placement.gpu_nic" must map GPU indexes to NIC names (or lists)')
    layer = probe.get("nics.compute.link_layer")
    if layer is not None and layer not in ("InfiniBand", "Ethernet"):
        raise bad('"nics.compute.link_layer" must be InfiniBand or Ethernet')
    names = probe.get("nics.compute.names")
    if names is not None and (not isinstance(names, list)
                              or not all(isinstance(x, str) for x in names)):
        raise bad('"nics.compute.names" must be a list of RDMA device names')
    sel = doc.get("selection")
    if sel is not None:
        if not isinstance(sel, dict):
            raise bad('"selection" must be an object')
        if sel.get("family") is not None and not isinstance(sel.get("family"), str):
            raise bad('"selection.family" must be a string')
        for key in ("auto", "requires_nic_names"):
            if sel.get(key) is not None and not isinstance(sel.get(key), bool):
                raise bad(f'"selection.{key}" must be true or false')
    thresholds = probe.get("nvlink.error_thresholds")
    if thresholds is not None and (not isinstance(thresholds, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for v in thresholds.values())):
        raise bad('"nvlink.error_thresholds" must map counter names to non-negative integers')
    _below_counter_bound(probe, "nvlink.error_thresholds", bad)
    thresholds = probe.get("nics.error_thresholds")
    if thresholds is not None and (not isinstance(thresholds, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for v in thresholds.values())):
        raise bad('"nics.error_thresholds" must map counter names to non-negative integers')
    _below_counter_bound(probe, "nics.error_thresholds", bad)
    numa = probe.get("numa.gpu_numa")
    if numa is not None and (not isinstance(numa, dict) or not all(
            re.match(r"^[0-9]{1,6}$", str(k)) and isinstance(v, int) and not isinstance(v, bool)
            and int(k) < limits["gpus.count"][0] and 0 <= v < MAX_NUMA_NODES
            for k, v in numa.items())):
        raise bad('"numa.gpu_numa" must map GPU indexes (below '
                  f'{limits["gpus.count"][0]:,}) to NUMA node numbers (0 to '
                  f"{MAX_NUMA_NODES - 1:,})")
