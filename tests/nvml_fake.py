"""The fake NVML C library (``tests/fake_nvml_lib.py``) plus the test fixture machines.

The library and its recorder (the real live capture through the real pynvml wrappers)
are in ``fake_nvml_lib``; the machine-description compiler is
:func:`nvtopo.simulate.nvml_table.compile_machine`.  This module adds the declarative
machines of ``fixtures/nvml/*.json`` (with ``base`` inheritance and ``gpu_patch``) on top.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Dict, Iterator

import fake_nvml_lib as _lib
from fake_nvml_lib import FakeNvmlLib, install, reset_pynvml
from nvtopo.probes.nvml import FALLBACK_MAX_LINKS
from nvtopo.simulate.nvml_table import LEVELS, P2P, compile_machine

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvml"


def load_machine(name: str) -> Dict[str, Any]:
    """A fixture from fixtures/nvml/, with ``base`` resolved (this file patches the base)."""
    desc = json.loads((FIXTURES / f"{name}.json").read_text())
    base = desc.pop("base", None)
    if base is None:
        return desc
    merged = load_machine(base)
    for k, v in desc.items():
        if k == "gpu_patch":
            for idx, patch in v.items():
                merged["gpus"][int(idx)].update(copy.deepcopy(patch))
        elif k in ("calls",):
            merged.setdefault(k, {}).update(v)
        else:
            merged[k] = copy.deepcopy(v)
    return merged


def machine_fake(name_or_desc: Any, **kw: Any) -> FakeNvmlLib:
    desc = load_machine(name_or_desc) if isinstance(name_or_desc, str) else name_or_desc
    return _lib.machine_fake(desc, **kw)


def machines() -> Iterator[str]:
    return (p.stem for p in sorted(FIXTURES.glob("*.json")))


def record(machine: Any, timeout: float = 10.0) -> Dict[str, Any]:
    """Run the real probe against a fixture machine and return its evidence (JSON-clean)."""
    desc = load_machine(machine) if isinstance(machine, str) else machine
    return _lib.record(desc, timeout=timeout)


def snapshot_doc(machine: Any) -> Dict[str, Any]:
    return {"kind": "nvtopo-snapshot", "schema_version": 1, "nvtopo_version": "0.1.0",
            "host": {"hostname": "fake"}, "probes": {"nvml": record(machine)}}


__all__ = ["FakeNvmlLib", "install", "reset_pynvml", "load_machine", "compile_machine",
           "machine_fake", "machines", "record", "snapshot_doc", "FALLBACK_MAX_LINKS",
           "LEVELS", "P2P"]
