"""Untrusted values as Rich renderables: ``Text`` objects (never parsed as markup), their
characters made safe by :func:`nvtopo.safe.printable`.

A ``str`` handed to a Rich ``Table`` (cell, header, title) or to ``console.print`` is
parsed as console markup (``[link=...]`` opens a hyperlink, ``[bold]`` styles) and its
control characters reach the terminal; a renderer puts every value that comes from the
model, the evidence or a file name through :func:`text` (or :func:`title`) instead.
"""

from __future__ import annotations

from typing import Any, List, Optional

from rich.style import StyleType
from rich.text import Text

from ..safe import printable

__all__ = ["printable", "text", "title"]


def text(value: Any, style: StyleType = "") -> Text:
    """``value`` as a Text: printable, no markup, in ``style``."""
    return Text(printable(value), style=style)


def title(value: Any, style: Optional[StyleType] = None) -> Text:
    """A table title from data: a Rich ``Table`` styles a ``str`` title with its
    ``title_style`` (default ``table.title``) but a Text as it is, so the style is given here."""
    return Text(printable(value), style=style if style is not None else "table.title")


def c2c_state(enabled: object, count: object, active: object) -> List[str]:
    """A GPU's NVLink-C2C mode and links in words (``links`` and ``show`` alike): ``mode
    enabled``, then ``10/10 links active``, ``0 links``, ``links unknown`` or ``10 links,
    active unknown``: a count NVML did not give is never printed as ``?/0``."""
    mode = "enabled" if enabled is True else "disabled" if enabled is False else "unknown"
    words = ["mode " + mode]
    if count is None:
        words.append("links unknown")
    elif count == 0:
        words.append("0 links")
    elif active is None:
        words.append(f"{count} links, active unknown")
    else:
        words.append(f"{active}/{count} links active")
    return words
