"""Hostile strings in the input reach every output escaped, and every output stays well-formed
(issue 10, "Hostile and broken input").

A snapshot is untrusted: its hostname, GPU names, RDMA device, netdev and port-state names,
the NIC Legend of its topo text, and the names of the files an audit reads can hold anything
valid JSON (or a file system) allows: escape sequences (colour, an OSC 8 hyperlink, an OSC 0
window title), CR, LF, the C1 CSI, bidirectional controls, NUL, a lone surrogate (valid JSON
``"\\ud800"``, which cannot be encoded), Rich markup and XML specials.

The fixtures take a simulated DGX H100 (every source: topo text, NVML, sysfs) and put each
injection string into that evidence, so it survives derivation (checked on the model), then
run every command in every format through the CLI and assert: no crash; no raw control,
bidi or surrogate character in the output (on a forced colour terminal, only Rich's own SGR
sequences); no hyperlink or style made from data; the value shown in its escaped form
(``\\x1b[31m``); JSON carrying the exact value; SVG well-formed XML; HTML with the data as
text; Prometheus accepted by the official parser.
"""

from __future__ import annotations

import json
import os
import re
import xml.dom.minidom
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from cli_runner import make_runner
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from nvtopo import layouts, snapshot
from nvtopo.cli import app
from nvtopo.render import prometheus as prom
from nvtopo.safe import printable, reversible
from nvtopo.simulate import simulate

REPO = Path(__file__).resolve().parent.parent

#: The injection strings, by name.
INJECTIONS: Dict[str, str] = {
    "sgr": "\x1b[31mRED",
    "osc8": "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\",
    "osc0": "\x1b]0;pwned\x07",
    "cr": "a\rb",
    "lf": "a\nb",
    "c1": "\x9b31m",
    "bidi": "\u202egnp.exe",
    "surrogate": "\ud800",
    "nul": "a\x00b",
    "link": "[link=http://evil]x[/link]",
    "style": "[bold red]",
    "xml": "<&>\"'",
}

#: How each is shown: escaped, never as it is (hard-coded, not computed by the escaper).
SHOWN: Dict[str, str] = {
    "sgr": "\\x1b[31mRED",
    "osc8": "\\x1b]8;;http://evil\\x1b\\click\\x1b]8;;\\x1b\\",
    "osc0": "\\x1b]0;pwned\\x07",
    "cr": "a\\x0db",
    "lf": "a\\x0ab",
    "c1": "\\x9b31m",
    "bidi": "\\u202egnp.exe",
    "surrogate": "\\ud800",
    "nul": "a\\x00b",
    "link": "[link=http://evil]x[/link]",
    "style": "[bold red]",
    "xml": "<&>\"'",
}

#: Characters that must never reach an output as they are (a line feed is the only control
#: an output holds; tabs are not written by any renderer).
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
                    "\ud800-\udfff]")
#: What Rich itself writes on a colour terminal: SGR sequences only.
SGR = re.compile("\x1b\\[[0-9;]*m")

HOST = "dgx-inject"
GPU_NAME = "NVIDIA H100 80GB HBM3"
#: RDMA devices renamed (mlx5_4's port is down: check names it), and a netdev.
RDMA = ("mlx5_0", "mlx5_4")
NETDEV = "ibp9s0"


def path_safe(s: str) -> str:
    """The injection as it can stand in a sysfs path component (no ``/``)."""
    return s.replace("/", "_")


def _replace(obj: Any, old: str, new: str) -> Any:
    if isinstance(obj, str):
        return obj.replace(old, new)
    if isinstance(obj, list):
        return [_replace(x, old, new) for x in obj]
    if isinstance(obj, dict):
        return {_replace(k, old, new): _replace(v, old, new) for k, v in obj.items()}
    return obj


_BASE: Dict[str, Any] = {}


def base_doc() -> Dict[str, Any]:
    """A DGX H100 with a link down and a port down (so check names GPUs and NICs)."""
    if "doc" not in _BASE:
        doc = simulate(layouts.load("dgx-h100"), ["nvlink-down:GPU3:7", "ib-port-down:mlx5_4"],
                       seed=11, hostname=HOST)
        doc.pop("derived", None)
        _BASE["doc"] = json.dumps(doc)
    return json.loads(_BASE["doc"])


