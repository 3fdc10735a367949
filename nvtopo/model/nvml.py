"""What NVML says about a GPU and about the node (the NVML probe, ``docs/nvml.md``), and what
pasted ``nvidia-smi nvlink``/``-q`` text says (source ``nvml-text``, ``docs/nvml.md §6``).

Every fact is ``None`` where NVML did not give it; the record's ``unavailable`` map says why
(``not_supported``, ``not_permitted``, ``gpu_lost``, ``bad_value``, ``timeout``, ``error``).
"""


from __future__ import annotations

from typing import Dict, List, Optional, Union

from .codec import Record, fld, record
from .nvlink import Fabric, NvmlGpuLinks, TextGpuLinks


@record
class Fault(Record):
    """Why NVML could not read a GPU."""

    kind: str = fld("lost, not_permitted, no_handle, timeout", default="")
    call: str = fld("the NVML call that failed", default="")
    message: str = fld("a sentence", default="")


@record
class NvmlPci(Record):
    """nvmlDeviceGetPciInfo."""

    bus_id: Optional[str] = fld("busId (busIdLegacy, or domain/bus/device)")
    bdf: Optional[List[int]] = fld("the bus id as four integers")
    device_id: Optional[str] = fld("pciDeviceId as 0x233010DE")


@record
class C2cLink(Record):
    """One NVLink-C2C link (fields 171, 172 scoped by link)."""

    link: int = fld("the link index", default=0)
    status: Optional[str] = fld("active, inactive (field 171), or null where unknown")
    status_raw: Optional[int] = fld("field 171 as NVML answered it")
    max_bw_mbps: Optional[int] = fld("field 172: the link's maximum bandwidth, MB/s")
    unavailable: Dict[str, str] = fld("fact -> why NVML did not give it", factory=dict)


@record
class C2c(Record):
    """NVLink-C2C, the Grace CPU-GPU link (``docs/nvml.md §9``): asked of Grace superchips."""

    enabled: Optional[bool] = fld("nvmlDeviceGetC2cModeInfoV isC2cEnabled")
    link_count: Optional[int] = fld("field 170 NVML_FI_DEV_C2C_LINK_COUNT")
    links_active: Optional[int] = fld("links whose status is active (null where any is "
                                      "unknown)")
    bandwidth_gbps: Optional[float] = fld("sum of the active links' maximum bandwidth, GB/s")
    links: List[C2cLink] = fld("each link", factory=list)
    unavailable: Dict[str, str] = fld("fact -> why NVML did not give it", factory=dict)

    @property
    def down(self) -> List[int]:
        """The links NVML says are inactive."""
        return [lk.link for lk in self.links if lk.status == "inactive"]


@record
class GpuPcie(Record):
    """The GPU's own PCIe link (NVML; nvidia-smi -q PCI / GPU Link Info)."""

    current_gen: Optional[int] = fld("nvmlDeviceGetCurrPcieLinkGeneration; -q Current")
    max_gen: Optional[int] = fld("nvmlDeviceGetMaxPcieLinkGeneration (of the slot); -q Max")
    gpu_max_gen: Optional[int] = fld("nvmlDeviceGetGpuMaxPcieLinkGeneration; -q Device Max")
    current_width: Optional[int] = fld("nvmlDeviceGetCurrPcieLinkWidth; -q Link Width Current")
    max_width: Optional[int] = fld("nvmlDeviceGetMaxPcieLinkWidth; -q Link Width Max")
    replay_counter: Optional[int] = fld("field NVML_FI_DEV_PCIE_REPLAY_COUNTER or "
                                        "nvmlDeviceGetPcieReplayCounter; -q Replays Since Reset")


@record
class Mig(Record):
    """nvmlDeviceGetMigMode."""

    current: bool = fld("MIG mode now", default=False)
    pending: bool = fld("MIG mode after the next reset", default=False)


@record
class Utilization(Record):
    """A utilisation sample (nvmlDeviceGetUtilizationRates), where the input records one:
    nvtopo's own probe records none."""

    gpu: Optional[Union[int, float]] = fld("percent of time a kernel ran", omit="none")
    memory: Optional[Union[int, float]] = fld("percent of time memory was read or written",
                                              omit="none")


