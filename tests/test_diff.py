"""nvtopo diff on simulated pairs: healthy vs each fault kind, counter deltas and resets,
identical inputs, different hosts, bad input, the JSON document."""

import json

import pytest
from cli_runner import make_runner

from nvtopo import diff, examples, layouts
from nvtopo.cli import app
from nvtopo.simulate import simulate

LAY = "dgx-h100"

#: fault -> (change kinds expected, (kind, subject) that must be among them, new finding code)
CASES = {
    "nvlink-down:GPU3:7": ({"nvlink.link_state", "nvlink.pair"},
                           ("nvlink.link_state", "GPU3 link 7"), "nvlink.link_down"),
    "nvlink-degraded:GPU2-GPU6": ({"nvlink.pair"}, ("nvlink.pair", "GPU2-GPU6"),
                                  "nvlink.pair_degraded"),
    "gpu-missing:GPU7": ({"gpu.removed"}, ("gpu.removed", "GPU7"), "gpu.missing"),
    "ib-port-down:mlx5_4": ({"ib.port_state"}, ("ib.port_state", "mlx5_4 port 1"),
                            "ib.port_down"),
    "ib-rate:mlx5_0:200": ({"ib.rate"}, ("ib.rate", "mlx5_0 port 1"), "ib.rate_low"),
    "pcie-width:GPU5:8": ({"pcie.link"}, ("pcie.link", "GPU5"), "pcie.width_low"),
    "pcie-gen:GPU5:3": ({"pcie.link"}, ("pcie.link", "GPU5"), "pcie.gen_low"),
    "fabric-not-started": ({"nvlink.pair", "nvlink.link_state", "fabric.state"},
                           ("fabric.state", "8 GPUs"), "fabric.not_started"),
    "counters:mlx5_2:symbol_error=1000": ({"ib.counter_grew"},
                                          ("ib.counter_grew", "mlx5_2 port 1"),
                                          "ib.counter_errors"),
    "peermem-missing": ({"nic.gpudirect"}, ("nic.gpudirect", "node"),
                        "nic.gpudirect_missing"),
    "nic-affinity-swap:mlx5_0:mlx5_3": ({"nic.moved", "path.gpu_nic", "ib.counter_reset"},
                                        ("nic.moved", "mlx5_0"), "nic.names_differ"),
}


@pytest.fixture(scope="module")
def snaps(tmp_path_factory):
    d = tmp_path_factory.mktemp("diff")
    lay = layouts.load(LAY)

    def write(name, faults, host="node17", seed=5):
        p = d / f"{name}.json"
        p.write_text(json.dumps(simulate(lay, faults, seed=seed, hostname=host)))
        return str(p)

    out = {"good": write("good", []), "good2": write("good2", []),
           "other": write("other", [], host="node18", seed=6)}
    for i, f in enumerate(CASES):
        out[f] = write(f"fault{i}", [f])
    out["sym5"] = write("sym5", ["counters:mlx5_2:symbol_error=5"])
    out["sym50"] = write("sym50", ["counters:mlx5_2:symbol_error=50"])
    out["dir"] = str(d)
    return out


@pytest.fixture
def cli():
    runner = make_runner()
    return lambda *a: runner.invoke(app, list(a))


@pytest.mark.parametrize("fault", list(CASES))
def test_healthy_vs_fault(snaps, fault):
    kinds, must, code = CASES[fault]
    d = diff.diff_files(snaps["good"], snaps[fault])
    assert d.changed and not d.warnings
    assert {c.kind for c in d.changes} == kinds, [c.to_dict() for c in d.changes]
    assert must in {(c.kind, c.subject) for c in d.changes}
    v = d.verdict
    assert v["before"] == "pass" and v["layout_before"] == LAY
    assert code in {f["code"] for f in v["new"]}
    assert v["resolved"] == []
    # and back again: the fault is resolved
    back = diff.diff_files(snaps[fault], snaps["good"])
    assert code in {f["code"] for f in back.verdict["resolved"]} and back.verdict["new"] == []


def test_link_down_details(snaps):
    d = diff.diff_files(snaps["good"], snaps["nvlink-down:GPU3:7"])
    link = next(c for c in d.changes if c.kind == "nvlink.link_state")
    assert (link.before, link.after) == ("active", "down")
    pair = next(c for c in d.changes if c.kind == "nvlink.pair")
    assert pair.subject == "7 GPU pairs" and (pair.before, pair.after) == ("NV18", "NV17")
    assert d.verdict["after"] == "fail"


def test_counter_delta_not_total(snaps):
    d = diff.diff_files(snaps["sym5"], snaps["sym50"])
    (c,) = d.changes
    assert c.kind == "ib.counter_grew" and c.subject == "mlx5_2 port 1"
    assert (c.before, c.after) == ({"symbol_error": 5}, {"symbol_error": 50})
    assert "symbol_error +45" in c.message


