"""Family ``events`` (nvtopo/checks/events.py): the findings each kernel log fixture gives
alone (fixtures/kernel/findings.json), the same log joined to a snapshot of its node, one
finding per root cause, and ``check --from LOG --from SNAPSHOT``."""

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from cli_runner import make_runner
from nvtopo import checks, examples, snapshot
from nvtopo.cli import app
from nvtopo.probes import kmsg

KERNEL = Path(__file__).resolve().parent.parent / "fixtures" / "kernel"
FINDINGS: Dict[str, List[str]] = json.loads((KERNEL / "findings.json").read_text("utf-8"))
HEALTHY = ("dmesg-boot-healthy.txt", "real-mlx5-boot-init-active.txt", "real-aer-forms.txt")


def events_of(topo: Any) -> List[str]:
    rep = checks.select_and_run(topo)
    return [f"{f.severity} {f.code} {f.subject}" for f in rep.findings
            if f.code.startswith("events.")]


def with_node(log: str) -> Any:
    with examples.path("dgx-h100-healthy") as p:
        topo = snapshot.load(str(p))
    topo.merge(kmsg.derive_text(log))
    return topo


def test_every_fixture_has_its_findings() -> None:
    files = {p.name for p in KERNEL.iterdir() if p.suffix not in (".md", ".json")}
    assert files == set(FINDINGS)


@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_fixture_findings_alone(name: str) -> None:
    assert events_of(snapshot.load(str(KERNEL / name))) == FINDINGS[name]


@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_logs_stay_quiet(name: str) -> None:
    assert all(f.startswith("info ") for f in FINDINGS[name])


def test_joined_to_the_snapshot_of_its_node() -> None:
    topo = with_node((KERNEL / "dgx-h100-node-events.txt").read_text("utf-8"))
    assert events_of(topo) == [
        "error events.nvlink GPU3 link 11",
        "error events.port_flap mlx5_5 port 1",
        "warning events.aer_corrected bridge 0000:05:01.0 above GPU0 0000:08:00.0, "
        "mlx5_0 0000:09:00.0",
        "warning events.nvme_reset NVMe nvme2 0000:fc:00.0"]
    rep = checks.select_and_run(topo)
    [nv] = [f for f in rep.findings if f.code == "events.nvlink"]
    # the Xid 45s on GPU0 and GPU5 and the Xid 154 are one finding with the Xid 149
    assert "Xid 45 on GPU0 (0000:08:00.0), GPU5 (0000:25:00.0)" in nv.message
    assert "GPU Reset Required (Xid 154)" in nv.message
    assert not [f for f in rep.findings if f.code in ("events.xid", "events.after_unseen")]


def test_a_consequence_without_its_cause_is_a_note() -> None:
    log = "[ 5.0] NVRM: Xid (PCI:0000:19:00): 45, pid=1, name=x, Ch 00000010\n"
    assert events_of(with_node(log)) == ["info events.after_unseen GPU3"]


def test_a_second_independent_fault_is_not_folded() -> None:
    log = ("[ 100.0] NVRM: Xid (PCI:0000:19:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 3 (0x0)\n"
           "[ 100.5] NVRM: Xid (PCI:0000:08:00): 79, pid=1, GPU has fallen off the bus.\n"
           "[ 101.0] NVRM: Xid (PCI:0000:25:00): 45, pid=1, name=x, Ch 00000010\n")
    found = events_of(with_node(log))
    assert found == ["error events.nvlink GPU3 link 3", "error events.off_bus GPU0"]


def test_fatal_aer_before_off_bus_is_one_finding() -> None:
    rep = checks.select_and_run(snapshot.load(str(KERNEL / "dmesg-T-aer-fatal.txt")))
    [f] = [f for f in rep.findings if f.code.startswith("events.")]
    assert f.code == "events.off_bus" and "Transaction Layer" in f.message


def test_a_boot_init_active_and_a_single_bounce() -> None:
    boot = "[ 9.0] mlx5_core 0000:1a:00.0 ibp26s0: Link down\n[ 10.0] mlx5_core 0000:1a:00.0 " \
           "ibp26s0: Link up\n"
    assert events_of(with_node(boot)) == []  # link training at boot
    once = boot.replace("[ 9.0]", "[ 900.0]").replace("[ 10.0]", "[ 910.0]")
    assert events_of(with_node(once)) == ["warning events.port_down mlx5_5 port 1"]
    spread = once + once.replace("[ 900.0]", "[ 9000.0]").replace("[ 910.0]", "[ 9010.0]")
    assert events_of(with_node(spread)) == ["warning events.port_down mlx5_5 port 1"]


def test_an_address_of_no_device_of_the_node_is_named_as_such() -> None:
    log = "[ 300.0] r8169 0000:02:00.0: AER: PCIe Bus Error: severity=Corrected, type=Physical " \
          "Layer, (Receiver ID)\n"
    topo = with_node(log)
    rep = checks.select_and_run(topo)
    [f] = [f for f in rep.findings if f.code.startswith("events.")]
    assert (f.severity, str(f.subject)) == ("info", "0000:02:00.0")
    assert "not a GPU, NIC or drive of the model" in f.message


