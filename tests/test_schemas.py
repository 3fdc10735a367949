"""Every JSON document nvtopo writes matches its JSON Schema (docs/schemas/), and every
schema rejects a document that breaks it.

The documents are the real output of the commands on every fixture input: the topo
corpus, pasted nvidia-smi nvlink/-q text, the NVML fixture machines recorded into
snapshots, the sysfs fixture trees, and simulated snapshots of every bundled layout,
healthy and with each fault kind.  (Every other CLI test validates its documents too,
through ``cli_runner.make_runner``.)
"""

from __future__ import annotations

import copy
import functools
import json
import re
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import typer
from cli_runner import make_runner

import nvml_fake as F
import schema_check as S
import sysfs_trees
from nvtopo import layouts
from nvtopo.cli import app
from nvtopo.model import Topology
from nvtopo.probes import ProbeOptions
from nvtopo.probes import host as host_probe
from nvtopo.probes import sysfs as sysfs_probe
from nvtopo.simulate import FAULT_KINDS, build
from nvtopo.simulate.faults import moved_gpus

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = sorted((FIXTURES / "topo-corpus").glob("*.txt"))
NVML_TEXT = sorted((FIXTURES / "nvml-text").glob("*.txt"))
NVML_MACHINES = list(F.machines())
#: NVML fixture machines without a usable NVML (nothing to show or check).
NO_NVML = ("driver-not-loaded", "no-nvml")
SYSFS_TREES = sorted(p.stem for p in (FIXTURES / "sysfs").glob("*.sysfs"))
LAYOUTS = layouts.names()
SEED = 5

runner = make_runner(check_schemas=False)  # this module validates explicitly


@pytest.fixture(autouse=True)
def no_nvidia_smi(monkeypatch):
    """Live probing (--sysfs-root, snapshot) must not depend on this machine's GPUs."""
    import nvtopo.probes.topo.live as tt

    monkeypatch.setattr(tt.shutil, "which", lambda name: None)


def run(*args: Any, expect: Tuple[int, ...] = (0, 1)) -> Any:
    argv = [str(a) for a in args]
    r = runner.invoke(app, argv, env={"COLUMNS": "200"})
    assert r.exit_code in expect, (argv, r.exit_code, r.stdout[-1500:], r.stderr[-1500:])
    return r


def document(name: str, *args: Any) -> Any:
    """Run a command that prints one JSON document; return it, validated against ``name``."""
    r = run(*args)
    doc = json.loads(r.stdout)
    S.validate(doc, name, what="nvtopo " + " ".join(map(str, args)))
    return doc


def refused(*args: Any) -> str:
    """A command that does not apply to the input: exit 2, one line on stderr, no document."""
    r = run(*args, expect=(2,))
    assert r.stdout == "", args
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nvtopo: error: "), (args, r.stderr)
    return lines[0]


def every_command(path: Any, checked: bool = True, links: bool = True, ib: bool = True,
                  resnapshot: bool = True) -> Dict[str, Any]:
    """show, check, layouts capture, snapshot --from, links and ib on one input.

    ``checked``/``links``/``ib`` say whether the input has GPU facts, NVLink evidence and
    sysfs evidence: a command without its evidence must refuse (exit 2, one line), the
    others must print a document that matches its schema.  ``resnapshot=False`` leaves
    out ``snapshot --from`` (for a simulated snapshot, already validated as written)."""
    out: Dict[str, Any] = {}
    if resnapshot:
        out["snapshot"] = document("snapshot", "snapshot", "--from", path)
    if checked:
        out["show"] = document("model", "show", "--from", path, "--format", "json")
        out["check"] = document("check", "check", "--from", path, "--format", "json")
        out["capture"] = document("layout", "layouts", "capture", "--from", path)
    else:
        assert "nothing to show" in refused("show", "--from", path, "--format", "json")
        refused("check", "--from", path, "--format", "json")
    if links:
        out["links"] = document("links", "links", "--from", path, "--format", "json")
    else:
        assert "no NVLink evidence" in refused("links", "--from", path, "--format", "json")
    if ib:
        out["ib"] = document("ib", "ib", "--from", path, "--format", "json")
    else:
        assert "no sysfs evidence" in refused("ib", "--from", path, "--format", "json")
    return out


def gpu_count(model: Dict[str, Any]) -> int:
    return len(model["gpus"])


# --- the schemas themselves ---------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(S.SCHEMAS))
def test_schema_is_a_valid_draft_2020_12_schema(name):
    doc = S.schema(name)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["$id"] == S.ID_BASE + S.SCHEMAS[name]  # references resolve against it
    S.validator(name)  # check_schema() inside: raises on an invalid schema


