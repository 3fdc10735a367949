"""A simulated node: one machine description every source is rendered from.

:func:`build` turns a layout into a :class:`Machine`: GPUs with their NVLinks
(to NVSwitches or directly to peers), RDMA devices with their ports, the PCI
tree that places them (host bridges, root ports, switches), NUMA nodes and
CPUs, and the GPUDirect module (the parts: :mod:`.hardware`, :mod:`.families`,
:mod:`.pci`).  Faults (:mod:`.faults`) change the machine; the renderers (:mod:`.topo`,
:mod:`.sources`) print it as ``nvidia-smi topo -m`` text, an NVML machine description
and a sysfs tree.
Because all three read the same machine, a healthy node derives without a
single disagreement between sources, and a fault shows wherever it would show.

What a layout does not state (NICs, NUMA, CPUs, names) gets a plausible
default, and every default is recorded in :attr:`Machine.assumptions`.
"""

from __future__ import annotations

import random
import re
import uuid as uuid_mod
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from ..errors import NvtopoError
from ..layouts import Layout
from .families import (CONNECTX, DEFAULT_NVSWITCHES, FAMILIES, NVLINK_ENUM, PCIE_GTS,
                       RATE_TEXT, Family, family_of, rate_text)
from .hardware import Gpu, Link, Machine, Nic, PciDev, Port
from .pci import CLS_3D, CLS_ETH, CLS_IB, CLS_SWITCH, MELLANOX, NVIDIA, PciBuilder, Spec


# --- layout -> machine ---------------------------------------------------------------------------


def _cpulist(ranges: Sequence[Tuple[int, int]]) -> str:
    merged: List[List[int]] = []
    for a, b in sorted(ranges):
        if merged and a == merged[-1][1] + 1:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in merged)


