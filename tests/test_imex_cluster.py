"""IMEX on simulated GB200 trays and across a rack's trays (docs/imex.md): the simulator's
``imex`` evidence, its ``imex-down`` and ``imex-one-way`` faults, each tray's check, the
rack's IMEX state and the cross-tray findings of ``nvtopo cluster``."""

from __future__ import annotations

import json

import pytest
from cli_runner import make_runner

from nvtopo import layouts, snapshot
from nvtopo.checks import select_and_run
from nvtopo.cli import app
from nvtopo.commands import cluster
from nvtopo.commands.cluster import imex as cluster_imex
from nvtopo.commands.cluster.imexfacts import ImexView, seconds
from nvtopo.commands.cluster.facts import NodeFacts
from nvtopo.errors import NvtopoError
from nvtopo.simulate import fleet, simulate
from nvtopo.snapshot.document import derive

GB = "gb200-nvl72-tray"
runner = make_runner()


def _imex_codes(path):
    report = select_and_run(snapshot.load(str(path)))
    return [(f.severity, f.code) for f in report.findings if f.code.startswith("imex.")]


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """12 trays of one rack, tray 3's IMEX down and a one-way link 4 -> 9 (a healthy fleet
    is its counterpart: test_a_healthy_fleet_gives_no_imex_finding)."""
    d = tmp_path_factory.mktemp("imex")
    p = fleet.plan(layouts.load(GB), 12, node_faults=["3:imex-down"],
                   fleet_faults=["imex-one-way:4:9"])
    assert len(list(fleet.write(p, str(d)))) == 12
    return d


def test_a_lone_healthy_tray_is_member_0_of_an_up_rack():
    doc = simulate(layouts.load(GB))
    ev = doc["probes"]["imex"]
    assert (ev["status"], ev["args"]) == ("ok", ["-N", "-j"])
    n = derive(doc).imex
    assert (n.domain_state, n.self_index, len(n.members)) == ("UP", 0, 18)
    assert all(set(m.connections.values()) == {"CONNECTED"} for m in n.members)
    assert "imex" not in simulate(layouts.load("dgx-h100"))["probes"]


def test_imex_faults_need_a_multi_node_layout():
    with pytest.raises(NvtopoError, match="no multi-node NVLink domain"):
        simulate(layouts.load("dgx-h100"), ["imex-down"])
    with pytest.raises(NvtopoError, match="no multi-node NVLink domain"):
        fleet.plan(layouts.load("dgx-h100"), 4, fleet_faults=["imex-one-way:0:1"])
    with pytest.raises(NvtopoError, match="one rack"):
        fleet.plan(layouts.load(GB), 40, fleet_faults=["imex-one-way:0:20"])
    with pytest.raises(NvtopoError, match="malformed"):
        simulate(layouts.load(GB), ["imex-down:3"])


def test_imex_down_does_not_hide_a_link_down_on_the_same_tray():
    """Folding never hides a second, independent fault (as tests/test_proof.py proves for the
    other faults)."""
    doc = simulate(layouts.load(GB), ["imex-down", "nvlink-down:GPU1:3"])
    report = select_and_run(derive(doc))
    codes = {(f.severity, f.code) for f in report.findings}
    assert {("error", "imex.domain_not_up"), ("error", "nvlink.link_down")} <= codes


def test_each_tray_finds_its_own_fault(faulty):
    assert _imex_codes(faulty / "node-00003.json") == [("error", "imex.domain_not_up")]
    report = select_and_run(snapshot.load(str(faulty / "node-00000.json")))
    deg = [f for f in report.findings if f.code == "imex.domain_not_up"]
    assert [f.severity for f in deg] == ["warning"]
    assert "1 of 12 member(s) unavailable: node 3 (10.128.1.3)" in deg[0].message
    for end in ("node-00004.json", "node-00009.json"):  # both ends see the one-way link
        assert ("error", "imex.peer_unreachable") in _imex_codes(faulty / end)
    assert ("error", "imex.peer_unreachable") not in _imex_codes(faulty / "node-00005.json")


def test_cluster_finds_the_one_way_link_on_its_rack_and_fills_the_racks(faulty):
    r = cluster.run([str(faulty)], jobs=1)
    imex = [(f.code, str(f.subject), tuple(f.nodes)) for f in r.findings
            if "imex" in f.code]
    rack0 = f"rack {fleet.chassis_serial(0, 0)}"
    assert imex == [("cluster.imex_one_way", rack0, ("node-00004", "node-00009"))]
    doc = cluster.document(r)
    states = [(rk["imex"], rk["imex_views"]) for rk in doc["racks"]]
    assert states == [("DEGRADED", {"DEGRADED": 11, "DOWN": 1})]
    slot = {s["node"]: s["imex"] for rk in doc["racks"] for s in rk["slots"]}
    assert slot["node-00003"] == "DOWN" and slot["node-00004"] == "DEGRADED"


