"""The cross-node families on hand-made node facts: the cases a simulated fleet does not
make (an oversize domain, a node split across domains, ties, unknown values)."""

from nvtopo.commands.cluster import domains, identity, rails, shape, skew
from nvtopo.commands.cluster.facts import NodeFacts, Rail
from nvtopo.commands.cluster.majority import split

GB = "gb200-nvl72-tray"


def _node(i, uuid="U1", clique=1, layout=GB, state="completed", status="success", **kw):
    n = NodeFacts(file=f"n{i}.json", name=f"n{i:02d}", hostname=f"n{i:02d}", layout=layout,
                  **kw)
    if uuid is not False:
        n.fabric = [(uuid, clique, state, status)] * 4
    return n


def test_majority_rule():
    assert split([("a", 1), ("b", 1), ("c", 2), ("d", None)]) == (1, {2: ["c"]}, ["d"])
    major, minor, _ = split([("a", 1), ("b", 2)])
    assert major is None and minor == {1: ["a"], 2: ["b"]}  # a tie: no majority, both shown
    assert split([("a", None)]) == (None, {}, ["a"])


def test_oversize_domain_is_an_error():
    found = domains.check([_node(i) for i in range(19)])
    assert [(f.severity, f.code, f.expected, f.actual) for f in found] == [
        ("error", "cluster.domain_oversize", 18, 19)]


def test_full_domain_is_clean_and_unknown_layout_has_no_size():
    assert domains.check([_node(i) for i in range(18)]) == []
    assert domains.check([_node(i, layout="dgx-h100") for i in range(3)]) == []


def test_node_split_and_incomplete_fabric():
    split_node = _node(0)
    split_node.fabric = [("U1", 1, "completed", "success"), ("U2", 1, "completed", "success")]
    zero = _node(1, clique=0)
    pending = _node(2, state="in_progress", status=None)
    bad_status = _node(3, status="insufficient_resources")
    found = domains.check([split_node, zero, pending, bad_status])
    got = sorted((f.code, f.actual if f.code != "cluster.node_split" else None, tuple(f.nodes))
                 for f in found)
    assert got == [("cluster.fabric_incomplete", "clique 0", ("n01",)),
                   ("cluster.fabric_incomplete", "state in_progress", ("n02",)),
                   ("cluster.fabric_incomplete", "status insufficient_resources", ("n03",)),
                   ("cluster.node_split", None, ("n00",))]


def test_nodes_without_fabric_facts_are_not_judged():
    assert domains.check([_node(i, uuid=False) for i in range(3)]) == []


def test_skew_unknown_is_not_a_minority():
    ns = [_node(i, uuid=False, layout="dgx-h100", driver=d)
          for i, d in enumerate(["550.1", "550.1", None])]
    assert skew.check(ns) == []


def test_firmware_skew_per_board():
    ns = [_node(i, uuid=False, layout="dgx-h100") for i in range(3)]
    for n, fw in zip(ns, ["28.1", "28.1", "28.2"]):
        n.firmware = [("MT_0000000838", fw), ("MT_0000000223", "20.1")]
    found = skew.check(ns)
    assert [(f.code, str(f.subject), f.nodes, f.actual) for f in found] == [
        ("cluster.version_skew", "firmware MT_0000000838", ["n02"], "28.2")]


def _rail(rank, rate=400, layer="InfiniBand", state="ACTIVE", prefix="fe80:0:0:0", sm=1):
    return Rail(rank, f"mlx5_{rank}", layer, rate, state, prefix, 10 + rank, sm, None, None)


def test_rail_rate_and_layer_mismatch_are_errors_state_a_warning():
    ns = [_node(i, uuid=False, layout="dgx-h100") for i in range(4)]
    for n in ns:
        n.rails = [_rail(0), _rail(1)]
    ns[1].rails[1] = _rail(1, rate=200)
    ns[2].rails[0] = _rail(0, layer="Ethernet")
    ns[3].rails[0] = _rail(0, state="DOWN")
    got = sorted((f.severity, f.code, str(f.subject), tuple(f.nodes)) for f in rails.check(ns))
    assert got == [("error", "cluster.rail_mismatch", "rail 0", ("n02",)),
                   ("error", "cluster.rail_mismatch", "rail 1", ("n01",)),
                   ("warning", "cluster.rail_down", "rail 0", ("n03",))]


def test_duplicate_guid_inside_one_node_is_not_a_fleet_duplicate():
    n = _node(0, uuid=False)
    n.hcas = [("mlx5_0", "compute", "aa:bb", None, None, None, None),
              ("mlx5_1", "compute", "aa:bb", None, None, None, None)]
    assert rails.check([n]) == []


def test_shape_needs_three_nodes_of_a_layout():
    ns = [_node(i, uuid=False, layout="dgx-h100") for i in range(2)]
    ns[0].shape, ns[1].shape = {"gpus": 8}, {"gpus": 7}
    assert shape.check(ns) == []
    third = _node(2, uuid=False, layout="dgx-h100")
    third.shape = {"gpus": 8}
    assert [(str(f.subject), f.nodes) for f in shape.check(ns + [third])] == [
        ("dgx-h100 gpus", ["n01"])]


def test_engine_name_by_first_label():
    a = _node(0, uuid=False, engine_name="n00")
    a.hostname = "n00.cluster.example"
    b = _node(1, uuid=False, engine_name="gpu7")
    assert [(f.code, f.nodes) for f in identity.check([a, b])] == [
        ("cluster.engine_name", ["gpu7"])]


