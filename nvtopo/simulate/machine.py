"""A simulated node: one machine description every source is rendered from.

:func:`build` turns a layout into a :class:`Machine`: GPUs with their NVLinks
(to NVSwitches or directly to peers), RDMA devices with their ports, the PCI
tree that places them (host bridges, root ports, switches), NUMA nodes and
CPUs, and the GPUDirect module.  Faults (:mod:`.faults`) change the machine;
the renderers (:mod:`.topo`, :mod:`.nvml`, :mod:`.sysfs`) print it as
``nvidia-smi topo -m`` text, an NVML machine description and a sysfs tree.
Because all three read the same machine, a healthy node derives without a
single disagreement between sources, and a fault shows wherever it would show.

What a layout does not state (NICs, NUMA, CPUs, names) gets a plausible
default, and every default is recorded in :attr:`Machine.assumptions`.
"""

from __future__ import annotations

import random
import re
import uuid as uuid_mod
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..errors import NvtopoError
from ..layouts import Layout

# --- GPU families -------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """What NVML says about one GPU model (names as NVML prints them)."""

    name: str
    architecture: int  # nvmlDeviceGetArchitecture enum
    cc: Tuple[int, int]
    device_id: int  # PCI device id (NVML's pciDeviceId is id << 16 | 0x10DE)
    memory_gib: int
    nvlink_version: int  # nvmlDeviceGetNvLinkVersion enum
    link_mbps: int  # per-link speed NVML reports (MB/s)
    pcie_gen: int
    cores: int  # physical CPU cores of the host (all sockets)
    threads_per_core: int
    driver: Tuple[str, int]  # driver version, CUDA driver version
    grace: bool = False
    gpu_numa_base: int = 0  # first GPU memory NUMA node on Grace systems


_OLD = ("470.182.03", 11040)
_A = ("535.154.05", 12020)
_H = ("550.54.15", 12040)
_B = ("570.124.06", 12080)

#: NVSwitch chips of the baseboard by GPU architecture, where a layout states no count
#: (Ampere: the HGX A100 8-GPU board has 6).
_DEFAULT_NVSWITCHES = {7: 6}

#: Known GPU models, tried in order against the layout's ``gpus.name_pattern``.
FAMILIES: Tuple[Family, ...] = (
    Family("Tesla P100-SXM2-16GB", 4, (6, 0), 0x15F9, 16, 1, 20000, 3, 40, 2, _OLD),
    Family("Tesla V100-SXM2-32GB", 5, (7, 0), 0x1DB5, 32, 2, 25781, 3, 40, 2, _OLD),
    Family("Tesla V100-DGXS-32GB", 5, (7, 0), 0x1DB7, 32, 2, 25781, 3, 20, 2, _OLD),
    Family("Tesla V100-SXM3-32GB", 5, (7, 0), 0x1DB8, 32, 2, 25781, 3, 48, 2, _OLD),
    Family("NVIDIA A100-SXM4-80GB", 7, (8, 0), 0x20B2, 80, 5, 25781, 4, 128, 2, _A),
    Family("NVIDIA A800-SXM4-80GB", 7, (8, 0), 0x20F3, 80, 5, 25781, 4, 128, 2, _A),
    Family("NVIDIA H100 80GB HBM3", 9, (9, 0), 0x2330, 80, 6, 26562, 5, 112, 2, _H),
    Family("NVIDIA H200", 9, (9, 0), 0x2335, 141, 6, 26562, 5, 112, 2, _H),
    Family("NVIDIA H800", 9, (9, 0), 0x2324, 80, 6, 26562, 5, 96, 2, _H),
    Family("NVIDIA H20", 9, (9, 0), 0x2329, 96, 6, 26562, 5, 112, 2, _H),
    Family("NVIDIA GH200 480GB", 9, (9, 0), 0x2342, 96, 6, 26562, 5, 288, 1, _H, True, 4),
    Family("NVIDIA GB200", 10, (10, 0), 0x2941, 186, 7, 53125, 5, 144, 1, _B, True, 2),
    Family("NVIDIA B200", 10, (10, 0), 0x2901, 180, 7, 53125, 5, 112, 2, _B),
    Family("NVIDIA B300 SXM6 AC", 10, (10, 3), 0x3182, 270, 7, 53125, 6, 120, 2, _B),
)

