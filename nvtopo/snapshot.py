"""Snapshots: the raw evidence of every probe in one JSON file, and reading input back.

A snapshot holds *evidence*, not conclusions: the command, its arguments,
exit status, stdout, stderr and duration (or why it could not run).  The
model is re-derived from it (:func:`derive`), so a parser fix also applies to
snapshots taken before the fix.

Deriving costs tens of milliseconds, which adds up over a fleet, so a snapshot
written by nvtopo also carries the model it derived, under ``"derived"`` at
the end of the file.  That copy is only a cache, used (:func:`cached_model`)
when the file is byte for byte what nvtopo wrote (a SHA-256 of the file seals
it) *and* the reading nvtopo derives exactly as the writing one did (same
version, same SHA-256 of the derivation code).  An edited file, an older or
newer nvtopo, or a changed parser: the model is re-derived from the evidence.

Input for ``--from`` is a snapshot or a bare ``nvidia-smi topo`` text,
recognised by content, not by file name; ``-`` reads standard input.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from . import __version__
from . import model_shape
from .errors import NvtopoError
from .model import Topology
from . import probes as probes_pkg
from .probes import ProbeOptions

SNAPSHOT_KIND = "nvtopo-snapshot"
#: Version of the snapshot document layout.
SNAPSHOT_SCHEMA = 1
#: Larger inputs are refused: no real snapshot or topo text comes near this.
MAX_INPUT_BYTES = 64 * 1024 * 1024


# --- taking a snapshot -----------------------------------------------------------


def host_facts() -> Dict[str, Any]:
    """Hostname, kernel and time of the machine taking the snapshot."""
    import platform
    import socket
    from datetime import datetime, timezone

    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "os": platform.system(),
        "machine": platform.machine(),
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


#: Seconds a probe may run past ``--timeout`` (its own clean-up: ending nvidia-smi's process
#: group, joining a worker) before ``take`` records it as not returned and goes on without it.
OVERRUN_GRACE_S = 3.0


def take(options: Optional[ProbeOptions] = None) -> Dict[str, Any]:
    """Run every probe and return the snapshot document.

    The probes run at the same time, each under the one ``options.timeout``: a live
    command ends within that bound (plus a few seconds of clean-up) however many probes
    hang.  A probe still running after :data:`OVERRUN_GRACE_S` more is recorded as
    ``"status": "unanswered"`` (its thread is a daemon: it cannot keep nvtopo alive).
    """
    import threading

    options = options or ProbeOptions()
    started = time.monotonic()
    foreign = options.foreign_root()
    probes: Dict[str, Any] = {}
    results: Dict[str, Any] = {}

    def run(name: str) -> None:
        try:
            results[name] = probes_pkg.module(name).capture(options)
        except Exception as exc:  # noqa: BLE001 - a probe's bug must not cost the others
            results[name] = {"status": "unanswered",
                             "error": f"{name} probe failed: {type(exc).__name__}: {exc}"}

    workers = []
    for name in probes_pkg.PROBES:
        if foreign and name in probes_pkg.MACHINE_PROBES:
            results[name] = {"status": "skipped", "error": (
                f"not run: --sysfs-root {options.sysfs_root} is another machine's sysfs tree, "
                "and this machine's answers would not describe it")}
            continue
        worker = threading.Thread(target=run, args=(name,), name=f"nvtopo-{name}", daemon=True)
        worker.start()
        workers.append((name, worker))
    deadline = started + float(options.timeout) + OVERRUN_GRACE_S
    for name, worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive() or name not in results:
            results[name] = {"status": "unanswered", "error": (
                f"{name} probe did not return within {float(options.timeout):g} s "
                f"(+{OVERRUN_GRACE_S:g} s); its facts are unknown")}
    for name in probes_pkg.PROBES:
        probes[name] = results[name]
    host = host_facts()
    if foreign:
        host = {"hostname": None, "time": host["time"], "sysfs_root": options.sysfs_root}
    return {
        "kind": SNAPSHOT_KIND,
        "schema_version": SNAPSHOT_SCHEMA,
        "nvtopo_version": __version__,
        "host": host,
        "duration_s": round(time.monotonic() - started, 3),
        "probes": probes,
    }


def write_atomic(text: str, path: str) -> bool:
    """Write ``text`` to ``path``: atomically for a file, directly for standard output, a
    device or a FIFO (see :mod:`nvtopo.output`).  True when a file was written."""
    from . import output  # (imported here: reading a snapshot, the common case, never writes)

    return output.write(text, path)


def dumps(doc: Dict[str, Any]) -> str:
    """The snapshot file's text: the evidence, then the sealed cache of the model it
    derives to (a cache already in ``doc`` is dropped and made anew).  Evidence that
    cannot be derived is written without a cache."""
    doc = {k: v for k, v in doc.items() if k != "derived"}
    text = json.dumps(doc, indent=2)
    try:  # only a document that reads back as a snapshot is given a cache
        if doc.get("kind") != SNAPSHOT_KIND:
            raise NvtopoError("not a snapshot document")
        _validate_snapshot(doc, "snapshot")
        if _TOO_DEEP.search(text):  # a decoder may refuse such evidence: no cache to hide it
            raise NvtopoError("evidence nested too deeply to seal")
        model = derive(doc)
    except Exception:  # noqa: BLE001 - the evidence is what matters: never lose it to the cache
        return text + "\n"
    body = model.to_dict()
    body.pop("origin", None)  # where the file is read from is set when it is read
    cache = {
        "about": CACHE_ABOUT,
        "nvtopo_version": __version__,
        "code_sha256": code_digest(),
        "model": body,
        "file_sha256": _ZERO_DIGEST,
    }
    # The evidence stays indented for people; the cache, which is for nvtopo, is compact.
    # The seal is the file's last value, so the last "file_sha256" in the file is it.
    raw = (text[:text.rindex("}")].rstrip() + ',\n  "derived": '
           + json.dumps(cache, separators=(",", ":")) + "\n}\n").encode("utf-8")
    start = raw.index(_ZERO_DIGEST.encode("ascii"), raw.rindex(_SEAL_KEY))
    seal = hashlib.sha256(raw).hexdigest().encode("ascii")
    return (raw[:start] + seal + raw[start + len(seal):]).decode("utf-8")


# --- the model cache --------------------------------------------------------------------

CACHE_ABOUT = ("A cache of the model nvtopo derived from the evidence above.  It is used only "
               "while this file is unchanged (file_sha256: SHA-256 of the file with this value "
               "as 64 zeros) and read by an nvtopo that derives identically (nvtopo_version, "
               "code_sha256); otherwise the model is re-derived from the evidence.")
_SEAL_KEY = b'"file_sha256"'
#: A line indented past 64 levels (real evidence nests under ten): not sealed, since how deep
#: a decoder goes depends on the reader's own stack.
_TOO_DEEP = re.compile(r"\n {130}")
_ZERO_DIGEST = "0" * 64
_SEAL_RE = re.compile(rb'"file_sha256"\s*:\s*"([0-9a-f]{64})"')
#: The modules whose code decides what a snapshot derives to (a test keeps this complete).
DERIVATION_MODULES = ("__init__.py", "errors.py", "model.py", "model_shape.py",
                      "snapshot.py", "probes/__init__.py", "probes/deadline.py",
                      "probes/topo/__init__.py", "probes/topo/live.py",
                      "probes/topo/locate.py", "probes/topo/matrix.py", "probes/topo/scan.py",
                      "probes/nvml/__init__.py", "probes/nvml/build.py",
                      "probes/nvml/decode.py", "probes/nvml/links.py", "probes/nvml/paste.py",
                      "probes/nvml/record.py", "probes/nvml/source.py", "probes/nvml/text.py",
                      "probes/nvml/vocab.py", "probes/nvml/walk.py", "probes/sysfs/__init__.py",
                      "probes/sysfs/build.py", "probes/sysfs/facts.py", "probes/sysfs/live.py",
                      "probes/sysfs/parse.py", "probes/sysfs/read.py", "probes/sysfs/root.py",
                      "probes/sysfs/walk.py", "probes/host.py", "safe.py")
_code_digest: Optional[str] = None


def code_digest() -> str:
    """SHA-256 over the source of :data:`DERIVATION_MODULES` (computed once per process).

    Any change to how evidence is derived changes it, so a cache written by a
    different build, even one with the same version number, is not trusted.
    An unreadable source gives a digest no file carries.
    """
    global _code_digest
    if _code_digest is None:
        h = hashlib.sha256()
        base = Path(__file__).resolve().parent
        for name in DERIVATION_MODULES:
            h.update(name.encode("ascii") + b"\0")
            try:
                h.update((base / name).read_bytes())
            except OSError:
                h.update(b"unreadable:" + os.urandom(16))
            h.update(b"\0")
        _code_digest = h.hexdigest()
    return _code_digest


def _sealed(raw: bytes) -> Optional[str]:
    """The file's seal when it holds (the file is byte for byte what nvtopo wrote), else None."""
    at = raw.rfind(_SEAL_KEY)
    m = _SEAL_RE.match(raw, at) if at >= 0 else None
    if m is None:
        return None
    start, end = m.span(1)
    view = memoryview(raw)  # hashed in place: no copy of a file of hundreds of kB
    h = hashlib.sha256(view[:start])
    h.update(_ZERO_DIGEST.encode("ascii"))
    h.update(view[end:])
    seal = m.group(1).decode("ascii")
    return seal if h.hexdigest() == seal else None


