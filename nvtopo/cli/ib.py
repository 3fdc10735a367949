"""``nvtopo ib``: one row per InfiniBand/RoCE port, from sysfs."""

from typing import Optional

from .io import console, handles_errors, print_json
from .options import Format, format_option, from_option, sysfs_root_option, timeout_option


@handles_errors
def ib_cmd(
    from_: Optional[str] = from_option(
        help="Read a snapshot (taken by `nvtopo snapshot`, with sysfs evidence) or pasted "
             "`ibstat`, `ibv_devinfo` (`-v`) or `ibstatus` text (recognised by content; "
             "docs/ticket-inputs.md) instead of probing. '-' reads standard input."),
    sysfs_root: Optional[str] = sysfs_root_option(),
    fmt: Format = format_option(Format.table, help="table (Rich) or json (the ib document)."),
    timeout: float = timeout_option(help="Seconds of sysfs reading before the rest is given up "
                                         "(a failing HCA can stall counter reads)."),
) -> None:
    """One row per InfiniBand/RoCE port: state, rate, link layer, netdev, PCI, NUMA,
    nearest GPU and nonzero error counters.

    Reads /sys without root and without external tools (or DIR with
    --sysfs-root).  InfiniBand vs RoCE is decided per port from link_layer.

    Examples:

      nvtopo ib

      nvtopo ib --sysfs-root /host/sys --format json

      nvtopo ib --from node17.json

      ibstat | nvtopo ib --from -
    """
    from .. import snapshot
    from ..render import ib

    topo = snapshot.open_input(snapshot.Input(
        path=from_, sysfs_root=sysfs_root, timeout=timeout, probes=snapshot.SYSFS_ONLY,
        require="sysfs", command="ib")).model
    if fmt is Format.json:
        print_json(ib.document(topo))
    else:
        ib.print_ib(topo, console())
