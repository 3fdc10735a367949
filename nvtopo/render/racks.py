"""``nvtopo cluster --format rack-map``: each rack drawn slot by slot, in plain ASCII.

Reads the JSON document's ``racks`` (:func:`nvtopo.commands.cluster.racks.document`) and
``findings``; decides nothing.  Every name from a snapshot (chassis serial, node name) is
escaped to printable ASCII (``\\xNN``, ``\\uNNNN``): the map is safe on any terminal and in
any file.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..safe import printable

#: Codes shown per slot (the ones about a tray's place and domain).
RACK_CODES = ("cluster.rack_slots", "cluster.rack_domain_mismatch",
              "cluster.fabric_incomplete", "cluster.node_split", "cluster.domain_cliques",
              "cluster.imex_views_differ", "cluster.imex_one_way")


def ascii_name(value: Any) -> str:
    """``value`` as printable ASCII: unsafe characters escaped, then any other non-ASCII."""
    return printable(value).encode("ascii", "backslashreplace").decode("ascii")


def _num(v: Optional[int]) -> str:
    return "-" if v is None else str(v)


def _codes(doc: Dict[str, Any]) -> Dict[str, List[str]]:
    """Node -> the codes of the findings that name it (rack-related families only)."""
    out: Dict[str, List[str]] = {}
    for f in doc.get("findings", []):
        if f.get("code") not in RACK_CODES or (f["code"] == "cluster.rack_slots"
                                                and f.get("severity") != "error"):
            continue  # (a rack short of trays: its empty rows say so)
        for n in f.get("nodes") or []:
            codes = out.setdefault(n, [])
            short = f["code"].split(".", 1)[1]
            if short not in codes:
                codes.append(short)
    return out


def _rows(rack: Dict[str, Any], codes: Dict[str, List[str]]) -> List[List[str]]:
    slots = rack["slots"]
    size = rack.get("trays")
    taken = {s["slot"] for s in slots}
    fill = size is not None and all(isinstance(x, int) and 1 <= x <= size for x in taken)
    rows = []
    for s in slots:
        dom = s.get("domain")
        imex = s.get("imex")
        rows.append([_num(s["slot"]), _num(s["tray_index"]), _num(s["host_id"]),
                     ascii_name(s["node"]), ascii_name(dom[:8]) if dom else "-",
                     ascii_name(imex) if imex else "-",
                     ", ".join(codes.get(s["node"], [])) or "ok"])
    if fill and isinstance(size, int):
        rows += [[str(x), "-", "-", "(empty)", "-", "-", "rack_slots"]
                 for x in range(1, size + 1) if x not in taken]
    rows.sort(key=lambda r: (not r[0].isdigit(), int(r[0]) if r[0].isdigit() else 0))
    return rows


def _majority(rack: Dict[str, Any]) -> str:
    counts: Dict[str, int] = {}
    for s in rack["slots"]:
        if s.get("domain"):
            counts[s["domain"]] = counts.get(s["domain"], 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if not ranked:
        return "none"
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return f"{len(ranked)} domains, no majority"
    return ascii_name(ranked[0][0]) + (f" (+{len(ranked) - 1} other)" if len(ranked) > 1
                                       else "")


def _imex(rack: Dict[str, Any]) -> str:
    """The rack's IMEX state and the trays' views behind it."""
    state = rack.get("imex")
    views = rack.get("imex_views") or {}
    if state is None:
        return "unknown (no tray's snapshot holds its IMEX domain)"
    said = ", ".join(f"{ascii_name(s)} {n}" for s, n in sorted(views.items()))
    return f"{ascii_name(state)} (trays' views: {said})"


def rack_map(doc: Dict[str, Any]) -> str:
    """The rack map of a cluster document (one block per chassis)."""
    racks = doc.get("racks") or []
    codes = _codes(doc)
    head = ["slot", "tray", "host", "node", "domain", "imex", "findings"]
    out: List[str] = []
    for rack in racks:
        size = rack.get("trays")
        out.append(f"RACK {ascii_name(rack['chassis_serial'])}: {len(rack['slots'])}"
                   + (f" of {size}" if size is not None else "") + " trays reporting")
        out.append(f"  NVLink domain: {_majority(rack)}")
        out.append("  IMEX: " + _imex(rack))
        rows = [head] + _rows(rack, codes)
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        for r in rows:
            cells = [c.rjust(w) if i < 3 else c.ljust(w)
                     for i, (c, w) in enumerate(zip(r, widths))]
            out.append(("  | " + " | ".join(cells)).rstrip())
        out.append("")
    placed = {s["node"] for rack in racks for s in rack["slots"]}
    rest = [r["name"] for r in doc.get("node_rows", []) if r["name"] not in placed]
    if not racks:
        out.append("no rack: no snapshot holds NVML platform info (chassis, slot)")
    if rest:
        out.append(f"{len(rest)} node(s) in no rack (no platform info): "
                   + ", ".join(ascii_name(n) for n in sorted(rest)[:10])
                   + (f" and {len(rest) - 10} more" if len(rest) > 10 else ""))
    return "\n".join(out).rstrip("\n") + "\n"


__all__ = ["rack_map", "ascii_name", "RACK_CODES"]
