"""render/grid.py draws a borderless table as Rich draws it: the same bytes, in colour and
without, at every width (random tables against Rich's own rendering, and the tables of
``links`` and ``show`` themselves)."""

from __future__ import annotations

import io
from functools import lru_cache
from typing import Any, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from nvtopo import layouts
from nvtopo.render import grid, links, matrix
from nvtopo.render.cells import printable
from nvtopo.render.layout import Fitted, Sheet
from nvtopo.simulate import simulate


class _Drawn:
    """A table through render/grid.py (Rich's own table where grid declines it)."""

    def __init__(self, table: Table, seen: List[bool]) -> None:
        self.table, self.seen = table, seen

    def __rich_console__(self, console: Console, options: Any) -> Any:
        drawn = grid.segments(self.table, console, options)
        self.seen.append(drawn is not None)
        if drawn is None:
            yield self.table
        else:
            yield from drawn


def _console(width: int, colour: bool) -> Console:
    return Console(file=io.StringIO(), width=width, force_terminal=colour,
                   color_system="truecolor" if colour else None, highlight=False,
                   markup=False, emoji=False, no_color=not colour)


def _both(make: Any, width: int, colour: bool) -> Any:
    """(what grid prints, what Rich prints, whether grid drew it), each from a fresh table
    (the renderers' tables are built for one print)."""
    seen: List[bool] = []
    mine, theirs = _console(width, colour), _console(width, colour)
    mine.print(_Drawn(make(), seen))
    theirs.print(make())
    return mine.file.getvalue(), theirs.file.getvalue(), any(seen)


_STYLES = st.sampled_from(["", "bold", "dim", "green", "bold red", "italic underline",
                           "yellow on blue", "table.title", "bold bright_cyan"])
_WORDS = st.text(alphabet=st.sampled_from(list("ab  Z0/-·é漢\n\t\x1b")),
                 max_size=14)


@st.composite
def _texts(draw: Any) -> Any:
    plain = draw(_WORDS)
    t = Text(plain, style=draw(_STYLES), justify=draw(st.sampled_from(
        [None, None, "left", "right", "center"])))
    for _ in range(draw(st.integers(0, 3))):
        a = draw(st.integers(0, len(plain)))
        t.stylize(draw(_STYLES), a, draw(st.integers(a, len(plain))))
    if draw(st.booleans()):  # appended parts, as links' error counters are built
        t.append(draw(_WORDS), style=draw(_STYLES))
    return t


@st.composite
def _tables(draw: Any) -> Any:
    ncols = draw(st.integers(1, 4))
    nrows = draw(st.integers(0, 4))
    spec = dict(
        title=draw(st.one_of(st.none(), _texts(), st.sampled_from(["GPUs", "a long title"]))),
        title_justify=draw(st.sampled_from(["left", "center", "right"])),
        show_header=draw(st.booleans()), pad_edge=draw(st.booleans()),
        padding=draw(st.sampled_from([(0, 1), (0, 2, 0, 0), (0, 1, 0, 0), 0, (0, 0, 0, 2)])),
        collapse_padding=draw(st.booleans()),
        header_style=draw(_STYLES), show_edge=False, box=None)
    cols = [dict(header=draw(st.one_of(_texts(), st.sampled_from(["Link", "GB/s", "a b"]))),
                 justify=draw(st.sampled_from(["left", "right", "center"])),
                 no_wrap=draw(st.booleans()), style=draw(_STYLES),
                 overflow=draw(st.sampled_from(["fold", "ellipsis", "crop"])),
                 min_width=draw(st.one_of(st.none(), st.integers(0, 6))),
                 max_width=draw(st.one_of(st.none(), st.integers(1, 9))),
                 width=draw(st.one_of(st.none(), st.none(), st.integers(1, 8))),
                 vertical=draw(st.sampled_from(["top", "middle", "bottom"])))
            for _ in range(ncols)]
    rows = [[draw(st.one_of(_texts(), st.sampled_from(["", "x", "12.5", "a [b]"])))
             for _ in range(ncols)] for _ in range(nrows)]
    width = draw(st.integers(8, 70))

    def make() -> Table:
        t = Table(**spec)
        for c in cols:
            head = c["header"].copy() if isinstance(c["header"], Text) else c["header"]
            t.add_column(head, **{k: v for k, v in c.items() if k != "header"})
        for r in rows:
            t.add_row(*[x.copy() if isinstance(x, Text) else x for x in r])
        return t

    return make, width


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tables(), st.booleans())
def test_a_random_table_prints_as_rich_prints_it(drawn: Any, colour: bool) -> None:
    make, width = drawn
    mine, theirs, _ = _both(make, width, colour)
    assert mine == theirs


