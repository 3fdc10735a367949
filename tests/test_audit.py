"""nvtopo audit: verdicts over a simulated fleet with a known faulty subset, unreadable files,
exit statuses, globs/directories/topo texts, --jobs 1 vs 2, the JSON contract, Prometheus."""

import importlib.util
import json
import os
import re
import shutil

import pytest
from cli_runner import make_runner

from nvtopo import audit, examples, layouts
from nvtopo.cli import app
from nvtopo.simulate import simulate

#: file stem -> (faults, expected error codes) of the faulty subset.
FAULTY = {
    "node03": (["nvlink-down:GPU3:7"], {"nvlink.link_down"}),
    "node07": (["ib-port-down:mlx5_4"], {"ib.port_down"}),
    "node11": (["gpu-missing:GPU7"], {"gpu.missing"}),
    "node15": (["pcie-width:GPU5:8"], {"pcie.width_low"}),
    "node19": (["nvlink-down:GPU1:2", "ib-rate:mlx5_0:200"], {"nvlink.link_down",
                                                              "ib.rate_low"}),
}
N_NODES = 24


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """24 DGX H100 snapshots (5 faulty) in two sub-directories, plus unreadable files."""
    root = tmp_path_factory.mktemp("fleet")
    lay = layouts.load("dgx-h100")
    for i in range(N_NODES):
        stem = f"node{i:02d}"
        faults = FAULTY.get(stem, ([], set()))[0]
        sub = root / ("rack-a" if i < 12 else "rack-b")
        sub.mkdir(exist_ok=True)
        doc = simulate(lay, faults, seed=i, hostname=stem)
        (sub / f"{stem}.json").write_text(json.dumps(doc))
    bad = root / "bad"
    bad.mkdir()
    (bad / "empty.json").write_text("")
    (bad / "truncated.json").write_text('{"kind": "nvtopo-snapshot", "schema_vers')
    (bad / "notes.txt").write_text("hello, this is not a topology\n")
    (root / "rack-a" / "README.md").write_text("skipped: not a snapshot suffix\n")
    return root


@pytest.fixture
def cli():
    runner = make_runner()

    def run(*args):
        return runner.invoke(app, list(args))
    return run


def _json(r):
    return json.loads(r.stdout)


def _expected_fail():
    return {f"{s}.json": codes for s, (_, codes) in FAULTY.items()}


def test_fleet_verdicts_exact_failing_set_and_codes(fleet, cli):
    r = cli("audit", str(fleet / "rack-a"), str(fleet / "rack-b"), "--format", "json",
            "--jobs", "1")
    assert r.exit_code == 1, r.output
    doc = _json(r)
    nodes = doc["nodes"]
    assert len(nodes) == N_NODES
    failing = {os.path.basename(n["file"]): {f["code"] for f in n["findings"]
                                             if f["severity"] == "error"}
               for n in nodes if n["verdict"] == "fail"}
    assert failing == _expected_fail()
    passing = [n for n in nodes if n["verdict"] == "pass"]
    assert len(passing) == N_NODES - len(FAULTY)
    assert all(n["errors"] == 0 and n["layout"] == "dgx-h100" for n in passing)
    assert [n["hostname"] for n in nodes] == [f"node{i:02d}" for i in range(N_NODES)]
    s = doc["summary"]
    assert (s["files"], s["checked"], s["pass"], s["fail"], s["unreadable"]) == \
        (N_NODES, N_NODES, N_NODES - 5, 5, 0)
    by_code = {c["code"]: c for c in s["codes"]}
    assert by_code["nvlink.link_down"]["nodes"] == 2
    assert sorted(by_code["nvlink.link_down"]["shown"]) == ["node03", "node19"]
    assert by_code["gpu.missing"]["shown"] == ["node11"]
    assert s["exit_status"] == 1 and s["layouts"] == {"dgx-h100": N_NODES}


