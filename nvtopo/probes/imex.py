"""The imex probe: the IMEX domain as ``nvidia-imex-ctl -N -j`` reports it (``docs/imex.md``).

Capture runs ``nvidia-imex-ctl -N -j`` through the bounded runner (:mod:`.run`: argv only,
no shell, time and bytes bounded) only where the program is on ``PATH``; where it is not,
IMEX is not installed (``absent``, never bad).  Exit status 255 is the tool's answer when it
cannot read its node config: no IMEX domain is configured on this node (``not_configured``:
under Kubernetes, no compute domain active).  Permission denied or a timeout leave the
state unknown, with the reason.  This machine's host name and addresses are recorded beside
the output, so that :func:`derive` finds this node's entry among the members.

The raw output is kept: it names the members' IP addresses and host names (as a snapshot
keeps the host name), nothing secret.  :func:`derive` is pure: the recorded output read by
:mod:`.imex_text`.  A pasted text kept as this probe's evidence (``snapshot --from``) is
read the same way.
"""

from __future__ import annotations

import shutil
import socket
from typing import Any, Dict, List, Optional

from ..model import Topology
from ..model.imex import ImexNode
from ..safe import printable
from . import imex_text
from .run import run

SOURCE = "imex"
#: Program run (found on PATH) and its arguments.
PROGRAM = "nvidia-imex-ctl"
ARGS = ("-N", "-j")
#: Bytes kept of its output (a member is ~2 kB of JSON at 18 members; 1024 members fit).
MAX_OUTPUT = 4 * 1024 * 1024
#: The most seconds it is given (it asks the local daemon, which asks its peers).
MAX_SECONDS = 20.0
#: Exit status of ``nvidia-imex-ctl`` when it cannot read its node config.
NO_CONFIG_EXIT = 255
#: Modules :func:`capture` imports (imported before the probe threads start).
CAPTURE_IMPORTS = ("psutil",)


def _addresses() -> Optional[List[str]]:
    """This machine's IP addresses (psutil; ``None`` where it cannot say)."""
    try:
        import psutil

        found = {a.address.split("%")[0] for addrs in psutil.net_if_addrs().values()
                 for a in addrs if a.family in (socket.AF_INET, socket.AF_INET6)}
    except Exception:  # noqa: BLE001 - psutil raises its own types on odd platforms
        return None
    return sorted(found)[:256]


def _status(rc: Optional[int], stderr: str, timed_out: bool) -> str:
    if timed_out:
        return "timeout"
    if rc == 0:
        return "ok"
    low = stderr.lower()
    if "permission denied" in low or "not permitted" in low:
        return "not_permitted"
    if rc == NO_CONFIG_EXIT:
        return "not_configured"
    return "failed"


def capture(options: Optional[Any] = None) -> Dict[str, Any]:
    """Run ``nvidia-imex-ctl -N -j`` where it is installed; never raises for a missing
    program, no permission or a timeout (recorded in ``status`` and ``error``)."""
    ev: Dict[str, Any] = {"command": PROGRAM, "args": list(ARGS), "status": "ok",
                          "error": None}
    if options is not None and options.foreign_root():
        ev.update(status="not run", error=f"--sysfs-root {options.sysfs_root} is another "
                  "machine's tree: this machine's IMEX daemon would not describe it")
        return ev
    program = shutil.which(PROGRAM)
    if program is None:
        ev.update(status="absent", error=f"{PROGRAM} not found on PATH: IMEX not installed")
        return ev
    ev["local"] = {"hostname": socket.gethostname() or None, "addresses": _addresses()}
    timeout = min(float(getattr(options, "timeout", None) or 30.0), MAX_SECONDS)
    try:
        out = run([program, *ARGS], timeout, stdout_cap=MAX_OUTPUT, stderr_cap=4096)
    except OSError as exc:
        perm = isinstance(exc, PermissionError)
        ev.update(status="not_permitted" if perm else "failed",
                  error=f"{PROGRAM}: {exc.strerror or exc}")
        return ev
    stdout = out.stdout.decode("utf-8", "replace")
    stderr = out.stderr.decode("utf-8", "replace")[:2048]
    ev.update(exit_status=out.returncode, duration_s=out.duration_s, timeout_s=timeout,
              stdout=stdout if not out.cut else stdout[:65536], stderr=stderr)
    status = _status(out.returncode, stderr + stdout[:2048], out.timed_out)
    if status == "ok" and out.cut:
        status = "failed"
    ev["status"] = status
    if status != "ok":
        said = (stderr.strip() or stdout.strip())[:300]
        ev["error"] = {
            "timeout": f"{PROGRAM} -N -j did not answer within {timeout:g} s",
            "not_configured": f"{PROGRAM} -N -j exited {NO_CONFIG_EXIT}: no usable node "
                              "config, no IMEX domain configured on this node",
            "not_permitted": f"{PROGRAM} -N -j: permission denied (it is run as root)",
        }.get(status, f"{PROGRAM} -N -j " + ("output cut" if out.cut else
                                              f"exit status {out.returncode}"))
        if said:
            ev["error"] += f": {said}"
    return ev


# -- derive ------------------------------------------------------------------------------


def _find_self(node: ImexNode, local: Any) -> None:
    """This node's member: its host name, else one of its addresses."""
    if not isinstance(local, dict) or not node.members:
        return
    host = local.get("hostname")
    if isinstance(host, str) and host:
        short = host.split(".")[0].lower()
        for m in node.members:
            if m.host_name and m.host_name.split(".")[0].lower() == short:
                node.self_index, node.self_by = m.index, f"host name {printable(host)[:64]}"
                return
    addrs = local.get("addresses")
    mine = {a for a in addrs if isinstance(a, str)} if isinstance(addrs, list) else set()
    hits = [m for m in node.members if m.address in mine]
    if len(hits) == 1:
        node.self_index, node.self_by = hits[0].index, f"address {hits[0].address}"


def derive(evidence: Dict[str, Any]) -> Topology:
    status = evidence.get("status")
    if status in ("not run", "skipped"):
        return Topology(sources=[])
    stdout = evidence.get("stdout")
    if status == "ok" and isinstance(stdout, str):
        pasted = "local" not in evidence and evidence.get("args") is None
        node, why = imex_text.read(stdout, imex_text.SOURCE if pasted else SOURCE)
        if why is not None:
            node.status, node.error = "failed", why
        _find_self(node, evidence.get("local"))
        topo = imex_text.fragment(node)
        if why is not None:
            topo.note("imex.unreadable", f"{PROGRAM} output not read: {why}", source=SOURCE,
                      level="warning")
        return topo
    err = evidence.get("error")
    node = ImexNode(source=SOURCE, status=str(status or "failed")[:32] if status in (
        "absent", "not_configured", "not_permitted", "timeout") else "failed",
        error=printable(err)[:400] if isinstance(err, str) else None)
    topo = Topology(sources=[] if node.status == "absent" else [SOURCE])
    topo.imex = node
    return topo


def pasted_evidence(text: str) -> Dict[str, Any]:
    """A pasted ``nvidia-imex-ctl`` text kept as this probe's evidence (``snapshot --from``)."""
    return {"command": PROGRAM, "args": None, "status": "ok", "stdout": text, "error": None}


__all__ = ["SOURCE", "PROGRAM", "ARGS", "capture", "derive", "pasted_evidence"]
