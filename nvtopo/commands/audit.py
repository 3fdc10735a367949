"""``nvtopo audit``'s output: the fleet's results streamed to a table, JSON or Prometheus,
with a progress line on standard error when it is a terminal.  (Checking the files is
:mod:`nvtopo.audit`'s job.)"""

from __future__ import annotations

import sys
from typing import Any, Optional, Sequence


def report(paths: Sequence[str], layout: Any, fmt: str, *, jobs: Optional[int] = None,
           console: Any = None, failed: bool = False, all_snapshots: bool = False,
           thresholds: Any = None, quiet: bool = False) -> Any:
    """Check every file of ``paths`` against ``layout`` (a ``Layout``, or ``"auto"``) and
    print the results on standard output as ``fmt`` (``table``, on the Rich ``console``:
    ``failed`` lists only failing nodes, ``all_snapshots`` every file rather than the
    latest per host;
    ``json``, streamed; ``prometheus``); ``thresholds``: a ``--thresholds`` file already
    read; a progress line on standard error when it is a terminal, unless ``quiet``.
    Returns the
    :class:`nvtopo.audit.Summary`."""
    from .. import audit
    from ..render import audit as render_audit
    from ..render.progress import Progress

    results = audit.run(paths, layout=layout, jobs=jobs, with_findings=fmt == "json",
                        thresholds=thresholds)
    summary = audit.Summary()

    # the line goes to standard error, on a terminal only, and is gone before the table
    # (JSON streamed to the same terminal has none: it would cut through the document)
    streamed = fmt == "json" and sys.stdout.isatty()
    with Progress("auditing", quiet=quiet or streamed) as bar:
        if bar.shown:
            bar.total = sum(1 for _ in audit.expand(paths))
        results = _ticking(results, bar)
        if fmt == "json":
            render_audit.stream_json(results, summary, sys.stdout)
            return summary
        if fmt == "table":
            printer = render_audit.TablePrinter(console, failed=failed,
                                                 all_snapshots=all_snapshots)
            for r in results:
                summary.add(r)
                printer.add(r)
        else:
            # the exposition groups samples by family: one compact row per node is kept
            rows = []
            for r in results:
                summary.add(r)
                rows.append(render_audit.compact(r, keep_codes=True))
    if fmt == "table":
        printer.finish(summary)
    else:
        render_audit.print_prometheus(rows, summary, sys.stdout)
    return summary


def _ticking(results: Any, bar: Any) -> Any:
    for r in results:
        bar.advance()
        yield r
