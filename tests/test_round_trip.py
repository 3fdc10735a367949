"""What ``snapshot`` writes, ``--from`` reads (issue 21, item 8).

``snapshot --from X -o s.json`` then ``show --from s.json`` gives the model ``show --from X``
gives, for every kind of input nvtopo reads (every fixture: ``topo`` text, ``nvlink`` and
``-q`` text, ``-q -x`` XML, ``dcgmi nvlink -s``, a sysfs tree with ``--sysfs-root``); the
kinds a snapshot does not keep (``ibstat``, ``gdscheck -p``) are refused in one line.  Inputs
within the text bounds whose snapshot would not be (control characters written as
``\\u001b``, millions of commas counted as JSON values) and a cut-short XML (whose note a
converted text lost) are the reproducers; hypothesis mutates real pastes for more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_runner import make_runner
from nvtopo.cli import app
from nvtopo import snapshot
from sysfs_trees import tree

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
runner = make_runner()

#: Input kinds a snapshot does not keep: refused in one line (exit 2).
NOT_KEPT = ("ib-text", "gds-text")


def _fixtures() -> List[Path]:
    out = []
    for d in ("topo-corpus", "topo-cut", "topo-damaged", "topo-edited", "nvml-text",
              "nvml-xml", "ib-text", "gds-text", "hostile", "cli"):
        out += [p for p in sorted((FIX / d).iterdir())
                if p.is_file() and p.suffix in (".txt", ".xml")]
    out.append(ROOT / "nvtopo" / "examples" / "dgx-h100.txt")
    return out


def _model(args: List[str]) -> Any:
    r = runner.invoke(app, ["show", *args, "--format", "json"])
    if r.exit_code != 0:
        return ("error", r.exit_code)
    doc = json.loads(r.stdout)
    doc.pop("origin", None)
    return doc


def _round_trip(src: str, tmp: Path) -> None:
    """``snapshot --from src`` writes a file ``show`` reads as ``src``, or refuses in one
    line (exit 2) an input ``show`` refuses or a snapshot does not keep."""
    out = tmp / "s.json"
    if out.exists():
        out.unlink()
    r = runner.invoke(app, ["snapshot", "--from", src, "-o", str(out)])
    if r.exit_code != 0:
        assert r.exit_code == 2, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
        assert not out.exists()
        return
    assert _model(["--from", str(out)]) == _model(["--from", src])


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_round_trips(path, tmp_path):
    out = tmp_path / "s.json"
    r = runner.invoke(app, ["snapshot", "--from", str(path), "-o", str(out)])
    direct = _model(["--from", str(path)])
    if path.parent.name in NOT_KEPT or (r.exit_code == 2 and "not kept" in r.stderr
                                        and "read the file back" not in r.stderr):
        assert r.exit_code == 2 and "not kept" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        return
    if r.exit_code == 2:  # an input nvtopo cannot read at all: the same refusal as show's
        assert direct == ("error", 2), (r.stderr, path)
        assert len(r.stderr.strip().splitlines()) == 1
        return
    assert r.exit_code == 0, r.stderr
    assert _model(["--from", str(out)]) == direct


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100", "dgx-h100-faults", "dgx-h100-gds",
                                  "hca-no-pci-address"])
def test_sysfs_trees_round_trip(name, tmp_path):
    root, _faults = tree(name)
    out = tmp_path / "s.json"
    r = runner.invoke(app, ["snapshot", "--sysfs-root", root, "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    live = _model(["--sysfs-root", root])
    again = _model(["--from", str(out)])
    for doc in (live, again):  # when the tree was read, not what it holds
        if isinstance(doc, dict):
            doc.get("host", {}).pop("time", None)
    assert again == live


def _topo() -> str:
    return (ROOT / "nvtopo" / "examples" / "dgx-h100.txt").read_text()


def test_control_characters_past_the_json_bound_are_refused_not_written(tmp_path):
    src = tmp_path / "ctl.txt"
    # each ESC is 6 bytes of JSON (\u001b): enough of them to pass the JSON bound, while
    # the text itself is within the text bound
    n = snapshot.MAX_JSON_BYTES // 6 + 200_000
    assert n < snapshot.MAX_TEXT_BYTES
    src.write_text(_topo() + "\n" + "\x1b" * n + "\n")
    assert _model(["--from", str(src)]) != ("error", 2)  # a text nvtopo reads
    out = tmp_path / "s.json"
    r = runner.invoke(app, ["snapshot", "--from", str(src), "-o", str(out)])
    assert r.exit_code == 2 and "would not read the file back" in r.stderr, r.stderr
    assert not out.exists()


def test_millions_of_commas_are_refused_not_written(tmp_path):
    src = tmp_path / "commas.txt"
    src.write_text(_topo() + "\n" + "," * 5_000_000 + "\n")
    out = tmp_path / "s.json"
    r = runner.invoke(app, ["snapshot", "--from", str(src), "-o", str(out)])
    assert r.exit_code == 2 and "JSON values" in r.stderr, r.stderr
    assert not out.exists()


def test_a_cut_xml_keeps_its_note(tmp_path):
    xml = (FIX / "nvml-xml" / "nvidia_smi_q_x_h100_2gpu_healthy.xml").read_text()
    src = tmp_path / "cut.xml"
    src.write_text(xml[: xml.index("</gpu>") + 300])  # the second GPU cut short
    direct = _model(["--from", str(src)])
    assert "nvml_text.xml_cut" in {n["code"] for n in direct["notes"]}
    _round_trip(str(src), tmp_path)


# --- mutated pastes -------------------------------------------------------------------------

_PASTES = [FIX / "topo-corpus" / "01_hgx-a100-8gpu-nv12-10nic-tabs.txt",
           FIX / "nvml-text" / "dcgmi_nvlink_s_h100.txt",
           FIX / "nvml-xml" / "nvidia_smi_q_x_h100_2gpu_gen3_x8_fabric_failed.xml",
           FIX / "nvml-text" / "nvidia_smi_q_fabric_insufficient_resources.txt",
           FIX / "nvml-text" / "nvlink_R_h100_hgx_nvswitch_excerpt.txt"]
_JUNK = st.sampled_from(["\x1b", "\x00", "\x7f", "\u2028", "\r", ",", "\t", "<", ">", "&",
                         "\ufffd", "é", "\x1b[31m", "GPU0", "NV18", "\n"])


@st.composite
def mutated(draw: Any) -> str:
    text = _PASTES[draw(st.integers(0, len(_PASTES) - 1))].read_text()
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "cut", "repeat", "end"]))
        if op == "insert":
            text = text[:at] + draw(_JUNK) * draw(st.integers(1, 40)) + text[at:]
        elif op == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 200)):]
        elif op == "repeat":
            text = text[:at] + text[at:at + 200] * draw(st.integers(2, 5)) + text[at:]
        else:
            text = text[:at]
    return text


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=mutated())
def test_mutated_pastes_round_trip_or_are_refused(tmp_path, text):
    src = tmp_path / "paste.txt"
    src.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    _round_trip(str(src), tmp_path)


def test_a_header_without_gpu0_round_trips_in_index_order(tmp_path):
    """A paste whose header lacks GPU0 (its row is there): the GPUs are listed in index
    order, as the snapshot of it lists them (hypothesis found them in header order)."""
    head = "\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n"
    rows = "".join(f"GPU{i}\t" + "\t".join(" X " if j == i else "NV12" for j in range(3))
                   + "\t0-7\t0\n" for i in range(3))
    src = tmp_path / "paste.txt"
    src.write_text(head + rows)
    model = _model(["--from", str(src)])
    assert [g["label"] for g in model["gpus"]] == ["GPU0", "GPU1", "GPU2"]
    _round_trip(str(src), tmp_path)
