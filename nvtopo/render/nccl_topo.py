"""An NCCL topology file (``NCCL_TOPO_FILE``) written from the node's model
(``nvtopo snapshot --format nccl-topo``, ``docs/nccl.md``).

Where a VM flattens the PCIe tree, NCCL sees every GPU and NIC straight under the CPU and
turns GPU Direct RDMA off (distance over the limit) though each GPU and its NIC share a switch
on the host.  The file gives NCCL the pairing back, as the cloud vendors' own topology files
do: each GPU and the compute NICs it reaches at PIX/PXB (by the node's evidence, else the
layout's port map) sit under one bridge of their own (``ffff:ff:NN.0``, class ``0x060400``),
under the ``<cpu>`` of their NUMA node; everything else sits directly under its ``<cpu>``.
NCCL fills in the rest (``<gpu>`` and ``<net>`` attributes, NVLinks) from the devices.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..model import Topology
from ..model.vocab import pci_bdf
from ..safe import xml

#: NCCL's link_speed strings by PCIe generation.
SPEEDS = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe",
          5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}
NEAR = ("PIX", "PXB")


def busid(bus_id: Optional[str]) -> Optional[str]:
    """A PCI bus id as NCCL writes it (``0000:1b:00.0``), or None."""
    bdf = pci_bdf(bus_id)
    if bdf is None:
        return None
    return f"{bdf[0]:04x}:{bdf[1]:02x}:{bdf[2]:02x}.{bdf[3]:x}"


def _numa(value: Any) -> int:
    text = str(value or "").strip()
    digits = text.split(",")[0].split("-")[0]
    return int(digits) if digits.isdigit() and len(digits) < 5 else 0


def _mask(cpus: Optional[str]) -> Optional[str]:
    """A CPU list (``0-55,112-167``) as the hex mask NCCL prints (32-bit words, high first)."""
    if not cpus:
        return None
    bits = 0
    for part in cpus.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or len(lo) > 5 or len(hi) > 5:
            return None
        a, b = int(lo), int(hi or lo)
        if b < a or b > 65535:
            return None
        bits |= ((1 << (b - a + 1)) - 1) << a
    words = max(1, (bits.bit_length() + 31) // 32)
    return ",".join(f"{(bits >> (32 * i)) & 0xFFFFFFFF:08x}" for i in reversed(range(words)))


def _gpu_pcie(g: Any) -> Tuple[Optional[int], Optional[int]]:
    link = g.sysfs.link if g.sysfs is not None else None
    if link is not None and (link.max_gen or link.max_width):
        return link.max_gen, link.max_width
    pcie = getattr(g.nvml, "pcie", None) if g.nvml is not None else None
    if pcie is not None:
        return pcie.max_gen, pcie.max_width
    return None, None


def _groups(topo: Topology, nics: List[str], layout: Any) -> List[Tuple[List[int], List[str]]]:
    """GPUs and the compute NICs near them, joined where they share one (union by NIC)."""
    near: Dict[int, List[str]] = {}
    port_map = layout.nics.placement.port_map if layout is not None else None
    for g in topo.gpus:
        mine = [n for n in nics if topo.gpu_nic_path(g.index, n)[0] in NEAR]
        if not mine and port_map:
            mine = [n for n in port_map.get(g.index, []) if n in nics]
        near[g.index] = mine
    groups: List[Tuple[List[int], List[str]]] = []
    for i, mine in near.items():
        joined = [grp for grp in groups if set(grp[1]) & set(mine)]
        gpus, names = [i], list(mine)
        for grp in joined:
            groups.remove(grp)
            gpus = grp[0] + gpus
            names = grp[1] + [n for n in names if n not in grp[1]]
        groups.append((gpus, names))
    return groups


def document(topo: Topology, compute: List[str], layout: Any = None) -> str:
    """The NCCL topology file for ``topo`` (``compute``: the compute NICs, by name)."""
    nics = [n for n in compute if busid(getattr(topo.nic(n), "pci_bus_id", None))]
    gpus = {g.index: g for g in topo.gpus if busid(g.pci_bus_id)}
    cpus: Dict[int, List[str]] = {}
    affinity: Dict[int, Optional[str]] = {}
    bridge = 0
    for grp_gpus, grp_nics in _groups(topo, nics, layout):
        members = [g for g in grp_gpus if g in gpus]
        if not members:
            continue
        first = gpus[members[0]]
        numa = _numa(first.numa_affinity)
        affinity.setdefault(numa, _mask(first.cpu_affinity))
        lines = [_gpu_line(gpus[i]) for i in members] + [_nic_line(topo, n) for n in grp_nics]
        if grp_nics or len(members) > 1:
            gen, width = _gpu_pcie(first)
            head = f'    <pci busid="ffff:ff:{bridge:02x}.0" class="0x060400"' + \
                _link(gen, width) + ">"
            bridge += 1
            lines = [head] + ["  " + x for x in lines] + ["    </pci>"]
        cpus.setdefault(numa, []).extend(lines)
    for name in nics:  # compute NICs near no GPU: under their own NUMA node's cpu
        if not any(name in grp[1] for grp in _groups(topo, nics, layout)):
            cpus.setdefault(_numa(getattr(topo.nic(name), "numa_node", None)), []).append(
                _nic_line(topo, name))
    out = ['<system version="1">']
    for numa in sorted(cpus):
        mask = affinity.get(numa)
        out.append(f'  <cpu numaid="{numa}"' + (f' affinity="{xml(mask, attribute=True)}"'
                                               if mask else "") + ">")
        out += cpus[numa]
        out.append("  </cpu>")
    out.append("</system>")
    return "\n".join(out) + "\n"


def _link(gen: Optional[int], width: Optional[int]) -> str:
    text = f' link_speed="{SPEEDS[gen]}"' if gen in SPEEDS else ""
    return text + (f' link_width="{int(width)}"' if width else "")


def _gpu_line(g: Any) -> str:
    cls = g.sysfs.class_ if g.sysfs is not None and g.sysfs.class_ else "0x030200"
    gen, width = _gpu_pcie(g)
    return (f'    <pci busid="{busid(g.pci_bus_id)}" class="{xml(cls, attribute=True)}"'
            + _link(gen, width) + "/>")


def _nic_line(topo: Topology, name: str) -> str:
    nic = topo.nic(name)
    layers = {p.link_layer for p in (nic.sysfs.ports if nic is not None and nic.sysfs else [])}
    cls = "0x020000" if layers == {"Ethernet"} else "0x020700"
    return f'    <pci busid="{busid(nic.pci_bus_id) if nic else ""}" class="{cls}"/>'


__all__ = ["document", "busid"]
