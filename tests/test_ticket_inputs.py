"""Texts people attach to tickets beside `nvidia-smi topo -m`: ibstat, ibv_devinfo, ibstatus
(nvtopo/probes/ib_text.py), recognised by content and read into the sysfs probe's RDMA records,
alone or in one file with a topo matrix and `-q` text."""

import json
import os
import time
from pathlib import Path

import pytest
from cli_runner import make_runner

from nvtopo.cli import app
from nvtopo.probes import ib_text
from nvtopo.probes import readers

runner = make_runner()
HERE = os.path.dirname(os.path.abspath(__file__))
IB = os.path.join(HERE, "..", "fixtures", "ib-text")
CORPUS = str(Path("/work/shared/corpus/ib"))


def fx(name):
    with open(os.path.join(IB, name), encoding="utf-8") as fh:
        return fh.read()


def run(*args):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


def ports(text):
    topo = ib_text.derive_text(text)
    return {(n.name, p.port): p for n in topo.nics for p in n.sysfs.ports}, topo


# --- parsing: real values ------------------------------------------------------------------


def test_ibstat_ib_active_and_down():
    got, topo = ports(fx("ibstat_ib_hdr_cx6_mt4123_active_and_down.txt"))
    up, down = got[("mlx5_0", 1)], got[("mlx5_1", 1)]
    assert (up.state, up.state_code, up.phys_state, up.phys_state_code) == \
        ("ACTIVE", 4, "LinkUp", 5)
    assert up.rate_gbps == 200 and up.link_layer == "InfiniBand" and up.transport == "IB"
    assert (up.lid, up.sm_lid, up.port_guid) == (569, 393, "1070fd03008eb580")
    # a Down port's rate is not used (ibstat prints 10 for it), but kept as printed
    assert (down.state, down.phys_state, down.rate_gbps, down.rate.gbps) == \
        ("DOWN", "Disabled", None, 10)
    assert down.lid == 65535 and down.rate_note
    hca = topo.nics[0].sysfs
    assert (hca.source, hca.hca_type, hca.fw_ver, hca.node_guid) == \
        ("ibstat-text", "MT4123", "20.33.1048", "1070:fd03:008e:b580")
    assert topo.sources == ["ibstat-text"]
    # counters are not in the text: unknown, never zero
    assert up.counters is None and up.counters_status == "not read"


def test_ibstat_roce_and_bond_names():
    got, _ = ports(fx("ibstat_roce_lag_bond_bf3_mt41692.txt"))
    assert set(got) == {("mlx5_bond_0", 1), ("mlx5_bond_1", 1)}
    p = got[("mlx5_bond_0", 1)]
    assert (p.link_layer, p.transport, p.rate_gbps, p.lid) == ("Ethernet", "RoCE", 200, 0)


def test_ibstat_truncated_gives_unknown_link_layer_and_keeps_rate():
    got, _ = ports(fx("ibstat_roce_cx6dx_rate_2_5_truncated.txt"))
    p = got[("mlx5_2", 1)]
    assert p.rate_gbps == 2.5 and p.state == "ACTIVE"
    assert p.link_layer is None and "link_layer" in p.unknown


def test_ibstat_ibpanic_redacted():
    got, topo = ports(fx("ibstat_partial_output_ibpanic_redacted.txt"))
    assert list(got) == [("mlx5_7", 1)]
    hca = topo.nics[0].sysfs
    assert hca.hca_type is None and hca.fw_ver is None and hca.node_guid is None  # "..."
    assert got[("mlx5_7", 1)].rate_gbps == 200
    assert [n.code for n in topo.notes] == ["ib_text.aborted"]


def test_ibv_devinfo():
    got, topo = ports(fx("ibv_devinfo_ib_cx7_mt4129_port_down_lid65535.txt"))
    p = got[("mlx5_0", 1)]
    assert (p.state, p.state_code, p.lid, p.sm_lid, p.link_layer) == \
        ("DOWN", 1, 65535, 0, "InfiniBand")
    assert p.phys_state is None and p.rate_gbps is None and "rate" in p.unknown
    hca = topo.nics[0].sysfs
    assert (hca.source, hca.board_id, hca.hca_type, hca.node_guid, hca.fw_ver) == \
        ("ibv-devinfo-text", "MT_0000000838", "MT4129", "58a2:e103:002a:09b8", "28.39.2048")