def _numa_cpus(nodes: Sequence[int], fam: Family) -> Dict[int, str]:
    """CPUs per NUMA node: the host's cores split evenly, SMT siblings after all cores."""
    n = max(nodes) + 1 if nodes else 1
    per = max(1, fam.cores // n)
    total = per * n
    out = {}
    for k in range(n):
        ranges = [(k * per, k * per + per - 1)]
        if fam.threads_per_core == 2:
            ranges.append((total + k * per, total + k * per + per - 1))
        out[k] = _cpulist(ranges)
    return out


def _split(total: int, parts: int) -> List[int]:
    """``total`` links over ``parts`` switches as evenly as possible, larger shares inside
    (18 over 4: 4, 5, 5, 4 as HGX H100 wires them)."""
    base, extra = divmod(total, parts)
    sizes = [base] * parts
    order = sorted(range(parts), key=lambda i: abs(i - (parts - 1) / 2))
    for i in order[:extra]:
        sizes[i] += 1
    return sizes


def _names_for(count: int, pool: Sequence[str], taken: Sequence[str]) -> List[str]:
    """``count`` compute NIC names: the layout's names first, then free ``mlx5_N``."""
    out = [x for x in pool if x not in taken][:max(0, count)]
    used = {_mlx_index(x) for x in list(taken) + list(pool)} - {None}
    k = 0
    while len(out) < count:
        if k not in used:
            out.append(f"mlx5_{k}")
            used.add(k)
        k += 1
    return out


def _mlx_index(name: str) -> Optional[int]:
    m = re.match(r"^mlx5_([0-9]{1,6})$", name)
    return int(m.group(1)) if m else None


def build(layout: Layout, seed: int = 0, hostname: Optional[str] = None) -> Machine:
    """A healthy node of ``layout``; deterministic for a given ``seed``."""
    b = _Builder(layout, seed)
    b.gpus_and_numa()
    b.nvlink()
    facts = b.nic_facts()
    groups = b.nic_groups(facts)
    storage = b.storage_nics(groups)
    rate = facts.rate
    cx = CONNECTX.get(int(rate) if float(rate) in (100, 200, 400, 800) else 0,
                      CONNECTX[400] if rate > 200 else CONNECTX[200])
    b.new_nics(groups, storage, facts, cx)
    pci = b.pci_tree(groups, storage, facts.placement, cx)
    b.fill_pci(pci, cx)
    host = hostname or f"{re.sub(r'[^a-z0-9-]', '-', layout.name.lower())}-" \
                       f"{b.rng.randrange(10000):04d}"
    return Machine(
        layout=layout, seed=seed, hostname=host, family=b.fam, gpus=b.gpus, nics=b.nics,
        pci=pci, numa_cpus=b.numa_cpus, switches=b.switches, nvswitch=b.nvswitch,
        fabric=b.fabric, peermem=layout.nics.gpudirect_rdma is not False,
        nvlink_version=b.nvlink_version, assumptions=b.notes, healthy_gpu_count=b.n)


class _NicFacts(NamedTuple):
    """The layout's compute NIC facts, each defaulted (and the default noted) when unstated."""
    compute_count: int
    rate: Any
    layer: str
    placement: str
    per_nic: Any
    gpu_nic: Optional[Dict[int, List[str]]]


#: A PCI complex to lay out: (GPU order, NIC name order, its tree, a NIC tree apart, NUMA).
_Plan = Tuple[float, int, List[Spec], Optional[List[Spec]], int]


class _Builder:
    """One machine being built from a layout, part by part, in the order the parts draw
    on the seeded random source (GPU UUIDs and serials, NIC GUIDs, the host name) and add
    to the assumptions."""

    def __init__(self, layout: Layout, seed: int) -> None:
        self.layout = layout
        self.rng = random.Random(f"nvtopo-simulate:{layout.name}:{seed}")
        self.notes: List[str] = []
        self.fam = family_of(layout, self.notes)
        self.switches: Dict[str, str] = {}
        self.nics: List[Nic] = []

    # -- GPUs and NUMA

    def gpus_and_numa(self) -> None:
        """The GPUs, their NUMA nodes and CPUs, their PCIe links (and C2C on Grace)."""
        layout, fam, notes, rng = self.layout, self.fam, self.notes, self.rng
        n = layout.gpus.count
        if not isinstance(n, int) or n < 1:
            n = 8
            notes.append("layout states no GPU count: 8 GPUs simulated")
        self.n = n
        self.gpu_numa = gpu_numa = self._gpu_numa(n)
        self.numa_cpus = numa_cpus = _numa_cpus(sorted(set(gpu_numa)), fam)
        gpu_numa_ids: List[Optional[int]] = [None] * n
        if fam.grace:
            # Grace: each GPU's memory is a CPU-less NUMA node of its own (GPU NUMA ID)
            for i in range(n):
                gpu_numa_ids[i] = fam.gpu_numa_base + 8 * i
            notes.append("Grace system: GPU NUMA IDs simulated as "
                         + ", ".join(str(x) for x in gpu_numa_ids)
                         + "; NUMA Affinity printed as the CPU node only")
        pcie_gen = layout.gpus.pcie.gen
        pcie_width = layout.gpus.pcie.width
        if not isinstance(pcie_gen, int) or not isinstance(pcie_width, int):
            notes.append(f"layout states no GPU PCIe link: Gen{fam.pcie_gen} x16 simulated")
            pcie_gen = pcie_gen if isinstance(pcie_gen, int) else fam.pcie_gen
            pcie_width = pcie_width if isinstance(pcie_width, int) else 16
        self.pcie_gen, self.pcie_width = pcie_gen, pcie_width
        self.gpus = [Gpu(ident=i,
                         uuid=f"GPU-{uuid_mod.UUID(int=rng.getrandbits(128), version=4)}",
                         serial=f"{rng.randrange(10**12, 10**13)}", numa=gpu_numa[i],
                         cpus=numa_cpus[gpu_numa[i]], gpu_numa_id=gpu_numa_ids[i],
                         pcie_max_gen=pcie_gen, pcie_max_width=pcie_width) for i in range(n)]
        if fam.grace:  # NVLink-C2C to the Grace CPU: the layout's link count, else 10 (GH200)
            c2c = layout.c2c.links_per_gpu
            for g in self.gpus:
                g.c2c_links = c2c if isinstance(c2c, int) and c2c > 0 else 10

    def _gpu_numa(self, n: int) -> List[int]:
        """Each GPU's NUMA node: the layout's map, else the GPUs split in index order."""
        gpu_numa_map = self.layout.numa.gpu_node
        if gpu_numa_map is not None and all(i in gpu_numa_map for i in range(n)):
            return [gpu_numa_map[i] for i in range(n)]
        want = self.layout.numa.nodes_with_gpus
        nodes = want if isinstance(want, int) and want >= 1 else (2 if n >= 4 else 1)
        nodes = min(nodes, n)
        self.notes.append(f"layout states no GPU-to-NUMA map: GPUs split in index order over "
                          f"{nodes} NUMA node(s)")
        return [i * nodes // n for i in range(n)]

    # -- NVLink

    def nvlink(self) -> None:
        """The GPUs' NVLinks: to NVSwitches, or to peers by the layout's pairs."""
        nvl, fam = self.layout.nvlink, self.fam
        self.nvswitch = nvswitch = bool(nvl.nvswitch)
        gen = nvl.generation
        self.nvlink_version = NVLINK_ENUM.get(str(gen), fam.nvlink_version) if gen \
            else fam.nvlink_version
        has_nvlink = nvl.stated and bool(
            nvswitch or nvl.pairs or nvl.pair_count or nvl.links_per_gpu)
        if nvswitch:
            self._switch_links()
        elif has_nvlink:
            self._peer_links()
        self.fabric = fabric = bool(nvl.fabric) and nvswitch
        for g in self.gpus:
            g.fabric_state = 3 if fabric else None

    def _switch_links(self) -> None:
        """Every GPU's links spread over its baseboard's NVSwitches."""
        nvl, notes, n = self.layout.nvlink, self.notes, self.n
        per_pair = nvl.pair_count
        links = nvl.links_per_gpu
        sw_links = per_pair if isinstance(per_pair, int) else links
        if not isinstance(sw_links, int):
            sw_links = 18
            notes.append("layout states no NVLink count: 18 links per GPU simulated")
        total = links if isinstance(links, int) and links >= sw_links else sw_links
        count = nvl.nvswitch_count
        if not isinstance(count, int) or count < 1:
            # the board's own count where the GPU model fixes it (an HGX A100 baseboard has
            # 6 NVSwitches, as hgx-a100-8 states); 4 (HGX H100/H200) otherwise
            count = DEFAULT_NVSWITCHES.get(self.fam.architecture, 4)
            notes.append(f"layout states no NVSwitch count: {count} simulated")
        # fewer links than switches: the GPUs sit on baseboards, each with its own switches
        # (DGX-2: 6 links to the 6 switches of the GPU's board, 12 switches in all)
        boards = max(1, count // sw_links) if sw_links < count else 1
        per_board = count // boards
        sizes = _split(sw_links, per_board)
        if boards > 1:
            notes.append(f"{count} NVSwitches on {boards} baseboards of {per_board}: each GPU "
                         f"links to the {per_board} switches of its board")
        for g in self.gpus:
            board = g.ident * boards // n
            ids = [f"sw{board * per_board + k}" for k in range(per_board)]
            lk = 0
            for sid, size in zip(ids, sizes):
                for _ in range(size):
                    g.links.append(Link(lk, "switch", sid))
                    lk += 1
            g.link_count = total
            g.switch_link_count = sw_links
        if total > sw_links:
            notes.append(f"{total - sw_links} of {total} NVLinks per GPU not connected to a "
                         "switch (NVML counts them, inactive by design)")

    def _peer_links(self) -> None:
        """Direct GPU-to-GPU links: the layout's pairs, else its count between every pair."""
        nvl, n, gpus = self.layout.nvlink, self.n, self.gpus
        pairs = nvl.pair_map() if nvl.pairs is not None else None
        per_pair = nvl.pair_count
        edges: List[Tuple[int, int, int]] = []
        if pairs is not None:
            for (a, b), v in pairs.items():
                if a < n and b < n and v > 0:
                    edges.append((a, b, v))
        elif isinstance(per_pair, int):
            edges = [(a, b, per_pair) for a in range(n) for b in range(a + 1, n)]
        edges.sort()
        nxt = [0] * n
        for a, b, cnt in edges:
            for _ in range(cnt):
                la, lb = nxt[a], nxt[b]
                nxt[a] += 1
                nxt[b] += 1
                gpus[a].links.append(Link(la, "gpu", b, lb))
                gpus[b].links.append(Link(lb, "gpu", a, la))
        for g in gpus:
            g.link_count = len(g.links)
        per_gpu = nvl.links_per_gpu
        if isinstance(per_gpu, int) and any(g.link_count != per_gpu for g in gpus):
            self.notes.append(f"layout says {per_gpu} NVLinks per GPU but its pairs wire "
                              + "/".join(sorted({str(g.link_count) for g in gpus}))
                              + ": NVML counts only the wired links")

    # -- RDMA devices: compute NICs grouped with the GPUs they serve, storage NICs in the gaps

    def nic_facts(self) -> _NicFacts:
        """The compute NICs' count, rate, link layer and placement, defaulted if unstated."""
        nics, notes, n = self.layout.nics, self.notes, self.n
        compute_count = nics.compute.count
        rate: Any = nics.compute.rate_gbps
        layer = nics.compute.link_layer
        placement = nics.placement.gpu_to_nearest_compute_nic
        gpu_nic = nics.placement.port_map
        if not nics.facts_stated:
            compute_count, placement = n, "PIX"
            notes.append("layout states no NICs: one compute NIC per GPU simulated, behind "
                         "the GPU's PCIe switch (PIX)")
        if not isinstance(compute_count, int):
            compute_count = len({x for v in (gpu_nic or {}).values() for x in v}) or n
            notes.append(f"layout states no compute NIC count: {compute_count} simulated")
        if not isinstance(rate, (int, float)):
            rate = {3: 100, 4: 200, 5: 400, 6: 800}.get(self.fam.pcie_gen, 400)
            notes.append(f"layout states no compute NIC rate: {rate} Gb/s simulated")
        if layer not in ("InfiniBand", "Ethernet"):
            layer = "InfiniBand"
            notes.append("layout states no compute NIC link layer: InfiniBand simulated")
        if placement not in ("PIX", "PXB", "PHB", "NODE", "SYS"):
            placement = "PIX"
            if compute_count:
                notes.append("layout states no GPU-to-NIC placement: PIX simulated")
        return _NicFacts(compute_count, rate, layer, placement,
                         nics.placement.gpus_per_compute_nic, gpu_nic)

    def nic_groups(self, facts: _NicFacts) -> List[Tuple[List[int], List[str]]]:
        """(GPU idents, compute NIC names) per group: by the port map, else the GPUs in
        index order with as many NICs each as the count allows."""
        n, compute_count, gpu_nic = self.n, facts.compute_count, facts.gpu_nic
        groups: List[Tuple[List[int], List[str]]] = []
        pool = list(self.layout.nics.compute.names or [])
        if gpu_nic:
            owner: Dict[str, int] = {}
            for i in range(n):
                names = gpu_nic.get(i, [])
                hit = next((owner[x] for x in names if x in owner), None)
                if hit is None:
                    groups.append(([i], list(names)))
                    hit = len(groups) - 1
                else:
                    groups[hit][0].append(i)
                    groups[hit][1].extend(x for x in names if x not in groups[hit][1])
                for x in names:
                    owner[x] = hit
            named = [x for _, names in groups for x in names]
            for x in _names_for(compute_count - len(named), pool, named):
                groups.append(([], [x]))
        elif compute_count <= 0:
            groups = [([i], []) for i in range(n)]
        else:
            per_nic = facts.per_nic
            k_gpus = per_nic if isinstance(per_nic, int) and per_nic > 0 else None
            if k_gpus is None:
                k_gpus = max(1, n // compute_count)
            nics_per_group = max(1, compute_count * k_gpus // n) if n else 1
            it = iter(_names_for(compute_count, pool, []))
            for start in range(0, n, k_gpus):
                members = list(range(start, min(n, start + k_gpus)))
                groups.append((members, [x for _, x in zip(range(nics_per_group), it)]))
            for rest in it:  # NICs beyond the GPU groups: alone on a host bridge
                groups.append(([], [rest]))
        return groups

    def storage_nics(self, groups: List[Tuple[List[int], List[str]]]) -> List[List[str]]:
        """Storage NICs in the gaps between the compute NICs' ``mlx5_N`` names (dual-port
        cards where two gaps are adjacent)."""
        compute_names = [x for _, names in groups for x in names]
        known = {k for x in compute_names for k in [_mlx_index(x)] if k is not None}
        storage: List[List[str]] = []
        if known:
            gaps = [k for k in range(max(known)) if k not in known]
            while gaps:
                if len(gaps) >= 2 and gaps[1] == gaps[0] + 1:
                    storage.append([f"mlx5_{gaps[0]}", f"mlx5_{gaps[1]}"])
                    gaps = gaps[2:]
                else:
                    storage.append([f"mlx5_{gaps[0]}"])
                    gaps = gaps[1:]
            if storage:
                self.notes.append("RDMA devices between the compute NICs' names simulated as "
                                  "storage NICs (dual-port ConnectX in Ethernet mode, 200 "
                                  "Gb/s, RoCE): " + ", ".join("/".join(s) for s in storage))
        if self.layout.nics.gpudirect_rdma is None:
            self.notes.append("layout states no GPUDirect RDMA expectation: nvidia_peermem "
                              "simulated as loaded")
        return storage

    def new_nics(self, groups: List[Tuple[List[int], List[str]]], storage: List[List[str]],
                 facts: _NicFacts, cx: Any) -> None:
        """The RDMA devices, compute then storage, each with a GUID from the seed."""
        def new_nic(name: str, role: str, ll: str, r: Union[int, float], gen: int) -> None:
            guid = ":".join(f"{self.rng.getrandbits(16):04x}" for _ in range(4))
            self.nics.append(Nic(name=name, role=role, link_layer=ll, guid=guid,
                                 port=Port(rate_gbps=r), pcie_gen=gen, place=f"slot:{name}"))

        for _, names in groups:
            for x in names:
                new_nic(x, "compute", facts.layer, facts.rate, cx[4])
        for devs in storage:
            for x in devs:
                new_nic(x, "storage", "Ethernet", 200, 4)

    # -- PCI tree: complexes in GPU order, storage NICs where their names fall

    def pci_tree(self, groups: List[Tuple[List[int], List[str]]], storage: List[List[str]],
                 placement: str, cx: Any) -> Dict[str, PciDev]:
        """The PCI devices: the NVSwitch complex, then one complex per GPU group (and its
        NICs' own where the placement puts them apart), storage NICs by name order."""
        builder = PciBuilder()
        if self.nvswitch:
            sw_children = [("ep", [f"nvswitch:{sid}"])
                           for sid in sorted({lk.remote for g in self.gpus for lk in g.links})]
            builder.complex(sw_children, numa=min(self.gpu_numa),
                            gts=PCIE_GTS[min(self.fam.pcie_gen, 5)])
        gts = PCIE_GTS.get(max(self.pcie_gen, cx[4]), 32.0)
        plans: List[_Plan] = []
        for gi, (members, names) in enumerate(groups):
            plans.extend(self._group_plans(gi, members, names, placement))
        # storage complexes go before the first GPU complex whose NICs are numbered above them
        ordered = sorted(plans, key=lambda p: p[0])
        for devs in storage:
            idx = _mlx_index(devs[0]) or 0
            pos = next((i for i, p in enumerate(ordered) if p[1] > idx), len(ordered))
            numa = ordered[pos - 1][4] if pos > 0 else (ordered[0][4] if ordered else 0)
            spec: List[Spec] = [("ep", [f"nic:slot:{x}" for x in devs])]
            ordered.insert(pos, (-1, idx, spec, None, numa))
        for _, _, spec_list, _, numa in ordered:
            builder.complex(spec_list, numa=numa, gts=gts)
        return builder.devs

    def _group_plans(self, gi: int, members: List[int], names: List[str], placement: str
                     ) -> List[_Plan]:
        """One GPU group's complex (and its NICs' own, at NODE or SYS): the tree that puts
        the NICs at ``placement`` from the GPUs."""
        gpu_numa, numa_cpus = self.gpu_numa, self.numa_cpus
        numa_nodes = sorted(set(gpu_numa))
        gnuma = gpu_numa[members[0]] if members else numa_nodes[0]
        if members and len({gpu_numa[m] for m in members}) > 1:
            self.notes.append(f"GPUs {members} share a NIC but not a NUMA node: placed on "
                              f"NUMA {gnuma}")
        gpu_eps: List[Spec] = [("ep", [f"gpu:{m}"]) for m in members]
        nic_eps: List[Spec] = [("ep", [f"nic:slot:{x}"]) for x in names]
        order_key = min([k if k is not None else 10**6 for x in names for k in [_mlx_index(x)]]
                        or [10**6])
        first_gpu = members[0] if members else self.n + gi
        nic_numa = gnuma
        other: Optional[List[Spec]] = None
        if not members or not names:
            main: List[Spec] = [("sw", gpu_eps + nic_eps)] if len(gpu_eps + nic_eps) > 1 \
                else list(gpu_eps + nic_eps)
        elif placement == "PIX":
            main = [("sw", gpu_eps + nic_eps)]
        elif placement == "PXB":
            main = [("sw", [("sw", gpu_eps), ("sw", nic_eps)])]
        elif placement == "PHB":
            main = gpu_eps + nic_eps
        else:
            main = [("sw", gpu_eps)] if len(gpu_eps) > 1 else gpu_eps
            other = nic_eps
            if placement == "SYS":
                others = [x for x in numa_nodes if x != gnuma]
                nic_numa = others[gi % len(others)] if others else gnuma + 1
                if nic_numa not in numa_cpus:
                    numa_cpus[nic_numa] = ""
        plans: List[_Plan] = [(first_gpu, order_key, main, other,
                               gnuma if members else nic_numa)]
        if other is not None:
            plans.append((first_gpu + 0.5, order_key, other, None, nic_numa))
        return plans

    def fill_pci(self, pci: Dict[str, PciDev], cx: Any) -> None:
        """Each PCI function's identity and link, and the GPU, NIC and NVSwitch bus ids."""
        fam = self.fam
        for d in pci.values():
            role = d.role
            if role.startswith("gpu:"):
                g = self.gpus[int(role[4:])]
                g.bdf = d.bdf
                d.vendor, d.device, d.cls = NVIDIA, fam.device_id, CLS_3D
                d.gts, d.width = PCIE_GTS.get(self.pcie_gen, 32.0), self.pcie_width
                d.numa = g.numa
            elif role.startswith("nic:"):
                nic = next(x for x in self.nics if x.place == role[4:])
                nic.bdf, nic.numa = d.bdf, d.numa
                d.vendor = MELLANOX
                d.cls = CLS_IB if nic.link_layer == "InfiniBand" else CLS_ETH
                d.device = cx[0] if nic.role == "compute" else CONNECTX[200][0]
                d.gts, d.width = PCIE_GTS[nic.pcie_gen], 16
            elif role.startswith("nvswitch:"):
                d.vendor, d.device, d.cls = NVIDIA, 0x22A3, CLS_SWITCH
                d.width = 2
                dbf = d.bdf.split(":")
                self.switches[role[9:]] = \
                    f"{int(dbf[0], 16):08X}:{dbf[1].upper()}:{dbf[2].upper()}"
        for nic in self.nics:
            bus = int(nic.bdf.split(":")[1], 16)
            fn = int(nic.bdf.rsplit(".", 1)[1])
            nic.netdev = (f"ibp{bus}s0" if nic.link_layer == "InfiniBand"
                          else f"enp{bus}s0f{fn}np{fn}")


def load_layout(name: Optional[str], path: Optional[str]) -> Layout:
    """A bundled layout by name, or a layout file."""
    from .. import layouts

    if path is not None:
        if name is not None:
            raise NvtopoError("give a layout name or --layout-file, not both", where="simulate")
        return layouts.load_file(path)
    if name is None:
        raise NvtopoError("name a layout (nvtopo layouts lists them) or give --layout-file",
                          where="simulate")
    return layouts.load(name)


__all__ = ["build", "load_layout", "Machine", "Gpu", "Link", "Nic", "PciDev", "Port", "Family",
           "FAMILIES", "CONNECTX", "NVLINK_ENUM", "PCIE_GTS", "RATE_TEXT", "rate_text"]
