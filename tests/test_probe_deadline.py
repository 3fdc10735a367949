"""One deadline for a live run: the probes run at the same time, each under --timeout.

Before, nvidia-smi, NVML and sysfs ran one after another with the full --timeout each, so
a node where two of them hang took twice the bound the user gave.
"""

import json
import threading
import time

from nvtopo import snapshot
from nvtopo.snapshot import live as snapshot_live
from nvtopo.probes import ProbeOptions, host, nvml, sysfs
from nvtopo.probes import topo as topo_text

from cli_runner import make_runner
from nvtopo.cli import app


def _honest(seconds_used):
    """A capture that uses up its whole budget (a hung call it gives up on), then reports."""

    def capture(options=None):
        time.sleep(min(seconds_used, float(options.timeout)))
        return {"status": "timeout", "error": "fake: gave up at its deadline"}

    return capture


def _topo_missing(options=None):
    return {"command": "nvidia-smi", "args": ["topo", "-m"], "exit_status": None, "stdout": None,
            "stderr": None, "duration_s": None, "timeout_s": float(options.timeout),
            "status": "missing", "error": "fake: nvidia-smi not found"}


def _nvml_timeout(options=None):
    time.sleep(float(options.timeout))
    return {"evidence_version": 1, "status": "timeout", "error": "fake: NVML hung",
            "library": None, "timeout_s": float(options.timeout), "duration_s": 0.0,
            "ncalls": 0, "pending": None, "calls": {}}


def test_hanging_probes_share_one_deadline(monkeypatch):
    monkeypatch.setattr(topo_text, "capture", _honest(10))
    monkeypatch.setattr(nvml, "capture", _nvml_timeout)
    monkeypatch.setattr(sysfs, "capture", _honest(10))
    start = time.monotonic()
    doc = snapshot.take(ProbeOptions(timeout=0.6))
    took = time.monotonic() - start
    # three probes that each spend the whole 0.6 s: together still about 0.6 s, not 1.8 s
    assert took < 1.5, took
    assert [doc["probes"][k]["status"] for k in ("topo-text", "nvml", "sysfs")] == \
        ["timeout", "timeout", "timeout"]
    assert list(doc["probes"]) == ["topo-text", "nvml", "sysfs", "host", "wireguard"]  # merge order
    snapshot.derive(doc)  # and it derives


def test_a_probe_that_never_returns_is_recorded_unanswered(monkeypatch):
    release = threading.Event()

    def stuck(options=None):
        release.wait(30)
        return {"status": "ok"}

    monkeypatch.setattr(snapshot_live, "OVERRUN_GRACE_S", 0.2)
    monkeypatch.setattr(topo_text, "capture", _honest(0))
    monkeypatch.setattr(nvml, "capture", stuck)
    try:
        start = time.monotonic()
        doc = snapshot.take(ProbeOptions(timeout=0.3))
        took = time.monotonic() - start
    finally:
        release.set()
    assert took < 1.5, took
    ev = doc["probes"]["nvml"]
    assert ev["status"] == "unanswered"
    assert "did not return within 0.3 s" in ev["error"]
    topo = snapshot.derive(doc)
    notes = [n for n in topo.notes if n.code == "source.nvml_unanswered"]
    assert len(notes) == 1 and notes[0].level == "warning"


def test_a_probe_that_crashes_costs_only_its_own_evidence(monkeypatch):
    def broken(options=None):
        raise RuntimeError("bug")

    monkeypatch.setattr(topo_text, "capture", _honest(0))
    monkeypatch.setattr(nvml, "capture", broken)
    doc = snapshot.take(ProbeOptions(timeout=1))
    assert doc["probes"]["nvml"] == {"status": "unanswered",
                                     "error": "nvml probe failed: RuntimeError: bug"}
    assert doc["probes"]["host"]["status"] in ("ok", "failed", "missing")


def test_snapshot_command_with_an_unanswered_probe(monkeypatch, tmp_path):
    release = threading.Event()

    def stuck(options=None):
        release.wait(30)
        return {"status": "ok"}

    monkeypatch.setattr(snapshot_live, "OVERRUN_GRACE_S", 0.2)
    monkeypatch.setattr(topo_text, "capture", _topo_missing)
    monkeypatch.setattr(nvml, "capture", stuck)
    out = tmp_path / "s.json"
    try:
        r = make_runner().invoke(app, ["snapshot", "--timeout", "0.3", "-o", str(out)])
    finally:
        release.set()
    assert r.exit_code == 0, r.stderr
    assert "nvtopo: note: nvml: nvml probe did not return" in r.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["probes"]["nvml"]["status"] == "unanswered"
    assert host.SOURCE in doc["probes"]
