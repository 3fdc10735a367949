"""``nvtopo simulate``'s NVML evidence: the real walker over a call table, in plain Python.

:class:`TableSource` is a recording NVML source (:class:`nvtopo.probes.nvml.Recorder`)
that answers from a call table (:func:`.nvml_table.compile_machine`) what NVML would
answer through the ``pynvml`` wrappers: every value as the C types carry it (integers
cut to their width, strings as text, structs as their members in the library's order,
affinity masks without trailing zero words, fabric info as the newest struct
``c_nvmlGpuFabricInfo_v3_t``), every error by its ``nvmlReturn_t`` name (a name NVML
does not have is ``Unknown``), a call the table has no answer for ``Unknown``.  The
probe's own walker asks it, and the probe's own :func:`~nvtopo.probes.nvml.record.record`
makes the evidence: the same keys, answers, order and ``ncalls`` as the live capture
records on a machine that answers so.  No ``pynvml`` is involved (the test suite checks
the recording against the live capture over its fake NVML C library).

Stateful behaviour: ``lose`` (``{"gpu": g, "at": key}``: from that call on, every call
about GPU g answers ``GpuIsLost``).  ``"library": "missing"`` answers ``nvmlInit`` with
``LibraryNotFound``.  A description's ``hang`` is for the fake C library only (a call that
never returns would only cost the deadline here).
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ..probes.deadline import Deadline
from ..probes.nvml import ERROR_CODES, ERROR_NAMES, U32, U64, Answer, Gpu, call_key, field_key
from ..probes.nvml.record import Recorder, new_evidence, record as run_record
from ..probes.nvml.source import OPTIONAL_CALLS, hex_bytes
from .nvml_table import compile_machine

#: Seconds the simulated probe may take (it takes milliseconds); recorded as ``timeout_s``.
TIMEOUT = 10.0
#: The fabric info struct answered (the newest one NVML has).
FABRIC_STRUCT = "c_nvmlGpuFabricInfo_v3_t"
#: Field ids whose value type is unsigned long long unless the table says otherwise
#: (the NVLink error counters); other fields are unsigned int.
_ULL_FIELDS = (161, 162, 163)

Rec = Dict[str, Any]


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _uint(v: Any) -> int:
    return int(v) & U32


def _int32(v: Any) -> int:
    return _signed(int(v), 32)


def _text(v: Any) -> str:
    """A string through a C ``char`` buffer: cut at the first NUL."""
    return str(v).split("\0", 1)[0]


def _pci(v: Dict[str, Any]) -> Dict[str, Any]:
    """``nvmlPciInfo_t`` members, in the struct's order."""
    out: Dict[str, Any] = {"busIdLegacy": _text(v.get("busIdLegacy", ""))}
    for k in ("domain", "bus", "device", "pciDeviceId", "pciSubSystemId"):
        out[k] = _uint(v.get(k, 0))
    out["busId"] = _text(v.get("busId", ""))
    return out


def _fabric(v: Dict[str, Any]) -> Dict[str, Any]:
    """``c_nvmlGpuFabricInfo_v3_t`` as the live source reads it (the UUID as raw bytes)."""
    raw = (bytes.fromhex(v.get("clusterUuid", "0" * 32)) + bytes(16))[:16]
    return {"struct": FABRIC_STRUCT, "clusterUuid": raw.hex(),
            "status": _uint(v.get("status", 0)), "cliqueId": _uint(v.get("cliqueId", 0)),
            "state": int(v.get("state", 0)) & 0xFF, "healthMask": _uint(v.get("healthMask", 0)),
            "healthSummary": int(v.get("healthSummary", 0)) & 0xFF}


#: The platform info struct answered.
PLATFORM_STRUCT = "c_nvmlPlatformInfo_v2_t"


#: The recorded form of a 16-byte array (32 hex digits), as the probe's checks read it.
_RECORDED16 = hex_bytes(16)


def bytes16_hex(text: Any) -> str:
    """A 16-byte ``unsigned char`` array holding ``text`` (NUL-padded, cut), as hex.

    Text already in the recorded form (32 hex digits: the live probe records the array's
    bytes as hex, and a real recording is served as it is) is those bytes; a description's
    text cannot be mistaken for it, since 16 bytes of text are at most 16 characters.
    """
    if _RECORDED16(text) is None:
        return str(text).lower()
    return (str(text).encode("utf-8", errors="replace") + bytes(16))[:16].hex()


def _platform(v: Dict[str, Any]) -> Dict[str, Any]:
    """``c_nvmlPlatformInfo_v2_t`` as the live source reads it (arrays as hex, chars as
    numbers); the table holds the serial as text and the IB GUID as hex."""
    out: Dict[str, Any] = {"struct": PLATFORM_STRUCT,
                           "ibGuid": (bytes.fromhex(v.get("ibGuid", "")) + bytes(16))[:16].hex(),
                           "chassisSerialNumber": bytes16_hex(v.get("chassisSerialNumber", ""))}
    for k in ("slotNumber", "trayIndex", "hostId", "peerType", "moduleId"):
        out[k] = int(v.get(k, 0)) & 0xFF
    return out


def _words(v: Any, n: int) -> List[int]:
    """An affinity mask of ``n`` 64-bit words, without its trailing zero words."""
    words = [int(w) & U64 for w in list(v)[:n]]
    while words and words[-1] == 0:
        words.pop()
    return words


