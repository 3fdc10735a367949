"""Each check family on small hand-built models: healthy gives nothing, each fault exactly its
finding, unknown facts at most info."""

import copy
import json

import pytest

from nvtopo import checks, layouts
from nvtopo.checks import fabric, gpu, ib, nic, numa, nvlink, p2p, pcie, source
from nvtopo.checks.select import given
from nvtopo.model import GPU, NIC, Disagreement, Matrix, NVLinkPair, Topology
from nvtopo.model.nvlink import Fabric, NvmlGpuLinks, NvmlLink, Remote
from nvtopo.model.nvml import Fault, GpuPcie, NvmlGpu, NvmlNode, P2PMatrix, Utilization
from nvtopo.model.node import SysfsNode
from nvtopo.model.pcie import NarrowestHop, PciFunction, PciPlacement, PcieHop
from nvtopo.model.rdma import GpuDirect, Hca, Port, PortRate

LAY = layouts.load("dgx-h100")


def link(i, state="active", rule="state", errors=None):
    return NvmlLink(link=i, state=state, rule=rule, version="4.0", speed_mbps=26562,
                    remote=Remote(type="nvswitch", gpu_index=None, pci_bus_id="07:00.0",
                                  link=0),
                    errors=errors or {"replay": 0, "recovery": 0, "crc_flit": 0})


def port(rate=400, state="ACTIVE", phys="LinkUp", layer="InfiniBand", errs=None, sat=()):
    return Port(port=1, state=state, phys_state=phys, link_layer=layer,
                rate_gbps=rate if state == "ACTIVE" else None, rate=PortRate(gbps=rate),
                error_counters=dict(errs or {}), counters_saturated=list(sat),
                counters_unknown={}, counters_status="read")


def hop(cur_gen=5, cur_w=16, exp_gen=5, exp_w=16, cls=PcieHop):
    return cls(upstream="0000:15:01.0", downstream="0000:16:00.0",
               current_gts={3: 8.0, 4: 16.0, 5: 32.0}[cur_gen], current_gen=cur_gen,
               current_width=cur_w, expected_gen=exp_gen, expected_width=exp_w,
               width_degraded=cur_w < exp_w, speed_below_expected=cur_gen < exp_gen)


NIC_MAP = {0: "mlx5_0", 1: "mlx5_3", 2: "mlx5_4", 3: "mlx5_5", 4: "mlx5_6", 5: "mlx5_9",
           6: "mlx5_10", 7: "mlx5_11"}


def healthy(nvml=True, sysfs=True, n=8):
    """A DGX H100 as the three sources would show it, consistent."""
    labels = [f"GPU{i}" for i in range(n)] + [NIC_MAP[i] for i in range(n)]
    m = len(labels)
    cells = [["SYS"] * m for _ in range(m)]
    for a in range(m):
        cells[a][a] = "X"
    for a in range(n):
        for b in range(n):
            if a != b:
                cells[a][b] = "NV18"
        for b in range(n):
            same = (a < 4) == (b < 4)
            tok = "PIX" if a == b else ("NODE" if same else "SYS")
            cells[a][n + b] = cells[n + b][a] = tok
    gpus = []
    for i in range(n):
        g = GPU(i, name="NVIDIA H100 80GB HBM3" if nvml else None,
                numa_affinity="0" if i < 4 else "1", sources={"numa_affinity": "topo-text"})
        if nvml:
            g.nvml = NvmlGpu(
                index=i, fault=None,
                nvlink=NvmlGpuLinks(total=18, active=18, links=[link(k) for k in range(18)]),
                fabric=Fabric(state="completed", status="success", cluster_uuid="x",
                              health_summary="healthy"),
                pcie=GpuPcie(current_gen=5, max_gen=5, current_width=16, max_width=16))
        if sysfs:
            g.sysfs = PciPlacement(hops=[hop(), hop()], narrowest_hop=hop(cls=NarrowestHop))
        gpus.append(g)
    nics = []
    if sysfs:
        for i in range(n):
            nm = NIC_MAP[i]
            nics.append(NIC(label=nm, name=nm, sysfs=Hca(
                name=nm, soft=False, ports=[port()],
                gpu_paths={f"GPU{j}": cells[j][n + i] for j in range(n)},
                pci=PciFunction(narrowest_hop=hop(cls=NarrowestHop)))))
    topo = Topology(gpus=gpus, nics=nics, matrix=Matrix(labels, cells),
                    nvlinks=[NVLinkPair(a, b, 18) for a in range(n) for b in range(a + 1, n)],
                    sources=["topo-text"] + (["nvml"] if nvml else []) +
                    (["sysfs"] if sysfs else []))
    if nvml:
        topo.nvml = NvmlNode(status="ok", nvswitch=True,
                             switches={f"0{k}:00.0": {} for k in range(5, 9)},
                             p2p={"nvlink": P2PMatrix(devices=labels[:n],
                                                      cells=[["X" if a == b else "OK"
                                                              for b in range(n)]
                                                             for a in range(n)])})
    if sysfs:
        topo.sysfs = SysfsNode(gpudirect=GpuDirect(peermem_loaded=True))
    return topo


