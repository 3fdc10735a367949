"""The NVML probe (nvidia-ml-py / ``pynvml``): GPUs, NVLinks, fabric, P2P, PCIe paths.

Record and replay
-----------------

Every NVML question goes through one chokepoint, a *source* (:mod:`.source`) with two
methods, ``call(fn, *args)`` and ``fields(gpu, ids)``, answering :class:`Answer` values
(a value, or an error name such as ``NotSupported``).  One walker asks the
questions and turns the answers into plain facts (:func:`nvtopo.probes.nvml.walk.walk`).
It runs twice:

* :func:`capture` runs it against the live library (:class:`~.live.LiveSource`), which
  records every answer, value or error, under a canonical key such as
  ``nvmlDeviceGetNvLinkState(gpu0,5)``.  The recording is the evidence kept in snapshots
  (``probes["nvml"]["calls"]``).
* :func:`derive` runs it again against the recording (:class:`ReplaySource`): pure, no
  ``pynvml`` import, so ``--from`` reproduces the probe exactly on a machine without a
  GPU.  ``nvtopo simulate`` records a machine description the same way
  (:class:`Recorder`, :func:`nvtopo.probes.nvml.record.record`).

Three answers are kept apart everywhere: *absent* (no NVML, no GPU), *unknown* (a call
NVML does not support or may not be made: ``not_supported``, ``not_permitted``), and
*bad* (a link that went down, a GPU that fell off the bus).  Nothing here raises for them.

The whole live probe runs under a deadline (``ProbeOptions.timeout``): the walker runs in
a worker thread; if a call hangs, the evidence says which GPU and call did not answer,
and keeps every answer received before.

The package, one job per module: :mod:`.vocab` (NVML's constants), :mod:`.source`
(answers, keys, value checks, the replay source), :mod:`.record` (recording sources and
the capture run), :mod:`.live` (``pynvml``), :mod:`.walk` (the questions),
:mod:`.decode` (bus ids, masks, fabric info), :mod:`.links` (link-state rules, pair
counts), :mod:`.build` (facts to the model), :mod:`.paste` and :mod:`.text` (pasted
``nvidia-smi nvlink``/``-q`` text: read, and made a model fragment).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ...errors import NvtopoError
from ...model import Topology
from .build import build as build_fragment
from .decode import bus_id_of, cpulist, fabric_facts
from .links import bandwidth_gbps, classify_links, pair_counts
from .record import Recorder, new_evidence
from .source import (Answer, Gpu, ReplaySource, Source, Stop, call_key, field_key, is_int,
                     shown)
from .vocab import (DEFAULT_TIMEOUT, ERROR_CODES, ERROR_NAMES, EVIDENCE_VERSION,
                    FABRIC_HEALTH_BITS, FALLBACK_MAX_LINKS, INCORRECT_CONFIGURATION,
                    LEGACY_COUNTER_FIELDS, MAX_BAD_NOTES, MAX_GPUS, MAX_LINKS, SOURCE, U32,
                    U64)
from .walk import walk as walk_source


#: Modules :func:`capture` imports (``pynvml`` is not imported by ``--from`` commands): the live
#: snapshot imports them before the probe threads start (:func:`nvtopo.probes.prepare`).
CAPTURE_IMPORTS = ("nvtopo.probes.nvml.live", "pynvml")


def capture(options: Optional[Any] = None) -> Dict[str, Any]:
    """Run the NVML probe on this machine and return its evidence (the recording).

    Never raises for the expected failures: no driver, no GPU, unsupported or forbidden
    calls, a lost GPU, a hung call.  See :func:`nvtopo.probes.nvml.live.capture`.
    """
    from .live import capture as live_capture

    return live_capture(options)


def _corrupt(message: str) -> NvtopoError:
    return NvtopoError(f"corrupt snapshot: nvml evidence: {message}")


def derive(evidence: Dict[str, Any]) -> Topology:
    """Model fragment from the NVML evidence (the recording).  Pasted text kept as this
    probe's evidence (nvlink/``-q`` text, ``-q -x`` XML, dcgmi text) is read by the reader
    that recognises it (:func:`nvtopo.probes.readers.read_kept`), not here.

    Pure.  A recorded value of the wrong type or range makes that fact unknown, with an
    ``nvml.bad_value`` note naming the call; evidence that is unusable as a whole (no
    recording, an impossible GPU count) raises :class:`NvtopoError` ("corrupt snapshot").
    """
    if not isinstance(evidence, dict):
        raise _corrupt("not an object")
    status = evidence.get("status", "ok")
    if status not in ("ok", "timeout", "unavailable"):
        raise _corrupt(f"status {shown(status)} is not ok, timeout or unavailable")
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
            and (pending.get("gpu") is None or is_int(pending.get("gpu")))):
        bad_pending = {"call": "pending", "gpu": None, "value": shown(pending),
                       "expected": "the call that did not answer ({\"call\", \"gpu\"})"}
        pending = None
    error = evidence.get("error") if isinstance(evidence.get("error"), str) else None
    facts = walk_source(ReplaySource(calls, complete=(status != "timeout"),
                                     pending=pending.get("call") if pending else None))
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
    return build_fragment(facts, SOURCE, evidence)



#: The public names: the probe interface, and what the renderers, the simulator and the
#: pasted-text reader use.
__all__ = ["SOURCE", "DEFAULT_TIMEOUT", "EVIDENCE_VERSION", "capture", "derive",
           "new_evidence", "Recorder", "Source", "ReplaySource", "Stop",
           "Answer", "Gpu", "call_key", "field_key", "cpulist", "fabric_facts", "bus_id_of",
           "bandwidth_gbps", "classify_links", "pair_counts", "ERROR_CODES", "ERROR_NAMES",
           "FABRIC_HEALTH_BITS", "FALLBACK_MAX_LINKS", "INCORRECT_CONFIGURATION",
           "LEGACY_COUNTER_FIELDS", "MAX_BAD_NOTES", "MAX_GPUS", "MAX_LINKS", "U32", "U64"]