def test_rack_map_shows_the_imex_state(faulty):
    res = runner.invoke(app, ["cluster", str(faulty), "-j", "1", "--format", "rack-map"])
    assert "  IMEX: DEGRADED (trays' views: DEGRADED 11, DOWN 1)" in res.stdout
    assert "| node-00003 |" in res.stdout and "| DOWN     | ok" in res.stdout
    assert "imex_one_way" in res.stdout


def test_a_healthy_fleet_gives_no_imex_finding(tmp_path):
    p = fleet.plan(layouts.load(GB), 3)
    paths = list(fleet.write(p, str(tmp_path)))
    assert all(_imex_codes(x) == [] for x in paths)
    r = cluster.run([str(tmp_path)], jobs=1)
    assert [f.code for f in r.findings if "imex" in f.code] == []
    assert [rk["imex"] for rk in cluster.document(r)["racks"]] == ["UP"]


def _tray(name, slot, state, me, members=("a", "b"), row=(), at=0.0):
    nf = NodeFacts(file=name, name=name)
    nf.platform = [("R1", slot, slot - 1, 1)]
    nf.imex = ImexView(state, me, members, row, at)
    return nf


def test_views_taken_apart_or_at_unknown_times_only_warn():
    """The domain may change between two snapshots: a false error is the worst bug."""
    assert seconds("5/12/2025 06:08:10.580") - seconds("5/12/2025 06:03:10.000") == 300.0
    assert seconds("13/12/2025 06:08:10") == seconds("12/13/2025 06:08:10")
    assert seconds("") is None and seconds("99/99/2025 06:08:10") is None
    now = [_tray("t1", 1, "UP", "a"), _tray("t2", 2, "DEGRADED", "b", at=200.0)]
    assert [f.severity for f in cluster_imex.check(now)] == ["error"]
    apart = [_tray("t1", 1, "UP", "a"), _tray("t2", 2, "DEGRADED", "b", at=900.0)]
    f = cluster_imex.check(apart)
    assert [x.severity for x in f] == ["warning"] and "900 s apart" in f[0].message
    unknown = [_tray("t1", 1, "UP", "a", row=(("b", "DISCONNECTED"),), at=None),
               _tray("t2", 2, "UP", "b")]
    f = cluster_imex.check(unknown)
    assert [(x.code, x.severity) for x in f] == [("cluster.imex_one_way", "warning")]
    assert "not known" in f[0].message


def test_views_that_cannot_both_be_true_are_one_finding():
    up, down = _tray("t1", 1, "UP", "a"), _tray("t2", 2, "DEGRADED", "b")
    found = cluster_imex.check([up, down])
    assert [(f.code, tuple(f.nodes)) for f in found] == [
        ("cluster.imex_views_differ", ("t1", "t2"))]
    # a tray whose own daemon is down beside trays that see it unavailable: consistent
    assert cluster_imex.check([_tray("t1", 1, "DOWN", "a"),
                               _tray("t2", 2, "DEGRADED", "b")]) == []
    other = _tray("t3", 3, "UP", "c", members=("a", "b", "c"))
    found = cluster_imex.check([_tray("t1", 1, "UP", "a"), _tray("t2", 2, "UP", "b"), other])
    assert [(f.code, tuple(f.nodes)) for f in found] == [("cluster.imex_views_differ",
                                                          ("t3",))]


def test_a_link_down_both_ways_is_left_to_each_trays_check():
    a = _tray("t1", 1, "UP", "a", row=(("b", "DISCONNECTED"),))
    b = _tray("t2", 2, "UP", "b", row=(("a", "DISCONNECTED"),))
    assert cluster_imex.check([a, b]) == []
    b1 = _tray("t2", 2, "UP", "b")
    f = cluster_imex.check([a, b1])
    assert [(x.code, x.actual) for x in f] == [("cluster.imex_one_way", "D")]


def test_cluster_json_validates_with_racks(faulty):
    res = runner.invoke(app, ["cluster", str(faulty), "-j", "1", "--format", "json"])
    doc = json.loads(res.stdout)
    assert doc["racks"][0]["imex"] == "DEGRADED"
