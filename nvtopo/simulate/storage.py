"""NVMe drives of a simulated node (GPUDirect Storage, ``docs/storage.md``).

A layout with a ``storage`` section gets ``os_drives`` M.2 drives on CPU root ports of
host bridge ``pci0000:00`` and ``data_drives`` U.2 drives, data drive *k* on a new
downstream port of the PCIe switch of GPU *k* (healthy GPU numbering), with their
``class/nvme`` controllers; ``nvidia_fs`` is loaded where the layout expects GDS.
Faults (:mod:`.faults`): ``nvme-far:<k>`` puts data drive *k* on a CPU root port of its
GPU's host bridge instead; ``nvme-bunched:<k>`` behind the next GPU's switch (two data
drives on one switch, none on its own); ``nvme-missing:<k>`` leaves it out; ``iommu-on`` puts the GPUs and drives in translating IOMMU
groups (type ``DMA-FQ``); ``no-nvidia-fs`` leaves the module out.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Set

from .sysfs_tree import Tree

SAMSUNG, BROADCOM, INTEL = 0x144D, 0x1000, 0x8086
CLS_NVME, CLS_BRIDGE = 0x010802, 0x060400
#: 3.84 TB U.2 data drives and 1.92 TB M.2 OS drives, in 512-byte sectors.
U2_SECTORS, M2_SECTORS = 7501476528, 3750748848


def counts(m: Any) -> "tuple[int, int]":
    """``(OS drives, data drives)`` the layout states (0 where it states none)."""
    os_n, data_n = m.layout.storage.os_drives, m.layout.storage.data_drives
    return (os_n if isinstance(os_n, int) else 0, data_n if isinstance(data_n, int) else 0)


def _free_buses(m: Any) -> Iterator[int]:
    used: Set[int] = set()
    for bdf in m.pci:
        used.add(int(bdf.split(":")[1], 16))
    return iter([b for b in range(0xFE, 0, -1) if b not in used])


def _free_dev(m: Any, bus_of: str, taken: Set[str]) -> str:
    """A device number free on the bus of ``bus_of`` (a BDF): ``0000:17:1f.0`` ..."""
    stem = bus_of.rsplit(":", 1)[0]
    for dev in range(0x1F, 0, -1):
        cand = f"{stem}:{dev:02x}.0"
        if cand not in m.pci and cand not in taken:
            taken.add(cand)
            return cand
    raise ValueError(f"no free device number on bus {stem}")  # pragma: no cover


def add(t: Tree, m: Any) -> None:
    """Add the drives, their controllers, IOMMU groups and nvidia_fs to ``t``."""
    os_n, data_n = counts(m)
    st = m.storage
    far: List[int] = sorted(st.get("far", ()))
    iommu = st.get("iommu")
    buses = _free_buses(m)
    taken: Set[str] = set()
    cpus0 = m.numa_cpus[min(m.numa_cpus)]
    group = [0]
    drives: List[str] = []

    def put(hb: str, chain: List[str], numa: int, cpus: str, name: str, model: str,
            sectors: int) -> None:
        # the one new bridge: a root port (chain of two) or a switch's downstream port
        j = len(chain) - 2
        t.pci(hb, chain[:j + 1], BROADCOM if j else INTEL, 0xC030 if j else 0x352A,
              CLS_BRIDGE, numa, cpus, 32.0, 4)
        path = t.pci(hb, chain, SAMSUNG, 0xA824 if sectors == U2_SECTORS else 0xA80A,
                     CLS_NVME, numa, cpus, 16.0, 4)
        t.nvme(path, name, model=model, fw="MPK7525Q" if sectors == U2_SECTORS else "GDC7302Q",
               sectors=[sectors])
        drives.append(path)

    for k in range(os_n):
        rp = _free_dev(m, "0000:00:00.0", taken)
        put("pci0000:00", [rp, f"0000:{next(buses):02x}:00.0"], min(m.numa_cpus), cpus0,
            f"nvme{k}", "SAMSUNG MZ1L21T9HCLS-00A07", M2_SECTORS)
    gpu_devs = sorted((d for d in m.pci.values() if d.role.startswith("gpu:")),
                      key=lambda d: int(d.role.split(":")[1]))
    bunched, missing = st.get("bunched", set()), st.get("missing", set())
    for k in range(data_n if gpu_devs else 0):
        if k in missing:
            continue
        gd = gpu_devs[(k + (k in bunched)) % len(gpu_devs)]
        cpus = m.numa_cpus[gd.numa]
        drive = f"0000:{next(buses):02x}:00.0"
        if k in far or len(gd.chain) < 3:
            rp = _free_dev(m, gd.chain[0], taken)
            chain = [rp, drive]
        else:
            chain = list(gd.chain[:-2]) + [_free_dev(m, gd.chain[-2], taken), drive]
        put(gd.host_bridge, chain, gd.numa, cpus, f"nvme{os_n + k}",
            "SAMSUNG MZWLR3T8HBLS-00007", U2_SECTORS)
    if iommu:
        for path in drives + [m.pci[g.bdf].path for g in m.gpus]:
            t.iommu_group(path, group[0], iommu)
            group[0] += 1
        t.f("class/iommu/dmar0/intel-iommu/version", "1:0")
    if m.layout.storage.gds is not None and m.layout.storage.gds.expected is True and not st.get("no_nvidia_fs"):
        t.module("nvidia_fs")


__all__ = ["add", "counts"]
