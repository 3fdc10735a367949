"""NVLink-C2C, the Grace CPU-GPU link (GH200, GB200): recorded through the NVML probe's
chokepoint, modelled on the GPU's NVML record, shown by show/links/the picture, and judged by
the c2c check family (faults c2c-down, c2c-links in simulate)."""

import json

import pytest
from cli_runner import make_runner

from nvtopo import layouts
from nvtopo.cli import app

runner = make_runner()
GRACE = ("gh200-4", "gb200-nvl72-tray", "gb300-nvl72-tray")


def run(*args, **kw):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "100"}, **kw)


def simulate(tmp_path, layout, *faults, name="s.json"):
    path = tmp_path / name
    args = ["simulate", layout, "-o", path]
    for f in faults:
        args += ["--fault", f]
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    return path


def check(path, *extra):
    r = run("check", "--from", path, "--format", "json", *extra)
    assert r.exit_code in (0, 1), r.stderr
    return json.loads(r.output)


def c2c_findings(doc):
    return [(f["severity"], f["code"], f["subject"], f["expected"], f["actual"])
            for f in doc["findings"] if f["code"].startswith("c2c.")]


@pytest.mark.parametrize("layout", GRACE)
def test_healthy_grace_node_records_c2c_and_checks_clean(tmp_path, layout):
    path = simulate(tmp_path, layout)
    snap = json.loads(path.read_text())
    calls = snap["probes"]["nvml"]["calls"]
    assert calls["nvmlDeviceGetC2cModeInfoV(gpu0)"] == {"value": {"isC2cEnabled": 1}}
    assert calls["nvmlDeviceGetFieldValues(gpu3,170:0)"] == {"value": 10}
    assert calls["nvmlDeviceGetFieldValues(gpu3,171:9)"] == {"value": 1}
    model = json.loads(run("show", "--from", path, "--format", "json").output)
    for g in model["gpus"]:
        c = g["extra"]["nvml"]["c2c"]
        assert (c["enabled"], c["link_count"], c["links_active"], c["bandwidth_gbps"]) == \
            (True, 10, 10, 447.1)
        assert g["gpu_numa_id"] is not None  # the GPU memory's own NUMA node
    doc = check(path)
    assert doc["verdict"] == "pass" and c2c_findings(doc) == []


def test_other_gpus_are_not_asked(tmp_path):
    snap = json.loads(simulate(tmp_path, "dgx-h100").read_text())
    calls = snap["probes"]["nvml"]["calls"]
    assert not [k for k in calls if "C2c" in k or ",170:" in k or ",171:" in k]
    model = json.loads(run("show", "--from", tmp_path / "s.json", "--format", "json").output)
    assert all("c2c" not in g["extra"]["nvml"] for g in model["gpus"])


@pytest.mark.parametrize("layout", GRACE)
def test_c2c_faults_are_errors_naming_the_gpu(tmp_path, layout):
    path = simulate(tmp_path, layout, "c2c-down:GPU1", "c2c-links:GPU2:6")
    doc = check(path)
    assert doc["verdict"] == "fail"
    assert sorted(c2c_findings(doc)) == [
        ("error", "c2c.disabled", "GPU1", "enabled", "disabled"),
        ("error", "c2c.link_down", "GPU2", 10, 6)]
    out = run("show", "--from", path).output
    assert "GPU1: mode disabled · 0/10 links active" in out
    assert "GPU2: mode enabled · 6/10 links active · down: 6-9 · 268.3 GB/s" in out
    links = json.loads(run("links", "--from", path, "--format", "json").output)
    by = {g["index"]: g["c2c"] for g in links["gpus"]}
    assert [lk["status"] for lk in by[2]["links"]].count("inactive") == 4
    svg = run("check", "--from", path, "--format", "svg").output
    assert "C2C off" in svg and "C2C 6/10" in svg


