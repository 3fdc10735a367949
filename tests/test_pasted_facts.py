"""Issue 12, item 2: every pasted fact is checked.

Pasted ``nvidia-smi -q`` Fabric and PCI blocks, ``nvlink -s`` inactive links and ``nvlink
-e`` counters reach the same checks as the same facts from NVML: a simulated NVML fault and
the same fault written as pasted text give the same codes, severities and subjects; the
healthy node stays clean both ways.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, List, Set, Tuple

import pytest

from nvtopo.checks import select_and_run
from nvtopo.model import Topology
from nvtopo.snapshot import load_text

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "nvml-text"
FAMILIES = ("nvlink.", "fabric.", "pcie.", "gpu.")

_STATE = {"not_started": "Not Started", "in_progress": "In Progress", "completed": "Completed",
          "not_supported": "N/A"}
_ERR = {"replay": "Replay Errors", "recovery": "Recovery Errors", "crc_flit": "CRC Errors"}


def _sim(layout: str, *faults: str) -> dict:
    cmd = [sys.executable, "-m", "nvtopo", "simulate", layout]
    for f in faults:
        cmd += ["--fault", f]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    doc = json.loads(out.stdout)
    doc["probes"].pop("sysfs", None)  # NVML and the matrix: what a ticket can paste
    doc.pop("derived", None)
    return doc


def as_pasted_text(doc: dict) -> str:
    """The simulated node as a ticket would paste it: topo -m, then nvidia-smi nvlink -s,
    nvlink -e and -q (PCI, Fabric) for every GPU, written from NVML's answers."""
    topo = load_text(json.dumps(doc), "sim.json")
    out: List[str] = ["$ nvidia-smi topo -m", doc["probes"]["topo-text"]["stdout"], "",
                      "$ nvidia-smi nvlink -s"]
    for g in topo.gpus:
        out.append(f"GPU {g.index}: {g.name} (UUID: {g.uuid})")
        for lk in g.nvml.nvlink.links:
            # (NVML answers no speed for NVLink 1/2 links; nvidia-smi prints 25.781 GB/s)
            speed = "<inactive>" if lk.state != "active" else \
                f"{(lk.speed_mbps or 25781) / 1000:.3f} GB/s"
            out.append(f"\t Link {lk.link}: {speed}")
    out.append("$ nvidia-smi nvlink -e")
    for g in topo.gpus:
        out.append(f"GPU {g.index}: {g.name} (UUID: {g.uuid})")
        for lk in g.nvml.nvlink.links:
            for k, label in _ERR.items():
                val = lk.errors.get(k)
                if isinstance(val, int):
                    out.append(f"\t Link {lk.link}: {label}: {val}")
    out.append("$ nvidia-smi -q")
    for g in topo.gpus:
        out += _q_block(g)
    return "\n".join(out) + "\n"


def _q_block(g: Any) -> List[str]:
    p, f = g.nvml.pcie, g.nvml.fabric
    out = [f"GPU {g.pci_bus_id}", f"    Product Name : {g.name}", f"    GPU UUID : {g.uuid}",
           "    PCI", "        GPU Link Info", "            PCIe Generation",
           f"                Max : {p.max_gen}", f"                Current : {p.current_gen}",
           "            Link Width", f"                Max : {p.max_width}x",
           f"                Current : {p.current_width}x"]
    if f is not None:
        status = "N/A" if f.status is None else " ".join(
            w.capitalize() for w in f.status.split("_"))
        uuid = f.cluster_uuid or "00000000000000000000000000000000"
        uuid = f"{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:]}"
        out += ["    Fabric", f"        State : {_STATE.get(f.state, 'N/A')}",
                f"        Status : {status}",
                f"        CliqueId : {f.clique_id if f.clique_id is not None else 'N/A'}",
                f"        ClusterUUID : {uuid}"]
        if f.health_summary:
            out += ["        Health", "            Summary : "
                    + f.health_summary.replace("_", " ").title()]
    return out


def _findings(model: Topology) -> Set[Tuple[str, str, str]]:
    rep = select_and_run(model)
    return {(f.code, f.severity, str(f.subject)) for f in rep.findings
            if f.code.startswith(FAMILIES) and f.severity != "info"}


