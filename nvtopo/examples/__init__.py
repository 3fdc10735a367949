"""Bundled example inputs, so every command can be tried without a GPU.

``dgx-h100`` is an ``nvidia-smi topo -m`` text reconstructed from the DGX
H100 user guide's port map (8 H100 NV18 through NVSwitch; 8 compute
ConnectX-7, each PIX to its GPU; 2 dual-port storage NICs; 2 NUMA nodes).
It is not a capture from a real machine.

``dgx-h100-healthy`` and ``dgx-h100-faulty`` are snapshots written by ``nvtopo simulate``
(gzip-compressed), for ``nvtopo check --example``.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, List

from ..errors import NvtopoError

_FILES = {"dgx-h100": "dgx-h100.txt"}
#: Snapshots made with ``nvtopo simulate`` (gzip-compressed), for ``nvtopo check --example``:
#: a healthy DGX H100 and one with faults (an NVLink down, a compute port down, a GPU at
#: x8, an error counter).  Remade with the commands in ``docs/commands.md`` (check).
_SNAPSHOTS = {"dgx-h100-healthy": "dgx-h100-healthy.json.gz",
              "dgx-h100-faulty": "dgx-h100-faulty.json.gz"}


def names() -> List[str]:
    return sorted(_FILES)


def snapshot_names() -> List[str]:
    """The bundled example snapshots (``check --example``), and the text examples."""
    return sorted(set(_SNAPSHOTS) | set(_FILES))


@contextmanager
def path(name: str) -> Iterator[str]:
    """A file system path of the bundled example ``name`` (a snapshot or a text), valid
    inside the ``with`` block (a zipped install extracts it to a temporary file)."""
    file = _SNAPSHOTS.get(name) or _FILES.get(name)
    if file is None:
        raise NvtopoError(f"no bundled example named {name!r}; choose from: "
                          + ", ".join(snapshot_names()), where="--example")
    here = os.path.join(os.path.dirname(__file__), file)
    if os.path.isfile(here):  # installed as files (pip, a checkout): no importlib.resources
        yield here
        return
    from importlib import resources  # a zipped install: extracted to a temporary file

    with resources.as_file(resources.files(__name__) / file) as p:
        yield str(p)


def read(name: str) -> str:
    """The text of a bundled example."""
    if name not in _FILES:
        raise NvtopoError(f"no bundled example named {name!r}; choose from: "
                          + ", ".join(names()), where="--example")
    here = os.path.join(os.path.dirname(__file__), _FILES[name])
    if os.path.isfile(here):
        with open(here, encoding="utf-8") as f:
            return f.read()
    from importlib import resources  # a zipped install

    return (resources.files(__name__) / _FILES[name]).read_text(encoding="utf-8")
