"""``nvtopo collect ray`` without Ray: the names nodes get, Ray's errors mapped to reasons,
and a whole collection through a stand-in for the few Ray calls the collector makes (the
tasks run the real node-side nvtopo).  The same on a real local Ray cluster is
tests/test_collect_ray_real.py."""

from __future__ import annotations

import builtins
import json
import sys
import time
import types
from pathlib import Path
from typing import Any, Dict, List

import pytest

import collect_harness as H
from cli_runner import make_runner
from nvtopo.cli import app
from nvtopo.commands.collect import ray as ray_engine


# --- a stand-in for ray --------------------------------------------------------------------


class RayError(Exception):
    pass


class TaskUnschedulableError(RayError):
    pass


class NodeDiedError(RayError):
    pass


class WorkerCrashedError(RayError):
    pass


class ObjectLostError(RayError):
    pass


class TaskCancelledError(RayError):
    pass


class RayTaskError(RayError):
    def __init__(self, cause):
        super().__init__(f"task raised {cause!r}")
        self.cause = cause


class Ref:
    def __init__(self, node_id: str, outcome: Any) -> None:
        self.node_id, self.outcome, self.cancelled = node_id, outcome, False


class FakeRay:
    """``ray`` as the collector uses it.  ``behaviour``: node id -> ``"run"`` (run the task
    body for real, pretending to be on that node), ``"hang"`` (never ready), or an
    exception to raise from ``get``.  ``wait`` waits its timeout when nothing is ready, as
    Ray's does; with ``fast_clock`` it moves the collector's clock on instead (``skipped``
    seconds), so a long deadline passes at once."""

    exceptions = types.SimpleNamespace(
        RayError=RayError, TaskUnschedulableError=TaskUnschedulableError,
        NodeDiedError=NodeDiedError, WorkerCrashedError=WorkerCrashedError,
        ObjectLostError=ObjectLostError, TaskCancelledError=TaskCancelledError,
        RayTaskError=RayTaskError)

    def __init__(self, nodes: List[Dict[str, Any]], behaviour: Dict[str, Any]) -> None:
        self._nodes, self.behaviour = nodes, behaviour
        self.inits: List[Dict[str, Any]] = []
        self.cancelled: List[str] = []
        self.options_seen: List[Dict[str, Any]] = []
        self.remote_options: Dict[str, Any] = {}
        self.shut = False
        self._here = None
        self.fast_clock = False
        self.skipped = 0.0
        self.on_first_wait: Any = None  # called once, when the collector first waits

    def init(self, **kw):
        if kw.get("address") == "nowhere:1":
            raise ConnectionError("Could not find any running Ray instance.\nMore text")
        self.inits.append(kw)

    def shutdown(self):
        self.shut = True

    def nodes(self):
        return self._nodes

    def get_runtime_context(self):
        return types.SimpleNamespace(get_node_id=lambda: self._here)

    def remote(self, **opts):
        self.remote_options = opts
        fake = self

        def wrap(fn):
            class Remote:
                def options(self, **o):
                    fake.options_seen.append(o)
                    node_id = o["scheduling_strategy"].node_id

                    class Bound:
                        def remote(self, *args):
                            what = fake.behaviour.get(node_id, "run")
                            if what == "run":
                                fake._here = node_id
                                return Ref(node_id, fn(*args))
                            if isinstance(what, dict):  # a result as it is
                                return Ref(node_id, what)
                            return Ref(node_id, what)
                    return Bound()
            return Remote()
        return wrap

    def wait(self, refs, num_returns=1, timeout=None):
        if self.on_first_wait is not None:
            call, self.on_first_wait = self.on_first_wait, None
            call()
        ready = [r for r in refs if r.outcome != "hang"]
        if not ready and timeout:
            if self.fast_clock:
                self.skipped += timeout
            else:
                time.sleep(timeout)
        return ready, [r for r in refs if r not in ready]

    def get(self, ref):
        if isinstance(ref.outcome, BaseException):
            raise ref.outcome
        return ref.outcome

    def cancel(self, ref, force=False):
        assert force is True
        self.cancelled.append(ref.node_id)


class Affinity:
    def __init__(self, node_id, soft):
        assert soft is False
        self.node_id = node_id


def _node(i: int, alive: bool = True, host: str = "gpu") -> Dict[str, Any]:
    return {"NodeID": f"{i:02x}" * 28, "Alive": alive, "NodeManagerHostname": f"{host}{i}",
            "NodeManagerAddress": f"10.0.0.{i}", "Resources": {"GPU": 8.0}}


@pytest.fixture
def fake_ray(monkeypatch, tmp_path):
    bin_dir = H.fake_nvidia_smi(tmp_path / "bin").parent
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    made = {}

    def install(nodes, behaviour):
        made["ray"] = FakeRay(nodes, behaviour)
        monkeypatch.setattr(ray_engine, "import_ray", lambda: (made["ray"], Affinity))
        monkeypatch.setattr(ray_engine, "time", types.SimpleNamespace(
            monotonic=lambda: time.monotonic() + made["ray"].skipped))
        monkeypatch.setitem(sys.modules, "ray", made["ray"])
        return made["ray"]
    return install


