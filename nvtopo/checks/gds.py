"""GPUDirect Storage: data drives near the GPUs, spread over the PCIe switches, ``nvidia_fs``
loaded and the IOMMU out of the way (``docs/storage.md``).

Expectations come from the layout's ``storage`` section (``docs/layouts.md``): ``os_drives``
and ``data_drives`` (counts), and ``storage.gds``: ``expected`` (GDS is meant to run),
``data_path`` (the worst path level a data drive may have to its nearest GPU, ``PXB``),
``drives_per_switch`` (most data drives sharing one GPU switch).  An expectation whose only
evidence is inferred gives warnings, never errors.  Drive counts never give an error: a
layout is chosen by its GPUs, and another vendor's server with the same GPU board carries
other drives.

OS drives are told from data drives by the evidence available, in this order: size (the
``os_drives`` smallest drives, when they are strictly smaller than every other), then
placement (the drives near no GPU, when there are exactly ``os_drives`` of them).  Where
neither decides, no drive is called misplaced (a warning says the split is unknown).

Layout-independent: a controller not ``live``; ``nvidia_fs`` loaded (GDS in use) while the
IOMMU translates.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from . import Finding, demote, facts as F, finding
from . import subject as S
from .select import Selection
from ..model import Topology

#: Path levels from best to worst (the PCI-tree vocabulary of ``nvidia-smi topo -m``).
LEVELS = ("PIX", "PXB", "PHB", "NODE", "SYS")
SOURCE = "sysfs"


def _name(d: Any) -> str:
    return f"{d.controller} ({d.pci_address})" if d.controller else d.pci_address


def _tb(n: Optional[int]) -> str:
    return "?" if n is None else f"{n / 1e12:.2f} TB"


def _near(d: Any, worst: str) -> bool:
    best = d.best_path
    return best is not None and LEVELS.index(best) <= LEVELS.index(worst)


def split(drives: List[Any], os_drives: Optional[int], worst: str = "PXB"
          ) -> Tuple[Optional[List[Any]], List[Any], str]:
    """``(OS drives or None when undecided, data drives, how it was decided)``."""
    if not os_drives:
        return [], list(drives), "the layout names no OS drives: every drive is a data drive"
    sizes = [d.size_bytes for d in drives]
    if len(drives) > os_drives and None not in sizes:
        ranked = sorted(drives, key=lambda d: d.size_bytes)
        small, rest = ranked[:os_drives], ranked[os_drives:]
        if max(d.size_bytes for d in small) < min(d.size_bytes for d in rest):
            return small, rest, (f"by size: the {os_drives} smallest drives "
                                 f"({_tb(max(d.size_bytes for d in small))} or less) are the OS "
                                 f"drives, the others ({_tb(min(d.size_bytes for d in rest))} "
                                 "or more) data drives")
    far = [d for d in drives if not _near(d, worst)]
    if len(far) == os_drives and all(d.best_path is not None for d in drives):
        return far, [d for d in drives if _near(d, worst)], (
            f"by placement: the {os_drives} drives near no GPU are the OS drives "
            "(namespace sizes do not tell them apart)")
    if not far:
        return [], list(drives), (f"every drive is near a GPU: all are data drives (the "
                                  f"{os_drives} OS drives are not NVMe, or not shown)")
    return None, [d for d in drives if _near(d, worst)], (
        "neither size nor placement tells the OS drives from the data drives")


def check(topo: Topology, sel: Selection) -> List[Finding]:
    layout = sel.layout
    out: List[Finding] = []
    sysfs = topo.sysfs
    gds = layout.storage.gds if layout is not None else None
    expect = gds is not None and gds.expected is True
    if topo.gds_text is not None:
        out += _gdscheck(topo.gds_text, expect,
                         expect and layout is not None and layout.storage.inferred("gds"))
    if sysfs is None:
        if expect:
            out.append(finding("info", "gds.not_checked", S.NODE,
                               "GPUDirect Storage not checked: the input has no sysfs evidence "
                               "(NVMe drives, nvidia_fs and the IOMMU are read from sysfs)",
                               source=", ".join(topo.sources)))
        return out
    storage = sysfs.storage
    drives = [d for d in sysfs.nvme if d.pci_address]
    iommu = storage.iommu if storage is not None else "unknown"
    # -- layout-independent
    out.extend(_drive_states(sysfs))
    if not expect:
        if sysfs.gpudirect.nvidia_fs and iommu == "translated":
            out.append(finding("warning", "gds.iommu", S.NODE,
                               "nvidia_fs is loaded (GPUDirect Storage in use) and the IOMMU "
                               f"translates DMA ({storage.iommu_how}): GDS peer-to-peer reads "
                               "fail or fall back to compatibility mode",
                               expected="off or passthrough", actual=iommu, source=SOURCE,
                               hint="boot with the IOMMU off or in passthrough (iommu=pt, "
                                    "intel_iommu=off / amd_iommu=off) as NVIDIA's GDS "
                                    "installation guide says"))
        return out

    assert gds is not None and layout is not None
    inferred = layout.storage.inferred("gds")
    worst: str = gds.data_path if gds.data_path in LEVELS and gds.data_path else "PXB"
    if storage is None or storage.nvme_class == "not recorded":
        out.append(finding("info", "gds.not_checked", S.NODE,
                           "GPUDirect Storage not checked: the sysfs evidence was taken before "
                           "nvtopo read class/nvme and the IOMMU state", source=SOURCE))
        return out
    if storage.nvme_class == "unreadable":
        out.append(finding("info", "gds.not_checked", S.NODE,
                           "NVMe controllers not checked: class/nvme could not be read",
                           source=SOURCE))

    # -- nvidia_fs
    if not sysfs.gpudirect.nvidia_fs:
        out.append(finding(demote("error", inferred), "gds.no_nvidia_fs", S.NODE,
                           "GPUDirect Storage is expected but the nvidia_fs module is not "
                           "loaded (no /sys/module/nvidia_fs): cuFile reads and writes go "
                           "through a CPU bounce buffer (compatibility mode) or fail",
                           expected="loaded", actual="not loaded", source=SOURCE,
                           hint="install the nvidia-fs package (nvidia-gds) and load it: "
                                "modprobe nvidia_fs; gdscheck -p says what GDS sees"))
    return _expected_drives(out, topo, layout, drives, storage, worst, inferred, expect)


def _drive_states(sysfs: Any) -> List[Finding]:
    """NVMe controllers not live (layout-independent)."""
    out: List[Finding] = []
    for d in sysfs.nvme:
        if d.state is not None and d.state != "live":
            out.append(finding("warning", "gds.drive_state", S.other(_name(d)),
                               f"NVMe controller {_name(d)} is in state {d.state!r}, not live: "
                               "its namespaces cannot be read or written",
                               expected="live", actual=d.state, source=SOURCE,
                               hint="check dmesg for nvme resets and the drive's health "
                                    "(nvme smart-log)"))
    return out


def _expected_drives(out: List[Finding], topo: Topology, layout: Any, drives: List[Any],
                     storage: Any, worst: str, inferred: bool, expect: bool) -> List[Finding]:
    """GDS expected: the drives, OS vs data, their placement and spread, then the IOMMU
    (appended to ``out``)."""
    gds = layout.storage.gds
    want_os, want_data = layout.storage.os_drives, layout.storage.data_drives
    has_gpus = any(d.gpu_paths for d in drives)
    if not drives:
        if storage is not None and storage.nvme_class in ("read", "absent"):
            out.append(finding("warning", "gds.drives", S.NODE,
                               "GPUDirect Storage is expected but sysfs shows no NVMe drive",
                               expected=want_data, actual=0, source=SOURCE,
                               hint="GDS can also read over the network (NVMe-oF, "
                                    "distributed file systems): if so, ignore this"))
        return out
    if not has_gpus:
        out.append(finding("info", "gds.not_checked", S.NODE,
                           "data drive placement not checked: sysfs found no GPU to measure "
                           "the drives' paths to", source=SOURCE))
        return _iommu(out, storage, [], expect)
    v = F.view(topo)
    short = len(v.present) < F.expected_gpus(layout, v) or bool(v.absent_in)
    os_set, data, how = split(drives, want_os if isinstance(want_os, int) else 0, worst)
    if isinstance(want_data, int) and os_set is not None and len(data) != want_data:
        out.append(finding("warning", "gds.drives", S.NODE,
                           f"{len(data)} data drives, the layout has {want_data} ({how})",
                           expected=want_data, actual=len(data), source=SOURCE,
                           hint="a server with the same GPUs from another vendor carries "
                                "other drives; otherwise check for a missing or failed drive"))
    if os_set is None:
        far = [d for d in drives if not _near(d, worst)]
        out.append(finding("warning", "gds.drives_unsorted", S.NODE,
                           f"which NVMe drives are OS drives is not known ({how}); "
                           f"{len(far)} drive(s) near no GPU: "
                           + ", ".join(_name(d) for d in far[:4]),
                           source=SOURCE,
                           hint="read the drive models (show) and the RAID layout "
                                "(cat /proc/mdstat) to tell them apart"))
    far_data = [d for d in data if not _near(d, worst)] if os_set is not None else []
    if far_data and short:
        # a missing GPU leaves the drive on its switch with no GPU near: the GPU's finding
        # is the root cause, not the drive
        out.append(finding("info", "gds.not_checked", S.NODE,
                           f"placement of {len(far_data)} data drive(s) not checked: GPUs are "
                           "missing, so a drive on a missing GPU's switch has no GPU near it",
                           source=SOURCE))
        far_data = []
    out.extend(_far_drives(far_data, worst, how, inferred))
    per = gds.drives_per_switch
    if per is not None and os_set is not None:
        out.extend(_bunched(data, worst, per))
    return _iommu(out, storage, far_data, expect)


def _far_drives(far_data: List[Any], worst: str, how: str, inferred: bool
                ) -> List[Finding]:
    """Data drives beyond the layout's data path to every GPU."""
    out: List[Finding] = []
    for d in far_data:
        nearest = ", ".join(d.nearest_gpus) or "none"
        out.append(finding(
            demote("error", inferred), "gds.drive_far", S.other(_name(d)),
            f"data drive {_name(d)} is {d.best_path or 'unknown'} to its nearest GPU "
            f"({nearest}); the layout wants {worst} or better: GPUDirect Storage DMA between "
            f"it and the GPUs crosses the CPU's root complex ({how})",
            expected=worst, actual=d.best_path, source=SOURCE,
            hint="move the drive to a bay behind a GPU's PCIe switch (the vendor's slot map), "
                 "or check the drive bay cabling"))
    return out


