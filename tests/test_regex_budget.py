"""Every regular expression nvtopo applies to text runs in linear time: a time budget.

A pattern with nested or overlapping repetition backtracks exponentially or
quadratically on the right input: ``GPU0GPU1...GPU29x`` (142 bytes) never finished
under the old glued-header pattern.  Reviews miss such patterns; this test does not:

* it finds every compiled pattern in every ``nvtopo`` module (module globals, the
  containers in them and the classes defined there), and every literal pattern passed to
  ``re.match``/``re.sub``/... anywhere in the source (an ``ast`` walk); a ``re.compile``
  site whose pattern is neither (built at run time) must be on the short allow-list
  below, with the reason;
* for each pattern it builds adversarial text from the pattern's own syntax tree: for
  every repetition, a prefix that reaches it, then 100 000 characters of what the
  repetition accepts (each character of its classes, the shortest text its body
  matches, each alternative, the literal runs of the pattern), then a character that
  does not fit;
* it times ``findall`` on each (that is ``search``, ``match`` and ``sub``'s work too)
  and fails for any that takes more than a second: a linear match of 100 000
  characters takes about a millisecond, a quadratic one tens of seconds.

``test_the_budget_catches_known_backtracking_patterns`` shows the test can fail: it
runs the same generator on the patterns this project used to have and on the classic
``(a+)+$``, and each must blow the budget.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import re
import signal
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import pytest

import nvtopo

try:  # Python 3.11+
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.9, 3.10
    import sre_parse  # type: ignore[no-redef]

PKG = Path(nvtopo.__file__).resolve().parent
SIZE = 100_000
BUDGET_S = 1.0
TAILS = ("!", "\n", "\x00")

#: ``re.compile`` sites whose pattern is built at run time, not from nvtopo's source, so
#: that there is nothing to time here.  Keyed by (file, enclosing function).
ALLOWED_DYNAMIC = {
    ("layouts/__init__.py", "_name_rx"):
        "a layout's gpus.name_pattern, applied by name_matches to at most NAME_SEARCH_LIMIT "
        "characters (timed below for the built-in layouts)",
    ("layouts/doc.py", "_check_values"):
        "compiles a layout's pattern to validate it (never applied to text there)",
    ("safe.py", "_unsafe_re"):
        "the two unsafe-character classes (_UNSAFE, _UNSAFE_KEEP_LINES), compiled on first "
        "use: a single character class, one linear pass over any text",
    ("simulate/families.py", "family_of"):
        "a layout's gpus.name_pattern against the simulator's own model names",
}

#: Patterns known to blow the budget, by (module, name), with why they are not fixed here.
#: Each is still timed and must still fail (strict xfail): fixed, its entry goes.
KNOWN_SLOW: Dict[Tuple[str, str], str] = {}


# --- finding the patterns -------------------------------------------------------------------


def _modules() -> List[Any]:
    out = [nvtopo]
    for info in pkgutil.walk_packages(nvtopo.__path__, "nvtopo."):
        if not info.name.endswith(".__main__"):  # importing it runs the command line
            out.append(importlib.import_module(info.name))
    return out


def _walk(value: Any, depth: int = 0) -> Iterator["re.Pattern[Any]"]:
    if isinstance(value, re.Pattern):
        yield value
    elif depth < 4 and isinstance(value, dict):
        for v in list(value.keys()) + list(value.values()):
            yield from _walk(v, depth + 1)
    elif depth < 4 and isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _walk(v, depth + 1)


@functools.lru_cache(maxsize=None)
def named_patterns() -> Dict[str, Dict[str, "re.Pattern[Any]"]]:
    """Compiled patterns per module by name: its globals (``_X_RE``), the containers in
    them (``PATTERNS[]``) and the attributes of the classes it defines (``Cls.X``)."""
    found: Dict[str, Dict[str, re.Pattern[Any]]] = {}
    for mod in _modules():
        pats: Dict[str, re.Pattern[Any]] = {}
        seen: Set[int] = set()
        for name, value in vars(mod).items():
            for p in _walk(value):
                if id(p) not in seen:
                    seen.add(id(p))
                    pats[name if p is value else f"{name}[]#{len(pats)}"] = p
            if isinstance(value, type) and value.__module__ == mod.__name__:
                for attr, v in vars(value).items():
                    for p in _walk(v):
                        if id(p) not in seen:
                            seen.add(id(p))
                            pats[f"{name}.{attr}#{len(pats)}"] = p
        found[mod.__name__] = pats
    return found


def module_patterns() -> Dict[str, List["re.Pattern[Any]"]]:
    return {m: list(p.values()) for m, p in named_patterns().items()}


_METHODS = {"match", "fullmatch", "search", "findall", "finditer", "sub", "subn", "split"}


def pattern_uses() -> Dict[str, Set[str]]:
    """Name -> the methods called on it anywhere in nvtopo (``_X_RE.match(...)``)."""
    uses: Dict[str, Set[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in _METHODS:
                target = node.func.value
                name = target.id if isinstance(target, ast.Name) else (
                    target.attr if isinstance(target, ast.Attribute) else None)
                if name:
                    uses.setdefault(name, set()).add(node.func.attr)
    return uses


_RE_FUNCS = {"compile": 1, "match": 2, "search": 2, "fullmatch": 2, "findall": 2,
             "finditer": 2, "split": 3, "sub": 4, "subn": 4}


def _flags(node: Optional[ast.AST]) -> Optional[int]:
    """The value of a flags expression made of ``re.X`` names and ``|``, else None."""
    if node is None:
        return 0
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "re":
        return int(getattr(re, node.attr))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        a, b = _flags(node.left), _flags(node.right)
        return None if a is None or b is None else a | b
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    return None


class Site:
    def __init__(self, file: str, func: Optional[str], call: str, line: int,
                 pattern: Any, flags: Optional[int]) -> None:
        self.file, self.func, self.call, self.line = file, func, call, line
        self.pattern, self.flags = pattern, flags  # pattern None: not a literal

    def __repr__(self) -> str:
        return f"{self.file}:{self.line} re.{self.call} in {self.func or '<module>'}"


@functools.lru_cache(maxsize=None)
def source_sites() -> List[Site]:
    """Every ``re.<function>(...)`` call in nvtopo's source, with its literal pattern if any."""
    sites: List[Site] = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node: ast.AST, func: Optional[str]) -> None:
            for child in ast.iter_child_nodes(node):
                inner = func
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    inner = child.name if func is None else func
                if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                        and isinstance(child.func.value, ast.Name) \
                        and child.func.value.id == "re" and child.func.attr in _RE_FUNCS:
                    name = child.func.attr
                    first = child.args[0] if child.args else None
                    literal = first.value if isinstance(first, ast.Constant) \
                        and isinstance(first.value, (str, bytes)) else None
                    pos = _RE_FUNCS[name]
                    flag_node = child.args[pos] if len(child.args) > pos else next(
                        (k.value for k in child.keywords if k.arg == "flags"), None)
                    sites.append(Site(rel, func, name, child.lineno, literal, _flags(flag_node)))
                visit(child, inner)

        visit(tree, None)
    return sites


