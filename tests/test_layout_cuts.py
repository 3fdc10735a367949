"""Layout selection on part of a board (issue 12, items 4 and 7).

A container, a VM or CUDA_VISIBLE_DEVICES shows k of a board's N GPUs: every such cut of every
8-GPU corpus matrix, named or not, must give no error finding (a layout matching none of the
pairs never wins; an exact sub-shape of a larger board is a subset, layout none).  The
counterparts: a full board with links down (text and simulated, the GB200 tray too) keeps its
layout and fails.  And a NUMA mismatch never pushes the pick to a layout without a NUMA map.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nvtopo import checks, layouts, snapshot
from nvtopo.checks import select as S
from nvtopo.simulate import simulate

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "topo-corpus"
CUT = ROOT / "fixtures" / "topo-cut"
EIGHT = [p for p in sorted(CORPUS.glob("*.txt"))
         if (lambda t: t.matrix is not None and len(t.gpus) == 8)(snapshot.load(str(p)))]


def cut_text(topo, keep, nics=True, names=False):
    """``topo -m`` of GPUs ``keep`` (renumbered from 0, as a container numbers them) and,
    with ``nics``, every NIC; with ``names`` a ``nvidia-smi -L`` list of the board's model."""
    m = topo.matrix
    labs = [f"GPU{g}" for g in keep] + ([d for d in m.devices if d.startswith("NIC")]
                                        if nics else [])
    new = [f"GPU{i}" for i in range(len(keep))] + labs[len(keep):]
    rows = ["\t".join([""] + new + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for lab, nm in zip(labs, new):
        cells = [m.get(lab, o) or "N/A" for o in labs]
        if lab.startswith("GPU"):
            g = topo.gpu(int(lab[3:]))
            cells += [g.cpu_affinity or "N/A", g.numa_affinity or "N/A",
                      "N/A" if g.gpu_numa_id is None else str(g.gpu_numa_id)]
        rows.append("\t".join([nm] + cells))
    rows += ["", "Legend:", "", "  X    = Self", ""]
    nic_labs = labs[len(keep):]
    if nic_labs:
        rows += ["NIC Legend:", ""] + [f"  {n.label}: {n.name}" for n in topo.nics
                                       if n.label in nic_labs]
    text = "\n".join(rows) + "\n"
    if names:
        text += "\n" + "".join(f"GPU {i}: {names} (UUID: GPU-{i:08d}-0000-0000-0000-000000000000)\n"
                               for i in range(len(keep)))
    return text


def cuts(k):
    """First k, last k, and a spread of k GPUs of 8 (both sockets, every other slot)."""
    spread = [0, 2, 4, 6, 1, 3, 5][:k] if k <= 7 else list(range(8))
    return {tuple(range(k)), tuple(range(8 - k, 8)), tuple(sorted(spread))}


def board_name(path):
    """The GPU model of a corpus board with a layout (for the named variant), or None."""
    sel = S.select(snapshot.load(str(path)))
    if sel.layout is None:
        return None
    pat = sel.layout.gpus.name_pattern
    for name in ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA A800-SXM4-80GB",
                 "Tesla V100-SXM2-32GB"):
        if layouts.name_matches(pat, name):
            return name
    return None


@pytest.mark.parametrize("path", EIGHT, ids=lambda p: p.name[:2])
def test_every_cut_of_a_healthy_board_has_no_error_and_is_a_subset(path, tmp_path):
    full = snapshot.load(str(path))
    full_layout = S.select(full).layout
    model = board_name(path)
    for k in range(2, 8):
        for keep in sorted(cuts(k)):
            for nics in (True, False):
                for named in ((False, True) if model else (False,)):
                    f = tmp_path / f"cut{k}.txt"
                    f.write_text(cut_text(full, keep, nics, model if named else False))
                    r = checks.select_and_run(snapshot.load(str(f)))
                    what = (path.name[:2], keep, nics, named)
                    errors = [(x.code, str(x.subject)) for x in r.findings
                              if x.severity == "error"]
                    assert errors == [], (what, r.layout_name, r.reason)
                    if k <= 4:
                        if r.layout_name == "none":
                            if full_layout is not None and (
                                    k >= 3 or named or full_layout.nvlink.nvswitch):
                                # the board's own layout says what it is part of (two
                                # unnamed GPUs over NV1/NV2 could be a bridged pair too)
                                assert f"{k} GPUs, a subset of" in r.reason, (what, r.reason)
                            continue
                        # only a layout of exactly k GPUs that fits every pair and NUMA
                        # node by shape (4 NV18 GPUs on two sockets: a GB200 tray's shape)
                        pairs = k * (k - 1) // 2
                        assert not named and r.layout.gpus.count == k, (what, r.reason)
                        assert f"{pairs}/{pairs} GPU pairs as expected" in r.reason
                        assert not re.search(r"NUMA (\d+)/(?!\1\b)", r.reason), r.reason
                    elif r.layout_name != "none":
                        # more than half: the board's own layout (or its family), GPUs
                        # missing said as a warning (no source shows one gone)
                        assert r.layout.family == full_layout.family, (what, r.reason)


def text(name):
    return snapshot.load(str(CUT / name))


def test_four_of_eight_a100s_without_names_are_a_subset_not_a_broken_gb200_tray():
    topo = text("a100_4of8_nv12_no_names.txt")
    assert [(a, b, c) for (a, b), (c, _) in sorted(checks.facts.view(topo).pairs.items())] == [
        (0, 1, 12), (0, 2, 12), (0, 3, 12), (1, 2, 12), (1, 3, 12), (2, 3, 12)]
    r = checks.select_and_run(topo)
    assert r.layout_name == "none" and r.verdict == "pass", r.reason
    assert "4 GPUs, a subset of an 8-GPU board?" in r.reason
    tray = next(c for c in S.select(topo).candidates if c.layout.name == "gb200-nvl72-tray")
    assert not tray.fits and "0/6 GPU pairs as expected, 6 short" in tray.why
    # named, the GB200 tray gets the NVLink errors its layout says
    named = checks.select_and_run(topo, "gb200-nvl72-tray")
    assert {f.code for f in named.findings if f.severity == "error"} >= {"nvlink.link_down"}
    # the same for 4 of fixture 02's H100s with their NICs
    r = checks.select_and_run(text("h100_4of8_nv18_4nic.txt"))
    assert r.layout_name == "none" and r.verdict == "pass", r.reason
    # the counterpart: an IBM Minsky (two NV2 pairs, no NVLink between them) is a board of
    # its own, not called part of a DGX-1's mesh
    r = checks.select_and_run(snapshot.load(str(next(CORPUS.glob("06_*.txt")))))
    assert r.layout_name == "none" and "subset" not in r.reason, r.reason


def corpus_text(prefix):
    return next(CORPUS.glob(prefix + "_*.txt")).read_text()


@pytest.mark.parametrize("prefix,fault,want", [
    # one NVSwitch of an HGX H100 down: every pair short, no layout has them exactly
    ("02", lambda t: t.replace("NV18", "NV14"), "hgx-h100-8"),
    # one H100 with 6 NVLinks down: its 7 pairs NV12 (NV12 is an A100's count)
    ("02", lambda t: re.sub(r"^(GPU0\s.*)$", lambda m: m.group(1).replace("NV18", "NV12"),
                            t, flags=re.M).replace("NV18    NV18", "NV18    NV18", 1),
     "hgx-h100-8"),
    # a GB200 tray with a switch tray down (NV16 on every pair) ...
    ("53", lambda t: t.replace("NV18", "NV16"), "gb200-nvl72-tray"),
])
def test_a_full_board_with_links_down_keeps_its_layout_and_fails(prefix, fault, want,
                                                                  tmp_path):
    f = tmp_path / "t.txt"
    f.write_text(fault(corpus_text(prefix)))
    r = checks.select_and_run(snapshot.load(str(f)))
    assert r.layout_name == want and r.verdict == "fail", r.reason
    assert {x.code for x in r.findings if x.severity == "error"} <= {
        "nvlink.link_down", "nvlink.pair_degraded"}
    # the healthy counterpart passes on the same layout
    r = checks.select_and_run(snapshot.load(str(next(CORPUS.glob(prefix + "_*.txt")))))
    assert r.layout_name == want and r.verdict == "pass", r.reason


def sim(name, *faults):
    return snapshot.derive(json.loads(json.dumps(simulate(layouts.load(name), faults,
                                                          seed=2))), where="sim.json")


@pytest.mark.parametrize("lay,fault", [("dgx-h100", "nvlink-down:GPU3:7"),
                                       ("dgx-h100", "nvlink-degraded:GPU2-GPU6"),
                                       ("gb200-nvl72-tray", "nvlink-down:GPU1:3"),
                                       ("gb200-nvl72-tray", "nvlink-degraded:GPU0-GPU2")])
def test_a_simulated_board_with_a_link_fault_keeps_its_layout_and_fails(lay, fault):
    r = checks.select_and_run(sim(lay, fault))
    assert r.layout_name == lay and r.verdict == "fail", r.reason
    assert any(f.code.startswith("nvlink.") for f in r.findings if f.severity == "error")
    assert checks.select_and_run(sim(lay)).verdict == "pass"


@pytest.mark.parametrize("name", ["h100_8gpu_numa_swapped.txt", "h100_8gpu_numa_shifted.txt"])
def test_a_numa_mismatch_does_not_pick_a_layout_without_a_numa_map(name):
    topo = text(name)
    r = checks.select_and_run(topo)
    # picked by shape (the most common NV18 board), not by the NUMA map it misfits
    assert r.layout_name == "hgx-h100-8", r.reason
    numa = [f for f in r.findings if f.code == "numa.placement"]
    # the pick is ambiguous with boards that state no NUMA map: said, as a warning
    assert [(f.severity, str(f.subject)) for f in numa] == [("warning", "node")]
    assert "dgx-b200" in numa[0].message and "no NUMA map" in numa[0].message
    assert numa[0].actual["GPU0"] != numa[0].expected["GPU0"]
    # named, the same mismatch is the error
    named = checks.select_and_run(topo, "hgx-h100-8")
    assert [(f.severity, f.code) for f in named.findings if f.severity == "error"] == [
        ("error", "numa.placement")]
    # the healthy counterpart keeps its layout and passes, its NUMA checked
    ok = checks.select_and_run(snapshot.load(str(next(CORPUS.glob("02_*.txt")))))
    assert ok.layout_name == "hgx-h100-8" and ok.verdict == "pass"
    assert "NUMA 8/8 as expected" in ok.reason
    assert not any(f.code.startswith("numa.") for f in ok.findings)


def test_named_numa_mismatch_is_an_error_with_no_ambiguity():
    """With GPU names the NUMA-less B200/B300 layouts do not fit: the error stays."""
    raw = (CUT / "h100_8gpu_numa_swapped.txt").read_text() + "\n" + "".join(
        f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:08d}-0000-0000-0000-000000000000)\n"
        for i in range(8))
    topo = snapshot.load_text(raw, "t.txt")
    assert {g.name for g in topo.gpus} == {"NVIDIA H100 80GB HBM3"}
    r = checks.select_and_run(topo)
    assert r.layout.family == "h100-8" and r.verdict == "fail", r.reason
    assert [f.severity for f in r.findings if f.code == "numa.placement"] == ["error"]


