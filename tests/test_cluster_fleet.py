"""``nvtopo cluster`` over simulated fleets: clean on a healthy one, each fault found with
exactly its nodes, and no other node blamed."""

import json
import os

import pytest

from cli_runner import make_runner
from nvtopo.cli import app
from nvtopo.commands import cluster
from nvtopo.layouts import load
from nvtopo.render import cluster as render
from nvtopo.simulate import fleet

runner = make_runner()
GB = "gb200-nvl72-tray"


def _write(directory, layout, nodes, fleet_faults=(), node_faults=(), seed=0):
    p = fleet.plan(load(layout), nodes, seed=seed, fleet_faults=fleet_faults,
                   node_faults=node_faults)
    return list(fleet.write(p, str(directory)))


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    d = tmp_path_factory.mktemp("healthy")
    _write(d, GB, 36)
    return d


FAULTS = ["outside-domain:40", "split-domain:1", "clique:5:2", "driver:3:570.1.2",
          "rail-subnet:7:3", "duplicate-guid:8:9", "duplicate-lid:10:11",
          "duplicate-hostname:12:13"]
NODE_FAULTS = ["14:pcie-width:GPU2:8", "15:fabric-not-started"]


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    d = tmp_path_factory.mktemp("faulty")
    _write(d, GB, 54, FAULTS, NODE_FAULTS)
    return d


def _by_code(result):
    out = {}
    for f in result.findings:
        out.setdefault(f.code, []).append(f)
    return out


def test_healthy_fleet_is_clean(healthy):
    r = cluster.run([str(healthy)], jobs=1)
    assert len(r.nodes) == 36 and not r.unreadable
    assert r.findings == []
    assert r.exit_status() == 0
    doms = r.domains()
    assert [len(d["nodes"]) for d in doms.values()] == [18, 18]
    assert all(d["cliques"] == [1] for d in doms.values())
    n = r.nodes[0]
    assert n.driver == "570.124.06" and n.kernel == fleet.KERNEL
    assert [x.rank for x in n.rails] == [0, 1, 2, 3]
    assert {x.prefix for x in n.rails} == {f"fe80:0000:0000:000{i}" for i in range(4)}


def test_each_fault_is_found_with_its_nodes(faulty):
    r = cluster.run([str(faulty)], jobs=2)
    assert len(r.nodes) == 54
    codes = _by_code(r)
    name = fleet.hostname
    p = fleet.Plan(layout=load(GB), nodes=54)

    def nodes(code):
        return sorted(n for f in codes[code] for n in f.nodes)

    assert [f.severity for f in codes["cluster.fabric_incomplete"]] == ["error"]
    assert nodes("cluster.fabric_incomplete") == [name(p, 15)]
    assert nodes("cluster.skew_in_domain") == [name(p, 3)]
    assert codes["cluster.skew_in_domain"][0].actual == "570.1.2"
    assert codes["cluster.skew_in_domain"][0].expected == "570.124.06"
    assert nodes("cluster.domain_cliques") == [name(p, 5)]
    assert nodes("cluster.rail_subnet") == [name(p, 7)]
    assert str(codes["cluster.rail_subnet"][0].subject) == "rail 3"
    assert nodes("cluster.duplicate_guid") == [name(p, 8), name(p, 9)]
    assert nodes("cluster.duplicate_lid") == [name(p, 10), name(p, 11)]
    assert [str(f.subject) for f in codes["cluster.duplicate_hostname"]] == [name(p, 13)]
    dup = codes["cluster.duplicate_hostname"][0]  # the nodes carrying it: their files
    assert sorted(os.path.basename(x) for x in dup.nodes) == sorted(
        f"{name(p, i)}.json" for i in (12, 13)), dup.nodes
    assert all(os.path.basename(x) in dup.message for x in dup.nodes)
    odd = {str(f.subject): f.nodes for f in codes["cluster.odd_node"]}
    assert odd[f"{GB} pcie_width"] == [name(p, 14)]
    # the tray outside its domain: a domain of 1; the split domain: two halves of 9
    short = sorted((f.actual, tuple(f.nodes)) for f in codes["cluster.domain_incomplete"])
    assert (1, (name(p, 40),)) in short
    halves = [s for s in short if s[0] == 9]
    assert [h[1][0] for h in halves] == [name(p, 18), name(p, 27)]
    # nothing else: every error is one of the faults
    # racks (NVML platform info): the split rack has no majority domain (9 and 9 trays:
    # all named); the tray outside its domain is the one of its rack
    mism = sorted(tuple(f.nodes) for f in codes["cluster.rack_domain_mismatch"])
    assert mism == [tuple(name(p, i) for i in range(18, 36)), (name(p, 40),)]
    errors = {f.code for f in r.findings if f.severity == "error"}
    assert errors == {"cluster.fabric_incomplete", "cluster.skew_in_domain",
                      "cluster.duplicate_guid", "cluster.duplicate_lid",
                      "cluster.duplicate_hostname", "cluster.rack_domain_mismatch"}
    assert "cluster.version_skew" not in codes  # the in-domain skew is not reported twice
    assert r.exit_status() == 1


