"""``nvtopo cluster --format k8s-labels`` is built for ``xargs -L1 kubectl label node
--overwrite`` (docs/cluster.md §3): no comment lines, every node name a Kubernetes node name
(RFC 1123 DNS subdomain), every label key and value a Kubernetes label, and nothing a hostname
holds can become another argument.  The pipeline is run for real: ``xargs -L1`` with a fake
``kubectl`` that records the arguments it was given."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from cli_runner import make_runner
from nvtopo.cli import app
from nvtopo.layouts import load
from nvtopo.render import k8s
from nvtopo.simulate import fleet
from nvtopo.snapshot import dumps

runner = make_runner()

#: hostnames a snapshot may claim, none of which Kubernetes takes as a node name, or that aim
#: at another node through the pipeline
HOSTILE = [
    "GPU_Node01",                                   # '_' and upper case (Kubernetes refuses)
    "Upper-Node",                                   # upper case
    "node-00000 nvtopo.io/rails=99 ",               # words, a forged label, a trailing blank
    "it's-me",                                      # a quote: xargs stops at it
    'x"y',
    "back\\slash",
    "tab\there",
    "line\nnode-00000 nvtopo.io/rails=98",
    "-flag",
    "a..b",
    "a" * 254,
]


def _fake_kubectl(tmp_path):
    log = tmp_path / "argv.log"
    script = tmp_path / "kubectl"
    script.write_text(f"#!{sys.executable}\nimport json, sys\n"
                      f"with open({str(log)!r}, 'a') as f:\n"
                      "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, log


def _xargs(text, tmp_path):
    """``xargs -L1 kubectl label node --overwrite`` over ``text``: every kubectl call's
    arguments, and xargs' exit status and stderr."""
    kubectl, log = _fake_kubectl(tmp_path)
    p = subprocess.run(["xargs", "-L1", str(kubectl), "label", "node", "--overwrite"],
                       input=text, capture_output=True, text=True, timeout=60)
    calls = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    return calls, p.returncode, p.stderr


def _fleet(tmp_path, names):
    """A GB200 fleet of ``4 + len(names)`` nodes, the extra ones claiming ``names``."""
    n = 4 + len(names)
    p = fleet.plan(load("gb200-nvl72-tray"), n)
    d = tmp_path / "fleet"
    d.mkdir()
    for i in range(n):
        doc = fleet.node_document(p, i)
        if i >= 4:
            doc["host"]["hostname"] = names[i - 4]
        (d / f"n{i:02d}.json").write_text(dumps(doc))
    return d


def _one_node_per_line(calls):
    """Each call is ``label node --overwrite NODE key=value...``: exactly one argument without
    ``=`` after the fixed ones (kubectl takes every such argument as another node)."""
    for argv in calls:
        assert argv[:3] == ["label", "node", "--overwrite"], argv
        names = [a for a in argv[3:] if "=" not in a]
        assert names == [argv[3]], argv
    return {argv[3]: argv[4:] for argv in calls}


def test_the_pipeline_gives_each_valid_node_its_own_labels_and_nothing_else(tmp_path):
    d = _fleet(tmp_path, HOSTILE)
    res = runner.invoke(app, ["cluster", str(d), "-j", "1", "--format", "k8s-labels"])
    assert "Traceback" not in res.output
    assert not [x for x in res.stdout.splitlines() if x.startswith("#")]
    calls, rc, xerr = _xargs(res.stdout, tmp_path)
    assert rc == 0 and xerr == "", xerr
    assert len(calls) == len(res.stdout.splitlines())
    got = _one_node_per_line(calls)
    # exactly the four genuine nodes, each once, each with its own labels
    assert sorted(got) == [f"node-{i:05d}" for i in range(4)]
    for node, labels in got.items():
        keys = [x.split("=", 1)[0] for x in labels]
        assert keys == ["nvtopo.io/gpu.clique", "nvtopo.io/nvlink-domain", "nvtopo.io/rails",
                        "nvtopo.io/rail-rate-gbps"], labels
        assert "nvtopo.io/rails=4" in labels and "nvtopo.io/rail-rate-gbps=400" in labels
        assert not any(x.startswith("nvidia.com/") for x in labels)  # GFD's prefix
    domain = dict(x.split("=", 1) for x in got["node-00000"])["nvtopo.io/nvlink-domain"]
    assert dict(x.split("=", 1) for x in got["node-00000"])["nvtopo.io/gpu.clique"] == \
        f"{domain}.1"
    # every hostile name is refused, named on stderr (escaped, one line each), exit 1
    assert res.exit_code == 1, res.output
    refused = [x for x in res.stderr.splitlines() if "refused node" in x]
    assert len(refused) == len(HOSTILE), res.stderr
    assert "GPU_Node01" in res.stderr and "Upper-Node" in res.stderr
    assert "\t" not in res.stderr and "'tab\\there'" in res.stderr


