"""The one chokepoint every NVML question goes through: answers, keys, sources.

A *source* has two methods, ``call(fn, *args)`` and ``fields(gpu, ids)``, answering
:class:`Answer` values (a value, or an error name such as ``NotSupported``).  The walker
(:mod:`.walk`) asks a source everything; the sources are

* :class:`~nvtopo.probes.nvml.live.LiveSource`: the real library through ``pynvml``,
  recording every answer (:class:`~nvtopo.probes.nvml.record.Recorder`);
* :class:`ReplaySource`: a recording (a snapshot's ``probes["nvml"]["calls"]``), pure;
* any other :class:`~nvtopo.probes.nvml.record.Recorder` (``nvtopo simulate`` answers
  from a machine description).

Recordings are keyed canonically: :func:`call_key` (``nvmlDeviceGetNvLinkState(gpu0,5)``)
and :func:`field_key` (``nvmlDeviceGetFieldValues(gpu0,165:5)``).  Every recorded value
is checked where the walker takes it (:class:`Checked`, :data:`VALUE_CHECKS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

if TYPE_CHECKING:
    from typing_extensions import TypeGuard

from .vocab import (BAD, ERROR_CODES, FI_C2C_LINK_COUNT, FI_C2C_LINK_GET_MAX_BW,
                    FI_C2C_LINK_GET_STATUS, MAX_C2C_LINKS, FI_NVLINK_ERROR_DL_CRC, FI_NVLINK_ERROR_DL_RECOVERY,
                    FI_NVLINK_SPEED_MBPS_COMMON, FI_NVLINK_SPEED_MBPS_LINK,
                    FI_NVLINK_ERROR_DL_REPLAY, FI_NVLINK_GET_SPEED, FI_NVLINK_GET_STATE,
                    FI_NVLINK_GET_VERSION, FI_NVLINK_LINK_COUNT, FI_NVLINK_REMOTE_NVLINK_ID,
                    FI_NVSWITCH_CONNECTED_LINK_COUNT, FI_PCIE_REPLAY_COUNTER, CPU_WORDS,
                    LINK_STATE_FIELD, LOST, MAX_GPUS, MAX_LINKS, NO_SUCH, NODE_WORDS,
                    NOT_PERMITTED, NOT_SUPPORTED, U32, U64)

#: A field value asked for: (field id, scope id: the link, or 0).
FieldId = Tuple[int, int]


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


class Stop(Exception):
    """The deadline passed (live) or the recording ends there (replay of a timed-out probe)."""

    def __init__(self, key: str, gpu: Optional[int]) -> None:
        super().__init__(key)
        self.key = key
        self.gpu = gpu


def gpu_of(args: Sequence[Any]) -> Optional[int]:
    """The GPU a call is about: its first ``Gpu`` argument, or None."""
    for a in args:
        if isinstance(a, Gpu):
            return a.index
    return None


# --- the interface ------------------------------------------------------------------------


class Source:
    """What the walker asks.  Subclasses answer; none raises an NVML error (an error is an
    :class:`Answer`), only :class:`Stop` when there is nothing more to be had."""

    def call(self, fn: str, *args: Any) -> Answer:
        """One NVML function's answer; ``Gpu(i)`` arguments name device handles."""
        raise NotImplementedError

    def fields(self, gpu: int, ids: Sequence[FieldId]) -> Dict[FieldId, Answer]:
        """``nvmlDeviceGetFieldValues`` on GPU ``gpu``: one answer per (field id, scope)."""
        raise NotImplementedError

    def optional(self, fn: str, *args: Any) -> Answer:
        """A question added after recordings existed (:data:`OPTIONAL_CALLS`): answered like
        :meth:`call`, but a replay without it answers ``NotRecorded`` (never stops), and a
        library without the function (``FunctionNotFound``) is not recorded at all, so the
        recordings of older drivers and of the simulator stay what they were."""
        return self.call(fn, *args)


