"""IMEX on one node: ``nvidia-imex-ctl`` output read (pasted -N text, -N -j JSON, the -q word),
the live ``imex`` probe (a fake ``nvidia-imex-ctl`` on PATH) and the ``imex`` check family
(docs/imex.md)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import List

import pytest
from cli_runner import make_runner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvtopo import snapshot
from nvtopo.checks import imex as imex_check
from nvtopo.checks.select import given as given_layout
from nvtopo.cli import app
from nvtopo.errors import NvtopoError
from nvtopo.probes import ProbeOptions, imex, imex_text, readers
from nvtopo.snapshot.document import derive
from test_hostile_parsers import finishes_within

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "imex-text"
runner = make_runner()


def _read(name: str):
    text = (FIX / name).read_text(encoding="utf-8")
    return readers.model(readers.split(text), name)


def _found(topo, layout=None):
    return [(f.severity, f.code, str(f.subject)) for f in
            imex_check.check(topo, given_layout(layout))]


# --- reading ----------------------------------------------------------------------------------


def test_newer_text_reads_every_member_version_and_the_matrix():
    n = _read("n18-up.txt").imex
    assert (n.source, n.form, n.domain_state, n.cut) == ("imex-text", "nodes-text", "UP", None)
    assert n.timestamp == "5/12/2025 06:08:10.580"
    assert [m.index for m in n.members] == list(range(18))
    assert (n.members[0].address, n.members[0].status, n.members[0].version) == \
        ("172.31.48.81", "READY", "570.172")
    assert all(set(m.connections.values()) == {"CONNECTED"} and len(m.connections) == 18
               for m in n.members)


def test_older_text_without_versions_or_new_legend_letters():
    n = _read("n2-570-no-version.txt").imex
    assert [(m.address, m.version) for m in n.members] == [("10.136.206.48", None),
                                                           ("10.136.206.49", None)]
    assert n.domain_state == "UP" and n.cut is None


def test_letters_become_words_both_ways():
    n = _read("n18-one-way.txt").imex
    assert n.member(4).to(9) == "DISCONNECTED" and n.member(9).to(4) == "CONNECTED"
    v = _read("n4-version-mismatch.txt").imex
    assert v.member(3).to(0) == "VERSION_MISMATCH" and v.member(3).version == "570.124.06"
    d = _read("n18-degraded-3-ready.txt").imex
    assert d.member(0).to(5) == "NEVER_CONNECTED" and d.member(5).status == "UNAVAILABLE"
    assert d.domain_state == "DEGRADED"


def test_a_letter_nvtopo_does_not_know_is_read_as_unknown_and_not_judged():
    text = (FIX / "n2-570-no-version.txt").read_text().replace(
        "       0        C   C", "       0        C   X")
    topo = readers.model(readers.split(text), "x.txt")
    assert topo.imex.member(0).to(1) == "UNKNOWN" and topo.imex.cut is None
    assert _found(topo) == []


def test_a_cut_paste_says_what_it_lacks():
    topo = _read("n18-cut.txt")
    assert topo.imex.domain_state is None
    assert "no Domain State line" in topo.imex.cut
    assert "matrix rows missing for 7 of 18 members (11, 12" in topo.imex.cut
    assert [(n.code, n.level) for n in topo.notes] == [("imex.cut", "warning")]


def test_json_with_and_without_host_names():
    up = _read("json-up-2.json").imex
    assert (up.form, up.domain_state, up.timestamp) == ("nodes-json", "UP",
                                                        "9/4/2026 00:37:39.905")
    assert [(m.host_name, m.version) for m in up.members] == [("gpu-node-1", "580.95.05"),
                                                              ("gpu-node-2", "580.95.05")]
    down = _read("json-down.json").imex
    assert down.domain_state == "DOWN"
    assert [(m.status, m.host_name, m.to(1)) for m in down.members] == [
        ("UNAVAILABLE", None, "INVALID"), ("UNAVAILABLE", None, "INVALID")]


def test_the_query_word():
    n = _read("query-ready.txt").imex
    assert (n.form, n.ready, n.members, n.domain_state) == ("query", "READY", None, None)


def test_recognised_by_content_beside_other_pastes():
    topo_m = (Path(__file__).resolve().parent.parent / "fixtures" / "topo-corpus").glob("*.txt")
    matrix = sorted(topo_m)[0].read_text(encoding="utf-8")
    imex_txt = (FIX / "n18-one-way.txt").read_text(encoding="utf-8")
    ticket = matrix + "\n$ sudo nvidia-imex-ctl -N\n" + imex_txt + "\n"
    assert readers.names(ticket) == ["topo-text", "imex-text"]
    both = readers.model(readers.split(ticket), "ticket.txt")
    assert both.gpus and both.imex.member(4).to(9) == "DISCONNECTED"
    assert readers.names((FIX / "json-up-2.json").read_text()) == ["imex-json"]
    assert imex_text.without_blocks(imex_txt).strip() == ""


def test_json_that_is_not_imex_is_not_read_as_imex(tmp_path):
    """Another tool's JSON with a "nodes" object is not IMEX (no false pass): refused as it
    was before the IMEX reader."""
    p = tmp_path / "k8s.json"
    p.write_text('{"nodes": {"worker-1": {"status": "Ready"}}, "status": "UP"}')
    assert readers.names(p.read_text()) == ["snapshot"]
    r = runner.invoke(app, ["check", "--from", str(p)])
    assert r.exit_code == 2 and "not an nvtopo snapshot" in r.stderr
    node, why = imex_text.parse_json('{"nodes": {"0": 5, "x": {}}, "status": "UP"}')
    assert why is not None and "no member" in why


def test_unreadable_json_is_one_line(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"nodes": {"0": {"status": "READY", "host": ', encoding="utf-8")  # cut
    r = runner.invoke(app, ["check", "--from", str(p)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "nvidia-imex-ctl -N -j output nvtopo cannot read" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_paste_is_kept_in_a_snapshot_and_reads_back_the_same(tmp_path):
    for name in ("n18-one-way.txt", "json-down.json"):
        out = tmp_path / f"{name}.snap.json"
        r = runner.invoke(app, ["snapshot", "--from", str(FIX / name), "-o", str(out)])
        assert r.exit_code == 0, r.output
        doc = json.loads(out.read_text())
        assert doc["probes"]["imex"]["stdout"] == (FIX / name).read_text()
        again = derive(doc)
        assert again.imex.to_dict() == _read(name).imex.to_dict()


# --- the live probe ---------------------------------------------------------------------------


FAKE = r"""
import os, sys, time
mode = os.environ.get("FAKE_IMEX_MODE", "ok")
with open(os.environ["FAKE_IMEX_LOG"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
if mode == "ok":
    sys.stdout.write(open(os.environ["FAKE_IMEX_OUT"]).read()); sys.exit(0)
if mode == "noconfig":
    sys.stderr.write("Failed to read node config file /etc/nvidia-imex/nodes_config.cfg\n")
    sys.exit(255)
if mode == "denied":
    sys.stderr.write("connect: Permission denied\n"); sys.exit(1)
if mode == "hang":
    time.sleep(30)
"""


@pytest.fixture
def fake_ctl(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    prog = bindir / "nvidia-imex-ctl"
    prog.write_text(f"#!{sys.executable}\n{FAKE}")
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "argv.log"
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("FAKE_IMEX_LOG", str(log))
    monkeypatch.setenv("FAKE_IMEX_OUT", str(FIX / "json-up-2.json"))

    def take(mode="ok", timeout=20.0):
        monkeypatch.setenv("FAKE_IMEX_MODE", mode)
        ev = imex.capture(ProbeOptions(timeout=timeout))
        return ev, imex.derive(ev)

    take.log = log
    return take


def test_live_runs_n_j_as_an_argument_list_and_finds_this_node(fake_ctl, monkeypatch):
    monkeypatch.setattr(imex.socket, "gethostname", lambda: "gpu-node-2.cluster.local")
    ev, topo = fake_ctl("ok")
    assert fake_ctl.log.read_text() == "-N -j\n"
    assert ev["status"] == "ok" and ev["exit_status"] == 0
    n = topo.imex
    assert (n.source, n.domain_state, n.self_index) == ("imex", "UP", 1)
    assert n.self_by.startswith("host name gpu-node-2")
    assert topo.sources == ["imex"]


@pytest.mark.parametrize("mode,status", [("noconfig", "not_configured"),
                                         ("denied", "not_permitted")])
def test_live_failures_are_unknown_with_the_reason(fake_ctl, mode, status):
    ev, topo = fake_ctl(mode)
    assert ev["status"] == status and topo.imex.status == status
    assert topo.imex.members is None and topo.imex.domain_state is None
    assert ("255" in topo.imex.error) == (mode == "noconfig")


def test_live_timeout_is_bounded(fake_ctl):
    with finishes_within(15):
        ev, topo = fake_ctl("hang", timeout=1.0)
    assert ev["status"] == "timeout" and "did not answer within 1 s" in ev["error"]


def test_absent_program_is_absent_not_bad(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    ev = imex.capture(ProbeOptions())
    assert ev["status"] == "absent"
    topo = imex.derive(ev)
    assert topo.imex.status == "absent" and topo.sources == []
    assert _found(topo) == []  # not a tray: nothing to say


def test_another_machines_tree_runs_nothing(tmp_path):
    ev = imex.capture(ProbeOptions(sysfs_root=str(tmp_path)))
    assert ev["status"] == "not run"
    assert imex.derive(ev).imex is None


# --- the check family -------------------------------------------------------------------------


def test_healthy_domains_say_nothing():
    for name in ("n18-up.txt", "n2-570-no-version.txt", "json-up-2.json", "query-ready.txt"):
        assert _found(_read(name)) == [], name


def test_down_is_one_finding_not_every_peer():
    found = _found(_read("down-all-unavailable.txt"))
    assert found == [("warning", "imex.domain_not_up", "IMEX")]  # not known to be a tray
    f = imex_check.check(_read("down-all-unavailable.txt"), given_layout(None))[0]
    assert "every member (4) unavailable" in f.message


def test_degraded_names_the_unavailable_members():
    fs = imex_check.check(_read("n18-degraded-3-ready.txt"), given_layout(None))
    assert [(f.severity, f.code) for f in fs] == [("warning", "imex.domain_not_up")]
    assert "15 of 18 member(s) unavailable: node 3 (172.31.48.90)" in fs[0].message


def test_one_way_connection_names_both_ends_and_the_letter():
    fs = imex_check.check(_read("n18-one-way.txt"), given_layout(None))
    assert [(f.code, str(f.subject), f.actual) for f in fs] == [
        ("imex.peer_unreachable", "IMEX node 4 -> node 9", "D")]
    assert "9 -> 4 is C: one way only" in fs[0].message


def test_version_mismatch_is_one_finding_with_the_degraded_state_folded_in():
    fs = imex_check.check(_read("n4-version-mismatch.txt"), given_layout(None))
    assert [(f.code, f.expected, f.actual) for f in fs] == [
        ("imex.version_mismatch", "570.172", "570.124.06")]
    assert "DEGRADED" in fs[0].message


def test_a_member_whose_status_is_not_said_is_not_counted_unavailable():
    doc = json.loads((FIX / "json-up-2.json").read_text())
    del doc["nodes"]["1"]["status"]
    doc["status"] = "DEGRADED"
    node, why = imex_text.parse_json(json.dumps(doc))
    assert why is None and node.member(1).status is None
    fs = imex_check.check(imex_text.fragment(node), given_layout(None))
    assert [f.code for f in fs] == ["imex.domain_not_up"]
    assert "unavailable" not in fs[0].message


def test_cut_paste_is_not_checked_for_its_state():
    assert _found(_read("n18-cut.txt")) == [("info", "imex.not_checked", "IMEX")]


def test_on_a_tray_down_is_an_error_and_not_installed_a_note():
    from nvtopo.layouts import load as load_layout

    tray = load_layout("gb200-nvl72-tray")
    assert _found(_read("down-all-unavailable.txt"), tray)[0][:2] == ("error",
                                                                       "imex.domain_not_up")
    ev = {"status": "absent", "error": "nvidia-imex-ctl not found on PATH"}
    assert _found(imex.derive(ev), tray) == [("info", "imex.not_active", "IMEX")]
    ev = {"status": "not_configured", "error": "exit 255"}
    assert _found(imex.derive(ev), tray) == [("info", "imex.not_active", "IMEX")]
    assert _found(imex.derive(ev)) == []
    # a layout whose domain rests on [I] alone: a warning at most
    inferred = load_layout("azure-nd-gb200-v6")
    assert inferred.domain.inferred()
    assert _found(_read("down-all-unavailable.txt"), inferred)[0][:2] == (
        "warning", "imex.domain_not_up")


# --- fuzz -------------------------------------------------------------------------------------

_PIECES = st.sampled_from([
    "Connectivity Table Legend:\n", "Nodes:\n", "Node #", "0", "17", "99999999", " - ",
    "10.0.0.1", "READY", "UNAVAILABLE", " - Version: ", "570.172", "\n", " Nodes From\\To ",
    "  C", "  D", "  !V!", "  !M!", "  N", "  I", "  X", "Domain State: ", "UP", "DOWN",
    "DEGRADED", "5/12/2025 06:08:10.580", "\t", "\x1b[31m", "\u202e", "\u0663", "READY\n"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=80))
def test_fuzzed_text_reads_or_is_refused_in_one_line(pieces: List[str]) -> None:
    text = "".join(pieces)
    with finishes_within(10):
        node = imex_text.parse_text(text)
        for m in node.members or ():
            assert "\x1b" not in (m.address or "") and "\u202e" not in (m.address or "")
            assert all(v in imex_text.LETTERS.values() or v == "UNKNOWN"
                       for v in (m.connections or {}).values())
        assert node.domain_state in (None, "UP", "DOWN", "DEGRADED")
        imex_check.check(imex_text.fragment(node), given_layout(None))
        try:
            snapshot.load_text(text, "fuzz.txt")
        except NvtopoError:
            pass


_JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8),
                               st.sampled_from(["READY", "UP", "CONNECTED", "INVALID", "0"])),
                     lambda kids: st.one_of(st.lists(kids, max_size=4),
                                            st.dictionaries(st.sampled_from(
                                                ["nodes", "0", "1", "status", "host",
                                                 "hostName", "connections", "version"]),
                                                kids, max_size=5)), max_leaves=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["nodes", "status", "timestamp"]), _JSON, max_size=3))
def test_fuzzed_json_reads_or_says_why(doc) -> None:
    with finishes_within(10):
        node, why = imex_text.parse_json(json.dumps(doc))
        nodes = doc.get("nodes")
        readable = isinstance(nodes, dict) and (not nodes or any(
            k.isdigit() and isinstance(v, dict) for k, v in nodes.items()))
        assert (why is None) == readable, (doc, why)
        imex_check.check(imex_text.fragment(node), given_layout(None))


def test_environment_untouched():
    assert "FAKE_IMEX_MODE" not in os.environ
