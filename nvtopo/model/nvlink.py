"""NVLink facts: each link (state, remote end, counters), each GPU's links, the NVSwitch
fabric a GPU registered with.

Two sources state them: NVML (the NVML probe, ``docs/nvml.md``) and pasted
``nvidia-smi nvlink -s/-e/-c/-R`` and ``nvidia-smi -q`` text (source ``nvml-text``,
``docs/nvml.md §6``).  Both give the same shape, so one renderer reads both; where they
differ (the text knows no NVLink version, NVML no link capabilities) each has its own record:
:class:`NvmlLink` and :class:`TextLink`, :class:`NvmlGpuLinks` and :class:`TextGpuLinks`.

Link ``state`` is one of five answers: ``active``; ``inactive`` (unused by design); ``down``
(should be up and is not); ``not_supported``; ``unknown``.  ``rule`` says which rule decided
(``docs/nvml.md §4``).
"""


from __future__ import annotations

from typing import Dict, List, Optional

from .codec import Record, fld, record

#: Link states, and which of them is a fault.
LINK_STATES = ("active", "inactive", "down", "not_supported", "unknown")
#: NVLink error counters, in the order ``nvtopo links`` prints them.
NVLINK_ERROR_COUNTERS = ("replay", "recovery", "crc_flit", "crc_data", "ecc")


@record
class Remote(Record):
    """The far end of one NVLink."""

    type: str = fld("nvmlDeviceGetNvLinkRemoteDeviceType (gpu, nvswitch, npu); "
                    "nvidia-smi nvlink -R; unknown where neither says", default="unknown")
    gpu_index: Optional[int] = fld("the GPU whose bus id is the remote PCI info's "
                                   "(nvmlDeviceGetNvLinkRemotePciInfo, nvlink -R)")
    pci_bus_id: Optional[str] = fld("nvmlDeviceGetNvLinkRemotePciInfo; nvidia-smi nvlink -R")
    link: Optional[int] = fld("field NVML_FI_DEV_NVLINK_REMOTE_NVLINK_ID; nvlink -R")


@record
class Link(Record):
    """One NVLink of a GPU (the fields both sources give)."""

    link: int = fld("the link number (NVML's link index; nvidia-smi nvlink -s)", default=0)
    state: str = fld("judged from the raw state by the link rules (docs/nvml.md §4)",
                     default="unknown")
    raw_state: Optional[str] = fld("field NVML_FI_DEV_NVLINK_GET_STATE or "
                                   "nvmlDeviceGetNvLinkState: active, inactive, sleep, "
                                   "traffic_disabled")
    rule: str = fld("the rule that judged the state (docs/nvml.md §4)", default="")
    reason: str = fld("why the state, in a sentence", default="")
    version: Optional[str] = fld("field NVML_FI_DEV_NVLINK_GET_VERSION or "
                                 "nvmlDeviceGetNvLinkVersion, as a generation (\"4.0\")")
    version_raw: Optional[int] = fld("NVML's version enum as answered")
    speed_mbps: Optional[int] = fld("field NVML_FI_DEV_NVLINK_GET_SPEED; nvlink -s GB/s")
    remote: Remote = fld("the far end", factory=Remote)
    errors: Dict[str, Optional[int]] = fld(
        "nvmlDeviceGetNvLinkErrorCounter or the per-link counter fields; nvidia-smi nvlink -e "
        "(replay, recovery, crc_flit, crc_data, ecc; null where unsupported)", factory=dict)


@record
class NvmlLink(Link):
    """One NVLink as NVML describes it."""

    unavailable: Dict[str, str] = fld("fact -> why NVML did not give it (not_supported, "
                                      "not_permitted, gpu_lost, bad_value, timeout, error)",
                                      factory=dict)


@record
class TextLink(Link):
    """One NVLink as pasted ``nvidia-smi nvlink`` text describes it."""

    raw_state: str = fld("nvidia-smi nvlink -s: active, inactive (<inactive>)",
                         default="unknown")
    # the codec reads each annotation as the field's JSON type: a pasted link's rule and
    # reason may be null, and its counters are never null (unlike Link's), on purpose
    rule: Optional[str] = fld(  # type: ignore[assignment]
        "state (up), text (inactive) or family (down: a GPU of the same model in the paste "
        "uses every link it lists, this one among them); null where the text says nothing")
    reason: Optional[str] = fld("why the state, in a sentence")  # type: ignore[assignment]
    version: None = fld("always null: the text does not say")
    version_raw: None = fld("always null")
    errors: Dict[str, int] = fld(  # type: ignore[assignment]
        "nvidia-smi nvlink -e counters by name", factory=dict)
    capabilities: Optional[Dict[str, bool]] = fld("nvidia-smi nvlink -c")