def test_skew_outside_a_domain_is_a_warning(tmp_path):
    _write(tmp_path, "dgx-h100", 5, ["driver:2:550.1.1"])
    r = cluster.run([str(tmp_path)], jobs=1)
    assert [(f.severity, f.code, f.nodes, f.actual) for f in r.findings] == [
        ("warning", "cluster.version_skew", ["node-00002"], "550.1.1")]
    assert r.exit_status() == 0


def test_eight_rail_fleet_subnets_and_duplicates(tmp_path):
    _write(tmp_path, "dgx-h100", 6, ["rail-subnet:4:6", "duplicate-lid:1:2"])
    r = cluster.run([str(tmp_path)], jobs=1)
    got = sorted((f.code, str(f.subject), tuple(f.nodes)) for f in r.findings)
    assert got == [("cluster.duplicate_lid", "LID 4 on fe80:0000:0000:0000",
                    ("node-00001", "node-00002")),
                   ("cluster.rail_subnet", "rail 6", ("node-00004",))]
    assert len(r.nodes[0].rails) == 8


def test_duplicate_gpu_uuid_when_a_snapshot_is_read_twice(tmp_path, healthy):
    a = tmp_path / "a.json"
    a.write_bytes((healthy / "node-00000.json").read_bytes())
    r = cluster.run([str(healthy / "node-00000.json"), str(a)], jobs=1)
    codes = _by_code(r)
    assert len(codes["cluster.duplicate_gpu_uuid"]) == 4
    assert codes["cluster.duplicate_hostname"][0].actual == 2


def test_collect_manifest_gives_engine_names(tmp_path):
    _write(tmp_path, "dgx-h100", 3)
    manifest = {"kind": "nvtopo-collect", "nodes": [
        {"node": "node-00000", "file": "node-00000.json", "status": "answered"},
        {"node": "gpu17", "file": "node-00001.json", "status": "answered"}]}
    (tmp_path / "collect.json").write_text(json.dumps(manifest))
    r = cluster.run([str(tmp_path)], jobs=1)
    assert len(r.nodes) == 3  # collect.json itself is no snapshot
    assert [(f.code, f.nodes, f.actual) for f in r.findings] == [
        ("cluster.engine_name", ["gpu17"], "node-00001")]
    assert {n.name for n in r.nodes} == {"node-00000", "gpu17", "node-00002"}


def test_unreadable_file_is_a_warning_and_the_rest_is_read(tmp_path):
    _write(tmp_path, "dgx-h100", 3)
    (tmp_path / "broken.json").write_text("{not json")
    r = cluster.run([str(tmp_path)], jobs=1)
    assert len(r.nodes) == 3 and len(r.unreadable) == 1
    assert [f.code for f in r.findings] == ["cluster.unreadable"]
    assert "broken.json" in r.findings[0].message
    assert r.exit_status() == 0


