"""``nvtopo trend``: error counters across several snapshots of a node (or of a fleet,
grouped by host, ordered by time): how fast each climbs, and which are still climbing
(``docs/commands.md``, ``trend``).

The counters followed, per link and port: NVLink errors (``replay``, ``recovery``,
``crc_flit``, ``crc_data``, ``ecc``: NVML, per GPU link), InfiniBand/RoCE port error
counters (``symbol_error``, ``link_downed``, ``port_rcv_errors`` ...: sysfs), a GPU's PCIe
replays (NVML) and the AER totals of the GPUs, NICs and bridges above them (sysfs
``aer_dev_*``).  Counters count since the driver loaded or the node booted: one that goes
down between two snapshots was reset (a reboot, a driver reload, a cleared counter) and
starts a new epoch; its increase is summed over epochs (after a reset the new value is all
increase).  A counter is *still climbing* when it rose between the last two snapshots that
hold it, in its latest epoch: a finding ``trend.rising``.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ..checks import Finding, finding
from ..checks import subject as S
from ..errors import NvtopoError
from ..model import Topology
from ..model.nvlink import NVLINK_ERROR_COUNTERS
from ..model.rdma import ERROR_COUNTERS

#: An InfiniBand port whose link_downed rose by more than this over the snapshots flapped
#: (the threshold Nebius's Soperator alerts on).
LINK_DOWNED_FLAP = 10
#: Most snapshots read (a week of hourly snapshots of a 128-node fleet is 21,504).
MAX_SNAPSHOTS = 50_000


class Point(NamedTuple):
    """One snapshot of one host: where it came from, when, its counters."""

    file: str
    host: str
    time: Optional[float]
    stamp: Optional[str]
    counters: Dict[Tuple[str, str], int]


class Series(NamedTuple):
    """One counter of one subject on one host, over time."""

    host: str
    subject: str
    counter: str
    values: List[Tuple[Optional[float], int]]
    epochs: int
    increase: int
    rate_per_hour: Optional[float]
    rising: bool
    last_step: int


class Trend(NamedTuple):
    hosts: Dict[str, List[Point]]
    series: List[Series]
    findings: List[Finding]
    unreadable: List[Tuple[str, str]]


def counters(topo: Topology) -> Dict[Tuple[str, str], int]:
    """``(subject, counter) -> value`` for every error counter the model holds."""
    out: Dict[Tuple[str, str], int] = {}
    names: Dict[str, str] = {}
    for g in topo.gpus:
        if g.sysfs is not None:
            names[g.sysfs.pci_address] = f"GPU{g.index}"
        if g.nvml is None:
            continue
        for lk in g.nvml.nvlink.links:
            for c in NVLINK_ERROR_COUNTERS:
                v = lk.errors.get(c)
                if isinstance(v, int):
                    out[(f"GPU{g.index} link {lk.link}", f"nvlink.{c}")] = v
        replay = g.nvml.pcie.replay_counter if g.nvml.pcie is not None else None
        if isinstance(replay, int):
            out[(f"GPU{g.index}", "pcie.replay")] = replay
    for n in topo.nics:
        hca = n.sysfs
        if hca is None:
            continue
        if hca.pci_address:
            names[hca.pci_address] = n.name
        for p in hca.ports:
            for c, v in (p.counters or {}).items():
                if c in ERROR_COUNTERS and isinstance(v, int):
                    out[(f"{n.name} port {p.port}", f"ib.{c}")] = v
    aer = topo.sysfs.aer if topo.sysfs is not None else None
    for addr, a in sorted((aer or {}).items()):
        who = f"{addr} ({names[addr]})" if addr in names else addr
        for c in ("correctable", "nonfatal", "fatal"):
            v = getattr(a, c)
            if isinstance(v, int):
                out[(who, f"aer.{c}")] = v
    return out


def _when(stamp: Optional[str]) -> Optional[float]:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def read(paths: Sequence[str]) -> Tuple[List[Point], List[Tuple[str, str]]]:
    """Every snapshot the paths name (files, directories, patterns), and the unreadable."""
    from .. import audit, snapshot

    points: List[Point] = []
    bad: List[Tuple[str, str]] = []
    for path, why in audit.expand(paths):
        if len(points) + len(bad) >= MAX_SNAPSHOTS:
            bad.append((path, f"more than {MAX_SNAPSHOTS:,} inputs: not read"))
            break
        if why is not None:
            bad.append((path, why))
            continue
        try:
            topo = snapshot.load(path)
        except NvtopoError as exc:
            bad.append((path, exc.message))
            continue
        host = topo.host.hostname or os.path.basename(path)
        points.append(Point(path, host, _when(topo.host.time), topo.host.time,
                            counters(topo)))
    return points, bad


def _series(host: str, key: Tuple[str, str], pts: List[Point]) -> Optional[Series]:
    vals = [(p.time, p.counters[key]) for p in pts if key in p.counters]
    if len(vals) < 2:
        return None
    epochs, increase, start = 1, 0, 0
    for i in range(1, len(vals)):
        prev, cur = vals[i - 1][1], vals[i][1]
        if cur < prev:  # reset: a new epoch, the new value all increase
            epochs += 1
            increase += cur
            start = i
        else:
            increase += cur - prev
    latest = vals[start:]
    step = latest[-1][1] - latest[-2][1] if len(latest) >= 2 else 0
    t0, t1 = vals[0][0], vals[-1][0]
    rate = increase / ((t1 - t0) / 3600.0) if t0 is not None and t1 is not None and t1 > t0 \
        else None
    return Series(host, key[0], key[1], vals, epochs, increase, rate, step > 0, step)


def run(paths: Sequence[str]) -> Trend:
    """The counters of the snapshots ``paths`` name, per host, in time order."""
    points, bad = read(paths)
    hosts: Dict[str, List[Point]] = {}
    given = {id(p): i for i, p in enumerate(points)}
    for p in points:
        hosts.setdefault(p.host, []).append(p)
    series: List[Series] = []
    for host, pts in sorted(hosts.items()):
        # by time; snapshots without one, or taken at the same second, as given
        pts.sort(key=lambda p: (p.time is None, p.time or 0.0, given[id(p)]))
        keys = sorted({k for p in pts for k in p.counters})
        for key in keys:
            s = _series(host, key, pts)
            if s is not None:
                series.append(s)
    series.sort(key=lambda s: (not s.rising, -(s.rate_per_hour or 0.0), -s.increase,
                               s.host, s.subject, s.counter))
    return Trend(hosts, series, _findings(hosts, series), bad)


def _findings(hosts: Dict[str, List[Point]], series: List[Series]) -> List[Finding]:
    out: List[Finding] = []
    for s in series:
        if s.counter == "ib.link_downed" and s.increase > LINK_DOWNED_FLAP:
            out.append(finding(
                "error", "trend.link_flapping", S.other(f"{s.host} {s.subject}"),
                f"{s.subject} on {s.host} went down {s.increase} times over "
                f"{len(s.values)} snapshots (link_downed; more than {LINK_DOWNED_FLAP} is a "
                "flapping link)", expected=f"<= {LINK_DOWNED_FLAP}", actual=s.increase,
                source="trend",
                hint="inspect the cable and transceivers at both ends and the switch port; "
                     "the kernel log's port lines say when (nvtopo check --from kern.log)"))
            continue
        if not s.rising:
            continue
        rate = f", {s.rate_per_hour:.3g}/hour over the series" if s.rate_per_hour else ""
        reset = f" (across {s.epochs - 1} reset{'s' if s.epochs > 2 else ''})" \
            if s.epochs > 1 else ""
        out.append(finding(
            "warning", "trend.rising", S.other(f"{s.host} {s.subject}"),
            f"{s.counter} on {s.host} {s.subject} is still climbing: +{s.last_step} since the "
            f"snapshot before, +{s.increase} in {len(s.values)} snapshots{reset}{rate}",
            expected="flat", actual=f"+{s.last_step}", source="trend",
            hint="a counter that keeps climbing fails later: inspect the link or port now "
                 "(reseat, replace the cable or transceiver), before it goes down"))
    for host, pts in sorted(hosts.items()):
        if len(pts) < 2:
            out.append(finding("info", "trend.not_checked", S.other(host),
                               f"{host}: one snapshot, no trend (give two or more of the "
                               "node, taken at different times)", source="trend"))
    return out


def document(t: Trend) -> Dict[str, Any]:
    """The JSON document of ``trend --format json``."""
    return {
        "schema_version": 1,
        "hosts": [{"host": h, "snapshots": [{"file": p.file, "time": p.stamp} for p in pts]}
                  for h, pts in sorted(t.hosts.items())],
        "series": [{"host": s.host, "subject": s.subject, "counter": s.counter,
                    "first": s.values[0][1], "last": s.values[-1][1], "epochs": s.epochs,
                    "increase": s.increase, "rate_per_hour": s.rate_per_hour,
                    "rising": s.rising, "last_step": s.last_step} for s in t.series],
        "findings": [f.to_dict() for f in t.findings],
        "unreadable": [{"file": f, "error": e} for f, e in t.unreadable],
    }


def climbing(t: Trend) -> Iterator[Series]:
    return (s for s in t.series if s.increase > 0)


__all__ = ["Point", "Series", "Trend", "counters", "read", "run", "document", "climbing",
           "MAX_SNAPSHOTS"]
