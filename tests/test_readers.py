"""The one registry of input readers (nvtopo/probes/readers.py).

Every text a file may hold is recognised in one place: the registry is asked once, splits a
ticket into its parts (each with its reader and the text that reader reads), and the same
parts are read into the model (`--from`), kept as a snapshot's evidence (`snapshot --from`)
and read back from that evidence (a snapshot's derive): so a snapshot of a paste checks as
the paste does.  A new reader is its parser and one entry in ``READERS``.
"""

from __future__ import annotations

import ast
import itertools
import json
from pathlib import Path
from typing import Dict, List

import pytest
from cli_runner import make_runner

from nvtopo import snapshot
from nvtopo.cli import app
from nvtopo.errors import NvtopoError
from nvtopo.model import Topology
from nvtopo.probes import readers

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
runner = make_runner()

#: One paste of each kind (the fixture each reader's own tests read).
SAMPLES = {
    "topo": FIX / "topo-corpus" / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt",
    "nvlink": FIX / "nvml-text" / "nvlink_s_a100_sxm4_excerpt.txt",
    "q": FIX / "nvml-text" / "nvidia_smi_q_h800_pci_and_fabric_excerpt.txt",
    "dcgmi": FIX / "nvml-text" / "dcgmi_nvlink_s_h100.txt",
    "ibstat": FIX / "ib-text" / "ibstat_ib_hdr_cx6_mt4123_active_and_down.txt",
    "ibv": FIX / "ib-text" / "ibv_devinfo_roce_cx7_mt4129_active.txt",
    "xml": FIX / "nvml-xml" / "nvidia_smi_q_x_h100_2gpu_gen3_x8_fabric_failed.xml",
    "gds": FIX / "gds-text" / "gdscheck-p.txt",
}


def sample(kind: str) -> str:
    return SAMPLES[kind].read_text(encoding="utf-8")


def paste(*kinds: str) -> str:
    return "\n".join(sample(k) for k in kinds)


# --- what each text is -------------------------------------------------------------------------


@pytest.mark.parametrize("folder, want", [
    ("topo-corpus", ["topo-text"]), ("topo-damaged", ["topo-text"]),
    ("nvml-xml", ["nvml-xml"]), ("gds-text", ["gds-text"]), ("kernel", ["kernel-log"])])
def test_every_fixture_of_a_kind_is_one_part_of_its_reader(folder, want):
    files = [p for p in sorted((FIX / folder).iterdir()) if p.suffix in (".txt", ".xml")]
    assert len(files) >= 2
    for path in files:
        assert readers.names(path.read_text(encoding="utf-8")) == want, path.name


def test_nvidia_smi_ib_and_dcgmi_fixtures_are_each_their_own_kind():
    for path in sorted((FIX / "nvml-text").glob("*.txt")):
        want = ["dcgmi-text"] if path.name.startswith("dcgmi") else ["nvml-text"]
        assert readers.names(path.read_text(encoding="utf-8")) == want, path.name
    for path in sorted((FIX / "ib-text").glob("ib*.txt")):
        assert readers.names(path.read_text(encoding="utf-8")) == ["ib-text"], path.name


@pytest.mark.parametrize("kinds, want", [
    # shared texts first, in the registry's order; what a block reader cut out after them
    (("topo", "ibstat", "q"), ["topo-text", "nvml-text", "ib-text"]),
    (("ibv", "nvlink"), ["nvml-text", "ib-text"]),
    (("dcgmi", "topo"), ["topo-text", "dcgmi-text"]),
    (("ibstat", "dcgmi", "topo"), ["topo-text", "dcgmi-text", "ib-text"]),
    # nvidia-smi nvlink text beside dcgmi is not a part (dcgmi's read says it is unread)
    (("dcgmi", "nvlink"), ["dcgmi-text"]),
    # ibstat before -q -x XML: the rest of the paste is the XML, read whole
    (("ibstat", "xml"), ["nvml-xml", "ib-text"]),
    # a whole-input reader: nothing beside it is a part
    (("gds", "topo"), ["gds-text"]), (("xml", "topo"), ["nvml-xml"]),
])
def test_a_ticket_is_split_into_its_parts_in_merge_order(kinds, want):
    assert readers.names(paste(*kinds)) == want


