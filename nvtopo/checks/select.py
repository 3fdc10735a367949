"""Which layout a node is: by GPU name and count where known, else by the shape of its matrix.

Selection scores every candidate layout and takes the nearest, not an exact
match, so a degraded node (a GPU missing, a link down) still picks its own
layout.  Mesh layouts (DGX-1) match up to GPU renumbering: the mapping found
is reported and the layout is renumbered to the node's GPU indices before
the checks run.  When several layouts fit equally (8 GPUs with NV18 on every
pair: DGX H100, HGX H100, H20, B200... without GPU names), the selection lists
them all, says what would decide (the GPU names) and picks the most common (the
layout's ``selection.priority``).
"""

from __future__ import annotations

from ..plain import field, plain
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import layouts as layouts_pkg
from ..layouts.doc import Nics, copy_section
from ..model import Topology
from . import facts as F
from .fit import (Candidate, best_mapping, gpu_names, gpu_names_kept, name_exclusion,
                  names_exclude, remap, score, subset_text)

__all__ = ["HOW", "Candidate", "Selection", "absent_links", "best_mapping", "given",
           "gpu_names", "remap", "score", "select", "subset_text"]


#: How the layout was chosen (:attr:`Selection.how`).
HOW = ("user", "auto", "ambiguous", "none")


@plain
class Selection:
    """What selection decided, for the checks: the layout (typed, renumbered to the node's
    GPUs), how it was chosen, and what the checks must know of the choice."""

    #: the layout the checks run against (None: no layout fits; layout-independent checks).
    layout: Optional[layouts_pkg.Layout]
    reason: str = ""
    #: ``user`` (``--layout NAME``/``--layout-file``), ``auto`` (the one best fit),
    #: ``ambiguous`` (auto, several fit equally: :attr:`ties`), ``none`` (nothing fits).
    how: str = "user"
    #: the layouts that fit equally (auto, ambiguous), the picked one first.
    ties: List[str] = field(default_factory=list)
    #: node GPU -> layout GPU where the layout was renumbered (a mesh, slots told by NICs).
    mapping: Optional[Dict[int, int]] = None
    #: layout slots no node GPU maps to (a GPU missing from a mesh).
    absent_slots: List[int] = field(default_factory=list)
    #: node GPU -> the NVLinks it had to the absent slots (links gone with the GPU).
    links_to_absent: Dict[int, int] = field(default_factory=dict)
    #: layout slots the port map's NICs show empty (their NIC on the bus, no GPU near it).
    empty_slots: List[int] = field(default_factory=list)
    #: the port map's NICs placed each GPU in its slot (per-index expectations hold).
    slots_known: bool = False
    #: the layout's port map as written, before renumbering (GPU slot -> NIC names).
    port_map: Optional[Dict[int, List[str]]] = None
    #: why the layout's NIC section is not applied (auto: the node's NICs contradict it).
    nics_dropped: Optional[str] = None
    #: layouts that fit as well as the pick and state no NUMA map (its map may not be the
    #: node's: NUMA findings are warnings).
    numa_unsure: List[str] = field(default_factory=list)
    candidates: List[Candidate] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.layout.name if self.layout is not None else "none"


def given(layout: Optional[layouts_pkg.Layout], reason: str = "") -> Selection:
    """A selection of a layout given as it is (``None``: no layout): nothing renumbered,
    nothing dropped."""
    return Selection(layout=layout, reason=reason, how="user" if layout is not None else "none")


def absent_links(layout: layouts_pkg.Layout, mapping: Dict[int, int]
                 ) -> Tuple[List[int], Dict[int, int]]:
    """Layout slots no node GPU maps to (a GPU missing from a mesh), and how many NVLinks
    each node GPU had to them: links the missing GPU took down with it."""
    n_layout = layout.gpus.count
    if layout.nvlink.pairs is None or n_layout is None or \
            all(k == v for k, v in mapping.items()):
        return [], {}
    absent = sorted(set(range(n_layout)) - set(mapping.values()))
    if not absent:
        return [], {}
    orig = F.layout_pairs(layout, n_layout)
    return absent, {k: sum(orig.get((min(t, s), max(t, s)), 0) for s in absent)
                    for k, t in mapping.items()}


