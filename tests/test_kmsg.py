"""Pasted kernel logs (nvtopo/probes/kmsg): every form of stamp, the events each fixture
holds (fixtures/kernel/expected.json), recognition by content beside the other readers,
bounds, and a fuzz test."""

import gzip
import json
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvtopo import snapshot
from nvtopo.errors import NvtopoError
from nvtopo.probes import kmsg, readers
from nvtopo.probes.kmsg import events as kev
from nvtopo.probes.kmsg import lines as klines
from test_hostile_parsers import finishes_within

FIX = Path(__file__).resolve().parent.parent / "fixtures"
KERNEL = FIX / "kernel"
EXPECTED: Dict[str, Any] = json.loads((KERNEL / "expected.json").read_text("utf-8"))


def compact(e: Any) -> str:
    """One event as expected.json spells it."""
    parts = [e.kind, e.pci_address or ("redacted" if e.redacted else "-")]
    for k in ("device", "code", "link", "port", "state", "severity", "error_type", "reporter"):
        v = getattr(e, k)
        if v is not None:
            parts.append(f"{k}={v}")
    if e.errors:
        parts.append("errors=" + ",".join(e.errors))
    return " ".join(parts)


def test_every_fixture_is_listed() -> None:
    files = {p.name for p in KERNEL.iterdir() if p.suffix not in (".md", ".json")}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_events(name: str) -> None:
    topo = snapshot.load(str(KERNEL / name))
    log = topo.kernel_log
    assert topo.sources == ["kernel-log"] and log is not None
    want = EXPECTED[name]
    assert (log.format, log.boots) == (want["format"], want["boots"])
    assert [compact(e) for e in log.events] == want["events"]


MSG = "NVRM: Xid (PCI:0000:3b:00): 79, pid=2841, name=python3, GPU has fallen off the bus."


@pytest.mark.parametrize("line,form,secs", [
    (f"[ 8412.334462] {MSG}", "dmesg", 8412.334462),
    (f"<4>[ 8412.334462] {MSG}", "dmesg", 8412.334462),
    (MSG, "bare", None),
    (f"[Mon Jan  1 10:00:00 2024] {MSG}", "dmesg-T", 1704103200.0),
    (f"Jan 01 10:00:00.123456 host-1 kernel: {MSG}", "journal", None),
    (f"Jan  1 10:00:00 host-1 kernel: [ 8412.334462] {MSG}", "syslog", 8412.334462),
    (f"2024-01-01T10:00:00.5+00:00 host-1 kernel: {MSG}", "syslog", 1704103200.5),
    (f"> [ 8412.334462] {MSG}", "dmesg", 8412.334462),
    (f"kern  :err   : [ 8412.334462] {MSG}", "dmesg", 8412.334462),
])
def test_every_stamp_gives_the_same_event(line: str, form: str, secs: Any) -> None:
    log = kmsg.parse(line + "\n")
    assert log.format == form
    [e] = log.events
    assert (e.kind, e.pci_address, e.code, e.line) == ("xid", "0000:3b:00.0", 79, 1)
    if secs is not None:
        assert e.seconds == pytest.approx(secs)
    assert e.seconds is not None or form == "bare"


def test_journal_stamps_without_a_year_keep_their_differences() -> None:
    log = kmsg.parse(f"Feb 28 23:59:59 h kernel: {MSG}\nFeb 29 00:00:09 h kernel: {MSG}\n")
    a, b = log.events
    assert b.seconds - a.seconds == pytest.approx(10.0)


def test_a_first_line_cut_inside_its_stamp_is_read() -> None:
    log = kmsg.parse(f"34462] {MSG}\n[ 8413.0] {MSG}\n")
    assert [e.line for e in log.events] == [1, 2]


def test_a_wrapped_message_is_joined_only_in_a_stamped_log() -> None:
    text = ("[ 7731.912811] NVRM: Xid (PCI:0000:ca:00): 79, pid=12093, name=torchrun, GPU has\n"
            "fallen off the bus.\n")
    [e] = kmsg.parse(text).events
    assert e.text.endswith("GPU has fallen off the bus.")


