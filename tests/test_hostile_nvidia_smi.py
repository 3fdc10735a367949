"""A hostile or broken ``nvidia-smi``: hangs, floods, forks, early exits, damaged matrices.

Each fake under ``tests/fake_smi/`` is installed as ``nvidia-smi`` first on PATH.  It
appends the PIDs of every process it starts to ``$FAKE_SMI_PIDS`` before it misbehaves,
so each test proves the fake ran (the PID count) and that none of those processes is left
running, nor left a zombie of ours, when the capture returns.  NVML is made to find no
library, so only nvidia-smi is under test.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import pynvml
import pytest
from cli_runner import make_runner
from fake_nvml_lib import reset_pynvml

from nvtopo.cli import app
from nvtopo.probes import ProbeOptions
from nvtopo.probes import topo as topo_text
from nvtopo.probes import run as bounded

REPO = Path(__file__).resolve().parent.parent
FAKES = Path(__file__).resolve().parent / "fake_smi"
MATRIX = REPO / "fixtures" / "topo-corpus" / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"
SYSTEM_PATH = os.pathsep.join(p for p in ("/usr/bin", "/bin") if os.path.isdir(p))

pytestmark = pytest.mark.skipif(
    os.name != "posix" or not Path("/proc/self/stat").is_file(),
    reason="the fakes are POSIX programs, and the leftover check reads Linux /proc")

#: How many processes each fake starts (itself included): the PIDs it must have recorded.
PROCS = {"hang.py": 1, "hang_ignore_term.py": 1, "hang_shell_child.sh": 3,
         "close_and_hang.py": 1, "flood_stdout.py": 1, "flood_stderr.py": 1,
         "big_exit0.py": 1, "background_child.py": 2, "exit9.sh": 1, "healthy.py": 1,
         "pathological.py": 1}

#: Seconds the clean-up may add to a timeout (SIGTERM grace, SIGKILL wait: about 2 s) on a
#: loaded machine: a hang detector, the fakes hang for 1000 s.
MARGIN = 30.0


# --- helpers -------------------------------------------------------------------------------


def remaining(pids: Sequence[int]) -> List[Tuple[int, str, int]]:
    """The recorded processes still there: running, or a zombie this process must reap.

    A zombie whose parent is init (or another reaper) is not ours: the fake's grandchildren
    are orphaned when the group dies, and reaping them is init's work.
    """
    left = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue
        rest = stat[stat.rfind(b")") + 2:].split()
        state, ppid = rest[0].decode(), int(rest[1])
        if state != "Z" or ppid == os.getpid():
            left.append((pid, state, ppid))
    return left


class Fake:
    """One installed fake: its recorded PIDs, and the check that none outlived the capture."""

    def __init__(self, name: str, pidfile: Path) -> None:
        self.name = name
        self.pidfile = pidfile

    def pids(self) -> List[int]:
        if not self.pidfile.exists():
            return []
        return [int(x) for x in self.pidfile.read_text().split()]

    def assert_ran_and_left_nothing(self) -> None:
        pids = self.pids()
        assert len(pids) == PROCS[self.name], (self.name, pids)
        assert remaining(pids) == [], f"{self.name} left processes behind: {remaining(pids)}"


@pytest.fixture(autouse=True)
def no_nvml(monkeypatch):
    """NVML finds no library (as on a machine without the driver): unavailable at once."""
    def no_library(*a, **k):
        raise OSError("libnvidia-ml.so.1: cannot open shared object file (test)")

    reset_pynvml()
    monkeypatch.setattr(pynvml, "CDLL", no_library)
    yield
    reset_pynvml()


@pytest.fixture
def smi(tmp_path, monkeypatch):
    """Install a fake from tests/fake_smi/ as ``nvidia-smi``, first on PATH."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    installed: List[Fake] = []

    def install(name: str, **env: str) -> Fake:
        body = (FAKES / name).read_text(encoding="utf-8")
        shebang = "#!/bin/sh\n" if name.endswith(".sh") else f"#!{sys.executable} -S\n"
        script = bindir / "nvidia-smi"
        script.write_text(shebang + body, encoding="utf-8")
        script.chmod(0o755)
        pidfile = tmp_path / f"{name}.pids"
        monkeypatch.setenv("PATH", str(bindir) + os.pathsep + SYSTEM_PATH)
        monkeypatch.setenv("FAKE_SMI_PIDS", str(pidfile))
        monkeypatch.setenv("FAKE_SMI_MATRIX", str(MATRIX))
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        fake = Fake(name, pidfile)
        installed.append(fake)
        return fake

    yield install
    for fake in installed:  # a failing test must not leave sleepers on a shared machine
        for pid in fake.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def capture(timeout: float) -> Dict[str, object]:
    start = time.monotonic()
    ev = topo_text.capture(ProbeOptions(timeout=timeout))
    took = time.monotonic() - start
    assert set(ev) == {"command", "args", "exit_status", "stdout", "stderr", "duration_s",
                       "timeout_s", "status", "error"}
    assert ev["command"] == "nvidia-smi" and ev["args"] == ["topo", "-m"]
    assert ev["timeout_s"] == timeout
    assert isinstance(ev["duration_s"], float) and 0 <= ev["duration_s"] <= took + 0.01
    return json.loads(json.dumps(ev))  # what a snapshot keeps


