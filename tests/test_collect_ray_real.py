"""``nvtopo collect ray`` on a real local Ray cluster (``ray.cluster_utils.Cluster``: a head
and workers on this host), the collector run as a user runs it (``python -m nvtopo``):
one node hung, one failing, one that dies under its task, one already dead, and a head
whose only CPU is busy (the tasks ask for none).

Skipped, saying why, where Ray is not importable (``pip install 'nvtopo[ray]'``);
``NVTOPO_REQUIRE_ENGINES=ray`` (CI, after installing it) makes that a failure.  Bounded in
time; every process the cluster started is gone when the test ends (checked)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import collect_harness as H
from nvtopo import snapshot
from nvtopo.commands.collect import ray as ray_engine


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    try:
        import ray  # noqa: F401
        from ray.cluster_utils import Cluster
    except ImportError:
        H.skip_or_fail("ray", "Ray is not installed: pip install 'nvtopo[ray]'")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    # Ray's workers get the environment the cluster started with: the fake nvidia-smi
    # (the DGX H100 matrix) must be on PATH by then
    bin_dir = H.fake_nvidia_smi(tmp_path / "bin").parent
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    # Ray's processes inherit this: the plan below finds them by it when the test ends
    marker = str(tmp_path)
    old = os.environ.get("NVTOPO_TEST_RUN")
    os.environ["NVTOPO_TEST_RUN"] = marker
    c = Cluster(initialize_head=True, connect=False,
                head_node_args={"num_cpus": 1, "include_dashboard": False,
                                "object_store_memory": 80 * 1024 * 1024})
    try:
        workers = [c.add_node(num_cpus=1, object_store_memory=80 * 1024 * 1024)
                   for _ in range(4)]
        c.wait_for_nodes()
        import ray

        ray.init(address=c.address, log_to_driver=False, logging_level="ERROR")
        yield c, workers
    finally:
        import ray

        ray.shutdown()
        c.shutdown()
        if old is None:
            del os.environ["NVTOPO_TEST_RUN"]
        else:
            os.environ["NVTOPO_TEST_RUN"] = old
    deadline = time.monotonic() + 20
    while H.processes_mentioning(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = H.processes_mentioning(marker)
    for pid in left:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    assert not left, f"Ray processes left behind: {left}"


def test_hung_failing_dying_and_dead_nodes_are_named(cluster, tmp_path):
    import ray

    c, (hung, failing, dying, gone) = cluster
    host = socket.gethostname()
    c.remove_node(gone)  # dead before the collection: Ray still lists it, not alive
    name = {n.node_id: f"{host}-{n.node_id[:12]}" for n in [c.head_node, hung, failing,
                                                           dying, gone]}
    plan = H.write_plan(tmp_path / "plan.json", {name[hung.node_id]: "hang",
                                                 name[failing.node_id]: "fail",
                                                 name[dying.node_id]: "die"})
    command = H.fake_node_command(tmp_path / "node-nvtopo", plan)

    # the head's one CPU is taken: a task asking for a CPU would wait for ever there
    @ray.remote(num_cpus=1)
    def busy():
        time.sleep(300)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    blocker = busy.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        c.head_node.node_id, soft=False)).remote()

    # the dying node goes away once its task has started
    started = Path(f"{plan}.{name[dying.node_id]}.started")

    def kill_when_started():
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        if started.exists():
            c.remove_node(dying, allow_graceful=False)

    killer = threading.Thread(target=kill_when_started, daemon=True)
    killer.start()
    out = tmp_path / "fleet"
    env = dict(os.environ)
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "nvtopo", "collect", "ray", "-o", str(out),
                           "--address", c.address, "--timeout", "5", "--node-limit", "15",
                           "--launch-wait", "20", "--node-command", str(command)],
                          env=env, capture_output=True, text=True, timeout=180)
    took = time.monotonic() - t0
    killer.join(5)
    ray.cancel(blocker, force=True)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert took < 15 + 20 + 30, took
    m = json.loads((out / "collect.json").read_text())
    import schema_check

    schema_check.validate(m, "collect")
    nodes = {n["node"]: n for n in m["nodes"]}
    statuses = {n: v["status"] for n, v in nodes.items()}
    assert statuses == {
        name[c.head_node.node_id]: "answered",
        name[hung.node_id]: "timeout",
        name[failing.node_id]: "exited",
        name[dying.node_id]: "node-died",
    }, {n: (v["status"], v.get("reason")) for n, v in nodes.items()}
    assert nodes[name[failing.node_id]]["reason"] == (
        "exited with 3: nvtopo: error: simulated failure on " + name[failing.node_id]
        + " | second line")
    assert [s["node"] for s in m["skipped"]] == [name[gone.node_id]]
    assert m["skipped"][0]["reason"].startswith("Ray lists the node as dead")
    head = nodes[name[c.head_node.node_id]]
    assert head["engine"]["node_id"] == c.head_node.node_id
    path = out / head["file"]
    opened = snapshot.open_input(snapshot.Input(path=str(path)))
    assert opened.cached is True and len(opened.model.gpus) == 8
    check = subprocess.run([sys.executable, "-m", "nvtopo", "check", "--from", str(path),
                            "--format", "json"], capture_output=True, text=True, timeout=120)
    assert check.returncode in (0, 1) and json.loads(check.stdout)["layout"] == "dgx-h100"


def test_node_names_match_what_the_collector_uses():
    """The test above names nodes as the collector does on one host (shared host name)."""
    nodes = [{"NodeID": "ab" * 28, "NodeManagerHostname": "vm"},
             {"NodeID": "cd" * 28, "NodeManagerHostname": "vm"}]
    assert ray_engine.node_names(nodes) == {"ab" * 28: "vm-abababababab",
                                            "cd" * 28: "vm-cdcdcdcdcdcd"}
