"""NVML machine descriptions compiled into call tables.

A *machine description* is declarative: its GPUs (name, bus id, CPUs, NUMA node, PCIe,
NVLink count, version and speed, the NVSwitch each link goes to, links down, error
counts, MIG, fabric, NVLink-C2C), the direct links between GPUs, the PCIe path levels between GPU
pairs, and raw ``calls`` that override the rest.  It is the format of
``fixtures/nvml/*.json``, and what :func:`nvtopo.simulate.sources.nvml_description` makes
of a simulated machine.

:func:`compile_machine` turns it into a *call table*: canonical call keys
(:func:`nvtopo.probes.nvml.call_key`, ``nvmlDeviceGetNvLinkState(gpu0,5)``;
:func:`~nvtopo.probes.nvml.field_key` for field values) mapped to ``{"value": ...}`` or
``{"error": "NotSupported"}``, the format the NVML probe writes into snapshots.
:mod:`.nvml_record` answers the probe's questions from such a table; the test suite's
fake NVML C library serves the same table to the real ``pynvml`` wrappers.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Set, Tuple

from ..probes.nvml import ERROR_CODES, LEGACY_COUNTER_FIELDS, call_key, field_key

LEVELS = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}
P2P = {"OK": 0, "CNS": 1, "GNS": 2, "TNS": 3, "DR": 4, "NS": 5, "U": 6}


def _words(cpus: str) -> List[int]:
    bits: List[int] = []
    for part in cpus.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            bits.extend(range(int(lo), int(hi) + 1))
        elif part:
            bits.append(int(part))
    words = [0] * (max(bits) // 64 + 1 if bits else 0)
    for b in bits:
        words[b // 64] |= 1 << (b % 64)
    return words


def _pci(bus_id: str, device_id: int, subsys: int = 0) -> Dict[str, Any]:
    dom, bus, rest = bus_id.split(":")
    dev = rest.split(".")[0]
    return {"busIdLegacy": f"{int(dom, 16):04X}:{int(bus, 16):02X}:{int(dev, 16):02X}.0",
            "domain": int(dom, 16), "bus": int(bus, 16), "device": int(dev, 16),
            "pciDeviceId": device_id, "pciSubSystemId": subsys,
            "busId": f"{int(dom, 16):08X}:{int(bus, 16):02X}:{int(dev, 16):02X}.0"}


def _err(name: str) -> Dict[str, Any]:
    return {"error": name}


_Put = Callable[[str, Dict[str, Any]], None]
#: links[g][l] = (remote kind, remote bus id, remote port); a link not listed is inactive.
_Links = Dict[int, Dict[int, Tuple[str, str, int]]]


def compile_machine(desc: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """A declarative machine description -> the recording the fake serves."""
    calls: Dict[str, Dict[str, Any]] = {}
    put = calls.__setitem__
    if desc.get("init_error"):
        put("nvmlInit()", _err(desc["init_error"]))
        return calls
    put("nvmlInit()", {"value": None})
    put("nvmlSystemGetDriverVersion()", {"value": desc.get("driver_version", "550.54.15")})
    put("nvmlSystemGetNVMLVersion()", {"value": desc.get("nvml_version", "12.550.54.15")})
    put("nvmlSystemGetCudaDriverVersion()", {"value": desc.get("cuda_driver_version", 12040)})
    defaults = desc.get("gpu_defaults", {})
    gpus = [dict(defaults, **g) for g in desc["gpus"]]
    put("nvmlDeviceGetCount()", {"value": len(gpus)})
    links = _link_tables(desc, gpus)
    switch_attached = {i for i, g in enumerate(gpus)
                       if any(r[0] == "switch" for r in links[i].values())}
    for i, g in enumerate(gpus):
        _gpu_calls(put, desc, i, g, links[i])
    _pair_calls(put, desc, gpus, switch_attached)
    for k, v in desc.get("calls", {}).items():
        put(k, v)
    return calls


def _link_tables(desc: Dict[str, Any], gpus: List[Dict[str, Any]]) -> _Links:
    """Every GPU's NVLinks: to GPUs (counted pairs, then explicit links), to switches."""
    switches = desc.get("switches", {})
    links: _Links = {i: {} for i in range(len(gpus))}
    next_link = {i: 0 for i in range(len(gpus))}
    for a, b, n in desc.get("nvlinks", []):
        for _ in range(n):
            la, lb = next_link[a], next_link[b]
            next_link[a] += 1
            next_link[b] += 1
            links[a][la] = ("gpu", gpus[b]["bus_id"], lb)
            links[b][lb] = ("gpu", gpus[a]["bus_id"], la)
    for a, la, b, lb in desc.get("links", []):  # explicit: GPU a link la <-> GPU b link lb
        links[a][la] = ("gpu", gpus[b]["bus_id"], lb)
        links[b][lb] = ("gpu", gpus[a]["bus_id"], la)
    port = {k: 0 for k in switches}
    for i, g in enumerate(gpus):
        for lk, sw in enumerate(g.get("link_switches") or []):
            links[i][lk] = ("switch", switches[sw], port[sw])
            port[sw] += 1
    for i, g in enumerate(gpus):
        for lk in g.get("inactive_links", []):
            links[i].pop(lk, None)
        if isinstance(g.get("mig_mode"), list) and g["mig_mode"][0]:
            links[i].clear()
    return links


