"""Damaged NVML evidence: every recorded value of real recordings, set to a wrong type or
range one at a time, must give a model (the fact unknown, with a note) or one NvtopoError,
never another exception, for derive and for the `links` rendering."""

import copy
import io
import json
import re
import time

import pytest
from rich.console import Console

import nvml_fake as F
from nvtopo import snapshot
from nvtopo.errors import NvtopoError
from nvtopo.probes import nvml
from nvtopo.render import links as render_links

WRONG = {"str": "x", "list": [1], "dict": {"a": 1}, "none": None, "huge": 10**30,
         "negative": -7, "bool": True, "float": 2.5, "nan": float("nan")}


def _function_path(name):
    """The machine with no per-link fields and no field 91: every per-link function path."""
    desc = F.load_machine(name)
    desc["gpu_defaults"]["nvlink"].update(link_fields=False, count_field=False)
    return desc


def _two_gpus(name):
    """The first two GPUs of a machine (same code paths, a quarter of the P2P pairs)."""
    desc = F.load_machine(name)
    desc["gpus"] = desc["gpus"][:2]
    return desc


@pytest.fixture(scope="module")
def recordings():
    return {"h100-pcie-bridge": F.record("h100-pcie-bridge"),
            "h100-pcie-bridge/functions": F.record(_function_path("h100-pcie-bridge")),
            "consumer-no-nvlink": F.record("consumer-no-nvlink"),
            "dgx-h100/2": F.record(_two_gpus("dgx-h100"))}


def check_doc(doc):
    """The types print_links relies on (so a rendered table cannot fail on them)."""
    json.dumps(doc)
    for g in doc["gpus"]:
        assert isinstance(g["index"], int) and isinstance(g["total"], int)
        assert g["name"] is None or isinstance(g["name"], str)
        assert g["bandwidth_gbps_per_direction"] is None or isinstance(
            g["bandwidth_gbps_per_direction"], (int, float))
        assert g["fault"] is None or isinstance(g["fault"].get("message"), str)
        for lk in g["links"]:
            assert isinstance(lk["link"], int) and isinstance(lk["state"], str)
            assert lk["version"] is None or isinstance(lk["version"], str)
            assert lk["speed_mbps"] is None or (isinstance(lk["speed_mbps"], (int, float))
                                                and not isinstance(lk["speed_mbps"], bool))
            r = lk["remote"]
            assert r["gpu_index"] is None or isinstance(r["gpu_index"], int)
            assert r["link"] is None or isinstance(r["link"], int)
            assert r["pci_bus_id"] is None or isinstance(r["pci_bus_id"], str)
            assert all(v is None or isinstance(v, int) for v in lk["errors"].values())
    for p in doc["pairs"]:
        assert isinstance(p["count"], int) and p["count"] > 0


def derive_and_render(ev, table=False):
    """derive + links (document, and the Rich table when asked); NvtopoError is the one
    allowed failure, and it is one line."""
    try:
        topo = nvml.derive(ev)
        doc = render_links.links_doc(topo)
    except NvtopoError as exc:
        assert str(exc).count("\n") == 0
        return None
    check_doc(doc)
    if table:
        render_links.print_links(render_links.links_doc(topo, gpu=doc["gpus"][0]["index"]),
                                 Console(file=io.StringIO(), width=120))
    return topo


def damaged(rec, wrongs):
    """Damaged variants of one record: its value (and each struct member or list item) set
    to each wrong value; its error name of the wrong type; not a record at all."""
    for wrong in wrongs:
        yield {"value": wrong}
    for wrong in (WRONG["str"], WRONG["list"], WRONG["huge"], WRONG["negative"]):
        if isinstance(rec.get("value"), dict):
            for member in rec["value"]:
                yield {"value": dict(rec["value"], **{member: wrong})}
        if isinstance(rec.get("value"), list) and rec["value"]:
            yield {"value": [wrong] + rec["value"][1:]}
    if "error" in rec:
        for wrong in (3, [1], None):
            yield dict(rec, error=wrong)
    yield "not a record"


def shape(key):
    """A key's kind: the function, plus the field id for field values."""
    m = re.match(r"nvmlDeviceGetFieldValues\(gpu\d+,(\d+):", key)
    return f"field {m.group(1)}" if m else key.split("(")[0]


@pytest.mark.parametrize("machine", ["h100-pcie-bridge", "h100-pcie-bridge/functions",
                                     "consumer-no-nvlink"])
def test_every_recorded_value_damaged_never_crashes(recordings, machine):
    """Every recorded value, one at a time, set to a wrong value (cycling through them)."""
    ev = recordings[machine]
    wrongs = list(WRONG.values())
    for n, (key, rec) in enumerate(ev["calls"].items()):
        variant = {"value": wrongs[n % len(wrongs)]}
        derive_and_render(dict(ev, calls=dict(ev["calls"], **{key: variant})))


@pytest.mark.parametrize("machine", ["h100-pcie-bridge", "h100-pcie-bridge/functions",
                                     "consumer-no-nvlink", "dgx-h100/2"])
def test_every_kind_of_recorded_value_damaged_every_way_never_crashes(recordings, machine):
    """One key of each kind (function / field id), every damage, members of structs too."""
    ev = recordings[machine]
    seen = set()
    for key, rec in ev["calls"].items():
        if shape(key) in seen or not isinstance(rec, dict):
            continue
        seen.add(shape(key))
        for n, variant in enumerate(damaged(rec, WRONG.values())):
            derive_and_render(dict(ev, calls=dict(ev["calls"], **{key: variant})),
                              table=(n == 0))
    assert len(seen) > (10 if machine == "consumer-no-nvlink" else 30)


