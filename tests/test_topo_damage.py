"""Damaged topo texts: what can be recovered is kept, and what is lost is said."""

import re
from pathlib import Path

import pytest

from nvtopo.probes.topo import MAX_DEVICES, TopoParseError, parse

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "topo-corpus"
H100 = (CORPUS / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt").read_text()
H100_ROW0 = "X NV18 NV18 NV18 NV18 NV18 NV18 NV18 PIX NODE NODE NODE SYS SYS SYS SYS"


def codes(topo):
    return [n.code for n in topo.notes]


def test_header_missing_nic_columns_recovers_from_rows():
    lines = H100.split("\n")
    lines[0] = re.sub(r"NIC\d\s+", "", lines[0])
    topo = parse("\n".join(lines))
    assert topo.matrix.devices[8:] == [f"NIC{i}" for i in range(8)]
    assert " ".join(topo.matrix.cells[0]) == H100_ROW0
    assert "topo.missing_columns" in codes(topo)
    assert topo.gpu(0).cpu_affinity == "0-47,96-143"


def test_header_and_gpu_rows_missing_nic_columns_mirror_from_nic_rows():
    lines = H100.split("\n")
    lines[0] = re.sub(r"NIC\d\s+", "", lines[0])
    for i in range(1, 9):
        toks = lines[i].split()
        lines[i] = "  ".join(toks[:9] + toks[17:])
    topo = parse("\n".join(lines))
    assert " ".join(topo.matrix.cells[0]) == H100_ROW0
    assert topo.gpu(4).numa_affinity == "1"
    assert {"topo.missing_columns", "topo.short_row", "topo.mirrored"} <= set(codes(topo))
    assert "topo.unknown_paths" not in codes(topo)


def test_nic_rows_lost_leaves_nic_pairs_unknown_and_says_so():
    lines = [ln for ln in H100.split("\n") if not ln.startswith("NIC")]
    topo = parse("\n".join(lines))
    assert topo.matrix.get("NIC0", "NIC1") is None
    assert topo.matrix.get("GPU0", "NIC0") == "PIX"
    assert {"topo.missing_row", "topo.unknown_paths"} <= set(codes(topo))


def test_glued_header_and_cells():
    lines = H100.split("\n")
    lines[0] = ("        " + "".join(f"GPU{i}" for i in range(8)) + "".join(f"NIC{i}" for i in range(8))
                + "CPU AffinityNUMA AffinityGPU NUMA ID")
    lines[1] = lines[1].replace("PIX     NODE", "PIXNODE")
    topo = parse("\n".join(lines))
    assert len(topo.matrix.devices) == 16
    assert " ".join(topo.matrix.cells[0]) == H100_ROW0
    assert not [n for n in topo.notes if n.level == "warning"]


@pytest.mark.parametrize("wrap", ["\x1b[1;32m{}\x1b[0m", "[32m{}[0m"])
def test_ansi_codes_and_remnants(wrap):
    text = re.sub(r"(NV18|PIX|SYS)", lambda m: wrap.format(m.group(1)), H100)
    topo = parse(text)
    assert " ".join(topo.matrix.cells[0]) == H100_ROW0
    assert not [n for n in topo.notes if n.level == "warning"]


def test_unknown_token_kept_and_reported():
    topo = parse(H100.replace("NV18", "NV??", 1))
    assert topo.matrix.cells[0][1] == "NV??"
    assert "topo.unknown_token" in codes(topo)
    assert "topo.asymmetric" in codes(topo)
    assert topo.nvlink(0, 1) == 18  # the mirrored cell still says NV18


def test_spaces_from_expanded_tabs_with_empty_affinity_are_flagged_not_silent():
    text = (CORPUS / "43_4gpu-nv4-3nic-cpu-affinity-0-and-empty-tabs.txt").read_text().expandtabs(8)
    topo = parse(text)
    notes = [n for n in topo.notes if n.code == "topo.ambiguous_field"]
    assert {n.subject for n in notes} == {"GPU2", "GPU3"}
    assert "CPU Affinity or NUMA Affinity" in notes[0].message


def test_duplicate_gpu_index_reported():
    topo = parse("GPU0 GPU00\nGPU0 X NV4\nGPU00 NV4 X\n")
    assert [g.label for g in topo.gpus] == ["GPU0"]
    assert "topo.duplicate_gpu" in codes(topo)


def test_no_header_assumes_row_order():
    topo = parse("GPU0 X NV4\nGPU1 NV4 X\n")
    assert topo.matrix.devices == ["GPU0", "GPU1"]
    assert "topo.no_header" in codes(topo)


def test_too_many_devices_is_a_clear_error():
    n = MAX_DEVICES + 1
    text = " ".join(f"GPU{i}" for i in range(n)) + "\nGPU0 X\n"
    with pytest.raises(TopoParseError, match="more than"):
        parse(text)


@pytest.mark.parametrize("text", ["", "hello\n", "Legend:\n  X = Self\n", "GPU0 GPU1\n"])
def test_no_matrix_is_the_only_error(text):
    with pytest.raises(TopoParseError):
        parse(text)


def test_prompt_line_gives_p2p_mode():
    text = ("$ nvidia-smi topo -p2p w\n \tGPU0\tGPU1\t\n GPU0\tX\tOK\t\n GPU1\tOK\tX\t\n")
    topo = parse(text)
    assert topo.matrix is None and topo.p2p.mode == "w"
    assert topo.topo_text.to_dict()["command"] == "nvidia-smi topo -p2p w"


def test_summary_counts_unknown_pairs_apart_from_unconnected():
    from nvtopo.model import GPU, Matrix, NVLinkPair, Topology
    from nvtopo.render.matrix import summary

    topo = Topology(gpus=[GPU(0), GPU(1), GPU(2)],
                    matrix=Matrix(["GPU0", "GPU1", "GPU2"],
                                  [["X", "NV4", None], ["NV4", "X", "PHB"], [None, "PHB", "X"]]),
                    nvlinks=[NVLinkPair(0, 1, 4)])
    line = summary(topo).plain
    assert "1/3 GPU pairs NVLink-connected (NV4), 1 unknown" in line, line
    topo.matrix.cells[0][2] = topo.matrix.cells[2][0] = "SYS"
    assert "1/3 GPU pairs NVLink-connected (NV4) ·" in summary(topo).plain