def test_unreadable_files_listed_with_reasons(fleet, cli):
    r = cli("audit", str(fleet), "--format", "json", "--jobs", "1")
    assert r.exit_code == 1
    nodes = _json(r)["nodes"]
    bad = {os.path.basename(n["file"]): n for n in nodes if n["verdict"] == "error"}
    assert set(bad) == {"empty.json", "truncated.json", "notes.txt"}
    assert bad["empty.json"]["reason"] == "file is empty"
    assert bad["truncated.json"]["reason"].startswith("truncated or corrupt snapshot")
    assert "not an input nvtopo reads (an nvtopo snapshot, nvidia-smi topo" in bad["notes.txt"]["reason"]
    assert all(n["hostname"] is None and n["layout"] is None and n["findings"] == []
               for n in bad.values())
    assert not any(n["file"].endswith("README.md") for n in nodes)
    # table: the unreadable section names each file with its one-line reason
    r = cli("audit", str(fleet / "bad"), str(fleet / "rack-a" / "node00.json"))
    assert r.exit_code == 0, r.output
    assert "Could not be read (3)" in r.stdout and "file is empty" in r.stdout
    assert "AUDIT: PASS · 4 file(s) · 1 pass · 0 fail · 3 unreadable" in r.stdout


def test_exit_statuses(fleet, cli, tmp_path):
    assert cli("audit", str(fleet / "rack-a" / "node00.json")).exit_code == 0
    assert cli("audit", str(fleet / "rack-a" / "node03.json")).exit_code == 1
    r = cli("audit", str(fleet / "bad"))
    assert r.exit_code == 2 and "nothing could be read" in r.stderr
    r = cli("audit", str(tmp_path / "missing-*.json"))
    assert r.exit_code == 2
    r = cli("audit", str(tmp_path / "nope.json"), "--format", "json")
    assert r.exit_code == 2
    assert _json(r)["nodes"][0]["reason"] == "no such file"
    r = cli("audit", str(fleet), "--layout", "no-such-layout")
    assert r.exit_code == 2 and "no-such-layout" in r.stderr and "Traceback" not in r.output


def test_globs_and_mixed_topo_texts(fleet, cli, tmp_path):
    d = tmp_path / "mixed"
    d.mkdir()
    shutil.copy(fleet / "rack-a" / "node03.json", d / "node03.json")
    (d / "ticket.txt").write_text(examples.read("dgx-h100"))
    r = cli("audit", str(d / "*"), "--format", "json")
    assert r.exit_code == 1, r.output
    nodes = {os.path.basename(n["file"]): n for n in _json(r)["nodes"]}
    assert set(nodes) == {"node03.json", "ticket.txt"}
    assert nodes["ticket.txt"]["verdict"] == "pass" and nodes["ticket.txt"]["hostname"] is None
    assert nodes["node03.json"]["verdict"] == "fail"
    r = cli("audit", str(fleet / "**" / "node1*.json"), "--format", "json")
    names = [os.path.basename(n["file"]) for n in _json(r)["nodes"]]
    assert names == [f"node{i}.json" for i in range(10, 20)]


def test_jobs_1_and_2_same_result(fleet, cli):
    one = cli("audit", str(fleet), "--format", "json", "--jobs", "1")
    two = cli("audit", str(fleet), "--format", "json", "--jobs", "2")
    assert one.exit_code == two.exit_code == 1
    assert _json(one) == _json(two)
    assert len(_json(two)["nodes"]) == N_NODES + 3


def test_json_contract(fleet, cli):
    doc = _json(cli("audit", str(fleet), "--format", "json", "--jobs", "1"))
    assert list(doc) == ["schema_version", "nodes", "summary"]
    for n in doc["nodes"]:
        assert {"file", "hostname", "layout", "verdict", "errors", "warnings",
                "findings"} <= set(n)
        assert n["verdict"] in ("pass", "fail", "error")
        assert isinstance(n["errors"], int) and isinstance(n["warnings"], int)
        assert n["errors"] == sum(f["severity"] == "error" for f in n["findings"])
        for f in n["findings"]:
            assert set(f) == {"severity", "code", "subject", "expected", "actual", "message",
                              "hint", "source"}
    s = doc["summary"]
    assert set(s) == {"files", "checked", "pass", "fail", "unreadable", "layouts", "codes",
                      "rederived", "exit_status"}
    assert s["rederived"] == N_NODES  # the fixture's snapshots are evidence only
    for c in s["codes"]:
        assert set(c) == {"code", "severity", "nodes", "findings", "shown", "more"}
        assert c["more"] == c["nodes"] - len(c["shown"])


