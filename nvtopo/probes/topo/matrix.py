"""The ``nvidia-smi topo`` text read into a model: devices, the path (or P2P) matrix, NVLink
pairs, affinities, the legends; damage reported as notes, unknown tokens kept as printed.
"""

from __future__ import annotations

import heapq
import re
from typing import Dict, List, Optional, Set, Tuple

from ...model import GPU, NIC, Matrix, NVLinkPair, Topology, nvlink_count
from ...model.node import TopoText
from ...safe import ascii_int
from .locate import TopoParseError, find_header, locate
from .affinity import AFFINITY_FIELDS, assign_affinity
from .legend import LEGEND_RE, NIC_MAP_RE, legend_of
from .unwrap import Rejoined, untruncate, unwrap
from .scan import (AFF_COL_RE, AFFINITY_LIKE_RE, MAX_DEVICES, MAX_LINE_CHARS, Notes, Tok,
                   clip, scan_cells, split_labels, split_tokens)

SOURCE = "topo-text"

_PATH_TOKEN_RE = re.compile(r"^(?:X|NV[0-9]{1,4}|PIX|PXB|PHB|NODE|SYS|SOC)$")
_P2P_TOKENS = frozenset({"OK", "CNS", "GNS", "TNS", "NS", "DR", "U"})
_GPU_LABEL_RE = re.compile(r"^GPU([0-9]{1,6})$")
_NUMA_ID_RE = re.compile(r"^[0-9]{1,9}$")
_NIC_LABEL_RE = re.compile(r"^NIC[0-9]+$")
_OK_LEGEND_RE = re.compile(r"^\s*OK\s*=")
_CMD_RE = re.compile(r"nvidia-smi\s+topo\s+(.*)$")
_P2P_MODE_RE = re.compile(r"(?:-p2p|--p2pstatus)[ =]+([rwnap])\b")
_SPACES_RE = re.compile(r"\s+")
#: NIC Legend entries for devices not in the matrix that are named in the note.
_MAX_STRAY_NICS = 64


def parse_lines(lines: List[str], first_line: int = 0) -> Topology:
    """Parse the cleaned lines (:func:`clean_text`) of one ``nvidia-smi topo -m`` / ``-mp``
    / ``--matrix`` / ``-p2p`` output into a model (:func:`nvtopo.probes.topo.parse` parts a
    paste of several).  ``first_line``: the index of ``lines[0]`` in the paste, for the line
    numbers notes name.

    Raises :class:`TopoParseError` only when no matrix is present at all, or when it is
    larger than nvtopo reads (:data:`MAX_DEVICES` devices, :data:`MAX_LINE_CHARS` a line).
    Time and memory are linear in the text; notes are bounded (:data:`MAX_NOTES` a kind).
    """
    lines, rejoined = unwrap(lines, find_header(lines))
    lines, truncated = untruncate(lines, find_header(lines))
    found = locate(lines)
    header_idx = found.header
    topo = Topology(sources=[SOURCE])
    note = Notes(topo)
    info = TopoText()
    _note_repairs(note, rejoined, truncated)

    # -- command line and P2P mode, when the paste kept the prompt
    command = None
    for line in lines[: (header_idx if header_idx is not None else found.rows[0][0])]:
        m = _CMD_RE.search(line)
        if m:
            command = "nvidia-smi topo " + m.group(1).strip()
    if command:
        info.command = command

    # -- rows: labels first (the header may be glued and needs them)
    header_devices, aff_cols = _header(lines, header_idx, found.labels, note)
    devices = _devices(header_devices, found.labels, header_idx is not None, note)
    n = len(devices)
    if n > MAX_DEVICES:
        raise TopoParseError(f"matrix names {n} devices, more than the {MAX_DEVICES} nvtopo reads")
    rows = _Rows(devices)
    for line_no, label in found.rows:
        rows.read(lines[line_no], line_no, label, aff_cols, note, first_line)
    note.more("topo.duplicate_row", found.more_repeats, "warning")
    cut = rows.cut(found.rows[-1][0] if found.rows else None, lines)
    rows.note_gaps(note, cut)
    cells = rows.cells

    kind = _matrix_kind(cells, lines)
    info.kind = kind
    if kind == "paths":
        _fill_mirror(devices, cells, note, cut)
    _report_cells(devices, cells, kind, note)

    legend, style = legend_of(lines)
    if legend:
        info.legend = legend
    info.legend_style = style

    nic_names, stray, more_stray = _nic_legend(lines, set(devices))
    _add_devices(topo, devices, rows, aff_cols, nic_names, note)
    _note_nic_legend(topo, nic_names, stray, more_stray, note, cut)

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
    topo.topo_text = info
    return topo


