"""Typed subjects and the check report: the text every subject kind shows, equality by what a
subject is (never by its text), folding by subject, the report's verdict, counts and JSON
document, and the renderers reading the report instead of deciding."""

from __future__ import annotations

import json

import pytest

from nvtopo import checks, layouts, snapshot
from nvtopo.checks import subject as S
from nvtopo.checks.source import subject_of
from nvtopo.model import GPU, NIC, Disagreement, Topology
from nvtopo.render import prometheus as prom
from nvtopo.simulate import simulate

# --- subjects --------------------------------------------------------------------------------

#: Every kind, as the checks build it, and the text the JSON ``subject`` field has carried.
TEXT = [
    (S.gpu(3), "gpu", "GPU3"),
    (S.link(3, 7), "link", "GPU3 link 7"),
    (S.pair(2, 6), "pair", "GPU2-GPU6"),
    (S.gpu_nic(0, "mlx5_0"), "gpu_nic", "GPU0-mlx5_0"),
    (S.port("mlx5_4", 1), "port", "mlx5_4 port 1"),
    (S.nic("mlx5_bond_0"), "nic", "mlx5_bond_0"),
    (S.switch("0000:05:00.0"), "switch", "0000:05:00.0"),
    (S.NODE, "node", "node"),
    (S.other("GPU at 0000:3b:00.0"), "other", "GPU at 0000:3b:00.0"),
    (S.host("node-00017"), "host", "node-00017"),
    (S.rail(3), "rail", "rail 3"),
    (S.domain("1b2c"), "domain", "domain 1b2c"),
    (S.fleet("GUID 0c42:a103"), "fleet", "GUID 0c42:a103"),
]


@pytest.mark.parametrize("subject,kind,text", TEXT, ids=[t[1] for t in TEXT])
def test_every_kind_shows_the_text_the_json_contract_has(subject, kind, text):
    assert subject.kind == kind
    assert str(subject) == text == f"{subject}"
    f = checks.finding("warning", "x.y", subject, "m")
    assert f.to_dict()["subject"] == text


def test_every_kind_is_listed_and_an_unknown_kind_is_refused():
    assert {k for _, k, _ in TEXT} == set(S.KINDS)
    with pytest.raises(ValueError):
        S.Subject("gpus")


def test_subjects_carry_indices_and_names():
    assert (S.link(3, 7).gpu, S.link(3, 7).link) == (3, 7)
    assert (S.pair(2, 6).gpu, S.pair(2, 6).peer, S.pair(2, 6).gpus) == (2, 6, (2, 6))
    assert (S.gpu_nic(1, "mlx5_3").gpu, S.gpu_nic(1, "mlx5_3").name) == (1, "mlx5_3")
    assert (S.port("mlx5_4", 1).name, S.port("mlx5_4", 1).port) == ("mlx5_4", 1)
    assert S.nic("mlx5_0").gpus == () and S.NODE.gpus == () and S.gpu(5).gpus == (5,)


def test_equal_text_is_not_equal_subject():
    """A NIC named GPU3, or a source's own words GPU3, is not GPU3."""
    same_text = [S.gpu(3), S.nic("GPU3"), S.other("GPU3"), S.switch("GPU3")]
    assert {str(s) for s in same_text} == {"GPU3"}
    assert len(set(same_text)) == 4
    assert S.port("GPU3", 7) != S.link(3, 7) and str(S.port("GPU3", 7)) == "GPU3 port 7"
    assert S.pair(2, 6) != S.pair(6, 2)  # the order written is kept: no fold across it
    assert S.other("node") != S.NODE
    # cross-node subjects never equal a node's
    assert S.host("mlx5_0") != S.nic("mlx5_0") and S.fleet("node") != S.NODE
    assert S.fleet("rail 3") != S.rail(3) and str(S.fleet("rail 3")) == str(S.rail(3))


def test_a_gpu_label_is_shown_but_not_compared():
    odd = S.gpu(3, "GPU-three")
    assert str(odd) == "GPU-three" and odd == S.gpu(3) and hash(odd) == hash(S.gpu(3))
    assert S.gpu(3, "GPU3").label is None  # the usual label is not stored


def test_subjects_are_frozen_and_hashable():
    s = S.link(1, 2)
    with pytest.raises(Exception):
        s.gpu = 4  # type: ignore[misc]
    assert s in {S.link(1, 2)}


def test_a_finding_takes_only_typed_subjects():
    with pytest.raises(AssertionError):
        checks.finding("error", "x.y", "GPU3", "m")  # type: ignore[arg-type]
    with pytest.raises(AssertionError):
        checks.finding("error", "x.y", S.gpu(3), "m", covers=["GPU3"])  # type: ignore[list-item]


# --- folding ---------------------------------------------------------------------------------


def _root(*covers):
    return checks.finding("error", "pcie.width_low", S.gpu(3), "GPU3 PCIe link is x8",
                          covers=covers)


def _echo(subject):
    return checks.finding("warning", "source.disagreement", subject, "sources differ")


