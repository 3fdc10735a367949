"""Pasted ``nvidia-smi nvlink -s/-e/-c/-R`` and ``nvidia-smi -q`` (PCI, Fabric) text.

Tickets carry these more often than snapshots.  :func:`parse` reads any mix
of them (one paste may hold several commands) into the same per-GPU NVLink
record the NVML probe produces, as ``GPU.nvml_text``, so
``nvtopo links --from ticket.txt`` shows them.  The text says less than NVML:

* ``-s`` says ``<inactive>`` but not whether by design or a fault, so such
  links are ``inactive`` with rule ``text`` (never guessed ``down``);
* ``-R`` numbers only the *active* links on the left (H100 PCIe sample):
  with ``-s`` in the same paste the k-th ``-R`` line is mapped to the k-th
  active link; without it the printed number is kept and a note says so;
* the remote end is a bus id; it is a GPU only where ``-q`` in the same
  paste names that bus id;
* ``-q`` blocks print no GPU index: a block goes to the GPU with its UUID,
  else its bus id, else (noted) the next nvlink GPU without one;
* damage is noted, never a crash: a speed that is not a number is unknown,
  two different GPUs under one ``GPU N:`` number keep the first.

Elisions (``...``, ``[...]``) and unknown lines are skipped.  Pure: no I/O.

The text is untrusted: no pattern here has two repetitions that can match the same
character (the lines that need more are read by small scanners), numbers are ASCII and
bounded (:mod:`nvtopo.safe`), and what one paste can make is bounded too (GPUs, ``-q``
blocks, links, keys, and at most ``MAX_NOTES`` notes of one kind per GPU).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ...safe import ascii_float, ascii_int
from .paste_q import attach_q, na
from .vocab import FALLBACK_MAX_LINKS, MAX_BAD_NOTES, MAX_GPUS


#: ``GPU N: name (UUID: ...)``: the start; the rest is read by :func:`_gpu_header`.  N is
#: any word here, so that a header with an unreadable number is not taken for a line of
#: the GPU above it.
_GPU_HDR = re.compile(r"^\s*GPU ([^\s:]+): ")
_Q_HDR = re.compile(r"^\s*GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_S_SPEED = re.compile(r"^\s*Link ([0-9]+): (\S+) GB/s\s*$")
_S_INACTIVE = re.compile(r"^\s*Link ([0-9]+): <inactive>\s*$", re.I)
_ALL_INACTIVE = re.compile(r"Unable to retrieve NVLink information as all links are inActive",
                           re.I)
_R_LINE = re.compile(r"^\s*Link ([0-9]+): Remote Device ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:"
                     r"[0-9A-Fa-f]{2}\.[0-7]): Link ([0-9]+)\s*$")
#: ``Link N: <Name> Error(s): count``; the name and its ``Errors`` are split by :func:`_e_line`.
_E_LINE = re.compile(r"^\s*Link ([0-9]+): ([A-Za-z][A-Za-z ]*): ([0-9]+)\s*$")
#: ``Link N, <capability>: true|false``: the start; the rest is read by :func:`_c_line`.
_C_LINE = re.compile(r"^\s*Link ([0-9]+), ", re.I)
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9 /()-]*")
_TITLE = re.compile(r"^[A-Za-z][A-Za-z0-9 /()-]*$")
_ANY_LINK = re.compile(r"^\s*Link [0-9]+[:,]")
_LINK_WORD = re.compile(r"^\s*Link ([^\s:,]+)[:,]")
_FABRIC_LINE = re.compile(r"^[^\S\n]*Fabric[^\S\n]*$", re.M)
_STATE_LINE = re.compile(r"^[^\S\n]*State[^\S\n]*:", re.M)
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_Q_HDR_ANY = re.compile(r"^[^\S\n]*GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"
                        r"[^\S\n]*$", re.M)
_LINK_INFO_LINE = re.compile(r"^[^\S\n]*GPU Link Info[^\S\n]*$", re.M)

#: Notes of one kind kept per GPU (the rest are counted in one note).
MAX_NOTES = MAX_BAD_NOTES
#: ``-q`` blocks read from one paste (a block per GPU; a paste may repeat them).
MAX_Q_BLOCKS = 4 * MAX_GPUS
#: ``-q`` keys kept per block (nvidia-smi prints a few hundred).
MAX_Q_KEYS = 4096
#: Error counters and capabilities kept per link (nvidia-smi prints fewer than ten).
MAX_PER_LINK = 32
#: Link numbers are below this (NVML's largest NVML_NVLINK_MAX_LINKS is smaller).
MAX_LINKS = FALLBACK_MAX_LINKS
#: Fastest credible link, GB/s (an NVLink 5 link is 50).
MAX_SPEED_GBPS = 100_000.0


class _Notes(list):
    """A list of note dicts that keeps at most :data:`MAX_NOTES` of one code.

    The others are counted; :meth:`finish` adds one note per code saying how many.
    It is a ``list`` so that the records :func:`parse` returns keep their shape.
    """

    def __init__(self) -> None:
        super().__init__()
        self.per_code: Dict[str, int] = {}  # notes seen by code (not list.count)

    def add(self, note: Dict[str, str]) -> None:
        n = self.per_code.get(note["code"], 0) + 1
        self.per_code[note["code"]] = n
        if n <= MAX_NOTES:
            self.append(note)

    def merge(self, other: "_Notes") -> None:
        """Add the notes of ``other``, counting those it left out."""
        for note in other:
            self.add(note)
        for code, n in other.per_code.items():
            if n > MAX_NOTES:
                self.per_code[code] = self.per_code.get(code, 0) + n - MAX_NOTES

    def finish(self) -> None:
        for code, n in self.per_code.items():
            if n > MAX_NOTES:
                self.append({"code": code, "level": "warning",
                             "message": f"… and {n - MAX_NOTES} more {code} notes like the "
                                        f"ones above (only the first {MAX_NOTES} are listed)"})
        self.per_code = {}


def _gpu_header(line: str) -> Optional[Tuple[str, str, str]]:
    """``GPU N: name (UUID: uuid)`` as ``(N, name, uuid)``, or ``None``.

    The name is the shortest that leaves `` (UUID: ...)`` with one ``)``, at the end.
    """
    m = _GPU_HDR.match(line)
    if not m:
        return None
    rest = line[m.end():]
    close = rest.rfind(")")
    if close < 0 or rest[close + 1:].strip() != "":
        return None
    # the UUID holds no ")": the marker comes after the ")" before the last (names may hold one)
    at = rest.find(" (UUID: ", max(1, rest.rfind(")", 0, close) + 1))
    if at < 0 or at + 8 > close:
        return None
    return m.group(1), rest[:at], rest[at + 8:close]


def _e_line(line: str) -> Optional[Tuple[str, str, str]]:
    """``Link N: <Name> Errors: count`` as ``(N, Name, count)``, or ``None``."""
    m = _E_LINE.match(line)
    if not m:
        return None
    words = m.group(2)
    for tail in (" Errors", " Error"):
        if words.endswith(tail) and len(words) > len(tail):
            return m.group(1), words[: -len(tail)], m.group(3)
    return None


def _c_line(line: str) -> Optional[Tuple[str, str, str]]:
    """``Link N, <capability>: true|false`` as ``(N, capability, "true"|"false")``, or ``None``."""
    m = _C_LINE.match(line)
    if not m:
        return None
    rest = line[m.end():].rstrip()
    for word in ("true", "false"):
        tail = rest[-len(word) - 2:]
        if len(rest) > len(word) + 2 and tail[:2] == ": " and tail[2:].lower() == word:
            return m.group(1), rest[: -len(word) - 2], word
    return None


def _kv(line: str) -> Optional[Tuple[str, str]]:
    """A ``-q`` line ``Key : value`` as ``(key, value)`` (both stripped), or ``None``."""
    s = line.lstrip()
    m = _KEY.match(s)
    if not m:
        return None
    rest = s[m.end():].lstrip()
    if not rest.startswith(":"):
        return None
    return s[: m.end()].strip(), rest[1:].strip()

_CAPS = {"p2p is supported": "p2p", "access to system memory supported": "sysmem_access",
         "p2p atomics supported": "p2p_atomics",
         "system memory atomics supported": "sysmem_atomics", "sli is supported": "sli_bridge",
         "link is supported": "valid"}
_ERRORS = {"replay": "replay", "recovery": "recovery", "crc": "crc_flit",
           "crc flit": "crc_flit", "crc data": "crc_data", "ecc data": "ecc", "ecc": "ecc"}


def looks_like(text: str) -> bool:
    """True when the text holds nvidia-smi nvlink output, or ``-q`` output with a Fabric
    block or a GPU block with its PCI link."""
    for line in text.splitlines():
        if (_gpu_header(line) or _S_SPEED.match(line) or _S_INACTIVE.match(line)
                or _R_LINE.match(line) or _e_line(line) or _c_line(line)
                or _ALL_INACTIVE.search(line)):
            return True
    if _Q_HDR_ANY.search(text) and _LINK_INFO_LINE.search(text):
        return True  # a -q GPU block with its PCI link (a laptop's or a GeForce's -q)
    return bool(_FABRIC_LINE.search(text) and _STATE_LINE.search(text))


def slug(s: str) -> str:
    return _NON_SLUG.sub("_", s.strip().lower()).strip("_")


def parse(text: str) -> Dict[str, Any]:
    """Per-GPU facts from the text: ``{"gpus": {index: {...}}, "sections": [...], "notes": [...]}``.

    ``nvlink`` sections are numbered by their ``GPU N: name (UUID: ...)``
    headers.  ``-q`` blocks (``GPU 00000000:18:00.0``) carry no index: each is
    attached to the GPU with its ``GPU UUID``, else its bus id, else (last
    resort, noted) to the next GPU of the nvlink output that has no ``-q``
    block yet; a block that matches nothing is a GPU of its own.
    """
    reader = _Reader()
    for raw in _lines(text):
        reader.feed(raw.rstrip())  # a CR of a CRLF goes here
    gpus, notes = reader.gpus, reader.notes
    if reader.dropped_q:
        notes.add({"code": "nvml_text.too_many_blocks", "level": "warning",
                   "message": f"the paste holds more than {MAX_Q_BLOCKS} nvidia-smi -q GPU "
                              f"blocks; the last {reader.dropped_q} are ignored"})
    attach_q(gpus, reader.qblocks, notes)
    for rec in gpus.values():
        rec["notes"].finish()
    notes.finish()
    return {"gpus": gpus, "sections": reader.sections, "notes": notes}


def _new_rec(**kw: Any) -> Dict[str, Any]:
    """A GPU's record as read: link states, remote ends, errors, capabilities, -q keys."""
    return dict({"index": None, "s": {}, "r": [], "e": {}, "c": {},
                 "all_inactive": False, "q": {}, "notes": _Notes()}, **kw)


