"""``--format prometheus``: the node_exporter textfile-collector format (text exposition 0.0.4).

``nvtopo check --format prometheus -o /var/lib/node_exporter/textfile/nvtopo.prom`` writes
the check result and the facts behind it as gauges; node_exporter's textfile collector
(``--collector.textfile.directory``) reads every ``*.prom`` file of its directory at any time,
so the file is written atomically (a ``.tmp`` file in the same directory, then a rename).

Public API (``nvtopo audit --format prometheus`` uses it for many nodes at once)::

    NodeMetrics(check, topo=None, layout=None, durations=None, labels={})
        check:     the check's nvtopo.checks.Report, or a CheckSummary (what nvtopo audit
                   keeps of one: the layout's name, the verdict, the counts by severity and
                   (severity, code, subject) per finding); the verdict and the counts are
                   the report's, never recomputed here
        topo:      the node's Topology (GPU NVLink counts, ports); None: only the verdict,
                   findings and layout families
        layout:    the nvtopo.layouts.Layout checked against (links expected per GPU); None:
                   the links NVML says should be up
        durations: probe name -> seconds (probe_durations(snapshot_document)); None: only what
                   the model records
        labels:    labels put first on every sample of this node, e.g.
                   {"file": "node17.json", "hostname": "node17"} (names [a-zA-Z_][a-zA-Z0-9_]*)

    render(nodes: Iterable[NodeMetrics]) -> str
        The whole exposition text: every family once (HELP, TYPE, then the samples of every
        node), families in a fixed order, samples in node order.
    render_check(check, topo=None, layout=None, durations=None, labels=None) -> str
        One node: render([NodeMetrics(...)]).
    CheckSummary(layout, verdict, counts, findings);  CheckSummary.of(report)
    node_families(nodes) -> List[Family];  exposition(families) -> str
        The two halves of render(), for a caller adding families of its own
        (Family(name, help, samples=[(labels_dict, value), ...], type="gauge")).
    probe_durations(doc) -> Dict[str, float]
        duration_s of every probe a snapshot document recorded.
    escape_label_value(text) -> str
        The text made printable one to one (nvtopo.safe.reversible: a backslash doubled,
        then control characters, bidirectional controls and lone surrogates written as
        \\xNN / \\uNNNN), then backslash, double quote and newline escaped as the
        exposition format requires.  Two different texts are never one label value.

Metrics (all gauges; label values escaped): ``nvtopo_check_pass`` (1 no error finding, 0 at
least one), ``nvtopo_check_findings{severity}`` (count per severity, all three always
present), ``nvtopo_finding{code,subject,severity}`` (one series per finding; the value counts
identical findings, normally 1), ``nvtopo_layout_info{layout}`` (1),
``nvtopo_gpus`` / ``nvtopo_nics`` (devices in the input; ``nvtopo_nics`` is left out
where the input cannot tell: a paste without NIC columns and no sysfs evidence), ``nvtopo_gpu_info{gpu,name,uuid,
pci_bus_id,numa}`` (1), ``nvtopo_gpu_nvlinks_active{gpu}`` and
``nvtopo_gpu_nvlinks_expected{gpu}`` (where NVML read the GPU), ``nvtopo_port_up{device,port,
link_layer}`` (1 ACTIVE, 0 otherwise), ``nvtopo_port_state_info{device,port,state,
phys_state}`` (1), ``nvtopo_port_rate_bytes_per_second{device,port,link_layer}`` (active
ports; 400 Gb/s is 5e10, as node_exporter's infiniband collector counts it),
``nvtopo_imex_domain_state{state}`` (a state set over UP, DEGRADED, DOWN, where the IMEX
domain state was read) and ``nvtopo_imex_members{status}`` (members by status),
``nvtopo_probe_duration_seconds{source}`` (where recorded).  A fact the input does not hold
has no series: absent means unknown, never 0.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..safe import reversible

SEVERITIES = ("error", "warning", "info")

_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")

Sample = Tuple[Dict[str, str], float]


def escape_label_value(text: Any) -> str:
    """A label value as the exposition format writes it: made :func:`~nvtopo.safe.reversible`
    (no control character reaches a label, a lone surrogate, which cannot be encoded, is
    shown as ``\\ud800``, and a backslash of the text is doubled first, so that two
    different texts are never one label value), then ``\\``, ``"`` and newline escaped."""
    return (reversible(text).replace("\\", "\\\\").replace("\"", "\\\"")
            .replace("\n", "\\n"))


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _value(v: float) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(float(v))


@dataclass
class Family:
    """One metric family: its name, HELP text, TYPE and samples (labels, value)."""

    name: str
    help: str
    samples: List[Sample] = field(default_factory=list)
    type: str = "gauge"

    def __post_init__(self) -> None:
        if not _METRIC_NAME.match(self.name):
            raise ValueError(f"bad metric name {self.name!r}")

    def add(self, labels: Mapping[str, Any], value: float) -> None:
        self.samples.append(({k: "" if v is None else str(v) for k, v in labels.items()},
                             value))


