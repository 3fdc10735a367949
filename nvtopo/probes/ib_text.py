"""Pasted ``ibstat``, ``ibv_devinfo`` and ``ibstatus`` text: the RDMA devices a ticket names.

People attach these beside ``nvidia-smi topo -m``.  Each block names one device (``CA
'mlx5_0'``, ``hca_id: mlx5_0``, ``Infiniband device 'mlx5_0' port 1 status:``); its indented
lines are ``Key: value`` facts.  They become the same typed records the sysfs probe builds
(:class:`~nvtopo.model.rdma.Hca` and :class:`~nvtopo.model.rdma.Port` on a NIC), with
``source`` saying which text stated them, so the ``ib`` checks and renderers read them as
they read sysfs.  What a text does not print (counters, PCI placement, NUMA node) is
unknown, never zero; a value that is redacted (``...``) or cut off is unknown, not an error.

Pure: text in, model fragment out.  Linear line scanning, no backtracking regular
expressions; numbers through :mod:`nvtopo.safe`.  What is read from each text:
``docs/ticket-inputs.md``.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Tuple

from ..model import NIC, Topology
from ..model.rdma import Hca, Port, PortRate
from ..safe import ascii_float, ascii_int
from .sysfs.parse import parse_rate

IBSTAT = "ibstat-text"
IBV_DEVINFO = "ibv-devinfo-text"
IBSTATUS = "ibstatus-text"
SOURCES = (IBSTAT, IBV_DEVINFO, IBSTATUS)

#: A device name as the kernel names RDMA devices (``mlx5_0``, ``mlx5_bond_0``, ``rxe0``).
_NAME = r"[A-Za-z0-9_.:-]{1,64}"
_IBSTAT_CA = re.compile(r"CA '(" + _NAME + r")'[ \t]*")
_IBV_HCA = re.compile(r"hca_id:[ \t]*(" + _NAME + r")[ \t]*")
_IBSTATUS = re.compile(r"Infiniband device '(" + _NAME + r")' port ([0-9]{1,3}) status:[ \t]*")
#: Most devices read from one input (a 1,000-line paste holds fewer than 60).
MAX_DEVICES = 512

#: Port states as sysfs words them (``ports/N/state``), by number (IBTA PortState).
STATES = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
_STATE_WORDS = {"down": 1, "initializing": 2, "init": 2, "armed": 3, "active": 4,
                "active_defer": 5, "port_down": 1, "port_init": 2, "port_armed": 3,
                "port_active": 4, "port_active_defer": 5}
#: Physical states as sysfs words them (``ports/N/phys_state``), by number.
PHYS = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp",
        6: "LinkErrorRecovery", 7: "Phy Test"}
_PHYS_WORDS = {"sleep": 1, "polling": 2, "disabled": 3, "portconfigurationtraining": 4,
               "port_configuration_training": 4, "linkup": 5, "link_up": 5,
               "linkerrorrecovery": 6, "link_error_recovery": 6, "phy test": 7, "phytest": 7,
               "phy_test": 7}
#: ``ibv_devinfo -v``'s ``active_speed`` per lane (Gb/s) and name.
_LANE_SPEED = {"2.5": "SDR", "5.0": "DDR", "10.0": "QDR", "14.0": "FDR", "25.0": "EDR",
               "50.0": "HDR", "100.0": "NDR", "200.0": "XDR"}


def _which(line: str) -> Optional[Tuple[str, str, Optional[int]]]:
    """``(source, device, port)`` when ``line`` starts a device block."""
    s = line.strip()
    m = _IBSTAT_CA.fullmatch(s)
    if m:
        return IBSTAT, m.group(1), None
    m = _IBV_HCA.fullmatch(s)
    if m:
        return IBV_DEVINFO, m.group(1), None
    m = _IBSTATUS.fullmatch(s)
    if m:
        return IBSTATUS, m.group(1), ascii_int(m.group(2))
    return None


def _key_value(line: str) -> Optional[Tuple[str, str]]:
    key, sep, value = line.strip().partition(":")
    if not sep or not key or len(key) > 40:
        return None
    return key.strip().lower(), value.strip()


_CONFIRM = {IBSTAT: ("ca type", "number of ports", "firmware version", "node guid", "port 1"),
            IBV_DEVINFO: ("transport", "fw_ver", "node_guid", "phys_port_cnt", "port"),
            IBSTATUS: ("state", "phys state", "rate", "link_layer", "default gid")}


#: The keys each tool prints inside a device block (lower case), by which a block whose
#: indentation was lost (a paste through a web form) is still read: ``ibstat``'s ``Port N:``
#: lines and ``ibv_devinfo``'s snake_case keys are recognised by their form.
_KEYS = {IBSTAT: frozenset(("ca type", "number of ports", "firmware version",
                            "hardware version", "node guid", "system image guid", "state",
                            "physical state", "rate", "base lid", "lmc", "sm lid",
                            "capability mask", "port guid", "link layer")),
         IBSTATUS: frozenset(("default gid", "base lid", "sm lid", "state", "phys state",
                              "rate", "link_layer"))}
_SNAKE = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _flat_key(source: str, line: str) -> bool:
    """Whether an unindented ``line`` is one of ``source``'s block lines (known by its key)."""
    if _which(line) is not None:
        return False
    kv = _key_value(line)
    if kv is None:
        return False
    key, value = kv
    if source == IBSTAT and key.startswith("port ") and not value:
        return ascii_int(key[5:], hi=255) is not None
    if source == IBV_DEVINFO:
        return _SNAKE.fullmatch(key) is not None or key.startswith("gid[")
    return key in _KEYS.get(source, ())


