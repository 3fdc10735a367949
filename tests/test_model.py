"""The topology model: path vocabulary, JSON round trip, schema versions, merging sources."""

import json

import pytest

from nvtopo.model import (
    GPU, NIC, SCHEMA_VERSION, Host, Matrix, Note, NVLinkPair, Origin, Topology, nvlink_count,
    path_kind, path_rank,
)
from nvtopo.model.node import SysfsNode, TopoText
from nvtopo.model.pcie import PciPlacement
from nvtopo.model.rdma import Hca
from nvtopo.model.storage import NvmeDrive


@pytest.mark.parametrize("token,kind,rank", [
    ("X", "X", 0), ("NV1", "NV", 1), ("NV18", "NV", 1), ("PIX", "PIX", 2), ("PXB", "PXB", 3),
    ("PHB", "PHB", 4), ("NODE", "NODE", 5), ("SYS", "SYS", 6), ("SOC", "SYS", 6),
    ("NV?", None, None), ("", None, None), (None, None, None), ("OK", None, None),
])
def test_path_vocabulary(token, kind, rank):
    assert path_kind(token) == kind
    assert path_rank(token) == rank


def test_nvlink_count():
    assert nvlink_count("NV12") == 12
    assert nvlink_count("PIX") is None
    assert nvlink_count(None) is None


def _sample() -> Topology:
    t = Topology(
        gpus=[GPU(index=0, cpu_affinity="0-47,96-143", numa_affinity="0", gpu_numa_id=None,
                  sources={"cpu_affinity": "topo-text"}),
              GPU(index=1, name="NVIDIA H100 80GB HBM3", uuid="GPU-1", pci_bus_id="0000:1b:00.0",
                  gpu_numa_id=12, extra={"pcie": {"gen": 5}})],
        nics=[NIC(label="NIC0", name="mlx5_0", numa_node=0, extra={"ports": [1]})],
        matrix=Matrix(devices=["GPU0", "GPU1", "NIC0"],
                      cells=[["X", "NV18", "PIX"], ["NV18", "X", None], ["PIX", "SOC", "X"]]),
        p2p=Matrix(devices=["GPU0", "GPU1"], cells=[["X", "OK"], ["OK", "X"]], mode="r"),
        nvlinks=[NVLinkPair(0, 1, 18)],
        host=Host(hostname="node1"),
        origin=Origin.of("topo-text", file="x.txt"),
        sources=["topo-text"],
        notes=[Note("topo.x", "something", level="warning", subject="GPU0")],
        topo_text=TopoText(kind="paths", legend_style="modern"),
        extra={"later-source": {"kind": "paths"}},
    )
    return t


def test_round_trip_without_loss():
    t = _sample()
    doc = json.loads(json.dumps(t.to_dict()))
    assert doc["schema_version"] == SCHEMA_VERSION
    back = Topology.from_dict(doc)
    assert back.to_dict() == t.to_dict()
    assert back.matrix.get("GPU1", "NIC0") is None
    assert back.path("GPU1", "NIC0") == "SOC"  # mirrored cell
    assert back.p2p.mode == "r"


