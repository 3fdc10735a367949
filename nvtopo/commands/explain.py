"""``nvtopo explain``: why NCCL chose the paths its log shows, traced to the node's wiring
(``docs/nccl.md``).

The inputs (``--from``, repeated) come through the one front door: an NCCL debug log, and
optionally the node's evidence (a snapshot, a pasted ``topo -m`` ...), or one ticket holding
both.  With the node given, every check family runs on the node with the log's facts in it
(the ``nccl`` family reads them, and the node's own faults, a port down, a link down, stand
beside NCCL's); a log alone gives the ``nccl`` family's findings only.  The explanation says
which paths NCCL used and, where the node is given and nothing is wrong, that they are the
best the node has.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ..checks import Report
from ..errors import NvtopoError
from ..model import Topology
from ..model.nccl import NcclLog, NcclTests, NcclTopo

#: Version of ``nvtopo explain --format json`` (docs/schemas/explain.schema.json).
EXPLAIN_SCHEMA_VERSION = 1


class Explanation:
    """What :func:`explain` found: the report, the log's facts, the node (None: log alone),
    the explanation's lines."""

    def __init__(self, report: Report, log: NcclLog, node: Optional[Topology],
                 inputs: Sequence[str], lines: List[str],
                 tests: Optional[NcclTests] = None) -> None:
        self.report = report
        self.log = log
        self.tests = tests
        self.node = node
        self.inputs = list(inputs)
        self.lines = lines

    @property
    def exit_status(self) -> int:
        return self.report.exit_status

    def document(self) -> Dict[str, Any]:
        log = self.log
        doc: Dict[str, Any] = {
            "schema_version": EXPLAIN_SCHEMA_VERSION, "inputs": self.inputs,
            "nccl": {"version": log.version, "hosts": list(log.hosts), "nranks": log.nranks,
                     "transports": log.transports(), "networks": list(log.networks),
                     "gdr": {"enabled": sum(1 for g in log.gdr if g.enabled),
                             "disabled": sum(1 for g in log.gdr if not g.enabled)},
                     "nvls": log.nvls, "env": dict(log.env), "truncated": log.truncated},
            "node": None if self.node is None else {
                "hostname": self.node.host.hostname, "gpus": len(self.node.gpus),
                "nics": len(self.node.nics)},
            "explanation": list(self.lines),
            "tests": [_test_doc(t) for t in (self.tests.tests if self.tests else [])]}
        doc.update(self.report.document())
        return doc


def _dump_lines(dump: NcclTopo, node: Optional[Topology]) -> List[str]:
    from ..checks.nccl_topo import PATTERNS

    more = "" if node is not None else " (give the node's snapshot to compare it with the node)"
    if dump.graphs:
        lines = [f"NCCL's graph {g.id}: {PATTERNS.get(g.pattern or 0, 'pattern ?')}, "
                 f"{g.nchannels} channel(s), {g.type_intra} inside the node ({g.bw_intra} "
                 f"GB/s), {g.type_inter} to the network ({g.bw_inter} GB/s)"
                 for g in dump.graphs[:8]]
        lines[-1] += more
        return lines
    return [f"NCCL's topology: {len(dump.gpus)} GPU(s), {len(dump.nets)} NET device(s), "
            f"{len(dump.cpus)} CPU(s)" + more]


def _test_doc(t: Any) -> Dict[str, Any]:
    peak = t.peak()
    return {"name": t.name, "ranks": len(t.ranks), "hosts": t.hosts,
            "peak_busbw": peak.best_busbw if peak is not None else None,
            "peak_size": peak.size if peak is not None else None,
            "avg_busbw": t.avg_busbw}


def explain(paths: Sequence[str], layout: Any = "auto") -> Explanation:
    """Read ``paths`` (one NCCL log, at most one node's evidence, or a ticket with both) and
    explain the log (see the module doc)."""
    from .. import snapshot

    if not paths:
        raise NvtopoError("give the NCCL log with --from LOG (and the node's snapshot with a "
                          "second --from)", where="explain")
    log: Optional[NcclLog] = None
    tests: Optional[NcclTests] = None
    dump: Optional[NcclTopo] = None
    node: Optional[Topology] = None
    for path in paths:
        topo = snapshot.open_input(snapshot.Input(path=path, command="explain")).model
        if topo.nccl_log is not None:
            if log is not None:
                raise NvtopoError("a second NCCL log: give one log (and the node's evidence)",
                                  where=path)
            log = topo.nccl_log
        if topo.nccl_tests is not None:
            if tests is not None:
                raise NvtopoError("a second nccl-tests output: give one", where=path)
            tests = topo.nccl_tests
        if topo.nccl_topo is not None:
            if dump is not None:
                raise NvtopoError("a second NCCL topology XML: give one", where=path)
            dump = topo.nccl_topo
        if topo.gpus or topo.nics or topo.matrix is not None:
            if node is not None:
                raise NvtopoError("a second node's evidence: explain reads one node beside "
                                  "the log", where=path)
            node = topo
    if log is None and tests is None and dump is None:
        raise NvtopoError("no NCCL debug log, nccl-tests output or NCCL topology XML among "
                          "the inputs (NCCL_DEBUG=INFO output: lines holding 'NCCL INFO')",
                          where=paths[0])
    if node is not None and dump is not None:
        node.nccl_topo = dump
    log = log if log is not None else NcclLog()
    report = _report(log, tests, node, layout)
    lines = summary(log, node, report, tests)
    if dump is not None:
        lines[:0] = _dump_lines(dump, node)
    return Explanation(report, log, node, paths, lines, tests)


