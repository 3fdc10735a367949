"""The model arranged for the picture: NUMA boxes of cells (a GPU and the NICs that hang
below it), their widths, the NVLink facts per GPU and the NVSwitches; pure geometry, no
drawing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...model import Topology, path_kind, path_rank, pci_bdf
from ...safe import ascii_int, is_ascii_digits

# --- geometry ------------------------------------------------------------------------------

MARGIN = 20
GPU_W, GPU_H = 140, 70
NIC_W, NIC_H, NIC_PITCH = 84, 40, 92
CELL_MIN = GPU_W + 20
FAN_H = 50  # room between the GPU row and the NIC row for the GPU-NIC edges
ARC_H = 90  # room above the GPUs for NVLink arcs of a direct mesh
SW_W, SW_H, SW_PITCH = 110, 40, 118
MAX_ROW_W = 1960

# --- the model, arranged ------------------------------------------------------------------


@dataclass
class Cell:
    gpu: Optional[Any]  # a GPU, or None for the NICs of a NUMA node near no GPU
    nics: List[Tuple[Any, Optional[str]]]  # (NIC, path token)
    missing: Optional[int] = None  # a GPU the check reports missing (placeholder)
    x: float = 0.0
    w: float = 0.0


@dataclass
class Group:
    key: str
    title: str
    cells: List[Cell]
    x: float = 0.0
    w: float = 0.0


def _gpu_numa(g: Any) -> str:
    """The NUMA box a GPU is drawn in (``""``: unknown)."""
    return "" if g.numa_node is None else str(g.numa_node)


MISSING = "missing"


def _numa_sort(key: str) -> Tuple[int, int, str]:
    if key == MISSING:
        return (3, 0, "")
    if key == "":
        return (2, 0, "")
    num = ascii_int(key) if is_ascii_digits(key) else None
    return (0, num, "") if num is not None else (1, 0, key)


def _arrange(topo: Topology, missing: Sequence[int]) -> List[Group]:
    """The NUMA boxes, in order; ``missing``: GPUs drawn as placeholders (a box of their own)."""
    gpus = sorted(topo.gpus, key=lambda g: g.index)
    matrix = topo.matrix
    idx = {d: i for i, d in enumerate(matrix.devices)} if matrix is not None else {}

    def token(a: str, bs: Tuple[str, ...]) -> Optional[str]:
        if matrix is None or a not in idx:
            return None
        for b in bs:
            j = idx.get(b)
            if j is None:
                continue
            tok = matrix.cells[idx[a]][j] or matrix.cells[j][idx[a]]
            if tok is not None:
                return tok
        return None

    cells: Dict[int, Cell] = {g.index: Cell(gpu=g, nics=[]) for g in gpus}
    loose: Dict[str, List[Tuple[Any, Optional[str]]]] = {}
    for n in topo.nics:
        best: Optional[Tuple[int, int, str]] = None
        for g in gpus:
            tok = token(g.label, (n.label, n.name))
            rank = path_rank(tok)
            if rank is None or rank == 0 or tok is None:
                continue
            if best is None or rank < best[0]:
                best = (rank, g.index, tok)
        if best is not None and path_kind(best[2]) in ("PIX", "PXB", "PHB"):
            cells[best[1]].nics.append((n, best[2]))
            continue
        if isinstance(n.numa_node, int) and n.numa_node >= 0:
            key = str(n.numa_node)
        elif best is not None and path_kind(best[2]) == "NODE":
            key = _gpu_numa(cells[best[1]].gpu)
        else:
            key = ""
        loose.setdefault(key, []).append((n, best[2] if best else None))
    by_numa: Dict[str, List[Cell]] = {}
    for g in gpus:
        by_numa.setdefault(_gpu_numa(g), []).append(cells[g.index])
    for key, nics in loose.items():
        by_numa.setdefault(key, []).append(Cell(gpu=None, nics=nics))
    if missing:
        by_numa[MISSING] = [Cell(gpu=None, nics=[], missing=i) for i in missing]
    cpus: Dict[str, str] = {}
    numa = topo.sysfs.numa if topo.sysfs is not None else None
    for nd in numa.nodes if numa is not None else []:
        if nd.cpulist:
            cpus[str(nd.node)] = str(nd.cpulist)
    for g in gpus:
        if g.cpu_affinity and _gpu_numa(g) not in cpus:
            cpus[_gpu_numa(g)] = g.cpu_affinity
    groups: List[Group] = []
    for key in sorted(by_numa, key=_numa_sort):
        title = f"NUMA {key}" if key else "NUMA unknown"
        if key == MISSING:
            title = "Missing GPUs"
        if key in cpus:
            title += f" · CPUs {cpus[key]}"
        chunk: List[Cell] = []
        width = 16.0
        part = 0
        for c in by_numa[key]:
            c.w = max(CELL_MIN, len(c.nics) * NIC_PITCH + 10)
            if chunk and width + c.w > MAX_ROW_W:
                groups.append(Group(key, title if part == 0 else f"NUMA {key or '?'} (cont.)",
                                    chunk))
                chunk, width, part = [], 16.0, part + 1
            chunk.append(c)
            width += c.w
        if chunk:
            groups.append(Group(key, title if part == 0 else f"NUMA {key or '?'} (cont.)",
                                chunk))
    return groups


# --- NVLink facts ---------------------------------------------------------------------------


@dataclass
class GpuLink:
    active: Optional[int]
    should: Optional[int]  # links that should be up (active + down)


def _gpu_links(topo: Topology) -> Dict[int, GpuLink]:
    out: Dict[int, GpuLink] = {}
    for g in topo.gpus:
        nv = g.nvml.nvlink if g.nvml is not None else None
        if nv is None or not isinstance(nv.active, int):
            continue
        links = nv.links
        should = sum(1 for x in links if x.state in ("active", "down")) if links \
            else nv.total
        out[g.index] = GpuLink(active=nv.active, should=should)
    return out


def _switches(topo: Topology) -> List[str]:
    sw = list(((topo.nvml.switches if topo.nvml is not None else None) or {}).keys())
    return sorted(sw, key=lambda b: (pci_bdf(b) or (1 << 30, 0, 0, 0), b))


def _short_bus(bus: str) -> str:
    bdf = pci_bdf(bus)
    if bdf is None:
        return bus
    dom, b, d, fn = bdf
    s = f"{b:02X}:{d:02X}.{fn}"
    return s if dom == 0 else f"{dom:04X}:{s}"
