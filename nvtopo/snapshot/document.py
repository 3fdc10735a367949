"""The snapshot document: its shape, its validation, and the model derived from its evidence.

A snapshot holds *evidence*, not conclusions: per probe, the command, its arguments, exit
status, stdout, stderr and duration (or why it could not run).  :func:`derive` turns that
evidence into the model, so a parser fix also applies to snapshots taken before the fix.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from .. import __version__
from .. import probes as probes_pkg
from ..errors import NvtopoError
from ..model import Host, Origin, Topology
from ..model.votes import settle
from ..safe import json_loads
from .read import MAX_TEXT_BYTES, MAX_TEXT_LINES

if TYPE_CHECKING:
    from ..probes import readers
    from typing_extensions import TypeGuard

SNAPSHOT_KIND = "nvtopo-snapshot"
#: Version of the snapshot document layout.
SNAPSHOT_SCHEMA = 1


def is_int(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


# --- reading and validating the document -------------------------------------------------


def parse_snapshot(text: str, where: str) -> Dict[str, Any]:
    """Decode and validate a snapshot document."""
    if text.startswith("\ufeff"):  # a byte order mark some Windows editors write
        text = text[1:]
    try:
        doc = json_loads(text)
    except json.JSONDecodeError as exc:
        raise NvtopoError(f"truncated or corrupt snapshot (JSON error at line {exc.lineno} "
                          f"column {exc.colno}: {exc.msg})", where=where) from None
    except RecursionError:
        raise NvtopoError("corrupt snapshot (JSON nested too deeply)", where=where) from None
    except ValueError as exc:  # e.g. an integer too long to convert
        raise NvtopoError(f"corrupt snapshot ({exc})", where=where) from None
    if not is_snapshot(doc):
        raise NvtopoError(f"JSON but not an nvtopo snapshot (no \"kind\": \"{SNAPSHOT_KIND}\")",
                          where=where)
    return validate(doc, where)


def is_snapshot(doc: Any) -> bool:
    """A decoded JSON value that says it is a snapshot (its shape still to be validated)."""
    return isinstance(doc, dict) and doc.get("kind") == SNAPSHOT_KIND


def validate(doc: Dict[str, Any], where: str) -> Dict[str, Any]:
    """Check what reading a snapshot relies on: a schema version this nvtopo reads, and a
    ``probes`` object of evidence objects whose texts are texts of a size nvidia-smi
    prints.  (The ``host`` block is checked fact by fact when deriving.)"""
    version = doc.get("schema_version")
    if not is_int(version) or version < 1:
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


# --- host facts ----------------------------------------------------------------------------

_TEXT, _TEXT_OR_NULL, _COUNT, _COUNT_OR_NULL = "text", "text or null", "a count", \
    "a count or null"
#: The host facts nvtopo writes (a snapshot's ``host`` block, the host probe's facts) and
#: what each must be: the model's JSON contract (docs/schemas/model.schema.json, host).
#: Other keys a snapshot's host block holds are kept as they are.
HOST_FACTS = {"hostname": _TEXT_OR_NULL, "kernel": _TEXT, "os": _TEXT, "machine": _TEXT,
              "time": _TEXT, "sysfs_root": _TEXT, "cpu_count_logical": _COUNT_OR_NULL,
              "cpu_count_physical": _COUNT_OR_NULL, "memory_total_bytes": _COUNT}


def _fits(value: Any, want: str) -> bool:
    if value is None:
        return want in (_TEXT_OR_NULL, _COUNT_OR_NULL)
    if want in (_TEXT, _TEXT_OR_NULL):
        return isinstance(value, str)
    return is_int(value) and value >= 0


def _json_type(value: Any) -> str:
    return ("null" if value is None else "true or false" if isinstance(value, bool)
            else "a number" if isinstance(value, (int, float)) else "text"
            if isinstance(value, str) else "a list" if isinstance(value, list)
            else "an object")


def host_facts_of(block: Any, what: str = "the snapshot's host block"
                  ) -> Tuple[Dict[str, Any], List[str]]:
    """The facts of a host block that may be used, and why each other one was not: a known
    fact of the wrong type (``"hostname": 5``) is dropped, so every document that shows host
    facts keeps its JSON contract; a block that is no object is dropped whole."""
    if block is None:
        return {}, []
    if not isinstance(block, dict):
        return {}, [f"{what} is {_json_type(block)}, not an object; ignored"]
    facts: Dict[str, Any] = {}
    why: List[str] = []
    for key, value in block.items():
        want = HOST_FACTS.get(key)
        if want is not None and not _fits(value, want):
            why.append(f'host fact "{key}" is {_json_type(value)}, not {want}; ignored')
            continue
        facts[key] = value
    return facts, why


# --- deriving the model --------------------------------------------------------------


def snapshot_origin(nvtopo_version: Any, where: Optional[str]) -> Origin:
    """Where a snapshot's model came from: the file, and the nvtopo that took the evidence."""
    return Origin.of("snapshot", file=where, nvtopo_version=nvtopo_version)