def test_audit_agrees_with_check(fleet, cli):
    for stem in ("node00", "node19"):
        path = str(fleet / "rack-b" / f"{stem}.json") if int(stem[4:]) >= 12 else \
            str(fleet / "rack-a" / f"{stem}.json")
        c = json.loads(cli("check", "--from", path, "--format", "json").stdout)
        a = _json(cli("audit", path, "--format", "json"))["nodes"][0]
        assert (a["verdict"], a["layout"], a["findings"]) == \
            (c["verdict"], c["layout"], c["findings"])


def test_summary_caps_names_but_counts_exactly():
    s = audit.Summary()
    for i in range(audit.SHOWN_NODES + 5):
        s.add(audit.NodeResult(file=f"f{i}", hostname=f"h{i}", layout="x", verdict="fail",
                               errors=1, codes=(("error", "gpu.missing", "GPU7"),)))
    c = s.to_dict()["codes"][0]
    assert c["nodes"] == audit.SHOWN_NODES + 5 and len(c["shown"]) == audit.SHOWN_NODES
    assert c["more"] == 5


def test_table_and_prometheus(fleet, cli):
    r = cli("audit", str(fleet / "rack-a"), "--jobs", "1")
    assert r.exit_code == 1
    # the answer first: the verdict, then the findings (check's view), then the nodes
    assert r.stdout.startswith("AUDIT: FAIL · 12 file(s)")
    assert r.stdout.index("Errors (") < r.stdout.index("nvlink.link_down") < r.stdout.index(
        "Nodes")
    assert "AUDIT: FAIL · 12 file(s) · 9 pass · 3 fail · 0 unreadable" in r.stdout
    r = cli("audit", str(fleet / "rack-a"), str(fleet / "bad"), "--format", "prometheus")
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    families = [ln.split()[2] for ln in lines if ln.startswith("# TYPE")]
    assert all(f.startswith("nvtopo_") for f in families)
    assert len(families) == len(set(families))
    sample = re.compile(r'^(nvtopo_[a-z_]+)(\{([a-z_]+="(?:[^"\\]|\\.)*",?)*\})? \d+$')
    assert all(sample.match(ln) for ln in lines if not ln.startswith("#")), lines
    if importlib.util.find_spec("nvtopo.render.prometheus") is not None:
        # the check renderer's families, one node per file/hostname label pair
        assert any(re.match(r'nvtopo_check_pass\{file=".*node03.json",hostname="node03"\} 0',
                            ln) for ln in lines)
        assert any(re.match(r'nvtopo_finding\{file=".*node03.json",hostname="node03",'
                            r'code="nvlink.link_down",subject="GPU3 link 7",'
                            r'severity="error"\} 1', ln) for ln in lines)
        assert sum(ln.startswith("nvtopo_check_pass{") for ln in lines) == 12
    else:
        assert any(re.match(r'nvtopo_audit_node_pass\{file=".*node03.json",hostname="node03",'
                            r'layout="dgx-h100"\} 0', ln) for ln in lines)
        assert sum(ln.startswith("nvtopo_audit_node_pass{") for ln in lines) == 12
    assert 'nvtopo_audit_nodes{verdict="error"} 3' in lines
    assert 'nvtopo_audit_code_nodes{code="gpu.missing",severity="error"} 1' in lines


def test_no_progress_bar_in_pipes(fleet, cli):
    r = cli("audit", str(fleet / "rack-a" / "node00.json"))
    assert "auditing" not in r.stdout and "auditing" not in (r.stderr or "")


