"""NVLink: links down, GPU pairs with fewer links than the layout, error counters.

A down link on an NVSwitch system lowers every pair of its GPU by one
(nvidia-smi prints NV17): that is one finding, the link, with the pairs in
its message.  A pair short of links that no down link explains is a pair
finding.  Without NVML (a topo text alone), a GPU whose every pair is short
on an NVSwitch system has links down, which one is unknown.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .. import layouts
from ..model import Topology, int_runs
from . import Finding, Subject, catalog, demote, facts as F, finding
from . import subject as S
from .select import Selection


HINT_LINK = ("nvidia-smi nvlink -s -i N shows the link states; reset the GPU (nvidia-smi -r) "
             "or reboot; a link that stays down needs the GPU or baseboard reseated/serviced")


def _major(v: Optional[str]) -> Optional[str]:
    return v.split(".")[0] if isinstance(v, str) and v else None


def _listed_inactive(topo: Topology, i: int, gl: Any, layout: Optional[Any], nvswitch: bool,
                     links_per_gpu: Any, mesh_named: bool = False) -> List[int]:
    """The ``<inactive>`` links of a pasted ``nvlink -s`` GPU block that are down: the
    layout uses every link of each GPU (an NVSwitch board that states how many; a mesh
    the user named, :func:`_mesh_uses_every_link`), and the block lists exactly those
    links, some up; the GPU is the layout's model (by name) and, on an NVSwitch board, no
    link of it goes straight to a GPU (a bridge).  Elsewhere an ``<inactive>`` link may be
    idle by design (bridged boards): it stays inactive."""
    if layout is None or not (nvswitch or mesh_named) or not isinstance(links_per_gpu, int) \
            or links_per_gpu <= 0 or gl.source != "nvml-text" or not gl.active:
        return []
    if sorted(x.link for x in gl.links) != list(range(links_per_gpu)):
        return []
    if nvswitch and any(x.remote is not None and x.remote.type == "gpu" for x in gl.links):
        return []
    g = topo.gpu(i)
    pattern = layout.gpus.name_pattern
    if not g or not g.name or pattern is None \
            or not layouts.name_matches(pattern, g.name):
        return []
    return [x.link for x in gl.links if x.state == "inactive"]


def _how_off(topo: Topology, i: int) -> str:
    """How GPU ``i``'s pasted text says no link is up, in its own words."""
    g = topo.gpu(i)
    links = g.nvml_text.nvlink.links if g is not None and g.nvml_text is not None else []
    if not links:
        return 'nvidia-smi nvlink: "all links are inActive"'
    if (links[0].reason or "").startswith("dcgmi"):
        return f"dcgmi nvlink -s: all {len(links)} links D"
    return f"nvidia-smi nvlink -s: all {len(links)} links <inactive>"


def _mesh_uses_every_link(sel: Selection, i: int, expected: Dict[Tuple[int, int], int]
                          ) -> bool:
    """A layout the user named (``--layout``/``--layout-file``: what the node must be) is a
    direct NVLink mesh whose pairs give GPU ``i`` every one of its links (a DGX-1V GPU: NV2
    + NV2 + NV1 + NV1 = 6): a link it lists ``<inactive>`` is down, not idle by design.
    Auto-selection asserts nothing of the kind (another board of the model may leave
    links unwired)."""
    layout = sel.layout
    if sel.how != "user" or layout is None or layout.nvlink.nvswitch \
            or layout.nvlink.pairs is None:
        return False
    lpg = layout.nvlink.links_per_gpu
    return isinstance(lpg, int) and lpg > 0 and \
        sum(c for (a, b), c in expected.items() if i in (a, b)) == lpg


