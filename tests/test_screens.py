"""What a person sees: every command's terminal output at 80 and 200 columns, kept as golden
files (``tests/golden/screens/``), and the colour rule "red only for faults".

The captures run through the CLI with ``COLUMNS`` set and colour off, from a working
directory holding the inputs (so the paths printed are short and the same on every machine).
Regenerate after a deliberate change, then read the diff::

    NVTOPO_UPDATE_SCREENS=1 .venv/bin/python -m pytest -q tests/test_screens.py
    git diff tests/golden/screens
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from cli_runner import make_runner

from nvtopo import fakesys, layouts, snapshot
from nvtopo.cli import app
from nvtopo.simulate import simulate

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
SCREENS = HERE / "golden" / "screens"
UPDATE = os.environ.get("NVTOPO_UPDATE_SCREENS") == "1"
runner = make_runner(check_schemas=False)  # (a forced terminal gets tables, not JSON)

FAULTS = ["nvlink-down:GPU3:7", "ib-port-down:mlx5_4", "pcie-width:GPU5:8",
          "gpu-missing:GPU7", "counters:mlx5_2:symbol_error=100",
          "nic-affinity-swap:mlx5_0:mlx5_3"]

#: 15 faults that give 17 findings (11 errors, 4 warnings; 3 notes since gds): the issue's measure
MANY = ["nvlink-down:GPU3:7", "nvlink-down:GPU5:2", "ib-port-down:mlx5_4", "ib-port-down:mlx5_7",
        "pcie-width:GPU5:8", "pcie-width:GPU1:8", "pcie-gen:GPU2:3", "pcie-gen:GPU6:3",
        "ib-rate:mlx5_0:200", "ib-rate:mlx5_3:200", "counters:mlx5_2:symbol_error=100",
        "counters:mlx5_9:symbol_error=5000", "counters:mlx5_10:link_downed=50",
        "gpu-missing:GPU7", "peermem-missing"]

#: name -> arguments (relative to the inputs' directory)
SCREENS_CASES = {
    "show-dgx-h100-sysfs": ["show", "--sysfs-root", "dgx-h100"],
    "ib-dgx-h100-sysfs": ["ib", "--sysfs-root", "dgx-h100"],
    "check-dgx-h100-sysfs": ["check", "--sysfs-root", "dgx-h100"],
    "ib-dgx-h100-faults": ["ib", "--sysfs-root", "dgx-h100-faults"],
    "check-dgx-h100-faults": ["check", "--sysfs-root", "dgx-h100-faults"],
    "check-brief-dgx-h100-faults": ["check", "--brief", "--sysfs-root", "dgx-h100-faults"],
    "show-healthy": ["show", "--from", "healthy.json"],
    "links-healthy": ["links", "--from", "healthy.json", "--gpu", "0"],
    "check-healthy": ["check", "--from", "healthy.json"],
    "show-faulty": ["show", "--from", "faulty.json"],
    "links-faulty": ["links", "--from", "faulty.json", "--gpu", "3"],
    "check-faulty": ["check", "--from", "faulty.json"],
    "check-17-findings": ["check", "--from", "many.json"],
    "check-brief-17-findings": ["check", "--brief", "--from", "many.json"],
    "show-36-nics": ["show", "--from", "wide.txt"],
    "diff": ["diff", "healthy.json", "faulty.json"],
    "audit-fleet-300": ["audit", "fleet", "--jobs", "1"],
    "audit-fleet-300-failed": ["audit", "fleet", "--failed", "--jobs", "1"],
    # standard output a terminal: the failing nodes and a count of the passing ones
    "audit-fleet-300-terminal": ["audit", "fleet", "--jobs", "1"],
    "cluster-fleet-300": ["cluster", "fleet", "--jobs", "1"],
    "links-healthy-terminal": ["links", "--from", "healthy.json"],
    "links-faulty-terminal": ["links", "--from", "faulty.json"],
    "show-nvlink-s-paste": ["show", "--from", "nvlink-s.txt"],
    "layouts": ["layouts"],
    "layouts-show-terminal": ["layouts", "show", "dgx-h100"],
}
#: Cases captured with standard output (and error) taken for a terminal (TTY_COMPATIBLE=1).
TERMINAL_CASES = {"audit-fleet-300-terminal", "layouts-show-terminal",
                  "links-healthy-terminal", "links-faulty-terminal"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("screens")
    for tree in ("dgx-h100", "dgx-h100-faults"):
        fakesys.load_file(str(FIXTURES / "sysfs" / f"{tree}.sysfs"), str(root / tree))
    lay = layouts.load("dgx-h100")
    healthy = simulate(lay, [], seed=3, hostname="dgx-node-0001")
    faulty = simulate(lay, FAULTS, seed=3, hostname="dgx-node-0001")
    (root / "healthy.json").write_text(snapshot.dumps(healthy))
    (root / "faulty.json").write_text(snapshot.dumps(faulty))
    many = simulate(lay, MANY, seed=2, hostname="dgx-node-0002")
    (root / "many.json").write_text(snapshot.dumps(many))
    from test_cli import synthetic_44

    (root / "wide.txt").write_text(synthetic_44()[0], encoding="utf-8")
    (root / "nvlink-s.txt").write_bytes(
        (FIXTURES / "nvml-text" / "nvlink_s_h100_sxm_1gpu_link7_inactive.txt").read_bytes())
    # a fleet of 300 files: 280 hosts (20 with a second, later snapshot), 1 in 7 failing
    small = {}
    for kind, faults in (("ok", []), ("nv", ["nvlink-down:GPU3:7"]),
                         ("ib", ["ib-port-down:mlx5_4", "pcie-width:GPU5:8"])):
        small[kind] = simulate(lay, faults, seed=3, hostname="HOST")
    for i in range(300):
        kind = "ok" if i % 7 else ("nv" if (i // 7) % 2 else "ib")
        doc = dict(small[kind])
        doc["host"] = dict(doc["host"], hostname=f"gpu-{i % 280:04d}.east")
        rack = root / "fleet" / f"rack-{i // 40:02d}"
        rack.mkdir(parents=True, exist_ok=True)
        f = rack / f"node-{i:04d}.json"
        f.write_text(snapshot.dumps(doc))
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))  # later files are newer
    return root


def capture(args, width, workdir, colour=False, terminal=False):
    old = os.getcwd()
    os.chdir(workdir)
    try:
        env = {"COLUMNS": str(width), "TERM": "xterm-256color" if colour else "dumb"}
        if terminal:
            env["TTY_COMPATIBLE"] = "1"
        env.update({"FORCE_COLOR": "1"} if colour else {"NO_COLOR": "1"})
        r = runner.invoke(app, list(args), env=env)
    finally:
        os.chdir(old)
    assert r.exit_code in (0, 1), (args, r.exit_code, r.stdout, r.stderr)
    return r.stdout


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("name", sorted(SCREENS_CASES))
def test_screen(name, width, workdir):
    out = capture(SCREENS_CASES[name], width, workdir, terminal=name in TERMINAL_CASES)
    assert all(len(line) <= width for line in out.splitlines()), name
    golden = SCREENS / f"{name}.{width}.txt"
    if UPDATE:
        SCREENS.mkdir(parents=True, exist_ok=True)
        golden.write_text(out, encoding="utf-8")
    assert golden.is_file(), f"{golden} missing: NVTOPO_UPDATE_SCREENS=1 records it"
    assert out == golden.read_text(encoding="utf-8"), (
        f"{name} at {width} columns differs from {golden.name} (regenerate deliberately)")


def test_faulty_dgx_check_fits_about_100_lines(workdir):
    """The issue's measure: a DGX H100 with 17 findings at 80 columns, about 100 lines with
    hints, about 25 with --brief (it printed 505 lines before)."""
    full = capture(SCREENS_CASES["check-17-findings"], 80, workdir)
    brief = capture(SCREENS_CASES["check-brief-17-findings"], 80, workdir).splitlines()
    # (the missing GPU's slot is told by its NIC; only the data drive on its switch is left
    # "not checked")
    assert "FAIL: 11 error(s), 4 warning(s)  · 1 not checked" in full
    findings = sum(1 for ln in brief if re.match(r"  [a-z0-9]+\.[a-z_]+  ", ln))
    assert findings == 15
    assert len(full.splitlines()) <= 100 and len(brief) <= 25, (len(full.splitlines()),
                                                                 len(brief))


# --- colour: red only for faults ------------------------------------------------------------

SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _red_runs(out: str):
    """The texts printed in a red foreground (SGR 31/91, 256-colour 1/9/124/160/196)."""
    red = False
    runs, current = [], []
    pos = 0
    for m in SGR.finditer(out):
        if red:
            current.append(out[pos:m.start()])
        params = m.group(1).split(";") if m.group(1) else ["0"]
        i = 0
        while i < len(params):
            p = params[i]
            if p in ("0", "", "39"):
                red = False
            elif p in ("31", "91"):
                red = True
            elif p in ("30", "32", "33", "34", "35", "36", "37", "90", "92", "93", "94", "95",
                       "96", "97"):
                red = False
            elif p == "38" and i + 2 < len(params) and params[i + 1] == "5":
                red = params[i + 2] in ("1", "9", "124", "160", "196")
                i += 2
            elif p == "38" and i + 4 < len(params) and params[i + 1] == "2":
                r, g, b = (int(x or 0) for x in params[i + 2:i + 5])
                red = r > 150 and g < 80 and b < 80
                i += 4
            i += 1
        if not red and current:
            runs.append("".join(current))
            current = []
        pos = m.end()
    return [r for r in runs if r.strip()]


@pytest.mark.parametrize("args", [["show", "--from", "healthy.json"],
                                  ["show", "--sysfs-root", "dgx-h100"],
                                  ["ib", "--sysfs-root", "dgx-h100"],
                                  ["check", "--from", "healthy.json"],
                                  ["links", "--from", "healthy.json"]])
def test_a_healthy_node_shows_no_red(args, workdir):
    out = capture(args, 120, workdir, colour=True)
    assert SGR.search(out), "colour was not forced: the test would prove nothing"
    assert _red_runs(out) == []


def test_red_marks_the_faults_of_a_faulty_node(workdir):
    out = capture(["check", "--from", "faulty.json"], 120, workdir, colour=True)
    red = " ".join(_red_runs(out))
    for word in ("Errors", "nvlink.link_down", "FAIL"):
        assert word in red, red
    shown = capture(["show", "--from", "faulty.json"], 120, workdir, colour=True)
    assert not any("SYS" in r for r in _red_runs(shown))  # distance is not a fault