def hostile_doc(s: str) -> Dict[str, Any]:
    """The base evidence with ``s`` in the hostname, every GPU name (NVML), two RDMA device
    names (sysfs paths and the topo text's NIC Legend), a netdev and a port state."""
    doc = base_doc()
    p = path_safe(s)
    doc = _replace(doc, HOST, "node" + s)
    doc = _replace(doc, GPU_NAME, GPU_NAME + s)
    for dev in RDMA:
        doc = _replace(doc, dev, dev + p)
    doc = _replace(doc, NETDEV, NETDEV + p)
    files = doc["probes"]["sysfs"]["files"]
    state = [k for k in files if k.endswith(f"/infiniband/mlx5_0{p}/ports/1/state")]
    assert len(state) == 1
    files[state[0]] = files[state[0]] + s  # "4: ACTIVE" + s
    return doc


def write_hostile(path: Path, s: str) -> str:
    path.write_text(snapshot.dumps(hostile_doc(s)), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory) -> Dict[str, str]:
    d = tmp_path_factory.mktemp("hostile")
    return {name: write_hostile(d / f"{name}.json", s) for name, s in INJECTIONS.items()}


# --- running and judging outputs ------------------------------------------------------------


class Run:
    def __init__(self, args: List[str], code: int, stdout: str, stderr: str,
                 exception: Optional[BaseException]) -> None:
        self.args, self.code, self.stdout, self.stderr = args, code, stdout, stderr
        self.exception = exception


def cli(*args: str, colour: bool = False, **env: Optional[str]) -> Run:
    environ: Dict[str, Optional[str]] = {"COLUMNS": "250", "FORCE_COLOR": "1" if colour else None,
                                         "TTY_COMPATIBLE": None, "NO_COLOR": None}
    environ.update(env)
    r = make_runner().invoke(app, list(args), env=environ)
    exc = r.exception if not isinstance(r.exception, SystemExit) else None
    try:
        err = r.stderr
    except ValueError:
        err = ""
    return Run(list(args), r.exit_code, r.stdout, err, exc)


def assert_ran(r: Run, codes: Tuple[int, ...]) -> None:
    assert r.exception is None, f"{r.args}: {r.exception!r}"
    assert "Traceback" not in r.stdout + r.stderr, r.args
    assert r.code in codes, f"{r.args}: exit {r.code}\n{r.stderr}"


def assert_clean(text: str, colour: bool = False, what: str = "") -> None:
    """No raw control, bidi, NUL or surrogate character; on a colour terminal Rich's SGR only."""
    seen = SGR.sub("", text) if colour else text
    m = UNSAFE.search(seen)
    assert m is None, (f"{what}: raw {m.group()!r} in the output: "
                       f"{seen[max(0, m.start() - 80):m.start() + 40]!r}")
    assert "\x1b]8;" not in text, what  # no hyperlink (OSC 8) at all


def xml_text(doc: str) -> str:
    """Every text node of a well-formed XML document (raises on a malformed one)."""
    dom = xml.dom.minidom.parseString(doc.encode("utf-8"))
    out: List[str] = []

    def walk(n: Any) -> None:
        for c in n.childNodes:
            if c.nodeType in (c.TEXT_NODE, c.CDATA_SECTION_NODE):
                out.append(c.data)
            walk(c)
    walk(dom)
    return "\n".join(out)


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: List[str] = []
        self.data: List[str] = []
        self.hrefs: List[str] = []

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        self.tags.append(tag)
        self.hrefs += [v or "" for k, v in attrs if k == "href"]

    def handle_data(self, data: str) -> None:
        self.data.append(data)


def html_text(doc: str) -> Tuple[str, _Html]:
    p = _Html()
    p.feed(doc)
    p.close()
    assert {"html", "head", "body"} <= set(p.tags)
    assert "a" not in p.tags and not p.hrefs, "a hyperlink made from data"
    return "".join(p.data).replace("\xa0", " "), p


def prom_families(text: str) -> Dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


# --- the fixture carries the injection through derivation ------------------------------------