def cached_model(doc: Dict[str, Any], raw: bytes, where: Optional[str] = None
                 ) -> Optional[Topology]:
    """The model cached in a snapshot document read from ``raw`` (the file's bytes exactly
    as read), if it may be used instead of re-deriving: ``None`` when there is no cache,
    the file was changed after nvtopo wrote it, or this nvtopo derives differently from
    the one that wrote it."""
    cache = doc.get("derived")
    if not isinstance(cache, dict) or cache.get("nvtopo_version") != __version__ \
            or _sealed(raw) != cache.get("file_sha256"):
        return None
    return _from_cache(cache, doc.get("host"), doc.get("nvtopo_version"), where)


_DERIVED_AT = b'\n  "derived": '


def sealed_model(raw: bytes, where: Optional[str] = None) -> Optional[Topology]:
    """:func:`cached_model` for a file not yet decoded, decoding only the cache (and the
    host facts, to compare), not the evidence: a sealed file is exactly what nvtopo wrote,
    whose layout is known (indented evidence; last, the compact cache, which holds no
    newline).  ``None`` wherever :func:`cached_model` would be, or the file is not such."""
    seal = _sealed(raw)
    at = raw.rfind(_DERIVED_AT)
    if seal is None or at < 0:
        return None
    try:
        cache, end = _DECODER.raw_decode(raw[at + len(_DERIVED_AT):].decode("utf-8"))
        head = raw[:at].decode("utf-8")
        host = _top_value(head, "host", {})
        version = _top_value(head, "nvtopo_version", None)
        kind = _top_value(head, "kind", None)
        schema = _top_value(head, "schema_version", None)
    except (ValueError, RecursionError):
        return None
    # what parse_snapshot asks of the document, short of decoding the evidence (whose
    # shape dumps() checked before sealing it; the seal vouches for the rest)
    if kind != SNAPSHOT_KIND or not _is_int(schema) or not 1 <= schema <= SNAPSHOT_SCHEMA:
        return None
    if not isinstance(cache, dict) or cache.get("file_sha256") != seal \
            or cache.get("nvtopo_version") != __version__:
        return None
    return _from_cache(cache, host, version, where)


