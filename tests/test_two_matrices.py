"""A ``topo -m`` and a ``topo -p2p`` matrix in one paste (issue 12, items 1, 2, 5): both read,
in either order; two different ``-m`` matrices refused (docs/ticket-inputs.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import make_runner

from nvtopo import checks, snapshot
from nvtopo.checks import select as S
from nvtopo.cli import app
from nvtopo.errors import NvtopoError

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "topo-corpus"
DAMAGED = ROOT / "fixtures" / "topo-damaged"
H100 = (CORPUS / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt").read_text("utf-8")
A100 = (CORPUS / "01_hgx-a100-8gpu-nv12-10nic-tabs.txt").read_text("utf-8")
#: the real 8-GPU `topo -p2p r` output, every pair OK
P2P_OK = (CORPUS / "54_p2p-r-8gpu-vfio-guest-all-ok-no-legend.txt").read_text("utf-8")
#: the same with NS on GPU0-GPU1 (both cells), a pair hgx-h100-8 links by NVLink
P2P_NS01 = "\n".join(
    line.replace("\tX\tOK\t", "\tX\tNS\t", 1) if line.startswith(" GPU0\t") else
    line.replace("\tOK\tX\t", "\tNS\tX\t", 1) if line.startswith(" GPU1\t") else line
    for line in P2P_OK.split("\n"))

runner = make_runner()


def paste(tmp_path, *parts, name="ticket.txt"):
    p = tmp_path / name
    p.write_text("\n".join(parts), encoding="utf-8")
    return p


def p2p_block(body, mode="r"):
    return f"$ nvidia-smi topo -p2p {mode}\n{body}\n"


def m_block(body):
    return f"```\n$ nvidia-smi topo -m\n{body}```\nThe node was slow, see above.\n"


def report(path, layout="auto"):
    topo = snapshot.load(str(path))
    return topo, checks.run(topo, S.select(topo, layout))


def errors(rep):
    return [(f.code, str(f.subject)) for f in rep.findings if f.severity == "error"]


def unchecked(rep):
    """The families of the "not checked" findings."""
    return {f.code.split(".")[0] for f in rep.not_checked}


def verdicts(rep):
    """Every finding but P2P's, as (severity, code, subject)."""
    return sorted((f.severity, f.code, str(f.subject)) for f in rep.findings
                  if not f.code.startswith("p2p."))


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """The -m matrix alone: its model and report."""
    return report(paste(tmp_path_factory.mktemp("alone"), H100))


def test_the_fixtures_p2p_blocks_are_what_they_say():
    assert P2P_NS01 != P2P_OK and P2P_NS01.count("NS") == 2


@pytest.mark.parametrize("name", ["h100_p2p_r_all_ns_then_m.txt", "h100_m_then_p2p_all_ns.txt"])
def test_audit_repros_read_both_matrices(name, alone):
    """Were: P2P first -> layout none, only the P2P block read, PASS; -m first -> "P2P not
    checked: no P2P status in the input", PASS."""
    topo, rep = report(DAMAGED / name)
    assert rep.layout_name == "hgx-h100-8"
    assert len(topo.gpus) == 8 and len(topo.nics) == 8 and len(topo.nvlinks) == 28
    assert topo.matrix.get("GPU0", "NIC0") == "PIX"
    assert {topo.p2p.get(f"GPU{a}", f"GPU{b}") for a in range(8) for b in range(8)
            if a != b} == {"NS"}
    assert not [n for n in topo.notes if n.code == "topo.stray_nic_legend"]
    assert errors(rep) == [("p2p.not_supported", "node")]  # one cause (every pair), one finding
    assert verdicts(rep) == verdicts(alone[1])
    assert not unchecked(rep) & {"p2p", "nvlink", "nic", "numa"}


@pytest.mark.parametrize("order", ["p2p-first", "m-first"])
def test_healthy_p2p_beside_the_matrix_is_checked_and_passes(tmp_path, order, alone):
    blocks = [p2p_block(P2P_OK), m_block(H100)]
    topo, rep = report(paste(tmp_path, *(blocks if order == "p2p-first" else blocks[::-1])))
    assert topo.p2p is not None and topo.p2p.mode == "r"
    assert topo.topo_text.kind == "paths" and topo.topo_text.command == "nvidia-smi topo -m"
    assert errors(rep) == [] and "p2p" not in unchecked(rep)
    assert not [f for f in rep.findings if f.code.startswith("p2p.")]
    assert verdicts(rep) == verdicts(alone[1])
    assert topo.matrix.cells == alone[0].matrix.cells
    assert [(g.label, g.cpu_affinity, g.numa_affinity) for g in topo.gpus] == \
        [(g.label, g.cpu_affinity, g.numa_affinity) for g in alone[0].gpus]
    # the matrix alone: P2P not checked (the healthy counterpart of "checked")
    assert "p2p" in unchecked(alone[1])


