"""Every finding code nvtopo can emit, declared once: :data:`CATALOG`.

Each :class:`Check` says its family, what it means, the evidence it needs, its severity
ladder by how sure that evidence is, its default thresholds (where it has any), the action
it suggests and an example subject.  ``nvtopo checks`` lists the catalog, ``nvtopo checks
CODE`` explains one code, and ``docs/checks.md`` is generated from it (a test keeps them
equal: ``python tests/regenerate_examples.py --checks-doc`` rewrites it).

How sure the evidence is (``sure``) is one of :data:`SURENESS`:

- ``observed``: seen on a known data path (a compute port, a GPU the driver lists, a layout
  chosen by the user or fitted by its facts) -> the ladder's ``observed`` severity
  (an error for codes that can be errors);
- ``inferred``: an expectation whose only evidence is inferred (``[I]`` in a layout), or a
  port whose role is unknown -> the ladder's ``inferred`` severity (at most a warning);
- ``missing``: the evidence is not in the input -> an ``info`` "not checked" note (the
  family's ``*.not_checked`` code, named by :attr:`Ladder.missing`).

:func:`severity` is the one ladder; :func:`nvtopo.checks.findings.demote` is its form for
callers that pass a severity and whether the evidence is inferred.

Thresholds: :func:`thresholds` gives a family's error-counter thresholds, merged in one place:
the catalog's defaults < the layout's ``error_thresholds`` < ``--thresholds FILE`` (per node
class; set for one run by :func:`using_thresholds`).
"""

from __future__ import annotations

import contextlib
import contextvars
from ..plain import field, plain
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple
from .cluster_codes import CLUSTER_ROWS

#: How sure a finding's evidence is, surest first.
SURENESS = ("observed", "inferred", "missing")
#: Where a code is emitted: one node's check, or the cross-node view (``nvtopo cluster``).
SCOPES = ("node", "cluster")


@plain(frozen=True)
class Ladder:
    """A code's severity by how sure its evidence is.  ``missing``: the code of the "not
    checked" note given instead when the evidence is missing (None: the code is that note,
    or the family gives none)."""

    observed: str
    inferred: str
    missing: Optional[str] = None

    @property
    def severities(self) -> Tuple[str, ...]:
        """The severities this code can be emitted with, worst first."""
        return tuple(s for s in ("error", "warning", "info") if s in (self.observed,
                                                                     self.inferred))

    def describe(self) -> str:
        if self.observed == self.inferred:
            text = f"always {self.observed}"
        else:
            text = f"{self.observed} when observed; {self.inferred} when inferred or unsure"
        if self.missing:
            text += f"; evidence missing: info ({self.missing})"
        return text


@plain(frozen=True)
class Check:
    code: str
    family: str
    scope: str
    meaning: str
    evidence: str
    ladder: Ladder
    action: str
    #: an example subject, as the ``subject`` field shows it
    subject: str = "node"
    #: default thresholds (counter name -> the most that is not an error)
    thresholds: Mapping[str, int] = field(default_factory=dict)

    def example(self) -> str:
        """An example finding line, as ``check --brief`` shows one."""
        return f"{self.ladder.severities[0]:<8}{self.code}  {self.subject}: {self.meaning}"

    def to_dict(self) -> Dict[str, Any]:
        return {"code": self.code, "family": self.family, "scope": self.scope,
                "meaning": self.meaning, "evidence": self.evidence,
                "severities": list(self.ladder.severities),
                "ladder": {"observed": self.ladder.observed,
                           "inferred": self.ladder.inferred,
                           "missing": self.ladder.missing},
                "action": self.action, "example_subject": self.subject,
                "thresholds": dict(self.thresholds)}


#: NVLink error counters: above these (cumulative since the driver loaded) it is an error;
#: nonzero below is a warning.  A layout may override them (``nvlink.error_thresholds``).
NVLINK_THRESHOLDS: Mapping[str, int] = {"replay": 1000, "recovery": 10, "crc_flit": 1000,
                                        "crc_data": 100, "ecc": 100}
#: InfiniBand/RoCE port error counters above these are errors (nonzero below is a warning); a
#: saturated counter is always an error.  A layout may override them (``nics.error_thresholds``).
IB_THRESHOLDS: Mapping[str, int] = {
    "symbol_error": 100, "link_error_recovery": 10, "link_downed": 10,
    "port_rcv_errors": 100, "port_rcv_remote_physical_errors": 100,
    "port_rcv_switch_relay_errors": 1000, "port_xmit_discards": 1000,
    "port_xmit_constraint_errors": 100, "port_rcv_constraint_errors": 100,
    "local_link_integrity_errors": 10, "excessive_buffer_overrun_errors": 10,
    "VL15_dropped": 1000}
#: A GPU's PCIe replays since the driver loaded (``Replays Since Reset``) above this are an
#: error; nonzero below is a warning.
PCIE_THRESHOLDS: Mapping[str, int] = {"replay": 100}
#: The threshold of a counter no table names.
OTHER_THRESHOLD = {"nvlink": 1000, "ib": 100, "pcie": 100}

_SURE = Ladder("error", "warning")
_ERROR = Ladder("error", "error")
_WARN = Ladder("warning", "warning")
_INFO = Ladder("info", "info")