def _short(rec: "NvmlGpuLinks") -> bool:
    """NVML was never asked about the GPU's NVLinks (its handle failed, it was lost first):
    the record is the short one (status, total, active, links)."""
    return rec.active is None


@record
class NvmlGpuLinks(Record):
    """A GPU's NVLinks as NVML describes them."""

    status: str = fld("ok, not_supported, unknown, or why NVML did not say",
                      default="unknown")
    total: Optional[int] = fld("field NVML_FI_DEV_NVLINK_LINK_COUNT, else the links "
                               "nvmlDeviceGetNvLinkState answers for")
    count_source: Optional[str] = fld("how the count was had: field or probe", omit=_short)
    active: Optional[int] = fld("links up")
    peers: Optional[List[int]] = fld("GPU indexes linked directly", omit="none")
    switch_links_up: Optional[int] = fld("links up to an NVSwitch (or of unknown remote)",
                                         omit="none")
    bandwidth_gbps_per_direction: Optional[float] = fld(
        "the active links' speeds summed (null unless every active link has one)",
        omit=_short)
    links: List[NvmlLink] = fld("every link", factory=list)

    @property
    def down(self) -> List[int]:
        """The numbers of the links that are down (a fault)."""
        return [x.link for x in self.links if x.state == "down"]


@record
class TextGpuLinks(Record):
    """A GPU's NVLinks as pasted ``nvidia-smi nvlink`` text describes them."""

    status: str = fld("ok, inactive (\"all links are inActive\"), or unknown",
                      default="unknown")
    total: Optional[int] = fld("links listed")
    count_source: str = fld("always text", default="text")
    active: int = fld("links up", default=0)
    bandwidth_gbps_per_direction: Optional[float] = fld("nvlink -s speeds of the active links")
    links: List[TextLink] = fld("every link listed", factory=list)
    reason: Optional[str] = fld("why, when every link is inactive", omit="none")

    @property
    def down(self) -> List[int]:
        return [x.link for x in self.links if x.state == "down"]


@record
class FabricHealth(Record):
    """The GPU's fabric health mask (nvmlGpuFabricInfo_v2+ ``healthMask``; ``-q`` Health)."""

    degraded_bandwidth: Optional[bool] = fld("healthMask bits 0-1; -q Health / Bandwidth")
    route_recovery: Optional[bool] = fld("healthMask bits 2-3")
    route_unhealthy: Optional[bool] = fld("healthMask bits 4-5")
    access_timeout_recovery: Optional[bool] = fld("healthMask bits 6-7")
    incorrect_configuration: Optional[str] = fld("healthMask bits 8-11")
    partition_assigned: Optional[bool] = fld("healthMask bits 12-13")
    gfm_state: Optional[str] = fld("healthMask bits 14-15: connected, disconnected")


@record
class Fabric(Record):
    """NVSwitch fabric registration (nvmlDeviceGetGpuFabricInfoV; nvidia-smi -q Fabric)."""

    state: str = fld("not_supported, not_started, in_progress, completed, unknown",
                     default="unknown")
    status: Optional[str] = fld("success or NVML's error in snake case, once completed")
    cluster_uuid: Optional[str] = fld("clusterUuid (null when zero or unknown)")
    clique_id: Optional[int] = fld("cliqueId")
    health: Optional[FabricHealth] = fld("healthMask, decoded")
    health_summary: Optional[str] = fld("healthSummary: healthy, unhealthy, limited_capacity, "
                                        "not_supported, unknown")
    attached: Optional[bool] = fld("completed, success and a non-zero cluster UUID")
    healthy: Optional[bool] = fld("attached and a healthy (or no) summary")


__all__ = ["LINK_STATES", "NVLINK_ERROR_COUNTERS", "Remote", "Link", "NvmlLink", "TextLink",
           "NvmlGpuLinks", "TextGpuLinks", "FabricHealth", "Fabric"]
