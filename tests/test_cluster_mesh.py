"""The WireGuard mesh across nodes (``nvtopo cluster``'s ``mesh`` family) on simulated fleets
(``simulate --nodes N --mesh``, fleet faults ``wg-missing-peer``/``wg-unknown-peer``)."""

from __future__ import annotations

import json

import pytest

from nvtopo.commands import cluster
from nvtopo.commands.cluster import mesh as cmesh
from nvtopo.commands.cluster.facts import NodeFacts
from nvtopo.errors import NvtopoError
from nvtopo.layouts import load
from nvtopo.simulate import fleet
from nvtopo.simulate import mesh as smesh


def _run(tmp_path, nodes=4, fleet_faults=(), node_faults=(), mesh=True):
    p = fleet.plan(load("hgx-h100-8"), nodes, fleet_faults=list(fleet_faults),
                   node_faults=list(node_faults), mesh=mesh)
    paths = list(fleet.write(p, str(tmp_path / "fleet")))
    return cluster.run(paths, jobs=1)


def _mesh(result):
    return [f for f in result.findings if "mesh" in f.code]


def test_healthy_mesh_is_clean_and_complete(tmp_path):
    r = _run(tmp_path)
    assert _mesh(r) == []
    for i, n in enumerate(r.nodes):
        (iface, key, mtu, peers, status), = n.mesh
        assert (iface, mtu, status) == ("wg0", 1420, "ok")
        assert key == smesh.public_key(0, i)
        assert peers == tuple(sorted(smesh.public_key(0, j) for j in range(4) if j != i))


def test_no_mesh_says_nothing(tmp_path):
    r = _run(tmp_path, nodes=3, mesh=False)
    assert all(n.mesh == [] for n in r.nodes) and _mesh(r) == []


def test_one_sided_missing_peer_is_one_error(tmp_path):
    r = _run(tmp_path, fleet_faults=["wg-missing-peer:1:3"])
    (f,) = _mesh(r)
    assert (f.severity, f.code, f.subject) == ("error", "cluster.mesh_peer_missing",
                                               "node-00001")
    assert f.nodes == ["node-00001", "node-00003"] and "one-sided" in f.message


def test_node_missing_from_everyone_is_one_finding(tmp_path):
    faults = [f"wg-missing-peer:{i}:3" for i in range(3)]
    r = _run(tmp_path, fleet_faults=faults)
    (f,) = _mesh(r)
    assert (f.severity, f.code, f.subject) == ("error", "cluster.mesh_node_missing",
                                               "node-00003")
    assert "no other node's peer list" in f.message and f.actual == 0


def test_node_missing_from_several_is_one_finding(tmp_path):
    r = _run(tmp_path, nodes=5, fleet_faults=[f"wg-missing-peer:{i}:4" for i in range(3)])
    (f,) = _mesh(r)
    assert (f.code, f.subject) == ("cluster.mesh_node_missing", "node-00004")
    assert f.node_count == 4 and f.actual == 1


def test_unknown_peer_and_mtu_minority(tmp_path):
    r = _run(tmp_path, fleet_faults=["wg-unknown-peer:2"], node_faults=["0:wg-mtu:1380"])
    got = sorted((f.severity, f.code, tuple(f.nodes)) for f in _mesh(r))
    assert got == [("warning", "cluster.mesh_mtu", ("node-00000",)),
                   ("warning", "cluster.mesh_unknown_peer", ("node-00002",))]
    mtu = next(f for f in _mesh(r) if f.code == "cluster.mesh_mtu")
    assert (mtu.expected, mtu.actual) == (1420, 1380)


def _nf(name, key, peers, mtu=1420, status="ok"):
    return NodeFacts(file=name, name=name, mesh=[("wg0", key, mtu, peers, status)])


K = [smesh.public_key(9, i) for i in range(4)]


def test_unknown_peers_are_not_checked_never_complete():
    nodes = [_nf("a", K[0], (K[1],)), _nf("b", K[1], (K[0],)),
             _nf("c", None, None, status="not permitted")]
    found = cmesh.check(nodes)
    assert [(f.severity, f.code, f.nodes) for f in found] == [
        ("info", "cluster.mesh_not_checked", ["c"])]


