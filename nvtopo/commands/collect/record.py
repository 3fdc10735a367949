"""The record a node sends its snapshot back in, and the reader that verifies it.

A node's answer travels through an engine's output stream (``srun``'s standard output, a
Ray task's captured output), among other nodes' answers and whatever else the node
prints.  ``srun`` splits lines longer than about 1 KiB into pieces and interleaves pieces
of different tasks (seen on Slurm 22.05, with and without ``--label``), so a record is a
run of *short, self-identifying lines*, each well under that size, each naming its node::

    NVTOPO-RECORD/1 HEAD <node> <length> <sha256> <meta>
    NVTOPO-RECORD/1 DATA <node> <base64 of at most 576 bytes>
    ...
    NVTOPO-RECORD/1 END <node>

The payload is the gzip-compressed snapshot (``<length>`` bytes, SHA-256 ``<sha256>``);
``<meta>`` is ``-`` or base64 of a small JSON object of engine facts (Slurm's
``SLURM_TOPOLOGY_ADDR``).  A node that cannot take its snapshot says why in one line::

    NVTOPO-RECORD/1 FAIL <node> <message>

Lines of other nodes may come between a record's lines; lines without the magic are
ignored.  The name in a record is the node's own say-so: where the engine says which node
sent each line (srun's task label and the task layout the collector asked for; the one Ray
task whose output it is), a :class:`Reader` given that layout (``senders``) takes a record
line only from the node it names, and reports any other as a mismatch.

:class:`Reader` follows any number of records at once, spooling each payload (in memory
up to :data:`SPOOL_IN_MEMORY`, on disk past it), so memory does not grow with the size or
number of records, and hands each complete, verified payload to a callback.
See docs/collect.md §4.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import tempfile
from typing import Any, Callable, Dict, Iterator, Optional, Set, Tuple

from ...safe import json_loads

MAGIC = b"NVTOPO-RECORD/1"
#: Payload bytes per DATA line: 768 base64 characters, so a line stays under 1 KiB.
CHUNK = 576
#: A record larger than this (compressed) is refused: real ones are tens of kB.
MAX_RECORD_BYTES = 64 * 1024 * 1024
#: Bytes of the metadata JSON a HEAD line may carry.
MAX_META_BYTES = 1024
#: Longest line the reader looks at; a longer one is no record line (its start is kept
#: for the message).
MAX_LINE = 4096
#: A node name, as Slurm and hostnames spell them; also a safe file name.
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
#: Payload bytes a record keeps in memory before spooling to a temporary file.
SPOOL_IN_MEMORY = 256 * 1024
#: srun --label's prefix: the task number, right-aligned, then ": ".
_LABEL = re.compile(rb"\A *([0-9]{1,7}): ")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


def is_node_name(name: str) -> bool:
    return bool(NODE_NAME.match(name))


# --- writing ---------------------------------------------------------------------------


def encode(node: str, payload: bytes, meta: Optional[Dict[str, Any]] = None
           ) -> Iterator[bytes]:
    """The lines (each ending in a newline) of the record of ``payload`` from ``node``."""
    if not is_node_name(node):
        raise ValueError(f"not a node name: {node!r}")
    meta_field = b"-"
    if meta:
        raw = json.dumps(meta, separators=(",", ":"), sort_keys=True).encode("utf-8")
        if len(raw) > MAX_META_BYTES:
            raise ValueError("record metadata too large")
        meta_field = base64.b64encode(raw)
    name = node.encode("ascii")
    digest = hashlib.sha256(payload).hexdigest().encode("ascii")
    yield b" ".join((MAGIC, b"HEAD", name, str(len(payload)).encode("ascii"), digest,
                     meta_field)) + b"\n"
    view = memoryview(payload)
    for start in range(0, len(payload), CHUNK):
        yield MAGIC + b" DATA " + name + b" " + base64.b64encode(view[start:start + CHUNK]) \
            + b"\n"
    yield MAGIC + b" END " + name + b"\n"


def fail_line(node: str, message: str) -> bytes:
    """The one line a node sends when it cannot take its snapshot."""
    from ...safe import printable

    text = " ".join(printable(message).split())[:400] or "failed"
    return b" ".join((MAGIC, b"FAIL", node.encode("ascii", "replace"),
                      text.encode("utf-8", "replace"))) + b"\n"


# --- reading ---------------------------------------------------------------------------


class _Pending:
    """A record whose HEAD was read and whose END has not come yet."""

    __slots__ = ("length", "sha256", "meta", "hasher", "spool", "size")

    def __init__(self, length: int, sha256: str, meta: Dict[str, Any]) -> None:
        self.length = length
        self.sha256 = sha256
        self.meta = meta
        self.hasher = hashlib.sha256()
        self.spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)
        self.size = 0

    def close(self) -> None:
        self.spool.close()


#: ``on_record(node, payload, meta)``: a complete record whose length and checksum hold.
OnRecord = Callable[[str, bytes, Dict[str, Any]], None]
#: ``on_bad(node, status, reason)``: ``status`` ``bad-record``, ``failed`` or ``unexpected``.
OnBad = Callable[[str, str, str], None]
#: ``on_mismatch(named, sender, task)``: a record line naming ``named`` came from the task
#: ``task`` (srun's label; None: no label) that runs on ``sender`` (None: no task the engine
#: started).
OnMismatch = Callable[[str, Optional[str], Optional[int]], None]
#: Mismatches reported at most (each distinct task and name once).
MAX_MISMATCHES = 1000


class Reader:
    """Reads an output stream line by line and verifies the records in it.

    ``expected``: the nodes whose records are taken; a record from any other node is
    reported as ``unexpected`` (its payload is not kept).  ``labelled``: lines may start
    with srun's ``--label`` prefix (``  3: ``), which is taken off (and the task number
    remembered: :attr:`tasks`).  Each record ends in exactly one call: ``on_record`` for a
    verified one, ``on_bad`` otherwise; :meth:`close` ends those the stream left open.

    ``senders``: the engine's word on who sent each line, task number -> node (srun's
    label; the key ``None`` for unlabelled lines, as one Ray task's output is).  Given it,
    a record line is read only when the node it names is the node its task runs on; any
    other (a line naming another node, one without a label, one from a task the engine did
    not start) is not read and is reported once to ``on_mismatch``.
    """

    def __init__(self, expected: Set[str], on_record: OnRecord, on_bad: OnBad,
                 labelled: bool = False, max_record: int = MAX_RECORD_BYTES,
                 senders: Optional[Dict[Optional[int], str]] = None,
                 on_mismatch: Optional[OnMismatch] = None) -> None:
        self.expected = expected
        self.on_record = on_record
        self.on_bad = on_bad
        self.labelled = labelled
        self.max_record = max_record
        self.pending: Dict[str, _Pending] = {}
        #: Nodes whose record (or failure) has been reported: later lines of theirs are
        #: ignored, a second record counted in :attr:`repeated`.
        self.done: Set[str] = set()
        self.repeated: Dict[str, int] = {}
        self.senders = senders
        self.on_mismatch = on_mismatch
        #: Task number -> node: the engine's layout where given, else learnt from labelled
        #: record lines.
        self.tasks: Dict[int, str] = {t: n for t, n in (senders or {}).items()
                                      if t is not None}
        #: Lines that were not record lines (a node's chatter): counted, not kept.
        self.other_lines = 0
        self._unexpected: Set[str] = set()
        self._mismatched: Set[Tuple[Optional[int], str]] = set()

    # -- one line ------------------------------------------------------------------------

    def feed(self, line: bytes) -> None:
        """One line of the stream (with or without its newline; at most :data:`MAX_LINE`
        bytes are looked at)."""
        line = line[:MAX_LINE].rstrip(b"\r\n")
        task = None
        if self.labelled:
            m = _LABEL.match(line)
            if m:
                task = int(m.group(1))
                line = line[m.end():]
        if not line.startswith(MAGIC + b" "):
            self.other_lines += 1
            return
        while True:
            # lines that lost the line break between them are taken apart: the magic
            # cannot occur in base64, a number, a digest or a node name
            glued = line.find(MAGIC, len(MAGIC))
            if glued < 0:
                break
            self._line(line[:glued].rstrip(b" "), task)
            line = line[glued:]
        self._line(line, task)

    def _line(self, line: bytes, task: Optional[int]) -> None:
        fields = line[len(MAGIC) + 1:].split(b" ")
        kind = fields[0]
        if len(fields) < 2:
            self.other_lines += 1
            return
        try:
            node = fields[1].decode("ascii")
        except UnicodeDecodeError:
            node = fields[1].decode("ascii", "replace")
        if self.senders is not None:
            sender = self.senders.get(task)
            if node != sender:
                self._mismatch(node, sender, task)
                return
        if not is_node_name(node):
            self._unexpect(node, "a record line whose node name is not one")
            return
        if task is not None and self.senders is None:
            self.tasks.setdefault(task, node)
        if node not in self.expected:
            self._unexpect(node, "a record from a node this collection did not run on")
            return
        if node in self.done:
            if kind == b"HEAD":
                self.repeated[node] = self.repeated.get(node, 0) + 1
            return
        if kind == b"HEAD":
            self._head(node, fields)
        elif kind == b"DATA":
            self._data(node, fields)
        elif kind == b"END":
            self._end(node, fields)
        elif kind == b"FAIL":
            message = line.split(b" ", 3)[3] if len(fields) > 2 else b"failed"
            self._finish(node)
            self.on_bad(node, "failed", message.decode("utf-8", "replace"))
        else:
            self._bad(node, f"unknown record line {kind[:20]!r}")

    def _head(self, node: str, fields: list) -> None:
        if node in self.pending:
            self._bad(node, "a second record began before the first ended")
            return
        if len(fields) != 5:
            self._bad(node, f"header has {len(fields) - 1} fields, not 4")
            return
        length_field, digest, meta_field = fields[2], fields[3], fields[4]
        if not length_field.isdigit() or len(length_field) > 12:
            self._bad(node, "header length is not a number")
            return
        length = int(length_field)
        if length > self.max_record:
            self._bad(node, f"record of {length:,} bytes is larger than the "
                            f"{self.max_record // (1024 * 1024)} MiB cap")
            return
        sha = digest.decode("ascii", "replace")
        if not _HEX64.match(sha):
            self._bad(node, "header checksum is not a SHA-256")
            return
        meta: Dict[str, Any] = {}
        if meta_field != b"-":
            try:
                raw = base64.b64decode(meta_field, validate=True)
                if len(raw) > MAX_META_BYTES:
                    raise ValueError("too large")
                meta = json_loads(raw.decode("utf-8"))
                if not isinstance(meta, dict):
                    raise ValueError("not an object")
            except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
                self._bad(node, "header metadata is not base64 of a JSON object")
                return
        self.pending[node] = _Pending(length, sha, meta)

    def _data(self, node: str, fields: list) -> None:
        rec = self.pending.get(node)
        if rec is None:
            self._bad(node, "data without a header (the header was lost or glued to "
                            "another line)")
            return
        if len(fields) != 3:
            self._bad(node, "a data line with more than one field")
            return
        try:
            chunk = base64.b64decode(fields[2], validate=True)
        except (ValueError, binascii.Error):
            self._bad(node, f"data line {rec.size // CHUNK + 1} is not base64")
            return
        if rec.size + len(chunk) > rec.length:
            self._bad(node, f"longer than its header says ({rec.length:,} bytes)")
            return
        rec.hasher.update(chunk)
        rec.spool.write(chunk)
        rec.size += len(chunk)

    def _end(self, node: str, fields: list) -> None:
        rec = self.pending.get(node)
        if rec is None:
            self._bad(node, "an end without a header")
            return
        if len(fields) != 2:
            self._bad(node, "a malformed end line")
            return
        if rec.size != rec.length:
            self._bad(node, f"truncated: {rec.size:,} of {rec.length:,} bytes")
            return
        if rec.hasher.hexdigest() != rec.sha256:
            self._bad(node, "checksum mismatch: the bytes are not those the node sent")
            return
        rec.spool.seek(0)
        payload = rec.spool.read()
        meta = rec.meta
        self._finish(node)
        self.on_record(node, payload, meta)

    # -- endings -------------------------------------------------------------------------

    def _finish(self, node: str) -> None:
        rec = self.pending.pop(node, None)
        if rec is not None:
            rec.close()
        self.done.add(node)

    def _bad(self, node: str, reason: str) -> None:
        self._finish(node)
        self.on_bad(node, "bad-record", reason)

    def _unexpect(self, node: str, reason: str) -> None:
        if node not in self._unexpected and len(self._unexpected) < 1000:
            self._unexpected.add(node)
            self.on_bad(node, "unexpected", reason)

    def _mismatch(self, node: str, sender: Optional[str], task: Optional[int]) -> None:
        key = (task, node)
        if key not in self._mismatched and len(self._mismatched) < MAX_MISMATCHES:
            self._mismatched.add(key)
            if self.on_mismatch is not None:
                self.on_mismatch(node, sender, task)

    def close(self) -> None:
        """The stream ended: every record still open is truncated."""
        for node in sorted(self.pending):
            rec = self.pending[node]
            if rec.size == rec.length:
                self._bad(node, "no end line: the output ended, or the end was damaged")
            else:
                self._bad(node, f"truncated: the output ended after {rec.size:,} of "
                                f"{rec.length:,} bytes")
