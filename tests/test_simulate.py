"""nvtopo simulate: every layout, every source, every fault, bad input, determinism, speed."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict

import pytest
from cli_runner import make_runner

from nvtopo import fakesys, layouts, snapshot
from nvtopo.cli import app
from nvtopo.errors import NvtopoError
from nvtopo.model import nvlink_count, path_kind
from nvtopo.probes import ProbeOptions, nvml, sysfs
from nvtopo.probes import topo as topo_text
from nvtopo.simulate import build, nvlink_domain, simulate, sources, sysfs_tree
from nvtopo.simulate.faults import KINDS, parse

LAYOUTS = layouts.names()
runner = make_runner()


def sim(name: str, *faults: str, seed: int = 1) -> Dict[str, Any]:
    return json.loads(json.dumps(simulate(layouts.load(name), faults, seed=seed)))


def derive(doc: Dict[str, Any]):
    return snapshot.derive(doc, where="sim.json")


def per_source(doc: Dict[str, Any]):
    return (topo_text.derive(doc["probes"]["topo-text"]), nvml.derive(doc["probes"]["nvml"]),
            sysfs.derive(doc["probes"]["sysfs"]))


def expected_pairs(lay, n: int) -> Dict[tuple, int]:
    pairs = lay.nvlink.pairs
    if isinstance(pairs, dict):
        return {(i, j): pairs.get(f"{i}-{j}", 0) for i in range(n) for j in range(i + 1, n)}
    pc = lay.nvlink.pair_count
    return {(i, j): pc or 0 for i in range(n) for j in range(i + 1, n)}


def topo_cell(t, a: str, b: str) -> str:
    return t.path(a, b)


# --- every layout, healthy ---------------------------------------------------------------------


class _Healthy(dict):
    """Each layout's healthy simulation, made when a test first asks for it (the core tier
    asks for a few, the slow tier's sweeps for all)."""

    def __missing__(self, name: str) -> Dict[str, Any]:
        self[name] = doc = sim(name)
        return doc


@pytest.fixture(scope="module")
def healthy() -> Dict[str, Dict[str, Any]]:
    return _Healthy()


#: The layouts the core tier sweeps (every fourth, and the DGX H100 that the other tests use);
#: the slow tier sweeps all of them.
_CORE_LAYOUTS = set(LAYOUTS[::4]) | {"dgx-h100"}
_SWEEP = [pytest.param(n, marks=() if n in _CORE_LAYOUTS else pytest.mark.slow)
          for n in LAYOUTS]


def test_there_are_layouts_to_simulate():
    assert {"dgx-h100", "dgx-a100", "dgx-1-v100"} <= set(LAYOUTS)


@pytest.mark.parametrize("name", LAYOUTS)
def test_healthy_node_every_source_derives_and_agrees(healthy, name):
    doc = healthy[name]
    lay = layouts.load(name)
    n = lay.gpus.count
    assert doc["kind"] == "nvtopo-snapshot" and doc["simulated"]["layout"] == name
    assert doc["simulated"]["faults"] == [] and isinstance(doc["simulated"]["assumptions"], list)
    t_topo, t_nvml, t_sysfs = per_source(doc)
    for frag in (t_topo, t_nvml, t_sysfs):
        assert len(frag.gpus) == n
        assert not [x for x in frag.notes if x.level == "warning"], frag.notes
    topo = derive(doc)
    assert topo.disagreements == []
    assert topo.sources[:3] == ["topo-text", "nvml", "sysfs"]
    # NV# per pair: the topo matrix and NVML's pair counts both give the layout's
    want = expected_pairs(lay, n)
    for (a, b), c in want.items():
        tok = t_topo.path(f"GPU{a}", f"GPU{b}")
        assert (nvlink_count(tok) or 0) == c, (name, a, b, tok)
        assert (t_nvml.nvlink(a, b) or 0) == c, (name, a, b)
    # NUMA, as the layout has it, in every source
    numa = lay.numa.gpu_numa or {}
    for i in range(n):
        if str(i) in numa:
            for frag in (t_topo, t_nvml, t_sysfs):
                assert frag.gpu(i).numa_affinity == str(numa[str(i)])
    # the sysfs tree places the NICs where the topo text says they are
    for nic in t_sysfs.nics:
        label = topo.nic(nic.name).label
        for g in range(n):
            assert nic.sysfs.to_dict()["gpu_paths"][f"GPU{g}"] == t_topo.path(f"GPU{g}", label)
    count = lay.nics.compute.count
    if isinstance(count, int):
        active = [p for x in t_sysfs.nics for p in x.sysfs.to_dict()["ports"]
                  if p["state"] == "ACTIVE"]
        assert len(t_sysfs.nics) >= count and len(active) == len(t_sysfs.nics)