def test_progress_bar_on_a_terminal_keeps_stdout_clean(fleet, tmp_path):
    """stderr a terminal, stdout a file: the bar is drawn on stderr, the JSON lands whole."""
    import pty
    import select
    import subprocess
    import sys

    master, slave = pty.openpty()
    out = tmp_path / "out.json"
    with open(out, "w") as fh:
        p = subprocess.run([sys.executable, "-m", "nvtopo", "audit", str(fleet / "rack-a"),
                            "--format", "json", "--jobs", "1"], stdout=fh, stderr=slave,
                           timeout=300, env=dict(os.environ, NVTOPO_PROGRESS_DELAY="0"))
    os.close(slave)
    seen = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert p.returncode == 1
    assert b"auditing" in seen and b"12/12" in seen
    doc = json.loads(out.read_text())
    assert len(doc["nodes"]) == 12 and doc["summary"]["fail"] == 3


def _printed(rows, width=140, **kw):
    from rich.console import Console

    from nvtopo.render import audit as render_audit

    console = Console(record=True, width=width, file=open(os.devnull, "w"))
    printer = render_audit.TablePrinter(console, **kw)
    summary = audit.Summary()
    for r in rows:
        summary.add(r)
        printer.add(r)
    printer.finish(summary)
    return printer, console.export_text()


def _node(i, host, verdict="pass", file=None):
    return audit.NodeResult(file=file or f"n{i}.json", hostname=host, layout="dgx-h100",
                            verdict=verdict, errors=int(verdict == "fail"),
                            worst=("error", "gpu.missing", "GPU7", "gone")
                            if verdict == "fail" else None,
                            codes=(("error", "gpu.missing", "GPU7"),) if verdict == "fail"
                            else ())


def test_table_keeps_one_compact_row_per_host_and_sorts_failing_first(monkeypatch):
    from nvtopo.render import audit as render_audit

    monkeypatch.setattr(render_audit, "MAX_UNREADABLE_SHOWN", 2)
    # ten files of five hosts (two snapshots each); n7 (host h2) fails
    rows = [_node(i, f"h{i % 5}", "fail" if i == 7 else "pass") for i in range(10)]
    rows += [audit.NodeResult(file=f"bad{i}.json", hostname=None, layout=None,
                              verdict="error", reason="file is empty") for i in range(3)]
    printer, text = _printed(rows)
    assert len(printer.rows) == 5 and all(r.findings is None for r in printer.rows.values())
    body = [ln for ln in text.splitlines() if ln.startswith("h")]
    # failing first, then by host; the later file of each host (same mtime: by name)
    assert [ln.split()[0] for ln in body] == ["h2", "h0", "h1", "h3", "h4"]
    assert "n7.json" in body[0] and "n5.json" in body[1] and "n0.json" not in text
    assert text.count("Worst finding") == 1
    assert "Could not be read (3)" in text and "… and 1 more" in text
    assert "AUDIT: FAIL · 13 file(s) · 9 pass · 1 fail · 3 unreadable" in text
    assert "5 older snapshots of the same hosts not listed" in text


def test_table_all_snapshots_and_failed():
    rows = [_node(i, f"h{i % 5}", "fail" if i == 7 else "pass") for i in range(10)]
    _, every = _printed(rows, all_snapshots=True)
    assert all(f"n{i}.json" in every for i in range(10))
    assert "older snapshot" not in every
    _, failed = _printed(rows, failed=True)
    body = [ln for ln in failed.splitlines() if ln.startswith("h")]
    assert len(body) == 1 and body[0].split()[:2] == ["h2", "FAIL"]
    assert "4 passing nodes not listed (--all lists every node)" in failed
    assert "AUDIT: FAIL · 10 file(s) · 9 pass · 1 fail · 0 unreadable" in failed


def test_a_terminal_lists_the_failing_nodes_and_counts_the_others(fleet, cli):
    """stdout a terminal: the failing nodes and one line for the passing ones (--all for
    every row); piped: every row, as scripts read it."""
    from cli_runner import make_runner

    from nvtopo.cli import app

    def run(*extra, terminal):
        env = {"TTY_COMPATIBLE": "1" if terminal else "0", "TERM": "dumb", "NO_COLOR": "1",
               "COLUMNS": "120"}
        return make_runner().invoke(app, ["audit", str(fleet / "rack-a"), "--jobs", "1",
                                          *extra], env=env).stdout

    def rows(out):
        return [ln.split()[1] for ln in out.splitlines() if ln.startswith("node")]

    assert rows(run(terminal=True)) == ["FAIL"] * 3
    assert "9 passing nodes not listed (--all lists every node)" in run(terminal=True)
    assert rows(run("--all", terminal=True)) == ["FAIL"] * 3 + ["PASS"] * 9
    assert rows(run(terminal=False)) == ["FAIL"] * 3 + ["PASS"] * 9


