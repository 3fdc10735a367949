"""Pasted-text edge cases (issue 12, class 4) and plural agreement in counted messages.

Each case runs ``check`` on a real pasted excerpt (fixtures/nvml-text, copies of the shared
corpus) or on a simulated node, with its healthy counterpart.
"""

from __future__ import annotations

from pathlib import Path

from nvtopo import checks, snapshot
from nvtopo.checks import select as S

ROOT = Path(__file__).resolve().parent.parent
NVML_TEXT = ROOT / "fixtures" / "nvml-text"


def report(path: Path, layout=None):
    topo = snapshot.load(str(path))
    lay = S.select(topo, layout or "auto").layout
    return checks.run(topo, lay)


def test_fabric_in_progress_on_one_gpu_says_gpu_not_gpus():
    rep = report(NVML_TEXT / "nvidia_smi_q_fabric_in_progress_driver580.txt")
    got = [f for f in rep.findings if f.code == "fabric.in_progress"]
    assert len(got) == 1 and got[0].severity == "error"
    assert got[0].message.startswith("NVLink fabric training still in progress on 1 GPU")
    assert "1 GPUs" not in got[0].message


H800 = NVML_TEXT / "nvlink_s_h800_8links_excerpt.txt"
INACTIVE = ("GPU 3: NVIDIA H800 (UUID: GPU-0a1b2c3d-0000-1111-2222-333344445555)\n"
            "NVML: Unable to retrieve NVLink information as all links are inActive\n")


def errors(rep):
    return [(f.code, str(f.subject)) for f in rep.findings if f.severity == "error"]


def test_all_links_inactive_on_a_gpu_the_layout_expects_nvlink_on_is_links_down(tmp_path):
    """The real H800 excerpt plus a GPU printing NVIDIA's "all links are inActive" line (as
    nvlink_s_rtx_a6000_bridge_and_all_inactive.txt does): was a pass."""
    p = tmp_path / "nvlink-s.txt"
    p.write_text(H800.read_text(encoding="utf-8").rstrip("\n") + "\n" + INACTIVE,
                 encoding="utf-8")
    rep = report(p, "hgx-h800-8")
    assert errors(rep) == [("nvlink.link_down", "GPU3")]
    f = [f for f in rep.findings if f.code == "nvlink.link_down"][0]
    assert f.actual == "all inactive" and "8 expected" in f.message
    # the healthy excerpt against the same layout: no error
    assert errors(report(H800, "hgx-h800-8")) == []


def test_all_links_inactive_on_an_unbridged_card_is_by_design():
    """RTX A6000: two bridged cards and one with no bridge: no layout expects NVLink on it,
    so nothing is said about its links."""
    rep = report(NVML_TEXT / "nvlink_s_rtx_a6000_bridge_and_all_inactive.txt")
    assert errors(rep) == []
    assert not [f for f in rep.findings if f.code.startswith("nvlink.")
                and f.severity != "info"]


def test_a_q_excerpt_without_its_gpu_header_is_attached_by_the_bus_id_it_prints(tmp_path):
    """The real H800 -q excerpt with its ``GPU 00000000:18:00.0`` header cut off: the bus
    id under PCI names the GPU (it was dropped up to a Fabric line, then taken as GPU0)."""
    from nvtopo.probes.nvml import paste

    src = (NVML_TEXT / "nvidia_smi_q_h800_pci_and_fabric_excerpt.txt").read_text(
        encoding="utf-8")
    cut = "\n".join(ln for ln in src.splitlines() if ln.strip() != "GPU 00000000:18:00.0")
    assert cut != src.rstrip("\n")
    parsed = paste.parse(cut)
    assert [g.get("bus_id") for g in parsed["gpus"].values()] == ["00000000:18:00.0"]
    assert not [n for n in parsed["notes"] if n["code"] == "nvml_text.q_no_identity"]
    p = tmp_path / "q.txt"
    p.write_text(cut + "\n", encoding="utf-8")
    topo = snapshot.load(str(p))
    assert [g.pci_bus_id for g in topo.gpus] == ["00000000:18:00.0"]
    # with its header, the same GPU and bus id
    whole = snapshot.load(str(NVML_TEXT / "nvidia_smi_q_h800_pci_and_fabric_excerpt.txt"))
    assert [g.pci_bus_id for g in whole.gpus] == ["00000000:18:00.0"]