@pytest.mark.parametrize("name", _SWEEP)
def test_healthy_nics_sit_where_the_layout_places_them(healthy, name):
    lay = layouts.load(name)
    topo = derive(healthy[name])
    best = lay.nics.placement.gpu_to_nearest_compute_nic
    gpu_nic = lay.nics.placement.gpu_nic or {}
    rate = lay.nics.compute.rate_gbps
    layer = lay.nics.compute.link_layer
    for g, names in gpu_nic.items():
        for x in names if isinstance(names, list) else [names]:
            nic = topo.nic(x)
            assert nic is not None, x
            assert topo.path(f"GPU{g}", nic.label) == (best or "PIX"), (g, x)
            port = nic.sysfs.to_dict()["ports"][0]
            if rate:
                assert port["rate_gbps"] == rate
            if layer:
                assert port["link_layer"] == layer
    if best and not gpu_nic:
        rank = ["PIX", "PXB", "PHB", "NODE", "SYS"]
        for g in topo.gpus:
            toks = [topo.path(g.label, x.label) for x in topo.nics]
            assert min(rank.index(t) for t in toks) <= rank.index(best), (g.label, toks)


def test_dgx_h100_topo_text_is_the_bundled_example_cell_for_cell(healthy):
    from nvtopo.examples import read

    ours = topo_text.parse(healthy["dgx-h100"]["probes"]["topo-text"]["stdout"])
    ref = topo_text.parse(read("dgx-h100"))
    assert ours.matrix.devices == ref.matrix.devices
    assert ours.matrix.cells == ref.matrix.cells
    assert [n.name for n in ours.nics] == [n.name for n in ref.nics]
    assert [(g.cpu_affinity, g.numa_affinity) for g in ours.gpus] == \
        [(g.cpu_affinity, g.numa_affinity) for g in ref.gpus]


def test_topo_text_is_nvidia_smi_format(healthy):
    text = healthy["dgx-h100"]["probes"]["topo-text"]["stdout"]
    lines = text.split("\n")
    assert lines[0].startswith("\tGPU0\tGPU1\t") and lines[0].endswith(
        "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID")
    assert lines[1] == ("GPU0\t X \t" + "\t".join(["NV18"] * 7) + "\tPIX\t"
                        + "\t".join(["NODE"] * 5 + ["SYS"] * 6) + "\t0-55,112-167\t0\t\tN/A")
    assert "\nLegend:\n\n  X    = Self\n" in text and "\nNIC Legend:\n\n  NIC0: mlx5_0\n" in text
    assert not topo_text.parse(text).notes


def test_assumptions_say_what_the_layout_did_not(healthy):
    assert healthy["dgx-1-v100"]["simulated"]["assumptions"]  # no gpudirect expectation
    h100 = " ".join(healthy["dgx-h100"]["simulated"]["assumptions"])
    assert "storage NICs" in h100 and "mlx5_1/mlx5_2" in h100
    bare = {"schema": 1, "name": "bare", "gpus": {"count": 2}}
    m = build(layouts.parse(json.dumps(bare), "bare"))
    said = " ".join(m.assumptions)
    for what in ("GPU model", "NUMA", "NICs", "PCIe"):
        assert what in said, what


def test_nvml_evidence_is_a_real_capture_replayed_exactly(healthy):
    ev = healthy["dgx-h100"]["probes"]["nvml"]
    # a whole probe: at least the per-link remote queries of 8 GPUs x 18 active links
    assert ev["status"] == "ok" and ev["ncalls"] >= 2 * 8 * 18
    assert ev["calls"]["nvmlDeviceGetCount()"] == {"value": 8}
    assert ev["calls"]["nvmlDeviceGetFieldValues(gpu0,165:5)"] == {"value": 1}
    t = nvml.derive(ev)
    assert t.nvml.to_dict()["incomplete"] is None
    assert all(g.nvml.to_dict()["nvlink"]["active"] == 18 for g in t.gpus)
    assert len(t.nvml.to_dict()["switches"]) == 4
    assert all(g.nvml.to_dict()["fabric"]["healthy"] for g in t.gpus)


