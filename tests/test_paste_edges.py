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
