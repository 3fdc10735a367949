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

#: NVLink error counters: above these (cumulative since the driver loaded) it is an error;
#: nonzero below is a warning.  Declared in the catalog (nvtopo/checks/catalog.py).
ERROR_THRESHOLDS = catalog.NVLINK_THRESHOLDS

HINT_LINK = ("nvidia-smi nvlink -s -i N shows the link states; reset the GPU (nvidia-smi -r) "
             "or reboot; a link that stays down needs the GPU or baseboard reseated/serviced")


def _major(v: Optional[str]) -> Optional[str]:
    return v.split(".")[0] if isinstance(v, str) and v else None


def _listed_inactive(topo: Topology, i: int, gl: Any, layout: Optional[Any], nvswitch: bool,
                     links_per_gpu: Any) -> List[int]:
    """The ``<inactive>`` links of a pasted ``nvlink -s`` GPU block that are down: the
    layout is an NVSwitch board that states how many links each GPU uses (it uses every
    one), and the block lists exactly those links, some up; the GPU is the layout's model
    (by name) and no link of it goes straight to a GPU (a bridge).  Elsewhere an
    ``<inactive>`` link may be idle by design (bridged boards): it stays inactive."""
    if layout is None or not nvswitch or not isinstance(links_per_gpu, int) \
            or links_per_gpu <= 0 or gl.source != "nvml-text" or not gl.active:
        return []
    if sorted(x.link for x in gl.links) != list(range(links_per_gpu)):
        return []
    if any(x.remote is not None and x.remote.type == "gpu" for x in gl.links):
        return []
    g = topo.gpu(i)
    pattern = layout.gpus.name_pattern
    if not g or not g.name or pattern is None \
            or not layouts.name_matches(pattern, g.name):
        return []
    return [x.link for x in gl.links if x.state == "inactive"]


