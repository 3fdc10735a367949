"""One answer of a check: :class:`Finding`, made with :func:`finding`."""

from __future__ import annotations

from ..plain import field, plain
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence

from ..errors import ExitStatus

from .subject import Subject

SEVERITIES = ("error", "warning", "info")


@plain
class Finding:
    """One answer of a check.

    ``code`` is stable, with a domain prefix (``nvlink.link_down``);
    ``subject`` is what it is about (a :class:`~nvtopo.checks.subject.Subject`: shown as
    ``GPU3 link 7``, ``GPU2-GPU6``, ``mlx5_4 port 1``, ``GPU5``, ``node``); ``source`` the
    evidence (which probe said it: ``nvml``, ``sysfs``, ``topo-text``, or several;
    ``cluster`` for a cross-node finding).  A cross-node finding (``nvtopo cluster``) also
    names its ``nodes`` (the first few, sorted) and ``node_count`` (how many in all); a node's
    finding has ``nodes`` None.
    """

    severity: str
    code: str
    subject: Subject
    message: str
    expected: Any = None
    actual: Any = None
    hint: str = ""
    source: str = ""
    #: Subjects whose other findings this one explains (not serialised).
    covers: FrozenSet[Subject] = field(default_factory=frozenset)
    #: The nodes a cross-node finding is about (the first few, sorted); None for a node's.
    nodes: Optional[List[str]] = None
    #: How many nodes a cross-node finding is about, in all.
    node_count: int = 0

    def to_dict(self) -> Dict[str, Any]:
        d = {"severity": self.severity, "code": self.code, "subject": str(self.subject),
             "expected": self.expected, "actual": self.actual, "message": self.message,
             "hint": self.hint, "source": self.source}
        if self.nodes is not None:
            d["nodes"] = list(self.nodes)
            d["node_count"] = self.node_count
        return d


def finding(severity: str, code: str, subject: Subject, message: str, *, expected: Any = None,
            actual: Any = None, hint: str = "", source: str = "",
            covers: Sequence[Subject] = ()) -> Finding:
    assert severity in SEVERITIES, severity
    assert isinstance(subject, Subject), subject
    covered = frozenset(covers)
    assert all(isinstance(c, Subject) for c in covered), covers
    return Finding(severity=severity, code=code, subject=subject, message=message,
                   expected=expected, actual=actual, hint=hint, source=source,
                   covers=covered)


def verdict(findings: Iterable[Finding]) -> str:
    """``fail`` when any finding is an error, else ``pass`` (warnings and infos pass): the
    verdict of ``check``, of each node of ``audit``, of ``cluster``, of each side of ``diff``."""
    return "fail" if any(f.severity == "error" for f in findings) else "pass"


def exit_status(verdict_: Optional[str]) -> int:
    """The one exit-status rule of every command that judges: ``None`` (nothing could be
    read or checked) -> 2, ``fail`` (an error finding; a failing node; for ``diff``,
    something changed) -> 1, else 0."""
    if verdict_ is None:
        return int(ExitStatus.ERROR)
    return int(ExitStatus.FINDINGS if verdict_ == "fail" else ExitStatus.OK)


def demote(severity: str, inferred: bool) -> str:
    """An expectation whose evidence is only ``[I]`` gives at most a warning: the catalog's
    ladder (:func:`nvtopo.checks.catalog.cap`) for a severity written at the call site."""
    from .catalog import cap

    return cap(severity, "inferred" if inferred else "observed")