@pytest.mark.parametrize("name", sorted(INJECTIONS))
def test_the_injection_survives_derivation(hostile_files, name):
    """Precondition for every test below: the model holds the strings as they are."""
    s, p = INJECTIONS[name], path_safe(INJECTIONS[name])
    topo = snapshot.load(hostile_files[name])
    assert topo.host.hostname == "node" + s
    assert {g.name for g in topo.gpus} == {GPU_NAME + s}
    names = {n.name for n in topo.nics}
    assert {"mlx5_0" + p, "mlx5_4" + p} <= names
    hca = next(n.sysfs.to_dict() for n in topo.nics if n.name == "mlx5_0" + p)
    assert hca["ports"][0]["netdev"] == NETDEV + p
    # "4: ACTIVE" + s: the state after the code (kept whole where a line break spoils it)
    assert hca["ports"][0]["state"] in ("ACTIVE" + s, "4: ACTIVE" + s)


# --- every command, every format ---------------------------------------------------------------


def _shown_in(text: str, name: str, *, host: bool = True, gpu: bool = True,
              nic: bool = True) -> None:
    shown, shown_p = SHOWN[name], path_safe(SHOWN[name])
    if host:
        assert "node" + shown in text, f"hostname not shown escaped ({name})"
    if gpu:
        assert GPU_NAME + shown in text, f"GPU name not shown escaped ({name})"
    if nic:
        assert "mlx5_4" + shown_p in text, f"RDMA device not shown escaped ({name})"


@pytest.mark.parametrize("name", sorted(INJECTIONS))
def test_show_every_format(hostile_files, name, tmp_path):
    f, s = hostile_files[name], INJECTIONS[name]
    for colour in (False, True):
        r = cli("show", "--from", f, colour=colour)
        assert_ran(r, (0,))
        assert_clean(r.stdout + r.stderr, colour, f"show colour={colour}")
        plain = SGR.sub("", r.stdout)
        _shown_in(plain, name, gpu=False)  # the table view has no GPU names
        assert "mlx5_0" + path_safe(SHOWN[name]) in plain
    r = cli("show", "--from", f, "--format", "json")
    assert_ran(r, (0,))
    assert_clean(r.stdout, what="show json")
    doc = json.loads(r.stdout)
    assert doc["host"]["hostname"] == "node" + s  # JSON carries the value exactly
    assert {g["name"] for g in doc["gpus"]} == {GPU_NAME + s}
    r = cli("show", "--from", f, "--format", "svg")
    assert_ran(r, (0,))
    assert_clean(r.stdout, what="show svg")
    _shown_in(xml_text(r.stdout), name, gpu=False)  # GPU names are clipped in the boxes
    for fmt in ("html", "rich-svg"):
        r = cli("show", "--from", f, "--format", fmt)
        assert_ran(r, (0,))
        assert_clean(r.stdout, what=f"show {fmt}")
        body = html_text(r.stdout)[0] if fmt == "html" else xml_text(r.stdout)
        assert "mlx5_4" + path_safe(SHOWN[name]) in body.replace("\xa0", " ")
    out = tmp_path / "show.txt"
    r = cli("show", "--from", f, "-o", str(out))
    assert_ran(r, (0,))
    written = out.read_text(encoding="utf-8")
    assert_clean(written, what="show -o")
    assert "host node" + SHOWN[name] in written


