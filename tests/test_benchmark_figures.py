"""docs/benchmarks.md carries only figures its benchmarks measure (issue 29, item 5).

Every figure is a row of the table in §2, naming the script in ``benchmarks/`` that measured
it (and re-measures it), the floor it is compared with, the ratio to that floor, and the
machine and load it was taken on.  A row whose script is missing, or that lacks its floor,
ratio or machine, fails; so does a script the page lists in its table of scripts that does
not exist, or a script in ``benchmarks/`` the page does not list.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
BENCH = ROOT / "benchmarks"
SCRIPT = re.compile(r"`(?:benchmarks/)?([a-z_]+\.py)")


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _rows(section: str) -> List[List[str]]:
    rows = []
    for line in section.splitlines():
        if line.startswith("|") and not set(line) <= set("|- "):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_every_figure_names_its_benchmark_floor_ratio_and_machine():
    rows = _rows(_section("2. Figures"))
    header, body = rows[0], rows[1:]
    assert header[:6] == ["benchmark", "measure", "floor", "result", "ratio", "machine"]
    assert body, "no figure"
    for row in body:
        assert len(row) == len(header), row
        m = SCRIPT.search(row[0])
        assert m, f"a figure names no benchmark script: {row}"
        assert (BENCH / m.group(1)).is_file(), f"{m.group(1)} is missing: {row}"
        for col in ("floor", "ratio", "machine"):
            assert row[header.index(col)] not in ("", "-", "—"), f"no {col}: {row}"
        assert re.search(r"\d", row[header.index("ratio")]), row


def test_no_figure_outside_the_table():
    """Prose in §2 holds no measured figure (a time, a rate, a ratio): those are rows."""
    prose = [line for line in _section("2. Figures").splitlines()
             if line and not line.startswith("|")]
    for line in prose:
        assert not re.search(r"\d\s?(ms|µs|us|files/s)\b|\d\.\d+\s?(s|×|x)\b", line), line


def test_the_scripts_listed_are_the_scripts_there():
    listed = {m.group(1) for row in _rows(DOC.read_text(encoding="utf-8").split(
        "\n## ")[0]) for m in [SCRIPT.search(row[0])] if m}
    there = {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")}
    assert listed == there
