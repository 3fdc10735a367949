"""Sources that disagree: two probes said different things about the same fact."""

from __future__ import annotations

from typing import Any, List, Optional

from ..model import Topology
from . import Finding, finding


def check(topo: Topology, layout: Optional[Any]) -> List[Finding]:
    out: List[Finding] = []
    seen = set()
    for d in topo.disagreements:
        key = (d.subject, d.fact)
        if key in seen:
            continue
        seen.add(key)
        out.append(finding(
            "warning", "source.disagreement", d.subject,
            f"{d.subject} {d.fact}: {d.message or d.values}",
            expected=None, actual=dict(d.values), source=", ".join(sorted(d.values)),
            hint="the sources were read at different times or one is wrong: re-take the "
                 "snapshot; a persistent difference points at the fact to look at"))
    return out
