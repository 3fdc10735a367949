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

import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from . import ProbeOptions
from ..model import GPU, NIC, Matrix, NVLinkPair, Topology, nvlink_count

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

_ANSI_RE = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]"  # CSI sequences
    r"|\x1b[@-Z\\-_]"  # two-byte escapes
    r"|\[(?:\d{1,3}(?:;\d{1,3})*)?m"  # SGR remnants whose ESC was lost in a paste
)
_CTRL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PREFIX_RE = re.compile(r"^[ \t]*(?:#+|//+|/\*+|\*+/?|>+|;+|--+)(?=[ \t]|$)[ \t]?")

_PATH_TOKEN_RE = re.compile(r"^(?:X|NV\d{1,4}|PIX|PXB|PHB|NODE|SYS|SOC)$")
_P2P_TOKENS = frozenset({"OK", "CNS", "GNS", "TNS", "NS", "DR", "U"})
_CELL_ALT = r"NV\d+|NODE|PIX|PXB|PHB|SYS|SOC|CNS|GNS|TNS|NS|OK|DR|X|U"
_GLUED_CELLS_RE = re.compile(rf"(?:{_CELL_ALT})+")
_ONE_CELL_RE = re.compile(_CELL_ALT)
_AFFINITY_LIKE_RE = re.compile(r"^(?:N/A|\d[\d,\-]*)?$")
_LABEL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[_.-][A-Za-z0-9]+)*$")
_GPU_LABEL_RE = re.compile(r"^GPU(\d{1,6})$")
_GLUED_LABEL_RE = re.compile(r"GPU\d+|NIC\d+|[a-z]+\d*_(?:[a-z]+_)?\d+")
_GLUED_HEADER_START_RE = re.compile(r"^GPU\d+(?:GPU\d+|NIC\d+|[A-Za-z][\w.-]*\d)*$")
_DEVICE_NAME_RE = re.compile(r"^[A-Za-z][\w.-]*\d$")
_AFF_COL_RE = re.compile(r"CPU\s*Affinity|NUMA\s*Affinity|GPU\s*NUMA\s*ID", re.I)
_NIC_MAP_RE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_LEGEND_RE = re.compile(r"^\s*(X|SOC|SYS|NODE|PHB|PXB|PIX|NV#|OK|CNS|GNS|TNS|NS|DR|U)\s*=\s*(.*)$")
_CMD_RE = re.compile(r"nvidia-smi\s+topo\s+(.*)$")
_P2P_MODE_RE = re.compile(r"(?:-p2p|--p2pstatus)[ =]+([rwnap])\b")

AFFINITY_FIELDS = {"cpuaffinity": "cpu_affinity", "numaaffinity": "numa_affinity",
                   "gpunumaid": "gpu_numa_id"}
_COLUMN_TITLES = {"cpu_affinity": "CPU Affinity", "numa_affinity": "NUMA Affinity",
                  "gpu_numa_id": "GPU NUMA ID"}
_NUMA_ID_RE = re.compile(r"^[0-9]{1,9}$")
#: Larger matrices are refused: the biggest real nodes print a few hundred devices.
MAX_DEVICES = 1024


