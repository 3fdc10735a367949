"""``nvtopo explain``: what NCCL used, in lines, then the findings and the verdict, as
``nvtopo check`` draws them.  The explanation (:mod:`nvtopo.commands.explain`) decides; this
only draws."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

from ..safe import printable

if TYPE_CHECKING:
    from rich.console import Console


def print_explanation(found: Any, console: "Console") -> None:
    """The explanation's lines, then the report's findings and verdict."""
    from rich.text import Text

    from .check import print_check
    from .layout import print_wrapped

    console.print(Text("What NCCL did", style="bold"))
    for line in found.lines:
        print_wrapped(console, Text("  " + printable(line)), 0, 4)
    console.print()
    print_check(found.report, console)


def text(found: Any) -> str:
    """The table view as plain text (``-o FILE`` with ``--format table``)."""
    out: List[str] = ["What NCCL did"] + ["  " + printable(x) for x in found.lines]
    for f in found.report.findings:
        out.append(f"{f.severity:<8}{f.code}  {printable(str(f.subject))}: "
                   f"{printable(f.message)}")
    out.append(f"verdict: {found.report.verdict}")
    return "\n".join(out) + "\n"
