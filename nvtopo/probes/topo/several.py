"""A paste of one matrix, or of several: tickets often hold ``nvidia-smi topo -m`` and
``nvidia-smi topo -p2p r`` in one text, in either order, with prompts, fences or prose
between (``docs/ticket-inputs.md``).

Each matrix is read on its own (:func:`.matrix.parse_lines`), then: the ``-m`` matrix is
the topology and the ``-p2p`` matrix its P2P status.  A matrix repeated as it was is read
once.  A ``-m`` and a ``-mp`` matrix of one node (``-mp`` prints the PCIe path where ``-m``
prints ``NV#``, and is the same everywhere else) are read as that node: the ``-m`` one is the
topology, and an info note says the ``-mp`` one was not used (the model has no place for the
PCIe path of an NVLinked pair).  Two path matrices that differ otherwise, or two ``-p2p``
matrices of one mode that differ, are two nodes (or one node at two times): the paste is
refused (which would be the node?).
A ``-p2p`` matrix of a second mode (``-p2p r`` and ``-p2p a``) is not read, and a note says
so: the model holds one P2P status a paste.  A ``-p2p`` matrix naming other GPUs than the
``-m`` matrix is refused: that is not one node's output either.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ...model import Topology, path_kind
from .locate import TopoParseError, find_header, matrix_starts
from .matrix import SOURCE, parse_lines
from .scan import MAX_NOTES, clean_text

__all__ = ["parse"]

#: Later header lines with no matrix under them that are named in a note.
_MAX_SKIPPED = MAX_NOTES

#: Notes that say what was read, not what may be wrong.
_INFO = ("topo.repeated_matrix", "topo.mp_matrix_not_used")

#: What ``-mp`` prints where ``-m`` prints ``NV#``: a PCIe path.
_PCIE_PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")

#: The flag of a kept prompt: ``-mp`` / ``--matrix_pci``, or ``-m`` / ``--matrix``.
_MP_FLAG_RE = re.compile(r"(?:^|\s)(?:-mp|--matrix_pci)(?=\s|$)")
_M_FLAG_RE = re.compile(r"(?:^|\s)(?:-m|--matrix)(?=\s|$)")


def parse(text: str) -> Topology:
    """Parse ``nvidia-smi topo -m`` / ``-mp`` / ``--matrix`` / ``-p2p`` text into a model:
    one matrix, or a ``-m`` and a ``-p2p`` matrix in one paste.

    Raises :class:`TopoParseError` when no matrix is present at all, when the first one
    cannot be read (:func:`.matrix.parse_lines`), and when the paste holds two matrices
    of one kind that differ (module docstring).
    """
    lines = clean_text(text)
    starts = matrix_starts(lines)
    if len(starts) == 1:
        return parse_lines(lines)
    kept: Dict[str, Tuple[int, Topology]] = {}  # "paths" / "p2p" -> (header line, model)
    notes: List[Tuple[str, str]] = []
    skipped: List[int] = []
    seen: Dict[Tuple[str, ...], bool] = {}
    for k, start in enumerate(starts):
        part = lines[start:starts[k + 1] if k + 1 < len(starts) else len(lines)]
        head = start + (find_header(part) or 0) + 1  # 1-based, as editors number lines
        same = tuple(part[head - start - 1:])
        if same in seen:  # pasted twice, to the byte
            if seen[same]:
                notes.append(("topo.repeated_matrix", f"the matrix at line {head} repeats "
                              "an earlier one; read once"))
            else:
                skipped.append(head)
            continue
        try:
            topo = parse_lines(part, start)
        except TopoParseError:
            if k == 0:
                raise
            seen[same] = False
            skipped.append(head)
            continue
        seen[same] = True
        kind = "p2p" if topo.p2p is not None else "paths"
        if kind not in kept:
            kept[kind] = (head, topo)
            continue
        first_head, first = kept[kind]
        if _content(first, kind) == _content(topo, kind):
            notes.append(("topo.repeated_matrix", f"the matrix at line {head} repeats the one "
                          f"at line {first_head}; read once"))
        elif kind == "paths" and (m_side := _m_of(first, topo)) is not None:
            m_first = m_side == 0
            m_head, mp_head = (first_head, head) if m_first else (head, first_head)
            if not m_first:
                kept[kind] = (head, topo)
            notes.append(("topo.mp_matrix_not_used", f"the nvidia-smi topo -mp matrix at line "
                          f"{mp_head} was read as the same node as the -m matrix at line "
                          f"{m_head} (the same but for the PCIe paths it prints where -m "
                          "prints NV#); the -m one is read, the -mp one not used"))
        elif kind == "p2p" and _mode(first) != _mode(topo) and None not in (_mode(first),
                                                                             _mode(topo)):
            notes.append(("topo.p2p_not_read", f"the nvidia-smi topo -p2p {_mode(topo)} "
                          f"matrix at line {head} is not read: nvtopo reads one P2P status "
                          f"a paste (the -p2p {_mode(first)} one at line {first_head}); "
                          "check the other in a file of its own"))
        else:
            what = "-p2p" if kind == "p2p" else _flags(first, topo)
            beyond = "" if kind == "p2p" else (", not only where one prints NV# and the other "
                                               "a PCIe path (as -m and -mp of one node do)")
            raise TopoParseError(
                f"holds two different nvidia-smi topo {what} matrices (lines {first_head} "
                f"and {head}){beyond}: two nodes, or one node at two times; paste each in a "
                "file of its own")
    topo = _joined(kept)
    for code, message in notes[:MAX_NOTES]:
        topo.note(code, message, level="info" if code in _INFO else "warning",
                  source=SOURCE)
    if skipped:
        shown = ", ".join(str(h) for h in skipped[:_MAX_SKIPPED])
        more = f" and {len(skipped) - _MAX_SKIPPED} more" if len(skipped) > _MAX_SKIPPED else ""
        topo.note("topo.second_header_not_read", f"line{'s' if len(skipped) > 1 else ''} "
                  f"{shown}{more} look{'' if len(skipped) > 1 else 's'} like the header of "
                  "another matrix but hold no matrix nvtopo reads; not read",
                  level="warning", source=SOURCE)
    return topo


def _joined(kept: Dict[str, Tuple[int, Topology]]) -> Topology:
    """The ``-m`` model with the ``-p2p`` matrix as its P2P status (and that matrix's notes)."""
    if "paths" not in kept:
        return kept["p2p"][1]
    topo = kept["paths"][1]
    if "p2p" not in kept:
        return topo
    p2p_head, p2p = kept["p2p"]
    mine = sorted(g.label for g in topo.gpus)
    theirs = sorted(g.label for g in p2p.gpus)
    if mine != theirs:
        raise TopoParseError(
            f"the nvidia-smi topo -p2p matrix at line {p2p_head} names GPUs "
            f"{_names(theirs)}, the -m matrix at line {kept['paths'][0]} {_names(mine)}: not "
            "one node's output; paste each in a file of its own")
    topo.p2p = p2p.p2p
    topo.notes.extend(p2p.notes)
    return topo


def _names(labels: List[str]) -> str:
    return ", ".join(labels[:8]) + (f" and {len(labels) - 8} more" if len(labels) > 8 else "") \
        if labels else "none"


def _mode(topo: Topology) -> Optional[str]:
    return topo.p2p.mode if topo.p2p is not None else None


def _content(topo: Topology, kind: str) -> Any:
    """What two matrices must share to be one: their cells, and what the rows say beside."""
    m = topo.p2p if kind == "p2p" else topo.matrix
    cells = (m.devices, m.cells) if m is not None else None
    return (cells, [(g.label, g.cpu_affinity, g.numa_affinity, g.gpu_numa_id)
                    for g in topo.gpus], [(n.label, n.name) for n in topo.nics])


def _flag(topo: Topology) -> Optional[str]:
    """``-m`` or ``-mp`` as the kept prompt names the command, else None."""
    command = topo.topo_text.command if topo.topo_text is not None else None
    if not command:
        return None
    if _MP_FLAG_RE.search(command):
        return "-mp"
    return "-m" if _M_FLAG_RE.search(command) else None


def _flags(a: Topology, b: Topology) -> str:
    """What two path matrices are, for a message: ``-m``, ``-mp``, ``-m and -mp`` where the
    prompts say, ``-m or -mp`` where a prompt is missing."""
    fa, fb = _flag(a), _flag(b)
    if fa is None or fb is None:
        return "-m or -mp"
    return fa if fa == fb else "-m and -mp"


def _m_of(a: Topology, b: Topology) -> Optional[int]:
    """0 or 1: which of two path matrices is the ``-m`` one when they are one node's ``-m``
    and ``-mp`` (the same devices and row facts; every cell equal but where the ``-m`` one
    prints ``NV#`` and the ``-mp`` one, which prints no ``NV#`` at all, a PCIe path), with no
    kept prompt saying otherwise; None when they are not."""
    if a.matrix is None or b.matrix is None or a.matrix.devices != b.matrix.devices:
        return None
    if _content(a, "paths")[1:] != _content(b, "paths")[1:]:
        return None  # the affinities or the NIC names differ
    m_side: Optional[int] = None
    nv = [False, False]
    for row_a, row_b in zip(a.matrix.cells, b.matrix.cells):
        for ca, cb in zip(row_a, row_b):
            ka, kb = path_kind(ca), path_kind(cb)
            nv[0] = nv[0] or ka == "NV"
            nv[1] = nv[1] or kb == "NV"
            if ca == cb:
                continue
            if ka == "NV" and kb in _PCIE_PATHS:
                side = 0
            elif kb == "NV" and ka in _PCIE_PATHS:
                side = 1
            else:
                return None
            if m_side not in (None, side):
                return None
            m_side = side
    if m_side is None or nv[1 - m_side]:
        return None  # -mp prints no NV#
    m, mp = (a, b) if m_side == 0 else (b, a)
    if _flag(m) == "-mp" or _flag(mp) == "-m":
        return None  # the prompts say otherwise
    return m_side