#: Function -> its value as the pynvml wrapper returns it (scalars not listed: unsigned int).
_VALUES = {
    "nvmlInit": lambda v, a: None,
    "nvmlDeviceGetHandleByIndex": lambda v, a: None,
    "nvmlSystemGetDriverVersion": lambda v, a: _text(v),
    "nvmlSystemGetNVMLVersion": lambda v, a: _text(v),
    "nvmlSystemGetCudaDriverVersion": lambda v, a: _int32(v),
    "nvmlDeviceGetName": lambda v, a: _text(v),
    "nvmlDeviceGetUUID": lambda v, a: _text(v),
    "nvmlDeviceGetSerial": lambda v, a: _text(v),
    "nvmlDeviceGetPciInfo": lambda v, a: _pci(v),
    "nvmlDeviceGetNvLinkRemotePciInfo": lambda v, a: _pci(v),
    "nvmlDeviceGetNumaNodeId": lambda v, a: _int32(v),
    "nvmlDeviceGetCudaComputeCapability": lambda v, a: [_int32(x) for x in v],
    "nvmlDeviceGetMigMode": lambda v, a: [_uint(x) for x in v],
    "nvmlDeviceGetMemoryInfo": lambda v, a: {k: int(v.get(k, 0)) & U64
                                             for k in ("total", "free", "used")},
    "nvmlDeviceGetCpuAffinity": lambda v, a: _words(v, a[1]),
    "nvmlDeviceGetMemoryAffinity": lambda v, a: _words(v, a[1]),
    "nvmlDeviceGetNvLinkErrorCounter": lambda v, a: int(v) & U64,
    "nvmlDeviceGetPcieReplayCounter": lambda v, a: _uint(v),
    "nvmlDeviceGetGpuFabricInfoV": lambda v, a: _fabric(v),
    "nvmlDeviceGetPlatformInfo": lambda v, a: _platform(v),
    "nvmlDeviceGetC2cModeInfoV": lambda v, a: {"isC2cEnabled": _uint(v["isC2cEnabled"])},
}

#: nvmlFieldValue_t value types: the member's C type, as a conversion.
_FIELD_TYPES: Dict[int, Callable[[Any], Any]] = {
    0: float, 1: _uint, 2: lambda v: int(v) & U64, 3: lambda v: int(v) & U64,
    4: lambda v: _signed(int(v), 64), 5: _int32, 6: lambda v: int(v) & 0xFFFF}


def _error(name: Any) -> Answer:
    """An error as it comes back through ``nvmlReturn_t``: names NVML lacks are Unknown."""
    return Answer(error=ERROR_NAMES[ERROR_CODES.get(name, 999)])


class TableSource(Recorder):
    """Answers from a call table as NVML through ``pynvml`` would; records every answer."""

    def __init__(self, calls: Dict[str, Rec], deadline: Deadline,
                 lose: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(deadline)
        self.table = calls
        self._globs = [(k, v) for k, v in calls.items() if any(c in k for c in "*?[")]
        self._lose = lose
        self._lost: set = set()
        self._initialised = False

    def _lookup(self, key: str, gpus: Tuple[int, ...]) -> Rec:
        if not self._initialised and not key.startswith("nvmlInit"):
            return {"error": "Uninitialized"}
        if self._lose and key == self._lose["at"]:
            self._lost.add(int(self._lose["gpu"]))
        if any(g in self._lost for g in gpus):
            return {"error": "GpuIsLost"}
        rec = self.table.get(key)
        if rec is None:
            for pattern, r in self._globs:
                if fnmatch.fnmatchcase(key, pattern):
                    return r
            return {"error": "Unknown"}
        return rec

    def ask(self, fn: str, args: Tuple[Any, ...]) -> Answer:
        gpus = tuple(a.index for a in args if isinstance(a, Gpu))
        if fn == "nvmlDeviceGetHandleByIndex":
            gpus = (int(args[0]),)
        key = call_key(fn, args)
        if fn in OPTIONAL_CALLS and key not in self.table:
            return _error("FunctionNotFound")  # a driver older than the question
        rec = self._lookup(key, gpus)
        if "error" in rec:
            return _error(rec["error"])
        if fn == "nvmlInit":
            self._initialised = True
        convert = _VALUES.get(fn, lambda v, a: _uint(v))
        try:
            return Answer(value=convert(rec.get("value"), args))
        except (TypeError, ValueError, AttributeError) as exc:  # no value of that C type
            return Answer(error=type(exc).__name__, detail=str(exc))

    def ask_fields(self, gpu: int, ids: Sequence[Tuple[int, int]]
                   ) -> Union[Answer, List[Answer]]:
        whole = self._lookup(f"nvmlDeviceGetFieldValues(gpu{gpu})", (gpu,))
        if "error" in whole and whole["error"] != "Unknown":
            return _error(whole["error"])
        out: List[Answer] = []
        for fid, scope in ids:
            rec = self.table.get(field_key(gpu, fid, scope))
            if gpu in self._lost:
                rec = {"error": "GpuIsLost"}
            if rec is None:
                rec = {"error": "Unknown"}
            if "error" in rec:
                out.append(_error(rec["error"]))
                continue
            vtype = rec.get("type", 3 if fid in _ULL_FIELDS else 1)
            out.append(Answer(value=_FIELD_TYPES[vtype](rec["value"])))
        return out


def record(desc: Dict[str, Any], timeout: float = TIMEOUT) -> Dict[str, Any]:
    """The NVML probe's evidence (JSON-clean) for a machine description, as the live
    capture records it on such a machine.  Deterministic but for ``duration_s``."""
    if desc.get("library") == "missing":
        calls: Dict[str, Rec] = {"nvmlInit()": {"error": "LibraryNotFound"}}
    else:
        calls = compile_machine(desc)
    source = TableSource(calls, Deadline(timeout), lose=desc.get("lose"))
    evidence = run_record(source, new_evidence(timeout))
    return json.loads(json.dumps(evidence))


__all__ = ["TableSource", "record", "TIMEOUT", "FABRIC_STRUCT", "PLATFORM_STRUCT"]
