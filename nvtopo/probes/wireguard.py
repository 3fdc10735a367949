"""The wireguard probe: the WireGuard mesh's peers and underlay (``docs/mesh.md``).

Capture finds WireGuard interfaces in ``/sys/class/net`` (``type`` 65534 and
``DEVTYPE=wireguard``); where there is none it runs nothing.  For each it runs
``wg show IF FIELD`` through the bounded runner (:mod:`.run`: argv only, no shell) for the
fields in :data:`FIELDS` only.  ``wg show IF dump``, ``wg show IF private-key``,
``preshared-keys`` and ``wg show IF`` without a field print secrets: they are never run,
and a test proves it.  Reading peers needs CAP_NET_ADMIN: without it ``wg`` says
"Operation not permitted", recorded as ``not permitted`` (peers unknown, never absent).
It also reads the IPv4 routing table ``/proc/net/route`` (bounded in bytes) to decide which
interface the tunnel's packets leave by.  The capture time is recorded: handshakes are aged
against it, so ``--from`` gives the same verdict any day.

:func:`derive` is pure: the recorded outputs parsed into :class:`~nvtopo.model.net.WgNode`.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any, Dict, List, Optional, Tuple

from ..model import Topology
from ..model.net import ARPHRD_NONE, WgDevice, WgNode, WgPeer
from ..safe import ascii_int, printable
from .deadline import Deadline
from .run import run
from .sysfs.read import Refused, list_dir, read_file

SOURCE = "wireguard"
#: The ``wg show IF <field>`` subcommands run: none of them prints a private or preshared key.
FIELDS = ("public-key", "listen-port", "peers", "endpoints", "allowed-ips",
          "latest-handshakes", "transfer", "persistent-keepalive")
#: Subcommands never run: they print the private key or preshared keys.
FORBIDDEN = ("dump", "private-key", "preshared-keys", "showconf")
#: Program run (found on PATH).
WG = "wg"
#: Bytes kept of one ``wg`` output (a peer is one line of ~100 bytes).
MAX_OUTPUT = 1024 * 1024
#: Bytes read of ``/proc/net/route`` (a line is 128 bytes).
MAX_ROUTE_BYTES = 1024 * 1024
#: Most WireGuard interfaces and peers per interface taken.
MAX_IFACES = 64
MAX_PEERS = 4096
#: Most ``class/net`` entries looked at (a container host has hundreds of veths).
MAX_NET_ENTRIES = 4096
RTF_UP = 0x1


def _read(path: str, limit: int) -> Tuple[Optional[str], Optional[str]]:
    try:
        return read_file(path, limit).decode("utf-8", "replace"), None
    except Refused as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"{exc.strerror or exc}"


def find_interfaces(sys_root: str = "/sys") -> List[str]:
    """The WireGuard interfaces of ``sys_root``'s ``class/net``."""
    base = os.path.join(sys_root, "class", "net")
    try:
        names = sorted(list_dir(base, MAX_NET_ENTRIES)[0])
    except OSError:
        return []
    found = []
    for name in names:
        typ, _ = _read(os.path.join(base, name, "type"), 64)
        if typ is None or ascii_int(typ.strip()) != ARPHRD_NONE:
            continue
        uevent, _ = _read(os.path.join(base, name, "uevent"), 4096)
        if any(line.strip() == "DEVTYPE=wireguard" for line in (uevent or "").splitlines()):
            found.append(name)
    return found[:MAX_IFACES]


def _status(rc: Optional[int], stderr: str, timed_out: bool) -> str:
    if timed_out:
        return "timeout"
    if rc == 0:
        return "ok"
    low = stderr.lower()
    if "not permitted" in low or "permission denied" in low:
        return "not permitted"
    return "failed"


