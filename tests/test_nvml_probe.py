"""The NVML probe, driven only through the fake NVML C library (real pynvml wrappers)."""

import ctypes
import json
import subprocess
import sys

import pynvml
import pytest

import nvml_fake as F
from nvtopo import snapshot
from nvtopo.probes import ProbeOptions, nvml


@pytest.fixture
def probe(monkeypatch):
    """Run the live probe against a fixture machine; pynvml is reset afterwards."""
    libs = []

    def run(machine, timeout=10.0, **kw):
        desc = F.load_machine(machine) if isinstance(machine, str) else machine
        if desc.get("library") == "missing":
            def no_library(*a, **k):
                raise OSError("libnvidia-ml.so.1: cannot open shared object file")
            monkeypatch.setattr(pynvml, "CDLL", no_library)
            F.install(None)
            lib = None
        else:
            lib = F.machine_fake(desc, **kw)
            libs.append(lib)
            F.install(lib)
        ev = nvml.capture(ProbeOptions(timeout=timeout))
        ev = json.loads(json.dumps(ev))  # what a snapshot file keeps
        return ev, nvml.derive(ev), lib

    yield run
    for lib in libs:
        lib.release()
    F.reset_pynvml()


def links(topo, i):
    return topo.gpu(i).nvml.to_dict()["nvlink"]


def pairs(topo):
    return {(p.a, p.b): p.count for p in topo.nvlinks}


ALL = [m for m in F.machines()]


@pytest.mark.parametrize("machine", ALL)
def test_every_recording_probes_without_crash_and_replays_exactly(probe, machine):
    ev, topo, lib = probe(machine)
    assert ev["status"] in ("ok", "unavailable")
    if lib is not None:
        assert lib.misses == [], "the probe asked something the fixture does not describe"
        # The recording is the fake: replaying the evidence asks and answers the same.
        replay = F.FakeNvmlLib(ev["calls"], lose=F.load_machine(machine).get("lose"))
        F.install(replay)
        again = nvml.capture(ProbeOptions(timeout=10))
        F.reset_pynvml()
        assert replay.misses == []
        assert json.loads(json.dumps(again["calls"])) == ev["calls"]
        assert again["ncalls"] == ev["ncalls"]
    # What each recording must derive to, stated from its machine description.
    assert summary(topo) == EXPECT[machine]


#: Per recording: (active, total) links per GPU, {NV count: pairs}, note codes.
EXPECT = {
    "consumer-no-nvlink": {"links": [(0, 0)] * 2, "pairs": {}, "notes": []},
    "dgx-a100": {"links": [(12, 12)] * 8, "pairs": {12: 28}, "notes": []},
    "dgx-a100-mig": {"links": [(0, 12)] + [(12, 12)] * 7, "pairs": {12: 21}, "notes": []},
    "dgx-h100": {"links": [(18, 18)] * 8, "pairs": {18: 28}, "notes": []},
    # GPU5's link states were answered (field batch) before it was lost; its pairs unknown
    "dgx-h100-gpu-lost": {"links": [(18, 18)] * 8, "pairs": {18: 21},
                          "notes": ["nvml.gpu_lost"]},
    "dgx-h100-link-down": {"links": [(18, 18)] * 3 + [(17, 18)] + [(18, 18)] * 4,
                           "pairs": {17: 7, 18: 21}, "notes": []},
    "dgx1-v100": {"links": [(6, 6)] * 8, "pairs": {1: 8, 2: 8}, "notes": []},
    "driver-not-loaded": {"links": [], "pairs": {}, "notes": ["nvml.unavailable"]},
    "gh200-4": {"links": [(18, 18)] * 4, "pairs": {6: 6}, "notes": []},
    # C2C faults leave the NVLinks between the GPUs as they are
    "gh200-4-c2c-degraded": {"links": [(18, 18)] * 4, "pairs": {6: 6}, "notes": []},
    "h100-pcie-bridge": {"links": [(12, 18)] * 2, "pairs": {12: 1}, "notes": []},
    "no-nvml": {"links": [], "pairs": {}, "notes": ["nvml.unavailable"]},
}


def summary(topo):
    nv = [topo.gpu(g.index).nvml.to_dict()["nvlink"] for g in topo.gpus]
    counts = {}
    for p in topo.nvlinks:
        counts[p.count] = counts.get(p.count, 0) + 1
    return {"links": [(x["active"], x["total"]) for x in nv], "pairs": counts,
            "notes": [n.code for n in topo.notes]}


