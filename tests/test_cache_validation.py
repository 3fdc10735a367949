"""A sealed cache of the wrong shape is never used: every key path, every type.

A snapshot carries its derived model, sealed (``"derived"``; see ``snapshot.dumps``).  The
seal catches accidental edits, not a tool that edits the model and seals the file anew.
Such a cache must be discarded and the model re-derived from the evidence, so ``check``,
``links``, ``ib`` and ``show`` give exactly what the unedited file gives, and never crash.

The model's own types decide (``Topology.from_dict``, strict).  The test takes sealed
snapshots of several kinds (simulated nodes of a few layouts, one
with faults, a fixture NVML machine, a sysfs tree, pasted nvlink text, a topo text) and,
for every distinct key path of the cached model (list items collapsed: ``gpus[].name``),
sets the value there to each other JSON type (a lone-surrogate string, a huge integer, a
float, NaN, a boolean, null, a list, an object) and also deletes the key.  A mutation is
then either

* rejected (the cache is not used; the file re-derives to the unmutated model), or
* accepted, and then it must be something derive itself produces: the mutated type is
  one derive gives at that path (or the key is one derive sometimes leaves out) over a
  wide corpus of inputs, and no command crashes on it.

The bulk of the mutations go through ``snapshot.cache._from_cache`` (what a sealed read calls
once the seal holds); a sample goes through real files, sealed anew exactly as ``dumps``
seals, read by ``snapshot.load`` and the CLI.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Set, Tuple

import pytest
from rich.console import Console

from nvtopo import checks, fakesys, layouts, snapshot
from nvtopo.snapshot import cache as snapshot_cache
from nvtopo.snapshot import document as snapshot_document
from nvtopo.errors import NvtopoError
from nvtopo.model import Topology
from nvtopo.model import rows as model_rows
from nvtopo.probes import ProbeOptions
from nvtopo.render import check as render_check
from nvtopo.render import ib as render_ib
from nvtopo.render import links as render_links
from nvtopo.render import matrix as render_matrix
from nvtopo.simulate import simulate

import nvml_fake
from cli_runner import make_runner

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


# --- the inputs -----------------------------------------------------------------------------


def _sysfs_doc(name: str, tmp: Path) -> Dict[str, Any]:
    root = tmp / f"{name}-sys"
    if not root.exists():
        fakesys.load_file(str(FIXTURES / "sysfs" / f"{name}.sysfs"), str(root))
    return snapshot.take(ProbeOptions(sysfs_root=str(root)))


#: The snapshots whose caches are mutated: name -> how to make the document (given a tmp
#: directory, for sysfs trees).
CASES: Dict[str, Callable[[Path], Dict[str, Any]]] = {
    "dgx-h100": lambda _t: simulate(layouts.load("dgx-h100"), [], seed=1),
    "dgx-a100": lambda _t: simulate(layouts.load("dgx-a100"), [], seed=2),
    "azure-nd96isr-h100-v5": lambda _t: simulate(layouts.load("azure-nd96isr-h100-v5"), [],
                                                 seed=3),
    "dgx-h100-faults": lambda _t: simulate(
        layouts.load("dgx-h100"),
        ["nvlink-down:GPU3:7", "gpu-missing:GPU7", "ib-port-down:mlx5_4", "pcie-width:GPU5:8",
         "counters:mlx5_2:symbol_error=1000", "fabric-not-started"], seed=4),
    "nvml-dgx-h100-gpu-lost": lambda _t: nvml_fake.snapshot_doc("dgx-h100-gpu-lost"),
    "nvml-dgx-a100-mig": lambda _t: nvml_fake.snapshot_doc("dgx-a100-mig"),
    "sysfs-roce-bond": lambda t: _sysfs_doc("roce-bond", t),
    "sysfs-dgx-h100-faults": lambda t: _sysfs_doc("dgx-h100-faults", t),
    "nvml-text": lambda _t: snapshot.load_document(
        str(FIXTURES / "nvml-text" / "nvidia_smi_q_h800_pci_and_fabric_excerpt.txt")),
    "nvml-text-bridge": lambda _t: snapshot.load_document(
        str(FIXTURES / "nvml-text" / "nvlink_s_h100_pcie_bridge_partial_inactive.txt")),
    "topo-text": lambda _t: snapshot.load_document(
        str(FIXTURES / "topo-corpus" / "41_a800-8gpu-nv8-8nic-all-mlx5-bond-tabs.txt")),
}


# --- what derive produces: types per path, keys it sometimes leaves out ---------------------


_KINDS = {type(None): "null", bool: "bool", int: "int", float: "float", str: "str",
          list: "list", dict: "dict"}


def _kind(v: Any) -> str:
    return _KINDS[type(v)]


_WILD = ((re.compile(r"[0-9]+"), "<n>"),
         (re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"), "<bdf>"),
         (re.compile(r"GPU[0-9]+"), "<GPU>"))


@lru_cache(maxsize=None)
def _key(k: str) -> str:
    """A key as it stands in a path: names that number things (link 7, GPU3, a bus id)
    stand for all of their kind."""
    for pattern, wild in _WILD:
        if pattern.fullmatch(k):
            return wild
    return k


class Observed:
    """Over a corpus of derived models: the JSON types seen at each path, and for each
    object path which keys it sometimes lacks (and how many keys it holds)."""

    def __init__(self) -> None:
        self.types: Dict[str, Set[str]] = {}
        self.keys_always: Dict[str, Set[str]] = {}
        self.sizes: Dict[str, Set[int]] = {}

    def add(self, model: Any) -> None:
        types, always, sizes = self.types, self.keys_always, self.sizes
        stack = [(model, "$")]
        while stack:
            v, path = stack.pop()
            kind = _KINDS[type(v)]
            seen = types.get(path)
            if seen is None:
                types[path] = {kind}
            else:
                seen.add(kind)
            if kind == "dict":
                keys = {_key(k) for k in v}
                sizes.setdefault(path, set()).add(len(v))
                if path in always:
                    always[path] &= keys
                else:
                    always[path] = keys
                stack.extend((x, f"{path}.{_key(k)}") for k, x in v.items())
            elif kind == "list":
                item = path + "[]"
                stack.extend((x, item) for x in v)

    def sometimes_absent(self, parent: str, key: str) -> bool:
        """Whether derive leaves this key out of an object at ``parent`` (one of many
        numbered keys: whether their number varies)."""
        if _key(key) != key:
            return len(self.sizes.get(parent, ())) > 1
        return key not in self.keys_always.get(parent, {key})


#: Layouts beyond the CASES' (every layout's cache is proved equal to re-deriving in
#: test_snapshot_cache.py; these add NVLink meshes, NVSwitch generations, PCIe boards,
#: Grace and Blackwell parts).
MORE_LAYOUTS = ("dgx-1-v100", "dgx-2", "dgx-station-v100", "gb200-nvl72-tray", "gh200-4",
                "hgx-a100-4", "hgx-h100-4", "dgx-b200", "gcp-a3-ultragpu-8g",
                "aws-p4d-24xlarge")


def _corpus_docs(tmp: Path) -> List[Dict[str, Any]]:
    """The inputs nvtopo reads: the CASES, more simulated nodes (healthy and faulty), every
    fixture NVML machine and sysfs tree, every topo and nvml text of the corpus."""
    docs = [_case_doc(name, tmp) for name in CASES]
    docs += [simulate(layouts.load(n), [], seed=3) for n in MORE_LAYOUTS]
    docs += [simulate(layouts.load("dgx-h100"), ["pcie-gen:GPU5:3", "peermem-missing",
                                                 "nic-affinity-swap:mlx5_0:mlx5_3"], seed=5),
             simulate(layouts.load("dgx-h100"), ["nvlink-degraded:GPU2-GPU6"], seed=6),
             simulate(layouts.load("dgx-1-v100"), ["nvlink-degraded:GPU0-GPU3",
                                                   "gpu-missing:GPU7"], seed=7)]
    docs += [nvml_fake.snapshot_doc(m) for m in nvml_fake.machines()]
    docs += [_sysfs_doc(p.stem, tmp) for p in sorted((FIXTURES / "sysfs").glob("*.sysfs"))]
    docs += [snapshot.load_document(str(p)) for p in
             sorted((FIXTURES / "topo-corpus").glob("*.txt"))
             + sorted((FIXTURES / "nvml-text").glob("*.txt"))]
    return docs


def _noting_cache(path: str) -> Tuple[Any, Any]:
    """The model, and whether it came from the file's sealed cache."""
    opened = snapshot.open_input(snapshot.Input(path=path))
    return opened.model, opened.cached


