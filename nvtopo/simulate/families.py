"""The GPU models a simulated node can have: what NVML says about each (names as NVML
prints them, architecture, compute capability, PCI device id, memory, NVLink version and
speed, PCIe generation, the host's CPUs, the driver), and the ConnectX NICs and IB rates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Tuple, Union

from ..layouts import Layout

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
_BU = ("580.173.02", 13000)  # the GB300 tray of fixtures/nvml-xml (CUDA 13.0)

#: NVSwitch chips of the baseboard by GPU architecture, where a layout states no count
#: (Ampere: the HGX A100 8-GPU board has 6).
DEFAULT_NVSWITCHES = {7: 6}

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
    Family("NVIDIA GB300", 10, (10, 3), 0x31C2, 277, 7, 53125, 6, 144, 1, _BU, True, 2),
    Family("NVIDIA B200", 10, (10, 0), 0x2901, 180, 7, 53125, 5, 112, 2, _B),
    Family("NVIDIA B300 SXM6 AC", 10, (10, 3), 0x3182, 270, 7, 53125, 6, 120, 2, _B),
    # PCIe cards (after the boards: no board's pattern may reach them first)
    Family("NVIDIA H100 NVL", 9, (9, 0), 0x2321, 94, 6, 26562, 5, 64, 2, _H),
    Family("NVIDIA L40S", 8, (8, 9), 0x26B9, 48, 0, 0, 4, 64, 2, _H),
    Family("NVIDIA L4", 8, (8, 9), 0x27B8, 24, 0, 0, 4, 64, 2, _H),
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


def family_of(layout: Layout, notes: List[str]) -> Family:
    pattern = layout.gpus.name_pattern
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
    gen = layout.nvlink.generation
    by_gen = {"1.0": 0, "2.0": 1, "3.0": 4, "3.1": 4, "4.0": 6, "5.0": 12}
    return FAMILIES[by_gen.get(str(gen), 6)]

