"""The sealed model cache: a snapshot file carries the model it derives to.

Deriving costs tens of milliseconds, which adds up over a fleet, so a snapshot written by
nvtopo (:func:`dumps`) also carries the model it derived, under ``"derived"`` at the end
of the file.  That copy is only a cache, used (:func:`cached_model`, :func:`sealed_model`)
when the file is byte for byte what nvtopo wrote (a SHA-256 of the file seals it) *and*
the reading nvtopo derives exactly as the writing one did (same version, same SHA-256 of
the derivation code, :func:`code_digest`).  An edited file, an older or newer nvtopo, or
a changed parser: the model is re-derived from the evidence.  A cache the model's types do
not accept (:meth:`nvtopo.model.Topology.from_dict`, strict; :func:`typed_model`) or whose
host facts are not the evidence's is not used either.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
from typing import Any, Dict, Optional, Tuple

from .. import __version__
from ..errors import NvtopoError
from ..model import Origin, Topology
from ..model.rows import encode_rows
from . import document

def dumps(doc: Dict[str, Any]) -> str:
    """The snapshot file's text: the evidence, then the sealed cache of the model it
    derives to (a cache already in ``doc`` is dropped and made anew).  Evidence that
    cannot be derived is written without a cache."""
    doc = {k: v for k, v in doc.items() if k != "derived"}
    text = json.dumps(doc, indent=2)
    try:  # only a document that reads back as a snapshot is given a cache
        if not document.is_snapshot(doc):
            raise NvtopoError("not a snapshot document")
        document.validate(doc, "snapshot")
        if _TOO_DEEP.search(text):  # a decoder may refuse such evidence: no cache to hide it
            raise NvtopoError("evidence nested too deeply to seal")
        model = document.derive(doc)
    except Exception:  # noqa: BLE001 - the evidence is what matters: never lose it to the cache
        return text + "\n"
    model.origin = Origin()  # where the file is read from is set when it is read
    cache = {
        "about": CACHE_ABOUT,
        "nvtopo_version": __version__,
        "code_sha256": code_digest(),
        "rows": encode_rows(model),
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
DERIVATION_MODULES = ("__init__.py", "errors.py", "model/__init__.py", "model/codec.py",
                      "model/core.py", "model/host.py", "model/node.py",
                      "model/net.py", "model/nvlink.py", "model/nvml.py", "model/pcie.py",
                      "model/rdma.py", "model/nccl.py", "model/rows.py", "model/rows_compiled.py",
                      "model/spec.py", "model/storage.py", "model/topology.py", "model/vocab.py",
                      "model/votes.py",
                      "snapshot/__init__.py", "snapshot/cache.py", "snapshot/document.py",
                      "snapshot/read.py", "probes/readers.py", "probes/gds_text.py",
                      "probes/dcgmi_text.py", "probes/nvml/xml.py", "probes/nccl/__init__.py",
                      "probes/nccl/log.py", "probes/nccl/perf.py",
                      "probes/nccl/topo_xml.py",
                      "probes/__init__.py", "probes/deadline.py", "probes/run.py",
                      "probes/topo/__init__.py", "probes/topo/affinity.py", "probes/topo/legend.py",
                      "probes/topo/live.py",
                      "probes/topo/locate.py", "probes/topo/matrix.py", "probes/topo/scan.py",
                      "probes/topo/several.py",
                      "probes/topo/unwrap.py",
                      "probes/nvml/__init__.py", "probes/nvml/build.py",
                      "probes/nvml/decode.py", "probes/nvml/links.py", "probes/nvml/paste.py",
                      "probes/nvml/paste_q.py",
                      "probes/nvml/record.py", "probes/nvml/source.py", "probes/nvml/text.py",
                      "probes/nvml/vocab.py", "probes/nvml/walk.py", "probes/sysfs/__init__.py",
                      "probes/sysfs/build.py", "probes/sysfs/drivers.py", "probes/sysfs/facts.py", "probes/sysfs/live.py",
                      "probes/sysfs/nvme.py", "probes/sysfs/system.py",
                      "probes/sysfs/parse.py", "probes/sysfs/read.py", "probes/sysfs/root.py",
                      "probes/sysfs/walk.py", "probes/sysfs/net.py", "probes/host.py",
                      "probes/wireguard.py", "model/events.py", "model/xid.json",
                      "probes/kmsg/__init__.py", "probes/kmsg/lines.py",
                      "probes/kmsg/events.py", "plain.py", "safe.py",
                      "model/imex.py", "probes/imex.py", "probes/imex_text.py")
_code_digest: Optional[str] = None


def code_digest() -> str:
    """SHA-256 over the source of :data:`DERIVATION_MODULES` (computed once per process).

    Any change to how evidence is derived changes it, so a cache written by a
    different build, even one with the same version number, is not trusted.
    An unreadable source gives a digest no file carries.  Reading the sources costs a
    start-up about 2 ms, so the digest is kept beside the bytecode (:func:`_kept_path`)
    under each source's size, modification and change times and inode (:func:`_stamp`):
    a source edited, replaced, added or removed is read again, even one whose modification
    time a copy or an archive restored (its change time is the copy's).
    """
    global _code_digest
    if _code_digest is None:
        base = _package_dir()
        stamp = _stamp(base)
        digest = _kept(stamp) if stamp is not None else None
        if digest is None:
            digest, whole = _digest(base)
            if stamp is not None and whole:
                _keep(stamp, digest)
        _code_digest = digest
    return _code_digest


def _package_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def _digest(base: str) -> Tuple[str, bool]:
    """The digest, and whether every source was read (else it is one no file carries, and
    is never kept)."""
    h = hashlib.sha256()
    whole = True
    for name in DERIVATION_MODULES:
        h.update(name.encode("ascii") + b"\0")
        try:
            with open(os.path.join(base, name), "rb") as f:
                h.update(f.read())
        except OSError:
            h.update(b"unreadable:" + os.urandom(16))
            whole = False
        h.update(b"\0")
    return h.hexdigest(), whole


#: A source changed this recently may yet change again within its file system's time
#: granularity without its times changing: its digest is not kept (git's "racy" rule).
_RACY_S = 2.0


def _stamp(base: str) -> Optional[str]:
    """What the digest is kept under: the package's place and each source's name, size,
    modification and change times (nanoseconds), device and inode; ``None`` where a source
    cannot be looked at or changed in the last :data:`_RACY_S` seconds."""
    import time

    parts = [base]
    newest = 0
    for name in DERIVATION_MODULES:
        try:
            st = os.stat(os.path.join(base, name))
        except OSError:
            return None
        parts.append(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0"
                     f"{st.st_dev}\0{st.st_ino}")
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    if newest > time.time_ns() - int(_RACY_S * 1e9):
        return None
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


_KEPT_FILE = "nvtopo-code-digest.json"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _kept_path() -> Optional[str]:
    """The kept digest's file: in this module's bytecode directory (``__pycache__``, or
    under ``PYTHONPYCACHEPREFIX``), where the interpreter keeps what it compiled."""
    import importlib.util

    try:
        return os.path.join(os.path.dirname(importlib.util.cache_from_source(__file__)),
                            _KEPT_FILE)
    except (NotImplementedError, ValueError):
        return None


def _kept(stamp: str) -> Optional[str]:
    """The kept digest, where it was kept under ``stamp`` (a regular file, opened without
    blocking: a FIFO put there is not waited on; 512 bytes at most)."""
    import stat

    path = _kept_path()
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        kept = json.loads(os.read(fd, 512))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(kept, dict) or kept.get("stamp") != stamp:
        return None
    digest = kept.get("digest")
    return digest if isinstance(digest, str) and _HEX64.match(digest) else None


def _keep(stamp: str, digest: str) -> None:
    """Keep the digest (as the interpreter keeps bytecode: not where it may not write it,
    ``PYTHONDONTWRITEBYTECODE``; written whole under a new name of its own, then renamed)."""
    import sys
    import tempfile

    path = _kept_path()
    if path is None or sys.dont_write_bytecode or not os.path.isdir(os.path.dirname(path)):
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=_KEPT_FILE + ".", dir=os.path.dirname(path))
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(json.dumps({"stamp": stamp, "digest": digest}))
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


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
        host = _top_value(raw, at, "host", {})
        version = _top_value(raw, at, "nvtopo_version", None)
        kind = _top_value(raw, at, "kind", None)
        schema = _top_value(raw, at, "schema_version", None)
    except (ValueError, RecursionError):
        return None
    # what parse_snapshot asks of the document, short of decoding the evidence (whose
    # shape dumps() checked before sealing it; the seal vouches for the rest)
    if kind != document.SNAPSHOT_KIND or not document.is_int(schema) \
            or not 1 <= schema <= document.SNAPSHOT_SCHEMA:
        return None
    if not isinstance(cache, dict) or cache.get("file_sha256") != seal \
            or cache.get("nvtopo_version") != __version__:
        return None
    return _from_cache(cache, host, version, where)


_DECODER = json.JSONDecoder()


def _top_value(raw: bytes, stop: int, key: str, default: Any) -> Any:
    """A top-level value of nvtopo's indented snapshot text before ``stop`` (top-level keys
    alone sit at two spaces after a newline: JSON text holds no raw newline), decoding only
    its own bytes (up to the next top-level key), not the evidence around it."""
    mark = b'\n  "' + key.encode("ascii") + b'": '
    at = raw.find(mark, 0, stop)
    if at < 0:
        return default
    start = at + len(mark)
    end = raw.find(b'\n  "', start, stop)
    return _DECODER.raw_decode(raw[start:end if end >= 0 else stop].decode("utf-8"))[0]


def _from_cache(cache: Dict[str, Any], evidence_host: Any, doc_version: Any,
                where: Optional[str]) -> Optional[Topology]:
    if cache.get("code_sha256") != code_digest():
        return None
    # The seal catches accidental edits, not a tool that edits a file and seals it anew:
    # a model the types do not accept, or host facts that are not the evidence's, is not used.
    topo = typed_rows(cache.get("rows"))
    if topo is None or not _host_agrees(topo.host.to_dict(), evidence_host):
        return None
    topo.origin = document.snapshot_origin(doc_version, where)
    return topo


def typed_rows(rows: Any) -> Optional[Topology]:
    """The cached model (its rows, :mod:`nvtopo.model.rows`), if the model's types accept
    it (:meth:`Topology.from_rows`, as strict as :meth:`Topology.from_dict`: every value
    and JSON type, square matrices) and it holds nothing the probes do not derive (see
    :func:`typed_model`).  ``None`` otherwise (the evidence is re-derived)."""
    enabled = gc.isenabled()
    gc.disable()  # hundreds of records and no cycle among them: no collection is due
    try:
        return _derivable(Topology.from_rows(rows))
    except (ValueError, RecursionError):
        return None
    finally:
        if enabled:
            gc.enable()


def typed_model(body: Any) -> Optional[Topology]:
    """A model in its JSON form, if the model's types accept it (:meth:`Topology.from_dict`,
    strict: every key and JSON type, square matrices) and it holds nothing the probes do
    not derive: no key under an ``extra`` this nvtopo does not know, no host fact other
    than the ones it derives.  ``None`` otherwise."""
    try:
        topo = Topology.from_dict(body)
    except (ValueError, RecursionError):
        return None
    return _derivable(topo)


def _derivable(topo: Topology) -> Optional[Topology]:
    if topo.extra or any(g.extra for g in topo.gpus) or any(n.extra for n in topo.nics) \
            or topo.host.others \
            or not all("label" in n.sources and "name" in n.sources for n in topo.nics):
        return None  # (every NIC a probe lists has the source of its label and name)
    return topo


def _host_agrees(model_host: Any, evidence_host: Any) -> bool:
    """:func:`~nvtopo.snapshot.document.derive` lays the snapshot's host facts (those of
    the right type) over the probes': they must show."""
    stated, _ = document.host_facts_of(evidence_host)
    return isinstance(model_host, dict) and all(
        k in model_host and model_host[k] == v for k, v in stated.items())

