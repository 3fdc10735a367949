"""Recording: a source that asks something and keeps every answer, and the run that makes
a recording into the NVML probe's evidence.

:class:`Recorder` is the recording half of every source that asks rather than replays:
the live library (:class:`~nvtopo.probes.nvml.live.LiveSource`) and ``nvtopo simulate``'s
machine description.  Subclasses say how one question is answered (:meth:`Recorder.ask`,
:meth:`Recorder.ask_fields`); the recorder keys each answer canonically
(:func:`~.source.call_key`, :func:`~.source.field_key`), in the order the answers came,
counts the calls (``ncalls``), names the call in flight (``pending``) and stops asking
once its :class:`~nvtopo.probes.deadline.Deadline` has passed.

:func:`record` runs the walker (:mod:`.walk`) over a recorder in a worker thread under
that deadline and returns the evidence kept in snapshots (``probes["nvml"]``): the
recording (``calls``), ``status``, ``error``, ``pending``, ``ncalls``, ``duration_s``.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..deadline import Deadline, run_in_thread
from .source import Answer, FieldId, Source, Stop, call_key, field_key, gpu_of
from .vocab import EVIDENCE_VERSION
from .walk import walk


class Recorder(Source):
    """Asks (subclasses say how) and records every answer.  Never raises NVML errors."""

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self.calls: Dict[str, Dict[str, Any]] = {}
        self.ncalls = 0
        #: (key, gpu, since) of the call being asked now.
        self.pending: Optional[Tuple[str, Optional[int], float]] = None
        #: Set when the deadline passed and the caller went on: nothing more is recorded.
        self.abandoned = False
        self.lock = threading.Lock()

    # -- what subclasses answer -------------------------------------------------------------

    def ask(self, fn: str, args: Tuple[Any, ...]) -> Answer:
        """One function's answer (an error is an answer: never raises)."""
        raise NotImplementedError

    def ask_fields(self, gpu: int, ids: Sequence[FieldId]) -> Union[Answer, List[Answer]]:
        """``nvmlDeviceGetFieldValues``: one answer per id, or one error for the whole call."""
        raise NotImplementedError

    def close(self) -> None:
        """After a walk that reached NVML and finished in time (``nvmlShutdown``)."""

    # -- the recording ----------------------------------------------------------------------

    def _begin(self, key: str, gpu: Optional[int]) -> None:
        if self.abandoned or self.deadline.expired():
            raise Stop(key, gpu)
        with self.lock:
            self.pending = (key, gpu, time.monotonic())

    def _end(self, key: str, answer: Answer) -> Answer:
        with self.lock:
            self.pending = None
            self.ncalls += 1
            if not self.abandoned:
                self.calls[key] = answer.to_record()
        return answer

    def _record(self, key: str, ans: Answer) -> None:
        with self.lock:
            if not self.abandoned:
                self.calls[key] = ans.to_record()

    def call(self, fn: str, *args: Any) -> Answer:
        key = call_key(fn, args)
        self._begin(key, gpu_of(args))
        return self._end(key, self.ask(fn, args))

    def optional(self, fn: str, *args: Any) -> Answer:
        key = call_key(fn, args)
        self._begin(key, gpu_of(args))
        ans = self.ask(fn, args)
        if ans.error == "FunctionNotFound":  # a library without it: leave no trace
            with self.lock:
                self.pending = None
            return Answer(error="NotRecorded", detail="not in this NVML library")
        return self._end(key, ans)

    def fields(self, gpu: int, ids: Sequence[FieldId]) -> Dict[FieldId, Answer]:
        self._begin(f"nvmlDeviceGetFieldValues(gpu{gpu})", gpu)
        got = self.ask_fields(gpu, ids)
        with self.lock:
            self.pending = None
            self.ncalls += 1
        answers = [got] * len(ids) if isinstance(got, Answer) else got
        out: Dict[FieldId, Answer] = {}
        for (fid, scope), ans in zip(ids, answers):
            out[(fid, scope)] = ans
            self._record(field_key(gpu, fid, scope), ans)
        return out

    def snapshot_calls(self) -> Dict[str, Dict[str, Any]]:
        with self.lock:
            return dict(self.calls)


def new_evidence(timeout: float) -> Dict[str, Any]:
    """The NVML evidence before anything was asked."""
    return {
        "evidence_version": EVIDENCE_VERSION, "status": "ok", "error": None,
        "library": None, "timeout_s": timeout, "duration_s": None, "ncalls": 0,
        "pending": None, "calls": {},
    }


def record(source: Recorder, evidence: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Walk ``source`` under its deadline and return the evidence (``evidence``, filled in).

    The walker runs in a worker thread; if a call hangs past the deadline, the recording
    is abandoned there: the evidence says which GPU and call did not answer, and keeps
    every answer received before.
    """
    deadline = source.deadline
    timeout = deadline.seconds
    if evidence is None:
        evidence = new_evidence(timeout)

    def run() -> Dict[str, Any]:
        facts = walk(source)
        if facts["status"] == "ok" and not source.abandoned:
            source.close()
        return facts

    worker = run_in_thread(run, timeout, "nvtopo-nvml")
    if not worker.done:
        with source.lock:
            source.abandoned = True
            pending = source.pending
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
        facts = worker.result() or {}
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
    evidence["calls"] = source.snapshot_calls()
    evidence["ncalls"] = source.ncalls
    evidence["duration_s"] = round(deadline.elapsed(), 3)
    return evidence


__all__ = ["Recorder", "new_evidence", "record"]
