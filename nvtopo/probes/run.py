"""Run an external program (``nvidia-smi``) with bounds on time, bytes and processes.

:func:`run` is what :mod:`subprocess` leaves out for a program that may hang,
flood or fork:

* **time**: one deadline for the whole run; then the program is ended;
* **bytes**: standard output and standard error are read concurrently, each
  up to a cap (:data:`STDOUT_CAP`, :data:`STDERR_CAP`); past it reading stops
  and the program is ended (``cut`` names the stream);
* **processes**: the program runs in a session (and process group) of its own;
  whenever it is ended, or exits leaving processes behind, the whole group
  gets SIGTERM, then, after :data:`TERM_GRACE`, SIGKILL.  A background child
  that keeps the pipes open after the program exited gets
  :data:`EXIT_GRACE` to let go; then the group is ended and what was read is
  kept (the program's own exit status stands: ``lingered`` says it happened).

No process of the group, and no zombie of ours, is left when :func:`run`
returns, with two exceptions it reports in ``left_behind`` rather than wait
for: a process stuck in the kernel (a driver call: even SIGKILL waits for it)
and one that left the group itself (``setsid``), which nothing here can name.

Linux is what matters (a :mod:`selectors` loop in one thread); elsewhere a
reader thread per pipe does the same work, with ``proc.kill()`` for the group.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

#: Most bytes kept from standard output.  ``nvidia-smi topo -m`` prints a few kB for 8 GPUs and
#: a few MB for the largest matrix the parser accepts (1024 devices); more is not topology.
STDOUT_CAP = 8 * 1024 * 1024
#: Most bytes kept from standard error (nvidia-smi's failures are one line).
STDERR_CAP = 64 * 1024
#: Bytes of each stream a caller keeps as evidence once the output was cut (it is not parsed).
KEEP_WHEN_CUT = 64 * 1024
#: Seconds the pipes may stay open after the program exited (a background child holding them).
EXIT_GRACE = 0.5
#: Seconds between SIGTERM and SIGKILL to the program's process group.
TERM_GRACE = 0.5
#: Seconds to wait, after SIGKILL, for the group's processes to be gone before giving up on them.
KILL_WAIT = 1.0
#: Bytes asked of a pipe per read.
CHUNK = 64 * 1024

_POSIX = os.name == "posix" and hasattr(os, "killpg")


@dataclass
class Outcome:
    """What one run of the program gave."""

    #: The program's exit status when it exited by itself (negative: killed by that signal);
    #: ``None`` when it was ended here (deadline, output cut) or did not end.
    returncode: Optional[int]
    stdout: bytes
    stderr: bytes
    #: Seconds from start to the end of the clean-up.
    duration_s: float
    #: The program was still running at the deadline.
    timed_out: bool = False
    #: ``"stdout"`` or ``"stderr"``: that stream went over its cap; reading stopped there.
    cut: Optional[str] = None
    #: The program exited, but something kept its pipes open past :data:`EXIT_GRACE`.
    lingered: bool = False
    #: PIDs still running after SIGKILL and :data:`KILL_WAIT` (stuck in the kernel).
    left_behind: List[int] = field(default_factory=list)


def run(argv: Sequence[str], timeout: float, *, stdout_cap: Optional[int] = None,
        stderr_cap: Optional[int] = None, env: Optional[Dict[str, str]] = None,
        threads: Optional[bool] = None) -> Outcome:
    """Run ``argv`` (no shell, standard input from ``/dev/null``) within ``timeout`` seconds.

    Raises :class:`OSError` only when the program cannot be started (not found, not
    executable); every other failure is described by the :class:`Outcome`.
    ``threads`` picks the portable reader-thread loop (the default off POSIX).
    """
    if not 0 <= timeout < float("inf"):  # NaN fails this too
        raise ValueError(f"timeout must be a finite number of seconds, not {timeout!r}")
    caps = {"stdout": STDOUT_CAP if stdout_cap is None else stdout_cap,
            "stderr": STDERR_CAP if stderr_cap is None else stderr_cap}
    start = time.monotonic()
    deadline = start + timeout
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, close_fds=True, env=env,
                            start_new_session=_POSIX)
    group = _Group(proc)
    try:
        if threads or not _POSIX:
            out = _run_threads(proc, group, deadline, caps)
        else:
            out = _run_select(proc, group, deadline, caps)
    except BaseException:
        # Whatever went wrong here (KeyboardInterrupt included), leave nothing behind.
        group.end()
        _close(proc)
        raise
    out.duration_s = round(time.monotonic() - start, 3)
    return out


def size_text(n: int) -> str:
    """``8 MiB``, ``64 KiB``, ``100 bytes``."""
    if n and n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)} MiB"
    if n and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} bytes"


# --- the process group ----------------------------------------------------------------


class _Group:
    """The program and whatever it started, ended together."""

    def __init__(self, proc: "subprocess.Popen[bytes]") -> None:
        self.proc = proc
        self.pgid = proc.pid  # start_new_session: the program leads its own group
        self.signalled = False

    def exited_alone(self) -> Optional[int]:
        """The program's own exit status, once it has exited without a signal from here."""
        code = self.proc.poll()
        return None if code is None or self.signalled else code

    def members(self) -> List[int]:
        """PIDs of the group still running (zombies waiting for init are not running)."""
        if not _POSIX:
            return [] if self.proc.poll() is not None else [self.proc.pid]
        self.proc.poll()  # reap the program itself as soon as it is done
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return []
        except OSError:
            pass  # EPERM: someone in the group is there
        return _live_in_group(self.pgid) or ([self.pgid] if not _HAVE_PROC else [])

    def _signal(self, sig: int) -> None:
        self.signalled = True
        if not _POSIX:
            try:
                self.proc.kill()
            except OSError:
                pass
            return
        try:
            os.killpg(self.pgid, sig)
        except OSError:  # gone already, or a member we may not signal
            pass

    def _wait_gone(self, seconds: float) -> bool:
        until = time.monotonic() + seconds
        pause = 0.002
        while True:
            if not self.members() and self.proc.poll() is not None:
                return True
            if time.monotonic() >= until:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def end(self) -> List[int]:
        """SIGTERM the group, SIGKILL what is left after :data:`TERM_GRACE`; return survivors."""
        if not self.members() and self.proc.poll() is not None:
            return []
        self._signal(signal.SIGTERM if _POSIX else 0)
        if self._wait_gone(TERM_GRACE):
            return []
        self._signal(signal.SIGKILL if _POSIX else 0)
        if self._wait_gone(KILL_WAIT):
            return []
        left = self.members() or [self.proc.pid]
        if self.proc.poll() is None:
            # Stuck in the kernel: reap it whenever it gets out, without waiting here.
            threading.Thread(target=self.proc.wait, name="nvtopo-reap", daemon=True).start()
        return left


