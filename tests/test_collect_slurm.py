"""``nvtopo collect slurm`` without Slurm: the srun command line, the reading of srun's
messages, and whole collections through stand-in ``srun``/``scontrol``/``sinfo``/``squeue``
programs (tests/collect_harness.py) that run the real node-side nvtopo.  The same
collection on a real Slurm is tests/test_collect_slurm_real.py."""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import pytest

import collect_harness as H
from cli_runner import make_runner
from nvtopo import snapshot
from nvtopo.cli import app
from nvtopo.commands.collect import slurm


# --- pieces ---------------------------------------------------------------------------------


def test_srun_argv_for_a_new_job():
    limits = slurm.Limits(timeout=20, node_limit=50, launch_wait=30, batch_size=256)
    argv = slurm.srun_argv(["n1", "n2"], "new", slurm.Selection(partition="gpu"), limits,
                           ["/opt/py", "-m", "nvtopo"])
    assert argv == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
                    "--distribution=arbitrary", "--nodelist=n1,n2", "--kill-on-bad-exit=0",
                    "--no-kill", "--wait=0",
                    "--label", "--job-name=nvtopo-collect", "--time=3", "--immediate=30",
                    "--partition=gpu", "--", "/opt/py", "-m", "nvtopo", "collect",
                    "node-record", "--engine", "slurm", "--timeout", "20", "--limit", "50"]


def test_srun_argv_in_a_job_overlaps():
    argv = slurm.srun_argv(["n1"], "job", slurm.Selection(jobid="42", gpus_per_node=8),
                           slurm.Limits(), ["nvtopo"])
    assert "--jobid=42" in argv and "--overlap" in argv and "--gpus-per-node=8" in argv
    assert not any(a.startswith("--immediate") for a in argv)
    argv = slurm.srun_argv(["n1"], "allocation", slurm.Selection(), slurm.Limits(), ["nvtopo"])
    assert "--overlap" not in argv and not any(a.startswith(("--immediate", "--jobid"))
                                               for a in argv)


def test_srun_s_messages_as_slurm_22_05_prints_them():
    hints = slurm.Hints()
    for line in [
        b"srun: error: n3: task 2: Killed\n",
        b"srun: error: n2: task 1: Exited with exit code 3\n",
        b"srun: error: Task launch for StepId=8.0 failed on node n4: Communication "
        b"connection failure\n",
        b"srun: error: n7: tasks 4-5,9: Terminated\n",
        b"srun: error: Application launch failed: Communication connection failure\n",
        b"  1: nvtopo: error: boom\n",
        b"  1: \x1b[31mred\n",
        b"srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n",
    ]:
        hints.feed(line)
    assert hints.signalled == {"n3": "Killed", "n7": "Terminated"}
    assert hints.exited == {"n2": 3}
    assert hints.launch_failed == {"n4": "Communication connection failure"}
    assert hints.tasks == {2: "n3", 1: "n2", 4: "n7", 5: "n7", 9: "n7"}
    assert list(hints.srun_errors) == [
        "srun: error: Application launch failed: Communication connection failure"]
    assert hints.tail_of("n2", {}) == "nvtopo: error: boom | \\x1b[31mred"
    assert hints.tail_of("n3", {}) == ""


def test_stderr_tails_are_bounded():
    hints = slurm.Hints()
    for i in range(1000):
        hints.feed(f"0: line {i} ".encode() + b"x" * 1000 + b"\n")
    hints.feed(b"srun: error: n1: task 0: Exited with exit code 1\n")
    tail = hints.tail_of("n1", {})
    assert tail.count(" | ") == 2 and "line 999" in tail and len(tail) < 700


@pytest.mark.parametrize("state, ok", [
    ("idle", True), ("mixed", True), ("idle*", False), ("idle~", False), ("down*", False),
    ("drained", False), ("draining", False), ("allocated", False), ("maint", False),
    (None, False)])
def test_launchable_states(state, ok):
    assert slurm.launchable(state) is ok