def _gpu_calls(put: _Put, desc: Dict[str, Any], i: int, g: Dict[str, Any],
               links: Dict[int, Tuple[str, str, int]]) -> None:
    """One GPU's calls: its handle, device facts, C2C, NVLinks."""
    G = f"gpu{i}"
    if g.get("handle_error"):
        put(f"nvmlDeviceGetHandleByIndex({i})", _err(g["handle_error"]))
        return
    put(f"nvmlDeviceGetHandleByIndex({i})", {"value": None})

    def scalar(fn: str, value: Any, *extra: Any) -> None:
        key = call_key(fn, [G, *extra])
        put(key, _err(value) if isinstance(value, str) and value in ERROR_CODES
            else {"value": value})

    scalar("nvmlDeviceGetName", g["name"])
    scalar("nvmlDeviceGetUUID", g["uuid"])
    scalar("nvmlDeviceGetSerial", g.get("serial", f"165{i:010d}"))
    put(call_key("nvmlDeviceGetPciInfo", [G]),
        {"value": _pci(g["bus_id"], int(g.get("pci_device_id", "0x233010DE"), 16),
                       int(g.get("pci_subsystem_id", "0x16C110DE"), 16))})
    scalar("nvmlDeviceGetMinorNumber", g.get("minor", i))
    scalar("nvmlDeviceGetArchitecture", g["architecture"])
    scalar("nvmlDeviceGetCudaComputeCapability", g["compute_capability"])
    total = g.get("memory_total", 85520809984)
    put(call_key("nvmlDeviceGetMemoryInfo", [G]),
        {"value": {"total": total, "free": total - 600 * 2**20, "used": 600 * 2**20}})
    scalar("nvmlDeviceGetCpuAffinity", _words(g["cpus"]), 64)
    scalar("nvmlDeviceGetMemoryAffinity", _words(str(g["numa"])), 4, 0)
    scalar("nvmlDeviceGetNumaNodeId", g.get("numa_node_id", "NotSupported"))
    pcie = g.get("pcie", {})
    scalar("nvmlDeviceGetCurrPcieLinkGeneration", pcie.get("current_gen", 5))
    scalar("nvmlDeviceGetMaxPcieLinkGeneration", pcie.get("max_gen", 5))
    scalar("nvmlDeviceGetGpuMaxPcieLinkGeneration", pcie.get("gpu_max_gen", 5))
    scalar("nvmlDeviceGetCurrPcieLinkWidth", pcie.get("current_width", 16))
    scalar("nvmlDeviceGetMaxPcieLinkWidth", pcie.get("max_width", 16))
    scalar("nvmlDeviceGetPcieReplayCounter", pcie.get("replay", 0))
    put(field_key(i, 94, 0), {"value": pcie.get("replay", 0)})
    scalar("nvmlDeviceGetMigMode", g.get("mig_mode", "NotSupported"))
    scalar("nvmlDeviceGetPersistenceMode", g.get("persistence_mode", 1))
    scalar("nvmlDeviceGetGpuFabricInfoV", g.get("fabric", "NotSupported"))
    if "platform" in g:  # (absent: a driver without nvmlDeviceGetPlatformInfo)
        scalar("nvmlDeviceGetPlatformInfo", g["platform"])
    c2c = g.get("c2c")  # Grace superchips: {"enabled", "count", "down", "max_bw_mbps"}
    if isinstance(c2c, dict):
        scalar("nvmlDeviceGetC2cModeInfoV", {"isC2cEnabled": int(bool(c2c["enabled"]))})
        put(field_key(i, 170, 0), {"value": c2c["count"]})
        for lk in range(c2c["count"]):
            put(field_key(i, 171, lk), {"value": 0 if lk in c2c.get("down", ()) else 1})
            put(field_key(i, 172, lk), {"value": c2c.get("max_bw_mbps", 44712)})
    elif isinstance(c2c, str):  # an error name: NotSupported ...
        scalar("nvmlDeviceGetC2cModeInfoV", c2c)
        put(field_key(i, 170, 0), _err(c2c))
    _nvlink_calls(put, desc, i, g, links)


