"""nccl-tests tables (nvtopo/probes/nccl/perf.py) and `nccl.busbw_low` against the layout's
`expected_bandwidth` (nvtopo/checks/nccl_perf.py)."""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_runner import make_runner
from test_hostile_parsers import finishes_within

from nvtopo import layouts
from nvtopo.cli import app
from nvtopo.commands import explain as explain_mod
from nvtopo.errors import NvtopoError
from nvtopo.model import Topology
from nvtopo.probes import readers
from nvtopo.probes.nccl import perf

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "nccl"
runner = make_runner()


def text(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


def test_the_current_table_is_read():
    (t,) = perf.parse(text("all-reduce-8xh100-nvls.txt")).tests
    assert (t.name, t.nthread, t.ngpus, len(t.ranks), t.hosts) == \
        ("all_reduce_perf", 1, 1, 8, ["dgx-h100-9603"])
    assert (t.ranks[1].device, t.ranks[1].bus, t.ranks[1].gpu) == (1, "0x0f",
                                                                   "NVIDIA H100 80GB HBM3")
    first, last = t.rows[0], t.rows[-1]
    assert (first.size, first.count, first.type, first.redop, first.root, first.wrong) == \
        (8, 2, "float", "sum", -1, "0")
    assert (last.size, last.busbw, last.ip_busbw) == (8589934592, 479.32, 476.92)
    assert t.peak() is last and t.avg_busbw == 124.2168 and t.out_of_bounds == "0 OK"


def test_the_old_format_with_mpi_prefixes_is_read():
    (t,) = perf.parse(text("all-reduce-8xa100-old-format.txt")).tests
    assert t.name == "all_reduce_perf" and len(t.rows) == 28
    row = t.rows[-1]
    assert (row.root, row.wrong, row.size) == (None, "0e+00", 1073741824)
    assert t.ranks[0].host == "a100-node" and t.ranks[0].gpu == "NVIDIA A100-SXM4-40GB"


def test_two_runs_in_one_paste_and_a_cut_row():
    two = text("all-reduce-8xh100-nvls.txt") + text("all-reduce-8xh100-shm-low.txt")[:-200]
    tests = perf.parse(two).tests
    assert len(tests) == 2 and len(tests[0].rows) == 31
    assert tests[1].avg_busbw is None and 25 <= len(tests[1].rows) < 31


def test_registry_and_ticket_with_a_log():
    assert readers.names(text("all-reduce-8xh100-nvls.txt")) == ["nccl-tests"]
    ticket = text("healthy-1x8-nvls-no-prefix.log") + text("all-reduce-8xh100-nvls.txt")
    assert readers.names(ticket) == ["nccl-tests", "nccl-log"]


def test_a_table_with_its_log_and_node_names_the_bottleneck(tmp_path):
    node = tmp_path / "h100.json"
    assert runner.invoke(app, ["simulate", "dgx-h100", "--hostname", "dgx-h100-9603", "-o",
                               str(node)]).exit_code == 0
    log = tmp_path / "nccl.log"
    log.write_text("".join(
        f"dgx-h100-9603:1:1 [{i}] NCCL INFO comm 0x1 rank {i} nranks 8 cudaDev {i} busId "
        f"{b}000 - Init START\n" for i, b in enumerate(["8", "f", "14", "19"])) +
        "dgx-h100-9603:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct\n")
    found = explain_mod.explain([str(log), str(FIX / "all-reduce-8xh100-shm-low.txt"),
                                 str(node)])
    low = [f for f in found.report.findings if f.code == "nccl.busbw_low"]
    assert [(f.severity, str(f.subject)) for f in low] == [("error", "dgx-h100-9603")]
    assert "of the 480 GB/s dgx-h100 allows" in low[0].message
    assert "nccl.p2p_disabled (GPU0-GPU1)" in low[0].message


@pytest.mark.parametrize("args, code, severity", [
    (["--layout", "dgx-h100"], "nccl.busbw_low", "error"),
    (["--layout", "dgx-a100"], None, None),  # 61 < 80% of 230, an inferred figure: a warning
    (["--layout", "dgx-1-v100"], "nccl.not_checked", "info"),  # states no figure
])
def test_the_layout_given_decides(args, code, severity):
    r = runner.invoke(app, ["explain", "--from", str(FIX / "all-reduce-8xh100-shm-low.txt"),
                            "--format", "json"] + args)
    import json

    doc = json.loads(r.stdout)
    got = [(f["code"], f["severity"]) for f in doc["findings"]]
    if code is None:
        assert got == [("nccl.busbw_low", "warning")]  # the A100 figure is inferred
    else:
        assert got == [(code, severity)]


def test_small_runs_and_other_collectives_are_not_judged():
    (t,) = perf.parse(text("all-reduce-8xh100-shm-low.txt")).tests
    t.rows = [r for r in t.rows if r.size <= 64 * 1024 * 1024]
    topo = Topology(sources=["nccl-tests"])
    topo.nccl_tests = perf.NcclTests(tests=[t])
    from nvtopo.checks import nccl
    from nvtopo.checks.select import given

    (f,) = nccl.check(topo, given(None))
    assert (f.code, f.severity) == ("nccl.not_checked", "info") and "512 MiB" in f.message
    t.name = "all_gather_perf"
    (f,) = nccl.check(topo, given(None))
    assert "all_reduce_perf's bus bandwidth only" in f.message


def test_expected_bandwidth_is_bounded_in_layout_files():
    bad = ('{"schema": 1, "name": "x", "expected_bandwidth": {"nic": {"gbs": 0, '
           '"evidence": "[I]"}}}')
    with pytest.raises(NvtopoError) as err:
        layouts.parse(bad, where="x.json")
    assert "$.expected_bandwidth.nic.gbs" in str(err.value)
    assert layouts.load("dgx-h100").expected_bandwidth.allreduce_busbw.gbs == 480
    assert layouts.load("dgx-a100").expected_bandwidth.inferred("allreduce_busbw")


_PIECES = st.sampled_from([
    "# nThread 1 nGpus 8 minBytes 8\n", "#  Rank  0 Group  0 Pid 1 on h device  0 [0x0f] G\n",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong\n",
    "       size         count      type   redop     time   algbw   busbw  error\n",
    "   8  2  float  sum  -1  42.5  0.00  0.00  0  41.8  0.00  0.00  0\n",
    "[0]   1024  256  half  sum  3.1  0.3  0.6  0e+00  3.0  0.3  0.6  0e+00\n",
    "# Avg bus bandwidth    : 1.5\n", "# Out of bounds values : 0 OK\n", "N/A", "nan", "-1",
    "99999999999999999999", " ", "\n", "\x00", "all_reduce_perf"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=60))
def test_fuzzed_tables_parse_and_round_trip(pieces: List[str]) -> None:
    t = "".join(pieces)
    with finishes_within(10):
        topo = perf.derive_text(t)
        perf.without_tables(t)
    assert Topology.from_dict(topo.to_dict()).nccl_tests == topo.nccl_tests
