"""The command line, end to end: errors, live probing, the JSON contract, rendering, help.

Most tests go through ``typer.testing.CliRunner`` (stdout and stderr kept
apart); a few run the installed ``nvtopo`` script and ``python -m nvtopo``
in a real subprocess to prove that no traceback escapes.

Live probing is exercised with a fake ``nvidia-smi``: a small shell script
put first on ``PATH``.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time
import traceback
from io import StringIO
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import pytest
from rich.cells import cell_len
from rich.console import Console
from cli_runner import make_runner

import nvtopo
from nvtopo import snapshot
from nvtopo.cli import app
from nvtopo.render import matrix as render_matrix

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
CORPUS_DIRS = (FIXTURES / "topo-corpus", Path("/work/shared/corpus/topo"))

H100 = "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"
A100_TABS = "01_hgx-a100-8gpu-nv12-10nic-tabs.txt"
GH200 = "07_gh200-4gpu-nv6-numa-affinity-list-gpu-numa-id.txt"
GB200 = "53_gb200-4gpu-nv18-8nic-numa-lists-gpu-numa-id-no-final-newline.txt"
P2P = "15_p2p-rw-2x-rtx5090-gns-dr-legend-tabs.txt"

DGX_SUMMARY = "8 GPUs · 12 NICs · 28/28 GPU pairs NVLink-connected (NV18) · 2 NUMA nodes (0, 1)"

#: Absolute paths of the tools the fake nvidia-smi scripts use: PATH is replaced in those tests.
CAT = shutil.which("cat") or "/bin/cat"
SLEEP = shutil.which("sleep") or "/bin/sleep"
SYSTEM_PATH = os.pathsep.join(p for p in ("/usr/bin", "/bin") if os.path.isdir(p))


# --- helpers ---------------------------------------------------------------------


def corpus(name: str) -> Path:
    for d in CORPUS_DIRS:
        p = d / name
        if p.is_file():
            return p
    pytest.fail(f"corpus file {name} not found in " + ", ".join(map(str, CORPUS_DIRS)))


def invoke(args: Sequence[str], input: Optional[str | bytes] = None,
           env: Optional[Dict[str, str]] = None):
    return make_runner().invoke(app, list(args), input=input, env=env, catch_exceptions=True)


def assert_no_traceback(result) -> None:
    assert "Traceback" not in result.stdout, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), (
            f"unexpected exception {result.exception!r}\n"
            + "".join(traceback.format_exception(*result.exc_info)))


def assert_one_line_error(result, *needles: str, where: Optional[str] = None) -> str:
    """Exit 2, exactly one stderr line ``nvtopo: error: <where>: <problem>``, no traceback.

    ``needles`` are regular expressions searched case-insensitively in the line.
    """
    assert_no_traceback(result)
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one stderr line, got {len(lines)}:\n{result.stderr}"
    line = lines[0]
    assert line.startswith("nvtopo: error: "), line
    if where is not None:
        assert f"nvtopo: error: {where}: " in line, line
    for n in needles:
        assert re.search(n, line, re.I), f"{n!r} not in {line!r}"
    assert result.stdout == "", result.stdout
    return line


def show_json(*args: str, input: Optional[str] = None) -> dict:
    result = invoke(["show", *args, "--format", "json"], input=input)
    assert_no_traceback(result)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def valid_snapshot_text(tmp_path: Path) -> str:
    out = tmp_path / "valid.json"
    result = invoke(["snapshot", "--from", str(corpus(H100)), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out.read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    """No forced colours from the environment running the tests."""
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR_FORCE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COLUMNS", "120")


# --- 1. errors: exit 2, one line naming the file and the problem ------------------


def test_empty_file(tmp_path):
    f = tmp_path / "empty.txt"
    f.write_bytes(b"")
    assert_one_line_error(invoke(["show", "--from", str(f)]), "empty", where=str(f))


def test_whitespace_only_file(tmp_path):
    f = tmp_path / "blank.txt"
    f.write_bytes(b"  \n\t\r\n   \n")
    assert_one_line_error(invoke(["show", "--from", str(f)]), "empty", where=str(f))


def test_binary_file_with_nul_bytes(tmp_path):
    f = tmp_path / "image.png"
    f.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06"
                  b"\x00\x00\x00\x1f\xf3\xffa")
    assert_one_line_error(invoke(["show", "--from", str(f)]), "binary", where=str(f))


def test_random_non_utf8_bytes(tmp_path):
    rng = random.Random(1234)
    data = bytes(rng.randrange(0x80, 0x100) for _ in range(2000))  # no NUL, not UTF-8
    assert b"\x00" not in data
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    f = tmp_path / "noise.bin"
    f.write_bytes(data)
    assert_one_line_error(invoke(["show", "--from", str(f)]), r"binary|utf-8|not .*text",
                          where=str(f))


def test_text_that_is_not_topo_output(tmp_path):
    f = FIXTURES / "cli" / "ibdev2netdev_h100_column_t_annotated.txt"
    line = assert_one_line_error(invoke(["show", "--from", str(f)]), where=str(f))
    assert re.search(r"not an? .*(snapshot|topo)", line, re.I), line
    assert re.search(r"no .*matrix", line, re.I), line


def test_truncated_snapshot(tmp_path):
    text = valid_snapshot_text(tmp_path)
    f = tmp_path / "truncated.json"
    f.write_text(text[: len(text) // 2], encoding="utf-8")
    assert_one_line_error(invoke(["show", "--from", str(f)]), r"truncated|corrupt",
                          r"snapshot", where=str(f))


def test_corrupt_snapshot_probes_is_a_list(tmp_path):
    doc = json.loads(valid_snapshot_text(tmp_path))
    doc["probes"] = [doc["probes"]["topo-text"]]
    f = tmp_path / "probes-list.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    assert_one_line_error(invoke(["show", "--from", str(f)]), "corrupt", "probes",
                          where=str(f))


def test_corrupt_snapshot_stdout_is_a_number(tmp_path):
    doc = json.loads(valid_snapshot_text(tmp_path))
    doc["probes"]["topo-text"]["stdout"] = 42
    f = tmp_path / "stdout-number.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    assert_one_line_error(invoke(["show", "--from", str(f)]), "corrupt", "stdout",
                          where=str(f))


def test_json_that_is_not_a_snapshot(tmp_path):
    f = tmp_path / "other.json"
    f.write_text('{"a": 1}\n', encoding="utf-8")
    assert_one_line_error(invoke(["show", "--from", str(f)]), r"not an? (nvtopo )?snapshot",
                          where=str(f))


def test_snapshot_from_the_future(tmp_path):
    doc = json.loads(valid_snapshot_text(tmp_path))
    doc["schema_version"] = 999
    f = tmp_path / "future.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    assert_one_line_error(invoke(["show", "--from", str(f)]), "999", "newer", "upgrade",
                          where=str(f))


def test_directory(tmp_path):
    d = tmp_path / "adir"
    d.mkdir()
    assert_one_line_error(invoke(["show", "--from", str(d)]), "directory", where=str(d))


def test_missing_file(tmp_path):
    f = tmp_path / "nosuch.txt"
    assert_one_line_error(invoke(["show", "--from", str(f)]),
                          r"no such file|not found|does not exist", where=str(f))


def test_unknown_example():
    line = assert_one_line_error(invoke(["show", "--example", "nosuch"]), "nosuch")
    assert "dgx-h100" in line  # says what there is


def test_from_and_example_together(tmp_path):
    assert_one_line_error(
        invoke(["show", "--from", str(corpus(H100)), "--example", "dgx-h100"]),
        "--from", "--example")


def test_stdin_empty():
    assert_one_line_error(invoke(["show", "--from", "-"], input=""), "stdin", "empty")


def test_snapshot_from_text_that_is_not_topo_output():
    f = FIXTURES / "cli" / "ibdev2netdev_h100_column_t_annotated.txt"
    assert_one_line_error(invoke(["snapshot", "--from", str(f)]), r"topo", where=str(f))


def test_snapshot_from_empty_stdin():
    assert_one_line_error(invoke(["snapshot", "--from", "-"], input=b""), "stdin", "empty")


def test_snapshot_without_evidence_has_nothing_to_show(tmp_path):
    """A well-formed snapshot whose probe recorded no output: exit 2, says why."""
    doc = json.loads(valid_snapshot_text(tmp_path))
    ev = doc["probes"]["topo-text"]
    ev.update(status="missing", stdout=None,
              error="nvidia-smi not found on PATH (no NVIDIA driver installed?)")
    f = tmp_path / "nogpu.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    assert_one_line_error(invoke(["show", "--from", str(f)]), "nothing to show",
                          "nvidia-smi not found", where=str(f))


def test_utf16_paste_with_bom_is_read(tmp_path):
    """PowerShell's `>` writes UTF-16 with a BOM; it is text, not binary."""
    f = tmp_path / "ps.txt"
    f.write_bytes(corpus(H100).read_text(encoding="utf-8").encode("utf-16"))
    got = show_json("--from", str(f))
    assert len(got["gpus"]) == 8 and len(got["nics"]) == 8


