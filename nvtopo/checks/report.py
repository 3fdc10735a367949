"""The outcome of ``nvtopo check``: :class:`Report`.

Everything decided about a check is decided here, once: the verdict, the counts by
severity, the worst finding, the GPUs reported missing, the exit status, and the JSON
document.  Renderers (``render/check.py``, ``render/svg``, ``render/prometheus.py``,
``nvtopo audit``) draw a report; they do not recompute any of it.
"""

from __future__ import annotations

from ..plain import field, plain
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .findings import SEVERITIES, Finding, exit_status, verdict

#: Codes whose GPU subject is absent from the node (the picture draws a placeholder).
MISSING_CODES = ("gpu.missing", "gpu.lost")


@plain(frozen=True, eq=False)
class Report:
    """The findings of one check, in report order, and what they add up to.

    ``layout_name``: the layout checked against (``none`` when no layout fits);
    ``reason``: why that layout; ``mapping``: node GPU index -> layout GPU index where the
    layout was renumbered; ``layout``: the :class:`nvtopo.layouts.Layout` itself (None when
    none).  ``verdict`` and ``counts`` are computed from the findings when the report is
    made.
    """

    layout_name: str
    reason: str
    findings: Tuple[Finding, ...]
    mapping: Optional[Mapping[int, int]] = None
    layout: Optional[Any] = None
    verdict: str = field(init=False)
    #: severity -> how many findings (every severity present, zeros included).
    counts: Mapping[str, int] = field(init=False)

    def __post_init__(self) -> None:
        found = tuple(self.findings)
        counts = {s: 0 for s in SEVERITIES}
        for f in found:
            counts[f.severity] += 1
        object.__setattr__(self, "findings", found)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "verdict", verdict(found))

    @property
    def not_checked(self) -> Tuple[Finding, ...]:
        """The ``info`` findings: what the input did not let the checks decide."""
        return tuple(f for f in self.findings if f.severity == "info")

    @property
    def worst(self) -> Optional[Finding]:
        """The first error, else the first warning, else None."""
        for sev in ("error", "warning"):
            for f in self.findings:
                if f.severity == sev:
                    return f
        return None

    @property
    def missing_gpus(self) -> List[int]:
        """GPU indices an error or warning says are missing or lost, ascending."""
        out = {i for f in self.findings if f.code in MISSING_CODES
               and f.severity != "info" and f.subject.kind == "gpu" for i in f.subject.gpus}
        return sorted(out)

    @property
    def exit_status(self) -> int:
        """``nvtopo check``'s exit status: 1 (findings) on a fail, else 0
        (:func:`~nvtopo.checks.findings.exit_status`)."""
        return exit_status(self.verdict)

    def document(self) -> Dict[str, Any]:
        """The JSON document of ``nvtopo check --format json`` (docs/json.md)."""
        doc: Dict[str, Any] = {"layout": self.layout_name, "layout_reason": self.reason,
                               "verdict": self.verdict,
                               "findings": [f.to_dict() for f in self.findings]}
        if self.mapping:
            doc["layout_mapping"] = {f"GPU{k}": v for k, v in sorted(self.mapping.items())}
        return doc