def test_dgx_h100_nvswitch_all_to_all_and_fabric(probe):
    ev, topo, _ = probe("dgx-h100")
    assert len(topo.gpus) == 8
    g0 = topo.gpu(0)
    assert (g0.name, g0.uuid, g0.pci_bus_id) == (
        "NVIDIA H100 80GB HBM3", "GPU-01b2c3d4-0000-4000-8000-000000000000", "00000000:1B:00.0")
    assert g0.sources["pci_bus_id"] == "nvml"
    assert (g0.cpu_affinity, g0.numa_affinity, g0.gpu_numa_id) == ("0-55,112-167", "0", None)
    assert topo.gpu(4).cpu_affinity == "56-111,168-223"
    nv = links(topo, 0)
    assert (nv["active"], nv["total"], nv["status"]) == (18, 18, "ok")
    assert {lk["state"] for lk in nv["links"]} == {"active"}
    assert {lk["version"] for lk in nv["links"]} == {"4.0"}
    assert nv["links"][0]["remote"] == {"type": "nvswitch", "gpu_index": None,
                                        "pci_bus_id": "00000000:07:00.0", "link": 0}
    assert nv["bandwidth_gbps_per_direction"] == pytest.approx(18 * 26.562)
    per_switch = topo.nvml.to_dict()["switches"]
    assert {bid: per["0"] for bid, per in per_switch.items()} == {
        "00000000:05:00.0": 4, "00000000:06:00.0": 5, "00000000:07:00.0": 5,
        "00000000:08:00.0": 4}
    assert pairs(topo) == {(a, b): 18 for a in range(8) for b in range(a + 1, 8)}
    assert all(p["rule"] == "nvswitch_min" for p in topo.nvml.to_dict()["nvlink_pairs"])
    assert topo.matrix.source == "nvml"
    assert topo.matrix.get("GPU0", "GPU7") == "NV18"
    fab = g0.nvml.to_dict()["fabric"]
    assert fab["state"] == "completed" and fab["status"] == "success"
    assert fab["cluster_uuid"] == "7d3f1e0b-9a2c-4d5e-8f60-718293a4b5c6"
    assert fab["clique_id"] == 32766 and fab["health_summary"] == "healthy"
    assert fab["attached"] and fab["healthy"]
    assert fab["health"]["degraded_bandwidth"] is False
    assert fab["health"]["incorrect_configuration"] == "none"
    p2p = topo.nvml.to_dict()["p2p"]
    assert p2p["read"]["cells"][0][1] == "OK" and p2p["nvlink"]["cells"][3][6] == "OK"
    pcie = g0.nvml.to_dict()["pcie"]
    assert (pcie["max_gen"], pcie["max_width"], pcie["replay_counter"]) == (5, 16, 0)
    assert g0.nvml.to_dict()["architecture"] == "hopper"
    assert g0.nvml.to_dict()["compute_capability"] == "9.0"
    assert g0.nvml.to_dict()["mig"] == {"current": False, "pending": False}
    assert topo.disagreements == [] and topo.notes == []
    # Field values were batched: one call per GPU for 7 fields x 18 links.
    assert "nvmlDeviceGetFieldValues(gpu0,165:17)" in ev["calls"]
    assert "nvmlDeviceGetNvLinkState(gpu0,0)" not in ev["calls"]


def test_dgx_a100_twelve_links_nvlink3_no_fabric(probe):
    _, topo, _ = probe("dgx-a100")
    assert pairs(topo) == {(a, b): 12 for a in range(8) for b in range(a + 1, 8)}
    nv = links(topo, 5)
    assert (nv["active"], nv["total"]) == (12, 12)
    assert {lk["version"] for lk in nv["links"]} == {"3.1"}  # enum 5 is NVLink 3.1, not 5
    assert {lk["remote"]["type"] for lk in nv["links"]} == {"nvswitch"}
    g = topo.gpu(0).nvml.to_dict()
    assert g["fabric"] is None and g["unavailable"]["fabric"] == "not_supported"
    assert topo.gpu(2).numa_affinity == "1"


