"""The facts of one NIC that decide its role (``checks/roles.py``): its card model, link
layers, port rates, subnet managers, PCI functions and port states, each read from the
model's RDMA device and kept in the shared view while views are shared
(:func:`facts.per_nic`)."""

from __future__ import annotations

from typing import Any, List, Optional, Set

from ..model import Topology
from . import facts as F


def _hca(topo: Topology, name: str) -> Any:
    nic = topo.nic(name)
    return nic.sysfs if nic is not None else None


@F.per_nic
def card(topo: Topology, name: str) -> Optional[str]:
    """The card model: ``hca_type`` (read even without PCI), else the PCI device id."""
    h = _hca(topo, name)
    if h is None:
        return None
    dev = h.pci.device_id if h.pci is not None else None
    return str(h.hca_type or dev or "") or None


@F.per_nic
def layers(topo: Topology, name: str) -> Set[str]:
    h = _hca(topo, name)
    return {str(p.link_layer) for p in (h.ports if h is not None else []) if p.link_layer}


def _rate(p: Any) -> Optional[float]:
    r = p.rate_gbps if isinstance(p.rate_gbps, (int, float)) else p.rate.gbps
    return float(r) if isinstance(r, (int, float)) and not isinstance(r, bool) else None


@F.per_nic
def rates(topo: Topology, name: str) -> Set[float]:
    """Rates of the NIC's active ports (a port that is not up has no meaningful rate)."""
    h = _hca(topo, name)
    return {r for p in (h.ports if h is not None else [])
            if p.state == "ACTIVE" for r in [_rate(p)] if r is not None}


@F.per_nic
def sm_lids(topo: Topology, name: str) -> Set[int]:
    """SM LIDs of the NIC's InfiniBand ports (0: no subnet manager answered)."""
    h = _hca(topo, name)
    return {int(p.sm_lid) for p in (h.ports if h is not None else [])
            if p.link_layer == "InfiniBand" and isinstance(p.sm_lid, int) and p.sm_lid > 0}


@F.per_nic
def single_function(topo: Topology, name: str) -> Optional[bool]:
    """No other RDMA device on the same card (PCI function; in a paste with no PCI address,
    the system image GUID the functions of one card share); None where neither is known.
    Storage and management cards are dual-port beside single-port compute cards."""
    h = _hca(topo, name)
    bdf = h.pci_address if h is not None else None
    if not isinstance(bdf, str):
        img = h.sys_image_guid if h is not None and not h.soft else None
        if not img:
            return None
        return not any(m.name != name and m.sysfs is not None
                       and m.sysfs.sys_image_guid == img for m in topo.nics)
    stem = bdf.rsplit(".", 1)[0]
    return not any(m.name != name and m.sysfs is not None
                   and isinstance(m.sysfs.pci_address, str)
                   and m.sysfs.pci_address.rsplit(".", 1)[0] == stem for m in topo.nics)


#: Card models (``CA type``) of Mellanox/NVIDIA virtual functions: Connect-IB, ConnectX-4,
#: -4 Lx, -5, -5 Ex, -6 VFs and the ConnectX family VF (ConnectX-6 Dx and later).  A VF is
#: handed to a pod or a VM to carry its data.
VF_CARDS = frozenset(("MT4114", "MT4116", "MT4118", "MT4120", "MT4122", "MT4124", "MT4126"))
#: Card models that top out below :data:`MANAGEMENT_BELOW_GBPS` (ConnectX-4 Lx and its VF,
#: ConnectX-6 Lx: 25/50 Gb/s Ethernet): a management kind, where the input has no rate.
SLOW_CARDS = frozenset(("MT4117", "MT4118", "MT4127"))
#: The unicast LID range an SM assigns (0: none yet; 0xffff: unassigned, a port never
#: configured).
_LID_MAX = 0xBFFF


def held_lids(topo: Topology, name: str) -> Set[int]:
    """LIDs the subnet manager gave the NIC's InfiniBand ports (a unicast LID beside an SM
    LID), whatever the port's state: a port that went Down/Polling keeps the LID it held."""
    h = _hca(topo, name)
    return {int(p.lid) for p in (h.ports if h is not None else [])
            if p.link_layer == "InfiniBand" and isinstance(p.lid, int)
            and 0 < p.lid <= _LID_MAX and isinstance(p.sm_lid, int) and p.sm_lid > 0}


def _active(topo: Topology, name: str) -> bool:
    """An active port (with or without a rate in the input)."""
    h = _hca(topo, name)
    return any(p.state == "ACTIVE" for p in (h.ports if h is not None else []))


def _siblings(topo: Topology, name: str) -> List[str]:
    """The other functions of the NIC's card (the same system image GUID)."""
    h = _hca(topo, name)
    img = h.sys_image_guid if h is not None else None
    return [m.name for m in topo.nics if img and m.name != name and m.sysfs is not None
            and m.sysfs.sys_image_guid == img]


def _down(topo: Topology, name: str) -> bool:
    """Every port of the NIC known and none active."""
    h = _hca(topo, name)
    ports = h.ports if h is not None else []
    return bool(ports) and all(p.state is not None and p.state != "ACTIVE" for p in ports)
