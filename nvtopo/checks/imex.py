"""IMEX: is this node's IMEX domain up, and can its members reach each other (``docs/imex.md``)?

Read from ``nvidia-imex-ctl`` (the live ``imex`` probe or a pasted text: ``extra.imex``).
No IMEX evidence at all (a pasted matrix, an older snapshot): nothing to say.  IMEX not
installed or no IMEX domain configured: nothing on a node whose GPUs are not in a
multi-node NVLink fabric; on a GB200/GB300 tray one note, "IMEX not active" (unknown, never
an error: under Kubernetes there is no IMEX domain while no compute domain is active).

One cause, one finding: a DOWN domain is one ``imex.domain_not_up`` (not every member
unreachable too); members that are unavailable are named there, and only connections
between two READY members are judged one by one (``imex.peer_unreachable``,
``imex.version_mismatch``).  Where this node's entry is known, only the connections it is
an end of are judged (each other pair is its own nodes' finding).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from . import Finding, finding
from . import subject as S
from .catalog import severity
from .select import Selection
from ..model import Topology
from ..model.imex import LETTER_OF, MEANING, ImexMember, ImexNode

HINT_DAEMON = ("systemctl status nvidia-imex; journalctl -u nvidia-imex; check "
               "/etc/nvidia-imex/nodes_config.cfg lists every tray of the rack; "
               "nvidia-imex-ctl -N")
HINT_LINK = ("check the IMEX daemons of both nodes (systemctl status nvidia-imex) and that "
             "their IMEX port is reachable between them (firewall, the tray's network)")


def tray(topo: Topology, sel: Selection) -> Tuple[Optional[str], str]:
    """Why this node's GPUs are in a multi-node NVLink fabric (``None``: nothing says so),
    and how sure that is: ``observed`` (NVML platform info, or a layout's domain stated from
    a source), ``inferred`` (a layout's domain resting on ``[I]`` alone, or nothing)."""
    for g in topo.gpus:
        plat = g.nvml.platform if g.nvml is not None else None
        if plat is not None and plat.chassis_serial:
            return f"NVML platform info places it in rack {plat.chassis_serial}", "observed"
    layout = sel.layout
    nodes = layout.domain.nodes if layout is not None else None
    if layout is not None and nodes is not None and nodes > 1:
        return (f"the layout {layout.name} is a tray of a {nodes}-node NVLink domain",
                "inferred" if layout.domain.inferred() else "observed")
    return None, "inferred"


def _who(m: ImexMember) -> str:
    name = f"node {m.index} ({m.address or '?'}"
    return name + (f", {m.host_name})" if m.host_name else ")")


def _letter(state: str) -> str:
    return LETTER_OF.get(state, state)


def _not_active(node: ImexNode, why: Optional[str]) -> List[Finding]:
    if why is None:
        return []
    what = ("IMEX not installed (no nvidia-imex-ctl)" if node.status == "absent" else
            "no IMEX domain configured on this node (no node config: under Kubernetes, no "
            "compute domain active)")
    return [finding("info", "imex.not_active", S.other("IMEX"),
                    f"IMEX not active on this tray ({why}): {what}; memory sharing across "
                    "trays is unknown until a domain is up", actual=node.status,
                    source=node.source, hint="a workload spanning trays needs the IMEX "
                    "daemon (or a ComputeDomain under Kubernetes) and an IMEX channel")]


def check(topo: Topology, sel: Selection) -> List[Finding]:
    node = topo.imex
    if node is None:
        return []
    why, sure = tray(topo, sel)
    if node.status in ("absent", "not_configured"):
        return _not_active(node, why)
    if node.status != "ok":
        return [finding("info", "imex.not_checked", S.other("IMEX"),
                        f"IMEX domain not checked ({node.status}): {node.error or 'unknown'}",
                        actual=node.status, source=node.source,
                        hint="run nvtopo as root (nvidia-imex-ctl needs it)")]
    if node.form == "query":
        return _query(node)
    out: List[Finding] = []
    if node.domain_state is None:
        out.append(finding("info", "imex.not_checked", S.other("IMEX"),
                           f"IMEX domain state not read: {node.cut or 'not in the output'}",
                           source=node.source))
    members = node.members or []
    gone = [m for m in members if m.status not in ("READY", None)]  # (None: not said)
    if node.domain_state == "DOWN":
        return out + [_down(node, gone, why, sure)]
    cells = _cells(node)
    out.extend(_links(node, cells, sure))
    out.extend(_versions(node, cells, sure))
    if node.domain_state == "DEGRADED" and (gone or not cells):
        out.append(_degraded(node, gone, sure))
    elif node.domain_state == "DEGRADED":
        for f in out:  # the bad connections are why it is degraded: one cause
            if f.severity != "info":
                f.message += " (the domain state is DEGRADED)"
                break
    return out


def _query(node: ImexNode) -> List[Finding]:
    if node.ready == "READY":
        return []
    return [finding(severity("imex.domain_not_up", "inferred"), "imex.domain_not_up",
                    S.other("IMEX"), f"the local IMEX daemon answers {node.ready} "
                    "(nvidia-imex-ctl -q)", expected="READY", actual=node.ready,
                    source=node.source, hint=HINT_DAEMON)]


def _down(node: ImexNode, gone: List[ImexMember], why: Optional[str], sure: str) -> Finding:
    members = node.members or []
    said = (f"every member ({len(members)}) unavailable" if gone and len(gone) == len(members)
            else f"{len(gone)} of {len(members)} member(s) unavailable: "
            + ", ".join(_who(m) for m in gone[:6]) + (" …" if len(gone) > 6 else "")
            if gone else "no member unavailable")
    return finding(
        severity("imex.domain_not_up", sure), "imex.domain_not_up", S.other("IMEX"),
        f"IMEX domain DOWN: {said}; no memory is shared across trays"
        + (f" ({why})" if why else " (this node's GPUs are not known to be in a multi-node "
                                   "NVLink fabric)")
        + (" (the daemon may not have started: a driver version mismatch does this)"
           if gone and len(gone) == len(members) else ""),
        expected="UP", actual="DOWN", source=node.source, hint=HINT_DAEMON)


def _degraded(node: ImexNode, gone: List[ImexMember], sure: str) -> Finding:
    members = node.members or []
    me = node.member(node.self_index) if node.self_index is not None else None
    mine = me is not None and me in gone
    said = (f"{len(gone)} of {len(members)} member(s) unavailable: "
            + ", ".join(_who(m) for m in gone[:6]) + (" …" if len(gone) > 6 else "")
            if gone else "every member READY and connected as the output shows it")
    return finding(
        severity("imex.domain_not_up", sure if mine else "inferred"),
        "imex.domain_not_up", S.other("IMEX"),
        f"IMEX domain DEGRADED: {said}" + (" (this node among them)" if mine else "")
        + "; memory is shared only among the members that are READY",
        expected="UP", actual="DEGRADED", source=node.source, hint=HINT_DAEMON)


Cell = Tuple[ImexMember, ImexMember, str]


def _cells(node: ImexNode) -> List[Cell]:
    """Connections between two READY members that are not CONNECTED (with this node an end,
    where it is known); a letter nvtopo does not know is not judged (unknown, never bad)."""
    return [c for c in node.connections() if c[2] != "CONNECTED"]


def _links(node: ImexNode, cells: List[Cell], sure: str) -> List[Finding]:
    out = []
    for a, b, state in cells:
        if state == "VERSION_MISMATCH":
            continue
        back = b.to(a.index)
        one_way = back == "CONNECTED"
        out.append(finding(
            severity("imex.peer_unreachable", sure),
            "imex.peer_unreachable", S.other(f"IMEX node {a.index} -> node {b.index}"),
            f"IMEX {_who(a)} -> {_who(b)}: {_letter(state)} ({MEANING.get(state, state)})"
            + (f"; {b.index} -> {a.index} is C: one way only" if one_way else
               f"; {b.index} -> {a.index} is {_letter(back)}" if back else ""),
            expected="C", actual=_letter(state), source=node.source, hint=HINT_LINK))
    return out


def _versions(node: ImexNode, cells: List[Cell], sure: str) -> List[Finding]:
    """Members whose IMEX version differs from the majority's (or ``!V!`` cells)."""
    members = [m for m in node.members or [] if m.status == "READY" and m.version]
    counts: Dict[str, int] = {}
    for m in members:
        counts[m.version or ""] = counts.get(m.version or "", 0) + 1
    flagged = {b.index for a, b, s in cells if s == "VERSION_MISMATCH"} | {
        a.index for a, b, s in cells if s == "VERSION_MISMATCH"}
    if len(counts) < 2 and not flagged:
        return []
    major = max(sorted(counts), key=lambda v: counts[v]) if counts else None
    odd = [m for m in members if m.version != major] if len(counts) > 1 else [
        m for m in node.members or [] if m.index in flagged]
    return [finding(
        severity("imex.version_mismatch", sure),
        "imex.version_mismatch", S.other("IMEX versions"),
        "IMEX version mismatch: " + ", ".join(
            f"{_who(m)} runs {m.version or '?'}" for m in odd[:6])
        + (f" against {major}" if major else "")
        + (f"; {len(flagged)} member(s) with communication disabled (!V!)" if flagged else ""),
        expected=major, actual=", ".join(sorted({m.version or "?" for m in odd})),
        source=node.source,
        hint="install one driver (and its IMEX) on every tray of the domain")]
