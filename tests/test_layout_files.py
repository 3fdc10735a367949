"""Layout files: every bundled one is valid; bad user files give one-line errors."""

import json
from pathlib import Path

import pytest

from nvtopo import layouts
from nvtopo.layouts.doc import Section
from nvtopo.errors import NvtopoError


@pytest.mark.parametrize("name", layouts.names())
def test_bundled_layouts_are_valid_and_named_after_their_file(name):
    # load() trusts bundled files (this test is what validates them): validate here
    text = (Path(layouts.__file__).parent / f"{name}.json").read_text(encoding="utf-8")
    assert layouts.parse(text, where=name).data == layouts.load(name).data
    lay = layouts.load(name)
    assert lay.name == name
    assert lay.title
    for sec in ("gpus", "nvlink", "nics", "numa"):
        section = getattr(lay, sec)
        if section.stated:
            subs = [x for x in vars(section).values() if isinstance(x, Section) and x.stated]
            assert section.evidence or (subs and all(x.evidence for x in subs)), \
                f"{name}: section {sec} without evidence"


@pytest.mark.parametrize("name", layouts.names())
def test_a_bundled_layouts_head_is_what_its_whole_document_says(name):
    """A bundled layout is decoded whole only when a section past ``selection`` and ``gpus``
    is read (auto selection reads those two of every layout): what it answers before is
    what the whole document says, and reading the rest decodes it."""
    text = (Path(layouts.__file__).parent / f"{name}.json").read_text(encoding="utf-8")
    whole = layouts.parse(text, where=name)
    lazy = layouts._load_bundled.__wrapped__(name)  # a fresh one, not the process's
    assert lazy._doc is None and lazy._head is not None
    assert (lazy.choice, lazy.gpus, lazy.title, lazy.priority, lazy.family,
            lazy.compute_nic_names) == (
        whole.doc.selection, whole.doc.gpus, whole.title, whole.priority, whole.family,
        whole.doc.nics.compute.names)
    assert lazy._doc is None  # (none of these decoded it whole)
    assert lazy.nvlink == whole.nvlink and lazy._doc is not None
    assert lazy.doc == whole.doc


def test_a_bundled_layout_that_is_not_a_plain_document_is_decoded_whole():
    """(the head is decoded only from an object whose name is the file's; anything else
    goes through the whole decode, whose error names the layout)"""
    assert layouts._head('{"name": "other", "schema": 1}', "dgx-h100") is None
    assert layouts._head('{"name": "x", "schema": 1, "gpus": []}', "x") is None
    assert layouts._head('[1]', "x") is None
    assert layouts._head('{"name": "x", "nics": {"compute": {"names": [1]}}}', "x") is None
    assert layouts._head('{"name": "x", "schema": 1, "gpus": {"count": "8"}}', "x") is None
    with pytest.raises(NvtopoError, match="layout x"):  # what _load_bundled then does
        layouts.parse('{"name": "x", "schema": 1, "gpus": {"count": "8"}}', where="layout x",
                      bounds=False)


def test_dgx1_v100_cube_mesh_as_printed():
    pairs = layouts.load("dgx-1-v100").nvlink.pairs
    nv2 = sorted(k for k, v in pairs.items() if v == 2)
    assert nv2 == sorted(["0-3", "0-4", "1-2", "1-5", "2-3", "4-7", "5-6", "6-7"])
    links = {g: 0 for g in range(8)}
    for k, v in pairs.items():
        a, b = map(int, k.split("-"))
        links[a] += v
        links[b] += v
    assert set(links.values()) == {6}


def test_lookup_helpers():
    lay = layouts.load("dgx-h100")
    assert lay.nics.compute.rate_gbps == 400
    assert lay.nvlink.pairs is None
    assert lay.domain.nodes is None and layouts.load("gb200-nvl72-tray").domain.nodes == 18
    assert "H100UG" in lay.gpus.evidence
    inferred = layouts.parse('{"schema": 1, "name": "x", "numa": {"gpu_numa": {}, '
                             '"evidence": "[I]"}}', "x")
    assert inferred.numa.inferred("gpu_numa")
    assert not lay.numa.inferred()