def run(topo, lay=LAY, level=("error", "warning")):
    return [(f.code, str(f.subject)) for f in checks.run(topo, lay).findings if f.severity in level]


def only(topo, level):
    return [(f.code, str(f.subject)) for f in checks.run(topo, LAY).findings if f.severity == level]


def test_healthy_node_has_no_finding_at_all_but_info():
    assert run(healthy()) == []
    assert run(healthy(nvml=False, sysfs=False)) == []


def test_every_family_is_pure_and_returns_findings():
    topo = healthy()
    before = copy.deepcopy(topo.to_dict())
    for mod in (gpu, fabric, nvlink, p2p, pcie, nic, ib, numa, source):
        assert mod.check(topo, given(LAY)) == []
        assert mod.check(topo, given(None)) == [] or all(
            f.severity == "info" for f in mod.check(topo, given(None)))
    assert topo.to_dict() == before


def test_link_down_is_one_finding_with_its_pairs_folded():
    topo = healthy()
    g3 = topo.gpu(3).nvml.nvlink
    g3.links[7] = link(7, "down", "nvswitch")
    g3.active = 17
    for p in topo.nvlinks:
        if 3 in (p.a, p.b):
            p.count = 17
    for a in range(8):
        if a != 3:
            topo.matrix.cells[a][3] = topo.matrix.cells[3][a] = "NV17"
    topo.disagreements.append(Disagreement("GPU0-GPU3", "nvlink_count",
                                           {"topo-text": 18, "nvml": 17}, "x"))
    found = checks.run(topo, LAY).findings
    assert [(f.code, str(f.subject), f.severity) for f in found if f.severity != "info"] == [
        ("nvlink.link_down", "GPU3 link 7", "error")]
    assert "7 GPU pairs drop to NV17" in found[0].message
    assert "also explains 1 finding of source.disagreement" in found[0].message  # the disagreement is folded in


def test_pair_degraded_names_both_gpus():
    topo = healthy()
    topo.matrix.cells[2][6] = topo.matrix.cells[6][2] = "NV17"
    next(p for p in topo.nvlinks if (p.a, p.b) == (2, 6)).count = 17
    found = [f for f in checks.run(topo, LAY).findings if f.severity != "info"]
    assert [(f.code, str(f.subject)) for f in found] == [("nvlink.pair_degraded", "GPU2-GPU6")]
    assert found[0].expected == "NV18" and found[0].actual == "NV17"


def test_topo_text_only_gpu_with_every_pair_short_is_one_link_down():
    topo = healthy(nvml=False, sysfs=False)
    for a in range(8):
        if a != 5:
            topo.matrix.cells[a][5] = topo.matrix.cells[5][a] = "NV17"
    for p in topo.nvlinks:
        if 5 in (p.a, p.b):
            p.count = 17
    assert run(topo) == [("nvlink.link_down", "GPU5")]


def test_gpu_missing_folds_its_pairs_nic_and_numa():
    topo = healthy(n=8)
    full = healthy(n=8)
    topo.gpus = topo.gpus[:7]
    keep = [i for i, d in enumerate(full.matrix.devices) if d != "GPU7"]
    topo.matrix = Matrix([full.matrix.devices[i] for i in keep],
                         [[full.matrix.cells[i][j] for j in keep] for i in keep])
    topo.nvlinks = [p for p in topo.nvlinks if 7 not in (p.a, p.b)]
    p2p = topo.nvml.p2p["nvlink"]
    topo.nvml.p2p["nvlink"] = P2PMatrix(devices=[f"GPU{i}" for i in range(7)],
                                        cells=[r[:7] for r in p2p.cells[:7]])
    assert run(topo) == [("gpu.missing", "GPU7")]


