"""Signals end every process a command started (issue 21, item 6).

``audit -j2`` and ``cluster -j2`` run a worker pool: a forkserver, its workers and the
resource tracker.  Killed by SIGTERM or SIGHUP, the command used to leave all of them running
(still there 14 minutes later).  Here the real command runs in its own session on a tree of
many snapshots; once its pool is up it is sent the signal, and every process it had started
must be gone soon after, with the exit status a shell reports for that signal and no
traceback.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import pytest

psutil = pytest.importorskip("psutil")

EXAMPLE = Path(__file__).resolve().parent.parent / "nvtopo" / "examples" / "dgx-h100-faulty.json.gz"
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="process groups, /proc: Linux")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    """400 snapshots, evidence only (every one re-derived): many seconds of work for two
    workers.  Files of their own, not hard links: a file reached twice is read once."""
    top = tmp_path_factory.mktemp("fleet")
    doc = json.loads(gzip.decompress(EXAMPLE.read_bytes()))
    doc.pop("derived", None)
    text = json.dumps(doc)
    for i in range(400):
        (top / f"node{i:03d}.json").write_text(text, encoding="utf-8")
    return top


def _alive(procs: Dict[int, "psutil.Process"]) -> List[str]:
    out = []
    for pid, p in procs.items():
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{pid} {' '.join(p.cmdline())[:100]}")
        except psutil.Error:
            pass
    return out


def _run_and_signal(args: List[str], sig: int, tmp_path: Path):
    """Start ``nvtopo ARGS``; once its pool (forkserver and two workers) is up, send
    ``sig``.  Returns (exit status, stderr, the processes it had started)."""
    out, err = open(tmp_path / "out", "wb"), open(tmp_path / "err", "wb")
    # stdout/stderr are files, not pipes: a process left behind cannot hang the test
    proc = subprocess.Popen([sys.executable, "-m", "nvtopo", *args], stdout=out, stderr=err,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    me = psutil.Process(proc.pid)
    seen: Dict[int, psutil.Process] = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                for k in me.children(recursive=True):
                    seen.setdefault(k.pid, k)
            except psutil.Error:
                break
            forkserver = [p for p in seen.values() if _is(p, "forkserver")]
            if len(forkserver) >= 3:  # the forkserver and both workers
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the command ended before its pool was up"
        assert len([p for p in seen.values() if _is(p, "forkserver")]) >= 3, seen
        time.sleep(0.3)  # the workers are at work
        for k in me.children(recursive=True):
            seen.setdefault(k.pid, k)
        os.kill(proc.pid, sig)
        rc = proc.wait(timeout=30)
        # every process it started is gone within a generous bound (the resource tracker
        # exits by itself once its parent has gone)
        deadline = time.monotonic() + 15
        while _alive(seen) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _alive(seen)
    finally:
        for p in seen.values():  # never leave a process behind, even on failure
            try:
                p.kill()
            except psutil.Error:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        out.close()
        err.close()
    return rc, (tmp_path / "err").read_text(errors="replace"), left, seen


def _is(p: "psutil.Process", word: str) -> bool:
    try:
        return word in " ".join(p.cmdline())
    except psutil.Error:
        return False


@pytest.mark.parametrize("command", ["audit", "cluster"])
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_ends_every_process_of_the_pool(fleet, tmp_path, command, signame):
    sig = getattr(signal, signame)
    rc, err, left, seen = _run_and_signal([command, str(fleet), "-j2", "--format", "json"],
                                          sig, tmp_path)
    assert len(seen) >= 3
    assert left == [], f"{command} -j2 left these running after {signame}: {left}"
    assert rc == 128 + sig, (rc, err)
    assert "Traceback" not in err, err
    assert err.count("\n") <= 2, err  # a line saying why, nothing else (no warnings)
