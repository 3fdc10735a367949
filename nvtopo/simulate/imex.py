"""IMEX on simulated GB200/GB300 trays (``docs/imex.md``).

A node of a layout with a multi-node NVLink domain (``domain.nodes``: a GB200 NVL72 tray) gets
the ``imex`` probe's evidence, as :func:`nvtopo.probes.imex.capture` records it: the
``nvidia-imex-ctl -N -j`` JSON of its rack's IMEX domain and the tray's own host name and
address.  Healthy, every member is READY and every connection CONNECTED: ``UP``.  Alone, a
tray is member 0 of a full rack; in a fleet the members are the rack's trays that are in the
fleet (a ``missing-tray`` is not configured), in slot order.

Node fault (``--fault``, with ``--nodes`` as ``NODE:SPEC``): ``imex-down`` (the tray's IMEX
daemon did not start: its own view ``DOWN``, every member UNAVAILABLE; the other trays of its
rack see it UNAVAILABLE: ``DEGRADED``).  Fleet fault (:data:`FLEET_IMEX_FAULTS`):
``imex-one-way:NODE:OTHER`` (NODE's connection to OTHER is ``DISCONNECTED`` while OTHER's
to NODE is ``CONNECTED``; two trays of one rack).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from ..errors import NvtopoError
from ..safe import ascii_int, is_ascii_digits

#: Node faults of IMEX: kind -> (syntax, what).
IMEX_FAULTS: Dict[str, Tuple[str, str]] = {
    "imex-down": ("imex-down", "the tray's IMEX daemon did not start: its domain DOWN, every "
                               "member UNAVAILABLE"),
}
#: Fleet faults of IMEX: kind -> syntax and what.
FLEET_IMEX_FAULTS: Dict[str, str] = {
    "imex-one-way": "NODE:OTHER: NODE sees OTHER as D (disconnected) while OTHER sees NODE "
                    "as C (two trays of one rack)",
}
VERSION = "570.172.08"


def is_imex_fault(spec: str) -> bool:
    return spec.strip().partition(":")[0] in IMEX_FAULTS


def parse(spec: str, layout: Any) -> str:
    """An IMEX node fault's kind; one line when malformed or the layout has no domain."""
    kind, _, rest = spec.strip().partition(":")
    if kind not in IMEX_FAULTS or rest:
        raise NvtopoError(f"malformed; expected {IMEX_FAULTS.get(kind, ('imex-down',))[0]}",
                          where=f"--fault {spec}")
    if not domain_nodes(layout):
        raise NvtopoError(f"the {layout.name} layout has no multi-node NVLink domain (no IMEX)",
                          where=f"--fault {spec}")
    return kind


def domain_nodes(layout: Any) -> Optional[int]:
    nodes = layout.domain.nodes
    return nodes if isinstance(nodes, int) and nodes > 1 else None


def address(i: int) -> str:
    """Tray ``i``'s address on the IMEX network."""
    return f"10.{128 + (i >> 15) % 64}.{1 + ((i >> 8) & 127)}.{i & 255}"


@dataclass
class Imex:
    """The IMEX domain as one tray sees it: fleet indices of the members, in slot order."""

    me: int
    members: List[int]
    hostname: str = ""
    down: Set[int] = field(default_factory=set)
    #: (from, to) fleet indices whose connection is DISCONNECTED
    cut: Set[Tuple[int, int]] = field(default_factory=set)


def lone(layout: Any, specs: List[str], hostname: str) -> Optional[Imex]:
    """A tray simulated alone: member 0 of a full rack (None: not a multi-node layout)."""
    size = domain_nodes(layout)
    kinds = [parse(s, layout) for s in specs]
    if size is None:
        return None
    return Imex(me=0, members=list(range(size)), hostname=hostname,
                down={0} if "imex-down" in kinds else set())


def parse_fleet_fault(kind: str, args: Tuple[str, ...], nodes: int, size: Optional[int],
                      spec: str) -> None:
    if len(args) != 2:
        raise NvtopoError(f"expected {FLEET_IMEX_FAULTS[kind]}", where=f"fault {spec}")
    got = [ascii_int(a) if is_ascii_digits(a) else None for a in args]
    for a, n in zip(args, got):
        if n is None or not 0 <= n < nodes:
            raise NvtopoError(f"node {a!r} is out of range (0..{nodes - 1})",
                              where=f"fault {spec}")
    if size is None:
        raise NvtopoError("the layout has no multi-node NVLink domain (no IMEX)",
                          where=f"fault {spec}")
    one, other = got[0] or 0, got[1] or 0
    if one == other or one // size != other // size:
        raise NvtopoError("two different trays of one rack", where=f"fault {spec}")


def in_fleet(i: int, nodes: int, size: int, hostname: str, node_faults: Dict[int, List[str]],
             fleet_faults: List[Any], missing: Set[int]) -> Imex:
    """Tray ``i``'s view of its rack's IMEX domain."""
    rack = i // size
    members = [j for j in range(rack * size, min((rack + 1) * size, nodes))
               if j not in missing or j == i]
    down = {j for j in members if any(is_imex_fault(s) for s in node_faults.get(j, ()))}
    cut = {(int(f.args[0]), int(f.args[1])) for f in fleet_faults
           if f.kind == "imex-one-way" and int(f.args[0]) in members}
    return Imex(me=i, members=members, hostname=hostname, down=down, cut=cut)


def _view(x: Imex) -> Dict[str, Any]:
    mine_down = x.me in x.down
    nodes: Dict[str, Any] = {}
    for k, j in enumerate(x.members):
        gone = mine_down or j in x.down
        conns = {}
        for kk, jj in enumerate(x.members):
            state = ("INVALID" if gone else "DISCONNECTED" if jj in x.down or (j, jj) in x.cut
                     else "CONNECTED")
            conns[str(kk)] = {"host": address(jj), "status": state, "changed": False}
        nodes[str(k)] = {"status": "UNAVAILABLE" if gone else "READY", "host": address(j),
                         "connections": conns, "changed": False, "version": VERSION}
    state = "DOWN" if mine_down else "DEGRADED" if x.down else "UP"
    return {"nodes": nodes, "timestamp": "1/1/2026 00:00:00.000", "status": state}


def evidence(x: Imex) -> Dict[str, Any]:
    """The imex probe's evidence for this tray."""
    return {"command": "nvidia-imex-ctl", "args": ["-N", "-j"], "status": "ok", "error": None,
            "local": {"hostname": x.hostname, "addresses": [address(x.me)]},
            "exit_status": 0, "duration_s": 0.0, "timeout_s": 20.0,
            "stdout": json.dumps(_view(x), separators=(",", ":")) + "\n", "stderr": ""}


__all__ = ["IMEX_FAULTS", "FLEET_IMEX_FAULTS", "Imex", "is_imex_fault", "parse", "lone",
           "in_fleet", "evidence", "parse_fleet_fault", "address", "domain_nodes"]