class Timed:
    """A pattern to time: where it is, and whether it is only ever matched at the start."""

    def __init__(self, where: str, key: Tuple[str, str], anchored: bool) -> None:
        self.where, self.key, self.anchored = where, key, anchored


def all_patterns() -> Dict[Tuple[Any, int], Timed]:
    """Every pattern to time, as (pattern text, flags) -> :class:`Timed`.

    A pattern only used with ``match``/``fullmatch`` is timed with those (a search of an
    unanchored prefix is quadratic, but nvtopo never searches it); any other use, or none
    found (a pattern in a container), is timed with ``findall``.
    """
    uses = pattern_uses()
    out: Dict[Tuple[Any, int], Timed] = {}
    for mod, pats in named_patterns().items():
        for name, p in pats.items():
            how = uses.get(name, set()) if "#" not in name else set()
            anchored = bool(how) and how <= {"match", "fullmatch"}
            have = out.get((p.pattern, p.flags))
            if have is None or (have.anchored and not anchored):
                out[(p.pattern, p.flags)] = Timed(f"{mod}.{name.split('#')[0]}", (mod, name),
                                                  anchored)
    for s in source_sites():
        if s.call == "compile" and s.func is None:
            continue  # a module's own pattern: found in its globals above, with its uses
        if s.pattern is not None and s.flags is not None:
            p = re.compile(s.pattern, s.flags)
            anchored = s.call in ("match", "fullmatch")
            have = out.get((p.pattern, p.flags))
            if have is None or (have.anchored and not anchored):
                out[(p.pattern, p.flags)] = Timed(repr(s), (s.file, s.func or ""), anchored)
    return out


