"""``nvtopo audit``: check a fleet of saved snapshots."""

from typing import List, Optional

import typer

from .io import console, err, handles_errors
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
                                     "counts every file)."),
    all_snapshots: bool = typer.Option(False, "--all-snapshots",
                                       help="Table: list every file (default: the latest "
                                            "snapshot of each host; the older are counted)."),
    thresholds_file: Optional[str] = thresholds_option(),
    quiet: bool = quiet_option(),
) -> None:
    """Check a fleet of saved snapshots: one row per node, a summary by finding code, and
    the files that could not be read.

    Files are streamed through worker processes (memory stays flat however many
    there are); each is checked exactly as `nvtopo check --from FILE` would.
    While it works, a progress line counts the files on standard error when that is a
    terminal (--quiet: none); it is erased before the table.

    Exit status: 0 no node fails, 1 at least one node fails, 2 nothing could
    be read (or a bad layout name or file).

    Examples:

      nvtopo audit /var/lib/nvtopo/

      nvtopo audit /var/lib/nvtopo/ --failed

      nvtopo audit 'snapshots/**/*.json' --format json --jobs 8

      nvtopo audit rack7/ --layout-file rack7.json --format prometheus > audit.prom
    """
    from ..commands import audit as audit_cmds

    chosen = layout(layout_name, layout_file, "audit")
    limits = thresholds(thresholds_file)
    summary = audit_cmds.report(paths, chosen, fmt.value, jobs=jobs,
                                console=console() if fmt is AuditFormat.table else None,
                                failed=failed, all_snapshots=all_snapshots,
                                thresholds=limits, quiet=quiet)
    if summary.verdicts.get("pass", 0) + summary.verdicts.get("fail", 0) == 0:
        err("audit: nothing could be read" if summary.files else "audit: no input files")
    raise typer.Exit(summary.exit_status())
