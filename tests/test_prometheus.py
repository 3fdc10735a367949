"""nvtopo check --format prometheus: the node_exporter textfile format, checked against the
check result it reports, parsed by prometheus_client's text parser (always) and by
``promtool check metrics`` (when promtool is on PATH: Debian package ``prometheus``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from cli_runner import make_runner

from nvtopo import checks, layouts, snapshot
from nvtopo.checks import subject as S
from nvtopo.cli import app
from nvtopo.render import prometheus as prom
from nvtopo.simulate import simulate

REPO = Path(__file__).resolve().parent.parent
TOPO_TEXT = str(REPO / "fixtures" / "topo-corpus" /
                "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt")
FAULTS = ("nvlink-down:GPU3:7", "ib-port-down:mlx5_4", "ib-rate:mlx5_0:200", "pcie-gen:GPU5:3")
#: recorded probe durations, distinct so the test sees they come from the file
DURATIONS = {"topo-text": 1.25, "nvml": 0.375, "sysfs": 0.0625}
PROMTOOL = shutil.which("promtool")
NAME = re.compile(r"^nvtopo_[a-z_]+$")


def cli(*args: str):
    return make_runner().invoke(app, list(args))


def write_sim(path: Path, layout: str, faults=(), durations=None) -> str:
    doc = simulate(layouts.load(layout), list(faults), seed=3)
    for name, d in (durations or {}).items():
        doc["probes"][name]["duration_s"] = d
    path.write_text(snapshot.dumps(doc))
    return str(path)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory) -> str:
    return write_sim(tmp_path_factory.mktemp("prom") / "bad.json", "dgx-h100", FAULTS,
                     DURATIONS)


def families(text: str) -> Dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(fams: Dict[str, Any], name: str) -> List[Tuple[Dict[str, str], float]]:
    return [(dict(s.labels), s.value) for s in fams[name].samples] if name in fams else []


def assert_well_formed(text: str) -> Dict[str, Any]:
    """Every family: one HELP and one TYPE line before its samples, an nvtopo_ name, a gauge."""
    fams = families(text)
    assert fams, "no metric families"
    lines = text.splitlines()
    for name, fam in fams.items():
        assert NAME.match(name), name
        assert fam.type == "gauge", (name, fam.type)
        assert fam.documentation.strip(), f"{name} has no HELP text"
        helps = [i for i, x in enumerate(lines) if x.startswith(f"# HELP {name} ")]
        types = [i for i, x in enumerate(lines) if x == f"# TYPE {name} gauge"]
        first = min(i for i, x in enumerate(lines) if re.match(rf"^{name}[{{ ]", x))
        assert len(helps) == 1 and len(types) == 1, name
        assert helps[0] < types[0] < first, name
        assert fam.samples, name
    for x in lines:  # no sample of a family that was not declared
        if not x.startswith("#"):
            assert re.match(r"^(nvtopo_[a-z_]+)[{ ]", x).group(1) in fams, x
    assert text.endswith("\n")
    return fams


def promtool(text: str) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                          text=True, timeout=60)


def test_check_prometheus_values_match_the_check_result(faulty):
    r = cli("check", "--from", faulty, "--format", "prometheus")
    assert r.exit_code == 1, r.output  # the verdict's exit status is kept
    fams = assert_well_formed(r.stdout)
    doc = json.loads(cli("check", "--from", faulty, "--format", "json").stdout)
    model = json.loads(cli("show", "--from", faulty, "--format", "json").stdout)

    assert doc["verdict"] == "fail"
    assert samples(fams, "nvtopo_check_pass") == [({}, 0.0)]
    by_sev = {lab["severity"]: v for lab, v in samples(fams, "nvtopo_check_findings")}
    assert by_sev == {s: sum(1 for f in doc["findings"] if f["severity"] == s)
                      for s in ("error", "warning", "info")}
    assert by_sev["error"] >= 3 and by_sev["warning"] >= 1
    got = {(lab["code"], lab["subject"], lab["severity"]): v
           for lab, v in samples(fams, "nvtopo_finding")}
    want: Dict[Tuple[str, str, str], int] = {}
    for f in doc["findings"]:
        k = (f["code"], f["subject"], f["severity"])
        want[k] = want.get(k, 0) + 1
    assert got == want
    for k in [("nvlink.link_down", "GPU3 link 7", "error"),
              ("ib.port_down", "mlx5_4 port 1", "error"),
              ("ib.rate_low", "mlx5_0 port 1", "error"),
              ("pcie.gen_low", "GPU5", "warning")]:
        assert got.get(k) == 1, (k, sorted(got))
    assert samples(fams, "nvtopo_layout_info") == [({"layout": doc["layout"]}, 1.0)]

    # links active / expected per GPU, as NVML recorded them and the layout states them
    lay = layouts.load(doc["layout"])
    active = {lab["gpu"]: v for lab, v in samples(fams, "nvtopo_gpu_nvlinks_active")}
    expected = {lab["gpu"]: v for lab, v in samples(fams, "nvtopo_gpu_nvlinks_expected")}
    assert active == {str(g["index"]): g["extra"]["nvml"]["nvlink"]["active"]
                      for g in model["gpus"]}
    assert active["3"] == 17 and active["0"] == 18
    assert expected == {str(g["index"]): lay.nvlink.links_per_gpu for g in model["gpus"]}
    info = {lab["gpu"]: lab for lab, _ in samples(fams, "nvtopo_gpu_info")}
    assert {g: (lab["uuid"], lab["numa"]) for g, lab in info.items()} == {
        str(g["index"]): (g["uuid"], g["numa_affinity"]) for g in model["gpus"]}
    assert samples(fams, "nvtopo_gpus") == [({}, float(len(model["gpus"])))]
    assert samples(fams, "nvtopo_nics") == [({}, float(len(model["nics"])))]

    # ports: state and rate of every port the sysfs evidence holds
    ports = {(n["name"], str(p["port"])): p for n in model["nics"]
             for p in n["extra"]["sysfs"]["ports"]}
    up = {(lab["device"], lab["port"]): v for lab, v in samples(fams, "nvtopo_port_up")}
    assert up == {k: (1.0 if p["state"] == "ACTIVE" else 0.0) for k, p in ports.items()}
    assert up[("mlx5_4", "1")] == 0.0
    states = {(lab["device"], lab["port"]): (lab["state"], lab["phys_state"])
              for lab, _ in samples(fams, "nvtopo_port_state_info")}
    assert states == {k: (p["state"], p["phys_state"]) for k, p in ports.items()}
    rates = {(lab["device"], lab["port"]): v
             for lab, v in samples(fams, "nvtopo_port_rate_bytes_per_second")}
    assert rates[("mlx5_0", "1")] == 200e9 / 8
    assert ("mlx5_4", "1") not in rates  # a down port has no rate: absent, not 0
    assert rates == {k: p["rate_gbps"] * 1e9 / 8 for k, p in ports.items()
                     if p["rate_gbps"] is not None}

    durations = {lab["source"]: v for lab, v in samples(fams, "nvtopo_probe_duration_seconds")}
    assert durations == DURATIONS


def test_healthy_node_passes_and_topo_text_has_no_unknown_series(tmp_path):
    good = write_sim(tmp_path / "good.json", "dgx-a100")
    r = cli("check", "--from", good, "--format", "prometheus")
    assert r.exit_code == 0, r.output
    fams = assert_well_formed(r.stdout)
    assert samples(fams, "nvtopo_check_pass") == [({}, 1.0)]
    assert {lab["severity"]: v for lab, v in samples(fams, "nvtopo_check_findings")}["error"] == 0
    # a topo text says nothing about links per GPU, ports or durations: no series, not zeros
    r = cli("check", "--from", TOPO_TEXT, "--format", "prometheus")
    assert r.exit_code == 0, r.output
    fams = assert_well_formed(r.stdout)
    for absent in ("nvtopo_gpu_nvlinks_active", "nvtopo_gpu_nvlinks_expected", "nvtopo_port_up",
                   "nvtopo_port_rate_bytes_per_second", "nvtopo_probe_duration_seconds"):
        assert absent not in fams, absent
    assert len(samples(fams, "nvtopo_gpu_info")) == 8


def test_label_values_are_escaped():
    nasty = 'GPU1 "quoted"\\back\nslash'
    check = checks.Report(layout_name='my "lay"\\out', reason="", findings=(
        checks.finding("error", "nvlink.link_down", S.other(nasty), "m"),
        checks.finding("error", "nvlink.link_down", S.other(nasty), "m"),
        checks.finding("warning", "x.y", S.other("a\nb"), "m")))
    text = prom.render_check(check, labels={"hostname": 'n"17\\\n'})
    # a newline is a control character: shown as \x0a (nvtopo.safe.printable), never raw
    assert '\\"quoted\\"' in text and "\\\\back" in text and "\\\\x0aslash" in text
    assert "\nslash" not in text  # no raw newline inside a label
    fams = assert_well_formed(text)
    got = {(lab["subject"], lab["hostname"]): v for lab, v in samples(fams, "nvtopo_finding")}
    # the label value is the text with a backslash doubled, then a newline shown as \x0a
    # (nvtopo.safe.reversible): one to one, so unescape() gives the text back
    shown = nasty.replace("\\", "\\\\").replace("\n", "\\x0a")
    assert got == {(shown, 'n"17\\\\\\x0a'): 2.0, ("a\\x0ab", 'n"17\\\\\\x0a'): 1.0}
    assert unescape(shown) == nasty and unescape('n"17\\\\\\x0a') == 'n"17\\\n'
    assert samples(fams, "nvtopo_layout_info")[0][0]["layout"] == 'my "lay"\\\\out'
    assert prom.escape_label_value('a"b\\c\nd') == 'a\\"b\\\\\\\\c\\\\x0ad'
    with pytest.raises(ValueError):
        prom.render_check(check, labels={"bad-name": "x"})


def test_many_nodes_share_one_declaration_per_family(faulty, tmp_path):
    good = write_sim(tmp_path / "good.json", "dgx-h100")
    nodes = []
    for path in (faulty, good):
        topo = snapshot.load(path)
        report = checks.select_and_run(topo)
        raw = json.loads(Path(path).read_text())
        nodes.append(prom.NodeMetrics(check=report, topo=topo, layout=report.layout,
                                      durations=prom.probe_durations(raw),
                                      labels={"file": path, "hostname": topo.host.hostname}))
    text = prom.render(nodes)
    fams = assert_well_formed(text)
    passes = {lab["file"]: v for lab, v in samples(fams, "nvtopo_check_pass")}
    assert passes == {faulty: 0.0, good: 1.0}
    for name, fam in fams.items():
        files = {s.labels.get("file") for s in fam.samples}
        # a healthy node has no finding to list; every other family has both nodes
        assert files == ({faulty} if name == "nvtopo_finding" else {faulty, good}), name
        assert all(list(s.labels)[:2] == ["file", "hostname"] for s in fam.samples), name
    # series are unique: no two samples of a family with the same labels
    for fam in fams.values():
        keys = [tuple(sorted(s.labels.items())) for s in fam.samples]
        assert len(keys) == len(set(keys)), fam.name
    if PROMTOOL:
        res = promtool(text)
        assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not on PATH (Debian package prometheus): "
                    "only the prometheus_client parser validated the format")
def test_promtool_accepts_every_output(faulty, tmp_path):
    texts = [cli("check", "--from", faulty, "--format", "prometheus").stdout,
             cli("check", "--from", TOPO_TEXT, "--format", "prometheus").stdout,
             prom.render_check(checks.Report(layout_name="none", reason="", findings=(
                 checks.finding("info", "a.b", S.other('x "y"\\z\n'), "m"),)))]
    for text in texts:
        assert text.strip()
        res = promtool(text)
        assert res.returncode == 0, res.stdout + res.stderr
    # and promtool does reject a broken exposition, so the checks above can fail
    res = promtool("# TYPE nvtopo_x gauge\nnvtopo_x{a=\"b} 1\n")
    assert res.returncode != 0


def test_atomic_write_into_the_textfile_directory(faulty, tmp_path):
    d = tmp_path / "textfile"
    d.mkdir()
    target = d / "nvtopo.prom"
    target.write_text("stale\n")
    r = cli("check", "--from", faulty, "--format", "prometheus", "-o", str(target))
    assert r.exit_code == 1, r.output
    assert r.stdout == ""
    text = target.read_text()
    assert text == cli("check", "--from", faulty, "--format", "prometheus").stdout
    assert_well_formed(text)
    assert sorted(os.listdir(d)) == ["nvtopo.prom"]  # the temporary file was renamed away
    assert oct(target.stat().st_mode & 0o777) == "0o644"


@pytest.mark.parametrize("args", [
    ("check", "--format", "prometheus"),
    ("check", "--format", "svg"),
    ("show", "--format", "svg"),
    ("show", "--format", "html"),
    ("show", "--format", "json"),
])
def test_output_into_a_missing_directory_is_one_line_exit_2(faulty, tmp_path, args):
    target = tmp_path / "no" / "such" / "dir" / "out.file"
    r = cli(*args, "--from", faulty, "-o", str(target))
    assert r.exit_code == 2, r.output
    err = r.stderr if hasattr(r, "stderr") else r.output
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and str(target) in lines[0] and "does not exist" in lines[0], err
    assert "Traceback" not in r.output
    assert not (tmp_path / "no").exists()


def test_prometheus_from_a_file_imports_no_nvml_psutil_or_other_renderers(faulty):
    code = ("import sys; from nvtopo.cli import app\n"
            "try:\n    app(['check', '--from', sys.argv[1], '--format', 'prometheus'])\n"
            "except SystemExit as e:\n    assert e.code == 1, e.code\n"
            "bad = [m for m in ('pynvml', 'psutil', 'nvtopo.render.svg', "
            "'nvtopo.render.matrix') if m in sys.modules]\n"
            "assert not bad, bad\n"
            "assert 'nvtopo.render.prometheus' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code, faulty], check=True, capture_output=True)
    code = ("import sys; from nvtopo.cli import app\n"
            "try:\n    app(['check', '--from', sys.argv[1], '--format', 'json'])\n"
            "except SystemExit as e:\n    assert e.code == 1, e.code\n"
            "bad = [m for m in ('nvtopo.render.prometheus', 'nvtopo.render.svg', "
            "'nvtopo.render.export') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code, faulty], check=True, capture_output=True)


def test_live_probe_records_probe_durations(monkeypatch):
    """Live (a fake sysfs tree as /sys, no nvidia-smi): the findings match --format json, and
    the durations are the probes' own, measured now."""
    import sysfs_trees
    import nvtopo.probes.topo.live as tt

    monkeypatch.setattr(tt.shutil, "which", lambda name: None)
    root = sysfs_trees.tree("dgx-h100-faults")[0]
    r = cli("check", "--sysfs-root", root, "--format", "prometheus")
    assert r.exit_code == 1, r.output
    fams = assert_well_formed(r.stdout)
    doc = json.loads(cli("check", "--sysfs-root", root, "--format", "json").stdout)
    got = {(lab["code"], lab["subject"], lab["severity"]) for lab, _ in
           samples(fams, "nvtopo_finding")}
    assert got == {(f["code"], f["subject"], f["severity"]) for f in doc["findings"]}
    durations = {lab["source"]: v for lab, v in samples(fams, "nvtopo_probe_duration_seconds")}
    assert durations.get("sysfs", 0) > 0
    assert "topo-text" not in durations  # nvidia-smi was not run: nothing recorded
    down = {lab["device"] for lab, v in samples(fams, "nvtopo_port_up") if v == 0}
    assert down and all(any(f["subject"].startswith(d + " ") for f in doc["findings"])
                        for d in down)