def test_duplicate_key_is_an_error():
    nodes = [_nf("a", K[0], (K[1],)), _nf("b", K[1], (K[0],)), _nf("c", K[0], (K[1],))]
    codes = [(f.severity, f.code) for f in cmesh.check(nodes)]
    assert ("error", "cluster.mesh_duplicate_key") in codes


def test_symmetric_gap_is_a_warning():
    # a and b do not list each other (hub-and-spoke via c): not one-sided
    nodes = [_nf("a", K[0], (K[2],)), _nf("b", K[1], (K[2],)), _nf("c", K[2], (K[0], K[1]))]
    found = cmesh.check(nodes)
    assert sorted((f.severity, f.code, f.subject) for f in found) == [
        ("warning", "cluster.mesh_peer_missing", "a"),
        ("warning", "cluster.mesh_peer_missing", "b")]


def test_cluster_json_holds_mesh_findings(tmp_path):
    from nvtopo.commands.cluster import document

    r = _run(tmp_path, fleet_faults=["wg-missing-peer:1:3"])
    doc = json.loads(json.dumps(document(r)))
    assert [f["code"] for f in doc["findings"]] == ["cluster.mesh_peer_missing"]
    assert doc["verdict"] == "fail"


@pytest.mark.parametrize("spec", ["wg-missing-peer:1", "wg-missing-peer:1:9",
                                  "wg-unknown-peer:x"])
def test_bad_fleet_mesh_faults(spec):
    with pytest.raises(NvtopoError):
        fleet.plan(load("hgx-h100-8"), 4, fleet_faults=[spec])


@pytest.mark.parametrize("width", [80, 120, 200])
def test_cluster_table_cuts_no_code_or_key_at_any_width(tmp_path, width):
    """The findings table is fitted like every other: a code or a peer's public key is never
    cut short with an ellipsis (at 80 columns it read "cluster.mesh_pee…")."""
    from cli_runner import make_runner

    from nvtopo.cli import app

    p = fleet.plan(load("hgx-h100-8"), 4, fleet_faults=["wg-missing-peer:1:2",
                                                        "wg-unknown-peer:3"], mesh=True)
    paths = list(fleet.write(p, str(tmp_path / "fleet")))
    r = make_runner().invoke(app, ["cluster", *paths],
                             env={"COLUMNS": str(width), "NO_COLOR": "1", "TERM": "dumb"})
    assert r.exit_code == 1, (r.stdout, r.stderr)
    out = r.stdout
    assert "…" not in out, out
    assert all(len(line) <= width for line in out.splitlines()), out
    assert "cluster.mesh_peer_missing" in out and "cluster.mesh_unknown_peer" in out
    unknown = [f for f in cluster.run(paths, jobs=1).findings
               if f.code == "cluster.mesh_unknown_peer"]
    assert len(unknown) == 1 and unknown[0].subject in out


def test_node_that_left_the_mesh_is_named_once(tmp_path):
    # Before: only "cluster.mesh_unknown_peer <key> listed by 3 node(s)", never node-00002.
    r = _run(tmp_path, fleet_faults=["wg-no-interface:2"])
    gone = next(n for n in r.nodes if n.name == "node-00002")
    assert gone.mesh == [] and gone.net_listed  # eth0 listed, no WireGuard interface
    (f,) = _mesh(r)
    assert (f.severity, f.code, f.subject, f.nodes) == (
        "error", "cluster.mesh_no_interface", "node-00002", ["node-00002"])
    assert smesh.public_key(0, 2) in f.message and "3 of 4 nodes" in f.message
    assert (f.expected, f.actual) == ("a WireGuard interface", "none")


def test_left_node_and_a_separate_unknown_peer_stay_two_causes(tmp_path):
    r = _run(tmp_path, nodes=5, fleet_faults=["wg-no-interface:4", "wg-unknown-peer:1"])
    got = sorted((f.severity, f.code, tuple(f.nodes)) for f in _mesh(r))
    assert got == [("error", "cluster.mesh_no_interface", ("node-00004",)),
                   ("warning", "cluster.mesh_unknown_peer", ("node-00001",))]