def capture(options: Optional[Any] = None, sys_root: str = "/sys",
            route_path: str = "/proc/net/route") -> Dict[str, Any]:
    """Run the allowed ``wg show`` fields for each WireGuard interface; never raises for a
    missing ``wg``, no permission or a timeout (recorded per interface)."""
    if options is not None and options.foreign_root():
        return {"status": "not run", "captured_at": None, "interfaces": {}, "error": (
            f"--sysfs-root {options.sysfs_root} is another machine's tree: this machine's "
            "WireGuard peers would not describe it")}
    timeout = float(getattr(options, "timeout", None) or 30.0)
    deadline = Deadline(timeout)
    evidence: Dict[str, Any] = {"status": "ok", "error": None,
                                "captured_at": int(time.time()), "interfaces": {}}
    names = find_interfaces(sys_root)
    if not names:
        evidence["status"] = "absent"
        return evidence
    text, err = _read(route_path, MAX_ROUTE_BYTES)
    evidence["route"] = {"text": text, "error": err}
    program = shutil.which(WG)
    for name in names:
        entry: Dict[str, Any] = {"status": "ok", "error": None, "fields": {}}
        evidence["interfaces"][name] = entry
        if program is None:
            entry["status"], entry["error"] = "missing", f"{WG} not found on PATH"
            continue
        for fld in FIELDS:
            assert fld not in FORBIDDEN
            left = deadline.remaining()
            if left <= 0:
                entry["status"], entry["error"] = "timeout", f"no time left for wg show {fld}"
                break
            try:
                out = run([program, "show", name, fld], min(left, 10.0),
                          stdout_cap=MAX_OUTPUT, stderr_cap=4096)
            except OSError as exc:
                entry["status"], entry["error"] = "missing", f"{WG}: {exc.strerror or exc}"
                break
            stderr = out.stderr.decode("utf-8", "replace")[:1024]
            status = _status(out.returncode, stderr, out.timed_out)
            if status != "ok":
                entry["status"] = status
                entry["error"] = f"wg show {fld}: " + (stderr.strip() or (
                    "timed out" if out.timed_out else f"exit status {out.returncode}"))
                break
            if out.cut:
                entry["status"], entry["error"] = "failed", f"wg show {fld}: output cut"
                break
            entry["fields"][fld] = out.stdout.decode("utf-8", "replace")
    # taken after the handshakes were read: no handshake is newer than the capture
    evidence["captured_at"] = int(time.time())
    return evidence


# -- derive ------------------------------------------------------------------------------

def _key(s: str) -> Optional[str]:
    """A WireGuard public key: 44 characters of base64 ending in ``=``."""
    s = s.strip()
    ok = len(s) == 44 and s.endswith("=") and all(
        c.isascii() and (c.isalnum() or c in "+/") for c in s[:43])
    return s if ok else None


def _per_peer(text: Optional[str]) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for line in (text or "").splitlines()[:MAX_PEERS]:
        parts = line.split("\t")
        key = _key(parts[0])
        if key is not None:
            out[key] = [p.strip() for p in parts[1:]]
    return out


def _routes(text: Optional[str]) -> List[Tuple[str, int, int, int]]:
    """``(iface, destination, mask, metric)`` of the up routes of ``/proc/net/route``."""
    out: List[Tuple[str, int, int, int]] = []
    for line in (text or "").splitlines()[1:16384]:
        f = line.split("\t")
        if len(f) < 8:
            continue
        dest, flags = ascii_int(f[1].strip(), 16), ascii_int(f[3].strip(), 16)
        metric, mask = ascii_int(f[6].strip()), ascii_int(f[7].strip(), 16)
        if dest is None or flags is None or metric is None or mask is None \
                or not flags & RTF_UP:
            continue
        out.append((f[0].strip()[:32], dest, mask, metric))
    return out


def _ipv4_le(ep: str) -> Optional[int]:
    """``a.b.c.d:port`` as /proc/net/route writes addresses (host byte order, little)."""
    parts = ep.rpartition(":")[0].split(".")
    nums = [ascii_int(p, hi=255) for p in parts]
    if len(nums) != 4 or any(n is None for n in nums):
        return None
    return nums[0] | nums[1] << 8 | nums[2] << 16 | nums[3] << 24  # type: ignore[operator]


def _route_for(routes: List[Tuple[str, int, int, int]], addr: int, exclude: str
               ) -> Optional[str]:
    best = None
    for iface, dest, mask, metric in routes:
        if iface == exclude or addr & mask != dest:
            continue
        rank = (bin(mask).count("1"), -metric)
        if best is None or rank > best[0]:
            best = (rank, iface)
    return best[1] if best else None


