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


def test_a_family_with_a_fault_is_not_bare_in_not_checked():
    """Right after ib.port_down, "Not checked: ib" read as if the port had not been."""
    notes = [finding("info", "ib.not_checked", S.NODE, "counters unreadable"),
             finding("info", "gds.not_checked", S.NODE, "IOMMU unknown")]
    down = finding("error", "ib.port_down", S.other("mlx5_4 port 1"), "down")
    out = _drawn([down] + notes)
    assert "Not checked (2): gds, other ib facts" in out
    assert "Not checked (2): ib, gds" in _drawn(notes)


def test_hints_name_the_gpu():
    one = _drawn([FS[0]], titles=None)
    assert "nvidia-smi" not in one  # (this hint names none: known_gpu leaves it)
    f = finding("error", "nvlink.link_down", S.other("GPU3 link 7"), "down",
                hint="nvidia-smi nvlink -s -i N shows the link states")
    g = finding("error", "nvlink.link_down", S.other("GPU5 link 2"), "down",
                hint="nvidia-smi nvlink -s -i N shows the link states")
    assert "nvidia-smi nvlink -s -i 3 shows" in _drawn([f])
    assert "-i N (N: 3, 5) shows" in _drawn([f, g])


def test_a_degraded_nvlink_pair_is_not_drawn_healthy():
    """NV17 among NV18 (a link down on an NVSwitch node): yellow cells and a yellow NVLink
    column, not the healthy NV# colour; a mesh's NV1/NV2 (by design) keep theirs."""
    from nvtopo import layouts
    from nvtopo.render import matrix
    from nvtopo.simulate import simulate
    from nvtopo.snapshot import derive

    bad = derive(simulate(layouts.load("dgx-h100"), ["nvlink-down:GPU3:7"], seed=1),
                 where="x")
    assert matrix._degraded(bad.matrix) == {"NV17"}
    table = matrix.gpu_table(bad)
    styles = {str(c.plain).split()[0]: c.style for c in table.columns[4].cells}
    # GPU3 (NV17 to every GPU), the others (one pair NV17) and no healthy GPU left
    assert styles == {"NV17": matrix.DEGRADED_STYLE, "NV17–NV18": matrix.DEGRADED_STYLE}
    healthy = derive(simulate(layouts.load("dgx-h100"), [], seed=1), where="x")
    assert {c.style for c in matrix.gpu_table(healthy).columns[4].cells} == {"green"}
    mesh = derive(simulate(layouts.load("dgx-1-v100"), [], seed=1), where="x")
    assert matrix._degraded(mesh.matrix) == set()
    good = derive(simulate(layouts.load("dgx-h100"), [], seed=1), where="x")
    assert matrix._degraded(good.matrix) == set()


def test_no_nvswitch_advice_on_an_ibstat_paste():
    """A paste with no GPU (ibstat alone) gets no 'NVSwitch system whose fabric is down'."""
    from pathlib import Path

    from nvtopo import checks, snapshot

    paste = (Path(__file__).resolve().parent.parent / "fixtures" / "ib-text"
             / "ibstat_ib_ndr_cx7_8port_2_down_disabled.txt")
    topo = snapshot.open_input(snapshot.Input(path=str(paste), require="check")).model
    reason = checks.select_and_run(topo).reason
    assert reason.startswith("no layout fits: 0 GPUs") and "NVSwitch" not in reason
