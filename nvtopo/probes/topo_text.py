"""The ``nvidia-smi topo`` text probe.

Two halves, kept apart:

* :func:`capture` runs ``nvidia-smi topo -m`` (an argument list, never a
  shell, with a timeout) and returns the raw evidence as a dict;
* :func:`parse` is a pure function from the text to model facts.  It reads
  what people actually paste: tabs, spaces or neither, indentation and
  comment prefixes, ANSI remnants, glued header names and cells, SOC-era
  and transitional legends, NIC Legends, ``-mp``/``--matrix`` and ``-p2p``
  outputs.  Damage is reported as notes on the model; unknown tokens are
  kept as printed.  Only input that holds no matrix at all is an error.
"""

from __future__ import annotations

import heapq
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from . import ProbeOptions
from ..model import GPU, NIC, Matrix, NVLinkPair, Topology, nvlink_count
from ..safe import ascii_int, is_ascii_digits

SOURCE = "topo-text"

#: Default wall-clock limit for ``nvidia-smi topo -m``: it can hang on a failing GPU.
DEFAULT_TIMEOUT = 30.0

DEFAULT_ARGS = ("topo", "-m")


class TopoParseError(ValueError):
    """The text holds no ``nvidia-smi topo`` matrix at all."""


# --- capture -----------------------------------------------------------------


def capture(options: Optional["ProbeOptions"] = None, args: Sequence[str] = DEFAULT_ARGS,
            executable: str = "nvidia-smi") -> Dict[str, object]:
    """Run ``nvidia-smi topo -m`` and return its raw evidence.

    Never raises for the expected failures: a missing ``nvidia-smi``, a
    non-zero exit, a hang or a flood of output are recorded in ``error``
    (with ``status`` ``missing``, ``failed`` or ``timeout``) so that
    snapshots keep them.  The run is bounded (:mod:`nvtopo.probes.run`): by
    the timeout, by a byte cap on each output stream (past it the output is
    cut and the status is ``failed``), and no process it started outlives it.
    """
    from . import run as bounded

    timeout = options.timeout if options is not None else DEFAULT_TIMEOUT
    argv = [executable, *args]
    command = " ".join(argv)
    evidence: Dict[str, object] = {
        "command": executable,
        "args": list(args),
        "exit_status": None,
        "stdout": None,
        "stderr": None,
        "duration_s": None,
        "timeout_s": timeout,
        "status": "ok",
        "error": None,
    }
    path = shutil.which(executable)
    if path is None:
        evidence["status"] = "missing"
        evidence["error"] = f"{executable} not found on PATH (no NVIDIA driver installed?)"
        return evidence
    start = time.monotonic()
    try:
        out = bounded.run([path, *args], timeout)
    except OSError as exc:
        evidence["duration_s"] = round(time.monotonic() - start, 3)
        evidence["status"] = "failed"
        evidence["error"] = f"could not run {executable}: {exc.strerror or exc}"
        return evidence
    evidence["duration_s"] = out.duration_s
    evidence["exit_status"] = out.returncode
    stdout, stderr = out.stdout, out.stderr
    if out.cut is not None:
        # Cut output is not parsed (status failed): a head is enough to see what it was,
        # and keeps the snapshot small.
        stdout, stderr = stdout[:bounded.KEEP_WHEN_CUT], stderr[:bounded.KEEP_WHEN_CUT]
    evidence["stdout"] = _decode(stdout)
    evidence["stderr"] = _decode(stderr)
    left = ""
    if out.left_behind:
        left = ("; processes " + ", ".join(map(str, out.left_behind[:8]))
                + " did not end after SIGKILL (stuck in the driver?)")
    if out.timed_out:
        evidence["status"] = "timeout"
        evidence["error"] = (f"{command} did not finish within {timeout:g} s "
                             f"(a GPU or the driver may be hung){left}")
    elif out.cut is not None:
        cap = bounded.STDOUT_CAP if out.cut == "stdout" else bounded.STDERR_CAP
        stream = "standard output" if out.cut == "stdout" else "standard error"
        evidence["status"] = "failed"
        evidence["error"] = (f"{command} printed more than {bounded.size_text(cap)} on {stream}; "
                             f"output cut and the program ended (the first "
                             f"{bounded.size_text(bounded.KEEP_WHEN_CUT)} are kept){left}")
    elif out.returncode != 0:
        evidence["status"] = "failed"
        first = (evidence["stderr"] or evidence["stdout"] or "").strip().splitlines()
        why = first[0].strip() if first else "no output"
        if len(why) > 300:  # one line, not a screenful
            why = why[:300] + "..."
        evidence["error"] = f"{command} exited with status {out.returncode}: {why}{left}"
    return evidence