def _underlay(dev: WgDevice, routes: List[Tuple[str, int, int, int]], default: Optional[str]
              ) -> None:
    fams = {p.endpoint_family() for p in dev.peers or () if p.endpoint}
    fams.discard(None)
    dev.underlay_family = fams.pop() if len(fams) == 1 else None
    via = set()
    for p in dev.peers or ():
        addr = _ipv4_le(p.endpoint or "") if p.endpoint_family() == "ipv4" else None
        if addr is not None:
            hop = _route_for(routes, addr, dev.name)
            if hop is not None:
                via.add(hop)
    if len(via) == 1:
        dev.underlay = via.pop()
        dev.underlay_by = "the route to its peers' endpoints (/proc/net/route, main table)"
    elif default is not None and not via:
        dev.underlay = default
        dev.underlay_by = ("the IPv4 default route (/proc/net/route): no endpoint route "
                           "recorded")
    elif via:
        dev.underlay_by = "its peers' endpoints route by several interfaces: " + ", ".join(
            sorted(via))
    else:
        dev.underlay_by = "no route recorded"


def derive(evidence: Dict[str, Any]) -> Topology:
    status = evidence.get("status")
    if status in ("absent", "skipped", "not run"):  # nothing to say here; the mesh check
        # says "peers not checked" where sysfs shows a WireGuard interface
        return Topology(sources=[])
    topo = Topology(sources=[SOURCE])
    if status != "ok":
        topo.note("wireguard.unavailable", f"no WireGuard facts: {evidence.get('error')}",
                  source=SOURCE)
        return topo
    route = evidence.get("route") or {}
    routes = _routes(route.get("text"))
    defaults = sorted((m, i) for i, d, mask, m in routes if d == 0 and mask == 0)
    default = defaults[0][1] if defaults else None
    captured = evidence.get("captured_at")
    node = WgNode(captured_at=captured if type(captured) is int else None,
                  default_route=default)
    ifaces = evidence.get("interfaces")
    for name, e in sorted((ifaces if isinstance(ifaces, dict) else {}).items()):
        if not isinstance(e, dict):
            continue
        name = printable(str(name))[:32]
        dev = WgDevice(name=name, status=str(e.get("status") or "failed")[:32],
                       error=printable(str(e["error"]))[:300] if e.get("error") else None)
        got = e.get("fields")
        fields: Dict[str, Any] = got if isinstance(got, dict) else {}
        dev.public_key = _key(fields.get("public-key") or "")
        port = (fields.get("listen-port") or "").strip()
        dev.listen_port = ascii_int(port, hi=65535) if port else None
        if dev.status == "ok" and "peers" in fields:
            eps, ips = _per_peer(fields.get("endpoints")), _per_peer(fields.get("allowed-ips"))
            hs, tr = _per_peer(fields.get("latest-handshakes")), _per_peer(fields.get("transfer"))
            ka = _per_peer(fields.get("persistent-keepalive"))
            peers = []
            for line in (fields.get("peers") or "").splitlines()[:MAX_PEERS]:
                key = _key(line)
                if key is None:
                    continue
                ep = (eps.get(key) or ["(none)"])[0]
                allowed = (ips.get(key) or ["(none)"])[0]
                t = tr.get(key) or []
                k = (ka.get(key) or ["off"])[0]
                peers.append(WgPeer(
                    public_key=key,
                    endpoint=None if ep in ("(none)", "") else printable(ep)[:64],
                    allowed_ips=[] if allowed in ("(none)", "") else
                    [printable(a)[:64] for a in allowed.replace(",", " ").split()][:256],
                    latest_handshake=ascii_int((hs.get(key) or [""])[0]),
                    rx_bytes=ascii_int(t[0]) if len(t) >= 2 else None,
                    tx_bytes=ascii_int(t[1]) if len(t) >= 2 else None,
                    keepalive_s=None if k == "off" else ascii_int(k, hi=65535)))
            dev.peers = peers
        _underlay(dev, routes, default)
        node.interfaces[name] = dev
    topo.wireguard = node
    return topo


__all__ = ["SOURCE", "FIELDS", "FORBIDDEN", "WG", "capture", "derive", "find_interfaces"]
