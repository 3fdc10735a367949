"""What an NCCL debug log (``NCCL_DEBUG=INFO``) says NCCL did: its version, the ranks and the
hosts they ran on, the transport of each connection, the HCAs it used and with what GPU Direct
RDMA setting, the environment it echoed, its warnings (``docs/nccl.md``).

These are facts NCCL printed, kept as printed (bounded); what they mean for the node is the
``nccl`` check family's business.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from .codec import Record, fld, record


@record
class NcclRank(Record):
    """One rank, from its ``comm ... rank R nranks N cudaDev D ... busId B`` line."""

    rank: int = fld("rank R", default=0)
    host: Optional[str] = fld("the host of the line's host:pid:tid prefix (null: no prefix)")
    cuda_dev: Optional[int] = fld("cudaDev D")
    bus_id: Optional[str] = fld("busId, as printed (hex, no domain: 18000)")


@record
class NcclConnection(Record):
    """One ``Channel CC/.. : A[a] -> B[b] [send|receive] via TRANSPORT`` line."""

    channel: Optional[int] = fld("the channel number (Channel 02/..)")
    src: Optional[int] = fld("the rank the data leaves")
    dst: Optional[int] = fld("the rank the data reaches")
    transport: str = fld("P2P, SHM, NET, CollNet, NVLS or other (the first word after via)",
                         default="other")
    net: Optional[str] = fld("NET only: IB, Socket or the plugin's name (NET/<net>/...)")
    nic: Optional[int] = fld("NET only: NCCL's device index (NET/IB/<n>)")
    gdr: Optional[bool] = fld("NET only: true when /GDRDMA is printed, false when not")
    via: str = fld("the whole transport text after via (P2P/CUMEM/read, NET/IB/0/GDRDMA)",
                   default="")
    host: Optional[str] = fld("the host of the line's prefix (null: no prefix)")


@record
class NcclNetDevice(Record):
    """One device of ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE``, ``NET/Socket :
    Using [0]eth0:10.0.0.1<0>`` or ``Bootstrap : Using eth0:10.0.0.1<0>``."""

    index: int = fld("[n]", default=0)
    name: str = fld("mlx5_0 (IB) or eth0 (Socket)", default="")
    port: Optional[int] = fld("IB only: :1")
    link_layer: Optional[str] = fld("IB only: IB or RoCE")
    net: str = fld("IB, Socket or Bootstrap (which line listed it)", default="IB")
    host: Optional[str] = fld("the host of the line's prefix (null: no prefix)")


@record
class NcclGdr(Record):
    """One ``GPU Direct RDMA Enabled/Disabled for [GPU g /] HCA n ['mlx5_0'] (distance d
    <=/> l)`` line, or ``... Disabled ... (no module)``."""

    enabled: bool = fld("Enabled or Disabled", default=False)
    hca: Optional[int] = fld("HCA n (NCCL's net device index)")
    hca_name: Optional[str] = fld("the HCA's name, where printed")
    gpu: Optional[str] = fld("GPU g (a cudaDev or a busId, as printed)")
    distance: Optional[int] = fld("the distance NCCL computed (PATH_PIX=1 ... PATH_SYS)")
    limit: Optional[int] = fld("the level it compared against (NCCL_NET_GDR_LEVEL)")
    reason: Optional[str] = fld("the words in brackets when not a distance: no module ...")
    host: Optional[str] = fld("the host of the line's prefix (null: no prefix)")


@record
class NcclEvent(Record):
    """A warning, an error or a line that says something is off (``NCCL WARN``, ``P2P is
    disabled between connected GPUs``, ``Got async event``)."""

    kind: str = fld("warn, async_event, ibv_error, completion_error, p2p_disabled, "
                    "nvls_unavailable, ib_missing, error, other", default="other")
    text: str = fld("the line after NCCL INFO/WARN, bounded", default="")
    host: Optional[str] = fld("the host of the line's prefix (null: no prefix)")
    device: Optional[str] = fld("the device named (mlx5_0:1), where one is")
    count: int = fld("how many times this line was seen", default=1)


@record
class NcclPath(Record):
    """One entry of NCCL's per-GPU path lines (``GPU/8F000 :GPU/16000 (2/264.000000/NVL)
    NET/4 (4/24.000000/PXB)``): from a GPU to another GPU, a CPU or a NET device."""

    src: str = fld("the GPU, as printed (GPU/8F000: its busId)", default="")
    dst: str = fld("GPU/<busId>, CPU/<n> or NET/<n>, as printed", default="")
    hops: Optional[int] = fld("the first number: hops")
    bw: Optional[float] = fld("the second: NCCL's bandwidth figure (GB/s)")
    type: str = fld("the path type NCCL names (NVL, PIX, PXB, PHB, SYS ...)", default="")
    host: Optional[str] = fld("the host of the line's prefix (null: no prefix)")


@record
class NcclLog(Record):
    """``extra.nccl-log``: a pasted NCCL debug log."""

    version: Optional[str] = fld("NCCL version 2.x.y+cudaX")
    lines: int = fld("NCCL lines read", default=0)
    hosts: List[str] = fld("the hosts of the prefixes, in order seen", factory=list)
    nranks: Optional[int] = fld("nranks of the comm lines (the largest)")
    ranks: List[NcclRank] = fld("one per rank, the first line seen for it", factory=list)
    connections: List[NcclConnection] = fld("Channel ... via ... lines (bounded)",
                                            factory=list)
    net_devices: List[NcclNetDevice] = fld("NET/IB and NET/Socket 'Using' lines",
                                           factory=list)
    networks: List[str] = fld("Using network IB/Socket/<plugin>, in order seen",
                              factory=list)
    gdr: List[NcclGdr] = fld("GPU Direct RDMA lines", factory=list)
    env: Dict[str, str] = fld("NCCL_* variables echoed (set by environment to / set to)",
                              factory=dict)
    events: List[NcclEvent] = fld("warnings and errors, same text counted once",
                                  factory=list)
    nvls: Optional[bool] = fld("true: NVLS used (NVLS comm/channels > 0); false: said "
                               "unavailable; null: the log does not say")
    collnet: Optional[bool] = fld("true: CollNet connections seen or channels > 0")
    paths: List[NcclPath] = fld("the per-GPU path lines (bounded)", factory=list)
    rings: List[str] = fld("Channel NN/MM : r0 r1 ... (ring orders, bounded)", factory=list)
    trees: List[str] = fld("Trees [..] lines (bounded)", factory=list)
    truncated: bool = fld("true when a bound cut the log", default=False)

    def transports(self) -> Dict[str, int]:
        """How many connections of each transport (``NET/IB`` and ``NET/Socket`` apart)."""
        out: Dict[str, int] = {}
        for c in self.connections:
            name = c.transport if c.transport != "NET" else f"NET/{c.net or '?'}"
            out[name] = out.get(name, 0) + 1
        return out




@record
class NcclTestRank(Record):
    """One ``#  Rank  0 Group  0 Pid  33347 on node-a device  0 [0x0f] NVIDIA H800`` line."""

    rank: int = fld("Rank N", default=0)
    host: Optional[str] = fld("on HOST")
    device: Optional[int] = fld("device N (the CUDA device)")
    bus: Optional[str] = fld("[0x0f]: the PCI bus number, as printed")
    gpu: Optional[str] = fld("the GPU's name, as printed")