def _note_repairs(note: Notes, rejoined: Optional[Rejoined],
                  truncated: Optional[int]) -> None:
    """Notes for a matrix re-joined after wrapping, or whose lines were cut."""
    if rejoined is not None:
        width, how, joined = rejoined
        note("topo.rejoined", f"the matrix was wrapped at {width} columns ("
             + ("cut at the width" if how == "exact" else "at spaces")
             + f"); {joined} continuation lines were re-joined to their rows",
             level="warning")

    if truncated is not None:
        note("topo.truncated", f"the matrix lines are cut at {truncated} columns; the cut "
             "last cell of each such row is not read (its mirrored cell, where printed, "
             "gives the path)", level="warning")


def _header(lines: List[str], header_idx: Optional[int], row_labels: List[str], note: Notes
            ) -> Tuple[List[str], List[Tuple[str, int]]]:
    """The header's devices, and its affinity columns: (field, where the title starts)."""
    header_devices: List[str] = []
    aff_cols: List[Tuple[str, int]] = []
    if header_idx is None:
        note("topo.no_header", "no header line: columns assumed to follow the row order",
             level="warning")
        return header_devices, aff_cols
    hline = lines[header_idx]
    for m in AFF_COL_RE.finditer(hline):
        key = _SPACES_RE.sub("", m.group().lower())
        aff_cols.append((AFFINITY_FIELDS[key], m.start()))
    parts = AFF_COL_RE.split(hline)
    dev_toks, _ = split_tokens(parts[0])
    for t in dev_toks:
        if t.text:
            header_devices.extend(split_labels(t.text, row_labels))
    extra_cols = [w for p in parts[1:] for w in p.split()]
    if extra_cols:
        note("topo.unknown_column", "header has columns nvtopo does not know: "
             + ", ".join(extra_cols) + " (ignored)", level="warning")
    return header_devices, aff_cols


def _devices(header_devices: List[str], row_labels: List[str], has_header: bool,
             note: Notes) -> List[str]:
    """The matrix's devices: the header's (each once), then those only a row names."""
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
    if has_header and row_only:
        note("topo.missing_columns", "header has no column for "
             + ", ".join(row_only) + "; their paths come from their own rows and the "
             "rows of the other devices where those printed more cells", level="warning")
    return devices


class _Rows:
    """The matrix rows as read: cells, affinities, which rows were seen or cut short."""

    def __init__(self, devices: List[str]) -> None:
        self.devices = devices
        n = len(devices)
        self.position = {d: i for i, d in enumerate(devices)}
        self.cells: List[List[Optional[str]]] = [[None] * n for _ in range(n)]
        self.gpu_aff: Dict[str, Dict[str, Optional[str]]] = {}
        self.nic_aff: Dict[str, Dict[str, Optional[str]]] = {}
        self.seen: Set[str] = set()
        self.short: Dict[Tuple[int, Tuple[str, ...]], List[str]] = {}

    def read(self, line: str, line_no: int, label: str, aff_cols: List[Tuple[str, int]],
             note: Notes, first_line: int) -> None:
        """One row: its cells, then its affinity columns."""
        devices, n = self.devices, len(self.devices)
        if label in self.seen:
            note("topo.duplicate_row", f"row {label} appears twice (line "
                 f"{first_line + line_no + 1}); the first one is used", level="warning",
                 subject=label)
            return
        self.seen.add(label)
        if len(line) > MAX_LINE_CHARS:
            note("topo.long_row", f"row {clip(label)} (line {first_line + line_no + 1}) is "
                 f"{len(line)} characters long, more than the {MAX_LINE_CHARS} nvtopo reads; "
                 "its cells are not read", level="warning", subject=label)
            toks: List[Tok] = [Tok(label, None)]
            tabbed = False
        else:
            toks, tabbed = split_tokens(line)
        row_cells, count, k = _row_cells(toks, n)
        if count > n:
            note("topo.extra_cells", f"row {label} has {count} cells for "
                 f"{n} devices; the extra ones are ignored", level="warning", subject=label)
            row_cells = row_cells[:n]
        r = self.position[label]
        for j, tok in enumerate(row_cells):
            self.cells[r][j] = tok
        if len(row_cells) < n:
            self.short.setdefault((len(row_cells), tuple(devices[len(row_cells):])),
                                  []).append(label)
        values = assign_affinity(toks[k:], aff_cols, tabbed, note, label)
        if _GPU_LABEL_RE.match(label):
            self.gpu_aff[label] = values
        elif any(v for v in values.values()):
            self.nic_aff[label] = values

    def cut(self, last_row_line: Optional[int], lines: List[str]) -> Optional[str]:
        """The label of the last row when the paste stops there: the rows it printed are
        the header's first devices, in order, every later device has none, and no legend
        follows (a paste cut short, not rows left out in the middle).  Else None."""
        missing = [d for d in self.devices if d not in self.seen]
        if not missing or not self.seen or last_row_line is None:
            return None
        k = len(self.devices) - len(missing)
        if any(d not in self.seen for d in self.devices[:k]):
            return None
        if any(LEGEND_RE.match(ln.rstrip()) or NIC_MAP_RE.match(ln)
               for ln in lines[last_row_line + 1:]):
            return None
        return self.devices[k - 1]

    def note_gaps(self, note: Notes, cut: Optional[str] = None) -> None:
        """Rows cut short, devices with no row (a paste cut after a row: said once, with
        the cells it leaves unknown, by :func:`_fill_mirror`)."""
        n = len(self.devices)
        for (count, missing), labels in self.short.items():
            note("topo.short_row", f"row{'s' if len(labels) > 1 else ''} {', '.join(labels)} "
                 f"{'have' if len(labels) > 1 else 'has'} {count} of {n} cells; nothing "
                 "printed for " + ", ".join(missing), level="warning", subject=labels[0])
        if cut is not None:
            return
        for lab in self.devices:
            if lab not in self.seen:
                note("topo.missing_row", f"no row for {lab}: its paths come only from its "
                     "column", level="warning", subject=lab)