def _nvml(evidence: Dict[str, Any]) -> Dict[str, Any]:
    return {"host": {}, "probes": {"nvml": evidence}}


def _sysfs(evidence: Dict[str, Any]) -> Dict[str, Any]:
    return {"host": {}, "probes": {"sysfs": evidence}}


def _variant_docs(tmp: Path) -> Iterator[Dict[str, Any]]:
    """Evidence as probes record it on machines less tidy than the fixtures, one fact at a
    time: what derive makes of these is what it produces, so a cache may hold it.

    NVML: every call of a two-GPU recording unsupported (and the recording cut short
    there), no remote PCI answer at all, every fabric member absent, other health masks, no
    pynvml at all.  sysfs: every file, link and directory of small trees missing, every name
    of every listing missing, every kind of file of a DGX H100 tree missing or unreadable
    garbage, a peermem version, device-level counters.  Pasted text: every line of every
    nvml-text fixture left out, and a fabric block as newer drivers print it."""
    desc = nvml_fake.load_machine("dgx-h100")
    desc["gpus"] = desc["gpus"][:2]
    rec = nvml_fake.record(desc)
    keys = list(rec["calls"])
    for i, key in enumerate(keys):
        yield _nvml(dict(rec, calls=dict(rec["calls"], **{key: {"error": "NotSupported",
                                                                 "code": 3}})))
        if i % 7 == 0:
            yield _nvml(dict(rec, status="timeout", calls={k: rec["calls"][k] for k in keys[:i]},
                             pending={"call": key, "gpu": None, "waited_s": 1.0}))
    no_remote = {k: {"error": "NotSupported", "code": 3} for k in keys
                 if k.startswith("nvmlDeviceGetNvLinkRemotePciInfo(")}
    yield _nvml(dict(rec, calls=dict(rec["calls"], **no_remote)))
    fabric_key = "nvmlDeviceGetGpuFabricInfoV(gpu0)"
    fabric = rec["calls"][fabric_key]["value"]
    for value in [{k: v for k, v in fabric.items() if k != drop} for drop in fabric] + [
            dict(fabric, healthMask=mask) for mask in (0x5555, 0xAAAA, 0)]:
        yield _nvml(dict(rec, calls=dict(rec["calls"], **{fabric_key: {"value": value}})))
    yield _nvml({"evidence_version": 1, "status": "unavailable", "library": None,
                 "error": "nvidia-ml-py (pynvml) is not installed: no module", "timeout_s": 30.0,
                 "duration_s": None, "ncalls": 0, "pending": None, "calls": {}})
    for name in ("roce-bond", "vm"):
        ev = _sysfs_doc(name, tmp)["probes"]["sysfs"]
        for part in ("files", "links", "dirs"):
            for path in ev[part]:
                yield _sysfs(dict(ev, **{part: {k: v for k, v in ev[part].items() if k != path}}))
        for path, names in ev["dirs"].items():
            for n in names:
                yield _sysfs(dict(ev, dirs=dict(ev["dirs"], **{path: [x for x in names
                                                                      if x != n]})))
        for hca in [p for p in ev["dirs"] if p.rsplit("/", 2)[-2:-1] == ["infiniband"]][:1]:
            yield _sysfs(dict(ev, dirs=dict(ev["dirs"], **{hca + "/hw_counters": [
                "rx_write_requests", "lifespan"]}), files=dict(ev["files"], **{
                    hca + "/hw_counters/rx_write_requests": "7\n"})))
    ev = _sysfs_doc("dgx-h100", tmp)["probes"]["sysfs"]
    yield _sysfs(dict(ev, dirs=dict(ev["dirs"], **{"module/nvidia_peermem": ["version"]}),
                      files=dict(ev["files"], **{"module/nvidia_peermem/version": "1.1\n"})))
    for base in sorted({p.rsplit("/", 1)[-1] for p in ev["files"]}):
        kept = {k: v for k, v in ev["files"].items() if k.rsplit("/", 1)[-1] != base}
        yield _sysfs(dict(ev, files=kept))
        yield _sysfs(dict(ev, files=dict(ev["files"], **{k: "garbage\n" for k in ev["files"]
                                                         if k not in kept})))
    # the AER counters (a tree that has them): each file missing or garbage, one device's
    # files all gone, a device whose counts are all zero
    ev = _sysfs_doc("dgx-h100-faults", tmp)["probes"]["sysfs"]
    aer = sorted(k for k in ev["files"] if k.rsplit("/", 1)[-1].startswith("aer_dev_"))
    for base in sorted({k.rsplit("/", 1)[-1] for k in aer}):
        hit = [k for k in aer if k.endswith("/" + base)]
        yield _sysfs(dict(ev, files={k: v for k, v in ev["files"].items() if k not in hit}))
        yield _sysfs(dict(ev, files=dict(ev["files"], **{k: "garbage\n" for k in hit})))
    if aer:
        device = aer[0].rsplit("/", 1)[0]
        mine = [k for k in aer if k.startswith(device + "/")]
        yield _sysfs(dict(ev, files={k: v for k, v in ev["files"].items() if k not in mine}))
        yield _sysfs(dict(ev, files=dict(ev["files"], **{
            k: "".join(f"{line.split()[0]} 0\n" for line in v.splitlines() if line.split())
            for k, v in ev["files"].items() if k in aer})))
    paths = sorted((FIXTURES / "nvml-text").glob("*.txt"))
    texts = [p.read_text(encoding="utf-8") for p in paths]
    texts.append((FIXTURES / "nvml-text" / "nvidia_smi_q_h800_pci_and_fabric_excerpt.txt")
                 .read_text(encoding="utf-8").replace(
        "        Status                            : Success\n",
        "        Status                            : Success\n"
        "        CliqueId                          : 32766\n"
        "        ClusterUUID                       : 7d3f1e0b-9a2c-4d5e-8f60-718293a4b5c6\n"
        "        Health\n"
        "            Bandwidth                     : Full\n"
        "            Route Recovery in progress    : False\n"
        "            Route Unhealthy               : False\n"
        "            Access Timeout Recovery       : False\n"
        "            Summary                       : Healthy\n", 1))
    for text in texts:
        lines = text.splitlines(keepends=True)
        for i in range(len(lines)):
            yield _nvml(snapshot_document.nvml_text_evidence("".join(lines[:i] + lines[i + 1:])))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Tuple[Path, Observed, List[Dict[str, Any]]]:
    """(a tmp directory, what derive produces over the corpus and its variants, the models
    of the corpus itself)."""
    tmp = tmp_path_factory.mktemp("cache-validation")
    seen = Observed()
    models = []
    for doc in _corpus_docs(tmp):
        body = snapshot.derive(doc).to_dict()
        body.pop("origin")
        seen.add(body)
        models.append(body)
    for doc in _variant_docs(tmp):
        body = snapshot.derive(doc).to_dict()
        body.pop("origin")
        seen.add(body)
    return tmp, seen, models