@pytest.mark.parametrize("name", sorted(INJECTIONS))
def test_check_every_format(hostile_files, name):
    f, s, p = hostile_files[name], INJECTIONS[name], path_safe(INJECTIONS[name])
    for colour in (False, True):
        r = cli("check", "--from", f, colour=colour)
        assert_ran(r, (1,))
        assert_clean(r.stdout + r.stderr, colour, f"check colour={colour}")
        plain = SGR.sub("", r.stdout)
        # the finding's subject (its row), not only its message, shows the name as it is
        assert re.search(r"ib\.port_down  " + re.escape(f"mlx5_4{path_safe(SHOWN[name])} "
                                                          "port 1 "), plain), plain
    r = cli("check", "--from", f, "--format", "json")
    assert_ran(r, (1,))
    assert_clean(r.stdout, what="check json")
    subjects = {x["subject"] for x in json.loads(r.stdout)["findings"]}
    assert f"mlx5_4{p} port 1" in subjects
    r = cli("check", "--from", f, "--format", "prometheus")
    assert_ran(r, (1,))
    assert_clean(r.stdout, what="check prometheus")
    r.stdout.encode("utf-8")
    fams = prom_families(r.stdout)
    # label values are made printable one to one (a backslash doubled first: reversible)
    names = {smp.labels["name"] for smp in fams["nvtopo_gpu_info"].samples}
    assert names == {reversible(GPU_NAME + s)}
    devices = {smp.labels["device"] for smp in fams["nvtopo_port_up"].samples}
    assert "mlx5_4" + reversible(path_safe(s)) in devices
    states = {smp.labels["state"] for smp in fams["nvtopo_port_state_info"].samples}
    assert any(x.endswith("ACTIVE" + reversible(s)) for x in states)
    r = cli("check", "--from", f, "--format", "svg")
    assert_ran(r, (1,))
    assert_clean(r.stdout, what="check svg")
    _shown_in(xml_text(r.stdout), name, gpu=False)
    for fmt in ("html", "rich-svg"):
        r = cli("check", "--from", f, "--format", fmt)
        assert_ran(r, (1,))
        assert_clean(r.stdout, what=f"check {fmt}")
        body = html_text(r.stdout)[0] if fmt == "html" else xml_text(r.stdout)
        assert "mlx5_4" + path_safe(SHOWN[name]) in body.replace("\xa0", " ")


@pytest.mark.parametrize("name", sorted(INJECTIONS))
def test_links_ib_and_capture(hostile_files, name):
    f, s, p = hostile_files[name], INJECTIONS[name], path_safe(INJECTIONS[name])
    for colour in (False, True):
        r = cli("links", "--from", f, colour=colour)
        assert_ran(r, (0,))
        assert_clean(r.stdout + r.stderr, colour, f"links colour={colour}")
        # (the title may wrap at a space: from the name's last word on)
        assert f"HBM3{SHOWN[name]}" in SGR.sub("", r.stdout)
        r = cli("ib", "--from", f, colour=colour)
        assert_ran(r, (0,))
        assert_clean(r.stdout + r.stderr, colour, f"ib colour={colour}")
        plain = SGR.sub("", r.stdout)
        assert "host node" + SHOWN[name] in plain
    r = cli("links", "--from", f, "--format", "json")
    assert_ran(r, (0,))
    assert_clean(r.stdout, what="links json")
    assert {g["name"] for g in json.loads(r.stdout)["gpus"]} == {GPU_NAME + s}
    r = cli("ib", "--from", f, "--format", "json")
    assert_ran(r, (0,))
    assert_clean(r.stdout, what="ib json")
    doc = json.loads(r.stdout)
    ports = {h["name"]: h["ports"][0] for h in doc["hcas"]}
    assert ports["mlx5_0" + p]["netdev"] == NETDEV + p
    assert ports["mlx5_0" + p]["state"].endswith("ACTIVE" + s)
    r = cli("layouts", "capture", "--from", f)
    assert_ran(r, (0,))
    assert_clean(r.stdout, what="layouts capture")
    assert re.fullmatch(r"[\w.-]+", json.loads(r.stdout)["name"], re.ASCII)


def test_ib_table_shows_every_hostile_field(hostile_files):
    """Device, netdev and state cells of ``nvtopo ib`` (wide enough not to fold)."""
    r = cli("ib", "--from", hostile_files["sgr"], COLUMNS="400")
    assert_ran(r, (0,))
    row = next(line for line in r.stdout.splitlines() if line.startswith("mlx5_0\\x1b"))
    assert row.split()[:3] == ["mlx5_0\\x1b[31mRED", "1", "ACTIVE\\x1b[31mRED"]
    assert "ibp9s0\\x1b[31mRED" in row


