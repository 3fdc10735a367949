"""``nvtopo ib``: one row per InfiniBand/RoCE port, and its JSON document.

Everything comes from the sysfs facts in the model (``NIC.sysfs``, ``GPU.sysfs``,
``Topology.sysfs``), enriched with the host probe's interface stats
(``Topology.host_net``) where present.  The tables draw the JSON document.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..model import Topology
from .cells import printable, text
from .layout import Fitted
from .cells import cell_style

#: Version of the ``nvtopo ib --format json`` document.
IB_SCHEMA_VERSION = 1

#: Info-level notes the table explains itself with (printed as ``note:`` after the
#: warnings): software RDMA devices, which have no placement by design, and GPU numbering.
SHOWN_INFO = ("sysfs.soft_device", "sysfs.gpu_order")

#: Sources whose notes the ``ib`` view shows: the sysfs and host probes, and the pasted
#: ibstat / ibv_devinfo / ibstatus texts (``nvtopo/probes/ib_text.py``: a paste cut short or
#: ended by ``ibpanic:`` is a warning the table alone would hide).
NOTE_SOURCES = ("sysfs", "host", "ibstat-text", "ibv-devinfo-text", "ibstatus-text")

STATE_STYLES = {"ACTIVE": "green", "DOWN": "bold red", "INIT": "yellow", "ARMED": "yellow"}
PHYS_STYLES = {"LinkUp": "green", "Polling": "bold red", "Disabled": "bold red"}


def has_sysfs(topo: Topology) -> bool:
    return "sysfs" in topo.sources or topo.sysfs is not None


def document(topo: Topology) -> Dict[str, Any]:
    """The ``nvtopo ib --format json`` document (its contract: docs/json.md)."""
    info = topo.sysfs
    net_if = topo.host_net.net_if if topo.host_net is not None else {}
    hcas = []
    for nic in topo.nics:
        if nic.sysfs is None:
            continue
        h = nic.sysfs.to_dict()  # GPUs named as the model numbers them (the merge did)
        for p in h["ports"]:
            st = net_if.get(p["netdev"]) if p["netdev"] else None
            p["netdev_stats"] = dict(st.to_dict(), source="psutil") if st is not None else None
        hcas.append(h)
    gpus = []
    for g in topo.gpus:
        s = g.sysfs
        if s is None:
            continue
        gpus.append({"label": g.label, "index": g.index, "pci_address": s.pci_address,
                     "numa_node": s.numa_node, "local_cpulist": s.local_cpulist,
                     "link": s.link.to_dict(),
                     "narrowest_hop": s.narrowest_hop.to_dict()
                     if s.narrowest_hop is not None else None})
    return {
        "schema_version": IB_SCHEMA_VERSION,
        "origin": topo.origin.to_dict(),
        "host": topo.host.to_dict(),
        "sysfs_root": info.root if info is not None else None,
        "rdma": info.rdma if info is not None else None,
        "absent_devices": dict(info.absent_devices) if info is not None else {},
        "hcas": hcas,
        "gpus": gpus,
        "nvme": [x.to_dict() for x in info.nvme] if info is not None else [],
        "numa": info.numa.to_dict() if info is not None and info.numa is not None else None,
        "gpudirect": info.gpudirect.to_dict() if info is not None else None,
        "notes": [n.to_dict() for n in topo.notes if n.source in NOTE_SOURCES],
        "disagreements": [d.to_dict() for d in topo.disagreements],
    }


def _dim(s: str) -> Text:
    return text(s, style="dim")


def _rate_cell(p: Dict[str, Any], best: Dict[Optional[str], float], soft: bool = False) -> Text:
    rate = p.get("rate") or {}
    if p.get("rate_gbps") is None:
        if p.get("state") != "ACTIVE" and rate.get("raw"):
            return _dim(f"— ({rate['raw']})")
        return _dim("?" if p.get("state") == "ACTIVE" else "—")
    g = p["rate_gbps"]
    parts = [f"{g:g} Gb/s"]
    extra = " ".join(x for x in (rate.get("speed"), rate.get("width")) if x)
    if extra:
        parts.append(extra)
    shown = text(" ".join(parts))
    top = best.get(p.get("link_layer"))
    if top is not None and g < top and not soft:
        shown.stylize("bold yellow")
        shown.append(f" (peers {top:g})", style="yellow")
    return shown


def _errors_cell(p: Dict[str, Any]) -> Text:
    out = Text()
    sat = set(p.get("counters_saturated") or [])
    items = []
    for name, v in sorted((p.get("error_counters") or {}).items()):
        items.append(text(f"{name}={v}" + ("+" if name in sat else ""),
                          style="bold red" if name in sat else "red"))
    unknown = p.get("counters_unknown") or {}
    if unknown:
        items.append(Text(f"{len(unknown)} unreadable", style="magenta"))
    if p.get("counters_status") in ("unreadable", "not read"):  # not absent: unknown
        items.append(Text(f"counters {p['counters_status']}", style="magenta"))
    elif p.get("counters") is None:
        items.append(_dim("no counters"))
    for i, it in enumerate(items):
        if i:
            out.append(", ")
        out.append_text(it)
    return out if items else _dim("—")


def port_table(doc: Dict[str, Any]) -> Table:
    ports = [(h, p) for h in doc["hcas"] for p in h.get("ports", [])]
    best: Dict[Optional[str], float] = {}
    for h, p in ports:
        if p.get("rate_gbps") is not None and not h.get("soft"):
            best[p.get("link_layer")] = max(best.get(p.get("link_layer"), 0), p["rate_gbps"])
    table = Table(title="RDMA ports", title_justify="left", title_style="bold", box=None,
                  pad_edge=False, padding=(0, 2, 0, 0), show_edge=False)
    for col in ("device", "port", "state", "phys state", "rate", "link layer", "netdev", "PCI",
                "NUMA", "nearest GPU", "errors"):
        table.add_column(col, no_wrap=col in ("device", "port", "PCI"),
                         overflow="fold", style="bold" if col == "device" else None)
    for h, p in ports:
        state = p.get("state")
        phys = p.get("phys_state")
        layer = p.get("link_layer")
        if layer is None:
            layer_t = Text("?", style="magenta")
        else:
            layer_t = text(f"{layer} ({p['transport']})" if p.get("transport") == "RoCE"
                           else layer)
        nd = p.get("netdev")
        if nd:
            nd_t = text(nd)
            st = p.get("netdev_stats")
            if st:
                nd_t.append(" up" if st.get("up") else " down",
                            style="green" if st.get("up") else "red")
                if st.get("speed_mbps"):
                    nd_t.append(f" {st['speed_mbps'] // 1000}G", style="dim")
        else:
            nd_t = _dim("—")
        near = h.get("nearest_gpus") or []
        if near:
            tok = h.get("nearest_gpu_path")
            shown = ", ".join(near[:3]) + (f" +{len(near) - 3}" if len(near) > 3 else "")
            near_t = Text.assemble(text(tok or "?", style=cell_style(tok)), " ", printable(shown))
        else:
            near_t = _dim("none" if h.get("soft") else "unknown")
        numa = h.get("numa_node")
        table.add_row(
            text(h["name"]), text(p["port"]),
            text(state or "?", style=STATE_STYLES.get(state or "", "magenta")),
            text(phys or "?", style=PHYS_STYLES.get(phys or "", "yellow")),
            _rate_cell(p, best, bool(h.get("soft"))), layer_t, nd_t,
            text(h["pci_address"]) if h.get("pci_address")
            else _dim("none (software)" if h.get("soft") else "?"),
            text(numa) if numa is not None else _dim("?"),
            near_t, _errors_cell(p))
    return table


def summary(doc: Dict[str, Any]) -> Text:
    ports = [p for h in doc["hcas"] for p in h.get("ports", [])]
    parts = [f"{len(doc['hcas'])} RDMA device{'s' if len(doc['hcas']) != 1 else ''}"]
    layers: Dict[str, int] = {}
    for p in ports:
        key = {"InfiniBand": "InfiniBand", "Ethernet": "Ethernet"}.get(p.get("link_layer") or "",
                                                                       "unknown layer")
        layers[key] = layers.get(key, 0) + 1
    parts.append(f"{len(ports)} port{'s' if len(ports) != 1 else ''}"
                 + (" (" + ", ".join(f"{v} {k}" for k, v in layers.items()) + ")" if layers
                    else ""))
    states: Dict[str, int] = {}
    for p in ports:
        states[p.get("state") or "unknown"] = states.get(p.get("state") or "unknown", 0) + 1
    if states:
        parts.append(", ".join(f"{v} {k}" for k, v in states.items()))
    gd = doc.get("gpudirect") or {}
    if gd:
        if gd.get("nvidia_peermem"):
            parts.append("GPUDirect RDMA: nvidia_peermem loaded")
        elif gd.get("nv_peer_mem"):
            parts.append("GPUDirect RDMA: nv_peer_mem (legacy) loaded")
        else:
            parts.append("GPUDirect RDMA: no peermem module (dmabuf unknown)")
    numa = doc.get("numa")
    if numa and numa.get("nodes"):
        parts.append(f"{len(numa['nodes'])} NUMA node{'s' if len(numa['nodes']) != 1 else ''}")
    return text(" · ".join(parts), style="bold")


def render(topo: Topology) -> RenderableType:
    doc = document(topo)
    parts: List[RenderableType] = []
    head = Text("nvtopo ib", style="bold")
    where = topo.origin.file or doc.get("sysfs_root")
    if where:
        head.append(printable(f" · {where}"))
    if topo.host.hostname:
        head.append(printable(f" · host {topo.host.hostname}"))
    parts.append(head)
    parts.append(Text(""))
    if doc["hcas"]:
        parts.append(Fitted(port_table(doc)))
    else:
        why = doc.get("rdma") or "class/infiniband is empty"
        # the probe's own sentence may already say it ("no RDMA devices (2 listed but ...)"):
        # a live VM printed "No RDMA devices (no RDMA devices)."
        parts.append(_dim(why[:1].upper() + why[1:] + "." if why.lower().startswith(
            "no rdma devices") else f"No RDMA devices ({why})."))
    notes = [n for n in topo.notes if n.source in NOTE_SOURCES and n.level == "warning"]
    notes += [n for n in topo.notes if n.code in SHOWN_INFO] if doc["hcas"] else []
    if notes or topo.disagreements:
        parts.append(Text(""))
        for n in notes:
            parts.append(Text.assemble(("warning: ", "yellow") if n.level == "warning"
                                       else ("note: ", "dim"), printable(n.message)))
        for d in topo.disagreements:
            parts.append(Text.assemble(("disagreement: ", "bold yellow"),
                                       printable(f"{d.subject} {d.fact}: {d.message}")))
    parts += [Text(""), summary(doc)]
    return Group(*parts)


def print_ib(topo: Topology, console: Console) -> None:
    console.print(render(topo))
