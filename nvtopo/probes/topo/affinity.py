"""The affinity columns of a ``topo -m`` matrix (CPU Affinity, NUMA Affinity, GPU NUMA ID):
which field after a row's cells belongs to which column, by TAB or by position under the
header (:func:`assign_affinity`)."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .scan import Notes, Tok

#: Header words of an affinity column (spaces removed, lower case) -> the GPU field.
AFFINITY_FIELDS = {"cpuaffinity": "cpu_affinity", "numaaffinity": "numa_affinity",
                   "gpunumaid": "gpu_numa_id"}
_COLUMN_TITLES = {"cpu_affinity": "CPU Affinity", "numa_affinity": "NUMA Affinity",
                  "gpu_numa_id": "GPU NUMA ID"}


def assign_affinity(rest: List[Tok], cols: List[Tuple[str, int]], tabbed: bool,
                    note: Notes, label: str) -> Dict[str, Optional[str]]:
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
        keep: List[Tok] = []
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


def _by_position(fields: List[Tok], cols: List[Tuple[str, int]], note: Notes,
                 label: str) -> List[Tuple[str, Tok]]:
    """Assign fewer fields than columns by their position under the header.

    Where a value sits about as near to two column headings, the guess is
    reported as a warning rather than made silently.
    """
    out: List[Tuple[str, Tok]] = []
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
