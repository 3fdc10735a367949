"""The package's architecture, enforced on its source: layers, no cycles between packages or
between modules, a CLI that imports no probe, and modules and functions of a readable size.

Every module under ``nvtopo/`` is parsed with ``ast``; every import counts, at the top of
a file or inside a function (where most of nvtopo imports, to start fast), relative ones
resolved.  The layers, lowest first (a module imports only from its own layer or below;
two packages of one layer may not import each other both ways):

    model (facts)  <  probes  <  snapshot, layouts  <  checks, render
                   <  commands (audit, diff, simulate, commands/)  <  cli

``safe``, ``errors``, ``output``, ``signals``, ``plain`` (and the package itself, ``examples``: data) are
utilities, usable from any layer, importing only each other.  A new module must be placed
in :data:`LAYERS` (or :data:`UTILITIES`) before this passes.

Known exceptions are listed with their reason (:data:`UPWARD_ALLOWED`,
:data:`BIG_ALLOWED`, :data:`LONG_ALLOWED`); they may only shrink: an entry that no longer applies fails until it
is removed.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import pytest

import nvtopo

PKG = Path(nvtopo.__file__).resolve().parent

#: Usable from every layer; import only each other.
UTILITIES = ("nvtopo", "nvtopo.errors", "nvtopo.safe", "nvtopo.output", "nvtopo.plain",
             "nvtopo.signals", "nvtopo.examples")

#: (layer, rank, the packages and modules in it).  Lower ranks sit below.
LAYERS: List[Tuple[str, int, Tuple[str, ...]]] = [
    ("model", 1, ("nvtopo.model",)),
    # fakesys: a sysfs tree from an archive, the sysfs probe's stand-in (simulate, tests)
    ("probes", 2, ("nvtopo.probes", "nvtopo.fakesys")),
    ("snapshot", 3, ("nvtopo.snapshot",)),
    ("layouts", 3, ("nvtopo.layouts",)),
    ("checks", 4, ("nvtopo.checks",)),
    ("render", 4, ("nvtopo.render",)),
    ("commands", 5, ("nvtopo.commands", "nvtopo.audit", "nvtopo.diff", "nvtopo.simulate",
                     "nvtopo.cluster", "nvtopo.collect", "nvtopo.pool")),
    ("cli", 6, ("nvtopo.cli", "nvtopo.__main__")),
]

#: Imports of a higher layer, each with why it is still there.  Only ever shrinks.
UPWARD_ALLOWED: Dict[Tuple[str, str], str] = {
    ("nvtopo.render.audit", "nvtopo.audit"):
        "the audit renderer reads the command's result types (NodeResult, Summary, "
        "SHOWN_NODES), defined beside the checking engine; they move below render (or the "
        "renderer up) when audit's rows become a typed report",
}

#: Lines a module may have.
MAX_LINES = 650
#: Modules still longer, with the size they may not grow past and why.  Only ever shrinks.
BIG_ALLOWED: Dict[str, Tuple[int, str]] = {}

#: Lines a function (or method) may have, from its ``def`` to its last line.
MAX_FUNCTION_LINES = 80
_REWRITTEN = "rewritten by the typed-layout / catalog work (issue 22)"
#: Functions still longer, ``"path/in/nvtopo.py::Qualified.name"``, with the size they may not
#: grow past and why.  Only ever shrinks (aim: empty).
LONG_ALLOWED: Dict[str, Tuple[int, str]] = {
}


# --- the import graph ------------------------------------------------------------------


def _modules() -> Dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    found: Dict[str, Path] = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _package_of(name: str) -> str:
    """The package a module's relative imports start from."""
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def _target(base: str, imported: Optional[str]) -> str:
    """``from base import imported``: the module named, or ``base`` when it is a name in it."""
    if imported is not None and f"{base}.{imported}" in MODULES:
        return f"{base}.{imported}"
    return base


