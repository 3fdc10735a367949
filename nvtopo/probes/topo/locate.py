"""Where the matrix is: the header line and the row lines, found reading at most two tokens
a line (linear in the text, however it is damaged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .scan import (AFF_COL_RE, AFFINITY_LIKE_RE, MAX_DEVICES, MAX_LINE_CHARS, MAX_NOTES,
                   TopoParseError, clean_text, device_name, first_two, header_start, is_cell,
                   is_label, split_tokens)
from .unwrap import untruncate, unwrap

__all__ = ["Found", "TopoParseError", "find_header", "locate", "looks_like_topo",
           "matrix_starts"]



@dataclass
class Found:
    """What :func:`locate` found: where the matrix is, read from two tokens a line."""

    header: Optional[int]
    #: (line index, label) of each row: every first occurrence of a label, and the first
    #: MAX_NOTES repeats (later repeats are only counted, in ``more_repeats``).
    rows: List[Tuple[int, str]]
    labels: List[str]  # distinct row labels in order
    more_repeats: int = 0


def looks_like_topo(text: str) -> bool:
    """True when ``text`` holds something :func:`parse` can read as a matrix."""
    try:
        lines = clean_text(text)
        starts = matrix_starts(lines)
        if len(starts) > 1:  # the first matrix decides, as in parse
            lines = lines[:starts[1]]
        lines = unwrap(lines, find_header(lines))[0]
        locate(untruncate(lines, find_header(lines))[0])
    except TopoParseError:
        return False
    return True


def find_header(lines: List[str]) -> Optional[int]:
    """The index of the first line that looks like a matrix header, or None."""
    return next((i for i, line in enumerate(lines) if _header_candidate(line)), None)


#: A prompt's command line (``$ nvidia-smi topo -p2p r``): it belongs to the matrix after it.
_COMMAND_RE = re.compile(r"nvidia-smi\s+topo\b")


def matrix_starts(lines: List[str]) -> List[int]:
    """Where each matrix of a paste begins: ``[0]`` for a paste of one (or none), else
    ``0`` and, for each later header line that follows rows (a header line right after a
    header is the rest of a wrapped one, as before), the line of the command that printed
    it where the paste kept it after the rows (the header itself otherwise).  Prose, fences
    and legends between two matrices stay with the first one; linear in the text."""
    starts = [0]
    head: Optional[int] = None
    rows = False
    for i, line in enumerate(lines):
        if _header_candidate(line):
            if head is None or rows:
                if head is not None:
                    start = i
                    for k in range(i - 1, head, -1):
                        if len(lines[k]) <= MAX_LINE_CHARS and _COMMAND_RE.search(lines[k]):
                            start = k
                            break
                    starts.append(start)
                head, rows = i, False
        elif head is not None and not rows and _row_candidate(first_two(line)):
            rows = True
    return starts


def _row_candidate(first_two: List[str]) -> bool:
    # a cell token is never a device name (``NODE NODE SYS``: a wrapped row's rest)
    return (len(first_two) >= 2 and is_label(first_two[0]) and not is_cell(first_two[0])
            and not AFFINITY_LIKE_RE.match(first_two[0]) and is_cell(first_two[1]))


def _header_candidate(line: str) -> bool:
    """A header names devices (``GPU0 ... NIC0 ... mlx5_0``), then affinity columns.

    A line longer than :data:`MAX_LINE_CHARS` is judged by its first two names only
    (:func:`locate` then refuses it).
    """
    s = line.lstrip()
    if not s.startswith("GPU"):
        return False  # the first name of a header is GPU#
    two = s.split(None, 2)[:2]
    if len(two) == 2 and is_cell(two[1]) and not AFF_COL_RE.search(two[0]):
        return False  # a GPU row (no cell token holds the start of an affinity title)
    head = AFF_COL_RE.split(line, 1)[0]
    two = head.split(None, 2)[:2]  # names only: empty TAB fields do not count here
    if not two or not header_start(two[0]):
        return False
    if len(two) > 1 and (is_cell(two[1]) or not device_name(two[1])):
        return False  # a GPU row (or not a header)
    if len(head) > MAX_LINE_CHARS:
        return True
    return all(device_name(t.text) for t in split_tokens(head)[0] if t.text)


def locate(lines: List[str]) -> Found:
    """The header line (or None) and the candidate row lines after it."""
    header = None
    for i, line in enumerate(lines):
        if _header_candidate(line):
            header = i
            break
    if header is not None and len(lines[header]) > MAX_LINE_CHARS:
        raise TopoParseError(f"line {header + 1} looks like a topo header but is "
                             f"{len(lines[header])} characters long, more than the "
                             f"{MAX_LINE_CHARS} nvtopo reads")
    start = 0 if header is None else header + 1
    rows: List[Tuple[int, str]] = []
    seen: Dict[str, int] = {}
    repeats = 0
    for i in range(start, len(lines)):
        line = lines[i]
        if header is not None and _header_candidate(line):
            break  # a second matrix: only the first one is read
        two = first_two(line)
        if len(two) < 2:
            continue
        label = two[0]
        if label in seen:  # a label seen as a row's is one (the common repeated row)
            if not is_cell(two[1]):
                continue
            repeats += 1
            if repeats <= MAX_NOTES:
                rows.append((i, label))
            continue
        if not _row_candidate(two):
            continue
        seen[label] = i
        if len(seen) > MAX_DEVICES:
            raise TopoParseError(f"matrix has rows for more than the {MAX_DEVICES} devices "
                                 "nvtopo reads")
        rows.append((i, label))
    if header is None and not rows:
        raise TopoParseError("no nvidia-smi topo matrix found (expected a header line "
                             "starting with GPU0 and rows of X, NV#, PIX, PXB, PHB, NODE, SYS)",
                             found=False)
    if header is not None and not rows:
        raise TopoParseError("found a topo header line but no matrix rows under it")
    return Found(header, rows, list(seen), max(0, repeats - MAX_NOTES))
