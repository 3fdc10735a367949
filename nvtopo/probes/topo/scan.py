"""The lexical layer of the ``nvidia-smi topo`` reader: cleaning pasted text, splitting lines
into tokens, and the linear scanners for what no safe pattern can read (glued header
names, glued cells, SGR remnants, device names); the bounds and the bounded notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ...model import Topology
from ...safe import is_ascii_digits

# Everything below reads untrusted text, so two rules hold here:
#
# * No regular expression has two repetitions that can match the same character at the
#   same point (nested or overlapping quantifiers): those backtrack for minutes on a line
#   of a hundred characters.  Where the grammar needs that (glued header names, glued
#   cells, SGR remnants, device names), a scanner is written out instead, linear in its
#   input.  tests/test_regex_budget.py times every pattern of the module on adversarial
#   text.
# * Digits are ASCII ``0``-``9`` (``\d`` also matches ``٣`` and ``３``), and numbers go
#   through :func:`nvtopo.safe.ascii_int`.
#
# Sizes are bounded too: a row or header line is at most MAX_LINE_CHARS long, a matrix
# names at most MAX_DEVICES devices, and no more than MAX_NOTES notes of one kind are
# kept (the rest are counted in one summary note).

_ANSI_RE = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]"  # CSI sequences
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
    r"|\[[0-9;]*m"  # an SGR remnant whose ESC was lost in a paste (checked by _unansi)
)
_CTRL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PREFIX_RE = re.compile(r"^[ \t]*(?:#+|//+|/\*+|\*+/?|>+|;+|--+)(?=[ \t]|$)[ \t]?", re.M)
_WORD_RE = re.compile(r"\S+")

#: Cell tokens other than ``NV#``, longest first.  None is a prefix of another token or of a
#: concatenation of tokens, and none starts with a digit, so glued cells have one reading
#: and a greedy scan finds it (tests/test_properties.py checks that by brute force).
_FIXED_CELLS = ("NODE", "PIX", "PXB", "PHB", "SYS", "SOC", "CNS", "GNS", "TNS", "NS", "OK",
                "DR", "X", "U")
AFFINITY_LIKE_RE = re.compile(r"^(?:N/A|[0-9][0-9,\-]*)?$")
_LABEL_CHARS_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_DOUBLE_SEP_RE = re.compile(r"[_.-][_.-]")
_NAME_CHARS_RE = re.compile(r"[A-Za-z][\w.-]*")
AFF_COL_RE = re.compile(r"CPU\s*Affinity|NUMA\s*Affinity|GPU\s*NUMA\s*ID", re.I)

#: Larger matrices are refused: the biggest real nodes print a few hundred devices.
MAX_DEVICES = 1024
#: Longest header or row line read (32 characters a device: nvidia-smi's columns are 8 to
#: 13 wide).  A longer header line is an error; a longer row is noted and not read.
MAX_LINE_CHARS = 32 * MAX_DEVICES
#: Notes of one code kept; the others are counted in one summary note (a 60 MB paste of
#: repeated rows would otherwise give a note per row).
MAX_NOTES = 64
#: Longest note message (longer ones, naming long labels, are cut and say so).
MAX_NOTE_CHARS = 2000
#: Glued header names are split only into row labels up to this long.
_MAX_GLUED_LABEL = 64


class TopoParseError(ValueError):
    """The text holds no ``nvidia-smi topo`` matrix at all (``found`` false), or one that
    cannot be read (a wrapped one that cannot be re-joined, a header without rows...)."""

    def __init__(self, message: str, found: bool = True) -> None:
        super().__init__(message)
        self.found = found


def _unansi(m: "re.Match[str]") -> str:
    s = m.group()
    if s[0] == "[":
        # ``[`` digits ``m``: a remnant only where the digits are groups of 1-3 split by ``;``
        params = s[1:-1]
        if params and not all(1 <= len(p) <= 3 for p in params.split(";")):
            return s
    return ""


def clean_text(text: str) -> List[str]:
    """Lines of ``text`` with BOM, ANSI codes, control bytes and comment prefixes removed."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI_RE.sub(_unansi, text)
    text = _CTRL_RE.sub("", text)
    return _PREFIX_RE.sub("", text).split("\n")


@dataclass
class Tok:
    text: str
    start: Optional[int]  # column in the line (space-aligned lines only)


def split_tokens(line: str) -> Tuple[List[Tok], bool]:
    """Split a line into tokens; in TAB-separated lines empty fields are kept as ``""``."""
    if "\t" in line:
        out: List[Tok] = []
        for fld in line.split("\t"):
            parts = fld.split()
            if parts:
                out.extend(Tok(p, None) for p in parts)
            elif out:  # leading empty fields are dropped
                out.append(Tok("", None))
        return out, True
    return [Tok(m.group(), m.start()) for m in _WORD_RE.finditer(line)], False


def first_two(line: str) -> List[str]:
    """The first two tokens :func:`split_tokens` gives for ``line`` (fewer if it has fewer).

    Reads no more of the line than it needs: this runs on every line of the input.
    """
    s = line.lstrip()
    if "\t" not in s:
        return s.split(None, 2)[:2]
    fields = s.split("\t", 2)
    first = fields[0].split(None, 2)
    if len(first) >= 2 or len(fields) == 1:
        return first[:2]
    second = fields[1].split(None, 1)
    return [first[0], second[0] if second else ""]


