"""Layout selection never forces a misfit (issue 12, item 4).

Every case with its healthy counterpart: names that contain another model's name
(GB200 / B200, GH200 / H200, GB300 / B300), a container that sees a subset of a board,
a layout that matches none of the pairs.
"""

from __future__ import annotations

import json

import pytest

from nvtopo import checks, layouts, snapshot
from nvtopo.checks import select as S
from nvtopo.simulate import build, simulate, snapshot as sim_snapshot


def sim(name, *faults, seed=2):
    return snapshot.derive(json.loads(json.dumps(simulate(layouts.load(name), faults,
                                                          seed=seed))), where="sim.json")


@pytest.mark.parametrize("gpu,want,not_", [
    ("NVIDIA B200", ["dgx-b200"], ["gb200-nvl72-tray"]),
    ("NVIDIA GB200", ["gb200-nvl72-tray"], ["dgx-b200", "gb300-nvl72-tray"]),
    ("NVIDIA B300 SXM6 AC", ["hgx-b300-8", "dgx-b300"],
     ["hgx-h100-8", "dgx-b200", "gb300-nvl72-tray"]),
    ("NVIDIA GB300", ["gb300-nvl72-tray"],
     ["hgx-b300-8", "dgx-b300", "dgx-b200", "gb200-nvl72-tray"]),
    ("NVIDIA H200", ["dgx-h200", "hgx-h200-8"], ["gh200-4"]),
    ("NVIDIA GH200 480GB", ["gh200-4"], ["dgx-h200", "hgx-h200-8", "gcp-a3-ultragpu-8g"]),
])
def test_a_model_name_inside_another_does_not_match_it(gpu, want, not_):
    for name in want:
        assert layouts.name_matches(layouts.load(name).gpus.name_pattern, gpu), name
    for name in not_:
        assert not layouts.name_matches(layouts.load(name).gpus.name_pattern, gpu), name


def test_simulate_dgx_b200_is_b200_on_x86_and_picks_its_own_layout():
    doc = json.loads(json.dumps(simulate(layouts.load("dgx-b200"), (), seed=2)))
    topo = snapshot.derive(doc, where="sim.json")
    assert {g.name for g in topo.gpus} == {"NVIDIA B200"}
    assert doc["host"]["machine"] == "x86_64"  # not Grace
    r = checks.select_and_run(topo)
    assert r.layout_name == "dgx-b200" and r.verdict == "pass"
    # the counterpart: a GB200 tray still picks the tray
    assert checks.select_and_run(sim("gb200-nvl72-tray")).layout_name == "gb200-nvl72-tray"


def test_b300_is_not_labelled_hgx_h100_8():
    r = checks.select_and_run(sim("hgx-b300-8"))
    assert r.layout_name == "hgx-b300-8" and r.verdict == "pass"
    assert "hgx-h100-8" not in r.reason


def missing(lay, idents, seed=2):
    return sim(lay, *[f"gpu-missing:GPU{i}" for i in idents], seed=seed)


@pytest.mark.parametrize("lay", ["dgx-b200", "hgx-h100-8", "dgx-a100"])
def test_a_container_seeing_half_the_board_is_a_subset_not_a_broken_board(lay):
    topo = missing(lay, range(4, 8))
    r = checks.select_and_run(topo)
    assert r.layout_name == "none" and r.verdict == "pass", r.reason
    assert "4 GPUs, a subset of an 8-GPU board?" in r.reason
    assert [f for f in r.findings if f.severity == "error"] == []
    # never the 4-GPU tray/board whose pairs the visible GPUs do not have
    sel = S.select(topo)
    assert sel.layout is None
    # the counterpart: named, the full board is checked and the 4 GPUs are missing
    named = checks.select_and_run(topo, lay)
    assert sorted(str(f.subject) for f in named.findings
                  if f.severity == "error" and f.code == "gpu.missing") == [
        "GPU4", "GPU5", "GPU6", "GPU7"]


def test_a_node_that_lost_two_gpus_keeps_its_layout_and_fails():
    r = checks.select_and_run(missing("hgx-h100-8", (6, 7)))
    assert r.layout_name == "hgx-h100-8" and r.verdict == "fail"
    assert {f.code for f in r.findings if f.severity == "error"} == {"gpu.missing"}