@record
class NcclTestRow(Record):
    """One row of an nccl-tests table: a message size, out-of-place then in-place."""

    size: int = fld("size (B)", default=0)
    count: Optional[int] = fld("count (elements)")
    type: Optional[str] = fld("type (float, half ...)")
    redop: Optional[str] = fld("redop (sum, none ...)")
    root: Optional[int] = fld("root (-1: none; absent in old nccl-tests)")
    time_us: Optional[float] = fld("out-of-place time (us)")
    algbw: Optional[float] = fld("out-of-place algbw (GB/s)")
    busbw: Optional[float] = fld("out-of-place busbw (GB/s)")
    wrong: Optional[str] = fld("out-of-place #wrong (or error), as printed")
    ip_time_us: Optional[float] = fld("in-place time (us)")
    ip_algbw: Optional[float] = fld("in-place algbw (GB/s)")
    ip_busbw: Optional[float] = fld("in-place busbw (GB/s)")
    ip_wrong: Optional[str] = fld("in-place #wrong (or error), as printed")

    @property
    def best_busbw(self) -> Optional[float]:
        values = [v for v in (self.busbw, self.ip_busbw) if v is not None]
        return max(values) if values else None


@record
class NcclTest(Record):
    """One nccl-tests run (``all_reduce_perf`` and the other ``*_perf``)."""

    name: Optional[str] = fld("the test (all_reduce_perf ...), from its command line or "
                              "'Collective test starting'")
    nthread: Optional[int] = fld("# nThread N")
    ngpus: Optional[int] = fld("nGpus N (per process)")
    ranks: List[NcclTestRank] = fld("the '# Rank' lines", factory=list)
    rows: List[NcclTestRow] = fld("the table's rows (bounded)", factory=list)
    avg_busbw: Optional[float] = fld("# Avg bus bandwidth : X")
    out_of_bounds: Optional[str] = fld("# Out of bounds values : N OK|FAILED")
    truncated: bool = fld("true when a bound cut the table", default=False)

    @property
    def hosts(self) -> List[str]:
        out: List[str] = []
        for r in self.ranks:
            if r.host is not None and r.host not in out:
                out.append(r.host)
        return out

    def peak(self) -> Optional[NcclTestRow]:
        """The row of the highest bus bandwidth (in- or out-of-place)."""
        rows = [r for r in self.rows if r.best_busbw is not None]
        return max(rows, key=lambda r: (r.best_busbw or 0.0, r.size)) if rows else None


@record
class NcclTests(Record):
    """``extra.nccl-tests``: pasted nccl-tests output."""

    tests: List[NcclTest] = fld("one per run in the paste", factory=list)



