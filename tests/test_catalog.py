"""The catalog of checks (nvtopo/checks/catalog.py) against the code: every finding code the
source can emit is in the catalog, every catalog code is emitted somewhere, and the
severities written at each call site are on the code's ladder."""

from __future__ import annotations

import ast
import pathlib
import re
from typing import Dict, List, Optional, Set, Tuple

import pytest

from nvtopo.checks import catalog
from nvtopo.checks import source as source_family

ROOT = pathlib.Path(__file__).resolve().parent.parent / "nvtopo"
#: the functions that make a finding, and where their code argument is
MAKERS = {"finding": 1, "make": 1, "_counted": 1, "Finding": 1}
CODE_RE = re.compile(r"[a-z0-9]+\.[a-z0-9_]+")
#: codes written as f-strings, each with the values it takes (read from the module)
F_STRINGS = {"f'source.probe_{status}'": [f"source.probe_{s}"
                                          for s in source_family.LOST_PROBE]}


def _name(call: ast.Call) -> Optional[str]:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _arg(call: ast.Call, name: str, index: int) -> Optional[ast.expr]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return call.args[index] if len(call.args) > index else None


def _targets(t: ast.expr) -> Set[str]:
    return {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}


class _Walker(ast.NodeVisitor):
    """Each maker call with the function parameters and ``for`` loops around it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.params: List[Set[str]] = []
        self.loops: List[ast.For] = []
        self.codes: Dict[str, List[str]] = {}
        self.severities: List[Tuple[str, str, str]] = []  # (code, severity, where)
        self.unresolved: List[str] = []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        a = node.args
        self.params.append({x.arg for x in a.args + a.kwonlyargs + a.posonlyargs})
        self.generic_visit(node)
        self.params.pop()

    def visit_For(self, node: ast.For) -> None:
        self.loops.append(node)
        self.generic_visit(node)
        self.loops.pop()

    def visit_Call(self, node: ast.Call) -> None:
        name = _name(node)
        if name in MAKERS:
            code = _arg(node, "code", MAKERS[name])
            if code is not None:
                self._take(node, code)
        self.generic_visit(node)

    def _take(self, node: ast.Call, code: ast.expr) -> None:
        where = f"{self.path}:{node.lineno}"
        if isinstance(code, ast.Constant) and isinstance(code.value, str):
            codes = [code.value]
        elif isinstance(code, ast.JoinedStr):
            codes = F_STRINGS.get(ast.unparse(code), [])
        elif isinstance(code, ast.Name) and self.params and code.id in self.params[-1]:
            return  # passed through: the callers are enumerated
        elif isinstance(code, ast.Name):
            codes = [c.value for loop in self.loops if code.id in _targets(loop.target)
                     for c in ast.walk(loop.iter) if isinstance(c, ast.Constant)
                     and isinstance(c.value, str) and CODE_RE.fullmatch(c.value)]
        else:
            codes = []
        if not codes:
            self.unresolved.append(f"{where}: {ast.unparse(code)}")
        for c in codes:
            self.codes.setdefault(c, []).append(where)
        sev = _arg(node, "severity", 0)
        written = [sev] if isinstance(sev, ast.Constant) else \
            [sev.body, sev.orelse] if isinstance(sev, ast.IfExp) else []
        for s in written:
            if isinstance(s, ast.Constant) and isinstance(s.value, str):
                self.severities.extend((c, s.value, where) for c in codes)


def _scan() -> _Walker:
    total = _Walker("")
    for p in sorted(ROOT.rglob("*.py")):
        w = _Walker(str(p.relative_to(ROOT.parent)))
        w.visit(ast.parse(p.read_text(encoding="utf-8")))
        for c, wh in w.codes.items():
            total.codes.setdefault(c, []).extend(wh)
        total.severities.extend(w.severities)
        total.unresolved.extend(w.unresolved)
    return total


SCAN = _scan()


def test_every_code_argument_is_resolved() -> None:
    assert SCAN.unresolved == []


def test_the_scan_finds_the_codes_of_loops_and_f_strings() -> None:
    # one code per kind of argument: a literal, a loop's tuple, an f-string, a pass-through
    for code in ("nvlink.link_down", "mesh.drops", "cluster.rail_subnet",
                 "source.probe_crashed", "cluster.mesh_node_missing"):
        assert code in SCAN.codes, code
    assert len(SCAN.codes) > 90


def test_every_emitted_code_is_in_the_catalog() -> None:
    missing = {c: w[0] for c, w in SCAN.codes.items() if c not in catalog.CATALOG}
    assert missing == {}


def test_every_catalog_code_is_emitted_somewhere() -> None:
    assert sorted(set(catalog.CATALOG) - set(SCAN.codes)) == []


def test_written_severities_are_on_each_codes_ladder() -> None:
    off = [(c, s, w) for c, s, w in SCAN.severities
           if s not in catalog.CATALOG[c].ladder.severities]
    assert off == []


@pytest.mark.parametrize("code", sorted(catalog.CATALOG))
def test_each_check_says_what_it_is(code: str) -> None:
    c = catalog.CATALOG[code]
    assert code.startswith(("nvswitch.",) if c.family == "fabric" and
                           code.startswith("nvswitch.") else (f"{c.family}.",))
    assert c.meaning and c.evidence and c.action and c.subject
    assert c.ladder.severities
    for s in ("observed", "inferred"):
        assert catalog.severity(code, s) in c.ladder.severities
    assert catalog.severity(code, "missing") == "info"
    if c.ladder.missing:
        assert catalog.CATALOG[c.ladder.missing].ladder.severities == ("info",)


def test_the_ladder_keeps_demote() -> None:
    from nvtopo.checks.findings import demote

    for sev in ("error", "warning", "info"):
        assert demote(sev, False) == sev
    assert demote("error", True) == "warning"
    assert demote("warning", True) == "warning"
    assert catalog.severity("nvlink.link_down", "observed") == "error"
    assert catalog.severity("nvlink.link_down", "inferred") == "warning"
    assert catalog.severity("gpu.lost", "inferred") == "error"
    assert catalog.severity("nic.names_differ", "observed") == "warning"


def test_thresholds_merge_catalog_layout_then_file() -> None:
    t = catalog.thresholds("nvlink")
    assert t["replay"] == 1000 and t["crc_data"] == 100
    t = catalog.thresholds("nvlink", {"replay": 5})
    assert t["replay"] == 5 and t["ecc"] == 100
    with catalog.using_thresholds({"nvlink": {"replay": 7, "ecc": 1}}):
        t = catalog.thresholds("nvlink", {"replay": 5})
        assert (t["replay"], t["ecc"], t["crc_data"]) == (7, 1, 100)
        assert catalog.thresholds("ib")["symbol_error"] == 100
    assert catalog.thresholds("nvlink")["replay"] == 1000


# --- nvtopo checks, docs/checks.md -----------------------------------------------------------

def _invoke(*args: str):  # type: ignore[no-untyped-def]
    from cli_runner import make_runner

    from nvtopo.cli import app

    return make_runner().invoke(app, list(args))


def test_checks_lists_every_code_as_json() -> None:
    import json

    r = _invoke("checks", "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1
    assert [d["code"] for d in doc["checks"]] == list(catalog.CATALOG)
    link = next(d for d in doc["checks"] if d["code"] == "nvlink.errors")
    assert link["severities"] == ["error", "warning"]
    assert link["thresholds"]["crc_data"] == 100


def test_checks_table_names_every_code() -> None:
    r = _invoke("checks")
    assert r.exit_code == 0, r.stderr
    flat = "".join(r.stdout.split())
    assert all(code in flat for code in catalog.CATALOG)


def test_checks_code_as_json_is_that_code_alone() -> None:
    import json

    r = _invoke("checks", "ib.port_down", "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [d["code"] for d in doc["checks"]] == ["ib.port_down"]
    assert doc["checks"][0]["meaning"] == catalog.CATALOG["ib.port_down"].meaning


@pytest.mark.parametrize("code", ["ib.port_down", "cluster.duplicate_guid", "nic.not_checked"])
def test_checks_code_explains_one(code: str) -> None:
    c = catalog.CATALOG[code]
    r = _invoke("checks", code)
    assert r.exit_code == 0, r.stderr
    flat = " ".join(r.stdout.split())
    for part in (c.meaning, c.evidence, c.ladder.describe(), c.action, c.example()):
        assert " ".join(part.split()) in flat


def test_checks_unknown_code_is_one_line_and_status_2() -> None:
    r = _invoke("checks", "nvlink.nope\x1b[31m")
    assert r.exit_code == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "unknown code" in lines[0] and "\x1b" not in lines[0]


def test_checks_page_is_the_catalog() -> None:
    from nvtopo.render.catalog import markdown

    page = pathlib.Path(__file__).resolve().parent.parent / "docs" / "checks.md"
    assert page.read_text(encoding="utf-8") == markdown(), \
        "docs/checks.md differs from the catalog: run python tests/regenerate_checks_doc.py"


# --- one Finding, one exit-status rule ------------------------------------------------------

def test_one_exit_status_rule() -> None:
    from nvtopo.checks.findings import exit_status

    assert (exit_status(None), exit_status("fail"), exit_status("pass")) == (2, 1, 0)


def test_cluster_findings_are_findings_with_their_nodes() -> None:
    from nvtopo.checks import subject as S
    from nvtopo.checks.findings import Finding
    from nvtopo.commands.cluster import ClusterResult, evaluate
    from nvtopo.commands.cluster.facts import NodeFacts

    bad = NodeFacts(file="a.json", name="a", engine_name=None, error="a.json: broken")
    found = evaluate([], [bad])
    assert [type(f) for f in found] == [Finding]
    assert found[0].subject == S.fleet("snapshots") and found[0].subject != S.other("snapshots")
    assert found[0].to_dict() == {
        "severity": "warning", "code": "cluster.unreadable", "subject": "snapshots",
        "expected": None, "actual": None, "message": found[0].message, "hint": "",
        "source": "cluster", "nodes": ["a"], "node_count": 1}
    result = ClusterResult(unreadable=[bad], findings=found)
    assert (result.verdict, result.exit_status()) == ("pass", 2)
    result.nodes.append(bad)
    assert result.exit_status() == 0
