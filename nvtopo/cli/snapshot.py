"""``nvtopo snapshot``: the raw evidence of every probe in one JSON file."""

import enum
from typing import Optional

import typer

from .io import check_output, emit, handles_errors, say
from .options import from_option, output_option, sysfs_root_option, timeout_option


class SnapshotFormat(str, enum.Enum):
    snapshot = "snapshot"
    nccl_topo = "nccl-topo"


@handles_errors
def snapshot_cmd(
    output: Optional[str] = output_option(
        help="Write the snapshot here (atomically: temporary file, then rename). "
             "Default: standard output."),
    from_: Optional[str] = from_option(
        help="Turn a pasted `nvidia-smi topo -m`, `nvidia-smi nvlink -s/-e/-c/-R`, "
             "`nvidia-smi -q` (or its `-q -x` XML) or `dcgmi nvlink -s` text (or a snapshot) "
             "into a snapshot file instead of probing; `ibstat` and `gdscheck -p` texts are "
             "not kept (one error line). '-' reads standard input."),
    timeout: float = timeout_option(),
    sysfs_root: Optional[str] = sysfs_root_option(),
    fmt: SnapshotFormat = typer.Option(
        SnapshotFormat.snapshot, "--format", metavar="FORMAT",
        help="snapshot (the JSON evidence) or nccl-topo: an NCCL_TOPO_FILE (XML) from the "
             "node's model, each GPU and its near compute NICs under one bridge "
             "(docs/nccl.md)."),
) -> None:
    """Record the raw evidence of every probe in one JSON file.

    The snapshot keeps what each probe saw (command, arguments, exit status,
    stdout, stderr, duration, or why it could not run), not conclusions: every
    command re-derives the model from it with --from, on any machine.

    Examples:

      nvtopo snapshot -o /var/lib/nvtopo/$(hostname).json

      nvtopo snapshot --from ticket-1234.txt -o node17.json

      nvtopo snapshot --from node17.json --format nccl-topo -o nccl-topo.xml
    """
    from .. import snapshot

    check_output(output)
    if fmt is SnapshotFormat.nccl_topo:
        emit(_nccl_topo(from_, sysfs_root, timeout), output)
        return
    opened = snapshot.open_input(snapshot.Input(
        path=from_, sysfs_root=sysfs_root, timeout=timeout, want=snapshot.DOCUMENT,
        command="snapshot"))
    doc = opened.document
    if from_ is None:
        for name, ev in doc["probes"].items():
            # "absent": the probe looked and there is nothing of its kind (no WireGuard
            # interface): an answer, not a failure to note.
            why = ev.get("error") or ev.get("status")
            if ev.get("status") not in ("ok", "absent") and why:  # (never "None")
                say(f"nvtopo: note: {name}: {why} (recorded)")
    emit(snapshot.file_text(doc, opened.where), output)


def _nccl_topo(from_: Optional[str], sysfs_root: Optional[str], timeout: float) -> str:
    """The node's NCCL topology file (``--format nccl-topo``)."""
    from .. import snapshot
    from ..checks import roles, select
    from ..render import nccl_topo

    topo = snapshot.open_input(snapshot.Input(
        path=from_, sysfs_root=sysfs_root, timeout=timeout, require="check",
        command="snapshot")).model
    sel = select.select(topo, "auto", None)
    compute = roles.resolve(topo, sel.layout).compute or [n.name for n in topo.nics]
    return nccl_topo.document(topo, compute, sel.layout)