def test_inferred_layout_and_no_layout_give_warnings(tmp_path):
    path = simulate(tmp_path, "gh200-4", "c2c-links:GPU0:9")
    with open(_layout_path("gh200-4")) as fh:
        lay = json.load(fh)
    for name, edit in (("gh200-no-c2c", lambda d: d.pop("c2c")),
                       ("gh200-inferred", lambda d: d["c2c"].update(evidence="[I]"))):
        d = json.loads(json.dumps(lay))
        edit(d)
        d["name"] = name
        lf = tmp_path / f"{name}.json"
        lf.write_text(json.dumps(d))
        doc = check(path, "--layout-file", lf)
        assert c2c_findings(doc) == [("warning", "c2c.link_down", "GPU0", 10, 9)], name


def _layout_path(name):
    import os
    return os.path.join(os.path.dirname(layouts.__file__), f"{name}.json")


def _edit_recording(path, edit):
    snap = json.loads(path.read_text())
    snap.pop("derived", None)
    calls = snap["probes"]["nvml"]["calls"]
    edit(calls)
    path.write_text(json.dumps(snap))
    return path


def test_snapshot_from_before_c2c_derives_as_before_and_says_not_checked(tmp_path):
    path = simulate(tmp_path, "gh200-4")
    before = {k: v for k, v in json.loads(run("show", "--from", path, "--format",
                                              "json").output).items() if k != "origin"}

    def drop(calls):
        for k in [k for k in calls if "C2c" in k or any(f",{f}:" in k for f in (170, 171, 172))]:
            del calls[k]
    _edit_recording(path, drop)
    after = json.loads(run("show", "--from", path, "--format", "json").output)
    for a, b in zip(before["gpus"], after["gpus"]):
        c = b["extra"]["nvml"].pop("c2c")
        assert c["enabled"] is None and c["link_count"] is None and c["links"] == []
        a["extra"]["nvml"].pop("c2c")
        assert a == b  # everything else as before
    doc = check(path)
    assert doc["verdict"] == "pass"
    codes = [(f["severity"], f["code"]) for f in doc["findings"] if f["code"].startswith("c2c")]
    assert codes == [("info", "c2c.not_checked")]


def test_bad_recorded_value_is_unknown_not_a_fault(tmp_path):
    path = simulate(tmp_path, "gh200-4")

    def damage(calls):
        calls["nvmlDeviceGetC2cModeInfoV(gpu0)"] = {"value": {"isC2cEnabled": 7}}
        calls["nvmlDeviceGetFieldValues(gpu1,171:3)"] = {"value": 5}
    _edit_recording(path, damage)
    model = json.loads(run("show", "--from", path, "--format", "json").output)
    c0 = model["gpus"][0]["extra"]["nvml"]["c2c"]
    c1 = model["gpus"][1]["extra"]["nvml"]["c2c"]
    assert c0["enabled"] is None and c0["unavailable"]["mode"] == "bad_value"
    assert c1["links"][3]["status"] is None and c1["links_active"] is None
    doc = check(path)
    assert [f for f in doc["findings"] if f["severity"] != "info"] == []
    assert "c2c.not_checked" in {f["code"] for f in doc["findings"]}


def test_gpu_memory_numa_node_missing_is_a_warning(tmp_path):
    path = simulate(tmp_path, "gb200-nvl72-tray")
    _edit_recording(path, lambda calls: calls.update(
        {"nvmlDeviceGetNumaNodeId(gpu2)": {"error": "NotSupported"}}))
    snap = json.loads(path.read_text())
    del snap["probes"]["topo-text"]  # its GPU NUMA ID column would state the node
    path.write_text(json.dumps(snap))
    doc = check(path)
    got = [(f["severity"], f["code"], f["subject"]) for f in doc["findings"]
           if f["code"] == "c2c.gpu_numa_missing"]
    assert got == [("warning", "c2c.gpu_numa_missing", "GPU2")]


