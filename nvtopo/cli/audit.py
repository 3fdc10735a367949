"""``nvtopo audit``: check a fleet of saved snapshots."""

from typing import List, Optional

import typer

from .io import console, err, handles_errors, interactive
from .options import (AuditFormat, format_option, layout, layout_file_option, layout_option,
                      quiet_option, thresholds, thresholds_option)


@handles_errors
def audit_cmd(
    paths: List[str] = typer.Argument(
        ..., metavar="PATH...",
        help="Snapshots or topo texts: files, directories (recursive: *.json, *.txt, *.topo, "
             "*.log, *.out) or glob patterns ('fleet/**/*.json', quoted)."),
    layout_name: str = layout_option(help="Check every node against this layout (default: "
                                          "each node's own, as `nvtopo check` picks it)."),
    layout_file: Optional[str] = layout_file_option(
        help="Check every node against your layout file. '-' reads standard input."),
    fmt: AuditFormat = format_option(AuditFormat.table,
                                     help="table (Rich), json (streamed) or prometheus."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, metavar="N",
                                       help="Worker processes (default: every core; 1 checks "
                                            "in this process)."),
    failed: bool = typer.Option(False, "--failed",
                                help="Table: list only failing nodes (the summary still "
                                     "counts every file); the default on a terminal."),
    all_nodes: bool = typer.Option(False, "--all",
                                   help="Table: list every node, passing ones too (the "
                                        "default when standard output is not a terminal)."),
    all_snapshots: bool = typer.Option(False, "--all-snapshots",
                                       help="Table: list every file (default: the latest "
                                            "snapshot of each host; the older are counted)."),
    thresholds_file: Optional[str] = thresholds_option(),
    quiet: bool = quiet_option(),
) -> None:
    """Check a fleet of saved snapshots: the verdict, the findings by code, one row per
    node (failing first; on a terminal only the failing ones and a count of the others:
    --all lists every node), and the files that could not be read.

    Files are streamed through worker processes (memory stays flat however many
    there are); each is checked exactly as `nvtopo check --from FILE` would.
    While it works, a progress line counts the files on standard error when that is a
    terminal (--quiet: none); it is erased before the table.

    Exit status: 0 no node fails, 1 at least one node fails, 2 nothing could
    be read (or a bad layout name or file).

    Examples:

      nvtopo audit /var/lib/nvtopo/

      nvtopo audit /var/lib/nvtopo/ --all

      nvtopo audit 'snapshots/**/*.json' --format json --jobs 8

      nvtopo audit rack7/ --layout-file rack7.json --format prometheus > audit.prom
    """
    from ..commands import audit as audit_cmds

    chosen = layout(layout_name, layout_file, "audit")
    limits = thresholds(thresholds_file)
    con = console() if fmt is AuditFormat.table else None
    # on a terminal the failing nodes are the screen people want: the passing ones are
    # counted on one line (--all lists them)
    failed = failed or (con is not None and interactive() and not all_nodes)
    summary = audit_cmds.report(paths, chosen, fmt.value, jobs=jobs, console=con,
                                failed=failed, all_snapshots=all_snapshots,
                                thresholds=limits, quiet=quiet)
    if summary.verdicts.get("pass", 0) + summary.verdicts.get("fail", 0) == 0:
        err("audit: nothing could be read" if summary.files else "audit: no input files")
    raise typer.Exit(summary.exit_status())
