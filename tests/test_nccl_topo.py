"""NCCL's topology XML: read (nvtopo/probes/nccl/topo_xml.py), written from a snapshot
(`nvtopo snapshot --format nccl-topo`, nvtopo/render/nccl_topo.py) and compared with the node
(`nccl.topo_differs`, nvtopo/checks/nccl_topo.py)."""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_runner import make_runner
from test_hostile_parsers import finishes_within

from nvtopo import snapshot
from nvtopo.cli import app
from nvtopo.commands import explain as explain_mod
from nvtopo.errors import NvtopoError
from nvtopo.model import Topology
from nvtopo.probes import readers
from nvtopo.probes.nccl import topo_xml
from nvtopo.render.nccl_topo import busid

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "nccl"
runner = make_runner()


@pytest.fixture(scope="module")
def h100(tmp_path_factory):
    out = tmp_path_factory.mktemp("node") / "h100.json"
    r = runner.invoke(app, ["simulate", "dgx-h100", "--hostname", "dgx-h100-9603", "-o",
                            str(out)])
    assert r.exit_code == 0, r.output
    return out


@pytest.fixture(scope="module")
def written(h100, tmp_path_factory):
    out = tmp_path_factory.mktemp("xml") / "topo.xml"
    r = runner.invoke(app, ["snapshot", "--from", str(h100), "--format", "nccl-topo", "-o",
                            str(out)])
    assert r.exit_code == 0, r.output
    return out


def test_nccls_dump_is_read():
    text = (FIX / "topo-dump-v100-2gpu.xml").read_text(encoding="utf-8")
    assert readers.names(text) == ["nccl-topo"]
    x = topo_xml.parse(text)
    assert [(c.numaid, c.arch) for c in x.cpus] == [(0, "x86_64"), (1, "x86_64")]
    assert [(g.busid, g.dev, g.sm, g.gdr) for g in x.gpus] == \
        [("0000:17:00.0", 0, 80, 1), ("0000:b1:00.0", 1, 80, 1)]
    assert [(n.count, n.tclass) for n in x.gpus[0].nvlinks] == [(2, "0x068000")] * 2
    assert [(n.name, n.busid, n.speed, n.gdr) for n in x.nets] == \
        [("mlx5_0", "0000:18:00.0", 200000, 1), ("mlx5_1", "0000:b2:00.0", 200000, 0)]
    assert x.ancestors("0000:17:00.0") == ["0000:11:00.0"] == x.ancestors("0000:18:00.0")
    assert x.ancestors("0000:b1:00.0") == []
    pci = {p.busid: p for p in x.pcis}
    assert (pci["0000:17:00.0"].link_width, pci["0000:17:00.0"].link_speed,
            pci["0000:17:00.0"].holds) == (16, "16.0 GT/s PCIe", "gpu")


def test_the_written_file_reads_back_as_the_node(h100, written):
    x = topo_xml.parse(written.read_text(encoding="utf-8"))
    node = snapshot.load(str(h100))
    assert x.version == "1" and [c.numaid for c in x.cpus] == [0, 1]
    assert sorted(g.busid for g in x.gpus) == []  # NCCL fills <gpu>; the file gives pci only
    bridges = [p for p in x.pcis if p.class_ == "0x060400"]
    assert len(bridges) == 8 and all(p.busid.startswith("ffff:ff:") for p in bridges)
    for b in bridges:
        under = [p for p in x.pcis if p.parent == b.busid]
        assert sorted(p.class_ for p in under) == ["0x020700", "0x030200"], b.busid
        assert b.link_width == 16 and b.link_speed == "32.0 GT/s PCIe"
    gpus = {p.busid: p for p in x.pcis if p.class_ == "0x030200"}
    assert sorted(gpus) == sorted(busid(g.pci_bus_id) for g in node.gpus)
    for g in node.gpus:
        p = gpus[busid(g.pci_bus_id)]
        assert p.numaid == int(g.numa_affinity) and p.link_width == 16
        nic = node.nic(node.nearest_nics(g.index)[0][0])
        assert [q.parent for q in x.pcis if q.busid == busid(nic.pci_bus_id)] == [p.parent]


