"""Kernel log events (``docs/events.md`` §3): what a pasted ``dmesg``/``journalctl -k``/
``kern.log`` says happened, one finding per root cause, on the device the model names.

* An Xid is judged by the recovery action NVIDIA documents for its code (``xid.json``):
  reset, reboot, drain or inspect the hardware is an error; restarting the application, or
  nothing, a warning.  The NVLink codes are findings on their link (``GPU3 link 11``); a
  non-fatal one is a warning.  Xid 45 and 43 (the driver cleaning up after an earlier error)
  are folded into the fault they follow (the one their line names, ``caused by previous Xid
  149``, else the latest root before them in the same boot); Xid 154 (the recovery action
  asked) into its GPU's fault, whose message names the action.
* A GPU fallen off the bus (Xid 79, or the driver's line without an Xid) is one error, with
  the fatal AER errors of the GPU or of the bridge above it folded in.
* GSP timeouts: Xid 119, with the driver's ``GPUn`` heartbeat and timeout lines that name
  the same ``GPUn``; lines naming only the driver's index are their own finding.
* SXid from an NVSwitch: one finding per switch and code, naming its links.
* PCIe AER: uncorrected fatal is an error, non-fatal a warning; corrected errors are a
  warning on a device on the data path (a GPU, a NIC, an NVSwitch, a bridge above them) and
  an info note elsewhere.
* A NIC port that went down and up twice or more within :data:`FLAP_WINDOW_S` is a flap; one
  left down is a warning; a single INIT->ACTIVE (a boot) is nothing.
* NVMe: a controller reset is a warning; a controller that went down (``CSTS=0xffffffff``,
  fallen off the bus) an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from . import Finding, finding
from . import subject as S
from .select import Selection
from ..model import Topology
from ..model.events import KernelEvent, xid_info

if TYPE_CHECKING:  # imported by check() only when a kernel log was read (start-up time)
    from .event_join import Joined, Where

SOURCE = "kernel-log"
#: Down/up cycles of a port within this many seconds make a flap.
FLAP_WINDOW_S = 3600.0
#: A consequence (Xid 45) is folded into a root at most this many seconds before it.
FOLLOW_WINDOW_S = 300.0
#: Actions that make an Xid an error.
ERROR_ACTIONS = ("reset_gpu", "reboot", "drain", "inspect_hw")
#: Xid 79 and 119 have findings of their own.
OFF_BUS_XID, GSP_XID = 79, 119
#: Xid 154's recovery actions that ask for something (``None`` asks nothing).
_ASKING = ("reset", "reboot", "drain")


def _at(e: KernelEvent) -> str:
    return f"line {e.line}" + (f", {e.time}" if e.time else "")


def _times(events: List[KernelEvent]) -> str:
    n = len(events)
    first = _at(events[0])
    return f"{n} time{'s' if n > 1 else ''}, first at {first}" + (
        f", last at {_at(events[-1])}" if n > 1 else "")


def _close(a: KernelEvent, b: KernelEvent, window: float) -> bool:
    """``b`` at most ``window`` seconds after ``a`` (unknown times: close)."""
    if a.seconds is None or b.seconds is None:
        return True
    return 0.0 <= b.seconds - a.seconds <= window


class _Root:
    """One root cause being gathered: its events, and the consequences folded into it."""

    def __init__(self, key: Tuple[Any, ...], first: KernelEvent) -> None:
        self.key = key
        self.events: List[KernelEvent] = [first]
        self.folded: List[KernelEvent] = []

    @property
    def last(self) -> KernelEvent:
        return self.events[-1]


def check(topo: Topology, sel: Selection) -> List[Finding]:
    log = topo.kernel_log
    aer = topo.sysfs.aer if topo.sysfs is not None else None
    if log is None and not aer:
        return []
    from .event_join import Where

    where = Where(topo)
    out: List[Finding] = _aer_counted(aer or {}, where)
    if log is None:
        return out
    events = log.events
    out += _xids(events, where)
    out += _sxids(events, where)
    out += _aers(events, where)
    out += _ports(events, where, topo, sel)
    out += _nvme(events, where)
    out += _unchecked(log, events)
    return out


# --- Xid ---------------------------------------------------------------------------------


def _xid_key(e: KernelEvent) -> Tuple[Any, ...]:
    info = xid_info(e.code) or {}
    if e.kind == "off_bus" or e.code == OFF_BUS_XID:
        return ("off_bus", e.pci_address, e.line if e.pci_address is None else 0)
    if e.code == GSP_XID:
        return ("gsp", e.pci_address, e.line if e.pci_address is None else 0)
    if info.get("nvlink"):
        return ("nvlink", e.pci_address, e.line)
    return ("xid", e.pci_address, e.code, e.line if e.pci_address is None else 0)


class _Roots:
    """The roots gathered so far, in log order, indexed so that each event costs O(1): by
    key, the latest by (kind, address), by address and by Xid code."""

    def __init__(self) -> None:
        self.order: List[_Root] = []
        self.by_key: Dict[Tuple[Any, ...], _Root] = {}
        self.by_place: Dict[Tuple[Any, ...], _Root] = {}
        self.by_addr: Dict[str, _Root] = {}
        self.by_code: Dict[str, _Root] = {}
        self.latest: Optional[_Root] = None

    def add(self, e: KernelEvent) -> None:
        key = _xid_key(e)
        if key[0] == "nvlink" and e.pci_address is not None:
            # one GPU's NVLink errors close in time are one fault, whatever links they name
            near = self.by_place.get(key[:2])
            if near is not None and _close(near.last, e, FOLLOW_WINDOW_S):
                key = near.key
        root = self.by_key.get(key)
        if root is None:
            root = self.by_key[key] = _Root(key, e)
            self.order.append(root)
            self.by_place[key[:2]] = root
        else:
            root.events.append(e)
        if e.pci_address:
            self.by_addr[e.pci_address] = root
        self.by_code[str(e.code)] = root
        self.latest = root

    def fold(self, e: KernelEvent) -> bool:
        """Fold consequence ``e`` (Xid 45/43, or 154) into the root it follows, among those
        before it: 154 into its own GPU's; 45 into the root its line names (``after Xid
        N``), else the latest, at most :data:`FOLLOW_WINDOW_S` before it."""
        if e.code == 154:
            root = self.by_addr.get(e.pci_address or "")
        elif e.state and e.state.startswith("after Xid "):
            root = self.by_code.get(e.state[len("after Xid "):]) or self._close(e)
        else:
            root = self._close(e)
        if root is None:
            return False
        root.folded.append(e)
        return True

    def _close(self, e: KernelEvent) -> Optional[_Root]:
        r = self.latest
        return r if r is not None and _close(r.last, e, FOLLOW_WINDOW_S) else None


def _xids(events: List[KernelEvent], where: Where) -> List[Finding]:
    roots = _Roots()
    orphans: List[KernelEvent] = []
    for e in events:
        if e.kind not in ("xid", "off_bus"):
            continue
        info = xid_info(e.code) or {}
        if e.kind == "xid" and (info.get("follows") or e.code == 154):
            if not roots.fold(e):
                orphans.append(e)
            continue
        roots.add(e)
    fatal = _fatal_aer(events)
    lone_gsp = _gsp_lines(events, roots.order, where)
    out = [_xid_finding(r, where, fatal) for r in roots.order]
    return out + _orphans(orphans, where) + lone_gsp


def _consequences(r: "_Root", where: Where) -> str:
    """The sentence naming what was folded into a root."""
    if not r.folded:
        return ""
    parts = []
    gsp = [e for e in r.folded if e.kind == "gsp_timeout"]
    if gsp:
        parts.append(f"with {len(gsp)} GSP timeout line{'s' if len(gsp) > 1 else ''} of "
                     f"{gsp[0].device} before it")
    cleanup = [e for e in r.folded if e.kind == "xid" and e.code != 154]
    if cleanup:
        names = sorted({where.gpu_named(e.pci_address).name for e in cleanup})
        codes = "/".join(sorted({str(e.code) for e in cleanup}))
        parts.append(f"it also explains Xid {codes} on {', '.join(names[:8])}"
                     + (f" and {len(names) - 8} more" if len(names) > 8 else "")
                     + f" ({len(cleanup)} line{'s' if len(cleanup) > 1 else ''}: the driver "
                     "ending the work the fault disrupted)")
    asked = [e.state for e in r.folded if e.code == 154 and e.state]
    if asked:
        parts.append(f"the driver asks: {asked[-1]} (Xid 154)")
    return "; " + "; ".join(parts)


def _action(info: Dict[str, Any], r: "_Root") -> Tuple[str, str]:
    """The root's action key and the words for it, raised by a folded Xid 154."""
    action = str(info.get("action", "inspect_hw"))
    asked = [e.state for e in r.folded if e.code == 154 and e.state]
    if asked and any(w in asked[-1].lower() for w in _ASKING):
        return "reboot" if "reboot" in asked[-1].lower() else "reset_gpu", asked[-1]
    words = {"none": "no action", "restart_app": "restart the application",
             "reset_later": "reset the GPU once its work is done",
             "reset_gpu": "reset the GPU", "reboot": "reboot the node",
             "drain": "drain the node, then reset", "inspect_hw": "inspect the hardware"}
    return action, words.get(action, action)