_HAVE_PROC = os.path.isdir("/proc/self")


def _live_in_group(pgid: int) -> List[int]:
    """Running (not zombie) processes of process group ``pgid``, from ``/proc``; [] without it."""
    if not _HAVE_PROC:
        return []
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isascii() or not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read(1024)
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) >= 3 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            found.append(int(name))
    return found


def _close(proc: "subprocess.Popen[bytes]") -> None:
    for f in (proc.stdout, proc.stderr):
        if f is not None:
            try:
                f.close()
            except OSError:
                pass


# --- reading: one selectors loop (POSIX) ---------------------------------------------------


def _run_select(proc: "subprocess.Popen[bytes]", group: _Group, deadline: float,
                caps: Dict[str, int]) -> Outcome:
    assert proc.stdout is not None and proc.stderr is not None
    bufs = {"stdout": bytearray(), "stderr": bytearray()}
    out = Outcome(None, b"", b"", 0.0)
    sel = selectors.DefaultSelector()
    for name, f in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        os.set_blocking(f.fileno(), False)
        sel.register(f.fileno(), selectors.EVENT_READ, name)
    exited_at: Optional[float] = None
    pause = 0.002
    try:
        while sel.get_map():
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            limit = deadline if exited_at is None else min(deadline, exited_at + EXIT_GRACE)
            if now >= limit:
                if exited_at is None:
                    out.timed_out = True
                else:
                    out.lingered = True
                break
            # Without a way to wait for the exit and the pipes at once, look at the exit
            # every few milliseconds while the program is silent.
            wait = limit - now if exited_at is not None else min(limit - now, pause)
            events = sel.select(wait)
            pause = 0.002 if events else min(pause * 2, 0.05)
            for key, _ in events:
                name = key.data
                if _read_into(key.fd, bufs[name], caps[name]):
                    continue
                if len(bufs[name]) > caps[name]:
                    del bufs[name][caps[name]:]
                    out.cut = name
                sel.unregister(key.fd)
            if out.cut:
                break
        if out.lingered:  # take what the pipes still hold, then let go of them
            for key in list(sel.get_map().values()):
                if not _drain(key.fd, bufs[key.data], caps[key.data]):
                    out.cut = out.cut or key.data
    finally:
        sel.close()
        _close(proc)  # writers still there get EPIPE rather than block
    if not (out.timed_out or out.cut or out.lingered):
        # Both pipes at end of file: the program closed them, and should be exiting.
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            out.timed_out = True
    # Ended here (its pipes closed, then signals): whatever status it died with is ours.
    out.returncode = None if out.timed_out or out.cut else group.exited_alone()
    out.left_behind = group.end()
    out.stdout, out.stderr = bytes(bufs["stdout"]), bytes(bufs["stderr"])
    return out


