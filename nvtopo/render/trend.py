"""``nvtopo trend`` as text and as Prometheus metrics (``docs/commands.md``, ``trend``)."""

from __future__ import annotations

from typing import Any, List

from ..safe import printable

#: Most series printed in the text form (all are in JSON and Prometheus).
MAX_ROWS = 40


def text(t: Any) -> str:
    lines: List[str] = []
    for host, pts in sorted(t.hosts.items()):
        first, last = pts[0].stamp or "?", pts[-1].stamp or "?"
        lines.append(f"{printable(host)}: {len(pts)} snapshot{'s' if len(pts) != 1 else ''}, "
                     f"{printable(first)} .. {printable(last)}")
    moving = [s for s in t.series if s.increase > 0]
    if moving:
        shown = moving[:MAX_ROWS]
        # columns as wide as their widest value: a host or a subject is never cut
        hw = max([16] + [len(printable(s.host)) for s in shown])
        sw = max([34] + [len(printable(s.subject)) for s in shown])
        cw = max([26] + [len(s.counter) for s in shown])
        lines.append("")
        lines.append(f"{'':2}{'host':<{hw}} {'subject':<{sw}} {'counter':<{cw}} {'increase':>9} "
                     f"{'per hour':>9} {'epochs':>6}")
        for s in shown:
            rate = f"{s.rate_per_hour:.3g}" if s.rate_per_hour is not None else "?"
            mark = "* " if s.rising else "  "
            lines.append(f"{mark}{printable(s.host):<{hw}} {printable(s.subject):<{sw}} "
                         f"{s.counter:<{cw}} {s.increase:>9} {rate:>9} {s.epochs:>6}")
        if len(moving) > MAX_ROWS:
            lines.append(f"  ... and {len(moving) - MAX_ROWS} more (--format json lists all)")
    else:
        lines.append("no error counter rose")
    for f in t.findings:
        lines.append(f"{f.severity:<8}{f.code}  {printable(str(f.subject))}: "
                     f"{printable(f.message)}")
    for path, why in t.unreadable:
        lines.append(f"unreadable: {printable(path)}: {printable(why)}")
    rising = sum(1 for f in t.findings if f.code in ("trend.rising", "trend.link_flapping"))
    lines.append(f"{rising} counter{'s' if rising != 1 else ''} still climbing")
    return "\n".join(lines) + "\n"


def _label(value: str) -> str:
    return printable(value).replace("\\", "\\\\").replace('"', '\\"')


def prometheus(t: Any) -> str:
    out = ["# HELP nvtopo_trend_counter_increase Increase of an error counter over the "
           "snapshots (summed over resets).",
           "# TYPE nvtopo_trend_counter_increase gauge"]
    body_rate = ["# HELP nvtopo_trend_counter_rate_per_hour Increase per hour over the "
                 "snapshots' span.", "# TYPE nvtopo_trend_counter_rate_per_hour gauge"]
    body_rising = ["# HELP nvtopo_trend_counter_rising 1 when the counter rose between the "
                   "last two snapshots.", "# TYPE nvtopo_trend_counter_rising gauge"]
    for s in t.series:
        labels = (f'host="{_label(s.host)}",subject="{_label(s.subject)}",'
                  f'counter="{_label(s.counter)}"')
        out.append(f"nvtopo_trend_counter_increase{{{labels}}} {s.increase}")
        if s.rate_per_hour is not None:
            body_rate.append(f"nvtopo_trend_counter_rate_per_hour{{{labels}}} "
                             f"{s.rate_per_hour:.6g}")
        body_rising.append(f"nvtopo_trend_counter_rising{{{labels}}} {int(s.rising)}")
    return "\n".join(out + body_rate + body_rising) + "\n"


__all__ = ["text", "prometheus", "MAX_ROWS"]
