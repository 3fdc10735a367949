"""``nvtopo collect slurm``: every node's snapshot through ``srun``, one task per node.

The nodes expected come from Slurm (``scontrol show hostnames`` of the allocation's,
``--nodelist``'s, ``--partition``'s or ``--jobid``'s nodes); the node-side command
(:mod:`.node`) runs on each through ``srun -N <n> --ntasks-per-node=1``, argv only, in
batches of at most ``--batch-size`` nodes, each batch under one wall-clock deadline.
srun's standard output is read as it comes, line by line, into a record reader
(:mod:`.record`); its standard error is read for hints (``srun: error: n3: task 2:
Killed``, ``Exited with exit code 3``, ``Task launch ... failed on node n3``) and for the
tail of each task's own errors.  The authority is which expected nodes produced a valid
record; the hints only say why another did not.

Who sent a record is srun's word, not the record's: the step lays task i on the i-th node
listed (``--distribution=arbitrary``) and srun labels every line with its task.  Node
lists reach Slurm's commands in pieces (``sinfo -n``, ``scontrol show hostnames``) or in a
file (``srun --nodelist=FILE``), never as one argument the kernel could refuse.  srun leads
a process group of its own, and the group is what is ended, at the deadline and when
SIGTERM, SIGHUP or SIGINT tell the collector to stop (:mod:`.interrupt`): a site's srun
wrapper and the srun it started end together.  See docs/collect.md §1.
"""

from __future__ import annotations

import collections
import math
import os
import re
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Sequence, Tuple

from ...errors import NvtopoError
from . import record
from .collector import Collection, one_line
from .interrupt import NEVER, Interrupted, Stop

WHERE = "collect slurm"
#: Nodes per srun step (Azure's NHC fails past ~300 nodes in one job: batches stay below).
BATCH_SIZE = 256
#: Seconds SIGTERM gives srun to end its step before SIGKILL.
TERM_GRACE_S = 10.0
#: Seconds any of scontrol, sinfo, squeue may take.
TOOL_TIMEOUT_S = 30.0
#: Stderr lines kept per task, characters kept per line.
TAIL_LINES = 3
TAIL_CHARS = 200
#: Node states a new job can start on at once (sinfo %T, flags stripped).
LAUNCHABLE = ("idle", "mixed")
#: Bytes of node names given to a Slurm command in one argument.  Linux refuses to start a
#: program with one argument of 128 KiB or more (10,000 names of 14 characters are 150 kB):
#: longer lists go in pieces (sinfo, scontrol) or in a file (srun).
NODELIST_ARG_BYTES = 32 * 1024


@dataclass
class Selection:
    """Which nodes, and in which job: a new one, the allocation we are in, or ``jobid``."""

    nodelist: Optional[str] = None
    partition: Optional[str] = None
    jobid: Optional[str] = None
    overlap: bool = False
    gpus_per_node: Optional[int] = None


@dataclass
class Limits:
    #: Seconds each probe on a node may take (the node-side ``--timeout``).
    timeout: float = 30.0
    #: Seconds the node-side command may take in all (its ``--limit``).
    node_limit: float = 60.0
    #: Seconds Slurm may take to start a step (and, for a new job, to find the nodes).
    launch_wait: float = 60.0
    batch_size: int = BATCH_SIZE

    def to_dict(self) -> Dict[str, Any]:
        return {"timeout_s": self.timeout, "node_limit_s": self.node_limit,
                "launch_wait_s": self.launch_wait, "batch_size": self.batch_size}


# --- the nodes expected ------------------------------------------------------------------


def _tool(argv: Sequence[str]) -> str:
    """Run a Slurm client command (bounded); its standard output, or a one-line error."""
    from ...probes import run as run_mod

    try:
        done = run_mod.run(list(argv), TOOL_TIMEOUT_S, stdout_cap=16 * 1024 * 1024)
    except FileNotFoundError:
        raise NvtopoError(f"{argv[0]} not found on PATH (is this a Slurm login node?)",
                          where=WHERE) from None
    except OSError as exc:
        raise NvtopoError(f"cannot run {argv[0]}: {exc.strerror or exc}", where=WHERE) from None
    if done.timed_out:
        raise NvtopoError(f"`{' '.join(argv[:3])}` did not answer within "
                          f"{TOOL_TIMEOUT_S:g} s", where=WHERE)
    if done.returncode != 0 or done.cut:
        why = one_line(done.stderr.decode("utf-8", "replace") or f"exit status "
                       f"{done.returncode}", 200)
        raise NvtopoError(f"`{' '.join(argv[:3])}` failed: {why}", where=WHERE)
    return done.stdout.decode("utf-8", "replace")


