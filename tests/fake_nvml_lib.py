"""A fake NVML *C library* for the tests: NVML answers served to the real ``pynvml`` wrappers.

It replaces ``pynvml.nvmlLib`` with an object whose attributes are the C
symbols (``nvmlDeviceGetCount_v2``, ``nvmlDeviceGetNvLinkRemotePciInfo_v2``,
...), so the real pynvml wrappers, ctypes structures and exceptions run, and
with them the NVML probe's live capture path
(:class:`nvtopo.probes.nvml.live.LiveSource`).  Arguments are checked the way
ctypes and the C library would see them: a ``(0,)`` P2P index raises
``ctypes.ArgumentError`` exactly like the real library; out-parameters must be
``byref()`` of the right ctypes type.  Unknown symbols raise ``AttributeError``,
which pynvml turns into ``NVMLError_FunctionNotFound`` by itself.

Answers come from a *call table*: canonical call keys
(``nvmlDeviceGetNvLinkState(gpu0,5)``) mapped to ``{"value": ...}`` or
``{"error": "NotSupported"}``, the same format the probe writes into
snapshots.  So a snapshot recorded on a real node replays here unchanged, and
:func:`nvtopo.simulate.nvml_table.compile_machine` turns a declarative machine
description (``fixtures/nvml/*.json``) into such a table.  :func:`record` runs
the real NVML probe (:func:`nvtopo.probes.nvml.capture`) against it.

Stateful behaviour a table cannot express: ``lose`` (from a given call on,
every call about that GPU answers GpuIsLost), ``hang`` (a call that never
returns, until released), ``latency_s`` (per C call, for benchmarks).

This lived in ``nvtopo/simulate/fake_nvml.py`` while ``nvtopo simulate`` recorded through
it; the simulator now records in plain Python (:mod:`nvtopo.simulate.nvml_record`), and
``tests/test_nvml_recording.py`` checks that both give the same recording.
``tests/nvml_fake.py`` adds the fixture machines on top.
"""

from __future__ import annotations

import ctypes
import fnmatch
import json
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import pynvml

from nvtopo.probes.nvml import ERROR_CODES, call_key, field_key
from nvtopo.simulate import nvml_record
from nvtopo.simulate.nvml_table import LEVELS, P2P, compile_machine

_HANDLE_BASE = 0x1000
_CArgObject = type(ctypes.byref(ctypes.c_int()))

# --- argument checking, as ctypes and the C library see it ---------------------------------


def _convertible(argno: int, v: Any) -> None:
    """What ctypes accepts for a function without argtypes; else ArgumentError."""
    ok = (v is None or isinstance(v, (int, bytes, str))
          or isinstance(v, (ctypes._SimpleCData, ctypes.Array, ctypes.Structure,
                            ctypes.Union, ctypes._Pointer, _CArgObject))
          or hasattr(v, "_as_parameter_"))
    if not ok:
        raise ctypes.ArgumentError(
            f"argument {argno}: TypeError: Don't know how to convert parameter {argno}")


def _handle(argno: int, v: Any) -> int:
    if not isinstance(v, pynvml.c_nvmlDevice_t):
        raise AssertionError(f"argument {argno}: expected an nvmlDevice_t handle, got {v!r}")
    addr = ctypes.cast(v, ctypes.c_void_p).value
    if addr is None or addr < _HANDLE_BASE:
        raise AssertionError(f"argument {argno}: invalid (NULL or foreign) device handle")
    return addr - _HANDLE_BASE


def _int(argno: int, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, ctypes.c_uint, ctypes.c_int,
                                                 ctypes.c_int32, ctypes.c_uint32)):
        raise AssertionError(f"argument {argno}: expected an integer, got {v!r}")
    return int(v.value if isinstance(v, ctypes._SimpleCData) else v)


def _out(argno: int, v: Any, ctype: Any) -> Any:
    if not isinstance(v, _CArgObject):
        raise AssertionError(f"argument {argno}: expected byref(...) for an out-parameter, "
                             f"got {v!r}")
    obj = v._obj
    if not isinstance(obj, ctype):
        raise AssertionError(f"argument {argno}: out-parameter of type {type(obj).__name__}, "
                             f"expected {getattr(ctype, '__name__', ctype)}")
    return obj


