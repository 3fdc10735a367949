"""Checks: is the wiring what the layout says it should be?

Every check family is a module with one pure function ``check(model, selection)``
returning a list of :class:`Finding`, each about a typed
:class:`~nvtopo.checks.subject.Subject`; the selection
(:class:`~nvtopo.checks.select.Selection`) carries the typed layout and how it was chosen.
Its ``layout`` is ``None`` when no layout fits the node: the families then run only their layout-independent parts
(links down, ports down, counters, PCIe hops, disagreements).

Root causes, not echoes: one fault gives one error finding.  The families
share one reading of the model (:func:`nvtopo.checks.facts.view`), which
knows which GPUs are missing, whether the NVLink fabric is down and which
links are down, so each family leaves out the consequences another family
reports.  What is left over (sources that disagree about a fact a finding
already explains) is folded here, by the ``covers`` of each finding: a set of
subjects, compared as subjects (a NIC named ``GPU3`` is not the GPU).

:func:`run` and :func:`select_and_run` return a :class:`Report`: the findings in
report order with the verdict, the counts and the JSON document decided once.

Severities: ``error`` (something is wrong), ``warning`` (probably wrong, or
an expectation whose only evidence is inferred), ``info`` (not checked:
the input does not say).  Unknown is never an error.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List, Optional

from .findings import SEVERITIES, Finding, demote, finding
from .report import Report, verdict
from .subject import Subject

__all__ = ["FAMILIES", "SEVERITIES", "Finding", "Report", "Subject", "demote", "finding",
           "fold", "run", "select_and_run", "verdict"]

#: Check families, in report order.
FAMILIES = ("gpu", "fabric", "nvlink", "p2p", "pcie", "nic", "ib", "numa", "c2c", "gds",
            "mesh", "imex", "nccl", "events", "source")


def fold(findings: List[Finding]) -> List[Finding]:
    """Drop echoes: a disagreement, P2P or driverless-NIC finding whose subject another finding
    covers; and, where the NVML probe was cut short, the GPUs it never reached that look
    missing (and the sources that list them disagreeing): the cut is their one cause.

    The finding that explains them says how many it folded, with the first as an example.
    """
    coverers = [f for f in findings if f.covers and f.severity != "info"]
    folded: Dict[int, List[Finding]] = {}
    out: List[Finding] = []
    # an NVML probe cut short: the GPUs it never reached look missing, and the sources that
    # do list them disagree with it; the cut (an error naming those GPUs) is the one cause
    cut = next((f for f in findings if f.code == "source.probe_incomplete"
                and f.source == "nvml"), None)
    for f in findings:
        if cut is not None and f.code in ("gpu.missing", "source.gpus_not_listed"):
            folded.setdefault(id(cut), []).append(f)
            continue
        if f.code.startswith(("source.", "p2p.", "ib.no_rdma_driver")) and f.severity != "info" \
                and f.code != "source.outvoted":  # a stale text: no fault explains it
            root = next((c for c in coverers if f.subject in c.covers and c is not f), None)
            if root is not None:
                folded.setdefault(id(root), []).append(f)
                continue
        out.append(f)
    for f in out:
        echoes = folded.get(id(f))
        if echoes:
            f.message += (f" (it also explains {len(echoes)} "
                          f"{'finding' if len(echoes) == 1 else 'findings'} of "
                          f"{'/'.join(sorted({e.code for e in echoes}))}, e.g. "
                          f"{echoes[0].message})")
    return out


_MODULES: List[Any] = []


def _families() -> List[Any]:
    """The families' modules, in :data:`FAMILIES` order (imported on the first run)."""
    if not _MODULES:
        _MODULES.extend(importlib.import_module(f"{__name__}.{fam}") for fam in FAMILIES)
    return _MODULES


def run(model: Any, chosen: Any, thresholds: Optional[Any] = None) -> Report:
    """Every family's findings against what selection decided (a
    :class:`~nvtopo.checks.select.Selection`; a layout or None is taken as given, None
    meaning the layout-independent parts), folded, ordered by severity then family, as a
    :class:`Report`.  ``thresholds``: a ``--thresholds`` file
    (:class:`.thresholds.Thresholds`), applied for the node class the layout names."""
    from .catalog import using_thresholds
    from .facts import shared_views
    from .select import Selection, given

    sel = chosen if isinstance(chosen, Selection) else given(chosen)
    layout = sel.layout
    found: List[Finding] = []
    overrides = thresholds.for_class(layout.name if layout is not None else None) \
        if thresholds is not None else None
    with shared_views(), using_thresholds(overrides):
        for fam in _families():
            found.extend(fam.check(model, sel))
    found = fold(found)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    fam_order = {f: i for i, f in enumerate(FAMILIES)}
    found.sort(key=lambda f: (order[f.severity],
                              fam_order.get(f.code.split(".")[0], len(FAMILIES))))
    return Report(layout_name=layout.name if layout is not None else "none",
                  reason=sel.reason, findings=tuple(found), mapping=sel.mapping, layout=layout)


def select_and_run(model: Any, layout: str = "auto", layout_file: Optional[str] = None,
                   thresholds: Optional[Any] = None) -> Report:
    """Choose the layout (:func:`nvtopo.checks.select.select`) and run every family against
    it, reading the model's facts once for both (``thresholds``: see :func:`run`)."""
    from . import select as selection
    from .facts import shared_views

    with shared_views():
        sel = selection.select(model, layout, layout_file)
        return run(model, sel, thresholds)