def test_cli_json_slurm_labels_and_exit_status(tmp_path, healthy, faulty):
    res = runner.invoke(app, ["cluster", str(healthy), "--format", "json", "-j", "1"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["counts"] == {"nodes": 36, "unreadable": 0, "domains": 2, "errors": 0,
                             "warnings": 0}
    res = runner.invoke(app, ["cluster", str(faulty), "--format", "json", "-j", "1"])
    assert res.exit_code == 1
    assert json.loads(res.stdout)["verdict"] == "fail"
    res = runner.invoke(app, ["cluster", str(healthy), "--format", "slurm-topology", "-j", "1"])
    assert res.exit_code == 0
    lines = [x for x in res.stdout.splitlines() if not x.startswith("#")]
    assert lines == ["BlockName=block000 Nodes=node-[00000-00017]",
                     "BlockName=block001 Nodes=node-[00018-00035]",
                     "BlockSizes=18,36"]  # a rack, then two racks (docs/cluster.md §3)
    res = runner.invoke(app, ["cluster", str(healthy), "--format", "slurm-yaml", "-j", "1"])
    assert res.exit_code == 0
    lines = [x for x in res.stdout.splitlines() if not x.startswith("#")]
    assert lines[:7] == ["---", "- topology: nvlink", "  cluster_default: true", "  block:",
                         "    block_sizes:", "      - 18", "      - 36"]
    out = tmp_path / "labels.txt"
    res = runner.invoke(app, ["cluster", str(healthy), "--format", "k8s-labels", "-j", "1",
                              "-o", str(out)])
    assert res.exit_code == 0
    assert not [x for x in out.read_text().splitlines() if x.startswith("#")]
    rows = [x.split() for x in out.read_text().splitlines()]
    assert len(rows) == 36 and rows[0][0] == "node-00000"
    assert rows[0][1].startswith("nvtopo.io/gpu.clique=") and rows[0][1].endswith(".1")
    assert "nvtopo.io/rails=4" in rows[0] and "nvtopo.io/rail-rate-gbps=400" in rows[0]
    res = runner.invoke(app, ["cluster", str(tmp_path / "nothing-here")])
    assert res.exit_code == 2
    assert "Traceback" not in res.output


def test_table_output(faulty):
    res = runner.invoke(app, ["cluster", str(faulty), "-j", "1"])
    assert res.exit_code == 1
    assert "cluster.duplicate_guid" in res.stdout.replace("\n", "") or \
        "cluster.duplicat" in res.stdout
    assert "54 node(s) read" in res.stdout


@pytest.mark.parametrize("names,want", [
    (["n1", "n2", "n3"], "n[1-3]"),
    (["n001", "n002", "n004", "n005", "n007"], "n[001-002,004-005,007]"),
    (["n9", "n010"], "n9,n010"),
    (["gpu-a", "node-01"], "node-01,gpu-a"),
    (["a1b2", "a1b3"], "a1b[2-3]"),
])
def test_hostlist(names, want):
    assert render.hostlist(names) == want


def test_hostile_names_never_reach_topology_or_labels():
    doc = {"counts": {"nodes": 2}, "no_domain": [],
           "domains": [{"cluster_uuid": "u\x1b[31m", "cliques": [1],
                        "nodes": ["ok-1", "bad\nSwitchName=x Nodes=all"]}],
           "node_rows": [{"name": "bad name", "domain": "u", "clique": 1, "rails": 0,
                          "rail_rate_gbps": None},
                         {"name": "ok-1", "domain": "u", "clique": 1, "rails": 1,
                          "rail_rate_gbps": 400}]}
    text = render.slurm_block(doc)
    assert "\x1b" not in text and "\nSwitchName" not in text
    assert [x for x in text.splitlines() if not x.startswith("#")] == [
        "BlockName=block000 Nodes=ok-1", "BlockSizes=1"]
    for row in doc["node_rows"]:
        row.update(hostname=row["name"], engine_name=None)
    labels = render.k8s_labels(doc)
    assert labels.splitlines() == ["ok-1 nvtopo.io/gpu.clique=u.1 nvtopo.io/nvlink-domain=u "
                                   "nvtopo.io/rails=1 nvtopo.io/rail-rate-gbps=400"]


def test_real_inputs_of_no_common_layout_are_not_compared_as_one_kind():
    """Regression: the fixtures (pasted texts of many different machines) gave 30 odd-node
    warnings when nodes matching no layout were compared with each other."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "fixtures" / "topo-corpus"
    r = cluster.run([str(root)], jobs=1)
    assert len(r.nodes) > 20
    assert not [f for f in r.findings if f.code in ("cluster.odd_node", "cluster.rail_mismatch")
                and str(f.subject).startswith("none")]
    assert not [f for f in r.findings if f.severity == "error"
                and f.code != "cluster.duplicate_gpu_uuid"]


def test_a_model_nvtopo_cannot_take_facts_from_is_unreadable_not_a_crash(tmp_path, monkeypatch):
    from nvtopo.commands.cluster import facts

    _write(tmp_path, "dgx-h100", 2)

    def broken(topo, path, engine_name=None):
        if path.endswith("node-00001.json"):
            raise KeyError("boom")
        return real(topo, path, engine_name)

    real = facts.facts_of
    monkeypatch.setattr(facts, "facts_of", broken)
    r = cluster.run([str(tmp_path)], jobs=1)
    assert [n.name for n in r.nodes] == ["node-00000"]
    assert "could not take its facts (KeyError" in r.unreadable[0].error


def test_collect_output_gzip_snapshots_and_manifest(tmp_path):
    """What `nvtopo collect` writes: DIR/<node>.json.gz and DIR/collect.json naming them."""
    from nvtopo import output
    from nvtopo.snapshot import dumps

    p = fleet.plan(load("gb200-nvl72-tray"), 3)
    nodes = []
    for i in range(3):
        output.write(dumps(fleet.node_document(p, i)), str(tmp_path / f"gpu{i}.json.gz"))
        nodes.append({"node": f"gpu{i}", "file": f"gpu{i}.json.gz", "status": "answered"})
    (tmp_path / "collect.json").write_text(json.dumps({"kind": "nvtopo-collect",
                                                       "nodes": nodes}))
    r = cluster.run([str(tmp_path)], jobs=1)
    assert sorted(n.name for n in r.nodes) == ["gpu0", "gpu1", "gpu2"]
    assert sorted(n.hostname for n in r.nodes) == ["node-00000", "node-00001", "node-00002"]
    codes = sorted((f.code, tuple(f.nodes)) for f in r.findings)
    assert codes == [("cluster.domain_incomplete", ("gpu0", "gpu1", "gpu2")),
                     ("cluster.engine_name", ("gpu0", "gpu1", "gpu2")),
                     ("cluster.rack_slots", ("gpu0", "gpu1", "gpu2"))]  # 3 of 18 trays


# --- one cause, one finding (issue 23 class 10) ----------------------------------------------


def test_one_port_down_is_one_finding_and_no_one_node_domains(tmp_path):
    """One port down on one node: it was four findings (rail_mismatch as an error on the
    10 Gb/s a DOWN port reports, odd_node, rail_down, rail_subnet on its SM LID 0); and every
    8-GPU NVSwitch box was listed as a one-node "NVLink domain"."""
    _write(tmp_path, "dgx-h100", 6, node_faults=["2:ib-port-down:mlx5_4"])
    r = cluster.run([str(tmp_path)], jobs=1)
    assert [(f.severity, f.code, str(f.subject), f.nodes) for f in r.findings] == [
        ("warning", "cluster.rail_down", "rail 2", ["node-00002"])]
    assert r.exit_status() == 0
    assert r.domains() == {}
    doc = cluster.document(r)
    assert (doc["counts"]["domains"], doc["counts"]["node_local"], doc["no_domain"]) == (0, 6, [])
    assert all(row["domain"] is None for row in doc["node_rows"])
    out = render.text(doc, "table")
    assert "NVLink domains" not in out and "6 node(s) with a node-local NVSwitch" in out
    assert "no NVLink domain in these snapshots" in render.text(doc, "slurm-topology")


def test_an_active_port_at_a_lower_rate_is_still_a_mismatch(tmp_path):
    """The healthy counterpart of the fold: a port that is ACTIVE at a lower rate is a rail
    mismatch (error), as before."""
    _write(tmp_path, "dgx-h100", 6, node_faults=["2:ib-rate:mlx5_4:200"])
    r = cluster.run([str(tmp_path)], jobs=1)
    got = {(f.severity, f.code, str(f.subject), tuple(f.nodes)) for f in r.findings}
    assert ("error", "cluster.rail_mismatch", "rail 2", ("node-00002",)) in got
    assert not any(f.code in ("cluster.rail_down", "cluster.rail_subnet") for f in r.findings)
    assert r.exit_status() == 1


def test_duplicate_hostname_names_the_engines_nodes(tmp_path):
    """Two nodes the engine knows as gpu-a and gpu-b both claim one hostname: the finding
    names them (not only the hostname)."""
    from nvtopo.snapshot import dumps

    p = fleet.plan(load("dgx-h100"), 3)
    entries = []
    for i, node in enumerate(["gpu-a", "gpu-b", "gpu-c"]):
        doc = fleet.node_document(p, i)
        if i < 2:
            doc["host"]["hostname"] = "clone"
        (tmp_path / f"s{i}.json").write_text(dumps(doc))
        entries.append({"node": node, "file": f"s{i}.json", "status": "answered"})
    (tmp_path / "collect.json").write_text(json.dumps({"kind": "nvtopo-collect",
                                                       "nodes": entries}))
    r = cluster.run([str(tmp_path)], jobs=1)
    dup = [f for f in r.findings if f.code == "cluster.duplicate_hostname"]
    assert len(dup) == 1 and dup[0].nodes == ["gpu-a", "gpu-b"] and dup[0].node_count == 2
    assert "'clone' in 2 snapshots: gpu-a, gpu-b" in dup[0].message