def test_markup_in_data_makes_no_link_or_style(hostile_files):
    """On a colour terminal ``[link=...]`` and ``[bold red]`` from data are text: no OSC 8
    hyperlink, and the GPU name in the links title is not styled by it."""
    for name in ("link", "style"):
        for cmd in ("show", "check", "links", "ib"):
            r = cli(cmd, "--from", hostile_files[name], colour=True)
            assert "\x1b]8;" not in r.stdout, cmd
            assert SHOWN[name] in SGR.sub("", r.stdout), cmd
    r = cli("links", "--from", hostile_files["style"], colour=True)
    title = next(line for line in r.stdout.splitlines() if "GPU0" in line and "active" in line)
    # the title keeps one style from its start through the data: none opened by "[bold red]"
    assert "\x1b[1;31m" not in title and SGR.sub("", title).startswith(
        f"GPU0 · {GPU_NAME}[bold red] · ")


# --- pasted texts: the topo matrix's NIC Legend, nvidia-smi nvlink ------------------------------


#: Injections the topo parser keeps as they are in a NIC Legend name (it drops ESC, cuts a
#: name at CR or LF, refuses NUL, and a name with a space is no name).
LEGEND_KEPT = ("bidi", "c1", "link", "xml")


@pytest.mark.parametrize("name", sorted(INJECTIONS))
def test_pasted_topo_text_nic_legend(tmp_path, name):
    s = INJECTIONS[name]
    text = (REPO / "fixtures" / "topo-corpus" / "01_hgx-a100-8gpu-nv12-10nic-tabs.txt").read_text()
    assert "  NIC3: mlx5_3\n" in text
    text = text.replace("  NIC3: mlx5_3\n", f"  NIC3: mlx5_3{s}\n")
    f = tmp_path / "ticket.txt"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")  # a file holds no surrogate
    for args in (("show",), ("check",), ("show", "--format", "svg"),
                 ("check", "--format", "prometheus"), ("check", "--format", "html")):
        for colour in ((False, True) if len(args) == 1 else (False,)):
            r = cli(*args, "--from", str(f), colour=colour)
            assert_ran(r, (0, 2) if name == "nul" else (0,))  # NUL: a binary file, exit 2
            assert_clean(r.stdout + r.stderr, colour, f"{args} colour={colour}")
            if r.code == 0 and args[-1] == "svg":
                xml_text(r.stdout)
            if r.code == 0 and args[-1] == "prometheus":
                prom_families(r.stdout)
    if name == "nul":
        return
    nic3 = next(n.name for n in snapshot.load(str(f)).nics if n.label == "NIC3")
    if name in LEGEND_KEPT:
        assert nic3 == "mlx5_3" + s
    r = cli("show", "--from", str(f))
    assert printable(nic3) in r.stdout
    if name in LEGEND_KEPT:
        assert "mlx5_3" + SHOWN[name] in r.stdout


@pytest.mark.parametrize("name", sorted(INJECTIONS))
def test_pasted_nvlink_text_gpu_name(tmp_path, name):
    s = INJECTIONS[name]
    src = REPO / "fixtures" / "nvml-text" / "nvlink_s_a100_sxm4_excerpt.txt"
    text = src.read_text().replace("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB" + s, 1)
    f = tmp_path / "nvlink.txt"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    for colour in (False, True):
        r = cli("links", "--from", str(f), colour=colour)
        assert_ran(r, (0, 2) if name == "nul" else (0,))
        assert_clean(r.stdout + r.stderr, colour, f"links colour={colour}")
    r = cli("links", "--from", str(f), "--format", "json")
    assert_ran(r, (0, 2) if name == "nul" else (0,))
    if r.code:
        return
    gpu0 = json.loads(r.stdout)["gpus"][0]["name"]
    if name not in ("cr", "lf", "surrogate"):  # a line break ends the name; no surrogate in a file
        assert gpu0 == "NVIDIA A100-SXM4-80GB" + s
    if gpu0:  # (a GPU line broken by LF has no name) the title may wrap at a space: look
        # for the name's last word and what follows
        assert printable(gpu0).split()[-1] in cli("links", "--from", str(f)).stdout


# --- audit and diff: hostile snapshots and hostile file names --------------------------------