def _indented(line: str) -> bool:
    return line[:1] in (" ", "\t") and bool(line.strip())


def _body_end(lines: List[str], start: int, keep: Callable[[str], bool]) -> int:
    """The end of the block body from ``start``: lines ``keep`` takes, or blank lines followed
    by one."""
    j = start
    while j < len(lines):
        if keep(lines[j]):
            j += 1
            continue
        if not lines[j].strip():
            k = j
            while k < len(lines) and not lines[k].strip():
                k += 1
            if k < len(lines) and keep(lines[k]):
                j = k
                continue
        break
    return j


def blocks(text: str) -> List[Tuple[str, str, Optional[int], List[str], Tuple[int, int]]]:
    """The device blocks of ``text``: ``(source, device, port, lines, (first, end))``, line
    numbers 0-based, ``end`` exclusive.  A block is its header and the indented (or blank,
    then indented) lines after it; a header is one only when a line of it confirms the
    kind (``CA type:`` after ``CA '...'``).  A block whose first line is not indented lost
    its indentation (pasted through a web form): its lines are then the unindented lines
    whose key is one the tool prints (:data:`_KEYS`), up to the next header."""
    lines = text.splitlines()
    out: List[Tuple[str, str, Optional[int], List[str], Tuple[int, int]]] = []
    i = 0
    while i < len(lines) and len(out) < MAX_DEVICES:
        head = _which(lines[i])
        if head is None or lines[i][:1] in (" ", "\t"):
            i += 1
            continue
        first = next((x for x in lines[i + 1:i + 50] if x.strip()), "")
        source = head[0]
        flat = not _indented(first) and _flat_key(source, first)
        keep: Callable[[str], bool] = (lambda x: not x[:1].isspace() and _flat_key(source, x)) \
            if flat else _indented
        j = _body_end(lines, i + 1, keep)
        body = [x for x in lines[i + 1:j] if x.strip()]
        keys = {kv[0] for kv in map(_key_value, body) if kv is not None}
        if keys & set(_CONFIRM[head[0]]):
            out.append((head[0], head[1], head[2], body, (i, j)))
            i = j
        else:
            i += 1
    return out


def looks_like(text: str) -> bool:
    """True when ``text`` holds an ``ibstat``, ``ibv_devinfo`` or ``ibstatus`` block."""
    return bool(blocks(text))