def unescape(value: str) -> str:
    """The text a label value (as prometheus_client parsed it) was made from: the inverse
    of nvtopo.safe.reversible (``\\\\`` a backslash, ``\\xNN``/``\\uNNNN`` a character)."""
    out, i = [], 0
    while i < len(value):
        c = value[i]
        if c != "\\":
            out.append(c)
            i += 1
        elif value[i + 1] == "\\":
            out.append("\\")
            i += 2
        else:
            width = 2 if value[i + 1] == "x" else 4
            assert value[i + 1] in "xu", value
            out.append(chr(int(value[i + 2:i + 2 + width], 16)))
            i += 2 + width
    return "".join(out)


def test_a_real_escape_and_its_text_are_two_series():
    """ESC and the four characters ``\\x1b`` were one label value: two findings became one
    series twice, which node_exporter rejects (duplicate series)."""
    check = checks.Report(layout_name="l", reason="", findings=(
        checks.finding("error", "nvlink.link_down", S.other("GPU\x1b"), "m"),
        checks.finding("error", "nvlink.link_down", S.other("GPU\\x1b"), "m")))
    text = prom.render_check(check)
    fams = assert_well_formed(text)
    got = sorted(lab["subject"] for lab, _v in samples(fams, "nvtopo_finding"))
    assert len(got) == 2 and len(set(got)) == 2, text
    assert sorted(unescape(g) for g in got) == sorted(["GPU\x1b", "GPU\\x1b"])
    series = [line.rsplit(" ", 1)[0] for line in text.splitlines()
              if line and not line.startswith("#")]
    assert len(series) == len(set(series)), "duplicate series"