@record
class Platform(Record):
    """Where the GPU sits in a rack (nvmlDeviceGetPlatformInfo; GB200/GB300 NVL trays)."""

    chassis_serial: Optional[str] = fld("chassisSerialNumber: the rack's chassis (text, or "
                                        "hex where not printable; v1: rackGuid)")
    slot_number: Optional[int] = fld("slotNumber: the tray's slot in the chassis (v1: "
                                     "chassisPhysicalSlotNumber)")
    tray_index: Optional[int] = fld("trayIndex: the compute tray's index (v1: computeSlotIndex)")
    host_id: Optional[int] = fld("hostId: the host on the tray (v1: nodeIndex)")
    peer_type: Optional[int] = fld("peerType: the platform's peer type")
    module_id: Optional[int] = fld("moduleId: the GPU's module on the tray (1..4 on a GB200 "
                                   "tray)")
    ib_guid: Optional[str] = fld("ibGuid (hex; null when zero)")


@record
class NvmlGpu(Record):
    """One GPU as NVML describes it."""

    index: int = fld("NVML's index of the GPU (nvmlDeviceGetHandleByIndex)", default=0)
    fault: Optional[Fault] = fld("why the GPU could not be read, or null")
    serial: Optional[str] = fld("nvmlDeviceGetSerial")
    minor_number: Optional[int] = fld("nvmlDeviceGetMinorNumber")
    architecture: Optional[str] = fld("nvmlDeviceGetArchitecture, named")
    compute_capability: Optional[str] = fld("nvmlDeviceGetCudaComputeCapability (\"9.0\")")
    memory_total_bytes: Optional[int] = fld("nvmlDeviceGetMemoryInfo total")
    pci: NvmlPci = fld("nvmlDeviceGetPciInfo", factory=NvmlPci)
    pcie: GpuPcie = fld("the GPU's PCIe link", factory=GpuPcie)
    mig: Optional[Mig] = fld("nvmlDeviceGetMigMode")
    persistence_mode: Optional[bool] = fld("nvmlDeviceGetPersistenceMode")
    fabric: Optional[Fabric] = fld("nvmlDeviceGetGpuFabricInfoV")
    platform: Optional[Platform] = fld("nvmlDeviceGetPlatformInfo (null: not asked, not "
                                       "recorded or not supported)", omit="none")
    utilization: Optional[Utilization] = fld("nvmlDeviceGetUtilizationRates (not recorded by "
                                             "nvtopo's probe)", omit="none")
    unavailable: Dict[str, str] = fld("fact -> why NVML did not give it", factory=dict)
    nvlink: NvmlGpuLinks = fld("the GPU's NVLinks", factory=NvmlGpuLinks)
    c2c: Optional[C2c] = fld("NVLink-C2C to the Grace CPU (Grace superchips only)",
                             omit="none")


@record
class TextPci(Record):
    bus_id: Optional[str] = fld("nvidia-smi nvlink / -q GPU header")


@record
class TextGpu(Record):
    """One GPU as pasted nvidia-smi text describes it."""

    index: int = fld("the GPU number the text prints", default=0)
    fault: None = fld("always null: the text reports no faults")
    nvlink: TextGpuLinks = fld("nvidia-smi nvlink -s/-e/-c/-R", factory=TextGpuLinks)
    fabric: Optional[Fabric] = fld("nvidia-smi -q Fabric")
    pcie: Optional[GpuPcie] = fld("nvidia-smi -q PCI")
    pci: TextPci = fld("the GPU header's bus id", factory=TextPci)
    notes: List[str] = fld("what the text did not say about this GPU", factory=list)
    performance_state: Optional[str] = fld("-q Performance State (P0 full performance ... "
                                           "P8 idle; P12 or more minimum power)", omit="none")
    clocks_idle: Optional[bool] = fld("-q Clocks Event Reasons (Clocks Throttle Reasons before "
                                      "driver 535) / Idle: true where Active", omit="none")
    utilization: Optional[Utilization] = fld("-q Utilization (GPU, Memory)", omit="none")
    platform: Optional[Platform] = fld("-q Platform Info (-q -x platformInfo): where the GPU "
                                       "sits in an NVL rack (peer_type and ib_guid are not "
                                       "read from text)", omit="none")


# --- the node ------------------------------------------------------------------------------


