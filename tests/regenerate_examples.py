"""Remake the bundled example snapshots (``nvtopo/examples/*.json.gz``) with this nvtopo.

Their sealed model cache is only used by an nvtopo that derives byte for byte as the one that
wrote them (``code_sha256``), so every change to how evidence is derived makes the cache
stale and ``check --example`` re-derives on every run (0.54 s of CPU instead of 0.35).
``tests/test_examples.py`` fails when that happens; then run, from the checkout::

    python tests/regenerate_examples.py

The commands are the ones ``docs/commands.md`` (check, ``--example``) gives.  The gzip
stream is written with no name and time, so the bytes change only when the snapshot does.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "nvtopo" / "examples"
BASE = ["simulate", "dgx-h100", "--seed", "1", "--hostname", "dgx-h100-example"]
FAULTS = ["--fault", "nvlink-down:GPU3:7", "--fault", "ib-port-down:mlx5_4",
          "--fault", "pcie-width:GPU5:8", "--fault", "counters:mlx5_2:symbol_error=100"]
SNAPSHOTS = {"dgx-h100-healthy": BASE, "dgx-h100-faulty": BASE + FAULTS}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in SNAPSHOTS.items():
            out = Path(tmp) / f"{name}.json"
            subprocess.run([sys.executable, "-m", "nvtopo", *args, "-o", str(out)],
                           check=True, cwd=ROOT)
            data = out.read_bytes()
            with open(EXAMPLES / f"{name}.json.gz", "wb") as raw:
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                   compresslevel=9) as gz:
                    gz.write(data)
            print(f"wrote nvtopo/examples/{name}.json.gz ({len(data)} bytes of JSON)")


if __name__ == "__main__":
    main()