def test_line_splitter_bounds_a_line():
    lines = slurm._Lines()
    out = lines.feed(b"a" * 10_000)
    out += lines.feed(b"b" * 10_000 + b"\nshort\nrest")
    assert [len(x) for x in out] == [slurm.record.MAX_LINE + 1, 6]
    assert lines.end() == [b"rest"]


# --- whole collections through stand-in Slurm tools -----------------------------------------


@pytest.fixture
def fake(tmp_path, monkeypatch):
    bin_dir = H.fake_slurm_tools(tmp_path / "bin")
    H.fake_nvidia_smi(bin_dir)
    plan = tmp_path / "plan.json"
    command = H.fake_node_command(tmp_path / "node-nvtopo", plan)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    for key in [k for k in os.environ if k.startswith("SLURM")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("FAKE_SLURM_NODES", "n1,n2,n3,n4,n5,n6")
    monkeypatch.setenv("FAKE_SRUN_ARGV", str(tmp_path / "srun-argv.jsonl"))

    class Fake:
        dir = tmp_path
        out = tmp_path / "fleet"

        def plan(self, **what):
            H.write_plan(plan, what)

        def run(self, *args, runner=None):
            return (runner or make_runner()).invoke(
                app, ["collect", "slurm", "-o", str(self.out), "--node-command",
                      str(command), *args])

        def srun_calls(self):
            path = tmp_path / "srun-argv.jsonl"
            return [json.loads(x) for x in path.read_text().splitlines()] \
                if path.exists() else []

        def manifest(self):
            return json.loads((self.out / "collect.json").read_text())

    return Fake()


def _by_node(manifest):
    return {n["node"]: n for n in manifest["nodes"]}


def test_every_node_answers(fake):
    fake.plan()
    res = fake.run("--nodelist", "n[1-3]", "--timeout", "5")
    assert res.exit_code == 0, (res.stdout, res.stderr)
    m = fake.manifest()
    assert m["expected"] == m["answered"] == ["n1", "n2", "n3"]
    assert m["counts"] == {"expected": 3, "answered": 3, "not_answered": 0, "unexpected": 0,
                           "skipped": 0, "mismatched": 0}
    assert m["mismatched"] == [] and m["interrupted"] is None
    nodes = _by_node(m)
    assert nodes["n2"]["engine"] == {"topology_addr": "sw.n2"}
    assert nodes["n2"]["probes"]["topo-text"] == "ok"
    assert res.stdout.strip().splitlines()[-1] == f"collected 3 of 3 node(s) into {fake.out}"
    # one step, all three nodes in it
    calls = fake.srun_calls()
    assert len(calls) == 1 and "--nodelist=n1,n2,n3" in calls[0]
    # each file is the node's snapshot: gzip, sealed, and check reads it (DGX H100 via the
    # fake nvidia-smi)
    for node in ("n1", "n2", "n3"):
        path = fake.out / f"{node}.json.gz"
        assert path.read_bytes()[:2] == b"\x1f\x8b"
        assert nodes[node]["bytes"] == path.stat().st_size
        opened = snapshot.open_input(snapshot.Input(path=str(path)))
        assert opened.cached is True and opened.model.matrix is not None
        assert len(opened.model.gpus) == 8
        # (exit 1 is this test machine's own sysfs: no GPUDirect RDMA module is loaded)
        res = make_runner().invoke(app, ["check", "--from", str(path), "--format", "json"])
        assert res.exit_code in (0, 1) and json.loads(res.stdout)["layout"] == "dgx-h100"


def test_each_failure_has_its_reason(fake):
    fake.plan(n2="hang", n3="fail", n4="garbage", n6="nothing")
    os.environ["FAKE_SLURM_LAUNCH_FAIL"] = "n5"
    try:
        started = time.monotonic()
        res = fake.run("--nodelist", "n[1-6]", "--timeout", "3", "--node-limit", "4",
                       "--launch-wait", "2")
        took = time.monotonic() - started
    finally:
        del os.environ["FAKE_SLURM_LAUNCH_FAIL"]
    assert res.exit_code == 1, (res.stdout, res.stderr)
    assert took < 4 + 2 + 15, took  # the deadline, then srun's clean-up: never a hang
    m = fake.manifest()
    nodes = _by_node(m)
    assert m["answered"] == ["n1"]
    assert {n: v["status"] for n, v in nodes.items()} == {
        "n1": "answered", "n2": "timeout", "n3": "exited", "n4": "bad-record",
        "n5": "launch-failed", "n6": "no-record"}
    assert nodes["n2"]["reason"].startswith(
        "no record within 4 s (+2 s to start); the step was ended")
    assert nodes["n3"]["reason"] == ("exited with 3: nvtopo: error: simulated failure on n3 "
                                     "| second line")
    assert nodes["n4"]["reason"] == ("bad record: checksum mismatch: the bytes are not those "
                                     "the node sent")
    assert nodes["n5"]["reason"] == ("srun could not start the task on the node: "
                                     "Communication connection failure")
    assert nodes["n6"]["reason"] == "no record, and srun said nothing about the node"
    assert sorted(p.name for p in fake.out.iterdir()) == ["collect.json", "n1.json.gz"]
    lines = res.stdout.strip().splitlines()
    assert lines[-1] == f"collected 1 of 6 node(s) into {fake.out}"
    assert any(line.startswith("n2  timeout  no record within 4 s") for line in lines)
    assert not H.processes_mentioning(str(fake.dir)), "a task outlived the collection"


def test_a_step_aborted_by_a_launch_failure_is_run_again_without_that_node(fake, monkeypatch):
    """Slurm 22.05's srun aborts the whole step when one node cannot launch its task,
    killing the others: they run again in a step of their own."""
    monkeypatch.setenv("FAKE_SLURM_LAUNCH_FAIL", "n3")
    monkeypatch.setenv("FAKE_SLURM_ABORT", "1")
    # n1 answers before the abort (it took 0.5 s, and a loaded machine starts nvtopo slower)
    monkeypatch.setenv("FAKE_SLURM_ABORT_AFTER", "n1")
    fake.plan(n2="slow", n4="hang")
    res = fake.run("--nodelist", "n[1-4]", "--timeout", "5", "--node-limit", "5",
                   "--launch-wait", "2")
    assert res.exit_code == 1
    nodes = _by_node(fake.manifest())
    assert {n: v["status"] for n, v in nodes.items()} == {
        "n1": "answered", "n2": "answered", "n3": "launch-failed", "n4": "timeout"}
    lists = [next(a for a in c if a.startswith("--nodelist=")) for c in fake.srun_calls()]
    assert lists == ["--nodelist=n1,n2,n3,n4", "--nodelist=n2,n4"]
    assert fake.manifest()["selection"]["steps"] == 2


def test_a_node_whose_nvtopo_fails_says_why(fake):
    """The node-side nvtopo's own FAIL line is the reason, escaped, not srun's exit code."""
    fake.plan(n2="failline")
    res = fake.run("--nodelist", "n[1-2]", "--timeout", "5")
    assert res.exit_code == 1
    node = _by_node(fake.manifest())["n2"]
    assert node == {"node": "n2", "status": "failed",
                    "reason": "could not take the snapshot: \\x1b[31mdisk full"}
    assert "\x1b" not in res.stdout


def test_nodes_slurm_reports_unusable_are_not_started(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SLURM_STATES", json.dumps(
        {"n2": "down*", "n3": "drained", "n4": "allocated", "n5": "mixed"}))
    fake.plan()
    res = fake.run("--partition", "test", "--timeout", "5")
    assert res.exit_code == 1
    nodes = _by_node(fake.manifest())
    assert [n for n, v in nodes.items() if v["status"] == "answered"] == ["n1", "n5", "n6"]
    assert nodes["n2"]["reason"] == "Slurm reports the node down*"
    assert nodes["n3"]["reason"] == "Slurm reports the node drained"
    assert nodes["n4"]["reason"].startswith("Slurm reports the node allocated: busy with "
                                            "other jobs")
    (call,) = fake.srun_calls()
    assert "--nodelist=n1,n5,n6" in call and "--partition=test" in call