def hostnames(nodelist: str) -> List[str]:
    """``scontrol show hostnames``: ``gpu[001-003]`` -> gpu001, gpu002, gpu003."""
    out = _tool(["scontrol", "show", "hostnames", nodelist])
    return _unique(out.split())


def chunks(names: Sequence[str]) -> Iterator[List[str]]:
    """``names`` in pieces whose comma-joined length stays within
    :data:`NODELIST_ARG_BYTES` (a single longer name is a piece of its own)."""
    piece: List[str] = []
    size = 0
    for name in names:
        add = len(name.encode("utf-8")) + (1 if piece else 0)
        if piece and size + add > NODELIST_ARG_BYTES:
            yield piece
            piece, size, add = [], 0, add - 1
        piece.append(name)
        size += add
    if piece:
        yield piece


def _unique(names: Sequence[str]) -> List[str]:
    seen, out = set(), []
    for n in names:
        if n and n not in seen:
            seen.add(n)
            out.append(n)
    return out


def expected_nodes(selection: Selection, env: Dict[str, str]
                   ) -> Tuple[List[str], str, Dict[str, Any]]:
    """``(nodes, mode, selection facts)``; ``mode``: ``"job"`` (``--jobid``),
    ``"allocation"`` (inside one) or ``"new"`` (a new job on the nodes named)."""
    facts: Dict[str, Any] = {"nodelist": selection.nodelist, "partition": selection.partition,
                             "jobid": selection.jobid, "allocation": None}
    if selection.jobid is not None:
        if not re.fullmatch(r"[0-9]+(_[0-9]+)?(\+[0-9]+)?", selection.jobid):
            raise NvtopoError(f"'{one_line(selection.jobid, 40)}' is not a Slurm job id",
                              where="--jobid")
        listed = _tool(["squeue", "-h", "-j", selection.jobid, "-o", "%N"]).split()
        if not listed:
            raise NvtopoError(f"job {selection.jobid} has no nodes (not running?)",
                              where="--jobid")
        nodes = _unique([n for piece in chunks(listed) for n in hostnames(",".join(piece))])
        mode = "job"
    elif env.get("SLURM_JOB_ID"):
        if selection.partition is not None:
            raise NvtopoError("inside an allocation the step runs on its nodes: --partition "
                              "selects nodes for a new job (run outside the allocation, or "
                              "use --nodelist)", where=WHERE)
        listed_env = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
        if not listed_env:
            raise NvtopoError("SLURM_JOB_ID is set but SLURM_JOB_NODELIST is not", where=WHERE)
        nodes, mode = hostnames(listed_env), "allocation"
        facts["allocation"] = env["SLURM_JOB_ID"]
    elif selection.nodelist is None and selection.partition is None:
        raise NvtopoError("not inside a Slurm allocation (no SLURM_JOB_ID): give --nodelist, "
                          "--partition or --jobid", where=WHERE)
    else:
        mode = "new"
        nodes = []
        if selection.partition is not None:
            nodes = _unique(_tool(["sinfo", "-h", "-N", "-p", selection.partition,
                                   "-o", "%N"]).split())
            if not nodes:
                raise NvtopoError(f"partition {selection.partition} has no nodes",
                                  where="--partition")
    if selection.nodelist is not None:
        named = hostnames(selection.nodelist)
        if mode == "new" and selection.partition is None:
            nodes = named
        else:
            inside = set(nodes)
            outside = [n for n in named if n not in inside]
            if outside:
                raise NvtopoError(f"{', '.join(outside[:5])} not among the "
                                  f"{'partition' if mode == 'new' else mode}'s nodes",
                                  where="--nodelist")
            nodes = named
    if not nodes:
        raise NvtopoError("no nodes to collect from", where=WHERE)
    return nodes, mode, facts


def node_states(nodes: Sequence[str], partition: Optional[str]) -> Dict[str, str]:
    """Slurm's state of each node (``sinfo %T``: ``idle``, ``mixed``, ``down*`` ...), asked
    in pieces of :data:`NODELIST_ARG_BYTES`."""
    states: Dict[str, str] = {}
    for piece in chunks(nodes):
        argv = ["sinfo", "-h", "-N", "-n", ",".join(piece), "-o", "%N|%T"]
        if partition is not None:
            argv[1:1] = ["-p", partition]
        for line in _tool(argv).splitlines():
            name, _, state = line.strip().partition("|")
            if name and state:
                states.setdefault(name, state.lower())
    return states


