"""``nvtopo diff`` output: the changes between two snapshots, then the verdicts."""

from __future__ import annotations

from typing import Any, Dict, List

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .cells import printable, text
from .check import _val
from .findings import TITLE, print_findings
from .layout import Fitted


def print_diff(doc: Dict[str, Any], console: Console) -> None:
    a, b = doc["a"], doc["b"]
    console.print(Text.assemble(("Diff: ", "bold"), printable(a["file"]),
                                printable(f" ({a['hostname'] or '?'})"), " → ",
                                printable(b["file"]), printable(f" ({b['hostname'] or '?'})")))
    for w in doc["warnings"]:
        console.print(text("warning: " + w, style="yellow"))
    changes: List[Dict[str, Any]] = doc["changes"]
    if changes:
        t = Table(title=f"Changes ({len(changes)})", title_justify="left", expand=False)
        t.add_column("Kind", no_wrap=True, style="cyan")
        t.add_column("Subject", no_wrap=True)
        t.add_column("Before")
        t.add_column("After")
        t.add_column("What", ratio=1)
        for c in changes:
            t.add_row(text(c["kind"]), text(c["subject"]), text(_val(c["before"])),
                      text(_val(c["after"])), text(c["message"]))
        console.print(Fitted(t))
    v = doc["verdict"]
    line = Text("Verdict: ", style="bold")
    for side in ("before", "after"):
        val = v.get(side) or "–"
        line.append(printable(val.upper()), style="bold red" if val == "fail" else "bold green"
                    if val == "pass" else "dim")
        line.append(printable(f" ({v.get('layout_' + side) or 'no data'})"))
        if side == "before":
            line.append(" → ")
    nc = (doc.get("sources") or {}).get("not_compared") or {}
    if nc:
        line.append(printable(f"  (not comparable: {_sources(nc)})"), style="yellow")
    console.print(line)
    for key, title in (("new", "New"), ("resolved", "Resolved"),
                       ("unconfirmed", "Not compared (evidence on one side only):")):
        group = v.get(key) or []
        if not group:
            continue
        if key == "unconfirmed":
            group = [dict(f, subject=f"{f['subject']} ({f.get('side', '')})") for f in group]
        print_findings(group, console, verbose=True,
                       titles={s: f"{title} {TITLE[s].lower()}" for s in TITLE})
    compared = (doc.get("sources") or {}).get("compared") or []
    scope = ""
    if nc:
        scope = (f" in what both recorded (compared: {', '.join(compared) or 'nothing'}; "
                 f"not compared: {', '.join(nc)})")
    if doc["changed"]:
        console.print(text(f"CHANGED: {len(changes)} change(s)"
                           + (f", verdict {v.get('before')} → {v.get('after')}"
                              + (" (not comparable: evidence missing on one side)" if nc else "")
                              if v.get("before") != v.get("after") else "") + scope,
                           style="bold red"))
    else:
        console.print(text("NO CHANGE" + scope, style="bold yellow" if nc else "bold green"))


def _sources(nc: Dict[str, str]) -> str:
    return "; ".join(f"{s} {why}" for s, why in nc.items())
