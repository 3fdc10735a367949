"""Expected layouts: one JSON data file per system (the format: docs/layouts.md §2).

A layout states what a healthy node of a system looks like; what it does not
state is not checked.  Bundled layouts live beside this module; users give
their own with ``--layout-file``.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import NvtopoError
from ..safe import json_loads, printable
from .doc import (  # noqa: F401  (the layout's interface)
    LAYOUT_SCHEMA, MAX_COUNTER, MAX_NUMA_NODES, MAX_PRIORITY, MAX_RATE_GBPS, C2c, Choice,
    Bandwidth, Domain, Figure, Gpus, LayoutDoc, Nics, Numa, Nvlink, Storage, check_bounds,
    hardware_limits)


def domain_nodes(name: str) -> Optional[int]:
    """Nodes per NVLink domain of the bundled layout ``name`` (its ``domain.nodes``: GB200
    NVL72 trays, 18 a rack), or None: what ``cluster`` expects of a domain and what
    ``simulate --nodes`` builds."""
    if name not in _names():
        return None
    return load(name).domain.nodes


@lru_cache(maxsize=1)
def _bundle() -> Any:
    """The directory of bundled layouts: a plain path when installed as files (fast), else
    importlib.resources' traversable (nvtopo imported from a zip).  Found once per process
    (resolving the path is a system call per directory above it, and auto selection reads
    every layout)."""
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


#: The characters that make a pattern more than a literal text (outside ``re.X``).
_REGEX_SYNTAX = frozenset("\\.^$*+?{}[]()|")


def name_matches(pattern: str, name: str) -> bool:
    """Whether GPU ``name`` matches a layout's ``gpus.name_pattern`` (a case-insensitive
    search of the name's first :data:`NAME_SEARCH_LIMIT` characters).  A plain ASCII
    pattern (``A100-SXM4``) in an ASCII name is a case-insensitive substring, found without
    compiling a pattern (auto selection asks every layout once per start)."""
    return _matches(pattern, name[:NAME_SEARCH_LIMIT])


def names_match(pattern: str, names: Sequence[str]) -> bool:
    """Every one of ``names`` matches ``pattern`` (:func:`name_matches`; kept, by the part
    of each name a pattern searches: auto selection asks every layout of every node of a
    fleet alike)."""
    return _all_match(pattern, tuple(nm[:NAME_SEARCH_LIMIT] for nm in names))


@lru_cache(maxsize=1024)
def _all_match(pattern: str, texts: Tuple[str, ...]) -> bool:
    return all(_matches(pattern, t) for t in texts)


@lru_cache(maxsize=1024)
def _matches(pattern: str, text: str) -> bool:
    """(kept: auto selection asks every layout of every node of a fleet alike)"""
    if pattern.isascii() and text.isascii() and _REGEX_SYNTAX.isdisjoint(pattern):
        return pattern.lower() in text.lower()
    return _name_rx(pattern).search(text) is not None


class Layout:
    """A layout: its typed document (:class:`~nvtopo.layouts.doc.LayoutDoc`), where it came
    from, and the document as read (``data``: what ``nvtopo layouts show`` prints; nothing
    reads expectations from it)."""

    __slots__ = ("name", "_doc", "_data", "_text", "origin", "title", "_head")

    def __init__(self, name: str, doc: Optional[LayoutDoc],
                 data: Optional[Dict[str, Any]] = None, origin: str = "bundled",
                 title: str = "", text: Optional[str] = None,
                 head: Optional[Tuple[Choice, Gpus, Optional[List[str]]]] = None) -> None:
        self.name = name
        #: the typed document; None: a bundled layout not yet decoded whole (its ``head``,
        #: what selection reads of every layout, is: ``selection``, ``gpus`` and the
        #: compute NICs' names)
        self._doc = doc
        self._head = head
        self._data = data
        self._text = text  # (the document as read, parsed again only when shown)
        #: Where it came from: ``bundled`` or the user's file path.
        self.origin = origin
        self.title = title

    @property
    def doc(self) -> LayoutDoc:
        """The typed document (a bundled layout's decoded whole on first use)."""
        doc = self._doc
        if doc is None:
            assert self._text is not None
            doc = self._doc = decode_doc(json.loads(self._text), f"layout {self.name}",
                                         bounds=False)
        return doc

    @property
    def data(self) -> Dict[str, Any]:
        """The document as read (a fresh copy each time when kept as text)."""
        if self._data is not None:
            return self._data
        if self._text is not None:
            out: Dict[str, Any] = json.loads(self._text)
            return out
        return self.doc.to_dict()

    def __repr__(self) -> str:
        return f"Layout({self.name!r}, origin={self.origin!r})"

    def with_doc(self, doc: LayoutDoc) -> "Layout":
        """The same layout with another document (renumbered, a section left out); ``data``
        stays the document as read."""
        return Layout(self.name, doc, self._data, self.origin, self.title, self._text)

    @property
    def compute_nic_names(self) -> Optional[List[str]]:
        """``nics.compute.names`` (read without decoding the rest: auto selection asks it
        of the layouts that require their NICs' names)."""
        return self.doc.nics.compute.names if self._head is None else self._head[2]

    @property
    def gpus(self) -> Gpus:
        return self.doc.gpus if self._head is None else self._head[1]

    @property
    def nvlink(self) -> Nvlink:
        return self.doc.nvlink

    @property
    def nics(self) -> Nics:
        return self.doc.nics

    @property
    def numa(self) -> Numa:
        return self.doc.numa

    @property
    def c2c(self) -> C2c:
        return self.doc.c2c

    @property
    def storage(self) -> Storage:
        return self.doc.storage

    @property
    def domain(self) -> Domain:
        return self.doc.domain

    @property
    def expected_bandwidth(self) -> Bandwidth:
        """What its links allow NCCL (``expected_bandwidth``: docs/nccl.md)."""
        return self.doc.expected_bandwidth

    @property
    def choice(self) -> Choice:
        """How ``--layout auto`` treats it (the document's ``selection`` section)."""
        return self.doc.selection if self._head is None else self._head[0]

    @property
    def priority(self) -> int:
        """Tie-break for automatic selection: the more common system has the higher number."""
        return self.choice.priority or 0

    @property
    def family(self) -> str:
        """Systems that share a board and wiring (``h100-8``: DGX H100, HGX H100, ...)."""
        return self.choice.family or self.name

    def summary(self) -> Dict[str, Any]:
        """Name, title, GPUs, NV# and compute NICs, for ``nvtopo layouts``."""
        nv = self.nvlink
        if nv.pairs == {}:
            nvs: Optional[str] = "no NVLink"
        elif nv.pairs:
            nvs = "mesh " + "/".join(f"NV{c}" for c in sorted(set(nv.pairs.values())))
        elif nv.pair_count:
            nvs = f"NV{nv.pair_count}" + (" (NVSwitch)" if nv.nvswitch else "")
        else:
            nvs = None
        comp = self.nics.compute
        nics = None
        if comp.count is not None or comp.rate_gbps is not None:
            parts = [f"{comp.count}x" if comp.count is not None else "",
                     f"{comp.rate_gbps:g}G" if comp.rate_gbps is not None else "",
                     {"InfiniBand": "IB", "Ethernet": "RoCE/Eth"}.get(comp.link_layer or "", "")]
            nics = " ".join(p for p in parts if p)
        return {"name": self.name, "title": self.title, "gpus": self.gpus.count,
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
    """A bundled layout by name (parsed once per process and shared: nothing changes a
    layout; renumbering makes a new one)."""
    if name not in _names():
        raise NvtopoError(f"no bundled layout named {name!r}; `nvtopo layouts` lists them",
                          where="--layout")
    return _load_bundled(name)


@lru_cache(maxsize=None)
def _load_bundled(name: str) -> Layout:
    # Bundled layouts are data shipped with the code and checked by its test suite
    # (tests/test_layout_files.py): decoded as strictly as a user's file, but their hardware
    # bounds are not checked again on every start (those read the probes' limits)
    # Auto selection reads two sections of every layout (``selection`` and ``gpus``) and the
    # rest of the few whose GPU name and count fit: the rest is decoded on first use
    text = (_bundle() / f"{name}.json").read_text(encoding="utf-8")
    head = _head(text, name)
    if head is None:  # not a plain document: decoded whole (an error names the layout)
        return parse(text, where=f"layout {name}", origin="bundled", bounds=False)
    return Layout(name=name, doc=None, origin="bundled", title=head[3], text=text,
                  head=head[:3])


def _head(text: str, name: str
          ) -> Optional[Tuple[Choice, Gpus, Optional[List[str]], str]]:
    """A bundled layout's ``selection`` and ``gpus`` sections, ``nics.compute.names`` and
    its title, decoded as :class:`LayoutDoc` decodes them; None where the document is not
    one whose name is the file's, with those sections objects (or absent) and the names a
    list of texts (or absent)."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("name") != name:
            return None
        sel, gpus, title = data.get("selection"), data.get("gpus"), data.get("title")
        if not (sel is None or isinstance(sel, dict)) \
                or not (gpus is None or isinstance(gpus, dict)) \
                or not (title is None or isinstance(title, str)):
            return None
        nics = data.get("nics")
        comp = nics.get("compute") if isinstance(nics, dict) else None
        names = comp.get("names") if isinstance(comp, dict) else None
        if names is not None and not (isinstance(names, list)
                                      and all(isinstance(x, str) for x in names)):
            return None
        return (Choice() if sel is None else Choice.from_dict(sel),
                Gpus() if gpus is None else Gpus.from_dict(gpus), names, title or name)
    except ValueError:
        return None


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


def parse(text: str, where: str, origin: str = "bundled", bounds: bool = True) -> Layout:
    """Parse and decode a layout document strictly; one-line :class:`NvtopoError` naming
    the path when it is bad."""
    if not text.strip():
        raise NvtopoError("layout file is empty", where=where)
    try:
        data = json_loads(text) if bounds else json.loads(text)
    except json.JSONDecodeError as exc:
        raise NvtopoError(f"layout is not valid JSON (line {exc.lineno} column {exc.colno}: "
                          f"{exc.msg})", where=where) from None
    except ValueError as exc:
        raise NvtopoError(f"layout is not valid JSON ({exc})", where=where) from None
    # the records take over what they read: ``data`` is read again from the text when shown
    doc = decode_doc(data, where, bounds)
    return Layout(name=doc.name, doc=doc, origin=origin, title=doc.title or doc.name,
                  text=text)


def decode_doc(data: Any, where: str, bounds: bool = True) -> LayoutDoc:
    """The typed document of JSON ``data`` (freshly read: the records take over its lists
    and objects)."""
    def bad(msg: str) -> NvtopoError:
        return NvtopoError(f"bad layout: {printable(msg)[:300]}", where=where)

    if not isinstance(data, dict):
        raise bad("the document is not a JSON object")
    try:
        doc = LayoutDoc.from_dict(data)
    except ValueError as exc:
        raise bad(str(exc)) from None
    why = check_bounds(doc) if bounds else None
    if why is not None:
        raise bad(why)
    return doc