def launchable(state: Optional[str]) -> bool:
    """A node a new job starts on at once: idle or mixed, and responding (no ``*``),
    not powered down (``~``) or powering up (``#``)."""
    if state is None:
        return False
    return state.rstrip("*~#!%$@^-") in LAUNCHABLE and not any(c in state for c in "*~#%")


def await_launchable(nodes: Sequence[str], selection: Selection, limit: float,
                     stop: Stop = NEVER) -> None:
    """Wait (at most ``limit`` seconds) until Slurm reports ``nodes`` launchable again: a
    job's nodes stay ``completing`` a while after it ends, and a new job asked for them
    meanwhile is refused as busy."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and stop.signum is None:
        states = node_states(nodes, selection.partition)
        if all(launchable(states.get(n)) for n in nodes):
            return
        time.sleep(0.5)


# --- srun ----------------------------------------------------------------------------


def srun_argv(batch: Sequence[str], mode: str, selection: Selection, limits: Limits,
              node_command: Sequence[str], hostfile: Optional[str] = None) -> List[str]:
    """The srun command line for one batch (no shell: a list).  Task i runs on ``batch[i]``
    (``--distribution=arbitrary``); ``hostfile`` (a path, holding a ``/``): the file that
    lists the batch, one node a line, for a list too long for one argument."""
    minutes = max(1, math.ceil((limits.node_limit + limits.launch_wait + 60) / 60))
    argv = ["srun", f"--nodes={len(batch)}", f"--ntasks={len(batch)}",
            "--ntasks-per-node=1", "--distribution=arbitrary",
            f"--nodelist={hostfile or ','.join(batch)}",
            "--kill-on-bad-exit=0", "--no-kill", "--wait=0", "--label",
            "--job-name=nvtopo-collect", f"--time={minutes}"]
    if mode == "new":
        argv.append(f"--immediate={max(1, math.ceil(limits.launch_wait))}")
        if selection.partition is not None:
            argv.append(f"--partition={selection.partition}")
    if mode == "job":
        argv.append(f"--jobid={selection.jobid}")
    if selection.overlap or mode == "job":
        argv.append("--overlap")
    if selection.gpus_per_node is not None:
        argv.append(f"--gpus-per-node={selection.gpus_per_node}")
    return argv + ["--", *node_command, "collect", "node-record", "--engine", "slurm",
                   "--timeout", f"{limits.timeout:g}", "--limit", f"{limits.node_limit:g}"]


_NODE_ERROR = re.compile(r"srun: error: (\S+): tasks? ([0-9][0-9,\- ]*): (.+)")
_LAUNCH_FAILED = re.compile(r"srun: error: Task launch for \S+ failed on node (\S+): (.+)")
_EXIT_CODE = re.compile(r"Exited with exit code ([0-9]+)")
_LABELLED = re.compile(r" *([0-9]{1,7}): (.*)")


def _tasks(spec: str) -> List[int]:
    out: List[int] = []
    for part in spec.replace(" ", "").split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            a, b = int(lo), int(hi or lo)
            out.extend(range(a, min(b, a + 4096) + 1))
    return out


class Hints:
    """What srun's standard error says: per node, an exit code, a signal or a launch
    failure; per task, the last lines of its own standard error; srun's other errors."""

    def __init__(self) -> None:
        self.tasks: Dict[int, str] = {}
        self.exited: Dict[str, int] = {}
        self.signalled: Dict[str, str] = {}
        self.launch_failed: Dict[str, str] = {}
        self.tails: Dict[int, Deque[str]] = {}
        self.srun_errors: Deque[str] = collections.deque(maxlen=TAIL_LINES)

    def feed(self, raw: bytes) -> None:
        line = raw[:4096].decode("utf-8", "replace").rstrip("\r\n")
        m = _LAUNCH_FAILED.match(line)
        if m:
            self.launch_failed.setdefault(m.group(1), m.group(2))
            return
        m = _NODE_ERROR.match(line)
        if m:
            node, what = m.group(1), m.group(3)
            for task in _tasks(m.group(2)):
                self.tasks.setdefault(task, node)
            code = _EXIT_CODE.search(what)
            if code:
                self.exited.setdefault(node, int(code.group(1)))
            else:
                self.signalled.setdefault(node, what)
            return
        if line.startswith("srun: error:"):
            self.srun_errors.append(one_line(line, TAIL_CHARS))
            return
        m = _LABELLED.fullmatch(line)
        if m:
            task = int(m.group(1))
            if task in self.tails or len(self.tails) < 100_000:
                tail = self.tails.setdefault(task, collections.deque(maxlen=TAIL_LINES))
                if m.group(2).strip():
                    tail.append(one_line(m.group(2), TAIL_CHARS))

    def tail_of(self, node: str, tasks: Dict[int, str]) -> str:
        mapping = {**tasks, **self.tasks}
        lines: List[str] = []
        for task, name in mapping.items():
            if name == node and task in self.tails:
                lines.extend(self.tails[task])
        return " | ".join(lines[-TAIL_LINES:])


