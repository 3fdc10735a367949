"""``nvtopo audit``: check many saved snapshots (or topo texts) at once, streaming.

Inputs are files, directories (walked recursively, one directory at a time) and
glob patterns; they are expanded lazily, so a fleet of any size is never listed
in memory.  Each file is checked exactly as ``nvtopo check --from FILE`` would
(same layout selection, same findings) in worker processes; a bounded window of
files is in flight at a time and results come back in input order.

What the caller keeps per node is a :class:`NodeResult` (a handful of short
strings and ints, plus the full findings only when asked for: JSON output
streams them and forgets them); what is aggregated over the fleet is a
:class:`Summary` (counts per verdict, per finding code the number of nodes and
the first :data:`SHOWN_NODES` of them).  So memory does not grow with the
findings of the fleet, only with a compact row per node where the caller keeps
rows (the table).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import stat
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from .errors import NvtopoError

#: How many node names the summary keeps per finding code (the count is exact).
SHOWN_NODES = 10
#: File names (a directory walk) considered snapshots or topo texts; others are skipped.
SUFFIXES = (".json", ".txt", ".topo", ".log", ".out", ".json.gz")
#: Names a directory walk skips: ``nvtopo collect``'s manifest beside the snapshots.
NOT_SNAPSHOTS = ("collect.json",)

_GLOB_CHARS = set("*?[")


@dataclass
class NodeResult:
    """One file's outcome.  ``verdict``: ``pass``, ``fail`` or ``error`` (could not be read)."""

    file: str
    hostname: Optional[str]
    layout: Optional[str]
    verdict: str
    errors: int = 0
    warnings: int = 0
    #: ``info`` findings (not checked): with ``errors`` and ``warnings``, the report's counts.
    infos: int = 0
    #: ``(severity, code, subject, message)`` of the first error, else first warning.
    worst: Optional[Tuple[str, str, str, str]] = None
    #: ``(severity, code, subject)`` of every finding, info included (summary, Prometheus).
    codes: Tuple[Tuple[str, str, str], ...] = ()
    #: Why the file could not be checked (verdict ``error``).
    reason: Optional[str] = None
    #: Full findings (``Finding.to_dict()``), only when asked for.
    findings: Optional[List[Dict[str, Any]]] = None
    #: A snapshot whose model had to be re-derived from its evidence (no usable cache).
    rederived: bool = False
    #: The engine's name for the node (``collect.json`` beside the file), where there is one:
    #: it names the node before the hostname does (a one-host test cluster's snapshots share
    #: one hostname, and were taken for one host's older snapshots).
    node: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"file": self.file, "hostname": self.hostname, "layout": self.layout,
                             "verdict": self.verdict, "errors": self.errors,
                             "warnings": self.warnings,
                             "findings": list(self.findings or [])}
        if self.reason is not None:
            d["reason"] = self.reason
        if self.node is not None:
            d["node"] = self.node
        return d


@dataclass
class CodeCount:
    severity: str
    nodes: int = 0
    subjects: int = 0
    shown: List[str] = field(default_factory=list)


@dataclass
class Summary:
    """Fleet-wide counts; constant size in the number of nodes (codes are a fixed vocabulary)."""

    files: int = 0
    verdicts: Dict[str, int] = field(default_factory=lambda: {"pass": 0, "fail": 0, "error": 0})
    codes: Dict[str, CodeCount] = field(default_factory=dict)
    layouts: Dict[str, int] = field(default_factory=dict)
    #: Snapshots read without a usable model cache (re-derived from their evidence).
    rederived: int = 0

    def add(self, r: NodeResult) -> None:
        self.files += 1
        self.verdicts[r.verdict] = self.verdicts.get(r.verdict, 0) + 1
        self.rederived += bool(r.rederived)
        if r.verdict == "error":
            return
        self.layouts[r.layout or "none"] = self.layouts.get(r.layout or "none", 0) + 1
        seen: Dict[str, int] = {}
        for sev, code, _subject in r.codes:
            if sev not in ("error", "warning"):
                continue
            seen[code] = seen.get(code, 0) + 1
            cc = self.codes.get(code)
            if cc is None:
                cc = self.codes[code] = CodeCount(severity=sev)
            elif sev == "error":
                cc.severity = "error"
        for code, n in seen.items():
            cc = self.codes[code]
            cc.nodes += 1
            cc.subjects += n
            if len(cc.shown) < SHOWN_NODES:
                cc.shown.append(node_name(r))

    def exit_status(self) -> int:
        """2 when no file could be checked, 1 when a node fails, else 0 (the one rule:
        :func:`nvtopo.checks.findings.exit_status`)."""
        from .checks.findings import exit_status

        if self.verdicts.get("pass", 0) + self.verdicts.get("fail", 0) == 0:
            return exit_status(None)
        return exit_status("fail" if self.verdicts.get("fail") else "pass")

    def to_dict(self) -> Dict[str, Any]:
        order = {"error": 0, "warning": 1}
        codes = sorted(self.codes.items(), key=lambda kv: (order.get(kv[1].severity, 2),
                                                           -kv[1].nodes, kv[0]))
        return {
            "files": self.files,
            "checked": self.verdicts.get("pass", 0) + self.verdicts.get("fail", 0),
            "pass": self.verdicts.get("pass", 0),
            "fail": self.verdicts.get("fail", 0),
            "unreadable": self.verdicts.get("error", 0),
            "layouts": dict(sorted(self.layouts.items())),
            "rederived": self.rederived,
            "codes": [{"code": c, "severity": cc.severity, "nodes": cc.nodes,
                       "findings": cc.subjects, "shown": list(cc.shown),
                       "more": cc.nodes - len(cc.shown)} for c, cc in codes],
            "exit_status": self.exit_status(),
        }


