"""The tree form of ``nvtopo cluster --format slurm-topology`` loaded into a real Slurm
(``topology/tree``; munged, slurmctld and one ``slurmd -N`` per node on this host, as
tests/collect_harness.py starts them): ``scontrol show topology`` agrees with it switch by
switch.  Skipped, saying why, without Slurm or root (``NVTOPO_REQUIRE_ENGINES=slurm`` makes
that a failure).  The block form (Slurm >= 23.11, not in Debian 12's 22.05) is tested by its
grammar in test_cluster_fleet.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import collect_harness as H
from nvtopo.commands import cluster
from nvtopo.layouts import load
from nvtopo.render import cluster as render
from nvtopo.simulate import fleet

DUMP = Path(__file__).resolve().parent.parent / "fixtures" / "ibnetdiscover" / \
    "ibsim-2leaf-1spine.txt"
NODES = ("node-00000", "node-00001", "node-00002", "node-00003")


class _TreeSlurm(H.SlurmCluster):
    """The harness's Slurm with ``TopologyPlugin=topology/tree`` and our topology.conf."""

    topology = ""

    def _spawn(self, name, argv):
        if name == "slurmctld":
            with open(self.conf, "a", encoding="utf-8") as f:
                f.write("TopologyPlugin=topology/tree\n")
            (self.conf.parent / "topology.conf").write_text(self.topology, encoding="utf-8")
        super()._spawn(name, argv)


def _switches(text):
    """``SwitchName=x ... Nodes=... Switches=...`` lines -> {name: (nodes, switches)}."""
    out = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "SwitchName" in fields:
            out[fields["SwitchName"]] = (fields.get("Nodes"), fields.get("Switches"))
    return out


def test_scontrol_show_topology_agrees_with_the_tree(tmp_path):
    why = H.slurm_missing()
    if why:
        H.skip_or_fail("slurm", why)
    snaps = tmp_path / "fleet"
    list(fleet.write(fleet.plan(load("dgx-h100"), 4), str(snaps)))
    result = cluster.run([str(snaps)], jobs=1, fabric=str(DUMP))
    conf = render.slurm_tree(cluster.document(result))
    ours = _switches(conf)
    assert ours == {"leaf0": ("node-[00000-00001]", None), "leaf1": ("node-[00002-00003]", None),
                    "spine0": (None, "leaf[0-1]")}
    base = tmp_path / "slurm"
    base.mkdir()
    c = _TreeSlurm(base, nodes=NODES)
    c.topology = conf
    try:
        c.start()
        shown = subprocess.run(["scontrol", "show", "topology"], env=c.env, timeout=20,
                               capture_output=True, text=True, check=True).stdout
    finally:
        c.stop()
    theirs = _switches(shown)
    assert set(theirs) == set(ours), shown
    for name, (nodes, below) in ours.items():
        if nodes is not None:  # a leaf: the same nodes
            assert theirs[name][0] == nodes, shown
        else:  # above: the same switches, and Slurm reaches every node of its leaves
            assert theirs[name][1] == below, shown
            assert theirs[name][0] == "node-[00000-00003]", shown