FAULTS = ("nvlink-down:GPU3:7", "counters:mlx5_2:symbol_error=100", "pcie-width:GPU5:8")


@lru_cache(maxsize=None)
def _node(faults: Tuple[str, ...]) -> Any:
    """The model of a simulated DGX H100 (``FAULTS``: a link down, a port's counters, a GPU
    at x8), made once per test run (drawing reads it, never changes it)."""
    from nvtopo import snapshot

    doc = simulate(layouts.load("dgx-h100"), list(faults), seed=3, hostname="dgx-node-0001")
    return snapshot.load_text(snapshot.dumps(doc), "node.json")


#: grid's ways of drawing a table itself (each declines with None, leaving it to Rich)
_DRAWERS = ("segments", "table_lines", "fitted_lines", "lines")


def _printed(renderable: Any, width: int, colour: bool, by_grid: bool) -> Tuple[str, List[str]]:
    """What ``renderable`` prints: with grid (and which of its drawers drew), or with every
    drawer of grid declining (Rich's own table)."""
    seen: List[str] = []
    con = _console(width, colour)
    with pytest.MonkeyPatch.context() as patch:
        for name in _DRAWERS:
            real = getattr(grid, name)

            def spy(*a: Any, _real: Any = real, _name: str = name) -> Any:
                out = _real(*a)
                if out is not None:
                    seen.append(_name)
                return out

            patch.setattr(grid, name, spy if by_grid else lambda *a: None)
        con.print(renderable)
    return con.file.getvalue(), seen


def _fitted(make: Any, width: int, colour: bool) -> Any:
    """``Fitted(table)`` as the renderers print it: (with grid, without grid, drawn)."""
    mine, seen = _printed(Fitted(make()), width, colour, True)
    theirs, _ = _printed(Fitted(make()), width, colour, False)
    return mine, theirs, bool(seen)


@pytest.mark.parametrize("width", [52, 80, 200])
@pytest.mark.parametrize("colour", [False, True])
def test_the_links_tables_are_drawn_here_byte_for_byte(width: int, colour: bool,
                                                       monkeypatch: Any) -> None:
    doc = links.links_doc(_node(FAULTS))
    for g in doc["gpus"][2:4]:  # GPU3 has a link down (red, its reason) beside healthy GPU2
        mine, theirs, drawn = _fitted(lambda g=g: links.gpu_table(g), width, colour)
        assert mine == theirs
        assert drawn is (width >= 80)  # (at 52 columns the rows are records)
        assert ("\x1b[" in mine) is colour


@pytest.mark.parametrize("width", [60, 80, 200])
@pytest.mark.parametrize("colour", [False, True])
def test_shows_tables_are_drawn_here_byte_for_byte(width: int, colour: bool,
                                                   monkeypatch: Any) -> None:
    """A healthy node's GPU table at 80 columns is fitted: its wrapped cells are Rich's to
    draw; the faulty node's (a longer PCIe cell) is records, as at 60 columns."""
    for topo in (_node(()), _node(FAULTS)):
        for make in (lambda: matrix.gpu_table(topo), lambda: matrix.nic_table(topo)):
            mine, theirs, drawn = _fitted(make, width, colour)
            assert mine == theirs
            assert drawn or width == 60 or topo.gpu(5).sysfs.link.width_below_max
    seen: List[bool] = []
    mine, theirs = _console(width, colour), _console(width, colour)
    mine.print(_Drawn(matrix.legend(topo), seen))
    theirs.print(matrix.legend(topo))
    assert seen == [True] and mine.file.getvalue() == theirs.file.getvalue()  # (wrapped ≤ 80)


