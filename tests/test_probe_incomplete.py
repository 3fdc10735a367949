"""Issue 29, item 1: a probe cut short is a finding, never a pass on part of the node.

A live probe that runs out of its ``--timeout`` part-way (NVML abandons the recording, sysfs
reads no further file) keeps what it recorded; ``check`` reports the cut as the error
``source.probe_incomplete``, naming what the probe did not reach (GPUs never walked, GPU
pairs never asked, devices whose files were not read).  And nvtopo reads back every
snapshot it writes: a simulated 144-GPU NVLink domain is within the input bounds (slow
tier), and what ``--from`` would refuse is not written.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import nvml_fake as F
import sysfs_trees
from cli_runner import make_runner
from nvtopo import snapshot
from nvtopo.cli import app
from nvtopo.probes import ProbeOptions, nvml, sysfs
from nvtopo.snapshot import read
from nvtopo.simulate import build, nvlink_domain, simulate, snapshot as sim_snapshot
from nvtopo import layouts
from test_hostile_files import _one_line_error


def _check_json(path: Path):
    res = make_runner().invoke(app, ["check", "--from", str(path), "--format", "json"])
    return res.exit_code, json.loads(res.stdout)


def _incomplete(report):
    return [f for f in report["findings"] if f["code"] == "source.probe_incomplete"]


def _write(tmp_path: Path, doc, name="cut.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({k: v for k, v in doc.items() if k != "derived"}))
    return path


@pytest.fixture(scope="module")
def h100():
    return simulate(layouts.load("dgx-h100"), [], seed=0)


def _cut_nvml(doc, at: str):
    """``doc`` with its NVML recording cut just before the call ``at`` (a deadline)."""
    doc = json.loads(json.dumps(doc))
    nv = doc["probes"]["nvml"]
    keys = list(nv["calls"])
    nv["calls"] = {k: nv["calls"][k] for k in keys[:keys.index(at)]}
    nv["status"], nv["error"] = "timeout", "NVML probe did not finish within 10 s"
    return doc


def test_a_recording_cut_among_the_pairs_fails_and_names_the_pairs(h100, tmp_path):
    code, report = _check_json(_write(tmp_path, _cut_nvml(
        h100, "nvmlDeviceGetP2PStatus(gpu5,gpu7,0)")))
    assert code == 1 and report["verdict"] == "fail"
    [f] = _incomplete(report)
    assert f["severity"] == "error" and f["subject"] == "nvml probe" and f["source"] == "nvml"
    assert "NVML did not answer nvmlDeviceGetP2PStatus(gpu5,gpu7,0)" in f["message"]
    # pairs {a, b} are whole once both directions are asked: a < 5, or b = 5 below 7 ...
    assert "the P2P status and common ancestor of 13 of 28 GPU pairs" in f["message"]
    assert "never reached" not in f["message"]


def test_a_recording_cut_inside_a_gpu_names_the_gpus_never_reached(h100, tmp_path):
    keys = list(h100["probes"]["nvml"]["calls"])
    at = next(k for k in keys if k.startswith("nvmlDeviceGetFieldValues(gpu5"))
    code, report = _check_json(_write(tmp_path, _cut_nvml(h100, at)))
    assert code == 1
    [f] = _incomplete(report)
    assert "every NVML fact of GPUs 6, 7 (never reached)" in f["message"]
    assert f"GPU 5's facts from {at} on" in f["message"]
    assert "28 of 28 GPU pairs" in f["message"]


def test_a_whole_probe_is_no_finding(h100, tmp_path):
    code, report = _check_json(_write(tmp_path, h100))
    assert code == 0 and _incomplete(report) == []


@pytest.fixture
def probe():
    libs = []

    def run(desc, timeout, **kw):
        lib = F.machine_fake(desc, **kw)
        libs.append(lib)
        F.install(lib)
        return json.loads(json.dumps(nvml.capture(ProbeOptions(timeout=timeout))))

    yield run
    for lib in libs:
        lib.release()
    F.reset_pynvml()


def _nvml_only(tmp_path: Path, ev) -> Path:
    return _write(tmp_path, {"kind": "nvtopo-snapshot", "schema_version": 1,
                             "nvtopo_version": "0.1.0", "host": {"hostname": "fake"},
                             "probes": {"nvml": ev}})


def test_fake_nvml_hung_part_way_is_an_error_naming_the_gpus_left(probe, tmp_path):
    desc = F.load_machine("dgx-a100")
    desc["hang"] = ["nvmlDeviceGetNvLinkRemotePciInfo(gpu2,3)"]
    ev = probe(desc, 0.5)
    assert ev["status"] == "timeout"
    code, report = _check_json(_nvml_only(tmp_path, ev))
    assert code == 1
    [f] = _incomplete(report)
    assert "nvmlDeviceGetNvLinkRemotePciInfo(gpu2,3) for GPU 2" in f["message"]
    assert "every NVML fact of GPUs 3-7 (never reached)" in f["message"]
    assert "28 of 28 GPU pairs" in f["message"]


def test_fake_nvml_too_slow_for_its_deadline_is_an_error(probe, tmp_path):
    # every C call takes 10 ms: a 0.2 s deadline passes within the first GPU or two
    ev = probe(F.load_machine("dgx-a100"), 0.2, latency_s=0.01)
    assert ev["status"] == "timeout"
    code, report = _check_json(_nvml_only(tmp_path, ev))
    assert code == 1
    [f] = _incomplete(report)
    assert "(never reached)" in f["message"] and "28 of 28 GPU pairs" in f["message"]


def test_sysfs_cut_at_its_deadline_is_an_error_naming_the_devices(tmp_path):
    root, faults = sysfs_trees.tree("dgx-h100")
    release = threading.Event()

    def reader(path):
        if path.endswith("mlx5_3/ports/1/counters/port_xmit_wait"):
            release.wait(30)  # a MAD that never comes back
        return sysfs.read_file(path)

    try:
        ev = sysfs.capture(ProbeOptions(sysfs_root=root, timeout=0.3), faults=faults,
                           reader=reader)
    finally:
        release.set()
    assert ev["status"] == "timeout"
    [note] = [n for n in sysfs.derive(json.loads(json.dumps(ev))).notes
              if n.code == "sysfs.timeout"]
    assert "; unread facts of mlx5_3, " in note.message
    for name in ("mlx5_4", "mlx5_9"):  # never reached (listing order: mlx5_0, _1, _10, ...)
        assert name in note.message
    doc = {"kind": "nvtopo-snapshot", "schema_version": 1, "nvtopo_version": "0.1.0",
           "host": {"hostname": "fake"}, "probes": {"sysfs": ev}}
    code, report = _check_json(_write(tmp_path, doc))
    assert code == 1
    [f] = _incomplete(report)
    assert f["subject"] == "sysfs probe" and "mlx5_3" in f["message"]


def test_what_from_would_refuse_is_not_written(monkeypatch, tmp_path):
    monkeypatch.setattr(read, "MAX_JSON_BYTES", 100_000)  # a DGX H100 snapshot is 0.5 MB
    out = tmp_path / "big.json"
    res = make_runner().invoke(app, ["simulate", "dgx-h100", "-o", str(out)])
    assert res.exit_code == 2 and not out.exists()
    _one_line_error(res.stderr, "not kept as a snapshot: nvtopo would not read the file back",
                    "JSON larger than 0 MiB")
    res = make_runner().invoke(app, ["simulate", "dgx-h100", "--nodes", "2", "-o",
                                     str(tmp_path / "fleet")])
    assert res.exit_code == 2
    _one_line_error(res.stderr, "not kept as a snapshot", "node")
    assert list((tmp_path / "fleet").glob("*.json")) == []


def test_the_largest_simulated_domain_reads_back(tmp_path):
    """A 144-GPU NVLink domain (17.6 MiB sealed, 950,000 JSON values) as nvtopo writes it,
    read back by ``--from``: the bounds admit what nvtopo writes (slow tier: ~15 s)."""
    t0 = time.process_time()
    text = snapshot.file_text(sim_snapshot(build(nvlink_domain(144), seed=0)), "simulate")
    data = text.encode()
    assert len(data) > 16 * 2 ** 20 and data.count(b",") > 500_000
    path = tmp_path / "nvl144.json"
    path.write_bytes(data)
    res = make_runner().invoke(app, ["show", "--from", str(path), "--format", "json"])
    assert res.exit_code == 0, res.stderr
    shown = json.loads(res.stdout)
    assert len(shown["gpus"]) == 144
    assert time.process_time() - t0 < 120


def test_gpus_a_cut_recording_never_reached_are_not_called_missing(h100, tmp_path):
    """GPUs 6 and 7 are on the node (sysfs and the topo text list them) but the NVML
    recording stopped inside GPU5: they are unknown, not missing; the one finding is the
    cut, which says it explains what looked missing."""
    keys = list(h100["probes"]["nvml"]["calls"])
    at = next(k for k in keys if k.startswith("nvmlDeviceGetFieldValues(gpu5"))
    path = _write(tmp_path, _cut_nvml(h100, at))
    res = make_runner().invoke(app, ["check", "--from", str(path), "--layout", "dgx-h100",
                                     "--format", "json"])
    report = json.loads(res.stdout)
    codes = [f["code"] for f in report["findings"] if f["severity"] != "info"]
    assert codes == ["source.probe_incomplete"], codes
    assert "gpu.missing" in _incomplete(report)[0]["message"]