def derive(evidence: Dict[str, object]) -> Topology:
    """Model facts from recorded evidence (a snapshot's ``topo-text`` entry).

    A probe that could not run, or whose output holds no matrix, gives an
    empty model with a note saying why: absent or unknown, never a crash.
    """
    stdout = evidence.get("stdout")
    status = evidence.get("status") or "ok"
    if status == "ok" and isinstance(stdout, str) and stdout.strip():
        try:
            return parse(stdout)
        except TopoParseError as exc:
            topo = Topology()
            topo.note("source.topo_text_unreadable", f"nvidia-smi topo output has no matrix: {exc}",
                      level="warning", source=SOURCE)
            return topo
    topo = Topology()
    why = evidence.get("error") or "nvidia-smi topo printed nothing"
    topo.note("source.topo_text_unavailable", f"no topo matrix: {why}", level="warning",
              source=SOURCE)
    return topo


def _decode(data: Optional[bytes]) -> Optional[str]:
    """Output bytes as text: invalid UTF-8 (a multi-byte character cut at a cap included)
    becomes U+FFFD; ``None`` stays ``None``."""
    if data is None:
        return None
    return bytes(data).decode("utf-8", errors="replace")


# --- lexical helpers ---------------------------------------------------------
#
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

_PATH_TOKEN_RE = re.compile(r"^(?:X|NV[0-9]{1,4}|PIX|PXB|PHB|NODE|SYS|SOC)$")
_P2P_TOKENS = frozenset({"OK", "CNS", "GNS", "TNS", "NS", "DR", "U"})
#: Cell tokens other than ``NV#``, longest first.  None is a prefix of another token or of a
#: concatenation of tokens, and none starts with a digit, so glued cells have one reading
#: and a greedy scan finds it (tests/test_properties.py checks that by brute force).
_FIXED_CELLS = ("NODE", "PIX", "PXB", "PHB", "SYS", "SOC", "CNS", "GNS", "TNS", "NS", "OK",
                "DR", "X", "U")
_AFFINITY_LIKE_RE = re.compile(r"^(?:N/A|[0-9][0-9,\-]*)?$")
_LABEL_CHARS_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_DOUBLE_SEP_RE = re.compile(r"[_.-][_.-]")
_NAME_CHARS_RE = re.compile(r"[A-Za-z][\w.-]*")
_GPU_LABEL_RE = re.compile(r"^GPU([0-9]{1,6})$")
_NUMA_ID_RE = re.compile(r"^[0-9]{1,9}$")
_NIC_LABEL_RE = re.compile(r"^NIC[0-9]+$")
_AFF_COL_RE = re.compile(r"CPU\s*Affinity|NUMA\s*Affinity|GPU\s*NUMA\s*ID", re.I)
_NIC_MAP_RE = re.compile(r"^\s*(NIC[0-9]+)\s*:\s*(\S+)\s*$")
_LEGEND_RE = re.compile(r"^\s*(X|SOC|SYS|NODE|PHB|PXB|PIX|NV#|OK|CNS|GNS|TNS|NS|DR|U)\s*=\s*(.*)$")
_OK_LEGEND_RE = re.compile(r"^\s*OK\s*=")
_CMD_RE = re.compile(r"nvidia-smi\s+topo\s+(.*)$")
_P2P_MODE_RE = re.compile(r"(?:-p2p|--p2pstatus)[ =]+([rwnap])\b")
_SPACES_RE = re.compile(r"\s+")

