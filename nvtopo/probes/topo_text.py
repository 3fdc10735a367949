"""The old import path of the ``nvidia-smi topo`` text probe.

The probe is the package :mod:`nvtopo.probes.topo` now; this module only re-exports its
public names for importers not yet moved (nothing in nvtopo imports it).
"""

from __future__ import annotations

from .topo import (AFFINITY_FIELDS, DEFAULT_ARGS, DEFAULT_TIMEOUT, MAX_DEVICES, MAX_LINE_CHARS,
                   MAX_NOTE_CHARS, MAX_NOTES, SOURCE, TopoParseError, capture, clean_text, derive,
                   looks_like_topo, parse)

__all__ = ["AFFINITY_FIELDS", "DEFAULT_ARGS", "DEFAULT_TIMEOUT", "MAX_DEVICES", "MAX_LINE_CHARS",
           "MAX_NOTE_CHARS", "MAX_NOTES", "SOURCE", "TopoParseError", "capture", "clean_text",
           "derive", "looks_like_topo", "parse"]
