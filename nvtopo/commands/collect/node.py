"""The node side of a collection: take this node's snapshot and print it as one record.

``nvtopo collect node-record`` runs on every node (through ``srun``, or as a Ray task's
subprocess).  It takes the snapshot ``nvtopo snapshot`` takes (the same code: every probe
under ``--timeout``), compresses it and prints one record (:mod:`.record`) on standard
output.  The node's name comes from the engine, never from the host name (on one test
host every Slurm node has the same host name): Slurm's ``SLURMD_NODENAME``, or the name
the collector gives with ``--node``.  A node that cannot take its snapshot prints one
``FAIL`` line saying why and exits 1.  ``--limit`` bounds the whole run: past it, a
``FAIL`` line and exit status 124, whatever is still running.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Dict, Optional

from ...errors import NvtopoError
from . import record

#: Exit status of a node-side run that went past ``--limit``.
TIMED_OUT = 124


def node_name(engine: str, given: Optional[str]) -> str:
    """The node's name as the engine knows it."""
    if engine == "slurm":
        name = os.environ.get("SLURMD_NODENAME") or ""
        if not name:
            raise NvtopoError("SLURMD_NODENAME is not set: not a Slurm task",
                              where="collect node-record")
        if given is not None and given != name:
            raise NvtopoError(f"--node {given} is not this Slurm node ({name})",
                              where="collect node-record")
    else:
        name = given or ""
        if not name:
            raise NvtopoError("--node NAME is required outside Slurm",
                              where="collect node-record")
    if not record.is_node_name(name):
        raise NvtopoError(f"'{name[:80]}' is not a node name nvtopo can use",
                          where="collect node-record")
    return name


def engine_facts(engine: str) -> Dict[str, Any]:
    """What the engine says of where the node sits (free evidence for the manifest)."""
    facts: Dict[str, Any] = {}
    if engine == "slurm":
        addr = os.environ.get("SLURM_TOPOLOGY_ADDR")
        if addr and len(addr) <= 200:
            facts["topology_addr"] = addr
    return facts


def record_bytes(node: str, timeout: float, engine: str = "slurm") -> bytes:
    """This node's snapshot as one record (all its lines)."""
    from ... import output, snapshot
    from ...probes import ProbeOptions

    doc = snapshot.take(ProbeOptions(timeout=timeout))
    payload = output.compress(snapshot.dumps(doc).encode("utf-8"))
    return b"".join(record.encode(node, payload, engine_facts(engine)))


def run(engine: str, node: Optional[str], timeout: float, limit: float) -> int:
    """The node-side command: prints the record (or a FAIL line); returns the exit status."""
    out = sys.stdout.buffer
    name = node_name(engine, node)  # NvtopoError: the CLI's one-line error, exit 2
    lock = threading.Lock()

    def too_late() -> None:
        with lock:
            out.write(record.fail_line(name, f"did not finish within {limit:g} s on the node"))
            out.flush()
            os._exit(TIMED_OUT)

    watchdog = threading.Timer(limit, too_late)
    watchdog.daemon = True
    watchdog.start()
    try:
        data = record_bytes(name, timeout, engine)
        status = 0
    except Exception as exc:  # noqa: BLE001 - whatever failed, the collector is told why
        message = exc.message if isinstance(exc, NvtopoError) else f"{type(exc).__name__}: {exc}"
        data = record.fail_line(name, message)
        status = 1
    with lock:
        watchdog.cancel()
        out.write(data)
        out.flush()
    return status