AFFINITY_FIELDS = {"cpuaffinity": "cpu_affinity", "numaaffinity": "numa_affinity",
                   "gpunumaid": "gpu_numa_id"}
_COLUMN_TITLES = {"cpu_affinity": "CPU Affinity", "numa_affinity": "NUMA Affinity",
                  "gpu_numa_id": "GPU NUMA ID"}
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
#: Longest legend description kept (wrapped lines are joined up to this).
_MAX_LEGEND_CHARS = 1024
#: NIC Legend entries for devices not in the matrix that are named in the note.
_MAX_STRAY_NICS = 64


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
class _Tok:
    text: str
    start: Optional[int]  # column in the line (space-aligned lines only)


def _tokens(line: str) -> Tuple[List[_Tok], bool]:
    """Split a line into tokens; in TAB-separated lines empty fields are kept as ``""``."""
    if "\t" in line:
        out: List[_Tok] = []
        for fld in line.split("\t"):
            parts = fld.split()
            if parts:
                out.extend(_Tok(p, None) for p in parts)
            elif out:  # leading empty fields are dropped
                out.append(_Tok("", None))
        return out, True
    return [_Tok(m.group(), m.start()) for m in _WORD_RE.finditer(line)], False


def _first_two(line: str) -> List[str]:
    """The first two tokens :func:`_tokens` gives for ``line`` (fewer if it has fewer).

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


def _scan_cells(tok: str, limit: int) -> Tuple[Optional[List[str]], int]:
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


def _is_cell(tok: str) -> bool:
    if tok in _ONE_CELL or (tok[:2] == "NV" and is_ascii_digits(tok[2:])):
        return True  # the common case, without the scan
    return _scan_cells(tok, 0)[0] is not None


def _split_cells(tok: str) -> List[str]:
    cells, _ = _scan_cells(tok, len(tok))
    return cells if cells is not None else [tok]


def _is_label(tok: str) -> bool:
    """A row label: a letter, then letters and digits in groups joined by single ``_ . -``."""
    return (bool(_LABEL_CHARS_RE.fullmatch(tok)) and tok[-1] not in "_.-"
            and _DOUBLE_SEP_RE.search(tok) is None)


def _device_name(tok: str) -> bool:
    """A header name: a letter, then word characters, ``.`` or ``-``, ending in a digit."""
    return "0" <= tok[-1:] <= "9" and bool(_NAME_CHARS_RE.fullmatch(tok))


def _header_start(tok: str) -> bool:
    """``GPU<n>``, maybe glued to more device names (``GPU0GPU1NIC0``, ``GPU0mlx5_0``)."""
    if not tok.startswith("GPU"):
        return False
    i, n = 3, len(tok)
    while i < n and "0" <= tok[i] <= "9":
        i += 1
    if i == 3:
        return False
    return i == n or ("A" <= tok[i] <= "Z" or "a" <= tok[i] <= "z") and _device_name(tok[i:])


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


def _split_labels(tok: str, known: Sequence[str]) -> List[str]:
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


def _clip(text: str, limit: int = 80) -> str:
    """``text`` shortened for a note (names in real output are far shorter)."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


class _Notes:
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
            self.topo.note(code, _clip(message, MAX_NOTE_CHARS), level=level, subject=subject)
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


# --- parse ---------------------------------------------------------------------


