"""Majority and minorities of a value over nodes: the one rule every family uses."""

from __future__ import annotations

from typing import Any, Dict, Hashable, Iterable, List, Optional, Tuple, TypeVar

H = TypeVar("H", bound=Hashable)


def split(values: Iterable[Tuple[str, Optional[H]]]
          ) -> Tuple[Optional[H], Dict[H, List[str]], List[str]]:
    """``(node, value)`` pairs -> (the majority value, minority value -> nodes, unknown nodes).

    ``None`` is unknown: never counted, never a minority.  A tie has no majority: every value
    is then a minority of the others, and the majority returned is ``None``.
    """
    by: Dict[H, List[str]] = {}
    unknown: List[str] = []
    for node, value in values:
        if value is None:
            unknown.append(node)
        else:
            by.setdefault(value, []).append(node)
    if not by:
        return None, {}, unknown
    ranked = sorted(by.items(), key=lambda kv: (-len(kv[1]), str(kv[0])))
    if len(ranked) > 1 and len(ranked[0][1]) == len(ranked[1][1]):
        return None, dict(ranked), unknown
    return ranked[0][0], dict(ranked[1:]), unknown


def show(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join("?" if v is None else str(v) for v in value) + ")"
    return str(value)


__all__ = ["split", "show"]
