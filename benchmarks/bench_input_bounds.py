"""Peak memory and wall time of ``nvtopo check --from FILE`` on hostile inputs at the bounds.

What the input bounds (``nvtopo/snapshot/read.py``: ``MAX_INPUT_BYTES``, ``MAX_JSON_BYTES``,
``MAX_JSON_VALUES``, ``MAX_TEXT_BYTES``, ``MAX_TEXT_LINES``) leave a hostile file able to
cost: JSON of many tiny values or one huge string (with a 4-byte character, so Python
holds it at 4 bytes a character), just inside and past each bound, and the largest real
topo text (a 1024-device matrix) beside junk text as large as accepted.  Each run is a
fresh process; its peak RSS is its own ``ru_maxrss``.  A plain script:

    python benchmarks/bench_input_bounds.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _machine import machine  # noqa: E402

MiB = 1024 * 1024
#: The child reports its own peak: VmHWM (this process image's; ru_maxrss on Linux keeps
#: the peak of the parent it was forked from across exec).
_RUN = ("import atexit, resource, sys\n"
        "def peak():\n"
        "    try:\n"
        "        for line in open('/proc/self/status'):\n"
        "            if line.startswith('VmHWM:'):\n"
        "                return int(line.split()[1])\n"
        "    except OSError:\n"
        "        pass\n"
        "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "atexit.register(lambda: sys.stderr.write('\\nRSS_KB %d\\n' % peak()))\n"
        "sys.argv = ['nvtopo', 'check', '--from', sys.argv[1]]\n"
        "from nvtopo.cli import run\n"
        "run()\n")
_HEAD = '{"kind": "nvtopo-snapshot", "schema_version": 1, "host": {%s}, "probes": {%s}}\n'


def _json_of(path: Path, size: int, unit: str, last: str) -> None:
    """A snapshot whose one probe holds a list of ``unit`` repeated to ``size`` bytes."""
    head = '{"kind": "nvtopo-snapshot", "schema_version": 1, "host": {}, "probes": {"x": {"a": ['
    tail = last + "]}}}\n"
    n = (size - len(head) - len(tail)) // len(unit)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(head)
        fh.write(unit * n)
        fh.write(tail)


def _string_of(path: Path, size: int, where: str) -> None:
    """A snapshot holding one string of ``size`` bytes (an emoji, then ASCII)."""
    unit = "GPU0 X NV18 \\n"  # a JSON-escaped newline
    text = "\U0001F600" + unit * ((size - 300) // len(unit))
    if where == "host":
        body = _HEAD % (f'"hostname": "{text}"', "")
    else:
        body = _HEAD % ("", f'"topo-text": {{"status": "ok", "stdout": "{text}"}}')
    path.write_text(body, encoding="utf-8")


def _matrix(path: Path, n: int = 1024) -> None:
    head = "\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity\n"
    rows = "".join(f"GPU{i}\t" + "\t".join("X" if i == j else "NV18" for j in range(n))
                   + "\t0-55\t0\n" for i in range(n))
    path.write_text(head + rows, encoding="utf-8")


def _junk(path: Path, size: int) -> None:
    line = "GPU0 " + "X " * 4000 + "\n"
    path.write_text(line * (size // len(line)), encoding="utf-8")


SHAPES = [
    ("64 MiB of '{},' (refused: size)", lambda p: _json_of(p, 64 * MiB, "{},", "{}")),
    ("64 MiB string with an emoji (refused: size)",
     lambda p: _string_of(p, 64 * MiB - 1000, "host")),
    ("32 MiB of '0,' (refused: values)", lambda p: _json_of(p, 32 * MiB - 1000, "0,", "0")),
    ("4 MiB of '{},' (decoded: under the count)",
     lambda p: _json_of(p, 4 * MiB - 1000, "{},", "{}")),
    ("32 MiB hostname with an emoji (decoded)",
     lambda p: _string_of(p, 32 * MiB - 1000, "host")),
    ("32 MiB topo stdout with an emoji (refused after decoding)",
     lambda p: _string_of(p, 32 * MiB - 1000, "stdout")),
    ("1024-device topo matrix, 5.3 MB (accepted)", _matrix),
    ("8 MiB of 4,000-cell junk rows (accepted)", lambda p: _junk(p, 8 * MiB - 1000)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="write the inputs here and keep them")
    args = ap.parse_args()
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="nvtopo-bounds-"))
    tmp.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(REPO)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    print(f"machine: {machine()}")
    print(f"{'input':58} {'status':>6} {'wall':>8} {'peak RSS':>10}")
    try:
        for i, (label, make) in enumerate(SHAPES):
            path = tmp / f"shape{i}"
            make(path)
            t = time.perf_counter()
            res = subprocess.run([sys.executable, "-c", _RUN, str(path)], env=env,
                                 capture_output=True, text=True)
            wall = time.perf_counter() - t
            rss = next((int(x.split()[1]) for x in res.stderr.splitlines()
                        if x.startswith("RSS_KB ")), 0)
            print(f"{label:58} {res.returncode:>6} {wall:>7.2f}s {rss / 1024:>8.0f} MB")
            if not args.keep:
                path.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