def test_ibv_devinfo_verbose_rate_and_phys_state():
    text = ("hca_id:\tmlx5_3\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.39.1002\n"
            "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
            "\t\t\tphys_state:\t\tLINK_UP (5)\n\t\t\tactive_width:\t\t4X (2)\n"
            "\t\t\tactive_speed:\t\t100.0 Gbps (128)\n\t\t\tlink_layer:\t\tInfiniBand\n")
    got, _ = ports(text)
    p = got[("mlx5_3", 1)]
    assert (p.phys_state, p.rate_gbps, p.rate.width, p.rate.speed) == ("LinkUp", 400, "4X", "NDR")


def test_ibstatus():
    got, topo = ports(fx("ibstatus_roce_ethernet_4x_edr.txt"))
    p = got[("mlx5_1", 1)]
    assert (p.state, p.phys_state, p.rate_gbps, p.rate.width, p.rate.speed) == \
        ("ACTIVE", "LinkUp", 100, "4X", "EDR")
    assert p.gid0 == "fe80:0000:0000:0000:8ae9:a4ff:fe9c:7f1b"
    assert p.port_guid == "8ae9a4fffe9c7f1b"
    assert topo.sources == ["ibstatus-text"]


def test_recognised_by_content():
    for name in os.listdir(IB):
        if name.startswith(("ibstat", "ibv_devinfo")):
            assert readers.names(fx(name)) == ["ib-text"], name
    # a ticket of three texts: the matrix and -q text share what is left once the ibstat
    # blocks are cut out, and are merged first
    assert readers.names(fx("ticket_topo_ibstat_q.txt")) == ["topo-text", "nvml-text",
                                                             "ib-text"]
    # a line that merely looks like a header, with nothing of the kind under it, is none
    assert not ib_text.looks_like("CA 'mlx5_0'\n  something: else\n")
    assert not ib_text.looks_like("hca_id: x\n")


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="shared corpus absent")
def test_corpus_samples_match_fixtures():
    for name in os.listdir(IB):
        src = os.path.join(CORPUS, name)
        if os.path.exists(src):
            with open(src, encoding="utf-8") as fh:
                assert fh.read() == fx(name), name


