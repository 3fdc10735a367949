"""InfiniBand / RoCE ports: state, rate, link layer and error counters (sysfs)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

from ..model import Topology
from . import Finding, catalog, demote, facts as F, finding, roles as R
from . import subject as S
from .select import Selection


def check(topo: Topology, sel: Selection) -> List[Finding]:
    layout = sel.layout
    v = F.view(topo)
    out = _no_rdma_driver(topo)
    cut = _pasted_damage(topo, out)
    hcas = [(n, n.sysfs) for n in topo.nics if n.sysfs is not None]
    if not hcas:
        if layout is not None and layout.nics.stated and v.present:
            out.append(finding("info", "ib.not_checked", S.NODE,
                               "InfiniBand/RoCE ports not checked: no sysfs data in the input "
                               "(nvtopo snapshot on the node records it)",
                               source=", ".join(topo.sources)))
        return out
    ports = _Ports(topo, layout, hcas, cut)
    for n, h in hcas:
        for p in h.ports:
            out.extend(ports.port_findings(n, h, p))
    unknown = ports.unknown
    if unknown:
        out.append(finding("info", "ib.not_checked", S.NODE,
                           "not checked (unreadable in the input): " + ", ".join(unknown[:8])
                           + (f" and {len(unknown) - 8} more" if len(unknown) > 8 else ""),
                           source=", ".join(sorted({h.source or "sysfs" for _, h in hcas}))))
    return out


def _no_rdma_driver(topo: Topology) -> List[Finding]:
    """NIC functions with no RDMA device: a NIC all the same, reported as having no RDMA
    driver (not as no NIC)."""
    out: List[Finding] = []
    for note in topo.notes:
        if note.code == "sysfs.no_rdma_driver" and note.subject:
            out.append(finding(
                "warning", "ib.no_rdma_driver", S.nic(note.subject), note.message,
                expected="an RDMA device", actual="none", source=note.source,
                hint="load and bind the RDMA driver (modprobe mlx5_ib; MLNX_OFED or the inbox "
                     "rdma-core); check dmesg for mlx5_core errors and that the function is "
                     "not passed to a VM (vfio-pci)"))
    return out


def _card(h: Any) -> Optional[str]:
    dev = h.pci.device_id if h.pci is not None else None
    return str(h.hca_type or dev or "") or None  # hca_type: read even without PCI


def _thresholds(layout: Any) -> Dict[str, int]:
    """The error counter thresholds: the catalog's defaults, the layout's, then
    ``--thresholds`` (nvtopo/checks/catalog.py)."""
    return catalog.thresholds("ib", layout.nics.error_thresholds if layout is not None else None)


class _Ports:
    """The family's reading of the node's RDMA ports: each NIC's role (one answer to
    "which NICs are compute NICs", by structure first: roles.py), the layout's compute
    rate and link layer, the counter thresholds, the best rate of each port's peers, and
    what could not be read (one note at the end)."""

    def __init__(self, topo: Topology, layout: Any, hcas: List[Tuple[Any, Any]],
                 cut: Set[str]) -> None:
        self.cut = cut
        self.nic_roles = nic_roles = R.resolve(topo, layout)
        self.want_rate = layout.nics.compute.rate_gbps if layout is not None else None
        self.want_layer = layout.nics.compute.link_layer if layout is not None else None
        self.inferred = layout.nics.inferred("compute") if layout is not None else False
        self.thresholds = _thresholds(layout)
        # peers: the best rate among active ports of the same role (compute, or the others),
        # link layer and card model (a 25 Gb/s management port is not a 200 Gb/s storage
        # card "below its peers"; a card of the same model that trained slower is)
        self.peer_best: Dict[tuple, float] = {}
        for n, h in hcas:
            for p in h.ports:
                if p.state == "ACTIVE" and isinstance(p.rate_gbps, (int, float)) \
                        and not h.soft:
                    key = (p.link_layer, _peer_role(nic_roles.role(n.name)), _card(h))
                    self.peer_best[key] = max(self.peer_best.get(key, 0), p.rate_gbps)
        self.unknown: List[str] = []
        #: no GPU in the input (a pasted ibstat alone): a compute role says its evidence
        self.paste = not F.view(topo).present

    def port_findings(self, n: Any, h: Any, p: Any) -> List[Finding]:
        """One port: down, on the wrong link layer, slow, its error counters."""
        role = self.nic_roles.get(n.name)
        is_comp = role is not None and role.role == R.COMPUTE
        unknown_role = role is None or role.role == R.UNKNOWN
        # the port map names it a compute NIC and nothing confirms or denies it
        maybe_comp = unknown_role and (role is None or role.named or role.maybe_compute)
        subj = S.port(n.name, p.port)
        state, phys = p.state, p.phys_state
        if state is None:
            if n.name not in self.cut:  # a cut paste: said once, by ib.ports_unknown
                self.unknown.append(f"{subj} state")
            return []
        if state != "ACTIVE" or (phys is not None and phys != "LinkUp"):
            return [_port_down(n, h, subj, state, phys, role, is_comp, unknown_role,
                               self.paste)]
        out: List[Finding] = []
        layer = p.link_layer
        want_layer = self.want_layer
        wrong_layer = bool((is_comp or maybe_comp) and want_layer and layer
                           and layer != want_layer)
        if wrong_layer:
            out.append(self._wrong_layer(h, subj, p.rate_gbps, layer, role, is_comp))
        elif is_comp and want_layer and layer is None:
            self.unknown.append(f"{subj} link layer")
        out.extend(self._rate_low(h, p, subj, role, is_comp, wrong_layer))
        out.extend(self._counters(h, p, subj))
        if p.counters_unknown or p.counters_status in ("unreadable", "not read"):
            self.unknown.append(f"{subj} counters")
        return out

    def _wrong_layer(self, h: Any, subj: Any, rate: Any, layer: str,
                     role: Optional[R.Role], is_comp: bool) -> Finding:
        """One cause, one finding: a port on the wrong link layer trains at that network's
        rates, not comparable with its InfiniBand peers' (no rate_low)."""
        want_rate, want_layer = self.want_rate, self.want_layer
        at = f" at {rate:g} Gb/s" if isinstance(rate, (int, float)) else ""
        peers = f" at {want_rate:g} Gb/s" if isinstance(want_rate, (int, float)) else ""
        return finding(
            demote("error", self.inferred) if is_comp else "warning", "ib.link_layer",
            subj,
            f"{subj} runs {layer}{at}, the layout's compute ports run "
            f"{want_layer}{peers}" + ("; its rate is not compared with theirs "
                                      "(another network's rates)" if at else "")
            + ("" if is_comp else f" (role unknown: {_unknown_why(role)})"),
            expected=want_layer, actual=layer, source=h.source or "sysfs",
            hint="set the port type with mlxconfig (LINK_TYPE_P1) and reboot, or "
                 "use the layout for this network")

    def _rate_low(self, h: Any, p: Any, subj: Any, role: Optional[R.Role], is_comp: bool,
                  wrong_layer: bool) -> List[Finding]:
        """The port's rate below the layout's (a compute port) or its peers' best."""
        want_rate, rate = self.want_rate, p.rate_gbps
        expected_rate = None
        if wrong_layer:
            pass  # said by ib.link_layer
        elif is_comp and isinstance(want_rate, (int, float)):
            expected_rate = want_rate
        elif not h.soft:  # software RDMA (rxe, siw) has no real link rate
            best = self.peer_best.get((p.link_layer, _peer_role(role.role if role
                                                                else R.UNKNOWN), _card(h)))
            if best:
                expected_rate = best
        if isinstance(rate, (int, float)) and expected_rate and rate < expected_rate:
            return [finding(
                demote("error", self.inferred and expected_rate == want_rate) if is_comp
                else "warning",
                "ib.rate_low", subj,
                f"{subj} runs at {rate:g} Gb/s, expected {expected_rate:g} Gb/s"
                + (" (the layout's rate)" if expected_rate == want_rate and is_comp else
                   " (its peers' rate)"),
                expected=expected_rate, actual=rate, source=h.source or "sysfs",
                hint="a link trained slower: check the cable/transceiver and the switch "
                     "port speed (mlxlink -d DEV), then reseat", covers=[subj])]
        if rate is None and not wrong_layer:
            self.unknown.append(f"{subj} rate")
        return []

    def _counters(self, h: Any, p: Any, subj: Any) -> List[Finding]:
        """Error counters above the threshold (or stuck at their maximum): an error;
        nonzero below: a warning."""
        thresholds = self.thresholds
        errs = dict(p.error_counters)
        sat = list(p.counters_saturated)
        sat_err = [c for c in sat if c in thresholds]
        if not (errs or sat_err):
            return []
        over = {k: val for k, val in errs.items()
                if val > catalog.threshold("ib", thresholds, k)}
        sev = "error" if (over or sat_err) else "warning"
        txt = ", ".join(f"{k}={val}" + ("+" if k in sat else "")
                        for k, val in sorted(errs.items()))
        return [finding(
            sev, "ib.counter_errors", subj,
            f"{subj} error counters: {txt}"
            + (f" (stuck at their maximum: {', '.join(sat_err)}, so at least that)"
               if sat_err else "")
            + (f" (above the threshold for {', '.join(sorted(over))})" if over else "")
            + ("" if sev == "error" else " (small; counters are cumulative: watch "
               "whether they grow)"),
            # both limits, as they apply: a warning at any count above 0, an error above
            # the threshold ("symbol_error=0 (error above 100)"; over it: "<= 100")
            expected=", ".join(
                f"{k} <= {catalog.threshold('ib', thresholds, k)}" if k in over or k in sat_err
                else f"{k}=0 (error above {catalog.threshold('ib', thresholds, k)})"
                for k in sorted(errs)), actual=errs,
            source=h.source or "sysfs",
            hint="clear the counters (perfquery -x -R) and watch them grow; symbol "
                 "errors and link_downed point at the cable/transceiver",
            covers=[subj])]


