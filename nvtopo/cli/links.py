"""``nvtopo links``: every NVLink of every GPU, from NVML or pasted nvidia-smi text."""

from typing import Optional

import typer

from .io import console, handles_errors, interactive, print_json, say
from .options import Format, format_option, from_option, timeout_option


@handles_errors
def links(
    from_: Optional[str] = from_option(
        help="Read a snapshot (with NVML evidence) or pasted `nvidia-smi nvlink -s/-e/-c/-R`, "
             "`nvidia-smi -q` (or its `-q -x` XML) or `dcgmi nvlink -s` text instead of "
             "probing. '-' reads standard input."),
    gpu: Optional[int] = typer.Option(None, "--gpu", min=0, metavar="N",
                                      help="Only this GPU (NVML index)."),
    fmt: Format = format_option(Format.table, help="table (Rich) or json."),
    timeout: float = timeout_option(help="Seconds before the NVML probe is given up (live only)."),
    problems: bool = typer.Option(False, "--problems",
                                  help="Table: only the links that are not as expected (down, "
                                       "unknown, nonzero error counters)."),
    verbose: bool = typer.Option(False, "--verbose", "-v",
                                 help="Table: a table for every GPU (on a terminal the GPUs "
                                      "whose links are all active with no error share one "
                                      "line)."),
) -> None:
    """Show every NVLink of every GPU: state, version, speed, remote end, error counters.

    States: active; inactive (unused by design: MIG, a bridge using part of the
    links, no peer attached); down (a link that should be up is not); not_supported
    (no NVLink on this GPU); unknown.  The rule that decided is printed.
    Nonzero error counters are shown in red.  On a terminal the GPUs whose links are
    all active with no error share one line (-v: a table each); a summary line ends it.

    Examples:

      nvtopo links

      nvtopo links --from node17.json --gpu 3

      nvidia-smi nvlink -s | nvtopo links --from -
    """
    from .. import snapshot
    from ..render import links as render_links

    opened = snapshot.open_input(snapshot.Input(path=from_, timeout=timeout,
                                                probes=snapshot.NVML_ONLY, command="links"))
    for warning in opened.warnings:
        say(f"nvtopo: warning: {warning}")
    doc = render_links.links_doc(opened.model, gpu=gpu, where=opened.where)
    if fmt is Format.json:
        print_json({"schema_version": render_links.LINKS_SCHEMA_VERSION, **doc})
    else:
        con = console()
        render_links.print_links(doc, con, problems=problems,
                                 collapse=interactive() and not verbose and gpu is None)