def test_a_q_excerpt_naming_no_gpu_says_so_and_keeps_its_fabric_fault():
    from nvtopo.probes.nvml import paste

    path = NVML_TEXT / "nvidia_smi_q_fabric_in_progress_driver580.txt"
    parsed = paste.parse(path.read_text(encoding="utf-8"))
    notes = [n for n in parsed["notes"] if n["code"] == "nvml_text.q_no_identity"]
    assert len(notes) == 1 and "the paste does not say" in notes[0]["message"]
    assert errors(report(path)) == [("fabric.in_progress", "node")]


# --- one GPU's nvlink -s with a link <inactive> (issue 12, item 2) ---------------------------

H100_L7 = NVML_TEXT / "nvlink_s_h100_sxm_1gpu_link7_inactive.txt"


def link_states(path):
    g = snapshot.load(str(path)).gpu(0)
    return {x.link: x.state for x in g.nvml_text.nvlink.links}


def test_one_h100_listing_18_links_one_inactive_is_a_link_down_on_an_nvswitch_layout():
    """Was: no finding (the family rule needs a second GPU of the model in the paste)."""
    states = link_states(H100_L7)
    assert len(states) == 18 and states[7] == "inactive"
    assert sum(s == "active" for s in states.values()) == 17
    rep = report(H100_L7, "hgx-h100-8")
    assert errors(rep) == [("nvlink.link_down", "GPU0 link 7")]
    f = [f for f in rep.findings if f.code == "nvlink.link_down"][0]
    assert "hgx-h100-8 uses all 18 links" in f.message and "17 up" in f.message
    assert (f.expected, f.actual) == ("active", "down")


def test_the_same_gpu_with_every_link_up_is_clean(tmp_path):
    p = tmp_path / "nvlink-s.txt"
    p.write_text(H100_L7.read_text(encoding="utf-8").replace("<inactive>", "26.562 GB/s"),
                 encoding="utf-8")
    assert set(link_states(p).values()) == {"active"}
    assert not [f for f in report(p, "hgx-h100-8").findings if f.code.startswith("nvlink.")]


def test_an_inactive_link_with_no_layout_stays_inactive():
    """No layout says how many links the GPU uses: by design or a fault cannot be told."""
    rep = report(H100_L7)
    assert rep.layout_name == "none"
    assert not [f for f in rep.findings if f.code.startswith("nvlink.")]


def test_an_excerpt_that_does_not_list_every_link_is_not_judged(tmp_path):
    """Links 0-11 only (an excerpt), link 7 <inactive>: the paste does not show the GPU
    uses every link, so nothing is said."""
    lines = H100_L7.read_text(encoding="utf-8").splitlines()[:13]
    p = tmp_path / "nvlink-s.txt"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(link_states(p)) == 12
    assert not [f for f in report(p, "hgx-h100-8").findings if f.code.startswith("nvlink.")]


def test_bridged_boards_keep_their_inactive_links_by_design():
    """H100 PCIe with bridges (links 4, 5, 10, 11, 16, 17 <inactive> by design) and RTX
    A6000: no per-link finding, with the layout they fit or the HGX one named by mistake
    (that mistake is gpu.model's to say, not a link down)."""
    for path in (NVML_TEXT / "nvlink_s_h100_pcie_bridge_partial_inactive.txt",
                 NVML_TEXT / "nvlink_s_rtx_a6000_bridge_and_all_inactive.txt"):
        for layout in (None, "hgx-h100-8"):
            rep = report(path, layout)
            assert not [f for f in rep.findings if f.code == "nvlink.link_down"
                        and " link " in str(f.subject)], (path.name, layout)
    rep = report(NVML_TEXT / "nvlink_s_h100_pcie_bridge_partial_inactive.txt")
    assert errors(rep) == []
