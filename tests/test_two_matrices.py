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
    return topo, checks.run(topo, S.select(topo, layout).layout)


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
