"""The one front door for input (``nvtopo.snapshot.open_input``) and the CLI plumbing
around it: what each kind of input opens to, the host block checked at the door, "nothing
to show/check" decided once, and the layout named once (``--layout-file -`` from a pipe).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import make_runner

from nvtopo import layouts, snapshot
from nvtopo.cli import app
from nvtopo.errors import NvtopoError
from nvtopo.simulate import simulate

REPO = Path(__file__).resolve().parent.parent
TOPO = REPO / "fixtures" / "topo-corpus" / "01_hgx-a100-8gpu-nv12-10nic-tabs.txt"
NVML_TEXT = sorted((REPO / "fixtures" / "nvml-text").glob("*.txt"))


def invoke(*args: str, input=None):
    return make_runner().invoke(app, list(args), input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def doc():
    return simulate(layouts.load("dgx-h100"), [], seed=2)


@pytest.fixture
def sealed(doc, tmp_path):
    path = tmp_path / "node.json"
    path.write_text(snapshot.dumps(doc), encoding="utf-8")
    return path


# --- what each input opens to ---------------------------------------------------------------


def test_a_sealed_snapshot_opens_from_its_cache(sealed, doc):
    opened = snapshot.open_input(snapshot.Input(path=str(sealed)))
    assert opened.cached is True and opened.where == str(sealed)
    assert opened.origin.to_dict() == {"kind": "snapshot", "file": str(sealed),
                             "nvtopo_version": doc["nvtopo_version"]}
    assert len(opened.model.gpus) == 8 and opened.model.host.hostname == doc["host"]["hostname"]
    assert opened.document == {}  # the evidence was not decoded


def test_the_document_is_read_when_asked_for(sealed, doc):
    opened = snapshot.open_input(snapshot.Input(path=str(sealed),
                                                want=snapshot.MODEL_AND_DOCUMENT))
    assert opened.cached is True and opened.document["probes"] == doc["probes"]
    only = snapshot.open_input(snapshot.Input(path=str(sealed), want=snapshot.DOCUMENT))
    assert only.model is None and only.document["probes"] == doc["probes"]


def test_an_evidence_only_snapshot_is_derived(doc, tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    opened = snapshot.open_input(snapshot.Input(path=str(path)))
    assert opened.cached is False and len(opened.model.gpus) == 8


def test_a_topo_text_and_standard_input(monkeypatch):
    opened = snapshot.open_input(snapshot.Input(path=str(TOPO)))
    assert opened.cached is None and opened.document == {}
    assert opened.origin.to_dict() == {"kind": "topo-text", "file": str(TOPO)}
    assert len(opened.model.gpus) == 8
    wrapped = snapshot.open_input(snapshot.Input(path=str(TOPO), want=snapshot.DOCUMENT))
    assert list(wrapped.document["probes"]) == ["topo-text"]
    assert wrapped.document["probes"]["topo-text"]["stdout"] == TOPO.read_text()
    r = invoke("show", "--from", "-", "--format", "json", input=TOPO.read_bytes())
    assert r.exit_code == 0 and json.loads(r.stdout)["origin"]["file"] == "<stdin>"


def test_pasted_nvlink_text():
    opened = snapshot.open_input(snapshot.Input(path=str(NVML_TEXT[0])))
    assert opened.origin.kind == "nvml-text" and "nvml-text" in opened.model.sources
    wrapped = snapshot.open_input(snapshot.Input(path=str(NVML_TEXT[0]),
                                                 want=snapshot.DOCUMENT))
    assert wrapped.document["probes"]["nvml"]["source"] == "nvml-text"


def test_a_bundled_example():
    opened = snapshot.open_input(snapshot.Input(example="dgx-h100"))
    assert opened.where == "example dgx-h100"
    assert opened.origin.to_dict() == {"kind": "example", "file": "example dgx-h100"}
    assert len(opened.model.gpus) == 8


@pytest.mark.parametrize("request_, message", [
    (snapshot.Input(path="x", example="dgx-h100", command="show"),
     "show: use either --from or --example, not both"),
    (snapshot.Input(example="dgx-h100", sysfs_root="/sys", command="show"),
     "show: use either --example or --sysfs-root, not both"),
    (snapshot.Input(path="x", sysfs_root="/sys", command="ib"),
     "ib: use either --from or --sysfs-root, not both"),
])
def test_options_given_together_are_refused_before_reading(request_, message):
    with pytest.raises(NvtopoError) as exc:
        snapshot.open_input(request_)
    assert str(exc.value) == message


# --- nothing to show or check, decided once -------------------------------------------------


def test_nothing_to_show_or_check_is_one_rule_for_every_command(tmp_path):
    empty = {"kind": "nvtopo-snapshot", "schema_version": 1, "host": {"hostname": "n1"},
             "probes": {"nvml": {"status": "unavailable", "error": "NVML unavailable: test"}}}
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(empty), encoding="utf-8")
    why = "; ".join(n.message for n in snapshot.load(str(path)).notes)
    assert "NVML unavailable" in why
    show = invoke("show", "--from", str(path))
    check = invoke("check", "--from", str(path))
    capture = invoke("layouts", "capture", "--from", str(path))
    audit = invoke("audit", str(path), "--format", "json", "--jobs", "1")
    assert show.stderr == f"nvtopo: error: {path}: nothing to show: {why}\n"
    assert check.stderr == f"nvtopo: error: {path}: nothing to check: {why}\n"
    assert capture.stderr == check.stderr
    assert (show.exit_code, check.exit_code, capture.exit_code, audit.exit_code) == (2, 2, 2, 2)
    row = json.loads(audit.stdout)["nodes"][0]
    # the audit row keeps the host name it read before refusing the file
    assert row["reason"] == f"nothing to check: {why}" and row["hostname"] == "n1"


def test_ib_refuses_a_file_without_sysfs_evidence():
    r = invoke("ib", "--from", str(TOPO))
    assert r.exit_code == 2 and r.stderr.startswith(f"nvtopo: error: {TOPO}: holds no sysfs")


# --- the host block, checked at the door -------------------------------------------------------


@pytest.mark.parametrize("bad", [5, ["n1"], {"name": "n1"}, True])
def test_a_host_fact_of_the_wrong_type_is_dropped_with_a_note(doc, tmp_path, bad):
    """``"hostname": 5`` was copied into show, diff, ib and audit output, breaking their
    JSON contract (the runner validates every document against docs/schemas/)."""
    bad_doc = json.loads(json.dumps(doc))
    bad_doc["host"]["hostname"] = bad
    bad_doc["host"]["memory_total_bytes"] = "lots"
    path = tmp_path / "bad-host.json"
    path.write_text(snapshot.dumps(bad_doc), encoding="utf-8")
    good = tmp_path / "good.json"
    good.write_text(snapshot.dumps(doc), encoding="utf-8")

    opened = snapshot.open_input(snapshot.Input(path=str(path)))
    assert opened.cached is True  # the sealed cache holds the checked facts: still used
    host = opened.model.host.to_dict()
    assert "hostname" not in host and "memory_total_bytes" not in host
    assert host["kernel"] == doc["host"]["kernel"]  # the facts of the right type stay
    notes = [n for n in opened.model.notes if n.code == "host.bad_fact"]
    assert sorted(n.message for n in notes) == sorted([
        'host fact "hostname" is ' + {int: "a number", list: "a list", dict: "an object",
                                      bool: "true or false"}[type(bad)]
        + ", not text or null; ignored",
        'host fact "memory_total_bytes" is text, not a count; ignored'])
    assert {n.level for n in notes} == {"warning"} and {n.source for n in notes} == {"host"}
    assert opened.model.to_dict() == snapshot.derive(bad_doc, str(path)).to_dict()

    shown = json.loads(invoke("show", "--from", str(path), "--format", "json").stdout)
    assert "hostname" not in shown["host"]
    ib = json.loads(invoke("ib", "--from", str(path), "--format", "json").stdout)
    assert "hostname" not in ib["host"] and any(n["code"] == "host.bad_fact"
                                                for n in ib["notes"])
    d = invoke("diff", str(good), str(path), "--format", "json")
    assert json.loads(d.stdout)["b"]["hostname"] is None
    a = invoke("audit", str(path), "--format", "json", "--jobs", "1")
    assert json.loads(a.stdout)["nodes"][0]["hostname"] is None


def test_a_host_block_that_is_no_object_is_dropped_with_a_note(doc, tmp_path):
    bad_doc = dict(doc, host="node17")
    path = tmp_path / "bad-host.json"
    path.write_text(json.dumps(bad_doc), encoding="utf-8")
    topo = snapshot.load(str(path))
    assert [n.message for n in topo.notes if n.code == "host.bad_fact"] == [
        "the snapshot's host block is text, not an object; ignored"]
    assert topo.host.hostname is None


def test_host_facts_of_the_right_type_and_unknown_keys_are_kept(doc, tmp_path):
    good_doc = json.loads(json.dumps(doc))
    good_doc["host"].update(hostname=None, rack={"row": 7}, cpu_count_logical=None)
    topo = snapshot.derive(good_doc)
    host = topo.host.to_dict()
    assert host == good_doc["host"] and list(host) == list(good_doc["host"])  # in its order
    assert host["hostname"] is None and host["cpu_count_logical"] is None
    assert topo.host.hostname is None and topo.host.others == {"rack": {"row": 7}}
    assert not [n for n in topo.notes if n.code == "host.bad_fact"]


# --- the layout, named once ------------------------------------------------------------------


def test_layout_file_from_a_pipe_is_read_once(sealed):
    """``--layout-file -``: the layout was read twice (validated, then selected), and a
    pipe holds it once; and ``-`` was taken for a file name."""
    text = json.dumps(layouts.load("dgx-h100").data)
    r = invoke("check", "--from", str(sealed), "--layout-file", "-", "--format", "json",
               input=text)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["layout"] == "dgx-h100" and out["layout_reason"].startswith("--layout-file -")
    shown = invoke("layouts", "show", "--layout-file", "-", input=text)
    assert shown.exit_code == 0 and json.loads(shown.stdout) == json.loads(text)
    sim = invoke("simulate", "--layout-file", "-", input=text)
    assert sim.exit_code == 0 and json.loads(sim.stdout)["simulated"]["layout"] == "dgx-h100"
    a = invoke("audit", str(sealed), "--layout-file", "-", "--format", "json", "--jobs", "1",
               input=text)
    assert a.exit_code == 0 and json.loads(a.stdout)["nodes"][0]["layout"] == "dgx-h100"


def test_from_and_layout_file_cannot_both_read_standard_input():
    r = invoke("check", "--from", "-", "--layout-file", "-", input="{}")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("nvtopo: error: --layout-file: standard input is read once")


def test_a_named_layout_is_the_same_whichever_way_it_is_given(sealed, tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(layouts.load("dgx-h100").data), encoding="utf-8")
    by_name = json.loads(invoke("check", "--from", str(sealed), "--layout", "dgx-h100",
                                "--format", "json").stdout)
    by_file = json.loads(invoke("check", "--from", str(sealed), "--layout-file", str(path),
                                "--format", "json").stdout)
    assert by_name["layout_reason"].startswith("--layout dgx-h100: ")
    assert by_file["layout_reason"].startswith(f"--layout-file {path}: ")
    assert by_name["findings"] == by_file["findings"]


def test_a_layout_file_that_is_a_device_is_refused_not_read(tmp_path):
    """The layout file was read whole, unbounded: ``--layout-file /dev/zero`` never ended
    (and grew without limit).  It is now read as --from input is: a device is refused."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero on this system")
    code = ("import sys\nfrom nvtopo.cli import run\n"
            "sys.argv = ['nvtopo', 'check', '--from', sys.argv[1], '--layout-file', "
            "'/dev/zero']\nrun()\n")
    done = subprocess.run([sys.executable, "-c", code, str(TOPO)], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 2
    assert done.stderr == ("nvtopo: error: /dev/zero: not a regular file (a character "
                           "device)\n")


def test_a_huge_layout_file_is_refused_unread(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b'{"schema": 1, "name": "x", "pad": "' + b"x" * (2 * 1024 * 1024) + b'"}')
    r = invoke("layouts", "show", "--layout-file", str(big))
    assert r.exit_code == 2
    assert r.stderr == f"nvtopo: error: {big}: file is larger than 1 MiB; not a layout file\n"


def test_a_request_nvtopo_does_not_know_is_a_bug_not_input():
    with pytest.raises(ValueError):
        snapshot.open_input(snapshot.Input(path=str(TOPO), want="everything"))
    with pytest.raises(ValueError):
        snapshot.open_input(snapshot.Input(probes="gpu"))
