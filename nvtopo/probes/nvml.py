"""The NVML probe (nvidia-ml-py / ``pynvml``): GPUs, NVLinks, fabric, P2P, PCIe paths.

Record and replay
-----------------

Every NVML question goes through one chokepoint, a *source* with two
methods, ``call(fn, *args)`` and ``fields(gpu, ids)``, answering
:class:`Answer` values (a value, or an error name such as ``NotSupported``).
One walker, :func:`walk`, asks the questions and turns the answers into
plain facts.  It runs twice:

* :func:`capture` runs it against the live library (:class:`_Live`), which
  records every answer, value or error, under a canonical key such as
  ``nvmlDeviceGetNvLinkState(gpu0,5)``.  The recording is the evidence kept
  in snapshots (``probes["nvml"]["calls"]``).
* :func:`derive` runs it again against the recording (:class:`_Replay`):
  pure, no ``pynvml`` import, so ``--from`` reproduces the probe exactly on
  a machine without a GPU.  The test suite's fake NVML library serves the
  same recordings to the real ``pynvml`` wrappers.

Three answers are kept apart everywhere: *absent* (no NVML, no GPU),
*unknown* (a call NVML does not support or may not be made:
``not_supported``, ``not_permitted``), and *bad* (a link that went down, a
GPU that fell off the bus).  Nothing here raises for them.

The whole live probe runs under a deadline (``ProbeOptions.timeout``): the
walker runs in a worker thread; if a call hangs, the evidence says which
GPU and call did not answer, and keeps every answer received before.
"""

from __future__ import annotations

import ctypes
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import NvtopoError
from ..model import GPU, Matrix, NVLinkPair, Topology, pci_bdf

SOURCE = "nvml"
DEFAULT_TIMEOUT = 30.0
#: Layout version of ``probes["nvml"]`` in snapshots.
EVIDENCE_VERSION = 1

# --- NVML vocabulary (own copies: derive must not import pynvml) -----------------------

#: nvmlReturn_t codes (identical in pynvml and nvml.h).
ERROR_NAMES: Dict[int, str] = {
    1: "Uninitialized", 2: "InvalidArgument", 3: "NotSupported", 4: "NoPermission",
    5: "AlreadyInitialized", 6: "NotFound", 7: "InsufficientSize", 8: "InsufficientPower",
    9: "DriverNotLoaded", 10: "Timeout", 11: "IrqIssue", 12: "LibraryNotFound",
    13: "FunctionNotFound", 14: "CorruptedInforom", 15: "GpuIsLost", 16: "ResetRequired",
    17: "OperatingSystem", 18: "LibRmVersionMismatch", 19: "InUse", 20: "Memory",
    21: "NoData", 23: "InsufficientResources", 25: "ArgumentVersionMismatch",
    26: "Deprecated", 27: "NotReady", 28: "GpuNotFound", 29: "InvalidState", 999: "Unknown",
}
ERROR_CODES: Dict[str, int] = {v: k for k, v in ERROR_NAMES.items()}

#: How the chokepoint reads an error: what it means to the user.
NOT_SUPPORTED = ("NotSupported", "FunctionNotFound")
NOT_PERMITTED = ("NoPermission",)
NO_SUCH = ("InvalidArgument",)
LOST = ("GpuIsLost", "Skipped")  # Skipped: not asked, the GPU was lost earlier
#: A recorded answer of the wrong type or range (a damaged snapshot): see VALUE_CHECKS.
BAD = ("BadValue",)
#: Why NVML as a whole is unavailable (from ``nvmlInit``).
UNAVAILABLE_REASONS = {
    "LibraryNotFound": "no NVIDIA driver (libnvidia-ml.so.1 not found)",
    "DriverNotLoaded": "NVIDIA kernel driver not loaded",
    "LibRmVersionMismatch": "NVML library and kernel driver versions differ "
                            "(driver upgraded without reboot?)",
    "NoPermission": "no permission to use NVML",
    "FunctionNotFound": "NVML library too old for this nvidia-ml-py",
}

#: nvmlDeviceGetNvLinkVersion enum -> NVLink generation.
NVLINK_VERSIONS = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0",
                   8: "6.0"}
#: nvmlNvLinkDeviceType_t -> our remote type.
REMOTE_TYPES = {0: "gpu", 1: "npu", 2: "nvswitch", 0xFF: "unknown"}
#: nvmlGpuTopologyLevel_t -> ``topo -m`` token (INTERNAL, a dual-GPU board, has none).
TOPOLOGY_LEVELS = {10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
#: nvmlGpuP2PStatus_t -> ``topo -p2p`` token.
P2P_TOKENS = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DR", 5: "NS", 6: "U"}
#: P2P capability index -> name.  Plain ints: pynvml's NVML_P2P_CAPS_INDEX_READ is ``(0,)``.
P2P_INDEXES = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3))
ARCHITECTURES = {2: "kepler", 3: "maxwell", 4: "pascal", 5: "volta", 6: "turing", 7: "ampere",
                 8: "ada", 9: "hopper", 10: "blackwell", 13: "rubin"}

# Field ids (nvmlDeviceGetFieldValues).
FI_NVLINK_LINK_COUNT = 91
FI_PCIE_REPLAY_COUNTER = 94
FI_NVLINK_REMOTE_NVLINK_ID = 146
FI_NVSWITCH_CONNECTED_LINK_COUNT = 147
FI_NVLINK_ERROR_DL_REPLAY = 161
FI_NVLINK_ERROR_DL_RECOVERY = 162
FI_NVLINK_ERROR_DL_CRC = 163
FI_NVLINK_GET_SPEED = 164
FI_NVLINK_GET_STATE = 165
FI_NVLINK_GET_VERSION = 166
#: Per-link fields read in one batch per GPU.
LINK_FIELDS = (FI_NVLINK_GET_STATE, FI_NVLINK_GET_VERSION, FI_NVLINK_GET_SPEED,
               FI_NVLINK_REMOTE_NVLINK_ID, FI_NVLINK_ERROR_DL_REPLAY,
               FI_NVLINK_ERROR_DL_RECOVERY, FI_NVLINK_ERROR_DL_CRC)
#: Error counter -> (link-scoped field id or None, nvmlDeviceGetNvLinkErrorCounter counter id).
ERROR_COUNTERS = (("replay", FI_NVLINK_ERROR_DL_REPLAY, 0),
                  ("recovery", FI_NVLINK_ERROR_DL_RECOVERY, 1),
                  ("crc_flit", FI_NVLINK_ERROR_DL_CRC, 2),
                  ("crc_data", None, 3),
                  ("ecc", None, 4))
#: CRC-data and ECC counters have no link-scoped field, only one field id per link for links
#: 0-11 (NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L0..L11, ..._ECC_DATA_ERROR_COUNT_L0..L11;
#: nvml.h says "Lane", they are per link).  Read in the batch where they exist; that they
#: equal nvmlDeviceGetNvLinkErrorCounter's counters is checked once per GPU (first active
#: link), and the function is trusted where they differ.  Links 12+ use the function.
LEGACY_COUNTER_FIELDS: Dict[str, Tuple[int, ...]] = {
    "crc_data": tuple(range(39, 45)) + tuple(range(102, 108)),
    "ecc": tuple(range(148, 160)),
}
#: Field 165 (NVML_FI_DEV_NVLINK_GET_STATE) values.
LINK_STATE_FIELD = {0: "inactive", 1: "active", 2: "sleep", 3: "traffic_disabled"}
#: Link loop bound when field 91 is not answered (stop earlier on InvalidArgument), and the
#: most links a GPU may have (field 91 above it is a bad value).  Not
#: pynvml.NVML_NVLINK_MAX_LINKS: that changes between wheels (12, 18, 36).
FALLBACK_MAX_LINKS = 64
MAX_LINKS = FALLBACK_MAX_LINKS
#: The most GPUs one NVML may count; more is a damaged recording, not a machine.
MAX_GPUS = 1024
#: Bad recorded values noted one by one; the rest in one note.
MAX_BAD_NOTES = 20
#: Affinity mask sizes in 64-bit words: 4096 CPUs, 256 NUMA nodes.
CPU_WORDS = 64
NODE_WORDS = 4

# Fabric (nvmlGpuFabricInfo): own constants; some wheels have wrong mask widths.
FABRIC_STATES = {0: "not_supported", 1: "not_started", 2: "in_progress", 3: "completed"}
FABRIC_SUMMARY = {0: "not_supported", 1: "healthy", 2: "unhealthy", 3: "limited_capacity"}
FABRIC_HEALTH_BITS = (  # name, shift, width
    ("degraded_bandwidth", 0, 0x3), ("route_recovery", 2, 0x3), ("route_unhealthy", 4, 0x3),
    ("access_timeout_recovery", 6, 0x3), ("incorrect_configuration", 8, 0xF),
    ("partition_assigned", 12, 0x3), ("gfm_state", 14, 0x3),
)
INCORRECT_CONFIGURATION = {1: "none", 2: "incorrect_sysguid", 3: "incorrect_chassis_sn",
                           4: "no_partition", 5: "insufficient_nvlinks",
                           6: "incompatible_gpu_fw", 7: "invalid_location",
                           8: "gpu_state_invalid"}


