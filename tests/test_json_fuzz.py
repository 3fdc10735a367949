"""Every JSON document valid against its schema, fuzzed inputs included (issue 21, item 8).

``links --format json`` of a damaged ``dcgmi nvlink -s`` paste wrote note codes
``dcgmi_text.*`` that docs/schemas/links.schema.json did not allow.  Here hypothesis mutates
real pastes of every kind and feeds each to every command that writes JSON (``show``,
``links``, ``ib``, ``check`` with ``--format json``; ``snapshot``; ``audit``, ``cluster``
and ``diff`` over it); the suite's runner (tests/cli_runner.py) validates every document
a run prints against its schema (tests/schema_check.py), so a document off its schema fails
here.  No run may end otherwise than 0, 1 or 2, nor print a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import schema_check
from cli_runner import make_runner
from nvtopo.cli import app

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
runner = make_runner()

PASTES = [FIX / "nvml-text" / "dcgmi_nvlink_s_h100.txt",
          FIX / "topo-corpus" / "01_hgx-a100-8gpu-nv12-10nic-tabs.txt",
          FIX / "nvml-text" / "nvlink_R_h100_hgx_nvswitch_excerpt.txt",
          FIX / "nvml-text" / "nvidia_smi_q_fabric_insufficient_resources.txt",
          FIX / "nvml-xml" / "nvidia_smi_q_x_h100_2gpu_gen3_x8_fabric_failed.xml",
          FIX / "nvml-xml" / "nvidia_smi_q_x_gb300_tray_4gpu.xml",  # platformInfo
          FIX / "ib-text" / "ibstat_ib_ndr_cx7_mt4129_active.txt",
          FIX / "gds-text" / "gdscheck-p.txt",
          FIX / "ib-text" / "ticket_topo_ibstat_q.txt",
          FIX / "nccl" / "async-port-error-flapping.log",
          FIX / "nccl" / "all-reduce-8xh100-nvls.txt",
          FIX / "kernel" / "dgx-h100-node-events.txt",
          FIX / "imex-text" / "n18-one-way.txt",
          FIX / "imex-text" / "json-down.json"]
#: NCCL's own outputs, read by `nvtopo explain` (docs/nccl.md).
NCCL_PASTES = sorted((FIX / "nccl").glob("*.log")) + sorted((FIX / "nccl").glob("*.txt")) + \
    sorted((FIX / "nccl").glob("*.xml"))
_JUNK = st.sampled_from(["\x1b", "\x7f", "\u2028", "\r", ",", "\t", ":", "-", "x", "0", "99",
                         "GPU", "gpuId 9:", "Link", "NV18", "\n", "\\x1b", "\ud800", "é"])


@st.composite
def mutated(draw: Any) -> str:
    text = PASTES[draw(st.integers(0, len(PASTES) - 1))].read_text()
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "cut", "repeat", "end", "swap"]))
        if op == "insert":
            text = text[:at] + draw(_JUNK) * draw(st.integers(1, 20)) + text[at:]
        elif op == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 120)):]
        elif op == "repeat":
            text = text[:at] + text[at:at + 150] * draw(st.integers(2, 4)) + text[at:]
        elif op == "swap":  # a letter or digit changed, as a typo or damage does
            if at < len(text):
                text = text[:at] + draw(st.sampled_from("aZ9-x ")) + text[at + 1:]
        else:
            text = text[:at]
    return text


def _ran(args: Any) -> Any:
    r = runner.invoke(app, [str(a) for a in args])  # the runner validates the JSON
    assert r.exit_code in (0, 1, 2), (args, r.exit_code, r.stderr, r.exception)
    assert "Traceback" not in (r.stderr or ""), r.stderr
    if r.exit_code == 2:
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r


def test_a_damaged_dcgmi_paste_gives_links_json_valid_against_its_schema(tmp_path):
    """The reproducer: an unreadable line and a GPU row repeated: dcgmi_text.* notes."""
    text = (FIX / "nvml-text" / "dcgmi_nvlink_s_h100.txt").read_text()
    lines = text.splitlines()
    gpu = next(i for i, l in enumerate(lines) if "gpuId" in l)
    damaged = "\n".join(lines[:gpu + 1] + [lines[gpu] + " ???", "gpuId zz: junk"]
                        + lines[gpu + 1:]) + "\n"
    src = tmp_path / "dcgmi.txt"
    src.write_text(damaged)
    r = _ran(["links", "--from", src, "--format", "json"])
    assert r.exit_code == 0, r.stderr
    codes = {n["code"] for n in json.loads(r.stdout)["notes"]}
    assert any(c.startswith("dcgmi_text.") for c in codes), codes
    schema_check.validate(json.loads(r.stdout), "links")


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=mutated())
def test_every_json_document_of_a_mutated_paste_is_valid(tmp_path, text):
    fleet = tmp_path / "fleet"
    fleet.mkdir(exist_ok=True)
    src = fleet / "paste.txt"
    src.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    for cmd in ("show", "links", "ib", "check"):
        _ran([cmd, "--from", src, "--format", "json"])
    snap = tmp_path / "s.json"
    if _ran(["snapshot", "--from", src, "-o", snap]).exit_code == 0:
        _ran(["show", "--from", snap, "--format", "json"])
    _ran(["audit", fleet, "--jobs", "1", "--format", "json"])
    _ran(["cluster", fleet, "--jobs", "1", "--format", "json"])
    _ran(["diff", src, ROOT / "nvtopo" / "examples" / "dgx-h100.txt", "--format", "json"])


@st.composite
def mutated_nccl(draw: Any) -> str:
    text = NCCL_PASTES[draw(st.integers(0, len(NCCL_PASTES) - 1))].read_text()
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "cut", "repeat", "end"]))
        if op == "insert":
            text = text[:at] + draw(_JUNK) * draw(st.integers(1, 20)) + text[at:]
        elif op == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 120)):]
        elif op == "repeat":
            text = text[:at] + text[at:at + 150] * draw(st.integers(2, 4)) + text[at:]
        else:
            text = text[:at]
    return text


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=mutated_nccl())
def test_explain_json_of_a_mutated_nccl_paste_is_valid(tmp_path, text):
    src = tmp_path / "nccl.txt"
    src.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    _ran(["explain", "--from", src, "--format", "json"])
    _ran(["explain", "--from", src])