def test_gpu_lost_in_nvml():
    topo = healthy()
    topo.gpu(5).nvml.fault = Fault(kind="lost", message="GpuIsLost")
    assert only(topo, "error") == [("gpu.lost", "GPU5")]


def test_gpu_model_wrong_for_the_layout():
    topo = healthy()
    for g in topo.gpus:
        g.name = "NVIDIA A100-SXM4-80GB"
    assert ("gpu.model", "node") in only(topo, "error")


def test_fabric_not_started_folds_missing_pairs_and_down_links():
    topo = healthy()
    for g in topo.gpus:
        nv = g.nvml
        nv.fabric = Fabric(state="not_started", status=None)
        nv.nvlink = NvmlGpuLinks(total=18, active=0,
                                 links=[link(k, "down", "nvswitch") for k in range(18)])
    n = 8
    for a in range(n):
        for b in range(n):
            if a != b:
                topo.matrix.cells[a][b] = "SYS"
    topo.nvlinks = []
    assert run(topo) == [("fabric.not_started", "node")]


def test_no_nv_at_all_on_an_nvswitch_layout_without_nvml_is_the_fabric():
    topo = healthy(nvml=False, sysfs=False)
    for a in range(8):
        for b in range(8):
            if a != b:
                topo.matrix.cells[a][b] = "SYS"
    topo.nvlinks = []
    assert run(topo) == [("fabric.not_started", "node")]


@pytest.mark.parametrize("state,code", [("in_progress", "fabric.in_progress")])
def test_fabric_in_progress(state, code):
    topo = healthy()
    for g in topo.gpus:
        g.nvml.fabric = Fabric(state=state, status=None)
    assert run(topo) == [(code, "node")]


def test_nvlink_error_counters_warning_then_error():
    topo = healthy()
    topo.gpu(1).nvml.nvlink.links[2] = link(2, errors={"replay": 3, "crc_flit": 12})
    assert run(topo) == [("nvlink.errors", "GPU1 link 2")]
    assert only(topo, "warning") == [("nvlink.errors", "GPU1 link 2")]
    topo.gpu(1).nvml.nvlink.links[2] = link(2, errors={"recovery": 500})
    assert only(topo, "error") == [("nvlink.errors", "GPU1 link 2")]


def test_p2p_not_supported_where_nvlink_is_expected():
    topo = healthy()
    topo.nvml.p2p["nvlink"].cells[1][4] = "NS"
    assert run(topo) == [("p2p.not_supported", "GPU1-GPU4")]


def test_pcie_width_error_gen_warning_when_idle_error_when_busy():
    topo = healthy()
    topo.gpu(5).sysfs.hops[1] = hop(cur_w=8)
    assert run(topo) == [("pcie.width_low", "GPU5")]
    topo = healthy()
    topo.gpu(5).sysfs.hops[1] = hop(cur_gen=3)
    assert only(topo, "warning") == [("pcie.gen_low", "GPU5")] and only(topo, "error") == []
    topo.gpu(5).nvml.utilization = Utilization(gpu=97)
    assert only(topo, "error") == [("pcie.gen_low", "GPU5")]


def test_pcie_hop_limited_by_the_slot_is_not_degraded():
    topo = healthy()
    topo.gpu(5).sysfs.hops[1] = hop(cur_gen=4, exp_gen=4)  # Gen5 card, Gen4 slot
    assert run(topo) == []


def test_pcie_from_nvml_when_no_sysfs():
    topo = healthy(sysfs=False)
    topo.gpu(2).nvml.pcie.current_width = 4
    assert run(topo) == [("pcie.width_low", "GPU2")]


def test_ib_port_down_rate_low_layer_and_counters():
    def with_port(name, **kw):
        topo = healthy()
        topo.nic(name).sysfs.ports = [port(**kw)]
        return topo
    assert run(with_port("mlx5_4", state="DOWN", phys="Polling")) == [
        ("ib.port_down", "mlx5_4 port 1")]
    assert run(with_port("mlx5_3", rate=200)) == [("ib.rate_low", "mlx5_3 port 1")]
    assert run(with_port("mlx5_3", layer="Ethernet")) == [("ib.link_layer", "mlx5_3 port 1")]
    assert only(with_port("mlx5_9", errs={"symbol_error": 1000}), "error") == [
        ("ib.counter_errors", "mlx5_9 port 1")]
    t = with_port("mlx5_9", errs={"symbol_error": 3})
    assert only(t, "warning") == [("ib.counter_errors", "mlx5_9 port 1")]
    assert only(t, "error") == []
    assert only(with_port("mlx5_9", errs={"link_downed": 255}, sat=["link_downed"]),
                "error") == [("ib.counter_errors", "mlx5_9 port 1")]