def _row_cells(toks: List[Tok], n: int) -> Tuple[List[str], int, int]:
    """A row's cells (at most ``n + 1``), how many it printed, and the index of its first
    token after them (its affinity columns)."""
    row_cells: List[str] = []
    count = 0
    k = 1
    while k < len(toks) and count < n:
        text = toks[k].text
        if AFFINITY_LIKE_RE.match(text):
            break
        glued, many = scan_cells(text, n + 1)
        if glued is None:
            glued, many = [text], 1
        row_cells.extend(glued[: n + 1 - len(row_cells)])
        count += many
        k += 1
    return row_cells, count, k


def _nic_legend(lines: List[str], known: Set[str]) -> Tuple[Dict[str, str], Dict[str, None],
                                                             int]:
    """The NIC Legend (``NIC0: mlx5_0``): names of the matrix's NICs; labels it names that
    the matrix lacks (the first :data:`_MAX_STRAY_NICS`), and how many more."""
    nic_names: Dict[str, str] = {}
    stray: Dict[str, None] = {}
    more_stray = 0
    for line in lines:
        m = NIC_MAP_RE.match(line)
        if m:
            if m.group(1) in known:
                nic_names[m.group(1)] = m.group(2)
            elif m.group(1) in stray or len(stray) < _MAX_STRAY_NICS:
                stray[m.group(1)] = None
            else:
                more_stray += 1
    return nic_names, stray, more_stray


def _add_devices(topo: Topology, devices: List[str], rows: _Rows,
                 aff_cols: List[Tuple[str, int]], nic_names: Dict[str, str],
                 note: Notes) -> None:
    """The devices into the model: GPUs (by index, with their affinities), NICs."""
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
            topo.gpus.append(_gpu(index, lab, rows.gpu_aff.get(lab, {}), aff_cols, note))
        else:
            name = nic_names.get(lab, lab)
            nic = NIC(label=lab, name=name, sources={"name": SOURCE, "label": SOURCE})
            if lab in rows.nic_aff:
                nic.affinity = rows.nic_aff[lab]
            topo.nics.append(nic)
    # GPUs in index order, as every other source lists them (a row whose GPU the header
    # lacks comes after the header's devices: a snapshot of the paste lists them in order)
    topo.gpus.sort(key=lambda g: g.index)


def _gpu(index: int, lab: str, values: Dict[str, Optional[str]],
         aff_cols: List[Tuple[str, int]], note: Notes) -> GPU:
    gpu = GPU(index=index, label=lab)
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
    return gpu