def check(topo: Topology, sel: Selection) -> List[Finding]:
    k = _Links(topo, sel)
    v, layout, present = k.v, k.layout, k.present
    out: List[Finding] = []
    # -- links NVML says are down (skipped when the fabric is down: fabric.py says it)
    if k.down_fabric is None:
        for i in present:
            gl = v.links.get(i)
            if gl is not None:
                out.extend(k.gpu_links(i, gl))
    if k.down_fabric is None:
        out.extend(k.lost_every_link())
    out.extend(_counter_findings(v, layout, present))
    out.extend(k.unknown_states())
    # no NVLink evidence at all (sysfs alone, say): not checked, whatever layout was chosen
    # (a layout chosen from the PCI device ids says nothing about the links)
    if not v.pairs and not v.links and not any(f.code == "nvlink.link_down" for f in out) \
            and ((layout is not None and k.expected) or len(topo.gpus) >= 2):
        out.append(finding("info", "nvlink.not_checked", S.NODE,
                           "not checked: no NVLink data in the input (no GPU↔GPU paths "
                           "from nvidia-smi and no NVML links; sysfs does not see "
                           "NVLink)", source=", ".join(topo.sources)))
        return out
    if layout is None or not k.expected or k.down_fabric is not None:
        return out
    # -- pair counts against the layout
    if k.nvswitch and not all(i in v.links and v.links[i].complete for i in present):
        out.extend(k.topo_only_down())
    out.extend(k.pair_findings())
    return out


