"""The command line: parses options and calls the library.  Nothing else lives here."""


import enum
import functools
import json
import sys
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar

import typer

from . import __version__
from .errors import ExitStatus, NvtopoError
from .probes import ProbeOptions
from .safe import printable

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


class ShowFormat(str, enum.Enum):
    table = "table"
    json = "json"
    svg = "svg"
    html = "html"
    rich_svg = "rich-svg"


class CheckFormat(str, enum.Enum):
    table = "table"
    json = "json"
    prometheus = "prometheus"
    svg = "svg"
    html = "html"
    rich_svg = "rich-svg"


OUTPUT_HELP = ("Write to FILE instead of standard output: a file atomically (a temporary file "
               "in the same directory, then a rename; a link's target, keeping its mode), a "
               "device or FIFO directly. '-': standard output.")


def _check_output(output: Optional[str]) -> None:
    """An ``-o`` value that cannot be written (empty, a directory, a file in a directory
    that does not exist) fails before any probing."""
    from . import output as output_mod

    output_mod.check(output)


def _emit(text: str, output: Optional[str], wrote: str = "") -> None:
    """``text`` to standard output, or to ``output``: a file atomically, a device or FIFO
    directly (see :mod:`nvtopo.output`); a file written is said on standard error."""
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from . import snapshot

    if snapshot.write_atomic(text, output):
        _say(f"nvtopo: wrote {output}{wrote}")


FROM_HELP = ("Read this file instead of probing: a snapshot, or a pasted `nvidia-smi topo` "
             "text (recognised by content). '-' reads standard input.")
#: Longest --timeout accepted (an hour): a bounded wait, and no overflow in thread joins.
MAX_TIMEOUT = 3600.0
TIMEOUT_HELP = "Seconds before a hung nvidia-smi is given up (live probing only)."
#: Shortest --timeout accepted.
MIN_TIMEOUT = 0.1


def _timeout_seconds(value: Any) -> float:
    """The ``--timeout`` value: a plain decimal number of seconds, MIN_TIMEOUT to MAX_TIMEOUT.

    Anything else (``nan``, ``inf``, ``1e309``, a negative or non-ASCII number, a word) is
    one error line and exit status 2, before any probing.  Click's own range check lets NaN
    through (every comparison with NaN is false), so the check is made here.
    """
    from .safe import ascii_float, printable

    seconds = ascii_float(value)
    if seconds is not None and MIN_TIMEOUT <= seconds <= MAX_TIMEOUT:
        return seconds
    shown = printable(value)
    shown = shown if len(shown) <= 40 else shown[:40] + "..."
    _err(str(NvtopoError(f"'{shown}' is not a number of seconds from {MIN_TIMEOUT:g} to "
                         f"{MAX_TIMEOUT:g}", where="--timeout")))
    raise typer.Exit(int(ExitStatus.ERROR))


def _timeout_option(help: str = TIMEOUT_HELP) -> Any:
    return typer.Option(30.0, "--timeout", parser=_timeout_seconds, metavar="SECONDS",
                        help=f"{help} [{MIN_TIMEOUT:g} to {MAX_TIMEOUT:g}]")


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
    """One line on stderr, flushed (test runners and pipes must see it).  One line
    whatever it quotes: file names and evidence may hold newlines and escapes."""
    sys.stdout.flush()
    sys.stderr.write(printable(line) + "\n")
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

    # Renderers hand Rich Text objects, never markup; a str that slipped through is printed
    # as it is, not parsed (no [link=...] from data, no :emoji: codes).
    return _Console(highlight=False, markup=False, emoji=False)


def _print_json(data: Any) -> None:
    # ensure_ascii: control characters and lone surrogates (valid JSON "\ud800") are written
    # as \uXXXX escapes, so the document can always be encoded and never moves the terminal
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=True) + "\n")
    sys.stdout.flush()


