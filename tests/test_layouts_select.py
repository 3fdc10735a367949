"""Layout selection: every corpus file picks its layout (or none), degraded nodes keep theirs,
permuted meshes match with the mapping reported; and the bundled layouts' content."""

import itertools
import json
from pathlib import Path

import pytest

from nvtopo import checks, layouts, snapshot
from nvtopo.checks import select as S
from nvtopo.model import Matrix, NVLinkPair, Topology, GPU

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "topo-corpus"

#: file prefix -> (layout auto picks, its family, known healthy machine per MANIFEST.md).
#: ``None``: no bundled layout fits (consumer cards, PCIe-only boxes, partial meshes,
#: P2P-only outputs): only the layout-independent checks run.
CORPUS_TABLE = {
    "01": ("dgx-a100", "a100-8", True),
    "02": ("hgx-h100-8", "h100-8", True),
    "03": (None, None, True),
    "06": (None, None, True),   # IBM Minsky P100: no layout
    "07": ("gh200-4", "gh200", True),
    "08": (None, None, True),
    "12": ("dgx-1-v100", "dgx-1", True),
    "14": (None, None, True),
    "15": (None, None, True),
    "18": (None, None, True),
    "21": ("hgx-h100-8", "h100-8", True),
    "23": ("hgx-h100-8", "h100-8", True),  # 6 of 8 H100 in a VM: a gpu.missing warning
    "24": ("hgx-h100-8", "h100-8", True),
    "25": (None, None, True),
    "27": (None, None, True),
    "29": (None, None, True),   # 4x V100 partial mesh: no layout
    "34": ("hgx-a100-4", "a100-4", True),
    "36": ("hgx-a100-4", "a100-4", True),
    "38": ("hgx-a100-4", "a100-4", True),
    "41": ("hgx-a800-8", "a800-8", True),
    "43": ("hgx-a100-4", "a100-4", True),
    "44": (None, None, True),
    "45": (None, None, True),
    "46": ("hgx-a100-4", "a100-4", True),
    "48": (None, None, True),
    "53": ("gb200-nvl72-tray", "gb200", True),
    "54": (None, None, True),
    "56": (None, None, True),
    "57": ("v100-sxm2-8", "dgx-1", True),
    "61": (None, None, True),
}

FILES = sorted(CORPUS.glob("*.txt"))


def test_table_covers_every_corpus_file():
    assert sorted(f.name[:2] for f in FILES) == sorted(CORPUS_TABLE)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:2])
def test_corpus_picks_its_layout_and_healthy_ones_check_clean(path):
    want, family, healthy = CORPUS_TABLE[path.name[:2]]
    topo = snapshot.load(str(path))
    sel = S.select(topo)
    assert (sel.layout.name if sel.layout else None) == want, sel.reason
    if want is None:
        assert sel.reason.startswith("no layout fits")
    else:
        assert sel.layout.family == family
        assert sel.reason.startswith("auto: ")
    errors = [(f.code, str(f.subject)) for f in checks.run(topo, sel).findings
              if f.severity == "error"]
    if healthy:
        assert errors == []
    else:
        assert errors == [("gpu.missing", "GPU6"), ("gpu.missing", "GPU7")]