def without_blocks(text: str) -> str:
    """``text`` with its device blocks taken out (what other readers of a ticket read)."""
    lines = text.splitlines()
    keep = [True] * len(lines)
    for _, _, _, _, (a, b) in blocks(text):
        for k in range(a, b):
            keep[k] = False
    return "\n".join(line for line, k in zip(lines, keep) if k) + "\n"


def _guid(raw: Optional[str]) -> Optional[str]:
    """``0xa088c2030074cfda`` or ``a088:c203:0074:cfda`` -> ``a088:c203:0074:cfda`` (as
    sysfs writes ``node_guid``); redacted or malformed -> ``None``."""
    if raw is None:
        return None
    s = raw.strip().lower()
    if s.startswith("0x"):
        s = s[2:]
    s = s.replace(":", "")
    if len(s) != 16 or ascii_int(s, 16) is None:
        return None
    return ":".join(s[k:k + 4] for k in range(0, 16, 4))


def _plain(guid: Optional[str]) -> Optional[str]:
    """A port GUID as the model holds it (sysfs: the low 64 bits of ``gids/0``, no colons)."""
    return guid.replace(":", "") if guid is not None else None


def _enum(raw: Optional[str], words: Dict[str, int]) -> Optional[int]:
    """A state's number: ``Active``, ``PORT_ACTIVE (4)``, ``4: ACTIVE`` -> 4."""
    if raw is None:
        return None
    s = raw.strip()
    if s.endswith(")") and "(" in s:  # ibv_devinfo: WORD (N)
        num = ascii_int(s[s.rindex("(") + 1:-1])
        if num is not None:
            return num
    head, sep, tail = s.partition(":")
    if sep:  # ibstatus: N: WORD
        num = ascii_int(head)
        if num is not None:
            return num
    return words.get(s.lower())


def _int(raw: Optional[str]) -> Optional[int]:
    if raw is None:
        return None
    s = raw.strip()
    if s.lower().startswith("0x"):
        return ascii_int(s, 16, hi=0xFFFF)
    return ascii_int(s, hi=0xFFFFFFFF)


def _rate(raw: Optional[str], source: str) -> PortRate:
    """ibstat's ``Rate: 400`` (Gb/s; ``2.5``); ibstatus prints the kernel's sysfs form
    (``100 Gb/sec (4X EDR)``), read by the sysfs probe's parser."""
    if raw is None:
        return PortRate()
    s = raw.strip()
    if " " in s:
        return PortRate(**dict(parse_rate(s), raw=raw))
    value = ascii_float(s)
    if value is None or value < 0 or value > 100_000:
        return PortRate(raw=raw)
    return PortRate(raw=raw, gbps=int(value) if float(value).is_integer() else value)


def _devinfo_rate(width_raw: Optional[str], speed_raw: Optional[str]) -> PortRate:
    """``ibv_devinfo -v``: ``active_width: 4X (2)``, ``active_speed: 25.0 Gbps (32)``."""
    if width_raw is None or speed_raw is None:
        return PortRate()
    w = width_raw.split()[0] if width_raw.split() else ""
    lanes = ascii_int(w[:-1], hi=64) if w.upper().endswith("X") else None
    parts = speed_raw.split()
    per_lane = ascii_float(parts[0]) if parts else None
    raw = f"{width_raw.strip()} x {speed_raw.strip()}"
    if lanes is None or per_lane is None or not (0 < per_lane <= 1000):
        return PortRate(raw=raw)
    total = lanes * per_lane
    gbps = int(total) if float(total).is_integer() else total
    speed = _LANE_SPEED.get(f"{per_lane:.1f}")
    return PortRate(raw=raw, gbps=gbps, lanes=lanes, width=f"{lanes}X", speed=speed)