@app.command()
@handles_errors
def show(
    from_: Optional[str] = typer.Option(None, "--from", "-f", metavar="FILE", help=FROM_HELP),
    example: Optional[str] = typer.Option(
        None, "--example", metavar="NAME",
        help="Show a bundled example instead of this machine (dgx-h100)."),
    fmt: ShowFormat = typer.Option(
        ShowFormat.table, "--format",
        help="table (Rich), json (the model), svg (a topology picture), html or rich-svg "
             "(the table view as an HTML page or an SVG of the terminal)."),
    timeout: float = _timeout_option(),
    sysfs_root: Optional[str] = typer.Option(None, "--sysfs-root", metavar="DIR",
                                             help=SYSFS_ROOT_HELP),
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE",
                                         help=OUTPUT_HELP),
) -> None:
    """Show the topology matrix, GPUs, NICs, legend and a summary.

    Colours follow path quality: NV# (NVLink) strongest, then PIX, PXB, PHB,
    NODE, and SYS weakest.  Wide matrices are split into GPU↔GPU, GPU↔NIC and
    NIC↔NIC blocks that fit the terminal.

    Examples:

      nvtopo show --example dgx-h100

      nvtopo show --from node17.json --format json

      nvidia-smi topo -m | nvtopo show --from -

      nvtopo show --from node17.json --format svg -o node17.svg
    """
    from . import snapshot
    from .render import matrix

    _check_output(output)
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
    if fmt is ShowFormat.table and output in (None, "-"):
        matrix.print_topology(topo, _console())
    elif fmt is ShowFormat.json:
        _emit(json.dumps(topo.to_dict(), indent=2) + "\n", output)
    else:
        from .render import export

        _emit(export.show_document(topo, fmt.value), output)


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
    timeout: float = _timeout_option(),
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

    _check_output(output)
    options = _probe_options(timeout, sysfs_root, from_, "snapshot")
    if from_ is not None:
        doc = snapshot.load_document(from_)
    else:
        doc = snapshot.take(options)
        for name, ev in doc["probes"].items():
            if ev.get("status") != "ok":
                _say(f"nvtopo: note: {name}: {ev.get('error')} (recorded)")
    _emit(snapshot.dumps(doc), output)


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
    timeout: float = _timeout_option(
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
    timeout: float = _timeout_option(
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


# --- check and layouts: is the wiring what it should be? (issue #5) -------------------------


def _check_input(from_: Optional[str], sysfs_root: Optional[str], timeout: float) -> Any:
    from . import snapshot

    options = _probe_options(timeout, sysfs_root, from_, "check")
    if from_ is not None:
        topo = snapshot.load(from_)
    else:
        topo = snapshot.live(options)
    if not topo.gpus and topo.matrix is None and topo.p2p is None:
        why = "; ".join(n.message for n in topo.notes) or "no GPU facts"
        raise NvtopoError(f"nothing to check: {why}", where=topo.origin.get("file") or "input")
    return topo


def _check_input_recorded(from_: Optional[str], sysfs_root: Optional[str],
                          timeout: float) -> Tuple[Any, Dict[str, float]]:
    """:func:`_check_input`, and how long each probe took (the snapshot's ``duration_s``)."""
    from . import snapshot
    from .render import prometheus as prom

    options = _probe_options(timeout, sysfs_root, from_, "check")
    doc: Dict[str, Any] = {}
    if from_ is not None:
        topo, doc = snapshot.load_with_document(from_)
    else:
        doc = snapshot.take(options)
        topo = snapshot.derive(doc, where=None)
        topo.origin = {"kind": "live"}
    if not topo.gpus and topo.matrix is None and topo.p2p is None:
        why = ((doc.get("probes") or {}).get("topo-text") or {}).get("error") if from_ is None \
            else None
        why = why or "; ".join(n.message for n in topo.notes) or "no GPU facts"
        raise NvtopoError(f"nothing to check: {why}",
                          where=topo.origin.get("file") or ("live probe" if from_ is None
                                                            else "input"))
    return topo, prom.probe_durations(doc)


@app.command("check")
@handles_errors
def check_cmd(
    from_: Optional[str] = typer.Option(None, "--from", "-f", metavar="FILE", help=FROM_HELP),
    sysfs_root: Optional[str] = typer.Option(None, "--sysfs-root", metavar="DIR",
                                             help=SYSFS_ROOT_HELP),
    layout: str = typer.Option(
        "auto", "--layout", "-l", metavar="NAME|auto",
        help="The layout to check against (`nvtopo layouts` lists them); auto picks by GPU "
             "name and count, else by the shape of the matrix."),
    layout_file: Optional[str] = typer.Option(
        None, "--layout-file", metavar="FILE",
        help="Check against your own layout file (JSON; see `nvtopo layouts capture`)."),
    fmt: CheckFormat = typer.Option(
        CheckFormat.table, "--format",
        help="table (Rich), json, prometheus (node_exporter textfile format), svg (the "
             "topology picture with faulty elements marked), html or rich-svg (the table "
             "view exported)."),
    timeout: float = _timeout_option(),
    output: Optional[str] = typer.Option(None, "--output", "-o", metavar="FILE",
                                         help=OUTPUT_HELP),
) -> None:
    """Check the node against its expected layout: GPUs, NVLink, fabric, P2P, PCIe, NICs,
    InfiniBand/RoCE ports, NUMA, and sources that disagree.

    One fault gives one error finding (a link down is not also reported as its
    NV17 pairs).  Unknown facts are never errors: they are listed as not checked.

    Exit status: 0 no error finding (warnings allowed), 1 at least one error,
    2 could not run (bad input, no data, bad layout file).

    Examples:

      nvtopo check

      nvtopo check --from node17.json --layout dgx-h100

      nvtopo check --from ticket.txt --layout-file mynode.json --format json

      nvtopo check --format prometheus -o /var/lib/node_exporter/textfile/nvtopo.prom
    """
    from . import checks
    from .render import check as render_check

    if layout != "auto" and layout_file is not None:
        raise NvtopoError("use either --layout or --layout-file, not both", where="check")
    if layout != "auto":
        from . import layouts as layouts_pkg

        layouts_pkg.load(layout)  # a bad name fails before probing
    elif layout_file is not None:
        from . import layouts as layouts_pkg

        layouts_pkg.load_file(layout_file)
    _check_output(output)
    durations: Dict[str, float] = {}
    if fmt is CheckFormat.prometheus:
        topo, durations = _check_input_recorded(from_, sysfs_root, timeout)
    else:
        topo = _check_input(from_, sysfs_root, timeout)
    report = checks.select_and_run(topo, layout, layout_file)
    if fmt is CheckFormat.table and output in (None, "-"):
        render_check.print_check(report, _console())
    elif fmt is CheckFormat.json:
        _emit(json.dumps(report.document(), indent=2) + "\n", output)
    else:
        from .render import export

        _emit(export.check_document(report, topo, fmt.value, durations=durations), output)
    raise typer.Exit(report.exit_status)


layouts_app = typer.Typer(
    help="Expected layouts: list them, show one, or capture one from a known-good node.",
    invoke_without_command=True, no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]})