def test_batches(fake):
    fake.plan()
    res = fake.run("--nodelist", "n[1-5]", "--batch-size", "2", "--timeout", "5")
    assert res.exit_code == 0, res.stdout
    lists = [next(a for a in c if a.startswith("--nodelist=")) for c in fake.srun_calls()]
    assert lists == ["--nodelist=n1,n2", "--nodelist=n3,n4", "--nodelist=n5"]
    assert fake.manifest()["selection"]["steps"] == 3


def test_inside_an_allocation(fake, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[2-3]")
    fake.plan()
    res = fake.run("--timeout", "5")
    assert res.exit_code == 0, res.stdout
    m = fake.manifest()
    assert m["expected"] == ["n2", "n3"]
    assert m["selection"] == {"nodelist": None, "partition": None, "jobid": None,
                              "allocation": "77", "mode": "allocation", "steps": 1}
    (call,) = fake.srun_calls()
    assert not any(a.startswith(("--immediate", "--jobid")) for a in call)
    # --partition means a new job: refused inside one
    res = fake.run("--partition", "test")
    assert res.exit_code == 2 and "inside an allocation" in res.stderr


def test_in_a_running_job(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SLURM_JOB_NODES", "n[4-5]")
    fake.plan()
    res = fake.run("--jobid", "4242", "--overlap", "--timeout", "5")
    assert res.exit_code == 0, res.stdout
    assert fake.manifest()["expected"] == ["n4", "n5"]
    (call,) = fake.srun_calls()
    assert "--jobid=4242" in call and "--overlap" in call
    res = fake.run("--jobid", "42;rm -rf /")
    assert res.exit_code == 2 and "is not a Slurm job id" in res.stderr


def test_srun_that_cannot_get_the_nodes(fake, monkeypatch):
    monkeypatch.setenv("FAKE_SLURM_ALLOC_FAIL", "1")
    res = fake.run("--nodelist", "n[1-2]")
    assert res.exit_code == 1
    for node in _by_node(fake.manifest()).values():
        assert node["status"] == "not-launched"
        assert node["reason"] == ("srun: error: Unable to allocate resources: Requested "
                                  "nodes are busy")


def test_an_earlier_answer_does_not_pass_for_this_one(fake):
    fake.out.mkdir()
    stale = fake.out / "n2.json.gz"
    stale.write_bytes(gzip.compress(b"{}"))
    keep = fake.out / "notes.txt"
    keep.write_text("mine")
    fake.plan(n2="fail")
    res = fake.run("--nodelist", "n[1-2]", "--timeout", "5")
    assert res.exit_code == 1
    assert not stale.exists() and keep.read_text() == "mine"


@pytest.mark.parametrize("args, env, message", [
    (["--nodelist", "n1"], {"PATH": "/nonexistent"}, "srun not found on PATH"),
    ([], {}, "not inside a Slurm allocation (no SLURM_JOB_ID): give --nodelist, "
             "--partition or --jobid"),
    (["--nodelist", "n9"], {}, "n9 not among"),
])
def test_could_not_run(fake, monkeypatch, args, env, message):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    if args[:2] == ["--nodelist", "n9"]:
        args = ["--partition", "test", *args]
    res = fake.run(*args)
    assert res.exit_code == 2, res.stdout
    assert res.stderr.startswith("nvtopo: error: ") and message in res.stderr
    assert res.stderr.count("\n") == 1
    assert not (fake.out / "collect.json").exists()


def test_a_bad_output_directory(fake, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out, message in ((afile, "exists and is not a directory"),
                         (tmp_path / "no" / "such", "does not exist")):
        res = make_runner().invoke(app, ["collect", "slurm", "-o", str(out), "--nodelist",
                                         "n1"])
        assert res.exit_code == 2 and message in res.stderr, res.stderr
    res = make_runner().invoke(app, ["collect", "slurm", "--nodelist", "n1"])
    assert res.exit_code == 2 and "-o DIR" in res.stderr


def test_limits_are_numbers_of_seconds(fake):
    for opt in ("--timeout", "--node-limit", "--launch-wait"):
        res = fake.run("--nodelist", "n1", opt, "nan")
        assert res.exit_code == 2 and f"{opt}: 'nan' is not a number of seconds" in res.stderr


def test_node_record_refuses_a_node_name_it_cannot_use(monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "../etc")
    res = make_runner().invoke(app, ["collect", "node-record"])
    assert res.exit_code == 2 and "is not a node name nvtopo can use" in res.stderr
    monkeypatch.delenv("SLURMD_NODENAME")
    res = make_runner().invoke(app, ["collect", "node-record"])
    assert res.exit_code == 2 and "SLURMD_NODENAME is not set" in res.stderr


# --- a record speaks only for the node that sent it (issue 21) -------------------------------


@pytest.mark.parametrize("other", ["n2", "n9"])
def test_a_record_naming_another_node_is_refused_and_named(fake, other):
    """n1's task sends a record naming another node before its own: before, the forged
    record was kept as n2's and n2's own dropped as a repeat ("collected 2 of 2", exit 0).
    srun's task label, not the name in the record, says who sent it."""
    fake.plan(n1=f"forge:{other}", n2="slow")  # n2's own record comes after the forged one
    res = fake.run("--nodelist", "n[1-2]", "--timeout", "5")
    assert res.exit_code == 1, (res.stdout, res.stderr)
    m = fake.manifest()
    nodes = _by_node(m)
    # n2's own record is kept: its engine facts are its own task's, not the forger's
    assert nodes["n2"]["status"] == "answered"
    assert nodes["n2"]["engine"] == {"topology_addr": "sw.n2"}
    # the sender's own answer is refused with it: it spoke for a node it is not
    assert nodes["n1"]["status"] == "mismatch"
    assert nodes["n1"]["reason"] == (f"srun task 0 sent a record naming {other}: a node's "
                                     "records may name only that node, so none of its own "
                                     "is kept either")
    assert m["mismatched"] == [{"node": other, "sender": "n1", "task": 0,
                                "reason": f"srun task 0 runs on n1, not on {other}"}]
    assert m["counts"]["mismatched"] == 1 and m["unexpected"] == []
    assert m["answered"] == ["n2"]
    assert sorted(p.name for p in fake.out.iterdir()) == ["collect.json", "n2.json.gz"]
    assert "forged" not in json.dumps(m)
    lines = res.stdout.strip().splitlines()
    assert f"{other}  mismatch  srun task 0 runs on n1, not on {other}" in lines
    assert lines[-1] == f"collected 1 of 2 node(s) into {fake.out}"


def test_a_forger_s_own_answer_is_taken_back_when_its_forgery_comes_after(tmp_path):
    """The sender's own record first (verified, written), then one naming another node:
    its answer, its file and the facts its record gave are withdrawn."""
    from nvtopo.commands.collect import collector, record

    payload = (Path(slurm.__file__).parents[2] / "examples"
               / "dgx-h100-healthy.json.gz").read_bytes()
    coll = collector.Collection(str(tmp_path), "slurm", ["n1", "n2"])
    reader = coll.reader(["n1", "n2"], labelled=True, senders={0: "n1", 1: "n2"},
                         describe=lambda task: f"srun task {task}")
    for line in record.encode("n1", payload, {"topology_addr": "sw.n1"}):
        reader.feed(b"0: " + line)
    assert coll.answered("n1") and (tmp_path / "n1.json.gz").exists()
    for line in record.encode("n2", payload, {"topology_addr": "fake"}):
        reader.feed(b"0: " + line)
    for line in record.encode("n2", payload, {"topology_addr": "sw.n2"}):
        reader.feed(b"1: " + line)
    reader.close()
    m = coll.finish({"mode": "new"}, {"timeout_s": 1, "node_limit_s": 1, "launch_wait_s": 1})
    nodes = _by_node(m)
    assert nodes["n1"]["status"] == "mismatch" and "engine" not in nodes["n1"]
    assert nodes["n2"]["status"] == "answered"
    assert nodes["n2"]["engine"] == {"topology_addr": "sw.n2"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["collect.json", "n2.json.gz"]
    assert collector.exit_status(m) == 1


def test_tasks_are_bound_to_nodes_in_the_order_asked(fake):
    """Slurm numbers tasks in its own node order unless the distribution is arbitrary: the
    collector asks for that, so task i is the i-th node it listed."""
    fake.plan()
    res = fake.run("--nodelist", "n3,n1,n2", "--timeout", "5")
    assert res.exit_code == 0, (res.stdout, res.stderr)
    m = fake.manifest()
    assert m["answered"] == ["n3", "n1", "n2"] and m["mismatched"] == []
    (call,) = fake.srun_calls()
    assert "--distribution=arbitrary" in call and "--nodelist=n3,n1,n2" in call


def test_a_long_node_list_reaches_srun_in_a_file(fake, monkeypatch):
    monkeypatch.setattr(slurm, "NODELIST_ARG_BYTES", 7)
    fake.plan()
    res = fake.run("--nodelist", "n3,n1,n2", "--timeout", "5")
    assert res.exit_code == 0, (res.stdout, res.stderr)
    assert fake.manifest()["answered"] == ["n3", "n1", "n2"]
    (call,) = fake.srun_calls()
    (arg,) = [a for a in call if a.startswith("--nodelist=")]
    assert "/" in arg and "--distribution=arbitrary" in call
    assert not Path(arg.split("=", 1)[1]).exists()  # removed with its directory


def test_node_lists_are_cut_into_arguments_that_fit():
    names = [f"gpu-node-{i:05d}" for i in range(10_000)]
    chunks = list(slurm.chunks(names))
    assert [n for c in chunks for n in c] == names
    assert all(len(",".join(c)) <= slurm.NODELIST_ARG_BYTES for c in chunks)
    assert len(chunks) > 1
    assert list(slurm.chunks(["a" * 200_000])) == [["a" * 200_000]]  # one name: as it is


def test_a_partition_of_ten_thousand_nodes_is_asked_of_sinfo_in_pieces(fake, monkeypatch):
    """Every node name in one ``sinfo -n`` argument: 10,000 names of 14 characters are over
    the kernel's bound for one argument ("Argument list too long", nothing collected)."""
    names = [f"gpu-node-{i:05d}" for i in range(10_000)]
    listed = fake.dir / "nodes.txt"
    listed.write_text("\n".join(names))
    monkeypatch.delenv("FAKE_SLURM_NODES")
    monkeypatch.setenv("FAKE_SLURM_NODES_FILE", str(listed))
    monkeypatch.setenv("FAKE_SLURM_STATE", "down*")  # none is started: no 10,000 tasks here
    monkeypatch.setenv("FAKE_SINFO_ARGV", str(fake.dir / "sinfo-argv.jsonl"))
    res = fake.run("--partition", "big")
    assert res.exit_code == 1, res.stderr
    m = fake.manifest()
    assert m["expected"] == names
    assert {n["status"] for n in m["nodes"]} == {"not-launched"}
    assert m["nodes"][-1]["reason"] == "Slurm reports the node down*"
    calls = [json.loads(x) for x in (fake.dir / "sinfo-argv.jsonl").read_text().splitlines()]
    asked = [c[c.index("-n") + 1] for c in calls if "-n" in c]
    assert len(asked) > 1 and ",".join(asked).split(",") == names
    assert max(len(a) for a in asked) <= slurm.NODELIST_ARG_BYTES


# --- signals and the deadline (issue 21) ------------------------------------------------------


def _collector(fake, *args):
    """The collector as a user runs it: its own process (real signals reach it)."""
    import subprocess
    import sys

    command = fake.dir / "node-nvtopo"
    return subprocess.Popen([sys.executable, "-m", "nvtopo", "collect", "slurm", "-o",
                             str(fake.out), "--node-command", str(command), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=str(fake.dir))


def _kill_leftovers(fake):
    import signal as sig

    for pid in H.processes_mentioning(str(fake.dir)):
        try:
            os.kill(pid, sig.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_ends_srun_and_leaves_the_manifest_of_what_came(fake, signame):
    """Before: SIGTERM or SIGHUP killed the collector at once, srun and its tasks ran on,
    and no manifest was written; Ctrl-C wrote none either."""
    import signal as sig

    signum = getattr(sig, signame)
    fake.plan(n2="die")  # n2 hangs (and says it started); n1 answers
    proc = _collector(fake, "--nodelist", "n[1-2]", "--timeout", "5", "--node-limit", "120")
    try:
        H._wait_for(lambda: (fake.out / "n1.json.gz").exists()
                    and (fake.dir / "plan.json.n2.started").exists(), 60, "n1's answer")
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)  # srun has 10 s to end its step
        assert proc.returncode == 128 + signum, err
        m = fake.manifest()
        nodes = _by_node(m)
        assert m["interrupted"] == signame
        assert nodes["n1"]["status"] == "answered"
        assert nodes["n2"] == {"node": "n2", "status": "interrupted",
                               "reason": f"the collection was interrupted ({signame}) before "
                                         "the node answered"}
        assert (fake.out / "n1.json.gz").exists()
        assert err.decode().splitlines()[-1] == (
            f"nvtopo: error: collect slurm: interrupted by {signame}: srun was ended; "
            f"{fake.out / 'collect.json'} names what was collected")
        H._wait_for(lambda: not H.processes_mentioning(str(fake.dir)), 10,
                    "srun and its tasks to be gone")
        assert not [p.name for p in fake.out.iterdir() if p.name.endswith(".tmp")]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _kill_leftovers(fake)


def test_the_deadline_ends_srun_s_whole_process_group(fake, tmp_path, monkeypatch):
    """A site's ``srun`` is often a wrapper script that runs the real one as its child: at
    the deadline the whole group is signalled, or the real srun and its step run on."""
    real = fake.dir / "bin" / "srun"
    wrapped = tmp_path / "site-bin"
    wrapped.mkdir()
    H._script(wrapped / "srun", f"""
        import subprocess, sys
        sys.exit(subprocess.call([{str(real)!r}] + sys.argv[1:]))
        """)
    monkeypatch.setenv("PATH", f"{wrapped}{os.pathsep}{os.environ['PATH']}")
    fake.plan(n1="hang")
    try:
        started = time.monotonic()
        res = fake.run("--nodelist", "n[1-2]", "--timeout", "3", "--node-limit", "2",
                       "--launch-wait", "1")
        took = time.monotonic() - started
        assert res.exit_code == 1, (res.stdout, res.stderr)
        nodes = _by_node(fake.manifest())
        assert nodes["n1"]["status"] == "timeout" and nodes["n2"]["status"] == "answered"
        H._wait_for(lambda: not H.processes_mentioning(str(fake.dir)), 10,
                    "srun and its tasks to be gone")
        assert took < 2 + 1 + 15, took
    finally:
        _kill_leftovers(fake)


def test_the_default_node_command_ignores_an_nvtopo_directory_where_it_starts(tmp_path):
    """srun and Ray start the node's command in the submitting directory: a checkout of
    nvtopo's source there (or any ``nvtopo/``) shadowed ``python -m nvtopo``, and every node
    failed with an ImportError.  The default runs the installed entry point."""
    import subprocess

    from nvtopo.commands.collect.slurm import default_node_command

    fake = tmp_path / "nvtopo"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('the wrong nvtopo')\n")
    (fake / "__main__.py").write_text("raise SystemExit('the wrong nvtopo')\n")
    run = [*default_node_command(), "layouts", "--help"]
    done = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "wrong nvtopo" not in done.stderr and "Usage: nvtopo layouts" in done.stdout
    shadowed = subprocess.run([run[0], "-m", "nvtopo", "layouts", "--help"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
    assert shadowed.returncode != 0 and "wrong nvtopo" in shadowed.stderr  # what it fixes
