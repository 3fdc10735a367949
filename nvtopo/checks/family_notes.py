"""What each family of checks looks at, in prose: the introduction ``nvtopo checks`` and
``docs/checks.md`` give each family before its codes (the codes themselves are declared in
:mod:`nvtopo.checks.catalog`)."""

from __future__ import annotations

from typing import Dict

#: What each node family checks, in words (docs/checks.md and ``nvtopo checks`` show it).
FAMILY_NOTES: Dict[str, str] = {
    "gpu": (
        'GPU count and model (NVML name) against the layout; a GPU NVML lost mid-probe; a GPU'
        ' on the PCI bus (sysfs) the driver does not list. Fewer GPUs than the layout is an '
        'error only where the evidence shows a GPU gone: sysfs lists it and the driver does '
        "not, NVML lost it, the port map's NIC of a slot (on a board with one compute NIC "
        "per GPU and no port map: the compute NICs in PCI bus order, on bare metal) is on "
        "the bus with no GPU near it "
        "(the finding's message then names that slot, its subject staying the index the tools"
        ' leave out, and the GPUs present keep their NIC and NUMA checks in their own slots),'
        " or sysfs shows the GPUs behind the board's PCIe switches (bare metal). A count "
        'alone (a pasted matrix, a VM\'s flat bus) is one `gpu.missing` warning on `node`: "6 '
        'of 8 GPUs seen: GPUs missing, or a VM/container given a subset?" (half the board or '
        'less with its GPU name: no layout, see layout selection) under auto-selection; '
        'against a layout the user named (`--layout`, `--layout-file`: what the node must be) '
        'it is an error'),
    "fabric": (
        'NVSwitch systems: fabric state/status (NVML), no NV# between any pair (topo text), '
        'switches reached'),
    "nvlink": (
        "links down (NVML's rule: not inactive by design; a pasted GPU that states no link "
        'up (`nvlink -s` "all links are inActive", every link `D` in `dcgmi nvlink -s`) is '
        "`nvlink.link_down` on that GPU where the layout expects NVLink on it, or, with no "
        "layout, where its model is an SXM/HGX part and a GPU of that model in the paste has "
        "links up (error), or an odd number of other GPUs above two have links up, or it is "
        "an H100/H200 NVL card (warning); nothing where the layout expects none, and one "
        "`nvlink.not_checked` note for the node where nothing says it has NVLinks (a "
        "GeForce or unbridged PCIe card, by design; down if bridged); one GPU's "
        '`nvlink -s` listing every link an NVSwitch layout gives it, or a mesh layout the '
        "user named whose pairs use all of the GPU's links (DGX-1V), some `<inactive>`: each "
        'of those, [nvml.md §5](nvml.md#5-judging-link-states)), NV# per pair against the '
        'layout (subject `GPU2-GPU6`), error counters (nonzero: warning; above `replay` 1000,'
        ' `recovery` 10, `crc_flit` 1000, `crc_data` 100, `ecc` 100: error; a layout may '
        'override with `nvlink.error_thresholds`); links the input names with a state it '
        'cannot read (a damaged `dcgmi nvlink -s` letter such as a small `d`, an NVML error) '
        'are one `nvlink.not_checked` note naming them, never a pass about them and never a '
        'fault'),
    "p2p": (
        'P2P status (NVML or a pasted `topo -p2p`) between GPUs the layout links by NVLink; '
        'off on every such pair is one setting: one finding for the `node`'),
    "pcie": (
        "each GPU's and NIC's PCIe hops against min(max of both ends) (sysfs; NVML current vs"
        ' max otherwise); one degraded NIC link is one finding naming every RDMA device '
        'behind it (a RoCE bond and a sub-function on one card: "mlx5_2 and mlx5_bond_0 share'
        ' one PCIe link, which runs at Gen4"), not one per device name: narrower is an error,'
        " except on a laptop GPU (a Laptop/Mobile/Max-Q name: `pcie.width_design`, a note); "
        "slower is judged by the load the input states (an NVML or `-q` utilisation sample "
        "≥ 50 %, the `-q`/`-q -x` performance state: P0-P2 full performance, P5 and above "
        "power saving; the clocks reason Idle): under load an error; idle, one "
        "`pcie.gen_idle` note for the node (idle GPUs lower their speed by design), unless "
        "another GPU of the model, idle the same way, keeps its link at full speed (an "
        "error); load unknown, a warning. Each GPU's PCIe replay counter: nonzero a warning, "
        "above `replay` 100 an error (`--thresholds`: family `pcie`)"),
    "nic": (
        'a layout without NIC facts lists NIC placement as not checked; the HGX 8-GPU layouts'
        ' check one NIC per GPU at PIX/PXB by placement (`nics.per_gpu`, docs/layouts.md: one'
        ' `nic.placement` warning naming the GPUs without one where a card looks moved off, a'
        ' `nic.not_checked` note for no RDMA NICs or fewer/shared NICs by design); compute '
        'NICs present (which NICs are compute NICs is the one answer of the role resolver, '
        'below; where the layout names none: the NICs at PIX/PXB to a GPU, less those beyond '
        "the layout's compute count that run another link layer than its compute NICs, e.g. a"
        " RoCE storage card behind a GPU's switch, plus a compute card moved off its GPU's "
        'switch or left by a missing GPU, known by its card model, link layer and rate), each'
        " GPU at the layout's path to its NIC, matched by PCI placement, not by name (a GPU "
        'whose port-map NIC is absent or far but which has another NIC at that path is a '
        'renaming: one `nic.names_differ` warning for the node gives the mapping, for '
        '`NCCL_IB_HCA` and configs that pin NICs by name; `nic.placement` only where a GPU '
        'has no NIC that close; when names differ from the port map, that GPU is named by '
        'structure, "GPU3 has no NIC at PIX or closer (nearest: mlx5_0 at NODE)", not by the '
        "map's name that is another GPU's NIC on this node, and the `nic.names_differ` "
        'warning speaks only for the GPUs it lists); a port-map NIC that is absent is '
        "`nic.missing` only when too few GPUs have a NIC at the map's path to account for it:"
        " GPUs not shown take their slots' NICs with them (a VM or container given 5 of 8 "
        'GPUs with every host NIC has no `nic.missing`, whatever the NICs are called, and '
        'with the GPUs renumbered, which slots are gone unknown, a NIC name absent is at most'
        ' one `nic.names_differ` warning), and a GPU shown without a NIC that close is its '
        '`nic.placement` error, not also the port-map name its slot is guessed to have; where'
        " sysfs shows the board's own PCIe switches (bare metal, a GPU short is gone) the "
        "card of a gone GPU's slot that is off the bus stays `nic.missing`; GPUDirect RDMA "
        'module where the layout expects it'),
    "ib": (
        'every port has the role the role resolver gives its NIC (below), never the port '
        "map's name alone: ports not ACTIVE/LinkUp (compute: error; storage/management: "
        'warning, "not a compute port"; role unknown: warning, "role unknown: why"), rate '
        "below the layout's (or the best of the ports of the same role, link layer and card "
        'model, `hca_type`: a 25 Gb/s management card is not "below" 200 Gb/s storage cards),'
        ' wrong link layer (a compute port; a port the port map names whose role is unknown '
        'is a warning saying so; a compute port on Ethernet at 200 Gb/s where the layout has '
        'InfiniBand at 400 is one `ib.link_layer` error that names both rates, not also '
        "`ib.rate_low`: another network's rate is not compared with the InfiniBand ports'), "
        'error counters (nonzero: warning; above threshold or saturated: error; `expected` is'
        ' the limit, `symbol_error <= 100`, `actual` the counters seen); an RDMA-capable NIC '
        'function (class 0x0207, or a ConnectX Ethernet PF; not an SR-IOV VF, not the second '
        'port of a RoCE LAG) with no RDMA device under `class/infiniband` is a NIC whose RDMA'
        ' driver is not bound (warning, subject: its PCI address). A software RDMA device '
        '(rxe, siw) is known by its place (`devices/virtual/`); an HCA whose path names no '
        'PCI address is not one: its ports are checked like any other. A pasted '
        "`ibstat`/`ibv_devinfo`/`ibstatus` cut before a device's ports, or ended by "
        '`ibpanic:`, is a warning `ib.ports_unknown` (never an error; '
        '[ticket-inputs.md](ticket-inputs.md))'),
    "numa": (
        "each GPU's NUMA node (from NUMA affinity, never CPU affinity, which shows the "
        "caller's cpuset) against the layout; two or more GPUs off their node are one cause "
        '(the BIOS NUMA setting: NPS/SNC, interleaving): one finding for the `node`, '
        '`expected`/`actual` per GPU'),
    "c2c": (
        "Grace superchips (GH200, GB200): NVLink-C2C mode and links from NVML; each GPU's "
        'memory as its own NUMA node where the layout expects it ([nvml.md '
        '§9](nvml.md#9-nvlink-c2c-grace-superchips))'),
    "gds": (
        "GPUDirect Storage where the layout's `storage.gds` expects it: each data drive at "
        "the layout's path (PXB) or better to some GPU, spread over the GPU switches, "
        '`nvidia_fs` loaded, the IOMMU off or in passthrough; OS drives told apart by size, '
        'then placement ([storage.md](storage.md)). Without the expectation: only a '
        'controller not `live`, and `nvidia_fs` loaded with a translating IOMMU'),
    "events": (
        "a pasted kernel log (`dmesg`, `journalctl -k`, `kern.log`, `nvidia-bug-report.log`): "
        "one finding per root cause (Xid by its documented action, NVLink Xids on their link, "
        "a GPU fallen off the bus, GSP timeouts, NVSwitch SXids, PCIe AER, NIC port flaps, "
        "NVMe resets), its consequences folded in (the Xid 45s an NVLink error caused), on the "
        "device the snapshot read with it names; and a snapshot's own AER counters with "
        "uncorrected errors since boot ([events.md](events.md))"),
    "trend": (
        "`nvtopo trend`: several snapshots of a node (or a fleet, grouped by host, in time "
        "order); per link and port, the increase and rate of each error counter (NVLink "
        "replay/recovery/CRC/ECC, InfiniBand port errors, PCIe replays, AER totals), a counter "
        "going down starts a new epoch (a reset or a reboot); one still rising between the "
        "last two snapshots is `trend.rising`"),
    "source": (
        'a live probe that failed inside nvtopo (a bug: its facts are unknown, so the check '
        'cannot pass on them) is an error `source.probe_crashed`; one that did not return '
        'within `--timeout` is a warning `source.probe_unanswered`; two sources said '
        "different things (warning); one finding per thing (a pair's path and p2p; a NIC by "
        'matrix label `NIC0` and by device name, shown by device name); GPUs sysfs sees on '
        'the PCI bus that no driver-level source (topo text, NVML) lists are one '
        '`source.gpus_not_listed` warning naming their addresses: a job or container given '
        'part of the node (Slurm `ConstrainDevices`, `NVIDIA_VISIBLE_DEVICES`), or GPUs the '
        'driver did not initialise'),
    "mesh": ("a WireGuard mesh on the node: peers, handshakes, tunnel MTU against the "
             "underlay, interface state and counters ([mesh.md](mesh.md))"),
    "imex": ("the IMEX domain of a GB200/GB300 NVL72 rack as `nvidia-imex-ctl -N` reports it "
             "(live, or pasted `-N` text, `-N -j` JSON, the `-q` word): domain state, "
             "unavailable members, connections between READY members, IMEX versions; "
             "not installed or no domain configured is a note on a tray, nothing elsewhere "
             "([imex.md](imex.md))"),
    "nccl": ("what an NCCL debug log (`NCCL_DEBUG=INFO`) says NCCL did (`nvtopo explain "
             "--from LOG [--from SNAPSHOT]`): sockets where RDMA exists, GPU Direct RDMA off "
             "and why, P2P replaced by host memory, NVLS not available, the wrong HCAs, port "
             "events and network errors; with the node's snapshot, the PCI path, NVLink or "
             "NIC role that made NCCL choose what it chose ([nccl.md](nccl.md))"),
    "cluster": ("the cross-node view of `nvtopo cluster`: NVLink domains, rails, GUIDs and "
                "LIDs, versions, odd nodes out, names and GPU UUIDs, the WireGuard mesh "
                "across nodes ([cluster.md](cluster.md)); each finding also names its nodes"),
}