class _Lines:
    """Splits a byte stream into lines, never holding more than :data:`record.MAX_LINE`
    bytes of one (the rest of a longer line is dropped)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.dropping = False

    def feed(self, data: bytes) -> List[bytes]:
        out: List[bytes] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            piece = data[start:] if nl < 0 else data[start:nl + 1]
            if not self.dropping:
                self.buf += piece[:record.MAX_LINE + 1 - len(self.buf)]
                if len(self.buf) > record.MAX_LINE and nl < 0:
                    self.dropping = True
            if nl < 0:
                return out
            out.append(bytes(self.buf))
            self.buf.clear()
            self.dropping = False
            start = nl + 1

    def end(self) -> List[bytes]:
        rest = [bytes(self.buf)] if self.buf else []
        self.buf.clear()
        return rest


def run_batch(coll: Collection, batch: Sequence[str], argv_of: Callable[[Sequence[str]],
              List[str]], limits: Limits, retry: bool = True,
              before_retry: Optional[Callable[[Sequence[str]], None]] = None,
              stop: Stop = NEVER) -> List[Dict[str, Any]]:
    """Run one srun step over ``batch`` (``argv_of(nodes)``: its command line), streaming its
    output into ``coll``; give every node of the batch without a record its reason.

    A task that cannot be launched on one node makes srun abort the whole step, killing
    the tasks still running on the others (seen on Slurm 22.05): those are run again once,
    in a step of their own (``retry``).  A signal noted by ``stop`` ends the step as the
    deadline does; its nodes without a record are then ``interrupted``.  Returns srun's
    exit facts, one per step."""
    argv = argv_of(batch)
    # srun --distribution=arbitrary lays task i on the i-th node listed, and srun itself
    # labels each line with its task: that, not the name in a record, says who sent it
    reader = coll.reader(batch, labelled=True, senders=dict(enumerate(batch)),
                         describe=lambda task: "a line without srun's task label"
                         if task is None else f"srun task {task}")
    hints = Hints()
    deadline = time.monotonic() + limits.node_limit + limits.launch_wait
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise NvtopoError(f"cannot run srun: {exc.strerror or exc}", where=WHERE) from None
    ended_by_us = srun_killed = False
    try:
        ended_by_us, srun_killed = _pump(proc, reader, hints, deadline, stop)
    finally:
        if _group_running(proc):  # an exception, or a wrapper's srun left: end them
            _end(proc)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    reader.close()
    steps = [{"returncode": proc.returncode, "ended_by_collector": ended_by_us}]
    if stop.name is not None:
        for node in batch:
            if node not in hints.launch_failed and node not in hints.exited:
                coll.interrupt_node(node, stop.name)
    elif retry and hints.launch_failed and not ended_by_us:
        aborted = [n for n in batch if not coll.has_result(n) and n in hints.signalled
                   and n not in hints.launch_failed]
        for node in hints.launch_failed:
            if node in batch:
                coll.fail(node, "launch-failed", "srun could not start the task on the node: "
                          + hints.launch_failed[node])
        if aborted:
            if before_retry is not None:
                before_retry(aborted)
            steps += run_batch(coll, aborted, argv_of, limits, retry=False, stop=stop)
    _reasons(coll, batch, reader, hints, ended_by_us, srun_killed, limits)
    return steps


def _pump(proc: "subprocess.Popen[bytes]", reader: record.Reader, hints: Hints,
          deadline: float, stop: Stop = NEVER) -> Tuple[bool, bool]:
    """Read srun's two streams until both end; at the deadline, or once ``stop`` has
    noted a signal, end srun's process group (SIGTERM, then SIGKILL; a second signal:
    SIGKILL at once).  Returns whether the collector ended it, and whether it took
    SIGKILL (then srun said nothing of the tasks it was running)."""
    sel = selectors.DefaultSelector()
    splitters: Dict[Any, _Lines] = {}  # by the selector's file object
    for stream, sink in ((proc.stdout, reader.feed), (proc.stderr, hints.feed)):
        assert stream is not None
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ, sink)
        splitters[stream] = _Lines()
    ended = False
    kill_at: Optional[float] = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if not ended and (now >= deadline or stop.signum is not None):
                ended = True
                _signal(proc, signal.SIGTERM)
                kill_at = now + TERM_GRACE_S
            if kill_at is not None and (now >= kill_at or stop.count > 1):
                kill_at = min(kill_at, now)
                _signal(proc, signal.SIGKILL)
                break
            wait = (kill_at if kill_at is not None else deadline) - now
            # a signal does not wake select (PEP 475): look at ``stop`` every 0.25 s
            for key, _ in sel.select(timeout=max(0.05, min(wait, 0.25))):
                try:
                    data = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(key.fileobj)
                    for line in splitters[key.fileobj].end():
                        key.data(line)
                    continue
                for line in splitters[key.fileobj].feed(data):
                    key.data(line)
    finally:
        sel.close()
    killed = kill_at is not None and time.monotonic() >= kill_at
    try:
        proc.wait(timeout=TERM_GRACE_S if kill_at is None else 2.0)
    except subprocess.TimeoutExpired:
        _end(proc)
        killed = killed or ended
    return ended, killed


def _signal(proc: "subprocess.Popen[bytes]", sig: int) -> None:
    """``sig`` to srun's whole process group (it leads a session of its own): a site's
    ``srun`` wrapper script and the real srun it started both get it."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_running(proc: "subprocess.Popen[bytes]") -> bool:
    """srun, or anything left in its process group, still running (zombies aside)."""
    from ...probes.run import _live_in_group

    return proc.poll() is None or bool(_live_in_group(proc.pid))