def test_a_name_two_snapshots_claim_is_refused_for_both(tmp_path):
    """A snapshot claiming another node's name would put its labels on that node (the later
    line wins): both are refused."""
    d = _fleet(tmp_path, ["node-00001"])
    res = runner.invoke(app, ["cluster", str(d), "-j", "1", "--format", "k8s-labels"])
    calls, rc, _ = _xargs(res.stdout, tmp_path)
    got = _one_node_per_line(calls)
    assert sorted(got) == ["node-00000", "node-00002", "node-00003"]
    assert res.exit_code == 1
    assert "node-00001" in res.stderr and "2 snapshots" in res.stderr


def test_a_clean_fleet_writes_every_node_and_exits_0(tmp_path):
    d = _fleet(tmp_path, [])
    out = tmp_path / "labels.txt"
    res = runner.invoke(app, ["cluster", str(d), "-j", "1", "--format", "k8s-labels",
                              "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "refused" not in res.stderr
    calls, rc, _ = _xargs(out.read_text(), tmp_path)
    assert sorted(_one_node_per_line(calls)) == [f"node-{i:05d}" for i in range(4)]


@pytest.mark.parametrize("name", [
    "a", "node-01", "gpu01.rack7.example.com", "0", "a-b.c-d", "x" * 63,
    ".".join(["a" * 63] * 3) + "." + "b" * 61,  # 253 characters
])
def test_valid_node_names(name):
    assert k8s.node_name_problem(name) is None


@pytest.mark.parametrize("name", [
    "", "GPU_Node01", "Node01", "node_01", "-a", "a-", ".a", "a.", "a..b", "a.-b", "a-.b",
    "a b", "a'b", 'a"b', "a\\b", "a\nb", "a\tb", "a=b", "a/b", "né", "a" * 254, None, 7,
])
def test_invalid_node_names(name):
    assert k8s.node_name_problem(name)


@pytest.mark.parametrize("value", ["", "a", "A_b.c-D9", "x" * 63, "400", "12.5",
                                   "a1b2c3d4-0000-4000-8000-000000000001.7"])
def test_valid_label_values(value):
    assert k8s.label_value_problem(value) is None


@pytest.mark.parametrize("value", ["x" * 64, "-a", "a-", "_a", "a b", "a/b", "a=b", "a'b",
                                   "é", "a\n", None])
def test_invalid_label_values(value):
    assert k8s.label_value_problem(value)


def test_label_keys_are_valid_and_not_nvidias():
    for key in k8s.LABEL_KEYS:
        assert k8s.label_key_problem(key) is None, key
        assert key.startswith(k8s.PREFIX)
    assert k8s.PREFIX == "nvtopo.io/"
    assert not any(key.startswith("nvidia.com/") for key in k8s.LABEL_KEYS)
    for bad in ("kubernetes.io/x", "node.kubernetes.io/x", "Nvtopo.io/x", "nvtopo.io/",
                "nvtopo.io/" + "x" * 64, "a/b/c", "/x", "nvtopo.io/-x"):
        assert k8s.label_key_problem(bad), bad


def test_rows_are_refused_with_a_reason_and_no_line():
    rows = [
        {"name": "ok-1", "hostname": "ok-1", "engine_name": None, "domain": "u", "clique": 1,
         "rails": 1, "rail_rate_gbps": 400},
        # no engine name and no hostname: the file name is not a node name
        {"name": "x.json", "hostname": None, "engine_name": None, "domain": None,
         "clique": None, "rails": 0, "rail_rate_gbps": None},
        # a value that is no label value: the node is refused, never labelled in part
        {"name": "ok-2", "hostname": "ok-2", "engine_name": None,
         "domain": "u" * 70, "clique": 1, "rails": 1, "rail_rate_gbps": None},
        # the engine's name is the node name when there is one
        {"name": "eng-3", "hostname": "Host_3", "engine_name": "eng-3", "domain": None,
         "clique": None, "rails": 2, "rail_rate_gbps": 12.5},
    ]
    lines, refused = k8s.labels({"node_rows": rows})
    assert lines == ["ok-1 nvtopo.io/gpu.clique=u.1 nvtopo.io/nvlink-domain=u "
                     "nvtopo.io/rails=1 nvtopo.io/rail-rate-gbps=400",
                     "eng-3 nvtopo.io/rails=2 nvtopo.io/rail-rate-gbps=12.5"]
    assert len(refused) == 2
    assert "x.json" in refused[0] and "no node name" in refused[0]
    assert "ok-2" in refused[1] and "63" in refused[1]


def test_every_written_line_is_of_the_pipeline_alphabet():
    """Whatever the rows hold, a written line is words of ``[A-Za-z0-9._/=-]`` separated by
    one space, with no blank at its end (xargs joins a line ending in a blank to the next)."""
    import random

    rnd = random.Random(21)
    alphabet = "aZ09-_./= '\"\\\t\n\x00é#"
    rows = []
    for i in range(400):
        word = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12)))
        rows.append({"name": word, "hostname": word, "engine_name": None,
                     "domain": rnd.choice([word, "u", None]), "clique": rnd.choice([1, None]),
                     "rails": rnd.randint(0, 8), "rail_rate_gbps": rnd.choice([400, word, None])})
    lines, refused = k8s.labels({"node_rows": rows})
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=")
    assert lines and refused
    for line in lines:
        words = line.split(" ")
        assert all(w and set(w) <= allowed for w in words), line
        assert "=" not in words[0] and all("=" in w for w in words[1:]), line
        assert k8s.node_name_problem(words[0]) is None
    names = [x.split(" ")[0] for x in lines]
    assert len(names) == len(set(names))