# --- answers and keys ------------------------------------------------------------------


@dataclass(frozen=True)
class Gpu:
    """A device-handle argument, named by its NVML index."""

    index: int


@dataclass
class Answer:
    """One NVML answer: ``value`` or ``error`` (an error name, e.g. ``NotSupported``)."""

    value: Any = None
    error: Optional[str] = None
    detail: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def meaning(self) -> Optional[str]:
        """``None`` when answered; else not_supported / not_permitted / no_such / lost / error."""
        if self.error is None:
            return None
        if self.error in NOT_SUPPORTED:
            return "not_supported"
        if self.error in NOT_PERMITTED:
            return "not_permitted"
        if self.error in NO_SUCH:
            return "no_such"
        if self.error in LOST:
            return "lost"
        if self.error in BAD:
            return "bad_value"
        return "error"

    @classmethod
    def from_record(cls, rec: Dict[str, Any]) -> "Answer":
        if "error" in rec:
            return cls(error=str(rec["error"]), detail=rec.get("detail"))
        return cls(value=rec.get("value"))

    def to_record(self) -> Dict[str, Any]:
        if self.error is None:
            return {"value": self.value}
        rec: Dict[str, Any] = {"error": self.error}
        if self.error in ERROR_CODES:
            rec["code"] = ERROR_CODES[self.error]
        if self.detail:
            rec["detail"] = self.detail
        return rec


def _arg(a: Any) -> str:
    return f"gpu{a.index}" if isinstance(a, Gpu) else str(a)


def call_key(fn: str, args: Sequence[Any]) -> str:
    """Canonical recording key: ``nvmlDeviceGetNvLinkState(gpu0,5)``."""
    return f"{fn}({','.join([_arg(a) for a in args])})"


def field_key(gpu: int, field: int, scope: int) -> str:
    """Recording key of one field value: ``nvmlDeviceGetFieldValues(gpu0,165:5)``."""
    return f"nvmlDeviceGetFieldValues(gpu{gpu},{field}:{scope})"


# --- what a recorded answer must look like -------------------------------------------------
#
# derive() replays whatever a snapshot file holds, so every value is checked where the walker
# takes it: a value of the wrong type or range becomes a ``BadValue`` answer (the fact is
# unknown, and a note names the call).  A check returns None when the value is fine, else
# what was expected.

U32 = 2**32 - 1
U64 = 2**64 - 1
Check = Callable[[Any], Optional[str]]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_in(lo: int, hi: int) -> Check:
    def check(v: Any) -> Optional[str]:
        return None if _is_int(v) and lo <= v <= hi else f"an integer {lo}..{hi}"
    return check


def _one_of(values: Sequence[int]) -> Check:
    def check(v: Any) -> Optional[str]:
        return None if _is_int(v) and v in values else \
            "one of " + ", ".join(str(x) for x in values)
    return check


def _text(v: Any) -> Optional[str]:
    return None if isinstance(v, str) and len(v) <= 4096 else "text"


def _anything(v: Any) -> Optional[str]:
    return None


def _int_list(n: int, lo: int, hi: int) -> Check:
    def check(v: Any) -> Optional[str]:
        ok = isinstance(v, list) and len(v) <= n and all(_is_int(x) and lo <= x <= hi for x in v)
        return None if ok else f"a list of at most {n} integers {lo}..{hi}"
    return check


def _pair_of(lo: int, hi: int) -> Check:
    def check(v: Any) -> Optional[str]:
        ok = isinstance(v, list) and len(v) == 2 and all(_is_int(x) and lo <= x <= hi for x in v)
        return None if ok else f"two integers {lo}..{hi}"
    return check


def _hex_uuid(v: Any) -> Optional[str]:
    ok = isinstance(v, str) and len(v) == 32 and all(c in "0123456789abcdefABCDEF" for c in v)
    return None if ok else "32 hex digits"


def _struct(members: Dict[str, Check]) -> Check:
    """An object whose listed members, where present, pass their checks (others are kept)."""
    def check(v: Any) -> Optional[str]:
        if not isinstance(v, dict):
            return "an object"
        for name, sub in members.items():
            if name in v and sub(v[name]) is not None:
                return f"an object whose {name} is {sub(v[name])}"
        return None
    return check


def _bus_text(v: Any) -> Optional[str]:
    return None if isinstance(v, str) and len(v) <= 64 else "text"


def _speed(v: Any) -> Optional[str]:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        and 0 <= v <= 10**7
    return None if ok else "a speed in MB/s (0..10000000)"


_COUNTER = _int_in(0, U64)
_SMALL = _int_in(0, 255)
_PCI = _struct({"busId": _bus_text, "busIdLegacy": _bus_text, "domain": _int_in(0, U32),
                "bus": _SMALL, "device": _SMALL, "pciDeviceId": _int_in(0, U32),
                "pciSubSystemId": _int_in(0, U32)})
_FABRIC = _struct({"clusterUuid": _hex_uuid, "status": _int_in(0, U32),
                   "cliqueId": _int_in(0, U32), "state": _SMALL, "healthMask": _int_in(0, U32),
                   "healthSummary": _SMALL})
#: Function name -> check of its value.  Struct members are checked where present; readers
#: (_bus_id, _gpu, fabric_facts) still take only members of the right type.
VALUE_CHECKS: Dict[str, Check] = {
    "nvmlInit": _anything, "nvmlDeviceGetHandleByIndex": _anything,
    "nvmlSystemGetDriverVersion": _text, "nvmlSystemGetNVMLVersion": _text,
    "nvmlSystemGetCudaDriverVersion": _int_in(0, U32),
    "nvmlDeviceGetCount": _int_in(0, MAX_GPUS),
    "nvmlDeviceGetName": _text, "nvmlDeviceGetUUID": _text, "nvmlDeviceGetSerial": _text,
    "nvmlDeviceGetPciInfo": _PCI, "nvmlDeviceGetMinorNumber": _int_in(0, U32),
    "nvmlDeviceGetArchitecture": _int_in(0, U32),
    "nvmlDeviceGetCudaComputeCapability": _pair_of(0, 999),
    "nvmlDeviceGetMemoryInfo": _struct({k: _COUNTER for k in ("total", "free", "used")}),
    "nvmlDeviceGetCpuAffinity": _int_list(CPU_WORDS, 0, U64),
    "nvmlDeviceGetMemoryAffinity": _int_list(NODE_WORDS, 0, U64),
    "nvmlDeviceGetNumaNodeId": _int_in(-(2**31), 2**31 - 1),
    "nvmlDeviceGetCurrPcieLinkGeneration": _SMALL, "nvmlDeviceGetMaxPcieLinkGeneration": _SMALL,
    "nvmlDeviceGetGpuMaxPcieLinkGeneration": _SMALL, "nvmlDeviceGetCurrPcieLinkWidth": _SMALL,
    "nvmlDeviceGetMaxPcieLinkWidth": _SMALL, "nvmlDeviceGetPcieReplayCounter": _COUNTER,
    "nvmlDeviceGetMigMode": _pair_of(0, 1), "nvmlDeviceGetPersistenceMode": _int_in(0, 1),
    "nvmlDeviceGetGpuFabricInfoV": _FABRIC,
    "nvmlDeviceGetNvLinkState": _int_in(0, 1), "nvmlDeviceGetNvLinkVersion": _SMALL,
    "nvmlDeviceGetNvLinkRemoteDeviceType": _SMALL, "nvmlDeviceGetNvLinkRemotePciInfo": _PCI,
    "nvmlDeviceGetNvLinkErrorCounter": _COUNTER,
    "nvmlDeviceGetP2PStatus": _SMALL, "nvmlDeviceGetTopologyCommonAncestor": _SMALL,
}
#: Field id -> check of its value.
FIELD_CHECKS: Dict[int, Check] = {
    FI_NVLINK_LINK_COUNT: _int_in(0, MAX_LINKS),
    FI_NVSWITCH_CONNECTED_LINK_COUNT: _int_in(0, MAX_LINKS),
    FI_PCIE_REPLAY_COUNTER: _COUNTER, FI_NVLINK_GET_STATE: _one_of(sorted(LINK_STATE_FIELD)),
    FI_NVLINK_GET_VERSION: _SMALL, FI_NVLINK_GET_SPEED: _speed,
    FI_NVLINK_REMOTE_NVLINK_ID: _int_in(0, U32), FI_NVLINK_ERROR_DL_REPLAY: _COUNTER,
    FI_NVLINK_ERROR_DL_RECOVERY: _COUNTER, FI_NVLINK_ERROR_DL_CRC: _COUNTER,
}


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