def derive(doc: Dict[str, Any], where: Optional[str] = None) -> Topology:
    """Re-derive the model from a snapshot document's raw evidence.

    Each probe's evidence goes through that probe's pure ``derive``; the
    fragments are merged in :data:`nvtopo.probes.PROBES` order.  Evidence of
    probes this version does not know is kept in the file and noted.  The snapshot's
    host block is laid over the host probe's facts (each checked: :func:`host_facts_of`).
    """
    probes = doc.get("probes")
    if not isinstance(probes, dict):
        raise NvtopoError("corrupt snapshot: no \"probes\" object", where=where)
    from ..probes import readers

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
        if evidence.get("status") in ("unanswered", "crashed"):
            status = evidence["status"]
            default = ("the probe did not return" if status == "unanswered"
                       else "the probe failed inside nvtopo")
            topo.note(f"source.{name}_{status}", f"{name}: {evidence.get('error') or default}",
                      source=name, level="warning", subject=name)
            continue
        try:
            kept = readers.kept_text(name, evidence)  # a pasted text: read by its reader
            fragment = (readers.read_kept(name, kept) if kept is not None
                        else probes_pkg.module(name).derive(evidence))
        except NvtopoError as exc:
            raise NvtopoError(exc.message, where=where) from None
        except (TypeError, ValueError, KeyError, AttributeError, IndexError,
                RecursionError, OverflowError) as exc:
            # Evidence of the right shape holds values of the wrong type: say so, no traceback.
            raise NvtopoError(f"corrupt snapshot: the {name} evidence cannot be read "
                              f"({type(exc).__name__}: {exc})", where=where) from None
        topo.merge(fragment)
    settle(topo)  # NVML and sysfs agreeing outvote a text
    unknown = sorted(set(probes) - set(probes_pkg.PROBES))
    if unknown:
        topo.note("source.unknown_probe", "snapshot holds evidence this nvtopo does not read: "
                  + ", ".join(unknown), source="snapshot")
    probed, why = host_facts_of(topo.host.to_dict(), "the host probe's facts")
    stated, why_stated = host_facts_of(doc.get("host"))
    for message in why + why_stated:
        topo.note("host.bad_fact", message, source="host", level="warning")
    topo.host = Host.of({**probed, **stated})
    topo.origin = snapshot_origin(doc.get("nvtopo_version"), where)
    return topo


# --- documents made from pasted text ---------------------------------------------------------


def text_document(probes: Dict[str, Any], where: str) -> Dict[str, Any]:
    """A snapshot document (host unknown) holding ``probes``' evidence, made from a paste."""
    return {
        "kind": SNAPSHOT_KIND,
        "schema_version": SNAPSHOT_SCHEMA,
        "nvtopo_version": __version__,
        "host": {},
        "imported_from": where,
        "probes": probes,
    }


def topo_text_evidence(text: str) -> Dict[str, Any]:
    """A pasted topo text kept as the ``topo-text`` probe's evidence."""
    from ..probes import topo as topo_text

    return {
        "command": "nvidia-smi",
        "args": list(topo_text.DEFAULT_ARGS),
        "exit_status": None,
        "stdout": text,
        "stderr": None,
        "duration_s": None,
        "status": "ok",
        "error": None,
    }


def from_text_evidence(text: str, where: str) -> Dict[str, Any]:
    """Wrap a pasted topo text as a snapshot document (host unknown)."""
    from ..probes import topo as topo_text

    return text_document({topo_text.SOURCE: topo_text_evidence(text)}, where)


def nvml_text_evidence(text: str) -> Dict[str, Any]:
    """Pasted nvidia-smi nvlink / -q text kept as the NVML probe's evidence."""
    return {"source": "nvml-text", "status": "ok", "stdout": text, "error": None}


#: How each probe that keeps pasted text keeps it (:attr:`nvtopo.probes.readers.Reader.keep`).
def imex_text_evidence(text: str) -> Dict[str, Any]:
    """Pasted nvidia-imex-ctl output kept as the imex probe's evidence."""
    from ..probes import imex

    return imex.pasted_evidence(text)


_KEEPERS = {"topo-text": topo_text_evidence, "nvml": nvml_text_evidence,
            "imex": imex_text_evidence}


def kept_document(parts: Sequence["readers.Part"], where: str) -> Dict[str, Any]:
    """The text parts of a paste (:func:`nvtopo.probes.readers.split`) kept as one snapshot
    document, each as the evidence of the probe its reader names.  A part never kept
    refuses the whole paste before anything is read (a snapshot without it would check
    clean where the paste does not); then each part is vetted in order, a part no reader is
    sure of read first, so its reader says precisely what is wrong."""
    from ..probes import readers

    kept: List[Tuple["readers.Part", str]] = []
    for part in parts:
        if part.reader.keep is None:
            raise NvtopoError(part.reader.refused, where=where)
        kept.append((part, part.reader.keep))
    probes: Dict[str, Any] = {}
    for part, probe in kept:
        if part.sure != readers.SURE:
            readers.model([part], where)  # raises the reader's one-line error
        if part.reader.vet is not None:
            part.reader.vet(part.text, where)
        probes[probe] = _KEEPERS[probe](part.text)
    return text_document(probes, where)
