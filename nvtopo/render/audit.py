"""``nvtopo audit`` output: the node table, the summary by finding code, the unreadable files;
the streamed JSON document; Prometheus text exposition."""

from __future__ import annotations

import json
from typing import IO, Any, Dict, Iterable, Iterator, List

from ..audit import SHOWN_NODES, NodeResult, Summary
from ..safe import printable, reversible

#: Version of the ``nvtopo audit --format json`` document (docs/json.md).
AUDIT_SCHEMA_VERSION = 1

VERDICT_STYLE = {"pass": "green", "fail": "bold red", "error": "yellow"}


def compact(r: NodeResult, keep_codes: bool = False) -> NodeResult:
    """The row kept per node: no findings; the ``(severity, code, subject)`` triples only
    where the output needs them (Prometheus: one series per finding)."""
    if not keep_codes:
        r.codes = ()
    r.findings = None
    if r.worst is not None:
        sev, code, subject, message = r.worst
        r.worst = (sev, code, subject, message if len(message) <= 160 else message[:157] + "…")
    return r


# --- table ------------------------------------------------------------------------------


#: Unreadable files kept for the last section (the count stays exact beyond it).
MAX_UNREADABLE_SHOWN = 1000
#: Verdict order of the node table: failing nodes first.
VERDICT_ORDER = {"fail": 0, "pass": 1}


def _newer(a: NodeResult, b: NodeResult) -> bool:
    """Whether ``a`` is a later snapshot of its host than ``b``: by the file's modification
    time, then by its name."""
    import os

    def key(r: NodeResult) -> Any:
        try:
            mtime = os.stat(r.file).st_mtime
        except OSError:
            mtime = 0.0
        return (mtime, r.file)
    return bool(key(a) > key(b))


def _common_dir(files: List[str]) -> str:
    """The directory every one of ``files`` lies under, with its trailing ``/`` ("" when
    none, or when only one file is listed: its path is shown whole)."""
    import os

    if len(files) < 2:
        return ""
    try:
        common = os.path.commonpath(files)
    except ValueError:  # mixed absolute and relative paths
        return ""
    if not common or common in files:
        return ""
    return common.rstrip("/") + "/"