#: Layout ``nvlink.generation`` -> NVML version enum (inverse of the probe's table).
NVLINK_ENUM = {"1.0": 1, "2.0": 2, "2.2": 3, "3.0": 4, "3.1": 5, "4.0": 6, "5.0": 7, "6.0": 8}
PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
#: IB rate (Gb/s) -> the kernel's rate text for a 4X port.
RATE_TEXT = {10: "10 Gb/sec (4X SDR)", 20: "20 Gb/sec (4X DDR)", 40: "40 Gb/sec (4X QDR)",
             56: "56 Gb/sec (4X FDR)", 100: "100 Gb/sec (4X EDR)", 200: "200 Gb/sec (4X HDR)",
             400: "400 Gb/sec (4X NDR)", 800: "800 Gb/sec (4X XDR)"}
#: ConnectX generation by rate: (PCI device id, hca_type, fw, board, PCIe gen).
CONNECTX = {100: (0x1017, "MT4119", "16.35.2000", "MT_0000000008", 3),
            200: (0x101B, "MT4123", "20.31.1014", "MT_0000000223", 4),
            400: (0x1021, "MT4129", "28.39.1002", "MT_0000000838", 5),
            800: (0x1023, "MT4131", "40.44.1036", "MT_0000001093", 6)}


def rate_text(gbps: Union[int, float]) -> str:
    g = int(gbps) if float(gbps).is_integer() else gbps
    return RATE_TEXT.get(int(g), f"{g} Gb/sec (4X)") if isinstance(g, int) else f"{g} Gb/sec (4X)"


def _family(layout: Layout, notes: List[str]) -> Family:
    pattern = layout.get("gpus.name_pattern")
    if isinstance(pattern, str):
        rx = re.compile(pattern, re.I)
        for fam in FAMILIES:
            if rx.search(fam.name):
                return fam
        # an unknown model: take the closest family by NVLink generation, name from the pattern
        literal = re.sub(r"[\\^$.*+?()\[\]{}|]", "", pattern.split("|")[0]).strip() or "GPU"
        base = _family_by_generation(layout)
        name = f"NVIDIA {literal}"
        if not rx.search(name):
            name = base.name
        notes.append(f"GPU model matched no known name; simulated as {name!r} with "
                     f"{base.name} properties")
        return Family(name, *[getattr(base, f) for f in (
            "architecture", "cc", "device_id", "memory_gib", "nvlink_version", "link_mbps",
            "pcie_gen", "cores", "threads_per_core", "driver", "grace", "gpu_numa_base")])
    fam = _family_by_generation(layout)
    notes.append(f"layout names no GPU model: simulated as {fam.name}")
    return fam


def _family_by_generation(layout: Layout) -> Family:
    gen = layout.get("nvlink.generation")
    by_gen = {"1.0": 0, "2.0": 1, "3.0": 4, "3.1": 4, "4.0": 6, "5.0": 12}
    return FAMILIES[by_gen.get(str(gen), 6)]


# --- the machine ------------------------------------------------------------------------------


@dataclass
class Link:
    """One NVLink of a GPU: to a switch (``switch`` id, port) or a peer GPU (ident, its link)."""

    index: int
    kind: str  # "switch" or "gpu"
    remote: Union[str, int]  # switch id, or the peer GPU's ident
    remote_link: int = 0
    up: bool = True


@dataclass
class Gpu:
    ident: int  # index on the healthy node; outputs renumber by PCI order
    uuid: str
    serial: str
    numa: int
    cpus: str
    gpu_numa_id: Optional[int]
    links: List[Link] = field(default_factory=list)
    #: NVML's link count (field 91) and switch-connected count (field 147).
    link_count: int = 0
    switch_link_count: int = 0
    pcie_max_gen: int = 5
    pcie_max_width: int = 16
    pcie_gen: Optional[int] = None  # current, when below max
    pcie_width: Optional[int] = None
    bdf: str = ""
    fabric_state: Optional[int] = None  # 3 completed, 1 not started, None: not supported


@dataclass
class Port:
    state: str = "4: ACTIVE"
    phys: str = "5: LinkUp"
    rate_gbps: Union[int, float] = 400
    counters: Dict[str, int] = field(default_factory=dict)