_DECODER = json.JSONDecoder()


def _top_value(head: str, key: str, default: Any) -> Any:
    """A top-level value of nvtopo's indented snapshot text (top-level keys alone sit at
    two spaces after a newline)."""
    at = head.find(f'\n  "{key}": ')
    if at < 0:
        return default
    return _DECODER.raw_decode(head, at + len(key) + 7)[0]


def _from_cache(cache: Dict[str, Any], evidence_host: Any, doc_version: Any,
                where: Optional[str]) -> Optional[Topology]:
    if cache.get("code_sha256") != code_digest():
        return None
    # The seal catches accidental edits, not a tool that edits a file and seals it anew:
    # a model of the wrong shape, or host facts that are not the evidence's, is not used.
    body = cache.get("model")
    if not _model_shape_ok(body) or not _host_agrees(body.get("host"), evidence_host):
        return None
    try:
        topo = Topology.from_dict(body)
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
    topo.origin = _origin(doc_version, where)
    return topo


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _square(m: Any) -> bool:
    """A matrix (already of the right types) whose rows match its device list."""
    if m is None:
        return True
    n = len(m["devices"])
    return len(m["cells"]) == n and all(len(r) == n for r in m["cells"])


def _model_shape_ok(d: Any) -> bool:
    """The cached model has exactly the shape :func:`derive` gives models (every key and
    type, see :mod:`nvtopo.model_shape`), and its matrices are square."""
    if not model_shape.fits(d):
        return False
    nvml = d["extra"].get("nvml")
    p2p = nvml.get("p2p") if nvml is not None else None
    return (_square(d["matrix"]) and _square(d["p2p"])
            and all(_square(m) for m in (p2p or {}).values()))


