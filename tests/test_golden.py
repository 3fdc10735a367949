"""Golden outputs: every command prints what it printed when tests/golden/ was recorded.

One test per case (``nvtopo ARGS`` on one fixture input, see ``golden_cases.py``):
standard output byte for byte, standard error and the exit status, after
``golden_cases.normalise``.  A failure names the case and shows a unified diff
of the first differing lines.  An intended change is recorded with
``python tests/golden_cases.py --update`` in a commit that says which golden
files changed and why (tests/golden/README.md).
"""

from __future__ import annotations

import json
import os

import pytest

import golden_cases as G

CASES = G.cases()


def _core_inputs(cases):
    """The inputs (a case's name less its last part, e.g. ``simulate/dgx-h100``) whose cases
    the core tier runs: every third input of each group (``simulate``, ``fault``, ``topo``,
    ...), and every input of a group of fewer than three.  The slow tier runs every case;
    an input's cases go together, so the core tier makes none of the other inputs."""
    groups = {}
    for c in cases:
        inp = c.name.rsplit("/", 1)[0]
        groups.setdefault(inp.split("/", 1)[0], []).append(inp)
    core = set()
    for inps in groups.values():
        ordered = sorted(set(inps))
        core.update(ordered if len(ordered) < 3 else ordered[::3])
    return core


_CORE = _core_inputs(CASES)
_PARAMS = [pytest.param(c, id=c.name, marks=() if c.name.rsplit("/", 1)[0] in _CORE
                        else pytest.mark.slow) for c in CASES]


@pytest.fixture(scope="module")
def inputs():
    made = G.Inputs()
    yield made
    made.close()


@pytest.fixture(scope="module")
def index():
    return G.load_index()


@pytest.mark.parametrize("case", _PARAMS)
def test_output_is_the_golden_one(case, inputs, index):
    problems = G.compare(case, G.run_case(case, inputs), index)
    if problems:
        pytest.fail("\n".join(problems) + f"\nIf the change is intended: {G.REGEN}, and say "
                    "in the commit which golden files changed and why.", pytrace=False)


def test_golden_tree_holds_exactly_the_cases(index):
    """No case without a record, no record without a case, no stray or missing file."""
    names = [c.name for c in CASES]
    assert sorted(index) == sorted(names)
    referenced = {e["stdout"] for e in index.values() if e["stdout"] is not None}
    assert sorted(referenced) == G.golden_files()
    for name, entry in index.items():
        assert set(entry) == {"args", "exit_code", "stderr", "stdout"}, name
        assert entry["exit_code"] in (0, 1, 2), name
        if entry["stdout"] is not None and entry["stdout"] != name:
            # stored once under the first case with that output, which points to itself
            assert names.index(entry["stdout"]) < names.index(name), name
            assert index[entry["stdout"]]["stdout"] == entry["stdout"], name
    with open(G.INDEX, encoding="utf-8") as fh:
        assert fh.read() == G.dumps_index(index)


def test_the_record_covers_every_verdict_and_error_path(index):
    codes = {e["exit_code"] for e in index.values()}
    assert codes == {0, 1, 2}
    # findings exit 1 with nothing on stderr; bad input exits 2 with one line on stderr
    for name, e in index.items():
        if e["exit_code"] == 2:
            assert e["stderr"].startswith("nvtopo: error: ") and e["stderr"].count("\n") == 1
            assert e["stdout"] is None, name
    assert index["fault/dgx-h100/nvlink-down/check.json"]["exit_code"] == 1
    assert index["simulate/dgx-h100/check.json"]["exit_code"] == 0


def test_every_fault_kind_is_recorded():
    from nvtopo.errors import NvtopoError
    from nvtopo.simulate import faults, machine, simulate

    assert set(G.FAULTS_H100) | set(G.FAULTS_GH200) == set(faults.KINDS)
    for spec_by_kind in G.FAULTS.values():
        for kind, spec in spec_by_kind.items():
            assert faults.parse(spec).kind == kind
    # the kinds left out for dgx-a100 are left out because they do not apply there
    storage = {"nvme-far", "nvme-bunched", "nvme-missing", "iommu-on",
               "no-nvidia-fs"}  # its layout expects no GDS
    c2c = {"c2c-down", "c2c-links"}  # not a Grace superchip
    assert set(faults.KINDS) - set(G.FAULTS_A100) == {"nic-affinity-swap"} | storage | c2c
    with pytest.raises(NvtopoError, match="does not name each GPU's NIC"):
        simulate(machine.load_layout("dgx-a100", None), [G.FAULTS_H100["nic-affinity-swap"]])
    for kind in sorted(storage):
        with pytest.raises(NvtopoError, match="does not expect GPUDirect Storage"):
            simulate(machine.load_layout("dgx-a100", None), [G.FAULTS_H100[kind]])