def _port(number: int, facts: Dict[str, str], source: str) -> Port:
    state_raw = facts.get("state")
    phys_raw = facts.get("physical state", facts.get("phys state", facts.get("phys_state")))
    state_code = _enum(state_raw, _STATE_WORDS)
    phys_code = _enum(phys_raw, _PHYS_WORDS)
    unknown: Dict[str, str] = {}
    state = STATES.get(state_code) if state_code is not None else None
    phys = PHYS.get(phys_code) if phys_code is not None else None
    for what, raw, value in (("state", state_raw, state), ("phys_state", phys_raw, phys)):
        if value is None:
            unknown[what] = (f"not a value: {raw!r:.60}" if raw is not None
                             else f"not in the {source}")
    if source == IBV_DEVINFO:
        rate = _devinfo_rate(facts.get("active_width"), facts.get("active_speed"))
        if rate.raw is None:
            unknown["rate"] = "not in the ibv-devinfo-text (ibv_devinfo -v prints it)"
    else:
        rate = _rate(facts.get("rate"), source)
        if facts.get("rate") is None:
            unknown["rate"] = f"not in the {source}"
        elif rate.gbps is None:
            unknown["rate"] = f"not a rate: {facts['rate']!r:.60}"
    layer = facts.get("link layer", facts.get("link_layer"))
    layer = layer if layer in ("InfiniBand", "Ethernet") else None
    if layer is None:
        unknown["link_layer"] = "not in the text" if facts.get(
            "link layer", facts.get("link_layer")) is None else "not a link layer"
    active = state == "ACTIVE"
    lid_raw = facts.get("base lid", facts.get("port_lid"))
    gid0 = facts.get("default gid")
    port = Port(
        port=number, state=state, state_code=state_code, phys_state=phys,
        phys_state_code=phys_code, rate_gbps=rate.gbps if active else None, rate=rate,
        link_layer=layer,
        transport={"InfiniBand": "IB", "Ethernet": "RoCE"}.get(layer or ""),
        lid=_int(lid_raw), sm_lid=_int(facts.get("sm lid", facts.get("sm_lid"))),
        gid0=gid0 if gid0 and len(gid0.split(":")) == 8 else None,
        port_guid=_plain(_guid(facts.get("port guid"))),
        counters=None, unknown=unknown, counters_status="not read",
        counters_note=f"the {source} holds no counters")
    if port.port_guid is None and port.gid0 is not None:
        port.port_guid = _plain(_guid("".join(port.gid0.split(":")[4:])))
    if not active and rate.gbps is not None:
        port.rate_note = "port not ACTIVE: the rate it shows is meaningless"
    return port


def _device(source: str, name: str, port_no: Optional[int], body: List[str]
            ) -> Tuple[Hca, Optional[int]]:
    """The device and the number of ports its text says it has (``Number of ports:``,
    ``phys_port_cnt:``; ``None`` when it does not say)."""
    dev: Dict[str, str] = {}
    ports: Dict[int, Dict[str, str]] = {}
    current: Optional[Dict[str, str]] = None
    if port_no is not None:  # ibstatus: one block per port
        current = ports.setdefault(port_no, {})
    for line in body:
        kv = _key_value(line)
        if kv is None:
            continue
        key, value = kv
        if source == IBSTAT and key.startswith("port ") and not value:
            num = ascii_int(key[5:], hi=255)
            current = ports.setdefault(num, {}) if num is not None else None
            continue
        if source == IBV_DEVINFO and key == "port":
            num = ascii_int(value, hi=255)
            current = ports.setdefault(num, {}) if num is not None else None
            continue
        if value in ("", "...") or value.startswith("[..."):
            continue  # redacted or empty: unknown
        target = current if current is not None else dev
        target.setdefault(key, value)
    hca = Hca(
        name=name, source=source,
        fw_ver=dev.get("firmware version", dev.get("fw_ver")),
        hca_type=dev.get("ca type") or (f"MT{dev['vendor_part_id']}"
                                        if ascii_int(dev.get("vendor_part_id")) is not None
                                        else None),
        board_id=dev.get("board_id"),
        node_guid=_guid(dev.get("node guid", dev.get("node_guid"))),
        sys_image_guid=_guid(dev.get("system image guid", dev.get("sys_image_guid"))),
        node_type="CA" if source != IBSTATUS else None,
        pci_note=f"the {source} does not say where the device sits on PCI",
        ports=[_port(n, f, source) for n, f in sorted(ports.items())])
    declared = ascii_int(dev.get("number of ports", dev.get("phys_port_cnt")), hi=255)
    return hca, declared


