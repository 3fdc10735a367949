"""Hostile and broken files on both sides: ``--from`` input and ``-o`` output.

Output: ``-o`` to standard output's names, devices, FIFOs, links, directories and odd
names; permissions kept; no temporary file left behind by any failure (a full disk, an I/O
error, a file-size limit, Ctrl-C, SIGTERM).  Input: FIFOs, sockets and devices refused
(standard input and descriptors handed to nvtopo read), the size bounds.  Every error is
one line on standard error naming the file, exit status 2, whatever the name holds.

Nothing here writes to a real device node: links in a temporary directory stand for
``/dev/null`` (a regression would replace the link, not the device), and ``/dev/stdout``
is only ever given to an nvtopo that is checked, first, to treat it as standard output.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List, Optional, Sequence, Union

import pytest

from nvtopo import examples, layouts, output, snapshot
from nvtopo.cli import app
from nvtopo.errors import NvtopoError
from nvtopo.simulate import simulate

from cli_runner import make_runner

ROOT = Path(__file__).resolve().parents[1]
POSIX = pytest.mark.skipif(os.name != "posix", reason="FIFOs, sockets and modes are POSIX")

Arg = Union[str, bytes]


def _cli(args: Sequence[Arg], stdin: Optional[bytes] = None, cwd: Optional[Path] = None,
         timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    """nvtopo in a process of its own (bytes arguments allowed, as a shell passes them)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")
    return subprocess.run([sys.executable, "-m", "nvtopo", *args], input=stdin,
                          capture_output=True, timeout=timeout, env=env,
                          cwd=str(cwd) if cwd else None, **kw)


#: Characters that reorder what a terminal shows.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _one_line_error(stderr: Union[str, bytes], *must_hold: str) -> str:
    """The stderr of a failed command: exactly one line ``nvtopo: error: ...`` (no raw
    control character, no traceback), holding ``must_hold``."""
    text = stderr.decode("utf-8") if isinstance(stderr, bytes) else stderr
    assert text.startswith("nvtopo: error: ") and text.endswith("\n"), repr(text)
    line = text[:-1]
    assert "\n" not in line and "Traceback" not in line, repr(text)
    assert not any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 or c in _BIDI
                   or 0xd800 <= ord(c) < 0xe000 for c in line), repr(text)
    for part in must_hold:
        assert part in line, (part, line)
    return line


def _json_of_example() -> str:
    res = make_runner().invoke(app, ["show", "--example", "dgx-h100", "--format", "json"])
    assert res.exit_code == 0
    return res.stdout


def _show_o(target: Union[str, Path], **kw):
    return make_runner().invoke(app, ["show", "--example", "dgx-h100", "--format", "json",
                                      "-o", str(target)], **kw)


def _listing(d: Path) -> List[str]:
    return sorted(os.listdir(d))


# --- -o: names of streams, devices, FIFOs -------------------------------------------------


def test_o_dev_stdout_is_standard_output_and_the_link_stays():
    # first, that nothing below can touch /dev: the name is standard output, found by name
    assert output._stream("/dev/stdout") is sys.stdout
    assert output._stream("/dev/stderr") is sys.stderr
    assert output._stream("/proc/self/fd/1") is sys.stdout
    assert output._stream("/dev/fd/2") is sys.stderr
    before = os.lstat("/dev/stdout")
    res = _show_o("/dev/stdout")
    assert res.exit_code == 0, res.stderr
    assert res.stdout == _json_of_example()
    assert "wrote" not in res.stderr
    after = os.lstat("/dev/stdout")
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


@POSIX
def test_o_onto_a_link_to_a_character_device_writes_the_device_and_keeps_the_link(tmp_path):
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    res = _show_o(link)
    assert res.exit_code == 0, res.stderr
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert _listing(tmp_path) == ["null"]


@POSIX
def test_o_onto_a_link_to_standard_output_writes_the_pipe_and_keeps_the_link(tmp_path):
    link = tmp_path / "out"
    link.symlink_to("/dev/stdout")
    res = _cli(["show", "--example", "dgx-h100", "--format", "json", "-o", "out"],
               cwd=tmp_path)  # standard output: a pipe
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode() == _json_of_example() and res.stderr == b""
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout"
    assert _listing(tmp_path) == ["out"]