@pytest.mark.parametrize("spec,says", [
    ("c2c-down:GPU1", "no NVLink-C2C"),
    ("c2c-links:GPU0:3", "no NVLink-C2C"),
])
def test_c2c_fault_on_a_node_without_c2c_is_one_line(spec, says):
    r = run("simulate", "dgx-h100", "--fault", spec, "-o", "/dev/null")
    assert r.exit_code == 2 and says in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.parametrize("spec,says", [
    ("c2c-links:GPU0:10", "1-9"),
    ("c2c-links:GPU0:0", "1-9"),
    ("c2c-links:GPU9:3", "no GPU9"),
])
def test_c2c_fault_bounds(spec, says):
    r = run("simulate", "gh200-4", "--fault", spec, "-o", "/dev/null")
    assert r.exit_code == 2 and says in r.stderr, r.stderr


def _no_links(calls, gpu=0):
    """What NVML answers for a GPU whose C2C mode is on but which has no C2C link."""
    calls[f"nvmlDeviceGetFieldValues(gpu{gpu},170:0)"] = {"value": 0}
    for k in [k for k in calls if k.startswith(f"nvmlDeviceGetFieldValues(gpu{gpu},17")
              and (",171:" in k or ",172:" in k)]:
        del calls[k]


@pytest.mark.parametrize("layout", GRACE)
def test_mode_enabled_with_no_links_is_an_error(tmp_path, layout):
    # Before: `rec.link_count and ...` read 0 links as "nothing to say": check passed and
    # show printed "GPU0: mode enabled · ?/0 links active".
    path = _edit_recording(simulate(tmp_path, layout), _no_links)
    model = json.loads(run("show", "--from", path, "--format", "json").output)
    c = model["gpus"][0]["extra"]["nvml"]["c2c"]
    assert (c["enabled"], c["link_count"], c["links"]) == (True, 0, [])
    doc = check(path)
    assert doc["verdict"] == "fail"
    want = layouts.load(layout).c2c.links_per_gpu or "at least 1"
    assert c2c_findings(doc) == [("error", "c2c.no_links", "GPU0", want, 0)]
    out = run("show", "--from", path).output
    assert "GPU0: mode enabled · 0 links" in out and "?/0" not in out
    assert "GPU1-3: mode enabled · 10/10 links active" in out
    links = run("links", "--from", path).output
    assert "C2C to CPU: mode enabled · 0 links" in links and "?/0" not in links
    svg = run("check", "--from", path, "--format", "svg").output
    assert "C2C 0 links" in svg and "C2C ?/0" not in svg


def test_no_links_without_a_layout_is_a_warning(tmp_path):
    path = _edit_recording(simulate(tmp_path, "gh200-4"), _no_links)
    lay = json.loads(open(_layout_path("gh200-4")).read())
    lay.pop("c2c")
    lay["name"] = "gh200-no-c2c"
    lf = tmp_path / "l.json"
    lf.write_text(json.dumps(lay))
    assert c2c_findings(check(path, "--layout-file", lf)) == [
        ("warning", "c2c.no_links", "GPU0", "at least 1", 0)]


def test_unknown_link_count_is_said_so_not_a_fault(tmp_path):
    path = _edit_recording(simulate(tmp_path, "gh200-4"), lambda calls: calls.update(
        {"nvmlDeviceGetFieldValues(gpu2,170:0)": {"error": "Unknown"}}))
    out = run("show", "--from", path).output
    assert "GPU2: mode enabled · links unknown" in out
    doc = check(path)
    assert c2c_findings(doc) == [] or all(f[0] == "info" for f in c2c_findings(doc))
    assert "c2c.not_checked" in {f["code"] for f in doc["findings"]}


def test_gh200_layout_states_ten_links_from_inferred_evidence():
    lay = layouts.load("gh200-4")
    assert lay.c2c.links_per_gpu == 10
    assert lay.c2c.inferred("links_per_gpu") and not lay.c2c.inferred()
    assert layouts.load("gb200-nvl72-tray").c2c.links_per_gpu is None  # no source


