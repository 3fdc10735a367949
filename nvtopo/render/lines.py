"""Lines of text printed as a ``Group`` of them prints them, cheaper where styles print
nothing: :class:`Lines` (any renderables, a Text among them printed as its text where it
can be) and :class:`Parts` (a line of ``(text, style)`` parts, made a Text only where styles
print), and :func:`wrapped_text` (a line wrapped as Rich's ``Text.wrap`` wraps it, without a
Text).  Small on purpose: ``layout.print_wrapped`` (every command's findings and notes)
imports it without the table machinery of :mod:`.grid`.  ``tests/test_grid.py`` holds them
to Rich's output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from rich._wrap import divide_line
from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.text import Span, Text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions


class Lines:
    """Lines of Text (or other renderables among them) printed as a ``Group`` of them prints
    them; where styles print nothing (``grid._Draw``'s ``plain``), a line of printable
    text that fits the width, not justified, is one segment of its text (Rich would wrap,
    justify and render it to the same bytes), and so is a Text of several such lines;
    anything else is Rich's."""

    def __init__(self, lines: Sequence[Any]) -> None:
        self.lines = lines

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> Any:
        if console.color_system is not None or console.record \
                or (options.justify or "default") != "default":
            yield from self.lines
            return
        for line in self.lines:
            if isinstance(line, Parts):
                plain = line.plain
                size = _size(plain)
                if size is None or size > options.max_width:
                    yield line.text()
                    continue
            elif isinstance(line, Text):
                plain = line.plain
                size = _block_size(plain)
                if size is None or size > options.max_width or line.end != "\n" \
                        or (line.justify or "default") != "default":
                    yield line
                    continue
            else:
                yield line
                continue
            yield Segment(plain)
            yield Segment("\n")


class Parts:
    """A line of ``(text, style)`` parts (printable text): the Text that appending them in
    order to ``Text(no_wrap=True)`` makes (:meth:`text`, made at once: the same text and
    spans), or in :class:`Lines` where styles print nothing, just its text."""

    __slots__ = ("parts",)

    def __init__(self, parts: Sequence[Tuple[str, str]]) -> None:
        self.parts = parts

    @property
    def plain(self) -> str:
        return "".join([part for part, _ in self.parts])

    def text(self) -> Text:
        """An empty part adds nothing, a part of no style no span, as ``Text.append``."""
        plain: List[str] = []
        spans: List[Span] = []
        at = 0
        for part, style in self.parts:
            if part:
                if style:
                    spans.append(Span(at, at + len(part), style))
                plain.append(part)
                at += len(part)
        return Text("".join(plain), no_wrap=True, spans=spans)

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> Any:
        yield self.text()


def _block_size(plain: str) -> Optional[int]:
    """The terminal cells of the longest line of a text of printable lines (not ending in
    a line break: Rich keeps a last, blank line there), else None."""
    if "\n" not in plain:
        return _size(plain)
    if plain.endswith("\n"):
        return None
    sizes = [_size(x) for x in plain.split("\n")]
    return None if None in sizes else max(sizes)  # type: ignore[type-var]


def _size(plain: str) -> Optional[int]:
    """The terminal cells of a one-line cell; None where it holds a control character or
    a line break (Rich would strip or split it: left to Rich)."""
    if plain.isascii():
        return len(plain) if plain.isprintable() else None
    return cell_len(plain) if plain.isprintable() else None


def wrapped_text(text: str, width: int, justify: str, overflow: str,
                 no_wrap: bool) -> List[str]:
    """The lines of ``Text(text).wrap(console, width, justify=, overflow=, no_wrap=)`` as
    text, for one printable line (no tab, no break) and ``justify`` left, center or right,
    ``overflow`` fold, crop or ellipsis, without a Text: Rich's own ``divide_line``, then
    what ``Text.rstrip_end``, ``Lines.justify`` and ``Text.truncate`` do to a line's text
    (``tests/test_grid.py`` holds it to ``Text.wrap``)."""
    if no_wrap:
        pieces = [text]
    else:
        bounds = [0, *divide_line(text, width, fold=overflow == "fold"), len(text)]
        pieces = []
        for a, b in zip(bounds, bounds[1:]):
            piece = text[a:b]
            if len(piece) > width:  # rstrip_end: blanks beyond the width (in characters)
                blank = len(piece) - len(piece.rstrip())
                piece = piece[:len(piece) - min(blank, len(piece) - width)]
            pieces.append(piece)
    out = []
    for piece in pieces:
        if justify == "left":
            n = cell_len(piece)
            piece = _truncated(piece, width, overflow) + " " * (width - n)
        else:
            piece = _truncated(piece.rstrip(), width, overflow)
            spare = width - cell_len(piece)
            left = spare // 2 if justify == "center" else spare
            piece = " " * left + piece + " " * (spare - left)
        out.append(_truncated(piece, width, overflow))
    return out


def _truncated(text: str, width: int, overflow: str) -> str:
    """``Text.truncate`` of a line's text (no padding)."""
    if cell_len(text) <= width:
        return text
    if overflow == "ellipsis":
        return set_cell_size(text, width - 1) + "…"
    return set_cell_size(text, width)


__all__ = ["Lines", "Parts", "wrapped_text"]
