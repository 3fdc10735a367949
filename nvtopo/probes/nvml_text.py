"""Pasted ``nvidia-smi nvlink -s/-e/-c/-R`` and ``nvidia-smi -q`` (PCI, Fabric) text.

Tickets carry these more often than snapshots.  :func:`parse` reads any mix
of them (one paste may hold several commands) into the same per-GPU NVLink
record the NVML probe produces, under ``GPU.extra["nvml-text"]``, so
``nvtopo links --from ticket.txt`` shows them.  The text says less than NVML:

* ``-s`` says ``<inactive>`` but not whether by design or a fault, so such
  links are ``inactive`` with rule ``text`` (never guessed ``down``);
* ``-R`` numbers only the *active* links on the left (H100 PCIe sample):
  with ``-s`` in the same paste the k-th ``-R`` line is mapped to the k-th
  active link; without it the printed number is kept and a note says so;
* the remote end is a bus id; it is a GPU only where ``-q`` in the same
  paste names that bus id;
* ``-q`` blocks print no GPU index: a block goes to the GPU with its UUID,
  else its bus id, else (noted) the next nvlink GPU without one;
* damage is noted, never a crash: a speed that is not a number is unknown,
  two different GPUs under one ``GPU N:`` number keep the first.

Elisions (``...``, ``[...]``) and unknown lines are skipped.  Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ..model import GPU, NVLinkPair, Topology, pci_bdf
from . import nvml

SOURCE = "nvml-text"

_GPU_HDR = re.compile(r"^\s*GPU (\d+): (.+?) \(UUID: ([^)]*)\)\s*$")
_Q_HDR = re.compile(r"^\s*GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_S_SPEED = re.compile(r"^\s*Link (\d+): ([\d.]+) GB/s\s*$")
_S_INACTIVE = re.compile(r"^\s*Link (\d+): <inactive>\s*$", re.I)
_ALL_INACTIVE = re.compile(r"Unable to retrieve NVLink information as all links are inActive",
                           re.I)
_R_LINE = re.compile(r"^\s*Link (\d+): Remote Device ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:"
                     r"[0-9A-Fa-f]{2}\.[0-7]): Link (\d+)\s*$")
_E_LINE = re.compile(r"^\s*Link (\d+): ([A-Za-z][A-Za-z ]*?) Errors?: (\d+)\s*$")
_C_LINE = re.compile(r"^\s*Link (\d+), (.+?): (true|false)\s*$", re.I)
_KV = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9 /()-]*?)\s*:\s*(.*?)\s*$")
_ANY_LINK = re.compile(r"^\s*Link \d+[:,]")

_CAPS = {"p2p is supported": "p2p", "access to system memory supported": "sysmem_access",
         "p2p atomics supported": "p2p_atomics",
         "system memory atomics supported": "sysmem_atomics", "sli is supported": "sli_bridge",
         "link is supported": "valid"}
_ERRORS = {"replay": "replay", "recovery": "recovery", "crc": "crc_flit",
           "crc flit": "crc_flit", "crc data": "crc_data", "ecc data": "ecc", "ecc": "ecc"}


def looks_like(text: str) -> bool:
    """True when the text holds nvidia-smi nvlink or ``-q`` Fabric output."""
    for line in text.splitlines():
        if (_GPU_HDR.match(line) or _S_SPEED.match(line) or _S_INACTIVE.match(line)
                or _R_LINE.match(line) or _E_LINE.match(line) or _C_LINE.match(line)
                or _ALL_INACTIVE.search(line)):
            return True
    return bool(re.search(r"^\s*Fabric\s*$", text, re.M)
                and re.search(r"^\s*State\s*:", text, re.M))


def _slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", s.strip().lower()).strip("_")


def _na(v: str) -> Optional[str]:
    return None if v.strip() in ("", "N/A", "n/a") else v.strip()


def parse(text: str) -> Dict[str, Any]:
    """Per-GPU facts from the text: ``{"gpus": {index: {...}}, "sections": [...], "notes": [...]}``.

    ``nvlink`` sections are numbered by their ``GPU N: name (UUID: ...)``
    headers.  ``-q`` blocks (``GPU 00000000:18:00.0``) carry no index: each is
    attached to the GPU with its ``GPU UUID``, else its bus id, else (last
    resort, noted) to the next GPU of the nvlink output that has no ``-q``
    block yet; a block that matches nothing is a GPU of its own.
    """
    gpus: Dict[int, Dict[str, Any]] = {}
    qblocks: List[Dict[str, Any]] = []
    sections: List[str] = []
    notes: List[Dict[str, str]] = []
    cur: Optional[Dict[str, Any]] = None
    block: List[str] = []  # -q key path by indentation
    indents: List[int] = []

    def new_rec(**kw: Any) -> Dict[str, Any]:
        return dict({"index": None, "s": {}, "r": [], "e": {}, "c": {},
                     "all_inactive": False, "q": {}, "notes": []}, **kw)

    def gpu(i: int) -> Dict[str, Any]:
        return gpus.setdefault(i, new_rec(index=i))

    def seen(s: str) -> None:
        if s not in sections:
            sections.append(s)

    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.rstrip()
        if not line.strip() or line.strip() in ("...", "......", "[...]"):
            continue
        m = _GPU_HDR.match(line)
        if m:
            i, name, uuid = int(m.group(1)), m.group(2).strip(), m.group(3).strip()
            have = gpus.get(i)
            if have is not None and "name" in have and (
                    uuid.lower() != (have.get("uuid") or "").lower() if uuid and have.get("uuid")
                    else name != have.get("name")):
                notes.append({"code": "nvml_text.duplicate_gpu", "level": "warning",
                              "subject": f"GPU{i}",
                              "message": f"the paste numbers two different GPUs {i} "
                                         f"({have.get('name')}, UUID {have.get('uuid') or '?'}; "
                                         f"then {name}, UUID {uuid or '?'}): output of two "
                                         "machines? the lines under the second are ignored"})
                cur = new_rec(index=i)  # read, then dropped
            else:
                cur = gpu(i)
                cur["name"], cur["uuid"] = name, uuid
            block, indents = [], []
            continue
        m = _Q_HDR.match(line)
        if m:
            cur = new_rec(bus_id=m.group(1))
            qblocks.append(cur)
            block, indents = [], []
            seen("-q")
            continue
        if cur is None:
            if _ANY_LINK.match(line):
                cur = gpu(0)
            elif line.strip() == "Fabric":  # a -q excerpt without its GPU header
                cur = new_rec()
                qblocks.append(cur)
            else:
                continue
        if _ALL_INACTIVE.search(line):
            cur["all_inactive"] = True
            seen("nvlink -s")
            continue
        m = _S_SPEED.match(line)
        if m:
            lk = int(m.group(1))
            try:
                speed: Optional[float] = float(m.group(2))
            except ValueError:
                speed = None
                cur["notes"].append({
                    "code": "nvml_text.bad_number", "level": "warning",
                    "message": f"link {lk}: speed {m.group(2)!r} GB/s is not a number; the "
                               "link is listed as up, its speed is unknown"})
            cur["s"][lk] = {"state": "active", "speed": speed}
            seen("nvlink -s")
            continue
        m = _S_INACTIVE.match(line)
        if m:
            cur["s"][int(m.group(1))] = {"state": "inactive", "speed": None}
            seen("nvlink -s")
            continue
        m = _R_LINE.match(line)
        if m:
            cur["r"].append((int(m.group(1)), m.group(2), int(m.group(3))))
            seen("nvlink -R")
            continue
        m = _E_LINE.match(line)
        if m:
            name = _ERRORS.get(m.group(2).strip().lower(), _slug(m.group(2)))
            cur["e"].setdefault(int(m.group(1)), {})[name] = int(m.group(3))
            seen("nvlink -e")
            continue
        m = _C_LINE.match(line)
        if m:
            cap = _CAPS.get(m.group(2).strip().lower(), _slug(m.group(2)))
            cur["c"].setdefault(int(m.group(1)), {})[cap] = m.group(3).lower() == "true"
            seen("nvlink -c")
            continue
        # -q: nested "Key : Value" blocks by indentation.
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        while indents and indent <= indents[-1]:
            indents.pop()
            block.pop()
        kv = _KV.match(line)
        if kv and kv.group(3) != "":
            path = tuple(block) + (kv.group(2).strip(),)
            cur["q"][" / ".join(path)] = kv.group(3)
            if path[0] == "Fabric":
                seen("-q fabric")
        elif re.match(r"^[A-Za-z][A-Za-z0-9 /()-]*$", stripped):
            block.append(stripped)
            indents.append(indent)
    _attach_q(gpus, qblocks, notes)
    return {"gpus": gpus, "sections": sections, "notes": notes}


def _attach_q(gpus: Dict[int, Dict[str, Any]], qblocks: List[Dict[str, Any]],
              notes: List[Dict[str, str]]) -> None:
    """Give every ``-q`` block its GPU: by UUID, then bus id, then (noted) by order."""
    from_nvlink = set(gpus)
    with_q: set = set()
    for k, blk in enumerate(qblocks):
        uuid = (_na(blk["q"].get("GPU UUID", "")) or "").lower()
        bdf = pci_bdf(blk.get("bus_id"))
        target: Optional[int] = None
        if uuid:
            target = next((i for i, g in sorted(gpus.items())
                           if (g.get("uuid") or "").lower() == uuid), None)
        if target is None and bdf is not None:
            target = next((i for i, g in sorted(gpus.items())
                           if pci_bdf(g.get("bus_id")) == bdf), None)
        what = f"the -q block of {blk.get('bus_id') or 'a GPU'}"
        if target is None:
            # Last resort: the next nvlink GPU without a -q block, unless both UUIDs are
            # known (and differ: then it is another GPU).
            target = next((i for i in sorted(from_nvlink - with_q)
                           if not (uuid and gpus[i].get("uuid"))), None)
            if target is not None:
                notes.append({"code": "nvml_text.q_by_order", "level": "warning",
                              "subject": f"GPU{target}",
                              "message": f"{what} names no GPU UUID or bus id the nvlink "
                                         f"output knows; attached to GPU {target} by its "
                                         "order in the paste"})
        if target is None:
            target = k if not gpus else max(gpus) + 1
            while target in gpus:
                target += 1
            if from_nvlink:
                notes.append({"code": "nvml_text.q_unmatched", "level": "warning",
                              "subject": f"GPU{target}",
                              "message": f"{what} ({blk['q'].get('GPU UUID') or 'no UUID'}) "
                                         "matches no GPU of the nvlink output; listed as GPU "
                                         f"{target} (nvidia-smi -q prints no GPU index)"})
            gpus[target] = dict(blk, index=target)
        else:
            g = gpus[target]
            if blk.get("bus_id"):
                g["bus_id"] = blk["bus_id"]
            g["q"].update(blk["q"])
            g["notes"].extend(blk["notes"])
        with_q.add(target)


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
        name: code for code, name in nvml.INCORRECT_CONFIGURATION.items()}),
    "partition_assigned": ("partition_assigned", _TRUE_FALSE),
}


def fabric_raw(q: Dict[str, str]) -> Optional[Dict[str, Any]]:
    """The ``-q`` Fabric block as nvmlGpuFabricInfo members (absent where N/A or unprinted)."""
    if "Fabric / State" not in q:
        return None
    raw: Dict[str, Any] = {}
    state = _slug(q["Fabric / State"])
    if state in _FABRIC_STATE:
        raw["state"] = _FABRIC_STATE[state]
    status = _na(q.get("Fabric / Status", ""))
    if status is not None:
        name = "".join(w.capitalize() for w in re.split(r"[^A-Za-z0-9]+", status) if w)
        raw["status"] = 0 if name == "Success" else nvml.ERROR_CODES.get(name, 999)
    uuid = _na(q.get("Fabric / ClusterUUID", "")) or ""
    if re.fullmatch(r"[0-9A-Fa-f]{32}", uuid.replace("-", "")):
        raw["clusterUuid"] = uuid.replace("-", "").lower()
    clique = _na(q.get("Fabric / CliqueId", ""))
    if clique is not None and clique.isdigit() and int(clique) <= nvml.U32:
        raw["cliqueId"] = int(clique)
    mask, seen = 0, False
    for label, (member, values) in _FABRIC_HEALTH.items():
        key = next((k for k in q if k.startswith("Fabric / Health / ")
                    and _slug(k[len("Fabric / Health / "):]) == label), None)
        if key is None:
            continue
        seen = True
        shift = next(sh for n, sh, _ in nvml.FABRIC_HEALTH_BITS if n == member)
        mask |= values.get(_slug(q[key]), 0) << shift
    if seen:
        raw["healthMask"] = mask
    summary = _slug(q.get("Fabric / Health / Summary", "N/A"))
    if summary in _FABRIC_SUMMARY:
        raw["healthSummary"] = _FABRIC_SUMMARY[summary]
    return raw


def _int(v: Optional[str]) -> Optional[int]:
    if v is None:
        return None
    m = re.match(r"^\s*(\d+)", v)
    return int(m.group(1)) if m else None


def derive_text(text: str) -> Topology:
    """The model fragment (source ``nvml-text``) from pasted text."""
    parsed = parse(text)
    topo = Topology(sources=[SOURCE])
    topo.extra[SOURCE] = {"sections": parsed["sections"]}
    by_bus = {pci_bdf(g.get("bus_id")): i for i, g in parsed["gpus"].items() if g.get("bus_id")}
    counts: Dict[tuple, int] = {}
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
        if _na(q.get("GPU UUID", "")) and not model.uuid:
            model.uuid, model.sources["uuid"] = q["GPU UUID"].strip(), SOURCE
        links = _links(g, by_bus, topo, counts)
        status = "ok" if links else ("inactive" if g["all_inactive"] else "unknown")
        nv = {"status": status, "total": len(links) if links else None,
              "count_source": "text", "active": sum(x["state"] == "active" for x in links),
              "bandwidth_gbps_per_direction": nvml.bandwidth_gbps(links),
              "links": links}
        if g["all_inactive"]:
            nv["reason"] = ("nvidia-smi: all links are inactive (the link count is not "
                            "printed); no bridge or peer attached, or every link is down")
        pcie = {"current_gen": _int(q.get("PCI / GPU Link Info / PCIe Generation / Current")),
                "max_gen": _int(q.get("PCI / GPU Link Info / PCIe Generation / Max")),
                "gpu_max_gen": _int(q.get("PCI / GPU Link Info / PCIe Generation / Device Max")),
                "current_width": _int(q.get("PCI / GPU Link Info / Link Width / Current")),
                "max_width": _int(q.get("PCI / GPU Link Info / Link Width / Max")),
                "replay_counter": _int(q.get("PCI / Replays Since Reset"))}
        model.extra[SOURCE] = {
            "index": i, "fault": None, "nvlink": nv, "fabric": nvml.fabric_facts(fabric_raw(q)),
            "pcie": pcie if any(v is not None for v in pcie.values()) else None,
            "pci": {"bus_id": g.get("bus_id")}, "notes": [n["message"] for n in g["notes"]],
        }
        topo.gpus.append(model)
        for n in g["notes"]:
            topo.note(n["code"], n["message"], source=SOURCE, subject=f"GPU{i}",
                      level=n["level"])
    for n in parsed["notes"]:
        topo.note(n["code"], n["message"], source=SOURCE, subject=n.get("subject"),
                  level=n["level"])
    for (a, b), c in sorted(counts.items()):
        topo.nvlinks.append(NVLinkPair(a, b, c, source=SOURCE))
    topo.extra[SOURCE]["nvlink_pairs"] = [{"a": a, "b": b, "count": c}
                                          for (a, b), c in sorted(counts.items())]
    if not topo.gpus:
        topo.note("nvml_text.empty", "no GPU found in the nvidia-smi text", source=SOURCE,
                  level="warning")
    return topo


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
