"""Every Slurm topology form ``nvtopo cluster`` writes, for the fleets that broke it (a partial
collection, a storage-only leaf, a rail-optimised fabric, a tray outside its rack), loaded
into every real slurmctld this machine can start: the installed one (Debian 12: 22.05) and a
Debian 13 chroot's (24.11) and a Debian unstable one's (26.05) where .ci/run made them.  munged and ``slurmctld -D`` only, no
slurmd: the topology is read when slurmctld starts; ``scontrol show topology`` then answers, or
slurmctld has stopped with ``fatal:``.  The fabrics are real ``ibnetdiscover`` output of ibsim
(fixtures/ibnetdiscover/README.md).  A form no Slurm here can load (block: 23.11,
topology.yaml: 25.05) is checked by its grammar and the load skipped, naming the version it
needs.  Skipped without Slurm or root (``NVTOPO_REQUIRE_ENGINES=slurm`` makes that a
failure)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

import collect_harness as H
from test_cluster_slurm_real import _switches
from nvtopo.commands import cluster
from nvtopo.layouts import load
from nvtopo.render import slurm
from nvtopo.simulate import fleet

IB = Path(__file__).resolve().parent.parent / "fixtures" / "ibnetdiscover"


#: Newer Slurms in Debian chroots, where .ci/run made them (``debootstrap --variant=minbase
#: --include=slurmctld,slurm-client,munge SUITE DIR``): Debian 13's 24.11 and unstable's
#: (26.05 when written); NVTOPO_SLURM_CHROOT names others (colon-separated).
CHROOTS = os.environ.get("NVTOPO_SLURM_CHROOT",
                         "/var/tmp/nvtopo-slurm-trixie:/var/tmp/nvtopo-slurm-sid").split(":")


def slurms():
    """The Slurms this machine can start: "/" (the installed one) and the chroot, each where
    its slurmctld, scontrol and munged exist and this is root."""
    out = []
    if H.slurm_missing() is None:
        out.append("/")
    for root in map(Path, filter(None, CHROOTS)):
        if os.geteuid() == 0 and all((root / p).exists() for p in (
                "usr/sbin/slurmctld", "usr/bin/scontrol", "usr/sbin/munged",
                "etc/munge/munge.key")):
            out.append(str(root))
    return out


def _in(root, argv):
    return argv if root == "/" else ["chroot", root] + argv


def version(root):
    """(major, minor) of the slurmctld under ``root``."""
    out = subprocess.run(_in(root, ["/usr/sbin/slurmctld", "-V"]), capture_output=True,
                         text=True, timeout=20).stdout.split()
    return tuple(int(x) for x in out[-1].split(".")[:2])


def shown(v):
    return f"{v[0]}.{v[1]:02d}"


def _conf(base, inside, plugin, nodes):
    host = socket.gethostname()
    port = H._free_ports(1)[0]
    lines = [
        "ClusterName=nvtopotest", f"SlurmctldHost={host}(127.0.0.1)", f"SlurmctldPort={port}",
        "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge", "CredType=cred/munge",
        f"AuthInfo=socket={inside}/munge.sock", f"StateSaveLocation={inside}/state",
        f"SlurmdSpoolDir={inside}/spool", f"SlurmctldPidFile={inside}/slurmctld.pid",
        f"SlurmctldLogFile={inside}/slurmctld.log", "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none", "SchedulerType=sched/builtin", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU", "MpiDefault=none", "MailProg=/bin/true",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        f"TopologyPlugin={plugin}",
        f"NodeName={slurm.hostlist(nodes)} NodeHostname={host} NodeAddr=127.0.0.1 CPUs=2 "
        "State=UNKNOWN",
        "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP"]
    (base / "slurm.conf").write_text("\n".join(lines) + "\n", encoding="utf-8")


def start_ctld(root, files, plugin, nodes, also=()):
    """Start munged and ``slurmctld -D`` under ``root`` with ``files`` (name -> text) beside
    slurm.conf; (slurmctld still running, ``scontrol show topology`` and then that of each
    topology named in ``also``, its log)."""
    base = Path(tempfile.mkdtemp(prefix="nvtopo-slurm-", dir=str(Path(root) / "tmp")))
    inside = "/" + str(base.relative_to(root)) if root != "/" else str(base)
    base.chmod(0o755)
    for d in ("state", "spool"):
        (base / d).mkdir()
    _conf(base, inside, plugin, nodes)
    for name, text in files.items():
        (base / name).write_text(text, encoding="utf-8")
    env = dict(os.environ, SLURM_CONF=f"{inside}/slurm.conf")
    procs = []
    try:
        procs.append(_start(root, base, "munged", [
            "/usr/sbin/munged", "-F", "-f", f"--socket={inside}/munge.sock",
            "--key-file=/etc/munge/munge.key", f"--log-file={inside}/munged.log",
            f"--pid-file={inside}/munged.pid", f"--seed-file={inside}/munged.seed"], env))
        H._wait_for(lambda: (base / "munge.sock").exists(), 10, "munged's socket")
        ctld = _start(root, base, "slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f",
                                                f"{inside}/slurm.conf"], env)
        procs.append(ctld)
        ask = _in(root, ["scontrol", "show", "topology"])
        H._wait_for(lambda: ctld.poll() is not None or subprocess.run(
            ask, env=env, capture_output=True, timeout=20).returncode == 0, 40, "slurmctld")
        alive = ctld.poll() is None
        topo = "".join(subprocess.run(ask + extra, env=env, capture_output=True, text=True,
                                      timeout=20).stdout for extra in [[]] + [[a] for a in also]
                       ) if alive else ""
    finally:
        _stop(procs)
    log = "".join((base / f).read_text(errors="replace") for f in
                  ("slurmctld.log", "slurmctld.out") if (base / f).exists())
    shutil.rmtree(base, ignore_errors=True)
    return alive, topo, log


def _start(root, base, name, argv, env):
    with open(base / f"{name}.out", "wb") as log:
        return subprocess.Popen(_in(root, argv), stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _stop(procs):
    for p in reversed(procs):
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


def _any_slurm():
    found = slurms()
    if not found:
        H.skip_or_fail("slurm", H.slurm_missing() or "no Slurm to start")
    return found


def load_tree(conf, nodes):
    """Load into every Slurm here: [(version, alive, shown, log)]."""
    return [(version(r),) + start_ctld(r, {"topology.conf": conf}, "topology/tree", nodes)
            for r in _any_slurm()]


def _doc(tmp_path, layout, count, dump=None, keep=None):
    snaps = tmp_path / "fleet"
    list(fleet.write(fleet.plan(load(layout), count), str(snaps)))
    if keep is not None:
        for f in snaps.iterdir():
            if f.name.endswith(".json") and f.name[:-5] not in keep:
                f.unlink()
    fab = str(IB / dump) if dump else None
    return cluster.document(cluster.run([str(snaps)], jobs=1, fabric=fab))


def _assert_loads(conf, nodes):
    """``conf`` loads into every Slurm here: slurmctld keeps running, logs no switch or
    topology error, shows our switches; {version: its switches}."""
    out = {}
    for v, alive, topo, log in load_tree(conf, nodes):
        assert alive, (shown(v), log[-2000:])
        bad = [x for x in log.splitlines() if "error" in x.lower() and
               ("switch" in x.lower() or "topology" in x.lower())]
        assert not bad, (shown(v), bad)
        theirs = _switches(topo)
        ours = _switches(conf)
        assert set(theirs) == set(ours), (shown(v), topo)
        for name, (leaf_nodes, _below) in ours.items():
            if leaf_nodes is not None:
                assert theirs[name][0] == leaf_nodes, (shown(v), topo)
        out[v] = theirs
    print("tree form loaded into Slurm " + ", ".join(shown(v) for v in out))
    return out


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
    for v, theirs in _assert_loads(conf, nodes).items():
        top = [t for k, t in theirs.items() if want[k][1] is not None]
        assert top[0][0] == slurm.hostlist(nodes), shown(v)  # the top reaches every node


@pytest.mark.parametrize("conf,says", [
    ("SwitchName=leaf0 Nodes=node-[00000-00001]\nSwitchName=spine0 Switches=leaf[0-1]\n",
     "invalid child"),
    ("SwitchName=a Nodes=node-[00000-00001]\nSwitchName=b Nodes=node-[00000-00001]\n"
     "SwitchName=s Switches=a,b\n", "Multiple leaf switches"),
])
def test_the_loader_sees_what_slurm_refuses(conf, says):
    """The files nvtopo wrote before (issue 26): the check above would have caught them."""
    for v, alive, _topo, log in load_tree(conf, ["node-00000", "node-00001"]):
        assert says in log, (shown(v), log[-2000:])  # an error, or a warning from 26.05 on
        if says == "invalid child":
            assert not alive and "fatal" in log, shown(v)


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


def _stray_doc(tmp_path):
    """Two GB200 NVL72 racks of 18 trays and one tray outside its rack (its own domain)."""
    doc = _doc(tmp_path, "gb200-nvl72-tray", 37)
    assert sorted(len(d["nodes"]) for d in doc["domains"]) == [1, 18, 18], doc["domains"]
    return doc


def _newer(since):
    """The Slurms here of version ``since`` or later; skip, naming the version, if none."""
    need = tuple(int(x) for x in since.split("."))
    roots = [r for r in slurms() if version(r) >= need]
    if not roots:
        have = ", ".join(shown(version(r)) for r in slurms()) or "none"
        pytest.skip(f"needs Slurm {since} or later; this machine has {have} (set "
                    "NVTOPO_SLURM_CHROOT to a Debian chroot with a newer slurmctld, as .ci/run "
                    "makes): checked by its grammar only")
    return roots


def test_the_block_form_of_a_fleet_with_a_stray_tray(tmp_path):
    doc = _stray_doc(tmp_path)
    conf = slurm.slurm_block(doc)
    words = [x for x in conf.splitlines() if not x.startswith("#")]
    assert words == ["BlockName=block000 Nodes=node-[00000-00017]",
                     "BlockName=block001 Nodes=node-[00018-00035]", "BlockSizes=18,36"]
    assert "(node-00036) has 1 node(s), fewer than the base block size 18: left out" in conf
    nodes = [f"node-{i:05d}" for i in range(37)]
    for root in _newer(slurm.SINCE["block"]):
        alive, topo, log = start_ctld(root, {"topology.conf": conf}, "topology/block", nodes)
        assert alive, log[-2000:]
        assert "AggregatedBlock=block[000-001]" in topo and "BlockSize=36" in topo, topo
        assert "blocks lack access to 1 nodes: node-00036" in log.lower(), log[-2000:]
        print(f"block form loaded into Slurm {shown(version(root))}")


def test_a_block_smaller_than_the_base_stops_slurm_24_11(tmp_path):
    """Why a stray tray is left out of the blocks: Slurm 24.11 stops on it (26.05 takes it)."""
    conf = ("BlockName=b0 Nodes=node-[00000-00017]\nBlockName=b1 Nodes=node-00018\n"
            "BlockSizes=18\n")
    for root in _newer(slurm.SINCE["block"]):
        alive, topo, log = start_ctld(root, {"topology.conf": conf}, "topology/block",
                                      [f"node-{i:05d}" for i in range(19)])
        if version(root) < (25, 0):
            assert not alive and "children count lower than bblock_node_cnt" in log, \
                log[-2000:]
        else:
            assert alive and "BlockName=b1" in topo, (shown(version(root)), log[-2000:])


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
    assert [b["block"] for b in topos[1]["block"]["blocks"]] == ["block000", "block001"]
    assert all(set(s) in ({"switch", "nodes"}, {"switch", "children"})
               for s in topos[0]["tree"]["switches"])
    for root in _newer(slurm.SINCE["yaml"]):
        alive, topo, log = start_ctld(root, {"topology.yaml": text}, "topology/tree",
                                      [f"node-{i:05d}" for i in range(37)], also=["nvlink"])
        assert alive, log[-2000:]
        # the default (the tree) and, named, the blocks: both topologies loaded
        assert "SwitchName=spine0" in topo and "Switches=leaf[0-1]" in topo, topo
        assert "AggregatedBlock=block[000-001]" in topo and "BlockSize=36" in topo, topo
        print(f"topology.yaml loaded into Slurm {shown(version(root))}")
