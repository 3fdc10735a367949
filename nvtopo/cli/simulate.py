"""``nvtopo simulate``: a synthetic snapshot of a healthy or faulty node of a layout."""

from typing import List, Optional

import typer

from .io import check_output, emit, handles_errors, say
from .options import layout, layout_file_option, layout_names, output_option, quiet_option


@handles_errors
def simulate_cmd(
    layout_name: Optional[str] = typer.Argument(
        None, metavar="LAYOUT", help="A bundled layout (`nvtopo layouts` lists them).",
        autocompletion=layout_names),
    fault: Optional[List[str]] = typer.Option(
        None, "--fault", metavar="SPEC",
        help="Inject a fault (repeatable): nvlink-down:GPU3:7, nvlink-degraded:GPU2-GPU6, "
             "gpu-missing:GPU7, ib-port-down:mlx5_4, ib-rate:mlx5_0:200, pcie-width:GPU5:8, "
             "pcie-gen:GPU5:3, nic-affinity-swap:mlx5_0:mlx5_3, nic-rename:mlx5_0:ibp12s0, "
             "nic-far:mlx5_3, "
             "fabric-not-started, counters:mlx5_2:symbol_error=1000, peermem-missing, "
             "c2c-down:GPU1, c2c-links:GPU1:6, nvme-far:3, nvme-bunched:3, nvme-missing:5, iommu-on, no-nvidia-fs; on a GB200/GB300 tray imex-down "
             "(docs/imex.md)."),
    seed: int = typer.Option(0, "--seed", min=0, metavar="N", help="Seed for hostname, UUIDs, serials, "
                             "GUIDs: the same seed gives the same file."),
    hostname: Optional[str] = typer.Option(None, "--hostname", metavar="NAME",
                                           help="Hostname written into the snapshot."),
    nodes: Optional[int] = typer.Option(
        None, "--nodes", metavar="N", help="Write a fleet of N nodes into the directory -o "
        "names (docs/cluster.md): distinct hostnames (--hostname is their prefix) and GUIDs, "
        "NVLink domains of the layout's size, rails on their subnets, one driver.  --fault "
        "then names its node: NODE:SPEC."),
    fleet_fault: Optional[List[str]] = typer.Option(
        None, "--fleet-fault", metavar="SPEC",
        help="With --nodes (repeatable): outside-domain:NODE, split-domain:DOMAIN, "
             "clique:NODE:ID, driver:NODE:VERSION, rail-subnet:NODE:RANK, "
             "duplicate-guid:NODE:OTHER, duplicate-lid:NODE:OTHER, "
             "duplicate-hostname:NODE:OTHER; imex-one-way:NODE:OTHER (docs/imex.md)."),
    mesh: bool = typer.Option(
        False, "--mesh", help="Join the node(s) by a WireGuard mesh (wg0 over eth0; with "
        "--nodes every node a peer of every other). Mesh faults: --fault wg-stale-peer:PEER, "
        "wg-mtu:MTU, wg-errors:N; --fleet-fault wg-missing-peer:NODE:OTHER, "
        "wg-unknown-peer:NODE, wg-no-interface:NODE, wg-userspace:NODE (docs/mesh.md)."),
    layout_file: Optional[str] = layout_file_option(
        help="Simulate a node of this layout file. '-' reads standard input."),
    output: Optional[str] = output_option(
        help="Write the snapshot here (atomically). '-' or none: standard output."),
    quiet: bool = quiet_option(),
) -> None:
    """Write a synthetic snapshot of a node of LAYOUT: healthy, or with faults injected.

    Every source is simulated consistently (the `topo -m` text, the NVML
    recording made by the real NVML probe against a fake NVML library, the
    sysfs evidence read by the real sysfs traversal), so a healthy node
    derives without disagreements.  What the layout does not state is given a
    plausible default, listed under "simulated" in the file.

    Examples:

      nvtopo simulate dgx-h100 -o good.json

      nvtopo simulate dgx-h100 --fault nvlink-down:GPU3:7 -o bad.json && nvtopo check --from bad.json

      nvtopo simulate dgx-1-v100 --fault gpu-missing:GPU7 --fault ib-rate:mlx5_1:50 --seed 7

    With --nodes, a progress line counts the nodes written on standard error when that is a
    terminal (--quiet: none).
    """
    from .. import simulate as sim
    from .. import snapshot
    from ..errors import NvtopoError

    if hostname is not None and not hostname.strip():
        raise NvtopoError("--hostname is empty", where="simulate")
    if nodes is not None:
        _fleet(layout(layout_name, layout_file, "simulate", named=True), nodes, output,
               list(fault or []), list(fleet_fault or []), seed, hostname, mesh, quiet)
        return
    if fleet_fault:
        raise NvtopoError("--fleet-fault needs --nodes", where="simulate")
    check_output(output)
    lay = layout(layout_name, layout_file, "simulate", named=True)
    doc = sim.simulate(lay, list(fault or []), seed=seed, hostname=hostname, mesh=mesh)
    faults = doc["simulated"]["faults"]
    emit(snapshot.file_text(doc, "simulate"), output, f" (simulated {lay.name}"
         + (f", faults: {', '.join(faults)}" if faults else ", healthy") + ")")


def _fleet(lay, nodes: int, output: Optional[str], faults: List[str], fleet_faults: List[str],
           seed: int, prefix: Optional[str], mesh: bool = False, quiet: bool = False) -> None:
    from ..errors import NvtopoError
    from ..render.progress import track
    from ..simulate import fleet

    if not output or output == "-":
        raise NvtopoError("--nodes writes a directory: give it with -o DIR", where="simulate")
    p = fleet.plan(lay, nodes, seed=seed, prefix=prefix or "node", fleet_faults=fleet_faults,
                   node_faults=faults, mesh=mesh)
    count = sum(1 for _ in track(fleet.write(p, output), "simulating", nodes, quiet=quiet))
    say(f"nvtopo: wrote {count} simulated {lay.name} snapshots to {output}")