def select(topo: Topology, choice: Any = "auto", layout_file: Optional[str] = None
           ) -> Selection:
    """Choose the layout: a named one, a user's file, one already read (a ``Layout``), or
    ``auto``."""
    v = F.view(topo)
    if layout_file is not None:
        lay = layouts_pkg.load_file(layout_file)
        cand = score(topo, v, lay)
        return _chosen(cand, f"--layout-file {layout_file}", [cand])
    if isinstance(choice, layouts_pkg.Layout):  # named and read once by the caller
        named = (f"--layout {choice.name}" if choice.origin == "bundled"
                 else f"--layout-file {choice.origin}")
        cand = score(topo, v, choice)
        return _chosen(cand, named, [cand])
    if choice != "auto":
        lay = layouts_pkg.load(choice)
        cand = score(topo, v, lay)
        return _chosen(cand, f"--layout {choice}", [cand])
    cands = []
    names = gpu_names_kept(topo)[0]
    for lay, excluded in _weighed(tuple(layouts_pkg.names()), names):
        if lay.choice.requires_nic_names and not _nics_named(topo, lay):
            continue
        cands.append(Candidate(layout=lay, excluded=name_exclusion(lay, names)) if excluded
                     else score(topo, v, lay))
    fit = [c for c in cands if c.fits and c.excluded is None]
    if any(c.subset_of is not None for c in cands) and not v.absent_in and not v.lost:
        # the GPUs fit a larger board as a subset (their pairs say nothing against it): a
        # smaller board fitting only with GPUs gone is no better evidence, so neither wins
        n = len(v.present)
        fit = [c for c in fit if not (c.layout.gpus.count is not None
                                      and n < c.layout.gpus.count)]
        if any(c.exact for c in cands if c.subset_of is not None):
            # the pairs are exactly a larger board's (a container given part of it): a
            # layout of this GPU count wins only by name, or by shape where it explains
            # every fact too; one that needs a fault to fit (pairs short or different,
            # GPUs on other NUMA nodes, NICs against its own) would report a healthy node
            # broken (4 of 8 A100s, NV12, are not a GB200 tray with 6 NVLinks down)
            others = [c for c in fit if not c.by_name and not (
                c.exact and not c.numa_bad and not c.nic_count_off
                and c.nic_contradiction is None)]
            fit = [c for c in fit if c not in others]
            for c in others:
                c.fits = False
                c.excluded = (f"its pairs are a larger board's exactly; {c.layout.name} "
                              "fits only with a fault (" + "; ".join(c.why) + ")")
        for c in cands:
            cnt = c.layout.gpus.count
            if c.fits and c.subset_of is None and cnt is not None and n < cnt \
                    and not any(str(w).endswith(" short") or " different" in str(w)
                                for w in c.why):
                c.subset_of = cnt
    if not fit:
        return Selection(layout=None, reason=_none_reason(topo, v, cands), how="none",
                         candidates=cands)
    # a layout whose NIC facts fit is preferred to one the NICs contradict
    fit.sort(key=lambda c: (c.nic_contradiction is not None, -c.score, -c.layout.priority,
                            c.numa_bad, c.layout.name))
    top = fit[0]
    # (a layout whose NUMA map the GPUs misfit more than the pick's does not fit equally)
    ties = [c for c in fit if _equal_fit(c, top) and c.numa_bad <= top.numa_bad
            and (c.nic_contradiction is None) == (top.nic_contradiction is None)]
    reason = "auto: " + "; ".join(top.why) + _ambiguity_text(topo, fit, ties)
    if top.nic_contradiction is not None:
        reason += (f"; the NICs do not fit {top.layout.name} ({top.nic_contradiction}): its "
                   "NIC expectations are not applied")
    # picked by shape among layouts that disagree on NUMA: the GPUs misfit the pick's map
    # and an equal fit states none, so the misfit is reported, not failed
    unsure = [c.layout.name for c in ties if c.numa_bad == 0
              and c.layout.numa.gpu_numa is None] if top.numa_bad else []
    return _chosen(top, reason, cands, how="ambiguous" if len(ties) > 1 else "auto",
                   ties=[c.layout.name for c in ties] if len(ties) > 1 else [],
                   numa_unsure=unsure)


def _equal_fit(c: Candidate, top: Candidate) -> bool:
    """``c`` fits the node as well as ``top`` on what tells them apart.  The GPUs' NUMA
    nodes say which board of a GPU model a node is (a DGX A100's map, not a generic HGX
    A100's), never which GPU model: fitting one model's NUMA map is no evidence against
    another model's layout that states none (8 GPUs, NV18 on every pair, no names: an
    H100 board and a B200 board alike)."""
    a, b = c.score, top.score
    if c.layout.family != top.layout.family:
        if c.layout.numa.gpu_node is None:
            b -= top.numa_bonus
        if top.layout.numa.gpu_node is None:
            a -= c.numa_bonus
    return abs(a - b) < 1e-9


def _ambiguity_text(topo: Topology, fit: List[Candidate], ties: List[Candidate]) -> str:
    """What the reason adds: every layout that fits equally and what would decide between
    them (the GPU names, where the ties are of different GPU models and none is known),
    else the next best fit."""
    top = fit[0]
    if len(ties) <= 1:
        return f"; next: {fit[1].layout.name}" if len(fit) > 1 else ""
    text = ("; ambiguous: " + ", ".join(c.layout.name for c in ties)
            + f" fit equally, picked {top.layout.name} (the most common); ")
    patterns = {c.layout.gpus.name_pattern for c in ties}
    if len(patterns) > 1 and not gpu_names(topo)[0]:
        text += ("the GPU names would decide (a snapshot, or `nvidia-smi -q` pasted in "
                 "the same file), or ")
    return text + "give --layout NAME to choose"