@pytest.mark.parametrize("evidence,inferred", [
    ("[S: CSCS; I for links_per_gpu]", True), ("I for links_per_gpu", True),
    ("[S: CSCS; I for links_per_gpu_max]", False),  # another key: a whole word only
    ("[S: CSCS; XI for links_per_gpu]", False), ("[S: CSCS]", False)])
def test_i_for_key_names_that_key_as_a_whole_word(tmp_path, evidence, inferred):
    lay = layouts.load_file(str(_with_links(tmp_path, 10, evidence)))
    assert lay.c2c.inferred("links_per_gpu") is inferred


def _with_links(tmp_path, count, evidence):
    lay = json.loads(open(_layout_path("gh200-4")).read())
    lay["c2c"].update(links_per_gpu=count, evidence=evidence)
    lay["name"] = "gh200-mine"
    lf = tmp_path / "mine.json"
    lf.write_text(json.dumps(lay))
    return lf


@pytest.mark.parametrize("evidence,sev", [
    ("[S: CSCS]", "error"),                       # a count the user states: the family's error
    ("[S: CSCS; I for links_per_gpu]", "warning"),  # the bundled gh200-4: count inferred
    ("[I]", "warning")])
def test_fewer_links_than_the_layout_warns_or_fails_as_the_family(tmp_path, evidence, sev):
    path = simulate(tmp_path, "gh200-4")  # 10/10 links on every GPU
    assert c2c_findings(check(path)) == []  # healthy against the bundled layout (10)
    assert c2c_findings(check(path, "--layout-file", _with_links(tmp_path, 10, evidence))) == []
    doc = check(path, "--layout-file", _with_links(tmp_path, 12, evidence))
    assert sorted(c2c_findings(doc)) == [
        (sev, "c2c.links_low", f"GPU{i}", 12, 10) for i in range(4)]


# -- The fixture NVML machines fixtures/nvml/gh200-4*.json, through the real pynvml wrappers --

CORPUS_07 = "07_gh200-4gpu-nv6-numa-affinity-list-gpu-numa-id.txt"


def _fixture_topo(machine, with_topo_text=False):
    """The fixture machine recorded by the real NVML probe (the fake C library under the real
    pynvml wrappers), derived; with the real `topo -m` of such a node beside it on request."""
    from pathlib import Path

    import nvml_fake
    from nvtopo import snapshot

    doc = nvml_fake.snapshot_doc(machine)
    if with_topo_text:
        corpus = Path(__file__).resolve().parent.parent / "fixtures" / "topo-corpus" / CORPUS_07
        recording = doc["probes"]["nvml"]
        doc = snapshot.from_text_evidence(corpus.read_text(), CORPUS_07)
        doc["probes"]["nvml"] = recording
    return doc, snapshot.derive(doc, f"{machine}.json")


def _findings(topo, level=("error", "warning")):
    from nvtopo import checks
    from nvtopo.checks import select

    sel = select.select(topo, "auto")
    assert sel.layout is not None and sel.layout.name == "gh200-4"
    return sorted((f.severity, f.code, str(f.subject), f.expected, f.actual)
                  for f in checks.run(topo, sel).findings if f.severity in level)


