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
from typing import Any, Dict, NamedTuple

import pytest

import fake_nvml_lib
from cli_runner import make_runner
from nvtopo import snapshot
from nvtopo.checks import select_and_run
from nvtopo.cli import app

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real"
H200 = REAL / "h200-vm-580"
H100 = REAL / "h100-vm-580"


class Machine(NamedTuple):
    """What one real machine's driver said, as pinned by these tests."""
    path: Path
    name: str
    uuid: str
    memory_total_bytes: int
    ncalls: int  # NVML calls of one live snapshot (the probe of that day)
    probes: Dict[str, str]  # each probe's status in every live run


_PROBES = {"topo-text": "ok", "nvml": "ok", "sysfs": "ok", "host": "ok", "wireguard": "absent"}
MACHINES = {
    # 2026-11-27: NVML's 27 calls of that day (before the platform-info call was added)
    "h200-vm-580": Machine(H200, "NVIDIA H200", "GPU-d3a7986c-63cb-d325-5700-9c8154474efa",
                           150754820096, 27, _PROBES),
    # 2026-11-28: 28 calls (nvmlDeviceGetPlatformInfo too), and the IMEX probe
    "h100-vm-580": Machine(H100, "NVIDIA H100 80GB HBM3",
                           "GPU-99b8b6d2-e967-c903-a645-79a096b7f116", 85520809984, 28,
                           dict(_PROBES, imex="absent")),
}
each_machine = pytest.mark.parametrize("m", list(MACHINES.values()), ids=list(MACHINES))




def _doc(path: Path) -> Dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _model(path: Path) -> Any:
    return snapshot.open_input(snapshot.Input(path=str(path), want=snapshot.MODEL)).model


@each_machine
def test_snapshot_derives_what_the_driver_said(m):
    topo = _model(m.path / "snapshot.json")
    assert [g.index for g in topo.gpus] == [0]
    g = topo.gpus[0]
    assert (g.name, g.uuid) == (m.name, m.uuid)
    # both VMs put their one GPU at the same guest address
    assert g.pci_bus_id == "00000000:00:06.0"
    assert (g.cpu_affinity, g.numa_affinity, g.gpu_numa_id) == ("0-15", "0", None)
    nv = g.nvml
    assert (nv.architecture, nv.compute_capability, nv.memory_total_bytes) == \
        ("hopper", "9.0", m.memory_total_bytes)
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


def test_h100_platform_info_of_a_board_module_in_a_vm():
    """The H100 VM's driver answered nvmlDeviceGetPlatformInfo (the H200 run predates the
    call): module 5 of its board, host 1, and an all-zero chassis serial and IB GUID, which
    say nothing and are read as absent rather than as an identifier."""
    raw = _doc(H100 / "snapshot.json")["probes"]["nvml"]["calls"]
    info = raw["nvmlDeviceGetPlatformInfo(gpu0)"]["value"]
    assert info["chassisSerialNumber"] == info["ibGuid"] == "0" * 32
    plat = _model(H100 / "snapshot.json").gpus[0].nvml.platform
    assert (plat.module_id, plat.host_id, plat.tray_index, plat.slot_number, plat.peer_type) \
        == (5, 1, 0, 0, 0)
    assert plat.chassis_serial is None and plat.ib_guid is None
    assert _model(H200 / "snapshot.json").gpus[0].nvml.platform is None


@each_machine
def test_check_passes_with_nothing_to_warn(m):
    report = select_and_run(_model(m.path / "snapshot.json"))
    assert report.verdict == "pass"
    assert [(f.severity, f.code) for f in report.findings if f.severity != "info"] == []
    assert report.layout_name == "none"  # one GPU of a board: no layout forced on it


@each_machine
def test_every_source_agrees_with_nvidia_smi(m):
    """The snapshot (NVML, sysfs, the live topo -m) against the nvidia-smi texts of the same
    run, fact by fact: names, bus ids, NUMA, CPU affinity, PCIe, fabric, P2P."""
    live = _model(m.path / "snapshot.json").gpus[0]
    q = _model(m.path / "nvidia-smi-q.txt").gpus[0]
    qx = _model(m.path / "nvidia-smi-q-x.xml").gpus[0]
    for name in ("nvidia-smi-topo-m.txt", "nvidia-smi-topo-mp.txt"):
        topo_m = _model(m.path / name).gpus[0]
        assert (topo_m.cpu_affinity, topo_m.numa_affinity, topo_m.gpu_numa_id) == \
            (live.cpu_affinity, live.numa_affinity, live.gpu_numa_id) == ("0-15", "0", None)
    for pasted in (q, qx):
        assert (pasted.name, pasted.uuid, pasted.pci_bus_id) == \
            (live.name, live.uuid, live.pci_bus_id) == (m.name, m.uuid, "00000000:00:06.0")
        pc, lc = pasted.nvml_text.pcie, live.nvml.pcie
        assert (pc.current_gen, pc.max_gen, pc.current_width, pc.max_width) == \
            (lc.current_gen, lc.max_gen, lc.current_width, lc.max_width)
        # -q prints the fabric state NVML calls NOT_SUPPORTED as "N/A"
        assert pasted.nvml_text.fabric.state == live.nvml.fabric.state == "not_supported"
        assert pasted.nvml_text.fabric.attached is False
    # sysfs saw the same GPU at the same address, at PCIe Gen5 x16 (32 GT/s)
    sysfs = live.sysfs
    assert sysfs.pci_address == "0000:00:06.0"
    assert (sysfs.link.current_gen, sysfs.link.current_width) == (5, 16)
    for kind in "rwna":
        p2p = _model(m.path / f"nvidia-smi-topo-p2p-{kind}.txt")
        assert p2p.p2p is not None and p2p.p2p.devices == ["GPU0"]
    listed = (m.path / "nvidia-smi-L.txt").read_text()
    assert listed == f"GPU 0: {m.name} (UUID: {m.uuid})\n"