def _host_agrees(model_host: Any, evidence_host: Any) -> bool:
    """:func:`derive` lays the snapshot's host facts over the probes': they must show."""
    if not isinstance(evidence_host, dict):
        return True
    return isinstance(model_host, dict) and all(
        k in model_host and model_host[k] == v for k, v in evidence_host.items())


def _origin(nvtopo_version: Any, where: Optional[str]) -> Dict[str, Any]:
    """Where a snapshot's model came from: the file, and the nvtopo that took the evidence."""
    return {"kind": "snapshot", "file": where, "nvtopo_version": nvtopo_version}


# --- deriving the model --------------------------------------------------------------


def derive(doc: Dict[str, Any], where: Optional[str] = None) -> Topology:
    """Re-derive the model from a snapshot document's raw evidence.

    Each probe's evidence goes through that probe's pure ``derive``; the
    fragments are merged in :data:`nvtopo.probes.PROBES` order.  Evidence of
    probes this version does not know is kept in the file and noted.
    """
    probes = doc.get("probes")
    if not isinstance(probes, dict):
        raise NvtopoError("corrupt snapshot: no \"probes\" object", where=where)
    topo = Topology()
    for name in probes_pkg.PROBES:
        evidence = probes.get(name)
        if evidence is None:
            continue
        if not isinstance(evidence, dict):
            raise NvtopoError(f"corrupt snapshot: probe {name!r} is not an object", where=where)
        if evidence.get("status") == "skipped":
            topo.note(f"source.{name}_skipped", f"{name}: {evidence.get('error') or 'not run'}",
                      source=name)
            continue
        if evidence.get("status") == "unanswered":
            topo.note(f"source.{name}_unanswered",
                      f"{name}: {evidence.get('error') or 'the probe did not return'}",
                      source=name, level="warning")
            continue
        try:
            fragment = probes_pkg.module(name).derive(evidence)
        except NvtopoError as exc:
            raise NvtopoError(exc.message, where=where) from None
        except (TypeError, ValueError, KeyError, AttributeError, IndexError,
                RecursionError, OverflowError) as exc:
            # Evidence of the right shape holds values of the wrong type: say so, no traceback.
            raise NvtopoError(f"corrupt snapshot: the {name} evidence cannot be read "
                              f"({type(exc).__name__}: {exc})", where=where) from None
        topo.merge(fragment)
    unknown = sorted(set(probes) - set(probes_pkg.PROBES))
    if unknown:
        topo.note("source.unknown_probe", "snapshot holds evidence this nvtopo does not read: "
                  + ", ".join(unknown), source="snapshot")
    host = doc.get("host")
    topo.host = {**topo.host, **(dict(host) if isinstance(host, dict) else {})}
    topo.origin = _origin(doc.get("nvtopo_version"), where)
    return topo


# --- reading --from input -----------------------------------------------------------------


def read_input(path: str) -> Tuple[str, str]:
    """Read ``path`` (``-`` for stdin) as text; returns ``(text, where)``.

    Raises :class:`NvtopoError` for missing, unreadable, empty, binary or
    oversized input.
    """
    data, where = read_bytes(path)
    return decode_bytes(data, where), where