class _Reader:
    """The paste read line by line: the GPU (or -q block) the lines belong to, and the -q
    key path by indentation."""

    def __init__(self) -> None:
        self.gpus: Dict[int, Dict[str, Any]] = {}
        self.qblocks: List[Dict[str, Any]] = []
        self.sections: List[str] = []
        self.notes = _Notes()
        self.cur: Optional[Dict[str, Any]] = None
        self.block: List[str] = []  # -q key path by indentation
        self.indents: List[int] = []
        self.dropped_q = 0

    def gpu(self, i: int) -> Dict[str, Any]:
        return self.gpus.setdefault(i, _new_rec(index=i))

    def seen(self, s: str) -> None:
        if s not in self.sections:
            self.sections.append(s)

    def bad(self, what: str, value: str, then: str) -> None:
        """A number in the text that is not one nvtopo can use (``cur`` is set)."""
        cur = self.cur
        assert cur is not None
        cur["notes"].add({"code": "nvml_text.bad_number", "level": "warning",
                          "message": f"{what} {_clip(value)!r} is not a number nvtopo reads; "
                                     + then})

    def link_no(self, value: str) -> Optional[int]:
        lk = ascii_int(value, hi=MAX_LINKS - 1)
        if lk is None:
            self.bad("link number", value, "the line is ignored")
        return lk

    def feed(self, line: str) -> None:
        if not line.strip() or line.strip() in ("...", "......", "[...]"):
            return
        hdr = _gpu_header(line)
        if hdr:
            self._gpu_header(hdr)
            return
        m = _Q_HDR.match(line)
        if m:
            self.cur = _new_rec(bus_id=m.group(1))
            if len(self.qblocks) < MAX_Q_BLOCKS:
                self.qblocks.append(self.cur)
            else:
                self.dropped_q += 1  # read, then dropped
            self.block, self.indents = [], []
            self.seen("-q")
            return
        if self.cur is None:
            if _ANY_LINK.match(line):
                self.cur = self.gpu(0)
            elif line.strip() in ("Fabric", "PCI"):  # a -q excerpt without its GPU header
                self.cur = _new_rec(headerless=True)
                self.qblocks.append(self.cur)
            else:
                return
        if not self._state_line(self.cur, line) and not self._link_line(self.cur, line):
            self._q_line(self.cur, line)

    def _gpu_header(self, hdr: Tuple[str, str, str]) -> None:
        """``GPU N: name (UUID: ...)``: the GPU the next lines are of."""
        i_raw, name, uuid = hdr[0], hdr[1].strip(), hdr[2].strip()
        i = ascii_int(i_raw, hi=MAX_GPUS - 1)
        have = self.gpus.get(i) if i is not None else None
        if i is None:
            self.notes.add({"code": "nvml_text.bad_number", "level": "warning",
                            "message": f"GPU number {_clip(i_raw)!r} ({_clip(name)}) is not "
                                       "one nvtopo reads (0 to "
                                       f"{MAX_GPUS - 1}); the lines under it are ignored"})
            self.cur = _new_rec()  # read, then dropped
        elif have is not None and "name" in have and (
                uuid.lower() != (have.get("uuid") or "").lower() if uuid and have.get("uuid")
                else name != have.get("name")):
            self.notes.add({"code": "nvml_text.duplicate_gpu", "level": "warning",
                            "subject": f"GPU{i}",
                            "message": f"the paste numbers two different GPUs {i} "
                                       f"({have.get('name')}, UUID {have.get('uuid') or '?'}; "
                                       f"then {name}, UUID {uuid or '?'}): output of two "
                                       "machines? the lines under the second are ignored"})
            self.cur = _new_rec(index=i)  # read, then dropped
        else:
            self.cur = self.gpu(i)
            self.cur["name"], self.cur["uuid"] = name, uuid
        self.block, self.indents = [], []

    def _state_line(self, cur: Dict[str, Any], line: str) -> bool:
        """``nvlink -s``: a link's state and speed (True: the line was one)."""
        if _ALL_INACTIVE.search(line):
            cur["all_inactive"] = True
            self.seen("nvlink -s")
            return True
        m = _S_SPEED.match(line)
        if m:
            lk = self.link_no(m.group(1))
            if lk is not None:
                speed = ascii_float(m.group(2))
                if speed is None or not 0 <= speed <= MAX_SPEED_GBPS:
                    speed = None
                    cur["notes"].add({
                        "code": "nvml_text.bad_number", "level": "warning",
                        "message": f"link {lk}: speed {_clip(m.group(2))!r} GB/s is not a "
                                   "number; the link is listed as up, its speed is unknown"})
                cur["s"][lk] = {"state": "active", "speed": speed}
            self.seen("nvlink -s")
            return True
        m = _S_INACTIVE.match(line)
        if m:
            lk = self.link_no(m.group(1))
            if lk is not None:
                cur["s"][lk] = {"state": "inactive", "speed": None}
            self.seen("nvlink -s")
            return True
        return False

    def _link_line(self, cur: Dict[str, Any], line: str) -> bool:
        """``nvlink -R``, ``-e``, ``-c``: a link's remote end, error counts, capabilities
        (True: the line was one)."""
        m = _R_LINE.match(line)
        if m:
            lk = self.link_no(m.group(1))
            if lk is not None and len(cur["r"]) < MAX_LINKS:
                far = ascii_int(m.group(3), hi=MAX_LINKS - 1)
                if far is None:
                    self.bad(f"link {lk}: remote link number", m.group(3), "kept as unknown")
                cur["r"].append((lk, m.group(2), far))
            elif lk is not None:
                cur["notes"].add({"code": "nvml_text.too_many_lines", "level": "warning",
                                  "message": f"more than {MAX_LINKS} nvlink -R lines for one "
                                             "GPU; the others are ignored"})
            self.seen("nvlink -R")
            return True
        e = _e_line(line)
        if e:
            lk = self.link_no(e[0])
            count = ascii_int(e[2], hi=2**64 - 1)
            if lk is not None and count is None:
                self.bad(f"link {lk}: {_clip(e[1])} error count", e[2], "the line is ignored")
            elif lk is not None:
                name = _ERRORS.get(e[1].strip().lower(), slug(e[1]))
                counters = cur["e"].setdefault(lk, {})
                if name in counters or len(counters) < MAX_PER_LINK:
                    counters[name] = count
            self.seen("nvlink -e")
            return True
        m = _LINK_WORD.match(line)
        if m and not m.group(1).isascii() and any(ch.isdigit() for ch in m.group(1)):
            self.link_no(m.group(1))  # Link ١: ... (a number, but not one nvtopo reads): noted
            return True
        c = _c_line(line)
        if c:
            lk = self.link_no(c[0])
            if lk is not None:
                cap = _CAPS.get(c[1].strip().lower(), slug(c[1]))
                caps = cur["c"].setdefault(lk, {})
                if cap in caps or len(caps) < MAX_PER_LINK:
                    caps[cap] = c[2] == "true"
            self.seen("nvlink -c")
            return True
        return False

    def _q_line(self, cur: Dict[str, Any], line: str) -> None:
        """-q: nested "Key : Value" blocks by indentation."""
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        while self.indents and indent <= self.indents[-1]:
            self.indents.pop()
            self.block.pop()
        kv = _kv(line)
        if kv and kv[1] != "":
            path = tuple(self.block) + (kv[0],)
            key = " / ".join(path)
            if key in cur["q"] or len(cur["q"]) < MAX_Q_KEYS:
                cur["q"][key] = kv[1]
            if path[0] == "Fabric":
                self.seen("-q fabric")
        elif _TITLE.match(stripped):
            self.block.append(stripped)
            self.indents.append(indent)


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` (split at LF), one at a time: no list of millions of lines."""
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def _clip(text: str, limit: int = 80) -> str:
    """``text`` shortened for a note (real values are far shorter)."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"
