"""``nvtopo collect ray``: every alive Ray node's snapshot, one pinned task per node.

Ray is optional (``pip install 'nvtopo[ray]'``) and imported only here, when the command
runs.  The nodes are Ray's alive nodes (``ray.nodes()``; those listed as dead are named
in the manifest as skipped).  On each, one task pinned with
``NodeAffinitySchedulingStrategy(node_id, soft=False)`` and asking for no CPU (a task
asking for one waits forever on a node whose CPUs are busy) runs the node-side command
(:mod:`.node`) as a subprocess under its own time limit and returns its output through
the object store.  The collector waits with ``ray.wait`` up to one deadline, cancels the
tasks still running (``ray.cancel(force=True)``), and maps Ray's errors to reasons (node
gone, node died, probe crashed, timeout).  Only APIs present from Ray 2.9 to 2.51 (the
newest with Python 3.9 wheels) are used.  See docs/collect.md §2.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...errors import NvtopoError
from . import record
from .collector import Collection, one_line
from .interrupt import Stop

WHERE = "collect ray"
#: Seconds Ray may take to start a task on a node (worker start-up included).
LAUNCH_WAIT_S = 60.0
#: Bytes of the node-side command's standard output a task returns at most.
MAX_OUTPUT = record.MAX_RECORD_BYTES * 4 // 3 + 1024 * 1024
#: Bytes of its standard error a task returns (the tail).
STDERR_TAIL = 2048


def import_ray() -> Tuple[Any, Any]:
    """``(ray, NodeAffinitySchedulingStrategy)``, or the one-line error naming the extra."""
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        raise NvtopoError("Ray is not installed here: pip install 'nvtopo[ray]' (ray>=2.9)",
                          where=WHERE) from None
    return ray, NodeAffinitySchedulingStrategy


def run_on_node(argv: Sequence[str], limit: float) -> Dict[str, Any]:
    """The task body, on the node: run the node-side command, bounded in time and bytes.
    Returns its exit, its output and where it ran."""
    import ray

    from ...probes import run as run_mod

    here = ray.get_runtime_context().get_node_id()
    done = run_mod.run(list(argv), limit, stdout_cap=MAX_OUTPUT, stderr_cap=64 * 1024)
    return {"node_id": str(here), "returncode": done.returncode, "timed_out": done.timed_out,
            "cut": done.cut, "stdout": done.stdout,
            "stderr": done.stderr[-STDERR_TAIL:].decode("utf-8", "replace")}


def node_names(nodes: Sequence[Dict[str, Any]]) -> Dict[str, str]:
    """Node id -> the name its file gets: the host name where it is a node name and no
    other listed node has it; else the host name with the first 12 digits of the id (or
    the id alone)."""
    hosts: Dict[str, int] = {}
    for n in nodes:
        h = str(n.get("NodeManagerHostname") or "")
        hosts[h] = hosts.get(h, 0) + 1
    names: Dict[str, str] = {}
    for n in nodes:
        node_id = str(n.get("NodeID") or "")
        host = str(n.get("NodeManagerHostname") or "")
        short = re.sub(r"[^0-9a-f]", "", node_id.lower())[:12] or "unknown"
        if record.is_node_name(host) and hosts[host] == 1:
            names[node_id] = host
        elif record.is_node_name(f"{host}-{short}") and len(host) <= 100:
            names[node_id] = f"{host}-{short}"
        else:
            names[node_id] = f"node-{short}"
    return names


def _error_class(ray: Any, name: str) -> Any:
    cls = getattr(ray.exceptions, name, None)
    return cls if isinstance(cls, type) else ()


def classify(ray: Any, exc: BaseException) -> Tuple[str, str]:
    """A Ray error as ``(status, reason)``."""
    first = one_line(str(exc).strip().splitlines()[0] if str(exc).strip() else
                     type(exc).__name__, 300)
    if isinstance(exc, _error_class(ray, "TaskUnschedulableError")):
        return "node-gone", f"Ray could not place the task on the node: {first}"
    for name in ("NodeDiedError", "WorkerCrashedError", "ObjectLostError",
                 "LocalRayletDiedError"):
        if isinstance(exc, _error_class(ray, name)):
            return "node-died", f"{name}: {first}"
    if isinstance(exc, _error_class(ray, "TaskCancelledError")):
        return "timeout", "the task was cancelled"
    if isinstance(exc, _error_class(ray, "RayTaskError")):
        cause = getattr(exc, "cause", None)
        what = f"{type(cause).__name__}: {cause}" if cause is not None else first
        return "probe-crashed", f"the task raised {one_line(what, 300)}"
    return "probe-crashed", f"{type(exc).__name__}: {first}"


def collect(out_dir: str, address: str, timeout: float, node_limit: float,
            node_command: Optional[Sequence[str]] = None,
            launch_wait: float = LAUNCH_WAIT_S, progress: Any = None) -> Dict[str, Any]:
    """Collect every alive Ray node's snapshot into ``out_dir``; returns the manifest."""
    from .slurm import default_node_command

    ray, affinity = import_ray()
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR,
                 ignore_reinit_error=True)
    except Exception as exc:  # noqa: BLE001 - Ray raises many kinds here; one line for each
        raise NvtopoError(f"cannot join the Ray cluster at {address}: "
                          f"{one_line(str(exc) or type(exc).__name__, 300)}",
                          where=WHERE) from None
    try:
        return _collect(ray, affinity, out_dir, address, timeout, node_limit,
                        list(node_command or default_node_command()), launch_wait, progress)
    finally:
        ray.shutdown()


