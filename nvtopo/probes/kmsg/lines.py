"""Kernel log lines: the stamp and prefix each way of printing the kernel's ring buffer puts
before a message, taken off (``docs/events.md`` §1).

The forms read, by content, line by line (a paste may mix them, as ``nvidia-bug-report.log``
does):

* ``dmesg``: ``[  123.456789] msg`` (seconds since boot), or ``msg`` alone (``dmesg -t``);
  ``dmesg -r`` / ``/dev/kmsg`` put ``<4>`` before it;
* ``dmesg -T``: ``[Mon Jan  1 10:00:00 2024] msg``;
* ``journalctl -k`` (``short``, ``-o short-precise``): ``Jan 01 10:00:00.123456 host kernel:
  msg``; ``-o short-iso`` and rsyslog's ISO stamps: ``2024-01-01T10:00:00+00:00 host kernel:
  msg``; ``/var/log/kern.log`` and ``/var/log/messages``: the same syslog form, often with the
  ``[  123.456789]`` stamp after ``kernel:``;
* excerpts pasted in tickets: a mail quote (``> ``), a first line cut inside its stamp
  (``3.456789] msg``), a long message wrapped onto the next line (joined back where the log
  has stamps: an unstamped line after a stamped one continues it).

Pure; every pattern linear; every line cut at :data:`MAX_LINE`.
"""

from __future__ import annotations

import calendar
import re
from typing import Iterator, List, NamedTuple, Optional

from ...safe import ascii_int

#: Longest line read (a kernel message is under 1 KiB); longer lines are cut.
MAX_LINE = 1024
#: Most lines read; the rest is not (the log says it was cut).
MAX_LINES = 400_000
#: Most unstamped lines joined to a stamped one (a wrapped message).
MAX_JOIN = 2

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MON = "(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_PRIO_RE = re.compile(r"^<[0-7]>")
_MONO_RE = re.compile(r"^\[ {0,12}([0-9]{1,10})\.([0-9]{1,9})\](?:\[ {0,8}[TC][0-9]{1,8}\])? ?")
#: Talos's remote syslog: ``192.168.11.119: kern: warning: [2026-04-22T21:27:51.29Z]: msg``.
_TALOS_RE = re.compile(r"^[^ ]{1,64}: kern: {1,2}[a-z]{1,8}: \[([0-9]{4})-([0-9]{2})-([0-9]{2})T"
                       r"([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?Z?\]: ")
_CUT_MONO_RE = re.compile(r"^[0-9]{0,10}\.?[0-9]{1,9}\] ")
_WALL_RE = re.compile(r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) " + _MON +
                      r" {1,2}([0-9]{1,2}) ([0-9]{2}):([0-9]{2}):([0-9]{2}) ([0-9]{4})\] ?")
_SYSLOG_RE = re.compile("^" + _MON + r" {1,2}([0-9]{1,2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})"
                        r"(\.[0-9]{1,9})? ([^ ]{1,255}) kernel: ?")
_ISO_RE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})[T ]([0-9]{2}):([0-9]{2}):([0-9]{2})"
                     r"(\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:?[0-9]{2})? ([^ ]{1,255}) kernel: ?")
#: A syslog line of another program (journalctl without -k, /var/log/messages): not kernel.
_OTHER_SYSLOG_RE = re.compile("^" + _MON + r" {1,2}[0-9]{1,2} [0-9]{2}:[0-9]{2}:[0-9]{2}"
                              r"(?:\.[0-9]{1,9})? [^ ]{1,255} [^ :]{1,80}: ")
#: ``dmesg -x``'s facility and level before the stamp.
_FACILITY_RE = re.compile(r"^(?:kern|user|mail|daemon|auth|syslog|lpr|news) {0,4}:"
                          r"(?:emerg|alert|crit|err|warn|notice|info|debug) {0,4}: ")
#: A line that starts a kernel message of its own (never the wrapped tail of the one above).
_MESSAGE_HEAD_RE = re.compile(r"NVRM: |[A-Za-z0-9_\-]{1,32} [0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:|"
                              r"nvidia-nvswitch[0-9]|nvme nvme|IPv6: |[A-Za-z0-9_\-]{1,32}: ")
