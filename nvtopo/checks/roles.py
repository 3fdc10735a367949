"""NIC roles, decided once: compute, storage, management or unknown, with the evidence.

Every family that asks "is this a compute NIC?" (NIC placement and count, InfiniBand ports,
PCIe links, layout selection, ``layouts capture``, the cluster's rails) takes the answer from
:func:`resolve`, so two families cannot answer differently.  The evidence, strongest first:

``placement``
    the NIC sits at PIX or PXB from a GPU the node shows (behind a GPU's PCIe switch): a
    compute NIC.  Placement candidates beyond the layout's compute count that run another
    link layer than its compute ports are storage (``link_layer``).
``card``
    a NIC off every GPU's switch, single-function, of the card model, link layer and rate
    the compute NICs share (and on their subnet manager, where InfiniBand says): a compute
    card whose GPU is missing, or moved to another slot, as many as the compute count lacks.
    More such cards than the count lacks: which of them are compute cannot be told
    (unknown).
``link_layer``
    a NIC on another link layer than the compute ports is not a compute NIC.  With no
    compute NIC placed to compare with (a pasted ``ibstat``), a port map name on another
    link layer than the layout's compute ports is unknown: a compute port in another mode
    and a renamed storage port look the same.
``sm_lid``
    an InfiniBand port whose subnet manager (SM LID) is none of the compute ports' is on
    another subnet: not a compute NIC; one on theirs, or (with no compute NIC to compare
    with) any SM LID beside the layout's InfiniBand compute ports, supports a compute role.
``port_map``
    the layout's names (``nics.compute.names``, ``nics.placement.gpu_nic``): only where the
    structure does not contradict them (names follow the OS, udev rules, driver and BIOS).
    A name that structure contradicts decides nothing: the structure does, or, where there
    is no other evidence, the role is unknown.

Non-compute NICs are storage, or management where their card model tops out below
100 Gb/s.  ``unknown`` is a role: nothing decided it (no placement, no port map name the
structure agrees with).  A finding about a port whose role is unknown is at most a warning
and says "role unknown", never "not a compute port".

Pure, and computed once per check run: under :func:`facts.shared_views` the answer is kept
in the model's shared view (keyed by the layout and the GPUs present and missing).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..model import Topology, path_rank
from ..plain import field, plain
from . import facts as F
from .nicfacts import (SLOW_CARDS, VF_CARDS, _active, _down, _hca, _siblings,  # noqa: F401
                       card, held_lids, layers, rates, single_function, sm_lids)

COMPUTE, STORAGE, MANAGEMENT, UNKNOWN = "compute", "storage", "management", "unknown"
ROLES = (COMPUTE, STORAGE, MANAGEMENT, UNKNOWN)
#: The evidence kinds, strongest first (``none``: nothing decided the role).
EVIDENCE = ("placement", "card", "link_layer", "sm_lid", "port_map", "none")
#: A non-compute card model whose best port rate is below this is a management NIC.
MANAGEMENT_BELOW_GBPS = 100


@plain
class Role:
    """One NIC's role and why."""

    nic: str
    role: str
    #: the kind of evidence that decided it (one of :data:`EVIDENCE`)
    by: str
    #: what decided it, in words (the first is the deciding one)
    evidence: List[str] = field(default_factory=list)
    #: the layout's port map names this NIC as a compute NIC
    named: bool = False
    #: not decided compute, yet of the compute NICs' kind (a compute card the count cannot
    #: place: a moved card, or one of more candidates than the count lacks)
    maybe_compute: bool = False

    def why(self) -> str:
        return "; ".join(self.evidence) if self.evidence else "no evidence"


@plain
class Roles:
    """Every NIC's :class:`Role`, in the model's NIC order."""

    roles: Dict[str, Role] = field(default_factory=dict)
    #: how the compute NICs were told apart: ``placement`` (PCI structure), ``names`` (only
    #: the layout's port map: no structure to go by), ``none``
    how: str = "none"
    #: the compute NICs: named ones in the port map's order, then the others in NIC order
    compute: List[str] = field(default_factory=list)

    def role(self, name: str) -> str:
        r = self.roles.get(name)
        return r.role if r is not None else UNKNOWN

    def get(self, name: str) -> Optional[Role]:
        return self.roles.get(name)

    def of_role(self, role: str) -> List[str]:
        return [n for n, r in self.roles.items() if r.role == role]


