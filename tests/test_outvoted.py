"""Issue 23, class 6: two agreeing sources beat one.

Where NVML and sysfs (read live) agree about a fact and a text (the snapshot's ``topo -m``)
says otherwise, NVML and sysfs decide and the difference is one ``source.outvoted`` warning,
never an error built on the text.  One source against one stays as it was.  The inputs are
the bundled healthy DGX H100 snapshot with its topo text edited (``fixtures/stale-text``).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Set, Tuple

from nvtopo.checks import select_and_run
from nvtopo.model import GPU, Disagreement, Topology
from nvtopo.model.votes import outvoted, settle
from nvtopo.snapshot import load_text

ROOT = Path(__file__).resolve().parent.parent
STALE = ROOT / "fixtures" / "stale-text"
EXAMPLE = ROOT / "nvtopo" / "examples" / "dgx-h100-healthy.json.gz"


def _doc(path: Path) -> Dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc: Dict[str, Any] = json.load(f)
    doc.pop("derived", None)
    return doc


def _check(doc: Dict[str, Any], **kw: Any) -> Tuple[Any, Any]:
    topo = load_text(json.dumps(doc), "node.json")
    return topo, select_and_run(topo, **kw)


def _codes(rep: Any, severity: str) -> Set[Tuple[str, str]]:
    return {(f.code, str(f.subject)) for f in rep.findings if f.severity == severity}


def _source_findings(rep: Any) -> list:
    return [f for f in rep.findings if f.code.startswith("source.")]


def test_numa_edited_text_is_outvoted() -> None:
    """GPU4's topo row says NUMA node 0 (CPUs 0-55); NVML and sysfs both say node 1: no
    numa.placement error (the text alone gave one before), one outvoted warning naming both
    facts, and the model holds the live value."""
    topo, rep = _check(_doc(STALE / "dgx-h100-topo-numa-edited.json.gz"))
    assert rep.verdict == "pass"
    assert not _codes(rep, "error")
    src = _source_findings(rep)
    assert [(f.code, str(f.subject), f.severity) for f in src] == [
        ("source.outvoted", "GPU4", "warning")]
    assert src[0].expected == {"cpu_affinity": "56-111,168-223", "numa_affinity": "1"}
    assert src[0].actual == {"cpu_affinity": "topo-text: 0-55,112-167",
                             "numa_affinity": "topo-text: 0"}
    g4 = topo.gpu(4)
    assert g4.numa_node == 1 and g4.sources["numa_affinity"] == "nvml"
    assert g4.cpu_affinity == "56-111,168-223"


def test_gpu_the_text_does_not_list_is_outvoted() -> None:
    """The topo text lacks GPU7; NVML and sysfs both list it: one outvoted warning, the
    GPU is present and checked."""
    topo, rep = _check(_doc(STALE / "dgx-h100-topo-gpu7-dropped.json.gz"))
    assert rep.verdict == "pass"
    src = _source_findings(rep)
    assert [f.code for f in src] == ["source.outvoted"]
    assert "does not list GPU7" in src[0].message and "nvml and sysfs both list it" in \
        src[0].message
    assert 7 in [g.index for g in topo.gpus]


def test_all_three_agree_no_finding() -> None:
    """The healthy counterpart: the unedited snapshot (topo text, NVML, sysfs agree)."""
    topo, rep = _check(_doc(EXAMPLE))
    assert not topo.disagreements
    assert not _source_findings(rep) and rep.verdict == "pass"


def test_one_against_one_stays_as_it_was() -> None:
    """Without the sysfs evidence the edited text stands against NVML alone: nothing is
    decided (the text, merged first, keeps the fact, as before), and the disagreement is
    recorded as it was, not as outvoted."""
    doc = _doc(STALE / "dgx-h100-topo-numa-edited.json.gz")
    del doc["probes"]["sysfs"]
    topo, rep = _check(doc)
    assert topo.gpu(4).numa_node == 0 and topo.gpu(4).sources["numa_affinity"] == "topo-text"
    assert not [f for f in rep.findings if f.code == "source.outvoted"]
    assert ("numa.placement", "GPU4") in _codes(rep, "error")
    assert {d.fact for d in topo.disagreements if d.subject == "GPU4"} == {
        "cpu_affinity", "numa_affinity"}


def test_nvlink_text_against_nvml_is_one_against_one() -> None:
    """sysfs does not see NVLink: a topo text saying NV12 where NVML says NV18 is one source
    against one, kept as before (the lower count, an error), never called outvoted."""
    doc = _doc(EXAMPLE)
    ev = doc["probes"]["topo-text"]
    rows = [r.split("\t") for r in ev["stdout"].split("\n")]
    for r in rows:
        if r[0] in ("GPU2", "GPU3"):
            r[4 if r[0] == "GPU2" else 3] = "NV12"
    ev["stdout"] = "\n".join("\t".join(r) for r in rows)
    _, rep = _check(doc)
    assert ("nvlink.pair_degraded", "GPU2-GPU3") in _codes(rep, "error")
    assert not [f for f in rep.findings if f.code == "source.outvoted"]


def test_live_fault_stands_against_a_healthy_text(tmp_path: Path) -> None:
    """NVML and sysfs agree on a fault (GPU4 on NUMA node 1 where the layout puts it on 0)
    and the text shows it healthy (node 0): the fault stands, and the text is said apart."""
    layout = json.loads((ROOT / "nvtopo" / "layouts" / "dgx-h100.json").read_text())
    layout["name"] = "dgx-h100-gpu4-numa0"
    layout["numa"]["gpu_numa"]["4"] = 0
    path = tmp_path / "layout.json"
    path.write_text(json.dumps(layout))
    _, rep = _check(_doc(STALE / "dgx-h100-topo-numa-edited.json.gz"), layout_file=str(path))
    errors = [f for f in rep.findings if f.severity == "error"]
    assert [(f.code, str(f.subject)) for f in errors] == [("numa.placement", "GPU4")]
    assert errors[0].actual == 1
    assert [f.code for f in _source_findings(rep)] == ["source.outvoted"]


def _fragment(source: str, value: str) -> Topology:
    t = Topology(sources=[source])
    t.gpus.append(GPU(index=0, cpu_affinity=value, sources={"cpu_affinity": source}))
    return t


def test_settle_needs_the_live_sources_to_agree() -> None:
    """NVML and sysfs that disagree between themselves decide nothing; where they agree, the
    one disagreement left names all three sources."""
    split = _fragment("topo-text", "0-7").merge(_fragment("nvml", "8-15")).merge(
        _fragment("sysfs", "16-23"))
    before = list(split.disagreements)
    settle(split)
    assert split.gpus[0].cpu_affinity == "0-7" and split.disagreements == before
    assert not [d for d in split.disagreements if outvoted(d)]
    agree = _fragment("topo-text", "0-7").merge(_fragment("nvml", "8-15")).merge(
        _fragment("sysfs", "8-15"))
    settle(agree)
    assert agree.gpus[0].cpu_affinity == "8-15"
    assert [dict(d.values) for d in agree.disagreements] == [
        {"topo-text": "0-7", "nvml": "8-15", "sysfs": "8-15"}]
    assert outvoted(agree.disagreements[0]) == ("topo-text", "0-7", "8-15")
    # text and sysfs agreeing against NVML: a text is not a live source; nothing decided
    mixed = _fragment("topo-text", "0-7").merge(_fragment("nvml", "8-15")).merge(
        _fragment("sysfs", "0-7"))
    settle(mixed)
    assert mixed.gpus[0].cpu_affinity == "0-7"
    assert outvoted(Disagreement(subject="GPU0", fact="cpu_affinity",
                                 values={"topo-text": "0-7", "nvml": "8-15"})) is None


def test_fixtures_are_what_generate_makes() -> None:
    out = subprocess.run([sys.executable, str(STALE / "generate.py"), "--check"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
