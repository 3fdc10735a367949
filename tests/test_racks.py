"""Racks of GB200/GB300 trays (issue 26): NVML platform info recorded, replayed and decoded
(an optional question: older recordings replay as "not recorded"), trays grouped by chassis
in ``cluster`` (``cluster.rack_slots``, ``cluster.rack_domain_mismatch``) and drawn by
``--format rack-map``."""

from __future__ import annotations

import copy
import functools
import json
import os
from pathlib import Path

import fake_nvml_lib
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import schema_check

from cli_runner import make_runner
from nvtopo import layouts
from nvtopo.commands import cluster
from nvtopo.commands.cluster import racks
from nvtopo.commands.cluster.facts import NodeFacts
from nvtopo.errors import NvtopoError
from nvtopo.probes import nvml
from nvtopo.probes.nvml.decode import platform_facts
from nvtopo.render.racks import rack_map
from nvtopo.cli import app
from test_hostile_parsers import finishes_within  # one hang detector for the suite
from nvtopo.simulate import build, fleet, nvml_record, sources

GB = "gb200-nvl72-tray"
GOLDEN = Path(__file__).parent / "golden_racks"
runner = make_runner()
PLATFORM = {"chassisSerialNumber": "1821325190148", "slotNumber": 7, "trayIndex": 6,
            "hostId": 1, "peerType": 0, "ibGuid": "a088c2000000000000000000000000ff"}


def _tray_desc(platform=PLATFORM):
    m = build(layouts.load(GB), [], seed=3)
    m.fleet = {"platform": dict(platform)} if platform is not None else {}
    return sources.nvml_description(m)


def _gpus(evidence):
    return nvml.derive(evidence).gpus


# --- the probe -------------------------------------------------------------------------


def test_platform_info_recorded_the_same_through_pynvml_and_decoded():
    desc = _tray_desc()
    simulated = nvml_record.record(copy.deepcopy(desc))
    live = fake_nvml_lib.record(copy.deepcopy(desc))
    key = "nvmlDeviceGetPlatformInfo(gpu2)"
    assert simulated["calls"][key] == live["calls"][key]
    assert live["calls"][key]["value"]["struct"] == "c_nvmlPlatformInfo_v2_t"
    assert list(simulated["calls"]) == list(live["calls"])
    plats = [g.nvml.platform for g in _gpus(live)]
    assert [p.module_id for p in plats] == [2, 1, 4, 3]  # as real GB200/GB300 trays print
    p = plats[0]
    assert (p.chassis_serial, p.slot_number, p.tray_index, p.host_id, p.peer_type) == \
        ("1821325190148", 7, 6, 1, 0)
    assert p.ib_guid == "a088c2000000000000000000000000ff"


def test_a_recording_with_a_platform_serial_is_served_back_as_recorded():
    """The fake library serves a recording (a real node's, as the live probe wrote it: the
    serial's 16 bytes as hex) byte for byte: a serial read back as the hex's own ASCII
    digits was the fake's bug, found by the H100's all-zero serial (fixtures/real)."""
    recorded = nvml_record.record(copy.deepcopy(_tray_desc()))
    key = "nvmlDeviceGetPlatformInfo(gpu2)"
    assert recorded["calls"][key]["value"]["chassisSerialNumber"] == \
        b"1821325190148".hex() + "00" * 3
    again = fake_nvml_lib.record({}, calls=recorded["calls"])
    assert again["calls"] == recorded["calls"]
    assert _gpus(again)[2].nvml.platform.chassis_serial == "1821325190148"


def test_a_library_without_the_function_leaves_no_trace():
    """No platform info in the description: the driver lacks the function; neither the
    simulator nor the live capture records the call, and the fact is absent, not noted."""
    desc = _tray_desc(None)
    simulated = nvml_record.record(copy.deepcopy(desc))
    live = fake_nvml_lib.record(copy.deepcopy(desc))
    assert not any(k.startswith("nvmlDeviceGetPlatformInfo") for k in simulated["calls"])
    assert simulated["ncalls"] == live["ncalls"]
    for g in _gpus(simulated):
        assert g.nvml.platform is None and "platform" not in g.nvml.unavailable


def test_an_older_recording_replays_as_not_recorded_even_cut_short():
    ev = nvml_record.record(_tray_desc())
    old = copy.deepcopy(ev)
    old["calls"] = {k: v for k, v in ev["calls"].items()
                    if not k.startswith("nvmlDeviceGetPlatformInfo")}
    gpus = _gpus(old)
    assert [g.nvml.platform for g in gpus] == [None] * 4
    assert all("platform" not in g.nvml.unavailable for g in gpus)
    full = _gpus(ev)
    assert [g.nvml.nvlink.active for g in gpus] == [g.nvml.nvlink.active for g in full]
    # a recording cut short (timeout) stops where its calls end, not at the platform call
    keys = list(old["calls"])
    cut = dict(old, status="timeout", calls={k: old["calls"][k] for k in keys[:40]})
    topo = nvml.derive(cut)
    assert topo.nvml.incomplete is not None
    assert not topo.nvml.incomplete.call.startswith("nvmlDeviceGetPlatformInfo")