@pytest.mark.parametrize("faults", [(), ("nic-affinity-swap:mlx5_0:mlx5_3", "ib-rate:mlx5_4:200",
                                         "counters:mlx5_5:link_downed=3",
                                         "pcie-width:GPU2:8", "peermem-missing")])
def test_in_memory_sysfs_capture_equals_the_real_probe_on_a_real_tree(faults, tmp_path):
    m = build(layouts.load("dgx-h100"), faults, seed=3)
    tree = sources.sysfs_tree(m)
    root = tmp_path / "sys"
    injected = fakesys.materialize(tree.text(["simulated"]), str(root))
    real = sysfs.capture(ProbeOptions(sysfs_root=str(root)), faults=injected)
    mem = sysfs_tree.capture(tree, root=str(root))
    for key in ("files", "links", "dirs", "errors"):
        assert mem[key] == real[key], key


# --- faults -------------------------------------------------------------------------------------


def nvml_link(t, gpu: int, link: int) -> Dict[str, Any]:
    return t.gpu(gpu).nvml.to_dict()["nvlink"]["links"][link]


def test_nvlink_down_on_an_nvswitch_system():
    doc = sim("dgx-h100", "nvlink-down:GPU3:7")
    tt, tn, _ = per_source(doc)
    assert nvml_link(tn, 3, 7)["state"] == "down" and nvml_link(tn, 3, 7)["rule"] == "nvswitch"
    assert tn.gpu(3).nvml.to_dict()["nvlink"]["active"] == 17
    for other in range(8):
        if other != 3:
            assert tt.path("GPU3", f"GPU{other}") == "NV17"
            assert tn.nvlink(3, other) == 17
    assert tt.path("GPU0", "GPU1") == "NV18" and tn.nvlink(0, 1) == 18
    assert derive(doc).disagreements == []


def test_nvlink_down_on_a_mesh_takes_one_end_down():
    doc = sim("dgx-1-v100", "nvlink-down:GPU3:0")
    tt, tn, _ = per_source(doc)
    lk = nvml_link(tn, 3, 0)
    assert lk["state"] == "down" and lk["rule"] == "mesh"
    healthy = nvml.derive(sim("dgx-1-v100")["probes"]["nvml"])
    peer = nvml_link(healthy, 3, 0)["remote"]["gpu_index"]
    before = healthy.nvlink(3, peer)
    assert (tn.nvlink(3, peer) or 0) == before - 1
    assert (nvlink_count(tt.path("GPU3", f"GPU{peer}")) or 0) == before - 1


def test_nvlink_degraded_nvswitch_shows_in_the_topo_text_only():
    doc = sim("dgx-h100", "nvlink-degraded:GPU2-GPU6")
    tt, tn, _ = per_source(doc)
    assert tt.path("GPU2", "GPU6") == "NV17" and tt.path("GPU2", "GPU5") == "NV18"
    assert tn.nvlink(2, 6) == 18  # NVML counts switch pairs by per-GPU links: not visible
    assert all(g.nvml.to_dict()["nvlink"]["active"] == 18 for g in tn.gpus)


def test_nvlink_degraded_mesh_one_cable_fewer_in_every_source():
    doc = sim("dgx-1-v100", "nvlink-degraded:GPU0-GPU3")  # NV2 on a healthy DGX-1V
    tt, tn, _ = per_source(doc)
    assert tt.path("GPU0", "GPU3") == "NV1" and tn.nvlink(0, 3) == 1
    assert tt.path("GPU0", "GPU4") == "NV2"
    for g in (0, 3):
        nv = tn.gpu(g).nvml.to_dict()["nvlink"]
        assert nv["total"] == 5 and nv["active"] == 5  # nothing down: one cable fewer
    assert derive(doc).disagreements == []


def test_gpu_missing_is_gone_from_every_source():
    doc = sim("dgx-h100", "gpu-missing:GPU7")
    for frag in per_source(doc):
        assert [g.index for g in frag.gpus] == list(range(7))
    topo = derive(doc)
    assert topo.disagreements == [] and "GPU7" not in topo.matrix.devices