def test_every_fixture_and_layout_is_a_case():
    from nvtopo import layouts

    args = [a for c in CASES for a in c.args]
    for sub, pattern, key in (("topo-corpus", "*.txt", "topo/{}"),
                              ("nvml", "*.json", "nvml/{}"),
                              ("nvml-text", "*.txt", "nvml-text/{}"),
                              ("gds-text", "*.txt", "gds-text/{}"),
                              ("imex-text", "*.txt", "imex-text/{}"),
                              ("imex-text", "*.json", "imex-text/{}")):
        files = sorted((G.FIXTURES / sub).glob(pattern))
        assert files, sub
        for f in files:
            assert key.format(f.name) in args, f
    for f in sorted((G.FIXTURES / "sysfs").glob("*.sysfs")):
        assert f"sysfs/{f.stem}" in args, f
    for name in layouts.names():
        assert G.sim_key(name) in args, name


def test_normalise_replaces_only_what_varies():
    text = ('{"nvtopo_version": "0.1.0", "duration_s": 0.019, "time": '
            '"2026-11-24T21:21:05+00:00",\n "timeout_s": 30.0, "speed_mbps": 26562, '
            '"fw_ver": "28.39.1002", "note": "0.1.0 at 2026-11-24T21:21:05"}\n'
            "GPU0  NV18  0.019 ms  nvtopo 0.1.0\n")
    assert G.normalise(text) == (
        '{"nvtopo_version": "<VERSION>", "duration_s": "<DURATION>", "time": "<TIME>",\n'
        ' "timeout_s": 30.0, "speed_mbps": 26562, "fw_ver": "28.39.1002", '
        '"note": "0.1.0 at 2026-11-24T21:21:05"}\n'
        "GPU0  NV18  0.019 ms  nvtopo 0.1.0\n")
    assert G.normalise('"duration_s": 1e-05, "time": "2026-01-01T00:00:00Z"') == \
        '"duration_s": "<DURATION>", "time": "<TIME>"'


def test_a_changed_byte_exit_status_or_stderr_is_reported(index):
    """The comparison itself can fail: one byte, the exit status, stderr, a missing record."""
    case = next(c for c in CASES if c.name == "simulate/dgx-h100/check.txt")
    entry = index[case.name]
    good = G.Outcome(entry["exit_code"], G.expected_stdout(entry), entry["stderr"])
    assert G.compare(case, good, index) == []

    text = good.stdout
    i = text.index("PASS")
    one_byte = G.Outcome(good.exit_code, text[:i] + "P@SS" + text[i + 4:], good.stderr)
    problems = G.compare(case, one_byte, index)
    assert len(problems) == 1 and problems[0].startswith(f"{case.name}: stdout differs:")
    assert f"--- golden/{case.name}" in problems[0]
    assert "\n-PASS: no errors" in problems[0] and "\n+P@SS: no errors" in problems[0]

    assert G.compare(case, G.Outcome(1, good.stdout, good.stderr), index) == [
        f"{case.name}: exit status 1, golden 0"]
    problems = G.compare(case, G.Outcome(0, good.stdout, "nvtopo: warning: x\n"), index)
    assert len(problems) == 1 and "stderr differs" in problems[0]
    assert "no golden record" in G.compare(G.Case("new/case.txt", ("layouts",)), good,
                                           index)[0]


def test_a_long_diff_is_cut():
    old = "".join(f"line {i}\n" for i in range(200))
    new = "".join(f"line {i}x\n" for i in range(200))
    out = G.first_diff(old, new, "x.txt", lines=10)
    assert out.count("\n") == 11 and out.endswith("more diff lines\n")


def test_inputs_run_in_a_scratch_directory_left_clean(tmp_path):
    """The cases see relative paths only; the working directory is restored after each."""
    made = G.Inputs(str(tmp_path))
    before = os.getcwd()
    key = "topo/01_hgx-a100-8gpu-nv12-10nic-tabs.txt"
    out = G.run_case(G.Case("t.json", ("check", "--from", key, "--format", "json"), (key,)),
                     made)
    assert os.getcwd() == before
    assert (tmp_path / key).is_file()
    assert out.exit_code == 0 and json.loads(out.stdout)["layout"] == "dgx-a100"
    assert str(tmp_path) not in out.stdout + out.stderr