def _xid_finding(r: "_Root", where: Where, fatal: Dict[str, List[KernelEvent]]) -> Finding:
    kind = r.key[0]
    e = r.events[0]
    if kind == "off_bus":
        return _off_bus(r, where, fatal)
    if kind == "gsp":
        who = where.gpu_named(e.pci_address)
        return finding("error", "events.gsp_timeout", who.subject,
                       f"Xid 119 (GSP RPC timeout) on {who.name}, {_times(r.events)}: the GPU "
                       "System Processor did not answer the driver" + _consequences(r, where),
                       expected="no GSP timeout", actual="Xid 119", source=SOURCE,
                       hint="reset the GPU (nvidia-smi -r); reboot if it recurs; update the "
                            "driver if the release notes name the timeout")
    info = xid_info(e.code) or {}
    action, said = _action(info, r)
    name = info.get("name", f"Xid {e.code}, not in nvtopo's Xid table")
    if kind == "nvlink":
        return _nvlink(r, where, name, said)
    who = where.gpu_named(e.pci_address)
    sure = bool(info) and info.get("checked", True) is not False
    sev = "error" if sure and action in ERROR_ACTIONS else "warning"
    return finding(sev, "events.xid", who.subject,
                   f"Xid {e.code} ({name}) on {who.name}, {_times(r.events)}: "
                   f"{info.get('meaning', 'a code nvtopo does not know')}; action: {said}"
                   + _consequences(r, where),
                   expected="no Xid", actual=f"Xid {e.code}", source=SOURCE,
                   hint="NVIDIA's Xid catalog gives the action per code; run nvidia-bug-report.sh "
                        "before resetting if the fault recurs")