def test_ib_unknown_link_layer_is_info_only():
    topo = healthy()
    topo.nic("mlx5_3").sysfs.ports = [port(layer=None)]
    assert run(topo) == []
    assert ("ib.not_checked", "node") in run(topo, level=("info",))


def test_storage_port_down_is_a_warning():
    topo = healthy()
    topo.nics.append(NIC(label="mlx5_1", name="mlx5_1", sysfs=Hca(
        name="mlx5_1", ports=[port(state="DOWN", phys="Disabled", layer="Ethernet")],
        gpu_paths={f"GPU{j}": "NODE" for j in range(8)})))
    assert only(topo, "warning") == [("ib.port_down", "mlx5_1 port 1")]
    assert only(topo, "error") == []


def test_nic_swap_with_every_gpu_still_at_pix_is_one_renaming_finding():
    topo = healthy()
    a, b = topo.nic("mlx5_0"), topo.nic("mlx5_3")
    a.sysfs.gpu_paths, b.sysfs.gpu_paths = b.sysfs.gpu_paths, a.sysfs.gpu_paths
    m = topo.matrix
    ia, ib_ = m.devices.index("mlx5_0"), m.devices.index("mlx5_3")
    for r in range(len(m.devices)):
        m.cells[r][ia], m.cells[r][ib_] = m.cells[r][ib_], m.cells[r][ia]
    m.cells[ia], m.cells[ib_] = m.cells[ib_], m.cells[ia]
    # placement, not names: every GPU still has a NIC at PIX, so one finding gives the map
    assert run(topo) == [("nic.names_differ", "node")]
    assert only(topo, "error") == []


def test_nic_missing_and_gpudirect_missing():
    topo = healthy()
    topo.nics = [n for n in topo.nics if n.name != "mlx5_9"]
    assert run(topo) == [("nic.missing", "mlx5_9")]
    topo = healthy()
    topo.sysfs.gpudirect.peermem_loaded = False
    assert run(topo) == [("nic.gpudirect_missing", "node")]


def test_no_nic_data_is_info_only():
    topo = healthy(sysfs=False)
    topo.nics = []
    labels = [f"GPU{i}" for i in range(8)]
    topo.matrix = Matrix(labels, [r[:8] for r in topo.matrix.cells[:8]])
    assert run(topo) == []
    info = run(topo, level=("info",))
    assert ("nic.not_checked", "node") in info and ("ib.not_checked", "node") in info


def test_numa_placement_and_unknown():
    topo = healthy()
    topo.gpu(2).numa_affinity = "1"
    assert run(topo) == [("numa.placement", "GPU2")]
    topo = healthy()
    for g in topo.gpus:
        g.numa_affinity = None
    assert run(topo) == [] and ("numa.not_checked", "node") in run(topo, level=("info",))


def test_grace_numa_affinity_list_reads_its_cpu_node():
    lay = layouts.load("gh200-4")
    labels = [f"GPU{i}" for i in range(4)]
    cells = [["X" if a == b else "NV6" for b in range(4)] for a in range(4)]
    gpus = [GPU(i, numa_affinity=f"{i},{5 + 8 * i}-{11 + 8 * i}", gpu_numa_id=4 + 8 * i)
            for i in range(4)]
    topo = Topology(gpus=gpus, matrix=Matrix(labels, cells), sources=["topo-text"])
    assert [f for f in checks.run(topo, lay).findings if f.severity != "info"] == []


def test_source_disagreement_is_a_warning():
    topo = healthy()
    topo.disagreements.append(Disagreement("GPU4", "numa_affinity",
                                           {"topo-text": "1", "sysfs": "0"}, "differ"))
    assert run(topo) == [("source.disagreement", "GPU4")]


def test_inferred_expectation_is_at_most_a_warning():
    data = copy.deepcopy(LAY.data)
    data["numa"]["evidence"] = "[I]"
    lay = layouts.parse(json.dumps(dict(data, name="x")), "x")
    topo = healthy()
    topo.gpu(2).numa_affinity = "1"
    found = [(f.code, f.severity) for f in checks.run(topo, lay).findings if f.severity != "info"]
    assert found == [("numa.placement", "warning")]


