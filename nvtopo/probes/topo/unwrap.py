"""A matrix hard-wrapped by a terminal or a ticket system, re-joined where its structure
allows, else refused.

A ``topo -m`` line longer than the paste's width (80, 120 columns) goes on in the next
line: cut exactly at the width (a terminal: a cell may be cut in two, ``NV1`` + ``8``), or
at the last space before it (a ticket system, maybe indenting what follows).  Read as it
is, the continuation ``NODE NODE SYS`` would be a device named ``NODE``.  Here:

* a *continuation* follows a header or a row line, is not blank, is not itself a row (a
  label that is not a cell token, then a cell) and holds no ``=`` or ``:`` (legends);
* the wrap is *exact* (cut at the width) when every wrapped line has the same length,
  else *at spaces*; the joins are tried in the likely order (exact: as cut, then without
  the continuation's indentation; at spaces: with one space) and the first under which
  every joined row has one cell per header device is kept;
* where none fits, :class:`~.scan.TopoParseError` says the matrix looks wrapped at N
  columns (the caller names the file): never a matrix with devices named after cells.

Joined lines replace the first line of each group and the continuations become empty,
so line numbers in notes stay those of the paste.  Linear in the text; no pattern.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from .scan import (AFF_COL_RE, TopoParseError, device_name, first_two, is_cell, is_label,
                   split_cells)

#: How a wrapped paste was re-joined: (width, "exact" or "spaces", lines joined).
Rejoined = Tuple[int, str, int]


_MODES = ("exact", "exact-strip", "spaces")


def _is_row(line: str, names: Optional[set] = None) -> bool:
    """A row line: a label that is no cell, then a cell.  Given the header's ``names``, the
    label is one of them or a device name that is no cut cell's rest (``DE`` of ``NODE``,
    ``V18`` of ``NV18``): a header may lack the NIC columns their rows have."""
    two = first_two(line)
    if not (len(two) >= 2 and is_label(two[0]) and not is_cell(two[0]) and is_cell(two[1])):
        return False
    lab = two[0]
    return names is None or lab in names or (
        device_name(lab) and not (lab[:1] == "V" and lab[1:].isdigit()))


def _is_header(line: str) -> bool:
    s = line.lstrip()
    if not s.startswith("GPU"):
        return False
    two = s.split(None, 2)[:2]
    return len(two) == 1 or not is_cell(two[1])


def _continues(line: str, names: Optional[set] = None) -> bool:
    return bool(line.strip()) and "=" not in line and ":" not in line and not _is_row(
        line, names) and not _is_header(line) and not line.lstrip().startswith(
            ("Legend", "NIC "))


def _header_more(line: str) -> bool:
    """The rest of a wrapped header: device names and affinity titles, no row."""
    return bool(line.strip()) and "=" not in line and ":" not in line and not _is_row(line)


#: Lines a wrapped header is read over (a 1024-device header at 80 columns is longer, and
#: is refused by the caller as it was).
_MAX_HEADER_LINES = 64


def _wrapped_header(lines: List[str]) -> Optional[int]:
    """A header the caller did not recognise because it is cut (``... mlx5_3  CPU``): a
    line starting ``GPU`` then a name, followed by header pieces, then a row."""
    i = 0
    while i < len(lines):
        if not _is_header(lines[i]):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and j - i <= _MAX_HEADER_LINES and not _is_row(lines[j]) \
                and _header_more(lines[j]):
            j += 1
        if j < len(lines) and j > i + 1 and _is_row(lines[j]):
            return i
        i = j  # every line is looked at a bounded number of times
    return None


def _cells(line: str) -> Tuple[int, int]:
    """Cells after the row label, up to the first token that is not one; and how many
    tokens follow them (affinity values: one a column)."""
    n = 0
    toks = line.split()[1:]
    for k, tok in enumerate(toks):
        if not is_cell(tok):
            return n, len(toks) - k
        n += len(split_cells(tok))
    return n, 0


def _devices(header: str) -> Tuple[int, int]:
    """Device names and affinity columns a header names."""
    return len(AFF_COL_RE.split(header, 1)[0].split()), len(AFF_COL_RE.findall(header))


def _join(parts: Sequence[str], mode: str) -> str:
    if mode == "exact":
        return "".join(parts)
    if mode == "exact-strip":
        return parts[0] + "".join(p.lstrip() for p in parts[1:])
    return " ".join([parts[0].rstrip()] + [p.strip() for p in parts[1:]])


def unwrap(lines: List[str], header: Optional[int]) -> Tuple[List[str], Optional[Rejoined]]:
    """``lines`` with a wrapped matrix re-joined (and how), or as they are when no line of
    the matrix is wrapped.  Raises ``TopoParseError`` for a wrapped matrix that cannot be
    re-joined."""
    if header is None:
        header = _wrapped_header(lines)
    start = header if header is not None else next(
        (i for i, ln in enumerate(lines) if _is_row(ln)), None)
    if start is None:
        return lines, None
    groups: List[List[int]] = []
    #: the device names a (re-joined) header gives: a row's label is one of them, so a
    #: cut cell's rest (``DE  PIX ...`` of ``NO|DE``) is no row of its own
    names: Optional[set] = None
    i = start
    while i < len(lines):
        ln = lines[i]
        first = not groups
        if not (first or _is_row(ln, names)):
            break
        group = [i]
        i += 1
        while i < len(lines) and (_continues(lines[i], names) or first and header is not None
                                  and _header_more(lines[i])):
            group.append(i)
            i += 1
        groups.append(group)
        if first and header is not None:
            parts = [lines[k] for k in group]
            names = {t for mode in _MODES for t in
                     AFF_COL_RE.split(_join(parts, mode), 1)[0].split()}
    wrapped = [g for g in groups if len(g) > 1]
    if not wrapped:
        return lines, None
    cut = [len(lines[k]) for g in wrapped for k in g[:-1]]
    width = max(cut)
    modes = ["exact", "exact-strip", "spaces"] if len(set(cut)) == 1 else ["spaces", "exact"]
    has_header = header is not None and groups[0][0] == header
    for mode in modes:
        joined = {g[0]: _join([lines[k] for k in g], mode) for g in groups}
        if has_header:
            want, cols = _devices(joined[groups[0][0]])
            rows = [joined[g[0]] for g in groups[1:]]
        else:
            rows = [joined[g[0]] for g in groups]
            want, cols = _cells(rows[0])[0], max(_cells(r)[1] for r in rows)
        shapes = [_cells(r) for r in rows]
        if rows and all(c == want and more <= cols for c, more in shapes):
            out = list(lines)
            for g in groups:
                out[g[0]] = joined[g[0]]
                for k in g[1:]:
                    out[k] = ""
            return out, (width, "exact" if mode.startswith("exact") else "spaces",
                         sum(len(g) - 1 for g in wrapped))
    raise TopoParseError(f"the matrix looks wrapped at {width} columns (line "
                         f"{wrapped[0][1] + 1} continues line {wrapped[0][0] + 1}) and "
                         "cannot be re-joined; paste it unwrapped")


def untruncate(lines: List[str], header: Optional[int]) -> Tuple[List[str], Optional[int]]:
    """``lines`` with the cut last token of each row dropped, when the paste cut its lines
    at one width (``less -S``, a ticket's column limit) with nothing following; and that
    width (None when no line was cut).

    A cut cell (``NV1`` of ``NV18``, ``PI``, ``SY``) or affinity (``0-4`` of ``0-47``)
    would read as another count or a token nobody printed; dropped, it is a cell not printed
    (the mirrored cell where there is one, else unknown).  The cut is recognised only with
    evidence: a row of that length short of cells, or the header itself that long.
    """
    if header is None:  # a header cut short (``... GPU4  GP``) is no header to locate()
        first = next((i for i, ln in enumerate(lines) if _is_row(ln)), None)
        if first is None or first == 0 or not _is_header(lines[first - 1]):
            return lines, None  # no header line at all: no evidence of a cut
        header = first - 1
    start = header
    rows: List[int] = []
    i = start + 1
    while i < len(lines) and (_is_row(lines[i]) or not lines[i].strip()) and (
            lines[i].strip() or not rows):
        if lines[i].strip():
            rows.append(i)
        i += 1
    if not rows:
        return lines, None
    labels = {first_two(lines[k])[0] for k in rows}
    want = max(_devices(lines[header])[0], len(labels))  # a square matrix: a row a device
    width = max(len(lines[k]) for k in rows)
    at_width = [k for k in rows if len(lines[k]) == width and not lines[k][-1:].isspace()]
    short = any(_cells(lines[k])[0] < want for k in at_width)
    # the header cut too: it ends at the width inside a word that is no device name and no
    # complete column title (``... NIC3  CPU Aff``)
    head = lines[header]
    last = head.split()[-1] if head.split() else ""
    header_cut = (len(head) == width and not head[-1:].isspace() and bool(at_width)
                  and not device_name(last) and last not in ("Affinity", "ID"))
    if not at_width or not (short or header_cut) or len(at_width) < 2:
        return lines, None
    out = list(lines)
    for k in at_width:
        line = out[k].rstrip()
        cut = len(line) - len(line.split()[-1]) if line.split() else len(line)
        out[k] = line[:cut]
    return out, width
