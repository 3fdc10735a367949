"""NIC roles, decided once (issue 22, item 2): one resolver (``nvtopo/checks/roles.py``)
gives every NIC a role (compute, storage, management or unknown) with the evidence that
decided it, and every family takes it from there.  Names never decide against structure.

Each case on a simulated node (the NICs keep their PCI places; only what the case says
changes), with its healthy counterpart.
"""

from __future__ import annotations

import json

import pytest

from nvtopo import checks, layouts, snapshot
from nvtopo.simulate import build, snapshot as sim_snapshot

H100 = layouts.load("dgx-h100")
A100 = layouts.load("dgx-a100")
COMPUTE = ("mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11")
STORAGE = ("mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8")


def node(layout=H100, shift=0, seed=3):
    """A simulated node; ``shift`` renames NIC ``i`` to the name of NIC ``i + shift`` (every
    NIC named in another order, storage NICs taking compute NICs' names)."""
    m = build(layout, seed=seed)
    names = [n.name for n in m.nics]
    if shift:
        for i, n in enumerate(m.nics):
            n.name = names[(i + shift) % len(names)]
    return snapshot.derive(json.loads(json.dumps(sim_snapshot(m))), where="sim.json")


def problems(topo, layout=H100):
    return [(f.severity, f.code, str(f.subject))
            for f in checks.run(topo, layout).findings if f.severity != "info"]


@pytest.mark.parametrize("shift", [1, 2, 3, 4, 6])
def test_renamed_dgx_h100_gives_no_link_layer_error_on_a_storage_port(shift):
    """NICs named in another order under ``--layout dgx-h100``: the port map's names now
    land on the Ethernet storage cards.  It gave three or four false ``ib.link_layer``
    errors beside the ``nic.names_differ`` warning that mapped the names correctly."""
    topo = node(shift=shift)
    assert problems(topo) == [("warning", "nic.names_differ", "node")]
    assert checks.run(topo, H100).verdict == "pass"


def test_renamed_dgx_h100_under_the_cli_layout_passes(tmp_path):
    from cli_runner import make_runner

    from nvtopo.cli import app

    path = tmp_path / "renamed.json"
    m = build(H100, seed=3)
    names = [n.name for n in m.nics]
    for i, n in enumerate(m.nics):
        n.name = names[(i + 1) % len(names)]
    path.write_text(json.dumps(sim_snapshot(m)))
    res = make_runner().invoke(app, ["check", "--from", str(path), "--layout", "dgx-h100",
                                     "--format", "json"])
    assert res.exit_code == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    codes = [(f["severity"], f["code"]) for f in doc["findings"] if f["severity"] != "info"]
    assert codes == [("warning", "nic.names_differ")]
