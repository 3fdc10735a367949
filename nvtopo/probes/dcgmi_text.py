"""Pasted ``dcgmi nvlink -s`` text (DCGM's NVLink link status) as a model fragment.

Tickets carry DCGM's view as often as nvidia-smi's.  ``dcgmi nvlink -s`` prints, under a
``NvLink Link Status`` banner, one row of link letters per GPU and per NvSwitch::

    GPUs:
        gpuId 0:
            U U U U U U U U U U U U U U U U U U
    NvSwitches:
        No NvSwitches found.

    Key: Up=U, Down=D, Disabled=X, Not Supported=_

Versions differ: ``+---+`` borders and ``|`` columns, ``gpuId N`` or ``GPU N``, the letters
on the header's line or on the next (wrapped over several), NvSwitch blocks
(``physicalId N``) with letters of their own; a paste may be cut anywhere.  The GPUs
become the same records pasted ``nvidia-smi nvlink -s`` gives (``GPU.nvml_text``, source
``nvml-text``; :mod:`nvtopo.probes.nvml.text`), and speak only for the GPUs they name:

* ``U`` up: ``active`` (rule ``state``);
* ``D`` down: ``down`` (rule ``family``, hence ``nvlink.link_down`` as from NVML) where
  another GPU of the paste has that link up and this GPU has links up (an NVSwitch or
  mesh node uses the same links on every GPU); else ``inactive`` (rule ``text``): a
  bridged board leaves links down by design, and the text cannot tell which;
* ``X`` disabled: ``inactive`` (rule ``text``), down by configuration, never an error;
* ``_`` not supported: not a link, never listed or counted;
* anything else in a letter row: a link whose state is ``unknown``.

NvSwitch rows are read past (nvtopo's NVSwitch facts come from NVML).  Pure: no I/O.
The text is untrusted: lines are cut at :data:`MAX_LINE` characters and split, never
matched by a pattern that can backtrack; GPU numbers are ASCII and bounded
(:mod:`nvtopo.safe`); GPUs, links per GPU and notes are bounded.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..model import Topology
from ..model.nvlink import Remote, TextGpuLinks, TextLink
from ..model.nvml import TextGpu, TextNode
from ..safe import ascii_int, printable
from .nvml.vocab import FALLBACK_MAX_LINKS, MAX_BAD_NOTES, MAX_GPUS

#: The records are those of pasted nvidia-smi nvlink text: the same checks read them.
SOURCE = "nvml-text"
#: The section name this text is listed under (``extra["nvml-text"].sections``).
SECTION = "dcgmi nvlink -s"
#: Characters of one line read (a real line is under 100).
MAX_LINE = 4096
#: Links kept per GPU.
MAX_LINKS = FALLBACK_MAX_LINKS
#: Notes kept (the rest are counted in one).
MAX_NOTES = MAX_BAD_NOTES

_LETTERS = {"U": "active", "D": "down", "X": "disabled", "_": "not_supported"}
_BORDER = frozenset("+-=| \t")


def _tokens(line: str) -> List[str]:
    """The words of a line, table borders (``|``) and blanks dropped."""
    return line[:MAX_LINE].replace("|", " ").split()


def _header(tokens: List[str]) -> Optional[Tuple[str, str, List[str]]]:
    """``("gpu" | "switch", number text, rest)`` for ``gpuId N:``, ``GPU N:``,
    ``physicalId N:`` or ``NvSwitch N:`` (the colon optional), else None."""
    if len(tokens) < 2:
        return None
    word = tokens[0].lower().rstrip(":")
    if word in ("gpuid", "gpu"):
        kind = "gpu"
    elif word in ("physicalid", "nvswitch", "switchid"):
        kind = "switch"
    else:
        return None
    num = tokens[1]
    rest = tokens[2:]
    if num.endswith(":"):
        num = num[:-1]
    elif rest and rest[0] == ":":
        rest = rest[1:]
    if not num or len(num) > 12:
        return None
    return kind, num, rest


def _is_letters(tokens: List[str]) -> bool:
    """A row of link letters: every word one character (damage included)."""
    return bool(tokens) and all(len(t) == 1 for t in tokens)


def looks_like(text: str) -> bool:
    """True when the text holds ``dcgmi nvlink -s`` output: its banner, or its key line."""
    for line in text[: 8 * 1024 * 1024].splitlines():
        low = line[:MAX_LINE].lower()
        if "nvlink link status" in low or "dcgmi nvlink" in low:
            return True
        if "up=u" in low.replace(" ", "") and "down=d" in low.replace(" ", ""):
            return True
    return False


class _Parse:
    """The state of one :func:`parse`: what was read so far, and where the reading is."""

    def __init__(self) -> None:
        self.gpus: Dict[int, List[str]] = {}
        self.notes: List[Dict[str, Any]] = []
        self.lines: set = set()
        self.dropped = 0
        self.switches = 0
        self.section: Optional[str] = None
        self.current: Optional[int] = None  # the GPU whose letters are being read
        self.in_switch = False
        self.started = False

    def note(self, code: str, message: str, subject: Optional[str] = None) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append({"code": code, "message": message, "subject": subject,
                               "level": "warning"})
        else:
            self.dropped += 1

    def letters(self, idx: int, tokens: List[str]) -> None:
        row = self.gpus[idx]
        room = MAX_LINKS - len(row)
        if len(tokens) > room:
            self.note("dcgmi_text.too_many_links",
                      f"GPU{idx}: more than {MAX_LINKS} link letters; the rest are not read",
                      subject=f"GPU{idx}")
        row.extend(tokens[:max(room, 0)])

    def marker(self, n: int, tokens: List[str], head: str, low: str) -> bool:
        """Read line ``n`` when it is a section's title, the key or "no NVSwitches"."""
        if head in ("gpus:", "gpus") and len(tokens) == 1:
            self.started, self.section, self.current, self.in_switch = True, "gpu", None, False
        elif head in ("nvswitches:", "nvswitches") and len(tokens) == 1:
            self.started, self.section, self.current, self.in_switch = (True, "switch", None,
                                                                        True)
        elif head.startswith("key:") or (head == "key" and len(tokens) > 1):
            self.current, self.in_switch = None, False
        elif not low.startswith("no nvswitches found"):
            return False
        self.lines.add(n)
        return True

    def header(self, n: int, hdr: Tuple[str, str, List[str]], head: str) -> None:
        """Line ``n`` names a GPU or an NVSwitch (and may carry the first letters)."""
        kind, num, rest = hdr
        self.lines.add(n)
        self.started = True
        if kind == "switch" or self.section == "switch" and head != "gpuid":
            self.switches += 1
            self.current, self.in_switch = None, True
            return
        self.in_switch = False
        self.current = None
        idx = ascii_int(num, hi=MAX_GPUS - 1)
        if idx is None:
            self.note("dcgmi_text.bad_gpu", f"GPU number {printable(num)!r} is not a "
                      "number; its links are not read")
        elif idx in self.gpus:
            self.note("dcgmi_text.duplicate_gpu", f"GPU{idx} is listed twice; the first is "
                      "kept", subject=f"GPU{idx}")
        elif len(self.gpus) < MAX_GPUS:
            self.gpus[idx] = []
            self.current = idx
            if rest:
                self.letters(idx, rest)

    def rest(self, n: int, tokens: List[str], stripped: str) -> None:
        """Line ``n`` is neither a title nor a header: link letters, or damage."""
        if self.started and _is_letters(tokens):
            self.lines.add(n)
            if self.in_switch:
                return
            if self.current is None:
                self.note("dcgmi_text.orphan_links", "a row of link letters under no GPU is "
                          "not read")
                return
            self.letters(self.current, tokens)
        elif self.started and self.current is not None:
            # a damaged row inside a GPU's block: its letters are not read (a line with no
            # letter at all, such as a matrix's header after a cut paste, is left to it)
            if any(t in _LETTERS for t in tokens):
                self.lines.add(n)
            self.note("dcgmi_text.unreadable_line", f"GPU{self.current}: a line that is not "
                      f"link letters is not read: {printable(stripped[:60])!r}",
                      subject=f"GPU{self.current}")
            self.current = None