# --- what the commands make of a model --------------------------------------------------------


def _console() -> Console:
    return Console(file=io.StringIO(), width=120, force_terminal=True,
                   color_system="truecolor")


def views(topo: Any, tables: bool = True) -> Dict[str, str]:
    """What check, links, ib and show print for a model, as JSON and as tables (a refusal,
    one NvtopoError, is an answer too)."""
    out: Dict[str, str] = {}

    def run(name: str, fn: Callable[[], str]) -> None:
        try:
            out[name] = fn()
        except NvtopoError as exc:
            out[name] = f"error: {exc}"

    def table(print_it: Callable[[Console], None]) -> str:
        c = _console()
        print_it(c)
        return c.file.getvalue()

    report = checks.select_and_run(topo)
    out["check.json"] = json.dumps(report.document())
    run("links.json", lambda: json.dumps(render_links.links_doc(topo, where="input")))
    sysfs = render_ib.has_sysfs(topo)
    if sysfs:
        out["ib.json"] = json.dumps(render_ib.document(topo))
    out["show.json"] = json.dumps(topo.to_dict())
    if tables:
        out["check.table"] = table(lambda c: render_check.print_check(report, c))
        run("links.table", lambda: table(lambda c: render_links.print_links(
            render_links.links_doc(topo, where="input"), c)))
        if sysfs:
            out["ib.table"] = table(lambda c: render_ib.print_ib(topo, c))
        if topo.gpus or topo.matrix is not None or topo.p2p is not None:
            out["show.table"] = table(lambda c: render_matrix.print_topology(topo, c))
    return out


