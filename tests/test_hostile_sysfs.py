"""Hostile and broken sysfs trees (issue 10): whatever a tree given with ``--sysfs-root`` holds,
the probe reads a bounded amount in bounded time, never blocks, never leaves the root, never
crashes, and keeps "absent", "unknown" and "unreadable" apart.

Trees are built in ``tmp_path`` where a file must be a device, a FIFO, sparse or huge, and read
from ``fixtures/sysfs/hostile/*.sysfs`` where text is enough.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from cli_runner import make_runner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvtopo import fakesys, snapshot
from nvtopo.cli import app
from nvtopo.probes import ProbeOptions, sysfs

import sysfs_trees

REPO = Path(__file__).resolve().parent.parent
HOSTILE = REPO / "fixtures" / "sysfs" / "hostile"
IB = "class/infiniband/mlx5_0"
PORT = f"{IB}/ports/1"

#: A small tree: one HCA with one port and two counters, one NUMA node.
BASE = f"""\
devices/system/node/online = 0
devices/system/node/node0/cpulist = 0-3
devices/system/node/node0/distance = 10
{IB}/node_type = 1: CA
{PORT}/state = 4: ACTIVE
{PORT}/phys_state = 5: LinkUp
{PORT}/rate = 400 Gb/sec (4X NDR)
{PORT}/link_layer = InfiniBand
{PORT}/counters/symbol_error = 0
{PORT}/counters/link_downed = 0
"""


@pytest.fixture(autouse=True)
def no_nvidia_smi(monkeypatch):
    """Live probing must not depend on the test machine having a GPU."""
    import nvtopo.probes.topo.live as tt

    monkeypatch.setattr(tt.shutil, "which", lambda name: None)


def small_tree(tmp_path, extra=""):
    root = tmp_path / "sys"
    root.mkdir()
    fakesys.materialize(BASE + extra, str(root))
    return root


def capture(root, timeout=30, **kw):
    return sysfs.capture(ProbeOptions(sysfs_root=str(root), timeout=timeout), **kw)


def port1(topo, hca="mlx5_0"):
    [nic] = [n for n in topo.nics if n.name == hca]
    return nic.sysfs.to_dict()["ports"][0]


def warnings(topo, code):
    return [n.message for n in topo.notes if n.code == code and n.level == "warning"]


def run(*args):
    return make_runner().invoke(app, [str(a) for a in args], env={"COLUMNS": "220"})


def ok(r):
    assert r.exit_code == 0, (r.stdout, r.stderr)
    assert "Traceback" not in (r.stderr or "")
    return r


# --- 1. bounded reads: devices, FIFOs, sparse and huge files ------------------------------


def _can_mknod(tmp_path):
    try:
        os.mknod(str(tmp_path / "probe-node"), 0o20444, os.makedev(1, 5))
    except (PermissionError, AttributeError, OSError):
        return False
    os.unlink(str(tmp_path / "probe-node"))
    return True


@pytest.mark.parametrize("dev", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_read_file_refuses_a_character_device_without_reading_it(dev):
    if not os.path.exists(dev):
        pytest.skip(f"{dev} is not on this system")
    t0 = time.monotonic()
    with pytest.raises(sysfs.Refused) as exc:
        sysfs.read_file(dev)
    assert exc.value.reason == "not a regular file (character device); not read"
    assert time.monotonic() - t0 < 10  # the old reader never came back from /dev/zero


def test_read_file_caps_a_regular_file_at_its_limit(tmp_path):
    f = tmp_path / "attr"
    f.write_bytes(b"7" * sysfs.MAX_ATTR_BYTES)
    assert sysfs.read_file(str(f)) == b"7" * sysfs.MAX_ATTR_BYTES  # exactly the limit: read
    f.write_bytes(b"7" * (sysfs.MAX_ATTR_BYTES + 1))
    with pytest.raises(sysfs.Refused, match=r"larger than 65536 bytes"):
        sysfs.read_file(str(f))
    # a file that says it is small but is not (st_size lies, as in procfs) is cut off too
    with pytest.raises(sysfs.Refused, match=r"larger than 10 bytes"):
        sysfs.read_file(str(f), limit=10)


def test_read_file_of_a_fifo_does_not_block(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    done = []
    t = threading.Thread(target=lambda: done.append(_refusal(str(fifo))), daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the old reader, which waits for a writer forever
        with open(str(fifo), "wb"):
            pass
        t.join(5)
        pytest.fail("reading a FIFO blocked")
    assert done == ["not a regular file (FIFO); not read"]


def _refusal(path):
    try:
        sysfs.read_file(path)
    except sysfs.Refused as exc:
        return exc.reason
    return "read"


#: Captures a tree in a fresh interpreter under a 1 GiB address-space limit and prints its peak
#: memory, so an unbounded read fails the test instead of eating the machine.
MEASURE = textwrap.dedent("""\
    import json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from nvtopo.probes import ProbeOptions, sysfs
    t0 = time.monotonic()
    ev = sysfs.capture(ProbeOptions(sysfs_root=sys.argv[1], timeout=float(sys.argv[2])))
    took = time.monotonic() - t0
    # VmHWM is this process image's own peak (ru_maxrss keeps the forking parent's across
    # exec, so a big pytest process would be measured instead)
    rss = next(int(line.split()[1]) for line in open("/proc/self/status")
               if line.startswith("VmHWM:")) // 1024
    print(json.dumps({"status": ev["status"], "took": took, "rss_mib": rss,
                      "errors": ev["errors"], "json_bytes": len(json.dumps(ev))}))