def _note_nic_legend(topo: Topology, nic_names: Dict[str, str], stray: Dict[str, None],
                     more_stray: int, note: Notes, cut: Optional[str] = None) -> None:
    nic_labels = [x.label for x in topo.nics]
    unnamed = [lab for lab in nic_labels if _NIC_LABEL_RE.match(lab) and lab not in nic_names]
    if unnamed and cut is None:  # a cut paste's note says the legend went with the rest
        note("topo.no_nic_legend", "no NIC Legend for " + ", ".join(unnamed)
             + ": device names unknown, labels used as names")
    if stray:
        note("topo.stray_nic_legend", "NIC Legend names devices not in the matrix: "
             + ", ".join(sorted(stray))
             + (f" and {more_stray} more lines like these" if more_stray else ""),
             level="warning")


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


def _fill_mirror(devices: List[str], cells: List[List[Optional[str]]], note: Notes,
                 cut: Optional[str] = None) -> None:
    """Cells not printed taken from their mirror; the pairs still unknown noted (a paste
    cut after row ``cut``: one note saying so, which rows and how many pairs)."""
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
    if filled and cut is None:
        shown = ", ".join(first) + (f" and {filled - 6} more" if filled > 6 else "")
        note("topo.mirrored", f"{filled} cells not printed were taken from the "
             f"mirrored cell (paths are symmetric): {shown}", level="info")
    for i in range(n):
        if cells[i][i] is None:
            cells[i][i] = "X"
    # After mirroring a cell is unknown exactly where its mirror is: each pair once, and
    # no list of up to a million pair names.
    count = sum(1 for i in range(n) for j in range(i + 1, n) if cells[i][j] is None)
    if cut is not None:
        after = devices[devices.index(cut) + 1:]
        note("topo.cut", f"the paste stops after {cut} (row {n - len(after)} of {n}): no row "
             f"for {label_runs(after)}; their paths to the devices above come from those "
             f"rows, {count} device pair{'s' if count != 1 else ''} among them "
             f"{'have' if count != 1 else 'has'} no path"
             + ("; no NIC Legend either (NICs keep their matrix labels)"
                if any(_NIC_LABEL_RE.match(d) for d in devices) else ""),
             level="warning", subject=cut)
    elif count:
        unknown = heapq.nsmallest(6, (f"{devices[i]}-{devices[j]}" for i in range(n)
                                      for j in range(i + 1, n) if cells[i][j] is None))
        shown = ", ".join(unknown) + (f" and {count - 6} more" if count > 6 else "")
        note("topo.unknown_paths", f"path unknown for {count} device pairs: {shown}",
             level="warning")


def _report_cells(devices: List[str], cells: List[List[Optional[str]]], kind: str,
                  note: Notes) -> None:
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
        note("topo.unknown_token", f"unrecognised cell {clip(tok)!r} kept as printed at "
             + ", ".join(where[:4]) + (" ..." if unknown_count[tok] > 4 else ""),
             level="warning", subject=where[0])
    if asym:
        note("topo.asymmetric", "matrix is not symmetric: " + "; ".join(asym[:4])
             + (" ..." if asym_count > 4 else ""), level="warning")


def _nvlink_pairs(devices: List[str], cells: List[List[Optional[str]]],
                  topo: Topology) -> List[NVLinkPair]:
    out = []
    gpus = [(i, int(m.group(1))) for i, d in enumerate(devices)  # (1 to 6 ASCII digits)
            for m in [_GPU_LABEL_RE.match(d)] if m]
    for x, (i, a) in enumerate(gpus):
        for j, b in gpus[x + 1:]:
            c1, c2 = nvlink_count(cells[i][j]), nvlink_count(cells[j][i])
            count = c1 if c1 is not None else c2
            if count is not None:
                out.append(NVLinkPair(a=a, b=b, count=count, source=SOURCE))
    return out


def label_runs(labels: List[str], most: int = 6) -> str:
    """Matrix labels as runs (``GPU4-GPU7, NIC0-NIC7``), at most ``most`` runs named."""
    runs: List[List[Tuple[str, int]]] = []
    other: List[str] = []
    for lab in labels:
        m = re.match(r"^([A-Za-z_]+)([0-9]{1,6})$", lab)
        if not m:
            other.append(lab)
            continue
        key, k = m.group(1), int(m.group(2))
        if runs and runs[-1][-1][0] == key and runs[-1][-1][1] + 1 == k:
            runs[-1].append((key, k))
        else:
            runs.append([(key, k)])
    words = [f"{r[0][0]}{r[0][1]}" if len(r) == 1 else f"{r[0][0]}{r[0][1]}-{r[-1][0]}{r[-1][1]}"
             for r in runs] + other
    more = len(words) - most
    return ", ".join(words[:most]) + (f" and {more} more" if more > 0 else "")
