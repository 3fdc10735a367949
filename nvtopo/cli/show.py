"""``nvtopo show``: the topology matrix, GPUs, NICs, legend and a summary."""

import json
from typing import Optional

import typer

from .io import check_output, console, emit, handles_errors, to_terminal
from .options import (ShowFormat, format_option, from_option, output_option,
                      sysfs_root_option, text_example_names, timeout_option)


@handles_errors
def show(
    from_: Optional[str] = from_option(),
    example: Optional[str] = typer.Option(
        None, "--example", metavar="NAME", autocompletion=text_example_names,
        help="Show a bundled example instead of this machine (dgx-h100)."),
    fmt: ShowFormat = format_option(
        ShowFormat.table,
        help="table (Rich), json (the model), svg (a topology picture), html or rich-svg "
             "(the table view as an HTML page or an SVG of the terminal)."),
    timeout: float = timeout_option(),
    sysfs_root: Optional[str] = sysfs_root_option(),
    output: Optional[str] = output_option(),
) -> None:
    """Show the topology matrix, GPUs, NICs, legend and a summary.

    Colours follow path quality: NV# (NVLink) strongest, then PIX, PXB, PHB,
    NODE, and SYS weakest.  Wide matrices are split into GPU↔GPU, GPU↔NIC and
    NIC↔NIC blocks that fit the terminal.

    Examples:

      nvtopo show --example dgx-h100

      nvtopo show --from node17.json --format json

      nvidia-smi topo -m | nvtopo show --from -

      nvtopo show --from node17.json --format svg -o node17.svg
    """
    from .. import snapshot

    check_output(output)
    topo = snapshot.open_input(snapshot.Input(
        path=from_, example=example, sysfs_root=sysfs_root, timeout=timeout,
        require="show", command="show")).model
    if fmt is ShowFormat.table and to_terminal(output):
        from ..render import matrix

        matrix.print_topology(topo, console())
    elif fmt is ShowFormat.json:
        emit(json.dumps(topo.to_dict(), indent=2) + "\n", output)
    else:
        from ..render import export

        emit(export.show_document(topo, fmt.value), output)