def _buffer(argno: int, v: Any) -> Any:
    if not (isinstance(v, ctypes.Array) and v._type_ is ctypes.c_char):
        raise AssertionError(f"argument {argno}: expected a char buffer, got {v!r}")
    return v


_UINT = (ctypes.c_uint,)
_INT = (ctypes.c_int,)

# --- the fake library -------------------------------------------------------------------------


class FakeNvmlLib:
    """Stands in for libnvidia-ml.so.1 under the real pynvml wrappers."""

    def __new__(cls, *args: Any, **kw: Any) -> "FakeNvmlLib":
        # symbols hidden with missing_symbols need a __getattribute__ hook, which slows
        # every attribute access: only that variant pays for it
        if kw.get("missing_symbols") and cls is FakeNvmlLib:
            return object.__new__(_FakeWithMissing)
        return object.__new__(cls)

    def __init__(self, calls: Dict[str, Dict[str, Any]], *, latency_s: float = 0.0,
                 hang: Tuple[str, ...] = (), lose: Optional[Dict[str, Any]] = None,
                 missing_symbols: Tuple[str, ...] = ()) -> None:
        self._calls = calls
        self._globs = [(k, v) for k, v in calls.items() if any(c in k for c in "*?[")]
        self._latency = latency_s
        self._hang = set(hang)
        self._lose = lose
        self._lost: set = set()
        self._missing = set(missing_symbols)
        self._release = threading.Event()
        self._initialised = 0
        self.c_calls = 0
        self.misses: List[str] = []
        self.asked: List[str] = []

    def release(self) -> None:
        """Let hung calls return (test teardown)."""
        self._release.set()

    # -- answering ---------------------------------------------------------------

    def _answer(self, key: str, gpus: Tuple[int, ...] = ()) -> Dict[str, Any]:
        self.c_calls += 1
        self.asked.append(key)
        if self._latency:
            time.sleep(self._latency)
        if key in self._hang:
            self._release.wait(120)
            return {"error": "Timeout"}
        if not self._initialised and not key.startswith("nvmlInit"):
            return {"error": "Uninitialized"}
        if self._lose and key == self._lose["at"]:
            self._lost.add(int(self._lose["gpu"]))
        if any(g in self._lost for g in gpus):
            return {"error": "GpuIsLost"}
        rec = self._calls.get(key)
        if rec is None:
            for pattern, r in self._globs:
                if fnmatch.fnmatchcase(key, pattern):
                    rec = r
                    break
        if rec is None:
            self.misses.append(key)
            return {"error": "Unknown"}
        return rec

    @staticmethod
    def _rc(rec: Dict[str, Any]) -> Optional[int]:
        if "error" in rec:
            return ERROR_CODES.get(rec["error"], 999)
        return None

    def _scalar(self, fn: str, args: Tuple[Any, ...], key_args: List[Any], out: Any,
                gpus: Tuple[int, ...]) -> int:
        rec = self._answer(call_key(fn, key_args), gpus)
        rc = self._rc(rec)
        if rc is not None:
            return rc
        out.value = rec["value"]
        return 0

    def _string(self, fn: str, h: Any, buf: Any, size: Any) -> int:
        for i, a in enumerate((h, buf, size), 1):
            _convertible(i, a)
        g = _handle(1, h)
        _buffer(2, buf)
        n = _int(3, size)
        rec = self._answer(call_key(fn, [f"gpu{g}"]), (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        data = str(rec["value"]).encode()
        if len(data) + 1 > n or len(data) + 1 > len(buf):
            return ERROR_CODES["InsufficientSize"]
        buf.value = data
        return 0

    def _dev_uint(self, fn: str, h: Any, out: Any, ctype: Tuple[Any, ...] = _UINT) -> int:
        _convertible(1, h)
        _convertible(2, out)
        g = _handle(1, h)
        obj = _out(2, out, ctype)
        return self._scalar(fn, (h, out), [f"gpu{g}"], obj, (g,))

    # -- init and system ------------------------------------------------------------------------

    def nvmlInitWithFlags(self, flags: Any) -> int:
        _convertible(1, flags)
        _int(1, flags)
        rec = self._answer("nvmlInit()")
        rc = self._rc(rec)
        if rc is not None:
            return rc
        self._initialised += 1
        return 0

    def nvmlShutdown(self) -> int:
        if not self._initialised:
            return ERROR_CODES["Uninitialized"]
        self._initialised -= 1
        return 0

    def _system_string(self, fn: str, buf: Any, size: Any) -> int:
        _convertible(1, buf)
        _convertible(2, size)
        _buffer(1, buf)
        _int(2, size)
        rec = self._answer(call_key(fn, []))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        buf.value = str(rec["value"]).encode()
        return 0

    def nvmlSystemGetDriverVersion(self, buf: Any, size: Any) -> int:
        return self._system_string("nvmlSystemGetDriverVersion", buf, size)

    def nvmlSystemGetNVMLVersion(self, buf: Any, size: Any) -> int:
        return self._system_string("nvmlSystemGetNVMLVersion", buf, size)

    def nvmlSystemGetCudaDriverVersion(self, out: Any) -> int:
        _convertible(1, out)
        return self._scalar("nvmlSystemGetCudaDriverVersion", (out,), [],
                            _out(1, out, _INT), ())

    def nvmlDeviceGetCount_v2(self, out: Any) -> int:
        _convertible(1, out)
        return self._scalar("nvmlDeviceGetCount", (out,), [], _out(1, out, _UINT), ())

    def nvmlDeviceGetHandleByIndex_v2(self, index: Any, out: Any) -> int:
        _convertible(1, index)
        _convertible(2, out)
        i = _int(1, index)
        obj = _out(2, out, pynvml.c_nvmlDevice_t)
        rec = self._answer(call_key("nvmlDeviceGetHandleByIndex", [i]), (i,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        ctypes.c_void_p.from_buffer(obj).value = _HANDLE_BASE + i
        return 0

    # -- per-device scalars --------------------------------------------------------------------------

    def nvmlDeviceGetName(self, h: Any, buf: Any, size: Any) -> int:
        return self._string("nvmlDeviceGetName", h, buf, size)

    def nvmlDeviceGetUUID(self, h: Any, buf: Any, size: Any) -> int:
        return self._string("nvmlDeviceGetUUID", h, buf, size)

    def nvmlDeviceGetSerial(self, h: Any, buf: Any, size: Any) -> int:
        return self._string("nvmlDeviceGetSerial", h, buf, size)

    def nvmlDeviceGetMinorNumber(self, h: Any, out: Any) -> int:
        return self._dev_uint("nvmlDeviceGetMinorNumber", h, out)

    def nvmlDeviceGetArchitecture(self, h: Any, out: Any) -> int:
        return self._dev_uint("nvmlDeviceGetArchitecture", h, out)

    def nvmlDeviceGetNumaNodeId(self, h: Any, out: Any) -> int:
        return self._dev_uint("nvmlDeviceGetNumaNodeId", h, out, _INT)

    def nvmlDeviceGetPersistenceMode(self, h: Any, out: Any) -> int:
        return self._dev_uint("nvmlDeviceGetPersistenceMode", h, out)

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: Any, out: Any) -> int:
        return self._dev_uint("nvmlDeviceGetCurrPcieLinkGeneration", h, out)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: Any, out: Any) -> int:
        return self._dev_uint("nvmlDeviceGetMaxPcieLinkGeneration", h, out)

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, h: Any, out: Any) -> int:
        return self._dev_uint("nvmlDeviceGetGpuMaxPcieLinkGeneration", h, out)

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: Any, out: Any) -> int:
        return self._dev_uint("nvmlDeviceGetCurrPcieLinkWidth", h, out)

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: Any, out: Any) -> int:
        return self._dev_uint("nvmlDeviceGetMaxPcieLinkWidth", h, out)

    def nvmlDeviceGetPcieReplayCounter(self, h: Any, out: Any) -> int:
        return self._dev_uint("nvmlDeviceGetPcieReplayCounter", h, out)

    def nvmlDeviceGetCudaComputeCapability(self, h: Any, major: Any, minor: Any) -> int:
        for i, a in enumerate((h, major, minor), 1):
            _convertible(i, a)
        g = _handle(1, h)
        ma, mi = _out(2, major, _INT), _out(3, minor, _INT)
        rec = self._answer(call_key("nvmlDeviceGetCudaComputeCapability", [f"gpu{g}"]), (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        ma.value, mi.value = rec["value"]
        return 0

    def nvmlDeviceGetMigMode(self, h: Any, cur: Any, pend: Any) -> int:
        for i, a in enumerate((h, cur, pend), 1):
            _convertible(i, a)
        g = _handle(1, h)
        c, p = _out(2, cur, _UINT), _out(3, pend, _UINT)
        rec = self._answer(call_key("nvmlDeviceGetMigMode", [f"gpu{g}"]), (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        c.value, p.value = rec["value"]
        return 0

    def nvmlDeviceGetMemoryInfo(self, h: Any, out: Any) -> int:
        _convertible(1, h)
        _convertible(2, out)
        g = _handle(1, h)
        obj = _out(2, out, pynvml.c_nvmlMemory_t)
        rec = self._answer(call_key("nvmlDeviceGetMemoryInfo", [f"gpu{g}"]), (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        for k in ("total", "free", "used"):
            setattr(obj, k, int(rec["value"].get(k, 0)))
        return 0

    def nvmlDeviceGetPciInfo_v3(self, h: Any, out: Any) -> int:
        _convertible(1, h)
        _convertible(2, out)
        g = _handle(1, h)
        obj = _out(2, out, pynvml.nvmlPciInfo_t)
        rec = self._answer(call_key("nvmlDeviceGetPciInfo", [f"gpu{g}"]), (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        _fill_pci(obj, rec["value"])
        return 0

    def _affinity(self, fn: str, h: Any, size: Any, out: Any, scope: Any = None) -> int:
        args = (h, size, out) + (() if scope is None else (scope,))
        for i, a in enumerate(args, 1):
            _convertible(i, a)
        g = _handle(1, h)
        n = _int(2, size)
        arr = _out(3, out, ctypes.Array)
        if arr._type_ is not ctypes.c_ulonglong or len(arr) < n:
            raise AssertionError("argument 3: expected an array of at least size "
                                 "unsigned long long")
        key_args: List[Any] = [f"gpu{g}", n] + ([] if scope is None else [_int(4, scope)])
        rec = self._answer(call_key(fn, key_args), (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        words = list(rec["value"])[:n]
        for i, w in enumerate(words):
            arr[i] = w
        return 0

    def nvmlDeviceGetCpuAffinity(self, h: Any, size: Any, out: Any) -> int:
        return self._affinity("nvmlDeviceGetCpuAffinity", h, size, out)

    def nvmlDeviceGetMemoryAffinity(self, h: Any, size: Any, out: Any, scope: Any) -> int:
        return self._affinity("nvmlDeviceGetMemoryAffinity", h, size, out, scope)

    def nvmlDeviceGetGpuFabricInfoV(self, h: Any, out: Any) -> int:
        _convertible(1, h)
        _convertible(2, out)
        g = _handle(1, h)
        if not isinstance(out, _CArgObject):
            raise AssertionError("argument 2: fabric info must be passed with byref()")
        obj = out._obj
        known = {0x02000024: pynvml.c_nvmlGpuFabricInfo_v2_t}
        if hasattr(pynvml, "c_nvmlGpuFabricInfo_v3_t"):
            known[0x3000028] = pynvml.c_nvmlGpuFabricInfo_v3_t
        rec = self._answer(call_key("nvmlDeviceGetGpuFabricInfoV", [f"gpu{g}"]), (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        if known.get(getattr(obj, "version", None)) is not type(obj):
            return ERROR_CODES["ArgumentVersionMismatch"]
        v = rec["value"]
        raw = bytes.fromhex(v.get("clusterUuid", "0" * 32))
        ctypes.memmove(ctypes.addressof(obj) + type(obj).clusterUuid.offset, raw, 16)
        obj.status = int(v.get("status", 0))
        obj.cliqueId = int(v.get("cliqueId", 0))
        obj.state = int(v.get("state", 0))
        obj.healthMask = int(v.get("healthMask", 0))
        if hasattr(obj, "healthSummary"):
            obj.healthSummary = int(v.get("healthSummary", 0))
        return 0

    def nvmlDeviceGetPlatformInfo(self, h: Any, out: Any) -> int:
        """nvmlPlatformInfo_v1/v2_t; a description without platform info is a driver without
        the function (FunctionNotFound, as pynvml reports a missing symbol)."""
        _convertible(1, h)
        _convertible(2, out)
        g = _handle(1, h)
        if not isinstance(out, _CArgObject):
            raise AssertionError("argument 2: platform info must be passed with byref()")
        obj = out._obj
        key = call_key("nvmlDeviceGetPlatformInfo", [f"gpu{g}"])
        if key not in self._calls:
            return ERROR_CODES["FunctionNotFound"]
        rec = self._answer(key, (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        known = {0x200002C: pynvml.c_nvmlPlatformInfo_v2_t,
                 0x100002C: pynvml.c_nvmlPlatformInfo_v1_t}
        if known.get(getattr(obj, "version", None)) is not type(obj):
            return ERROR_CODES["ArgumentVersionMismatch"]
        v = rec["value"]
        # a description's serial is text; a real recording's, the array's bytes as hex
        serial = bytes.fromhex(nvml_record.bytes16_hex(v.get("chassisSerialNumber", "")))
        guid = (bytes.fromhex(v.get("ibGuid", "")) + bytes(16))[:16]
        base = ctypes.addressof(obj)
        v2 = type(obj) is pynvml.c_nvmlPlatformInfo_v2_t
        names = ("chassisSerialNumber", "slotNumber", "trayIndex", "hostId") if v2 else \
            ("rackGuid", "chassisPhysicalSlotNumber", "computeSlotIndex", "nodeIndex")
        ctypes.memmove(base + type(obj).ibGuid.offset, guid, 16)
        ctypes.memmove(base + getattr(type(obj), names[0]).offset, serial, 16)
        for mine, key2 in zip(names[1:] + ("peerType", "moduleId"),
                              ("slotNumber", "trayIndex", "hostId", "peerType", "moduleId")):
            ctypes.memmove(base + getattr(type(obj), mine).offset,
                           bytes([int(v.get(key2, 0)) & 0xFF]), 1)
        return 0

    def nvmlDeviceGetC2cModeInfoV(self, h: Any, out: Any) -> int:
        """nvmlC2cModeInfo_v1_t: one unsigned int, isC2cEnabled."""
        _convertible(1, h)
        _convertible(2, out)
        g = _handle(1, h)
        if not isinstance(out, _CArgObject):
            raise AssertionError("argument 2: C2C mode info must be passed with byref()")
        rec = self._answer(call_key("nvmlDeviceGetC2cModeInfoV", [f"gpu{g}"]), (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        out._obj.isC2cEnabled = int(rec["value"].get("isC2cEnabled", 0))
        return 0

    def nvmlDeviceGetGpuFabricInfo(self, h: Any, out: Any) -> int:
        """The deprecated v1 call.  Writes nvml.h's layout (16-byte UUID, status, cliqueId,
        an unsigned char state: 28 bytes) whatever struct the wheel declared for it."""
        _convertible(1, h)
        _convertible(2, out)
        g = _handle(1, h)
        if not isinstance(out, _CArgObject):
            raise AssertionError("argument 2: fabric info must be passed with byref()")
        obj = out._obj
        if ctypes.sizeof(obj) < 28:
            raise AssertionError("argument 2: smaller than nvmlGpuFabricInfo_t (28 bytes)")
        rec = self._answer(call_key("nvmlDeviceGetGpuFabricInfoV", [f"gpu{g}"]), (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        v = rec["value"]
        data = (bytes.fromhex(v.get("clusterUuid", "0" * 32))
                + int(v.get("status", 0)).to_bytes(4, "little")
                + int(v.get("cliqueId", 0)).to_bytes(4, "little")
                + int(v.get("state", 0)).to_bytes(1, "little"))
        ctypes.memmove(ctypes.addressof(obj), data, len(data))
        return 0

    # -- field values --------------------------------------------------------------------------------

    def nvmlDeviceGetFieldValues(self, h: Any, count: Any, out: Any) -> int:
        for i, a in enumerate((h, count, out), 1):
            _convertible(i, a)
        g = _handle(1, h)
        if not isinstance(count, ctypes.c_int32):
            raise AssertionError("argument 2: expected c_int32 count")
        arr = _out(3, out, ctypes.Array)
        if arr._type_ is not pynvml.c_nvmlFieldValue_t or len(arr) < count.value:
            raise AssertionError("argument 3: expected an array of c_nvmlFieldValue_t")
        whole = self._answer(f"nvmlDeviceGetFieldValues(gpu{g})", (g,))
        if "error" in whole and whole["error"] != "Unknown":
            return self._rc(whole) or 999
        if whole.get("error") == "Unknown":
            self.misses.pop()  # the whole call needs no entry; elements do
        for i in range(count.value):
            fv = arr[i]
            key = field_key(g, fv.fieldId, fv.scopeId)
            rec = self._calls.get(key)
            if g in self._lost:
                rec = {"error": "GpuIsLost"}
            if rec is None:
                self.misses.append(key)
                rec = {"error": "Unknown"}
            fv.timestamp = 1700000000000000
            fv.latencyUsec = 5
            if "error" in rec:
                fv.nvmlReturn = ERROR_CODES.get(rec["error"], 999)
                continue
            fv.nvmlReturn = 0
            # A recorded float is served as NVML's double (valueType 0): a real driver answers
            # some counts that way (field 147 as 0.0 on driver 580.159.04).
            vtype = rec.get("type", 0 if isinstance(rec["value"], float)
                            else 3 if fv.fieldId in (161, 162, 163) else 1)
            fv.valueType = vtype
            member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal",
                      5: "siVal", 6: "usVal"}[vtype]
            setattr(fv.value, member, rec["value"])
        return 0

    # -- NVLink --------------------------------------------------------------------------------

    def _link_uint(self, fn: str, h: Any, link: Any, out: Any, ctype: Any = _UINT) -> int:
        for i, a in enumerate((h, link, out), 1):
            _convertible(i, a)
        g = _handle(1, h)
        lk = _int(2, link)
        obj = _out(3, out, ctype)
        return self._scalar(fn, (h, link, out), [f"gpu{g}", lk], obj, (g,))

    def nvmlDeviceGetNvLinkState(self, h: Any, link: Any, out: Any) -> int:
        return self._link_uint("nvmlDeviceGetNvLinkState", h, link, out)

    def nvmlDeviceGetNvLinkVersion(self, h: Any, link: Any, out: Any) -> int:
        return self._link_uint("nvmlDeviceGetNvLinkVersion", h, link, out)

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h: Any, link: Any, out: Any) -> int:
        return self._link_uint("nvmlDeviceGetNvLinkRemoteDeviceType", h, link, out)

    def nvmlDeviceGetNvLinkRemotePciInfo_v2(self, h: Any, link: Any, out: Any) -> int:
        for i, a in enumerate((h, link, out), 1):
            _convertible(i, a)
        g = _handle(1, h)
        lk = _int(2, link)
        obj = _out(3, out, pynvml.nvmlPciInfo_t)
        rec = self._answer(call_key("nvmlDeviceGetNvLinkRemotePciInfo", [f"gpu{g}", lk]), (g,))
        rc = self._rc(rec)
        if rc is not None:
            return rc
        _fill_pci(obj, rec["value"])
        return 0

    def nvmlDeviceGetNvLinkErrorCounter(self, h: Any, link: Any, counter: Any,
                                        out: Any) -> int:
        for i, a in enumerate((h, link, counter, out), 1):
            _convertible(i, a)
        g = _handle(1, h)
        lk, c = _int(2, link), _int(3, counter)
        obj = _out(4, out, (ctypes.c_ulonglong,))
        return self._scalar("nvmlDeviceGetNvLinkErrorCounter", (), [f"gpu{g}", lk, c], obj,
                            (g,))

    # -- GPU pairs ----------------------------------------------------------------------------

    def nvmlDeviceGetP2PStatus(self, h1: Any, h2: Any, index: Any, out: Any) -> int:
        for i, a in enumerate((h1, h2, index, out), 1):
            _convertible(i, a)  # (0,) fails here, as in the real library
        a, b = _handle(1, h1), _handle(2, h2)
        idx = _int(3, index)
        obj = _out(4, out, _UINT)
        return self._scalar("nvmlDeviceGetP2PStatus", (), [f"gpu{a}", f"gpu{b}", idx], obj,
                            (a, b))

    def nvmlDeviceGetTopologyCommonAncestor(self, h1: Any, h2: Any, out: Any) -> int:
        for i, x in enumerate((h1, h2, out), 1):
            _convertible(i, x)
        a, b = _handle(1, h1), _handle(2, h2)
        obj = _out(3, out, _UINT)
        return self._scalar("nvmlDeviceGetTopologyCommonAncestor", (), [f"gpu{a}", f"gpu{b}"],
                            obj, (a, b))


class _FakeWithMissing(FakeNvmlLib):
    """A fake library some C symbols are missing from (an older driver)."""

    # pynvml looks C symbols up with getattr(nvmlLib, name).
    def __getattribute__(self, name: str) -> Any:
        if name.startswith("nvml") and name in object.__getattribute__(self, "_missing"):
            raise AttributeError(name)
        return object.__getattribute__(self, name)


def _fill_pci(obj: Any, v: Dict[str, Any]) -> None:
    obj.busIdLegacy = v.get("busIdLegacy", "").encode()
    obj.busId = v.get("busId", "").encode()
    for k in ("domain", "bus", "device", "pciDeviceId", "pciSubSystemId"):
        setattr(obj, k, int(v.get(k, 0)))


# --- installing the fake under pynvml ---------------------------------------------------------


def reset_pynvml() -> None:
    """Forget any loaded library: pynvml's own global state."""
    pynvml.nvmlLib = None
    pynvml._nvmlGetFunctionPointer_cache.clear()
    pynvml._nvmlLib_refcount = 0


def install(lib: Optional[FakeNvmlLib]) -> None:
    reset_pynvml()
    pynvml.nvmlLib = lib


def machine_fake(desc: Dict[str, Any], **kw: Any) -> FakeNvmlLib:
    """A fake library serving a machine description (with its ``hang`` and ``lose``)."""
    return FakeNvmlLib(compile_machine(desc), hang=tuple(desc.get("hang", ())),
                       lose=desc.get("lose"), **kw)


#: pynvml's library state is process-global: one fake at a time.
_LOCK = threading.Lock()


def record(desc: Dict[str, Any], timeout: float = 10.0,
           calls: Optional[Dict[str, Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Run the real NVML probe against a machine description; return its evidence (JSON-clean).

    ``"library": "missing"`` makes ctypes' loader fail (there is no library to
    load); everything else installs the fake C library.  ``calls``: serve that recording
    (a real node's, from a snapshot) as it is instead of compiling ``desc``.  Whatever pynvml
    had loaded before is put back afterwards.
    """
    from nvtopo.probes import ProbeOptions, nvml

    with _LOCK:
        saved = (pynvml.CDLL, pynvml.nvmlLib, dict(pynvml._nvmlGetFunctionPointer_cache),
                 pynvml._nvmlLib_refcount)
        lib = None
        try:
            if desc.get("library") == "missing":
                def no_library(*a: Any, **k: Any) -> Any:
                    raise OSError("libnvidia-ml.so.1: cannot open shared object file")
                pynvml.CDLL = no_library
                install(None)
            else:
                lib = FakeNvmlLib(calls) if calls is not None else machine_fake(desc)
                install(lib)
            return json.loads(json.dumps(nvml.capture(ProbeOptions(timeout=timeout))))
        finally:
            if lib is not None:
                lib.release()
            reset_pynvml()
            pynvml.CDLL, pynvml.nvmlLib = saved[0], saved[1]
            pynvml._nvmlGetFunctionPointer_cache.update(saved[2])
            pynvml._nvmlLib_refcount = saved[3]


__all__ = ["FakeNvmlLib", "install", "reset_pynvml", "compile_machine", "machine_fake",
           "record", "LEVELS", "P2P"]
