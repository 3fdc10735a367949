"""NVMe drives, the IOMMU and the `gds` check family (docs/storage.md)."""

import copy
import json
import os
import shutil
import threading

import pytest

import nvml_fake as F
import sysfs_trees
from nvtopo import checks, fakesys, layouts, snapshot
from nvtopo.checks import gds
from nvtopo.checks import select as S
from nvtopo.errors import NvtopoError
from nvtopo.model.storage import NvmeDrive, NvmeNamespace
from nvtopo.probes import ProbeOptions, sysfs
from nvtopo.probes.sysfs import nvme as nvme_probe
from nvtopo.probes.sysfs import read as sysfs_read
from nvtopo.simulate import simulate

SECRET = "DHHC-1:00:bnZ0b3BvLWZpeHR1cmUtbm90LWEtcmVhbC1rZXktMDAwMDAw:"
U2, M2 = 7501476528 * 512, 3750748848 * 512


def evidence(name, reader=None):
    root, faults = sysfs_trees.tree(name)
    ev = sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults, reader=reader)
    return json.loads(json.dumps(ev))


def model(name):
    return sysfs.derive(evidence(name))


def doc(tree, machine=None):
    d = {"kind": "nvtopo-snapshot", "schema_version": 1, "host": {}, "probes": {}}
    if machine:
        d["probes"]["nvml"] = F.record(machine)
    d["probes"]["sysfs"] = evidence(tree)
    return d


def findings(d, layout="auto", level=("error", "warning")):
    topo = d if not isinstance(d, dict) else snapshot.derive(d, "node.json")
    if isinstance(layout, str):
        layout = S.select(topo, layout).layout
    return [(f.code, str(f.subject), f.severity) for f in checks.run(topo, layout).findings
            if f.severity in level and f.code.startswith("gds.")]


def stated(name="dgx-h100"):
    """The bundled layout with the GDS expectation stated ([S]) instead of inferred."""
    lay = layouts.load(name)
    data = copy.deepcopy(lay.data)
    data["storage"]["gds"]["evidence"] = "[S: H100UG] stated for the test"
    return layouts.parse(json.dumps(data), where=lay.name)


# --- reading ------------------------------------------------------------------------------------


def test_controllers_parsed_with_their_real_values():
    s = model("dgx-h100-gds").sysfs
    assert s.storage.nvme_class == "read" and s.storage.iommu == "passthrough"
    by = {d.controller: d for d in s.nvme}
    assert sorted(by) == [f"nvme{k}" for k in range(10)]
    os0, data2 = by["nvme0"], by["nvme2"]
    assert (os0.pci_address, os0.model, os0.firmware, os0.transport, os0.state) == (
        "0000:0a:00.0", "SAMSUNG MZ1L21T9HCLS-00A07", "GDC7302Q", "pcie", "live")
    assert [(n.name, n.size_bytes) for n in os0.namespaces] == [("nvme0n1", M2)]
    assert os0.best_path == "NODE"
    assert data2.pci_address == "0000:19:00.0" and data2.size_bytes == U2
    assert data2.best_path == "PIX" and data2.nearest_gpus == ["GPU0"]


def test_odd_controllers_unknown_size_multipath_and_fabrics():
    s = model("nvme-odd").sysfs
    by = {d.controller: d for d in s.nvme}
    assert by["nvme0"].state == "resetting"
    assert [(n.name, n.size_bytes) for n in by["nvme0"].namespaces] == [("nvme0n1", None)]
    assert by["nvme0"].size_bytes is None  # unknown, not 0
    assert [(n.name, n.size_bytes) for n in by["nvme1"].namespaces] == [("nvme1c1n1", U2)]
    tcp = by["nvme2"]
    assert (tcp.pci_address, tcp.transport, tcp.gpu_paths) == ("", "tcp", {})
    assert s.storage.iommu == "unknown" and "5.11" in s.storage.iommu_how


