"""``nvtopo collect``: every node's snapshot, through Slurm or Ray, into one directory."""

from typing import Any, Dict, List, Optional

import typer

from .io import handles_errors, say
from .options import quiet_option

app = typer.Typer(
    help="Collect every node's snapshot through Slurm (srun) or Ray into one directory: "
         "DIR/<node>.json.gz and DIR/collect.json, which names the nodes that did not "
         "answer and why.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]})

_DIR_HELP = ("The directory to collect into (created if its parent exists): "
             "DIR/<node>.json.gz per node that answered, DIR/collect.json the manifest. "
             "An earlier collection's file for a node that does not answer now is removed.")
_TIMEOUT_HELP = "Seconds each probe on a node may take (as `nvtopo snapshot --timeout`)."
_LIMIT_HELP = ("Seconds the whole run on a node may take; past it the node counts as timed "
               "out. Default: --timeout + 30.")
_COMMAND_HELP = ("The nvtopo the nodes run, as a command line split like a shell's words "
                 "(no shell runs it), e.g. '/opt/nvtopo/bin/nvtopo'. Default: this Python "
                 "running nvtopo's entry point, whatever the working directory holds (a "
                 "shared installation, or the same image everywhere).")


def _seconds(option: str, low: float = 0.1, high: float = 86400.0) -> Any:
    """A parser for a number of seconds from ``low`` to ``high`` (one error line, exit 2)."""
    def parse(value: Any) -> Optional[float]:
        from ..errors import ExitStatus
        from ..safe import ascii_float, printable
        from .io import err

        if value is None:
            return None
        seconds = ascii_float(value)
        if seconds is not None and low <= seconds <= high:
            return seconds
        err(f"{option}: '{printable(str(value))[:40]}' is not a number of seconds from "
            f"{low:g} to {high:g}")
        raise typer.Exit(int(ExitStatus.ERROR))
    return parse


def _timeout_option() -> Any:
    """``--timeout`` of ``collect slurm`` and ``collect ray``."""
    return typer.Option(30.0, "--timeout", metavar="SECONDS",
                        parser=_seconds("--timeout", high=3600.0), help=_TIMEOUT_HELP)


def _node_limit_option() -> Any:
    """``--node-limit`` of ``collect slurm`` and ``collect ray``."""
    return typer.Option(None, "--node-limit", metavar="SECONDS",
                        parser=_seconds("--node-limit"), help=_LIMIT_HELP)


def _command(value: Optional[str]) -> Optional[List[str]]:
    import shlex  # only where --node-command is given: not at every nvtopo start

    from ..errors import NvtopoError

    if value is None:
        return None
    try:
        argv = shlex.split(value)
    except ValueError as exc:
        raise NvtopoError(f"cannot split into words: {exc}", where="--node-command") from None
    if not argv:
        raise NvtopoError("empty command", where="--node-command")
    return argv


def _said(quiet: bool) -> Any:
    """The engine's progress messages (``srun on 8 node(s)``): on standard error, none with
    ``--quiet``."""
    return (lambda line: None) if quiet else (lambda line: say(f"nvtopo: {line}"))


def _collected(command: str, collect: Any, quiet: bool = False) -> None:
    """Run ``collect()`` (a collection, returning its manifest), report it, exit.

    A signal (SIGTERM, SIGHUP, SIGINT) ends a collection in order: the engine's processes
    are ended and the manifest names what came; then the exit status is that of a
    process the signal ended, 128 + its number."""
    import os
    import signal

    from ..commands.collect import collector
    from ..commands.collect.interrupt import Interrupted
    from .io import err

    from ..render.progress import Progress

    try:
        with Progress(f"{command}: waiting for the nodes", quiet=quiet, ticking=True):
            manifest, out_dir = collect()
    except Interrupted as exc:
        err(f"{command}: interrupted by {exc.name} before any node was asked; nothing was "
            "collected")
        raise typer.Exit(128 + exc.signum) from None
    status = _report(manifest, out_dir)
    if manifest.get("interrupted"):
        name = manifest["interrupted"]
        engine = "srun was ended" if manifest["engine"] == "slurm" else \
            "the Ray tasks were cancelled"
        err(f"{command}: interrupted by {name}: {engine}; "
            f"{os.path.join(out_dir, collector.MANIFEST)} names what was collected")
        status = 128 + int(getattr(signal, name, 15))
    raise typer.Exit(status)


def _report(manifest: Dict[str, Any], out_dir: str) -> int:
    """One line per node that did not answer, a summary line; the exit status."""
    import os

    from ..commands.collect import collector
    from ..safe import printable

    counts = manifest["counts"]
    for node in manifest["nodes"]:
        if node["status"] != "answered":
            typer.echo(printable(f"{node['node']}  {node['status']}  {node.get('reason', '')}"))
    for node in manifest["unexpected"]:
        typer.echo(printable(f"{node['node']}  unexpected  {node['reason']}"))
    for node in manifest.get("mismatched", ()):
        typer.echo(printable(f"{node['node']}  mismatch  {node['reason']}"))
    typer.echo(printable(f"collected {counts['answered']} of {counts['expected']} node(s) "
                         f"into {out_dir}"))
    say(f"nvtopo: wrote {os.path.join(out_dir, collector.MANIFEST)}")
    return collector.exit_status(manifest)


@app.command("slurm")
@handles_errors
def slurm_cmd(
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="DIR",
                                         help=_DIR_HELP),
    nodelist: Optional[str] = typer.Option(
        None, "--nodelist", "-w", metavar="LIST",
        help="The nodes (a Slurm host list: gpu[001-064]). Inside an allocation or with "
             "--jobid: some of its nodes."),
    partition: Optional[str] = typer.Option(
        None, "--partition", "-p", metavar="NAME",
        help="Every node of this partition (a new job; nodes Slurm reports down, drained or "
             "busy are named in the manifest, not started)."),
    jobid: Optional[str] = typer.Option(
        None, "--jobid", metavar="ID", help="Run in this running job, on its nodes (give "
        "--overlap: its steps hold the CPUs)."),
    overlap: bool = typer.Option(False, "--overlap", help="srun --overlap: share the CPUs "
                                 "with the job's other steps (always with --jobid)."),
    gpus_per_node: Optional[int] = typer.Option(
        None, "--gpus-per-node", min=0, max=1024, metavar="N",
        help="Ask Slurm for N GPUs per node: where cgroups constrain devices "
             "(ConstrainDevices=yes) a step without GPUs does not see them."),
    timeout: float = _timeout_option(),
    node_limit: Optional[float] = _node_limit_option(),
    launch_wait: float = typer.Option(
        60.0, "--launch-wait", metavar="SECONDS", parser=_seconds("--launch-wait"),
        help="Seconds Slurm may take to start each step (for a new job, to grant the nodes: "
             "srun --immediate)."),
    batch_size: int = typer.Option(256, "--batch-size", min=1, max=100_000, metavar="N",
                                   help="Nodes per srun step; larger allocations run in "
                                        "several steps, one after another."),
    node_command: Optional[str] = typer.Option(None, "--node-command", metavar="CMD",
                                               help=_COMMAND_HELP),
    quiet: bool = quiet_option(),
) -> None:
    """Every node's snapshot through srun, one task per node.

    Inside an allocation (salloc, sbatch) it runs on the allocation's nodes; outside one,
    on --nodelist's or --partition's nodes in a new job; with --jobid, in that job.
    Each node sends its snapshot back as one checksummed, compressed record on srun's
    standard output; nothing reaches a shell.

    Exit status: 0 every node answered, 1 some did not, or a node's task sent a record
    naming another node (DIR/collect.json says which and why), 2 could not run (no srun,
    no nodes, bad -o), 128+N ended by signal N (SIGTERM, SIGHUP, SIGINT: srun is ended,
    DIR/collect.json names what came).

    Examples:

      salloc -N 64 nvtopo collect slurm -o fleet/

      nvtopo collect slurm --partition gpu -o fleet/ && nvtopo audit fleet/

      nvtopo collect slurm --jobid 4242 --overlap -o fleet/
    """
    from ..commands.collect import collector, slurm

    out_dir = collector.prepare_dir(output, "collect slurm")
    limits = slurm.Limits(timeout=timeout, node_limit=node_limit or timeout + 30.0,
                          launch_wait=launch_wait, batch_size=batch_size)
    selection = slurm.Selection(nodelist=nodelist, partition=partition, jobid=jobid,
                                overlap=overlap, gpus_per_node=gpus_per_node)
    command = _command(node_command)
    _collected("collect slurm", lambda: (slurm.collect(
        out_dir, selection, limits, command,
        progress=_said(quiet)), out_dir), quiet)


