"""The walker: which NVML questions are asked, in which order, and the plain facts made of
the answers.

:func:`walk` asks a source (:mod:`.source`) everything the probe needs.  Each question
depends only on earlier answers, so a replay of a recording asks exactly what the live
probe asked, and nothing else.  Three answers are kept apart everywhere: *absent* (no
NVML, no GPU), *unknown* (a call NVML does not support or may not be made), and *bad* (a
link that went down, a GPU that fell off the bus).  Nothing here raises for them.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .source import Answer, Checked, FieldId, Gpu, Source, Stop, call_key, field_key
from .vocab import (C2C_GPU_NAMES, FI_C2C_LINK_COUNT, FI_C2C_LINK_GET_MAX_BW,
                    FI_C2C_LINK_GET_STATUS, CPU_WORDS, ERROR_COUNTERS, FALLBACK_MAX_LINKS, FI_NVLINK_GET_SPEED,
                    FI_NVLINK_SPEED_MBPS_COMMON, FI_NVLINK_SPEED_MBPS_LINK,
                    FI_NVLINK_GET_STATE, FI_NVLINK_GET_VERSION, FI_NVLINK_LINK_COUNT,
                    FI_NVLINK_REMOTE_NVLINK_ID, FI_NVSWITCH_CONNECTED_LINK_COUNT,
                    FI_PCIE_REPLAY_COUNTER, LEGACY_COUNTER_FIELDS, LINK_FIELDS,
                    LINK_STATE_FIELD, LOST, NODE_WORDS, P2P_INDEXES, UNAVAILABLE_REASONS)

#: Per-GPU questions asked once: fact name -> (function, extra args).
GPU_CALLS: Tuple[Tuple[str, str, Tuple[Any, ...]], ...] = (
    ("name", "nvmlDeviceGetName", ()),
    ("uuid", "nvmlDeviceGetUUID", ()),
    ("serial", "nvmlDeviceGetSerial", ()),
    ("pci", "nvmlDeviceGetPciInfo", ()),
    ("minor", "nvmlDeviceGetMinorNumber", ()),
    ("architecture", "nvmlDeviceGetArchitecture", ()),
    ("compute_capability", "nvmlDeviceGetCudaComputeCapability", ()),
    ("memory", "nvmlDeviceGetMemoryInfo", ()),
    ("cpu_affinity", "nvmlDeviceGetCpuAffinity", (CPU_WORDS,)),
    ("memory_affinity", "nvmlDeviceGetMemoryAffinity", (NODE_WORDS, 0)),
    ("numa_node_id", "nvmlDeviceGetNumaNodeId", ()),
    ("pcie_current_gen", "nvmlDeviceGetCurrPcieLinkGeneration", ()),
    ("pcie_max_gen", "nvmlDeviceGetMaxPcieLinkGeneration", ()),
    ("pcie_gpu_max_gen", "nvmlDeviceGetGpuMaxPcieLinkGeneration", ()),
    ("pcie_current_width", "nvmlDeviceGetCurrPcieLinkWidth", ()),
    ("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth", ()),
    ("mig_mode", "nvmlDeviceGetMigMode", ()),
    ("persistence_mode", "nvmlDeviceGetPersistenceMode", ()),
    ("fabric", "nvmlDeviceGetGpuFabricInfoV", ()),
)


class _GpuWalk:
    """Per-GPU asking that stops at the first GpuIsLost: a lost GPU is a fault, not a crash."""

    def __init__(self, src: Source, index: int, rec: Dict[str, Any]) -> None:
        self.src = src
        self.index = index
        self.rec = rec

    @property
    def lost(self) -> bool:
        return self.rec.get("fault") is not None

    def _check(self, key: Callable[[], str], ans: Answer) -> Answer:
        """``key`` makes the call's recording key (only needed when the GPU is lost)."""
        if ans.error in LOST and not self.lost:
            call = key()
            self.rec["fault"] = {"kind": "lost", "call": call,
                                 "message": f"GPU {self.index} fell off the bus (GpuIsLost) "
                                            f"at {call}; later questions were not asked"}
        return ans

    def call(self, fn: str, *args: Any) -> Answer:
        if self.lost:
            return Answer(error="Skipped", detail="GPU lost earlier in the probe")
        full = (Gpu(self.index),) + args
        return self._check(lambda: call_key(fn, full), self.src.call(fn, *full))

    def optional(self, fn: str) -> Answer:
        if self.lost:
            return Answer(error="Skipped", detail="GPU lost earlier in the probe")
        full = (Gpu(self.index),)
        return self._check(lambda: call_key(fn, full), self.src.optional(fn, *full))

    def fields(self, ids: Sequence[FieldId]) -> Dict[FieldId, Answer]:
        if self.lost or not ids:
            return {k: Answer(error="Skipped") for k in ids}
        out = self.src.fields(self.index, ids)
        for k, ans in out.items():
            self._check(lambda k=k: field_key(self.index, *k), ans)  # type: ignore[misc]
        return out