@pytest.mark.parametrize("text,needle", [
    ("", "empty"),
    ("{", "not valid JSON"),
    ("[]", "not a JSON object"),
    ('{"name": "x"}', "schema"),
    ('{"schema": 99, "name": "x"}', "newer"),
    ('{"schema": 1, "name": "a b"}', "name"),
    ('{"schema": 1, "name": "x", "gpus": {"count": -1}}', "gpus.count"),
    ('{"schema": 1, "name": "x", "gpus": {"name_pattern": "("}}', "regular expression"),
    ('{"schema": 1, "name": "x", "nvlink": {"pairs": {"0_1": 2}}}', "nvlink.pairs"),
    ('{"schema": 1, "name": "x", "nics": {"placement": {"gpu_to_nearest_compute_nic": "NV4"}}}',
     "PIX"),
    ('{"schema": 1, "name": "x", "nics": {"compute": {"link_layer": "RoCE"}}}', "link_layer"),
    ('{"schema": 1, "name": "x", "numa": {"gpu_numa": {"a": 1}}}', "gpu_numa"),
])
def test_bad_layout_files(tmp_path, text, needle):
    f = tmp_path / "mine.json"
    f.write_text(text)
    with pytest.raises(NvtopoError) as exc:
        layouts.load_file(str(f))
    assert needle in str(exc.value)
    assert str(exc.value).startswith(str(f))
    assert "\n" not in str(exc.value)


def test_user_layout_file_round_trip(tmp_path):
    doc = layouts.load("dgx-a100").data
    f = tmp_path / "mine.json"
    f.write_text(json.dumps(dict(doc, name="mine")))
    lay = layouts.load_file(str(f))
    assert lay.name == "mine" and lay.origin == str(f)


def test_missing_layout_names():
    with pytest.raises(NvtopoError, match="no bundled layout"):
        layouts.load("nosuch")
    with pytest.raises(NvtopoError, match="no such file"):
        layouts.load_file("/nonexistent/layout.json")


@pytest.mark.parametrize("pairs,needle", [
    ({"0-0": 4}, "paired with itself"),
    ({"0-1": 1, "1-8": 2}, "names GPU8"),
    ({"0-1": 1, "1-0": 1}, "twice"),
    ({"0-1": -1}, "non-negative"),
])
def test_bad_nvlink_pairs_are_refused_one_line(pairs, needle):
    doc = {"schema": 1, "name": "x", "gpus": {"count": 8}, "nvlink": {"pairs": pairs}}
    with pytest.raises(NvtopoError) as e:
        layouts.parse(json.dumps(doc), where="x.json")
    msg = str(e.value)
    assert "bad layout:" in msg and needle in msg and "\n" not in msg


def test_empty_pairs_means_no_nvlink_between_any_pair():
    """{} states "no NVLink between any pair"; null states nothing."""
    from nvtopo import checks
    from nvtopo.checks import facts
    from nvtopo.model import GPU, NVLinkPair, Topology

    none = layouts.parse(json.dumps({"schema": 1, "name": "pcie", "gpus": {"count": 2},
                                     "nvlink": {"pairs": {}, "evidence": "[S: X]"}}), "p")
    unstated = layouts.parse(json.dumps({"schema": 1, "name": "u", "gpus": {"count": 2},
                                         "nvlink": {"pairs": None}}), "u")
    assert facts.layout_pairs(none, 2) == {(0, 1): 0}
    assert facts.layout_pairs(unstated, 2) == {}
    assert none.summary()["nvlink"] == "no NVLink"
    topo = Topology(sources=["topo-text"], gpus=[GPU(index=0), GPU(index=1)],
                    nvlinks=[NVLinkPair(a=0, b=1, count=4, source="topo-text")])
    got = [(f.code, str(f.subject)) for f in checks.run(topo, none).findings]
    assert ("nvlink.pair_unexpected", "GPU0-GPU1") in got
    assert not [f for f in checks.run(topo, unstated).findings if f.code.startswith("nvlink.pair")]