def _nvlink_calls(put: _Put, desc: Dict[str, Any], i: int, g: Dict[str, Any],
                  links: Dict[int, Tuple[str, str, int]]) -> None:
    """A GPU's NVLink count fields and each link's calls (one past the last: invalid)."""
    G = f"gpu{i}"
    nvl = g.get("nvlink", "NotSupported")
    if nvl == "NotSupported":
        put(field_key(i, 91, 0), _err("NotSupported"))
        put(field_key(i, 147, 0), _err("NotSupported"))
        put(call_key("nvmlDeviceGetNvLinkState", [G, 0]), _err("NotSupported"))
        return
    count = nvl["count"]
    link_fields = nvl.get("link_fields", True)
    put(field_key(i, 91, 0), {"value": count} if nvl.get("count_field", True)
        else _err("NotSupported"))
    # Field 147: links wired to NVSwitch ("total", default) or those of them up ("active",
    # as NVIDIA's mock counts); which one NVML means is an open point (docs/nvml.md §8).
    sw_links = {"total": len(g.get("link_switches") or []),
                "active": sum(r[0] == "switch" for r in links.values())}
    meaning = desc.get("nvswitch_link_count", "total")
    put(field_key(i, 147, 0), {"value": sw_links[meaning]}
        if link_fields and meaning in sw_links else _err("NotSupported"))
    if not link_fields:  # older drivers: NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON
        put(field_key(i, 90, 0), {"value": nvl["speed_mbps"]})
    for lk in range(count):
        _link_calls(put, desc, i, g, lk, links.get(lk))
    for fn in ("nvmlDeviceGetNvLinkState", "nvmlDeviceGetNvLinkVersion"):
        put(call_key(fn, [G, count]), _err("InvalidArgument"))


