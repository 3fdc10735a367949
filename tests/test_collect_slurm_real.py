"""``nvtopo collect slurm`` on a real Slurm: munged, slurmctld and five ``slurmd -N nX`` on
this host (tests/collect_harness.py), the collector run as a user runs it (``python -m
nvtopo``), one node hung, one failing, one dead, one whose nvidia-smi hangs.

Skipped, saying why, where Slurm is not installed or this is not root (the README's test
command runs anywhere); ``NVTOPO_REQUIRE_ENGINES=slurm`` (CI, after installing Slurm) makes
that a failure.  Every test is bounded in time, and every daemon and task it started is
gone when it ends (checked)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import collect_harness as H
from nvtopo import snapshot


@pytest.fixture
def cluster(tmp_path):
    why = H.slurm_missing()
    if why:
        H.skip_or_fail("slurm", why)
    base = tmp_path / "slurm"
    base.mkdir()
    c = H.SlurmCluster(base)
    try:
        c.start()
    except Exception:
        c.stop()
        raise
    yield c
    pids = c.pids()
    c.stop()
    alive = [p for p in pids if Path(f"/proc/{p}").exists()
             and Path(f"/proc/{p}/stat").read_text().split()[2] != "Z"]
    assert not alive, f"daemons left running: {alive}"
    left = H.processes_mentioning(str(tmp_path))
    assert not left, f"processes left behind: {left}"


def _collect(cluster, tmp_path, args, plan=None, hang_smi=(), timeout=120, prefix=()):
    bin_dir = H.fake_nvidia_smi(tmp_path / "bin", hang_on=hang_smi).parent
    plan_file = H.write_plan(tmp_path / "plan.json", plan or {})
    command = H.fake_node_command(tmp_path / "node-nvtopo", plan_file)
    env = dict(cluster.env, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "fleet"
    argv = [*prefix, sys.executable, "-m", "nvtopo", "collect", "slurm", "-o", str(out),
            "--node-command", str(command), *args]
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=str(tmp_path))
    took = time.monotonic() - started
    manifest = json.loads((out / "collect.json").read_text()) \
        if (out / "collect.json").exists() else None
    return done, manifest, out, took


def _validate(manifest):
    import schema_check

    schema_check.validate(manifest, "collect")


def test_hung_failing_and_dead_nodes_are_named(cluster, tmp_path):
    cluster.kill_node("n4")
    done, m, out, took = _collect(
        cluster, tmp_path, ["--nodelist", "n[1-5]", "--timeout", "3", "--node-limit", "8",
                            "--launch-wait", "10"],
        plan={"n2": "hang", "n3": "fail"}, hang_smi=("n5",))
    assert done.returncode == 1, done.stderr
    assert took < 8 + 10 + 30, took
    # the hung node's task is ended with its step, not left running on the node
    H._wait_for(lambda: not H.processes_mentioning(str(tmp_path / "node-nvtopo")), 15,
                "the hung task to end")
    _validate(m)
    nodes = {n["node"]: n for n in m["nodes"]}
    assert {n: v["status"] for n, v in nodes.items()} == {
        "n1": "answered", "n2": "timeout", "n3": "exited", "n4": "launch-failed",
        "n5": "answered"}
    assert m["answered"] == ["n1", "n5"]
    assert nodes["n2"]["reason"].startswith("no record within 8 s (+10 s to start); the "
                                            "step was ended")
    assert nodes["n3"]["reason"] == ("exited with 3: nvtopo: error: simulated failure on n3 "
                                     "| second line")
    assert nodes["n4"]["reason"].startswith("srun could not start the task on the node: ")
    # n5's nvidia-smi hung: the node answered, and its snapshot says the probe timed out
    assert nodes["n5"]["probes"]["topo-text"] == "timeout"
    assert nodes["n1"]["probes"]["topo-text"] == "ok"
    assert sorted(p.name for p in out.iterdir()) == ["collect.json", "n1.json.gz",
                                                     "n5.json.gz"]
    # the answers load: n1's is a DGX H100 (the fake nvidia-smi's matrix), through check
    check = subprocess.run([sys.executable, "-m", "nvtopo", "check", "--from",
                            str(out / "n1.json.gz"), "--format", "json"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode in (0, 1), check.stderr
    assert json.loads(check.stdout)["layout"] == "dgx-h100"
    opened = snapshot.open_input(snapshot.Input(path=str(out / "n1.json.gz")))
    assert opened.cached is True and len(opened.model.gpus) == 8
    assert "collected 2 of 5 node(s)" in done.stdout


def test_inside_an_allocation_every_node_answers(cluster, tmp_path):
    """``salloc -N3 nvtopo collect slurm -o DIR``: the allocation's nodes, exit 0."""
    done, m, out, took = _collect(cluster, tmp_path, ["--timeout", "5"],
                                  prefix=("salloc", "-N3", "--immediate=20"))
    assert done.returncode == 0, (done.stdout, done.stderr)
    _validate(m)
    assert m["selection"]["mode"] == "allocation" and len(m["expected"]) == 3
    assert m["answered"] == m["expected"]
    for node in m["expected"]:
        assert (out / f"{node}.json.gz").exists()
    assert took < 60, took


