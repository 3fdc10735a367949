"""Sysfs as real machines have it (issue 12, item 6): a NIC with no RDMA driver bound is a
NIC (reported as such), a software RDMA device is known by where the kernel puts it (never
by a missing PCI address), GPUs only sysfs knows are listed, a tree given with
--sysfs-root is never titled "live".  Fixtures: fixtures/sysfs/{nic-no-rdma-driver,
hca-no-pci-address}.sysfs (generate.py); counterparts: vm, roce-bond, dgx-h100."""

from __future__ import annotations

import json

import sysfs_trees
from cli_runner import make_runner

from nvtopo import checks
from nvtopo.cli import app
from nvtopo.probes import ProbeOptions, sysfs
from nvtopo.probes.sysfs.build import is_software

runner = make_runner()


def derive(name):
    root, faults = sysfs_trees.tree(name)
    return root, sysfs.derive(sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults))


def codes(topo, level=("error", "warning")):
    return sorted((f.code, str(f.subject)) for f in checks.run(topo, None).findings
                  if f.severity in level)


def test_connectx_without_rdma_driver_is_a_nic_with_no_rdma_driver():
    root, topo = derive("nic-no-rdma-driver")
    assert [n.code for n in topo.notes if n.code == "sysfs.no_rdma_driver"] == [
        "sysfs.no_rdma_driver"] * 2
    assert {n.subject for n in topo.notes if n.code == "sysfs.no_rdma_driver"} == {
        "0000:02:00.0", "0000:03:00.0"}
    assert "2 RDMA-capable NIC functions without an RDMA driver: 0000:02:00.0, " \
           "0000:03:00.0" in topo.sysfs.rdma
    assert codes(topo) == [("ib.no_rdma_driver", "0000:02:00.0"),
                           ("ib.no_rdma_driver", "0000:03:00.0")]
    assert all(f.severity != "error" for f in checks.run(topo, None).findings)
    r = runner.invoke(app, ["ib", "--sysfs-root", root])
    assert r.exit_code == 0 and "without an RDMA driver" in r.stdout


def test_a_node_with_its_rdma_driver_has_no_such_finding():
    for name in ("vm", "roce-bond", "dgx-h100"):
        _, topo = derive(name)
        assert not [n for n in topo.notes if n.code == "sysfs.no_rdma_driver"], name
        assert "ib.no_rdma_driver" not in {c for c, _ in codes(topo)}, name


def test_show_lists_gpus_only_sysfs_knows_and_is_not_titled_live():
    root, _ = sysfs_trees.tree("nic-no-rdma-driver")
    r = runner.invoke(app, ["show", "--sysfs-root", root])
    assert r.exit_code == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert "live" not in first and f"sysfs tree {root}" in first.replace("\n", "")
    assert "GPUs" in r.stdout and "0000:01:00.0" in r.stdout and "0000:04:00.0" in r.stdout
    assert "Gen5 x16" in r.stdout
    # the counterpart: a tree with RDMA devices shows its matrix and NICs, titled the same
    root, _ = sysfs_trees.tree("vm")
    r = runner.invoke(app, ["show", "--sysfs-root", root])
    assert r.exit_code == 0 and "live" not in r.stdout.splitlines()[0]
    assert "NICs" in r.stdout


def test_software_device_is_known_by_its_place_not_by_a_missing_pci_address():
    assert is_software({"name": "rxe0", "path": "/sys/devices/virtual/infiniband/rxe0"})
    assert is_software({"name": "roce_eth0", "path": "devices/virtual/infiniband/roce_eth0"})
    assert is_software({"name": "siw0", "path": ""})  # evidence without the path
    assert not is_software({"name": "mlx5_2",
                            "path": "devices/platform/mlx5_core.2/infiniband/mlx5_2"})
    assert not is_software({"name": "rxe_looking_but_pci",
                            "path": "devices/pci0000:00/0000:00:02.0/infiniband/x"})


