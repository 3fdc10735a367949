"""NCCL debug logs (nvtopo/probes/nccl/log.py): what NCCL printed it did, read as facts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_runner import make_runner
from test_hostile_parsers import finishes_within

from nvtopo import snapshot
from nvtopo.cli import app
from nvtopo.model import Topology
from nvtopo.probes import readers
from nvtopo.probes.nccl import log

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "nccl"
TOPO = ROOT / "fixtures" / "topo-corpus" / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"
runner = make_runner()


def healthy() -> str:
    return (FIX / "healthy-2x8-h100-ib.log").read_text(encoding="utf-8")


def test_a_healthy_two_host_log_is_read_as_facts():
    got = log.parse(healthy())
    assert got.version == "2.18.5+cuda12.2"
    assert got.hosts == ["dgx-a01", "dgx-a02"] and got.nranks == 16
    assert [r.rank for r in got.ranks] == list(range(16))
    assert (got.ranks[9].host, got.ranks[9].cuda_dev, got.ranks[9].bus_id) == \
        ("dgx-a02", 1, "2a000")
    assert got.transports() == {"P2P": 28, "NET/IB": 6}
    net = [c for c in got.connections if c.transport == "NET"]
    assert all(c.net == "IB" and c.gdr is True for c in net)
    assert {c.nic for c in net} == {0, 7}
    assert got.networks == ["IB"] and got.nvls is True and got.collnet is None
    assert len(got.gdr) == 16 and all(g.enabled and (g.distance, g.limit) == (3, 4)
                                      for g in got.gdr)
    assert got.env["NCCL_IB_HCA"].startswith("mlx5_0,mlx5_3")
    assert [d.name for d in got.net_devices if d.host == "dgx-a01" and d.net == "IB"][:3] == \
        ["mlx5_0", "mlx5_3", "mlx5_4"]
    assert [(d.name, d.net) for d in got.net_devices if d.net != "IB"] == \
        [("ibp24s0", "Bootstrap")] * 2
    assert got.rings[0].split()[:3] == ["0", "1", "2"] and len(got.trees) == 16
    assert got.events == [] and not got.truncated


@pytest.mark.parametrize("prefix, host", [
    ("", "node1:2049:2118 [3] "), ("0: ", "node1:2049:2118 [3] "),
    ("[1,0]<stdout>:", "node1:2049:2118 [3] "), ("[rank3]:", "node1:2049:2118 [3] "),
    ("", "node1.cluster.local:7:8 [3] misc/socket.cc:484 "), ("", "")])
def test_launcher_prefixes_and_bare_lines_are_read(prefix, host):
    text = (f"{prefix}{host}NCCL INFO Channel 00/0 : 3[3] -> 11[3] [send] via NET/Socket/1\n"
            f"{prefix}{host}NCCL WARN NET/IB : mlx5_2:1 Got async event : port error\n")
    got = log.parse(text)
    want = ("node1.cluster.local" if "cluster" in host else "node1") if host else None
    (conn,) = got.connections
    assert (conn.src, conn.dst, conn.net, conn.nic, conn.gdr, conn.host) == \
        (3, 11, "Socket", 1, False, want)
    (ev,) = got.events
    assert (ev.kind, ev.device, ev.host) == ("async_event", "mlx5_2:1", want)


def test_a_wrapped_line_is_joined_and_a_cut_one_is_skipped():
    text = ("h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via\n"
            "NET/IB/0/GDRDMA\n"
            "h1:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (distance\n"
            "7 > 4)\n"
            "h1:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[")
    got = log.parse(text)
    (conn,) = got.connections
    assert conn.via == "NET/IB/0/GDRDMA" and conn.gdr is True
    (g,) = got.gdr
    assert (g.enabled, g.hca, g.hca_name, g.distance, g.limit) == (False, 0, "mlx5_0", 7, 4)
    assert log.line_numbers(text) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("line, enabled, reason, gpu", [
    ("NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)", False, "no module",
     None),
    ("GPU Direct RDMA Enabled for GPU 1b000 / HCA 2 (distance 4 <= 4), read 0", True, None,
     "1b000"),
    ("NET/IB : GPU Direct RDMA (nvidia-peermem) enabled for HCA 1 'mlx5_1'", True, None, None),
])
def test_gdr_lines_of_each_version(line, enabled, reason, gpu):
    (g,) = log.parse(f"h:1:1 [0] NCCL INFO {line}\n").gdr
    assert (g.enabled, g.reason, g.gpu) == (enabled, reason, gpu)


def test_env_warnings_and_nvls_state():
    text = "\n".join([
        "h:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.",
        "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
        "h:1:1 [0] NCCL INFO NVLS multicast support is not available on dev 0",
        "h:1:1 [0] NCCL INFO NET/IB : No device found.",
        "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]docker0:172.17.0.1<0>",
        "h:1:1 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error "
        "Connection timed out",
        "h:1:1 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error "
        "Connection timed out",
        "h:1:1 [0] NCCL INFO P2P is disabled between connected GPUs 1 and 0. This should not "
        "be the case given their connectivity"])
    got = log.parse(text)
    assert got.env == {"NCCL_P2P_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eth0"}
    assert got.nvls is False
    assert [(e.kind, e.count) for e in got.events] == [
        ("nvls_unavailable", 1), ("ib_missing", 1), ("ibv_error", 2), ("p2p_disabled", 1)]
    assert [(d.name, d.net) for d in got.net_devices] == [("eth0", "Socket"),
                                                           ("docker0", "Socket")]


def test_bounds_cut_and_say_so():
    lines = [f"h:1:1 [0] NCCL INFO Channel {c % 64:02d}/0 : {c}[0] -> {c + 1}[1] via P2P/IPC"
             for c in range(log.MAX_CONNECTIONS + 50)]
    got = log.parse("\n".join(lines))
    assert len(got.connections) == log.MAX_CONNECTIONS and got.truncated


# --- through the registry and the front door -------------------------------------------------


def test_the_registry_recognises_a_log_alone_and_in_a_ticket():
    assert readers.names(healthy()) == ["nccl-log"]
    ticket = "$ nvidia-smi topo -m\n" + TOPO.read_text(encoding="utf-8") + "\n" + healthy()
    assert readers.names(ticket) == ["topo-text", "nccl-log"]
    parts = {p.reader.name: p for p in readers.split(ticket)}
    assert "NCCL INFO" not in parts["topo-text"].text


def test_the_front_door_reads_a_log_and_its_model_round_trips(tmp_path):
    topo = snapshot.load(str(FIX / "healthy-2x8-h100-ib.log"))
    assert topo.origin.kind == "nccl-log" and topo.gpus == []
    back = Topology.from_dict(topo.to_dict())
    assert back.nccl_log == topo.nccl_log
    sys.path.insert(0, str(ROOT / "tests"))
    import schema_check

    schema_check.validate(topo.to_dict(), "model")


def test_a_log_is_not_kept_as_a_snapshot():
    result = runner.invoke(app, ["snapshot", "--from", str(FIX / "healthy-2x8-h100-ib.log")])
    assert result.exit_code == 2 and "NCCL debug log" in result.stderr, result.stderr
    assert "Traceback" not in result.output


# --- fuzzing ---------------------------------------------------------------------------------

_PIECES = st.sampled_from([
    "h:1:2 [0] NCCL INFO ", "NCCL WARN ", "Channel 00/0 : ", "0[0] -> 1[1]", " via ",
    "P2P/CUMEM/read", "NET/IB/0/GDRDMA", "NET/Socket/", "SHM/direct/direct", "\n",
    "GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (distance ", "7 > 4)", "(",
    "comm 0x1 rank 3 nranks 8 cudaDev 3 busId 1b000", "NCCL_IB_HCA set by environment to ",
    "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE", "Got async event : port error",
    "NVLS multicast support is not available", "Trees [0] 1/-1/-1->0->-1", "9999999999",
    "Channel 00/32 :  0 1 2 3", "\x00", "é", " ", "[", "]", ":", "/"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=80))
def test_fuzzed_log_parses_and_round_trips(pieces: List[str]) -> None:
    text = "".join(pieces)
    with finishes_within(10):
        topo = log.derive_text(text)
        log.without_lines(text)
    assert topo.nccl_log is not None
    assert Topology.from_dict(topo.to_dict()).nccl_log == topo.nccl_log


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_cut_healthy_log_never_crashes(data) -> None:
    text = healthy()
    cut = data.draw(st.integers(0, len(text)))
    with finishes_within(10):
        got = log.parse(text[:cut])
    assert got.lines <= 300
