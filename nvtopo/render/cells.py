"""Untrusted values as Rich renderables: ``Text`` objects (never parsed as markup), their
characters made safe by :func:`nvtopo.safe.printable`.

A ``str`` handed to a Rich ``Table`` (cell, header, title) or to ``console.print`` is
parsed as console markup (``[link=...]`` opens a hyperlink, ``[bold]`` styles) and its
control characters reach the terminal; a renderer puts every value that comes from the
model, the evidence or a file name through :func:`text` (or :func:`title`) instead.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from rich.style import StyleType
from rich.text import Text

from ..model.vocab import P2P_STATUS, path_kind
from ..safe import printable as _printable

__all__ = ["printable", "text", "title", "cell_style"]

def printable(value: Any, *, keep_newlines: bool = False) -> str:
    """:func:`nvtopo.safe.printable`, a string ``str.isprintable`` accepts returned as it is
    at once: every character it escapes is one ``isprintable`` refuses (a control, a format
    character, a separator, a surrogate, a non-character; tests/test_safe.py checks every
    code point), so such a string holds none, and the escaping pattern is neither compiled
    (0.7 ms) nor searched for a table's ``·`` or ``–``.  (Here, not in nvtopo/safe.py: that
    is derivation code, whose source the snapshot caches are sealed with.)"""
    if isinstance(value, str):
        if not keep_newlines and value.isprintable():
            return value
    elif type(value) is int:  # (not a bool: its digits, as str() and safe.printable write it)
        return str(value)
    return _printable(value, keep_newlines=keep_newlines)


#: Path quality on a neutral scale (near: bright, far: grey).  A far path is a fact of the
#: wiring, not a fault: red is kept for faults (FAIL, a link down) so it stands out.
PATH_STYLES: Dict[str, str] = {
    "X": "dim",
    "NV": "bold bright_cyan",
    "PIX": "bright_cyan",
    "PXB": "cyan",
    "PHB": "steel_blue",
    "NODE": "blue",
    "SYS": "grey50",
}
P2P_STYLES: Dict[str, str] = {"X": "dim", "OK": "bold bright_cyan", "U": "yellow"}
UNKNOWN_STYLE = "bold magenta"


def cell_style(token: Optional[str], p2p: bool = False) -> str:
    if token is None:
        return "dim"
    if p2p:
        if token in P2P_STYLES:
            return P2P_STYLES[token]
        return "yellow" if token in P2P_STATUS else UNKNOWN_STYLE  # not supported: no fault
    kind = path_kind(token)
    return PATH_STYLES.get(kind, UNKNOWN_STYLE) if kind else UNKNOWN_STYLE


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
