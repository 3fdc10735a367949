"""Fault specs (``nvlink-down:GPU3:7`` ...): parsing, checking against the machine, applying.

Subjects name the *healthy* node: ``GPU3`` is the GPU a healthy node of the
layout numbers 3 (after ``gpu-missing`` the tools renumber the GPUs after it,
as nvidia-smi and NVML do).  A spec that is malformed, names something the
machine does not have, or does not apply to the layout raises
:class:`~nvtopo.errors.NvtopoError` with one line saying why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from ..errors import NvtopoError
from ..model.rdma import ERROR_COUNTERS
from .hardware import Machine, Port

#: kind -> (syntax, what it does)
KINDS: Dict[str, Tuple[str, str]] = {
    "nvlink-down": ("nvlink-down:GPU<i>:<link>", "one NVLink of a GPU is down"),
    "nvlink-degraded": ("nvlink-degraded:GPU<a>-GPU<b>", "one NVLink fewer between two GPUs"),
    "gpu-missing": ("gpu-missing:GPU<i>", "a GPU is gone from every source"),
    "ib-port-down": ("ib-port-down:<rdma device>", "the device's port is DOWN (Disabled)"),
    "ib-rate": ("ib-rate:<rdma device>:<Gb/s>", "the port trained at a lower rate"),
    "pcie-width": ("pcie-width:GPU<i>:<lanes>", "the GPU's PCIe link trained narrower"),
    "pcie-gen": ("pcie-gen:GPU<i>:<gen>", "the GPU's PCIe link trained at a lower generation"),
    "nic-affinity-swap": ("nic-affinity-swap:<rdma device>:<rdma device>",
                          "the two devices' PCI places are swapped"),
    "nic-rename": ("nic-rename:<rdma device>:<new name>",
                   "the device has another name (udev, driver, BIOS), same PCI place"),
    "nic-far": ("nic-far:<rdma device>",
                "the card moved to a CPU root port of its own, off every GPU's switch"),
    "fabric-not-started": ("fabric-not-started", "NVSwitch fabric not started: no NVLink"),
    "counters": ("counters:<rdma device>:<counter>=<value>", "an error counter of the port"),
    "peermem-missing": ("peermem-missing", "nvidia_peermem not loaded (no GPUDirect RDMA)"),
    "c2c-down": ("c2c-down:GPU<i>", "the GPU's NVLink-C2C to its Grace CPU is off (mode "
                 "disabled, every link inactive)"),
    "c2c-links": ("c2c-links:GPU<i>:<active>", "only that many of the GPU's NVLink-C2C "
                  "links are active"),
    "nvme-far": ("nvme-far:<k>", "data drive k on a CPU root port, off its GPU's switch"),
    "nvme-bunched": ("nvme-bunched:<k>", "data drive k behind the next GPU's switch (that "
                     "switch has two data drives, its own none)"),
    "nvme-missing": ("nvme-missing:<k>", "data drive k is gone (failed or pulled)"),
    "iommu-on": ("iommu-on", "the IOMMU translates DMA (groups of type DMA-FQ)"),
    "no-nvidia-fs": ("no-nvidia-fs", "nvidia_fs not loaded (no GPUDirect Storage)"),
}

_GPU = r"GPU([0-9]{1,4})"
_NIC = r"([A-Za-z][\w.-]*)"
_PATTERNS = {
    "nvlink-down": re.compile(rf"^{_GPU}:([0-9]{{1,3}})$"),
    "nvlink-degraded": re.compile(rf"^{_GPU}-{_GPU}$"),
    "gpu-missing": re.compile(rf"^{_GPU}$"),
    "ib-port-down": re.compile(rf"^{_NIC}$"),
    "ib-rate": re.compile(rf"^{_NIC}:([0-9]{{1,6}}(?:\.[0-9]{{1,6}})?)$"),
    "pcie-width": re.compile(rf"^{_GPU}:([0-9]{{1,2}})$"),
    "pcie-gen": re.compile(rf"^{_GPU}:([0-9])$"),
    "nic-affinity-swap": re.compile(rf"^{_NIC}:{_NIC}$"),
    "counters": re.compile(rf"^{_NIC}:(\w+)=([0-9]{{1,12}})$"),
    "nvme-far": re.compile(r"^([0-9]{1,3})$"),
    "nic-rename": re.compile(rf"^{_NIC}:([A-Za-z][A-Za-z0-9_.-]{{0,30}})$"),
}
_PATTERNS["nvme-bunched"] = _PATTERNS["nvme-missing"] = _PATTERNS["nvme-far"]  # <k>
_PATTERNS["nic-far"] = _PATTERNS["ib-port-down"]  # <rdma device>
_PATTERNS["c2c-down"] = _PATTERNS["gpu-missing"]  # GPU<i>
_PATTERNS["c2c-links"] = _PATTERNS["pcie-width"]  # GPU<i>:<count>


@dataclass(frozen=True)
class Fault:
    spec: str
    kind: str
    args: Tuple[str, ...]

    def subjects(self) -> Tuple[str, ...]:
        """What the fault is about (``GPU3``, ``mlx5_1``, ``node``): distinct-subject pairing."""
        if self.kind in ("fabric-not-started", "peermem-missing", "iommu-on", "no-nvidia-fs"):
            return ("node",)
        if self.kind in ("nvme-far", "nvme-bunched", "nvme-missing"):
            return (f"nvme-data{self.args[0]}",)
        if self.kind == "nvlink-degraded":
            return (f"GPU{self.args[0]}", f"GPU{self.args[1]}")
        if self.kind in ("nvlink-down", "gpu-missing", "pcie-width", "pcie-gen", "c2c-down",
                         "c2c-links"):
            return (f"GPU{self.args[0]}",)
        if self.kind == "nic-affinity-swap":
            return (self.args[0], self.args[1])
        if self.kind == "nic-rename":
            return (self.args[0],)
        return (self.args[0],)


def parse(spec: str) -> Fault:
    """``kind[:args]`` -> :class:`Fault`; a one-line error naming the syntax when malformed."""
    where = f"--fault {spec}"
    kind, _, rest = spec.strip().partition(":")
    if kind not in KINDS:
        raise NvtopoError(f"unknown fault kind {kind!r}; known: {', '.join(KINDS)}", where=where)
    if kind in ("fabric-not-started", "peermem-missing", "iommu-on", "no-nvidia-fs"):
        if rest:
            raise NvtopoError(f"{kind} takes no argument", where=where)
        return Fault(spec, kind, ())
    m = _PATTERNS[kind].match(rest)
    if not m:
        raise NvtopoError(f"malformed; expected {KINDS[kind][0]}", where=where)
    return Fault(spec, kind, tuple(m.groups()))


def apply(m: Machine, faults: List[Fault]) -> None:
    """Apply faults in order; each is checked against the machine as it is at that point."""
    seen: Dict[str, str] = {}
    for f in faults:
        if f.spec in seen:
            raise NvtopoError("given twice", where=f"--fault {f.spec}")
        seen[f.spec] = f.kind
        _APPLY[f.kind](m, f, f"--fault {f.spec}")
        m.faults.append(f.spec)


def _gpu(m: Machine, num: str, where: str):
    g = m.gpu(int(num))
    if g is None:
        if int(num) < m.healthy_gpu_count:
            raise NvtopoError(f"GPU{num} is already missing", where=where)
        raise NvtopoError(f"no GPU{num}: the {m.layout.name} layout has GPUs "
                          f"GPU0-GPU{m.healthy_gpu_count - 1}", where=where)
    return g


def _nic(m: Machine, name: str, where: str):
    nic = m.nic(name)
    if nic is None:
        raise NvtopoError(f"no RDMA device {name!r} on the simulated {m.layout.name} (it has "
                          f"{', '.join(n.name for n in m.nics_in_order()) or 'none'})",
                          where=where)
    return nic


def _nvlink_down(m: Machine, f: Fault, where: str) -> None:
    g = _gpu(m, f.args[0], where)
    link = int(f.args[1])
    lk = next((x for x in g.links if x.index == link), None)
    if not g.link_count:
        raise NvtopoError(f"the {m.layout.name} layout has no NVLink", where=where)
    if lk is None:
        if link < g.link_count:
            raise NvtopoError(f"GPU{f.args[0]} link {link} is not connected by design "
                              f"(only links 0-{len(g.links) - 1} are wired)", where=where)
        raise NvtopoError(f"GPU{f.args[0]} has links 0-{g.link_count - 1}", where=where)
    if m.nvswitch and not any(x.up for x in g.links if x.kind == "switch"):
        raise NvtopoError("the NVLink fabric is not up: no link to take down", where=where)
    if not lk.up:
        raise NvtopoError(f"GPU{f.args[0]} link {link} is already down", where=where)
    lk.up = False


def _nvlink_degraded(m: Machine, f: Fault, where: str) -> None:
    a, b = _gpu(m, f.args[0], where), _gpu(m, f.args[1], where)
    if a.ident == b.ident:
        raise NvtopoError("a pair needs two different GPUs", where=where)
    key = (min(a.ident, b.ident), max(a.ident, b.ident))
    have = m.topo_pair_count(a, b)
    if have < 1:
        raise NvtopoError(f"GPU{f.args[0]} and GPU{f.args[1]} share no NVLink on the "
                          f"{m.layout.name} layout", where=where)
    if m.nvswitch:
        # pairs go through the switches: only nvidia-smi's per-pair NV# shows one link fewer
        m.topo_pair_override[key] = have - 1
        return
    # direct mesh: one cable between the pair is absent (neither end counts it)
    la = next(x for x in a.links if x.kind == "gpu" and x.remote == b.ident and x.up)
    lb = next(x for x in b.links if x.kind == "gpu" and x.remote == a.ident
              and x.index == la.remote_link)
    for g, lk in ((a, la), (b, lb)):
        g.links.remove(lk)
        g.link_count -= 1
        for x in g.links:  # NVML numbers the remaining links 0..n-1
            if x.index > lk.index:
                x.index -= 1
                peer = m.gpu(x.remote) if x.kind == "gpu" else None
                if peer is not None:
                    back = next((y for y in peer.links if y.kind == "gpu"
                                 and y.remote == g.ident and y.remote_link == x.index + 1), None)
                    if back is not None:
                        back.remote_link = x.index


def _gpu_missing(m: Machine, f: Fault, where: str) -> None:
    g = _gpu(m, f.args[0], where)
    if len(m.gpus) == 1:
        raise NvtopoError("the node would have no GPU left", where=where)
    m.gpus.remove(g)
    for key in [k for k in m.topo_pair_override if g.ident in k]:
        del m.topo_pair_override[key]


def _ib_port_down(m: Machine, f: Fault, where: str) -> None:
    nic = _nic(m, f.args[0], where)
    if nic.port.state != "4: ACTIVE":
        raise NvtopoError(f"{nic.name} port 1 is already down", where=where)
    nic.port.state, nic.port.phys = "1: DOWN", "3: Disabled"
    nic.card_rate = nic.card_rate or nic.port.rate_gbps
    nic.port.rate_gbps = 10 if nic.link_layer == "InfiniBand" else nic.port.rate_gbps


def _ib_rate(m: Machine, f: Fault, where: str) -> None:
    nic = _nic(m, f.args[0], where)
    rate = float(f.args[1])
    rate_v = int(rate) if rate.is_integer() else rate
    if nic.port.state != "4: ACTIVE":
        raise NvtopoError(f"{nic.name} port 1 is down: it has no rate", where=where)
    if not 0 < rate < nic.port.rate_gbps:
        raise NvtopoError(f"{rate_v} Gb/s is not below {nic.name}'s "
                          f"{nic.port.rate_gbps} Gb/s", where=where)
    nic.card_rate = nic.card_rate or nic.port.rate_gbps
    nic.port.rate_gbps = rate_v


def _pcie_width(m: Machine, f: Fault, where: str) -> None:
    g = _gpu(m, f.args[0], where)
    width = int(f.args[1])
    if width not in (1, 2, 4, 8, 16) or width >= g.pcie_max_width:
        raise NvtopoError(f"width must be 1, 2, 4 or 8 lanes below the GPU's x"
                          f"{g.pcie_max_width}", where=where)
    g.pcie_width = width


def _pcie_gen(m: Machine, f: Fault, where: str) -> None:
    g = _gpu(m, f.args[0], where)
    gen = int(f.args[1])
    if not 1 <= gen < g.pcie_max_gen:
        raise NvtopoError(f"generation must be 1-{g.pcie_max_gen - 1}, below the GPU's "
                          f"Gen{g.pcie_max_gen}", where=where)
    g.pcie_gen = gen


def _nic_swap(m: Machine, f: Fault, where: str) -> None:
    a, b = _nic(m, f.args[0], where), _nic(m, f.args[1], where)
    if a.name == b.name:
        raise NvtopoError("swap needs two different devices", where=where)
    if a.link_layer != b.link_layer:
        raise NvtopoError(f"{a.name} ({a.link_layer}) and {b.name} ({b.link_layer}) are "
                          "different kinds of device: swap two of one kind", where=where)
    if m.layout.nics.placement.gpu_nic is None:
        raise NvtopoError(f"the {m.layout.name} layout does not name each GPU's NIC "
                          "(nics.placement.gpu_nic): a swap cannot be told apart", where=where)
    if not moved_gpus(m, a.name, b.name):
        raise NvtopoError(f"swapping {a.name} and {b.name} moves no GPU's expected NIC",
                          where=where)
    # the devices trade PCI places (and the NUMA node, bus-derived netdev name with them)
    a.bdf, b.bdf = b.bdf, a.bdf
    a.numa, b.numa = b.numa, a.numa
    a.netdev, b.netdev = b.netdev, a.netdev
    a.place, b.place = b.place, a.place


def _nic_far(m: Machine, f: Fault, where: str) -> None:
    """The device leaves its switch for a root port of a host bridge of its own on the same
    NUMA node: NODE to the GPUs of its socket, SYS to the others (a card in the wrong slot)."""
    from dataclasses import replace

    from .pci import CLS_BRIDGE, INTEL

    nic = _nic(m, f.args[0], where)
    old = m.pci[nic.bdf]
    if len(old.chain) == 1:
        raise NvtopoError(f"{nic.name} already sits on a CPU root port", where=where)
    dom = nic.bdf.split(":")[0]
    bus = 1 + max(int(b.split(":")[1], 16) for b in m.pci if b.split(":")[0] == dom)
    if bus + 1 > 0xFF:
        dom = f"{1 + max(int(b.split(':')[0], 16) for b in m.pci):04x}"
        bus = 0
    rp, ep = f"{dom}:{bus:02x}:01.0", f"{dom}:{bus + 1:02x}:00.0"
    hb = f"pci{dom}:{bus:02x}"
    m.pci[rp] = replace(old, bdf=rp, host_bridge=hb, chain=[rp], vendor=INTEL, device=0x352A,
                        cls=CLS_BRIDGE, role="")
    m.pci[ep] = replace(old, bdf=ep, host_bridge=hb, chain=[rp, ep])
    del m.pci[nic.bdf]
    nic.bdf = ep


def _nic_rename(m: Machine, f: Fault, where: str) -> None:
    nic = _nic(m, f.args[0], where)
    if m.nic(f.args[1]) is not None:
        raise NvtopoError(f"{f.args[1]} is already a device of the node", where=where)
    nic.name = f.args[1]  # PCI place, GUID and port as they were: only the name changes


def moved_gpus(m: Machine, a: str, b: str) -> List[Tuple[int, str]]:
    """(GPU ident, expected NIC) for each GPU whose expected NIC a swap of ``a``/``b`` moves.

    A NIC moves away from a GPU unless the other NIC of the swap is expected
    for that GPU as well (then the GPU still has both at the same places).
    """
    gpu_nic = m.layout.nics.placement.port_map or {}
    out = []
    for g in sorted(m.gpus, key=lambda x: x.ident):
        names = gpu_nic.get(g.ident, [])
        for x in names:
            other = b if x == a else a if x == b else None
            if other is not None and other not in names:
                out.append((g.ident, x))
    return out


def _fabric(m: Machine, f: Fault, where: str) -> None:
    if not m.nvswitch:
        raise NvtopoError(f"the {m.layout.name} layout has no NVSwitch fabric", where=where)
    for g in m.gpus:
        for lk in g.links:
            if lk.kind == "switch":
                lk.up = False
        g.fabric_state = 1
    m.topo_pair_override.clear()


def _counters(m: Machine, f: Fault, where: str) -> None:
    nic = _nic(m, f.args[0], where)
    name, value = f.args[1], int(f.args[2])
    if name not in ERROR_COUNTERS:
        raise NvtopoError(f"unknown error counter {name!r}; known: "
                          f"{', '.join(ERROR_COUNTERS)}", where=where)
    if value < 1 or value > ERROR_COUNTERS[name]:
        raise NvtopoError(f"{name} counts 1-{ERROR_COUNTERS[name]} (a "
                          f"{ERROR_COUNTERS[name].bit_length()}-bit counter)", where=where)
    nic.port.counters[name] = value


def _peermem(m: Machine, f: Fault, where: str) -> None:
    if m.layout.nics.gpudirect_rdma is not True:
        raise NvtopoError(f"the {m.layout.name} layout does not expect GPUDirect RDMA "
                          "(nics.gpudirect_rdma)", where=where)
    m.peermem = False


def _c2c(m: Machine, f: Fault, where: str) -> None:
    g = _gpu(m, f.args[0], where)
    if not g.c2c_links:
        raise NvtopoError(f"the {m.layout.name} layout has no NVLink-C2C (not a Grace "
                          "superchip)", where=where)
    if not g.c2c_enabled:
        raise NvtopoError(f"GPU{f.args[0]}'s NVLink-C2C is already down", where=where)
    if f.kind == "c2c-down":
        g.c2c_enabled, g.c2c_up = False, 0
        return
    up = int(f.args[1])
    have = g.c2c_links if g.c2c_up is None else g.c2c_up
    if not 0 < up < have:
        raise NvtopoError(f"active links must be 1-{have - 1}, below GPU{f.args[0]}'s {have} "
                          "(c2c-down takes them all down)", where=where)
    g.c2c_up = up
def _storage(m: Machine, f: Fault, where: str) -> None:
    from .storage import counts

    if m.layout.storage.gds is None or m.layout.storage.gds.expected is not True:
        raise NvtopoError(f"the {m.layout.name} layout does not expect GPUDirect Storage "
                          "(storage.gds.expected)", where=where)
    if f.kind in ("nvme-far", "nvme-bunched", "nvme-missing"):
        k, n = int(f.args[0]), counts(m)[1]
        if k >= n:
            raise NvtopoError(f"no data drive {k}: the {m.layout.name} layout has {n} "
                              f"(0-{n - 1})", where=where)
        m.storage.setdefault(f.kind[5:], set()).add(k)  # far, bunched, missing
    elif f.kind == "iommu-on":
        m.storage["iommu"] = "DMA-FQ"
    else:
        m.storage["no_nvidia_fs"] = True


_APPLY = {"nvlink-down": _nvlink_down, "nvlink-degraded": _nvlink_degraded,
          "gpu-missing": _gpu_missing, "ib-port-down": _ib_port_down, "ib-rate": _ib_rate,
          "pcie-width": _pcie_width, "pcie-gen": _pcie_gen, "nic-affinity-swap": _nic_swap,
          "nic-rename": _nic_rename, "nic-far": _nic_far,
          "fabric-not-started": _fabric, "counters": _counters, "peermem-missing": _peermem,
          "c2c-down": _c2c, "c2c-links": _c2c,
          "nvme-far": _storage, "nvme-bunched": _storage, "nvme-missing": _storage,
          "iommu-on": _storage, "no-nvidia-fs": _storage}

__all__ = ["KINDS", "Fault", "parse", "apply", "moved_gpus", "Port", "Optional"]