DGX1_MATRIX = """\
X   NV1 NV1 NV2 NV2 SYS SYS SYS
NV1 X   NV2 NV1 SYS NV2 SYS SYS
NV1 NV2 X   NV2 SYS SYS NV1 SYS
NV2 NV1 NV2 X   SYS SYS SYS NV1
NV2 SYS SYS SYS X   NV1 NV1 NV2
SYS NV2 SYS SYS NV1 X   NV2 NV1
SYS SYS NV1 SYS NV1 NV2 X   NV2
SYS SYS SYS NV1 NV2 NV1 NV2 X"""


def test_dgx1_v100_direct_links_hybrid_cube_mesh(probe):
    ev, topo, _ = probe("dgx1-v100")
    assert [row for row in topo.matrix.cells] == [r.split() for r in DGX1_MATRIX.splitlines()]
    nv = links(topo, 0)
    assert (nv["active"], nv["total"]) == (6, 6)
    remotes = sorted(lk["remote"]["gpu_index"] for lk in nv["links"])
    assert remotes == [1, 2, 3, 3, 4, 4]
    assert all(lk["remote"]["type"] == "gpu" for lk in nv["links"])
    assert all(lk["version"] == "2.0" for lk in nv["links"])
    # Old driver: per-link fields NotSupported, so the per-link functions answered.
    assert ev["calls"]["nvmlDeviceGetFieldValues(gpu0,165:0)"]["error"] == "NotSupported"
    assert ev["calls"]["nvmlDeviceGetNvLinkState(gpu0,0)"] == {"value": 1}
    assert ev["calls"]["nvmlDeviceGetNvLinkErrorCounter(gpu0,0,0)"] == {"value": 0}
    assert all(p["rule"] == "direct" for p in topo.nvml.to_dict()["nvlink_pairs"] if p["count"])
    assert topo.nvml.to_dict()["nvswitch"] is False


def test_h100_pcie_bridge_partial_links_are_inactive_by_design(probe):
    _, topo, _ = probe("h100-pcie-bridge")
    assert pairs(topo) == {(0, 1): 12}
    nv = links(topo, 0)
    assert (nv["active"], nv["total"]) == (12, 18)
    inactive = [lk["link"] for lk in nv["links"] if lk["state"] == "inactive"]
    assert inactive == [4, 5, 10, 11, 16, 17]
    assert {lk["rule"] for lk in nv["links"] if lk["state"] == "inactive"} == {"bridge"}
    assert not any(lk["state"] == "down" for lk in nv["links"])
    l6 = nv["links"][6]
    assert l6["remote"] == {"type": "gpu", "gpu_index": 1, "pci_bus_id": "00000000:D5:00.0",
                            "link": 6}
    fab = topo.gpu(0).nvml.to_dict()["fabric"]
    assert fab["state"] == "not_supported" and fab["attached"] is False


def test_consumer_gpu_without_nvlink_is_not_supported_not_down(probe):
    ev, topo, _ = probe("consumer-no-nvlink")
    for i in (0, 1):
        nv = links(topo, i)
        assert nv["status"] == "not_supported" and nv["total"] == 0 and nv["links"] == []
        assert topo.gpu(i).nvml.to_dict()["unavailable"]["serial"] == "not_supported"
        assert topo.gpu(i).nvml.to_dict()["mig"] is None
    # Field 91 unanswered: the probe asked link 0 and stopped at NotSupported.
    assert ev["calls"]["nvmlDeviceGetNvLinkState(gpu0,0)"]["error"] == "NotSupported"
    assert "nvmlDeviceGetNvLinkState(gpu0,1)" not in ev["calls"]
    assert topo.nvlinks == []
    assert topo.matrix.get("GPU0", "GPU1") == "PHB"
    assert topo.nvml.to_dict()["p2p"]["read"]["cells"][0][1] == "GNS"


