#!/usr/bin/env python3
"""Benchmark the text parsers on hostile pastes: time and peak memory, each in a fresh process.

    python benchmarks/bench_parsers.py [--mb 60] [--runs 3]

Cases (goal: a few seconds and memory near the size of the text for the 60 MB ones):

* ``repeated rows``: a 60 MB paste of the rows of a real ``nvidia-smi topo -m`` output
  (fixtures/topo-corpus/01, TAB-separated) repeated under one header (before issue 10:
  44 s and 2.7 GB peak RSS, one note per repeated row);
* ``repeated rows, spaces``: the same with the space-aligned corpus file 02;
* ``glued header``: ``GPU0GPU1...GPU{n}x`` headers of 30 and 1000 names (the 30-name line,
  142 bytes, never finished before);
* ``-q blocks``: 20 000 ``nvidia-smi -q`` GPU blocks with a Fabric state;
* ``nvlink lines``: a 60 MB ``nvidia-smi nvlink -s`` paste of 18-link GPUs.

Each case runs in its own ``python -c`` so that ``ru_maxrss`` is its own; the figure
printed is the peak RSS of the process less the RSS after the text was built.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, ROOT)

from _machine import machine  # noqa: E402

CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, {root!r})
from nvtopo.probes import topo as topo_text  # noqa: E402
from nvtopo.probes.nvml import text as nvml_text  # noqa: E402
case, mb = {case!r}, {mb!r}
corpus = os.path.join({root!r}, "fixtures", "topo-corpus")

def repeated(name):
    lines = open(os.path.join(corpus, name)).read().split("\n")
    n = 1 + sum(1 for ln in lines[1:] if ln.strip()[:3] in ("GPU", "NIC", "mlx"))
    block = "\n".join(lines[1:n]) + "\n"
    return lines[0] + "\n" + block * int(mb * 1e6 // len(block))

if case == "repeated rows":
    text, parse = repeated("01_hgx-a100-8gpu-nv12-10nic-tabs.txt"), topo_text.parse
elif case == "repeated rows, spaces":
    text, parse = repeated("02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"), topo_text.parse
elif case.startswith("glued header"):
    n = int(case.split()[-1])
    text = "".join(f"GPU{{i}}" for i in range(n)) + "x\n" + "".join(f"GPU{{i}} X\n" for i in range(n))
    parse = topo_text.parse
elif case == "-q blocks":
    text = "".join(f"GPU 0000{{i:04X}}:18:00.0\n    Fabric\n        State : Completed\n"
                   for i in range(20000))
    parse = nvml_text.derive_text
else:
    gpu = "".join(f"GPU {{g}}: NVIDIA H100 80GB HBM3 (UUID: GPU-{{g}})\n" + "".join(
        f"\t Link {{k}}: 26.562 GB/s\n" for k in range(18)) for g in range(8))
    text, parse = gpu * int(mb * 1e6 // len(gpu)), nvml_text.derive_text
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    out = parse(text)
    notes = len(out.notes)
except topo_text.TopoParseError as exc:
    notes = "error: " + str(exc)[:60]
took = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"mb": len(text) / 1e6, "s": took, "rss_mib": (peak - base) / 1024,
                  "notes": notes}}))
"""

CASES = ["repeated rows", "repeated rows, spaces", "glued header 30", "glued header 1000",
         "-q blocks", "nvlink lines"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=60.0)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"text parsers on hostile pastes; {machine()}; median of {args.runs} runs")
    for case in CASES:
        res = []
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, "-c", CHILD.format(root=ROOT, case=case,
                                                                     mb=args.mb)],
                                 capture_output=True, text=True, check=True, timeout=600)
            res.append(json.loads(out.stdout))
        s = statistics.median(r["s"] for r in res)
        rss = statistics.median(r["rss_mib"] for r in res)
        print(f"  {case:24s} {res[0]['mb']:7.2f} MB  {s:7.2f} s  +{rss:6.0f} MiB RSS  "
              f"notes: {res[0]['notes']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