def test_a_table_of_another_shape_is_left_to_rich() -> None:
    con = _console(80, False)
    boxed = Table(box=box.SIMPLE)
    boxed.add_column("a")
    boxed.add_row("1")
    assert grid.segments(boxed, con, con.options) is None
    nested = Table(box=None)
    nested.add_column("a")
    nested.add_row(Table())  # a renderable in a cell: Rich's to draw
    assert grid.segments(nested, con, con.options) is None
    plain = Table(box=None, show_edge=False)
    plain.add_column("a")
    plain.add_row("1")
    assert grid.segments(plain, con, con.options) is not None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_texts(), max_size=5), st.integers(4, 30), st.booleans())
def test_lines_print_as_a_group_of_them_prints(lines: List[Text], width: int,
                                                colour: bool) -> None:
    from rich.console import Group

    mine, theirs = _console(width, colour), _console(width, colour)
    mine.print(grid.Lines([t.copy() for t in lines]))
    theirs.print(Group(*[t.copy() for t in lines]))
    assert mine.file.getvalue() == theirs.file.getvalue()


@pytest.mark.parametrize("width", [40, 80, 200])
def test_shows_matrix_prints_as_before(width: int) -> None:
    """The matrix blocks (render/matrix.py ``_block_lines``) as a Group of their lines."""
    from rich.console import Group

    topo = _node(FAULTS)
    for colour in (False, True):
        mine, theirs = _console(width, colour), _console(width, colour)
        for part in matrix.matrix_tables(topo.matrix, width):
            mine.print(part)
            theirs.print(Group(*part.lines) if isinstance(part, grid.Lines) else part)
        assert mine.file.getvalue() == theirs.file.getvalue()
        assert "NV18" in mine.file.getvalue()


# --- tables drawn from their cells' text (grid.lines, layout.Sheet, Fitted's plain path) --

#: cells as renderers meet them, and worse: wide and combining characters, markup and emoji
#: codes (a str cell is parsed, a Text is not), controls, breaks, blanks at either end, an
#: identifier longer than any column
_ODD = st.sampled_from([
    "", "x", "GPU0", "12.5", "–", "·", "漢字", "a漢b", "e\u0301", "\u200b", "[bold]x[/bold]",
    "[link=http://e]y", ":smile:", "a\x1bb", "\x9b31m", "tab\there", "nl\nline", "  lead",
    "trail  ", "0000:07:00.0-a-very-long-identifier-that-wraps-at-any-width",
    "word word word word word word word"])
_CELL = st.one_of(_ODD, st.text(alphabet=st.sampled_from(list("ab  Z0/-·é漢[]:")), max_size=12))


