"""`nvtopo ib`, `--sysfs-root` on show/snapshot, and the ib JSON contract, through the CLI."""

import json
import os

import pytest
from cli_runner import make_runner

from nvtopo import fakesys
from nvtopo.cli import app

import sysfs_trees

runner = make_runner()


@pytest.fixture(autouse=True)
def no_nvidia_smi(monkeypatch):
    """Live probing must not depend on the test machine having a GPU."""
    import nvtopo.probes.topo.live as tt

    monkeypatch.setattr(tt.shutil, "which", lambda name: None)


@pytest.fixture
def tree():
    return lambda _tmp, name: sysfs_trees.tree(name)[0]


def run(*args):
    return runner.invoke(app, list(args), env={"COLUMNS": "220"})


def test_ib_table(tmp_path, tree):
    r = run("ib", "--sysfs-root", tree(tmp_path, "dgx-h100-faults"))
    assert r.exit_code == 0, r.output
    out = r.output
    for name in [f"mlx5_{i}" for i in range(12)]:
        assert f"\n{name} " in out
    row = next(ln for ln in out.splitlines() if ln.startswith("mlx5_3 "))
    assert "DOWN" in row and "Disabled" in row and "0000:40:00.0" in row and "PIX GPU1" in row
    row = next(ln for ln in out.splitlines() if ln.startswith("mlx5_5 "))
    assert "200 Gb/s HDR 4X (peers 400)" in row
    row = next(ln for ln in out.splitlines() if ln.startswith("mlx5_6 "))
    assert "link_downed=255+" in row
    row = next(ln for ln in out.splitlines() if ln.startswith("mlx5_1 "))
    assert "Ethernet (RoCE)" in row and "enp41s0f0np0" in row and "NODE GPU0" in row
    assert "12 RDMA devices · 12 ports (8 InfiniBand, 3 Ethernet, 1 unknown layer)" in out
    assert "9 ACTIVE, 3 DOWN" in out and "nvidia_peermem loaded" in out
    # a vanished HCA (dangling class link) is a warning, not a 13th device
    assert "\nmlx5_12 " not in out and "none (software)" not in out
    assert "warning: class/infiniband/mlx5_12 is absent or unreadable (dangling link" in out


