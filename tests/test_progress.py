"""Progress on standard error (nvtopo.render.progress): one updating line for long work
(simulate --nodes, audit, cluster, collect), drawn only on a terminal, never with --quiet,
erased before what follows."""

from __future__ import annotations

import io
import os

import pytest
from cli_runner import make_runner

from nvtopo import layouts, snapshot
from nvtopo.cli import app
from nvtopo.render import messages, progress
from nvtopo.simulate import simulate

runner = make_runner()


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def at_once(monkeypatch):
    """Draw from the first step (no delay, no rate limit)."""
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    monkeypatch.setattr(progress, "EVERY_S", 0.0)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setenv("COLUMNS", "80")


def _screen(raw: str) -> str:
    """What a terminal shows after the carriage returns: each line's last overwrite."""
    out = []
    for line in raw.split("\n"):
        cells: list = []
        col = 0
        for ch in line:
            if ch == "\r":
                col = 0
                continue
            if col < len(cells):
                cells[col] = ch
            else:
                cells.append(ch)
            col += 1
        out.append("".join(cells).rstrip())
    return "\n".join(out)


def test_the_line_counts_and_is_erased(at_once):
    term = Terminal()
    with progress.Progress("auditing", total=3, stream=term) as bar:
        for _ in range(3):
            bar.advance()
        assert "nvtopo: auditing 3/3 \u00b7 0 s" in term.getvalue()
    assert _screen(term.getvalue()) == ""  # erased: the next output starts on a clean line


def test_a_message_erases_the_line_first(at_once):
    term = Terminal()
    with progress.Progress("reading", stream=term) as bar:
        bar.advance()
        messages.say("nvtopo: note: something", stream=term)
        bar.advance()
    assert _screen(term.getvalue()) == "nvtopo: note: something\n"


@pytest.mark.parametrize("stream,quiet", [(io.StringIO(), False), (Terminal(), True)])
def test_silent_when_piped_or_quiet(at_once, stream, quiet):
    assert list(progress.track(range(5), "x", 5, quiet=quiet)) == list(range(5))
    with progress.Progress("x", 5, quiet=quiet, stream=stream) as bar:
        bar.advance(5)
    assert stream.getvalue() == ""


def test_a_ticking_line_counts_seconds_while_nothing_advances(at_once, monkeypatch):
    import time

    monkeypatch.setattr(progress, "EVERY_S", 0.01)
    term = Terminal()
    with progress.Progress("collect slurm: waiting for the nodes", stream=term, ticking=True):
        time.sleep(0.2)
    assert "nvtopo: collect slurm: waiting for the nodes \u00b7 0 s" in term.getvalue()
    assert _screen(term.getvalue()) == ""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    lay = layouts.load("hgx-a100-4")
    doc = simulate(lay, [], seed=1, hostname="HOST")
    for i in range(3):
        d = dict(doc, host=dict(doc["host"], hostname=f"n{i}"))
        (root / f"n{i}.json").write_text(snapshot.dumps(d))
    return root


def _stderr(args, terminal):
    env = {"TTY_COMPATIBLE": "1" if terminal else "0", "COLUMNS": "80", "NO_COLOR": "1"}
    r = runner.invoke(app, args, env=env)
    assert r.exit_code in (0, 1), (r.exit_code, r.stderr)
    return r.stderr


@pytest.mark.parametrize("command", [["audit", "--jobs", "1"], ["cluster", "--jobs", "1"]])
def test_fleet_commands_show_progress_on_a_terminal_only(at_once, fleet, command):
    args = command + [str(fleet)]
    label = "auditing 3/3" if command[0] == "audit" else "reading snapshots 3"
    shown = _stderr(args, True)
    assert f"nvtopo: {label}" in shown and "\r" in shown, shown
    assert _screen(shown).strip() == ""  # nothing of it is left on the screen
    assert "\r" not in _stderr(args, False)
    assert "\r" not in _stderr(args + ["--quiet"], True)


def test_simulate_nodes_shows_progress(at_once, tmp_path):
    out = tmp_path / "f"
    args = ["simulate", "hgx-a100-4", "--nodes", "2", "-o", str(out)]
    shown = _stderr(args, True)
    assert "nvtopo: simulating 2/2" in shown, shown
    # only the note is left on the screen (wrapped at 80 columns)
    assert " ".join(_screen(shown).split()) == (
        f"nvtopo: wrote 2 simulated hgx-a100-4 snapshots to {out}")
    assert "\r" not in _stderr(args + ["-q"], True)
    assert len(os.listdir(out)) == 2