def check(topo: Topology, sel: Selection) -> List[Finding]:
    v = F.view(topo)
    out: List[Finding] = []
    layout = sel.layout
    down_fabric = F.fabric_down(v, layout)
    inferred = layout.nvlink.inferred() if layout is not None else False
    nvswitch = bool(layout.nvlink.nvswitch) if layout is not None else bool(topo.nvswitch)
    n_exp = F.expected_gpus(layout, v)
    expected = F.layout_pairs(layout, n_exp) if layout is not None else {}
    links_per_gpu = layout.nvlink.links_per_gpu if layout is not None else None
    present = v.present
    missing = F.missing_gpus(layout, v)
    to_absent = sel.links_to_absent

    def pairs_of(i: int) -> List[Tuple[int, int]]:
        return [k for k in v.pairs if i in k]

    def gpu_and_pairs(i: int) -> List[Subject]:
        return [S.gpu(i)] + [S.pair(a, b) for (a, b) in pairs_of(i)]

    # -- links NVML says are down (skipped when the fabric is down: fabric.py says it)
    deficit: Dict[int, int] = {}
    if down_fabric is None:
        for i in present:
            gl = v.links.get(i)
            if gl is None:
                continue
            if gl.links and any(x.rule == "mig" for x in gl.links) and not gl.active:
                deficit[i] = 10 ** 6
                if any(expected.values()):
                    out.append(finding(
                        "warning", "nvlink.mig", S.gpu(i),
                        f"GPU{i} is in MIG mode: its NVLinks are off by design, so its "
                        f"{len(pairs_of(i))} GPU pairs have no NVLink",
                        expected="NVLink", actual="MIG mode", source="nvml",
                        hint="nvidia-smi -i N -mig 0 (and reset the GPU) where NVLink is "
                             "needed",
                        covers=gpu_and_pairs(i)))
                continue
            # on a direct mesh a missing GPU takes its peers' links to it down with it
            # (renumbered mesh: the selection's mapping says which layout slot is absent)
            gone = 0 if nvswitch else to_absent[i] if i in to_absent else sum(
                expected.get((min(i, k), max(i, k)), 0) for k in missing)
            listed = _listed_inactive(topo, i, gl, layout, nvswitch, links_per_gpu)
            downs = list(gl.down[gone:]) + listed
            deficit[i] = max(0, len(gl.down) - gone) + len(listed)
            for link in downs:
                rec = next((x for x in gl.links if x.link == link), None)
                reason = (rec.reason if rec is not None else None) or "should be up"
                if link in listed:
                    reason = (f"nvidia-smi prints <inactive>; {layout.name} uses all "  # type: ignore[union-attr]  # (listed is empty without a layout)
                              f"{links_per_gpu} links of every GPU (NVSwitch), and GPU{i} "
                              f"lists all {links_per_gpu}, {len(gl.links) - len(listed)} up")
                short = [f"GPU{a}-GPU{b}" for (a, b) in pairs_of(i)
                         if v.pairs[(a, b)][0] < expected.get((a, b), 10 ** 6)]
                sample = ""
                if short:
                    a, b = next((a, b) for (a, b) in pairs_of(i)
                                if f"GPU{a}-GPU{b}" in short)
                    sample = (f"; {len(short)} GPU pairs drop to NV{v.pairs[(a, b)][0]} as a "
                              "result" if nvswitch else f"; pairs short: {', '.join(short)}")
                out.append(finding(
                    demote("error", inferred) if link in listed else "error",
                    "nvlink.link_down", S.link(i, link),
                    f"GPU{i} NVLink {link} is down ({reason})"
                    + (f"; GPU{i} has {gl.active} of {gl.total} links up" if gl.complete
                       else "") + sample,
                    expected="active", actual="down", source=gl.source, hint=HINT_LINK,
                    covers=gpu_and_pairs(i)))
            # active links below the layout with no link down: links missing
            if nvswitch and isinstance(links_per_gpu, int) and isinstance(gl.total, int) \
                    and gl.total and gl.complete \
                    and not gl.down and gl.active < links_per_gpu and gl.active > 0:
                out.append(finding(
                    demote("error", inferred), "nvlink.links_missing", S.gpu(i),
                    f"GPU{i} has {gl.active} NVLinks up, the layout has {links_per_gpu}",
                    expected=links_per_gpu, actual=gl.active, source="nvml", hint=HINT_LINK,
                    covers=gpu_and_pairs(i)))
                deficit[i] = links_per_gpu - gl.active
            # generation
            want_gen = layout.nvlink.generation if layout is not None else None
            vers = {x.version for x in gl.links if x.state == "active" and x.version}
            if want_gen and vers and all(_major(x) != _major(want_gen) for x in vers):
                out.append(finding(
                    "warning", "nvlink.generation", S.gpu(i),
                    f"GPU{i} NVLinks are version {sorted(vers)[0]}, the layout has {want_gen}",
                    expected=want_gen, actual=sorted(vers)[0], source="nvml",
                    hint="is this the right layout?"))
    # -- pasted nvlink -s: a GPU that prints "all links are inActive" states no link; on a
    # GPU the layout expects NVLink on that is its links down (by design only on a card
    # with no bridge, where the layout expects none)
    if down_fabric is None and layout is not None:
        for i in present:
            g = topo.gpu(i)
            tx = g.nvml_text if g is not None else None
            if tx is None or i in v.links or tx.nvlink.status != "inactive":
                continue
            want: Optional[int] = sum(c for (a, b), c in expected.items() if i in (a, b) and c)
            if not want and not (nvswitch and isinstance(links_per_gpu, int)
                                 and links_per_gpu > 0):
                continue
            deficit[i] = 10 ** 6
            out.append(finding(
                demote("error", inferred), "nvlink.link_down", S.gpu(i),
                f"GPU{i} prints every NVLink inactive (nvidia-smi nvlink: \"all links are "
                f"inActive\"), and {layout.name} has NVLink on it: its NVLinks are down"
                + (f" ({links_per_gpu} expected)" if isinstance(links_per_gpu, int) else ""),
                expected="active", actual="all inactive", source="nvml-text",
                hint=HINT_LINK, covers=gpu_and_pairs(i)))
    # -- error counters (independent of layouts)
    thresholds = catalog.thresholds("nvlink", layout.nvlink.error_thresholds
                                    if layout is not None else None)
    for i in present:
        gl = v.links.get(i)
        if gl is None:
            continue
        for rec in gl.links:
            errs = {k: val for k, val in rec.errors.items()
                    if isinstance(val, int) and val > 0}
            if not errs:
                continue
            over = {k: val for k, val in errs.items() if val > thresholds.get(k, 1000)}
            sev = "error" if over else "warning"
            out.append(finding(
                sev, "nvlink.errors", S.link(i, rec.link),
                f"GPU{i} NVLink {rec.link} error counters: "
                + ", ".join(f"{k}={val}" for k, val in sorted(errs.items()))
                + (f" (above the threshold for {', '.join(sorted(over))})" if over else
                   " (cumulative since the driver loaded; below the thresholds)"),
                expected={k: thresholds.get(k, 1000) for k in errs}, actual=errs,
                source=gl.source,
                hint="watch whether they grow (nvidia-smi nvlink -e); a growing CRC/replay "
                     "count points at the link: reset, then reseat/service"))
    # links the input names with a state it cannot read (a damaged letter, an NVML error:
    # a reason given): never a pass about them, never a fault; one note for the node.  An
    # -e/-c excerpt, which prints no states at all, says so in links and show
    unknown = {i: [x.link for x in v.links[i].links if x.state == "unknown" and x.reason]
               for i in present if v.links.get(i) is not None}
    unknown = {i: ks for i, ks in sorted(unknown.items()) if ks}
    if unknown and down_fabric is None:
        first = next(x for x in v.links[next(iter(unknown))].links
                     if x.state == "unknown" and x.reason)
        named = [f"GPU{i} link{'s' if len(ks) > 1 else ''} {int_runs(ks, pairs=True)}"
                 for i, ks in list(unknown.items())[:8]]
        more = f" and {len(unknown) - 8} more GPUs" if len(unknown) > 8 else ""
        out.append(finding(
            "info", "nvlink.not_checked", S.NODE,
            f"NVLink link states not checked for {', '.join(named)}{more}: the input gives "
            f"none ({first.reason})",
            source=", ".join(sorted({v.links[i].source for i in unknown})),
            covers=[S.gpu(i) for i in unknown]))
    # no NVLink evidence at all (sysfs alone, say): not checked, whatever layout was chosen
    # (a layout chosen from the PCI device ids says nothing about the links)
    if not v.pairs and not v.links and (
            (layout is not None and expected) or len(topo.gpus) >= 2):
        out.append(finding("info", "nvlink.not_checked", S.NODE,
                           "not checked: no NVLink data in the input (no GPU↔GPU paths "
                           "from nvidia-smi and no NVML links; sysfs does not see "
                           "NVLink)", source=", ".join(topo.sources)))
        return out
    if layout is None or not expected or down_fabric is not None:
        return out
    # -- pair counts against the layout
    if nvswitch and not all(i in v.links and v.links[i].complete for i in present):
        # a topo text alone (or with a paste that shows no link of the GPU down): a GPU
        # with every pair short has links down
        for i in present:
            if i in v.links and (v.links[i].complete or v.links[i].down):
                continue
            mine = [(k, v.pairs[k][0]) for k in pairs_of(i)]
            if not mine:
                continue
            best = max(c for _, c in mine)
            want = max((expected.get(k, 0) for k, _ in mine), default=0)
            if 0 < best < want and len(mine) == len(present) - 1:
                others_short = [k for k, c in mine if c < want]
                deficit[i] = want - best
                out.append(finding(
                    demote("error", inferred), "nvlink.link_down", S.gpu(i),
                    f"GPU{i} has {best} of {want} NVLinks up: every pair with GPU{i} is "
                    f"NV{best} ({len(others_short)} pairs); which link is down is unknown "
                    "(no NVML data: nvidia-smi nvlink -s shows it)",
                    expected=f"NV{want}", actual=f"NV{best}", source=v.pairs[mine[0][0]][1],
                    hint=HINT_LINK,
                    covers=[S.gpu(i)] + [S.pair(a, b) for (a, b), _ in mine]))
    # on an NVSwitch system every pair of the node has the same NV#: a pair below the node's
    # own other pairs rests on what the node shows, not on the layout alone (no demotion)
    node_best = max((c for c, _ in v.pairs.values()), default=0) if nvswitch else 0
    for (a, b), (c, src) in sorted(v.pairs.items()):
        want = expected.get((a, b))
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
            "error" if c < min(node_best, want) else demote("error", inferred),
            "nvlink.pair_degraded", S.pair(a, b),
            f"GPU{a}-GPU{b} has " + (f"NV{c}" if c else "no NVLink") + f", expected NV{want}"
            + (" (NCCL traffic between them falls back to PCIe)" if not c else
               f" ({want - c} link{'s' if want - c > 1 else ''} fewer)"),
            expected=f"NV{want}", actual=f"NV{c}" if c else None, source=src,
            hint="nvidia-smi nvlink -s and nvlink -R on both GPUs show which link is missing; "
                 "reset the GPUs or reboot; a link that stays missing needs service",
            covers=[S.pair(a, b)]))
    return out
