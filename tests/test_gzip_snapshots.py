"""Compressed snapshots (issue 14, item 4): every command reads ``.json.gz``; ``-o X.gz``
writes one; the sealed cache holds across compression; decompression is bounded.

Gzip is recognised by its magic bytes, not by the name; decompressed input meets the
bounds plain input meets (``nvtopo/snapshot/read.py``), so a gzip bomb gets the one-line
error and never more than the bound in memory.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import pytest

from cli_runner import make_runner
from nvtopo import layouts, output, snapshot
from nvtopo.cli import app
from nvtopo.errors import NvtopoError
from nvtopo.simulate import simulate
from nvtopo.snapshot import cache, document, read

ROOT = Path(__file__).resolve().parents[1]


def _one_line_error(stderr: str, *must_hold: str) -> str:
    assert stderr.startswith("nvtopo: error: ") and stderr.endswith("\n"), repr(stderr)
    line = stderr[:-1]
    assert "\n" not in line and "Traceback" not in line, repr(stderr)
    for part in must_hold:
        assert part in line, (part, line)
    return line


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    """A sealed DGX H100 snapshot with a link down (so check has one error to find)."""
    path = tmp_path_factory.mktemp("gz") / "node.json"
    doc = simulate(layouts.load("dgx-h100"), ["nvlink-down:GPU3:7"], seed=1)
    path.write_text(snapshot.dumps(doc), encoding="utf-8")
    return path


def _bomb(size: int) -> bytes:
    """Gzip of ``size`` bytes of JSON-looking spaces, made without holding them."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [z.compress(b"{")]
    block = b" " * (1024 * 1024)
    for _ in range(size // len(block)):
        parts.append(z.compress(block))
    parts.append(z.compress(b" " * (size % len(block))))
    parts.append(z.flush())
    return b"".join(parts)


# --- writing --------------------------------------------------------------------------


def test_snapshot_dash_o_gz_writes_gzip_of_the_plain_file(tmp_path, plain):
    runner = make_runner()
    gz, flat = tmp_path / "n.json.gz", tmp_path / "n.json"
    assert runner.invoke(app, ["snapshot", "--from", str(plain), "-o", str(gz)]).exit_code == 0
    assert runner.invoke(app, ["snapshot", "--from", str(plain), "-o", str(flat)]).exit_code == 0
    raw = gz.read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    assert gzip.decompress(raw) == flat.read_bytes()
    # a DGX H100 snapshot: hundreds of kB raw, tens of kB compressed
    assert len(raw) * 8 < len(flat.read_bytes())
    assert len(flat.read_bytes()) > 300_000 and len(raw) < 60_000


def test_compression_is_deterministic():
    data = b'{"kind": "nvtopo-snapshot"}\n' * 100
    assert output.compress(data) == output.compress(data)
    assert gzip.decompress(output.compress(data)) == data


def test_other_outputs_named_gz_are_compressed_too(tmp_path, plain):
    out = tmp_path / "check.json.gz"
    res = make_runner().invoke(app, ["check", "--from", str(plain), "--format", "json",
                                     "-o", str(out)])
    assert res.exit_code == 1, res.stderr
    doc = json.loads(gzip.decompress(out.read_bytes()))
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] \
        == ["nvlink.link_down"]


def test_standard_output_is_never_compressed(plain):
    res = make_runner().invoke(app, ["snapshot", "--from", str(plain), "-o", "-"])
    assert res.exit_code == 0
    assert json.loads(res.stdout)["kind"] == "nvtopo-snapshot"


# --- the seal across compression --------------------------------------------------------


def test_the_cache_is_used_through_gzip(tmp_path, plain, monkeypatch):
    gz = tmp_path / "n.json.gz"
    output.write(plain.read_text(encoding="utf-8"), str(gz))
    opened = snapshot.open_input(snapshot.Input(path=str(gz)))
    assert opened.cached is True and len(opened.model.gpus) == 8

    def no_derive(*_a, **_k):
        raise AssertionError("derived: the sealed cache was not used")

    monkeypatch.setattr(document, "derive", no_derive)
    res = make_runner().invoke(app, ["check", "--from", str(gz), "--format", "json"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 1, res.stderr
    assert "nvlink.link_down" in res.stdout
    # the proof can fail: an edited file is re-derived, and the stand-in raises
    gz.write_bytes(gzip.compress(plain.read_bytes().replace(b'"seed": 1', b'"seed": 1 ', 1)))
    res = make_runner(check_schemas=False).invoke(app, ["check", "--from", str(gz)])
    assert isinstance(res.exception, AssertionError)


def test_gunzip_gives_a_file_whose_seal_holds(tmp_path, plain):
    gz = tmp_path / "n.json.gz"
    assert make_runner().invoke(app, ["snapshot", "--from", str(plain), "-o", str(gz)]
                                ).exit_code == 0
    flat = tmp_path / "n.json"
    done = subprocess.run(["gunzip", "-c", str(gz)], capture_output=True, timeout=60) \
        if _have("gunzip") else None
    flat.write_bytes(done.stdout if done is not None else gzip.decompress(gz.read_bytes()))
    assert cache._sealed(flat.read_bytes()) is not None
    assert snapshot.open_input(snapshot.Input(path=str(flat))).cached is True


def _have(tool: str) -> bool:
    import shutil

    return shutil.which(tool) is not None


def test_an_edited_compressed_snapshot_is_rederived(tmp_path, plain):
    text = plain.read_text(encoding="utf-8").replace('"duration_s": ', '"duration_s":  ', 1)
    gz = tmp_path / "edited.json.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    opened = snapshot.open_input(snapshot.Input(path=str(gz)))
    assert opened.cached is False and len(opened.model.gpus) == 8


# --- every command reads it ---------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["show", "--format", "json"], ["check", "--format", "json"], ["links", "--format", "json"],
    ["ib", "--format", "json"]], ids=lambda a: a[0])
def test_every_command_reads_gzip(tmp_path, plain, args):
    gz = tmp_path / "n.json.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    runner = make_runner()
    a = runner.invoke(app, [*args, "--from", str(gz)])
    b = runner.invoke(app, [*args, "--from", str(plain)])
    assert a.exit_code == b.exit_code and a.exit_code in (0, 1), a.stderr
    assert a.stdout.replace(str(gz), "F") == b.stdout.replace(str(plain), "F")


def test_diff_and_audit_read_gzip(tmp_path, plain):
    gz = tmp_path / "fleet" / "n1.json.gz"
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    good = tmp_path / "good.json"
    good.write_text(snapshot.dumps(simulate(layouts.load("dgx-h100"), [], seed=1)),
                    encoding="utf-8")
    (gz.parent / "n2.json.gz").write_bytes(gzip.compress(good.read_bytes()))
    # a collect manifest beside the snapshots is no snapshot: a directory walk skips it
    (gz.parent / "collect.json").write_text('{"kind": "nvtopo-collect"}\n', encoding="utf-8")
    runner = make_runner()
    res = runner.invoke(app, ["diff", str(good), str(gz), "--format", "json"])
    assert res.exit_code == 1, res.stderr
    res = runner.invoke(app, ["audit", str(gz.parent), "--format", "json", "--jobs", "1"])
    assert res.exit_code == 1, res.stderr
    rows = {Path(n["file"]).name: n["verdict"] for n in json.loads(res.stdout)["nodes"]}
    assert rows == {"n1.json.gz": "fail", "n2.json.gz": "pass"}


def test_gzip_on_standard_input(plain):
    res = make_runner().invoke(app, ["show", "--from", "-", "--format", "json"],
                               input=gzip.compress(plain.read_bytes()))
    assert res.exit_code == 0, res.stderr
    assert len(json.loads(res.stdout)["gpus"]) == 8


def test_a_gzipped_topo_text_is_read_as_text(tmp_path):
    topo = ROOT / "nvtopo" / "examples" / "dgx-h100.txt"
    gz = tmp_path / "topo.txt.gz"
    gz.write_bytes(gzip.compress(topo.read_bytes()))
    a = snapshot.open_input(snapshot.Input(path=str(gz))).model
    b = snapshot.open_input(snapshot.Input(path=str(topo))).model
    assert a.matrix is not None and a.matrix == b.matrix


def test_several_gzip_members_are_read_as_gunzip_reads_them(tmp_path, plain):
    raw = plain.read_bytes()
    half = len(raw) // 2
    gz = tmp_path / "two.json.gz"
    gz.write_bytes(gzip.compress(raw[:half]) + gzip.compress(raw[half:]) + b"\0" * 10)
    opened = snapshot.open_input(snapshot.Input(path=str(gz)))
    assert opened.cached is True  # the bytes are the sealed file's, exactly


# --- hostile compressed input -------------------------------------------------------------


def test_a_gzip_bomb_gets_the_one_line_error(tmp_path):
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(_bomb(200 * 1024 * 1024))
    assert bomb.stat().st_size < 1024 * 1024
    res = make_runner().invoke(app, ["check", "--from", str(bomb)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(bomb), "decompresses to more than 64 MiB")


def test_a_gzip_bomb_never_costs_more_than_the_bound():
    data = _bomb(300 * 1024 * 1024)
    tracemalloc.start()
    try:
        with pytest.raises(NvtopoError, match="more than 64 MiB"):
            read.gunzip(data, "bomb", read.MAX_INPUT_BYTES)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < read.MAX_INPUT_BYTES + 8 * 1024 * 1024, peak


def test_the_bound_is_the_callers(tmp_path, plain):
    data = gzip.compress(b"x" * 1001)
    assert read.gunzip(data, "w", limit=1001) == b"x" * 1001
    with pytest.raises(NvtopoError, match="decompresses to more than"):
        read.gunzip(data, "w", limit=1000)
    # a layout file (1 MiB bound) is held to its own bound, compressed or not
    big = tmp_path / "layout.json.gz"
    big.write_bytes(gzip.compress(b"{" + b" " * (2 * 1024 * 1024) + b"}"))
    res = make_runner().invoke(app, ["check", "--from", str(plain), "--layout-file",
                                     str(big)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(big), "more than 1 MiB")


def test_decompressed_json_meets_the_json_bounds(tmp_path):
    many = tmp_path / "values.json.gz"
    body = b'{"kind": "nvtopo-snapshot", "a": [' + b"{}," * 1_400_000 + b"{}]}"
    assert snapshot.MAX_JSON_BYTES > len(body) > 4 * 1024 * 1024
    many.write_bytes(gzip.compress(body))
    res = make_runner().invoke(app, ["show", "--from", str(many)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(many), "more than 2,000,000 JSON values")


def test_truncated_gzip(tmp_path, plain):
    raw = gzip.compress(plain.read_bytes())
    for cut in (len(raw) // 2, len(raw) - 4, 11):
        path = tmp_path / f"cut{cut}.json.gz"
        path.write_bytes(raw[:cut])
        res = make_runner().invoke(app, ["show", "--from", str(path)])
        assert res.exit_code == 2, cut
        _one_line_error(res.stderr, str(path), "truncated gzip file")


def test_corrupt_gzip(tmp_path, plain):
    raw = bytearray(gzip.compress(plain.read_bytes()))
    raw[len(raw) // 2] ^= 0xFF
    path = tmp_path / "corrupt.json.gz"
    path.write_bytes(bytes(raw))
    res = make_runner().invoke(app, ["show", "--from", str(path)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(path), "corrupt gzip data")
    bad_crc = bytearray(gzip.compress(plain.read_bytes()))
    bad_crc[-8] ^= 0x01  # the CRC-32 of the trailer
    path.write_bytes(bytes(bad_crc))
    res = make_runner().invoke(app, ["show", "--from", str(path)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(path), "corrupt gzip data", "check")


def test_garbage_after_the_gzip_data(tmp_path, plain):
    path = tmp_path / "tail.json.gz"
    path.write_bytes(gzip.compress(plain.read_bytes()) + b"PK\x03\x04 not gzip")
    res = make_runner().invoke(app, ["show", "--from", str(path)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(path), "13 bytes after the gzip data are not gzip data")


def test_not_gzip_with_a_gz_name(tmp_path, plain):
    # content decides: a plain snapshot named .gz is a snapshot
    named = tmp_path / "plain.json.gz"
    named.write_bytes(plain.read_bytes())
    assert snapshot.open_input(snapshot.Input(path=str(named))).cached is True
    # binary bytes named .gz: the error says the name promised gzip
    junk = tmp_path / "junk.json.gz"
    junk.write_bytes(b"BZh91AY&SY" + bytes(range(256)) * 4)
    res = make_runner().invoke(app, ["show", "--from", str(junk)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(junk), "binary file", "named .gz, but not gzip data")


def test_gzip_of_nothing_is_empty_input(tmp_path):
    path = tmp_path / "empty.json.gz"
    path.write_bytes(gzip.compress(b""))
    res = make_runner().invoke(app, ["show", "--from", str(path)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(path), "file is empty")


def test_the_cli_reads_gzip_in_a_fresh_process(tmp_path, plain):
    """The installed entry point, end to end: python -m nvtopo check --from X.json.gz."""
    gz = tmp_path / "n.json.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    done = subprocess.run([sys.executable, "-m", "nvtopo", "check", "--from", str(gz),
                           "--format", "json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "fail"
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] \
        == ["nvlink.link_down"]
