"""Golden outputs of every nvtopo command: the case list, the inputs, the runner.

Shared by ``tests/test_golden.py`` (which compares) and the regeneration
command (which rewrites ``tests/golden/``)::

    .venv/bin/python tests/golden_cases.py --update   # rewrite every golden file
    .venv/bin/python tests/golden_cases.py --check    # compare, as the test does
    .venv/bin/python tests/golden_cases.py --list     # the cases and their arguments

A case is one command line (``nvtopo show --from topo/01_....txt --format json``).
Its inputs are made in a scratch directory (fixture files copied in, NVML
fixture machines recorded into snapshots, sysfs fixture trees materialised,
simulations written by ``nvtopo simulate``); every command runs in-process
through the CliRunner with that directory as the working directory, so the
outputs hold short relative paths, never a temporary directory's name.  The
console is pinned: 120 columns, no colour, no terminal.

Each case's standard output is stored verbatim (after :func:`normalise`) in
``tests/golden/<case name>`` (identical outputs once, under the first case that
printed it); its exit status, standard error, arguments and output file in
``tests/golden/index.json``.  tests/golden/README.md says what is recorded and
the rule for changing it.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # `python tests/golden_cases.py` and `-m tests.golden_cases`
    sys.path.insert(0, str(HERE))

from cli_runner import make_runner  # noqa: E402

REPO = HERE.parent
FIXTURES = REPO / "fixtures"
GOLDEN = HERE / "golden"
INDEX = GOLDEN / "index.json"

#: The console every case runs under: a fixed width, no colour, no terminal features.
ENV: Dict[str, Optional[str]] = {
    "COLUMNS": "120", "LINES": "50", "NO_COLOR": "1", "TERM": "dumb",
    "FORCE_COLOR": None, "CLICOLOR_FORCE": None, "TTY_COMPATIBLE": None,
    "TTY_INTERACTIVE": None, "JUPYTER_COLUMNS": None, "JUPYTER_LINES": None,
}

# --- what legitimately varies between runs and machines -------------------------------------

_VERSION = re.compile(r'("nvtopo_version": ?)"[^"\\]*"')
_DIGEST = re.compile(r'("(?:code_sha256|file_sha256)": ?)"[0-9a-f]{64}"')
_DURATION = re.compile(r'("duration_s": ?)-?[0-9][0-9.e+-]*')
_TIME = re.compile(r'("time": ?)"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(?:Z|[+-][0-9]{2}:?[0-9]{2})?"')
_UID = re.compile(r'("uid": ?)[0-9]+')


def normalise(text: str) -> str:
    """Replace what varies between runs and machines, and nothing else.

    Only JSON members, in both spellings (``"key": value`` and a snapshot's
    compact ``"key":value``), keep their key and get a string placeholder:

    * ``"nvtopo_version"`` (models, ib documents and snapshots state the version
      of the nvtopo that wrote them): ``"<VERSION>"``, so a version bump is no diff;
    * ``"code_sha256"``, ``"file_sha256"`` (a snapshot's seal: a digest of the
      deriving source, which any code change changes, and of the file):
      ``"<SHA256>"``;
    * ``"duration_s"`` (how long a probe took: NVML fixture machines and sysfs
      trees are probed at test time): ``"<DURATION>"``;
    * ``"time"`` (when a live probe ran): ``"<TIME>"``;
    * ``"uid"`` (who read a sysfs tree): ``"<UID>"``.

    Nothing else varies: every case runs in its scratch directory with relative
    paths (no temporary directory's name reaches an output), simulations are
    seeded, and no case asks this machine (``--sysfs-root`` names a foreign
    tree, so nvidia-smi, NVML and psutil are not run).
    """
    text = _VERSION.sub(r'\1"<VERSION>"', text)
    text = _DIGEST.sub(r'\1"<SHA256>"', text)
    text = _DURATION.sub(r'\1"<DURATION>"', text)
    text = _TIME.sub(r'\1"<TIME>"', text)
    return _UID.sub(r'\1"<UID>"', text)


# --- the cases -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    #: Where its standard output is stored, relative to tests/golden/ (``.txt``: a Rich
    #: table; ``.json``, ``.svg``, ``.prom``: that format); also the pytest id.
    name: str
    #: Command-line arguments; paths are relative to the scratch directory (see Inputs).
    args: Tuple[str, ...]
    #: Inputs (keys of :class:`Inputs`) the case needs made first.
    needs: Tuple[str, ...] = ()


#: One fault spec of each kind (nvtopo.simulate.faults.KINDS) that applies to the dgx-h100
#: layout (all but the C2C kinds: FAULTS_GH200).
FAULTS_H100: Dict[str, str] = {
    "nvlink-down": "nvlink-down:GPU3:7",
    "nvlink-degraded": "nvlink-degraded:GPU2-GPU6",
    "gpu-missing": "gpu-missing:GPU7",
    "ib-port-down": "ib-port-down:mlx5_4",
    "ib-rate": "ib-rate:mlx5_5:200",
    "pcie-width": "pcie-width:GPU5:8",
    "pcie-gen": "pcie-gen:GPU5:3",
    "nic-affinity-swap": "nic-affinity-swap:mlx5_0:mlx5_3",
    "nic-rename": "nic-rename:mlx5_0:ibp12s0",
    "nic-far": "nic-far:mlx5_3",
    "fabric-not-started": "fabric-not-started",
    "counters": "counters:mlx5_6:symbol_error=1000",
    "peermem-missing": "peermem-missing",
    "nvme-far": "nvme-far:3",
    "nvme-bunched": "nvme-bunched:3",
    "nvme-missing": "nvme-missing:5",
    "iommu-on": "iommu-on",
    "no-nvidia-fs": "no-nvidia-fs",
}

#: The same for dgx-a100, every kind that applies to that layout.
FAULTS_A100: Dict[str, str] = {
    "nvlink-down": "nvlink-down:GPU3:7",
    "nvlink-degraded": "nvlink-degraded:GPU2-GPU6",
    "gpu-missing": "gpu-missing:GPU7",
    "ib-port-down": "ib-port-down:mlx5_4",
    "ib-rate": "ib-rate:mlx5_1:100",
    "pcie-width": "pcie-width:GPU5:8",
    "pcie-gen": "pcie-gen:GPU5:3",
    # no nic-affinity-swap: the dgx-a100 layout names no NIC per GPU (simulate refuses it)
    "nic-rename": "nic-rename:mlx5_0:ibp12s0",
    "nic-far": "nic-far:mlx5_2",
    "fabric-not-started": "fabric-not-started",
    "counters": "counters:mlx5_2:symbol_error=1000",
    "peermem-missing": "peermem-missing",
}

#: The kinds only Grace superchips have (NVLink-C2C), for the gh200-4 layout.
FAULTS_GH200: Dict[str, str] = {
    "c2c-down": "c2c-down:GPU1",
    "c2c-links": "c2c-links:GPU2:6",
}

FAULTS: Dict[str, Dict[str, str]] = {"dgx-h100": FAULTS_H100, "dgx-a100": FAULTS_A100,
                                     "gh200-4": FAULTS_GH200}

#: Layouts whose healthy simulation also records `show --format json` (the full model).
SHOW_JSON_LAYOUTS = ("dgx-h100", "dgx-a100", "azure-nd96isr-h100-v5", "hgx-a100-4",
                     "gb200-nvl72-tray")

#: The layout whose simulated snapshot is itself recorded (the smallest: 150 kB).
SNAPSHOT_LAYOUT = "dgx-station-v100"

#: Faults whose `check --format svg` is recorded.
SVG_FAULTS = ("nvlink-down", "nic-affinity-swap")


def _fixture_names(sub: str, pattern: str) -> List[str]:
    return sorted(p.name for p in (FIXTURES / sub).glob(pattern))


def _layouts() -> List[str]:
    from nvtopo import layouts

    return list(layouts.names())


def _table_json(name: str, args: Sequence[str], needs: Sequence[str]) -> List[Case]:
    """The table (``NAME.txt``) and the JSON (``NAME.json``) of one command."""
    return [Case(f"{name}.txt", tuple(args), tuple(needs)),
            Case(f"{name}.json", tuple(args) + ("--format", "json"), tuple(needs))]


def sim_key(layout: str, fault: Optional[str] = None) -> str:
    return f"sim/{layout}" + (f"+{fault}" if fault else "") + ".json"


def cases() -> List[Case]:
    """Every case, in a stable order; names are unique."""
    out: List[Case] = []

    # the bundled example
    out += _table_json("example/dgx-h100/show", ["show", "--example", "dgx-h100"], [])

    # topo corpus: show, check (table and json), layouts capture
    for f in _fixture_names("topo-corpus", "*.txt"):
        key = f"topo/{f}"
        stem = f"topo/{Path(f).stem}"
        out += _table_json(f"{stem}/show", ["show", "--from", key], [key])
        out += _table_json(f"{stem}/check", ["check", "--from", key], [key])
        out.append(Case(f"{stem}/layouts-capture.json",
                        ("layouts", "capture", "--from", key, "--name", "golden"), (key,)))

    # NVML fixture machines, recorded into snapshots: show, links, check
    for f in _fixture_names("nvml", "*.json"):
        key = f"nvml/{f}"
        stem = f"nvml/{Path(f).stem}"
        for cmd in ("show", "links", "check"):
            out += _table_json(f"{stem}/{cmd}", [cmd, "--from", key], [key])

    # pasted nvidia-smi nvlink / -q text: links, show, check
    for f in _fixture_names("nvml-text", "*.txt"):
        key = f"nvml-text/{f}"
        stem = f"nvml-text/{Path(f).stem}"
        for cmd in ("links", "show", "check"):
            out += _table_json(f"{stem}/{cmd}", [cmd, "--from", key], [key])

    # pasted gdscheck -p: check (GPUDirect Storage facts only)
    for f in _fixture_names("gds-text", "*.txt"):
        key = f"gds-text/{f}"
        out += _table_json(f"gds-text/{Path(f).stem}/check", ["check", "--from", key], [key])

    # pasted nvidia-imex-ctl output: check and show (the IMEX domain only, docs/imex.md)
    for f in _fixture_names("imex-text", "*.txt") + _fixture_names("imex-text", "*.json"):
        key = f"imex-text/{f}"
        out += _table_json(f"imex-text/{Path(f).stem}/check", ["check", "--from", key], [key])
        out += _table_json(f"imex-text/{Path(f).stem}/show", ["show", "--from", key], [key])

    # sysfs fixture trees: ib, show, check with --sysfs-root
    for f in _fixture_names("sysfs", "*.sysfs"):
        key = f"sysfs/{Path(f).stem}"
        for cmd in ("ib", "show", "check"):
            out += _table_json(f"{key}/{cmd}", [cmd, "--sysfs-root", key], [key])

    # healthy simulations of every bundled layout
    for lay in _layouts():
        key = sim_key(lay)
        stem = f"simulate/{lay}"
        out += _table_json(f"{stem}/check", ["check", "--from", key], [key])
        # against its own layout too: auto picks the generic one for some cloud layouts
        out.append(Case(f"{stem}/check-own-layout.json",
                        ("check", "--from", key, "--layout", lay, "--format", "json"), (key,)))
        out.append(Case(f"{stem}/links.json", ("links", "--from", key, "--format", "json"),
                        (key,)))
        out.append(Case(f"{stem}/ib.json", ("ib", "--from", key, "--format", "json"), (key,)))
        if lay in SHOW_JSON_LAYOUTS:
            out.append(Case(f"{stem}/show.json", ("show", "--from", key, "--format", "json"),
                            (key,)))

    # faults injected into dgx-h100 and dgx-a100
    for lay, faults in FAULTS.items():
        healthy = sim_key(lay)
        for kind in faults:
            key = sim_key(lay, kind)
            stem = f"fault/{lay}/{kind}"
            out += _table_json(f"{stem}/check", ["check", "--from", key], [key])
            out.append(Case(f"{stem}/links.json", ("links", "--from", key, "--format", "json"),
                            (key,)))
            out.append(Case(f"{stem}/ib.txt", ("ib", "--from", key), (key,)))
            out += _table_json(f"{stem}/diff", ["diff", healthy, key], [healthy, key])
            if lay == "dgx-h100" and kind in SVG_FAULTS:
                out.append(Case(f"{stem}/check.svg", ("check", "--from", key, "--format", "svg"),
                                (key,)))

    # audit over a mixed directory; check --format prometheus of a healthy and a faulty node
    for fmt, ext in (("table", "txt"), ("json", "json"), ("prometheus", "prom")):
        out.append(Case(f"audit/mixed.{ext}", ("audit", "audit", "--jobs", "1", "--format", fmt),
                        ("audit",)))
    # the same through worker processes (the default on a multi-core node): the same output
    out.append(Case("audit/mixed-jobs2.json",
                    ("audit", "audit", "--jobs", "2", "--format", "json"), ("audit",)))
    for label, key in (("healthy", sim_key("dgx-h100")),
                       ("nvlink-down", sim_key("dgx-h100", "nvlink-down"))):
        out.append(Case(f"prometheus/check-dgx-h100-{label}.prom",
                        ("check", "--from", key, "--format", "prometheus"), (key,)))

    # the snapshot documents themselves: a pasted topo text and nvlink text turned into
    # snapshots, a sysfs tree captured, one (small) simulation, and that simulation
    # rewritten by `snapshot --from` (the same bytes: stored once)
    for key in ("topo/08_2x-gtx1080ti-desktop-phb-numa-na.txt",
                "topo/01_hgx-a100-8gpu-nv12-10nic-tabs.txt",
                "nvml-text/nvlink_e_h100_excerpt.txt"):
        out.append(Case(f"snapshot/{Path(key).stem}.json", ("snapshot", "--from", key), (key,)))
    for tree in ("vm", "roce-bond"):
        key = f"sysfs/{tree}"
        out.append(Case(f"snapshot/sysfs-{tree}.json", ("snapshot", "--sysfs-root", key), (key,)))
    out.append(Case(f"snapshot/simulate-{SNAPSHOT_LAYOUT}.json",
                    ("simulate", SNAPSHOT_LAYOUT, "--seed", "0")))
    key = sim_key(SNAPSHOT_LAYOUT)
    out.append(Case(f"snapshot/resealed-{SNAPSHOT_LAYOUT}.json", ("snapshot", "--from", key),
                    (key,)))

    # bad input: one line on stderr, exit 2
    topo08 = "topo/08_2x-gtx1080ti-desktop-phb-numa-na.txt"
    for name, args, needs in (
            ("check-unknown-layout", ("check", "--from", topo08, "--layout", "no-such"),
             (topo08,)),
            ("show-missing-file", ("show", "--from", "no-such-file.json"), ()),
            ("show-not-a-snapshot", ("show", "--from", "audit/f-not-a-snapshot.json"),
             ("audit",)),
            ("check-binary", ("check", "--from", "audit/g-binary.txt"), ("audit",)),
            ("ib-without-sysfs", ("ib", "--from", topo08), (topo08,)),
            ("links-without-nvlink", ("links", "--from", topo08), (topo08,)),
            ("layouts-show-unknown", ("layouts", "show", "no-such"), ()),
            ("simulate-bad-fault", ("simulate", "dgx-h100", "--fault", "nvlink-down:GPU9:1"),
             ()),
            ("simulate-fault-not-applicable",
             ("simulate", "dgx-a100", "--fault", FAULTS_H100["nic-affinity-swap"]), ())):
        out.append(Case(f"errors/{name}.txt", args, needs))
    topo18 = "topo/18_2x-l4-sys-cross-numa-tabs-no-legend.txt"
    out.append(Case("diff/two-topo-texts.txt", ("diff", topo08, topo18), (topo08, topo18)))
    out.append(Case("diff/two-topo-texts.json", ("diff", topo08, topo18, "--format", "json"),
                    (topo08, topo18)))

    # layouts
    out.append(Case("layouts/list.txt", ("layouts",)))
    out.append(Case("layouts/list.json", ("layouts", "--format", "json")))
    out.append(Case("layouts/show-dgx-h100.json", ("layouts", "show", "dgx-h100")))
    out.append(Case("layouts/list-alias.json", ("layouts", "list", "--format", "json")))
    out.append(Case("layouts/show-dgx-h100.txt", ("layouts", "show", "dgx-h100", "--format",
                                                  "table")))

    names = [c.name for c in out]
    assert len(names) == len(set(names)), "duplicate golden case names"
    return out


# --- the inputs ------------------------------------------------------------------------------

#: The mixed audit directory: name -> how it is made.
AUDIT_FILES = {
    "a-healthy.json": ("sim", sim_key("dgx-h100")),
    "b-nvlink-down.json": ("sim", sim_key("dgx-h100", "nvlink-down")),
    "c-gpu-missing-a100.json": ("sim", sim_key("dgx-a100", "gpu-missing")),
    "d-ticket.txt": ("copy", "topo-corpus/21_h100-8gpu-nv18-8nic-misaligned-columns-sglang.txt"),
    "e-truncated.json": ("truncated", sim_key("hgx-a100-4")),
    "f-not-a-snapshot.json": ("text", '{"kind": "something-else", "items": [1, 2, 3]}\n'),
    "g-binary.txt": ("bytes", bytes(range(256)).hex()),
    "h-dangling.json": ("symlink", "no-such-file.json"),
}


class Inputs:
    """The scratch directory the cases run in; each input is made once, on first need.

    Keys are paths relative to the directory:
    ``topo/<file>``, ``nvml-text/<file>`` (fixture copies), ``nvml/<machine>.json``
    (a fixture machine recorded by the real NVML probe against the fake library),
    ``sysfs/<name>`` (a materialised tree), ``sim/<layout>[+<fault kind>].json``
    (``nvtopo simulate --seed 0``), ``audit`` (the mixed directory).
    """

    def __init__(self, root: Optional[str] = None) -> None:
        self._own = root is None
        self.root = root or tempfile.mkdtemp(prefix="nvtopo-golden-")
        self._made: Dict[str, bool] = {}

    def close(self) -> None:
        if self._own:
            shutil.rmtree(self.root, ignore_errors=True)

    def path(self, key: str) -> str:
        return os.path.join(self.root, key)

    def need(self, key: str) -> None:
        if self._made.get(key):
            return
        dest = self.path(key)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        kind, _, rest = key.partition("/")
        if kind == "topo":
            shutil.copyfile(FIXTURES / "topo-corpus" / rest, dest)
        elif kind in ("nvml-text", "gds-text", "imex-text"):
            shutil.copyfile(FIXTURES / kind / rest, dest)
        elif kind == "nvml":
            import nvml_fake

            doc = nvml_fake.snapshot_doc(Path(rest).stem)
            with open(dest, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, indent=1)
        elif kind == "sysfs":
            from nvtopo import fakesys

            os.makedirs(dest)
            fakesys.load_file(str(FIXTURES / "sysfs" / f"{rest}.sysfs"), dest)
        elif kind == "sim":
            stem = Path(rest).stem
            layout, _, fault = stem.partition("+")
            args = ["simulate", layout, "--seed", "0", "-o", key]
            if fault:
                args += ["--fault", FAULTS[layout][fault]]
            code, _out, err = invoke(args, self.root)
            if code != 0:
                raise RuntimeError(f"nvtopo {' '.join(args)} failed ({code}): {err}")
        elif key == "audit":
            os.makedirs(dest, exist_ok=True)
            for name, (how, what) in AUDIT_FILES.items():
                target = os.path.join(dest, name)
                if how == "sim":
                    self.need(what)
                    shutil.copyfile(self.path(what), target)
                elif how == "copy":
                    shutil.copyfile(FIXTURES / what, target)
                elif how == "truncated":
                    self.need(what)
                    with open(self.path(what), "rb") as fh:
                        data = fh.read()
                    with open(target, "wb") as fh:
                        fh.write(data[: len(data) // 2])
                elif how == "bytes":
                    with open(target, "wb") as fh:
                        fh.write(bytes.fromhex(what))
                elif how == "symlink":
                    os.symlink(what, target)
                else:
                    with open(target, "w", encoding="utf-8") as fh:
                        fh.write(what)
        else:
            raise KeyError(f"no such golden input: {key}")
        self._made[key] = True


@contextlib.contextmanager
def _cwd(path: str) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


_RUNNER = None


def invoke(args: Sequence[str], cwd: str) -> Tuple[int, str, str]:
    """Run ``nvtopo ARGS`` in-process in ``cwd``: (exit status, stdout, stderr), unnormalised.

    A command that raises (a traceback, not a clean exit) is an error here, never a record.
    """
    global _RUNNER
    from nvtopo.cli import app

    if _RUNNER is None:
        _RUNNER = make_runner()
    with _cwd(cwd):
        result = _RUNNER.invoke(app, list(args), env=ENV)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise RuntimeError(f"nvtopo {' '.join(args)} raised {result.exception!r}") \
            from result.exception
    try:
        err = result.stderr
    except ValueError:  # click 8.1 with mixed streams: never, make_runner separates them
        err = ""
    return result.exit_code, result.stdout, err


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str


def run_case(case: Case, inputs: Inputs) -> Outcome:
    for key in case.needs:
        inputs.need(key)
    code, out, err = invoke(case.args, inputs.root)
    return Outcome(code, normalise(out), normalise(err))


# --- the golden record -----------------------------------------------------------------------
#
# index.json: case name -> {"args", "exit_code", "stderr", "stdout"}.  "stdout" names the file
# under tests/golden/ holding the expected standard output: the case's own name, or the name
# of the first case (in case order) whose output is byte for byte the same (stored once), or
# null when the output is empty.


def load_index() -> Dict[str, Dict[str, object]]:
    with open(INDEX, encoding="utf-8") as fh:
        return json.load(fh)


def read_golden(rel: str) -> str:
    with open(GOLDEN / rel, encoding="utf-8", newline="") as fh:
        return fh.read()


def expected_stdout(entry: Dict[str, object]) -> str:
    rel = entry.get("stdout")
    return "" if rel is None else read_golden(str(rel))


def first_diff(expected: str, actual: str, label: str, lines: int = 40) -> str:
    """The unified diff of two texts, cut after ``lines`` lines."""
    diff = list(difflib.unified_diff(expected.splitlines(keepends=True),
                                     actual.splitlines(keepends=True),
                                     fromfile=f"golden/{label}", tofile="now", n=2))
    more = len(diff) - lines
    text = "".join(d if d.endswith("\n") else d + "\n\\ No newline at end of file\n"
                   for d in diff[:lines])
    return text + (f"... {more} more diff lines\n" if more > 0 else "")


REGEN = "python tests/golden_cases.py --update"


def compare(case: Case, outcome: Outcome, index: Dict[str, Dict[str, object]]) -> List[str]:
    """What differs between a case's outcome and its golden record (empty: nothing)."""
    entry = index.get(case.name)
    if entry is None:
        return [f"{case.name}: no golden record (a new case? regenerate: {REGEN})"]
    problems = []
    if entry.get("args") != list(case.args):
        problems.append(f"{case.name}: recorded with arguments {entry.get('args')}, "
                        f"now {list(case.args)}")
    if entry.get("exit_code") != outcome.exit_code:
        problems.append(f"{case.name}: exit status {outcome.exit_code}, golden "
                        f"{entry.get('exit_code')}")
    if entry.get("stderr") != outcome.stderr:
        problems.append(f"{case.name}: stderr differs:\n"
                        + first_diff(str(entry.get("stderr")), outcome.stderr,
                                     f"index.json[{case.name}].stderr"))
    try:
        golden = expected_stdout(entry)
    except FileNotFoundError:
        problems.append(f"{case.name}: golden file {entry.get('stdout')} is missing")
    else:
        if golden != outcome.stdout:
            problems.append(f"{case.name}: stdout differs:\n"
                            + first_diff(golden, outcome.stdout, str(entry.get("stdout"))))
    return problems


def golden_files() -> List[str]:
    """Every stored output file, relative to tests/golden/ (README.md and index.json aside;
    ``screens/`` belongs to tests/test_screens.py)."""
    out = []
    for p in GOLDEN.rglob("*"):
        rel = p.relative_to(GOLDEN).as_posix()
        if p.is_file() and rel not in ("README.md", "index.json") \
                and not rel.startswith("screens/"):
            out.append(rel)
    return sorted(out)


def update() -> int:
    """Rewrite tests/golden/ (index.json and every output file; stale files removed)."""
    index: Dict[str, Dict[str, object]] = {}
    stored: Dict[str, str] = {}  # output -> the file holding it
    inputs = Inputs()
    try:
        for case in cases():
            outcome = run_case(case, inputs)
            rel: Optional[str] = None
            if outcome.stdout:
                rel = stored.setdefault(outcome.stdout, case.name)
                if rel == case.name:
                    (GOLDEN / rel).parent.mkdir(parents=True, exist_ok=True)
                    with open(GOLDEN / rel, "w", encoding="utf-8", newline="") as fh:
                        fh.write(outcome.stdout)
            index[case.name] = {"args": list(case.args), "exit_code": outcome.exit_code,
                                "stderr": outcome.stderr, "stdout": rel}
    finally:
        inputs.close()
    keep = set(stored.values())
    for rel in golden_files():
        if rel not in keep:
            (GOLDEN / rel).unlink()
    for d in sorted((p for p in GOLDEN.rglob("*") if p.is_dir()), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()
    with open(INDEX, "w", encoding="utf-8", newline="") as fh:
        fh.write(dumps_index(index))
    return len(index)


def dumps_index(index: Dict[str, Dict[str, object]]) -> str:
    """index.json with one case a line (a changed case is a changed line in a diff)."""
    rows = [f"{json.dumps(k, ensure_ascii=False)}: {json.dumps(v, ensure_ascii=False)}"
            for k, v in index.items()]
    return "{\n" + ",\n".join(rows) + "\n}\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--update", action="store_true", help="rewrite the golden files")
    mode.add_argument("--check", action="store_true", help="compare; exit 1 on a difference")
    mode.add_argument("--list", action="store_true", help="list the cases")
    ap.add_argument("-k", metavar="SUBSTRING", default=None,
                    help="--check or --list only the cases whose name contains SUBSTRING")
    ns = ap.parse_args(argv)
    selected = [c for c in cases() if ns.k is None or ns.k in c.name]
    if ns.list:
        for c in selected:
            print(f"{c.name}\tnvtopo {' '.join(c.args)}")
        return 0
    if ns.update:
        if ns.k is not None:
            ap.error("--update rewrites every case (identical outputs are stored once)")
        n = update()
        print(f"wrote {n} golden records under {GOLDEN.relative_to(REPO)}")
        return 0
    index = load_index()
    inputs = Inputs()
    failed = 0
    try:
        for case in selected:
            problems = compare(case, run_case(case, inputs), index)
            if problems:
                failed += 1
                print("\n".join(problems))
    finally:
        inputs.close()
    print(f"{len(selected) - failed}/{len(selected)} golden cases match")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