def test_a_layout_matching_none_of_the_pairs_never_wins_by_name():
    # 4 H100s of an 8-GPU NVSwitch board (NV18 on every pair) are not an HGX H100 4-GPU
    # board (NV6 on every pair), though the name matches
    topo = missing("hgx-h100-8", range(4, 8))
    cand = S.score(topo, checks.facts.view(topo), layouts.load("hgx-h100-4"))
    assert not cand.fits and "none of the 6 GPU pairs" in (cand.excluded or "")
    # the counterpart: a real 4-GPU board picks its layout
    r = checks.select_and_run(sim("hgx-h100-4"))
    assert r.layout_name == "hgx-h100-4" and r.verdict == "pass"


def test_a_single_gpu_excerpt_is_not_told_its_board_is_missing_gpus():
    r = checks.select_and_run(missing("hgx-h100-8", range(1, 8)))
    assert r.verdict == "pass" and "1 GPU, a subset of" in r.reason


def test_a_pasted_excerpt_of_three_gpus_is_not_a_four_gpu_board_missing_one():
    """nvidia-smi nvlink -s of 3 A100s (fixtures/nvml-text): no pair facts, so a 4-GPU board
    with one gone is no better than part of an 8-GPU board: neither, no gpu.missing."""
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "fixtures" / "nvml-text" / \
        "nvlink_s_a100_sxm4_excerpt.txt"
    r = checks.select_and_run(snapshot.load(str(path)))
    assert r.layout_name == "none" and r.verdict == "pass"
    assert "3 GPUs, a subset of a 4- or 8-GPU board?" in r.reason
    # the counterpart: a real HGX A100 4-GPU board that lost a GPU (its pairs fit only the
    # 4-GPU board) keeps its layout and the error
    r = checks.select_and_run(missing("hgx-a100-4", (3,)))
    assert r.layout_name == "hgx-a100-4" and r.verdict == "fail"
    assert [str(f.subject) for f in r.findings if f.code == "gpu.missing"] == ["GPU3"]


def test_sysfs_alone_names_the_gpu_model_by_pci_device_id():
    import sysfs_trees
    from nvtopo.probes import ProbeOptions, sysfs

    for tree, want, dev in (("dgx-h100", "dgx-h100", "0x2330"),
                            ("dgx-a100", "dgx-a100", "0x20b2")):
        root, faults = sysfs_trees.tree(tree)
        topo = sysfs.derive(sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults))
        assert all(g.name is None for g in topo.gpus)  # sysfs has no names
        r = checks.select_and_run(topo)
        assert r.layout_name == want and r.verdict == "pass", r.reason
        assert f"(PCI device id {dev}) matches" in r.reason
        # a layout chosen from the device id says nothing about the links: sysfs does not
        # see NVLink, so the NVLink check is reported as not checked (no silent pass)
        assert "nvlink.not_checked" in {f.code for f in r.not_checked}, r.findings
    # the counterpart: an id the table does not hold (H100 PCIe in a VM) picks no layout
    root, faults = sysfs_trees.tree("vm")
    topo = sysfs.derive(sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults))
    assert checks.select_and_run(topo).layout_name == "none"


def test_sysfs_alone_names_pcie_cards_without_guessing_a_board():
    """Two L40S in a sysfs tree (roce-bond): named by their PCI device id (0x26b9), no layout,
    and no "subset of a board?" guess (PCIe cards are a server maker's count)."""
    import sysfs_trees
    from nvtopo.probes import ProbeOptions, sysfs

    root, faults = sysfs_trees.tree("roce-bond")
    topo = sysfs.derive(sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults))
    from nvtopo.checks.select import gpu_names

    assert gpu_names(topo) == (["NVIDIA L40S"], "0x26b9")
    r = checks.select_and_run(topo)
    assert r.layout_name == "none" and r.verdict == "pass"
    assert r.reason.startswith("no layout fits: 2 GPUs (NVIDIA L40S);") and "subset" not in r.reason


def test_device_id_table_names_match_their_layouts():
    table = layouts.device_names()
    assert "device_ids" not in layouts.names()
    for dev, name in table.items():
        assert dev == dev.lower() and dev.startswith("0x") and int(dev, 16) < 0x10000
    pats = {n: layouts.load(n).gpus.name_pattern for n in layouts.names()}
    # every bundled layout's GPU is named by some id
    for lay, pat in pats.items():
        assert any(layouts.name_matches(pat, nm) for nm in table.values()), lay


