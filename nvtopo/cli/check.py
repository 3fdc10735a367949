"""``nvtopo check``: the node against its expected layout."""

import json
from typing import Any, Dict, List, Optional

import typer

from ..errors import NvtopoError

from .io import check_output, console, emit, handles_errors, to_terminal
from .options import (FROM_HELP, CheckFormat, example_names, format_option, layout,
                      layout_file_option, layout_option, output_option, sysfs_root_option,
                      thresholds, thresholds_option, timeout_option)

#: Version of the ``nvtopo check --format json`` document (docs/json.md).
CHECK_SCHEMA_VERSION = 1


@handles_errors
def check_cmd(
    from_: Optional[List[str]] = typer.Option(
        None, "--from", "-f", metavar="FILE",
        help=FROM_HELP + " Give --from twice to read a kernel log (dmesg, journalctl -k, "
             "kern.log) with the node's snapshot or topo -m: its events are named on the "
             "snapshot's devices (docs/events.md)."),
    sysfs_root: Optional[str] = sysfs_root_option(),
    layout_name: str = layout_option(),
    layout_file: Optional[str] = layout_file_option(),
    fmt: CheckFormat = format_option(
        CheckFormat.table,
        help="table (Rich), json, prometheus (node_exporter textfile format), svg (the "
             "topology picture with faulty elements marked), html or rich-svg (the table "
             "view exported)."),
    timeout: float = timeout_option(),
    output: Optional[str] = output_option(),
    brief: bool = typer.Option(
        False, "--brief", "-b",
        help="Table: one line per finding (code, subject, expected → actual), no "
             "explanations or hints."),
    example: Optional[str] = typer.Option(
        None, "--example", metavar="NAME", autocompletion=example_names,
        help="Check a bundled example instead of this machine: dgx-h100-healthy, "
             "dgx-h100-faulty (simulated snapshots) or dgx-h100 (a topo -m text)."),
    verbose: bool = typer.Option(
        False, "--verbose", "-v",
        help="Table: list every \"not checked\" note in full (by default one line names "
             "the families)."),
    thresholds_file: Optional[str] = thresholds_option(),
) -> None:
    """Check the node against its expected layout: GPUs, NVLink, fabric, P2P, PCIe, NICs,
    InfiniBand/RoCE ports, NUMA, and sources that disagree.

    One fault gives one error finding (a link down is not also reported as its
    NV17 pairs).  Unknown facts are never errors: they are listed as not checked.

    Exit status: 0 no error finding (warnings allowed), 1 at least one error,
    2 could not run (bad input, no data, bad layout file).

    Examples:

      nvtopo check

      nvtopo check --from node17.json --layout dgx-h100

      nvtopo check --from node17.json --brief

      nvtopo check --example dgx-h100-faulty

      nvtopo check --from ticket.txt --layout-file mynode.json --format json

      nvtopo check --format prometheus -o /var/lib/node_exporter/textfile/nvtopo.prom
    """
    from .. import checks, snapshot

    # a bad layout name, layout file or thresholds file fails before any input is read or probed
    chosen = layout(layout_name, layout_file, "check",
                    stdin_taken=any(f in snapshot.STDIN_NAMES for f in from_ or ()))
    limits = thresholds(thresholds_file)
    check_output(output)
    opened = _open(example, from_, sysfs_root, timeout,
                   prometheus=fmt is CheckFormat.prometheus)
    report = checks.select_and_run(opened.model, chosen, thresholds=limits)
    _show(report, opened, fmt, output, brief=brief, verbose=verbose)
    raise typer.Exit(report.exit_status)


def _open(example: Optional[str], from_: Optional[List[str]], sysfs_root: Optional[str],
          timeout: float, prometheus: bool) -> Any:
    """The input: a bundled example, a file (or a kernel log with the node's file), or this
    machine (probed)."""
    from .. import snapshot

    want = snapshot.MODEL_AND_DOCUMENT if prometheus else snapshot.MODEL
    if example is None and from_ and len(from_) > 1:
        return _open_several(from_, want)
    if example is None:
        return snapshot.open_input(snapshot.Input(
            path=from_[0] if from_ else None, sysfs_root=sysfs_root, timeout=timeout,
            require="check", command="check", want=want))
    from .. import examples

    if from_ is not None or sysfs_root is not None:
        raise NvtopoError("give --example or --from/--sysfs-root, not both",
                          where="--example")
    with examples.path(example) as path:
        return snapshot.open_input(snapshot.Input(
            path=path, require="check", command="check", want=want))


def _open_several(paths: List[str], want: str) -> Any:
    """Several ``--from`` files of one node: one node file (a snapshot or pasted text) and
    kernel logs, whose events are merged into its model (docs/events.md)."""
    from .. import snapshot

    if len(paths) != len(set(paths)) or sum(p in snapshot.STDIN_NAMES for p in paths) > 1:
        raise NvtopoError("each --from names a different file (standard input once)",
                          where="--from")
    opened = [snapshot.open_input(snapshot.Input(path=p, command="check", want=want))
              for p in paths]
    logs = [o for o in opened if _only_a_log(o.model)]
    nodes = [o for o in opened if not _only_a_log(o.model)]
    if len(nodes) > 1:
        raise NvtopoError("give one node file (a snapshot or pasted text) and kernel logs; "
                          f"{len(nodes)} node files were given", where="--from")
    base = nodes[0] if nodes else logs.pop(0)
    for o in logs:
        mine, theirs = base.model.kernel_log, o.model.kernel_log
        if mine is None:
            base.model.merge(o.model)
            continue
        for e in theirs.events:  # the second log's lines after the first's (one order)
            e.line += mine.lines
        mine.events.extend(theirs.events)
        mine.lines += theirs.lines
    base.require("check")
    return base


def _only_a_log(topo: Any) -> bool:
    return topo.kernel_log is not None and topo.sources == ["kernel-log"]


def _show(report: Any, opened: Any, fmt: CheckFormat, output: Optional[str], *, brief: bool,
          verbose: bool) -> None:
    """The report in ``fmt``, on standard output or to ``output``."""
    if fmt is CheckFormat.table and to_terminal(output):
        from ..render import check as render_check

        render_check.print_check(report, console(), brief=brief, verbose=verbose)
    elif fmt is CheckFormat.json:
        doc = {"schema_version": CHECK_SCHEMA_VERSION, **report.document()}
        emit(json.dumps(doc, indent=2) + "\n", output)
    else:
        from ..render import export

        durations: Dict[str, float] = {}
        if fmt is CheckFormat.prometheus:
            from ..render import prometheus as prom

            durations = prom.probe_durations(opened.document)
        emit(export.check_document(report, opened.model, fmt.value, durations=durations),
             output)