@dataclass
class _Found:
    """What :func:`_locate` found: where the matrix is, read from two tokens a line."""

    header: Optional[int]
    #: (line index, label) of each row: every first occurrence of a label, and the first
    #: MAX_NOTES repeats (later repeats are only counted, in ``more_repeats``).
    rows: List[Tuple[int, str]]
    labels: List[str]  # distinct row labels in order
    more_repeats: int = 0


def looks_like_topo(text: str) -> bool:
    """True when ``text`` holds something :func:`parse` can read as a matrix."""
    try:
        _locate(clean_text(text))
    except TopoParseError:
        return False
    return True


def _row_candidate(first_two: List[str]) -> bool:
    return (len(first_two) >= 2 and _is_label(first_two[0])
            and not _AFFINITY_LIKE_RE.match(first_two[0]) and _is_cell(first_two[1]))


def _header_candidate(line: str) -> bool:
    """A header names devices (``GPU0 ... NIC0 ... mlx5_0``), then affinity columns.

    A line longer than :data:`MAX_LINE_CHARS` is judged by its first two names only
    (:func:`_locate` then refuses it).
    """
    s = line.lstrip()
    if not s.startswith("GPU"):
        return False  # the first name of a header is GPU#
    two = s.split(None, 2)[:2]
    if len(two) == 2 and _is_cell(two[1]) and not _AFF_COL_RE.search(two[0]):
        return False  # a GPU row (no cell token holds the start of an affinity title)
    head = _AFF_COL_RE.split(line, 1)[0]
    two = head.split(None, 2)[:2]  # names only: empty TAB fields do not count here
    if not two or not _header_start(two[0]):
        return False
    if len(two) > 1 and (_is_cell(two[1]) or not _device_name(two[1])):
        return False  # a GPU row (or not a header)
    if len(head) > MAX_LINE_CHARS:
        return True
    return all(_device_name(t.text) for t in _tokens(head)[0] if t.text)


def _locate(lines: List[str]) -> _Found:
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
        two = _first_two(line)
        if len(two) < 2:
            continue
        label = two[0]
        if label in seen:  # a label seen as a row's is one (the common repeated row)
            if not _is_cell(two[1]):
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
                             "starting with GPU0 and rows of X, NV#, PIX, PXB, PHB, NODE, SYS)")
    if header is not None and not rows:
        raise TopoParseError("found a topo header line but no matrix rows under it")
    return _Found(header, rows, list(seen), max(0, repeats - MAX_NOTES))


