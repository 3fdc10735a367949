"""Node-wide facts from sysfs: the NUMA nodes (:func:`numa_info`) and which GPUDirect
peer-memory modules are loaded (:func:`gpudirect`)."""

from __future__ import annotations

from typing import Any, Dict, Optional

from ...model import Topology
from ...model.host import NumaInfo, NumaNode
from ...model.rdma import GpuDirect
from .facts import reason
from .parse import cpulist_count, to_int

SOURCE = "sysfs"


def numa_info(topo: Topology, raw: Dict[str, Any]) -> Optional[NumaInfo]:
    """The NUMA nodes (None, with a note: unknown)."""
    numa = raw.get("numa")
    if numa is None:
        topo.note("sysfs.no_numa", "devices/system/node absent or unreadable "
                  f"({reason(raw.get('numa_error'))}): NUMA layout unknown", source=SOURCE)
        return None
    nodes = []
    for nd in numa["nodes"]:
        cpul = nd["cpulist"].strip() if nd["cpulist"] is not None else None
        dist = None
        unknown = {k: reason(v) for k, v in nd["errors"].items()}
        if nd["distance"] is not None:
            parts = [to_int(x) for x in nd["distance"].split()]
            ints = [x for x in parts if x is not None]
            dist = ints if len(ints) == len(parts) else None
            if dist is None:
                unknown["distance"] = f"not a value: {nd['distance']!r}"
        cpus = cpulist_count(cpul)
        if cpul is not None and cpus is None:
            unknown["cpulist"] = f"not a value: {nd['cpulist']!r}"
        entry = NumaNode(node=nd["node"], cpulist=cpul, cpus=cpus, distances=dist)
        if cpul == "":
            entry.memory_only = True
        if unknown:
            entry.unknown = unknown
        for k in ("cpulist", "distance"):
            if k in unknown and k not in nd["errors"]:
                topo.note("sysfs.bad_value", f"devices/system/node/{nd.get('name') or nd['node']}"
                          f"/{k}: {unknown[k]}: unknown", source=SOURCE, level="warning")
        nodes.append(entry)
    return NumaInfo(online=(numa["online"] or "").strip() or None, nodes=nodes)


def gpudirect(mods: Dict[str, Any]) -> GpuDirect:
    """GPUDirect RDMA: which peer-memory modules are loaded."""
    peermem = mods["nvidia_peermem"]["loaded"]
    legacy = mods["nv_peer_mem"]["loaded"] or any(
        v["loaded"] for k, v in mods.items() if k.startswith("kernel/"))
    return GpuDirect(
        nvidia_peermem=peermem,
        nvidia_peermem_version=mods["nvidia_peermem"].get("version"),
        nv_peer_mem=legacy,
        peermem_loaded=peermem or legacy,
        dmabuf="unknown (not visible in sysfs)",
        nvidia_fs=mods["nvidia_fs"]["loaded"],
    )