@app.command("ray")
@handles_errors
def ray_cmd(
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="DIR",
                                         help=_DIR_HELP),
    address: str = typer.Option("auto", "--address", metavar="ADDRESS",
                                help="The Ray cluster (ray.init's address): auto, or "
                                     "HOST:PORT of its head."),
    timeout: float = _timeout_option(),
    node_limit: Optional[float] = _node_limit_option(),
    launch_wait: float = typer.Option(
        60.0, "--launch-wait", metavar="SECONDS", parser=_seconds("--launch-wait"),
        help="Seconds Ray may take to start the tasks (workers starting)."),
    node_command: Optional[str] = typer.Option(None, "--node-command", metavar="CMD",
                                               help=_COMMAND_HELP),
    quiet: bool = quiet_option(),
) -> None:
    """Every alive Ray node's snapshot, one task pinned to each node.

    Needs Ray: pip install 'nvtopo[ray]'. Each task asks for no CPU (so it runs on a busy
    node), runs nvtopo on its node as a subprocess under the time limit, and returns the
    record through the object store; tasks still running at the deadline are cancelled.

    Exit status: 0 every alive node answered, 1 some did not (DIR/collect.json says which
    and why), 2 could not run (no Ray, no cluster, bad -o).

    Examples:

      nvtopo collect ray -o fleet/

      nvtopo collect ray --address 10.0.0.1:6379 -o fleet/ && nvtopo audit fleet/
    """
    from ..commands.collect import collector, ray as ray_engine

    ray_engine.import_ray()  # no Ray: the one-line error before anything else
    out_dir = collector.prepare_dir(output, "collect ray")
    command = _command(node_command)
    _collected("collect ray", lambda: (ray_engine.collect(
        out_dir, address, timeout, node_limit or timeout + 30.0, command,
        launch_wait=launch_wait, progress=_said(quiet)), out_dir), quiet)


@app.command("node-record", hidden=True)
@handles_errors
def node_record_cmd(
    engine: str = typer.Option("slurm", "--engine", metavar="slurm|ray|none"),
    node: Optional[str] = typer.Option(None, "--node", metavar="NAME"),
    timeout: float = typer.Option(30.0, "--timeout", parser=_seconds("--timeout", high=3600.0)),
    limit: float = typer.Option(60.0, "--limit", parser=_seconds("--limit")),
) -> None:
    """The node side of a collection: this node's snapshot as one record on standard
    output (what `collect slurm` and `collect ray` run on each node)."""
    from ..commands.collect import node as node_side
    from ..errors import NvtopoError

    if engine not in ("slurm", "ray", "none"):
        raise NvtopoError(f"'{engine[:20]}' is not slurm, ray or none", where="--engine")
    raise typer.Exit(node_side.run(engine, node, timeout, limit))