def parse(text: str) -> Topology:
    """Parse ``nvidia-smi topo -m`` / ``-mp`` / ``--matrix`` / ``-p2p`` text into a model.

    Raises :class:`TopoParseError` only when no matrix is present at all, or when it is
    larger than nvtopo reads (:data:`MAX_DEVICES` devices, :data:`MAX_LINE_CHARS` a line).
    Time and memory are linear in the text; notes are bounded (:data:`MAX_NOTES` a kind).
    """
    lines = clean_text(text)
    found = _locate(lines)
    header_idx = found.header
    topo = Topology(sources=[SOURCE])
    note = _Notes(topo)
    info: Dict[str, object] = {}

    # -- command line and P2P mode, when the paste kept the prompt
    command = None
    for line in lines[: (header_idx if header_idx is not None else found.rows[0][0])]:
        m = _CMD_RE.search(line)
        if m:
            command = "nvidia-smi topo " + m.group(1).strip()
    if command:
        info["command"] = command

    # -- rows: labels first (the header may be glued and needs them)
    row_labels = found.labels

    # -- header
    header_devices: List[str] = []
    aff_cols: List[Tuple[str, int]] = []
    if header_idx is not None:
        hline = lines[header_idx]
        for m in _AFF_COL_RE.finditer(hline):
            key = _SPACES_RE.sub("", m.group().lower())
            aff_cols.append((AFFINITY_FIELDS[key], m.start()))
        parts = _AFF_COL_RE.split(hline)
        dev_toks, _ = _tokens(parts[0])
        for t in dev_toks:
            if t.text:
                header_devices.extend(_split_labels(t.text, row_labels))
        extra_cols = [w for p in parts[1:] for w in p.split()]
        if extra_cols:
            note("topo.unknown_column", "header has columns nvtopo does not know: "
                 + ", ".join(extra_cols) + " (ignored)", level="warning")
    else:
        note("topo.no_header", "no header line: columns assumed to follow the row order",
             level="warning")

    times: Dict[str, int] = {}
    for d in header_devices:
        times[d] = times.get(d, 0) + 1
    dups = sorted(d for d, k in times.items() if k > 1)
    if dups:
        note("topo.duplicate_column", "header names these devices twice: "
             + ", ".join(dups) + " (first one used)", level="warning")
    devices = list(times)
    row_only = []
    known = set(devices)
    for lab in row_labels:
        if lab not in known:
            known.add(lab)
            devices.append(lab)
            row_only.append(lab)
    if header_idx is not None and row_only:
        note("topo.missing_columns", "header has no column for "
             + ", ".join(row_only) + "; their paths come from their own rows and the "
             "rows of the other devices where those printed more cells", level="warning")

    n = len(devices)
    if n > MAX_DEVICES:
        raise TopoParseError(f"matrix names {n} devices, more than the {MAX_DEVICES} nvtopo reads")
    position = {d: i for i, d in enumerate(devices)}
    cells: List[List[Optional[str]]] = [[None] * n for _ in range(n)]
    gpu_aff: Dict[str, Dict[str, Optional[str]]] = {}
    nic_aff: Dict[str, Dict[str, Optional[str]]] = {}
    seen_rows = set()
    short: Dict[Tuple[int, Tuple[str, ...]], List[str]] = {}
    for line_no, label in found.rows:
        if label in seen_rows:
            note("topo.duplicate_row", f"row {label} appears twice (line {line_no + 1}); "
                 "the first one is used", level="warning", subject=label)
            continue
        seen_rows.add(label)
        line = lines[line_no]
        if len(line) > MAX_LINE_CHARS:
            note("topo.long_row", f"row {_clip(label)} (line {line_no + 1}) is {len(line)} "
                 f"characters long, more than the {MAX_LINE_CHARS} nvtopo reads; its cells "
                 "are not read", level="warning", subject=label)
            toks: List[_Tok] = [_Tok(label, None)]
            tabbed = False
        else:
            toks, tabbed = _tokens(line)
        row_cells: List[str] = []
        count = 0
        k = 1
        while k < len(toks) and count < n:
            t = toks[k].text
            if _AFFINITY_LIKE_RE.match(t):
                break
            glued, many = _scan_cells(t, n + 1)
            if glued is None:
                glued, many = [t], 1
            row_cells.extend(glued[: n + 1 - len(row_cells)])
            count += many
            k += 1
        if count > n:
            note("topo.extra_cells", f"row {label} has {count} cells for "
                 f"{n} devices; the extra ones are ignored", level="warning", subject=label)
            row_cells = row_cells[:n]
        r = position[label]
        for j, tok in enumerate(row_cells):
            cells[r][j] = tok
        if len(row_cells) < n:
            short.setdefault((len(row_cells), tuple(devices[len(row_cells):])), []).append(label)
        values = _assign_affinity(toks[k:], aff_cols, tabbed, note, label)
        if _GPU_LABEL_RE.match(label):
            gpu_aff[label] = values
        elif any(v for v in values.values()):
            nic_aff[label] = values
    note.more("topo.duplicate_row", found.more_repeats, "warning")

    for (count, missing), labels in short.items():
        note("topo.short_row", f"row{'s' if len(labels) > 1 else ''} {', '.join(labels)} "
             f"{'have' if len(labels) > 1 else 'has'} {count} of {n} cells; nothing printed "
             "for " + ", ".join(missing), level="warning", subject=labels[0])
    for lab in devices:
        if lab not in seen_rows:
            note("topo.missing_row", f"no row for {lab}: its paths come only from its "
                 "column", level="warning", subject=lab)

    kind = _matrix_kind(cells, lines)
    info["kind"] = kind
    if kind == "paths":
        _fill_mirror(devices, cells, note)
    _report_cells(devices, cells, kind, note)

    legend, style = _legend(lines)
    if legend:
        info["legend"] = legend
    info["legend_style"] = style

    nic_names: Dict[str, str] = {}
    stray: Dict[str, None] = {}
    more_stray = 0
    for line in lines:
        m = _NIC_MAP_RE.match(line)
        if m:
            if m.group(1) in known:
                nic_names[m.group(1)] = m.group(2)
            elif m.group(1) in stray or len(stray) < _MAX_STRAY_NICS:
                stray[m.group(1)] = None
            else:
                more_stray += 1

    # -- devices into the model
    gpu_index: Dict[int, str] = {}
    for lab in devices:
        m = _GPU_LABEL_RE.match(lab)
        index = ascii_int(m.group(1)) if m else None
        if index is not None and index in gpu_index:
            note("topo.duplicate_gpu", f"{lab} has the same GPU index as "
                 f"{gpu_index[index]}; only the first is listed as a GPU",
                 level="warning", subject=lab)
        elif index is not None:
            gpu_index[index] = lab
            gpu = GPU(index=index, label=lab)
            values = gpu_aff.get(lab, {})
            for fld, _ in aff_cols:
                raw = values.get(fld)
                gpu.sources[fld] = SOURCE
                if fld == "gpu_numa_id":
                    numa = (ascii_int(raw) if raw is not None and _NUMA_ID_RE.match(raw)
                            else None)
                    if raw is not None and numa is None:
                        note("topo.bad_value", f"GPU NUMA ID {raw!r} of {lab} is not a "
                             "number; kept as unknown", level="warning", subject=lab)
                    gpu.gpu_numa_id = numa
                else:
                    setattr(gpu, fld, raw)
            topo.gpus.append(gpu)
        else:
            name = nic_names.get(lab, lab)
            nic = NIC(label=lab, name=name, sources={"name": SOURCE, "label": SOURCE})
            if lab in nic_aff:
                nic.extra["affinity"] = nic_aff[lab]
            topo.nics.append(nic)
    nic_labels = [x.label for x in topo.nics]
    unnamed = [lab for lab in nic_labels if _NIC_LABEL_RE.match(lab) and lab not in nic_names]
    if unnamed:
        note("topo.no_nic_legend", "no NIC Legend for " + ", ".join(unnamed)
             + ": device names unknown, labels used as names")
    if stray:
        note("topo.stray_nic_legend", "NIC Legend names devices not in the matrix: "
             + ", ".join(sorted(stray))
             + (f" and {more_stray} more lines like these" if more_stray else ""),
             level="warning")

    matrix = Matrix(devices=devices, cells=cells, source=SOURCE)
    if kind == "p2p":
        mode = None
        if command:
            mm = _P2P_MODE_RE.search(command)
            mode = mm.group(1) if mm else None
        matrix.mode = mode
        topo.p2p = matrix
    else:
        topo.matrix = matrix
        topo.nvlinks = _nvlink_pairs(devices, cells, topo)
    note.finish()
    topo.extra[SOURCE] = info
    return topo