@pytest.mark.parametrize("machine, at, status", [
    # field 91 unanswered: lost while the probe walks the links' states
    ("consumer-no-nvlink", "nvmlDeviceGetNvLinkState(gpu0,0)", "gpu_lost"),
    # lost at the first field batch: the NVLink section was never reached
    ("dgx-h100", "nvmlDeviceGetFieldValues(gpu0)", "unknown"),
])
def test_gpu_lost_before_its_link_count_reads_back(probe, machine, at, status):
    # mypy found it: the NVLink status stayed None (null), which the model's own reader
    # refuses (status is text), so such a node's snapshot could not be read back
    desc = F.load_machine(machine)
    desc["lose"] = {"gpu": 0, "at": at}
    ev, topo, _ = probe(desc)
    g0 = topo.gpu(0).nvml.to_dict()
    assert g0["fault"]["kind"] == "lost"
    assert g0["fault"]["call"].split("(")[0] == at.split("(")[0]
    assert g0["nvlink"]["status"] == status and g0["nvlink"]["links"] == []
    assert type(topo).from_dict(topo.to_dict()) == topo


def test_mig_links_are_inactive_by_design(probe):
    _, topo, _ = probe("dgx-a100-mig")
    nv = links(topo, 0)
    assert nv["active"] == 0
    assert {(lk["state"], lk["rule"]) for lk in nv["links"]} == {("inactive", "mig")}
    assert topo.gpu(0).nvml.to_dict()["mig"] == {"current": True, "pending": True}
    assert all(0 not in k for k in pairs(topo))
    assert pairs(topo)[(1, 7)] == 12
    assert topo.matrix.get("GPU0", "GPU1") == "PXB"


def test_gpu_lost_mid_probe_is_a_gpu_fault_not_a_crash(probe):
    ev, topo, _ = probe("dgx-h100-gpu-lost")
    assert ev["status"] == "ok"
    g5 = topo.gpu(5).nvml.to_dict()
    assert g5["fault"]["kind"] == "lost"
    assert g5["fault"]["call"] == "nvmlDeviceGetNvLinkRemotePciInfo(gpu5,7)"
    nv = g5["nvlink"]
    # The field batch had answered every link's state before the loss: kept, not dropped.
    assert [lk["state"] for lk in nv["links"]] == ["active"] * 18
    assert "the GPU was lost later in the probe" in nv["links"][12]["reason"]
    assert nv["links"][6]["remote"]["pci_bus_id"] is not None
    assert nv["links"][7]["remote"] == {"type": "nvswitch", "gpu_index": None,
                                        "pci_bus_id": None, "link": nv["links"][7]["remote"]
                                        ["link"]}
    assert nv["links"][7]["unavailable"]["remote_pci"] == "gpu_lost"
    l12 = nv["links"][12]
    assert l12["remote"]["type"] == "unknown" and l12["remote"]["link"] is not None
    assert l12["unavailable"]["remote_type"] == "gpu_lost"
    assert l12["errors"]["replay"] == 0 and l12["unavailable"]["errors.ecc"] == "gpu_lost"
    assert all(5 not in k for k in pairs(topo))
    assert topo.matrix.get("GPU0", "GPU5") is None
    assert pairs(topo)[(0, 7)] == 18
    assert [n.code for n in topo.notes] == ["nvml.gpu_lost"]
    assert not any("(gpu5," in k or ",gpu5," in k
                   for k in ev["calls"] if k.startswith("nvmlDeviceGetP2PStatus"))


#: Field 147 served as links wired to NVSwitch, as those of them up (NVIDIA's mock), or not at
#: all: the classification must not depend on which meaning NVML has.
SWITCH_COUNT_MEANINGS = ["total", "active", "NotSupported"]


@pytest.mark.parametrize("meaning", SWITCH_COUNT_MEANINGS)
def test_link_down_on_nvswitch_system(probe, meaning):
    desc = F.load_machine("dgx-h100-link-down")
    desc["nvswitch_link_count"] = meaning
    ev, topo, _ = probe(desc)
    sw = ev["calls"]["nvmlDeviceGetFieldValues(gpu3,147:0)"]
    assert sw == ({"value": 18} if meaning == "total" else {"value": 17}
                  if meaning == "active" else {"error": "NotSupported", "code": 3})
    nv = links(topo, 3)
    assert (nv["active"], nv["total"]) == (17, 18)
    down = [lk for lk in nv["links"] if lk["state"] == "down"]
    assert [(lk["link"], lk["rule"]) for lk in down] == [(5, "nvswitch")]
    assert "GPUs 0, 1, 2, 4, 5, 6, 7 of this model have link 5 up" in down[0]["reason"]
    assert all(lk["state"] == "active" for i in (0, 7) for lk in links(topo, i)["links"])
    assert pairs(topo)[(0, 3)] == 17 and pairs(topo)[(0, 1)] == 18
    errs = links(topo, 1)["links"][2]["errors"]
    assert errs == {"replay": 3, "recovery": 0, "crc_flit": 12, "crc_data": 0, "ecc": 0}


