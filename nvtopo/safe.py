"""Untrusted text, made safe: one place to parse numbers and one to escape for output.

Everything nvtopo reads (nvidia-smi output, NVML strings, sysfs files, pasted
tickets, snapshot files) is untrusted.  Two rules follow, and this module is
where both live:

* **Numbers are ASCII.**  ``str.isdigit()`` and ``int()`` accept digits that
  Python's Unicode tables know (``²``, ``٣``, full-width ``３``) and disagree
  with each other about some of them.  :func:`ascii_int` and
  :func:`is_ascii_digits` accept ``0``–``9`` only (and hexadecimal digits where
  asked), bounded in length, and never raise.

* **Output is escaped once, here.**  :func:`printable` turns any string into
  text that cannot move a terminal's cursor, change its colours, open a link
  or title, reorder the line (bidirectional controls) or fail to encode (lone
  surrogates); :func:`markup` adds Rich markup escaping on top, :func:`xml`
  XML escaping.  Every renderer passes untrusted values through one of them.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Optional

# --- numbers -----------------------------------------------------------------------------

#: Longest digit string accepted (a u64 is 20 decimal digits; a 128-bit GUID 32 hex).
MAX_DIGITS = 40

_DEC_RE = re.compile(r"[0-9]{1,%d}" % MAX_DIGITS)
_HEX_RE = re.compile(r"[0-9a-fA-F]{1,%d}" % MAX_DIGITS)
_WS = " \t\r\n"


def is_ascii_digits(text: Any) -> bool:
    """True when ``text`` is a non-empty string of ASCII digits ``0``–``9`` (any length)."""
    return isinstance(text, str) and text.isascii() and text.isdigit()


def ascii_int(text: Any, base: int = 10, *, signed: bool = False,
              lo: Optional[int] = None, hi: Optional[int] = None) -> Optional[int]:
    """The integer ``text`` spells in ASCII, or ``None``; never raises.

    Surrounding ASCII whitespace is ignored.  ``base`` is 10 or 16 (a ``0x``
    prefix is accepted for 16).  With ``signed`` a leading ``-`` or ``+`` is
    accepted.  ``lo``/``hi`` bound the value (inclusive): outside them, ``None``.
    """
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        value = text
    else:
        if not isinstance(text, str):
            return None
        s = text.strip(_WS)
        neg = False
        if signed and s[:1] in ("-", "+"):
            neg = s[0] == "-"
            s = s[1:]
        if base == 16:
            if s[:2] in ("0x", "0X"):
                s = s[2:]
            if not _HEX_RE.fullmatch(s):
                return None
        elif base == 10:
            if not _DEC_RE.fullmatch(s):
                return None
        else:
            raise ValueError(f"unsupported base {base}")
        value = int(s, base)
        if neg:
            value = -value
    if lo is not None and value < lo:
        return None
    if hi is not None and value > hi:
        return None
    return value


def ascii_float(text: Any) -> Optional[float]:
    """A finite decimal number written in ASCII (``16.0``, ``2.5``, ``-1``), or ``None``."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        v = float(text)
    elif isinstance(text, str):
        s = text.strip(_WS)
        if not _FLOAT_RE.fullmatch(s):
            return None
        v = float(s)
    else:
        return None
    return v if v == v and v not in (float("inf"), float("-inf")) else None


_FLOAT_RE = re.compile(r"[-+]?(?:[0-9]{1,%d}(?:\.[0-9]{0,%d})?|\.[0-9]{1,%d})"
                       % (MAX_DIGITS, MAX_DIGITS, MAX_DIGITS))

# --- escaping ----------------------------------------------------------------------------

#: Characters never written as they are: C0 and C1 controls and DEL (escape sequences, CSI
#: U+009B), line and paragraph separators, bidirectional controls (they reorder what the
#: terminal shows), lone surrogates (they cannot be encoded) and the two non-characters
#: XML forbids.
_UNSAFE = ("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
           "\ud800-\udfff\ufffe\uffff]")
_UNSAFE_KEEP_LINES = ("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e"
                      "\u2066-\u2069\ud800-\udfff\ufffe\uffff]")


@lru_cache(maxsize=2)
def _unsafe_re(keep_newlines: bool) -> "re.Pattern[str]":
    """The pattern of unsafe characters, compiled when first needed (about 0.7 ms each: most
    runs print only ASCII text, which needs neither)."""
    return re.compile(_UNSAFE_KEEP_LINES if keep_newlines else _UNSAFE)


def _escape_char(m: "re.Match[str]") -> str:
    c = ord(m.group(0))
    if c < 0x100:
        return f"\\x{c:02x}"
    return f"\\u{c:04x}"


def printable(value: Any, *, keep_newlines: bool = False) -> str:
    """``value`` as text safe to print anywhere: every unsafe character shown as ``\\xNN``/``\\uNNNN``.

    ``None`` is ``""``; other non-strings go through ``str()``.  With
    ``keep_newlines`` a line feed stays a line feed (for multi-line blocks);
    otherwise the result is always one line.
    """
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    if text.isascii() and (text.isprintable() if not keep_newlines
                           else text.replace("\n", "").isprintable()):
        return text  # (printable ASCII holds no unsafe character)
    pattern = _unsafe_re(keep_newlines)
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape_char, text)


def reversible(value: Any) -> str:
    """``value`` made :func:`printable` one to one: a backslash is written ``\\\\`` first, so
    an unsafe character's escape (ESC: ``\\x1b``) and the same four characters in the text
    (``\\\\x1b``) stay two values.  For values that name things (Prometheus labels): two
    different strings never become one label, so two series never collide."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    return printable(text.replace("\\", "\\\\"))


def markup(value: Any) -> str:
    """``value`` made :func:`printable`, then escaped for Rich console markup."""
    from rich.markup import escape

    return escape(printable(value))


_XML_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}
_XML_TEXT_RE = re.compile("[&<>]")
_XML_ATTR_RE = re.compile("[&<>\"']")


def xml(value: Any, *, attribute: bool = False) -> str:
    """``value`` made :func:`printable`, then escaped for XML: ``&``, ``<`` and ``>`` for text
    content; with ``attribute`` both quotes too (for a value inside ``"…"`` or ``'…'``).
    Quotes in text content stay as they are, so ordinary text keeps its bytes."""
    text = printable(value)
    pattern = _XML_ATTR_RE if attribute else _XML_TEXT_RE
    return pattern.sub(lambda m: _XML_ESCAPES[m.group(0)], text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_loads(text: str) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity``: Python reads them,
    JSON has no such values, and a value read from an input would reach nvtopo's own JSON
    output, which must stay JSON.  Raises ``ValueError`` (not a ``JSONDecodeError``) for
    them.  JSON nested deeper than the parser's recursion allows is a ``ValueError`` too
    (``JSON nested too deeply``), never a ``RecursionError``: every caller that refuses bad
    JSON as bad input refuses that too."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