def _collect(ray: Any, affinity: Any, out_dir: str, address: str, timeout: float,
             node_limit: float, command: List[str], launch_wait: float,
             progress: Any) -> Dict[str, Any]:
    listed = [n for n in ray.nodes() if isinstance(n, dict) and n.get("NodeID")]
    alive = [n for n in listed if n.get("Alive")]
    if not alive:
        raise NvtopoError("the Ray cluster lists no alive node", where=WHERE)
    names = node_names(listed)
    coll = Collection(out_dir, "ray", [names[n["NodeID"]] for n in alive])
    for n in listed:
        facts = {"node_id": str(n["NodeID"]),
                 "hostname": one_line(n.get("NodeManagerHostname") or "", 200),
                 "address": one_line(n.get("NodeManagerAddress") or "", 100)}
        if n.get("Alive"):
            coll.facts[names[n["NodeID"]]] = facts
        else:
            coll.skip(names[n["NodeID"]], f"Ray lists the node as dead (id {facts['node_id']},"
                      f" {facts['hostname']} {facts['address']})")
    remote = ray.remote(num_cpus=0, max_retries=0)(run_on_node)
    pending: Dict[Any, Tuple[str, str]] = {}
    for n in alive:
        name = names[n["NodeID"]]
        argv = command + ["collect", "node-record", "--engine", "ray", "--node", name,
                          "--timeout", f"{timeout:g}", "--limit", f"{node_limit:g}"]
        strategy = affinity(node_id=n["NodeID"], soft=False)
        ref = remote.options(scheduling_strategy=strategy).remote(argv, node_limit + 5.0)
        pending[ref] = (name, str(n["NodeID"]))
    if progress is not None:
        progress(f"one task on each of {len(pending)} Ray node(s)")
    deadline = time.monotonic() + node_limit + launch_wait
    with Stop() as stop:  # SIGTERM, SIGHUP, SIGINT: cancel the tasks, write the manifest
        while pending and stop.signum is None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # a signal does not wake ray.wait: look at ``stop`` every half second
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=min(left, 0.5))
            if ready:  # and every other one ready by now
                ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
            for ref in ready:
                name, node_id = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - each kind of failure is a reason
                    status, reason = classify(ray, exc)
                    coll.fail(name, status, reason)
                    continue
                _take(coll, name, node_id, result, node_limit)
        for ref, (name, _node_id) in pending.items():
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - cancelling is best effort; the reason stands
                pass
            if stop.name is not None:
                coll.interrupt_node(name, stop.name)
            else:
                coll.fail(name, "timeout", f"no answer within {node_limit:g} s "
                          f"(+{launch_wait:g} s to start); the task was cancelled")
        return coll.finish({"address": address, "mode": "ray"},
                           {"timeout_s": timeout, "node_limit_s": node_limit,
                            "launch_wait_s": launch_wait})


def _take(coll: Collection, name: str, node_id: str, result: Any, node_limit: float) -> None:
    """One task's result: its record, or why there is none."""
    if not isinstance(result, dict):
        coll.fail(name, "probe-crashed", "the task returned no result")
        return
    if result.get("node_id") != node_id:
        coll.fail(name, "bad-record", f"bad record: the task ran on node "
                  f"{one_line(result.get('node_id'), 80)}, not on {node_id}")
        return
    # the node Ray ran the task on (checked above) sent all of this output
    reader = coll.reader([name], senders={None: name},
                         describe=lambda _task: f"the task on Ray node {node_id}")
    stdout = result.get("stdout") or b""
    for line in stdout.split(b"\n") if isinstance(stdout, bytes) else ():
        if line:
            reader.feed(line)
    reader.close()
    if coll.has_result(name):
        return
    lines = [line for line in str(result.get("stderr") or "").splitlines() if line.strip()]
    tail = one_line(" | ".join(lines[-3:]), 300) if lines else ""
    said = f": {tail}" if tail else ""
    if result.get("timed_out"):
        coll.fail(name, "timeout", f"the node's command ran past {node_limit:g} s and was "
                  f"ended{said}")
    elif result.get("cut"):
        coll.fail(name, "bad-record", f"bad record: the node printed more than "
                  f"{MAX_OUTPUT // (1024 * 1024)} MiB")
    elif result.get("returncode") not in (0, None):
        coll.fail(name, "exited", f"exited with {result.get('returncode')}"
                  + (said or " and printed nothing on standard error"))
    else:
        coll.fail(name, "no-record", f"the command ended without a record{said}")
