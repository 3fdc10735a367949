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
    """A one-line preamble (the layout, how it was chosen in short: ``verbose`` says it in
    full), the report's findings laid out for the console's width (``render/findings.py``),
    then its verdict line.  ``brief``: one line per finding, no explanations or hints;
    ``verbose``: every "not checked" note in full (else one line naming the families)."""
    from rich.text import Text

    from .cells import text

    print_wrapped(console, Text.assemble(("Layout: ", "bold"),
                                         (printable(report.layout_name), "bold cyan"),
                                         printable(f"  ({_why(report, console.width, verbose)})"
                                                   )), 0, 2)
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


#: What the one-line preamble says when the selection's details do not fit it.
_MORE = "-v: how it was chosen"


def _why(report: Report, width: int, verbose: bool) -> str:
    """How the layout was chosen: in full with ``verbose``, else what fits the preamble's one
    line: the first clause (``auto: 8 GPUs``), the rest left to ``-v``."""
    reason = " ".join(str(report.reason or "").split())
    if verbose or not reason:
        return reason
    room = width - len(f"Layout: {report.layout_name}  ()")
    first = reason.split("; ")[0]
    short = first.split(", ")[0].split(" (")[0]
    more = first != reason
    head = first.split(": ")[0]  # auto, no layout fits, …
    for cand in ((reason,) + ((f"{first}; {_MORE}",) if more else (first,))
                 + (f"{short}; {_MORE}", f"{head}; {_MORE}", _MORE)):
        if len(cand) <= room:
            return cand
    return _MORE


def print_layouts(rows: List[Dict[str, Any]], console: Console) -> None:
    """The bundled layouts, one per line: name, GPUs, NV#, compute NICs, then the title
    where every title has room on its row, else each on the line beneath (wrapped at
    spaces, indented): at 80 columns no name or title is cut."""
    from rich.text import Text

    from .cells import text

    heads = ("Name", "GPUs", "NV#", "Compute NICs")
    cells = [(printable(r["name"]), printable(_val(r["gpus"])), printable(_val(r["nvlink"])),
              printable(_val(r["nics"]))) for r in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]
    lead = sum(widths) + 2 * len(widths)  # where the title starts on a row's own line

    def line(values: Any, style: str = "") -> Text:
        out = Text()
        for i, (v, w) in enumerate(zip(values, widths)):
            out.append(v.ljust(w) + "  ", style=style or ("bold" if i == 0 else ""))
        return out

    titles = [printable(r["title"]) for r in rows]
    side = lead + max([len(t) for t in titles] + [5]) <= console.width  # every title fits
    head = line(heads, "bold underline")
    if side:
        head.append("Title", style="bold underline")
    head.rstrip()
    console.print(head, soft_wrap=True)
    for c, title in zip(cells, titles):
        row = line(c)
        if side:
            row.append(title)
        row.rstrip()
        console.print(row, soft_wrap=True)
        if not side:
            print_wrapped(console, text(title, "dim"), 2, 2)


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