def test_no_nvml_library_is_a_clear_unavailable_result(probe):
    ev, topo, _ = probe("no-nvml")
    assert ev["status"] == "unavailable"
    assert "no NVIDIA driver" in ev["error"]
    assert ev["calls"] == {"nvmlInit()": {"error": "LibraryNotFound", "code": 12}}
    assert topo.gpus == [] and topo.nvml.to_dict()["status"] == "unavailable"
    assert [n.code for n in topo.notes] == ["nvml.unavailable"]


def test_driver_not_loaded(probe):
    ev, topo, _ = probe("driver-not-loaded")
    assert ev["status"] == "unavailable" and "kernel driver not loaded" in ev["error"]


def test_hung_call_is_bounded_and_named(probe):
    desc = F.load_machine("dgx-a100")
    desc["hang"] = ["nvmlDeviceGetNvLinkRemotePciInfo(gpu2,3)"]
    ev, topo, _ = probe(desc, timeout=0.5)
    assert ev["status"] == "timeout"
    assert ev["pending"]["call"] == "nvmlDeviceGetNvLinkRemotePciInfo(gpu2,3)"
    assert ev["pending"]["gpu"] == 2
    assert "GPU 2" in ev["error"]
    assert ev["duration_s"] < 5
    assert topo.gpu(1).nvml.to_dict()["nvlink"]["active"] == 12  # answers before the hang kept
    assert topo.gpu(2).nvml.to_dict()["fault"]["kind"] == "timeout"
    assert "nvml.timeout" in [n.code for n in topo.notes]


def test_no_permission_handle_is_counted_but_faulted(probe):
    desc = F.load_machine("h100-pcie-bridge")
    desc["gpus"][1]["handle_error"] = "NoPermission"
    _, topo, _ = probe(desc)
    assert topo.gpu(1).nvml.to_dict()["fault"]["kind"] == "not_permitted"
    assert topo.gpu(1).name is None
    assert pairs(topo) == {}


def test_function_missing_from_old_driver_is_not_supported(probe):
    _, topo, _ = probe("dgx-h100", missing_symbols=("nvmlDeviceGetNumaNodeId",
                                                     "nvmlDeviceGetGpuFabricInfoV",
                                                     "nvmlDeviceGetGpuFabricInfo"))
    g = topo.gpu(0).nvml.to_dict()
    assert g["unavailable"]["numa_node_id"] == "not_supported"
    assert g["unavailable"]["fabric"] == "not_supported"


DGX_H100_CLUSTER = "7d3f1e0b-9a2c-4d5e-8f60-718293a4b5c6"


def check_v1_fabric(ev, topo):
    rec = ev["calls"]["nvmlDeviceGetGpuFabricInfoV(gpu0)"]["value"]
    assert rec == {"struct": "FabricInfoV1", "clusterUuid": DGX_H100_CLUSTER.replace("-", ""),
                   "status": 0, "cliqueId": 32766, "state": 3}
    fab = topo.gpu(0).nvml.to_dict()["fabric"]
    assert (fab["state"], fab["status"], fab["cluster_uuid"], fab["clique_id"]) == (
        "completed", "success", DGX_H100_CLUSTER, 32766)
    assert fab["attached"] is True and fab["health"] is None and fab["health_summary"] is None


def test_fabric_from_a_driver_without_the_v_function(probe):
    """Driver 525-530: the wheel has nvmlDeviceGetGpuFabricInfoV, the library does not."""
    ev, topo, _ = probe("dgx-h100", missing_symbols=("nvmlDeviceGetGpuFabricInfoV",))
    check_v1_fabric(ev, topo)


class OldWheelFabricInfo(ctypes.Structure):
    """c_nvmlGpuFabricInfo_t of nvidia-ml-py 11.525.150 and 12.535.161 (pyproject allows
    >= 11.525): an 80-byte clusterUuid, partitionId, no cliqueId, no V function."""

    _fields_ = [("clusterUuid", ctypes.c_char * 80), ("status", ctypes.c_uint),
                ("partitionId", ctypes.c_uint32), ("state", ctypes.c_uint)]