class _Checked:
    """Wraps a source: answers whose value fails its check become ``BadValue`` errors."""

    def __init__(self, src: Any, bad: List[Dict[str, Any]]) -> None:
        self.src = src
        self.bad = bad

    def _check(self, key: Callable[[], str], ans: Answer, check: Optional[Check],
               gpu: Optional[int]) -> Answer:
        """``key`` makes the call's recording key (only needed when the value is bad)."""
        if not ans.ok:
            return ans
        why = (check or _anything)(ans.value)
        if why is None:
            return ans
        self.bad.append({"call": key(), "gpu": gpu, "value": _shown(ans.value),
                         "expected": why})
        return Answer(error="BadValue", detail=f"{_shown(ans.value)} is not {why}")

    def call(self, fn: str, *args: Any) -> Answer:
        return self._check(lambda: call_key(fn, args), self.src.call(fn, *args),
                           VALUE_CHECKS.get(fn), _gpu_of(args))

    def fields(self, gpu: int, ids: Sequence[Tuple[int, int]]) -> Dict[Tuple[int, int], Answer]:
        return {k: self._check(lambda k=k: field_key(gpu, *k), a,  # type: ignore[misc]
                               FIELD_CHECKS.get(k[0], _COUNTER), gpu)
                for k, a in self.src.fields(gpu, ids).items()}


class _Stop(Exception):
    """The deadline passed (live) or the recording ends there (replay of a timed-out probe)."""

    def __init__(self, key: str, gpu: Optional[int]) -> None:
        super().__init__(key)
        self.key = key
        self.gpu = gpu


def _gpu_of(args: Sequence[Any]) -> Optional[int]:
    for a in args:
        if isinstance(a, Gpu):
            return a.index
    return None


# --- live source: the one chokepoint around pynvml --------------------------------------


class _Live:
    """Asks the real ``pynvml``; records every answer.  Never raises NVML errors."""

    def __init__(self, nv: Any, deadline: float) -> None:
        self.nv = nv
        self.deadline = deadline
        self.handles: Dict[int, Any] = {}
        self.calls: Dict[str, Dict[str, Any]] = {}
        self.ncalls = 0
        self.pending: Optional[Tuple[str, Optional[int], float]] = None
        self.abandoned = False
        self.lock = threading.Lock()

    def _begin(self, key: str, gpu: Optional[int]) -> None:
        if self.abandoned or time.monotonic() > self.deadline:
            raise _Stop(key, gpu)
        with self.lock:
            self.pending = (key, gpu, time.monotonic())

    def _end(self, key: str, answer: Answer) -> Answer:
        with self.lock:
            self.pending = None
            self.ncalls += 1
            if not self.abandoned:
                self.calls[key] = answer.to_record()
        return answer

    def _error(self, exc: BaseException) -> Answer:
        if isinstance(exc, self.nv.NVMLError):
            code = getattr(exc, "value", None)
            return Answer(error=ERROR_NAMES.get(code, f"Error{code}"))
        if isinstance(exc, UnicodeDecodeError):
            return Answer(error="BadData", detail=f"undecodable bytes: {exc.reason}")
        return Answer(error=type(exc).__name__, detail=str(exc))

    def _resolve(self, a: Any) -> Any:
        return self.handles[a.index] if isinstance(a, Gpu) else a

    def call(self, fn: str, *args: Any) -> Answer:
        key = call_key(fn, args)
        self._begin(key, _gpu_of(args))
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
            else:
                func = getattr(nv, fn, None)
                if func is None:
                    return self._end(key, Answer(error="FunctionNotFound",
                                                 detail="not in this nvidia-ml-py"))
                value = _jsonify(func(*[self._resolve(a) for a in args]))
                if fn in ("nvmlDeviceGetCpuAffinity", "nvmlDeviceGetMemoryAffinity"):
                    while value and value[-1] == 0:
                        value.pop()
        except Exception as exc:  # every NVML failure is an answer, never a crash
            return self._end(key, self._error(exc))
        return self._end(key, Answer(value=value))

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

    def fields(self, gpu: int, ids: Sequence[Tuple[int, int]]) -> Dict[Tuple[int, int], Answer]:
        whole = f"nvmlDeviceGetFieldValues(gpu{gpu})"
        self._begin(whole, gpu)
        out: Dict[Tuple[int, int], Answer] = {}
        try:
            values = self.nv.nvmlDeviceGetFieldValues(self.handles[gpu], list(ids))
        except Exception as exc:
            err = self._error(exc)
            with self.lock:
                self.pending = None
                self.ncalls += 1
            for fid, scope in ids:
                out[(fid, scope)] = err
                self._record(field_key(gpu, fid, scope), err)
            return out
        with self.lock:
            self.pending = None
            self.ncalls += 1
        for (fid, scope), v in zip(ids, values):
            ret = int(v.nvmlReturn)
            if ret:
                ans = Answer(error=ERROR_NAMES.get(ret, f"Error{ret}"))
            else:
                ans = Answer(value=_field_value(v))
            out[(fid, scope)] = ans
            self._record(field_key(gpu, fid, scope), ans)
        return out

    def _record(self, key: str, ans: Answer) -> None:
        with self.lock:
            if not self.abandoned:
                self.calls[key] = ans.to_record()

    def snapshot_calls(self) -> Dict[str, Dict[str, Any]]:
        with self.lock:
            return dict(self.calls)


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


# --- replay source: the recording answers ------------------------------------------------


class _Replay:
    """Answers from a recording.  Pure; no pynvml."""

    def __init__(self, calls: Dict[str, Any], complete: bool) -> None:
        self.calls = calls
        self.complete = complete

    def _get(self, key: str, gpu: Optional[int]) -> Answer:
        rec = self.calls.get(key)
        if not isinstance(rec, dict):
            if not self.complete:
                raise _Stop(key, gpu)
            return Answer(error="NotRecorded", detail="no answer in the recording")
        return Answer.from_record(rec)

    def call(self, fn: str, *args: Any) -> Answer:
        return self._get(call_key(fn, args), _gpu_of(args))

    def fields(self, gpu: int, ids: Sequence[Tuple[int, int]]) -> Dict[Tuple[int, int], Answer]:
        return {(f, s): self._get(field_key(gpu, f, s), gpu) for f, s in ids}


# --- the walker: which questions, in which order -----------------------------------------

#: Per-GPU questions asked once: fact name -> (function, extra args).
GPU_CALLS: Tuple[Tuple[str, str, Tuple[Any, ...]], ...] = (
    ("name", "nvmlDeviceGetName", ()),
    ("uuid", "nvmlDeviceGetUUID", ()),
    ("serial", "nvmlDeviceGetSerial", ()),
    ("pci", "nvmlDeviceGetPciInfo", ()),
    ("minor", "nvmlDeviceGetMinorNumber", ()),
    ("architecture", "nvmlDeviceGetArchitecture", ()),
    ("compute_capability", "nvmlDeviceGetCudaComputeCapability", ()),
    ("memory", "nvmlDeviceGetMemoryInfo", ()),
    ("cpu_affinity", "nvmlDeviceGetCpuAffinity", (CPU_WORDS,)),
    ("memory_affinity", "nvmlDeviceGetMemoryAffinity", (NODE_WORDS, 0)),
    ("numa_node_id", "nvmlDeviceGetNumaNodeId", ()),
    ("pcie_current_gen", "nvmlDeviceGetCurrPcieLinkGeneration", ()),
    ("pcie_max_gen", "nvmlDeviceGetMaxPcieLinkGeneration", ()),
    ("pcie_gpu_max_gen", "nvmlDeviceGetGpuMaxPcieLinkGeneration", ()),
    ("pcie_current_width", "nvmlDeviceGetCurrPcieLinkWidth", ()),
    ("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth", ()),
    ("mig_mode", "nvmlDeviceGetMigMode", ()),
    ("persistence_mode", "nvmlDeviceGetPersistenceMode", ()),
    ("fabric", "nvmlDeviceGetGpuFabricInfoV", ()),
)


class _GpuWalk:
    """Per-GPU asking that stops at the first GpuIsLost: a lost GPU is a fault, not a crash."""

    def __init__(self, src: Any, index: int, rec: Dict[str, Any]) -> None:
        self.src = src
        self.index = index
        self.rec = rec

    @property
    def lost(self) -> bool:
        return self.rec.get("fault") is not None

    def _check(self, key: Callable[[], str], ans: Answer) -> Answer:
        """``key`` makes the call's recording key (only needed when the GPU is lost)."""
        if ans.error in LOST and not self.lost:
            key = key()
            self.rec["fault"] = {"kind": "lost", "call": key,
                                 "message": f"GPU {self.index} fell off the bus (GpuIsLost) "
                                            f"at {key}; later questions were not asked"}
        return ans

    def call(self, fn: str, *args: Any) -> Answer:
        if self.lost:
            return Answer(error="Skipped", detail="GPU lost earlier in the probe")
        full = (Gpu(self.index),) + args
        return self._check(lambda: call_key(fn, full), self.src.call(fn, *full))

    def fields(self, ids: Sequence[Tuple[int, int]]) -> Dict[Tuple[int, int], Answer]:
        if self.lost or not ids:
            return {k: Answer(error="Skipped") for k in ids}
        out = self.src.fields(self.index, ids)
        for k, ans in out.items():
            self._check(lambda k=k: field_key(self.index, *k), ans)  # type: ignore[misc]
        return out