def test_check_from_a_log_and_its_snapshot(tmp_path: Path) -> None:
    runner = make_runner()
    log = str(KERNEL / "dgx-h100-node-events.txt")
    with examples.path("dgx-h100-healthy") as p:
        r = runner.invoke(app, ["check", "--from", str(p), "--from", log, "--format", "json"])
        assert r.exit_code == 1, r.stderr
        doc = json.loads(r.stdout)
        subjects = {f["subject"] for f in doc["findings"] if f["code"].startswith("events.")}
        assert {"GPU3 link 11", "mlx5_5 port 1"} <= subjects
        r = runner.invoke(app, ["check", "--from", log, "--from", str(p), "--brief"])
        assert r.exit_code == 1 and "GPU3 link 11" in r.stdout
        r = runner.invoke(app, ["check", "--from", str(p), "--from", str(p)])
        assert r.exit_code == 2 and r.stderr.count("\n") == 1
    r = runner.invoke(app, ["check", "--from", log])
    assert r.exit_code == 1 and "GPU 0000:19:00.0 link 11" in r.stdout
    r = runner.invoke(app, ["check", "--from", str(KERNEL / "dmesg-boot-healthy.txt")])
    assert r.exit_code == 0, r.stdout
    # two logs of one node: both read, each root once
    r = runner.invoke(app, ["check", "--from", str(KERNEL / "journal-xid149-nvlink.txt"),
                            "--from", str(KERNEL / "dmesg-xid79.txt"), "--format", "json"])
    codes = sorted(f["code"] for f in json.loads(r.stdout)["findings"]
                   if f["code"].startswith("events."))
    assert codes == ["events.nvlink", "events.off_bus"]


def test_a_ticket_of_q_text_and_dmesg_names_the_gpu() -> None:
    fix = KERNEL.parent / "nvml-text" / "nvidia_smi_q_rtx4090_2gpu_p2_gpu1_x8_gen3.txt"
    log = ("[ 812.0] NVRM: Xid (PCI:0000:25:00): 79, pid=1, name=python, GPU has fallen off "
           "the bus.\n")
    topo = snapshot.load_text(fix.read_text("utf-8") + "\n" + log, "ticket.txt")
    assert events_of(topo) == ["error events.off_bus GPU1"]


def test_a_topo_matrix_without_bus_ids_names_the_address_as_the_log_does() -> None:
    log = ("[ 812.0] NVRM: Xid (PCI:0000:25:00): 79, pid=1, name=python, GPU has fallen off "
           "the bus.\n")
    topo = snapshot.load_text(examples.read("dgx-h100") + "\n" + log, "ticket.txt")
    assert topo.gpus and events_of(topo) == ["error events.off_bus GPU 0000:25:00.0"]


def test_one_gpus_nvlink_errors_close_in_time_are_one_fault() -> None:
    log = ("[ 100.0] NVRM: Xid (PCI:0000:19:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 3 (0x0)\n"
           "[ 100.1] NVRM: Xid (PCI:0000:19:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 4 (0x0)\n"
           "[ 100.2] NVRM: Xid (PCI:0000:19:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 4 (0x0)\n"
           "[ 9000.0] NVRM: Xid (PCI:0000:19:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 7 (0x0)\n")
    topo = with_node(log)
    assert events_of(topo) == ["error events.nvlink GPU3", "error events.nvlink GPU3 link 7"]
    first = next(f for f in checks.select_and_run(topo).findings if f.code == "events.nvlink")
    assert "on GPU3 (0000:19:00.0) links 3, 4 (3 times" in first.message


def test_a_netdev_link_line_and_a_port_line_are_one_port() -> None:
    log = ("[ 900.0] mlx5_core 0000:5e:00.0 ibp94s0: Link down\n"
           "[ 905.0] mlx5_core 0000:5e:00.0 mlx5_0: Port: 1 Link ACTIVE\n"
           "[ 950.0] mlx5_core 0000:5e:00.0 mlx5_0: Port: 1 Link DOWN\n"
           "[ 955.0] mlx5_core 0000:5e:00.0 ibp94s0: Link up\n")
    topo = snapshot.load_text(log, "k.txt")
    assert events_of(topo) == ["error events.port_flap ibp94s0 0000:5e:00.0"]


def test_the_most_events_kept_are_checked_in_linear_time() -> None:
    import time

    lines = []
    for i in range(2500):
        addr = f"{i // 256:04x}:{i % 256:02x}:00"
        lines.append(f"[ {i}.0] NVRM: Xid (PCI:{addr}): 149, NETIR Fatal XC0 i0 Link {i % 18} (0x0)")
        lines.append(f"[ {i}.5] NVRM: Xid (PCI:{addr}): 45, pid=1, name=x, Ch 00000001")
    topo = snapshot.load_text("\n".join(lines) + "\n", "many.txt")
    start = time.perf_counter()
    found = events_of(topo)
    assert len(found) == 2500 and all(f.startswith("error events.nvlink") for f in found)
    assert time.perf_counter() - start < 3.0
