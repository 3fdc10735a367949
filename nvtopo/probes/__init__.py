"""Probes: one source per package (or module), each split into *capture* and a pure *derive*.

The sources: :mod:`.topo` (``nvidia-smi topo -m`` text), :mod:`.nvml` (NVML through
``pynvml``, and pasted ``nvidia-smi nvlink``/``-q`` text), :mod:`.sysfs` (/sys) and
:mod:`.host` (psutil); shared helpers: :mod:`.run` (a bounded subprocess) and
:mod:`.deadline` (one time budget and the worker thread a live capture runs in).  A probe
imports only :mod:`nvtopo.model`, :mod:`nvtopo.safe`, :mod:`nvtopo.errors`, these helpers
and the other probes' public names.

Every probe exposes:

* ``SOURCE``: its name in snapshots and in the model's ``sources`` (``topo-text``);
* ``capture(options: ProbeOptions) -> dict``: run the tool or read the files and
  return the raw evidence, never raising for the expected failures (missing tool,
  no permission, timeout): those are recorded in the evidence;
* ``derive(evidence: dict) -> Topology``: a pure function from that evidence to
  a model fragment, merged with the other sources' fragments by
  :meth:`nvtopo.model.Topology.merge`.

:data:`PROBES` lists them in the order their facts are merged: the first source
to state a fact provides it, and later sources that disagree are recorded as
disagreements.
"""

from __future__ import annotations

import importlib
import os
from ..plain import plain
from types import ModuleType
from typing import Dict, Optional, Sequence

#: source name -> module, in merge order.
PROBES: Dict[str, str] = {
    "topo-text": "nvtopo.probes.topo",
    "nvml": "nvtopo.probes.nvml",
    "sysfs": "nvtopo.probes.sysfs",
    "host": "nvtopo.probes.host",
    "wireguard": "nvtopo.probes.wireguard",
    "imex": "nvtopo.probes.imex",
}


@plain
class ProbeOptions:
    """Options every probe may read; each uses what applies to it."""

    #: Seconds before an external call (nvidia-smi, NVML) is given up.
    timeout: float = 30.0
    #: Directory playing the role of /sys (``--sysfs-root``).
    sysfs_root: Optional[str] = None

    def foreign_root(self) -> bool:
        """True when ``--sysfs-root`` names a tree that is not this machine's /sys.

        Then the probes that ask this machine (nvidia-smi, NVML, psutil) are not
        run: their answers would describe the auditing machine, not the tree.
        """
        if self.sysfs_root is None:
            return False
        try:
            return not os.path.samefile(self.sysfs_root, "/sys")
        except OSError:
            return True


#: Probes that ask this machine rather than read the sysfs tree.
MACHINE_PROBES = ("topo-text", "nvml", "host")


def module(name: str) -> ModuleType:
    return importlib.import_module(PROBES[name])


def prepare(names: Sequence[str]) -> Dict[str, str]:
    """Import the probes ``names`` and every module their ``capture`` needs
    (``CAPTURE_IMPORTS``), in the calling thread, before the probes run at the same time.

    Python's import locks are per module: two probe threads importing modules that import
    each other can deadlock (``_DeadlockError``), and a live snapshot then lost a whole
    probe's evidence at random.  After this, capture code imports nothing new.  A module that
    cannot be imported (no ``pynvml``, no ``psutil``) is left to the probe, which records why;
    the returned dict names each such module with the error.
    """
    missing: Dict[str, str] = {}
    for name in names:
        mod = module(name)
        for needed in getattr(mod, "CAPTURE_IMPORTS", ()):
            try:
                importlib.import_module(needed)
            except Exception as exc:  # noqa: BLE001 - the probe says why, in its evidence
                missing[needed] = f"{type(exc).__name__}: {exc}"
    return missing
