"""The documentation resolves, and nothing points outside the repository.

* Every relative link in a Markdown file names a file of the repository, and its ``#anchor``
  a heading of that file.
* Every ``docs/NAME.md`` citation anywhere in the repository (code, tests, fixtures, layouts,
  schemas, docs) names a page that exists; with a section (``docs/layouts.md §4.7``,
  ``docs/layouts.md 4.7``, ``nvml.md section 8``) a section that page has.
* No file cites a path outside the repository (``/work/...``, ``../shared``, the shared
  corpus); the tests that read the development machines' shared corpus as test data are the
  listed exceptions, and only in the form ``Path("/work/shared/corpus...")``.
* ``fixtures/topo-corpus/NN`` citations name a corpus file.
* The README stays short and keeps the quick-start test command ``.ci/run`` runs; the docs
  index lists every page; every bundled layout is described in docs/layouts.md.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
THIS = Path(__file__).resolve()

#: Files that are no text to read for citations (binary or generated data).
_SKIP_SUFFIXES = {".png", ".jpg", ".gif", ".svg", ".pyc", ".gz", ".whl", ".prom"}
#: Directories never scanned when git cannot list the repository's files.
_SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist",
              "venv39", ".whl"}


def _repo_files() -> List[Path]:
    """The repository's files: tracked and untracked-but-not-ignored (git), else a walk."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
        files = [ROOT / p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
        files = [p for p in files if p.is_file()]
        if files:
            return sorted(files)
    except (OSError, subprocess.SubprocessError):
        pass
    found = []
    for p in ROOT.rglob("*"):
        rel = p.relative_to(ROOT).parts
        if any(part in _SKIP_DIRS or part.endswith(".egg-info") for part in rel):
            continue
        if p.is_file():
            found.append(p)
    return sorted(found)


FILES = _repo_files()


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


TEXT_FILES: Dict[Path, str] = {p: _text(p) for p in FILES
                               if p.suffix not in _SKIP_SUFFIXES and p.stat().st_size < 4_000_000}
MARKDOWN = sorted(p for p in TEXT_FILES if p.suffix == ".md")


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


# --- headings, anchors and sections ---------------------------------------------------------

_FENCE = re.compile(r"^(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _headings(text: str) -> List[str]:
    """The headings of a Markdown text, outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            out.append(m.group(2))
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def _anchors(text: str) -> Set[str]:
    seen: Dict[str, int] = {}
    out = set()
    for h in _headings(text):
        base = _slug(h)
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def _sections(text: str) -> Set[str]:
    """Section numbers of a page: ``## 3. Rules`` gives 3, ``### 4.7 DGX H100`` 4.7."""
    out = set()
    for h in _headings(text):
        m = re.match(r"(\d+(?:\.\d+)*)[.\s]", h + " ")
        if m:
            out.add(m.group(1))
    return out


# --- relative links --------------------------------------------------------------------------

_LINK = re.compile(r"(?<!\!)\[[^\]\n]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def _links(text: str) -> Iterator[Tuple[int, str]]:
    fenced = False
    for no, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in _LINK.finditer(_CODE_SPAN.sub("", line)):
            yield no, m.group(1)


def _link_cases() -> List[Tuple[str, int, str]]:
    return [(_rel(p), no, target) for p in MARKDOWN for no, target in _links(TEXT_FILES[p])
            if not re.match(r"[a-z][a-z0-9+.-]*:", target)]  # http:, mailto: are not files


def test_markdown_files_are_found():
    names = {_rel(p) for p in MARKDOWN}
    assert {"README.md", "docs/README.md", "docs/commands.md", "docs/json.md"} <= names


@pytest.mark.parametrize("where,line,target", _link_cases(),
                         ids=[f"{w}:{n}" for w, n, _ in _link_cases()])
def test_relative_link_resolves(where, line, target):
    source = ROOT / where
    path, _, anchor = target.partition("#")
    dest = (source.parent / path).resolve() if path else source
    assert dest == ROOT or ROOT in dest.parents, f"{where}:{line}: {target} leaves the repository"
    assert dest.exists(), f"{where}:{line}: {target}: no such file"
    if anchor:
        assert dest.is_file() and dest.suffix == ".md", f"{where}:{line}: {target}: anchor on a non-page"
        assert anchor in _anchors(dest.read_text(encoding="utf-8")), \
            f"{where}:{line}: {target}: no heading #{anchor} in {_rel(dest)}"


def test_anchor_slugs_match_github():
    # The slug rule the link test relies on, on headings of these pages.
    assert _slug("5. `nvtopo check`") == "5-nvtopo-check"
    assert _slug("3. `nvtopo audit --format prometheus`") == "3-nvtopo-audit---format-prometheus"
    assert _slug("5.3 Layout selection") == "53-layout-selection"
    assert _sections("## 3. Rules\n### 4.7 DGX H100\n```\n## 9. in code\n```\n") == {"3", "4.7"}


# --- docs/NAME.md citations ------------------------------------------------------------------

_SECTION = r"(?:`?\s*§\s*(?P<s1>\d+(?:\.\d+)*)|`?\s+section\s+(?P<s2>\d+(?:\.\d+)*)|`?\s+(?P<s3>\d+\.\d+)(?![\d.]*\w))"
_CITE_DOCS = re.compile(r"docs/(?P<page>[A-Za-z0-9_-]+)\.md(?:" + _SECTION + ")?")
#: A page named without ``docs/`` but with a section: ``nvml.md section 8``.
_CITE_BARE = re.compile(r"(?<![\w/.-])(?P<page>[A-Za-z0-9_-]+)\.md(?:`?\s*§\s*(?P<s1>\d+(?:\.\d+)*)"
                        r"|`?\s+section\s+(?P<s2>\d+(?:\.\d+)*))")


def _citations() -> List[Tuple[str, int, str, str]]:
    out = []
    pages = {p.stem for p in DOCS.glob("*.md")}
    for path, text in TEXT_FILES.items():
        if path == THIS:
            continue
        for no, line in enumerate(text.splitlines(), 1):
            for m in _CITE_DOCS.finditer(line):
                if m.group("page").isupper():  # a placeholder: docs/NAME.md
                    continue
                sec = m.group("s1") or m.group("s2") or m.group("s3") or ""
                out.append((_rel(path), no, m.group("page"), sec))
            for m in _CITE_BARE.finditer(line):
                if m.group("page") in pages or path.parent == DOCS:
                    sec = m.group("s1") or m.group("s2") or ""
                    out.append((_rel(path), no, m.group("page"), sec))
    return out


CITATIONS = _citations()


def test_citations_are_found():
    # The scan sees the citations known to be there (a regex that stopped matching would
    # make every other citation test pass vacuously).
    found = {(w, p, s) for w, _, p, s in CITATIONS}
    assert ("fixtures/sysfs/README.md", "layouts", "4.7") in found
    assert ("fixtures/sysfs/dgx-h100.sysfs", "layouts", "4.7") in found
    assert ("nvtopo/probes/nvml/walk.py", "nvml", "8") in found
    assert any(w.startswith("docs/schemas/") and p == "json" for w, p, _ in found)


@pytest.mark.parametrize("where,line,page,section", CITATIONS,
                         ids=[f"{w}:{n}:{p}{'§' + s if s else ''}" for w, n, p, s in CITATIONS])
def test_docs_citation_resolves(where, line, page, section):
    target = DOCS / f"{page}.md"
    assert target.is_file(), f"{where}:{line}: docs/{page}.md does not exist"
    if section:
        have = _sections(target.read_text(encoding="utf-8"))
        assert section in have, (f"{where}:{line}: docs/{page}.md has no section {section} "
                                 f"(it has {', '.join(sorted(have))})")


# --- nothing outside the repository ----------------------------------------------------------

_OUTSIDE = re.compile(r"/work/|\.\./shared|shared/docs|shared/corpus"
                      r"|(?<![\w-])corpus/(?:ib|nvlink|topo)\b")
#: Tests that read the development machines' shared corpus as test data (and skip, or use
#: their fixtures copy, without it): only this form of the path is allowed there.
DATA_READERS = {"tests/test_cli.py", "tests/test_snapshot.py", "tests/test_hostile_parsers.py",
                "tests/test_corpus.py", "tests/test_partial_evidence.py",
                "tests/test_ticket_inputs.py", "tests/test_dcgmi_text.py"}
_DATA_PATH = re.compile(r'Path\("/work/shared/corpus(?:/[a-z]+)?"\)')


def test_no_pointer_outside_the_repository():
    bad = []
    for path, text in TEXT_FILES.items():
        if path == THIS:
            continue
        rel = _rel(path)
        for no, line in enumerate(text.splitlines(), 1):
            if rel in DATA_READERS:
                line = _DATA_PATH.sub("", line)
            if _OUTSIDE.search(line):
                bad.append(f"{rel}:{no}: {line.strip()[:120]}")
    assert bad == [], "paths outside the repository:\n" + "\n".join(bad)


def test_data_readers_still_read_the_shared_corpus_and_say_where():
    # The exceptions above are real (else the list hides nothing and should shrink).
    for rel in DATA_READERS:
        assert _DATA_PATH.search(TEXT_FILES[ROOT / rel]), rel


_CORPUS_CITE = re.compile(r"fixtures/topo-corpus/(\d\d)(?![\d_])")


def test_corpus_citations_name_a_file():
    cited = []
    for path, text in TEXT_FILES.items():
        for m in _CORPUS_CITE.finditer(text):
            cited.append((_rel(path), m.group(1)))
    assert cited, "no fixtures/topo-corpus/NN citation found"
    corpus = ROOT / "fixtures" / "topo-corpus"
    for where, nn in cited:
        assert list(corpus.glob(f"{nn}_*.txt")), f"{where}: fixtures/topo-corpus/{nn} names no file"


# --- the README and the docs index ----------------------------------------------------------


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move detail to docs/"


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -q"
    assert command in ci.splitlines()
    assert command in readme.splitlines()
    assert ".venv/bin/nvtopo show --example dgx-h100" in readme
    # the first five minutes: activating the environment, checking one's own node, the time
    assert ". .venv/bin/activate" in readme and "`nvtopo check` with no arguments" in readme
    assert len(readme.splitlines()) < 200


def test_docs_index_lists_every_page():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "README.md":
            assert f"]({page.name})" in index, f"docs/README.md does not link {page.name}"


def test_every_bundled_layout_is_described():
    text = (DOCS / "layouts.md").read_text(encoding="utf-8")
    names = sorted(p.stem for p in (ROOT / "nvtopo" / "layouts").glob("*.json"))
    assert names
    for name in names:
        assert f"**`{name}`**" in text, f"docs/layouts.md does not describe the layout {name}"