def _report(log: NcclLog, tests: Optional[NcclTests], node: Optional[Topology],
            layout: Any) -> Report:
    from .. import checks
    from ..checks import nccl
    from ..checks.select import given

    target = node if node is not None else Topology(sources=[])
    for name, value in (("nccl-log", log if log.lines else None), ("nccl-tests", tests)):
        if value is not None and name not in target.sources:
            target.sources.append(name)
    target.nccl_log = log if log.lines else None
    target.nccl_tests = tests
    if node is not None:
        return checks.select_and_run(node, layout)
    sel = given(None if isinstance(layout, str) else layout)
    name = sel.layout.name if sel.layout is not None else "none"
    reason = (f"given (--layout {name}): NCCL's output alone, no node evidence"
              if sel.layout is not None else "NCCL's output alone: no node evidence")
    return Report(layout_name=name, reason=reason, findings=tuple(nccl.check(target, sel)))


def summary(log: NcclLog, node: Optional[Topology], report: Report,
            tests: Optional[NcclTests] = None) -> List[str]:
    """Which paths NCCL used, in words, and what that means for the node."""
    lines: List[str] = []
    for t in (tests.tests if tests is not None else []):
        peak = t.peak()
        if peak is not None:
            lines.append(f"{t.name or 'nccl-tests'}: {len(t.ranks)} ranks; peak bus bandwidth "
                         f"{peak.best_busbw:g} GB/s at {peak.size:,} B; average "
                         f"{t.avg_busbw if t.avg_busbw is not None else '?'} GB/s")
    if not log.lines:
        lines.append(_verdict(node, report, "the table" if tests is not None
                              else "NCCL's topology"))
        return lines
    ranks = f"{log.nranks} ranks" if log.nranks else "ranks"
    where = (f" on {len(log.hosts)} host(s) ({', '.join(log.hosts[:4])}"
             f"{', …' if len(log.hosts) > 4 else ''})" if log.hosts else "")
    lines.append(f"NCCL {log.version or '(version not in the paste)'}: {ranks}{where}")
    used = log.transports()
    if used:
        lines.append("connections: " + ", ".join(f"{k} {v}" for k, v in sorted(used.items())))
    else:
        lines.append("the paste holds no Channel ... via ... lines (no connection seen)")
    ib = [d for d in log.net_devices if d.net == "IB"]
    if ib:
        names = sorted({f"{d.name}/{d.link_layer or '?'}" for d in ib})
        lines.append(f"HCAs NCCL used: {', '.join(names[:12])}")
    on = sum(1 for g in log.gdr if g.enabled)
    if log.gdr:
        lines.append(f"GPU Direct RDMA: enabled on {on} of {len(log.gdr)} GPU/HCA pair(s)")
    if log.nvls is not None:
        lines.append("NVLS (NVLink SHARP): " + ("used" if log.nvls else "not used"))
    lines.append(_verdict(node, report, "the log"))
    return lines


def _verdict(node: Optional[Topology], report: Report, what: str) -> str:
    nccl = [f for f in report.findings if f.code.startswith("nccl.") and f.severity != "info"]
    if nccl:
        return f"{len(nccl)} NCCL finding(s) below: what made NCCL slower than the node allows"
    if node is None:
        return f"{what} shows no fault (give the node's snapshot to check these are the " \
               "best paths the node has)"
    other = [f for f in report.findings if f.severity == "error"]
    if other:
        return "NCCL's paths show no fault; the node's own errors are listed below"
    return "these are the best paths the node has: NCCL shows no fault and the node's " \
           "evidence offers nothing better"


__all__ = ["EXPLAIN_SCHEMA_VERSION", "Explanation", "explain", "summary"]