class _Links:
    """The NVLink family's reading of a node against the selection: the layout's pairs and
    links, the GPUs present and missing, and each GPU's link deficit (links down or off),
    which the pair findings subtract so that a down link is not also a short pair."""

    def __init__(self, topo: Topology, sel: Selection) -> None:
        self.topo = topo
        self.v = v = F.view(topo)
        self.layout = layout = sel.layout
        self.down_fabric = F.fabric_down(v, layout)
        self.inferred = layout.nvlink.inferred() if layout is not None else False
        self.nvswitch = bool(layout.nvlink.nvswitch) if layout is not None \
            else bool(topo.nvswitch)
        n_exp = F.expected_gpus(layout, v)
        self.expected: Dict[Tuple[int, int], int] = \
            F.layout_pairs(layout, n_exp) if layout is not None else {}
        self.links_per_gpu = layout.nvlink.links_per_gpu if layout is not None else None
        self.present = v.present
        self.missing = F.missing_gpus(layout, v)
        self.to_absent = sel.links_to_absent
        self.sel = sel
        self.deficit: Dict[int, int] = {}

    def pairs_of(self, i: int) -> List[Tuple[int, int]]:
        return [k for k in self.v.pairs if i in k]

    def gpu_and_pairs(self, i: int) -> List[Subject]:
        return [S.gpu(i)] + [S.pair(a, b) for (a, b) in self.pairs_of(i)]

    # -- per GPU, from its link records

    def gpu_links(self, i: int, gl: Any) -> List[Finding]:
        """GPU ``i``'s links: MIG mode, links down, links missing, the NVLink generation."""
        if gl.links and any(x.rule == "mig" for x in gl.links) and not gl.active:
            self.deficit[i] = 10 ** 6
            if not any(self.expected.values()):
                return []
            return [finding(
                "warning", "nvlink.mig", S.gpu(i),
                f"GPU{i} is in MIG mode: its NVLinks are off by design, so its "
                f"{len(self.pairs_of(i))} GPU pairs have no NVLink",
                expected="NVLink", actual="MIG mode", source="nvml",
                hint="nvidia-smi -i N -mig 0 (and reset the GPU) where NVLink is needed",
                covers=self.gpu_and_pairs(i))]
        out = self._down_links(i, gl)
        out.extend(self._links_missing(i, gl))
        out.extend(self._generation(i, gl))
        return out

    def _down_links(self, i: int, gl: Any) -> List[Finding]:
        """Each link of GPU ``i`` that is down (less those a missing peer takes with it)."""
        v, expected, nvswitch, layout = self.v, self.expected, self.nvswitch, self.layout
        links_per_gpu = self.links_per_gpu
        # on a direct mesh a missing GPU takes its peers' links to it down with it
        # (renumbered mesh: the selection's mapping says which layout slot is absent)
        gone = 0 if nvswitch else self.to_absent[i] if i in self.to_absent else sum(
            expected.get((min(i, k), max(i, k)), 0) for k in self.missing)
        mesh = _mesh_uses_every_link(self.sel, i, expected)
        listed = _listed_inactive(self.topo, i, gl, layout, nvswitch, links_per_gpu, mesh)
        downs = list(gl.down[gone:]) + listed
        self.deficit[i] = max(0, len(gl.down) - gone) + len(listed)
        out: List[Finding] = []
        for link in downs:
            rec = next((x for x in gl.links if x.link == link), None)
            reason = (rec.reason if rec is not None else None) or "should be up"
            if link in listed:
                reason = (f"nvidia-smi prints <inactive>; {layout.name} uses all "  # type: ignore[union-attr]  # (listed is empty without a layout)
                          f"{links_per_gpu} links of every GPU ("
                          + ("NVSwitch" if nvswitch else "its NVLink mesh; the layout was "
                             "named, so the node must be it") + f"), and GPU{i} "
                          f"lists all {links_per_gpu}, {len(gl.links) - len(listed)} up")
            short = [f"GPU{a}-GPU{b}" for (a, b) in self.pairs_of(i)
                     if v.pairs[(a, b)][0] < expected.get((a, b), 10 ** 6)]
            sample = ""
            if short:
                a, b = next((a, b) for (a, b) in self.pairs_of(i)
                            if f"GPU{a}-GPU{b}" in short)
                sample = (f"; {len(short)} GPU pairs drop to NV{v.pairs[(a, b)][0]} as a "
                          "result" if nvswitch else f"; pairs short: {', '.join(short)}")
            out.append(finding(
                demote("error", self.inferred) if link in listed else "error",
                "nvlink.link_down", S.link(i, link),
                f"GPU{i} NVLink {link} is down ({reason})"
                + (f"; GPU{i} has {gl.active} of {gl.total} links up" if gl.complete
                   else "") + sample,
                expected="active", actual="down", source=gl.source, hint=HINT_LINK,
                covers=self.gpu_and_pairs(i)))
        return out

    def _links_missing(self, i: int, gl: Any) -> List[Finding]:
        """Active links below the layout with no link down: links missing."""
        links_per_gpu = self.links_per_gpu
        if self.nvswitch and isinstance(links_per_gpu, int) and isinstance(gl.total, int) \
                and gl.total and gl.complete \
                and not gl.down and gl.active < links_per_gpu and gl.active > 0:
            self.deficit[i] = links_per_gpu - gl.active
            return [finding(
                demote("error", self.inferred), "nvlink.links_missing", S.gpu(i),
                f"GPU{i} has {gl.active} NVLinks up, the layout has {links_per_gpu}",
                expected=links_per_gpu, actual=gl.active, source="nvml", hint=HINT_LINK,
                covers=self.gpu_and_pairs(i))]
        return []

    def _generation(self, i: int, gl: Any) -> List[Finding]:
        """GPU ``i``'s active links of another NVLink generation than the layout's."""
        want_gen = self.layout.nvlink.generation if self.layout is not None else None
        vers = {x.version for x in gl.links if x.state == "active" and x.version}
        if want_gen and vers and all(_major(x) != _major(want_gen) for x in vers):
            return [finding(
                "warning", "nvlink.generation", S.gpu(i),
                f"GPU{i} NVLinks are version {sorted(vers)[0]}, the layout has {want_gen}",
                expected=want_gen, actual=sorted(vers)[0], source="nvml",
                hint="is this the right layout?")]
        return []

    def lost_every_link(self) -> List[Finding]:
        """Pasted text (nvidia-smi "all links are inActive", every link ``<inactive>``,
        dcgmi every link ``D``): a GPU that states no link up.  Where the layout, the GPU
        model or the rest of the input says it has NVLinks, its links are down (the
        catalog's ladder by how sure that evidence is); a layout that gives it none, or
        nothing at all (a GeForce or unbridged PCIe card), leaves it idle by design."""
        out: List[Finding] = []
        idle: List[int] = []
        for i in self.present:
            if not F.lost_every_link(self.topo, self.v, i):
                continue
            said = self._owed_by_layout(i) if self.layout is not None \
                else F.nvlink_owed(self.topo, self.v, i)
            if said is None:
                if self.layout is None:
                    idle.append(i)
                continue
            sure, why = said
            if sure == "missing":
                out.append(finding(
                    "info", "nvlink.not_checked", S.gpu(i),
                    f"GPU{i} states no NVLink up ({_how_off(self.topo, i)}); not judged: "
                    + why,
                    source="nvml-text", covers=[S.gpu(i)]))
                continue
            self.deficit[i] = 10 ** 6
            out.append(finding(
                catalog.severity("nvlink.link_down", sure), "nvlink.link_down", S.gpu(i),
                f"GPU{i} states no NVLink up ({_how_off(self.topo, i)}), and {why}: its "
                "NVLinks are down",
                expected="active", actual="all inactive", source="nvml-text",
                hint=HINT_LINK, covers=self.gpu_and_pairs(i)))
        return out + self._idle_by_design_or_not(idle)

    def _idle_by_design_or_not(self, idle: List[int]) -> List[Finding]:
        """GPUs that state no NVLink up where nothing (no layout, no model, no other GPU)
        says they have NVLinks: not judged, but said, once for the node (a GeForce or
        unbridged card is idle by design; a bridged or SXM one would be down)."""
        if not idle:
            return []
        gpus = ", ".join(f"GPU{i}" for i in idle)
        return [finding(
            "info", "nvlink.not_checked", S.NODE,
            f"{gpus} state{'s' if len(idle) == 1 else ''} no NVLink up "
            f"({_how_off(self.topo, idle[0])}); not judged: nothing in the input says "
            f"{'it has' if len(idle) == 1 else 'they have'} NVLinks (by design on a card "
            "with no NVLink bridge; down if bridged or an SXM part: give --layout NAME to "
            "say which)",
            source="nvml-text", covers=[S.gpu(i) for i in idle])]

    def _owed_by_layout(self, i: int) -> Optional[Tuple[str, str]]:
        """The layout's word on GPU ``i``'s NVLinks: ``(sure, why)``, or None where it gives
        the GPU none (an unbridged card by design)."""
        layout, links_per_gpu = self.layout, self.links_per_gpu
        assert layout is not None
        want = sum(c for (a, b), c in self.expected.items() if i in (a, b) and c)
        if not want and not (self.nvswitch and isinstance(links_per_gpu, int)
                             and links_per_gpu > 0):
            return None
        return ("inferred" if self.inferred else "observed",
                f"{layout.name} has NVLink on it"
                + (f" ({links_per_gpu} expected)" if isinstance(links_per_gpu, int) else ""))

    def unknown_states(self) -> List[Finding]:
        """Links the input names with a state it cannot read (a damaged letter, an NVML
        error: a reason given): never a pass about them, never a fault; one note for the
        node.  An -e/-c excerpt, which prints no states at all, says so in links and show."""
        v = self.v
        unknown = {i: [x.link for x in v.links[i].links if x.state == "unknown" and x.reason]
                   for i in self.present if v.links.get(i) is not None}
        unknown = {i: ks for i, ks in sorted(unknown.items()) if ks}
        if not unknown or self.down_fabric is not None:
            return []
        first = next(x for x in v.links[next(iter(unknown))].links
                     if x.state == "unknown" and x.reason)
        named = [f"GPU{i} link{'s' if len(ks) > 1 else ''} {int_runs(ks, pairs=True)}"
                 for i, ks in list(unknown.items())[:8]]
        more = f" and {len(unknown) - 8} more GPUs" if len(unknown) > 8 else ""
        return [finding(
            "info", "nvlink.not_checked", S.NODE,
            f"NVLink link states not checked for {', '.join(named)}{more}: the input gives "
            f"none ({first.reason})",
            source=", ".join(sorted({v.links[i].source for i in unknown})),
            covers=[S.gpu(i) for i in unknown])]

    # -- pair counts against the layout

    def topo_only_down(self) -> List[Finding]:
        """A topo text alone (or with a paste that shows no link of the GPU down): a GPU
        with every pair short has links down."""
        v, present, expected = self.v, self.present, self.expected
        out: List[Finding] = []
        for i in present:
            if i in v.links and (v.links[i].complete or v.links[i].down):
                continue
            mine = [(k, v.pairs[k][0]) for k in self.pairs_of(i)]
            if not mine:
                continue
            best = max(c for _, c in mine)
            want = max((expected.get(k, 0) for k, _ in mine), default=0)
            if 0 < best < want and len(mine) == len(present) - 1:
                others_short = [k for k, c in mine if c < want]
                self.deficit[i] = want - best
                out.append(finding(
                    demote("error", self.inferred), "nvlink.link_down", S.gpu(i),
                    f"GPU{i} has {best} of {want} NVLinks up: every pair with GPU{i} is "
                    f"NV{best} ({len(others_short)} pairs); which link is down is unknown "
                    "(no NVML data: nvidia-smi nvlink -s shows it)",
                    expected=f"NV{want}", actual=f"NV{best}", source=v.pairs[mine[0][0]][1],
                    hint=HINT_LINK,
                    covers=[S.gpu(i)] + [S.pair(a, b) for (a, b), _ in mine]))
        return out

    def pair_findings(self) -> List[Finding]:
        """Each GPU pair's NV# against the layout: more than it (a warning), or fewer than
        the GPUs' link deficits explain."""
        v, nvswitch, deficit = self.v, self.nvswitch, self.deficit
        # on an NVSwitch system every pair of the node has the same NV#: a pair below the
        # node's own other pairs rests on what the node shows, not on the layout alone (no
        # demotion)
        node_best = max((c for c, _ in v.pairs.values()), default=0) if nvswitch else 0
        out: List[Finding] = []
        for (a, b), (c, src) in sorted(v.pairs.items()):
            want = self.expected.get((a, b))
            if want is None or c == want:
                continue
            if c > want:
                out.append(finding(
                    "warning", "nvlink.pair_unexpected", S.pair(a, b),
                    f"GPU{a}-GPU{b} has NV{c}, the layout has "
                    + (f"NV{want}" if want else "no NVLink"),
                    expected=f"NV{want}" if want else None, actual=f"NV{c}", source=src,
                    hint="is this the right layout?"))
                continue
            explained = deficit.get(a, 0) + deficit.get(b, 0) if not nvswitch else \
                max(deficit.get(a, 0), deficit.get(b, 0))
            if want - c <= explained:
                continue
            out.append(finding(
                "error" if c < min(node_best, want) else demote("error", self.inferred),
                "nvlink.pair_degraded", S.pair(a, b),
                f"GPU{a}-GPU{b} has " + (f"NV{c}" if c else "no NVLink")
                + f", expected NV{want}"
                + (" (NCCL traffic between them falls back to PCIe)" if not c else
                   f" ({want - c} link{'s' if want - c > 1 else ''} fewer)"),
                expected=f"NV{want}", actual=f"NV{c}" if c else None, source=src,
                hint="nvidia-smi nvlink -s and nvlink -R on both GPUs show which link is "
                     "missing; reset the GPUs or reboot; a link that stays missing needs "
                     "service",
                covers=[S.pair(a, b)]))
        return out