def _val(ans: Answer) -> Any:
    return ans.value if ans.ok else None


def _why(ans: Answer) -> str:
    return {"not_supported": "not_supported", "not_permitted": "not_permitted",
            "no_such": "not_supported", "lost": "gpu_lost",
            "bad_value": "bad_value"}.get(ans.meaning or "", "error")


def walk(src: Any) -> Dict[str, Any]:
    """Ask NVML everything the probe needs; return raw-ish facts (plain data).

    ``src`` is :class:`_Live` or :class:`_Replay`; the questions depend only
    on earlier answers, so a replay asks exactly what the live probe asked.
    """
    facts: Dict[str, Any] = {"status": "ok", "reason": None, "system": {}, "gpus": [],
                             "pairs": {}, "incomplete": None, "bad_values": [],
                             "corrupt": None}
    try:
        _walk(_Checked(src, facts["bad_values"]), facts)
    except _Stop as stop:
        facts["incomplete"] = {"call": stop.key, "gpu": stop.gpu}
        for rec in facts["gpus"]:
            if rec["index"] == stop.gpu and rec.get("fault") is None:
                rec["fault"] = {"kind": "timeout", "call": stop.key,
                                "message": f"GPU {stop.gpu} did not answer {stop.key} before "
                                           "the deadline"}
    return facts


def _walk(src: Any, facts: Dict[str, Any]) -> None:
    init = src.call("nvmlInit")
    if not init.ok:
        facts["status"] = "unavailable"
        facts["reason"] = UNAVAILABLE_REASONS.get(init.error or "",
                                                  f"nvmlInit failed: {init.error}")
        return
    system = facts["system"]
    for name, fn in (("driver_version", "nvmlSystemGetDriverVersion"),
                     ("nvml_version", "nvmlSystemGetNVMLVersion"),
                     ("cuda_driver_version", "nvmlSystemGetCudaDriverVersion")):
        system[name] = _val(src.call(fn))
    count = src.call("nvmlDeviceGetCount")
    if count.meaning == "bad_value":
        bad = facts["bad_values"][-1]
        facts["corrupt"] = (f"nvmlDeviceGetCount() is recorded as {bad['value']}, not a GPU "
                            f"count ({bad['expected']})")
        return
    if not count.ok:
        facts["status"] = "unavailable"
        facts["reason"] = f"nvmlDeviceGetCount failed: {count.error}"
        return
    system["device_count"] = count.value
    walkers: List[_GpuWalk] = []
    for i in range(count.value):
        rec: Dict[str, Any] = {"index": i, "fault": None, "facts": {}, "unavailable": {}}
        facts["gpus"].append(rec)
        handle = src.call("nvmlDeviceGetHandleByIndex", i)
        if not handle.ok:
            kind = {"lost": "lost", "not_permitted": "not_permitted"}.get(handle.meaning or "",
                                                                         "no_handle")
            rec["fault"] = {"kind": kind, "call": f"nvmlDeviceGetHandleByIndex({i})",
                            "message": f"GPU {i} is counted by NVML but its handle failed "
                                       f"({handle.error})"}
            continue
        g = _GpuWalk(src, i, rec)
        walkers.append(g)
        _walk_gpu(g)
    usable = [g for g in walkers if not g.lost]
    for a in usable:
        for b in usable:
            if a.index == b.index or a.lost or b.lost:
                continue
            pair = facts["pairs"].setdefault(f"{a.index}-{b.index}", {})
            for name, idx in P2P_INDEXES:
                ans = src.call("nvmlDeviceGetP2PStatus", Gpu(a.index), Gpu(b.index), idx)
                a._check(lambda a=a, b=b, idx=idx: call_key(  # type: ignore[misc]
                    "nvmlDeviceGetP2PStatus", (Gpu(a.index), Gpu(b.index), idx)), ans)
                pair[f"p2p_{name}"] = ans.value if ans.ok else None
            if a.index < b.index:
                ans = src.call("nvmlDeviceGetTopologyCommonAncestor", Gpu(a.index),
                               Gpu(b.index))
                pair["ancestor"] = ans.value if ans.ok else None


def _walk_gpu(g: _GpuWalk) -> None:
    f = g.rec["facts"]
    for name, fn, extra in GPU_CALLS:
        ans = g.call(fn, *extra)
        if ans.ok:
            f[name] = ans.value
        else:
            g.rec["unavailable"][name] = _why(ans)
        if g.lost:
            return
    # Batch 1: link count, switch-connected link count, PCIe replay counter.
    b1 = g.fields([(FI_NVLINK_LINK_COUNT, 0), (FI_NVSWITCH_CONNECTED_LINK_COUNT, 0),
                   (FI_PCIE_REPLAY_COUNTER, 0)])
    if g.lost:
        return
    replay = b1[(FI_PCIE_REPLAY_COUNTER, 0)]
    if not replay.ok:
        replay = g.call("nvmlDeviceGetPcieReplayCounter")
    f["pcie_replay_counter"] = _val(replay)
    sw = b1[(FI_NVSWITCH_CONNECTED_LINK_COUNT, 0)]
    f["nvswitch_links"] = _val(sw)
    nv: Dict[str, Any] = {"status": None, "count": None, "count_source": None, "links": []}
    g.rec["nvlink"] = nv
    n_ans = b1[(FI_NVLINK_LINK_COUNT, 0)]
    state_fn: Dict[int, Answer] = {}
    if n_ans.meaning == "bad_value":  # no link loop on a count that is not one
        nv["status"] = "unknown"
        g.rec["unavailable"]["nvlink_count"] = "bad_value"
        return
    if n_ans.ok:
        nv["count"], nv["count_source"] = n_ans.value, "field"
        if n_ans.value == 0:
            nv["status"] = "not_supported"
            return
    else:
        # Field 91 unanswered: walk links until InvalidArgument (past the last link).
        for link in range(FALLBACK_MAX_LINKS):
            ans = g.call("nvmlDeviceGetNvLinkState", link)
            if g.lost:
                return
            if ans.meaning == "no_such" or (link == 0 and ans.meaning == "not_supported"):
                break
            state_fn[link] = ans
        if not state_fn:
            nv["status"] = "not_supported" if ans.meaning in ("not_supported", "no_such") \
                else _why(ans)
            nv["count"] = 0 if nv["status"] == "not_supported" else None
            return
        nv["count"], nv["count_source"] = len(state_fn), "probe"
    n = int(nv["count"])
    nv["status"] = "ok"
    # Field 91 is trusted as the number of links present (the header's meaning; whether it
    # can count active links only is an open point, nvml.md section 8).  It is bounded by
    # MAX_LINKS (a bad value is caught above).
    batch = g.fields([(fid, link) for link in range(n) for fid in LINK_FIELDS]
                     + [(fids[link], 0) for fids in LEGACY_COUNTER_FIELDS.values()
                        for link in range(min(n, len(fids)))])
    if g.lost:
        return
    version_checked = False
    counters = _Counters(g, batch)
    for link in range(n):
        lr: Dict[str, Any] = {"link": link, "state": None, "state_source": None,
                              "version": None, "speed_mbps": None, "remote_type": None,
                              "remote_pci": None, "remote_link": None, "errors": {},
                              "unavailable": {}}
        nv["links"].append(lr)
        st = batch[(FI_NVLINK_GET_STATE, link)]
        if st.ok:
            lr["state"], lr["state_source"] = LINK_STATE_FIELD[st.value], "field"
        elif st.meaning == "bad_value":
            lr["unavailable"]["state"] = "bad_value"
            continue
        else:
            ans = state_fn.get(link) or g.call("nvmlDeviceGetNvLinkState", link)
            if ans.ok:
                lr["state"] = "active" if ans.value == 1 else "inactive"
                lr["state_source"] = "function"
            else:
                lr["unavailable"]["state"] = _why(ans)
                continue
        if lr["state"] not in ("active", "sleep"):
            continue  # remote answers on inactive links are undocumented: do not ask
        ver = batch[(FI_NVLINK_GET_VERSION, link)]
        if not version_checked:
            # The field's encoding is assumed equal to nvmlDeviceGetNvLinkVersion's enum;
            # check that once per GPU and trust the function if they differ.
            version_checked = True
            fn_ver = g.call("nvmlDeviceGetNvLinkVersion", link)
            if fn_ver.ok and (not ver.ok or ver.value != fn_ver.value):
                nv["version_source"] = "function"
            else:
                nv["version_source"] = "field"
            if not ver.ok or nv["version_source"] == "function":
                ver = fn_ver
        elif nv.get("version_source") == "function" or not ver.ok:
            ver = g.call("nvmlDeviceGetNvLinkVersion", link)
        lr["version"] = _val(ver)
        speed = batch[(FI_NVLINK_GET_SPEED, link)]
        lr["speed_mbps"] = _val(speed)
        rid = batch[(FI_NVLINK_REMOTE_NVLINK_ID, link)]
        lr["remote_link"] = _val(rid)
        rtype = g.call("nvmlDeviceGetNvLinkRemoteDeviceType", link)
        lr["remote_type"] = _val(rtype)
        if not rtype.ok:
            lr["unavailable"]["remote_type"] = _why(rtype)
        rpci = g.call("nvmlDeviceGetNvLinkRemotePciInfo", link)
        lr["remote_pci"] = _val(rpci)
        if not rpci.ok:
            lr["unavailable"]["remote_pci"] = _why(rpci)
        for cname, fid, counter in ERROR_COUNTERS:
            ans = counters.read(cname, fid, counter, link)
            if ans.ok:
                lr["errors"][cname] = ans.value
            else:
                lr["errors"][cname] = None
                lr["unavailable"][f"errors.{cname}"] = _why(ans)


