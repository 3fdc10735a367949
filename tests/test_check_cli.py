"""nvtopo check and nvtopo layouts, end to end: exit statuses, the JSON contract, capture."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import make_runner

import nvml_fake as F
from nvtopo import examples, snapshot
from nvtopo.cli import app

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "fixtures" / "topo-corpus"
H100 = str(CORPUS / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt")
DESKTOP = str(CORPUS / "08_2x-gtx1080ti-desktop-phb-numa-na.txt")


@pytest.fixture
def cli():
    runner = make_runner()

    def run(*args, input=None):
        return runner.invoke(app, list(args), input=input)
    return run


def write_snapshot(tmp_path, machine, topo_text=True):
    d = snapshot.from_text_evidence(examples.read("dgx-h100"), "example") if topo_text else \
        {"kind": "nvtopo-snapshot", "schema_version": 1, "host": {}, "probes": {}}
    d["probes"]["nvml"] = F.record(machine)
    p = tmp_path / f"{machine}.json"
    p.write_text(json.dumps(d))
    return str(p)


def test_healthy_exit_0_and_json_contract(cli):
    r = cli("check", "--from", H100, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert list(doc) == ["schema_version", "layout", "layout_reason", "verdict", "findings"]
    assert doc["layout"] == "hgx-h100-8" and doc["verdict"] == "pass"
    assert "ambiguous" in doc["layout_reason"]
    for f in doc["findings"]:
        assert set(f) == {"severity", "code", "subject", "expected", "actual", "message",
                          "hint", "source"}
        assert f["severity"] == "info"


def test_fault_exit_1_table_has_findings_and_verdict(cli, tmp_path):
    snap = write_snapshot(tmp_path, "dgx-h100-link-down")
    r = cli("check", "--from", snap)
    assert r.exit_code == 1, r.output
    assert "nvlink.link_down" in r.stdout and "GPU3 link 5" in r.stdout
    assert "FAIL: 1 error(s)" in r.stdout
    r = cli("check", "--from", snap, "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "fail" and doc["layout"] == "dgx-h100"
    assert [(f["code"], f["subject"]) for f in doc["findings"] if f["severity"] == "error"] \
        == [("nvlink.link_down", "GPU3 link 5")]


def test_warnings_alone_exit_0(cli, tmp_path):
    snap = write_snapshot(tmp_path, "dgx-a100-mig", topo_text=False)
    r = cli("check", "--from", snap, "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "pass"
    assert any(f["severity"] == "warning" for f in doc["findings"])


def test_no_layout_fits_runs_layout_independent_checks(cli):
    r = cli("check", "--from", DESKTOP, "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["layout"] == "none" and doc["layout_reason"].startswith("no layout fits")


def test_permuted_mesh_reports_the_mapping(cli, tmp_path):
    from nvtopo import layouts

    pairs = layouts.load("dgx-1-v100").nvlink.pairs
    perm = [7, 1, 2, 3, 4, 5, 6, 0]  # layout GPU i printed as GPU perm[i]: 0 and 7 swapped
    cells = [["X" if a == b else "SYS" for b in range(8)] for a in range(8)]
    for key, c in pairs.items():
        a, b = (perm[int(x)] for x in key.split("-"))
        cells[a][b] = cells[b][a] = f"NV{c}"
    text = "\t" + "\t".join(f"GPU{i}" for i in range(8)) + "\n" + "".join(
        f"GPU{a}\t" + "\t".join(cells[a]) + "\n" for a in range(8))
    f = tmp_path / "perm.txt"
    f.write_text(text)
    r = cli("check", "--from", str(f), "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["layout"] == "v100-sxm2-8", doc["layout_reason"]
    m = doc["layout_mapping"]
    for key, c in pairs.items():  # every printed pair maps onto a layout pair with its NV#
        a, b = (perm[int(x)] for x in key.split("-"))
        x, y = sorted((m[f"GPU{a}"], m[f"GPU{b}"]))
        assert pairs.get(f"{x}-{y}") == c
    assert "renumbered" in doc["layout_reason"]
    assert r.exit_code == 0, doc


@pytest.mark.parametrize("args,needle", [
    (["--from", "/nonexistent.json"], "no such file"),
    (["--from", DESKTOP, "--layout", "nosuch"], "no bundled layout"),
    (["--from", DESKTOP, "--layout", "dgx-h100", "--layout-file", "x.json"], "either"),
])
def test_bad_input_exit_2_one_line(cli, args, needle):
    r = cli("check", *args)
    assert r.exit_code == 2
    assert needle in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_bad_layout_file_one_line_exit_2(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1, "name": "x", "gpus": {"count": "eight"}}')
    r = cli("check", "--from", H100, "--layout-file", str(bad))
    assert r.exit_code == 2
    assert r.stderr.startswith("nvtopo: error: " + str(bad)) and r.stderr.count("\n") == 1
    assert "gpus.count" in r.stderr


def test_no_data_at_all_exit_2(cli, tmp_path):
    d = {"kind": "nvtopo-snapshot", "schema_version": 1, "host": {},
         "probes": {"nvml": F.record("no-nvml")}}
    p = tmp_path / "empty.json"
    p.write_text(json.dumps(d))
    r = cli("check", "--from", str(p))
    assert r.exit_code == 2 and "nothing to check" in r.stderr


def test_layouts_list_show(cli):
    r = cli("layouts")
    assert r.exit_code == 0 and "dgx-h100" in r.stdout and "gb200-nvl72-tray" in r.stdout
    rows = json.loads(cli("layouts", "--format", "json").stdout)
    h = next(x for x in rows if x["name"] == "dgx-h100")
    assert h["gpus"] == 8 and h["nvlink"] == "NV18 (NVSwitch)" and h["nics"] == "8x 400G IB"
    r = cli("layouts", "show", "dgx-1-v100")
    assert r.exit_code == 0 and json.loads(r.stdout)["name"] == "dgx-1-v100"
    assert cli("layouts", "show", "nosuch").exit_code == 2
    assert cli("layouts", "show").exit_code == 2


@pytest.mark.parametrize("source", ["topo", "snapshot"])
def test_capture_then_check_against_it_passes(cli, tmp_path, source):
    if source == "topo":
        good = str(CORPUS / "21_h100-8gpu-nv18-8nic-misaligned-columns-sglang.txt")
    else:
        good = write_snapshot(tmp_path, "dgx-h100")
    r = cli("layouts", "capture", "--from", good, "--name", "rack7")
    assert r.exit_code == 0, r.stderr
    lay = json.loads(r.stdout)
    assert lay["name"] == "rack7" and lay["gpus"]["count"] == 8
    assert lay["nvlink"]["pair_count"] == 18
    if source == "snapshot":
        assert lay["gpus"]["name_pattern"] and lay["nvlink"]["links_per_gpu"] == 18
    else:
        assert "name_pattern" not in lay["gpus"]  # a topo text does not name GPUs
    f = tmp_path / "rack7.json"
    f.write_text(r.stdout)
    r = cli("check", "--from", good, "--layout-file", str(f), "--format", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["layout"] == "rack7", doc
    assert not [x for x in doc["findings"] if x["severity"] != "info"]
    # a degraded node fails against the captured layout
    if source == "snapshot":
        bad = write_snapshot(tmp_path, "dgx-h100-link-down")
        r = cli("check", "--from", bad, "--layout-file", str(f), "--format", "json")
        assert r.exit_code == 1


@pytest.mark.parametrize("hostname,expected", [
    ("ñode-01", "ode-01"), ("gpu node 7", "gpu-node-7"), ("_x", "x"), ("ñ", "captured"),
    ("\x1b]8;;http://x\x07n", "8--http---x-n")])
def test_capture_names_the_layout_from_any_hostname(cli, tmp_path, hostname, expected):
    """Without --name the layout is named after the host: made of ASCII letters, digits, '.',
    '_', '-' and starting with a letter or digit, whatever the hostname holds (a non-ASCII
    first character made an invalid name: exit 2)."""
    doc = json.loads(Path(write_snapshot(tmp_path, "dgx-h100")).read_text())
    doc["host"]["hostname"] = hostname
    doc.pop("derived", None)
    f = tmp_path / "renamed.json"
    f.write_text(json.dumps(doc))
    r = cli("layouts", "capture", "--from", str(f))
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["name"] == expected


def test_capture_of_a_node_without_nvlink_states_no_nvlink(cli, tmp_path):
    pcie = str(CORPUS / "03_p40-8gpu-pcie-switch-mlx5-soc-tabs.txt")
    r = cli("layouts", "capture", "--from", pcie, "--name", "p40")
    assert r.exit_code == 0, r.stderr
    lay = json.loads(r.stdout)
    assert lay["nvlink"]["pairs"] == {} and lay["nvlink"]["evidence"]
    f = tmp_path / "p40.json"
    f.write_text(r.stdout)
    r = cli("check", "--from", pcie, "--layout-file", str(f), "--format", "json")
    assert r.exit_code == 0 and not [x for x in json.loads(r.stdout)["findings"]
                                     if x["severity"] != "info"]
    # against it, a node whose GPUs are NVLinked shows every pair as unexpected NVLink
    # (a warning: more NVLink than expected breaks nothing); unstated, it would show nothing
    nv = str(CORPUS / "21_h100-8gpu-nv18-8nic-misaligned-columns-sglang.txt")
    r = cli("check", "--from", nv, "--layout-file", str(f), "--format", "json")
    unexpected = {x["subject"] for x in json.loads(r.stdout)["findings"]
                  if x["code"] == "nvlink.pair_unexpected" and x["severity"] == "warning"}
    assert len(unexpected) == 28, r.stdout


def test_check_from_a_file_imports_no_nvml_or_psutil(tmp_path):
    snap = write_snapshot(tmp_path, "dgx-h100")
    code = ("import sys; from nvtopo.cli import app\n"
            "try:\n    app(['check', '--from', sys.argv[1]])\nexcept SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "assert 'pynvml' not in sys.modules and 'psutil' not in sys.modules, "
            "[m for m in sys.modules if m in ('pynvml', 'psutil')]\n")
    subprocess.run([sys.executable, "-c", code, snap], check=True, capture_output=True)


def test_check_from_a_file_imports_nothing_for_type_checkers(tmp_path):
    # @record and @plain declare dataclass_transform for mypy only (docs/testing.md): the
    # start-up path imports no typing_extensions (typer and Rich do not import it either)
    snap = write_snapshot(tmp_path, "dgx-h100")
    code = ("import sys; from nvtopo.cli import app\n"
            "try:\n    app(['check', '--from', sys.argv[1]])\nexcept SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "import nvtopo.model.codec, nvtopo.plain\n"
            "assert 'typing_extensions' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code, snap], check=True, capture_output=True)
