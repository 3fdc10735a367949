"""Bundled example inputs, so every command can be tried without a GPU.

``dgx-h100`` is an ``nvidia-smi topo -m`` text reconstructed from the DGX
H100 user guide's port map (8 H100 NV18 through NVSwitch; 8 compute
ConnectX-7, each PIX to its GPU; 2 dual-port storage NICs; 2 NUMA nodes).
It is not a capture from a real machine.
"""

from __future__ import annotations

from importlib import resources
from typing import List

from ..errors import NvtopoError

_FILES = {"dgx-h100": "dgx-h100.txt"}


def names() -> List[str]:
    return sorted(_FILES)


def read(name: str) -> str:
    """The text of a bundled example."""
    if name not in _FILES:
        raise NvtopoError(f"no bundled example named {name!r}; choose from: "
                          + ", ".join(names()), where="--example")
    return (resources.files(__name__) / _FILES[name]).read_text(encoding="utf-8")
