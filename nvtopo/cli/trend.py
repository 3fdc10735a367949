"""``nvtopo trend``: error counters across several snapshots of a node or a fleet."""

import enum
import json
from typing import List, Optional

import typer

from .io import check_output, emit, err, handles_errors
from .options import format_option, output_option


class TrendFormat(str, enum.Enum):
    table = "table"
    json = "json"
    prometheus = "prometheus"


@handles_errors
def trend_cmd(
    paths: List[str] = typer.Argument(
        ..., metavar="PATH...",
        help="Snapshots of one node taken over time, or of a fleet (files, directories "
             "walked recursively, glob patterns); grouped by hostname, ordered by the time "
             "each was taken."),
    fmt: TrendFormat = format_option(
        TrendFormat.table, help="table (text), json, prometheus (node_exporter textfile "
                                "format)."),
    output: Optional[str] = output_option(),
) -> None:
    """How the error counters moved across snapshots: per NVLink, InfiniBand port, GPU (PCIe
    replays) and PCIe function (AER), the increase and the rate per hour; a counter that
    went down was reset (a reboot, a driver reload) and starts a new epoch.  A counter that
    rose between the last two snapshots is still climbing (trend.rising).

    Exit status: 0 nothing climbing, 1 a counter still climbing (or a flapping link), 2
    nothing could be read.

    Examples:

      nvtopo trend snapshots/node17/

      nvtopo trend fleet/ --format prometheus -o /var/lib/node_exporter/textfile/trend.prom
    """
    from ..commands import trend
    from ..render import trend as render

    check_output(output)
    t = trend.run(paths)
    if not t.hosts:
        err("trend: nothing could be read" if t.unreadable else "trend: no input files")
        raise typer.Exit(2)
    if fmt is TrendFormat.json:
        emit(json.dumps(trend.document(t), indent=2) + "\n", output)
    elif fmt is TrendFormat.prometheus:
        emit(render.prometheus(t), output)
    else:
        emit(render.text(t), output)
    raise typer.Exit(1 if any(f.severity != "info" for f in t.findings) else 0)