def test_a_renumbered_mesh_with_a_degraded_link_is_mapped_the_way_numa_says():
    """DGX-1: with one link degraded several renumberings explain the NV# equally well; the
    one that explains the NUMA nodes too wins (was: one of them, and 8 numa.placement)."""
    import random
    from nvtopo.checks import facts as F
    lay = layouts.load("dgx-1-v100")
    exp, gn = F.layout_pairs(lay, 8), lay.numa.gpu_numa
    rng = random.Random(7)
    for _ in range(25):
        perm = list(range(8))
        rng.shuffle(perm)
        obs = {(a, b): exp[(min(perm[a], perm[b]), max(perm[a], perm[b]))]
               for a in range(8) for b in range(a + 1, 8)}
        healthy = dict(obs)
        obs[rng.choice(sorted(k for k, c in obs.items() if c))] -= 1
        numa = {i: gn[str(perm[i])] for i in range(8)}

        def misses(m):
            return sum(1 for i, t in m.items() if gn[str(t)] != numa[i])

        mapping, cost = S.best_mapping(obs, range(8), exp, 8, misses)
        assert cost == 1 and misses(mapping) == 0
        # the counterpart: healthy, the mapping explains every pair and every NUMA node
        mapping, cost = S.best_mapping(healthy, range(8), exp, 8, misses)
        assert cost == 0 and misses(mapping) == 0


#: GPU names (as NVML prints them) the HGX/DGX board layouts must and must not take: the
#: NVL and PCIe cards share the chip's name but are PCIe cards (bridged in pairs or fours),
#: not an NVSwitch board (issue 12: ``\bH200`` matched "NVIDIA H200 NVL").
BOARD_NAMES = [
    ("hgx-h200-8", "NVIDIA H200", True), ("hgx-h200-8", "NVIDIA H200 NVL", False),
    ("dgx-h200", "NVIDIA H200 NVL", False), ("gcp-a3-ultragpu-8g", "NVIDIA H200 NVL", False),
    ("hgx-h200-8", "NVIDIA GH200 480GB", False),
    ("hgx-h100-8", "NVIDIA H100 80GB HBM3", True), ("hgx-h100-8", "NVIDIA H100 NVL", False),
    ("hgx-h100-8", "NVIDIA H100 PCIe", False),
    ("hgx-a100-4", "NVIDIA A100-SXM4-40GB", True), ("hgx-a100-4", "NVIDIA A100-PCIE-40GB", False),
    ("hgx-a100-4", "NVIDIA A100 80GB PCIe", False),
    ("hgx-a100-8", "NVIDIA A100-SXM4-80GB", True), ("hgx-a100-8", "NVIDIA A100 80GB PCIe", False),
    ("hgx-a800-8", "NVIDIA A800-SXM4-80GB", True), ("hgx-a800-8", "NVIDIA A800 80GB PCIe", False),
    ("hgx-h800-8", "NVIDIA H800", True), ("hgx-h800-8", "NVIDIA H800 PCIe", False),
    ("hgx-h800-8", "NVIDIA H800 NVL", False),
    ("hgx-h20-8", "NVIDIA H20", True), ("hgx-h20-8", "NVIDIA H20 NVL", False),
    ("hgx-h20-8", "NVIDIA H200", False),
]


@pytest.mark.parametrize("layout,name,board", BOARD_NAMES)
def test_board_name_patterns_leave_out_the_nvl_and_pcie_cards(layout, name, board):
    assert layouts.name_matches(layouts.load(layout).gpus.name_pattern, name) is board


@pytest.mark.parametrize("pattern", sorted(
    {layouts.load(n).gpus.name_pattern for n in layouts.names()} - {None}
    | {"A100-SXM4", "k", "s", "", "NVIDIA A100 80GB", "#x y"}))
def test_a_plain_name_pattern_is_found_as_its_regular_expression_finds_it(pattern):
    """name_matches finds a plain ASCII pattern without compiling it: always as re does
    (case-insensitive; a name with non-ASCII letters goes through the pattern, where the
    long s is an s and the Kelvin sign a k)."""
    import re

    names = ["NVIDIA A100-SXM4-80GB", "nvidia a100-sxm4-40gb", "NVIDIA GB200",
             "Tesla V100-SXM2-16GB", "NVIDIA H100 80GB HBM3", "NVIDIA A100 80GB PCIe",
             "\u212a", "K", "#X Y", "#x  y",
             "NVIDIA H200 NVL", "", "GH200 480GB", "V100-DGXS-32GB", "\u017f", "x" * 300 + "GB200"]
    for name in names:
        want = re.compile(pattern, re.I).search(name[:layouts.NAME_SEARCH_LIMIT]) is not None
        assert layouts.name_matches(pattern, name) is want, (pattern, name)
