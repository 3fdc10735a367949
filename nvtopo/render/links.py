"""``nvtopo links``: per GPU and NVLink, state, version, speed, remote end, error counters.

:func:`links_doc` builds the JSON document (its contract: docs/json.md) from
the model; :func:`print_links` renders it with Rich.  Both read only the
model: NVML facts (``GPU.nvml``), else pasted nvidia-smi text (``GPU.nvml_text``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

from rich.console import Console
from rich.table import Table
from rich.text import Span, Text

from ..errors import NvtopoError
from ..model import Topology, pci_bdf
from .cells import c2c_state, printable, text, title
from .layout import Sheet, print_wrapped

#: Where link facts live in the model, in order of preference.
LINK_SOURCES = ("nvml", "nvml-text")
ERROR_NAMES = ("replay", "recovery", "crc_flit", "crc_data", "ecc")
STATE_STYLES = {"active": "green", "inactive": "yellow", "down": "bold red",
                "not_supported": "dim", "unknown": "magenta"}


def _record(g: Any) -> Optional[Tuple[Any, str]]:
    """The GPU's link record (NVML's, else pasted text's) and its source."""
    if g.nvml is not None:
        return g.nvml, "nvml"
    if g.nvml_text is not None:
        return g.nvml_text, "nvml-text"
    return None


def links_doc(topo: Topology, gpu: Optional[int] = None, where: str = "input") -> Dict[str, Any]:
    """The ``links`` JSON document.  Raises NvtopoError when there is no NVLink evidence."""
    gpus: List[Dict[str, Any]] = []
    for g in topo.gpus:
        found = _record(g)
        if found is None or (gpu is not None and g.index != gpu):
            continue
        rec, source = found
        nv = rec.nvlink
        links = []
        for lk in nv.links:
            links.append({
                "link": lk.link, "state": lk.state or "unknown",
                "version": lk.version, "speed_mbps": lk.speed_mbps,
                "remote": lk.remote.to_dict(),
                "errors": dict(lk.errors),
                "rule": lk.rule, "reason": lk.reason,
            })
        total = nv.total
        fab = rec.fabric
        extra = {"fabric": fab.to_dict()} if fab is not None and fab.state != "not_supported" \
            else {}
        c2c = getattr(rec, "c2c", None)  # NVLink-C2C to the Grace CPU (NVML, Grace only)
        if c2c is not None:
            extra["c2c"] = c2c.to_dict()
        gpus.append({
            "index": g.index, "name": g.name,
            "active": sum(1 for x in links if x["state"] == "active"),
            "total": total if isinstance(total, int) else len(links),
            "nvlink": nv.status or "unknown",
            "reason": getattr(nv, "reason", None),
            "bandwidth_gbps_per_direction": nv.bandwidth_gbps_per_direction,
            "fault": rec.fault.to_dict() if rec.fault is not None else None,
            "source": source,
            "links": links,
            **extra,
        })
    if not gpus:
        if gpu is not None and any(_record(g) for g in topo.gpus):
            raise NvtopoError(f"no GPU {gpu} in the NVLink evidence", where=where)
        why = "; ".join(n.message for n in topo.notes if n.source in LINK_SOURCES)
        raise NvtopoError("no NVLink evidence (needs an NVML snapshot or pasted "
                          "`nvidia-smi nvlink -s/-e/-c/-R` text)"
                          + (f": {why}" if why else ""), where=where)
    node = topo.nvml
    return {
        "gpus": gpus,
        "pairs": [p for p in _pairs(topo) if gpu is None or gpu in (p["a"], p["b"])],
        "nvswitch": node.nvswitch if node is not None else None,
        "incomplete": node.incomplete.to_dict()
        if node is not None and node.incomplete is not None else None,
        "disagreements": _disagreements(topo),
        "notes": [{"code": n.code, "level": n.level, "subject": n.subject,
                   "message": n.message} for n in topo.notes if n.source in LINK_SOURCES
                  and (gpu is None or n.subject in (None, f"GPU{gpu}"))],
    }