def _nvlink(r: "_Root", where: Where, name: str, said: str) -> Finding:
    """One GPU's NVLink errors: on its link (``GPU3 link 11``), or on the GPU naming its
    links when they are several."""
    e = r.events[0]
    info = xid_info(e.code) or {}
    links = sorted({x.link for x in r.events if x.link is not None})
    one = links[0] if len(links) == 1 else None
    who = where.gpu_named(e.pci_address, link=one)
    nonfatal = all(x.severity == "non-fatal" for x in r.events)
    codes = "/".join(sorted({str(x.code) for x in r.events}))
    base = where.gpu_named(e.pci_address).name
    on = base + (f" link {one}" if one is not None else
                 f" links {', '.join(map(str, links))}" if links else
                 " (the line names no link)")
    return finding(
        "warning" if nonfatal else "error", "events.nvlink", who.subject,
        f"NVLink Xid {codes} ({name}{', non-fatal' if nonfatal else ''}) on {on} "
        f"({_times(r.events)}): {info.get('meaning', '')}; action: {said}"
        + _consequences(r, where),
        expected="no NVLink error", actual=f"Xid {codes}", source=SOURCE,
        hint="reset the GPU; if the link errs again, reseat or replace what the link "
             "crosses (cable, tray, NVSwitch) and read its counters (nvidia-smi nvlink -e)")


def _fatal_aer(events: List[KernelEvent]) -> Dict[str, List[KernelEvent]]:
    """Uncorrected fatal AER events by device and by reporting port."""
    out: Dict[str, List[KernelEvent]] = {}
    for e in events:
        if e.kind == "aer" and e.severity == "fatal":
            for addr in {e.pci_address, e.reporter}:
                if addr:
                    out.setdefault(addr, []).append(e)
    return out


def _off_bus(r: "_Root", where: Where, fatal: Dict[str, List[KernelEvent]]) -> Finding:
    e = r.events[0]
    who = where.gpu_named(e.pci_address)
    aer = fatal.get(e.pci_address or "", [])
    also = (f"; the fatal PCIe AER error{'s' if len(aer) > 1 else ''} before it "
            f"({', '.join(sorted({x.error_type or '?' for x in aer}))} at {_at(aer[0])}) "
            "are part of it") if aer else ""
    how = "Xid 79" if any(x.kind == "xid" for x in r.events) else "the driver's line (no Xid)"
    return finding("error", "events.off_bus", who.subject,
                   f"{who.name} has fallen off the bus ({how}; {_times(r.events)}): the GPU "
                   "stopped answering on PCIe" + also + _consequences(r, where),
                   expected="on the bus", actual="fallen off the bus", source=SOURCE,
                   hint="drain the node and reboot; if it recurs, inspect the GPU's power, "
                        "cooling and seating, and the PCIe link (lspci -vv, AER counters)")