def test_gpu_missing_in_the_middle_renumbers_as_the_tools_do():
    doc = sim("dgx-h100", "gpu-missing:GPU3")
    tt, tn, ts = per_source(doc)
    healthy = nvml.derive(sim("dgx-h100")["probes"]["nvml"])
    assert tn.gpu(3).uuid == healthy.gpu(4).uuid  # GPU4 of the healthy node is GPU3 now
    assert tt.gpu(3).numa_affinity == "1" and ts.gpu(3).pci_bus_id == \
        healthy.gpu(4).pci_bus_id.lower()[4:]


def port(ts, name: str) -> Dict[str, Any]:
    return ts.nic(name).sysfs.to_dict()["ports"][0]


def test_ib_faults_show_in_sysfs():
    _, _, ts = per_source(sim("dgx-h100", "ib-port-down:mlx5_4", "ib-rate:mlx5_3:200",
                              "counters:mlx5_5:symbol_error=1000"))
    assert (port(ts, "mlx5_4")["state"], port(ts, "mlx5_4")["phys_state"]) == ("DOWN",
                                                                            "Disabled")
    assert port(ts, "mlx5_3")["rate_gbps"] == 200
    assert port(ts, "mlx5_3")["rate"]["raw"] == "200 Gb/sec (4X HDR)"
    assert port(ts, "mlx5_5")["error_counters"] == {"symbol_error": 1000}
    assert port(ts, "mlx5_0")["state"] == "ACTIVE" and port(ts, "mlx5_0")["error_counters"] == {}


def test_pcie_faults_show_in_nvml_and_sysfs():
    _, tn, ts = per_source(sim("dgx-h100", "pcie-width:GPU5:8", "pcie-gen:GPU2:3"))
    assert tn.gpu(5).nvml.to_dict()["pcie"]["current_width"] == 8
    assert tn.gpu(5).nvml.to_dict()["pcie"]["max_width"] == 16
    assert ts.gpu(5).sysfs.to_dict()["link"]["current_width"] == 8
    assert ts.gpu(5).sysfs.to_dict()["narrowest_hop"]["width_degraded"] is True
    assert tn.gpu(2).nvml.to_dict()["pcie"]["current_gen"] == 3
    assert ts.gpu(2).sysfs.to_dict()["link"]["current_gen"] == 3
    assert ts.gpu(0).sysfs.to_dict()["link"]["width_below_max"] is False


def test_nic_affinity_swap_moves_both_in_matrix_and_sysfs():
    doc = sim("dgx-h100", "nic-affinity-swap:mlx5_0:mlx5_3")
    topo = derive(doc)
    assert topo.disagreements == []
    assert topo.path("GPU0", topo.nic("mlx5_3").label) == "PIX"
    assert topo.path("GPU0", topo.nic("mlx5_0").label) == "NODE"
    _, _, ts = per_source(doc)
    assert ts.nic("mlx5_0").sysfs.to_dict()["nearest_gpus"] == ["GPU1"]
    assert ts.nic("mlx5_3").sysfs.to_dict()["nearest_gpus"] == ["GPU0"]


def test_fabric_not_started():
    doc = sim("dgx-a100", "fabric-not-started")
    tt, tn, _ = per_source(doc)
    assert not any(path_kind(tok) == "NV" for _, _, tok in tt.matrix.pairs())
    assert all(g.nvml.to_dict()["fabric"]["state"] == "not_started" for g in tn.gpus)
    assert all(g.nvml.to_dict()["nvlink"]["active"] == 0 for g in tn.gpus)
    assert tn.nvlinks == [] and derive(doc).disagreements == []


def test_peermem_missing():
    _, _, ts = per_source(sim("dgx-h100", "peermem-missing"))
    assert ts.sysfs.to_dict()["gpudirect"]["peermem_loaded"] is False


def test_faults_change_nothing_else():
    base = derive(sim("dgx-h100"))
    bad = derive(sim("dgx-h100", "ib-rate:mlx5_3:200"))
    assert base.matrix.cells == bad.matrix.cells
    assert [g.to_dict() for g in base.gpus] == [g.to_dict() for g in bad.gpus]


# --- bad input ------------------------------------------------------------------------------------