def _pairs(topo: Topology) -> List[Dict[str, Any]]:
    """GPU pair NVLink counts as the link source itself counted them.

    ``topo.nvlinks`` holds the first source's counts (topo-text before NVML in a
    snapshot with both); the links view shows the source of its link records,
    kept per source (``Topology.nvml.nvlink_pairs``, ``Topology.nvml_text.nvlink_pairs``).
    """
    out: List[Dict[str, Any]] = []
    for src, attr in (("nvml", "nvml"), ("nvml-text", "nvml_text")):
        # the source's own GPU numbers -> this model's (they differ only when a merge
        # matched GPUs by bus id across sources that number them differently)
        index = {}
        mine = set()
        for g in topo.gpus:
            rec = getattr(g, attr)
            if rec is not None:
                index[rec.index] = g.index
            found = _record(g)
            if found is not None and found[1] == src:
                mine.add(g.index)
        node = getattr(topo, attr)
        for p in (node.nvlink_pairs or []) if node is not None else []:
            a, b, count = index.get(p.a), index.get(p.b), p.count
            if a in mine and b in mine and isinstance(count, int) and count > 0:
                out.append({"a": min(a, b), "b": max(a, b), "count": count, "source": src})
    return sorted(out, key=lambda p: (p["a"], p["b"]))


def _disagreements(topo: Topology) -> List[Dict[str, Any]]:
    """NVLink-relevant disagreements, each once: a pair whose NVLink count differs also
    differs in its matrix path (NV18 vs NV17); the path one is then left out."""
    def pair(subject: str) -> frozenset:
        return frozenset(subject.split("-"))

    counted = {pair(d.subject) for d in topo.disagreements if d.fact == "nvlink_count"}
    return [d.to_dict() for d in topo.disagreements
            if d.fact in ("nvlink_count", "presence")
            or (d.fact == "path" and pair(d.subject) not in counted)]


def short_bus_id(bus_id: Optional[str]) -> str:
    """``00000000:07:00.0`` -> ``07:00.0`` (domain kept when non-zero)."""
    bdf = pci_bdf(bus_id)
    if bdf is None:
        return bus_id or ""
    dom, bus, dev, fn = bdf
    return (f"{dom:04x}:" if dom else "") + f"{bus:02x}:{dev:02x}.{fn}"


@lru_cache(maxsize=1024)
def _short(bus_id: str) -> str:
    """:func:`short_bus_id`, once per id (a node's links name its few NVSwitches)."""
    return short_bus_id(bus_id)


def _remote(r: Dict[str, Any]) -> str:
    kind = r.get("type") or "unknown"
    port = f" #{r['link']}" if r.get("link") is not None else ""
    if kind == "gpu" and r.get("gpu_index") is not None:
        return f"GPU{r['gpu_index']}{port}"
    label = {"gpu": "GPU", "nvswitch": "NVSwitch", "npu": "IBM NPU"}.get(kind, "?")
    bus_id = r.get("pci_bus_id")
    bus = f" {_short(bus_id) if isinstance(bus_id, str) else short_bus_id(bus_id)}" \
        if bus_id else ""
    return f"{label}{bus}{port}" if (bus or port or kind != "unknown") else "–"


def _errors(errs: Dict[str, Any]) -> Text:
    """``0/0/–/0/0``: the counters, ``/`` dim, a nonzero one bold red (built as one Text with
    its spans, as appending each part would build it)."""
    parts: List[str] = []
    spans: List[Span] = []
    at = 0
    for n, k in enumerate(ERROR_NAMES):
        if n:
            spans.append(Span(at, at + 1, "dim"))
            parts.append("/")
            at += 1
        v = errs.get(k)
        shown = "–" if v is None else printable(v)
        if v and shown:
            spans.append(Span(at, at + len(shown), "bold red"))
        parts.append(shown)
        at += len(shown)
    return Text("".join(parts), spans=spans)


#: Version of the ``nvtopo links --format json`` document (docs/json.md).
LINKS_SCHEMA_VERSION = 1


def _frame(g: Dict[str, Any]) -> Table:
    """A GPU's table without its rows: its title (the GPU, its state) and columns."""
    bw = g.get("bandwidth_gbps_per_direction")
    unknown = sum(1 for lk in g["links"] if lk["state"] == "unknown")
    if g["links"] and unknown == len(g["links"]):
        # nvlink -e / -c pasted alone: the links are listed, their states are not
        state = f"{len(g['links'])} links listed, state unknown (no nvlink -s)"
    else:
        state = f"{g['active']}/{g['total'] - unknown} active" + (
            f", {unknown} unknown" if unknown else "")
    head = f"GPU{g['index']} · {g.get('name') or '?'} · {state}"
    if bw:
        head += f" · {bw:g} GB/s per direction"
    table = Table(title=title(head), title_justify="left", box=None, pad_edge=False,
                  padding=(0, 1), header_style="bold underline",
                  show_edge=False)
    table.add_column("Link", justify="right", no_wrap=True, min_width=4)
    table.add_column("State", no_wrap=True)
    table.add_column("Ver", no_wrap=True)
    table.add_column("GB/s", justify="right", no_wrap=True)
    table.add_column("Remote (#link)", no_wrap=True)
    table.add_column("Errors rpl/rcv/crcF/crcD/ecc", no_wrap=True)
    return table