def test_reboots_are_counted() -> None:
    text = f"[ 900.0] {MSG}\n[    0.000000] Linux version 6.8.0\n[ 12.0] x\n"
    assert kmsg.parse(text).boots == 2  # the Linux version line (900 -> 0 not counted again)
    assert kmsg.parse(f"[ 900.0] {MSG}\n[ 3.0] {MSG}\n").boots == 2  # the stamp went back
    text = f"[ 900.0] {MSG}\n[ 3.0] {MSG}\n-- Boot 1a2b --\nJan 01 10:00:00 h kernel: x\n"
    assert kmsg.parse(text).boots == 3


@pytest.mark.parametrize("text,addr", [
    ("NVRM: Xid (PCI:0000:xx:00): 79, pid=1", None),
    ("NVRM: Xid (0000:3B:00): 79, GPU has fallen off the bus.", "0000:3b:00.0"),  # old driver
    ("NVRM: Xid (PCI:00000018:01:00): 149, Link 03", "0018:01:00.0"),
    ("NVRM: Xid (PCI:10018:01:00): 149, Link 03", "10018:01:00.0"),  # a domain past 0xffff
])
def test_addresses(text: str, addr: Any) -> None:
    [e] = kmsg.parse(text).events
    assert e.pci_address == addr
    assert e.redacted == (addr is None)


def test_a_redacted_address_is_never_guessed() -> None:
    for e in kmsg.parse((KERNEL / "redacted-xid.txt").read_text("utf-8")).events:
        assert e.pci_address is None and e.redacted


def test_nvlink_number_only_for_nvlink_codes() -> None:
    [e] = kmsg.parse("NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception on (GPC 1, "
                     "TPC 2, SM 0): Out Of Range Address link 3\n").events
    assert e.link is None
    [e] = kmsg.parse("NVRM: Xid (PCI:0000:3b:00): 74, pid=1, name=x, NVLink: fatal error "
                     "detected on link 11(0x0, 0x0, 0x100000, 0x0)\n").events
    assert e.link == 11


def test_older_aer_lines_without_the_aer_prefix() -> None:
    text = ("pcieport 0000:00:03.1: AER: Corrected error received: id=0018\n"
            "pcieport 0000:00:03.1: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
            "id=0018(Receiver ID)\n"
            "pcieport 0000:00:03.1:   device [8086:2f08] error status/mask=00000001/00002000\n"
            "pcieport 0000:00:03.1:    [ 0] Receiver Error         (First)\n")
    [e] = kmsg.parse(text).events
    assert (e.pci_address, e.reporter, e.severity, e.error_type, e.errors) == (
        "0000:00:03.1", "0000:00:03.1", "corrected", "Physical Layer", ["Receiver Error"])