def _orphans(orphans: List[KernelEvent], where: Where) -> List[Finding]:
    """Consequences whose cause the log does not hold (cut before it), and a lone Xid 154."""
    out: List[Finding] = []
    groups: Dict[Tuple[Optional[str], Optional[int]], List[KernelEvent]] = {}
    for e in orphans:
        groups.setdefault((e.pci_address, e.code), []).append(e)
    for (addr, code), evs in groups.items():
        who = where.gpu_named(addr)
        if code == 154:
            asked = evs[-1].state or "an action"
            if any(w in asked.lower() for w in _ASKING):
                out.append(finding("error", "events.xid", who.subject,
                                   f"Xid 154 on {who.name} ({_times(evs)}): the driver says "
                                   f"the GPU needs: {asked}", expected="no recovery action",
                                   actual=asked, source=SOURCE,
                                   hint="do what the driver asks; the Xid before it (not in "
                                        "this log) says why"))
            continue
        out.append(finding("info", "events.after_unseen", who.subject,
                           f"Xid {code} on {who.name} ({_times(evs)}): the driver cleaning up "
                           "after an earlier error this log does not hold (cut before it?)",
                           source=SOURCE, hint="read the log from before the first line pasted"))
    return out


def _gsp_lines(events: List[KernelEvent], roots: List["_Root"],
               where: Where) -> List[Finding]:
    """GSP timeout lines naming only the driver's ``GPUn``: folded into an Xid 119 whose
    text names the same ``GPUn``, else one finding per ``GPUn``."""
    out: List[Finding] = []
    by_gpu: Dict[str, List[KernelEvent]] = {}
    for e in events:
        if e.kind == "gsp_timeout" and e.pci_address is None:
            by_gpu.setdefault(e.device or "GPU?", []).append(e)
    for dev, evs in by_gpu.items():
        hits = [r for r in roots if r.key[0] == "gsp" and f"from {dev} GSP" in r.events[0].text]
        if hits:
            hits[0].folded.extend(evs)
            continue
        out.append(finding("error", "events.gsp_timeout",
                           S.other(f"{dev} (the driver's GPU index)"),
                           f"GSP timeout on {dev} (the driver's index: the line gives no "
                           f"address), {_times(evs)}: the GPU System Processor stopped "
                           "answering", expected="no GSP timeout", actual="GSP timeout",
                           source=SOURCE,
                           hint="reset the GPU or reboot; nvidia-smi -q maps the driver's "
                                "index to a bus id"))
    return out


# --- SXid, AER ---------------------------------------------------------------------------


def _sxids(events: List[KernelEvent], where: Where) -> List[Finding]:
    """One finding per NVSwitch and SXid code, naming its links."""
    groups: Dict[Tuple[Optional[str], Optional[str], Optional[int]], List[KernelEvent]] = {}
    for e in events:
        if e.kind == "sxid":
            groups.setdefault((e.device, e.pci_address, e.code), []).append(e)
    out: List[Finding] = []
    for (dev, addr, code), evs in groups.items():
        links = sorted({e.link for e in evs if e.link is not None})
        fatal = any(e.severity == "fatal" for e in evs)
        name = f"{dev} ({addr})" if addr else f"{dev} (address redacted in the log)"
        subj = S.switch(addr) if addr else S.other(str(dev))
        on = f" on link{'s' if len(links) > 1 else ''} {', '.join(map(str, links))}" \
            if links else ""
        out.append(finding(
            "error" if fatal else "warning", "events.sxid", subj,
            f"SXid {code} ({'fatal' if fatal else 'non-fatal'}) from NVSwitch {name}{on}, "
            f"{_times(evs)}", expected="no SXid", actual=f"SXid {code}", source=SOURCE,
            hint="a fatal SXid needs the switch's GPUs reset (or a reboot) and "
                 "nvidia-fabricmanager restarted; a recurring one on a link: inspect that "
                 "link's cable or tray"))
    return out


