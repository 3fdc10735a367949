"""``nvtopo cluster``: the cross-node view of a fleet's snapshots."""

import enum
from typing import List, Optional

import typer

from .io import check_output, console, emit, err, handles_errors, say, to_terminal
from .options import format_option, output_option, quiet_option


class ClusterFormat(str, enum.Enum):
    table = "table"
    json = "json"
    slurm_topology = "slurm-topology"
    slurm_yaml = "slurm-yaml"
    k8s_labels = "k8s-labels"
    k8s_json = "k8s-json"
    rack_map = "rack-map"


class TierStyle(str, enum.Enum):
    topograph = "topograph"
    topograph_v1 = "topograph-v1"


@handles_errors
def cluster_cmd(
    paths: List[str] = typer.Argument(
        ..., metavar="PATH...",
        help="Snapshots (files, directories walked recursively, glob patterns): e.g. the "
             "directory `nvtopo collect` wrote; its collect.json gives the engine's names."),
    fmt: ClusterFormat = format_option(
        ClusterFormat.table, help="table (Rich), json, slurm-topology (topology.conf: block "
                                  "form, one block per NVLink domain; tree form with "
                                  "--fabric), slurm-yaml (topology.yaml, Slurm 25.05: "
                                  "blocks and, with --fabric, the tree) k8s-labels (NODE key=value lines for xargs "
                                  "-L1 kubectl label node; nodes refused named on stderr) "
                                  "k8s-json (a server-side apply body: a List of "
                                  "Nodes' labels) or rack-map (each GB200/GB300 rack slot by "
                                  "slot, from NVML platform info; plain ASCII)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, metavar="N",
                                       help="Worker processes (default: every core; 1 reads "
                                            "in this process)."),
    fabric: Optional[str] = typer.Option(
        None, "--fabric", metavar="FILE",
        help="An ibnetdiscover dump: --format slurm-topology then writes the tree form "
             "(switches and their nodes, joined by the HCAs' node_desc); json gains 'fabric'."),
    tiers: Optional[TierStyle] = typer.Option(
        None, "--tier-labels", metavar="STYLE",
        help="k8s-labels/k8s-json: add topology tier labels in NVIDIA topograph's keys "
             "(topograph: network.topology.nvidia.com/accelerator,leaf,spine,core; "
             "topograph-v1: accelerator.topograph.run/domain, fabric.topograph.run/tier-N); "
             "k8s-json then ends with a Kueue Topology of those levels."),
    output: Optional[str] = output_option(),
    quiet: bool = quiet_option(),
) -> None:
    """The cross-node view of a fleet, from its snapshots alone (no layout needed): NVLink
    domains and cliques, rails (rank i = the compute NIC of GPU i), duplicate GUIDs and
    LIDs, version skew, odd nodes out, duplicate hostnames and GPU UUIDs.

    Exit status: 0 no error finding, 1 at least one, 2 nothing could be read.

    With k8s-labels or k8s-json, a node refused (named on stderr, not written) also gives 1.

    While it reads, a progress line counts the snapshots on standard error when that is a
    terminal (--quiet: none).

    Examples:

      nvtopo cluster fleet/

      nvtopo cluster fleet/ --format json -o cluster.json

      nvtopo cluster fleet/ --format slurm-topology -o topology.conf

      nvtopo cluster fleet/ --format k8s-labels | xargs -L1 kubectl label node --overwrite

      nvtopo cluster fleet/ --fabric ib.txt --format k8s-json --tier-labels topograph -o l.json
    """
    from ..commands import cluster as cluster_cmds
    from ..render import cluster as render
    from ..render.progress import Progress

    check_output(output)
    with Progress("reading snapshots", quiet=quiet, ticking=True) as bar:
        result = cluster_cmds.run(paths, jobs=jobs, fabric=fabric, progress=bar.advance)
    if not result.nodes:
        err("cluster: nothing could be read" if result.unreadable else "cluster: no input files")
        raise typer.Exit(result.exit_status())
    doc = cluster_cmds.document(result)
    status = result.exit_status()
    if fmt is ClusterFormat.table and to_terminal(output):
        render.table(doc, console())
    else:
        emit(render.text(doc, fmt.value, tiers.value if tiers else None), output)
    if fmt in (ClusterFormat.k8s_labels, ClusterFormat.k8s_json):
        from ..render.k8s import labels

        _lines, refused = labels(doc, tiers.value if tiers else None)
        for line in refused:
            say(f"nvtopo: {line}")
        if refused:  # a node left unlabelled is something to act on (docs/cluster.md §3)
            say(f"nvtopo: k8s-labels: {len(refused)} node(s) refused, no line written for "
                "them")
            status = max(status, 1)
    raise typer.Exit(status)
