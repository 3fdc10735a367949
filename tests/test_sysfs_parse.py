"""sysfs value parsers, path resolution inside the root, and the .sysfs text archive."""

import os

import pytest

from nvtopo import fakesys
from nvtopo.model import pci_bdf
from nvtopo.probes import ProbeOptions, sysfs


@pytest.mark.parametrize("raw,gbps,width,speed", [
    ("400 Gb/sec (4X NDR)", 400, "4X", "NDR"),
    ("200 Gb/sec (4X HDR)", 200, "4X", "HDR"),
    ("10 Gb/sec (4X)", 10, "4X", None),            # old kernels: no speed name
    ("0 GB/sec", 0, None, None),                   # MLNX_OFED 4.3, unpopulated port
    ("2.5 Gb/sec (1X SDR)", 2.5, "1X", "SDR"),     # the one fractional kernel value
    ("14.0625 Gb/sec (1X FDR)", 14.0625, "1X", "FDR"),
    ("200 Gb/sec (2X NDR)", 200, "2X", "NDR"),     # 2X width (split port)
    ("800 Gb/sec (4X XDR)", 800, "4X", "XDR"),
    ("56 Gb/sec (4X FDR)", 56, "4X", "FDR"),
    ("100 Gb/sec (4X EDR)", 100, "4X", "EDR"),
])
def test_rate_every_form(raw, gbps, width, speed):
    r = sysfs.parse_rate(raw)
    assert r["raw"] == raw
    assert r["gbps"] == gbps and type(r["gbps"]) is type(gbps)
    assert r["width"] == width
    assert r["speed"] == speed


@pytest.mark.parametrize("raw", [None, "", "fast", "Gb/sec", "N/A"])
def test_rate_not_a_rate(raw):
    assert sysfs.parse_rate(raw)["gbps"] is None


@pytest.mark.parametrize("raw,code,name", [
    ("4: ACTIVE", 4, "ACTIVE"), ("1: DOWN", 1, "DOWN"), ("5: LinkUp", 5, "LinkUp"),
    ("7: Phy Test", 7, "Phy Test"), ("2: Polling\n", 2, "Polling"), ("weird", None, "weird"),
    (None, None, None),
])
def test_enum(raw, code, name):
    assert sysfs.parse_enum(raw) == (code, name)


@pytest.mark.parametrize("raw,gts,gen", [
    ("32.0 GT/s PCIe", 32.0, 5), ("2.5 GT/s PCIe", 2.5, 1), ("16.0 GT/s PCIe", 16.0, 4),
    ("8 GT/s", 8.0, 3), ("16 GT/s", 16.0, 4), ("5 GT/s", 5.0, 2), ("2.5 GT/s", 2.5, 1),
    ("Unknown", None, None), ("Unknown speed", None, None), (None, None, None),
])
def test_pcie_speed_before_and_after_5_7(raw, gts, gen):
    assert sysfs.parse_pcie_speed(raw) == gts
    assert sysfs.pcie_gen(sysfs.parse_pcie_speed(raw)) == gen


def test_cpulist_count():
    assert sysfs.cpulist_count("0-55,112-167") == 112
    assert sysfs.cpulist_count("3") == 1
    assert sysfs.cpulist_count("") == 0
    assert sysfs.cpulist_count("x-y") is None


def test_bus_ids_normalised_across_sources():
    assert pci_bdf("00000000:1B:00.0") == pci_bdf("0000:1b:00.0") == (0, 27, 0, 0)
    assert pci_bdf("00000008:01:00.0") == (8, 1, 0, 0)
    assert pci_bdf("nonsense") is None


def _links(m):
    return lambda k: m.get(k)


def test_resolve_relative_absolute_and_dotdot_stay_inside_root():
    links = {"class/infiniband/mlx5_0": "../../devices/pci0000:15/0000:15:01.0/infiniband/mlx5_0",
             "devices/pci0000:15/0000:15:01.0/infiniband/mlx5_0/device": "../../../0000:15:01.0",
             "bus/pci/devices/0000:15:01.0": "/sys/devices/pci0000:15/0000:15:01.0",
             "escape": "../../../../etc"}
    cache = {}
    r = sysfs.resolve_path
    assert r("class/infiniband/mlx5_0/ports/1/state", _links(links), cache) == \
        "devices/pci0000:15/0000:15:01.0/infiniband/mlx5_0/ports/1/state"
    assert r("class/infiniband/mlx5_0/device", _links(links), cache) == \
        "devices/pci0000:15/0000:15:01.0"
    # an absolute target is re-rooted, never followed into the live /sys
    assert r("bus/pci/devices/0000:15:01.0/numa_node", _links(links), cache) == \
        "devices/pci0000:15/0000:15:01.0/numa_node"
    assert r("escape/passwd", _links(links), cache) == "etc/passwd"