class _Counters:
    """NVLink error counters of one GPU: from the field batch where NVML has a field, else
    nvmlDeviceGetNvLinkErrorCounter; a counter the function does not support on one link is
    not asked again on the others (support is per GPU, not per link)."""

    def __init__(self, g: _GpuWalk, batch: Dict[Tuple[int, int], Answer]) -> None:
        self.g = g
        self.batch = batch
        self.unsupported: Dict[str, int] = {}
        self.checked: set = set()
        self.use_function: set = set()

    def read(self, cname: str, fid: Optional[int], counter: int, link: int) -> Answer:
        legacy = LEGACY_COUNTER_FIELDS.get(cname, ())
        if fid is not None:
            field = self.batch.get((fid, link))
        else:
            field = self.batch.get((legacy[link], 0)) if link < len(legacy) else None
        if field is not None and field.ok and legacy and cname not in self.checked:
            self.checked.add(cname)  # is the per-link field the function's counter?
            fn = self._function(cname, counter, link)
            if fn.ok and fn.value != field.value:
                self.use_function.add(cname)
                return fn
            return field
        if field is not None and field.ok and cname not in self.use_function:
            return field
        return self._function(cname, counter, link)

    def _function(self, cname: str, counter: int, link: int) -> Answer:
        if cname in self.unsupported:
            return Answer(error="NotSupported",
                          detail=f"not asked: NotSupported on link {self.unsupported[cname]}")
        ans = self.g.call("nvmlDeviceGetNvLinkErrorCounter", link, counter)
        if ans.meaning == "not_supported":
            self.unsupported[cname] = link
        return ans


# --- capture -------------------------------------------------------------------------------