""")


def measure(root, timeout=5):
    r = subprocess.run([sys.executable, "-c", MEASURE, str(root), str(timeout)],
                       capture_output=True, text=True, timeout=120, cwd=str(REPO))
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


@pytest.mark.parametrize("kind", ["zero", "urandom", "sparse", "big", "fifo"])
def test_hostile_attribute_is_refused_in_bounded_memory_and_time(tmp_path, kind):
    root = small_tree(tmp_path)
    target = root / PORT / "counters" / "port_rcv_data"
    if kind in ("zero", "urandom"):
        if not _can_mknod(tmp_path):
            pytest.skip("mknod needs root (read_file is tested on /dev/zero itself above)")
        os.mknod(str(target), 0o20444, os.makedev(1, 5 if kind == "zero" else 9))
        why = "refused: not a regular file (character device); not read"
    elif kind == "sparse":
        with open(str(target), "wb") as fh:
            fh.truncate(1 << 30)  # 1 GiB, no disk used
        why = "refused: larger than 65536 bytes (a sysfs attribute is at most 4096); not read"
    elif kind == "big":
        target.write_bytes(b"7" * (4 << 20))
        why = "refused: larger than 65536 bytes (a sysfs attribute is at most 4096); not read"
    else:
        os.mkfifo(str(target))
        why = "refused: not a regular file (FIFO); not read"
    m = measure(root, timeout=60)
    # before: /dev/zero and the sparse file grew past 1 GiB (MemoryError here), the FIFO
    # blocked until the deadline (status "timeout"), the big file went into the evidence
    assert m["status"] == "ok" and m["took"] < 30, m  # a hang detector: not the deadline
    assert m["rss_mib"] < 200, m
    assert m["errors"][f"{PORT}/counters/port_rcv_data"] == why
    assert m["json_bytes"] < 20_000, m


def test_refused_counter_is_unknown_with_its_reason_and_others_still_read(tmp_path):
    root = small_tree(tmp_path)
    os.mkfifo(str(root / PORT / "counters" / "port_xmit_data"))
    ev = capture(root)
    assert ev["status"] == "ok" and ev["files"][f"{PORT}/counters/symbol_error"] == "0"
    for topo in (sysfs.derive(ev), sysfs.derive(json.loads(json.dumps(ev)))):
        p = port1(topo)
        assert p["counters"]["port_xmit_data"] is None
        assert p["counters_unknown"] == {
            "port_xmit_data": "refused: not a regular file (FIFO); not read"}
        assert p["counters"]["symbol_error"] == 0 and p["state"] == "ACTIVE"
        [msg] = warnings(topo, "sysfs.counters_unknown")
        assert "mlx5_0 port 1: 1 counters unreadable (refused: not a regular file (FIFO)" in msg


def test_oversized_attribute_keeps_snapshot_small_and_readable(tmp_path):
    root = small_tree(tmp_path)
    (root / PORT / "counters" / "port_rcv_data").write_bytes(b"1" * (2 << 20))
    snap = tmp_path / "s.json"
    ok(run("snapshot", "--sysfs-root", root, "-o", snap))
    # before: the 2 MiB value went into the file twice over (evidence and model)
    assert snap.stat().st_size < 200_000
    doc = json.loads(snap.read_text())
    assert doc["probes"]["sysfs"]["errors"][f"{PORT}/counters/port_rcv_data"].startswith(
        "refused: larger than 65536 bytes")
    j = json.loads(ok(run("ib", "--from", snap, "--format", "json")).stdout)
    p = j["hcas"][0]["ports"][0]
    assert p["counters"]["port_rcv_data"] is None and p["data_bytes"]["rcv"] is None
    assert p["counters"]["symbol_error"] == 0


def test_a_directory_listing_is_capped_and_says_so(tmp_path, monkeypatch):
    root = small_tree(tmp_path)
    for i in range(60):
        (root / PORT / "counters" / f"extra_{i:02d}").write_text("5\n")
    names, more = sysfs.list_dir(str(root / PORT / "counters"), 50)
    assert len(names) == 50 and more is True
    assert sysfs.list_dir(str(root / PORT / "counters"))[1] is False  # 62 < 10,000
    monkeypatch.setattr(sysfs.read, "MAX_DIR_ENTRIES", 50)
    ev = capture(root)
    listed = ev["dirs"][f"{PORT}/counters"]
    assert len(listed) == 50 and listed == sorted(listed)
    assert ev["cut"] == {f"{PORT}/counters": "more than 50 entries: only the first read"}
    topo = sysfs.derive(json.loads(json.dumps(ev)))
    assert len(port1(topo)["counters"]) == 50
    [msg] = warnings(topo, "sysfs.listing_cut")
    assert msg == (f"1 directory with more than 50 entries, the rest not read: "
                   f"{PORT}/counters")


def test_evidence_view_never_lists_more_than_a_capture_would():
    names = [f"c{i}" for i in range(sysfs.MAX_DIR_ENTRIES + 500)]
    view = sysfs.EvidenceView({"dirs": {"x": names}})
    assert view.listdir("x")[0] == names[:sysfs.MAX_DIR_ENTRIES]


# --- the evidence as a whole is bounded --------------------------------------------------------


def test_evidence_limit_stops_reading_and_the_rest_is_unknown_not_absent(monkeypatch):
    root, faults = sysfs_trees.tree("dgx-h100")
    monkeypatch.setattr(sysfs.read, "MAX_EVIDENCE_ENTRIES", 1000)  # cuts inside an HCA's attributes
    ev = capture(root, faults=faults)
    assert ev["status"] == "limit"
    assert ev["error"].startswith("sysfs probe stopped at its evidence limit")
    n = sum(len(ev[k]) for k in ("files", "links", "errors")) + sum(
        1 + len(v) for v in ev["dirs"].values())
    assert n <= 1000 + sysfs.MAX_DIR_ENTRIES  # the listing that crossed the line is kept whole
    assert sysfs.LIMIT not in ev["errors"].values()  # past the limit nothing is recorded
    for topo in (sysfs.derive(ev), sysfs.derive(json.loads(json.dumps(ev)))):
        [msg] = warnings(topo, "sysfs.limit")
        assert msg == ev["error"]
        nics = {n.name: n.sysfs.to_dict() for n in topo.nics}
        reasons = [r for h in nics.values() for p in h["ports"]
                   for r in list(p["unknown"].values()) + list(p["counters_unknown"].values())]
        reasons += [r for h in nics.values() for r in h["unknown"].values()]
        assert sysfs.LIMIT in reasons
        assert not any("ENOENT" in r for r in reasons)  # unknown, never "missing"
        absent = topo.sysfs.to_dict()["absent_devices"]
        assert set(absent.values()) <= {sysfs.LIMIT}
        if absent:  # one note for all of them, not one per device
            assert len([m for m in warnings(topo, "sysfs.device_absent")
                        if "evidence reached its limit" in m]) == 1


def test_snapshot_of_a_tree_past_the_limit_is_recorded_and_reads_back(tmp_path, monkeypatch):
    root, _ = sysfs_trees.tree("roce-bond")
    monkeypatch.setattr(sysfs.read, "MAX_EVIDENCE_ENTRIES", 150)
    snap = tmp_path / "s.json"
    r = ok(run("snapshot", "--sysfs-root", root, "-o", snap))
    assert "nvtopo: note: sysfs: sysfs probe stopped at its evidence limit" in r.stderr
    assert json.loads(snap.read_text())["probes"]["sysfs"]["status"] == "limit"
    out = ok(run("ib", "--from", snap)).stdout
    assert "warning: sysfs probe stopped at its evidence limit" in out


def test_many_rdma_devices_and_pci_functions_are_bounded(tmp_path, monkeypatch):
    lines = ["devices/system/"]
    for i in range(8):
        lines.append(f"class/infiniband/mlx5_{i}/ports/1/state = 4: ACTIVE")
    for i in range(6):
        d = f"devices/pci0000:00/0000:00:0{i}.0"
        lines += [f"bus/pci/devices/0000:00:0{i}.0 -> ../../../{d}",
                  f"{d}/class = 0x030200", f"{d}/vendor = 0x10de"]
    root = tmp_path / "sys"
    fakesys.materialize("\n".join(lines) + "\n", str(root))
    monkeypatch.setattr(sysfs.walk, "MAX_DEVICES", 5)
    ev = capture(root)
    assert not any("mlx5_7" in k for k in list(ev["files"]) + list(ev["errors"]))  # not read
    topo = sysfs.derive(ev)
    assert [n.name for n in topo.nics] == [f"mlx5_{i}" for i in range(5)]
    assert len(topo.gpus) == 5
    msgs = warnings(topo, "sysfs.too_many")
    assert "class/infiniband: 3 RDMA devices beyond the first 5 not read" in msgs[0]
    assert "bus/pci/devices: 1 GPUs beyond the first 5 not read" in msgs[1]


def test_the_real_limits_keep_a_huge_tree_fast(tmp_path):
    """3,000 RDMA devices (the path matrix is quadratic in devices) read in seconds, not
    minutes; only MAX_DEVICES of them."""
    ib = tmp_path / "sys" / "class" / "infiniband"
    (tmp_path / "sys" / "devices" / "system").mkdir(parents=True)
    for i in range(3000):
        (ib / f"mlx5_{i}").mkdir(parents=True)
    t0 = time.monotonic()
    ev = capture(tmp_path / "sys")
    topo = sysfs.derive(ev)
    assert time.monotonic() - t0 < 30  # about 1 s here
    assert len(topo.nics) == sysfs.MAX_DEVICES == 1024
    assert "1976 RDMA devices beyond the first 1024" in warnings(topo, "sysfs.too_many")[0]


# --- 5. links, names ------------------------------------------------------------------------------


def test_a_chain_of_more_than_40_links_does_not_leave_the_root(tmp_path):
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "symbol_error").write_text("TOPSECRET\n")
    (secret / "node_type").write_text("TOPSECRET\n")
    root = small_tree(tmp_path)
    counters = root / "class" / "infiniband" / "mlx5_9" / "ports" / "1" / "counters"
    counters.parent.mkdir(parents=True)
    chain = root / "chain"
    chain.mkdir()
    for i in range(45):
        os.symlink(f"l{i + 1}", str(chain / f"l{i}"))
    # absolute: the probe re-roots it (inside the root: absent), the OS would not
    os.symlink(str(secret), str(chain / "l45"))
    os.symlink("../../../../../chain/l0", str(counters))
    os.symlink("../../chain/l0", str(root / "class" / "infiniband" / "mlx5_8"))
    ev = capture(root)
    text = json.dumps(ev)
    # before: resolution gave up at 40 links and the OS followed the rest out of the root
    assert "TOPSECRET" not in text
    assert not any(k.startswith("chain/") for k in ev["dirs"])  # the outside never listed
    # the link met past 40 links is the one given up on
    assert [v for k, v in ev["errors"].items() if k.startswith("chain/")] == [
        "ELOOP: Too many levels of symbolic links"]
    topo = sysfs.derive(json.loads(text))
    nine = [n.sysfs.to_dict() for n in topo.nics if n.name == "mlx5_9"][0]["ports"][0]
    assert nine["counters_status"] == "unreadable"
    assert nine["counters_note"] == ("counters/ unreadable: too many levels of symbolic links "
                                     "(ELOOP)")
    assert topo.sysfs.to_dict()["absent_devices"]["mlx5_8"] == sysfs.ELOOP_TEXT


def test_a_loop_and_a_link_with_thousands_of_components_do_not_crash(tmp_path):
    root = small_tree(tmp_path)
    ib = root / "class" / "infiniband"
    os.symlink("loop_b", str(ib / "loop_a"))
    os.symlink("loop_a", str(ib / "loop_b"))
    os.symlink("./" * 2000 + "mlx5_0", str(ib / "deep"))  # before: RecursionError
    os.symlink("/" + "../" * 1300 + "etc", str(ib / "climb"))
    ev = capture(root)
    topo = sysfs.derive(json.loads(json.dumps(ev)))
    names = sorted(n.name for n in topo.nics)
    assert names == ["deep", "mlx5_0"]  # "deep" is mlx5_0 under another name, as in sysfs
    absent = topo.sysfs.to_dict()["absent_devices"]
    assert absent["loop_a"] == absent["loop_b"] == sysfs.ELOOP_TEXT
    assert absent["climb"] == "dangling link, the device is gone (ENOENT)"  # root/etc


def test_names_with_control_characters_are_kept_as_data(tmp_path):
    root = small_tree(tmp_path)
    odd = "mlx5_\n\x1b[31mred\x07 [bold]x[link=file:x]"
    base = root / "class" / "infiniband" / odd / "ports" / "1"
    base.mkdir(parents=True)
    (base / "state").write_text("4: ACTIVE\n")
    (base / "counters").mkdir()
    (base / "counters" / "sym\tbol\n").write_text("3\n")
    (root / "class" / "infiniband" / "bad\udcff").mkdir()  # not UTF-8 (surrogate-escaped)
    ev = capture(root)
    assert ev["files"][f"class/infiniband/{odd}/ports/1/state"] == "4: ACTIVE"
    back = json.loads(json.dumps(ev))
    assert back == ev
    topo = sysfs.derive(back)
    nics = {n.name: n.sysfs.to_dict() for n in topo.nics}
    assert set(nics) == {"mlx5_0", odd, "bad\udcff"}
    assert nics[odd]["ports"][0]["state"] == "ACTIVE"
    assert nics[odd]["ports"][0]["counters"] == {"sym\tbol\n": 3}
    snap = tmp_path / "s.json"
    ok(run("snapshot", "--sysfs-root", root, "-o", snap))
    j = json.loads(ok(run("ib", "--from", snap, "--format", "json")).stdout)
    assert {h["name"] for h in j["hcas"]} == {"mlx5_0", odd, "bad\udcff"}


# --- 6. the time budget covers the whole read -------------------------------------------------


def test_slow_listings_and_reads_stop_at_the_budget(monkeypatch):
    root, faults = sysfs_trees.tree("dgx-h100")
    real_list, real_read = sysfs.list_dir, sysfs.read_file

    def slow_list(path, limit=None):  # the whole walk: 95 listings, 1220 reads, about 40 s
        time.sleep(0.1)
        return real_list(path, limit)

    def slow_read(path):
        time.sleep(0.025)
        return real_read(path)
    monkeypatch.setattr(sysfs.read, "list_dir", slow_list)
    t0 = time.monotonic()
    ev = capture(root, timeout=0.4, faults=faults, reader=slow_read)
    took = time.monotonic() - t0
    assert took < 15, took  # the budget, the grace for the walk, a loaded machine: not 40 s
    assert ev["status"] == "timeout"
    for topo in (sysfs.derive(ev), sysfs.derive(json.loads(json.dumps(ev)))):
        assert warnings(topo, "sysfs.timeout")
        for n in topo.nics:
            for p in n.sysfs.to_dict()["ports"]:
                assert not any("ENOENT" in r for r in list(p["unknown"].values())
                               + list(p["counters_unknown"].values()))
    for t in threading.enumerate():  # let the late worker finish before the next test
        if t.name == "nvtopo-sysfs":
            t.join(30)


def test_a_hung_listing_is_named_as_pending(monkeypatch):
    root, faults = sysfs_trees.tree("roce-bond")
    release = threading.Event()
    real_list = sysfs.list_dir

    def hang(path, limit=None):
        if path.endswith("/class/infiniband"):
            release.wait(30)
        return real_list(path, limit)
    monkeypatch.setattr(sysfs.read, "list_dir", hang)
    t0 = time.monotonic()
    try:
        ev = capture(root, timeout=0.3, faults=faults)
        assert time.monotonic() - t0 < 15  # a hang detector: the listing hangs 30 s
        assert ev["status"] == "timeout" and ev["pending"]["path"] == "class/infiniband"
        assert ev["errors"]["class/infiniband"] == sysfs.DEADLINE
        topo = sysfs.derive(ev)
        assert topo.sysfs.to_dict()["rdma"] == (
            "class/infiniband absent or unreadable: " + sysfs.DEADLINE)
    finally:
        release.set()
        for t in threading.enumerate():
            if t.name == "nvtopo-sysfs":
                t.join(10)


# --- 2. Unicode digits ----------------------------------------------------------------------------


def unicode_tree():
    root = sysfs_trees.scratch_dir()
    faults = fakesys.load_file(str(HOSTILE / "unicode-digits.sysfs"), root)
    return root, faults


def test_unicode_digits_are_unknown_with_a_note_never_a_crash():
    root, faults = unicode_tree()
    ev = capture(root, faults=faults)
    assert ev["status"] == "ok"
    for topo in (sysfs.derive(ev), sysfs.derive(json.loads(json.dumps(ev)))):
        h = topo.nics[0].sysfs.to_dict()
        # the port directory "²" is no port (before: ValueError from int("²") in the walk)
        assert [p["port"] for p in h["ports"]] == [1, 2] and h["skipped_ports"] == ["²"]
        p1, p2 = h["ports"]
        assert (p1["state"], p1["rate_gbps"], p1["lid"]) == ("ACTIVE", 400, 26)
        assert p1["counters"] == {"link_downed": None, "symbol_error": 0}
        assert p1["counters_unknown"] == {"link_downed": "٣"}
        # "٤: ACTIVE" is no state and "٤٠٠ Gb/sec" no rate: unknown, not DOWN, not 400
        assert p2["state"] is None and p2["state_code"] is None
        assert p2["unknown"]["state"] == "not a value: '٤: ACTIVE'"
        assert p2["rate"]["gbps"] is None
        assert p2["unknown"]["rate"] == "not a rate: '٤٠٠ Gb/sec (4X NDR)'"
        # NUMA: node² is no node; a cpulist or distance that does not parse is unknown
        nodes = topo.sysfs.to_dict()["numa"]["nodes"]
        assert [n["node"] for n in nodes] == [0, 1]
        assert nodes[0]["cpus"] is None and nodes[0]["distances"] is None
        assert nodes[0]["unknown"] == {"distance": "not a value: '10 2¹'",
                                       "cpulist": "not a value: '0-²'"}
        assert nodes[1]["cpus"] == 4 and nodes[1]["distances"] == [21, 10]
        # the GPU: width "１６", max speed "٣٢.0 GT/s", numa_node "٠" are unknown
        g = topo.gpus[0].sysfs.to_dict()
        assert g["link"]["current_width"] is None and g["link"]["max_gts"] is None
        assert g["link"]["current_gts"] == 32.0 and g["link"]["max_width"] == 16
        assert g["link"]["unknown"] == {"current_link_width": "not a value: '１６'",
                                        "max_link_speed": "not a value: '٣٢.0 GT/s PCIe'"}
        assert g["numa_node"] is None and g["numa_unknown"] == "not a value: '٠'"
        assert topo.gpus[0].numa_affinity is None
        bad = warnings(topo, "sysfs.bad_value")
        for path in ("bus/pci/devices/0000:1b:00.0/current_link_width",
                     "bus/pci/devices/0000:1b:00.0/max_link_speed",
                     "bus/pci/devices/0000:1b:00.0/numa_node",
                     "class/infiniband/mlx5_0/ports/2/state",
                     "class/infiniband/mlx5_0/ports/2/rate",
                     "devices/system/node/node0/cpulist",
                     "devices/system/node/node0/distance"):
            assert sum(m.startswith(path + ": ") for m in bad) == 1, (path, bad)
        [msg] = warnings(topo, "sysfs.bad_port")
        assert msg.startswith("class/infiniband/mlx5_0/ports: 1 entry not named as a port")
        assert "'²'" in msg


def test_snapshot_of_unicode_digits_reads_back_in_every_command(tmp_path):
    root, _ = unicode_tree()
    snap = tmp_path / "s.json"
    ok(run("snapshot", "--sysfs-root", root, "-o", snap))
    # before: "corrupt snapshot: the sysfs evidence cannot be read (ValueError ...)"
    for cmd in (["show"], ["check"], ["ib"], ["ib", "--format", "json"],
                ["show", "--format", "json"]):
        r = run(*cmd, "--from", snap)
        assert r.exit_code in (0, 1), (cmd, r.stdout, r.stderr)  # check: 1 = findings
        assert "corrupt" not in r.stderr and "Traceback" not in r.stderr
    j = json.loads(run("ib", "--from", snap, "--format", "json").stdout)
    assert j["hcas"][0]["skipped_ports"] == ["²"]
    live = json.loads(ok(run("ib", "--sysfs-root", root, "--format", "json")).stdout)
    assert live["hcas"] == j["hcas"] and live["numa"] == j["numa"]


def test_check_does_not_call_an_unparsed_state_down(tmp_path):
    root, _ = unicode_tree()
    r = run("check", "--sysfs-root", root, "--format", "json")
    doc = json.loads(r.stdout)
    found = [f for f in doc["findings"] if "mlx5_0 port 2" in f.get("subject", "")]
    assert not [f for f in found if f["code"] == "ib.port_down"]
    [nc] = [f for f in doc["findings"] if f["code"] == "ib.not_checked"]
    assert "mlx5_0 port 2 state" in nc["message"]


@pytest.mark.parametrize("raw", ["²", "١", "３", "0-²", "٣-4", "1,²", "5-3", "9" * 60])
def test_cpulist_count_takes_ascii_only(raw):
    assert sysfs.cpulist_count(raw) is None


def test_natural_key_never_calls_int_on_unicode_or_huge_digit_runs():
    names = ["mlx5_10", "mlx5_²", "mlx5_2", "mlx5_" + "9" * 5000, "mlx5_02", "mlx5_"]
    assert sorted(names, key=sysfs.natural_key) == [
        "mlx5_", "mlx5_02", "mlx5_2", "mlx5_10", "mlx5_" + "9" * 5000, "mlx5_²"]


_ATTR_VALUES = st.one_of(
    st.text(max_size=30),
    st.text(alphabet="0123456789²³¹٠١٢٣٤٥٦٧٨٩０１２３ -,:.xXGTs/bBec()NDR", max_size=30),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(_ATTR_VALUES, min_size=12, max_size=12),
       names=st.lists(st.text(min_size=1, max_size=6).filter(
           lambda s: "/" not in s and s not in (".", "..")), min_size=3, max_size=3))
def test_any_text_in_any_attribute_derives_without_error(values, names):
    """Evidence as a capture could record it from a hostile tree: every value and name is
    arbitrary text.  derive never raises, and every number it returns came from ASCII."""
    port, node, hca = names
    b = "devices/pci0000:00/0000:00:01.0"
    files = {
        f"{b}/class": "0x030200", f"{b}/vendor": "0x10de",
        f"{b}/numa_node": values[0], f"{b}/current_link_width": values[1],
        f"{b}/current_link_speed": values[2], f"{b}/local_cpulist": values[3],
        f"class/infiniband/{hca}/ports/{port}/state": values[4],
        f"class/infiniband/{hca}/ports/{port}/rate": values[5],
        f"class/infiniband/{hca}/ports/{port}/lid": values[6],
        f"class/infiniband/{hca}/ports/{port}/counters/symbol_error": values[7],
        f"class/infiniband/{hca}/ports/{port}/phys_state": values[8],
        f"devices/system/node/{node}/cpulist": values[9],
        f"devices/system/node/{node}/distance": values[10],
        "devices/system/node/online": values[11],
    }
    ev = {"status": "ok", "files": files,
          "links": {"bus/pci/devices/0000:00:01.0": "../../../" + b},
          "dirs": {"bus/pci/devices": ["0000:00:01.0"], "class/infiniband": [hca],
                   f"class/infiniband/{hca}": ["ports"],
                   f"class/infiniband/{hca}/ports": [port],
                   f"class/infiniband/{hca}/ports/{port}/counters": ["symbol_error"],
                   "devices/system/node": [node]},
          "errors": {}}
    topo = sysfs.derive(ev)
    json.dumps(topo.to_dict())  # the model serialises
    g = topo.gpus[0].sysfs.to_dict()
    if g["link"]["current_width"] is not None:
        assert values[1].strip().isascii()
    if g["numa_node"] is not None:
        assert values[0].strip().isascii()
    for p in topo.nics[0].sysfs.to_dict()["ports"]:
        assert port.isascii() and port == str(p["port"])
        if p["state_code"] is not None:
            assert values[4].split(":")[0].strip().isascii()
        if p["rate"]["gbps"] is not None:
            assert values[5].isascii() or not any(c.isdigit() and not c.isascii()
                                                  for c in values[5])
        if p["counters"]["symbol_error"] is not None:
            assert values[7].strip().isascii()
    for n in (topo.sysfs.to_dict()["numa"] or {}).get("nodes", []):
        assert node.isascii()
        if n["distances"]:
            assert values[10].isascii() or not any(
                c.isdigit() and not c.isascii() for c in values[10])


# --- 3. unreadable is not absent ------------------------------------------------------------------


def test_unreadable_counters_directory_is_not_reported_as_absent(tmp_path):
    root = small_tree(tmp_path, f"class/infiniband/mlx5_1/node_type = 1: CA\n"
                                f"class/infiniband/mlx5_1/ports/1/state = 4: ACTIVE\n")
    # file modes do not stop root: the EACCES is injected, as the fixtures' "!" entries are
    ev = capture(root, faults={f"{PORT}/counters": "EACCES: Permission denied"})
    assert ev["errors"][f"{PORT}/counters"] == "EACCES: Permission denied"
    for topo in (sysfs.derive(ev), sysfs.derive(json.loads(json.dumps(ev)))):
        denied, absent = port1(topo, "mlx5_0"), port1(topo, "mlx5_1")
        assert denied["counters"] is None and absent["counters"] is None  # kept as before
        assert denied["counters_status"] == "unreadable"
        assert denied["counters_note"] == "counters/ unreadable: permission denied (EACCES)"
        assert absent["counters_status"] == "absent"
        assert absent["counters_note"] == "no counters/ directory (driver without PMA)"
        assert denied["hw_counters_status"] == absent["hw_counters_status"] == "absent"
        assert warnings(topo, "sysfs.counters_unreadable") == [
            "mlx5_0 port 1: counters/ unreadable: permission denied (EACCES): its error "
            "counters are unknown (not absent)"]
    out = ok(run("ib", "--sysfs-root", root)).stdout  # no injection through the CLI: read
    assert "counters unreadable" not in out


def test_ib_and_check_show_unreadable_counters_apart_from_absent(tmp_path):
    root = small_tree(tmp_path, "class/infiniband/mlx5_1/node_type = 1: CA\n"
                                "class/infiniband/mlx5_1/ports/1/state = 4: ACTIVE\n"
                                "class/infiniband/mlx5_1/ports/1/phys_state = 5: LinkUp\n"
                                "class/infiniband/mlx5_1/ports/1/rate = 400 Gb/sec (4X NDR)\n")
    ev = capture(root, faults={f"{PORT}/counters": "EACCES: Permission denied"})
    snap = tmp_path / "s.json"
    snap.write_text(snapshot.dumps({"schema_version": 1, "kind": "nvtopo-snapshot",
                                    "probes": {"sysfs": ev}}))
    r = ok(run("ib", "--from", snap))
    rows = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.startswith("mlx5_")}
    assert rows["mlx5_0"].rstrip().endswith("counters unreadable")
    assert rows["mlx5_1"].rstrip().endswith("no counters")
    assert ("warning: mlx5_0 port 1: counters/ unreadable: permission denied (EACCES)"
            in r.stdout)
    j = json.loads(ok(run("ib", "--from", snap, "--format", "json")).stdout)
    ports = {h["name"]: h["ports"][0] for h in j["hcas"]}
    assert ports["mlx5_0"]["counters_status"] == "unreadable"
    assert ports["mlx5_1"]["counters_status"] == "absent"
    c = json.loads(run("check", "--from", snap, "--format", "json").stdout)
    [nc] = [f for f in c["findings"] if f["code"] == "ib.not_checked"]
    assert "mlx5_0 port 1 counters" in nc["message"]
    assert "mlx5_1 port 1 counters" not in nc["message"]  # absent: nothing to check


@pytest.mark.parametrize("err,status,note", [
    ("ENOENT: No such file or directory", "absent", "no counters/ directory (driver without PMA)"),
    ("EACCES: Permission denied", "unreadable", "counters/ unreadable: permission denied (EACCES)"),
    ("EPERM: Operation not permitted", "unreadable",
     "counters/ unreadable: permission denied (EPERM)"),
    ("EIO: Input/output error", "unreadable", "counters/ unreadable: input/output error (EIO)"),
    ("ENOTDIR: Not a directory", "unreadable", "counters/ unreadable: not a directory (ENOTDIR)"),
    (sysfs.DEADLINE, "not read", "counters/ not read (the probe's time budget was spent)"),
    (sysfs.LIMIT, "not read", "counters/ not read (the evidence reached its size limit)"),
])
def test_counters_directory_status_for_every_reason(err, status, note):
    p = sysfs.port_facts({"port": 1, "attrs": {"state": "4: ACTIVE"}, "errors": {},
                     "counters": None, "counters_error": err, "hw_counters": None,
                     "hw_counters_error": None}, "CA")
    assert (p.counters_status, p.counters_note) == (status, note)


def test_a_fifo_where_counters_should_be_is_unreadable_not_absent(tmp_path):
    root = small_tree(tmp_path)
    (root / IB / "ports" / "2").mkdir()
    os.mkfifo(str(root / IB / "ports" / "2" / "counters"))
    topo = sysfs.derive(capture(root))
    p2 = topo.nics[0].sysfs.to_dict()["ports"][1]
    assert p2["counters_status"] == "unreadable"
    assert p2["counters_note"] == "counters/ unreadable: not a directory (ENOTDIR)"


# --- 4. a tree that may not be read -------------------------------------------------------------


def _deny_under(monkeypatch, root):
    """Make stat() below ``root`` fail as for a mode-000 directory (root ignores modes)."""
    real = os.stat
    root = str(root)

    def stat(path, *a, **kw):
        p = os.fspath(path)
        if isinstance(p, str) and p.startswith(root + os.sep):
            raise PermissionError(13, "Permission denied", p)
        return real(path, *a, **kw)
    monkeypatch.setattr(os, "stat", stat)


@pytest.mark.parametrize("cmd", [["ib"], ["show"], ["snapshot"], ["check"]])
def test_mode_000_root_is_permission_denied_not_no_devices(tmp_path, monkeypatch, cmd):
    root = small_tree(tmp_path)
    _deny_under(monkeypatch, root)
    r = make_runner().invoke(app, [*cmd, "--sysfs-root", str(root)])
    assert r.exit_code == 2 and r.stdout == "" and "Traceback" not in r.stderr
    # before: "is not a sysfs tree (no devices/ directory)"
    assert r.stderr == (f"nvtopo: error: --sysfs-root {root}: permission denied (run as a "
                        "user who may read the tree, or copy it)\n")


def test_why_not_sysfs_names_the_directory_that_may_not_be_searched(tmp_path, monkeypatch):
    root = tmp_path / "sys"
    fakesys.materialize("devices/system/node/node0/cpulist = 0-3\nclass/net/\n", str(root))
    _deny_under(monkeypatch, root / "devices")
    assert sysfs.why_not_sysfs(str(root)) == "permission denied on devices/"
    (root / "class" / "infiniband").mkdir()
    assert sysfs.why_not_sysfs(str(root)) is None  # one unreadable marker refuses nothing
    monkeypatch.undo()
    _deny_under(monkeypatch, tmp_path)  # a parent that may not be searched
    with pytest.raises(Exception) as exc:
        sysfs.check_root(str(root))
    assert str(exc.value) == f"--sysfs-root {root}: permission denied"


def _as_nobody():
    """argv prefix that runs a command as an unprivileged user, or None."""
    if os.getuid() != 0:
        return []
    for tool in ("/usr/bin/setpriv", "/bin/setpriv"):
        if os.path.exists(tool):
            return [tool, "--reuid=65534", "--regid=65534", "--clear-groups"]
    return None


def test_mode_000_root_through_the_os(tmp_path):
    """The same through real file modes: as an unprivileged user (root ignores modes)."""
    prefix = _as_nobody()
    if prefix is None:
        pytest.skip("running as root without setpriv: modes cannot deny (the message logic "
                    "is tested with a denied stat above)")
    base = Path(sysfs_trees.scratch_dir())
    for d in [base, *base.parents]:
        if str(d) in ("/", "/tmp", "/dev/shm"):
            break
        os.chmod(str(d), 0o755)  # the way down must be open to that user
    # this Python must start and import nvtopo as that user at all (a pyenv build under
    # /root, say, cannot even load its own libpython there): else the test cannot run here
    probe = subprocess.run(prefix + [sys.executable, "-c", "import nvtopo"],
                           capture_output=True, text=True, timeout=60, cwd=str(REPO))
    if probe.returncode != 0:
        pytest.skip(f"this Python cannot run nvtopo as that user here: {probe.stderr[-200:]}")
    root = base / "locked"
    fakesys.materialize(BASE, str(root))
    os.chmod(str(root), 0)
    try:
        r = subprocess.run(prefix + [sys.executable, "-m", "nvtopo", "ib", "--sysfs-root",
                                     str(root)], capture_output=True, text=True, timeout=60,
                           cwd=str(REPO))
    finally:
        os.chmod(str(root), 0o755)
    if "ModuleNotFoundError" in r.stderr or "Permission denied: '" in r.stderr:
        pytest.skip(f"nvtopo cannot be run as that user here: {r.stderr[-200:]}")
    assert r.returncode == 2, r.stderr
    assert r.stderr == (f"nvtopo: error: --sysfs-root {root}: permission denied (run as a "
                        "user who may read the tree, or copy it)\n")