def derive_text(text: str, where: str = "") -> Topology:
    """The NICs ``text``'s device blocks name, each with its ports (see module doc)."""
    topo = Topology()
    seen: Dict[str, Hca] = {}
    declared: Dict[str, int] = {}
    for source, name, port_no, body, _ in blocks(text):
        hca, count = _device(source, name, port_no, body)
        if count is not None:
            declared.setdefault(name, count)
        if name in seen:  # ibstatus prints a block per port; a ticket may repeat a device
            old = seen[name]
            have = {p.port for p in old.ports}
            old.ports.extend(p for p in hca.ports if p.port not in have)
            old.ports.sort(key=lambda p: p.port)
            continue
        seen[name] = hca
        topo.nics.append(NIC(label=name, name=name, sysfs=hca))
        if source not in topo.sources:
            topo.sources.append(source)
    for hca in seen.values():
        _cut_notes(topo, hca, declared.get(hca.name))
    panic = _ibpanic(text)
    if panic is not None:
        topo.note("ib_text.aborted", "ibstat stopped early (" + panic + "): devices after "
                  "the last one listed are unknown", source=IBSTAT, level="warning")
    return topo


def _cut_notes(topo: Topology, hca: Hca, declared: Optional[int]) -> None:
    """A warning note (subject: the device) where the text stops before it shows a port: a
    device with no port (``ib_text.no_ports``), or fewer ports than it says it has, or a port
    block with no state line (``ib_text.ports_cut``).  Those ports' state and rate are
    unknown; ``check`` says so with a warning (``ib.ports_unknown``)."""
    assert hca.source is not None  # (a parsed device names its text: _device)
    if not hca.ports:
        topo.note("ib_text.no_ports", f"{hca.name}: the {hca.source} names no port of it "
                  "(cut off?): its ports are unknown", source=hca.source,
                  level="warning", subject=hca.name)
        return
    have = {p.port for p in hca.ports}
    missing = [n for n in range(1, declared + 1) if n not in have] if declared else []
    bare = [p.port for p in hca.ports  # the state is each tool's first port line
            if p.state is None and str(p.unknown.get("state", "")).startswith("not in")]
    if not missing and not bare:
        return
    parts = []
    if missing:
        parts.append(f"it has {declared} port{'s' if declared != 1 else ''}, the text shows "
                     f"{len(have)} (port {', '.join(map(str, missing[:8]))} not shown: cut "
                     "off, or a one-port view such as ibv_devinfo -i N or ibstat DEVICE PORT)")
    if bare:
        parts.append(f"port {', '.join(map(str, bare[:8]))} shows no state (cut off?)")
    topo.note("ib_text.ports_cut", f"{hca.name}: the {hca.source} is incomplete: "
              + "; ".join(parts) + ": those ports are unknown", source=hca.source,
              level="warning", subject=hca.name)


def _ibpanic(text: str) -> Optional[str]:
    """ibstat's last words (``ibpanic: [pid] main: stat of IB device 'mlx5_8' failed: ...``),
    cut to 160 characters, from the first ``ibpanic:`` line; ``None`` when there is none."""
    at = text.find("ibpanic:")
    if at < 0:
        return None
    end = text.find("\n", at)
    line = text[at:end if end >= 0 else len(text)][:160].rstrip()
    head, sep, tail = line.partition("main:")
    return ("ibpanic: " + tail.strip()) if sep and tail.strip() else line


__all__ = ["IBSTAT", "IBV_DEVINFO", "IBSTATUS", "SOURCES", "blocks", "looks_like",
           "without_blocks", "derive_text"]
