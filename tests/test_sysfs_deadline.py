"""The sysfs probe's time budget: counter reads send MADs to the HCA and can stall on a
failing one; past ``ProbeOptions.timeout`` nothing more is read, and what was not read is
unknown with the reason "deadline", never absent."""

import json
import threading
import time

from cli_runner import make_runner

from nvtopo import snapshot
from nvtopo.cli import app
from nvtopo.probes import ProbeOptions, sysfs

import sysfs_trees


def slow_counters(delay):
    """A reader that takes ``delay`` seconds per counter (a struggling HCA)."""
    real = sysfs.read_file

    def read(path):
        if "/counters/" in path or "/hw_counters/" in path:
            time.sleep(delay)
        return real(path)
    return read


def _by_name(topo):
    return {n.name: n.sysfs.to_dict() for n in topo.nics}


def test_slow_counters_stop_at_the_budget_and_unread_files_are_unknown():
    root, faults = sysfs_trees.tree("dgx-h100")
    t0 = time.monotonic()
    # ~250 counters at 40 ms would take 10 s; the budget is 0.4 s
    ev = sysfs.capture(ProbeOptions(sysfs_root=root, timeout=0.4), faults=faults,
                       reader=slow_counters(0.04))
    took = time.monotonic() - t0
    assert took < 0.4 + 0.4 + 0.5, took  # the budget, the read in flight, slack
    assert ev["status"] == "timeout" and ev["timeout_s"] == 0.4
    assert ev["error"].startswith("sysfs probe did not finish within its 0.4 s budget")
    assert "pending" not in ev  # the walk finished once reads stopped
    deadline = [k for k, e in ev["errors"].items() if e == sysfs.DEADLINE]
    assert deadline and any("/counters/" in k for k in deadline)
    assert any("/counters/" in k for k in ev["files"])  # read before the budget was spent
    for topo in (sysfs.derive(ev), sysfs.derive(json.loads(json.dumps(ev)))):
        h = _by_name(topo)
        assert len(h) == 12  # every device is listed: listings and links are not reads
        first, last = h["mlx5_0"]["ports"][0], h["mlx5_11"]["ports"][0]
        assert first["state"] == "ACTIVE" and first["counters"]["VL15_dropped"] == 0
        # not read: unknown with the reason, never "missing"
        assert last["state"] is None and last["unknown"]["state"] == sysfs.DEADLINE
        assert set(last["counters_unknown"].values()) == {sysfs.DEADLINE}
        assert not any("ENOENT" in r for x in h.values() for p in x["ports"]
                       for r in list(p["unknown"].values()) + list(p["counters_unknown"].values()))
        warnings = [n for n in topo.notes if n.level == "warning"]
        [note] = [n for n in warnings if n.code == "sysfs.timeout"]
        assert "0.4 s budget" in note.message and f"({len(deadline)} files)" in note.message
        # said once, not once per port
        assert not any(n.code == "sysfs.counters_unknown" for n in warnings)


def test_a_hung_read_is_left_behind():
    root, faults = sysfs_trees.tree("dgx-h100")
    release = threading.Event()
    hung = "/ports/1/counters/port_xmit_wait"

    def reader(path):
        if path.endswith("mlx5_3" + hung):
            release.wait(30)  # a MAD that never comes back
        return sysfs.read_file(path)

    t0 = time.monotonic()
    ev = sysfs.capture(ProbeOptions(sysfs_root=root, timeout=0.3), faults=faults, reader=reader)
    took = time.monotonic() - t0
    try:
        assert took < 0.3 + 0.3 + 0.5, took  # the budget and the grace for the walk to end
        assert ev["status"] == "timeout"
        pending = ev["pending"]["path"]
        assert pending.endswith("mlx5_3" + hung) and ev["pending"]["waited_s"] >= 0.2
        assert pending in ev["error"] and ev["errors"][pending] == sysfs.DEADLINE
        before = json.dumps(ev, sort_keys=True)
        topo = sysfs.derive(ev)
        h = _by_name(topo)
        assert h["mlx5_0"]["ports"][0]["state"] == "ACTIVE"  # read before the hang
        p3 = h["mlx5_3"]["ports"][0]
        assert p3["counters_unknown"]["port_xmit_wait"] == sysfs.DEADLINE
        # the walk goes in listing order (mlx5_0, mlx5_1, mlx5_10, mlx5_11, mlx5_2, ...):
        # mlx5_10 was read whole; devices after mlx5_3 were never reached: unread, not absent
        assert h["mlx5_10"]["ports"][0]["state"] == "ACTIVE"
        absent = topo.sysfs.to_dict()["absent_devices"]
        assert set(absent) == {f"mlx5_{i}" for i in range(4, 10)}
        assert set(absent.values()) == {sysfs.DEADLINE}
        msgs = [n.message for n in topo.notes if n.code == "sysfs.device_absent"]
        assert "class/infiniband/mlx5_9: not read before the deadline, so not counted as an " \
               "RDMA device" in msgs
        assert any(n.code == "sysfs.timeout" for n in topo.notes)
    finally:
        release.set()
        for t in threading.enumerate():
            if t.name == "nvtopo-sysfs":
                t.join(10)
    assert json.dumps(ev, sort_keys=True) == before  # the late worker changed nothing


def test_a_probe_within_its_budget_is_unchanged():
    root, faults = sysfs_trees.tree("roce-bond")
    ev = sysfs.capture(ProbeOptions(sysfs_root=root, timeout=30), faults=faults)
    assert ev["status"] == "ok" and ev["error"] is None and ev["timeout_s"] == 30
    assert "pending" not in ev and sysfs.DEADLINE not in ev["errors"].values()
    assert not any(n.code == "sysfs.timeout" for n in sysfs.derive(ev).notes)


def test_snapshot_records_the_timeout_and_ib_shows_it(tmp_path, monkeypatch):
    root, _ = sysfs_trees.tree("dgx-h100")
    monkeypatch.setattr(sysfs.read, "read_file", slow_counters(0.04))
    runner = make_runner()
    snap = tmp_path / "s.json"
    r = runner.invoke(app, ["snapshot", "--sysfs-root", root, "--timeout", "0.3",
                            "-o", str(snap)])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    assert "nvtopo: note: sysfs: sysfs probe did not finish within its 0.3 s budget" in r.stderr
    doc = json.loads(snap.read_text())
    assert doc["probes"]["sysfs"]["status"] == "timeout"
    r = runner.invoke(app, ["ib", "--from", str(snap)], env={"COLUMNS": "220"})
    assert r.exit_code == 0, (r.stdout, r.stderr)
    assert "warning: sysfs probe did not finish within its 0.3 s budget" in r.stdout
    assert "12 RDMA devices" in r.stdout
    topo = snapshot.derive(doc, "s.json")
    assert topo.nics and topo.sysfs.to_dict()["absent_devices"] == {}


def test_odd_budgets_never_crash():
    root, faults = sysfs_trees.tree("vm")
    for timeout, budget in ((float("inf"), None), (float("nan"), 30.0), (0, 30.0),
                            (-1, 30.0), (None, 30.0), ("x", 30.0), (2, 2.0)):
        ev = sysfs.capture(ProbeOptions(sysfs_root=root, timeout=timeout), faults=faults)
        assert ev["status"] == "ok", timeout
        assert ev["timeout_s"] == budget, timeout
        json.dumps(ev, allow_nan=False)  # plain JSON
    assert sysfs.capture(None)["timeout_s"] == 30.0