def test_no_secret_nor_unneeded_identifier_is_read_or_kept():
    opened = []

    def reader(path):
        opened.append(path)
        return sysfs_read.read_file(path)

    for name in ("dgx-h100-gds", "nvme-odd"):
        ev = evidence(name, reader=reader)
        text = json.dumps(ev)
        assert SECRET not in text and "DHHC" not in text
        assert "S6CKNA0T" not in text and "192.0.2.7" not in text  # serial, fabric address
        assert json.dumps(sysfs.derive(ev).to_dict()).count("DHHC") == 0
    names = {os.path.basename(p) for p in opened}
    assert {"model", "firmware_rev", "size"} <= names  # the reader did see the nvme reads
    assert not names & {"dhchap_secret", "dhchap_ctrl_secret", "serial", "address"}


def test_a_dhchap_fifo_is_never_opened(tmp_path):
    """A FIFO blocks whoever opens it for reading: the walk must finish all the same."""
    root = tmp_path / "sys"
    faults = fakesys.load_file(str(sysfs_trees.FIXTURES / "dgx-h100-gds.sysfs"), str(root))
    fifos = []
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            if f.startswith("dhchap"):
                p = os.path.join(dirpath, f)
                os.unlink(p)
                os.mkfifo(p)
                fifos.append(p)
    assert len(fifos) == 18
    opened = []

    def reader(path):
        opened.append(path)
        return sysfs_read.read_file(path)

    result = {}
    t = threading.Thread(target=lambda: result.setdefault(
        "ev", sysfs.capture(ProbeOptions(sysfs_root=str(root), timeout=30), faults=faults,
                            reader=reader)), daemon=True)
    t.start()
    t.join(10)  # a hang detector: the walk takes well under a second
    assert not t.is_alive(), "the walk blocked on a FIFO"
    assert opened and not [p for p in opened if os.path.basename(p).startswith("dhchap")]
    assert len(sysfs.derive(result["ev"]).sysfs.nvme) == 10
    shutil.rmtree(root)


def test_iommu_states():
    st = nvme_probe.iommu_state
    assert st({"groups": 0})[0] == "off"
    assert st({"groups": None, "groups_error": "ENOENT: No such file or directory"})[0] == "off"
    assert st({"groups": None, "groups_error": sysfs_read.NOT_RECORDED})[0] == "unknown"
    assert st({"groups": None, "groups_error": "EACCES: Permission denied"})[0] == "unknown"
    assert st({"groups": 4, "group_types": {"a": "identity", "b": "identity"}})[0] == "passthrough"
    assert st({"groups": 4, "group_types": {"a": "identity", "b": "DMA-FQ"}})[0] == "translated"
    assert st({"groups": 4, "group_types": {"a": None}})[0] == "unknown"
    assert st({"groups": 4, "group_types": {}})[0] == "unknown"
    # no kernel/iommu_groups is "off" only where kernel/ itself was there (a real /sys always
    # has it): a copied tree that left kernel/ out records nothing about the IOMMU
    gone = {"groups": None, "groups_error": "ENOENT: No such file or directory"}
    assert st(dict(gone, kernel_dir=True))[0] == "off"
    assert st(dict(gone, kernel_dir=False))[0] == "unknown"


def test_a_tree_without_kernel_dir_is_not_called_iommu_off(tmp_path):
    """Before: a copied tree without kernel/ read "IOMMU off" (a pass on a fact never seen)."""
    root = tmp_path / "t"
    shutil.copytree(sysfs_trees.tree("dgx-h100")[0], str(root), symlinks=True)
    assert not (root / "kernel").exists()

    def storage():
        ev = json.loads(json.dumps(sysfs.capture(ProbeOptions(sysfs_root=str(root)))))
        return sysfs.derive(ev).sysfs.storage

    assert storage().iommu == "unknown" and "kernel/" in storage().iommu_how
    (root / "kernel").mkdir()
    assert storage().iommu == "off"