def test_fold_matches_subjects():
    root, echo = _root(S.gpu(3)), _echo(S.gpu(3))
    out = checks.fold([root, echo])
    assert out == [root]
    assert root.message.endswith("(it also explains 1 finding of source.disagreement, e.g. "
                                 "sources differ)")


@pytest.mark.parametrize("echo", [S.nic("GPU3"), S.other("GPU3"), S.gpu(4), S.pair(3, 4)])
def test_fold_does_not_match_text(echo):
    """Before subjects were typed, a disagreement about a NIC named GPU3 was folded under a
    GPU3 finding (the strings were equal) and so never shown."""
    root, e = _root(S.gpu(3)), _echo(echo)
    assert checks.fold([root, e]) == [root, e]
    assert "also explains" not in root.message


def test_fold_covers_every_kind_it_names():
    root = _root(S.pair(2, 6), S.gpu_nic(0, "mlx5_0"), S.port("mlx5_4", 1), S.nic("mlx5_4"),
                 S.NODE)
    echoes = [_echo(s) for s in (S.pair(2, 6), S.gpu_nic(0, "mlx5_0"), S.port("mlx5_4", 1),
                                 S.nic("mlx5_4"), S.NODE)]
    p2p = checks.finding("error", "p2p.not_supported", S.pair(2, 6), "P2P")
    assert checks.fold([root, *echoes, p2p]) == [root]
    assert "explains 6 findings of p2p.not_supported/source.disagreement" in root.message


def test_only_disagreements_and_p2p_fold_and_infos_never():
    root = _root(S.gpu(3))
    other_family = checks.finding("warning", "numa.placement", S.gpu(3), "numa")
    info = checks.finding("info", "source.disagreement", S.gpu(3), "info")
    assert checks.fold([root, other_family, info]) == [root, other_family, info]


# --- a disagreement's subject, typed once from the model's text -------------------------------


def _topo():
    return Topology(gpus=[GPU(0), GPU(1), GPU(3)],
                    nics=[NIC(label="NIC0", name="mlx5_0"), NIC(label="NIC1", name="GPU3"),
                          NIC(label="NIC2", name="GPU5")])


@pytest.mark.parametrize("subject,fact,want", [
    ("GPU1", "numa_affinity", S.gpu(1)),
    ("GPU7", "presence", S.gpu(7)),
    ("GPU at 0000:3b:00.0", "presence", S.other("GPU at 0000:3b:00.0")),
    ("mlx5_0", "numa_node", S.nic("mlx5_0")),
    ("mlx5_9", "numa_node", S.other("mlx5_9")),  # no such NIC in the model
    ("GPU1", "pci_bus_id", S.gpu(1)),
    ("mlx5_0", "pci_bus_id", S.nic("mlx5_0")),
    ("GPU3", "pci_bus_id", S.other("GPU3")),  # GPU3 and a NIC named GPU3: either
    ("GPU3", "numa_node", S.nic("GPU3")),  # a NIC fact: the NIC named GPU3
    ("GPU3", "numa_affinity", S.gpu(3)),  # a GPU fact: the GPU
    ("GPU0-GPU3", "nvlink_count", S.pair(0, 3)),
    ("GPU0-GPU1", "path", S.pair(0, 1)),
    ("GPU0-mlx5_0", "path", S.gpu_nic(0, "mlx5_0")),
    ("GPU0-NIC0", "path", S.gpu_nic(0, "mlx5_0")),  # the label, resolved to its device
    ("GPU0-GPU5", "path", S.other("GPU0-GPU5")),  # GPU5 is a NIC's name here
    ("GPU0-GPU5", "nvlink_count", S.pair(0, 5)),  # NVLink counts are between GPUs
    ("GPU3-GPU1", "p2p", S.other("GPU3-GPU1")),  # GPU3 is a GPU and a NIC
    ("NIC0-NIC1", "path", S.other("NIC0-NIC1")),
    ("GPU[0000:3b:00.0]-NIC0", "path", S.other("GPU[0000:3b:00.0]-NIC0")),
    ("GPU0", "something_new", S.other("GPU0")),
])
def test_disagreement_subject_is_typed_by_its_fact_and_the_model(subject, fact, want):
    got = subject_of(_topo(), Disagreement(subject, fact, {"a": 1, "b": 2}))
    assert got == want and got.kind == want.kind
    assert str(got) == str(want)  # the model's text, a NIC's matrix label shown as its device


# --- the report ------------------------------------------------------------------------------


def _report(*severities, mapping=None):
    found = tuple(checks.finding(sev, f"x.{k}", S.gpu(k), f"m{k}")
                  for k, sev in enumerate(severities))
    return checks.Report(layout_name="dgx-h100", reason="best fit", findings=found,
                         mapping=mapping)


