"""``nvtopo cluster --fabric DUMP``: a real ``ibnetdiscover`` dump (made with ibsim,
fixtures/ibnetdiscover/README.md) read into the switch tree and written as Slurm's tree form."""

import json
from pathlib import Path

import pytest

from cli_runner import make_runner
from nvtopo.cli import app
from nvtopo.commands.cluster import fabric
from nvtopo.errors import NvtopoError
from nvtopo.layouts import load
from nvtopo.simulate import fleet

runner = make_runner()
DUMP = Path(__file__).resolve().parent.parent / "fixtures" / "ibnetdiscover" / \
    "ibsim-2leaf-1spine.txt"


def test_the_real_dump_is_read():
    fab = fabric.read(str(DUMP))
    by_desc = {s.desc: s for s in fab.switches.values()}
    assert sorted(by_desc) == ["leaf0", "leaf1", "spine0"]
    assert sorted(fab.hca_desc[h] for h in by_desc["leaf0"].hcas) == [
        "node-00000 mlx5_0", "node-00001 mlx5_0"]
    assert sorted(fab.switches[p].desc for p in by_desc["spine0"].peers) == ["leaf0", "leaf1"]
    assert by_desc["leaf1"].peers == ["S-0000000000200002"]
    t = fabric.tree(fab, {"node-00000 mlx5_0": "a", "node-00002 mlx5_0": "c"})
    assert t["switches"] == [
        {"name": "leaf0", "level": 0, "nodes": ["a"], "switches": []},
        {"name": "leaf1", "level": 0, "nodes": ["c"], "switches": []},
        {"name": "spine0", "level": 1, "nodes": [], "switches": ["leaf0", "leaf1"]}]
    assert t["unmatched"] == ["node-00001 mlx5_0", "node-00003 mlx5_0"]


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    list(fleet.write(fleet.plan(load("dgx-h100"), 5), str(d)))
    return d