def test_evidence_taken_before_class_nvme_was_read_is_not_checked():
    ev = evidence("dgx-h100-gds")
    ev = {k: v for k, v in ev.items()}
    ev["dirs"] = {k: v for k, v in ev["dirs"].items()
                  if not k.startswith(("class/nvme", "kernel/", "class/iommu"))}
    topo = sysfs.derive(ev)
    assert topo.sysfs.storage.nvme_class == "not recorded"
    assert topo.sysfs.storage.iommu == "unknown"
    assert findings(topo, stated()) == []
    infos = findings(topo, stated(), level=("info",))
    assert infos == [("gds.not_checked", "node", "info")]


# --- checks -----------------------------------------------------------------------------------


def test_healthy_gds_tree_is_clean_even_when_stated():
    d = doc("dgx-h100-gds", "dgx-h100")
    assert findings(d) == []
    assert findings(d, stated()) == []


def test_faulty_tree_one_finding_per_fault_warnings_when_inferred():
    d = doc("dgx-h100-gds-faults", "dgx-h100")
    got = findings(d)
    assert sorted(got) == [("gds.drive_far", "nvme2 (0000:1d:00.0)", "warning"),
                           ("gds.iommu", "node", "warning"),
                           ("gds.no_nvidia_fs", "node", "warning")]
    topo = snapshot.derive(d, "node.json")
    far = [f for f in checks.run(topo, stated()).findings if f.code == "gds.drive_far"][0]
    assert far.severity == "error" and far.actual == "PHB" and far.expected == "PXB"
    assert "by size" in far.message  # says how the OS drives were told apart
    assert sorted(findings(topo, stated())) == [
        ("gds.drive_far", "nvme2 (0000:1d:00.0)", "error"), ("gds.iommu", "node", "warning"),
        ("gds.no_nvidia_fs", "node", "error")]


def test_no_sysfs_is_not_checked_never_a_pass():
    d = {"kind": "nvtopo-snapshot", "schema_version": 1, "host": {},
         "probes": {"nvml": F.record("dgx-h100")}}
    topo = snapshot.derive(d, "node.json")
    assert findings(topo, stated()) == []
    assert findings(topo, stated(), level=("info",)) == [("gds.not_checked", "node", "info")]


def test_no_expectation_and_no_drives_says_nothing():
    topo = model("nic-no-rdma-driver")
    assert findings(topo, None, level=("error", "warning", "info")) == []


def test_controller_state_is_checked_without_a_layout():
    assert findings(model("nvme-odd"), None) == [
        ("gds.drive_state", "nvme0 (0000:02:00.0)", "warning")]


def _drive(name, size, path):
    return NvmeDrive(pci_address=f"0000:{name}:00.0", controller=f"nvme{name}",
                     gpu_paths={"GPU0": path},
                     namespaces=[NvmeNamespace(name="n1", size_bytes=size)])


def test_split_os_from_data_drives():
    small = [_drive("01", M2, "NODE"), _drive("02", M2, "NODE")]
    data = [_drive(f"1{k}", U2, "PIX") for k in range(3)] + [_drive("20", U2, "NODE")]
    os_set, dat, how = gds.split(small + data, 2)
    assert [d.controller for d in os_set] == ["nvme01", "nvme02"] and "by size" in how
    assert len(dat) == 4
    # sizes equal: placement decides only when exactly os_drives drives are far
    same = [_drive("01", U2, "NODE"), _drive("02", U2, "NODE")] + data[:3]
    os_set, dat, how = gds.split(same, 2)
    assert [d.controller for d in os_set] == ["nvme01", "nvme02"] and "by placement" in how
    # three far drives of one size: undecided, and no drive is called misplaced
    os_set, dat, how = gds.split(same + [data[3]], 2)
    assert os_set is None and all(d.best_path == "PIX" for d in dat)
    # an unknown size: size does not decide
    unknown = [_drive("01", None, "NODE")] + small[1:] + data
    assert gds.split(unknown, 2)[0] is None


# --- simulate ------------------------------------------------------------------------------------