def node_name(r: NodeResult) -> str:
    """The engine's name (collect.json), else the hostname, else the file's name."""
    return r.node or r.hostname or os.path.basename(r.file)


# --- inputs ---------------------------------------------------------------------------


def expand(paths: Sequence[str]) -> Iterator[Tuple[str, Optional[str]]]:
    """Yield ``(path, None)`` for every input file, ``(path, reason)`` for a bad argument.

    A directory is walked recursively (sorted, one directory listing at a time;
    hidden entries and files whose suffix is not a snapshot's or a text's are
    skipped); a pattern with ``*``, ``?`` or ``[`` that names no existing file
    is a glob (``**`` recursive); a file is taken whatever its name.  Neither a walk nor
    a glob follows a link to a directory (two links to ``.`` made ``**`` endless; one made
    every file be read many times over), and a file reached twice (by a link, a hard link,
    a second argument or pattern) is given once, where it is first reached.
    """
    seen: Set[Tuple[int, int]] = set()
    for path, why in _expand(paths):
        if why is None:
            try:
                st = os.stat(path)
            except OSError:
                pass
            else:
                key = (st.st_dev, st.st_ino)
                if key in seen:
                    continue
                seen.add(key)
        yield path, why


def _expand(paths: Sequence[str]) -> Iterator[Tuple[str, Optional[str]]]:
    for p in paths:
        if os.path.isdir(p):
            yield from _walk(p)
        elif os.path.exists(p) or not (_GLOB_CHARS & set(p)):
            yield p, (_not_regular(p) if os.path.exists(p) else "no such file")
        else:
            found = False
            for m in _glob(p):
                found = True
                if os.path.isdir(m):
                    if not os.path.islink(m):  # a link to a directory is not followed
                        yield from _walk(m)
                else:
                    yield m, _not_regular(m)
            if not found:
                yield p, "no file matches this pattern"


def _glob(pattern: str) -> Iterator[str]:
    """The paths ``pattern`` matches, as ``glob.iglob(pattern, recursive=True)`` gives them
    (hidden names only where the pattern part starts with ``.``; ``**`` any number of
    directories), except that no link to a directory is followed below the parts the
    pattern names literally; lazy, sorted within each directory."""
    parts = pattern.replace(os.altsep, os.sep).split(os.sep) if os.altsep \
        else pattern.split(os.sep)
    if parts[0] == "":  # an absolute pattern
        root, parts = os.sep, parts[1:]
    else:
        root = ""
    yield from _glob_in(root, [p for p in parts if p] or [""])


def _listing(directory: str) -> List[Tuple[str, bool]]:
    """``(name, is a real directory)`` of ``directory``'s entries, sorted; [] when it cannot
    be listed (a glob names what it finds, as glob does)."""
    out: List[Tuple[str, bool]] = []
    try:
        with os.scandir(directory or os.curdir) as it:
            for e in it:
                try:
                    real_dir = e.is_dir(follow_symlinks=False)
                except OSError:
                    real_dir = False
                out.append((e.name, real_dir))
    except OSError:
        return []
    return sorted(out)