def test_docs_name_the_prefix():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "cluster.md"), encoding="utf-8") as f:
        doc = f.read()
    assert "nvtopo.io/gpu.clique" in doc and "nvidia.com/gpu.clique=" not in doc


def _node_ok(item):
    """A partial Node of the apply body: name and labels only, each one Kubernetes takes."""
    assert item["apiVersion"] == "v1" and item["kind"] == "Node", item
    assert set(item) == {"apiVersion", "kind", "metadata"}
    assert set(item["metadata"]) == {"name", "labels"}
    assert k8s.node_name_problem(item["metadata"]["name"]) is None
    for key, value in item["metadata"]["labels"].items():
        assert k8s.label_key_problem(key) is None, key
        assert k8s.label_value_problem(value) is None, (key, value)


def test_k8s_json_is_an_apply_body_that_refuses_what_labels_refuse(tmp_path):
    d = _fleet(tmp_path, HOSTILE)
    res = runner.invoke(app, ["cluster", str(d), "-j", "1", "--format", "k8s-json"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    body = json.loads(res.stdout)
    assert body["apiVersion"] == "v1" and body["kind"] == "List"
    for item in body["items"]:
        _node_ok(item)
    assert [i["metadata"]["name"] for i in body["items"]] == [f"node-{i:05d}" for i in range(4)]
    labels = body["items"][0]["metadata"]["labels"]
    assert labels["nvtopo.io/rails"] == "4" and labels["nvtopo.io/rail-rate-gbps"] == "400"
    assert len([x for x in res.stderr.splitlines() if "refused node" in x]) == len(HOSTILE)


def test_tier_labels_follow_the_tree_slurm_is_given_and_kueue_reads_them(tmp_path):
    """A rail-optimised fabric (every node on 8 rail leaves): one leaf per node group, as in
    topology.conf; the Kueue Topology lists the levels broadest first."""
    from pathlib import Path

    dump = Path(__file__).resolve().parent.parent / "fixtures" / "ibnetdiscover" / \
        "ibsim-rail-optimised.txt"
    d = tmp_path / "fleet"
    list(fleet.write(fleet.plan(load("dgx-h100"), 4), str(d)))
    res = runner.invoke(app, ["cluster", str(d), "-j", "1", "--format", "k8s-json",
                              "--fabric", str(dump), "--tier-labels", "topograph"])
    assert res.exit_code == 0, res.output
    items = json.loads(res.stdout)["items"]
    for item in items[:-1]:
        _node_ok(item)
    tiers = {i["metadata"]["name"]: {k.rpartition("/")[2]: v for k, v in
                                     i["metadata"]["labels"].items()
                                     if k.startswith("network.topology.nvidia.com/")}
             for i in items[:-1]}
    assert tiers["node-00001"] == {"leaf": "su0-rail0", "spine": "spine0"}
    assert tiers["node-00002"] == {"leaf": "su1-rail0", "spine": "spine0"}
    assert items[-1] == {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology",
                         "metadata": {"name": "nvtopo"}, "spec": {"levels": [
                             {"nodeLabel": "network.topology.nvidia.com/spine"},
                             {"nodeLabel": "network.topology.nvidia.com/leaf"},
                             {"nodeLabel": "kubernetes.io/hostname"}]}}  # no NVLink domain
    res = runner.invoke(app, ["cluster", str(d), "-j", "1", "--format", "k8s-labels",
                              "--fabric", str(dump), "--tier-labels", "topograph-v1"])
    calls, rc, _ = _xargs(res.stdout, tmp_path)
    got = _one_node_per_line(calls)
    assert "fabric.topograph.run/tier-0=su0-rail0" in got["node-00000"]
    assert "fabric.topograph.run/tier-1=spine0" in got["node-00000"]


def test_the_nvlink_domain_tier_is_gfds_clique_value(tmp_path):
    d = _fleet(tmp_path, [])
    res = runner.invoke(app, ["cluster", str(d), "-j", "1", "--format", "k8s-json",
                              "--tier-labels", "topograph"])
    items = json.loads(res.stdout)["items"]
    labels = items[0]["metadata"]["labels"]
    assert labels["network.topology.nvidia.com/accelerator"] == labels["nvtopo.io/gpu.clique"]
    assert [lv["nodeLabel"] for lv in items[-1]["spec"]["levels"]] == [
        "network.topology.nvidia.com/accelerator", "kubernetes.io/hostname"]