def _end(proc: "subprocess.Popen[bytes]") -> None:
    """End srun's process group: SIGTERM (srun then ends its step on every node), SIGKILL
    to whatever of the group is left after :data:`TERM_GRACE_S`."""
    _signal(proc, signal.SIGTERM)
    until = time.monotonic() + TERM_GRACE_S
    while _group_running(proc) and time.monotonic() < until:
        time.sleep(0.05)
    if _group_running(proc):
        _signal(proc, signal.SIGKILL)
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:  # stuck in the kernel: nothing more to do here
        pass


def _reasons(coll: Collection, batch: Sequence[str], reader: record.Reader, hints: Hints,
             ended_by_us: bool, srun_killed: bool, limits: Limits) -> None:
    """Why each node of the batch without a result sent no record.  At the deadline srun
    is told to end the step and reports each task it was still running (``Killed``); a
    task it does not name had ended by itself (exit 0, no record), unless srun itself had
    to be killed and said nothing."""
    step_error = " | ".join(hints.srun_errors)
    late = (f"no record within {limits.node_limit:g} s (+{limits.launch_wait:g} s to "
            "start); the step was ended")
    for node in batch:
        if coll.has_result(node):
            continue
        tail = hints.tail_of(node, reader.tasks)
        said = f": {tail}" if tail else ""
        if node in hints.launch_failed:
            coll.fail(node, "launch-failed",
                      f"srun could not start the task on the node: {hints.launch_failed[node]}")
        elif ended_by_us and (node in hints.signalled
                              or (srun_killed and node not in hints.exited)):
            coll.fail(node, "timeout", late + said)
        elif node in hints.signalled:
            coll.fail(node, "killed", f"{hints.signalled[node]} before it sent a record "
                      f"(Slurm's time limit, or out of memory?){said}")
        elif node in hints.exited:
            coll.fail(node, "exited", f"exited with {hints.exited[node]}"
                      + (said or " and printed nothing on standard error"))
        elif step_error and not reader.done:
            coll.fail(node, "not-launched", step_error)
        else:
            coll.fail(node, "no-record", f"the task ended without a record{said}"
                      if tail else "no record, and srun said nothing about the node")


# --- the whole collection ------------------------------------------------------------------