def scan_cells(tok: str, limit: int) -> Tuple[Optional[List[str]], int]:
    """Glued cells in ``tok`` (``NV18NV18X``): the first ``limit`` and how many there are.

    ``(None, 0)`` when ``tok`` is not a sequence of cell tokens.
    """
    cells: List[str] = []
    count = 0
    i, n = 0, len(tok)
    while i < n:
        if tok.startswith("NV", i):
            j = i + 2
            while j < n and "0" <= tok[j] <= "9":
                j += 1
            if j == i + 2:
                return None, 0
        else:
            for fixed in _FIXED_CELLS:
                if tok.startswith(fixed, i):
                    j = i + len(fixed)
                    break
            else:
                return None, 0
        if count < limit:
            cells.append(tok[i:j])
        count += 1
        i = j
    if count == 0:
        return None, 0
    return cells, count


_ONE_CELL = frozenset(_FIXED_CELLS)


def is_cell(tok: str) -> bool:
    if tok in _ONE_CELL or (tok[:2] == "NV" and is_ascii_digits(tok[2:])):
        return True  # the common case, without the scan
    return scan_cells(tok, 0)[0] is not None


def split_cells(tok: str) -> List[str]:
    cells, _ = scan_cells(tok, len(tok))
    return cells if cells is not None else [tok]


def is_label(tok: str) -> bool:
    """A row label: a letter, then letters and digits in groups joined by single ``_ . -``."""
    return (bool(_LABEL_CHARS_RE.fullmatch(tok)) and tok[-1] not in "_.-"
            and _DOUBLE_SEP_RE.search(tok) is None)


def device_name(tok: str) -> bool:
    """A header name: a letter, then word characters, ``.`` or ``-``, ending in a digit."""
    return "0" <= tok[-1:] <= "9" and bool(_NAME_CHARS_RE.fullmatch(tok))


def header_start(tok: str) -> bool:
    """``GPU<n>``, maybe glued to more device names (``GPU0GPU1NIC0``, ``GPU0mlx5_0``)."""
    if not tok.startswith("GPU"):
        return False
    i, n = 3, len(tok)
    while i < n and "0" <= tok[i] <= "9":
        i += 1
    if i == 3:
        return False
    return i == n or ("A" <= tok[i] <= "Z" or "a" <= tok[i] <= "z") and device_name(tok[i:])


def _digits_end(tok: str, i: int) -> int:
    while i < len(tok) and "0" <= tok[i] <= "9":
        i += 1
    return i


def _lower_end(tok: str, i: int) -> int:
    while i < len(tok) and "a" <= tok[i] <= "z":
        i += 1
    return i


def _glued_label_end(tok: str, i: int) -> int:
    """End of the device label at ``tok[i:]`` (``GPU3``, ``NIC0``, ``mlx5_0``, ``mlx5_bond_0``), or -1."""
    if tok.startswith("GPU", i) or tok.startswith("NIC", i):
        j = _digits_end(tok, i + 3)
        return j if j > i + 3 else -1
    j = _lower_end(tok, i)
    if j == i:
        return -1
    j = _digits_end(tok, j)
    if not tok.startswith("_", j):
        return -1
    j += 1
    k = _lower_end(tok, j)
    if k > j:  # mlx5_bond_0: a lowercase word and "_" before the number
        if not tok.startswith("_", k):
            return -1
        j = k + 1
    k = _digits_end(tok, j)
    return k if k > j else -1


def split_labels(tok: str, known: Sequence[str]) -> List[str]:
    """Split a glued header token (``GPU0GPU1NIC0``) into labels.

    First into the labels seen as row names (the earliest split point wins, as a
    left-to-right dynamic programme finds it), else into the shapes nvidia-smi
    prints (``GPU#``, ``NIC#``, ``mlx5_#``), else the token is one name.
    """
    known_set = set(known)
    if tok in known_set:
        return [tok]
    n = len(tok)
    lengths = sorted({len(lab) for lab in known_set if 0 < len(lab) <= min(n, _MAX_GLUED_LABEL)})
    prev: List[int] = [-1] * (n + 1)  # prev[j]: where the label ending at j starts
    reached = [False] * (n + 1)
    reached[0] = True
    for i in range(n):
        if not reached[i]:
            continue
        for ln in lengths:
            j = i + ln
            if j > n:
                break
            if not reached[j] and tok[i:j] in known_set:
                reached[j] = True
                prev[j] = i
    if n and reached[n]:
        out: List[str] = []
        j = n
        while j > 0:
            out.append(tok[prev[j]:j])
            j = prev[j]
        return out[::-1]
    pieces: List[str] = []
    i = 0
    while i < n:
        j = _glued_label_end(tok, i)
        if j < 0:
            return [tok]
        pieces.append(tok[i:j])
        i = j
    return pieces or [tok]


def clip(text: str, limit: int = 80) -> str:
    """``text`` shortened for a note (names in real output are far shorter)."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


class Notes:
    """``topo.note`` keeping at most :data:`MAX_NOTES` notes of one code.

    The others are counted, and :meth:`finish` adds one note per code saying how many
    were left out, so a paste of thousands of damaged rows gives a bounded model.
    """

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.count: Dict[str, int] = {}
        self.level: Dict[str, str] = {}

    def __call__(self, code: str, message: str, *, level: str = "info",
                 subject: Optional[str] = None) -> None:
        n = self.count.get(code, 0) + 1
        self.count[code] = n
        if n <= MAX_NOTES:
            self.topo.note(code, clip(message, MAX_NOTE_CHARS), level=level, subject=subject)
        else:
            self.level[code] = level

    def more(self, code: str, k: int, level: str) -> None:
        """``k`` further notes of ``code`` that were counted, not written."""
        if k > 0:
            self.count[code] = self.count.get(code, 0) + k
            self.level[code] = level

    def finish(self) -> None:
        for code, n in self.count.items():
            if n > MAX_NOTES:
                self.topo.note(code, f"… and {n - MAX_NOTES} more {code} notes like the "
                               f"ones above (only the first {MAX_NOTES} are listed)",
                               level=self.level.get(code, "info"))