def sim(*faults, name="dgx-h100"):
    return snapshot.derive(simulate(layouts.load(name), list(faults)), "sim.json")


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-h200"])
def test_simulated_nodes_have_drives_and_are_clean(name):
    topo = sim(name=name)
    drives = topo.sysfs.nvme
    assert len(drives) == 10 and topo.sysfs.gpudirect.nvidia_fs
    assert sorted(d.best_path for d in drives) == ["NODE"] * 2 + ["PIX"] * 8
    assert findings(topo, stated(name)) == []


def test_simulated_faults():
    topo = sim("nvme-far:3")
    got = findings(topo, stated())
    assert len(got) == 1 and got[0][0] == "gds.drive_far" and got[0][2] == "error"
    far = [d for d in topo.sysfs.nvme if d.controller == got[0][1].split()[0]][0]
    assert far.nearest_gpus == ["GPU3"] and far.best_path not in ("PIX", "PXB")
    assert findings(sim("iommu-on"), stated()) == [("gds.iommu", "node", "warning")]
    assert findings(sim("no-nvidia-fs"), stated()) == [("gds.no_nvidia_fs", "node", "error")]


def test_a_missing_gpu_does_not_make_its_drive_misplaced():
    topo = sim("gpu-missing:GPU4")
    assert findings(topo, stated()) == []


def test_storage_faults_need_a_gds_layout():
    for spec in ("nvme-far:1", "iommu-on", "no-nvidia-fs"):
        with pytest.raises(NvtopoError, match="does not expect GPUDirect Storage"):
            simulate(layouts.load("dgx-a100"), [spec])
    with pytest.raises(NvtopoError, match="no data drive 8"):
        simulate(layouts.load("dgx-h100"), ["nvme-far:8"])


# --- show ----------------------------------------------------------------------------------------


def _show(topo, width):
    from rich.console import Console

    from nvtopo.render.matrix import render

    con = Console(width=width, record=True, color_system=None, file=open(os.devnull, "w"))
    con.print(render(topo, width))
    return con.export_text()


def test_show_storage_table_reads_at_80_columns():
    out = _show(model("dgx-h100-gds-faults"), 80)
    block = out[out.index("NVMe drives"):out.index("GPUDirect Storage:")]
    assert all(len(ln.rstrip()) <= 80 for ln in block.splitlines())
    rows = {ln.split()[0]: ln.split() for ln in block.splitlines()[2:] if ln.strip()}
    assert rows["nvme2"] == ["nvme2", "0000:1d:00.0", "SAMSUNG", "MZWLR3T8HBLS-00007", "3.84",
                             "TB", "PHB", "GPU0", "live"]
    assert rows["nvme0"][-3:] == ["NODE", "GPU0-3", "live"]
    assert "GPUDirect Storage: IOMMU translated · nvidia_fs not loaded" in out
    odd = _show(model("nvme-odd"), 80)
    assert "unknown  PHB GPU0     resetting" in odd and "over tcp" in odd


# --- pasted gdscheck -p --------------------------------------------------------------------------

GDS_TEXT = sysfs_trees.FIXTURES.parent / "gds-text"


def _gds(name):
    from nvtopo.snapshot import load_text

    path = GDS_TEXT / name
    return load_text(path.read_text(encoding="utf-8"), str(path))


def test_gdscheck_parsed_values():
    from nvtopo.probes import readers

    text = (GDS_TEXT / "gdscheck-p.txt").read_text(encoding="utf-8")
    assert readers.names(text) == ["gds-text"]
    g = _gds("gdscheck-p.txt").gds_text
    assert (g.gds_version, g.nvidia_fs_version, g.libcufile_version, g.platform) == (
        "1.7.2.10", "2.17", "2.12", "x86_64")
    assert g.supported("NVMe") is True and g.supported("NVMeOF") is False
    assert g.drivers["IBM Spectrum Scale"] == "Unsupported" and len(g.drivers) == 11
    assert "--Mellanox PeerDirect" not in g.drivers  # a sub-item, not a driver
    assert (g.iommu, g.verification) == ("disabled", "succeeded")
    bad = _gds("gdscheck-p-iommu-on.txt").gds_text
    assert (bad.supported("NVMe"), bad.iommu, bad.verification) == (False, "enabled", "failed")
    cut = _gds("gdscheck-p-cut.txt").gds_text
    assert (cut.iommu, cut.verification) == (None, None)  # unknown, not disabled