# --- what a recorded answer must look like -------------------------------------------------
#
# derive() replays whatever a snapshot file holds, so every value is checked where the walker
# takes it: a value of the wrong type or range becomes a ``BadValue`` answer (the fact is
# unknown, and a note names the call).  A check returns None when the value is fine, else
# what was expected.

Check = Callable[[Any], Optional[str]]


def is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_in(lo: int, hi: int) -> Check:
    def check(v: Any) -> Optional[str]:
        return None if is_int(v) and lo <= v <= hi else f"an integer {lo}..{hi}"
    return check


def _one_of(values: Sequence[int]) -> Check:
    def check(v: Any) -> Optional[str]:
        return None if is_int(v) and v in values else \
            "one of " + ", ".join(str(x) for x in values)
    return check


def _text(v: Any) -> Optional[str]:
    return None if isinstance(v, str) and len(v) <= 4096 else "text"


def _anything(v: Any) -> Optional[str]:
    return None


def _int_list(n: int, lo: int, hi: int) -> Check:
    def check(v: Any) -> Optional[str]:
        ok = isinstance(v, list) and len(v) <= n and all(is_int(x) and lo <= x <= hi for x in v)
        return None if ok else f"a list of at most {n} integers {lo}..{hi}"
    return check


def _pair_of(lo: int, hi: int) -> Check:
    def check(v: Any) -> Optional[str]:
        ok = isinstance(v, list) and len(v) == 2 and all(is_int(x) and lo <= x <= hi for x in v)
        return None if ok else f"two integers {lo}..{hi}"
    return check


def hex_uuid(v: Any) -> Optional[str]:
    ok = isinstance(v, str) and len(v) == 32 and all(c in "0123456789abcdefABCDEF" for c in v)
    return None if ok else "32 hex digits"


def hex_bytes(n: int) -> Check:
    def check(v: Any) -> Optional[str]:
        ok = isinstance(v, str) and len(v) == 2 * n \
            and all(c in "0123456789abcdefABCDEF" for c in v)
        return None if ok else f"{2 * n} hex digits"
    return check


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
_PLATFORM = _struct({"chassisSerialNumber": hex_bytes(16), "rackGuid": hex_bytes(16),
                     "ibGuid": hex_bytes(16), "slotNumber": _SMALL, "trayIndex": _SMALL,
                     "hostId": _SMALL, "peerType": _SMALL, "moduleId": _SMALL,
                     "chassisPhysicalSlotNumber": _SMALL, "computeSlotIndex": _SMALL,
                     "nodeIndex": _SMALL})