# --- adversarial text from a pattern's syntax tree -------------------------------------------

_POOL = "a0 Z_-.:,;/()[]{}!#\t\n\x00\x1b~xAgG9z=+*?<>@\\^$|'\"é٣²"


def _in_class(items: List[Tuple[Any, Any]], ch: str) -> bool:
    c = ord(ch)
    hit = False
    negate = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL" and av == c:
            hit = True
        elif name == "RANGE" and av[0] <= c <= av[1]:
            hit = True
        elif name == "CATEGORY":
            cat = str(av)
            test = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D",
                    "CATEGORY_SPACE": r"\s", "CATEGORY_NOT_SPACE": r"\S",
                    "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}.get(cat)
            if test and re.fullmatch(test, ch):
                hit = True
    return hit != negate


def _chars(op: Any, av: Any) -> List[str]:
    """Characters a one-character node accepts (a few, for pumping)."""
    name = str(op)
    if name == "LITERAL":
        return [chr(av)]
    if name == "NOT_LITERAL":
        return [c for c in _POOL if ord(c) != av][:3]
    if name == "ANY":
        return ["a", " "]
    if name == "IN":
        accepted = [c for c in _POOL if _in_class(av, c)]
        for sub, val in av:  # the ends of ranges and literals too
            if str(sub) == "RANGE":
                accepted += [chr(val[0]), chr(val[1])]
            elif str(sub) == "LITERAL":
                accepted.append(chr(val))
        return list(dict.fromkeys(c for c in accepted if _in_class(av, c)))[:12]
    return []


def _witness(seq: Any) -> str:
    """A short text the node list matches (close enough to reach what follows)."""
    out = []
    for op, av in seq:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            cs = _chars(op, av)
            out.append(cs[0] if cs else "")
        elif name == "BRANCH":
            out.append(_witness(av[1][0]))
        elif name == "SUBPATTERN":
            out.append(_witness(av[-1]))
        elif name == "ATOMIC_GROUP":
            out.append(_witness(av))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            out.append(_witness(av[2]) * av[0])
    return "".join(out)


def _literal_runs(seq: Any) -> Iterator[str]:
    run = ""
    for op, av in seq:
        name = str(op)
        if name == "LITERAL":
            run += chr(av)
            continue
        if len(run) > 1:
            yield run
        run = ""
        if name == "BRANCH":
            for alt in av[1]:
                yield from _literal_runs(alt)
        elif name == "SUBPATTERN":
            yield from _literal_runs(av[-1])
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            yield from _literal_runs(av[2])
    if len(run) > 1:
        yield run


def _repeats(seq: Any, prefix: str) -> Iterator[Tuple[str, Any, str]]:
    """(text reaching it, repeated body, text of what follows it) for every repetition."""
    seq = list(seq)
    for i, (op, av) in enumerate(seq):
        name = str(op)
        before = prefix + _witness(seq[:i])
        after = _witness(seq[i + 1:])
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            if av[1] is None or av[1] > 1:
                yield before, av[2], after
            yield from _repeats(av[2], before)
        elif name == "BRANCH":
            for alt in av[1]:
                yield from _repeats(alt, before)
        elif name == "SUBPATTERN":
            yield from _repeats(av[-1], before)
        elif name == "ATOMIC_GROUP":
            yield from _repeats(av, before)