def test_ambiguous_nv18_board_says_so_and_picks_the_most_common():
    topo = snapshot.load(str(CORPUS / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"))
    sel = S.select(topo)
    assert "ambiguous" in sel.reason and "hgx-h20-8" in sel.reason
    assert sel.layout.name == "hgx-h100-8"


def _mesh_topo(pairs, n=8, perm=None):
    perm = perm or list(range(n))
    cells = [["SYS"] * n for _ in range(n)]
    for i in range(n):
        cells[i][i] = "X"
    for key, c in pairs.items():
        a, b = (perm[int(x)] for x in key.split("-"))
        cells[a][b] = cells[b][a] = f"NV{c}"
    labels = [f"GPU{i}" for i in range(n)]
    return Topology(gpus=[GPU(i) for i in range(n)], sources=["topo-text"],
                    matrix=Matrix(labels, cells))


def test_permuted_dgx1_v100_mesh_matches_with_the_mapping():
    pairs = layouts.load("dgx-1-v100").nvlink.pairs
    perm = [3, 6, 0, 5, 1, 7, 2, 4]  # layout GPU i is printed as GPU perm[i]
    topo = _mesh_topo(pairs, perm=perm)
    sel = S.select(topo)
    assert sel.layout.family == "dgx-1"
    assert sel.mapping is not None and "renumbered" in sel.reason
    # the mapping sends each printed GPU to a layout GPU with the same neighbourhood
    for key, c in pairs.items():
        a, b = (int(x) for x in key.split("-"))
        pa, pb = perm[a], perm[b]
        assert pairs.get(f"{min(sel.mapping[pa], sel.mapping[pb])}-"
                         f"{max(sel.mapping[pa], sel.mapping[pb])}") == c
    assert [f for f in checks.run(topo, sel).findings if f.severity == "error"] == []


def test_identity_mesh_needs_no_mapping_and_a_missing_link_is_one_pair_finding():
    pairs = dict(layouts.load("dgx-1-v100").nvlink.pairs)
    pairs["0-3"] = 1
    topo = _mesh_topo(pairs)
    sel = S.select(topo)
    assert sel.layout.family == "dgx-1" and sel.mapping is None
    errs = [(f.code, str(f.subject)) for f in checks.run(topo, sel).findings
            if f.severity == "error"]
    assert errs == [("nvlink.pair_degraded", "GPU0-GPU3")]


def test_best_mapping_is_exact_for_every_relabelling_of_a_small_mesh():
    expected = {(0, 1): 2, (1, 2): 1, (2, 3): 2, (0, 3): 1}
    for perm in itertools.permutations(range(4)):
        obs = {tuple(sorted((perm[a], perm[b]))): c for (a, b), c in expected.items()}
        for i in range(4):
            for j in range(i + 1, 4):
                obs.setdefault((i, j), 0)
        mapping, cost = S.best_mapping(obs, range(4), expected, 4)
        assert cost == 0


def _h100_nvswitch(n=8, count=18, names=None):
    labels = [f"GPU{i}" for i in range(n)]
    cells = [["X" if i == j else f"NV{count}" for j in range(n)] for i in range(n)]
    gpus = [GPU(i, name=names, numa_affinity="0" if i < 4 else "1",
                sources={"numa_affinity": "topo-text"}) for i in range(n)]
    return Topology(gpus=gpus, sources=["topo-text"], matrix=Matrix(labels, cells),
                    nvlinks=[NVLinkPair(a, b, count) for a in range(n) for b in range(a + 1, n)])


def test_degraded_h100_node_keeps_its_layout():
    topo = _h100_nvswitch(n=7, names="NVIDIA H100 80GB HBM3")
    sel = S.select(topo)
    assert sel.layout.family == "h100-8"
    got = [(f.severity, f.code, str(f.subject)) for f in checks.run(topo, sel).findings
           if f.code == "gpu.missing"]
    # a pasted matrix alone cannot tell a GPU gone from a VM given 7: one warning
    assert got == [("warning", "gpu.missing", "node")]


def test_gpu_names_decide_between_nv18_boards():
    for name, family in (("NVIDIA H200", "h100-8"), ("NVIDIA H20", "h20-8"),
                         ("NVIDIA B200", "b200-8"), ("NVIDIA H800", "h800-8")):
        count = 8 if "H800" in name else 18
        sel = S.select(_h100_nvswitch(count=count, names=name))
        assert sel.layout is not None and sel.layout.family == family, (name, sel.reason)
        assert sel.layout.name != "hgx-h100-8"


def test_nothing_fits_runs_layout_independent_checks_only():
    topo = snapshot.load(str(CORPUS / "08_2x-gtx1080ti-desktop-phb-numa-na.txt"))
    sel = S.select(topo)
    assert sel.layout is None and "no layout fits: 2 GPUs" in sel.reason


def test_explicit_layout_and_user_file(tmp_path):
    topo = snapshot.load(str(CORPUS / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"))
    sel = S.select(topo, "dgx-h100")
    assert sel.layout.name == "dgx-h100" and sel.reason.startswith("--layout dgx-h100")
    # the DGX port map's names do not hold on this OEM board, but every GPU has a NIC at
    # PIX (placement, not names): one renaming warning, no error
    found = checks.run(topo, sel).findings
    assert [f.code for f in found if f.severity == "error"] == []
    assert [f.code for f in found if f.code.startswith("nic.")
            and f.severity != "info"] == ["nic.names_differ"]
    f = tmp_path / "mine.json"
    f.write_text(json.dumps(dict(layouts.load("hgx-h100-8").data, name="mine")))
    sel = S.select(topo, layout_file=str(f))
    assert sel.layout.name == "mine" and sel.layout.origin == str(f)


# --- the bundled layouts -------------------------------------------------------------------

REQUIRED = ["dgx-1-p100", "dgx-station-v100", "dgx-2", "hgx-a100-4", "hgx-a100-8",
            "hgx-a800-8", "dgx-h200", "hgx-h100-4", "hgx-h800-8", "hgx-h20-8", "dgx-b200",
            "hgx-b300-8", "dgx-b300", "gb200-nvl72-tray", "gb300-nvl72-tray", "gh200-4", "dgx-h100", "dgx-a100", "dgx-1-v100"]


def test_required_layouts_exist():
    assert set(REQUIRED) <= set(layouts.names())


@pytest.mark.parametrize("name", layouts.names())
def test_every_layout_is_consistent(name):
    lay = layouts.load(name)
    n = lay.gpus.count
    assert isinstance(n, int) and n > 0
    pairs = lay.nvlink.pairs
    if pairs:
        links = {g: 0 for g in range(n)}
        for k, c in pairs.items():
            a, b = map(int, k.split("-"))
            assert 0 <= a < b < n
            links[a] += c
            links[b] += c
        if lay.nvlink.links_per_gpu:
            assert set(links.values()) == {lay.nvlink.links_per_gpu}
    for m in (lay.numa.gpu_node, lay.nics.placement.port_map):
        if m:
            assert set(m) <= set(range(n))
    for sec in ("gpus", "nvlink", "numa"):
        if getattr(lay, sec).stated:
            assert getattr(lay, sec).evidence, f"{name}: {sec} without evidence"
    s = lay.summary()
    assert s["name"] == name and s["gpus"] == n


def test_inferred_only_sections_give_warnings_not_errors():
    lay = layouts.load("dgx-station-v100")
    assert lay.nvlink.inferred() and lay.numa.inferred()
    topo = _mesh_topo({"0-1": 2, "0-2": 1, "0-3": 2, "1-2": 2, "1-3": 2, "2-3": 2}, n=4)
    found = checks.run(topo, lay).findings
    assert [f.severity for f in found if f.code == "nvlink.pair_degraded"] == ["warning"]
    assert not [f for f in found if f.severity == "error"]


def test_dgx1_p100_mesh_is_two_quads_plus_cross_links():
    pairs = layouts.load("dgx-1-p100").nvlink.pairs
    assert len(pairs) == 16 and set(pairs.values()) == {1}
    assert {"0-4", "1-5", "2-6", "3-7"} <= set(pairs)


@pytest.mark.parametrize("name", layouts.names())
def test_every_bundled_layouts_healthy_simulation_passes_check_with_layout_auto(name, tmp_path):
    """`nvtopo simulate NAME` then `nvtopo check --layout auto`: exit 0 for every layout (a
    cloud layout auto cannot pick falls to a sibling, whose facts must not contradict it)."""
    from cli_runner import make_runner

    from nvtopo.cli import app

    out = tmp_path / f"{name}.json"
    runner = make_runner()
    r = runner.invoke(app, ["simulate", name, "-o", str(out)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["check", "--from", str(out), "--layout", "auto", "--format",
                            "json"])
    assert r.exit_code == 0, r.output[-3000:]


def test_an_oem_h200_node_picks_the_generic_hgx_h200_layout():
    """An H200 node with GCP's RoCE NICs (A3 Ultra is only used when named): the generic
    HGX H200 layout, which expects nothing of the integrator's NICs, not the DGX H200."""
    from nvtopo.simulate import simulate

    doc = json.loads(json.dumps(simulate(layouts.load("gcp-a3-ultragpu-8g"), (), seed=3)))
    topo = snapshot.derive(doc, where="a3")
    sel = S.select(topo)
    assert sel.name == "hgx-h200-8" and sel.layout.nics.per_gpu is not None \
        and not sel.layout.nics.facts_stated
    found = checks.run(topo, sel).findings
    assert checks.verdict(found) == "pass"
    assert not [f for f in found if f.severity != "info"]


def test_auto_does_not_apply_a_port_map_the_nics_contradict(monkeypatch):
    """The same node when only the DGX H200 fits by GPU name (as before hgx-h200-8 was
    bundled): dgx-h200, but not its InfiniBand port map."""
    from nvtopo.simulate import simulate

    names = [n for n in layouts.names() if n != "hgx-h200-8"]
    monkeypatch.setattr(layouts, "names", lambda: list(names))
    doc = json.loads(json.dumps(simulate(layouts.load("gcp-a3-ultragpu-8g"), (), seed=3)))
    topo = snapshot.derive(doc, where="a3")
    sel = S.select(topo)
    assert sel.name == "dgx-h200" and not sel.layout.nics.stated and sel.nics_dropped
    assert "NIC expectations are not applied" in sel.reason
    found = checks.run(topo, sel).findings
    assert checks.verdict(found) == "pass"
    assert any(f.code == "nic.not_checked" and f.severity == "info" for f in found)


#: The cloud and PCIe layouts of issue 26 item 6 -> what `--layout auto` picks on a healthy
#: simulated node of each: itself, or (never automatic: a cloud SKU not told apart from inside
#: the VM) the generic sibling, whose facts must not contradict it. p5en's simulated EFA devices
#: are named mlx5_N, some as the DGX H200 port map: dgx-h200, with a renaming warning.
NEW_PICKS = {
    "aws-p5-48xlarge": "hgx-h100-8", "aws-p5e-48xlarge": "hgx-h200-8",
    "aws-p5en-48xlarge": "dgx-h200", "gcp-a3-megagpu-8g": "hgx-h100-8",
    "gcp-a4-highgpu-8g": "dgx-b200", "oci-bm-gpu-h100-8": "hgx-h100-8",
    "azure-nd96isr-h200-v5": "azure-nd96isr-h200-v5", "azure-nd-gb200-v6": "azure-nd-gb200-v6",
    "pcie-l40s-8": "pcie-l40s-8", "pcie-l4-8": "pcie-l4-8",
    "pcie-h100-nvl-4": "pcie-h100-nvl-4", "pcie-h100-nvl-8": "pcie-h100-nvl-8",
    # issue 26 item 4: the GB300 tray is told by GPU name; a DGX B300 is not told from an
    # HGX B300 (no public port map): only named
    "gb300-nvl72-tray": "gb300-nvl72-tray", "dgx-b300": "hgx-b300-8",
}


def _simulated(name):
    from nvtopo.simulate import simulate

    doc = json.loads(json.dumps(simulate(layouts.load(name), (), seed=3)))
    return snapshot.derive(doc, where=name)


@pytest.mark.parametrize("name", sorted(NEW_PICKS))
def test_new_layouts_healthy_node_picks_itself_or_its_sibling_without_errors(name):
    topo = _simulated(name)
    named = checks.run(topo, S.select(topo, name)).findings
    assert [(f.code, str(f.subject)) for f in named if f.severity != "info"] == []
    sel = S.select(topo)
    assert sel.name == NEW_PICKS[name], sel.reason
    if sel.name != name:
        assert layouts.load(name).choice.auto is False and name not in sel.ties
    found = checks.run(topo, sel).findings
    assert [f.code for f in found if f.severity == "error"] == []


def test_azure_gb200_vm_ties_with_the_bare_tray_and_says_so():
    """Its mlx5_ib names fit as well as the tray's facts: the tie is named, the Azure layout
    wins it by priority; a bare tray (mlx5_0, 1, 4, 5) never sees the Azure layout."""
    sel = S.select(_simulated("azure-nd-gb200-v6"))
    assert sel.how == "ambiguous" and sel.ties == ["azure-nd-gb200-v6", "gb200-nvl72-tray"]
    assert "ambiguous: azure-nd-gb200-v6, gb200-nvl72-tray fit equally" in sel.reason
    tray = S.select(_simulated("gb200-nvl72-tray"))
    assert tray.name == "gb200-nvl72-tray" and tray.how == "auto"
    assert "azure-nd-gb200-v6" not in [c.layout.name for c in tray.candidates]


def test_gb200_and_gb300_trays_never_pick_each_other():
    """By GPU name: a GB200 tray never picks the GB300 layout (nor the other way round), and
    the other chip's layouts are excluded, not tied; without names (a topo -m) the two trays
    fit equally: the GB200 tray, the more common, is picked and the tie is named."""
    gb300 = S.select(_simulated("gb300-nvl72-tray"))
    assert gb300.name == "gb300-nvl72-tray" and gb300.how == "auto", gb300.reason
    gb200 = S.select(_simulated("gb200-nvl72-tray"))
    assert gb200.name == "gb200-nvl72-tray" and gb200.how == "auto", gb200.reason
    for sel, other in ((gb300, ("gb200-nvl72-tray", "azure-nd-gb200-v6")),
                       (gb200, ("gb300-nvl72-tray",))):
        cands = {c.layout.name: c for c in sel.candidates}
        for name in other:  # (azure-nd-gb200-v6 is no candidate without its mlx5_ib names)
            c = cands.get(name)
            assert c is None or (not c.fits and "does not match" in c.excluded), name
            assert c is not None or name.startswith("azure")
    assert not layouts.name_matches(layouts.load("gb300-nvl72-tray").gpus.name_pattern,
                                    "NVIDIA GB200")
    assert not layouts.name_matches(layouts.load("gb200-nvl72-tray").gpus.name_pattern,
                                    "NVIDIA GB300")
    topo = snapshot.load(str(CORPUS / "53_gb200-4gpu-nv18-8nic-numa-lists-gpu-numa-id-no-"
                                      "final-newline.txt"))
    sel = S.select(topo)
    assert sel.name == "gb200-nvl72-tray" and sel.how == "ambiguous"
    assert sel.ties == ["gb200-nvl72-tray", "gb300-nvl72-tray"]
    # the GB200 tray's topo -m (the GB300 tray's HCAs sit in the same slots, SYS to every
    # GPU) checked as a GB300 tray: no NIC error (its HCAs are not counted: see the layout)
    found = checks.run(topo, S.select(topo, "gb300-nvl72-tray")).findings
    assert [f.code for f in found if f.severity != "info"] == []


def test_b300_layouts_numa_and_the_dgx_named_only():
    """hgx-b300-8's NUMA split (DeepEP#590, one host) is inferred: a swap is a warning; the
    DGX B300 asserts it (observed): an error, and only when named."""
    hgx, dgx = layouts.load("hgx-b300-8"), layouts.load("dgx-b300")
    assert hgx.numa.gpu_node == {i: i // 4 for i in range(8)} and hgx.numa.inferred()
    assert dgx.numa.gpu_node == hgx.numa.gpu_node and not dgx.numa.inferred()
    assert dgx.choice.auto is False and dgx.nics.per_gpu.path == "PXB"
    assert dgx.nics.compute.count is None  # dual-plane ConnectX-8: 2 RDMA devices a card
    from nvtopo.simulate import simulate

    data = dict(dgx.data, name="swapped")  # a B300 host with GPUs 0-3 on NUMA 1, 4-7 on 0
    data["numa"] = dict(data["numa"], gpu_numa={str(i): 1 - i // 4 for i in range(8)})
    swapped = layouts.parse(json.dumps(data), where="test")
    doc = json.loads(json.dumps(simulate(swapped, (), seed=3)))
    topo = snapshot.derive(doc, where="swapped")
    sev = {name: [f.severity for f in checks.run(topo, S.select(topo, name)).findings
                  if f.code == "numa.placement"] for name in ("hgx-b300-8", "dgx-b300")}
    assert sev["hgx-b300-8"] and set(sev["hgx-b300-8"]) == {"warning"}
    assert "error" in sev["dgx-b300"]


def _variant(name, **sections):
    """A healthy simulated node of bundled layout ``name`` with some sections changed."""
    from nvtopo.simulate import simulate

    data = dict(layouts.load(name).data, name="variant", **sections)
    doc = json.loads(json.dumps(simulate(layouts.parse(json.dumps(data), where="t"), (),
                                         seed=3)))
    return snapshot.derive(doc, where="variant")


def test_a_spectrum_x_gb300_tray_and_a_dual_plane_dgx_b300_give_no_error():
    """Sites choose the fabric (a GB300 tray on Spectrum-X Ethernet) and may run each
    ConnectX-8 as two planes (16 RDMA devices on a DGX B300): neither is an error of the
    layouts, which state no link layer and no NIC count."""
    eth = _variant("gb300-nvl72-tray", nics={"compute": {"rate_gbps": 800,
                                                           "link_layer": "Ethernet"}})
    assert {p.link_layer for n in eth.nics for p in n.sysfs.ports} == {"Ethernet"}
    dual = _variant("dgx-b300", nics={"compute": {"count": 16, "rate_gbps": 400},
                                      "placement": {"gpu_to_nearest_compute_nic": "PXB",
                                                    "gpus_per_compute_nic": 1}})
    assert len(dual.nics) == 16
    for topo, name in ((eth, "gb300-nvl72-tray"), (dual, "dgx-b300")):
        found = checks.run(topo, S.select(topo, name)).findings
        assert [(f.code, str(f.subject)) for f in found if f.severity == "error"] == [], name


def _pcie_box(n, name=None, pairs=()):
    cells = [["X" if i == j else "SYS" for j in range(n)] for i in range(n)]
    for a, b in pairs:
        cells[a][b] = cells[b][a] = "NV12"
    gpus = [GPU(i, name=name) for i in range(n)]
    return Topology(gpus=gpus, sources=["topo-text"],
                    matrix=Matrix([f"GPU{i}" for i in range(n)], cells),
                    nvlinks=[NVLinkPair(a, b, 12) for a, b in pairs])


def test_pcie_card_layouts_are_picked_by_gpu_name_only():
    # a pasted topo -m of 8 PCIe GPUs without names: any PCIe box, no layout
    sel = S.select(_pcie_box(8))
    assert sel.layout is None and sel.reason.startswith("no layout fits: 8 GPUs")
    assert not [c for c in sel.candidates if c.layout.name.startswith("pcie-")]
    for gpu, want in (("NVIDIA L40S", "pcie-l40s-8"), ("NVIDIA L4", "pcie-l4-8"),
                      ("NVIDIA L40", None), ("NVIDIA RTX 6000 Ada Generation", None)):
        sel = S.select(_pcie_box(8, gpu))
        assert sel.name == (want or "none"), (gpu, sel.reason)
    # an L40S box with an NVLink found: the layout says none at all
    found = checks.run(_pcie_box(8, "NVIDIA L40S", [(0, 1)]), S.select(
        _pcie_box(8, "NVIDIA L40S", [(0, 1)]), "pcie-l40s-8")).findings
    assert ("nvlink.pair_unexpected", "GPU0-GPU1") in [(f.code, str(f.subject)) for f in found]


def test_h100_nvl_pairs_match_up_to_renumbering_and_two_cards_are_no_subset():
    nvl = "NVIDIA H100 NVL"
    sel = S.select(_pcie_box(8, nvl, [(0, 1), (2, 3), (4, 5), (6, 7)]))
    assert sel.name == "pcie-h100-nvl-8" and sel.mapping is None
    sel = S.select(_pcie_box(4, nvl, [(0, 2), (1, 3)]))
    assert sel.name == "pcie-h100-nvl-4" and sel.mapping is not None
    assert [f for f in checks.run(_pcie_box(4, nvl, [(0, 2), (1, 3)]), sel).findings
            if f.severity == "error"] == []
    # one bridge gone: the pair is an error against the layout
    sel = S.select(_pcie_box(4, nvl, [(0, 1)]))
    assert sel.name == "pcie-h100-nvl-4"
    errs = [(f.code, str(f.subject)) for f in checks.run(_pcie_box(4, nvl, [(0, 1)]), sel).findings
            if f.severity == "error"]
    assert errs and all(c.startswith("nvlink.") for c, _ in errs)
    # two cards: another server (a 2-card box), not part of a 4- or 8-card one
    sel = S.select(_pcie_box(2, nvl, [(0, 1)]))
    assert sel.layout is None and "subset" not in sel.reason
    assert sel.reason.startswith("no layout fits: 2 GPUs (NVIDIA H100 NVL)")


def _picked(sel):
    """What a selection decided, candidate by candidate (comparable across runs)."""
    return (sel.name, sel.how, sel.reason, list(sel.ties),
            [(c.layout.name, c.excluded, c.fits, c.score, list(c.why), c.by_name)
             for c in sel.candidates])


def test_the_layouts_kept_for_auto_selection_never_change_a_pick():
    """Auto selection keeps, per process, which bundled layouts it weighs for a set of GPU
    model names and which of them the names exclude (``_auto_layouts``: a fleet's nodes
    name the same few models).  On every bundled layout simulated healthy, PCIe boxes
    named and unnamed, pasted ``topo -m`` and ``nvidia-smi -q`` texts, each pick is the
    same with nothing kept, after every other input, and in the reverse order; and the
    candidates are exactly the eligible layouts, each scored as ``score`` scores it alone
    (the rule stated here again: ``selection.auto`` not false, a ``requires_gpu_name``
    layout only where the names match, a ``requires_nic_names`` one only with a NIC of
    one of its names)."""
    from nvtopo.checks import facts as F
    from nvtopo.checks.fit import gpu_names, score
    from nvtopo.snapshot import Input, open_input

    inputs = [(name, _simulated(name)) for name in layouts.names()]
    inputs += [(f"pcie-{gpu}", _pcie_box(8, gpu)) for gpu in
               (None, "NVIDIA L40S", "NVIDIA L4", "NVIDIA H100 NVL", "NVIDIA L40")]
    for mixed in (["NVIDIA L4"] * 7 + ["NVIDIA L40S"], ["NVIDIA L40S"] * 7 + ["NVIDIA L4"],
                  ["NVIDIA H100 80GB HBM3"] * 4 + ["NVIDIA L4"] * 4):
        box = _pcie_box(8)
        for g, gpu in zip(box.gpus, mixed):
            g.name = gpu
        inputs.append((f"mixed-{mixed[0]}-{mixed[-1]}", box))
    texts = sorted(CORPUS.glob("*.txt"))[::6]
    texts += sorted((CORPUS.parent / "nvml-text").glob("nvidia_smi_q_*.txt"))[:4]
    inputs += [(p.name, open_input(Input(path=str(p))).model) for p in texts]
    assert len(inputs) > 50

    def cold(topo):
        S._auto_layouts.cache_clear()
        return _picked(S.select(topo))

    want = [cold(topo) for _, topo in inputs]
    for order in (range(len(inputs)), reversed(range(len(inputs)))):
        for i in order:
            assert _picked(S.select(inputs[i][1])) == want[i], inputs[i][0]
    assert S._auto_layouts.cache_info().hits > len(inputs)

    excluded = 0
    for label, topo in inputs:
        names, _ = gpu_names(topo)
        eligible = []
        for lay in map(layouts.load, layouts.names()):
            c, pattern = lay.choice, lay.gpus.name_pattern
            if c.auto is False or c.requires_gpu_name and not (
                    names and pattern and layouts.names_match(pattern, names)):
                continue
            if c.requires_nic_names and not any(topo.nic(n) is not None
                                                for n in lay.compute_nic_names or []):
                continue
            eligible.append(lay)
        got = S.select(topo).candidates
        assert [c.layout.name for c in got] == [lay.name for lay in eligible], label
        alone = [score(topo, F.view(topo), lay) for lay in eligible]
        assert [(c.excluded, c.fits, c.score, c.why) for c in got] == \
            [(c.excluded, c.fits, c.score, c.why) for c in alone], label
        excluded += sum(c.excluded is not None and "does not match" in c.excluded
                        for c in got)
    assert excluded > 100  # (the names exclude most layouts of most inputs)


def test_the_layouts_kept_for_auto_selection_are_kept_by_the_part_of_a_name_searched():
    """The kept answer for a GPU model name is kept under the part of it a layout's pattern
    searches (``layouts.NAME_SEARCH_LIMIT`` characters), never the whole (a name read from
    a file can be megabytes long), and holds no words about the node: two L40S boxes whose
    names differ past that part share one kept answer, and each still names its own GPU
    in full wherever the names exclude a layout."""
    cut = layouts.NAME_SEARCH_LIMIT
    S._auto_layouts.cache_clear()
    long_names = ["NVIDIA L40S " + "x" * cut + tail for tail in ("a" * 100_000, "b" * 100_000)]
    picks = [S.select(_pcie_box(8, name)) for name in long_names]
    info = S._auto_layouts.cache_info()
    assert info.currsize == 1 and info.hits == 1, info
    for sel, name in zip(picks, long_names):
        assert sel.name == "pcie-l40s-8", sel.reason
        words = [c.excluded for c in sel.candidates if c.excluded]
        assert words and all(repr(name) in w for w in words)
    # a box of many GPU models is weighed afresh, not kept
    many = _pcie_box(8)
    for i, g in enumerate(many.gpus):
        g.name = f"NVIDIA L4 rev {i}"
    assert S.select(many).name == "pcie-l4-8"
    assert S._auto_layouts.cache_info().currsize == 1