def capture(options: Optional[Any] = None) -> Dict[str, Any]:
    """Run the NVML probe on this machine and return its evidence (the recording).

    Never raises for the expected failures: no driver, no GPU, unsupported
    or forbidden calls, a lost GPU, a hung call.  Imports pynvml only here.
    """
    timeout = float(getattr(options, "timeout", None) or DEFAULT_TIMEOUT)
    evidence: Dict[str, Any] = {
        "evidence_version": EVIDENCE_VERSION, "status": "ok", "error": None,
        "library": None, "timeout_s": timeout, "duration_s": None, "ncalls": 0,
        "pending": None, "calls": {},
    }
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
    live = _Live(pynvml, deadline=start + timeout)
    result: Dict[str, Any] = {}

    def run() -> None:
        facts = walk(live)
        result["facts"] = facts
        if facts["status"] == "ok" and not live.abandoned:
            try:
                pynvml.nvmlShutdown()
            except Exception:  # a failed shutdown changes nothing we report
                pass

    worker = threading.Thread(target=run, name="nvtopo-nvml", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        with live.lock:
            live.abandoned = True
            pending = live.pending
        evidence["status"] = "timeout"
        if pending is not None:
            key, gpu, since = pending
            evidence["pending"] = {"call": key, "gpu": gpu,
                                   "waited_s": round(time.monotonic() - since, 3)}
            evidence["error"] = (f"NVML did not answer {key}"
                                 + (f" for GPU {gpu}" if gpu is not None else "")
                                 + f" within the {timeout:g} s deadline")
        else:
            evidence["error"] = f"NVML probe did not finish within {timeout:g} s"
    else:
        facts = result.get("facts") or {}
        if facts.get("incomplete"):
            inc = facts["incomplete"]
            evidence["status"] = "timeout"
            evidence["pending"] = {"call": inc["call"], "gpu": inc["gpu"], "waited_s": 0.0}
            evidence["error"] = (f"NVML probe ran out of its {timeout:g} s deadline before "
                                 f"{inc['call']}")
        elif facts.get("status") == "unavailable":
            evidence["status"] = "unavailable"
            evidence["error"] = f"NVML unavailable: {facts.get('reason')}"
        elif facts.get("corrupt"):
            evidence["status"] = "unavailable"
            evidence["error"] = f"NVML gave an unusable answer: {facts['corrupt']}"
    evidence["calls"] = live.snapshot_calls()
    evidence["ncalls"] = live.ncalls
    evidence["duration_s"] = round(time.monotonic() - start, 3)
    return evidence


# --- derive --------------------------------------------------------------------------------


def _corrupt(message: str) -> NvtopoError:
    return NvtopoError(f"corrupt snapshot: nvml evidence: {message}")


def derive(evidence: Dict[str, Any]) -> Topology:
    """Model fragment from the NVML evidence (or from pasted nvidia-smi nvlink/-q text).

    Pure.  A recorded value of the wrong type or range makes that fact unknown, with an
    ``nvml.bad_value`` note naming the call; evidence that is unusable as a whole (no
    recording, an impossible GPU count) raises :class:`NvtopoError` ("corrupt snapshot").
    """
    if not isinstance(evidence, dict):
        raise _corrupt("not an object")
    if isinstance(evidence.get("stdout"), str) and "calls" not in evidence:
        from . import nvml_text

        return nvml_text.derive_text(evidence["stdout"])
    status = evidence.get("status", "ok")
    if status not in ("ok", "timeout", "unavailable"):
        raise _corrupt(f"status {_shown(status)} is not ok, timeout or unavailable")
    calls = evidence.get("calls")
    if calls is None and status == "unavailable":
        calls = {}
    if not isinstance(calls, dict):
        raise _corrupt("\"calls\" (the recorded NVML answers) is "
                       + ("missing" if calls is None else "not an object"))
    pending = evidence.get("pending")
    bad_pending = None
    if pending is not None and not (
            isinstance(pending, dict) and isinstance(pending.get("call"), (str, type(None)))
            and (pending.get("gpu") is None or _is_int(pending.get("gpu")))):
        bad_pending = {"call": "pending", "gpu": None, "value": _shown(pending),
                       "expected": "the call that did not answer ({\"call\", \"gpu\"})"}
        pending = None
    error = evidence.get("error") if isinstance(evidence.get("error"), str) else None
    facts = walk(_Replay(calls, complete=(status != "timeout")))
    if bad_pending:
        facts["bad_values"].insert(0, bad_pending)
    if facts["corrupt"]:
        if status != "unavailable":
            raise _corrupt(facts["corrupt"])
        facts["status"], facts["reason"] = "unavailable", error or facts["corrupt"]
    if status == "timeout" and facts.get("incomplete") is None:
        facts["incomplete"] = {"call": None, "gpu": None}
    if status == "unavailable" and facts["status"] == "ok":
        facts["status"] = "unavailable"
        facts["reason"] = error
    if facts.get("incomplete") and pending:
        facts["incomplete"] = {"call": pending.get("call"), "gpu": pending.get("gpu")}
    return build(facts, SOURCE, evidence)


# --- from facts to the model ---------------------------------------------------------------

def _bus_id(pci: Any) -> Optional[str]:
    """The bus id of an nvmlPciInfo record (string members, else the integers), or None."""
    if not isinstance(pci, dict):
        return None
    for key in ("busId", "busIdLegacy"):
        if pci_bdf(pci.get(key)):
            return pci[key]
    dom, bus, dev = (pci.get(k) for k in ("domain", "bus", "device"))
    if _is_int(dom) and _is_int(bus) and _is_int(dev) and 0 <= dom <= U32 \
            and 0 <= bus <= 0xFF and 0 <= dev <= 0x1F and (dom or bus or dev):
        return f"{dom:08X}:{bus:02X}:{dev:02X}.0"
    return None


def cpulist(words: Any) -> Optional[str]:
    """64-bit mask words -> ``0-55,112-167`` (the ``topo -m`` spelling)."""
    if not isinstance(words, list):
        return None
    bits = [w * 64 + b for w, word in enumerate(words) if isinstance(word, int)
            for b in range(64) if word >> b & 1]
    if not bits:
        return None
    out, start, prev = [], bits[0], bits[0]
    for b in bits[1:] + [None]:  # type: ignore[list-item]
        if b is not None and b == prev + 1:
            prev = b
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if b is not None:
            start = prev = b
    return ",".join(out)


def _uuid(hexstr: Any) -> Optional[str]:
    if not isinstance(hexstr, str) or len(hexstr) != 32:
        return None
    return f"{hexstr[:8]}-{hexstr[8:12]}-{hexstr[12:16]}-{hexstr[16:20]}-{hexstr[20:]}"


def _snake(name: str) -> str:
    """``InsufficientResources`` -> ``insufficient_resources``."""
    return "".join("_" + c.lower() if c.isupper() and i else c.lower()
                   for i, c in enumerate(name))


def fabric_facts(raw: Any) -> Optional[Dict[str, Any]]:
    """Decode GPU fabric info, from NVML or from ``nvidia-smi -q`` text (nvml_text encodes
    the text into the same NVML codes first): one decoder, one vocabulary.

    ``raw`` holds NVML's members: ``state``, ``status`` (an nvmlReturn_t), ``clusterUuid``
    (32 hex digits), ``cliqueId``, ``healthMask``, ``healthSummary``; absent members are
    unknown.  ``attached`` needs Completed + Success + a non-zero cluster UUID (``None``
    where the UUID is unknown, e.g. old drivers' text); ``healthy`` also a healthy summary.
    """
    if not isinstance(raw, dict):
        return None
    raw = {k: v for k, v in raw.items() if k == "clusterUuid" or (_is_int(v) and 0 <= v <= U32)}
    if _hex_uuid(raw.get("clusterUuid")) is not None:
        raw.pop("clusterUuid", None)
    state = FABRIC_STATES.get(raw.get("state"), "unknown")
    code = raw.get("status")
    status = None if code is None else "success" if code == 0 else \
        _snake(ERROR_NAMES[code]) if code in ERROR_NAMES else f"error_{code}"
    uuid_hex = raw.get("clusterUuid")
    zero_uuid = uuid_hex is not None and set(uuid_hex) == {"0"}
    out: Dict[str, Any] = {
        "state": state, "status": status if state == "completed" else None,
        "cluster_uuid": None if uuid_hex is None or zero_uuid else _uuid(uuid_hex.lower()),
        "clique_id": raw.get("cliqueId"), "health": None, "health_summary": None,
    }
    mask = raw.get("healthMask")
    if mask is not None:
        health: Dict[str, Any] = {}
        for name, shift, width in FABRIC_HEALTH_BITS:
            v = (mask >> shift) & width
            if name == "incorrect_configuration":
                health[name] = INCORRECT_CONFIGURATION.get(v) if v else None
            elif name == "gfm_state":
                health[name] = {1: "connected", 2: "disconnected"}.get(v)
            else:
                health[name] = {1: True, 2: False}.get(v)
        out["health"] = health
    if "healthSummary" in raw:
        out["health_summary"] = FABRIC_SUMMARY.get(raw["healthSummary"], "unknown")
    if state != "completed" or code != 0 or zero_uuid:
        out["attached"] = False
    else:
        out["attached"] = None if uuid_hex is None else True
    healthy = out["health_summary"] in (None, "not_supported", "healthy")
    out["healthy"] = None if out["attached"] is None else bool(out["attached"] and healthy)
    return out


def classify_links(gpus: List[Dict[str, Any]], by_bdf: Dict[Tuple[int, ...], int]) -> None:
    """Give every link its remote end and one of: active, inactive, down, not_supported, unknown.

    ``inactive`` is *by design* and ``down`` is a fault.  A link is judged
    against the node: how this GPU uses NVLink (its *kind*: switch-attached,
    bridged pair, direct mesh, MIG, nothing up) and how the other GPUs *of the
    same model* on the node use it (their *family*).  The rule that decided is
    kept in ``rule`` with a sentence in ``reason``:

    * ``mig``: MIG mode is on; NVLink is off by design.
    * ``nvswitch``: the GPU is switch-attached and the link is down: a GPU of
      its family has this link index up, or NVML counts more switch-connected
      links (field 147) than are up.  ``not_connected`` (inactive): no GPU of
      the family uses this link index and field 147 does not say it is
      connected.  Field 147 may count wired or active links (an open point):
      under either meaning the family comparison decides, so 147 alone never
      turns a down link into ``not_connected``.  ``nvswitch_count`` (unknown):
      147 counts more connected links than are up, and several idle links no
      family GPU uses could be the missing ones.
    * ``peers_linked``: no link of the GPU is up while its family is
      switch-attached or meshed: every link index the family uses is down
      here (a GPU dropped out of the fabric, e.g. gpud #1085).
    * ``mesh``: the GPU links to several peers directly (SXM mesh, e.g. DGX-1):
      every link is expected up, so an inactive one is down.
    * ``bridge``: every active link goes to one peer GPU and back (a bridged
      pair of PCIe boards, which uses part of its links): inactive.
    * ``unbridged``: no link up, the family is bridged in pairs: no bridge on
      this GPU, or a broken one; text cannot tell, so inactive.
    * ``no_peer``: no GPU of its model on the node has a link up: nothing is
      attached (unused by design): inactive.
    """
    for g in gpus:
        nv = g.get("nvlink") or {}
        if g.get("fault") and isinstance(nv.get("count"), int):
            why = "gpu_lost" if g["fault"]["kind"] == "lost" else "timeout"
            for link in range(len(nv.get("links", [])), nv["count"]):
                nv["links"].append({"link": link, "state": None, "errors": {},
                                    "unavailable": {"state": why}})
        for lr in nv.get("links", []):
            rt = lr.get("remote_type")
            rtype = REMOTE_TYPES.get(rt, "unknown") if rt is not None else None
            bus_id = _bus_id(lr.get("remote_pci"))
            gpu_index = by_bdf.get(pci_bdf(bus_id)) if bus_id else None  # type: ignore[arg-type]
            if rtype is None and lr.get("state") in ("active", "sleep"):
                rtype = "unknown"
            if rtype == "gpu" and gpu_index is None and bus_id:
                lr.setdefault("notes", []).append(
                    f"remote GPU {bus_id} is not among the GPUs NVML enumerates")
            lr["remote"] = {"type": rtype if rtype else "unknown", "gpu_index": gpu_index,
                            "pci_bus_id": bus_id, "link": lr.get("remote_link")}
    # Per-GPU summaries used by the rules.
    for g in gpus:
        nv = g.get("nvlink") or {}
        links = nv.get("links", [])
        active = [lr for lr in links if lr.get("state") in ("active", "sleep")]
        peers = {lr["remote"]["gpu_index"] for lr in active
                 if lr["remote"]["type"] == "gpu" and lr["remote"]["gpu_index"] is not None}
        to_switch = [lr for lr in active if lr["remote"]["type"] in ("nvswitch", "unknown")]
        nv["active"] = len(active)
        nv["peers"] = sorted(peers)
        nv["switch_links_up"] = len(to_switch)
    kinds = {g["index"]: _kind(g, gpus) for g in gpus}
    # per GPU, the link numbers that are up (as ``o.get("link") == lk`` compares them)
    up_links = {id(x): [o.get("link") for o in (x.get("nvlink") or {}).get("links", [])
                        if o.get("state") in ("active", "sleep")] for x in gpus}
    for g in gpus:
        nv = g.get("nvlink") or {}
        kind = kinds[g["index"]]
        sw = g.get("facts", {}).get("nvswitch_links")
        sw = sw if _is_int(sw) else None
        family = [x for x in gpus if x is not g and _same_model(g, x)]
        fam_kinds = {kinds[x["index"]] for x in family}
        other_models_linked = any(kinds[x["index"]] in ("switch", "mesh", "bridge")
                                  for x in gpus if x is not g and not _same_model(g, x))
        up_in_family = {lk: [x["index"] for x in family if lk in up_links[id(x)]]
                        for lk in {lr["link"] for lr in nv.get("links", [])}}
        idle = [lr["link"] for lr in nv.get("links", [])
                if lr.get("state") is not None and lr["state"] not in ("active", "sleep")]
        # Field 147 says more links are switch-connected than are up: the family explains
        # some of the missing ones; the rest are among the idle links nobody else uses.
        shortfall = (sw - nv.get("active", 0)) if sw is not None else 0
        unexplained = [lk for lk in idle if not up_in_family[lk]]
        missing = shortfall - (len(idle) - len(unexplained))
        for lr in nv.get("links", []):
            st = lr.get("state")
            if st is None:
                why = lr.get("unavailable", {}).get("state", "error")
                lr["status"] = "not_supported" if why == "not_supported" else "unknown"
                lr["rule"] = why
                lr["reason"] = {"not_supported": "NVML does not support this link",
                                "not_permitted": "NVML refused the question (no permission)",
                                "gpu_lost": "the GPU was lost before this link was read",
                                "timeout": "the probe's deadline passed before this link "
                                           "was read",
                                "bad_value": "the recorded state is not a valid value "
                                             "(damaged snapshot?)"}.get(
                                    why, "NVML gave no state for this link")
                continue
            if st in ("active", "sleep"):
                lr["status"], lr["rule"] = "active", "state"
                lr["reason"] = "link is up" + (" (low-power sleep)" if st == "sleep" else "")
                if g.get("fault"):
                    lr["reason"] = (f"link was up when read; the GPU was {g['fault']['kind']} "
                                    "later in the probe")
                continue
            traffic = " (traffic disabled)" if st == "traffic_disabled" else ""
            status, rule, reason = _judge(kind, fam_kinds, up_in_family[lr["link"]],
                                          lr["link"], nv, sw, other_models_linked,
                                          missing, len(unexplained))
            lr["status"], lr["rule"], lr["reason"] = status, rule, reason + traffic


def _model(g: Dict[str, Any]) -> Optional[str]:
    name = g.get("facts", {}).get("name")
    return name if isinstance(name, str) else None


def _same_model(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    """Same GPU model (an unknown name matches any: compare rather than assume nothing)."""
    return _model(a) is None or _model(b) is None or _model(a) == _model(b)


def _kind(g: Dict[str, Any], gpus: List[Dict[str, Any]]) -> str:
    """How a GPU uses NVLink: mig, switch, bridge, mesh (direct links) or none (nothing up)."""
    nv = g.get("nvlink") or {}
    f = g.get("facts", {})
    mig = f.get("mig_mode")
    if isinstance(mig, list) and mig and mig[0]:
        return "mig"
    sw = f.get("nvswitch_links")
    if nv.get("switch_links_up", 0) > 0 or (_is_int(sw) and sw > 0):
        return "switch"
    peers = nv.get("peers", [])
    if len(peers) == 1:
        other = next((x for x in gpus if x["index"] == peers[0]), None)
        if ((other or {}).get("nvlink") or {}).get("peers") == [g["index"]]:
            return "bridge"
    return "mesh" if nv.get("active") else "none"


def _gpus(indexes: List[int]) -> str:
    shown = ", ".join(str(i) for i in indexes[:8]) + (", ..." if len(indexes) > 8 else "")
    return ("GPU " if len(indexes) == 1 else "GPUs ") + shown


def _judge(kind: str, fam_kinds: set, users: List[int], link: int, nv: Dict[str, Any],
           sw: Optional[int], other_models_linked: bool, missing: int,
           unexplained: int) -> Tuple[str, str, str]:
    """(status, rule, reason) of an inactive link; see :func:`classify_links`.

    ``users``: GPUs of the family with this link index up.  ``missing``: how many
    switch-connected links (field 147) are down beyond those the family explains;
    ``unexplained``: the idle links of this GPU no family GPU uses (this one among them).
    """
    active = nv.get("active", 0)
    if kind == "mig":
        return "inactive", "mig", "MIG mode is enabled: NVLink is off by design"
    if kind == "switch" or (kind == "none" and "switch" in fam_kinds):
        rule = "nvswitch" if kind == "switch" else "peers_linked"
        lead = ("NVSwitch system" if kind == "switch" else
                "no link of this GPU is up while its model is switch-attached on this node")
        if users:
            return "down", rule, (f"{lead}: {_gpus(users)} of this model have link {link} up; "
                                  "on this GPU it is not")
        if missing > 0 and missing >= unexplained:
            return "down", rule, (f"{lead}: NVML counts {sw} links of this GPU connected to "
                                  f"NVSwitch, {active} are up")
        if missing > 0:
            return "unknown", "nvswitch_count", (
                f"{lead}: NVML counts {sw} links of this GPU connected to NVSwitch, {active} "
                f"are up; {missing} of the {unexplained} idle links no other GPU of this model "
                "uses are down, which ones cannot be told")
        if kind == "switch" and "switch" not in fam_kinds and sw is None:
            return "down", rule, (f"{lead}: every switch-connected link should be up; this one "
                                  "is not (no other GPU of this model to compare with)")
        why = (f"no other GPU of this model uses link {link} either" if "switch" in fam_kinds
               else f"NVML counts {sw} switch-connected links and all are up")
        return "inactive", "not_connected", f"{why}: not connected to NVSwitch (by design)"
    if kind == "mesh":
        return "down", "mesh", ("GPU links directly to several peers (SXM mesh): every link is "
                                "expected up; this one is not")
    if kind == "none" and "mesh" in fam_kinds:
        if users:
            return "down", "peers_linked", (
                f"no link of this GPU is up while {_gpus(users)} of this model link directly "
                f"to their peers over link {link} (NVLink mesh)")
        return "inactive", "not_connected", (f"no GPU of this model uses link {link}: not "
                                             "wired (by design)")
    if kind == "bridge":
        peer = nv["peers"][0]
        return "inactive", "bridge", (f"bridged pair with GPU {peer} uses {active} of "
                                      f"{len(nv['links'])} links; the rest are unused by design")
    if kind == "none" and "bridge" in fam_kinds:
        return "inactive", "unbridged", (
            "no link of this GPU is up while other GPUs of this model are bridged in pairs: "
            "no bridge on this GPU, or a broken one (cannot tell)")
    if other_models_linked:
        return "inactive", "no_peer", ("no link of this GPU is up; the GPUs with links up on "
                                       "this node are another model: nothing attached to this "
                                       "one (unused by design)")
    return "inactive", "no_peer", ("no link of this GPU is up and no GPU of its model on this "
                                   "node has one up: nothing attached (unused by design)")


def pair_counts(gpus: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """GPU↔GPU NVLink counts: direct links by remote bus id; switch pairs by min(links).

    On NVSwitch systems every pair of switch-attached GPUs is all-to-all with
    ``count = min(switch links of a, switch links of b)`` (as nvidia-smi and
    PyTorch count); both per-GPU counts are kept so a shortfall is visible.
    """
    idx = [g["index"] for g in gpus if g.get("nvlink")]
    by = {g["index"]: g for g in gpus}
    out: List[Dict[str, Any]] = []
    for ai, a in enumerate(idx):
        for b in idx[ai + 1:]:
            na, nb = by[a]["nvlink"], by[b]["nvlink"]
            faulty = [x for x in (a, b) if by[x].get("fault")]
            if faulty:
                out.append({"a": a, "b": b, "count": None, "rule": "unknown",
                            "reason": f"GPU {faulty[0]}: {by[faulty[0]]['fault']['kind']}"})
                continue
            unknown = [x for x in (a, b)
                       if by[x]["nvlink"].get("status") not in ("ok", "not_supported")]
            if unknown:
                why = by[unknown[0]]["nvlink"].get("status")
                out.append({"a": a, "b": b, "count": None, "rule": "unknown",
                            "reason": f"GPU {unknown[0]}: NVLink facts unknown ({why})"})
                continue
            d_ab = sum(1 for lr in na.get("links", []) if lr.get("status") == "active"
                       and lr["remote"]["gpu_index"] == b)
            d_ba = sum(1 for lr in nb.get("links", []) if lr.get("status") == "active"
                       and lr["remote"]["gpu_index"] == a)
            sa, sb = na.get("switch_links_up", 0), nb.get("switch_links_up", 0)
            sw = min(sa, sb) if sa and sb else 0
            direct = min(d_ab, d_ba)
            count = direct + sw
            rec: Dict[str, Any] = {"a": a, "b": b, "count": count}
            rules = []
            if d_ab or d_ba:
                rules.append("direct")
                rec["direct"] = {str(a): d_ab, str(b): d_ba}
                if d_ab != d_ba:
                    rec["asymmetric"] = True
            if sw:
                rules.append("nvswitch_min")
                rec["switch_links"] = {str(a): sa, str(b): sb}
            rec["rule"] = "+".join(rules) or "none"
            out.append(rec)
    return out


def build(facts: Dict[str, Any], source: str, evidence: Optional[Dict[str, Any]] = None
          ) -> Topology:
    """The model fragment from walker facts."""
    topo = Topology(sources=[source])
    node: Dict[str, Any] = {"status": facts.get("status"), "reason": facts.get("reason"),
                            "system": facts.get("system") or {}, "incomplete":
                            facts.get("incomplete")}
    if evidence is not None:
        for k in ("ncalls", "duration_s"):
            v = evidence.get(k)
            node[k] = v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    bad = facts.get("bad_values") or []
    node["bad_values"] = bad
    topo.extra[source] = node
    for b in bad[:MAX_BAD_NOTES]:
        topo.note("nvml.bad_value", f"{b['call']} is recorded as {b['value']}, not "
                  f"{b['expected']}: that fact is unknown (damaged snapshot?)", source=source,
                  level="warning", subject=None if b["gpu"] is None else f"GPU{b['gpu']}")
    if len(bad) > MAX_BAD_NOTES:
        topo.note("nvml.bad_value", f"{len(bad) - MAX_BAD_NOTES} more recorded NVML answers "
                  "are not valid values (see extra.nvml.bad_values)", source=source,
                  level="warning")
    if facts.get("status") == "unavailable":
        topo.note("nvml.unavailable", f"NVML unavailable: {facts.get('reason')}",
                  source=source, level="info")
        return topo
    gpus = facts.get("gpus") or []
    by_bdf: Dict[Tuple[int, ...], int] = {}
    for g in gpus:
        bdf = pci_bdf(_bus_id(g.get("facts", {}).get("pci")))
        if bdf is not None:
            by_bdf[bdf] = g["index"]
    classify_links(gpus, by_bdf)
    for g in gpus:
        topo.gpus.append(_gpu(g, source))
        if g.get("fault"):
            topo.note(f"nvml.gpu_{g['fault']['kind']}", g["fault"]["message"], source=source,
                      level="warning", subject=f"GPU{g['index']}")
    pairs = pair_counts(gpus)
    node["nvlink_pairs"] = pairs
    for p in pairs:
        if p["count"]:
            topo.nvlinks.append(NVLinkPair(p["a"], p["b"], p["count"], source=source))
        if p.get("asymmetric"):
            topo.note("nvml.nvlink_asymmetric",
                      f"GPU{p['a']} counts {p['direct'][str(p['a'])]} links to GPU{p['b']}, "
                      f"GPU{p['b']} counts {p['direct'][str(p['b'])]} back",
                      source=source, level="warning", subject=f"GPU{p['a']}-GPU{p['b']}")
    switches: Dict[str, Dict[str, int]] = {}
    for g in gpus:
        for lr in (g.get("nvlink") or {}).get("links", []):
            if lr.get("status") == "active" and lr["remote"]["type"] == "nvswitch":
                bid = lr["remote"]["pci_bus_id"] or "unknown"
                per = switches.setdefault(bid, {})
                per[str(g["index"])] = per.get(str(g["index"]), 0) + 1
    node["nvswitch"] = bool(switches) or any(
        isinstance(g.get("facts", {}).get("nvswitch_links"), int)
        and g["facts"]["nvswitch_links"] > 0 for g in gpus)
    node["switches"] = switches
    _matrices(topo, facts, gpus, pairs, node)
    if facts.get("incomplete"):
        inc = facts["incomplete"]
        what = f"NVML did not answer {inc['call']}" if inc.get("call") else \
            "the NVML probe did not finish"
        topo.note("nvml.timeout", what
                  + (f" for GPU {inc['gpu']}" if inc.get("gpu") is not None else "")
                  + " before the deadline; facts after it are unknown",
                  source=source, level="warning")
    return topo


def _matrices(topo: Topology, facts: Dict[str, Any], gpus: List[Dict[str, Any]],
              pairs: List[Dict[str, Any]], node: Dict[str, Any]) -> None:
    labels = [f"GPU{g['index']}" for g in gpus]
    n = len(gpus)
    if not n:
        return
    pos = {g["index"]: i for i, g in enumerate(gpus)}
    raw = facts.get("pairs") or {}
    count = {(p["a"], p["b"]): p["count"] or 0 for p in pairs}
    unknown = {(p["a"], p["b"]) for p in pairs if p["count"] is None}
    cells: List[List[Optional[str]]] = [[None] * n for _ in range(n)]
    p2p: Dict[str, List[List[Optional[str]]]] = {
        name: [[None] * n for _ in range(n)] for name, _ in P2P_INDEXES}
    for g in gpus:
        i = pos[g["index"]]
        cells[i][i] = "X"
        for name in p2p:
            p2p[name][i][i] = "X"
    for key, rec in raw.items():
        a, b = (int(x) for x in key.split("-"))
        if a not in pos or b not in pos:
            continue
        for name, _ in P2P_INDEXES:
            v = rec.get(f"p2p_{name}")
            p2p[name][pos[a]][pos[b]] = P2P_TOKENS.get(v) if v is not None else None
        lo, hi = min(a, b), max(a, b)
        if a < b:
            lvl = rec.get("ancestor")
            tok = TOPOLOGY_LEVELS.get(lvl) if lvl is not None else None
            nvc = count.get((lo, hi), 0)
            if nvc:
                tok = f"NV{nvc}"
            elif (lo, hi) in unknown:
                tok = None  # NVLink unknown: the PCIe path alone would say "not linked"
            cells[pos[a]][pos[b]] = cells[pos[b]][pos[a]] = tok
    for (a, b), c in count.items():  # NV# even where the ancestor was not asked
        if c and a in pos and b in pos and cells[pos[a]][pos[b]] is None:
            cells[pos[a]][pos[b]] = cells[pos[b]][pos[a]] = f"NV{c}"
    if any(cells[i][j] is not None for i in range(n) for j in range(n) if i != j):
        topo.matrix = Matrix(devices=labels, cells=cells, source=topo.sources[0])
    node["p2p"] = {name: {"devices": labels, "cells": m} for name, m in p2p.items()
                   if any(m[i][j] is not None for i in range(n) for j in range(n) if i != j)}


def _gpu(g: Dict[str, Any], source: str) -> GPU:
    f = g.get("facts", {})
    gpu = GPU(index=g["index"])
    bus_id = _bus_id(f.get("pci"))
    numa_words = f.get("memory_affinity")
    values = {
        "name": f.get("name"), "uuid": f.get("uuid"), "pci_bus_id": bus_id,
        "cpu_affinity": cpulist(f.get("cpu_affinity")),
        "numa_affinity": cpulist(numa_words) if numa_words else None,
        "gpu_numa_id": f.get("numa_node_id") if isinstance(f.get("numa_node_id"), int)
        and f.get("numa_node_id") >= 0 else None,
    }
    for k, v in values.items():
        if v is not None:
            setattr(gpu, k, v)
            gpu.sources[k] = source
    pci = f.get("pci") if isinstance(f.get("pci"), dict) else {}
    cc = f.get("compute_capability")
    mig = f.get("mig_mode")
    mem = f.get("memory")
    nv = g.get("nvlink")
    rec: Dict[str, Any] = {
        "index": g["index"],
        "fault": g.get("fault"),
        "serial": f.get("serial"),
        "minor_number": f.get("minor"),
        "architecture": ARCHITECTURES.get(f.get("architecture"), "unknown")
        if f.get("architecture") is not None else None,
        "compute_capability": f"{cc[0]}.{cc[1]}" if isinstance(cc, list) and len(cc) == 2
        else None,
        "memory_total_bytes": mem.get("total") if isinstance(mem, dict)
        and _is_int(mem.get("total")) and 0 <= mem["total"] <= U64 else None,
        "pci": {"bus_id": bus_id, "bdf": list(pci_bdf(bus_id) or []) or None,
                "device_id": f"0x{pci['pciDeviceId']:08X}" if _is_int(pci.get("pciDeviceId"))
                and 0 <= pci["pciDeviceId"] <= U32 else None},
        "pcie": {"current_gen": f.get("pcie_current_gen"), "max_gen": f.get("pcie_max_gen"),
                 "gpu_max_gen": f.get("pcie_gpu_max_gen"),
                 "current_width": f.get("pcie_current_width"),
                 "max_width": f.get("pcie_max_width"),
                 "replay_counter": f.get("pcie_replay_counter")},
        "mig": {"current": bool(mig[0]), "pending": bool(mig[1])}
        if isinstance(mig, list) and len(mig) == 2 else None,
        "persistence_mode": bool(f["persistence_mode"])
        if isinstance(f.get("persistence_mode"), int) else None,
        "fabric": fabric_facts(f.get("fabric")),
        "unavailable": dict(g.get("unavailable") or {}),
        "nvlink": _nvlink_record(nv),
    }
    gpu.extra[source] = rec
    return gpu


def _nvlink_record(nv: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The per-GPU NVLink record kept in the model (and shown by ``nvtopo links``)."""
    if not nv:
        return {"status": "unknown", "total": None, "active": None, "links": []}
    links = []
    for lr in nv.get("links", []):
        v = lr.get("version")
        links.append({
            "link": lr["link"], "state": lr.get("status", "unknown"),
            "raw_state": lr.get("state"), "rule": lr.get("rule"), "reason": lr.get("reason"),
            "version": NVLINK_VERSIONS.get(v) if isinstance(v, int) else None,
            "version_raw": v, "speed_mbps": lr.get("speed_mbps"),
            "remote": lr.get("remote") or {"type": "unknown", "gpu_index": None,
                                           "pci_bus_id": None, "link": None},
            "errors": dict(lr.get("errors") or {}),
            "unavailable": dict(lr.get("unavailable") or {}),
        })
    active = [x for x in links if x["state"] == "active"]
    return {
        "status": nv.get("status"),
        "total": nv.get("count"),
        "count_source": nv.get("count_source"),
        "active": len(active),
        "peers": nv.get("peers", []),
        "switch_links_up": nv.get("switch_links_up", 0),
        "bandwidth_gbps_per_direction": bandwidth_gbps(links),
        "links": links,
    }


def bandwidth_gbps(links: List[Dict[str, Any]]) -> Optional[float]:
    """GB/s per direction: the sum of the active links' speeds (``speed_mbps``), or None
    unless every active link has a known, non-zero speed (a partial sum would mislead)."""
    speeds = [x.get("speed_mbps") for x in links if x.get("state") == "active"]
    if not speeds or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                             for v in speeds):
        return None
    return round(sum(speeds) / 1000.0, 3)


#: Exposed for the renderers and nvml_text.
__all__ = ["SOURCE", "capture", "derive", "walk", "build", "cpulist", "fabric_facts",
           "bandwidth_gbps", "call_key", "field_key", "Answer", "Gpu"]