def _port_down(n: Any, h: Any, subj: Any, state: str, phys: Optional[str],
               role: Optional[R.Role], is_comp: bool, unknown_role: bool,
               paste: bool = False) -> Finding:
    """A port not ACTIVE/LinkUp: an error on a compute port, else a warning.  A compute role
    decided from a paste alone (no GPU in the input) says its evidence."""
    return finding(
        "error" if is_comp else "warning", "ib.port_down", subj,
        f"{subj} is {state}/{phys or 'phys state unknown'}"
        + (f" (a compute port, by the paste: {_unknown_why(role)}; the GPU(s) it serves "
           "lose their RDMA path)" if is_comp and paste else
           " (a compute port: the GPU(s) behind it lose their RDMA path)"
           if is_comp else f" (role unknown: {_unknown_why(role)}; down may be "
           "by design)" if unknown_role else
           " (not a compute port: down may be by design)")
        + ("; phys state Disabled: administratively off" if phys == "Disabled"
           else "; phys state Polling: no link partner (cable, transceiver or "
           "switch port)" if phys == "Polling" else "; state INIT: the link is up but no "
           "subnet manager has configured the port (is the SM running, does it see this "
           "port?)" if state == "INIT" else ""),
        expected="ACTIVE/LinkUp", actual=f"{state}/{phys}" if phys else state, source=h.source or "sysfs",
        hint="check the cable/transceiver and the switch port (ibstat, "
             "mlxlink -d DEV); Disabled: ibportstate / the subnet manager; "
             "then reseat", covers=[subj, S.nic(n.name)])