@pytest.mark.parametrize("path", sorted((FIX / "gds-text").glob("*.txt"))
                         + sorted((FIX / "ib-text").glob("*.txt"))
                         + sorted((FIX / "nvml-text").glob("*.txt"))[:20]
                         + sorted((FIX / "topo-corpus").glob("*.txt"))[:20],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_other_texts_are_not_kernel_logs(path: Path) -> None:
    text = path.read_text("utf-8", errors="replace")
    assert not kmsg.looks_like(text)


def test_a_log_beside_a_topo_matrix_is_read_with_it() -> None:
    from nvtopo import examples

    matrix = examples.read("dgx-h100")
    log = (KERNEL / "dmesg-xid79.txt").read_text("utf-8")
    assert readers.names(matrix + "\n" + log) == ["topo-text", "kernel-log"]
    topo = snapshot.load_text(matrix + "\n" + log, "t.txt")
    assert topo.gpus and len(topo.kernel_log.events) == 4


def test_a_kernel_log_is_not_kept_in_a_snapshot() -> None:
    with pytest.raises(NvtopoError, match="not kept in a snapshot"):
        snapshot.load_document(str(KERNEL / "dmesg-xid79.txt"))


def test_bug_report_gz_is_read_through_the_bounded_reader(tmp_path: Path) -> None:
    bomb = tmp_path / "nvidia-bug-report.log.gz"
    bomb.write_bytes(gzip.compress(b"[ 1.0] x\n" * (snapshot.MAX_INPUT_BYTES // 9 + 1),
                                   compresslevel=1))
    with pytest.raises(NvtopoError) as exc:
        snapshot.load(str(bomb))
    assert "\n" not in str(exc.value)


def test_bounds(monkeypatch: Any) -> None:
    monkeypatch.setattr(kmsg, "MAX_EVENTS", 3)
    log = kmsg.parse((MSG + "\n") * 10)
    assert (len(log.events), log.dropped) == (3, 7)
    [e] = kmsg.parse("[ 1.0] " + MSG + " " + "x" * 50_000).events
    assert len(e.text) <= kev.MAX_TEXT
    monkeypatch.setattr(klines, "MAX_LINES", 5)
    log = kmsg.parse((MSG + "\n") * 10)
    assert log.cut and log.lines == 5 and len(log.events) == 3
    assert not kmsg.parse((MSG + "\n") * 5).cut  # exactly as many lines as are read


def test_a_large_log_is_read_whole_and_does_not_hang() -> None:
    """16,000 lines: every event read; the bound only detects a hang (speed is measured in
    benchmarks/, not here: loaded machines are slow)."""
    text = (KERNEL / "kern-log-aer-corrected.txt").read_text("utf-8") * 2000  # 16,000 lines
    start = time.perf_counter()
    log = kmsg.parse(text)
    assert len(log.events) == 4000
    assert time.perf_counter() - start < 120.0


PIECES = [MSG, "[ 12.5] ", "pcieport 0000:00:03.1: AER: Corrected error received: 0000:03:00.0",
          "nvidia 0000:03:00.0: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer,",
          "   [ 0] RxErr", "mlx5_core 0000:5e:00.0 ib0: Link down", "port 1 state ACTIVE mlx5_0",
          "nvme nvme0: I/O 1 QID 2 timeout, reset controller", "nvidia-nvswitch0: SXid (PCI:",
          "Jan 01 10:00:00 h kernel: ", "[Mon Jan  1 10:00:00 2024] ", "\n", "> ", "Link 7",
          "NVRM: GPU0 _kgspRpcRecvPoll: GSP RPC timeout", "fallen off the bus", "0000:xx:00"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=20)), max_size=40))
def test_fuzzed_kernel_log_never_crashes(pieces: List[str]) -> None:
    text = "".join(pieces)
    with finishes_within(10):
        log = kmsg.parse(text)
        for e in log.events:
            assert e.pci_address is None or kev.pci(e.pci_address) == e.pci_address
            assert "\x1b" not in e.text and len(e.text) <= kev.MAX_TEXT
            assert e.to_dict()["kind"] in ("xid", "sxid", "off_bus", "gsp_timeout", "aer",
                                           "port", "nvme_reset")
        try:
            topo = snapshot.load_text(text, "fuzz.txt")
        except NvtopoError:
            return
        from nvtopo import checks

        for f in checks.select_and_run(topo).findings:  # the events family never raises
            assert "\x1b" not in f.message


def test_the_xid_table_holds_every_code_the_issue_names() -> None:
    from nvtopo.model.events import xid_table

    table = xid_table()
    wanted = [13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 109, 119, 120, 136,
              137, 140, 143, 144, 145, 149, 154]
    assert [c for c in wanted if str(c) not in table] == []
    data = json.loads((Path(kmsg.__file__).parents[2] / "model" / "xid.json").read_text())
    actions = set(data["actions"]) | {"from_text"}
    assert {v["action"] for v in table.values()} <= actions
    assert {c for c, v in table.items() if v.get("nvlink")} >= {"74", "144", "145", "149"}


def test_a_healthy_dmesg_x_is_a_kernel_log() -> None:
    text = "".join(f"kern  :info  : [   {i}.000000] usb 1-{i}: new device\n" for i in range(3))
    assert kmsg.looks_like(text) and kmsg.parse(text).events == []