def test_without_a_layout_only_layout_independent_findings():
    topo = healthy()
    topo.nic("mlx5_4").sysfs.ports = [port(state="DOWN", phys="Polling")]
    topo.gpu(2).numa_affinity = "1"
    assert run(topo, lay=None) == [("ib.port_down", "mlx5_4 port 1")]


def test_finding_json_contract():
    topo = healthy()
    topo.gpu(5).sysfs.hops[1] = hop(cur_w=8)
    f = checks.run(topo, LAY).findings[0].to_dict()
    assert list(f) == ["severity", "code", "subject", "expected", "actual", "message", "hint",
                       "source"]
    assert f["severity"] == "error" and f["code"].startswith("pcie.") and f["hint"]


@pytest.mark.parametrize("fault,code", [("fabric-not-started", "fabric.not_started"),
                                        ("nvlink-degraded:GPU2-GPU6", "nvlink.pair_degraded")])
@pytest.mark.parametrize("name", ["azure-nd96isr-h100-v5", "gcp-a3-ultragpu-8g",
                                  "aws-p4d-24xlarge"])
def test_cloud_layout_with_inferred_nvlink_still_fails_on_what_the_node_shows(name, fault,
                                                                             code):
    """NVML's own fabric state, and a pair below the node's other NVSwitch pairs, are errors
    even where the layout's NVLink evidence is only [I] (no demotion)."""
    import json as _json

    from nvtopo import layouts as _layouts, snapshot as _snapshot
    from nvtopo import checks as _checks
    from nvtopo.checks.select import select
    from nvtopo.simulate import simulate

    lay = _layouts.load(name)
    assert lay.nvlink.inferred()
    doc = _json.loads(_json.dumps(simulate(lay, (fault,), seed=5)))
    topo = _snapshot.derive(doc, where=name)
    found = _checks.run(topo, select(topo, name)).findings
    assert any(f.code == code and f.severity == "error" for f in found), \
        [(f.severity, f.code, str(f.subject)) for f in found]
    assert _checks.verdict(found) == "fail"


def test_sysfs_only_snapshot_says_what_was_not_checked(tmp_path, monkeypatch):
    """No driver-level GPU list and no NVLink data: info findings say so (never errors)."""
    import json as _json
    import sys as _sys
    from pathlib import Path as _Path

    _sys.path.insert(0, str(_Path(__file__).resolve().parent))
    import sysfs_trees
    import nvtopo.probes.topo.live as tt
    from cli_runner import make_runner

    from nvtopo.cli import app

    monkeypatch.setattr(tt.shutil, "which", lambda name: None)
    runner = make_runner()
    snap = tmp_path / "sy.json"
    r = runner.invoke(app, ["snapshot", "--sysfs-root", sysfs_trees.tree("roce-bond")[0],
                            "-o", str(snap)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["check", "--from", str(snap), "--format", "json"])
    assert r.exit_code == 0, r.output
    found = {(f["severity"], f["code"]) for f in _json.loads(r.stdout)["findings"]}
    assert ("info", "gpu.not_checked") in found and ("info", "nvlink.not_checked") in found
    assert not any(s == "error" for s, _ in found)


def test_a_nic_named_like_a_gpu_is_not_folded_under_the_gpu():
    """A disagreement about a NIC literally named GPU3 is the NIC's: a GPU3 finding does not
    explain it (folding compared text before subjects were typed, and hid it)."""
    topo = healthy()
    topo.nics.append(NIC(label="NIC8", name="GPU3"))
    topo.gpu(3).sysfs.hops[1] = hop(cur_w=8)  # pcie.width_low on GPU3: covers GPU3
    topo.disagreements.append(Disagreement("GPU3", "numa_node", {"sysfs": 0, "topo-text": 1},
                                           "sysfs says 0, topo-text says 1"))
    found = [f for f in checks.run(topo, LAY).findings if f.severity != "info"]
    assert [(f.code, str(f.subject), f.subject.kind) for f in found] == [
        ("pcie.width_low", "GPU3", "gpu"), ("source.disagreement", "GPU3", "nic")]
    assert "also explains" not in found[0].message
    # the same text about the GPU is the GPU's, and folded
    topo.disagreements[-1] = Disagreement("GPU3", "numa_affinity", {"sysfs": "0",
                                                                    "topo-text": "1"}, "x")
    found = [f for f in checks.run(topo, LAY).findings if f.severity != "info"]
    assert [(f.code, str(f.subject)) for f in found] == [("pcie.width_low", "GPU3")]
    assert "also explains 1 finding of source.disagreement" in found[0].message