def _read_into(fd: int, buf: bytearray, cap: int) -> bool:
    """Read what ``fd`` has into ``buf``; False at end of file or once ``buf`` is over ``cap``."""
    try:
        data = os.read(fd, CHUNK)
    except BlockingIOError:
        return True
    except OSError:  # EIO and the like: nothing more will come
        return False
    if not data:
        return False
    buf += data
    return len(buf) <= cap


def _drain(fd: int, buf: bytearray, cap: int) -> bool:
    """What ``fd`` holds right now, without waiting; False when that went over ``cap``."""
    while len(buf) <= cap:
        try:
            data = os.read(fd, CHUNK)
        except OSError:  # BlockingIOError included: empty for now
            break
        if not data:
            break
        buf += data
    if len(buf) > cap:
        del buf[cap:]
        return False
    return True


# --- reading: reader threads (elsewhere) -------------------------------------------------------


def _run_threads(proc: "subprocess.Popen[bytes]", group: _Group, deadline: float,
                 caps: Dict[str, int]) -> Outcome:
    out = Outcome(None, b"", b"", 0.0)
    bufs = {"stdout": bytearray(), "stderr": bytearray()}
    lock = threading.Lock()
    over = threading.Event()
    cut: List[str] = []

    def reader(name: str, f: "object") -> None:
        fd = f.fileno()  # type: ignore[attr-defined]
        while True:
            try:
                data = os.read(fd, CHUNK)
            except OSError:
                return
            if not data:
                return
            with lock:
                buf = bufs[name]
                buf += data
                if len(buf) > caps[name]:
                    del buf[caps[name]:]
                    cut.append(name)
                    over.set()
                    return

    readers = [threading.Thread(target=reader, args=(name, f), name=f"nvtopo-{name}",
                                daemon=True)
               for name, f in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    for t in readers:
        t.start()
    while True:
        if over.is_set():
            break
        now = time.monotonic()
        if now >= deadline:
            out.timed_out = True
            break
        try:
            proc.wait(min(0.02, deadline - now))
            break
        except subprocess.TimeoutExpired:
            continue
    if not (out.timed_out or over.is_set()):
        until = min(deadline, time.monotonic() + EXIT_GRACE)
        for t in readers:
            t.join(max(0.0, until - time.monotonic()))
            if over.is_set():
                break
        if not over.is_set() and any(t.is_alive() for t in readers):
            out.lingered = True
    out.returncode = None if out.timed_out or over.is_set() else group.exited_alone()
    out.left_behind = group.end()
    for t in readers:  # the group is gone: its pipe ends are closed, readers see end of file
        t.join(KILL_WAIT)
    with lock:
        out.cut = cut[0] if cut else None
        out.stdout, out.stderr = bytes(bufs["stdout"]), bytes(bufs["stderr"])
    if not any(t.is_alive() for t in readers):
        _close(proc)
    return out


__all__ = ["CHUNK", "EXIT_GRACE", "KEEP_WHEN_CUT", "KILL_WAIT", "Outcome", "STDERR_CAP",
           "STDOUT_CAP", "TERM_GRACE", "run", "size_text"]
