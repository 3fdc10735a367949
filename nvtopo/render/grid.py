"""A borderless Rich ``Table`` drawn cell by cell as segments, without a renderable per cell.

Rich draws each cell of a table through a ``Padding``, a ``render_lines``, a measurement
and line splitting and cropping: the eight 18-link tables of ``nvtopo links`` took about
0.1 s of a 0.3 s start-up.  :func:`segments` yields the very segments Rich's table would
yield (the same text, the same styles, split at the same places, so the same bytes in
colour and without), for the tables the renderers build: no box, no footer, no row styles,
one-line padding.  The columns are as wide as Rich makes them (measured here where the
table fits the width it is drawn at, by Rich where its columns must shrink); a cell that
does not fit on one line of its column (a wrapped or cut cell, a cell of several lines) is
drawn by Rich itself, as the table would; a table outside that shape is left to Rich whole
(``None``).  Where styles print nothing (no colour system, as when standard output is not
a terminal, and no recording) a line is one segment of its text: the same bytes, a tenth of
the segments.  ``tests/test_grid.py`` holds the two to the same output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Span, Text

from .lines import Lines, Parts, _size, wrapped_text

__all__ = ["Grid", "Lines", "Parts", "fitted_lines", "lines", "plain_segments", "prints_plain",
           "segments", "table_lines", "wrapped_text"]

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions
    from rich.table import Table

_JUSTIFY = ("left", "center", "right")
_NULL = Style.null()


def segments(table: "Table", console: "Console",
             options: "ConsoleOptions") -> Optional[List[Segment]]:
    """The segments Rich would render ``table`` as, or None where the table is not of the
    shape drawn here (Rich then draws it)."""
    if not _plain_shape(table):
        return None
    cols = table.columns
    rows = list(zip(*[[c.header] + list(c.cells) if table.show_header else list(c.cells)
                      for c in cols]))
    if not rows:
        return None
    pads = [_padding(table, i) for i in range(len(cols))]
    texts = [[_as_text(x) for x in row] for row in rows]
    cells = [[x for x in row if x is not None] for row in texts]
    if any(len(row) != len(cols) for row in cells):
        return None
    longest = [max(_longest_line(row[i].plain) for row in cells) for i in range(len(cols))]
    widths = _widths(table, options.max_width, longest, pads)
    if widths is None:  # columns shrunk to fit (their cells wrapped): Rich's widths
        widths = _collapsed(table, [[t.plain for t in row] for row in cells], pads,
                            options.max_width - table._extra_width)
    if widths is None:
        widths = table._calculate_column_widths(
            console, options.update_width(options.max_width - table._extra_width))
    out: List[Segment] = []
    if table.title:
        out.extend(_title(table, console, options, sum(widths)))
    draw = _Draw(console, options, fits=sum(widths) <= options.max_width)
    styles = [console.get_style(c.style or "") for c in cols]
    head = ([console.get_style(table.header_style or "") + console.get_style(c.header_style)
             for c in cols] if table.show_header else [])
    for n, row in enumerate(cells):
        header = table.show_header and n == 0
        line = draw.row(row, cols, widths, pads, head if header else styles,
                        [x for x in rows[n]], header)
        out.extend(line)
    return out


class Grid:
    """``table`` drawn by :func:`segments` where it can be, else by Rich: for a table printed
    at its natural width (``layout.Fitted`` draws fitted tables so)."""

    def __init__(self, table: "Table") -> None:
        self.table = table

    def __rich_console__(self, console: "Console", options: "ConsoleOptions") -> Any:
        drawn = segments(self.table, console, options)
        if drawn is None:
            yield self.table
        else:
            yield from drawn


def prints_plain(console: "Console") -> bool:
    """Whether a style prints nothing on ``console`` (no colour system, as where standard
    output is not a terminal, and not recording)."""
    return console.color_system is None and not console.record


def table_lines(table: "Table", width: int) -> Optional[List[str]]:
    """:func:`lines` of ``table``'s own cells: a table ``layout.Fitted`` draws."""
    rows = _own_rows(table)
    return None if rows is None else lines(table, rows, width)