def _bunched(data: List[Any], worst: str, per: int) -> List[Finding]:
    """More data drives behind one GPU switch than the layout's ``drives_per_switch``."""
    groups: Dict[Tuple[str, ...], List[Any]] = {}
    for d in data:
        if _near(d, worst):
            groups.setdefault(tuple(sorted(d.nearest_gpus)), []).append(d)
    bunched = {k: v for k, v in groups.items() if len(v) > per}
    out: List[Finding] = []
    for gpus, ds in sorted(bunched.items()):
        out.append(finding(
            "warning", "gds.drives_bunched", S.NODE,
            f"{len(ds)} data drives share the PCIe switch of {', '.join(gpus)} "
            f"({', '.join(_name(d) for d in ds)}); the layout has at most {per} per "
            "switch: their bandwidth is shared by those GPUs while other switches have none",
            expected=per, actual=len(ds), source=SOURCE,
            hint="spread the data drives over the GPU switches (the vendor's bay map)"))
    return out


def _gdscheck(g: Any, expect: bool, inferred: bool) -> List[Finding]:
    """What a pasted ``gdscheck -p`` says: GDS's own verdict on NVMe, the IOMMU, the platform.
    Pasting it says GDS is wanted: without a layout's expectation its facts are warnings."""
    out: List[Finding] = []
    src = "gds-text"
    if g.supported("NVMe") is False and not g.supported("NVMe P2PDMA"):
        said = (f"gdscheck -p lists NVMe with compatibility mode only (NVMe : "
                f"{g.drivers.get('NVMe')}): cuFile I/O to local NVMe drives goes through the "
                "page cache (a CPU bounce buffer), not GPUDirect") if g.compat_only("NVMe") \
            else ("gdscheck -p lists NVMe as Unsupported: cuFile I/O to local NVMe drives goes "
                  "through compatibility mode (a CPU bounce buffer), not GPUDirect")
        out.append(finding(
            demote("error", inferred) if expect else "warning", "gds.nvme_unsupported", S.NODE,
            said, expected="Supported", actual=g.drivers.get("NVMe"), source=src,
            hint="check that nvidia_fs is loaded, the IOMMU is off or in passthrough and the "
                 "drives use the inbox nvme driver (GDS installation guide)"))
    unsupported = [x for x in g.gpus if x.supports_gds is False]
    if unsupported:
        named = ", ".join(f"GPU index {x.index} ({x.name or 'name not printed'})"
                          for x in unsupported[:8]) + (
            f" and {len(unsupported) - 8} more" if len(unsupported) > 8 else "")
        out.append(finding(
            demote("error", inferred) if expect else "warning", "gds.gpu_unsupported",
            S.other(f"GPU index {unsupported[0].index}") if len(unsupported) == 1 else S.NODE,
            f"gdscheck -p says {named} {'does' if len(unsupported) == 1 else 'do'} not support "
            "GDS: cuFile I/O to "
            + ("that GPU" if len(unsupported) == 1 else "those GPUs")
            + " goes through compatibility mode (a CPU bounce buffer)",
            expected="supports GDS", actual=unsupported[0].support, source=src,
            hint="GDS needs a data-centre or professional GPU (compute capability 6 or later) "
                 "with the NVIDIA driver's P2P support; check the GPU model and driver "
                 "(gdscheck -p, GDS installation guide)"))
    iommu, where = g.iommu, ""
    if iommu is None and g.gpus and all(x.iommu is not None for x in g.gpus):
        # cut before PLATFORM INFO: every GPU line states the IOMMU it sees
        iommu = "enabled" if any(x.iommu == "enabled" for x in g.gpus) else "disabled"
        where = " (its GPU INFO lines)"
    if iommu == "enabled":
        out.append(finding("warning", "gds.iommu", S.NODE,
                           f"gdscheck -p{where} says the IOMMU is enabled: GDS peer-to-peer "
                           "DMA is not supported with it (GDS falls back to compatibility "
                           "mode)",
                           expected="disabled", actual="enabled", source=src,
                           hint="boot with iommu=pt (or the IOMMU off) as NVIDIA's GDS "
                                "installation guide says"))
    elif iommu is None:
        out.append(finding("info", "gds.not_checked", S.NODE,
                           "gdscheck -p text has no PLATFORM INFO IOMMU line (cut short?): the "
                           "IOMMU state it sees is unknown", source=src))
    if g.verification == "failed":
        out.append(finding("warning", "gds.platform", S.NODE,
                           "gdscheck -p says platform verification failed (its lines above the "
                           "verdict say why)", expected="succeeded", actual="failed",
                           source=src, hint="read the PLATFORM INFO section of gdscheck -p"))
    return out


def _iommu(out: List[Finding], storage: Any, far: List[Any], expect: bool) -> List[Finding]:
    if storage is None:
        return out
    if storage.iommu == "unknown":
        out.append(finding("info", "gds.not_checked", S.NODE,
                           f"IOMMU state not checked: {storage.iommu_how}", source=SOURCE))
    elif storage.iommu == "translated" and expect:
        crossing = f"; {', '.join(_name(d) for d in far[:4])} reach the GPUs through the " \
                   "root complex, where translated DMA is checked" if far else \
            ": peer-to-peer DMA below a switch is redirected upstream where ACS is on"
        out.append(finding(
            "warning", "gds.iommu", S.NODE,
            f"the IOMMU translates DMA ({storage.iommu_how}){crossing}: GDS wants it off or "
            "in passthrough", expected="off or passthrough", actual="translated",
            source=SOURCE,
            hint="boot with iommu=pt (or the IOMMU off) as NVIDIA's GDS installation guide "
                 "says; gdscheck -p reports the IOMMU state GDS sees"))
    return out


__all__ = ["check", "split"]