def _file_names() -> Dict[str, str]:
    """A file name for each injection a file system allows (no NUL; ``/`` replaced)."""
    return {name: f"node{path_safe(s)}.json" for name, s in INJECTIONS.items()
            if name not in ("nul", "surrogate")}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Tuple[Path, Dict[str, str]]:
    """A directory of hostile snapshots under hostile names, an undecodable name (bytes
    0xff: Python shows it as the lone surrogate \\udcff) and an unreadable file."""
    d = tmp_path_factory.mktemp("fleet")
    paths: Dict[str, str] = {}
    for name, fname in _file_names().items():
        paths[name] = write_hostile(d / fname, INJECTIONS[name])
    raw = os.path.join(os.fsencode(str(d)), b"node\xff.json")
    with open(raw, "wb") as fh:
        fh.write(snapshot.dumps(hostile_doc(INJECTIONS["surrogate"])).encode("utf-8"))
    paths["surrogate"] = os.fsdecode(raw)
    paths["nul"] = write_hostile(d / "node-nul.json", INJECTIONS["nul"])
    bad = d / "bad\x1b]0;title\x07[link=http:__evil]x.json"
    bad.write_text("not a snapshot\n")
    paths["bad"] = str(bad)
    return d, paths


def test_audit_table(fleet):
    d, paths = fleet
    for colour in (False, True):
        r = cli("audit", str(d), "--jobs", "1", colour=colour)
        assert_ran(r, (1,))
        assert_clean(r.stdout + r.stderr, colour, f"audit colour={colour}")
        plain = SGR.sub("", r.stdout)
        for name, p in paths.items():
            base = printable(os.path.basename(p))
            assert base in plain, f"file name of {name} not shown escaped: {base!r}"
        assert "bad\\x1b]0;title\\x07[link=http:__evil]x.json" in plain
        assert "node\\udcff.json" in plain
        assert "AUDIT: FAIL · 13 file(s) · 0 pass · 12 fail · 1 unreadable" in plain


def test_audit_json_and_prometheus(fleet):
    d, paths = fleet
    r = cli("audit", str(d), "--jobs", "1", "--format", "json")
    assert_ran(r, (1,))
    assert_clean(r.stdout, what="audit json")
    nodes = {n["file"]: n for n in json.loads(r.stdout)["nodes"]}
    assert set(nodes) == set(paths.values())
    for name, p in paths.items():
        if name != "bad":
            assert nodes[p]["hostname"] == "node" + INJECTIONS[name]
    r = cli("audit", str(d), "--jobs", "1", "--format", "prometheus")
    assert_ran(r, (1,))
    assert_clean(r.stdout, what="audit prometheus")
    r.stdout.encode("utf-8")
    fams = prom_families(r.stdout)
    labels = {(s.labels["file"], s.labels["hostname"])
              for s in fams["nvtopo_check_pass"].samples}
    assert labels == {(reversible(p), reversible("node" + INJECTIONS[name]))
                      for name, p in paths.items() if name != "bad"}
    assert {s.labels["file"] for s in fams["nvtopo_audit_file_unreadable"].samples} == {
        reversible(paths["bad"])}


def test_diff_hostile_snapshots_and_paths(fleet):
    _, paths = fleet
    a, b = paths["sgr"], paths["surrogate"]
    for colour in (False, True):
        r = cli("diff", a, b, colour=colour)
        assert_ran(r, (1,))
        # stdout and the warning on stderr (different hosts) name both hosts and files
        assert_clean(r.stdout + r.stderr, colour, f"diff colour={colour}")
        plain = SGR.sub("", r.stdout)
        assert f"Diff: {printable(a)} (node\\x1b[31mRED) → {printable(b)} (node\\ud800)" in plain
        assert "different hosts (node\\x1b[31mRED and node\\ud800)" in r.stderr
    r = cli("diff", a, paths["link"], "--format", "json")
    assert_ran(r, (1,))
    assert_clean(r.stdout + r.stderr, what="diff json")
    doc = json.loads(r.stdout)
    assert (doc["a"]["hostname"], doc["b"]["hostname"]) == ("node\x1b[31mRED",
                                                            "node[link=http://evil]x[/link]")
    r = cli("diff", paths["lf"], paths["osc8"], colour=True)
    assert_ran(r, (1,))
    assert_clean(r.stdout + r.stderr, True, "diff lf osc8")
    assert printable(paths["lf"]) in SGR.sub("", r.stdout)