def _glob_in(base: str, parts: List[str]) -> Iterator[str]:
    head, rest = parts[0], parts[1:]
    if head == "**":
        if not rest:  # DIR/**: the directory itself, walked whole (links not followed)
            yield base or os.curdir
            return
        stack = [base]  # every directory below, depth first (a loop: no depth limit)
        while stack:
            here = stack.pop()
            yield from _glob_in(here, rest)
            stack.extend(os.path.join(here, name) for name, real_dir
                         in reversed(_listing(here)) if real_dir and not name.startswith("."))
        return
    if not glob.has_magic(head):
        path = os.path.join(base, head)
        if rest:
            if os.path.isdir(path):  # named literally: followed, as the user named it
                yield from _glob_in(path, rest)
        elif head and os.path.lexists(path):
            yield path
        return
    for name, real_dir in _listing(base):
        if name.startswith(".") and not head.startswith("."):
            continue
        if not fnmatch.fnmatch(name, head):
            continue
        path = os.path.join(base, name)
        if not rest:
            yield path
        elif real_dir:
            yield from _glob_in(path, rest)


def _walk(top: str) -> Iterator[Tuple[str, Optional[str]]]:
    """Depth first, sorted, like ``os.walk`` top-down; a directory that cannot be listed is
    reported (``(dir, reason)``) and the walk goes on with its siblings."""
    stack = [top]
    while stack:
        root = stack.pop()
        files: List[Tuple[str, Optional[str]]] = []
        dirs: List[str] = []
        try:
            with os.scandir(root) as it:
                for e in it:
                    if e.name.startswith("."):
                        continue
                    try:
                        is_dir = e.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        if not e.is_symlink():  # as os.walk: links to directories not followed
                            dirs.append(e.name)
                        continue
                    if not e.name.lower().endswith(SUFFIXES) or e.name in NOT_SNAPSHOTS:
                        continue
                    files.append((e.name, _not_regular(e.path)))
        except OSError as exc:
            yield root, f"cannot list directory: {exc.strerror or exc}"
            continue
        for name, why in sorted(files):
            yield os.path.join(root, name), why
        stack.extend(os.path.join(root, d) for d in sorted(dirs, reverse=True))


def _not_regular(path: str) -> Optional[str]:
    """Why ``path`` cannot be read as a file without opening it (a FIFO would block), or None."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "no such file (a broken link?)" if os.path.islink(path) else "no such file"
    except PermissionError:
        return "permission denied"
    except OSError as exc:
        return f"cannot stat: {exc.strerror or exc}"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "")
        return "not a regular file" + (f" ({kind})" if kind else "")
    return None


# --- checking one file -------------------------------------------------------------------

def check_file(path: str, layout: Any = "auto", layout_file: Optional[str] = None,
               with_findings: bool = False, thresholds: Any = None) -> NodeResult:
    """Check one file as ``nvtopo check --from`` does; never raises for bad input.
    ``layout``: ``"auto"``, a bundled layout's name, or a ``Layout`` already read;
    ``thresholds``: a ``--thresholds`` file already read."""
    from . import checks, snapshot

    hostname = None
    why = _not_regular(path)
    if why is not None:  # never open a FIFO, socket or device: reading one blocks or never ends
        return _bad_input(path, why)
    try:
        opened = snapshot.open_input(snapshot.Input(path=path, command="audit"))
        topo = opened.model
        rederived = opened.cached is False
        hostname = topo.host.hostname or None
        opened.require("check")
        report = checks.select_and_run(topo, layout, layout_file, thresholds)
    except NvtopoError as exc:
        msg = exc.message if exc.where in (path, None) else str(exc)
        return NodeResult(file=path, hostname=hostname, layout=None, verdict="error",
                          reason=msg.replace("\n", " "))
    except Exception as exc:  # a bug on one odd file must not end a fleet audit
        return NodeResult(file=path, hostname=hostname, layout=None, verdict="error",
                          reason=f"internal error while checking: {type(exc).__name__}: {exc}"
                          .replace("\n", " "))
    worst = report.worst
    return NodeResult(
        file=path, hostname=str(hostname) if hostname else None, layout=report.layout_name,
        verdict=report.verdict, errors=report.counts["error"],
        warnings=report.counts["warning"], infos=report.counts["info"],
        worst=(worst.severity, worst.code, str(worst.subject), worst.message) if worst
        else None,
        codes=tuple((f.severity, f.code, str(f.subject)) for f in report.findings),
        findings=[f.to_dict() for f in report.findings] if with_findings else None,
        rederived=rederived)


def _bad_input(path: str, reason: str) -> NodeResult:
    return NodeResult(file=path, hostname=None, layout=None, verdict="error", reason=reason)


#: An input: (path, why it cannot be read or None, the engine's name or None).
Item = Tuple[str, Optional[str], Optional[str]]


def _work(batch: List[Item], layout: Any, layout_file: Optional[str],
          with_findings: bool, thresholds: Any = None) -> List[NodeResult]:
    out = []
    for p, why, node in batch:
        r = (check_file(p, layout, layout_file, with_findings, thresholds) if why is None
             else _bad_input(p, why))
        r.node = node
        out.append(r)
    return out


#: The largest ``collect.json`` read (a manifest of 100,000 nodes is a few tens of MB).
MAX_MANIFEST_BYTES = 64 << 20
#: The most JSON values a ``collect.json`` may hold (counted before decoding, as a
#: snapshot's are): about 15 a node, so 100,000 nodes hold 1.5 million; a value costs up to
#: ~100 bytes decoded (60 MB of empty objects decoded to 1.6 GB).
MAX_MANIFEST_VALUES = 2_000_000


def read_manifest(directory: str) -> Dict[str, str]:
    """``collect.json`` beside the snapshots: file name -> the engine's node name ({} when
    there is none, or it is JSON of another kind).  Read through the one bounded reader
    every input has (a FIFO, a device or a manifest past :data:`MAX_MANIFEST_BYTES` or
    :data:`MAX_MANIFEST_VALUES` is refused before it is decoded); a manifest that cannot be
    read, or is not JSON, is a one-line :class:`~nvtopo.errors.NvtopoError` naming it."""
    from .errors import NvtopoError
    from .snapshot import read
    from .safe import json_loads

    path = os.path.join(directory, "collect.json")
    if not os.path.lexists(path):
        return {}
    what = "a manifest nvtopo collect wrote"
    data, where = read.read_bytes(path, option="collect.json", limit=MAX_MANIFEST_BYTES,
                                  what=what, content=False)
    read.json_values_within(data, where, MAX_MANIFEST_VALUES, what)
    try:
        doc = json_loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise NvtopoError(f"not UTF-8 text; not {what}", where=where) from None
    except ValueError as exc:
        raise NvtopoError(f"not JSON ({str(exc)[:120]}); not {what}", where=where) from None
    out: Dict[str, str] = {}
    if not isinstance(doc, dict) or doc.get("kind") != "nvtopo-collect":
        return out
    for entry in doc.get("nodes") or []:
        if isinstance(entry, dict) and isinstance(entry.get("file"), str) \
                and isinstance(entry.get("node"), str):
            out[os.path.basename(entry["file"])] = entry["node"]
    return out


def named(items: Iterable[Tuple[str, Optional[str]]]) -> Iterator[Item]:
    """Each input with the engine's name ``collect.json`` beside it gives (``nvtopo
    collect``'s manifest, read once per directory, as ``cluster`` reads it)."""
    manifests: Dict[str, Dict[str, str]] = {}
    for path, why in items:
        d = os.path.dirname(path) or "."
        if d not in manifests:
            if len(manifests) > 64:
                manifests.clear()
            manifests[d] = read_manifest(d)
        yield path, why, manifests[d].get(os.path.basename(path))


