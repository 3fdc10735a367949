"""``nvtopo watch``: the node-local loop (docs/collect.md §3; nvtopo/commands/watch.py)."""

import json
import os
import signal
import time
from typing import Any, Dict, Optional

import typer

from ..errors import NvtopoError

from .io import handles_errors, say
from .options import (from_option, layout, layout_file_option, layout_option,
                      sysfs_root_option, thresholds, thresholds_option, timeout_option)


@handles_errors
def watch_cmd(
    every: str = typer.Option(..., "--every", metavar="DURATION",
                              help="How often: 30s, 5m, 1h (or seconds)."),
    count: int = typer.Option(0, "--count", min=0, metavar="N",
                              help="Stop after N rounds (0, the default: run until SIGTERM)."),
    textfile: Optional[str] = typer.Option(
        None, "--textfile", metavar="FILE",
        help="Write the Prometheus textfile here each round, atomically (node_exporter's "
             "textfile directory)."),
    kubernetes: bool = typer.Option(
        False, "--kubernetes",
        help="Set this node's nvtopo.io/ labels and the NvtopoTopologyFault condition "
             "through the API server (the pod's service account; RBAC in deploy/)."),
    api: Optional[str] = typer.Option(None, "--api", metavar="URL",
                                      help="The API server (default: the in-cluster one)."),
    dry_run: bool = typer.Option(
        False, "--dry-run",
        help="Print the API requests (one JSON object a line) instead of sending them."),
    node: Optional[str] = typer.Option(
        None, "--node", metavar="NAME",
        help="The Kubernetes node's name (default: $NODE_NAME, else the hostname)."),
    from_: Optional[str] = from_option(),
    sysfs_root: Optional[str] = sysfs_root_option(),
    layout_name: str = layout_option(),
    layout_file: Optional[str] = layout_file_option(),
    thresholds_file: Optional[str] = thresholds_option(),
    timeout: float = timeout_option(),
) -> None:
    """Keep this node's verdict current: every DURATION, snapshot, check, write the
    Prometheus textfile and (--kubernetes) set the node's labels and condition; no network
    but the API server's. For a DaemonSet or a systemd timer-less service (deploy/).

    Exit status: 0 when stopped (SIGTERM, SIGINT, --count reached), 2 bad options.

    Examples:

      nvtopo watch --every 10m --textfile /var/lib/node_exporter/textfile/nvtopo.prom

      nvtopo watch --every 5m --kubernetes

      nvtopo watch --every 1m --count 1 --dry-run --from node17.json
    """
    from ..commands import watch as w
    from ..render import k8s

    seconds = w.parse_every(every)
    chosen = layout(layout_name, layout_file, "watch")
    limits = thresholds(thresholds_file)
    name = node or os.environ.get("NODE_NAME") or os.uname().nodename
    talk = kubernetes or api is not None or dry_run
    if talk and k8s.node_name_problem(name):
        raise NvtopoError(f"{name!r} is no Kubernetes node name: {k8s.node_name_problem(name)}",
                          where="--node")
    client = w.Api.in_cluster(api) if talk and not dry_run else None
    stopping = _stop_on_signals()
    state: Dict[str, Any] = {"status": None, "since": None}
    rounds = 0
    while not stopping:
        _round(w, name, chosen, limits, from_, sysfs_root, timeout, textfile,
               talk, client, state)
        rounds += 1
        if count and rounds >= count:
            break
        deadline = time.monotonic() + seconds
        while not stopping and time.monotonic() < deadline:
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    raise typer.Exit(0)


def _stop_on_signals() -> list:
    """A list that becomes non-empty on SIGTERM or SIGINT (checked between rounds)."""
    flag: list = []

    def stop(signum: int, _frame: Any) -> None:
        flag.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    return flag


def _round(w: Any, name: str, chosen: Any, limits: Any, from_: Optional[str],
           sysfs_root: Optional[str], timeout: float, textfile: Optional[str], talk: bool,
           client: Any, state: Dict[str, Any]) -> None:
    """One round: check, textfile, labels and condition (sent, or printed)."""
    from .. import output, snapshot

    def take() -> Any:
        return snapshot.open_input(snapshot.Input(
            path=from_, sysfs_root=sysfs_root, timeout=timeout, require="check",
            command="watch", want=snapshot.MODEL_AND_DOCUMENT))

    r = w.check_once(take, chosen, limits, from_ or name)
    say(f"nvtopo watch: {name}: {r.verdict or 'not checked'}: {r.message}"[:400])
    if textfile and r.textfile is not None:
        try:
            output.write(r.textfile, textfile)
        except NvtopoError as e:
            say(f"nvtopo watch: {e}")
    if not talk:
        return
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cond = w.condition(r.verdict, r.message, now, now)
    if state["status"] == cond["status"]:
        cond["lastTransitionTime"] = state["since"]
    else:
        state["status"], state["since"] = cond["status"], now
    for method, path, ctype, body in w.requests(name, w.node_labels(r.facts, r.verdict), cond):
        if client is None:
            print(json.dumps({"method": method, "path": path, "content_type": ctype,
                              "body": body}, sort_keys=True), flush=True)
            continue
        code, answer = client.send(method, path, ctype, body)
        if not 200 <= code < 300:
            say(f"nvtopo watch: {method} {path}: "
                + (f"HTTP {code}" if code else "no answer") + f": {answer[:200]}")
