"""One reading of the model shared by every check family (pure functions).

It answers the questions several families need the same answer to: which
GPUs are present (seen by the driver), which are missing; the NVLink count
of every GPU pair and who said it; which links NVML says are down; whether
the NVLink fabric is down; the path between a GPU and a NIC
(:meth:`Topology.gpu_nic_path`) and a GPU's NUMA node (:attr:`GPU.numa_node`)
are the model's own answers.  Which NICs are compute NICs is
:mod:`nvtopo.checks.roles`'s answer, kept in the shared view's memo.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from ..plain import field, plain
from functools import lru_cache
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from ..model import Topology, nvlink_count, path_kind, path_rank
from ..model.nvlink import Fabric, NvmlLink

#: Sources that see GPUs through the driver (a GPU only sysfs lists is on the
#: PCI bus but not usable).
DRIVER_SOURCES = ("topo-text", "nvml", "nvml-text")
#: Sources whose GPU list may be an excerpt (pasted ``nvlink``/``-q`` text about some GPUs):
#: they state facts about the GPUs they name and nothing about the others.
PARTIAL_SOURCES = ("nvml-text",)


def lists_every_gpu(topo: Topology) -> bool:
    """Some source lists every GPU of the node (a matrix, NVML, sysfs): only then does a GPU
    the input does not list count as missing."""
    return any(s not in PARTIAL_SOURCES and s != "host" for s in topo.sources)


@plain
class GpuLinks:
    """NVML's per-GPU NVLink record, reduced."""

    total: Optional[int]
    active: int
    down: List[int]
    links: List[NvmlLink]
    #: the source of the record: ``nvml``, or ``nvml-text`` (pasted ``nvlink`` text)
    source: str = "nvml"
    #: every link of the GPU is listed with its state (NVML); a paste may be an excerpt
    complete: bool = True


@plain
class View:
    topo: Topology
    #: GPU indices the driver sees (or every GPU when no driver-level source exists).
    present: List[int] = field(default_factory=list)
    #: index -> why it is missing (listed by one source, absent from a driver-level one).
    absent_in: Dict[int, str] = field(default_factory=dict)
    #: GPUs NVML says fell off the bus.
    lost: Dict[int, str] = field(default_factory=dict)
    #: (a, b) -> (count, sources) for every pair of present GPUs whose path is known.
    pairs: Dict[Tuple[int, int], Tuple[int, str]] = field(default_factory=dict)
    #: index -> NVML link record (only GPUs NVML read).
    links: Dict[int, GpuLinks] = field(default_factory=dict)
    #: index -> fabric facts (NVML) where the GPU reports them.
    fabric: Dict[int, Fabric] = field(default_factory=dict)
    #: NVSwitch bus ids NVML saw links go to.
    switches: List[str] = field(default_factory=list)
    has_nvml: bool = False
    has_sysfs: bool = False
    #: answers derived from this view by pure helpers (e.g. the NIC roles of
    #: :func:`nvtopo.checks.roles.resolve`).
    memo: Dict[Any, Any] = field(default_factory=dict)


def _sources_of(topo: Topology) -> Set[str]:
    return set(topo.sources)


#: Views shared while :func:`shared_views` is active (id(topo) -> (topo, view)).
_SHARED: Optional[Dict[int, Tuple[Topology, "View"]]] = None


@contextmanager
def shared_views() -> Iterator[None]:
    """Within this block, :func:`view` reads each model once (``checks.run`` and
    ``select``: the families are pure and run on an unchanging model, so each would
    otherwise recompute the same view)."""
    global _SHARED
    outer = _SHARED
    if outer is None:
        _SHARED = {}
    try:
        yield
    finally:
        _SHARED = outer


def sharing() -> bool:
    """Inside :func:`shared_views`: answers derived from a view may be kept in its memo."""
    return _SHARED is not None


_MISS = object()


def kept(topo: Topology, key: Any, make: Any, *args: Any) -> Any:
    """``make(*args)``, kept in the shared view's memo under ``key`` while views are shared
    (the model does not change during a check run; selection asks the same of every layout
    it scores, then the checks again); outside a shared view, made each time."""
    if _SHARED is None:
        return make(*args)
    memo = view(topo).memo
    hit = memo.get(key, _MISS)
    if hit is _MISS:
        hit = memo[key] = make(*args)
    return hit