@record
class NvmlSystem(Record):
    """System facts (keys are absent where NVML was not asked: init or the count failed)."""

    driver_version: Optional[str] = fld("nvmlSystemGetDriverVersion", omit="absent")
    nvml_version: Optional[str] = fld("nvmlSystemGetNVMLVersion", omit="absent")
    cuda_driver_version: Optional[int] = fld("nvmlSystemGetCudaDriverVersion", omit="absent")
    device_count: int = fld("nvmlDeviceGetCount", omit="absent")


@record
class Incomplete(Record):
    """The NVML call that did not answer before the deadline."""

    call: Optional[str] = fld("its call key")
    gpu: Optional[int] = fld("the GPU asked")


@record
class BadValue(Record):
    """A recorded NVML answer of the wrong type or range (a damaged snapshot)."""

    call: str = fld("the call key", default="")
    gpu: Optional[int] = fld("the GPU asked")
    value: str = fld("the value, shown", default="")
    expected: str = fld("what it should be", default="")


@record
class NvmlPair(Record):
    """NVLinks between two GPUs as NVML counts them (docs/nvml.md §5)."""

    a: int = fld("NVML GPU index", default=0)
    b: int = fld("NVML GPU index", default=0)
    count: Optional[int] = fld("links between them (null: unknown)")
    direct: Optional[Dict[str, int]] = fld("each GPU's own count of direct links to the other",
                                           omit="none", size=2)
    asymmetric: Optional[bool] = fld("the two direct counts differ", omit="none")
    switch_links: Optional[Dict[str, int]] = fld("each GPU's links up to NVSwitches",
                                                 omit="none", size=2)
    rule: str = fld("direct, nvswitch_min, both (+), none, or unknown", default="none")
    reason: Optional[str] = fld("why unknown", omit="none")


@record
class P2PMatrix(Record):
    """nvmlDeviceGetP2PStatus for every GPU pair, as ``topo -p2p`` tokens."""

    devices: List[str] = fld("GPU labels", factory=list)
    cells: List[List[Optional[str]]] = fld("X, OK, CNS, GNS, TNS, DR, NS, U", factory=list)

    def __post_init__(self) -> None:
        n = len(self.devices)
        if len(self.cells) != n or any(len(row) != n for row in self.cells):
            raise ValueError("matrix cells must be square and match the device list")


@record
class NvmlNode(Record):
    """What NVML says about the node."""

    status: str = fld("ok or unavailable", default="ok")
    reason: Optional[str] = fld("why unavailable")
    system: NvmlSystem = fld("driver, NVML and CUDA versions, GPU count", factory=NvmlSystem)
    incomplete: Optional[Incomplete] = fld("the call that did not answer, or null")
    ncalls: int = fld("NVML calls recorded", default=0)
    duration_s: Optional[float] = fld("how long the probe took")
    bad_values: List[BadValue] = fld("recorded answers that are no valid value", factory=list)
    nvlink_pairs: Optional[List[NvmlPair]] = fld("per GPU pair (absent when NVML was "
                                                 "unavailable)", omit="none")
    nvswitch: Optional[bool] = fld("NVML saw NVSwitch links (field "
                                   "NVML_FI_DEV_NVSWITCH_CONNECTED_LINK_COUNT or a link's "
                                   "remote type)", omit="none")
    switches: Optional[Dict[str, Dict[str, int]]] = fld("NVSwitch bus id -> GPU index -> "
                                                        "links to it", omit="none")
    p2p: Optional[Dict[str, P2PMatrix]] = fld("read, write, nvlink, atomics", omit="none")


@record
class TextPair(Record):
    a: int = fld("GPU", default=0)
    b: int = fld("GPU", default=0)
    count: int = fld("active links between them (nvlink -R)", default=0)


@record
class TextNode(Record):
    """What pasted nvidia-smi text says about the node."""

    sections: List[str] = fld("the outputs the paste holds: nvlink -s, nvlink -R, nvlink -e, "
                              "nvlink -c, -q, -q fabric", factory=list)
    nvlink_pairs: List[TextPair] = fld("GPU pairs and their active links", factory=list)


__all__ = ["Fault", "NvmlPci", "GpuPcie", "Mig", "Utilization", "Platform", "NvmlGpu", "TextPci",
           "TextGpu", "NvmlSystem", "Incomplete", "BadValue", "NvmlPair", "P2PMatrix",
           "NvmlNode", "TextNode", "TextPair"]