def test_in_a_running_job_with_overlap(cluster, tmp_path):
    """``--jobid J --overlap`` runs inside a job whose own step holds every CPU."""
    job = subprocess.run(["sbatch", "-N2", "--exclusive", "--parsable",
                          f"--output={tmp_path / 'job.out'}", "--wrap", "sleep 120"],
                         env=cluster.env, capture_output=True, text=True, timeout=30)
    assert job.returncode == 0, job.stderr
    jobid = job.stdout.strip().split(";")[0]
    try:
        H._wait_for(lambda: subprocess.run(
            ["squeue", "-h", "-j", jobid, "-o", "%T"], env=cluster.env, capture_output=True,
            text=True, timeout=10).stdout.strip() == "RUNNING", 30, "the job running")
        done, m, out, _ = _collect(cluster, tmp_path, ["--jobid", jobid, "--overlap",
                                                       "--timeout", "5"])
        assert done.returncode == 0, (done.stdout, done.stderr)
        _validate(m)
        assert m["selection"]["mode"] == "job" and m["selection"]["jobid"] == jobid
        assert len(m["answered"]) == 2
    finally:
        subprocess.run(["scancel", jobid], env=cluster.env, capture_output=True, timeout=30)


def test_a_record_speaks_only_for_the_node_slurm_ran_its_task_on(cluster, tmp_path):
    """Nodes asked out of Slurm's order (which Slurm would follow for task numbers without
    --distribution=arbitrary), one of them sending a record that names another node before
    that node's own: the forged record is refused and named, the genuine one kept, and
    the exit status is 1 (before: kept, the genuine one dropped, exit 0).  A list long
    enough to go in a file reaches srun the same way (tests/test_collect_slurm.py)."""
    done, m, out, _ = _collect(cluster, tmp_path, ["--nodelist", "n3,n1,n2", "--timeout", "5"],
                               plan={"n3": "forge:n1", "n1": "slow"})
    assert done.returncode == 1, (done.stdout, done.stderr)
    _validate(m)
    nodes = {n["node"]: n for n in m["nodes"]}
    assert {n: v["status"] for n, v in nodes.items()} == {
        "n3": "mismatch", "n1": "answered", "n2": "answered"}
    assert m["mismatched"] == [{"node": "n1", "sender": "n3", "task": 0,
                                "reason": "srun task 0 runs on n3, not on n1"}]
    assert "forged" not in json.dumps(m)
    assert sorted(p.name for p in out.iterdir()) == ["collect.json", "n1.json.gz",
                                                     "n2.json.gz"]


def test_sigterm_ends_the_step_and_leaves_the_manifest(cluster, tmp_path):
    """SIGTERM to the collector while a node hangs: srun's step is ended on every node
    (no task left running), the manifest names what came, exit status 143."""
    import signal

    bin_dir = H.fake_nvidia_smi(tmp_path / "bin").parent
    plan = H.write_plan(tmp_path / "plan.json", {"n2": "die"})
    command = H.fake_node_command(tmp_path / "node-nvtopo", plan)
    out = tmp_path / "fleet"
    proc = subprocess.Popen([sys.executable, "-m", "nvtopo", "collect", "slurm", "-o", str(out),
                             "--node-command", str(command), "--nodelist", "n[1-2]",
                             "--timeout", "5", "--node-limit", "120"],
                            env=dict(cluster.env, PATH=f"{bin_dir}{os.pathsep}"
                                     f"{os.environ['PATH']}"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path))
    try:
        H._wait_for(lambda: (out / "n1.json.gz").exists()
                    and Path(f"{plan}.n2.started").exists(), 60, "n1's answer, n2 started")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, err
    m = json.loads((out / "collect.json").read_text())
    _validate(m)
    assert m["interrupted"] == "SIGTERM"
    assert {n["node"]: n["status"] for n in m["nodes"]} == {"n1": "answered",
                                                           "n2": "interrupted"}
    H._wait_for(lambda: not H.processes_mentioning(str(command)), 15,
                "the hung task to end with its step")


def test_the_harness_leaves_nothing_running(tmp_path):
    """The clean-up the fixture checks, checked itself: a cluster started and stopped."""
    why = H.slurm_missing()
    if why:
        H.skip_or_fail("slurm", why)
    (tmp_path / "s").mkdir()
    c = H.SlurmCluster(tmp_path / "s", nodes=("n1",)).start()
    pids = c.pids()
    assert all(Path(f"/proc/{p}").exists() for p in pids)
    c.stop()
    assert not H.processes_mentioning(str(tmp_path))


def test_the_default_node_command_runs_from_a_directory_with_an_nvtopo_package(
        cluster, tmp_path):
    """No --node-command: the nodes run this Python and nvtopo's entry point, in the
    submitting directory, where a broken ``nvtopo/`` package lies (a checkout of the source;
    ``python -m nvtopo`` imported it and every node failed with an ImportError)."""
    bin_dir = H.fake_nvidia_smi(tmp_path / "bin").parent
    fake = tmp_path / "nvtopo"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('the wrong nvtopo')\n")
    env = dict(cluster.env, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "fleet"
    done = subprocess.run([sys.executable, "-c",  # the collector itself, as the script runs it
                           "import sys; sys.path.pop(0); from nvtopo.cli import run; run()",
                           "collect", "slurm", "-o", str(out), "--nodelist", "n[1-2]"],
                          env=env, capture_output=True, text=True, timeout=120,
                          cwd=str(tmp_path))
    manifest = json.loads((out / "collect.json").read_text())
    status = {n["node"]: n["status"] for n in manifest["nodes"]}
    assert status == {"n1": "answered", "n2": "answered"}, (done.stderr, manifest)
    assert "wrong nvtopo" not in json.dumps(manifest)