def test_report_decides_verdict_counts_worst_and_exit_status_once():
    r = _report("warning", "info", "error", "warning", "error")
    assert r.verdict == "fail" and r.exit_status == 1
    assert dict(r.counts) == {"error": 2, "warning": 2, "info": 1}
    assert r.worst is r.findings[2]
    assert r.not_checked == (r.findings[1],)
    ok = _report("warning", "info")
    assert (ok.verdict, ok.exit_status, ok.worst) == ("pass", 0, ok.findings[0])
    empty = _report()
    assert (empty.verdict, dict(empty.counts), empty.worst) == (
        "pass", {"error": 0, "warning": 0, "info": 0}, None)
    with pytest.raises(Exception):
        r.verdict = "pass"  # type: ignore[misc]


def test_report_document_keeps_the_json_contract():
    doc = _report("error", mapping={3: 0, 0: 3}).document()
    assert list(doc) == ["layout", "layout_reason", "verdict", "findings", "layout_mapping"]
    assert doc["layout_mapping"] == {"GPU0": 3, "GPU3": 0}
    assert list(doc["layout_mapping"]) == ["GPU0", "GPU3"]
    assert (doc["layout"], doc["layout_reason"], doc["verdict"]) == ("dgx-h100", "best fit",
                                                                     "fail")
    assert doc["findings"] == [{"severity": "error", "code": "x.0", "subject": "GPU0",
                                "expected": None, "actual": None, "message": "m0", "hint": "",
                                "source": ""}]
    assert list(_report("warning").document()) == ["layout", "layout_reason", "verdict",
                                                    "findings"]


def test_missing_gpus_are_those_reported_missing_or_lost():
    found = (checks.finding("error", "gpu.missing", S.gpu(7), "m"),
             checks.finding("warning", "gpu.missing", S.gpu(5), "m"),
             checks.finding("error", "gpu.lost", S.gpu(2), "m"),
             checks.finding("info", "gpu.missing", S.gpu(1), "m"),
             checks.finding("error", "nic.missing", S.nic("GPU4"), "m"),
             checks.finding("error", "pcie.width_low", S.gpu(6), "m"))
    r = checks.Report(layout_name="x", reason="", findings=found)
    assert r.missing_gpus == [2, 5, 7]


def test_select_and_run_reports_the_selection(tmp_path):
    lay = layouts.load("dgx-h100")
    topo = snapshot.derive(json.loads(json.dumps(simulate(lay, ["nvlink-down:GPU3:7"],
                                                          seed=5))))
    r = checks.select_and_run(topo)
    assert r.layout_name == "dgx-h100" and r.layout is not None and r.layout.name == "dgx-h100"
    assert r.reason and r.verdict == "fail" and r.counts["error"] == 1
    assert [(f.code, f.subject) for f in r.findings if f.severity == "error"] == [
        ("nvlink.link_down", S.link(3, 7))]
    none = checks.run(topo, None)
    assert none.layout_name == "none" and none.layout is None and none.reason == ""


@pytest.mark.parametrize("faults,want", [
    (["nvlink-down:GPU3:7"], {("nvlink.link_down", "link")}),
    (["nvlink-degraded:GPU2-GPU6"], {("nvlink.pair_degraded", "pair")}),
    (["ib-port-down:mlx5_4"], {("ib.port_down", "port")}),
    (["gpu-missing:GPU3"], {("gpu.missing", "gpu")}),
    (["fabric-not-started"], {("fabric.not_started", "node")}),
    (["peermem-missing"], {("nic.gpudirect_missing", "node")}),
])
def test_each_fault_gives_a_subject_of_its_kind(faults, want):
    lay = layouts.load("dgx-h100")
    topo = snapshot.derive(json.loads(json.dumps(simulate(lay, faults, seed=5))))
    r = checks.run(topo, lay)
    got = {(f.code, f.subject.kind) for f in r.findings if f.severity == "error"}
    assert got == want


# --- renderers read the report ----------------------------------------------------------------


def test_prometheus_takes_the_reports_verdict_and_counts():
    """The counts are the report's: a summary whose counts say 5 errors is shown as 5."""
    summary = prom.CheckSummary(layout=None, verdict="fail",
                                counts={"error": 5, "warning": 0, "info": 2},
                                findings=[("error", "a.b", "GPU1"), ("error", "a.b", "GPU1")])
    text = prom.render_check(summary)
    assert "nvtopo_check_pass 0\n" in text
    assert 'nvtopo_check_findings{severity="error"} 5\n' in text
    assert 'nvtopo_check_findings{severity="info"} 2\n' in text
    assert 'nvtopo_finding{code="a.b",subject="GPU1",severity="error"} 2\n' in text
    assert 'nvtopo_layout_info{layout="none"} 1\n' in text


def test_prometheus_summary_of_a_report():
    r = _report("error", "info")
    s = prom.CheckSummary.of(r)
    assert (s.layout, s.verdict, dict(s.counts)) == ("dgx-h100", "fail",
                                                     {"error": 1, "warning": 0, "info": 1})
    assert s.findings == (("error", "x.0", "GPU0"), ("info", "x.1", "GPU1"))
    assert prom.render_check(r) == prom.render_check(s)
