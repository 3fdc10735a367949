"""IMEX across the trays of a rack (GB200/GB300 NVL72: ``docs/imex.md``).

Each tray's snapshot holds its own view of its rack's IMEX domain (``nvidia-imex-ctl -N
-j``): the domain state, every member's address and status, and this tray's own row of the
connection matrix.  :func:`.imexfacts.view` keeps that compactly in
:class:`~.facts.NodeFacts`; the rack's state (:func:`.imexfacts.rack_state`) is what most of
its trays' views say (a tie: the worse), unknown where no tray's snapshot holds a view.  What
only two views together show (an error where the views were taken within
:data:`~.imexfacts.SAME_TIME_S` of each other; a warning where their times are further apart
or unknown: the domain may have changed between the snapshots):

* ``cluster.imex_views_differ``: trays of one rack that disagree where one view
  cannot explain the other: one sees the domain UP while another sees it DOWN or DEGRADED,
  or their member lists differ (different ``nodes_config.cfg``).  A tray whose own daemon is
  down (its view DOWN) beside trays that see it unavailable (DEGRADED) agree: no finding;
* ``cluster.imex_one_way``: tray A's own row says tray B is not connected while B's
  own row says A is connected.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ...checks import subject as S
from ...checks.findings import Finding
from ...model.imex import LETTER_OF
from .finding import make, named
from .imexfacts import ImexView, together
from .racks import racks


def check(nodes: List[Any]) -> List[Finding]:
    out: List[Finding] = []
    for chassis, trays in racks(nodes).items():
        views = [(t[3].name, t[3].imex) for t in trays if t[3].imex is not None]
        if len(views) < 2:
            continue
        out.extend(_differ(chassis, views))
        out.extend(_one_way(chassis, views))
    return out


def _apart(views: List[ImexView]) -> str:
    """What a warning says where the views' times do not show them taken together."""
    if together(views):
        return ""
    times = [v.at for v in views if v.at is not None]
    if len(times) == len(views):
        return (f" (the snapshots were taken {max(times) - min(times):.0f} s apart: the domain "
                "may have changed between them)")
    return " (when the views were taken is not known: the domain may have changed between them)"


def _differ(chassis: str, views: List[Tuple[str, ImexView]]) -> List[Finding]:
    out: List[Finding] = []
    subject = S.fleet(f"rack {chassis}")
    by_state: Dict[str, List[str]] = {}
    for name, v in views:
        if v.state is not None:
            by_state.setdefault(v.state, []).append(name)
    if "UP" in by_state and len(by_state) > 1:
        said = "; ".join(f"{s}: {named(ns)}" for s, ns in sorted(by_state.items()))
        why = _apart([v for _n, v in views if v.state is not None])
        out.append(make("warning" if why else "error", "cluster.imex_views_differ", subject,
                        f"rack {chassis}: its trays see its IMEX domain differently ({said}): "
                        "a tray that sees it UP does not see what the others do" + why,
                        [n for s, ns in by_state.items() for n in ns],
                        expected="one state", actual=sorted(by_state),
                        hint="nvidia-imex-ctl -N on each tray named; restart nvidia-imex "
                             "where its view is stale"))
    by_members: Dict[Tuple[str, ...], List[str]] = {}
    for name, v in views:
        by_members.setdefault(tuple(sorted(v.members)), []).append(name)
    if len(by_members) > 1:
        ranked = sorted(by_members.values(), key=lambda ns: (-len(ns), ns))
        odd = [n for ns in ranked[1:] for n in ns]
        out.append(make("error", "cluster.imex_views_differ", subject,
                        f"rack {chassis}: {len(odd)} tray(s) configure other IMEX members "
                        f"than the rest ({len(by_members)} member lists): {named(odd)}",
                        odd, expected=len(ranked[0]), actual=len(odd),
                        hint="one /etc/nvidia-imex/nodes_config.cfg on every tray of the "
                             "rack (a node map mismatch disables communication: !M!)"))
    return out


def _one_way(chassis: str, views: List[Tuple[str, ImexView]]) -> List[Finding]:
    out: List[Finding] = []
    owner = {v.me: (name, v) for name, v in views if v.me is not None}
    for name, v in views:
        for to, state in v.row:
            other = owner.get(to)
            if other is None or other[0] == name or v.me is None:
                continue
            back = dict(other[1].row).get(v.me)
            if back is not None:
                continue  # both ends see it down: each tray's own check names it
            letter = LETTER_OF.get(state, state)
            why = _apart([v, other[1]])
            out.append(make("warning" if why else "error", "cluster.imex_one_way",
                            S.fleet(f"rack {chassis}"),
                            f"rack {chassis}: {name} ({v.me}) sees {other[0]} ({to}) as "
                            f"{letter} while {other[0]} sees {name} as C: an IMEX connection "
                            "up one way only" + why, [name, other[0]], expected="C both ways",
                            actual=letter,
                            hint="check the IMEX port between the two trays (firewall, "
                                 "routes) and both daemons' logs"))
    return out


__all__ = ["check"]