def test_each_part_gets_the_text_its_reader_reads():
    text = paste("topo", "ibstat", "q")
    parts = {p.reader.name: p for p in readers.split(text)}
    assert parts["ib-text"].text == text  # the ibstat reader reads its blocks out of it all
    for name in ("topo-text", "nvml-text"):  # the others share what is left, without them
        assert "CA 'mlx5_0'" not in parts[name].text and "GPU0" in parts[name].text
        assert parts[name].sure == readers.SURE
    dcgmi = {p.reader.name: p for p in readers.split(paste("dcgmi", "topo"))}
    assert "gpuId" not in dcgmi["topo-text"].text and "gpuId" in dcgmi["dcgmi-text"].text


def test_a_mention_is_read_only_when_nothing_else_is_there():
    empty = ("NvLink Link Status\nGPUs:\n    No GPUs found.\n"
             "Key: Up=U, Down=D, Disabled=X, Not Supported=_\n")
    parts = readers.split(empty)
    assert [(p.reader.name, p.sure) for p in parts] == [("dcgmi-text", readers.MENTIONED)]
    with pytest.raises(NvtopoError, match="dcgmi nvlink -s text with no GPU row"):
        snapshot.load_text(empty, "empty.txt")
    # beside a matrix, the mention is judged as if it were not there
    assert readers.names(empty + sample("topo")) == ["topo-text"]
    # nothing recognised: the topo reader reads it, and says what nvtopo reads
    assert [(p.reader.name, p.sure) for p in readers.split("hello\n")] == [
        ("topo-text", readers.NO)]
    with pytest.raises(NvtopoError, match="not an input nvtopo reads"):
        snapshot.load_text("hello\n", "hello.txt")


def test_every_reader_is_named_where_an_unreadable_input_is_refused():
    assert len({r.name for r in readers.READERS}) == len(readers.READERS)
    for r in readers.READERS:
        assert r.what and r.what in readers.READABLE, r.name
        assert (r.keep is None) == bool(r.refused) or r.name == readers.SNAPSHOT, r.name
        assert (r.takes == readers.BLOCKS) == (r.cut is not None), r.name


# --- one model, one snapshot, one derive ------------------------------------------------------


def _comparable(topo: Topology) -> Dict:
    d = topo.to_dict()
    d.pop("origin", None)
    d.pop("host", None)
    return d


KEPT_PASTES = [k for k in itertools.permutations(
    ["topo", "nvlink", "q", "dcgmi", "xml"], 2)] + [(k,) for k in SAMPLES if k != "gds"]


@pytest.mark.parametrize("kinds", KEPT_PASTES, ids="+".join)
def test_a_snapshot_of_a_paste_reads_as_the_paste(kinds):
    """The paste's parts, read (`--from`), and kept then derived (a snapshot of it), give the
    same model: the same reader reads each part both ways.  (A snapshot of a dcgmi paste
    beside nvlink text read the nvlink lines silently; the paste warned they were unread.)"""
    text = paste(*kinds)
    try:
        doc = snapshot._document_of(text, "paste.txt")
    except NvtopoError as exc:
        assert "ibstat" in kinds[-1] or "ibv" in kinds[-1] or "ib" in str(exc)
        return
    direct = snapshot.load_text(text, "paste.txt")
    assert _comparable(snapshot.derive(doc, "paste.json")) == _comparable(direct)