def test_storage_nic_on_a_compute_rail_subnet():
    ns = [_node(i, uuid=False, layout="dgx-h100") for i in range(3)]
    for i, n in enumerate(ns):
        n.rails = [_rail(0, prefix="fe80:0000:0000:0007")]
        n.hcas = [("mlx5_0", "compute", None, None, "fe80:0000:0000:0007", 10 + i, "InfiniBand"),
                  ("mlx5_9", "other", None, None, "fe80:0000:0000:0099", 20 + i, "InfiniBand")]
    ns[2].hcas[1] = ("mlx5_9", "other", None, None, "fe80:0000:0000:0007", 30, "InfiniBand")
    found = rails.check(ns)
    assert [(f.severity, f.code, f.nodes) for f in found] == [
        ("warning", "cluster.storage_on_rail", ["n02"])]


def test_short_domain_says_when_nodes_are_in_no_domain():
    ns = [_node(i) for i in range(17)] + [_node(17, state="not_started", status=None)]
    found = {f.code: f for f in domains.check(ns)}
    assert found["cluster.fabric_incomplete"].nodes == ["n17"]
    assert found["cluster.domain_incomplete"].actual == 17
    assert "1 node(s) of the fleet are in no domain" in found["cluster.domain_incomplete"].message


def test_many_duplicates_are_bounded_findings():
    a, b = _node(0, uuid=False), _node(1, uuid=False)
    for n in (a, b):
        n.hcas = [(f"mlx5_{i}", "compute", f"00:{i:04x}", None, "fe80:1", 2 + i, "InfiniBand")
                  for i in range(150)]
    found = rails.check([a, b])
    guid = [f for f in found if f.code == "cluster.duplicate_guid"]
    lid = [f for f in found if f.code == "cluster.duplicate_lid"]
    assert len(guid) == len(lid) == 101
    assert guid[-1].message == "50 more duplicate GUIDs" and guid[-1].nodes == ["n00", "n01"]


def test_one_node_of_many_rails_costs_its_rails_not_rails_times_nodes():
    """Ranks were compared by walking every node of the layout once per rank: one snapshot
    claiming 20,000 rails in a fleet of 20,000 nodes cost 400 million steps (25 s).  Now each node's
    rails are walked once; the answer is the same."""
    import time

    n, many = 20000, 20000
    ns = [_node(i, uuid=False, layout="dgx-h100") for i in range(n)]
    for x in ns:
        x.rails = [_rail(0), _rail(1)]
    ns[7].rails = [_rail(r) for r in range(many)]
    ns[8].rails = [_rail(0, rate=200), _rail(1)]
    t = time.process_time()
    got = rails.check(ns)
    took = time.process_time() - t
    assert [(f.severity, f.code, str(f.subject), tuple(f.nodes)) for f in got] == [
        ("error", "cluster.rail_mismatch", "rail 0", ("n08",))]
    assert took < 10, took  # a hang detector


def test_a_nic_whose_role_is_unknown_is_not_storage_on_a_compute_rail():
    """Roles come from nvtopo/checks/roles.py: a NIC it could not place (role unknown) on a
    compute rail's subnet may be a compute NIC, so it is not called storage (issue 22)."""
    ns = [_node(i, uuid=False, layout="dgx-h100") for i in range(3)]
    for i, n in enumerate(ns):
        n.rails = [_rail(0, prefix="fe80:0000:0000:0007")]
        n.hcas = [("mlx5_0", "compute", None, None, "fe80:0000:0000:0007", 10 + i, "InfiniBand"),
                  ("mlx5_9", "unknown", None, None, "fe80:0000:0000:0007", 20 + i,
                   "InfiniBand")]
    assert rails.check(ns) == []
    ns[1].hcas[1] = ("mlx5_9", "storage", None, None, "fe80:0000:0000:0007", 21, "InfiniBand")
    assert [(f.code, f.nodes) for f in rails.check(ns)] == [
        ("cluster.storage_on_rail", ["n01"])]


def test_a_down_port_is_rail_down_only_and_node_local_fabrics_are_no_domains():
    ns = [_node(i, uuid=False, layout="dgx-h100") for i in range(4)]
    for n in ns:
        n.rails = [_rail(0), _rail(1)]
    ns[3].rails[1] = _rail(1, rate=10, state="DOWN", sm=0)  # as ibstat shows a Down port
    assert [(f.code, f.nodes) for f in rails.check(ns)] == [("cluster.rail_down", ["n03"])]
    # unknown state: its rate is still compared
    ns[2].rails[0] = _rail(0, rate=200, state=None)
    assert ("cluster.rail_mismatch", ["n02"]) in [(f.code, f.nodes) for f in rails.check(ns)]
    # one 8-GPU NVSwitch box per ClusterUUID: node-local, not a domain; a GB200 tray alone
    # in its ClusterUUID is (a short multi-node domain), as are two nodes sharing one
    boxes = [_node(i, uuid=f"H{i}", layout="dgx-h100") for i in range(3)]
    tray = _node(5, uuid="G1")
    pair = [_node(6, uuid="P", layout="none"), _node(7, uuid="P", layout="none")]
    assert list(domains.domains(boxes + [tray] + pair)) == ["G1", "P"]
    assert domains.node_local(boxes + [tray] + pair) == ["n00", "n01", "n02"]
