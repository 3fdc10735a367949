"""docs/architecture.md's module map names only modules that exist.

The map (§7) is the first page a maintainer reads; it had named modules that were gone.  For
each row about a folder of the package, every module-shaped name in backticks (``live``,
``read.py``, ``svg/``) must be a module or package somewhere under that folder, and every
``nvtopo/...`` path named must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "architecture.md"
#: Backticked words in the map that are not module names (commands, options, functions).
NOT_MODULES = {"show", "snapshot", "links", "ib", "check", "layouts", "simulate", "audit",
               "diff", "collect", "cluster", "collect slurm", "collect ray", "layouts capture",
               "nvtopo cluster", "html", "rich-svg", "record", "ibnetdiscover", "nvlink"}


def _rows():
    text = MAP.read_text(encoding="utf-8")
    section = text.split("## 7. Module map", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        if line.startswith("| `nvtopo/"):
            first, rest = line[2:].split("|", 1)
            yield re.findall(r"`([^`]+)`", first), re.findall(r"`([^`]+)`", rest)


def test_the_module_map_names_modules_that_exist():
    missing = []
    rows = list(_rows())
    assert len(rows) >= 10
    for heads, names in rows:
        for head in heads:
            path = ROOT / head if head.startswith("nvtopo/") else ROOT / "nvtopo" / head
            if not path.exists():
                missing.append(head)
        base = ROOT / heads[0]
        folder = base if base.is_dir() else base.parent
        known = {p.stem for p in folder.rglob("*.py")} | {p.name for p in folder.rglob("*")
                                                           if p.is_dir()}
        for name in names:
            if not re.fullmatch(r"[a-z_0-9]+(\.py|/)?", name) or name in NOT_MODULES:
                continue
            stem = name[:-3] if name.endswith(".py") else name.rstrip("/")
            if stem not in known:
                missing.append(f"{heads[0]}: {name}")
    assert missing == [], missing