def test_cli_tree_form_and_json(fleet_dir, tmp_path):
    res = runner.invoke(app, ["cluster", str(fleet_dir), "--fabric", str(DUMP), "--format",
                              "slurm-topology", "-j", "1"])
    assert res.exit_code == 0, res.output
    body = [x for x in res.stdout.splitlines() if not x.startswith("#")]
    assert body == ["SwitchName=leaf0 Nodes=node-[00000-00001]",
                    "SwitchName=leaf1 Nodes=node-[00002-00003]",
                    "SwitchName=spine0 Switches=leaf[0-1]"]
    assert "# 1 node(s) under no leaf switch of the dump: node-00004" in res.stdout
    out = tmp_path / "c.json"
    res = runner.invoke(app, ["cluster", str(fleet_dir), "--fabric", str(DUMP), "--format",
                              "json", "-j", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["fabric"]["nodes_outside"] == ["node-00004"]
    assert doc["fabric"]["unmatched"] == []


@pytest.mark.parametrize("text,message", [
    ("hello\nworld\n", "not an ibnetdiscover dump"),
    ("Switch 8 no-quotes\n", "without an id"),
])
def test_bad_dumps_are_one_line_errors(tmp_path, text, message):
    p = tmp_path / "dump.txt"
    p.write_text(text)
    with pytest.raises(NvtopoError) as e:
        fabric.read(str(p))
    assert message in str(e.value)


def test_bad_dump_fails_before_reading_snapshots(fleet_dir, tmp_path):
    p = tmp_path / "dump.bin"
    p.write_bytes(b"\xff\xfe\x00binary")
    res = runner.invoke(app, ["cluster", str(fleet_dir), "--fabric", str(p), "-j", "1"])
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    assert "not UTF-8" in res.stderr
    res = runner.invoke(app, ["cluster", str(fleet_dir), "--fabric", str(tmp_path / "none")])
    assert res.exit_code == 2 and "cannot read" in res.stderr


def test_hostile_descriptions_and_switch_names_stay_out_of_topology_conf(fleet_dir, tmp_path):
    text = DUMP.read_text().replace('"leaf0"', '"leaf0\\nSwitchName=evil Nodes=ALL"')
    text = text.replace('# "node-00001 mlx5_0"', '# "\x1b[2Jnode-00001 mlx5_0"')
    p = tmp_path / "dump.txt"
    p.write_text(text)
    res = runner.invoke(app, ["cluster", str(fleet_dir), "--fabric", str(p), "--format",
                              "slurm-topology", "-j", "1"])
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.stdout
    body = [x for x in res.stdout.splitlines() if not x.startswith("#")]
    assert all(not x.startswith("SwitchName=evil") for x in body)
    assert "SwitchName=leaf1 Nodes=node-[00002-00003]" in body


def test_a_large_dump_is_read_in_linear_time(tmp_path):
    import time

    parts = []
    for s in range(2000):
        parts.append(f'Switch\t40 "S-{s:016x}"\t\t# "sw{s}" base port 0 lid 1 lmc 0')
        for port in range(1, 33):
            parts.append(f'[{port}]\t"H-{s * 100 + port:016x}"[1]({port:x}) \t\t# '
                         f'"n{s}-{port} mlx5_0" lid 3 4xNDR')
        parts.append("")
    p = tmp_path / "big.txt"
    p.write_text("\n".join(parts))
    t = time.perf_counter()
    fab = fabric.read(str(p))
    assert len(fab.switches) == 2000 and len(fab.hca_desc) == 64000
    assert time.perf_counter() - t < 10  # a hang detector: about 0.2 s here


def _wide_dump(peers):
    """A spine switch linked to ``peers`` leaf switches (each link written from both ends,
    the spine's twice, as a multi-link trunk would), each leaf with one HCA."""
    lines = [f'Switch\t{2 * peers} "S-{1:016x}"\t\t# "spine" base port 0 lid 1 lmc 0']
    for p in range(peers):
        for port in (2 * p + 1, 2 * p + 2):
            lines.append(f'[{port}]\t"S-{p + 2:016x}"[1]\t\t# "leaf{p}" lid 3 4xNDR')
    lines.append("")
    for p in range(peers):
        lines += [f'Switch\t3 "S-{p + 2:016x}"\t\t# "leaf{p}" base port 0 lid 1 lmc 0',
                  f'[1]\t"S-{1:016x}"[{2 * p + 1}]\t\t# "spine" lid 3 4xNDR',
                  f'[2]\t"S-{1:016x}"[{2 * p + 2}]\t\t# "spine" lid 3 4xNDR',
                  f'[3]\t"H-{p:016x}"[1]\t\t# "n{p:05d} mlx5_0" lid 3 4xNDR', ""]
    return "\n".join(lines)


def _one_leaf_dump(hcas):
    """One leaf switch with ``hcas`` HCAs below it (each node's two HCAs)."""
    lines = [f'Switch\t{hcas} "S-{1:016x}"\t\t# "leaf" base port 0 lid 1 lmc 0']
    lines += [f'[{h + 1}]\t"H-{h:016x}"[1]\t\t# "n{h // 2:05d} mlx5_{h % 2}" lid 3 4xNDR'
              for h in range(hcas)]
    return "\n".join(lines + [""])


def test_a_switch_of_many_peers_and_a_leaf_of_many_nodes_are_linear():
    """A switch with 60,000 peers took 38 s (a list searched for every link); a leaf with
    30,000 nodes below it was quadratic the same way in the tree (a list searched for every
    node).  Correct on a small
    fabric, and the large one within a generous hang-detector bound."""
    import time

    small = fabric.parse(_wide_dump(3), "small")
    spine = small.switches[f"S-{1:016x}"]
    assert spine.peers == [f"S-{p + 2:016x}" for p in range(3)]  # each once, in order
    t = fabric.tree(small, {f"n{p:05d} mlx5_0": f"node-{p}" for p in range(2)})
    assert t["switches"][-1] == {"name": "spine", "level": 1, "nodes": [],
                                 "switches": ["leaf0", "leaf1", "leaf2"]}
    assert [s["nodes"] for s in t["switches"][:3]] == [["node-0"], ["node-1"], []]
    assert t["unmatched"] == ["n00002 mlx5_0"]
    leaf = fabric.tree(fabric.parse(_one_leaf_dump(6), "leaf"),
                       {f"n{h // 2:05d} mlx5_{h % 2}": f"node-{h // 2}" for h in range(6)})
    assert leaf["switches"] == [{"name": "leaf", "level": 0, "switches": [],
                                 "nodes": ["node-0", "node-1", "node-2"]}]

    n = 60_000
    wide, one_leaf = _wide_dump(n), _one_leaf_dump(n)
    start = time.process_time()
    fab = fabric.parse(wide, "wide")
    t = fabric.tree(fab, {f"n{p:05d} mlx5_0": f"node-{p}" for p in range(n)})
    assert len(fab.switches[f"S-{1:016x}"].peers) == n
    assert len(t["switches"]) == n + 1 and len(t["switches"][-1]["switches"]) == n
    leaf = fabric.tree(fabric.parse(one_leaf, "leaf"),
                       {f"n{h // 2:05d} mlx5_{h % 2}": f"node-{h // 2:05d}"
                        for h in range(n)})
    assert len(leaf["switches"][0]["nodes"]) == n // 2
    took = time.process_time() - start
    assert took < 20, took  # a hang detector: a few seconds here


def _sw(name, level, nodes=(), switches=()):
    return {"name": name, "level": level, "nodes": list(nodes), "switches": list(switches)}


def test_tree_switches_one_leaf_per_node_group_and_no_undefined_child():
    """Nodes hanging from different sets of leaves (one node cabled to only some rails) are
    groups of their own; a leaf of nobody is dropped with its spine; no child undefined."""
    from nvtopo.render.slurm import tree_switches

    fab = {"switches": [_sw("r0", 0, ["a", "b"]), _sw("r1", 0, ["a", "b"]),
                        _sw("r2", 0, ["a"]), _sw("stor", 0, []),
                        _sw("s0", 1, switches=["r0", "r1", "r2"]),
                        _sw("s1", 1, switches=["r0", "r1", "r2"]),
                        _sw("s2", 1, switches=["stor"]),
                        _sw("core", 2, switches=["s0", "s1", "s2"])]}
    out, notes = tree_switches(fab)
    # b hangs from r0 and r1, which hold a too: a leaf of its own name; a from all three,
    # r2 holding only a: named r2
    assert out == [("r0-g0", ["b"], None), ("r2", ["a"], None),
                   ("s0", None, ["r0-g0", "r2"]), ("core", None, ["s0"])]
    defined = {name for name, _n, _s in out}
    assert all(c in defined for _name, _n, below in out for c in below or [])
    placed = [n for _name, nodes, _s in out for n in nodes or []]
    assert sorted(placed) == ["a", "b"]  # each node under exactly one leaf
    text = "\n".join(notes)
    assert "dropped 1 leaf switch(es)" in text and "stor" in text
    assert "s0 stands for 2 switches" in text and "s2" in text


@pytest.mark.parametrize("sizes,want", [
    ([18, 18, 1], [18, 36]),   # a stray tray: its own block, not the base
    ([18, 17, 18, 18, 18], [18, 64 // 16 * 18]),  # 4 full racks
    ([4], [4]),
    ([2, 3], [3]),  # a tie: the larger
])
def test_block_sizes_keep_each_rack_a_block(sizes, want):
    from nvtopo.render.slurm import block_sizes

    assert block_sizes(sizes) == want
