"""One cross-node answer: a :class:`~nvtopo.checks.findings.Finding` (the one type of
``check``, ``audit``, ``diff`` and ``cluster``) about a typed cross-node subject
(:func:`~nvtopo.checks.subject.host`, ``rail``, ``domain``, ``fleet``), with the nodes it is
about (the first :data:`SHOWN` of them, and how many in all) and ``source`` ``cluster``."""

from __future__ import annotations

from typing import Any, Iterable, List

from ...checks.findings import SEVERITIES, Finding
from ...checks.subject import Subject

#: How many node names one finding lists (the count is exact).
SHOWN = 20


def make(severity: str, code: str, subject: Subject, message: str, nodes: Iterable[str], *,
         expected: Any = None, actual: Any = None, hint: str = "") -> Finding:
    assert severity in SEVERITIES, severity
    assert isinstance(subject, Subject), subject
    names = sorted(set(nodes))
    return Finding(severity=severity, code=code, subject=subject, message=message,
                   expected=expected, actual=actual, hint=hint, source="cluster",
                   nodes=names[:SHOWN], node_count=len(names))


def named(nodes: List[str]) -> str:
    """``a, b, c`` or ``a, b, c and 17 more``."""
    names = sorted(set(nodes))
    head = ", ".join(names[:5])
    return head + (f" and {len(names) - 5} more" if len(names) > 5 else "")


__all__ = ["make", "named", "SHOWN"]