#: Names of this process's standard input, read as ``-`` is.
STDIN_NAMES = ("-", "/dev/stdin", "/proc/self/fd/0", "/dev/fd/0")
_FD_ALIAS = re.compile(r"/(?:dev/fd|proc/self/fd)/([0-9]+)")


def read_bytes(path: str) -> Tuple[bytes, str]:
    """Read ``path`` (``-`` or ``/dev/stdin`` for stdin) as bytes; returns ``(data, where)``.

    Raises :class:`NvtopoError` for missing, unreadable or oversized input, and for
    anything that is not a regular file (a FIFO would block, a device never end),
    except standard input and descriptors handed to nvtopo (``<(cmd)``'s ``/dev/fd/63``).
    Never more than :data:`MAX_INPUT_BYTES` + 1 bytes are read.
    """
    if path == "":
        raise NvtopoError("empty file name", where="--from")
    if path in STDIN_NAMES:
        where = "<stdin>"
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    else:
        where = path
        data = _read_file(path)
    if len(data) > MAX_INPUT_BYTES:
        raise NvtopoError(f"file is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB; "
                          "not a snapshot or topo output", where=where)
    _check_bulk(data, where)
    return data, where


def _read_file(path: str) -> bytes:
    """A regular file's first :data:`MAX_INPUT_BYTES` + 1 bytes.  Opened without blocking
    and checked on the open descriptor (no race with a file swapped for a FIFO)."""
    import stat

    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
             | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        why = "no such file (a broken link?)" if os.path.islink(path) else "no such file"
        raise NvtopoError(why, where=path) from None
    except PermissionError:
        raise NvtopoError("permission denied", where=path) from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device with nothing behind it)
            raise NvtopoError(f"not a regular file ({_kind_of(path)})", where=path) from None
        raise NvtopoError(f"cannot read: {exc.strerror or exc}", where=path) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise NvtopoError("is a directory, not a file", where=path)
        handed = _FD_ALIAS.fullmatch(path) is not None and stat.S_ISFIFO(mode)
        if not stat.S_ISREG(mode) and not handed:
            raise NvtopoError(f"not a regular file ({_kind_of(path, mode)})", where=path)
        if handed:  # a pipe handed to nvtopo: read it as standard input is read
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            return fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise NvtopoError(f"cannot read: {exc.strerror or exc}", where=path) from None
    finally:
        if fd >= 0:
            os.close(fd)


def _kind_of(path: str, mode: Optional[int] = None) -> str:
    import stat

    if mode is None:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return "not openable"
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "not a regular file")


#: A bare nvidia-smi text (or one kept as a snapshot's evidence) is never larger: a
#: 1024-device topo matrix is about 5 MB in 1,100 lines, ``nvidia-smi -q`` of 8 GPUs 5,000
#: lines.  Parsing takes time and memory in proportion (``check`` of the 1024-device
#: matrix: 8 s, 400 MB peak; of 8 MiB of 4,000-cell rows: 7 s, 600 MB; 64 MiB of one-cell
#: rows took 200 s and 4.6 GB), so more is refused.
MAX_TEXT_BYTES = 8 * 1024 * 1024
MAX_TEXT_LINES = 100_000
#: A snapshot is never larger (a DGX H100's is 0.5 MB, a DGX-2's 0.6 MB).  Decoding a JSON
#: string may take four bytes a character (one emoji in 64 MiB of ASCII: 0.6 GB), so JSON
#: past this is refused before it is decoded.
MAX_JSON_BYTES = 16 * 1024 * 1024
#: Most JSON values (commas and brackets, counted before decoding) a snapshot larger than
#: :data:`_COUNT_PAST` bytes may hold: a DGX H100 snapshot holds about 17,000 and a DGX-2
#: 23,000.  A value costs up to ~100 bytes decoded (64 MiB of ``{},`` decode to 1.7 GB),
#: so this bounds what decoding a hostile file costs; a smaller file cannot hold enough
#: values to matter (4 MiB: 1.4 million at most), and is not counted.
MAX_JSON_VALUES = 1_000_000
_COUNT_PAST = 4 * 1024 * 1024


