"""The shape of the probes and the simulator: what may import what, no cycles, small modules,
one deadline helper, the simulator on the probes' public names only, and a code digest
that covers files that exist."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

import nvtopo
from nvtopo import snapshot  # noqa: F401
from nvtopo.snapshot import cache as snapshot_cache
from nvtopo.probes.deadline import Deadline, run_in_thread

PKG = Path(nvtopo.__file__).resolve().parent
PROBES = PKG / "probes"
SIMULATE = PKG / "simulate"
#: What a probe may import from nvtopo, besides the probes themselves.
PROBE_MAY_IMPORT = ("nvtopo.model", "nvtopo.safe", "nvtopo.errors", "nvtopo.plain")
#: Third-party imports of the probes, and the one module allowed each.
THIRD_PARTY = {"pynvml": {"nvtopo.probes.nvml.live"},
               "psutil": {"nvtopo.probes.host", "nvtopo.probes.imex"}}  # imex: local addresses
#: Modules under probes/ and simulate/ stay well under 600 lines.
MAX_LINES = 500


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    """``name`` is a module or package of nvtopo (a file or a package directory)."""
    rel = Path(*name.split("."))
    return (PKG.parent / rel).with_suffix(".py").is_file() or \
        (PKG.parent / rel / "__init__.py").is_file()


def imports(path: Path) -> Iterator[Tuple[str, int, bool]]:
    """(imported module, line, under TYPE_CHECKING) for every import in the file, module level
    or in a function; ``from X import name`` counts as X.name where that is a module."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            typing_only |= {id(n) for n in ast.walk(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, id(node) in typing_only
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for alias in node.names:
                full = f"{mod}.{alias.name}"
                yield (full if is_module(full) else mod), node.lineno, id(node) in typing_only


def py_files(root: Path) -> List[Path]:
    return sorted(root.rglob("*.py"))


def test_probes_import_only_the_model_safe_errors_and_other_probes():
    bad = []
    for path in py_files(PROBES):
        me = module_name(path)
        for mod, line, _ in imports(path):
            top = mod.split(".")[0]
            if top == "nvtopo":
                if not (mod.startswith(("nvtopo.probes", "nvtopo.model.")) or mod in PROBE_MAY_IMPORT):
                    bad.append(f"{me}:{line} imports {mod}")
            elif top in THIRD_PARTY and me not in THIRD_PARTY[top]:
                bad.append(f"{me}:{line} imports {top}")
    assert bad == []
    # the walk sees the imports it judges
    seen = {mod for p in py_files(PROBES) for mod, _, _ in imports(p)}
    assert {"nvtopo.model", "nvtopo.probes.nvml.source", "nvtopo.probes.deadline", "pynvml",
            "nvtopo.probes.sysfs.read", "nvtopo.probes.topo.scan"} <= seen


