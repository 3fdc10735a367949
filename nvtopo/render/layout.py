"""Width-aware terminal layout shared by the table renderers (docs/architecture.md §render).

Two things live here, so that every table reads at 80 columns and up:

* **Identifier columns** (:func:`id_column`): PCI addresses, device names, hostnames, file
  names are never cut (no ellipsis) and never broken inside; the column is as wide as its
  longest value and the free-text columns wrap around it.  :func:`text_column` is a column
  of words that wraps at spaces.
* **Findings** (:func:`print_findings`): one compact row per finding (code, subject,
  expected → actual) with the explanation and the hint as wrapped text beneath, a hint
  shared by several findings printed once for the group, ``brief`` for one line per
  finding, the ``info`` notes ("not checked") collapsed to one line unless ``verbose``.

Every value drawn here comes from the model or evidence and goes through
:func:`nvtopo.render.cells.text` (printable, never parsed as markup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Sequence

from .cells import text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

#: Severity -> style of its code and heading.  Red is for faults only (errors).
STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
TITLE = {"error": "Errors", "warning": "Warnings", "info": "Not checked / notes"}
#: Indentation of a finding's row, and of its explanation and hint beneath it.
ROW_INDENT = 2
TEXT_INDENT = 6


def id_column(table: "Table", header: str, **kw: Any) -> None:
    """A column of identifiers: never wrapped, never cut (``overflow="fold"`` only as a last
    resort on a hostile value longer than the terminal)."""
    kw.setdefault("no_wrap", True)
    kw.setdefault("overflow", "fold")
    table.add_column(header, **kw)


def text_column(table: "Table", header: str, **kw: Any) -> None:
    """A column of words: wraps at spaces, never cut with an ellipsis."""
    kw.setdefault("overflow", "fold")
    table.add_column(header, **kw)


def value(x: Any) -> str:
    """An expected/actual value as people read it: ``–`` for none, ``k=v, …`` for a dict."""
    if x is None:
        return "–"
    if isinstance(x, dict):
        return ", ".join(f"{k}={v}" for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return ", ".join(str(v) for v in x)
    return str(x)


def print_wrapped(console: "Console", line: Any, indent: int = 0, hang: int = 0) -> None:
    """``line`` (a Text) wrapped at spaces to the console's width, each line indented by
    ``indent`` (continuation lines by ``indent + hang``), no trailing blanks.  A word is
    broken only where it is longer than the whole width (a hostile value)."""
    from rich.text import Text

    width = max(console.width - indent - hang, 20)
    for i, part in enumerate(line.wrap(console, width, overflow="fold")):
        part.rstrip()
        pad = indent if i == 0 else indent + hang
        console.print(Text.assemble(" " * pad, part), soft_wrap=True)


def _row(f: Any, sev: str) -> Any:
    from rich.text import Text

    row = Text.assemble(text(f.code, STYLE[sev]), "  ", text(str(f.subject), "bold"))
    if sev != "info" and (f.expected is not None or f.actual is not None):
        row.append("  ")
        row.append_text(text(value(f.expected)))
        row.append(" → ")
        row.append_text(text(value(f.actual), STYLE[sev]))
    return row


def _grouped(group: Sequence[Any]) -> List[List[Any]]:
    """Findings with the same hint side by side (in order of first appearance)."""
    order: Dict[str, List[Any]] = {}
    out: List[List[Any]] = []
    for f in group:
        key = f.hint or ""
        if key and key in order:
            order[key].append(f)
            continue
        bucket = [f]
        out.append(bucket)
        if key:
            order[key] = bucket
    return out


def families(findings: Iterable[Any]) -> List[str]:
    """The check families (the code's domain prefix) of ``findings``, in order, once each."""
    seen: List[str] = []
    for f in findings:
        fam = f.code.split(".", 1)[0]
        if fam not in seen:
            seen.append(fam)
    return seen


def print_findings(findings: Sequence[Any], console: "Console", *, brief: bool = False,
                   verbose: bool = False) -> None:
    """Findings by severity (errors, warnings, notes), laid out for ``console.width``."""
    from rich.text import Text

    shown_hints: Dict[str, str] = {}
    for sev in ("error", "warning", "info"):
        group = [f for f in findings if f.severity == sev]
        if not group:
            continue
        if sev == "info" and not verbose:
            print_wrapped(console, Text.assemble(
                (f"Not checked ({len(group)}): ", "bold"),
                text(", ".join(families(group))),
                ("  (-v lists them)", "dim")), 0, 2)
            continue
        console.print(Text(f"{TITLE[sev]} ({len(group)})", style=STYLE[sev] + " underline"
                           if sev != "info" else "bold"))
        for bucket in _grouped(group):
            for f in bucket:
                print_wrapped(console, _row(f, sev), ROW_INDENT, 2)
                if not brief and f.message:
                    print_wrapped(console, text(f.message), TEXT_INDENT)
            hint = bucket[0].hint
            if brief or not hint or sev == "info":
                continue
            if hint in shown_hints:
                print_wrapped(console, Text.assemble(
                    ("→ as for ", "dim"), text(shown_hints[hint], "dim"), (" above", "dim")),
                    TEXT_INDENT, 2)
                continue
            shown_hints[hint] = str(bucket[0].subject)
            lead = "→ " if len(bucket) == 1 else f"→ (all {len(bucket)} above) "
            if len(bucket) == 2:
                lead = "→ (both above) "
            print_wrapped(console, Text.assemble((lead, "dim"), text(hint, "dim")),
                          TEXT_INDENT, 2)
