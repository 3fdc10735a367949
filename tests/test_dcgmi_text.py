"""Issue 12: pasted ``dcgmi nvlink -s`` text (DCGM's NVLink link status).

The real sample (``fixtures/nvml-text/dcgmi_nvlink_s_h100.txt``, 8x H100, 18 ``U`` per
GPU) is read into the same records pasted ``nvidia-smi nvlink -s`` gives; a ``D`` reaches
the same ``nvlink.link_down`` finding the same fault gives through NVML; the variants
DCGM versions print (borders, ``GPU N``, letters on the header line, wrapped rows,
NvSwitch blocks, cut pastes) read the same; hostile input parses in bounded time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import List, Set, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_runner import make_runner
from test_hostile_parsers import finishes_within  # one hang detector for the suite
from nvtopo.checks import select_and_run
from nvtopo.cli import app
from nvtopo.errors import NvtopoError
from nvtopo.probes import dcgmi_text
from nvtopo.probes import readers
from nvtopo.snapshot import load_text

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "nvml-text" / "dcgmi_nvlink_s_h100.txt"
SHARED = Path("/work/shared/corpus/nvlink") / "dcgmi_nvlink_s_h100.txt"
TOPO_H100 = ROOT / "fixtures" / "topo-corpus" / \
    "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"

runner = make_runner()


def sample() -> str:
    return FIX.read_text(encoding="utf-8")


def with_letter(text: str, gpu: int, link: int, letter: str) -> str:
    """The sample with one letter of one GPU's row replaced."""
    lines = text.split("\n")
    at = lines.index(f"    gpuId {gpu}:") + 1
    row = lines[at].split()
    row[link] = letter
    lines[at] = "        " + " ".join(row)
    return "\n".join(lines)


def errors(report) -> Set[Tuple[str, str, str]]:
    return {(f.code, f.severity, str(f.subject)) for f in report.findings
            if f.severity in ("error", "warning")}


def states(topo, gpu: int) -> List[Tuple[int, str]]:
    return [(x.link, x.state) for x in topo.gpu(gpu).nvml_text.nvlink.links]


# -- the real sample --------------------------------------------------------------------------


def test_fixture_is_the_corpus_sample() -> None:
    if not SHARED.exists():
        pytest.skip("shared corpus not present on this machine")
    assert FIX.read_bytes() == SHARED.read_bytes()


def test_real_sample_is_recognised_and_parsed_to_its_values() -> None:
    text = sample()
    assert readers.names(text) == ["dcgmi-text"]
    topo = load_text(text, "dcgmi.txt")
    assert [g.index for g in topo.gpus] == list(range(8))
    assert topo.sources == ["nvml-text"]
    assert topo.nvml_text.sections == ["dcgmi nvlink -s"]
    assert topo.origin.to_dict() == {"kind": "nvml-text", "file": "dcgmi.txt"}
    for g in topo.gpus:
        nv = g.nvml_text.nvlink
        assert (nv.status, nv.total, nv.active, nv.down) == ("ok", 18, 18, [])
        assert states(topo, g.index) == [(k, "active") for k in range(18)]
        assert {x.rule for x in nv.links} == {"state"}
    assert not [n for n in topo.notes if n.level != "info"]


def test_real_sample_checks_pass_with_the_nvlink_facts_known() -> None:
    rep = select_and_run(load_text(sample(), "dcgmi.txt"), "dgx-h100")
    assert rep.verdict == "pass"
    assert errors(rep) == set()
    assert "nvlink" not in rep.not_checked


