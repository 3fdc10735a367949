"""How many NVML calls the NVML probe costs, and how long it takes, on an 8-GPU 18-link node.

Runs the real probe (real pynvml wrappers) against the fake NVML C library serving the
DGX H100 recording (fixtures/nvml/dgx-h100.json), with an artificial latency per C call,
several times, and prints the medians.  A plain script:

    python benchmarks/bench_nvml.py [--latency-ms 1.0] [--runs 5] [--machine dgx-h100]
                                    [--unsupported-counters crc_data,ecc]
"""

from __future__ import annotations

import argparse
import collections
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import nvml_fake as F  # noqa: E402
from nvtopo.probes import ProbeOptions, nvml  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency-ms", type=float, default=1.0,
                    help="artificial latency per NVML C call (default 1 ms)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--machine", default="dgx-h100")
    ap.add_argument("--unsupported-counters", default="", metavar="NAMES",
                    help="error counters the fake answers NotSupported, e.g. crc_data,ecc "
                         "(as nvidia-smi nvlink -e on H100 prints only replay/recovery/CRC)")
    args = ap.parse_args()
    desc = F.load_machine(args.machine)
    if args.unsupported_counters:
        desc["gpu_defaults"]["nvlink"]["unsupported_counters"] = \
            args.unsupported_counters.split(",")
    walls, derive_walls, c_calls, probe_calls = [], [], [], []
    by_fn: collections.Counter = collections.Counter()
    for _ in range(args.runs):
        lib = F.machine_fake(desc, latency_s=args.latency_ms / 1000.0)
        F.install(lib)
        t0 = time.perf_counter()
        ev = nvml.capture(ProbeOptions(timeout=600))
        walls.append(time.perf_counter() - t0)
        F.reset_pynvml()
        assert ev["status"] == "ok", ev["error"]
        c_calls.append(lib.c_calls)
        probe_calls.append(ev["ncalls"])
        by_fn = collections.Counter(re.sub(r"\(.*", "", k) for k in lib.asked)
        t0 = time.perf_counter()
        nvml.derive(ev)
        derive_walls.append(time.perf_counter() - t0)
    n_gpus = len(desc["gpus"])
    links = desc["gpu_defaults"].get("nvlink", {}).get("count")
    print(f"machine: {args.machine} ({n_gpus} GPUs, {links} NVLinks each), "
          f"latency {args.latency_ms:g} ms per NVML call, {args.runs} runs"
          + (f", unsupported counters: {args.unsupported_counters}"
             if args.unsupported_counters else ""))
    print(f"NVML calls per probe (median): {statistics.median(probe_calls):.0f} "
          f"(C library calls seen by the fake: {statistics.median(c_calls):.0f})")
    print(f"probe wall time (median): {statistics.median(walls):.3f} s  "
          f"(min {min(walls):.3f}, max {max(walls):.3f})")
    print(f"derive from the recording (median): {statistics.median(derive_walls) * 1000:.1f} ms")
    print("calls by function (last run):")
    for fn, count in by_fn.most_common():
        print(f"  {count:5d}  {fn}")


if __name__ == "__main__":
    main()