def test_gdscheck_findings():
    assert findings(_gds("gdscheck-p.txt"), None) == []
    assert sorted(findings(_gds("gdscheck-p-iommu-on.txt"), None)) == [
        ("gds.iommu", "node", "warning"), ("gds.nvme_unsupported", "node", "warning"),
        ("gds.platform", "node", "warning")]
    # where a layout states the expectation, NVMe Unsupported is an error
    got = dict((c, s) for c, _, s in findings(_gds("gdscheck-p-iommu-on.txt"), stated()))
    assert got["gds.nvme_unsupported"] == "error"
    assert findings(_gds("gdscheck-p-cut.txt"), None, level=("info",)) == [
        ("gds.not_checked", "node", "info")]


def test_gdscheck_damaged_is_one_line_and_hostile_text_is_escaped():
    from nvtopo.probes import gds_text

    with pytest.raises(NvtopoError, match="DRIVER CONFIGURATION"):
        _gds("gdscheck-p-damaged.txt")
    text = (GDS_TEXT / "gdscheck-p.txt").read_text(encoding="utf-8").replace(
        " NFS                : Unsupported", " NFS                : Un\x1b[2Jsupported")
    g = gds_text.parse(text)
    assert "\x1b" not in json.dumps(g.to_dict()) and g.supported("NFS") is None
    long_line = "GDS release version: 1\nDRIVER CONFIGURATION:\n" + " x" * 200_000 + " : y\n"
    assert gds_text.looks_like(long_line)
    with pytest.raises(NvtopoError):
        gds_text.parse(long_line)  # the line is cut at MAX_LINE: no driver, and no hang


def test_gdscheck_gpu_info_lines():
    """GPU INFO was never read: a GPU gdscheck says does not support GDS went unchecked."""
    from nvtopo.probes.gds_text import gpu_line

    g = _gds("gdscheck-p.txt").gds_text
    assert [(x.index, x.name, x.bar_mib, x.supports_gds, x.support, x.iommu) for x in g.gpus] \
        == [(i, "NVIDIA H100 80GB HBM3", 131072, True, "supports GDS", "disabled")
            for i in (0, 1)]
    assert [x.iommu for x in _gds("gdscheck-p-iommu-on.txt").gds_text.gpus] == ["enabled"] * 2
    odd = _gds("gdscheck-p-gpu-unsupported.txt").gds_text
    assert [(x.index, x.name, x.bar_mib, x.supports_gds) for x in odd.gpus] == [
        (0, "NVIDIA RTX A6000", 65536, True), (1, "NVIDIA GeForce RTX 4090", 256, False)]
    assert odd.gpus[1].support == "does not support GDS"
    # GDS before 1.7 prints no IOMMU State; a published paste spells it "Disable"
    old = gpu_line(" GPU index 3 Tesla V100-SXM3-32GB bar:1 bar size (MiB):32768 supports GDS")
    assert (old.index, old.name, old.bar_mib, old.supports_gds, old.iommu) == (
        3, "Tesla V100-SXM3-32GB", 32768, True, None)
    assert gpu_line("GPU index 0 NVIDIA RTX A6000 bar:1 bar size (MiB):256 supports GDS, "
                    "IOMMU State: Disable").iommu == "disabled"
    # cut inside the line: what it shows, the rest unknown; not a GPU line: None
    cut = gpu_line("GPU index 1 NVIDIA H100 80GB HBM3 bar:1 bar si")
    assert (cut.index, cut.name, cut.bar_mib, cut.supports_gds) == (
        1, "NVIDIA H100 80GB HBM3", None, None)
    assert gpu_line("GPU INFO:") is None and gpu_line("GPU index x y") is None
    hostile = gpu_line("GPU index 0 \x1b]8;;http://x\x07Evil bar:1 bar size (MiB):1 supports GDS")
    assert "\x1b" not in hostile.name and "\x07" not in hostile.name


