"""Running ``nvidia-smi topo -m``: an argument list, never a shell, bounded in time, bytes
and processes (:mod:`nvtopo.probes.run`); the raw evidence as a dict.
"""

from __future__ import annotations

import shutil
import time
from typing import TYPE_CHECKING, Dict, Optional, Sequence

from .. import run as bounded

if TYPE_CHECKING:
    from .. import ProbeOptions  # noqa: F401 (types only)

#: Default wall-clock limit for ``nvidia-smi topo -m``: it can hang on a failing GPU.
DEFAULT_TIMEOUT = 30.0

DEFAULT_ARGS = ("topo", "-m")


def capture(options: Optional["ProbeOptions"] = None, args: Sequence[str] = DEFAULT_ARGS,
            executable: str = "nvidia-smi") -> Dict[str, object]:
    """Run ``nvidia-smi topo -m`` and return its raw evidence.

    Never raises for the expected failures: a missing ``nvidia-smi``, a
    non-zero exit, a hang or a flood of output are recorded in ``error``
    (with ``status`` ``missing``, ``failed`` or ``timeout``) so that
    snapshots keep them.  The run is bounded (:mod:`nvtopo.probes.run`): by
    the timeout, by a byte cap on each output stream (past it the output is
    cut and the status is ``failed``), and no process it started outlives it.
    """
    timeout = options.timeout if options is not None else DEFAULT_TIMEOUT
    argv = [executable, *args]
    command = " ".join(argv)
    evidence: Dict[str, object] = {
        "command": executable,
        "args": list(args),
        "exit_status": None,
        "stdout": None,
        "stderr": None,
        "duration_s": None,
        "timeout_s": timeout,
        "status": "ok",
        "error": None,
    }
    path = shutil.which(executable)
    if path is None:
        evidence["status"] = "missing"
        evidence["error"] = f"{executable} not found on PATH (no NVIDIA driver installed?)"
        return evidence
    start = time.monotonic()
    try:
        out = bounded.run([path, *args], timeout)
    except OSError as exc:
        evidence["duration_s"] = round(time.monotonic() - start, 3)
        evidence["status"] = "failed"
        evidence["error"] = f"could not run {executable}: {exc.strerror or exc}"
        return evidence
    evidence["duration_s"] = out.duration_s
    evidence["exit_status"] = out.returncode
    stdout, stderr = out.stdout, out.stderr
    if out.cut is not None:
        # Cut output is not parsed (status failed): a head is enough to see what it was,
        # and keeps the snapshot small.
        stdout, stderr = stdout[:bounded.KEEP_WHEN_CUT], stderr[:bounded.KEEP_WHEN_CUT]
    evidence["stdout"] = text_out = _decode(stdout)
    evidence["stderr"] = text_err = _decode(stderr)
    left = ""
    if out.left_behind:
        left = ("; processes " + ", ".join(map(str, out.left_behind[:8]))
                + " did not end after SIGKILL (stuck in the driver?)")
    if out.timed_out:
        evidence["status"] = "timeout"
        evidence["error"] = (f"{command} did not finish within {timeout:g} s "
                             f"(a GPU or the driver may be hung){left}")
    elif out.cut is not None:
        cap = bounded.STDOUT_CAP if out.cut == "stdout" else bounded.STDERR_CAP
        stream = "standard output" if out.cut == "stdout" else "standard error"
        evidence["status"] = "failed"
        evidence["error"] = (f"{command} printed more than {bounded.size_text(cap)} on {stream}; "
                             f"output cut and the program ended (the first "
                             f"{bounded.size_text(bounded.KEEP_WHEN_CUT)} are kept){left}")
    elif out.returncode != 0:
        evidence["status"] = "failed"
        first = (text_err or text_out or "").strip().splitlines()
        why = first[0].strip() if first else "no output"
        if len(why) > 300:  # one line, not a screenful
            why = why[:300] + "..."
        evidence["error"] = f"{command} exited with status {out.returncode}: {why}{left}"
    return evidence


def _decode(data: Optional[bytes]) -> Optional[str]:
    """Output bytes as text: invalid UTF-8 (a multi-byte character cut at a cap included)
    becomes U+FFFD; ``None`` stays ``None``."""
    if data is None:
        return None
    return bytes(data).decode("utf-8", errors="replace")