def adversarial(pattern: "re.Pattern[Any]", size: int = SIZE) -> Iterator[Any]:
    """Text built to make ``pattern`` backtrack, if it can."""
    tree = sre_parse.parse(pattern.pattern if isinstance(pattern.pattern, str)
                           else pattern.pattern.decode("latin-1"), pattern.flags)
    runs = list(dict.fromkeys(_literal_runs(tree)))[:8]
    seen: Set[str] = set()
    for before, body, after in _repeats(tree, ""):
        pumps: List[str] = []
        for op, av in body:
            pumps += _chars(op, av)
            if str(op) == "BRANCH":
                pumps += [_witness(alt) for alt in av[1]]
        pumps += [_witness(body), after] + runs
        for pump in dict.fromkeys(p for p in pumps if p):
            body_text = pump * (size // len(pump) + 1)
            for start in dict.fromkeys([before, before + _witness(body), ""]):
                for tail in TAILS:
                    text = start + body_text[: size] + tail
                    if text not in seen:
                        seen.add(text)
                        yield text if isinstance(pattern.pattern, str) else text.encode(
                            "latin-1", "replace")


class OverBudget(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise OverBudget()


def slowest(pattern: "re.Pattern[Any]", anchored: bool = False,
            budget: float = BUDGET_S) -> Tuple[float, Any]:
    """The slowest ``findall`` (or ``match`` and ``fullmatch``) over the adversarial texts,
    stopping at the first over budget."""
    worst: Tuple[float, Any] = (0.0, "")
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for text in adversarial(pattern):
            start = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, budget * 1.5)  # a runaway match is stopped
            try:
                if anchored:
                    pattern.match(text)
                    pattern.fullmatch(text)
                else:
                    pattern.findall(text)
            except OverBudget:
                return (float("inf"), text)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            took = time.perf_counter() - start
            if took > worst[0]:
                worst = (took, text)
            if took > budget:
                return worst
    finally:
        signal.signal(signal.SIGALRM, old)
    return worst


def _show(text: Any) -> str:
    s = repr(text)
    return s if len(s) < 90 else s[:60] + f"... ({len(text)} characters)"


# --- the tests --------------------------------------------------------------------------------

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"),
                                reason="needs SIGALRM to stop a runaway match (POSIX)")

PATTERNS = all_patterns()


def test_patterns_are_found():
    """The discovery sees the parsers' patterns (a walk that finds nothing passes nothing)."""
    mods = module_patterns()
    topo = {p.pattern for m in ("nvtopo.probes.topo.scan", "nvtopo.probes.topo.matrix")
            for p in mods[m]}
    nvt = {p.pattern for p in mods["nvtopo.probes.nvml.paste"]}
    assert {r"\S+", r"^\s*(NIC[0-9]+)\s*:\s*(\S+)\s*$"} <= topo
    assert r"^\s*Link ([0-9]+): (\S+) GB/s\s*$" in nvt
    assert len(mods["nvtopo.probes.sysfs.parse"]) >= 3 and len(mods["nvtopo.simulate.faults"]) >= 9
    assert len(PATTERNS) >= 80


def test_every_compile_site_is_found_or_allowed():
    """A ``re.compile`` at module level is among that module's patterns; any other site
    with a pattern built at run time is on the allow-list, with its reason."""
    mods = module_patterns()
    unknown = []
    for s in source_sites():
        if s.pattern is None:
            if s.func is None and s.call == "compile":
                continue  # module level, built from constants (an f-string): checked below
            if (s.file, s.func) not in ALLOWED_DYNAMIC:
                unknown.append(repr(s))
        elif s.func is None and s.call == "compile":
            name = "nvtopo." + s.file[:-3].replace("/", ".").replace(".__init__", "")
            if not any(p.pattern == s.pattern for p in mods[name]):
                unknown.append(f"{s!r}: not found in the module's globals")
    for s in source_sites():  # module-level f-string patterns: the module holds enough
        if s.pattern is None and s.func is None and s.call == "compile":
            name = "nvtopo." + s.file[:-3].replace("/", ".").replace(".__init__", "")
            count = sum(1 for t in source_sites()
                        if t.file == s.file and t.func is None and t.call == "compile")
            assert len(mods[name]) >= count, f"{s!r}: module holds fewer patterns than sites"
    assert unknown == [], "regular expressions nobody times:\n" + "\n".join(unknown)
    used = {(s.file, s.func) for s in source_sites() if s.pattern is None}
    assert set(ALLOWED_DYNAMIC) <= used, "stale allow-list entries"


