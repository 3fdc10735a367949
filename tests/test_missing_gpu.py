"""Missing GPUs: say what the evidence supports (issue 12, class 1).

A pasted matrix short of the layout's GPUs cannot tell GPUs that fell off the bus from a
VM or a container given part of the board: one warning, never an error.  A GPU is an
error where the evidence shows it gone: sysfs lists it and the driver does not, NVML
lost it, the port map's NIC sits in an empty slot (the missing GPU is then named by its
slot and the GPUs present keep their NIC and NUMA checks), or sysfs shows the board's
PCIe switches (bare metal, not a VM's flat bus).  Every case has its healthy counterpart.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvtopo import checks, layouts, snapshot
from nvtopo.checks import select as S
from nvtopo.simulate import simulate

from cli_runner import make_runner
from nvtopo.cli import app

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "topo-corpus"
VM6 = CORPUS / "23_h100-6gpu-vm-nv18-2nic-node.txt"
FULL8 = CORPUS / "21_h100-8gpu-nv18-8nic-misaligned-columns-sglang.txt"


def sim(layout, *faults, seed=3):
    doc = json.loads(json.dumps(simulate(layouts.load(layout), list(faults), seed=seed)))
    return snapshot.derive(doc, where="sim.json")


def run(topo):
    sel = S.select(topo)
    return sel, checks.run(topo, sel)


def got(rep, codes=("gpu.missing",)):
    return [(f.severity, f.code, str(f.subject)) for f in rep.findings if f.code in codes]


def test_a_pasted_matrix_with_6_of_8_gpus_is_one_warning_not_two_errors():
    sel, rep = run(snapshot.load(str(VM6)))
    assert sel.layout.name == "hgx-h100-8"
    assert got(rep) == [("warning", "gpu.missing", "node")]
    f = [f for f in rep.findings if f.code == "gpu.missing"][0]
    assert f.message.startswith("6 of 8 GPUs seen: GPUs missing, or a VM/container given a "
                                "subset?")
    assert (f.expected, f.actual) == (8, 6)
    assert not [f for f in rep.findings if f.severity == "error"]
    assert rep.verdict == "pass"  # warnings only: exit status 0


def test_the_healthy_8_gpu_matrix_has_no_gpu_finding():
    _, rep = run(snapshot.load(str(FULL8)))
    assert got(rep) == [] and not [f for f in rep.findings if f.severity == "error"]


def test_check_cli_verdict_on_the_vm_matrix():
    res = make_runner().invoke(app, ["check", "--from", str(VM6)])
    assert res.exit_code == 0, res.stderr
    assert "PASS: no errors, 1 warning(s)" in res.output
    assert "a VM/container given a subset?" in res.output


@pytest.mark.parametrize("slot", [0, 3, 7])
def test_a_missing_gpu_is_placed_in_its_empty_slot(slot):
    """The port map's NIC of the slot is on the bus with no GPU near it: the slot is told
    (a missing GPU0 was only "GPU7 ... may be another slot", and the NIC and NUMA checks
    were dropped)."""
    sel, rep = run(sim("dgx-h100", f"gpu-missing:GPU{slot}"))
    assert sel.layout.name == "dgx-h100"
    # the subject is the index the tools leave out (the node's GPU0-6 are the GPUs present)
    assert got(rep) == [("error", "gpu.missing", "GPU7")]
    msg = [f for f in rep.findings if f.code == "gpu.missing"][0].message
    assert f"the empty slot is the layout's GPU{slot} " in msg
    nic = layouts.load("dgx-h100").nics.placement.gpu_nic[str(slot)]
    assert f"its NIC {nic} is on the bus" in msg
    # the GPUs present keep their NIC and NUMA checks, in their own slots
    assert not [f for f in rep.findings if f.code in ("nic.not_checked", "numa.not_checked")]
    assert [f for f in rep.findings if f.severity == "error"] == [
        f for f in rep.findings if f.code == "gpu.missing"]
    # the node's GPU numbering is mapped onto the slots, skipping the empty one
    want = {i: (i if i < slot else i + 1) for i in range(7)}
    assert (sel.mapping or {i: i for i in range(7)}) == want
    gn = sel.layout.nics.placement.gpu_nic
    full = layouts.load("dgx-h100").nics.placement.gpu_nic
    assert {int(k): v for k, v in gn.items() if int(k) < 7} == {
        i: full[str(want[i])] for i in range(7)}


def test_nic_faults_of_present_gpus_are_still_found_next_to_a_missing_gpu0():
    _, rep = run(sim("dgx-h100", "gpu-missing:GPU0", "ib-port-down:mlx5_4"))
    errs = {(f.code, str(f.subject)) for f in rep.findings if f.severity == "error"}
    assert errs == {("gpu.missing", "GPU7"), ("ib.port_down", "mlx5_4 port 1")}


def test_healthy_simulated_dgx_h100_has_no_gpu_finding():
    _, rep = run(sim("dgx-h100"))
    assert got(rep) == [] and rep.verdict == "pass"


def test_bare_metal_switches_make_a_count_short_an_error_a_flat_vm_bus_a_warning():
    """No port map (HGX): sysfs showing each GPU behind the board's PCIe switch says bare
    metal, so a GPU short is gone; the same node on a VM's flat bus (one link from the
    root port) cannot tell and warns."""
    topo = sim("hgx-h100-8", "gpu-missing:GPU3")
    _, rep = run(topo)
    assert got(rep) == [("error", "gpu.missing", "GPU7")]
    assert "PCIe switches (bare metal" in [f for f in rep.findings
                                           if f.code == "gpu.missing"][0].message
    flat = sim("hgx-h100-8", "gpu-missing:GPU3")
    for g in flat.gpus:
        g.sysfs.hops = g.sysfs.hops[-1:]
    _, rep = run(flat)
    assert got(rep) == [("warning", "gpu.missing", "node")]
    _, rep = run(sim("hgx-h100-8"))
    assert got(rep) == []


def test_a_card_swap_next_to_a_missing_gpu_is_not_taken_for_a_slot():
    """Slots follow the GPUs' bus order: NICs that would reorder the GPUs do not place
    them (the count-based finding and the renumbered note stay)."""
    topo = sim("dgx-h100", "gpu-missing:GPU0", "nic-affinity-swap:mlx5_4:mlx5_5")
    sel, rep = run(topo)
    assert not sel.slots_known
    assert [c for _, c, _ in got(rep)] == ["gpu.missing"]