def test_gh200_fixture_records_c2c_and_numa_through_pynvml():
    from nvtopo import snapshot

    doc, topo = _fixture_topo("gh200-4")
    ev = doc["probes"]["nvml"]
    assert ev["status"] == "ok"
    assert ev["calls"]["nvmlDeviceGetC2cModeInfoV(gpu2)"] == {"value": {"isC2cEnabled": 1}}
    # What the real topo -m of a GH200 quad node says, GPU by GPU.
    from pathlib import Path
    corpus = Path(__file__).resolve().parent.parent / "fixtures" / "topo-corpus" / CORPUS_07
    real = snapshot.derive(snapshot.from_text_evidence(corpus.read_text(), CORPUS_07), "t")
    assert [g.gpu_numa_id for g in real.gpus] == [4, 12, 20, 28]
    # The C2C figures the simulator states for the layout (10 links of 44,712 MB/s).
    from nvtopo.simulate import build, sources
    sim = [g["c2c"] for g in sources.nvml_description(build(layouts.load("gh200-4")))["gpus"]]
    want_links = layouts.load("gh200-4").c2c.links_per_gpu
    assert len(topo.gpus) == len(real.gpus) == 4
    for g, r, s in zip(topo.gpus, real.gpus, sim):
        c = g.nvml.to_dict()["c2c"]
        assert (c["enabled"], c["link_count"], c["links_active"]) == (True, want_links, 10)
        assert [lk["max_bw_mbps"] for lk in c["links"]] == [s["max_bw_mbps"]] * s["count"]
        assert c["bandwidth_gbps"] == round(10 * s["max_bw_mbps"] / 1000, 1) == 447.1
        assert {lk["status"] for lk in c["links"]} == {"active"}
        assert g.sources["gpu_numa_id"] == "nvml"
        assert (g.gpu_numa_id, g.cpu_affinity, g.numa_affinity, g.numa_node) == \
            (r.gpu_numa_id, r.cpu_affinity, r.numa_affinity, g.index)
        nv = g.nvml.to_dict()["nvlink"]
        assert (nv["active"], nv["total"]) == (18, 18)
    assert {(p.a, p.b): p.count for p in topo.nvlinks} == \
        {(p.a, p.b): p.count for p in real.nvlinks} == \
        {(a, b): 6 for a in range(4) for b in range(a + 1, 4)}


def test_gh200_fixture_checks_clean_alone_and_beside_the_real_topo_m(tmp_path):
    _, topo = _fixture_topo("gh200-4")
    assert _findings(topo) == []
    # Beside the real topo -m: every fact both sources state agrees (no source.disagreement).
    _, both = _fixture_topo("gh200-4", with_topo_text=True)
    assert _findings(both) == []
    assert [g.sources["gpu_numa_id"] for g in both.gpus] == ["topo-text"] * 4
    # Through the CLI, from a snapshot file.
    import nvml_fake
    path = tmp_path / "gh200.json"
    path.write_text(json.dumps(nvml_fake.snapshot_doc("gh200-4")))
    doc = check(path)
    assert doc["verdict"] == "pass" and c2c_findings(doc) == []
    assert "GPU0-3: mode enabled · 10/10 links active" in run("show", "--from", path).output


def test_gh200_c2c_degraded_fixture_gives_the_family_findings(tmp_path):
    _, topo = _fixture_topo("gh200-4-c2c-degraded")
    by = {g.index: g.nvml.to_dict()["c2c"] for g in topo.gpus}
    assert [(by[i]["link_count"], by[i]["links_active"]) for i in range(4)] == \
        [(10, 10), (6, 6), (10, 6), (10, 10)]
    assert [lk["link"] for lk in by[2]["links"] if lk["status"] == "inactive"] == [6, 7, 8, 9]
    # GPU2: links NVML itself reports inactive (error, the layout expects C2C from stated
    # evidence); GPU1: fewer links than the layout's 10 (a warning: that count is inferred).
    assert _findings(topo) == [("error", "c2c.link_down", "GPU2", 10, 6),
                               ("warning", "c2c.links_low", "GPU1", 10, 6)]
    import nvml_fake
    path = tmp_path / "deg.json"
    path.write_text(json.dumps(nvml_fake.snapshot_doc("gh200-4-c2c-degraded")))
    assert check(path)["verdict"] == "fail"
    out = run("show", "--from", path).output
    assert "GPU2: mode enabled · 6/10 links active · down: 6-9 · 268.3 GB/s" in out
