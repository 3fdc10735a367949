"""``nvtopo layouts``: list the bundled layouts, show one, capture one from a good node."""

from typing import Optional

import typer

from .io import console, handles_errors, interactive, print_json
from .options import (TOPOLOGY_FROM_HELP, Format, format_option, from_option, layout,
                      layout_file_option, layout_names, sysfs_root_option, timeout_option)

app = typer.Typer(
    help="Expected layouts: list them, show one, or capture one from a known-good node.",
    invoke_without_command=True, no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]})


@app.callback()
@handles_errors
def layouts_list(
    ctx: typer.Context,
    fmt: Format = format_option(Format.table, help="table (Rich) or json."),
) -> None:
    """List the bundled layouts (name, GPUs, NV#, compute NICs, title); `layouts list` is
    the same.

    Examples:

      nvtopo layouts

      nvtopo layouts show dgx-h100

      nvtopo layouts capture --from good-node.json --name mynode > mynode.json
    """
    if ctx.invoked_subcommand is not None:
        return
    _list(fmt)


@app.command("list")
@handles_errors
def layouts_list_cmd(
    fmt: Format = format_option(Format.table, help="table (Rich) or json."),
) -> None:
    """List the bundled layouts (as `nvtopo layouts`)."""
    _list(fmt)


def _list(fmt: Format) -> None:
    from .. import layouts as layouts_pkg

    rows = [layouts_pkg.load(n).summary() for n in layouts_pkg.names()]
    if fmt is Format.json:
        print_json(rows)
    else:
        from ..render import check as render_check

        render_check.print_layouts(rows, console())


@app.command("show")
@handles_errors
def layouts_show(
    name: Optional[str] = typer.Argument(None, metavar="NAME", help="A bundled layout.",
                                         autocompletion=layout_names),
    layout_file: Optional[str] = layout_file_option(
        help="Show (and validate) your own file. '-' reads standard input."),
    fmt: Optional[Format] = format_option(
        None, help="table (readable) or json (the file format: docs/layouts.md §2). "
                   "Default: table on a terminal, json when piped."),
) -> None:
    """Print one layout: on a terminal a readable list of its expectations, piped (or with
    --format json) the JSON file (docs/layouts.md §2)."""
    data = layout(name, layout_file, "layouts show", named=True).data
    con = console()
    if fmt is Format.json or (fmt is None and not interactive()):
        print_json(data)
    else:
        from ..render import check as render_check

        render_check.print_layout(data, con)


@app.command("capture")
@handles_errors
def layouts_capture(
    from_: Optional[str] = from_option(help=TOPOLOGY_FROM_HELP),
    name: Optional[str] = typer.Option(None, "--name", metavar="NAME",
                                       help="Layout name (default: the host name, or "
                                            "'captured')."),
    sysfs_root: Optional[str] = sysfs_root_option(),
    timeout: float = timeout_option(),
) -> None:
    """Write a layout from a known-good node (this one, or --from FILE) to standard output.

    It states only what the input knows (a topo text: GPUs, NV#, NUMA; a
    snapshot adds names, links, NICs, PCIe). Check other nodes against it with
    --layout-file.

    Example:

      nvtopo layouts capture --from good.json --name rack7 > rack7.json
    """
    from .. import snapshot
    from ..commands import capture

    topo = snapshot.open_input(snapshot.Input(
        path=from_, sysfs_root=sysfs_root, timeout=timeout, require="check",
        command="layouts capture")).model
    print_json(capture.layout_of(topo, name))
