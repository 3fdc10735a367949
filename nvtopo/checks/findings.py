"""One answer of a check: :class:`Finding`, made with :func:`finding`."""

from __future__ import annotations

from ..plain import field, plain
from typing import Any, Dict, FrozenSet, Sequence

from .subject import Subject

SEVERITIES = ("error", "warning", "info")


@plain
class Finding:
    """One answer of a check.

    ``code`` is stable, with a domain prefix (``nvlink.link_down``);
    ``subject`` is what it is about (a :class:`~nvtopo.checks.subject.Subject`: shown as
    ``GPU3 link 7``, ``GPU2-GPU6``, ``mlx5_4 port 1``, ``GPU5``, ``node``); ``source`` the
    evidence (which probe said it: ``nvml``, ``sysfs``, ``topo-text``, or several).
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

    def to_dict(self) -> Dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "subject": str(self.subject),
                "expected": self.expected, "actual": self.actual, "message": self.message,
                "hint": self.hint, "source": self.source}


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


def demote(severity: str, inferred: bool) -> str:
    """An expectation whose evidence is only ``[I]`` gives at most a warning: the catalog's
    ladder (:func:`nvtopo.checks.catalog.cap`) for a severity written at the call site."""
    from .catalog import cap

    return cap(severity, "inferred" if inferred else "observed")