def _aers(events: List[KernelEvent], where: Where) -> List[Finding]:
    """AER errors by device and severity; fatal ones on a GPU that then fell off the bus are
    that GPU's finding."""
    off = {e.pci_address for e in events
           if e.pci_address and (e.kind == "off_bus" or (e.kind == "xid" and e.code == 79))}
    groups: Dict[Tuple[Optional[str], Optional[str]], List[KernelEvent]] = {}
    for e in events:
        if e.kind != "aer":
            continue
        if e.severity == "fatal" and (e.pci_address in off or e.reporter in off):
            continue
        groups.setdefault((e.pci_address, e.severity), []).append(e)
    out: List[Finding] = []
    for (addr, sev), evs in groups.items():
        e = evs[0]
        who = where.join(addr, driver=e.device)
        reporter = e.reporter if e.reporter and e.reporter != addr else None
        by = f", reported by port {reporter}" if reporter else ""
        types = ", ".join(sorted({x.error_type or "?" for x in evs}))
        bits = sorted({b for x in evs for b in (x.errors or [])})
        said = f"PCIe AER {sev} error{'s' if len(evs) > 1 else ''} ({types}" + (
            f": {', '.join(bits[:6])}" if bits else "") + f") on {who.name}{by}, {_times(evs)}"
        out.append(_aer_finding(sev, who, said))
    return out


def _aer_finding(sev: Optional[str], who: Joined, said: str) -> Finding:
    if sev == "corrected":
        on_path = who.data_path
        return finding(
            "warning" if on_path else "info", "events.aer_corrected", who.subject,
            said + (": corrected by the link (retried), but a link that keeps correcting is "
                    "degrading" if on_path else ": not a device the data path crosses"),
            expected="no AER error", actual="corrected", source=SOURCE,
            hint="watch the device's AER counters (aer_dev_correctable) over time (nvtopo "
                 "trend); reseat the card or riser if they climb")
    return finding(
        "error" if sev == "fatal" else "warning", "events.aer_uncorrected", who.subject,
        said + (": the link was reset, and the device's work with it" if sev == "fatal" else
                ": a transaction was lost (the driver may have recovered it)"),
        expected="no AER error", actual=sev, source=SOURCE,
        hint="drain the node; reseat the device and its riser, check the slot's power; "
             "lspci -vv shows the AER status")


def _aer_counted(aer: Dict[str, Any], where: Where) -> List[Finding]:
    """A snapshot's sysfs AER counters: uncorrected errors since boot on a GPU, a NIC or a
    bridge above them (corrected ones are for ``nvtopo trend``: a rate, not a count)."""
    out: List[Finding] = []
    for addr, a in sorted(aer.items()):
        bad = {k: v for k, v in (("non-fatal", a.nonfatal), ("fatal", a.fatal)) if v}
        if not bad:
            continue
        who = where.join(addr)
        bits = [k.split(".", 1)[1] for k in a.nonzero if not k.startswith("correctable.")]
        said = ", ".join(f"{v} {k}" for k, v in bad.items())
        out.append(finding(
            "warning" if who.data_path else "info", "events.aer_counted", who.subject,
            f"{who.name} counted uncorrected PCIe AER errors since boot: {said}"
            + (f" ({', '.join(bits[:6])})" if bits else "") + " (sysfs aer_dev_*)",
            expected=0, actual=sum(bad.values()), source="sysfs",
            hint="read the kernel log for the AER lines (nvtopo check --from kern.log --from "
                 "this snapshot says which event); reseat the device if they recur"))
    return out


# --- NIC ports, NVMe, what was not read -----------------------------------------------------

_DOWN, _UP = ("down",), ("up", "active")
#: A port's down/up in the first seconds after boot is link training, not a fault.
BOOT_S = 120.0


def _port_key(e: KernelEvent, where: Where) -> Tuple[str, Optional[str], Optional[int]]:
    """``(device name, address, port)``: a net device the model knows is its NIC's port."""
    if e.pci_address is None:
        known = where.netdev(e.device)
        if known is not None:
            return known[0], known[1], 1
        return e.device or "?", None, e.port
    joined = where.join(e.pci_address)
    # a NIC's PCI function has one port: its netdev's "Link down" and its "Port: 1" lines are
    # the same port
    return joined.nic or e.device or "?", e.pci_address, e.port or 1


def _at_boot(e: KernelEvent) -> bool:
    t = e.time or ""
    return t.startswith("[") and t[1:2] in (" ", "0", "1", "2", "3", "4", "5", "6", "7",
                                             "8", "9") and (e.seconds or 0.0) < BOOT_S