@st.composite
def _sheets(draw: Any) -> Any:
    """(frame, rows of cell text, make, width): a borderless table as the renderers build
    one, its cells' text, and the same table with its rows (each cell a Text, or a str)."""
    ncols = draw(st.integers(1, 5))
    rows = draw(st.lists(st.lists(_CELL, min_size=ncols, max_size=ncols), max_size=5))
    as_str = draw(st.booleans())  # (str cells: Rich parses them, grid must decline some)
    spec = dict(
        title=draw(st.one_of(st.none(), _CELL, _CELL.map(lambda x: Text(x, style="bold")))),
        title_justify=draw(st.sampled_from(["left", "center", "right"])),
        show_header=draw(st.booleans()), pad_edge=draw(st.booleans()),
        padding=draw(st.sampled_from([(0, 1), (0, 2, 0, 0), (0, 1, 0, 0), 0])),
        collapse_padding=draw(st.booleans()), header_style=draw(_STYLES), show_edge=False,
        box=None)
    cols = [dict(header=draw(st.one_of(_CELL, _CELL.map(Text))),
                 justify=draw(st.sampled_from(["left", "right", "center"])),
                 no_wrap=draw(st.booleans()), style=draw(_STYLES),
                 overflow=draw(st.sampled_from(["fold", "ellipsis", "crop"])),
                 min_width=draw(st.one_of(st.none(), st.integers(0, 6))),
                 max_width=draw(st.one_of(st.none(), st.none(), st.integers(1, 9))),
                 width=draw(st.one_of(st.none(), st.none(), st.none(), st.integers(1, 8))))
            for _ in range(ncols)]
    styles = [draw(_STYLES) for _ in range(ncols)]
    width = draw(st.one_of(st.integers(8, 60), st.integers(60, 200)))

    def frame() -> Table:
        t = Table(**spec)
        for c in cols:
            head = c["header"].copy() if isinstance(c["header"], Text) else c["header"]
            t.add_column(head, **{k: v for k, v in c.items() if k != "header"})
        return t

    def make() -> Table:
        t = frame()
        for r in rows:
            t.add_row(*[x if as_str else Text(x, style=s) for x, s in zip(r, styles)])
        return t

    return frame, rows, make, width, as_str


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_sheets(), st.booleans())
def test_a_fitted_table_prints_as_rich_prints_it(drawn: Any, colour: bool) -> None:
    """``Fitted(table)`` with grid (its cells' text as lines where styles print nothing,
    else its segments) against ``Fitted`` with every drawer of grid declining: Rich's own
    table (or the records) of ``layout.fit(table)``."""
    _, _, make, width, _ = drawn
    mine, seen = _printed(Fitted(make()), width, colour, True)
    theirs, _ = _printed(Fitted(make()), width, colour, False)
    assert mine == theirs
    assert "table_lines" not in seen or not colour


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_sheets(), st.booleans())
def test_a_sheet_prints_as_its_table_prints(drawn: Any, colour: bool) -> None:
    """``Sheet(frame, rows, make)`` (drawn from the rows' text alone where it can be) prints
    what Rich prints for ``Fitted(make())``, the table with its rows."""
    frame, rows, make, width, as_str = drawn
    if as_str:  # (a Sheet's cells are Text: a str cell's text is not its source)
        return
    mine, seen = _printed(Sheet(frame(), rows, make), width, colour, True)
    theirs, _ = _printed(Fitted(make()), width, colour, False)
    assert mine == theirs
    assert "lines" not in seen or not colour


@pytest.mark.parametrize("width", [52, 80, 200])
@pytest.mark.parametrize("colour", [False, True])
def test_links_sheets_print_as_their_tables(width: int, colour: bool) -> None:
    """Each GPU's ``links`` table from its cells' text (styles printing nothing, at its
    natural width) or as ``Fitted(gpu_table)``: the bytes of Rich's own table or records."""
    doc = links.links_doc(_node(FAULTS))
    for g in doc["gpus"]:
        mine, seen = _printed(links.gpu_sheet(g), width, colour, True)
        theirs, _ = _printed(Fitted(links.gpu_table(g)), width, colour, False)
        assert mine == theirs
        assert seen == (["lines"] if not colour and width >= 80 else
                        ["segments"] if width >= 80 else [])
        assert ("\x1b[" in mine) is colour