def test_kept_text_is_read_by_the_reader_that_recognises_it():
    """A snapshot's NVML evidence may keep pasted text of three kinds; its derive asks the
    registry, as the front door does (it had its own dispatcher, which asked dcgmi before
    XML: an XML paste holding dcgmi lines read as dcgmi from a snapshot, as XML from the
    paste)."""
    def kept(text: str) -> Topology:
        return snapshot.derive({"kind": "nvtopo-snapshot", "schema_version": 1, "probes": {
            "nvml": {"source": "nvml-text", "status": "ok", "stdout": text, "error": None}}})

    for kinds, sections in ((("nvlink",), ["nvlink -s"]), (("xml",), ["-q", "-q fabric"]),
                            (("dcgmi",), ["dcgmi nvlink -s"]),
                            (("xml", "dcgmi"), ["-q", "-q fabric"])):
        topo = kept(paste(*kinds))
        assert topo.nvml_text is not None and topo.nvml_text.sections == sections, kinds
        assert _comparable(topo)["gpus"] == _comparable(
            snapshot.load_text(paste(*kinds), "p"))["gpus"], kinds


# --- a new reader: its parser and one entry ---------------------------------------------------


def _hello_read(text: str, where: str) -> Topology:
    """A reader of a new text of a known source (as dcgmi text is ``nvml-text``: a new source
    name is a new word of the JSON contract, docs/schemas/model.schema.json)."""
    topo = Topology(sources=["nvml-text"])
    for line in text.splitlines():
        if line.startswith("HELLO "):
            topo.note("hello_text.said", line[6:], source="nvml-text", level="warning")
    return topo


def test_a_new_reader_is_one_entry_in_the_registry(monkeypatch, tmp_path):
    """A reader registered (and nothing else changed) is asked by every command's front
    door: `check --from` reads its part of a ticket beside a matrix, and `snapshot --from`
    refuses, in one line, a ticket holding a text it may not keep."""
    hello = readers.Reader("hello-text", "hello", readers.SHARED,
                           lambda text: readers.SURE if "\nHELLO " in text else readers.NO,
                           _hello_read, refused="hello text is not kept in a snapshot")
    monkeypatch.setattr(readers, "READERS", readers.READERS + (hello,))
    path = tmp_path / "ticket.txt"
    path.write_text(sample("topo") + "\nHELLO from the ticket\n", encoding="utf-8")
    assert readers.names(path.read_text(encoding="utf-8")) == ["topo-text", "hello-text"]
    r = runner.invoke(app, ["show", "--from", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output
    model = json.loads(r.stdout)
    assert len(model["gpus"]) == 8 and model["origin"]["kind"] == "topo-text"
    assert {"code": "hello_text.said", "message": "from the ticket"}.items() <= \
        [n for n in model["notes"] if n["code"] == "hello_text.said"][0].items()
    r = runner.invoke(app, ["snapshot", "--from", str(path), "-o", str(tmp_path / "s.json")])
    assert r.exit_code == 2 and "hello text is not kept in a snapshot" in r.stderr


# --- recognised in one place -----------------------------------------------------------------

#: The parsers, each defining (and using) its own recogniser.
PARSERS = {"nvtopo/probes/gds_text.py", "nvtopo/probes/ib_text.py",
           "nvtopo/probes/dcgmi_text.py", "nvtopo/probes/nvml/paste.py",
           "nvtopo/probes/nvml/xml.py", "nvtopo/probes/topo/locate.py"}
RECOGNISERS = {"looks_like", "looks_like_topo", "has_gpus", "recognise"}


def test_texts_are_recognised_only_by_the_registry():
    """No module but the registry asks a parser whether a text is its kind: the front
    door's two dispatchers, the recogniser in snapshot/read.py and the NVML derive's own are
    gone, and a new one fails here."""
    callers: List[str] = []
    for path in sorted((ROOT / "nvtopo").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in PARSERS or rel == "nvtopo/probes/readers.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
                if name in RECOGNISERS:
                    callers.append(f"{rel}:{node.lineno}: {name}")
    assert callers == []
    from nvtopo.snapshot import read

    assert not hasattr(read, "recognise") and not hasattr(read, "read_input")