@pytest.mark.parametrize("order", ["p2p-first", "m-first"])
def test_ns_on_a_linked_pair_is_the_finding_the_p2p_matrix_alone_gives(tmp_path, order, alone):
    blocks = [p2p_block(P2P_NS01), m_block(H100)]
    _, rep = report(paste(tmp_path, *(blocks if order == "p2p-first" else blocks[::-1])))
    _, only = report(paste(tmp_path, p2p_block(P2P_NS01), name="p2p.txt"), "hgx-h100-8")
    assert errors(rep) == errors(only) == [("p2p.not_supported", "GPU0-GPU1")]
    got = [f for f in rep.findings if f.code == "p2p.not_supported"][0]
    assert got.actual == {"read": "NS"}
    assert verdicts(rep) == verdicts(alone[1])


def test_two_different_m_matrices_are_refused_in_one_line(tmp_path):
    p = paste(tmp_path, m_block(H100), m_block(A100))
    with pytest.raises(NvtopoError, match="two different nvidia-smi topo -m matrices"):
        snapshot.load(str(p))
    for args in (["check", "--from", str(p)], ["snapshot", "--from", str(p), "-o", "-"]):
        r = runner.invoke(app, args, env={"COLUMNS": "200"})
        assert r.exit_code == 2, args
        assert r.stderr.count("\n") == 1 and "ticket.txt" in r.stderr
        assert "paste each in a file of its own" in r.stderr and "Traceback" not in r.stderr


def test_one_matrix_pasted_twice_is_read_once(tmp_path, alone):
    topo, rep = report(paste(tmp_path, H100, "\n", H100.replace("    ", "\t")))
    assert topo.matrix.cells == alone[0].matrix.cells and len(topo.gpus) == 8
    assert [n.code for n in topo.notes if n.code == "topo.repeated_matrix"] == \
        ["topo.repeated_matrix"]
    assert verdicts(rep) == verdicts(alone[1])


def test_two_p2p_modes_read_the_first_and_say_the_other_is_not(tmp_path):
    _, rep = report(paste(tmp_path, p2p_block(P2P_OK), p2p_block(P2P_NS01, "w"), H100))
    topo = snapshot.load(str(tmp_path / "ticket.txt"))
    assert topo.p2p.mode == "r" and errors(rep) == []
    (note,) = [n for n in topo.notes if n.code == "topo.p2p_not_read"]
    assert note.level == "warning" and "-p2p w" in note.message


def test_two_different_p2p_matrices_of_one_mode_are_refused(tmp_path):
    with pytest.raises(NvtopoError, match="two different nvidia-smi topo -p2p matrices"):
        snapshot.load(str(paste(tmp_path, p2p_block(P2P_OK), p2p_block(P2P_NS01), H100)))


def test_a_p2p_matrix_of_other_gpus_is_refused(tmp_path):
    two = (CORPUS / "15_p2p-rw-2x-rtx5090-gns-dr-legend-tabs.txt").read_text("utf-8")
    with pytest.raises(NvtopoError, match="not one node's output"):
        snapshot.load(str(paste(tmp_path, H100, p2p_block(two))))


# -- a -m and a -mp matrix of one node (the -mp matrix prints the PCIe path where -m prints NV#)

#: the review's repro: corpus 34 under `$ nvidia-smi topo -m`, then the same with NV4 -> NODE
#: under `$ nvidia-smi topo -mp`
M_MP = DAMAGED / "a100_4_m_then_mp.txt"
A100_4 = (CORPUS / "34_4xa100-nv4-4mlx5-rst-indented-4-spaces.txt").read_text("utf-8")
A100_4_MP = A100_4.replace("NV4 ", "NODE").replace("NV4\n", "NODE\n")  # rows only: the
#                                                   legend says NV#, not NV4


def prompt(flag, body):
    return f"$ nvidia-smi topo {flag}\n{body}\n" if flag else body + "\n"


@pytest.fixture(scope="module")
def a100_alone(tmp_path_factory):
    return report(paste(tmp_path_factory.mktemp("a100"), A100_4))


def test_the_mp_matrix_is_the_m_matrix_with_pcie_paths_for_nv():
    assert "NV4" in A100_4 and "NV" not in A100_4_MP.split("Legend")[0]
    assert M_MP.read_text("utf-8").split("$ nvidia-smi topo -mp\n")[1].strip() == \
        A100_4_MP.split("\n\n    Legend")[0].strip()


