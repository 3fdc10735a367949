"""``-o FILE`` under signals (nvtopo/output.py, issue 21): SIGTERM, SIGHUP or SIGINT arriving
while the temporary file is written leave no ``.NAME.<hex>.tmp`` behind and the old file
whole; a signal the process was told to ignore (``nohup``: SIGHUP) stays ignored and the
write completes.  Each run is a real process sending itself a real signal mid-write (from
inside ``os.write`` or ``os.fsync``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nvtopo import output

ROOT = Path(__file__).resolve().parents[1]
POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")

#: A process that runs ``nvtopo simulate dgx-h100 -o TARGET`` and signals itself from
#: inside ``os.<call>`` (argv: call, target, signal name, "ignore" to ignore it first).
CODE = """
import os, signal, sys
call, target, name, ignore = sys.argv[1:5]
sig = getattr(signal, name)
if ignore == "ignore":
    signal.signal(sig, signal.SIG_IGN)
real = getattr(os, call)
def mid_write(*a):
    os.kill(os.getpid(), sig)
    return real(*a)
setattr(os, call, mid_write)
sys.argv = ["nvtopo", "simulate", "dgx-h100", "-o", target]
from nvtopo.cli import run
run()
"""


def _write_under(tmp_path: Path, call: str, name: str, ignore: bool = False
                 ) -> subprocess.CompletedProcess:
    target = tmp_path / "node.json"
    target.write_text("old")
    return subprocess.run([sys.executable, "-c", CODE, call, str(target), name,
                           "ignore" if ignore else "-"], capture_output=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


@POSIX
@pytest.mark.parametrize("call", ["write", "fsync"])
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_while_writing_leaves_no_temporary_file(tmp_path, call, name):
    """Before, SIGHUP ended the process at once and left ``.node.json.<hex>.tmp``."""
    res = _write_under(tmp_path, call, name)
    signum = getattr(signal, name)
    assert res.returncode in (128 + signum, -signum, 1), res.stderr  # 1: Ctrl-C's "Aborted"
    assert res.returncode != 0 and b"wrote" not in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node.json"]
    assert (tmp_path / "node.json").read_text() == "old"


@POSIX
def test_an_ignored_hangup_stays_ignored(tmp_path):
    """``nohup nvtopo ... -o FILE``: the hang-up is ignored, the file is written whole."""
    res = _write_under(tmp_path, "fsync", "SIGHUP", ignore=True)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["node.json"]
    assert (tmp_path / "node.json").read_text().startswith("{")


def test_the_handlers_are_put_back_after_a_write(tmp_path):
    names = [n for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n)]
    before = {n: signal.getsignal(getattr(signal, n)) for n in names}
    assert output.write("x", str(tmp_path / "f")) is True
    assert {n: signal.getsignal(getattr(signal, n)) for n in names} == before


def test_a_handler_the_program_set_is_left_to_it(tmp_path):
    """A command that handles the signals itself (collect: it ends srun and writes its
    manifest) keeps its handler while its files are written."""
    seen = []

    def mine(signum, _frame):
        seen.append(signum)

    old = signal.signal(signal.SIGHUP, mine)
    try:
        real = os.fsync

        def mid_write(fd):
            os.kill(os.getpid(), signal.SIGHUP)
            return real(fd)

        os.fsync = mid_write
        try:
            assert output.write("data", str(tmp_path / "f")) is True
        finally:
            os.fsync = real
    finally:
        signal.signal(signal.SIGHUP, old)
    assert seen and set(seen) == {signal.SIGHUP}  # (fsync: the file, then its directory)
    assert (tmp_path / "f").read_text() == "data"