@POSIX
def test_o_to_a_terminal_writes_it_directly(tmp_path):
    master, slave = os.openpty()
    try:
        tty = os.ttyname(slave)
        text = "GPU0 on a terminal\n"
        assert output.write(text, tty) is False  # a stream: nothing to say "wrote" about
        got = b""
        while len(got) < len(text):
            got += os.read(master, 1024)
        assert got.replace(b"\r\n", b"\n") == text.encode()
        assert stat.S_ISCHR(os.stat(tty).st_mode)
    finally:
        os.close(slave)
        os.close(master)


@POSIX
def test_o_to_a_fifo_nobody_reads_is_one_line_not_a_hang(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    t = time.monotonic()
    res = _cli(["show", "--example", "dgx-h100", "--format", "json", "-o", str(fifo)],
               timeout=10)  # it used to be replaced by a file; blocking would be a hang
    assert time.monotonic() - t < 10
    assert res.returncode == 2
    _one_line_error(res.stderr, str(fifo), "FIFO nobody is reading")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _listing(tmp_path) == ["pipe"]


@POSIX
def test_o_to_a_fifo_with_a_reader_streams_into_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, before the writer comes
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, "-m", "nvtopo", "show", "--example",
                                 "dgx-h100", "--format", "json", "-o", str(fifo)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        got = b""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                chunk = os.read(rfd, 65536)
            except BlockingIOError:
                chunk = None
            if chunk:
                got += chunk
            elif proc.poll() is not None and chunk == b"":
                break
            else:
                time.sleep(0.01)
        out, err = proc.communicate(timeout=10)
    finally:
        os.close(rfd)
    assert proc.returncode == 0, err
    assert got.decode() == _json_of_example()
    assert b"wrote" not in err and out == b""
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and _listing(tmp_path) == ["pipe"]


# --- -o: links, directories, empty names -----------------------------------------------------


@POSIX
def test_o_onto_a_link_writes_its_target_keeps_the_link_and_the_mode(tmp_path):
    (tmp_path / "store").mkdir()
    real = tmp_path / "store" / "node.json"
    real.write_text("old")
    real.chmod(0o600)
    link = tmp_path / "node.json"
    link.symlink_to("store/node.json")
    chain = tmp_path / "latest.json"
    chain.symlink_to("node.json")  # a link to a link
    res = _show_o(chain)
    assert res.exit_code == 0, res.stderr
    assert chain.is_symlink() and os.readlink(chain) == "node.json"
    assert link.is_symlink() and os.readlink(link) == "store/node.json"
    assert real.read_text() == _json_of_example()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert _listing(tmp_path / "store") == ["node.json"]


@POSIX
def test_o_onto_a_link_to_a_directory_is_refused_and_the_link_stays(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep").write_text("x")
    link = tmp_path / "out.json"
    link.symlink_to("d")
    res = _show_o(link)
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(link), "is a directory")
    assert link.is_symlink() and os.readlink(link) == "d"
    assert _listing(tmp_path / "d") == ["keep"] and _listing(tmp_path) == ["d", "out.json"]


def test_o_onto_a_directory_is_one_line(tmp_path):
    res = _show_o(tmp_path)
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(tmp_path), "is a directory")
    assert _listing(tmp_path) == []


@POSIX
def test_o_onto_a_dangling_link_creates_its_target(tmp_path):
    link = tmp_path / "out.json"
    link.symlink_to("made.json")
    res = _show_o(link)
    assert res.exit_code == 0, res.stderr
    assert link.is_symlink() and (tmp_path / "made.json").read_text() == _json_of_example()


@POSIX
def test_o_onto_a_dangling_link_into_a_missing_directory_is_one_line(tmp_path):
    link = tmp_path / "out.json"
    link.symlink_to("gone/made.json")
    res = _show_o(link)
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(link), "does not exist")
    assert link.is_symlink() and _listing(tmp_path) == ["out.json"]


@pytest.mark.parametrize("args", [
    ["show", "--example", "dgx-h100", "--format", "json"],
    ["simulate", "dgx-h100"],
    ["snapshot", "--from", str(ROOT / "nvtopo" / "examples" / "dgx-h100.txt")],
    ["check", "--from", str(ROOT / "nvtopo" / "examples" / "dgx-h100.txt"), "--format",
     "json"],
], ids=["show", "simulate", "snapshot", "check"])
def test_o_empty_is_one_line_naming_the_option(args):
    res = make_runner().invoke(app, [*args, "-o", ""])
    assert res.exit_code == 2
    assert res.stderr == "nvtopo: error: -o: empty file name\n"