def _own_rows(table: "Table", bare: bool = False) -> Optional[List[Sequence[str]]]:
    """``table``'s rows, each cell its text (:func:`_cell_text`; with ``bare``, a Text cell
    only where it has no overflow or wrapping of its own either); None where a cell is not
    such a text or the columns hold different numbers of cells."""
    cols: List[List[str]] = []
    for c in table.columns:
        col = [_cell_text(x) for x in c.cells]
        if None in col or (bare and any(isinstance(x, Text) and (
                x.overflow is not None or x.no_wrap is not None) for x in c.cells)):
            return None
        cols.append(col)  # type: ignore[arg-type]
    if len({len(c) for c in cols}) > 1:
        return None
    return list(zip(*cols))


def fitted_lines(table: "Table", console: "Console", width: int) -> Optional[List[str]]:
    """Where styles print nothing (:func:`prints_plain`): the lines :func:`segments` gives
    ``table`` as ``layout.fit`` narrowed it (every column given its width), made from its
    cells' text: a cell longer than its column wrapped by Rich's ``Text.wrap`` as
    ``_Draw.wrapped`` wraps it, the cells of a row aligned as ``_aligned`` aligns them;
    None where that is not the table's shape (the caller draws it as before)."""
    cols = table.columns
    rows = _own_rows(table, bare=True)
    if rows is None or not _plain_shape(table) or any(c.width is None for c in cols):
        return None
    body: List[Sequence[str]] = list(rows)
    if table.show_header:
        heads = [_cell_text(c.header) for c in cols]
        if None in heads or any(isinstance(c.header, Text) and (
                c.header.overflow is not None or c.header.no_wrap is not None) for c in cols):
            return None
        body.insert(0, heads)  # type: ignore[arg-type]
    pads = [_padding(table, i) for i in range(len(cols))]
    widths = _widths(table, width, [0] * len(cols), pads)  # (each column's own width)
    if not body or widths is None or any(
            w - left - right < 1 or c.justify not in _JUSTIFY or c.overflow == "ignore"
            for c, w, (left, right) in zip(cols, widths, pads)):
        return None
    out = _titled(table, widths)
    if out is None:
        return None
    for n, row in enumerate(body):
        cells: List[List[str]] = []
        for x, c, w, (left, right) in zip(row, cols, widths, pads):
            one = _cell_lines(console, x, c, w, left, right)
            if one is None:
                return None
            cells.append(one)
        height = max(len(x) for x in cells)
        header = table.show_header and n == 0
        stacked = [_stacked(x, " " * w, height, "bottom" if header else c.vertical)
                   for x, c, w in zip(cells, cols, widths)]
        out.extend("".join(parts) for parts in zip(*stacked))
    return out


def _cell_lines(console: "Console", text: str, col: Any, width: int, left: int,
                right: int) -> Optional[List[str]]:
    """A cell's lines in its column: one justified line where it fits, else its text
    wrapped as ``_Draw.wrapped`` wraps a cell (a Text of no style, justify, overflow or
    wrapping of its own); each between its padding.  None where not one printable line."""
    size = _size(text)
    if size is None:
        return None
    inner = width - left - right
    if size <= inner:
        return [" " * left + _justified(text, size, inner, col.justify) + " " * right]
    out = []
    for plain in wrapped_text(text, inner, col.justify, col.overflow or "fold",
                              bool(col.no_wrap)):
        n = cell_len(plain)
        plain = plain + " " * (inner - n) if n <= inner else set_cell_size(plain, inner)
        out.append(" " * left + plain + " " * right)
    return out


def _stacked(lines: List[str], blank: str, height: int, vertical: str) -> List[str]:
    """A cell's lines in a row of ``height`` lines, blank lines above or below them as
    ``Segment.align_top``/``align_middle``/``align_bottom`` put them."""
    extra = height - len(lines)
    if not extra:
        return lines
    above = 0 if vertical == "top" else extra if vertical == "bottom" else extra // 2
    return [blank] * above + lines + [blank] * (extra - above)


