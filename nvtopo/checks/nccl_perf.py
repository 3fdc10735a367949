"""nccl-tests bus bandwidth against what the layout's links allow (``nccl.busbw_low``,
``docs/nccl.md``).

The expectation is the layout's ``expected_bandwidth`` only, never a guess: inside one node,
``all_reduce_perf``'s peak bus bandwidth against ``allreduce_busbw``; across nodes, against one
compute NIC's ``nic`` figure (with one NIC per GPU, what a ring's bus bandwidth is bounded by:
an inference, so at most a warning).  The layout is the one the node's evidence selected (or
``--layout``); with the table alone, the bundled layouts whose GPU name and count fit the
table's ``# Rank`` lines and state a figure, when they all state the same one.  A run whose largest
message is under :data:`MIN_SIZE` is not judged (bus bandwidth has not reached its plateau).
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

from . import Finding, finding
from . import subject as S
from .select import Selection
from ..model.nccl import NcclTest

SOURCE = "nccl-tests"
#: Below this share of the layout's figure the bandwidth is low.
LOW = 0.8
#: The smallest largest-message a run must reach to be judged (512 MiB).
MIN_SIZE = 512 * 1024 * 1024


def check(tests: Sequence[NcclTest], sel: Selection, causes: Sequence[Finding]
          ) -> List[Finding]:
    """One finding per judged (or unjudgeable) run; ``causes``: the log's findings beside it,
    named as the bottleneck."""
    out: List[Finding] = []
    for t in tests:
        f = _judge(t, sel, causes)
        if f is not None:
            out.append(f)
    return out


def _judge(t: NcclTest, sel: Selection, causes: Sequence[Finding]) -> Optional[Finding]:
    peak = t.peak()
    if peak is None or peak.best_busbw is None:
        return None
    hosts = t.hosts
    subject = S.host(hosts[0]) if len(hosts) == 1 else S.NODE
    if t.name != "all_reduce_perf":
        return _not_checked(subject, f"{t.name or 'an unnamed nccl-tests run'}: the layouts "
                            "state all_reduce_perf's bus bandwidth only")
    if max(r.size for r in t.rows) < MIN_SIZE:
        return _not_checked(subject, f"all_reduce_perf's largest message is "
                            f"{max(r.size for r in t.rows):,} B: under 512 MiB the bus "
                            "bandwidth has not reached its plateau")
    key = "allreduce_busbw" if len(hosts) <= 1 else "nic"
    found = _figure(t, sel, key)
    if isinstance(found, str):
        return _not_checked(subject, found)
    gbs, inferred, layout = found
    measured = peak.best_busbw
    if measured >= LOW * gbs:
        return None
    what = ("inside one node" if key == "allreduce_busbw" else
            f"across {len(hosts)} nodes (one compute NIC's figure)")
    msg = (f"all_reduce_perf peaked at {measured:g} GB/s bus bandwidth "
           f"({peak.size:,} B), {measured / gbs:.0%} of the {gbs:g} GB/s {layout} allows "
           f"{what}")
    msg += "; " + _bottleneck(causes, key)
    sev = "warning" if inferred or key == "nic" else "error"
    return finding(sev, "nccl.busbw_low", subject, msg, expected=f"{gbs:g} GB/s",
                   actual=f"{measured:g} GB/s",
                   hint="run it again with NCCL_DEBUG=INFO and give the log (nvtopo explain "
                        "--from LOG --from TABLE --from SNAPSHOT): the transports it used "
                        "name the bottleneck", source=SOURCE)


def _bottleneck(causes: Sequence[Finding], key: str) -> str:
    named = [f for f in causes if f.code != "nccl.busbw_low" and f.severity != "info"]
    if named:
        return "the log beside it shows the bottleneck: " + "; ".join(
            f"{f.code} ({f.subject})" for f in named[:4])
    if key == "allreduce_busbw":
        return ("the bottleneck is inside the node: NVLink (links down or degraded), P2P "
                "replaced by host memory, or NVLS off (the log would say which)")
    return ("the bottleneck is the network: sockets instead of RDMA, GPU Direct RDMA off, "
            "fewer NICs than GPUs in use, or a slow port (the log would say which)")


def _figure(t: NcclTest, sel: Selection, key: str
            ) -> Union[Tuple[float, bool, str], str]:
    """``(GB/s, inferred, the layout(s) named)``, or why there is no figure."""
    if sel.layout is not None:
        bw = sel.layout.expected_bandwidth
        fig = getattr(bw, key)
        if fig.gbs is None:
            return f"{sel.layout.name} states no expected {key} bandwidth"
        return float(fig.gbs), bw.inferred(key), sel.layout.name
    return _by_gpu_name(t, key)


def _by_gpu_name(t: NcclTest, key: str) -> Union[Tuple[float, bool, str], str]:
    from .. import layouts

    gpus = {r.gpu for r in t.ranks if r.gpu}
    if len(gpus) != 1:
        return "the table names no one GPU model (no '# Rank' lines): give the node's " \
               "evidence or --layout"
    gpu = gpus.pop()
    per_host = max((sum(1 for r in t.ranks if r.host == h) for h in t.hosts), default=0)
    fits = []
    for name in layouts.names():
        lay = layouts.load(name)
        pattern = lay.gpus.name_pattern
        if pattern and layouts.name_matches(pattern, gpu) and lay.gpus.count == per_host:
            fits.append(lay)
    fits = [lay for lay in fits if getattr(lay.expected_bandwidth, key).gbs is not None]
    figures = {getattr(lay.expected_bandwidth, key).gbs for lay in fits}
    if len(figures) != 1:
        return (f"no bundled layout of {per_host}x {gpu} states one expected {key} "
                "bandwidth: give the node's evidence or --layout")
    inferred = any(lay.expected_bandwidth.inferred(key) for lay in fits)
    return float(figures.pop() or 0), inferred, "/".join(lay.name for lay in fits)


def _not_checked(subject: S.Subject, why: str) -> Finding:
    return finding("info", "nccl.not_checked", subject, f"bus bandwidth not judged: {why}",
                   source=SOURCE)


__all__ = ["LOW", "MIN_SIZE", "check"]