def test_fabric_with_an_old_nvidia_ml_py(probe, monkeypatch):
    for name in ("nvmlDeviceGetGpuFabricInfoV", "c_nvmlGpuFabricInfo_v2_t",
                 "c_nvmlGpuFabricInfo_v3_t", "c_nvmlGpuFabricInfoV_t", "nvmlGpuFabricInfo_v2",
                 "nvmlGpuFabricInfo_v3"):
        monkeypatch.delattr(pynvml, name, raising=False)
    monkeypatch.setattr(pynvml, "c_nvmlGpuFabricInfo_t", OldWheelFabricInfo)
    ev, topo, _ = probe("dgx-h100")
    check_v1_fabric(ev, topo)


def test_fabric_reads_only_the_members_a_struct_has(probe, monkeypatch):
    """A wheel's V struct without cliqueId, healthMask and healthSummary."""
    class Lean(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint), ("clusterUuid", ctypes.c_uint8 * 16),
                    ("status", ctypes.c_uint), ("state", ctypes.c_uint)]

        def __init__(self):
            super().__init__(version=0x02000024)

    monkeypatch.delattr(pynvml, "c_nvmlGpuFabricInfo_v3_t")
    monkeypatch.setattr(pynvml, "c_nvmlGpuFabricInfo_v2_t", Lean)
    ev, topo, _ = probe("dgx-h100")
    assert ev["calls"]["nvmlDeviceGetGpuFabricInfoV(gpu0)"]["value"] == {
        "struct": "Lean", "clusterUuid": DGX_H100_CLUSTER.replace("-", ""), "status": 0,
        "state": 3}
    fab = topo.gpu(0).nvml.to_dict()["fabric"]
    assert (fab["state"], fab["attached"], fab["clique_id"], fab["health"]) == (
        "completed", True, None, None)


def test_link_count_field_missing_falls_back_to_invalid_argument_bound(probe):
    desc = F.load_machine("h100-pcie-bridge")
    desc["gpu_defaults"]["nvlink"]["count_field"] = False
    ev, topo, _ = probe(desc)
    assert links(topo, 0)["total"] == 18 and links(topo, 0)["count_source"] == "probe"
    assert ev["calls"]["nvmlDeviceGetNvLinkState(gpu0,18)"]["error"] == "InvalidArgument"
    assert pairs(topo) == {(0, 1): 12}


def test_fake_rejects_the_p2p_tuple_index_like_the_c_library(probe):
    probe("h100-pcie-bridge")  # leaves nothing initialised; set up a fresh fake
    lib = F.machine_fake("h100-pcie-bridge")
    F.install(lib)
    pynvml.nvmlInit()
    a, b = pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.nvmlDeviceGetHandleByIndex(1)
    assert pynvml.NVML_P2P_CAPS_INDEX_READ == (0,)
    with pytest.raises(ctypes.ArgumentError):
        pynvml.nvmlDeviceGetP2PStatus(a, b, pynvml.NVML_P2P_CAPS_INDEX_READ)
    assert pynvml.nvmlDeviceGetP2PStatus(a, b, 0) == pynvml.NVML_P2P_STATUS_OK
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetNvLinkState(a, 18)
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        pynvml.nvmlDeviceGetPowerUsage(a)


def test_fake_answers_uninitialized_before_init(probe):
    F.install(F.machine_fake("dgx-h100"))
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        pynvml.nvmlDeviceGetCount()


def test_cross_check_topo_text_and_nvml_disagree(probe):
    from nvtopo import examples

    ev, _, _ = probe("dgx-h100-link-down")
    doc = snapshot.from_text_evidence(examples.read("dgx-h100"), "example")
    doc["probes"]["nvml"] = ev
    topo = snapshot.derive(doc, "node.json")
    assert topo.sources == ["topo-text", "nvml"]
    facts = {(d.subject, d.fact): d.values for d in topo.disagreements}
    assert facts[("GPU0-GPU3", "nvlink_count")] == {"topo-text": 18, "nvml": 17}
    assert facts[("GPU0-GPU3", "path")] == {"topo-text": "NV18", "nvml": "NV17"}
    assert ("GPU0-GPU1", "path") not in facts
    assert topo.gpu(0).name == "NVIDIA H100 80GB HBM3"  # a fact only NVML states is taken