def parse(text: str) -> Dict[str, Any]:
    """``{"gpus": {index: [letter, ...]}, "switches": n, "notes": [...], "lines": set}``.

    ``lines`` are the line numbers that are part of the dcgmi output (so that a
    ``topo -m`` matrix in the same paste can be read without them)."""
    p = _Parse()
    for n, raw in enumerate(text.splitlines()):
        line = raw[:MAX_LINE]
        stripped = line.strip()
        low = stripped.lower()
        if not stripped:
            continue
        if "nvlink link status" in low or low.startswith("dcgmi nvlink"):
            p.started = True
            p.lines.add(n)
            p.current, p.in_switch = None, False
            continue
        if stripped and set(stripped) <= _BORDER:
            if p.started:
                p.lines.add(n)
            continue
        tokens = _tokens(line)
        if not tokens:
            continue
        head = tokens[0].lower()
        if p.marker(n, tokens, head, low):
            continue
        hdr = _header(tokens)
        if hdr is not None and (hdr[1].isdigit() or p.started) and \
                (not hdr[2] or _is_letters(hdr[2])):
            p.header(n, hdr, head)
            continue
        p.rest(n, tokens, stripped)
    if p.dropped:
        p.notes.append({"code": "dcgmi_text.more_notes", "level": "warning", "subject": None,
                        "message": f"{p.dropped} more notes about the dcgmi text not shown"})
    return {"gpus": p.gpus, "switches": p.switches, "notes": p.notes, "lines": p.lines}


