"""The sysfs probe: InfiniBand/RoCE ports, the PCI tree and NUMA, read from /sys.

Everything here is readable without root and needs no external tool.  The probe reads a
*sysfs root* (``/sys`` by default, or ``--sysfs-root DIR`` where DIR plays the role of
/sys, like node_exporter's ``--path.sysfs``).  Two halves, kept apart, as for every probe:

* :func:`capture` reads the tree and returns the raw evidence: a flat map of the paths it
  read (relative to the root, symlinks resolved *inside* the root) to their contents
  (``files``), link targets (``links``), directory listings (``dirs``) and read errors
  (``errors``, e.g. ``EINVAL``);
* :func:`derive` is a pure function from that evidence to a model fragment.

Both run the same traversal (:func:`collect`) over a *view*: the live tree in
:func:`capture` (:class:`LiveView`), the recorded maps in :func:`derive`
(:class:`EvidenceView`); so the evidence holds exactly the paths the probe reads, and
``--from`` re-derives everything.

The package, one job per module: :mod:`.read` (bounded reads, the live and the evidence
view), :mod:`.root` (is a directory a sysfs tree), :mod:`.live` (the live capture under
its deadline), :mod:`.walk` (the traversal), :mod:`.parse` (values), :mod:`.facts` (per
device, port and counter), :mod:`.build` (raw values to the model).
"""

from __future__ import annotations

from typing import Any, Dict, List

from ...model import Topology
from . import read
from .build import SOURCE
from .build import build as build_fragment
from .live import DEFAULT_ROOT, DEFAULT_TIMEOUT, capture
from ...model.rdma import DATA_COUNTERS, ERROR_COUNTERS, OTHER_SATURATING
from .facts import path_level, port_facts
from .parse import (PCIE_GEN, cpulist_count, natural_key, parse_enum, parse_pcie_speed,
                    parse_rate, pcie_gen, sysfs_bdf)
from .read import (DEADLINE, ELOOP_TEXT, LIMIT, MAX_ATTR_BYTES, MAX_DIR_ENTRIES,
                   MAX_EVIDENCE_BYTES, MAX_EVIDENCE_ENTRIES, NOT_RECORDED, EvidenceView,
                   LiveView, Refused, list_dir, read_file, resolve_path)
from .root import PERMISSION_DENIED, SYSFS_MARKERS, check_root, looks_like_sysfs, why_not_sysfs
from .walk import MAX_DEVICES, MAX_PORT, collect


def derive(evidence: Dict[str, Any]) -> Topology:
    """Model facts from recorded sysfs evidence.  Pure: no I/O."""
    topo = Topology(sources=[SOURCE])
    status = evidence.get("status") or "ok"
    if status not in ("ok", "timeout", "limit"):
        topo.note("sysfs.unavailable", f"no sysfs facts: {evidence.get('error') or status}",
                  source=SOURCE, level="warning")
        return topo
    timed_out = status == "timeout"
    unread = LIMIT if status == "limit" else DEADLINE if timed_out else NOT_RECORDED
    raw = collect(EvidenceView(evidence, unread=unread))
    if status == "limit":
        topo.note("sysfs.limit", str(evidence.get("error") or LIMIT), source=SOURCE,
                  level="warning")
    cut = evidence.get("cut")
    if isinstance(cut, dict) and cut:
        paths = sorted(str(k) for k in cut)
        topo.note("sysfs.listing_cut", f"{len(paths)} director{'ies' if len(paths) > 1 else 'y'}"
                  f" with more than {read.MAX_DIR_ENTRIES} entries, the rest not read: "
                  + ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4
                                            else ""), source=SOURCE, level="warning")
    topo = build_fragment(raw, root=evidence.get("root"), topo=topo)
    if timed_out:
        errors = evidence.get("errors")
        late = [str(p) for p, e in (errors.items() if isinstance(errors, dict) else ())
                if e == DEADLINE]
        never = [name for name, why in (topo.sysfs.absent_devices.items()
                                        if topo.sysfs is not None else ()) if why == DEADLINE]
        topo.note("sysfs.timeout", f"{evidence.get('error') or 'sysfs probe timed out'} "
                  f"({len(late)} files){_devices_of(late, never)}", source=SOURCE,
                  level="warning")
    return topo


def _devices_of(paths: List[str], never: List[str], most: int = 8) -> str:
    """The devices the unread ``paths`` belong to, then those ``never`` reached, named
    (``; unread facts of mlx5_3, 0000:2d:00.0``): a file's device is the name after
    ``infiniband``, ``net`` or ``nvme`` in its path, else the deepest PCI address in it."""
    names: Dict[str, None] = {}
    for path in paths:
        parts = path.split("/")
        name = None
        for i, part in enumerate(parts[:-1]):
            if part in ("infiniband", "net", "nvme") and i + 2 < len(parts):
                name = parts[i + 1]
                break
            if part.count(":") == 2 and "." in part:
                name = part
        if name is not None:
            names.setdefault(name, None)
    for name in never:
        names.setdefault(name, None)
    if not names:
        return ""
    shown = list(names)
    return "; unread facts of " + ", ".join(shown[:most]) + (
        f" and {len(shown) - most} more devices" if len(shown) > most else "")


#: The probe interface, and the names other packages (the simulator, ``diff``, the CLI's
#: ``--sysfs-root`` check, fakesys) use.  The bounds are also here to read; to change one,
#: set it on the module that holds it (``read.MAX_DIR_ENTRIES``, ``walk.MAX_DEVICES``).
__all__ = ["SOURCE", "DEFAULT_ROOT", "DEFAULT_TIMEOUT", "capture", "derive", "collect",
           "LiveView", "EvidenceView", "Refused", "read_file", "list_dir",
           "resolve_path", "check_root", "why_not_sysfs", "looks_like_sysfs",
           "PERMISSION_DENIED", "SYSFS_MARKERS", "DEADLINE", "LIMIT", "NOT_RECORDED",
           "ELOOP_TEXT", "MAX_ATTR_BYTES", "MAX_DIR_ENTRIES", "MAX_EVIDENCE_BYTES",
           "MAX_EVIDENCE_ENTRIES", "MAX_DEVICES", "MAX_PORT", "ERROR_COUNTERS",
           "OTHER_SATURATING", "DATA_COUNTERS", "PCIE_GEN", "parse_enum", "parse_rate",
           "parse_pcie_speed", "pcie_gen", "sysfs_bdf", "cpulist_count", "natural_key",
           "path_level", "port_facts"]
