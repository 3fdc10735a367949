"""Hostile and broken input to the text parsers (issue 10): hangs, Unicode digits, size.

Four groups:

1. **Regressions**, each from a fixture in ``fixtures/hostile`` where the input is small
   enough to keep (see its README): a 142-byte glued header that hung nvtopo, ``²`` and
   ``٣`` where numbers belong, 5000-digit numbers (``int()`` refuses more than 4300).
2. **The scanners against the patterns they replaced.**  The old regular expressions
   backtrack exponentially or quadratically, but on short ASCII strings they are a fine
   reference: hypothesis checks that every scanner says what its pattern said.
3. **Size.**  A paste of a few MB of repeated rows, a row of thirty thousand TABs, a
   legend wrapped over a hundred thousand lines, thousands of ``-q`` blocks: each must be
   read in linear time (a generous "finishes within" bound catches the old behaviour,
   which took minutes) and give a bounded model.
4. **Fuzzing.**  Grammar-built text (glued labels, cells, affinity columns, long lines,
   Unicode digits, control characters, lone surrogates) and mutated real files: every
   input parses or raises the parser's own error, never anything else, in bounded time.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import tracemalloc
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_runner import make_runner
from nvtopo import model
from nvtopo.cli import app
from nvtopo.errors import NvtopoError
from nvtopo.model import GPU, NVLinkPair, Origin, Topology
from nvtopo.probes import topo as topo_text
from nvtopo.probes.nvml import paste as nvml_paste
from nvtopo.probes.nvml import text as nvml_text
from nvtopo.probes.nvml import xml as nvml_xml
from nvtopo.probes.topo import MAX_DEVICES, MAX_LINE_CHARS, MAX_NOTES, TopoParseError
from nvtopo.probes.topo import locate as topo_locate
from nvtopo.probes.topo import legend as topo_legend
from nvtopo.probes.topo import scan as topo_scan
from nvtopo.snapshot import read

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "fixtures" / "hostile"
TOPO_CORPUS = ROOT / "fixtures" / "topo-corpus"
SHARED = Path("/work/shared/corpus")


def hostile(name: str) -> str:
    return (HOSTILE / name).read_text(encoding="utf-8")


class Hang(Exception):
    pass


@contextmanager
def finishes_within(seconds: float) -> Iterator[None]:
    """Fail (instead of hanging the suite) when the block runs longer than ``seconds``.

    A hang detector, not a speed target: the bounds are many times the real time.  The
    regular expression engine checks for signals, so SIGALRM stops a runaway match.
    """
    if not hasattr(signal, "setitimer"):  # pragma: no cover - POSIX only
        yield
        return

    def expire(signum, frame):
        raise Hang(f"did not finish within {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def codes(topo: Topology) -> List[str]:
    return [n.code for n in topo.notes]


# --- 1. regressions -------------------------------------------------------------------------


def test_glued_header_of_30_labels_is_refused_at_once():
    """142 bytes: GPU0GPU1...GPU29x.  The glued-header pattern backtracked exponentially on
    it (20 labels took 11 s, 22 took 74 s; this one never finished)."""
    text = hostile("topo-glued-header-30-labels-142-bytes.txt")
    assert len(text.encode()) == 142
    with finishes_within(10):
        assert topo_text.looks_like_topo(text) is False
        with pytest.raises(TopoParseError, match="no nvidia-smi topo matrix"):
            topo_text.parse(text)


def test_glued_header_of_30_labels_cli_says_one_line_and_exits_2():
    path = HOSTILE / "topo-glued-header-30-labels-142-bytes.txt"
    with finishes_within(30):
        result = make_runner().invoke(app, ["show", "--from", str(path)])
    assert result.exit_code == 2
    err = result.stderr.strip()
    assert "\n" not in err and str(path) in err and "Traceback" not in err


def test_glued_header_of_30_gpus_is_split_into_its_devices():
    with finishes_within(10):
        topo = topo_text.parse(hostile("topo-glued-header-30-gpus.txt"))
    assert topo.matrix.devices == [f"GPU{i}" for i in range(30)]
    assert topo.matrix.get("GPU28", "GPU29") == "NV4"
    assert topo.matrix.get("GPU0", "GPU29") == "SYS"
    assert [(p.a, p.b, p.count) for p in topo.nvlinks] == [(i, i + 1, 4) for i in range(0, 30, 2)]
    assert topo.gpu(29).cpu_affinity == "32-63" and topo.gpu(29).numa_affinity == "1"
    assert not [n for n in topo.notes if n.level == "warning"]


@pytest.mark.parametrize("n", [100, 1000])
def test_long_glued_headers_are_read_in_linear_time(n):
    header = "".join(f"GPU{i}" for i in range(n))
    rows = "".join(f"GPU{i} X\n" for i in range(n))
    with finishes_within(20):
        topo = topo_text.parse(header + "\n" + rows)
        assert topo_locate._header_candidate(header * 4 + "!") is False
    assert topo.matrix.devices == [f"GPU{i}" for i in range(n)]


def test_clique_id_superscript_two_is_unknown_not_a_crash():
    """``CliqueId : ²``: isdigit() said yes, int() said no (ValueError)."""
    text = hostile("q-fabric-cliqueid-superscript.txt")
    raw = nvml_text.fabric_raw(nvml_text.parse(text)["gpus"][0]["q"])
    assert raw["state"] == 3 and raw["status"] == 0 and "cliqueId" not in raw
    topo = nvml_text.derive_text(text)
    fabric = topo.gpus[0].nvml_text.to_dict()["fabric"]
    assert fabric["state"] == "completed" and fabric["clique_id"] is None
    assert fabric["cluster_uuid"] == "7f0c6a1e-1234-4abc-8def-0123456789ab"
    assert nvml_text.fabric_raw({"Fabric / State": "Completed", "Fabric / CliqueId": "٣"}) \
        == {"state": 3}
    assert nvml_text.fabric_raw({"Fabric / State": "Completed", "Fabric / CliqueId": "7"}) \
        == {"state": 3, "cliqueId": 7}


def test_unicode_digit_cells_are_unknown_tokens_never_link_counts():
    """``NV٣`` and ``NV３``: ``\\d`` matched them and ``int()`` read 3 links."""
    topo = topo_text.parse(hostile("topo-unicode-digit-cells.txt"))
    assert topo.matrix.cells == [["X", "NV٣", "NV３"], ["SYS", "X", "NV²"], ["SYS", "NV²", "X"]]
    assert topo.nvlinks == []
    unknown = [n.message for n in topo.notes if n.code == "topo.unknown_token"]
    assert len(unknown) == 3 and all(re.search(r"'NV(٣|３|²)'", m) for m in unknown)
    assert topo.gpu(0).gpu_numa_id is None
    assert "topo.bad_value" in codes(topo)
    assert topo.gpu(1).cpu_affinity == "١٦-31"  # kept as printed, never read as a number
    for tok in ("NV٣", "NV３", "NV²", "NV" + "1" * 5000):
        assert model.nvlink_count(tok) is None and model.path_kind(tok) is None
    assert model.nvlink_count("NV18") == 18 and model.path_kind("NV18") == "NV"


def test_unicode_digit_labels_are_not_gpus():
    """``GPU٣1`` is a header name (it ends in an ASCII digit) but no GPU: ``\\d`` made it GPU31."""
    topo = topo_text.parse("GPU0 GPU٣1 GPU３2\nGPU0 X NV4 NV4\n")
    assert topo.matrix.devices == ["GPU0", "GPU٣1", "GPU３2"]
    assert [g.index for g in topo.gpus] == [0]
    assert [n.label for n in topo.nics] == ["GPU٣1", "GPU３2"]
    assert topo.nvlinks == []


def test_unicode_digits_in_nvlink_text_are_noted_not_read():
    topo = nvml_text.derive_text(hostile("nvlink-unicode-digits.txt"))
    assert [g.index for g in topo.gpus] == [0]
    links = topo.gpus[0].nvml_text.to_dict()["nvlink"]["links"]
    # link ١ is not link 1; ٢٥ and 2² are no speeds; the lines under "GPU ١:" are not GPU 0's
    assert [(lk["link"], lk["speed_mbps"]) for lk in links] == [(0, 25000), (2, None),
                                                                (3, None), (4, 25000)]
    bad = [n.message for n in topo.notes if n.code == "nvml_text.bad_number"]
    assert len(bad) == 4
    assert any("'١'" in m and "link number" in m for m in bad)
    assert any("GPU number '١'" in m for m in bad)


def test_5000_digit_numbers_are_noted_not_a_crash():
    """Python refuses int() of more than 4300 digits (ValueError) and float() gives inf."""
    topo = nvml_text.derive_text(hostile("nvlink-5000-digit-numbers.txt"))
    assert [g.index for g in topo.gpus] == [0]
    links = {lk["link"]: lk for lk in topo.gpus[0].nvml_text.to_dict()["nvlink"]["links"]}
    assert links[0]["speed_mbps"] is None and links[3]["speed_mbps"] == 26562
    # "Link 9…9: 25 GB/s" and "Link 1: Replay Errors: 9…9" are dropped with a note; the -R
    # line goes to the first active link (-R numbers only active links), its far end unknown
    assert set(links) == {0, 3}
    assert links[0]["remote"]["pci_bus_id"] == "00000000:05:00.0"
    assert links[0]["remote"]["link"] is None
    assert len([n for n in topo.notes if n.code == "nvml_text.bad_number"]) == 5
    assert all(len(n.message) < 300 for n in topo.notes)


def test_long_digit_runs_in_topo_text_are_not_numbers():
    big = "9" * 5000
    topo = topo_text.parse(f"GPU0 GPU{big}\nGPU0 X NV{big}\nGPU{big} NV4 X\n")
    assert [g.label for g in topo.gpus] == ["GPU0"]  # GPU9…9 is no GPU index
    assert [n.label for n in topo.nics] == [f"GPU{big}"]
    assert topo.nvlinks == [] and topo.matrix.get("GPU0", f"GPU{big}") == f"NV{big}"
    assert "topo.unknown_token" in codes(topo)
    assert all(len(n.message) <= topo_text.MAX_NOTE_CHARS + 30 for n in topo.notes)


def test_isdigit_sites_elsewhere_take_ascii_only():
    from nvtopo import diff
    from nvtopo.commands import capture
    from nvtopo.render import matrix as render_matrix
    from nvtopo.render import svg

    assert render_matrix._is_gpu("GPU3") and not render_matrix._is_gpu("GPU²")
    assert not render_matrix._is_gpu("GPU٣")
    assert svg._numa_sort("1") == (0, 1, "") and svg._numa_sort("²") == (1, 0, "²")
    assert svg._numa_sort("1" * 5000) == (1, 0, "1" * 5000)
    assert sorted(["mlx5_10", "mlx5_²", "mlx5_9", "mlx5_" + "1" * 5000], key=capture._natural) \
        == ["mlx5_9", "mlx5_10", "mlx5_" + "1" * 5000, "mlx5_²"]

    def node(count):
        return Topology(gpus=[GPU(index=0, label="GPU²"), GPU(index=1, label="GPU1")],
                        nvlinks=[NVLinkPair(0, 1, count)], origin=Origin.of("topo-text"))

    changes = diff.compare(node(4), node(2))
    pair = [c for c in changes.changes if c.kind == "nvlink.pair"]
    assert [c.subject for c in pair] == ["GPU²-GPU1"] and pair[0].before == "NV4"  # ² sorts as 0


def test_merge_relabel_with_unicode_digits_does_not_crash():
    a = Topology(gpus=[GPU(index=0, label="GPU0", pci_bus_id="0000:18:00.0")])
    b = Topology(gpus=[GPU(index=5, label="GPU²", pci_bus_id="0000:18:00.0")],
                 nvlinks=[NVLinkPair(5, 6, 4, source="x")])
    a.merge(b)
    assert [(p.a, p.b) for p in a.nvlinks] == [(5, 6)]  # no index map from a non-ASCII label


# --- 2. scanners against the patterns they replaced ------------------------------------------
#
# The old patterns, compiled with re.ASCII: the scanners read digits as ASCII on purpose, so
# the reference is the old reading of ASCII text.  Inputs are short (the patterns are
# exponential) and drawn from the characters the grammar uses.

OLD_HEADER_START = re.compile(r"^GPU\d+(?:GPU\d+|NIC\d+|[A-Za-z][\w.-]*\d)*$", re.A)
OLD_DEVICE_NAME = re.compile(r"^[A-Za-z][\w.-]*\d$", re.A)
OLD_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[_.-][A-Za-z0-9]+)*$", re.A)
OLD_CELL_ALT = r"NV\d+|NODE|PIX|PXB|PHB|SYS|SOC|CNS|GNS|TNS|NS|OK|DR|X|U"
OLD_GLUED_CELLS = re.compile(rf"(?:{OLD_CELL_ALT})+", re.A)
OLD_ONE_CELL = re.compile(OLD_CELL_ALT, re.A)
OLD_GLUED_LABEL = re.compile(r"GPU\d+|NIC\d+|[a-z]+\d*_(?:[a-z]+_)?\d+", re.A)
OLD_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\[(?:\d{1,3}(?:;\d{1,3})*)?m",
                      re.A)
OLD_GPU_HDR = re.compile(r"^\s*GPU (\d+): (.+?) \(UUID: ([^)]*)\)\s*$", re.A)
OLD_E_LINE = re.compile(r"^\s*Link (\d+): ([A-Za-z][A-Za-z ]*?) Errors?: (\d+)\s*$", re.A)
OLD_C_LINE = re.compile(r"^\s*Link (\d+), (.+?): (true|false)\s*$", re.I | re.A)
OLD_KV = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9 /()-]*?)\s*:\s*(.*?)\s*$", re.A)

SCANNER = dict(max_examples=400, deadline=None)


def _texts(alphabet: str, parts: List[str], max_size: int = 12):
    return st.lists(st.one_of(st.sampled_from(parts), st.text(alphabet, max_size=2)),
                    max_size=max_size).map("".join)


_HEADER_PARTS = ["GPU", "NIC", "mlx", "_", "bond_", ".", "-", "0", "1", "12", "x", "Z"]
_CELL_PARTS = ["NV", "1", "18", "NODE", "PIX", "PXB", "PHB", "SYS", "SOC", "CNS", "GNS", "TNS",
               "NS", "OK", "DR", "X", "U", "N", "V", "S"]


@settings(**SCANNER)
@given(_texts("GPUNIC0123mlxb_.-aZ!", _HEADER_PARTS))
def test_header_scanners_read_as_the_old_patterns(tok):
    assert topo_scan.header_start(tok) == bool(OLD_HEADER_START.match(tok))
    if tok:
        assert topo_scan.device_name(tok) == bool(OLD_DEVICE_NAME.match(tok))
    assert topo_scan.is_label(tok) == bool(OLD_LABEL.match(tok))


@settings(**SCANNER)
@given(_texts("GPUNIC0123mlxbond_a", ["GPU", "NIC", "mlx", "5", "_", "bond_", "0", "12"]))
def test_glued_label_scanner_reads_as_the_old_findall(tok):
    pieces = OLD_GLUED_LABEL.findall(tok)
    old = pieces if pieces and "".join(pieces) == tok else [tok]
    assert topo_scan.split_labels(tok, []) == old


@settings(**SCANNER)
@given(st.lists(st.sampled_from(["GPU0", "GPU1", "GPU10", "GPU01", "NIC0", "NIC01", "mlx5_0",
                                 "G", "0", "1"]), max_size=8).map("".join),
       st.lists(st.sampled_from(["GPU0", "GPU1", "GPU10", "GPU01", "NIC0", "mlx5_0", "NIC01"]),
                max_size=5))
def test_glued_label_split_by_row_labels_as_before(tok, known):
    def old(tok, known):  # the dynamic programme as it was
        if tok in known:
            return [tok]
        n = len(tok)
        best = [None] * (n + 1)
        best[0] = []
        for i in range(n):
            if best[i] is None:
                continue
            for lab in known:
                if lab and tok.startswith(lab, i) and best[i + len(lab)] is None:
                    best[i + len(lab)] = best[i] + [lab]
        if best[n]:
            return best[n]
        pieces = OLD_GLUED_LABEL.findall(tok)
        return pieces if pieces and "".join(pieces) == tok else [tok]

    if tok:
        assert topo_scan.split_labels(tok, known) == old(tok, known)


@settings(**SCANNER)
@given(_texts("NVODEPIXSCKGTRU0123", _CELL_PARTS))
def test_cell_scanner_reads_as_the_old_pattern(tok):
    old = OLD_ONE_CELL.findall(tok) if OLD_GLUED_CELLS.fullmatch(tok) else None
    cells, count = topo_scan.scan_cells(tok, len(tok))
    assert cells == old and (count == len(old) if old else count == 0)
    assert topo_scan.is_cell(tok) == (old is not None)
    assert topo_scan.split_cells(tok) == (old if old is not None else [tok])


@settings(**SCANNER)
@given(_texts("\x1b[0123;?m @AZ\\_~", ["\x1b[", "[", "0", "12", "123", "1234", ";", "m"], 16))
def test_ansi_stripping_reads_as_the_old_pattern(text):
    new = topo_scan._ANSI_RE.sub(topo_scan._unansi, text)
    assert new == OLD_ANSI.sub("", text)


@settings(**SCANNER)
@given(_texts("GPU 0123:()UIDxa\t", ["GPU ", "0", "12", ": ", "name", " (UUID: ", ")", "(",
                                      " ", "\t", "a)b"], 10))
def test_gpu_header_scanner_reads_as_the_old_pattern(line):
    m = OLD_GPU_HDR.match(line)
    assert nvml_paste._gpu_header(line) == (m.groups() if m else None) or (
        m is None and not nvml_paste._gpu_header(line)[0].isdigit())


@settings(**SCANNER)
@given(_texts("Link 0123:aRE rso\t", ["Link ", "0", "12", ": ", "Replay", " Errors", " Error",
                                        "s", ": ", "5", " ", "\t"], 10))
def test_error_line_scanner_reads_as_the_old_pattern(line):
    m = OLD_E_LINE.match(line)
    assert nvml_paste._e_line(line) == (m.groups() if m else None)


@settings(**SCANNER)
@given(_texts("Link 0123,:aTtrueFALSE \t", ["Link ", "LINK ", "0", "1", ", ", "P2P", ": ",
                                              "true", "False", "TRUE", " ", "\t", ":"], 10))
def test_capability_line_scanner_reads_as_the_old_pattern(line):
    m = OLD_C_LINE.match(line)
    got = nvml_paste._c_line(line)
    if m is None:
        assert got is None
    else:
        assert got == (m.group(1), m.group(2), m.group(3).lower())


@settings(**SCANNER)
@given(_texts("Key /()-0:a \t", ["Key", " ", "  ", "\t", ":", " : ", "Value", "(x)", "/", "-"],
              10))
def test_key_value_scanner_reads_as_the_old_pattern(line):
    m = OLD_KV.match(line)
    got = nvml_paste._kv(line)
    if m is None:
        assert got is None
    else:
        assert got == (m.group(2).strip(), m.group(3))


def test_first_two_tokens_are_the_tokenizers():
    for line in ["GPU0\t X \tNV4", "\t\tGPU0\t\tX", "GPU0 X NV4", "  GPU0", "", "\t", "a\t b c",
                 "GPU0\u00a0X", "\tGPU0 X\tNV4", "x\t \ty", "GPU0\t"]:
        toks = [t.text for t in topo_scan.split_tokens(line)[0]]
        assert topo_scan.first_two(line) == toks[:2], line


# --- 3. size ---------------------------------------------------------------------------------

A100 = (TOPO_CORPUS / "01_hgx-a100-8gpu-nv12-10nic-tabs.txt").read_text()


def _repeated_rows(size: int) -> str:
    lines = A100.split("\n")
    block = "\n".join(lines[1:19]) + "\n"
    return lines[0] + "\n" + block * (size // len(block))


def test_megabytes_of_repeated_rows_are_linear_and_bounded():
    """A paste of repeated matrix rows gave one note per row: 60 MB took 44 s and 2.7 GB.

    Here 6 MB (the 60 MB figures are in the report and benchmarks): the model holds the
    first MAX_NOTES repeats and one note counting the rest; memory stays near the text's.
    """
    text = _repeated_rows(6_000_000)
    repeats = text.count("\n") - 19
    tracemalloc.start()
    try:
        with finishes_within(600):  # a hang detector (tracemalloc slows it several times)
            topo = topo_text.parse(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    dup = [n for n in topo.notes if n.code == "topo.duplicate_row"]
    assert len(dup) == MAX_NOTES + 1
    assert f"… and {repeats - MAX_NOTES} more topo.duplicate_row notes" in dup[-1].message
    assert dup[0].message == "row GPU0 appears twice (line 20); the first one is used"
    assert set(codes(topo)) == {"topo.duplicate_row", "topo.no_nic_legend"}
    assert topo.matrix.get("GPU0", "NIC1") == "PXB" and topo.nvlink(6, 7) == 12
    assert topo.gpu(4).cpu_affinity == "112-127,240-255"


def test_a_row_of_thirty_thousand_tabs_is_read_in_linear_time():
    """Surplus empty TAB fields were popped one at a time, each pop a scan: quadratic
    (20 000 TABs took 8 s)."""
    tabs = "\t" * 30_000
    text = ("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
            f"GPU0\t X\tNV4\t0-3\t0{tabs}\nGPU1\tNV4\t X\t4-7\t1\n")
    assert len(text.split("\n")[1]) < MAX_LINE_CHARS
    with finishes_within(10):
        topo = topo_text.parse(text)
    assert topo.gpu(0).cpu_affinity == "0-3" and topo.gpu(0).numa_affinity == "0"
    assert topo.nvlink(0, 1) == 4 and not [n for n in topo.notes if n.level == "warning"]


def test_a_legend_wrapped_over_many_lines_is_linear_and_capped():
    text = "GPU0 X\nLegend:\n  X = Self\n" + "      and more words\n" * 200_000
    with finishes_within(20):
        topo = topo_text.parse(text)
    legend = topo.topo_text.to_dict()["legend"]["X"]
    assert legend.startswith("Self and more words") and legend.endswith(" …")
    assert len(legend) <= topo_legend.MAX_LEGEND_CHARS + 2


def test_a_header_line_longer_than_read_is_an_error():
    header = " ".join(f"GPU{i % 1000}" for i in range(MAX_LINE_CHARS // 4))
    assert len(header) > MAX_LINE_CHARS
    with finishes_within(10), pytest.raises(TopoParseError, match="characters long"):
        topo_text.parse(header + "\nGPU0 X\n")


def test_a_row_longer_than_read_is_noted_and_not_read():
    text = "GPU0 GPU1\nGPU0 X NV4\nGPU1 NV4 X" + " NV4" * MAX_LINE_CHARS + "\n"
    with finishes_within(10):
        topo = topo_text.parse(text)
    assert "topo.long_row" in codes(topo)
    assert topo.nvlink(0, 1) == 4  # from GPU0's row
    assert topo.matrix.cells[1] == ["NV4", "X"]  # mirrored, then the diagonal


def test_more_distinct_rows_than_devices_read_is_an_error():
    text = "".join(f"dev{i} X\n" for i in range(MAX_DEVICES + 1))
    with finishes_within(10), pytest.raises(TopoParseError, match="more than"):
        topo_text.parse(text)


def test_notes_of_one_kind_are_capped_with_a_count():
    n = MAX_NOTES + 40
    tokens = [f"Q{i}" for i in range(n)]
    # the legend after the row: rows left out, not a paste cut after GPU0 (below)
    text = ("GPU0 " + " ".join(f"NIC{i}" for i in range(n)) + "\n"
            "GPU0 X " + " ".join(tokens) + "\n\nLegend:\n\n  X    = Self\n")
    topo = topo_text.parse(text)
    unknown = [x for x in topo.notes if x.code == "topo.unknown_token"]
    assert len(unknown) == MAX_NOTES + 1
    assert unknown[-1].message.startswith(f"… and {n - MAX_NOTES} more topo.unknown_token")
    missing = [x for x in topo.notes if x.code == "topo.missing_row"]
    assert len(missing) == MAX_NOTES + 1 and missing[0].subject == "NIC0"
    # cut after GPU0 (no legend): one topo.cut note, bounded however many rows it lacks
    cut = topo_text.parse(text.split("\n\nLegend")[0] + "\n")
    notes = [x for x in cut.notes if x.code == "topo.cut"]
    assert len(notes) == 1 and len(notes[0].message) < 400
    assert "topo.missing_row" not in [x.code for x in cut.notes]


def test_nic_legend_of_a_hundred_thousand_strays_is_bounded():
    text = "GPU0 X\n" + "".join(f"NIC{i}: mlx5_{i}\n" for i in range(100_000))
    with finishes_within(20):
        topo = topo_text.parse(text)
    stray = [n.message for n in topo.notes if n.code == "topo.stray_nic_legend"]
    assert len(stray) == 1 and stray[0].endswith("and 99936 more lines like these")


def test_thousands_of_q_blocks_are_bounded():
    text = "".join(f"GPU 0000{i:04X}:18:00.0\n    Fabric\n        State : Completed\n"
                   for i in range(6000))
    with finishes_within(30):
        topo = nvml_text.derive_text(text)
    assert len(topo.gpus) == 1024
    assert [g.index for g in topo.gpus[:3]] == [0, 1, 2]
    assert topo.gpus[3].pci_bus_id == "00000003:18:00.0"
    assert "nvml_text.too_many_blocks" in codes(topo)


def test_q_lines_with_long_whitespace_are_linear():
    """``Key<100 000 spaces>x`` and ``Key :<spaces>x<spaces>y``: the lazy key/value pattern
    was quadratic (200 000 spaces: minutes)."""
    pad = " " * 200_000
    text = f"GPU 00000000:18:00.0\n    Product{pad}Name\n    Bus Id :{pad}x{pad}y\n"
    with finishes_within(10):
        parsed = nvml_text.parse(text)
    assert parsed["gpus"][0]["q"] == {"Bus Id": f"x{pad}y"}


def test_nvlink_lines_built_to_backtrack_are_linear():
    with finishes_within(10):
        assert nvml_paste._gpu_header("GPU 0: x" + " (UUID: " * 50_000) is None
        assert nvml_paste._gpu_header("GPU 0: a (b) (UUID: GPU-1)  ") == ("0", "a (b)", "GPU-1")
        e = nvml_paste._e_line("Link 0: " + "a " * 100_000 + "Errors: 5")
        assert e is not None and e[2] == "5"
        c = nvml_paste._c_line("Link 0, " + ": tru" * 100_000 + ": true")
        assert c is not None and c[2] == "true"
        assert nvml_text.looks_like("\n" * 1_000_000 + "x") is False


def test_notes_per_gpu_are_capped_with_a_count():
    text = "GPU 0: H100 (UUID: GPU-1)\n" + "".join(f" Link {i % 60}: x{i} GB/s\n"
                                                   for i in range(1000))
    topo = nvml_text.derive_text(text)
    bad = [n for n in topo.notes if n.code == "nvml_text.bad_number"]
    assert len(bad) == nvml_text.MAX_NOTES + 1
    assert bad[-1].message.startswith(f"… and {1000 - nvml_text.MAX_NOTES} more")
    assert len(topo.gpus[0].nvml_text.to_dict()["nvlink"]["links"]) == 60


# --- 3b. cost in proportion to the input (issue 21) ------------------------------------------
#
# Inputs whose cost grew faster than their size: gzip members (each copied the rest of the
# file), a DTD's declared attribute defaults (copied into every element), elements under
# <fabric> (each a line of -q text past the text's line bound), layout numbers (a GPU count
# of 10^30 built until memory ran out).

_EMPTY_MEMBER = gzip.compress(b"", mtime=0)
COST_FUZZ = dict(deadline=10_000, suppress_health_check=[HealthCheck.too_slow,
                                                         HealthCheck.data_too_large])


def test_many_empty_gzip_members_are_refused_at_once():
    """8 MB of empty gzip members (400,000 of them): each member copied the rest of the
    data, so this took minutes (4 MB: 17 s of CPU); the members are counted and bounded."""
    data = gzip.compress(b'{"kind": "nvtopo-snapshot"}', mtime=0) \
        + _EMPTY_MEMBER * (8 * 2 ** 20 // len(_EMPTY_MEMBER))
    with finishes_within(10):
        with pytest.raises(NvtopoError, match=f"more than {read.MAX_GZIP_MEMBERS:,} gzip "
                                              "members") as exc:
            read.within_bounds(data, "many.json.gz")
    assert "many.json.gz" in str(exc.value)


def test_gzip_members_up_to_the_bound_are_read_whole():
    """As many members as the bound allows, with a large last member: every byte read, in
    time linear in the input (the rest was copied once per member)."""
    parts = [(b"%05d," % i) for i in range(read.MAX_GZIP_MEMBERS - 1)]
    tail = os.urandom(6 * 2 ** 20)  # incompressible: 6 MB of compressed input to walk
    data = b"".join(gzip.compress(p, mtime=0) for p in parts) + gzip.compress(tail, 1, mtime=0)
    with finishes_within(10):
        out = read.gunzip(data, "w")
    assert out == b"".join(parts) + tail
    with pytest.raises(NvtopoError, match="gzip members"):
        read.gunzip(data + _EMPTY_MEMBER, "w")


def test_a_collect_record_of_empty_members_is_refused_at_once():
    """The collector checks each record's payload through the same reader: one such record
    held it 119 s past a 4 s deadline."""
    from nvtopo.commands.collect.collector import verify_payload

    payload = _EMPTY_MEMBER * 200_000
    with finishes_within(10):
        with pytest.raises(NvtopoError, match="gzip members"):
            verify_payload(payload, "node n1")


def _q_x(body: str, doctype: str = "") -> str:
    return ('<?xml version="1.0"?>\n' + doctype + '<nvidia_smi_log><gpu id="00000000:18:00.0">'
            '<product_name>NVIDIA H100</product_name>' + body + '</gpu></nvidia_smi_log>\n')


@pytest.mark.parametrize("doctype", [
    '<!DOCTYPE nvidia_smi_log [\n<!ATTLIST a x CDATA "v">\n]>\n',
    '<!DOCTYPE nvidia_smi_log [\n<!ELEMENT a ANY>\n]>\n',
    '<!DOCTYPE nvidia_smi_log [ ]>\n',
    '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd" [\n<!ATTLIST gpu y CDATA "z">\n]>\n',
], ids=["attlist", "element", "empty-subset", "system-and-subset"])
def test_q_x_with_an_internal_dtd_is_refused(doctype):
    with pytest.raises(NvtopoError, match="DTD") as exc:
        nvml_xml.to_q_text(_q_x("<a/>", doctype), "q.xml")
    assert str(exc.value).startswith("q.xml: ")


def test_q_x_attribute_defaults_are_not_copied_into_every_element():
    """An ATTLIST of 3,000 defaulted attributes over 100,000 elements (0.5 MB): expat copied
    every default into every element (300 million attributes; 8 MB took ten minutes)."""
    attrs = " ".join(f'x{i} CDATA "v"' for i in range(3000))
    text = _q_x("<a/>" * 100_000, f"<!DOCTYPE nvidia_smi_log [\n<!ATTLIST a {attrs}>\n]>\n")
    with finishes_within(10):
        with pytest.raises(NvtopoError, match="DTD"):
            nvml_xml.to_q_text(text, "q.xml")


def test_q_x_as_nvidia_smi_writes_it_keeps_its_external_dtd_name():
    text = (ROOT / "fixtures" / "nvml-xml" / "nvidia_smi_q_x_h100_2gpu_healthy.xml").read_text()
    assert '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">' in text
    q, cut = nvml_xml.to_q_text(text, "q.xml")
    assert cut is None and q.count("\nGPU ") + q.startswith("GPU ") == 2


@pytest.mark.parametrize("body", [
    "<fabric>" + "<a/>" * (read.MAX_TEXT_LINES + 1) + "</fabric>",
    "<pci>" + "<pci_bus_id>x</pci_bus_id>" * (read.MAX_TEXT_LINES + 1) + "</pci>",
    "</gpu><gpu id='x'>" * (read.MAX_TEXT_LINES + 1),
], ids=["fabric", "pci", "gpus"])
def test_q_x_lines_it_stands_for_count_against_the_line_bound(body):
    """Each element under <fabric> became a line of -q text: 8 MB of them gave 2 million
    lines (20 s, 557 MB), past the 100,000 lines any text may have."""
    with finishes_within(10):
        with pytest.raises(NvtopoError, match=f"more than {nvml_xml.MAX_LINES:,} lines"):
            nvml_xml.to_q_text(_q_x(body), "q.xml")
    assert nvml_xml.MAX_LINES == read.MAX_TEXT_LINES


def test_q_x_just_inside_the_line_bound_is_read():
    body = "<fabric>" + "<a>1</a>" * (nvml_xml.MAX_LINES - 10) + "</fabric>"
    q, _ = nvml_xml.to_q_text(_q_x(body), "q.xml")
    assert q.count("\n") == nvml_xml.MAX_LINES - 10 + 3


@st.composite
def q_x_documents(draw):
    """``-q -x`` built from its grammar with DTD parts, repeated blocks and damage."""
    parts = ["<pci>", "</pci>", "<fabric>", "</fabric>", "<state>Completed</state>",
             "<cliqueId>4</cliqueId>", "<pci_bus_id>00000000:18:00.0</pci_bus_id>",
             "<a/>", "<a x='1'/>", "</gpu><gpu id='00000000:2A:00.0'>", "&amp;", "<", "&x;",
             "<![CDATA[x]]>", "<!-- c -->", "<?pi x?>"]
    body = "".join(draw(st.lists(st.sampled_from(parts), max_size=30)))
    body *= draw(st.sampled_from([1, 2, 100]))
    doctype = draw(st.sampled_from([
        "", '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n',
        '<!DOCTYPE nvidia_smi_log [<!ATTLIST a x CDATA "v">]>\n',
        '<!DOCTYPE nvidia_smi_log [<!ENTITY x "y">]>\n',
        '<!DOCTYPE nvidia_smi_log [<!ELEMENT a EMPTY>]>\n',
        '<!DOCTYPE nvidia_smi_log [<!NOTATION n SYSTEM "x">]>\n',
        '<!DOCTYPE nvidia_smi_log PUBLIC "-//x//y" "http://127.0.0.1:9/x.dtd">\n']))
    text = _q_x(body, doctype)
    if draw(st.booleans()):
        text = text[:draw(st.integers(0, len(text)))]
    return text, doctype


@settings(max_examples=200, **COST_FUZZ)
@given(q_x_documents())
def test_fuzz_q_x_is_read_or_refused_in_one_line(doc):
    text, doctype = doc
    with finishes_within(10):
        try:
            q, _ = nvml_xml.to_q_text(text, "q.xml")
        except NvtopoError as exc:
            assert str(exc).startswith("q.xml: ") and "\n" not in str(exc)
            return
    assert "[" not in doctype  # a document with an internal DTD is never read
    assert q.count("\n") <= nvml_xml.MAX_LINES + 1


@st.composite
def gzip_streams(draw):
    pieces = draw(st.lists(st.sampled_from([b"", b"{}", b"x" * 1000, b"\n", os.urandom(64)]),
                           min_size=1, max_size=12))
    data = b"".join(gzip.compress(p, mtime=0) for p in pieces)
    return data + b"\0" * draw(st.sampled_from([0, 0, 1, 10])), b"".join(pieces)


@settings(max_examples=200, **COST_FUZZ)
@given(gzip_streams())
def test_fuzz_gzip_members_read_as_gunzip_reads_them(stream):
    data, plain = stream
    assert read.gunzip(data, "w") == plain
    for cut in (len(data) // 2, len(data) - 1):
        if data[cut:].strip(b"\0"):  # a cut inside a member: one line, never a hang
            try:
                read.gunzip(data[:cut], "w")
            except NvtopoError as exc:
                assert "\n" not in str(exc)


_NUMBERS = [("gpus.count", 10 ** 30), ("gpus.count", 1025), ("gpus.pcie.gen", 10 ** 6),
            ("gpus.pcie.width", 64), ("nvlink.links_per_gpu", 10 ** 9),
            ("nvlink.nvswitch_count", 10 ** 9), ("nvlink.pair_count", 65),
            ("nics.compute.count", 10 ** 12), ("nics.compute.rate_gbps", 1e300),
            ("nics.compute.rate_gbps", -400),
            ("nics.placement.gpus_per_compute_nic", 10 ** 9), ("numa.nodes_with_gpus", 10 ** 9),
            ("c2c.links_per_gpu", 10 ** 9), ("storage.os_drives", 10 ** 9),
            ("storage.data_drives", 10 ** 9), ("storage.data_drives", "8"),
            ("storage.gds.drives_per_switch", 10 ** 9), ("selection.priority", 10 ** 30),
            ("nvlink.error_thresholds.replay", 2 ** 64),
            ("nics.error_thresholds.symbol_error", 2 ** 64)]


def _layout_with(path: str, value) -> dict:
    doc = json.loads((ROOT / "nvtopo" / "layouts" / "dgx-h100.json").read_text())
    doc["name"] = "mine"
    node = doc
    parts = path.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return doc


@pytest.mark.parametrize("path,value", _NUMBERS, ids=[f"{p}={v}"[:40] for p, v in _NUMBERS])
def test_layout_numbers_past_what_hardware_has_are_refused(path, value):
    from nvtopo import layouts

    with finishes_within(10):
        with pytest.raises(NvtopoError, match=re.escape(f"$.{path}: ")) as exc:
            layouts.parse(json.dumps(_layout_with(path, value)), where="mine.json")
    assert str(exc.value).startswith("mine.json: bad layout: ") and len(str(exc.value)) < 200


@pytest.mark.parametrize("key,value", [
    ("nvlink.pairs", {"0-1": 10 ** 30}), ("nvlink.pairs", {"0-1500": 1}),
    ("numa.gpu_numa", {"0": 10 ** 30}), ("numa.gpu_numa", {"999999": 0}),
    ("nics.placement.gpu_nic", {"999999": "mlx5_0"})])
def test_layout_maps_past_what_hardware_has_are_refused(key, value):
    from nvtopo import layouts

    doc = _layout_with(key, value)
    doc["gpus"].pop("count")  # no count to hold the indexes to: the hardware bound does
    with pytest.raises(NvtopoError, match=re.escape(f"$.{key}")):
        layouts.parse(json.dumps(doc), where="mine.json")


def test_every_bundled_layout_is_inside_the_hardware_bounds():
    from nvtopo import layouts

    for name in layouts.names():
        text = (ROOT / "nvtopo" / "layouts" / f"{name}.json").read_text()
        assert layouts.parse(text, where=name).name == name


def test_simulate_of_a_layout_with_a_huge_gpu_count_is_one_line(tmp_path):
    """`gpus.count` 10^30: simulate (and check) built GPUs until memory ran out."""
    import subprocess
    import sys

    path = tmp_path / "big.json"
    path.write_text(json.dumps(_layout_with("gpus.count", 10 ** 30)))
    for args in (["simulate", "--layout-file", str(path)],
                 ["check", "--example", "dgx-h100", "--layout-file", str(path)]):
        r = subprocess.run([sys.executable, "-m", "nvtopo", *args], capture_output=True,
                           text=True, timeout=60, cwd=str(ROOT))
        assert r.returncode == 2, (args, r.stderr[-500:])
        assert r.stderr.count("\n") == 1 and str(path) in r.stderr and "gpus.count" in r.stderr


# --- 4. fuzzing ------------------------------------------------------------------------------

FUZZ = dict(deadline=10_000,  # a hang detector: linear parsers take ~1 s on the largest draws
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                   HealthCheck.filter_too_much])

_ODD = ["²", "٣", "３", "\x1b", "\x1b[0m", "[1;32m", "\x00", "\x7f", "\x85", "\u2028", "\ufeff",
        "\ud800", "\udfff", "\u202e", "\t", "\r", " ", "\u00a0", "9" * 50]
_LABELS = ["GPU0", "GPU1", "GPU2", "GPU10", "NIC0", "NIC1", "mlx5_0", "mlx5_bond_1", "GPU٣",
           "NIC²", "GPU" + "1" * 30, "x" * 40, "GPU0GPU1", "GPU1NIC0", "eth0", "GPU"]
_CELLS = ["X", " X ", "NV4", "NV18", "NV٣", "NV" + "9" * 20, "PIX", "PXB", "PHB", "NODE", "SYS",
          "SOC", "OK", "CNS", "NS", "DR", "U", "NV18NV18", "XNV4", "NODENODE", "NV", "N/A"]
_AFF = ["0-15", "0-47,96-143", "N/A", "0", "1", "", "١٦-31", "0-" + "9" * 30, "-", ","]


@st.composite
def topo_texts(draw):
    """Text built from the topo grammar, then damaged."""
    labels = draw(st.lists(st.sampled_from(_LABELS), min_size=1, max_size=8))
    sep = draw(st.sampled_from(["\t", " ", "  ", "", " \t"]))
    glue = draw(st.booleans())
    aff = draw(st.sampled_from(["", "CPU Affinity", "CPU Affinity\tNUMA Affinity",
                                "CPU AffinityNUMA AffinityGPU NUMA ID", "Foo Bar"]))
    header = draw(st.sampled_from(["", "\t", "   "])) + ("" if glue else sep).join(labels)
    lines = [header + sep + aff]
    for lab in labels:
        cells = draw(st.lists(st.sampled_from(_CELLS), max_size=len(labels) + 2))
        extra = draw(st.lists(st.sampled_from(_AFF), max_size=4))
        lines.append(sep.join([lab] + cells + extra))
    lines += draw(st.lists(st.sampled_from(
        ["Legend:", "  X    = Self", "  NV#  = bonded", "      wrapped line", "NIC Legend:",
         "  NIC0: mlx5_0", "NIC٣: x", "$ nvidia-smi topo -p2p r", "# comment", ""]), max_size=6))
    if draw(st.booleans()):  # a long glued header first, maybe ending in what does not fit
        glued = draw(st.lists(st.sampled_from(_LABELS[:8]), min_size=1, max_size=4))
        lines.insert(0, "".join(glued) * draw(st.sampled_from([1, 8, 30, 200]))
                     + draw(st.sampled_from(["", "x", "!", " X", "\tCPU Affinity"])))
    text = "\n".join(lines)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(_ODD)) + text[at:]
    if draw(st.booleans()):  # a long run of one token, then one that does not fit
        long_tok = draw(st.sampled_from(["GPU0", "NV4", "X", "\t", " ", "GPU0GPU1", "a_", "9",
                                         "GPU0 ", "NV4\t", "mlx5_0"]))
        text += ("\n" + draw(st.sampled_from(["", "GPU0 ", "GPU0\t"]))
                 + long_tok * draw(st.sampled_from([1, 2, 30, 300, 5000]))
                 + draw(st.sampled_from(["", "x", "!"])))
    return text


def parse_topo_or_error(text: str) -> None:
    with finishes_within(10):
        looks = topo_text.looks_like_topo(text)
        try:
            topo = topo_text.parse(text)
        except TopoParseError as exc:
            # a matrix found, then refused: two matrices that are not one node's
            assert not looks or "paste each in a file of its own" in str(exc)
            return
    assert looks
    json.dumps(topo.to_dict())
    assert len(topo.notes) <= 40 * (MAX_NOTES + 1)


@settings(max_examples=300, **FUZZ)
@given(topo_texts())
def test_fuzz_topo_grammar(text):
    parse_topo_or_error(text)


_NV_LINES = ["GPU 0: NVIDIA H100 (UUID: GPU-1)", "GPU 1: A (b) (UUID: GPU-2)", "GPU ٣: x (UUID: y)",
             "GPU 99999: x (UUID: y)", "GPU 00000000:18:00.0", "GPU 0000:1B:00.0",
             "\t Link 0: 26.562 GB/s", "\t Link 1: <inactive>", "\t Link ٣: 25 GB/s",
             "\t Link 2: ²² GB/s", "\t Link 0: -5 GB/s", "\t Link 0: 1e999 GB/s",
             "\t Link 0: Remote Device 00000000:05:00.0: Link 3",
             "\t Link 0: Replay Errors: 0", "\t Link 0: Data Tx: 1 KiB",
             "\t Link 0, P2P is supported: true", "\t Link 0, NVLINK link is supported: FALSE",
             "Unable to retrieve NVLink information as all links are inActive",
             "    Fabric", "        State  : Completed", "        CliqueId : ²",
             "        CliqueId : 4294967296", "        ClusterUUID : 7f0c6a1e",
             "    GPU UUID : GPU-1", "    PCI", "        Bus Id : 00000000:18:00.0",
             "        GPU Link Info", "            PCIe Generation",
             "                Current : ٣", "                Max : 5", "...", "[...]"]


@st.composite
def nvml_texts(draw):
    lines = draw(st.lists(st.sampled_from(_NV_LINES), max_size=25))
    text = "\n".join(lines)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(_ODD + [":", " ", "(UUID: ", ")"])) + text[at:]
    if draw(st.booleans()):
        text += "\n" + draw(st.sampled_from(["Link 0: ", " ", "a ", ": tru", " (UUID: ", "9",
                                             "\n", "GPU 00000000:18:00.0\n"])) \
            * draw(st.sampled_from([1, 2, 30, 300, 5000, 50000]))
    return text


def parse_nvml_or_error(text: str) -> None:
    with finishes_within(10):
        nvml_text.looks_like(text)
        parsed = nvml_text.parse(text)
        topo = nvml_text.derive_text(text)
    assert set(parsed) == {"gpus", "sections", "notes"}
    json.dumps(topo.to_dict())


@settings(max_examples=300, **FUZZ)
@given(nvml_texts())
def test_fuzz_nvml_text_grammar(text):
    parse_nvml_or_error(text)


@settings(max_examples=300, **FUZZ)
@given(st.text(max_size=300))
def test_fuzz_any_text_both_parsers(text):
    parse_topo_or_error(text)
    parse_nvml_or_error(text)


def _real_files() -> List[Path]:
    dirs = [TOPO_CORPUS, ROOT / "fixtures" / "nvml-text", SHARED / "topo", SHARED / "nvlink"]
    return sorted(p for d in dirs if d.is_dir() for p in d.glob("*.txt"))


REAL = {str(p): p.read_text(encoding="utf-8") for p in _real_files()}


def test_the_real_files_are_there():
    assert len([p for p in REAL if "/fixtures/" in p]) >= 40
    if SHARED.is_dir():  # the shared corpus is on the development machines only
        assert len([p for p in REAL if p.startswith(str(SHARED))]) >= 50


@st.composite
def mutated_real(draw):
    text = REAL[draw(st.sampled_from(sorted(REAL)))]
    lines = text.split("\n")
    for _ in range(draw(st.integers(0, 3))):  # lines duplicated, some many times
        i = draw(st.integers(0, len(lines) - 1))
        lines[i:i] = [lines[i]] * draw(st.sampled_from([1, 2, 50, 2000]))
    text = "\n".join(lines)
    for _ in range(draw(st.integers(0, 6))):  # characters replaced
        if text:
            at = draw(st.integers(0, len(text) - 1))
            text = text[:at] + draw(st.sampled_from(["²", "\x1b", "\ud800", "٣", "\t", "X", ""])) \
                + text[at + 1:]
    if draw(st.booleans()):  # truncated
        text = text[: draw(st.integers(0, len(text)))]
    return text


@settings(max_examples=300, **FUZZ)
@given(mutated_real())
def test_fuzz_mutated_real_files(text):
    parse_topo_or_error(text)
    parse_nvml_or_error(text)


@pytest.mark.parametrize("path", sorted(REAL))
def test_real_files_parse_in_both_parsers(path):
    parse_topo_or_error(REAL[path])
    parse_nvml_or_error(REAL[path])


def test_load_text_gives_nvtopo_errors_only():
    from nvtopo.snapshot import load_text

    for text in [hostile("topo-glued-header-30-labels-142-bytes.txt"), "GPU0 X\n" * 3,
                 hostile("nvlink-5000-digit-numbers.txt"), hostile("topo-unicode-digit-cells.txt"),
                 hostile("q-fabric-cliqueid-superscript.txt")]:
        with finishes_within(10):
            try:
                load_text(text, "<paste>")
            except NvtopoError as exc:
                assert "<paste>" in str(exc)
