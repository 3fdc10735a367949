"""NVMe controllers (``class/nvme``) and the IOMMU state, for GPUDirect Storage
(``docs/storage.md``).

Read through an ALLOW-LIST: a controller directory also holds ``dhchap_secret`` and
``dhchap_ctrl_secret`` (NVMe in-band authentication keys, world-readable on many kernels)
and ``serial``/``subsysnqn`` (identifiers nvtopo does not need).  Only the attributes
named in :data:`CTRL_ATTRS` and :data:`NS_ATTRS` are ever opened; the directory listing
is used for namespace names only.

:func:`collect` returns raw values (the traversal of :mod:`.walk`, through the same view);
:func:`build` turns them into model facts.  Sources: the kernel's
``Documentation/ABI/testing/sysfs-class-nvme`` and ``sysfs-kernel-iommu_groups``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ...model.storage import NvmeNamespace, Storage
from ...safe import ascii_int, is_ascii_digits, printable
from .parse import pci_of
from .read import NOT_RECORDED, read_attrs

#: The only controller attributes ever opened (never ``dhchap_*``, ``serial``, ``address``).
CTRL_ATTRS = ("model", "firmware_rev", "transport", "state")
#: The only namespace attribute ever opened.
NS_ATTRS = ("size",)
CTRL_RE = re.compile(r"^nvme[0-9]{1,6}$")
#: nvme0n1, and nvme0c0n1 (a path of a native-multipath namespace)
NS_RE = re.compile(r"^nvme[0-9]{1,6}(?:c[0-9]{1,6})?n[0-9]{1,6}$")
#: Most controllers, namespaces per controller and IOMMU units read.
MAX_CTRLS = 256
MAX_NS = 64
MAX_UNITS = 64
#: The largest size (sectors) believed: 2**50 sectors is 512 PiB.
MAX_SECTORS = 1 << 50
#: ``kernel/iommu_groups/N/type`` values (Documentation/ABI/testing/sysfs-kernel-iommu_groups).
IOMMU_TYPES = {"identity": "passthrough", "DMA": "translated", "DMA-FQ": "translated",
               "blocked": "translated", "unmanaged": "translated"}


def _absent(err: Optional[str]) -> bool:
    return err is not None and err.startswith("ENOENT") and err != NOT_RECORDED


def collect(v: Any, pci: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """Controllers under ``class/nvme`` and the IOMMU facts, values raw; ``pci``: the PCI
    functions the walk found (the IOMMU group types of its GPUs and NVMe drives are read)."""
    out: Dict[str, Any] = {"ctrls": [], "skipped": 0}
    names, err = v.listdir("class/nvme")
    out["class_error"] = err if names is None else None
    ctrls = sorted(n for n in names or [] if CTRL_RE.match(n))
    out["skipped"] = max(0, len(ctrls) - MAX_CTRLS)
    for name in ctrls[:MAX_CTRLS]:
        base = f"class/nvme/{name}"
        ctrl: Dict[str, Any] = {"name": name, "attrs": {}, "errors": {}, "namespaces": []}
        read_attrs(v, base, CTRL_ATTRS, ctrl)
        ctrl["device_path"] = v.resolve(base + "/device")
        listing, _ = v.listdir(base)
        for ns in sorted(n for n in listing or [] if NS_RE.match(n))[:MAX_NS]:
            size, serr = v.read(f"{base}/{ns}/size")
            ctrl["namespaces"].append({"name": ns, "size": size, "error": serr})
        out["ctrls"].append(ctrl)
    groups, gerr = v.listdir("kernel/iommu_groups")
    if groups is None:  # a real /sys always has kernel/; a copied tree may have left it out
        out["kernel_dir"] = v.listdir("kernel")[0] is not None
    out["groups"] = None if groups is None else len(groups)
    out["groups_error"] = gerr
    units, _ = v.listdir("class/iommu")
    out["units"] = None if units is None else sorted(units)[:MAX_UNITS]
    types: Dict[str, Optional[str]] = {}
    if groups:
        for bdf, dev in sorted(pci.items()):
            if dev.get("kind") in ("gpu", "nvme"):
                val, _ = v.read(f"bus/pci/devices/{bdf}/iommu_group/type")
                types[bdf] = val.strip() if val is not None else None
    out["group_types"] = types
    return out


def iommu_state(raw: Dict[str, Any]) -> Tuple[str, str]:
    """``(state, how it was decided)``: off, passthrough, translated or unknown."""
    groups, gerr = raw.get("groups"), raw.get("groups_error")
    if groups is None:
        if _absent(gerr) and raw.get("kernel_dir") is False:
            return "unknown", ("the tree has no kernel/ directory (copied without it?): the "
                               "IOMMU state is not recorded")
        if _absent(gerr):
            return "off", "kernel/iommu_groups is absent: no IOMMU driver"
        return "unknown", f"kernel/iommu_groups not read ({gerr or 'not recorded'})"
    if groups == 0:
        return "off", "kernel/iommu_groups is empty: the kernel put no device in an IOMMU group"
    types = raw.get("group_types") or {}
    known = {bdf: IOMMU_TYPES.get(t or "") for bdf, t in types.items()}
    if not known:
        return "unknown", (f"{groups} IOMMU groups, but no GPU or NVMe group type was read")
    if "translated" in known.values():
        which = sorted(b for b, s in known.items() if s == "translated")
        return "translated", (f"the IOMMU group of {', '.join(which[:4])}"
                              + (f" and {len(which) - 4} more" if len(which) > 4 else "")
                              + " translates DMA (kernel/iommu_groups/N/type)")
    if all(s == "passthrough" for s in known.values()):
        return "passthrough", ("every GPU and NVMe IOMMU group has type identity "
                               "(kernel/iommu_groups/N/type)")
    return "unknown", (f"{groups} IOMMU groups exist, but their type is not readable (kernels "
                       "before 5.11 have no kernel/iommu_groups/N/type): translation or "
                       "passthrough cannot be told")


def _size(raw: Optional[str]) -> Optional[int]:
    s = (raw or "").strip()
    n = ascii_int(s, lo=0, hi=MAX_SECTORS) if is_ascii_digits(s) else None
    return None if n is None else n * 512


def _text(raw: Optional[str]) -> Optional[str]:
    s = printable((raw or "").strip())[:80]
    return s or None


def build(raw: Optional[Dict[str, Any]]) -> Tuple[Storage, Dict[str, Dict[str, Any]],
                                                   List[Dict[str, Any]]]:
    """``(storage facts, PCI address -> controller facts, controllers with no PCI function)``.

    Controller facts are the keyword arguments of :class:`~nvtopo.model.storage.NvmeDrive`
    beyond placement."""
    if raw is None:  # evidence taken before nvtopo read class/nvme
        return Storage(iommu_how="not recorded: the evidence predates nvtopo reading it"), {}, []
    err = raw.get("class_error")
    status = ("read" if err is None else "absent" if _absent(err)
              else "not recorded" if err == NOT_RECORDED else "unreadable")
    state, how = iommu_state(raw)
    storage = Storage(nvme_class=status, iommu=state, iommu_how=how,
                      iommu_units=[printable(u) for u in raw["units"]]
                      if raw.get("units") is not None else None)
    by_pci: Dict[str, Dict[str, Any]] = {}
    fabric: List[Dict[str, Any]] = []
    for c in raw.get("ctrls") or []:
        facts: Dict[str, Any] = {
            "controller": c["name"],
            "model": _text(c["attrs"].get("model")),
            "firmware": _text(c["attrs"].get("firmware_rev")),
            "transport": _text(c["attrs"].get("transport")),
            "state": _text(c["attrs"].get("state")),
            "namespaces": [NvmeNamespace(name=ns["name"], size_bytes=_size(ns["size"]))
                           for ns in c["namespaces"]],
        }
        bdf = pci_of(c.get("device_path") or "")[0]
        if bdf is not None and bdf not in by_pci:
            by_pci[bdf] = facts
        else:
            fabric.append(facts)
    return storage, by_pci, fabric


__all__ = ["CTRL_ATTRS", "NS_ATTRS", "build", "collect", "iommu_state"]
