"""``nvidia-imex-ctl`` output read into :class:`~nvtopo.model.imex.ImexNode` (``docs/imex.md``).

Three shapes, recognised by content:

* ``-N`` text: a legend (``Connectivity Table Legend:``, one line per letter; older drivers
  print no ``!V!``/``!M!`` lines), a timestamp, ``Nodes:`` with one line per configured
  member (``Node #0   - 172.31.48.81    - READY    - Version: 570.172``; older drivers print
  no ``- Version:``), the connection matrix (`` Nodes From\\To  0   1 ...``, one row per
  member: row = from, column = to) and ``Domain State: UP``;
* ``-N -j`` JSON: ``{"nodes": {"0": {"status", "host", "hostName" (with -H), "version",
  "connections": {"1": {"host", "status"}}}}, "timestamp", "status"}``;
* ``-q``: one word, ``READY`` when the local daemon is ready.

A cut paste says what it lacks (``cut``): no ``Domain State`` line, matrix rows missing.
Every string taken is escaped to printable text and bounded; the parsers use string
methods and linear patterns only.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ..errors import NvtopoError
from ..model import Topology
from ..model.imex import DOMAIN_STATES, LETTERS, ImexMember, ImexNode
from ..safe import ascii_int, is_ascii_digits, json_loads, printable

#: The source of a pasted ``nvidia-imex-ctl`` text (the live probe's is ``imex``).
SOURCE = "imex-text"
#: Most members read (an NVL72 rack has 18 trays; NVL576 domains more).
MAX_MEMBERS = 1024
#: Most lines looked at.
MAX_LINES = 20_000
#: Bytes of the head of a text looked at to recognise JSON.
HEAD = 65_536
#: ``-q`` answers read.
QUERY_WORDS = ("READY", "NOT_READY", "NOT READY")

_NODE = re.compile(r"^\s*Node #([0-9]{1,6})\s+-\s+(\S{1,255})\s+-\s+([A-Za-z_]{1,32})"
                   r"(?:\s+-\s+Version:\s*(\S{1,64}))?\s*$")
_STATE = re.compile(r"^\s*Domain State:\s*([A-Za-z_]{1,32})\s*$")
_TIME = re.compile(r"^\s*([0-9]{1,2}/[0-9]{1,2}/[0-9]{4} [0-9]{1,2}:[0-9]{2}:[0-9]{2}"
                   r"(?:\.[0-9]{1,6})?)\s*$")
_JSON_NODES = re.compile(r"\"nodes\"\s{0,64}:\s{0,64}\{\s{0,64}(?:\}|\"[0-9]{1,6}\"\s{0,64}:"
                         r"\s{0,64}\{)")


def _text(value: Any, limit: int = 255) -> Optional[str]:
    return printable(value)[:limit] if isinstance(value, str) and value.strip() else None


def _is_header(s: str) -> bool:
    return s.startswith("Nodes From")


def _is_cell(t: str) -> bool:
    """A matrix letter: one of the legend's, or one a newer tool may add (``X``, ``!X!``)."""
    return t in LETTERS or (len(t) == 1 and "A" <= t <= "Z") or (
        len(t) == 3 and t[0] == t[2] == "!" and "A" <= t[1] <= "Z")


def _is_row(tokens: List[str]) -> bool:
    return len(tokens) >= 2 and is_ascii_digits(tokens[0]) and all(
        _is_cell(t) for t in tokens[1:])


def _marker(s: str) -> bool:
    """A line only ``nvidia-imex-ctl -N`` prints."""
    return (s.startswith(("Connectivity Table Legend", "Domain State:")) or _is_header(s)
            or _NODE.match(s) is not None)


#: Strings one of which every ``-N`` text holds (asked first: most inputs are not IMEX).
_HINTS = ("Domain State:", "Connectivity Table Legend", "Nodes From", "Node #")


