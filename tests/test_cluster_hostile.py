"""Untrusted strings from snapshots through every ``cluster`` output: escaped in the table,
valid JSON, never a line of topology.conf or a label."""

import json

from cli_runner import make_runner
from nvtopo.cli import app
from nvtopo.layouts import load
from nvtopo.simulate import fleet
from nvtopo.snapshot import dumps

runner = make_runner()
EVIL = "gpu\x1b[31m[bold red]x[/]\nBlockName=evil Nodes=ALL"


def _fleet(tmp_path):
    p = fleet.plan(load("gb200-nvl72-tray"), 4)
    for i in range(4):
        doc = fleet.node_document(p, i)
        if i == 2:
            doc["host"]["hostname"] = EVIL
        (tmp_path / f"n{i}.json").write_text(dumps(doc))
    (tmp_path / "collect.json").write_text(json.dumps({"kind": "nvtopo-collect", "nodes": [
        {"node": "\x07bell[link=file:///etc/passwd]x", "file": "n1.json"}]}))
    return tmp_path


def test_hostile_names_in_every_output(tmp_path):
    d = _fleet(tmp_path)
    res = runner.invoke(app, ["cluster", str(d), "-j", "1"])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout
    assert "cluster.engine_name" in res.stdout.replace("\n", "") or "engine" in res.stdout
    res = runner.invoke(app, ["cluster", str(d), "-j", "1", "--format", "json"])
    doc = json.loads(res.stdout)
    assert EVIL in {r["hostname"] for r in doc["node_rows"]}
    assert "\x1b" not in res.stdout  # written as \u001b
    for fmt in ("slurm-topology", "k8s-labels"):
        res = runner.invoke(app, ["cluster", str(d), "-j", "1", "--format", fmt])
        # k8s-labels: the hostile names are refused, named on stderr, and the exit is 1
        assert res.exit_code == (1 if fmt == "k8s-labels" else 0), res.output
        assert "\x1b" not in res.stdout and "\x07" not in res.stdout
        assert "\x1b" not in res.stderr and "\x07" not in res.stderr
        body = [x for x in res.stdout.splitlines() if not x.startswith("#")]
        assert not any("evil" in x or "bell" in x for x in body), body
    res = runner.invoke(app, ["cluster", str(d), "-j", "1", "--format", "slurm-topology"])
    assert "BlockName=block000 Nodes=node-[00000,00003]" in res.stdout
