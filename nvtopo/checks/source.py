"""Sources that disagree: two probes said different things about the same fact."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..model import GPU_FACTS, NIC_FACTS, Disagreement, Topology, int_runs, votes
from . import Finding, Subject, facts as F, finding
from . import subject as S
from .select import Selection

#: Facts whose disagreement subject is two matrix labels joined by ``-`` (``GPU0-GPU1``,
#: ``GPU0-mlx5_0``); ``nvlink_count``'s are always two GPUs.
PAIR_FACTS = ("path", "p2p", "nvlink_count")


def check(topo: Topology, sel: Selection) -> List[Finding]:
    """One finding per typed subject: a pair's path and p2p disagreements, or a NIC named
    by its matrix label (``GPU0-NIC0``) and by its device name (``GPU0-mlx5_0``), are one
    disagreement about one thing."""
    out: List[Finding] = _lost_probes(topo) + _cut_probes(topo) + _cut_paste(topo)
    groups: Dict[Subject, List[Disagreement]] = {}
    unlisted = [d for d in topo.disagreements if _unlisted_on_bus(d)]
    if unlisted:
        out.append(_not_listed(unlisted))
    outvoted = [d for d in topo.disagreements if votes.outvoted(d) is not None]
    out.extend(_outvoted(topo, outvoted))
    for d in topo.disagreements:
        if any(d is u for u in unlisted) or any(d is o for o in outvoted):
            continue
        subj = subject_of(topo, d)
        ds = groups.setdefault(subj, [])
        if not any(x.fact == d.fact and dict(x.values) == dict(d.values) for x in ds):
            ds.append(d)
    for subj, ds in groups.items():
        if len(ds) == 1:
            d = ds[0]
            message = f"{d.subject} {d.fact}: {d.message or d.values}"
            actual: Any = dict(d.values)
        else:
            message = f"{subj}: " + "; ".join(f"{d.fact}: {d.message or d.values}"
                                              for d in ds)
            actual = {d.fact: dict(d.values) for d in ds}
        out.append(finding(
            "warning", "source.disagreement", subj, message,
            expected=None, actual=actual,
            source=", ".join(sorted({k for d in ds for k in d.values})),
            hint="the sources were read at different times or one is wrong: re-take the "
                 "snapshot; a persistent difference points at the fact to look at"))
    return out


def _outvoted(topo: Topology, ds: List[Disagreement]) -> List[Finding]:
    """One finding per subject for the facts a text states otherwise than NVML and sysfs,
    which agree (:func:`nvtopo.model.votes.settle` gave the model their value): the text is
    stale or edited; the verdict stands on the live sources."""
    groups: Dict[Subject, List[Disagreement]] = {}
    for d in ds:
        groups.setdefault(subject_of(topo, d), []).append(d)
    out: List[Finding] = []
    for subj, group in groups.items():
        said = [(d, votes.outvoted(d)) for d in group]
        texts = sorted({v[0] for _, v in said if v is not None})
        out.append(finding(
            "warning", "source.outvoted", subj,
            f"{subj}: " + "; ".join(
                d.message if d.fact == "presence"
                else f"the {v[0]} says {d.fact} {v[1]}; NVML and sysfs both say {v[2]}"
                for d, v in said if v is not None)
            + ": NVML and sysfs decide (the text is stale or was edited)",
            expected={d.fact: v[2] for d, v in said if v is not None},
            actual={d.fact: f"{v[0]}: {v[1]}" for d, v in said if v is not None},
            source=", ".join(texts + list(votes.LIVE_SOURCES)),
            hint="a text that disagrees with what NVML and sysfs read live was taken at "
                 "another time or edited: the checks use the live sources; re-take the "
                 "text (or the snapshot) if it should have agreed"))
    return out


#: The snapshot states a live probe recorded when it gave no evidence of its own (see
#: :func:`nvtopo.snapshot.live.capture`): the note code's suffix, the finding's severity.
LOST_PROBE = {"crashed": "error", "unanswered": "warning"}
#: The probes whose facts a verdict stands on (GPUs, links, NICs, the PCIe tree): one of
#: them unanswered leaves the node's own facts unknown, so the verdict cannot pass.
VERDICT_PROBES = ("nvml", "sysfs")


def _lost_probes(topo: Topology) -> List[Finding]:
    """A live probe that crashed (a bug in nvtopo) or did not return: its facts are unknown,
    so a pass would speak for what was never read.  A crash is an error (re-take the
    snapshot; the verdict cannot stand on it), a probe that ran past ``--timeout`` a
    warning (the machine was slow to answer; the rest is checked)."""
    out: List[Finding] = []
    for note in topo.notes:
        if note.source is None or not note.code.startswith(f"source.{note.source}_"):
            continue
        status = note.code[len(f"source.{note.source}_"):]
        if status not in LOST_PROBE:
            continue
        crashed = status == "crashed"
        severity = "error" if note.source in VERDICT_PROBES else LOST_PROBE[status]
        out.append(finding(
            severity, f"source.probe_{status}", S.other(f"{note.source} probe"),
            f"the {note.source} probe " + (
                "failed inside nvtopo" if crashed else "did not answer in time")
            + f": every fact it reads is unknown here ({note.message})",
            expected="answered", actual=status, source=note.source,
            hint=("a bug in nvtopo, not a fault of the node: re-take the snapshot, and report "
                  "the error it names" if crashed else
                  "re-take the snapshot with a longer --timeout; a probe that hangs again "
                  "points at the driver or the device it asks (nvidia-smi, NVML, sysfs)")))
    return out


#: The notes of a live probe that stopped part-way: at its deadline (NVML, sysfs) or at its
#: evidence limit (sysfs).  Each note's message names what the probe did not reach.
CUT_PROBE_NOTES = ("nvml.timeout", "sysfs.timeout", "sysfs.limit")


def _cut_probes(topo: Topology) -> List[Finding]:
    """A probe cut short recorded part of the node: what it did not reach is unknown (its
    note names it), so the verdict cannot pass on the rest: one error per probe."""
    out: List[Finding] = []
    seen = set()
    for note in topo.notes:
        if note.code not in CUT_PROBE_NOTES or note.source in seen:
            continue
        seen.add(note.source)
        out.append(finding(
            "error", "source.probe_incomplete", S.other(f"{note.source} probe"),
            f"the {note.source} probe stopped part-way, so a pass cannot speak for what it "
            f"did not reach: {note.message}",
            expected="finished", actual="incomplete", source=note.source,
            hint="re-take the snapshot with a longer --timeout; a probe cut again points at "
                 "the device it was reading when it stopped (dmesg, nvidia-smi -q)"))
    return out


def _cut_paste(topo: Topology) -> List[Finding]:
    """A pasted matrix that stops after a row (the probe's ``topo.cut`` note): one "not
    checked" note naming the GPUs with no row and the GPU pairs left with no path, so that
    a pass does not speak for them."""
    note = next((n for n in topo.notes if n.code == "topo.cut"), None)
    matrix = topo.matrix
    if note is None or matrix is None or note.subject not in matrix.devices:
        return []
    after = matrix.devices[matrix.devices.index(note.subject) + 1:]
    gpus = [i for i in (F.gpu_index(d) for d in after) if i is not None]
    v = F.view(topo)
    present = set(v.present)
    pairs = [(a, b) for a in sorted(present) for b in sorted(present)
             if a < b and (a, b) not in v.pairs]
    nics = [d for d in after if F.gpu_index(d) is None]
    shown = ", ".join(f"GPU{a}-GPU{b}" for a, b in pairs[:6]) + (
        f" and {len(pairs) - 6} more" if len(pairs) > 6 else "")
    parts = []
    if gpus:
        parts.append(f"GPU{'s' if len(gpus) > 1 else ''} {int_runs(gpus)} "
                     f"{'have' if len(gpus) > 1 else 'has'} no row")
    if pairs:
        parts.append(f"{len(pairs)} GPU pair{'s' if len(pairs) > 1 else ''} "
                     f"({shown}) {'have' if len(pairs) > 1 else 'has'} no path: not checked")
    if nics:
        parts.append(f"{len(nics)} NIC{'s' if len(nics) > 1 else ''} "
                     "placed only by their columns")
    return [finding(
        "info", "source.cut", S.NODE,
        f"the pasted topo -m stops after {note.subject}: " + "; ".join(parts),
        expected="every row", actual=f"rows up to {note.subject}", source="topo-text",
        hint="paste the whole nvidia-smi topo -m output, or take a snapshot on the node "
             "(nvtopo snapshot)",
        covers=[S.gpu(i) for i in gpus] + [S.pair(a, b) for a, b in pairs])]


def _unlisted_on_bus(d: Disagreement) -> bool:
    """sysfs lists a GPU (by PCI address: ``GPU at 0000:14:00.0``) that no driver-level
    source lists at all: the GPUs present were matched by bus id, this one matched none."""
    if d.fact != "presence" or not d.subject.startswith("GPU at "):
        return False
    vals = dict(d.values)
    return vals.get("sysfs") == "present" and len(vals) > 1 and all(
        v == "absent" for k, v in vals.items() if k != "sysfs")


def _not_listed(ds: List[Disagreement]) -> Finding:
    """One finding for every GPU on the PCI bus that the driver-level sources do not list:
    one cause (a job or container given part of the node, or GPUs the driver could not
    initialise), not one disagreement per GPU."""
    addrs = [d.subject[len("GPU at "):] for d in ds]
    others = sorted({k for d in ds for k in dict(d.values) if k != "sysfs"})
    n = len(addrs)
    shown = ", ".join(addrs[:8]) + (f" and {n - 8} more" if n > 8 else "")
    return finding(
        "warning", "source.gpus_not_listed", S.NODE,
        f"{n} GPU{'s' if n != 1 else ''} on the PCI bus (sysfs: {shown}) "
        f"{'are' if n != 1 else 'is'} not listed by {', '.join(others)}: hidden from this "
        "process (a container or a Slurm/Kubernetes job given fewer GPUs) or not "
        "initialised by the driver; the GPUs listed are checked, these are not",
        expected=None, actual=f"{n} not listed by {', '.join(others)}",
        source=", ".join(["sysfs"] + others),
        hint="inside a job or container this is expected: run nvtopo on the host (or with "
             "every GPU visible) to check the whole node; on the host, nvidia-smi and dmesg "
             "(Xid, RmInitAdapter) tell why the driver cannot use them")


def subject_of(topo: Topology, d: Disagreement) -> Subject:
    """The typed subject of a disagreement, whose subject the model keeps as text.

    The fact says what kind of thing the text names (a GPU label, a NIC name, two matrix
    labels); where the text could name two things (a NIC named ``GPU3`` beside GPU3, for a
    fact both have), or none of the model's, it stays :func:`~nvtopo.checks.subject.other`:
    shown as it is, and folded under no other finding.
    """
    text = d.subject if isinstance(d.subject, str) else str(d.subject)
    if d.fact in PAIR_FACTS:
        return _pair_subject(topo, text, d.fact == "nvlink_count")
    gpu_fact = d.fact == "presence" or d.fact in GPU_FACTS
    nic_fact = d.fact in NIC_FACTS
    idx = F.gpu_index(text)
    if gpu_fact and nic_fact:
        is_gpu = idx is not None and topo.gpu(idx) is not None
        is_nic = any(n.name == text for n in topo.nics)
        if is_gpu != is_nic:
            return S.gpu(idx) if is_gpu else S.nic(text)  # type: ignore[arg-type]
    elif gpu_fact and idx is not None:
        return S.gpu(idx)
    elif nic_fact and topo.nic(text) is not None:
        # a matrix label (NIC0) resolved to its device (checked just above)
        return S.nic(topo.nic(text).name)  # type: ignore[union-attr]
    return S.other(text)


def _pair_subject(topo: Topology, text: str, gpus_only: bool) -> Subject:
    left, sep, right = text.partition("-")
    a = F.gpu_index(left)
    if not sep or a is None or (not gpus_only and topo.nic(left) is not None):
        return S.other(text)
    b = F.gpu_index(right)
    nic_named = not gpus_only and topo.nic(right) is not None
    if b is not None and not nic_named:
        return S.pair(min(a, b), max(a, b))
    if b is None and nic_named:
        return S.gpu_nic(a, topo.nic(right).name)  # type: ignore[union-attr]
    return S.other(text)
