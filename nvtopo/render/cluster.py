"""Outputs of ``nvtopo cluster`` (docs/cluster.md): the Rich table, the JSON document, a Slurm
``topology.conf`` (block form) and Kubernetes node labels.

Renderers receive plain data (the JSON document) and decide nothing.  Every string from a
snapshot is untrusted: the table escapes it (``safe.printable`` into Rich ``Text``); the Slurm
output takes only names made of the characters its grammar allows, and lists every other node
in a comment, escaped, without using it; the label output (``k8s.py``) writes only names and
labels Kubernetes takes, and no comment at all (the refused nodes go to standard error).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..safe import printable

#: Characters a node name may have in ``topology.conf`` and in a Kubernetes label value.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
#: Label values are at most 63 characters (Kubernetes).
MAX_LABEL = 63


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


def slurm_block(doc: Dict[str, Any]) -> str:
    """``topology.conf`` in block form (Slurm >= 23.11, topology.conf(5)): one
    ``BlockName=`` per NVLink domain, then ``BlockSizes=`` (the smallest domain's node count:
    every block must hold at least the base size)."""
    lines = ["# topology.conf (topology/block) written by nvtopo cluster from "
             f"{doc['counts']['nodes']} snapshots: one block per NVLink domain"]
    sizes = []
    skipped: List[str] = []
    for i, d in enumerate(doc["domains"]):
        names = [n for n in d["nodes"] if safe_name(n)]
        skipped += [n for n in d["nodes"] if not safe_name(n)]
        if not names:
            continue
        lines.append(f"# domain {printable(d['cluster_uuid'])} clique(s) "
                     + ",".join(str(c) for c in d["cliques"]))
        lines.append(f"BlockName=block{i:03d} Nodes={hostlist(names)}")
        sizes.append(len(names))
    if sizes:
        lines.append(f"BlockSizes={min(sizes)}")
    else:
        lines.append("# no NVLink domain in these snapshots: no block to write")
    lines += [f"# skipped (a name topology.conf cannot hold): {printable(n)}" for n in skipped]
    if doc["no_domain"]:
        lines.append(f"# {len(doc['no_domain'])} node(s) in no NVLink domain are in no block")
    return "\n".join(lines) + "\n"


def slurm_tree(doc: Dict[str, Any]) -> str:
    """``topology.conf`` in tree form (``topology/tree``, topology.conf(5)): a
    ``SwitchName=<leaf> Nodes=<hostlist>`` per leaf switch, a ``SwitchName=<name>
    Switches=<hostlist>`` per switch above, from the ``--fabric`` dump."""
    fab = doc["fabric"]
    lines = ["# topology.conf (topology/tree) written by nvtopo cluster from an ibnetdiscover "
             "dump and " f"{doc['counts']['nodes']} snapshots"]
    for sw in fab["switches"]:
        if not safe_name(sw["name"]):
            lines.append(f"# skipped switch (a name topology.conf cannot hold): "
                         f"{printable(sw['name'])}")
            continue
        nodes = [n for n in sw["nodes"] if safe_name(n)]
        below = [n for n in sw["switches"] if safe_name(n)]
        if sw["level"] == 0 and nodes:
            lines.append(f"SwitchName={sw['name']} Nodes={hostlist(nodes)}")
        elif below:
            lines.append(f"SwitchName={sw['name']} Switches={hostlist(below)}")
        lines += [f"# skipped (a name topology.conf cannot hold): {printable(n)}"
                  for n in sw["nodes"] + sw["switches"] if not safe_name(n)]
    for d in fab["unmatched"][:50]:
        lines.append(f"# HCA in the dump matched to no snapshot: {printable(d)}")
    if fab["nodes_outside"]:
        lines.append(f"# {len(fab['nodes_outside'])} node(s) under no leaf switch of the dump: "
                     + printable(hostlist(fab["nodes_outside"])))
    return "\n".join(lines) + "\n"


def k8s_labels(doc: Dict[str, Any]) -> str:
    """The label lines, ``NODE key=value ...`` (for ``xargs -L1 kubectl label node
    --overwrite``), and nothing else: no comment.  The nodes refused (a name or a value
    Kubernetes would not take) are :func:`nvtopo.render.k8s.labels`' second answer, for
    standard error."""
    from .k8s import labels

    lines, _refused = labels(doc)
    return "".join(line + "\n" for line in lines)


def table(doc: Dict[str, Any], console: Any) -> None:
    """The Rich view: the verdict line, the findings (the view ``check`` draws), then the
    multi-node NVLink domains (a domain of one node is counted, not listed)."""
    from rich.text import Text

    from .layout import print_wrapped

    c = doc["counts"]
    local = c.get("node_local") or 0
    verdict = str(doc["verdict"]).upper()
    line = Text("CLUSTER: ", style="bold")
    line.append(verdict, style="bold red" if doc["verdict"] == "fail" else "bold green")
    line.append(f" · {c['nodes']} node(s) read, {c['unreadable']} unreadable · "
                f"{c['domains']} NVLink domain(s)"
                + (f" ({local} node(s) with a node-local NVSwitch fabric, not a multi-node "
                   "domain)" if local else "")
                + f" · {c['errors']} error(s), {c['warnings']} warning(s)")
    print_wrapped(console, line, 0, 2)
    if doc["findings"]:
        from .findings import print_findings

        print_findings([_fleet_finding(f) for f in doc["findings"]], console, verbose=True)
    _domains(doc, console)


def _fleet_finding(f: Dict[str, Any]) -> Dict[str, Any]:
    """A cross-node finding in the form of a node's: its node count joins the subject."""
    n = f.get("node_count") or 0
    subject = printable(f["subject"]) + (f" ({n} node{'s' if n != 1 else ''})" if n else "")
    return dict(f, subject=subject)


