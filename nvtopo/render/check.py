"""``nvtopo check``: a :class:`~nvtopo.checks.Report` drawn as tables (findings grouped by
severity), then its verdict.  The report decides; this only draws (its JSON document is
:meth:`nvtopo.checks.Report.document`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List

from ..checks import Report
from ..safe import printable

if TYPE_CHECKING:  # Rich is imported by the table printers only: JSON output never loads it
    from rich.console import Console

from .findings import STYLE, TITLE, print_findings  # noqa: F401 (re-exported)
from .layout import print_wrapped, value as _val  # noqa: F401 (re-exported)


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


def _flat(prefix: str, x: Any, out: List[Any]) -> None:
    if isinstance(x, dict):
        if not x:
            out.append((prefix, "–"))
        for k, v in x.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out.append((prefix, _val(x)))


def print_layout(data: Dict[str, Any], console: Console) -> None:
    """One layout as people read it: its name and title, the description wrapped, then every
    expectation as a ``section.field  value`` row (evidence tags as written)."""
    from rich.table import Table
    from rich.text import Text

    from .cells import text
    from .layout import fit

    print_wrapped(console, Text.assemble(text(data.get("name"), "bold cyan"), "  ",
                                         text(data.get("title"), "bold")), 0, 2)
    if data.get("description"):
        print_wrapped(console, text(data["description"]), 2, 0)
    rows: List[Any] = []
    for key in data:
        if key in ("name", "title", "description", "schema", "sources"):
            continue
        _flat(key, data[key], rows)
    table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), show_header=True,
                  header_style="bold")
    table.add_column("expectation", no_wrap=True)
    table.add_column("value")
    for k, v in rows:
        table.add_row(text(k), text(v, "dim" if k.endswith("evidence") else ""))
    console.print(fit(table, console.width))
    sources = data.get("sources") or {}
    if sources:
        console.print(Text("Sources", style="bold"))
        for tag, what in sources.items():
            print_wrapped(console, Text.assemble(text(tag, "bold"), "  ", text(what)), 2, 4)
