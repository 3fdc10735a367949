"""Kubernetes node labels from ``nvtopo cluster`` (``--format k8s-labels``, docs/cluster.md §3).

The output is read by a program, not a person: ``xargs -L1 kubectl label node --overwrite``.
xargs splits a line at blanks, reads quotes and backslashes, and joins a line that ends in a
blank to the next one; kubectl takes every argument without ``=`` as one more node.  So each
line is ``NODE key=value ...`` and nothing else, and everything on it is checked against
Kubernetes' own rules before it is written:

* the node name is an RFC 1123 DNS subdomain, as Kubernetes requires of a Node's name: at most
  253 characters, dot-separated parts of lower-case letters, digits and ``-``, each starting
  and ending with a letter or digit;
* a label key is ``[prefix/]name`` (the prefix a DNS subdomain, the name at most 63 characters
  of ``[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?``); a value is empty or such a name.

A row that fails any of these is refused as a whole (never labelled in part, never mapped to
another name): no line is written for it and :func:`labels` returns why, for standard error.
A name two rows give is refused for both (the later line would overwrite the earlier node's
labels).  No comment is ever written on the labels' lines.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..safe import printable

#: The project's label prefix (``nvidia.com/`` belongs to NVIDIA's GPU Feature Discovery).
PREFIX = "nvtopo.io/"
CLIQUE = PREFIX + "gpu.clique"
DOMAIN = PREFIX + "nvlink-domain"
RAILS = PREFIX + "rails"
RAIL_RATE = PREFIX + "rail-rate-gbps"
#: Every key written, in the order written.
LABEL_KEYS = (CLIQUE, DOMAIN, RAILS, RAIL_RATE)

#: Kubernetes' limits: a DNS subdomain (a node's name, a key's prefix), a label name or value.
MAX_SUBDOMAIN = 253
MAX_LABEL = 63

_LOWER_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_ALNUM = _LOWER_ALNUM | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_DNS_CHARS = _LOWER_ALNUM | {"-"}
_LABEL_CHARS = _ALNUM | frozenset("-_.")
#: Every character a written line may hold (besides the single spaces between words).
LINE_CHARS = _LABEL_CHARS | frozenset("/=")


def node_name_problem(name: Any) -> Optional[str]:
    """Why ``name`` is not a Kubernetes node name (an RFC 1123 DNS subdomain); ``None``: it
    is one."""
    if not isinstance(name, str) or not name:
        return "no node name"
    if len(name) > MAX_SUBDOMAIN:
        return f"longer than {MAX_SUBDOMAIN} characters"
    if name != name.lower() and set(name.lower()) <= _DNS_CHARS | {"."}:
        return "upper case (Kubernetes node names are lower case)"
    bad = sorted(set(name) - _DNS_CHARS - {"."})
    if bad:
        return "characters a node name cannot hold: " + printable(" ".join(repr(c) for c in bad))
    for part in name.split("."):
        if not part:
            return "an empty part between dots, or a dot at an end"
        if part[0] not in _LOWER_ALNUM or part[-1] not in _LOWER_ALNUM:
            return "a part that starts or ends with '-'"
    return None


def label_value_problem(value: Any) -> Optional[str]:
    """Why ``value`` is not a Kubernetes label value; ``None``: it is one (empty is one)."""
    if not isinstance(value, str):
        return "not text"
    if value == "":
        return None
    if len(value) > MAX_LABEL:
        return f"longer than {MAX_LABEL} characters"
    if not set(value) <= _LABEL_CHARS:
        return "characters other than letters, digits, '-', '_' and '.'"
    if value[0] not in _ALNUM or value[-1] not in _ALNUM:
        return "does not start and end with a letter or digit"
    return None


def label_key_problem(key: Any) -> Optional[str]:
    """Why ``key`` is not a Kubernetes label key (``[prefix/]name``); ``None``: it is one."""
    if not isinstance(key, str):
        return "not text"
    prefix, slash, name = key.rpartition("/")
    if slash:
        why = node_name_problem(prefix)  # a prefix is a DNS subdomain, as a node name is
        if why:
            return f"prefix: {why}"
        if prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io") or \
                prefix == "k8s.io" or prefix.endswith(".k8s.io"):
            return "a prefix Kubernetes reserves"
    if name == "":
        return "no name"
    why = label_value_problem(name)
    return f"name: {why}" if why else None


#: ``--tier-labels`` styles: (the NVLink domain's key, the switch tiers' keys from the leaf
#: up).  ``topograph``: NVIDIA topograph's labels before 1.0 (its Kubernetes engine's
#: ``network.topology.nvidia.com/{accelerator,leaf,spine,core}``); ``topograph-v1``:
#: topograph 1.x (``accelerator.topograph.run/domain``, ``fabric.topograph.run/tier-N``, tier
#: 0 the switch next to the node).  Either is what Kueue's topology-aware scheduling is given
#: as its ``Topology`` levels (:func:`kueue_topology`).
TIER_STYLES: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "topograph": ("network.topology.nvidia.com/accelerator",
                  tuple("network.topology.nvidia.com/" + t for t in ("leaf", "spine", "core"))),
    "topograph-v1": ("accelerator.topograph.run/domain",
                     tuple(f"fabric.topograph.run/tier-{i}" for i in range(8))),
}
HOSTNAME = "kubernetes.io/hostname"


def _chains(doc: Dict[str, Any]) -> Dict[str, List[str]]:
    """Node -> the written switches above it, leaf first (the tree Slurm is given: one leaf
    per node, :func:`nvtopo.render.slurm.tree_switches`); empty without ``--fabric``."""
    from .slurm import tree_switches

    fab = doc.get("fabric")
    if fab is None:
        return {}
    switches, _notes = tree_switches(fab)
    parent: Dict[str, str] = {}
    leaf_of: Dict[str, str] = {}
    for name, nodes, below in switches:
        for n in nodes or []:
            leaf_of[n] = name
        for c in sorted(below or []):
            parent.setdefault(c, name)
    out: Dict[str, List[str]] = {}
    for node, leaf in leaf_of.items():
        chain = [leaf]
        while chain[-1] in parent and len(chain) < 16:
            chain.append(parent[chain[-1]])
        out[node] = chain
    return out


def tier_labels(doc: Dict[str, Any], style: Optional[str]) -> Dict[str, List[Tuple[str, str]]]:
    """Node name -> its tier labels in ``style`` (none when ``style`` is None): the NVLink
    domain (``<ClusterUUID>.<clique>``, the value GFD's ``nvidia.com/gpu.clique`` holds) and
    the switches above it, leaf first, as many as the style has keys."""
    if style is None:
        return {}
    acc, tiers = TIER_STYLES[style]
    chains = _chains(doc)
    out: Dict[str, List[Tuple[str, str]]] = {}
    for row in doc.get("node_rows") or []:
        name = row.get("engine_name") or row.get("hostname")
        if not isinstance(name, str):
            continue
        pairs: List[Tuple[str, str]] = []
        if row.get("domain") and row.get("clique") is not None:
            pairs.append((acc, f"{row['domain']}.{row['clique']}"))
        pairs += list(zip(tiers, chains.get(row.get("name") or "", [])))
        out[name] = pairs
    return out


def _row_labels(row: Dict[str, Any], extra: Sequence[Tuple[str, str]] = ()
                ) -> Tuple[List[Tuple[str, str]], Optional[str]]:
    """A node row's labels (key, value), or why the row cannot be labelled."""
    labels: List[Tuple[str, str]] = []
    domain, clique = row.get("domain"), row.get("clique")
    if domain and clique is not None:
        labels.append((CLIQUE, f"{domain}.{clique}"))
        labels.append((DOMAIN, str(domain)))
    labels.append((RAILS, str(row.get("rails") or 0)))
    rate = row.get("rail_rate_gbps")
    if rate is not None:
        labels.append((RAIL_RATE, str(rate)))
    labels += list(extra)
    for key, value in labels:
        why = label_key_problem(key) or label_value_problem(value)
        if why:
            return [], f"its {key} value {printable(value)!r} is no label value: {why}"
    return labels, None


def labels(doc: Dict[str, Any], tiers: Optional[str] = None) -> Tuple[List[str], List[str]]:
    """The label lines (``NODE key=value ...``) of a ``cluster`` JSON document, and one line
    per refused node saying which and why (for standard error, never for the lines).
    ``tiers``: a :data:`TIER_STYLES` name, its labels added (:func:`tier_labels`).

    The node name is the engine's name (``collect.json``) where there is one, else the
    snapshot's hostname; a file name is never taken for a node name."""
    lines, refused, _pairs = labelled(doc, tiers)
    return lines, refused


def labelled(doc: Dict[str, Any], tiers: Optional[str] = None
             ) -> Tuple[List[str], List[str], List[Tuple[str, List[Tuple[str, str]]]]]:
    """:func:`labels`' lines and refusals, and (node, labels) of every line."""
    extra = tier_labels(doc, tiers)
    rows = doc.get("node_rows") or []
    names: List[Any] = [row.get("engine_name") or row.get("hostname") for row in rows]
    count: Dict[Any, int] = {}
    for name in names:
        if isinstance(name, str):
            count[name] = count.get(name, 0) + 1
    lines: List[str] = []
    refused: List[str] = []
    written: List[Tuple[str, List[Tuple[str, str]]]] = []
    for row, name in zip(rows, names):
        shown = printable(repr(name if name is not None else row.get("name")))
        why = node_name_problem(name)
        if why == "no node name":
            why = ("no node name: neither the engine's (collect.json) nor a hostname (file "
                   f"{printable(row.get('file') or row.get('name'))})")
        elif why is None and count.get(name, 0) > 1:
            why = (f"the name is given by {count[name]} snapshots: their labels would land on "
                   "one node")
        pairs: List[Tuple[str, str]] = []
        if why is None:
            pairs, why = _row_labels(row, extra.get(name, ()) if isinstance(name, str) else ())
        line = " ".join([str(name)] + [f"{k}={v}" for k, v in pairs])
        if why is None and not set(line) <= LINE_CHARS | {" "}:  # the class, whatever passed
            why = "a character the labels pipeline cannot carry"
        if why is not None:
            refused.append(f"k8s-labels: refused node {shown}: {why}")
            continue
        lines.append(line)
        written.append((str(name), pairs))
    return lines, refused, written


def kueue_topology(tiers: str, depth: int, domain: bool = True, name: str = "nvtopo"
                   ) -> Dict[str, Any]:
    """A Kueue ``Topology`` (``kueue.x-k8s.io/v1beta1``) whose levels are the tier labels,
    broadest first: the ``depth`` switch tiers written (the top one first), the NVLink domain
    (where ``domain``: some node is in one; Kueue leaves out nodes lacking a level's label),
    then the node itself (``kubernetes.io/hostname``, as Kueue's documentation has it)."""
    acc, keys = TIER_STYLES[tiers]
    levels = [{"nodeLabel": k} for k in reversed(keys[:depth])]
    levels += [{"nodeLabel": acc}] if domain else []
    levels.append({"nodeLabel": HOSTNAME})
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology",
            "metadata": {"name": name}, "spec": {"levels": levels}}


def apply_body(doc: Dict[str, Any], tiers: Optional[str] = None) -> Tuple[Dict[str, Any],
                                                                          List[str]]:
    """``--format k8s-json``: a ``v1`` ``List`` of partial ``Node`` objects (name and labels
    only), a server-side apply body (``kubectl apply --server-side --field-manager=nvtopo
    -f``), with the Kueue ``Topology`` last when ``tiers`` is given; and the refusals."""
    _lines, refused, written = labelled(doc, tiers)
    items: List[Dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": node, "labels": dict(pairs)}} for node, pairs in written]
    if tiers is not None:
        acc, keys = TIER_STYLES[tiers]
        depth = max([sum(k in keys for k, _v in pairs) for _n, pairs in written] + [0])
        domain = any(k == acc for _n, pairs in written for k, _v in pairs)
        items.append(kueue_topology(tiers, depth, domain))
    return {"apiVersion": "v1", "kind": "List", "items": items}, refused


__all__ = ["labels", "labelled", "apply_body", "kueue_topology", "tier_labels", "TIER_STYLES",
           "node_name_problem", "label_value_problem", "label_key_problem",
           "LABEL_KEYS", "PREFIX", "LINE_CHARS"]
