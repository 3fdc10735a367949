"""A named layout is an assertion (issue 23, class 3).

``--layout NAME`` / ``--layout-file`` say what the node must be: a shortfall against it is an
error, not the guess "or a VM/container given a subset?" (that guess belongs to
auto-selection), and a pasted ``nvlink -s`` GPU listing every link a named mesh layout wires
(a DGX-1V GPU's six) with some ``<inactive>`` has those links down.  Counterparts: the same
inputs under auto-selection (a container given part of a board: a warning or a subset note,
never an error), the full board and a GPU with every link up under the named layout (pass).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nvtopo import checks, snapshot
from nvtopo.checks import select as S

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "topo-corpus"
CUT = ROOT / "fixtures" / "topo-cut"
TEXT = ROOT / "fixtures" / "nvml-text"
H100_8 = CORPUS / "02_hgx-h100-8gpu-nv18-8nic-gpunumaid-spaces-sglang.txt"
H100_7 = CUT / "h100_7of8_nv18_no_names.txt"
H100_4 = CUT / "h100_4of8_nv18_4nic.txt"
V100_1 = TEXT / "nvlink_s_v100_sxm2_1gpu_links3_5_inactive.txt"


def _check(topo, choice="auto"):
    sel = S.select(topo, choice)
    return sel, checks.run(topo, sel).findings


def _codes(found, severity):
    return sorted((f.code, str(f.subject)) for f in found if f.severity == severity)


@pytest.mark.parametrize("name", ["dgx-h100", "hgx-h100-8"])
def test_named_layout_short_of_gpus_is_an_error(name):
    sel, found = _check(snapshot.load(str(H100_7)), name)
    assert sel.how == "user"
    missing = [f for f in found if f.code == "gpu.missing"]
    assert [f.severity for f in missing] == ["error"]
    assert "7 of 8 GPUs seen, and the layout named" in missing[0].message
    assert "subset?" not in missing[0].message and "subset?" not in sel.reason


def test_auto_short_of_gpus_stays_a_warning():
    """The same 7 GPUs under auto-selection: a VM or container may show part of a board."""
    sel, found = _check(snapshot.load(str(H100_7)))
    assert sel.how in ("auto", "ambiguous")
    assert [(f.code, f.severity) for f in found if f.code == "gpu.missing"] == \
        [("gpu.missing", "warning")]
    assert _codes(found, "error") == []


def test_half_a_board_auto_is_a_subset_named_is_missing_gpus():
    topo = snapshot.load(str(H100_4))
    sel, found = _check(topo)
    assert sel.layout is None and "a subset of an 8-GPU board?" in sel.reason
    assert _codes(found, "error") == []
    sel, found = _check(topo, "hgx-h100-8")
    assert "GPUs missing from its 8-GPU board" in sel.reason and "subset?" not in sel.reason
    assert ("gpu.missing", "node") in _codes(found, "error")


def test_full_board_under_its_named_layout_passes():
    _, found = _check(snapshot.load(str(H100_8)), "hgx-h100-8")
    assert _codes(found, "error") == [] and _codes(found, "warning") == []


def test_named_mesh_layout_turns_listed_inactive_links_into_link_down():
    sel, found = _check(snapshot.load(str(V100_1)), "dgx-1-v100")
    downs = [f for f in found if f.code == "nvlink.link_down"]
    assert [(str(f.subject), f.severity) for f in downs] == [
        ("GPU3 link 3", "error"), ("GPU3 link 5", "error")]
    assert "uses all 6 links of every GPU (its NVLink mesh" in downs[0].message


def test_auto_leaves_the_same_excerpt_inactive():
    """Under auto a lone V100-SXM2 block fits no layout (a subset): nothing asserts that
    its board wires every link."""
    sel, found = _check(snapshot.load(str(V100_1)))
    assert sel.layout is None
    assert not [f for f in found if f.code == "nvlink.link_down"]


def test_named_mesh_layout_with_every_link_up_passes():
    text = V100_1.read_text().replace("<inactive>", "25.781 GB/s")
    _, found = _check(snapshot.load_text(text, "v100-all-up"), "dgx-1-v100")
    assert _codes(found, "error") == [] and _codes(found, "warning") == []


def test_named_mesh_excerpt_listing_fewer_links_stays_inactive():
    """A block listing 4 of the GPU's 6 links (links 4-5 cut from the paste) does not say
    which links the GPU has: its <inactive> link is not judged."""
    lines = [ln for ln in V100_1.read_text().splitlines()
             if "Link 4:" not in ln and "Link 5:" not in ln]
    _, found = _check(snapshot.load_text("\n".join(lines) + "\n", "v100-cut"), "dgx-1-v100")
    assert not [f for f in found if f.code == "nvlink.link_down"]


def _sim(name, *faults):
    import json

    from nvtopo import layouts
    from nvtopo.simulate import simulate

    doc = json.loads(json.dumps(simulate(layouts.load(name), faults, seed=1)))
    return snapshot.derive(doc, where=name)


@pytest.mark.parametrize("gone,nic", [(0, "mlx5_0"), (3, "mlx5_3"), (7, "mlx5_7")])
def test_a_missing_gpu_is_placed_in_its_slot_by_the_pci_tree(gone, nic):
    """A DGX A100 (no port map; one compute NIC per GPU behind its PCIe switch) with GPU0
    gone: the tools number the rest 0-6, and the slot whose NIC has no GPU near it is the
    one named, not the last index (was: "GPU7 is missing ... may be another slot")."""
    _, found = _check(_sim("dgx-a100", f"gpu-missing:GPU{gone}"))
    missing = [f for f in found if f.code == "gpu.missing"]
    assert [(f.severity, str(f.subject)) for f in missing] == [("error", "GPU7")]
    assert f"the empty slot is the layout's GPU{gone} (its NIC {nic} is on the bus" \
        in missing[0].message
    assert "may be another slot" not in missing[0].message


def test_a_healthy_board_has_no_empty_slot():
    _, found = _check(_sim("dgx-a100"))
    assert not [f for f in found if f.code == "gpu.missing"]