def _val(ans: Answer) -> Any:
    return ans.value if ans.ok else None


def _why(ans: Answer) -> str:
    return {"not_supported": "not_supported", "not_permitted": "not_permitted",
            "no_such": "not_supported", "lost": "gpu_lost",
            "bad_value": "bad_value"}.get(ans.meaning or "", "error")


def walk(src: Source) -> Dict[str, Any]:
    """Ask NVML everything the probe needs; return raw-ish facts (plain data).

    ``src`` is any :class:`~.source.Source` (live, replayed, simulated); the questions
    depend only on earlier answers, so a replay asks exactly what the live probe asked.
    """
    facts: Dict[str, Any] = {"status": "ok", "reason": None, "system": {}, "gpus": [],
                             "pairs": {}, "incomplete": None, "bad_values": [],
                             "corrupt": None}
    try:
        _walk(Checked(src, facts["bad_values"]), facts)
    except Stop as stop:
        facts["incomplete"] = {"call": stop.key, "gpu": stop.gpu}
        for rec in facts["gpus"]:
            if rec["index"] == stop.gpu and rec.get("fault") is None:
                rec["fault"] = {"kind": "timeout", "call": stop.key,
                                "message": f"GPU {stop.gpu} did not answer {stop.key} before "
                                           "the deadline"}
    return facts


def _walk(src: Source, facts: Dict[str, Any]) -> None:
    init = src.call("nvmlInit")
    if not init.ok:
        facts["status"] = "unavailable"
        facts["reason"] = UNAVAILABLE_REASONS.get(init.error or "",
                                                  f"nvmlInit failed: {init.error}")
        return
    system = facts["system"]
    for name, fn in (("driver_version", "nvmlSystemGetDriverVersion"),
                     ("nvml_version", "nvmlSystemGetNVMLVersion"),
                     ("cuda_driver_version", "nvmlSystemGetCudaDriverVersion")):
        system[name] = _val(src.call(fn))
    count = src.call("nvmlDeviceGetCount")
    if count.meaning == "bad_value":
        bad = facts["bad_values"][-1]
        facts["corrupt"] = (f"nvmlDeviceGetCount() is recorded as {bad['value']}, not a GPU "
                            f"count ({bad['expected']})")
        return
    if not count.ok:
        facts["status"] = "unavailable"
        facts["reason"] = f"nvmlDeviceGetCount failed: {count.error}"
        return
    system["device_count"] = count.value
    walkers: List[_GpuWalk] = []
    for i in range(count.value):
        rec: Dict[str, Any] = {"index": i, "fault": None, "facts": {}, "unavailable": {}}
        facts["gpus"].append(rec)
        handle = src.call("nvmlDeviceGetHandleByIndex", i)
        if not handle.ok:
            kind = {"lost": "lost", "not_permitted": "not_permitted"}.get(handle.meaning or "",
                                                                         "no_handle")
            rec["fault"] = {"kind": kind, "call": f"nvmlDeviceGetHandleByIndex({i})",
                            "message": f"GPU {i} is counted by NVML but its handle failed "
                                       f"({handle.error})"}
            continue
        g = _GpuWalk(src, i, rec)
        walkers.append(g)
        _walk_gpu(g)
    usable = [g for g in walkers if not g.lost]
    for a in usable:
        for b in usable:
            if a.index == b.index or a.lost or b.lost:
                continue
            pair = facts["pairs"].setdefault(f"{a.index}-{b.index}", {})
            for name, idx in P2P_INDEXES:
                ans = src.call("nvmlDeviceGetP2PStatus", Gpu(a.index), Gpu(b.index), idx)
                a._check(lambda a=a, b=b, idx=idx: call_key(  # type: ignore[misc]
                    "nvmlDeviceGetP2PStatus", (Gpu(a.index), Gpu(b.index), idx)), ans)
                pair[f"p2p_{name}"] = ans.value if ans.ok else None
            if a.index < b.index:
                ans = src.call("nvmlDeviceGetTopologyCommonAncestor", Gpu(a.index),
                               Gpu(b.index))
                pair["ancestor"] = ans.value if ans.ok else None