def lines(table: "Table", rows: Sequence[Sequence[str]], width: int) -> Optional[List[str]]:
    """Where styles print nothing (:func:`prints_plain`): the lines ``layout.Fitted(table)``
    prints at ``width`` were ``rows`` its rows (each cell its text), made from that text
    alone, a column at a time; None unless the table stays at its natural width
    (``layout.fit`` leaves it as it is) and every cell, header and the title is one
    printable line (the caller then draws the table itself).  ``table``'s own rows are
    not read."""
    cols = table.columns
    if not _plain_shape(table) or any(len(row) != len(cols) for row in rows):
        return None
    columns: List[List[str]] = [list(x) for x in zip(*rows)] if rows else [[] for _ in cols]
    if table.show_header:
        for column, c in zip(columns, cols):
            head = _cell_text(c.header)
            if head is None:
                return None
            column.insert(0, head)
    if not columns[0]:
        return None
    sizes = [_column_sizes(column) for column in columns]
    longest = [max(x) if x is not None else -1 for x in sizes]
    # layout.fit leaves a table as it is where every column's widest cell fits
    need = sum(max(n, c.min_width or 0) for n, c in zip(longest, cols))
    if min(longest) < 0 or need > width - table._extra_width - sum(
            table._get_padding_width(i) for i in range(len(cols))):
        return None
    pads = [_padding(table, i) for i in range(len(cols))]
    widths = _widths(table, width, longest, pads)
    if widths is None:
        return None
    drawn: List[List[str]] = []
    for column, size, n, c, w, (left, right) in zip(columns, sizes, longest, cols, widths,
                                                     pads):
        inner = w - left - right
        if inner < 1 or n > inner or c.justify not in _JUSTIFY or c.overflow == "ignore":
            return None
        drawn.append(_column(column, size, inner, c.justify, " " * left, " " * right))
    out = _titled(table, widths)
    if out is None:
        return None
    out.extend("".join(parts) for parts in zip(*drawn))
    return out


def _titled(table: "Table", widths: Sequence[int]) -> Optional[List[str]]:
    """The table's title line, as the first of its lines ([] without a title; None where
    the title is not drawn here)."""
    if not table.title:
        return []
    title = _title_line(table, sum(widths))
    return None if title is None else [title]


def _column_sizes(column: Sequence[str]) -> Optional[List[int]]:
    """Each cell's terminal cells; None where a cell is not one printable line."""
    joined = "".join(column)
    if joined.isascii():
        return list(map(len, column)) if joined.isprintable() else None
    got = [_size(x) for x in column]
    return None if None in got else got  # type: ignore[return-value]


def _column(column: Sequence[str], sizes: Sequence[int], width: int, justify: str,
            left: str, right: str) -> List[str]:
    """A column's cells justified in ``width`` (each fits), between its padding."""
    if "".join(column).isascii():  # (a character a cell: str's own justification)
        if justify == "left":
            return [left + x.ljust(width) + right for x in column]
        if justify == "right":
            return [left + x.rstrip().rjust(width) + right for x in column]
    return [left + _justified(x, n, width, justify) + right for x, n in zip(column, sizes)]


def plain_segments(drawn: Sequence[str]) -> List[Segment]:
    """Lines of :func:`lines` as the segments printed: each line one segment, then a new
    line."""
    out: List[Segment] = []
    for line in drawn:
        out.append(Segment(line))
        out.append(Segment("\n"))
    return out


def _cell_text(cell: Any) -> Optional[str]:
    """A cell's text where Rich draws it at its column's justify, one line of that text
    (a Text of no justify of its own, a str no markup or emoji code could change)."""
    if isinstance(cell, Text):
        if cell.justify is not None or cell.end != "\n" or cell.overflow == "ignore":
            return None
        return cell.plain
    if isinstance(cell, str) and "[" not in cell and ":" not in cell:
        return cell
    return None


def _justified(text: str, size: int, width: int, justify: str) -> str:
    """``text`` (``size`` cells, at most ``width``) justified in ``width`` as
    ``_Draw.one_line`` (a cell) and ``Lines.justify`` (a title that fits) do it."""
    shift = 0
    if justify != "left":
        stripped = text.rstrip()
        if stripped != text:
            text, size = stripped, cell_len(stripped)
        shift = width - size if justify == "right" else (width - size) // 2
    return " " * shift + text + " " * (width - size - shift)


def _title_line(table: "Table", width: int) -> Optional[str]:
    """The title as ``_title`` renders it, where it is one printable line that fits."""
    title: Any = table.title
    if isinstance(title, Text):
        if title.end != "\n" or title.overflow == "ignore":
            return None
        text, justify = title.plain, title.justify or table.title_justify
    elif isinstance(title, str) and "[" not in title and ":" not in title:
        text, justify = title, table.title_justify
    else:
        return None
    size = _size(text)
    if size is None or size > width or justify not in _JUSTIFY:
        return None
    return _justified(text, size, width, justify)