app.add_typer(layouts_app, name="layouts")


@layouts_app.callback()
@handles_errors
def layouts_list(
    ctx: typer.Context,
    fmt: Format = typer.Option(Format.table, "--format", help="table (Rich) or json."),
) -> None:
    """List the bundled layouts (name, title, GPUs, NV#, compute NICs).

    Examples:

      nvtopo layouts

      nvtopo layouts show dgx-h100

      nvtopo layouts capture --from good-node.json --name mynode > mynode.json
    """
    if ctx.invoked_subcommand is not None:
        return
    from . import layouts as layouts_pkg
    from .render import check as render_check

    rows = [layouts_pkg.load(n).summary() for n in layouts_pkg.names()]
    if fmt is Format.json:
        _print_json(rows)
    else:
        render_check.print_layouts(rows, _console())


@layouts_app.command("show")
@handles_errors
def layouts_show(
    name: Optional[str] = typer.Argument(None, metavar="NAME", help="A bundled layout."),
    layout_file: Optional[str] = typer.Option(None, "--layout-file", metavar="FILE",
                                              help="Show (and validate) your own file."),
) -> None:
    """Print one layout as JSON (the file format: nvtopo/layouts/SCHEMA.md)."""
    from . import layouts as layouts_pkg

    if (name is None) == (layout_file is None):
        raise NvtopoError("give a layout NAME or --layout-file FILE", where="layouts show")
    lay = layouts_pkg.load(name) if name is not None else layouts_pkg.load_file(layout_file)
    _print_json(lay.data)


@layouts_app.command("capture")
@handles_errors
def layouts_capture(
    from_: Optional[str] = typer.Option(None, "--from", "-f", metavar="FILE", help=FROM_HELP),
    name: Optional[str] = typer.Option(None, "--name", metavar="NAME",
                                       help="Layout name (default: the host name, or "
                                            "'captured')."),
    sysfs_root: Optional[str] = typer.Option(None, "--sysfs-root", metavar="DIR",
                                             help=SYSFS_ROOT_HELP),
    timeout: float = _timeout_option(),
) -> None:
    """Write a layout from a known-good node (this one, or --from FILE) to standard output.

    It states only what the input knows (a topo text: GPUs, NV#, NUMA; a
    snapshot adds names, links, NICs, PCIe). Check other nodes against it with
    --layout-file.

    Example:

      nvtopo layouts capture --from good.json --name rack7 > rack7.json
    """
    import re

    from .layouts import capture as cap
    from .layouts import validate

    topo = _check_input(from_, sysfs_root, timeout)
    nm = name or str(topo.host.get("hostname") or "captured")
    nm = re.sub(r"[^\w.-]", "-", nm).lstrip(".-_") or "captured"
    doc = cap.capture(topo, nm, topo.origin.get("file") or "live probe")
    validate(doc, "captured layout")
    _print_json(doc)


