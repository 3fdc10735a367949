"""Every Slurm topology form ``nvtopo cluster`` writes, for the fleets that broke it (a partial
collection, a storage-only leaf, a rail-optimised fabric, a tray outside its rack), loaded
into the real slurmctld of this machine (munged + ``slurmctld -D`` on one host, no slurmd:
the topology is read when slurmctld starts; ``scontrol show topology`` then answers, or
slurmctld has stopped with ``fatal:``).  The fabrics are real ``ibnetdiscover`` output of
ibsim (fixtures/ibnetdiscover/README.md).  Forms the installed Slurm cannot load (block:
23.11, topology.yaml: 25.05) are checked by their grammar and the load is skipped, saying
which version it needs.  Skipped without Slurm or root (``NVTOPO_REQUIRE_ENGINES=slurm`` makes
that a failure)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import collect_harness as H
from nvtopo.commands import cluster
from nvtopo.layouts import load
from nvtopo.render import slurm
from nvtopo.simulate import fleet

IB = Path(__file__).resolve().parent.parent / "fixtures" / "ibnetdiscover"


def _version():
    out = subprocess.run([H._tool("slurmctld"), "-V"], capture_output=True, text=True,
                         timeout=20).stdout.split()
    nums = out[-1].split(".")[:2] if out else ["0", "0"]
    return tuple(int(x) for x in nums)


class _Ctld(H.SlurmCluster):
    """munged and slurmctld only, with ``plugin`` and the topology file ``name``."""

    plugin = "topology/tree"
    files: dict = {}

    def _spawn(self, name, argv):
        if name.startswith("slurmd"):
            return
        if name == "slurmctld":
            with open(self.conf, "a", encoding="utf-8") as f:
                f.write(f"TopologyPlugin={self.plugin}\n")
            for fname, text in self.files.items():
                (self.conf.parent / fname).write_text(text, encoding="utf-8")
        super()._spawn(name, argv)

    def _all_idle(self):
        if self.procs["slurmctld"].poll() is not None:
            return True
        return subprocess.run(["scontrol", "show", "topology"], env=self.env, timeout=20,
                              capture_output=True).returncode == 0


def load_tree(tmp_path, conf, nodes):
    """(slurmctld still running, ``scontrol show topology``, its log)."""
    why = H.slurm_missing()
    if why:
        H.skip_or_fail("slurm", why)
    base = tmp_path / "slurm"
    base.mkdir()
    c = _Ctld(base, nodes=nodes)
    c.files = {"topology.conf": conf}
    try:
        c.start(timeout=40)
        alive = c.procs["slurmctld"].poll() is None
        shown = subprocess.run(["scontrol", "show", "topology"], env=c.env, timeout=20,
                               capture_output=True, text=True).stdout if alive else ""
    finally:
        c.stop()
    log = (base / "log" / "slurmctld.log").read_text(errors="replace") + \
        (base / "log" / "slurmctld.out").read_text(errors="replace")
    return alive, shown, log


def _switches(text):
    out = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "SwitchName" in fields:
            out[fields["SwitchName"]] = (fields.get("Nodes"), fields.get("Switches"))
    return out


def _doc(tmp_path, layout, count, dump=None, keep=None):
    snaps = tmp_path / "fleet"
    list(fleet.write(fleet.plan(load(layout), count), str(snaps)))
    if keep is not None:
        for f in snaps.iterdir():
            if f.name.endswith(".json") and f.name[:-5] not in keep:
                f.unlink()
    fab = str(IB / dump) if dump else None
    return cluster.document(cluster.run([str(snaps)], jobs=1, fabric=fab))


def _assert_loads(tmp_path, conf, nodes):
    alive, shown, log = load_tree(tmp_path, conf, nodes)
    assert alive, log[-2000:]
    bad = [x for x in log.splitlines() if "error" in x.lower() and
           ("switch" in x.lower() or "topology" in x.lower())]
    assert not bad, bad
    theirs = _switches(shown)
    ours = _switches(conf)
    assert set(theirs) == set(ours), shown
    for name, (leaf_nodes, _below) in ours.items():
        if leaf_nodes is not None:
            assert theirs[name][0] == leaf_nodes, shown
    return theirs


TREES = {
    # 2 of 4 nodes collected: leaf1 has none, its spine must not list it
    "partial": ("ibsim-2leaf-1spine.txt", ["node-00000", "node-00001"],
                {"leaf0": ("node-[00000-00001]", None), "spine0": (None, "leaf0")}),
    # a leaf of storage servers only
    "storage-leaf": ("ibsim-storage-leaf.txt", None,
                     {"leaf0": ("node-[00000-00001]", None),
                      "leaf1": ("node-[00002-00003]", None),
                      "spine0": (None, "leaf[0-1]")}),
    # every node on 8 rail leaves, two scalable units, two spines above all 16 leaves
    "rail-optimised": ("ibsim-rail-optimised.txt", None,
                       {"su0-rail0": ("node-[00000-00001]", None),
                        "su1-rail0": ("node-[00002-00003]", None),
                        "spine0": (None, "su0-rail0,su1-rail0")}),
}


@pytest.mark.parametrize("case", sorted(TREES))
def test_the_tree_form_loads(tmp_path, case):
    dump, keep, want = TREES[case]
    conf = slurm.slurm_tree(_doc(tmp_path, "dgx-h100", 4, dump, keep))
    assert _switches(conf) == want, conf
    nodes = keep or ["node-00000", "node-00001", "node-00002", "node-00003"]
    theirs = _assert_loads(tmp_path, conf, nodes)
    top = [v for k, v in theirs.items() if want[k][1] is not None]
    assert top[0][0] == slurm.hostlist(nodes)  # the top reaches every node


@pytest.mark.parametrize("conf,says", [
    ("SwitchName=leaf0 Nodes=node-[00000-00001]\nSwitchName=spine0 Switches=leaf[0-1]\n",
     "invalid child"),
    ("SwitchName=a Nodes=node-[00000-00001]\nSwitchName=b Nodes=node-[00000-00001]\n"
     "SwitchName=s Switches=a,b\n", "Multiple leaf switches"),
])
def test_the_loader_sees_what_slurm_refuses(tmp_path, conf, says):
    """The files nvtopo wrote before (issue 26): the check above would have caught them."""
    alive, _shown, log = load_tree(tmp_path, conf, ["node-00000", "node-00001"])
    assert says in log, log[-2000:]
    assert not alive or "error" in log


def _scalar(text):
    return int(text) if text.isdigit() else {"true": True, "false": False}.get(text, text)


def _yaml(lines, i=0, indent=0):
    """The block YAML nvtopo writes (mappings, lists, plain scalars), read strictly: a line
    at an unexpected indentation or of another shape fails the test.  (PyYAML is no
    dependency of nvtopo's tests.)"""
    out = None
    while i < len(lines):
        text = lines[i]
        ind = len(text) - len(text.lstrip(" "))
        if ind < indent:
            break
        assert ind == indent, (i, text)
        body = text.strip()
        if body.startswith("- "):
            out = [] if out is None else out
            assert isinstance(out, list), (i, text)
            item = body[2:]
            if ":" not in item:
                out.append(_scalar(item))
                i += 1
                continue
            sub = [" " * (ind + 2) + item] + lines[i + 1:]
            value, used = _yaml(sub, 0, ind + 2)  # (an index into sub: lines used)
            out.append(value)
            i += used
            continue
        key, sep, rest = body.partition(":")
        assert sep and key and " " not in key, (i, text)
        out = {} if out is None else out
        assert isinstance(out, dict) and key not in out, (i, text)
        if rest.strip():
            out[key] = _scalar(rest.strip())
            i += 1
        else:
            out[key], i = _yaml(lines, i + 1, _child_indent(lines, i + 1))
    return out, i


def _child_indent(lines, i):
    return len(lines[i]) - len(lines[i].lstrip(" ")) if i < len(lines) else 0


def read_yaml(text):
    lines = [x for x in text.splitlines() if x.strip() and not x.lstrip().startswith("#")]
    assert lines[0] == "---"
    value, used = _yaml(lines[1:])
    assert used == len(lines) - 1
    return value


def _shown_version():
    major, minor = _version()
    return f"{major}.{minor:02d}"


def _stray_doc(tmp_path):
    """Two GB200 NVL72 racks of 18 trays and one tray outside its rack (its own domain)."""
    doc = _doc(tmp_path, "gb200-nvl72-tray", 37)
    assert sorted(len(d["nodes"]) for d in doc["domains"]) == [1, 18, 18], doc["domains"]
    return doc


def test_the_block_form_of_a_fleet_with_a_stray_tray(tmp_path):
    conf = slurm.slurm_block(_stray_doc(tmp_path))
    words = [x for x in conf.splitlines() if not x.startswith("#")]
    assert words[-1] == "BlockSizes=18,36"
    assert [len(x.split()) for x in words[:-1]] == [2, 2, 2]
    assert "fewer than the base block size 18" in conf
    if _version() < (23, 11):
        pytest.skip(f"the block form needs Slurm {slurm.SINCE['block']} or later; this "
                    f"machine has {_shown_version()}: checked by its grammar")


def test_topology_yaml_of_tree_and_blocks(tmp_path):
    doc = _stray_doc(tmp_path)
    fab = cluster.run([str(tmp_path / "fleet")], jobs=1,
                      fabric=str(IB / "ibsim-2leaf-1spine.txt")).fabric
    doc["fabric"] = fab
    text = slurm.slurm_yaml(doc)
    topos = read_yaml(text)
    assert [list(t)[0] for t in topos] == ["topology", "topology"]
    assert [t["topology"] for t in topos] == ["fabric", "nvlink"]
    assert [t["cluster_default"] for t in topos] == [True, False]
    assert topos[1]["block"]["block_sizes"] == [18, 36]
    assert [len(b) for b in topos[1]["block"]["blocks"]] == [2, 2, 2]
    assert all(set(s) in ({"switch", "nodes"}, {"switch", "children"})
               for s in topos[0]["tree"]["switches"])
    if _version() < (25, 5):
        pytest.skip(f"topology.yaml needs Slurm {slurm.SINCE['yaml']} or later; this machine "
                    f"has {_shown_version()}: checked by its schema")