#: The year a syslog stamp without one is counted in (seconds between two stamps of one log
#: hold; a leap year, so 29 February is a day).
_NO_YEAR = 1972
#: A journal's boot separators (``-- Boot 1a2b... --``, ``-- Reboot --``).
_BOOT_MARKS = ("-- Boot ", "-- Reboot --")


class Line(NamedTuple):
    """One kernel message: its line number (1-based), stamp as printed, seconds, the form
    its stamp had, the message."""

    number: int
    time: Optional[str]
    seconds: Optional[float]
    form: str
    message: str


#: The forms (:attr:`Line.form`), in the order a mixed log names its format by.
DMESG, DMESG_T, JOURNAL, SYSLOG, BARE = "dmesg", "dmesg-T", "journal", "syslog", "bare"


def _unquoted(raw: str) -> str:
    line = raw[:MAX_LINE].rstrip("\r\n\t ")
    while line.startswith(">"):  # a mail or forum quote
        line = line[1:].lstrip(" ")
    line = line.lstrip(" \t")
    if line.startswith('"') and line.rstrip(",").endswith('"'):  # a JSON string (gpud)
        line = line.rstrip(",")[1:-1]
    if line.startswith("kernel: "):  # a journal line quoted without its stamp
        line = line[8:]
    m = _FACILITY_RE.match(line)
    if m:  # dmesg -x: "kern  :err   : [  12.3] msg"
        line = line[m.end():]
    return line


def _frac(text: Optional[str]) -> float:
    return float("0" + text) if text else 0.0


def stamp(line: str) -> Optional[Line]:
    """The stamp of one (unquoted) line taken off: ``Line`` with number 0, or None when the
    line carries no stamp."""
    if _PRIO_RE.match(line):
        line = line[3:]
    m = _MONO_RE.match(line)
    if m:
        secs = ascii_int(m.group(1))
        value = float(f"{secs}.{m.group(2)}") if secs is not None else None
        return Line(0, m.group(0).strip(), value, DMESG, line[m.end():])
    m = _WALL_RE.match(line)
    if m:
        month = _MONTHS.index(m.group(1)) + 1
        day, hh, mm, ss, year = (int(m.group(i)) for i in range(2, 7))
        return Line(0, m.group(0).strip(), _epoch(year, month, day, hh, mm, ss), DMESG_T,
                    line[m.end():])
    m = _SYSLOG_RE.match(line)
    if m:
        month = _MONTHS.index(m.group(1)) + 1
        day, hh, mm, ss = (int(m.group(i)) for i in range(2, 6))
        rest, inner, mono = _inner(line[m.end():])
        printed = f"{m.group(1)} {day:02d} {hh:02d}:{mm:02d}:{ss:02d}{m.group(6) or ''}"
        if inner is not None:
            return Line(0, inner, mono, JOURNAL if m.group(6) else SYSLOG, rest)
        wall = _epoch(_NO_YEAR, month, day, hh, mm, ss)
        return Line(0, printed, None if wall is None else wall + _frac(m.group(6)),
                    JOURNAL if m.group(6) else SYSLOG, rest)
    m = _TALOS_RE.match(line)
    if m:
        y, mo, d, hh, mi, ss = (int(m.group(i)) for i in range(1, 7))
        wall = _epoch(y, mo, d, hh, mi, ss)
        return Line(0, line[:m.end() - 2].split("[", 1)[1],
                    None if wall is None else wall + _frac(m.group(7)), SYSLOG,
                    line[m.end():])
    m = _ISO_RE.match(line)
    if m:
        y, mo, d, hh, mi, ss = (int(m.group(i)) for i in range(1, 7))
        rest, _, _ = _inner(line[m.end():])
        iso = _epoch(y, mo, d, hh, mi, ss)
        return Line(0, m.group(0).split(" ")[0],
                    None if iso is None else iso + _frac(m.group(7)), SYSLOG, rest)
    return None


