"""How long rendering takes at scale: the Rich table, the SVG picture, the Prometheus text and
``check``, on a 72-GPU NVSwitch domain and on an 8-GPU node with 36 NICs (both simulated,
one with a fault so the check has findings to mark).  A plain script:

    python benchmarks/bench_render.py [--runs 5]

Prints the machine and, per case and stage, the median and minimum of the runs: ``select``
(automatic layout selection), ``check`` (every check family against the layout), ``table``
(``nvtopo show``'s Rich view into a 160-column console), ``svg`` (the picture, findings
marked), ``prometheus`` (the exposition text).  The target is under one second for each.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine  # noqa: E402

from nvtopo import checks, layouts, snapshot  # noqa: E402
from nvtopo.checks import select as selection  # noqa: E402
from nvtopo.render import matrix, prometheus, svg  # noqa: E402
from nvtopo.simulate import build, nvlink_domain, snapshot as sim_snapshot  # noqa: E402


domain = nvlink_domain


def many_nics(nics: int) -> layouts.Layout:
    """An 8-GPU HGX-style node with ``nics`` compute NICs (several behind each GPU's switch)."""
    doc = {"schema": 1, "name": f"h100-{nics}nic", "gpus": {"count": 8, "name_pattern": "H100"},
           "nvlink": {"generation": "4.0", "links_per_gpu": 18, "nvswitch": True,
                      "nvswitch_count": 4, "pair_count": 18, "fabric": True},
           "nics": {"compute": {"count": nics, "rate_gbps": 400, "link_layer": "InfiniBand"},
                    "placement": {"gpu_to_nearest_compute_nic": "PIX"}},
           "numa": {"nodes_with_gpus": 2}}
    return layouts.parse(json.dumps(doc), f"h100-{nics}nic")


def timed(fn: Callable[[], object], runs: int) -> List[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    cases = [("72-GPU NVSwitch domain", domain(72), ["nvlink-down:GPU40:3",
                                                     "ib-port-down:mlx5_17"]),
             ("8 GPUs, 36 NICs", many_nics(36), ["nvlink-down:GPU3:7"])]
    for title, lay, faults in cases:
        doc = sim_snapshot(build(lay, faults))
        topo = snapshot.derive(json.loads(json.dumps(doc)))
        sel = selection.select(topo, "auto", None)
        reports: list = []

        def run_check() -> None:
            reports[:] = [checks.run(topo, lay, "bench")]

        def table() -> None:
            matrix.print_topology(topo, _console())

        stages: Dict[str, List[float]] = {
            "select": timed(lambda: selection.select(topo, "auto", None), args.runs),
            "check": timed(run_check, args.runs)}
        report = reports[0]
        stages["table"] = timed(table, args.runs)
        stages["svg"] = timed(lambda: svg.render(topo, report=report), args.runs)
        stages["prometheus"] = timed(
            lambda: prometheus.render_check(report, topo, layout=lay), args.runs)
        size = len(svg.render(topo, report=report))
        print(f"{title}: {len(topo.gpus)} GPUs, {len(topo.nics)} NICs, "
              f"{len(report.findings)} findings ({sel.name} picked automatically), SVG {size / 1e3:.0f} kB, "
              f"{args.runs} runs")
        for name, xs in stages.items():
            print(f"  {name:<10} median {statistics.median(xs) * 1000:8.1f} ms   "
                  f"min {min(xs) * 1000:8.1f} ms")


def _console():  # a terminal-sized console writing nowhere
    from rich.console import Console

    return Console(file=io.StringIO(), width=160, force_terminal=True,
                   color_system="truecolor", highlight=False)


if __name__ == "__main__":
    main()