def test_hca_with_unknown_placement_is_still_checked_for_rate():
    _, topo = derive("hca-no-pci-address")
    by = {n.name: n.sysfs for n in topo.nics}
    assert by["mlx5_2"].soft is False and by["mlx5_2"].pci_address is None
    assert "no PCI address" in by["mlx5_2"].pci_note
    assert by["rxe0"].soft is True
    assert by["mlx5_2"].ports[0].rate_gbps == 200
    got = codes(topo)
    # a 200G port among 400G peers is not hidden as "software"
    assert ("ib.rate_low", "mlx5_2 port 1") in got
    assert not [c for c in got if c[1].startswith(("mlx5_0", "mlx5_1", "rxe0"))]
    assert [n.code for n in topo.notes if n.subject == "mlx5_2"] == ["sysfs.pci_missing"]


def test_roce_bond_rxe_is_still_software():
    _, topo = derive("roce-bond")
    soft = {n.name for n in topo.nics if n.sysfs.soft}
    assert soft == {"rxe0"}


def test_json_of_a_driverless_tree_is_valid():
    root, _ = sysfs_trees.tree("nic-no-rdma-driver")
    r = runner.invoke(app, ["check", "--sysfs-root", root, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {f["code"] for f in doc["findings"] if f["severity"] == "warning"} == {
        "ib.no_rdma_driver"}


def test_sriov_virtual_functions_without_rdma_are_not_reported():
    from nvtopo.probes.sysfs.build import _rdma_capable
    vf = {"class": 0x020700, "vendor": 0x15B3, "attrs": {"device": "0x101e"}}
    pf = {"class": 0x020700, "vendor": 0x15B3, "attrs": {"device": "0x1021"}}
    eth_pf = {"class": 0x020000, "vendor": 0x15B3, "attrs": {"device": "0x101d"}}
    other_eth = {"class": 0x020000, "vendor": 0x8086, "attrs": {"device": "0x1593"}}
    assert [_rdma_capable(d) for d in (vf, pf, eth_pf, other_eth)] == [False, True, True,
                                                                       False]


MLX4 = """\
class/infiniband/mlx4_0 -> ../../devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0
bus/pci/devices/0000:02:00.0 -> ../../../devices/pci0000:00/0000:00:02.0/0000:02:00.0
devices/pci0000:00/0000:00:02.0/0000:02:00.0/class = 0x020700
devices/pci0000:00/0000:00:02.0/0000:02:00.0/vendor = 0x15b3
devices/pci0000:00/0000:00:02.0/0000:02:00.0/device = 0x1003
devices/pci0000:00/0000:00:02.0/0000:02:00.0/numa_node = 0
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/node_type = 1: CA
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/device -> ../../../0000:02:00.0
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/ports/1/state = 4: ACTIVE
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/ports/1/phys_state = 5: LinkUp
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/ports/1/rate = 56 Gb/sec (4X FDR)
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/ports/1/link_layer = InfiniBand
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/ports/1/counters/port_xmit_data = 4294967295
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/ports/1/counters/port_rcv_data = 4294967295
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/ports/1/counters/symbol_error = 0
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/ports/1/counters_ext/port_xmit_data_64 = 123456789012
devices/pci0000:00/0000:00:02.0/0000:02:00.0/infiniband/mlx4_0/ports/1/counters_ext/port_rcv_data_64 = 98765432109
"""


def test_64_bit_counters_ext_are_read_where_present(tmp_path):
    from nvtopo import fakesys
    for name, text in (("ext", MLX4), ("base", "\n".join(
            ln for ln in MLX4.splitlines() if "counters_ext" not in ln) + "\n")):
        root = tmp_path / name
        fakesys.materialize(text, str(root), where=name)
        topo = sysfs.derive(sysfs.capture(ProbeOptions(sysfs_root=str(root))))
        port = topo.nic("mlx4_0").sysfs.ports[0]
        if name == "ext":
            assert port.counters["port_xmit_data"] == 123456789012
            assert port.data_bytes["xmit_bytes" if "xmit_bytes" in port.data_bytes else
                                   next(k for k in port.data_bytes if "xmit" in k)] \
                == 123456789012 * 4
            assert port.counters_saturated == []
            assert not [n for n in topo.notes if n.code == "sysfs.counters_saturated"]
        else:  # the counterpart: 32-bit only, stuck at the maximum: said so
            assert port.counters["port_xmit_data"] == 4294967295
            assert "port_xmit_data" in port.counters_saturated
