"""``nvtopo cluster``: the cross-node view of a fleet's snapshots."""

import enum
from typing import List, Optional

import typer

from .io import check_output, console, emit, err, handles_errors, to_terminal
from .options import format_option, output_option


class ClusterFormat(str, enum.Enum):
    table = "table"
    json = "json"
    slurm_topology = "slurm-topology"
    k8s_labels = "k8s-labels"


@handles_errors
def cluster_cmd(
    paths: List[str] = typer.Argument(
        ..., metavar="PATH...",
        help="Snapshots (files, directories walked recursively, glob patterns): e.g. the "
             "directory `nvtopo collect` wrote; its collect.json gives the engine's names."),
    fmt: ClusterFormat = format_option(
        ClusterFormat.table, help="table (Rich), json, slurm-topology (topology.conf: block "
                                  "form, one block per NVLink domain; tree form with "
                                  "--fabric) or k8s-labels."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, metavar="N",
                                       help="Worker processes (default: every core; 1 reads "
                                            "in this process)."),
    fabric: Optional[str] = typer.Option(
        None, "--fabric", metavar="FILE",
        help="An ibnetdiscover dump: --format slurm-topology then writes the tree form "
             "(switches and their nodes, joined by the HCAs' node_desc); json gains 'fabric'."),
    output: Optional[str] = output_option(),
) -> None:
    """The cross-node view of a fleet, from its snapshots alone (no layout needed): NVLink
    domains and cliques, rails (rank i = the compute NIC of GPU i), duplicate GUIDs and
    LIDs, version skew, odd nodes out, duplicate hostnames and GPU UUIDs.

    Exit status: 0 no error finding, 1 at least one, 2 nothing could be read.

    Examples:

      nvtopo cluster fleet/

      nvtopo cluster fleet/ --format json -o cluster.json

      nvtopo cluster fleet/ --format slurm-topology -o topology.conf
    """
    from ..commands import cluster as cluster_cmds
    from ..render import cluster as render

    check_output(output)
    result = cluster_cmds.run(paths, jobs=jobs, fabric=fabric)
    if not result.nodes:
        err("cluster: nothing could be read" if result.unreadable else "cluster: no input files")
        raise typer.Exit(result.exit_status())
    doc = cluster_cmds.document(result)
    if fmt is ClusterFormat.table and to_terminal(output):
        render.table(doc, console())
    else:
        emit(render.text(doc, fmt.value), output)
    raise typer.Exit(result.exit_status())