_LABEL_TEXT = st.lists(st.sampled_from(
    ["\\", "x", "1", "b", "u", "0", "\x1b", "\n", '"', "\u202e", "\ud800", "\x85", "a",
     "\\x", "\u2028", "\x7f", "é"]), max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(a=_LABEL_TEXT, b=_LABEL_TEXT)
def test_label_escaping_is_one_to_one(a, b):
    """Different texts are different label values, and each value gives its text back
    (after the exposition format's own escaping, as prometheus_client reads it)."""
    ea, eb = prom.escape_label_value(a), prom.escape_label_value(b)
    assert (ea == eb) == (a == b)
    for text, esc in ((a, ea), (b, eb)):
        assert "\n" not in esc and esc.isprintable()
        fam = prom.Family("nvtopo_x", "x", samples=[({"v": text}, 1.0)])
        parsed = samples(assert_well_formed(prom.exposition([fam])), "nvtopo_x")
        assert unescape(parsed[0][0]["v"]) == text


def test_imex_state_is_a_state_set_and_unread_imex_has_no_series():
    """A pasted nvidia-imex-ctl -N of a degraded 18-tray domain: DEGRADED is 1, UP and DOWN
    0, and the members counted by status; an input without IMEX has neither family."""
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "imex-text"
    r = cli("check", "--from", str(fixtures / "n18-degraded-3-ready.txt"), "--format",
            "prometheus")
    fams = assert_well_formed(r.stdout)
    states = {lab["state"]: v for lab, v in samples(fams, "nvtopo_imex_domain_state")}
    assert states == {"UP": 0.0, "DEGRADED": 1.0, "DOWN": 0.0}
    members = {lab["status"]: v for lab, v in samples(fams, "nvtopo_imex_members")}
    assert members == {"READY": 3.0, "UNAVAILABLE": 15.0}
    r = cli("check", "--from", TOPO_TEXT, "--format", "prometheus")
    fams = assert_well_formed(r.stdout)
    assert "nvtopo_imex_domain_state" not in fams and "nvtopo_imex_members" not in fams