# --- simulate: synthetic snapshots of healthy or faulty nodes (issue #5) ---------------------

from typing import List as _List  # noqa: E402 (kept with the simulate section)


@app.command("simulate")
@handles_errors
def simulate_cmd(
    layout: Optional[str] = typer.Argument(
        None, metavar="LAYOUT", help="A bundled layout (`nvtopo layouts` lists them)."),
    fault: Optional[_List[str]] = typer.Option(
        None, "--fault", metavar="SPEC",
        help="Inject a fault (repeatable): nvlink-down:GPU3:7, nvlink-degraded:GPU2-GPU6, "
             "gpu-missing:GPU7, ib-port-down:mlx5_4, ib-rate:mlx5_1:200, pcie-width:GPU5:8, "
             "pcie-gen:GPU5:3, nic-affinity-swap:mlx5_0:mlx5_3, fabric-not-started, "
             "counters:mlx5_2:symbol_error=1000, peermem-missing."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed for hostname, UUIDs, serials, "
                             "GUIDs: the same seed gives the same file."),
    hostname: Optional[str] = typer.Option(None, "--hostname", metavar="NAME",
                                           help="Hostname written into the snapshot."),
    layout_file: Optional[str] = typer.Option(None, "--layout-file", metavar="FILE",
                                              help="Simulate a node of this layout file."),
    output: Optional[str] = typer.Option(
        None, "--output", "-o", metavar="FILE",
        help="Write the snapshot here (atomically). '-' or none: standard output."),
) -> None:
    """Write a synthetic snapshot of a node of LAYOUT: healthy, or with faults injected.

    Every source is simulated consistently (the `topo -m` text, the NVML
    recording made by the real NVML probe against a fake NVML library, the
    sysfs evidence read by the real sysfs traversal), so a healthy node
    derives without disagreements.  What the layout does not state is given a
    plausible default, listed under "simulated" in the file.

    Examples:

      nvtopo simulate dgx-h100 -o good.json

      nvtopo simulate dgx-h100 --fault nvlink-down:GPU3:7 -o bad.json && nvtopo check --from bad.json

      nvtopo simulate dgx-1-v100 --fault gpu-missing:GPU7 --fault ib-rate:mlx5_1:50 --seed 7
    """
    from . import simulate as sim
    from . import snapshot
    from .simulate import machine as sim_machine

    if hostname is not None and not hostname.strip():
        raise NvtopoError("--hostname is empty", where="simulate")
    _check_output(output)
    lay = sim_machine.load_layout(layout, layout_file)
    doc = sim.simulate(lay, list(fault or []), seed=seed, hostname=hostname)
    _emit(snapshot.dumps(doc), output, f" (simulated {lay.name}"
          + (f", faults: {', '.join(doc['simulated']['faults'])}"
             if doc["simulated"]["faults"] else ", healthy") + ")")


# --- audit: many saved snapshots at once (issue #6) -----------------------------------------


class AuditFormat(str, enum.Enum):
    table = "table"
    json = "json"
    prometheus = "prometheus"


