"""``nvtopo diff``: what changed on one node between two snapshots."""

import typer

from .io import console, handles_errors, print_json, say
from .options import Format, format_option


@handles_errors
def diff_cmd(
    a: str = typer.Argument(..., metavar="A", help="The earlier snapshot (or topo text)."),
    b: str = typer.Argument(..., metavar="B", help="The later snapshot (or topo text)."),
    fmt: Format = format_option(Format.table, help="table (Rich) or json."),
) -> None:
    """What changed on a node between two snapshots: GPUs and NICs added or removed, NVLink
    pairs and link states, fabric, IB port states and rates, PCIe links, error counters
    (deltas; a counter that went down was reset), GPU-NIC paths, and the check verdict
    (with the findings new in B and gone since A).

    Exit status: 0 nothing changed, 1 something changed, 2 bad input.  Snapshots
    of two different hosts are compared with a warning.

    Examples:

      nvtopo diff last-good.json now.json

      nvtopo diff node17-monday.json node17-today.json --format json
    """
    from .. import diff as diff_mod
    from ..checks.findings import exit_status

    d = diff_mod.diff_files(a, b)
    for w in d.warnings:
        say(f"nvtopo: warning: {w}")
    doc = d.to_dict()
    if fmt is Format.json:
        print_json(doc)
    else:
        from ..render import diff as render_diff

        render_diff.print_diff(doc, console())
    raise typer.Exit(exit_status("fail" if d.changed else "pass"))