@record
class NcclTopoCpu(Record):
    """One ``<cpu>`` of NCCL's topology XML."""

    numaid: Optional[int] = fld("numaid")
    affinity: Optional[str] = fld("affinity (a CPU mask, as printed)")
    arch: Optional[str] = fld("arch (x86_64, arm64 ...)")
    vendor: Optional[str] = fld("vendor")


@record
class NcclTopoPci(Record):
    """One ``<pci>`` element: a bridge, a GPU's or a NIC's PCI function."""

    busid: str = fld("busid, as printed", default="")
    class_: Optional[str] = fld("class (0x060400 bridge, 0x030200 GPU, 0x020700 IB NIC)",
                                key="class")
    link_speed: Optional[str] = fld("link_speed, as printed (16.0 GT/s PCIe)")
    link_width: Optional[int] = fld("link_width")
    parent: Optional[str] = fld("the enclosing <pci>'s busid (null: directly under a cpu)")
    numaid: Optional[int] = fld("the enclosing <cpu>'s numaid")
    holds: Optional[str] = fld("gpu or nic: the element inside it, where one is")


@record
class NcclTopoLink(Record):
    """One ``<nvlink target= count= tclass=/>`` (or ``<c2c bw= count=/>``) of a GPU."""

    target: Optional[str] = fld("target busid (a GPU, or an NVSwitch)")
    count: Optional[int] = fld("count (links)")
    tclass: Optional[str] = fld("tclass (0x030200 GPU, 0x068000 NVSwitch)")


@record
class NcclTopoGpu(Record):
    """One ``<gpu>`` (inside its ``<pci>``)."""

    busid: str = fld("its <pci>'s busid", default="")
    dev: Optional[int] = fld("dev (the CUDA device)")
    sm: Optional[int] = fld("sm (90: Hopper)")
    rank: Optional[int] = fld("rank")
    gdr: Optional[int] = fld("gdr (1: GPU Direct RDMA supported)")
    nvlinks: List[NcclTopoLink] = fld("its <nvlink> elements", factory=list)


@record
class NcclTopoNet(Record):
    """One ``<net>`` (inside ``<nic>`` inside its ``<pci>``)."""

    name: str = fld("name (mlx5_0)", default="")
    busid: Optional[str] = fld("the enclosing <pci>'s busid")
    dev: Optional[int] = fld("dev")
    speed: Optional[int] = fld("speed (Mb/s)")
    port: Optional[int] = fld("port")
    gdr: Optional[int] = fld("gdr")


@record
class NcclGraph(Record):
    """One ``<graph>`` of NCCL's graph dump (``NCCL_GRAPH_DUMP_FILE``): a search's result."""

    id: Optional[int] = fld("id")
    pattern: Optional[int] = fld("pattern (NCCL's: 1 balanced tree, 2 split tree, 3 tree, "
                                 "4 ring, 5 NVLS, 6 CollNet direct)")
    nchannels: Optional[int] = fld("nchannels")
    crossnic: Optional[int] = fld("crossnic")
    bw_intra: Optional[float] = fld("speedintra (bwintra in newer NCCL), GB/s")
    bw_inter: Optional[float] = fld("speedinter (bwinter), GB/s")
    type_intra: Optional[str] = fld("typeintra: the worst path inside the node (NVL, PIX ...)")
    type_inter: Optional[str] = fld("typeinter: the worst path to the network (PIX ... SYS)")
    channels: List[str] = fld("each <channel> as its devices in order (net0 gpu0 gpu1 ...)",
                              factory=list)


@record
class NcclTopo(Record):
    """``extra.nccl-topo``: NCCL's topology XML (``NCCL_TOPO_DUMP_FILE``, ``NCCL_TOPO_FILE``)
    or graph XML (``NCCL_GRAPH_DUMP_FILE``)."""

    version: Optional[str] = fld("<system version=>")
    cpus: List[NcclTopoCpu] = fld("<cpu> elements", factory=list)
    pcis: List[NcclTopoPci] = fld("<pci> elements, in document order", factory=list)
    gpus: List[NcclTopoGpu] = fld("<gpu> elements", factory=list)
    nets: List[NcclTopoNet] = fld("<net> elements", factory=list)
    graphs: List[NcclGraph] = fld("<graph> elements of a graph dump (<graphs>)", factory=list)
    truncated: bool = fld("true when a bound cut the document", default=False)

    def ancestors(self, busid: str) -> List[str]:
        """The <pci> busids above ``busid``, nearest first (bounded by the list)."""
        by = {p.busid: p for p in self.pcis}
        out: List[str] = []
        at = by.get(busid)
        while at is not None and at.parent is not None and len(out) < len(self.pcis):
            out.append(at.parent)
            at = by.get(at.parent)
        return out


__all__ = ["NcclConnection", "NcclEvent", "NcclGdr", "NcclGraph", "NcclLog", "NcclNetDevice", "NcclPath",
           "NcclRank", "NcclTest", "NcclTestRank", "NcclTestRow", "NcclTests", "NcclTopo",
           "NcclTopoCpu", "NcclTopoGpu", "NcclTopoLink", "NcclTopoNet", "NcclTopoPci"]
