"""Facts of one PCI device, one port, one counter directory: parsed from the traversal's
raw values (:mod:`.walk`) into the model's records (:mod:`nvtopo.model.pcie`,
:mod:`nvtopo.model.rdma`), with the reason for every fact that is unknown.

PCIe links and the hops from the root port down (:func:`link_facts`,
:func:`pcie_hops`), the path level between two devices (:func:`path_level`), a port's
state, rate, transport and counters (:func:`port_facts`), and the answers a directory
can give: read, absent, unreadable, or not read at all (:func:`dir_status`).  Pure.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...model.pcie import AerCounts, NarrowestHop, PcieHop, PcieLink, PcieLinkRaw
from ...safe import printable
from ...model.rdma import DATA_COUNTERS, ERROR_COUNTERS, OTHER_SATURATING, Netdev, Port, PortRate
from .parse import parse_enum, parse_pcie_speed, parse_rate, pcie_gen, to_int
from .read import DEADLINE, LIMIT
from .walk import PORT_ATTRS


def reason(err: Optional[str]) -> str:
    if err is None:
        return "unknown"
    if err.startswith("ENOENT"):
        return "missing (ENOENT)"
    return err


def absent_reason(err: Optional[str]) -> str:
    """Why a ``class/infiniband`` entry is no device directory."""
    if err is None:
        return "unknown"
    if err.startswith("ENOENT"):
        return "dangling link, the device is gone (ENOENT)"
    if err.startswith("ENOTDIR"):
        return "not a directory (ENOTDIR)"
    return err



def link_facts(dev: Dict[str, Any]) -> PcieLink:
    """Current and max link of one PCI device, parsed, with reasons for what is unknown."""
    a, e = dev["attrs"], dev["errors"]
    cur = parse_pcie_speed(a.get("current_link_speed"))
    mx = parse_pcie_speed(a.get("max_link_speed"))
    cw = to_int(a.get("current_link_width"))
    mw = to_int(a.get("max_link_width"))
    link = PcieLink(
        current_gts=cur, current_gen=pcie_gen(cur), current_width=cw,
        max_gts=mx, max_gen=pcie_gen(mx), max_width=mw,
        raw=PcieLinkRaw(**{k: a.get(k) for k in ("current_link_speed", "current_link_width",
                                                 "max_link_speed", "max_link_width")}))
    unknown = {}
    for k in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"):
        if k in e:
            unknown[k] = reason(e[k])
        elif a.get(k) is not None and (("speed" in k and parse_pcie_speed(a[k]) is None)
                                       or ("width" in k and to_int(a[k]) is None)):
            unknown[k] = f"not a value: {a[k]!r}"
    if unknown:
        link.unknown = unknown
    link.width_below_max = (cw < mw) if cw is not None and mw is not None else None
    link.speed_below_max = (cur < mx) if cur is not None and mx is not None else None
    return link


def pcie_hops(dev: Dict[str, Any], pci: Dict[str, Dict[str, Any]]
              ) -> Tuple[List[PcieHop], bool]:
    """PCIe links from the root port down to the device; ``paired`` False for odd layouts.

    Below the root port, bridges come as switch upstream/downstream port pairs,
    so the physical links are (root port, next), (downstream port, next), ...
    """
    chain = dev["chain"]
    paired = len(chain) % 2 == 0 or len(chain) == 1
    pairs: List[Tuple[str, str]] = []
    if len(chain) >= 2:
        if paired:
            pairs = [(chain[i], chain[i + 1]) for i in range(0, len(chain) - 1, 2)]
        else:
            pairs = [(chain[-2], chain[-1])]
    hops = []
    for up, down in pairs:
        u = pci.get(up)
        d = pci.get(down)
        ul = link_facts(u) if u else PcieLink()
        dl = link_facts(d) if d else PcieLink()
        cur = dl.current_gts if dl.current_gts is not None else ul.current_gts
        cw = dl.current_width if dl.current_width is not None else ul.current_width
        maxes = [x for x in (ul.max_gts, dl.max_gts) if x is not None]
        widths = [x for x in (ul.max_width, dl.max_width) if x is not None]
        exp = min(maxes) if maxes else None
        ew = min(widths) if widths else None
        hops.append(PcieHop(
            upstream=up, downstream=down,
            current_gts=cur, current_gen=pcie_gen(cur), current_width=cw,
            expected_gts=exp, expected_gen=pcie_gen(exp), expected_width=ew,
            width_degraded=(cw < ew) if cw is not None and ew is not None else None,
            speed_below_expected=(cur < exp) if cur is not None and exp is not None else None,
        ))
    return hops, paired


def narrowest(hops: List[PcieHop]) -> Optional[NarrowestHop]:
    """The slowest hop (current speed × width) among those whose current link is known; of
    equals, the one nearest the device."""
    known = [(h.current_gts * h.current_width, -i, h) for i, h in enumerate(hops)
             if h.current_gts is not None and h.current_width is not None]
    if not known:
        return None
    _, _, h = min(known, key=lambda k: (k[0], k[1]))
    return NarrowestHop(**vars(h))


def _switches(dev: Dict[str, Any]) -> Optional[List[str]]:
    """Switch upstream ports above the device, root first; ``None`` for unpaired layouts."""
    above = dev["chain"][:-1]
    if above and len(above) % 2 == 0:
        return None
    return above[1::2]


def numa_node(dev: Dict[str, Any]) -> Optional[int]:
    n = to_int(dev["attrs"].get("numa_node"), signed=True)
    return n if n is not None and n >= 0 else None


def path_level(a: Dict[str, Any], b: Dict[str, Any]) -> Optional[str]:
    """PIX/PXB/PHB/NODE/SYS between two PCI devices from the tree; ``None`` when unknown."""
    if a["bdf"] == b["bdf"]:
        return "X"
    if a["bdf"].rsplit(".", 1)[0] == b["bdf"].rsplit(".", 1)[0]:
        return "PIX"  # functions of one device (multi-port NIC)
    if a["host_bridge"] is not None and a["host_bridge"] == b["host_bridge"]:
        sa, sb = _switches(a), _switches(b)
        if sa is None or sb is None:
            return None
        k = 0
        while k < min(len(sa), len(sb)) and sa[k] == sb[k]:
            k += 1
        if k == 0:
            return "PHB"
        return "PIX" if (len(sa) - k) + (len(sb) - k) + 1 == 1 else "PXB"
    if a["host_bridge"] is None or b["host_bridge"] is None:
        return None
    na, nb = numa_node(a), numa_node(b)
    if na is None or nb is None:
        return None
    return "NODE" if na == nb else "SYS"



def counter_facts(raw: Optional[Dict[str, Tuple[Optional[str], Optional[str]]]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"values": {}, "unknown": {}, "saturated": []}
    for name, (val, err) in sorted((raw or {}).items()):
        n = to_int(val)
        if n is None:
            out["values"][name] = None
            out["unknown"][name] = reason(err) if val is None else val.strip() or "empty"
            continue
        out["values"][name] = n
        limit = ERROR_COUNTERS.get(name) or OTHER_SATURATING.get(name)
        if (limit is not None and n >= limit) or n in (0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF):
            out["saturated"].append(name)
    return out


def _with_ext(base: Optional[Dict[str, Any]], ext: Optional[Dict[str, Any]]
              ) -> Optional[Dict[str, Any]]:
    """``counters/`` with the 64-bit ``counters_ext/NAME_64`` values in place of the 32-bit
    ones where both are read (a 32-bit data counter stuck at 2^32-1 is then not saturated)."""
    if not ext:
        return base
    out = dict(base or {})
    for name, (val, err) in ext.items():
        if name.endswith("_64") and val is not None and to_int(val) is not None:
            out[name[:-3]] = (val, err)
    return out


def port_facts(p: Dict[str, Any], node_type: Optional[str]) -> Port:
    a, e = p["attrs"], p["errors"]
    state_code, state = parse_enum(a.get("state"))
    phys_code, phys = parse_enum(a.get("phys_state"))
    rate = parse_rate(a.get("rate"))
    layer = (a.get("link_layer") or "").strip() or None
    unknown: Dict[str, str] = {}
    for k in PORT_ATTRS + ("gid_attrs/ndevs/0",):
        if k in e and not (k == "gid_attrs/ndevs/0" and layer != "Ethernet"):
            unknown[k] = reason(e[k])
    if a.get("rate") is not None and rate["gbps"] is None:
        unknown["rate"] = f"not a rate: {a['rate']!r}"
    # the kernel writes "4: ACTIVE" and nothing else: other text is no state (unknown, not DOWN)
    if a.get("state") is not None and state_code is None:
        unknown["state"], state = f"not a value: {a['state']!r}", None
    if a.get("phys_state") is not None and phys_code is None:
        unknown["phys_state"], phys = f"not a value: {a['phys_state']!r}", None
    if layer == "InfiniBand":
        transport = "IB"
    elif layer == "Ethernet":
        transport = "iWARP" if node_type == "RNIC" else "RoCE"
    else:
        transport = None
    counters = counter_facts(_with_ext(p.get("counters"), p.get("counters_ext")))
    hw = counter_facts(p.get("hw_counters")) if p.get("hw_counters") is not None else None
    errors_nonzero = {k: v for k, v in counters["values"].items()
                      if k in ERROR_COUNTERS and v}
    data = {}
    for k, short in DATA_COUNTERS.items():
        if k in counters["values"]:
            v = counters["values"][k]
            data[short] = v * 4 if v is not None else None
    gid0 = (a.get("gids/0") or "").strip() or None
    active = state == "ACTIVE"
    port = Port(
        port=p["port"],
        state=state, state_code=state_code,
        phys_state=phys, phys_state_code=phys_code,
        rate_gbps=rate["gbps"] if active else None,
        rate=PortRate(**rate),
        link_layer=layer,
        transport=transport,
        netdev=None,
        lid=to_int(a.get("lid"), 0) if a.get("lid") is not None else None,
        sm_lid=to_int(a.get("sm_lid"), 0) if a.get("sm_lid") is not None else None,
        gid0=gid0,
        port_guid=(gid0.replace(":", "")[16:] if gid0 and len(gid0.replace(":", "")) == 32
                   else None),
        gid0_type=(a.get("gid_attrs/types/0") or "").strip() or None,
        gid0_netdev=(a.get("gid_attrs/ndevs/0") or "").strip() or None,
        counters=counters["values"] if p.get("counters") is not None else None,
        counters_unknown=counters["unknown"],
        counters_saturated=counters["saturated"],
        error_counters=errors_nonzero,
        data_bytes=data,
        hw_counters=hw["values"] if hw else None,
        hw_counters_unknown=hw["unknown"] if hw else {},
        unknown=unknown,
    )
    if not active and rate["gbps"] is not None:
        port.rate_note = "port not ACTIVE: the rate it shows is meaningless"
    # absent (no PMA), unreadable (EACCES...) and not read (deadline) are three answers
    port.counters_status = dir_status(p.get("counters"), p.get("counters_error"))
    port.hw_counters_status = dir_status(p.get("hw_counters"), p.get("hw_counters_error"))
    if port.counters_status == "absent":
        port.counters_note = "no counters/ directory (driver without PMA)"
    elif port.counters_status != "read":
        port.counters_note = f"counters/ {dir_reason(p.get('counters_error'))}"
    return port


def dir_status(listing: Any, err: Optional[str]) -> str:
    """``read``, ``absent`` (ENOENT), ``not read`` (deadline, limit) or ``unreadable``."""
    if listing is not None:
        return "read"
    if err is None or err.startswith("ENOENT"):
        return "absent"
    if err in (DEADLINE, LIMIT):
        return "not read"
    return "unreadable"


def dir_reason(err: Optional[str]) -> str:
    """Why a directory that is there was not read: ``unreadable: permission denied (EACCES)``."""
    if err is None or err.startswith("ENOENT"):
        return "absent"
    if err == DEADLINE:
        return "not read (the probe's time budget was spent)"
    if err == LIMIT:
        return "not read (the evidence reached its size limit)"
    name, _, msg = err.partition(": ")
    if name in ("EACCES", "EPERM"):
        return f"unreadable: permission denied ({name})"
    return f"unreadable: {msg.lower() if msg else err} ({name})" if msg else f"unreadable: {err}"


def port_netdev(port: Port, netdevs: List[Netdev]) -> Optional[str]:
    """The netdev of a port: RoCE's GID 0 netdev, else the function's netdev for this port."""
    if port.link_layer == "Ethernet":
        nd = port.gid0_netdev
        if nd:
            return nd
    cands = [n for n in netdevs
             if (n.dev_port if n.dev_port is not None else (n.dev_id or 0)) == port.port - 1]
    if not cands and len(netdevs) == 1:
        cands = list(netdevs)
    cands.sort(key=lambda n: ("." in n.name, n.name))  # pkey children (ib0.8001) last
    return cands[0].name if cands else None


#: The total line each AER file ends with, and the prefix of its counters in ``nonzero``.
_AER_FILES = {"aer_dev_correctable": ("TOTAL_ERR_COR", "correctable"),
              "aer_dev_nonfatal": ("TOTAL_ERR_NONFATAL", "nonfatal"),
              "aer_dev_fatal": ("TOTAL_ERR_FATAL", "fatal")}
#: Most counter lines read from one AER file (the kernel prints under 30).
_AER_LINES = 64


def aer_counts(pci: Dict[str, Dict[str, Any]], gpus: List[Dict[str, Any]],
               hcas: List[Any]) -> Optional[Dict[str, AerCounts]]:
    """The AER counters of the GPUs, the NICs' functions and the bridges above them (the
    ``aer_dev_*`` files; ``RxErr 0`` lines, then ``TOTAL_ERR_COR 0``); None when no device
    has them."""
    wanted: List[str] = []
    for g in gpus:
        wanted += list(g["chain"])
    for h in hcas:
        if h.pci is not None:
            wanted += list(h.pci.chain)
        if h.pci_address:
            wanted.append(h.pci_address)
    out: Dict[str, AerCounts] = {}
    for bdf in wanted:
        dev = pci.get(bdf)
        if dev is None or bdf in out or not dev.get("aer"):
            continue
        counts = AerCounts()
        for name, text in dev["aer"].items():
            total, prefix = _AER_FILES.get(name, ("", ""))
            if not total or not isinstance(text, str):
                continue
            for line in text.splitlines()[:_AER_LINES]:
                key, _, value = line.strip().partition(" ")
                n = to_int(value.strip())
                if n is None or not key:
                    continue
                if key == total:
                    setattr(counts, prefix, n)
                elif n:
                    counts.nonzero[f"{prefix}.{printable(key)[:40]}"] = n
        out[bdf] = counts
    return out or None