def test_gdscheck_gpu_not_supporting_gds_is_a_finding():
    odd = _gds("gdscheck-p-gpu-unsupported.txt")
    assert findings(odd, None) == [("gds.gpu_unsupported", "GPU index 1", "warning")]
    assert findings(odd, stated()) == [("gds.gpu_unsupported", "GPU index 1", "error")]
    # the healthy counterparts: every GPU supports GDS
    assert findings(_gds("gdscheck-p.txt"), stated()) == []
    assert "gds.gpu_unsupported" not in {c for c, _, _ in findings(
        _gds("gdscheck-p-iommu-on.txt"), stated())}


def test_gdscheck_cut_before_platform_info_reads_the_iommu_of_its_gpu_lines():
    text = (GDS_TEXT / "gdscheck-p-iommu-on.txt").read_text(encoding="utf-8")
    cut = text[:text.index(" ==============\n PLATFORM INFO")]
    from nvtopo.snapshot import load_text

    topo = load_text(cut, "cut.txt")
    assert topo.gds_text.iommu is None
    assert ("gds.iommu", "node", "warning") in findings(topo, None)
    healthy = (GDS_TEXT / "gdscheck-p.txt").read_text(encoding="utf-8")
    topo = load_text(healthy[:healthy.index(" ==============\n PLATFORM INFO")], "cut.txt")
    assert findings(topo, None, level=("error", "warning", "info")) == []


