"""The real sysfs probe over each fixture tree (fixtures/sysfs/*.sysfs), every field asserted."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nvtopo import fakesys, snapshot
from nvtopo.probes import ProbeOptions, host, sysfs

import sysfs_trees

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sysfs"
_CACHE = {}


def probe(name, tmp_path_factory):
    """Materialise a fixture, run the real capture over it, derive; cached per session."""
    if name not in _CACHE:
        root, faults = sysfs_trees.tree(name)
        ev = sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults)
        _CACHE[name] = (root, ev, sysfs.derive(ev))
    return _CACHE[name]


def hcas(topo):
    return {n.name: n.sysfs.to_dict() for n in topo.nics}


def port1(topo, name):
    return hcas(topo)[name]["ports"][0]


# --- DGX H100 --------------------------------------------------------------------------------

H100_MAP = {  # RDMA device -> (PCI address, NUMA node, IPoIB netdev, its GPU)
    "mlx5_0": ("0000:18:00.0", 0, "ibp24s0", "GPU0"),
    "mlx5_3": ("0000:40:00.0", 0, "ibp64s0", "GPU1"),
    "mlx5_4": ("0000:4f:00.0", 0, "ibp79s0", "GPU2"),
    "mlx5_5": ("0000:5e:00.0", 0, "ibp94s0", "GPU3"),
    "mlx5_6": ("0000:9a:00.0", 1, "ibp154s0", "GPU4"),
    "mlx5_9": ("0000:c0:00.0", 1, "ibp192s0", "GPU5"),
    "mlx5_10": ("0000:ce:00.0", 1, "ibp206s0", "GPU6"),
    "mlx5_11": ("0000:dc:00.0", 1, "ibp220s0", "GPU7"),
}
H100_STORAGE = {"mlx5_1": ("0000:29:00.0", 0, "enp41s0f0np0"),
                "mlx5_2": ("0000:29:00.1", 0, "enp41s0f1np1"),
                "mlx5_7": ("0000:aa:00.0", 1, "enp170s0f0np0"),
                "mlx5_8": ("0000:aa:00.1", 1, "enp170s0f1np1")}


def test_dgx_h100_hcas_and_ports(tmp_path_factory):
    _, ev, topo = probe("dgx-h100", tmp_path_factory)
    h = hcas(topo)
    assert list(h) == [f"mlx5_{i}" for i in range(12)]  # natural order
    for name, (bdf, numa, netdev, gpu) in H100_MAP.items():
        x = h[name]
        assert x["pci_address"] == bdf and x["numa_node"] == numa and x["parent"] == "pci"
        assert x["soft"] is False and x["node_type"] == "CA"
        assert x["hca_type"] == "MT4129" and x["fw_ver"] == "28.39.1002"
        assert x["board_id"] == "MT_0000000838"
        assert x["node_guid"].startswith("a088:c203:0074:") and x["sys_image_guid"] == x["node_guid"]
        assert x["unknown"] == {}
        assert x["nearest_gpus"] == [gpu] and x["nearest_gpu_path"] == "PIX"
        assert x["pci"]["link"]["current_gen"] == 5 and x["pci"]["link"]["current_width"] == 16
        assert x["netdevs"] == [{"name": netdev, "dev_port": 0, "dev_id": 0, "type": 32}]
        [p] = x["ports"]
        assert p["port"] == 1 and p["state"] == "ACTIVE" and p["state_code"] == 4
        assert p["phys_state"] == "LinkUp" and p["phys_state_code"] == 5
        assert p["rate_gbps"] == 400
        assert p["rate"] == {"raw": "400 Gb/sec (4X NDR)", "gbps": 400, "lanes": 4,
                             "width": "4X", "speed": "NDR"}
        assert p["link_layer"] == "InfiniBand" and p["transport"] == "IB"
        assert p["netdev"] == netdev
        assert p["lid"] == 0x30 + int(name.split("_")[1]) and p["sm_lid"] == 1
        assert p["gid0"] == "fe80:0000:0000:0000:" + x["node_guid"]
        assert p["port_guid"] == x["node_guid"].replace(":", "")  # IB: port GUID = node GUID
        assert p["error_counters"] == {} and p["counters_saturated"] == []
        assert p["counters_unknown"] == {} and p["unknown"] == {}
        assert len(p["counters"]) == 21 and p["counters"]["link_downed"] == 0
        assert p["data_bytes"]["xmit"] == 4 * p["counters"]["port_xmit_data"]
        assert p["data_bytes"]["rcv"] == 4 * p["counters"]["port_rcv_data"]
        assert set(p["hw_counters"]) == {"out_of_buffer", "out_of_sequence", "packet_seq_err",
                                         "local_ack_timeout_err", "rnr_nak_retry_err",
                                         "req_cqe_error"}  # lifespan is not a counter
    for name, (bdf, numa, netdev) in H100_STORAGE.items():
        x = h[name]
        assert (x["pci_address"], x["numa_node"]) == (bdf, numa)
        assert x["pci"]["class"] == "0x020000"
        p = x["ports"][0]
        assert p["link_layer"] == "Ethernet" and p["transport"] == "RoCE"
        assert p["rate_gbps"] == 200 and p["rate"]["speed"] == "HDR"
        assert p["netdev"] == netdev and p["gid0_netdev"] == netdev
        assert p["gid0_type"] == "IB/RoCE v1" and p["lid"] == 0
        assert x["nearest_gpu_path"] == "NODE"
        assert x["nearest_gpus"] == (["GPU0", "GPU1", "GPU2", "GPU3"] if numa == 0
                                     else ["GPU4", "GPU5", "GPU6", "GPU7"])
    assert [n.level for n in topo.notes if n.level == "warning"] == []


def test_dgx_h100_gpus_numa_paths(tmp_path_factory):
    _, ev, topo = probe("dgx-h100", tmp_path_factory)
    # the BMC VGA (ASPEED) and the NVSwitches (class 0x0680) are not GPUs
    assert [g.pci_bus_id for g in topo.gpus] == [
        "0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
        "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"]
    for g in topo.gpus:
        s = g.sysfs.to_dict()
        numa = 0 if g.index < 4 else 1
        assert g.numa_affinity == str(numa) and s["numa_node"] == numa
        assert g.cpu_affinity == ("0-55,112-167" if numa == 0 else "56-111,168-223")
        assert g.sources["pci_bus_id"] == "sysfs"
        assert s["link"]["current_gen"] == s["link"]["max_gen"] == 5
        assert s["link"]["current_width"] == s["link"]["max_width"] == 16
        assert s["link"]["raw"]["current_link_speed"] == "32.0 GT/s PCIe"
        assert len(s["chain"]) == 4 and s["host_bridge"].startswith("pci0000:")
        assert [h["width_degraded"] for h in s["hops"]] == [False, False]
        assert s["narrowest_hop"]["current_gen"] == 5
    m = topo.matrix
    assert m.source == "sysfs" and m.devices[:8] == [f"GPU{i}" for i in range(8)]
    assert m.get("GPU0", "GPU1") is None  # NVLink is invisible to sysfs
    assert m.get("GPU0", "mlx5_0") == "PIX" and m.get("GPU0", "mlx5_3") == "NODE"
    assert m.get("GPU0", "mlx5_6") == "SYS" and m.get("mlx5_1", "mlx5_2") == "PIX"
    assert m.get("mlx5_0", "mlx5_3") == "NODE" and m.get("mlx5_0", "mlx5_11") == "SYS"
    info = topo.sysfs.to_dict()
    assert info["numa"] == {"online": "0-1", "nodes": [
        {"node": 0, "cpulist": "0-55,112-167", "cpus": 112, "distances": [10, 21]},
        {"node": 1, "cpulist": "56-111,168-223", "cpus": 112, "distances": [21, 10]}]}
    assert info["gpudirect"]["nvidia_peermem"] is True and info["gpudirect"]["peermem_loaded"]
    assert info["gpudirect"]["nv_peer_mem"] is False
    assert len(info["nvme"]) == 8
    nv = info["nvme"][0]
    assert nv["pci_address"] == "0000:19:00.0" and nv["nearest_gpus"] == ["GPU0"]
    assert nv["gpu_paths"]["GPU0"] == "PIX"
    # Gen4 x4 drive in a Gen5 x4 switch port: expected is the lower max, not degraded
    assert nv["narrowest_hop"]["expected_gen"] == 4 and not nv["narrowest_hop"]["speed_below_expected"]


def test_dgx_h100_agrees_with_the_bundled_topo_example(tmp_path_factory):
    """Same machine from two sources: NICs mapped by name, no disagreement."""
    from nvtopo import examples

    _, ev, _ = probe("dgx-h100", tmp_path_factory)
    doc = snapshot.from_text_evidence(examples.read("dgx-h100"), "example")
    doc["probes"]["sysfs"] = ev
    topo = snapshot.derive(doc, "x")
    assert topo.sources == ["topo-text", "sysfs"]
    assert topo.disagreements == []
    assert topo.matrix.source == "topo-text"
    nic = topo.nic("NIC3")
    assert (nic.name, nic.pci_bus_id, nic.numa_node) == ("mlx5_3", "0000:40:00.0", 0)
    assert nic.sources["pci_bus_id"] == "sysfs" and nic.sysfs.to_dict()["nearest_gpus"] == ["GPU1"]
    assert topo.gpu(5).pci_bus_id == "0000:c3:00.0"


def test_disagreements_between_topo_and_sysfs_are_recorded(tmp_path_factory):
    from nvtopo import examples

    _, ev, _ = probe("dgx-h100", tmp_path_factory)
    text = examples.read("dgx-h100")
    lines = text.splitlines()
    # GPU0's row: claim NUMA 1 and SYS to NIC0 (mlx5_0)
    i = next(k for k, ln in enumerate(lines) if ln.startswith("GPU0 "))
    lines[i] = lines[i].replace("PIX", "SYS", 1).replace("0               N/A",
                                                          "1               N/A")
    j = next(k for k, ln in enumerate(lines) if ln.startswith("NIC0 "))
    lines[j] = lines[j].replace("PIX", "SYS", 1)
    doc = snapshot.from_text_evidence("\n".join(lines) + "\n", "t")
    doc["probes"]["sysfs"] = ev
    topo = snapshot.derive(doc, "x")
    facts = {(d.subject, d.fact): d.values for d in topo.disagreements}
    assert facts[("GPU0-NIC0", "path")] == {"topo-text": "SYS", "sysfs": "PIX"}
    assert facts[("GPU0", "numa_affinity")] == {"topo-text": "1", "sysfs": "0"}
    assert len(facts) == 2


# --- faults ----------------------------------------------------------------------------------------


def test_faults_ports_down_polling_slow_and_unpopulated(tmp_path_factory):
    _, _, topo = probe("dgx-h100-faults", tmp_path_factory)
    p = port1(topo, "mlx5_3")
    assert (p["state"], p["phys_state"], p["rate_gbps"]) == ("DOWN", "Disabled", None)
    assert p["rate"]["raw"] == "10 Gb/sec (4X SDR)" and "meaningless" in p["rate_note"]
    assert p["lid"] == 0xFFFF
    p = port1(topo, "mlx5_4")
    assert (p["state"], p["state_code"], p["phys_state"], p["phys_state_code"]) == \
        ("DOWN", 1, "Polling", 2)
    p = port1(topo, "mlx5_5")
    assert (p["state"], p["rate_gbps"], p["rate"]["speed"]) == ("ACTIVE", 200, "HDR")
    p = port1(topo, "mlx5_8")
    assert (p["state"], p["phys_state"], p["rate"]["raw"], p["rate"]["gbps"], p["rate_gbps"]) == \
        ("DOWN", "Disabled", "0 GB/sec", 0, None)
    p = port1(topo, "mlx5_2")
    assert p["link_layer"] is None and p["transport"] is None
    assert p["unknown"] == {"link_layer": "missing (ENOENT)"}


def test_faults_counters_saturated_unreadable_and_tar_padded(tmp_path_factory):
    _, ev, topo = probe("dgx-h100-faults", tmp_path_factory)
    p = port1(topo, "mlx5_6")
    assert p["error_counters"] == {"link_downed": 255, "port_xmit_discards": 65535,
                                   "symbol_error": 12}
    assert p["counters_saturated"] == ["link_downed", "port_xmit_discards", "port_xmit_wait"]
    p = port1(topo, "mlx5_9")
    assert p["counters_unknown"] == {"port_rcv_errors": "EINVAL: Invalid argument",
                                     "symbol_error": "EINVAL: Invalid argument"}
    assert p["counters"]["symbol_error"] is None and p["counters"]["link_downed"] == 0
    p = port1(topo, "mlx5_10")
    assert p["counters_unknown"] == {"VL15_dropped": "N/A (no PMA)",
                                     "link_downed": "EACCES: Permission denied"}
    x = hcas(topo)["mlx5_11"]
    assert x["unknown"] == {"hca_type": "EACCES: Permission denied",
                            "board_id": "missing (ENOENT)"}
    assert x["hca_type"] is None and x["board_id"] is None
    p = x["ports"][0]
    assert (p["state"], p["rate_gbps"], p["error_counters"]) == ("ACTIVE", 400, {"link_downed": 3})
    # the evidence keeps the content without the NUL padding
    state = [v for k, v in ev["files"].items() if k.endswith("mlx5_11/ports/1/state")]
    assert state == ["4: ACTIVE"]
    codes = [n.code for n in topo.notes if n.level == "warning"]
    assert codes.count("sysfs.counters_unknown") == 2
    assert codes.count("sysfs.counters_saturated") == 1


def test_faults_gpu_link_x8_and_gen3(tmp_path_factory):
    _, _, topo = probe("dgx-h100-faults", tmp_path_factory)
    g3 = topo.gpu(3).sysfs.to_dict()
    assert (g3["link"]["current_width"], g3["link"]["max_width"]) == (8, 16)
    assert g3["link"]["width_below_max"] is True and g3["link"]["speed_below_max"] is False
    assert g3["narrowest_hop"]["width_degraded"] is True
    assert g3["narrowest_hop"]["downstream"] == "0000:61:00.0"
    g5 = topo.gpu(5).sysfs.to_dict()
    assert (g5["link"]["current_gen"], g5["link"]["max_gen"]) == (3, 5)
    assert g5["link"]["speed_below_max"] is True and g5["link"]["width_below_max"] is False
    assert g5["narrowest_hop"]["speed_below_expected"] is True
    assert topo.gpu(0).sysfs.to_dict()["link"]["width_below_max"] is False


# --- DGX A100 ------------------------------------------------------------------------------------------


def test_dgx_a100_nps4_pxb_and_old_kernel_text(tmp_path_factory):
    _, ev, topo = probe("dgx-a100", tmp_path_factory)
    info = topo.sysfs.to_dict()
    assert [n["node"] for n in info["numa"]["nodes"]] == list(range(8))
    assert info["numa"]["nodes"][3]["cpulist"] == "48-63,176-191"
    assert info["numa"]["nodes"][0]["distances"] == [10, 12, 12, 12, 32, 32, 32, 32]
    assert [g.numa_affinity for g in topo.gpus] == ["3", "3", "1", "1", "7", "7", "5", "5"]
    assert [g.pci_bus_id[5:7] for g in topo.gpus] == ["07", "0f", "47", "4e", "87", "90",
                                                      "b7", "bd"]
    g0 = topo.gpu(0).sysfs.to_dict()
    assert g0["link"]["raw"]["max_link_speed"] == "16 GT/s"  # kernel 5.4 text
    assert g0["link"]["max_gen"] == 4 and g0["link"]["current_width"] == 16
    assert len(g0["hops"]) == 3  # root port, two switch levels
    h = hcas(topo)
    compute = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    for k, name in enumerate(compute):
        x = h[name]
        p = x["ports"][0]
        assert (p["link_layer"], p["rate_gbps"], p["rate"]["speed"], x["hca_type"]) == \
            ("InfiniBand", 200, "HDR", "MT4123")
        pair = [f"GPU{2 * (k // 2)}", f"GPU{2 * (k // 2) + 1}"]
        assert x["nearest_gpus"] == pair and x["nearest_gpu_path"] == "PXB"
        assert x["numa_node"] == [3, 1, 7, 5][k // 2]
    for name in ("mlx5_4", "mlx5_5", "mlx5_10", "mlx5_11"):
        p = h[name]["ports"][0]
        assert (p["transport"], p["rate_gbps"], p["hw_counters"]) == ("RoCE", 100, None)
        assert h[name]["nearest_gpu_path"] == "SYS"
    assert h["mlx5_4"]["numa_node"] == 0 and h["mlx5_10"]["numa_node"] == 4
    assert topo.matrix.get("GPU0", "GPU1") is None and topo.matrix.get("mlx5_0", "mlx5_1") == "PIX"
    assert info["gpudirect"]["nvidia_peermem"] is False
    assert info["gpudirect"]["nv_peer_mem"] is True and info["gpudirect"]["peermem_loaded"]


# --- RoCE bond host -------------------------------------------------------------------------------------


def test_roce_bond_sf_and_soft_device(tmp_path_factory):
    _, _, topo = probe("roce-bond", tmp_path_factory)
    h = hcas(topo)
    assert list(h) == ["mlx5_2", "mlx5_bond_0", "rxe0"]
    b = h["mlx5_bond_0"]
    assert (b["pci_address"], b["parent"], b["hca_type"], b["numa_node"]) == \
        ("0000:3d:00.0", "pci", "MT41692", 0)
    p = b["ports"][0]
    assert (p["link_layer"], p["transport"], p["netdev"], p["rate_gbps"]) == \
        ("Ethernet", "RoCE", "bond0", 200)
    assert b["netdevs"][0]["name"] == "enp61s0f0np0"
    # BF-3 internal switch at Gen4 of Gen5: the narrowest hop shows it
    assert b["pci"]["link"]["current_gen"] == 4 and b["pci"]["link"]["max_gen"] == 5
    sf = h["mlx5_2"]
    assert (sf["pci_address"], sf["parent"]) == ("0000:3d:00.0", "auxiliary")
    assert sf["device_path"].endswith("/0000:3d:00.0/mlx5_core.sf.2")
    assert sf["netdevs"] == [] and sf["ports"][0]["netdev"] == "enp61s0f0npf0sf2"
    rxe = h["rxe0"]
    assert (rxe["pci_address"], rxe["soft"], rxe["parent"], rxe["numa_node"]) == \
        (None, True, "none", None)
    assert rxe["nearest_gpus"] == [] and rxe["pci"] is None
    p = rxe["ports"][0]
    assert (p["rate_gbps"], p["rate"]["width"], p["netdev"]) == (2.5, "1X", "eno1")
    assert p["counters"] is None and p["hw_counters"] == {"duplicate_request": 0,
                                                         "rcvd_pkts": 1180, "sent_pkts": 1200}
    rnic = [n for n in topo.nics if n.name == "rxe0"][0]
    assert rnic.pci_bus_id is None and "pci_bus_id" not in rnic.sources
    codes = [n.code for n in topo.notes]
    assert "sysfs.soft_device" in codes and "sysfs.path_unknown" not in codes
    assert topo.sysfs.to_dict()["gpudirect"]["peermem_loaded"] is False
    # GPUs idle at Gen1: speed below max, width intact
    g = topo.gpu(0).sysfs.to_dict()["link"]
    assert (g["current_gen"], g["speed_below_max"], g["width_below_max"]) == (1, True, False)


# --- VM -----------------------------------------------------------------------------------------------------


def test_vm_numa_unknown_and_no_link_attributes(tmp_path_factory):
    _, _, topo = probe("vm", tmp_path_factory)
    assert [g.pci_bus_id for g in topo.gpus] == ["0000:00:05.0", "0001:00:00.0"]
    for g in topo.gpus:
        s = g.sysfs.to_dict()
        assert g.numa_affinity is None and "numa_affinity" not in g.sources
        assert s["numa_node"] is None and "-1" in s["numa_unknown"]
        assert s["link"]["current_gen"] is None and s["narrowest_hop"] is None
        assert s["link"]["unknown"]["max_link_width"] == "missing (ENOENT)"
    x = hcas(topo)["mlx5_0"]
    assert x["numa_node"] is None and x["pci_address"] == "0000:00:06.0"
    assert x["gpu_paths"] == {"GPU0": "PHB", "GPU1": None}  # other domain + NUMA -1: unknown
    assert x["nearest_gpus"] == ["GPU0"]
    assert x["ports"][0]["netdev"] == "ib0"
    nic = topo.nics[0]
    assert nic.numa_node is None and "numa_node" not in nic.sources
    # non-node entries of devices/system/node are not nodes
    assert [n["node"] for n in topo.sysfs.to_dict()["numa"]["nodes"]] == [0]
    assert any(n.code == "sysfs.path_unknown" and "GPU1-mlx5_0" in n.message for n in topo.notes)


# --- evidence -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100", "roce-bond", "vm", "dgx-h100-faults"])
def test_evidence_rederives_offline_and_round_trips(name, tmp_path_factory, tmp_path):
    root, ev, topo = probe(name, tmp_path_factory)
    # JSON round trip, then derive: same model (a snapshot re-derives everything)
    back = sysfs.derive(json.loads(json.dumps(ev)))
    assert json.dumps(back.to_dict(), sort_keys=True) == json.dumps(topo.to_dict(), sort_keys=True)
    # nothing outside the paths the probe reads: no config/vpd, no cap_mask, no pkeys
    keys = set(ev["files"]) | set(ev["links"]) | set(ev["errors"]) | set(ev["dirs"])
    assert not any(k.endswith(("/config", "/vpd", "/cap_mask", "/hw_rev", "lifespan"))
                   or "/pkeys/" in k for k in keys)
    assert all(not k.startswith("/") and ".." not in k.split("/") for k in keys)
    # the evidence dumped as an archive gives the same evidence when captured again
    dest = sysfs_trees.scratch_dir()
    faults = fakesys.materialize(fakesys.dump(ev), dest)
    ev2 = sysfs.capture(ProbeOptions(sysfs_root=str(dest)), faults=faults)
    for k in ("files", "links", "dirs", "errors"):
        assert ev2[k] == ev[k], k


def test_generator_reproduces_committed_fixtures():
    r = subprocess.run([sys.executable, str(FIXTURES / "generate.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_host_probe_enriches_netdevs(tmp_path_factory):
    from nvtopo.render import ib

    _, ev, _ = probe("roce-bond", tmp_path_factory)
    doc = {"probes": {"sysfs": ev, "host": {
        "status": "ok", "hostname": "node7", "cpu_count_logical": 64, "cpu_count_physical": 32,
        "memory_total_bytes": 2 ** 38,
        "net_if": {"bond0": {"up": True, "speed_mbps": 200000, "mtu": 9000}}}}}
    topo = snapshot.derive(doc, "x")
    assert topo.host.hostname == "node7" and topo.host.cpu_count_logical == 64
    d = ib.document(topo)
    ports = {h["name"]: h["ports"][0] for h in d["hcas"]}
    assert ports["mlx5_bond_0"]["netdev_stats"] == {"up": True, "speed_mbps": 200000,
                                                   "mtu": 9000, "source": "psutil"}
    assert ports["rxe0"]["netdev_stats"] is None  # eno1 not reported


def test_host_probe_skips_a_copied_tree_and_reads_this_machine_otherwise(tmp_path, monkeypatch):
    # a copied tree is never this machine's /sys (whether or not this machine has one)
    ev = host.capture(ProbeOptions(sysfs_root=str(tmp_path)))
    assert ev["status"] == "skipped" and "not this machine's sysfs" in ev["error"]
    assert str(tmp_path) in ev["error"] and "hostname" not in ev
    topo = host.derive(ev)
    assert topo.host.to_dict() == {} and topo.notes == [] and topo.host_net is None
    ev = host.capture(ProbeOptions(sysfs_root=str(tmp_path / "missing")))
    assert ev["status"] == "skipped"
    # a path that is this machine's sysfs (a container's view of it, say): read as live
    real = os.path.samefile
    monkeypatch.setattr(os.path, "samefile",
                        lambda a, b: (a, b) == (str(tmp_path), "/sys") or real(a, b))
    for opts in (ProbeOptions(sysfs_root=str(tmp_path)), ProbeOptions()):
        live = host.capture(opts)
        assert live["status"] == "ok"
        assert live["cpu_count_logical"] >= 1 and live["memory_total_bytes"] > 0
        assert isinstance(live["net_if"], dict)
        topo = host.derive(live)
        assert topo.host.cpu_count_logical == live["cpu_count_logical"]
    # and snapshots skip this machine's probes by the same rule
    assert ProbeOptions(sysfs_root=str(tmp_path)).foreign_root() is False
    monkeypatch.undo()
    assert ProbeOptions(sysfs_root=str(tmp_path)).foreign_root() is True


# --- absent vs software devices ------------------------------------------------------------------


def test_faults_vanished_hca_is_absent_not_a_software_device(tmp_path_factory):
    _, ev, topo = probe("dgx-h100-faults", tmp_path_factory)
    assert "mlx5_12" not in hcas(topo) and len(topo.nics) == 12
    info = topo.sysfs.to_dict()
    assert info["absent_devices"] == {"mlx5_12": "dangling link, the device is gone (ENOENT)"}
    [note] = [n for n in topo.notes if n.code == "sysfs.device_absent"]
    assert note.level == "warning" and note.subject == "mlx5_12"
    assert "class/infiniband/mlx5_12 is absent or unreadable" in note.message
    assert not any(n.code == "sysfs.soft_device" for n in topo.notes)


SOFT_AND_ABSENT = """\
bus/pci/devices/
devices/system/node/node0/cpulist = 0-3
class/infiniband/rxe0 -> ../../devices/virtual/infiniband/rxe0
devices/virtual/infiniband/rxe0/node_type = 1: CA
devices/virtual/infiniband/rxe0/ports/1/state = 4: ACTIVE
devices/virtual/infiniband/rxe0/ports/1/link_layer = Ethernet
class/infiniband/mlx5_99 -> ../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/infiniband/mlx5_99
class/infiniband/stray = not a device
"""


def test_dangling_link_and_plain_file_are_absent_a_real_soft_device_is_soft(tmp_path):
    fakesys.materialize(SOFT_AND_ABSENT, str(tmp_path))
    ev = sysfs.capture(ProbeOptions(sysfs_root=str(tmp_path)))
    for topo in (sysfs.derive(ev), sysfs.derive(json.loads(json.dumps(ev)))):
        h = hcas(topo)
        assert list(h) == ["rxe0"]  # only the directory is a device
        assert (h["rxe0"]["soft"], h["rxe0"]["parent"], h["rxe0"]["pci_address"]) == \
            (True, "none", None)
        info = topo.sysfs.to_dict()
        assert info["absent_devices"] == {
            "mlx5_99": "dangling link, the device is gone (ENOENT)",
            "stray": "not a directory (ENOTDIR)"}
        assert info.get("rdma") is None
        notes = {(n.code, n.subject) for n in topo.notes}
        assert ("sysfs.soft_device", "rxe0") in notes
        assert ("sysfs.device_absent", "mlx5_99") in notes and \
            ("sysfs.device_absent", "stray") in notes
        assert ("sysfs.soft_device", "mlx5_99") not in notes
    # only absent entries: no devices, and the answer says why
    dest = sysfs_trees.scratch_dir()
    fakesys.materialize(SOFT_AND_ABSENT.replace("class/infiniband/rxe0 ->", "unused/rxe0 ->"),
                        dest)
    topo = sysfs.derive(sysfs.capture(ProbeOptions(sysfs_root=dest)))
    assert topo.nics == []
    assert topo.sysfs.to_dict()["rdma"] == ("no RDMA devices (2 listed but absent or "
                                           "unreadable: mlx5_99, stray)")


def test_evidence_without_device_listings_reads_devices_as_before(tmp_path_factory):
    """Snapshots taken before device directories were listed still show their devices."""
    _, ev, topo = probe("roce-bond", tmp_path_factory)
    old = json.loads(json.dumps(ev))
    real = {k for k in old["dirs"] if k.endswith(("/infiniband/mlx5_2", "/infiniband/rxe0",
                                                   "/infiniband/mlx5_bond_0"))}
    assert len(real) == 3
    for k in real:
        del old["dirs"][k]
    assert list(hcas(sysfs.derive(old))) == ["mlx5_2", "mlx5_bond_0", "rxe0"]


E810 = """\
devices/system/node/node1/cpulist = 32-63
devices/pci0000:17/0000:17:02.0/class = 0x060400
devices/pci0000:17/0000:17:02.0/vendor = 0x8086
devices/pci0000:17/0000:17:02.0/max_link_speed = 16.0 GT/s PCIe
devices/pci0000:17/0000:17:02.0/max_link_width = 16
devices/pci0000:17/0000:17:02.0/0000:18:00.0/class = 0x020000
devices/pci0000:17/0000:17:02.0/0000:18:00.0/vendor = 0x8086
devices/pci0000:17/0000:17:02.0/0000:18:00.0/device = 0x159b
devices/pci0000:17/0000:17:02.0/0000:18:00.0/numa_node = 1
devices/pci0000:17/0000:17:02.0/0000:18:00.0/local_cpulist = 32-63
devices/pci0000:17/0000:17:02.0/0000:18:00.0/current_link_speed = 16.0 GT/s PCIe
devices/pci0000:17/0000:17:02.0/0000:18:00.0/current_link_width = 8
devices/pci0000:17/0000:17:02.0/0000:18:00.0/max_link_speed = 16.0 GT/s PCIe
devices/pci0000:17/0000:17:02.0/0000:18:00.0/max_link_width = 8
devices/pci0000:17/0000:17:02.0/0000:18:00.0/infiniband/rdmap24s0f0/node_type = 4: RNIC
devices/pci0000:17/0000:17:02.0/0000:18:00.0/infiniband/rdmap24s0f0/device -> ../../../0000:18:00.0
devices/pci0000:17/0000:17:02.0/0000:18:00.0/infiniband/rdmap24s0f0/ports/1/state = 4: ACTIVE
devices/pci0000:17/0000:17:02.0/0000:18:00.0/infiniband/rdmap24s0f0/ports/1/link_layer = Ethernet
bus/pci/devices/0000:17:02.0 -> ../../../devices/pci0000:17/0000:17:02.0
bus/pci/devices/0000:18:00.0 -> ../../../devices/pci0000:17/0000:17:02.0/0000:18:00.0
class/infiniband/rdmap24s0f0 -> ../../devices/pci0000:17/0000:17:02.0/0000:18:00.0/infiniband/rdmap24s0f0
"""


def test_rdma_device_on_another_vendors_ethernet_function_is_placed(tmp_path):
    """irdma (Intel E810, class 0x0200 from vendor 0x8086): its PCI function is read too."""
    fakesys.materialize(E810, str(tmp_path))
    ev = sysfs.capture(ProbeOptions(sysfs_root=str(tmp_path)))
    topo = sysfs.derive(ev)
    x = hcas(topo)["rdmap24s0f0"]
    assert (x["pci_address"], x["numa_node"], x["soft"], x["parent"]) == \
        ("0000:18:00.0", 1, False, "pci")
    assert x["pci"]["class"] == "0x020000" and x["pci"]["link"]["current_width"] == 8
    assert x["ports"][0]["transport"] == "iWARP"
    assert not [n for n in topo.notes if n.level == "warning"]
    assert topo.nics[0].numa_node == 1 and topo.nics[0].sources["numa_node"] == "sysfs"
    assert json.dumps(sysfs.derive(json.loads(json.dumps(ev))).to_dict(), sort_keys=True) == \
        json.dumps(topo.to_dict(), sort_keys=True)


# --- GPUs are matched by bus id, never by index ----------------------------------------------------


def test_sysfs_gpu_facts_follow_the_bus_id_not_the_index(tmp_path_factory):
    from nvtopo.model import GPU, Topology, pci_bdf
    from nvtopo.render import ib

    _, ev, frag = probe("dgx-h100", tmp_path_factory)
    # the fragment: every GPU carries its bus id, from sysfs, and its facts are its own
    for g in frag.gpus:
        assert g.sources["pci_bus_id"] == "sysfs"
        assert g.sysfs.to_dict()["pci_address"] == g.pci_bus_id
    assert frag.sysfs.to_dict()["gpu_bus_ids"] == {g.label: g.pci_bus_id for g in frag.gpus}
    # another source lists 7 GPUs (the first fell off its bus), numbered 0-6, NVML spelling
    other = Topology(sources=["nvml"])
    for i, g in enumerate(frag.gpus[1:]):
        other.gpus.append(GPU(index=i, label=f"GPU{i}", pci_bus_id="0000" + g.pci_bus_id.upper(),
                              sources={"pci_bus_id": "nvml"}))
    merged = other.merge(sysfs.derive(ev))
    assert len(merged.gpus) == 7
    for g in merged.gpus:  # each GPU got the sysfs facts of its own bus id
        assert pci_bdf(g.sysfs.to_dict()["pci_address"]) == pci_bdf(g.pci_bus_id)
    assert merged.gpu(0).sysfs.to_dict()["pci_address"] == "0000:43:00.0"
    # the merge renamed the GPUs in every sysfs fact it took (sysfs numbers them in PCI
    # order): the model itself, and so show --format json, names them as the model does
    assert merged.nic("mlx5_3").sysfs.nearest_gpus == ["GPU0"]
    assert merged.nic("mlx5_3").sysfs.gpu_paths["GPU0"] == "PIX"
    assert merged.nic("mlx5_0").sysfs.nearest_gpus == ["GPU[0000:1b:00.0]"]
    assert merged.sysfs.gpu_bus_ids == dict(
        [("GPU[0000:1b:00.0]", "0000:1b:00.0")]
        + [(f"GPU{i}", g.pci_bus_id) for i, g in enumerate(frag.gpus[1:])])
    assert merged.sysfs.nvme[1].nearest_gpus == ["GPU0"]
    shown = {n["name"]: n for n in merged.to_dict()["nics"]}
    assert shown["mlx5_11"]["extra"]["sysfs"]["nearest_gpus"] == ["GPU6"]
    # the ib document names the nearest GPUs as this model does
    doc = ib.document(merged)
    h = {x["name"]: x for x in doc["hcas"]}
    assert h["mlx5_3"]["nearest_gpus"] == ["GPU0"] and h["mlx5_3"]["gpu_paths"]["GPU0"] == "PIX"
    assert h["mlx5_0"]["nearest_gpus"] == ["GPU[0000:1b:00.0]"]  # not listed by the other source
    assert h["mlx5_11"]["nearest_gpus"] == ["GPU6"]
    assert doc["nvme"][1]["nearest_gpus"] == ["GPU0"]
    assert [g["pci_address"] for g in doc["gpus"]] == [g.pci_bus_id for g in frag.gpus[1:]]
    # sysfs alone: its own numbering, unchanged
    assert frag.sysfs.gpu_bus_ids == {g.label: g.pci_bus_id for g in frag.gpus}
    assert {x["name"]: x["nearest_gpus"] for x in ib.document(frag)["hcas"]}["mlx5_3"] == ["GPU1"]
