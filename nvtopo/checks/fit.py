"""How well a node fits one layout: the score selection ranks the candidates by.

:func:`score` weighs the GPU name and count, the NVLink pairs (under the numbering of the
node's GPUs that fits best: :func:`best_mapping`, or the slots the port map's NICs show),
the NUMA map and the NICs, and says whether the layout fits, is excluded (and why), or
fits the node's GPUs as a subset of its board.  :mod:`.select` takes the nearest.
"""

from __future__ import annotations

from ..plain import field, plain
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import layouts as layouts_pkg
from ..layouts.doc import copy_section
from ..model import Topology, path_rank
from . import facts as F, roles


@plain
class Candidate:
    layout: Any
    score: float = 0.0
    fits: bool = False
    excluded: Optional[str] = None
    why: List[str] = field(default_factory=list)
    #: observed GPU index -> layout GPU index (meshes), identity otherwise.
    mapping: Optional[Dict[int, int]] = None
    #: why the node's NIC facts clearly contradict the layout's (its port map or link
    #: layer), or None: auto then does not apply the layout's NIC expectations.
    nic_contradiction: Optional[str] = None
    #: the GPU count of the board the node's GPUs look like a subset of, or None.
    subset_of: Optional[int] = None
    #: layout slots the port map's NICs show empty (their NIC on the bus, no GPU near it)
    #: when GPUs are missing by count; ``mapping`` then numbers the node's GPUs by slot.
    empty_slots: Optional[List[int]] = None
    #: the GPU name matches the layout's pattern.
    by_name: bool = False
    #: every GPU pair the input shows is as the layout has it, and some carry NVLinks.
    exact: bool = False
    #: GPU pairs as the layout has them (0 with every pair short: a fault on every pair).
    matched: int = 0
    #: GPUs on another NUMA node than the layout's map says.
    numa_bad: int = 0
    #: the score the GPUs earned by fitting the layout's NUMA map: evidence for it only
    #: against a layout whose map they misfit, none against one that states no map.
    numa_bonus: float = 0.0
    #: the input's compute NICs are not as many as the layout's.
    nic_count_off: bool = False


