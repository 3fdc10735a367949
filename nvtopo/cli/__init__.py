"""The command line: parses options and calls the library.  Nothing else lives here.

One module per command (``show``, ``snapshot``, ``links``, ``ib``, ``check``, ``checks``,
``layouts``, ``simulate``, ``audit``, ``diff``, ``collect``); the options they share are declared once in
:mod:`.options`, the terminal plumbing (one-line errors, JSON, tables, ``-o``) is in
:mod:`.io`.  Input is opened by :func:`nvtopo.snapshot.open_input`, never here: the CLI
imports no probe.  Each command imports what it uses when it runs, so ``check --format
json`` loads neither Rich nor a probe it does not need, and the console script builds only
the command its command line names (:func:`build`).

The command modules do not use ``from __future__ import annotations``: typer would then
evaluate every parameter's annotation string at each start (1.4 ms of the 100 ms a
``check`` takes).
"""

import gc
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any, List, Optional

from .. import __version__

if TYPE_CHECKING:  # imported when the command runs (:func:`build`); named here for readers
    import typer

    from . import (audit, check, checks, cluster, collect, diff, ib, layouts,  # noqa: F401
                   links, show, simulate, snapshot, trend)

#: The commands in help order: name -> (module under ``nvtopo.cli``, its entry: the command's
#: function, or the Typer app of a command group).
COMMANDS = {
    "show": ("show", "show"),
    "snapshot": ("snapshot", "snapshot_cmd"),
    "links": ("links", "links"),
    "ib": ("ib", "ib_cmd"),
    "check": ("check", "check_cmd"),
    "checks": ("checks", "checks_cmd"),
    "layouts": ("layouts", "app"),
    "simulate": ("simulate", "simulate_cmd"),
    "audit": ("audit", "audit_cmd"),
    "diff": ("diff", "diff_cmd"),
    "collect": ("collect", "app"),
    "cluster": ("cluster", "cluster_cmd"),
    "watch": ("watch", "watch_cmd"),
    "explain": ("explain", "explain_cmd"),
    "trend": ("trend", "trend_cmd"),
}

HELP = (
    "How a GPU node is wired, and whether the wiring is what it should be.\n\n"
    "Every command probes this machine, or reads a saved file with --from FILE: a snapshot "
    "(`nvtopo snapshot`), or `nvidia-smi`/`ibstat` text pasted from a ticket (recognised by "
    "content; - reads standard input).\n\n"
    "\b\nExamples:\n"
    "  nvtopo show --example dgx-h100\n"
    "  nvtopo check                              # this node\n"
    "  nvtopo check --from ticket-1234.txt\n"
    "  nvidia-smi topo -m | nvtopo show --from -\n"
    "  nvtopo snapshot -o node17.json\n"
    "  nvtopo check --help                       # each command explains itself\n\n"
    "Exit status: 0 ok, 1 findings (check), 2 bad input or no data."
)

#: One line per command in the help's command list (its own --help says the rest).
SHORT = {
    "show": "The topology matrix, GPUs, NICs, legend and a summary.",
    "snapshot": "Record the raw evidence of every probe in one JSON file.",
    "links": "Every NVLink of every GPU: state, speed, remote end, errors.",
    "ib": "Every InfiniBand/RoCE port: state, rate, link layer, counters.",
    "check": "Check the node against its expected layout.",
    "checks": "Every finding code: what it means and what to do.",
    "layouts": "Expected layouts: list, show, or capture one.",
    "simulate": "A synthetic snapshot of a layout, healthy or with faults.",
    "audit": "Check a fleet of saved snapshots.",
    "diff": "What changed on a node between two snapshots.",
    "collect": "Every node's snapshot through Slurm or Ray.",
    "cluster": "The cross-node view of a fleet: domains, rails, duplicates.",
    "watch": "Check this node every DURATION: textfile, labels, condition.",
    "explain": "Why NCCL is slow: its debug log read against the node.",
    "trend": "Error counters across snapshots: what is still climbing.",
}