def looks_like_text(text: str) -> bool:
    """``-N`` text (a member line, the matrix header, ``Domain State:`` or the legend), or
    the one-word ``-q`` answer."""
    if len(text) < 32 and text.strip() in QUERY_WORDS:
        return True
    if not any(h in text for h in _HINTS):
        return False
    return any(_marker(line.strip()) for line in text.splitlines()[:MAX_LINES])


def looks_like_json(text: str) -> bool:
    """``-N -j`` JSON: an object whose ``nodes`` object is keyed by member index (or empty),
    not an nvtopo snapshot."""
    head = text[:HEAD]
    return (head.lstrip("\ufeff \t\r\n").startswith("{") and "nvtopo-snapshot" not in head
            and _JSON_NODES.search(head) is not None)


def without_blocks(text: str) -> str:
    """``text`` without the lines of its ``nvidia-imex-ctl`` output (what else the paste
    holds, read again as a paste of its own)."""
    if text.strip() in QUERY_WORDS:
        return ""
    lines = text.splitlines(keepends=True)
    keep: List[str] = []
    inside = False
    for line in lines:
        s = line.strip()
        if s.startswith("Connectivity Table Legend") or _marker(s):
            inside = True
        if inside:
            if s.startswith("Domain State:"):
                inside = False
            continue
        keep.append(line)
    return "".join(keep)


# --- -N text --------------------------------------------------------------------------------


class _TextRead:
    """One pass over ``-N`` text."""

    def __init__(self, source: str) -> None:
        self.node = ImexNode(source=source, form="nodes-text", members=[])
        self.columns: Optional[List[int]] = None
        self.rows: Dict[int, Dict[str, str]] = {}
        self.short: List[int] = []

    def line(self, raw: str) -> None:
        s = raw.strip()
        node = self.node
        m = _NODE.match(s)
        if m is not None and node.members is not None and len(node.members) < MAX_MEMBERS:
            idx = ascii_int(m.group(1))
            node.members.append(ImexMember(
                index=idx if idx is not None else len(node.members),
                address=printable(m.group(2))[:64], status=m.group(3).upper(),
                version=printable(m.group(4))[:64] if m.group(4) else None,
                source=node.source))
            return
        st = _STATE.match(s)
        if st is not None:
            node.domain_state = st.group(1).upper()
            return
        t = _TIME.match(s)
        if t is not None and node.timestamp is None:
            node.timestamp = t.group(1)
            return
        if _is_header(s):
            cols = s.split()[2:]  # "Nodes", "From\To", 0, 1 ...
            self.columns = [ascii_int(c) or 0 for c in cols if is_ascii_digits(c)][:MAX_MEMBERS]
            return
        tokens = s.split()
        if self.columns is not None and _is_row(tokens):
            frm = ascii_int(tokens[0])
            if frm is None or len(self.rows) >= MAX_MEMBERS:
                return
            cells = tokens[1:]
            if len(cells) < len(self.columns):
                self.short.append(frm)
            self.rows[frm] = {str(c): LETTERS.get(x, "UNKNOWN")
                              for c, x in zip(self.columns, cells)}

    def finish(self) -> ImexNode:
        node = self.node
        members = node.members or []
        for mem in members:
            mem.connections = self.rows.get(mem.index)
        lacks: List[str] = []
        if node.domain_state is None:
            lacks.append("no Domain State line")
        elif node.domain_state not in DOMAIN_STATES:
            lacks.append(f"domain state {node.domain_state} is not one nvtopo knows")
            node.domain_state = None
        if members and self.columns is None:
            lacks.append("no connection matrix")
        elif members:
            missing = [m.index for m in members if m.index not in self.rows]
            if missing:
                lacks.append(f"matrix rows missing for {len(missing)} of {len(members)} "
                             f"members ({', '.join(map(str, missing[:8]))}"
                             + (" …" if len(missing) > 8 else "") + ")")
        if self.short:
            lacks.append(f"matrix rows cut short ({', '.join(map(str, self.short[:8]))})")
        if self.columns is not None and len(members) < len(self.columns):
            lacks.append(f"{len(self.columns) - len(members)} member line(s) missing")
        node.cut = "; ".join(lacks) or None
        return node