def _assign_affinity(rest: List[_Tok], cols: List[Tuple[str, int]], tabbed: bool,
                     note: _Notes, label: str) -> Dict[str, Optional[str]]:
    """Map the fields after the matrix cells to the affinity columns."""
    values: Dict[str, Optional[str]] = {c: None for c, _ in cols}
    if not cols:
        extra = [t.text for t in rest if t.text]
        if extra:
            note("topo.extra_fields", f"row {label} has fields after its cells but the "
                 "header names no affinity columns: " + " ".join(extra), level="warning",
                 subject=label)
        return values
    fields = list(rest)
    if tabbed and len(fields) > len(cols):
        # nvidia-smi pads with an extra TAB before "GPU NUMA ID" and some rows end in a
        # TAB: drop surplus empty fields from the right until the count matches.
        drop = len(fields) - len(cols)
        keep: List[_Tok] = []
        for f in reversed(fields):
            if drop and f.text == "":
                drop -= 1
            else:
                keep.append(f)
        fields = keep[::-1]
    if tabbed or len(fields) >= len(cols):
        assigned = list(zip([c for c, _ in cols], fields))
    else:
        assigned = _by_position(fields, cols, note, label)
    if len(fields) > len(cols):
        extra = [f.text for f in fields[len(cols):] if f.text]
        if extra:
            note("topo.extra_fields", f"row {label} has more fields than affinity "
                 "columns; ignored: " + " ".join(extra), level="warning", subject=label)
    for col, tok in assigned:
        v = tok.text
        values[col] = None if v in ("", "N/A") else v
    return values


