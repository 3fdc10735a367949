"""``nvtopo diff A B``: what changed on one node between two snapshots.

Both inputs are re-derived into models (snapshots or topo texts) and compared
fact by fact.  GPUs are matched by PCI bus id where both inputs give every
GPU's (GPUs are renumbered when one drops off the bus: matching by index would
turn one missing GPU into changes on every GPU after it), else by index; NICs
by RDMA device name.

Counters are compared as deltas (B minus A), never as totals: an error counter
that grew is a change; a counter that went *down* means it was reset between
the snapshots (reboot, driver reload, port reset), so B's value counts only
since the reset, and that is said.  Traffic counters (data, packets) growing is
not a change; going down is a reset.

Then both inputs are checked (``nvtopo check``'s layout selection and
findings): a verdict that changed, and the error/warning findings that are new
in B or gone from A, are reported with the facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .model import GPU, Topology, pci_bdf
from .model.rdma import ERROR_COUNTERS, Port
from .model.vocab import int_runs
from .safe import ascii_int

#: Changes of the same kind and before/after on more subjects than this are grouped.
GROUP_OVER = 4
#: Version of the ``nvtopo diff --format json`` document (docs/json.md).
DIFF_SCHEMA_VERSION = 1


@dataclass
class Change:
    kind: str
    subject: str
    before: Any
    after: Any
    message: str

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "subject": self.subject, "before": self.before,
                "after": self.after, "message": self.message}


@dataclass
class Diff:
    a: str
    b: str
    hosts: Tuple[Optional[str], Optional[str]]
    changes: List[Change] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    verdict: Dict[str, Any] = field(default_factory=dict)
    #: ``{"compared": [...], "not_compared": {source: why}}``: the evidence both inputs hold.
    sources: Dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        v = self.verdict
        return bool(self.changes or v.get("new") or v.get("resolved")
                    or v.get("before") != v.get("after"))

    def to_dict(self) -> Dict[str, Any]:
        return {"schema_version": DIFF_SCHEMA_VERSION,
                "a": {"file": self.a, "hostname": self.hosts[0]},
                "b": {"file": self.b, "hostname": self.hosts[1]},
                "changed": self.changed, "warnings": list(self.warnings),
                "changes": [c.to_dict() for c in self.changes],
                "verdict": dict(self.verdict),
                "sources": dict(self.sources)}


# --- identities ---------------------------------------------------------------------------


def _gpu_keys(a: Topology, b: Topology) -> Tuple[Dict[Any, GPU], Dict[Any, GPU]]:
    def by_pci(t: Topology) -> Optional[Dict[Any, GPU]]:
        out = {}
        for g in t.gpus:
            bdf = pci_bdf(g.pci_bus_id)
            if bdf is None:
                return None
            out[bdf] = g
        return out

    pa, pb = by_pci(a), by_pci(b)
    if pa is not None and pb is not None and a.gpus and b.gpus:
        return pa, pb
    return {g.index: g for g in a.gpus}, {g.index: g for g in b.gpus}


def _pci_str(key: Any) -> str:
    if isinstance(key, tuple):
        return f"{key[0]:04x}:{key[1]:02x}:{key[2]:02x}.{key[3]}"
    return f"index {key}"


def _label(key: Any, ga: Optional[GPU], gb: Optional[GPU]) -> str:
    if gb is not None and ga is not None and ga.label != gb.label:
        return f"{gb.label} (was {ga.label})"
    return (gb or ga).label if (gb or ga) is not None else str(key)  # type: ignore[union-attr]


# --- comparisons --------------------------------------------------------------------------


#: The evidence facts come from, and what each one is the only witness of.
FACT_SOURCES = ("nvml", "sysfs", "topo-text")
SOURCE_FACTS = {
    "nvml": "GPU UUIDs, NVLink link states and error counters, fabric, PCIe replays",
    "sysfs": "NICs, IB port states, rates and counters, PCIe links, GPUDirect",
    "topo-text": "the nvidia-smi topo matrix (NVLink pairs, GPU-NIC paths)",
}
_UNUSABLE = ("failed", "skipped", "missing", "error", "unavailable")


def source_states(t: Topology, doc: Optional[Dict[str, Any]] = None) -> Dict[str, str]:
    """Per fact source: ``ok``, or why it gave nothing (``absent``, ``failed``, ``skipped``…)."""
    if doc is not None:
        got = doc.get("probes")
        probes: Dict[str, Any] = got if isinstance(got, dict) else {}
        res = {}
        for name in FACT_SOURCES:
            ev = probes.get(name)
            status = ev.get("status") if isinstance(ev, dict) else None
            if ev is None:
                res[name] = "absent"
            elif isinstance(status, str) and status in _UNUSABLE:
                res[name] = status
            else:
                res[name] = "ok"
        return res
    kind = t.origin.kind
    has_nvml = kind == "nvml-text" or any(g.nvml is not None for g in t.gpus)
    return {"nvml": "ok" if has_nvml else "absent",
            "sysfs": "absent",
            "topo-text": "ok" if kind == "topo-text" else "absent"}


def _source_coverage(sa: Dict[str, str], sb: Dict[str, str]) -> Dict[str, Any]:
    compared = [s for s in FACT_SOURCES if sa.get(s) == "ok" and sb.get(s) == "ok"]
    not_compared = {}
    for s in FACT_SOURCES:
        x, y = sa.get(s, "absent"), sb.get(s, "absent")
        if (x == "ok") != (y == "ok"):
            side, why = ("B", y) if x == "ok" else ("A", x)
            not_compared[s] = f"{why} in {side}"
    return {"compared": compared, "not_compared": not_compared}


def compare(a: Topology, b: Topology, where_a: str = "A", where_b: str = "B",
            sources_a: Optional[Dict[str, str]] = None,
            sources_b: Optional[Dict[str, str]] = None) -> Diff:
    host_a = a.host.hostname or None
    host_b = b.host.hostname or None
    d = Diff(a=where_a, b=where_b, hosts=(host_a, host_b))
    if host_a and host_b and host_a != host_b:
        d.warnings.append(f"the snapshots are of different hosts ({host_a} and {host_b}): "
                          "differences may be between two nodes, not changes of one")
    ta, tb = a.host.time, b.host.time
    if isinstance(ta, str) and isinstance(tb, str) and tb < ta:
        d.warnings.append(f"B was taken before A ({tb} < {ta}): changes read from A to B")
    cov = _source_coverage(sources_a or source_states(a), sources_b or source_states(b))
    d.sources = cov
    both = set(cov["compared"])
    for s, why in cov["not_compared"].items():
        d.warnings.append(f"{s} evidence is {why}: its facts ({SOURCE_FACTS[s]}) are not "
                          "compared; nothing is reported removed, resolved or changed for them")
    ka, kb = _gpu_keys(a, b)
    out: List[Change] = []
    if both:  # GPUs are seen by every source: one both hold is enough
        _gpus(ka, kb, out)
    if both & {"sysfs", "topo-text"}:  # NICs: sysfs or the topo matrix
        _nics(a, b, out)
    if both & {"nvml", "topo-text"}:  # NVLink pairs: NVML or the topo matrix (not sysfs)
        _nvlink_pairs(a, b, ka, kb, out)
    _nvlink_links(ka, kb, out)
    _fabric(ka, kb, out)
    _pcie(ka, kb, a, b, out)
    _ports(a, b, out)
    _paths(a, b, ka, kb, out)
    d.changes = out
    return d


def _gpus(ka: Dict[Any, GPU], kb: Dict[Any, GPU], out: List[Change]) -> None:
    for k in ka.keys() - kb.keys():
        g = ka[k]
        out.append(Change("gpu.removed", g.label, _gpu_desc(g), None,
                          f"{g.label} ({_pci_str(k)}{', ' + g.name if g.name else ''}) is gone"))
    for k in kb.keys() - ka.keys():
        g = kb[k]
        out.append(Change("gpu.added", g.label, None, _gpu_desc(g),
                          f"{g.label} ({_pci_str(k)}{', ' + g.name if g.name else ''}) is new"))
    for k in ka.keys() & kb.keys():
        ga, gb = ka[k], kb[k]
        if ga.uuid and gb.uuid and ga.uuid != gb.uuid:
            out.append(Change("gpu.replaced", _label(k, ga, gb), ga.uuid, gb.uuid,
                              f"{_label(k, ga, gb)} at {_pci_str(k)} is another GPU "
                              f"(UUID {ga.uuid} → {gb.uuid})"))
        elif ga.label != gb.label:
            out.append(Change("gpu.renumbered", gb.label, ga.label, gb.label,
                              f"the GPU at {_pci_str(k)} was {ga.label}, is now {gb.label}"))
    out.sort(key=lambda c: c.subject)


def _gpu_desc(g: GPU) -> Dict[str, Any]:
    return {"label": g.label, "name": g.name, "uuid": g.uuid, "pci_bus_id": g.pci_bus_id}


def _nics(a: Topology, b: Topology, out: List[Change]) -> None:
    na, nb = {n.name for n in a.nics}, {n.name for n in b.nics}
    for n in sorted(na - nb):
        out.append(Change("nic.removed", n, n, None, f"{n} is gone"))
    for n in sorted(nb - na):
        out.append(Change("nic.added", n, None, n, f"{n} is new"))
    by_b = {n.name: n for n in b.nics}
    for x in a.nics:
        y = by_b.get(x.name)
        if y is None:
            continue
        ga = x.sysfs.node_guid if x.sysfs is not None else None
        gb = y.sysfs.node_guid if y.sysfs is not None else None
        if ga and gb and ga != gb:
            out.append(Change("nic.replaced", x.name, ga, gb,
                              f"{x.name} is another device (node GUID {ga} → {gb})"))
        pa = (x.sysfs.pci_address if x.sysfs is not None else None) or x.pci_bus_id
        pb = (y.sysfs.pci_address if y.sysfs is not None else None) or y.pci_bus_id
        if pa and pb and pci_bdf(pa) != pci_bdf(pb):
            out.append(Change("nic.moved", x.name, pa, pb,
                              f"{x.name} is at another PCI address ({pa} → {pb}): moved, "
                              "or the devices were named in another order"))
    da = a.sysfs.gpudirect if a.sysfs is not None else None
    db = b.sysfs.gpudirect if b.sysfs is not None else None
    if da is not None and db is not None and da.peermem_loaded != db.peermem_loaded:
        out.append(Change("nic.gpudirect", "node", da.peermem_loaded, db.peermem_loaded,
                          "GPUDirect RDMA peer memory module "
                          + ("loaded" if db.peermem_loaded else "no longer loaded")
                          + " (nvidia_peermem / nv_peer_mem)"))


def _grouped(kind: str, items: List[Tuple[str, Any, Any, str]], out: List[Change],
             noun: str) -> None:
    """One change per subject, or one per (before, after) when many subjects changed alike."""
    groups: Dict[Tuple[str, str], List[Tuple[str, Any, Any, str]]] = {}
    for it in items:
        groups.setdefault((repr(it[1]), repr(it[2])), []).append(it)
    for members in groups.values():
        if len(members) > GROUP_OVER:
            subj = f"{len(members)} {noun}"
            _, before, after, _ = members[0]
            names = ", ".join(m[0] for m in members[:8]) + (", …" if len(members) > 8 else "")
            out.append(Change(kind, subj, before, after,
                              f"{len(members)} {noun} changed from {_show(before)} to "
                              f"{_show(after)}: {names}"))
        else:
            for subject, before, after, message in members:
                out.append(Change(kind, subject, before, after, message))


def _show(v: Any) -> str:
    return "none" if v is None else str(v)


def _nvlink_pairs(a: Topology, b: Topology, ka: Dict[Any, GPU], kb: Dict[Any, GPU],
                  out: List[Change]) -> None:
    def pairs(t: Topology, keys: Dict[Any, GPU]) -> Dict[Tuple[Any, Any], int]:
        by_index = {g.index: k for k, g in keys.items()}
        res = {}
        for p in t.nvlinks:
            x, y = by_index.get(p.a), by_index.get(p.b)
            if x is None or y is None:
                continue
            res[tuple(sorted((x, y), key=repr))] = p.count
        return res

    pa, pb = pairs(a, ka), pairs(b, kb)
    common = ka.keys() & kb.keys()
    items = []
    for key in sorted(pa.keys() | pb.keys(), key=repr):
        if key[0] not in common or key[1] not in common:
            continue  # a GPU added or removed: said once, by gpu.*
        ca, cb = pa.get(key), pb.get(key)
        if ca == cb or (ca in (None, 0) and cb in (None, 0)):
            continue
        x = _label(key[0], ka[key[0]], kb[key[0]]).split(" ")[0]
        y = _label(key[1], ka[key[1]], kb[key[1]]).split(" ")[0]
        lo, hi = sorted((x, y), key=lambda s: ascii_int(s[3:]) or 0)
        fa, fb = (f"NV{ca}" if ca else None), (f"NV{cb}" if cb else None)
        items.append((f"{lo}-{hi}", fa, fb,
                      f"{lo}-{hi}: {_show(fa)} → {_show(fb)}"))
    items.sort(key=lambda it: [ascii_int(x) or 0 for x in re.findall(r"[0-9]+", it[0])])
    _grouped("nvlink.pair", items, out, "GPU pairs")


def _links(g: GPU) -> Dict[int, Any]:
    return {ln.link: ln for ln in g.nvml.nvlink.links} if g.nvml is not None else {}


def _nvlink_links(ka: Dict[Any, GPU], kb: Dict[Any, GPU], out: List[Change]) -> None:
    items: List[Tuple[str, Any, Any, str]] = []
    for k in sorted(ka.keys() & kb.keys(), key=lambda k: kb[k].index):
        ga, gb = ka[k], kb[k]
        la, lb = _links(ga), _links(gb)
        if not la or not lb:
            continue
        name = _label(k, ga, gb)
        by_change: Dict[Tuple[str, str], List[int]] = {}
        for n in sorted(la.keys() | lb.keys()):
            sa = la[n].state if n in la else None
            sb = lb[n].state if n in lb else None
            if sa != sb:
                by_change.setdefault((str(sa), str(sb)), []).append(n)
            _counter_deltas(f"{name} link {n}", la[n].errors if n in la else None,
                            lb[n].errors if n in lb else None, "nvlink", out)
        for (sa, sb), nums in by_change.items():
            runs = int_runs(nums, pairs=True, sep=",")
            subj = f"{name} link{'s' if len(nums) > 1 else ''} {runs}"
            reason = next((lb[n].reason for n in nums if n in lb and lb[n].reason), None)
            items.append((subj, sa, sb, f"{subj}: {sa} → {sb}"
                          + (f" ({reason})" if reason else "")))
    _grouped("nvlink.link_state", items, out, "GPUs' links")


def _counter_deltas(subject: str, ca: Any, cb: Any, family: str, out: List[Change],
                    traffic: Optional[Dict[str, Any]] = None,
                    traffic_b: Optional[Dict[str, Any]] = None) -> None:
    """Error counters that grew (delta); any counter that went down (a reset)."""
    ca = ca if isinstance(ca, dict) else {}
    cb = cb if isinstance(cb, dict) else {}
    grew: Dict[str, int] = {}
    down: Dict[str, Tuple[int, int]] = {}
    for name in sorted(ca.keys() & cb.keys()):
        va, vb = ca[name], cb[name]
        if not isinstance(va, int) or not isinstance(vb, int) or isinstance(va, bool):
            continue
        if vb > va:
            grew[name] = vb - va
        elif vb < va:
            down[name] = (va, vb)
    ta, tb = traffic or {}, traffic_b or {}
    for name in sorted(ta.keys() & tb.keys()):
        va, vb = ta[name], tb[name]
        if isinstance(va, int) and isinstance(vb, int) and vb < va:
            down[name] = (va, vb)
    if down:
        out.append(Change(
            f"{family}.counter_reset", subject, {k: v[0] for k, v in down.items()},
            {k: v[1] for k, v in down.items()},
            f"{subject}: counters went down ({', '.join(f'{k} {v[0]}→{v[1]}' for k, v in down.items())}): "
            "they were reset between the snapshots (reboot, driver reload or port reset); "
            "B's values count only since the reset"))
    if grew:
        out.append(Change(
            f"{family}.counter_grew", subject, {k: ca[k] for k in grew}, {k: cb[k] for k in grew},
            f"{subject}: error counters grew: "
            + ", ".join(f"{k} +{v}" for k, v in grew.items())
            + (" (after a reset: the growth is at least this)" if down else "")))


def _fabric(ka: Dict[Any, GPU], kb: Dict[Any, GPU], out: List[Change]) -> None:
    items = []
    for k in sorted(ka.keys() & kb.keys(), key=lambda k: kb[k].index):
        na, nb = ka[k].nvml, kb[k].nvml
        fa = na.fabric if na is not None else None
        fb = nb.fabric if nb is not None else None
        if fa is None or fb is None:
            continue
        sa = f"{fa.state}/{fa.health_summary}"
        sb = f"{fb.state}/{fb.health_summary}"
        if sa != sb:
            name = _label(k, ka[k], kb[k])
            items.append((name, sa, sb, f"{name} fabric: {sa} → {sb}"))
    _grouped("fabric.state", items, out, "GPUs")


def _pcie_of(dev: Any, nic: bool = False) -> Tuple[Optional[str], str]:
    """A GPU's (or a NIC's) PCIe link as ``Gen5 x16``, and the source: sysfs, else NVML."""
    link = None
    if dev.sysfs is not None:
        pci = dev.sysfs.pci if nic else dev.sysfs
        link = pci.link if pci is not None else None
    if link is not None and link.current_width is not None:
        return f"Gen{link.current_gen} x{link.current_width}", "sysfs"
    if not nic and dev.nvml is not None:
        p = dev.nvml.pcie
        if p.current_width is not None:
            return f"Gen{p.current_gen} x{p.current_width}", "nvml"
    return None, ""


def _pcie(ka: Dict[Any, GPU], kb: Dict[Any, GPU], a: Topology, b: Topology,
          out: List[Change]) -> None:
    for k in sorted(ka.keys() & kb.keys(), key=lambda k: kb[k].index):
        ga, gb = ka[k], kb[k]
        name = _label(k, ga, gb)
        (la, sa), (lb, sb) = _pcie_of(ga), _pcie_of(gb)
        if la and lb and sa == sb and la != lb:
            out.append(Change("pcie.link", name, la, lb, f"{name} PCIe link: {la} → {lb}"))
        ra = ga.nvml.pcie.replay_counter if ga.nvml is not None else None
        rb = gb.nvml.pcie.replay_counter if gb.nvml is not None else None
        _counter_deltas(f"{name} PCIe", {"replay_counter": ra}, {"replay_counter": rb},
                        "pcie", out)
    nb = {n.name: n for n in b.nics}
    for na in a.nics:
        other = nb.get(na.name)
        if other is None:
            continue
        (la, sa), (lb, sb) = _pcie_of(na, nic=True), _pcie_of(other, nic=True)
        if la and lb and la != lb:
            out.append(Change("pcie.link", na.name, la, lb, f"{na.name} PCIe link: {la} → {lb}"))


def _ports_of(t: Topology) -> Dict[str, Tuple[Port, Optional[str]]]:
    """``mlx5_0 port 1`` -> (the port, its device's node GUID)."""
    res = {}
    for n in t.nics:
        if n.sysfs is None:
            continue
        for p in n.sysfs.ports:
            res[f"{n.name} port {p.port}"] = (p, n.sysfs.node_guid)
    return res


def _ports(a: Topology, b: Topology, out: List[Change]) -> None:
    pa, pb = _ports_of(a), _ports_of(b)
    for subj in sorted(pa.keys() & pb.keys()):
        (x, guid_a), (y, guid_b) = pa[subj], pb[subj]
        sa = f"{x.state}/{x.phys_state}"
        sb = f"{y.state}/{y.phys_state}"
        if sa != sb:
            out.append(Change("ib.port_state", subj, sa, sb, f"{subj}: {sa} → {sb}"))
        ra, rb = x.rate_gbps, y.rate_gbps
        if ra != rb and ra is not None and rb is not None:
            out.append(Change("ib.rate", subj, ra, rb, f"{subj}: {ra:g} → {rb:g} Gb/s"))
        if x.link_layer != y.link_layer:
            out.append(Change("ib.link_layer", subj, x.link_layer, y.link_layer,
                              f"{subj}: link layer {x.link_layer} → {y.link_layer}"))
        if guid_a and guid_b and guid_a != guid_b:
            continue  # another device under the name (nic.replaced): counters not comparable
        ca, cb = x.counters or {}, y.counters or {}
        err_a = {k: v for k, v in ca.items() if k in ERROR_COUNTERS}
        err_b = {k: v for k, v in cb.items() if k in ERROR_COUNTERS}
        err_a.update(x.hw_counters or {})
        err_b.update(y.hw_counters or {})
        traffic_a = {k: v for k, v in ca.items() if k not in ERROR_COUNTERS}
        traffic_b = {k: v for k, v in cb.items() if k not in ERROR_COUNTERS}
        _counter_deltas(subj, err_a, err_b, "ib", out, traffic_a, traffic_b)


def _paths(a: Topology, b: Topology, ka: Dict[Any, GPU], kb: Dict[Any, GPU],
           out: List[Change]) -> None:
    """GPU↔NIC path tokens (a NIC moved to another PCIe switch, another socket)."""
    if a.matrix is None or b.matrix is None:
        return
    items = []
    nics_b = {n.name: n for n in b.nics}
    for k in sorted(ka.keys() & kb.keys(), key=lambda k: kb[k].index):
        ga, gb = ka[k], kb[k]
        for na in a.nics:
            nb = nics_b.get(na.name)
            if nb is None:
                continue
            pa, pb = a.path(ga.label, na.label), b.path(gb.label, nb.label)
            if pa is not None and pb is not None and pa != pb:
                subj = f"{gb.label}-{na.name}"
                items.append((subj, pa, pb, f"{subj} path: {pa} → {pb}"))
    _grouped("path.gpu_nic", items, out, "GPU-NIC paths")


# --- verdicts --------------------------------------------------------------------------------


def verdicts(a: Topology, b: Topology, not_compared: Iterable[str] = ()) -> Dict[str, Any]:
    """Check both (auto layout): the verdict of each and the findings new in B / gone from A.

    Findings from a source only one input holds (``not_compared``) are neither new nor
    resolved: they go to ``unconfirmed``, and ``not_compared`` names the sources."""
    from . import checks

    res: Dict[str, Any] = {}
    found: Dict[str, List[Any]] = {}  # side -> its errors and warnings (checks' findings)
    for side, t in (("before", a), ("after", b)):
        if not t.gpus and t.matrix is None and t.p2p is None:
            res[side] = None
            res[f"layout_{side}"] = None
            found[side] = []
            continue
        report = checks.select_and_run(t)
        res[side] = report.verdict
        res[f"layout_{side}"] = report.layout_name
        found[side] = [x for x in report.findings if x.severity in ("error", "warning")]
    keys_a = {(x.code, x.subject) for x in found["before"]}
    keys_b = {(x.code, x.subject) for x in found["after"]}
    missing = set(not_compared or ())

    def comparable(x: Any) -> bool:
        used = set(re.split(r"[^a-z-]+", x.source or "")) & set(FACT_SOURCES)
        return not (used & missing) and not (missing and not used)

    new = [x for x in found["after"] if (x.code, x.subject) not in keys_a]
    gone = [x for x in found["before"] if (x.code, x.subject) not in keys_b]
    res["new"] = [x.to_dict() for x in new if comparable(x)]
    res["resolved"] = [x.to_dict() for x in gone if comparable(x)]
    if missing:
        res["not_compared"] = sorted(missing)
        res["unconfirmed"] = [dict(x.to_dict(), side=side) for side, xs in
                              (("B only", new), ("A only", gone)) for x in xs
                              if not comparable(x)]
    return res


def diff_files(path_a: str, path_b: str) -> Diff:
    a, sa = _load(path_a)
    b, sb = _load(path_b)
    d = compare(a, b, a.origin.file or path_a, b.origin.file or path_b, sa, sb)
    d.verdict = verdicts(a, b, d.sources.get("not_compared") or ())
    return d


def _load(path: str) -> Tuple[Topology, Dict[str, str]]:
    """The model, and which fact sources gave evidence (a snapshot's probe statuses)."""
    from . import snapshot

    opened = snapshot.open_input(snapshot.Input(path=path, want=snapshot.MODEL_AND_DOCUMENT,
                                                command="diff"))
    t, doc = opened.model, opened.document
    return t, (source_states(t, doc) if doc else source_states(t))
