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

The package, one job per module: :mod:`.live` (running nvidia-smi), :mod:`.scan`
(cleaning, tokens, the linear scanners, bounds), :mod:`.locate` (where the matrix is),
:mod:`.matrix` (the matrix into the model), :mod:`.several` (a paste of a ``-m`` and a
``-p2p`` matrix).
"""

from __future__ import annotations

from typing import Dict

from ...model import Topology
from .live import DEFAULT_ARGS, DEFAULT_TIMEOUT, capture
from .locate import TopoParseError, looks_like_topo, matrix_starts
from .matrix import AFFINITY_FIELDS, SOURCE
from .several import parse
from .scan import MAX_DEVICES, MAX_LINE_CHARS, MAX_NOTE_CHARS, MAX_NOTES, clean_text


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


__all__ = ["SOURCE", "DEFAULT_ARGS", "DEFAULT_TIMEOUT", "capture", "derive", "parse",
           "looks_like_topo", "matrix_starts", "TopoParseError", "clean_text", "AFFINITY_FIELDS",
           "MAX_DEVICES", "MAX_LINE_CHARS", "MAX_NOTES", "MAX_NOTE_CHARS"]
