"""How NVLink links are judged: every link's remote end and state, GPU pair counts, bandwidth.

:func:`classify_links` gives every link one of active, inactive (by design), down (a
fault), not_supported or unknown, with the rule that decided and a sentence saying why;
:func:`pair_counts` counts the links between GPUs (direct, and all-to-all through
NVSwitch); :func:`bandwidth_gbps` sums the active links' speeds.  Pure functions of the
walker's facts (:mod:`.walk`); the pasted-text reader uses :func:`bandwidth_gbps` too.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...model import pci_bdf
from .decode import bus_id_of
from .source import is_int
from .vocab import REMOTE_TYPES


def classify_links(gpus: List[Dict[str, Any]], by_bdf: Dict[Tuple[int, ...], int]) -> None:
    """Give every link its remote end and one of: active, inactive, down, not_supported, unknown.

    ``inactive`` is *by design* and ``down`` is a fault.  A link is judged
    against the node: how this GPU uses NVLink (its *kind*: switch-attached,
    bridged pair, direct mesh, MIG, nothing up) and how the other GPUs *of the
    same model* on the node use it (their *family*).  The rule that decided is
    kept in ``rule`` with a sentence in ``reason``:

    * ``mig``: MIG mode is on; NVLink is off by design.
    * ``nvswitch``: the GPU is switch-attached and the link is down: a GPU of
      its family has this link index up, or NVML counts more switch-connected
      links (field 147) than are up.  ``not_connected`` (inactive): no GPU of
      the family uses this link index and field 147 does not say it is
      connected.  Field 147 may count wired or active links (an open point):
      under either meaning the family comparison decides, so 147 alone never
      turns a down link into ``not_connected``.  ``nvswitch_count`` (unknown):
      147 counts more connected links than are up, and several idle links no
      family GPU uses could be the missing ones.
    * ``peers_linked``: no link of the GPU is up while its family is
      switch-attached or meshed: every link index the family uses is down
      here (a GPU dropped out of the fabric, e.g. gpud #1085).
    * ``mesh``: the GPU links to several peers directly (SXM mesh, e.g. DGX-1):
      every link is expected up, so an inactive one is down.
    * ``bridge``: every active link goes to one peer GPU and back (a bridged
      pair of PCIe boards, which uses part of its links): inactive.
    * ``unbridged``: no link up, the family is bridged in pairs: no bridge on
      this GPU, or a broken one; text cannot tell, so inactive.
    * ``no_peer``: no GPU of its model on the node has a link up: nothing is
      attached (unused by design): inactive.
    """
    _remote_ends(gpus, by_bdf)
    _summarise(gpus)
    kinds = {g["index"]: _kind(g, gpus) for g in gpus}
    # per GPU, the link numbers that are up (as ``o.get("link") == lk`` compares them)
    up_links = {id(x): [o.get("link") for o in (x.get("nvlink") or {}).get("links", [])
                        if o.get("state") in ("active", "sleep")] for x in gpus}
    for g in gpus:
        _judge_links(g, gpus, kinds, up_links)


def _remote_ends(gpus: List[Dict[str, Any]], by_bdf: Dict[Tuple[int, ...], int]) -> None:
    """Links a faulted GPU was not read for (as unavailable), and every link's remote end."""
    for g in gpus:
        nv = g.get("nvlink") or {}
        if g.get("fault") and isinstance(nv.get("count"), int):
            why = "gpu_lost" if g["fault"]["kind"] == "lost" else "timeout"
            for link in range(len(nv.get("links", [])), nv["count"]):
                nv["links"].append({"link": link, "state": None, "errors": {},
                                    "unavailable": {"state": why}})
        for lr in nv.get("links", []):
            rt = lr.get("remote_type")
            rtype = REMOTE_TYPES.get(rt, "unknown") if rt is not None else None
            bus_id = bus_id_of(lr.get("remote_pci"))
            gpu_index = by_bdf.get(pci_bdf(bus_id)) if bus_id else None  # type: ignore[arg-type]
            if rtype is None and lr.get("state") in ("active", "sleep"):
                rtype = "unknown"
            if rtype == "gpu" and gpu_index is None and bus_id:
                lr.setdefault("notes", []).append(
                    f"remote GPU {bus_id} is not among the GPUs NVML enumerates")
            lr["remote"] = {"type": rtype if rtype else "unknown", "gpu_index": gpu_index,
                            "pci_bus_id": bus_id, "link": lr.get("remote_link")}


def _summarise(gpus: List[Dict[str, Any]]) -> None:
    """Per-GPU summaries used by the rules: links up, peer GPUs, links up to a switch."""
    for g in gpus:
        nv = g.get("nvlink") or {}
        links = nv.get("links", [])
        active = [lr for lr in links if lr.get("state") in ("active", "sleep")]
        peers = {lr["remote"]["gpu_index"] for lr in active
                 if lr["remote"]["type"] == "gpu" and lr["remote"]["gpu_index"] is not None}
        to_switch = [lr for lr in active if lr["remote"]["type"] in ("nvswitch", "unknown")]
        nv["active"] = len(active)
        nv["peers"] = sorted(peers)
        nv["switch_links_up"] = len(to_switch)


#: Why NVML gave no state for a link, by the recorded reason.
_UNREAD = {"not_supported": "NVML does not support this link",
           "not_permitted": "NVML refused the question (no permission)",
           "gpu_lost": "the GPU was lost before this link was read",
           "timeout": "the probe's deadline passed before this link was read",
           "bad_value": "the recorded state is not a valid value (damaged snapshot?)"}


def _judge_links(g: Dict[str, Any], gpus: List[Dict[str, Any]], kinds: Dict[Any, str],
                 up_links: Dict[int, List[Any]]) -> None:
    """Give each link of GPU ``g`` its status, rule and reason (see :func:`classify_links`)."""
    nv = g.get("nvlink") or {}
    kind = kinds[g["index"]]
    sw = g.get("facts", {}).get("nvswitch_links")
    sw = sw if is_int(sw) else None
    family = [x for x in gpus if x is not g and _same_model(g, x)]
    fam_kinds = {kinds[x["index"]] for x in family}
    other_models_linked = any(kinds[x["index"]] in ("switch", "mesh", "bridge")
                              for x in gpus if x is not g and not _same_model(g, x))
    up_in_family = {lk: [x["index"] for x in family if lk in up_links[id(x)]]
                    for lk in {lr["link"] for lr in nv.get("links", [])}}
    idle = [lr["link"] for lr in nv.get("links", [])
            if lr.get("state") is not None and lr["state"] not in ("active", "sleep")]
    # Field 147 says more links are switch-connected than are up: the family explains
    # some of the missing ones; the rest are among the idle links nobody else uses.
    shortfall = (sw - nv.get("active", 0)) if sw is not None else 0
    unexplained = [lk for lk in idle if not up_in_family[lk]]
    missing = shortfall - (len(idle) - len(unexplained))
    for lr in nv.get("links", []):
        st = lr.get("state")
        if st is None:
            why = lr.get("unavailable", {}).get("state", "error")
            lr["status"] = "not_supported" if why == "not_supported" else "unknown"
            lr["rule"] = why
            lr["reason"] = _UNREAD.get(why, "NVML gave no state for this link")
            continue
        if st in ("active", "sleep"):
            lr["status"], lr["rule"] = "active", "state"
            lr["reason"] = "link is up" + (" (low-power sleep)" if st == "sleep" else "")
            if g.get("fault"):
                lr["reason"] = (f"link was up when read; the GPU was {g['fault']['kind']} "
                                "later in the probe")
            continue
        traffic = " (traffic disabled)" if st == "traffic_disabled" else ""
        status, rule, reason = _judge(kind, fam_kinds, up_in_family[lr["link"]],
                                      lr["link"], nv, sw, other_models_linked,
                                      missing, len(unexplained))
        lr["status"], lr["rule"], lr["reason"] = status, rule, reason + traffic


def _model(g: Dict[str, Any]) -> Optional[str]:
    name = g.get("facts", {}).get("name")
    return name if isinstance(name, str) else None


def _same_model(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    """Same GPU model (an unknown name matches any: compare rather than assume nothing)."""
    return _model(a) is None or _model(b) is None or _model(a) == _model(b)


def _kind(g: Dict[str, Any], gpus: List[Dict[str, Any]]) -> str:
    """How a GPU uses NVLink: mig, switch, bridge, mesh (direct links) or none (nothing up)."""
    nv = g.get("nvlink") or {}
    f = g.get("facts", {})
    mig = f.get("mig_mode")
    if isinstance(mig, list) and mig and mig[0]:
        return "mig"
    sw = f.get("nvswitch_links")
    if nv.get("switch_links_up", 0) > 0 or (is_int(sw) and sw > 0):
        return "switch"
    peers = nv.get("peers", [])
    if len(peers) == 1:
        other = next((x for x in gpus if x["index"] == peers[0]), None)
        if ((other or {}).get("nvlink") or {}).get("peers") == [g["index"]]:
            return "bridge"
    return "mesh" if nv.get("active") else "none"


def _gpus(indexes: List[int]) -> str:
    shown = ", ".join(str(i) for i in indexes[:8]) + (", ..." if len(indexes) > 8 else "")
    return ("GPU " if len(indexes) == 1 else "GPUs ") + shown


def _judge(kind: str, fam_kinds: set, users: List[int], link: int, nv: Dict[str, Any],
           sw: Optional[int], other_models_linked: bool, missing: int,
           unexplained: int) -> Tuple[str, str, str]:
    """(status, rule, reason) of an inactive link; see :func:`classify_links`.

    ``users``: GPUs of the family with this link index up.  ``missing``: how many
    switch-connected links (field 147) are down beyond those the family explains;
    ``unexplained``: the idle links of this GPU no family GPU uses (this one among them).
    """
    active = nv.get("active", 0)
    if kind == "mig":
        return "inactive", "mig", "MIG mode is enabled: NVLink is off by design"
    if kind == "switch" or (kind == "none" and "switch" in fam_kinds):
        rule = "nvswitch" if kind == "switch" else "peers_linked"
        lead = ("NVSwitch system" if kind == "switch" else
                "no link of this GPU is up while its model is switch-attached on this node")
        if users:
            return "down", rule, (f"{lead}: {_gpus(users)} of this model have link {link} up; "
                                  "on this GPU it is not")
        if missing > 0 and missing >= unexplained:
            return "down", rule, (f"{lead}: NVML counts {sw} links of this GPU connected to "
                                  f"NVSwitch, {active} are up")
        if missing > 0:
            return "unknown", "nvswitch_count", (
                f"{lead}: NVML counts {sw} links of this GPU connected to NVSwitch, {active} "
                f"are up; {missing} of the {unexplained} idle links no other GPU of this model "
                "uses are down, which ones cannot be told")
        if kind == "switch" and "switch" not in fam_kinds and sw is None:
            return "down", rule, (f"{lead}: every switch-connected link should be up; this one "
                                  "is not (no other GPU of this model to compare with)")
        why = (f"no other GPU of this model uses link {link} either" if "switch" in fam_kinds
               else f"NVML counts {sw} switch-connected links and all are up")
        return "inactive", "not_connected", f"{why}: not connected to NVSwitch (by design)"
    if kind == "mesh":
        return "down", "mesh", ("GPU links directly to several peers (SXM mesh): every link is "
                                "expected up; this one is not")
    if kind == "none" and "mesh" in fam_kinds:
        if users:
            return "down", "peers_linked", (
                f"no link of this GPU is up while {_gpus(users)} of this model link directly "
                f"to their peers over link {link} (NVLink mesh)")
        return "inactive", "not_connected", (f"no GPU of this model uses link {link}: not "
                                             "wired (by design)")
    if kind == "bridge":
        peer = nv["peers"][0]
        return "inactive", "bridge", (f"bridged pair with GPU {peer} uses {active} of "
                                      f"{len(nv['links'])} links; the rest are unused by design")
    if kind == "none" and "bridge" in fam_kinds:
        return "inactive", "unbridged", (
            "no link of this GPU is up while other GPUs of this model are bridged in pairs: "
            "no bridge on this GPU, or a broken one (cannot tell)")
    if other_models_linked:
        return "inactive", "no_peer", ("no link of this GPU is up; the GPUs with links up on "
                                       "this node are another model: nothing attached to this "
                                       "one (unused by design)")
    return "inactive", "no_peer", ("no link of this GPU is up and no GPU of its model on this "
                                   "node has one up: nothing attached (unused by design)")


def pair_counts(gpus: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """GPU↔GPU NVLink counts: direct links by remote bus id; switch pairs by min(links).

    On NVSwitch systems every pair of switch-attached GPUs is all-to-all with
    ``count = min(switch links of a, switch links of b)`` (as nvidia-smi and
    PyTorch count); both per-GPU counts are kept so a shortfall is visible.
    """
    idx = [g["index"] for g in gpus if g.get("nvlink")]
    by = {g["index"]: g for g in gpus}
    out: List[Dict[str, Any]] = []
    for ai, a in enumerate(idx):
        for b in idx[ai + 1:]:
            na, nb = by[a]["nvlink"], by[b]["nvlink"]
            faulty = [x for x in (a, b) if by[x].get("fault")]
            if faulty:
                out.append({"a": a, "b": b, "count": None, "rule": "unknown",
                            "reason": f"GPU {faulty[0]}: {by[faulty[0]]['fault']['kind']}"})
                continue
            unknown = [x for x in (a, b)
                       if by[x]["nvlink"].get("status") not in ("ok", "not_supported")]
            if unknown:
                why = by[unknown[0]]["nvlink"].get("status")
                out.append({"a": a, "b": b, "count": None, "rule": "unknown",
                            "reason": f"GPU {unknown[0]}: NVLink facts unknown ({why})"})
                continue
            d_ab = sum(1 for lr in na.get("links", []) if lr.get("status") == "active"
                       and lr["remote"]["gpu_index"] == b)
            d_ba = sum(1 for lr in nb.get("links", []) if lr.get("status") == "active"
                       and lr["remote"]["gpu_index"] == a)
            sa, sb = na.get("switch_links_up", 0), nb.get("switch_links_up", 0)
            sw = min(sa, sb) if sa and sb else 0
            direct = min(d_ab, d_ba)
            count = direct + sw
            rec: Dict[str, Any] = {"a": a, "b": b, "count": count}
            rules = []
            if d_ab or d_ba:
                rules.append("direct")
                rec["direct"] = {str(a): d_ab, str(b): d_ba}
                if d_ab != d_ba:
                    rec["asymmetric"] = True
            if sw:
                rules.append("nvswitch_min")
                rec["switch_links"] = {str(a): sa, str(b): sb}
            rec["rule"] = "+".join(rules) or "none"
            out.append(rec)
    return out


def bandwidth_gbps(links: List[Dict[str, Any]]) -> Optional[float]:
    """GB/s per direction: the sum of the active links' speeds (``speed_mbps``), or None
    unless every active link has a known, non-zero speed (a partial sum would mislead)."""
    speeds: List[Any] = [x.get("speed_mbps") for x in links if x.get("state") == "active"]
    if not speeds or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                             for v in speeds):
        return None
    return round(sum(speeds) / 1000.0, 3)