def test_hostile_header_flood_is_linear():
    text = ("CA '" + "a" * 60 + "'\n" + "\tCA type: x\n") * 20000 + "CA '" + "'" * 100000
    t0 = time.monotonic()
    topo = ib_text.derive_text(text)
    assert time.monotonic() - t0 < 10
    assert len(topo.nics) == 1  # one name, repeated: one device
    escape = "CA 'mlx5_0'\n\tCA type: \x1b]8;;http://x\x07MT\n\tPort 1:\n\t\tState: Active\n"
    topo = ib_text.derive_text(escape)
    assert topo.nics[0].sysfs.hca_type.startswith("\x1b")  # kept raw; escaped when printed
    r = runner.invoke(app, ["ib", "--from", "-"], input=escape, env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "\x1b" not in r.output


# --- through the CLI ------------------------------------------------------------------------


def test_ib_from_ibstat_json():
    r = run("ib", "--from", os.path.join(IB, "ibstat_ib_hdr_cx6_mt4123_active_and_down.txt"),
            "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["origin"]["kind"] == "ibstat-text"
    by = {h["name"]: h for h in doc["hcas"]}
    assert by["mlx5_1"]["ports"][0]["state"] == "DOWN"
    assert by["mlx5_0"]["source"] == "ibstat-text"


def test_check_from_ibstat_reports_the_down_port():
    r = run("check", "--from", os.path.join(IB, "ibstat_ib_hdr_cx6_mt4123_active_and_down.txt"),
            "--format", "json")
    doc = json.loads(r.output)
    codes = {(f["code"], f["subject"]) for f in doc["findings"]}
    assert ("ib.port_down", "mlx5_1 port 1") in codes
    # the healthy counterpart: no port finding
    r = run("check", "--from", os.path.join(IB, "ibstat_ib_ndr_cx7_mt4129_active.txt"),
            "--format", "json")
    doc = json.loads(r.output)
    assert r.exit_code == 0, r.output
    assert not [f for f in doc["findings"] if f["code"] in ("ib.port_down", "ib.rate_low")]


def test_check_rate_below_peers():
    text = fx("ibstat_ib_ndr_cx7_mt4129_active.txt")
    slow = text.replace("Rate: 400", "Rate: 200", 2).replace("Rate: 200", "Rate: 400", 1)
    r = runner.invoke(app, ["check", "--from", "-", "--format", "json"], input=slow,
                      env={"COLUMNS": "200"})
    doc = json.loads(r.output)
    low = [f for f in doc["findings"] if f["code"] == "ib.rate_low"]
    assert [(f["subject"], f["actual"], f["expected"]) for f in low] == \
        [("mlx5_1 port 1", 200, 400)]


def test_ticket_with_topo_ibstat_and_q_reads_all_three():
    r = run("check", "--from", os.path.join(IB, "ticket_topo_ibstat_q.txt"), "--format", "json")
    doc = json.loads(r.output)
    codes = {f["code"] for f in doc["findings"]}
    assert {"ib.port_down", "fabric.failed"} <= codes
    r = run("show", "--from", os.path.join(IB, "ticket_topo_ibstat_q.txt"), "--format", "json")
    model = json.loads(r.output)
    assert len(model["gpus"]) == 8
    assert {"topo-text", "ibstat-text"} <= set(model["sources"])
    nics = {n["name"]: n for n in model["nics"]}
    assert nics["mlx5_1"]["extra"]["sysfs"]["ports"][0]["state"] == "DOWN"
    assert "sysfs" not in nics["mlx5_2"]["extra"]  # ibstat named mlx5_0 and mlx5_1 only


# --- a paste cut short: its damage is a warning, never a clean PASS ---------------------------

CUT = "ibstat_ib_ndr_cx7_cut_after_guids.txt"  # the NDR sample cut after mlx5_1's GUIDs
#: pastes that show a real fault (a compute port down, issue 23 class 1: tests/test_paste_roles.py)
FAULTY_IB = {"ibstat_ib_ndr_cx7_8port_2_down_disabled.txt",
             "ibstat_ib_vf_mt4126_pod_only_port_down.txt",
             "ibstat_ib_hdr_down_polling_holds_lid.txt", "ibv_devinfo_ib_cx7_one_port_init.txt"}
HEALTHY_IB = [n for n in sorted(os.listdir(IB)) if n.endswith(".txt") and n != CUT
              and "ibpanic" not in n and not n.startswith("ticket_") and n not in FAULTY_IB]


def check_json(*args, text=None):
    r = runner.invoke(app, ["check", *args, "--format", "json"], input=text,
                      env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output  # warnings, never an error
    return json.loads(r.stdout)


def test_cut_paste_warns_in_ib_and_check():
    """ib printed "2 RDMA devices · 1 port" with no word of mlx5_1's unknown port, and check
    said PASS with 0 warnings (the notes were kept only from sysfs and the host probe)."""
    path = os.path.join(IB, CUT)
    _, topo = ports(fx(CUT))
    assert [(n.code, n.subject, n.level) for n in topo.notes] == \
        [("ib_text.no_ports", "mlx5_1", "warning")]
    r = run("ib", "--from", path)
    assert r.exit_code == 0 and "warning: mlx5_1: the ibstat-text names no port" in r.output
    doc = json.loads(run("ib", "--from", path, "--format", "json").output)
    assert [n["code"] for n in doc["notes"]] == ["ib_text.no_ports"]
    found = [(f["severity"], f["code"], f["subject"]) for f in check_json("--from", path)[
        "findings"] if f["severity"] != "info"]
    assert found == [("warning", "ib.ports_unknown", "mlx5_1")]


def test_ibpanic_paste_warns_and_names_the_failing_device():
    path = os.path.join(IB, "ibstat_partial_output_ibpanic_redacted.txt")
    r = run("ib", "--from", path)
    assert "warning: ibstat stopped early (ibpanic: stat of IB device 'mlx5_8' failed" \
        in " ".join(r.output.split())
    found = [f for f in check_json("--from", path)["findings"] if f["severity"] != "info"]
    assert [(f["severity"], f["code"], f["subject"]) for f in found] == \
        [("warning", "ib.ports_unknown", "node")]
    assert "mlx5_8" in found[0]["message"]


@pytest.mark.parametrize("text,say", [
    # a port header and nothing under it
    ("CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tPort 1:\n", "port 1 shows no state"),
    # a two-port card cut after its first port
    ("CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: 2\n\tPort 1:\n\t\tState: Active\n"
     "\t\tPhysical state: LinkUp\n\t\tRate: 200\n\t\tLink layer: InfiniBand\n",
     "it has 2 ports, the text shows 1 (port 2 not shown: cut off, or a one-port view"),
    ("hca_id:\tmlx5_0\n\tfw_ver:\t\t28.39.2048\n\tphys_port_cnt:\t\t2\n\t\tport:\t1\n"
     "\t\t\tstate:\t\tPORT_ACTIVE (4)\n", "ibv_devinfo -i N")])
def test_ports_cut_inside_a_device_warn(text, say):
    _, topo = ports(text)
    assert [(n.code, n.subject) for n in topo.notes] == [("ib_text.ports_cut", "mlx5_0")]
    assert say in topo.notes[0].message
    found = [(f["code"], f["subject"]) for f in check_json("--from", "-", text=text)["findings"]
             if f["severity"] == "warning"]
    assert found == [("ib.ports_unknown", "mlx5_0")]


@pytest.mark.parametrize("name", HEALTHY_IB)
def test_whole_pastes_have_no_cut_warning(name):
    _, topo = ports(fx(name))
    assert not [n for n in topo.notes if n.code.startswith("ib_text.")], name
    doc = check_json("--from", os.path.join(IB, name))
    assert "ib.ports_unknown" not in {f["code"] for f in doc["findings"]}
    assert "warning:" not in run("ib", "--from", os.path.join(IB, name)).output


def test_snapshot_of_ibstat_is_one_line_error():
    r = run("snapshot", "--from", os.path.join(IB, "ibstat_roce_cx7_mt4129_200g.txt"),
            "-o", os.devnull)
    assert r.exit_code == 2
    assert "ibstat" in r.stderr and "Traceback" not in r.stderr


NVML_TEXT_DIR = os.path.join(HERE, "..", "fixtures", "nvml-text")


@pytest.mark.parametrize("other", ["nvlink_s_a100_sxm4_excerpt.txt",
                                   "nvidia_smi_q_h800_pci_and_fabric_excerpt.txt",
                                   "dcgmi_nvlink_s_h100.txt"])
@pytest.mark.parametrize("ib", ["ibstat_ib_hdr_cx6_mt4123_active_and_down.txt",
                                "ibv_devinfo_ib_cx7_mt4129_port_down_lid65535.txt"])
def test_snapshot_of_a_ticket_with_ibstat_is_refused_whatever_is_beside_it(tmp_path, other, ib):
    """`check --from` reads the ibstat part of a ticket (its down port is an error), so a
    snapshot of the ticket may not keep the rest and drop that part: a check of the snapshot
    would pass where a check of the ticket fails.  Beside a topo matrix it was refused; beside
    nvlink, -q or dcgmi text it was kept without its ports."""
    with open(os.path.join(NVML_TEXT_DIR, other), encoding="utf-8") as fh:
        paste = fh.read() + "\n" + fx(ib)
    path = tmp_path / "ticket.txt"
    path.write_text(paste, encoding="utf-8")
    checked = run("check", "--from", str(path), "--format", "json")
    assert "ib.port_down" in {f["code"] for f in json.loads(checked.stdout)["findings"]}
    out = tmp_path / "snap.json"
    r = run("snapshot", "--from", str(path), "-o", str(out))
    assert r.exit_code == 2, r.output
    assert "ibstat/ibv_devinfo text is read by" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


# --- nvidia-smi -q -x XML -----------------------------------------------------------------

XML = os.path.join(HERE, "..", "fixtures", "nvml-xml")
HEALTHY_XML = os.path.join(XML, "nvidia_smi_q_x_h100_2gpu_healthy.xml")
FAULTY_XML = os.path.join(XML, "nvidia_smi_q_x_h100_2gpu_gen3_x8_fabric_failed.xml")


def xml_text(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


GB300_XML = os.path.join(XML, "nvidia_smi_q_x_gb300_tray_4gpu.xml")


def test_q_x_of_a_gb300_tray_reads_its_gpus_platform_and_fabric():
    """The real GB300 tray's -q -x (k8s-test-infra qx-gb300.xml, trimmed): 4 GB300 on two
    Graces' PCI domains, Gen6 x16, platformInfo (module ids 2, 1, 4, 3: not the index order),
    fabric Completed in clique 32766; `check` picks gb300-nvl72-tray and finds no error."""
    from nvtopo.probes.nvml import xml as nvml_xml

    assert readers.names(xml_text(GB300_XML)) == ["nvml-xml"]
    topo = nvml_xml.derive_xml(xml_text(GB300_XML), "gb300.xml")
    assert [g.name for g in topo.gpus] == ["NVIDIA GB300"] * 4
    assert [g.pci_bus_id for g in topo.gpus] == [
        "00000008:06:00.0", "00000009:06:00.0", "00000018:06:00.0", "00000019:06:00.0"]
    texts = [g.nvml_text for g in topo.gpus]
    assert {(t.pcie.max_gen, t.pcie.current_gen, t.pcie.max_width, t.pcie.current_width)
            for t in texts} == {(6, 6, 16, 16)}
    assert [t.platform.module_id for t in texts] == [2, 1, 4, 3]
    assert {(t.platform.chassis_serial, t.platform.slot_number, t.platform.tray_index,
             t.platform.host_id, t.platform.peer_type) for t in texts} == {
        ("SCRUBBED-CHASSIS-SN", 25, 15, 1, None)}  # peer type: words, not NVML's number
    assert {(t.fabric.state, t.fabric.status, t.fabric.clique_id, t.fabric.health_summary)
            for t in texts} == {("completed", "success", 32766, "healthy")}
    r = run("check", "--from", GB300_XML, "--format", "json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["layout"] == "gb300-nvl72-tray", r.output
    assert doc["layout_reason"].startswith("auto: GPU name 'NVIDIA GB300' matches")
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == []
    # the same GPUs as -q text: the Platform Info block reads the same
    q = nvml_xml.to_q_text(xml_text(GB300_XML), "gb300.xml")[0]
    assert "    Platform Info\n" in q and "        Module Id" in q
    from nvtopo.probes.nvml import text as nvml_text

    assert [g.nvml_text.platform.module_id for g in nvml_text.derive_text(q).gpus] == \
        [2, 1, 4, 3]


def test_q_x_reads_the_same_facts_as_q_text():
    from nvtopo.probes.nvml import text as nvml_text
    from nvtopo.probes.nvml import xml as nvml_xml

    assert readers.names(xml_text(FAULTY_XML)) == ["nvml-xml"]
    topo = nvml_xml.derive_xml(xml_text(FAULTY_XML), "f.xml")
    g1 = topo.gpus[1]
    assert g1.pci_bus_id == "00000000:2A:00.0"
    assert g1.uuid == "GPU-0c7e9a13-4f52-4e6b-8d1a-2b3c4d5e6f70"
    assert g1.name == "NVIDIA H100 80GB HBM3"
    # the -q text of the same GPU, as nvidia-smi -q prints it (written by hand)
    q = ("GPU 00000000:2A:00.0\n"
         "    Product Name                          : NVIDIA H100 80GB HBM3\n"
         "    GPU UUID                              : GPU-0c7e9a13-4f52-4e6b-8d1a-2b3c4d5e6f70\n"
         "    PCI\n"
         "        Bus Id                            : 00000000:2A:00.0\n"
         "        GPU Link Info\n"
         "            PCIe Generation\n"
         "                Max                       : 5\n"
         "                Current                   : 3\n"
         "                Device Current            : 3\n"
         "                Device Max                : 5\n"
         "                Host Max                  : 5\n"
         "            Link Width\n"
         "                Max                       : 16x\n"
         "                Current                   : 8x\n"
         "        Replays Since Reset               : 0\n"
         "    Performance State                     : P0\n"
         "    Fabric\n"
         "        State                             : Completed\n"
         "        Status                            : Insufficient Resources\n"
         "        CliqueId                          : 0\n"
         "        ClusterUUID                       : 00000000-0000-0000-0000-000000000000\n"
         "        Health\n"
         "            Bandwidth                     : Full\n"
         "            Route Recovery in progress    : False\n"
         "            Route Unhealthy               : False\n"
         "            Access Timeout Recovery       : False\n")
    by_text = nvml_text.derive_text(q).to_dict()["gpus"][0]["extra"]["nvml-text"]
    by_xml = topo.to_dict()["gpus"][1]["extra"]["nvml-text"]
    assert {k: v for k, v in by_xml.items() if k != "index"} == \
        {k: v for k, v in by_text.items() if k != "index"}
    pcie = by_xml["pcie"]
    assert (pcie["current_gen"], pcie["max_gen"], pcie["current_width"], pcie["max_width"]) \
        == (3, 5, 8, 16)
    assert by_xml["fabric"]["status"] == "insufficient_resources"


def test_q_x_after_blank_lines_reads_the_same_facts(tmp_path):
    """A pasted XML led by blank lines (a ticket's, or what is left once an ibstat paste
    before it is taken out) is the XML looks_like recognises; expat refused it (`XML or
    text declaration not at start of entity`).  An error in it still names its real line."""
    plain = json.loads(run("links", "--from", HEALTHY_XML, "--format", "json").stdout)
    path = tmp_path / "led.xml"
    path.write_text("\n\n  \n" + xml_text(HEALTHY_XML), encoding="utf-8")
    r = run("links", "--from", str(path), "--format", "json")
    assert r.exit_code == 0, r.output
    led = json.loads(r.stdout)
    assert led["gpus"] == plain["gpus"] and len(led["gpus"]) == 2
    broken = tmp_path / "broken.xml"
    lines = xml_text(HEALTHY_XML).splitlines()
    lines[5] = "<<<"
    broken.write_text("\n\n" + "\n".join(lines), encoding="utf-8")
    r = run("links", "--from", str(broken))
    assert r.exit_code == 2 and "at line 8)" in r.stderr, r.stderr


def test_check_q_x_faulty_and_healthy():
    r = run("check", "--from", FAULTY_XML, "--format", "json")
    doc = json.loads(r.output)
    got = {(f["code"], f["subject"]) for f in doc["findings"]}
    assert {("fabric.failed", "node"), ("pcie.width_low", "GPU1"), ("pcie.gen_low", "GPU1")} \
        <= got
    r = run("check", "--from", HEALTHY_XML, "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert not [f for f in doc["findings"] if f["severity"] in ("error", "warning")]


def test_snapshot_of_q_x_keeps_the_q_facts(tmp_path):
    out = tmp_path / "s.json"
    r = run("snapshot", "--from", FAULTY_XML, "-o", str(out))
    assert r.exit_code == 0, r.stderr
    r = run("check", "--from", str(out), "--format", "json")
    assert "pcie.width_low" in {f["code"] for f in json.loads(r.output)["findings"]}


BILLION_LAUGHS = ('<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [\n<!ENTITY a "aaaaaaaaaa">\n'
                  + "".join(f'<!ENTITY {c} "' + f"&{p};" * 10 + '">\n'
                            for p, c in zip("abcdefghi", "bcdefghij"))
                  + ']>\n<nvidia_smi_log><gpu id="00000000:18:00.0"><product_name>&j;'
                  '</product_name></gpu></nvidia_smi_log>\n')
EXTERNAL = ('<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [\n'
            '<!ENTITY x SYSTEM "file:///etc/passwd">\n]>\n'
            '<nvidia_smi_log><gpu id="00000000:18:00.0"><product_name>&x;</product_name>'
            '</gpu></nvidia_smi_log>\n')


@pytest.mark.parametrize("text,says", [
    (BILLION_LAUGHS, "entities"),
    (EXTERNAL, "entities"),
    ("<nvidia_smi_log>" + "<a>" * 5000 + "</a>" * 5000 + "</nvidia_smi_log>", "deeper"),
    ("<nvidia_smi_log><gpu id='x'><uuid>", "cut short"),
    ("<nvidia_smi_log><a></b></nvidia_smi_log>", "not well-formed"),
    ("<nvidia_smi_log>\n<timestamp>x</timestamp></nvidia_smi_log>\n", "lists no GPU"),
])
def test_hostile_q_x_is_one_line_error(tmp_path, text, says):
    path = tmp_path / "bad.xml"
    path.write_text(text)
    t0 = time.monotonic()
    r = run("check", "--from", str(path))
    assert time.monotonic() - t0 < 10
    assert r.exit_code == 2
    assert says in r.stderr and "bad.xml" in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1
    assert "root:" not in r.output + r.stderr  # /etc/passwd never read


def test_q_x_cut_short_keeps_what_was_read():
    text = xml_text(FAULTY_XML)
    cut = text[:text.index("<fan_speed>", text.index('id="00000000:2A:00.0"'))]
    from nvtopo.probes.nvml import xml as nvml_xml

    topo = nvml_xml.derive_xml(cut, "cut.xml")
    assert [g.pci_bus_id for g in topo.gpus] == ["00000000:18:00.0", "00000000:2A:00.0"]
    assert "nvml_text.xml_cut" in [n.code for n in topo.notes]
    assert topo.to_dict()["gpus"][1]["extra"]["nvml-text"]["pcie"]["current_width"] == 8


def test_show_from_ibstat_lists_its_nics():
    r = run("show", "--from", os.path.join(HERE, "..", "fixtures", "cli", "ibstat_ndr.txt"),
            "--format", "json")
    assert r.exit_code == 0, r.stderr
    model = json.loads(r.output)
    assert [n["name"] for n in model["nics"]] == ["mlx5_0", "mlx5_1"]
    assert model["gpus"] == [] and model["sources"] == ["ibstat-text"]
    assert [p["rate_gbps"] for n in model["nics"] for p in n["extra"]["sysfs"]["ports"]] == \
        [400, 400]


@pytest.mark.parametrize("name,source,actual", [
    ("ibv_devinfo_ib_cx7_mt4129_port_down_lid65535.txt", "ibv-devinfo-text", "DOWN"),
    ("ibstat_ib_hdr_cx6_mt4123_active_and_down.txt", "ibstat-text", "DOWN/Disabled")])
def test_port_down_from_pasted_text_names_its_source_and_no_none(name, source, actual):
    """Findings on pasted ports name the text they came from (they said "sysfs"), and a
    physical state the text does not give is not printed as "None" ("DOWN/None")."""
    r = runner.invoke(app, ["check", "--from", os.path.join(IB, name), "--format", "json"])
    assert r.exit_code == 0, r.stderr
    down = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "ib.port_down"]
    assert [(f["source"], f["actual"]) for f in down] == [(source, actual)]
    assert "None" not in down[0]["message"]


def test_refusal_names_what_nvtopo_reads_and_never_contradicts_itself(tmp_path):
    """A text with no matrix names every input nvtopo reads (it named only snapshots, topo and
    nvlink); a matrix that cannot be read is called one (it began "not ... nvidia-smi topo
    output: the matrix looks wrapped")."""
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\nnot a GPU in sight\n")
    r = runner.invoke(app, ["check", "--from", str(junk)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    for name in ("ibstat", "dcgmi nvlink -s", "gdscheck -p", "-q -x XML"):
        assert name in r.stderr
    wrapped = tmp_path / "wrapped.txt"
    wrapped.write_text("GPU0 GPU1\nfoo bar\n")
    r = runner.invoke(app, ["check", "--from", str(wrapped)])
    assert r.exit_code == 2 and "an nvidia-smi topo matrix nvtopo cannot read" in r.stderr
    assert "not an input" not in r.stderr


@pytest.mark.parametrize("command,names", [
    (["check"], ("-q -x", "XML", "ibstat", "ibv_devinfo", "ibstatus", "dcgmi", "gdscheck -p")),
    (["show"], ("-q -x", "XML", "ibstat", "ibv_devinfo", "ibstatus", "dcgmi", "gdscheck -p")),
    (["ib"], ("ibstat", "ibv_devinfo", "ibstatus")),
    (["links"], ("-q -x", "dcgmi nvlink -s"))])
def test_from_help_names_the_ticket_texts_each_command_reads(command, names):
    """`ib --from` said only "Read a snapshot"; check/show named neither the XML, nor ibstat,
    dcgmi or gdscheck."""
    r = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert r.exit_code == 0
    assert all(len(ln) <= 80 for ln in r.output.splitlines())
    at = r.output.index("│ --from")  # the option, not the examples
    block = " ".join(ln.strip(" │") for ln in r.output[at:].splitlines()[:14])
    for name in names:
        assert name in block, (command, name)


# --- a paste whose indentation was lost (issue 23 class 7) ------------------------------------

FLAT = [("ibstat_ib_hdr_cx6_flat_indentation_lost.txt",
         "ibstat_ib_hdr_cx6_mt4123_active_and_down.txt"),
        ("ibv_devinfo_ib_cx7_flat_indentation_lost.txt",
         "ibv_devinfo_ib_cx7_mt4129_port_down_lid65535.txt")]


@pytest.mark.parametrize("flat,indented", FLAT)
def test_flat_paste_reads_by_its_keys_as_the_indented_one(flat, indented):
    """Through a web form every line lost its indentation: it was refused ("no nvidia-smi topo
    matrix found"); read by its keys, it gives the very model the indented text gives."""
    assert readers.names(fx(flat)) == ["ib-text"]
    got, topo = ports(fx(flat))
    want, want_topo = ports(fx(indented))
    assert json.dumps(topo.to_dict(), sort_keys=True) == \
        json.dumps(want_topo.to_dict(), sort_keys=True)
    assert sorted(got) == sorted(want) and len(got) >= 1
    assert not topo.notes  # whole: no cut warning


def test_flat_ibstat_values_and_verdict():
    got, topo = ports(fx("ibstat_ib_hdr_cx6_flat_indentation_lost.txt"))
    up, down = got[("mlx5_0", 1)], got[("mlx5_1", 1)]
    assert (up.state, up.rate_gbps, up.lid, up.sm_lid) == ("ACTIVE", 200, 569, 393)
    assert (down.state, down.phys_state, down.rate.gbps) == ("DOWN", "Disabled", 10)
    assert topo.nics[0].sysfs.fw_ver == "20.33.1048"
    r = run("check", "--from", os.path.join(IB, "ibstat_ib_hdr_cx6_flat_indentation_lost.txt"),
            "--format", "json")
    assert r.exit_code == 0, r.output
    codes = [(f["code"], f["subject"]) for f in json.loads(r.stdout)["findings"]
             if f["severity"] in ("error", "warning")]
    assert codes == [("ib.port_down", "mlx5_1 port 1")]


def test_flat_block_ends_at_a_line_of_another_kind():
    """A flat block takes only the tool's own keys: what follows it (a -q line, a prompt)
    is not read into it, and the next device's header starts the next block."""
    text = ("CA 'mlx5_0'\nCA type: MT4129\nNumber of ports: 1\nPort 1:\nState: Active\n"
            "Rate: 400\nLink layer: InfiniBand\n$ nvidia-smi -q\nProduct Name: NVIDIA H100\n"
            "State: Active\n")
    bl = ib_text.blocks(text)
    assert [(b[0], b[1], b[4]) for b in bl] == [("ibstat-text", "mlx5_0", (0, 7))]
    assert "Product Name: NVIDIA H100" in ib_text.without_blocks(text)
    two = "hca_id: mlx5_0\ntransport: InfiniBand (0)\nport: 1\nstate: PORT_ACTIVE (4)\n" \
          "hca_id: mlx5_1\ntransport: InfiniBand (0)\nport: 1\nstate: PORT_DOWN (1)\n"
    got, _ = ports(two)
    assert (got[("mlx5_0", 1)].state, got[("mlx5_1", 1)].state) == ("ACTIVE", "DOWN")
    # a header alone, or one with unrelated flat lines, is still no block
    assert not ib_text.looks_like("CA 'mlx5_0'\nsomething: else\n")