def test_lines_decline_what_they_cannot_draw() -> None:
    """A cell that is not one printable line, a table too wide for the width (fit narrows
    it), a title longer than the table: None (Rich's); else the lines, title first."""
    def frame(title: Any = "GPUs") -> Table:
        t = Table(title=title, title_justify="left", box=None, pad_edge=False,
                  padding=(0, 2, 0, 0), show_edge=False)
        t.add_column("GPU", no_wrap=True)
        t.add_column("NUMA", justify="right")
        return t

    got = grid.lines(frame(), [("GPU0", "0"), ("GPU1", "1")], 80)
    assert got == ["GPUs      ", "GPU   NUMA", "GPU0     0", "GPU1     1"]
    assert grid.lines(frame(), [("GPU0", "a\nb")], 80) is None
    assert grid.lines(frame(), [("GPU0", "a\x1bb")], 80) is None
    assert grid.lines(frame(), [("GPU0", "x" * 80)], 80) is None
    assert grid.lines(frame("a title longer than the table"), [("GPU0", "0")], 80) is None
    assert grid.lines(frame(), [("GPU0",)], 80) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_CELL.map(printable), st.sampled_from(["", "bold", "dim", "yellow"])),
                max_size=8))
def test_a_matrix_line_is_its_parts_appended(parts: List[Tuple[str, str]]) -> None:
    """render/matrix.py makes a matrix line at once (``grid.Parts``) from printable parts
    (device names and tokens, made printable): the Text that appending its parts one by
    one makes (text, spans, the bytes it prints in colour and plain, in ``grid.Lines`` or
    alone, at any width)."""
    from rich.console import Group

    appended = Text(no_wrap=True)
    for part, style in parts:
        appended.append(part, style=style)
    made = grid.Parts(parts).text()
    assert (made.plain, made.spans, made.no_wrap) == (appended.plain, appended.spans, True)
    for width, colour in ((200, True), (200, False), (6, False), (6, True)):
        mine, alone, theirs = (_console(width, colour) for _ in range(3))
        mine.print(grid.Lines([grid.Parts(parts), Text("after")]))
        alone.print(grid.Parts(parts))
        theirs.print(Group(appended, Text("after")))
        assert mine.file.getvalue() == theirs.file.getvalue()
        assert alone.file.getvalue() + "after\n" == theirs.file.getvalue()


@settings(max_examples=150, deadline=None)
@given(_texts(), st.integers(0, 6), st.integers(0, 4), st.integers(4, 90), st.booleans())
def test_a_wrapped_line_prints_as_a_print_of_each_of_its_lines(
        line: Text, indent: int, hang: int, width: int, colour: bool) -> None:
    """``layout.print_wrapped`` prints its lines in one print (``grid.Lines``, soft-wrapped):
    the bytes a soft-wrapped print of each line gives, also where a line is wider than a
    narrow console (the width wrapped to is at least 20)."""
    from nvtopo.render.layout import print_wrapped

    mine, theirs = _console(width, colour), _console(width, colour)
    print_wrapped(mine, line.copy(), indent, hang)
    for i, part in enumerate(line.copy().wrap(theirs, max(width - indent - hang, 20),
                                              overflow="fold")):
        part.rstrip()
        theirs.print(Text.assemble(" " * (indent if i == 0 else indent + hang), part),
                     soft_wrap=True)
    assert mine.file.getvalue() == theirs.file.getvalue()


_WORDY = st.one_of(
    st.lists(st.sampled_from(["Gen5", "x16", "0-55,112-167", "PIX", "NIC0", "(mlx5_0)", "漢字",
                              "é", "a-b/c", "NODE", "0000:07:00.0"]), min_size=1,
             max_size=5).map(" ".join),
    st.text(alphabet=st.sampled_from(list("abcd  -/0漢é")), max_size=28))


