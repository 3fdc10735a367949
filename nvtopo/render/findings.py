"""The one findings view, shared by ``check``, ``diff``, ``audit`` and ``cluster``.

Findings by severity (errors, warnings, then the ``info`` notes), each one compact row:
code, subject, expected → actual; its explanation and hint as wrapped text beneath; a hint
shared by several findings printed once for the group (``→ (all 3 above) …``); ``brief``
for one line per finding; the ``info`` notes ("not checked") collapsed to one line naming
their families unless ``verbose``.  Laid out for the console's width by
:func:`.layout.print_wrapped` (no identifier cut).

A finding is a :class:`nvtopo.checks.Finding` or its JSON form (a dict with ``severity``,
``code``, ``subject``, ``message`` and, where known, ``expected``, ``actual``, ``hint``):
fleet views hand their own (a code over N nodes) in the same form (:func:`as_finding`).
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence

from .cells import text
from .layout import print_wrapped, value

if TYPE_CHECKING:
    from rich.console import Console

#: Severity -> style of its code and heading.  Red is for faults only (errors).
STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
TITLE = {"error": "Errors", "warning": "Warnings", "info": "Not checked / notes"}
#: Indentation of a finding's row, and of its explanation and hint beneath it.
ROW_INDENT = 2
TEXT_INDENT = 6
_FIELDS = ("severity", "code", "subject", "message", "expected", "actual", "hint")


def as_finding(f: Any) -> Any:
    """``f`` with the attributes the view reads: a dict (a finding's JSON form, a fleet
    view's row) becomes an object; anything else is taken as it is."""
    if isinstance(f, dict):
        return SimpleNamespace(**{k: f.get(k) for k in _FIELDS})
    return f


def _row(f: Any, sev: str) -> Any:
    from rich.text import Text

    row = Text.assemble(text(f.code, STYLE[sev]), "  ", text(str(f.subject), "bold"))
    if sev != "info" and (f.expected is not None or f.actual is not None):
        row.append("  ")
        row.append_text(text(value(f.expected)))
        row.append(" → ")
        row.append_text(text(value(f.actual), STYLE[sev]))
    return row


def _grouped(group: Sequence[Any]) -> List[List[Any]]:
    """Findings with the same hint side by side (in order of first appearance)."""
    order: Dict[str, List[Any]] = {}
    out: List[List[Any]] = []
    for f in group:
        key = f.hint or ""
        if key and key in order:
            order[key].append(f)
            continue
        bucket = [f]
        out.append(bucket)
        if key:
            order[key] = bucket
    return out


_GPU_SUBJECT = re.compile(r"GPU([0-9]{1,4})\b")


def known_gpu(hint: str, bucket: Sequence[Any]) -> str:
    """A hint's placeholder GPU index (``nvidia-smi nvlink -s -i N``) made the GPU the
    findings are about: ``-i 3`` for GPU3; several GPUs: ``-i N (N: 3, 5)``."""
    if "-i N" not in hint:
        return hint
    gpus: List[str] = []
    for f in bucket:
        m = _GPU_SUBJECT.match(str(f.subject))
        if m is None:
            return hint
        if m.group(1) not in gpus:
            gpus.append(m.group(1))
    if len(gpus) == 1:
        return hint.replace("-i N", f"-i {gpus[0]}")
    return hint.replace("-i N", f"-i N (N: {', '.join(gpus)})", 1)


def _unchecked(notes: Sequence[Any], findings: Sequence[Any]) -> str:
    """The families of the "not checked" notes, in one line.  A family that also has an
    error or a warning above is named last as its *other* facts (``other ib facts``): right
    after ``ib.port_down``, a bare "not checked: ib" read as if the port had not been."""
    faulted = set(families(f for f in findings if f.severity in ("error", "warning")))
    fams = families(notes)
    plain = [f for f in fams if f not in faulted]
    other = [f for f in fams if f in faulted]
    words = plain + ([f"other {' and '.join(other)} facts"] if other else [])
    return ", ".join(words)


def families(findings: Iterable[Any]) -> List[str]:
    """The check families (the code's domain prefix) of ``findings``, in order, once each."""
    seen: List[str] = []
    for f in findings:
        fam = f.code.split(".", 1)[0]
        if fam not in seen:
            seen.append(fam)
    return seen


def print_findings(findings: Sequence[Any], console: "Console", *, brief: bool = False,
                   verbose: bool = False, titles: Optional[Dict[str, str]] = None) -> None:
    """Findings by severity (errors, warnings, notes), laid out for ``console.width``;
    ``titles``: the severities' headings where the default (``Errors (3)``) is not right."""
    from rich.text import Text

    findings = [as_finding(f) for f in findings]
    heads = dict(TITLE, **(titles or {}))
    shown_hints: Dict[str, str] = {}
    for sev in ("error", "warning", "info"):
        group = [f for f in findings if f.severity == sev]
        if not group:
            continue
        if sev == "info" and not verbose:
            print_wrapped(console, Text.assemble(
                (f"Not checked ({len(group)}): ", "bold"),
                text(_unchecked(group, findings)),
                ("  (-v lists them)", "dim")), 0, 2)
            continue
        console.print(Text(f"{heads[sev]} ({len(group)})", style=STYLE[sev] + " underline"
                           if sev != "info" else "bold"))
        for bucket in _grouped(group):
            for f in bucket:
                print_wrapped(console, _row(f, sev), ROW_INDENT, 2)
                if not brief and f.message:
                    print_wrapped(console, text(f.message), TEXT_INDENT)
            hint = bucket[0].hint
            if brief or not hint or sev == "info":
                continue
            if hint in shown_hints:
                print_wrapped(console, Text.assemble(
                    ("→ as for ", "dim"), text(shown_hints[hint], "dim"), (" above", "dim")),
                    TEXT_INDENT, 2)
                continue
            shown_hints[hint] = str(bucket[0].subject)
            hint = known_gpu(hint, bucket)
            lead = "→ " if len(bucket) == 1 else f"→ (all {len(bucket)} above) "
            if len(bucket) == 2:
                lead = "→ (both above) "
            print_wrapped(console, Text.assemble((lead, "dim"), text(hint, "dim")),
                          TEXT_INDENT, 2)


__all__ = ["STYLE", "TITLE", "as_finding", "families", "known_gpu", "print_findings"]