def _path_memo(topo: Topology) -> Dict[Tuple[int, str], Tuple[Optional[str], str]]:
    """Every GPU's path to every NIC, read at once on the first ask (selection asks them
    all); pairs asked past those are added as they are asked."""
    return kept(topo, "nic_paths",
                lambda: topo.gpu_nic_paths(sorted({g.index for g in topo.gpus})))


def _path_in(topo: Topology, paths: Dict[Tuple[int, str], Tuple[Optional[str], str]],
             gpu: int, name: str) -> Tuple[Optional[str], str]:
    hit = paths.get((gpu, name))
    if hit is None:
        hit = paths[(gpu, name)] = topo.gpu_nic_path(gpu, name)
    return hit


def nic_paths(topo: Topology) -> Any:
    """:func:`nic_path` for many asks: a function of (GPU, NIC name) reading the shared
    view's paths directly (outside a shared view, :meth:`Topology.gpu_nic_path`)."""
    if _SHARED is None:
        return topo.gpu_nic_path
    paths = _path_memo(topo)
    return lambda gpu, name: _path_in(topo, paths, gpu, name)


def nic_path(topo: Topology, gpu: int, name: str) -> Tuple[Optional[str], str]:
    """:meth:`Topology.gpu_nic_path`, kept in the shared view's memo while views are shared
    (the model does not change during a check run, and selection asks the same GPU-NIC
    paths for every layout it scores through the NIC roles, then the checks again)."""
    if _SHARED is None:
        return topo.gpu_nic_path(gpu, name)
    return _path_in(topo, _path_memo(topo), gpu, name)


def nic_keys(topo: Topology) -> FrozenSet[str]:
    """Every NIC's label and name: ``x in nic_keys(topo)`` is ``topo.nic(x) is not None``
    (kept in the shared view's memo while views are shared)."""
    return kept(topo, "nic_keys",
                lambda: frozenset(k for n in topo.nics for k in (n.label, n.name)))


def per_nic(fn: Any) -> Any:
    """``fn(topo, name)``, a fact of one NIC, :func:`kept` while views are shared; a set is
    kept frozen."""
    key = fn.__name__

    def made(topo: Topology, name: str) -> Any:
        hit = fn(topo, name)
        return frozenset(hit) if isinstance(hit, set) else hit

    def cached(topo: Topology, name: str) -> Any:
        if _SHARED is None:
            return fn(topo, name)
        return kept(topo, (key, name), made, topo, name)
    cached.__doc__, cached.__name__, cached.__wrapped__ = fn.__doc__, key, fn  # type: ignore[attr-defined]
    return cached


def view(topo: Topology) -> View:
    if _SHARED is not None:
        hit = _SHARED.get(id(topo))
        if hit is not None and hit[0] is topo:
            return hit[1]
        v = _view(topo)
        _SHARED[id(topo)] = (topo, v)
        return v
    return _view(topo)


