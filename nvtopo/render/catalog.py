"""The catalog of checks (:mod:`nvtopo.checks.catalog`) as people read it: ``nvtopo checks``
(a Rich table), ``nvtopo checks CODE`` (one code explained) and ``docs/checks.md``
(:func:`markdown`, generated: ``python tests/regenerate_checks_doc.py``)."""

from __future__ import annotations

from typing import Any, List

from ..checks.catalog import CATALOG, Check
from ..checks.family_notes import FAMILY_NOTES

THRESHOLDS_DOC = """\
## Thresholds: `--thresholds FILE`

`nvtopo check` and `nvtopo audit` judge error counters by thresholds: above a counter's
 threshold it is an error, nonzero below it a warning (a saturated InfiniBand counter is always
an error). The defaults are the catalog's (the `thresholds` of `nvlink.errors` and
`ib.counter_errors` above). A layout may override them (`nvlink.error_thresholds`,
`nics.error_thresholds`: [layouts.md](layouts.md)), and `--thresholds FILE` overrides both,
per node class: the layout a node is checked against. Precedence, lowest first: the
catalog's default < the layout's `error_thresholds` < the file's `"*"` class < the file's
class named as the node's layout.

```json
{
  "schema_version": 1,
  "classes": {
    "*": {"ib": {"symbol_error": 50}},
    "dgx-h100": {"nvlink": {"replay": 500, "crc_data": 10},
                 "ib": {"link_downed": 2}}
  }
}
```

The file is read strictly: keys other than these, a family other than `nvlink`, `ib` or
`pcie` (its `replay` counter), a
counter the family does not count, or a value that is not a whole number from 0 to 2^64 - 1
is one line naming the file and the key, and exit status 2, before any input is read. Its
JSON Schema is [schemas/thresholds.schema.json](schemas/thresholds.schema.json).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(c: Check) -> str:
    sev = ", ".join(c.ladder.severities)
    return f"| `{c.code}` | {sev} | {_cell(c.meaning)} |"


def _section(c: Check) -> List[str]:
    out = [f"### `{c.code}`", "", _cell(c.meaning) + ".", "",
           f"- evidence: {_cell(c.evidence)}",
           f"- severity: {c.ladder.describe()}",
           f"- what to do: {_cell(c.action)}"]
    if c.thresholds:
        out.append("- thresholds: " + ", ".join(f"`{k}` {v}" for k, v in c.thresholds.items()))
    out += [f"- example: `{c.example()}`", ""]
    return out


def markdown() -> str:
    """The text of ``docs/checks.md``."""
    out = ["# Checks", "",
           "<!-- generated from nvtopo/checks/catalog.py by "
           "`python tests/regenerate_checks_doc.py`: do not edit by hand -->", "",
           "Every finding code nvtopo can emit, declared once in `nvtopo/checks/catalog.py`. "
           "`nvtopo checks` lists them (`--format json`: a document with `schema_version` "
           "and `checks`, schema `docs/schemas/catalog.schema.json`); `nvtopo checks CODE` "
           "explains one.",
           "",
           "Severity follows how sure the evidence is: observed on a known data path -> the "
           "code's worst severity (an error for codes that can be errors); inferred (an `[I]` "
           "expectation of the layout) or a port whose role is unknown -> at most a warning; "
           "evidence missing -> an `info` \"not checked\" note under the family's "
           "`*.not_checked` code. Unknown is never an error.", ""]
    families: List[str] = []
    for c in CATALOG.values():
        if c.family not in families:
            families.append(c.family)
    out += ["## Codes", "", "| code | severities | meaning |", "|---|---|---|"]
    out += [_row(c) for c in CATALOG.values()]
    out.append("")
    for fam in families:
        out += [f"## Family `{fam}`", "", FAMILY_NOTES.get(fam, ""), ""]
        for c in CATALOG.values():
            if c.family == fam:
                out += _section(c)
    out.append(THRESHOLDS_DOC)
    return "\n".join(out)


def print_catalog(console: Any) -> None:
    """``nvtopo checks``: one row per code."""
    from rich.table import Table

    from .cells import text

    table = Table(title="Checks", title_justify="left")
    table.add_column("Code", no_wrap=True, style="bold")
    table.add_column("Severities", no_wrap=True)
    table.add_column("Meaning", ratio=1)
    for c in CATALOG.values():
        table.add_row(text(c.code), text(", ".join(c.ladder.severities)), text(c.meaning))
    console.print(table)


def print_check(c: Check, console: Any) -> None:
    """``nvtopo checks CODE``: one code explained."""
    from rich.text import Text

    from .cells import text

    console.print(text(c.code, "bold"), Text(f"  ({c.family}, {c.scope})"))
    rows = [("meaning", c.meaning), ("evidence", c.evidence),
            ("severity", c.ladder.describe()), ("what to do", c.action)]
    if c.thresholds:
        rows.append(("thresholds", ", ".join(f"{k} {v}" for k, v in c.thresholds.items())))
    rows.append(("example", c.example()))
    for label, value in rows:
        console.print(Text(f"  {label}: ", style="bold"), text(value), sep="")