def test_a_live_probe_that_hung_on_the_platform_call_replays_stopping_there():
    ev = nvml_record.record(_tray_desc())
    key = "nvmlDeviceGetPlatformInfo(gpu1)"
    keys = list(ev["calls"])
    cut = dict(ev, status="timeout", pending={"call": key, "gpu": 1, "waited_s": 10.0},
               calls={k: ev["calls"][k] for k in keys[:keys.index(key)]})
    topo = nvml.derive(cut)
    assert (topo.nvml.incomplete.call, topo.nvml.incomplete.gpu) == (key, 1)
    assert topo.gpus[0].nvml.platform.module_id == 2 and topo.gpus[1].nvml.platform is None


def test_not_supported_is_unavailable_and_bad_values_are_refused():
    ev = nvml_record.record(_tray_desc())
    ev["calls"]["nvmlDeviceGetPlatformInfo(gpu0)"] = {"error": "NotSupported", "code": 3}
    ev["calls"]["nvmlDeviceGetPlatformInfo(gpu1)"] = {"value": {"slotNumber": 999}}
    g0, g1 = _gpus(ev)[:2]
    assert g0.nvml.platform is None and g0.nvml.unavailable["platform"] == "not_supported"
    assert g1.nvml.platform is None and g1.nvml.unavailable["platform"] == "bad_value"


def test_v1_struct_and_unprintable_serials_decode():
    v1 = platform_facts({"struct": "c_nvmlPlatformInfo_v1_t", "rackGuid": "ab" * 16,
                         "chassisPhysicalSlotNumber": 3, "computeSlotIndex": 2,
                         "nodeIndex": 1, "peerType": 0, "moduleId": 4, "ibGuid": "0" * 32})
    assert (v1.chassis_serial, v1.slot_number, v1.tray_index, v1.host_id, v1.module_id,
            v1.ib_guid) == ("ab" * 16, 3, 2, 1, 4, None)
    zero = platform_facts({"chassisSerialNumber": "0" * 32, "slotNumber": 1})
    assert zero.chassis_serial is None and zero.slot_number == 1
    text = platform_facts({"chassisSerialNumber": b"SN-1".hex() + "00" * 12})
    assert text.chassis_serial == "SN-1"


# --- simulated fleets -------------------------------------------------------------------


def _fleet(directory, nodes, faults=()):
    p = fleet.plan(layouts.load(GB), nodes, fleet_faults=list(faults))
    return list(fleet.write(p, str(directory)))


#: every rack fault in rack 0; rack 1 (nodes 18-35) is the healthy counterpart
FAULTS = ("rack-slot:5:7", "missing-tray:12", "outside-domain:3")


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    d = tmp_path_factory.mktemp("racks")
    written = _fleet(d, 36, FAULTS)
    assert len(written) == 35
    assert not os.path.exists(os.path.join(str(d), "node-00012.json"))
    return d


def test_each_rack_fault_is_found_on_its_trays_and_the_healthy_rack_is_clean(faulty):
    r = cluster.run([str(faulty)], jobs=1)
    found = sorted((f.severity, f.code, str(f.subject), tuple(f.nodes))
                   for f in r.findings if f.code.startswith("cluster.rack_"))
    rack0 = f"rack {fleet.chassis_serial(0, 0)}"
    assert found[0] == ("error", "cluster.rack_domain_mismatch", rack0, ("node-00003",))
    assert found[1] == ("error", "cluster.rack_slots", rack0, ("node-00005", "node-00006"))
    assert found[2][:3] == ("warning", "cluster.rack_slots", rack0)
    assert len(found) == 3  # nothing about rack 1
    short = [f for f in r.findings if f.code == "cluster.rack_slots" and f.severity == "warning"]
    assert short[0].message.endswith("17 of 18 trays; empty slot(s): 6, 13")
    assert (short[0].expected, short[0].actual) == (18, 17)
    assert not any(n >= "node-00018" for f in r.findings for n in f.nodes)
    doc = cluster.document(r)
    healthy = doc["racks"][1]
    assert healthy["chassis_serial"] == fleet.chassis_serial(0, 1) and healthy["trays"] == 18
    assert [s["slot"] for s in healthy["slots"]] == list(range(1, 19))
    assert len({s["domain"] for s in healthy["slots"]}) == 1
    assert r.exit_status() == 1


def run_cli(args):
    return runner.invoke(app, args)