def test_cli_check_and_links_read_the_sample() -> None:
    res = runner.invoke(app, ["check", "--from", str(FIX), "--layout", "dgx-h100",
                              "--format", "json"])
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["verdict"] == "pass"
    res = runner.invoke(app, ["links", "--from", str(FIX), "--format", "json"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert [(g["index"], g["active"], g["total"], g["source"]) for g in doc["gpus"]] == \
        [(i, 18, 18, "nvml-text") for i in range(8)]
    assert {x["state"] for g in doc["gpus"] for x in g["links"]} == {"active"}


def test_show_json_is_valid_and_names_the_section() -> None:
    res = runner.invoke(app, ["show", "--from", str(FIX), "--format", "json"])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["extra"]["nvml-text"]["sections"] == ["dcgmi nvlink -s"]
    assert len(doc["gpus"]) == 8


# -- D, X, _ ----------------------------------------------------------------------------------


def _sim_check(*faults: str) -> Set[Tuple[str, str, str]]:
    cmd = [sys.executable, "-m", "nvtopo", "simulate", "dgx-h100"]
    for f in faults:
        cmd += ["--fault", f]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    return errors(select_and_run(load_text(out.stdout, "sim.json"), "dgx-h100"))


def test_a_down_link_fails_as_the_same_fault_from_nvml() -> None:
    text = with_letter(sample(), 3, 7, "D")
    topo = load_text(text, "dcgmi.txt")
    rec = topo.gpu(3).nvml_text.nvlink
    assert (rec.active, rec.down) == (17, [7])
    link7 = rec.links[7]
    assert (link7.state, link7.rule) == ("down", "family")
    got = errors(select_and_run(topo, "dgx-h100"))
    assert got == {("nvlink.link_down", "error", "GPU3 link 7")}
    assert got == _sim_check("nvlink-down:GPU3:7")


def test_disabled_is_down_by_configuration_never_an_error() -> None:
    topo = load_text(with_letter(sample(), 2, 5, "X"), "dcgmi.txt")
    link = topo.gpu(2).nvml_text.nvlink.links[5]
    assert (link.state, link.raw_state, link.rule) == ("inactive", "inactive", "text")
    assert "disabled" in link.reason and "configuration" in link.reason
    assert topo.gpu(2).nvml_text.nvlink.down == []
    assert errors(select_and_run(topo, "dgx-h100")) == set()


def test_not_supported_is_not_a_link() -> None:
    text = sample()
    for g in range(8):  # a 17-link part: the last position is "_" on every GPU
        text = with_letter(text, g, 17, "_")
    topo = load_text(text, "dcgmi.txt")
    for g in topo.gpus:
        nv = g.nvml_text.nvlink
        assert (nv.total, nv.active) == (17, 17)
        assert [x.link for x in nv.links] == list(range(17))


def test_a_link_down_on_every_gpu_is_not_guessed_a_fault() -> None:
    # a bridged board leaves the same links down on every GPU by design: D is told apart
    # only where another GPU of the paste uses that link
    text = sample()
    for g in range(8):
        text = with_letter(text, g, 4, "D")
    topo = load_text(text, "dcgmi.txt")
    assert all(g.nvml_text.nvlink.down == [] for g in topo.gpus)
    assert states(topo, 0)[4] == (4, "inactive")


def test_a_gpu_with_no_link_up_keeps_its_d_links_undecided() -> None:
    text = sample()
    for k in range(18):
        text = with_letter(text, 6, k, "D")
    topo = load_text(text, "dcgmi.txt")
    assert topo.gpu(6).nvml_text.nvlink.down == []
    assert topo.gpu(6).nvml_text.nvlink.active == 0


# -- with topo -m in one paste ----------------------------------------------------------------


@pytest.mark.parametrize("dcgmi_first", [False, True])
def test_with_the_matrix_of_an_8x_h100_node(dcgmi_first: bool) -> None:
    topo_m = TOPO_H100.read_text(encoding="utf-8")
    for text, want in ((sample(), set()),
                       (with_letter(sample(), 3, 7, "D"),
                        {("nvlink.link_down", "error", "GPU3 link 7")})):
        paste = text + "\n" + topo_m if dcgmi_first else topo_m + "\n" + text
        assert readers.names(paste) == ["topo-text", "dcgmi-text"]
        topo = load_text(paste, "ticket.txt")
        assert set(topo.sources) >= {"topo-text", "nvml-text"}
        assert len(topo.gpus) == 8 and topo.matrix is not None
        assert topo.gpu(0).nvml_text.nvlink.active == 18
        rep = select_and_run(topo)
        assert rep.layout_name == "hgx-h100-8"
        assert errors(rep) == want


def test_a_cut_dcgmi_text_before_the_matrix_leaves_the_matrix_whole() -> None:
    topo_m = TOPO_H100.read_text(encoding="utf-8")
    cut = sample()[: sample().index("NvSwitches:")].rstrip("\n")
    topo = load_text(cut[: cut.rindex(" U")] + "\n" + topo_m, "ticket.txt")
    alone = load_text(topo_m, "m.txt")
    assert topo.matrix is not None and len(topo.gpus) == 8
    assert topo.gpu(7).nvml_text.nvlink.active == 17  # the row cut before its last letter
    # the matrix's header line (after the cut row) is the matrix's, not a damaged dcgmi row
    assert not [n for n in topo.notes if n.code.startswith("topo.")]
    assert [g.numa_affinity for g in topo.gpus] == [g.numa_affinity for g in alone.gpus]
    assert select_and_run(topo).layout_name == "hgx-h100-8"


def test_the_matrix_alone_and_with_the_sample_give_the_same_pairs() -> None:
    topo_m = TOPO_H100.read_text(encoding="utf-8")
    alone = load_text(topo_m, "m.txt")
    both = load_text(topo_m + "\n" + sample(), "m.txt")
    assert [(p.a, p.b, p.count) for p in alone.nvlinks] == \
        [(p.a, p.b, p.count) for p in both.nvlinks]


# -- versions, damage -------------------------------------------------------------------------

BORDERED = """\
+----------------------+
|  NvLink Link Status  |
+----------------------+
| GPUs:                |
|   gpuId 0:           |
|     U U U U U U      |
|     U U U U U U      |
|   gpuId 1:           |
|     U U D U U U      |
|     U U U U U X      |
+----------------------+
| NvSwitches:          |
|   physicalId 8:      |
|     U U U D _ _      |
+----------------------+
Key: Up=U, Down=D, Disabled=X, Not Supported=_
"""


def test_bordered_wrapped_rows_and_switch_blocks() -> None:
    assert readers.names(BORDERED) == ["dcgmi-text"]
    topo = load_text(BORDERED, "b.txt")
    assert [g.index for g in topo.gpus] == [0, 1]
    assert states(topo, 0) == [(k, "active") for k in range(12)]
    got = dict(states(topo, 1))
    assert (got[2], got[11], len(got)) == ("down", "inactive", 12)
    # the NvSwitch's own letters are no GPU's links
    assert topo.gpu(8) is None


def test_gpu_n_headers_with_letters_on_the_same_line() -> None:
    text = ("dcgmi nvlink -s\nGPUs:\n  GPU 0: U U U U\n  GPU 1: U U U U\n"
            "NvSwitches:\n  No NvSwitches found.\n")
    topo = load_text(text, "g.txt")
    assert [(g.index, g.nvml_text.nvlink.active) for g in topo.gpus] == [(0, 4), (1, 4)]


def test_a_cut_paste_gives_unknowns_not_errors() -> None:
    cut = sample()[: sample().index("gpuId 5:") + len("gpuId 5:")]
    topo = load_text(cut, "cut.txt")
    assert [g.index for g in topo.gpus] == list(range(6))
    five = topo.gpu(5).nvml_text
    assert (five.nvlink.status, five.nvlink.total, five.nvlink.links) == ("unknown", None, [])
    assert any("cut" in n for n in five.notes)
    rep = select_and_run(topo, "dgx-h100")
    assert rep.verdict == "pass" and errors(rep) == set()


def test_a_letter_dcgm_does_not_define_is_unknown() -> None:
    topo = load_text(with_letter(sample(), 1, 0, "?"), "q.txt")
    link = topo.gpu(1).nvml_text.nvlink.links[0]
    assert (link.state, link.rule) == ("unknown", None)
    assert errors(select_and_run(topo, "dgx-h100")) == set()


@pytest.mark.parametrize("letter", ["d", "u", "x"])
def test_a_small_letter_is_damage_not_a_state(letter: str) -> None:
    # DCGM prints capitals; a "d" glued before a row (found by the fuzz test in CI) was
    # read as D, and GPU0 link 0 became a false nvlink.link_down error
    text = sample().replace("    gpuId 0:\n", f"    gpuId 0:\n{letter}", 1)
    topo = load_text(text, "dmg.txt")
    link = topo.gpu(0).nvml_text.nvlink.links[0]
    assert (link.state, link.rule) == ("unknown", None)
    assert topo.gpu(0).nvml_text.nvlink.down == []
    rep = select_and_run(topo, "dgx-h100")
    assert errors(rep) == set()
    # unknown is said, never a silent pass about that link
    notes = [f.message for f in rep.findings if f.code == "nvlink.not_checked"]
    assert len(notes) == 1 and "GPU0 link 0:" in notes[0] and f"'{letter}'" in notes[0]


def test_a_damaged_row_is_noted_and_not_read() -> None:
    text = sample().replace("    gpuId 4:\n        U U U", "    gpuId 4:\n        U \x1b[31mU U", 1)
    topo = load_text(text, "dmg.txt")
    assert topo.gpu(4).nvml_text.nvlink.links == []
    msgs = [n.message for n in topo.notes if n.code == "dcgmi_text.unreadable_line"]
    assert msgs and all("\x1b" not in m for m in msgs)


def test_no_gpu_row_is_one_line_naming_the_file(tmp_path: Path) -> None:
    f = tmp_path / "empty-dcgmi.txt"
    f.write_text("+----------------------+\n|  NvLink Link Status  |\n+---+\nGPUs:\n"
                 "NvSwitches:\n    No NvSwitches found.\n\n"
                 "Key: Up=U, Down=D, Disabled=X, Not Supported=_\n", encoding="utf-8")
    res = runner.invoke(app, ["check", "--from", str(f)])
    assert res.exit_code == 2
    assert str(f) in res.stderr and "no GPU row" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


@pytest.mark.parametrize("text", [
    # what dcgmi prints when DCGM sees no GPU, and when it cannot ask DCGM (dcgmi/Nvlink.cpp)
    "+----------------------+\n|  NvLink Link Status  |\n+----------------------+\nGPUs:\n"
    "    No GPUs found.\nNvSwitches:\n    No NvSwitches found.\n\n"
    "Key: Up=U, Down=D, Disabled=X, Not Supported=_\n",
    "Error: Unable to retrieve NvLink link status from DCGM. Return: Host engine connection "
    "invalid/disconnected.\n"])
def test_dcgmi_without_gpus_is_an_error_not_a_pass(tmp_path: Path, text: str) -> None:
    f = tmp_path / "dcgmi.txt"
    f.write_text(text, encoding="utf-8")
    assert readers.names(text) == ["dcgmi-text"]
    with pytest.raises(NvtopoError, match="no GPU row"):
        load_text(text, str(f))
    res = runner.invoke(app, ["links", "--from", str(f)])
    assert res.exit_code == 2 and str(f) in res.stderr


@pytest.mark.parametrize("with_matrix", [False, True])
def test_snapshot_from_dcgmi_text_keeps_it_and_checks_the_same(tmp_path: Path,
                                                                with_matrix: bool) -> None:
    text = with_letter(sample(), 3, 7, "D")
    if with_matrix:
        text = TOPO_H100.read_text(encoding="utf-8") + "\n" + text
    f, snap = tmp_path / "ticket.txt", tmp_path / "node.json"
    f.write_text(text, encoding="utf-8")
    res = runner.invoke(app, ["snapshot", "--from", str(f), "-o", str(snap)])
    assert res.exit_code == 0, res.stderr
    doc = json.loads(snap.read_text(encoding="utf-8"))
    assert doc["probes"]["nvml"]["source"] == "nvml-text"
    assert ("topo-text" in doc["probes"]) == with_matrix
    from_text = select_and_run(load_text(text, "t"), "dgx-h100")
    from_snap = select_and_run(load_text(snap.read_text(encoding="utf-8"), "s"), "dgx-h100")
    assert errors(from_snap) == errors(from_text)
    assert {e for e in errors(from_snap) if e[1] == "error"} == \
        {("nvlink.link_down", "error", "GPU3 link 7")}
    topo = load_text(snap.read_text(encoding="utf-8"), "s")
    assert topo.gpu(3).nvml_text.nvlink.down == [7]
    assert (topo.matrix is not None) == with_matrix


def test_nvidia_smi_text_that_mentions_dcgmi_stays_nvidia_smi_text() -> None:
    text = ("I also ran dcgmi nvlink -s, same thing\n"
            "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\n\t Link 0: 26.562 GB/s\n")
    assert readers.names(text) == ["nvml-text"]


def test_nvidia_smi_text_beside_dcgmi_is_said_to_be_unread() -> None:
    text = sample() + "\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\n\t Link 0: 26.562 GB/s\n"
    topo = load_text(text, "both.txt")
    assert [n.level for n in topo.notes if n.code == "dcgmi_text.nvidia_smi_not_read"] == \
        ["warning"]
    assert topo.gpu(0).nvml_text.nvlink.active == 18
    assert not [n for n in load_text(sample(), "s").notes
                if n.code == "dcgmi_text.nvidia_smi_not_read"]


def test_duplicate_gpu_keeps_the_first() -> None:
    text = sample() + "\nGPUs:\n    gpuId 0:\n        D D D\n"
    topo = load_text(text, "dup.txt")
    assert topo.gpu(0).nvml_text.nvlink.active == 18
    assert any(n.code == "dcgmi_text.duplicate_gpu" for n in topo.notes)


# -- hostile input ----------------------------------------------------------------------------




def test_large_input_is_read_in_bounded_time_and_size() -> None:
    rows = "GPUs:\n" + "".join(f"  gpuId {i}:\n    " + "U " * 5000 + "\n" for i in range(3000))
    long_line = "NvLink Link Status\ngpuId 0:\n" + "U " * 2_000_000
    with finishes_within(30):
        topo = dcgmi_text.derive_text("NvLink Link Status\n" + rows)
        assert len(topo.gpus) == 1024  # MAX_GPUS
        assert all(len(g.nvml_text.nvlink.links) <= dcgmi_text.MAX_LINKS for g in topo.gpus)
        assert len(topo.notes) <= dcgmi_text.MAX_NOTES + 1
        one = dcgmi_text.derive_text(long_line)
        assert len(one.gpus[0].nvml_text.nvlink.links) <= dcgmi_text.MAX_LINKS


_PIECES = st.sampled_from([
    "dcgmi nvlink -s", "+----+", "|  NvLink Link Status  |", "GPUs:", "NvSwitches:",
    "gpuId ", "GPU ", "physicalId ", "0", "7", "99999999999999", "\u0663", "\u00b2", ":",
    " U", " D", " X", " _", " ?", "|", "\t", "\n", "    ", "No NvSwitches found.",
    "Key: Up=U, Down=D, Disabled=X, Not Supported=_", "\x1b[31m", "\ud800", "\u202e",
    "GPU0\tX\tNV18\tSYS", "\t Link 0: 26.562 GB/s"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=80))
def test_fuzzed_text_parses_or_is_refused_in_one_line(pieces: List[str]) -> None:
    text = "NvLink Link Status\n" + "".join(pieces)
    with finishes_within(10):
        topo = dcgmi_text.derive_text(text)
        for g in topo.gpus:
            for x in g.nvml_text.nvlink.links:
                assert x.state in ("active", "inactive", "down", "unknown")
        for n in topo.notes:
            assert "\x1b" not in n.message and "\u202e" not in n.message
        try:
            load_text(text, "fuzz.txt")
        except NvtopoError:
            pass


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_sample_never_crashes(data) -> None:
    text = sample()
    cut = data.draw(st.integers(0, len(text)))
    junk = data.draw(st.text(max_size=30))
    mutated = text[:cut] + junk + text[cut + data.draw(st.integers(0, 20)):]
    with finishes_within(10):
        try:
            topo = load_text(mutated, "m.txt")
        except NvtopoError:
            return
        rep = select_and_run(topo, "dgx-h100")
        # damage never invents a down link: only a D the text prints can be one
        if "D" not in mutated.replace("Down=D", "").replace("Disabled", ""):
            assert not [f for f in rep.findings if f.code == "nvlink.link_down"]