def test_resolve_survives_link_loops():
    links = {"a": "b", "b": "a"}
    assert isinstance(sysfs.resolve_path("a/x", _links(links), {}), str)


def test_archive_parse_all_entry_kinds(tmp_path):
    text = ("# comment\n\n"
            "devices/x/state = 4: ACTIVE\n"
            "devices/x/raw =raw no newline\n"
            "devices/x/tarred =tar 18\n"
            "devices/x/empty =\n"
            "devices/x/esc = a\\tb\\\\c\n"
            "class/x -> ../devices/x\n"
            "devices/x/bad ! EINVAL\n"
            "devices/x/dir/\n")
    faults = fakesys.materialize(text, str(tmp_path))
    root = tmp_path
    assert (root / "devices/x/state").read_bytes() == b"4: ACTIVE\n"
    assert (root / "devices/x/raw").read_bytes() == b"no newline"
    tarred = (root / "devices/x/tarred").read_bytes()
    assert len(tarred) == 4096 and tarred.startswith(b"18\n\0")
    assert (root / "devices/x/empty").read_bytes() == b"\n"
    assert (root / "devices/x/esc").read_bytes() == b"a\tb\\c\n"
    assert os.readlink(root / "class/x") == "../devices/x"
    assert (root / "devices/x/dir").is_dir()
    assert faults == {"devices/x/bad": "EINVAL: Invalid argument"}


@pytest.mark.parametrize("line", ["just-a-path", "/abs = 1", "a/../b = 1", "a ?? b"])
def test_archive_rejects_bad_lines(line):
    with pytest.raises(fakesys.ArchiveError):
        fakesys.parse(line + "\n")


def test_capture_strips_tar_nul_padding_and_records_errors(tmp_path):
    text = ("bus/pci/devices/\n"
            "class/infiniband/\n"
            "module/x/initstate =tar live\n")
    fakesys.materialize(text, str(tmp_path))
    view = sysfs.LiveView(str(tmp_path), faults={"module/x/refcnt": "EIO: Input/output error"})
    assert view.read("module/x/initstate") == ("live", None)
    assert view.read("module/x/refcnt") == (None, "EIO: Input/output error")
    assert view.read("module/x/absent")[1].startswith("ENOENT")
    assert view.files == {"module/x/initstate": "live"}
    assert set(view.errors) == {"module/x/refcnt", "module/x/absent"}


def test_capture_of_a_missing_root_is_recorded_not_raised(tmp_path):
    ev = sysfs.capture(ProbeOptions(sysfs_root=str(tmp_path / "nope")))
    assert ev["status"] == "missing" and "not a sysfs tree" in ev["error"]
    topo = sysfs.derive(ev)
    assert topo.gpus == [] and topo.nics == []
    assert [n.code for n in topo.notes] == ["sysfs.unavailable"]


def test_one_bus_id_parser_and_no_io_in_the_evidence_view():
    # sysfs has no bus-id parser of its own: nvtopo.model.pci_bdf is the one
    assert not hasattr(sysfs, "parse_bdf") and not hasattr(sysfs, "BDF_RE")
    # the evidence view is pure: no file reader (the old copy used a root it never had)
    assert not hasattr(sysfs.EvidenceView, "_read_bytes")
    assert sysfs.sysfs_bdf("0000:1b:00.0") == pci_bdf("0000:1b:00.0") == (0, 0x1B, 0, 0)
    assert sysfs.sysfs_bdf("10000:e1:00.7") == (0x10000, 0xE1, 0, 7)  # VMD domain
    # only the kernel's spelling names a PCI device in a sysfs path
    for name in ("00000000:1B:00.0", "1b:00.0", "0000:1b:00", "12:34", "pci0000:15",
                 "0000:1B:00.0", "mlx5_core.sf.2", "0:0:0:0", ""):
        assert sysfs.sysfs_bdf(name) is None, name


def test_capture_of_an_empty_or_proc_like_root_is_missing_not_the_live_sys(tmp_path):
    ev = sysfs.capture(ProbeOptions(sysfs_root=""))
    assert ev["status"] == "missing" and ev["root"] == "" and ev["files"] == {}
    assert ev["error"] == "'' is not a sysfs tree (no such directory)"
    fakesys.materialize("bus/pci/devices = x\ndevices = Character devices:\n", str(tmp_path))
    ev = sysfs.capture(ProbeOptions(sysfs_root=str(tmp_path)))
    assert ev["status"] == "missing" and "no devices/ directory" in ev["error"]