def parse_text(text: str, source: str = SOURCE) -> ImexNode:
    """``-N`` text (or the ``-q`` word) as an :class:`ImexNode`."""
    word = text.strip()
    if word in QUERY_WORDS:
        return ImexNode(source=source, form="query", ready=word.replace(" ", "_"))
    r = _TextRead(source)
    for line in text.splitlines()[:MAX_LINES]:
        r.line(line)
    return r.finish()


# --- -N -j JSON --------------------------------------------------------------------------------


def _member(key: str, entry: Any, source: str) -> Optional[ImexMember]:
    idx = ascii_int(key) if is_ascii_digits(key) else None
    if idx is None or not isinstance(entry, dict):
        return None
    status = entry.get("status")
    conns = entry.get("connections")
    row: Optional[Dict[str, str]] = None
    if isinstance(conns, dict):
        row = {}
        for to, c in list(conns.items())[:MAX_MEMBERS]:
            if not is_ascii_digits(to) or ascii_int(to) is None:
                continue
            word = c.get("status") if isinstance(c, dict) else None
            word = word.upper() if isinstance(word, str) else "UNKNOWN"
            row[str(ascii_int(to))] = word if word in LETTERS.values() else "UNKNOWN"
    said = _text(status, 32)
    return ImexMember(index=idx, address=_text(entry.get("host"), 64),
                      host_name=_text(entry.get("hostName")),
                      status=said.upper() if said else None,
                      version=_text(entry.get("version"), 64), connections=row,
                      source=source)


def parse_json(text: str, source: str = SOURCE) -> Tuple[ImexNode, Optional[str]]:
    """``-N -j`` JSON as an :class:`ImexNode`, and why it could not be read (``None``: read)."""
    node = ImexNode(source=source, form="nodes-json")
    try:
        doc = json_loads(text.lstrip("\ufeff"))
    except ValueError as exc:
        return node, f"not JSON nvtopo reads ({printable(str(exc))[:120]})"
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), dict):
        return node, "JSON without a \"nodes\" object"
    members = []
    for key, entry in list(doc["nodes"].items())[:MAX_MEMBERS]:
        mem = _member(key, entry, source)
        if mem is not None:
            members.append(mem)
    node.members = sorted(members, key=lambda m: m.index)
    if doc["nodes"] and not members:
        return node, "no member nvtopo can read under \"nodes\" (keyed by member index)"
    state = doc.get("status")
    state = state.upper() if isinstance(state, str) else None
    node.domain_state = state if state in DOMAIN_STATES else None
    if node.domain_state is None:
        node.cut = "no domain status" if state is None else \
            f"domain status {printable(state)[:32]} is not one nvtopo knows"
    node.timestamp = _text(doc.get("timestamp"), 64)
    return node, None


def read(text: str, source: str = SOURCE) -> Tuple[ImexNode, Optional[str]]:
    """Any of the three shapes, by content; with why it could not be read (``None``: read)."""
    if looks_like_json(text) or text.lstrip("\ufeff \t\r\n").startswith("{"):
        return parse_json(text, source)
    return parse_text(text, source), None


def fragment(node: ImexNode) -> Topology:
    """A model fragment holding ``node``, with a note where a paste is cut."""
    topo = Topology(sources=[node.source])
    topo.imex = node
    if node.cut:
        topo.note("imex.cut", f"the nvidia-imex-ctl output is incomplete: {node.cut}",
                  source=node.source, level="warning")
    return topo


def derive_text(text: str, where: str) -> Topology:
    """A pasted ``nvidia-imex-ctl`` output as a model fragment (source ``imex-text``)."""
    node, why = read(text)
    if why is not None:
        raise NvtopoError(f"nvidia-imex-ctl -N -j output nvtopo cannot read: {why}",
                          where=where)
    return fragment(node)


__all__ = ["SOURCE", "QUERY_WORDS", "looks_like_text", "looks_like_json", "without_blocks",
           "parse_text", "parse_json", "read", "fragment", "derive_text"]