def _weighed(layout_names: Tuple[str, ...], names: Sequence[str]
             ) -> Tuple[Tuple[Any, bool], ...]:
    """:func:`_auto_layouts` for GPU model names ``names``, kept by the part of each name a
    layout's pattern searches (``layouts.NAME_SEARCH_LIMIT``, as ``names_match`` keeps its
    answers: a name read from a file can be megabytes long); a node of more than a few
    GPU models (none is) is weighed afresh, not kept."""
    cut = tuple(n[:layouts_pkg.NAME_SEARCH_LIMIT] for n in names)
    return _auto_layouts(layout_names, cut) if len(cut) <= 4 \
        else _auto_layouts.__wrapped__(layout_names, cut)


@lru_cache(maxsize=16)
def _auto_layouts(layout_names: Tuple[str, ...], names: Tuple[str, ...]
                  ) -> Tuple[Tuple[Any, bool], ...]:
    """The bundled layouts (named ``layout_names``) auto selection weighs for a node whose
    GPU model names are ``names``, each with whether those names exclude it, in order: a
    layout that cannot be recognised from inside the node (a cloud SKU without its own
    device names) is only used when named, and a ``requires_gpu_name`` one only where the
    names match (a PCIe box's shape fits any PCIe box); ``requires_nic_names`` ones also
    need their NICs' names (:func:`_nics_named`, asked of each node).  Kept (the layouts
    and flags only: the words naming a node's GPU are made for each node): a fleet's
    nodes, read in one process, name the same few GPU models.  The bundled layouts are
    read once per process (``layouts.load``), so the names of them are their key."""
    out = []
    for lay in map(layouts_pkg.load, layout_names):
        choice = lay.choice
        if choice.auto is False:
            continue
        excluded = names_exclude(lay, names)
        if choice.requires_gpu_name and (excluded or not names or not lay.gpus.name_pattern):
            continue
        out.append((lay, excluded))
    return tuple(out)


def _nics_named(topo: Topology, layout: Any) -> bool:
    """The node has a NIC under one of the layout's compute NIC names."""
    keys = F.nic_keys(topo)
    return any(n in keys for n in layout.compute_nic_names or [])


def _chosen(cand: Candidate, reason: str, cands: List[Candidate], how: str = "user",
            ties: Sequence[str] = (), numa_unsure: Sequence[str] = ()) -> Selection:
    lay = cand.layout
    mapping = cand.mapping
    if reason.startswith("--"):
        reason += ": " + ("; ".join(cand.why) if cand.why else "chosen by the user")
        if cand.subset_of is not None:
            # named: the board is asserted, so "a subset?" (auto's guess) is GPUs missing
            reason += f" (does not fit: GPUs missing from its {cand.subset_of}-GPU board)"
        elif cand.excluded:
            reason += f" (does not fit: {cand.excluded})"
    sel = Selection(layout=lay, reason=reason, how=how, ties=list(ties), candidates=cands,
                    numa_unsure=list(numa_unsure))
    if mapping and any(k != v for k, v in mapping.items()):
        sel.layout = remap(lay, mapping)
        sel.mapping = mapping
        sel.absent_slots, sel.links_to_absent = absent_links(lay, mapping)
    if cand.empty_slots:
        # the port map's NICs tell which slots are empty: the checks see the layout
        # numbered as the node numbers its GPUs, and gpu.missing names the empty slots
        sel.empty_slots, sel.slots_known = list(cand.empty_slots), True
        sel.port_map = lay.nics.placement.port_map
    if cand.nic_contradiction is not None and how != "user":
        # auto: the NIC evidence contradicts this layout's NIC facts; its other sections
        # still apply, the NICs get only the layout-independent checks
        shown = sel.layout
        assert shown is not None
        sel.layout = shown.with_doc(copy_section(shown.doc, nics=Nics()))
        sel.nics_dropped = cand.nic_contradiction
    return sel


def _none_reason(topo: Topology, v: F.View, cands: List[Candidate]) -> str:
    n = len(v.present)
    by_name, _ = gpu_names(topo)
    subset = [c.subset_of for c in cands if c.subset_of is not None]
    if subset:
        return (f"no layout fits: {subset_text(n, subset)} (a container, a VM or CUDA_VISIBLE_DEVICES "
                "showing part of a board; no source says a GPU is gone); only "
                "layout-independent checks ran (give --layout NAME to check the full board)")
    names = by_name
    what = f"{n} GPU{'s' if n != 1 else ''}" + (f" ({names[0]})" if names else "")
    nv = sorted({c for c, _ in v.pairs.values()})
    if nv and nv != [0]:
        what += ", NV# " + "/".join(f"NV{x}" for x in nv if x)
    elif v.pairs:
        what += ", no NVLink between GPUs"
    # NVSwitch advice only where there are GPUs (an ibstat paste has none to link)
    fabric = "; if this is an NVSwitch system whose fabric is down, name its layout" if n \
        else ""
    return (f"no layout fits: {what}; only layout-independent checks ran (give "
            f"--layout NAME or --layout-file FILE{fabric})")
