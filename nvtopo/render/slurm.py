"""Slurm's topology files from ``nvtopo cluster`` (docs/cluster.md §3): ``topology.conf`` in
tree form (``topology/tree``, from an ``--fabric`` dump), in block form (``topology/block``,
Slurm >= 23.11, one block per NVLink domain), and ``topology.yaml`` (Slurm >= 25.05: both in
one file).

Every file written is one slurmctld accepts, whatever was collected:

* a switch is only written with a node or a defined switch below it: a leaf no collected node
  hangs from (a storage-only leaf, the leaves of nodes not collected) is dropped, then every
  switch above left with nothing below, each named in a comment (Slurm stops on a ``Switches=``
  naming an undefined switch: ``invalid child``);
* every node is under exactly one leaf (Slurm refuses ``Multiple leaf switches contain
  nodes``): the nodes are grouped by the set of leaves they hang from, one leaf per group.  On
  a rail-optimised fabric (each node on 8 rail leaves, each leaf holding the same nodes) the 8
  identical leaves are one: written under the first's name, the others named in a comment.
  Switches above that reach the same written switches are merged the same way;
* a block's base size (``BlockSizes``) is the size most domains have (a rack), never the
  smallest: a tray outside its rack (its own domain) does not make every rack 1-node blocks.
  A domain smaller than the base is left out, named in a comment, its nodes in no block:
  Slurm 24.11 stops on a block smaller than the base (``fatal: Block configuration (b1)
  children count lower than bblock_node_cnt``; 26.05 takes it) and only warns of nodes in no
  block (``blocks lack access to 1 nodes``); ``cluster.domain_incomplete`` reports it where the
  layout knows the rack's size.

Renderers receive plain data (the JSON document) and decide nothing about the fleet; names are
written only when made of the characters Slurm's grammar allows (:func:`safe_name`), any other
is named in a comment, escaped, and left out.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from ..safe import printable

#: Characters a node name may have in ``topology.conf`` and in a Kubernetes label value.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
#: Label values are at most 63 characters (Kubernetes).
MAX_LABEL = 63
#: The first Slurm release of each form (topology.conf(5), topology.yaml(5)).
SINCE = {"tree": "any", "block": "23.11", "yaml": "25.05"}


def safe_name(name: Any) -> bool:
    """A host or label value made only of letters, digits, ``-``, ``_`` and ``.``, starting and
    ending with a letter or digit, at most 63 characters."""
    return (isinstance(name, str) and 0 < len(name) <= MAX_LABEL and set(name) <= _NAME_CHARS
            and name[0].isalnum() and name[-1].isalnum())


# --- Slurm hostlists ---------------------------------------------------------------------


def _split_number(name: str) -> Tuple[str, Optional[str]]:
    i = len(name)
    while i > 0 and name[i - 1].isdigit():
        i -= 1
    return (name[:i], name[i:]) if i < len(name) else (name, None)


def hostlist(names: Iterable[str]) -> str:
    """Slurm's compressed hostlist: ``n[001-003,007],gpu-a``.  Numbers keep their width
    (``n009`` and ``n010`` are one range; ``n9`` and ``n010`` are not)."""
    groups: Dict[Tuple[str, int], List[int]] = {}
    plain: List[str] = []
    for name in sorted(set(names)):
        prefix, digits = _split_number(name)
        if digits is None or not prefix or "[" in prefix:
            plain.append(name)
            continue
        groups.setdefault((prefix, len(digits)), []).append(int(digits))
    parts: List[str] = []
    for (prefix, width), nums in sorted(groups.items()):
        nums.sort()
        if len(nums) == 1:
            parts.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        ranges: List[str] = []
        start = prev = nums[0]
        for n in nums[1:] + [None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{start:0{width}d}" if start == prev
                          else f"{start:0{width}d}-{prev:0{width}d}")
            if n is not None:
                start = prev = n
        parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts + plain)


# --- the tree --------------------------------------------------------------------------------

#: One written switch: (name, nodes below or None, switches below or None).
Written = Tuple[str, Optional[List[str]], Optional[List[str]]]


def _leaves(fab: Dict[str, Any], notes: List[str]
            ) -> Tuple[List[Written], Dict[str, Set[str]]]:
    """One leaf per group of nodes hanging from the same leaves; ``leaf -> written names``."""
    leaf_nodes: Dict[str, List[str]] = {}
    of_node: Dict[str, List[str]] = {}
    for sw in fab["switches"]:
        if sw["level"] != 0 or not safe_name(sw["name"]):
            continue
        nodes = [n for n in sw["nodes"] if safe_name(n)]
        leaf_nodes[sw["name"]] = nodes
        for n in nodes:
            of_node.setdefault(n, []).append(sw["name"])
    groups: Dict[Tuple[str, ...], List[str]] = {}
    for n, hung in of_node.items():
        groups.setdefault(tuple(sorted(hung)), []).append(n)
    taken = {sw["name"] for sw in fab["switches"]}
    out: List[Written] = []
    mapped: Dict[str, Set[str]] = {}
    for k, (under, members) in enumerate(sorted(groups.items())):
        own = [x for x in under if sorted(leaf_nodes[x]) == sorted(members)]
        name = own[0] if own else _fresh(f"{under[0]}-g{k}", taken)
        if len(under) > 1:
            same = len(own) == len(under)
            notes.append(f"# {name} stands for {len(under)} leaves holding "
                         + ("the same nodes" if same else "these nodes (some, others too)")
                         + f" (a rail-optimised fabric): {','.join(under)}")
        out.append((name, sorted(members), None))
        for leaf in under:
            mapped.setdefault(leaf, set()).add(name)
    empty = sorted(x for x, ns in leaf_nodes.items() if not ns)
    if empty:
        notes.append(f"# dropped {len(empty)} leaf switch(es) with no collected node below "
                     f"(storage, or nodes not collected): {','.join(empty)}")
    return out, mapped


def _fresh(name: str, taken: Set[str]) -> str:
    base, i = name, 0
    while name in taken:
        i += 1
        name = f"{base}-{i}"
    taken.add(name)
    return name


def tree_switches(fab: Dict[str, Any]) -> Tuple[List[Written], List[str]]:
    """The switches to write (leaves first) and the comment lines saying what was dropped or
    merged: no switch without something below, no node under two leaves, no undefined
    child."""
    notes: List[str] = []
    for sw in fab["switches"]:
        if not safe_name(sw["name"]):
            notes.append("# skipped switch (a name topology.conf cannot hold): "
                         + printable(sw["name"]))
        notes += [f"# skipped (a name topology.conf cannot hold): {printable(n)}"
                  for n in sw["nodes"] + sw["switches"] if not safe_name(n)]
    out, mapped = _leaves(fab, notes)
    top = max([sw["level"] for sw in fab["switches"]] + [0])
    for level in range(1, top + 1):
        seen: Dict[Tuple[str, ...], str] = {}
        merged: Dict[str, List[str]] = {}
        dropped: List[str] = []
        for sw in fab["switches"]:
            if sw["level"] != level or not safe_name(sw["name"]):
                continue
            kids = tuple(sorted({w for c in sw["switches"] for w in mapped.get(c, ())}))
            if not kids:
                dropped.append(sw["name"])
            elif kids in seen:
                mapped[sw["name"]] = {seen[kids]}
                merged[seen[kids]].append(sw["name"])
            else:
                seen[kids] = sw["name"]
                mapped[sw["name"]] = {sw["name"]}
                merged[sw["name"]] = []
                out.append((sw["name"], None, list(kids)))
        notes += [f"# {k} stands for {len(v) + 1} switches above the same switches: "
                  f"{','.join([k] + v)}" for k, v in merged.items() if v]
        if dropped:
            notes.append(f"# dropped {len(dropped)} switch(es) with no collected node below: "
                         + ",".join(dropped))
    return out, notes


def slurm_tree(doc: Dict[str, Any]) -> str:
    """``topology.conf`` in tree form (``topology/tree``, topology.conf(5)): a
    ``SwitchName=<leaf> Nodes=<hostlist>`` per leaf, a ``SwitchName=<name>
    Switches=<hostlist>`` per switch above, from the ``--fabric`` dump (:func:`tree_switches`)."""
    fab = doc["fabric"]
    lines = ["# topology.conf (topology/tree) written by nvtopo cluster from an ibnetdiscover "
             "dump and " f"{doc['counts']['nodes']} snapshots"]
    switches, notes = tree_switches(fab)
    lines += notes
    for name, nodes, below in switches:
        if nodes is not None:
            lines.append(f"SwitchName={name} Nodes={hostlist(nodes)}")
        else:
            lines.append(f"SwitchName={name} Switches={hostlist(below or [])}")
    for d in fab["unmatched"][:50]:
        lines.append(f"# HCA in the dump matched to no snapshot: {printable(d)}")
    if fab["nodes_outside"]:
        lines.append(f"# {len(fab['nodes_outside'])} node(s) under no leaf switch of the dump: "
                     + printable(hostlist(fab["nodes_outside"])))
    return "\n".join(lines) + "\n"


# --- blocks ----------------------------------------------------------------------------------


def base_size(sizes: List[int]) -> int:
    """The base block size: the size most blocks have (a rack's trays), the larger on a tie;
    never the smallest, so one tray outside its rack does not make every rack 1-node blocks."""
    count: Dict[int, int] = {}
    for s in sizes:
        count[s] = count.get(s, 0) + 1
    return max(count, key=lambda s: (count[s], s))


def block_sizes(sizes: List[int]) -> List[int]:
    """``BlockSizes``: the base, then ``R*base`` with R the largest power of two at most the
    number of blocks of the base size or more (two levels: a job may span R racks)."""
    if not sizes:
        return []
    base = base_size(sizes)
    full = sum(s >= base for s in sizes)
    r = 1
    while r * 2 <= full:
        r *= 2
    return [base] if r == 1 else [base, r * base]


def blocks(doc: Dict[str, Any]) -> Tuple[List[Tuple[str, List[str]]], List[str]]:
    """(block name, nodes) per NVLink domain of at least the base size (numbered from 000 in
    the domains' order), and the comment lines."""
    found: List[Tuple[Dict[str, Any], List[str]]] = []
    notes: List[str] = []
    for d in doc["domains"]:
        names = [n for n in d["nodes"] if safe_name(n)]
        notes += [f"# skipped (a name topology.conf cannot hold): {printable(n)}"
                  for n in d["nodes"] if not safe_name(n)]
        if names:
            found.append((d, names))
    base = base_size([len(ns) for _d, ns in found]) if found else 0
    out: List[Tuple[str, List[str]]] = []
    for d, ns in found:
        what = (f"domain {printable(d['cluster_uuid'])} clique(s) "
                + ",".join(str(c) for c in d["cliques"]))
        if len(ns) < base:
            notes.append(f"# {what} ({hostlist(ns)}) has {len(ns)} node(s), fewer than the "
                         f"base block size {base}: left out, its nodes in no block (Slurm "
                         "24.11 stops on a block smaller than the base); a tray outside its "
                         "rack, or a rack not fully collected")
            continue
        out.append((f"block{len(out):03d}", ns))
        notes.append(f"# {out[-1][0]}: {what}")
    if doc["no_domain"]:
        notes.append(f"# {len(doc['no_domain'])} node(s) in no NVLink domain are in no block")
    return out, notes


def slurm_block(doc: Dict[str, Any]) -> str:
    """``topology.conf`` in block form (Slurm >= 23.11, topology.conf(5)): one
    ``BlockName=`` per NVLink domain, then ``BlockSizes=`` (:func:`block_sizes`)."""
    lines = ["# topology.conf (topology/block, Slurm >= 23.11) written by nvtopo cluster from "
             f"{doc['counts']['nodes']} snapshots: one block per NVLink domain"]
    found, notes = blocks(doc)
    lines += notes
    lines += [f"BlockName={b} Nodes={hostlist(ns)}" for b, ns in found]
    if found:
        lines.append("BlockSizes=" + ",".join(str(s) for s in block_sizes(
            [len(ns) for _b, ns in found])))
    else:
        lines.append("# no NVLink domain in these snapshots: no block to write")
    return "\n".join(lines) + "\n"


# --- topology.yaml ---------------------------------------------------------------------------


def slurm_yaml(doc: Dict[str, Any]) -> str:
    """``topology.yaml`` (Slurm >= 25.05, topology.yaml(5)): a list of topologies, each with
    ``topology`` (its name) first; ``block`` (``block_sizes``, ``blocks`` of ``block`` and
    ``nodes``) for the NVLink domains, ``tree`` (``switches`` of ``switch`` and ``nodes`` or
    ``children``) for the ``--fabric`` dump.  The tree is the cluster default where there is
    one, else the blocks.  Every name written is a :func:`safe_name`: no quoting needed."""
    lines = ["# topology.yaml (Slurm >= 25.05) written by nvtopo cluster from "
             f"{doc['counts']['nodes']} snapshots", "---"]
    found, notes = blocks(doc)
    lines += notes
    fab = doc.get("fabric")
    switches, tnotes = tree_switches(fab) if fab is not None else ([], [])
    lines += tnotes
    if fab is not None and not switches:
        lines.append("# no switch of the dump has a collected node below: no tree to write")
        fab = None
    if fab is not None:
        lines += ["- topology: fabric", "  cluster_default: true", "  tree:", "    switches:"]
        for name, nodes, below in switches:
            lines.append(f"      - switch: {name}")
            lines.append(f"        nodes: {hostlist(nodes)}" if nodes is not None
                         else f"        children: {hostlist(below or [])}")
    if found:
        lines += ["- topology: nvlink", f"  cluster_default: {str(fab is None).lower()}",
                  "  block:", "    block_sizes:"]
        lines += [f"      - {s}" for s in block_sizes([len(ns) for _b, ns in found])]
        lines.append("    blocks:")
        for b, ns in found:
            lines += [f"      - block: {b}", f"        nodes: {hostlist(ns)}"]
    if fab is None and not found:
        lines += ["- topology: flat", "  cluster_default: true", "  flat: true"]
    return "\n".join(lines) + "\n"


__all__ = ["slurm_tree", "slurm_block", "slurm_yaml", "tree_switches", "blocks",
           "block_sizes", "base_size", "hostlist", "safe_name", "SINCE"]
