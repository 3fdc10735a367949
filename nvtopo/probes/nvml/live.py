"""The live NVML probe: the one chokepoint around ``pynvml``, and :func:`capture`.

:class:`LiveSource` asks the real library through the real ``pynvml`` wrappers and
records every answer, value or error (:class:`~.record.Recorder`); :func:`capture` runs
the walker over it under ``ProbeOptions.timeout`` (:func:`~.record.record`).  The only
module of the probe that imports ``pynvml`` (and only inside :func:`capture`): ``--from``
commands never load it.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..deadline import Deadline
from .record import Recorder, new_evidence, record
from .source import Answer, FieldId, Gpu
from .vocab import DEFAULT_TIMEOUT, ERROR_CODES, ERROR_NAMES


class LiveSource(Recorder):
    """Asks the real ``pynvml`` (module ``nv``); records every answer.  Never raises NVML
    errors: every failure is an answer."""

    def __init__(self, nv: Any, deadline: Deadline) -> None:
        super().__init__(deadline)
        self.nv = nv
        self.handles: Dict[int, Any] = {}

    def _error(self, exc: BaseException) -> Answer:
        if isinstance(exc, self.nv.NVMLError):
            code: Any = getattr(exc, "value", None)  # (pynvml: untyped)
            return Answer(error=ERROR_NAMES.get(code, f"Error{code}"))
        if isinstance(exc, UnicodeDecodeError):
            return Answer(error="BadData", detail=f"undecodable bytes: {exc.reason}")
        return Answer(error=type(exc).__name__, detail=str(exc))

    def _resolve(self, a: Any) -> Any:
        return self.handles[a.index] if isinstance(a, Gpu) else a

    def ask(self, fn: str, args: Tuple[Any, ...]) -> Answer:
        nv = self.nv
        try:
            if fn == "nvmlInit":
                nv.nvmlInit()
                value: Any = None
            elif fn == "nvmlDeviceGetHandleByIndex":
                self.handles[args[0]] = nv.nvmlDeviceGetHandleByIndex(args[0])
                value = None
            elif fn == "nvmlDeviceGetGpuFabricInfoV":
                value = self._fabric(self._resolve(args[0]))
            elif fn == "nvmlDeviceGetPlatformInfo":
                value = self._platform(self._resolve(args[0]))
            else:
                func = getattr(nv, fn, None)
                if func is None:
                    return Answer(error="FunctionNotFound", detail="not in this nvidia-ml-py")
                value = _jsonify(func(*[self._resolve(a) for a in args]))
                if fn in ("nvmlDeviceGetCpuAffinity", "nvmlDeviceGetMemoryAffinity"):
                    while value and value[-1] == 0:
                        value.pop()
        except Exception as exc:  # every NVML failure is an answer, never a crash
            return self._error(exc)
        return Answer(value=value)

    def _fabric(self, handle: Any) -> Dict[str, Any]:
        """GPU fabric info, newest struct this wheel and driver have; the UUID read as raw bytes.

        Reads only the members the struct has.  The deprecated ``nvmlDeviceGetGpuFabricInfo``
        (drivers without the ``V`` function, or wheels without it) is called with our own
        copy of the C layout: wheels 11.525.150 and 12.535.161 declare it with an 80-byte
        ``clusterUuid`` and no ``cliqueId``, so their member offsets do not match the library.
        """
        nv = self.nv
        variants = []
        if hasattr(nv, "nvmlDeviceGetGpuFabricInfoV"):
            for name in ("c_nvmlGpuFabricInfo_v3_t", "c_nvmlGpuFabricInfo_v2_t"):
                if hasattr(nv, name):
                    variants.append((getattr(nv, name), nv.nvmlDeviceGetGpuFabricInfoV))
        if hasattr(nv, "nvmlDeviceGetGpuFabricInfo"):
            variants.append((FabricInfoV1, nv.nvmlDeviceGetGpuFabricInfo))
        if not variants:
            raise nv.NVMLError(nv.NVML_ERROR_FUNCTION_NOT_FOUND)
        last: Optional[BaseException] = None
        for struct, func in variants:
            info = struct()
            try:
                func(handle, ctypes.byref(info))
            except nv.NVMLError as exc:
                # ARGUMENT_VERSION_MISMATCH: an older driver, try an older struct;
                # FUNCTION_NOT_FOUND: a driver without this function, try the older one.
                if exc.value in (ERROR_CODES["ArgumentVersionMismatch"],
                                 ERROR_CODES["FunctionNotFound"]):
                    last = exc
                    continue
                raise
            names = {f[0] for f in struct._fields_}
            out: Dict[str, Any] = {"struct": struct.__name__}
            if "clusterUuid" in names:
                off = struct.clusterUuid.offset
                out["clusterUuid"] = ctypes.string_at(ctypes.addressof(info) + off, 16).hex()
            for member in ("status", "cliqueId", "state", "healthMask", "healthSummary"):
                if member in names:
                    out[member] = int(getattr(info, member))
            if "state" in out:
                out["state"] &= 0xFF  # unsigned char in C, c_uint in some wheels
            return out
        assert last is not None
        raise last

    def _platform(self, handle: Any) -> Dict[str, Any]:
        """Platform info, newest struct this wheel has (v2, else v1): every member read from
        the struct's bytes (single ``char`` members as numbers, arrays as hex)."""
        nv = self.nv
        func = getattr(nv, "nvmlDeviceGetPlatformInfo", None)
        structs = [getattr(nv, n) for n in ("c_nvmlPlatformInfo_v2_t", "c_nvmlPlatformInfo_v1_t")
                   if hasattr(nv, n)]
        if func is None or not structs:
            raise nv.NVMLError(nv.NVML_ERROR_FUNCTION_NOT_FOUND)
        last: Optional[BaseException] = None
        for struct in structs:
            info = struct()
            try:
                func(handle, ctypes.byref(info))
            except nv.NVMLError as exc:
                if exc.value == ERROR_CODES["ArgumentVersionMismatch"]:
                    last = exc
                    continue
                raise
            out: Dict[str, Any] = {"struct": struct.__name__}
            base = ctypes.addressof(info)
            for name, ctype in struct._fields_:
                if name == "version":
                    continue
                member = getattr(struct, name)
                raw = ctypes.string_at(base + member.offset, member.size)
                out[name] = raw.hex() if member.size > 1 else raw[0]
            return out
        assert last is not None
        raise last

    def ask_fields(self, gpu: int, ids: Sequence[FieldId]) -> Union[Answer, List[Answer]]:
        try:
            values = self.nv.nvmlDeviceGetFieldValues(self.handles[gpu], list(ids))
        except Exception as exc:
            return self._error(exc)
        out: List[Answer] = []
        for v in values:
            ret = int(v.nvmlReturn)
            out.append(Answer(error=ERROR_NAMES.get(ret, f"Error{ret}")) if ret
                       else Answer(value=_field_value(v)))
        return out

    def close(self) -> None:
        try:
            self.nv.nvmlShutdown()
        except Exception:  # a failed shutdown changes nothing we report
            pass