def test_table_readable_at_80_columns():
    deep = "/srv/fleet/snapshots/2024-06-01/cluster-east/rack-17/"
    rows = []
    for i, verdict in enumerate(["pass", "fail", "pass"]):
        r = audit.NodeResult(file=f"{deep}node{i:04d}.json",
                             hostname=f"gpu-node-{i:04d}.cluster-east.example.com",
                             layout="dgx-h100", verdict=verdict, errors=int(verdict == "fail"),
                             warnings=3,
                             worst=(("error", "nvlink.link_down", "GPU3 link 7", "down")
                                    if verdict == "fail" else
                                    ("warning", "pcie.gen_low", "GPU5", "gen 3")))
        rows.append(r)
    _, text = _printed(rows, width=80)
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    assert "…" not in text  # nothing cut
    assert deep in text and "files under" in text
    for i in range(3):
        assert f"gpu-node-{i:04d}.cluster-east.example.com" in text  # host names whole
        assert f"node{i:04d}.json" in text
    hosts = [ln for ln in lines if ln.startswith("gpu-node-")]
    assert [h.split()[0] for h in hosts] == [f"gpu-node-{i:04d}.cluster-east.example.com"
                                             for i in (1, 0, 2)]  # failing first
    assert "FAIL" in hosts[0] and "PASS" in hosts[1]


def _tiny_tree(tmp_path, fleet):
    src = next((fleet / "rack-a").glob("*.json"))
    top = tmp_path / "b"
    (top / "a").mkdir(parents=True)
    (top / "b").mkdir()
    shutil.copy(src, top / "z.json")
    shutil.copy(src, top / "a" / "hidden.json")
    shutil.copy(src, top / "b" / "good.json")
    return top


def test_walk_goes_on_past_an_unlistable_directory(fleet, tmp_path, monkeypatch):
    top = _tiny_tree(tmp_path, fleet)
    real_scandir, real_listdir = os.scandir, os.listdir
    blocked = str(top / "a")

    def deny(real):
        def f(path=".", *a, **k):
            if os.fspath(path).rstrip("/") == blocked:
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real(path, *a, **k)
        return f
    monkeypatch.setattr(os, "scandir", deny(real_scandir))
    monkeypatch.setattr(os, "listdir", deny(real_listdir))
    got = list(audit.expand([str(top)]))
    assert got == [(str(top / "z.json"), None),
                   (blocked, "cannot list directory: Permission denied"),
                   (str(top / "b" / "good.json"), None)]
    res = list(audit.run([str(top)], jobs=1))
    assert [r.verdict == "error" for r in res] == [False, True, False]


def test_fifo_reported_not_opened(fleet, tmp_path, cli):
    src = next((fleet / "rack-a").glob("*.json"))
    top = tmp_path / "c"
    top.mkdir()
    shutil.copy(src, top / "a.json")
    os.mkfifo(top / "b.json")
    assert list(audit.expand([str(top)])) == [
        (str(top / "a.json"), None), (str(top / "b.json"), "not a regular file (a FIFO)")]
    # named directly, and through check_file (a worker) too: never opened
    assert list(audit.expand([str(top / "b.json")])) == [
        (str(top / "b.json"), "not a regular file (a FIFO)")]
    r = audit.check_file(str(top / "b.json"))
    assert r.verdict == "error" and r.reason == "not a regular file (a FIFO)"
    for args in ([str(top)], [str(top / "a.json"), str(top / "b.json")]):
        res = cli("audit", *args, "--jobs", "1", "--format", "json")
        doc = _json(res)
        assert [n["verdict"] == "error" for n in doc["nodes"]] == [False, True]
        assert doc["nodes"][1]["reason"] == "not a regular file (a FIFO)"


