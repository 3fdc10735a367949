"""Pasted ``gdscheck -p`` text (NVIDIA GPUDirect Storage's platform check): the versions, the
"DRIVER CONFIGURATION" list of file systems and devices GDS supports here, and the IOMMU and
platform lines (``docs/storage.md``).

The format, as NVIDIA's *GPUDirect Storage Installation and Troubleshooting Guide* prints
it::

     GDS release version: 1.7.2.10
     nvidia_fs version:  2.17 libcufile version: 2.12
     Platform: x86_64
     =====================
     DRIVER CONFIGURATION:
     =====================
     NVMe               : Supported
     NVMeOF             : Unsupported
     ...
     =========
     GPU INFO:
     =========
     GPU index 0 NVIDIA H100 80GB HBM3 bar:1 bar size (MiB):131072 supports GDS, IOMMU State: Disabled
     ==============
     PLATFORM INFO:
     ==============
     IOMMU: disabled
     Platform verification succeeded

Other forms seen in the wild are read too: GDS 1.14 and later add ``NVMe P2PDMA`` (the
kernel's PCI P2PDMA path, which needs no nvidia_fs) and ``nvidia_fs minimum version``; GDS
1.16 and later print the I/O modes a driver has instead of ``Supported`` (``NVMe : nvfs,
compat``, ``NVMe : compat``: compatibility mode only, through the page cache, is not
GPUDirect); the pre-1.0 tool (``GDS release version (beta): 0.95.0.94``) has no ``DRIVER
CONFIGURATION`` header: its driver list opens ``cuFile CONFIGURATION:``, and its GPU lines say
``bar size (MB):``; a paste often lacks the version lines (copied from ``ENVIRONMENT:`` on),
its ``====`` rulers or its indentation, or carries a forum's ``**bold**`` marks.  A driver
line is known by its value (a support verdict or a mode list), not only by its section.

Pure; every line bounded (:data:`MAX_LINE`), every pattern linear.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ..errors import NvtopoError
from ..model.storage import GdsCheck, GdsGpu
from ..model.topology import Topology
from ..safe import ascii_int, printable

SOURCE = "gds-text"
#: Longest line read (the tool prints under 200 characters); longer lines are cut.
MAX_LINE = 512
#: Most driver entries kept.
MAX_DRIVERS = 64
#: Most GPU INFO lines kept (a node has at most a few dozen GPUs).
MAX_GPUS = 256

_SECTION_RE = re.compile(r"^\s*([A-Za-z][A-Za-z ]{2,40}):\s*$")
_KV_RE = re.compile(r"^\s*(-{0,2}[A-Za-z][\w .()/-]{0,40}?)\s*:\s*(\S[^\r\n]{0,200})$")
_VERSION_RE = re.compile(r"^[0-9][0-9A-Za-z.\-]{0,30}$")
#: The word(s) before ``version:`` -> the field it fills.
_VERSION_NAMES = {"gds release": "gds_version", "nvidia_fs": "nvidia_fs_version",
                  "libcufile": "libcufile_version"}
_IOMMU_RE = re.compile(r"^\s*IOMMU\s*:\s*(enabled|disabled)\b", re.I)
_VERIFY_RE = re.compile(r"^\s*Platform verification (succeeded|failed)\b", re.I)
_PLATFORM_RE = re.compile(r"^\s*Platform\s*:\s*([A-Za-z0-9_]{1,20})\s*$")
#: A driver line anywhere in the head (``NVMe : Supported``, ``NVMe : compat``).
_NVME_LINE_RE = re.compile(r"^[ \t*]*NVMe[ \t]*:[ \t]*(?:\*+[ \t]*)?[A-Za-z]", re.M)
#: The words a driver's value is made of, when it is a support verdict or a mode list
#: (GDS 1.16+: ``nvfs, compat``); other values (``true``, ``TRACE``) are not driver lines.
VERDICT_WORDS = frozenset(("supported", "unsupported", "nvfs", "p2pdma", "compat"))
#: Sections whose ``key : value`` lines are never drivers.
_NOT_DRIVERS = ("GPU INFO", "PLATFORM INFO", "ENVIRONMENT")


def looks_like(text: str) -> bool:
    """Whether ``text`` is ``gdscheck -p`` output: its DRIVER CONFIGURATION header (or the
    pre-1.0 ``cuFile CONFIGURATION``) and a GDS version line, or either of them with an
    ``NVMe :`` driver line (a paste without its version lines; the pre-1.0 list)."""
    head = text[:200_000]
    header = "DRIVER CONFIGURATION" in head
    version = "GDS release version" in head or "nvidia_fs version" in head
    if header and version:
        return True
    return (header or version or "cuFile CONFIGURATION" in head) and \
        _NVME_LINE_RE.search(head) is not None


def parse(text: str, where: str = "gdscheck text") -> GdsCheck:
    """The facts of one ``gdscheck -p`` paste; :class:`NvtopoError` when it has no driver
    list (cut before it, or not the tool's output)."""
    out = GdsCheck()
    drivers: Dict[str, str] = {}
    section: Optional[str] = None
    for raw in text.splitlines()[:10_000]:
        line = _unmarked(raw[:MAX_LINE])
        if not line.strip() or set(line.strip()) == {"="}:
            continue
        m = _SECTION_RE.match(line)
        if m:
            section = m.group(1).strip().upper()
            continue
        if "version:" in line or "version (beta):" in line:
            _versions(line, out)
        pm = _PLATFORM_RE.match(line)
        if pm and section is None:
            out.platform = pm.group(1)
            continue
        im = _IOMMU_RE.match(line)
        if im:
            out.iommu = im.group(1).lower()
            continue
        vm2 = _VERIFY_RE.match(line)
        if vm2:
            out.verification = vm2.group(1).lower()
            continue
        if section == "GPU INFO" and len(out.gpus) < MAX_GPUS:
            gpu = gpu_line(line)
            if gpu is not None:
                out.gpus.append(gpu)
                continue
        if section not in _NOT_DRIVERS and len(drivers) < MAX_DRIVERS:
            entry = _driver(line, section == "DRIVER CONFIGURATION")
            if entry is not None:
                drivers[entry[0]] = entry[1]
    if not drivers:
        raise NvtopoError("gdscheck -p text without its DRIVER CONFIGURATION list (cut short, "
                          "or not the tool's output)", where=where)
    out.drivers = drivers
    return out


def _unmarked(raw: str) -> str:
    """A line without a forum's bold marks (``**NVMe : Unsupported**``) or trailing space."""
    line = raw.rstrip()
    if "**" in line:
        line = line.replace("**", "").rstrip()
    return line


def _driver(line: str, listed: bool) -> Optional[Tuple[str, str]]:
    """``(name, value)`` of a driver line: in the DRIVER CONFIGURATION list (``listed``) any
    ``key : value`` but the ``--`` sub-items; elsewhere (the pre-1.0 ``cuFile
    CONFIGURATION``, a paste without headers) only a value made of support or mode words, and
    a key that is not a ``properties.x`` setting."""
    km = _KV_RE.match(line)
    if not km or km.group(1).startswith("-"):
        return None
    key, value = km.group(1).strip(), km.group(2).strip()
    if not listed:
        words = value.replace(",", " ").replace("(", " ").replace(")", " ").lower().split()
        if "." in key or not words or not set(words) <= VERDICT_WORDS:
            return None
    return printable(key), printable(value)


def gpu_line(line: str) -> Optional[GdsGpu]:
    """One ``GPU INFO`` line: ``GPU index 0 NVIDIA H100 80GB HBM3 bar:1 bar size
    (MiB):131072 supports GDS, IOMMU State: Disabled`` (older GDS prints no ``IOMMU State``);
    ``None`` when the line is not one.  Split on its fixed words, no pattern: the name runs to
    `` bar:``, the verdict from the size to ``, IOMMU State:``.  ``supports GDS`` is true, a
    verdict that says ``not`` (``does not support GDS``) false, anything else unknown."""
    words = line.split(None, 3)
    if len(words) < 3 or words[0] != "GPU" or words[1] != "index":
        return None
    index = ascii_int(words[2], hi=4095)
    rest = words[3] if len(words) > 3 else ""
    name, sep, after = rest.partition(" bar:")
    gpu = GdsGpu(index=index, name=printable(name.strip())[:120] or None)
    if not sep:
        return gpu if index is not None else None
    _, sep, size = after.partition("(MiB):")
    if not sep:  # before GDS 1.0: "bar size (MB):"
        _, sep, size = after.partition("(MB):")
    size = size.lstrip()
    digits = len(size) - len(size.lstrip("0123456789"))
    gpu.bar_mib = ascii_int(size[:digits][:12]) if digits else None
    verdict, sep, state = size[digits:].partition("IOMMU State:")
    verdict = verdict.strip().rstrip(",").strip()
    if verdict:
        gpu.support = printable(verdict)[:80]
        low = verdict.lower().split()
        gpu.supports_gds = (False if "not" in low or "unsupported" in low
                            else True if low[:2] == ["supports", "gds"] else None)
    word = state.split()[0].lower() if sep and state.split() else ""
    gpu.iommu = "disabled" if word.startswith("disable") else \
        "enabled" if word.startswith("enable") else None
    return gpu


def _versions(line: str, out: GdsCheck) -> None:
    """``GDS release version: 1.7.2.10``, ``nvidia_fs version:  2.17 libcufile version: 2.12``
    (split on the marker: no pattern searches the line)."""
    parts = line.replace("version (beta):", "version:").split("version:")
    for before, after in zip(parts, parts[1:]):
        words = before.split()
        value = after.split()[:1]
        if not words or not value or not _VERSION_RE.match(value[0]):
            continue
        name = " ".join(words[-2:]).lower() if words[-1] == "release" else words[-1].lower()
        attr = _VERSION_NAMES.get(name)
        if attr is not None:
            setattr(out, attr, value[0])


def derive_text(text: str, where: str = "gdscheck text") -> Topology:
    """A model holding only the paste's facts: its GPU INFO lines stay in the record
    (``gds_text.gpus``), not model GPUs (they give no PCI address to merge them by)."""
    topo = Topology(sources=[SOURCE])
    topo.gds_text = parse(text, where)
    return topo


__all__ = ["SOURCE", "derive_text", "gpu_line", "looks_like", "parse"]