def _check_bulk(data: bytes, where: str) -> None:
    """Refuse input whose decoding would cost far more memory or time than any real
    snapshot or nvidia-smi text: too many JSON values, or text past :data:`MAX_TEXT_BYTES`
    (UTF-16 and UTF-32 text may take two and four times the bytes)."""
    head = data[:4]
    width = 4 if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)) else \
        2 if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else 1
    start = data[:64].lstrip(b"\xef\xbb\xbf\xff\xfe\x00 \t\r\n")
    if start.startswith(b"{"):
        if len(data) > MAX_JSON_BYTES:
            raise NvtopoError(f"JSON larger than {MAX_JSON_BYTES // (1024 * 1024)} MiB; not a "
                              "snapshot nvtopo wrote", where=where)
        if len(data) > _COUNT_PAST:
            values = data.count(b",") + data.count(b"[") + data.count(b"{")
            if values > MAX_JSON_VALUES:
                raise NvtopoError(f"holds more than {MAX_JSON_VALUES:,} JSON values "
                                  f"({values:,}); not a snapshot nvtopo wrote", where=where)
    elif len(data) > MAX_TEXT_BYTES * width:
        raise NvtopoError(f"text is larger than {MAX_TEXT_BYTES // (1024 * 1024)} MiB; not "
                          "nvidia-smi output", where=where)
    elif data.count(b"\n") > MAX_TEXT_LINES:
        raise NvtopoError(f"text has more than {MAX_TEXT_LINES:,} lines; not nvidia-smi "
                          "output", where=where)


_JSON_START = re.compile(rb"[ \t\r\n]*\{")


def _fast_snapshot(data: bytes, where: str
                   ) -> Optional[Tuple[Topology, Dict[str, Any], bool]]:
    """A snapshot read straight from its bytes (no text copy), when it is plain UTF-8 JSON
    that decodes; ``None`` sends anything else down the general path, whose errors are
    the precise ones.  The flag says whether the model came from the sealed cache."""
    if not _JSON_START.match(data):
        return None
    try:
        # strict UTF-8 (json.loads(bytes) would let lone surrogates through, and guess
        # UTF-16/32 without a BOM, which the general path refuses)
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # JSON and UTF-8 errors alike
        return None
    if not isinstance(doc, dict) or doc.get("kind") != SNAPSHOT_KIND:
        return None
    topo, cached = _model_of(_validate_snapshot(doc, where), data, where)
    return topo, doc, cached