def _by_position(fields: List[_Tok], cols: List[Tuple[str, int]], note: _Notes,
                 label: str) -> List[Tuple[str, _Tok]]:
    """Assign fewer fields than columns by their position under the header.

    Where a value sits about as near to two column headings, the guess is
    reported as a warning rather than made silently.
    """
    out: List[Tuple[str, _Tok]] = []
    ci = 0
    for i, f in enumerate(fields):
        remaining_fields = len(fields) - i
        candidates = list(range(ci, len(cols) - remaining_fields + 1))
        best = ci
        if f.start is not None and candidates:
            dist = sorted((abs(cols[c][1] - f.start), c) for c in candidates)
            best = dist[0][1]
            if len(dist) > 1 and dist[1][0] - dist[0][0] <= 2:
                names = " or ".join(_COLUMN_TITLES[cols[c][0]]
                                    for _, c in sorted(dist[:2], key=lambda x: x[1]))
                note("topo.ambiguous_field", f"row {label}: value {f.text!r} could be "
                     f"{names} (some columns are empty and the alignment does not tell); "
                     f"taken as {_COLUMN_TITLES[cols[best][0]]}", level="warning",
                     subject=label)
        out.append((cols[best][0], f))
        ci = best + 1
    return out


def _matrix_kind(cells: List[List[Optional[str]]], lines: List[str]) -> str:
    p2p = paths = 0
    for row in cells:
        for c in row:
            if c is None or c == "X":
                continue
            if c in _P2P_TOKENS:
                p2p += 1
            elif _PATH_TOKEN_RE.match(c):
                paths += 1
    if p2p != paths:
        return "p2p" if p2p > paths else "paths"
    legend_p2p = any(_OK_LEGEND_RE.match(ln) for ln in lines)
    return "p2p" if legend_p2p else "paths"


def _fill_mirror(devices: List[str], cells: List[List[Optional[str]]], note: _Notes) -> None:
    n = len(devices)
    first: List[str] = []
    filled = 0
    for i in range(n):
        row = cells[i]
        for j in range(n):
            if i != j and row[j] is None and cells[j][i] is not None:
                row[j] = cells[j][i]
                if filled < 6:
                    first.append(f"{devices[i]}-{devices[j]}")
                filled += 1
    if filled:
        shown = ", ".join(first) + (f" and {filled - 6} more" if filled > 6 else "")
        note("topo.mirrored", f"{filled} cells not printed were taken from the "
             f"mirrored cell (paths are symmetric): {shown}", level="info")
    for i in range(n):
        if cells[i][i] is None:
            cells[i][i] = "X"
    # After mirroring a cell is unknown exactly where its mirror is: each pair once, and
    # no list of up to a million pair names.
    count = sum(1 for i in range(n) for j in range(i + 1, n) if cells[i][j] is None)
    if count:
        unknown = heapq.nsmallest(6, (f"{devices[i]}-{devices[j]}" for i in range(n)
                                      for j in range(i + 1, n) if cells[i][j] is None))
        shown = ", ".join(unknown) + (f" and {count - 6} more" if count > 6 else "")
        note("topo.unknown_paths", f"path unknown for {count} device pairs: {shown}",
             level="warning")


