"""An ``ibnetdiscover`` dump (``--fabric FILE``) read into the switch tree, joined to the nodes
by ``node_desc``, for Slurm's ``topology/tree`` (docs/cluster.md §3).

The dump is text written by infiniband-diags' ``ibnetdiscover`` (root only: the operator runs
it and hands us the file).  What is read, line by line, without regular expressions:

* a node header: ``Switch <ports> "S-<guid>" # "<description>" ...`` or
  ``Ca <ports> "H-<guid>" # "<description>"``;
* under a switch, a link: ``[<port>] "<S-or-H-guid>"[<port>]... # "<remote description>" ...``.

Leaf switches are those with HCAs below them; each level above holds the switches linked to
the level below that are not already placed.  Reading and building the tree take time linear
in the dump: every look-up is in a set or a dict, none in a list.  An HCA is joined to a node when its description
equals one of the node's ``node_desc`` values (rdma-ndd sets it to ``"<hostname> <device>"``).
The file is bounded (:data:`MAX_BYTES`, lines of :data:`MAX_LINE` characters); a file that is
no dump is a one-line error naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from ...errors import NvtopoError

#: The largest dump read (tens of thousands of ports are a few MB).
MAX_BYTES = 64 << 20
#: The longest line considered (real lines are under 200 characters).
MAX_LINE = 4096
#: The most switches kept.
MAX_SWITCHES = 100_000


@dataclass
class Switch:
    guid: str
    desc: str
    hcas: List[str] = field(default_factory=list)  # HCA guids below
    peers: List[str] = field(default_factory=list)  # switch guids linked, each once
    #: ``peers`` as a set, for the look-up a link line needs (a list searched for each of a
    #: switch's 60,000 links took 38 s)
    peer_set: Set[str] = field(default_factory=set, repr=False, compare=False)


@dataclass
class Fabric:
    switches: Dict[str, Switch] = field(default_factory=dict)
    hca_desc: Dict[str, str] = field(default_factory=dict)  # HCA guid -> description


def _quoted(text: str, start: int = 0) -> Tuple[Optional[str], int]:
    """The first ``"..."`` at or after ``start``: (its content, the index after it)."""
    a = text.find('"', start)
    if a < 0:
        return None, -1
    b = text.find('"', a + 1)
    if b < 0:
        return None, -1
    return text[a + 1:b], b + 1


def _comment_desc(line: str) -> Optional[str]:
    hash_at = line.find("#")
    if hash_at < 0:
        return None
    desc, _ = _quoted(line, hash_at)
    return desc


def parse(text: str, where: str) -> Fabric:
    fab = Fabric()
    current: Optional[Switch] = None
    headers = 0
    for raw in text.splitlines():
        line = raw[:MAX_LINE].strip()
        if not line or line.startswith("#"):
            if not line:
                current = None
            continue
        word = line.split(None, 1)[0]
        if word in ("Switch", "Ca", "Rt"):
            headers += 1
            ident, _ = _quoted(line)
            desc = _comment_desc(line)
            if ident is None:
                raise NvtopoError(f"ibnetdiscover node line without an id: {line[:60]!r}",
                                  where=where)
            current = None
            if word == "Switch":
                if len(fab.switches) >= MAX_SWITCHES:
                    raise NvtopoError(f"more than {MAX_SWITCHES} switches", where=where)
                current = fab.switches.setdefault(ident, Switch(guid=ident, desc=desc or ""))
                current.desc = desc or current.desc
            elif word == "Ca":
                fab.hca_desc[ident] = desc or ""
            continue
        if line.startswith("[") and current is not None:
            remote, _ = _quoted(line)
            if remote is None:
                continue
            if remote.startswith("S-"):
                if remote not in current.peer_set:
                    current.peer_set.add(remote)
                    current.peers.append(remote)
            elif remote.startswith("H-"):
                current.hcas.append(remote)
                desc = _comment_desc(line)
                if desc is not None:
                    fab.hca_desc.setdefault(remote, desc)
    if headers == 0:
        raise NvtopoError("not an ibnetdiscover dump (no Switch or Ca line)", where=where)
    return fab


def read(path: str) -> Fabric:
    """The dump at ``path``, read through the one bounded reader every input has (a FIFO
    or device refused, never more than :data:`MAX_BYTES`; gzip read as gzip)."""
    from ...snapshot import read as read_input

    try:
        raw, path = read_input.read_bytes(path, option="--fabric", limit=MAX_BYTES,
                                          what="an ibnetdiscover dump", content=False)
    except NvtopoError as e:
        raise NvtopoError(f"cannot read the fabric dump: {e.message}", where=e.where) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NvtopoError("fabric dump is not UTF-8 text", where=path) from None
    return parse(text, path)


def tree(fab: Fabric, desc_to_node: Dict[str, str]) -> Dict[str, Any]:
    """The switch tree: ``switches`` (``name``, ``level``, ``nodes``, ``switches``, leaves
    first), ``unmatched`` (HCA descriptions no node claims), ``nodes_outside`` is filled by
    the caller."""
    names = {g: (s.desc or g) for g, s in fab.switches.items()}
    level: Dict[str, int] = {}
    for g, s in fab.switches.items():
        if s.hcas:
            level[g] = 0
    frontier = [g for g in level]
    lv = 0
    while frontier:
        nxt = []
        for g in frontier:
            for p in fab.switches[g].peers:
                if p in fab.switches and p not in level:
                    level[p] = lv + 1
                    nxt.append(p)
        frontier = sorted(set(nxt))
        lv += 1
    out = []
    unmatched = []
    for g in sorted(level, key=lambda x: (level[x], names[x])):
        s = fab.switches[g]
        nodes: Set[str] = set()
        for h in s.hcas:
            d = fab.hca_desc.get(h, "")
            node = desc_to_node.get(d)
            if node is None:
                unmatched.append(d or h)
            else:
                nodes.add(node)
        below = [names[p] for p in s.peers if level.get(p) == level[g] - 1]
        out.append({"name": names[g], "level": level[g], "nodes": sorted(nodes),
                    "switches": sorted(below)})
    return {"switches": out, "unmatched": sorted(set(unmatched))}


__all__ = ["parse", "read", "tree", "Fabric", "Switch", "MAX_BYTES"]