def test_cross_check_gpu_present_in_one_source_only(probe):
    from nvtopo import examples

    ev, _, _ = probe("h100-pcie-bridge")
    doc = snapshot.from_text_evidence(examples.read("dgx-h100"), "example")
    doc["probes"]["nvml"] = ev
    topo = snapshot.derive(doc, "node.json")
    presence = [d for d in topo.disagreements if d.fact == "presence"]
    assert [d.subject for d in presence] == [f"GPU{i}" for i in range(2, 8)]
    assert presence[0].values == {"topo-text": "present", "nvml": "absent"}


def test_derive_does_not_import_pynvml(probe, tmp_path):
    ev, _, _ = probe("dgx-h100")
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"kind": "nvtopo-snapshot", "schema_version": 1,
                                "probes": {"nvml": ev}}))
    code = ("import sys; from nvtopo import snapshot; t = snapshot.load(sys.argv[1]); "
            "assert len(t.gpus) == 8; assert 'pynvml' not in sys.modules, 'imported'")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)


@pytest.mark.parametrize("meaning", SWITCH_COUNT_MEANINGS)
def test_gpu_with_every_link_down_on_nvswitch_system_is_down(probe, meaning):
    desc = F.load_machine("dgx-h100")
    desc["nvswitch_link_count"] = meaning
    desc["gpus"][2]["inactive_links"] = list(range(18))
    _, topo, _ = probe(desc)
    nv = links(topo, 2)
    assert nv["active"] == 0
    assert {lk["state"] for lk in nv["links"]} == {"down"}
    rules = {lk["rule"] for lk in nv["links"]}
    assert rules == ({"nvswitch"} if meaning == "total" else {"peers_linked"})
    assert all(2 not in k for k in pairs(topo)) and pairs(topo)[(0, 1)] == 18


@pytest.mark.parametrize("meaning", SWITCH_COUNT_MEANINGS)
def test_links_no_gpu_uses_are_not_connected_under_either_meaning(probe, meaning):
    """H800-like: 8 of 18 links wired to NVSwitch on every GPU; GPU 6 has link 3 down."""
    desc = F.load_machine("dgx-h100")
    desc["nvswitch_link_count"] = meaning
    desc["gpu_defaults"]["link_switches"] = desc["gpu_defaults"]["link_switches"][:8]
    desc["gpus"][6]["inactive_links"] = [3]
    _, topo, _ = probe(desc)
    for i in range(8):
        by = {(lk["state"], lk["rule"]) for lk in links(topo, i)["links"][8:]}
        assert by == {("inactive", "not_connected")}
    l3 = links(topo, 6)["links"][3]
    assert (l3["state"], l3["rule"]) == ("down", "nvswitch")
    assert pairs(topo)[(0, 1)] == 8 and pairs(topo)[(0, 6)] == 7


def _mesh_without(desc, gpu):
    """``gpu`` with every link down; its peers' ends of those links down too."""
    ev = F.record(desc)
    bus = F.load_machine("dgx1-v100")["gpus"][gpu]["bus_id"]
    desc["gpus"][gpu]["inactive_links"] = list(range(6))
    for b in range(len(desc["gpus"])):
        ends = [int(k.split(",")[1].rstrip(")")) for k, v in ev["calls"].items()
                if k.startswith(f"nvmlDeviceGetNvLinkRemotePciInfo(gpu{b},")
                and v.get("value", {}).get("busId") == bus]
        desc["gpus"][b].setdefault("inactive_links", []).extend(ends)
    return desc


def test_gpu_with_every_link_down_in_a_mesh_is_down(probe):
    _, topo, _ = probe(_mesh_without(F.load_machine("dgx1-v100"), 0))
    nv = links(topo, 0)
    assert nv["active"] == 0
    assert {(lk["state"], lk["rule"]) for lk in nv["links"]} == {("down", "peers_linked")}
    # The peers' ends of those links are down too, by the mesh rule.
    l1 = [lk for lk in links(topo, 3)["links"] if lk["state"] != "active"]
    assert [(lk["state"], lk["rule"]) for lk in l1] == [("down", "mesh")] * 2
    assert all(0 not in k for k in pairs(topo))