def decode_bytes(data: bytes, where: str) -> str:
    """Decode input bytes: UTF-8, or UTF-16 with a BOM (PowerShell redirects)."""
    if not data.strip():
        raise NvtopoError("file is empty", where=where)
    for bom, enc in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                     (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            try:
                return data.decode(enc)
            except UnicodeDecodeError:
                raise NvtopoError(f"not valid {enc.upper()} text", where=where) from None
    if b"\x00" in data:
        raise NvtopoError("binary file (contains NUL bytes); expected a snapshot or "
                          "nvidia-smi topo text", where=where)
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if bad and bad > max(2, len(text) // 100):
        raise NvtopoError("binary file (not UTF-8 text); expected a snapshot or "
                          "nvidia-smi topo text", where=where)
    return text


def load_text(text: str, where: str) -> Topology:
    """Turn input text into a model: a snapshot (JSON) or a bare topo text."""
    if not text.strip():
        raise NvtopoError("file is empty", where=where)
    if _is_json(text):
        return model_of(parse_snapshot(text, where), text, where)
    from .probes import topo as topo_text
    from .probes.nvml import text as nvml_text

    if nvml_text.looks_like(text) and not topo_text.looks_like_topo(text):
        topo = nvml_text.derive_text(text)  # pasted nvidia-smi nvlink / -q text
        topo.origin = {"kind": "nvml-text", "file": where}
        return topo
    try:
        topo = topo_text.parse(text)
    except topo_text.TopoParseError as exc:
        raise NvtopoError(f"not an nvtopo snapshot, nvidia-smi topo or nvlink output: {exc}",
                          where=where) from None
    if nvml_text.looks_like(text):  # a topo matrix and nvlink text in one paste
        topo.merge(nvml_text.derive_text(text))
    topo.origin = {"kind": "topo-text", "file": where}
    return topo


def parse_snapshot(text: str, where: str) -> Dict[str, Any]:
    """Decode and validate a snapshot document."""
    if text.startswith("\ufeff"):  # a byte order mark some Windows editors write
        text = text[1:]
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NvtopoError(f"truncated or corrupt snapshot (JSON error at line {exc.lineno} "
                          f"column {exc.colno}: {exc.msg})", where=where) from None
    except RecursionError:
        raise NvtopoError("corrupt snapshot (JSON nested too deeply)", where=where) from None
    except ValueError as exc:  # e.g. an integer too long to convert
        raise NvtopoError(f"corrupt snapshot ({exc})", where=where) from None
    if not isinstance(doc, dict) or doc.get("kind") != SNAPSHOT_KIND:
        raise NvtopoError(f"JSON but not an nvtopo snapshot (no \"kind\": \"{SNAPSHOT_KIND}\")",
                          where=where)
    return _validate_snapshot(doc, where)


def _validate_snapshot(doc: Dict[str, Any], where: str) -> Dict[str, Any]:
    version = doc.get("schema_version")
    if not _is_int(version) or version < 1:
        raise NvtopoError("corrupt snapshot: schema_version is missing or not a positive "
                          "integer", where=where)
    if version > SNAPSHOT_SCHEMA:
        raise NvtopoError(f"snapshot schema version {version} is newer than this nvtopo "
                          f"({__version__}) reads (up to {SNAPSHOT_SCHEMA}); upgrade nvtopo",
                          where=where)
    probes = doc.get("probes")
    if not isinstance(probes, dict):
        raise NvtopoError("corrupt snapshot: no \"probes\" object", where=where)
    for name, ev in probes.items():
        if not isinstance(ev, dict):
            raise NvtopoError(f"corrupt snapshot: probe {name!r} is not an object", where=where)
        for key in ("stdout", "stderr", "error"):
            if ev.get(key) is not None and not isinstance(ev.get(key), str):
                raise NvtopoError(f"corrupt snapshot: probe {name!r} field {key!r} is not text",
                                  where=where)
            text = ev.get(key)
            if isinstance(text, str) and (len(text) > MAX_TEXT_BYTES
                                          or text.count("\n") > MAX_TEXT_LINES):
                raise NvtopoError(f"corrupt snapshot: probe {name!r} field {key!r} is larger "
                                  f"than {MAX_TEXT_BYTES // (1024 * 1024)} MiB or "
                                  f"{MAX_TEXT_LINES:,} lines; no nvidia-smi prints that much",
                                  where=where)
    return doc


def _is_json(text: str) -> bool:
    return text.lstrip("\ufeff \t\r\n").startswith("{")


def model_of(doc: Dict[str, Any], text: Optional[str], where: Optional[str]) -> Topology:
    """The model of a snapshot document read from ``text``: the sealed cache when it may
    be used (see :func:`cached_model`), else re-derived from the evidence."""
    raw = text.encode("utf-8", errors="surrogatepass") if text is not None else None
    return _model_of(doc, raw, where)[0]


def _model_of(doc: Dict[str, Any], raw: Optional[bytes], where: Optional[str]
              ) -> Tuple[Topology, bool]:
    """The model, and whether it came from the cache (``raw``: the file's bytes)."""
    if raw is not None and "derived" in doc:
        topo = cached_model(doc, raw, where)
        if topo is not None:
            return topo, True
    return derive(doc, where), False


def load(path: str) -> Topology:
    """Read ``--from`` input into a model (from a snapshot's sealed cache where it may
    be used, without decoding the evidence)."""
    return load_noting_cache(path)[0]


def load_noting_cache(path: str) -> Tuple[Topology, Optional[bool]]:
    """:func:`load`, and how the model was had: ``True`` from the snapshot's sealed cache,
    ``False`` re-derived from a snapshot's evidence, ``None`` parsed from a text."""
    data, where = read_bytes(path)
    topo = sealed_model(data, where) if data.endswith(b"}\n") else None
    if topo is not None:
        return topo, True
    topo, doc, cached = _load_data(data, where)
    return topo, (cached if doc else None)


def load_with_document(path: str) -> Tuple[Topology, Dict[str, Any]]:
    """Read ``--from`` input into a model, with the snapshot document it came from
    (``{}`` for a bare topo or nvlink text)."""
    topo, doc, _cached = _load_data(*read_bytes(path))
    return topo, doc


def _load_data(data: bytes, where: str) -> Tuple[Topology, Dict[str, Any], bool]:
    fast = _fast_snapshot(data, where)
    if fast is not None:
        return fast
    text = decode_bytes(data, where)
    if _is_json(text):
        doc = parse_snapshot(text, where)
        topo, cached = _model_of(doc, text.encode("utf-8", errors="surrogatepass"), where)
        return topo, doc, cached
    return load_text(text, where), {}, False


def from_text_evidence(text: str, where: str) -> Dict[str, Any]:
    """Wrap a pasted topo text as a snapshot document (host unknown)."""
    from .probes import topo as topo_text

    return {
        "kind": SNAPSHOT_KIND,
        "schema_version": SNAPSHOT_SCHEMA,
        "nvtopo_version": __version__,
        "host": {},
        "imported_from": where,
        "probes": {
            topo_text.SOURCE: {
                "command": "nvidia-smi",
                "args": list(topo_text.DEFAULT_ARGS),
                "exit_status": None,
                "stdout": text,
                "stderr": None,
                "duration_s": None,
                "status": "ok",
                "error": None,
            }
        },
    }


def load_document(path: str) -> Dict[str, Any]:
    """Read ``--from`` input as a snapshot document (a bare topo text is wrapped)."""
    text, where = read_input(path)
    if _is_json(text):
        return parse_snapshot(text, where)
    from .probes import topo as topo_text
    from .probes.nvml import text as nvml_text

    is_topo = topo_text.looks_like_topo(text)
    if not is_topo and nvml_text.looks_like(text):
        doc = from_text_evidence(text, where)
        doc["probes"] = {"nvml": nvml_text_evidence(text)}
        return doc
    if not is_topo:
        load_text(text, where)  # raises the precise one-line error
    doc = from_text_evidence(text, where)
    if nvml_text.looks_like(text):
        doc["probes"]["nvml"] = nvml_text_evidence(text)
    return doc


def nvml_text_evidence(text: str) -> Dict[str, Any]:
    """Pasted nvidia-smi nvlink / -q text kept as the NVML probe's evidence."""
    return {"source": "nvml-text", "status": "ok", "stdout": text, "error": None}


def live(options: Optional[ProbeOptions] = None) -> Topology:
    """Probe this machine with every source.

    Raises :class:`NvtopoError` when no source found a GPU (an explicit
    ``--sysfs-root`` tree with NICs is shown all the same), saying why and
    how to audit a file instead.
    """
    from .probes import topo as topo_text

    doc = take(options)
    topo = derive(doc, where=None)
    topo.origin = {"kind": "live"}
    if options is not None and options.sysfs_root:
        topo.origin["sysfs_root"] = options.sysfs_root
        if topo.nics:
            return topo
    if topo.gpus or topo.matrix is not None or topo.p2p is not None:
        return topo
    evidence = doc["probes"][topo_text.SOURCE]
    hint = ("to audit a saved file instead: nvtopo show --from FILE (a snapshot, or a "
            "pasted `nvidia-smi topo -m`; - reads stdin), or try: nvtopo show --example dgx-h100")
    why = evidence.get("error") or "nvidia-smi topo -m listed no GPU"
    if evidence.get("status") == "missing":
        raise NvtopoError(f"no NVIDIA GPU here: {why}; {hint}", where="live probe")
    raise NvtopoError(f"{why}; {hint}", where="live probe")


def from_example(name: str) -> Topology:
    from . import examples

    topo = load_text(examples.read(name), f"example {name}")
    topo.origin = {"kind": "example", "file": f"example {name}"}
    return topo
