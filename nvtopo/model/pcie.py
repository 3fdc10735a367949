"""PCIe facts from sysfs (``docs/sysfs.md``): a device's link, the hops from its root port
down, and where a PCI function sits (address, NUMA node, CPUs, host bridge).

Every value is ``None`` where sysfs did not give it; ``unknown`` maps say why.
"""


from __future__ import annotations

from typing import Dict, List, Optional

from .codec import Record, fld, record


@record
class PcieLinkRaw(Record):
    """The four link files of ``bus/pci/devices/BDF/`` as read."""

    current_link_speed: Optional[str] = fld("current_link_speed")
    current_link_width: Optional[str] = fld("current_link_width")
    max_link_speed: Optional[str] = fld("max_link_speed")
    max_link_width: Optional[str] = fld("max_link_width")


@record
class PcieLink(Record):
    """A device's PCIe link, current against its own maximum."""

    current_gts: Optional[float] = fld("current_link_speed, in GT/s")
    current_gen: Optional[int] = fld("the generation of current_gts")
    current_width: Optional[int] = fld("current_link_width")
    max_gts: Optional[float] = fld("max_link_speed, in GT/s")
    max_gen: Optional[int] = fld("the generation of max_gts")
    max_width: Optional[int] = fld("max_link_width")
    raw: PcieLinkRaw = fld("the files as read", factory=PcieLinkRaw)
    unknown: Optional[Dict[str, str]] = fld("file -> why it could not be read or parsed",
                                            omit="none")
    width_below_max: Optional[bool] = fld("current width < max width")
    speed_below_max: Optional[bool] = fld("current speed < max speed")


@record
class PcieHop(Record):
    """One PCIe link on the way from the root port down: current against the lower of both
    ends' maxima."""

    upstream: str = fld("the upper end's address", default="")
    downstream: str = fld("the lower end's address", default="")
    current_gts: Optional[float] = fld("current_link_speed of the lower end (else the upper)")
    current_gen: Optional[int] = fld("its generation")
    current_width: Optional[int] = fld("current_link_width of the lower end (else the upper)")
    expected_gts: Optional[float] = fld("the lower of both ends' max_link_speed")
    expected_gen: Optional[int] = fld("its generation")
    expected_width: Optional[int] = fld("the lower of both ends' max_link_width")
    width_degraded: Optional[bool] = fld("current width < expected width")
    speed_below_expected: Optional[bool] = fld("current speed < expected speed")


@record
class NarrowestHop(PcieHop):
    """The slowest hop of a device (current speed × width), one whose current link is known."""

    current_gts: float = fld("current speed, GT/s", default=0.0)
    current_gen: int = fld("its generation", default=0)
    current_width: int = fld("current width", default=0)


@record
class AerCounts(Record):
    """A PCIe function's AER counters since boot (``aer_dev_correctable``,
    ``aer_dev_nonfatal``, ``aer_dev_fatal``; docs/sysfs.md)."""

    correctable: Optional[int] = fld("aer_dev_correctable TOTAL_ERR_COR (null: file absent "
                                     "or unreadable)")
    nonfatal: Optional[int] = fld("aer_dev_nonfatal TOTAL_ERR_NONFATAL")
    fatal: Optional[int] = fld("aer_dev_fatal TOTAL_ERR_FATAL")
    nonzero: Dict[str, int] = fld("every nonzero counter of the three files, as "
                                  "correctable.RxErr, nonfatal.CmpltTO, fatal.DLP",
                                  factory=dict)


@record
class PciPlacement(Record):
    """Where a GPU sits on the PCI tree (``gpus[].extra.sysfs``)."""

    pci_address: str = fld("the bus/pci/devices entry", default="")
    device_id: Optional[str] = fld("device")
    class_: str = fld("class (0x030200)", key="class", default="")
    numa_node: Optional[int] = fld("numa_node (null where sysfs says -1)")
    local_cpulist: Optional[str] = fld("local_cpulist")
    host_bridge: str = fld("the pciDDDD:BB directory above (pci0000:15)", default="")
    chain: List[str] = fld("the PCI addresses from the root port down", factory=list)
    link: PcieLink = fld("its link", factory=PcieLink)
    hops: List[PcieHop] = fld("each PCIe link from the root port down", factory=list)
    narrowest_hop: Optional[NarrowestHop] = fld("the slowest hop")
    layout_note: Optional[str] = fld("when the bridges above cannot be paired into switches",
                                     omit="none")
    numa_unknown: Optional[str] = fld("why numa_node is null", omit="none")
    driver: Optional[str] = fld("the kernel driver bound (uevent DRIVER=): \"\" none bound, "
                                "null not read", omit="none")


@record
class PciFunction(Record):
    """Where an RDMA device's PCI function sits (``nics[].extra.sysfs.pci``)."""

    device_id: Optional[str] = fld("device")
    class_: Optional[str] = fld("class", key="class")
    local_cpulist: Optional[str] = fld("local_cpulist")
    host_bridge: Optional[str] = fld("the pciDDDD:BB directory above")
    chain: List[str] = fld("the PCI addresses from the root port down", factory=list)
    link: PcieLink = fld("its link", factory=PcieLink)
    narrowest_hop: Optional[NarrowestHop] = fld("the slowest hop")


__all__ = ["PcieLinkRaw", "PcieLink", "PcieHop", "NarrowestHop", "PciPlacement",
           "PciFunction", "AerCounts"]
