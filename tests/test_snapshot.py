"""Snapshots: the document, atomic writing, and re-deriving the model from raw evidence."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from datetime import datetime
from pathlib import Path
from typing import Optional, Sequence

import pytest
from cli_runner import make_runner

import nvtopo
from nvtopo.cli import app

REPO = Path(__file__).resolve().parent.parent
CORPUS_DIRS = (REPO / "fixtures" / "topo-corpus", Path("/work/shared/corpus/topo"))
H100 = "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"
A100_TABS = "01_hgx-a100-8gpu-nv12-10nic-tabs.txt"
P2P = "15_p2p-rw-2x-rtx5090-gns-dr-legend-tabs.txt"

CAT = shutil.which("cat") or "/bin/cat"
SYSTEM_PATH = os.pathsep.join(p for p in ("/usr/bin", "/bin") if os.path.isdir(p))


def corpus(name: str) -> Path:
    for d in CORPUS_DIRS:
        if (d / name).is_file():
            return d / name
    pytest.fail(f"corpus file {name} not found in " + ", ".join(map(str, CORPUS_DIRS)))




def invoke(args: Sequence[str], input: Optional[str] = None):
    result = make_runner().invoke(app, list(args), input=input)
    assert "Traceback" not in result.stderr, result.stderr
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def ok(args: Sequence[str], input: Optional[str] = None):
    result = invoke(args, input=input)
    assert result.exit_code == 0, (result.exit_code, result.stderr)
    return result


def one_line_error(result, where: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"nvtopo: error: {where}: "), lines[0]
    return lines[0]


def show_json(path: Path) -> dict:
    return json.loads(ok(["show", "--from", str(path), "--format", "json"]).stdout)


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR_FORCE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def fake_smi_h100(tmp_path, monkeypatch):
    """A fake ``nvidia-smi`` first on PATH that prints a real ``topo -m`` text."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    script = bindir / "nvidia-smi"
    script.write_text(f"#!/bin/sh\nexec {shlex.quote(CAT)} {shlex.quote(str(corpus(H100)))}\n",
                      encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir) + os.pathsep + SYSTEM_PATH)
    return script


# --- the document ------------------------------------------------------------------


def test_live_snapshot_document(fake_smi_h100, tmp_path):
    out = tmp_path / "node.json"
    result = ok(["snapshot", "-o", str(out)])
    assert str(out) in result.stderr  # "wrote ..."
    assert result.stdout == ""
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["kind"] == "nvtopo-snapshot"
    assert doc["schema_version"] == 1
    assert doc["nvtopo_version"] == nvtopo.__version__
    host = doc["host"]
    assert isinstance(host["hostname"], str) and host["hostname"]
    assert isinstance(host["kernel"], str) and host["kernel"]
    when = datetime.fromisoformat(host["time"])
    assert when.tzinfo is not None  # an absolute time, not local wall-clock
    assert isinstance(doc["probes"], dict) and "topo-text" in doc["probes"]


def test_snapshot_to_stdout_is_the_document(fake_smi_h100):
    result = ok(["snapshot"])
    doc = json.loads(result.stdout)
    assert doc["kind"] == "nvtopo-snapshot"
    assert doc["probes"]["topo-text"]["stdout"] == corpus(H100).read_text(encoding="utf-8")


def test_snapshot_of_a_pasted_text(tmp_path):
    pasted = tmp_path / "pasted.txt"
    shutil.copyfile(corpus(A100_TABS), pasted)
    out = tmp_path / "s.json"
    ok(["snapshot", "--from", str(pasted), "-o", str(out)])
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["kind"] == "nvtopo-snapshot" and doc["schema_version"] == 1
    assert doc["nvtopo_version"] == nvtopo.__version__
    assert isinstance(doc["host"], dict)  # unknown for a paste: nvtopo did not run there
    ev = doc["probes"]["topo-text"]
    assert ev["stdout"] == pasted.read_text(encoding="utf-8")  # raw, byte for byte

    table = ok(["show", "--from", str(out)]).stdout
    assert "8 GPUs · 10 NICs · 28/28 GPU pairs NVLink-connected (NV12)" in table
    from_snap, from_text = show_json(out), show_json(pasted)
    for d in (from_snap, from_text):
        d.pop("origin")
        d.pop("host")
    assert from_snap == from_text


def test_snapshot_of_a_p2p_text(tmp_path):
    out = tmp_path / "p2p.json"
    ok(["snapshot", "--from", str(corpus(P2P)), "-o", str(out)])
    d = show_json(out)
    assert d["matrix"] is None and d["p2p"]["cells"] == [["X", "GNS"], ["GNS", "X"]]


