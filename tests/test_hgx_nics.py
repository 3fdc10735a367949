"""HGX layouts without a vendor port map: one compute NIC per GPU (issue 12, item 3).

``nics.per_gpu`` (docs/layouts.md): every GPU should have a NIC at PIX/PXB, told by PCI
placement.  Evidence is inferred on every bundled HGX layout, so a GPU without one is a
warning, never an error; a node with no RDMA NICs, or with fewer NICs than GPUs by design,
is a note.  Each case with its healthy counterpart.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import List

import pytest

from nvtopo import layouts, snapshot
from nvtopo.checks import select_and_run
from nvtopo.errors import NvtopoError
from nvtopo.snapshot import load_text
from test_partial_evidence import SHARED_CORPUS as SHARED  # the one allowed spelling

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "topo-corpus"
H100 = CORPUS / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"
HGX = ["hgx-a100-8", "hgx-a800-8", "hgx-b300-8", "hgx-h100-8", "hgx-h20-8", "hgx-h200-8",
       "hgx-h800-8"]


def _nic_findings(rep) -> List:
    return [f for f in rep.findings if f.code.startswith("nic.")]


def _run(text: str, layout: str = "auto"):
    return select_and_run(load_text(text, "paste.txt"), layout)


def _move_behind_cpu(text: str, gpu: int, nic: int, token: str = "NODE") -> str:
    """GPU ``gpu``'s PIX cell to NIC ``nic`` (and the NIC row's cell back) becomes
    ``token``: the card moved to a CPU root port."""
    lines = text.splitlines()
    head = lines[0].split()
    col_nic, col_gpu = head.index(f"NIC{nic}"), head.index(f"GPU{gpu}")
    out = []
    for ln in lines:
        cells = ln.split()
        if cells and cells[0] == f"GPU{gpu}":
            assert cells[1 + col_nic] == "PIX"
            cells[1 + col_nic] = token
            ln = "\t".join(cells)
        elif cells and cells[0] == f"NIC{nic}":
            assert cells[1 + col_gpu] == "PIX"
            cells[1 + col_gpu] = token
            ln = "\t".join(cells)
        out.append(ln)
    return "\n".join(out) + "\n"


def test_every_hgx_8_layout_states_one_nic_per_gpu_as_inferred():
    for name in HGX:
        lay = layouts.load(name)
        assert lay.nics.per_gpu.path == "PXB", name
        assert lay.nics.inferred("per_gpu"), name  # no primary source: warnings only
        assert not lay.nics.placement.stated, name


def test_healthy_hgx_h100_real_paste_is_clean():
    rep = _run(H100.read_text(encoding="utf-8"))
    assert rep.layout.name == "hgx-h100-8"
    assert _nic_findings(rep) == []  # the old "states no NIC facts" note is gone too
    assert rep.verdict == "pass"


def test_one_gpu_nic_behind_the_cpu_is_one_warning_naming_it():
    text = _move_behind_cpu(H100.read_text(encoding="utf-8"), gpu=3, nic=3)
    rep = _run(text, "hgx-h100-8")
    nic = _nic_findings(rep)
    assert [(f.code, f.severity, str(f.subject)) for f in nic] == [
        ("nic.placement", "warning", "node")]
    f = nic[0]
    assert f.message.startswith("GPU3 has no NIC at PXB or closer")
    assert "mlx5_3 sits off the GPU switches" in f.message
    assert f.expected == "PXB" and f.actual == "NODE"
    assert {str(s) for s in f.covers} == {"GPU3"}
    assert not [x for x in rep.findings if x.severity == "error"]


def test_two_gpus_behind_the_cpu_are_one_finding_not_two():
    text = _move_behind_cpu(H100.read_text(encoding="utf-8"), gpu=3, nic=3)
    text = _move_behind_cpu(text, gpu=6, nic=6, token="SYS")
    nic = _nic_findings(_run(text, "hgx-h100-8"))
    assert len(nic) == 1 and nic[0].severity == "warning"
    assert nic[0].message.startswith("GPU3, GPU6 have no NIC at PXB or closer")
    # the nearest NIC of each is another GPU's at NODE (the moved card is farther, SYS)
    assert nic[0].actual == "NODE"
    assert "mlx5_3, mlx5_6 sit off the GPU switches" in nic[0].message
    assert {str(s) for s in nic[0].covers} == {"GPU3", "GPU6"}


def test_stated_evidence_makes_it_an_error(tmp_path):
    """Severity follows the evidence tag: a layout file citing a source ([S]) errs."""
    data = json.loads((ROOT / "nvtopo" / "layouts" / "hgx-h100-8.json").read_text())
    data["name"] = "my-hgx"
    data["nics"]["per_gpu"]["evidence"] = "[S: our server maker's port map]"
    lf = tmp_path / "my-hgx.json"
    lf.write_text(json.dumps(data))
    text = _move_behind_cpu(H100.read_text(encoding="utf-8"), gpu=3, nic=3)
    rep = select_and_run(load_text(text, "paste.txt"), "auto", str(lf))
    nic = _nic_findings(rep)
    assert [(f.code, f.severity) for f in nic] == [("nic.placement", "error")]
    # its healthy counterpart stays clean
    rep = select_and_run(load_text(H100.read_text(encoding="utf-8"), "p"), "auto", str(lf))
    assert _nic_findings(rep) == []


def test_bad_per_gpu_path_is_a_bad_layout(tmp_path):
    data = json.loads((ROOT / "nvtopo" / "layouts" / "hgx-h100-8.json").read_text())
    data["nics"]["per_gpu"]["path"] = "SYS"
    lf = tmp_path / "bad.json"
    lf.write_text(json.dumps(data))
    with pytest.raises(NvtopoError, match=r"nics\.per_gpu"):
        select_and_run(load_text(H100.read_text(encoding="utf-8"), "p"), "auto", str(lf))


def _drop_nics(text: str, nics) -> str:
    """The paste without the columns, rows and legend lines of NICs ``nics``."""
    lines = text.splitlines()
    head = lines[0].split()
    cols = sorted((head.index(f"NIC{n}") for n in nics), reverse=True)
    out = [re.sub(r"[ \t]+(?:" + "|".join(f"NIC{n}" for n in nics) + r")\b", "", lines[0])]
    for ln in lines[1:]:
        cells = ln.split()
        if cells and cells[0] in {f"NIC{n}" for n in nics}:
            continue
        if cells and re.match(r"^NIC([0-9]+):$", cells[0]) and int(cells[0][3:-1]) in nics:
            continue
        if cells and re.match(r"^(GPU|NIC)[0-9]+$", cells[0]):
            for c in cols:
                del cells[1 + c]
            ln = "\t".join(cells)
        out.append(ln)
    return "\n".join(out) + "\n"


def test_topo_text_without_nic_columns_is_not_checked():
    text = _drop_nics(H100.read_text(encoding="utf-8"), range(8))
    topo = load_text(text, "p")
    assert len(topo.gpus) == 8 and topo.nics == []
    nic = _nic_findings(_run(text, "hgx-h100-8"))
    assert [(f.code, f.severity) for f in nic] == [("nic.not_checked", "info")]
    assert "no NIC data" in nic[0].message


def _simulated(layout: str):
    from nvtopo.simulate import simulate

    doc = json.loads(json.dumps(simulate(layouts.load(layout), [], seed=3)))
    return snapshot.derive(doc, where="sim.json")


@pytest.mark.parametrize("name", HGX)
def test_simulated_hgx_nodes_have_one_nic_per_gpu_and_are_clean(name):
    topo = _simulated(name)
    assert len(topo.nics) >= len(topo.gpus) == 8
    rep = select_and_run(topo, name)
    assert _nic_findings(rep) == []


@pytest.mark.parametrize("name", ["hgx-h100-8", "hgx-b300-8", "hgx-a100-8"])
def test_simulated_nic_moved_behind_the_cpu_is_one_warning(name):
    from nvtopo.simulate import simulate

    healthy = snapshot.derive(json.loads(json.dumps(simulate(layouts.load(name), [], seed=3))),
                              where="sim.json")
    victim = sorted(n.name for n in healthy.nics)[3]
    doc = json.loads(json.dumps(simulate(layouts.load(name), [f"nic-far:{victim}"], seed=3)))
    topo = snapshot.derive(doc, where="sim.json")
    gpu = next(i for i in range(8) if healthy.gpu_nic_path(i, victim)[0] in ("PIX", "PXB"))
    assert topo.gpu_nic_path(gpu, victim)[0] == "NODE"
    rep = select_and_run(topo, name)
    nic = _nic_findings(rep)
    assert [(f.code, f.severity, str(f.subject)) for f in nic] == [
        ("nic.placement", "warning", "node")]
    assert nic[0].message.startswith(f"GPU{gpu} has no NIC at PXB or closer while {victim} "
                                     "sits off the GPU switches")
    assert rep.verdict == "pass"  # inferred evidence: a warning, never an error


def test_node_without_rdma_nics_is_a_note_not_a_fault():
    """sysfs looked and found no RDMA device: GPUDirect RDMA is not in use."""
    topo = _simulated("hgx-h100-8")
    topo.nics.clear()
    rep = select_and_run(topo, "hgx-h100-8")
    nic = _nic_findings(rep)
    assert [(f.code, f.severity) for f in nic] == [("nic.not_checked", "info")]
    assert nic[0].message.startswith("no RDMA NICs: GPUDirect RDMA not in use")


def test_two_nics_for_eight_gpus_is_a_ratio_note():
    path = CORPUS / "24_h100-8gpu-nv18-2nic-comment-prefixed-hash.txt"
    rep = _run(path.read_text(encoding="utf-8"))
    assert rep.layout.name == "hgx-h100-8"
    nic = _nic_findings(rep)
    assert [(f.code, f.severity) for f in nic] == [("nic.not_checked", "info")]
    assert nic[0].message.startswith("2 compute NICs for 8 GPUs (4 GPUs per NIC)")
    assert "GPU0, GPU1, GPU2, GPU3, GPU6, GPU7 have no NIC" in nic[0].message
    assert not [f for f in rep.findings if f.severity == "error"]


def test_four_nics_each_serving_a_pair_at_pxb_is_clean():
    """A NIC per GPU pair behind the pair's switch (PXB): every GPU has one."""
    lines = H100.read_text(encoding="utf-8").splitlines()
    head = lines[0].split()
    for g, n in ((1, 0), (3, 2), (5, 4), (7, 6)):
        cn, cg = head.index(f"NIC{n}"), head.index(f"GPU{g}")
        for k, ln in enumerate(lines):
            cells = ln.split()
            if cells and cells[0] == f"GPU{g}":
                cells[1 + cn] = "PXB"
                lines[k] = "\t".join(cells)
            elif cells and cells[0] == f"NIC{n}":
                cells[1 + cg] = "PXB"
                lines[k] = "\t".join(cells)
    text = _drop_nics("\n".join(lines) + "\n", (1, 3, 5, 7))
    topo = load_text(text, "p")
    assert sorted(n.name for n in topo.nics) == ["mlx5_0", "mlx5_2", "mlx5_4", "mlx5_6"]
    assert topo.gpu_nic_path(3, "mlx5_2")[0] == "PXB"
    rep = _run(text, "hgx-h100-8")
    assert _nic_findings(rep) == []
    # its faulty counterpart: the pair's NIC of GPUs 2 and 3 behind the CPU, with a spare
    # compute NIC off the switches, is the finding
    text2 = _move_behind_cpu(H100.read_text(encoding="utf-8"), gpu=2, nic=2)
    assert [f.code for f in _nic_findings(_run(text2, "hgx-h100-8"))] == ["nic.placement"]


