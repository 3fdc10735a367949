"""A cut paste says it is cut (issue 23, class 5).

A ``topo -m`` whose rows stop after GPU3 of 8 (fixtures/topo-cut/h100_8gpu_cut_after_gpu3.txt,
the real H100 matrix of the corpus cut after its fifth line) is one ``topo.cut`` note in the
model (was: 12 "no row for ..." warnings and three notes more) and one ``source.cut`` "not
checked" note in ``check`` naming the GPUs and pairs left unchecked (was: PASS with nothing
said).  Healthy counterparts: the whole matrix, and one with rows left out in the middle
or before its legend (not a cut: said row by row as before).
"""

from __future__ import annotations

from pathlib import Path

from nvtopo import checks, snapshot
from nvtopo.checks import select as S
from nvtopo.probes.topo import parse

ROOT = Path(__file__).resolve().parent.parent
CUT = ROOT / "fixtures" / "topo-cut" / "h100_8gpu_cut_after_gpu3.txt"
WHOLE = ROOT / "fixtures" / "topo-corpus" / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"


def codes(topo):
    return [n.code for n in topo.notes]


def report(path: Path):
    topo = snapshot.load(str(path))
    return checks.run(topo, S.select(topo, "auto").layout)


def test_a_matrix_cut_after_gpu3_is_one_note():
    topo = parse(CUT.read_text(encoding="utf-8"))
    cut = [n for n in topo.notes if n.code == "topo.cut"]
    assert len(cut) == 1 and cut[0].subject == "GPU3"
    assert "stops after GPU3 (row 4 of 16)" in cut[0].message
    assert "no row for GPU4-GPU7, NIC0-NIC7" in cut[0].message
    assert "66 device pairs" in cut[0].message
    for code in ("topo.missing_row", "topo.unknown_paths", "topo.mirrored",
                 "topo.no_nic_legend"):
        assert code not in codes(topo), code
    # the cells it printed are still read, mirrored into the columns of GPU4-GPU7
    assert topo.matrix.get("GPU4", "GPU0") == "NV18"
    assert topo.matrix.get("GPU4", "GPU5") is None


def test_check_says_which_gpus_and_pairs_are_not_checked():
    rep = report(CUT)
    got = [f for f in rep.findings if f.code == "source.cut"]
    assert len(got) == 1 and got[0].severity == "info"
    msg = got[0].message
    assert "stops after GPU3" in msg and "GPUs 4-7 have no row" in msg
    assert "6 GPU pairs" in msg and "GPU4-GPU5" in msg and "GPU6-GPU7" in msg
    assert not [f for f in rep.findings if f.severity == "error"]


def test_the_whole_matrix_is_not_cut():
    topo = parse(WHOLE.read_text(encoding="utf-8"))
    assert "topo.cut" not in codes(topo)
    assert not [f for f in report(WHOLE).findings if f.code == "source.cut"]


def test_rows_left_out_before_the_legend_are_not_a_cut():
    """NIC rows deleted with the legend kept: said row by row (topo.missing_row), as
    before; a GPU row deleted in the middle too."""
    no_nics = "\n".join(ln for ln in WHOLE.read_text(encoding="utf-8").split("\n")
                        if not ln.startswith("NIC"))
    topo = parse(no_nics)
    assert "topo.cut" not in codes(topo) and "topo.missing_row" in codes(topo)
    lines = CUT.read_text(encoding="utf-8").splitlines()
    middle = "\n".join(lines[:2] + lines[3:]) + "\n"  # GPU1's row gone, GPU2 and 3 kept
    topo = parse(middle)
    assert "topo.cut" not in codes(topo)
    assert [n.subject for n in topo.notes if n.code == "topo.missing_row"][0] == "GPU1"
