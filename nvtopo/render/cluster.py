"""Outputs of ``nvtopo cluster`` (docs/cluster.md): the Rich table, the JSON document, a Slurm
``topology.conf``/``topology.yaml`` (:mod:`.slurm`) and Kubernetes node labels (:mod:`.k8s`).

Renderers receive plain data (the JSON document) and decide nothing.  Every string from a
snapshot is untrusted: the table escapes it (``safe.printable`` into Rich ``Text``); the Slurm
output takes only names made of the characters its grammar allows, and lists every other node
in a comment, escaped, without using it; the label output (``k8s.py``) writes only names and
labels Kubernetes takes, and no comment at all (the refused nodes go to standard error).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ..safe import printable
from .slurm import MAX_LABEL, hostlist, safe_name, slurm_block, slurm_tree, slurm_yaml


def k8s_labels(doc: Dict[str, Any], tiers: Optional[str] = None) -> str:
    """The label lines, ``NODE key=value ...`` (for ``xargs -L1 kubectl label node
    --overwrite``), and nothing else: no comment.  The nodes refused (a name or a value
    Kubernetes would not take) are :func:`nvtopo.render.k8s.labels`' second answer, for
    standard error."""
    from .k8s import labels

    lines, _refused = labels(doc, tiers)
    return "".join(line + "\n" for line in lines)


def table(doc: Dict[str, Any], console: Any) -> None:
    """The Rich view: the verdict line, the findings (the view ``check`` draws), then the
    multi-node NVLink domains (a domain of one node is counted, not listed) and how many
    racks there are."""
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
    if doc.get("racks"):
        n = len(doc["racks"])
        console.print(Text(f"{n} rack(s) by chassis serial (NVML platform info): "
                           "--format rack-map draws them slot by slot", style="dim"))


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


def text(doc: Dict[str, Any], fmt: str, tiers: Optional[str] = None) -> str:
    """The output of ``--format fmt`` as text (``table``: plain, for a file); ``tiers``: the
    ``--tier-labels`` style of the Kubernetes formats."""
    if fmt == "json":
        import json

        return json.dumps(doc, indent=2, ensure_ascii=True) + "\n"
    if fmt == "slurm-topology":
        return slurm_tree(doc) if doc.get("fabric") is not None else slurm_block(doc)
    if fmt == "slurm-yaml":
        return slurm_yaml(doc)
    if fmt == "k8s-labels":
        return k8s_labels(doc, tiers)
    if fmt == "rack-map":
        from .racks import rack_map

        return rack_map(doc)
    if fmt == "k8s-json":
        import json

        from .k8s import apply_body

        return json.dumps(apply_body(doc, tiers)[0], indent=2, ensure_ascii=True) + "\n"
    import io

    from rich.console import Console

    buf = io.StringIO()
    table(doc, Console(file=buf, width=160, no_color=True, highlight=False, markup=False,
                       emoji=False))
    return buf.getvalue()


__all__ = ["text", "table", "slurm_block", "slurm_tree", "slurm_yaml", "k8s_labels", "hostlist",
           "safe_name", "MAX_LABEL"]
