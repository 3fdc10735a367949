"""Snapshots, and the one front door for input.

Every command reads its input through :func:`open_input`: a file (``--from FILE``; ``-``
reads standard input), a bundled example (``--example NAME``), or this machine, probed
with every source (``show``, ``check``, ``snapshot``), with sysfs alone (``ib``) or with
NVML alone (``links``).  It returns one :class:`Opened`: the model, the snapshot document
and where they came from.  What a command cannot work without (GPU facts, sysfs evidence)
is asked for in the request (:attr:`Input.require`) and refused here, in one way.

A file is a snapshot or pasted text (one tool's output, or a ticket holding several),
recognised by content, never by its name: the one registry of readers
(:mod:`nvtopo.probes.readers`) is asked once and says what each part is.  The package's parts:

* :mod:`~nvtopo.snapshot.read`: reading bytes within bounds, decoding;
* :mod:`~nvtopo.snapshot.document`: the document, its validation, :func:`derive`;
* :mod:`~nvtopo.snapshot.cache`: :func:`dumps` and the sealed model cache it writes;
* :mod:`~nvtopo.snapshot.live`: probing this machine (:func:`take`).
"""

from __future__ import annotations

import re
from collections import namedtuple
from typing import Any, Dict, Optional, Tuple

from ..errors import NvtopoError
from ..model import Origin, Topology
from ..safe import json_loads
from . import cache, document, read
from .cache import code_digest, dumps
from .document import (SNAPSHOT_KIND, SNAPSHOT_SCHEMA, derive, from_text_evidence,
                       parse_snapshot)
from .read import (MAX_INPUT_BYTES, MAX_JSON_BYTES, MAX_JSON_VALUES, MAX_TEXT_BYTES,
                   MAX_TEXT_LINES, STDIN_NAMES, decode_bytes, read_bytes)

__all__ = ["Input", "Opened", "open_input", "load", "load_text", "load_document", "take",
           "file_text",
           "derive", "dumps", "from_text_evidence", "parse_snapshot", "code_digest",
           "decode_bytes", "read_bytes", "SNAPSHOT_KIND", "SNAPSHOT_SCHEMA", "STDIN_NAMES",
           "MAX_INPUT_BYTES", "MAX_JSON_BYTES", "MAX_JSON_VALUES", "MAX_TEXT_BYTES",
           "MAX_TEXT_LINES"]

#: What a live request probes (:attr:`Input.probes`).
EVERY_PROBE = "all"
SYSFS_ONLY = "sysfs"
NVML_ONLY = "nvml"
_LIVE_PROBES = {EVERY_PROBE: None, SYSFS_ONLY: ("sysfs", "host"), NVML_ONLY: ("nvml",)}

#: What a request wants back (:attr:`Input.want`).
MODEL = "model"
MODEL_AND_DOCUMENT = "model+document"
DOCUMENT = "document"


class Input(namedtuple("Input", ("path", "example", "sysfs_root", "timeout", "probes", "want",
                                 "require", "command"),
                       defaults=(None, None, None, 30.0, EVERY_PROBE, MODEL, None, "input"))):
    """What a command reads: a file, a bundled example, or this machine.

    * ``path`` (``--from``; ``-`` reads standard input) and ``example`` (``--example``) are
      exclusive; with neither, this machine is probed: every probe, or as ``probes`` says
      (``"sysfs"``: the sysfs and host probes, as ``ib`` reads; ``"nvml"``: NVML alone, as
      ``links`` reads), under ``timeout`` (seconds), reading ``sysfs_root`` as ``/sys``.
    * ``want``: ``"model"``: the model (from a snapshot's sealed cache where it may be
      used); ``"model+document"``: the model and the snapshot document it came from (``{}``
      for a bare text); ``"document"``: the document alone, a bare text wrapped as a
      snapshot's evidence, nothing derived (``nvtopo snapshot``).
    * ``require``: refuse input without what the command needs (:meth:`Opened.require`):
      ``"show"`` or ``"check"`` (GPU facts), ``"sysfs"`` (sysfs evidence, as ``ib`` reads).
    * ``command``: the command, named in errors about options given together.

    (A named tuple, not a dataclass: it is made at every start, and a dataclass costs a
    millisecond to define.)
    """

    __slots__ = ()


