"""NVML values decoded into plain facts: PCI bus ids, affinity masks, GPU fabric info.

Shared by the model builder (:mod:`.build`) and the pasted-text reader (:mod:`.text`,
which encodes ``nvidia-smi -q`` text into the same NVML codes first): one decoder, one
vocabulary.  Pure.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ...model import pci_bdf
from ...model.nvlink import Fabric, FabricHealth
from ...model.nvml import Platform
from .source import hex_uuid, is_int
from .vocab import (ERROR_NAMES, FABRIC_HEALTH_BITS, FABRIC_STATES, FABRIC_SUMMARY,
                    INCORRECT_CONFIGURATION, U32)


def bus_id_of(pci: Any) -> Optional[str]:
    """The bus id of an nvmlPciInfo record (string members, else the integers), or None."""
    if not isinstance(pci, dict):
        return None
    for key in ("busId", "busIdLegacy"):
        if pci_bdf(pci.get(key)):
            return pci[key]
    dom, bus, dev = (pci.get(k) for k in ("domain", "bus", "device"))
    if is_int(dom) and is_int(bus) and is_int(dev) and 0 <= dom <= U32 \
            and 0 <= bus <= 0xFF and 0 <= dev <= 0x1F and (dom or bus or dev):
        return f"{dom:08X}:{bus:02X}:{dev:02X}.0"
    return None


def cpulist(words: Any) -> Optional[str]:
    """64-bit mask words -> ``0-55,112-167`` (the ``topo -m`` spelling)."""
    if not isinstance(words, list):
        return None
    bits = [w * 64 + b for w, word in enumerate(words) if isinstance(word, int)
            for b in range(64) if word >> b & 1]
    if not bits:
        return None
    out, start, prev = [], bits[0], bits[0]
    for b in bits[1:] + [None]:
        if b is not None and b == prev + 1:
            prev = b
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if b is not None:
            start = prev = b
    return ",".join(out)


def _uuid(hexstr: Any) -> Optional[str]:
    if not isinstance(hexstr, str) or len(hexstr) != 32:
        return None
    return f"{hexstr[:8]}-{hexstr[8:12]}-{hexstr[12:16]}-{hexstr[16:20]}-{hexstr[20:]}"


def _snake(name: str) -> str:
    """``InsufficientResources`` -> ``insufficient_resources``."""
    return "".join("_" + c.lower() if c.isupper() and i else c.lower()
                   for i, c in enumerate(name))


def fabric_facts(raw: Any) -> Optional[Fabric]:
    """Decode GPU fabric info, from NVML or from ``nvidia-smi -q`` text (:mod:`.text` encodes
    the text into the same NVML codes first): one decoder, one vocabulary.

    ``raw`` holds NVML's members: ``state``, ``status`` (an nvmlReturn_t), ``clusterUuid``
    (32 hex digits), ``cliqueId``, ``healthMask``, ``healthSummary``; absent members are
    unknown.  ``attached`` needs Completed + Success + a non-zero cluster UUID (``None``
    where the UUID is unknown, e.g. old drivers' text); ``healthy`` also a healthy summary.
    """
    if not isinstance(raw, dict):
        return None
    raw = {k: v for k, v in raw.items() if k == "clusterUuid" or (is_int(v) and 0 <= v <= U32)}
    if hex_uuid(raw.get("clusterUuid")) is not None:
        raw.pop("clusterUuid", None)
    state = FABRIC_STATES.get(raw.get("state"), "unknown")
    code = raw.get("status")
    status = None if code is None else "success" if code == 0 else \
        _snake(ERROR_NAMES[code]) if code in ERROR_NAMES else f"error_{code}"
    uuid_hex = raw.get("clusterUuid")
    zero_uuid = uuid_hex is not None and set(uuid_hex) == {"0"}
    out = Fabric(state=state, status=status if state == "completed" else None,
                 cluster_uuid=None if uuid_hex is None or zero_uuid else _uuid(uuid_hex.lower()),
                 clique_id=raw.get("cliqueId"))
    mask = raw.get("healthMask")
    if mask is not None:
        health: Dict[str, Any] = {}
        for name, shift, width in FABRIC_HEALTH_BITS:
            v = (mask >> shift) & width
            if name == "incorrect_configuration":
                health[name] = INCORRECT_CONFIGURATION.get(v) if v else None
            elif name == "gfm_state":
                health[name] = {1: "connected", 2: "disconnected"}.get(v)
            else:
                health[name] = {1: True, 2: False}.get(v)
        out.health = FabricHealth(**health)
    if "healthSummary" in raw:
        out.health_summary = FABRIC_SUMMARY.get(raw["healthSummary"], "unknown")
    if state == "unknown":
        out.attached = None  # a state nobody could read says nothing about the fabric
    elif state != "completed" or code != 0 or zero_uuid:
        out.attached = False
    else:
        out.attached = None if uuid_hex is None else True
    healthy = out.health_summary in (None, "not_supported", "healthy")
    out.healthy = None if out.attached is None else bool(out.attached and healthy)
    return out


#: Platform info members per meaning: v2 name first, then v1's.
_PLATFORM_MEMBERS = (("slot_number", ("slotNumber", "chassisPhysicalSlotNumber")),
                     ("tray_index", ("trayIndex", "computeSlotIndex")),
                     ("host_id", ("hostId", "nodeIndex")), ("peer_type", ("peerType",)),
                     ("module_id", ("moduleId",)))


def _serial(raw: Any) -> Optional[str]:
    """16 recorded bytes (hex) as the chassis serial: printable ASCII up to the first NUL
    as text (nvidia-smi prints it so), else the hex; None when zero or not hex."""
    if not isinstance(raw, str) or len(raw) != 32 or \
            not all(c in "0123456789abcdefABCDEF" for c in raw):
        return None
    data = bytes.fromhex(raw)
    if not any(data):
        return None
    text = data.split(b"\0", 1)[0]
    if text and all(0x21 <= b <= 0x7E for b in text) and not any(data[len(text):]):
        return text.decode("ascii")
    return raw.lower()


def platform_facts(raw: Any) -> Optional[Platform]:
    """Decode nvmlDeviceGetPlatformInfo (``c_nvmlPlatformInfo_v2_t`` members, or v1's)."""
    if not isinstance(raw, dict):
        return None
    guid = raw.get("ibGuid") if hex_uuid(raw.get("ibGuid")) is None else None
    out = Platform(chassis_serial=_serial(raw.get("chassisSerialNumber", raw.get("rackGuid"))),
                   ib_guid=guid.lower() if isinstance(guid, str) and set(guid) != {"0"}
                   else None)
    for name, members in _PLATFORM_MEMBERS:
        for m in members:
            v = raw.get(m)
            if is_int(v) and 0 <= v <= 255:
                setattr(out, name, v)
                break
    return out