def clean_text(text: str) -> List[str]:
    """Lines of ``text`` with BOM, ANSI codes, control bytes and comment prefixes removed."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI_RE.sub("", text)
    text = _CTRL_RE.sub("", text)
    return [_PREFIX_RE.sub("", line) for line in text.split("\n")]


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
            else:
                out.append(_Tok("", None))
        while out and out[0].text == "":
            out.pop(0)
        return out, True
    return [_Tok(m.group(), m.start()) for m in re.finditer(r"\S+", line)], False


def _is_cell(tok: str) -> bool:
    return bool(_GLUED_CELLS_RE.fullmatch(tok))


def _split_cells(tok: str) -> List[str]:
    if _GLUED_CELLS_RE.fullmatch(tok):
        return _ONE_CELL_RE.findall(tok)
    return [tok]


def _split_labels(tok: str, known: Sequence[str]) -> List[str]:
    """Split a glued header token (``GPU0GPU1NIC0``) into labels."""
    if tok in known:
        return [tok]
    # dynamic programming over the labels seen as row names
    n = len(tok)
    best: List[Optional[List[str]]] = [None] * (n + 1)
    best[0] = []
    for i in range(n):
        if best[i] is None:
            continue
        for lab in known:
            if lab and tok.startswith(lab, i) and best[i + len(lab)] is None:
                best[i + len(lab)] = best[i] + [lab]  # type: ignore[operator]
    if best[n]:
        return best[n]  # type: ignore[return-value]
    pieces = _GLUED_LABEL_RE.findall(tok)
    if pieces and "".join(pieces) == tok:
        return pieces
    return [tok]


# --- parse ---------------------------------------------------------------------


@dataclass
class _Row:
    label: str
    line_no: int
    cells: List[Optional[str]]
    rest: List[_Tok]
    tabbed: bool


def looks_like_topo(text: str) -> bool:
    """True when ``text`` holds something :func:`parse` can read as a matrix."""
    try:
        _locate(clean_text(text))
    except TopoParseError:
        return False
    return True


def _row_candidate(toks: List[_Tok]) -> bool:
    return (len(toks) >= 2 and bool(_LABEL_RE.match(toks[0].text))
            and not _AFFINITY_LIKE_RE.match(toks[0].text) and _is_cell(toks[1].text))


def _header_candidate(line: str) -> bool:
    """A header names devices (``GPU0 ... NIC0 ... mlx5_0``), then affinity columns."""
    toks = [t.text for t in _tokens(_AFF_COL_RE.split(line)[0])[0] if t.text]
    if not toks or not _GLUED_HEADER_START_RE.match(toks[0]):
        return False
    if len(toks) > 1 and _is_cell(toks[1]):
        return False  # a GPU row, not a header
    return all(_DEVICE_NAME_RE.match(t) for t in toks)


def _locate(lines: List[str]) -> Tuple[Optional[int], List[int]]:
    """Index of the header line (or None) and of the candidate row lines after it."""
    header = None
    for i, line in enumerate(lines):
        if _header_candidate(line):
            header = i
            break
    start = 0 if header is None else header + 1
    rows: List[int] = []
    for i in range(start, len(lines)):
        if header is not None and i > header and _header_candidate(lines[i]):
            break  # a second matrix: only the first one is read
        toks, _ = _tokens(lines[i])
        if _row_candidate(toks):
            rows.append(i)
    if header is None and not rows:
        raise TopoParseError("no nvidia-smi topo matrix found (expected a header line "
                             "starting with GPU0 and rows of X, NV#, PIX, PXB, PHB, NODE, SYS)")
    if header is not None and not rows:
        raise TopoParseError("found a topo header line but no matrix rows under it")
    return header, rows


def parse(text: str) -> Topology:
    """Parse ``nvidia-smi topo -m`` / ``-mp`` / ``--matrix`` / ``-p2p`` text into a model.

    Raises :class:`TopoParseError` only when no matrix is present at all.
    """
    lines = clean_text(text)
    header_idx, row_idxs = _locate(lines)
    topo = Topology(sources=[SOURCE])
    info: Dict[str, object] = {}

    # -- command line and P2P mode, when the paste kept the prompt
    command = None
    for i, line in enumerate(lines[: (header_idx if header_idx is not None else row_idxs[0])]):
        m = _CMD_RE.search(line)
        if m:
            command = "nvidia-smi topo " + m.group(1).strip()
    if command:
        info["command"] = command

    # -- rows: labels first (the header may be glued and needs them)
    row_toks = []
    for i in row_idxs:
        toks, tabbed = _tokens(lines[i])
        row_toks.append((i, toks, tabbed))
    row_labels = [toks[0].text for _, toks, _ in row_toks]

    # -- header
    header_devices: List[str] = []
    aff_cols: List[Tuple[str, int]] = []
    if header_idx is not None:
        hline = lines[header_idx]
        for m in _AFF_COL_RE.finditer(hline):
            key = re.sub(r"\s+", "", m.group().lower())
            aff_cols.append((AFFINITY_FIELDS[key], m.start()))
        parts = _AFF_COL_RE.split(hline)
        dev_toks, _ = _tokens(parts[0])
        for t in dev_toks:
            if t.text:
                header_devices.extend(_split_labels(t.text, row_labels))
        extra_cols = [w for p in parts[1:] for w in p.split()]
        if extra_cols:
            topo.note("topo.unknown_column", "header has columns nvtopo does not know: "
                      + ", ".join(extra_cols) + " (ignored)", level="warning")
    else:
        topo.note("topo.no_header", "no header line: columns assumed to follow the row order",
                  level="warning")

    dups = sorted({d for d in header_devices if header_devices.count(d) > 1}) \
        if len(set(header_devices)) != len(header_devices) else []
    if dups:
        topo.note("topo.duplicate_column", "header names these devices twice: "
                  + ", ".join(dups) + " (first one used)", level="warning")
    devices = list(dict.fromkeys(header_devices))
    row_only = []
    known = set(devices)
    for lab in row_labels:
        if lab not in known:
            known.add(lab)
            devices.append(lab)
            row_only.append(lab)
    if header_idx is not None and row_only:
        topo.note("topo.missing_columns", "header has no column for "
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
    for line_no, toks, tabbed in row_toks:
        label = toks[0].text
        if label in seen_rows:
            topo.note("topo.duplicate_row", f"row {label} appears twice (line {line_no + 1}); "
                      "the first one is used", level="warning", subject=label)
            continue
        seen_rows.add(label)
        row_cells: List[str] = []
        k = 1
        while k < len(toks) and len(row_cells) < n:
            t = toks[k].text
            if _AFFINITY_LIKE_RE.match(t):
                break
            row_cells.extend(_split_cells(t))
            k += 1
        if len(row_cells) > n:
            topo.note("topo.extra_cells", f"row {label} has {len(row_cells)} cells for "
                      f"{n} devices; the extra ones are ignored", level="warning", subject=label)
            row_cells = row_cells[:n]
        r = position[label]
        for j, tok in enumerate(row_cells):
            cells[r][j] = tok
        if len(row_cells) < n:
            short.setdefault((len(row_cells), tuple(devices[len(row_cells):])), []).append(label)
        values = _assign_affinity(toks[k:], aff_cols, tabbed, topo, label)
        if _GPU_LABEL_RE.match(label):
            gpu_aff[label] = values
        elif any(v for v in values.values()):
            nic_aff[label] = values

    for (count, missing), labels in short.items():
        topo.note("topo.short_row", f"row{'s' if len(labels) > 1 else ''} {', '.join(labels)} "
                  f"{'have' if len(labels) > 1 else 'has'} {count} of {n} cells; nothing printed "
                  "for " + ", ".join(missing), level="warning", subject=labels[0])
    for lab in devices:
        if lab not in seen_rows:
            topo.note("topo.missing_row", f"no row for {lab}: its paths come only from its "
                      "column", level="warning", subject=lab)

    kind = _matrix_kind(cells, lines)
    info["kind"] = kind
    if kind == "paths":
        _fill_mirror(devices, cells, topo)
    _report_cells(devices, cells, kind, topo)

    legend, style = _legend(lines)
    if legend:
        info["legend"] = legend
    info["legend_style"] = style

    nic_names = {}
    for line in lines:
        m = _NIC_MAP_RE.match(line)
        if m:
            nic_names[m.group(1)] = m.group(2)

    # -- devices into the model
    for lab in devices:
        m = _GPU_LABEL_RE.match(lab)
        if m and topo.gpu(int(m.group(1))) is not None:
            topo.note("topo.duplicate_gpu", f"{lab} has the same GPU index as "
                      f"{topo.gpu(int(m.group(1))).label}; only the first is listed as a GPU",  # type: ignore[union-attr]
                      level="warning", subject=lab)
        elif m:
            gpu = GPU(index=int(m.group(1)), label=lab)
            values = gpu_aff.get(lab, {})
            for fld, _ in aff_cols:
                raw = values.get(fld)
                gpu.sources[fld] = SOURCE
                if fld == "gpu_numa_id":
                    valid = raw is not None and bool(_NUMA_ID_RE.match(raw))
                    if raw is not None and not valid:
                        topo.note("topo.bad_value", f"GPU NUMA ID {raw!r} of {lab} is not a "
                                  "number; kept as unknown", level="warning", subject=lab)
                    gpu.gpu_numa_id = int(raw) if valid else None  # type: ignore[arg-type]
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
    unnamed = [lab for lab in nic_labels if re.match(r"^NIC\d+$", lab) and lab not in nic_names]
    if unnamed:
        topo.note("topo.no_nic_legend", "no NIC Legend for " + ", ".join(unnamed)
                  + ": device names unknown, labels used as names")
    stray = sorted(set(nic_names) - set(nic_labels))
    if stray:
        topo.note("topo.stray_nic_legend", "NIC Legend names devices not in the matrix: "
                  + ", ".join(stray), level="warning")

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
    topo.extra[SOURCE] = info
    return topo


def _assign_affinity(rest: List[_Tok], cols: List[Tuple[str, int]], tabbed: bool,
                     topo: Topology, label: str) -> Dict[str, Optional[str]]:
    """Map the fields after the matrix cells to the affinity columns."""
    values: Dict[str, Optional[str]] = {c: None for c, _ in cols}
    if not cols:
        extra = [t.text for t in rest if t.text]
        if extra:
            topo.note("topo.extra_fields", f"row {label} has fields after its cells but the "
                      "header names no affinity columns: " + " ".join(extra), level="warning",
                      subject=label)
        return values
    fields = list(rest)
    if tabbed:
        # nvidia-smi pads with an extra TAB before "GPU NUMA ID" and some rows end in a
        # TAB: drop surplus empty fields from the right until the count matches.
        while len(fields) > len(cols):
            empties = [i for i, f in enumerate(fields) if f.text == ""]
            if not empties:
                break
            fields.pop(empties[-1])
        assigned = list(zip([c for c, _ in cols], fields))
    else:
        if len(fields) >= len(cols):
            assigned = list(zip([c for c, _ in cols], fields))
        else:
            assigned = _by_position(fields, cols, topo, label)
    if len(fields) > len(cols):
        extra = [f.text for f in fields[len(cols):] if f.text]
        if extra:
            topo.note("topo.extra_fields", f"row {label} has more fields than affinity "
                      "columns; ignored: " + " ".join(extra), level="warning", subject=label)
    for col, tok in assigned:
        v = tok.text
        values[col] = None if v in ("", "N/A") else v
    return values


def _by_position(fields: List[_Tok], cols: List[Tuple[str, int]], topo: Topology,
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
                topo.note("topo.ambiguous_field", f"row {label}: value {f.text!r} could be "
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
    legend_p2p = any(re.match(r"^\s*OK\s*=", ln) for ln in lines)
    return "p2p" if legend_p2p else "paths"


def _fill_mirror(devices: List[str], cells: List[List[Optional[str]]], topo: Topology) -> None:
    filled = []
    for i in range(len(devices)):
        for j in range(len(devices)):
            if i != j and cells[i][j] is None and cells[j][i] is not None:
                cells[i][j] = cells[j][i]
                filled.append(f"{devices[i]}-{devices[j]}")
    if filled:
        shown = ", ".join(filled[:6]) + (f" and {len(filled) - 6} more" if len(filled) > 6 else "")
        topo.note("topo.mirrored", f"{len(filled)} cells not printed were taken from the "
                  f"mirrored cell (paths are symmetric): {shown}", level="info")
    for i in range(len(devices)):
        if cells[i][i] is None:
            cells[i][i] = "X"
    unknown = sorted({f"{devices[min(i, j)]}-{devices[max(i, j)]}"
                      for i in range(len(devices)) for j in range(len(devices))
                      if cells[i][j] is None})
    if unknown:
        shown = ", ".join(unknown[:6]) + (f" and {len(unknown) - 6} more" if len(unknown) > 6 else "")
        topo.note("topo.unknown_paths", f"path unknown for {len(unknown)} device pairs: {shown}",
                  level="warning")


def _report_cells(devices: List[str], cells: List[List[Optional[str]]], kind: str,
                  topo: Topology) -> None:
    unknown: Dict[str, List[str]] = {}
    asym = []
    for i, row in enumerate(cells):
        for j, c in enumerate(row):
            if c is None:
                continue
            ok = (c in _P2P_TOKENS or c == "X") if kind == "p2p" else bool(_PATH_TOKEN_RE.match(c))
            if not ok:
                unknown.setdefault(c, []).append(f"{devices[i]}-{devices[j]}")
            elif (i == j) != (c == "X"):
                unknown.setdefault(c, []).append(f"{devices[i]}-{devices[j]}")
            if j > i and cells[j][i] is not None and cells[j][i] != c:
                asym.append(f"{devices[i]}-{devices[j]} ({c} vs {cells[j][i]})")
    for tok, where in unknown.items():
        topo.note("topo.unknown_token", f"unrecognised cell {tok!r} kept as printed at "
                  + ", ".join(where[:4]) + (" ..." if len(where) > 4 else ""),
                  level="warning", subject=where[0])
    if asym:
        topo.note("topo.asymmetric", "matrix is not symmetric: " + "; ".join(asym[:4])
                  + (" ..." if len(asym) > 4 else ""), level="warning")


def _nvlink_pairs(devices: List[str], cells: List[List[Optional[str]]],
                  topo: Topology) -> List[NVLinkPair]:
    out = []
    gpus = [(i, int(m.group(1))) for i, d in enumerate(devices)
            for m in [_GPU_LABEL_RE.match(d)] if m]
    for x, (i, a) in enumerate(gpus):
        for j, b in gpus[x + 1:]:
            c1, c2 = nvlink_count(cells[i][j]), nvlink_count(cells[j][i])
            count = c1 if c1 is not None else c2
            if count is not None:
                out.append(NVLinkPair(a=a, b=b, count=count, source=SOURCE))
    return out


def _legend(lines: List[str]) -> Tuple[Dict[str, str], Optional[str]]:
    legend: Dict[str, str] = {}
    last = None
    for line in lines:
        m = _LEGEND_RE.match(line.rstrip())
        if m:
            last = m.group(1)
            legend[last] = m.group(2)
        elif last and line.strip() and line[:1].isspace() and "=" not in line \
                and not _NIC_MAP_RE.match(line) and not line.strip().endswith(":"):
            legend[last] = legend[last] + " " + line.strip()  # wrapped legend line
        else:
            last = None if not line.strip() or line.strip().endswith(":") else last
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