def test_unbridged_gpu_next_to_bridged_pairs_and_a_node_without_links(probe):
    desc = F.load_machine("h100-pcie-bridge")
    desc["gpus"].append({"bus_id": "00000000:E1:00.0", "uuid": "GPU-third", "minor": 2,
                         "cpus": "0-31", "numa": 0})
    _, topo, _ = probe(desc)
    assert {(lk["state"], lk["rule"]) for lk in links(topo, 2)["links"]} == {
        ("inactive", "unbridged")}
    assert pairs(topo) == {(0, 1): 12}
    desc = F.load_machine("h100-pcie-bridge")
    desc["links"] = []
    _, topo, _ = probe(desc)
    for i in (0, 1):
        assert {(lk["state"], lk["rule"]) for lk in links(topo, i)["links"]} == {
            ("inactive", "no_peer")}


def test_all_inactive_gpu_of_another_model_is_not_judged_by_the_fabric(probe):
    desc = F.load_machine("dgx-h100")
    desc["nvswitch_link_count"] = "active"
    desc["gpus"][7].update(name="NVIDIA H100 NVL", inactive_links=list(range(18)))
    _, topo, _ = probe(desc)
    nv = links(topo, 7)
    assert {(lk["state"], lk["rule"]) for lk in nv["links"]} == {("inactive", "no_peer")}
    assert "another model" in nv["links"][0]["reason"]


def error_counter_calls(lib, gpu=None):
    return [k for k in lib.asked if k.startswith("nvmlDeviceGetNvLinkErrorCounter(")
            and (gpu is None or k.startswith(f"nvmlDeviceGetNvLinkErrorCounter(gpu{gpu},"))]


def test_error_counters_come_from_the_field_batch_where_nvml_has_fields(probe):
    ev, topo, lib = probe("dgx-h100")
    # CRC-data and ECC: per-link field ids for links 0-11, checked against the function
    # once per GPU; links 12-17 have no field: the function.
    calls = error_counter_calls(lib, 0)
    assert sorted(calls) == sorted(
        ["nvmlDeviceGetNvLinkErrorCounter(gpu0,0,3)", "nvmlDeviceGetNvLinkErrorCounter(gpu0,0,4)"]
        + [f"nvmlDeviceGetNvLinkErrorCounter(gpu0,{lk},{c})" for lk in range(12, 18)
           for c in (3, 4)])
    assert len(error_counter_calls(lib)) == 8 * 14
    assert ev["calls"]["nvmlDeviceGetFieldValues(gpu0,102:0)"] == {"value": 0}  # link 6
    for lk in (0, 6, 11, 12, 17):
        assert links(topo, 0)["links"][lk]["errors"] == {
            "replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0, "ecc": 0}


def test_unsupported_error_counters_are_asked_once_per_gpu(probe):
    desc = F.load_machine("dgx-h100")
    desc["gpu_defaults"]["nvlink"]["unsupported_counters"] = ["crc_data", "ecc"]
    _, topo, lib = probe(desc)
    assert error_counter_calls(lib, 3) == ["nvmlDeviceGetNvLinkErrorCounter(gpu3,0,3)",
                                           "nvmlDeviceGetNvLinkErrorCounter(gpu3,0,4)"]
    lk = links(topo, 3)["links"][17]
    assert lk["errors"] == {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": None,
                            "ecc": None}
    assert lk["unavailable"] == {"errors.crc_data": "not_supported",
                                 "errors.ecc": "not_supported"}


def test_per_link_counter_field_that_disagrees_with_the_function_is_not_trusted(probe):
    desc = F.load_machine("dgx-h100-link-down")  # GPU1 link 2: replay 3, crc_flit 12
    desc["calls"] = {"nvmlDeviceGetFieldValues(gpu1,39:0)": {"value": 7}}
    _, topo, lib = probe(desc)
    assert len([k for k in error_counter_calls(lib, 1) if k.endswith(",3)")]) == 18
    assert [lk["errors"]["crc_data"] for lk in links(topo, 1)["links"]] == [0] * 18
    assert links(topo, 1)["links"][2]["errors"]["crc_flit"] == 12


def test_v100_without_fields_asks_the_functions(probe):
    _, topo, lib = probe("dgx1-v100")
    assert len(error_counter_calls(lib, 0)) == 6 * 5
    assert links(topo, 0)["links"][5]["errors"]["ecc"] == 0