# --- mutations ----------------------------------------------------------------------------------

#: One value of every JSON type: a lone-surrogate string, a huge integer (also in place of
#: integers), a float, a boolean, null, a list, an object.
REPLACEMENTS: Tuple[Any, ...] = ("x\ud800", 10 ** 40, 1.5, True, None, [7], {})
_DELETE = object()


def _targets(model: Dict[str, Any]) -> List[Tuple[str, str, Any, Any]]:
    """One place for every distinct key path of the model (list items collapsed):
    ``(path, parent path, container, key)``, containers and leaves alike."""
    out: Dict[str, Tuple[str, str, Any, Any]] = {}

    def walk(v: Any, path: str) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                p = f"{path}.{_key(k)}"
                out.setdefault(p, (p, path, v, k))
                walk(x, p)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                p = path + "[]"
                out.setdefault(p, (p, path, v, i))
                walk(x, p)

    walk(model, "$")
    return list(out.values())


def _mutations(original: Any, in_dict: bool) -> List[Any]:
    kind = _kind(original)
    out = [r for r in REPLACEMENTS if _kind(r) != kind or r == 10 ** 40]
    return out + ([_DELETE] if in_dict else [])


def _mutate(container: Any, key: Any, new: Any) -> Callable[[], None]:
    """Set (or delete) ``container[key]``; returns what puts it back as it was (in its
    place: key order is part of the file)."""
    original = container[key]
    if new is not _DELETE:
        container[key] = new

        def put_back() -> None:
            container[key] = original
        return put_back
    order = list(container)
    del container[key]

    def reinsert() -> None:
        rest = dict(container)
        container.clear()
        container.update((k, original if k == key else rest[k]) for k in order)
    return reinsert


def _what(path: str, new: Any) -> str:
    return f"{path} := {'(deleted)' if new is _DELETE else repr(new)[:30]}"


def _crash(topo: Any) -> str:
    """The exception a command's JSON output raises on this model, or ``""``."""
    try:
        views(topo, tables=False)
    except Exception as exc:  # noqa: BLE001 - any exception but NvtopoError is the finding
        return f"{type(exc).__name__}: {exc}"
    return ""


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _reseal(text: str, cache: Dict[str, Any]) -> str:
    """The file with ``cache`` as its ``"derived"`` block, sealed as ``dumps`` seals."""
    head = text[:text.index(',\n  "derived": ')]
    cache = dict(cache, file_sha256="0" * 64)
    raw = (head + ',\n  "derived": ' + json.dumps(cache, separators=(",", ":")) + "\n}\n"
           ).encode("utf-8", errors="surrogatepass")
    at = raw.rindex(b"0" * 64)
    seal = hashlib.sha256(raw).hexdigest().encode("ascii")
    return (raw[:at] + seal + raw[at + 64:]).decode("utf-8")