class TablePrinter:
    """The node table, printed when every result is in; then the summary tables.

    Rows are kept compact (no findings): by default one per host (its latest snapshot,
    :func:`_newer`; files without a hostname each count as their own host), every file with
    ``all_snapshots``; with ``failed`` only failing nodes are kept.  So memory grows with
    the hosts shown, not with the files read.  The table is sorted by verdict (failing
    first) then host, and its host column is as wide as the hosts (never cut).
    """

    def __init__(self, console: Any, *, failed: bool = False,
                 all_snapshots: bool = False) -> None:
        self.console = console
        self.failed = failed
        self.all_snapshots = all_snapshots
        self.rows: Dict[Any, NodeResult] = {}
        self.older: Dict[Any, int] = {}
        self.hidden_pass = 0
        self.bad: List[NodeResult] = []
        self.nbad = 0
        self.count = 0

    def add(self, r: NodeResult) -> None:
        if r.verdict == "error":
            self.nbad += 1
            if len(self.bad) < MAX_UNREADABLE_SHOWN:
                self.bad.append(compact(r))
            return
        self.count += 1
        host = r.node or r.hostname  # the engine's name first (collect.json)
        key: Any = (host if host and not self.all_snapshots else ("file", r.file, self.count))
        old = self.rows.get(key)
        if old is not None:
            self.older[key] = self.older.get(key, 0) + 1
            if not _newer(r, old):
                return
        self.rows[key] = compact(r)

    def _print_nodes(self) -> None:
        from rich.table import Table
        from rich.text import Text

        from .cells import text
        from .layout import fit, print_wrapped

        items = list(self.rows.items())
        if self.failed:
            self.hidden_pass = sum(1 for _, r in items if r.verdict == "pass")
            items = [(k, r) for k, r in items if r.verdict != "pass"]
        if not items:
            self._print_hidden()
            return
        items.sort(key=lambda kr: (VERDICT_ORDER.get(kr[1].verdict, 2),
                                   printable(kr[1].node or kr[1].hostname or "~"),
                                   kr[1].file))
        older = any(self.older.get(k) for k, _ in items)
        base = _common_dir([r.file for _, r in items])
        layouts = {r.layout for _, r in items}
        one_layout = len(layouts) == 1
        head = Text("Nodes", style="bold italic")
        if one_layout:
            head.append_text(Text.assemble(" · layout ", text(next(iter(layouts)) or "–")))
        if base:
            head.append_text(Text.assemble(" · files under ", text(base)))
        print_wrapped(self.console, head, 0, 2)
        t = Table(box=None, show_edge=False, expand=False, pad_edge=False,
                  padding=(0, 1, 0, 0), header_style="bold underline")
        t.add_column("Host", no_wrap=True)
        t.add_column("Verdict", no_wrap=True)
        t.add_column("Err", justify="right", no_wrap=True)
        t.add_column("Warn", justify="right", no_wrap=True)
        t.add_column("Worst finding")
        if not one_layout:
            t.add_column("Layout", no_wrap=True)
        t.add_column("File", no_wrap=True)
        if older:
            t.add_column("Older", justify="right", no_wrap=True)
        for k, r in items:
            worst: Any = "–"
            if r.worst is not None:
                sev, code, subject, _message = r.worst
                more = r.errors + r.warnings - 1
                worst = Text.assemble((printable(code), "red" if sev == "error" else "yellow"),
                                      printable(f" {subject}"),
                                      (f" (+{more} more)" if more else "", "dim"))
            row = [text(r.node or r.hostname or "–"),
                   Text(r.verdict.upper(), style=VERDICT_STYLE[r.verdict]),
                   str(r.errors), str(r.warnings), worst]
            if not one_layout:
                row.append(text(r.layout or "–"))
            row.append(text(r.file[len(base):] if base else r.file))
            if older:
                row.append(str(self.older.get(k, 0) or ""))
            t.add_row(*row)
        self.console.print(fit(t, getattr(self.console, "width", 80) or 80))
        self._print_hidden()

    def _print_hidden(self) -> None:
        """The one line that counts the passing nodes left out of the table."""
        from rich.text import Text

        from .layout import print_wrapped

        n = self.hidden_pass
        if n:
            print_wrapped(self.console, Text(
                f"{n} passing node{'s' if n != 1 else ''} not listed (--all lists every "
                "node)", style="green"), 0, 2)

    def finish(self, summary: Summary) -> None:
        """The verdict line, the findings by code (the view ``check`` draws), the nodes
        (failing first), the files that could not be read, then the notes."""
        from .layout import print_wrapped

        doc = summary.to_dict()
        print_wrapped(self.console, _verdict_line(doc), 0, 2)
        if doc["codes"]:
            from .findings import print_findings

            print_findings([_code_finding(c) for c in doc["codes"]], self.console)
        self._print_nodes()
        self._print_unreadable()
        self._print_notes(doc)

    def _print_unreadable(self) -> None:
        from rich.table import Table

        from .cells import text
        from .layout import fit

        bad = self.bad
        if not bad:
            return
        t = Table(title=f"Could not be read ({self.nbad})", title_justify="left", expand=False,
                  title_style="yellow")
        t.add_column("File", no_wrap=True)
        t.add_column("Reason", ratio=1)
        for r in bad:
            t.add_row(text(r.file), text(r.reason or ""))
        if self.nbad > len(bad):
            t.add_row(f"… and {self.nbad - len(bad)} more", "(--format json lists every file)")
        self.console.print(fit(t, getattr(self.console, "width", 80) or 80))

    def _print_notes(self, doc: Dict[str, Any]) -> None:
        from rich.text import Text

        from .layout import print_wrapped

        shown = []
        folded = sum(self.older.values())
        if folded and not self.all_snapshots:
            shown.append(f"{folded} older snapshot{'s' if folded != 1 else ''} of the same "
                         "hosts not listed (the latest per host is; --all-snapshots lists "
                         "every file)")
        for s in shown:
            print_wrapped(self.console, Text("note: " + s, style="dim"), 0, 2)
        if doc["rederived"]:
            n = doc["rederived"]
            print_wrapped(self.console, Text(
                f"note: {n} snapshot{'s' if n != 1 else ''} carried no model cache this nvtopo "
                "can use (none, or written by another nvtopo version or build, or edited since) "
                "and "
                f"{'were' if n != 1 else 'was'} re-derived from the evidence, several times "
                "slower; `nvtopo snapshot --from FILE -o FILE` gives a snapshot a fresh cache",
                style="dim"), 0, 2)


def _verdict_line(doc: Dict[str, Any]) -> Any:
    """``AUDIT: FAIL · 300 file(s) · 260 pass · 40 fail · 0 unreadable``: the answer first."""
    from rich.text import Text

    verdict = "FAIL" if doc["fail"] else "PASS" if doc["checked"] else "NOTHING CHECKED"
    line = Text("AUDIT: ", style="bold")
    line.append(verdict, style="bold red" if doc["fail"] else "bold green"
                if doc["checked"] else "bold yellow")
    line.append(f" · {doc['files']} file(s) · ", style="bold")
    line.append(f"{doc['pass']} pass", style="bold green")
    line.append(" · ")
    line.append(f"{doc['fail']} fail", style="bold red" if doc["fail"] else "bold")
    line.append(" · ")
    line.append(f"{doc['unreadable']} unreadable",
                style="bold yellow" if doc["unreadable"] else "bold")
    return line


def _code_finding(c: Dict[str, Any]) -> Dict[str, Any]:
    """A finding code over the fleet in the form of a node's finding: the subject is the
    number of nodes, the text names the first of them."""
    which = ", ".join(c["shown"]) + (f", … +{c['more']} more" if c["more"] else "")
    n = c["nodes"]
    return {"severity": c["severity"], "code": c["code"],
            "subject": f"{n} node{'s' if n != 1 else ''}", "message": which}


