"""Probing this machine: every probe (a snapshot), or the few one command reads.

The probes run at the same time, each under the one ``--timeout``: a live command ends
within that bound (plus a few seconds of clean-up) however many probes hang.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, Optional, Sequence

from .. import __version__
from .. import probes as probes_pkg
from ..probes import ProbeOptions
from .document import SNAPSHOT_KIND, SNAPSHOT_SCHEMA


def host_facts() -> Dict[str, Any]:
    """Hostname, kernel and time of the machine taking the snapshot."""
    import platform
    import socket
    from datetime import datetime, timezone

    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "os": platform.system(),
        "machine": platform.machine(),
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


#: Seconds a probe may run past ``--timeout`` (its own clean-up: ending nvidia-smi's process
#: group, joining a worker) before it is recorded as not returned and left behind.
OVERRUN_GRACE_S = 3.0


def capture(options: ProbeOptions, names: Sequence[str], skip_foreign: bool = True
            ) -> Dict[str, Any]:
    """The evidence of the probes ``names`` (in :data:`nvtopo.probes.PROBES` order), run at
    the same time under ``options.timeout``.

    Every probe module, and every module a probe's capture imports, is imported here first,
    in this thread (:func:`nvtopo.probes.prepare`): imports inside concurrent probe threads
    can deadlock on Python's per-module import locks, which lost whole probes at random.

    A probe still running :data:`OVERRUN_GRACE_S` after the timeout is recorded as
    ``"status": "unanswered"`` (its thread is a daemon: it cannot keep nvtopo alive).  A
    probe that raises (a bug in nvtopo, not an answer of the machine) is recorded as
    ``"status": "crashed"`` with the exception, costs the others nothing, and ``check``
    reports it as an error (``source.probe_crashed``): its facts are unknown.  With a
    ``--sysfs-root`` that is another machine's tree, the probes that ask this machine are
    recorded as skipped (``skip_foreign``; else each probe says itself why it does not
    describe that tree, as the host probe does).
    """
    started = time.monotonic()
    foreign = skip_foreign and options.foreign_root()
    results: Dict[str, Any] = {}

    def run(name: str) -> None:
        try:
            results[name] = probes_pkg.module(name).capture(options)
        except BaseException as exc:  # noqa: BLE001 - a probe's bug must not cost the others
            results[name] = {"status": "crashed",
                             "error": f"{name} probe failed inside nvtopo: "
                                      f"{type(exc).__name__}: {exc}"}

    probes_pkg.prepare([n for n in probes_pkg.PROBES if n in names
                        and not (foreign and n in probes_pkg.MACHINE_PROBES)])
    workers = []
    for name in probes_pkg.PROBES:
        if name not in names:
            continue
        if foreign and name in probes_pkg.MACHINE_PROBES:
            results[name] = {"status": "skipped", "error": (
                f"not run: --sysfs-root {options.sysfs_root} is another machine's sysfs tree, "
                "and this machine's answers would not describe it")}
            continue
        worker = threading.Thread(target=run, args=(name,), name=f"nvtopo-{name}", daemon=True)
        worker.start()
        workers.append((name, worker))
    deadline = started + float(options.timeout) + OVERRUN_GRACE_S
    for name, worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive() or name not in results:
            results[name] = {"status": "unanswered", "error": (
                f"{name} probe did not return within {float(options.timeout):g} s "
                f"(+{OVERRUN_GRACE_S:g} s); its facts are unknown")}
    return {name: results[name] for name in probes_pkg.PROBES if name in results}


def take(options: Optional[ProbeOptions] = None,
         names: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Run every probe (or those named) and return the snapshot document.

    The document's host block holds this machine's hostname, kernel and time; with a
    ``--sysfs-root`` of another machine, only the time and that root.  A subset of the
    probes (``ib``, ``links``) is taken without a host block (only the probes' facts), each
    probe run as it is.
    """
    options = options or ProbeOptions()
    started = time.monotonic()
    probes = capture(options, tuple(probes_pkg.PROBES) if names is None else names,
                     skip_foreign=names is None)
    host: Dict[str, Any] = {}
    if names is None:
        host = host_facts()
        if options.foreign_root():
            host = {"hostname": None, "time": host["time"], "sysfs_root": options.sysfs_root}
    return {
        "kind": SNAPSHOT_KIND,
        "schema_version": SNAPSHOT_SCHEMA,
        "nvtopo_version": __version__,
        "host": host,
        "duration_s": round(time.monotonic() - started, 3),
        "probes": probes,
    }