def test_review_repro_reads_the_m_matrix_and_notes_the_mp_one(a100_alone):
    """Was: exit 2, "holds two different nvidia-smi topo -m matrices (lines 2 and 23)"."""
    topo, rep = report(M_MP)
    assert rep.layout_name == a100_alone[1].layout_name == "hgx-a100-4"
    assert topo.matrix.cells == a100_alone[0].matrix.cells
    assert [(l.a, l.b, l.count) for l in topo.nvlinks] == \
        [(l.a, l.b, l.count) for l in a100_alone[0].nvlinks] and len(topo.nvlinks) == 6
    assert topo.topo_text.command == "nvidia-smi topo -m"
    (note,) = [n for n in topo.notes if n.code == "topo.mp_matrix_not_used"]
    assert note.level == "info" and "line 23" in note.message and "line 2 " in note.message
    assert verdicts(rep) == verdicts(a100_alone[1]) and errors(rep) == []
    r = runner.invoke(app, ["check", "--from", str(M_MP)], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "hgx-a100-4" in r.stdout and r.stderr == ""


@pytest.mark.parametrize("order", ["m-first", "mp-first"])
@pytest.mark.parametrize("prompts", [("-m", "-mp"), ("--matrix", "--matrix_pci"), (None, None)])
def test_m_and_mp_give_the_findings_of_m_alone(tmp_path, order, prompts, a100_alone):
    blocks = [prompt(prompts[0], A100_4), prompt(prompts[1], A100_4_MP)]
    if order == "mp-first":
        blocks = blocks[::-1]
    topo, rep = report(paste(tmp_path, *blocks))
    assert topo.matrix.cells == a100_alone[0].matrix.cells
    assert len(topo.nvlinks) == 6 and {l.count for l in topo.nvlinks} == {4}
    assert rep.layout_name == "hgx-a100-4"
    assert verdicts(rep) == verdicts(a100_alone[1])
    assert sorted(f.code for f in rep.not_checked) == \
        sorted(f.code for f in a100_alone[1].not_checked)
    assert [n.code for n in topo.notes if n.code.startswith("topo.")
            and n.level != "info"] == []
    (note,) = [n for n in topo.notes if n.code == "topo.mp_matrix_not_used"]
    m_at = blocks.index(prompt(prompts[0], A100_4))  # the header line of the -m block:
    m_line = 1 + sum(b.count("\n") + 1 for b in blocks[:m_at]) + (prompts[0] is not None)
    assert f"-m matrix at line {m_line} " in note.message


def test_mp_alone_reads_as_a_pcie_only_node(tmp_path):
    """Kept as before the fix: no NVLink, no layout fits, a PASS, no note about -m."""
    for flag in ("-mp", None):
        topo, rep = report(paste(tmp_path, prompt(flag, A100_4_MP)))
        assert topo.nvlinks == [] and topo.matrix.get("GPU0", "GPU1") == "NODE"
        assert rep.layout_name == "none" and errors(rep) == []
        assert not [n for n in topo.notes if n.code == "topo.mp_matrix_not_used"]


def _pxb_to_pix(text):
    """GPU0-mlx5_0 PXB -> PIX, both cells: a non-NV cell that differs."""
    return "\n".join(line.replace("PXB", "PIX", 1) if line.strip().startswith(("GPU0 ", "mlx5_0 "))
                     else line for line in text.split("\n"))


@pytest.mark.parametrize("case,what", [
    ("m-pix", "-m"),  # two -m matrices differing in a non-NV cell
    ("mp-pix", "-m and -mp"),  # a -mp matrix differing beyond the NV# cells
    ("bare-mp-pix", "-m or -mp"),  # the same without the -mp prompt
    ("mp-with-nv", "-m and -mp"),  # an NV# cell on the -mp side: not what -mp prints
    ("prompts-swapped", "-m and -mp"),  # the NV# matrix under -mp, the PCIe one under -m
])
def test_path_matrices_that_differ_otherwise_are_refused(tmp_path, case, what):
    first, second = {
        "m-pix": (prompt("-m", A100_4), prompt("-m", _pxb_to_pix(A100_4))),
        "mp-pix": (prompt("-m", A100_4), prompt("-mp", _pxb_to_pix(A100_4_MP))),
        "bare-mp-pix": (prompt("-m", A100_4), prompt(None, _pxb_to_pix(A100_4_MP))),
        "mp-with-nv": (prompt("-m", A100_4), prompt("-mp", A100_4_MP.replace("NODE", "NV4", 1))),
        "prompts-swapped": (prompt("-mp", A100_4), prompt("-m", A100_4_MP)),
    }[case]
    assert first != second
    p = paste(tmp_path, first, second)
    with pytest.raises(NvtopoError, match=f"two different nvidia-smi topo {what} matrices"):
        snapshot.load(str(p))
    r = runner.invoke(app, ["check", "--from", str(p)], env={"COLUMNS": "200"})
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "ticket.txt" in r.stderr and "paste each in a file of its own" in r.stderr
