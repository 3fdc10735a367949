"""``nvtopo simulate LAYOUT --nodes N -o DIR``: a consistent fleet, and its fleet faults."""

import json

import pytest

from cli_runner import make_runner
from nvtopo.cli import app
from nvtopo.errors import NvtopoError
from nvtopo.layouts import load
from nvtopo.simulate import fleet
from nvtopo.snapshot import document, load as load_snapshot

runner = make_runner()


def _models(directory):
    return {p.name: load_snapshot(str(p)) for p in sorted(directory.glob("*.json"))}


def test_fleet_is_consistent_and_distinct(tmp_path):
    res = runner.invoke(app, ["simulate", "gb200-nvl72-tray", "--nodes", "20", "-o",
                              str(tmp_path / "fleet"), "--seed", "4"])
    assert res.exit_code == 0, res.output
    models = _models(tmp_path / "fleet")
    assert len(models) == 20
    hosts = [m.host.hostname for m in models.values()]
    assert hosts == [f"node-{i:05d}" for i in range(20)]
    uuids = [g.uuid for m in models.values() for g in m.gpus]
    guids = [n.sysfs.node_guid for m in models.values() for n in m.nics]
    assert len(set(uuids)) == len(uuids) == 80
    assert len(set(guids)) == len(guids) == 120
    drivers = {m.nvml.system.driver_version for m in models.values()}
    assert len(drivers) == 1
    # domains of 18 trays: nodes 0-17 one ClusterUUID, 18-19 another; one clique
    fab = [{g.nvml.fabric.cluster_uuid for g in m.gpus} for m in models.values()]
    assert all(len(f) == 1 for f in fab)
    assert len({next(iter(f)) for f in fab[:18]}) == 1 and fab[18] == fab[19] != fab[0]
    assert {g.nvml.fabric.clique_id for m in models.values() for g in m.gpus} == {1}
    # rails: rank r on subnet r, SM LID 1, node i at LID 2+i, node_desc names the host
    m3 = models["node-00003.json"]
    ib = [n for n in m3.nics if n.sysfs.ports[0].link_layer == "InfiniBand"]
    assert [(n.sysfs.ports[0].gid_prefix, n.sysfs.ports[0].lid, n.sysfs.ports[0].sm_lid)
            for n in ib] == [(f"fe80:0000:0000:000{r}", 5, 1) for r in range(4)]
    assert ib[0].sysfs.node_desc == f"node-00003 {ib[0].name}"
    # each model derives without disagreements (a consistent node)
    assert all(not m.disagreements for m in models.values())


def test_fleet_is_deterministic(tmp_path):
    p = fleet.plan(load("dgx-h100"), 2, seed=1, fleet_faults=["driver:1:550.1.1"])
    a = fleet.node_document(p, 1)
    b = fleet.node_document(p, 1)
    assert a == b
    assert a["simulated"]["fleet"] == {"node": 1, "nodes": 2, "seed": 1,
                                       "faults": ["driver:1:550.1.1"]}
    topo = document.derive(a)
    assert topo.nvml.system.driver_version == "550.1.1"


def test_per_node_fault_applies_to_that_node_only():
    p = fleet.plan(load("dgx-h100"), 3, node_faults=["1:gpu-missing:GPU7"])
    assert [len(document.derive(fleet.node_document(p, i)).gpus) for i in range(3)] == [8, 7, 8]


@pytest.mark.parametrize("kwargs,message", [
    ({"nodes": 0}, "--nodes must be 1..100000"),
    ({"nodes": 100_001}, "--nodes must be 1..100000"),
    ({"nodes": 3, "fleet_faults": ["driver:3:550.1"]}, "node 3 is out of range"),
    # more digits than nvtopo reads as a number: refused in one line, no TypeError
    ({"nodes": 3, "fleet_faults": ["clique:1:" + "9" * 50]}, "number 99999999999999999999…"
                                                             " is out of range"),
    ({"nodes": 3, "node_faults": ["9" * 41 + ":gpu-missing:GPU7"]}, "is out of range"),
    ({"nodes": 3, "fleet_faults": ["bogus:1"]}, "unknown fleet fault"),
    ({"nodes": 3, "fleet_faults": ["outside-domain:1"]}, "no multi-node NVLink domain"),
    ({"nodes": 3, "fleet_faults": ["driver:1:5;rm"]}, "numbers and dots"),
    ({"nodes": 3, "node_faults": ["pcie-width:GPU2:8"]}, "names its node"),
    ({"nodes": 3, "node_faults": ["1:nonsense"]}, ""),
    ({"nodes": 3, "prefix": "a b"}, "prefix"),
])
def test_bad_plans_are_refused_before_writing(kwargs, message):
    nodes = kwargs.pop("nodes")
    with pytest.raises(NvtopoError) as e:
        fleet.plan(load("dgx-h100"), nodes, **kwargs)
    assert message in str(e.value)


def test_cli_needs_a_directory_and_refuses_bad_faults(tmp_path):
    res = runner.invoke(app, ["simulate", "dgx-h100", "--nodes", "2"])
    assert res.exit_code == 2 and "-o DIR" in res.stderr
    res = runner.invoke(app, ["simulate", "dgx-h100", "--fleet-fault", "driver:0:1"])
    assert res.exit_code == 2 and "needs --nodes" in res.stderr
    res = runner.invoke(app, ["simulate", "dgx-h100", "--nodes", "2", "-o", str(tmp_path / "x"),
                              "--fleet-fault", "duplicate-lid:0:5"])
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    assert not (tmp_path / "x").exists()
    f = tmp_path / "file"
    f.write_text("")
    res = runner.invoke(app, ["simulate", "dgx-h100", "--nodes", "2", "-o", str(f)])
    assert res.exit_code == 2 and "not a directory" in res.stderr


def test_duplicate_hostname_keeps_files_apart(tmp_path):
    p = fleet.plan(load("dgx-h100"), 3, fleet_faults=["duplicate-hostname:2:0"])
    paths = list(fleet.write(p, str(tmp_path)))
    assert [x.rsplit("/", 1)[1] for x in paths] == ["node-00000.json", "node-00001.json",
                                                    "node-00002.json"]
    hosts = [json.loads(open(x).read())["host"]["hostname"] for x in paths]
    assert hosts == ["node-00000", "node-00001", "node-00000"]


def test_fleet_snapshots_match_the_snapshot_schema():
    import schema_check
    from nvtopo.snapshot import dumps

    p = fleet.plan(load("gb200-nvl72-tray"), 20, fleet_faults=["clique:19:3", "split-domain:0"])
    for i in (0, 10, 19):
        doc = json.loads(dumps(fleet.node_document(p, i)))
        schema_check.validate(doc, "snapshot", what=f"fleet node {i}")
    assert fleet.node_document(p, 10)["simulated"]["fleet"]["faults"] == ["split-domain:0"]
    assert fleet.node_document(p, 19)["simulated"]["fleet"]["faults"] == ["clique:19:3"]