# --- the renderers' escapers, directly ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(INJECTIONS))
def test_prometheus_label_value_is_printable(name):
    s = INJECTIONS[name]
    value = prom.escape_label_value(s)
    assert UNSAFE.search(value) is None and "\n" not in value
    value.encode("utf-8")
    from nvtopo import checks
    from nvtopo.checks import subject as S

    report = checks.Report(layout_name="x" + s, reason="", findings=(
        checks.finding("error", "a.b", S.other(s), "m"),))
    text = prom.render_check(report, labels={"hostname": s})
    fams = prom_families(text)
    sample = fams["nvtopo_finding"].samples[0]
    assert sample.labels["subject"] == sample.labels["hostname"] == reversible(s)
    assert fams["nvtopo_layout_info"].samples[0].labels["layout"] == "x" + reversible(s)


# --- any text at all, straight into the renderers --------------------------------------------

#: Any character, lone surrogates included, with the dangerous ones made likely.
_HOSTILE_CHAR = st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr),
                          st.sampled_from(list("\x1b\x9b\x07\r\n\t\x00\u202e\u2066\ud800\udcff"
                                               "[]/=<&>\"':")))
_HOSTILE = st.text(_HOSTILE_CHAR, min_size=1, max_size=24)


def _render_all(host: str, gpu: str, nic: str, note: str) -> Dict[str, str]:
    """Every Rich view, SVG, Prometheus and the exports of a small node named by the data,
    on a plain Rich console with markup, emoji and highlighting at their defaults (the
    renderers must not depend on the CLI's console)."""
    import io

    from rich.console import Console

    from nvtopo import checks
    from nvtopo.checks import subject as S
    from nvtopo.model import GPU, NIC, Matrix, Note, NVLinkPair, Host, Origin, Topology
    from nvtopo.render import check as render_check
    from nvtopo.render import export, matrix, svg

    topo = Topology(gpus=[GPU(index=0, label="GPU0", name=gpu, numa_affinity=note,
                              cpu_affinity=note),
                          GPU(index=1, label="GPU1", name=gpu, numa_affinity="0")],
                    nics=[NIC(label="NIC0", name=nic)],
                    matrix=Matrix(devices=["GPU0", "GPU1", "NIC0"],
                                  cells=[["X", "NV4", "PIX"], ["NV4", "X", note],
                                         ["PIX", note, "X"]]),
                    nvlinks=[NVLinkPair(0, 1, 4)], host=Host(hostname=host),
                    origin=Origin.of("snapshot", file=note),
                    notes=[Note(code="x.y", message=note, level="warning")])
    report = checks.Report(layout_name=note, reason=note, findings=(
        checks.finding("error", "a.b", S.nic(nic), note, expected=note, actual={nic: note},
                       hint=note, source="x"),))
    out: Dict[str, str] = {}
    for name, draw in (("show", lambda c: matrix.print_topology(topo, c)),
                       ("check", lambda c: render_check.print_check(report, c))):
        buf = io.StringIO()
        draw(Console(file=buf, width=120, force_terminal=True, color_system="truecolor"))
        out[name] = buf.getvalue()
    out["svg"] = svg.render(topo, report=report)
    out["prometheus"] = prom.render_check(report, topo)
    out["html"] = export.show_document(topo, "html")
    out["rich-svg"] = export.check_document(report, topo, "rich-svg")
    return out


@settings(max_examples=60, deadline=None)
@given(host=_HOSTILE, gpu=_HOSTILE, nic=_HOSTILE, note=_HOSTILE)
def test_any_text_renders_escaped_and_well_formed(host, gpu, nic, note):
    out = _render_all(host, gpu, nic, note)
    for name, text in out.items():
        assert_clean(text, colour=name in ("show", "check"), what=name)
        text.encode("utf-8")
    plain = SGR.sub("", out["show"])
    squeeze = re.compile(r"\s")  # the head line may wrap
    assert squeeze.sub("", "host " + printable(host)) in squeeze.sub("", plain)
    xml_text(out["svg"])
    xml_text(out["rich-svg"])
    html_text(out["html"])
    fams = prom_families(out["prometheus"])
    assert {s.labels["name"] for s in fams["nvtopo_gpu_info"].samples} == {reversible(gpu)}
    assert fams["nvtopo_finding"].samples[0].labels["subject"] == reversible(nic)
