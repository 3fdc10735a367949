"""The walker's facts (:mod:`.walk`) as a model fragment: GPUs, NVLink pairs, the path and
P2P matrices, the per-GPU NVML record (``GPU.nvml``) and the node's (``Topology.nvml``),
typed (:mod:`nvtopo.model.nvml`).  Pure.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...model import GPU, Matrix, NVLinkPair, Topology, int_runs, pci_bdf
from ...model.nvlink import NvmlGpuLinks, NvmlLink, Remote
from ...model.nvml import (BadValue, C2c, C2cLink, Fault, GpuPcie, Incomplete, Mig, NvmlGpu, NvmlNode,
                           NvmlPair, NvmlPci, NvmlSystem, P2PMatrix)
from .decode import bus_id_of, cpulist, fabric_facts, platform_facts
from .links import bandwidth_gbps, classify_links, pair_counts
from .source import is_int
from .vocab import (ARCHITECTURES, C2C_LINK_STATUS, MAX_BAD_NOTES, NVLINK_VERSIONS, P2P_INDEXES, P2P_TOKENS,
                    TOPOLOGY_LEVELS, U32, U64)


def build(facts: Dict[str, Any], source: str, evidence: Optional[Dict[str, Any]] = None
          ) -> Topology:
    """The model fragment from walker facts."""
    topo = Topology(sources=[source])
    inc = facts.get("incomplete")
    node = NvmlNode(status=facts["status"], reason=facts.get("reason"),
                    system=NvmlSystem(**(facts.get("system") or {})),
                    incomplete=Incomplete(**inc) if inc else None)
    for k in ("ncalls", "duration_s"):
        v = (evidence or {}).get(k)
        setattr(node, k, v if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
    bad = facts.get("bad_values") or []
    node.bad_values = [BadValue(**b) for b in bad]
    topo.nvml = node
    for b in bad[:MAX_BAD_NOTES]:
        topo.note("nvml.bad_value", f"{b['call']} is recorded as {b['value']}, not "
                  f"{b['expected']}: that fact is unknown (damaged snapshot?)", source=source,
                  level="warning", subject=None if b["gpu"] is None else f"GPU{b['gpu']}")
    if len(bad) > MAX_BAD_NOTES:
        topo.note("nvml.bad_value", f"{len(bad) - MAX_BAD_NOTES} more recorded NVML answers "
                  "are not valid values (see extra.nvml.bad_values)", source=source,
                  level="warning")
    if facts.get("status") == "unavailable":
        topo.note("nvml.unavailable", f"NVML unavailable: {facts.get('reason')}",
                  source=source, level="info")
        return topo
    gpus = facts.get("gpus") or []
    by_bdf: Dict[Tuple[int, ...], int] = {}
    for g in gpus:
        bdf = pci_bdf(bus_id_of(g.get("facts", {}).get("pci")))
        if bdf is not None:
            by_bdf[bdf] = g["index"]
    classify_links(gpus, by_bdf)
    for g in gpus:
        topo.gpus.append(_gpu(g, source))
        if g.get("fault"):
            topo.note(f"nvml.gpu_{g['fault']['kind']}", g["fault"]["message"], source=source,
                      level="warning", subject=f"GPU{g['index']}")
    pairs = pair_counts(gpus)
    node.nvlink_pairs = [NvmlPair(**p) for p in pairs]
    for p in pairs:
        if p["count"]:
            topo.nvlinks.append(NVLinkPair(p["a"], p["b"], p["count"], source=source))
        if p.get("asymmetric"):
            topo.note("nvml.nvlink_asymmetric",
                      f"GPU{p['a']} counts {p['direct'][str(p['a'])]} links to GPU{p['b']}, "
                      f"GPU{p['b']} counts {p['direct'][str(p['b'])]} back",
                      source=source, level="warning", subject=f"GPU{p['a']}-GPU{p['b']}")
    switches: Dict[str, Dict[str, int]] = {}
    for g in gpus:
        for lr in (g.get("nvlink") or {}).get("links", []):
            if lr.get("status") == "active" and lr["remote"]["type"] == "nvswitch":
                bid = lr["remote"]["pci_bus_id"] or "unknown"
                per = switches.setdefault(bid, {})
                per[str(g["index"])] = per.get(str(g["index"]), 0) + 1
    node.nvswitch = bool(switches) or any(
        isinstance(g.get("facts", {}).get("nvswitch_links"), int)
        and g["facts"]["nvswitch_links"] > 0 for g in gpus)
    node.switches = switches
    _matrices(topo, facts, gpus, pairs, node)
    if facts.get("incomplete"):
        topo.note("nvml.timeout", _incomplete_message(facts), source=source, level="warning")
    return topo


def _incomplete_message(facts: Dict[str, Any]) -> str:
    """What a recording cut at its deadline did not reach, named: the call it stopped at,
    the GPUs it never walked, the GPU whose walk it cut, and the GPU pairs whose P2P status
    and common ancestor were not asked (the walker asks GPU after GPU, then pair after
    pair: :func:`.walk.walk`)."""
    inc = facts["incomplete"]
    call, stop = inc.get("call"), inc.get("gpu")
    text = (f"NVML did not answer {call}" if call else "the NVML probe did not finish") + (
        f" for GPU {stop}" if stop is not None else "") + " before the deadline"
    gpus = facts.get("gpus") or []
    walked = {g["index"] for g in gpus}
    count = (facts.get("system") or {}).get("device_count")
    total = count if is_int(count) and count >= 0 else len(walked)
    unknown: List[str] = []
    never = [i for i in range(total) if i not in walked]
    if never:
        unknown.append(f"every NVML fact of GPU{'s' if len(never) > 1 else ''} "
                       f"{int_runs(never)} (never reached)")
    if stop is not None and stop in walked and not str(call or "").startswith(_PAIR_CALLS):
        unknown.append(f"GPU {stop}'s facts from {call} on (its NVLink links among them)")
    raw = facts.get("pairs") or {}
    known = sum(1 for a in range(total) for b in range(a + 1, total)
                if _pair_asked(raw.get(f"{a}-{b}"), True) and _pair_asked(raw.get(f"{b}-{a}"),
                                                                          False))
    pairs = total * (total - 1) // 2
    if known < pairs:
        unknown.append(f"the P2P status and common ancestor of {pairs - known} of {pairs} GPU "
                       "pairs")
    if not unknown:
        return text + "; facts after it are unknown"
    return text + "; unknown: " + "; ".join(unknown)


#: The walker's calls about a GPU pair (asked after every GPU's own calls).
_PAIR_CALLS = ("nvmlDeviceGetP2PStatus", "nvmlDeviceGetTopologyCommonAncestor")


def _pair_asked(rec: Any, ancestor: bool) -> bool:
    """Whether every question about one ordered pair was answered (an error is an answer)."""
    if not isinstance(rec, dict):
        return False
    return all(f"p2p_{name}" in rec for name, _ in P2P_INDEXES) and (
        not ancestor or "ancestor" in rec)


def _matrices(topo: Topology, facts: Dict[str, Any], gpus: List[Dict[str, Any]],
              pairs: List[Dict[str, Any]], node: NvmlNode) -> None:
    labels = [f"GPU{g['index']}" for g in gpus]
    n = len(gpus)
    if not n:
        return
    pos = {g["index"]: i for i, g in enumerate(gpus)}
    raw = facts.get("pairs") or {}
    count = {(p["a"], p["b"]): p["count"] or 0 for p in pairs}
    unknown = {(p["a"], p["b"]) for p in pairs if p["count"] is None}
    cells: List[List[Optional[str]]] = [[None] * n for _ in range(n)]
    p2p: Dict[str, List[List[Optional[str]]]] = {
        name: [[None] * n for _ in range(n)] for name, _ in P2P_INDEXES}
    for g in gpus:
        i = pos[g["index"]]
        cells[i][i] = "X"
        for name in p2p:
            p2p[name][i][i] = "X"
    for key, rec in raw.items():
        a, b = (int(x) for x in key.split("-"))
        if a not in pos or b not in pos:
            continue
        for name, _ in P2P_INDEXES:
            v = rec.get(f"p2p_{name}")
            p2p[name][pos[a]][pos[b]] = P2P_TOKENS.get(v) if v is not None else None
        lo, hi = min(a, b), max(a, b)
        if a < b:
            lvl = rec.get("ancestor")
            tok = TOPOLOGY_LEVELS.get(lvl) if lvl is not None else None
            nvc = count.get((lo, hi), 0)
            if nvc:
                tok = f"NV{nvc}"
            elif (lo, hi) in unknown:
                tok = None  # NVLink unknown: the PCIe path alone would say "not linked"
            cells[pos[a]][pos[b]] = cells[pos[b]][pos[a]] = tok
    for (a, b), c in count.items():  # NV# even where the ancestor was not asked
        if c and a in pos and b in pos and cells[pos[a]][pos[b]] is None:
            cells[pos[a]][pos[b]] = cells[pos[b]][pos[a]] = f"NV{c}"
    if any(cells[i][j] is not None for i in range(n) for j in range(n) if i != j):
        topo.matrix = Matrix(devices=labels, cells=cells, source=topo.sources[0])
    node.p2p = {name: P2PMatrix(devices=list(labels), cells=m) for name, m in p2p.items()
                if any(m[i][j] is not None for i in range(n) for j in range(n) if i != j)}


def _gpu(g: Dict[str, Any], source: str) -> GPU:
    f = g.get("facts", {})
    gpu = GPU(index=g["index"])
    bus_id = bus_id_of(f.get("pci"))
    numa_words = f.get("memory_affinity")
    values = {
        "name": f.get("name"), "uuid": f.get("uuid"), "pci_bus_id": bus_id,
        "cpu_affinity": cpulist(f.get("cpu_affinity")),
        "numa_affinity": cpulist(numa_words) if numa_words else None,
        "gpu_numa_id": f.get("numa_node_id") if isinstance(f.get("numa_node_id"), int)
        and f.get("numa_node_id") >= 0 else None,
    }
    for k, v in values.items():
        if v is not None:
            setattr(gpu, k, v)
            gpu.sources[k] = source
    pci = f.get("pci") if isinstance(f.get("pci"), dict) else {}
    cc = f.get("compute_capability")
    mig = f.get("mig_mode")
    mem = f.get("memory")
    fault = g.get("fault")
    gpu.nvml = NvmlGpu(
        index=g["index"],
        fault=Fault(**fault) if fault else None,
        serial=f.get("serial"),
        minor_number=f.get("minor"),
        architecture=ARCHITECTURES.get(f.get("architecture"), "unknown")
        if f.get("architecture") is not None else None,
        compute_capability=f"{cc[0]}.{cc[1]}" if isinstance(cc, list) and len(cc) == 2
        else None,
        memory_total_bytes=mem.get("total") if isinstance(mem, dict)
        and is_int(mem.get("total")) and 0 <= mem["total"] <= U64 else None,
        pci=NvmlPci(bus_id=bus_id, bdf=list(pci_bdf(bus_id) or []) or None,
                    device_id=f"0x{pci['pciDeviceId']:08X}" if is_int(pci.get("pciDeviceId"))
                    and 0 <= pci["pciDeviceId"] <= U32 else None),
        pcie=GpuPcie(current_gen=f.get("pcie_current_gen"), max_gen=f.get("pcie_max_gen"),
                     gpu_max_gen=f.get("pcie_gpu_max_gen"),
                     current_width=f.get("pcie_current_width"),
                     max_width=f.get("pcie_max_width"),
                     replay_counter=f.get("pcie_replay_counter")),
        mig=Mig(current=bool(mig[0]), pending=bool(mig[1]))
        if isinstance(mig, list) and len(mig) == 2 else None,
        persistence_mode=bool(f["persistence_mode"])
        if isinstance(f.get("persistence_mode"), int) else None,
        fabric=fabric_facts(f.get("fabric")),
        platform=platform_facts(f.get("platform")),
        unavailable=dict(g.get("unavailable") or {}),
        nvlink=_nvlink_record(g.get("nvlink")),
        c2c=_c2c_record(g.get("c2c")),
    )
    return gpu


def _c2c_record(c2c: Optional[Dict[str, Any]]) -> Optional[C2c]:
    """NVLink-C2C as the model keeps it; ``None`` where it was not asked (not Grace)."""
    if not isinstance(c2c, dict):
        return None
    links = []
    for lr in c2c.get("links") or []:
        raw = lr.get("status")
        bw = lr.get("max_bw_mbps")
        links.append(C2cLink(link=lr["link"], status=C2C_LINK_STATUS.get(raw), status_raw=raw,
                             max_bw_mbps=bw if is_int(bw) else None,
                             unavailable=dict(lr.get("unavailable") or {})))
    known = all(lk.status is not None for lk in links)
    active = [lk for lk in links if lk.status == "active"]
    bws = [lk.max_bw_mbps for lk in active]
    enabled = c2c.get("enabled")
    return C2c(enabled=bool(enabled) if is_int(enabled) else None,
               link_count=c2c.get("count") if is_int(c2c.get("count")) else None,
               links_active=len(active) if known and links else None,
               bandwidth_gbps=round(sum(bws) / 1000, 1)  # type: ignore[arg-type]
               if active and all(b is not None for b in bws) else None,
               links=links, unavailable=dict(c2c.get("unavailable") or {}))


def _nvlink_record(nv: Optional[Dict[str, Any]]) -> NvmlGpuLinks:
    """The per-GPU NVLink record kept in the model (and shown by ``nvtopo links``)."""
    if not nv:
        return NvmlGpuLinks(status="unknown", total=None, active=None, links=[])
    raw = []
    for lr in nv.get("links", []):
        v = lr.get("version")
        raw.append({
            "link": lr["link"], "state": lr.get("status", "unknown"),
            "raw_state": lr.get("state"), "rule": lr.get("rule"), "reason": lr.get("reason"),
            "version": NVLINK_VERSIONS.get(v) if isinstance(v, int) else None,
            "version_raw": v, "speed_mbps": lr.get("speed_mbps"),
            "remote": Remote(**lr["remote"]) if lr.get("remote") else Remote(),
            "errors": dict(lr.get("errors") or {}),
            "unavailable": dict(lr.get("unavailable") or {}),
        })
    return NvmlGpuLinks(
        status=nv["status"],  # (the walk always sets it: text)
        total=nv.get("count"),
        count_source=nv.get("count_source"),
        active=sum(1 for x in raw if x["state"] == "active"),
        peers=nv.get("peers", []),
        switch_links_up=nv.get("switch_links_up", 0),
        bandwidth_gbps_per_direction=bandwidth_gbps(raw),
        links=[NvmlLink(**x) for x in raw],
    )