def _model_of(cache: Dict[str, Any]) -> Dict[str, Any]:
    """The JSON form of a cache's model (its ``rows``, nvtopo/model/rows.py), as the corpus
    models are written: without ``origin``."""
    body = Topology.from_rows(json.loads(json.dumps(cache["rows"]))).to_dict()
    body.pop("origin")
    return body


def _with_rows(cache: Dict[str, Any], model: Any) -> Dict[str, Any]:
    """The cache holding the rows that the JSON form ``model`` stands for, no type checked
    (``Topology.rows_from_dict``: a wrong type stays where it is; a missing or unknown key
    makes a row of the wrong length), so each mutation of the JSON form is one of the rows."""
    return dict(cache, rows=Topology.rows_from_dict(model))


_DOCS: Dict[str, Dict[str, Any]] = {}


def _case_doc(name: str, tmp: Path) -> Dict[str, Any]:
    if name not in _DOCS:
        _DOCS[name] = CASES[name](tmp)
    return _DOCS[name]


def _sealed_case(name: str, tmp: Path) -> Tuple[Path, str]:
    path = tmp / f"{name}.json"
    if not path.exists():
        path.write_text(snapshot.dumps(_case_doc(name, tmp)), encoding="utf-8")
    return path, path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_mistyped_key_path_of_a_resealed_cache_is_rederived(name, corpus):
    tmp, seen, _models = corpus
    path, text = _sealed_case(name, tmp)
    topo, cached = _noting_cache(str(path))
    assert cached is True, "the unmutated cache must be used, or this test proves nothing"
    want = topo.to_dict()
    base_views = views(topo)

    doc = json.loads(text)
    cache, host, version = doc["derived"], doc.get("host"), doc.get("nvtopo_version")
    model = _model_of(cache)

    def load() -> Any:  # what a sealed read does once the seal holds (of these rows)
        return snapshot_cache._from_cache(_with_rows(cache, model), host, version, str(path))

    targets = _targets(model)
    assert len(targets) > 30
    wrong: List[str] = []
    rejected: List[Tuple[str, Any, Any, Any]] = []
    accepted: List[Tuple[str, Any, Any, Any]] = []
    tried = 0
    for path_s, parent, container, key in targets:
        for new in _mutations(container[key], isinstance(container, dict)):
            tried += 1
            undo = _mutate(container, key, new)
            try:
                got = load()
            finally:
                undo()
            if got is None:  # the file is re-derived (proved below on a sample of files)
                if new is not _DELETE:
                    rejected.append((path_s, container, key, new))
                continue
            accepted.append((path_s, container, key, new))
            what = _what(path_s, new)
            if new is _DELETE:
                if not seen.sometimes_absent(parent, key):
                    wrong.append(f"{what}: accepted, but derive always writes this key")
            elif _kind(new) not in seen.types.get(path_s, set()):
                wrong.append(f"{what}: accepted, but derive never gives a {_kind(new)} "
                             f"here ({sorted(seen.types.get(path_s, ()))})")
    assert _same(model, _model_of(json.loads(text)["derived"])), "the mutations were not undone"
    assert not wrong, f"{len(wrong)} of {tried} mutations ({len(accepted)} accepted):\n" + \
        "\n".join(wrong[:40])

    # What was accepted (null where derive gives null, ...) must not crash a command: tried
    # eight at a time (a crash is then pinned on one of its group).
    for at in range(0, len(accepted), 8):
        group = accepted[at:at + 8]
        undos = [_mutate(container, key, new) for _p, container, key, new in group]
        try:
            got = load()
            assert got is not None, [_what(p, n) for p, _c, _k, n in group]
            crash = _crash(got)
        finally:
            for undo in reversed(undos):
                undo()
        if crash:
            for path_s, container, key, new in group:
                undo = _mutate(container, key, new)
                try:
                    crash = _crash(load())
                finally:
                    undo()
                if crash:
                    wrong.append(f"{_what(path_s, new)}: accepted, and a command crashed: "
                                 f"{crash}")
    assert not wrong, "\n".join(wrong[:40])
    assert _same(model, _model_of(json.loads(text)["derived"])), "the mutations were not undone"

    # A sample through real files: sealed anew, read as the commands read them, re-derived
    # to the very model (and so the very output) of the unmutated file.
    for i, (path_s, container, key, new) in enumerate(random.Random(name).sample(rejected, 6)):
        original = container[key]
        container[key] = new
        try:
            forged = tmp / f"{name}-forged.json"
            forged.write_text(_reseal(text, _with_rows(cache, model)), encoding="utf-8")
        finally:
            container[key] = original
        assert snapshot_cache._sealed(forged.read_bytes()) is not None, "the forgery is not sealed"
        got, cached = _noting_cache(str(forged))
        assert cached is False, f"{path_s} := {new!r}: a forged cache was used"
        got.origin.file = str(path)
        assert got.to_dict() == want, path_s
        if i == 0:
            assert views(got) == base_views, path_s


