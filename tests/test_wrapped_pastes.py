"""Issue 12, item 3: damaged pastes are never silently read as something else.

A ``topo -m`` matrix wrapped at 80 or 120 columns (cut at the width as a terminal does, or
at spaces as a ticket system does; continuations indented or not; the header wrapped too)
is re-joined to exactly the unwrapped reading, or refused with one line naming the file.
Lines cut at a width with nothing following lose their cut last cell (unknown), never read
as another count (``NV1`` of ``NV18``) or a device named after a cell.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Dict

import pytest
from cli_runner import make_runner

from nvtopo.cli import app
from nvtopo.model import path_kind
from nvtopo.probes import topo as topo_text
from nvtopo.probes.topo import TopoParseError

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "fixtures" / "topo-corpus").glob("*.txt"))
DAMAGED = ROOT / "fixtures" / "topo-damaged"
CELLS = {"X", "NODE", "SYS", "PIX", "PXB", "PHB", "SOC", "OK", "NS", "CNS", "GNS", "TNS"}


def cut(text: str, width: int, indent: str = "") -> str:
    """Wrapped as a terminal does: every line longer than ``width`` cut at it."""
    out = []
    for line in text.split("\n"):
        out.append(line[:width])
        rest = line[width:]
        while rest:
            room = width - len(indent)
            out.append(indent + rest[:room])
            rest = rest[room:]
    return "\n".join(out)


def at_spaces(text: str, width: int, indent: str = "") -> str:
    """Wrapped as a ticket system does: at the last space before ``width``."""
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        out += textwrap.wrap(line, width, subsequent_indent=indent, expand_tabs=False,
                             replace_whitespace=False, break_on_hyphens=False) or [""]
    return "\n".join(out)


def reading(topo: Any) -> Dict[str, Any]:
    d = topo.to_dict()
    return {"gpus": [(g["index"], g.get("cpu_affinity"), g.get("numa_affinity"),
                      g.get("gpu_numa_id")) for g in d["gpus"]],
            "nics": [n["name"] for n in d["nics"]], "matrix": d.get("matrix"),
            "nvlinks": d.get("nvlinks")}


def _no_cell_named_device(topo: Any) -> None:
    names = [g.label for g in topo.gpus] + [n.name for n in topo.nics]
    if topo.matrix is not None:
        names += list(topo.matrix.devices)
    bad = [x for x in names if x in CELLS or (x.startswith("NV") and x[2:].isdigit())]
    assert not bad, bad


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name[:30])
def test_wrapped_corpus_is_rejoined_or_refused(path: Path) -> None:
    src = path.read_text(encoding="utf-8")
    want = reading(topo_text.parse(src))
    tried = rejoined = 0
    for wrap in (cut, at_spaces):
        for width in (80, 120):
            for indent in ("", "    "):
                text = wrap(src, width, indent)
                if text == src:
                    continue
                tried += 1
                try:
                    got = topo_text.parse(text)
                except TopoParseError as exc:
                    assert f"wrapped at {width} columns" in str(exc)
                    assert "paste it unwrapped" in str(exc)
                    continue
                _no_cell_named_device(got)
                assert reading(got) == want, (wrap.__name__, width, repr(indent))
                rejoined += 1
    if tried:
        assert rejoined, "every wrapped variant refused"


def test_most_wrapped_variants_are_rejoined() -> None:
    """Refusal is for what cannot be re-joined, not the easy way out."""
    done = refused = 0
    for path in CORPUS:
        src = path.read_text(encoding="utf-8")
        for wrap in (cut, at_spaces):
            for width in (80, 120):
                text = wrap(src, width)
                if text == src:
                    continue
                try:
                    topo_text.parse(text)
                    done += 1
                except TopoParseError:
                    refused += 1
    assert done >= 40 and refused <= done // 10, (done, refused)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name[:30])
def test_cut_lines_never_read_another_token(path: Path) -> None:
    """Lines cut at a width with nothing after: every cell read is the one printed, or
    unknown; no device is named after a cell."""
    src = path.read_text(encoding="utf-8")
    full = topo_text.parse(src)
    cells = {(a, b): t for a, b, t in full.matrix.pairs()} if full.matrix else {}
    for width in range(24, 200, 5):
        text = "\n".join(line[:width] for line in src.split("\n"))
        if text == src:
            continue
        try:
            got = topo_text.parse(text)
        except TopoParseError:
            continue
        _no_cell_named_device(got)
        for a, b, tok in got.matrix.pairs() if got.matrix else []:
            if tok is None or path_kind(tok) is None or (a, b) not in cells:
                continue
            assert tok == cells[(a, b)], (width, a, b, tok, cells[(a, b)])


def test_nv18_cut_to_nv1_is_not_one_link() -> None:
    src = (ROOT / "fixtures/topo-corpus/02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"
           ).read_text()
    text = "\n".join(line[:51] for line in src.split("\n"))
    assert "NV1\n" in text  # the damage this test is about
    topo = topo_text.parse(text)
    assert {t for _, _, t in topo.matrix.pairs() if t and t.startswith("NV")} == {"NV18"}
    assert any(n.code == "topo.truncated" for n in topo.notes)


def _fixture(name: str) -> Path:
    return DAMAGED / name


def test_wrapped_h100_fixture_checks_like_the_original(tmp_path: Path) -> None:
    """The ticket of the issue: an H100 matrix wrapped at 80 columns passed with NICs
    named NODE and SYS; re-joined, it is the 8-GPU, 8-NIC node the original is."""
    runner = make_runner()
    res = runner.invoke(app, ["show", "--from", str(_fixture("h100_wrapped_80_cut.txt"))])
    assert res.exit_code == 0, res.output
    assert "8 GPUs · 8 NICs · 28/28 GPU pairs NVLink-connected (NV18)" in res.output
    assert "re-joined" in res.output
    res = runner.invoke(app, ["check", "--from", str(_fixture("h100_wrapped_120_spaces.txt"))])
    assert res.exit_code == 0, res.output
    assert "PASS" in res.output


def test_unjoinable_wrap_is_one_line_exit_2() -> None:
    path = _fixture("h100_wrapped_80_cut_cell_lost.txt")
    res = make_runner().invoke(app, ["check", "--from", str(path)])
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert str(path) in err and "wrapped at 80 columns" in err


def _sim_matrix(layout: str, *faults: str) -> str:
    import json
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "nvtopo", "simulate", layout]
    for f in faults:
        cmd += ["--fault", f]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)["probes"]["topo-text"]["stdout"]


@pytest.mark.parametrize("layout,fault", [("dgx-h100", "nvlink-degraded:GPU2-GPU6"),
                                          ("dgx-a100", "nvlink-degraded:GPU0-GPU5")])
def test_a_fault_survives_wrapping_and_the_healthy_node_stays_clean(layout: str,
                                                                    fault: str) -> None:
    """A simulated node's matrix (TAB separated, 8 GPUs and up to 12 NICs) wrapped at 80
    and 120: the same errors as unwrapped (the degraded pair), none on the healthy node."""
    from nvtopo.checks import select_and_run
    from nvtopo.snapshot import load_text

    def errors(text: str) -> set:
        rep = select_and_run(load_text(text, "paste.txt"))
        return {(f.code, str(f.subject)) for f in rep.findings if f.severity == "error"}

    for faults in ((), (fault,)):
        matrix = _sim_matrix(layout, *faults)
        want = errors(matrix)
        assert bool(want) == bool(faults)
        for wrap in (cut, at_spaces):
            for width in (80, 120):
                assert errors(wrap(matrix, width)) == want, (wrap.__name__, width)