def test_nics_doubled_on_half_the_gpus_is_a_note():
    """Real paste: 4 dual-port cards (8 RDMA devices), two at PIX to each even GPU, none
    elsewhere: the integrator's design, not a card off its place."""
    rep = _run((CORPUS / "21_h100-8gpu-nv18-8nic-misaligned-columns-sglang.txt").read_text(
        encoding="utf-8"))
    nic = _nic_findings(rep)
    assert [(f.code, f.severity) for f in nic] == [("nic.not_checked", "info")]
    assert nic[0].message.startswith("8 compute NICs behind the switches of 4 of 8 GPUs: NICs "
                                      "shared or doubled by design")
    assert "GPU1, GPU3, GPU5, GPU7 have no NIC" in nic[0].message


def test_nic_groups_on_half_the_gpus_with_a_far_bond_are_a_note():
    """An H20 host seen in the field: groups of RDMA devices at PIX to GPUs 0, 2, 4, 6, none
    to the odd GPUs, and bond devices behind the CPU.  With as many compute NICs behind GPU
    switches as GPUs it is the design, not a card moved off; with one fewer and a NIC off
    the switches it is the shape of a moved card (a warning: the evidence is inferred)."""
    text = _move_behind_cpu(H100.read_text(encoding="utf-8"), gpu=1, nic=1)
    lines = text.splitlines()
    head = lines[0].split()
    # NIC1 (now off the switches) stands for the bond; NIC3/5/7 join GPU2/4/6's switches
    for n, g_old, g_new in ((3, 3, 2), (5, 5, 4), (7, 7, 6)):
        cn, co, cw = head.index(f"NIC{n}"), head.index(f"GPU{g_old}"), head.index(f"GPU{g_new}")
        for k, ln in enumerate(lines):
            cells = ln.split()
            if cells and cells[0] == f"GPU{g_old}":
                cells[1 + cn] = "NODE"
            elif cells and cells[0] == f"GPU{g_new}":
                cells[1 + cn] = "PIX"
            elif cells and cells[0] == f"NIC{n}":
                cells[1 + co], cells[1 + cw] = "NODE", "PIX"
            else:
                continue
            lines[k] = "\t".join(cells)
    text = "\n".join(lines) + "\n"
    topo = load_text(text, "p")
    assert topo.gpu_nic_path(2, "mlx5_3")[0] == "PIX"
    assert topo.gpu_nic_path(3, "mlx5_3")[0] == "NODE"
    rep = _run(text, "hgx-h100-8")
    nic = _nic_findings(rep)
    # 7 compute NICs for 8 GPUs with mlx5_1 off the switches: the moved-card shape, a warning
    assert [(f.code, f.severity) for f in nic] == [("nic.placement", "warning")]
    # with an eighth NIC behind a GPU switch (GPU0 gets two), it is the design: a note
    lines = text.splitlines()
    c1, g0 = head.index("NIC1"), head.index("GPU0")
    for k, ln in enumerate(lines):
        cells = ln.split()
        if cells and cells[0] == "GPU0":
            cells[1 + c1] = "PIX"
        elif cells and cells[0] == "NIC1":
            cells[1 + g0] = "PIX"
        else:
            continue
        lines[k] = "\t".join(cells)
    nic = _nic_findings(_run("\n".join(lines) + "\n", "hgx-h100-8"))
    assert [(f.code, f.severity) for f in nic] == [("nic.not_checked", "info")]
    assert "shared or doubled by design" in nic[0].message


