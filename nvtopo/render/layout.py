"""Width-aware terminal layout shared by the table renderers (docs/architecture.md §render).

What lives here, so that every table reads at 80 columns and up:

* **Identifier columns** (:func:`id_column`): PCI addresses, device names, hostnames, file
  names are never cut (no ellipsis) and never broken inside; the column is as wide as its
  longest value and the free-text columns wrap around it.  :func:`text_column` is a column
  of words that wraps at spaces.
* **Free text** (:func:`print_wrapped`): a line wrapped at spaces with a hanging indent.

The findings view every command shares is :mod:`.findings`.

Every value drawn here comes from the model or evidence and goes through
:func:`nvtopo.render.cells.text` (printable, never parsed as markup).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Sequence

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


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
    """An expected/actual value as people read it: ``–`` for none, ``yes``/``no`` for a
    boolean, ``k=v, …`` for a dict, ``a, b`` for a list (never a Python repr such as
    ``name=None`` or ``['a']``)."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, dict):
        return ", ".join(f"{k}={value(v)}" for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return ", ".join(value(v) for v in x)
    return str(x)


def print_wrapped(console: "Console", line: Any, indent: int = 0, hang: int = 0) -> None:
    """``line`` (a Text) wrapped at spaces to the console's width, each line indented by
    ``indent`` (continuation lines by ``indent + hang``), no trailing blanks.  A word is
    broken only where it is longer than the whole width (a hostile value)."""
    from rich.text import Text

    width = max(console.width - indent - hang, 20)
    lines = []
    for i, part in enumerate(line.wrap(console, width, overflow="fold")):
        part.rstrip()
        pad = indent if i == 0 else indent + hang
        lines.append(Text.assemble(" " * pad, part))
    if len(lines) < 2:
        for one in lines:
            console.print(one, soft_wrap=True)
        return
    from .lines import Lines

    # one print of them all, soft-wrapped (each line whole, uncut) as a print of each
    console.print(Lines(lines), soft_wrap=True)


# --- tables that fit the width ----------------------------------------------------------


def _plain(cell: Any) -> str:
    from rich.text import Text

    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        return cell
    return ""


def _extent(cell: Any) -> "tuple[int, int]":
    """(longest word, longest line) of a cell, in terminal cells."""
    from rich.cells import cell_len

    plain = _plain(cell)
    if plain.isascii() and plain.isprintable():  # one line, a terminal cell a character
        return max(map(len, plain.split()), default=0), len(plain)
    lines = plain.split("\n") or [""]
    words = plain.split() or [""]
    return max(cell_len(w) for w in words), max(cell_len(x) for x in lines)


def _line(cell: Any) -> int:
    """The longest line of a cell, in terminal cells."""
    plain = _plain(cell)
    if plain.isascii() and plain.isprintable():
        return len(plain)
    from rich.cells import cell_len

    return max(cell_len(x) for x in plain.split("\n"))


def fit(table: "Table", width: int) -> Any:
    """``table`` made to fit ``width`` columns without cutting or breaking a word.

    Every column is at least as wide as its longest word (its longest value where the
    column is ``no_wrap``, i.e. an identifier column); what width is left goes to the
    wrappable columns.  Where even that does not fit, the rows are drawn as records (one
    block per row: the first column's value, then ``header: value`` lines), which fit any
    width from 40 up."""
    cols = table.columns
    if not cols:
        return table
    pad = sum(table._get_padding_width(i) for i in range(len(cols)))
    budget = width - table._extra_width - pad
    mins: List[int] = []
    maxs: List[int] = []
    for c in cols:
        head = _extent(c.header) if table.show_header else (0, 0)
        if c.no_wrap:  # (its cells' words do not matter: only its header may wrap)
            body = max([_line(x) for x in c.cells] or [0])
            mn = max(body, head[0], c.min_width or 0)
            mx = max(body, head[1], mn)
            c.no_wrap = bool(mx <= mn)  # the header may wrap at its spaces
        else:
            ext = [_extent(x) for x in c.cells] + [head]
            mn = max(max(e[0] for e in ext), c.min_width or 0)
            mx = max(max(e[1] for e in ext), mn)
        mins.append(mn)
        maxs.append(mx)
    if sum(maxs) <= budget:
        return table
    if sum(mins) > budget:
        return Records(table)
    widths = list(mins)
    spare = budget - sum(mins)
    want = [mx - mn for mn, mx in zip(mins, maxs)]
    # water-filling: the columns that want least are satisfied first (a two-word header,
    # a short list), what is left is shared by the wide ones
    order = sorted((i for i, w in enumerate(want) if w > 0), key=lambda i: want[i])
    for n, i in enumerate(order):
        give = min(want[i], spare // (len(order) - n))
        widths[i] += give
        spare -= give
    for c, w in zip(cols, widths):
        c.width = w
        c.min_width = None
        c.max_width = None
        c.ratio = None
        c.overflow = "fold"
    table.expand = False
    return table


class Records:
    """A table's rows as blocks of ``header: value`` lines (the narrow-terminal form)."""

    def __init__(self, table: "Table") -> None:
        self.table = table

    def __rich_console__(self, console: "Console", options: Any) -> Any:
        from rich.text import Text

        t = self.table
        width = options.max_width
        if t.title is not None:
            yield t.title if isinstance(t.title, Text) else Text(str(t.title), style="bold")
        columns = [list(c.cells) for c in t.columns]
        heads = [_plain(c.header) for c in t.columns]
        for r in range(t.row_count):
            first = columns[0][r] if columns and r < len(columns[0]) else ""
            fields: List[Text] = [first if isinstance(first, Text)
                                  else Text(_plain(first), style="bold")]
            for head, cells in zip(heads[1:], columns[1:]):
                cell = cells[r] if r < len(cells) else ""
                body = cell.copy() if isinstance(cell, Text) else Text(_plain(cell))
                if not body.plain.strip():
                    continue
                body.plain = body.plain.replace("\n", " ")
                fields.append(Text.assemble(((head + ": ") if head else "", "dim"), body))
            yield from _packed(console, fields, width, 2)


def _packed(console: "Console", fields: List[Any], width: int, indent: int) -> Any:
    """``fields`` side by side, two spaces apart, as many to a line as fit ``width``
    (the first line from column 0, the others indented by ``indent``); a field wider than
    a line is wrapped at its spaces."""
    from rich.cells import cell_len
    from rich.text import Text

    start = 0
    line = Text()
    used = 0
    for f in fields:
        n = cell_len(f.plain)
        if used > start and used + 2 + n > width:
            yield line
            start = indent
            line, used = Text(" " * start), start
        if used + n > width:
            for i, part in enumerate(f.wrap(console, max(width - indent - 2, 20),
                                            overflow="fold")):
                part.rstrip()
                yield Text.assemble(" " * (start if i == 0 else indent + 2), part)
            start = indent
            line, used = Text(" " * start), start
            continue
        if used > start:
            line.append("  ")
            used += 2
        line.append_text(f)
        used += n
    if used > start:
        yield line


class Fitted:
    """``table`` fitted (:func:`fit`) to the width it is drawn at: for renderers that build
    their output before they know the console."""

    def __init__(self, table: "Table") -> None:
        self.table = table

    def __rich_console__(self, console: "Console", options: Any) -> Any:
        from . import grid

        if grid.prints_plain(console) and options.overflow != "ignore":
            lines = grid.table_lines(self.table, options.max_width)
            if lines is not None:  # at its natural width: its cells' text, as lines
                yield from grid.plain_segments(lines)
                return
        table = fit(self.table, options.max_width)
        if table is self.table:  # not drawn as records: as Rich would draw it, faster
            if grid.prints_plain(console) and options.overflow != "ignore":
                lines = grid.fitted_lines(table, console, options.max_width)
                if lines is not None:  # narrowed: its cells' text, some of it wrapped
                    yield from grid.plain_segments(lines)
                    return
            drawn = grid.segments(table, console, options)
            if drawn is not None:
                yield from drawn
                return
        yield table


class Sheet:
    """A table known by its cells' text: ``frame`` (its title and columns, no rows) and
    ``rows`` (each cell's text, as the Text ``make`` puts in that cell would have it).
    Where styles print nothing it is drawn from that text alone (``grid.lines``: no Text
    per cell, no rows added); else, or where the table would not stay at its natural
    width, as ``Fitted(make())``: the same bytes either way (``tests/test_grid.py``)."""

    def __init__(self, frame: "Table", rows: Sequence[Sequence[str]],
                 make: Callable[[], "Table"]) -> None:
        self.frame, self.rows, self.make = frame, rows, make

    def __rich_console__(self, console: "Console", options: Any) -> Any:
        from . import grid

        if grid.prints_plain(console) and options.overflow != "ignore":
            lines = grid.lines(self.frame, self.rows, options.max_width)
            if lines is not None:
                yield from grid.plain_segments(lines)
                return
        yield Fitted(self.make())