class Opened(namedtuple("Opened", ("model", "document", "where", "cached", "warnings"),
                        defaults=(None, ()))):
    """What :func:`open_input` read.

    * ``model``: the :class:`~nvtopo.model.Topology` (None when only the document was
      asked for);
    * ``document``: the snapshot document (see :class:`Input`'s ``want``): a file's, a live
      probe's, or ``{}``;
    * ``where``: where the input came from, as errors name it: the file, ``<stdin>``,
      ``example NAME`` or ``live probe``;
    * ``cached``: ``True``, the model came from the snapshot's sealed cache; ``False``,
      re-derived from a snapshot's evidence; ``None``, parsed from a text or probed;
    * ``warnings``: lines worth a warning on standard error (a probe that timed out).
    """

    __slots__ = ()

    @property
    def origin(self) -> Origin:
        """The model's origin (``kind``, ``file``, ...): what JSON output says of it."""
        return self.model.origin if self.model is not None else Origin()

    def require(self, need: str) -> None:
        """Refuse a model without what the command needs, the one way every command
        refuses it: ``"show"`` or ``"check"``: GPU facts (``nothing to check: <why>``);
        ``"sysfs"``: sysfs evidence in a file (a live sysfs probe always gives some)."""
        topo = self.model
        if topo is None:
            return
        if need == "sysfs":
            if self.where != _LIVE and "sysfs" not in topo.sources and topo.sysfs is None \
                    and not any(n.sysfs is not None for n in topo.nics):  # ibstat text
                raise NvtopoError("holds no sysfs evidence (take a snapshot with `nvtopo "
                                  "snapshot` on the node, or read a copied tree with "
                                  "--sysfs-root DIR)", where=topo.origin.file or self.where)
            return
        if need in ("check", "show") and topo.gds_text is not None:
            return  # a pasted gdscheck -p: GPUDirect Storage facts, no GPU (docs/storage.md)
        if need == "check" and topo.kernel_log is not None:
            return  # a pasted kernel log: events, no GPU (docs/events.md)
        if need in ("check", "show") and topo.imex is not None \
                and topo.imex.source == "imex-text":
            return  # pasted nvidia-imex-ctl output: the IMEX domain, no GPU (docs/imex.md)
        if not topo.gpus and topo.matrix is None and topo.p2p is None \
                and not any(n.sysfs is not None for n in topo.nics) \
                and not any(n.code == "sysfs.no_rdma_driver" for n in topo.notes):
            # (an ibstat text has NICs; a node after a reimage NICs with no RDMA driver)
            if topo.nccl_log is not None or topo.nccl_tests is not None \
                    or topo.nccl_topo is not None:  # NCCL's own output (docs/nccl.md)
                raise NvtopoError(f"nothing to {need}: NCCL's output holds no node facts; "
                                  "read it with nvtopo explain --from FILE",
                                  where=topo.origin.file or "input")
            why = "; ".join(n.message for n in topo.notes) or "no GPU facts"
            raise NvtopoError(f"nothing to {need}: {why}",
                              where=topo.origin.file or "input")


def open_input(request: Input) -> Opened:
    """Read the input a command asked for (see :class:`Input`); every error is one
    :class:`NvtopoError` line naming the file, the option or ``live probe``."""
    _check_options(request)
    if request.example is not None:
        opened = _open_example(request.example)
    elif request.path is not None:
        opened = _open_file(request.path, request.want)
    else:
        opened = _open_live(request)
    if request.require is not None:
        opened.require(request.require)
    return opened


def load(path: str) -> Topology:
    """The model of ``--from`` input: ``open_input(Input(path=path)).model``."""
    return _open_file(path, MODEL).model


def load_document(path: str) -> Dict[str, Any]:
    """``--from`` input as a snapshot document (a bare text wrapped as evidence)."""
    return _open_file(path, DOCUMENT).document


def take(options: Any = None, names: Any = None) -> Dict[str, Any]:
    """Probe this machine: the snapshot document (see :func:`nvtopo.snapshot.live.take`)."""
    from . import live

    return live.take(options, names)


