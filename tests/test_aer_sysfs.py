"""AER counters in snapshots (issue 25 step 4): ``aer_dev_correctable``, ``aer_dev_nonfatal``
and ``aer_dev_fatal`` under bus/pci/devices for the GPUs, NICs and the bridges above them;
absent files leave the evidence as it was."""

import json

import sysfs_trees
from nvtopo import fakesys
from nvtopo.probes import ProbeOptions, sysfs

GPU = "devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:03.0/0000:1b:00.0"
ROOT_PORT = "devices/pci0000:15/0000:15:01.0"
COR = ("RxErr 3\\nBadTLP 0\\nBadDLLP 1\\nRollover 0\\nTimeout 0\\nNonFatalErr 0\\n"
       "CorrIntErr 0\\nHeaderOF 0\\nTOTAL_ERR_COR 4")
FATAL = "Undefined 0\\nDLP 0\\nSDES 0\\nTLP 0\\nFCP 0\\nCmpltTO 0\\nMalfTLP 0\\nTOTAL_ERR_FATAL 0"


def capture(extra: str) -> dict:
    base = (sysfs_trees.FIXTURES / "dgx-h100.sysfs").read_text("utf-8")
    root = sysfs_trees.scratch_dir()
    faults = fakesys.materialize(base + extra, root)
    ev = sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults)
    return json.loads(json.dumps(ev))


def test_absent_aer_files_leave_the_evidence_as_it_was() -> None:
    root, faults = sysfs_trees.tree("dgx-h100")
    plain = sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults)
    assert not any("aer_dev" in k for k in plain.get("errors", {}))
    assert not any("aer_dev" in k for k in plain.get("files", {}))
    assert sysfs.derive(json.loads(json.dumps(plain))).sysfs.aer is None


def test_aer_counters_of_a_gpu_and_its_root_port() -> None:
    ev = capture(f"{GPU}/aer_dev_correctable = {COR}\n{GPU}/aer_dev_fatal = {FATAL}\n"
                 f"{ROOT_PORT}/aer_dev_correctable = TOTAL_ERR_COR 12\n"
                 f"{ROOT_PORT}/aer_dev_nonfatal ! EIO\n")
    aer = sysfs.derive(ev).sysfs.aer
    assert set(aer) == {"0000:1b:00.0", "0000:15:01.0"}
    gpu = aer["0000:1b:00.0"]
    assert (gpu.correctable, gpu.nonfatal, gpu.fatal) == (4, None, 0)
    assert gpu.nonzero == {"correctable.RxErr": 3, "correctable.BadDLLP": 1}
    assert aer["0000:15:01.0"].correctable == 12
    # an unreadable file is kept as its error; an absent one is not recorded
    assert any(k.endswith("15:01.0/aer_dev_nonfatal") for k in ev["errors"])
    assert not any(k.endswith("1b:00.0/aer_dev_nonfatal") for k in ev["errors"])


def test_a_device_off_the_gpu_and_nic_paths_is_not_kept() -> None:
    ev = capture("devices/pci0000:00/0000:00:04.0/0000:08:00.0/aer_dev_correctable = "
                 "TOTAL_ERR_COR 9\n")
    assert sysfs.derive(ev).sysfs.aer is None  # 0000:08:00.0 is an NVSwitch-side function


def test_the_faults_tree_records_its_aer_counters() -> None:
    root, faults = sysfs_trees.tree("dgx-h100-faults")
    ev = json.loads(json.dumps(sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults)))
    aer = sysfs.derive(ev).sysfs.aer
    assert {k: (v.correctable, v.nonfatal, v.fatal) for k, v in aer.items()} == {
        "0000:15:01.0": (7, None, None), "0000:1b:00.0": (44, 1, 0)}
    assert aer["0000:1b:00.0"].nonzero == {"correctable.RxErr": 41, "correctable.BadDLLP": 3,
                                          "nonfatal.CmpltTO": 1}


def test_uncorrected_counts_of_a_snapshot_are_a_finding() -> None:
    from nvtopo import checks

    root, faults = sysfs_trees.tree("dgx-h100-faults")
    ev = json.loads(json.dumps(sysfs.capture(ProbeOptions(sysfs_root=root), faults=faults)))
    found = [f for f in checks.select_and_run(sysfs.derive(ev)).findings
             if f.code.startswith("events.")]
    # the GPU's one non-fatal error; the corrected counts (GPU, root port) are trend's
    assert [(f.severity, f.code, str(f.subject), f.actual) for f in found] == [
        ("warning", "events.aer_counted", "GPU0", 1)]
    assert "1 non-fatal (CmpltTO)" in found[0].message
