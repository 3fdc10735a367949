"""The command line: parses options and calls the library.  Nothing else lives here.

One module per command (``show``, ``snapshot``, ``links``, ``ib``, ``check``, ``checks``,
``layouts``, ``simulate``, ``audit``, ``diff``, ``collect``); the options they share are declared once in
:mod:`.options`, the terminal plumbing (one-line errors, JSON, tables, ``-o``) is in
:mod:`.io`.  Input is opened by :func:`nvtopo.snapshot.open_input`, never here: the CLI
imports no probe.  Each command imports what it uses when it runs, so ``check --format
json`` loads neither Rich nor a probe it does not need.

The command modules do not use ``from __future__ import annotations``: typer would then
evaluate every parameter's annotation string at each start (1.4 ms of the 100 ms a
``check`` takes).
"""

import sys

import typer

from .. import __version__
from . import (audit, check, checks, cluster, collect, diff, ib, layouts, links, show, simulate,
               snapshot)

app = typer.Typer(
    name="nvtopo",
    help=(
        "How a GPU node is wired, and whether the wiring is what it should be.\n\n"
        "Every command probes this machine, or reads a saved file with --from FILE: "
        "a snapshot written by `nvtopo snapshot`, a bare `nvidia-smi topo -m` text, or "
        "`nvidia-smi nvlink`/`-q` text pasted from a ticket (recognised by content; "
        "- reads standard input).\n\n"
        "Examples:\n\n"
        "  nvtopo show --example dgx-h100\n\n"
        "  nvtopo show --from ticket-1234.txt\n\n"
        "  nvidia-smi topo -m | nvtopo show --from -\n\n"
        "  nvtopo snapshot -o node17.json\n\n"
        "Exit status: 0 ok, 1 findings (check), 2 bad input or no data."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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


app.command("show")(show.show)
app.command("snapshot")(snapshot.snapshot_cmd)
app.command("links")(links.links)
app.command("ib")(ib.ib_cmd)
app.command("check")(check.check_cmd)
app.command("checks")(checks.checks_cmd)
app.add_typer(layouts.app, name="layouts")
app.command("simulate")(simulate.simulate_cmd)
app.command("audit")(audit.audit_cmd)
app.command("diff")(diff.diff_cmd)
app.add_typer(collect.app, name="collect")
app.command("cluster")(cluster.cluster_cmd)


def run() -> None:
    """Console-script entry point.  A usage error (an unknown option, ``--format xml``) is
    one line on standard error and exit status 2, like every other bad input.  Standard
    output and error are made safe first (:mod:`.streams`): any encoding (degraded to
    ASCII), and a failed write to standard output is one line and exit status 2."""
    from . import streams

    streams.setup()
    try:
        _run()
    except streams.OutputError as exc:  # help or a usage message that could not be written
        _failed_output(exc)
    except SystemExit as exc:
        failed = streams.finish()
        if failed is not None:
            _failed_output(failed)
        raise
    failed = streams.finish()  # pragma: no cover - _run always exits
    if failed is not None:  # pragma: no cover
        _failed_output(failed)


def _failed_output(exc: Exception) -> None:
    from ..safe import printable

    sys.stderr.write(f"nvtopo: error: {printable(str(exc))}\n")
    sys.stderr.flush()
    sys.exit(2)


def _run() -> None:
    try:  # typer >= 0.20 bundles its own click
        from typer._click import exceptions as cx  # type: ignore[import-not-found, unused-ignore]
    except ImportError:  # pragma: no cover - older typer, click installed beside it
        from click import exceptions as cx  # type: ignore[no-redef]

    try:
        rc = app(standalone_mode=False)
    except (KeyboardInterrupt, typer.Abort, getattr(cx, "Abort", typer.Abort)):
        sys.stderr.write("nvtopo: interrupted\n")
        sys.exit(130)
    except cx.UsageError as exc:
        from ..safe import printable

        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `nvtopo`: the help, as before
            exc.show()
            sys.exit(exc.exit_code)
        where = exc.ctx.command_path if exc.ctx is not None else "nvtopo"
        msg = " ".join(printable(exc.format_message()).split())
        sys.stderr.write(f"nvtopo: error: {msg} (see: {printable(where)} --help)\n")
        sys.exit(2)
    except cx.ClickException as exc:
        from ..safe import printable

        sys.stderr.write(f"nvtopo: error: {printable(exc.format_message())}\n")
        sys.exit(exc.exit_code)
    sys.exit(rc if isinstance(rc, int) else 0)


__all__ = ["app", "run"]