def _peer_role(role: str) -> str:
    """The ports a port's rate is compared with (of its link layer and card model): compute
    ports with compute ports, the others (storage, management, role unknown) together (the
    card model tells a management port from a storage card)."""
    return R.COMPUTE if role == R.COMPUTE else "other"


def _unknown_why(role: Optional[R.Role]) -> str:
    return role.why() if role is not None else "not a NIC the roles know"


#: Notes of the pasted-text reader (nvtopo/probes/ib_text.py) on a device whose ports the
#: paste does not show.
_CUT_NOTES = ("ib_text.no_ports", "ib_text.ports_cut")


def _pasted_damage(topo: Topology, out: List[Finding]) -> Set[str]:
    """A pasted ibstat/ibv_devinfo/ibstatus text that stops before it shows a device's ports,
    or that ibstat ended with ``ibpanic:``: a warning (``ib.ports_unknown``), never an error,
    so that the verdict is not a clean PASS about ports the paste never showed.  Returns the
    devices so covered (their unknown port states are not listed again as not checked)."""
    cut: Set[str] = set()
    for note in topo.notes:
        if note.code in _CUT_NOTES and note.subject and note.subject not in cut:
            cut.add(note.subject)
            out.append(finding(
                "warning", "ib.ports_unknown", S.nic(note.subject), note.message,
                expected="every port of the device, with its state", actual="not in the text",
                source=note.source,
                hint="paste the whole output (ibstat, or ibstat DEVICE), or take a snapshot "
                     "on the node (nvtopo snapshot): sysfs holds the same facts"))
        elif note.code == "ib_text.aborted":
            out.append(finding(
                "warning", "ib.ports_unknown", S.NODE, note.message,
                expected="ibstat listing every device", actual="stopped early",
                source=note.source,
                hint="a device went away while ibstat listed it (or its driver failed): run "
                     "ibstat again; ls /sys/class/infiniband and dmesg (mlx5_core) say which"))
    return cut