@st.composite
def _narrowed(draw: Any) -> Any:
    """A borderless table of printable words, as show's GPU table is, at widths where
    ``layout.fit`` narrows it (its columns given widths, long cells wrapped)."""
    ncols = draw(st.integers(2, 5))
    rows = draw(st.lists(st.lists(_WORDY, min_size=ncols, max_size=ncols), min_size=1,
                         max_size=5))
    spec = dict(title=draw(st.sampled_from([None, "GPUs", "NVMe drives"])),
                title_justify="left", show_header=draw(st.booleans()),
                padding=draw(st.sampled_from([(0, 2, 0, 0), (0, 1)])), pad_edge=False,
                box=None, show_edge=False)
    cols = [dict(header=draw(st.sampled_from(["GPU", "CPU affinity", "PCIe link", "a b c"])),
                 justify=draw(st.sampled_from(["left", "right", "center"])),
                 no_wrap=draw(st.booleans()),
                 vertical=draw(st.sampled_from(["top", "middle", "bottom"])),
                 overflow=draw(st.sampled_from(["fold", "ellipsis"])))
            for _ in range(ncols)]
    width = draw(st.integers(24, 110))

    def make() -> Table:
        t = Table(**spec)
        for c in cols:
            t.add_column(c["header"], **{k: v for k, v in c.items() if k != "header"})
        for r in rows:
            t.add_row(*[Text(x) for x in r])
        return t

    return make, width


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_narrowed(), st.booleans())
def test_a_narrowed_table_prints_as_rich_prints_it(drawn: Any, colour: bool) -> None:
    """``Fitted`` of a table ``layout.fit`` narrows: drawn from its cells' text where styles
    print nothing (``grid.fitted_lines``, long cells wrapped), the bytes of Rich's own
    table of the narrowed columns."""
    make, width = drawn
    mine, seen = _printed(Fitted(make()), width, colour, True)
    theirs, _ = _printed(Fitted(make()), width, colour, False)
    assert mine == theirs
    assert "fitted_lines" not in seen or not colour


@pytest.mark.parametrize("width", [80, 90])
def test_shows_gpu_table_at_80_columns_is_drawn_from_its_text(width: int) -> None:
    """show's GPU table at 80 columns is narrowed (its PCIe link and nearest NIC cells
    wrap): where styles print nothing it is drawn from its cells' text."""
    mine, seen = _printed(Fitted(matrix.gpu_table(_node(()))), width, False, True)
    theirs, _ = _printed(Fitted(matrix.gpu_table(_node(()))), width, False, False)
    assert mine == theirs and seen == ["fitted_lines"]
    assert "Gen5" in mine and "x16" in mine


@settings(max_examples=300, deadline=None)
@given(st.one_of(_WORDY, _CELL.map(printable).map(lambda x: x.replace("\t", " "))),
       st.integers(1, 30), st.sampled_from(["left", "center", "right"]),
       st.sampled_from(["fold", "crop", "ellipsis"]), st.booleans())
def test_wrapped_text_is_rich_s_wrap(text: str, width: int, justify: str, overflow: str,
                                     no_wrap: bool) -> None:
    """grid.wrapped_text (a narrowed table's long cell, wrapped without a Text): the lines
    Rich's ``Text.wrap`` gives, for any printable line, width, justify and overflow."""
    con = _console(80, False)
    theirs = [line.plain for line in Text(text).wrap(con, width, justify=justify,
                                                      overflow=overflow, tab_size=8,
                                                      no_wrap=no_wrap)]
    assert grid.wrapped_text(text, width, justify, overflow, no_wrap) == theirs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_sheets(), _narrowed()), st.integers(-2, 200))
def test_collapsed_widths_are_rich_s(drawn: Any, width: int) -> None:
    """grid._collapsed (the widths of a table too wide for the width, as show's legend is):
    ``Table._calculate_column_widths``'s, wherever it gives any."""
    table = drawn[2]() if len(drawn) > 2 else drawn[0]()
    rows = [[c.header] + list(c.cells) if table.show_header else list(c.cells)
            for c in table.columns]
    texts = [[grid._cell_text(x) for x in row] for row in zip(*rows)]
    if any(None in row for row in texts):
        return
    pads = [grid._padding(table, i) for i in range(len(table.columns))]
    mine = grid._collapsed(table, texts, pads, width)  # type: ignore[arg-type]
    con = _console(max(width, 1), False)
    if mine is not None:
        assert mine == table._calculate_column_widths(con, con.options.update_width(width))