def _plain_shape(table: "Table") -> bool:
    """No box (so no border style), no footer or caption, no row styles, no fixed or
    minimum table width, no vertical padding, no highlighting: the tables the renderers
    build."""
    top, _, bottom, _ = table.padding
    return bool(table.columns) and table.box is None and not table.show_footer \
        and not table.caption and not table.row_styles and table.width is None \
        and table.min_width is None and not table.expand and top == 0 and bottom == 0 \
        and not table.highlight \
        and all(r.style is None for r in table.rows) \
        and not any(c.highlight for c in table.columns)


def _padding(table: "Table", i: int) -> Tuple[int, int]:
    """(left, right) padding of column ``i``'s cells, as ``Table._get_cells`` gives them."""
    _, right, _, left = table.padding
    if table.collapse_padding and i != 0:
        left = max(0, left - right)
    if not table.pad_edge:
        if i == 0:
            left = 0
        if i == len(table.columns) - 1:
            right = 0
    return left, right


def _as_text(cell: Any) -> Optional[Text]:
    """A cell as the Text Rich renders: a Text as it is; a str with nothing markup or emoji
    codes could change, as plain text; anything else None (left to Rich)."""
    if isinstance(cell, Text):
        return cell
    if isinstance(cell, str) and "[" not in cell and ":" not in cell:
        return Text(cell)
    return None


def _longest_line(plain: str) -> int:
    """The terminal cells of a cell's longest line."""
    size = _size(plain)
    if size is None:
        lines = plain.splitlines()
        size = max(cell_len(x) for x in lines) if lines else 0
    return size


def _widths(table: "Table", max_width: int, longest: Sequence[int],
            pads: Sequence[Tuple[int, int]]) -> Optional[List[int]]:
    """Each column's width as ``Table._calculate_column_widths`` gives it where nothing is
    collapsed: its widest cell (``longest``: its longest line, in terminal cells; and
    padding), within its minimum and maximum width."""
    if max_width < 1:
        return None
    widths: List[int] = []
    for i, col in enumerate(table.columns):
        left, right = pads[i]
        pad = table._get_padding_width(i)
        if max_width - left - right < 1:
            return None
        if col.width is not None:
            w = min(col.width + pad, max_width)
        else:
            w = min(min(longest[i], max_width) + left + right, max_width)
            if col.min_width is not None:
                w = max(w, col.min_width + pad)
            if col.max_width is not None:
                w = min(w, col.max_width + pad)
        widths.append(w or 1)
    return widths if sum(widths) <= max_width else None


def _collapsed(table: "Table", cells: Sequence[Sequence[str]], pads: Sequence[Tuple[int, int]],
               max_width: int) -> Optional[List[int]]:
    """``Table._calculate_column_widths`` at ``max_width`` for a table of one-line printable
    cells (``cells``: its rows' text, the header first where shown), not expanded, of no
    minimum width, its columns of no width, minimum or maximum of their own: each cell
    measured here as ``Measurement.get`` measures its padded Text, the widths collapsed by
    Rich's own ``_collapse_widths`` and ``ratio_reduce``; None for any other table."""
    from rich._ratio import ratio_reduce

    cols = table.columns
    if table.expand or table.min_width is not None or any(
            c.width is not None or c.min_width is not None or c.max_width is not None
            for c in cols):
        return None
    longest: List[int] = []
    for i in range(len(cols)):
        sizes = [_size(row[i]) for row in cells]
        if not sizes or None in sizes:
            return None
        longest.append(max(sizes))  # type: ignore[type-var, arg-type]
    widths = [_measured(n, pads[i], max_width) or 1 for i, n in enumerate(longest)]
    if sum(widths) > max_width:
        widths = table._collapse_widths(
            widths, [c.width is None and not c.no_wrap for c in cols], max_width)
        if sum(widths) > max_width:
            widths = ratio_reduce(sum(widths) - max_width, [1] * len(widths), widths, widths)
        widths = [_measured(n, pads[i], w) for i, (n, w) in enumerate(zip(longest, widths))]
    return widths


def _measured(longest: int, pad: Tuple[int, int], width: int) -> int:
    """The maximum of ``Table._measure_column`` at ``width`` for a column of text cells
    whose longest is ``longest`` cells (its cells padded by ``pad``)."""
    extra = pad[0] + pad[1]
    if width < 1:
        return 0
    if width - extra < 1:  # (Padding.__rich_measure__: no room inside)
        return width
    inner = min(longest, width - extra)
    cell = min((inner if inner >= 1 else 0) + extra, width)
    return cell if cell >= 1 else 0


