"""Every command's terminal output at 80, 100, 120 and 200 columns (issue 13).

For each command × representative input × width: no line is wider than the terminal, no
value is cut with an ellipsis, and every identifier (PCI address, device name, GPU, host
name, file name) that the widest output shows appears whole in the narrower ones; the
model's own identifiers (every NIC name and PCI address) appear whole where the command
lists them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_runner import make_runner

from nvtopo import fakesys, layouts, snapshot
from nvtopo.cli import app
from nvtopo.simulate import simulate

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
WIDTHS = (80, 100, 120, 200)
#: Identifiers as they are printed: PCI addresses, RDMA devices, netdevs, GPUs/NICs,
#: host names and snapshot files of the fleet.
IDENT = re.compile(r"(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]"
                   r"|mlx5_\w+|ibp\w+|enp\w+|\bGPU\d+\b|\bNIC\d+\b"
                   r"|gpu-node-\d+\.[a-z.-]+|node-\d+\.json")
CUT = re.compile(r"\S…(?=\s|$)", re.M)
runner = make_runner()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("widths")
    out = {}
    for tree in ("dgx-h100", "dgx-h100-faults"):
        dest = root / tree
        fakesys.load_file(str(FIXTURES / "sysfs" / f"{tree}.sysfs"), str(dest))
        out[tree] = ["--sysfs-root", str(dest)]
    lay = layouts.load("dgx-h100")
    good = simulate(lay, [], seed=1, hostname="dgx-h100-node-0001.example.com")
    bad = simulate(lay, ["nvlink-down:GPU3:7", "ib-port-down:mlx5_4", "pcie-width:GPU5:8",
                         "gpu-missing:GPU7", "counters:mlx5_2:symbol_error=100",
                         "nic-affinity-swap:mlx5_0:mlx5_3"], seed=1,
                   hostname="dgx-h100-node-0001.example.com")
    (root / "good.json").write_text(snapshot.dumps(good))
    (root / "bad.json").write_text(snapshot.dumps(bad))
    out["sim-healthy"] = ["--from", str(root / "good.json")]
    out["sim-faulty"] = ["--from", str(root / "bad.json")]
    topo = FIXTURES / "topo-corpus" / "01_hgx-a100-8gpu-nv12-10nic-tabs.txt"
    out["topo-10nic"] = ["--from", str(topo)]
    for name in ("n18-one-way", "n18-degraded-3-ready"):  # IMEX findings (docs/imex.md)
        out[f"imex-{name}"] = ["--from", str(FIXTURES / "imex-text" / f"{name}.txt")]
    fleet = root / "fleet"
    for i in range(24):
        rack = fleet / f"rack-{i // 8:02d}"
        rack.mkdir(parents=True, exist_ok=True)
        src = root / ("bad.json" if i % 5 == 0 else "good.json")
        text = src.read_text()
        # a distinct host name per file (the sealed cache goes stale: re-derived, same model)
        text = text.replace("dgx-h100-node-0001.example.com",
                            f"gpu-node-{i % 20:04d}.cluster-east.example.com")
        (rack / f"node-{i:04d}.json").write_text(text)
    out["fleet"] = [str(fleet)]
    out["root"] = root
    return out


def run(args, width):
    r = runner.invoke(app, list(args), env={"COLUMNS": str(width), "NO_COLOR": "1",
                                            "TERM": "dumb"})
    assert r.exit_code in (0, 1), (args, r.exit_code, r.stdout, r.stderr)
    return r.stdout


CASES = [(cmd, name) for cmd in ("show", "links", "ib", "check")
         for name in ("dgx-h100", "dgx-h100-faults", "sim-healthy", "sim-faulty", "topo-10nic")
         if not (cmd == "ib" and name == "topo-10nic")
         and not (cmd == "links" and name in ("dgx-h100", "dgx-h100-faults", "topo-10nic"))]
# (links reads NVML evidence only; ib needs sysfs)
CASES += [("check --brief", "dgx-h100-faults"), ("check -v", "sim-faulty"),
          ("links --problems", "sim-faulty"),
          ("audit", "fleet"), ("audit --all-snapshots", "fleet"), ("diff", "sim"),
          ("check", "imex-n18-one-way"), ("check", "imex-n18-degraded-3-ready")]


def _args(cmd, name, inputs):
    if cmd == "diff":
        return ["diff", inputs["sim-healthy"][1], inputs["sim-faulty"][1]]
    return cmd.split() + inputs[name]


@pytest.mark.parametrize("cmd,name", CASES)
def test_fits_every_width_and_cuts_no_identifier(cmd, name, inputs):
    args = _args(cmd, name, inputs)
    widest = run(args, 200)
    idents = set(IDENT.findall(widest))
    assert idents or cmd.startswith("check"), widest
    for width in WIDTHS:
        out = widest if width == 200 else run(args, width)
        for line in out.splitlines():
            assert len(line) <= width, (cmd, name, width, line)
        # a value cut by Rich ends in "…" ("mlx5_0…mlx5_9" is a range, "… +3 more" a count)
        assert not CUT.search(out), (cmd, name, width, CUT.search(out), out)
        missing = idents - set(IDENT.findall(out))
        assert not missing, (cmd, name, width, sorted(missing), out)


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-h100-faults"])
@pytest.mark.parametrize("cmd", ["show", "ib"])
def test_every_nic_name_and_address_appears_whole(cmd, name, inputs):
    opened = snapshot.open_input(snapshot.Input(sysfs_root=inputs[name][1], command=cmd))
    names = {n.name for n in opened.model.nics if n.name}
    assert len(names) >= 10  # the DGX H100 tree: 8 compute + storage ports
    for width in (80, 120):
        out = run(_args(cmd, name, inputs), width)
        tokens = set(re.findall(r"[\w.:-]+", out))
        assert names <= tokens, (width, sorted(names - tokens))
        if cmd == "ib":
            pcis = {n.sysfs.pci_address for n in opened.model.nics
                    if n.sysfs is not None and getattr(n.sysfs, "pci_address", None)}
            assert pcis and pcis <= tokens, (width, sorted(pcis - tokens))


def test_check_on_a_faulty_dgx_is_short_at_80_columns(inputs):
    full = run(["check"] + inputs["dgx-h100-faults"], 80).splitlines()
    brief = run(["check", "--brief"] + inputs["dgx-h100-faults"], 80).splitlines()
    # 9 findings (the tree's AER counters add events.aer_counted) and 6 notes: the row, its
    # explanation and hint (shared hints once)
    assert len(full) <= 60 and len(brief) <= 20, (len(full), len(brief))
    # one row per finding (a long expected → actual continues on an indented line)
    assert sum(1 for ln in brief if re.match(r"  [a-z0-9]+\.[a-z_]+  ", ln)) == 9
    # (gds: the tree records no kernel/, so the IOMMU state is unknown)
    # (ib has errors above: its notes are named as its other facts, last)
    assert "Not checked (7): gpu, fabric, nvlink, p2p, gds, other ib facts" in "\n".join(full)
    # the port-down hint, shared by mlx5_3 and mlx5_4, is printed once for both
    assert sum("check the cable/transceiver and the switch port (ibstat" in ln
               for ln in full) == 1
    verbose = run(["check", "-v"] + inputs["dgx-h100-faults"], 80)
    assert "ib.not_checked" in verbose and "-v lists them" not in verbose


def test_fleet_is_grouped_by_host(inputs):
    out = run(["audit"] + inputs["fleet"], 120)
    hosts = re.findall(r"^(gpu-node-\d+)\S*", out, re.M)
    assert len(hosts) == len(set(hosts)) == 20  # one row per host, not per file
    assert "4 older snapshots of the same hosts not listed" in out.replace("\n  ", " ")
    failed = run(["audit", "--failed"] + inputs["fleet"], 120)
    rows = re.findall(r"^gpu-node-\S+\s+(\w+)", failed, re.M)
    assert rows and set(rows) == {"FAIL"}
    every = run(["audit", "--all-snapshots"] + inputs["fleet"], 120)
    assert len(re.findall(r"^gpu-node-", every, re.M)) == 24


def test_a_36_nic_node_fits(tmp_path):
    from test_cli import synthetic_44  # 8 GPUs and 36 NICs, the suite's widest topo text

    text, devices, _ = synthetic_44()
    f = tmp_path / "wide.txt"
    f.write_text(text, encoding="utf-8")
    widest = run(["show", "--from", str(f)], 200)
    for width in WIDTHS:
        out = run(["show", "--from", str(f)], width)
        assert max(len(ln) for ln in out.splitlines()) <= width
        assert not CUT.search(out)
        assert set(IDENT.findall(widest)) <= set(IDENT.findall(out))
        assert all(f"mlx5_{i}" in out for i in range(36))


# --- conventions: usage errors, completion, help ---------------------------------------------


def _nvtopo(*args):
    import subprocess
    import sys

    code = "import sys; from nvtopo.cli import run; sys.argv[0] = 'nvtopo'; run()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("args,words", [
    (["check", "--format", "xml"], ["--format", "'xml'", "nvtopo check --help"]),
    (["check", "--bogus"], ["--bogus", "nvtopo check --help"]),
    (["bogus"], ["bogus", "nvtopo --help"]),
])
def test_a_usage_error_is_one_line_and_exit_2(args, words):
    r = _nvtopo(*args)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nvtopo: error: "), r.stderr
    assert all(w in lines[0] for w in words), lines[0]


def test_completion_can_be_shown_and_installed_and_help_names_every_input():
    r = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert "--install-completion" in r.stdout and "--show-completion" in r.stdout
    r = runner.invoke(app, ["check", "--help"], env={"COLUMNS": "200"})
    help_text = " ".join(r.stdout.replace("│", " ").split())
    for phrase in ("topo -m", "nvlink -s/-e/-c/-R", "nvidia-smi -q", ".json.gz",
                   "snapshot", "NVML calls", "sysfs and host reads", "SECONDS", "FORMAT"):
        assert phrase in help_text, phrase
    assert "range" not in help_text  # no "<float range> [0.1<=x<=3600.0]"


def test_prometheus_leaves_out_a_nic_count_it_cannot_know(inputs):
    paste = FIXTURES / "nvml-text" / "nvlink_s_a100_sxm4_excerpt.txt"
    r = runner.invoke(app, ["check", "--from", str(paste), "--format", "prometheus"])
    assert r.exit_code in (0, 1), r.stderr
    assert "nvtopo_gpus " in r.stdout  # the GPUs are known ...
    assert not re.search(r"^nvtopo_nics", r.stdout, re.M)  # ... the NICs are not: no "0"
    r = runner.invoke(app, ["check", "--format", "prometheus"] + inputs["sim-healthy"])
    assert re.search(r"^nvtopo_nics(\{[^}]*\})? 12$", r.stdout, re.M), r.stdout


# --- check --example -----------------------------------------------------------------------


def test_check_example_healthy_and_faulty():
    import json

    r = runner.invoke(app, ["check", "--example", "dgx-h100-healthy", "--format", "json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "pass" and doc["layout"] == "dgx-h100"
    r = runner.invoke(app, ["check", "--example", "dgx-h100-faulty", "--format", "json"])
    assert r.exit_code == 1, r.stderr
    errors = {(f["code"], f["subject"]) for f in json.loads(r.stdout)["findings"]
              if f["severity"] == "error"}
    assert errors == {("nvlink.link_down", "GPU3 link 7"), ("pcie.width_low", "GPU5"),
                      ("ib.port_down", "mlx5_4 port 1")}
    r = runner.invoke(app, ["check", "--example", "nope"])
    assert r.exit_code == 2 and "dgx-h100-faulty" in r.stderr and r.stdout == ""


def test_bundled_examples_are_what_simulate_makes():
    """The bundled snapshots are simulate's output (docs/commands.md names the commands)."""
    import gzip

    from nvtopo import examples

    lay = layouts.load("dgx-h100")
    for name, faults in (("dgx-h100-healthy", []),
                         ("dgx-h100-faulty", ["nvlink-down:GPU3:7", "ib-port-down:mlx5_4",
                                              "pcie-width:GPU5:8",
                                              "counters:mlx5_2:symbol_error=100"])):
        with examples.path(name) as p:
            with gzip.open(p, "rt", encoding="utf-8") as fh:
                bundled = fh.read()
        fresh = snapshot.dumps(simulate(lay, faults, seed=1, hostname="dgx-h100-example"))
        # the evidence, not the sealed cache: the cache carries the digest of the deriving
        # code, which any change to it moves (a stale cache is re-derived, never wrong)
        old, new = json.loads(bundled), json.loads(fresh)
        old.pop("derived", None)
        new.pop("derived", None)
        assert old == new, (f"{name}: regenerate nvtopo/examples/{name}.json.gz with the "
                            "commands docs/commands.md names")