def _bare(name, listed=True):
    return NodeFacts(file=name, name=name, mesh=[], net_listed=listed)


def test_bare_node_without_sysfs_evidence_is_unknown_not_missing():
    full = [_nf(n, K[i], tuple(K[j] for j in range(4) if j != i))
            for i, n in enumerate("abc")]
    # d's snapshot does not list its network interfaces: its key stays an unknown peer
    found = cmesh.check(full + [_bare("d", listed=False)])
    assert [(f.code, f.subject) for f in found] == [("cluster.mesh_unknown_peer", K[3])]
    found = cmesh.check(full + [_bare("d")])
    assert [(f.severity, f.code, f.subject) for f in found] == [
        ("error", "cluster.mesh_no_interface", "d")]


def test_bare_node_nobody_lists_is_a_warning_and_a_mostly_bare_fleet_says_nothing():
    ab = [_nf("a", K[0], (K[1],)), _nf("b", K[1], (K[0],))]
    found = cmesh.check(ab + [_bare("c")])
    assert [(f.severity, f.code, f.subject) for f in found] == [
        ("warning", "cluster.mesh_no_interface", "c")]
    assert cmesh.check(ab + [_bare("c"), _bare("d")]) == []  # 2 of 4 meshed: not most


def test_bad_no_interface_fault():
    with pytest.raises(NvtopoError):
        fleet.plan(load("hgx-h100-8"), 4, fleet_faults=["wg-no-interface:7"])


def test_userspace_wireguard_node_is_unknown_not_missing(tmp_path):
    """Before: error cluster.mesh_no_interface node-00003 ("has no WireGuard interface") for
    a node whose wg0 is wireguard-go's TUN device."""
    r = _run(tmp_path, fleet_faults=["wg-userspace:3"])
    tun = next(n for n in r.nodes if n.name == "node-00003")
    assert tun.mesh == [] and not tun.net_listed and "wg0 is a TUN device" in tun.net_unsure
    got = sorted((f.severity, f.code, f.subject, tuple(f.nodes)) for f in _mesh(r))
    assert got == [
        ("info", "cluster.mesh_membership_unknown", "WireGuard mesh", ("node-00003",)),
        # its key, which sysfs cannot show: a peer no node in the view has, as before
        ("warning", "cluster.mesh_unknown_peer", smesh.public_key(0, 3),
         ("node-00000", "node-00001", "node-00002"))]
    info = next(f for f in _mesh(r) if f.severity == "info")
    assert "node-00003: wg0 is a TUN device" in info.message and "3 of 4" in info.message
    assert not any(f.severity == "error" for f in r.findings)


def test_userspace_node_and_a_node_that_left_stay_apart(tmp_path):
    r = _run(tmp_path, nodes=5, fleet_faults=["wg-userspace:1", "wg-no-interface:4"])
    got = sorted((f.code, tuple(f.nodes)) for f in _mesh(r))
    assert ("cluster.mesh_no_interface", ("node-00004",)) in got
    assert ("cluster.mesh_membership_unknown", ("node-00001",)) in got
    assert not any("node-00001" in f.nodes and f.code == "cluster.mesh_no_interface"
                   for f in _mesh(r))


def test_unsure_node_is_never_named_missing():
    full = [_nf(n, K[i], tuple(K[j] for j in range(4) if j != i))
            for i, n in enumerate("abc")]
    d = NodeFacts(file="d", name="d", mesh=[], net_listed=False,
                  net_unsure="class/net was read only in part (3 more entries not looked at)")
    found = cmesh.check(full + [d])
    assert sorted((f.severity, f.code, f.subject) for f in found) == [
        ("info", "cluster.mesh_membership_unknown", "WireGuard mesh"),
        ("warning", "cluster.mesh_unknown_peer", K[3])]
    # a mostly bare fleet: no judgement to make, so no line either
    ab = [_nf("a", K[0], (K[1],)), _nf("b", K[1], (K[0],))]
    assert cmesh.check(ab + [_bare("c"), d]) == []
