"""`nvtopo explain` and the `nccl` check family (nvtopo/checks/nccl.py,
nvtopo/commands/explain.py): each fixture log's causes, alone and with the node's evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import make_runner

from nvtopo.cli import app
from nvtopo.checks import nccl
from nvtopo.commands import explain as explain_mod
from nvtopo.model.nccl import NcclLog
from nvtopo.probes.nccl import log as nccl_log

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "nccl"
LOGS = sorted(FIX.glob("*.log")) + sorted(FIX.glob("*.txt")) + sorted(FIX.glob("*.xml"))
runner = make_runner()


def expected(path: Path) -> dict:
    return json.loads(path.with_suffix(".expect.json").read_text(encoding="utf-8"))


def test_every_fixture_log_states_its_causes():
    assert len(LOGS) >= 18
    for path in LOGS:
        want = expected(path)
        assert set(want) >= {"alone", "thread", "shows"}, path.name
        assert all(code in nccl_catalog() for code in want["alone"]), path.name


def nccl_catalog():
    from nvtopo.checks.catalog import CATALOG

    return {c for c in CATALOG if c.startswith("nccl.")}


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_a_log_alone_gives_its_expected_causes(path):
    found = explain_mod.explain([str(path)])
    got = {}
    for f in found.report.findings:
        got.setdefault(f.code, f.severity)
    assert got == expected(path)["alone"]
    assert found.exit_status == (1 if "error" in got.values() else 0)


def test_a_healthy_log_says_it_shows_no_fault():
    found = explain_mod.explain([str(FIX / "healthy-2x8-h100-ib.log")])
    assert found.report.findings == () and found.report.verdict == "pass"
    assert any("NET/IB 6, P2P 28" in line for line in found.lines)
    assert "shows no fault" in found.lines[-1]


def test_gdr_distance_is_read_by_the_logs_nccl_version():
    log = NcclLog(version="2.18.3+cuda12.2")
    assert nccl.path_names(log, 7) == ["SYS"]
    log.version = "2.21.5"
    assert nccl.path_names(log, 7) == ["PHB", "PXN"]  # with C2C, or C2C and P2C
    log.version = None
    assert nccl.path_names(log, 4) == ["PXB", "PIX"] and nccl.path_names(log, 40) == []


# --- with the node's evidence ----------------------------------------------------------------

NODE_LOG = """\
dgx-h100-9603:100:101 [0] NCCL INFO NCCL version 2.18.5+cuda12.2
dgx-h100-9603:100:101 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>
dgx-h100-9603:100:101 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 8000 commId 0x1 - Init START
dgx-h100-9603:101:102 [1] NCCL INFO comm 0x1 rank 1 nranks 16 cudaDev 1 nvmlDev 1 busId f000 commId 0x1 - Init START
dgx-h100-9603:100:101 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 8000 / HCA 0 (distance 5 > 4)
dgx-h100-9603:100:101 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct
"""


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    out = tmp_path_factory.mktemp("node") / "h100.json"
    r = runner.invoke(app, ["simulate", "dgx-h100", "--hostname", "dgx-h100-9603",
                            "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out


def _codes(found):
    return sorted((f.code, f.severity, str(f.subject)) for f in found.report.findings
                  if f.code.startswith("nccl."))


def test_the_node_names_the_cause(tmp_path, h100):
    log = tmp_path / "nccl.log"
    log.write_text(NODE_LOG)
    found = explain_mod.explain([str(log), str(h100)])
    assert _codes(found) == [
        ("nccl.gdr_disabled", "error", "dgx-h100-9603"),  # PIX on the node: NCCL's tree is wrong
        ("nccl.hca_wrong", "error", "mlx5_1"),  # a storage NIC used for compute
        ("nccl.hca_wrong", "warning", "dgx-h100-9603"),  # seven compute NICs left out
        ("nccl.p2p_disabled", "error", "GPU0-GPU1")]  # SHM where 18 NVLinks join them
    msgs = {f.code + str(f.subject): f.message for f in found.report.findings}
    assert "GPU0 and mlx5_0 at PIX" in msgs["nccl.gdr_disableddgx-h100-9603"]
    assert "18 NVLink(s)" in msgs["nccl.p2p_disabledGPU0-GPU1"]
    assert found.report.layout_name == "dgx-h100" and found.exit_status == 1


def test_alone_the_same_log_gives_no_node_claim(tmp_path):
    log = tmp_path / "nccl.log"
    log.write_text(NODE_LOG)
    found = explain_mod.explain([str(log)])
    assert _codes(found) == [("nccl.gdr_disabled", "warning", "dgx-h100-9603"),
                             ("nccl.p2p_disabled", "warning", "dgx-h100-9603")]


def test_a_node_of_another_host_speaks_for_none(tmp_path, h100):
    log = tmp_path / "nccl.log"
    log.write_text(NODE_LOG.replace("dgx-h100-9603", "other-host") +
                   NODE_LOG.replace("dgx-h100-9603", "third-host"))
    found = explain_mod.explain([str(log), str(h100)])
    assert {f.severity for f in found.report.findings if f.code.startswith("nccl.")} == \
        {"warning"}


def test_a_healthy_log_beside_its_node_is_the_best_the_node_has(tmp_path, h100):
    text = (FIX / "healthy-1x8-nvls-no-prefix.log").read_text(encoding="utf-8")
    log = tmp_path / "nccl.log"
    log.write_text(text.replace("busId 18000", "busId 8000"))
    found = explain_mod.explain([str(log), str(h100)])
    assert [f for f in found.report.findings if f.severity != "info"] == []
    assert "best paths the node has" in found.lines[-1]


def test_nvls_unavailable_is_a_warning_only_on_an_nvswitch_node(h100):
    path = FIX / "nvls-not-available-h800.log"
    alone = explain_mod.explain([str(path)])
    assert [(f.code, f.severity) for f in alone.report.findings] == \
        [("nccl.nvls_unavailable", "info")]
    text = path.read_text(encoding="utf-8").replace("h800-pod-0", "dgx-h100-9603")
    log = h100.parent / "h800.log"
    log.write_text(text)
    both = explain_mod.explain([str(log), str(h100)])
    assert ("nccl.nvls_unavailable", "warning", "dgx-h100-9603") in _codes(both)


# --- the command -----------------------------------------------------------------------------


def test_explain_json_and_exit_status():
    r = runner.invoke(app, ["explain", "--from", str(FIX / "async-port-error-flapping.log"),
                            "--format", "json"])
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["nccl"]["hosts"] == ["dgx-c03"] and doc["node"] is None
    assert {f["code"] for f in doc["findings"]} == {"nccl.port_error", "nccl.net_error"}
    assert doc["verdict"] == "fail"


def test_explain_table_of_a_healthy_log():
    r = runner.invoke(app, ["explain", "--from", str(FIX / "healthy-2x8-h100-ib.log")])
    assert r.exit_code == 0
    assert "What NCCL did" in r.stdout and "PASS" in r.stdout


@pytest.mark.parametrize("inputs, words", [
    ([], "give the NCCL log"),
    (["fixtures/topo-corpus/02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"],
     "no NCCL debug log, nccl-tests output or NCCL topology XML"),
    (["fixtures/nccl/healthy-2x8-h100-ib.log", "fixtures/nccl/shm-between-gpus.log"],
     "a second NCCL log")])
def test_bad_inputs_are_one_line_and_exit_2(inputs, words):
    args = ["explain"]
    for p in inputs:
        args += ["--from", str(ROOT / p)]
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and words in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_untrusted_text_is_escaped_in_the_table(tmp_path):
    log = tmp_path / "evil.log"
    log.write_text("h:1:1 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port error "
                   "\x1b[31m[bold]x[/bold]\n")
    r = runner.invoke(app, ["explain", "--from", str(log)])
    assert r.exit_code == 1 and "\x1b[31m" not in r.stdout
    assert nccl_log.parse(log.read_text()).events[0].kind == "async_event"


def test_nccls_own_path_line_names_the_distance(tmp_path):
    log = tmp_path / "nccl.log"
    log.write_text(
        "h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
        "h:1:1 [0] NCCL INFO GPU/CA000 :GPU/CE000 (1/40.000000/NVL) NET/0 (5/12.000000/PHB)\n"
        "h:1:1 [0] NCCL INFO GPU Direct RDMA Disabled for GPU ca000 / HCA 0 (distance 7 > 5)\n")
    (f,) = explain_mod.explain([str(log)]).report.findings
    assert "distance 7 > 5 (PHB)" in f.message  # the line's name, not the two readings


def test_check_points_a_bare_log_to_explain_and_reads_one_beside_a_matrix(tmp_path):
    r = runner.invoke(app, ["check", "--from", str(FIX / "shm-between-gpus.log")])
    assert r.exit_code == 2 and "nvtopo explain" in r.stderr
    ticket = tmp_path / "ticket.txt"
    ticket.write_text((ROOT / "fixtures" / "topo-corpus" /
                       "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"
                       ).read_text(encoding="utf-8") +
                      (FIX / "hca-roce-in-ib-set.log").read_text(encoding="utf-8"))
    r = runner.invoke(app, ["check", "--from", str(ticket), "--format", "json"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 1
    assert ("nccl.hca_wrong", "error", "mlx5_2") in {
        (f["code"], f["severity"], f["subject"]) for f in doc["findings"]}


def test_a_flapping_port_is_one_finding_per_port(tmp_path):
    log = tmp_path / "flap.log"
    log.write_text("".join(
        f"h:1:1 [0] NCCL WARN NET/IB : mlx5_{i % 2}:1 Got async event : port "
        f"{'error' if i % 4 < 2 else 'active'}\n" for i in range(40)))
    found = explain_mod.explain([str(log)])
    got = [(f.code, str(f.subject)) for f in found.report.findings]
    assert got == [("nccl.port_error", "mlx5_0 port 1"), ("nccl.port_error", "mlx5_1 port 1")]
    assert "(20 times)" in found.report.findings[0].message


def test_nvls_unavailable_names_a_fabric_not_started(tmp_path):
    node = tmp_path / "fm.json"
    assert runner.invoke(app, ["simulate", "dgx-h100", "--hostname", "h800-pod-0", "--fault",
                               "fabric-not-started", "-o", str(node)]).exit_code == 0
    found = explain_mod.explain([str(FIX / "nvls-not-available-h800.log"), str(node)])
    (f,) = [f for f in found.report.findings if f.code == "nccl.nvls_unavailable"]
    assert f.severity == "warning" and "fabric state: not_started" in f.message
    assert any(g.code == "fabric.not_started" for g in found.report.findings)


def test_shm_beside_a_pasted_p2p_matrix_names_the_drivers_verdict(tmp_path):
    ticket = tmp_path / "ticket.txt"
    ticket.write_text(
        (ROOT / "fixtures" / "topo-corpus" / "15_p2p-rw-2x-rtx5090-gns-dr-legend-tabs.txt")
        .read_text(encoding="utf-8") +
        "ws:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init START\n"
        "ws:2:2 [1] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 busId 41000 - Init START\n"
        "ws:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n")
    found = explain_mod.explain([str(ticket)])
    (f,) = [f for f in found.report.findings if f.code == "nccl.p2p_disabled"]
    assert str(f.subject) == "GPU0-GPU1" and "topo -p2p says GNS" in f.message
    assert f.severity == "warning"  # no NVLink: SHM may be all this pair has
