"""IMEX: the Internode Memory Exchange domain of a GB200/GB300 NVL72 rack (``docs/imex.md``).

NVML has no IMEX call: IMEX state comes from the IMEX daemon's control tool,
``nvidia-imex-ctl`` (``-N``: every configured member with its status and the connection
matrix; ``-N -j``: the same as JSON, ``-H`` adding host names; ``-q``: one word, ``READY``
when the local daemon is ready).  Read live by the ``imex`` probe or from a pasted text
(source ``imex-text``), kept under ``extra.imex`` as :class:`ImexNode`.

"Absent", "unknown" and "bad" stay apart: ``status`` ``absent`` is IMEX not installed (no
``nvidia-imex-ctl``), ``not_configured`` no IMEX domain on this node (no node config, as
when no compute domain is active), ``not_permitted``/``timeout``/``failed`` unknown with the
reason; a domain state that was not read is ``null``; ``members`` ``null`` is not read, an
empty list none configured.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..safe import ascii_int
from .codec import Record, fld, record

#: Domain states ``nvidia-imex-ctl -N`` reports (``Domain State:``; JSON ``status``).
DOMAIN_STATES = ("UP", "DEGRADED", "DOWN")
#: Connection states, the matrix's letters (the tool's legend) and the JSON words.
LETTERS: Dict[str, str] = {"C": "CONNECTED", "I": "INVALID", "N": "NEVER_CONNECTED",
                           "R": "RECOVERING", "D": "DISCONNECTED", "A": "AUTHENTICATING",
                           "!V!": "VERSION_MISMATCH", "!M!": "NODE_MAP_MISMATCH"}
#: The letter of each connection state (for messages written as the tool writes them).
LETTER_OF: Dict[str, str] = {v: k for k, v in LETTERS.items()}
#: What each connection state means (the tool's legend, reworded).
MEANING: Dict[str, str] = {
    "CONNECTED": "connected, ready for operation",
    "INVALID": "invalid: the node was not reachable, no connection status",
    "NEVER_CONNECTED": "never connected",
    "RECOVERING": "recovering: the connection was lost, clean-up not yet triggered",
    "DISCONNECTED": "disconnected: the connection was lost and cleaned up",
    "AUTHENTICATING": "authenticating (GSSAPI mutual authentication under way)",
    "VERSION_MISMATCH": "version mismatch: communication disabled",
    "NODE_MAP_MISMATCH": "node map mismatch (nodes_config.cfg differs): communication "
                         "disabled",
}
#: Probe statuses (:attr:`ImexNode.status`).
STATUSES = ("ok", "absent", "not_configured", "not_permitted", "timeout", "failed")


@record
class ImexMember(Record):
    """One configured member of the IMEX domain (a ``Node #i`` line; a JSON ``nodes`` entry)."""

    index: int = fld("the member's index in nodes_config.cfg (Node #i)", default=0)
    address: Optional[str] = fld("its IP address (JSON host)")
    host_name: Optional[str] = fld("its host name (JSON hostName, with -H); null: not given")
    status: Optional[str] = fld("READY, UNAVAILABLE ... as the tool says (null: unknown)")
    version: Optional[str] = fld("the member's IMEX version (newer drivers; null: not given)")
    connections: Optional[Dict[str, str]] = fld(
        "the matrix row of this member: to-index -> CONNECTED, DISCONNECTED, INVALID, "
        "NEVER_CONNECTED, RECOVERING, AUTHENTICATING, VERSION_MISMATCH, NODE_MAP_MISMATCH "
        "or UNKNOWN (null: no row)")
    source: str = fld("imex (the live probe) or imex-text (a paste)", default="imex")

    def to(self, other: int) -> Optional[str]:
        """The state of this member's connection to member ``other`` (None: not in its row)."""
        return (self.connections or {}).get(str(other))


@record
class ImexNode(Record):
    """``extra.imex``: the IMEX domain as this node's ``nvidia-imex-ctl`` saw it."""

    source: str = fld("imex (the live probe) or imex-text (a paste)", default="imex")
    status: str = fld("ok, absent (not installed), not_configured (no IMEX domain on this "
                      "node), not_permitted, timeout, failed", default="ok")
    error: Optional[str] = fld("why the state is unknown, or what the tool said",
                               omit="none")
    form: Optional[str] = fld("what was read: nodes-json (-N -j), nodes-text (-N), query "
                              "(-q)")
    domain_state: Optional[str] = fld("UP, DEGRADED, DOWN (null: not read)")
    ready: Optional[str] = fld("the -q answer (READY) where that was read")
    timestamp: Optional[str] = fld("the tool's timestamp, as it printed it")
    members: Optional[List[ImexMember]] = fld("every configured member (null: not read)")
    self_index: Optional[int] = fld("this node's member index (null: not known)")
    self_by: Optional[str] = fld("how this node's entry was found (host name, address)")
    cut: Optional[str] = fld("what a cut paste lacks (null: whole)", omit="none")

    def member(self, index: int) -> Optional[ImexMember]:
        for m in self.members or ():
            if m.index == index:
                return m
        return None

    def connections(self) -> List[Tuple[ImexMember, ImexMember, str]]:
        """The connections nvtopo judges, each ``(from, to, state)`` in index order: those
        between two READY members (with this node an end, where its entry is known); a
        state nvtopo does not know (``UNKNOWN``) is not judged.  ``check`` finds the ones
        not CONNECTED; ``show`` counts and lists them."""
        members = self.members or []
        ready: Dict[int, ImexMember] = {m.index: m for m in members if m.status == "READY"}
        out: List[Tuple[ImexMember, ImexMember, str]] = []
        for a in ready.values():
            row = [(ascii_int(k), v) for k, v in (a.connections or {}).items()]
            for to, state in sorted((k, v) for k, v in row if k is not None):
                b = ready.get(to)
                if b is None or b.index == a.index or state == "UNKNOWN":
                    continue
                if self.self_index is not None and self.self_index not in (a.index, b.index):
                    continue
                out.append((a, b, state))
        return out


__all__ = ["DOMAIN_STATES", "LETTERS", "LETTER_OF", "MEANING", "STATUSES", "ImexMember",
           "ImexNode"]
