"""NIC roles and listings by structure, not by name (issue 12, classes 2 and 5).

Each case with its healthy counterpart: real sysfs shapes (tests/sysfs_trees.py), the
shared corpus copies under fixtures/, simulated nodes.
"""

from __future__ import annotations

import sysfs_trees
from cli_runner import make_runner

from nvtopo.cli import app


def show(root):
    res = make_runner().invoke(app, ["show", "--sysfs-root", root])
    assert res.exit_code == 0, res.stderr
    return res.stdout


def test_show_lists_nic_functions_without_an_rdma_driver():
    """A ConnectX function with no RDMA driver is a NIC on the bus: show listed '0 NICs'
    and no NIC table; it lists each by PCI address, marked, and counts them."""
    root, _ = sysfs_trees.tree("nic-no-rdma-driver")
    out = show(root)
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("0000:0")]
    assert [r[:4] for r in rows if "driver" in r] == [
        ["0000:02:00.0", "no", "RDMA", "driver"], ["0000:03:00.0", "no", "RDMA", "driver"]]
    assert "0 NICs (+2 without an RDMA driver)" in out


def test_show_of_a_healthy_tree_lists_its_nics_and_no_driverless_row():
    out = show(sysfs_trees.tree("dgx-h100")[0])
    assert "no RDMA driver" not in out and "without an RDMA driver" not in out
    assert [ln.split()[0] for ln in out.splitlines() if ln.startswith("mlx5_")][:2] == [
        "mlx5_0", "mlx5_1"]


def _dgx_h100(slow_card=None, rate=25):
    """A simulated DGX H100 whose storage NIC mlx5_8 runs at ``rate`` Gb/s; ``slow_card``
    makes it another card model (a management port), else it is a storage card like its
    peers."""
    import json

    from nvtopo import layouts, snapshot
    from nvtopo.simulate import simulate

    doc = json.loads(json.dumps(simulate(layouts.load("dgx-h100"), [], seed=3)))
    topo = snapshot.derive(doc, where="sim.json")
    nic = topo.nic("mlx5_8")
    nic.sysfs.ports[0].rate_gbps = rate
    if slow_card is not None:
        nic.sysfs.pci.device_id = slow_card
        nic.sysfs.hca_type = "MT4127"
    return topo


def _rate_findings(topo):
    from nvtopo import checks, layouts

    return [(f.severity, f.code, str(f.subject), f.expected, f.actual)
            for f in checks.run(topo, layouts.load("dgx-h100")).findings
            if f.code == "ib.rate_low"]


def test_a_slow_port_of_another_card_model_is_not_below_its_peers():
    """A 25 Gb/s port of a ConnectX-6 Lx (management) beside 200 Gb/s storage ConnectX-6:
    not "below its peers" (it was a warning, expected 200)."""
    assert _rate_findings(_dgx_h100(slow_card="0x101f")) == []


def test_a_storage_card_slower_than_its_own_kind_is_still_below_its_peers():
    assert _rate_findings(_dgx_h100()) == [
        ("warning", "ib.rate_low", "mlx5_8 port 1", 200, 25)]
    assert _rate_findings(_dgx_h100(rate=200)) == []


def _dgx_a100(extra_layer=None, flip=None):
    """A simulated DGX A100 (compute NICs told by placement: PXB to a GPU); ``extra_layer``
    adds a ninth NIC behind GPU0's switch (a storage card running it); ``flip`` turns a
    compute NIC to Ethernet."""
    import copy
    import json

    from nvtopo import layouts, snapshot
    from nvtopo.simulate import simulate

    doc = json.loads(json.dumps(simulate(layouts.load("dgx-a100"), [], seed=3)))
    topo = snapshot.derive(doc, where="sim.json")
    if extra_layer is not None:
        new = copy.deepcopy(topo.nic("mlx5_0"))
        new.name = new.label = new.sysfs.name = "mlx5_8"
        for p in new.sysfs.ports:
            p.link_layer, p.rate_gbps = extra_layer, 100
        new.sysfs.hca_type = "MT4125"
        topo.nics.append(new)
        assert topo.gpu_nic_path(0, "mlx5_8")[0] == "PXB"
    if flip is not None:
        for p in topo.nic(flip).sysfs.ports:
            p.link_layer = "Ethernet"
    return topo


def _problems(topo):
    from nvtopo import checks
    from nvtopo.checks import select as S

    sel = S.select(topo)
    assert sel.name == "dgx-a100", sel.reason
    return [(f.severity, f.code, str(f.subject)) for f in checks.run(topo, sel).findings
            if f.severity != "info"]


def test_a_roce_storage_nic_behind_a_gpu_switch_is_not_a_compute_nic_running_ethernet():
    """Eight InfiniBand compute NICs as the layout has, and a 100 Gb/s RoCE card beside
    GPU0: storage, not compute (it was ib.link_layer and ib.rate_low: two errors)."""
    assert _problems(_dgx_a100("Ethernet")) == []
    assert _problems(_dgx_a100()) == []


def test_a_compute_nic_in_ethernet_mode_is_still_one_link_layer_error():
    assert _problems(_dgx_a100(flip="mlx5_3")) == [("error", "ib.link_layer", "mlx5_3 port 1")]


def _dgx_h100_port(layer, rate):
    """A simulated DGX H100 whose compute port mlx5_0 port 1 reads ``layer`` at ``rate``:
    the two sysfs files edited in the snapshot, as the audit did (issue 12, item 7)."""
    import json

    from nvtopo import checks, layouts, snapshot
    from nvtopo.simulate import simulate

    lay = layouts.load("dgx-h100")
    doc = json.loads(json.dumps(simulate(lay, [], seed=0)))
    files = doc["probes"]["sysfs"]["files"]
    port = next(k for k in files if k.endswith("/infiniband/mlx5_0/ports/1/link_layer"))
    files[port] = layer
    files[port[:-len("link_layer")] + "rate"] = f"{rate} Gb/sec (4X HDR)"
    topo = snapshot.derive(doc, where="sim.json")
    return [f for f in checks.run(topo, lay).findings if f.severity != "info"]


def test_a_compute_port_on_ethernet_at_a_lower_rate_is_one_link_layer_error():
    """It gave ib.link_layer and ib.rate_low (200 against the layout's 400): one cause.  An
    Ethernet port's rate is not comparable with its InfiniBand peers'; the one finding
    says it.  The counterpart: an InfiniBand port at 200 is still ib.rate_low."""
    got = _dgx_h100_port("Ethernet", 200)
    assert [(f.severity, f.code, str(f.subject)) for f in got] == [
        ("error", "ib.link_layer", "mlx5_0 port 1")]
    assert (got[0].expected, got[0].actual) == ("InfiniBand", "Ethernet")
    assert "runs Ethernet at 200 Gb/s" in got[0].message
    assert "InfiniBand at 400 Gb/s" in got[0].message
    slow = _dgx_h100_port("InfiniBand", 200)
    assert [(f.severity, f.code, str(f.subject), f.actual) for f in slow] == [
        ("error", "ib.rate_low", "mlx5_0 port 1", 200)]
    assert _dgx_h100_port("InfiniBand", 400) == []