def test_counter_went_down_is_a_reset(snaps):
    d = diff.diff_files(snaps["sym50"], snaps["good"])
    (c,) = d.changes
    assert c.kind == "ib.counter_reset" and c.subject == "mlx5_2 port 1"
    assert (c.before, c.after) == ({"symbol_error": 50}, {"symbol_error": 0})
    assert "reset" in c.message


def test_identical_exit_0(snaps, cli):
    r = cli("diff", snaps["good"], snaps["good2"])
    assert r.exit_code == 0, r.output
    assert "NO CHANGE" in r.stdout
    doc = json.loads(cli("diff", snaps["good"], snaps["good"], "--format", "json").stdout)
    assert doc["changed"] is False and doc["changes"] == [] and doc["warnings"] == []


def test_changed_exit_1_json(snaps, cli):
    r = cli("diff", snaps["good"], snaps["gpu-missing:GPU7"], "--format", "json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert list(doc) == ["schema_version", "a", "b", "changed", "warnings", "changes",
                         "verdict", "sources"]
    assert doc["schema_version"] == 1
    assert doc["a"] == {"file": snaps["good"], "hostname": "node17"}
    assert doc["changed"] is True
    for c in doc["changes"]:
        assert set(c) == {"kind", "subject", "before", "after", "message"}
    assert doc["verdict"]["before"] == "pass" and doc["verdict"]["after"] == "fail"
    r = cli("diff", snaps["good"], snaps["ib-port-down:mlx5_4"])
    assert r.exit_code == 1 and "ib.port_state" in r.stdout and "PASS" in r.stdout


def test_different_hosts_warns_not_fails(snaps, cli):
    r = cli("diff", snaps["good"], snaps["other"], "--format", "json")
    assert r.exit_code in (0, 1)
    assert "different hosts (node17 and node18)" in r.stderr
    doc = json.loads(r.stdout)
    assert doc["warnings"] and "different hosts" in doc["warnings"][0]
    # another node's GPUs have other UUIDs: said as such, not hidden
    assert {c["kind"] for c in doc["changes"]} <= {"gpu.replaced", "nic.replaced",
                                                  "ib.counter_reset", "ib.counter_grew"}


def test_bad_input_exit_2(snaps, cli, tmp_path):
    r = cli("diff", snaps["good"], str(tmp_path / "missing.json"))
    assert r.exit_code == 2 and "missing.json: no such file" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = cli("diff", str(bad), snaps["good"])
    assert r.exit_code == 2 and "bad.json" in r.stderr and "Traceback" not in r.output


def test_topo_texts(tmp_path, cli):
    text = examples.read("dgx-h100")
    a = tmp_path / "a.txt"
    a.write_text(text)
    b = tmp_path / "b.txt"
    b.write_text(text.replace("NV18", "NV17", 2))  # row GPU0: the GPU0-GPU1 and GPU0-GPU2 cells
    assert cli("diff", str(a), str(a)).exit_code == 0
    r = cli("diff", str(a), str(b), "--format", "json")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    subjects = {(c["kind"], c["subject"]) for c in doc["changes"]}
    assert ("nvlink.pair", "GPU0-GPU1") in subjects


def _strip(src, tmp_path, name, keep=None, failed=None):
    doc = json.loads(open(src).read())
    if keep is not None:
        doc["probes"] = {k: v for k, v in doc["probes"].items() if k in keep}
    if failed:
        doc["probes"][failed] = {"status": "failed"}
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(doc))
    return str(p)


@pytest.mark.parametrize("keep,missing", [(["nvml", "host"], {"sysfs", "topo-text"}),
                                          (["sysfs", "host"], {"nvml", "topo-text"}),
                                          (["topo-text"], {"nvml", "sysfs"})])
def test_missing_evidence_is_not_compared_not_removed(snaps, tmp_path, cli, keep, missing):
    b = _strip(snaps["good"], tmp_path, "b", keep=keep)
    d = diff.diff_files(snaps["good"], b)
    assert d.changes == [], [c.message for c in d.changes]
    assert set(d.sources["not_compared"]) == missing
    for s in missing:
        assert any(w.startswith(f"{s} evidence is absent in B") for w in d.warnings)
    r = cli("diff", snaps["good"], b)
    assert r.exit_code == 0 and "NO CHANGE in what both recorded" in r.stdout
    assert "not compared" in r.stderr


def test_failed_source_is_no_resolution(snaps, tmp_path, cli):
    a = snaps["ib-port-down:mlx5_4"]
    b = _strip(a, tmp_path, "b", failed="sysfs")
    d = diff.diff_files(a, b)
    assert d.changes == [] and d.sources["not_compared"] == {"sysfs": "failed in B"}
    v = d.verdict
    assert v["resolved"] == [] and v["not_compared"] == ["sysfs"]
    assert [(f["code"], f["side"]) for f in v["unconfirmed"]] == [("ib.port_down", "A only")]
    assert any("sysfs evidence is failed in B" in w for w in d.warnings)
    r = cli("diff", a, b)
    assert "not comparable" in r.stdout and "Resolved findings" not in r.stdout