# --- running over a fleet -----------------------------------------------------------------


def _batches(items: Iterable[Item], size: int) -> Iterator[List[Item]]:
    batch: List[Item] = []
    for it in items:
        batch.append(it)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def run(paths: Sequence[str], *, layout: Any = "auto", layout_file: Optional[str] = None,
        jobs: Optional[int] = None, with_findings: bool = False, batch_size: int = 8,
        thresholds: Any = None) -> Iterator[NodeResult]:
    """Check every input file; yield one :class:`NodeResult` per file, in input order.

    ``thresholds``: a ``--thresholds`` file already read.
    ``jobs`` worker processes (default: every core; 1 runs in this process).  At most
    ``4 * jobs`` batches of ``batch_size`` files are in flight at once, so neither the
    list of files nor the results are ever held whole.
    """
    jobs = jobs or os.cpu_count() or 1
    items = named(expand(paths))
    from .pool import fleet_collections, workers

    if jobs <= 1:
        with fleet_collections():
            for batch in _batches(items, batch_size):
                yield from _work(batch, layout, layout_file, with_findings, thresholds)
        return
    import collections
    import concurrent.futures as cf

    window = 4 * jobs
    # the pool ends with this process, whatever ends it (SIGTERM, SIGHUP, Ctrl-C: nvtopo/pool.py)
    with workers(jobs, _warm) as pool:
        pending: "collections.deque[cf.Future]" = collections.deque()
        for batch in _batches(items, batch_size):
            pending.append(pool.submit(_work, batch, layout, layout_file, with_findings,
                                       thresholds))
            if len(pending) >= window:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


def _warm() -> None:
    """Worker start: import what checking needs once, not per file; the collector's
    threshold of a process that only reads files (:func:`nvtopo.pool.fleet_worker`)."""
    from .pool import fleet_worker

    fleet_worker()
    from . import checks, snapshot  # noqa: F401
    from .checks import select  # noqa: F401
    from .probes import nvml, sysfs, topo  # noqa: F401
