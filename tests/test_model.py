"""The topology model: path vocabulary, JSON round trip, schema versions, merging sources."""

import json

import pytest

from nvtopo.model import (
    GPU, NIC, SCHEMA_VERSION, Matrix, Note, NVLinkPair, Topology, nvlink_count, path_kind,
    path_rank,
)
from nvtopo.model.node import TopoText


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
        host={"hostname": "node1"},
        origin={"kind": "topo-text", "file": "x.txt"},
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
                               extra={"sysfs": {"bus": b}}) for i, b in enumerate(buses)],
                     matrix=Matrix(["GPU0", "GPU1", "GPU2", "mlx5_0"],
                                   [["X", None, None, "SYS"], [None, "X", None, "PIX"],
                                    [None, None, "X", "NODE"], ["SYS", "PIX", "NODE", "X"]],
                                   source="sysfs"),
                     sources=["sysfs"])
    t = Topology().merge(nvml).merge(sysfs)
    assert [g.index for g in t.gpus] == [0, 1]
    assert t.gpu(0).extra["sysfs"]["bus"] == "0000:43:00.0"
    assert t.gpu(1).extra["sysfs"]["bus"] == "0000:52:00.0"
    facts = [(d.subject, d.fact) for d in t.disagreements]
    assert facts == [("GPU at 0000:1b:00.0", "presence")]
    # the sysfs matrix is relabelled to the merged GPU numbers
    assert t.matrix.devices[:3] == ["GPU[0000:1b:00.0]", "GPU0", "GPU1"]
    assert t.path("GPU0", "mlx5_0") == "PIX" and t.path("GPU[0000:1b:00.0]", "mlx5_0") == "SYS"


def test_merge_presence_both_ways_by_index_without_bus_ids():
    a = Topology(gpus=[GPU(0), GPU(1)], sources=["topo-text"])
    b = Topology(gpus=[GPU(1), GPU(2)], sources=["nvml"])
    t = Topology().merge(a).merge(b)
    pres = {d.subject: d.values for d in t.disagreements if d.fact == "presence"}
    assert pres == {"GPU0": {"topo-text": "present", "nvml": "absent"},
                    "GPU2": {"topo-text": "absent", "nvml": "present"}}
    assert [g.index for g in t.gpus] == [0, 1, 2]