def test_a_resealed_cache_of_the_wrong_shape_gives_the_cli_the_unmutated_answer(corpus):
    """End to end: check, links, ib and show, JSON and tables, through the CLI."""
    from nvtopo.cli import app

    tmp = corpus[0]
    path, text = _sealed_case("dgx-h100-faults", tmp)
    doc = json.loads(text)
    cache = doc["derived"]
    model = _model_of(cache)
    forgeries = {
        "extra-not-a-dict": lambda m: m.__setitem__("extra", "nvml"),
        "gpu-nvml-none": lambda m: m["gpus"][0]["extra"].__setitem__("nvml", None),
        "link-remote-str": lambda m: m["gpus"][3]["extra"]["nvml"]["nvlink"]["links"][0]
        .__setitem__("remote", "GPU1"),
        "port-rate-huge": lambda m: m["nics"][0]["extra"]["sysfs"]["ports"][0].__setitem__(
            "rate_gbps", 10 ** 400),
        "hop-width-dict": lambda m: m["gpus"][5]["extra"]["sysfs"]["narrowest_hop"]
        .__setitem__("current_width", {"x": 1}),
        "switches-values-str": lambda m: m["extra"]["nvml"]["switches"].__setitem__(
            "x", {"0": "8"}),
    }
    runner = make_runner()
    commands = [["check"], ["check", "--format", "json"], ["links"],
                ["links", "--format", "json"], ["ib"], ["ib", "--format", "json"], ["show"],
                ["show", "--format", "json"]]

    def run_all(p: Path) -> List[Tuple[int, str]]:
        out = []
        for cmd in commands:
            res = runner.invoke(app, [*cmd, "--from", str(p)], env={"COLUMNS": "150"})
            assert res.exception is None or isinstance(res.exception, SystemExit), \
                (cmd, res.exception)
            out.append((res.exit_code, res.stdout.replace(str(p), "FILE")))
        return out

    want = run_all(path)
    assert want[0][0] == 1 and all(code in (0, 1) for code, _ in want)
    for label, change in forgeries.items():
        mutated = json.loads(json.dumps(model))
        change(mutated)
        forged = tmp / f"forged-{label}.json"
        forged.write_text(_reseal(text, _with_rows(cache, mutated)), encoding="utf-8")
        assert snapshot_cache._sealed(forged.read_bytes()) is not None
        assert run_all(forged) == want, label


def test_the_types_accept_every_model_the_corpus_derives(corpus):
    """The other direction: the types are not narrower than the models derive makes of the
    inputs nvtopo records (else their caches would never be used)."""
    _tmp, _seen, models = corpus
    assert len(models) > 60
    for tier in (10 ** 9, 1):  # the generic row decoders, then the compiled ones
        model_rows.COMPILE_FROM = tier
        try:
            for body in models:
                topo = snapshot_cache.typed_model(body)
                assert topo is not None, (body["host"], body["sources"])
                rows = json.loads(json.dumps(Topology.rows_from_dict(body)))
                assert snapshot_cache.typed_rows(rows) == topo, (body["host"], tier)
        finally:
            model_rows.COMPILE_FROM = 3


def _pcie(**kw: Any) -> Dict[str, Any]:
    return dict({k: None for k in ("current_gen", "max_gen", "gpu_max_gen", "current_width",
                                   "max_width", "replay_counter")}, **kw)


def _port_rate(**kw: Any) -> Dict[str, Any]:
    return dict({"raw": None, "gbps": None, "lanes": None, "width": None, "speed": None}, **kw)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 2 ** 72 + 1,
                                   -(2 ** 72) - 1, True, "1", [1]])
def test_a_number_out_of_range_or_of_another_type_is_no_cached_counter(value):
    from nvtopo.model.nvml import GpuPcie
    from nvtopo.model.rdma import PortRate

    for ok in (5, None, 2 ** 72, -(2 ** 72)):
        assert GpuPcie.from_dict(_pcie(replay_counter=ok)).replay_counter == ok
    assert PortRate.from_dict(_port_rate(gbps=2.5)).gbps == 2.5
    with pytest.raises(ValueError, match=r"^\$\.replay_counter: expected int or null"):
        GpuPcie.from_dict(_pcie(replay_counter=2.5))
    with pytest.raises(ValueError, match=r"^\$\.replay_counter: expected int or null"):
        GpuPcie.from_dict(_pcie(replay_counter=value))
    with pytest.raises(ValueError, match=r"^\$\.gbps: expected int or float or null"):
        PortRate.from_dict(_port_rate(gbps=value))
    for tier in (10 ** 9, 1):  # as rows: the generic decoders, then the compiled ones
        model_rows.COMPILE_FROM = tier
        try:
            row = model_rows.rows_from_json(GpuPcie, _pcie(replay_counter=value))
            with pytest.raises(ValueError, match=r"^\$\.replay_counter: expected int or nu"):
                model_rows.decode_rows(GpuPcie, row)
            row = model_rows.rows_from_json(PortRate, _port_rate(gbps=value))
            with pytest.raises(ValueError, match=r"^\$\.gbps: expected int or float or null"):
                model_rows.decode_rows(PortRate, row)
            for ok in (5, None, 2 ** 72, -(2 ** 72)):
                row = model_rows.rows_from_json(GpuPcie, _pcie(replay_counter=ok))
                assert model_rows.decode_rows(GpuPcie, row).replay_counter == ok
        finally:
            model_rows.COMPILE_FROM = 3