def test_snapshot_from_stdin(tmp_path):
    out = tmp_path / "s.json"
    ok(["snapshot", "--from", "-", "-o", str(out)],
       input=corpus(H100).read_text(encoding="utf-8"))
    assert len(show_json(out)["gpus"]) == 8


def test_snapshot_of_a_snapshot_keeps_the_evidence(tmp_path):
    first = tmp_path / "first.json"
    second = tmp_path / "second.json"
    ok(["snapshot", "--from", str(corpus(H100)), "-o", str(first)])
    ok(["snapshot", "--from", str(first), "-o", str(second)])
    a = json.loads(first.read_text(encoding="utf-8"))
    b = json.loads(second.read_text(encoding="utf-8"))
    assert a["probes"] == b["probes"]
    assert show_json(first)["matrix"] == show_json(second)["matrix"]


# --- re-deriving from raw evidence ---------------------------------------------------


def test_show_rederives_from_the_evidence(tmp_path):
    snap = tmp_path / "s.json"
    ok(["snapshot", "--from", str(corpus(H100)), "-o", str(snap)])
    before = show_json(snap)
    assert {p["count"] for p in before["nvlinks"]} == {18}

    doc = json.loads(snap.read_text(encoding="utf-8"))
    ev = doc["probes"]["topo-text"]
    # GPU0<->GPU1 drops to NV12 in both directions, and NIC0 is renamed
    lines = ev["stdout"].split("\n")
    for i, ln in enumerate(lines):
        if ln.startswith("GPU0 "):
            lines[i] = re.sub(r"^(GPU0\s+X\s+)NV18", r"\1NV12", ln)
        elif ln.startswith("GPU1 "):
            lines[i] = re.sub(r"^(GPU1\s+)NV18", r"\1NV12", ln)
    ev["stdout"] = "\n".join(lines).replace("NIC0: mlx5_0", "NIC0: mlx5_99")
    snap.write_text(json.dumps(doc, indent=2), encoding="utf-8")

    after = show_json(snap)
    pair = next(p for p in after["nvlinks"] if {p["a"], p["b"]} == {0, 1})
    assert pair["count"] == 12
    assert after["matrix"]["cells"][0][1] == "NV12" and after["matrix"]["cells"][1][0] == "NV12"
    assert after["nics"][0]["name"] == "mlx5_99"
    table = ok(["show", "--from", str(snap)]).stdout
    assert "28/28 GPU pairs NVLink-connected (NV12, NV18)" in table
    assert "mlx5_99" in table


# --- atomic writing -----------------------------------------------------------------


def test_snapshot_write_leaves_no_temporary_files(tmp_path):
    outdir = tmp_path / "out"
    outdir.mkdir()
    out = outdir / "f.json"
    ok(["snapshot", "--from", str(corpus(H100)), "-o", str(out)])
    assert sorted(os.listdir(outdir)) == ["f.json"]
    json.loads(out.read_text(encoding="utf-8"))
    assert out.stat().st_mode & 0o444 == 0o444  # a normal readable file, not a 0600 temp


def test_live_snapshot_write_leaves_no_temporary_files(fake_smi_h100, tmp_path):
    outdir = tmp_path / "out"
    outdir.mkdir()
    ok(["snapshot", "-o", str(outdir / "node.json")])
    assert sorted(os.listdir(outdir)) == ["node.json"]


def test_snapshot_replaces_an_existing_file(tmp_path):
    out = tmp_path / "f.json"
    out.write_text("old contents\n", encoding="utf-8")
    ok(["snapshot", "--from", str(corpus(H100)), "-o", str(out)])
    assert json.loads(out.read_text(encoding="utf-8"))["kind"] == "nvtopo-snapshot"
    assert sorted(os.listdir(tmp_path)) == ["f.json"]


def test_snapshot_into_a_missing_directory(tmp_path):
    out = tmp_path / "no" / "such" / "dir" / "f.json"
    line = one_line_error(invoke(["snapshot", "--from", str(corpus(H100)), "-o", str(out)]),
                          where=str(out))
    assert re.search(r"no such file or directory|does not exist|cannot write", line, re.I)
    assert not (tmp_path / "no").exists()
    assert sorted(os.listdir(tmp_path)) == []


def test_snapshot_onto_a_directory_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "adir"
    target.mkdir()
    one_line_error(invoke(["snapshot", "--from", str(corpus(H100)), "-o", str(target)]),
                   where=str(target))
    assert sorted(os.listdir(tmp_path)) == ["adir"]
    assert os.listdir(target) == []


def test_failed_snapshot_does_not_touch_the_old_file(tmp_path):
    out = tmp_path / "f.json"
    out.write_text("precious\n", encoding="utf-8")
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    one_line_error(invoke(["snapshot", "--from", str(empty), "-o", str(out)]), where=str(empty))
    assert out.read_text(encoding="utf-8") == "precious\n"
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "f.json"]