def _version(value: bool) -> None:
    import typer

    if value:
        typer.echo(f"nvtopo {__version__}")
        raise typer.Exit()


def build(only: Optional[str] = None) -> "typer.Typer":
    """The ``nvtopo`` app with every command, or with command ``only`` alone: what the
    console script builds when the command line names that command, importing no other
    command's module and converting no other command's options (about 8 ms of a ``check``).
    A command's own help, options and errors are the same either way (tests/test_cli.py)."""
    import typer

    def main(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                     help="Print the version and exit."),
    ) -> None:
        """nvtopo: GPU node topology."""

    app = typer.Typer(
        name="nvtopo",
        help=HELP,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=True,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(main)
    for name, (module, entry) in COMMANDS.items():
        if only is not None and name != only:
            continue
        found = getattr(importlib.import_module(f"{__name__}.{module}"), entry)
        if isinstance(found, typer.Typer):
            app.add_typer(found, name=name, short_help=SHORT[name])
        else:
            app.command(name, short_help=SHORT[name])(found)
    return app


def _command_named(argv: List[str]) -> Optional[str]:
    """The command the command line names first, when it names one before any option of
    ``nvtopo`` itself (shell completion, which reads its words from the environment, gets
    every command)."""
    if len(argv) < 2 or argv[1] not in COMMANDS:
        return None
    if any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ):
        return None
    return argv[1]


def __getattr__(name: str) -> Any:
    """``app``: the app with every command, built on first use (tests, documentation)."""
    if name == "app":
        app = build()
        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run() -> None:
    """Console-script entry point.  A usage error (an unknown option, ``--format xml``) is
    one line on standard error and exit status 2, like every other bad input.  Standard
    output and error are made safe first (:mod:`.streams`): any encoding (degraded to
    ASCII), and a failed write to standard output is one line and exit status 2."""
    collecting = gc.isenabled()
    gc.disable()  # start-up (typer, the command's module) makes no garbage: see _settled
    from . import streams
    from .deferred import defer

    defer()  # typer's help imports rich.markdown and rich.traceback; nvtopo uses neither
    streams.setup()
    try:
        _run(collecting)
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
    from ..render import messages

    messages.error(str(exc))
    sys.exit(2)


def _settled(collecting: bool) -> None:
    """Start-up is over: what it built (modules, classes, the command's options) lives until
    the process ends, so the cyclic collector, off while it was built, leaves it alone from
    now on (``gc.freeze``: neither the command's collections nor the one at exit walk it
    again) and is turned back on for the command's own work.  About 8 % of a ``check``."""
    gc.freeze()
    if collecting:
        gc.enable()


def _run(collecting: bool = True) -> None:
    import typer

    try:  # typer >= 0.20 bundles its own click
        from typer._click import exceptions as cx  # type: ignore[import-not-found, unused-ignore]
    except ImportError:  # pragma: no cover - older typer, click installed beside it
        from click import exceptions as cx  # type: ignore[no-redef]

    try:
        app = build(_command_named(sys.argv))
    finally:
        _settled(collecting)
    try:
        rc = app(standalone_mode=False)
    except (KeyboardInterrupt, typer.Abort, getattr(cx, "Abort", typer.Abort)):
        from ..render import messages

        messages.say("nvtopo: interrupted")
        sys.exit(130)
    except cx.UsageError as exc:
        from ..render import messages

        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `nvtopo`: the help, as before
            exc.show()
            sys.exit(exc.exit_code)
        where = exc.ctx.command_path if exc.ctx is not None else "nvtopo"
        msg = " ".join(exc.format_message().split())
        messages.error(f"{msg} (see: {where} --help)")
        sys.exit(2)
    except cx.ClickException as exc:
        from ..render import messages

        messages.error(exc.format_message())
        sys.exit(exc.exit_code)
    sys.exit(rc if isinstance(rc, int) else 0)


__all__ = ["app", "run"]