def _inner(rest: str) -> "tuple[str, Optional[str], Optional[float]]":
    """kern.log's ``[  123.456789]`` after ``kernel:`` taken off too (and its seconds)."""
    m = _MONO_RE.match(rest)
    if m:
        secs = ascii_int(m.group(1))
        value = float(f"{secs}.{m.group(2)}") if secs is not None else None
        return rest[m.end():], m.group(0).strip(), value
    return rest, None, None


def _epoch(year: int, month: int, day: int, hh: int, mm: int, ss: int) -> Optional[float]:
    if not (1 <= day <= 31 and hh < 24 and mm < 60 and ss < 61 and 1970 <= year <= 9999):
        return None
    try:
        return float(calendar.timegm((year, month, day, hh, mm, min(ss, 59), 0, 0, 0)))
    except (ValueError, OverflowError):
        return None


class Read(NamedTuple):
    lines: List[Line]
    read: int
    cut: bool
    boots: int
    form: str


def read(text: str) -> Read:
    """Every kernel message of ``text`` (see the module doc), with how many lines were read,
    whether the text was cut, how many boots it shows and the form most of its stamps have."""
    out: List[Line] = []
    counts = {DMESG: 0, DMESG_T: 0, JOURNAL: 0, SYSLOG: 0}
    boots, last_mono, joined, n = 1, None, MAX_JOIN, 0
    stamped_seen = False
    for n, raw in enumerate(_raw_lines(text), 1):
        line = _unquoted(raw)
        if not line:
            joined = MAX_JOIN
            continue
        if (line.startswith(_BOOT_MARKS) or "Linux version " in line[:200]) and out:
            boots += 1
            last_mono = None
        got = stamp(line)
        if got is None and n == 1 and _CUT_MONO_RE.match(line):
            got = Line(0, None, None, DMESG, line.split("] ", 1)[1])
        if got is None and out and _continues(raw, line, out[-1]):
            prev = out[-1]
            out[-1] = prev._replace(message=(prev.message + " " + line[6:])[:MAX_LINE])
            continue
        if got is None:
            if _OTHER_SYSLOG_RE.match(line):
                joined = MAX_JOIN  # another program's syslog line: not the kernel's
                continue
            if stamped_seen and out and joined < MAX_JOIN and len(out[-1].message) >= 60 \
                    and not _MESSAGE_HEAD_RE.match(line):
                prev = out[-1]
                out[-1] = prev._replace(message=(prev.message + " " + line)[:MAX_LINE])
                joined += 1
                continue
            out.append(Line(n, None, None, BARE, line))
            joined = MAX_JOIN
            continue
        stamped_seen = True
        joined = 0
        counts[got.form] += 1
        if got.form == DMESG and got.seconds is not None:
            if last_mono is not None and got.seconds + 10.0 < last_mono:
                boots += 1  # the stamp went back: the node booted again
            last_mono = got.seconds
        out.append(got._replace(number=n))
    form = max(counts, key=lambda k: counts[k]) if any(counts.values()) else BARE
    cut = n >= MAX_LINES and text.count("\n", 0, len(text) - 1) >= MAX_LINES
    return Read(out, n, cut, boots, form)


def _continues(raw: str, line: str, prev: Line) -> bool:
    """An indented ``NVRM:`` line after an ``NVRM:`` message continues it (the driver prints
    one message over several lines: "The NVIDIA GPU ... / NVRM: (PCI ID: ...) installed in
    this system has / NVRM: fallen off the bus ...")."""
    return raw[:1] in (" ", "\t") and line.startswith("NVRM: ") and \
        prev.message.startswith("NVRM: ") and len(prev.message) < MAX_LINE


def _raw_lines(text: str) -> Iterator[str]:
    """The text's lines, at most :data:`MAX_LINES` (split lazily: a huge paste is not copied
    whole into a list)."""
    start, count = 0, 0
    size = len(text)
    while start < size and count < MAX_LINES:
        end = text.find("\n", start)
        if end < 0:
            end = size
        yield text[start:min(end, start + MAX_LINE * 4)]
        start = end + 1
        count += 1


__all__ = ["Line", "Read", "read", "stamp", "MAX_LINE", "MAX_LINES", "DMESG", "DMESG_T",
           "JOURNAL", "SYSLOG", "BARE"]