@each_machine
def test_topo_text_with_its_terminal_escapes(m):
    """The real nvidia-smi 580 underlines the matrix header with ANSI escapes even into a
    pipe; the matrix reads as one GPU with its affinities, and nothing of the escapes is
    kept as a label."""
    raw = (m.path / "nvidia-smi-topo-m.txt").read_bytes()
    assert b"\x1b[4m" in raw
    topo = _model(m.path / "nvidia-smi-topo-m.txt")
    assert topo.matrix.devices == ["GPU0"]
    assert not [n for n in topo.notes if n.level == "warning"], topo.notes


@each_machine
@pytest.mark.parametrize("kind", ["s", "c", "e", "R"])
def test_empty_nvlink_text_is_refused_in_one_line(m, kind):
    """nvidia-smi nvlink -s (-c, -e, -R) printed nothing at all on this GPU (no NVLink
    exposed): given as a ticket, that is an empty file, refused in one line naming it."""
    path = m.path / f"nvidia-smi-nvlink-{kind}.txt"
    assert path.read_bytes() == b""
    r = make_runner().invoke(app, ["check", "--from", str(path)])
    assert r.exit_code == 2
    assert r.stderr.strip().count("\n") == 0
    assert path.name in r.stderr and "empty" in r.stderr


@each_machine
def test_unprivileged_user_got_the_same_answers(m):
    root = _doc(m.path / "snapshot.json")["probes"]
    nobody = _doc(m.path / "snapshot-nobody.json")["probes"]
    assert {k: v["status"] for k, v in root.items()} == \
        {k: v["status"] for k, v in nobody.items()} == m.probes
    assert nobody["nvml"]["calls"] == root["nvml"]["calls"]
    assert nobody["sysfs"]["uid"] == 65534 and root["sysfs"]["uid"] == 0


@each_machine
@pytest.mark.parametrize("name", ["snapshot.json", "snapshot-nobody.json"])
def test_fake_nvml_answers_as_the_real_driver_did(m, name):
    """The fake C library serves the real recording under the real pynvml wrappers; the
    live probe asks the same questions in the same order and records the same answers
    (error codes, NotSupported, the double-typed field 147, the v3 fabric struct, the v2
    platform struct)."""
    real = _doc(m.path / name)["probes"]["nvml"]
    again = fake_nvml_lib.record({}, calls=real["calls"])
    assert again["status"] == real["status"] == "ok"
    assert list(again["calls"]) == list(real["calls"])
    assert again["calls"] == real["calls"]
    assert again["ncalls"] == real["ncalls"] == m.ncalls


@each_machine
def test_the_live_loop_lost_no_probe(m):
    """30 fresh ``nvtopo snapshot`` processes in a row on the real node, the second half with
    every CPU busy (on the H200, twice: the second time with that session's fixes merged,
    on a fresh VM): every probe answered every time (the import-lock deadlock is gone)."""
    run = _doc(m.path / "live-run.json")
    loops = [run["snapshot_loop"]]
    if "verification" in run:
        loops.append(run["verification"]["snapshot_loop"])
    for loop in loops:
        assert len(loop) == 30 and sum(r["loaded"] for r in loop) == 15
        for r in loop:
            assert r["rc"] == 0
            assert r["status"] == m.probes, r
            assert r["nvml_ncalls"] == m.ncalls


@each_machine
def test_ib_view_says_no_rdma_once(m):
    """Neither VM has an RDMA device; the live ib view printed 'No RDMA devices.' once."""
    r = make_runner().invoke(app, ["ib", "--from", str(m.path / "snapshot.json")])
    assert r.exit_code == 0, r.stderr
    assert "No RDMA devices." in r.stdout
    assert r.stdout.lower().count("no rdma devices") == 1, r.stdout


@each_machine
def test_views_render_at_80_columns(m):
    """show, links and check of the real node at 80 columns: every line fits, the facts
    read off the driver are on screen."""
    runner = make_runner()
    for cmd, must in (("show", ["GPU0", "0-15", "Gen5 x16", "0000:00:06.0"]),
                      ("links", [m.name, "NVLink not supported on this GPU"]),
                      ("check", ["PASS"])):
        r = runner.invoke(app, [cmd, "--from", str(m.path / "snapshot.json")],
                          env={"COLUMNS": "80"})
        assert r.exit_code == 0, (cmd, r.stderr)
        for text in must:
            assert text in r.stdout, (cmd, text, r.stdout)
        assert max(len(line) for line in r.stdout.splitlines()) <= 80, (cmd, r.stdout)