@pytest.mark.parametrize("field", ["status", "pending", "error", "ncalls", "duration_s",
                                   "calls", "timeout_s", "evidence_version"])
@pytest.mark.parametrize("wrong", list(WRONG), ids=list(WRONG))
def test_damaged_evidence_fields_never_crash(recordings, field, wrong):
    ev = dict(recordings["h100-pcie-bridge"], **{field: WRONG[wrong]})
    derive_and_render(ev)
    derive_and_render(dict(ev, status="timeout"))


def test_bad_values_are_unknown_facts_with_a_note_naming_the_call(recordings):
    ev = copy.deepcopy(recordings["h100-pcie-bridge"])
    calls = ev["calls"]
    calls["nvmlDeviceGetFieldValues(gpu0,164:0)"] = {"value": "fast"}
    calls["nvmlDeviceGetFieldValues(gpu0,165:1)"] = {"value": [1]}
    calls["nvmlDeviceGetNvLinkRemoteDeviceType(gpu0,2)"] = {"value": [2]}
    calls["nvmlDeviceGetArchitecture(gpu1)"] = {"value": [9]}
    calls["nvmlDeviceGetGpuFabricInfoV(gpu1)"] = {"value": {"state": 3, "clusterUuid": 5}}
    calls["nvmlDeviceGetP2PStatus(gpu0,gpu1,0)"] = {"value": [0]}
    calls["nvmlDeviceGetTopologyCommonAncestor(gpu0,gpu1)"] = {"value": [40]}
    topo = nvml.derive(ev)
    nv = topo.gpu(0).nvml.to_dict()["nvlink"]
    assert nv["links"][0]["speed_mbps"] is None and nv["links"][0]["state"] == "active"
    assert (nv["links"][1]["state"], nv["links"][1]["rule"]) == ("unknown", "bad_value")
    assert nv["links"][2]["remote"]["type"] == "unknown"
    g1 = topo.gpu(1).nvml.to_dict()
    assert g1["architecture"] is None and g1["unavailable"]["architecture"] == "bad_value"
    assert g1["fabric"] is None and g1["unavailable"]["fabric"] == "bad_value"
    assert topo.nvml.to_dict()["p2p"]["read"]["cells"][0][1] is None
    notes = [n for n in topo.notes if n.code == "nvml.bad_value"]
    assert len(notes) == 7
    assert all(n.level == "warning" for n in notes)
    assert any("nvmlDeviceGetFieldValues(gpu0,164:0) is recorded as 'fast'" in n.message
               for n in notes)
    assert {n.subject for n in notes} == {"GPU0", "GPU1"}


@pytest.mark.parametrize("value", ["eight", [1], 2.5, -3, 10**7, None, True])
def test_impossible_gpu_count_is_a_corrupt_snapshot(recordings, value, tmp_path):
    ev = copy.deepcopy(recordings["h100-pcie-bridge"])
    ev["calls"]["nvmlDeviceGetCount()"] = {"value": value}
    with pytest.raises(NvtopoError, match=r"^corrupt snapshot: nvml evidence: "
                                          r"nvmlDeviceGetCount\(\) is recorded as"):
        nvml.derive(ev)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"kind": "nvtopo-snapshot", "schema_version": 1,
                                "probes": {"nvml": ev}}))
    with pytest.raises(NvtopoError, match="corrupt snapshot: nvml evidence"):
        snapshot.load(str(path))


def test_huge_link_count_is_bounded_not_a_hang(recordings):
    ev = copy.deepcopy(recordings["h100-pcie-bridge"])
    ev["calls"]["nvmlDeviceGetFieldValues(gpu0,91:0)"] = {"value": 10**7}
    started = time.monotonic()
    topo = nvml.derive(ev)
    assert time.monotonic() - started < 10  # a hang detector: not ten million links
    nv = topo.gpu(0).nvml.to_dict()["nvlink"]
    assert nv["status"] == "unknown" and nv["links"] == []
    assert topo.nvml.to_dict()["nvlink_pairs"][0]["count"] is None  # unknown, not "none"
    assert topo.nvlinks == []
    assert topo.matrix is None or topo.matrix.get("GPU0", "GPU1") is None
    assert "nvml.bad_value" in [n.code for n in topo.notes]


@pytest.mark.parametrize("calls", [[], "x", None, 5])
def test_unusable_recording_is_a_corrupt_snapshot(recordings, calls):
    ev = dict(recordings["h100-pcie-bridge"], calls=calls)
    with pytest.raises(NvtopoError, match="corrupt snapshot: nvml evidence: \"calls\""):
        nvml.derive(ev)


def test_timeout_with_a_pending_that_is_not_a_call(recordings):
    ev = dict(recordings["h100-pcie-bridge"], status="timeout", pending="x")
    topo = nvml.derive(ev)
    assert topo.nvml.to_dict()["incomplete"] == {"call": None, "gpu": None}
    codes = [n.code for n in topo.notes]
    assert "nvml.bad_value" in codes and "nvml.timeout" in codes
    assert "did not answer None" not in " ".join(n.message for n in topo.notes)
    out = io.StringIO()
    render_links.print_links(render_links.links_doc(topo), Console(file=out, width=120))
    assert "incomplete: the NVML probe did not finish before the deadline" in out.getvalue()