def test_a_value_nested_deeper_than_the_types_is_walked_no_deeper():
    from nvtopo.model import Topology

    deep: Any = 1
    for _ in range(50_000):  # far past the interpreter's recursion limit
        deep = [deep]
    body = Topology().to_dict()
    body["extra"] = {"sysfs": {"nvme": deep}}
    with pytest.raises(ValueError, match="extra.sysfs"):
        Topology.from_dict(body)
    assert snapshot_cache.typed_model(body) is None
    assert snapshot_cache.typed_model(deep) is None
    assert snapshot_cache.typed_rows(Topology.rows_from_dict(body)) is None
    assert snapshot_cache.typed_rows(deep) is None
    body["extra"] = {"a-later-source": deep}  # kept by from_dict (an open map), unwalked ...
    assert Topology.from_dict(body).extra == {"a-later-source": deep}
    assert snapshot_cache.typed_model(body) is None  # ... but no cache holds what no probe derives


# --- the rows themselves (the cache's form: nvtopo/model/rows.py) ------------------------------


def _row_targets(rows: Any) -> List[Tuple[str, type, List[Any], int]]:
    """One place for every distinct field of a record in the rows (items of lists and
    objects collapsed: ``$.gpus[].extra.nvml``): its path, its record class, its row, its
    position.  Records kept in their JSON form inside rows (host, origin) are the tests
    above's."""
    from nvtopo.model.codec import fields_of

    seen: Set[str] = set()
    out: List[Tuple[str, type, List[Any], int]] = []
    stack: List[Tuple[Any, Tuple[Any, ...], str]] = [(rows, ("rec", Topology, False), "$")]
    while stack:
        v, spec, path = stack.pop()
        if spec[0] == "rec" and type(v) is list and not model_rows._json_form(spec[1]):
            for i, (f, x) in enumerate(zip(fields_of(spec[1]), v)):
                p = f"{path}.{f.key}"
                if p not in seen:
                    seen.add(p)
                    out.append((p, spec[1], v, i))
                stack.append((x, model_rows._row_spec(f), p))
        elif spec[0] == "list" and type(v) is list:
            stack.extend((x, spec[1], path + "[]") for x in v)
        elif spec[0] == "dict" and type(v) is dict:
            stack.extend((x, spec[1], path + "{}") for x in v.values())
    return out


_ROW_MUTATIONS = [None, True, 0, 2 ** 80, 1.5, float("nan"), "x", "\ud800", [], {}]


@pytest.mark.parametrize("tier", ["generic", "compiled"])
@pytest.mark.parametrize("name", ["dgx-h100-faults", "nvml-dgx-a100-mig", "sysfs-roce-bond"])
def test_every_mistyped_value_of_the_rows_is_refused_or_means_what_the_json_form_does(
        name, tier, corpus):
    """Each field of each record in the cache's rows set to every other JSON type, and each
    row made one value shorter and one longer: the record's row decoder (generic, or
    compiled) refuses it, or gives a record the JSON form's strict decoder accepts and that
    writes back to these very rows.  So the rows accept nothing the JSON form refuses (the
    tests above prove, through the JSON form, that what it accepts is what derive
    produces); the whole model is read through rows alike (``typed_rows``)."""
    from nvtopo.model.codec import decode
    from nvtopo.model.rows_compiled import compiled_decoder

    tmp = corpus[0]
    _path, text = _sealed_case(name, tmp)
    rows = json.loads(text)["derived"]["rows"]
    assert snapshot_cache.typed_rows(json.loads(json.dumps(rows))) is not None
    def read(cls: type) -> Any:
        return compiled_decoder(cls, model_rows) if tier == "compiled" \
            else model_rows.row_decoder(cls)

    def outcome(cls: type, row: List[Any]) -> str:
        written = json.dumps(row)
        whole = cls is Topology  # the model: its header and host facts are checked too
        try:
            got = Topology.from_rows(json.loads(written)) if whole \
                else read(cls)(json.loads(written))
        except Exception as exc:  # noqa: BLE001 - the codec's mismatch, whatever its class
            assert type(exc).__name__ in ("_Bad", "ValueError"), exc
            return "refused"
        body = got.to_dict()
        if whole:
            Topology.from_dict(json.loads(json.dumps(body)))  # (raises where it refuses)
            again = Topology.rows_from_dict(body)
        else:
            decode(cls, json.loads(json.dumps(body)))
            again = model_rows.rows_from_json(cls, body)
        assert json.dumps(again) == written, "the row means another record than its JSON form"
        return "accepted"

    counts = {"refused": 0, "accepted": 0}
    targets = _row_targets(rows)
    assert len(targets) > 60
    rows_seen = []
    for path, cls, row, i in targets:
        original = row[i]
        if i == 0:
            rows_seen.append((path, cls, row))
        for new in _ROW_MUTATIONS:
            if type(new) is type(original) and new == original:
                continue
            row[i] = new
            try:
                counts[outcome(cls, row)] += 1
            except (AssertionError, ValueError) as exc:
                raise AssertionError(f"{path} := {new!r}: {exc}") from None
            finally:
                row[i] = original
    for path, cls, row in rows_seen:  # each record's row, one value short and one too many
        assert outcome(cls, row[:-1]) == "refused", f"{path}: a row one value short"
        assert outcome(cls, row + [None]) == "refused", f"{path}: a row one value long"
    assert json.loads(text)["derived"]["rows"] == rows, "the mutations were not undone"
    assert counts["refused"] > 3 * counts["accepted"] > 0, counts