def _sure(family: str) -> Ladder:
    return Ladder("error", "warning", f"{family}.not_checked")


def _warn(family: str) -> Ladder:
    return Ladder("warning", "warning", f"{family}.not_checked")


_NOT_CHECKED = ("the input does not say: a family could not decide what it checks (no source "
                "gives the facts, a source could not be read, or the layout gives no "
                "expectation)")
_MORE = "give more evidence: take a snapshot on the node (nvtopo snapshot) rather than a paste"


def _nc(family: str, what: str, evidence: str, action: str = _MORE) -> Tuple[Any, ...]:
    """A family's "not checked" note."""
    return (f"{family}.not_checked", family, "node", f"{what} not checked: {_NOT_CHECKED}",
            evidence, _INFO, action)


_ROWS: Tuple[Tuple[Any, ...], ...] = (
    # code, family, scope, meaning, evidence, ladder, action, subject, thresholds
    # -- gpu
    ("gpu.missing", "gpu", "node", "fewer GPUs than the layout, where the evidence shows a "
     "GPU gone (sysfs lists it and the driver does not, a port-map NIC's slot without its GPU, "
     "the board's PCIe switches), or short of a layout the user named; a count alone under "
     "auto-selection is a warning", "GPU list (NVML, topo text), "
     "sysfs PCI tree, the layout's GPU count", _sure("gpu"), "check dmesg for Xid 79 and "
     "lspci for the device; reseat or replace the GPU; in a VM or container, check which "
     "GPUs are passed through", "GPU7"),
    ("gpu.lost", "gpu", "node", "a GPU NVML lost while probing (fallen off the bus)", "NVML",
     _ERROR, "check dmesg for Xid 79 / AER errors; drain the node, reset the GPU or reboot",
     "GPU3"),
    ("gpu.extra", "gpu", "node", "more GPUs than the layout", "GPU list, the layout's GPU "
     "count", _WARN, "is this the right layout? give --layout NAME or --layout-file FILE"),
    ("gpu.model", "gpu", "node", "a GPU model (NVML name) other than the layout's", "NVML "
     "GPU names, the layout's model", _sure("gpu"), "is this the right layout? give --layout "
     "NAME or --layout-file FILE", "GPU2"),
    ("gpu.no_driver", "gpu", "node", "a GPU on the PCI bus that no NVIDIA driver holds "
     "(no driver bound, or nouveau): its NVLinks, NVML facts and P2P are unknown",
     "sysfs: the PCI function's bound driver (uevent DRIVER=)", _sure("gpu"),
     "install or load the NVIDIA driver (modprobe nvidia; dmesg says why it did not bind); "
     "blacklist nouveau", "GPU0"),
    ("gpu.passthrough", "gpu", "node", "a GPU bound to vfio-pci (or pci-stub): passed "
     "through to a virtual machine, not this host's to drive", "sysfs: the PCI function's "
     "bound driver", _INFO, "nothing, if the GPU is meant for a VM", "GPU0"),
    _nc("gpu", "GPU count or model", "a GPU list with names"),
    # -- fabric
    ("fabric.not_started", "fabric", "node", "NVSwitch fabric not started (Fabric Manager not "
     "running), or no NV# between any pair on an NVSwitch system", "NVML fabric state, topo "
     "text", _sure("fabric"), "start nvidia-fabricmanager (systemctl status "
     "nvidia-fabricmanager) and check its log"),
    ("fabric.in_progress", "fabric", "node", "NVSwitch fabric training still in progress",
     "NVML fabric state", _ERROR, "wait a minute and re-check; if it stays in progress: "
     "check nvidia-fabricmanager"),
    ("fabric.failed", "fabric", "node", "NVSwitch fabric training completed with a failure",
     "NVML fabric state and status", _ERROR, "check nvidia-fabricmanager's log; restart it"),
    ("fabric.unhealthy", "fabric", "node", "the fabric reports a GPU's health degraded",
     "NVML fabric health", _sure("fabric"), "check nvidia-fabricmanager's log", "GPU0"),
    ("fabric.no_clique", "fabric", "node", "fabric completed but no cluster UUID or clique "
     "(a multi-node NVLink domain without its partition)", "NVML fabric info", _sure("fabric"),
     "check nvidia-fabricmanager and the NVLink partition"),
    ("nvswitch.missing", "fabric", "node", "fewer NVSwitches reached than the layout has",
     "NVML NVSwitch links, the layout's switch count", _sure("fabric"),
     "nvidia-smi nvlink -R shows which switch each link reaches; service the baseboard"),
    _nc("fabric", "fabric state", "NVML fabric state"),
    # -- nvlink
    ("nvlink.link_down", "nvlink", "node", "an NVLink that should be up is down (NVML's rule: "
     "not inactive by design)", "NVML link states, nvlink -s text", _sure("nvlink"),
     "nvidia-smi nvlink -s -i N shows the link states; reset the GPU, then reseat",
     "GPU3 link 7"),
    ("nvlink.links_missing", "nvlink", "node", "a GPU lists fewer NVLinks than the layout "
     "gives it", "NVML link count, the layout", _sure("nvlink"), "reset the GPU; service the "
     "baseboard if it stays", "GPU3"),
    ("nvlink.pair_degraded", "nvlink", "node", "fewer NVLinks between a GPU pair than the "
     "layout (NV#)", "topo matrix NV#, NVML links", _sure("nvlink"), "check the links of "
     "both GPUs (nvidia-smi nvlink -s); reset, then reseat", "GPU2-GPU6"),
    ("nvlink.pair_unexpected", "nvlink", "node", "NVLinks between a pair the layout does not "
     "link", "topo matrix NV#, the layout", _WARN, "is this the right layout?", "GPU0-GPU5"),
    ("nvlink.errors", "nvlink", "node", "NVLink error counters nonzero (warning) or above "
     "the threshold (error)", "NVML NVLink error counters", _SURE, "clear the counters and "
     "watch them grow; reseat the GPU or service the baseboard if they do", "GPU3 link 7",
     NVLINK_THRESHOLDS),
    ("nvlink.mig", "nvlink", "node", "MIG mode is on: its NVLinks are inactive by design",
     "NVML MIG mode", _WARN, "disable MIG (nvidia-smi -mig 0) where NVLink is needed", "GPU1"),
    ("nvlink.generation", "nvlink", "node", "an NVLink generation other than the layout's",
     "NVML link version", _WARN, "is this the right layout?", "GPU0"),
    _nc("nvlink", "NVLink state", "NVML link states or nvlink -s text"),
    # -- p2p
    ("p2p.not_supported", "p2p", "node", "P2P off between GPUs the layout links by NVLink "
     "(on every such pair: one setting, one finding for the node)", "NVML P2P status, "
     "topo -p2p text", _sure("p2p"), "check the driver's P2P setting, ACS and IOMMU "
     "(nvidia-smi topo -p2p n)", "GPU0-GPU1"),
    _nc("p2p", "P2P status", "NVML P2P status or topo -p2p text"),
    # -- pcie
    ("pcie.width_low", "pcie", "node", "a GPU's or NIC's PCIe hop narrower than both ends "
     "allow", "sysfs PCIe link width (NVML current vs max otherwise)", _sure("pcie"),
     "reseat the card or riser; check the slot", "GPU5"),
    ("pcie.gen_low", "pcie", "node", "a PCIe hop slower than both ends allow (a warning: idle "
     "GPUs lower their speed, unless the GPU is known busy)", "sysfs PCIe link speed, NVML",
     _sure("pcie"), "re-check under load; reseat the card if it stays slow", "GPU5"),
    ("pcie.gen_idle", "pcie", "node", "PCIe links below their top speed on GPUs the input "
     "shows idle (a power-saving performance state such as P8, or the clocks reason Idle): "
     "power saving by design, one note for the node", "-q performance state and clocks "
     "reasons, NVML/sysfs link speed", _INFO, "to test the link, re-check under load"),
    ("pcie.width_design", "pcie", "node", "a laptop GPU's PCIe link narrower than the GPU "
     "allows: the notebook's design", "the GPU name (Laptop, Mobile, Max-Q), link width",
     _INFO, "nothing to do", "GPU0"),
    ("pcie.replays", "pcie", "node", "a GPU's PCIe replay counter nonzero (warning) or above "
     "the threshold (error): the link retransmits corrupted packets", "NVML PCIe replay "
     "counter, -q Replays Since Reset", _SURE, "watch whether it grows; check AER errors; "
     "reseat the card (and its riser/cable)", "GPU2", PCIE_THRESHOLDS),
    _nc("pcie", "PCIe links", "sysfs or NVML PCIe link state"),
    # -- nic
    ("nic.missing", "nic", "node", "a compute NIC of the layout is absent", "RDMA devices, "
     "PCI placement, the layout's NICs", _sure("nic"), "check lspci and dmesg (mlx5_core) "
     "for the card; reseat or replace it", "mlx5_3"),
    ("nic.placement", "nic", "node", "a GPU has no compute NIC at the layout's path (PIX/PXB)",
     "topo matrix or sysfs PCI tree, the layout's port map", _sure("nic"),
     "check the NIC cards against the vendor's port map (a missing or moved card)", "GPU3"),
    ("nic.names_differ", "nic", "node", "every GPU has a NIC at the layout's path, under "
     "other names than the port map's (a renaming)", "PCI placement, RDMA device names",
     _warn("nic"), "update NCCL_IB_HCA and configs that pin NICs by name"),
    ("nic.gpudirect_missing", "nic", "node", "GPUDirect RDMA module (nvidia_peermem) not "
     "loaded where the layout expects it", "loaded kernel modules", _ERROR,
     "modprobe nvidia_peermem"),
    _nc("nic", "NIC placement", "RDMA devices with PCI placement"),
    # -- ib
    ("ib.port_down", "ib", "node", "a port not ACTIVE/LinkUp (compute: error; storage, "
     "management or role unknown: warning)", "ibstat/sysfs port state, the port's role",
     _sure("ib"), "check the cable/transceiver and the switch port (ibstat, mlxlink); then "
     "reseat", "mlx5_4 port 1"),
    ("ib.rate_low", "ib", "node", "a port's rate below the layout's (or the best of its "
     "role, link layer and card model)", "port rate, the layout", _sure("ib"),
     "check the cable/transceiver and the switch port speed (mlxlink), then reseat",
     "mlx5_0 port 1"),
    ("ib.link_layer", "ib", "node", "a compute port on another link layer than the layout's "
     "(role unknown: warning)", "port link layer, the port's role", _sure("ib"),
     "set the port type with mlxconfig (LINK_TYPE_P1) and reboot, or use the layout for this "
     "network", "mlx5_0 port 1"),
    ("ib.counter_errors", "ib", "node", "port error counters nonzero (warning), above the "
     "threshold or saturated (error)", "sysfs port counters", _SURE, "clear the counters "
     "(perfquery -x -R) and watch them grow; symbol errors point at the cable",
     "mlx5_2 port 1", IB_THRESHOLDS),
    ("ib.no_rdma_driver", "ib", "node", "an RDMA-capable NIC function with no RDMA device "
     "(its RDMA driver is not bound)", "sysfs PCI class and class/infiniband", _WARN,
     "load and bind the RDMA driver (modprobe mlx5_ib)", "0000:3b:00.0"),
    ("ib.ports_unknown", "ib", "node", "a pasted ibstat/ibv_devinfo/ibstatus cut before a "
     "device's ports, or ended by ibpanic", "ticket text", _WARN, "paste the whole output, "
     "or take a snapshot on the node", "mlx5_3"),
    _nc("ib", "InfiniBand/RoCE ports", "ibstat text or sysfs class/infiniband"),
    # -- numa
    ("numa.placement", "numa", "node", "a GPU on another NUMA node than the layout's",
     "sysfs NUMA affinity, topo matrix", _sure("numa"), "check the BIOS NUMA setting "
     "(NPS/SNC) and the card's slot", "GPU4"),
    ("numa.spread", "numa", "node", "GPUs not spread over the NUMA nodes as the layout says "
     "(one cause: the BIOS NUMA setting)", "sysfs NUMA affinity", _sure("numa"),
     "check the BIOS NUMA setting (NPS/SNC, interleaving)"),
    _nc("numa", "NUMA placement", "NUMA affinity (sysfs or topo text)"),
    # -- c2c
    ("c2c.disabled", "c2c", "node", "NVLink-C2C disabled on a Grace superchip's GPU",
     "NVML C2C mode", _sure("c2c"), "check the driver and firmware; reset the GPU", "GPU1"),
    ("c2c.no_links", "c2c", "node", "no NVLink-C2C link on a GPU that should have them",
     "NVML C2C links", _sure("c2c"), "check the driver and firmware; reset the GPU", "GPU1"),
    ("c2c.link_down", "c2c", "node", "NVLink-C2C links inactive", "NVML C2C link states",
     _sure("c2c"), "check the driver and firmware; reset the GPU", "GPU1"),
    ("c2c.links_low", "c2c", "node", "fewer NVLink-C2C links than the layout", "NVML C2C "
     "link count", _sure("c2c"), "check the driver and firmware", "GPU1"),
    ("c2c.gpu_numa_missing", "c2c", "node", "a GPU's memory is not a NUMA node of its own "
     "where the layout expects it", "sysfs NUMA nodes", _WARN, "by design under CDMM; "
     "otherwise check the driver's NUMA mode (numactl -H)", "GPU0"),
    _nc("c2c", "NVLink-C2C", "NVML C2C facts"),
    # -- gds
    ("gds.drive_far", "gds", "node", "a data drive farther from every GPU than the layout's "
     "storage path", "sysfs PCI tree, NVMe drives", _sure("gds"), "move the drive to a bay "
     "behind a GPU's PCIe switch, or check the bay cabling", "nvme3n1"),
    ("gds.drives", "gds", "node", "another number of data drives than the layout",
     "NVMe drives", _warn("gds"), "check for a missing or failed drive"),
    ("gds.drives_unsorted", "gds", "node", "OS and data drives cannot be told apart",
     "NVMe drive sizes and placement", _warn("gds"), "read the drive models and the RAID "
     "layout (cat /proc/mdstat)"),
    ("gds.drives_bunched", "gds", "node", "data drives not spread over the GPU switches",
     "sysfs PCI tree", _warn("gds"), "spread the data drives over the GPU switches"),
    ("gds.no_nvidia_fs", "gds", "node", "nvidia_fs not loaded where the layout expects GDS",
     "loaded kernel modules", _sure("gds"), "install nvidia-gds and modprobe nvidia_fs"),
    ("gds.iommu", "gds", "node", "the IOMMU translates for GPUs or drives (GDS needs it off "
     "or in passthrough)", "sysfs IOMMU groups", _warn("gds"), "boot with iommu=pt (or the "
     "IOMMU off)"),
    ("gds.drive_state", "gds", "node", "an NVMe controller not live", "sysfs NVMe state",
     _warn("gds"), "check dmesg for nvme resets and the drive's health", "nvme3"),
    ("gds.nvme_unsupported", "gds", "node", "gdscheck says NVMe is unsupported",
     "gdscheck -p text", _sure("gds"), "check nvidia_fs, the IOMMU and the inbox nvme driver"),
    ("gds.gpu_unsupported", "gds", "node", "gdscheck says a GPU does not support GDS",
     "gdscheck -p text", _sure("gds"), "GDS needs a data-centre or professional GPU; check "
     "the GPU model and driver"),
    ("gds.platform", "gds", "node", "gdscheck's platform section could not be read",
     "gdscheck -p text", _warn("gds"), "read the PLATFORM INFO section of gdscheck -p"),
    _nc("gds", "GPUDirect Storage", "NVMe drives in sysfs, gdscheck -p text"),
    # -- mesh (WireGuard, one node)
    ("mesh.no_peers", "mesh", "node", "a WireGuard interface has no peers", "wg show dump",
     _WARN, "add the mesh's peers", "wg0"),
    ("mesh.peers_stale", "mesh", "node", "every peer (two or more) of an interface is stale: "
     "the fault is on this node's side", "wg handshakes", _SURE, "check the underlay route "
     "and that UDP to the listen port is allowed", "wg0"),
    ("mesh.peer_stale", "mesh", "node", "a peer's latest handshake is older than 180 s or "
     "never happened (error with a persistent keepalive)", "wg handshakes", _SURE,
     "check that peer's node is up and its endpoint reachable over UDP", "wg0 peer ab12cd34"),
    ("mesh.mtu", "mesh", "node", "tunnel MTU plus overhead above the underlay's MTU (error "
     "when the underlay is found by route)", "interface MTUs, routes", _SURE,
     "lower the tunnel's MTU or raise the underlay's", "wg0"),
    ("mesh.down", "mesh", "node", "a WireGuard interface is down", "sysfs operstate", _WARN,
     "ip link set wg0 up (or wg-quick up wg0)", "wg0"),
    ("mesh.errors", "mesh", "node", "a WireGuard interface counted errors since it came up",
     "sysfs interface counters", _WARN, "tx errors: addresses no peer's allowed IPs cover; "
     "rx: packets failing the allowed-IPs check", "wg0"),
    ("mesh.drops", "mesh", "node", "a WireGuard interface counted drops since it came up",
     "sysfs interface counters", _WARN, "check the allowed IPs and the peers' endpoints",
     "wg0"),
    ("mesh.sockets_only", "mesh", "node", "the mesh is the only inter-node path (no RDMA "
     "port active): NCCL uses sockets over it", "RDMA port states, WireGuard", _INFO,
     "expect socket-transport bandwidth for collectives across nodes"),
    ("mesh.peers_not_checked", "mesh", "node", "WireGuard peers not checked (no permission, "
     "no wg, an older snapshot)", "wg show dump", _INFO, "run nvtopo as root or with "
     "CAP_NET_ADMIN", "wg0"),
    ("mesh.mtu_not_checked", "mesh", "node", "tunnel MTU not checked (unknown underlay or "
     "MTU)", "interface MTUs, routes", _INFO, _MORE, "wg0"),
    # -- imex (nvidia-imex-ctl: docs/imex.md)
    ("imex.domain_not_up", "imex", "node", "the IMEX domain is DOWN (error on a tray of a "
     "multi-node NVLink fabric) or DEGRADED (a warning; error where this tray is the one "
     "unavailable), naming the unavailable members", "nvidia-imex-ctl -N: domain state, "
     "member status", _sure("imex"), "systemctl status nvidia-imex; check nodes_config.cfg"),
    ("imex.peer_unreachable", "imex", "node", "a connection between two READY members not "
     "C (both ends and the letter named; one way where the other direction is C)",
     "nvidia-imex-ctl -N connection matrix", _sure("imex"), "check both nodes' IMEX daemons "
     "and the network between them", "IMEX node 4 -> node 9"),
    ("imex.version_mismatch", "imex", "node", "members run different IMEX versions, or the "
     "matrix says !V! (communication disabled)", "nvidia-imex-ctl -N versions and matrix",
     _sure("imex"), "install one driver on every tray of the domain", "IMEX versions"),
    ("imex.not_active", "imex", "node", "IMEX not installed, or no IMEX domain configured, on "
     "a GB200/GB300 tray (unknown: no compute domain active is not a fault)",
     "nvidia-imex-ctl, NVML platform info, the layout's domain", _INFO, "start the IMEX "
     "daemon or a ComputeDomain for workloads that span trays", "IMEX"),
    _nc("imex", "IMEX domain", "nvidia-imex-ctl -N output", "run nvtopo as root on the tray "
        "(nvidia-imex-ctl needs it); paste the whole -N output"),
    # -- nccl (an NCCL debug log, with the node's evidence where given: docs/nccl.md)
    ("nccl.net_socket_fallback", "nccl", "node", "NCCL sent inter-node traffic over sockets "
     "(NET/Socket) where InfiniBand/RoCE exists (other hosts used it, an IPoIB interface, the "
     "node's RDMA devices); a warning where the log cannot tell", "NCCL debug log (NET/IB, "
     "NET/Socket, Channel lines), the node's RDMA devices", Ladder("error", "warning"),
     "give the job /dev/infiniband and libibverbs, leave NCCL_IB_DISABLE unset, name the HCAs "
     "with NCCL_IB_HCA", "trainer-0"),
    ("nccl.socket_ifname", "nccl", "node", "a virtual interface (bridge, container, tunnel) "
     "among NCCL's bootstrap or socket interfaces", "NCCL debug log (Bootstrap/NET/Socket "
     "Using lines)", _WARN, "set NCCL_SOCKET_IFNAME to the real interface", "virbr0"),
    ("nccl.gdr_disabled", "nccl", "node", "GPU Direct RDMA off: by distance (the GPU and HCA "
     "not under one PCIe switch: the node's path named, an error where the node's PCI tree "
     "puts them under one switch) or by missing peer memory / dma-buf (an error)",
     "NCCL debug log (GPU Direct RDMA lines, NET/IB/<n>/GDRDMA), the node's PCI tree and "
     "modules", Ladder("error", "warning"), "load and register nvidia_peermem or use dma-buf; "
     "place GPUs next to their HCAs; NCCL_TOPO_FILE in a VM", "node-a07"),
    ("nccl.p2p_disabled", "nccl", "node", "GPUs joined through host memory (SHM) instead of "
     "P2P: an error where NCCL says P2P is blocked or the node has NVLink between them; a "
     "warning naming the variable that turned it off", "NCCL debug log (Channel ... via SHM, "
     "NCCL_P2P_* echoed), the node's NVLink and PCIe paths, IOMMU", Ladder("error", "warning"),
     "unset NCCL_P2P_DISABLE/NCCL_P2P_LEVEL; disable ACS on the PCIe path or boot iommu=pt",
     "GPU3-GPU7"),
    ("nccl.nvls_unavailable", "nccl", "node", "NVLS (NVLink SHARP) not available or failed: a "
     "warning where the node is NVSwitch-connected or NCCL failed setting it up; a note "
     "where the log alone cannot tell", "NCCL debug log (NVLS lines, nvls channels), the "
     "node's NVSwitch facts", Ladder("warning", "info"), "run nvidia-fabricmanager; expose "
     "/dev/nvidia-caps and the IMEX channel to the container; fewer communicators when "
     "multicast memory runs out", "h800-pod-0"),
    ("nccl.hca_wrong", "nccl", "node", "NCCL uses the wrong HCAs: a RoCE port mixed into an "
     "InfiniBand set, a storage or management NIC used for compute (error), a compute NIC "
     "left out (warning)", "NCCL debug log (NET/IB Using), the node's NIC roles",
     Ladder("error", "warning"), "name the compute HCAs with NCCL_IB_HCA", "mlx5_2"),
    ("nccl.port_error", "nccl", "node", "an InfiniBand port event during the run (port error, "
     "port flapping, LID/GID change)", "NCCL debug log (Got async event)", _ERROR,
     "read the port's error counters and the switch log; replace the cable or transceiver",
     "mlx5_5 port 1"),
    ("nccl.net_error", "nccl", "node", "NCCL's network failed (ibv_* call failed, a queue "
     "pair's async error, a completion with an error status)", "NCCL debug log (NCCL WARN "
     "lines)", _ERROR, "check the GID index (RoCE), the ports' counters and reachability",
     "mlx5_0"),
    ("nccl.busbw_low", "nccl", "node", "nccl-tests' all_reduce_perf peak bus bandwidth under "
     "80% of what the layout's expected_bandwidth states (inside one node: allreduce_busbw; "
     "across nodes: one compute NIC's figure, a warning), the bottleneck named from the log "
     "beside it", "nccl-tests output, the layout's expected_bandwidth, the NCCL log",
     Ladder("error", "warning", "nccl.not_checked"), "give the NCCL log of the run: its "
     "transports name the bottleneck", "dgx-h100-9603"),
    ("nccl.topo_differs", "nccl", "node", "NCCL's topology XML differs from the node's "
     "evidence: GPUs one lists and the other does not, a GPU and its compute NIC under one "
     "switch on the node but joined only through the CPU in NCCL's tree (a VM's flat tree), "
     "a GPU under another NUMA node, a graph reaching the network at PHB/SYS where every GPU "
     "has its compute NIC at PIX/PXB", "NCCL_TOPO_DUMP_FILE / NCCL_GRAPH_DUMP_FILE XML, the "
     "node's PCI paths and NUMA affinity", _WARN, "give NCCL the node's tree: nvtopo snapshot --format nccl-topo, "
     "then NCCL_TOPO_FILE"),
    _nc("nccl", "nccl-tests bus bandwidth", "nccl-tests output and a layout's "
        "expected_bandwidth", "give the node's evidence or --layout NAME; run all_reduce_perf "
        "up to 8 GB (-e 8G)"),
    # -- events (a pasted kernel log: docs/events.md)
    ("events.xid", "events", "node", "an NVIDIA Xid whose documented action is a GPU reset, a "
     "reboot, a drain or a hardware inspection (error), or restarting the application, or "
     "none (warning); the Xid 45s it caused folded in", "kernel log (Xid lines), the Xid "
     "table", _SURE, "do the Xid's action (NVIDIA's Xid catalog)", "GPU3"),
    ("events.nvlink", "events", "node", "an NVLink Xid (74, 137, 144-150, 155) on its link; "
     "non-fatal: a warning", "kernel log (Xid lines)", _SURE, "reset the GPU; reseat or "
     "replace the link's cable or tray if it recurs", "GPU3 link 11"),
    ("events.off_bus", "events", "node", "a GPU fallen off the bus (Xid 79 or the driver's "
     "line), with the fatal AER errors and Xid 45s it caused", "kernel log", _ERROR,
     "drain and reboot; inspect power, cooling, seating and the PCIe link", "GPU3"),
    ("events.gsp_timeout", "events", "node", "the GPU System Processor did not answer (Xid "
     "119, GSP heartbeat or RPC timeout lines)", "kernel log", _ERROR, "reset the GPU; "
     "reboot if it recurs", "GPU3"),
    ("events.after_unseen", "events", "node", "Xid 45/43 (the driver cleaning up after an "
     "error) whose cause the log does not hold", "kernel log", _INFO, "read the log from "
     "before the excerpt", "GPU3"),
    ("events.sxid", "events", "node", "an NVSwitch SXid (fatal: error; non-fatal: warning), "
     "one per switch and code, naming its links", "kernel log (SXid lines)", _SURE,
     "reset the switch's GPUs and restart nvidia-fabricmanager; inspect a recurring link",
     "0000:86:00.0"),
    ("events.aer_uncorrected", "events", "node", "an uncorrected PCIe AER error (fatal: "
     "error; non-fatal: warning)", "kernel log (AER lines)", _SURE, "drain; reseat the "
     "device and its riser", "GPU3"),
    ("events.aer_corrected", "events", "node", "corrected PCIe AER errors: a warning on a "
     "device the data path crosses (GPU, NIC, NVSwitch, a bridge above them), a note "
     "elsewhere", "kernel log (AER lines)", Ladder("warning", "info"), "watch the AER "
     "counters over time (nvtopo trend)", "bridge 0000:00:03.1 above GPU0 0000:03:00.0"),
    ("events.aer_counted", "events", "node", "a snapshot's sysfs AER counters show "
     "uncorrected (non-fatal or fatal) errors since boot: a warning on a device the data "
     "path crosses, a note elsewhere", "sysfs aer_dev_nonfatal, aer_dev_fatal",
     Ladder("warning", "info"), "read the kernel log for the AER lines", "GPU3"),
    ("events.port_flap", "events", "node", "a NIC port down and up twice or more within an "
     "hour (error on a compute port; warning where its role is unknown)", "kernel log "
     "(mlx5/NIC link lines)", _SURE, "inspect the cable and transceivers", "mlx5_5 port 1"),
    ("events.port_down", "events", "node", "a NIC port that went down once (or is down at the "
     "log's end)", "kernel log", _WARN, "check the port now (ibstat, ip link)",
     "mlx5_5 port 1"),
    ("events.nvme_reset", "events", "node", "an NVMe controller reset or I/O timeouts "
     "(error when the controller went down)", "kernel log (nvme lines)", _SURE, "read the "
     "drive's smart-log and PCIe link", "NVMe nvme2"),
    ("events.not_checked", "events", "node", "kernel log events not joined to a device (the "
     "log redacts their addresses) or not read (the log cut)", "kernel log", _INFO, _MORE),
    # -- trend (several snapshots of a node over time: nvtopo trend)
    ("trend.rising", "trend", "node", "an error counter (NVLink, InfiniBand port, PCIe replay, "
     "AER) that rose between the last two snapshots of its latest epoch: still climbing",
     "the counters of several snapshots of the node", _WARN, "inspect the link or port now, "
     "before it fails", "node-017 GPU3 link 11"),
    ("trend.link_flapping", "trend", "node", "an InfiniBand port whose link_downed rose by "
     "more than 10 over the snapshots: a flapping link (reported instead of trend.rising)",
     "the counters of several snapshots of the node", _ERROR, "inspect the cable and "
     "transceivers", "node-017 mlx5_5 port 1"),
    ("trend.not_checked", "trend", "node", "a host with one snapshot: no trend", "snapshots",
     _INFO, "give two or more snapshots of the node, taken at different times", "node-017"),
    # -- source
    ("source.disagreement", "source", "node", "two sources said different things about one "
     "fact", "every source of the fact", _WARN, "re-take the snapshot; report which source "
     "is wrong", "GPU0-GPU1"),
    ("source.outvoted", "source", "node", "a text (topo -m, a pasted -q or nvlink text) "
     "states a fact otherwise than NVML and sysfs, which agree: they decide, and the text "
     "is stale or edited", "every source of the fact (NVML and sysfs read live)", _WARN,
     "re-take the text or the snapshot; the checks use what NVML and sysfs read", "GPU4"),
    ("source.gpus_not_listed", "source", "node", "GPUs on the PCI bus that no driver-level "
     "source lists (a job given part of the node, or GPUs the driver did not initialise)",
     "sysfs PCI tree, NVML/topo text", _WARN, "check CUDA/NVIDIA_VISIBLE_DEVICES and the "
     "job's cgroup; dmesg for GPUs the driver did not initialise"),
    ("source.cut", "source", "node", "not checked: a pasted topo matrix stops before its "
     "last row (a cut paste); the devices after it, and the GPU pairs among them, have no "
     "path to check", "topo -m text (its header against its rows)", _INFO, "paste the whole "
     "nvidia-smi topo -m output, or take a snapshot on the node (nvtopo snapshot)", "GPU3"),
    ("source.probe_crashed", "source", "node", "a live probe failed inside nvtopo: every "
     "fact it reads is unknown", "the probe's status", _ERROR, "a bug in nvtopo: re-take "
     "the snapshot, and report the error it names", "nvml probe"),
    ("source.probe_incomplete", "source", "node", "a live probe stopped part-way (its "
     "deadline, or its evidence limit): the facts it did not reach are unknown, named, and "
     "the verdict does not pass on the rest", "the probe's status and what it recorded",
     _ERROR, "re-take the snapshot with a longer --timeout; a probe cut again points at the "
     "device it was reading when it stopped", "nvml probe"),
    ("source.probe_unanswered", "source", "node", "a live probe did not answer within "
     "--timeout: every fact it reads is unknown (an error for the NVML and sysfs probes, "
     "whose facts the verdict stands on; a warning for the others)", "the probe's status",
     Ladder("error", "warning"), "re-take the "
     "snapshot with a longer --timeout", "nvml probe"),

)




