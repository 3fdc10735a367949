"""``nvtopo show`` says what IMEX said (``nvtopo/render/imex.py``, docs/imex.md): the domain
state, the members and how many are ready, this node's connections where its entry is known,
every member not ready and every connection not connected; a pasted ``nvidia-imex-ctl``
output is shown on its own (no GPU needed), and IMEX not installed shows nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import make_runner

from nvtopo.cli import app
from nvtopo.model import Topology
from nvtopo.model.imex import ImexMember, ImexNode
from nvtopo.render.imex import MAX_LINKS, imex_lines

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "imex-text"
runner = make_runner()


def _show(path: Path) -> str:
    r = runner.invoke(app, ["show", "--from", str(path)], env={"COLUMNS": "100"})
    assert r.exit_code == 0, r.stderr
    return r.stdout


def _block(out: str) -> list:
    lines = out.splitlines()
    start = lines.index("IMEX domain")
    end = lines.index("", start)
    return [x.strip() for x in lines[start + 1:end]]


@pytest.mark.parametrize("name,head,rest", [
    ("n18-up.txt", "UP · 18 members, 18 ready · 306/306 connections up", []),
    ("n18-one-way.txt", "UP · 18 members, 18 ready · 305/306 connections up",
     ["#4 172.31.48.93 -> #9 172.31.48.108: DISCONNECTED"]),
    ("json-down.json", "DOWN · 2 members, 0 ready",
     ["#0 10.0.0.1: UNAVAILABLE", "#1 10.0.0.2: UNAVAILABLE"]),
    ("query-ready.txt", "domain state not read · this node's daemon READY (-q)", []),
])
def test_a_paste_shows_its_domain(name, head, rest):
    block = _block(_show(FIX / name))
    assert block == [head] + rest


def test_version_mismatch_names_every_connection_it_cuts():
    block = _block(_show(FIX / "n4-version-mismatch.txt"))
    assert block[0] == "DEGRADED · 4 members, 4 ready · 6/12 connections up"
    assert sum("VERSION_MISMATCH" in x for x in block) == 6
    assert "#3 10.0.0.4 -> #0 10.0.0.1: VERSION_MISMATCH" in block


def test_a_cut_paste_says_it_is_cut():
    out = _show(FIX / "n18-cut.txt")
    assert "domain state not read" in out and "a cut paste" in out


def test_this_node_on_a_simulated_tray(tmp_path):
    path = tmp_path / "tray.json"
    r = runner.invoke(app, ["simulate", "gb200-nvl72-tray", "-o", str(path), "--seed", "2"])
    assert r.exit_code == 0, r.stderr
    assert _block(_show(path)) == ["UP · 18 members, 18 ready · this node #0 10.128.1.0: "
                                   "17/17 connected"]


def _node(**kw) -> Topology:
    topo = Topology()
    topo.imex = ImexNode(**kw)
    return topo


def test_not_installed_or_not_read_shows_nothing_and_the_unread_says_why():
    assert imex_lines(Topology()) is None
    assert imex_lines(_node(status="absent", error="not installed")) is None
    text = imex_lines(_node(status="timeout", error="did not answer within 3 s"))
    assert text is not None and "did not answer in time: did not answer within 3 s" in text.plain
    text = imex_lines(_node(status="not_configured", error="exit 255"))
    assert text is not None and "no IMEX domain configured" in text.plain
    assert "255" not in text.plain


def test_many_broken_connections_are_counted_past_the_first_lines():
    members = [ImexMember(index=i, address=f"10.0.0.{i}", status="READY",
                          connections={str(j): "DISCONNECTED" for j in range(8) if j != i})
               for i in range(8)]
    text = imex_lines(_node(domain_state="DEGRADED", members=members)).plain
    assert text.count("DISCONNECTED") == MAX_LINKS
    assert f"and {56 - MAX_LINKS} more connections not connected" in text


def test_hostile_strings_are_escaped():
    members = [ImexMember(index=0, address="10.0.0.1\x1b[2J[bold]x", status="READY\x07",
                          host_name="h\u202eost", connections={"1": "DISCONNECTED"}),
               ImexMember(index=1, address="10.0.0.2", status="READY")]
    text = imex_lines(_node(domain_state="UP", members=members, self_index=0)).plain
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "[bold]x" in text  # Rich markup in a value is text, not a style


def test_show_json_is_unchanged_by_the_block(tmp_path):
    r = runner.invoke(app, ["show", "--from", str(FIX / "json-up-2.json"), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["extra"]["imex"]["domain_state"] == "UP"
