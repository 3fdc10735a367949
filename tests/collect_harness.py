"""What the collection tests (tests/test_collect_*.py) and benchmarks/bench_collect.py share:
fake programs, a real single-host Slurm and a real local Ray cluster.

* :func:`fake_node_command`: a stand-in for the node-side nvtopo that misbehaves as a plan
  file says, per node (hang, fail, send garbage), and otherwise runs the real one;
* :func:`fake_nvidia_smi`: an ``nvidia-smi`` printing the bundled DGX H100 ``topo -m``, so
  the real node-side probes find eight GPUs;
* :func:`fake_slurm_tools`: ``srun``, ``scontrol``, ``sinfo``, ``squeue`` in Python, enough
  of them to test the collector's mapping of srun's messages without Slurm;
* :class:`SlurmCluster`: munged, slurmctld and one ``slurmd -N nX`` per node on this host,
  from a generated slurm.conf in a temporary directory (Debian's slurmctld, slurmd,
  slurm-client and munge packages; root);
* :func:`engines_required`: ``NVTOPO_REQUIRE_ENGINES`` (``slurm``, ``ray``, or both,
  comma-separated) turns an integration test's skip into a failure (CI, after it installed
  the engines).

See docs/collect.md §7.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_TOPO = ROOT / "nvtopo" / "examples" / "dgx-h100.txt"


def engines_required(engine: str) -> bool:
    wanted = os.environ.get("NVTOPO_REQUIRE_ENGINES", "")
    return engine in {w.strip() for w in wanted.split(",")}


def skip_or_fail(engine: str, why: str) -> None:
    import pytest

    if engines_required(engine):
        pytest.fail(f"NVTOPO_REQUIRE_ENGINES names {engine}, but: {why}")
    pytest.skip(why)


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body), encoding="utf-8")
    path.chmod(0o755)
    return path


# --- fakes ---------------------------------------------------------------------------------


def fake_nvidia_smi(bin_dir: Path, hang_on: Sequence[str] = ()) -> Path:
    """``bin_dir/nvidia-smi``: ``topo -m`` prints the bundled DGX H100 matrix; on the
    Slurm nodes named in ``hang_on`` it hangs (a GPU driver stuck)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    return _script(bin_dir / "nvidia-smi", f"""
        import os, sys, time
        if os.environ.get("SLURMD_NODENAME") in {list(hang_on)!r}:
            time.sleep(3600)
        if sys.argv[1:3] == ["topo", "-m"]:
            sys.stdout.write(open({str(EXAMPLE_TOPO)!r}, encoding="utf-8").read())
            sys.exit(0)
        sys.stderr.write("fake nvidia-smi: only topo -m\\n")
        sys.exit(4)
        """)


def fake_node_command(path: Path, plan: Path) -> Path:
    """A node-side command that reads ``plan`` (JSON: node -> behaviour) and, for its node
    (``SLURMD_NODENAME``, or the value of ``--node``), does one of: ``ok`` (runs the real
    ``python -m nvtopo`` with the same arguments), ``hang``, ``fail`` (a message on
    standard error, exit 3), ``garbage`` (a record whose checksum is wrong), ``nothing``
    (exit 0 silently), ``slow`` (2 s, then
    the real one), ``failline`` (the line nvtopo sends when it cannot take a snapshot,
    exit 1), ``die`` (touches ``<plan>.<node>.started``, then hangs: a test ends
    the node under it), ``forge:<other>`` (first a real record that names node
    ``<other>``, taken with ``SLURM_TOPOLOGY_ADDR=forged-by-<node>``, then its own)."""
    return _script(path, f"""
        import json, os, sys, time
        args = sys.argv[1:]
        node = os.environ.get("SLURMD_NODENAME") or ""
        if "--node" in args:
            node = args[args.index("--node") + 1]
        try:
            plan = json.load(open({str(plan)!r}))
        except OSError:
            plan = {{}}
        what = plan.get(node, "ok")
        if what.startswith("forge:"):
            import subprocess
            other = what.split(":", 1)[1]
            forged = list(args)
            if "--node" in forged:
                forged[forged.index("--node") + 1] = other
            sys.stdout.flush()
            subprocess.run([{sys.executable!r}, "-m", "nvtopo"] + forged,
                           env=dict(os.environ, SLURMD_NODENAME=other,
                                    SLURM_TOPOLOGY_ADDR="forged-by-" + node))
            os.execv({sys.executable!r}, [{sys.executable!r}, "-m", "nvtopo"] + args)
        if what == "hang":
            time.sleep(3600)
        elif what == "die":
            open({str(plan)!r} + "." + node + ".started", "w").close()
            time.sleep(3600)
        elif what == "fail":
            sys.stderr.write("nvtopo: error: simulated failure on " + node + "\\n")
            sys.stderr.write("second line\\n")
            sys.exit(3)
        elif what == "garbage":
            sys.stdout.write("NVTOPO-RECORD/1 HEAD " + node + " 3 " + "0" * 64 + " -\\n")
            sys.stdout.write("NVTOPO-RECORD/1 DATA " + node + " YWJj\\n")
            sys.stdout.write("NVTOPO-RECORD/1 END " + node + "\\n")
            sys.exit(0)
        elif what == "nothing":
            sys.exit(0)
        elif what == "slow":
            time.sleep(2)
            os.execv({sys.executable!r}, [{sys.executable!r}, "-m", "nvtopo"] + args)
        elif what == "failline":
            sys.stdout.write("NVTOPO-RECORD/1 FAIL " + node + " could not take the snapshot: "
                             "\\x1b[31mdisk full\\n")
            sys.exit(1)
        else:
            os.execv({sys.executable!r}, [{sys.executable!r}, "-m", "nvtopo"] + args)
        """)


