"""A GPU that lost every NVLink (issue 23, class 2).

Pasted text that states no link up on a GPU (nvidia-smi's "all links are inActive", every
link ``D`` in ``dcgmi nvlink -s``) is a fault where the layout, the GPU model (an SXM/HGX
part) or the rest of the paste (an odd number of GPUs with links up: not bridge pairs) says
the GPU has NVLinks, on the catalog's ladder; where nothing does (a GeForce card, an
unbridged PCIe card beside a bridged pair) it says nothing.  Each case has its healthy
counterpart.  Fixtures: fixtures/nvml-text (README: what each shows).
"""

from __future__ import annotations

from pathlib import Path

from nvtopo import checks, snapshot
from nvtopo.checks import facts as F
from nvtopo.checks import select as S

ROOT = Path(__file__).resolve().parent.parent
NVML_TEXT = ROOT / "fixtures" / "nvml-text"
B200 = NVML_TEXT / "nvlink_s_b200_8gpu_gpu5_all_inactive.txt"
DCGMI_8 = NVML_TEXT / "dcgmi_nvlink_s_h100_8gpu_gpu3_all_down.txt"
DCGMI_PAIR = NVML_TEXT / "dcgmi_nvlink_s_h100_nvl_pair_all_down.txt"
NVL_PAIR = NVML_TEXT / "nvlink_s_h100_nvl_pair_all_inactive.txt"
RTX4090 = NVML_TEXT / "nvlink_s_rtx4090_2gpu_all_inactive.txt"
A6000 = NVML_TEXT / "nvlink_s_rtx_a6000_bridge_and_all_inactive.txt"
DCGMI_OK = NVML_TEXT / "dcgmi_nvlink_s_h100.txt"


def report(path: Path, layout=None):
    topo = snapshot.load(str(path))
    lay = S.select(topo, layout or "auto").layout
    return checks.run(topo, lay)


def lost(rep):
    return [(f.severity, str(f.subject)) for f in rep.findings if f.code == "nvlink.link_down"]


def gpus_only(path: Path, keep, tmp_path: Path) -> Path:
    """The nvlink -s paste cut to the GPUs ``keep`` (an excerpt of the board)."""
    out, on = [], False
    for ln in path.read_text(encoding="utf-8").splitlines():
        if ln.startswith("GPU "):
            on = int(ln.split()[1].rstrip(":")) in keep
        if on:
            out.append(ln)
    p = tmp_path / "excerpt.txt"
    p.write_text("\n".join(out) + "\n", encoding="utf-8")
    return p


def test_sxm_parts_are_nvlink_board_parts_pcie_and_geforce_are_not():
    assert "dgx-b200" in F.nvlink_board_layouts("NVIDIA B200")
    assert F.nvlink_board_layouts("NVIDIA H100 80GB HBM3")
    assert F.nvlink_board_layouts("NVIDIA A100-SXM4-80GB")
    for name in ("NVIDIA H100 NVL", "NVIDIA H100 PCIe", "NVIDIA A100 80GB PCIe",
                 "NVIDIA RTX A6000", "NVIDIA GeForce RTX 4090", "NVIDIA H200 NVL",
                 "Tesla V100-PCIE-32GB"):
        assert F.nvlink_board_layouts(name) == (), name


def test_one_b200_of_eight_with_every_link_inactive_is_an_error_with_or_without_a_layout(
        tmp_path):
    """The 8xB200 paste: auto-selected dgx-b200 says it; the same GPU in an excerpt of three
    (no layout fits) is still an error: the model is an SXM part and its neighbours of the
    same model have links up (was: no finding without a layout)."""
    rep = report(B200)
    assert rep.layout_name == "dgx-b200"
    assert lost(rep) == [("error", "GPU5")]
    excerpt = gpus_only(B200, {4, 5, 6}, tmp_path)
    rep = report(excerpt)
    assert rep.layout_name == "none"
    assert lost(rep) == [("error", "GPU5")]
    f = [f for f in rep.findings if f.code == "nvlink.link_down"][0]
    assert "all links are inActive" in f.message and "GPU4, GPU6" in f.message
    assert f.actual == "all inactive"