# --- 2. live probing with a fake nvidia-smi ------------------------------------------


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    """Install ``nvidia-smi`` (a /bin/sh script with ``body``) first on PATH."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()

    def install(body: str) -> Path:
        script = bindir / "nvidia-smi"
        script.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
        script.chmod(0o755)
        monkeypatch.setenv("PATH", str(bindir) + os.pathsep + SYSTEM_PATH)
        return script

    return install


@pytest.fixture
def no_smi(tmp_path, monkeypatch):
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("nvidia-smi") is None
    return empty


def test_live_without_nvidia_smi_says_how_to_audit_a_file(no_smi):
    line = assert_one_line_error(invoke(["show"]), "nvidia-smi")
    assert "--from" in line, line


def test_live_snapshot_without_nvidia_smi_records_missing(no_smi, tmp_path):
    out = tmp_path / "nogpu.json"
    result = invoke(["snapshot", "-o", str(out)])
    assert_no_traceback(result)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    ev = doc["probes"]["topo-text"]
    assert ev["status"] == "missing"
    assert "nvidia-smi" in ev["error"]
    assert ev["stdout"] is None and ev["exit_status"] is None
    assert doc["kind"] == "nvtopo-snapshot"
    assert set(doc["host"]) >= {"hostname", "kernel", "time"}
    # and to standard output as well
    result = invoke(["snapshot"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["probes"]["topo-text"]["status"] == "missing"
    # show on that snapshot: nothing to show, one line, exit 2
    assert_one_line_error(invoke(["show", "--from", str(out)]), "nothing to show",
                          where=str(out))


def test_live_with_fake_nvidia_smi(fake_smi, tmp_path):
    src = corpus(H100)
    fake_smi(f'[ "$1 $2" = "topo -m" ] || exit 64\nexec {shlex.quote(CAT)} {shlex.quote(str(src))}')

    result = invoke(["show"])
    assert_no_traceback(result)
    assert result.exit_code == 0, result.stderr
    assert "8 GPUs · 8 NICs · 28/28 GPU pairs NVLink-connected (NV18) · 2 NUMA nodes (0, 1)" \
        in result.stdout

    out = tmp_path / "f.json"
    result = invoke(["snapshot", "-o", str(out)])
    assert_no_traceback(result)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    ev = doc["probes"]["topo-text"]
    assert ev["command"] == "nvidia-smi"
    assert ev["args"] == ["topo", "-m"]
    assert ev["exit_status"] == 0
    assert ev["status"] == "ok"
    assert ev["stdout"] == src.read_text(encoding="utf-8")
    assert ev["stderr"] == ""
    assert isinstance(ev["duration_s"], (int, float)) and 0 <= ev["duration_s"] < 30

    from_snapshot = show_json("--from", str(out))
    from_text = show_json("--from", str(src))
    assert from_snapshot["origin"]["kind"] == "snapshot"
    assert from_snapshot["host"].get("hostname") == doc["host"]["hostname"]
    # The live snapshot also holds the other probes' evidence (no NVML, this machine's
    # sysfs): the topo-text facts must be the same as reading the text itself.
    for key in ("gpus", "nics", "matrix", "p2p", "nvlinks"):
        if key == "gpus":
            for d in (from_snapshot, from_text):
                for g in d["gpus"]:
                    g["extra"].pop("sysfs", None)
                    g["sources"] = {k: v for k, v in g["sources"].items() if v == "topo-text"}
        if key in ("gpus", "nics"):
            strip = [{k: v for k, v in x.items() if k in ("index", "label", "name",
                                                          "cpu_affinity", "numa_affinity",
                                                          "gpu_numa_id")}
                     for x in from_snapshot[key]]
            want = [{k: v for k, v in x.items() if k in ("index", "label", "name",
                                                         "cpu_affinity", "numa_affinity",
                                                         "gpu_numa_id")}
                    for x in from_text[key]]
            assert strip == want, key
        else:
            assert from_snapshot[key] == from_text[key], key
    topo_notes = [n for n in from_snapshot["notes"] if n["source"] == "topo-text"]
    assert topo_notes == from_text["notes"]


def test_live_timeout(fake_smi, tmp_path):
    fake_smi(f"{shlex.quote(SLEEP)} 300")  # not exec: the grandchild keeps the pipes open
    start = time.monotonic()
    result = invoke(["show", "--timeout", "0.5"])
    took = time.monotonic() - start
    line = assert_one_line_error(result, r"did not finish|timed? ?out|timeout")
    assert "0.5" in line, line
    assert took < 30, f"show --timeout 0.5 took {took:.1f} s"  # a hang detector

    out = tmp_path / "hung.json"
    start = time.monotonic()
    result = invoke(["snapshot", "--timeout", "0.5", "-o", str(out)])
    assert time.monotonic() - start < 30
    assert result.exit_code == 0, result.stderr
    ev = json.loads(out.read_text(encoding="utf-8"))["probes"]["topo-text"]
    assert ev["status"] == "timeout"
    assert ev["exit_status"] is None


def test_live_nvidia_smi_fails(fake_smi, tmp_path):
    fake_smi('echo "NVIDIA-SMI has failed because it could not communicate with the '
             'NVIDIA driver." >&2\nexit 9')
    line = assert_one_line_error(invoke(["show"]), r"\b9\b", "could not communicate")
    assert re.search(r"status 9|exit(ed)?\D*9", line), line

    out = tmp_path / "failed.json"
    result = invoke(["snapshot", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    ev = json.loads(out.read_text(encoding="utf-8"))["probes"]["topo-text"]
    assert ev["status"] == "failed"
    assert ev["exit_status"] == 9
    assert "could not communicate" in ev["stderr"]


# --- 4. the JSON contract of show --format json ----------------------------------------


@pytest.mark.parametrize("name, gpus, nics", [
    (H100, 8, 8),
    (A100_TABS, 8, 10),
    (GH200, 4, 0),
    (GB200, 4, 8),
])
def test_json_contract(name, gpus, nics):
    d = show_json("--from", str(corpus(name)))
    assert {"gpus", "nics", "matrix"} <= set(d)
    assert len(d["gpus"]) == gpus and len(d["nics"]) == nics
    for i, g in enumerate(d["gpus"]):
        assert {"index", "cpu_affinity", "numa_affinity", "gpu_numa_id"} <= set(g)
        assert g["index"] == i
        assert g["gpu_numa_id"] is None or isinstance(g["gpu_numa_id"], int)
    for n in d["nics"]:
        assert {"label", "name"} <= set(n)
        assert isinstance(n["label"], str) and isinstance(n["name"], str)
    m = d["matrix"]
    assert {"devices", "cells"} <= set(m)
    assert len(m["devices"]) == gpus + nics
    assert len(m["cells"]) == len(m["devices"])
    assert all(len(row) == len(m["devices"]) for row in m["cells"])
    assert all(m["cells"][i][i] == "X" for i in range(len(m["devices"])))
    assert d["p2p"] is None


def test_json_values_h100():
    d = show_json("--from", str(corpus(H100)))
    g0, g7 = d["gpus"][0], d["gpus"][7]
    assert (g0["cpu_affinity"], g0["numa_affinity"], g0["gpu_numa_id"]) == ("0-47,96-143", "0", None)
    assert (g7["cpu_affinity"], g7["numa_affinity"]) == ("48-95,144-191", "1")
    assert [(n["label"], n["name"]) for n in d["nics"]][:2] == [("NIC0", "mlx5_0"),
                                                               ("NIC1", "mlx5_1")]
    m = d["matrix"]
    assert m["devices"][:2] == ["GPU0", "GPU1"]
    assert m["cells"][0][1] == "NV18"
    assert m["cells"][0][m["devices"].index("NIC0")] == "PIX"


def test_json_values_gh200_gpu_numa_id():
    d = show_json("--from", str(corpus(GH200)))
    assert [g["gpu_numa_id"] for g in d["gpus"]] == [4, 12, 20, 28]


def test_json_p2p_file():
    d = show_json("--from", str(corpus(P2P)))
    assert d["matrix"] is None
    p = d["p2p"]
    assert p is not None
    assert p["devices"] == ["GPU0", "GPU1"]
    assert p["cells"] == [["X", "GNS"], ["GNS", "X"]]
    assert [g["index"] for g in d["gpus"]] == [0, 1]


def test_from_stdin_reads_standard_input():
    text = corpus(H100).read_text(encoding="utf-8")
    from_stdin = show_json("--from", "-", input=text)
    from_file = show_json("--from", str(corpus(H100)))
    assert from_stdin["origin"].get("file") == "<stdin>"
    for d in (from_stdin, from_file):
        d.pop("origin")
    assert from_stdin == from_file


def test_from_stdin_snapshot():
    text = make_runner().invoke(app, ["snapshot", "--from", str(corpus(H100))]).stdout
    d = show_json("--from", "-", input=text)
    assert len(d["gpus"]) == 8


# --- 5. rendering -----------------------------------------------------------------------


_TITLE_RE = re.compile(r"^(Topology matrix|P2P status|GPU ↔ GPU|GPU ↔ NIC|NIC ↔ NIC)"
                       r"(?: \(([^\s…()]+)(?:…([^\s…()]+))?\))?$")


def _header_lines(lines: List[str], devices: Sequence[str]) -> List[int]:
    """Indexes of matrix column-header lines: indented, and nothing but device labels."""
    known = set(devices)
    return [i for i, ln in enumerate(lines)
            if ln[:1] == " " and ln.split() and all(t in known for t in ln.split())]


def rendered_cells(out: str, devices: Sequence[str]) -> Dict[Tuple[str, str], str]:
    """Read the matrix tables back from rendered text: ``(row, column) -> token``."""
    lines = [ln.rstrip() for ln in out.splitlines()]
    got: Dict[Tuple[str, str], str] = {}
    for h in _header_lines(lines, devices):
        cols = lines[h].split()
        j = h + 1
        while j < len(lines) and lines[j].strip():
            toks = lines[j].split()
            row, cells = toks[0], toks[1:]
            assert row in devices, f"not a device row under {cols}: {lines[j]!r}"
            assert len(cells) == len(cols), f"row {row}: {cells} under {cols}"
            for c, t in zip(cols, cells):
                assert got.get((row, c), t) == t, f"{row}/{c} printed twice differently"
                got[(row, c)] = t
            j += 1
    return got


def assert_titles_whole(out: str, devices: Sequence[str]) -> None:
    """Right above each matrix header: its block title, whole on one line, naming its columns."""
    lines = [ln.rstrip() for ln in out.splitlines()]
    for h in _header_lines(lines, devices):
        cols = lines[h].split()
        m = _TITLE_RE.match(lines[h - 1])
        assert m, (f"title of the block with columns {cols[0]}…{cols[-1]} is broken: "
                   + repr("\n".join(lines[max(0, h - 3):h + 1])))
        first, last = m.group(2), m.group(3)
        if first is not None:
            assert first == cols[0] and (last or first) == cols[-1], (lines[h - 1], cols)


def text_matrix(text: str) -> Tuple[List[str], Dict[Tuple[str, str], str]]:
    """The matrix of a plain, well-formed topo text (independent of nvtopo's parser)."""
    lines = text.splitlines()
    header = next(ln for ln in lines if ln.split()[:1] == ["GPU0"])
    devices = re.split(r"\s+(?=CPU Affinity)", header.strip())[0].split()
    cells = {}
    for ln in lines:
        toks = ln.split()
        if toks and toks[0] in devices and len(toks) > len(devices):
            for c, t in zip(devices, toks[1:1 + len(devices)]):
                cells[(toks[0], c)] = t
    return devices, cells


def render_text(topo, width: int) -> str:
    buf = StringIO()
    console = Console(width=width, file=buf, color_system=None, highlight=False,
                      force_terminal=False, legacy_windows=False)
    console.print(render_matrix.render(topo, width))
    return buf.getvalue()


def has_label(out: str, label: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(label)}(?![\w])", out) is not None


def _is_gpu(label: str) -> bool:
    return re.fullmatch(r"GPU\d+", label) is not None


def assert_matrix_rendered(out: str, devices: List[str], cells: Dict[Tuple[str, str], str]):
    got = rendered_cells(out, devices)
    full = set(cells)
    # split into blocks: NIC rows x GPU columns mirror GPU x NIC and are left out
    blocks = {k for k in full if not (not _is_gpu(k[0]) and _is_gpu(k[1]))}
    assert set(got) in (full, blocks), sorted(full - set(got))[:10]
    assert {k: cells[k] for k in got} == got


@pytest.mark.parametrize("width", [80, 200])
def test_render_example_fits(width):
    topo = snapshot.open_input(snapshot.Input(example="dgx-h100")).model
    out = render_text(topo, width)
    lines = out.splitlines()
    too_wide = [ln for ln in lines if cell_len(ln) > width]
    assert not too_wide, f"{len(too_wide)} lines wider than {width}:\n" + "\n".join(too_wide)
    for label in [f"GPU{i}" for i in range(8)] + [f"NIC{i}" for i in range(12)] \
            + [f"mlx5_{i}" for i in range(12)]:
        assert has_label(out, label), label
    assert DGX_SUMMARY in [ln.strip() for ln in lines]
    from nvtopo import examples
    devices, cells = text_matrix(examples.read("dgx-h100"))
    assert len(devices) == 20
    assert_matrix_rendered(out, devices, cells)
    assert_titles_whole(out, devices)


@pytest.mark.parametrize("width", ["80", "200"])
def test_show_table_respects_columns(width):
    result = invoke(["show", "--example", "dgx-h100"], env={"COLUMNS": width})
    assert_no_traceback(result)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert "\x1b[" not in result.stdout  # not a terminal: no colour codes
    lines = result.stdout.splitlines()
    assert max(cell_len(ln) for ln in lines) <= int(width)
    assert DGX_SUMMARY in [ln.strip() for ln in lines]
    assert lines[0].startswith("nvtopo")


def synthetic_44() -> Tuple[str, List[str], Dict[Tuple[str, str], str]]:
    """8 GPUs and 36 NICs in nvidia-smi's TAB-separated ``topo -m`` format, with NIC Legend."""
    gpus = [f"GPU{i}" for i in range(8)]
    nics = [f"NIC{i}" for i in range(36)]
    devices = gpus + nics

    def socket(label: str) -> int:
        k = int(label[3:])
        return (k // 4) if _is_gpu(label) else ((k % 8) // 4)

    def home(label: str) -> int:  # the GPU a NIC hangs off
        return int(label[3:]) % 8

    def path(a: str, b: str) -> str:
        if a == b:
            return "X"
        if _is_gpu(a) and _is_gpu(b):
            return "NV18"
        if socket(a) != socket(b):
            return "SYS"
        if not _is_gpu(a) and not _is_gpu(b):
            return "PXB" if home(a) == home(b) else "NODE"
        nic = b if _is_gpu(a) else a
        gpu = a if _is_gpu(a) else b
        if home(nic) == int(gpu[3:]):
            return "PIX" if int(nic[3:]) < 16 else "PXB"
        return "PHB" if int(nic[3:]) >= 32 else "NODE"

    cells = {(a, b): path(a, b) for a in devices for b in devices}
    lines = ["\t" + "\t".join(devices) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for a in devices:
        row = [f" {cells[(a, b)]} " if a == b else cells[(a, b)] for b in devices]
        if _is_gpu(a):
            s = socket(a)
            row += ["0-55,112-167" if s == 0 else "56-111,168-223", str(s), "N/A"]
        else:
            row += ["", ""]
        lines.append(a + "\t" + "\t".join(row))
    lines += ["", "Legend:", "",
              "  X    = Self",
              "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA "
              "nodes (e.g., QPI/UPI)",
              "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host "
              "Bridges within a NUMA node",
              "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
              "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe "
              "Host Bridge)",
              "  PIX  = Connection traversing at most a single PCIe bridge",
              "  NV#  = Connection traversing a bonded set of # NVLinks",
              "", "NIC Legend:", ""]
    lines += [f"  NIC{i}: mlx5_{i}" for i in range(36)]
    return "\n".join(lines) + "\n", devices, cells


def test_render_44_devices_in_80_columns(tmp_path):
    text, devices, cells = synthetic_44()
    topo = snapshot.load_text(text, "synthetic-44")
    assert len(topo.gpus) == 8 and len(topo.nics) == 36
    out = render_text(topo, 80)
    too_wide = [ln for ln in out.splitlines() if cell_len(ln) > 80]
    assert not too_wide, "\n".join(too_wide)
    for label in devices + [f"mlx5_{i}" for i in range(36)]:
        assert has_label(out, label), label
    assert_matrix_rendered(out, devices, cells)
    assert "8 GPUs · 36 NICs · 28/28 GPU pairs NVLink-connected (NV18) · 2 NUMA nodes (0, 1)" \
        in [ln.strip() for ln in out.splitlines()]


    # and through the command, with the terminal width from COLUMNS
    f = tmp_path / "wide.txt"
    f.write_text(text, encoding="utf-8")
    result = invoke(["show", "--from", str(f)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    assert max(cell_len(ln) for ln in result.stdout.splitlines()) <= 80
    assert_matrix_rendered(result.stdout, devices, cells)


@pytest.mark.parametrize("width", [80, 100, 120])
def test_render_44_devices_block_titles_stay_whole(width):
    """Each block/chunk title sits on one line and names the columns below it.

    With 36 NICs at 80 columns the last NIC chunk holds one column (NIC35); its
    title "NIC ↔ NIC (NIC35…NIC35)" is wider than that one-column table, and
    Rich wraps it, splitting the label: "NIC ↔ NIC" / "(NIC35…NIC3" / "5)".
    """
    text, devices, _ = synthetic_44()
    out = render_text(snapshot.load_text(text, "synthetic-44"), width)
    assert_titles_whole(out, devices)


# --- 6. help and version --------------------------------------------------------------


def test_help_top_level():
    result = invoke(["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Examples" in out
    for word in ("show", "snapshot", "--from", "--version", "nvtopo show --example dgx-h100",
                 "snapshot -o"):
        assert word in out, word


def test_help_short_flag():
    result = invoke(["-h"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    assert "Examples" in result.stdout


def test_help_show():
    result = invoke(["show", "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Examples" in out
    for word in ("--from", "--example", "--format", "--timeout", "table", "json",
                 "nvtopo show --from -"):
        assert word in out, word


def test_help_snapshot():
    result = invoke(["snapshot", "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Examples" in out
    for word in ("--output", "-o", "--from", "--timeout", "nvtopo snapshot --from"):
        assert word in out, word


def _command_lines() -> List[List[str]]:
    """Every command and group subcommand, as the words that name it."""
    import typer

    from nvtopo.cli import COMMANDS, build

    group = typer.main.get_command(build())
    out: List[List[str]] = []
    for name in COMMANDS:
        cmd = group.commands[name]  # type: ignore[attr-defined]
        subs = getattr(cmd, "commands", None)
        out += [[name, sub] for sub in subs] if subs else [[name]]
    return out


@pytest.mark.parametrize("words", _command_lines(), ids=" ".join)
def test_a_command_built_alone_helps_and_fails_as_in_the_full_app(words):
    """The console script builds only the command its command line names
    (``nvtopo.cli.build(name)``): that command's help and usage errors are the full app's."""
    from nvtopo.cli import build

    alone = build(words[0])
    for args in (words + ["--help"], words + ["--no-such-option"], words + ["-x", "1"]):
        full = make_runner().invoke(app, args, env={"COLUMNS": "100"})
        mine = make_runner().invoke(alone, args, env={"COLUMNS": "100"})
        assert (mine.exit_code, mine.stdout, mine.stderr) == \
            (full.exit_code, full.stdout, full.stderr), args
    assert "Usage: nvtopo " + " ".join(words) in \
        make_runner().invoke(alone, words + ["--help"], env={"COLUMNS": "100"}).stdout


def test_only_a_command_named_first_is_built_alone(monkeypatch):
    from nvtopo.cli import COMMANDS, _command_named

    monkeypatch.delenv("_NVTOPO_COMPLETE", raising=False)
    assert _command_named(["nvtopo", "check", "--from", "x"]) == "check"
    assert _command_named(["nvtopo", "layouts", "show", "dgx-h100"]) == "layouts"
    assert _command_named(["nvtopo", "--version", "check"]) is None  # nvtopo's own option
    assert _command_named(["nvtopo", "chek"]) is None  # the full app suggests the name
    assert _command_named(["nvtopo"]) is None
    monkeypatch.setenv("_NVTOPO_COMPLETE", "complete_bash")  # completion offers every command
    assert _command_named(["nvtopo", "check"]) is None
    assert len(COMMANDS) == 15  # watch (issue 26), explain (issue 24), trend (issue 25)


def test_the_console_script_builds_only_the_command_named():
    """A fresh ``nvtopo checks`` imports no other command's module."""
    code = ("import sys\nfrom nvtopo.cli import run\nsys.argv = ['nvtopo', 'checks', "
            "'--format', 'json']\ntry:\n    run()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write(' '.join(m for m in sys.modules if m.startswith('nvtopo.cli.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    loaded = set(done.stderr.split())
    assert "nvtopo.cli.checks" in loaded
    assert not loaded & {"nvtopo.cli.check", "nvtopo.cli.audit", "nvtopo.cli.show"}, loaded
    assert json.loads(done.stdout)["checks"]


def test_the_command_runs_with_the_collector_on_and_start_up_frozen():
    """The console script builds the command with the cyclic collector off, then freezes
    what start-up built and turns the collector back on: the command's own work (an audit of
    thousands of files) is collected as before."""
    code = ("import gc, sys\nimport nvtopo.checks as c\nfrom nvtopo.cli import run\n"
            "real = c.select_and_run\n"
            "def spy(*a, **k):\n"
            "    sys.stderr.write(f'GC {gc.isenabled()} {gc.get_freeze_count() > 1000}\\n')\n"
            "    return real(*a, **k)\n"
            "c.select_and_run = spy\n"
            "sys.argv = ['nvtopo', 'check', '--example', 'dgx-h100-healthy', '--format', "
            "'json']\nrun()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "GC True True" in done.stderr
    assert json.loads(done.stdout)["verdict"] == "pass"


def test_version():
    result = invoke(["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"nvtopo {nvtopo.__version__}"


# --- end to end in a real process --------------------------------------------------------


def nvtopo_script() -> str:
    candidate = Path(sys.executable).with_name("nvtopo")
    if candidate.is_file():
        return str(candidate)
    found = shutil.which("nvtopo")
    if found is None:
        pytest.fail("the nvtopo console script is not installed next to " + sys.executable)
    return found


ENTRY_POINTS = {
    "script": lambda: [nvtopo_script()],
    "module": lambda: [sys.executable, "-m", "nvtopo"],
}


def run_cli(how: str, args: Sequence[str], *, input: Optional[bytes] = None,
            cwd: Optional[Path] = None, path: Optional[str] = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR_FORCE")}
    env["COLUMNS"] = "100"
    if path is not None:
        env["PATH"] = path
    return subprocess.run(ENTRY_POINTS[how]() + list(args), input=input, capture_output=True,
                          cwd=cwd, env=env, timeout=timeout, check=False)


def assert_process_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    err = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert proc.returncode == 2, (proc.returncode, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("nvtopo: error: "), lines[0]
    for n in needles:
        assert re.search(n, lines[0], re.I), (n, lines[0])
    assert proc.stdout == b""
    return lines[0]


def _bad_inputs(tmp: Path) -> Dict[str, Tuple[Path, str]]:
    good = snapshot.dumps(snapshot.load_document(str(corpus(H100))))
    files = {
        "empty": (b"", "empty"),
        "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        "noise": (bytes(random.Random(7).randrange(0x80, 0x100) for _ in range(500)),
                  "binary|utf-8"),
        "truncated": (good[: len(good) // 2].encode(), "truncated|corrupt"),
        "future": (good.replace('"schema_version": 1', '"schema_version": 999', 1).encode(),
                   "newer"),
        "not-topo": ((FIXTURES / "cli" / "ibdev2netdev_h100_column_t_annotated.txt").read_bytes(), "topo"),
    }
    out = {}
    for name, (data, needle) in files.items():
        p = tmp / f"{name}.in"
        p.write_bytes(data)
        out[name] = (p, needle)
    out["missing"] = (tmp / "missing.txt", "no such file|not found")
    out["directory"] = (tmp, "directory")
    return out


@pytest.mark.parametrize("how", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("case", ["empty", "binary", "noise", "truncated", "future", "not-topo",
                                  "missing", "directory"])
def test_process_errors_have_no_traceback(how, case, tmp_path):
    path, needle = _bad_inputs(tmp_path)[case]
    line = assert_process_error(run_cli(how, ["show", "--from", str(path)]), needle)
    assert str(path) in line


@pytest.mark.parametrize("how", sorted(ENTRY_POINTS))
def test_process_show_example_and_stdin(how):
    proc = run_cli(how, ["show", "--example", "dgx-h100"])
    assert proc.returncode == 0, proc.stderr
    assert DGX_SUMMARY in proc.stdout.decode("utf-8")
    assert proc.stderr == b""
    proc = run_cli(how, ["show", "--from", "-", "--format", "json"],
                   input=corpus(H100).read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["gpus"]) == 8
    assert_process_error(run_cli(how, ["show", "--from", "-"], input=b""), "stdin", "empty")


def test_process_no_nvidia_smi(tmp_path):
    empty = tmp_path / "emptybin"
    empty.mkdir()
    line = assert_process_error(run_cli("script", ["show"], path=str(empty)), "nvidia-smi")
    assert "--from" in line
    proc = run_cli("script", ["snapshot"], path=str(empty))
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["probes"]["topo-text"]["status"] == "missing"


def test_process_usage_errors_have_no_traceback():
    for args in (["show", "--format", "xml"], ["show", "--timeout", "0"], ["nosuch"],
                 ["show", "--from"]):
        proc = run_cli("script", args)
        assert proc.returncode == 2, (args, proc.returncode, proc.stderr)
        assert b"Traceback" not in proc.stderr, proc.stderr.decode()


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_process_closed_stdout_is_not_an_error(fmt):
    """``nvtopo show | head`` where the reader has gone: exit 0, nothing on stderr.

    The CLI maps BrokenPipeError to exit status 0 (cli.handles_errors); exit 1
    would mean "findings" and 120 a failed flush at interpreter exit.
    """
    proc = subprocess.Popen(ENTRY_POINTS["script"]() + ["show", "--example", "dgx-h100",
                                                        "--format", fmt],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before nvtopo writes a byte
    err = proc.stderr.read().decode("utf-8", "replace")
    rc = proc.wait(timeout=60)
    proc.stderr.close()
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert rc == 0, (rc, err)


@pytest.mark.parametrize("cmd", ["show", "snapshot", "links", "ib", "check"])
def test_timeout_is_bounded(cmd):
    result = invoke([cmd, "--timeout", "99999"])
    assert_no_traceback(result)
    assert result.exit_code == 2
    assert "--timeout" in result.stderr and "3600" in result.stderr


def test_help_fits_one_screen_at_80_by_50():
    """`nvtopo --help` at 80 columns: under 50 lines, one line per command (it was 67 lines,
    descriptions broken by hard newlines)."""
    out = invoke(["--help"], env={"COLUMNS": "80", "LINES": "50"}).stdout
    lines = out.splitlines()
    assert len(lines) <= 50 and all(len(ln) <= 80 for ln in lines), len(lines)
    from nvtopo.cli import COMMANDS

    rows = [ln for ln in lines if ln.startswith("│ ") and ln[2:].split(" ", 1)[0] in COMMANDS]
    assert sorted(r[2:].split()[0] for r in rows) == sorted(COMMANDS)
    body = "\n".join(lines)
    assert "│           " not in body.split("Commands", 1)[1]  # no description wraps
