"""``nvtopo check``: a :class:`~nvtopo.checks.Report` drawn as tables (findings grouped by
severity), then its verdict.  The report decides; this only draws (its JSON document is
:meth:`nvtopo.checks.Report.document`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List

from ..checks import Report
from ..safe import printable

if TYPE_CHECKING:  # Rich is imported by the table printers only: JSON output never loads it
    from rich.console import Console

from .layout import STYLE, TITLE, print_findings, print_wrapped, value as _val  # noqa: F401 (re-exported)


def print_check(report: Report, console: Console, *, brief: bool = False,
                verbose: bool = False) -> None:
    """The report's findings laid out for the console's width (``render/layout.py``), then
    its verdict line.  ``brief``: one line per finding, no explanations or hints;
    ``verbose``: every "not checked" note in full (else one line naming the families)."""
    from rich.text import Text

    from .cells import text

    print_wrapped(console, Text.assemble(("Layout: ", "bold"),
                                         (printable(report.layout_name), "bold cyan"),
                                         printable(f"  ({report.reason})")), 0, 2)
    if report.mapping:
        console.print(text("GPU renumbering (node → layout): " + ", ".join(
            f"GPU{k}→{v}" for k, v in sorted(report.mapping.items()))))
    print_findings(report.findings, console, brief=brief, verbose=verbose)
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