@app.command("audit")
@handles_errors
def audit_cmd(
    paths: _List[str] = typer.Argument(
        ..., metavar="PATH...",
        help="Snapshots or topo texts: files, directories (recursive: *.json, *.txt, *.topo, "
             "*.log, *.out) or glob patterns ('fleet/**/*.json', quoted)."),
    layout: str = typer.Option("auto", "--layout", "-l", metavar="NAME|auto",
                               help="Check every node against this layout (default: each "
                                    "node's own, as `nvtopo check` picks it)."),
    layout_file: Optional[str] = typer.Option(None, "--layout-file", metavar="FILE",
                                              help="Check every node against your layout file."),
    fmt: AuditFormat = typer.Option(AuditFormat.table, "--format",
                                    help="table (Rich), json (streamed) or prometheus."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, metavar="N",
                                       help="Worker processes (default: every core; 1 checks "
                                            "in this process)."),
) -> None:
    """Check a fleet of saved snapshots: one row per node, a summary by finding code, and
    the files that could not be read.

    Files are streamed through worker processes (memory stays flat however many
    there are); each is checked exactly as `nvtopo check --from FILE` would.
    A progress bar is shown on a terminal (on standard error).

    Exit status: 0 no node fails, 1 at least one node fails, 2 nothing could
    be read (or a bad layout name or file).

    Examples:

      nvtopo audit /var/lib/nvtopo/

      nvtopo audit 'snapshots/**/*.json' --format json --jobs 8

      nvtopo audit rack7/ --layout-file rack7.json --format prometheus > audit.prom
    """
    from . import audit
    from .render import audit as render_audit

    if layout != "auto" and layout_file is not None:
        raise NvtopoError("use either --layout or --layout-file, not both", where="audit")
    if layout != "auto":
        from . import layouts as layouts_pkg

        layouts_pkg.load(layout)
    elif layout_file is not None:
        from . import layouts as layouts_pkg

        layouts_pkg.load_file(layout_file)
    results = audit.run(paths, layout=layout, layout_file=layout_file, jobs=jobs,
                        with_findings=fmt is AuditFormat.json)
    summary = audit.Summary()
    progress = None
    # the bar goes to standard error; streamed output (table, JSON) on a terminal shows its
    # own progress
    if sys.stderr.isatty() and not (fmt is not AuditFormat.prometheus and sys.stdout.isatty()):
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeRemainingColumn)

        total = sum(1 for _ in audit.expand(paths))
        progress = Progress(TextColumn("auditing"), BarColumn(), MofNCompleteColumn(),
                            TimeRemainingColumn(), console=Console(stderr=True),
                            transient=True, redirect_stdout=False, redirect_stderr=False)
        task = progress.add_task("audit", total=total)

        def ticking(it: Any) -> Any:
            for r in it:
                progress.advance(task)
                yield r
        results = ticking(results)
        progress.start()
    try:
        if fmt is AuditFormat.json:
            render_audit.stream_json(results, summary, sys.stdout)
        elif fmt is AuditFormat.table:
            printer = render_audit.TablePrinter(_console())
            for r in results:
                summary.add(r)
                printer.add(r)
            if progress is not None:
                progress.stop()
                progress = None
            printer.finish(summary)
        else:
            # the exposition groups samples by family: one compact row per node is kept
            rows = []
            for r in results:
                summary.add(r)
                rows.append(render_audit.compact(r, keep_codes=True))
            if progress is not None:
                progress.stop()
                progress = None
            render_audit.print_prometheus(rows, summary, sys.stdout)
    finally:
        if progress is not None:
            progress.stop()
    if summary.verdicts.get("pass", 0) + summary.verdicts.get("fail", 0) == 0:
        _err("audit: nothing could be read" if summary.files else "audit: no input files")
    raise typer.Exit(summary.exit_status())


# --- diff: what changed on one node between two snapshots (issue #6) -------------------------


@app.command("diff")
@handles_errors
def diff_cmd(
    a: str = typer.Argument(..., metavar="A", help="The earlier snapshot (or topo text)."),
    b: str = typer.Argument(..., metavar="B", help="The later snapshot (or topo text)."),
    fmt: Format = typer.Option(Format.table, "--format", help="table (Rich) or json."),
) -> None:
    """What changed on a node between two snapshots: GPUs and NICs added or removed, NVLink
    pairs and link states, fabric, IB port states and rates, PCIe links, error counters
    (deltas; a counter that went down was reset), GPU-NIC paths, and the check verdict
    (with the findings new in B and gone since A).

    Exit status: 0 nothing changed, 1 something changed, 2 bad input.  Snapshots
    of two different hosts are compared with a warning.

    Examples:

      nvtopo diff last-good.json now.json

      nvtopo diff node17-monday.json node17-today.json --format json
    """
    from . import diff as diff_mod
    from .render import diff as render_diff

    d = diff_mod.diff_files(a, b)
    for w in d.warnings:
        _say(f"nvtopo: warning: {w}")
    doc = d.to_dict()
    if fmt is Format.json:
        _print_json(doc)
    else:
        render_diff.print_diff(doc, _console())
    raise typer.Exit(int(ExitStatus.FINDINGS if d.changed else ExitStatus.OK))


def run() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("nvtopo: interrupted\n")
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    run()