def _title(table: "Table", console: "Console", options: "ConsoleOptions",
           width: int) -> List[Segment]:
    """The title, as ``Table.__rich_console__`` renders it."""
    title: Any = table.title
    if isinstance(title, str):
        title = console.render_str(title, style=Style.pick_first(table.title_style,
                                                                 "table.title"),
                                   highlight=False)
    opts = options.update(width=width, highlight=table.highlight, height=None)
    return list(console.render(title, options=opts.update(justify=table.title_justify)))


class _Draw:
    """Rows of cells as segments; styles looked up and added once each."""

    def __init__(self, console: "Console", options: "ConsoleOptions", fits: bool) -> None:
        self.console = console
        self.options = options
        #: no colour system (not a terminal, TERM=dumb) and not recording: a style prints
        #: nothing (``Style.render``), so a line is one segment of its text; not where the
        #: table is wider than the width (the console cuts its lines segment by segment)
        self.plain = console.color_system is None and not console.record and fits
        self.styles: Dict[Any, Style] = {}
        self.sums: Dict[Tuple[Style, Style], Style] = {}
        #: a cell's line by what decides it (column, base style, the Text's text, style,
        #: spans, justify, overflow, end): a table repeats its cells (``active``, ``0/0/0``)
        self.lines: Dict[Tuple[Any, ...], Optional[List[Segment]]] = {}

    def style(self, name: Any) -> Style:
        got = self.styles.get(name)
        if got is None:
            got = self.styles[name] = self.console.get_style(name, default=_NULL)
        return got

    def add(self, base: Style, style: Style) -> Style:
        key = (base, style)
        got = self.sums.get(key)
        if got is None:
            got = self.sums[key] = base + style
        return got

    def row(self, row: Sequence[Text], cols: Sequence[Any], widths: Sequence[int],
            pads: Sequence[Tuple[int, int]], styles: Sequence[Style], raw: Sequence[Any],
            header: bool) -> List[Segment]:
        """One table row: its cells side by side, line by line, then a new line each."""
        cells: List[List[List[Segment]]] = []
        lines = self.lines
        for t, col, w, (left, right), style, cell in zip(row, cols, widths, pads, styles,
                                                          raw):
            # (where styles print nothing, the line is its text: styles and spans aside)
            key = (id(col), t.plain, t.justify, t.overflow, t.end) if self.plain else (
                id(col), style, t.plain, t.style, tuple(t.spans), t.justify, t.overflow, t.end)
            if key in lines:
                one = lines[key]
            else:
                one = lines[key] = self.one_line(t, col, w - left - right, left, right, style)
            if one is not None:
                cells.append([one])
                continue
            wrapped = self.wrapped(t, col, w - left - right, left, right) if self.plain \
                else None
            cells.append(wrapped if wrapped is not None
                         else self.by_rich(cell, col, w, left, right, style))
        tallest = max(len(c) for c in cells)
        height = max(1, tallest)
        if any(len(c) != height for c in cells):
            cells = [Segment.set_shape(_aligned(c, raw[i], cols[i], widths[i], tallest,
                                                styles[i], header), widths[i], height)
                     for i, c in enumerate(cells)]
        out: List[Segment] = []
        for n in range(height):
            if self.plain:
                out.append(Segment("".join([x.text for c in cells for x in c[n]])))
            else:
                for c in cells:
                    out.extend(c[n])
            out.append(Segment("\n"))
        return out

    def by_rich(self, cell: Any, col: Any, width: int, left: int, right: int,
                style: Style) -> List[List[Segment]]:
        """A cell Rich renders itself, exactly as ``Table._render`` does."""
        opts = self.options.update(width=width, justify=col.justify, no_wrap=col.no_wrap,
                                   overflow=col.overflow, height=None, highlight=col.highlight)
        from rich.padding import Padding  # (only here: not for a table drawn from its text)

        return self.console.render_lines(Padding(cell, (0, right, 0, left)), opts,
                                         style=style)

    def wrapped(self, t: Text, col: Any, width: int, left: int,
                right: int) -> Optional[List[List[Segment]]]:
        """Where styles print nothing: a cell's lines as Rich wraps them (``Text.wrap`` with
        what ``Text.__rich_console__`` gives it), each padded (or cut) to the column's width
        as ``render_lines`` pads it, then the cell's padding; None where Rich is needed."""
        if width < 1 or t.end != "\n" or not t.plain.replace("\n", "").isprintable():
            return None  # (a control character: Rich strips some where it cuts the text)
        justify = t.justify or col.justify or "default"
        overflow = t.overflow or col.overflow or "fold"
        no_wrap = bool(col.no_wrap if t.no_wrap is None else t.no_wrap)
        plain = t.plain
        if justify in _JUSTIFY and overflow != "ignore" and plain.isprintable():
            texts = wrapped_text(plain, width, justify, overflow, no_wrap)  # (one line)
        else:
            tab = self.console.tab_size if t.tab_size is None else t.tab_size
            texts = [line.plain for line in t.wrap(self.console, width, justify=justify,
                                                   overflow=overflow, tab_size=tab or 8,
                                                   no_wrap=no_wrap)]
        out: List[List[Segment]] = []
        for text in texts:
            size = cell_len(text)
            text = text + " " * (width - size) if size <= width else set_cell_size(text, width)
            out.append([Segment(" " * left + text + " " * right)])
        return out

    def one_line(self, t: Text, col: Any, width: int, left: int, right: int,
                 base: Style) -> Optional[List[Segment]]:
        """A cell that fits one line of its column, as Rich renders it (justified, padded,
        split where its spans begin and end); None for any other cell."""
        plain = t.plain
        size = _size(plain)
        justify = t.justify or col.justify
        if size is None or size > width or width < 1 or justify not in _JUSTIFY \
                or t.end != "\n" \
                or (t.overflow or col.overflow) == "ignore":
            return None
        spans = [] if self.plain else t.spans
        if spans and any(s.start < 0 or s.end > len(plain) or s.start > s.end for s in spans):
            return None
        shift = 0
        if justify != "left":
            stripped = plain.rstrip()
            if stripped != plain:  # (Text.rstrip: spans cut at the new end)
                cut = len(stripped)
                spans = [s if s.end < cut else Span(s.start, min(cut, s.end), s.style)
                         for s in spans if s.start < cut]
                plain = stripped
                size = cell_len(plain)
            shift = width - size if justify == "right" else (width - size) // 2
        body = " " * shift + plain + " " * (width - size - shift) if size < width else plain
        if self.plain:
            return [Segment(" " * left + body + " " * right)]
        out = [Segment(" " * left, base)] if left else []
        if spans:
            out.extend(self.spans(body, t.style, spans, shift, base))
        else:
            out.append(Segment(body, self.add(base, self.style(t.style)) if t.style else base))
        if right:
            out.append(Segment(" " * right, base))
        return out

    def spans(self, body: str, style: Any, spans: Sequence[Span], shift: int,
              base: Style) -> List[Segment]:
        """``Text.render`` of ``body`` (the justified line, as ``Text.join`` leaves it: the
        Text's own style a span over all of it), each segment's style added to ``base``."""
        n = len(body)
        marks: List[Tuple[int, int, Style]] = []  # (start, end, style), in span order
        if style:
            marks.append((0, n, self.style(style)))
        marks.extend((s.start + shift, s.end + shift, self.style(s.style)) for s in spans)
        cuts = sorted({0, n} | {m[0] for m in marks} | {m[1] for m in marks})
        out: List[Segment] = []
        for a, b in zip(cuts, cuts[1:]):
            current = _NULL
            for start, end, s in marks:
                if start <= a < end:
                    current = current + s
            out.append(Segment(body[a:b], self.add(base, current)))
        return out


def _aligned(lines: List[List[Segment]], raw: Any, col: Any, width: int, height: int,
             style: Style, header: bool) -> List[List[Segment]]:
    """A cell's lines aligned in a row of ``height`` lines, as ``Table._render`` aligns them
    (a header at the bottom, else the cell's or column's vertical alignment)."""
    vertical = "bottom" if header else (getattr(raw, "vertical", None) or col.vertical)
    if vertical == "top":
        return Segment.align_top(lines, width, height, style)
    if vertical == "middle":
        return Segment.align_middle(lines, width, height, style)
    return Segment.align_bottom(lines, width, height, style)
