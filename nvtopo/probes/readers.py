"""The one registry of input readers: what a file or a pasted ticket holds, by content.

Every reader nvtopo has is declared once, in :data:`READERS`, as a :class:`Reader`:

* ``name``: what the part is called (``topo-text``, ``ib-text`` ...);
* ``recognise(text)``: how sure the reader is that ``text`` holds its kind: :data:`NO`,
  :data:`MENTIONED` (recognisably its kind, but holding nothing it reads: a ``dcgmi``
  paste with no GPU row) or :data:`SURE`;
* ``takes``: how much of a paste it reads: :data:`WHOLE` (the whole input, nothing beside
  it), :data:`BLOCKS` (its own blocks, cut out with ``cut``; the rest of the paste is split
  again as a paste of its own, by every other text reader or by those ``rest`` names) or
  :data:`SHARED` (the text it shares with the other shared readers, each parser reading
  its own lines);
* ``read(text, where)``: its part as a model fragment;
* ``keep``: the probe whose evidence keeps its text in a snapshot (checked first by
  ``vet``), or ``None`` with ``refused`` saying why it is never kept.

:func:`split` asks the readers once, in the order of :data:`READERS`, and returns the parts
of the input, each with its reader and the text that reader reads, in the order their
fragments are merged: the rest of a paste first, then what a block reader cut out of it
(``topo -m`` + ``ibstat`` + ``nvidia-smi -q`` is ``topo-text``, ``nvml-text``,
``ib-text``).  A reader only :data:`MENTIONED` takes its part only when nothing after it
recognises the rest; when no reader recognises anything, the input is one part of the topo
reader, whose parser says precisely what is wrong.  :func:`model` reads the parts into one
model; the front door (:mod:`nvtopo.snapshot`) reads a snapshot part itself (its document,
its sealed cache) and keeps text parts as a snapshot's evidence
(:func:`nvtopo.snapshot.document.kept_document`); deriving a snapshot reads the text a
probe's evidence keeps through the same registry (:func:`read_kept`).

A new reader is its parser (a module under ``nvtopo/probes/``) and one :class:`Reader` entry
here, placed in :data:`READERS` where it should be asked (docs/ticket-inputs.md §5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import NvtopoError
from ..model.host import Origin

if TYPE_CHECKING:
    from ..model import Topology

#: How sure a reader is (:attr:`Reader.recognise`).
NO, MENTIONED, SURE = 0, 1, 2
#: How much of a paste a reader takes (:attr:`Reader.takes`).
WHOLE, BLOCKS, SHARED = "whole", "blocks", "shared"

#: The readers' names (:attr:`Reader.name`).
SNAPSHOT = "snapshot"
GDS_TEXT = "gds-text"
NVML_XML = "nvml-xml"
IB_TEXT = "ib-text"
DCGMI_TEXT = "dcgmi-text"
TOPO_TEXT = "topo-text"
NVML_TEXT = "nvml-text"
NCCL_LOG = "nccl-log"
NCCL_TESTS = "nccl-tests"
NCCL_TOPO = "nccl-topo"
KERNEL_LOG = "kernel-log"
IMEX_TEXT = "imex-text"
IMEX_JSON = "imex-json"

#: What nvtopo reads, named when an input is none of it (every reader's ``what`` is in it).
READABLE = ("an nvtopo snapshot, nvidia-smi topo -m, nvidia-smi nvlink or -q text (or -q -x "
            "XML), dcgmi nvlink -s, ibstat/ibv_devinfo/ibstatus, gdscheck -p, an NCCL debug "
            "log, nccl-tests output or NCCL topology XML, a kernel log (dmesg, journalctl "
            "-k, kern.log), nvidia-imex-ctl -N / -q text or nvidia-imex-ctl -N -j JSON")


class Reader(NamedTuple):
    """One input reader (see the module doc)."""

    name: str
    #: How people name the text it reads (it is in :data:`READABLE`).
    what: str
    takes: str
    recognise: Callable[[str], int]
    #: ``None``: read by the front door itself (a snapshot: its document and cache).
    read: Optional[Callable[[str, str], "Topology"]]
    #: The probe whose evidence keeps the text in a snapshot; ``None``: never kept (why:
    #: ``refused``).
    keep: Optional[str] = None
    refused: str = ""
    #: Refuses, with a one-line error, a text that may not be kept as it is.
    vet: Optional[Callable[[str, str], None]] = None
    #: :data:`BLOCKS`: the text with the reader's blocks taken out.
    cut: Optional[Callable[[str], str]] = None
    #: :data:`BLOCKS`: the readers that read the rest (``None``: every text reader but this
    #: one, as if the rest were a paste of its own).
    rest: Optional[Tuple[str, ...]] = None
    #: The model's origin ``kind`` when the part is the first (``None``: as ``read`` set it).
    origin: Optional[str] = None
    #: Why a part only :data:`MENTIONED` is not read, when the front door reads it.
    empty: str = ""


class Part(NamedTuple):
    """One part of an input: its reader, the text that reader reads, how sure it was."""

    reader: Reader
    text: str
    sure: int


# --- the readers ----------------------------------------------------------------------------


def _sure(flag: bool) -> int:
    return SURE if flag else NO


def is_json(text: str) -> bool:
    """Whether decoded input is JSON (a snapshot, or JSON that is refused as not one)."""
    return text.lstrip("\ufeff \t\r\n").startswith("{")


def _gds_recognise(text: str) -> int:
    from . import gds_text

    return _sure(gds_text.looks_like(text))


def _gds_read(text: str, where: str) -> "Topology":
    from . import gds_text

    return gds_text.derive_text(text, where)


def _xml_recognise(text: str) -> int:
    from .nvml import xml

    return _sure(xml.looks_like(text))


def _xml_read(text: str, where: str) -> "Topology":
    from .nvml import xml

    return xml.derive_xml(text, where)


def _xml_vet(text: str, where: str) -> None:
    """Kept as it is (a cut one's notes too); XML nvtopo refuses is refused here."""
    _xml_read(text, where)


def _ib_recognise(text: str) -> int:
    from . import ib_text

    return _sure(ib_text.looks_like(text))


def _ib_read(text: str, where: str) -> "Topology":
    from . import ib_text

    topo = ib_text.derive_text(text)
    topo.origin = Origin.of(topo.sources[0] if topo.sources else IB_TEXT, file=where)
    return topo


def _ib_cut(text: str) -> str:
    from . import ib_text

    return ib_text.without_blocks(text)


def _dcgmi_recognise(text: str) -> int:
    from . import dcgmi_text

    if not dcgmi_text.looks_like(text):
        return NO
    return SURE if dcgmi_text.has_gpus(text) else MENTIONED


def _dcgmi_read(text: str, where: str) -> "Topology":
    """The dcgmi rows; ``nvidia-smi nvlink``/``-q`` text in the same paste is not read (the
    two would speak for the same links), and says so."""
    from . import dcgmi_text
    from .nvml import text as nvml_text

    topo = dcgmi_text.derive_text(text)
    if nvml_text.looks_like(dcgmi_text.without_block(text)):  # not merged: said, not dropped
        topo.note("dcgmi_text.nvidia_smi_not_read", "nvidia-smi nvlink/-q text in the same "
                  "paste as dcgmi nvlink -s is not read; paste it in a file of its own",
                  source=dcgmi_text.SOURCE, level="warning")
    return topo


def _dcgmi_cut(text: str) -> str:
    from . import dcgmi_text

    return dcgmi_text.without_block(text)


def _topo_recognise(text: str) -> int:
    from . import topo as topo_text

    return _sure(topo_text.looks_like_topo(text))


def _topo_read(text: str, where: str) -> "Topology":
    from . import topo as topo_text

    try:
        return topo_text.parse(text)
    except topo_text.TopoParseError as exc:
        raise NvtopoError(_unread(exc), where=where) from None


def _unread(exc: Exception) -> str:
    """Why a text was not read: a matrix found but unreadable says so (it is topo output);
    a text with no matrix names what nvtopo reads."""
    if not getattr(exc, "found", True):
        return f"not an input nvtopo reads ({READABLE}): {exc}"
    return f"an nvidia-smi topo matrix nvtopo cannot read: {exc}"


def _topo_vet(text: str, where: str) -> None:
    """A paste of several matrices that are not one node's (two different ``topo -m``) is
    refused, as check refuses it: a snapshot would keep it and read nothing from it."""
    from . import topo as topo_text

    if len(topo_text.matrix_starts(topo_text.clean_text(text))) > 1:
        _topo_read(text, where)


def _nvml_recognise(text: str) -> int:
    from .nvml import text as nvml_text

    return _sure(nvml_text.looks_like(text))


def _nvml_read(text: str, where: str) -> "Topology":
    from .nvml import text as nvml_text

    return nvml_text.derive_text(text)


def _nccl_recognise(text: str) -> int:
    from .nccl import log

    return _sure(log.looks_like(text))


def _nccl_read(text: str, where: str) -> "Topology":
    from .nccl import log

    return log.derive_text(text)


def _nccl_cut(text: str) -> str:
    from .nccl import log

    return log.without_lines(text)


def _perf_recognise(text: str) -> int:
    from .nccl import perf

    return _sure(perf.looks_like(text))


def _perf_read(text: str, where: str) -> "Topology":
    from .nccl import perf

    return perf.derive_text(text)


def _perf_cut(text: str) -> str:
    from .nccl import perf

    return perf.without_tables(text)


def _topo_xml_recognise(text: str) -> int:
    from .nccl import topo_xml

    return _sure(topo_xml.looks_like(text))


def _topo_xml_read(text: str, where: str) -> "Topology":
    from .nccl import topo_xml

    return topo_xml.derive_text(text, where)


def _kmsg_recognise(text: str) -> int:
    from . import kmsg

    return _sure(kmsg.looks_like(text))


def _kmsg_read(text: str, where: str) -> "Topology":
    from . import kmsg

    return kmsg.derive_text(text)


def _imex_json_recognise(text: str) -> int:
    from . import imex_text

    return _sure(imex_text.looks_like_json(text))


def _imex_text_recognise(text: str) -> int:
    from . import imex_text

    return _sure(imex_text.looks_like_text(text))


def _imex_read(text: str, where: str) -> "Topology":
    from . import imex_text

    return imex_text.derive_text(text, where)


def _imex_vet(text: str, where: str) -> None:
    """JSON nvtopo cannot read is refused here, not kept."""
    _imex_read(text, where)


def _imex_cut(text: str) -> str:
    from . import imex_text

    return imex_text.without_blocks(text)


#: Every reader, in the order they are asked (:func:`split`).
READERS: Tuple[Reader, ...] = (
    Reader(IMEX_JSON, "nvidia-imex-ctl -N -j JSON", WHOLE, _imex_json_recognise, _imex_read,
           keep="imex", vet=_imex_vet, origin=IMEX_TEXT),
    Reader(SNAPSHOT, "an nvtopo snapshot", WHOLE, lambda text: _sure(is_json(text)), None),
    Reader(GDS_TEXT, "gdscheck -p", WHOLE, _gds_recognise, _gds_read, origin=GDS_TEXT,
           refused="a pasted gdscheck -p text is read by show and check (--from), but not "
                   "kept in a snapshot"),
    Reader(NCCL_TOPO, "NCCL topology XML", WHOLE, _topo_xml_recognise, _topo_xml_read,
           origin=NCCL_TOPO,
           refused="NCCL topology XML is read by `nvtopo explain --from`, not kept in a "
                   "snapshot"),
    Reader(NVML_XML, "-q -x XML", WHOLE, _xml_recognise, _xml_read, keep="nvml",
           vet=_xml_vet, origin=NVML_TEXT),
    Reader(NCCL_LOG, "an NCCL debug log", BLOCKS, _nccl_recognise, _nccl_read, cut=_nccl_cut,
           origin=NCCL_LOG,
           refused="an NCCL debug log is read by `nvtopo explain --from`, not kept in a "
                   "snapshot"),
    Reader(NCCL_TESTS, "nccl-tests output", BLOCKS, _perf_recognise, _perf_read, cut=_perf_cut,
           origin=NCCL_TESTS,
           refused="nccl-tests output is read by `nvtopo explain --from`, not kept in a "
                   "snapshot"),
    Reader(IMEX_TEXT, "nvidia-imex-ctl -N / -q text", BLOCKS, _imex_text_recognise,
           _imex_read, keep="imex", cut=_imex_cut, origin=IMEX_TEXT),
    Reader(IB_TEXT, "ibstat/ibv_devinfo/ibstatus", BLOCKS, _ib_recognise, _ib_read,
           cut=_ib_cut,
           refused="ibstat/ibv_devinfo text is read by `nvtopo ib --from` and `nvtopo check "
                   "--from`, not kept as a snapshot (take one with `nvtopo snapshot` on the "
                   "node)"),
    Reader(DCGMI_TEXT, "dcgmi nvlink -s", BLOCKS, _dcgmi_recognise, _dcgmi_read, keep="nvml",
           cut=_dcgmi_cut, rest=(TOPO_TEXT,), origin=NVML_TEXT,
           empty="dcgmi nvlink -s text with no GPU row (no `gpuId N:` followed by link "
                 "letters)"),
    Reader(TOPO_TEXT, "nvidia-smi topo -m", SHARED, _topo_recognise, _topo_read,
           keep="topo-text", vet=_topo_vet, origin=TOPO_TEXT),
    Reader(NVML_TEXT, "nvidia-smi nvlink or -q text", SHARED, _nvml_recognise, _nvml_read,
           keep="nvml", origin=NVML_TEXT),
    Reader(KERNEL_LOG, "a kernel log (dmesg, journalctl -k, kern.log)", SHARED,
           _kmsg_recognise, _kmsg_read, origin=KERNEL_LOG,
           refused="a kernel log is read by check (--from), not kept in a snapshot (its "
                   "events are not the node's wiring)"),
)

_BY_NAME = {r.name: r for r in READERS}


def reader(name: str) -> Reader:
    """The reader called ``name``."""
    return _BY_NAME[name]


# --- asking the registry ---------------------------------------------------------------------


def split(text: str, among: Optional[Iterable[str]] = None,
          fallback: str = TOPO_TEXT) -> List[Part]:
    """The parts of ``text`` (see the module doc), in merge order; never empty: an input no
    reader recognises is one part of ``fallback``'s, sure :data:`NO`.  ``among``: only
    these readers are asked (a probe's kept text: :func:`read_kept`)."""
    names = None if among is None else set(among)
    asked = [r for r in READERS if names is None or r.name in names]
    return _split(text, asked) or [Part(reader(fallback), text, NO)]


def names(text: str) -> List[str]:
    """The readers of ``text``'s parts, in merge order (what :func:`split` says it holds)."""
    return [part.reader.name for part in split(text)]


def _split(text: str, asked: Sequence[Reader]) -> List[Part]:
    shared: List[Part] = []
    for i, r in enumerate(asked):
        sure = r.recognise(text)
        if sure == NO or (r.takes == WHOLE and sure != SURE):
            continue
        if r.takes == WHOLE:
            return [Part(r, text, sure)]
        if r.takes == BLOCKS and r.cut is not None:
            rest = r.cut(text)
            later = asked[i + 1:]
            if sure != SURE and any(o.recognise(rest) for o in later):
                continue  # a mere mention beside texts that say something: read without it
            again = [o for o in asked if o.name in r.rest] if r.rest is not None else \
                [o for o in asked if o is not r and o.read is not None]
            return _split(rest, again) + [Part(r, text, sure)]
        shared.append(Part(r, text, sure))
    return shared


def model(parts: Sequence[Part], where: str, strict: bool = True) -> "Topology":
    """The text parts read and merged in order, with the origin of the first (``strict``, as
    the front door reads: a part only :data:`MENTIONED` is refused with its reader's
    ``empty`` reason)."""
    topo: Optional["Topology"] = None
    for part in parts:
        if part.reader.read is None:
            raise ValueError(f"{part.reader.name} is read by the front door")  # a caller's bug
        if strict and part.sure == MENTIONED:
            raise NvtopoError(part.reader.empty, where=where)
        fragment = part.reader.read(part.text, where)
        if topo is None:
            topo = fragment
            if part.reader.origin is not None:
                topo.origin = Origin.of(part.reader.origin, file=where)
        else:
            topo.merge(fragment)
    if topo is None:
        raise ValueError("no part to read")  # split never returns none
    return topo


#: The readers whose text a probe's evidence may keep (as its ``stdout``, with no recording
#: beside it): the NVML probe keeps pasted nvlink/``-q`` text, ``-q -x`` XML, dcgmi text.
KEPT_BY = {"nvml": (NVML_XML, DCGMI_TEXT, NVML_TEXT)}


def kept_text(probe: str, evidence: object) -> Optional[str]:
    """The pasted text ``probe``'s evidence keeps (``None``: evidence the probe derives)."""
    if probe not in KEPT_BY or not isinstance(evidence, dict) or "calls" in evidence:
        return None
    text = evidence.get("stdout")
    return text if isinstance(text, str) else None


def read_kept(probe: str, text: str) -> "Topology":
    """The fragment of a pasted text a snapshot keeps as ``probe``'s evidence, read by the
    reader that recognises it among those the text may be (:data:`KEPT_BY`; the probe's
    own text reader, the last, when none does).  A mere mention is read, not refused."""
    among = KEPT_BY[probe]
    return model(split(text, among, fallback=among[-1]), f"{probe} evidence", strict=False)


__all__ = ["Reader", "Part", "READERS", "READABLE", "NO", "MENTIONED", "SURE", "WHOLE",
           "BLOCKS", "SHARED", "SNAPSHOT", "GDS_TEXT", "NVML_XML", "IB_TEXT", "DCGMI_TEXT",
           "TOPO_TEXT", "NVML_TEXT", "NCCL_LOG", "NCCL_TESTS", "NCCL_TOPO", "KERNEL_LOG",
           "IMEX_TEXT", "IMEX_JSON",
           "KEPT_BY", "is_json", "reader", "names", "split", "model",
           "kept_text", "read_kept"]