def has_gpus(text: str) -> bool:
    """Whether the dcgmi text names at least one GPU."""
    return bool(parse(text)["gpus"])


def without_block(text: str) -> str:
    """The text with the ``dcgmi nvlink -s`` lines blanked (for a matrix in one paste)."""
    lines = parse(text)["lines"]
    return "\n".join("" if n in lines else ln for n, ln in enumerate(text.splitlines()))


def _link(lk: int, letter: str) -> Dict[str, Any]:
    state = _LETTERS.get(letter)  # DCGM prints capitals: a "d" is damage, not D
    rec: Dict[str, Any] = {"link": lk, "speed_mbps": None, "remote": Remote(),
                           "errors": {}, "capabilities": None}
    if state == "active":
        rec.update(state="active", raw_state="active", rule="state",
                   reason="dcgmi nvlink -s prints U (up)")
    elif state == "down":
        rec.update(state="inactive", raw_state="inactive", rule="text",
                   reason="dcgmi nvlink -s prints D (down); no GPU in the paste uses this "
                          "link, so by design or a fault cannot be told from this text")
    elif state == "disabled":
        rec.update(state="inactive", raw_state="inactive", rule="text",
                   reason="dcgmi nvlink -s prints X (disabled): down by configuration, "
                          "not a fault")
    else:
        rec.update(state="unknown", raw_state="unknown", rule=None,
                   reason=f"dcgmi nvlink -s prints {printable(letter)!r}, not a link state "
                          "it defines")
    return rec


def derive_text(text: str) -> Topology:
    """The model fragment (source ``nvml-text``) from pasted ``dcgmi nvlink -s`` text."""
    parsed = parse(text)
    topo = Topology(sources=[SOURCE])
    topo.nvml_text = TextNode(sections=[SECTION])
    rows: Dict[int, List[Dict[str, Any]]] = {}
    letters: Dict[int, Dict[int, str]] = {}
    for i, row in sorted(parsed["gpus"].items()):
        # "_" is no link: never listed; the link number is the letter's position
        rows[i] = [_link(k, c) for k, c in enumerate(row) if c != "_"]
        letters[i] = dict(enumerate(row))
    up = {i: {x["link"] for x in r if x["state"] == "active"} for i, r in rows.items()}
    # D where another GPU of the paste has the link up (and this GPU has links up): down
    for i, r in rows.items():
        if not up[i]:
            continue
        for x in r:
            if letters[i].get(x["link"]) != "D":
                continue
            by = [k for k in sorted(up) if k != i and x["link"] in up[k]][:8]
            if not by:
                continue
            shown = ", ".join(f"GPU{k}" for k in by) + (", ..." if len(by) >= 8 else "")
            x.update(state="down", rule="family",
                     reason=f"dcgmi nvlink -s prints D (down); {shown} in the same paste "
                            f"use link {x['link']}")
    for i, r in rows.items():
        from ..model import GPU

        model = GPU(index=i)
        nv = TextGpuLinks(status="ok" if r else "unknown", total=len(r) if r else None,
                          count_source="text", active=len(up[i]),
                          bandwidth_gbps_per_direction=None,
                          links=[TextLink(**x) for x in r])
        gnotes = [n["message"] for n in parsed["notes"] if n.get("subject") == f"GPU{i}"]
        if not parsed["gpus"][i]:
            gnotes.append("dcgmi nvlink -s lists this GPU with no link letters (cut?)")
        model.nvml_text = TextGpu(index=i, fault=None, nvlink=nv, fabric=None, pcie=None,
                                  notes=gnotes)
        topo.gpus.append(model)
    for n in parsed["notes"]:
        topo.note(n["code"], n["message"], source=SOURCE, subject=n.get("subject"),
                  level=n["level"])
    if not topo.gpus:
        topo.note("dcgmi_text.empty", "no GPU row found in the dcgmi nvlink -s text",
                  source=SOURCE, level="warning")
    return topo


__all__ = ["SOURCE", "SECTION", "looks_like", "parse", "derive_text", "has_gpus",
           "without_block"]