def invoke(args: Sequence[str]):
    return make_runner().invoke(app, list(args), catch_exceptions=True)


def assert_one_line_error(result, *needles: str) -> str:
    assert "Traceback" not in result.stdout + result.stderr
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("nvtopo: error: "), lines[0]
    for n in needles:
        assert re.search(n, lines[0], re.I), (n, lines[0])
    assert result.stdout == ""
    return lines[0]


def assert_healthy_matrix(topo) -> None:
    """The H100 fixture, parsed as the parser reads it from a file."""
    d = topo.to_dict()
    want = topo_text.parse(MATRIX.read_text(encoding="utf-8")).to_dict()
    assert [g["label"] for g in d["gpus"]] == [f"GPU{i}" for i in range(8)]
    assert [n["name"] for n in d["nics"]] == [f"mlx5_{i}" for i in range(8)]
    assert d["gpus"][0]["cpu_affinity"] == "0-47,96-143"
    assert d["matrix"]["cells"][0][:3] == ["X", "NV18", "NV18"]
    assert d["matrix"]["cells"][0][8] == "PIX"
    for key in ("gpus", "nics", "matrix", "nvlinks", "notes"):
        assert d[key] == want[key], key


# --- capture(): each fake --------------------------------------------------------------------


def test_healthy_matrix_is_captured_and_parsed_as_before(smi):
    fake = smi("healthy.py")
    ev = capture(10)
    assert ev["status"] == "ok" and ev["error"] is None
    assert ev["exit_status"] == 0
    assert ev["stdout"] == MATRIX.read_text(encoding="utf-8")
    assert ev["stderr"] == ""
    assert ev["duration_s"] < 5
    assert_healthy_matrix(topo_text.derive(ev))
    fake.assert_ran_and_left_nothing()


@pytest.mark.parametrize("name", ["hang.py", "hang_ignore_term.py", "hang_shell_child.sh",
                                  "close_and_hang.py"])
def test_hang_times_out_and_leaves_no_process(smi, name):
    """Killing only the direct child left a shell's children running (and holding the pipes);
    one that ignores SIGTERM is ended by SIGKILL; one that closed its pipes is still waited
    for only until the deadline."""
    fake = smi(name)
    start = time.monotonic()
    ev = capture(0.3)
    took = time.monotonic() - start
    assert ev["status"] == "timeout"
    assert ev["exit_status"] is None
    assert ev["error"] == ("nvidia-smi topo -m did not finish within 0.3 s "
                           "(a GPU or the driver may be hung)")
    assert 0.3 <= took < 0.3 + MARGIN, took
    fake.assert_ran_and_left_nothing()
    assert "no topo matrix: nvidia-smi topo -m did not finish within 0.3 s" in \
        topo_text.derive(ev).notes[0].message