@pytest.mark.parametrize("layout,faults,want", [
    ("dgx-h100", (), set()),
    ("dgx-h100", ("nvlink-down:GPU3:7",), {("nvlink.link_down", "error", "GPU3 link 7")}),
    ("dgx-h100", ("pcie-width:GPU5:8",), {("pcie.width_low", "error", "GPU5")}),
    ("dgx-h100", ("pcie-gen:GPU5:3",), {("pcie.gen_low", "warning", "GPU5")}),
    ("dgx-h100", ("fabric-not-started",), {("fabric.not_started", "error", "node")}),
    ("dgx-h100", ("nvlink-down:GPU3:7", "pcie-width:GPU1:8"),
     {("nvlink.link_down", "error", "GPU3 link 7"), ("pcie.width_low", "error", "GPU1")}),
    ("hgx-a100-8", (), set()),
    ("hgx-a100-8", ("nvlink-down:GPU6:2",), {("nvlink.link_down", "error", "GPU6 link 2")}),
    ("dgx-1-v100", (), set()),
    ("dgx-1-v100", ("nvlink-down:GPU2:1",), None),
])
def test_nvml_fault_and_the_same_fault_pasted_agree(layout: str, faults: tuple, want) -> None:
    doc = _sim(layout, *faults)
    from_nvml = _findings(load_text(json.dumps(doc), "sim.json"))
    text = as_pasted_text(doc)
    pasted = load_text(text, "ticket.txt")
    assert "nvml" not in pasted.sources and "nvml-text" in pasted.sources
    from_text = _findings(pasted)
    if want is not None:
        assert from_nvml == want
    else:
        assert any(c == "nvlink.link_down" for c, _, _ in from_nvml)
    assert from_text == from_nvml


def _check(text: str):
    return select_and_run(load_text(text, "paste.txt"))


@pytest.mark.parametrize("name,code", [
    ("nvidia_smi_q_fabric_insufficient_resources.txt", "fabric.failed"),
    ("nvidia_smi_q_fabric_in_progress_driver580.txt", "fabric.in_progress"),
])
def test_pasted_fabric_block_is_checked(name: str, code: str) -> None:
    rep = _check((FIX / name).read_text())
    errs = [f for f in rep.findings if f.severity == "error"]
    assert [f.code for f in errs] == [code]
    assert errs[0].source == "nvml-text"


def test_pasted_healthy_fabric_and_pci_pass() -> None:
    """The healthy counterpart: an H800 -q with Completed/Success and Gen5 x16."""
    rep = _check((FIX / "nvidia_smi_q_h800_pci_and_fabric_excerpt.txt").read_text())
    assert rep.verdict == "pass"
    assert not [f for f in rep.findings if f.severity in ("error", "warning")]
    assert not [f for f in rep.findings if f.code == "pcie.not_checked"]


def test_pasted_pci_width_low_is_an_error() -> None:
    text = (FIX / "nvidia_smi_q_h800_pci_and_fabric_excerpt.txt").read_text().replace(
        "Current                   : 16x", "Current                   : 8x")
    rep = _check(text)
    got = [(f.code, f.severity, str(f.subject), f.actual) for f in rep.findings
           if f.severity != "info"]
    assert got == [("pcie.width_low", "error", "GPU0", "x8")]


def test_pasted_nvlink_counters_over_threshold() -> None:
    base = (FIX / "nvlink_e_h100_excerpt.txt").read_text()
    assert _check(base).verdict == "pass"
    bad = base.replace("Link 1: CRC Errors: 0", "Link 1: CRC Errors: 5000")
    rep = _check(bad)
    got = [(f.code, f.severity, str(f.subject), f.actual) for f in rep.findings
           if f.severity != "info"]
    assert got == [("nvlink.errors", "error", "GPU0 link 1", {"crc_flit": 5000})]


def test_inactive_links_of_bridged_boards_stay_inactive() -> None:
    """H100 PCIe pairs leave 6 of 18 links idle by design; three RTX A6000 with one bridge:
    nothing down, nothing an error."""
    for name in ("nvlink_s_h100_pcie_bridge_partial_inactive.txt",
                 "nvlink_s_rtx_a6000_bridge_and_all_inactive.txt"):
        model = load_text((FIX / name).read_text(), name)
        assert all(lk.state in ("active", "inactive") for g in model.gpus
                   for lk in g.nvml_text.nvlink.links)
        assert select_and_run(model).verdict == "pass"