def _report_cells(devices: List[str], cells: List[List[Optional[str]]], kind: str,
                  note: _Notes) -> None:
    unknown: Dict[str, List[str]] = {}
    unknown_count: Dict[str, int] = {}
    asym: List[str] = []
    asym_count = 0
    for i, row in enumerate(cells):
        for j, c in enumerate(row):
            if c is None:
                continue
            ok = (c in _P2P_TOKENS or c == "X") if kind == "p2p" else bool(_PATH_TOKEN_RE.match(c))
            if not ok or (i == j) != (c == "X"):
                where = unknown.setdefault(c, [])
                if len(where) < 5:
                    where.append(f"{devices[i]}-{devices[j]}")
                unknown_count[c] = unknown_count.get(c, 0) + 1
            if j > i and cells[j][i] is not None and cells[j][i] != c:
                if asym_count < 5:
                    asym.append(f"{devices[i]}-{devices[j]} ({c} vs {cells[j][i]})")
                asym_count += 1
    for tok, where in unknown.items():
        note("topo.unknown_token", f"unrecognised cell {_clip(tok)!r} kept as printed at "
             + ", ".join(where[:4]) + (" ..." if unknown_count[tok] > 4 else ""),
             level="warning", subject=where[0])
    if asym:
        note("topo.asymmetric", "matrix is not symmetric: " + "; ".join(asym[:4])
             + (" ..." if asym_count > 4 else ""), level="warning")


def _nvlink_pairs(devices: List[str], cells: List[List[Optional[str]]],
                  topo: Topology) -> List[NVLinkPair]:
    out = []
    gpus = [(i, ascii_int(m.group(1))) for i, d in enumerate(devices)
            for m in [_GPU_LABEL_RE.match(d)] if m]
    for x, (i, a) in enumerate(gpus):
        for j, b in gpus[x + 1:]:
            c1, c2 = nvlink_count(cells[i][j]), nvlink_count(cells[j][i])
            count = c1 if c1 is not None else c2
            if count is not None:
                out.append(NVLinkPair(a=a, b=b, count=count, source=SOURCE))
    return out


def _legend(lines: List[str]) -> Tuple[Dict[str, str], Optional[str]]:
    parts: Dict[str, List[str]] = {}  # wrapped lines joined at the end (no quadratic +=)
    size: Dict[str, int] = {}
    last = None
    for line in lines:
        m = _LEGEND_RE.match(line.rstrip())
        if m:
            last = m.group(1)
            parts[last] = [m.group(2)]
            size[last] = len(m.group(2))
        elif last and line.strip() and line[:1].isspace() and "=" not in line \
                and not _NIC_MAP_RE.match(line) and not line.strip().endswith(":"):
            if size[last] <= _MAX_LEGEND_CHARS:  # a wrapped legend line
                parts[last].append(line.strip())
            size[last] += len(line)
        else:
            last = None if not line.strip() or line.strip().endswith(":") else last
    legend: Dict[str, str] = {}
    for key, words in parts.items():
        text = " ".join(words)
        cut = size[key] > _MAX_LEGEND_CHARS or len(text) > _MAX_LEGEND_CHARS
        legend[key] = text[:_MAX_LEGEND_CHARS] + " …" if cut else text
    if not legend:
        return legend, None
    if "SOC" in legend:
        style = "soc"
    elif "switch" in (legend.get("PIX", "") + legend.get("PXB", "")).lower():
        style = "transitional"
    elif "OK" in legend:
        style = "p2p"
    else:
        style = "modern"
    return legend, style
