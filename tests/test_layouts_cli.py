"""`nvtopo layouts` at 80 columns cuts no name or title; `layouts list` is the same list;
`layouts show NAME` is a table on a terminal and JSON when piped or asked."""

from __future__ import annotations

import json

import pytest
from cli_runner import make_runner

from nvtopo import layouts
from nvtopo.cli import app

runner = make_runner(check_schemas=False)


def _run(args, width=80, terminal=False):
    env = {"COLUMNS": str(width), "NO_COLOR": "1", "TERM": "dumb",
           "TTY_COMPATIBLE": "1" if terminal else "0"}
    r = runner.invoke(app, args, env=env)
    assert r.exit_code == 0, (r.stdout, r.stderr)
    return r.stdout


@pytest.mark.parametrize("width", [80, 120, 200])
def test_the_list_cuts_no_name_or_title(width):
    out = _run(["layouts"], width)
    lines = out.splitlines()
    assert all(len(ln) <= width for ln in lines)
    assert "…" not in out
    flat = " ".join(out.split())
    for name in layouts.names():
        lay = layouts.load(name)
        assert any(ln.split()[:1] == [name] for ln in lines), name
        assert " ".join(lay.summary()["title"].split()) in flat, name
    assert len(lines) <= 2 * len(layouts.names()) + 1


def test_list_is_an_alias():
    assert _run(["layouts", "list"]) == _run(["layouts"])
    assert json.loads(_run(["layouts", "list", "--format", "json"])) == json.loads(
        _run(["layouts", "--format", "json"]))


def test_show_is_a_table_on_a_terminal_and_json_when_piped():
    piped = json.loads(_run(["layouts", "show", "dgx-h100"]))
    assert piped["name"] == "dgx-h100"
    table = _run(["layouts", "show", "dgx-h100"], terminal=True)
    assert table.startswith("dgx-h100  NVIDIA DGX H100") and "gpus.count" in table
    assert json.loads(_run(["layouts", "show", "dgx-h100", "--format", "json"],
                           terminal=True)) == piped


def test_completion_of_layout_and_example_names():
    """Shell completion (bash) completes layout names (--layout, simulate LAYOUT, layouts
    show NAME) and example names (--example)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from nvtopo.cli import options

    assert options.layout_names("dgx-h") == ["dgx-h100", "dgx-h200"]
    assert options.example_names("dgx-h100-") == ["dgx-h100-faulty", "dgx-h100-healthy"]
    script = Path(sys.executable).parent / "nvtopo"
    if not script.is_file():
        pytest.skip("no console script")
    env = dict(os.environ, _NVTOPO_COMPLETE="complete_bash",
               COMP_WORDS="nvtopo check --layout dgx-h", COMP_CWORD="3")
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["dgx-h100", "dgx-h200"], done
