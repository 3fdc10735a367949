"""One cross-node answer: :class:`ClusterFinding`, in ``check``'s form plus the nodes it is
about (the first :data:`SHOWN` of them, and how many in all)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List

#: How many node names one finding lists (the count is exact).
SHOWN = 20


@dataclass
class ClusterFinding:
    severity: str
    code: str
    subject: str
    message: str
    expected: Any = None
    actual: Any = None
    hint: str = ""
    nodes: List[str] = field(default_factory=list)
    node_count: int = 0

    def to_dict(self) -> Dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "subject": self.subject,
                "expected": self.expected, "actual": self.actual, "message": self.message,
                "hint": self.hint, "source": "cluster", "nodes": list(self.nodes),
                "node_count": self.node_count}


def make(severity: str, code: str, subject: str, message: str, nodes: Iterable[str], *,
         expected: Any = None, actual: Any = None, hint: str = "") -> ClusterFinding:
    assert severity in ("error", "warning", "info"), severity
    names = sorted(set(nodes))
    return ClusterFinding(severity=severity, code=code, subject=subject, message=message,
                          expected=expected, actual=actual, hint=hint,
                          nodes=names[:SHOWN], node_count=len(names))


def named(nodes: List[str]) -> str:
    """``a, b, c`` or ``a, b, c and 17 more``."""
    names = sorted(set(nodes))
    head = ", ".join(names[:5])
    return head + (f" and {len(names) - 5} more" if len(names) > 5 else "")


__all__ = ["ClusterFinding", "make", "named", "SHOWN"]