def _check_contract(doc):
    assert doc["schema_version"] == 1
    for h in doc["hcas"]:
        assert isinstance(h["name"], str)
        assert h["pci_address"] is None or (isinstance(h["pci_address"], str)
                                            and h["pci_address"] == h["pci_address"].lower()
                                            and len(h["pci_address"].split(":")[0]) >= 4)
        assert h["numa_node"] is None or isinstance(h["numa_node"], int)
        for p in h["ports"]:
            assert isinstance(p["port"], int)
            assert p["state"] in ("ACTIVE", "DOWN", "INIT", "ARMED", "NOP", "ACTIVE_DEFER", None)
            assert p["phys_state"] is None or isinstance(p["phys_state"], str)
            assert p["rate_gbps"] is None or isinstance(p["rate_gbps"], (int, float))
            assert p["link_layer"] in ("InfiniBand", "Ethernet", None)
            assert p["netdev"] is None or isinstance(p["netdev"], str)


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100", "roce-bond", "vm", "dgx-h100-faults"])
def test_ib_json_contract(tmp_path, name, tree):
    r = run("ib", "--sysfs-root", tree(tmp_path, name), "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    _check_contract(doc)
    assert doc["hcas"]


def test_ib_json_values(tmp_path, tree):
    doc = json.loads(run("ib", "--sysfs-root", tree(tmp_path, "dgx-h100"), "--format",
                         "json").output)
    h = {x["name"]: x for x in doc["hcas"]}
    assert h["mlx5_0"]["pci_address"] == "0000:18:00.0" and h["mlx5_0"]["numa_node"] == 0
    p = h["mlx5_0"]["ports"][0]
    assert (p["port"], p["state"], p["phys_state"], p["rate_gbps"], p["link_layer"],
            p["netdev"]) == (1, "ACTIVE", "LinkUp", 400, "InfiniBand", "ibp24s0")
    assert h["mlx5_0"]["nearest_gpus"] == ["GPU0"] and h["mlx5_0"]["nearest_gpu_path"] == "PIX"
    assert [g["pci_address"] for g in doc["gpus"]][:2] == ["0000:1b:00.0", "0000:43:00.0"]
    assert doc["gpudirect"]["nvidia_peermem"] is True
    assert len(doc["numa"]["nodes"]) == 2


def test_snapshot_with_sysfs_root_then_ib_from_file(tmp_path, tree):
    root = tree(tmp_path, "roce-bond")
    snap = tmp_path / "snap.json"
    r = run("snapshot", "--sysfs-root", root, "-o", str(snap))
    assert r.exit_code == 0, r.output
    doc = json.loads(snap.read_text())
    ev = doc["probes"]["sysfs"]
    assert ev["status"] == "ok" and ev["root"] == root
    assert any(k.endswith("mlx5_bond_0/ports/1/rate") for k in ev["files"])
    live = json.loads(run("ib", "--sysfs-root", root, "--format", "json").output)
    offline = json.loads(run("ib", "--from", str(snap), "--format", "json").output)
    assert offline["hcas"] == live["hcas"] and offline["gpus"] == live["gpus"]
    assert offline["numa"] == live["numa"] and offline["gpudirect"] == live["gpudirect"]


def test_show_with_sysfs_root_has_pcie_facts(tmp_path, tree):
    r = run("show", "--sysfs-root", tree(tmp_path, "dgx-h100-faults"))
    assert r.exit_code == 0, r.output
    rows = {ln.split()[0]: ln for ln in r.output.splitlines() if ln.startswith("GPU")
            and "0000:" in ln}
    assert "Gen5 x16" in rows["GPU0"] and "0000:1b:00.0" in rows["GPU0"]
    assert "Gen5 x8 (max Gen5 x16)" in rows["GPU3"]
    assert "Gen3 x16 (max Gen5 x16)" in rows["GPU5"]
    assert "NVLink unknown (sysfs only)" in r.output
    j = json.loads(run("show", "--sysfs-root", tree(tmp_path / "j", "dgx-h100-faults"),
                       "--format", "json").output)
    g3 = j["gpus"][3]
    assert g3["pci_bus_id"] == "0000:61:00.0" and g3["sources"]["pci_bus_id"] == "sysfs"
    assert g3["extra"]["sysfs"]["link"]["current_width"] == 8
    assert j["nics"][0]["extra"]["sysfs"]["ports"][0]["state"] == "ACTIVE"
    assert j["extra"]["sysfs"]["numa"]["online"] == "0-1"


def test_show_example_unchanged_without_sysfs():
    r = run("show", "--example", "dgx-h100")
    assert r.exit_code == 0
    assert "PCIe link" not in r.output and "NV18" in r.output


def _one_line_error(r, start):
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert r.stdout == "" and "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(start), lines
    return lines[0]


@pytest.mark.parametrize("make", ["file", "empty-dir", "missing"])
@pytest.mark.parametrize("cmd", [["ib"], ["show"], ["snapshot"]])
def test_bad_sysfs_root_is_one_line_exit_2(tmp_path, make, cmd):
    target = tmp_path / "x"
    if make == "file":
        target.write_text("hello\n")
    elif make == "empty-dir":
        target.mkdir()
    r = make_runner().invoke(app, [*cmd, "--sysfs-root", str(target)], env={"COLUMNS": "220"})
    _one_line_error(r, f"nvtopo: error: --sysfs-root {target}: ")


@pytest.mark.parametrize("cmd", [["ib"], ["show"], ["snapshot"]])
def test_empty_sysfs_root_is_named(cmd):
    r = make_runner().invoke(app, [*cmd, "--sysfs-root", ""])
    line = _one_line_error(r, "nvtopo: error: --sysfs-root '': ")
    assert line == "nvtopo: error: --sysfs-root '': no such directory"


#: Trees that are no sysfs tree though they have bus/, class/ or devices/ (the old rule
#: took any one of them), and what the error says.
NOT_SYSFS = {
    # /proc: bus/ and sys/ are directories, but devices is a file (and so is bus/pci/devices)
    "proc-like": ("bus/pci/devices = 0000\tmlx5_core\ndevices = Character devices:\n"
                  "sys/kernel/hostname = node7\n", "no devices/ directory"),
    "class-only": ("class/net/\n", "no devices/ directory"),
    "devices-only": ("devices/pci0000:00/\n", "neither bus/ nor class/"),
    "no-markers": ("devices/virtual/\nbus/usb/\nclass/net/\n",
                   "none of devices/system/, bus/pci/devices/, class/infiniband/"),
}


@pytest.mark.parametrize("name", sorted(NOT_SYSFS))
def test_a_tree_without_what_sysfs_has_is_refused(tmp_path, name):
    text, why = NOT_SYSFS[name]
    fakesys.materialize(text, str(tmp_path))
    r = make_runner().invoke(app, ["ib", "--sysfs-root", str(tmp_path)])
    line = _one_line_error(r, f"nvtopo: error: --sysfs-root {tmp_path}: is not a sysfs tree (")
    assert why in line


def test_proc_is_not_a_sysfs_tree():
    if not os.path.isdir("/proc/bus"):
        pytest.skip("no /proc/bus here")
    r = make_runner().invoke(app, ["ib", "--sysfs-root", "/proc"])
    _one_line_error(r, "nvtopo: error: --sysfs-root /proc: is not a sysfs tree (")


@pytest.mark.parametrize("text", [
    "devices/system/node/node0/cpulist = 0-3\nclass/net/\n",     # NUMA only
    "devices/pci0000:00/\nbus/pci/devices/\n",                    # PCI only
    "devices/virtual/\nclass/infiniband/\n",                      # RDMA class only
])
def test_minimal_sysfs_trees_are_accepted(tmp_path, text):
    fakesys.materialize(text, str(tmp_path))
    r = run("ib", "--sysfs-root", str(tmp_path))
    assert r.exit_code == 0 and "No RDMA devices" in r.output, r.output


def test_ib_from_input_without_sysfs_evidence(tmp_path):
    from nvtopo import examples

    f = tmp_path / "topo.txt"
    f.write_text(examples.read("dgx-h100"))
    r = run("ib", "--from", str(f))
    assert r.exit_code == 2 and "holds no sysfs evidence" in r.stderr
    r = run("ib", "--from", str(f), "--sysfs-root", str(tmp_path))
    assert r.exit_code == 2 and "either --from or --sysfs-root" in r.stderr


def test_ib_without_rdma_devices_is_an_answer_not_an_error(tmp_path):
    root = tmp_path / "sys"
    fakesys.materialize("bus/pci/devices/\nclass/net/\ndevices/system/node/node0/cpulist = 0-3\n"
                        "devices/system/node/node0/distance = 10\n", str(root))
    r = run("ib", "--sysfs-root", str(root))
    assert r.exit_code == 0 and "No RDMA devices" in r.output
    doc = json.loads(run("ib", "--sysfs-root", str(root), "--format", "json").output)
    assert doc["hcas"] == [] and "class/infiniband absent" in doc["rdma"]


def test_ib_says_why_devices_have_no_placement(tmp_path, tree):
    """A software device is a note (no placement by design); a missing PCI function a warning."""
    r = run("ib", "--sysfs-root", tree(tmp_path, "roce-bond"))
    assert r.exit_code == 0, r.output
    notes = [ln for ln in r.output.splitlines() if ln.startswith(("note: ", "warning: "))]
    assert "note: rxe0 has no PCI parent (software RDMA device such as rxe or siw): no " \
           "placement, by design" in notes
    assert not any(ln.startswith("warning: ") for ln in notes)
    # an HCA whose PCI function is not under bus/pci/devices (a partial copy)
    root = tmp_path / "partial"
    fakesys.materialize(
        "bus/pci/devices/\ndevices/system/node/node0/cpulist = 0-3\n"
        "class/infiniband/mlx5_0 -> ../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/"
        "infiniband/mlx5_0\n"
        "devices/pci0000:15/0000:15:01.0/0000:16:00.0/infiniband/mlx5_0/device -> ../../../"
        "0000:16:00.0\n"
        "devices/pci0000:15/0000:15:01.0/0000:16:00.0/infiniband/mlx5_0/ports/1/state = "
        "4: ACTIVE\n", str(root))
    r = run("ib", "--sysfs-root", str(root))
    assert r.exit_code == 0, r.output
    assert ("warning: mlx5_0: its PCI function 0000:16:00.0 is not under bus/pci/devices: "
            "no placement (NUMA node, PCIe link and nearest GPU unknown)") in r.output
    doc = json.loads(run("ib", "--sysfs-root", str(root), "--format", "json").output)
    [h] = doc["hcas"]
    assert (h["pci_address"], h["soft"], h["numa_node"]) == ("0000:16:00.0", False, None)
    assert [n["code"] for n in doc["notes"] if n["level"] == "warning"] == ["sysfs.pci_missing"]