def _walk_gpu(g: _GpuWalk) -> None:
    f = g.rec["facts"]
    for name, fn, extra in GPU_CALLS:
        ans = g.call(fn, *extra)
        if ans.ok:
            f[name] = ans.value
        else:
            g.rec["unavailable"][name] = _why(ans)
        if g.lost:
            return
    _walk_platform(g)
    if g.lost:
        return
    _walk_c2c(g)
    if g.lost:
        return
    # Batch 1: link count, switch-connected link count, PCIe replay counter.
    b1 = g.fields([(FI_NVLINK_LINK_COUNT, 0), (FI_NVSWITCH_CONNECTED_LINK_COUNT, 0),
                   (FI_PCIE_REPLAY_COUNTER, 0)])
    if g.lost:
        return
    replay = b1[(FI_PCIE_REPLAY_COUNTER, 0)]
    if not replay.ok:
        replay = g.call("nvmlDeviceGetPcieReplayCounter")
    f["pcie_replay_counter"] = _val(replay)
    sw = b1[(FI_NVSWITCH_CONNECTED_LINK_COUNT, 0)]
    f["nvswitch_links"] = _val(sw)
    nv: Dict[str, Any] = {"status": None, "count": None, "count_source": None, "links": []}
    g.rec["nvlink"] = nv
    state_fn = _link_count(g, nv, b1[(FI_NVLINK_LINK_COUNT, 0)])
    if state_fn is None:
        return
    n = int(nv["count"])
    nv["status"] = "ok"
    # Field 91 is trusted as the number of links present (the header's meaning; whether it
    # can count active links only is an open point, docs/nvml.md §8).  It is bounded by
    # MAX_LINKS (a bad value is caught above).
    batch = g.fields([(fid, link) for link in range(n) for fid in LINK_FIELDS]
                     + [(fids[link], 0) for fids in LEGACY_COUNTER_FIELDS.values()
                        for link in range(min(n, len(fids)))])
    if g.lost:
        return
    version_checked = False
    counters = _Counters(g, batch)
    for link in range(n):
        lr: Dict[str, Any] = {"link": link, "state": None, "state_source": None,
                              "version": None, "speed_mbps": None, "remote_type": None,
                              "remote_pci": None, "remote_link": None, "errors": {},
                              "unavailable": {}}
        nv["links"].append(lr)
        if not _link_state(g, lr, batch[(FI_NVLINK_GET_STATE, link)], state_fn, link):
            continue
        if lr["state"] not in ("active", "sleep"):
            continue  # remote answers on inactive links are undocumented: do not ask
        ver = batch[(FI_NVLINK_GET_VERSION, link)]
        lr["version"] = _val(_link_version(g, nv, ver, link, not version_checked))
        version_checked = True
        _link_details(g, lr, batch, counters, link)
    _older_speeds(g, nv["links"])


def _walk_platform(g: _GpuWalk) -> None:
    """Platform info (chassis, slot, tray, module): an optional question; a recording
    without it, or a library without the function, leaves the fact unknown and unnoted."""
    ans = g.optional("nvmlDeviceGetPlatformInfo")
    if ans.ok:
        g.rec["facts"]["platform"] = ans.value
    elif ans.error not in ("NotRecorded", "Skipped"):
        g.rec["unavailable"]["platform"] = _why(ans)


