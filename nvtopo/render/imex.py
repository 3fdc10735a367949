"""The IMEX block of ``nvtopo show``: the IMEX domain as this node's ``nvidia-imex-ctl`` saw it
(the live ``imex`` probe or a pasted text; ``docs/imex.md``).

What it says, and nothing more: the domain state, the members configured and how many are
ready, this node's entry (where it is known) and how many of its connections are up, then
one line per member that is not ready and per connection that is not connected (between
two ready members, with this node an end where its entry is known: the connections
``check`` judges, :meth:`ImexNode.connections`).  Whether
that is a fault is ``check``'s answer (``imex.*`` findings): a GB200 tray whose IMEX is not
active is not an error under Kubernetes, so ``show`` only colours what the tool itself
calls down (DOWN, DEGRADED, a member not READY, a connection not CONNECTED).  IMEX not
installed (the probe's ``absent``), or no IMEX evidence in the input: no block.
"""

from __future__ import annotations

from typing import Optional

from rich.text import Text

from ..model import Topology
from ..model.imex import ImexMember
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
    me = node.member(node.self_index) if node.self_index is not None else None
    judged = node.connections()  # (between READY members; this node an end, where known)
    down = [(a, b, link) for a, b, link in judged if link != "CONNECTED"]
    state = node.domain_state
    head = [state or "domain state not read"]
    if node.members is not None:
        ready = sum(1 for m in members if m.status == "READY")
        head.append(f"{len(members)} member{'s' if len(members) != 1 else ''}, {ready} ready")
    if me is not None:  # its own row: how many of its connections are up
        mine = [link for a, _, link in judged if a.index == me.index]
        up = sum(1 for link in mine if link == "CONNECTED")
        head.append(f"this node {_who(me)}: {up}/{len(mine)} connected")
    elif judged:
        head.append(f"{len(judged) - len(down)}/{len(judged)} connections up")
    if node.ready:
        head.append(f"this node's daemon {node.ready} (-q)")
    bad = state in ("DOWN", "DEGRADED") or bool(not_ready) or bool(down)
    out.append("\n")
    out.append(printable("  " + " · ".join(head)),
               style="bold red" if bad else ("yellow" if state is None else "green"))
    for m in not_ready:
        out.append("\n")
        out.append(printable(f"    {_who(m)}: {m.status}"), style="bold red")
    for a, b, link in down[:MAX_LINKS]:
        out.append("\n")
        out.append(printable(f"    {_who(a)} -> {_who(b)}: {link}"), style="bold red")
    if len(down) > MAX_LINKS:
        out.append("\n")
        out.append(f"    and {len(down) - MAX_LINKS} more connections not connected "
                   "(nvtopo check lists each)", style="bold red")
    if node.cut:
        out.append("\n")
        out.append(printable(f"  (a cut paste: {node.cut})"), style="yellow")
    return out


__all__ = ["imex_lines"]
