"""One cause, one finding (issue 12, item 7): a BIOS NUMA setting that moves every GPU, P2P
off on every pair, and a disagreement about one pair or one GPU-NIC path told by several
facts or under two names, are each ONE finding naming what they cover.  Each with its
counterpart (one GPU off, one pair off, two different pairs) that stays per subject."""

from __future__ import annotations

import json

from test_checks_families import LAY, healthy

from nvtopo import checks, layouts, snapshot
from nvtopo.checks import source, subject as S
from nvtopo.checks.select import given
from nvtopo.model import Disagreement
from nvtopo.model.nvml import P2PMatrix
from nvtopo.simulate import simulate


def found(topo, layout=LAY):
    return [f for f in checks.run(topo, layout).findings if f.severity != "info"]


def keys(fs):
    return [(f.severity, f.code, str(f.subject)) for f in fs]


def test_numa_setting_moving_every_gpu_is_one_finding_naming_the_gpus():
    topo = healthy()
    for g in topo.gpus:  # node interleaving / NPS: the sockets' GPUs swap nodes
        g.numa_affinity = "1" if g.index < 4 else "0"
    got = found(topo)
    assert keys(got) == [("error", "numa.placement", "node")]
    f = got[0]
    assert f.actual == {f"GPU{i}": (1 if i < 4 else 0) for i in range(8)}
    assert f.expected == {f"GPU{i}": (0 if i < 4 else 1) for i in range(8)}
    assert "GPU0 on 1 (layout 0)" in f.message and "GPU7 on 0 (layout 1)" in f.message
    assert "BIOS" in f.hint


def test_one_gpu_off_its_numa_node_stays_per_gpu():
    topo = healthy()
    topo.gpu(5).numa_affinity = "0"
    assert keys(found(topo)) == [("error", "numa.placement", "GPU5")]
    assert found(healthy()) == []


def _p2p(topo, bad_pairs):
    n = len(topo.gpus)
    devs = [f"GPU{i}" for i in range(n)]
    cells = [["X" if a == b else ("NS" if (min(a, b), max(a, b)) in bad_pairs else "OK")
              for b in range(n)] for a in range(n)]
    topo.nvml.p2p = {"read": P2PMatrix(devices=devs, cells=cells)}
    return topo


def test_p2p_off_on_every_pair_is_one_finding():
    topo = healthy()
    every = {(a, b) for a in range(8) for b in range(a + 1, 8)}
    got = found(_p2p(topo, every))
    assert keys(got) == [("error", "p2p.not_supported", "node")]
    assert "28 GPU pairs" in got[0].message and got[0].actual == "read: NS"


def test_p2p_off_on_one_pair_stays_per_pair():
    got = found(_p2p(healthy(), {(1, 4)}))
    assert keys(got) == [("error", "p2p.not_supported", "GPU1-GPU4")]
    assert found(_p2p(healthy(), set())) == []


def test_disagreements_about_one_pair_are_one_finding():
    topo = healthy(nvml=False)
    topo.disagreements += [
        Disagreement("GPU2-GPU6", "path", {"topo-text": "NV17", "nvml": "NV18"}, "differ"),
        Disagreement("GPU6-GPU2", "p2p", {"topo-text": "OK", "nvml": "NS"}, "differ"),
        Disagreement("GPU0-GPU1", "path", {"topo-text": "NV18", "nvml": "NV17"}, "differ"),
    ]
    # the family itself (checks.run folds these under nvlink.pair_degraded besides)
    got = source.check(topo, given(LAY))
    assert sorted(str(f.subject) for f in got) == ["GPU0-GPU1", "GPU2-GPU6"]
    both = next(f for f in got if f.subject == S.pair(2, 6))
    assert set(both.actual) == {"path", "p2p"} and "p2p" in both.message


def test_a_nic_by_matrix_label_and_by_device_name_is_one_disagreement():
    topo = healthy()
    nic = topo.nics[0]
    nic.label = "NIC0"
    topo.disagreements += [
        Disagreement("GPU0-NIC0", "path", {"topo-text": "PIX", "sysfs": "PXB"}, "differ"),
        Disagreement(f"GPU0-{nic.name}", "path", {"topo-text": "PIX", "sysfs": "PXB"},
                     "differ"),
    ]
    got = source.check(topo, given(LAY))
    assert keys(got) == [("warning", "source.disagreement", f"GPU0-{nic.name}")]
    assert got[0].subject == S.gpu_nic(0, nic.name)


def test_simulated_healthy_nodes_have_no_folded_finding():
    for name in ("dgx-h100", "dgx-a100", "hgx-b300-8"):
        topo = snapshot.derive(json.loads(json.dumps(simulate(layouts.load(name), (),
                                                              seed=4))), where="s")
        assert [f for f in checks.select_and_run(topo).findings if f.severity != "info"] == []


def _job_given_two_gpus():
    """A node's snapshot as a Slurm job or container given GPU0 and GPU1 takes it: the topo
    text lists 2 GPUs, sysfs (the host's /sys) still shows all 8 on the PCI bus."""
    d = json.loads(snapshot.dumps(simulate(layouts.load("dgx-h100"), [], seed=1)))
    lines = d["probes"]["topo-text"]["stdout"].split("\n")
    out = []
    for i, line in enumerate(lines):
        cells = line.split("\t")
        if len(cells) > 8 and (i == 0 or line.startswith(("GPU0", "GPU1", "NIC"))):
            out.append("\t".join(cells[:3] + cells[9:]))
        elif not (len(cells) > 8 and line.startswith("GPU")):
            out.append(line)
    d["probes"]["topo-text"]["stdout"] = "\n".join(out)
    del d["probes"]["nvml"]
    d.pop("derived", None)
    return d


def test_gpus_hidden_from_a_job_are_one_warning_not_one_per_gpu(tmp_path):
    """Before: six source.disagreement warnings, each telling to re-take the snapshot."""
    p = tmp_path / "job.json"
    p.write_text(json.dumps(_job_given_two_gpus()))
    topo = snapshot.load(str(p))
    assert len(topo.gpus) == 8
    found = [f for f in source.check(topo, given(None)) if f.severity != "info"]
    assert [(f.code, f.severity, str(f.subject)) for f in found] == [
        ("source.gpus_not_listed", "warning", "node")]
    for bdf in ("0000:14:00.0", "0000:2f:00.0"):
        assert bdf in found[0].message
    assert found[0].message.startswith("6 GPUs on the PCI bus")
    report = checks.select_and_run(topo)
    assert not [f for f in report.findings if f.severity == "error"], report.findings


def test_a_gpu_listed_by_every_source_gives_no_not_listed_finding():
    topo = snapshot.derive(json.loads(snapshot.dumps(simulate(layouts.load("dgx-h100"), [],
                                                              seed=1))), where="s")
    assert not [f for f in source.check(topo, given(None)) if f.code == "source.gpus_not_listed"]