def _counter_findings(v: Any, layout: Optional[Any], present: List[int]) -> List[Finding]:
    """Error counters (independent of layouts): above the threshold an error, nonzero
    below it a warning."""
    out: List[Finding] = []
    thresholds = catalog.thresholds("nvlink", layout.nvlink.error_thresholds
                                    if layout is not None else None)
    for i in present:
        gl = v.links.get(i)
        if gl is None:
            continue
        for rec in gl.links:
            if not any(rec.errors.values()):  # all zero or unknown (most links): none above 0
                continue
            errs = {k: val for k, val in rec.errors.items()
                    if isinstance(val, int) and val > 0}
            if not errs:
                continue
            over = {k: val for k, val in errs.items()
                    if val > catalog.threshold("nvlink", thresholds, k)}
            sev = "error" if over else "warning"
            out.append(finding(
                sev, "nvlink.errors", S.link(i, rec.link),
                f"GPU{i} NVLink {rec.link} error counters: "
                + ", ".join(f"{k}={val}" for k, val in sorted(errs.items()))
                + (f" (above the threshold for {', '.join(sorted(over))})" if over else
                   " (cumulative since the driver loaded; below the thresholds)"),
                expected={k: catalog.threshold("nvlink", thresholds, k) for k in errs},
                actual=errs,
                source=gl.source,
                hint="watch whether they grow (nvidia-smi nvlink -e); a growing CRC/replay "
                     "count points at the link: reset, then reseat/service"))
    return out
