"""RDMA devices (InfiniBand HCAs, RoCE NICs) and their ports, from sysfs
(``class/infiniband``, ``docs/sysfs.md §4``), and the counter vocabulary every reader shares:
which port counters are errors, the width each saturates at, which count data.
"""


from __future__ import annotations

from typing import Dict, List, Optional, Union

from .codec import Record, fld, record
from .pcie import PciFunction

#: Per-port error counters (PMA PortCounters, ``ports/N/counters/``), and the value at which
#: each saturates (they stick at their maximum instead of wrapping).  The one list of which
#: counters are errors: the sysfs probe, the checks, ``diff`` and ``simulate`` use it.
ERROR_COUNTERS: Dict[str, int] = {
    "symbol_error": 0xFFFF,
    "link_error_recovery": 0xFF,
    "link_downed": 0xFF,
    "port_rcv_errors": 0xFFFF,
    "port_rcv_remote_physical_errors": 0xFFFF,
    "port_rcv_switch_relay_errors": 0xFFFF,
    "port_xmit_discards": 0xFFFF,
    "port_xmit_constraint_errors": 0xFF,
    "port_rcv_constraint_errors": 0xFF,
    "local_link_integrity_errors": 0xF,
    "excessive_buffer_overrun_errors": 0xF,
    "VL15_dropped": 0xFFFF,
}
#: Other counters with a fixed width.
OTHER_SATURATING: Dict[str, int] = {"port_xmit_wait": 0xFFFFFFFF}
#: Data counters (4-byte words) and their name in ``data_bytes``.
DATA_COUNTERS: Dict[str, str] = {"port_xmit_data": "xmit", "port_rcv_data": "rcv"}


@record
class PortRate(Record):
    """``ports/N/rate`` (``400 Gb/sec (4X NDR)``), parsed."""

    raw: Optional[str] = fld("rate as read")
    gbps: Optional[Union[int, float]] = fld("Gb/s")
    lanes: Optional[int] = fld("lanes (4X -> 4)")
    width: Optional[str] = fld("4X")
    speed: Optional[str] = fld("NDR, HDR ...")


@record
class Port(Record):
    """One port of an RDMA device (``class/infiniband/DEV/ports/N/``)."""

    port: int = fld("the port number (the directory name)", default=0)
    state: Optional[str] = fld("state: ACTIVE, DOWN, INIT, ARMED")
    state_code: Optional[int] = fld("state's number")
    phys_state: Optional[str] = fld("phys_state: LinkUp, Polling, Disabled ...")
    phys_state_code: Optional[int] = fld("phys_state's number")
    rate_gbps: Optional[Union[int, float]] = fld("rate, for ACTIVE ports only")
    rate: PortRate = fld("rate, parsed", factory=PortRate)
    link_layer: Optional[str] = fld("link_layer: InfiniBand, Ethernet")
    transport: Optional[str] = fld("IB, RoCE, iWARP (from link_layer and node_type)")
    netdev: Optional[str] = fld("gid_attrs/ndevs/0 (RoCE), else the function's net/ entry")
    lid: Optional[int] = fld("lid")
    sm_lid: Optional[int] = fld("sm_lid")
    gid0: Optional[str] = fld("gids/0")
    port_guid: Optional[str] = fld("the interface id of gids/0")
    gid0_type: Optional[str] = fld("gid_attrs/types/0")
    gid0_netdev: Optional[str] = fld("gid_attrs/ndevs/0")
    counters: Optional[Dict[str, Optional[int]]] = fld(
        "counters/ file -> value (null where unreadable; null as a whole without counters/)")
    counters_unknown: Dict[str, str] = fld("counter -> why unreadable", factory=dict)
    counters_saturated: List[str] = fld("counters stuck at their maximum", factory=list)
    error_counters: Dict[str, int] = fld("the nonzero error counters", factory=dict)
    data_bytes: Dict[str, Optional[int]] = fld("xmit, rcv: the data counters times 4",
                                               factory=dict)
    hw_counters: Optional[Dict[str, Optional[int]]] = fld("hw_counters/")
    hw_counters_unknown: Dict[str, str] = fld("hw counter -> why unreadable", factory=dict)
    unknown: Dict[str, str] = fld("attribute -> why unreadable", factory=dict)
    rate_note: Optional[str] = fld("why the rate of a port that is not up is not used",
                                   omit="none")
    counters_status: str = fld("read, absent, unreadable, not read", default="absent")
    hw_counters_status: str = fld("read, absent, unreadable, not read", default="absent")
    counters_note: Optional[str] = fld("why counters/ was not read", omit="none")

    @property
    def gid_prefix(self) -> Optional[str]:
        """The subnet prefix of GID 0 (its first 64 bits, ``fe80:0000:0000:0000``)."""
        if not self.gid0:
            return None
        groups = self.gid0.split(":")
        return ":".join(groups[:4]) if len(groups) == 8 else None