# --- the options a request combines ------------------------------------------------------


def _check_options(request: Input) -> None:
    if request.want not in (MODEL, MODEL_AND_DOCUMENT, DOCUMENT) \
            or request.probes not in _LIVE_PROBES:
        raise ValueError(f"not a request nvtopo knows: {request!r}")  # a caller's bug
    where = request.command
    if request.path is not None and request.example is not None:
        raise NvtopoError("use either --from or --example, not both", where=where)
    if request.example is not None and request.sysfs_root is not None:
        raise NvtopoError("use either --example or --sysfs-root, not both", where=where)
    if request.sysfs_root is not None:
        if request.path is not None:
            raise NvtopoError("use either --from or --sysfs-root, not both", where=where)
        from ..probes import sysfs

        sysfs.check_root(request.sysfs_root)


# --- files ---------------------------------------------------------------------------------


def _open_file(path: str, want: str) -> Opened:
    data, where = read.read_bytes(path)
    if want == DOCUMENT:
        return Opened(model=None, document=_document_of(decode_bytes(data, where), where),
                      where=where)
    if want == MODEL and data.endswith(b"}\n"):
        # a sealed snapshot: its model without decoding the evidence
        topo = cache.sealed_model(data, where)
        if topo is not None:
            return Opened(model=topo, document={}, where=where, cached=True)
    fast = _fast_snapshot(data, where)
    if fast is not None:
        topo, doc, cached = fast
        return Opened(model=topo, document=doc, where=where, cached=cached)
    return _read_text(decode_bytes(data, where), where)


def _read_text(text: str, where: str) -> Opened:
    """Decoded input, its parts named once by the readers' registry
    (:mod:`nvtopo.probes.readers`): a snapshot (its document, its sealed cache where it may be
    used), or pasted text, each part read by its reader and merged."""
    from ..probes import readers

    parts = readers.split(text)
    if parts[0].reader.name == readers.SNAPSHOT:
        doc = parse_snapshot(text, where)
        topo, cached = _model_of(doc, text.encode("utf-8", errors="surrogatepass"), where)
        return Opened(model=topo, document=doc, where=where, cached=cached)
    return Opened(model=readers.model(parts, where), document={}, where=where)


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
        doc = json_loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # JSON and UTF-8 errors alike
        return None
    if not document.is_snapshot(doc):
        return None
    topo, cached = _model_of(document.validate(doc, where), data, where)
    return topo, doc, cached


def _model_of(doc: Dict[str, Any], raw: Optional[bytes], where: Optional[str]
              ) -> Tuple[Topology, bool]:
    """The model, and whether it came from the cache (``raw``: the file's bytes)."""
    if raw is not None and "derived" in doc:
        topo = cache.cached_model(doc, raw, where)
        if topo is not None:
            return topo, True
    return document.derive(doc, where), False


def file_text(doc: Dict[str, Any], where: str) -> str:
    """The snapshot file's text for ``doc`` (:func:`dumps`), refused with a one-line error
    naming ``where`` when ``--from`` would not read it back: whatever nvtopo writes as a
    snapshot, it reads.  The written bytes go through the reader every input goes through
    (its bounds on size, JSON values, text; the evidence's validation; the derivation), so
    a bound added to the reader is a bound on what is written too."""
    text = dumps(doc)
    data = text.encode("utf-8", errors="surrogatepass")
    try:
        data = read.within_bounds(data, where)
        if _fast_snapshot(data, where) is None:
            parsed = parse_snapshot(decode_bytes(data, where), where)
            _model_of(parsed, data, where)
    except NvtopoError as exc:
        raise NvtopoError(f"not kept as a snapshot: nvtopo would not read the file back "
                          f"({exc.message})", where=where) from None
    return text


def load_text(text: str, where: str) -> Topology:
    """The model of input already decoded: a snapshot (JSON) or pasted text, its parts read
    by the readers that recognise them (:mod:`nvtopo.probes.readers`)."""
    if not text.strip():
        raise NvtopoError("file is empty", where=where)
    return _read_text(text, where).model