class FabricInfoV1(ctypes.Structure):
    """``nvmlGpuFabricInfo_t`` as nvml.h lays it out (v1, the deprecated function's struct)."""

    _fields_ = [("clusterUuid", ctypes.c_uint8 * 16), ("status", ctypes.c_uint),
                ("cliqueId", ctypes.c_uint), ("state", ctypes.c_uint8)]


_VALUE_MEMBERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal",
                  6: "usVal"}


def _field_value(v: Any) -> Any:
    member = _VALUE_MEMBERS.get(int(v.valueType))
    if member is None:
        return None
    return getattr(v.value, member)


def _jsonify(v: Any) -> Any:
    """pynvml results as JSON: structs as dicts, ctypes arrays as lists, scalars as-is."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, (list, tuple)):
        return [_jsonify(x) for x in v]
    if isinstance(v, ctypes.Array):
        return [_jsonify(x) for x in v]
    if isinstance(v, (ctypes.Structure, ctypes.Union)):
        return {f[0]: _jsonify(getattr(v, f[0])) for f in v._fields_}
    if isinstance(v, ctypes._SimpleCData):  # e.g. the c_uint of nvmlDeviceIsMigDeviceHandle
        return _jsonify(v.value)
    return repr(v)


def capture(options: Optional[Any] = None) -> Dict[str, Any]:
    """Run the NVML probe on this machine and return its evidence (the recording).

    Never raises for the expected failures: no driver, no GPU, unsupported
    or forbidden calls, a lost GPU, a hung call.  Imports pynvml only here.
    """
    timeout = float(getattr(options, "timeout", None) or DEFAULT_TIMEOUT)
    evidence = new_evidence(timeout)
    start = time.monotonic()
    try:
        import pynvml  # noqa: PLC0415 (lazy: --from commands never import it)
    except ImportError as exc:
        evidence["status"] = "unavailable"
        evidence["error"] = f"nvidia-ml-py (pynvml) is not installed: {exc}"
        return evidence
    if not callable(getattr(pynvml, "_nvmlGetFunctionPointer", None)):
        evidence["status"] = "unavailable"
        evidence["error"] = ("the installed pynvml is not nvidia-ml-py (the deprecated "
                             "'pynvml' package may shadow it)")
        return evidence
    evidence["library"] = {"module": "pynvml", "file": getattr(pynvml, "__file__", None)}
    return record(LiveSource(pynvml, Deadline(timeout, start)), evidence)


__all__ = ["LiveSource", "FabricInfoV1", "capture"]