def test_dgx_port_map_checks_are_unchanged():
    """dgx-h100 keeps its port map (nics.placement): per_gpu does not apply there."""
    assert layouts.load("dgx-h100").nics.per_gpu is None
    text = _move_behind_cpu(H100.read_text(encoding="utf-8"), gpu=3, nic=3)
    nic = _nic_findings(_run(text, "dgx-h100"))
    assert all(f.message.find("sits off the GPU switches") < 0 for f in nic)


_SHARED_FILES = {
    "topo/02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt": ("hgx-h100-8", []),
    "topo/21_h100-8gpu-nv18-8nic-misaligned-columns-sglang.txt": (
        "hgx-h100-8", [("nic.not_checked", "info")]),
    "topo/24_h100-8gpu-nv18-2nic-comment-prefixed-hash.txt": (
        "hgx-h100-8", [("nic.not_checked", "info")]),
    "topo/01_hgx-a100-8gpu-nv12-10nic-tabs.txt": ("hgx-a100-8", []),
    "ib/nvidia_smi_topo_m_8gpu_18nic_pxb_node_sys.txt": ("hgx-h100-8", []),
    "ib/nvidia_smi_topo_m_8gpu_9nic_pix_node_sys.txt": ("hgx-a800-8", []),
}


@pytest.mark.parametrize("rel", sorted(_SHARED_FILES))
def test_shared_corpus_hgx_verdicts(rel):
    path = SHARED / rel
    if not path.is_file():
        pytest.skip(f"shared corpus absent: {rel}")
    layout, want = _SHARED_FILES[rel]
    rep = _run(path.read_text(encoding="utf-8"), layout)
    assert [(f.code, f.severity) for f in _nic_findings(rep)] == want, rel
    assert not [f for f in rep.findings if f.severity == "error"], rel