def exposition(families: Sequence[Family]) -> str:
    """The text exposition of ``families`` (families without samples are left out)."""
    out: List[str] = []
    for fam in families:
        if not fam.samples:
            continue
        out.append(f"# HELP {fam.name} {_escape_help(fam.help)}")
        out.append(f"# TYPE {fam.name} {fam.type}")
        for labels, value in fam.samples:
            for k in labels:
                if not _LABEL_NAME.match(k) or k.startswith("__"):
                    raise ValueError(f"bad label name {k!r}")
            body = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in labels.items())
            out.append(f"{fam.name}{{{body}}} {_value(value)}" if body
                       else f"{fam.name} {_value(value)}")
    return "\n".join(out) + "\n" if out else ""


@dataclass(frozen=True)
class CheckSummary:
    """What the metrics need of one node's check, as its report decided it: the layout's
    name (None: none fits), the verdict, the findings by severity (``counts``) and one
    ``(severity, code, subject)`` per finding, in report order."""

    layout: Optional[str]
    verdict: str
    counts: Mapping[str, int]
    findings: Sequence[Tuple[str, str, str]] = ()

    @classmethod
    def of(cls, report: Any) -> "CheckSummary":
        """The summary of a :class:`nvtopo.checks.Report`."""
        return cls(layout=report.layout_name, verdict=report.verdict,
                   counts=dict(report.counts),
                   findings=tuple((f.severity, f.code, str(f.subject))
                                  for f in report.findings))


@dataclass
class NodeMetrics:
    """One node's check result and model, with the labels that tell it from other nodes."""

    #: a :class:`nvtopo.checks.Report` or a :class:`CheckSummary`
    check: Any
    topo: Optional[Any] = None
    layout: Optional[Any] = None
    durations: Optional[Mapping[str, float]] = None
    labels: Mapping[str, str] = field(default_factory=dict)


def probe_durations(doc: Mapping[str, Any]) -> Dict[str, float]:
    """``duration_s`` of every probe a snapshot document recorded (numbers only)."""
    out: Dict[str, float] = {}
    probes = doc.get("probes") if isinstance(doc, Mapping) else None
    if not isinstance(probes, Mapping):
        return out
    for name, ev in probes.items():
        d = ev.get("duration_s") if isinstance(ev, Mapping) else None
        if isinstance(d, (int, float)) and not isinstance(d, bool) and d >= 0:
            out[str(name)] = float(d)
    return out


def _families() -> Dict[str, Family]:
    specs = [
        ("nvtopo_check_pass", "1 when nvtopo check found no error finding, else 0."),
        ("nvtopo_check_findings", "Findings of nvtopo check, by severity."),
        ("nvtopo_finding", "One series per finding of nvtopo check (value: how many "
                           "findings have these labels, normally 1)."),
        ("nvtopo_layout_info", "The layout the node was checked against (none: no layout "
                               "fits); value 1."),
        ("nvtopo_gpus", "GPUs in the input."),
        ("nvtopo_nics", "RDMA devices (NICs) in the input."),
        ("nvtopo_gpu_info", "One series per GPU with its name, UUID, PCI bus id and NUMA "
                            "node; value 1."),
        ("nvtopo_gpu_nvlinks_active", "NVLinks of the GPU that are up (NVML)."),
        ("nvtopo_gpu_nvlinks_expected", "NVLinks of the GPU that should be up: the layout's "
                                        "links per GPU, else the links NVML says should be "
                                        "up (active or down, not inactive by design)."),
        ("nvtopo_port_up", "1 when the InfiniBand/RoCE port is ACTIVE, else 0 (sysfs)."),
        ("nvtopo_port_state_info", "State and physical state of the InfiniBand/RoCE port "
                                   "(sysfs); value 1."),
        ("nvtopo_port_rate_bytes_per_second", "Rate of the active InfiniBand/RoCE port in "
                                              "bytes per second (400 Gb/s = 5e10)."),
        ("nvtopo_imex_domain_state", "The IMEX domain's state as this node's "
         "nvidia-imex-ctl reported it: 1 for the state it reported, 0 for the others "
         "(left out where it was not read)."),
        ("nvtopo_imex_members", "Members of this node's IMEX domain by the status "
         "nvidia-imex-ctl gave them (READY, UNAVAILABLE, ...; unknown where it gave none)."),
        ("nvtopo_probe_duration_seconds", "How long each probe took when the input was "
                                          "recorded."),
    ]
    return {name: Family(name, text) for name, text in specs}


def _gpu_numa(g: Any) -> str:
    return "" if g.numa_node is None else str(g.numa_node)


def _nvlink_record(g: Any) -> Optional[Any]:
    rec = g.nvml
    if rec is None or rec.fault is not None:
        return None
    nv = rec.nvlink
    if nv.status not in ("ok", None):
        return None
    return nv


def _expected_links(nv: Any, layout: Any) -> Optional[int]:
    if layout is not None:
        lpg = layout.nvlink.links_per_gpu
        if isinstance(lpg, int) and not isinstance(lpg, bool):
            return lpg
    if nv.links:
        return sum(1 for x in nv.links if x.state in ("active", "down"))
    return None