def test_every_gpu_nic_path_at_once_is_each_one_asked_alone(corpus):
    """``Topology.gpu_nic_paths`` (every GPU to every NIC, the NICs looked up once: what
    the checks read through ``facts.nic_path``) answers what ``gpu_nic_path`` answers for
    each pair, over every model the corpus derives (matrix cells, mirrored cells, NICs
    under labels and names, sysfs's PCI paths, neither)."""
    _tmp, _seen, models = corpus
    pairs = 0
    for body in models:
        topo = Topology.from_dict(json.loads(json.dumps(body)))
        gpus = sorted({g.index for g in topo.gpus}) + [999]
        bulk = topo.gpu_nic_paths(gpus)
        want = {(g, n.name): topo.gpu_nic_path(g, n.name) for n in topo.nics for g in gpus}
        assert bulk == want, body["host"]
        pairs += sum(1 for tok, _ in want.values() if tok is not None)
    assert pairs > 500  # (the corpus has NICs with known paths to compare)


@pytest.mark.parametrize("layout,faults", [("dgx-h100", ["nvlink-down:GPU3:7"]),
                                           ("gb200-nvl72-tray", [])])
def test_every_value_of_a_container_is_tested_alike_by_both_tiers_at_every_size(layout, faults):
    """The compiled decoders test a container of plain values (a link's error counters, a
    matrix row) value by value, inline, up to ``_SMALL`` values, and in C-level passes past
    that: at sizes on both sides, with each kind of wrong value first, in the middle and
    last (and with none), each such field of each record of a sealed cache is refused or
    accepted by the compiled decoder exactly as by the generic one, and what is accepted
    decodes to the same values."""
    from nvtopo.model.codec import fields_of
    from nvtopo.model.rows_compiled import _EVERY, _SMALL, compiled_decoder
    from nvtopo.simulate import simulate

    rows = json.loads(snapshot.dumps(simulate(layouts.load(layout), faults, seed=2)))[
        "derived"]["rows"]
    targets = []
    for path, cls, row, i in _row_targets(rows):
        spec = model_rows._row_spec(fields_of(cls)[i])
        if spec[0] in ("list", "dict") and spec[1][0] == "leaf" and spec[1][1] in _EVERY:
            targets.append((path, cls, row, i, spec))
    kinds = {spec[0] for *_, spec in targets}
    assert kinds == {"list", "dict"} and len(targets) >= 4, [t[0] for t in targets]
    from nvtopo.model.spec import LIMIT

    # (wrong or right by type or by bound: the bounds themselves and one past, a negative
    # in range, zero, False beside 0)
    wrong = [True, False, 1.5, float("nan"), 2 ** 80, -(2 ** 80), LIMIT, -LIMIT, LIMIT + 1,
             -LIMIT - 1, -1, 0, "x", "", None, [], {}]
    counts = {"refused": 0, "accepted": 0}

    def verdict(decode: Any, row: List[Any], i: int) -> Any:
        try:
            return getattr(decode(json.loads(json.dumps(row))), fields_of(cls)[i].name)
        except model_rows._Bad:
            return "refused"

    for path, cls, row, i, spec in targets:
        original = row[i]
        good = 7 if int in spec[1][1] else "ok"
        sizes = {0, 1, _SMALL - 1, _SMALL, _SMALL + 1, 2 * _SMALL + 3}
        if spec[0] == "dict" and len(spec) > 3 and spec[3] is not None:
            sizes.add(spec[3])  # (a dict of a fixed size: that size too)
        for size in sorted(sizes):
            for bad in wrong + [good]:
                for at in sorted({0, size // 2, size - 1}) if size else [None]:
                    values = [good] * size
                    if at is not None:
                        values[at] = bad
                    row[i] = values if spec[0] == "list" else {
                        f"k{j}": x for j, x in enumerate(values)}
                    want = verdict(model_rows.row_decoder(cls), row, i)
                    got = verdict(compiled_decoder(cls, model_rows), row, i)
                    assert json.dumps(got) == json.dumps(want), (path, size, bad, at)
                    counts["refused" if want == "refused" else "accepted"] += 1
        row[i] = original
    assert counts["refused"] > counts["accepted"] > 0, counts