def best_mapping(observed: Dict[Tuple[int, int], int], nodes: Sequence[int],
                 expected: Dict[Tuple[int, int], int], n_layout: int,
                 tiebreak: Optional[Callable[[Dict[int, int]], int]] = None
                 ) -> Tuple[Dict[int, int], int]:
    """The injective map of observed GPUs onto layout GPUs with the fewest NV# mismatches.

    Branch and bound over permutations (8! at most; the identity gives the
    first bound and a mismatch count prunes every branch that cannot beat it).
    Among mappings with as few mismatches, ``tiebreak`` (lower is better: the GPUs whose
    NUMA node the mapping does not explain) decides, so a mesh with a degraded link is
    renumbered the way its NUMA nodes say.  Returns ``(mapping, mismatches)``.
    """
    nodes = list(nodes)
    tb = tiebreak if tiebreak is not None else (lambda _m: 0)

    def exp(a: int, b: int) -> int:
        return expected.get((min(a, b), max(a, b)), 0)

    def obs(a: int, b: int) -> Optional[int]:
        return observed.get((min(a, b), max(a, b)))

    best_map, best = _identity(observed, nodes, expected, n_layout)
    best_tb = tb(best_map) if best_map else 10 ** 9
    if best == 0 and best_tb == 0:
        return best_map, 0
    bound, pairs = _count_bound(observed, nodes, expected, n_layout)
    if (bound >= best and (tiebreak is None or bound > best or best_tb == 0)) \
            or bound > max(2, pairs // 4):
        return best_map, best
    # observed degree signature prunes quickly: assign in order of decreasing NV weight
    order = sorted(nodes, key=lambda a: -sum(obs(a, b) or 0 for b in nodes if b != a))
    assign: Dict[int, int] = {}
    used = [False] * n_layout

    def dfs(k: int, c: int) -> None:
        nonlocal best, best_map, best_tb
        if c > best or (c == best and (tiebreak is None or best_tb == 0)):
            return
        if k == len(order):
            t = tb(assign)
            if c < best or t < best_tb:
                best, best_map, best_tb = c, dict(assign), t
            return
        a = order[k]
        for t in range(n_layout):
            if used[t]:
                continue
            add = 0
            for b in order[:k]:
                o = obs(a, b)
                if o is not None and o != exp(t, assign[b]):
                    add += 1
            if c + add > best or (c + add == best and (tiebreak is None or best_tb == 0)):
                continue
            used[t] = True
            assign[a] = t
            dfs(k + 1, c + add)
            used[t] = False
            del assign[a]

    dfs(0, 0)
    return best_map, best


def _identity(observed: Dict[Tuple[int, int], int], nodes: List[int],
              expected: Dict[Tuple[int, int], int], n_layout: int
              ) -> Tuple[Dict[int, int], int]:
    """The identity mapping and its NV# mismatches, where every GPU index is a layout slot
    (else ``({}, 10**9)``): the first bound of :func:`best_mapping`."""
    ident = {a: (a if a < n_layout else None) for a in nodes}
    if not (all(v is not None for v in ident.values())
            and len(set(ident.values())) == len(nodes)):
        return {}, 10 ** 9
    mapping: Dict[int, int] = dict(ident)  # type: ignore[arg-type]
    c = 0
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            o = observed.get((min(a, b), max(a, b)))
            if o is not None and o != expected.get((min(mapping[a], mapping[b]),
                                                    max(mapping[a], mapping[b])), 0):
                c += 1
    return mapping, c


def _count_bound(observed: Dict[Tuple[int, int], int], nodes: List[int],
                 expected: Dict[Tuple[int, int], int], n_layout: int) -> Tuple[int, int]:
    """A lower bound on the mismatches of any mapping, from the multisets of counts (a
    count the layout has fewer of than the node cannot all be matched, whatever the
    numbering), and how many observed pairs there are among ``nodes``."""
    from collections import Counter

    want = Counter(expected.get((i, j), 0) for i in range(n_layout)
                   for j in range(i + 1, n_layout))
    have = Counter(o for (a, b), o in observed.items() if a in nodes and b in nodes)
    return sum(max(0, k - want.get(val, 0)) for val, k in have.items()), sum(have.values())


def remap(layout: layouts_pkg.Layout, mapping: Dict[int, int]) -> layouts_pkg.Layout:
    """The layout renumbered to the node's GPU indices (``mapping``: node -> layout): its
    NVLink pairs, port map and NUMA map (slots no node GPU maps to are left out)."""
    if all(k == v for k, v in mapping.items()):
        return layout
    inv = {v: k for k, v in mapping.items()}
    doc = layout.doc
    nv, place, numa = doc.nvlink, doc.nics.placement, doc.numa
    if nv.pairs is not None:
        new: Dict[str, int] = {}
        for (a, b), c in nv.pair_map().items():
            if a in inv and b in inv:
                x, y = sorted((inv[a], inv[b]))
                new[f"{x}-{y}"] = c
        nv = copy_section(nv, pairs=new)
    if place.gpu_nic is not None:
        place = copy_section(place, gpu_nic={str(inv[int(k)]): v for k, v in
                                             place.gpu_nic.items() if int(k) in inv})
    if numa.gpu_numa is not None:
        numa = copy_section(numa, gpu_numa={str(inv[int(k)]): v for k, v in
                                            numa.gpu_numa.items() if int(k) in inv})
    nics = copy_section(doc.nics, placement=place)
    return layout.with_doc(copy_section(doc, nvlink=nv, nics=nics, numa=numa))


def gpu_names(topo: Topology) -> Tuple[List[str], str]:
    """The GPUs' model names, and ``""``; without any name (sysfs alone), the names the
    table of NVIDIA PCI device ids gives (``layouts/device_ids.json``) and the ids, where
    every GPU's id is in it.  Kept in the shared view's memo while views are shared
    (selection asks it for every layout it scores)."""
    names, by_id = gpu_names_kept(topo)
    return list(names), by_id


def gpu_names_kept(topo: Topology) -> Tuple[Tuple[str, ...], str]:
    """:func:`gpu_names`, the names a tuple: the kept one itself, being immutable (kept in
    the shared view's memo while views are shared)."""
    if not F.sharing():
        names, by_id = _gpu_names(topo)
        return tuple(names), by_id
    memo = F.view(topo).memo
    hit = memo.get("gpu_names")
    if hit is None:
        names, by_id = _gpu_names(topo)
        hit = memo["gpu_names"] = (tuple(names), by_id)
    return hit


def _gpu_names(topo: Topology) -> Tuple[List[str], str]:
    names = sorted({g.name for g in topo.gpus if g.name})
    if names or not topo.gpus:
        return names, ""
    table = layouts_pkg.device_names()
    ids = []
    for g in topo.gpus:
        dev = g.sysfs.device_id if g.sysfs is not None else None
        key = str(dev).strip().lower() if dev else ""
        if key not in table:
            return [], ""
        ids.append(key)
    return sorted({table[k] for k in ids}), ", ".join(sorted(set(ids)))


def score(topo: Topology, v: F.View, layout: Any) -> Candidate:
    """How well the node fits ``layout``: its GPU name and count, NVLink pairs (with the
    GPUs renumbered where that fits better), NUMA map and NICs, as a :class:`Candidate`."""
    names, by_id = gpu_names_kept(topo)
    excluded = name_exclusion(layout, names)
    if excluded is not None:  # (weighed before anything else: most layouts end here)
        return Candidate(layout=layout, excluded=excluded)
    s = _Scoring(topo, v, layout)
    if names and layout.gpus.name_pattern:
        s.by_name(names[0], by_id)
    if s.by_count():
        s.by_nvlink()
        s.by_numa()
        if F.has_nic_data(topo, v) and topo.nics:
            s.by_nics()
        s.verdict()
    return s.c


def names_exclude(layout: Any, names: Sequence[str]) -> bool:
    """The GPU model names ``names`` (:func:`gpu_names`) exclude ``layout``: they do not
    match its pattern (False where they match or either is unknown)."""
    pattern = layout.gpus.name_pattern
    return bool(names) and bool(pattern) and not layouts_pkg.names_match(pattern, names)


def name_exclusion(layout: Any, names: Sequence[str]) -> Optional[str]:
    """Why the GPU model names ``names`` exclude ``layout`` (:func:`names_exclude`), naming
    the first in full; None where they do not."""
    if not names_exclude(layout, names):
        return None
    return f"GPU name {names[0]!r} does not match {layout.gpus.name_pattern!r}"


class _Scoring:
    """One layout being scored against the node: the candidate and the facts its parts
    share (GPU counts, the name match, the layout's pairs and the node's, NIC slots)."""

    def __init__(self, topo: Topology, v: F.View, layout: Any) -> None:
        self.topo, self.v, self.layout = topo, v, layout
        self.c = Candidate(layout=layout)
        self.n = len(v.present) + len(v.lost)
        self.missing_count = len(v.absent_in)
        self.n_exp = layout.gpus.count
        self.name_ok = False
        self.subset = False
        self.nv_fit = False
        self.nv_exact = True  # no pair the layout has otherwise (a subset shows its board's)
        self.observed: Dict[Tuple[int, int], int] = {}
        self.by_nic: Optional[Tuple[Dict[int, int], List[int]]] = None

    def by_name(self, name: str, by_id: str) -> None:
        """The GPU name ``name`` (the first; by PCI device ids ``by_id``, where not ``""``)
        matches the layout's pattern (:func:`score` excluded the layout where it does not)."""
        c = self.c
        self.name_ok = c.by_name = True
        c.score += 50
        c.why.append(f"GPU name {name!r} matches" if not by_id else
                     f"GPU model {name!r} (PCI device id {by_id}) matches")

    def by_count(self) -> bool:
        """The GPU count against the layout's (False: excluded)."""
        c, n, n_exp, v, missing_count = self.c, self.n, self.n_exp, self.v, self.missing_count
        if not isinstance(n_exp, int):
            return True
        if n > n_exp:
            c.excluded = f"{n} GPU{'s' if n != 1 else ''}, the layout has {n_exp}"
            return False
        # half the board or less, and nothing says a GPU is gone (no driver-level source
        # misses a GPU another lists, none fell off the bus): a container, a VM or
        # CUDA_VISIBLE_DEVICES showing part of the board, not a node that lost GPUs; it
        # gets only the layout-independent checks (--layout NAME checks the full board)
        self.subset = 0 < n <= n_exp // 2 and not missing_count and not v.lost
        # a degraded node keeps its layout: by name with up to half the GPUs gone, by
        # shape alone with up to a quarter gone
        floor = (n_exp + 1) // 2 if self.name_ok else n_exp - n_exp // 4
        if n < floor and not self.subset:
            c.excluded = f"{n} GPU{'s' if n != 1 else ''}, too few for the layout's {n_exp}"
            return False
        if n == n_exp and not missing_count:
            c.score += 10
            c.why.append(f"{n} GPUs")
        else:
            c.score += 10 - 3 * (n_exp - n + missing_count)
            c.why.append(f"{n} of {n_exp} GPUs")
        return True

    def by_nvlink(self) -> None:
        """The node's GPU pairs against the layout's, under the best numbering of its GPUs
        (by the port map's NICs where GPUs are missing, else by the pairs and NUMA)."""
        topo, v, layout, c, n, n_exp = self.topo, self.v, self.layout, self.c, self.n, self.n_exp
        n_lay = n_exp if isinstance(n_exp, int) else n
        expected = F.layout_pairs(layout, n_lay)
        self.observed = observed = {k: cnt for k, (cnt, _) in v.pairs.items()}
        by_nic = F.slots_by_nic(topo, layout, v.present) if isinstance(n_exp, int) \
            and n < n_exp and not self.missing_count and not v.lost else None
        if by_nic is not None and expected and observed:
            def _cost(m: Dict[int, int]) -> int:
                return sum(1 for (a, b), o in observed.items() if a in m and b in m
                           and o != expected.get((min(m[a], m[b]), max(m[a], m[b])), 0))
            _, best_cost = best_mapping(observed, v.present, expected, n_exp)
            if _cost(by_nic[0]) > best_cost:
                by_nic = None  # the NVLink wiring says otherwise: the NICs do not place them
        if by_nic is not None:
            c.empty_slots = by_nic[1]
        self.by_nic = by_nic
        if expected and observed:
            gn_map = layout.numa.gpu_node
            numa_of = {} if gn_map is None else {  # (read only against a NUMA map)
                i: (topo.gpu(i).numa_node if topo.gpu(i) is not None else None)  # type: ignore[union-attr]  # (gpu(i) is checked first)
                for i in v.present}

            def numa_misses(m: Dict[int, int]) -> int:
                if gn_map is None:
                    return 0
                return sum(1 for i, t in m.items() if numa_of.get(i) is not None
                           and gn_map.get(t) is not None and gn_map.get(t) != numa_of[i])

            mapping, _ = (dict(by_nic[0]), 0) if by_nic is not None else best_mapping(
                observed, v.present, expected, n_lay, numa_misses) if layout.nvlink.pairs \
                else ({a: a for a in v.present}, 0)
            if len(mapping) == len(v.present):
                c.mapping = mapping
            if c.mapping is not None:
                self._pairs_as_mapped(c.mapping, expected)
        if by_nic is not None and c.mapping is None:
            c.mapping = dict(by_nic[0])

    def _pairs_as_mapped(self, mapping: Dict[int, int],
                         expected: Dict[Tuple[int, int], int]) -> None:
        """The pairs matched, short and different under ``mapping``: the score, whether
        they fit, and the exclusions no name overrides."""
        c, observed, n = self.c, self.observed, self.n
        matched = short = wrong = 0
        for (a, b), o in observed.items():
            e = expected.get(tuple(sorted((mapping[a], mapping[b]))), 0)  # type: ignore
            if o == e:
                matched += 1
            elif 0 < o < e:
                short += 1
            else:
                wrong += 1
        allzero = all(o == 0 for o in observed.values())
        if allzero and self.layout.nvlink.nvswitch:
            c.why.append("no NV# between any GPU pair (NVLink fabric down?)")
            return
        c.score += 2 * matched + short - 3 * wrong
        self.nv_fit = matched + short > wrong and wrong <= max(1, len(observed) // 8)
        self.nv_exact = nv_exact = not short and not wrong
        c.exact, c.matched = nv_exact and matched > 0, matched
        n_lay = self.n_exp if isinstance(self.n_exp, int) else n
        if matched + short == 0:
            # a layout matching none of the pairs never wins, whatever the name
            c.excluded = (f"none of the {len(observed)} GPU pairs as the layout "
                          "has them")
        elif matched == 0 and not self.name_ok and (n < n_lay or self.missing_count):
            # every pair short and GPUs gone: two faults nothing else shows (4 of 8
            # A100s, NV12, are not a GB200 tray missing a GPU with 6 links down)
            c.excluded = (f"none of the {len(observed)} GPU pairs as the layout "
                          "has them (every one short) and GPUs missing")
        c.why.append(f"{matched}/{len(observed)} GPU pairs as expected"
                     + (f", {short} short" if short else "")
                     + (f", {wrong} different" if wrong else ""))
        if any(k != val for k, val in mapping.items()):
            c.why.append("GPUs renumbered: " + ", ".join(
                f"GPU{k}->{val}" for k, val in sorted(mapping.items()) if k != val))

    def by_numa(self) -> None:
        """The GPUs' NUMA nodes against the layout's map (under the mapping)."""
        c, v = self.c, self.v
        gn = self.layout.numa.gpu_node
        if gn is None:
            return
        m = c.mapping or {a: a for a in v.present}
        good = bad = 0
        for i in v.present:
            g = self.topo.gpu(i)
            node = g.numa_node if g else None
            want = gn.get(m.get(i, i))
            if node is None or want is None:
                continue
            if node == want:
                good += 1
            else:
                bad += 1
        # evidence for a layout whose map the GPUs fit, never against one they misfit: a
        # NUMA mismatch must not push the pick to a layout that states no NUMA map (an
        # H100 board with its NUMA nodes swapped is not a B200 that passes)
        c.numa_bonus = max(0.0, 0.5 * (good - bad))
        c.score += c.numa_bonus
        c.numa_bad = bad
        if good or bad:
            c.why.append(f"NUMA {good}/{good + bad} as expected")

    def by_nics(self) -> None:
        """The NICs: placement against the port map, link layer, compute NIC count."""
        topo, v, layout, c = self.topo, self.v, self.layout, self.c
        lay_nic = remap(layout, c.mapping) if c.mapping else layout
        gpu_nic = lay_nic.nics.placement.port_map
        want_path = lay_nic.nics.placement.gpu_to_nearest_compute_nic or "PIX"
        if gpu_nic is not None:
            self._port_map(gpu_nic, want_path)
        want_layer = layout.nics.compute.link_layer
        if want_layer and c.nic_contradiction is None:
            comp = roles.structural_compute(topo, v.present)
            layers = set()
            for name in comp:
                nic = topo.nic(name)
                h = nic.sysfs if nic is not None else None
                for p in h.ports if h is not None else []:
                    if p.link_layer:
                        layers.add(p.link_layer)
            if layers and want_layer not in layers:
                c.nic_contradiction = (f"compute NICs run {'/'.join(sorted(layers))}, "
                                       f"it has {want_layer}")
        count = layout.nics.compute.count
        if count is not None:
            comp = roles.resolve(topo, layout, v.present, ()).compute
            if len(comp) != count:
                c.score -= 1
                c.nic_count_off = True
            else:
                c.why.append(f"{count} compute NICs")

    def _port_map(self, gpu_nic: Dict[int, List[str]], want_path: str) -> None:
        """Each GPU's port-map NICs at the map's path: by name, or by PCI placement under
        other names."""
        topo, v, c = self.topo, self.v, self.c
        good = bad = renamed = 0
        # by PCI placement, not by name: a GPU with another NIC at the port map's path
        # does not contradict the port map (its NICs renamed: nic.names_differ), but
        # names as the vendor's map are what tell this layout from a generic one
        placed = F.nic_by_placement(topo, v.present, want_path)
        for i in v.present:
            for w in gpu_nic.get(i, []):
                tok, _ = F.nic_path(topo, i, w)
                r = path_rank(tok)
                if r is not None and r <= path_rank(want_path):  # type: ignore[operator]  # (a layout's path is a path token)
                    good += 1
                elif i in placed:
                    renamed += 1
                else:
                    bad += 1
        # GPUs missing by count and the rest renumbered, their slots not told by the
        # port map's NICs: which name each GPU's NIC should have is a guess, and names
        # that match for some GPUs while others have their NIC under another name match
        # by chance (mlx5_0 is every node's first NIC): no evidence for a vendor port
        # map; only a GPU with no NIC at the map's path at all counts, against it
        guess = self.by_nic is None and renamed > 0 and F.renumbered(self.layout, v)
        c.score += -0.5 * bad if guess else good - 0.5 * bad - 0.25 * renamed
        c.why.append(f"NIC placement {good}/{good + bad + renamed} as the port map"
                     + (f", {renamed} by placement under other names" if renamed else "")
                     + (" (GPUs renumbered, slots unknown: names not counted)"
                        if guess else ""))
        if bad > good + renamed:
            c.nic_contradiction = (f"only {good} of {good + bad} GPU-NIC pairs as "
                                   "its port map")

    def verdict(self) -> None:
        """Whether the layout fits; a subset of its board is said so and never fits."""
        c, n, n_exp, layout = self.c, self.n, self.n_exp, self.layout
        c.fits = (self.name_ok or self.nv_fit) and c.excluded is None
        if isinstance(n_exp, int) and self.subset:
            # the visible GPUs are this board's model, or their NVLink pairs are exactly the
            # board's (a sub-shape of it): say so, never check them against the full board
            # (by shape alone a few GPUs fit many boards; two GPUs over a bridge, NV4 or
            # NV2, fit a 4-GPU board's pair, so two need an NVSwitch board's counts; and
            # they must be one NVLink-connected group: two NV2 pairs (an IBM Minsky) are a
            # board of their own)
            by_shape = c.exact and (n >= 3 or bool(layout.nvlink.nvswitch)) \
                and _connected(self.v.present, self.observed)
            # (cards a server maker fits, a layout picked by GPU name only: half as many
            # cards are another server, not part of one board)
            if c.fits and self.nv_exact and (self.name_ok or by_shape) \
                    and not layout.choice.requires_gpu_name:
                c.excluded, c.subset_of = subset_text(n, [n_exp]), n_exp
            else:
                c.excluded = (f"{n} GPU{'s' if n != 1 else ''}, too few for the layout's "
                              f"{n_exp}")
            c.fits = False


def _connected(nodes: Sequence[int], pairs: Dict[Tuple[int, int], int]) -> bool:
    """The GPUs form one group over NVLink (pairs with a count above 0)."""
    nodes = list(nodes)
    seen, todo = set(nodes[:1]), list(nodes[:1])
    while todo:
        a = todo.pop()
        for (x, y), cnt in pairs.items():
            if cnt and a in (x, y):
                b = y if a == x else x
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
    return seen >= set(nodes)


def subset_text(n: int, boards: Sequence[int]) -> str:
    """``4 GPUs, a subset of an 8-GPU board?`` (``a 4- or 8-GPU board`` for several)."""
    sizes = sorted(set(boards))
    art = "an" if str(sizes[0]).startswith("8") or sizes[0] in (11, 18) else "a"
    what = " or ".join([f"{x}-" for x in sizes[:-1]] + [f"{sizes[-1]}-GPU"])
    return f"{n} GPU{'s' if n != 1 else ''}, a subset of {art} {what} board?"
