"""Pasted ``nvidia-smi nvlink -s/-e/-c/-R`` and ``nvidia-smi -q`` (PCI, Fabric) text as a
model fragment (source ``nvml-text``): the per-GPU records :func:`~.paste.parse` reads
become GPUs with the same NVLink record the NVML probe produces, as
``GPU.nvml_text`` (:class:`nvtopo.model.nvml.TextGpu`), so ``nvtopo links --from ticket.txt`` shows them; the ``-q``
Fabric block is encoded into NVML's codes and decoded by the one decoder
(:func:`~.decode.fabric_facts`).  Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ...model import GPU, NVLinkPair, Topology, pci_bdf
from ...model.nvlink import Remote, TextGpuLinks, TextLink
from ...model.nvml import (GpuPcie, Platform, TextGpu, TextNode, TextPair, TextPci,
                           Utilization)
from ...safe import ascii_int
from .decode import fabric_facts
from .links import bandwidth_gbps
from .paste import MAX_NOTES, looks_like, na, parse, slug
from .vocab import ERROR_CODES, FABRIC_HEALTH_BITS, INCORRECT_CONFIGURATION, U32

SOURCE = "nvml-text"
#: Notes about the paste as a whole that each GPU's block raises: said once, naming the GPUs.
ONCE_PER_PASTE = ("nvml_text.r_numbering",)

_INT_START = re.compile(r"^\s*([0-9]+)")
_NON_WORD = re.compile(r"[^A-Za-z0-9]+")
_HEX32 = re.compile(r"[0-9A-Fa-f]{32}")


#: nvidia-smi -q Fabric text -> the NVML codes fabric_facts decodes (one vocabulary).
_FABRIC_STATE = {"not_supported": 0, "not_started": 1, "in_progress": 2, "completed": 3}
_FABRIC_SUMMARY = {"not_supported": 0, "healthy": 1, "unhealthy": 2, "limited_capacity": 3}
_TRUE_FALSE = {"true": 1, "false": 2}
#: Health line -> (health mask member, text slug -> value in the mask).
_FABRIC_HEALTH = {
    "bandwidth": ("degraded_bandwidth", {"degraded": 1, "full": 2}),
    "route_recovery_in_progress": ("route_recovery", _TRUE_FALSE),
    "route_unhealthy": ("route_unhealthy", _TRUE_FALSE),
    "access_timeout_recovery": ("access_timeout_recovery", _TRUE_FALSE),
    "incorrect_configuration": ("incorrect_configuration", {
        name: code for code, name in INCORRECT_CONFIGURATION.items()}),
    "partition_assigned": ("partition_assigned", _TRUE_FALSE),
}


def fabric_raw(q: Dict[str, str]) -> Optional[Dict[str, Any]]:
    """The ``-q`` Fabric block as nvmlGpuFabricInfo members (absent where N/A or unprinted)."""
    if "Fabric / State" not in q:
        return None
    raw: Dict[str, Any] = {}
    state = slug(q["Fabric / State"])
    if state in _FABRIC_STATE:
        raw["state"] = _FABRIC_STATE[state]
    elif na(q["Fabric / State"]) is None:
        # nvidia-smi prints NVML's NOT_SUPPORTED fabric state as "N/A": seen on a real H200
        # (driver 580.159.04, fixtures/real/), whose NVML answered state 0 in the same run.
        raw["state"] = _FABRIC_STATE["not_supported"]
    status = na(q.get("Fabric / Status", ""))
    if status is not None:
        name = "".join(w.capitalize() for w in _NON_WORD.split(status) if w)
        raw["status"] = 0 if name == "Success" else ERROR_CODES.get(name, 999)
    uuid = na(q.get("Fabric / ClusterUUID", "")) or ""
    if _HEX32.fullmatch(uuid.replace("-", "")):
        raw["clusterUuid"] = uuid.replace("-", "").lower()
    clique = na(q.get("Fabric / CliqueId", ""))
    clique_id = ascii_int(clique, hi=U32) if clique is not None else None
    if clique_id is not None:
        raw["cliqueId"] = clique_id
    mask, seen = 0, False
    for label, (member, values) in _FABRIC_HEALTH.items():
        key = next((k for k in q if k.startswith("Fabric / Health / ")
                    and slug(k[len("Fabric / Health / "):]) == label), None)
        if key is None:
            continue
        seen = True
        shift = next(sh for n, sh, _ in FABRIC_HEALTH_BITS if n == member)
        mask |= values.get(slug(q[key]), 0) << shift
    if seen:
        raw["healthMask"] = mask
    summary = slug(q.get("Fabric / Health / Summary", "N/A"))
    if summary in _FABRIC_SUMMARY:
        raw["healthSummary"] = _FABRIC_SUMMARY[summary]
    return raw


def _int(v: Optional[str]) -> Optional[int]:
    if v is None:
        return None
    m = _INT_START.match(v)
    return ascii_int(m.group(1)) if m else None


def derive_text(text: str) -> Topology:
    """The model fragment (source ``nvml-text``) from pasted text."""
    parsed = parse(text)
    topo = Topology(sources=[SOURCE])
    topo.nvml_text = TextNode(sections=parsed["sections"])
    by_bus = {pci_bdf(g.get("bus_id")): i for i, g in parsed["gpus"].items() if g.get("bus_id")}
    counts: Dict[tuple, int] = {}
    all_links = {i: _links(parsed["gpus"][i], by_bus, topo, counts) for i in sorted(parsed["gpus"])}
    judge_inactive(parsed["gpus"], all_links)
    once: Dict[tuple, List[int]] = {}
    for i in sorted(parsed["gpus"]):
        g = parsed["gpus"][i]
        model = GPU(index=i)
        for fld in ("name", "uuid"):
            if g.get(fld):
                setattr(model, fld, g[fld])
                model.sources[fld] = SOURCE
        q = g["q"]
        if g.get("bus_id"):
            model.pci_bus_id, model.sources["pci_bus_id"] = g["bus_id"], SOURCE
        if q.get("Product Name") and not model.name:
            model.name, model.sources["name"] = q["Product Name"], SOURCE
        if na(q.get("GPU UUID", "")) and not model.uuid:
            model.uuid, model.sources["uuid"] = q["GPU UUID"].strip(), SOURCE
        links = all_links[i]
        status = "ok" if links else ("inactive" if g["all_inactive"] else "unknown")
        nv = TextGpuLinks(status=status, total=len(links) if links else None,
                          count_source="text",
                          active=sum(x["state"] == "active" for x in links),
                          bandwidth_gbps_per_direction=bandwidth_gbps(links),
                          links=[TextLink(**dict(x, remote=Remote(**x["remote"])))
                                 for x in links])
        if g["all_inactive"]:
            nv.reason = ("nvidia-smi: all links are inactive (the link count is not "
                         "printed); no bridge or peer attached, or every link is down")
        pcie = {"current_gen": _int(q.get("PCI / GPU Link Info / PCIe Generation / Current")),
                "max_gen": _int(q.get("PCI / GPU Link Info / PCIe Generation / Max")),
                "gpu_max_gen": _int(q.get("PCI / GPU Link Info / PCIe Generation / Device Max")),
                "current_width": _int(q.get("PCI / GPU Link Info / Link Width / Current")),
                "max_width": _int(q.get("PCI / GPU Link Info / Link Width / Max")),
                "replay_counter": _int(q.get("PCI / Replays Since Reset"))}
        model.nvml_text = TextGpu(
            index=i, fault=None, nvlink=nv, fabric=fabric_facts(fabric_raw(q)),
            pcie=GpuPcie(**pcie) if any(v is not None for v in pcie.values()) else None,
            pci=TextPci(bus_id=g.get("bus_id")), notes=[n["message"] for n in g["notes"]],
            platform=platform_of(q), **load_facts(q))
        topo.gpus.append(model)
        for n in g["notes"]:
            if n["code"] in ONCE_PER_PASTE:
                once.setdefault((n["code"], n["message"], n["level"]), []).append(i)
                continue
            topo.note(n["code"], n["message"], source=SOURCE, subject=f"GPU{i}",
                      level=n["level"])
    for (code, message, level), idxs in once.items():
        # about how the paste numbers links, not about one GPU: said once, naming the GPUs
        who = f"GPU{idxs[0]}" if len(idxs) == 1 else "GPUs " + ", ".join(map(str, idxs))
        topo.note(code, f"{message} ({who})", source=SOURCE, level=level)
    for n in parsed["notes"]:
        topo.note(n["code"], n["message"], source=SOURCE, subject=n.get("subject"),
                  level=n["level"])
    for (a, b), c in sorted(counts.items()):
        topo.nvlinks.append(NVLinkPair(a, b, c, source=SOURCE))
    topo.nvml_text.nvlink_pairs = [TextPair(a=a, b=b, count=c)
                                   for (a, b), c in sorted(counts.items())]
    if not topo.gpus:
        topo.note("nvml_text.empty", "no GPU found in the nvidia-smi text", source=SOURCE,
                  level="warning")
    return topo


_PSTATE = re.compile(r"^P([0-9]|1[0-5])$")
#: the Idle line of the clocks reasons block: "Clocks Event Reasons" since driver 535,
#: "Clocks Throttle Reasons" before, "Clocks Reasons" in some 530s
_IDLE_KEY = re.compile(r"^Clocks (?:Event |Throttle )?Reasons / Idle$")


def load_facts(q: Dict[str, str]) -> Dict[str, Any]:
    """What a ``-q`` block says of the GPU's load: its performance state (``P0``..``P15``),
    whether its clocks are lowered because it is idle, its utilisation (absent where not
    printed or ``N/A``)."""
    out: Dict[str, Any] = {}
    ps = (na(q.get("Performance State", "")) or "").upper()
    if _PSTATE.match(ps):
        out["performance_state"] = ps
    idle = next((na(v) for k, v in q.items() if _IDLE_KEY.match(k)), None)
    if idle is not None and slug(idle) in ("active", "not_active"):
        out["clocks_idle"] = slug(idle) == "active"
    util = {k: _percent(q.get(f"Utilization / {label}", q.get(f"Utilization / {label.upper()}")))
            for k, label in (("gpu", "Gpu"), ("memory", "Memory"))}
    if util["gpu"] is not None:
        out["utilization"] = Utilization(**{k: v for k, v in util.items() if v is not None})
    return out


#: ``-q`` Platform Info labels -> the Platform member (numbers 0..255, as NVML's struct has them).
_PLATFORM_LABELS = (("slot_number", "Slot Number"), ("tray_index", "Tray Index"),
                    ("host_id", "Host ID"), ("module_id", "Module Id"))


def platform_of(q: Dict[str, str]) -> Optional[Platform]:
    """The ``-q`` Platform Info block (an NVL rack's tray: chassis, slot, tray, host, module),
    or None where not printed.  The peer type is printed as words (``Switch Connected``),
    not NVML's number: not read."""
    serial = (na(q.get("Platform Info / Chassis Serial Number", "")) or "").strip()[:64]
    # (printable ASCII only, as NVML's serial is decoded: anything else is not kept)
    out = Platform(chassis_serial=serial if serial and all(
        " " <= c <= "~" for c in serial) else None)
    for member, label in _PLATFORM_LABELS:
        n = _int(q.get(f"Platform Info / {label}"))
        if n is not None and 0 <= n <= 255:
            setattr(out, member, n)
    stated = [out.chassis_serial] + [getattr(out, m) for m, _ in _PLATFORM_LABELS]
    return out if any(v is not None for v in stated) else None


def _percent(v: Optional[str]) -> Optional[int]:
    """``"37 %"`` -> 37; ``None`` for anything else (N/A, above 100)."""
    n = _int(v)
    return n if n is not None and n <= 100 and (v or "").strip().endswith("%") else None


def _model_name(g: Dict[str, Any]) -> Optional[str]:
    return g.get("name") or g["q"].get("Product Name") or None


def judge_inactive(gpus: Dict[int, Dict[str, Any]], all_links: Dict[int, List[Dict[str, Any]]]
                   ) -> None:
    """Judge the ``<inactive>`` links of a paste as NVML's family rule does (docs/nvml.md §4).

    An ``<inactive>`` link is ``down`` (rule ``family``) when the GPU has links up and
    another GPU of the same model in the paste has *every* link it lists up, this one
    among them (an NVSwitch or mesh node uses all its links: a GPU of the node that does
    not is short).  A bridged pair (by ``nvlink -R``: every link up goes to one peer GPU),
    or a family whose own GPUs leave links idle (bridged boards), leaves it ``inactive``;
    a GPU with no link up, or one whose model is unknown, too (the text cannot tell).
    """
    up = {i: {x["link"] for x in lk if x["state"] == "active"} for i, lk in all_links.items()}
    full = {i: bool(lk) and all(x["state"] == "active" for x in lk)
            for i, lk in all_links.items()}

    def bridged(i: int) -> bool:
        ends = [x["remote"] for x in all_links[i] if x["state"] == "active"]
        peers = {r["gpu_index"] for r in ends if r["type"] == "gpu"}
        return len(peers) == 1 and all(r["type"] == "gpu" for r in ends)

    names = {i: _model_name(gpus[i]) for i in all_links}
    alone = {i: bridged(i) for i in all_links}
    # (model, link) -> the first few GPUs of that model using every link they list, this
    # one up (computed once: a paste may hold many GPUs)
    users: Dict[tuple, List[int]] = {}
    for k in sorted(all_links):
        if names[k] and full[k] and not alone[k]:
            for lk in up[k]:
                seen = users.setdefault((names[k], lk), [])
                if len(seen) < 9:
                    seen.append(k)
    for i, links in all_links.items():
        name = names[i]
        if not name or not up[i] or alone[i]:
            continue
        for x in links:
            if x["state"] != "inactive":
                continue
            by = [k for k in users.get((name, x["link"]), []) if k != i][:8]
            if not by:
                continue
            shown = ", ".join(str(k) for k in by) + (", ..." if len(by) >= 8 else "")
            x["state"], x["rule"] = "down", "family"
            x["reason"] = (f"GPU {shown} of this model in the same paste use every link "
                           f"they list, link {x['link']} among them; on this GPU it is "
                           "<inactive>")


def _links(g: Dict[str, Any], by_bus: Dict[Any, int], topo: Topology,
           counts: Dict[tuple, int]) -> List[Dict[str, Any]]:
    ids = sorted(set(g["s"]) | set(g["e"]) | set(g["c"]))
    remote: Dict[int, tuple] = {}
    if g["r"]:
        if g["s"]:
            active_ids = [k for k in sorted(g["s"]) if g["s"][k]["state"] == "active"]
            for k, r in enumerate(g["r"]):
                if k < len(active_ids):
                    remote[active_ids[k]] = r
        else:
            for r in g["r"]:
                remote[r[0]] = r
            g["notes"].append({"code": "nvml_text.r_numbering", "level": "info",
                               "message": "nvlink -R numbers only active links; without "
                                          "nvlink -s in the same paste the printed link "
                                          "numbers are kept as they are"})
        ids = sorted(set(ids) | set(remote))
    out = []
    for lk in ids:
        speed = g["s"][lk]["speed"] if lk in g["s"] else None
        if lk in g["s"]:
            state = g["s"][lk]["state"]
        elif lk in remote:
            state = "active"
        else:
            state = "unknown"
        r = remote.get(lk)
        rgpu = by_bus.get(pci_bdf(r[1])) if r else None
        errors = g["e"].get(lk, {})
        rec = {
            "link": lk, "state": state, "raw_state": state,
            "rule": "state" if state == "active" else ("text" if state == "inactive" else None),
            "reason": "nvidia-smi prints <inactive>; by design or a fault cannot be told from "
                      "this text" if state == "inactive" else None,
            "version": None, "version_raw": None,
            "speed_mbps": round(speed * 1000) if speed else None,
            "remote": {"type": "gpu" if rgpu is not None else "unknown", "gpu_index": rgpu,
                       "pci_bus_id": r[1] if r else None, "link": r[2] if r else None},
            "errors": errors, "capabilities": g["c"].get(lk),
        }
        if rgpu is not None and state == "active":
            key = (min(g["index"], rgpu), max(g["index"], rgpu))
            if g["index"] < rgpu:
                counts[key] = counts.get(key, 0) + 1
        out.append(rec)
    return out


__all__ = ["SOURCE", "MAX_NOTES", "derive_text", "fabric_raw", "looks_like", "parse"]