def fake_slurm_tools(bin_dir: Path) -> Path:
    """``srun``, ``scontrol``, ``sinfo`` and ``squeue`` stand-ins.  The cluster: env
    ``FAKE_SLURM_NODES`` (comma-separated; or ``FAKE_SLURM_NODES_FILE``, a file of them, for
    clusters whose list is longer than one environment string may be), in Slurm's node
    order, ``FAKE_SLURM_STATES`` (JSON node -> state, default ``FAKE_SLURM_STATE`` or
    idle), ``FAKE_SLURM_LAUNCH_FAIL`` (comma-separated nodes whose launch fails),
    ``FAKE_SLURM_ALLOC_FAIL`` (srun cannot get resources), ``FAKE_SLURM_ABORT`` (a launch
    failure aborts the step, as real srun does; ``FAKE_SLURM_ABORT_AFTER`` names nodes whose
    tasks end before the abort); ``FAKE_SRUN_ARGV`` names a file
    each srun appends its argv to (one JSON line), ``FAKE_SINFO_ARGV`` the same for sinfo.
    srun runs the command once per node, at the same time, with ``SLURMD_NODENAME``,
    labels every line with the task number and reports failures the way Slurm 22.05's srun
    does; SIGTERM ends the tasks.  As Slurm 22.05 does (seen on the test Slurm), tasks are
    numbered in Slurm's node order, whatever the order of ``--nodelist``, except with
    ``--distribution=arbitrary``: then task i runs on the i-th node listed; a
    ``--nodelist`` holding a ``/`` names a file of nodes (one a line, or commas)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    expand = """
        import re
        def expand(spec):
            out = []
            for part in re.findall(r"[^,\\[]+(?:\\[[^\\]]*\\])?", spec):
                m = re.fullmatch(r"(.*)\\[(\\d+)-(\\d+)\\]", part)
                if m:
                    w = len(m.group(2))
                    out += [m.group(1) + str(i).zfill(w)
                            for i in range(int(m.group(2)), int(m.group(3)) + 1)]
                else:
                    out.append(part)
            return out
        """
    cluster = """
        def cluster_nodes():
            import os
            if os.environ.get("FAKE_SLURM_NODES_FILE"):
                with open(os.environ["FAKE_SLURM_NODES_FILE"]) as f:
                    return f.read().split()
            return os.environ["FAKE_SLURM_NODES"].split(",")
        """
    _script(bin_dir / "scontrol", expand + """
        import sys
        if sys.argv[1:3] != ["show", "hostnames"]:
            sys.exit(1)
        for n in expand(sys.argv[3]):
            print(n)
        """)
    _script(bin_dir / "sinfo", expand + cluster + """
        import json, os, sys
        nodes = cluster_nodes()
        states = json.loads(os.environ.get("FAKE_SLURM_STATES") or "{}")
        default = os.environ.get("FAKE_SLURM_STATE") or "idle"
        args = sys.argv[1:]
        if os.environ.get("FAKE_SINFO_ARGV"):
            with open(os.environ["FAKE_SINFO_ARGV"], "a") as f:
                f.write(json.dumps(args) + "\\n")
        if "-n" in args:
            known = set(nodes)
            nodes = [n for n in expand(args[args.index("-n") + 1]) if n in known]
        fmt = args[args.index("-o") + 1]
        sys.stdout.write("".join(fmt.replace("%N", n).replace("%T", states.get(n, default))
                                 + "\\n" for n in nodes))
        """)
    _script(bin_dir / "squeue", """
        import os
        print(os.environ.get("FAKE_SLURM_JOB_NODES", ""))
        """)
    _script(bin_dir / "srun", expand + cluster + """
        import json, os, signal, subprocess, sys, threading
        argv = sys.argv[1:]
        if os.environ.get("FAKE_SRUN_ARGV"):
            with open(os.environ["FAKE_SRUN_ARGV"], "a") as f:
                f.write(json.dumps(argv) + "\\n")
        if os.environ.get("FAKE_SLURM_ALLOC_FAIL"):
            sys.stderr.write("srun: error: Unable to allocate resources: Requested nodes "
                             "are busy\\n")
            sys.exit(1)
        cut = argv.index("--")
        opts, command = argv[:cut], argv[cut + 1:]
        nodelist = next(o.split("=", 1)[1] for o in opts if o.startswith("--nodelist="))
        if "/" in nodelist:  # a file of nodes, as srun(1) reads one
            with open(nodelist) as f:
                nodelist = ",".join(f.read().split())
        nodes = expand(nodelist)
        if "--distribution=arbitrary" not in opts:
            # Slurm lays tasks out in its own node order, not the order asked
            order = {n: i for i, n in enumerate(cluster_nodes())}
            nodes.sort(key=lambda n: order.get(n, len(order)))
        failing = set(filter(None, os.environ.get("FAKE_SLURM_LAUNCH_FAIL", "").split(",")))
        failing &= set(nodes)
        out_lock = threading.Lock()
        procs = {}
        def pump(task, stream, sink):
            for line in iter(stream.readline, b""):
                with out_lock:
                    sink.write(("%d: " % task).encode() + line)
                    sink.flush()
        threads = []
        for task, node in enumerate(nodes):
            if node in failing:
                continue
            env = dict(os.environ, SLURMD_NODENAME=node, SLURM_TOPOLOGY_ADDR="sw." + node,
                       SLURM_PROCID=str(task), SLURM_NODEID=str(task))
            p = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=True)
            procs[task] = (node, p)
            for stream, sink in ((p.stdout, sys.stdout.buffer), (p.stderr, sys.stderr.buffer)):
                t = threading.Thread(target=pump, args=(task, stream, sink), daemon=True)
                t.start()
                threads.append(t)
        for node in nodes:
            if node in failing:
                sys.stderr.write("srun: error: Task launch for StepId=9.0 failed on node "
                                 + node + ": Communication connection failure\\n")
        if failing and os.environ.get("FAKE_SLURM_ABORT"):
            # as Slurm 22.05's srun: a launch failure aborts the step, killing the others;
            # FAKE_SLURM_ABORT_AFTER names nodes whose tasks finish first (the abort comes
            # after them however slowly a loaded machine starts them; else after 0.5 s)
            import time
            first = set(filter(None, os.environ.get("FAKE_SLURM_ABORT_AFTER", "").split(",")))
            until = time.monotonic() + (30 if first else 0.5)
            while time.monotonic() < until and (not first or any(
                    p.poll() is None for node, p in procs.values() if node in first)):
                time.sleep(0.05)
            sys.stderr.write("srun: error: Application launch failed: Communication "
                             "connection failure\\nsrun: Job step aborted\\n")
            for task, (node, p) in procs.items():
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
        def term(*_):
            sys.stderr.write("srun: forcing job termination\\n")
            for task, (node, p) in procs.items():
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
        signal.signal(signal.SIGTERM, term)
        status = 0
        for task, (node, p) in sorted(procs.items()):
            rc = p.wait()
            if rc > 0:
                sys.stderr.write("srun: error: %s: task %d: Exited with exit code %d\\n"
                                 % (node, task, rc))
                status = max(status, rc)
            elif rc < 0:
                name = "Killed" if -rc == signal.SIGKILL else "Terminated"
                sys.stderr.write("srun: error: %s: task %d: %s\\n" % (node, task, name))
                status = 137
        for t in threads:
            t.join(5)
        sys.exit(233 if failing else status)
        """)
    return bin_dir


# --- a real single-host Slurm --------------------------------------------------------------


def slurm_missing() -> Optional[str]:
    """Why a real test Slurm cannot start here, or None."""
    tools = ("slurmctld", "slurmd", "srun", "scontrol", "sinfo", "munged")
    missing = [t for t in tools if shutil.which(t) is None
               and not Path("/usr/sbin", t).exists()]
    if missing:
        return (f"Slurm is not installed ({', '.join(missing)} missing): apt-get install "
                "slurmctld slurmd slurm-client munge")
    if os.geteuid() != 0:
        return "the test Slurm runs its daemons as root, and this is not root"
    if not Path("/etc/munge/munge.key").exists():
        return "no /etc/munge/munge.key (the munge package makes one)"
    return None


def _free_ports(n: int) -> List[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


class SlurmCluster:
    """munged + slurmctld + one slurmd per node on this host, in ``base`` (a temporary
    directory of the test).  :meth:`stop` ends every daemon it started (SIGTERM, then
    SIGKILL) and proves none is left."""

    def __init__(self, base: Path, nodes: Sequence[str] = ("n1", "n2", "n3", "n4", "n5"),
                 cpus: int = 2) -> None:
        self.base = base
        self.nodes = list(nodes)
        self.cpus = cpus
        self.procs: Dict[str, subprocess.Popen] = {}
        self.conf = base / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        for key in [k for k in self.env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
            del self.env[key]  # not inside anyone's allocation

    def start(self, timeout: float = 30.0) -> "SlurmCluster":
        b = self.base
        for d in ("state", "log", "spool"):
            (b / d).mkdir(parents=True, exist_ok=True)
        b.chmod(0o755)  # munged's socket must be reachable
        ports = _free_ports(1 + len(self.nodes))
        host = socket.gethostname()
        sock = b / "munge.sock"
        lines = [
            "ClusterName=nvtopotest", f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={ports[0]}", "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={sock}",
            f"StateSaveLocation={b / 'state'}", f"SlurmdSpoolDir={b / 'spool'}/%n",
            f"SlurmctldPidFile={b / 'slurmctld.pid'}", f"SlurmdPidFile={b / 'slurmd'}.%n.pid",
            f"SlurmctldLogFile={b / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={b / 'log'}/slurmd.%n.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SchedulerType=sched/builtin", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU", "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "ReturnToService=2",
            "SlurmdTimeout=300", "MessageTimeout=5", "InactiveLimit=0", "KillWait=2",
            "MinJobAge=2",
        ]
        for node, port in zip(self.nodes, ports[1:]):
            lines.append(f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 "
                         f"Port={port} CPUs={self.cpus} State=UNKNOWN")
        lines.append(f"PartitionName=test Nodes={','.join(self.nodes)} Default=YES "
                     "MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self._spawn("munged", [_tool("munged"), "-F", "-f", f"--socket={sock}",
                               "--key-file=/etc/munge/munge.key",
                               f"--log-file={b / 'log' / 'munged.log'}",
                               f"--pid-file={b / 'munged.pid'}",
                               f"--seed-file={b / 'munged.seed'}"])
        _wait_for(lambda: sock.exists(), 10, "munged's socket")
        self._spawn("slurmctld", [_tool("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        for node in self.nodes:
            (b / "spool" / node).mkdir(exist_ok=True)
            self._spawn(f"slurmd-{node}", [_tool("slurmd"), "-D", "-N", node,
                                           "-f", str(self.conf)])
        _wait_for(self._all_idle, timeout, "every node idle in sinfo")
        return self

    def _spawn(self, name: str, argv: List[str]) -> None:
        log = open(self.base / "log" / f"{name}.out", "wb")
        self.procs[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, env=self.env,
                                            start_new_session=True)
        log.close()

    def _all_idle(self) -> bool:
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], env=self.env,
                              capture_output=True, text=True, timeout=20)
        states = dict(line.split() for line in done.stdout.splitlines() if line.strip())
        return all(states.get(n) == "idle" for n in self.nodes)

    def kill_node(self, node: str) -> None:
        """Its slurmd dies (SIGKILL): slurmctld still thinks it idle for SlurmdTimeout."""
        proc = self.procs[f"slurmd-{node}"]
        proc.kill()
        proc.wait(10)

    def pids(self) -> List[int]:
        return [p.pid for p in self.procs.values()]

    def stop(self) -> None:
        for name in sorted(self.procs, key=lambda n: (not n.startswith("slurmd"), n)):
            proc = self.procs[name]
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(10)
        # the steps' processes (slurmstepd and the tasks) live in sessions of their own
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = processes_mentioning(str(self.base))
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)


def processes_mentioning(text: str) -> List[int]:
    """PIDs of live processes whose command line or environment holds ``text`` (a test's
    temporary directory: every process a test started has it in one or the other)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry / "stat").read_text().split()[2] == "Z":
                continue
            blob = (entry / "cmdline").read_bytes()
            try:
                blob += (entry / "environ").read_bytes()
            except OSError:
                pass
        except OSError:
            continue
        if text.encode() in blob:
            found.append(int(entry.name))
    return found


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (OSError, subprocess.SubprocessError, ValueError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


def write_plan(path: Path, plan: Dict[str, str]) -> Path:
    path.write_text(json.dumps(plan), encoding="utf-8")
    return path