def _link_count(g: _GpuWalk, nv: Dict[str, Any], n_ans: Answer) -> Optional[Dict[int, Answer]]:
    """Set the NVLink count (field 91, else by asking link after link); the link states
    read on the way (empty when the field answered), or None when there is no link to walk
    (``nv["status"]`` then says why)."""
    state_fn: Dict[int, Answer] = {}
    if n_ans.meaning == "bad_value":  # no link loop on a count that is not one
        nv["status"] = "unknown"
        g.rec["unavailable"]["nvlink_count"] = "bad_value"
        return None
    if n_ans.ok:
        nv["count"], nv["count_source"] = n_ans.value, "field"
        if n_ans.value == 0:
            nv["status"] = "not_supported"
            return None
        return state_fn
    # Field 91 unanswered: walk links until InvalidArgument (past the last link).
    for link in range(FALLBACK_MAX_LINKS):
        ans = g.call("nvmlDeviceGetNvLinkState", link)
        if g.lost:
            nv["status"] = "gpu_lost"  # (a status is text: the model refuses null)
            return None
        if ans.meaning == "no_such" or (link == 0 and ans.meaning == "not_supported"):
            break
        state_fn[link] = ans
    if not state_fn:
        nv["status"] = "not_supported" if ans.meaning in ("not_supported", "no_such") \
            else _why(ans)
        nv["count"] = 0 if nv["status"] == "not_supported" else None
        return None
    nv["count"], nv["count_source"] = len(state_fn), "probe"
    return state_fn


def _link_state(g: _GpuWalk, lr: Dict[str, Any], st: Answer, state_fn: Dict[int, Answer],
                link: int) -> bool:
    """Set the link's state (field, else the function); False when it could not be read."""
    if st.ok:
        lr["state"], lr["state_source"] = LINK_STATE_FIELD[st.value], "field"
        return True
    if st.meaning == "bad_value":
        lr["unavailable"]["state"] = "bad_value"
        return False
    ans = state_fn.get(link) or g.call("nvmlDeviceGetNvLinkState", link)
    if ans.ok:
        lr["state"] = "active" if ans.value == 1 else "inactive"
        lr["state_source"] = "function"
        return True
    lr["unavailable"]["state"] = _why(ans)
    return False


def _link_version(g: _GpuWalk, nv: Dict[str, Any], ver: Answer, link: int,
                  first: bool) -> Answer:
    """The link's NVLink version: the field's answer, or the function's where they differ."""
    if first:
        # The field's encoding is assumed equal to nvmlDeviceGetNvLinkVersion's enum;
        # check that once per GPU and trust the function if they differ.
        fn_ver = g.call("nvmlDeviceGetNvLinkVersion", link)
        if fn_ver.ok and (not ver.ok or ver.value != fn_ver.value):
            nv["version_source"] = "function"
        else:
            nv["version_source"] = "field"
        if not ver.ok or nv["version_source"] == "function":
            ver = fn_ver
    elif nv.get("version_source") == "function" or not ver.ok:
        ver = g.call("nvmlDeviceGetNvLinkVersion", link)
    return ver


def _link_details(g: _GpuWalk, lr: Dict[str, Any], batch: Dict[FieldId, Answer],
                  counters: "_Counters", link: int) -> None:
    """An active link's speed, remote end and error counters."""
    speed = batch[(FI_NVLINK_GET_SPEED, link)]
    lr["speed_mbps"] = _val(speed)
    rid = batch[(FI_NVLINK_REMOTE_NVLINK_ID, link)]
    lr["remote_link"] = _val(rid)
    rtype = g.call("nvmlDeviceGetNvLinkRemoteDeviceType", link)
    lr["remote_type"] = _val(rtype)
    if not rtype.ok:
        lr["unavailable"]["remote_type"] = _why(rtype)
    rpci = g.call("nvmlDeviceGetNvLinkRemotePciInfo", link)
    lr["remote_pci"] = _val(rpci)
    if not rpci.ok:
        lr["unavailable"]["remote_pci"] = _why(rpci)
    for cname, fid, counter in ERROR_COUNTERS:
        ans = counters.read(cname, fid, counter, link)
        if ans.ok:
            lr["errors"][cname] = ans.value
        else:
            lr["errors"][cname] = None
            lr["unavailable"][f"errors.{cname}"] = _why(ans)