def test_one_inactive_link_on_an_nvswitch_paste_is_down() -> None:
    """H800 nvlink -s: GPU 0, 1 and 7 with all 8 links up; the same paste with GPU 1 link 5
    <inactive> is that link down (the family rule), whatever the layout."""
    text = (FIX.parent / "nvml-text" / "nvlink_s_h800_8links_excerpt.txt")
    src = text.read_text() if text.exists() else None
    if src is None:
        pytest.skip("fixture nvlink_s_h800_8links_excerpt.txt absent")
    lines = src.splitlines()
    at = lines.index(next(x for x in lines if x.startswith("GPU 1:")))
    lines[at + 6] = "         Link 5: <inactive>"
    rep = _check("\n".join(lines) + "\n")
    got = [(f.code, f.severity, str(f.subject)) for f in rep.findings if f.severity != "info"]
    assert got == [("nvlink.link_down", "error", "GPU1 link 5")]
    assert _check(src).verdict == "pass"


def _cli(*args: str):
    from cli_runner import make_runner
    from nvtopo.cli import app

    return make_runner().invoke(app, list(args))


def test_links_never_calls_unknown_states_inactive() -> None:
    """``nvlink -e`` pasted alone lists links without states: not "0/3 active"."""
    res = _cli("links", "--from", str(FIX / "nvlink_e_h100_excerpt.txt"))
    assert res.exit_code == 0, res.output
    assert "0/3 active" not in res.output
    assert "3 links listed, state unknown" in res.output
    res = _cli("links", "--from", str(FIX / "nvlink_s_h100_pcie_bridge_partial_inactive.txt"))
    assert "12/18 active" in res.output


def test_links_and_show_print_the_pasted_fabric_block() -> None:
    path = str(FIX / "nvidia_smi_q_fabric_insufficient_resources.txt")
    for cmd in ("links", "show"):
        res = _cli(cmd, "--from", path)
        assert res.exit_code == 0, res.output
        assert "completed/insufficient_resources" in res.output
        assert "clique 0" in res.output and "no cluster UUID" in res.output
    res = _cli("links", "--from", path, "--format", "json")
    doc = json.loads(res.output)
    fab = doc["gpus"][0]["fabric"]
    assert (fab["state"], fab["status"], fab["clique_id"], fab["cluster_uuid"]) == (
        "completed", "insufficient_resources", 0, None)
    healthy = _cli("show", "--from", str(FIX / "nvidia_smi_q_h800_pci_and_fabric_excerpt.txt"))
    assert "GPU0: completed/success" in healthy.output


@pytest.mark.parametrize("layout,links,mbps", [("dgx-1-v100", 6, 25781),
                                               ("dgx-1-p100", 4, 20000)])
def test_nvlink_1_2_bandwidth_from_the_older_speed_fields(layout: str, links: int,
                                                          mbps: int) -> None:
    """Issue 12 item 4: V100 and P100 answer no field 164; their speed comes from
    NVML_FI_DEV_NVLINK_SPEED_MBPS_Ln, so the bandwidth is known (it showed none)."""
    doc = _sim(layout)
    topo = load_text(json.dumps(doc), "sim.json")
    calls = doc["probes"]["nvml"]["calls"]
    assert any(",84:0)" in k for k in calls)  # the older field was asked, and recorded
    for g in topo.gpus:
        nv = g.nvml.nvlink
        active = [lk for lk in nv.links if lk.state == "active"]
        assert len(active) == links
        assert {lk.speed_mbps for lk in active} == {mbps}
        assert nv.bandwidth_gbps_per_direction == round(links * mbps / 1000, 3)


def test_newer_gpus_are_not_asked_the_older_speed_fields() -> None:
    calls = _sim("dgx-h100")["probes"]["nvml"]["calls"]
    assert not [k for k in calls if ",84:0)" in k or ",90:0)" in k]


def test_a_paste_of_many_gpus_is_judged_in_bounded_time() -> None:
    """Hang detector for the family rule (it compared every GPU with every other per
    link): 1024 GPUs x 64 links, some inactive."""
    import time

    from nvtopo.probes.nvml.text import derive_text
    from nvtopo.probes.nvml.vocab import MAX_GPUS

    lines = []
    for g in range(MAX_GPUS):
        lines.append(f"GPU {g}: NVIDIA H100 (UUID: GPU-{g:08d})")
        lines += [f"  Link {lk}: " + ("<inactive>" if (g + lk) % 7 == 0 else "26.562 GB/s")
                  for lk in range(64)]
    start = time.monotonic()
    topo = derive_text("\n".join(lines))
    assert time.monotonic() - start < 20
    assert len(topo.gpus) == MAX_GPUS
    # no GPU uses every link it lists, so nothing is judged down
    assert not any(lk.state == "down" for g in topo.gpus for lk in g.nvml_text.nvlink.links)
