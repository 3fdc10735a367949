"""How long ``nvtopo simulate`` takes, per stage, for a layout or a large NVLink domain.

Builds the machine, records NVML (the probe's walker answered from the machine's call
table), reads the sysfs tree, writes the topo text (together: one snapshot), then derives
the model and runs the checks, several times, and prints the medians.  A plain script:

    python benchmarks/bench_simulate.py [--layout dgx-h100] [--gpus 72] [--runs 5]

``--gpus N`` simulates an N-GPU NVSwitch domain (18 NVLink5 links per GPU, one 400G NIC per
GPU) instead of a bundled layout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nvtopo import checks, layouts, snapshot  # noqa: E402
from nvtopo.simulate import build, nvlink_domain, snapshot as sim_snapshot  # noqa: E402


domain = nvlink_domain


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layout", default="dgx-h100")
    ap.add_argument("--gpus", type=int, default=None)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    lay = domain(args.gpus) if args.gpus else layouts.load(args.layout)
    stages = {"simulate": [], "derive": [], "check": []}
    size = 0
    for seed in range(args.runs):
        t0 = time.perf_counter()
        doc = sim_snapshot(build(lay, seed=seed))
        t1 = time.perf_counter()
        text = json.dumps(doc)
        topo = snapshot.derive(json.loads(text))
        t2 = time.perf_counter()
        checks.run(topo, lay).findings
        t3 = time.perf_counter()
        stages["simulate"].append(t1 - t0)
        stages["derive"].append(t2 - t1)
        stages["check"].append(t3 - t2)
        size = len(text)
    gpus = lay.get("gpus.count")
    print(f"layout: {lay.name} ({gpus} GPUs), {args.runs} runs, snapshot {size / 1e6:.1f} MB, "
          f"{len(doc['probes']['nvml']['calls'])} NVML answers")
    for name, xs in stages.items():
        print(f"  {name:<9} median {statistics.median(xs) * 1000:8.1f} ms   "
              f"min {min(xs) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