def test_show_prints_a_gdscheck_paste(tmp_path):
    """show refused it: 'nothing to show: no GPU facts' (exit 2), in every format."""
    import xml.dom.minidom

    from cli_runner import make_runner

    from nvtopo.cli import app

    runner = make_runner()
    path = str(GDS_TEXT / "gdscheck-p-gpu-unsupported.txt")
    r = runner.invoke(app, ["show", "--from", path], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.stderr
    assert all(len(ln) <= 80 for ln in r.stdout.splitlines())
    assert "gdscheck -p · GDS 1.7.2.10 · nvidia_fs 2.17 · libcufile 2.12" in r.stdout
    row = [ln.split() for ln in r.stdout.splitlines() if "GeForce" in ln][0]
    assert row == ["1", "NVIDIA", "GeForce", "RTX", "4090", "256", "MiB", "does", "not",
                   "support", "GDS", "disabled"]
    assert "platform: IOMMU disabled · verification succeeded" in r.stdout
    assert "gdscheck -p lists 2 GPUs, 1 supporting GDS" in r.stdout
    r = runner.invoke(app, ["show", "--from", path, "--format", "svg"])
    assert r.exit_code == 0, r.stderr
    xml.dom.minidom.parseString(r.stdout.encode("utf-8"))
    assert "GPU index 1 NVIDIA GeForce RTX 4090: does not support GDS" in r.stdout
    assert "drivers: 1 of 11 Supported: NVMe" in r.stdout
    r = runner.invoke(app, ["show", "--from", path, "--format", "json"])
    model = json.loads(r.stdout)
    assert [x["supports_gds"] for x in model["extra"]["gds-text"]["gpus"]] == [True, False]
    r = runner.invoke(app, ["show", "--from", str(GDS_TEXT / "gdscheck-p-damaged.txt")])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1


def test_gdscheck_is_not_kept_in_a_snapshot():
    from nvtopo import snapshot as snap

    with pytest.raises(NvtopoError, match="not kept in a snapshot"):
        snap._document_of((GDS_TEXT / "gdscheck-p.txt").read_text(encoding="utf-8"), "x.txt")


def test_svg_draws_the_drives_with_their_findings(tmp_path):
    import xml.dom.minidom

    from nvtopo.render import svg

    topo = model("dgx-h100-gds-faults")
    report = checks.run(topo, stated())
    doc = svg.render(topo, report)
    xml.dom.minidom.parseString(doc.encode("utf-8"))
    assert doc.count('class="nvme') == 10
    assert '<g id="nvme-nvme2" class="nvme fault-error">' in doc
    assert '<g id="nvme-nvme3" class="nvme">' in doc and ">PIX GPU1</text>" in doc
    assert ">PHB GPU0</text>" in doc
    assert "NVMe drives (10)" in doc


def _drive_names(topo):
    return sorted(d.controller for d in topo.sysfs.nvme)


@pytest.mark.parametrize("layout", [None, "stated"])
def test_bunched_data_drives_are_one_warning_naming_the_switch(layout):
    lay = stated() if layout else layouts.load("dgx-h100")
    healthy = sim()
    assert findings(healthy, lay) == []
    topo = sim("nvme-bunched:3")  # drive 3 moves behind GPU4's switch, beside drive 4
    assert _drive_names(topo) == _drive_names(healthy)  # still 10 drives, all near a GPU
    assert sorted(d.best_path for d in topo.sysfs.nvme) == ["NODE"] * 2 + ["PIX"] * 8
    fs = [f for f in checks.run(topo, lay).findings if f.code.startswith("gds.")]
    assert [(f.code, f.severity, f.expected, f.actual) for f in fs] == [
        ("gds.drives_bunched", "warning", 1, 2)]
    pair = [d for d in topo.sysfs.nvme if d.nearest_gpus == ["GPU4"]]
    assert len(pair) == 2 and "GPU4" in fs[0].message
    assert all(_name_in(d, fs[0].message) for d in pair)


def _name_in(d, text):
    return d.controller in text


def test_a_missing_data_drive_is_a_drive_count_warning():
    topo = sim("nvme-missing:5")
    assert len(topo.sysfs.nvme) == 9
    fs = [f for f in checks.run(topo, stated()).findings if f.code.startswith("gds.")]
    assert [(f.code, f.severity, f.expected, f.actual) for f in fs] == [
        ("gds.drives", "warning", 8, 7)]
    assert "7 data drives, the layout has 8" in fs[0].message
    # the healthy node against a layout that states 8 data drives: clean
    assert findings(sim(), stated()) == []


def test_new_storage_faults_are_bounded():
    for spec in ("nvme-bunched:8", "nvme-missing:9"):
        with pytest.raises(NvtopoError, match="no data drive"):
            simulate(layouts.load("dgx-h100"), [spec])
    with pytest.raises(NvtopoError, match="does not expect GPUDirect Storage"):
        simulate(layouts.load("dgx-a100"), ["nvme-missing:1"])


# --- gdscheck -p forms seen in the wild (issue 23 class 7) --------------------------------------


def test_gdscheck_1_16_modes_compat_only_is_not_gds():
    """GDS 1.16+ lists a driver's I/O modes: `NVMe : compat` (page cache only) passed as if
    nothing were wrong; `nvfs, compat` (nvidia_fs direct, compat beside) is support."""
    compat = _gds("gdscheck-p-1.16-nvme-compat.txt").gds_text
    assert (compat.gds_version, compat.nvidia_fs_version, compat.libcufile_version) == (
        "1.16.1.26", "2.27", None)  # "nvidia_fs minimum version" is not the module's
    assert compat.drivers["NVMe"] == "compat" and compat.drivers["NVMe P2PDMA"] == "Unsupported"
    assert (compat.supported("NVMe"), compat.compat_only("NVMe")) == (False, True)
    got = findings(_gds("gdscheck-p-1.16-nvme-compat.txt"), None)
    assert got == [("gds.nvme_unsupported", "node", "warning")]
    f = [f for f in checks.run(_gds("gdscheck-p-1.16-nvme-compat.txt"), None).findings
         if f.code == "gds.nvme_unsupported"][0]
    assert "compatibility mode only" in f.message and f.actual == "compat"
    # a layout that states GDS: an error
    assert findings(_gds("gdscheck-p-1.16-nvme-compat.txt"), stated()) == [
        ("gds.nvme_unsupported", "node", "error")]
    # healthy counterpart: the same tool with nvidia_fs's direct path
    ok = _gds("gdscheck-p-1.16-nvfs-compat.txt").gds_text
    assert (ok.drivers["NVMe"], ok.supported("NVMe"), ok.compat_only("NVMe")) == (
        "nvfs, compat", True, False)
    assert findings(_gds("gdscheck-p-1.16-nvfs-compat.txt"), None) == []


def test_gdscheck_p2pdma_path_is_support_without_nvidia_fs():
    """`NVMe : Unsupported` beside `NVMe P2PDMA : Supported` (GDS 1.14+ through the kernel's
    PCI P2PDMA) is GPUDirect: no finding (it was a false warning)."""
    g = _gds("gdscheck-p-1.14-p2pdma.txt").gds_text
    assert (g.supported("NVMe"), g.supported("NVMe P2PDMA")) == (False, True)
    assert findings(_gds("gdscheck-p-1.14-p2pdma.txt"), stated()) == []


def test_gdscheck_pre_1_0_format_is_read():
    """GDS 0.9x: no DRIVER CONFIGURATION header (`cuFile CONFIGURATION:` holds the drivers
    and the properties), `(beta)` in the version line, `bar size (MB):`."""
    from nvtopo.probes import readers

    text = (GDS_TEXT / "gdscheck-p-0.95-beta.txt").read_text(encoding="utf-8")
    assert readers.names(text) == ["gds-text"]
    ok = _gds("gdscheck-p-0.95-beta.txt").gds_text
    assert (ok.gds_version, ok.nvidia_fs_version, ok.libcufile_version) == (
        "0.95.0.94", "2.3", "2.3")
    assert len(ok.drivers) == 10 and ok.supported("NVMe") is True
    assert ok.drivers["USERSPACE RDMA"] == "Unsupported"
    assert not any(k.startswith(("properties", "--")) for k in ok.drivers)
    assert [(x.index, x.name, x.bar_mib, x.supports_gds) for x in ok.gpus] == [
        (0, "Tesla V100-SXM2-32GB", 32768, True), (1, "Tesla V100-SXM2-32GB", 32768, True)]
    assert (ok.iommu, ok.verification) == ("disabled", "succeeded")
    assert findings(_gds("gdscheck-p-0.95-beta.txt"), None) == []
    bad = _gds("gdscheck-p-0.9-beta-failed.txt")
    assert (bad.gds_text.gds_version, bad.gds_text.verification) == ("0.9.0.15", "failed")
    assert sorted(findings(bad, None)) == [
        ("gds.iommu", "node", "warning"), ("gds.nvme_unsupported", "node", "warning"),
        ("gds.platform", "node", "warning")]


def test_gdscheck_paste_without_version_lines_or_indentation():
    """Copied from ENVIRONMENT: on through a forum: no version lines, no rulers, no
    indentation, `**bold**` marks: read, and its NVMe Unsupported is found."""
    from nvtopo.probes import gds_text, readers

    text = (GDS_TEXT / "gdscheck-p-no-version-lines.txt").read_text(encoding="utf-8")
    assert readers.names(text) == ["gds-text"]
    g = gds_text.parse(text)
    assert g.gds_version is None and g.drivers["NVMe"] == "Unsupported"
    assert len(g.drivers) == 11 and "--Mellanox PeerDirect" not in g.drivers
    assert (g.iommu, g.verification, len(g.gpus)) == ("disabled", "succeeded", 2)
    assert findings(_gds("gdscheck-p-no-version-lines.txt"), None) == [
        ("gds.nvme_unsupported", "node", "warning")]
    # healthy counterpart: the same paste of a node whose NVMe is supported
    healthy = text.replace("**NVMe : Unsupported**", "NVMe : Supported")
    assert gds_text.parse(healthy).supported("NVMe") is True
    # not every text that names a driver is gdscheck: no header nor version line, no NVMe row
    assert not gds_text.looks_like("NVMe : Supported\n")
    assert not gds_text.looks_like("DRIVER CONFIGURATION:\nGPU0 X NV18\n")