def test_the_healthy_b200_board_and_a_b200_shown_alone(tmp_path):
    """Every GPU up: nothing.  GPU5 alone (a VM given one GPU of the board turns its links
    off by design): a note, never a fault."""
    healthy = tmp_path / "healthy.txt"
    healthy.write_text(B200.read_text(encoding="utf-8").replace(
        "NVML: Unable to retrieve NVLink information as all links are inActive",
        "\n".join(f"\t Link {k}: 53.125 GB/s" for k in range(18))), encoding="utf-8")
    rep = report(healthy)
    assert not [f for f in rep.findings if f.code.startswith("nvlink.")]
    alone = gpus_only(B200, {5}, tmp_path)
    rep = report(alone)
    assert lost(rep) == []
    notes = [f for f in rep.findings if f.code == "nvlink.not_checked"
             and str(f.subject) == "GPU5"]
    assert len(notes) == 1 and notes[0].severity == "info"
    assert "shown alone" in notes[0].message


def test_dcgmi_one_gpu_all_down_beside_seven_up_is_a_warning_without_names():
    """dcgmi prints no GPU names: seven GPUs up is an odd count, not 2-way bridge pairs, so
    GPU3's links are down (inferred: a warning); with the layout named, an error."""
    rep = report(DCGMI_8)
    assert rep.layout_name == "none"
    assert lost(rep) == [("warning", "GPU3")]
    assert "dcgmi nvlink -s: all 18 links D" in \
        [f for f in rep.findings if f.code == "nvlink.link_down"][0].message
    assert lost(report(DCGMI_8, "hgx-h100-8")) == [("error", "GPU3")]
    # the healthy counterpart: every GPU up
    assert not [f for f in report(DCGMI_OK).findings if f.code == "nvlink.link_down"]


def test_an_h100_nvl_pair_with_no_link_up():
    """Named H100 NVL cards (sold as bridged pairs) with no link up: a warning each (the
    bridges may never have been fitted); the same dcgmi rows with no names say nothing
    without a layout, and are errors against a layout that bridges them."""
    assert lost(report(NVL_PAIR)) == [("warning", "GPU0"), ("warning", "GPU1")]
    assert lost(report(DCGMI_PAIR)) == []
    lay = {"schema": 1, "name": "h100-nvl-pair", "title": "two H100 NVL cards, 3 bridges",
           "gpus": {"count": 2},
           "nvlink": {"pairs": {"0-1": 18}, "nvswitch": False}}
    import json

    topo = snapshot.load(str(DCGMI_PAIR))
    from nvtopo import layouts

    layout = layouts.parse(json.dumps(lay), "test", origin="file")
    rep = checks.run(topo, layout)
    assert lost(rep) == [("error", "GPU0"), ("error", "GPU1")]


def test_unbridged_cards_stay_by_design():
    """A GeForce pair and the A6000 third card with no bridge: no fault, no warning."""
    for path in (RTX4090, A6000):
        rep = report(path)
        assert lost(rep) == [], path.name
        assert not [f for f in rep.findings if f.code.startswith("nvlink.")
                    and f.severity != "info"], path.name


def test_unjudged_all_down_is_said_once_as_a_note():
    """Nothing says these GPUs have NVLinks (no layout, no model, no other GPU with links):
    not a fault, but not silence either: one note for the node naming every such GPU."""
    for path, gpus in ((DCGMI_PAIR, "GPU0, GPU1"), (RTX4090, "GPU0, GPU1")):
        rep = report(path)
        notes = [f for f in rep.findings if f.code == "nvlink.not_checked"
                 and "no NVLink up" in f.message]
        assert len(notes) == 1, path.name
        assert notes[0].severity == "info"
        assert notes[0].message.startswith(gpus + " state no NVLink up"), notes[0].message
        assert "--layout" in notes[0].message
        assert rep.exit_status == 0
    # a layout that gives the pair NVLink still makes it an error, and no such note
    rep = report(DCGMI_OK)
    assert not [f for f in rep.findings if "no NVLink up" in f.message]