def _best_path(name: str, present: Sequence[int], path: Any
               ) -> Optional[Tuple[int, str, int]]:
    """(rank, token, GPU) of the NIC's shortest path to a present GPU; None if none known
    (``path``: :func:`facts.nic_paths` of the node)."""
    best = None
    for g in present:
        tok, _ = path(g, name)
        r = path_rank(tok)
        if r is not None and tok is not None and (best is None or r < best[0]):
            best = (r, tok, g)
    return best


def _best_paths(topo: Topology, names: List[str], present: Sequence[int]
                ) -> Dict[str, Optional[Tuple[int, str, int]]]:
    """:func:`_best_path` of each NIC (read-only; kept in the shared view's memo: the same
    for every layout selection resolves the roles for)."""
    memo = F.view(topo).memo if F.sharing() else None
    key = ("best_paths", tuple(names), tuple(present))
    hit = memo.get(key) if memo is not None else None
    if hit is None:
        path = F.nic_paths(topo)
        hit = {x: _best_path(x, present, path) for x in names}
        if memo is not None:
            memo[key] = hit
    return hit


# --- the layout's NIC facts (read here only) ---------------------------------------------


def port_map_names(layout: Any) -> List[str]:
    """The NICs the layout names as compute NICs (``nics.compute.names``, then the GPU-NIC
    port map's), in order."""
    if layout is None:
        return []
    named: List[str] = list(layout.nics.compute.names or [])
    for x in layout.nics.placement.port_names:
        if x not in named:
            named.append(x)
    return named


def _want(layout: Any) -> Tuple[Optional[str], Optional[float], Optional[int]]:
    if layout is None:
        return None, None, None
    comp = layout.nics.compute
    return (comp.link_layer, float(comp.rate_gbps) if comp.rate_gbps is not None else None,
            comp.count)


# --- the resolver --------------------------------------------------------------------------


def resolve(topo: Topology, layout: Any = None, present: Optional[Sequence[int]] = None,
            missing: Optional[Sequence[int]] = None) -> Roles:
    """Every NIC's role (see the module docstring).  ``present``: the GPUs the node shows
    (default: the shared view's); ``missing``: the GPUs the layout has and the node lacks
    (default: :func:`facts.missing_gpus`).  Computed once per check run."""
    v = F.view(topo)
    pres = tuple(v.present if present is None else present)
    miss = tuple(F.missing_gpus(layout, v) if missing is None and layout is not None
                 else (missing or ()))
    key = ("roles", id(layout), pres, miss)
    memo = v.memo if F.sharing() else None
    if memo is not None:
        hit = memo.get(key)
        if hit is not None and hit[0] is layout:
            return hit[1]
    out = _resolve(topo, layout, list(pres), list(miss))
    if memo is not None:
        memo[key] = (layout, out)
    return out


def structural_compute(topo: Topology, present: Sequence[int]) -> List[str]:
    """``resolve(topo, None, present).compute``: the compute NICs the structure alone
    tells, with no layout to say more (selection asks it of every node, to test a layout's
    compute link layer).  Where a NIC sits behind a present GPU's switch these are exactly
    the NICs there, in NIC order: with no layout there is no compute count to fill and no
    port map name, so nothing off a GPU's switch can be compute (``tests/test_roles.py``
    holds the two answers equal over every model in ``fixtures/``); else the whole
    resolver (a pasted ``ibstat`` decides by its own evidence)."""
    names = [n.name for n in topo.nics]
    placed = _placed(names, _best_paths(topo, names, present))
    return placed or list(resolve(topo, None, present, ()).compute)


def _placed(names: List[str], best: Dict[str, Optional[Tuple[int, str, int]]]) -> List[str]:
    """The NICs behind a GPU's PCIe switch (PIX or PXB to a present GPU), in NIC order."""
    pxb = path_rank("PXB")
    return [x for x in names if best[x] is not None and best[x][0] <= pxb]  # type: ignore[index]


def compute_nics(topo: Topology, layout: Any = None, present: Optional[Sequence[int]] = None,
                 missing: Optional[Sequence[int]] = None) -> Tuple[List[str], str]:
    """The compute NICs and how they were told apart (the resolver's answer)."""
    r = resolve(topo, layout, present, missing)
    return list(r.compute), r.how


def _resolve(topo: Topology, layout: Any, present: List[int], missing: List[int]) -> Roles:
    r = _Resolver(topo, layout, present, missing)
    r.by_placement()
    r.compute_kind()
    pool, lack = r.off_place()
    if pool:
        r.decide_pool(pool, lack)
    r.by_paste()
    r.the_rest()
    r.management()
    return r.roles()