def _document_of(text: str, where: str) -> Dict[str, Any]:
    """Decoded input as a snapshot document: a snapshot as it is, each part of a paste kept
    as the evidence of the probe that prints it (:func:`document.kept_document`)."""
    from ..probes import readers

    parts = readers.split(text)
    if parts[0].reader.name == readers.SNAPSHOT:
        return parse_snapshot(text, where)
    return document.kept_document(parts, where)


def _open_example(name: str) -> Opened:
    from .. import examples

    where = f"example {name}"
    topo = load_text(examples.read(name), where)
    topo.origin = Origin.of("example", file=where)
    return Opened(model=topo, document={}, where=where)


# --- this machine ----------------------------------------------------------------------


_LIVE = "live probe"


def _no_gpu_hint(command: str) -> str:
    """How to go on without a GPU here, in the command the user ran (``check --from FILE``
    for ``check``; ``show`` for a command that reads no file)."""
    cmd = command if command in ("show", "check", "links", "snapshot", "layouts capture") \
        else "show"
    example = cmd if cmd in ("show", "check") else "show"
    return (f"to read a saved file instead: `nvtopo {cmd} --from FILE` (a snapshot, or a "
            f"pasted `nvidia-smi topo -m`; - reads stdin), or try `nvtopo {example} "
            f"--example dgx-h100`")


def _open_live(request: Input) -> Opened:
    from ..probes import ProbeOptions

    options = ProbeOptions(timeout=request.timeout, sysfs_root=request.sysfs_root)
    if request.probes == SYSFS_ONLY:
        return _open_sysfs(options)
    doc = take(options, _LIVE_PROBES[request.probes])
    if request.want == DOCUMENT:
        return Opened(model=None, document=doc, where=_LIVE)
    warnings: Tuple[str, ...] = ()
    if request.probes == NVML_ONLY:
        evidence = doc["probes"]["nvml"]
        if evidence.get("status") == "unavailable":
            raise NvtopoError(f"{evidence.get('error')}; to read a saved file instead: "
                              f"nvtopo {request.command} --from FILE", where=_LIVE)
        if evidence.get("status") == "timeout":
            warnings = (str(evidence.get("error")),)
    topo = derive(doc, where=None)
    topo.origin = Origin.of("live")
    if request.probes == EVERY_PROBE:
        if options.sysfs_root:
            topo.origin = Origin.of("live", sysfs_root=options.sysfs_root)
        _some_gpu_here(topo, doc, options, request.command)
    return Opened(model=topo, document=doc, where=_LIVE, warnings=warnings)


def _some_gpu_here(topo: Topology, doc: Dict[str, Any], options: Any, command: str) -> None:
    """Refuse a probe of every source that found no GPU, saying why and how to read a file
    instead; an explicit ``--sysfs-root`` tree with NICs is shown all the same."""
    from ..probes import topo as topo_text

    if options.sysfs_root and (topo.nics or any(n.code == "sysfs.no_rdma_driver"
                                                for n in topo.notes)):
        return  # NICs, even with no RDMA driver bound, are shown
    if topo.gpus or topo.matrix is not None or topo.p2p is not None:
        return
    evidence = doc["probes"][topo_text.SOURCE]
    why = evidence.get("error") or "nvidia-smi topo -m listed no GPU"
    if evidence.get("status") == "missing":
        raise NvtopoError(f"no NVIDIA GPU here: {why}; {_no_gpu_hint(command)}", where=_LIVE)
    raise NvtopoError(f"{why}; {_no_gpu_hint(command)}", where=_LIVE)


def _open_sysfs(options: Any) -> Opened:
    """The sysfs and host probes alone (``ib``): no nvidia-smi, no NVML."""
    from ..probes import sysfs

    root = options.sysfs_root or sysfs.DEFAULT_ROOT
    why = sysfs.why_not_sysfs(root)
    if why:
        raise NvtopoError(f"is not a sysfs tree ({why}); use --sysfs-root DIR or --from FILE",
                          where=root)
    doc = take(options, _LIVE_PROBES[SYSFS_ONLY])
    topo = derive(doc, where=None)
    topo.origin = Origin.of("live", sysfs_root=root)
    return Opened(model=topo, document=doc, where=_LIVE)
