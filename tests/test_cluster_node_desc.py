"""``node_desc`` (rdma-ndd's "<hostname> <device>") in the sysfs probe and the HCA record."""

import copy

from nvtopo import simulate as sim
from nvtopo.layouts import load
from nvtopo.snapshot import document


def _doc():
    return sim.simulate(load("dgx-h100"), seed=3, hostname="gpu-a17")


def test_node_desc_is_read_into_the_hca_record():
    topo = document.derive(_doc())
    descs = {n.name: n.sysfs.node_desc for n in topo.nics}
    assert descs["mlx5_0"] == "gpu-a17 mlx5_0"
    assert descs["mlx5_7"] == "gpu-a17 mlx5_7"
    assert all("node_desc" not in n.sysfs.unknown for n in topo.nics)
    assert topo.nics[0].sysfs.to_dict()["node_desc"] == "gpu-a17 mlx5_0"


def _drop(doc, pred):
    doc = copy.deepcopy(doc)
    files = doc["probes"]["sysfs"]["files"]
    for k in [k for k in files if k.endswith("/node_desc")]:
        pred(files, k)
    return doc


def test_evidence_without_node_desc_leaves_it_out_not_unknown():
    doc = _drop(_doc(), lambda files, k: files.pop(k))
    topo = document.derive(doc)
    assert topo.nics and all(n.sysfs.node_desc is None for n in topo.nics)
    assert all("node_desc" not in n.sysfs.unknown for n in topo.nics)
    assert "node_desc" not in topo.nics[0].sysfs.to_dict()


def test_node_desc_whitespace_is_trimmed():
    doc = _drop(_doc(), lambda files, k: files.__setitem__(k, "  gpu-a17 mlx5_0 \n"))
    topo = document.derive(doc)
    assert topo.nics[0].sysfs.node_desc == "gpu-a17 mlx5_0"
