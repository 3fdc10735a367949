"""The live sysfs capture: read the tree under a time budget and return its raw evidence."""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Dict, Optional

from ..deadline import Deadline, run_in_thread
from . import read
from .read import DEADLINE, LiveView
from .root import PERMISSION_DENIED, path_shown, why_not_sysfs
from .walk import collect

DEFAULT_ROOT = "/sys"
#: The time budget when no options give one (``ProbeOptions.timeout``).
DEFAULT_TIMEOUT = 30.0


def _budget(timeout: Any) -> float:
    """Seconds the capture may take: ``timeout`` when it is a positive number (``inf``:
    no limit), else :data:`DEFAULT_TIMEOUT`."""
    try:
        t = float(timeout)
    except (TypeError, ValueError):
        return DEFAULT_TIMEOUT
    return t if t > 0 else DEFAULT_TIMEOUT  # (NaN is not > 0)


def capture(options: Optional[Any] = None, faults: Optional[Dict[str, str]] = None,
            reader: Optional[Callable[[str], bytes]] = None) -> Dict[str, Any]:
    """Read the sysfs tree and return its raw evidence.

    Never raises for the expected failures: a missing root, unreadable files
    and vanished devices are recorded (``status``, ``errors``).

    The reading runs under a time budget, ``options.timeout`` seconds (reading
    ``counters/`` sends a MAD to the HCA and ``hw_counters/`` a firmware
    command: a failing HCA can stall them).  The traversal runs in a worker
    thread; when the budget is spent, no further file is read (each becomes an
    error with reason :data:`DEADLINE`), and if one read still hangs, capture
    returns without it (at most ``min(budget, 1 s)`` later): ``status`` is
    ``"timeout"`` and ``pending`` names the file that did not answer.
    ``faults`` injects read errors and ``reader`` replaces the file reader
    (both for tests).
    """
    root = getattr(options, "sysfs_root", None)
    if root is None:
        root = DEFAULT_ROOT
    evidence: Dict[str, Any] = {
        "root": root,
        "status": "ok",
        "error": None,
        "uid": os.getuid() if hasattr(os, "getuid") else None,
        "duration_s": None,
        "files": {},
        "links": {},
        "dirs": {},
        "errors": {},
    }
    why = why_not_sysfs(root) if root and os.path.isdir(root) else "no such directory"
    if why is not None:
        evidence["status"] = "missing"
        evidence["error"] = (f"{path_shown(root)}: {why}" if why.startswith(PERMISSION_DENIED)
                             else f"{path_shown(root)} is not a sysfs tree ({why})")
        return evidence
    budget = _budget(getattr(options, "timeout", None))
    evidence["timeout_s"] = budget if budget < threading.TIMEOUT_MAX else None  # JSON has no inf
    deadline = Deadline(budget)
    view = LiveView(root, faults, reader)
    worker = run_in_thread(lambda: collect(view), budget, "nvtopo-sysfs")  # inf: no limit
    if not worker.done:
        # Budget spent: read nothing more; the rest of the walk (listings, links) is quick.
        view.stopped = True
        worker.wait(min(budget, 1.0))
        pending = view.inflight if not worker.done else None
        evidence["status"] = "timeout"
        evidence["error"] = f"sysfs probe did not finish within its {budget:g} s budget"
        if pending is not None:  # one read hangs: leave it behind
            evidence["pending"] = {"path": pending[0],
                                   "waited_s": round(time.monotonic() - pending[1], 3)}
            evidence["error"] += f" ({pending[0]} did not answer)"
        evidence["error"] += "; files not read by then are unknown (deadline)"
    if worker.error is not None:  # a bug in the traversal: handed to the caller
        raise worker.error
    # dict() copies are atomic under the GIL: a hung worker that wakes up later cannot
    # change what is returned
    files, links, dirs, errors, cut = (dict(view.files), dict(view.links), dict(view.dirs),
                                       dict(view.errors), dict(view.cut))
    pending_path = (evidence.get("pending") or {}).get("path")
    if pending_path is not None and pending_path not in files and pending_path not in dirs:
        errors[pending_path] = DEADLINE
    if view.full:
        # Nothing was read or recorded past the limit: what the evidence lacks is unknown
        # for that reason (derive answers LIMIT for it), never absent.
        evidence["status"] = "limit"
        evidence["error"] = (f"sysfs probe stopped at its evidence limit "
                             f"({read.MAX_EVIDENCE_ENTRIES} entries or "
                             f"{read.MAX_EVIDENCE_BYTES // (1024 * 1024)} MiB); files "
                             "not read by then are unknown" + (
                                 f" ({evidence['error']})" if evidence["error"] else ""))
    evidence["duration_s"] = round(deadline.elapsed(), 4)
    evidence["files"] = files
    evidence["links"] = links
    evidence["dirs"] = dirs
    evidence["errors"] = errors
    if cut:
        evidence["cut"] = cut
    return evidence
