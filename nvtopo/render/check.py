"""``nvtopo check``: a :class:`~nvtopo.checks.Report` drawn as tables (findings grouped by
severity), then its verdict.  The report decides; this only draws (its JSON document is
:meth:`nvtopo.checks.Report.document`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List

from ..checks import SEVERITIES, Report
from ..safe import printable

if TYPE_CHECKING:  # Rich is imported by the table printers only: JSON output never loads it
    from rich.console import Console

STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
TITLE = {"error": "Errors", "warning": "Warnings", "info": "Not checked / notes"}


def _val(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, dict):
        return ", ".join(f"{k}={v}" for k, v in x.items())
    return str(x)


def print_check(report: Report, console: Console) -> None:
    """The report as tables, one per severity, then its verdict line."""
    from rich.table import Table
    from rich.text import Text

    from .cells import text

    console.print(Text.assemble(("Layout: ", "bold"), (printable(report.layout_name),
                                                        "bold cyan"),
                                printable(f"  ({report.reason})")))
    if report.mapping:
        console.print(text("GPU renumbering (node → layout): " + ", ".join(
            f"GPU{k}→{v}" for k, v in sorted(report.mapping.items()))))
    for sev in SEVERITIES:
        group = [f for f in report.findings if f.severity == sev]
        if not group:
            continue
        table = Table(title=f"{TITLE[sev]} ({len(group)})", title_justify="left",
                      title_style=STYLE[sev], show_lines=False, expand=False)
        table.add_column("Code", style=STYLE[sev], no_wrap=True)
        table.add_column("Subject", no_wrap=True)
        if sev != "info":
            table.add_column("Expected", no_wrap=False)
            table.add_column("Actual", no_wrap=False)
        table.add_column("What" if sev == "info" else "What / what to do", ratio=1)
        for f in group:
            what = text(f.message)
            if f.hint and sev != "info":
                what.append("\n→ " + printable(f.hint), style="dim")
            row = [text(f.code), text(str(f.subject))]
            if sev != "info":
                row += [text(_val(f.expected)), text(_val(f.actual))]
            table.add_row(*row, what)
        console.print(table)
    n = report.counts
    if report.verdict == "fail":
        line = Text(f"FAIL: {n['error']} error(s), {n['warning']} warning(s)", style="bold red")
    else:
        line = Text(f"PASS: no errors, {n['warning']} warning(s)",
                    style="bold green" if not n["warning"] else "bold yellow")
    line.append(f"  · {n['info']} not checked" if n["info"] else "", style="dim")
    console.print(line)


def print_layouts(rows: List[Dict[str, Any]], console: Console) -> None:
    from rich.table import Table

    from .cells import text

    table = Table(title="Layouts", title_justify="left")
    table.add_column("Name", no_wrap=True, style="bold")
    table.add_column("Title", ratio=1)
    for col in ("GPUs", "NV#", "Compute NICs"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        table.add_row(text(r["name"]), text(r["title"]), text(_val(r["gpus"])),
                      text(_val(r["nvlink"])), text(_val(r["nics"])))
    console.print(table)