def _manifest(out: Path) -> Dict[str, Any]:
    return json.loads((out / "collect.json").read_text())


def test_every_alive_node_answers_and_dead_ones_are_named(fake_ray, tmp_path):
    ray = fake_ray([_node(1), _node(2), _node(3, alive=False)], {})
    out = tmp_path / "fleet"
    res = make_runner().invoke(app, ["collect", "ray", "-o", str(out), "--timeout", "5"])
    assert res.exit_code == 0, (res.stdout, res.stderr)
    m = _manifest(out)
    assert m["expected"] == m["answered"] == ["gpu1", "gpu2"]
    assert m["skipped"] == [{"node": "gpu3", "reason": "Ray lists the node as dead (id "
                             + "03" * 28 + ", gpu3 10.0.0.3)"}]
    nodes = {n["node"]: n for n in m["nodes"]}
    assert nodes["gpu1"]["engine"] == {"node_id": "01" * 28, "hostname": "gpu1",
                                       "address": "10.0.0.1"}
    assert sorted(p.name for p in out.iterdir()) == ["collect.json", "gpu1.json.gz",
                                                     "gpu2.json.gz"]
    # zero CPUs, no retries, pinned hard to the node
    assert ray.remote_options == {"num_cpus": 0, "max_retries": 0}
    assert [o["scheduling_strategy"].node_id for o in ray.options_seen] == ["01" * 28,
                                                                           "02" * 28]
    assert ray.inits[0]["address"] == "auto" and ray.shut


def test_ray_s_errors_become_reasons(fake_ray, tmp_path):
    nodes = [_node(i) for i in range(1, 9)]
    ids = [n["NodeID"] for n in nodes]
    ray = fake_ray(nodes, {
        ids[1]: "hang",
        ids[2]: TaskUnschedulableError("The node specified via NodeAffinitySchedulingStrategy "
                                       "doesn't exist any more"),
        ids[3]: NodeDiedError("The node running the task died\nsecond line"),
        ids[4]: WorkerCrashedError("The worker died unexpectedly"),
        ids[5]: RayTaskError(ValueError("bad \x1b[2J value")),
        ids[6]: {"node_id": ids[6], "returncode": 3, "timed_out": False, "cut": None,
                 "stdout": b"", "stderr": "nvtopo: error: boom\n"},
        ids[7]: {"node_id": ids[0], "returncode": 0, "timed_out": False, "cut": None,
                 "stdout": b"", "stderr": ""},
    })
    ray.fast_clock = True  # gpu2 never answers: its deadline passes without waiting for it
    out = tmp_path / "fleet"
    # gpu1's real node command has 30 s (a loaded machine took more than 1 s)
    res = make_runner().invoke(app, ["collect", "ray", "-o", str(out), "--timeout", "5",
                                     "--node-limit", "30", "--launch-wait", "1"])
    assert res.exit_code == 1
    nodes = {n["node"]: (n["status"], n.get("reason")) for n in _manifest(out)["nodes"]}
    assert nodes == {
        "gpu1": ("answered", None),
        "gpu2": ("timeout", "no answer within 30 s (+1 s to start); the task was cancelled"),
        "gpu3": ("node-gone", "Ray could not place the task on the node: The node specified "
                              "via NodeAffinitySchedulingStrategy doesn't exist any more"),
        "gpu4": ("node-died", "NodeDiedError: The node running the task died"),
        "gpu5": ("node-died", "WorkerCrashedError: The worker died unexpectedly"),
        "gpu6": ("probe-crashed", "the task raised ValueError: bad \\x1b[2J value"),
        "gpu7": ("exited", "exited with 3: nvtopo: error: boom"),
        "gpu8": ("bad-record", "bad record: the task ran on node " + ids[0] + ", not on "
                               + ids[7]),
    }


def test_the_task_body_bounds_the_node_command(tmp_path, monkeypatch):
    """run_on_node runs the command under its limit and says where it ran."""
    fake = types.SimpleNamespace(get_runtime_context=lambda: types.SimpleNamespace(
        get_node_id=lambda: "abc"))
    monkeypatch.setitem(sys.modules, "ray", fake)
    done = ray_engine.run_on_node([sys.executable, "-c", "import time; time.sleep(30)"], 0.5)
    assert done["timed_out"] is True and done["node_id"] == "abc"
    done = ray_engine.run_on_node([sys.executable, "-c", "print('x'); raise SystemExit(4)"], 10)
    assert done["returncode"] == 4 and done["stdout"] == b"x\n"


def test_names_are_host_names_where_they_tell_nodes_apart():
    nodes = [_node(1, host="a"), _node(2, host="b"), _node(3, host="b"),
             {"NodeID": "ff" * 28, "NodeManagerHostname": "bad name!"}]
    names = ray_engine.node_names(nodes)
    assert names == {"01" * 28: "a1", "02" * 28: "b2", "03" * 28: "b3",
                     "ff" * 28: "node-ffffffffffff"}
    same = [dict(_node(i), NodeManagerHostname="vm") for i in (1, 2)]
    assert list(ray_engine.node_names(same).values()) == ["vm-010101010101", "vm-020202020202"]


