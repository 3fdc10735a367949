"""The one stderr writer (nvtopo.render.messages): messages wrap at spaces on a terminal and
never cut a word (a name, a path, a host, a PCI address); one line when piped.

The captures of five messages at 80 and 200 columns are golden files
(``tests/golden/screens/stderr-*.txt``); regenerate after a deliberate change::

    NVTOPO_UPDATE_SCREENS=1 .venv/bin/python -m pytest -q tests/test_messages.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from cli_runner import make_runner

from nvtopo import layouts, snapshot
from nvtopo.cli import app
from nvtopo.render import messages
from nvtopo.simulate import simulate

SCREENS = Path(__file__).resolve().parent / "golden" / "screens"
UPDATE = os.environ.get("NVTOPO_UPDATE_SCREENS") == "1"
runner = make_runner()

#: name -> (arguments, exit status)
CASES = {
    "no-driver": (["check", "--timeout", "5"], 2),
    "usage": (["check", "--from", "a.json", "--layotu", "dgx-h100"], 2),
    "simulate-wrote": (["simulate", "dgx-h100", "--fault", "ib-port-down:mlx5_10",
                        "--fault", "nvlink-down:GPU3:7", "-o", "node.json"], 0),
    "diff-hosts": (["diff", "a.json", "b.json"], 1),
    "layouts-unknown": (["layouts", "show", "dgx-h99"], 2),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("messages")
    lay = layouts.load("dgx-h100")
    a = simulate(lay, [], seed=3, hostname="dgx-h100-node-0001.cluster.example.com")
    b = simulate(lay, ["nvlink-down:GPU3:7"], seed=3,
                 hostname="dgx-h100-node-0417.cluster.example.com")
    (root / "a.json").write_text(snapshot.dumps(a))
    (root / "b.json").write_text(snapshot.dumps(b))
    (root / "bin").mkdir()  # PATH without nvidia-smi: a machine with no driver
    return root


_RUNS: dict = {}


def stderr_of(args, width, workdir, terminal=True):
    """The command's result (run once per arguments, width and terminal-ness)."""
    key = (tuple(args), width if terminal else 0, terminal)
    if key not in _RUNS:
        _RUNS[key] = _run(args, width, workdir, terminal)
    return _RUNS[key]


def _run(args, width, workdir, terminal):
    env = {"COLUMNS": str(width), "NO_COLOR": "1", "TERM": "dumb",
           "PATH": str(workdir / "bin"), "TTY_COMPATIBLE": "1" if terminal else "0"}
    if "--layotu" in args:
        # a usage error is said by the console script (cli.run), not by the app itself
        script = Path(sys.executable).parent / "nvtopo"
        argv = [str(script)] if script.is_file() else [sys.executable, "-m", "nvtopo"]
        done = subprocess.run(argv + list(args), cwd=workdir,
                              capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, **env))
        return SimpleNamespace(exit_code=done.returncode, stdout=done.stdout,
                               stderr=done.stderr)
    old = os.getcwd()
    os.chdir(workdir)
    try:
        r = runner.invoke(app, list(args), env=env)
    finally:
        os.chdir(old)
    return r


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("name", sorted(CASES))
def test_message_capture(name, width, workdir):
    args, status = CASES[name]
    r = stderr_of(args, width, workdir)
    assert r.exit_code == status, (r.exit_code, r.stdout, r.stderr)
    err = r.stderr
    assert err.startswith("nvtopo: "), err
    lines = err.splitlines()
    assert all(len(line) <= width for line in lines), err
    piped = stderr_of(args, width, workdir, terminal=False).stderr
    # the same words, none cut: the wrapped message joined is the one-line message
    assert [" ".join(m.split()) for m in _messages(lines)] == piped.splitlines()
    golden = SCREENS / f"stderr-{name}.{width}.txt"
    if UPDATE:
        golden.write_text(err, encoding="utf-8")
    assert err == golden.read_text(encoding="utf-8")


def _messages(lines):
    """Wrapped lines back to messages (a continuation line starts with the hang)."""
    out = []
    for line in lines:
        if line.startswith(" " * messages.HANG) and out:
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


def test_the_no_driver_error_names_the_command_run(workdir):
    err = stderr_of(["check", "--timeout", "5"], 200, workdir, terminal=False).stderr
    assert "`nvtopo check --from FILE`" in err and "show --from" not in err
    assert "nvtopo check --example dgx-h100" in err


def test_layouts_show_blames_the_name_not_an_option(workdir):
    err = stderr_of(["layouts", "show", "dgx-h99"], 200, workdir, terminal=False).stderr
    assert err.startswith("nvtopo: error: layouts show: no bundled layout named 'dgx-h99'")
    assert "--layout" not in err and "did you mean" in err and "dgx-h100?" in err


def test_piped_messages_stay_one_line(workdir):
    for args, _ in CASES.values():
        err = stderr_of(args, 80, workdir, terminal=False).stderr
        assert len(err.splitlines()) == err.count("nvtopo: "), err


@pytest.mark.parametrize("word", ["0000:1b:00.0", "/a/very/long/path/to/node-0417.json",
                                  "dgx-h100-node-0417.cluster.example.com"])
def test_wrap_never_cuts_an_identifier(word):
    line = "nvtopo: error: " + " ".join([word] * 7)
    for at in (20, 33, 40, 80):
        out = messages.wrap(line, at)
        assert " ".join(" ".join(out).split()) == line
        assert all(word in ln or len(ln.strip().split()) <= 3 for ln in out)
        assert all(part in ("nvtopo:", "error:", word)
                   for ln in out for part in ln.split())
        assert all(len(ln) <= at for ln in out if len(ln.strip()) < at - messages.HANG)


def test_wrap_keeps_a_backquoted_command_whole():
    line = "nvtopo: error: no data; to read a file: `nvtopo check --from FILE` or `x y`"
    out = messages.wrap(line, 50)
    assert any("`nvtopo check --from FILE`" in ln for ln in out), out
    assert messages.wrap(line, None) == [line]
    assert messages.wrap("short", 80) == ["short"]


def test_a_word_longer_than_the_width_stays_whole():
    long = "x" * 100
    out = messages.wrap(f"nvtopo: error: {long} end", 40)
    assert long in out[1] and out[1].strip() == long and out[2].strip() == "end"


def test_not_a_terminal_without_tty(monkeypatch):
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)

    class Pipe:
        def isatty(self):
            return False

    assert messages.width(Pipe()) is None
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "91")
    assert messages.width(Pipe()) == 91
