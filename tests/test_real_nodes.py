"""Real nodes: what a real NVIDIA driver answered, and what nvtopo must derive from it.

``fixtures/real/NAME/`` holds a live ``nvtopo snapshot`` taken on a real GPU machine (as root,
and as the unprivileged user ``nobody``) with the ``nvidia-smi`` texts captured in the same
run (``benchmarks/live_gpu.py``).  These tests pin the facts read off the driver, check
that every source nvtopo reads states them alike (the snapshot's NVML and sysfs against
``nvidia-smi topo -m``, ``-q``, ``-q -x``, ``topo -p2p r``), and that the fake NVML library
serves the real recording through the real pynvml wrappers exactly as the driver answered.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

import fake_nvml_lib
from cli_runner import make_runner
from nvtopo import snapshot
from nvtopo.checks import select_and_run
from nvtopo.cli import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
H200 = REAL / "h200-vm-580"


def _doc(path: Path) -> Dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _model(path: Path) -> Any:
    return snapshot.open_input(snapshot.Input(path=str(path), want=snapshot.MODEL)).model


def test_h200_snapshot_derives_what_the_driver_said():
    topo = _model(H200 / "snapshot.json")
    assert [g.index for g in topo.gpus] == [0]
    g = topo.gpus[0]
    assert g.name == "NVIDIA H200"
    assert g.uuid == "GPU-d3a7986c-63cb-d325-5700-9c8154474efa"
    assert g.pci_bus_id == "00000000:00:06.0"
    assert (g.cpu_affinity, g.numa_affinity, g.gpu_numa_id) == ("0-15", "0", None)
    nv = g.nvml
    assert (nv.architecture, nv.compute_capability, nv.memory_total_bytes) == \
        ("hopper", "9.0", 150754820096)
    assert (nv.pcie.current_gen, nv.pcie.max_gen, nv.pcie.current_width, nv.pcie.max_width) \
        == (5, 5, 16, 16)
    # A GPU given to a VM by pass-through: NVML answers NotSupported for every NVLink
    # question and "not supported" for the fabric; nvidia-smi nvlink -s prints nothing.
    assert (nv.nvlink.status, nv.nvlink.total, nv.nvlink.links) == ("not_supported", 0, [])
    assert nv.fabric.state == "not_supported"
    assert nv.unavailable == {"numa_node_id": "not_supported"}
    assert topo.nvml.system.driver_version == "580.159.04"
    # field 147 came back typed as a double (0.0): read as the count 0, not a bad value
    assert not [n for n in topo.notes if n.level != "info"], topo.notes
    assert topo.nvml.bad_values == []
    assert topo.disagreements == []
    assert topo.sources == ["topo-text", "nvml", "sysfs", "host"]


def test_h200_check_passes_with_nothing_to_warn():
    report = select_and_run(_model(H200 / "snapshot.json"))
    assert report.verdict == "pass"
    assert [(f.severity, f.code) for f in report.findings if f.severity != "info"] == []
    assert report.layout_name == "none"  # one GPU of a board: no layout forced on it


def test_h200_every_source_agrees_with_nvidia_smi():
    """The snapshot (NVML, sysfs, the live topo -m) against the nvidia-smi texts of the same
    run, fact by fact: names, bus ids, NUMA, CPU affinity, PCIe, fabric, P2P."""
    live = _model(H200 / "snapshot.json").gpus[0]
    q = _model(H200 / "nvidia-smi-q.txt").gpus[0]
    qx = _model(H200 / "nvidia-smi-q-x.xml").gpus[0]
    topo_m = _model(H200 / "nvidia-smi-topo-m.txt").gpus[0]
    for pasted in (q, qx):
        assert (pasted.name, pasted.uuid, pasted.pci_bus_id) == \
            (live.name, live.uuid, live.pci_bus_id)
        pc, lc = pasted.nvml_text.pcie, live.nvml.pcie
        assert (pc.current_gen, pc.max_gen, pc.current_width, pc.max_width) == \
            (lc.current_gen, lc.max_gen, lc.current_width, lc.max_width)
        # -q prints the fabric state NVML calls NOT_SUPPORTED as "N/A"
        assert pasted.nvml_text.fabric.state == live.nvml.fabric.state == "not_supported"
        assert pasted.nvml_text.fabric.attached is False
    assert (topo_m.cpu_affinity, topo_m.numa_affinity, topo_m.gpu_numa_id) == \
        (live.cpu_affinity, live.numa_affinity, live.gpu_numa_id)
    # sysfs saw the same GPU at the same address, at PCIe Gen5 x16 (32 GT/s)
    sysfs = live.sysfs
    assert sysfs.pci_address == "0000:00:06.0"
    assert (sysfs.link.current_gen, sysfs.link.current_width) == (5, 16)
    p2p = _model(H200 / "nvidia-smi-topo-p2p-r.txt")
    assert p2p.p2p is not None and p2p.p2p.devices == ["GPU0"]


def test_h200_topo_text_with_its_terminal_escapes():
    """The real nvidia-smi 580 underlines the matrix header with ANSI escapes even into a
    pipe; the matrix reads as one GPU with its affinities, and nothing of the escapes is
    kept as a label."""
    raw = (H200 / "nvidia-smi-topo-m.txt").read_bytes()
    assert b"\x1b[4m" in raw
    topo = _model(H200 / "nvidia-smi-topo-m.txt")
    assert topo.matrix.devices == ["GPU0"]
    assert not [n for n in topo.notes if n.level == "warning"], topo.notes


def test_h200_empty_nvlink_text_is_refused_in_one_line(tmp_path):
    """nvidia-smi nvlink -s printed nothing at all on this GPU (no NVLink exposed): given as
    a ticket, that is an empty file, refused in one line naming it."""
    path = H200 / "nvidia-smi-nvlink-s.txt"
    assert path.read_bytes() == b""
    r = make_runner().invoke(app, ["check", "--from", str(path)])
    assert r.exit_code == 2
    assert r.stderr.strip().count("\n") == 0
    assert "nvidia-smi-nvlink-s.txt" in r.stderr and "empty" in r.stderr


def test_h200_unprivileged_user_got_the_same_answers():
    root = _doc(H200 / "snapshot.json")["probes"]
    nobody = _doc(H200 / "snapshot-nobody.json")["probes"]
    assert {k: v["status"] for k, v in root.items()} == \
        {k: v["status"] for k, v in nobody.items()}
    assert nobody["nvml"]["calls"] == root["nvml"]["calls"]
    assert nobody["sysfs"]["uid"] == 65534 and root["sysfs"]["uid"] == 0


@pytest.mark.parametrize("name", ["snapshot.json", "snapshot-nobody.json"])
def test_fake_nvml_answers_as_the_real_driver_did(name):
    """The fake C library serves the real recording under the real pynvml wrappers; the
    live probe asks the same questions in the same order and records the same answers
    (error codes, NotSupported, the double-typed field 147, the v3 fabric struct)."""
    real = _doc(H200 / name)["probes"]["nvml"]
    again = fake_nvml_lib.record({}, calls=real["calls"])
    assert again["status"] == real["status"] == "ok"
    assert list(again["calls"]) == list(real["calls"])
    assert again["calls"] == real["calls"]
    assert again["ncalls"] == real["ncalls"] == 27


def test_the_live_loop_lost_no_probe():
    """30 fresh ``nvtopo snapshot`` processes in a row on the real node, the second half with
    every CPU busy, twice (the second time with this session's fixes merged, on a fresh VM):
    every probe answered every time (the import-lock deadlock is gone)."""
    run = _doc(H200 / "live-run.json")
    for loop in (run["snapshot_loop"], run["verification"]["snapshot_loop"]):
        assert len(loop) == 30 and sum(r["loaded"] for r in loop) == 15
        for r in loop:
            assert r["rc"] == 0
            assert r["status"] == {"topo-text": "ok", "nvml": "ok", "sysfs": "ok",
                                   "host": "ok", "wireguard": "absent"}, r
            assert r["nvml_ncalls"] == 27


def test_h200_ib_view_says_no_rdma_once():
    """The VM has no RDMA device; the live ib view printed 'No RDMA devices (no RDMA
    devices).'"""
    r = make_runner().invoke(app, ["ib", "--from", str(H200 / "snapshot.json")])
    assert r.exit_code == 0, r.stderr
    assert "No RDMA devices." in r.stdout
    assert r.stdout.lower().count("no rdma devices") == 1, r.stdout


def test_h200_views_render_at_80_columns():
    """show, links and check of the real node at 80 columns: every line fits, the facts
    read off the driver are on screen."""
    runner = make_runner()
    for cmd, must in (("show", ["GPU0", "0-15", "Gen5 x16", "0000:00:06.0"]),
                      ("links", ["NVIDIA H200", "NVLink not supported on this GPU"]),
                      ("check", ["PASS"])):
        r = runner.invoke(app, [cmd, "--from", str(H200 / "snapshot.json")],
                          env={"COLUMNS": "80"})
        assert r.exit_code == 0, (cmd, r.stderr)
        for text in must:
            assert text in r.stdout, (cmd, text, r.stdout)
        assert max(len(line) for line in r.stdout.splitlines()) <= 80, (cmd, r.stdout)
