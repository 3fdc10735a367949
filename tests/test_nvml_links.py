"""`nvtopo links` on every NVML recording and on pasted nvidia-smi nvlink / -q text."""

import json
import re
from pathlib import Path

import pytest
from cli_runner import make_runner

import nvml_fake as F
from nvtopo import snapshot
from nvtopo.cli import app

TEXT = Path(__file__).resolve().parent.parent / "fixtures" / "nvml-text"




runner = make_runner()


def snap(tmp_path, machine):
    path = tmp_path / f"{machine}.json"
    path.write_text(json.dumps(F.snapshot_doc(machine)))
    return str(path)


def links(*args):
    result = runner.invoke(app, ["links", *args], env={"COLUMNS": "100", "NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr


def check_contract(doc):
    assert set(doc) >= {"gpus"}
    for g in doc["gpus"]:
        assert isinstance(g["index"], int) and isinstance(g["active"], int)
        assert isinstance(g["total"], int) and (g["name"] is None or isinstance(g["name"], str))
        assert g["active"] == sum(lk["state"] == "active" for lk in g["links"])
        for lk in g["links"]:
            assert isinstance(lk["link"], int)
            assert lk["state"] in ("active", "inactive", "down", "not_supported", "unknown")
            assert lk["version"] is None or isinstance(lk["version"], str)
            r = lk["remote"]
            assert r["type"] in ("gpu", "nvswitch", "npu", "unknown")
            assert set(r) >= {"gpu_index", "pci_bus_id", "link"}
            assert isinstance(lk["errors"], dict)


EXPECT_TABLE = {
    "dgx-h100": ["GPU0 · NVIDIA H100 80GB HBM3 · 18/18 active · 478.116 GB/s per direction",
                 "NVSwitch 07:00.0 #0", "28 NVLink-connected GPU pairs (NV18) through NVSwitch"],
    "dgx-h100-link-down": ["GPU3 · NVIDIA H100 80GB HBM3 · 17/18 active", "   5  down",
                           "link 5 down: NVSwitch system",
                           "nonzero error counters: link 2 replay=3, link 2 crc_flit=12",
                           "3/0/12/0/0", "(NV17, NV18)"],
    "dgx-h100-gpu-lost": ["GPU5: GPU 5 fell off the bus (GpuIsLost) at "
                          "nvmlDeviceGetNvLinkRemotePciInfo(gpu5,7)", "18/18 active",
                          "  12  active  4.0  26.562  ? #"],
    "dgx-a100": ["12/12 active · 300 GB/s per direction", "3.1", "NVSwitch c4:00.0 #0"],
    "dgx-a100-mig": ["GPU0 · NVIDIA A100-SXM4-80GB · 0/12 active",
                     "inactive: MIG mode is enabled: NVLink is off by design"],
    # Old driver: no field 164 or remote-port fields; the speed comes from the older
    # per-link speed fields (NVML_FI_DEV_NVLINK_SPEED_MBPS_Ln).
    "dgx1-v100": ["GPU0 · Tesla V100-SXM2-32GB · 6/6 active · 154.686 GB/s per direction",
                  "  active  2.0  25.781  GPU3  ",
                  "16 NVLink-connected GPU pairs (NV1, NV2)\n"],
    "h100-pcie-bridge": ["12/18 active", "GPU1 #12",
                         "links 4, 5, 10, 11, 16, 17 inactive: bridged pair with GPU 1"],
    "consumer-no-nvlink": ["GPU0 · NVIDIA GeForce RTX 4090 · NVLink not supported on this GPU"],
    "gh200-4": ["C2C to CPU: mode enabled · 10/10 links active · 447.1 GB/s (all 4 GPUs)",
                "GPU0 · NVIDIA GH200 480GB · 18/18 active", "  12  active  4.0  26.562  GPU3 #0 ",
                "6 NVLink-connected GPU pairs (NV6)"],
    "gh200-4-c2c-degraded": [
        "C2C to CPU: mode enabled · 6/10 links active · down: 6, 7, 8, 9 · 268.3 GB/s (GPU2)",
        "C2C to CPU: mode enabled · 6/6 links active · 268.3 GB/s (GPU1)",
        "6 NVLink-connected GPU pairs (NV6)"],
}


@pytest.mark.parametrize("machine", sorted(EXPECT_TABLE))
def test_links_table_for_each_recording(tmp_path, machine):
    path = snap(tmp_path, machine)
    code, out, err = links("--from", path)
    assert code == 0, err
    unwrapped = re.sub(r"\n\s+", " ", out)  # a long line wraps at the terminal's width
    for expected in EXPECT_TABLE[machine]:
        assert expected in out or expected in unwrapped, f"{expected!r} not in:\n{out}"
    code, out, _ = links("--from", path, "--format", "json")
    assert code == 0
    check_contract(json.loads(out))


def test_links_json_details_for_a_down_link(tmp_path):
    code, out, _ = links("--from", snap(tmp_path, "dgx-h100-link-down"), "--gpu", "3",
                         "--format", "json")
    doc = json.loads(out)
    assert [g["index"] for g in doc["gpus"]] == [3]
    g = doc["gpus"][0]
    assert (g["active"], g["total"], g["name"]) == (17, 18, "NVIDIA H100 80GB HBM3")
    l5 = g["links"][5]
    assert (l5["state"], l5["rule"], l5["version"]) == ("down", "nvswitch", None)
    assert g["links"][0]["remote"] == {"type": "nvswitch", "gpu_index": None,
                                       "pci_bus_id": "00000000:07:00.0", "link": 15}
    assert {p["count"] for p in doc["pairs"]} == {17}


def test_links_without_nvml_evidence_is_a_one_line_error(tmp_path):
    code, out, err = links("--from", snap(tmp_path, "no-nvml"))
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0
    assert "no NVLink evidence" in err and "no NVIDIA driver" in err


def test_links_unknown_gpu_is_an_error(tmp_path):
    code, _, err = links("--from", snap(tmp_path, "dgx-h100"), "--gpu", "9")
    assert code == 2 and "no GPU 9" in err


def test_links_from_a_topo_text_says_what_is_missing():
    code, _, err = links("--from", str(Path("nvtopo/examples/dgx-h100.txt").resolve()))
    assert code == 2 and "no NVLink evidence" in err


def test_show_and_snapshot_still_work_with_nvml_evidence(tmp_path):
    path = snap(tmp_path, "dgx1-v100")
    result = runner.invoke(app, ["show", "--from", path, "--format", "json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["sources"] == ["nvml"] and doc["matrix"]["cells"][0][3] == "NV2"


# --- pasted text --------------------------------------------------------------------


def text_doc(name, *extra):
    code, out, err = links("--from", str(TEXT / name), "--format", "json", *extra)
    assert code == 0, err
    doc = json.loads(out)
    check_contract(doc)
    return doc


def test_nvlink_s_h100_pcie_partial_inactive():
    doc = text_doc("nvlink_s_h100_pcie_bridge_partial_inactive.txt")
    g = doc["gpus"][0]
    assert (g["name"], g["active"], g["total"]) == ("NVIDIA H100 PCIe", 12, 18)
    assert [lk["link"] for lk in g["links"] if lk["state"] == "inactive"] == \
        [4, 5, 10, 11, 16, 17]
    assert {lk["rule"] for lk in g["links"] if lk["state"] == "inactive"} == {"text"}
    assert g["links"][0]["speed_mbps"] == 26562


def test_nvlink_r_with_s_maps_active_only_numbering(tmp_path):
    both = tmp_path / "ticket.txt"
    both.write_text((TEXT / "nvlink_s_h100_pcie_bridge_partial_inactive.txt").read_text()
                    + (TEXT / "nvlink_R_h100_pcie_bridge.txt").read_text())
    code, out, _ = links("--from", str(both), "--format", "json")
    g = json.loads(out)["gpus"][0]
    by = {lk["link"]: lk["remote"] for lk in g["links"]}
    assert by[6] == {"type": "unknown", "gpu_index": None, "pci_bus_id": "00000000:D5:00.0",
                     "link": 6}
    assert by[15]["link"] == 15 and by[4]["pci_bus_id"] is None


def test_nvlink_r_alone_keeps_numbers_and_notes_it():
    topo = snapshot.load(str(TEXT / "nvlink_R_h100_pcie_bridge.txt"))
    # said once for the paste, naming both GPUs (show printed it once per GPU, the same line)
    notes = [n for n in topo.notes if n.code == "nvml_text.r_numbering"]
    assert len(notes) == 1 and notes[0].message.endswith("(GPUs 0, 1)")
    topo = snapshot.load(str(TEXT / "nvlink_R_h100_hgx_nvswitch_excerpt.txt"))
    links0 = topo.gpu(0).nvml_text.to_dict()["nvlink"]["links"]
    assert len(links0) == 18 and links0[8]["remote"]["pci_bus_id"] == "00000000:05:00.0"
    assert links0[8]["remote"]["link"] == 46


def test_nvlink_e_error_counters():
    g = text_doc("nvlink_e_h100_excerpt.txt")["gpus"][0]
    assert [lk["link"] for lk in g["links"]] == [0, 1, 17]  # "[...]" elision skipped
    assert g["links"][2]["errors"] == {"replay": 0, "recovery": 0, "crc_flit": 0}


def test_nvlink_c_capabilities_do_not_decide_liveness():
    topo = snapshot.load(str(TEXT / "nvlink_c_h800_excerpt.txt"))
    lk = topo.gpu(1).nvml_text.to_dict()["nvlink"]["links"][0]
    assert lk["capabilities"]["valid"] is False and lk["capabilities"]["p2p"] is True
    assert lk["state"] == "unknown"  # -c says nothing about state


def test_all_inactive_gpu_and_a6000_bridge():
    doc = text_doc("nvlink_s_rtx_a6000_bridge_and_all_inactive.txt")
    assert [(g["index"], g["active"], g["nvlink"]) for g in doc["gpus"]] == \
        [(0, 4, "ok"), (1, 4, "ok"), (2, 0, "inactive")]
    assert doc["gpus"][0]["bandwidth_gbps_per_direction"] == pytest.approx(4 * 14.062)


def test_a100_integer_speed():
    g = text_doc("nvlink_s_a100_sxm4_excerpt.txt")["gpus"][0]
    assert g["links"][11]["speed_mbps"] == 25000


def test_fabric_blocks_from_q():
    ins = snapshot.load(str(TEXT / "nvidia_smi_q_fabric_insufficient_resources.txt"))
    fab = ins.gpu(0).nvml_text.to_dict()["fabric"]
    assert (fab["state"], fab["status"], fab["attached"]) == (
        "completed", "insufficient_resources", False)
    assert fab["cluster_uuid"] is None and fab["clique_id"] == 0
    prog = snapshot.load(str(TEXT / "nvidia_smi_q_fabric_in_progress_driver580.txt"))
    fab = prog.gpu(0).nvml_text.to_dict()["fabric"]
    assert fab["state"] == "in_progress" and fab["attached"] is False
    assert fab["health"]["partition_assigned"] is None
    old = snapshot.load(str(TEXT / "nvidia_smi_q_h800_pci_and_fabric_excerpt.txt"))
    g = old.gpu(0)
    assert (g.name, g.pci_bus_id) == ("NVIDIA H800", "00000000:18:00.0")
    rec = g.nvml_text.to_dict()
    assert rec["fabric"]["state"] == "completed" and rec["fabric"]["attached"] is None
    assert rec["pcie"]["max_gen"] == 5 and rec["pcie"]["max_width"] == 16
    assert rec["pcie"]["replay_counter"] == 0


def test_snapshot_from_pasted_nvlink_text_round_trips(tmp_path):
    src = TEXT / "nvlink_s_h100_pcie_bridge_partial_inactive.txt"
    out = tmp_path / "s.json"
    result = runner.invoke(app, ["snapshot", "--from", str(src), "-o", str(out)])
    assert result.exit_code == 0
    assert json.loads(out.read_text())["probes"]["nvml"]["stdout"] == src.read_text()
    a = links("--from", str(src), "--format", "json")[1]
    b = links("--from", str(out), "--format", "json")[1]
    assert json.loads(a)["gpus"] == json.loads(b)["gpus"]


# --- damaged and mixed pastes -----------------------------------------------------------


@pytest.mark.parametrize("speed", [".", "26.562.1", "..5"])
def test_unparseable_speed_is_unknown_with_a_note(tmp_path, speed):
    path = tmp_path / "t.txt"
    path.write_text(f"GPU 0: X (UUID: a)\n Link 0: {speed} GB/s\n Link 1: 25 GB/s\n")
    code, out, err = links("--from", str(path))
    assert code == 0 and "Traceback" not in err, err
    assert "GPU0 · X · 2/2 active" in out
    assert f"note: GPU0: link 0: speed {speed!r} GB/s is not a number" in out
    g = text_doc_at(path)["gpus"][0]
    assert [lk["speed_mbps"] for lk in g["links"]] == [None, 25000]
    assert g["bandwidth_gbps_per_direction"] is None  # one speed unknown: no sum
    topo = snapshot.load(str(path))
    assert [(n.code, n.subject) for n in topo.notes] == [("nvml_text.bad_number", "GPU0")]
    assert repr(speed) in topo.notes[0].message


def text_doc_at(path):
    code, out, err = links("--from", str(path), "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    check_contract(doc)
    return doc


NVLINK_GPU3 = """\
GPU 3: NVIDIA H100 80GB HBM3 (UUID: GPU-31b2c3d4-0000-4000-8000-000000000003)
\t Link 0: 26.562 GB/s
\t Link 1: <inactive>
"""


def q_block(bus_id, uuid=None, state="Completed"):
    return (f"GPU {bus_id}\n    Product Name                          : NVIDIA H100 80GB HBM3\n"
            + (f"    GPU UUID                              : {uuid}\n" if uuid else "")
            + "    Fabric\n"
            f"        State                             : {state}\n"
            "        Status                            : Success\n")


@pytest.mark.parametrize("q_first", [False, True])
def test_q_block_is_attached_by_its_gpu_uuid(q_first):
    q = q_block("00000000:61:00.0", "GPU-31b2c3d4-0000-4000-8000-000000000003")
    topo = nvml_text_topo(q + NVLINK_GPU3 if q_first else NVLINK_GPU3 + q)
    assert [g.index for g in topo.gpus] == [3]  # no phantom GPU 0
    g3 = topo.gpu(3)
    assert g3.pci_bus_id == "00000000:61:00.0"
    assert g3.nvml_text.to_dict()["fabric"]["state"] == "completed"
    assert g3.nvml_text.to_dict()["nvlink"]["active"] == 1
    assert topo.notes == []


def test_q_block_without_uuid_is_attached_by_order_with_a_note():
    topo = nvml_text_topo(NVLINK_GPU3 + q_block("00000000:61:00.0"))
    assert [g.index for g in topo.gpus] == [3]
    assert topo.gpu(3).pci_bus_id == "00000000:61:00.0"
    assert [(n.code, n.subject) for n in topo.notes] == [("nvml_text.q_by_order", "GPU3")]


def test_q_block_of_another_gpu_is_not_merged_into_the_nvlink_gpu():
    topo = nvml_text_topo(NVLINK_GPU3 + q_block("00000000:1B:00.0", "GPU-other"))
    assert [g.index for g in topo.gpus] == [3, 4]
    assert topo.gpu(3).pci_bus_id is None and topo.gpu(4).uuid == "GPU-other"
    assert [n.code for n in topo.notes] == ["nvml_text.q_unmatched"]


def test_q_blocks_alone_are_numbered_in_order_and_matched_by_bus_id():
    topo = nvml_text_topo(q_block("00000000:1B:00.0", "GPU-a") + q_block("00000000:2B:00.0")
                          + q_block("0000:1b:00.0", state="In Progress"))
    assert [(g.index, g.pci_bus_id) for g in topo.gpus] == [
        (0, "0000:1b:00.0"), (1, "00000000:2B:00.0")]
    assert topo.gpu(0).nvml_text.to_dict()["fabric"]["state"] == "in_progress"
    assert topo.notes == []


def test_duplicate_gpu_headers_of_different_gpus_are_noted_not_mixed(tmp_path):
    topo = nvml_text_topo("GPU 0: A (UUID: x)\n Link 0: 25 GB/s\n"
                          "GPU 0: B (UUID: y)\n Link 0: <inactive>\n Link 1: 25 GB/s\n")
    g0 = topo.gpu(0)
    assert (g0.name, g0.uuid) == ("A", "x")
    assert [lk["state"] for lk in g0.nvml_text.to_dict()["nvlink"]["links"]] == ["active"]
    assert [n.code for n in topo.notes] == ["nvml_text.duplicate_gpu"]
    assert "UUID x" in topo.notes[0].message and "UUID y" in topo.notes[0].message


def test_repeated_header_of_the_same_gpu_merges_its_sections():
    text = ("GPU 0: A (UUID: x)\n Link 0: 25 GB/s\n"
            "GPU 0: A (UUID: x)\n Link 0: Replay Errors: 3\n")
    topo = nvml_text_topo(text)
    lk = topo.gpu(0).nvml_text.to_dict()["nvlink"]["links"][0]
    assert (lk["state"], lk["errors"]) == ("active", {"replay": 3})
    assert topo.notes == []


def nvml_text_topo(text):
    from nvtopo.probes.nvml import text as nvml_text

    return nvml_text.derive_text(text)


def test_links_of_a_snapshot_with_topo_text_and_nvml_use_nvml_counts(tmp_path):
    from nvtopo import examples

    doc = snapshot.from_text_evidence(examples.read("dgx-h100"), "example")
    doc["probes"]["nvml"] = F.record("dgx-h100-link-down")
    path = tmp_path / "both.json"
    path.write_text(json.dumps(doc))
    code, out, err = links("--from", str(path), "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    counts = {(p["a"], p["b"]): (p["count"], p["source"]) for p in got["pairs"]}
    assert counts[(0, 3)] == (17, "nvml") and counts[(0, 1)] == (18, "nvml")
    assert {src for _, src in counts.values()} == {"nvml"}
    # NV18 vs NV17 for each pair with GPU3 is one disagreement (the count), not also a path one
    dis = [(d["subject"], d["fact"]) for d in got["disagreements"]]
    assert len(dis) == 7 and all(f == "nvlink_count" and "GPU3" in s for s, f in dis)
    code, out, _ = links("--from", str(path))
    assert "28 NVLink-connected GPU pairs (NV17, NV18)" in out
    assert out.count("disagreement:") == 7


def test_pasted_text_pairs_in_the_links_view():
    doc = text_doc("nvlink_s_rtx_a6000_bridge_and_all_inactive.txt")
    assert doc["pairs"] == []  # -s alone names no remote GPUs


DGX_H100_Q_FABRIC = """\
GPU 00000000:1B:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    GPU UUID                              : GPU-01b2c3d4-0000-4000-8000-000000000000
    Fabric
        State                             : Completed
        Status                            : Success
        CliqueId                          : 32766
        ClusterUUID                       : 7d3f1e0b-9a2c-4d5e-8f60-718293a4b5c6
        Health
            Bandwidth                     : Full
            Route Recovery in progress    : False
            Route Unhealthy               : False
            Access Timeout Recovery       : False
            Incorrect Configuration       : None
            Summary                       : Healthy
"""


def test_fabric_from_text_and_from_nvml_speak_one_vocabulary():
    from nvtopo.probes import nvml

    text = nvml_text_topo(DGX_H100_Q_FABRIC).gpu(0).nvml_text.to_dict()["fabric"]
    live = nvml.derive(F.record("dgx-h100")).gpu(0).nvml.to_dict()["fabric"]
    assert text == live
    desc = F.load_machine("dgx-h100")
    desc["gpu_defaults"]["fabric"] = {"state": 3, "status": 23, "clusterUuid": "0" * 32,
                                      "cliqueId": 0, "healthMask": 0, "healthSummary": 0}
    live = nvml.derive(F.record(desc)).gpu(0).nvml.to_dict()["fabric"]
    text = snapshot.load(str(TEXT / "nvidia_smi_q_fabric_insufficient_resources.txt")).gpu(
        0).nvml_text.to_dict()["fabric"]
    assert live["status"] == text["status"] == "insufficient_resources"
    drop = ("health", "health_summary")  # the pasted block has no Health lines
    assert {k: v for k, v in live.items() if k not in drop} == \
        {k: v for k, v in text.items() if k not in drop}