def _ports(events: List[KernelEvent], where: Where, topo: Topology,
           sel: Selection) -> List[Finding]:
    keys: Dict[Tuple[str, Optional[str], Optional[int]], List[KernelEvent]] = {}
    for e in events:
        if e.kind == "port" and not _at_boot(e):
            k = _port_key(e, where)
            keys.setdefault((k[0] if k[1] is None else "", k[1], k[2]), []).append(e)
    compute = _compute(topo, sel) if where.modelled else None
    out: List[Finding] = []
    for (name, addr, port), evs in keys.items():
        downs = [e for e in evs if e.state in _DOWN]
        if not downs:
            continue
        nic = where.join(addr).nic if addr else (name if name in (compute or []) else None)
        label = nic or (evs[0].device if addr is None else f"{evs[0].device or ''} "
                        f"{addr}".strip())
        subj = S.port(nic, port) if nic else S.other(str(label))
        said = f"{label}" + (f" port {port}" if port is not None and nic else "")
        last = evs[-1].state
        span_ok = _close(downs[0], downs[-1], FLAP_WINDOW_S)
        if len(downs) >= 2 and span_ok:
            sure = (nic in compute) if compute is not None and nic else \
                (compute is None and "mlx" in (evs[0].text or ""))
            out.append(finding(
                "error" if sure else "warning", "events.port_flap", subj,
                f"{said} flapped: down {_times(downs)}"
                + ("; it is down at the log's end" if last in _DOWN else ", up again at the "
                   "end") + ("" if sure else " (role unknown)"),
                expected="up, steady", actual=f"{len(downs)} downs", source=SOURCE,
                hint="inspect the cable and transceiver at both ends (and the switch port); "
                     "read the port's link_downed and symbol_error counters"))
        else:
            out.append(finding(
                "warning", "events.port_down", subj,
                f"{said} went down ({_times(downs)})" + (
                    " and the log does not show it up again" if last in _DOWN else
                    ", and came back up"), expected="up", actual=last, source=SOURCE,
                hint="check the port's state now (ibstat, ip link) and the switch's log"))
    return out


def _compute(topo: Topology, sel: Selection) -> Optional[List[str]]:
    if not topo.nics:
        return None
    from .roles import compute_nics

    return compute_nics(topo, sel.layout)[0]


def _nvme(events: List[KernelEvent], where: Where) -> List[Finding]:
    groups: Dict[str, List[KernelEvent]] = {}
    for e in events:
        if e.kind == "nvme_reset":
            groups.setdefault(e.device or e.pci_address or "?", []).append(e)
    out: List[Finding] = []
    for dev, evs in groups.items():
        addr = where.nvme_names.get(dev) or evs[0].pci_address
        name = f"NVMe {dev}" + (f" {addr}" if addr and addr != dev else "")
        down = any("controller is down" in e.text or "CSTS=0xffffffff" in e.text for e in evs)
        resets = [e for e in evs if e.state == "reset"]
        what = ("the controller went down (it stopped answering on PCIe) and was reset"
                if down else f"{len(resets)} controller reset{'s' if len(resets) != 1 else ''}"
                if resets else "I/O timeouts (no reset yet)")
        out.append(finding(
            "error" if down else "warning", "events.nvme_reset", S.other(name),
            f"{name}: {what}, {_times(evs)}", expected="no reset", actual=evs[-1].state,
            source=SOURCE,
            hint="read the drive's health (nvme smart-log) and its PCIe link; an NVMe drive "
                 "behind a GPU's switch shares that switch's link"))
    return out


def _unchecked(log: Any, events: List[KernelEvent]) -> List[Finding]:
    out: List[Finding] = []
    hidden = [e for e in events if e.redacted]
    if hidden:
        out.append(finding("info", "events.not_checked", S.NODE,
                           f"{len(hidden)} event line(s) name no device: the log redacts "
                           f"their addresses (first at {_at(hidden[0])}); their findings say "
                           "so, and are not joined to the node's devices", source=SOURCE))
    if log.cut or log.dropped:
        out.append(finding("info", "events.not_checked", S.NODE,
                           "the kernel log was not read to its end ("
                           + (f"{log.dropped} events past the most kept" if log.dropped else
                              f"only its first {log.lines} lines") + ")", source=SOURCE))
    return out


__all__ = ["check", "FLAP_WINDOW_S", "FOLLOW_WINDOW_S"]