BAD = [
    ("dgx-h100", "nope", "unknown fault kind"),
    ("dgx-h100", "nvlink-down:GPU3", "malformed"),
    ("dgx-h100", "nvlink-down:GPU9:1", "no GPU9"),
    ("dgx-h100", "nvlink-down:GPU3:18", "links 0-17"),
    ("dgx-h100", "gpu-missing:GPU8", "no GPU8"),
    ("dgx-h100", "ib-port-down:mlx5_99", "no RDMA device"),
    ("dgx-h100", "ib-rate:mlx5_0:400", "not below"),
    ("dgx-h100", "ib-rate:mlx5_0:x", "malformed"),
    ("dgx-h100", "pcie-width:GPU5:16", "width must be"),
    ("dgx-h100", "pcie-width:GPU5:3", "width must be"),
    ("dgx-h100", "pcie-gen:GPU5:5", "generation must be"),
    ("dgx-h100", "nic-affinity-swap:mlx5_0:mlx5_0", "two different"),
    ("dgx-h100", "nic-affinity-swap:mlx5_1:mlx5_2", "moves no GPU"),
    ("dgx-h100", "counters:mlx5_2:bogus=3", "unknown error counter"),
    ("dgx-h100", "counters:mlx5_2:link_downed=300", "counts 1-255"),
    ("dgx-h100", "counters:mlx5_2:symbol_error=0", "counts 1-"),
    ("dgx-h100", "fabric-not-started:x", "takes no argument"),
    ("dgx-h100", "nvlink-degraded:GPU2-GPU2", "two different GPUs"),
    ("dgx-1-v100", "fabric-not-started", "no NVSwitch fabric"),
    ("dgx-1-v100", "peermem-missing", "does not expect GPUDirect"),
    ("dgx-1-v100", "nvlink-degraded:GPU0-GPU5", "share no NVLink"),
    ("dgx-a100", "nic-affinity-swap:mlx5_0:mlx5_3", "does not name each GPU's NIC"),
]


@pytest.mark.parametrize("layout,spec,msg", BAD)
def test_bad_fault_is_one_line_exit_2(layout, spec, msg, tmp_path):
    out = tmp_path / "x.json"
    r = runner.invoke(app, ["simulate", layout, "--fault", spec, "-o", str(out)])
    assert r.exit_code == 2, r.output
    err = r.stderr if hasattr(r, "stderr") else r.output
    assert err.count("\n") == 1 and err.startswith("nvtopo: error: ") and msg in err, err
    assert "Traceback" not in r.output and not out.exists()


def test_the_same_fault_twice_and_an_already_down_link():
    with pytest.raises(NvtopoError, match="given twice"):
        build(layouts.load("dgx-h100"), ["peermem-missing", "peermem-missing"])
    with pytest.raises(NvtopoError, match="already missing"):
        build(layouts.load("dgx-h100"), ["gpu-missing:GPU7", "pcie-gen:GPU7:3"])
    with pytest.raises(NvtopoError, match="fabric is not up"):
        build(layouts.load("dgx-h100"), ["fabric-not-started", "nvlink-down:GPU1:1"])


@pytest.mark.parametrize("args,msg", [
    (["simulate", "no-such-layout"], "no bundled layout named 'no-such-layout'"),
    (["simulate"], "name a layout"),
    (["simulate", "dgx-h100", "--layout-file", "x.json"], "not both"),
    (["simulate", "--layout-file", "/nonexistent/l.json"], "no such file"),
    (["simulate", "dgx-h100", "-o", "/nonexistent-dir/x.json"],
     "directory /nonexistent-dir does not exist"),
])
def test_bad_usage_is_one_line_exit_2(args, msg):
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and msg in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_bad_layout_file_is_one_line(tmp_path):
    p = tmp_path / "l.json"
    p.write_text('{"schema": 1, "name": "x", "gpus": {"count": -1}}')
    r = runner.invoke(app, ["simulate", "--layout-file", str(p)])
    assert r.exit_code == 2 and "gpus.count" in r.stderr and r.stderr.count("\n") == 1


def test_every_fault_kind_is_documented_in_the_cli_help():
    r = runner.invoke(app, ["simulate", "--help"], terminal_width=400)
    for kind in KINDS:
        assert kind in r.output, kind
    assert parse("nvlink-down:GPU3:7").subjects() == ("GPU3",)


# --- determinism, writing, speed --------------------------------------------------------------------


def test_deterministic_for_a_seed_and_different_across_seeds():
    a, b, c = sim("dgx-h100", seed=5), sim("dgx-h100", seed=5), sim("dgx-h100", seed=6)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert a["host"]["hostname"] != c["host"]["hostname"]
    ua = {v["value"] for k, v in a["probes"]["nvml"]["calls"].items() if "GetUUID" in k}
    uc = {v["value"] for k, v in c["probes"]["nvml"]["calls"].items() if "GetUUID" in k}
    assert len(ua) == 8 and not ua & uc
    assert a["simulated"]["seed"] == 5