def _walk_c2c(g: _GpuWalk) -> None:
    """NVLink-C2C (the Grace CPU-GPU link): mode, link count, each link's status and
    maximum bandwidth.  Asked only of Grace superchips (by name: vocab.C2C_GPU_NAMES), so
    recordings of other GPUs do not change; ``rec["c2c"]`` is absent elsewhere."""
    name = g.rec["facts"].get("name")
    if not isinstance(name, str) or not any(t in name for t in C2C_GPU_NAMES):
        return
    c2c: Dict[str, Any] = {"enabled": None, "count": None, "links": [], "unavailable": {}}
    g.rec["c2c"] = c2c
    mode = g.call("nvmlDeviceGetC2cModeInfoV")
    if mode.ok and isinstance(mode.value, dict) and "isC2cEnabled" in mode.value:
        c2c["enabled"] = mode.value["isC2cEnabled"]
    elif not mode.ok:
        c2c["unavailable"]["mode"] = _why(mode)
    if g.lost:
        return
    count = g.fields([(FI_C2C_LINK_COUNT, 0)])[(FI_C2C_LINK_COUNT, 0)]
    if not count.ok:
        c2c["unavailable"]["count"] = _why(count)
        return
    c2c["count"] = count.value
    if not count.value or g.lost:
        return
    batch = g.fields([(fid, link) for link in range(count.value)
                      for fid in (FI_C2C_LINK_GET_STATUS, FI_C2C_LINK_GET_MAX_BW)])
    for link in range(count.value):
        st = batch[(FI_C2C_LINK_GET_STATUS, link)]
        bw = batch[(FI_C2C_LINK_GET_MAX_BW, link)]
        lr = {"link": link, "status": _val(st), "max_bw_mbps": _val(bw), "unavailable": {}}
        if not st.ok:
            lr["unavailable"]["status"] = _why(st)
        if not bw.ok:
            lr["unavailable"]["max_bw"] = _why(bw)
        c2c["links"].append(lr)


def _older_speeds(g: _GpuWalk, links: List[Dict[str, Any]]) -> None:
    """Speeds of active links field 164 gave none for, from the older per-link fields
    (NVML_FI_DEV_NVLINK_SPEED_MBPS_Ln, else _COMMON): NVLink 1/2 GPUs answer only those.
    Asked only where needed, so recordings of newer GPUs do not change."""
    slow = [lr for lr in links if lr["state"] in ("active", "sleep") and not lr["speed_mbps"]
            and lr["link"] < len(FI_NVLINK_SPEED_MBPS_LINK)]
    if not slow or g.lost:
        return
    ans = g.fields([(FI_NVLINK_SPEED_MBPS_LINK[lr["link"]], 0) for lr in slow]
                   + [(FI_NVLINK_SPEED_MBPS_COMMON, 0)])
    common = ans[(FI_NVLINK_SPEED_MBPS_COMMON, 0)]
    for lr in slow:
        own = ans[(FI_NVLINK_SPEED_MBPS_LINK[lr["link"]], 0)]
        best = own if own.ok and own.value else common
        if best.ok and best.value:
            lr["speed_mbps"] = best.value


class _Counters:
    """NVLink error counters of one GPU: from the field batch where NVML has a field, else
    nvmlDeviceGetNvLinkErrorCounter; a counter the function does not support on one link is
    not asked again on the others (support is per GPU, not per link)."""

    def __init__(self, g: _GpuWalk, batch: Dict[FieldId, Answer]) -> None:
        self.g = g
        self.batch = batch
        self.unsupported: Dict[str, int] = {}
        self.checked: set = set()
        self.use_function: set = set()

    def read(self, cname: str, fid: Optional[int], counter: int, link: int) -> Answer:
        legacy = LEGACY_COUNTER_FIELDS.get(cname, ())
        if fid is not None:
            field = self.batch.get((fid, link))
        else:
            field = self.batch.get((legacy[link], 0)) if link < len(legacy) else None
        if field is not None and field.ok and legacy and cname not in self.checked:
            self.checked.add(cname)  # is the per-link field the function's counter?
            fn = self._function(cname, counter, link)
            if fn.ok and fn.value != field.value:
                self.use_function.add(cname)
                return fn
            return field
        if field is not None and field.ok and cname not in self.use_function:
            return field
        return self._function(cname, counter, link)

    def _function(self, cname: str, counter: int, link: int) -> Answer:
        if cname in self.unsupported:
            return Answer(error="NotSupported",
                          detail=f"not asked: NotSupported on link {self.unsupported[cname]}")
        ans = self.g.call("nvmlDeviceGetNvLinkErrorCounter", link, counter)
        if ans.meaning == "not_supported":
            self.unsupported[cname] = link
        return ans