def test_endless_stdout_is_cut_at_the_cap(smi):
    """It used to keep everything until the deadline: gigabytes, then MemoryError."""
    fake = smi("flood_stdout.py")
    tracemalloc.start()
    try:
        ev = capture(20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ev["status"] == "failed"
    assert ev["exit_status"] is None  # ended here: not nvidia-smi's own status
    assert ev["error"] == ("nvidia-smi topo -m printed more than 8 MiB on standard output; "
                           "output cut and the program ended (the first 64 KiB are kept)")
    assert ev["stdout"].startswith("GPU0\t X \tNV18\t")
    assert len(ev["stdout"]) == bounded.KEEP_WHEN_CUT
    assert ev["stderr"] == ""
    assert ev["duration_s"] < 10  # the cap, not the 20 s deadline, ended it
    assert peak < 4 * bounded.STDOUT_CAP, f"peak {peak / 2**20:.0f} MiB"
    fake.assert_ran_and_left_nothing()
    topo = topo_text.derive(ev)
    assert topo.gpus == [] and topo.matrix is None  # cut output is never parsed
    assert "more than 8 MiB" in topo.notes[0].message


def test_endless_stderr_is_cut_at_its_cap(smi):
    fake = smi("flood_stderr.py")
    ev = capture(20)
    assert ev["status"] == "failed" and ev["exit_status"] is None
    assert ev["error"] == ("nvidia-smi topo -m printed more than 64 KiB on standard error; "
                           "output cut and the program ended (the first 64 KiB are kept)")
    assert ev["stdout"] == ""
    assert len(ev["stderr"]) == bounded.STDERR_CAP
    assert ev["stderr"].startswith("WARNING: infoROM is corrupted at gpu 0000:18:00.0\n")
    assert ev["duration_s"] < 10
    fake.assert_ran_and_left_nothing()


def test_ten_mib_printed_at_once_is_cut_and_not_parsed(smi):
    fake = smi("big_exit0.py")
    ev = capture(20)
    assert ev["status"] == "failed"
    assert "printed more than 8 MiB on standard output; output cut" in ev["error"]
    assert len(ev["stdout"]) == bounded.KEEP_WHEN_CUT
    fake.assert_ran_and_left_nothing()
    start = time.monotonic()
    topo = topo_text.derive(ev)
    assert time.monotonic() - start < 10  # nothing to parse (a hang detector)
    assert topo.gpus == []


@pytest.mark.parametrize("size, cut", [(bounded.STDOUT_CAP, False),
                                       (bounded.STDOUT_CAP + 1, True)])
def test_stdout_cap_boundary(smi, size, cut):
    """Exactly the cap is kept whole; one byte more is cut."""
    smi("big_exit0.py", FAKE_SMI_BYTES=str(size))
    out = bounded.run(["nvidia-smi", "topo", "-m"], 20)
    assert out.cut == ("stdout" if cut else None)
    assert len(out.stdout) == bounded.STDOUT_CAP
    assert out.returncode == (None if cut else 0)
    assert not out.timed_out and not out.lingered


def test_background_child_holding_stdout_is_still_success(smi):
    """nvidia-smi exited 0 with its matrix; a child it left keeps the pipe open.  That used to
    look like a hang (status timeout, nothing parsed) and left the child running."""
    fake = smi("background_child.py")
    ev = capture(120)
    assert ev["status"] == "ok" and ev["error"] is None
    assert ev["exit_status"] == 0
    assert ev["stdout"] == MATRIX.read_text(encoding="utf-8")
    assert ev["duration_s"] < bounded.EXIT_GRACE + MARGIN  # not the 120 s deadline
    fake.assert_ran_and_left_nothing()
    assert_healthy_matrix(topo_text.derive(ev))


def test_early_exit_with_a_message(smi):
    fake = smi("exit9.sh")
    ev = capture(10)
    assert ev["status"] == "failed"
    assert ev["exit_status"] == 9
    assert ev["error"] == ("nvidia-smi topo -m exited with status 9: NVIDIA-SMI has failed "
                           "because it couldn't communicate with the NVIDIA driver. Make sure "
                           "that the latest NVIDIA driver is installed and running.")
    assert ev["stdout"] == ""
    fake.assert_ran_and_left_nothing()


def test_early_exit_error_quotes_one_bounded_line(smi):
    smi("exit9.sh", FAKE_SMI_MESSAGE="E" * 20000)
    ev = capture(10)
    assert ev["exit_status"] == 9
    assert len(ev["stderr"]) == 20001  # the evidence keeps it whole (under the cap)
    assert ev["error"] == "nvidia-smi topo -m exited with status 9: " + "E" * 300 + "..."


def test_pathological_matrix_is_captured_whole_and_parsed(smi):
    fake = smi("pathological.py")
    ev = capture(10)
    assert ev["status"] == "ok" and ev["exit_status"] == 0
    assert len(ev["stdout"]) > 700_000  # 1500 copies of a row, and a 500 kB line
    fake.assert_ran_and_left_nothing()
    start = time.monotonic()
    d = topo_text.derive(ev).to_dict()
    assert time.monotonic() - start < 20  # a hang detector, not a speed target
    assert [g["label"] for g in d["gpus"]] == [f"GPU{i}" for i in range(8)]
    assert d["matrix"]["cells"][1][:3] == ["NV18", "X", "NV18"]


def test_program_that_cannot_start_is_failed_not_raised(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "nvidia-smi"
    script.write_bytes(b"#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    ev = capture(5)
    assert ev["status"] == "failed"
    assert ev["error"].startswith("could not run nvidia-smi: ")
    assert ev["exit_status"] is None and ev["stdout"] is None


# --- the runner's portable path (reader threads), exercised here on Linux ---------------------


@pytest.mark.parametrize("name, expect", [
    ("healthy.py", "ok"), ("flood_stdout.py", "cut"), ("hang_shell_child.sh", "timeout"),
    ("background_child.py", "lingered"),
])
def test_reader_thread_path(smi, name, expect):
    fake = smi(name)
    start = time.monotonic()
    out = bounded.run(["nvidia-smi", "topo", "-m"], 0.6 if expect == "timeout" else 10,
                      threads=True)
    assert time.monotonic() - start < 0.6 + MARGIN + bounded.EXIT_GRACE
    fake.assert_ran_and_left_nothing()
    assert out.timed_out == (expect == "timeout")
    assert out.cut == ("stdout" if expect == "cut" else None)
    assert out.lingered == (expect == "lingered")
    if expect in ("ok", "lingered"):
        assert out.returncode == 0
        assert out.stdout == MATRIX.read_bytes()
    else:
        assert out.returncode is None
    if expect == "cut":
        assert len(out.stdout) == bounded.STDOUT_CAP


def test_run_refuses_a_timeout_that_is_no_duration():
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError):
            bounded.run(["true"], bad)


# --- --timeout on every command that takes it -----------------------------------------------

TIMEOUT_COMMANDS = [["show"], ["snapshot"], ["links"], ["ib"], ["check"], ["layouts", "capture"]]


@pytest.mark.parametrize("cmd", TIMEOUT_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e309", "-1", "0", "0.05",
                                   "3600.5", "99999", "abc", "", "\uff12", "\x1b[31m5"])
def test_timeout_that_is_no_duration_is_one_line_error(smi, cmd, value):
    """NaN passed click's range check and gave a traceback; inf, 1e309 and the rest were
    multi-line usage errors.  Refused before any probing."""
    fake = smi("healthy.py")
    line = assert_one_line_error(invoke([*cmd, "--timeout", value]),
                                 r"^nvtopo: error: --timeout: ", r"0\.1 to 3600")
    assert "\x1b" not in line
    assert fake.pids() == []  # nothing was run


@pytest.mark.parametrize("value, seconds", [("0.1", 0.1), ("3600", 3600.0), (" 2 ", 2.0),
                                            ("30", 30.0)])
def test_timeout_in_range_is_accepted(smi, value, seconds):
    smi("healthy.py")
    result = invoke(["snapshot", "--timeout", value])
    assert result.exit_code == 0, result.stderr
    ev = json.loads(result.stdout)["probes"]["topo-text"]
    assert ev["timeout_s"] == seconds and ev["status"] == "ok"


# --- the whole command under a hostile nvidia-smi ---------------------------------------------

#: fake -> (exit status of show, a phrase of its error line or None, snapshot status).
#: (hang.py and the others are taken at the capture level above.)
CLI_CASES: Dict[str, Tuple[int, Optional[str], str]] = {
    "hang_shell_child.sh": (2, r"did not finish within 0\.3 s", "timeout"),
    "flood_stdout.py": (2, r"more than 8 MiB on standard output; output cut", "failed"),
    "flood_stderr.py": (2, r"more than 64 KiB on standard error; output cut", "failed"),
    "big_exit0.py": (2, r"more than 8 MiB on standard output; output cut", "failed"),
    "exit9.sh": (2, r"exited with status 9: NVIDIA-SMI has failed", "failed"),
    "background_child.py": (0, None, "ok"),
    "pathological.py": (0, None, "ok"),
    "healthy.py": (0, None, "ok"),
}


@pytest.mark.parametrize("cmd", ["show", "check", "snapshot"])
@pytest.mark.parametrize("name", sorted(CLI_CASES))
def test_command_is_bounded_by_timeout(smi, tmp_path, monkeypatch, cmd, name):
    code, phrase, status = CLI_CASES[name]
    monkeypatch.setattr(bounded, "EXIT_GRACE", 0.2)  # a quicker test; the real one is above
    fake = smi(name)
    out = tmp_path / "out.json"
    args = [cmd, "--timeout", "0.3"] + (["-o", str(out)] if cmd != "show" else [])
    if cmd == "check":
        args += ["--format", "json"]
    start = time.monotonic()
    result = invoke(args)
    took = time.monotonic() - start
    # The deadline, its clean-up, and for the matrices parsing them: never the old minutes.
    assert took < 0.3 + MARGIN + (3 if name == "pathological.py" else 0), took
    fake.assert_ran_and_left_nothing()
    assert "Traceback" not in result.stdout + result.stderr
    if cmd == "snapshot":
        assert result.exit_code == 0, result.stderr
        ev = json.loads(out.read_text(encoding="utf-8"))["probes"]["topo-text"]
        assert ev["status"] == status
        if phrase is not None:
            assert re.search(phrase, ev["error"]), ev["error"]
            assert f"nvtopo: note: topo-text: {ev['error']} (recorded)" in result.stderr
        return
    assert result.exit_code == code, (result.exit_code, result.stderr)
    if phrase is not None:
        assert_one_line_error(result, r"live probe: nvidia-smi topo -m ", phrase)
        assert not out.exists()
        return
    if cmd == "check":
        doc = json.loads(out.read_text(encoding="utf-8"))
        assert (doc["layout"], doc["verdict"]) == ("hgx-h100-8", "pass")
    else:
        nics = 8  # the long line of cells is no device (a cell token never names one)
        assert (f"8 GPUs · {nics} NICs · 28/28 GPU pairs NVLink-connected (NV18) · "
                "2 NUMA nodes (0, 1)") in result.stdout


# --- in a real process: exit status and stderr as a shell sees them ------------------------------

#: Run nvtopo with NVML finding no library (pynvml's loader patched), as the console script.
NO_NVML_MAIN = ("import pynvml\n"
                "def _no(*a, **k):\n"
                "    raise OSError('libnvidia-ml.so.1: cannot open shared object file (test)')\n"
                "pynvml.CDLL = _no\n"
                "import sys\n"
                "sys.argv[0] = 'nvtopo'\n"
                "from nvtopo.cli import run\n"
                "run()\n")


def run_process(args: Sequence[str]) -> Tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, COLUMNS="100")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", NO_NVML_MAIN, *args], capture_output=True,
                          env=env, timeout=120, check=False)
    return proc, time.monotonic() - start