def _view(topo: Topology) -> View:
    v = View(topo=topo)
    srcs = _sources_of(topo)
    nvml = topo.nvml
    v.has_nvml = nvml is not None and nvml.status != "unavailable" and any(
        g.nvml is not None for g in topo.gpus)
    v.has_sysfs = "sysfs" in srcs and topo.sysfs is not None
    driver = [s for s in srcs if s in DRIVER_SOURCES]
    # presence: a GPU one driver-level source does not list is missing
    for d in topo.disagreements:
        if d.fact != "presence":
            continue
        m = re.match(r"^GPU([0-9]{1,6})$", d.subject)
        if not m:
            continue
        idx = int(m.group(1))
        absent = [k for k, val in d.values.items() if val == "absent"]
        if any(any(s in DRIVER_SOURCES and s not in PARTIAL_SOURCES for s in k.split(", "))
               for k in absent):
            present_in = ", ".join(k for k, val in d.values.items() if val == "present")
            v.absent_in[idx] = f"listed by {present_in} but not by {', '.join(absent)}"
    for g in topo.gpus:
        rec = g.nvml
        fault = rec.fault if rec is not None else None
        if fault is not None and fault.kind == "lost":
            v.lost[g.index] = fault.message or "GPU is lost"
        if not driver or g.index not in v.absent_in:
            v.present.append(g.index)
        if rec is not None:
            nv = rec.nvlink
            v.links[g.index] = GpuLinks(total=nv.total, active=nv.active or 0, down=nv.down,
                                        links=nv.links)
            fab = rec.fabric
            if fab is not None and fab.state != "not_supported":
                v.fabric[g.index] = fab
        elif g.nvml_text is not None:
            # pasted nvlink / -q text: the same facts, through the same checks, for the
            # GPUs it names (its links may be an excerpt: never a count to compare)
            tx = g.nvml_text
            if tx.nvlink.links:
                v.links[g.index] = GpuLinks(
                    total=None, active=tx.nvlink.active, down=tx.nvlink.down,
                    links=tx.nvlink.links, source="nvml-text",  # type: ignore[arg-type]
                    complete=False)
            fab = tx.fabric
            if fab is not None and fab.state != "not_supported":
                v.fabric[g.index] = fab
    v.present = sorted(set(v.present) - set(v.lost))
    if nvml is not None:
        v.switches = sorted((nvml.switches or {}).keys())
    v.pairs = _pairs(topo, v.present)
    return v


def _pairs(topo: Topology, present: List[int]) -> Dict[Tuple[int, int], Tuple[int, str]]:
    """NVLink count per pair from every source; where they differ the lower is kept.

    ``0`` means a known non-NVLink path (``SYS``, ``PIX``...).
    """
    out: Dict[Tuple[int, int], Tuple[int, str]] = {}
    pres = set(present)
    cands: Dict[Tuple[int, int], Dict[str, int]] = {}

    def add(a: int, b: int, count: int, src: str) -> None:
        if a == b or a not in pres or b not in pres:
            return
        key = (min(a, b), max(a, b))
        cands.setdefault(key, {})
        cands[key][src] = min(count, cands[key].get(src, count))

    mx = topo.matrix
    if mx is not None:
        # the GPUs' rows only: not every NIC pair of the matrix
        index = [gpu_index(d) for d in mx.devices]
        for a, b, tok in mx.pairs([i for i, ix in enumerate(index) if ix is not None]):
            ia, ib = gpu_index(a), gpu_index(b)
            if ia is None or ib is None or tok is None or path_kind(tok) is None:
                continue
            add(ia, ib, nvlink_count(tok) or 0, mx.source)
    for p in topo.nvlinks:
        add(p.a, p.b, p.count, p.source)
    for d in topo.disagreements:  # the other source's count, kept by merge as a disagreement
        if d.fact not in ("nvlink_count", "path"):
            continue
        m = re.match(r"^GPU([0-9]{1,6})-GPU([0-9]{1,6})$", d.subject)
        if not m:
            continue
        for src, val in d.values.items():
            c = val if isinstance(val, int) else (nvlink_count(val) or 0) \
                if isinstance(val, str) and path_kind(val) else None
            if c is not None:
                add(int(m.group(1)), int(m.group(2)), c, src)
    for key, by in cands.items():
        low = min(by.values())
        out[key] = (low, ", ".join(sorted(s for s, c in by.items() if c == low)))
    # nvidia-smi counts on NVSwitch pairs also go to the nvml matrix: a pair only the
    # nvml probe counted as zero (no links) is zero
    return out


_GPU_LABEL = re.compile(r"^GPU([0-9]{1,6})$")


@lru_cache(maxsize=4096)
def gpu_index(label: str) -> Optional[int]:
    m = _GPU_LABEL.match(label or "")
    return int(m.group(1)) if m else None


# --- NICs -----------------------------------------------------------------------------------


def nic_names(topo: Topology) -> List[str]:
    return [n.name for n in topo.nics]


def has_nic_data(topo: Topology, v: View) -> bool:
    """NIC facts exist: sysfs looked, or a topo text listed NICs."""
    return v.has_sysfs or bool(topo.nics)


