"""--format svg (the topology picture), html and rich-svg (the table view exported), and -o."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, List, Set

import pytest
from cli_runner import make_runner

from nvtopo import checks, layouts, snapshot
from nvtopo.checks import subject as S
from nvtopo.cli import app
from nvtopo.model import GPU, NIC, Matrix, NVLinkPair, Topology
from nvtopo.render import svg
from nvtopo.simulate import nvlink_domain, simulate

REPO = Path(__file__).resolve().parent.parent
CORPUS = sorted(p for p in (REPO / "fixtures" / "topo-corpus").iterdir() if p.suffix == ".txt")
NS = "{http://www.w3.org/2000/svg}"


def cli(*args: str):
    runner = make_runner()
    return runner.invoke(app, list(args))


def sim_file(tmp: Path, layout, faults=(), name="node.json") -> str:
    lay = layouts.load(layout) if isinstance(layout, str) else layout
    p = tmp / name
    p.write_text(snapshot.dumps(simulate(lay, list(faults), seed=5)))
    return str(p)


def parse(text: str) -> ET.Element:
    root = ET.fromstring(text.encode("utf-8"))
    assert root.tag == f"{NS}svg"
    return root


def texts(root: ET.Element) -> Set[str]:
    return {"".join(t.itertext()) for t in root.iter(f"{NS}text")}


def by_id(root: ET.Element) -> Dict[str, ET.Element]:
    ids = [e.get("id") for e in root.iter() if e.get("id")]
    assert len(ids) == len(set(ids)), "duplicate ids"
    return {e.get("id"): e for e in root.iter() if e.get("id")}


def classes(el: ET.Element) -> Set[str]:
    return set((el.get("class") or "").split())


def short_bus(bus: str) -> str:
    return svg._short_bus(bus)


def assert_every_device(root: ET.Element, topo: Topology) -> None:
    shown = texts(root)
    ids = by_id(root)
    for g in topo.gpus:
        assert g.label in shown, g.label
        assert "gpu" in classes(ids[f"gpu-{g.index}"])
    for n in topo.nics:
        assert n.name in shown, n.name
        assert "nic" in classes(ids[f"nic-{svg._id(n.name)}"])
    switches = list(((topo.nvml.to_dict() if topo.nvml else {}).get("switches") or {}))
    drawn = [e for e in root.iter() if "nvswitch" in classes(e)]
    assert len(drawn) == len(switches)
    for bus in switches:
        assert short_bus(bus) in shown, bus


@pytest.mark.parametrize("layout", ["dgx-h100", "dgx-1-v100", "dgx-2", "gh200-4",
                                    "gb200-nvl72-tray", "hgx-a100-4"])
def test_show_svg_draws_every_device(tmp_path, layout):
    f = sim_file(tmp_path, layout)
    r = cli("show", "--from", f, "--format", "svg")
    assert r.exit_code == 0, r.output
    root = parse(r.stdout)
    topo = snapshot.load(f)
    assert_every_device(root, topo)
    assert not [e for e in root.iter() if any(c.startswith("fault-") for c in classes(e))]
    legend = [e for e in root.iter() if "legend" in classes(e)]
    assert legend and "port DOWN" in texts(legend[0])
    # NVSwitch systems: one edge per GPU to the switch bar, never a GPU pair edge
    nvl = [e for e in root.iter() if "nvlink" in classes(e)]
    switched = bool((topo.nvml.to_dict() if topo.nvml else {}).get("switches"))
    if switched:
        assert sorted(e.get("id") for e in nvl) == sorted(f"nvl-gpu-{g.index}"
                                                          for g in topo.gpus)
    else:  # a direct mesh: one arc per NVLinked pair, labelled with its NV#
        pairs = {(p.a, p.b): p.count for p in topo.nvlinks if p.count}
        assert sorted(e.get("id") for e in nvl) == sorted(f"nvl-{a}-{b}" for a, b in pairs)
        labels = [t for t in root.iter(f"{NS}text") if "nvlink-count" in classes(t)]
        assert sorted(t.text for t in labels) == sorted(f"NV{c}" for c in pairs.values())


def test_check_svg_marks_faulty_elements(tmp_path):
    f = sim_file(tmp_path, "dgx-h100", ["nvlink-down:GPU3:7", "ib-port-down:mlx5_4",
                                        "pcie-gen:GPU5:3"])
    r = cli("check", "--from", f, "--format", "svg")
    assert r.exit_code == 1, r.output
    root = parse(r.stdout)
    ids = by_id(root)
    assert_every_device(root, snapshot.load(f))
    faulty = {i: classes(e) for i, e in ids.items()
              if any(c.startswith("fault-") for c in classes(e))}
    assert faulty == {"gpu-3": {"gpu", "fault-error"},
                      "nvl-gpu-3": {"edge", "nvlink", "fault-error"},
                      "nic-mlx5_4": {"nic", "fault-error"},
                      "gpu-5": {"gpu", "fault-warning"}}
    rect = next(ids["gpu-3"].iter(f"{NS}rect"))
    assert rect.get("stroke") == svg.C_ERROR
    assert next(ids["gpu-5"].iter(f"{NS}rect")).get("stroke") == svg.C_WARN
    assert next(ids["gpu-2"].iter(f"{NS}rect")).get("stroke") not in (svg.C_ERROR, svg.C_WARN)
    shown = texts(root)
    assert "17/18" in shown and "DOWN" in shown
    assert any("nvlink.link_down · GPU3 link 7" in t for t in shown)
    assert any(t.startswith("nvtopo · ") and "FAIL: 2 error(s), 1 warning(s)" in t
               for t in shown)


def test_check_svg_draws_a_missing_gpu_and_a_node_level_fault(tmp_path):
    f = sim_file(tmp_path, "dgx-h100", ["gpu-missing:GPU3"])
    root = parse(cli("check", "--from", f, "--format", "svg").stdout)
    ids = by_id(root)
    assert classes(ids["gpu-missing-7"]) == {"gpu", "missing", "fault-error"}
    assert "Missing GPUs" in texts(root)
    f = sim_file(tmp_path, "dgx-h100", ["fabric-not-started"], name="fabric.json")
    root = parse(cli("check", "--from", f, "--format", "svg").stdout)
    frame = [e for e in root.iter(f"{NS}rect") if "node" in classes(e)]
    assert frame and "fault-error" in classes(frame[0])


def test_switch_bar_scales_to_a_72_gpu_domain():
    lay = nvlink_domain(72)
    topo = snapshot.derive(json.loads(json.dumps(simulate(lay, ["nvlink-down:GPU40:3"]))))
    text = svg.render(topo)
    root = parse(text)
    assert_every_device(root, topo)
    assert len(topo.gpus) == 72 and len((topo.nvml.to_dict()["switches"])) == 18
    nvl = [e for e in root.iter() if "nvlink" in classes(e)]
    assert len(nvl) == 72  # not 72*71/2 pair edges
    pcie = [e for e in root.iter() if "pcie" in classes(e)]
    assert len(pcie) == 72
    assert text == svg.render(topo)  # deterministic


@pytest.mark.parametrize("path", CORPUS, ids=[p.name[:24] for p in CORPUS])
def test_every_corpus_text_draws_well_formed(path):
    topo = snapshot.load(str(path))
    root = parse(svg.render(topo))
    shown = texts(root)
    for g in topo.gpus:
        assert g.label in shown
    for n in topo.nics:
        assert n.name in shown


def test_names_are_escaped_and_control_characters_shown_escaped():
    topo = Topology(gpus=[GPU(index=0, name='A<&>"B\x01', numa_affinity="0"),
                          GPU(index=1, name="x", numa_affinity="0")],
                    nics=[NIC(label="NIC0", name='mlx<5>&"0')],
                    matrix=Matrix(devices=["GPU0", "GPU1", "NIC0"],
                                  cells=[["X", "NV4", "PIX"], ["NV4", "X", "SYS"],
                                         ["PIX", "SYS", "X"]]),
                    nvlinks=[NVLinkPair(0, 1, 4)])
    report = checks.Report(layout_name="none", reason="", findings=(
        checks.finding("error", "a.b", S.nic('mlx<5>&"0'), "<bad & sad>"),))
    root = parse(svg.render(topo, report=report))
    shown = texts(root)
    assert 'mlx<5>&"0' in shown and 'A<&>"B\\x01' in shown  # \x01 shown as safe.printable does
    assert any("<bad & sad>" in t for t in shown)
    assert "fault-error" in classes(by_id(root)["nic-mlx_5___0"])


def test_nic_names_that_map_to_one_id_still_get_unique_ids():
    """Ids keep only [A-Za-z0-9_.-]: names that differ elsewhere (hostile or odd names) would
    share an id, and an SVG with a repeated id is not valid.  Each element keeps its own."""
    names = ["mlx5 0", "mlx5_0", "mlx5\x1b0", "mlx5_0-2"]
    labels = [f"NIC{i}" for i in range(len(names))]
    devices = ["GPU0"] + labels
    n = len(devices)
    cells = [["X" if i == j else "PIX" for j in range(n)] for i in range(n)]
    topo = Topology(gpus=[GPU(index=0, name="g", numa_affinity="0")],
                    nics=[NIC(label=lab, name=nm) for lab, nm in zip(labels, names)],
                    matrix=Matrix(devices=devices, cells=cells))
    root = parse(svg.render(topo))
    ids = [e.get("id") for e in root.iter() if e.get("id")]
    assert len(ids) == len(set(ids)), sorted(ids)
    nic_groups = [i for i in ids if i.startswith("nic-")]
    assert len(nic_groups) == len(names), nic_groups


def test_unique_ids_renames_only_repeats():
    from nvtopo.render.svg.draw import _unique_ids

    parts = ['<g id="a">', '<g id="b"><rect id="a"/>', '<g id="a-2">', "<text>id</text>"]
    assert _unique_ids(parts) == ['<g id="a">', '<g id="b"><rect id="a-2"/>', '<g id="a-2-2">',
                                  "<text>id</text>"]


# --- html / rich-svg exports of the table views ---------------------------------------------

VOID = {"meta", "br", "link", "img", "hr", "input"}


class _Balance(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: List[str] = []
        self.seen: List[str] = []
        self.text: List[str] = []

    def handle_starttag(self, tag, attrs):
        self.seen.append(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack)
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def html_ok(text: str) -> str:
    p = _Balance()
    p.feed(text)
    p.close()
    assert not p.stack, p.stack
    assert {"html", "head", "body"} <= set(p.seen)
    return "".join(p.text)


def test_show_html_and_rich_svg(tmp_path):
    f = sim_file(tmp_path, "dgx-h100")
    r = cli("show", "--from", f, "--format", "html")
    assert r.exit_code == 0, r.output
    body = html_ok(r.stdout)
    assert "GPU0" in body and "NV18" in body and "mlx5_11" in body
    r = cli("show", "--from", f, "--format", "rich-svg")
    assert r.exit_code == 0, r.output
    root = parse(r.stdout)
    flat = "".join(root.itertext()).replace("\xa0", " ")
    assert "GPU ↔ GPU" in flat or "Topology matrix" in flat
    assert "GPU7" in flat and "NV18" in flat


def test_check_html_and_rich_svg(tmp_path):
    f = sim_file(tmp_path, "dgx-h100", ["ib-port-down:mlx5_4"])
    r = cli("check", "--from", f, "--format", "html")
    assert r.exit_code == 1, r.output
    body = html_ok(r.stdout)
    assert "ib.port_down" in body and "FAIL: 1 error(s)" in body
    r = cli("check", "--from", f, "--format", "rich-svg")
    assert r.exit_code == 1, r.output
    flat = "".join(parse(r.stdout).itertext()).replace("\xa0", " ")
    assert "ib.port_down" in flat and "FAIL" in flat


@pytest.mark.parametrize("fmt", ["svg", "html", "rich-svg", "json", "table"])
def test_output_file_is_written_atomically_and_equals_stdout(tmp_path, fmt):
    f = sim_file(tmp_path, "dgx-a100")
    out = tmp_path / "out"
    out.mkdir()
    target = out / f"picture.{fmt}"
    r = cli("show", "--from", f, "--format", fmt, "-o", str(target))
    assert r.exit_code == 0, r.output
    assert r.stdout == ""
    assert sorted(os.listdir(out)) == [target.name]
    text = target.read_text(encoding="utf-8")
    assert text.strip()
    if fmt == "json":
        assert json.loads(text) == json.loads(cli("show", "--from", f, "--format", "json").stdout)
    elif fmt == "table":  # plain text: no colour codes in a file
        assert "\x1b[" not in text and "GPU0" in text and "NV12" in text
    elif fmt == "html":
        html_ok(text)
    else:
        parse(text)
    if fmt == "svg":
        assert text == cli("show", "--from", f, "--format", "svg").stdout


def test_show_svg_from_a_file_imports_no_nvml_psutil_or_prometheus(tmp_path):
    import subprocess
    import sys

    f = sim_file(tmp_path, "dgx-h100")
    code = ("import sys; from nvtopo.cli import app\n"
            "try:\n    app(['show', '--from', sys.argv[1], '--format', 'svg'])\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "bad = [m for m in ('pynvml', 'psutil', 'nvtopo.render.prometheus') "
            "if m in sys.modules]\n"
            "assert 'nvtopo.render.svg' in sys.modules\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code, f], check=True, capture_output=True)


def test_marks_follow_typed_subjects_not_their_text():
    """A NIC named GPU1 is the NIC's box, a missing NIC named GPU3 is the node's frame: no
    GPU is marked for either (the subject text used to be parsed, and named the GPUs)."""
    topo = Topology(gpus=[GPU(index=i, numa_affinity="0") for i in range(4)],
                    nics=[NIC(label="NIC0", name="GPU1")],
                    matrix=Matrix(devices=["GPU0", "GPU1", "GPU2", "GPU3", "NIC0"],
                                  cells=[["X", "NV4", "NV4", "NV4", "PIX"],
                                         ["NV4", "X", "NV4", "NV4", "SYS"],
                                         ["NV4", "NV4", "X", "NV4", "SYS"],
                                         ["NV4", "NV4", "NV4", "X", "SYS"],
                                         ["PIX", "SYS", "SYS", "SYS", "X"]]))
    report = checks.Report(layout_name="x", reason="", findings=(
        checks.finding("error", "nic.missing", S.nic("GPU3"), "compute NIC GPU3 is missing"),
        checks.finding("warning", "ib.port_down", S.port("GPU1", 1), "GPU1 port 1 is DOWN"),
        checks.finding("warning", "nic.placement", S.gpu_nic(2, "NIC0"), "far")))
    root = parse(svg.render(topo, report=report))
    ids = by_id(root)
    faulty = {i: classes(e) for i, e in ids.items()
              if any(c.startswith("fault-") for c in classes(e))}
    assert faulty == {"nic-GPU1": {"nic", "fault-warning"}, "gpu-2": {"gpu", "fault-warning"}}
    frame = [e for e in root.iter(f"{NS}rect") if "node" in classes(e)]
    assert frame and "fault-error" in classes(frame[0])
    assert any("FAIL: 1 error(s), 2 warning(s)" in t for t in texts(root))
