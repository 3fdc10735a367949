"""One findings view (nvtopo.render.findings) for check, diff, audit and cluster: a finding
and its JSON form draw the same, hints shared by several findings are printed once."""

from __future__ import annotations

import io

from rich.console import Console

from nvtopo.checks import subject as S
from nvtopo.checks.findings import finding
from nvtopo.render.findings import as_finding, print_findings


def _drawn(findings, width=80, **kw):
    buf = io.StringIO()
    console = Console(file=buf, width=width, no_color=True, highlight=False, markup=False,
                      emoji=False)
    print_findings(findings, console, **kw)
    return buf.getvalue()


FS = [finding("error", "nvlink.link_down", S.other("GPU3 link 7"), "GPU3 NVLink 7 is down",
              expected="active", actual="down", hint="reset the GPU"),
      finding("error", "nvlink.link_down", S.other("GPU5 link 2"), "GPU5 NVLink 2 is down",
              expected="active", actual="down", hint="reset the GPU"),
      finding("warning", "ib.counter_errors", S.other("mlx5_2 port 1"), "symbol errors",
              expected=0, actual=100, hint="watch the counters")]


def test_a_finding_and_its_json_form_draw_the_same():
    assert _drawn(FS) == _drawn([f.to_dict() for f in FS])
    assert as_finding({"code": "x.y"}).hint is None


def test_the_check_form_and_a_shared_hint_once():
    out = _drawn(FS).splitlines()
    assert out[0] == "Errors (2)" and "Warnings (1)" in out
    assert "  nvlink.link_down  GPU3 link 7  active → down" in out
    assert sum("reset the GPU" in ln for ln in out) == 1
    assert "      → (both above) reset the GPU" in out


def test_headings_can_be_named():
    out = _drawn(FS, titles={"error": "New errors"})
    assert out.startswith("New errors (2)\n") and "Warnings (1)" in out