def layout_pairs(layout: Any, n: int) -> Dict[Tuple[int, int], int]:
    """Expected NV# per GPU pair of an ``n``-GPU node (0 = no NVLink expected)."""
    out: Dict[Tuple[int, int], int] = {}
    if layout is None:
        return out
    nv = layout.nvlink
    # {} states "no NVLink between any pair" (every pair expected 0); null states nothing
    if nv.pairs is not None:
        pairs = nv.pair_map()
        for i in range(n):
            for j in range(i + 1, n):
                out[(i, j)] = pairs.get((i, j), 0)
        return out
    pc = nv.pair_count
    if pc is not None:
        for i in range(n):
            for j in range(i + 1, n):
                out[(i, j)] = pc
    return out


def expected_gpus(layout: Any, v: View) -> int:
    c = layout.gpus.count if layout is not None else None
    if c is not None:
        return c
    return max([i + 1 for i in v.present] + [0])


def fabric_down(v: View, layout: Any) -> Optional[str]:
    """Why the NVLink fabric is down (every NV# and link consequence folds into it), or None."""
    states = {i: f.state for i, f in v.fabric.items() if i in v.present}
    bad = {i: s for i, s in states.items() if s in ("not_started", "in_progress")}
    failed = {i: f.status for i, f in v.fabric.items()
              if i in v.present and f.state == "completed" and f.status
              not in (None, "success")}
    if bad or failed:
        return "fabric"
    if layout is not None and layout.nvlink.nvswitch and len(v.present) >= 2:
        known = [c for (a, b), (c, _) in v.pairs.items()]
        if known and len(known) == len(v.present) * (len(v.present) - 1) // 2 \
                and all(c == 0 for c in known):
            return "no_nvlink"
    return None


def renumbered(layout: Any, v: View, slots_known: bool = False) -> bool:
    """GPUs are missing by count and the rest are numbered 0..n-1: which physical GPU is
    gone is unknown, so per-index expectations (NUMA slot, NIC map) may be shifted.
    ``slots_known``: the port map's NICs placed each GPU (the layout is renumbered)."""
    n_exp = layout.gpus.count if layout is not None else None
    if slots_known:
        return False
    have = sorted(set(v.present) | set(v.lost) | set(v.absent_in))
    return isinstance(n_exp, int) and 0 < len(have) < n_exp \
        and have == list(range(len(have)))


def bare_metal(topo: Topology, v: Any, present: Any) -> bool:
    """sysfs shows every present GPU behind a PCIe switch (two links or more from its root
    port): the board's own PCIe fabric, which a VM given passed-through GPUs does not
    reproduce, so a GPU short of the layout's count is gone, not withheld."""
    if not v.has_sysfs or not present:
        return False
    for i in present:
        g = topo.gpu(i)
        if g is None or g.sysfs is None or len(g.sysfs.hops) < 2:
            return False
    return True


def missing_gpus(layout: Any, v: View) -> List[int]:
    """GPUs the layout has and the node does not show: absent from a driver-level source,
    or (by count) the highest indices not listed."""
    out = set(v.absent_in)
    n_exp = layout.gpus.count if layout is not None and lists_every_gpu(v.topo) else None
    have = set(v.present) | set(v.lost) | set(v.absent_in)
    if isinstance(n_exp, int) and len(have) < n_exp:
        gone = [i for i in range(n_exp) if i not in have]
        out.update(gone[: n_exp - len(have)])
    return sorted(out)


def nic_by_placement(topo: Topology, present: Sequence[int], want_path: Optional[str],
                     prefer: Optional[Dict[int, List[str]]] = None
                     ) -> Dict[int, Tuple[str, str]]:
    """GPU index -> (NIC name, path) for each present GPU that has a NIC at ``want_path``
    or closer, told by PCI placement (the path matrix or sysfs's PCI tree), never by
    name.  Of the nearest NICs a GPU's ``prefer`` names win, then one no other GPU took
    (a GPU pair behind one switch with two NICs gets one each)."""
    limit = path_rank(want_path)
    if limit is None:
        return {}
    near = _near_nics(topo, tuple(present), limit)
    out: Dict[int, Tuple[str, str]] = {}
    used: Set[str] = set()
    for g in sorted(near):
        names, tok = near[g]
        pref = [x for x in (prefer or {}).get(g, []) if x in names]
        free = [x for x in names if x not in used]
        pick = (pref or free or names)[0]
        used.add(pick)
        out[g] = (pick, tok)
    return out


