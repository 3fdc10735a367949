"""The old import path of the pasted ``nvidia-smi nvlink``/``-q`` text reader.

The reader is :mod:`nvtopo.probes.nvml.paste` (the text) and :mod:`nvtopo.probes.nvml.text`
(the model) now; this module only re-exports their public names for importers not yet
moved (nothing in nvtopo imports it).
"""

from __future__ import annotations

from .nvml.paste import MAX_LINKS
from .nvml.text import MAX_NOTES, SOURCE, derive_text, fabric_raw, looks_like, parse

__all__ = ["MAX_LINKS", "MAX_NOTES", "SOURCE", "derive_text", "fabric_raw", "looks_like", "parse"]