def test_snapshots_without_a_usable_cache_are_counted_and_named_in_a_note(tmp_path, cli):
    """Sealed and evidence-only copies of the same nodes give the same verdicts; the
    evidence-only ones (and an edited sealed one) are counted as re-derived, texts are not."""
    from nvtopo import snapshot

    lay = layouts.load("dgx-h100")
    for i, faults in enumerate([[], ["nvlink-down:GPU3:7"]]):
        doc = simulate(lay, faults, seed=i, hostname=f"n{i}")
        (tmp_path / f"sealed{i}.json").write_text(snapshot.dumps(doc))
        (tmp_path / f"old{i}.json").write_text(json.dumps(doc, indent=2))
    edited = (tmp_path / "sealed0.json").read_text().replace('"n0"', '"n9"', 1)
    (tmp_path / "edited.json").write_text(edited)
    (tmp_path / "topo.txt").write_text(examples.read("dgx-h100"))
    r = cli("audit", str(tmp_path), "--format", "json", "--jobs", "1")
    doc = _json(r)
    verdicts = {os.path.basename(n["file"]): n["verdict"] for n in doc["nodes"]}
    assert verdicts == {"sealed0.json": "pass", "old0.json": "pass", "edited.json": "pass",
                        "sealed1.json": "fail", "old1.json": "fail", "topo.txt": "pass"}, verdicts
    assert doc["summary"]["rederived"] == 3  # old0, old1, edited
    r = cli("audit", str(tmp_path), "--jobs", "1")
    text = " ".join(r.stdout.split())
    assert "note: 3 snapshots carried no model cache" in text
    assert "nvtopo snapshot --from FILE -o FILE" in text
    for f in ("old0.json", "old1.json", "edited.json"):
        os.unlink(tmp_path / f)
    r = cli("audit", str(tmp_path), "--jobs", "1")
    assert _json(cli("audit", str(tmp_path), "--format", "json"))["summary"]["rederived"] == 0
    assert "note:" not in r.stdout


def test_the_engines_node_names_from_collect_json_name_the_nodes(tmp_path):
    """A one-host test cluster (Slurm's slurmd -N, Ray's local workers): every snapshot has
    one hostname, and audit took four of five for that host's older snapshots.  The engine's
    names in collect.json (nvtopo collect) name the nodes, as cluster reads them."""
    from nvtopo.layouts import load
    from nvtopo.simulate import fleet as sim_fleet
    from nvtopo.snapshot import dumps

    plan = sim_fleet.plan(load("dgx-h100"), 3)
    nodes = []
    for i in range(3):
        doc = sim_fleet.node_document(plan, i)
        doc["host"]["hostname"] = "testhost"
        (tmp_path / f"n{i}.json").write_text(dumps(doc))
        nodes.append({"node": f"n{i}", "file": f"n{i}.json", "status": "answered"})
    (tmp_path / "collect.json").write_text(json.dumps({"kind": "nvtopo-collect",
                                                       "nodes": nodes}))
    rs = list(audit.run([str(tmp_path)], jobs=1))
    assert [(r.node, r.hostname) for r in rs] == [(f"n{i}", "testhost") for i in range(3)]
    assert [r.to_dict()["node"] for r in rs] == ["n0", "n1", "n2"]
    res = make_runner().invoke(app, ["audit", str(tmp_path), "-j", "1"], terminal_width=160)
    rows = [line.split()[0] for line in res.stdout.splitlines()
            if line.split() and line.split()[0] in ("n0", "n1", "n2", "testhost")]
    assert rows == ["n0", "n1", "n2"], res.stdout
    assert "Older" not in res.stdout
    res = make_runner().invoke(app, ["audit", str(tmp_path), "-j", "1", "--format", "json"])
    doc = json.loads(res.stdout)  # (the runner validates it against audit.schema.json)
    assert [n["node"] for n in doc["nodes"]] == ["n0", "n1", "n2"]
    import schema_check

    schema_check.validate(doc, "audit")
    (tmp_path / "collect.json").unlink()  # without it: one host, two older snapshots
    res = make_runner().invoke(app, ["audit", str(tmp_path), "-j", "1"], terminal_width=160)
    assert "testhost" in res.stdout and "Older" in res.stdout
