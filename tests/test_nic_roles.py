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
