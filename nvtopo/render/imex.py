"""The IMEX block of ``nvtopo show``: the IMEX domain as this node's ``nvidia-imex-ctl`` saw it
(the live ``imex`` probe or a pasted text; ``docs/imex.md``).

What it says, and nothing more: the domain state, the members configured and how many are
ready, this node's entry (where it is known) and how many of its connections are up, then
one line per member that is not ready and per connection that is not connected (this
node's own, where its entry is known; else every one between two ready members).  Whether
that is a fault is ``check``'s answer (``imex.*`` findings): a GB200 tray whose IMEX is not
active is not an error under Kubernetes, so ``show`` only colours what the tool itself
calls down (DOWN, DEGRADED, a member not READY, a connection not CONNECTED).  IMEX not
installed (the probe's ``absent``), or no IMEX evidence in the input: no block.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from rich.text import Text

from ..model import Topology
from ..model.imex import ImexMember, ImexNode
from ..safe import ascii_int
from .cells import printable

#: How a probe status other than ``ok`` is said (``absent`` shows no block).
_UNREAD = {"not_configured": "installed, no IMEX domain configured on this node",
           "not_permitted": "not read: not permitted",
           "timeout": "not read: nvidia-imex-ctl did not answer in time",
           "failed": "not read: nvidia-imex-ctl failed"}


def _who(m: ImexMember) -> str:
    return f"#{m.index} " + (m.address or "?") + (f" ({m.host_name})" if m.host_name else "")


#: Connection lines shown before the rest are counted (``show`` is a view, ``check`` names
#: every one).
MAX_LINKS = 24


def _broken(node: ImexNode) -> Tuple[Optional[ImexMember], int, List[Tuple[int, int, str]]]:
    """This node's member (None: not known), how many connections are judged, and those not
    connected as (from, to, state): this node's own row where its entry is known, else every
    row's connections between two READY members (as ``check`` judges them; a member that
    is not READY is its own line)."""
    me = node.member(node.self_index) if node.self_index is not None else None
    members = node.members or []
    ready = {m.index for m in members if m.status in (None, "READY")}
    rows = [me] if me is not None else [m for m in members if m.index in ready]
    judged, out = 0, []
    for m in rows:
        for k, state in sorted((m.connections or {}).items()):
            i = ascii_int(k)
            if i is None or i == m.index or (me is None and i not in ready):
                continue
            judged += 1
            if state not in ("CONNECTED", "UNKNOWN"):
                out.append((m.index, i, state))
    return me, judged, sorted(out)


def imex_lines(topo: Topology) -> Optional[Text]:
    """The IMEX block, or ``None`` where there is none to show."""
    node = topo.imex
    if node is None or node.status == "absent":
        return None
    out = Text("IMEX domain", style="bold")
    if node.status != "ok":
        what = _UNREAD.get(node.status, f"not read ({node.status})")
        if node.error and node.status != "not_configured":
            what += f": {node.error}"
        out.append("\n")
        out.append(printable(f"  {what}"),
                   style="dim" if node.status == "not_configured" else "yellow")
        return out
    members = node.members or []
    not_ready = [m for m in members if m.status is not None and m.status != "READY"]
    me, judged, down = _broken(node)
    state = node.domain_state
    head = [state or "domain state not read"]
    if node.members is not None:
        ready = sum(1 for m in members if m.status == "READY")
        head.append(f"{len(members)} member{'s' if len(members) != 1 else ''}, {ready} ready")
    if me is not None:
        head.append(f"this node {_who(me)}: {judged - len(down)}/{judged} connected")
    elif judged:
        head.append(f"{judged - len(down)}/{judged} connections up")
    if node.ready:
        head.append(f"this node's daemon {node.ready} (-q)")
    bad = state in ("DOWN", "DEGRADED") or bool(not_ready) or bool(down)
    out.append("\n")
    out.append(printable("  " + " · ".join(head)),
               style="bold red" if bad else ("yellow" if state is None else "green"))
    for m in not_ready:
        out.append("\n")
        out.append(printable(f"    {_who(m)}: {m.status}"), style="bold red")
    by_index = {m.index: m for m in members}
    for a, b, link in down[:MAX_LINKS]:
        ends = [_who(by_index[x]) if x in by_index else f"#{x}" for x in (a, b)]
        out.append("\n")
        out.append(printable(f"    {ends[0]} -> {ends[1]}: {link}"), style="bold red")
    if len(down) > MAX_LINKS:
        out.append("\n")
        out.append(f"    and {len(down) - MAX_LINKS} more connections not connected "
                   "(nvtopo check lists each)", style="bold red")
    if node.cut:
        out.append("\n")
        out.append(printable(f"  (a cut paste: {node.cut})"), style="yellow")
    return out


__all__ = ["imex_lines"]
