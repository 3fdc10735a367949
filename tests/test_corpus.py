"""The real-world ``nvidia-smi topo`` corpus, parsed file by file.

``fixtures/topo-corpus/NAME.txt`` is one published output, kept byte for byte (its source is in
``fixtures/topo-corpus/MANIFEST.md``).  Beside it, ``NAME.expected.json`` holds its expected parse,
written out by hand from reading the raw file (``cat -A``), not derived from the file at test
time and not pasted from the parser's output.  Rows are the cells of the printed matrix joined by
single spaces (``" X "`` printed cells are ``X``; ``SOC`` stays ``SOC``).  Each GPU maps to its
``cpu_affinity``, ``numa_affinity`` and ``gpu_numa_id``: ``null`` where the field is empty,
``N/A`` or its column is absent.  ``nics`` are ``[label as printed, name through the NIC
Legend]``; ``nvlinks`` are ``[a, b, NV#]``; ``notes`` (optional) are info note codes that must
be present.  The format is described in docs/testing.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nvtopo.probes.topo import parse

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "topo-corpus"
#: Where the project's shared corpus lives on the development machines; the fixtures are a
#: byte-for-byte copy of its topo directory.  Test data only: the comparison skips without it.
SHARED_CORPUS = Path("/work/shared/corpus/topo")

EXPECTED_SUFFIX = ".expected.json"
#: The keys an expectation file holds: every one required, except ``notes`` and ``comment``.
REQUIRED_KEYS = {"kind", "devices", "rows", "gpus", "nics", "nvlinks", "legend_style"}
OPTIONAL_KEYS = {"notes", "comment"}
GPU_KEYS = ["cpu_affinity", "numa_affinity", "gpu_numa_id"]
LEGEND_STYLES = {"modern", "transitional", "soc", "p2p", None}


def _load_expected(path: Path) -> dict:
    """One expectation file, checked for shape so that a typo cannot weaken a test."""
    exp = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(exp, dict), path.name
    keys = set(exp)
    assert REQUIRED_KEYS <= keys, f"{path.name}: missing {sorted(REQUIRED_KEYS - keys)}"
    assert keys <= REQUIRED_KEYS | OPTIONAL_KEYS, f"{path.name}: unknown {sorted(keys - REQUIRED_KEYS - OPTIONAL_KEYS)}"
    assert exp["kind"] in ("matrix", "p2p"), path.name
    assert exp["devices"] and all(isinstance(d, str) for d in exp["devices"]), path.name
    assert all(isinstance(r, str) for r in exp["rows"]), path.name
    assert exp["gpus"], path.name
    for label, fields in exp["gpus"].items():
        assert list(fields) == GPU_KEYS, f"{path.name}: {label}"
        assert isinstance(fields["cpu_affinity"], (str, type(None))), f"{path.name}: {label}"
        assert isinstance(fields["numa_affinity"], (str, type(None))), f"{path.name}: {label}"
        assert isinstance(fields["gpu_numa_id"], (int, type(None))), f"{path.name}: {label}"
    assert all(isinstance(n, list) and len(n) == 2 and all(isinstance(x, str) for x in n)
               for n in exp["nics"]), path.name
    assert all(isinstance(p, list) and len(p) == 3 and all(type(x) is int for x in p)
               for p in exp["nvlinks"]), path.name
    nvlinks = {tuple(p) for p in exp["nvlinks"]}
    assert len(nvlinks) == len(exp["nvlinks"]), f"{path.name}: an NVLink pair is listed twice"
    assert exp["legend_style"] in LEGEND_STYLES, path.name
    notes = exp.get("notes", [])
    assert all(isinstance(n, str) for n in notes), path.name
    return {
        "kind": exp["kind"],
        "devices": exp["devices"],
        "rows": exp["rows"],
        "gpus": {label: tuple(f[k] for k in GPU_KEYS) for label, f in exp["gpus"].items()},
        "nics": [tuple(n) for n in exp["nics"]],
        "nvlinks": nvlinks,
        "legend_style": exp["legend_style"],
        "notes": set(notes),
    }


STEMS = sorted(p.name[: -len(EXPECTED_SUFFIX)] for p in CORPUS.glob("*" + EXPECTED_SUFFIX))
CASES = {stem: _load_expected(CORPUS / f"{stem}{EXPECTED_SUFFIX}") for stem in STEMS}


def _parse(stem):
    return parse((CORPUS / f"{stem}.txt").read_bytes().decode("utf-8"))


def _published_files(directory: Path):
    """The published outputs and their MANIFEST: every file but the expectations beside them."""
    return sorted(p.name for p in directory.iterdir()
                  if p.is_file() and not p.name.endswith(EXPECTED_SUFFIX))


# --- the copy ----------------------------------------------------------------


def test_fixture_copy_matches_shared_corpus():
    if not SHARED_CORPUS.is_dir():
        pytest.skip(f"shared corpus not present at {SHARED_CORPUS}; "
                    "cannot check the fixtures/topo-corpus copy against it")
    shared = sorted(p.name for p in SHARED_CORPUS.iterdir() if p.is_file())
    copy = _published_files(CORPUS)
    assert copy == shared
    for name in shared:
        assert (CORPUS / name).read_bytes() == (SHARED_CORPUS / name).read_bytes(), name


def test_every_corpus_file_has_a_case():
    files = sorted(p.stem for p in CORPUS.glob("*.txt"))
    assert len(files) == 30
    assert files == STEMS


def test_every_expectation_file_has_its_input():
    for p in CORPUS.glob("*.json"):
        assert p.name.endswith(EXPECTED_SUFFIX), p.name
        assert (CORPUS / (p.name[: -len(EXPECTED_SUFFIX)] + ".txt")).is_file(), p.name


# --- per-file expectations ----------------------------------------------------


@pytest.mark.parametrize("stem", STEMS)
def test_corpus_file(stem):
    exp = CASES[stem]
    topo = _parse(stem)

    # kind: path matrix vs P2P status matrix
    if exp["kind"] == "p2p":
        assert topo.matrix is None
        assert topo.p2p is not None
        m = topo.p2p
    else:
        assert topo.p2p is None
        assert topo.matrix is not None
        m = topo.matrix

    # devices in printed order
    assert m.devices == exp["devices"]

    # the full matrix, row by row
    assert len(exp["rows"]) == len(exp["devices"])
    got_rows = []
    for row in m.cells:
        assert None not in row
        got_rows.append(" ".join(row))
    assert got_rows == exp["rows"]

    # GPUs and their affinity fields
    assert [g.label for g in topo.gpus] == list(exp["gpus"])
    for g in topo.gpus:
        cpu, numa, numa_id = exp["gpus"][g.label]
        assert g.index == int(g.label[3:])
        assert (g.label, g.cpu_affinity) == (g.label, cpu)
        assert (g.label, g.numa_affinity) == (g.label, numa)
        assert (g.label, g.gpu_numa_id) == (g.label, numa_id)

    # NICs: label as printed, name through the NIC Legend
    assert [(n.label, n.name) for n in topo.nics] == exp["nics"]

    # NVLink pairs
    assert {(p.a, p.b, p.count) for p in topo.nvlinks} == exp["nvlinks"]

    # legend style
    assert topo.topo_text.to_dict()["legend_style"] == exp["legend_style"]

    # notes: nothing lost or guessed; expected info notes present
    warnings = [(n.code, n.message) for n in topo.notes if n.level == "warning"]
    assert warnings == []
    codes = {n.code for n in topo.notes}
    assert exp["notes"] <= codes
    if "topo.no_nic_legend" not in exp["notes"]:
        assert "topo.no_nic_legend" not in codes


# --- the MANIFEST cross-check ---------------------------------------------------


def _manifest_rows():
    text = (CORPUS / "MANIFEST.md").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if all(re.fullmatch(r"-+", c) for c in cells if c):
            continue  # the |---|---| separator
        assert len(cells) == len(header), ln
        rows.append(dict(zip(header, cells)))
    return rows


def test_manifest_lists_every_corpus_file():
    names = [r["file"].strip("`") for r in _manifest_rows()]
    assert sorted(names) == [f"{s}.txt" for s in STEMS]


@pytest.mark.parametrize("row", _manifest_rows(), ids=lambda r: r["file"].strip("`")[:-4])
def test_manifest_counts_match_parse(row):
    stem = row["file"].strip("`")[: -len(".txt")]
    topo = _parse(stem)
    assert len(topo.gpus) == int(row["GPUs"])
    assert len(topo.nics) == int(row["NICs"])
