"""The real-world ``nvidia-smi topo`` corpus, parsed file by file.

``fixtures/topo-corpus/`` is a byte-for-byte copy of the shared corpus
(``shared/corpus/topo``).  Every expected value below was written out by
hand from reading the raw file (``cat -A``), not derived from the file at
test time and not pasted from the parser's output.  Rows are written as
the cells of the printed matrix joined by single spaces (``" X "`` printed
cells are ``X``; ``SOC`` stays ``SOC``).

GPU expectations are ``(cpu_affinity, numa_affinity, gpu_numa_id)``;
``None`` where the field is empty, ``N/A`` or its column is absent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nvtopo.probes.topo import parse

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "topo-corpus"
SHARED_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "topo"


def mesh(n, count):
    """Every pair of GPU0..GPU{n-1} joined by ``NV{count}`` (a full NVLink mesh)."""
    return {(a, b, count) for a in range(n) for b in range(a + 1, n)}


# DGX-1 (V100) hybrid cube mesh, as printed in files 12 and 57.
DGX1_NVLINKS = {
    (0, 1, 1), (0, 2, 1), (0, 3, 2), (0, 4, 2),
    (1, 2, 2), (1, 3, 1), (1, 5, 2),
    (2, 3, 2), (2, 6, 1),
    (3, 7, 1),
    (4, 5, 1), (4, 6, 1), (4, 7, 2),
    (5, 6, 2), (5, 7, 1),
    (6, 7, 2),
}

GPUS8 = [f"GPU{i}" for i in range(8)]
GPUS4 = [f"GPU{i}" for i in range(4)]
GPUS2 = ["GPU0", "GPU1"]


def nics(n):
    return [f"NIC{i}" for i in range(n)]


def mlx(*idx):
    return [f"mlx5_{i}" for i in idx]


# fmt: off
CASES = {
    "01_hgx-a100-8gpu-nv12-10nic-tabs": dict(
        kind="matrix",
        devices=GPUS8 + nics(10),
        rows=[
            "X NV12 NV12 NV12 NV12 NV12 NV12 NV12 PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS",
            "NV12 X NV12 NV12 NV12 NV12 NV12 NV12 PXB PXB SYS SYS SYS SYS SYS SYS SYS SYS",
            "NV12 NV12 X NV12 NV12 NV12 NV12 NV12 SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS",
            "NV12 NV12 NV12 X NV12 NV12 NV12 NV12 SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS",
            "NV12 NV12 NV12 NV12 X NV12 NV12 NV12 SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS",
            "NV12 NV12 NV12 NV12 NV12 X NV12 NV12 SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS",
            "NV12 NV12 NV12 NV12 NV12 NV12 X NV12 SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS",
            "NV12 NV12 NV12 NV12 NV12 NV12 NV12 X SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS",
            "PXB PXB SYS SYS SYS SYS SYS SYS X PXB SYS SYS SYS SYS SYS SYS SYS SYS",
            "PXB PXB SYS SYS SYS SYS SYS SYS PXB X SYS SYS SYS SYS SYS SYS SYS SYS",
            "SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS X PXB SYS SYS SYS SYS SYS SYS",
            "SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS PXB X SYS SYS SYS SYS SYS SYS",
            "SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS X PXB SYS SYS SYS SYS",
            "SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS PXB X SYS SYS SYS SYS",
            "SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS X PXB SYS SYS",
            "SYS SYS SYS SYS SYS SYS PXB PXB SYS SYS SYS SYS SYS SYS PXB X SYS SYS",
            "SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS X PIX",
            "SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS PIX X",
        ],
        gpus={
            "GPU0": ("48-63,176-191", "3", None),
            "GPU1": ("48-63,176-191", "3", None),
            "GPU2": ("16-31,144-159", "1", None),
            "GPU3": ("16-31,144-159", "1", None),
            "GPU4": ("112-127,240-255", "7", None),
            "GPU5": ("112-127,240-255", "7", None),
            "GPU6": ("80-95,208-223", "5", None),
            "GPU7": ("80-95,208-223", "5", None),
        },
        nics=[("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"), ("NIC2", "mlx5_2"),
              ("NIC3", "mlx5_3"), ("NIC4", "mlx5_4"), ("NIC5", "mlx5_5"),
              ("NIC6", "mlx5_6"), ("NIC7", "mlx5_7"), ("NIC8", "mlx5_8"),
              ("NIC9", "mlx5_9")],
        nvlinks=mesh(8, 12),
        legend_style="modern",
    ),
    "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang": dict(
        kind="matrix",
        devices=GPUS8 + nics(8),
        rows=[
            "X NV18 NV18 NV18 NV18 NV18 NV18 NV18 PIX NODE NODE NODE SYS SYS SYS SYS",
            "NV18 X NV18 NV18 NV18 NV18 NV18 NV18 NODE PIX NODE NODE SYS SYS SYS SYS",
            "NV18 NV18 X NV18 NV18 NV18 NV18 NV18 NODE NODE PIX NODE SYS SYS SYS SYS",
            "NV18 NV18 NV18 X NV18 NV18 NV18 NV18 NODE NODE NODE PIX SYS SYS SYS SYS",
            "NV18 NV18 NV18 NV18 X NV18 NV18 NV18 SYS SYS SYS SYS PIX NODE NODE NODE",
            "NV18 NV18 NV18 NV18 NV18 X NV18 NV18 SYS SYS SYS SYS NODE PIX NODE NODE",
            "NV18 NV18 NV18 NV18 NV18 NV18 X NV18 SYS SYS SYS SYS NODE NODE PIX NODE",
            "NV18 NV18 NV18 NV18 NV18 NV18 NV18 X SYS SYS SYS SYS NODE NODE NODE PIX",
            "PIX NODE NODE NODE SYS SYS SYS SYS X NODE NODE NODE SYS SYS SYS SYS",
            "NODE PIX NODE NODE SYS SYS SYS SYS NODE X NODE NODE SYS SYS SYS SYS",
            "NODE NODE PIX NODE SYS SYS SYS SYS NODE NODE X NODE SYS SYS SYS SYS",
            "NODE NODE NODE PIX SYS SYS SYS SYS NODE NODE NODE X SYS SYS SYS SYS",
            "SYS SYS SYS SYS PIX NODE NODE NODE SYS SYS SYS SYS X NODE NODE NODE",
            "SYS SYS SYS SYS NODE PIX NODE NODE SYS SYS SYS SYS NODE X NODE NODE",
            "SYS SYS SYS SYS NODE NODE PIX NODE SYS SYS SYS SYS NODE NODE X NODE",
            "SYS SYS SYS SYS NODE NODE NODE PIX SYS SYS SYS SYS NODE NODE NODE X",
        ],
        gpus={
            "GPU0": ("0-47,96-143", "0", None),
            "GPU1": ("0-47,96-143", "0", None),
            "GPU2": ("0-47,96-143", "0", None),
            "GPU3": ("0-47,96-143", "0", None),
            "GPU4": ("48-95,144-191", "1", None),
            "GPU5": ("48-95,144-191", "1", None),
            "GPU6": ("48-95,144-191", "1", None),
            "GPU7": ("48-95,144-191", "1", None),
        },
        nics=[("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"), ("NIC2", "mlx5_2"),
              ("NIC3", "mlx5_3"), ("NIC4", "mlx5_4"), ("NIC5", "mlx5_5"),
              ("NIC6", "mlx5_6"), ("NIC7", "mlx5_7")],
        nvlinks=mesh(8, 18),
        legend_style="modern",
    ),
    "03_p40-8gpu-pcie-switch-mlx5-soc-tabs": dict(
        kind="matrix",
        devices=GPUS8 + ["mlx5_0"],
        rows=[
            "X PIX PIX PIX PXB PXB PXB PXB SOC",
            "PIX X PIX PIX PXB PXB PXB PXB SOC",
            "PIX PIX X PIX PXB PXB PXB PXB SOC",
            "PIX PIX PIX X PXB PXB PXB PXB SOC",
            "PXB PXB PXB PXB X PIX PIX PIX SOC",
            "PXB PXB PXB PXB PIX X PIX PIX SOC",
            "PXB PXB PXB PXB PIX PIX X PIX SOC",
            "PXB PXB PXB PXB PIX PIX PIX X SOC",
            "SOC SOC SOC SOC SOC SOC SOC SOC X",
        ],
        gpus={
            "GPU0": ("0-13", None, None),
            "GPU1": ("0-13", None, None),
            "GPU2": ("0-13", None, None),
            "GPU3": ("0-13", None, None),
            "GPU4": ("0-13", None, None),
            "GPU5": ("0-13", None, None),
            "GPU6": ("0-13", None, None),
            "GPU7": ("0-13", None, None),
        },
        nics=[("mlx5_0", "mlx5_0")],
        nvlinks=set(),
        legend_style="soc",
    ),
    "06_ibm-minsky-power8-p100-nv2-soc-smt-affinity": dict(
        kind="matrix",
        devices=GPUS4 + ["mlx5_0", "mlx5_1"],
        rows=[
            "X NV2 SOC SOC SOC SOC",
            "NV2 X SOC SOC SOC SOC",
            "SOC SOC X NV2 SOC SOC",
            "SOC SOC NV2 X SOC SOC",
            "SOC SOC SOC SOC X PIX",
            "SOC SOC SOC SOC PIX X",
        ],
        gpus={
            "GPU0": ("0-0,8-8,16-16,24-24,32-32,40-40,48-48,56-56,64-64,72-72", None, None),
            "GPU1": ("0-0,8-8,16-16,24-24,32-32,40-40,48-48,56-56,64-64,72-72", None, None),
            "GPU2": ("80-80,88-88,96-96,104-104,112-112,120-120,128-128,136-136,144-144,152-152",
                     None, None),
            "GPU3": ("80-80,88-88,96-96,104-104,112-112,120-120,128-128,136-136,144-144,152-152",
                     None, None),
        },
        nics=[("mlx5_0", "mlx5_0"), ("mlx5_1", "mlx5_1")],
        nvlinks={(0, 1, 2), (2, 3, 2)},
        legend_style="soc",
    ),
    "07_gh200-4gpu-nv6-numa-affinity-list-gpu-numa-id": dict(
        kind="matrix",
        devices=GPUS4,
        rows=[
            "X NV6 NV6 NV6",
            "NV6 X NV6 NV6",
            "NV6 NV6 X NV6",
            "NV6 NV6 NV6 X",
        ],
        gpus={
            "GPU0": ("0-71", "0,5-11", 4),
            "GPU1": ("72-143", "1,13-19", 12),
            "GPU2": ("144-215", "2,21-27", 20),
            "GPU3": ("216-287", "3,29-35", 28),
        },
        nics=[],
        nvlinks=mesh(4, 6),
        legend_style="modern",
    ),
    "08_2x-gtx1080ti-desktop-phb-numa-na": dict(
        kind="matrix",
        devices=GPUS2,
        rows=[
            "X PHB",
            "PHB X",
        ],
        gpus={
            "GPU0": ("0-11", None, None),
            "GPU1": ("0-11", None, None),
        },
        nics=[],
        nvlinks=set(),
        legend_style="modern",
    ),
    "12_dgx1-v100-nv1nv2-4mlx5-unordered-transitional-legend": dict(
        kind="matrix",
        devices=GPUS8 + ["mlx5_2", "mlx5_0", "mlx5_3", "mlx5_1"],
        rows=[
            "X NV1 NV1 NV2 NV2 SYS SYS SYS SYS PIX SYS PHB",
            "NV1 X NV2 NV1 SYS NV2 SYS SYS SYS PIX SYS PHB",
            "NV1 NV2 X NV2 SYS SYS NV1 SYS SYS PHB SYS PIX",
            "NV2 NV1 NV2 X SYS SYS SYS NV1 SYS PHB SYS PIX",
            "NV2 SYS SYS SYS X NV1 NV1 NV2 PIX SYS PHB SYS",
            "SYS NV2 SYS SYS NV1 X NV2 NV1 PIX SYS PHB SYS",
            "SYS SYS NV1 SYS NV1 NV2 X NV2 PHB SYS PIX SYS",
            "SYS SYS SYS NV1 NV2 NV1 NV2 X PHB SYS PIX SYS",
            "SYS SYS SYS SYS PIX PIX PHB PHB X SYS PHB SYS",
            "PIX PIX PHB PHB SYS SYS SYS SYS SYS X SYS PHB",
            "SYS SYS SYS SYS PHB PHB PIX PIX PHB SYS X SYS",
            "PHB PHB PIX PIX SYS SYS SYS SYS SYS PHB SYS X",
        ],
        gpus={
            "GPU0": ("0-19,40-59", None, None),
            "GPU1": ("0-19,40-59", None, None),
            "GPU2": ("0-19,40-59", None, None),
            "GPU3": ("0-19,40-59", None, None),
            "GPU4": ("0-19,40-59", None, None),
            "GPU5": ("0-19,40-59", None, None),
            "GPU6": ("0-19,40-59", None, None),
            "GPU7": ("0-19,40-59", None, None),
        },
        nics=[("mlx5_2", "mlx5_2"), ("mlx5_0", "mlx5_0"),
              ("mlx5_3", "mlx5_3"), ("mlx5_1", "mlx5_1")],
        nvlinks=DGX1_NVLINKS,
        legend_style="transitional",
    ),
    "14_2x-rtx5090-phb-tabs-gpunumaid-double-tab": dict(
        kind="matrix",
        devices=GPUS2,
        rows=[
            "X PHB",
            "PHB X",
        ],
        gpus={
            "GPU0": ("0-63", "0", None),
            "GPU1": ("0-63", "0", None),
        },
        nics=[],
        nvlinks=set(),
        legend_style="modern",
    ),
    "15_p2p-rw-2x-rtx5090-gns-dr-legend-tabs": dict(
        kind="p2p",
        devices=GPUS2,
        rows=[
            "X GNS",
            "GNS X",
        ],
        gpus={
            "GPU0": (None, None, None),
            "GPU1": (None, None, None),
        },
        nics=[],
        nvlinks=set(),
        legend_style="p2p",
    ),
    "18_2x-l4-sys-cross-numa-tabs-no-legend": dict(
        kind="matrix",
        devices=GPUS2,
        rows=[
            "X SYS",
            "SYS X",
        ],
        gpus={
            "GPU0": ("0-7,32-39", "0", None),
            "GPU1": ("16-23,48-55", "2", None),
        },
        nics=[],
        nvlinks=set(),
        legend_style=None,
    ),
    "21_h100-8gpu-nv18-8nic-misaligned-columns-sglang": dict(
        kind="matrix",
        devices=GPUS8 + nics(8),
        rows=[
            "X NV18 NV18 NV18 NV18 NV18 NV18 NV18 PIX PIX NODE NODE SYS SYS SYS SYS",
            "NV18 X NV18 NV18 NV18 NV18 NV18 NV18 NODE NODE NODE NODE SYS SYS SYS SYS",
            "NV18 NV18 X NV18 NV18 NV18 NV18 NV18 NODE NODE PIX PIX SYS SYS SYS SYS",
            "NV18 NV18 NV18 X NV18 NV18 NV18 NV18 NODE NODE NODE NODE SYS SYS SYS SYS",
            "NV18 NV18 NV18 NV18 X NV18 NV18 NV18 SYS SYS SYS SYS PIX PIX NODE NODE",
            "NV18 NV18 NV18 NV18 NV18 X NV18 NV18 SYS SYS SYS SYS NODE NODE NODE NODE",
            "NV18 NV18 NV18 NV18 NV18 NV18 X NV18 SYS SYS SYS SYS NODE NODE PIX PIX",
            "NV18 NV18 NV18 NV18 NV18 NV18 NV18 X SYS SYS SYS SYS NODE NODE NODE NODE",
            "PIX NODE NODE NODE SYS SYS SYS SYS X PIX NODE NODE SYS SYS SYS SYS",
            "PIX NODE NODE NODE SYS SYS SYS SYS PIX X NODE NODE SYS SYS SYS SYS",
            "NODE NODE PIX NODE SYS SYS SYS SYS NODE NODE X PIX SYS SYS SYS SYS",
            "NODE NODE PIX NODE SYS SYS SYS SYS NODE NODE PIX X SYS SYS SYS SYS",
            "SYS SYS SYS SYS PIX NODE NODE NODE SYS SYS SYS SYS X PIX NODE NODE",
            "SYS SYS SYS SYS PIX NODE NODE NODE SYS SYS SYS SYS PIX X NODE NODE",
            "SYS SYS SYS SYS NODE NODE PIX NODE SYS SYS SYS SYS NODE NODE X PIX",
            "SYS SYS SYS SYS NODE NODE PIX NODE SYS SYS SYS SYS NODE NODE PIX X",
        ],
        gpus={
            "GPU0": ("0-47,96-143", "0", None),
            "GPU1": ("0-47,96-143", "0", None),
            "GPU2": ("0-47,96-143", "0", None),
            "GPU3": ("0-47,96-143", "0", None),
            "GPU4": ("48-95,144-191", "1", None),
            "GPU5": ("48-95,144-191", "1", None),
            "GPU6": ("48-95,144-191", "1", None),
            "GPU7": ("48-95,144-191", "1", None),
        },
        nics=[("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"), ("NIC2", "mlx5_2"),
              ("NIC3", "mlx5_3"), ("NIC4", "mlx5_4"), ("NIC5", "mlx5_5"),
              ("NIC6", "mlx5_6"), ("NIC7", "mlx5_7")],
        nvlinks=mesh(8, 18),
        legend_style="modern",
    ),
    "23_h100-6gpu-vm-nv18-2nic-node": dict(
        kind="matrix",
        devices=[f"GPU{i}" for i in range(6)] + nics(2),
        rows=[
            "X NV18 NV18 NV18 NV18 NV18 NODE NODE",
            "NV18 X NV18 NV18 NV18 NV18 NODE NODE",
            "NV18 NV18 X NV18 NV18 NV18 NODE NODE",
            "NV18 NV18 NV18 X NV18 NV18 SYS SYS",
            "NV18 NV18 NV18 NV18 X NV18 SYS SYS",
            "NV18 NV18 NV18 NV18 NV18 X SYS SYS",
            "NODE NODE NODE SYS SYS SYS X PIX",
            "NODE NODE NODE SYS SYS SYS PIX X",
        ],
        gpus={
            "GPU0": ("0-47,96-143", "0", None),
            "GPU1": ("0-47,96-143", "0", None),
            "GPU2": ("0-47,96-143", "0", None),
            "GPU3": ("48-95,144-191", "1", None),
            "GPU4": ("48-95,144-191", "1", None),
            "GPU5": ("48-95,144-191", "1", None),
        },
        nics=[("NIC0", "mlx5_0"), ("NIC1", "mlx5_1")],
        nvlinks=mesh(6, 18),
        legend_style="modern",
    ),
    "24_h100-8gpu-nv18-2nic-comment-prefixed-hash": dict(
        kind="matrix",
        devices=GPUS8 + nics(2),
        rows=[
            "X NV18 NV18 NV18 NV18 NV18 NV18 NV18 SYS SYS",
            "NV18 X NV18 NV18 NV18 NV18 NV18 NV18 SYS SYS",
            "NV18 NV18 X NV18 NV18 NV18 NV18 NV18 SYS SYS",
            "NV18 NV18 NV18 X NV18 NV18 NV18 NV18 SYS SYS",
            "NV18 NV18 NV18 NV18 X NV18 NV18 NV18 PIX PIX",
            "NV18 NV18 NV18 NV18 NV18 X NV18 NV18 PIX PIX",
            "NV18 NV18 NV18 NV18 NV18 NV18 X NV18 NODE NODE",
            "NV18 NV18 NV18 NV18 NV18 NV18 NV18 X NODE NODE",
            "SYS SYS SYS SYS PIX PIX NODE NODE X PIX",
            "SYS SYS SYS SYS PIX PIX NODE NODE PIX X",
        ],
        gpus={
            "GPU0": ("0-47,96-143", "0", None),
            "GPU1": ("0-47,96-143", "0", None),
            "GPU2": ("0-47,96-143", "0", None),
            "GPU3": ("0-47,96-143", "0", None),
            "GPU4": ("48-95,144-191", "1", None),
            "GPU5": ("48-95,144-191", "1", None),
            "GPU6": ("48-95,144-191", "1", None),
            "GPU7": ("48-95,144-191", "1", None),
        },
        nics=[("NIC0", "mlx5_0"), ("NIC1", "mlx5_1")],
        nvlinks=mesh(8, 18),
        legend_style="modern",
    ),
    "25_3x-rtx-a6000-nv4-bridge-plus-node-tabs": dict(
        kind="matrix",
        devices=["GPU0", "GPU1", "GPU2"],
        rows=[
            "X NV4 NODE",
            "NV4 X NODE",
            "NODE NODE X",
        ],
        gpus={
            "GPU0": ("0-31,64-95", "0", None),
            "GPU1": ("0-31,64-95", "0", None),
            "GPU2": ("0-31,64-95", "0", None),
        },
        nics=[],
        nvlinks={(0, 1, 4)},
        legend_style="modern",
    ),
    "27_2x-v100-pcie-sys-comma-list-cpu-affinity": dict(
        kind="matrix",
        devices=GPUS2,
        rows=[
            "X SYS",
            "SYS X",
        ],
        gpus={
            "GPU0": ("0,2,4,6,8,10", "0", None),
            "GPU1": ("1,3,5,7,9,11", "1", None),
        },
        nics=[],
        nvlinks=set(),
        legend_style="modern",
    ),
    "29_4x-v100-partial-nvlink-nv2-nv1-4mlx5-transitional-legend": dict(
        kind="matrix",
        devices=GPUS4 + mlx(0, 1, 2, 3),
        rows=[
            "X NV2 NV1 NODE PIX PIX NODE NODE",
            "NV2 X NODE NV2 PIX PIX NODE NODE",
            "NV1 NODE X NV2 NODE NODE PIX PIX",
            "NODE NV2 NV2 X NODE NODE PIX PIX",
            "PIX PIX NODE NODE X PIX NODE NODE",
            "PIX PIX NODE NODE PIX X NODE NODE",
            "NODE NODE PIX PIX NODE NODE X PIX",
            "NODE NODE PIX PIX NODE NODE PIX X",
        ],
        gpus={
            "GPU0": ("14-27", None, None),
            "GPU1": ("14-27", None, None),
            "GPU2": ("14-27", None, None),
            "GPU3": ("14-27", None, None),
        },
        nics=[("mlx5_0", "mlx5_0"), ("mlx5_1", "mlx5_1"),
              ("mlx5_2", "mlx5_2"), ("mlx5_3", "mlx5_3")],
        nvlinks={(0, 1, 2), (0, 2, 1), (1, 3, 2), (2, 3, 2)},
        legend_style="transitional",
    ),
    "34_4xa100-nv4-4mlx5-rst-indented-4-spaces": dict(
        kind="matrix",
        devices=GPUS4 + mlx(0, 1, 2, 3),
        rows=[
            "X NV4 NV4 NV4 PXB NODE NODE NODE",
            "NV4 X NV4 NV4 NODE PXB NODE NODE",
            "NV4 NV4 X NV4 NODE NODE PXB NODE",
            "NV4 NV4 NV4 X NODE NODE NODE PXB",
            "PXB NODE NODE NODE X NODE NODE NODE",
            "NODE PXB NODE NODE NODE X NODE NODE",
            "NODE NODE PXB NODE NODE NODE X NODE",
            "NODE NODE NODE PXB NODE NODE NODE X",
        ],
        gpus={
            "GPU0": ("0-15", "0", None),
            "GPU1": ("0-15", "0", None),
            "GPU2": ("0-15", "0", None),
            "GPU3": ("0-15", "0", None),
        },
        nics=[("mlx5_0", "mlx5_0"), ("mlx5_1", "mlx5_1"),
              ("mlx5_2", "mlx5_2"), ("mlx5_3", "mlx5_3")],
        nvlinks=mesh(4, 4),
        legend_style="modern",
    ),
    "36_4xa100-40gb-nv4-2nic-numa2-6-legend-stripped-nic-map-unindented": dict(
        kind="matrix",
        devices=GPUS4 + nics(2),
        rows=[
            "X NV4 NV4 NV4 PXB SYS",
            "NV4 X NV4 NV4 PXB SYS",
            "NV4 NV4 X NV4 SYS PXB",
            "NV4 NV4 NV4 X SYS PXB",
            "PXB PXB SYS SYS X SYS",
            "SYS SYS PXB PXB SYS X",
        ],
        gpus={
            "GPU0": ("32-47", "2", None),
            "GPU1": ("32-47", "2", None),
            "GPU2": ("96-111", "6", None),
            "GPU3": ("96-111", "6", None),
        },
        nics=[("NIC0", "mlx5_0"), ("NIC1", "mlx5_1")],
        nvlinks=mesh(4, 4),
        legend_style=None,
    ),
    "38_4xa100-nv4-4nic-gpunumaid-nic-legend": dict(
        kind="matrix",
        devices=GPUS4 + nics(4),
        rows=[
            "X NV4 NV4 NV4 PXB NODE NODE NODE",
            "NV4 X NV4 NV4 NODE PXB NODE NODE",
            "NV4 NV4 X NV4 NODE NODE PXB NODE",
            "NV4 NV4 NV4 X NODE NODE NODE PXB",
            "PXB NODE NODE NODE X NODE NODE NODE",
            "NODE PXB NODE NODE NODE X NODE NODE",
            "NODE NODE PXB NODE NODE NODE X NODE",
            "NODE NODE NODE PXB NODE NODE NODE X",
        ],
        gpus={
            "GPU0": ("0-15", "0", None),
            "GPU1": ("0-15", "0", None),
            "GPU2": ("0-15", "0", None),
            "GPU3": ("0-15", "0", None),
        },
        nics=[("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"),
              ("NIC2", "mlx5_2"), ("NIC3", "mlx5_3")],
        nvlinks=mesh(4, 4),
        legend_style="modern",
    ),
    "41_a800-8gpu-nv8-8nic-all-mlx5-bond-tabs": dict(
        kind="matrix",
        devices=GPUS8 + nics(8),
        rows=[
            "X NV8 NV8 NV8 NV8 NV8 NV8 NV8 PIX PIX NODE NODE SYS SYS SYS SYS",
            "NV8 X NV8 NV8 NV8 NV8 NV8 NV8 PIX PIX NODE NODE SYS SYS SYS SYS",
            "NV8 NV8 X NV8 NV8 NV8 NV8 NV8 NODE NODE PIX PIX SYS SYS SYS SYS",
            "NV8 NV8 NV8 X NV8 NV8 NV8 NV8 NODE NODE PIX PIX SYS SYS SYS SYS",
            "NV8 NV8 NV8 NV8 X NV8 NV8 NV8 SYS SYS SYS SYS PIX PIX NODE NODE",
            "NV8 NV8 NV8 NV8 NV8 X NV8 NV8 SYS SYS SYS SYS PIX PIX NODE NODE",
            "NV8 NV8 NV8 NV8 NV8 NV8 X NV8 SYS SYS SYS SYS NODE NODE PIX PIX",
            "NV8 NV8 NV8 NV8 NV8 NV8 NV8 X SYS SYS SYS SYS NODE NODE PIX PIX",
            "PIX PIX NODE NODE SYS SYS SYS SYS X PIX NODE NODE SYS SYS SYS SYS",
            "PIX PIX NODE NODE SYS SYS SYS SYS PIX X NODE NODE SYS SYS SYS SYS",
            "NODE NODE PIX PIX SYS SYS SYS SYS NODE NODE X PIX SYS SYS SYS SYS",
            "NODE NODE PIX PIX SYS SYS SYS SYS NODE NODE PIX X SYS SYS SYS SYS",
            "SYS SYS SYS SYS PIX PIX NODE NODE SYS SYS SYS SYS X PIX NODE NODE",
            "SYS SYS SYS SYS PIX PIX NODE NODE SYS SYS SYS SYS PIX X NODE NODE",
            "SYS SYS SYS SYS NODE NODE PIX PIX SYS SYS SYS SYS NODE NODE X PIX",
            "SYS SYS SYS SYS NODE NODE PIX PIX SYS SYS SYS SYS NODE NODE PIX X",
        ],
        gpus={
            "GPU0": ("0-61", "0", None),
            "GPU1": ("0-61", "0", None),
            "GPU2": ("0-61", "0", None),
            "GPU3": ("0-61", "0", None),
            "GPU4": ("62-123", "1", None),
            "GPU5": ("62-123", "1", None),
            "GPU6": ("62-123", "1", None),
            "GPU7": ("62-123", "1", None),
        },
        nics=[("NIC0", "mlx5_bond_0"), ("NIC1", "mlx5_bond_1"),
              ("NIC2", "mlx5_bond_2"), ("NIC3", "mlx5_bond_3"),
              ("NIC4", "mlx5_bond_4"), ("NIC5", "mlx5_bond_5"),
              ("NIC6", "mlx5_bond_6"), ("NIC7", "mlx5_bond_7")],
        nvlinks=mesh(8, 8),
        legend_style="modern",
    ),
    "43_4gpu-nv4-3nic-cpu-affinity-0-and-empty-tabs": dict(
        kind="matrix",
        devices=GPUS4 + nics(3),
        rows=[
            "X NV4 NV4 NV4 NODE NODE NODE",
            "NV4 X NV4 NV4 NODE NODE NODE",
            "NV4 NV4 X NV4 NODE NODE NODE",
            "NV4 NV4 NV4 X NODE NODE NODE",
            "NODE NODE NODE NODE X PIX PHB",
            "NODE NODE NODE NODE PIX X PHB",
            "NODE NODE NODE NODE PHB PHB X",
        ],
        gpus={
            # "\t0\t0\t\tN/A": CPU Affinity "0", NUMA 0, double TAB, GPU NUMA ID N/A
            "GPU0": ("0", "0", None),
            "GPU1": ("0", "0", None),
            # "\t\t1\t\tN/A": CPU Affinity EMPTY, NUMA 1, double TAB, GPU NUMA ID N/A
            "GPU2": (None, "1", None),
            "GPU3": (None, "1", None),
        },
        nics=[("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"), ("NIC2", "mlx5_2")],
        nvlinks=mesh(4, 4),
        legend_style="modern",
    ),
    "44_adroit-4xa100-pcie-node-sys-header-5-spaces-comma-list-affinity": dict(
        kind="matrix",
        devices=GPUS4 + ["mlx5_0"],
        rows=[
            "X NODE SYS SYS NODE",
            "NODE X SYS SYS NODE",
            "SYS SYS X NODE SYS",
            "SYS SYS NODE X SYS",
            "NODE NODE SYS SYS X",
        ],
        gpus={
            "GPU0": ("0,2,4,6,8,10", "0", None),
            "GPU1": ("0,2,4,6,8,10", "0", None),
            "GPU2": ("1,3,5,7,9,11", "1", None),
            "GPU3": ("1,3,5,7,9,11", "1", None),
        },
        nics=[("mlx5_0", "mlx5_0")],
        nvlinks=set(),
        legend_style="modern",
    ),
    "45_traverse-power9-single-gpu-4mlx5-numa-list": dict(
        kind="matrix",
        devices=["GPU0"] + mlx(0, 1, 2, 3),
        rows=[
            "X SYS SYS SYS SYS",
            "SYS X PIX SYS SYS",
            "SYS PIX X SYS SYS",
            "SYS SYS SYS X PIX",
            "SYS SYS SYS PIX X",
        ],
        gpus={
            "GPU0": ("0-3", "0,8,252-255", None),
        },
        nics=[("mlx5_0", "mlx5_0"), ("mlx5_1", "mlx5_1"),
              ("mlx5_2", "mlx5_2"), ("mlx5_3", "mlx5_3")],
        nvlinks=set(),
        legend_style="modern",
    ),
    "46_della-4xa100-nv4-1mlx5-tabs": dict(
        kind="matrix",
        devices=GPUS4 + ["mlx5_0"],
        rows=[
            "X NV4 NV4 NV4 NODE",
            "NV4 X NV4 NV4 NODE",
            "NV4 NV4 X NV4 SYS",
            "NV4 NV4 NV4 X SYS",
            "NODE NODE SYS SYS X",
        ],
        gpus={
            "GPU0": ("0-23", "0", None),
            "GPU1": ("0-23", "0", None),
            "GPU2": ("24-47", "1", None),
            "GPU3": ("24-47", "1", None),
        },
        nics=[("mlx5_0", "mlx5_0")],
        nvlinks=mesh(4, 4),
        legend_style="modern",
    ),
    "48_2x-rtx3090-nvlink-bridge-nv4-tabs": dict(
        kind="matrix",
        devices=GPUS2,
        rows=[
            "X NV4",
            "NV4 X",
        ],
        gpus={
            "GPU0": ("0-23", "0", None),
            "GPU1": ("0-23", "0", None),
        },
        nics=[],
        nvlinks={(0, 1, 4)},
        legend_style="modern",
    ),
    "53_gb200-4gpu-nv18-8nic-numa-lists-gpu-numa-id-no-final-newline": dict(
        kind="matrix",
        devices=GPUS4 + nics(8),
        rows=[
            "X NV18 NV18 NV18 SYS SYS SYS SYS SYS SYS SYS SYS",
            "NV18 X NV18 NV18 SYS SYS SYS SYS SYS SYS SYS SYS",
            "NV18 NV18 X NV18 SYS SYS SYS SYS SYS SYS SYS SYS",
            "NV18 NV18 NV18 X SYS SYS SYS SYS SYS SYS SYS SYS",
            "SYS SYS SYS SYS X SYS SYS SYS SYS SYS SYS SYS",
            "SYS SYS SYS SYS SYS X SYS SYS SYS SYS SYS SYS",
            "SYS SYS SYS SYS SYS SYS X PIX SYS SYS SYS SYS",
            "SYS SYS SYS SYS SYS SYS PIX X SYS SYS SYS SYS",
            "SYS SYS SYS SYS SYS SYS SYS SYS X SYS SYS SYS",
            "SYS SYS SYS SYS SYS SYS SYS SYS SYS X SYS SYS",
            "SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS X PIX",
            "SYS SYS SYS SYS SYS SYS SYS SYS SYS SYS PIX X",
        ],
        gpus={
            "GPU0": ("0-71", "0,3-9,11-17", 2),
            "GPU1": ("0-71", "0,3-9,11-17", 10),
            "GPU2": ("72-143", "1,19-25,27-33", 18),
            "GPU3": ("72-143", "1,19-25,27-33", 26),
        },
        nics=[("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"), ("NIC2", "mlx5_2"),
              ("NIC3", "mlx5_3"), ("NIC4", "mlx5_4"), ("NIC5", "mlx5_5"),
              ("NIC6", "mlx5_6"), ("NIC7", "mlx5_7")],
        nvlinks=mesh(4, 18),
        legend_style="modern",
    ),
    "54_p2p-r-8gpu-vfio-guest-all-ok-no-legend": dict(
        kind="p2p",
        devices=GPUS8,
        rows=[
            "X OK OK OK OK OK OK OK",
            "OK X OK OK OK OK OK OK",
            "OK OK X OK OK OK OK OK",
            "OK OK OK X OK OK OK OK",
            "OK OK OK OK X OK OK OK",
            "OK OK OK OK OK X OK OK",
            "OK OK OK OK OK OK X OK",
            "OK OK OK OK OK OK OK X",
        ],
        gpus={f"GPU{i}": (None, None, None) for i in range(8)},
        nics=[],
        nvlinks=set(),
        legend_style=None,
    ),
    "56_matrix-2x-rtx4090-node-2nic-legend-hand-trimmed-wrapped": dict(
        kind="matrix",
        devices=GPUS2 + nics(2),
        rows=[
            "X NODE NODE NODE",
            "NODE X NODE NODE",
            "NODE NODE X PIX",
            "NODE NODE PIX X",
        ],
        gpus={
            "GPU0": ("0-63", "0", None),
            "GPU1": ("0-63", "0", None),
        },
        # No NIC Legend in the file: the labels stand in for the names.
        nics=[("NIC0", "NIC0"), ("NIC1", "NIC1")],
        nvlinks=set(),
        legend_style="modern",
        notes={"topo.no_nic_legend"},
    ),
    "57_dgx1-v100-32gb-nv1nv2-1nic-tabs-gpunumaid-nic-trailing-tabs": dict(
        kind="matrix",
        devices=GPUS8 + ["NIC0"],
        rows=[
            "X NV1 NV1 NV2 NV2 SYS SYS SYS NODE",
            "NV1 X NV2 NV1 SYS NV2 SYS SYS NODE",
            "NV1 NV2 X NV2 SYS SYS NV1 SYS NODE",
            "NV2 NV1 NV2 X SYS SYS SYS NV1 NODE",
            "NV2 SYS SYS SYS X NV1 NV1 NV2 SYS",
            "SYS NV2 SYS SYS NV1 X NV2 NV1 SYS",
            "SYS SYS NV1 SYS NV1 NV2 X NV2 SYS",
            "SYS SYS SYS NV1 NV2 NV1 NV2 X SYS",
            "NODE NODE NODE NODE SYS SYS SYS SYS X",
        ],
        gpus={
            "GPU0": ("0-19,40-59", "0", None),
            "GPU1": ("0-19,40-59", "0", None),
            "GPU2": ("0-19,40-59", "0", None),
            "GPU3": ("0-19,40-59", "0", None),
            "GPU4": ("20-39,60-79", "1", None),
            "GPU5": ("20-39,60-79", "1", None),
            "GPU6": ("20-39,60-79", "1", None),
            "GPU7": ("20-39,60-79", "1", None),
        },
        nics=[("NIC0", "mlx5_2")],
        nvlinks=DGX1_NVLINKS,
        legend_style="modern",
    ),
    "61_k80-4gpu-mlx4-soc-header-and-legend-unindented": dict(
        kind="matrix",
        devices=GPUS4 + ["mlx4_0"],
        rows=[
            "X PIX SOC SOC SOC",
            "PIX X SOC SOC SOC",
            "SOC SOC X PIX PHB",
            "SOC SOC PIX X PHB",
            "SOC SOC PHB PHB X",
        ],
        gpus={
            "GPU0": ("0-3", None, None),
            "GPU1": ("0-3", None, None),
            "GPU2": ("0-3", None, None),
            "GPU3": ("0-3", None, None),
        },
        nics=[("mlx4_0", "mlx4_0")],
        nvlinks=set(),
        legend_style="soc",
    ),
}
# fmt: on

STEMS = sorted(CASES)


def _parse(stem):
    return parse((CORPUS / f"{stem}.txt").read_bytes().decode("utf-8"))


# --- the copy ----------------------------------------------------------------


def test_fixture_copy_matches_shared_corpus():
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"shared corpus not present at {SHARED_CORPUS}; "
                    "cannot check the fixtures/topo-corpus copy against it")
    shared = sorted(p.name for p in SHARED_CORPUS.iterdir() if p.is_file())
    copy = sorted(p.name for p in CORPUS.iterdir() if p.is_file())
    assert copy == shared
    for name in shared:
        assert (CORPUS / name).read_bytes() == (SHARED_CORPUS / name).read_bytes(), name


def test_every_corpus_file_has_a_case():
    files = sorted(p.stem for p in CORPUS.glob("*.txt"))
    assert len(files) == 30
    assert files == STEMS


# --- per-file expectations ----------------------------------------------------


@pytest.mark.parametrize("stem", STEMS)
def test_corpus_file(stem):
    exp = CASES[stem]
    topo = _parse(stem)

    # kind: path matrix vs P2P status matrix
    if exp["kind"] == "p2p":
        assert topo.matrix is None
        assert topo.p2p is not None
        m = topo.p2p
    else:
        assert topo.p2p is None
        assert topo.matrix is not None
        m = topo.matrix

    # devices in printed order
    assert m.devices == exp["devices"]

    # the full matrix, row by row
    assert len(exp["rows"]) == len(exp["devices"])
    got_rows = []
    for row in m.cells:
        assert None not in row
        got_rows.append(" ".join(row))
    assert got_rows == exp["rows"]

    # GPUs and their affinity fields
    assert [g.label for g in topo.gpus] == list(exp["gpus"])
    for g in topo.gpus:
        cpu, numa, numa_id = exp["gpus"][g.label]
        assert g.index == int(g.label[3:])
        assert (g.label, g.cpu_affinity) == (g.label, cpu)
        assert (g.label, g.numa_affinity) == (g.label, numa)
        assert (g.label, g.gpu_numa_id) == (g.label, numa_id)

    # NICs: label as printed, name through the NIC Legend
    assert [(n.label, n.name) for n in topo.nics] == exp["nics"]

    # NVLink pairs
    assert {(p.a, p.b, p.count) for p in topo.nvlinks} == exp["nvlinks"]

    # legend style
    assert topo.extra["topo-text"]["legend_style"] == exp["legend_style"]

    # notes: nothing lost or guessed; expected info notes present
    warnings = [(n.code, n.message) for n in topo.notes if n.level == "warning"]
    assert warnings == []
    codes = {n.code for n in topo.notes}
    assert exp.get("notes", set()) <= codes
    if "topo.no_nic_legend" not in exp.get("notes", set()):
        assert "topo.no_nic_legend" not in codes


# --- the MANIFEST cross-check ---------------------------------------------------


def _manifest_rows():
    text = (CORPUS / "MANIFEST.md").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if all(re.fullmatch(r"-+", c) for c in cells if c):
            continue  # the |---|---| separator
        assert len(cells) == len(header), ln
        rows.append(dict(zip(header, cells)))
    return rows


def test_manifest_lists_every_corpus_file():
    names = [r["file"].strip("`") for r in _manifest_rows()]
    assert sorted(names) == [f"{s}.txt" for s in STEMS]


@pytest.mark.parametrize("row", _manifest_rows(), ids=lambda r: r["file"].strip("`")[:-4])
def test_manifest_counts_match_parse(row):
    stem = row["file"].strip("`")[: -len(".txt")]
    topo = _parse(stem)
    assert len(topo.gpus) == int(row["GPUs"])
    assert len(topo.nics) == int(row["NICs"])
