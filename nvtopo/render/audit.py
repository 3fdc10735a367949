"""``nvtopo audit`` output: the node table, the summary by finding code, the unreadable files;
the streamed JSON document; Prometheus text exposition."""

from __future__ import annotations

import json
from typing import IO, Any, Dict, Iterable, Iterator, List

from ..audit import SHOWN_NODES, NodeResult, Summary
from ..safe import printable

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


#: Node rows printed per table chunk (the node table streams: rows are not kept).
CHUNK = 50
#: Unreadable files kept for the last section (the count stays exact beyond it).
MAX_UNREADABLE_SHOWN = 1000


class TablePrinter:
    """The node table, printed in chunks as results arrive; then the summary tables.

    Only unreadable files are kept (for their section, at most
    :data:`MAX_UNREADABLE_SHOWN`), so memory does not grow with the fleet.  Column widths are
    fixed from the first chunk, so the chunks line up as one table.
    """

    def __init__(self, console: Any) -> None:
        self.console = console
        self.pending: List[NodeResult] = []
        self.bad: List[NodeResult] = []
        self.nbad = 0
        self.widths: Any = None
        self.printed = 0

    def add(self, r: NodeResult) -> None:
        if r.verdict == "error":
            self.nbad += 1
            if len(self.bad) < MAX_UNREADABLE_SHOWN:
                self.bad.append(compact(r))
            return
        self.pending.append(compact(r))
        if len(self.pending) >= CHUNK:
            self._flush()

    def _flush(self) -> None:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        from .cells import text

        rows, self.pending = self.pending, []
        if not rows:
            return
        if self.widths is None:
            def w(vals: Iterable[str], lo: int, hi: int) -> int:
                return max(lo, min(hi, max((len(v) for v in vals), default=lo)))
            # Verdict (7) and Err/Warn (4 each) always show; File, Host and Layout share
            # what is left of the width with the worst finding (at least 12 columns).
            width = getattr(self.console, "width", 80) or 80
            fixed = 7 + 4 + 4 + 6 * 3  # the three fixed columns; 3 columns between each two
            room = max(30, width - fixed - 16)  # what File, Host, Layout share
            hw = w((printable(r.hostname or "–") for r in rows), 4, min(24, max(4, room // 4)))
            lw = w((printable(r.layout or "–") for r in rows), 6, min(20, max(6, room // 4)))
            fw = w((printable(r.file) for r in rows), 4, max(12, min(60, room - hw - lw)))
            self.widths = (fw, hw, lw)
            self.console.print(Text("Nodes", style="bold italic"))
        fw, hw, lw = self.widths
        t = Table(box=box.SIMPLE_HEAD, show_edge=False, show_header=self.printed == 0,
                  expand=False, pad_edge=False)
        t.add_column("File", width=fw, no_wrap=True)
        t.add_column("Host", width=hw, no_wrap=True, overflow="ellipsis")
        t.add_column("Layout", width=lw, no_wrap=True, overflow="ellipsis")
        t.add_column("Verdict", width=7, min_width=7, no_wrap=True)
        t.add_column("Err", width=4, min_width=3, justify="right", no_wrap=True)
        t.add_column("Warn", width=4, min_width=4, justify="right", no_wrap=True)
        t.add_column("Worst finding", min_width=12, ratio=1)
        for r in rows:
            worst: Any = "–"
            if r.worst is not None:
                sev, code, subject, _message = r.worst
                more = r.errors + r.warnings - 1
                worst = Text.assemble((printable(code), "red" if sev == "error" else "yellow"),
                                      printable(f" {subject}"),
                                      (f" (+{more} more)" if more else "", "dim"))
            t.add_row(Text(_tail(printable(r.file), fw)), text(r.hostname or "–"),
                      text(r.layout or "–"),
                      Text(r.verdict.upper(), style=VERDICT_STYLE[r.verdict]),
                      str(r.errors), str(r.warnings), worst)
        self.console.print(t)
        self.printed += len(rows)

    def finish(self, summary: Summary) -> None:
        from rich.table import Table
        from rich.text import Text

        from .cells import text

        self._flush()
        console = self.console
        bad = self.bad
        doc = summary.to_dict()
        if doc["codes"]:
            t = Table(title="Findings by code", title_justify="left", expand=False)
            t.add_column("Code", no_wrap=True)
            t.add_column("Severity", no_wrap=True)
            t.add_column("Nodes", justify="right")
            t.add_column(f"Which (first {SHOWN_NODES})", ratio=1)
            for c in doc["codes"]:
                which = ", ".join(c["shown"]) + (f", … +{c['more']} more" if c["more"] else "")
                t.add_row(text(c["code"], style="red" if c["severity"] == "error" else "yellow"),
                          text(c["severity"]), text(c["nodes"]), text(which))
            console.print(t)
        if bad:
            t = Table(title=f"Could not be read ({self.nbad})", title_justify="left", expand=False,
                      title_style="yellow")
            t.add_column("File", overflow="fold")
            t.add_column("Reason", ratio=1)
            for r in bad:
                t.add_row(text(r.file), text(r.reason or ""))
            if self.nbad > len(bad):
                t.add_row(f"… and {self.nbad - len(bad)} more", "(--format json lists every file)")
            console.print(t)
        line = Text(f"AUDIT: {doc['files']} file(s) · ", style="bold")
        line.append(f"{doc['pass']} pass", style="bold green")
        line.append(" · ")
        line.append(f"{doc['fail']} fail", style="bold red" if doc["fail"] else "bold")
        line.append(" · ")
        line.append(f"{doc['unreadable']} unreadable",
                    style="bold yellow" if doc["unreadable"] else "bold")
        if doc["checked"] == 0:
            line.append("  (nothing could be checked)", style="bold yellow")
        console.print(line)
        if doc["rederived"]:
            n = doc["rederived"]
            console.print(Text(
                f"note: {n} snapshot{'s' if n != 1 else ''} carried no model cache this nvtopo "
                "can use (none, or written by another nvtopo version or build, or edited since) "
                "and "
                f"{'were' if n != 1 else 'was'} re-derived from the evidence, several times "
                "slower; `nvtopo snapshot --from FILE -o FILE` gives a snapshot a fresh cache",
                style="dim"))



def _tail(path: str, width: int) -> str:
    """``path`` in ``width`` columns: its end kept (the file name tells the nodes apart)."""
    return path if len(path) <= width else "…" + path[len(path) - width + 1:]


def print_audit(rows: Iterable[NodeResult], summary: Summary, console: Any) -> None:
    """The whole table output for results already at hand (``summary`` already holds them)."""
    printer = TablePrinter(console)
    for r in rows:
        printer.add(r)
    printer.finish(summary)

# --- JSON (streamed) ----------------------------------------------------------------------


def stream_json(results: Iterable[NodeResult], summary: Summary, out: IO[str]) -> None:
    """Write ``{"nodes": [...], "summary": {...}}`` one node at a time (nothing is kept)."""
    out.write('{"nodes": [')
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
    return printable(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


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