def _near_nics(topo: Topology, present: Tuple[int, ...], limit: int
               ) -> Dict[int, Tuple[List[str], str]]:
    """GPU index -> (its nearest NICs, their path) for each present GPU with a NIC at path
    rank ``limit`` or closer (kept in the shared view's memo: selection asks it for each
    layout with a port map, the NIC checks again)."""
    memo = view(topo).memo if _SHARED is not None else None
    key = ("near_nics", present, limit)
    hit = memo.get(key) if memo is not None else None
    if hit is not None:
        return hit
    near: Dict[int, Tuple[List[str], str]] = {}
    path = nic_paths(topo)
    for g in present:
        best: List[str] = []
        best_tok: Optional[str] = None
        best_rank: Optional[int] = None
        for n in topo.nics:
            tok, _ = path(g, n.name)
            r = path_rank(tok)
            if r is None or r == 0 or r > limit:
                continue
            if best_rank is None or r < best_rank:
                best, best_tok, best_rank = [n.name], tok, r
            elif r == best_rank:
                best.append(n.name)
        if best and best_tok is not None:
            near[g] = (best, best_tok)
    if memo is not None:
        memo[key] = near
    return near


def slots_by_nic(topo: Topology, layout: Any, present: Sequence[int]
                 ) -> Optional[Tuple[Dict[int, int], List[int]]]:
    """Which layout slot each present GPU is, told by the port map's NICs, when GPUs are
    missing by count: ``(node GPU -> layout slot, empty slots)``, or None where the NICs
    do not tell.

    Each present GPU must have exactly one port-map NIC at the map's path or closer (PCI
    placement), no two GPUs the same slot, the slots in the GPUs' (bus) order, and every empty slot's NIC must be on the bus
    with no GPU near it: the slot's card is there and its GPU is not (evidence that the
    GPU is gone, where a count alone cannot tell a lost GPU from a VM given a subset).
    """
    gpu_nic = layout.nics.placement.port_map if layout is not None else None
    n_exp = layout.gpus.count if layout is not None else None
    if gpu_nic is None or n_exp is None or not 0 < len(present) < n_exp:
        return None
    limit = path_rank(layout.nics.placement.gpu_to_nearest_compute_nic or "PIX")
    if limit is None:
        return None
    slot_nics: Dict[int, List[str]] = {}
    for s, names in gpu_nic.items():
        if s >= n_exp:
            return None
        slot_nics[s] = names
    if len(slot_nics) != n_exp:
        return None
    owner: Dict[str, int] = {}
    for s, names in slot_nics.items():
        for x in names:
            if x in owner:  # a NIC shared by two slots cannot tell them apart
                return None
            owner[x] = s
    mapping: Dict[int, int] = {}
    near_slots: Set[int] = set()
    for g in present:
        slots = set()
        for x, s in owner.items():
            if topo.nic(x) is None:
                continue
            r = path_rank(nic_path(topo, g, x)[0])
            if r is not None and 0 < r <= limit:
                slots.add(s)
        if len(slots) != 1:
            return None
        mapping[g] = slots.pop()
        near_slots.add(mapping[g])
    if len(near_slots) != len(present):
        return None
    # the tools number GPUs in PCI bus order, and the port map's slots follow it: a
    # mapping that reorders GPUs is a card moved, not a slot told
    order = [mapping[g] for g in sorted(present)]
    if order != sorted(order):
        return None
    empty = sorted(set(range(n_exp)) - near_slots)
    if len(empty) != n_exp - len(present):
        return None
    if not all(slot_nics[s] and all(topo.nic(x) is not None for x in slot_nics[s])
               for s in empty):
        return None
    return mapping, empty


# -- a GPU that lost every NVLink: what says it has NVLinks at all

#: PCIe products sold as NVLink-bridged pairs (or quads): the model says the card is meant
#: to be bridged, not that this one is (a card may be installed without its bridges).
_BRIDGED_PART = re.compile(r"\b(H100|H200) NVL\b", re.I)