def test_the_written_file_beside_its_node_differs_in_nothing(h100, written):
    found = explain_mod.explain([str(written), str(h100)])
    assert [f.code for f in found.report.findings if f.code.startswith("nccl.")] == []


def test_a_flattened_dump_beside_the_node_is_named(h100, tmp_path):
    node = snapshot.load(str(h100))
    rows = [f'<pci busid="{busid(g.pci_bus_id)}" class="0x030200"/>' for g in node.gpus]
    rows += [f'<pci busid="{busid(n.pci_bus_id)}" class="0x020700"/>' for n in node.nics]
    flat = tmp_path / "flat.xml"
    flat.write_text('<system version="1"><cpu numaid="1">' + "".join(rows[:4]) +
                    "".join(rows[8:]) + "</cpu></system>")
    found = explain_mod.explain([str(flat), str(h100)])
    got = [f for f in found.report.findings if f.code == "nccl.topo_differs"]
    assert len(got) == 3 and all(f.severity == "warning" for f in got)
    text = " | ".join(f.message for f in got)
    assert "lacks 4 of the node's GPUs" in text
    assert "4 GPU/compute-NIC pair(s) under one PCIe switch" in text and "GPU0-mlx5_0 (PIX)" in text
    assert "GPU0: node 0, NCCL 1" in text


@pytest.mark.parametrize("text, words", [
    ('<!DOCTYPE system [<!ENTITY a "b">]><system version="1"/>', "refused"),
    ('<system version="1">' + "<pci busid='x'>" * 70, "deeper"),
    ('<system version="1"><cpu', "not well-formed")])
def test_hostile_xml_is_one_line(tmp_path, text, words):
    bad = tmp_path / "bad.xml"
    bad.write_text(text)
    r = runner.invoke(app, ["explain", "--from", str(bad)])
    assert r.exit_code == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_cut_dump_keeps_what_was_read():
    text = (FIX / "topo-dump-v100-2gpu.xml").read_text(encoding="utf-8")
    x = topo_xml.parse(text[:text.index("<cpu numaid=\"1\"")])
    assert x.truncated and len(x.gpus) == 1 and x.nets[0].name == "mlx5_0"


_PIECES = st.sampled_from([
    '<system version="1">', "</system>", '<cpu numaid="0">', "</cpu>",
    '<pci busid="0000:17:00.0" class="0x030200" link_width="16">', "</pci>",
    '<gpu dev="0" sm="90">', "</gpu>", '<nvlink target="0000:e7:00.0" count="18"/>',
    "<nic>", "</nic>", '<net name="mlx5_0" dev="0" speed="400000"/>', '<pci busid="zz">',
    'link_width="99999999999999999999"', "&amp;", "<", ">", "\x00", " ", "\n"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, max_size=60))
def test_fuzzed_xml_parses_or_is_refused_in_one_line(pieces: List[str]) -> None:
    text = '<system version="1">' + "".join(pieces)
    with finishes_within(10):
        try:
            topo = topo_xml.derive_text(text)
        except NvtopoError as exc:
            assert "\n" not in str(exc)
            return
    assert Topology.from_dict(topo.to_dict()).nccl_topo == topo.nccl_topo


def test_nccls_graph_dump_is_read_and_judged_beside_the_node(h100):
    path = FIX / "graph-dump-ring-sys.xml"
    x = topo_xml.parse(path.read_text(encoding="utf-8"))
    ring, tree = x.graphs
    assert (ring.pattern, ring.nchannels, ring.bw_intra, ring.bw_inter, ring.type_intra,
            ring.type_inter) == (4, 2, 20.0, 12.0, "NVL", "SYS")
    assert ring.channels[1].split()[:3] == ["net1", "gpu1", "gpu0"] and tree.pattern == 1
    alone = explain_mod.explain([str(path)])
    assert alone.report.findings == () and "ring, 2 channel(s)" in alone.lines[0]
    both = explain_mod.explain([str(path), str(h100)])
    (f,) = [f for f in both.report.findings if f.code.startswith("nccl.")]
    assert (f.code, f.severity) == ("nccl.topo_differs", "warning")
    assert "reaches the network at SYS" in f.message