def _row(lk: Dict[str, Any]) -> Tuple[str, str, str, str, str, str]:
    """A link's cells, as text: link, state, version, GB/s, remote end, error counters."""
    speed = lk.get("speed_mbps")
    errs = lk["errors"]
    return (printable(lk["link"]), printable(lk["state"]), printable(lk.get("version") or "–"),
            f"{speed / 1000:g}" if speed else "–", printable(_remote(lk["remote"])),
            "/".join("–" if errs.get(k) is None else printable(errs.get(k))
                     for k in ERROR_NAMES))


def gpu_table(g: Dict[str, Any]) -> Table:
    """A GPU's table: a row per link (:func:`_row`'s text, styled)."""
    table = _frame(g)
    for lk in g["links"]:
        link, state, ver, speed, remote, _ = _row(lk)
        table.add_row(Text(link), Text(state, style=STATE_STYLES.get(lk["state"], "")),
                      Text(ver), Text(speed), Text(remote), _errors(lk["errors"]))
    return table


def gpu_sheet(g: Dict[str, Any]) -> Sheet:
    """A GPU's table as ``print_links`` prints it: where styles print nothing, drawn from
    its cells' text alone (no Text per cell: 8 GPUs of 18 links are 864 cells)."""
    return Sheet(_frame(g), [_row(lk) for lk in g["links"]], lambda: gpu_table(g))


def _fabric_bad(f: Any) -> bool:
    """Whether a GPU's fabric facts say something is wrong (not completed, a failed status,
    an unhealthy or limited summary)."""
    if not f:
        return False
    return f.get("state") != "completed" or f.get("status") not in (None, "success") or \
        f.get("health_summary") in ("unhealthy", "limited_capacity")


def _fabric_text(f: Dict[str, Any]) -> Text:
    """A GPU's NVLink fabric facts (NVML, or a pasted ``-q`` Fabric block), one line."""
    state, status, health = f.get("state"), f.get("status"), f.get("health_summary")
    bad = _fabric_bad(f)
    what = [f"{state}" + (f"/{status}" if status else "")]
    if health and health != "not_supported":
        what.append(str(health))
    if f.get("clique_id") is not None:
        what.append(f"clique {f['clique_id']}")
    what.append(f"cluster {f['cluster_uuid']}" if f.get("cluster_uuid") else "no cluster UUID")
    return text("fabric: " + " · ".join(what), style="bold red" if bad else "green")


def _c2c_bad(c: Any) -> bool:
    """Whether a GPU's NVLink-C2C facts say something is wrong (mode off, a link inactive)."""
    if not c:
        return False
    return c.get("enabled") is False or (c.get("enabled") is True and c.get("link_count") == 0) \
        or any(lk.get("status") == "inactive" for lk in c.get("links") or [])


def _c2c_text(c: Dict[str, Any]) -> Text:
    """A GPU's NVLink-C2C facts, one line: mode, links active of present, bandwidth."""
    what = c2c_state(c.get("enabled"), c.get("link_count"), c.get("links_active"))
    down = [lk["link"] for lk in c.get("links") or [] if lk.get("status") == "inactive"]
    if down and c.get("enabled") is not False:
        what.append("down: " + ", ".join(str(x) for x in down))
    if c.get("bandwidth_gbps") is not None:
        what.append(f"{c['bandwidth_gbps']:g} GB/s")
    return text("C2C to CPU: " + " · ".join(what),
                style="bold red" if _c2c_bad(c) else "green")


def problem_link(lk: Dict[str, Any]) -> bool:
    """A link that is not as expected: down, unknown, or with a nonzero error counter
    (``inactive`` by design and ``active`` without errors are as expected)."""
    return lk["state"] in ("down", "unknown") or any(v for v in lk["errors"].values())


