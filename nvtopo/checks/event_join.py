"""Kernel log events joined to the model (``docs/events.md`` §3): which GPU, NIC, NVMe drive
or bridge a PCI address (or a net device name) is, and the subject a finding about it gets.

Without a model of the node (a log read alone), an address is named as the log names it,
with the driver that printed it where the line says (``nvidia 0000:03:00.0``); an address the
log redacted is named as such, never guessed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from . import subject as S
from ..model import Topology, pci_bdf

Bdf = Tuple[int, int, int, int]

#: Drivers whose devices carry a job's data (a GPU, an NVSwitch, an RDMA NIC).
DATA_DRIVERS = ("nvidia", "nvidia-nvswitch", "mlx5_core", "mlx4_core", "bnxt_en", "irdma")


class Joined:
    """What a model says a PCI address is: ``kind`` (gpu, nic, nvme, bridge, None), the
    subject, how a message names it."""

    def __init__(self, kind: Optional[str], subject: S.Subject, name: str,
                 gpu: Optional[int] = None, nic: Optional[str] = None) -> None:
        self.kind, self.subject, self.name, self.gpu, self.nic = kind, subject, name, gpu, nic

    @property
    def data_path(self) -> bool:
        return self.kind in ("gpu", "nic", "bridge", "switch")


class Where:
    """The model's devices by PCI address (compared as integers) and NICs by net device."""

    def __init__(self, topo: Topology) -> None:
        # a model whose devices have no PCI address (a topo -m alone) joins nothing: the log
        # is then named as if alone, never "not a device of the model"
        self.modelled = topo.sysfs is not None or any(
            g.pci_bus_id or g.sysfs is not None for g in topo.gpus) or any(
            n.pci_bus_id or (n.sysfs is not None and n.sysfs.pci_address) for n in topo.nics)
        self.gpus: Dict[Bdf, Any] = {}
        self.nics: Dict[Bdf, str] = {}
        self.netdevs: Dict[str, Tuple[str, Optional[str]]] = {}
        self.nvme: Dict[Bdf, str] = {}
        self.nvme_names: Dict[str, str] = {}
        self.above: Dict[Bdf, List[str]] = {}
        for g in topo.gpus:
            for addr in (g.pci_bus_id, g.sysfs.pci_address if g.sysfs else None):
                key = pci_bdf(addr)
                if key is not None:
                    self.gpus[key] = g
            if g.sysfs is not None:
                self._chain(g.sysfs.chain, f"GPU{g.index} {g.sysfs.pci_address}")
        for n in topo.nics:
            hca = n.sysfs
            for addr in (n.pci_bus_id, hca.pci_address if hca else None):
                key = pci_bdf(addr)
                if key is not None:
                    self.nics[key] = n.name
            if hca is not None:
                for nd in hca.netdevs:
                    self.netdevs[nd.name] = (n.name, hca.pci_address)
                if hca.pci is not None:
                    self._chain(hca.pci.chain, f"{n.name} {hca.pci_address}")
        if topo.sysfs is not None:
            for d in topo.sysfs.nvme:
                key = pci_bdf(d.pci_address)
                if key is not None:
                    self.nvme[key] = d.controller or d.pci_address
                if d.controller:
                    self.nvme_names[d.controller] = d.pci_address

    def _chain(self, chain: List[str], below: str) -> None:
        for addr in chain[:-1] if chain else ():
            key = pci_bdf(addr)
            if key is not None:
                self.above.setdefault(key, []).append(below)

    def join(self, addr: Optional[str], driver: Optional[str] = None,
             link: Optional[int] = None, port: Optional[int] = None) -> Joined:
        """The device at ``addr`` (``driver``: the one the line names)."""
        if addr is None:
            return Joined(None, S.other("a device (address redacted in the log)"),
                          "a device whose address the log redacts")
        key = pci_bdf(addr)
        if key is not None and key in self.gpus:
            g = self.gpus[key]
            subj = S.link(g.index, link) if link is not None else S.gpu(g.index, g.label)
            return Joined("gpu", subj, f"GPU{g.index} ({addr})", gpu=g.index)
        if key is not None and key in self.nics:
            name = self.nics[key]
            subj = S.port(name, port) if port is not None else S.nic(name)
            return Joined("nic", subj, f"{name} ({addr})", nic=name)
        if key is not None and key in self.nvme:
            ctrl = self.nvme[key]
            return Joined("nvme", S.other(f"NVMe {ctrl} {addr}"), f"NVMe drive {ctrl} ({addr})")
        if key is not None and key in self.above:
            below = self.above[key]
            text = f"bridge {addr} above {', '.join(below[:3])}" + (
                f" and {len(below) - 3} more" if len(below) > 3 else "")
            return Joined("bridge", S.other(text), text)
        said = f"{driver} {addr}" if driver else addr
        kind = _kind_by_driver(driver) if not self.modelled else None
        if self.modelled:
            return Joined(None, S.other(addr), f"{said} (not a GPU, NIC or drive of the model)")
        return Joined(kind, S.other(addr), said)

    def gpu_named(self, addr: Optional[str], link: Optional[int] = None) -> Joined:
        """A GPU's address (Xid, fallen off the bus): ``GPU 0000:3b:00.0`` without a model."""
        got = self.join(addr, link=link)
        if got.kind is None and addr is not None and not self.modelled:
            subj = S.other(f"GPU {addr}" + (f" link {link}" if link is not None else ""))
            return Joined("gpu", subj, f"GPU {addr}")
        if addr is None:
            return Joined(None, S.other("a GPU (address redacted in the log)"),
                          "a GPU whose address the log redacts")
        return got

    def netdev(self, name: Optional[str]) -> Optional[Tuple[str, Optional[str]]]:
        return self.netdevs.get(name) if name else None


def _kind_by_driver(driver: Optional[str]) -> Optional[str]:
    """What a log alone says a device is, by the driver that printed the line."""
    if driver == "nvidia":
        return "gpu"
    if driver == "nvidia-nvswitch":
        return "switch"
    if driver in DATA_DRIVERS:
        return "nic"
    if driver == "nvme":
        return "nvme"
    return None


__all__ = ["Joined", "Where", "DATA_DRIVERS"]