def import_graph(root: Path) -> Dict[str, Set[str]]:
    """Module -> the nvtopo modules under ``root`` it imports (TYPE_CHECKING ones left out:
    they never run).  A submodule's implicit import of its package is no edge."""
    names = {module_name(p) for p in py_files(root)}
    graph: Dict[str, Set[str]] = {}
    for path in py_files(root):
        me = module_name(path)
        graph[me] = {mod for mod, _, typing_only in imports(path)
                     if mod in names and not typing_only and mod != me}
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    found: List[List[str]] = []
    state: Dict[str, int] = {}
    stack: List[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                found.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return found


def test_no_import_cycle_under_the_probes():
    graph = import_graph(PROBES)
    assert cycles(graph) == []
    # the graph is the real one: the nvml package imports its parts
    assert {"nvtopo.probes.nvml.walk", "nvtopo.probes.nvml.build"} <= \
        graph["nvtopo.probes.nvml"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_the_pasted_text_reader_no_longer_imports_the_nvml_probe_back():
    """nvml_text imported nvml, which imported nvml_text: the shared pieces are in vocab,
    decode and links now."""
    graph = import_graph(PROBES)
    for mod in ("nvtopo.probes.nvml.text", "nvtopo.probes.nvml.paste"):
        assert "nvtopo.probes.nvml" not in graph[mod]
        assert "nvtopo.probes.nvml.build" not in graph[mod]


@pytest.mark.parametrize("path", py_files(PROBES) + py_files(SIMULATE),
                         ids=lambda p: str(p.relative_to(PKG)))
def test_modules_are_small(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(PKG)}: {n} lines"


def test_simulate_uses_only_public_probe_names_and_no_pynvml():
    bad = []
    for path in py_files(SIMULATE):
        me = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        probe_aliases: Set[str] = set()
        for mod, line, _ in imports(path):
            if mod.split(".")[0] == "pynvml":
                bad.append(f"{me}:{line} imports pynvml")
            if mod.startswith("nvtopo.probes") and any(
                    part.startswith("_") and part != "__init__" for part in mod.split(".")):
                bad.append(f"{me}:{line} imports private {mod}")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and "probes" in (node.module or ""):
                for alias in node.names:
                    if alias.name.startswith("_"):
                        bad.append(f"{me}:{node.lineno} imports {alias.name}")
                    probe_aliases.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("pynvml"):
                        bad.append(f"{me}:{node.lineno} imports pynvml")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in probe_aliases and node.attr.startswith("_"):
                bad.append(f"{me}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert bad == []


def test_simulate_does_not_load_pynvml():
    """A simulation in a fresh process imports no pynvml (a pynvml release cannot break it)."""
    import subprocess
    import sys

    code = ("import sys\nfrom nvtopo import layouts\nfrom nvtopo.simulate import simulate\n"
            "simulate(layouts.load('dgx-h100'), ['nvlink-down:GPU3:7'], seed=1)\n"
            "print('pynvml' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=str(PKG.parent)).stdout.split()
    assert out == ["False"]


def test_one_deadline_helper_runs_the_live_captures_threads():
    """Only the deadline helper (and the bounded subprocess's readers) start threads."""
    starters = {module_name(p) for p in py_files(PROBES)
                if "threading.Thread(" in p.read_text(encoding="utf-8")}
    assert starters == {"nvtopo.probes.deadline", "nvtopo.probes.run"}
    users = {module_name(p) for p in py_files(PROBES)
             for mod, _, _ in imports(p) if mod == "nvtopo.probes.deadline"}
    assert {"nvtopo.probes.nvml.record", "nvtopo.probes.nvml.live",
            "nvtopo.probes.sysfs.live"} <= users


def test_the_code_digest_covers_files_that_exist():
    """A path left stale by a move would hash as unreadable (random): no cache ever trusted."""
    missing = [m for m in snapshot_cache.DERIVATION_MODULES if not (PKG / m).is_file()]
    assert missing == []
    derive_side = {m for m in snapshot_cache.DERIVATION_MODULES if m.startswith("probes/")}
    assert "probes/nvml/live.py" not in derive_side  # capture only: never imported to derive


# --- the deadline helper ---------------------------------------------------------------------


def test_deadline_counts_down_and_expires():
    d = Deadline(0.05)
    assert not d.expired() and 0 < d.remaining() <= 0.05
    time.sleep(0.08)
    assert d.expired() and d.remaining() == 0.0 and d.elapsed() >= 0.05
    forever = Deadline(float("inf"))
    assert not forever.expired() and forever.remaining() == float("inf")


def test_run_in_thread_returns_the_result_or_raises_what_it_raised():
    w = run_in_thread(lambda: 42, 5.0, "t-ok")
    assert w.done and w.result() == 42

    def boom() -> None:
        raise KeyError("broken walk")

    w = run_in_thread(boom, 5.0, "t-boom")
    assert w.done
    with pytest.raises(KeyError, match="broken walk"):
        w.result()
    w = run_in_thread(lambda: "no limit", float("inf"), "t-inf")
    assert w.done and w.result() == "no limit"


def test_run_in_thread_gives_up_on_a_hung_call_within_its_timeout():
    release = threading.Event()
    start = time.monotonic()
    w = run_in_thread(lambda: release.wait(60), 0.2, "t-hang")
    took = time.monotonic() - start
    assert not w.done and w.result() is None
    assert took < 10  # it waited its timeout, not for the call
    assert w.thread.daemon
    release.set()
    assert w.wait(10) and w.result() is True
