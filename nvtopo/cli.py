"""The command line: parses options and calls the library.  Nothing else lives here."""

from __future__ import annotations

import enum
import functools
import json
import sys
from typing import Any, Callable, Optional, TypeVar

import typer

from . import __version__
from .errors import ExitStatus, NvtopoError
from .probes import ProbeOptions

F = TypeVar("F", bound=Callable[..., Any])

app = typer.Typer(
    name="nvtopo",
    help=(
        "How a GPU node is wired, and whether the wiring is what it should be.\n\n"
        "Every command probes this machine, or reads a saved file with --from FILE: "
        "a snapshot written by `nvtopo snapshot`, or a bare `nvidia-smi topo -m` text "
        "pasted from a ticket (- reads standard input).\n\n"
        "Examples:\n\n"
        "  nvtopo show --example dgx-h100\n\n"
        "  nvtopo show --from ticket-1234.txt\n\n"
        "  nvidia-smi topo -m | nvtopo show --from -\n\n"
        "  nvtopo snapshot -o node17.json\n\n"
        "Exit status: 0 ok, 1 findings (check), 2 bad input or no data."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class Format(str, enum.Enum):
    table = "table"
    json = "json"


FROM_HELP = ("Read this file instead of probing: a snapshot, or a pasted `nvidia-smi topo` "
             "text (recognised by content). '-' reads standard input.")
#: Longest --timeout accepted (an hour): a bounded wait, and no overflow in thread joins.
MAX_TIMEOUT = 3600.0
TIMEOUT_HELP = "Seconds before a hung nvidia-smi is given up (live probing only)."
SYSFS_ROOT_HELP = ("Read this directory as /sys (live probing only): a host /sys mounted "
                   "elsewhere in a container, or a copied tree audited offline.")


def _probe_options(timeout: float, sysfs_root: Optional[str], from_: Optional[str],
                   command: str) -> ProbeOptions:
    """Options for live probing; checks ``--sysfs-root`` (exit 2 when it is no sysfs tree)."""
    if sysfs_root is not None:
        if from_ is not None:
            raise NvtopoError("use either --from or --sysfs-root, not both", where=command)
        from .probes import sysfs

        sysfs.check_root(sysfs_root)
    return ProbeOptions(timeout=timeout, sysfs_root=sysfs_root)


def _say(line: str) -> None:
    """One line on stderr, flushed (test runners and pipes must see it)."""
    sys.stdout.flush()
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _err(message: str) -> None:
    _say(f"nvtopo: error: {message}")


def handles_errors(fn: F) -> F:
    """Turn :class:`NvtopoError` into one line on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NvtopoError as exc:
            _err(str(exc))
            raise typer.Exit(int(ExitStatus.ERROR)) from None
        except BrokenPipeError:
            raise typer.Exit(int(ExitStatus.OK)) from None

    return wrapper  # type: ignore[return-value]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"nvtopo {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """nvtopo: GPU node topology."""


def _console() -> Any:
    import os

    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # The reader went away (`| head`): not a failure of ours, and exit 1 means findings.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(int(ExitStatus.OK))

    return _Console(highlight=False)


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")
    sys.stdout.flush()


@app.command()
@handles_errors
def show(
    from_: Optional[str] = typer.Option(None, "--from", "-f", metavar="FILE", help=FROM_HELP),
    example: Optional[str] = typer.Option(
        None, "--example", metavar="NAME",
        help="Show a bundled example instead of this machine (dgx-h100)."),
    fmt: Format = typer.Option(Format.table, "--format", help="table (Rich) or json (the model)."),
    timeout: float = typer.Option(30.0, "--timeout", min=0.1, max=MAX_TIMEOUT, help=TIMEOUT_HELP),
    sysfs_root: Optional[str] = typer.Option(None, "--sysfs-root", metavar="DIR",
                                             help=SYSFS_ROOT_HELP),
) -> None:
    """Show the topology matrix, GPUs, NICs, legend and a summary.

    Colours follow path quality: NV# (NVLink) strongest, then PIX, PXB, PHB,
    NODE, and SYS weakest.  Wide matrices are split into GPU↔GPU, GPU↔NIC and
    NIC↔NIC blocks that fit the terminal.

    Examples:

      nvtopo show --example dgx-h100

      nvtopo show --from node17.json --format json

      nvidia-smi topo -m | nvtopo show --from -
    """
    from . import snapshot
    from .render import matrix

    if from_ is not None and example is not None:
        raise NvtopoError("use either --from or --example, not both", where="show")
    if example is not None and sysfs_root is not None:
        raise NvtopoError("use either --example or --sysfs-root, not both", where="show")
    options = _probe_options(timeout, sysfs_root, from_, "show")
    if example is not None:
        topo = snapshot.from_example(example)
    elif from_ is not None:
        topo = snapshot.load(from_)
    else:
        topo = snapshot.live(options)
    if not topo.gpus and topo.matrix is None and topo.p2p is None:
        why = "; ".join(n.message for n in topo.notes) or "no GPU facts"
        raise NvtopoError(f"nothing to show: {why}", where=topo.origin.get("file") or "input")
    if fmt is Format.json:
        _print_json(topo.to_dict())
    else:
        matrix.print_topology(topo, _console())


@app.command("snapshot")
@handles_errors
def snapshot_cmd(
    output: Optional[str] = typer.Option(
        None, "--output", "-o", metavar="FILE",
        help="Write the snapshot here (atomically: temporary file, then rename). "
             "Default: standard output."),
    from_: Optional[str] = typer.Option(
        None, "--from", "-f", metavar="FILE",
        help="Turn a pasted `nvidia-smi topo` text (or a snapshot) into a snapshot file "
             "instead of probing. '-' reads standard input."),
    timeout: float = typer.Option(30.0, "--timeout", min=0.1, max=MAX_TIMEOUT, help=TIMEOUT_HELP),
    sysfs_root: Optional[str] = typer.Option(None, "--sysfs-root", metavar="DIR",
                                             help=SYSFS_ROOT_HELP),
) -> None:
    """Record the raw evidence of every probe in one JSON file.

    The snapshot keeps what each probe saw (command, arguments, exit status,
    stdout, stderr, duration, or why it could not run), not conclusions: every
    command re-derives the model from it with --from, on any machine.

    Examples:

      nvtopo snapshot -o /var/lib/nvtopo/$(hostname).json

      nvtopo snapshot --from ticket-1234.txt -o node17.json
    """
    from . import snapshot

    options = _probe_options(timeout, sysfs_root, from_, "snapshot")
    if from_ is not None:
        doc = snapshot.load_document(from_)
    else:
        doc = snapshot.take(options)
        for name, ev in doc["probes"].items():
            if ev.get("status") != "ok":
                _say(f"nvtopo: note: {name}: {ev.get('error')} (recorded)")
    text = snapshot.dumps(doc)
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        snapshot.write_atomic(text, output)
        _say(f"nvtopo: wrote {output}")


# --- links: per-GPU NVLink state from NVML (issue #3) ----------------------------------------


@app.command()
@handles_errors
def links(
    from_: Optional[str] = typer.Option(
        None, "--from", "-f", metavar="FILE",
        help="Read a snapshot (with NVML evidence) or pasted `nvidia-smi nvlink -s/-e/-c/-R` "
             "or `nvidia-smi -q` text instead of probing. '-' reads standard input."),
    gpu: Optional[int] = typer.Option(None, "--gpu", min=0, metavar="N",
                                      help="Only this GPU (NVML index)."),
    fmt: Format = typer.Option(Format.table, "--format", help="table (Rich) or json."),
    timeout: float = typer.Option(30.0, "--timeout", min=0.1, max=MAX_TIMEOUT,
                                  help="Seconds before the NVML probe is given up (live only)."),
) -> None:
    """Show every NVLink of every GPU: state, version, speed, remote end, error counters.

    States: active; inactive (unused by design: MIG, a bridge using part of the
    links, no peer attached); down (a link that should be up is not); not_supported
    (no NVLink on this GPU); unknown.  The rule that decided is printed.
    Nonzero error counters are shown in red.

    Examples:

      nvtopo links

      nvtopo links --from node17.json --gpu 3

      nvidia-smi nvlink -s | nvtopo links --from -
    """
    from . import snapshot
    from .probes import nvml
    from .render import links as render_links

    if from_ is not None:
        topo = snapshot.load(from_)
        where = topo.origin.get("file") or from_
    else:
        evidence = nvml.capture(ProbeOptions(timeout=timeout))
        if evidence["status"] == "unavailable":
            raise NvtopoError(f"{evidence['error']}; to read a saved file instead: "
                              "nvtopo links --from FILE", where="live probe")
        topo = nvml.derive(evidence)
        where = "live probe"
        if evidence["status"] == "timeout":
            _say(f"nvtopo: warning: {evidence['error']}")
    doc = render_links.links_doc(topo, gpu=gpu, where=where)
    if fmt is Format.json:
        _print_json(doc)
    else:
        render_links.print_links(doc, _console())

# --- nvtopo ib: InfiniBand / RoCE ports from sysfs (issue #4) -------------------------------


@app.command("ib")
@handles_errors
def ib_cmd(
    from_: Optional[str] = typer.Option(
        None, "--from", "-f", metavar="FILE",
        help="Read a snapshot (taken by `nvtopo snapshot`, with sysfs evidence) instead of "
             "probing. '-' reads standard input."),
    sysfs_root: Optional[str] = typer.Option(None, "--sysfs-root", metavar="DIR",
                                             help=SYSFS_ROOT_HELP),
    fmt: Format = typer.Option(Format.table, "--format",
                               help="table (Rich) or json (the ib document)."),
    timeout: float = typer.Option(30.0, "--timeout", min=0.1, max=MAX_TIMEOUT,
                                  help="Seconds of sysfs reading before the rest is given up "
                                       "(a failing HCA can stall counter reads)."),
) -> None:
    """One row per InfiniBand/RoCE port: state, rate, link layer, netdev, PCI, NUMA,
    nearest GPU and nonzero error counters.

    Reads /sys without root and without external tools (or DIR with
    --sysfs-root).  InfiniBand vs RoCE is decided per port from link_layer.

    Examples:

      nvtopo ib

      nvtopo ib --sysfs-root /host/sys --format json

      nvtopo ib --from node17.json
    """
    from . import snapshot
    from .probes import host, sysfs
    from .render import ib

    if from_ is not None:
        _probe_options(timeout, sysfs_root, from_, "ib")
        topo = snapshot.load(from_)
        if not ib.has_sysfs(topo):
            raise NvtopoError("holds no sysfs evidence (take a snapshot with `nvtopo snapshot` "
                              "on the node, or read a copied tree with --sysfs-root DIR)",
                              where=topo.origin.get("file") or from_)
    else:
        options = _probe_options(timeout, sysfs_root, None, "ib")
        root = options.sysfs_root or sysfs.DEFAULT_ROOT
        why = sysfs.why_not_sysfs(root)
        if why:
            raise NvtopoError(f"is not a sysfs tree ({why}); use --sysfs-root DIR or --from FILE",
                              where=root)
        doc = {"probes": {sysfs.SOURCE: sysfs.capture(options),
                          host.SOURCE: host.capture(options)}}
        topo = snapshot.derive(doc, where=None)
        topo.origin = {"kind": "live", "sysfs_root": root}
    if fmt is Format.json:
        _print_json(ib.document(topo))
    else:
        ib.print_ib(topo, _console())


def run() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("nvtopo: interrupted\n")
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    run()