def test_cli_writes_atomically_and_reads_back(tmp_path):
    out = tmp_path / "node.json"
    out.write_text("old")
    r = runner.invoke(app, ["simulate", "dgx-h100", "--seed", "3", "--hostname", "node17",
                            "--fault", "nvlink-down:GPU3:7", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert sorted(os.listdir(tmp_path)) == ["node.json"]  # no temporary file left behind
    doc = json.loads(out.read_text())
    assert doc["host"]["hostname"] == "node17"
    assert doc["simulated"] == {**doc["simulated"], "layout": "dgx-h100", "seed": 3,
                                "faults": ["nvlink-down:GPU3:7"]}
    topo = snapshot.load(str(out))
    assert topo.path("GPU3", "GPU0") == "NV17"
    r2 = runner.invoke(app, ["simulate", "dgx-h100", "--seed", "3", "--hostname", "node17",
                             "--fault", "nvlink-down:GPU3:7"])
    assert json.loads(r2.stdout) == doc


def test_layout_file_works_like_a_bundled_layout(tmp_path):
    p = tmp_path / "mine.json"
    doc = json.loads((layouts.Path(layouts.__file__).parent / "dgx-h100.json").read_text())
    doc["name"] = "mine"
    p.write_text(json.dumps(doc))
    r = runner.invoke(app, ["simulate", "--layout-file", str(p)])
    assert r.exit_code == 0 and json.loads(r.stdout)["simulated"]["layout"] == "mine"


def test_dgx_h100_simulates_well_under_a_second():
    lay = layouts.load("dgx-h100")
    simulate(lay)  # warm imports
    times = []
    for seed in range(3):
        t0 = time.perf_counter()
        simulate(lay, seed=seed)
        times.append(time.perf_counter() - t0)
    assert sorted(times)[1] < 0.5, times


def test_a_72_gpu_nvlink_domain(tmp_path):
    lay = nvlink_domain(72)
    t0 = time.perf_counter()
    doc = json.loads(json.dumps(simulate(lay, ["nvlink-down:GPU70:3"])))
    took = time.perf_counter() - t0
    topo = derive(doc)
    assert len(topo.gpus) == 72 and len(topo.nics) == 72 and topo.disagreements == []
    assert topo.path("GPU70", "GPU1") == "NV17" and topo.path("GPU0", "GPU1") == "NV18"
    assert took < 20, took


# --- any layout the layout reader accepts (issue 21, item 8) ---------------------------------

def _layout_file(tmp_path, name: str, **change: Any) -> str:
    """dgx-h100's layout with ``change`` ("gpus.count": 128 ...) applied, as a file."""
    doc = json.loads(make_runner().invoke(app, ["layouts", "show", "dgx-h100"]).stdout)
    doc["name"] = name
    for key, value in change.items():
        section, field = key.split(".")
        doc[section][field] = value
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize("change", [{"gpus.count": 128}, {"nvlink.nvswitch_count": 64},
                                    {"gpus.count": 256, "nvlink.nvswitch_count": 64},
                                    {"nics.compute": {"count": 300, "rate_gbps": 400,
                                                      "link_layer": "InfiniBand"}}],
                         ids=lambda c: ",".join(f"{k}={v if not isinstance(v, dict) else v['count']}"
                                                for k, v in c.items()))
def test_simulate_takes_any_layout_it_reads_or_refuses_it_in_one_line(tmp_path, change):
    """128 GPUs ran out of PCI bus numbers (StopIteration), 64 NVSwitches out of device
    numbers on bus 0 (ValueError): tracebacks.  Now: a snapshot `check` reads, or one line."""
    runner = make_runner()
    path = _layout_file(tmp_path, "big", **change)
    out = tmp_path / "sim.json"
    r = runner.invoke(app, ["simulate", "--layout-file", path, "-o", str(out)])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.stderr
    if r.exit_code == 0:
        c = runner.invoke(app, ["check", "--from", str(out), "--layout-file", path])
        assert c.exit_code in (0, 1), c.stderr
    else:
        assert r.exit_code == 2, (r.exit_code, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "big" in lines[0], r.stderr
        assert not out.exists()