@pytest.mark.parametrize("name", ["h100_5of8_nv18_8nic_named.txt",
                                  "h100_5of8_nv18_8nic_paired_named.txt"])
def test_nic_names_matching_by_chance_on_renumbered_gpus_do_not_pick_a_vendor_port_map(name):
    """5 of 8 H100s (renumbered 0-4, slots unknown) with all 8 host NICs: two or three NIC
    names matched dgx-h100's port map by index while the others' NICs sat at PIX under other
    names, and that picked dgx-h100 over hgx-h100-8 (then nic.missing errors; on fixture
    21's cut a nic.placement error the full board, on hgx-h100-8, never gets)."""
    topo = text(name)
    r = checks.select_and_run(topo)
    assert r.layout_name == "hgx-h100-8" and r.verdict == "pass", r.reason
    assert [x.code for x in r.findings if x.severity != "info"] == ["gpu.missing"]
    dgx = next(c for c in S.select(topo).candidates if c.layout.name == "dgx-h100")
    assert any("slots unknown: names not counted" in w for w in dgx.why), dgx.why


@pytest.mark.parametrize("lay", ["dgx-h100", "dgx-h200", "dgx-1-v100"])
def test_a_dgx_with_a_gpu_gone_and_every_nic_under_its_port_map_name_keeps_its_layout(lay):
    """The counterpart: names that all match the port map are evidence, GPUs renumbered or
    not (a DGX-1's NICs are shared by two GPUs each, so they never tell the slots)."""
    r = checks.select_and_run(sim(lay, "gpu-missing:GPU0"))
    assert r.layout_name == lay, r.reason
    assert [(x.code, str(x.subject)) for x in r.findings if x.severity == "error"] == [
        ("gpu.missing", "GPU7")]
