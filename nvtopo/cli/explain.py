"""``nvtopo explain``: why NCCL chose the paths its debug log shows (docs/nccl.md)."""

import json
from typing import List, Optional

import typer

from .io import check_output, console, emit, handles_errors, to_terminal
from .options import Format, format_option, layout, layout_file_option, layout_option, \
    output_option

FROM_HELP = ("An NCCL debug log (NCCL_DEBUG=INFO output, as pasted: with or without the "
             "host:pid:tid prefix, several ranks interleaved); give --from again for the "
             "node's evidence (a snapshot, a pasted topo -m ...), or one ticket holding both. "
             "'-' reads standard input.")


@handles_errors
def explain_cmd(
    from_: List[str] = typer.Option([], "--from", "-f", metavar="FILE", help=FROM_HELP),
    layout_name: str = layout_option(),
    layout_file: Optional[str] = layout_file_option(),
    fmt: Format = format_option(Format.table, help="table (Rich) or json."),
    output: Optional[str] = output_option(),
) -> None:
    """Explain an NCCL run: which paths NCCL used (P2P, SHM, NET/IB, NET/Socket, NVLS), and
    why it chose a worse one, traced to the node's wiring when the node's evidence is given.

    Exit status: 0 no error finding, 1 at least one error, 2 could not run (no NCCL log
    among the inputs, bad input).

    Examples:

      nvtopo explain --from nccl.log

      nvtopo explain --from nccl.log --from node17.json

      nvtopo explain --from ticket.txt --format json
    """
    from ..commands import explain as explain_mod

    chosen = layout(layout_name, layout_file, "explain", stdin_taken="-" in from_)
    check_output(output)
    found = explain_mod.explain(from_, chosen)
    if fmt is Format.table and to_terminal(output):
        from ..render import explain as render_explain

        render_explain.print_explanation(found, console())
    elif fmt is Format.json:
        emit(json.dumps(found.document(), indent=2) + "\n", output)
    else:
        from ..render import explain as render_explain

        emit(render_explain.text(found), output)
    raise typer.Exit(found.exit_status)