#: What the nodes' Python runs: nvtopo's entry point, imported after the working directory
#: is taken off ``sys.path`` (``python -m nvtopo`` and ``-c`` put it first, so an ``nvtopo/``
#: directory where srun or Ray starts the task, a checkout of nvtopo's source say, was
#: imported instead, and every node failed with an ImportError).
ENTRY = ("import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
         "sys.argv[0] = 'nvtopo'; from nvtopo.cli import run; run()")


def default_node_command() -> List[str]:
    """This nvtopo, as the nodes run it: this Python, running the installed entry point
    (:data:`ENTRY`: immune to the working directory; a shared installation or the same
    image on every node)."""
    import sys

    return [sys.executable, "-c", ENTRY]


def collect(out_dir: str, selection: Selection, limits: Limits,
            node_command: Optional[Sequence[str]] = None,
            env: Optional[Dict[str, str]] = None,
            progress: Any = None) -> Dict[str, Any]:
    """Collect every expected node's snapshot into ``out_dir``; returns the manifest
    (written as ``out_dir/collect.json``).  SIGTERM, SIGHUP or SIGINT end srun's process
    group and the collection, and the manifest says what came (``interrupted``); one that
    comes before the nodes are known raises :class:`~.interrupt.Interrupted`."""
    import shutil

    env = dict(os.environ if env is None else env)
    if shutil.which("srun") is None:
        raise NvtopoError("srun not found on PATH (is this a Slurm login node?)", where=WHERE)
    if limits.batch_size < 1:
        raise NvtopoError("must be at least 1", where="--batch-size")
    command = list(node_command or default_node_command())
    with Stop() as stop:
        nodes, mode, facts = expected_nodes(selection, env)
        stop.check()
        coll = Collection(out_dir, "slurm", nodes)
        steps: List[Dict[str, Any]] = []
        scratch: List[str] = []
        try:
            _collect(coll, nodes, mode, selection, limits, command, stop, steps, scratch,
                     progress)
        except Interrupted as exc:
            coll.interrupt(exc.name)
        finally:
            for path in scratch:  # the node-list files given to srun
                shutil.rmtree(path, ignore_errors=True)
        facts["mode"] = mode
        facts["steps"] = len(steps)
        return coll.finish(facts, limits.to_dict())


def _collect(coll: Collection, nodes: List[str], mode: str, selection: Selection,
             limits: Limits, command: List[str], stop: Stop, steps: List[Dict[str, Any]],
             scratch: List[str], progress: Any) -> None:
    """The steps of :func:`collect`, batch after batch (``steps``: srun's exit facts;
    ``scratch``: temporary directories made, for the caller to remove)."""
    import tempfile

    launch = list(nodes)
    if mode == "new":
        states = node_states(nodes, selection.partition)
        stop.check()
        launch = []
        for node in nodes:
            state = states.get(node)
            if launchable(state):
                launch.append(node)
            elif state is None:
                coll.fail(node, "not-launched", "Slurm does not list the node")
            elif state.rstrip("*~#!%$@^-") == "allocated":
                coll.fail(node, "not-launched", f"Slurm reports the node {state}: busy with "
                          "other jobs (collect inside their allocation, or with --jobid "
                          "... --overlap)")
            else:
                coll.fail(node, "not-launched", f"Slurm reports the node {state}")

    def argv_of(batch: Sequence[str]) -> List[str]:
        hostfile = None
        if len(",".join(batch).encode("utf-8")) > NODELIST_ARG_BYTES:
            if not scratch:
                scratch.append(tempfile.mkdtemp(prefix="nvtopo-collect-"))
            hostfile = os.path.join(scratch[0], f"nodes.{len(steps)}.{os.urandom(4).hex()}")
            with open(hostfile, "w", encoding="utf-8") as f:
                f.write("".join(f"{node}\n" for node in batch))
        return srun_argv(batch, mode, selection, limits, command, hostfile)

    for start in range(0, len(launch), limits.batch_size):
        stop.check()
        batch = launch[start:start + limits.batch_size]
        if progress is not None:
            progress(f"srun on {len(batch)} node(s) ({start + len(batch)} of {len(launch)})")
        steps += run_batch(coll, batch, argv_of, limits,
                           before_retry=(lambda nodes: await_launchable(
                               nodes, selection, limits.launch_wait, stop))
                           if mode == "new" else None, stop=stop)
    stop.check()
