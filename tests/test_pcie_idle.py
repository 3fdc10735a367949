"""Idle is not broken (issue 23, class 4).

A GPU's PCIe link below its top speed is judged by the load the input states: the ``-q``
performance state (P0-P2 full performance, P5 and above power saving), the clocks reason
``Idle`` and the utilisation.  Idle GPUs lower their PCIe speed by design: one note for the
node, unless another GPU of the model, idle the same way, keeps its link at full speed.  A
laptop GPU's width is its design.  Under load, a slow or narrow link stays an error.  The
PCIe replay counter is judged against the catalog's ``pcie`` threshold.  Fixtures:
fixtures/nvml-text (README: what each shows), fixtures/real (a real H200's -q and -q -x).
"""

from __future__ import annotations

from pathlib import Path

from nvtopo import checks, snapshot
from nvtopo.checks import catalog, thresholds
from nvtopo.checks import select as S
from nvtopo.probes.nvml.text import load_facts

ROOT = Path(__file__).resolve().parent.parent
NVML_TEXT = ROOT / "fixtures" / "nvml-text"
LAPTOP = NVML_TEXT / "nvidia_smi_q_rtx3060_laptop_p8_x8_gen1.txt"
IDLE_8 = NVML_TEXT / "nvidia_smi_q_rtx4090_8gpu_p8_gen1.txt"
LOADED = NVML_TEXT / "nvidia_smi_q_rtx4090_2gpu_p2_gpu1_x8_gen3.txt"
H200 = ROOT / "fixtures" / "real" / "h200-vm-580"


def findings(path: Path):
    topo = snapshot.load(str(path))
    rep = checks.run(topo, S.select(topo, "auto").layout)
    return [(f.severity, f.code, str(f.subject)) for f in rep.findings
            if f.code.startswith("pcie.")], rep


def variant(tmp_path: Path, src: Path, *edits) -> Path:
    text = src.read_text()
    for old, new, count in edits:
        assert text.count(old) >= count, old
        text = text.replace(old, new, count)
    out = tmp_path / src.name
    out.write_text(text)
    return out


def test_the_q_text_states_the_load() -> None:
    topo = snapshot.load(str(LAPTOP))
    tx = topo.gpus[0].nvml_text
    assert (tx.performance_state, tx.clocks_idle, tx.utilization.gpu) == ("P8", True, 0)
    # drivers before 535 print "Clocks Throttle Reasons"; N/A is no value
    old = load_facts({"Performance State": "P2", "Clocks Throttle Reasons / Idle": "Not Active",
                      "Utilization / Gpu": "87 %"})
    assert (old["performance_state"], old["clocks_idle"], old["utilization"].gpu) == \
        ("P2", False, 87)
    assert load_facts({"Performance State": "N/A", "Utilization / Gpu": "N/A"}) == {}


def test_the_real_h200_q_and_q_x_say_the_same_load() -> None:
    for name in ("nvidia-smi-q.txt", "nvidia-smi-q-x.xml"):
        tx = snapshot.load(str(H200 / name)).gpus[0].nvml_text
        assert (tx.performance_state, tx.clocks_idle, tx.utilization.gpu) == ("P0", True, 0)
        assert tx.pcie.replay_counter == 0
        assert findings(H200 / name)[0] == []  # Gen5 x16, no replays: nothing to say


def test_laptop_gpu_idle_at_x8_gen1_is_its_design() -> None:
    got, rep = findings(LAPTOP)
    assert got == [("info", "pcie.width_design", "GPU0"), ("info", "pcie.gen_idle", "GPU0")]
    assert rep.verdict == "pass"


def test_eight_idle_gpus_at_gen1_are_one_note() -> None:
    got, rep = findings(IDLE_8)
    assert got == [("info", "pcie.gen_idle", "node")]
    note = next(f for f in rep.findings if f.code == "pcie.gen_idle")
    assert "GPUs 0, 1, 2, 3, 4, 5, 6, 7 at Gen1 of Gen4 (in P8" in note.message
    assert len(note.covers) == 8


def test_idle_gpu_slow_beside_an_idle_peer_at_full_speed_is_an_error(tmp_path: Path) -> None:
    # GPU0 idles at Gen4 (P8, Idle active) as GPU1 does at Gen1: GPU1's is no power saving
    path = variant(tmp_path, IDLE_8, ("Current                   : 1\n                Device "
                                      "Current            : 1", "Current                   : 4"
                                      "\n                Device Current            : 4", 1))
    got, _ = findings(path)
    assert ("error", "pcie.gen_low", "GPU1") in got
    assert ("error", "pcie.gen_low", "GPU0") not in got
    assert len([g for g in got if g[1] == "pcie.gen_low"]) == 7


def test_desktop_gpu_narrow_at_idle_stays_an_error(tmp_path: Path) -> None:
    path = variant(tmp_path, IDLE_8, ("Current                   : 16x",
                                      "Current                   : 8x", 1))
    got, rep = findings(path)
    assert ("error", "pcie.width_low", "GPU0") in got
    assert rep.verdict == "fail"


def test_loaded_gpu_slow_and_narrow_stays_an_error() -> None:
    got, rep = findings(LOADED)
    assert ("error", "pcie.width_low", "GPU1") in got
    assert ("error", "pcie.gen_low", "GPU1") in got
    gen = next(f for f in rep.findings if f.code == "pcie.gen_low")
    assert "96 % utilised" in gen.message
    assert not [g for g in got if g[2] == "GPU0"]  # its healthy neighbour: nothing


def test_full_performance_state_without_utilisation_is_load(tmp_path: Path) -> None:
    path = variant(tmp_path, LOADED, ("Gpu                               : 96 %",
                                      "Gpu                               : N/A", 1))
    got, rep = findings(path)
    gen = next(f for f in rep.findings if f.code == "pcie.gen_low")
    assert gen.severity == "error" and "in P2 (full performance)" in gen.message


def test_load_unknown_stays_a_warning(tmp_path: Path) -> None:
    path = variant(tmp_path, LOADED, ("Performance State                     : P2\n", "", 2),
                   ("Gpu                               : 96 %",
                    "Gpu                               : N/A", 1))
    got, _ = findings(path)
    assert ("warning", "pcie.gen_low", "GPU1") in got


def test_replays_nonzero_warn_above_threshold_error(tmp_path: Path) -> None:
    got, _ = findings(LOADED)
    assert ("error", "pcie.replays", "GPU1") in got
    few = variant(tmp_path, LOADED, ("Replays Since Reset               : 4812",
                                     "Replays Since Reset               : 12", 1))
    assert ("warning", "pcie.replays", "GPU1") in findings(few)[0]
    file = thresholds.parse("t.json", '{"schema_version": 1, "classes": '
                                      '{"*": {"pcie": {"replay": 10000}}}}')
    topo = snapshot.load(str(LOADED))
    rep = checks.run(topo, S.select(topo, "auto").layout, thresholds=file)
    assert [f.severity for f in rep.findings if f.code == "pcie.replays"] == ["warning"]
    assert catalog.thresholds("pcie") == {"replay": 100}