def nic_count_known(topo: Any) -> bool:
    """Whether the input can tell how many NICs the node has: it lists some, or the sysfs
    evidence (which sees every RDMA device) is there.  A pasted text without NIC columns
    cannot: its series is left out rather than reported as 0."""
    return bool(topo.nics) or topo.sysfs is not None

def _add_node(fams: Dict[str, Family], node: NodeMetrics) -> None:
    base = {str(k): str(v) for k, v in node.labels.items()}

    def lab(**kw: Any) -> Dict[str, Any]:
        return {**base, **kw}

    check = node.check if isinstance(node.check, CheckSummary) else CheckSummary.of(node.check)
    fams["nvtopo_check_pass"].add(lab(), 0 if check.verdict == "fail" else 1)
    for sev in SEVERITIES:
        fams["nvtopo_check_findings"].add(lab(severity=sev), check.counts.get(sev, 0))
    series: Dict[Tuple[str, str, str], int] = {}  # identical findings share one series
    for sev, code, subject in check.findings:
        key = (str(code), str(subject), str(sev))
        series[key] = series.get(key, 0) + 1
    for (code, subject, sev), n in series.items():
        fams["nvtopo_finding"].add(lab(code=code, subject=subject, severity=sev), n)
    fams["nvtopo_layout_info"].add(lab(layout=check.layout or "none"), 1)

    durations: Dict[str, float] = {}
    topo = node.topo
    if topo is not None:
        d = topo.nvml.duration_s if topo.nvml is not None else None
        if isinstance(d, (int, float)) and not isinstance(d, bool):
            durations["nvml"] = float(d)
    durations.update(node.durations or {})
    for src in sorted(durations):
        fams["nvtopo_probe_duration_seconds"].add(lab(source=src), durations[src])

    if topo is None:
        return
    fams["nvtopo_gpus"].add(lab(), len(topo.gpus))
    if nic_count_known(topo):
        fams["nvtopo_nics"].add(lab(), len(topo.nics))
    for g in topo.gpus:
        gpu = str(g.index)
        fams["nvtopo_gpu_info"].add(lab(gpu=gpu, name=g.name or "", uuid=g.uuid or "",
                                        pci_bus_id=g.pci_bus_id or "", numa=_gpu_numa(g)), 1)
        nv = _nvlink_record(g)
        if nv is None:
            continue
        if isinstance(nv.active, int):
            fams["nvtopo_gpu_nvlinks_active"].add(lab(gpu=gpu), nv.active)
        exp = _expected_links(nv, node.layout)
        if exp is not None:
            fams["nvtopo_gpu_nvlinks_expected"].add(lab(gpu=gpu), exp)
    _add_imex(fams, topo.imex, lab)
    for n in topo.nics:
        for p in n.sysfs.ports if n.sysfs is not None else []:
            port = str(p.port)
            state = str(p.state or "")
            layer = str(p.link_layer or "")
            fams["nvtopo_port_up"].add(lab(device=n.name, port=port, link_layer=layer),
                                       1 if state == "ACTIVE" else 0)
            fams["nvtopo_port_state_info"].add(
                lab(device=n.name, port=port, state=state,
                    phys_state=str(p.phys_state or "")), 1)
            rate = p.rate_gbps
            if isinstance(rate, (int, float)) and not isinstance(rate, bool):
                fams["nvtopo_port_rate_bytes_per_second"].add(
                    lab(device=n.name, port=port, link_layer=layer), rate * 1e9 / 8)


def _add_imex(fams: Dict[str, Family], imex: Any, lab: Any) -> None:
    """The IMEX domain's state (a state set: every state, 1 for the one read) and its
    members by status; nothing where IMEX was not read (absent, unknown: no series)."""
    from ..model.imex import DOMAIN_STATES

    if imex is None:
        return
    if imex.domain_state in DOMAIN_STATES:
        for state in DOMAIN_STATES:
            fams["nvtopo_imex_domain_state"].add(lab(state=state),
                                                 1 if imex.domain_state == state else 0)
    counts: Dict[str, int] = {}
    for m in imex.members or []:
        key = str(m.status or "unknown")
        counts[key] = counts.get(key, 0) + 1
    for status in sorted(counts):
        fams["nvtopo_imex_members"].add(lab(status=status), counts[status])


def node_families(nodes: Iterable[NodeMetrics]) -> List[Family]:
    """Every family of the nodes, each once, samples in node order."""
    fams = _families()
    for node in nodes:
        _add_node(fams, node)
    return list(fams.values())


def render(nodes: Iterable[NodeMetrics]) -> str:
    """The exposition text for one or many nodes."""
    return exposition(node_families(nodes))


def render_check(check: Any, topo: Optional[Any] = None,
                 layout: Optional[Any] = None,
                 durations: Optional[Mapping[str, float]] = None,
                 labels: Optional[Mapping[str, str]] = None) -> str:
    """The exposition text for one node's check."""
    return render([NodeMetrics(check=check, topo=topo, layout=layout, durations=durations,
                               labels=dict(labels or {}))])