def _link_calls(put: _Put, desc: Dict[str, Any], i: int, g: Dict[str, Any], lk: int,
                remote: Any) -> None:
    """One NVLink's calls: state, version, error counters (calls and fields), remote end."""
    G = f"gpu{i}"
    nvl = g["nvlink"]
    link_fields = nvl.get("link_fields", True)
    active = remote is not None
    put(call_key("nvmlDeviceGetNvLinkState", [G, lk]), {"value": 1 if active else 0})
    put(call_key("nvmlDeviceGetNvLinkVersion", [G, lk]), {"value": nvl["version"]})
    errs = {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0, "ecc": 0}
    errs.update(g.get("link_errors", {}).get(str(lk), {}))
    unsupported = nvl.get("unsupported_counters", [])  # e.g. ["crc_data", "ecc"]
    for c, name in enumerate(("replay", "recovery", "crc_flit", "crc_data", "ecc")):
        put(call_key("nvmlDeviceGetNvLinkErrorCounter", [G, lk, c]),
            _err("NotSupported") if name in unsupported else {"value": errs[name]})
    # Per-link field ids of the CRC-data and ECC counters (links 0-11 only).
    for name, fids in LEGACY_COUNTER_FIELDS.items():
        if lk < len(fids):
            put(field_key(i, fids[lk], 0), {"value": errs[name]}
                if link_fields and name not in unsupported else _err("NotSupported"))
    fvals = {165: 1 if active else 0, 166: nvl["version"],
             164: nvl["speed_mbps"] if active else 0,
             146: remote[2] if remote is not None else 0,
             161: errs["replay"], 162: errs["recovery"], 163: errs["crc_flit"]}
    if not link_fields and lk < 12:  # older drivers: the per-link speed fields
        put(field_key(i, (84 + lk) if lk < 6 else (126 + lk), 0),
            {"value": nvl["speed_mbps"] if active else 0})
    dl = {161: "replay", 162: "recovery", 163: "crc_flit"}
    for fid, v in fvals.items():
        put(field_key(i, fid, lk), {"value": v} if link_fields
            and dl.get(fid) not in unsupported else _err("NotSupported"))
    if remote is not None:  # (active)
        kind, bus_id, _ = remote
        put(call_key("nvmlDeviceGetNvLinkRemoteDeviceType", [G, lk]),
            {"value": {"gpu": 0, "switch": 2}[kind]})
        dev_id = int(g.get("pci_device_id", "0x233010DE"), 16) if kind == "gpu" \
            else int(desc.get("switch_device_id", "0x22A310DE"), 16)
        put(call_key("nvmlDeviceGetNvLinkRemotePciInfo", [G, lk]),
            {"value": _pci(bus_id, dev_id)})


def _pair_calls(put: _Put, desc: Dict[str, Any], gpus: List[Dict[str, Any]],
                switch_attached: Set[int]) -> None:
    """Every ordered GPU pair: P2P status by mode, the common ancestor."""
    paths = desc.get("paths", {})
    p2p = desc.get("p2p", {"read": "OK", "write": "OK", "nvlink": "auto", "atomics": "OK"})
    direct = {}
    for a, b, *_ in desc.get("nvlinks", []) + [[x[0], x[2]] for x in desc.get("links", [])]:
        direct[(a, b)] = direct[(b, a)] = True
    for a in range(len(gpus)):
        for b in range(len(gpus)):
            if a == b:
                continue
            linked = direct.get((a, b)) or (a in switch_attached and b in switch_attached)
            for idx, mode in enumerate(("read", "write", "nvlink", "atomics")):
                tok = p2p.get(mode, "OK")
                if tok == "auto":
                    tok = "OK" if linked else "NS"
                put(call_key("nvmlDeviceGetP2PStatus", [f"gpu{a}", f"gpu{b}", idx]),
                    {"value": P2P[tok]})
            pair = f"{min(a, b)}-{max(a, b)}"
            tok = paths.get("pairs", {}).get(pair)
            if tok is None:
                same = gpus[a]["numa"] == gpus[b]["numa"]
                tok = paths.get("same_numa", "NODE") if same else paths.get("other", "SYS")
            put(call_key("nvmlDeviceGetTopologyCommonAncestor", [f"gpu{a}", f"gpu{b}"]),
                {"value": LEVELS[tok]})


__all__ = ["compile_machine", "LEVELS", "P2P"]