def _params() -> List[Any]:
    out = []
    for key in sorted(PATTERNS, key=repr):
        t = PATTERNS[key]
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_SLOW[t.key])] \
            if t.key in KNOWN_SLOW else []
        out.append(pytest.param(key, marks=marks, id=f"{t.where}:{_show(key[0])[:50]}"))
    return out


def _over(pattern: "re.Pattern[Any]", where: str, anchored: bool) -> None:
    took, text = slowest(pattern, anchored)
    shown = f"over {1.5 * BUDGET_S}" if took == float("inf") else f"{took:.2f}"
    assert took <= BUDGET_S, (f"{where}: {pattern.pattern!r} took {shown} s "
                              f"({'match' if anchored else 'findall'}) on {_show(text)}")


@pytest.mark.parametrize("key", _params())
def test_pattern_runs_in_linear_time(key):
    t = PATTERNS[key]
    _over(re.compile(*key), t.where, t.anchored)


def test_known_slow_entries_name_patterns_that_exist():
    assert set(KNOWN_SLOW) <= {t.key for t in PATTERNS.values()}


def _layout_name_patterns() -> List[str]:
    import json

    found = set()
    for path in sorted((PKG / "layouts").glob("*.json")):
        pat = (json.loads(path.read_text(encoding="utf-8")).get("gpus") or {}).get("name_pattern")
        if isinstance(pat, str):
            found.add(pat)
    return sorted(found)


class _NameSearch:
    """A layout name pattern as the checks apply it (:func:`nvtopo.layouts.name_matches`),
    with the pattern interface :func:`slowest` times."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._rx = re.compile(pattern, re.I)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rx, name)

    def findall(self, text: Any) -> Any:
        from nvtopo.layouts import name_matches

        return name_matches(self.pattern, text) if isinstance(text, str) else None


@pytest.mark.parametrize("pattern", _layout_name_patterns())
def test_builtin_layout_name_patterns_run_in_linear_time(pattern):
    """checks/gpu.py and checks/select.py search GPU names with the layouts' name patterns;
    a name from a snapshot can be megabytes long, and ``X.*Y`` is quadratic in it (40,000
    characters took 9 s): only the first NAME_SEARCH_LIMIT characters are searched."""
    took, text = slowest(_NameSearch(pattern))
    assert took <= BUDGET_S, f"layout name pattern {pattern!r} took {took:.2f} s on {_show(text)}"


def test_the_raw_layout_name_patterns_are_slow_without_the_limit():
    """The limit is what keeps them fast: the raw pattern crawls on the same input."""
    took, _ = slowest(re.compile("H100.*(HBM3|SXM)", re.I))
    assert took > BUDGET_S


#: Patterns this project had, each of which hung or crawled on real-looking input.
KNOWN_BAD = {
    "topo_text glued header (exponential)":
        re.compile(r"^GPU\d+(?:GPU\d+|NIC\d+|[A-Za-z][\w.-]*\d)*$"),
    "topo_text glued label findall (quadratic)":
        re.compile(r"GPU\d+|NIC\d+|[a-z]+\d*_(?:[a-z]+_)?\d+"),
    "nvml_text -q key/value (quadratic) (match)":
        re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9 /()-]*?)\s*:\s*(.*?)\s*$"),
    "nvml_text Fabric line, re.M (quadratic)": re.compile(r"^\s*Fabric\s*$", re.M),
    "the textbook case (match)": re.compile(r"^(a+)+$"),
}


@pytest.mark.parametrize("name", sorted(KNOWN_BAD))
def test_the_budget_catches_known_backtracking_patterns(name):
    took, text = slowest(KNOWN_BAD[name], anchored=name.endswith("(match)"))
    assert took > BUDGET_S, f"{name}: the adversarial texts did not find it ({took:.3f} s)"
