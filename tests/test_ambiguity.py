"""Ambiguity tells the whole truth (issue 23, class 9).

An 8-GPU ``topo -m`` with NV18 on every pair and no GPU names fits the Hopper boards and
the Blackwell boards alike: the selection lists every equal fit (``Selection.ties``) and
says what would decide (the GPU names).  The GPUs' NUMA nodes tell which board of one GPU
model a node is (the DGX A100's map against a generic HGX A100), never which GPU model.
Counterparts: the same matrix with H100 names is a Hopper board only; a nameless A100
matrix with the DGX A100's NUMA map stays dgx-a100 with no tie.
"""

from __future__ import annotations

from pathlib import Path

from nvtopo import checks, snapshot
from nvtopo.checks import select as S

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "topo-corpus"
H100 = CORPUS / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"
H100_2NIC = CORPUS / "24_h100-8gpu-nv18-2nic-comment-prefixed-hash.txt"
A100 = CORPUS / "01_hgx-a100-8gpu-nv12-10nic-tabs.txt"
A800 = CORPUS / "41_a800-8gpu-nv8-8nic-all-mlx5-bond-tabs.txt"


def _named(path: Path, name: str) -> str:
    """The real matrix with an ``nvidia-smi -L`` list of 8 GPUs named ``name`` after it."""
    return path.read_text() + "\n" + "".join(
        f"GPU {i}: {name} (UUID: GPU-{i:08d}-0000-0000-0000-000000000000)\n"
        for i in range(8))


def _errors(topo, sel):
    return [f.code for f in checks.run(topo, sel).findings if f.severity == "error"]


def test_nameless_nv18_board_ties_hopper_and_blackwell():
    topo = snapshot.load(str(H100))
    sel = S.select(topo)
    assert sel.how == "ambiguous" and sel.name == "hgx-h100-8"
    assert sel.ties[0] == "hgx-h100-8"
    assert {"hgx-h100-8", "hgx-h200-8", "hgx-h20-8", "dgx-b200", "hgx-b300-8"} <= set(sel.ties)
    # (hgx-b300-8's NUMA map, inferred from one host, fits this node's: listed before
    # dgx-b200, which states none)
    assert "hgx-b300-8, dgx-b200 fit equally" in sel.reason
    assert "the GPU names would decide" in sel.reason
    assert _errors(topo, sel) == []


def test_nameless_board_with_two_nics_lists_only_what_the_nics_allow():
    """The DGX B200 has 8 compute NICs: a node showing 2 fits it less (its NIC count is a
    fact it states), the B300 board states none and stays an equal fit."""
    topo = snapshot.load(str(H100_2NIC))
    sel = S.select(topo)
    assert "hgx-b300-8" in sel.ties and "dgx-b200" not in sel.ties


def test_h100_names_leave_only_hopper_boards():
    topo = snapshot.load_text(_named(H100, "NVIDIA H100 80GB HBM3"), "h100-named")
    sel = S.select(topo)
    assert sel.name == "hgx-h100-8"
    assert not {"dgx-b200", "hgx-b300-8", "hgx-h200-8", "hgx-h20-8"} & set(sel.ties)
    assert "GPU names would decide" not in sel.reason
    assert _errors(topo, sel) == []


def test_b200_names_pick_the_b200_board():
    topo = snapshot.load_text(_named(H100, "NVIDIA B200"), "b200-named")
    sel = S.select(topo)
    assert sel.name == "dgx-b200" and sel.how == "auto" and sel.ties == []


def test_a_numa_map_still_tells_boards_of_one_model_apart():
    """Nameless A100 matrix on NUMA nodes 3,3,1,1,7,7,5,5: the DGX A100, the generic HGX
    A100 (no NUMA map, same GPU model) only the next fit."""
    sel = S.select(snapshot.load(str(A100)))
    assert sel.name == "dgx-a100" and sel.how == "auto" and sel.ties == []
    assert sel.reason.endswith("next: hgx-a100-8")


def test_names_decide_between_models_with_the_same_numa_map():
    """A800 and H800 boards both state the plain two-socket map: tied, and the names would
    tell them apart."""
    sel = S.select(snapshot.load(str(A800)))
    assert sel.ties == ["hgx-a800-8", "hgx-h800-8"]
    assert "the GPU names would decide" in sel.reason
