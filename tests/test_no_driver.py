"""Issue 23, class 8: nodes with nothing working yet.

A node after a reimage (no NVIDIA driver, no RDMA driver) is exactly when nvtopo is needed:
``check``/``show`` report what the PCI bus holds (GPUs with no driver bound, ConnectX
functions with no RDMA device) instead of "nothing to check".  Fixture trees:
``fixtures/sysfs/gpu-*.sysfs`` (made by ``fixtures/sysfs/generate.py``: ``gpu_drivers``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List

from cli_runner import make_runner

import sysfs_trees
from nvtopo import fakesys
from nvtopo.checks import select_and_run
from nvtopo.cli import app
from nvtopo.probes import ProbeOptions, sysfs
from nvtopo.probes.sysfs.drivers import driver_of

ROOT = Path(__file__).resolve().parent.parent
runner = make_runner()


def _model(name: str) -> Any:
    root, faults = sysfs_trees.tree(name)
    return sysfs.derive(sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults))


def _findings(name: str) -> List[Any]:
    return list(select_and_run(_model(name)).findings)


def _by_code(findings: List[Any], code: str) -> List[Any]:
    return [f for f in findings if f.code == code]


def _cli(*args: str) -> Any:
    return runner.invoke(app, list(args), env={"COLUMNS": "220"})


def _generated_tree(**kw: Any) -> str:
    sys.path.insert(0, str(ROOT / "fixtures" / "sysfs"))
    try:
        import generate  # fixtures/sysfs/generate.py
    finally:
        sys.path.pop(0)
    dest = sysfs_trees.scratch_dir()
    fakesys.materialize(generate.gpu_drivers(**kw).text(["made by a test"]), dest)
    return dest


def test_gpus_without_driver_are_one_error() -> None:
    """Two H100s with no driver bound: one gpu.no_driver error naming both (model from the
    device id table), what is unknown, and the HCAs' driver state in their warnings."""
    topo = _model("gpu-no-driver")
    assert [g.sysfs.driver for g in topo.gpus] == ["", ""]
    fs = _findings("gpu-no-driver")
    errors = [f for f in fs if f.severity == "error"]
    assert [(f.code, str(f.subject), f.actual) for f in errors] == [
        ("gpu.no_driver", "node", "none")]
    msg = errors[0].message
    assert "GPU0 0000:3b:00.0 (NVIDIA H100 80GB HBM3)" in msg and "0000:bc:00.0" in msg
    assert "not checked" in msg and "NVLink" in msg
    nics = {str(f.subject): f.message for f in _by_code(fs, "ib.no_rdma_driver")}
    assert set(nics) == {"0000:5e:00.0", "0000:de:00.0"}
    assert "ConnectX-4" in nics["0000:5e:00.0"] and "bound to mlx5_core" in nics["0000:5e:00.0"]
    assert "no driver is bound to it at all" in nics["0000:de:00.0"]


def test_check_and_show_report_the_tree() -> None:
    root, _ = sysfs_trees.tree("gpu-no-driver")
    r = _cli("check", "--sysfs-root", root)
    assert r.exit_code == 1, r.output
    assert "gpu.no_driver" in r.output and "nothing to check" not in r.output
    r = _cli("show", "--sysfs-root", root)
    assert r.exit_code == 0, r.output
    assert "0000:3b:00.0" in r.output and "no driver bound" in r.output


def test_drivers_bound_no_finding() -> None:
    """The healthy counterpart: GPUs bound to nvidia, HCAs with their RDMA devices."""
    topo = _model("gpu-drivers-bound")
    assert [g.sysfs.driver for g in topo.gpus] == ["nvidia", "nvidia"]
    fs = _findings("gpu-drivers-bound")
    assert not [f for f in fs if f.code in ("gpu.no_driver", "gpu.passthrough",
                                            "ib.no_rdma_driver")]
    assert not [f for f in fs if f.severity == "error"]


def test_vfio_is_a_note_nouveau_an_error() -> None:
    vfio = _findings("gpu-vfio")
    assert not [f for f in vfio if f.severity != "info"]
    notes = _by_code(vfio, "gpu.passthrough")
    assert len(notes) == 1 and notes[0].actual == "vfio-pci"
    nouveau = _findings("gpu-nouveau")
    errors = [f for f in nouveau if f.severity == "error"]
    assert [(f.code, f.actual) for f in errors] == [("gpu.no_driver", "nouveau")]
    assert "bound to nouveau, not the NVIDIA driver" in errors[0].message


def test_driver_not_read_says_nothing() -> None:
    """A tree without uevent files (an older snapshot, a copy): the driver is unknown, never
    'none' (the DGX H100 fixture has none)."""
    topo = _model("dgx-h100")
    assert {g.sysfs.driver for g in topo.gpus} == {None}
    assert not _by_code(_findings("dgx-h100"), "gpu.no_driver")


def test_driverless_hcas_alone_are_reported() -> None:
    """No GPU on the bus, two ConnectX-4 without an RDMA driver: reported, not refused."""
    root = _generated_tree(gpus=0)
    r = _cli("check", "--sysfs-root", root)
    assert r.exit_code == 0, r.output
    assert r.output.count("ib.no_rdma_driver") == 2
    assert _cli("show", "--sysfs-root", root).exit_code == 0


def test_no_nvidia_device_is_nothing_to_check() -> None:
    root = _generated_tree(gpus=0, nic_drivers=())
    for cmd in ("check", "show"):
        r = _cli(cmd, "--sysfs-root", root)
        assert r.exit_code == 2, r.output


def test_driver_of_reads_uevent() -> None:
    def dev(text: Any) -> Dict[str, Any]:
        return {"attrs": {"uevent": text} if text is not None else {}}

    assert driver_of(dev("DRIVER=nvidia\nPCI_CLASS=30200")) == "nvidia"
    assert driver_of(dev("PCI_CLASS=30200\nPCI_ID=10DE:2330")) == ""
    assert driver_of(dev("PCI_CLASS=30200\nDRIVER=vfio-pci")) == "vfio-pci"
    assert driver_of(dev(None)) is None
