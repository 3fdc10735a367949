"""Exports of the Rich views: ``--format html`` (an HTML page), ``--format rich-svg`` (an SVG
of the terminal output) and plain text (``--format table`` with ``-o FILE``).

``export(draw, fmt, title)`` runs ``draw(console)`` on a recording console (the same code
that prints to the terminal) and returns the document; nothing is printed.
"""

from __future__ import annotations

import io
from typing import Any, Callable

#: Width the recording console lays the views out for (the terminal's is unknown).
WIDTH = 160


def export(draw: Callable[[Any], None], fmt: str, title: str, width: int = WIDTH) -> str:
    """``fmt``: ``html``, ``rich-svg`` or ``text``."""
    from rich.console import Console

    # markup and emoji off: the views hand Rich Text objects; a str from data is not parsed
    console = Console(record=True, file=io.StringIO(), width=width, force_terminal=True,
                      color_system="truecolor", highlight=False, markup=False, emoji=False,
                      legacy_windows=False)
    draw(console)
    if fmt == "html":
        return console.export_html(inline_styles=True)
    if fmt == "rich-svg":
        return console.export_svg(title=title)
    if fmt == "text":
        return console.export_text()
    raise ValueError(f"unknown export format {fmt!r}")


def show_document(topo: Any, fmt: str) -> str:
    """``nvtopo show`` as ``table`` (plain text), ``svg``, ``html`` or ``rich-svg``."""
    if fmt == "svg":
        from . import svg

        return svg.render(topo)
    from . import matrix

    title = f"nvtopo show · {_where(topo)}"
    return export(lambda c: matrix.print_topology(topo, c), "text" if fmt == "table" else fmt,
                  title)


def check_document(report: Any, topo: Any, fmt: str, durations: Any = None) -> str:
    """``nvtopo check``'s :class:`~nvtopo.checks.Report` as ``table`` (plain text),
    ``prometheus``, ``svg``, ``html`` or ``rich-svg``."""
    if fmt == "prometheus":
        from . import prometheus

        return prometheus.render_check(report, topo, layout=report.layout, durations=durations)
    if fmt == "svg":
        from . import svg

        return svg.render(topo, report=report)
    from . import check

    title = f"nvtopo check · {_where(topo)}"
    return export(lambda c: check.print_check(report, c), "text" if fmt == "table" else fmt,
                  title)


def _where(topo: Any) -> str:
    """The host (or file) named in an export's title, made printable: Rich escapes the title
    for HTML but leaves control characters, which no XML document may hold."""
    from ..safe import printable

    return printable(topo.host.hostname or topo.origin.file or "node")