_FABRIC = _struct({"clusterUuid": hex_uuid, "status": _int_in(0, U32),
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
    "nvmlDeviceGetGpuFabricInfoV": _FABRIC, "nvmlDeviceGetPlatformInfo": _PLATFORM,
    "nvmlDeviceGetC2cModeInfoV": _struct({"isC2cEnabled": _int_in(0, 1)}),
    "nvmlDeviceGetNvLinkState": _int_in(0, 1), "nvmlDeviceGetNvLinkVersion": _SMALL,
    "nvmlDeviceGetNvLinkRemoteDeviceType": _SMALL, "nvmlDeviceGetNvLinkRemotePciInfo": _PCI,
    "nvmlDeviceGetNvLinkErrorCounter": _COUNTER,
    "nvmlDeviceGetP2PStatus": _SMALL, "nvmlDeviceGetTopologyCommonAncestor": _SMALL,
}
#: Questions asked through :meth:`Source.optional`.
OPTIONAL_CALLS = ("nvmlDeviceGetPlatformInfo",)
#: Field id -> check of its value.
FIELD_CHECKS: Dict[int, Check] = {
    FI_NVLINK_LINK_COUNT: _int_in(0, MAX_LINKS),
    FI_NVSWITCH_CONNECTED_LINK_COUNT: _int_in(0, MAX_LINKS),
    FI_PCIE_REPLAY_COUNTER: _COUNTER, FI_NVLINK_GET_STATE: _one_of(sorted(LINK_STATE_FIELD)),
    FI_NVLINK_GET_VERSION: _SMALL, FI_NVLINK_GET_SPEED: _speed,
    FI_NVLINK_REMOTE_NVLINK_ID: _int_in(0, U32), FI_NVLINK_ERROR_DL_REPLAY: _COUNTER,
    FI_NVLINK_ERROR_DL_RECOVERY: _COUNTER, FI_NVLINK_ERROR_DL_CRC: _COUNTER,
    FI_NVLINK_SPEED_MBPS_COMMON: _speed,
    FI_C2C_LINK_COUNT: _int_in(0, MAX_C2C_LINKS), FI_C2C_LINK_GET_STATUS: _int_in(0, U32),
    FI_C2C_LINK_GET_MAX_BW: _int_in(0, U32),
}
FIELD_CHECKS.update({fid: _speed for fid in FI_NVLINK_SPEED_MBPS_LINK})


def shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


class Checked(Source):
    """Wraps a source: answers whose value fails its check become ``BadValue`` errors."""

    def __init__(self, src: Source, bad: List[Dict[str, Any]]) -> None:
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
        self.bad.append({"call": key(), "gpu": gpu, "value": shown(ans.value),
                         "expected": why})
        return Answer(error="BadValue", detail=f"{shown(ans.value)} is not {why}")

    def call(self, fn: str, *args: Any) -> Answer:
        return self._check(lambda: call_key(fn, args), self.src.call(fn, *args),
                           VALUE_CHECKS.get(fn), gpu_of(args))

    def optional(self, fn: str, *args: Any) -> Answer:
        return self._check(lambda: call_key(fn, args), self.src.optional(fn, *args),
                           VALUE_CHECKS.get(fn), gpu_of(args))

    def fields(self, gpu: int, ids: Sequence[FieldId]) -> Dict[FieldId, Answer]:
        return {k: self._check(lambda k=k: field_key(gpu, *k), integral(a),  # type: ignore[misc]
                               FIELD_CHECKS.get(k[0], _COUNTER), gpu)
                for k, a in self.src.fields(gpu, ids).items()}


def integral(ans: Answer) -> Answer:
    """A field value NVML typed as a double (``valueType`` 0) that holds a whole number, read
    as that integer.  A real driver (580.159.04, an H200 given to a VM) answers field 147
    (NVSwitch-connected links) with ``valueType`` 0 and 0.0, where the field is a count: read
    as a number that is not an integer, it made a false "bad value" warning.  A fraction stays
    a fraction (and is refused where an integer is expected)."""
    v = ans.value
    if ans.ok and isinstance(v, float) and math.isfinite(v) and v.is_integer() \
            and abs(v) <= 2 ** 64:
        return Answer(value=int(v))
    return ans


# --- replay source: the recording answers ------------------------------------------------


class ReplaySource(Source):
    """Answers from a recording.  Pure; no pynvml."""

    def __init__(self, calls: Dict[str, Any], complete: bool,
                 pending: Optional[str] = None) -> None:
        self.calls = calls
        self.complete = complete
        #: the call a timed-out recording was waiting for (an optional one stops there too)
        self.pending = pending

    def _get(self, key: str, gpu: Optional[int]) -> Answer:
        rec = self.calls.get(key)
        if not isinstance(rec, dict):
            if not self.complete:
                raise Stop(key, gpu)
            return Answer(error="NotRecorded", detail="no answer in the recording")
        return Answer.from_record(rec)

    def call(self, fn: str, *args: Any) -> Answer:
        return self._get(call_key(fn, args), gpu_of(args))

    def optional(self, fn: str, *args: Any) -> Answer:
        key = call_key(fn, args)
        rec = self.calls.get(key)
        if not isinstance(rec, dict) and key == self.pending and not self.complete:
            raise Stop(key, gpu_of(args))  # the live probe hung on this very question
        if not isinstance(rec, dict):  # a recording made before the question was asked
            return Answer(error="NotRecorded", detail="no answer in the recording")
        return Answer.from_record(rec)

    def fields(self, gpu: int, ids: Sequence[FieldId]) -> Dict[FieldId, Answer]:
        return {(f, s): self._get(field_key(gpu, f, s), gpu) for f, s in ids}