def _gpu_bad(g: Dict[str, Any]) -> bool:
    return bool(g.get("fault")) or _fabric_bad(g.get("fabric")) or \
        _c2c_bad(g.get("c2c")) or any(problem_link(lk) for lk in g["links"])


def problems_first(doc: Dict[str, Any], only: bool = False) -> Dict[str, Any]:
    """The table view of ``doc``: GPUs with a problem link (or a fault) first; with
    ``only``, just those GPUs and, of each, just its problem links."""
    gpus = sorted(doc["gpus"], key=lambda g: not _gpu_bad(g))  # stable: index order kept
    if only:
        gpus = [dict(g, links=[lk for lk in g["links"] if problem_link(lk)])
                for g in gpus if _gpu_bad(g)]
    return dict(doc, gpus=gpus)


def _healthy(g: Dict[str, Any]) -> bool:
    """Every link of the GPU active, no error counter above 0, nothing else wrong."""
    return bool(g["links"]) and not _gpu_bad(g) and all(
        lk["state"] == "active" for lk in g["links"])


def print_links(doc: Dict[str, Any], console: Console, *, problems: bool = False,
                collapse: bool = False) -> None:
    """The links document as one table per GPU, GPUs with problems first; ``problems``:
    only the links that are not as expected (down, unknown, nonzero error counters);
    ``collapse``: the healthy GPUs (every link active, no error) on one line instead of a
    table each.  A summary line ends it."""
    every = doc["gpus"]
    total = len(every)
    doc = problems_first(doc, only=problems)
    if problems and not doc["gpus"]:
        console.print(text(f"no NVLink problem on {total} GPU{'s' if total != 1 else ''} "
                           "(no link down or unknown, no error counter above 0)"))
    shared, same_c2c = _node_lines(doc, console)
    folded = [g for g in doc["gpus"] if collapse and _healthy(g)]
    batch: List[Any] = []
    for g in doc["gpus"]:
        if g not in folded:
            _print_gpu(g, console, shared, same_c2c, batch)
    _flush(console, batch)
    if folded:
        n = len(folded[0]["links"])
        same = all(len(g["links"]) == n for g in folded)
        print_wrapped(console, Text.assemble(
            (f"GPU{'s' if len(folded) > 1 else ''} "
             + ", ".join(str(g["index"]) for g in folded), "green"),
            printable(f": {'all ' + str(n) if same else 'all'} links active, no error "
                      "counters"), ("  (-v lists every link)", "dim")), 0, 2)
        console.print()
    _print_tail(doc, console)
    print_wrapped(console, _summary(every), 0, 2)


def _summary(gpus: List[Dict[str, Any]]) -> Text:
    """``links: 8 GPUs · 144 links: 143 active, 1 down · 0 with error counters``."""
    states: Dict[str, int] = {}
    for g in gpus:
        for lk in g["links"]:
            states[lk["state"]] = states.get(lk["state"], 0) + 1
    nlinks = sum(states.values())
    erring = sum(1 for g in gpus for lk in g["links"] if any(v for v in lk["errors"].values()))
    order = ["active", "down", "inactive", "unknown", "not_supported"]
    keys = [k for k in order if k in states] + sorted(k for k in states if k not in order)
    line = Text("links: ", style="bold")
    line.append(printable(f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''} · {nlinks} "
                          f"link{'s' if nlinks != 1 else ''}" + (":" if keys else "")))
    for i, k in enumerate(keys):
        line.append("," if i else "")
        line.append(printable(f" {states[k]} {k.replace('_', ' ')}"),
                    style=STATE_STYLES.get(k, "") if k != "active" else "")
    line.append(f" · {erring} with error counters", style="bold red" if erring else "")
    return line


def _node_lines(doc: Dict[str, Any], console: Console) -> Tuple[bool, bool]:
    """The fabric and C2C lines shared by every GPU, once for the node."""
    fabrics = [g.get("fabric") for g in doc["gpus"]]
    shared = bool(len(fabrics) > 1 and fabrics[0] and all(f == fabrics[0] for f in fabrics))
    if shared:  # one line for the node, not one per GPU
        line = _fabric_text(fabrics[0])
        line.append(f" (all {len(fabrics)} GPUs)")
        print_wrapped(console, line, 0, 2)
    c2cs = [g.get("c2c") for g in doc["gpus"]]
    same_c2c = bool(len(c2cs) > 1 and c2cs[0] and all(c == c2cs[0] for c in c2cs))
    if same_c2c:
        line = _c2c_text(c2cs[0])
        line.append(f" (all {len(c2cs)} GPUs)")
        print_wrapped(console, line, 0, 2)
    return shared, same_c2c


