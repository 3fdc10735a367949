"""``nvtopo audit``'s output: the fleet's results streamed to a table, JSON or Prometheus,
with a progress bar on a terminal.  (Checking the files is :mod:`nvtopo.audit`'s job.)"""

from __future__ import annotations

import sys
from typing import Any, Optional, Sequence


def report(paths: Sequence[str], layout: Any, fmt: str, *, jobs: Optional[int] = None,
           console: Any = None, failed: bool = False, all_snapshots: bool = False,
           thresholds: Any = None) -> Any:
    """Check every file of ``paths`` against ``layout`` (a ``Layout``, or ``"auto"``) and
    print the results on standard output as ``fmt`` (``table``, on the Rich ``console``:
    ``failed`` lists only failing nodes, ``all_snapshots`` every file rather than the
    latest per host;
    ``json``, streamed; ``prometheus``); ``thresholds``: a ``--thresholds`` file already
    read.  Returns the
    :class:`nvtopo.audit.Summary`."""
    from .. import audit
    from ..render import audit as render_audit

    results = audit.run(paths, layout=layout, jobs=jobs, with_findings=fmt == "json",
                        thresholds=thresholds)
    summary = audit.Summary()
    progress = None
    # the bar goes to standard error; streamed output (table, JSON) on a terminal shows its
    # own progress
    if sys.stderr.isatty() and not (fmt != "prometheus" and sys.stdout.isatty()):
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeRemainingColumn)

        total = sum(1 for _ in audit.expand(paths))
        progress = bar = Progress(TextColumn("auditing"), BarColumn(), MofNCompleteColumn(),
                                  TimeRemainingColumn(), console=Console(stderr=True),
                                  transient=True, redirect_stdout=False, redirect_stderr=False)
        task = bar.add_task("audit", total=total)

        def ticking(it: Any) -> Any:
            for r in it:
                bar.advance(task)
                yield r
        results = ticking(results)
        progress.start()
    try:
        if fmt == "json":
            render_audit.stream_json(results, summary, sys.stdout)
        elif fmt == "table":
            printer = render_audit.TablePrinter(console, failed=failed,
                                                 all_snapshots=all_snapshots)
            for r in results:
                summary.add(r)
                printer.add(r)
            if progress is not None:
                progress.stop()
                progress = None
            printer.finish(summary)
        else:
            # the exposition groups samples by family: one compact row per node is kept
            rows = []
            for r in results:
                summary.add(r)
                rows.append(render_audit.compact(r, keep_codes=True))
            if progress is not None:
                progress.stop()
                progress = None
            render_audit.print_prometheus(rows, summary, sys.stdout)
    finally:
        if progress is not None:
            progress.stop()
    return summary