# --- JSON (streamed) ----------------------------------------------------------------------


def stream_json(results: Iterable[NodeResult], summary: Summary, out: IO[str]) -> None:
    """Write ``{"schema_version": 1, "nodes": [...], "summary": {...}}`` one node at a time (nothing is kept)."""
    out.write('{"schema_version": %d, "nodes": [' % AUDIT_SCHEMA_VERSION)
    first = True
    for r in results:
        summary.add(r)
        out.write(("\n  " if first else ",\n  ") + json.dumps(r.to_dict()))
        first = False
    out.write(("\n" if not first else "") + '],\n "summary": '
              + json.dumps(summary.to_dict(), indent=2).replace("\n", "\n ") + "}\n")
    out.flush()


# --- Prometheus text exposition --------------------------------------------------------------


def _esc(v: Any) -> str:
    return reversible(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(d: Dict[str, Any]) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in d.items() if v is not None) + "}"


def prometheus_lines(rows: List[NodeResult], summary: Summary) -> Iterator[str]:
    """Per-node verdict gauges and fleet counts, ``nvtopo_`` prefix, HELP/TYPE per family."""
    checked = [r for r in rows if r.verdict != "error"]

    def node(r: NodeResult) -> Dict[str, Any]:
        return {"file": r.file, "hostname": r.hostname or "", "layout": r.layout or "none"}

    def family(name: str, help_: str) -> Iterator[str]:
        yield f"# HELP {name} {help_}"
        yield f"# TYPE {name} gauge"

    yield from family("nvtopo_audit_node_pass",
                      "1 when the node's snapshot has no error finding (nvtopo check passes), "
                      "0 when it fails.")
    for r in checked:
        yield f"nvtopo_audit_node_pass{_labels(node(r))} {1 if r.verdict == 'pass' else 0}"
    yield from family("nvtopo_audit_node_findings",
                      "Findings of the node's snapshot by severity (error, warning).")
    for r in checked:
        for sev, n in (("error", r.errors), ("warning", r.warnings)):
            yield f"nvtopo_audit_node_findings{_labels({**node(r), 'severity': sev})} {n}"
    yield from family("nvtopo_audit_file_unreadable",
                      "1 for each input file that could not be read or checked.")
    for r in rows:
        if r.verdict == "error":
            yield f"nvtopo_audit_file_unreadable{_labels({'file': r.file})} 1"
    doc = summary.to_dict()
    yield from family("nvtopo_audit_nodes", "Input files by verdict (pass, fail, error).")
    for v in ("pass", "fail", "error"):
        yield f'nvtopo_audit_nodes{{verdict="{v}"}} {summary.verdicts.get(v, 0)}'
    yield from family("nvtopo_audit_code_nodes",
                      "Nodes with at least one finding of this code.")
    for c in doc["codes"]:
        yield (f"nvtopo_audit_code_nodes{_labels({'code': c['code'], 'severity': c['severity']})}"
               f" {c['nodes']}")


def print_prometheus(rows: List[NodeResult], summary: Summary, out: IO[str]) -> None:
    """Per node, the families of ``nvtopo check --format prometheus`` (its renderer,
    :mod:`nvtopo.render.prometheus`, labelled by file and hostname), plus the fleet's
    ``nvtopo_audit_*`` families; without that renderer, :func:`prometheus_lines`."""
    try:
        from . import prometheus as prom
    except ImportError:
        prom = None  # type: ignore[assignment]
    if prom is None:
        for line in prometheus_lines(rows, summary):
            out.write(line + "\n")
    else:
        out.write(prom.exposition(prometheus_families(rows, summary, prom)))
    out.flush()


def prometheus_families(rows: List[NodeResult], summary: Summary, prom: Any) -> List[Any]:
    nodes = []
    for r in rows:
        if r.verdict == "error":
            continue
        check = prom.CheckSummary(layout=r.layout, verdict=r.verdict,
                                  counts={"error": r.errors, "warning": r.warnings,
                                          "info": r.infos},
                                  findings=r.codes)
        nodes.append(prom.NodeMetrics(check=check, labels={"file": r.file,
                                                           "hostname": r.hostname or ""}))
    fams = prom.node_families(nodes)
    unreadable = prom.Family("nvtopo_audit_file_unreadable",
                             "1 for each input file that could not be read or checked.")
    for r in rows:
        if r.verdict == "error":
            unreadable.add({"file": r.file}, 1)
    verdicts = prom.Family("nvtopo_audit_nodes", "Input files by verdict (pass, fail, error).")
    for v in ("pass", "fail", "error"):
        verdicts.add({"verdict": v}, summary.verdicts.get(v, 0))
    codes = prom.Family("nvtopo_audit_code_nodes", "Nodes with at least one finding of this code.")
    for c in summary.to_dict()["codes"]:
        codes.add({"code": c["code"], "severity": c["severity"]}, c["nodes"])
    return list(fams) + [unreadable, verdicts, codes]