def _print_gpu(g: Dict[str, Any], console: Console, shared: bool, same_c2c: bool,
               batch: List[Any]) -> None:
    """One GPU: its fault, fabric and C2C lines where not the node's, its table, the
    reasons of its links not active, its nonzero error counters.  A GPU of a table alone
    (and its blank line) joins ``batch``, printed with the tables beside it in one print
    (:func:`_flush`: a print costs Rich ~0.4 ms on the command's standard output)."""
    reasons: Dict[str, List[int]] = {}
    for lk in g["links"]:
        if lk["state"] != "active" and lk.get("reason"):
            reasons.setdefault(f"{lk['state']}: {lk['reason']}", []).append(lk["link"])
    bad = [(lk["link"], k, v) for lk in g["links"] for k, v in lk["errors"].items() if v]
    fabric = bool(g.get("fabric") and not shared)
    c2c = bool(g.get("c2c") and not same_c2c)
    if g["links"] and not (reasons or bad or fabric or c2c or g.get("fault")):
        batch += [gpu_sheet(g), Text("")]
        return
    _flush(console, batch)
    if g.get("fault"):
        print_wrapped(console, text(f"GPU{g['index']}: {g['fault'].get('message')}",
                                    style="bold red"), 0, 2)
    if fabric:
        line = _fabric_text(g["fabric"])
        line.append(f" (GPU{g['index']})")
        print_wrapped(console, line, 0, 2)
    if c2c:
        line = _c2c_text(g["c2c"])
        line.append(f" (GPU{g['index']})")
        print_wrapped(console, line, 0, 2)
    if not g["links"]:
        what = {"not_supported": "NVLink not supported on this GPU",
                "inactive": g.get("reason") or "all links inactive"}.get(
                    g["nvlink"], "no NVLink facts")
        console.print(text(f"GPU{g['index']} · {g.get('name') or '?'} · {what}",
                           style="dim" if g["nvlink"] == "not_supported" else "yellow"))
        console.print()
        return
    console.print(gpu_sheet(g))
    for why, ids in reasons.items():
        style = "bold red" if why.startswith("down") else "yellow"
        word = "link" if len(ids) == 1 else "links"
        print_wrapped(console, text(f"{word} {', '.join(map(str, ids))} {why}",
                                    style=style), 2, 2)
    if bad:
        print_wrapped(console, text("nonzero error counters: " + ", ".join(
            f"link {i} {k}={v}" for i, k, v in bad), style="bold red"), 2, 2)
    console.print()


def _flush(console: Console, batch: List[Any]) -> None:
    """The tables (and blank lines) of ``batch`` in one print, as printing each prints
    them (``grid.Lines``: a Group of them); ``batch`` emptied."""
    if batch:
        from .lines import Lines  # (not for the JSON document: --format json)

        console.print(Lines(list(batch)))
        batch.clear()


def _print_tail(doc: Dict[str, Any], console: Console) -> None:
    """The node's pairs, notes, disagreements and what did not answer."""
    pairs = doc.get("pairs") or []
    if pairs:
        counts = sorted({p["count"] for p in pairs})
        console.print(text(f"{len(pairs)} NVLink-connected GPU pairs (" + ", ".join(
            f"NV{c}" for c in counts) + ")" + (" through NVSwitch" if doc.get("nvswitch")
                                               else "")))
    for n in doc.get("notes") or []:
        if n["code"] in ("nvml.gpu_lost", "nvml.timeout"):
            continue  # said above (the GPU's fault, the incomplete line)
        print_wrapped(console, text(f"note: {n['subject'] + ': ' if n.get('subject') else ''}"
                                    f"{n['message']}",
                                    style="yellow" if n.get("level") == "warning" else "dim"),
                      0, 2)
    for d in doc.get("disagreements") or []:
        console.print(text(f"disagreement: {d['subject']} {d['fact']}: {d['message']}",
                           style="bold yellow"))
    if doc.get("incomplete"):
        inc = doc["incomplete"]
        what = f"NVML did not answer {inc['call']}" if inc.get("call") else \
            "the NVML probe did not finish"
        console.print(text(f"incomplete: {what} before the deadline", style="bold red"))
