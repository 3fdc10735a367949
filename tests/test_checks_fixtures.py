"""NVML recordings and sysfs fixture trees through the checks."""

import json

import pytest

import nvml_fake as F
import sysfs_trees
from nvtopo import checks, examples, snapshot
from nvtopo.checks import select as S
from nvtopo.probes import ProbeOptions, sysfs


def sysfs_ev(name):
    root, faults = sysfs_trees.tree(name)
    return json.loads(json.dumps(sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults)))


def doc(machine=None, tree=None, topo_text=False):
    d = {"kind": "nvtopo-snapshot", "schema_version": 1, "host": {}, "probes": {}}
    if topo_text:
        d = snapshot.from_text_evidence(examples.read("dgx-h100"), "example")
    if machine:
        d["probes"]["nvml"] = F.record(machine)
    if tree:
        d["probes"]["sysfs"] = sysfs_ev(tree)
    return d


def found(d, layout="auto", level=("error", "warning")):
    topo = snapshot.derive(d, "node.json")
    sel = S.select(topo, layout)
    return sel, [(f.code, str(f.subject), f.severity) for f in checks.run(topo, sel).findings
                 if f.severity in level]


def test_healthy_dgx_h100_all_three_sources():
    sel, f = found(doc("dgx-h100", "dgx-h100", topo_text=True))
    assert sel.layout.name == "dgx-h100" and f == []


def test_healthy_dgx_a100_nvml_and_sysfs():
    sel, f = found(doc("dgx-a100", "dgx-a100"))
    assert sel.layout.name == "dgx-a100" and f == []


def test_link_down_recording_gives_one_link_down():
    sel, f = found(doc("dgx-h100-link-down", "dgx-h100", topo_text=True), level=("error",))
    assert sel.layout.name == "dgx-h100"
    assert f == [("nvlink.link_down", "GPU3 link 5", "error")]


def test_link_down_recording_alone_still_picks_an_h100_layout():
    sel, f = found(doc("dgx-h100-link-down"), level=("error",))
    assert sel.layout.family == "h100-8"
    assert f == [("nvlink.link_down", "GPU3 link 5", "error")]


def test_lost_gpu_recording():
    _, f = found(doc("dgx-h100-gpu-lost"), level=("error",))
    assert f == [("gpu.lost", "GPU5", "error")]


def test_mig_links_are_not_an_error():
    sel, f = found(doc("dgx-a100-mig"))
    assert sel.layout.name == "dgx-a100"
    assert f == [("nvlink.mig", "GPU0", "warning")]


@pytest.mark.parametrize("machine", ["consumer-no-nvlink", "h100-pcie-bridge", "no-nvml",
                                     "driver-not-loaded"])
def test_machines_without_a_layout_give_no_error(machine):
    sel, f = found(doc(machine), level=("error",))
    assert sel.layout is None and f == []


def test_sysfs_faults_tree():
    sel, f = found(doc("dgx-h100", "dgx-h100-faults", topo_text=True))
    assert sel.layout.name == "dgx-h100"
    errors = [(c, s) for c, s, sev in f if sev == "error"]
    warnings = [(c, s) for c, s, sev in f if sev == "warning"]
    assert errors == [("pcie.width_low", "GPU3"), ("ib.port_down", "mlx5_3 port 1"),
                      ("ib.port_down", "mlx5_4 port 1"), ("ib.rate_low", "mlx5_5 port 1"),
                      ("ib.counter_errors", "mlx5_6 port 1")]
    # the tree's GPU 0000:1b:00.0 counted one non-fatal AER error since boot (its sysfs
    # aer_dev_nonfatal, issue 25)
    assert warnings == [("pcie.gen_low", "GPU5"), ("ib.port_down", "mlx5_8 port 1"),
                        ("ib.counter_errors", "mlx5_11 port 1"), ("events.aer_counted", "GPU0")]


def test_sysfs_faults_tree_unreadable_counters_are_info():
    _, f = found(doc("dgx-h100", "dgx-h100-faults"), level=("info",))
    assert ("ib.not_checked", "node", "info") in f


@pytest.mark.parametrize("tree", ["dgx-h100", "dgx-a100", "vm"])
def test_healthy_sysfs_trees_alone_give_no_error(tree):
    _, f = found(doc(tree=tree), level=("error",))
    assert f == []


def test_roce_bond_idle_gpus_are_warnings_only():
    _, f = found(doc(tree="roce-bond"))
    assert f and all(sev == "warning" and code == "pcie.gen_low" for code, _, sev in f)


def test_one_degraded_pcie_link_is_one_finding_naming_the_devices_behind_it():
    """roce-bond: the BlueField's link 0000:3c:00.0 -> 0000:3d:00.0 at Gen4 carries the RoCE
    bond mlx5_bond_0 and the sub-function mlx5_2; it gave two pcie.gen_low findings, one per
    RDMA device name (issue 12, item 7).  Two degraded links still give two."""
    import copy

    topo = snapshot.derive(doc(tree="roce-bond"), "node.json")
    nic = [f for f in checks.run(topo, None).findings
           if f.code.startswith("pcie.") and f.subject.kind == "nic"]
    assert [(f.code, str(f.subject), f.severity) for f in nic] == [
        ("pcie.gen_low", "mlx5_2", "warning")]
    f = nic[0]
    assert "mlx5_2 and mlx5_bond_0 share one PCIe link" in f.message
    assert "0000:3c:00.0 → 0000:3d:00.0" in f.message
    assert (f.expected, f.actual) == ("Gen5", "Gen4")
    assert {str(c) for c in f.covers} == {"mlx5_2", "mlx5_bond_0"}
    # the counterpart: mlx5_2 behind a link of its own, also slow, is a second finding
    n = topo.nic("mlx5_2")
    hop = n.sysfs.pci.narrowest_hop
    own = copy.copy(hop)
    own.upstream, own.downstream = "0000:5c:00.0", "0000:5d:00.0"
    n.sysfs.pci.narrowest_hop = own
    two = sorted((str(f.subject), f.message) for f in checks.run(topo, None).findings
                 if f.code == "pcie.gen_low" and f.subject.kind == "nic")
    assert [s for s, _ in two] == ["mlx5_2", "mlx5_bond_0"]
    assert two[0][1].startswith("mlx5_2 PCIe link runs at Gen4 where Gen5 is possible "
                                "(0000:5c:00.0 → 0000:5d:00.0)")
    assert two[1][1].startswith("mlx5_bond_0 PCIe link runs at Gen4")
