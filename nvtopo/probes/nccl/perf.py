"""nccl-tests output (``all_reduce_perf`` and the other ``*_perf``), as pasted: the run's
settings, its ranks, the table and the average bus bandwidth.

The format (nccl-tests' ``src/common.cu``)::

    # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 ...
    #
    # Using devices
    #  Rank  0 Group  0 Pid  33347 on   node-a device  0 [0x0f] NVIDIA H800
    #
    #                                                   out-of-place                 in-place
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) ...
               8             2     float     sum      -1    42.56    0.00    0.00      0    41.80 ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 123.456

Older nccl-tests print the header without ``#``, an ``error`` column for ``#wrong`` and no
``root`` column; MPI runs prefix each row with ``[0]``; a wrong count may be ``N/A``.  A new
run starts at each ``# nThread`` line.  Pure; bounded; every pattern linear.
"""

from __future__ import annotations

import re
from typing import List, Optional

from ...model.nccl import NcclTest, NcclTestRank, NcclTestRow, NcclTests
from ...model.topology import Topology
from ...safe import ascii_float, ascii_int, printable

SOURCE = "nccl-tests"
MAX_LINE = 1024
MAX_ROWS = 512
MAX_RANKS = 8192
MAX_TESTS = 32

_HEADER_RE = re.compile(r"^[#\s]*size\s+count\s+type\s+redop\s+(root\s+)?time\s+algbw\s+busbw")
_AVG_RE = re.compile(r"^\s*#\s*Avg bus bandwidth\s*:\s*([0-9.eE+\-]{1,20})")
_OOB_RE = re.compile(r"^\s*#\s*Out of bounds values\s*:\s*(\d{1,12} ?[A-Z]{0,8})")
_START_RE = re.compile(r"^\s*#\s*nThread (\d{1,6}) nGpus (\d{1,6})")
_RANK_RE = re.compile(r"^\s*#\s+Rank\s+(\d{1,7})\s+(?:Group\s+\d{1,7}\s+)?Pid\s+\d{1,10}\s+on\s+"
                      r"(\S{1,128})\s+device\s+(\d{1,4})\s+\[([0-9a-fA-Fx]{1,12})\]\s+"
                      r"([^\r\n]{1,120})$")
_NAME_RE = re.compile(r"\b([a-z][a-z_]{1,30}_perf)(?:_mpi)?\b")
_ROW_PREFIX_RE = re.compile(r"^\s*(?:\[\d{1,7}\]\s*)?")


def looks_like(text: str) -> bool:
    """Whether ``text`` holds an nccl-tests table (its header line) or its average line."""
    for line in text[:8 * 1024 * 1024].splitlines():
        if _HEADER_RE.match(line[:MAX_LINE]) or _AVG_RE.match(line[:MAX_LINE]):
            return True
    return False


def _row(tokens: List[str], root: bool) -> Optional[NcclTestRow]:
    want = 13 if root else 12
    if len(tokens) < want:
        return None
    size = ascii_int(tokens[0])
    if size is None:
        return None
    k = 5 if root else 4
    nums = tokens[k:k + 8]
    return NcclTestRow(size=size, count=ascii_int(tokens[1]), type=printable(tokens[2][:16]),
                       redop=printable(tokens[3][:16]),
                       root=ascii_int(tokens[4], signed=True) if root else None,
                       time_us=ascii_float(nums[0]), algbw=ascii_float(nums[1]),
                       busbw=ascii_float(nums[2]), wrong=printable(nums[3][:16]),
                       ip_time_us=ascii_float(nums[4]), ip_algbw=ascii_float(nums[5]),
                       ip_busbw=ascii_float(nums[6]), ip_wrong=printable(nums[7][:16]))


class _Read:
    def __init__(self) -> None:
        self.out = NcclTests()
        self.root: Optional[bool] = None
        self.name: Optional[str] = None

    def test(self, new: bool = False) -> NcclTest:
        if new or not self.out.tests:
            if len(self.out.tests) >= MAX_TESTS:
                self.out.tests[-1].truncated = True
                return self.out.tests[-1]
            self.out.tests.append(NcclTest(name=self.name))
            self.root = None
        return self.out.tests[-1]


def _line(r: _Read, line: str) -> None:
    start = _START_RE.match(line)
    if start is not None:
        t = r.test(new=bool(r.out.tests and (r.out.tests[-1].rows
                                             or r.out.tests[-1].nthread is not None)))
        t.nthread, t.ngpus = ascii_int(start.group(1)), ascii_int(start.group(2))
        return
    rank = _RANK_RE.match(line)
    if rank is not None:
        t = r.test()
        if len(t.ranks) < MAX_RANKS:
            t.ranks.append(NcclTestRank(
                rank=ascii_int(rank.group(1)) or 0, host=printable(rank.group(2)),
                device=ascii_int(rank.group(3)), bus=rank.group(4).lower(),
                gpu=printable(rank.group(5).strip())))
        return
    header = _HEADER_RE.match(line)
    if header is not None:
        r.root = header.group(1) is not None
        r.test()
        return
    avg, oob = _AVG_RE.match(line), _OOB_RE.match(line)
    if avg is not None:
        r.test().avg_busbw = ascii_float(avg.group(1))
    elif oob is not None:
        r.test().out_of_bounds = oob.group(1).strip()
    elif r.root is not None and not line.lstrip().startswith("#"):
        row = _row(line[_ROW_PREFIX_RE.match(line).end():].split(), r.root)  # type: ignore[union-attr]
        if row is not None:
            t = r.test()
            if len(t.rows) < MAX_ROWS:
                t.rows.append(row)
            else:
                t.truncated = True


def parse(text: str) -> NcclTests:
    """Every run in ``text`` (see the module doc); damage gives fewer rows, never an error."""
    r = _Read()
    for raw in text.splitlines():
        line = raw[:MAX_LINE]
        name = _NAME_RE.search(line)
        if name is not None and ("perf" in line and ("/" in line or "starting" in line
                                                     or line.lstrip().startswith(name.group(1)))):
            r.name = name.group(1)
            if r.out.tests and r.out.tests[-1].name is None:
                r.out.tests[-1].name = r.name
        _line(r, line)
    return r.out


def derive_text(text: str) -> Topology:
    """A model holding only the tables (``extra.nccl-tests``)."""
    topo = Topology(sources=[SOURCE])
    topo.nccl_tests = parse(text)
    return topo


def without_tables(text: str) -> str:
    """The text with the tables' lines (header, rows, ranks, averages) blanked."""
    out = []
    in_table = False
    for raw in text.splitlines():
        line = raw[:MAX_LINE]
        if _HEADER_RE.match(line) or _AVG_RE.match(line) or _OOB_RE.match(line) \
                or _START_RE.match(line) or _RANK_RE.match(line):
            in_table = bool(_HEADER_RE.match(line)) or in_table
            out.append("")
        elif in_table and line.strip() and (line.lstrip().startswith("#")
                                           or _row(line.split(), True) or _row(line.split(), False)):
            out.append("")
        else:
            in_table = in_table and bool(line.strip())
            out.append(raw)
    return "\n".join(out)


__all__ = ["SOURCE", "derive_text", "looks_like", "parse", "without_tables"]