@lru_cache(maxsize=256)
def nvlink_board_layouts(name: str) -> Tuple[str, ...]:
    """The bundled layouts that are NVLink boards of the GPU model ``name`` (its
    ``gpus.name_pattern`` matches, and it gives NVLink to every GPU): an SXM/HGX part,
    which exists only on such boards.  Empty for a PCIe card (its layouts, bridged pairs
    picked by GPU name, say what a bridged server is, not that every such card is bridged),
    a GeForce card, or a name no bundled layout knows."""
    from .. import layouts

    out: List[str] = []
    for ln in layouts.names():
        lay = layouts.load(ln)
        pattern, count = lay.gpus.name_pattern, lay.gpus.count
        if pattern is None or not isinstance(count, int) or count < 2 \
                or not layouts.name_matches(pattern, name):
            continue
        if lay.choice.requires_gpu_name:
            continue  # a PCIe card's layout: its NVLink is a bridge the card may not have
        per_gpu = lay.nvlink.links_per_gpu
        pairs = layout_pairs(lay, count)
        if (isinstance(per_gpu, int) and per_gpu > 0) or (
                pairs and all(any(c for (a, b), c in pairs.items() if g in (a, b))
                              for g in range(count))):
            out.append(ln)
    return tuple(out)


def lost_every_link(topo: Topology, v: View, i: int) -> bool:
    """GPU ``i``'s pasted NVLink text states no link up: nvidia-smi's "all links are
    inActive", or every link it lists inactive (``<inactive>``, dcgmi ``D``), none in MIG
    mode.  (NVML itself judges its own links: this is for text that cannot.)"""
    g = topo.gpu(i)
    tx = g.nvml_text if g is not None and g.nvml is None else None
    if tx is None:
        return False
    if tx.nvlink.status == "inactive" and not tx.nvlink.links:
        return True
    links = tx.nvlink.links
    return bool(links) and all(x.state == "inactive" and x.rule != "mig" for x in links)


def nvlink_owed(topo: Topology, v: View, i: int) -> Optional[Tuple[str, str]]:
    """What, other than a layout, says GPU ``i`` has NVLinks: ``(sure, why)`` with ``sure``
    one of the catalog's ``observed``/``inferred``/``missing``, or None (nothing does: a
    GeForce or unbridged PCIe card, whose links are idle by design).

    * ``observed``: the GPU is an SXM/HGX part (:func:`nvlink_board_layouts`) and another
      GPU of that model in the input has NVLinks up: the board is wired and trained;
    * ``inferred``: more than two GPUs have links up and their number is odd (2-way bridges
      pair cards, so an odd count is a switch or mesh board); or the model is sold as a
      bridged pair (H100 NVL, H200 NVL); or an SXM/HGX part whose every GPU shown has
      none up (the whole board's links down, or a partition that turned them off);
    * ``missing``: an SXM/HGX part shown alone (a VM or partition given one GPU of the
      board has its NVLinks off by design; the text cannot tell)."""
    g = topo.gpu(i)
    name = g.name if g is not None and g.name else None
    peers = [k for k in v.present if k != i]

    def same(k: int) -> bool:
        other = topo.gpu(k)
        return name is None or other is None or not other.name or other.name == name

    up = [k for k in peers if same(k) and k in v.links and v.links[k].active > 0]
    board = nvlink_board_layouts(name) if name else ()
    shown = ", ".join(f"GPU{k}" for k in up[:4]) + (", ..." if len(up) > 4 else "")
    model = f"{name} is an SXM/HGX part (NVLink boards: {', '.join(board[:3])})" \
        if board else ""
    if board and up:
        return "observed", f"{model}, and {shown} of the same model have NVLinks up"
    if len(up) >= 3 and len(up) % 2 == 1:
        return "inferred", (f"{len(up)} other GPUs ({shown}) have NVLinks up: an odd number, "
                            "so not 2-way bridge pairs but a switch or mesh board")
    if name and _BRIDGED_PART.search(name):
        return "inferred", (f"{name} is sold as NVLink-bridged cards (or its bridges were "
                            "never fitted)")
    if board and any(same(k) for k in peers):
        return "inferred", (f"{model}; no GPU of it shown has NVLinks up (the board's "
                            "links down, or a partition that turned them off)")
    if board:
        return "missing", (f"{model}, shown alone: a VM or partition given one GPU of the "
                           "board has its NVLinks off by design")
    return None
