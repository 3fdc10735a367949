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

from typing import Any, Dict, List, Optional, Tuple

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


def _row_labels(row: Dict[str, Any]) -> Tuple[List[Tuple[str, str]], Optional[str]]:
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
    for key, value in labels:
        why = label_key_problem(key) or label_value_problem(value)
        if why:
            return [], f"its {key} value {printable(value)!r} is no label value: {why}"
    return labels, None


def labels(doc: Dict[str, Any]) -> Tuple[List[str], List[str]]:
    """The label lines (``NODE key=value ...``) of a ``cluster`` JSON document, and one line
    per refused node saying which and why (for standard error, never for the lines).

    The node name is the engine's name (``collect.json``) where there is one, else the
    snapshot's hostname; a file name is never taken for a node name."""
    rows = doc.get("node_rows") or []
    names: List[Any] = [row.get("engine_name") or row.get("hostname") for row in rows]
    count: Dict[Any, int] = {}
    for name in names:
        if isinstance(name, str):
            count[name] = count.get(name, 0) + 1
    lines: List[str] = []
    refused: List[str] = []
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
            pairs, why = _row_labels(row)
        line = " ".join([str(name)] + [f"{k}={v}" for k, v in pairs])
        if why is None and not set(line) <= LINE_CHARS | {" "}:  # the class, whatever passed
            why = "a character the labels pipeline cannot carry"
        if why is not None:
            refused.append(f"k8s-labels: refused node {shown}: {why}")
            continue
        lines.append(line)
    return lines, refused


__all__ = ["labels", "node_name_problem", "label_value_problem", "label_key_problem",
           "LABEL_KEYS", "PREFIX", "LINE_CHARS"]