def test_no_cluster_is_one_line(fake_ray, tmp_path):
    fake_ray([_node(1)], {})
    res = make_runner().invoke(app, ["collect", "ray", "-o", str(tmp_path / "f"),
                                     "--address", "nowhere:1"])
    assert res.exit_code == 2
    assert res.stderr == ("nvtopo: error: collect ray: cannot join the Ray cluster at "
                          "nowhere:1: Could not find any running Ray instance. More text\n")


def test_no_ray_installed_names_the_extra(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kw):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    monkeypatch.delitem(sys.modules, "ray", raising=False)
    res = make_runner().invoke(app, ["collect", "ray", "-o", str(tmp_path / "f")])
    assert res.exit_code == 2
    assert res.stderr == ("nvtopo: error: collect ray: Ray is not installed here: pip install "
                          "'nvtopo[ray]' (ray>=2.9)\n")
    assert not (tmp_path / "f").exists()  # refused before anything was made


def test_nvtopo_does_not_import_ray_unless_asked():
    import subprocess

    code = ("import sys\nfrom nvtopo.cli import app\nimport nvtopo.commands.collect.slurm\n"
            "print('ray' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_a_record_naming_another_node_is_refused_and_named(fake_ray, tmp_path):
    """A task's output speaks only for the node Ray ran it on (the node id Ray's runtime
    gives on the node, checked against the node it was pinned to), whatever name the
    record holds.  Before: the forged record was listed as "unexpected", the forger's own
    kept, and the collection exited 0."""
    from nvtopo.commands.collect import record

    nodes = [_node(1), _node(2)]
    ids = [n["NodeID"] for n in nodes]
    payload = (Path(ray_engine.__file__).parents[2] / "examples"
               / "dgx-h100-healthy.json.gz").read_bytes()
    stdout = b"".join(record.encode("gpu2", payload)) + b"".join(record.encode("gpu1", payload))
    fake_ray(nodes, {ids[0]: {"node_id": ids[0], "returncode": 0, "timed_out": False,
                              "cut": None, "stdout": stdout, "stderr": ""}})
    out = tmp_path / "fleet"
    res = make_runner().invoke(app, ["collect", "ray", "-o", str(out), "--timeout", "5"])
    assert res.exit_code == 1, (res.stdout, res.stderr)
    m = _manifest(out)
    nodes_by = {n["node"]: n for n in m["nodes"]}
    assert nodes_by["gpu2"]["status"] == "answered"
    assert nodes_by["gpu1"]["status"] == "mismatch"
    assert nodes_by["gpu1"]["reason"] == (
        "the task on Ray node " + ids[0] + " sent a record naming gpu2: a node's records "
        "may name only that node, so none of its own is kept either")
    assert m["mismatched"] == [{"node": "gpu2", "sender": "gpu1", "task": None,
                                "reason": "the task on Ray node " + ids[0] + " runs on gpu1, "
                                          "not on gpu2"}]
    assert m["unexpected"] == [] and m["answered"] == ["gpu2"]
    assert sorted(p.name for p in out.iterdir()) == ["collect.json", "gpu2.json.gz"]


def test_a_signal_cancels_the_tasks_and_leaves_the_manifest_of_what_came(fake_ray, tmp_path):
    """SIGTERM while tasks run: they are cancelled and the manifest names what came.  (A
    handler of the test's own stands in for the default, which would end pytest: before,
    the signal went to it, and the collection waited on for its deadline.)"""
    import os
    import signal

    nodes = [_node(1), _node(2)]
    ray = fake_ray(nodes, {nodes[1]["NodeID"]: "hang"})
    # sent once the tasks are launched and the collector waits on them (a timer of 1 s
    # could fire before that on a loaded machine)
    ray.on_first_wait = lambda: os.kill(os.getpid(), signal.SIGTERM)
    seen = []
    old = signal.signal(signal.SIGTERM, lambda *_: seen.append("test"))
    try:
        out = tmp_path / "fleet"
        res = make_runner().invoke(app, ["collect", "ray", "-o", str(out), "--timeout", "5",
                                         "--node-limit", "60", "--launch-wait", "60"])
    finally:
        signal.signal(signal.SIGTERM, old)
    assert not seen, "the collector did not take the signal"
    assert res.exit_code == 128 + signal.SIGTERM, (res.stdout, res.stderr)
    m = _manifest(out)
    assert m["interrupted"] == "SIGTERM"
    assert {n["node"]: n["status"] for n in m["nodes"]} == {"gpu1": "answered",
                                                           "gpu2": "interrupted"}
    assert ray.cancelled == [nodes[1]["NodeID"]] and ray.shut
    assert res.stderr.splitlines()[-1] == (
        f"nvtopo: error: collect ray: interrupted by SIGTERM: the Ray tasks were cancelled; "
        f"{out / 'collect.json'} names what was collected")