def _build() -> Dict[str, Check]:
    out: Dict[str, Check] = {}
    for row in _ROWS + CLUSTER_ROWS:
        code, family, scope, meaning, evidence, ladder, action = row[:7]
        if isinstance(ladder, tuple):  # a row kept in another module: (observed, inferred)
            ladder = Ladder(*ladder)
        subject = row[7] if len(row) > 7 else "node"
        thresholds = row[8] if len(row) > 8 else {}
        assert code not in out, code
        assert scope in SCOPES, code
        out[code] = Check(code, family, scope, meaning, evidence, ladder, action,
                          subject, thresholds)
    return out


#: code -> its :class:`Check`, families in report order.
CATALOG: Dict[str, Check] = _build()


#: Version of ``nvtopo checks --format json`` (docs/schemas/catalog.schema.json).
CATALOG_SCHEMA_VERSION = 1


def document(codes: Optional[Tuple[str, ...]] = None) -> Dict[str, Any]:
    """``nvtopo checks --format json``: every code (or ``codes``), in catalog order."""
    chosen = CATALOG.values() if codes is None else (CATALOG[c] for c in codes)
    return {"schema_version": CATALOG_SCHEMA_VERSION, "checks": [c.to_dict() for c in chosen]}


def get(code: str) -> Optional[Check]:
    return CATALOG.get(code)


