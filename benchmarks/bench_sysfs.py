#!/usr/bin/env python3
"""Benchmark the sysfs probe on a tree with 36 HCAs of 2 ports each (goal: well under 100 ms).

    python benchmarks/bench_sysfs.py [--hcas 36] [--ports 2] [--runs 15]

Generates the tree (fixtures/sysfs/generate.py: ``many_hcas``) into a temporary
directory (in RAM, /dev/shm, where there is one: sysfs is in memory too), then times capture (reading the tree: every attribute, counter and
hw_counter, ~4,800 files), derive (evidence -> model) and both together, and
prints the median and min of several runs.  The first capture warms the page
cache and is not counted.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures", "sysfs"))

from nvtopo import fakesys  # noqa: E402
from nvtopo.probes import ProbeOptions, sysfs  # noqa: E402
import generate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hcas", type=int, default=36)
    ap.add_argument("--ports", type=int, default=2)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    shm = "/dev/shm"
    where = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=where) as root:
        text = generate.many_hcas(args.hcas, args.ports).text(["benchmark tree"])
        fakesys.materialize(text, root)
        opts = ProbeOptions(sysfs_root=root)
        ev = sysfs.capture(opts)  # warm-up
        topo = sysfs.derive(ev)
        ports = sum(len(n.extra["sysfs"]["ports"]) for n in topo.nics)
        assert len(topo.nics) == args.hcas and ports == args.hcas * args.ports, (len(topo.nics), ports)
        cap, der, tot = [], [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            ev = sysfs.capture(opts)
            t1 = time.perf_counter()
            sysfs.derive(ev)
            t2 = time.perf_counter()
            cap.append((t1 - t0) * 1000)
            der.append((t2 - t1) * 1000)
            tot.append((t2 - t0) * 1000)
        n_paths = len(ev["files"]) + len(ev["links"]) + len(ev["dirs"]) + len(ev["errors"])
    print(f"sysfs probe: {args.hcas} HCAs x {args.ports} ports, {len(topo.gpus)} GPUs, "
          f"{n_paths} paths in the evidence; {args.runs} runs")
    load = (" load %.1f" % os.getloadavg()[0]) if hasattr(os, "getloadavg") else " load ?"
    print(f"machine: {platform.machine()} {platform.processor() or ''} "
          f"{os.cpu_count()} CPUs,{load}, Python {platform.python_version()}; tree in "
          f"{where or tempfile.gettempdir()}".replace("  ", " "))
    for name, xs in (("capture", cap), ("derive", der), ("capture+derive", tot)):
        print(f"  {name:15s} median {statistics.median(xs):7.1f} ms   min {min(xs):7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