def test_from_empty_is_one_line_naming_the_option():
    res = make_runner().invoke(app, ["show", "--from", ""])
    assert res.exit_code == 2
    assert res.stderr == "nvtopo: error: --from: empty file name\n"


# --- -o: permissions ----------------------------------------------------------------------------


@POSIX
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604, 0o666])
def test_o_keeps_the_mode_of_the_file_it_replaces(tmp_path, mode):
    target = tmp_path / "node.json"
    target.write_text("old")
    os.chmod(target, mode)
    res = make_runner().invoke(app, ["simulate", "dgx-h100", "-o", str(target)])
    assert res.exit_code == 0, res.stderr
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert json.loads(target.read_text())["kind"] == "nvtopo-snapshot"


@POSIX
@pytest.mark.parametrize("umask,want", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600),
                                        (0o002, 0o664)])
def test_o_gives_a_new_file_0666_less_the_umask(tmp_path, umask, want):
    old = os.umask(umask)
    try:
        res = _show_o(tmp_path / "new.json")
    finally:
        os.umask(old)
    assert res.exit_code == 0, res.stderr
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == want


@POSIX
def test_o_keeps_the_owner_of_the_file_it_replaces(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another owner to begin with")
    target = tmp_path / "node.json"
    target.write_text("old")
    os.chown(target, 65534, 65534)
    res = _show_o(target)
    assert res.exit_code == 0, res.stderr
    st = target.stat()
    assert (st.st_uid, st.st_gid) == (65534, 65534)


# --- -o: failures leave no temporary file ---------------------------------------------------


def _failing(monkeypatch, name: str, exc: BaseException, after: int = 0):
    """Make ``os.<name>`` raise ``exc`` from its ``after``-th call on (while writing)."""
    real = getattr(os, name)
    calls = []

    def fake(*a, **k):
        calls.append(1)
        if len(calls) > after:
            raise exc
        return real(*a, **k)
    monkeypatch.setattr(output.os, name, fake)


@pytest.mark.parametrize("name,exc,message", [
    ("write", OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
    ("fsync", OSError(errno.EIO, "Input/output error"), "Input/output error"),
    ("replace", OSError(errno.EXDEV, "Invalid cross-device link"), "Invalid cross-device"),
], ids=["ENOSPC", "EIO", "EXDEV"])
@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_a_failed_write_is_one_line_and_leaves_no_temporary_file(tmp_path, monkeypatch, name,
                                                                  exc, message, existing):
    target = tmp_path / "node.json"
    if existing:
        target.write_text("old")
    before = _listing(tmp_path)
    with monkeypatch.context() as m:
        _failing(m, name, exc)
        res = make_runner().invoke(app, ["simulate", "dgx-h100", "-o", str(target)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(target), message)
    assert _listing(tmp_path) == before
    assert not existing or target.read_text() == "old"


@pytest.mark.parametrize("name", ["write", "fsync"])
def test_ctrl_c_while_writing_leaves_no_temporary_file(tmp_path, monkeypatch, name):
    target = tmp_path / "node.json"
    target.write_text("old")
    with monkeypatch.context() as m:
        _failing(m, name, KeyboardInterrupt())
        res = make_runner().invoke(app, ["simulate", "dgx-h100", "-o", str(target)])
    assert res.exit_code != 0 and isinstance(res.exception, (KeyboardInterrupt, SystemExit))
    assert _listing(tmp_path) == ["node.json"] and target.read_text() == "old"


@POSIX
@pytest.mark.parametrize("name", ["write", "fsync"])
def test_sigterm_while_writing_leaves_no_temporary_file(tmp_path, name):
    target = tmp_path / "node.json"
    target.write_text("old")
    code = ("import os, signal, sys\n"
            "real = getattr(os, sys.argv[1])\n"
            "def slow(*a):\n"
            "    os.kill(os.getpid(), signal.SIGTERM)  # mid-write\n"
            "    return real(*a)\n"
            "setattr(os, sys.argv[1], slow)\n"
            "sys.argv = ['nvtopo', 'simulate', 'dgx-h100', '-o', sys.argv[2]]\n"
            "from nvtopo.cli import run\n"
            "run()\n")
    res = subprocess.run([sys.executable, "-c", code, name, str(target)], capture_output=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert res.returncode in (128 + signal.SIGTERM, -signal.SIGTERM), res.stderr
    assert b"wrote" not in res.stderr
    assert _listing(tmp_path) == ["node.json"] and target.read_text() == "old"


@POSIX
def test_a_file_size_limit_is_one_line_and_leaves_no_temporary_file(tmp_path):
    import resource

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a core dump
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    res = _cli(["simulate", "dgx-h100", "-o", "node.json"], cwd=tmp_path, preexec_fn=limit)
    assert res.returncode == 2
    _one_line_error(res.stderr, "node.json", "File too large")
    assert _listing(tmp_path) == []


def test_the_sigterm_handler_is_put_back_after_a_write(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    assert output.write("x", str(tmp_path / "f")) is True
    assert signal.getsignal(signal.SIGTERM) == before


# --- every error is one line, whatever the file name holds -----------------------------------


NAMES = [b"a\nb.json", b"x\x1b[31mred.json", b"c\rd.json", b"\xff\xfe.json",
         b"bidi\xe2\x80\xaejson.txt", b"tab\there.json"]


@POSIX
@pytest.mark.parametrize("name", NAMES, ids=["newline", "escape", "cr", "not-utf8", "bidi",
                                             "tab"])
def test_an_error_about_an_odd_file_name_is_one_line(tmp_path, name):
    missing = os.fsencode(tmp_path) + b"/" + name
    res = _cli(["show", "--from", missing])
    assert res.returncode == 2
    _one_line_error(res.stderr, "no such file")

    res = _cli(["show", "--example", "dgx-h100", "-o", missing + b"/y.json"])
    assert res.returncode == 2
    _one_line_error(res.stderr, "does not exist")

    with open(missing, "wb"):  # now an empty file
        pass
    res = _cli(["show", "--from", missing])
    assert res.returncode == 2
    _one_line_error(res.stderr, "file is empty")


@POSIX
def test_the_wrote_line_is_one_line_too(tmp_path):
    res = _cli(["show", "--example", "dgx-h100", "--format", "json", "-o", b"new\nline.json"],
               cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stderr == b"nvtopo: wrote new\\x0aline.json\n"
    assert (tmp_path / "new\nline.json").exists()


# --- --from: FIFOs, sockets, devices, standard input ------------------------------------------


@POSIX
def test_from_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "topo.txt"
    os.mkfifo(fifo)
    t = time.monotonic()
    res = _cli(["show", "--from", str(fifo)], timeout=10)  # it used to block for ever
    assert time.monotonic() - t < 10
    assert res.returncode == 2
    _one_line_error(res.stderr, str(fifo), "not a regular file (a FIFO)")


@POSIX
def test_from_a_socket_or_a_device_is_refused(tmp_path):
    sock_path = tmp_path / "s.sock"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(sock_path))
        res = make_runner().invoke(app, ["show", "--from", str(sock_path)])
        assert res.exit_code == 2
        _one_line_error(res.stderr, str(sock_path), "not a regular file (a socket)")
    finally:
        s.close()
    res = make_runner().invoke(app, ["check", "--from", "/dev/null"])
    assert res.exit_code == 2
    _one_line_error(res.stderr, "/dev/null", "not a regular file (a character device)")


@POSIX
@pytest.mark.parametrize("name", ["-", "/dev/stdin", "/proc/self/fd/0"])
def test_from_standard_input_by_any_of_its_names(name):
    if name.startswith("/proc") and not os.path.exists("/proc/self/fd/0"):
        pytest.skip("no /proc here")
    text = examples.read("dgx-h100").encode()
    res = _cli(["show", "--from", name, "--format", "json"], stdin=text)
    assert res.returncode == 0, res.stderr
    model = json.loads(res.stdout)
    assert len(model["gpus"]) == 8 and model["origin"]["file"] == "<stdin>"


@POSIX
def test_from_a_pipe_handed_over_as_dev_fd(tmp_path):
    """``nvtopo show --from <(nvidia-smi topo -m)``: the shell hands over /dev/fd/63."""
    if not os.path.isdir("/dev/fd"):
        pytest.skip("no /dev/fd here")
    r, w = os.pipe()
    text = examples.read("dgx-h100").encode()
    writer = threading.Thread(target=lambda: (os.write(w, text), os.close(w)))
    writer.start()
    try:
        res = _cli(["show", "--from", f"/dev/fd/{r}", "--format", "json"], pass_fds=(r,))
    finally:
        writer.join()
        os.close(r)
    assert res.returncode == 0, res.stderr
    assert len(json.loads(res.stdout)["gpus"]) == 8


def test_from_a_directory_is_one_line(tmp_path):
    res = make_runner().invoke(app, ["show", "--from", str(tmp_path)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(tmp_path), "is a directory")


# --- --from: the byte bounds -------------------------------------------------------------------


def test_standard_input_past_the_bound_is_refused():
    res = _cli(["show", "--from", "-"], stdin=b"x" * (snapshot.MAX_INPUT_BYTES + 1))
    assert res.returncode == 2
    _one_line_error(res.stderr, "<stdin>", "larger than 64 MiB")


def _snapshot_with(tmp_path: Path, name: str, **probe_fields) -> Path:
    doc = {"kind": "nvtopo-snapshot", "schema_version": 1, "host": {},
           "probes": {"topo-text": dict({"status": "ok", "stdout": "x"}, **probe_fields)}}
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_json_past_its_bound_is_refused_before_decoding(tmp_path):
    path = _snapshot_with(tmp_path, "big.json", padding="\U0001F600" + "a" * (33 * 2 ** 20))
    res = make_runner().invoke(app, ["check", "--from", str(path)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(path), "JSON larger than 32 MiB")


def test_json_of_too_many_values_is_refused_before_decoding(tmp_path):
    path = tmp_path / "values.json"
    path.write_text('{"kind": "nvtopo-snapshot", "schema_version": 1, "probes": {"x": {"a": ['
                    + "{}," * 1_500_000 + "{}]}}}", encoding="utf-8")
    assert path.stat().st_size > 4 * 2 ** 20
    res = make_runner().invoke(app, ["show", "--from", str(path)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(path), "more than 2,000,000 JSON values")


def test_text_past_its_bound_is_refused(tmp_path):
    wide = tmp_path / "wide.txt"
    wide.write_text("GPU0 " + "X " * (4 * 2 ** 20 + 8) + "\n")
    res = make_runner().invoke(app, ["show", "--from", str(wide)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(wide), "text is larger than 8 MiB")
    tall = tmp_path / "tall.txt"
    tall.write_text("GPU0 X\n" * 100_001)
    res = make_runner().invoke(app, ["show", "--from", str(tall)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(tall), "more than 100,000 lines")


@pytest.mark.parametrize("stdout", ["GPU0 X\n" * 100_001, "X" * (8 * 2 ** 20 + 1)],
                         ids=["lines", "bytes"])
def test_evidence_text_past_its_bound_is_refused(tmp_path, stdout):
    path = _snapshot_with(tmp_path, "snap.json", stdout=stdout)
    res = make_runner().invoke(app, ["show", "--from", str(path)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(path), "probe 'topo-text' field 'stdout' is larger")


def test_compressed_input_is_inflated_within_the_bounds(tmp_path):
    """Gzip input is read (issue 14), never past the plain bound: tests/test_gzip_snapshots.py
    has the bombs."""
    doc = snapshot.dumps(simulate(layouts.load("dgx-h100"), [], seed=1))
    path = tmp_path / "node.json.gz"
    path.write_bytes(gzip.compress(doc.encode()))
    res = make_runner().invoke(app, ["check", "--from", str(path)])
    assert res.exit_code == 0, res.stderr
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"{" + b" " * (snapshot.MAX_INPUT_BYTES + 1)))
    res = make_runner().invoke(app, ["check", "--from", str(bomb)])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(bomb), "decompresses to more than 64 MiB")


def test_a_real_snapshot_is_far_inside_every_bound(tmp_path):
    """The bounds never refuse what nvtopo writes: its largest layout's snapshot holds a
    small part of each."""
    text = snapshot.dumps(simulate(layouts.load("dgx-2"), [], seed=1)).encode()
    values = text.count(b",") + text.count(b"[") + text.count(b"{")
    assert len(text) * 10 < snapshot.MAX_JSON_BYTES and values * 20 < snapshot.MAX_JSON_VALUES
    path = tmp_path / "dgx2.json"
    path.write_bytes(text)
    assert snapshot.open_input(snapshot.Input(path=str(path))).cached is True


# --- every input through the one bounded reader (issue 21) ------------------------------------
#
# collect.json (read by `cluster` beside the snapshots), `--fabric`, `--layout-file`: FIFOs
# refused, sizes and JSON values bounded, nesting an input error; globs never follow links
# to directories, and a file reached twice is read once.


def _fleet(d: Path, n: int = 2) -> Path:
    """``n`` healthy nodes of one fleet (distinct GUIDs and LIDs: `cluster` passes them)."""
    from nvtopo.simulate import fleet

    d.mkdir(parents=True, exist_ok=True)
    plan = fleet.plan(layouts.load("dgx-h100"), n)
    for i in range(n):
        (d / f"node{i:02d}.json").write_text(snapshot.dumps(fleet.node_document(plan, i)))
    return d


@POSIX
def test_a_collect_manifest_that_is_a_fifo_is_refused_not_waited_for(tmp_path):
    d = _fleet(tmp_path / "fleet")
    os.mkfifo(d / "collect.json")
    res = _cli(["cluster", str(d), "-j", "1"], timeout=30)  # it blocked for ever
    assert res.returncode == 2, res.stdout[-300:]
    _one_line_error(res.stderr, str(d / "collect.json"), "not a regular file (a FIFO)")


def test_a_collect_manifest_nested_deep_is_one_line_exit_2(tmp_path):
    d = _fleet(tmp_path / "fleet")
    (d / "collect.json").write_text('{"kind": "nvtopo-collect", "nodes": '
                                    + "[" * 100_000 + "]" * 100_000 + "}")
    res = _cli(["cluster", str(d), "-j", "1"])  # a RecursionError traceback, exit 1
    assert res.returncode == 2, res.stderr[-300:]
    _one_line_error(res.stderr, str(d / "collect.json"), "nested too deeply")


def test_a_collect_manifest_past_its_bounds_is_refused_before_decoding(tmp_path):
    """60 MB of small values decoded to 1.6 GB; the values are counted before decoding."""
    import tracemalloc

    from nvtopo.commands.cluster import facts

    many = tmp_path / "collect.json"
    many.write_text('{"kind": "nvtopo-collect", "nodes": ['
                    + "{}," * (facts.MAX_MANIFEST_VALUES + 10) + "{}]}")
    tracemalloc.start()
    try:
        with pytest.raises(NvtopoError) as exc:
            facts.read_manifest(str(tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert f"more than {facts.MAX_MANIFEST_VALUES:,} JSON values" in str(exc.value)
    assert str(exc.value).startswith(str(many)) and peak < 64 * 2 ** 20, peak
    big = _fleet(tmp_path / "big", 1) / "collect.json"
    big.write_bytes(b'{"kind": "nvtopo-collect", "x": "' + b"a" * facts.MAX_MANIFEST_BYTES
                    + b'"}')
    res = make_runner().invoke(app, ["cluster", str(big.parent), "-j", "1"])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(big), "larger than 64 MiB")


def test_a_real_collect_manifest_is_read_and_a_missing_one_is_no_error(tmp_path):
    from nvtopo.commands.cluster import facts

    d = _fleet(tmp_path / "fleet")
    assert facts.read_manifest(str(d)) == {}
    (d / "collect.json").write_text(json.dumps({"kind": "nvtopo-collect", "nodes": [
        {"node": "gpu-a", "file": "node00.json", "status": "answered"}]}))
    assert facts.read_manifest(str(d)) == {"node00.json": "gpu-a"}
    (d / "collect.json").write_text('{"kind": "nvtopo-collect", "nodes": [')
    res = make_runner().invoke(app, ["cluster", str(d), "-j", "1"])
    assert res.exit_code == 2
    _one_line_error(res.stderr, str(d / "collect.json"), "not JSON")


@POSIX
def test_fabric_that_is_a_fifo_is_refused_not_waited_for(tmp_path):
    d = _fleet(tmp_path / "fleet")
    fifo = tmp_path / "dump.txt"
    os.mkfifo(fifo)
    res = _cli(["cluster", str(d), "--fabric", str(fifo), "-j", "1"], timeout=30)
    assert res.returncode == 2
    _one_line_error(res.stderr, str(fifo), "not a regular file (a FIFO)")


@pytest.mark.parametrize("args", [
    ["check", "--example", "dgx-h100"], ["layouts", "show"], ["simulate"], ["audit"]])
def test_a_layout_file_nested_deep_is_one_line_exit_2(tmp_path, args):
    """`check` and `audit` exit 1 for findings: a RecursionError's exit 1 read as one."""
    deep = tmp_path / "deep.json"
    deep.write_text('{"schema": 1, "name": "x", "gpus": ' + "[" * 100_000 + "]" * 100_000
                    + "}")
    if args == ["audit"]:
        args = ["audit", str(_fleet(tmp_path / "fleet", 1))]
    res = _cli([*args, "--layout-file", str(deep)])
    assert res.returncode == 2, res.stderr[-300:]
    _one_line_error(res.stderr, str(deep), "nested too deeply")


@POSIX
def test_layouts_load_file_refuses_a_fifo(tmp_path):
    """The library's own layout reader (check's selection, simulate) read any file whole."""
    fifo = tmp_path / "layout.json"
    os.mkfifo(fifo)
    code = ("import sys\nfrom nvtopo import layouts\nfrom nvtopo.errors import NvtopoError\n"
            f"try:\n    layouts.load_file({str(fifo)!r})\n"
            "except NvtopoError as e:\n    print(e)\n    sys.exit(2)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=30, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert res.returncode == 2 and "not a regular file (a FIFO)" in res.stdout, res


@POSIX
@pytest.mark.parametrize("links", [["self"], ["self", "up"]], ids=["one-link", "two-links"])
@pytest.mark.parametrize("command", ["cluster", "audit"])
def test_a_recursive_glob_never_follows_links_to_directories(tmp_path, command, links):
    """Two links to their own directory: `**` walked link/link/link/... for ever; one
    link: `cluster` read each file 41 times and reported 17 false duplicates."""
    d = _fleet(tmp_path / "fleet")
    for name in links:
        os.symlink("." if name == "self" else "..", d / name)
    res = _cli([command, str(d / "**" / "*.json"), "-j", "1", "--format", "json"], timeout=60)
    assert res.returncode == 0, res.stderr[-500:]
    doc = json.loads(res.stdout)
    rows = doc["node_rows"] if command == "cluster" else doc["nodes"]
    assert sorted(os.path.basename(r["file"]) for r in rows) == ["node00.json", "node01.json"]
    if command == "cluster":
        assert not [f for f in doc["findings"] if "duplicate" in f["code"]], doc["findings"]


@POSIX
def test_a_file_reached_twice_is_read_once(tmp_path):
    """By a link, a hard link, a second argument or a second pattern: one node, not two
    with the same GPUs."""
    d = _fleet(tmp_path / "fleet")
    os.symlink("node00.json", d / "latest.json")
    os.link(d / "node01.json", d / "node01-copy.json")
    res = _cli(["cluster", str(d), str(d / "node00.json"), str(d / "*.json"), "-j", "1",
                "--format", "json"])
    assert res.returncode == 0, res.stderr[-500:]
    doc = json.loads(res.stdout)
    assert len(doc["node_rows"]) == 2
    assert not [f for f in doc["findings"] if "duplicate" in f["code"]], doc["findings"]
    from nvtopo import audit

    assert [os.path.basename(p) for p, _ in audit.expand([str(d), str(d)])] == \
        ["latest.json", "node01-copy.json"]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("where", ["host", "probe", "layout"])
def test_nan_and_infinity_are_refused_not_passed_on(tmp_path, constant, where):
    """Python's json reads NaN and Infinity; JSON has no such values. Kept in the model
    (an unknown host key, an open map), they came out of `show --format json` as
    `Infinity`, which no strict JSON reader accepts. An input holding one is refused: one
    line naming the file, exit 2."""
    doc = json.loads(snapshot.dumps(simulate(layouts.load("dgx-h100"), [], seed=1)))
    doc.pop("derived", None)
    if where == "host":
        doc["host"]["load"] = "@C@"
    elif where == "probe":
        doc["probes"]["topo-text"]["duration_s"] = "@C@"
    f = tmp_path / "in.json"
    if where == "layout":
        lay = json.loads((Path(layouts.__file__).parent / "dgx-h100.json").read_text())
        lay["name"] = "mine"
        lay["title"] = "@C@"
        f.write_text(json.dumps(lay).replace('"@C@"', constant))
        r = _cli(["check", "--example", "dgx-h100", "--layout-file", str(f)])
        assert r.returncode == 2, r.stdout
        _one_line_error(r.stderr, str(f), constant.lstrip("-"))
        return
    f.write_text(json.dumps(doc).replace('"@C@"', constant))
    for cmd in (["show", "--format", "json"], ["check", "--format", "json"]):
        r = _cli([*cmd, "--from", str(f)])
        assert r.returncode == 2 and r.stdout == b"", (cmd, r.stdout[:200])
        _one_line_error(r.stderr, str(f), constant.lstrip("-"))
