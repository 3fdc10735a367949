"""Issue 12, item 1: evidence that covers part of the node.

A pasted ``nvidia-smi nvlink``/``-q`` excerpt states facts about the GPUs it names and
nothing about the others.  Adding it to a ``topo -m`` matrix never makes the verdict worse
than the matrix alone gave (no ``gpu.missing`` from its silence, no error of the matrix
lost), and a paste holding only an excerpt does not call the GPUs it does not name missing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Set, Tuple

import pytest

from nvtopo.checks import select_and_run
from nvtopo.snapshot import load_text

ROOT = Path(__file__).resolve().parent.parent
TOPO = sorted((ROOT / "fixtures" / "topo-corpus").glob("*.txt"))
EXCERPTS = sorted((ROOT / "fixtures" / "nvml-text").glob("*.txt"))


def _report(text: str):
    return select_and_run(load_text(text, "paste.txt"))


def _errors(report) -> Set[Tuple[str, str]]:
    return {(f.code, str(f.subject)) for f in report.findings if f.severity == "error"}


def _gpu_count(text: str) -> int:
    return len(load_text(text, "x").gpus)


def _excerpt_gpus(text: str) -> Set[int]:
    return {g.index for g in load_text(text, "x").gpus}


def _ticket(matrix: str, excerpt: str, first: str = "matrix") -> str:
    """A ticket as people write them: prose, a shell prompt, fences, either order."""
    ex = "Links on the GPUs I looked at:\n```\n$ nvidia-smi nvlink -s\n" + excerpt + "\n```\n"
    mx = "Here is topo:\n```\n" + matrix + "\n```\n"
    return mx + "\n" + ex if first == "matrix" else ex + "\nand\n" + mx


def _neutral(excerpt: str, name: str = "Some GPU") -> str:
    """The excerpt with its GPU model names replaced by ``name`` (so it states no model
    that contradicts the matrix's node)."""
    out = re.sub(r"(?m)^(\s*GPU [0-9]+: ).*?( \(UUID:)", lambda m: m.group(1) + name
                 + m.group(2), excerpt)
    return re.sub(r"(?m)^(\s*Product Name\s*:).*$", lambda m: m.group(1) + " " + name, out)


def _assert_not_worse(matrix: str, excerpt: str, where: str) -> None:
    alone = _report(matrix)
    n = _gpu_count(matrix)
    if any(i >= n for i in _excerpt_gpus(excerpt)):
        return  # the excerpt names a GPU the matrix does not list: a contradiction
    for first in ("matrix", "excerpt"):
        both = _report(_ticket(matrix, excerpt, first))
        if both.layout_name != alone.layout_name:
            continue  # the excerpt named a GPU model: a stated fact, not silence
        lost = _errors(alone) - _errors(both)
        assert not lost, f"{where}: the excerpt hid {sorted(lost)}"
        new = {e for e in _errors(both) - _errors(alone)
               if e[0].startswith("gpu.") or e[0] == "source.disagreement"}
        assert not new, f"{where}: presence errors from an excerpt's silence: {sorted(new)}"


@pytest.mark.parametrize("topo", TOPO, ids=lambda p: p.name[:12])
def test_excerpt_never_worsens_the_matrix_verdict(topo: Path) -> None:
    matrix = topo.read_text()
    for ex in EXCERPTS:
        text = ex.read_text()
        _assert_not_worse(matrix, text, f"{topo.name} + {ex.name}")
        _assert_not_worse(matrix, _neutral(text), f"{topo.name} + {ex.name} (names neutral)")


def test_h100_matrix_plus_nvlink_e_excerpt_stays_clean() -> None:
    """The ticket of the issue: a healthy 8-GPU H100 matrix and ``nvlink -e`` for GPU0 gave
    seven ``gpu.missing`` errors and lost every pair check."""
    matrix = (ROOT / "fixtures/topo-corpus/02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"
              ).read_text()
    excerpt = (ROOT / "fixtures/nvml-text/nvlink_e_h100_excerpt.txt").read_text()
    rep = _report(_ticket(matrix, excerpt))
    assert rep.verdict == "pass", _errors(rep)
    assert rep.layout_name == "hgx-h100-8"
    codes = {f.code for f in rep.findings}
    assert "gpu.missing" not in codes and "nvlink.not_checked" not in codes
    model = load_text(_ticket(matrix, excerpt), "x")
    assert len(model.gpus) == 8
    assert not [d for d in model.disagreements if d.fact == "presence"]


def _sim(layout: str, *faults: str) -> dict:
    cmd = [sys.executable, "-m", "nvtopo", "simulate", layout]
    for f in faults:
        cmd += ["--fault", f]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("layout,fault,code", [
    ("dgx-h100", "nvlink-degraded:GPU2-GPU6", "nvlink.pair_degraded"),
    ("hgx-a100-8", "nvlink-degraded:GPU1-GPU5", "nvlink.pair_degraded"),
    ("dgx-1-v100", "nvlink-degraded:GPU0-GPU3", "nvlink.pair_degraded"),
])
def test_simulated_fault_survives_an_excerpt(layout: str, fault: str, code: str) -> None:
    """A degraded pair in the matrix stays an error when an excerpt about other GPUs is
    added (it disappeared under seven gpu.missing before); the healthy node stays clean."""
    excerpt = (ROOT / "fixtures/nvml-text/nvlink_e_h100_excerpt.txt").read_text()
    for faults, want in (((), set()), ((fault,), {code})):
        doc = _sim(layout, *faults)
        matrix = doc["probes"]["topo-text"]["stdout"]
        name = load_text(json.dumps(doc), "sim.json").gpus[0].name
        assert name
        excerpt = _neutral(excerpt, name)
        alone = _report(matrix)
        both = _report(_ticket(matrix, excerpt))
        assert {c for c, _ in _errors(alone)} == want
        assert _errors(both) == _errors(alone)
        assert both.verdict == alone.verdict


@pytest.mark.parametrize("name", [
    "nvlink_R_h100_hgx_nvswitch_excerpt.txt", "nvlink_s_a100_sxm4_excerpt.txt",
    "nvlink_e_h100_excerpt.txt", "nvlink_c_h800_excerpt.txt"])
def test_excerpt_alone_claims_no_missing_gpu(name: str) -> None:
    """A paste holding only an excerpt (2 of an HGX's GPUs): the others are not missing,
    they are not mentioned; the count is reported as not checked."""
    rep = _report((ROOT / "fixtures/nvml-text" / name).read_text())
    assert not [f for f in rep.findings if f.code == "gpu.missing"]
    assert rep.verdict == "pass"
    if rep.layout_name != "none":
        assert any(f.code == "gpu.not_checked" and "names" in f.message
                   for f in rep.findings)


# --- every real input: no error unless it shows a real fault -------------------------------

SHARED_CORPUS = Path("/work/shared/corpus")

#: Inputs that show a real fault: file name -> (the error findings, why they are right).
REAL_FAULTS = {
    "nvidia_smi_q_fabric_insufficient_resources.txt": (
        {("fabric.failed", "node")},
        "Fabric State Completed with Status Insufficient Resources: the GPU did not join the "
        "NVLink fabric (Azure/azhpc-images PR 506 shows it as the failure being fixed)"),
    "nvidia_smi_q_fabric_in_progress_driver580.txt": (
        {("fabric.in_progress", "node")},
        "Fabric State In Progress: NVLink P2P is not usable until training completes "
        "(gpu-operator issue 2511: it stayed so); NVML's in_progress is the same error"),
    "nvidia_smi_q_rtx4090_2gpu_p2_gpu1_x8_gen3.txt": (
        {("pcie.width_low", "GPU1"), ("pcie.gen_low", "GPU1"), ("pcie.replays", "GPU1")},
        "made for issue 23 (class 4): GPU1 under load (P2, 96 % busy) at x8 Gen3 of x16 Gen4, "
        "4812 PCIe replays; GPU0 beside it at full speed"),
    "nvlink_s_b200_8gpu_gpu5_all_inactive.txt": (
        {("nvlink.link_down", "GPU5")},
        "made for issue 23 (class 2): one B200 of eight prints \"all links are inActive\" "
        "while the seven others have all 18 links up; a B200 exists only on NVLink boards"),
    "nvidia_smi_q_x_h100_2gpu_gen3_x8_fabric_failed.xml": (
        {("pcie.width_low", "GPU1"), ("pcie.gen_low", "GPU1"), ("fabric.failed", "node")},
        "made for the -q -x reader: GPU 2A:00.0 at Gen3 x8 of Gen5 x16 in P0 and fabric "
        "status Insufficient Resources (clique 0, all-zero cluster UUID)"),
}


def _real_inputs() -> list:
    files = sorted((ROOT / "fixtures" / "topo-corpus").glob("*.txt")) + sorted(
        (ROOT / "fixtures" / "nvml-text").glob("*.txt")) + sorted(
        (ROOT / "fixtures" / "nvml-xml").glob("*.xml"))
    # live runs on real GPU machines: every nvidia-smi text of the run (empty ones are a GPU
    # without NVLink: refused as empty, tested in test_real_nodes.py)
    files += sorted(p for p in (ROOT / "fixtures" / "real").rglob("nvidia-smi-*")
                    if p.stat().st_size)
    if SHARED_CORPUS.is_dir():  # the shared corpus where present (fixtures hold copies)
        names = {p.name for p in files}
        for sub in ("topo", "nvlink"):
            files += sorted(p for p in (SHARED_CORPUS / sub).glob("*.txt")
                            if p.name not in names)
        files += sorted((SHARED_CORPUS / "ib").glob("nvidia_smi_topo_m_*.txt"))
    return files


@pytest.mark.parametrize("path", _real_inputs(), ids=lambda p: p.name[:40])
def test_real_inputs_error_only_on_real_faults(path: Path) -> None:
    from nvtopo.errors import NvtopoError

    try:
        rep = _report(path.read_text(encoding="utf-8"))
    except NvtopoError:
        assert path.name.startswith(("nvlink_help", "dcgmi")), path.name  # not nvidia-smi output
        return
    want, why = REAL_FAULTS.get(path.name, (set(), "healthy"))
    assert _errors(rep) == want, f"{path.name}: {why}"
