"""Any locale and any standard output (issue 21, item 7).

The real CLI runs in a subprocess:

* under locales and ``PYTHONIOENCODING`` values that cannot carry the box-drawing and
  arrow characters (``LC_ALL=C`` with ``PYTHONUTF8=0``, ``latin-1``, ``ascii``), every
  command's ``--help``, a table, the check view and JSON print, degraded to ASCII where the
  encoding cannot carry a character, exit as under UTF-8 and never print a traceback;
* standard output that cannot be written (a full disk, ``/dev/full``; a closed descriptor)
  is one line on standard error and exit status 2; a reader that went away (a closed pipe)
  stays quiet, as before.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

def _commands() -> List[str]:
    """Every command and subcommand of the CLI, as typed ("collect slurm")."""
    import typer.main

    from nvtopo.cli import app

    def walk(group, prefix):
        for name, sub in sorted(getattr(group, "commands", {}).items()):
            yield prefix + [name]
            yield from walk(sub, prefix + [name])

    return [""] + [" ".join(c) for c in walk(typer.main.get_command(app), [])]


COMMANDS = _commands()
EXAMPLE_TXT = str(Path(__file__).resolve().parent.parent / "nvtopo" / "examples" / "dgx-h100.txt")

ENCODINGS = {
    "C locale": {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
    "latin-1": {"PYTHONIOENCODING": "latin-1"},
    "ascii": {"PYTHONIOENCODING": "ascii"},
}


def _env(extra: Dict[str, str]) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL", "LC_CTYPE", "LANG")}
    env.update({"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"})
    env.update(extra)
    return env


def nvtopo(args: List[str], env: Optional[Dict[str, str]] = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nvtopo", *args], capture_output=True,
                          env=_env(env or {}), timeout=60, **kw)


@functools.lru_cache(maxsize=None)
def _plain_cached(args: Tuple[str, ...]) -> subprocess.CompletedProcess:
    return nvtopo(list(args), {"PYTHONIOENCODING": "utf-8"})


def _plain(args: List[str]) -> subprocess.CompletedProcess:
    """The run under UTF-8 (each once per session)."""
    return _plain_cached(tuple(args))


def _sane(r: subprocess.CompletedProcess, encoding: str) -> None:
    err = r.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and "UnicodeEncodeError" not in err, err
    r.stdout.decode(encoding)  # what was written is text in the stream's own encoding


def _ascii_help_text(out: bytes) -> str:
    return " ".join(out.decode("latin-1").split())


# every command under the C locale (ASCII); the other encodings on a few
HELP_CASES = ([(c, "C locale") for c in COMMANDS]
              + [(c, n) for c in ("", "check", "cluster") for n in ENCODINGS if n != "C locale"])


@pytest.mark.parametrize("command,name", HELP_CASES,
                         ids=[f"{c or 'nvtopo'}-{n}" for c, n in HELP_CASES])
def test_every_help_prints_under_any_encoding(command, name):
    r = nvtopo([*command.split(), "--help"], ENCODINGS[name])
    _sane(r, "latin-1" if name == "latin-1" else "ascii")
    assert r.returncode == 0, r.stderr
    # the same help as under UTF-8, words for words (only the drawing is degraded)
    words = [w for w in _ascii_help_text(_plain([*command.split(), "--help"]).stdout).split()
             if w.isascii() and w.isalnum()]
    got = _ascii_help_text(r.stdout)
    assert words and all(w in got for w in words)


@pytest.mark.parametrize("name", list(ENCODINGS))
@pytest.mark.parametrize("args", [["check", "--example", "dgx-h100"],
                                  ["show", "--example", "dgx-h100"],
                                  ["links", "--example", "dgx-h100"],
                                  ["check", "--example", "dgx-h100", "--format", "json"],
                                  ["show", "--example", "dgx-h100", "--format", "json"]],
                         ids=lambda a: " ".join(a))
def test_commands_print_under_any_encoding(args, name):
    utf8 = _plain(args)
    r = nvtopo(args, ENCODINGS[name])
    _sane(r, "latin-1" if name == "latin-1" else "ascii")
    assert r.returncode == utf8.returncode, r.stderr
    if "json" in args:
        assert json.loads(r.stdout) == json.loads(utf8.stdout)
    else:
        # the same rows: every ASCII word of the UTF-8 view is there
        words = {w for w in utf8.stdout.decode().split() if w.isascii() and w.isalnum()}
        assert words <= set(r.stdout.decode("latin-1").replace("|", " ").split()) | words
        assert len(r.stdout.splitlines()) >= len(utf8.stdout.splitlines()) // 2


def test_arrows_and_boxes_degrade_to_ascii_not_question_marks():
    r = nvtopo(["check", "--example", "dgx-h100"], ENCODINGS["ascii"])
    text = r.stdout.decode("ascii")
    utf8 = _plain(["check", "--example", "dgx-h100"]).stdout.decode()
    if "\u2192" in utf8:  # expected -> actual
        assert "->" in text
    assert text.count("?") <= utf8.count("?")


# --- standard output that cannot be written -------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("args", [["check", "--example", "dgx-h100"],
                                  ["show", "--example", "dgx-h100", "--format", "json"],
                                  ["check", "--example", "dgx-h100", "--format", "json"],
                                  ["check", "--help"],
                                  ["snapshot", "--from", EXAMPLE_TXT],
                                  ["show", "--example", "dgx-h100", "-o", "-"],
                                  ["layouts"]],
                         ids=lambda a: " ".join(a))
def test_a_full_disk_is_one_line_and_exit_2(args):
    with open("/dev/full", "wb") as full:
        r = subprocess.run([sys.executable, "-m", "nvtopo", *args], stdout=full,
                           stderr=subprocess.PIPE, env=_env({}), timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "standard output" in lines[0] and "No space left" in lines[0], err


@pytest.mark.parametrize("args", [["check", "--example", "dgx-h100"],
                                  ["show", "--example", "dgx-h100", "--format", "json"],
                                  ["check", "--help"]],
                         ids=lambda a: " ".join(a))
def test_a_closed_stdout_is_one_line_and_exit_2(args):
    r = subprocess.run([sys.executable, "-m", "nvtopo", *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, env=_env({}), timeout=60,
                       preexec_fn=lambda: os.close(1))
    err = r.stderr.decode()
    assert r.returncode == 2, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "standard output" in lines[0], err


@pytest.mark.parametrize("args", [["check", "--example", "dgx-h100"],
                                  ["show", "--example", "dgx-h100", "--format", "json"],
                                  ["snapshot", "--from", EXAMPLE_TXT]],
                         ids=lambda a: " ".join(a))
def test_a_closed_pipe_stays_quiet(args):
    p = subprocess.Popen([sys.executable, "-m", "nvtopo", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=_env({}))
    p.stdout.read(10)
    p.stdout.close()  # the reader goes away (`| head -c 10`)
    err = p.stderr.read().decode()
    rc = p.wait(timeout=60)
    assert "Traceback" not in err and "error" not in err, err
    assert rc in (0, 1), (rc, err)  # as a finished run: 0, or 1 for check's findings