@dataclass
class Nic:
    """One RDMA device (a PCI function) with one port."""

    name: str
    role: str  # "compute" or "storage"
    link_layer: str  # "InfiniBand" or "Ethernet"
    guid: str
    port: Port
    pcie_gen: int = 5
    #: PCI place key: the function this device sits on (swapped by nic-affinity-swap).
    place: str = ""
    bdf: str = ""
    numa: int = 0
    netdev: str = ""


@dataclass
class PciDev:
    """A PCI function: a bridge (root port, switch port) or an endpoint."""

    bdf: str
    host_bridge: str  # "pci0000:17"
    chain: List[str]  # BDFs from the root port down to this function (inclusive)
    numa: int
    vendor: int
    device: int
    cls: int
    gts: float
    width: int
    cur_gts: Optional[float] = None
    cur_width: Optional[int] = None
    #: what sits here: "gpu:<ident>", "nic:<place>", "nvswitch:<id>", or "" for bridges
    role: str = ""

    @property
    def path(self) -> str:
        return f"devices/{self.host_bridge}/" + "/".join(self.chain)


@dataclass
class Machine:
    layout: Layout
    seed: int
    hostname: str
    family: Family
    gpus: List[Gpu]
    nics: List[Nic]
    pci: Dict[str, PciDev]  # bdf -> device
    numa_cpus: Dict[int, str]  # NUMA node -> cpulist ("" for memory-only nodes)
    switches: Dict[str, str]  # NVSwitch id -> bus id (NVML spelling)
    nvswitch: bool
    fabric: bool
    peermem: bool
    nvlink_version: int
    assumptions: List[str]
    #: topo-text-only NV# overrides (nvlink-degraded on NVSwitch systems): (a, b) idents -> n
    topo_pair_override: Dict[Tuple[int, int], int] = field(default_factory=dict)
    faults: List[str] = field(default_factory=list)
    healthy_gpu_count: int = 0

    # -- lookups ---------------------------------------------------------------------------

    def gpu(self, ident: int) -> Optional[Gpu]:
        return next((g for g in self.gpus if g.ident == ident), None)

    def nic(self, name: str) -> Optional[Nic]:
        return next((n for n in self.nics if n.name == name), None)

    def gpus_in_order(self) -> List[Gpu]:
        """Present GPUs in PCI bus order: NVML, nvidia-smi and sysfs number them so."""
        return sorted(self.gpus, key=lambda g: _bdf_key(g.bdf))

    def index_of(self, ident: int) -> int:
        """The index tools print for a GPU (PCI order among the GPUs present)."""
        return [g.ident for g in self.gpus_in_order()].index(ident)

    def nics_in_order(self) -> List[Nic]:
        return sorted(self.nics, key=lambda n: _bdf_key(n.bdf))

    def dev_of_gpu(self, g: Gpu) -> PciDev:
        return self.pci[g.bdf]

    def dev_of_nic(self, n: Nic) -> PciDev:
        return self.pci[n.bdf]

    # -- NVLink counts ------------------------------------------------------------------------

    def pair_count(self, a: Gpu, b: Gpu) -> int:
        """GPU pair NVLink count as NVML and nvidia-smi count it (direct min + switch min)."""
        d_ab = sum(1 for lk in a.links if lk.up and lk.kind == "gpu" and lk.remote == b.ident)
        d_ba = sum(1 for lk in b.links if lk.up and lk.kind == "gpu" and lk.remote == a.ident)
        sa = sum(1 for lk in a.links if lk.up and lk.kind == "switch")
        sb = sum(1 for lk in b.links if lk.up and lk.kind == "switch")
        return min(d_ab, d_ba) + (min(sa, sb) if sa and sb else 0)

    def topo_pair_count(self, a: Gpu, b: Gpu) -> int:
        key = (min(a.ident, b.ident), max(a.ident, b.ident))
        if key in self.topo_pair_override:
            return self.topo_pair_override[key]
        return self.pair_count(a, b)

    # -- PCI paths ---------------------------------------------------------------------------

    def path_level(self, a: PciDev, b: PciDev) -> str:
        """PIX/PXB/PHB/NODE/SYS between two PCI functions, as nvidia-smi prints it."""
        if a.bdf == b.bdf:
            return "X"
        if a.bdf.rsplit(".", 1)[0] == b.bdf.rsplit(".", 1)[0]:
            return "PIX"
        if a.host_bridge == b.host_bridge:
            sa, sb = _switches(a), _switches(b)
            k = 0
            while k < min(len(sa), len(sb)) and sa[k] == sb[k]:
                k += 1
            if k == 0:
                return "PHB"
            return "PIX" if (len(sa) - k) + (len(sb) - k) == 0 else "PXB"
        return "NODE" if a.numa == b.numa else "SYS"