#: Domains listed in the table (the JSON document has every one).
SHOWN_DOMAINS = 50


def _domains(doc: Dict[str, Any], console: Any) -> None:
    from rich.table import Table
    from rich.text import Text

    from .layout import Fitted, id_column, text_column

    multi = [d for d in doc["domains"] if len(d["nodes"]) > 1]
    single = len(doc["domains"]) - len(multi)
    if multi:
        t = Table(title="NVLink domains (more than one node)")
        id_column(t, "domain (ClusterUUID)")
        text_column(t, "cliques")
        id_column(t, "nodes", justify="right")
        text_column(t, "first nodes")
        for d in multi[:SHOWN_DOMAINS]:
            t.add_row(Text(printable(d["cluster_uuid"])),
                      Text(",".join(str(x) for x in d["cliques"])), Text(str(len(d["nodes"]))),
                      Text(printable(", ".join(d["nodes"][:4]))))
        if len(multi) > SHOWN_DOMAINS:
            t.caption = f"{len(multi) - SHOWN_DOMAINS} more domains in --format json"
        console.print(Fitted(t))
    if single:
        console.print(Text(f"{single} NVLink domain(s) of one node not listed "
                           "(--format json lists them)", style="dim"))


def text(doc: Dict[str, Any], fmt: str) -> str:
    """The output of ``--format fmt`` as text (``table``: plain, for a file)."""
    if fmt == "json":
        import json

        return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"
    if fmt == "slurm-topology":
        return slurm_tree(doc) if doc.get("fabric") is not None else slurm_block(doc)
    if fmt == "k8s-labels":
        return k8s_labels(doc)
    import io

    from rich.console import Console

    buf = io.StringIO()
    table(doc, Console(file=buf, width=160, no_color=True, highlight=False, markup=False,
                       emoji=False))
    return buf.getvalue()


__all__ = ["text", "table", "slurm_block", "slurm_tree", "k8s_labels", "hostlist", "safe_name"]