@pytest.mark.parametrize("name, phrase", [
    ("flood_stdout.py", "more than 8 MiB on standard output"),
    ("big_exit0.py", "more than 8 MiB on standard output"),
    ("hang_shell_child.sh", r"did not finish within 1 s"),
])
def test_process_show_exits_2_with_one_line(smi, name, phrase):
    """10 MiB printed at once took about 15 s (its parse) under --timeout 2; an endless
    stream took 2.5 GB in one second, then a MemoryError traceback and exit 1 where memory
    runs out first."""
    fake = smi(name)
    proc, took = run_process(["show", "--timeout", "1"])
    err = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert proc.returncode == 2, (proc.returncode, err)
    assert len(err.splitlines()) == 1 and re.search(phrase, err), err
    assert proc.stdout == b""
    assert took < 1 + MARGIN + 2, took  # + interpreter start-up
    fake.assert_ran_and_left_nothing()


def test_process_timeout_nan_is_one_line(smi):
    fake = smi("healthy.py")
    proc, _ = run_process(["show", "--timeout", "nan"])
    assert proc.returncode == 2
    assert proc.stderr.decode() == ("nvtopo: error: --timeout: 'nan' is not a number of "
                                    "seconds from 0.1 to 3600\n")
    assert fake.pids() == []