def _switches(d: PciDev) -> List[str]:
    """Switch upstream ports above a function (chain: rp, usp, dsp, usp, dsp, ..., dev)."""
    above = d.chain[:-1]
    return above[1::2]


def _bdf_key(bdf: str) -> Tuple[int, int, int, int]:
    dom, bus, rest = bdf.split(":")
    dev, fn = rest.split(".")
    return int(dom, 16), int(bus, 16), int(dev, 16), int(fn)


# --- building the PCI tree --------------------------------------------------------------------

#: A tree spec: ("ep", role, [function roles]) or ("sw", [children]); a host bridge is a list.
Spec = Tuple[Any, ...]

INTEL, BROADCOM, PLX, MELLANOX, NVIDIA = 0x8086, 0x1000, 0x10B5, 0x15B3, 0x10DE
CLS_BRIDGE, CLS_IB, CLS_ETH, CLS_3D, CLS_SWITCH = 0x060400, 0x020700, 0x020000, 0x030200, 0x068000


class _PciBuilder:
    def __init__(self) -> None:
        self.devs: Dict[str, PciDev] = {}
        self.domain = 0
        self.bus = 0

    @staticmethod
    def _need(children: Sequence[Spec]) -> int:
        def count(node: Spec) -> int:
            if node[0] == "ep":
                return 0
            return 1 + sum(1 + count(c) for c in node[1])  # USP's bus + one per DSP
        return 1 + sum(1 + count(c) for c in children)  # host bridge bus + one per root port

    def complex(self, children: Sequence[Spec], numa: int, gts: float,
                sw_vendor: Tuple[int, int] = (BROADCOM, 0xC030)) -> None:
        need = self._need(children)
        if self.bus + need > 0x100:
            self.domain += 1
            self.bus = 0
        dom = self.domain
        hb_bus = self._alloc()
        hb = f"pci{dom:04x}:{hb_bus:02x}"

        def bdf(bus: int, dev: int = 0, fn: int = 0) -> str:
            return f"{dom:04x}:{bus:02x}:{dev:02x}.{fn}"

        def place(node: Spec, at_bus: int, chain: List[str]) -> None:
            if node[0] == "ep":
                for fn, role in enumerate(node[1]):
                    b = bdf(at_bus, 0, fn)
                    self.devs[b] = PciDev(b, hb, chain + [b], numa, 0, 0, 0, gts, 16, role=role)
                return
            usp = bdf(at_bus)
            self.devs[usp] = PciDev(usp, hb, chain + [usp], numa, sw_vendor[0], sw_vendor[1],
                                    CLS_BRIDGE, gts, 16)
            sec = self._alloc()
            for i, child in enumerate(node[1]):
                dsp = bdf(sec, i)
                self.devs[dsp] = PciDev(dsp, hb, chain + [usp, dsp], numa, sw_vendor[0],
                                        sw_vendor[1], CLS_BRIDGE, gts, 16)
                place(child, self._alloc(), chain + [usp, dsp])

        for i, child in enumerate(children):
            rp = bdf(hb_bus, 1 + i)
            self.devs[rp] = PciDev(rp, hb, [rp], numa, INTEL, 0x352A, CLS_BRIDGE, gts, 16)
            place(child, self._alloc(), [rp])

    def _alloc(self) -> int:
        b = self.bus
        self.bus += 1
        return b


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
    rng = random.Random(f"nvtopo-simulate:{layout.name}:{seed}")
    notes: List[str] = []
    fam = _family(layout, notes)

    # -- GPUs and NUMA
    n = layout.get("gpus.count")
    if not isinstance(n, int) or n < 1:
        n = 8
        notes.append("layout states no GPU count: 8 GPUs simulated")
    gpu_numa_map = layout.get("numa.gpu_numa")
    if isinstance(gpu_numa_map, dict) and all(str(i) in gpu_numa_map for i in range(n)):
        gpu_numa = [int(gpu_numa_map[str(i)]) for i in range(n)]
    else:
        want = layout.get("numa.nodes_with_gpus")
        nodes = want if isinstance(want, int) and want >= 1 else (2 if n >= 4 else 1)
        nodes = min(nodes, n)
        gpu_numa = [i * nodes // n for i in range(n)]
        notes.append(f"layout states no GPU-to-NUMA map: GPUs split in index order over "
                     f"{nodes} NUMA node(s)")
    numa_cpus = _numa_cpus(sorted(set(gpu_numa)), fam)
    gpu_numa_ids: List[Optional[int]] = [None] * n
    if fam.grace:
        # Grace: each GPU's memory is a CPU-less NUMA node of its own (GPU NUMA ID)
        for i in range(n):
            gpu_numa_ids[i] = fam.gpu_numa_base + 8 * i
        notes.append("Grace system: GPU NUMA IDs simulated as "
                     + ", ".join(str(x) for x in gpu_numa_ids)
                     + "; NUMA Affinity printed as the CPU node only")
    pcie_gen = layout.get("gpus.pcie.gen")
    pcie_width = layout.get("gpus.pcie.width")
    if not isinstance(pcie_gen, int) or not isinstance(pcie_width, int):
        notes.append(f"layout states no GPU PCIe link: Gen{fam.pcie_gen} x16 simulated")
        pcie_gen = pcie_gen if isinstance(pcie_gen, int) else fam.pcie_gen
        pcie_width = pcie_width if isinstance(pcie_width, int) else 16

    gpus = [Gpu(ident=i, uuid=f"GPU-{uuid_mod.UUID(int=rng.getrandbits(128), version=4)}",
                serial=f"{rng.randrange(10**12, 10**13)}", numa=gpu_numa[i],
                cpus=numa_cpus[gpu_numa[i]], gpu_numa_id=gpu_numa_ids[i],
                pcie_max_gen=pcie_gen, pcie_max_width=pcie_width) for i in range(n)]

    # -- NVLink
    nvswitch = bool(layout.get("nvlink.nvswitch"))
    gen = layout.get("nvlink.generation")
    nvlink_version = NVLINK_ENUM.get(str(gen), fam.nvlink_version) if gen else fam.nvlink_version
    switches: Dict[str, str] = {}
    has_nvlink = layout.section("nvlink") != {} and (
        nvswitch or layout.get("nvlink.pairs") or layout.get("nvlink.pair_count")
        or layout.get("nvlink.links_per_gpu"))
    if nvswitch:
        per_pair = layout.get("nvlink.pair_count")
        links = layout.get("nvlink.links_per_gpu")
        sw_links = per_pair if isinstance(per_pair, int) else links
        if not isinstance(sw_links, int):
            sw_links = 18
            notes.append("layout states no NVLink count: 18 links per GPU simulated")
        total = links if isinstance(links, int) and links >= sw_links else sw_links
        count = layout.get("nvlink.nvswitch_count")
        if not isinstance(count, int) or count < 1:
            # the board's own count where the GPU model fixes it (an HGX A100 baseboard has
            # 6 NVSwitches, as hgx-a100-8 states); 4 (HGX H100/H200) otherwise
            count = _DEFAULT_NVSWITCHES.get(fam.architecture, 4)
            notes.append(f"layout states no NVSwitch count: {count} simulated")
        # fewer links than switches: the GPUs sit on baseboards, each with its own switches
        # (DGX-2: 6 links to the 6 switches of the GPU's board, 12 switches in all)
        boards = max(1, count // sw_links) if sw_links < count else 1
        per_board = count // boards
        sizes = _split(sw_links, per_board)
        if boards > 1:
            notes.append(f"{count} NVSwitches on {boards} baseboards of {per_board}: each GPU "
                         f"links to the {per_board} switches of its board")
        for g in gpus:
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
    elif has_nvlink:
        pairs = layout.get("nvlink.pairs")
        per_pair = layout.get("nvlink.pair_count")
        edges: List[Tuple[int, int, int]] = []
        if isinstance(pairs, dict):
            for k, v in pairs.items():
                a, b = (int(x) for x in k.split("-"))
                if a < n and b < n and v > 0:
                    edges.append((min(a, b), max(a, b), int(v)))
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
        per_gpu = layout.get("nvlink.links_per_gpu")
        if isinstance(per_gpu, int) and any(g.link_count != per_gpu for g in gpus):
            notes.append(f"layout says {per_gpu} NVLinks per GPU but its pairs wire "
                         + "/".join(sorted({str(g.link_count) for g in gpus}))
                         + ": NVML counts only the wired links")
    fabric = bool(layout.get("nvlink.fabric")) and nvswitch
    for g in gpus:
        g.fabric_state = 3 if fabric else None

    # -- RDMA devices: compute NICs grouped with the GPUs they serve, storage NICs in the gaps
    compute_count = layout.get("nics.compute.count")
    rate = layout.get("nics.compute.rate_gbps")
    layer = layout.get("nics.compute.link_layer")
    placement = layout.get("nics.placement.gpu_to_nearest_compute_nic")
    per_nic = layout.get("nics.placement.gpus_per_compute_nic")
    gpu_nic = layout.get("nics.placement.gpu_nic")
    if layout.section("nics") == {}:
        compute_count, placement = n, "PIX"
        notes.append("layout states no NICs: one compute NIC per GPU simulated, behind the "
                     "GPU's PCIe switch (PIX)")
    if not isinstance(compute_count, int):
        compute_count = len({x for v in (gpu_nic or {}).values()
                             for x in (v if isinstance(v, list) else [v])}) or n
        notes.append(f"layout states no compute NIC count: {compute_count} simulated")
    if not isinstance(rate, (int, float)):
        rate = {3: 100, 4: 200, 5: 400, 6: 800}.get(fam.pcie_gen, 400)
        notes.append(f"layout states no compute NIC rate: {rate} Gb/s simulated")
    if layer not in ("InfiniBand", "Ethernet"):
        layer = "InfiniBand"
        notes.append("layout states no compute NIC link layer: InfiniBand simulated")
    if placement not in ("PIX", "PXB", "PHB", "NODE", "SYS"):
        placement = "PIX"
        if compute_count:
            notes.append("layout states no GPU-to-NIC placement: PIX simulated")

    groups: List[Tuple[List[int], List[str]]] = []  # (GPU idents, compute NIC names)
    pool = layout.get("nics.compute.names")
    pool = [x for x in pool if isinstance(x, str)] if isinstance(pool, list) else []
    if isinstance(gpu_nic, dict) and gpu_nic:
        owner: Dict[str, int] = {}
        for i in range(n):
            v = gpu_nic.get(str(i))
            names = v if isinstance(v, list) else ([v] if isinstance(v, str) else [])
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
    else:
        if compute_count <= 0:
            groups = [([i], []) for i in range(n)]
        else:
            k_gpus = per_nic if isinstance(per_nic, int) and per_nic > 0 else None
            if k_gpus is None:
                k_gpus = max(1, n // compute_count)
            nics_per_group = max(1, compute_count * k_gpus // n) if n else 1
            names = _names_for(compute_count, pool, [])
            it = iter(names)
            for start in range(0, n, k_gpus):
                members = list(range(start, min(n, start + k_gpus)))
                groups.append((members, [x for _, x in zip(range(nics_per_group), it)]))
            for rest in it:  # NICs beyond the GPU groups: alone on a host bridge
                groups.append(([], [rest]))
    compute_names = [x for _, names in groups for x in names]
    known = {_mlx_index(x) for x in compute_names} - {None}
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
            notes.append("RDMA devices between the compute NICs' names simulated as storage "
                         "NICs (dual-port ConnectX in Ethernet mode, 200 Gb/s, RoCE): "
                         + ", ".join("/".join(s) for s in storage))
    if layout.get("nics.gpudirect_rdma") is None:
        notes.append("layout states no GPUDirect RDMA expectation: nvidia_peermem simulated "
                     "as loaded")

    cx = CONNECTX.get(int(rate) if float(rate) in (100, 200, 400, 800) else 0,
                      CONNECTX[400] if rate > 200 else CONNECTX[200])
    nics: List[Nic] = []

    def new_nic(name: str, role: str, ll: str, r: Union[int, float], gen: int) -> Nic:
        guid = ":".join(f"{rng.getrandbits(16):04x}" for _ in range(4))
        nic = Nic(name=name, role=role, link_layer=ll, guid=guid,
                  port=Port(rate_gbps=r), pcie_gen=gen, place=f"slot:{name}")
        nics.append(nic)
        return nic

    for _, names in groups:
        for x in names:
            new_nic(x, "compute", layer, rate, cx[4])
    for devs in storage:
        for x in devs:
            new_nic(x, "storage", "Ethernet", 200, 4)

    # -- PCI tree: complexes in GPU order, storage NICs where their names fall
    builder = _PciBuilder()
    if nvswitch:
        sw_children = [("ep", [f"nvswitch:{sid}"]) for sid in sorted({lk.remote for g in gpus
                                                                       for lk in g.links})]
        builder.complex(sw_children, numa=min(gpu_numa), gts=PCIE_GTS[min(fam.pcie_gen, 5)])
    gts = PCIE_GTS.get(max(pcie_gen, cx[4]), 32.0)
    numa_nodes = sorted(set(gpu_numa))
    plans: List[Tuple[float, int, List[Spec], Optional[List[Spec]], int]] = []
    for gi, (members, names) in enumerate(groups):
        gnuma = gpu_numa[members[0]] if members else numa_nodes[0]
        if members and len({gpu_numa[m] for m in members}) > 1:
            notes.append(f"GPUs {members} share a NIC but not a NUMA node: placed on NUMA "
                         f"{gnuma}")
        gpu_eps: List[Spec] = [("ep", [f"gpu:{m}"]) for m in members]
        nic_eps: List[Spec] = [("ep", [f"nic:slot:{x}"]) for x in names]
        order_key = min([_mlx_index(x) if _mlx_index(x) is not None else 10**6 for x in names]
                        or [10**6])
        first_gpu = members[0] if members else n + gi
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
        plans.append((first_gpu, order_key, main, other, gnuma if members else nic_numa))
        if other is not None:
            plans.append((first_gpu + 0.5, order_key, other, None, nic_numa))
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

    pci = builder.devs
    for d in pci.values():
        role = d.role
        if role.startswith("gpu:"):
            g = gpus[int(role[4:])]
            g.bdf = d.bdf
            d.vendor, d.device, d.cls = NVIDIA, fam.device_id, CLS_3D
            d.gts, d.width = PCIE_GTS.get(pcie_gen, 32.0), pcie_width
            d.numa = g.numa
        elif role.startswith("nic:"):
            nic = next(x for x in nics if x.place == role[4:])
            nic.bdf, nic.numa = d.bdf, d.numa
            d.vendor, d.cls = MELLANOX, CLS_IB if nic.link_layer == "InfiniBand" else CLS_ETH
            d.device = cx[0] if nic.role == "compute" else CONNECTX[200][0]
            d.gts, d.width = PCIE_GTS[nic.pcie_gen], 16
        elif role.startswith("nvswitch:"):
            d.vendor, d.device, d.cls = NVIDIA, 0x22A3, CLS_SWITCH
            d.width = 2
            bus = d.bdf.split(":")
            switches[role[9:]] = f"{int(bus[0], 16):08X}:{bus[1].upper()}:{bus[2].upper()}"
    for nic in nics:
        bus = int(nic.bdf.split(":")[1], 16)
        fn = int(nic.bdf.rsplit(".", 1)[1])
        nic.netdev = (f"ibp{bus}s0" if nic.link_layer == "InfiniBand"
                      else f"enp{bus}s0f{fn}np{fn}")

    host = hostname or f"{re.sub(r'[^a-z0-9-]', '-', layout.name.lower())}-" \
                       f"{rng.randrange(10000):04d}"
    machine = Machine(
        layout=layout, seed=seed, hostname=host, family=fam, gpus=gpus, nics=nics, pci=pci,
        numa_cpus=numa_cpus, switches=switches, nvswitch=nvswitch, fabric=fabric,
        peermem=layout.get("nics.gpudirect_rdma") is not False,
        nvlink_version=nvlink_version, assumptions=notes, healthy_gpu_count=n)
    return machine


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