def imports_of(name: str) -> Set[str]:
    """The nvtopo modules ``name`` imports, anywhere in its file."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"), str(MODULES[name]))
    out: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = _package_of(name).split(".")
                if node.level > 1:
                    base_parts = base_parts[:-(node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            out.update(_target(base, a.name) for a in node.names)
    return {m for m in out if m == "nvtopo" or m.startswith("nvtopo.")}


GRAPH = {name: imports_of(name) for name in MODULES}


def place(module: str) -> Optional[Tuple[str, int, str]]:
    """``(layer, rank, unit)`` of a module (the unit: its package or top-level module), or
    None for a utility."""
    if module in UTILITIES:
        return None
    for layer, rank, units in LAYERS:
        for unit in units:
            if module == unit or module.startswith(unit + "."):
                return layer, rank, unit
    raise LookupError(module)


def _unit(module: str) -> str:
    where = place(module)
    return module if where is None else where[2]


# --- the rules -------------------------------------------------------------------------


def test_the_graph_sees_imports_inside_functions_and_relative_ones():
    """The parser itself: what the rules below rest on (known imports of known modules)."""
    assert "nvtopo.snapshot" in GRAPH["nvtopo.cli.show"]  # inside the command function
    assert "nvtopo.render.matrix" in GRAPH["nvtopo.cli.show"]  # `from ..render import matrix`
    assert "nvtopo.errors" in GRAPH["nvtopo.snapshot.document"]  # `from ..errors import X`
    assert "nvtopo.snapshot.read" in GRAPH["nvtopo.snapshot.document"]  # `from .read import`
    assert "nvtopo.probes.topo" in GRAPH["nvtopo.snapshot.document"]  # in a function
    assert "nvtopo.cli" in GRAPH["nvtopo.__main__"]
    assert len(MODULES) > 60


def test_every_module_has_a_layer():
    unplaced = []
    for name in MODULES:
        try:
            place(name)
        except LookupError:
            unplaced.append(name)
    assert not unplaced, f"place these modules in LAYERS or UTILITIES: {unplaced}"


def test_utilities_import_only_utilities():
    bad = {m: sorted(d for d in GRAPH[m] if d not in UTILITIES) for m in UTILITIES
           if m in MODULES}
    assert not any(bad.values()), bad


def _upward() -> Dict[Tuple[str, str], Tuple[str, str]]:
    found = {}
    for name, deps in GRAPH.items():
        me = place(name)
        for dep in deps:
            there = place(dep)
            if me is not None and there is not None and there[1] > me[1]:
                found[(name, dep)] = (me[0], there[0])
    return found


def test_each_layer_imports_only_its_own_and_those_below():
    upward = _upward()
    bad = {f"{a} ({la}) imports {b} ({lb})": None for (a, b), (la, lb) in upward.items()
           if (a, b) not in UPWARD_ALLOWED}
    assert not bad, "imports of a higher layer:\n" + "\n".join(bad)


def test_the_upward_allow_list_only_shrinks():
    stale = [edge for edge in UPWARD_ALLOWED if edge not in _upward()]
    assert not stale, f"these imports are gone: remove them from UPWARD_ALLOWED: {stale}"


def _cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: Set[str] = set()
    out: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_between_packages():
    units: Dict[str, Set[str]] = {}
    for name, deps in GRAPH.items():
        mine = _unit(name)
        units.setdefault(mine, set()).update(_unit(d) for d in deps if _unit(d) != mine)
    assert _cycles(units) == []


def test_no_import_cycles_between_modules():
    """Not only packages: two modules that import each other (even one of them inside a
    function, or for its type annotations only) are one module in two files."""
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_cli_imports_no_probe():
    """Input is opened by the front door (nvtopo.snapshot.open_input), never by the CLI."""
    bad = {name: sorted(d for d in deps if d == "nvtopo.probes"
                        or d.startswith("nvtopo.probes.") or d == "nvtopo.fakesys")
           for name, deps in GRAPH.items() if place(name) and place(name)[0] == "cli"}
    assert not any(bad.values()), bad


def test_cli_commands_keep_their_annotations_evaluated():
    """typer reads every command's signature at each start; postponed annotations (strings)
    would be evaluated one by one, which doubled the time to build the CLI (1.5 -> 2.9 ms)."""
    def postponed(name: str) -> bool:
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        return any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                   and any(a.name == "annotations" for a in n.names) for n in tree.body)

    assert postponed("nvtopo.cli.io")  # what the test looks for, where it is allowed
    slow = [name for name in MODULES if name.startswith("nvtopo.cli")
            and name not in ("nvtopo.cli.io", "nvtopo.cli.options") and postponed(name)]
    assert not slow, slow


def test_layouts_sit_below_checks():
    """``layouts capture`` reads the checks' view of the model: it is a command, not part of
    the layout loader (which ``checks`` imports)."""
    bad = {name: sorted(d for d in deps if place(d) and place(d)[1] >= 4)
           for name, deps in GRAPH.items() if place(name) and place(name)[0] == "layouts"}
    assert not any(bad.values()), bad


def _sizes() -> Dict[str, int]:
    return {MODULES[name].relative_to(PKG).as_posix():
            len(MODULES[name].read_text(encoding="utf-8").splitlines()) for name in MODULES}


def _over(sizes: Dict[str, int], limit: int, allowed: Dict[str, Tuple[int, str]]
          ) -> Dict[str, int]:
    """What is over ``limit`` and not allowed (or grown past what its entry allows)."""
    return {k: n for k, n in sizes.items() if n > limit
            and (k not in allowed or n > allowed[k][0])}


def _stale(sizes: Dict[str, int], limit: int, allowed: Dict[str, Tuple[int, str]]
           ) -> Dict[str, Optional[int]]:
    """Allow-list entries no longer needed: gone, or back within ``limit``."""
    return {k: sizes.get(k) for k in allowed if k not in sizes or sizes[k] <= limit}


def test_modules_are_of_a_readable_size():
    too_big = _over(_sizes(), MAX_LINES, BIG_ALLOWED)
    assert not too_big, (f"modules over {MAX_LINES} lines (split them; an allow-listed one "
                         f"may not grow): {too_big}")


def test_the_size_allow_list_only_shrinks():
    stale = _stale(_sizes(), MAX_LINES, BIG_ALLOWED)
    assert not stale, f"split or gone: remove from BIG_ALLOWED: {stale}"


def _function_sizes(source: str, rel: str) -> Dict[str, int]:
    """``"rel::Qualified.name"`` -> lines (``def`` to last line) of every function and method
    in ``source``, nested ones too (``outer.inner``)."""
    out: Dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                out[f"{rel}::{name}"] = (child.end_lineno or child.lineno) - child.lineno + 1
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(source), "")
    return out


def _functions() -> Dict[str, int]:
    found: Dict[str, int] = {}
    for name in MODULES:
        rel = MODULES[name].relative_to(PKG).as_posix()
        found.update(_function_sizes(MODULES[name].read_text(encoding="utf-8"), rel))
    return found


def test_the_function_measure():
    """What the two rules below rest on: nesting, methods and line counts."""
    src = ("def a():\n    def b():\n        pass\n    return b\n\n\n"
           "class C:\n    @property\n    def d(self):\n\n        return 1\n")
    assert _function_sizes(src, "m.py") == {"m.py::a": 4, "m.py::a.b": 2, "m.py::C.d": 3}
    sizes = _functions()
    assert sizes["model/topology.py::Topology.from_dict"] > 10
    assert len(sizes) > 1000


def test_functions_are_of_a_readable_size():
    too_long = _over(_functions(), MAX_FUNCTION_LINES, LONG_ALLOWED)
    assert not too_long, (f"functions over {MAX_FUNCTION_LINES} lines (split them; an "
                          f"allow-listed one may not grow): {too_long}")


def test_the_function_allow_list_only_shrinks():
    stale = _stale(_functions(), MAX_FUNCTION_LINES, LONG_ALLOWED)
    assert not stale, f"split or gone: remove from LONG_ALLOWED: {stale}"


# --- what a command loads when it runs ------------------------------------------------------


@pytest.fixture(scope="module")
def sealed_snapshot(tmp_path_factory):
    from nvtopo import layouts, snapshot
    from nvtopo.simulate import simulate

    path = tmp_path_factory.mktemp("arch") / "node.json"
    path.write_text(snapshot.dumps(simulate(layouts.load("dgx-h100"), [], seed=1)),
                    encoding="utf-8")
    return str(path)


def _loaded(args: List[str]) -> Dict[str, object]:
    """The modules a fresh ``nvtopo ARGS`` process loaded, and its exit status (the
    stand-ins of :mod:`nvtopo.cli.deferred` are no module loaded)."""
    code = ("import json, sys\n"
            "from nvtopo.cli import run\n"
            "sys.argv = ['nvtopo'] + json.loads(sys.argv[1])\n"
            "try:\n"
            "    run()\n"
            "except SystemExit as e:\n"
            "    status = e.code\n"
            "real = sorted(m for m, v in sys.modules.items() if type(v).__name__ != '_StandIn')\n"
            "sys.stderr.write('\\nMODULES ' + json.dumps([status, real]))\n")
    env = dict(os.environ, PYTHONPATH=str(PKG.parent))
    done = subprocess.run([sys.executable, "-c", code, json.dumps(args)], capture_output=True,
                          text=True, env=env, timeout=120)
    status, modules = json.loads(done.stderr.rpartition("\nMODULES ")[2])
    return {"status": status, "modules": set(modules)}


def test_check_json_of_a_sealed_snapshot_loads_no_rich_and_no_probe(sealed_snapshot):
    """``check --format json`` prints JSON: Rich (tables) and the probes' parsers (the model
    comes from the snapshot's sealed cache) are not imported, so it starts fast."""
    run = _loaded(["check", "--from", sealed_snapshot, "--format", "json"])
    assert run["status"] == 0
    mods = run["modules"]
    assert "nvtopo.checks" in mods and "nvtopo.snapshot.cache" in mods
    assert not {m for m in mods if m == "rich" or m.startswith("rich.")}
    assert not {m for m in mods if m.startswith("nvtopo.probes.")}