def severity(code: str, sure: str) -> str:
    """The severity of ``code`` when its evidence is ``sure`` (one of :data:`SURENESS`)."""
    assert sure in SURENESS, sure
    if sure == "missing":
        return "info"
    ladder = CATALOG[code].ladder if code in CATALOG else _SURE
    return ladder.observed if sure == "observed" else ladder.inferred


def cap(severity_: str, sure: str) -> str:
    """``severity_`` as the generic ladder allows it for evidence ``sure``: an error whose
    evidence is only inferred is a warning; missing evidence is a note."""
    if sure == "missing":
        return "info"
    if sure == "inferred" and severity_ == "error":
        return _SURE.inferred
    return severity_


# --- thresholds ------------------------------------------------------------------------------

#: family -> the error-counter thresholds given with ``--thresholds`` for this run.
_OVERRIDES: "contextvars.ContextVar[Mapping[str, Mapping[str, int]]]" = \
    contextvars.ContextVar("nvtopo_thresholds", default={})
#: the codes whose thresholds a family's counters are judged by.
THRESHOLD_CODES = {"nvlink": "nvlink.errors", "ib": "ib.counter_errors",
                   "pcie": "pcie.replays"}


def thresholds(family: str, layout_given: Any = None) -> Dict[str, int]:
    """``family``'s error-counter thresholds: the catalog's defaults, then the layout's
    ``error_thresholds`` (``layout_given``, a dict or None), then ``--thresholds``."""
    out = dict(CATALOG[THRESHOLD_CODES[family]].thresholds)
    if isinstance(layout_given, dict):
        out.update(layout_given)
    out.update(_OVERRIDES.get().get(family, {}))
    return out


def threshold(family: str, table: Mapping[str, int], counter: str) -> int:
    """``counter``'s threshold in ``table``, else the family's threshold for other counters."""
    return table.get(counter, OTHER_THRESHOLD[family])


@contextlib.contextmanager
def using_thresholds(overrides: Optional[Mapping[str, Mapping[str, int]]]) -> Iterator[None]:
    """Judge counters by ``overrides`` (family -> counter -> threshold) inside the block."""
    token = _OVERRIDES.set(dict(overrides or {}))
    try:
        yield
    finally:
        _OVERRIDES.reset(token)


__all__ = ["CATALOG", "Check", "Ladder", "SURENESS", "cap", "get", "severity", "thresholds",
           "using_thresholds", "NVLINK_THRESHOLDS", "IB_THRESHOLDS", "PCIE_THRESHOLDS"]
