"""The model cache sealed into snapshots: used only when it is exactly what re-deriving gives.

``snapshot.dumps`` writes the evidence and, under ``"derived"``, the model it derives to,
sealed by a SHA-256 of the file and keyed by the nvtopo version and a digest of the
derivation code.  These tests prove (1) reading the cache gives the same model and the
same findings as re-deriving, over simulated nodes of every layout, faults, the real topo
corpus, pasted nvlink text and the sysfs fixture trees; (2) the cache really is used; and
(3) any edit to the file, a different nvtopo version or different derivation code makes
nvtopo re-derive from the evidence instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import nvtopo
from nvtopo import checks, fakesys, layouts, snapshot
from nvtopo.snapshot import cache as snapshot_cache
from nvtopo.model import Origin, Topology
from nvtopo.model.codec import fields_of
from nvtopo.snapshot import document as snapshot_document
from nvtopo.probes import ProbeOptions
from nvtopo.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted((ROOT / "fixtures" / "topo-corpus").glob("*.txt"))
NVML_TEXT = sorted((ROOT / "fixtures" / "nvml-text").glob("*.txt"))
SYSFS_TREES = sorted((ROOT / "fixtures" / "sysfs").glob("*.sysfs"))

FAULTED = [("dgx-h100", ["nvlink-down:GPU3:7"]), ("dgx-h100", ["gpu-missing:GPU7"]),
           ("dgx-h100", ["ib-port-down:mlx5_4", "pcie-width:GPU5:8"]),
           ("dgx-h100", ["fabric-not-started"]), ("dgx-h100", ["counters:mlx5_2:symbol_error=1000"]),
           ("dgx-1-v100", ["nvlink-degraded:GPU0-GPU3"]), ("dgx-h100", ["nic-affinity-swap:mlx5_0:mlx5_3", "peermem-missing"]),
           ("dgx-a100", ["peermem-missing"])]


def _no_derive(monkeypatch):
    """Make re-deriving fail loudly: what still loads came from the cache."""
    def refuse(*_a, **_k):
        raise AssertionError("re-derived although the cache is valid")
    monkeypatch.setattr(snapshot_document, "derive", refuse)


def _with_document(path):
    """The model and the document, as ``check --format prometheus`` and ``diff`` read them
    (the whole file decoded)."""
    opened = snapshot.open_input(snapshot.Input(path=path, want=snapshot.MODEL_AND_DOCUMENT))
    return opened.model, opened.document


def _same_as_rederived(doc, tmp_path, monkeypatch, name="node.json"):
    path = tmp_path / name
    text = snapshot.dumps(doc)
    path.write_text(text, encoding="utf-8")
    assert "derived" in json.loads(text), "dumps wrote no cache"
    fresh = snapshot.derive(json.loads(text), str(path))
    with monkeypatch.context() as m:
        _no_derive(m)
        cached, _doc = _with_document(str(path))  # decodes the whole file
        quick = snapshot.load(str(path))  # decodes only the cache and the host facts
    assert cached.to_dict() == fresh.to_dict() == quick.to_dict()
    assert cached.origin == fresh.origin
    assert cached.origin.to_dict() == {"kind": "snapshot", "file": str(path),
                                       "nvtopo_version": doc.get("nvtopo_version")}
    if cached.gpus or cached.matrix is not None:
        rep_c, rep_f = checks.select_and_run(cached), checks.select_and_run(fresh)
        assert rep_c.document() == rep_f.document()
    return cached


@pytest.mark.parametrize("name", layouts.names())
def test_cache_of_every_healthy_layout_equals_rederiving(name, tmp_path, monkeypatch):
    topo = _same_as_rederived(simulate(layouts.load(name), [], seed=3), tmp_path, monkeypatch)
    assert topo.gpus


@pytest.mark.parametrize("name,faults", FAULTED, ids=[f"{n}:{'+'.join(f)}" for n, f in FAULTED])
def test_cache_of_faulty_nodes_equals_rederiving(name, faults, tmp_path, monkeypatch):
    topo = _same_as_rederived(simulate(layouts.load(name), faults, seed=5), tmp_path,
                              monkeypatch)
    assert checks.select_and_run(topo).verdict == "fail"


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_cache_of_every_corpus_text_equals_rederiving(path, tmp_path, monkeypatch):
    doc = snapshot.load_document(str(path))
    _same_as_rederived(doc, tmp_path, monkeypatch)


@pytest.mark.parametrize("path", NVML_TEXT, ids=[p.name for p in NVML_TEXT])
def test_cache_of_pasted_nvlink_text_equals_rederiving(path, tmp_path, monkeypatch):
    _same_as_rederived(snapshot.load_document(str(path)), tmp_path, monkeypatch)


@pytest.mark.parametrize("tree", SYSFS_TREES, ids=[p.stem for p in SYSFS_TREES])
def test_cache_of_sysfs_trees_equals_rederiving(tree, tmp_path, monkeypatch):
    root = tmp_path / "sys"
    fakesys.load_file(str(tree), str(root))
    doc = snapshot.take(ProbeOptions(sysfs_root=str(root)))
    topo = _same_as_rederived(doc, tmp_path, monkeypatch)
    # every tree has NICs (RDMA devices, or NIC functions with no RDMA driver bound) or,
    # the storage trees, NVMe drives
    assert topo.nics or [n for n in topo.notes if n.code == "sysfs.no_rdma_driver"] \
        or (topo.sysfs is not None and topo.sysfs.nvme)


@pytest.fixture()
def sealed(tmp_path):
    """A faulty DGX H100 snapshot as nvtopo writes it, and the model its evidence derives to."""
    doc = simulate(layouts.load("dgx-h100"), ["nvlink-down:GPU3:7"], seed=2, hostname="n1")
    text = snapshot.dumps(doc)
    path = tmp_path / "n1.json"
    path.write_text(text, encoding="utf-8")
    return path, text


def test_an_edit_to_the_evidence_is_rederived(sealed, tmp_path):
    path, text = sealed
    assert snapshot.load(str(path)).host.hostname == "n1"
    edited = tmp_path / "edited.json"
    edited.write_text(text.replace('"hostname": "n1"', '"hostname": "n2"', 1), encoding="utf-8")
    assert snapshot.load(str(edited)).host.hostname == "n2"


#: Where the GPUs are in the cache's row of the model (``"rows"``: nvtopo/model/rows.py).
GPUS = [f.name for f in fields_of(Topology)].index("gpus")


def test_an_edit_to_the_cached_model_is_ignored(sealed, tmp_path):
    path, text = sealed
    doc = json.loads(text)
    assert len(doc["derived"]["rows"][GPUS]) == 8
    doc["derived"]["rows"][GPUS] = []  # the seal still reads the old value
    forged = tmp_path / "forged.json"
    # keep the same layout and the same seal: only the model changed
    forged.write_text(text.replace(json.dumps(json.loads(text)["derived"]["rows"],
                                              separators=(",", ":")),
                                   json.dumps(doc["derived"]["rows"], separators=(",", ":"))),
                      encoding="utf-8")
    assert forged.read_text() != text
    assert len(snapshot.load(str(forged)).gpus) == 8


@pytest.mark.parametrize("rewrite", [
    lambda t: json.dumps(json.loads(t), indent=4),  # reformatted (jq, an editor)
    lambda t: json.dumps(json.loads(t), sort_keys=True),
    lambda t: t.replace("\n", "\r\n"),
    lambda t: "\ufeff" + t,
], ids=["reindented", "keys-sorted", "crlf", "bom"])
def test_a_reformatted_file_is_rederived_to_the_same_model(sealed, tmp_path, rewrite,
                                                          monkeypatch):
    path, text = sealed
    good = snapshot.load(str(path)).to_dict()
    other = tmp_path / "other.json"
    other.write_text(rewrite(text), encoding="utf-8")
    calls = []
    real = snapshot.derive
    monkeypatch.setattr(snapshot_document, "derive", lambda *a, **k: calls.append(1) or real(*a, **k))
    topo = snapshot.load(str(other))
    assert calls == [1]
    topo.origin.file = str(path)
    assert topo.to_dict() == good


def test_another_nvtopo_version_or_derivation_code_rederives(sealed, monkeypatch):
    path, _text = sealed
    calls = []
    real = snapshot.derive
    monkeypatch.setattr(snapshot_document, "derive", lambda *a, **k: calls.append(1) or real(*a, **k))
    snapshot.load(str(path))
    assert calls == []  # the cache was used
    with monkeypatch.context() as m:
        m.setattr(snapshot_cache, "__version__", "99.0")
        snapshot.load(str(path))
    assert calls == [1]
    with monkeypatch.context() as m:
        m.setattr(snapshot_cache, "_code_digest", "f" * 64)  # a parser fix, same version number
        snapshot.load(str(path))
    assert calls == [1, 1]


def test_evidence_that_does_not_derive_is_written_without_a_cache():
    doc = {"kind": "nvtopo-snapshot", "schema_version": 1, "host": {},
           "probes": {"nvml": "not an object"}}
    assert "derived" not in json.loads(snapshot.dumps(doc))


def test_a_cache_in_the_input_is_replaced_not_kept(sealed):
    _path, text = sealed
    doc = json.loads(text)
    doc["derived"]["rows"][GPUS] = []
    again = json.loads(snapshot.dumps(doc))
    assert len(again["derived"]["rows"][GPUS]) == 8


def test_the_evidence_stays_readable_and_the_seal_is_the_last_value(sealed):
    _path, text = sealed
    head = text[:text.index('"derived"')]
    assert '\n  "probes": {\n' in head  # indented for people
    assert text.rstrip().endswith('"}\n}') or text.rstrip().endswith('"}}')
    assert text.rindex('"file_sha256"') > text.rindex('"model"')


def test_derivation_modules_cover_every_module_that_derives(tmp_path):
    """Any nvtopo module imported while deriving must be in the code digest, or a change
    to it would leave stale caches trusted."""
    files = []
    for i, doc in enumerate([
        simulate(layouts.load("dgx-h100"), [], seed=1),
        snapshot.load_document(str(NVML_TEXT[0])),
        snapshot.load_document(str(CORPUS[0])),
    ]):
        p = tmp_path / f"{i}.json"
        p.write_text(json.dumps(doc), encoding="utf-8")
        files.append(str(p))
    code = ("import json, sys\n"
            "from nvtopo import snapshot\n"
            "for f in sys.argv[1:]:\n"
            "    snapshot.derive(json.load(open(f)), f)\n"
            "    snapshot.load(f)\n"
            "import nvtopo\n"
            "print('\\n'.join(sorted(m.__file__ for n, m in sys.modules.items()\n"
            "                 if n.startswith('nvtopo') and getattr(m, '__file__', None))))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code, *files], capture_output=True, text=True,
                         check=True, env=env, cwd=str(tmp_path)).stdout.split()
    base = Path(nvtopo.__file__).resolve().parent
    used = {Path(f).resolve().relative_to(base).as_posix() for f in out}
    assert {"probes/nvml/__init__.py", "probes/nvml/walk.py", "probes/sysfs/walk.py",
            "probes/topo/matrix.py", "probes/nvml/text.py"} <= used
    listed = set(snapshot_cache.DERIVATION_MODULES)
    assert used <= listed, used - listed


def test_code_digest_covers_the_sources(monkeypatch, tmp_path):
    first = snapshot.code_digest()
    assert first == snapshot.code_digest() and len(first) == 64
    monkeypatch.setattr(snapshot_cache, "_code_digest", None)
    monkeypatch.setattr(snapshot_cache, "DERIVATION_MODULES",
                        snapshot_cache.DERIVATION_MODULES[:-1])
    assert snapshot.code_digest() != first


def test_an_old_evidence_only_snapshot_is_given_a_cache_in_place(tmp_path, monkeypatch):
    from cli_runner import make_runner
    from nvtopo.cli import app

    doc = simulate(layouts.load("dgx-h100"), ["ib-port-down:mlx5_4"], seed=4)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")  # as written before the cache
    before = snapshot.load(str(path)).to_dict()
    res = make_runner().invoke(app, ["snapshot", "--from", str(path), "-o", str(path)])
    assert res.exit_code == 0, res.stderr
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["probes"] == doc["probes"] and written["host"] == doc["host"]
    with monkeypatch.context() as m:
        _no_derive(m)
        assert snapshot.load(str(path)).to_dict() == before
    res = make_runner().invoke(app, ["check", "--from", str(path), "--format", "json"])
    assert res.exit_code == 1 and '"ib.port_down"' in res.stdout


def _reseal(text: str) -> str:
    """Seal an edited file anew, as docs/snapshot.md §3 describes the seal (what a tool could do)."""
    import hashlib
    import re

    zero = re.sub(r'("file_sha256":")[0-9a-f]{64}"', r'\g<1>' + "0" * 64 + '"', text)
    seal = hashlib.sha256(zero.encode("utf-8")).hexdigest()
    return zero.replace('"file_sha256":"' + "0" * 64 + '"', '"file_sha256":"' + seal + '"')


def _forge(text: str, change) -> str:
    """The file with its cached model changed in its JSON form (``change``), written back
    as rows (unchecked: nvtopo.model.rows.rows_from_json) and sealed anew."""
    head, cache = text.split(',\n  "derived": ')
    body = json.loads(cache[:-len("\n}\n")])
    model = Topology.from_rows(body["rows"]).to_dict()
    change(model)
    body["rows"] = Topology.rows_from_dict(model)
    return _reseal(head + ',\n  "derived": ' + json.dumps(body, separators=(",", ":")) + "\n}\n")


def test_resealing_an_unedited_file_gives_the_same_seal(sealed):
    _path, text = sealed
    assert _reseal(text) == text  # so the forgeries below differ only where they say


@pytest.mark.parametrize("change", [
    lambda m: m["matrix"]["cells"][0].__setitem__(1, ["NV18"]),
    lambda m: m["matrix"]["devices"].__setitem__(0, ["GPU0"]),
    lambda m: m["gpus"][0].__setitem__("index", "0"),
    lambda m: m["nics"][0].__setitem__("name", 5),
    lambda m: m["nvlinks"].append({"a": 0, "b": True, "count": 18, "source": "nvml"}),
    lambda m: m.__setitem__("notes", {}),
    lambda m: m["host"].__setitem__("hostname", "someone-else"),
], ids=["cell-list", "device-list", "index-str", "nic-name-int", "bool-index", "notes-dict",
        "host-not-the-evidence"])
def test_a_resealed_model_that_cannot_be_the_derivation_is_not_used(sealed, tmp_path, change):
    path, text = sealed
    forged = tmp_path / "forged.json"
    forged.write_text(_forge(text, change), encoding="utf-8")
    topo = snapshot.load(str(forged))
    want = snapshot.load(str(path))
    topo.origin, want.origin = Origin(), Origin()
    assert topo.to_dict() == want.to_dict()
    found = checks.select_and_run(topo).findings
    assert {(f.code, str(f.subject)) for f in found if f.severity == "error"} == {
        ("nvlink.link_down", "GPU3 link 7")}


def test_invalid_utf8_in_a_snapshot_is_read_as_before(sealed, tmp_path):
    """Bytes that are not UTF-8 (a CESU-8 surrogate here) read as U+FFFD, never as a lone
    surrogate that would crash printing; the damaged file is re-derived."""
    _path, text = sealed
    bad = tmp_path / "bad.json"
    bad.write_bytes(text.encode("utf-8").replace(b'"hostname": "n1"', b'"hostname": "n\xed\xa0\x80"', 1))
    topo = snapshot.load(str(bad))
    assert topo.host.hostname == "n\ufffd\ufffd\ufffd"
    topo.host.hostname.encode("utf-8")


def test_utf16_without_a_bom_is_refused_as_before(sealed, tmp_path):
    _path, text = sealed
    f = tmp_path / "u16.json"
    f.write_bytes(text.encode("utf-16-le"))
    with pytest.raises(snapshot.NvtopoError, match="binary file"):
        snapshot.load(str(f))


def test_bundled_layouts_load_when_nvtopo_is_imported_from_a_zip(tmp_path):
    import zipfile

    z = tmp_path / "nvtopo.zip"
    pkg = Path(nvtopo.__file__).resolve().parent
    with zipfile.ZipFile(z, "w") as zf:
        for f in pkg.rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts:
                zf.write(f, f.relative_to(pkg.parent).as_posix())
    code = ("from nvtopo import layouts\n"
            "names = layouts.names()\n"
            "assert len(names) > 20 and layouts.load('dgx-h100').gpus.count == 8\n"
            "print(len(names))\n")
    env = dict(os.environ, PYTHONPATH=str(z))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(layouts.names())


def test_matrix_lookup_follows_an_edited_device_list():
    from nvtopo.model import Matrix

    m = Matrix(devices=["GPU0", "GPU1"], cells=[["X", "NV1"], ["NV1", "X"]])
    assert m.get("GPU0", "GPU1") == "NV1"
    m.devices[1] = "GPU9"
    assert m.get("GPU0", "GPU1") is None and m.get("GPU0", "GPU9") == "NV1"


def test_the_origin_names_the_version_that_took_the_evidence(tmp_path):
    doc = simulate(layouts.load("dgx-h100"), [], seed=1)
    doc["nvtopo_version"] = "0.0.9"  # taken by an older nvtopo, cached by this one
    path = tmp_path / "old.json"
    path.write_text(snapshot.dumps(doc), encoding="utf-8")
    assert snapshot.load(str(path)).origin.nvtopo_version == "0.0.9"
    assert _with_document(str(path))[0].origin.nvtopo_version == "0.0.9"


@pytest.mark.parametrize("doc", [
    {"kind": "nvtopo-snapshot", "schema_version": 1, "host": {},
     "probes": {"topo-text": {"status": "ok", "stdout": 17, "error": None}}},
    {"kind": "something-else", "schema_version": 1, "host": {}, "probes": {}},
    {"kind": "nvtopo-snapshot", "schema_version": 99, "host": {}, "probes": {}},
], ids=["stdout-not-text", "not-a-snapshot", "newer-schema"])
def test_a_document_that_does_not_read_back_gets_no_cache(doc, tmp_path):
    """A cache would let a sealed file be read where its evidence is refused."""
    text = snapshot.dumps(doc)
    assert "derived" not in json.loads(text)
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(snapshot.NvtopoError):
        snapshot.load(str(path))


def test_a_derivation_bug_never_costs_the_evidence(monkeypatch):
    """`nvtopo snapshot` writes the evidence even when deriving the cache fails oddly."""
    doc = simulate(layouts.load("dgx-h100"), [], seed=1)

    def boom(*_a, **_k):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(snapshot_document, "derive", boom)
    written = json.loads(snapshot.dumps(doc))
    assert "derived" not in written and written["probes"] == doc["probes"]


@pytest.mark.parametrize("edit,needle", [
    (lambda t: t.replace('"schema_version": 1,', '"schema_version": 2,', 1), "newer"),
    (lambda t: t.replace('"kind": "nvtopo-snapshot"', '"kind": "other"', 1), "not an nvtopo"),
], ids=["newer-schema", "other-kind"])
def test_a_resealed_header_the_full_read_refuses_is_refused_by_the_quick_read(
        sealed, tmp_path, edit, needle):
    """The evidence-free read asks of the header what parse_snapshot does."""
    _path, text = sealed
    forged = tmp_path / "forged.json"
    forged.write_text(_reseal(edit(text)), encoding="utf-8")
    for read in (snapshot.load, _with_document):
        with pytest.raises(snapshot.NvtopoError, match=needle):
            read(str(forged))


def test_evidence_too_deep_to_read_back_gets_no_cache(tmp_path):
    """Otherwise a check could pass a file whose evidence a full read refuses (how deep a
    decoder goes depends on the reader's stack): evidence nested past 64 levels is written
    without a cache, and reading it gives the model or the one-line error, as it always did."""
    base = snapshot.load_document(str(CORPUS[0]))
    written = 0
    for depth in (10, 59, 62, 100, 500, 990, 1000):
        deep: list = []
        for _ in range(depth):
            deep = [deep]
        doc = dict(base, probes=dict(base["probes"], **{"future-probe": {"data": deep}}))
        try:
            text = snapshot.dumps(doc)
        except RecursionError:  # too deep for the encoder as well: nothing is written
            continue
        # data sits at level 3: past level 64 the file has no cache
        assert ('"derived"' in text) == (depth + 3 <= 64), depth
        path = tmp_path / f"deep{depth}.json"
        path.write_text(text, encoding="utf-8")
        outcomes = []
        for read in (snapshot.load, lambda p: _with_document(p)[0]):
            try:
                outcomes.append(read(str(path)).to_dict())
            except snapshot.NvtopoError as exc:
                assert "nested too deeply" in str(exc)
                outcomes.append("refused")
        assert outcomes[0] == outcomes[1], depth  # the quick and the full read agree
        written += 1
    assert written >= 4


def _sources_copy(tmp_path):
    """A copy of the derivation sources, their modification times kept."""
    import shutil

    base = snapshot_cache._package_dir()
    root = tmp_path / "pkg"
    for name in snapshot_cache.DERIVATION_MODULES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(base, name), root / name)
    return root


def _kept_digest_setup(monkeypatch, tmp_path):
    """A copy of the sources and a kept file of the test's own; returns (root, kept path,
    the digests made from the sources, fresh(): the digest as a new process computes it)."""
    root = _sources_copy(tmp_path)
    kept = tmp_path / "pycache" / "nvtopo-code-digest.json"
    kept.parent.mkdir()
    monkeypatch.setattr(snapshot_cache, "_package_dir", lambda: str(root))
    monkeypatch.setattr(snapshot_cache, "_kept_path", lambda: str(kept))
    monkeypatch.setattr(snapshot_cache, "_RACY_S", 0.0)  # (the copy was just made)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    made = []
    real = snapshot_cache._digest

    def digest(base):
        made.append(base)
        return real(base)

    monkeypatch.setattr(snapshot_cache, "_digest", digest)

    def fresh():
        monkeypatch.setattr(snapshot_cache, "_code_digest", None)
        return snapshot.code_digest()

    return root, kept, made, fresh


def test_the_code_digest_is_kept_beside_the_bytecode_and_read_while_the_sources_stand(
        monkeypatch, tmp_path):
    """The digest is kept under each source's size, times and inode: read back while they
    stand; made again from the sources when one is edited, even with its size and its
    modification time put back (a copy or an archive keeps them; the change time is the
    copy's); a kept file that is not one is ignored."""
    root, kept, made, fresh = _kept_digest_setup(monkeypatch, tmp_path)
    first = fresh()
    assert first == snapshot_cache._digest(str(root))[0] and len(made) == 2
    assert json.loads(kept.read_text())["digest"] == first
    assert fresh() == first and len(made) == 2  # read back, not made again
    src = root / "probes/topo/matrix.py"
    old = src.stat()
    text = src.read_text()
    edited = text.replace("return", "retUrn", 1)  # (same size)
    assert edited != text and len(edited) == len(text)
    src.write_text(edited)
    os.utime(src, ns=(old.st_atime_ns, old.st_mtime_ns))  # size and mtime as they were
    assert src.stat().st_size == old.st_size and src.stat().st_mtime_ns == old.st_mtime_ns
    second = fresh()
    assert second != first and len(made) == 3 and fresh() == second and len(made) == 3
    stamp = json.loads(kept.read_text())["stamp"]
    for bad in ('{"stamp": "', json.dumps({"stamp": 1, "digest": first}), "[]",
                json.dumps({"stamp": stamp, "digest": "X" * 64}), "x" * 4096):
        kept.write_text(bad)
        assert fresh() == second
    assert len(made) == 8


def test_a_code_digest_is_not_kept_where_it_may_not_be_or_cannot_be_trusted(
        monkeypatch, tmp_path):
    """Not kept under PYTHONDONTWRITEBYTECODE; not for a source that cannot be read (the
    digest no file carries stays this process's own) or one changed in the last seconds
    (it may change again within the file system's time granularity); a FIFO in the kept
    file's place is not waited on; the kept file lies under PYTHONPYCACHEPREFIX when set."""
    import threading

    root, kept, made, fresh = _kept_digest_setup(monkeypatch, tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    first = fresh()
    assert not kept.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(snapshot_cache, "_RACY_S", 3600.0)  # every copy "just changed"
    assert fresh() == first and not kept.exists()
    monkeypatch.setattr(snapshot_cache, "_RACY_S", 0.0)
    src = root / "probes/topo/scan.py"
    src.unlink()
    src.mkdir()  # looked at, but not read
    one, two = fresh(), fresh()
    assert len({one, two, first}) == 3 and not kept.exists()
    src.rmdir()
    os.mkfifo(kept)
    done = []
    t = threading.Thread(target=lambda: done.append(snapshot_cache._kept("0" * 64)),
                         daemon=True)
    t.start()
    t.join(30)
    assert done == [None]
    monkeypatch.undo()
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    assert snapshot_cache._kept_path().startswith(str(tmp_path / "prefix") + os.sep)