def test_rack_map_golden(faulty):
    res = run_cli(["cluster", str(faulty), "-j", "1", "--format", "rack-map"])
    assert res.exit_code == 1
    path = GOLDEN / "rack-map-faults.txt"
    if os.environ.get("NVTOPO_UPDATE_RACKS"):
        path.write_text(res.stdout, encoding="utf-8")
    assert res.stdout == path.read_text(encoding="utf-8")
    assert "|   13 |    - |    - | (empty)" in res.stdout
    assert "|    4 |    3 |    1 | node-00003 | 5d3d3428 | UP   | rack_domain_mismatch" \
        in res.stdout
    assert res.stdout.isascii()


def test_rack_map_escapes_names_and_lists_nodes_in_no_rack():
    a = NodeFacts(file="a", name="tray\x1b[31m-\u00e9", layout=GB,
                  platform=[("SN\u202e1", 1, 0, 1)])
    b = NodeFacts(file="b", name="plain", layout="dgx-h100")
    r = cluster.ClusterResult(nodes=[a, b])
    r.findings = cluster.evaluate(r.nodes)
    text = rack_map(cluster.document(r))
    assert text.isascii()
    assert "RACK SN\\u202e1: 1 of 18 trays reporting" in text
    assert "tray\\x1b[31m-\\xe9" in text
    assert "1 node(s) in no rack (no platform info): plain" in text


def test_the_table_counts_the_racks(faulty):
    res = run_cli(["cluster", str(faulty), "-j", "1"])
    assert "2 rack(s) by chassis serial (NVML platform info)" in " ".join(res.stdout.split())


def test_a_trays_snapshot_and_model_follow_their_schemas(faulty):
    doc = json.loads((faulty / "node-00005.json").read_text(encoding="utf-8"))
    schema_check.validate(doc, "snapshot", "a simulated tray's snapshot")
    res = run_cli(["show", "--from", str(faulty / "node-00005.json"), "--format", "json"])
    model = json.loads(res.stdout)  # (the runner validates it against model.schema.json)
    schema_check.validate(model, "model", "a simulated tray's model")
    plat = model["gpus"][3]["extra"]["nvml"]["platform"]
    assert (plat["slot_number"], plat["module_id"]) == (7, 3)  # the rack-slot fault; GPU3 is module 3
    bad = copy.deepcopy(model)
    bad["gpus"][0]["extra"]["nvml"]["platform"]["slot_number"] = "7"
    assert schema_check.problems(bad, "model")


def test_rack_faults_need_a_rack_layout():
    with pytest.raises(NvtopoError, match="no multi-node NVLink domain"):
        fleet.plan(layouts.load("dgx-h100"), 4, fleet_faults=["rack-slot:1:2"])
    with pytest.raises(NvtopoError, match="slot"):
        fleet.plan(layouts.load(GB), 4, fleet_faults=["rack-slot:1:x"])


def test_cluster_json_lists_racks_only_where_known(faulty, tmp_path):
    doc = json.loads(run_cli(["cluster", str(faulty), "-j", "1", "--format", "json"]).stdout)
    assert [len(r["slots"]) for r in doc["racks"]] == [17, 18]
    assert all(r["imex"] == "UP" for r in doc["racks"])  # every tray's IMEX view: UP
    list(fleet.write(fleet.plan(layouts.load("dgx-h100"), 2), str(tmp_path)))
    plain = json.loads(run_cli(["cluster", str(tmp_path), "-j", "1", "--format",
                                "json"]).stdout)
    assert "racks" not in plain
    assert racks.racks([]) == {}


# --- damaged recordings ---------------------------------------------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70)
                     | st.floats(allow_nan=True) | st.text(max_size=40),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
_MEMBERS = st.sampled_from(["chassisSerialNumber", "rackGuid", "ibGuid", "slotNumber",
                            "trayIndex", "hostId", "peerType", "moduleId",
                            "chassisPhysicalSlotNumber", "computeSlotIndex", "nodeIndex",
                            "struct"])


@functools.lru_cache(maxsize=1)
def _recording():
    return nvml_record.record(_tray_desc())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_JSON, st.dictionaries(_MEMBERS, _JSON | st.text(alphabet="0123456789abcdef",
                                                                   min_size=32, max_size=32),
                                        max_size=8)))
def test_fuzz_a_damaged_platform_answer_is_unknown_or_well_typed(value):
    ev = copy.deepcopy(_recording())
    ev["calls"]["nvmlDeviceGetPlatformInfo(gpu0)"] = {"value": value}
    with finishes_within(10):
        g = nvml.derive(ev).gpus[0].nvml
    p = g.platform
    if p is None:
        assert g.unavailable["platform"] == "bad_value"  # refused by its check, and noted
        return
    assert p.chassis_serial is None or (isinstance(p.chassis_serial, str)
                                        and 0 < len(p.chassis_serial) <= 32)
    for v in (p.slot_number, p.tray_index, p.host_id, p.peer_type, p.module_id):
        assert v is None or (isinstance(v, int) and 0 <= v <= 255)