class _Resolver:
    """The roles of one node's NICs being decided: by placement first, then the compute
    NICs' kind (card model, link layers, rates, subnet managers) against the rest, then the
    port map's names among the cards the structure allows."""

    def __init__(self, topo: Topology, layout: Any, present: List[int],
                 missing: List[int]) -> None:
        self.topo, self.layout, self.missing = topo, layout, missing
        self.want_layer, self.want_rate, self.count = _want(layout)
        self.named = port_map_names(layout)
        self.names = [n.name for n in topo.nics]
        self.decided: Dict[str, Role] = {}
        self.best = _best_paths(topo, self.names, present)
        self.placed: List[str] = []
        self.kinds: Set[Tuple[Optional[str], Tuple[str, ...]]] = set()
        self.comp_rates: Set[float] = set()
        self.comp_sms: Set[int] = set()
        self.comp_single = False

    def by_placement(self) -> None:
        """Placement: behind a GPU's PCIe switch (beyond the layout's compute count, a NIC
        there on another link layer is storage)."""
        topo, best, decided, named = self.topo, self.best, self.decided, self.named
        want_layer, count = self.want_layer, self.count
        cands = _placed(self.names, best)
        if want_layer and count is not None:
            same = [x for x in cands if want_layer in layers(topo, x)]
            other = [x for x in cands if layers(topo, x) and want_layer not in layers(topo, x)]
            if other and len(same) >= count:
                for x in other:
                    r, tok, g = best[x]  # type: ignore[misc]
                    decided[x] = Role(x, STORAGE, "link_layer", [
                        f"runs {'/'.join(sorted(layers(topo, x)))} at {tok} to GPU{g}, beside "
                        f"{len(same)} {want_layer} NICs behind GPU switches ({count} compute "
                        "NICs in the layout)"], named=x in named)
                cands = [x for x in cands if x not in other]
        for x in cands:
            _, tok, g = best[x]  # type: ignore[misc]
            decided[x] = Role(x, COMPUTE, "placement",
                              [f"{tok} to GPU{g} (behind its PCIe switch)"], named=x in named)
        self.placed = list(cands)

    def compute_kind(self) -> None:
        """The compute NICs' kind: card model, link layers, rates, subnet managers."""
        topo, placed = self.topo, self.placed
        self.kinds = {(card(topo, x), tuple(sorted(layers(topo, x)))) for x in placed}
        self.comp_rates = set().union(*(rates(topo, x) for x in placed)) if placed \
            else ({self.want_rate} if self.want_rate else set())
        self.comp_sms = set().union(*(sm_lids(topo, x) for x in placed)) if placed \
            else set()
        self.comp_single = any(single_function(topo, x) for x in placed)

    def against(self, x: str) -> Optional[Tuple[str, str]]:
        """Structure that says ``x`` is not a compute NIC: (evidence kind, words)."""
        topo, placed, kinds, want_layer = self.topo, self.placed, self.kinds, self.want_layer
        comp_rates, comp_sms = self.comp_rates, self.comp_sms
        lay = layers(topo, x)
        ref_layers = {lay_ for _, ls in kinds for lay_ in ls} if placed else (
            {want_layer} if want_layer else set())
        if lay and ref_layers and not lay & ref_layers:
            return "link_layer", (f"runs {'/'.join(sorted(lay))}, the compute ports "
                                  f"{'/'.join(sorted(ref_layers))}")
        if placed:
            model = card(topo, x)
            models = {m for m, _ in kinds if m}
            if model and models and model not in models:
                return "card", (f"card model {model}, the compute NICs' "
                                f"{'/'.join(sorted(models))}")
            if self.comp_single and single_function(topo, x) is False:
                return "card", "a dual-function card beside single-function compute cards"
        sms = sm_lids(topo, x)
        if sms and comp_sms and not sms & comp_sms:
            return "sm_lid", (f"SM LID {'/'.join(str(s) for s in sorted(sms))}, the compute "
                              f"ports' {'/'.join(str(s) for s in sorted(comp_sms))}: "
                              "another subnet")
        # A rate is evidence only between card models nvtopo cannot tell apart: a card of the
        # compute NICs' own model at another rate is a compute port running slow (the fault
        # ib.rate_low reports), not another role (GPU3 missing on a DGX Station and its NIC
        # at 56 of 100 Gb/s: the rate made it "storage" and the rate fault went unreported).
        my_rates = rates(topo, x)
        same_model = card(topo, x) is not None and card(topo, x) in {m for m, _ in kinds if m}
        if my_rates and comp_rates and not my_rates & comp_rates and placed and not same_model:
            return "card", (f"runs at {'/'.join(_g(r) for r in sorted(my_rates))} Gb/s, the "
                            f"compute ports at {'/'.join(_g(r) for r in sorted(comp_rates))}")
        return None

    def support(self, x: str) -> List[str]:
        """Structure that agrees with a compute role for ``x`` (words)."""
        topo, placed, kinds, want_layer = self.topo, self.placed, self.kinds, self.want_layer
        comp_rates, comp_sms = self.comp_rates, self.comp_sms
        out: List[str] = []
        model, lay = card(topo, x), layers(topo, x)
        if placed and model and any(model == m for m, _ in kinds):
            out.append(f"card model {model} as the compute NICs")
        if lay and (want_layer in lay if not placed and want_layer else
                    any(set(ls) == lay for _, ls in kinds)):
            out.append(f"link layer {'/'.join(sorted(lay))} as the compute ports")
        if rates(topo, x) & comp_rates:
            out.append(f"rate {'/'.join(_g(r) for r in sorted(rates(topo, x) & comp_rates))} "
                       "Gb/s as the compute ports")
        sms = sm_lids(topo, x)
        if sms and (sms & comp_sms if comp_sms else
                    (not placed and want_layer == "InfiniBand")):
            out.append(f"SM LID {'/'.join(str(s) for s in sorted(sms))}"
                       + (" as the compute ports (their subnet)" if comp_sms else
                          " (on an InfiniBand subnet, as the layout's compute ports)"))
        return out

    def off_place(self) -> Tuple[List[str], Optional[int]]:
        """The NICs off a GPU's place that structure decides (storage, or unknown where
        nothing is placed to compare with), and the pool left for the compute places still
        open: compute cards off their place, or the port map's names; with how many
        compute places are open (None: as many as there are)."""
        topo, placed, named, decided = self.topo, self.placed, self.named, self.decided
        count = self.count
        if count is not None:
            lack: Optional[int] = max(0, count - len(placed))
        else:
            lack = None if self.missing and placed else 0  # None: as many as there are
        pool: List[str] = []
        for x in self.names:
            if x in decided:
                continue
            why = self.against(x)
            if why is not None and placed:
                decided[x] = Role(x, STORAGE, why[0], [why[1]], named=x in named)
                continue
            if why is not None:
                # nothing placed to compare with: the layout alone says what compute ports
                # run, and a compute port in another mode looks the same as a storage port
                decided[x] = Role(x, UNKNOWN, "none", [
                    ("the layout's port map names it a compute NIC, but it " if x in named
                     else "no PCI placement to a GPU; it ") + why[1]], named=x in named)
                continue
            if placed:
                # a compute card off its place: single-function and its kind, where known
                if single_function(topo, x) is False or (
                        (card(topo, x), tuple(sorted(layers(topo, x)))) not in self.kinds):
                    continue
                pool.append(x)
            elif x in named and self.layout is not None:
                pool.append(x)
        # named ones first: the port map's names decide among cards the structure allows
        pool.sort(key=lambda x: (x not in named, self.names.index(x)))
        return pool, lack

    def decide_pool(self, pool: List[str], lack: Optional[int]) -> None:
        """The pool's roles: compute for as many as the open places take (the named ones
        where they alone fit), storage where no place is open, else unknown."""
        placed, named, count = self.placed, self.named, self.count
        take: List[str] = []
        if lack is None or len(pool) <= lack:
            take = list(pool)
        elif lack > 0:
            nm = [x for x in pool if x in named]
            if nm and len(nm) <= lack:
                take = nm
        for x in pool:
            if x in take:
                self.decided[x] = self._taken(x, lack)
            elif placed and not lack:
                far = self.best[x]
                self.decided[x] = Role(x, STORAGE, "placement", [
                    "a card of the compute NICs' kind off every GPU's switch"
                    + (f" ({far[1]} to GPU{far[2]} at best)" if far is not None else "")
                    + (f", and the layout's {count} compute NICs are all placed"
                       if count is not None else ", and no GPU is missing")],
                    named=x in named)
            else:
                self.decided[x] = Role(x, UNKNOWN, "none", [
                    f"a card of the compute NICs' kind off every GPU's switch, and "
                    f"{len(pool)} such cards for {lack} compute place(s) left"
                    if placed else
                    "the layout's port map names it, and the compute count is full"],
                    named=x in named, maybe_compute=bool(placed))

    def _taken(self, x: str, lack: Optional[int]) -> Role:
        """``x`` taken for an open compute place: a compute card off its place (card), or a
        port map name (port_map)."""
        placed, named, count = self.placed, self.named, self.count
        far = self.best[x]
        where = (f"off every GPU's switch ({far[1]} to GPU{far[2]} at best)"
                 if far is not None else "its PCI placement not known")
        if placed:
            ev = [f"a compute card {where}: " + ", ".join(
                self.support(x) or ["of the compute NICs' kind"])]
            by = "card"
        else:
            ev = [f"the layout's port map names it; {where}"] + self.support(x)
            by = "port_map"
        if placed and x in named:
            ev.append("the layout's port map names it")
        if lack is not None and placed:
            ev.append(f"{len(placed)} compute NICs placed of the layout's "
                      f"{count}" if count is not None else
                      f"{len(self.missing)} GPU(s) missing")
        return Role(x, COMPUTE, by, ev, named=x in named)

    def by_paste(self) -> None:
        """A pasted ibstat/ibv_devinfo/ibstatus alone (no NIC placed, none with a PCI path to
        a GPU): the paste says which ports carry data.  The compute kind is the card model
        and link layer most of the paste's NICs run active (at least two, more than those of
        the kind that are down); a NIC of that kind is compute (a dual-function card beside
        single-function ones, or one on another subnet manager, is not); one of another kind
        is not.  With no such kind: an InfiniBand virtual function (handed to a pod or VM to
        carry its data) is compute, and so is an InfiniBand port holding the LID the paste's
        one subnet manager gave it.  Anything else stays unknown."""
        topo = self.topo
        if self.placed or any(self.best[x] is not None for x in self.names):
            return
        hw = [x for x in self.names if _hca(topo, x) is not None and not _hca(topo, x).soft]
        und = [x for x in hw if x not in self.decided]
        kind, up, down = self._paste_kind(hw)
        if kind is not None and self.want_layer and self.want_layer not in kind[1]:
            kind, up, down = None, [], []  # not the layout's compute network
        sms = set().union(*(sm_lids(topo, x) for x in hw)) if hw else set()
        for x in und:
            r = self._paste_role(x, kind, up, down, sms) or Role(x, UNKNOWN, "none", [
                "the paste alone does not tell (no card model active on 2 or more of its "
                "NICs, more than are down; no InfiniBand VF; no LID from the paste's one "
                "subnet manager)"])
            r.named = x in self.named
            self.decided[x] = r

    def _paste_kind(self, und: List[str]) -> Tuple[Any, List[str], List[str]]:
        """The paste's compute kind (card model, link layers, single-function), its NICs up,
        and down."""
        topo = self.topo
        groups: Dict[Tuple[Optional[str], Tuple[str, ...], Optional[bool]], List[str]] = {}
        for x in und:
            k = (card(topo, x), tuple(sorted(layers(topo, x))), single_function(topo, x))
            if k[0] and k[1]:
                groups.setdefault(k, []).append(x)
        # a kind whose ports run below a compute NIC's rate is a management kind
        # (ibv_devinfo prints no rate: an active port of a card model that does not top
        # out below it counts)
        fast = {k: [x for x in g if any(r >= MANAGEMENT_BELOW_GBPS for r in rates(topo, x))
                    or (_active(topo, x) and not rates(topo, x) and k[0] not in SLOW_CARDS)]
                for k, g in groups.items()}
        ranked = sorted(((len(f), k) for k, f in fast.items() if f), key=lambda t: -t[0])
        if not ranked or ranked[0][0] < 2 or (len(ranked) > 1 and ranked[1][0] == ranked[0][0]):
            return None, [], []
        k = ranked[0][1]
        up = [x for x in groups[k] if _active(topo, x)]
        down = [x for x in groups[k] if _down(topo, x)]
        if len(up) <= len(down):
            return None, [], []
        return k, up, down

    def _paste_role(self, x: str, kind: Any, up: List[str], down: List[str],
                    sms: Set[int]) -> Optional[Role]:
        """One NIC's role by the paste's own evidence (see :meth:`by_paste`); None: none."""
        topo = self.topo
        model, lay = card(topo, x), tuple(sorted(layers(topo, x)))
        if kind is not None:
            words = (f"card model {kind[0]} and link layer {'/'.join(kind[1])}"
                     + (", single-function," if kind[2] else ""))
            at = sorted(set().union(*(rates(topo, u) for u in up)))
            seen = (f"the paste's compute kind: {len(up)} of its NICs active"
                    + (f" at {'/'.join(_g(r) for r in at)} Gb/s" if at else "")
                    + f", {len(down)} down")
            if (model, lay) != kind[:2]:
                if not model or not lay:
                    return None
                return Role(x, STORAGE, "card", [
                    f"card model {model}, link layer {'/'.join(lay)}: not {words}, {seen}"])
            if kind[2] is True and single_function(topo, x) is False:
                return Role(x, STORAGE, "card", [
                    "a dual-function card (its system image GUID is another NIC's) beside "
                    f"single-function cards of {words}, {seen}"])
            sib = [u for u in _siblings(topo, x) if _active(topo, u)]
            if sib and _down(topo, x):
                return Role(x, UNKNOWN, "none", [
                    f"{words} as {seen}; but the other port of its card ({', '.join(sib)}) is "
                    "up: a card cabled on one port by design or a lost link cannot be told"],
                    maybe_compute=True)
            comp_sms = set().union(*(sm_lids(topo, u) for u in up))
            mine = sm_lids(topo, x)
            if mine and comp_sms and not mine & comp_sms:
                return Role(x, STORAGE, "sm_lid", [
                    f"SM LID {'/'.join(str(s) for s in sorted(mine))}, the compute ports' "
                    f"{'/'.join(str(s) for s in sorted(comp_sms))}: another subnet"])
            return Role(x, COMPUTE, "card", [f"{words} as {seen}"])
        if "InfiniBand" in lay and model in VF_CARDS:
            return Role(x, COMPUTE, "card", [
                f"an InfiniBand virtual function ({model}): handed to a pod or VM to carry "
                "its data"])
        lids = held_lids(topo, x)
        if lids and len(sms) == 1:
            return Role(x, COMPUTE, "sm_lid", [
                f"holds LID {'/'.join(str(v) for v in sorted(lids))} from the subnet manager "
                f"at LID {next(iter(sms))}: a port of the paste's one managed InfiniBand "
                "subnet"])
        return None

    def the_rest(self) -> None:
        """NICs nothing above decided: storage off every GPU's switch, else unknown."""
        for x in self.names:
            if x in self.decided:
                continue
            far = self.best[x]
            if far is not None:
                self.decided[x] = Role(x, STORAGE, "placement", [
                    f"off every GPU's switch ({far[1]} to GPU{far[2]} at best)"],
                    named=x in self.named)
            else:
                self.decided[x] = Role(x, UNKNOWN, "none", [
                    "no PCI placement to a GPU, no port map name the structure agrees with"],
                    named=x in self.named)

    def management(self) -> None:
        """Storage or management: by the best rate of the card model among non-compute
        NICs."""
        topo = self.topo
        best_rate: Dict[Optional[str], float] = {}
        for x, r in self.decided.items():
            if r.role == STORAGE:
                for rate in rates(topo, x):
                    best_rate[card(topo, x)] = max(best_rate.get(card(topo, x), 0.0), rate)
        for x, r in self.decided.items():
            top = best_rate.get(card(topo, x))
            if r.role == STORAGE and top is not None and top < MANAGEMENT_BELOW_GBPS:
                r.role = MANAGEMENT
                r.evidence.append(f"its card model tops out at {_g(top)} Gb/s")

    def roles(self) -> Roles:
        """The roles in the node's NIC order; compute NICs in port map order first."""
        names = self.names
        roles = {x: self.decided[x] for x in names}
        comp = [x for x in self.named if roles.get(x) is not None
                and roles[x].role == COMPUTE]
        comp += [x for x in names if roles[x].role == COMPUTE and x not in comp]
        how = "placement" if self.placed else "names" if comp else "none"
        return Roles(roles=roles, how=how, compute=comp)


def _g(x: float) -> str:
    return f"{x:g}"


__all__ = ["COMPUTE", "EVIDENCE", "MANAGEMENT", "ROLES", "Role", "Roles", "STORAGE",
           "UNKNOWN", "VF_CARDS", "card", "compute_nics", "held_lids", "layers", "port_map_names", "rates", "resolve",
           "single_function", "sm_lids", "structural_compute"]