def test_newer_schema_refused():
    doc = _sample().to_dict()
    doc["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(ValueError, match="newer"):
        Topology.from_dict(doc)
    del doc["schema_version"]
    with pytest.raises(ValueError, match="schema_version"):
        Topology.from_dict(doc)


def test_matrix_must_be_square():
    with pytest.raises(ValueError):
        Matrix(devices=["GPU0", "GPU1"], cells=[["X"], ["X", "X"]])


def test_matrix_pairs_use_mirror_for_unknown_cells():
    m = Matrix(devices=["A0", "B0"], cells=[["X", None], ["PIX", "X"]])
    assert list(m.pairs()) == [("A0", "B0", "PIX")]


def test_numa_nodes_in_first_seen_order():
    t = Topology(gpus=[GPU(0, numa_affinity="3"), GPU(1, numa_affinity="1"),
                       GPU(2, numa_affinity="3"), GPU(3)])
    assert t.numa_nodes() == ["3", "1"]


def test_merge_fills_gaps_and_records_disagreements():
    a = Topology(gpus=[GPU(0, cpu_affinity="0-7", sources={"cpu_affinity": "topo-text"})],
                 matrix=Matrix(["GPU0", "GPU1"], [["X", "NV4"], ["NV4", "X"]]),
                 nvlinks=[NVLinkPair(0, 1, 4)], sources=["topo-text"])
    b = Topology(gpus=[GPU(0, cpu_affinity="0-3", uuid="GPU-abc",
                           sources={"cpu_affinity": "nvml", "uuid": "nvml"}),
                       GPU(1, uuid="GPU-def", sources={"uuid": "nvml"})],
                 matrix=Matrix(["GPU0", "GPU1"], [["X", "NV3"], ["NV3", "X"]], source="nvml"),
                 nvlinks=[NVLinkPair(0, 1, 3, source="nvml")], sources=["nvml"])
    t = Topology().merge(a).merge(b)
    assert t.sources == ["topo-text", "nvml"]
    assert [g.index for g in t.gpus] == [0, 1]
    assert t.gpu(0).uuid == "GPU-abc" and t.gpu(0).sources["uuid"] == "nvml"
    assert t.gpu(0).cpu_affinity == "0-7"  # first source kept
    facts = {(d.subject, d.fact): d.values for d in t.disagreements}
    assert facts[("GPU0", "cpu_affinity")] == {"topo-text": "0-7", "nvml": "0-3"}
    assert facts[("GPU0-GPU1", "path")] == {"topo-text": "NV4", "nvml": "NV3"}
    assert facts[("GPU0-GPU1", "nvlink_count")] == {"topo-text": 4, "nvml": 3}
    assert t.nvlink(1, 0) == 4


def test_merge_matches_gpus_by_bus_id_not_by_position():
    buses = ["0000:1b:00.0", "0000:43:00.0", "0000:52:00.0"]
    # NVML lost the first GPU (say it is bound to vfio): it numbers the other two 0 and 1
    nvml = Topology(gpus=[GPU(i, pci_bus_id=b.upper().replace("0000:", "00000000:"),
                              sources={"pci_bus_id": "nvml"}) for i, b in enumerate(buses[1:])],
                    sources=["nvml"])
    # sysfs numbers GPUs in PCI order and sees all three
    sysfs = Topology(gpus=[GPU(i, pci_bus_id=b, sources={"pci_bus_id": "sysfs"},
                               sysfs=PciPlacement(pci_address=b)) for i, b in enumerate(buses)],
                     nics=[NIC("mlx5_0", "mlx5_0", sysfs=Hca(
                         name="mlx5_0", gpu_paths={"GPU0": "SYS", "GPU1": "PIX", "GPU2": "NODE"},
                         nearest_gpus=["GPU1"], nearest_gpu_path="PIX"))],
                     matrix=Matrix(["GPU0", "GPU1", "GPU2", "mlx5_0"],
                                   [["X", None, None, "SYS"], [None, "X", None, "PIX"],
                                    [None, None, "X", "NODE"], ["SYS", "PIX", "NODE", "X"]],
                                   source="sysfs"),
                     sources=["sysfs"])
    sysfs.sysfs = SysfsNode(nvme=[NvmeDrive(pci_address="0000:60:00.0",
                                            gpu_paths={"GPU0": "SYS", "GPU2": "PXB"},
                                            nearest_gpus=["GPU2"])],
                            gpu_bus_ids={f"GPU{i}": b for i, b in enumerate(buses)})
    t = Topology().merge(nvml).merge(sysfs)
    assert [g.index for g in t.gpus] == [0, 1]
    assert t.gpu(0).sysfs.pci_address == "0000:43:00.0"
    assert t.gpu(1).sysfs.pci_address == "0000:52:00.0"
    facts = [(d.subject, d.fact) for d in t.disagreements]
    assert facts == [("GPU at 0000:1b:00.0", "presence")]
    # the sysfs matrix is relabelled to the merged GPU numbers
    assert t.matrix.devices[:3] == ["GPU[0000:1b:00.0]", "GPU0", "GPU1"]
    assert t.path("GPU0", "mlx5_0") == "PIX" and t.path("GPU[0000:1b:00.0]", "mlx5_0") == "SYS"
    # ... and so is every sysfs fact that names GPUs: the HCA's and the NVMe drive's paths
    hca = t.nic("mlx5_0").sysfs
    assert hca.gpu_paths == {"GPU[0000:1b:00.0]": "SYS", "GPU0": "PIX", "GPU1": "NODE"}
    assert hca.nearest_gpus == ["GPU0"]
    assert t.sysfs.nvme[0].gpu_paths == {"GPU[0000:1b:00.0]": "SYS", "GPU1": "PXB"}
    assert t.sysfs.nvme[0].nearest_gpus == ["GPU1"]
    assert t.sysfs.gpu_bus_ids == {"GPU[0000:1b:00.0]": buses[0], "GPU0": buses[1],
                                   "GPU1": buses[2]}
    # a reader asking for GPU0's path to the NIC gets this model's GPU0's (not sysfs's GPU0's)
    assert t.gpu_nic_path(0, "mlx5_0") == ("PIX", "sysfs")


def test_merge_presence_both_ways_by_index_without_bus_ids():
    a = Topology(gpus=[GPU(0), GPU(1)], sources=["topo-text"])
    b = Topology(gpus=[GPU(1), GPU(2)], sources=["nvml"])
    t = Topology().merge(a).merge(b)
    pres = {d.subject: d.values for d in t.disagreements if d.fact == "presence"}
    assert pres == {"GPU0": {"topo-text": "present", "nvml": "absent"},
                    "GPU2": {"topo-text": "absent", "nvml": "present"}}
    assert [g.index for g in t.gpus] == [0, 1, 2]


# --- one property, one answer ------------------------------------------------------------------

from nvtopo.model.nvml import NvmlNode  # noqa: E402


@pytest.mark.parametrize("affinity,placed,node,source", [
    ("0", None, 0, "topo-text"),
    ("0,5-11", None, 0, "topo-text"),          # the first node of a list
    ("3-4", 1, 3, "topo-text"),                # the affinity wins over sysfs
    (" 12", None, 12, "topo-text"),
    (None, 2, 2, "sysfs"),                     # no affinity: sysfs's numa_node
    ("N/A", 1, 1, "sysfs"),                    # an affinity that names no node
    ("\u0663", None, None, ""),                # a non-ASCII digit is no node
    (None, None, None, ""),                    # nobody says (sysfs's -1 is null)
])
def test_a_gpus_numa_node_is_one_answer(affinity, placed, node, source):
    g = GPU(0, numa_affinity=affinity, sources={"numa_affinity": "topo-text"} if affinity
            else {}, sysfs=PciPlacement(pci_address="0000:1b:00.0", numa_node=placed)
            if placed is not None or affinity is None else None)
    assert g.numa_node == node
    assert g.numa_node_source == source


def test_numa_node_is_the_same_in_the_check_the_metrics_and_the_picture():
    """A GPU whose NUMA affinity spans two nodes: the NUMA check, the Prometheus label and the
    SVG box all say node 2 (they used to say 2, "2-3" and "2-3")."""
    from nvtopo import checks, layouts
    from nvtopo.render import prometheus, svg

    t = Topology(gpus=[GPU(i, numa_affinity="2-3", sources={"numa_affinity": "topo-text"})
                       for i in range(2)], sources=["topo-text"])
    report = checks.run(t, layouts.load("dgx-h100"))
    text = prometheus.render_check(report, topo=t)
    assert 'numa="2"' in text and 'numa="2-3"' not in text
    picture = svg.render(t, report)
    assert "NUMA 2" in picture and "NUMA 2-3" not in picture


def _complete(n, count=18):
    return Topology(gpus=[GPU(i) for i in range(n)],
                    nvlinks=[NVLinkPair(a, b, count) for a in range(n) for b in range(a + 1, n)])


def test_nvswitch_is_nvmls_answer_where_nvml_read_the_gpus():
    t = _complete(8)
    t.nvml = NvmlNode(status="ok", nvswitch=False)
    assert t.nvswitch is False                  # NVML says no switch: the text does not overrule
    t.nvml.nvswitch = True
    assert t.nvswitch is True
    t.nvml = NvmlNode(status="unavailable", nvswitch=None)   # NVML said nothing
    assert t.nvswitch is True                   # ... so the pairs decide


def test_nvswitch_from_the_pairs_alone():
    assert _complete(8).nvswitch is True        # 8 GPUs all linked: no direct mesh does that
    assert _complete(4, 4).nvswitch is None     # 4 GPUs all linked: a direct mesh can
    t = _complete(8)
    t.nvlinks = [p for p in t.nvlinks if (p.a, p.b) != (2, 6)]
    assert t.nvswitch is None                   # one pair without NVLink: cannot tell
    t = _complete(8)
    t.nvlinks[0].count = 0
    assert t.nvswitch is None
    assert Topology().nvswitch is None          # no GPUs, no answer
    mixed = _complete(8)                        # NV17 and NV18 (a link down): still a switch
    for p in mixed.nvlinks:
        if 3 in (p.a, p.b):
            p.count = 17
    assert mixed.nvswitch is True


def _nics():
    t = Topology(gpus=[GPU(0), GPU(1)],
                 nics=[NIC("NIC0", "mlx5_0"), NIC("NIC1", "mlx5_1"), NIC("mlx5_2", "mlx5_2")],
                 matrix=Matrix(["GPU0", "GPU1", "NIC0", "NIC1"],
                               [["X", "NV4", "PIX", "SYS"], ["NV4", "X", "SYS", None],
                                ["PIX", "SYS", "X", "SYS"], ["SYS", "PXB", "SYS", "X"]]))
    t.nics[2].sysfs = Hca(name="mlx5_2", gpu_paths={"GPU0": "NODE", "GPU1": "PIX"})
    return t


def test_gpu_nic_path_from_the_matrix_then_sysfs():
    t = _nics()
    assert t.gpu_nic_path(0, "mlx5_0") == ("PIX", "topo-text")
    assert t.gpu_nic_path(1, "mlx5_1") == ("PXB", "topo-text")   # the mirrored cell
    assert t.gpu_nic_path(1, "mlx5_2") == ("PIX", "sysfs")       # not in the matrix
    assert t.gpu_nic_path(0, "mlx5_9") == (None, "")             # no such NIC
    assert t.gpu_nic_path(5, "mlx5_0") == (None, "")             # no such GPU


def test_nearest_nics_and_the_nearest_compute_nic():
    t = _nics()
    assert t.nearest_nics(0) == (["mlx5_0"], "PIX")
    assert t.nearest_nics(1) == (["mlx5_2"], "PIX")
    assert t.nearest_nics(1, ["mlx5_0", "mlx5_1"]) == (["mlx5_1"], "PXB")
    t.nics[2].sysfs.gpu_paths["GPU0"] = "PIX"
    assert t.nearest_nics(0) == (["mlx5_0", "mlx5_2"], "PIX")     # ties, in the given order
    assert t.nearest_compute_nic(0, ["mlx5_2", "mlx5_0"]) == ("mlx5_2", "PIX")
    assert t.nearest_compute_nic(0, ["mlx5_9"]) is None
    assert Topology(gpus=[GPU(0)]).nearest_nics(0) == ([], None)


def test_annotation_tokenizer_is_a_linear_scanner():
    """The codec reads annotations written as text with a scanner (no regular expression):
    the forms the model uses become tokens, and anything else stops the scan, so the codec
    refuses the annotation instead of misreading it."""
    import time

    from nvtopo.model import spec

    assert spec._tokens("Optional[Dict[str, List[int]]]") == [
        "Optional", "[", "Dict", "[", "str", ",", "List", "[", "int", "]", "]", "]"]
    assert spec._tokens(" typing.Optional[ nvml.NvmlGpu ]") == [
        "typing.Optional", "[", "nvml.NvmlGpu", "]"]
    assert spec._tokens("List[int] | None") == ["List", "[", "int", "]"]
    with pytest.raises(TypeError):
        spec._text_spec("List[int] | None", "nvtopo.model.core")
    t0 = time.perf_counter()
    assert spec._tokens(" " * 200_000 + "!") == []
    assert time.perf_counter() - t0 < 10  # was quadratic as a findall over \s*


# --- typed host facts and origin (issue 22, item 5) ------------------------------------------


def test_host_keeps_a_host_block_as_read_in_its_order():
    block = {"time": "2024-01-01T00:00:00+00:00", "rack": {"row": 7}, "hostname": None,
             "cpu_count_logical": 64}
    topo = Topology.from_dict(dict(_sample().to_dict(), host=block))
    host = topo.host
    assert host.hostname is None and host.cpu_count_logical == 64 and host.kernel is None
    assert host.time == block["time"] and host.others == {"rack": {"row": 7}}
    written = topo.to_dict()["host"]
    assert written == block and list(written) == list(block)  # flat, in the block's order
    assert "kernel" not in written  # a fact not set is no key (not null)


def test_host_facts_set_later_follow_in_the_order_set_and_a_merge_adds_only_new_ones():
    host = Host(hostname="a", kernel="k")
    host.put("rack", "r1")
    host.put("cpu_count_logical", 8)
    assert list(host.to_dict()) == ["hostname", "kernel", "rack", "cpu_count_logical"]
    other = Host.of({"hostname": "b", "os": "Linux", "rack": "r2"})
    host.fill(other)
    assert host.to_dict() == {"hostname": "a", "kernel": "k", "rack": "r1",
                              "cpu_count_logical": 8, "os": "Linux"}


def test_a_host_fact_of_the_wrong_type_is_refused_by_the_model():
    with pytest.raises(ValueError, match=r"\$\.host\.cpu_count_logical: expected int"):
        Topology.from_dict(dict(_sample().to_dict(), host={"cpu_count_logical": "64"}))
    with pytest.raises(ValueError, match=r"\$\.host: expected an object \(Host\)"):
        Topology.from_dict(dict(_sample().to_dict(), host=["n1"]))


def test_origin_tells_a_missing_key_from_a_null_one():
    live, unnamed = Origin.of("live", sysfs_root="/sys"), Origin.of("snapshot", file=None)
    assert live.to_dict() == {"kind": "live", "sysfs_root": "/sys"} and live.file is None
    assert unnamed.to_dict() == {"kind": "snapshot", "file": None} and unnamed.file is None
    assert Origin().to_dict() == {} and Origin().kind is None
    assert Origin.from_dict({"kind": "example", "file": "x"}) == Origin(kind="example", file="x")


def test_every_gpu_nic_path_at_once_is_each_one_asked_alone_on_a_simulated_node():
    """(the corpus-wide twin is in test_cache_validation, slow tier)"""
    from nvtopo import layouts
    from nvtopo.simulate import simulate
    from nvtopo.snapshot import derive

    for name, faults in (("dgx-h100", ["ib-port-down:mlx5_4"]), ("gb200-nvl72-tray", []),
                         ("dgx-a100", ["gpu-missing:GPU7"])):
        topo = derive(simulate(layouts.load(name), faults, seed=1))
        gpus = sorted({g.index for g in topo.gpus}) + [99]
        want = {(g, n.name): topo.gpu_nic_path(g, n.name) for n in topo.nics for g in gpus}
        assert topo.gpu_nic_paths(gpus) == want
        assert sum(1 for tok, _ in want.values() if tok is not None) >= 8, name


def test_a_matrix_cell_getter_answers_as_get_and_sees_a_label_changed_in_place():
    from nvtopo.model import Matrix

    m = Matrix(devices=["GPU0", "GPU1", "mlx5_0", "GPU0"],
               cells=[["X", "NV18", "PIX", None], ["NV18", "X", None, "SYS"],
                      ["PIX", "SYS", "X", None], [None, None, None, "X"]])
    get = m.cell_getter()
    labels = ["GPU0", "GPU1", "mlx5_0", "nope"]
    assert all(get(a, b) == m.get(a, b) for a in labels for b in labels)
    m.devices[1] = "GPU9"  # changed in place: the index is stale; the getter is get itself
    get = m.cell_getter()
    labels = ["GPU0", "GPU1", "GPU9", "mlx5_0"]
    assert get == m.get and all(get(a, b) == m.get(a, b) for a in labels for b in labels)


def test_path_tokens_are_classified_as_before_and_long_text_is_kept_out_of_the_caches():
    from nvtopo.model import vocab

    longest = max([*vocab.PATH_ORDER, *vocab.PATH_ALIASES, "NV9999"], key=len)
    assert len(longest) <= vocab.TOKEN_MAX
    assert (vocab.path_kind("NV9999"), vocab.nvlink_count("NV9999"),
            vocab.path_rank("NV9999")) == ("NV", 9999, 1)
    assert (vocab.path_kind("SOC"), vocab.path_rank("SOC")) == ("SYS", 6)
    before = vocab._path_kind.cache_info().currsize
    huge = "NV1" + "8" * 1_000_000
    assert vocab.path_kind(huge) is None and vocab.nvlink_count(huge) is None \
        and vocab.path_rank(huge) is None and vocab.path_kind("NV12345") is None
    assert vocab._path_kind.cache_info().currsize == before  # (nothing long was kept)