def test_layouts_show_as_json_and_as_a_table():
    import json

    r = runner.invoke(app, ["layouts", "show", "dgx-h100", "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["nvlink"]["links_per_gpu"] == 18
    for width in (80, 200):
        r = runner.invoke(app, ["layouts", "show", "dgx-h100", "--format", "table"],
                          env={"COLUMNS": str(width)})
        assert r.exit_code == 0, r.stderr
        assert max(len(ln) for ln in r.stdout.splitlines()) <= width
        assert re.search(r"^nvlink\.links_per_gpu +18\b", r.stdout, re.M), r.stdout
        assert re.search(r"^nics\.placement\.gpu_nic\.1 +mlx5_3\b", r.stdout, re.M)
        assert "H100UG" in r.stdout  # the sources, by tag


def test_links_lists_problems_first_and_problems_only(inputs):
    full = run(["links"] + inputs["sim-faulty"], 120)
    titles = re.findall(r"^GPU(\d+) · ", full, re.M)
    assert titles[0] == "3" and sorted(titles) == sorted(set(titles))  # the faulty GPU first
    only = run(["links", "--problems"] + inputs["sim-faulty"], 120)
    assert re.findall(r"^GPU(\d+) · ", only, re.M) == ["3"]
    rows = re.findall(r"^ +(\d+)  (\w+)", only, re.M)
    assert rows == [("7", "down")]  # the one link not as expected, not the 17 active ones
    clean = run(["links", "--problems"] + inputs["sim-healthy"], 120)
    assert "no NVLink problem on 8 GPUs" in clean and not re.search(r"^GPU\d+ · ", clean, re.M)