@record
class Netdev(Record):
    """A network interface of the device's PCI function (``device/net/NAME``)."""

    name: str = fld("the interface name", default="")
    dev_port: Optional[int] = fld("dev_port")
    dev_id: Optional[int] = fld("dev_id")
    type: Optional[int] = fld("type (ARPHRD: 32 InfiniBand, 1 Ethernet)")


@record
class Hca(Record):
    """One RDMA device (``nics[].extra.sysfs``)."""

    name: str = fld("the class/infiniband entry", default="")
    source: Optional[str] = fld("the pasted text that stated it (ibstat-text, ibv-devinfo-text, "
                                "ibstatus-text); left out for sysfs", omit="none")
    pci_address: Optional[str] = fld("the PCI function (null for software devices)")
    numa_node: Optional[int] = fld("the function's numa_node")
    parent: str = fld("pci, auxiliary (a sub-function) or none", default="none")
    soft: bool = fld("a software device (rxe, siw): no PCI parent", default=False)
    node_type: Optional[str] = fld("node_type: CA, RNIC ...")
    node_guid: Optional[str] = fld("node_guid")
    sys_image_guid: Optional[str] = fld("sys_image_guid")
    fw_ver: Optional[str] = fld("fw_ver")
    hca_type: Optional[str] = fld("hca_type")
    board_id: Optional[str] = fld("board_id")
    node_desc: Optional[str] = fld("node_desc (rdma-ndd: \"<hostname> <device>\"); left out "
                                   "where not read", omit="none")
    device_path: str = fld("where the device link points", default="")
    netdevs: List[Netdev] = fld("the function's network interfaces", factory=list)
    unknown: Dict[str, str] = fld("attribute -> why unreadable", factory=dict)
    pci: Optional[PciFunction] = fld("the PCI function's placement")
    numa_unknown: Optional[str] = fld("why numa_node is null", omit="none")
    pci_note: Optional[str] = fld("why there is no placement", omit="none")
    hw_counters: Optional[Dict[str, Optional[int]]] = fld("device-level hw_counters/")
    hw_counters_status: str = fld("read, absent, unreadable, not read", default="absent")
    skipped_ports: List[str] = fld("ports/ entries that are no port number", factory=list)
    ports: List[Port] = fld("its ports", factory=list)
    gpu_paths: Dict[str, Optional[str]] = fld("GPU label (as the model numbers GPUs) -> "
                                              "PIX/PXB/PHB/NODE/SYS from the PCI tree",
                                              factory=dict)
    nearest_gpus: List[str] = fld("the GPUs at the best path", factory=list)
    nearest_gpu_path: Optional[str] = fld("that path")

    def relabel(self, rename: Dict[str, str]) -> None:
        """Name GPUs as the merged model does (``rename``: old label -> new)."""
        self.gpu_paths = {rename.get(k, k): v for k, v in self.gpu_paths.items()}
        self.nearest_gpus = [rename.get(k, k) for k in self.nearest_gpus]


@record
class GpuDirect(Record):
    """GPUDirect RDMA modules (``module/``)."""

    nvidia_peermem: bool = fld("module/nvidia_peermem", default=False)
    nvidia_peermem_version: Optional[str] = fld("module/nvidia_peermem/version")
    nv_peer_mem: bool = fld("module/nv_peer_mem (legacy MLNX_OFED)", default=False)
    peermem_loaded: bool = fld("either is loaded", default=False)
    dmabuf: str = fld("always unknown: sysfs does not show it",
                      default="unknown (not visible in sysfs)")
    nvidia_fs: bool = fld("module/nvidia_fs (GPUDirect Storage)", default=False)


__all__ = ["ERROR_COUNTERS", "OTHER_SATURATING", "DATA_COUNTERS", "PortRate", "Port",
           "Netdev", "Hca", "GpuDirect"]
