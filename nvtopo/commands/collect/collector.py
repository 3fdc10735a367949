"""What every engine's collection shares: the nodes expected, what became of each, the
files written and the manifest.

An engine (:mod:`.slurm`, :mod:`.ray`) runs the node-side command everywhere and feeds
what comes back to a :class:`Collection`: record lines through :meth:`Collection.reader`,
and for a node that sent no valid record, why (:meth:`Collection.fail`).  A verified
record is checked to be a gzip-compressed snapshot (within the bounds every input has)
and written to ``DIR/<node>.json.gz`` atomically; its bytes are then dropped, so memory
holds one payload at a time and a short result per node.  :meth:`Collection.finish`
writes ``DIR/collect.json``, the manifest (docs/collect.md §5).
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set

from ... import __version__
from ... import output
from ...errors import NvtopoError
from ...safe import printable
from . import record

MANIFEST = "collect.json"
MANIFEST_KIND = "nvtopo-collect"
MANIFEST_SCHEMA = 1

#: What became of a node (the manifest's ``status``), besides ``answered``.
STATUSES = {
    "timeout": "no record within the time limit",
    "killed": "killed by the engine before it sent a record",
    "exited": "the node's command exited with an error and no record",
    "launch-failed": "the engine could not start the command on the node",
    "not-launched": "not started: the engine said the node cannot run it now",
    "bad-record": "what the node sent is not a valid record",
    "failed": "the node's nvtopo could not take a snapshot and said why",
    "no-record": "the command ended without sending a record",
    "node-gone": "the node left the cluster before the task could run",
    "node-died": "the node (or its worker) died while the task ran",
    "probe-crashed": "the task on the node raised an error",
    "mismatch": "the node's task sent a record naming another node: nothing it sent is kept",
    "interrupted": "the collection was interrupted (a signal) before the node answered",
}
#: Longest reason kept in the manifest (one line, escaped).
MAX_REASON = 400


def one_line(text: Any, limit: int = MAX_REASON) -> str:
    """``text`` as one printable line of at most ``limit`` characters."""
    line = printable(" ".join(str(text).split())) or "?"
    return line if len(line) <= limit else line[:limit - 3] + "..."


class Collection:
    """The nodes expected of one collection into ``out_dir``, and what became of each."""

    def __init__(self, out_dir: str, engine: str, expected: Sequence[str]) -> None:
        self.out_dir = out_dir
        self.engine = engine
        self.expected: List[str] = []
        seen = set()
        for node in expected:
            if not record.is_node_name(node):
                raise NvtopoError(f"'{one_line(node, 80)}' is not a node name nvtopo can "
                                  "use as a file name", where=f"collect {engine}")
            if node not in seen:
                seen.add(node)
                self.expected.append(node)
        self._expected_set = set(self.expected)
        self.results: Dict[str, Dict[str, Any]] = {}
        self.unexpected: List[Dict[str, str]] = []
        self.skipped: List[Dict[str, str]] = []
        #: Record lines that named a node other than the one the engine ran their task on.
        self.mismatched: List[Dict[str, Any]] = []
        #: Engine facts per node (Slurm's topology address; Ray's node id and address).
        self.facts: Dict[str, Dict[str, Any]] = {}
        self._record_facts: Dict[str, Set[str]] = {}
        #: The signal that ended the collection early (``SIGTERM`` ...), if one did.
        self.interrupted: Optional[str] = None
        self.started = time.monotonic()
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")

    # -- what the engines call ------------------------------------------------------------

    def reader(self, nodes: Optional[Iterable[str]] = None, labelled: bool = False,
               senders: Optional[Dict[Optional[int], str]] = None,
               describe: Optional[Callable[[Optional[int]], str]] = None) -> record.Reader:
        """A record reader for the output of a run on ``nodes`` (default: every node).

        ``senders``: the engine's layout, task -> the node it runs on (srun's task labels;
        ``{None: node}`` for one Ray task's output).  A record line is then taken only
        from the task of the node it names; any other is a mismatch (:meth:`mismatch`),
        its task told in words by ``describe(task)`` (``srun task 3``)."""
        wanted = set(self.expected if nodes is None else nodes) & self._expected_set
        on_mismatch = None
        if senders is not None:
            words = describe or (lambda task: f"task {task}")

            def on_mismatch(named: str, sender: Optional[str], task: Optional[int]) -> None:
                self.mismatch(named, sender, task, words(task))
        return record.Reader(wanted, self._on_record, self._on_bad, labelled=labelled,
                             senders=senders, on_mismatch=on_mismatch)

    def mismatch(self, named: str, sender: Optional[str], task: Optional[int],
                 task_words: str) -> None:
        """A record naming ``named`` came from a task the engine runs on ``sender`` (None:
        on no node of this collection).  A record speaks only for the node that sent it:
        this one is refused and named, and the sender, which spoke for a node it is not,
        has nothing it sent kept (its own answer included)."""
        named_line = one_line(named, 200)
        if sender is None:
            why = f"sent by no task this collection started ({task_words})"
        else:
            why = f"{task_words} runs on {sender}, not on {named_line}"
        self.mismatched.append({"node": named_line, "sender": sender, "task": task,
                                "reason": one_line(why)})
        if sender in self._expected_set:
            self.results[sender] = {
                "node": sender, "status": "mismatch",
                "reason": one_line(f"{task_words} sent a record naming {named_line}: a "
                                   "node's records may name only that node, so none of its "
                                   "own is kept either")}
            for key in self._record_facts.pop(sender, ()):
                self.facts.get(sender, {}).pop(key, None)
            if not self.facts.get(sender, True):
                del self.facts[sender]

    def answered(self, node: str) -> bool:
        return self.results.get(node, {}).get("status") == "answered"

    def has_result(self, node: str) -> bool:
        return node in self.results

    def fail(self, node: str, status: str, reason: str) -> None:
        """Why ``node`` sent no valid record (the first reason given stands)."""
        if status not in STATUSES:
            raise ValueError(status)  # a caller's bug
        if node in self._expected_set and node not in self.results:
            self.results[node] = {"node": node, "status": status, "reason": one_line(reason)}

    def skip(self, node: str, reason: str) -> None:
        """A node the engine lists that was not asked (Ray: one that is not alive)."""
        self.skipped.append({"node": one_line(node, 200), "reason": one_line(reason)})

    def missing(self, nodes: Optional[Iterable[str]] = None) -> List[str]:
        """The nodes (of ``nodes``, default all) with no result yet."""
        return [n for n in (self.expected if nodes is None else nodes)
                if n not in self.results]

    # -- records ---------------------------------------------------------------------------

    def _on_record(self, node: str, payload: bytes, meta: Dict[str, Any]) -> None:
        if self.results.get(node, {}).get("status") == "mismatch":
            return  # it spoke for another node: nothing it sends is taken
        where = f"{node}'s record"
        try:
            probes = verify_payload(payload, where)
        except NvtopoError as exc:
            self._on_bad(node, "bad-record", f"not a compressed snapshot: {exc.message}")
            return
        name = f"{node}.json.gz"
        output.write_bytes(payload, os.path.join(self.out_dir, name))
        result: Dict[str, Any] = {"node": node, "status": "answered", "file": name,
                                  "bytes": len(payload), "probes": probes}
        facts = {k: one_line(v, 200) for k, v in sorted(meta.items())
                 if isinstance(v, (str, int)) and not isinstance(v, bool)}
        if facts:
            self.facts.setdefault(node, {}).update(facts)
            self._record_facts.setdefault(node, set()).update(facts)
        self.results[node] = result

    def _on_bad(self, node: str, status: str, reason: str) -> None:
        if status == "unexpected":
            self.unexpected.append({"node": one_line(node, 200), "reason": one_line(reason)})
            return
        prefix = "bad record: " if status == "bad-record" else ""
        self.fail(node, status, prefix + reason)

    # -- the end ---------------------------------------------------------------------------

    def interrupt(self, signal_name: str) -> None:
        """A signal ended the collection: every node still without a result says so."""
        for node in self.missing():
            self.interrupt_node(node, signal_name)
        self.interrupted = signal_name

    def interrupt_node(self, node: str, signal_name: str) -> None:
        """A signal ended the collection before ``node`` answered (if it has no result)."""
        self.interrupted = signal_name
        self.fail(node, "interrupted", f"the collection was interrupted ({signal_name}) "
                  "before the node answered")

    def finish(self, selection: Dict[str, Any], limits: Dict[str, Any]) -> Dict[str, Any]:
        """Remove what an earlier collection left for nodes that did not answer now, write
        the manifest, return it."""
        for node in self.expected:
            if not self.answered(node):
                stale = os.path.join(self.out_dir, f"{node}.json.gz")
                if os.path.isfile(stale) and not os.path.islink(stale):
                    try:
                        os.unlink(stale)  # an old answer must not pass for this one
                    except OSError as exc:
                        raise NvtopoError(f"cannot remove an earlier collection's file: "
                                          f"{exc.strerror or exc}", where=stale) from None
        doc = self.manifest(selection, limits)
        text = json.dumps(doc, indent=2, ensure_ascii=True) + "\n"
        output.write(text, os.path.join(self.out_dir, MANIFEST))
        return doc

    def manifest(self, selection: Dict[str, Any], limits: Dict[str, Any]) -> Dict[str, Any]:
        nodes = []
        for node in self.expected:
            entry = dict(self.results.get(node) or {
                "node": node, "status": "no-record",
                "reason": "no record, and no word from the engine about the node"})
            if node in self.facts:
                entry["engine"] = self.facts[node]
            nodes.append(entry)
        answered = [n["node"] for n in nodes if n["status"] == "answered"]
        return {
            "kind": MANIFEST_KIND,
            "schema_version": MANIFEST_SCHEMA,
            "nvtopo_version": __version__,
            "engine": self.engine,
            "started": self.started_at,
            "duration_s": round(time.monotonic() - self.started, 3),
            "selection": selection,
            "limits": limits,
            "expected": list(self.expected),
            "answered": answered,
            "counts": {"expected": len(self.expected), "answered": len(answered),
                       "not_answered": len(self.expected) - len(answered),
                       "unexpected": len(self.unexpected), "skipped": len(self.skipped),
                       "mismatched": len(self.mismatched)},
            "nodes": nodes,
            "unexpected": self.unexpected,
            "skipped": self.skipped,
            "mismatched": self.mismatched,
            "interrupted": self.interrupted,
        }


def verify_payload(payload: bytes, where: str) -> Dict[str, str]:
    """Check that a record's payload is a gzip-compressed snapshot, within the bounds of
    any input; returns each probe's status (``{"topo-text": "ok", ...}``)."""
    from ...snapshot import document, read

    if not payload.startswith(read.GZIP_MAGIC):
        raise NvtopoError("not gzip data", where=where)
    data = read.within_bounds(payload, where)
    text = read.decode_bytes(data, where)
    if not read.is_json(text):
        raise NvtopoError("not JSON", where=where)
    doc = document.parse_snapshot(text, where)
    return {str(name)[:64]: one_line(ev.get("status") or "unknown", 40)
            for name, ev in doc["probes"].items()}


def exit_status(manifest: Dict[str, Any]) -> int:
    """0: every expected node answered and no record named a node its sender is not;
    1: otherwise (the manifest says which)."""
    counts = manifest["counts"]
    return 0 if (counts["expected"] and counts["answered"] == counts["expected"]
                 and not counts.get("mismatched")) else 1


def prepare_dir(path: Optional[str], command: str) -> str:
    """``-o DIR``: an existing directory, or one to create in an existing directory."""
    if not path:
        raise NvtopoError("give the directory to collect into with -o DIR", where=command)
    if os.path.isdir(path):
        if not os.access(path, os.W_OK | os.X_OK):
            raise NvtopoError("cannot write into this directory", where=path)
        return path
    if os.path.exists(path) or os.path.islink(path):
        raise NvtopoError("exists and is not a directory; -o names the directory the "
                          "snapshots go to", where=path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise NvtopoError(f"cannot create: directory {parent} does not exist", where=path)
    try:
        os.mkdir(path)
    except OSError as exc:
        raise NvtopoError(f"cannot create: {exc.strerror or exc}", where=path) from None
    return path