def test_help_loads_no_markdown_and_no_pygments():
    """typer's help imports rich.markdown (markdown_it) and rich.traceback (pygments) for
    Markdown help and pretty tracebacks, neither of which nvtopo has: they stay stand-ins
    (nvtopo/cli/deferred.py), and the help is Rich's all the same."""
    for args in (["--help"], ["check", "--help"]):
        run = _loaded(args)
        assert run["status"] == 0
        mods = run["modules"]
        assert "typer.rich_utils" in mods and "rich.console" in mods
        assert not {m for m in mods if m.split(".")[0] in ("markdown_it", "pygments", "mdurl")}
        assert "rich.markdown" not in mods and "rich.traceback" not in mods


def test_a_deferred_module_is_the_real_one_when_used():
    """Code that does use a deferred class gets the real one (made, asked, isinstance)."""
    code = ("import sys\n"
            "from nvtopo.cli.deferred import defer\n"
            "defer()\n"
            "from rich.markdown import Markdown\n"
            "from rich.traceback import Traceback\n"
            "m = Markdown('# x')\n"
            "assert type(m).__module__ == 'rich.markdown' and isinstance(m, Markdown)\n"
            "assert type(sys.modules['rich.markdown']).__name__ == 'module'\n"
            "assert Traceback.from_exception is not None\n"
            "import rich.markdown\n"
            "assert rich.markdown.Markdown is type(m)\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=str(PKG.parent))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_check_table_loads_rich(sealed_snapshot):
    """The other side of the test above: the terminal output is Rich's, so the check can
    fail.  (The findings are Rich Text laid out by render/layout.py, not a Rich table.)"""
    run = _loaded(["check", "--from", sealed_snapshot])
    assert run["status"] == 0 and "rich.console" in run["modules"]
    assert "nvtopo.render.layout" in run["modules"]
