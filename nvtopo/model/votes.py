"""Two agreeing live sources outvote a text.

:meth:`~nvtopo.model.Topology.merge` keeps a fact as the first source stated it and records
every later source that says otherwise as a :class:`~nvtopo.model.Disagreement`.  Texts
(``topo-text``, a pasted ``-q`` or ``nvlink`` text) merge before the live probes, so a stale
or edited text would decide every fact it states.  :func:`settle`, run once the sources are
merged, applies one rule to every fact more than two sources state (a GPU's CPU and NUMA
affinity, bus id, name; a NIC's bus id and NUMA node; a GPU's presence):

* where the two independent live sources, NVML and sysfs, agree and one text says
  otherwise, the live sources decide: the model takes their value, and the disagreements
  about that fact become one, whose values name all three (:func:`outvoted` reads it back);
* one source against one (a text against NVML alone, or against sysfs alone), or live
  sources that disagree among themselves, stay as merged: recorded, nothing decided.

sysfs does not see NVLink and NVML alone states GPU-to-GPU paths, so a pair's NVLink count
or path is always one source against one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from .core import GPU_FACTS, NIC_FACTS, Disagreement
from .vocab import pci_bdf

if TYPE_CHECKING:
    from .topology import Topology

#: The independent live sources: two of them agreeing outvote a text.
LIVE_SOURCES = ("nvml", "sysfs")

Value = Union[str, int]


def _same(fact: str, a: Any, b: Any) -> bool:
    if fact == "pci_bus_id" and pci_bdf(a) is not None and pci_bdf(b) is not None:
        return pci_bdf(a) == pci_bdf(b)
    return bool(a == b)


def outvoted(d: Disagreement) -> Optional[Tuple[str, Value, Value]]:
    """``(text source, what it says, what NVML and sysfs both say)`` where ``d`` is a
    disagreement :func:`settle` decided for the live sources; ``None`` otherwise."""
    vals = dict(d.values)
    if set(vals) - set(LIVE_SOURCES) == set() or not all(s in vals for s in LIVE_SOURCES):
        return None
    texts = [s for s in vals if s not in LIVE_SOURCES]
    live = vals[LIVE_SOURCES[0]]
    if len(texts) != 1 or not _same(d.fact, live, vals[LIVE_SOURCES[1]]) \
            or _same(d.fact, vals[texts[0]], live):
        return None
    return texts[0], vals[texts[0]], live


def settle(topo: "Topology") -> None:
    """Apply the rule above to ``topo``'s merged facts, in place (see the module's doc)."""
    groups: Dict[Tuple[str, str], List[Disagreement]] = {}
    for d in topo.disagreements:
        if d.fact in GPU_FACTS or d.fact in NIC_FACTS:
            groups.setdefault((d.subject, d.fact), []).append(d)
    decided: Dict[int, Optional[Disagreement]] = {}
    for (subject, fact), ds in groups.items():
        one = _decide(topo, subject, fact, ds)
        if one is not None:
            for d in ds:
                decided[id(d)] = None
            decided[id(ds[0])] = one
    for d in topo.disagreements:
        if d.fact == "presence" and id(d) not in decided:
            one = _presence(topo, d)
            if one is not None:
                decided[id(d)] = one
    if decided:
        kept = [decided.get(id(d), d) for d in topo.disagreements]
        topo.disagreements = [d for d in kept if d is not None]


def _decide(topo: "Topology", subject: str, fact: str,
            ds: List[Disagreement]) -> Optional[Disagreement]:
    """The one disagreement a fact's group becomes where NVML and sysfs outvote a text (the
    model's value set to theirs), else None."""
    said: Dict[str, Value] = {}
    for d in ds:
        said.update(d.values)
    texts = [s for s in said if s not in LIVE_SOURCES]
    if len(texts) != 1 or not all(s in said for s in LIVE_SOURCES):
        return None
    text = texts[0]
    nvml, sysfs = (said[s] for s in LIVE_SOURCES)
    if not _same(fact, nvml, sysfs) or _same(fact, said[text], nvml):
        return None
    thing = _holder(topo, subject, fact)
    if thing is None or thing.sources.get(fact) != text:
        return None
    setattr(thing, fact, nvml)
    thing.sources[fact] = LIVE_SOURCES[0]
    return Disagreement(
        subject=subject, fact=fact, values={text: said[text], "nvml": nvml, "sysfs": sysfs},
        message=f"{text} says {said[text]!r}; nvml and sysfs both say {nvml!r}")


def _holder(topo: "Topology", subject: str, fact: str) -> Any:
    """The GPU (by label) or NIC (by name) a fact's disagreement is about."""
    if fact in GPU_FACTS:
        g = next((g for g in topo.gpus if g.label == subject), None)
        if g is not None:
            return g
    if fact in NIC_FACTS:
        return next((n for n in topo.nics if n.name == subject), None)
    return None


def _presence(topo: "Topology", d: Disagreement) -> Optional[Disagreement]:
    """A GPU one text does not list while NVML and sysfs both do (its records from both):
    the GPU is there; the disagreement says so with all three sources."""
    vals = dict(d.values)
    absent = [k for k, v in vals.items() if v == "absent"]
    present = [k for k, v in vals.items() if v == "present"]
    if len(absent) != 1 or absent[0] in LIVE_SOURCES or "," in absent[0] or not present:
        return None
    bus = d.subject[len("GPU at "):] if d.subject.startswith("GPU at ") else None
    g = next((g for g in topo.gpus
              if (bus is not None and pci_bdf(g.pci_bus_id) == pci_bdf(bus))
              or (bus is None and g.label == d.subject)), None)
    if g is None or g.nvml is None or g.sysfs is None:
        return None
    text = absent[0]
    return Disagreement(
        subject=d.subject, fact="presence",
        values={text: "absent", "nvml": "present", "sysfs": "present"},
        message=f"{text} does not list {g.label}"
                + (f" ({g.pci_bus_id})" if g.pci_bus_id else "")
                + "; nvml and sysfs both list it")


__all__ = ["LIVE_SOURCES", "outvoted", "settle"]