def _refs(node: Any) -> List[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [
            r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


@pytest.mark.parametrize("name", sorted(S.SCHEMAS))
def test_every_reference_resolves_within_docs_schemas(name):
    """References name a schema file of docs/schemas and a JSON pointer in it (a typo in a
    branch no document takes would otherwise go unnoticed: references resolve lazily)."""
    files = set(S.SCHEMAS.values())
    refs = _refs(S.schema(name))
    assert refs
    for ref in refs:
        target, _, pointer = ref.partition("#")
        doc = S.schema(name) if not target else None
        if target:
            assert target in files, f"{name}: {ref} names no file of docs/schemas"
            doc = S.schema(next(n for n, f in S.SCHEMAS.items() if f == target))
        assert pointer.startswith("/"), ref
        for part in pointer[1:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            assert isinstance(doc, dict) and part in doc, f"{name}: {ref} does not resolve"
            doc = doc[part]


def test_json_md_documents_every_schema_and_top_level_key():
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    for name, file in S.SCHEMAS.items():
        assert f"docs/schemas/{file}" in text, file
        props = S.schema(name).get("properties") or S.schema(name).get("items", {}).get(
            "properties", {})
        if name == "model":
            props = S.schema(name)["$defs"]["model"]["properties"]
        for key in props:
            assert f"`{key}`" in text, f"{file}: top-level key {key!r} not in docs/json.md"
    # no links outside the repository (the schemas' $id is an identifier, not a link)
    text = text.replace(S.ID_BASE, "")
    assert "http://" not in text and "https://" not in text


# --- layouts ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", LAYOUTS)
def test_bundled_layout_file_and_layouts_show(name):
    path = ROOT / "nvtopo" / "layouts" / f"{name}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    S.validate(data, "layout", what=str(path))
    shown = document("layout", "layouts", "show", name)
    assert shown == data
    again = document("layout", "layouts", "show", "--layout-file", path)
    assert again == data


def test_layouts_list():
    rows = document("layouts", "layouts", "--format", "json")
    assert [r["name"] for r in rows] == LAYOUTS
    h100 = next(r for r in rows if r["name"] == "dgx-h100")
    assert (h100["gpus"], h100["nvlink"], h100["nics"]) == (8, "NV18 (NVSwitch)", "8x 400G IB")


# --- the fixture inputs ---------------------------------------------------------------------


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem[:40])
def test_topo_corpus(path):
    out = every_command(path, links=False, ib=False)
    assert out["show"]["origin"] == {"kind": "topo-text", "file": str(path)}
    assert out["show"]["sources"] == ["topo-text"]
    assert out["snapshot"]["imported_from"] == str(path)
    cached = Topology.from_rows(out["snapshot"]["derived"]["rows"]).to_dict()
    assert cached["gpus"] == out["show"]["gpus"]
    assert out["capture"]["gpus"]["count"] == gpu_count(out["show"])


@pytest.mark.parametrize("path", NVML_TEXT, ids=lambda p: p.stem[:40])
def test_pasted_nvidia_smi_text(path):
    out = every_command(path, ib=False)
    assert out["show"]["origin"]["kind"] == "nvml-text"
    assert out["snapshot"]["probes"]["nvml"]["source"] == "nvml-text"
    assert {g["source"] for g in out["links"]["gpus"]} == {"nvml-text"}
    assert len(out["links"]["gpus"]) == gpu_count(out["show"])


@pytest.fixture(scope="module")
def nvml_snapshots(tmp_path_factory):
    """The NVML fixture machines recorded by the real probe into snapshot files."""
    d = tmp_path_factory.mktemp("nvml")
    out = {}
    for m in NVML_MACHINES:
        doc = F.snapshot_doc(m)
        S.validate(doc, "snapshot", what=f"the recording of fixtures/nvml/{m}.json")
        out[m] = d / f"{m}.json"
        out[m].write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize("machine", NVML_MACHINES)
def test_nvml_recordings(machine, nvml_snapshots):
    path = nvml_snapshots[machine]
    usable = machine not in NO_NVML
    out = every_command(path, checked=usable, links=usable, ib=False)
    assert out["snapshot"]["probes"]["nvml"]["evidence_version"] == 1
    if usable:
        nvml_gpus = [g for g in out["show"]["gpus"] if "nvml" in g["extra"]]
        assert nvml_gpus and len(out["links"]["gpus"]) == len(nvml_gpus)
        assert out["show"]["extra"]["nvml"]["status"] == "ok"


def test_nvml_probe_that_ran_out_of_time(tmp_path):
    """A hung NVML call: status timeout, the pending call, the GPU's fault, incomplete."""
    desc = F.load_machine("dgx-a100")
    desc["hang"] = ["nvmlDeviceGetNvLinkRemotePciInfo(gpu2,3)"]
    doc = {"kind": "nvtopo-snapshot", "schema_version": 1, "nvtopo_version": "0.1.0",
           "host": {"hostname": "hung"}, "probes": {"nvml": F.record(desc, timeout=0.5)}}
    S.validate(doc, "snapshot", what="a timed-out NVML recording")
    assert doc["probes"]["nvml"]["pending"]["call"] == "nvmlDeviceGetNvLinkRemotePciInfo(gpu2,3)"
    path = tmp_path / "hung.json"
    path.write_text(json.dumps(doc))
    out = every_command(path, ib=False)
    assert out["links"]["incomplete"] == {"call": "nvmlDeviceGetNvLinkRemotePciInfo(gpu2,3)",
                                          "gpu": 2}
    fault = out["show"]["gpus"][2]["extra"]["nvml"]["fault"]
    assert fault["kind"] == "timeout"


@pytest.mark.parametrize("tree", SYSFS_TREES)
def test_sysfs_trees(tree, tmp_path):
    root = sysfs_trees.tree(tree)[0]
    snap = document("snapshot", "snapshot", "--sysfs-root", root)
    assert snap["probes"]["sysfs"]["status"] == "ok"
    assert snap["probes"]["host"]["status"] == "skipped"  # another machine's tree
    live_ib = document("ib", "ib", "--sysfs-root", root, "--format", "json")
    live_show = document("model", "show", "--sysfs-root", root, "--format", "json")
    document("check", "check", "--sysfs-root", root, "--format", "json")
    assert live_show["origin"] == {"kind": "live", "sysfs_root": root}
    path = tmp_path / f"{tree}.json"
    path.write_text(json.dumps(snap))
    out = every_command(path, checked=bool(live_show["gpus"]), links=False)
    assert out["ib"]["hcas"] == live_ib["hcas"]
    assert len(out["ib"]["hcas"]) == len([n for n in live_show["nics"] if "sysfs" in n["extra"]])


def test_sysfs_with_host_facts_and_a_timed_out_read(tmp_path):
    """Evidence the fixture trees alone do not give: the host probe's psutil facts (model
    extra.host, ib's netdev_stats) and a sysfs probe that ran out of time (pending)."""
    root, faults = sysfs_trees.tree("roce-bond")

    def slow(path):  # a struggling HCA: counters take long to read
        if "/counters/" in path or "/hw_counters/" in path:
            time.sleep(0.05)
        return sysfs_probe.read_file(path)

    ev = sysfs_probe.capture(ProbeOptions(sysfs_root=root, timeout=0.3), faults=faults,
                             reader=slow)
    ev = json.loads(json.dumps(ev))
    assert ev["status"] == "timeout"
    host = host_probe.capture(ProbeOptions())
    assert host["status"] == "ok"
    netdevs = {p["netdev"] for n in sysfs_probe.derive(ev).nics
               for p in n.sysfs.to_dict()["ports"] if p["netdev"]}
    assert netdevs
    host["net_if"].update({nd: {"up": True, "speed_mbps": 100000, "mtu": 9000}
                           for nd in netdevs})
    doc = {"kind": "nvtopo-snapshot", "schema_version": 1, "nvtopo_version": "0.1.0",
           "host": {"hostname": "n1"}, "probes": {"sysfs": ev, "host": host}}
    S.validate(doc, "snapshot", what="sysfs (timed out) and host evidence")
    path = tmp_path / "n1.json"
    path.write_text(json.dumps(doc))
    out = every_command(path, links=False)
    assert set(out["show"]["extra"]["host"]["net_if"]) >= netdevs
    stats = [p["netdev_stats"] for h in out["ib"]["hcas"] for p in h["ports"]
             if p["netdev_stats"] is not None]
    assert stats and all(s["source"] == "psutil" for s in stats)
    assert any(n["code"] == "sysfs.timeout" for n in out["ib"]["notes"])


def test_live_snapshot_of_this_machine():
    """No nvidia-smi, whatever NVML and /sys this machine has: still a valid snapshot."""
    snap = document("snapshot", "snapshot", "--timeout", "5")
    assert snap["probes"]["topo-text"]["status"] == "missing"
    assert snap["probes"]["host"]["status"] in ("ok", "missing", "failed")


# --- simulated nodes ----------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def fault_specs(name: str) -> Dict[str, str]:
    """One spec per fault kind that applies to a healthy node of the layout."""
    lay = layouts.load(name)
    m = build(lay, seed=SEED)
    gpus = sorted(m.gpus, key=lambda g: g.ident)
    compute = [n for n in m.nics_in_order() if n.role == "compute"]
    out: Dict[str, str] = {}
    linked = [g for g in gpus if g.links]
    if linked:
        out["nvlink-down"] = f"nvlink-down:GPU{linked[-1].ident}:{linked[-1].links[-1].index}"
    pairs = [(a, b) for a in gpus for b in gpus
             if a.ident < b.ident and m.topo_pair_count(a, b) > 0]
    if pairs:
        out["nvlink-degraded"] = f"nvlink-degraded:GPU{pairs[0][0].ident}-GPU{pairs[0][1].ident}"
    if len(gpus) > 1:
        out["gpu-missing"] = f"gpu-missing:GPU{gpus[-1].ident}"
    wide = [g for g in gpus if g.pcie_max_width > 1]
    if wide:
        out["pcie-width"] = f"pcie-width:GPU{wide[0].ident}:{wide[0].pcie_max_width // 2}"
    fast = [g for g in gpus if g.pcie_max_gen > 1]
    if fast:
        out["pcie-gen"] = f"pcie-gen:GPU{fast[0].ident}:{fast[0].pcie_max_gen - 1}"
    if compute:
        n = compute[0]
        low = {800: 400, 400: 200, 200: 100, 100: 56}.get(int(n.port.rate_gbps),
                                                           n.port.rate_gbps / 2)
        out["ib-port-down"] = f"ib-port-down:{n.name}"
        out["ib-rate"] = f"ib-rate:{n.name}:{low:g}"
        out["counters"] = f"counters:{n.name}:symbol_error=1000"
        out["nic-rename"] = f"nic-rename:{n.name}:ibp12s0"
        if len(m.pci[n.bdf].chain) > 1:
            out["nic-far"] = f"nic-far:{n.name}"
    if isinstance(lay.nics.placement.gpu_nic, dict):
        nics = m.nics_in_order()
        swap = next((f"nic-affinity-swap:{a.name}:{b.name}" for i, a in enumerate(nics)
                     for b in nics[i + 1:]
                     if a.link_layer == b.link_layer and moved_gpus(m, a.name, b.name)), None)
        if swap:
            out["nic-affinity-swap"] = swap
    if m.nvswitch:
        out["fabric-not-started"] = "fabric-not-started"
    if lay.nics.gpudirect_rdma is True:
        out["peermem-missing"] = "peermem-missing"
    if gpus[0].c2c_links:  # Grace superchips
        out["c2c-down"] = f"c2c-down:GPU{gpus[0].ident}"
        out["c2c-links"] = f"c2c-links:GPU{gpus[-1].ident}:{gpus[-1].c2c_links // 2}"
    if (lay.storage.gds is not None and lay.storage.gds.expected is True):
        out.update({"nvme-far": "nvme-far:1", "nvme-bunched": "nvme-bunched:2",
                    "nvme-missing": "nvme-missing:3", "iommu-on": "iommu-on",
                    "no-nvidia-fs": "no-nvidia-fs"})
    return out


def simulated(path: Path, name: str, *faults: str) -> Dict[str, Any]:
    """``nvtopo simulate`` to a file (-o, as a fleet is written), validated."""
    args = ["simulate", name, "--seed", str(SEED), "-o", str(path)]
    for f in faults:
        args += ["--fault", f]
    run(*args, expect=(0,))
    doc = json.loads(path.read_text(encoding="utf-8"))
    S.validate(doc, "snapshot", what=f"nvtopo simulate {name} {' '.join(faults)}")
    assert doc["simulated"]["layout"] == name and doc["simulated"]["faults"] == list(faults)
    assert "derived" in doc
    return doc


@pytest.mark.parametrize("name", LAYOUTS)
def test_simulated_healthy_node_of_every_layout(name, tmp_path):
    doc = simulated(tmp_path / "sim.json", name)
    out = every_command(tmp_path / "sim.json", resnapshot=False)
    assert gpu_count(out["show"]) == layouts.load(name).gpus.count
    assert out["check"]["verdict"] == "pass"
    assert out["show"]["host"]["hostname"] == doc["host"]["hostname"]


def test_simulated_faults_of_a_mesh_node(tmp_path):
    """Every fault kind that applies to a DGX-1 (a direct NVLink mesh): the snapshot, and the
    check and links documents; a missing GPU renumbers the mesh (layout_mapping)."""
    specs = fault_specs("dgx-1-v100")
    specs["gpu-missing"] = "gpu-missing:GPU3"  # a GPU in the middle: the others move
    mappings = {}
    for kind, spec in sorted(specs.items()):
        path = tmp_path / f"{kind}.json"
        simulated(path, "dgx-1-v100", spec)
        found = document("check", "check", "--from", path, "--format", "json")
        # a NIC swap leaves every GPU a NIC at PIX: a renaming warning, not a failure
        assert found["verdict"] == ("pass" if kind in ("pcie-gen", "nic-affinity-swap", "nic-rename")
                                    else "fail"), spec
        mappings[kind] = found.get("layout_mapping")
        document("links", "links", "--from", path, "--format", "json")
    # the renumbering that explains the NUMA nodes too: the GPUs after the gap moved up one
    assert {"GPU2": 2, "GPU3": 4, "GPU6": 7}.items() <= (mappings["gpu-missing"] or {}).items()


def test_every_fault_kind_is_simulated():
    assert set(fault_specs("dgx-h100")) | {"c2c-down", "c2c-links"} == set(FAULT_KINDS)
    assert {"c2c-down", "c2c-links"} <= set(fault_specs("gh200-4"))
    assert {"nvlink-down", "gpu-missing", "ib-port-down"} <= set(fault_specs("dgx-1-v100"))


@pytest.fixture(scope="module")
def h100_fleet(tmp_path_factory):
    """A healthy DGX H100 and one node per fault kind (the files audit and diff read)."""
    d = tmp_path_factory.mktemp("fleet")
    simulated(d / "healthy.json", "dgx-h100")
    faulty = {}
    for kind, spec in sorted(fault_specs("dgx-h100").items()):
        faulty[kind] = d / f"{kind}.json"
        simulated(faulty[kind], "dgx-h100", spec)
    return d, faulty


@pytest.mark.parametrize("kind", sorted(fault_specs("dgx-h100")))
def test_every_command_on_a_faulty_dgx_h100(kind, h100_fleet):
    d, faulty = h100_fleet
    out = every_command(faulty[kind], resnapshot=kind == "gpu-missing")
    # the bundled layout's GDS expectation is inferred: its faults are warnings
    warn_only = ("pcie-gen", "nic-affinity-swap", "nic-rename", "nvme-far", "nvme-bunched",
                 "nvme-missing", "iommu-on", "no-nvidia-fs")
    assert out["check"]["verdict"] == ("pass" if kind in warn_only else "fail")
    changes = document("diff", "diff", d / "healthy.json", faulty[kind], "--format", "json")
    assert changes["changed"] and changes["verdict"]["before"] == "pass"
    assert changes["verdict"]["new"], kind


def test_diffs_across_sources_and_texts(nvml_snapshots):
    """A diff whose inputs hold different evidence (sources not compared, findings
    unconfirmed), and one between two topo texts of different nodes."""
    mixed = document("diff", "diff", nvml_snapshots["dgx-h100"], CORPUS[1], "--format", "json")
    assert mixed["sources"]["not_compared"] and "unconfirmed" in mixed["verdict"]
    texts = document("diff", "diff", CORPUS[0], CORPUS[1], "--format", "json")
    assert texts["sources"]["compared"] == ["topo-text"]
    assert {c["kind"] for c in texts["changes"]} & {"gpu.renumbered", "nvlink.pair",
                                                   "nic.added", "nic.removed"}


@pytest.fixture(scope="module")
def h100_few(tmp_path_factory):
    """A healthy DGX H100 and two faulty ones (the core tier's fleet: the slow tier's
    ``h100_fleet`` simulates one node per fault kind, about 30)."""
    d = tmp_path_factory.mktemp("few")
    simulated(d / "healthy.json", "dgx-h100")
    specs = fault_specs("dgx-h100")
    faulty = {kind: d / f"{kind}.json" for kind in ("counters", "nvlink-down")}
    for kind, path in faulty.items():
        simulated(path, "dgx-h100", specs[kind])
    return d, faulty


def test_audit_of_a_fleet_with_unreadable_files(h100_few, tmp_path):
    d, faulty = h100_few
    (d / "empty.json").write_text("")
    doc = document("audit", "audit", d, CORPUS[0], "--format", "json", "--jobs", "1")
    verdicts = [n["verdict"] for n in doc["nodes"]]
    assert verdicts.count("error") == 1 and "fail" in verdicts and "pass" in verdicts
    assert doc["summary"]["files"] == len(faulty) + 3
    assert doc["summary"]["exit_status"] == 1 and doc["summary"]["codes"]


# --- each schema can fail -------------------------------------------------------------------


@pytest.fixture(scope="module")
def samples(h100_few, nvml_snapshots, tmp_path_factory):
    """One real document of each kind, rich enough that every mutation below applies."""
    d, faulty = h100_few
    bad = faulty["counters"]
    small = tmp_path_factory.mktemp("small") / "hgx-h100-4.json"  # smaller: quicker to check
    snap = simulated(small, "hgx-h100-4", fault_specs("hgx-h100-4")["counters"])
    return {
        "model": document("model", "show", "--from", small, "--format", "json"),
        "snapshot": snap,
        "check": document("check", "check", "--from", small, "--format", "json"),
        "links": document("links", "links", "--from", nvml_snapshots["dgx-h100-link-down"],
                          "--format", "json"),
        "ib": document("ib", "ib", "--from", small, "--format", "json"),
        "diff": document("diff", "diff", d / "healthy.json", bad, "--format", "json"),
        "audit": document("audit", "audit", d / "healthy.json", bad, d / "missing.json",
                          "--format", "json", "--jobs", "1"),
        "layouts": document("layouts", "layouts", "--format", "json"),
        "layout": document("layout", "layouts", "show", "dgx-h100"),
        "collect": _collect_manifest(tmp_path_factory.mktemp("collect"), snap),
        "cluster": document("cluster", "cluster", d / "healthy.json", bad, "--format", "json",
                            "--jobs", "1"),
        "catalog": document("catalog", "checks", "--format", "json"),
        "explain": document("explain", "explain", "--from", ROOT / "fixtures" / "nccl" /
                            "async-port-error-flapping.log", "--format", "json"),
        # the healthy node, then the same node with its counters up: a counter still rising
        "trend": document("trend", "trend", d / "healthy.json", bad, "--format", "json"),
        # a --thresholds file (read by check and audit, written by people)
        "thresholds": {"schema_version": 1, "classes": {
            "*": {"nvlink": {"replay": 5}}, "dgx-h100": {"ib": {"symbol_error": 20}}}},
    }


def _collect_manifest(out: Path, snap: Dict[str, Any]) -> Dict[str, Any]:
    """A collection's manifest: one node answered (its record read), one timed out."""
    from nvtopo import output, snapshot as snapshot_mod
    from nvtopo.commands.collect import collector, record

    coll = collector.Collection(str(out), "slurm", ["n1", "n2"])
    reader = coll.reader(labelled=True)
    payload = output.compress(snapshot_mod.dumps(snap).encode())
    for line in record.encode("n1", payload, {"topology_addr": "s1.n1"}):
        reader.feed(b"0: " + line)
    reader.close()
    coll.fail("n2", "timeout", "no record within 60 s")
    doc = coll.finish({"mode": "new", "nodelist": "n[1-2]", "steps": 1},
                      {"timeout_s": 30, "node_limit_s": 60, "launch_wait_s": 60})
    S.validate(doc, "collect")
    return doc


def _drop(key):
    def f(node):
        del node[key]
    return f


def _set(key, value):
    def f(node):
        node[key] = value
    return f


def _at(doc: Any, path: str) -> Any:
    node = doc
    for part in filter(None, path.split("/")):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


#: (document, where, how, the path the validator must name)
MUTATIONS = [
    ("model", "", _drop("gpus"), "$"),
    ("model", "", _set("schema_version", 2), "$.schema_version"),
    ("model", "", _set("surprise", 1), "$"),
    ("model", "gpus/0", _set("index", "0"), "$.gpus[0].index"),
    ("model", "gpus/0", _set("label", "gpu0"), "$.gpus[0].label"),
    ("model", "gpus/0/extra/nvml/pcie", _set("current_gen", "5"),
     "$.gpus[0].extra.nvml.pcie.current_gen"),
    ("model", "gpus/0/extra/nvml/nvlink/links/0", _set("state", "broken"),
     "$.gpus[0].extra.nvml.nvlink.links[0].state"),
    ("model", "gpus/0/extra/nvml", _set("fabric", {"state": "completed"}),
     "$.gpus[0].extra.nvml.fabric"),
    ("model", "gpus/0/extra/sysfs/link", _set("current_width", 16.5),
     "$.gpus[0].extra.sysfs.link.current_width"),
    ("model", "nics/0/extra/sysfs/ports/0", _set("state_code", "4"),
     "$.nics[0].extra.sysfs.ports[0].state_code"),
    ("model", "nics/0/extra/sysfs/ports/0", _set("netdev_stats", None),
     "$.nics[0].extra.sysfs.ports[0]"),
    ("model", "nics/0/extra/sysfs", _set("gpu_paths", {"GPU0": "NV18"}),
     "$.nics[0].extra.sysfs.gpu_paths.GPU0"),
    ("model", "notes/0", _set("level", "error"), "$.notes[0].level"),
    ("model", "extra/nvml/p2p/read/cells/0", _set(1, "YES"), "$.extra.nvml.p2p.read.cells[0][1]"),
    ("model", "extra/sysfs", _set("gpudirect", {"nvidia_peermem": "yes"}),
     "$.extra.sysfs.gpudirect"),
    ("snapshot", "", _set("kind", "nvtopo-snap"), "$.kind"),
    ("snapshot", "", _drop("probes"), "$"),
    ("snapshot", "probes/topo-text", _set("status", "fine"), "$.probes.topo-text"),
    ("snapshot", "probes/nvml/calls", _set("GetCount", {"value": 8}), "$.probes.nvml.calls"),
    ("snapshot", "probes/nvml/calls", _set("nvmlDeviceGetCount()", {"value": 8, "x": 1}),
     "$.probes.nvml.calls.nvmlDeviceGetCount()"),
    ("snapshot", "probes/sysfs/files", _set("class/infiniband/mlx5_0/fw_ver", 28),
     "$.probes.sysfs.files.class/infiniband/mlx5_0/fw_ver"),
    ("snapshot", "simulated", _set("seed", -1), "$.simulated.seed"),
    ("snapshot", "derived", _set("file_sha256", "0" * 63), "$.derived.file_sha256"),
    ("snapshot", "derived", _set("rows", {"gpus": []}), "$.derived.rows"),
    ("snapshot", "derived", _drop("rows"), "$.derived"),
    ("check", "", _set("verdict", "pass"), "$.verdict"),
    ("check", "", _drop("layout_reason"), "$"),
    ("check", "findings/0", _set("severity", "fatal"), "$.findings[0].severity"),
    ("check", "findings/0", _drop("hint"), "$.findings[0]"),
    ("check", "findings/0", _set("code", "NVLink down"), "$.findings[0].code"),
    ("check", "findings/0", _set("actual", ["a"]), "$.findings[0].actual"),
    ("links", "", _drop("pairs"), "$"),
    ("links", "gpus/3/links/5", _set("state", "broken"), "$.gpus[3].links[5].state"),
    ("links", "gpus/3/links/5/remote", _set("type", "switch"), "$.gpus[3].links[5].remote.type"),
    ("links", "gpus/3", _set("active", None), "$.gpus[3].active"),
    ("links", "gpus/3", _set("raw_state", "active"), "$.gpus[3]"),
    ("ib", "", _set("schema_version", 2), "$.schema_version"),
    ("ib", "hcas/0/ports/0", _drop("netdev_stats"), "$.hcas[0].ports[0]"),
    ("ib", "hcas/0/ports/0", _set("rate_gbps", "400"), "$.hcas[0].ports[0].rate_gbps"),
    ("ib", "hcas/0", _set("parent", "usb"), "$.hcas[0].parent"),
    ("ib", "hcas/0", _set("speed", 400), "$.hcas[0]"),
    ("ib", "gpus/0", _drop("link"), "$.gpus[0]"),
    ("diff", "", _set("changed", "yes"), "$.changed"),
    ("diff", "changes/0", _set("kind", "ib.port_flapped"), "$.changes[0].kind"),
    ("diff", "changes/0", _set("before", "5"), "$.changes[0].before"),
    ("diff", "verdict", _set("before", "ok"), "$.verdict.before"),
    ("diff", "verdict/new/0", _set("severity", "info"), "$.verdict.new[0].severity"),
    ("diff", "sources", _set("compared", ["dmesg"]), "$.sources.compared[0]"),
    ("audit", "nodes/2", _drop("reason"), "$.nodes[2]"),
    ("audit", "nodes/1", _set("errors", 0), "$.nodes[1].errors"),
    ("audit", "summary", _set("exit_status", 3), "$.summary.exit_status"),
    ("audit", "summary/codes/0", _set("shown", ["n"] * 11), "$.summary.codes[0].shown"),
    ("layouts", "0", _set("gpus", "8"), "$[0].gpus"),
    ("layouts", "0", _drop("family"), "$[0]"),
    ("layout", "", _set("schema", 2), "$.schema"),
    ("layout", "", _set("nvlnk", {}), "$"),
    ("layout", "gpus", _set("count", -1), "$.gpus.count"),
    ("layout", "nvlink", _set("pairs", {"0_1": 2}), "$.nvlink.pairs"),
    ("layout", "nics/compute", _set("link_layer", "IB"), "$.nics.compute.link_layer"),
    ("layout", "nics/placement", _set("gpu_to_nearest_compute_nic", "NV18"),
     "$.nics.placement.gpu_to_nearest_compute_nic"),
    ("collect", "nodes/0", _drop("file"), "$.nodes[0]"),
    ("collect", "nodes/1", _set("reason", "two\nlines"), "$.nodes[1].reason"),
    ("collect", "nodes/1", _set("status", "lost"), "$.nodes[1].status"),
    ("collect", "counts", _drop("answered"), "$.counts"),
    ("cluster", "", _drop("node_rows"), "$"),
    ("cluster", "counts", _set("nodes", -1), "$.counts.nodes"),
    ("cluster", "node_rows/0", _set("rails", "4"), "$.node_rows[0].rails"),
    ("catalog", "", _set("schema_version", 2), "$.schema_version"),
    ("catalog", "checks/0", _set("scope", "rack"), "$.checks[0].scope"),
    ("catalog", "checks/0/ladder", _set("observed", "fatal"), "$.checks[0].ladder.observed"),
    ("thresholds", "", _set("schema_version", 2), "$.schema_version"),
    ("explain", "", _drop("explanation"), "$"),
    ("explain", "nccl", _set("nranks", -1), "$.nccl.nranks"),
    ("explain", "findings/0", _set("severity", "fatal"), "$.findings[0].severity"),
    ("trend", "", _set("schema_version", 2), "$.schema_version"),
    ("trend", "", _drop("series"), "$"),
    ("trend", "series/0", _set("rising", "yes"), "$.series[0].rising"),
    ("trend", "findings/0", _set("severity", "fatal"), "$.findings[0].severity"),
    ("thresholds", "classes/*/nvlink", _set("replay", -1), "$.classes.*.nvlink.replay"),
    ("thresholds", "classes/*", _set("nvme", {}), "$.classes.*"),
]


def test_every_document_kind_has_mutations():
    assert {m[0] for m in MUTATIONS} == set(S.SCHEMAS)


@pytest.mark.parametrize("case", MUTATIONS, ids=lambda m: f"{m[0]}:{m[3]}")
def test_schema_rejects_a_broken_document(case, samples):
    name, where, how, path = case
    bad = copy.deepcopy(samples[name])  # valid: document() and simulated() checked it
    how(_at(bad, where))
    with pytest.raises(AssertionError) as err:
        S.validate(bad, name)
    found = str(err.value).splitlines()
    assert S.schema_path(name) in found[0]
    assert any(p.strip().startswith(path) for p in found[1:]), found


#: A document broken where the validator must follow a reference into another schema file
#: (``other.schema.json#/...``); schemas without one: their first mutation above.
ACROSS_FILES = {
    "ib": ("", _set("origin", {"kind": "ib"}), "$.origin"),  # model.schema.json origin
    "snapshot": ("", _set("host", {"hostname": 5}), "$.host"),  # model.schema.json host
    "links": ("gpus/3/links/5", _set("state", "broken"), "$.gpus[3].links[5].state"),
    "diff": ("verdict/new/0", _set("severity", "info"), "$.verdict.new[0].severity"),
    "audit": ("nodes/1/findings/0", _set("severity", "fatal"), "$.nodes[1].findings[0]"),
    "layouts": ("0", _set("name", "no spaces allowed"), "$[0].name"),
    "explain": ("findings/0", _set("severity", "fatal"), "$.findings[0]"),  # check.schema.json
    "trend": ("findings/0", _set("severity", "fatal"), "$.findings[0]"),  # check's finding
}


def _standard_validator(name: str, leave_out: str = "") -> Any:
    """A Draft 2020-12 validator as any user builds one: every file of docs/schemas/ in a
    `referencing` registry under its own ``$id`` (``resources @ Registry()`` refuses a schema
    without one), no retrieval, no base URI, no file names: references resolve through the
    ``$id``s or not at all."""
    import jsonschema
    from referencing import Registry, Resource

    resources = [Resource.from_contents(json.loads(p.read_text(encoding="utf-8")))
                 for p in sorted(S.SCHEMA_DIR.glob("*.schema.json")) if p.name != leave_out]
    registry = resources @ Registry()
    root = json.loads((S.SCHEMA_DIR / S.SCHEMAS[name]).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(root, registry=registry)


@pytest.mark.parametrize("name", sorted(S.SCHEMAS))
def test_a_standard_validator_resolves_every_reference_through_the_ids(name, samples):
    import referencing.exceptions

    validator = _standard_validator(name)
    validator.validate(samples[name])  # the real document passes
    where, how, path = ACROSS_FILES.get(name) or next(
        m[1:] for m in MUTATIONS if m[0] == name)
    bad = copy.deepcopy(samples[name])
    how(_at(bad, where))
    errors = list(validator.iter_errors(bad))
    assert errors, f"{name}: the broken document passed"
    assert any(S._where(e.absolute_path).startswith(path) for e in errors), errors
    targets = {ref.partition("#")[0] for ref in _refs(S.schema(name))} - {""}
    assert (name in ACROSS_FILES) == bool(targets), targets
    for target in targets:  # the other file is really used: without it, unresolvable
        with pytest.raises(referencing.exceptions.Unresolvable):
            _standard_validator(name, leave_out=target).validate(bad)


# --- the hook every CLI test goes through -------------------------------------------------


@pytest.mark.parametrize("args, expected", [
    (["show", "--from", "x", "--format", "json"], ("show", "model", None)),
    (["show", "--from", "x", "--format=json", "-o", "out.json"], ("show", "model", "out.json")),
    (["show", "--from", "x", "--format", "json", "-o", "-"], ("show", "model", None)),
    (["show", "--from", "x", "--format", "svg", "-o", "p.svg"], None),
    (["show", "--from", "x"], None),
    (["check", "--format", "json", "--output=c.json"], ("check", "check", "c.json")),
    (["check", "--format", "prometheus"], None),
    (["snapshot", "-oS.json"], ("snapshot", "snapshot", "S.json")),
    (["snapshot", "--from", "t.txt"], ("snapshot", "snapshot", None)),
    (["simulate", "dgx-h100", "--fault", "gpu-missing:GPU7"], ("simulate", "snapshot", None)),
    (["links", "--from", "x", "--format", "json"], ("links", "links", None)),
    (["ib", "--format", "json"], ("ib", "ib", None)),
    (["diff", "a", "b", "--format", "json"], ("diff", "diff", None)),
    (["audit", "d/", "--format", "json", "--jobs", "1"], ("audit", "audit", None)),
    (["layouts"], None),
    (["layouts", "--format", "json"], ("layouts", "layouts", None)),
    (["layouts", "show", "dgx-h100"], ("layouts show", "layout", None)),
    (["layouts", "--format", "json", "show", "dgx-h100"], ("layouts show", "layout", None)),
    (["layouts", "capture", "--from", "x"], ("layouts capture", "layout", None)),
    (["show", "--format", "json", "--help"], None),
    (["--version"], None),
    ("show --from x --format json", ("show", "model", None)),
    ([], None),
    (None, None),
])
def test_hook_knows_which_commands_print_which_document(args, expected):
    assert S.document_of(args) == expected


def _printer(doc_text: str) -> typer.Typer:
    """A stand-in CLI that prints (or writes to -o FILE) a fixed text, exit status 0,
    whatever its arguments."""
    cli = typer.Typer(add_completion=False)

    @cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
    def main(ctx: typer.Context) -> None:
        args = list(ctx.args)
        if "-o" in args:
            Path(args[args.index("-o") + 1]).write_text(doc_text)
        else:
            typer.echo(doc_text)
    return cli


def test_hook_rejects_a_document_that_breaks_its_schema(tmp_path):
    hooked = make_runner()
    bad = json.dumps({"layout": "none", "verdict": "maybe", "findings": []})
    with pytest.raises(AssertionError) as err:
        hooked.invoke(_printer(bad), ["check", "--from", "x", "--format", "json"])
    assert "nvtopo check" in str(err.value) and "docs/schemas/check.schema.json" in str(err.value)
    assert "$.verdict" in str(err.value)
    out = tmp_path / "c.json"
    with pytest.raises(AssertionError, match=re.escape(str(out))):
        hooked.invoke(_printer(bad), ["check", "--format", "json", "-o", str(out)])
    with pytest.raises(AssertionError, match="is not JSON"):
        hooked.invoke(_printer("PASS"), ["layouts", "show", "dgx-h100"])
    good = json.dumps({"schema_version": 1, "layout": "none", "layout_reason": "no layout fits",
                       "verdict": "pass", "findings": []})
    assert hooked.invoke(_printer(good), ["check", "--format", "json"]).exit_code == 0
    # not a JSON command, or a command that failed: nothing to validate
    assert hooked.invoke(_printer("PASS"), ["check"]).exit_code == 0
    assert make_runner(check_schemas=False).invoke(
        _printer(bad), ["check", "--format", "json"]).exit_code == 0
