"""The per-node record (nvtopo/commands/collect/record.py): written, read back, and every
way it can arrive damaged: truncated, a wrong checksum or length, garbage between its
lines, records interleaved or glued, oversized, from a node nobody expected."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
from typing import Dict, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvtopo.commands.collect import record


class Sink:
    """What a Reader reports, kept for the test."""

    def __init__(self) -> None:
        self.good: Dict[str, Tuple[bytes, dict]] = {}
        self.bad: Dict[str, Tuple[str, str]] = {}

    def on_record(self, node, payload, meta):
        assert node not in self.good and node not in self.bad, node
        self.good[node] = (payload, meta)

    def on_bad(self, node, status, reason):
        assert node not in self.good, node
        self.bad[node] = (status, reason)


def reader(expected, **kw) -> Tuple[record.Reader, Sink]:
    sink = Sink()
    return record.Reader(set(expected), sink.on_record, sink.on_bad, **kw), sink


def lines_of(node: str, payload: bytes, meta=None) -> List[bytes]:
    return list(record.encode(node, payload, meta))


def feed(r: record.Reader, lines) -> None:
    for line in lines:
        r.feed(line)
    r.close()


PAYLOAD = os.urandom(5000)


def test_round_trip_keeps_payload_and_metadata():
    meta = {"topology_addr": "spine.leaf2.n3"}
    r, sink = reader({"n3"})
    feed(r, lines_of("n3", PAYLOAD, meta))
    assert sink.good == {"n3": (PAYLOAD, meta)} and not sink.bad


def test_the_header_says_length_and_sha256():
    head = lines_of("n1", PAYLOAD)[0].split()
    assert head[:3] == [b"NVTOPO-RECORD/1", b"HEAD", b"n1"]
    assert int(head[3]) == len(PAYLOAD)
    assert head[4].decode() == hashlib.sha256(PAYLOAD).hexdigest()
    assert head[5] == b"-"


def test_every_line_stays_under_srun_s_1024_byte_pieces():
    """srun splits longer lines and interleaves the pieces of different tasks."""
    longest_name = "n" * 128
    lines = lines_of(longest_name, os.urandom(100_000), {"topology_addr": "x" * 200})
    assert max(len(line) for line in lines) < 1024
    assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in lines)


def test_an_empty_payload_round_trips():
    r, sink = reader({"n1"})
    feed(r, lines_of("n1", b""))
    assert sink.good == {"n1": (b"", {})}


def test_node_names_are_checked_when_written():
    for bad in ("", "-n1", "n 1", "../etc", "n1/x", "é", "n" * 129):
        with pytest.raises(ValueError):
            list(record.encode(bad, b"x"))


# --- damage --------------------------------------------------------------------------------


def test_truncated_record_is_bad():
    lines = lines_of("n1", PAYLOAD)
    r, sink = reader({"n1"})
    feed(r, lines[:-3])  # the stream ended two data lines early
    assert sink.bad["n1"] == ("bad-record", f"truncated: the output ended after "
                              f"{len(PAYLOAD) - record.CHUNK - len(PAYLOAD) % record.CHUNK:,}"
                              f" of {len(PAYLOAD):,} bytes")


def test_a_lost_data_line_is_caught_by_the_length():
    lines = lines_of("n1", PAYLOAD)
    r, sink = reader({"n1"})
    feed(r, lines[:3] + lines[4:])
    status, reason = sink.bad["n1"]
    assert status == "bad-record"
    assert reason == f"truncated: {len(PAYLOAD) - record.CHUNK:,} of {len(PAYLOAD):,} bytes"


def test_wrong_checksum():
    lines = lines_of("n1", PAYLOAD)
    data = bytearray(base64.b64decode(lines[2].split()[3]))
    data[0] ^= 1
    lines[2] = b"NVTOPO-RECORD/1 DATA n1 " + base64.b64encode(bytes(data)) + b"\n"
    r, sink = reader({"n1"})
    feed(r, lines)
    assert sink.bad["n1"] == ("bad-record",
                              "checksum mismatch: the bytes are not those the node sent")


@pytest.mark.parametrize("delta", [-1, +1, +10 ** 6])
def test_wrong_length(delta):
    lines = lines_of("n1", PAYLOAD)
    head = lines[0].split(b" ")
    head[3] = str(len(PAYLOAD) + delta).encode()
    lines[0] = b" ".join(head)
    r, sink = reader({"n1"})
    feed(r, lines)
    status, reason = sink.bad["n1"]
    assert status == "bad-record"
    if delta < 0:
        assert reason == f"longer than its header says ({len(PAYLOAD) - 1:,} bytes)"
    else:
        assert reason.startswith(f"truncated: {len(PAYLOAD):,} of ")


def test_garbage_between_the_lines_is_ignored():
    lines = lines_of("n1", PAYLOAD)
    noisy = []
    for i, line in enumerate(lines):
        noisy.append(line)
        noisy.append(b"module load cuda/12.4\n" if i % 2 else b"\x1b[31mwarning\x00\n")
    noisy.insert(0, b"Lmod has detected the following error: " + b"x" * 10000 + b"\n")
    r, sink = reader({"n1"})
    feed(r, noisy)
    assert sink.good == {"n1": (PAYLOAD, {})}
    assert r.other_lines == len(lines) + 1


def test_interleaved_records_of_many_nodes():
    payloads = {f"n{i}": os.urandom(3000 + 97 * i) for i in range(20)}
    streams = [lines_of(n, p) for n, p in payloads.items()]
    rng = random.Random(7)
    merged = []
    while any(streams):
        s = rng.choice([s for s in streams if s])
        merged.append(s.pop(0))
    r, sink = reader(set(payloads))
    feed(r, merged)
    assert {n: p for n, (p, _) in sink.good.items()} == payloads and not sink.bad


def test_two_records_glued_on_one_line():
    """n1's END and n2's HEAD lost their line break: both are still read (the magic marks
    where a line starts)."""
    a, b = lines_of("n1", PAYLOAD), lines_of("n2", PAYLOAD[:1000])
    glued = a[:-1] + [a[-1].rstrip(b"\n") + b[0]] + b[1:]
    r, sink = reader({"n1", "n2"})
    feed(r, glued)
    assert {n: p for n, (p, _) in sink.good.items()} == {"n1": PAYLOAD, "n2": PAYLOAD[:1000]}
    # a data line glued to another node's chatter loses its end: that record is bad
    a = lines_of("n1", PAYLOAD)
    a[2] = a[2].rstrip(b"\n") + b"Lmod: module loaded " + a[3]
    del a[3]
    r, sink = reader({"n1"})
    feed(r, a)
    assert sink.bad["n1"] == ("bad-record", "a data line with more than one field")


def test_an_end_lost_after_every_byte_arrived():
    r, sink = reader({"n1"})
    feed(r, lines_of("n1", PAYLOAD)[:-1])
    assert sink.bad["n1"] == ("bad-record",
                              "no end line: the output ended, or the end was damaged")


def test_two_records_back_to_back_are_both_read():
    a, b = lines_of("n1", PAYLOAD), lines_of("n2", PAYLOAD[:10])
    r, sink = reader({"n1", "n2"})
    feed(r, a + b)
    assert set(sink.good) == {"n1", "n2"} and sink.good["n2"][0] == PAYLOAD[:10]


def test_a_second_record_from_a_node_is_counted_not_taken():
    r, sink = reader({"n1"})
    feed(r, lines_of("n1", PAYLOAD) + lines_of("n1", b"other"))
    assert sink.good["n1"][0] == PAYLOAD and r.repeated == {"n1": 1}


def test_a_record_begun_twice_is_bad():
    a = lines_of("n1", PAYLOAD)
    r, sink = reader({"n1"})
    feed(r, a[:3] + a)
    assert sink.bad["n1"] == ("bad-record", "a second record began before the first ended")


def test_oversized_record_is_refused_at_its_header():
    big = lines_of("n1", os.urandom(10_000))
    r, sink = reader({"n1"}, max_record=4096)
    feed(r, big)
    assert sink.bad["n1"] == ("bad-record", "record of 10,000 bytes is larger than the 0 MiB cap")
    assert not r.pending
    r, sink = reader({"n1"})
    head = big[0].split(b" ")
    head[3] = str(record.MAX_RECORD_BYTES + 1).encode()
    feed(r, [b" ".join(head)] + big[1:])
    assert "larger than the 64 MiB cap" in sink.bad["n1"][1]


def test_a_large_record_is_spooled_to_disk_not_held():
    payload = os.urandom(3 * record.SPOOL_IN_MEMORY)
    lines = lines_of("n1", payload)
    r, sink = reader({"n1"})
    for line in lines[:-1]:
        r.feed(line)
    spool = r.pending["n1"].spool
    assert spool._rolled  # past SPOOL_IN_MEMORY the bytes went to a temporary file
    r.feed(lines[-1])
    assert sink.good["n1"][0] == payload


def test_unexpected_node():
    r, sink = reader({"n1"})
    feed(r, lines_of("n7", PAYLOAD) + lines_of("n1", PAYLOAD))
    assert sink.bad == {"n7": ("unexpected", "a record from a node this collection did not "
                                             "run on")}
    assert set(sink.good) == {"n1"}


def test_a_hostile_node_name_is_unexpected_and_kept_as_bytes_say():
    r, sink = reader({"n1"})
    feed(r, [b"NVTOPO-RECORD/1 HEAD ../../etc/passwd 5 " + b"0" * 64 + b" -\n",
             b"NVTOPO-RECORD/1 HEAD n\x1b[2J 5 " + b"0" * 64 + b" -\n"])
    assert set(sink.bad) == {"../../etc/passwd", "n\x1b[2J"}
    assert all(v[0] == "unexpected" for v in sink.bad.values())


@pytest.mark.parametrize("line, reason", [
    (b"NVTOPO-RECORD/1 HEAD n1 12 " + b"0" * 64 + b"\n", "header has 3 fields, not 4"),
    (b"NVTOPO-RECORD/1 HEAD n1 x " + b"0" * 64 + b" -\n", "header length is not a number"),
    (b"NVTOPO-RECORD/1 HEAD n1 5 " + b"G" * 64 + b" -\n", "header checksum is not a SHA-256"),
    (b"NVTOPO-RECORD/1 HEAD n1 5 " + b"0" * 64 + b" !!!\n",
     "header metadata is not base64 of a JSON object"),
    (b"NVTOPO-RECORD/1 HEAD n1 5 " + b"0" * 64 + b" " + base64.b64encode(b"[1]") + b"\n",
     "header metadata is not base64 of a JSON object"),
    (b"NVTOPO-RECORD/1 DATA n1 AAAA\n", "data without a header (the header was lost or "
                                        "glued to another line)"),
    (b"NVTOPO-RECORD/1 END n1\n", "an end without a header"),
    (b"NVTOPO-RECORD/1 WHAT n1\n", "unknown record line b'WHAT'"),
])
def test_malformed_lines(line, reason):
    r, sink = reader({"n1"})
    feed(r, [line])
    assert sink.bad["n1"] == ("bad-record", reason)


def test_data_that_is_not_base64():
    lines = lines_of("n1", PAYLOAD)
    lines[2] = b"NVTOPO-RECORD/1 DATA n1 ***notbase64***\n"
    r, sink = reader({"n1"})
    feed(r, lines)
    assert sink.bad["n1"] == ("bad-record", "data line 2 is not base64")


def test_fail_line_says_why_in_one_escaped_line():
    line = record.fail_line("n2", "nvidia-smi: boom\n\x1b[31mred\x1b[0m")
    assert line.count(b"\n") == 1 and b"\x1b" not in line
    r, sink = reader({"n2"})
    feed(r, [line])
    status, reason = sink.bad["n2"]
    assert status == "failed" and reason.startswith("nvidia-smi: boom")
    assert "\\x1b[31mred" in reason


def test_srun_labels_are_taken_off_and_tasks_learnt():
    lines = lines_of("n3", PAYLOAD)
    labelled = [f"{2:>2}: ".encode() + line for line in lines]
    r, sink = reader({"n3"}, labelled=True)
    feed(r, labelled)
    assert sink.good["n3"][0] == PAYLOAD and r.tasks == {2: "n3"}
    # unlabelled input to a labelled reader is read all the same
    r, sink = reader({"n3"}, labelled=True)
    feed(r, lines)
    assert sink.good["n3"][0] == PAYLOAD


def test_a_very_long_line_is_looked_at_only_to_its_bound():
    r, sink = reader({"n1"})
    r.feed(b"NVTOPO-RECORD/1 DATA n1 " + b"A" * 10_000_000)
    assert sink.bad["n1"][0] == "bad-record"


# --- any interleaving, any garbage --------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=6),
       order=st.randoms(use_true_random=False),
       noise=st.lists(st.binary(max_size=80).filter(lambda b: b"\n" not in b
                                                    and not b.startswith(b"NVTOPO")),
                      max_size=20))
def test_any_interleaving_with_noise_reads_every_record(sizes, order, noise):
    payloads = {f"node{i}": bytes((i * 7 + j) % 256 for j in range(n))
                for i, n in enumerate(sizes)}
    streams = [lines_of(n, p, {"i": i}) for i, (n, p) in enumerate(payloads.items())]
    streams.append([line + b"\n" for line in noise])
    merged = []
    while any(streams):
        s = order.choice([s for s in streams if s])
        merged.append(s.pop(0))
    r, sink = reader(set(payloads))
    feed(r, merged)
    assert not sink.bad
    assert {n: p for n, (p, _) in sink.good.items()} == payloads
    assert [sink.good[n][1] for n in payloads] == [{"i": i} for i in range(len(payloads))]


@settings(max_examples=80, deadline=None)
@given(cut=st.integers(0, 10_000), flip=st.integers(0, 10_000))
def test_any_single_damage_is_never_taken_for_a_record(cut, flip):
    """Drop one line, or change one byte: never a record with other bytes than sent."""
    payload = bytes(range(256)) * 8
    lines = lines_of("n1", payload)
    damaged = list(lines)
    if cut % 2:
        del damaged[cut % len(damaged)]
    else:
        i = flip % len(damaged)
        line = bytearray(damaged[i])
        j = cut % max(1, len(line) - 1)
        line[j] = (line[j] + 1 + flip % 200) % 256
        damaged[i] = bytes(line)
    r, sink = reader({"n1"})
    feed(r, damaged)
    # a change the checksum cannot see (the metadata field, a base64 padding bit) may pass;
    # a record with other bytes than the node sent never does
    if "n1" in sink.good:
        assert sink.good["n1"][0] == payload


def test_meta_round_trips_as_json():
    meta = {"topology_addr": "spine.leaf2.n3", "n": 3}
    line = lines_of("n3", b"x", meta)[0]
    raw = base64.b64decode(line.split()[5])
    assert json.loads(raw) == meta


class BoundSink(Sink):
    def __init__(self) -> None:
        super().__init__()
        self.mismatched: List[Tuple[str, object, object]] = []

    def on_mismatch(self, node, sender, task):
        self.mismatched.append((node, sender, task))


def test_a_bound_reader_takes_a_record_only_from_the_task_of_its_node():
    """With the engine's layout (srun task -> node), a record line counts only when its
    task runs on the node it names: the label is srun's, the name is the node's say-so."""
    sink = BoundSink()
    r = record.Reader({"n1", "n2"}, sink.on_record, sink.on_bad, labelled=True,
                      senders={0: "n1", 1: "n2"}, on_mismatch=sink.on_mismatch)
    lines = [b"0: " + x for x in lines_of("n2", PAYLOAD)]        # forged: task 0 is n1
    lines += [b"1: " + x for x in lines_of("n2", PAYLOAD[:10])]  # n2's own
    lines += [b"0: " + x for x in lines_of("n1", PAYLOAD[:20])]  # n1's own
    lines += lines_of("n1", PAYLOAD[:30])                        # no label: nobody's
    lines += [b"7: " + x for x in lines_of("n1", PAYLOAD[:40])]  # a task srun did not start
    lines += [b"0: " + record.fail_line("../x", "boom")]         # not even a node name
    feed(r, lines)
    assert sink.good == {"n2": (PAYLOAD[:10], {}), "n1": (PAYLOAD[:20], {})}
    assert sink.mismatched == [("n2", "n1", 0), ("n1", None, None), ("n1", None, 7),
                               ("../x", "n1", 0)]  # each once, however many lines
    assert not sink.bad and r.tasks == {0: "n1", 1: "n2"}
