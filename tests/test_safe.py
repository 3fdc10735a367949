"""The one number parser and the one escaper (nvtopo/safe.py)."""

import xml.dom.minidom
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nvtopo import safe


@pytest.mark.parametrize("text,expected", [
    ("0", 0), ("42", 42), (" 7\n", 7), ("0042", 42),
    ("²", None), ("٣", None), ("３", None), ("1²", None), ("", None), ("-1", None),
    ("1.5", None), ("1e3", None), ("0x10", None), ("1" * 41, None), (None, None), (True, None),
])
def test_ascii_int_decimal(text, expected):
    assert safe.ascii_int(text) == expected


def test_ascii_int_options():
    assert safe.ascii_int("-3", signed=True) == -3
    assert safe.ascii_int("+3", signed=True) == 3
    assert safe.ascii_int("0x1F", 16) == 31
    assert safe.ascii_int("ff", 16) == 255
    assert safe.ascii_int("fg", 16) is None
    assert safe.ascii_int("５", 16) is None
    assert safe.ascii_int("300", hi=255) is None
    assert safe.ascii_int("3", lo=4) is None
    assert safe.ascii_int(12) == 12


def test_is_ascii_digits():
    assert safe.is_ascii_digits("0123")
    for bad in ("²", "", "1²", "٣", " 1", None, 1):
        assert not safe.is_ascii_digits(bad)


@pytest.mark.parametrize("text,expected", [
    ("16.0", 16.0), ("2.5", 2.5), ("8", 8.0), ("nan", None), ("inf", None), ("1e400", None),
    ("１６", None), ("", None), (float("nan"), None), (3, 3.0),
])
def test_ascii_float(text, expected):
    assert safe.ascii_float(text) == expected


@given(st.text(max_size=50))
@settings(deadline=1000, max_examples=300)
def test_numbers_never_raise(text):
    v = safe.ascii_int(text)
    stripped = text.strip(" \t\r\n")
    if v is None:
        assert not (stripped.isascii() and stripped.isdigit() and len(stripped) <= safe.MAX_DIGITS)
    else:
        assert stripped.isascii() and stripped.isdigit() and int(stripped) == v
    safe.ascii_int(text, 16, signed=True)
    safe.ascii_float(text)


INJECTIONS = [
    "\x1b[31mred\x1b[0m", "\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\", "\x1b]0;title\x07",
    "a\rb", "line\nbreak", "\x9b31m", "\u202eevil", "\ud800", "nul\x00", "\ufffe",
    "[link=http://evil]x[/link]", "[bold red]x", "back\\", "<tag a='1'>&amp;</tag>",
]


@pytest.mark.parametrize("text", INJECTIONS)
def test_printable_is_inert(text):
    out = safe.printable(text)
    assert "\n" not in out and "\r" not in out and "\x1b" not in out and "\x9b" not in out
    out.encode("utf-8")  # no lone surrogates
    assert all(ch.isprintable() or ch == " " for ch in out)


def test_printable_keeps_ordinary_text():
    for text in ("GPU0", "NVIDIA H100 80GB HBM3", "mlx5_0", "héllo wörld", "C:\\x", "日本"):
        assert safe.printable(text) == text
    assert safe.printable(None) == ""
    assert safe.printable(3) == "3"
    assert safe.printable("a\nb", keep_newlines=True) == "a\nb"
    assert safe.printable("a\x1bb", keep_newlines=True) == "a\\x1bb"
    assert safe.printable("\u202e") == "\\u202e"


@lru_cache(maxsize=1)
def _every_code_point() -> str:
    return "".join(map(chr, range(0x110000)))


@pytest.mark.parametrize("keep_newlines", [False, True])
def test_printable_text_holds_no_unsafe_character(keep_newlines):
    """``render.cells.printable`` returns text ``str.isprintable`` accepts as it is, without
    the pattern: that holds because no unsafe character, of every code point, is printable."""
    unsafe = safe._unsafe_re(keep_newlines).findall(_every_code_point())
    assert len(unsafe) > 2000  # (C0, C1, the surrogates...: the search found them)
    assert [ch for ch in unsafe if ch.isprintable()] == []
    assert ("\n" in unsafe) is not keep_newlines  # (a kept line feed is never escaped)
    from nvtopo.render.cells import printable

    for text in ("é·–漢 ok", "é\u2028", "a\x1b[31m", "\u202e", 7, None, "ok\nnext"):
        assert printable(text) == safe.printable(text)
        assert printable(text, keep_newlines=True) == safe.printable(text, keep_newlines=True)
    assert printable("é\u2028") == "é\\u2028"  # (not printable: the pattern escapes it)


@pytest.mark.parametrize("text", INJECTIONS)
def test_markup_renders_literally(text):
    from rich.console import Console
    from rich.text import Text

    console = Console(width=200, color_system="truecolor", force_terminal=True)
    with console.capture() as cap:
        console.print(safe.markup(text), end="")
    out = cap.get()
    assert "\x1b]8" not in out  # no hyperlink
    plain = Text.from_markup(safe.markup(text)).plain
    # Rich doubles a trailing backslash so that a tag written after the value stays a tag
    assert plain in (safe.printable(text), safe.printable(text) + "\\")
    with console.capture() as cap:
        console.print(safe.markup(text) + "[bold]after[/bold]", end="")
    assert Text.from_ansi(cap.get()).plain == safe.printable(text) + "after"


@pytest.mark.parametrize("text", INJECTIONS)
def test_xml_well_formed(text):
    doc = f"<r a=\"{safe.xml(text, attribute=True)}\">{safe.xml(text)}</r>"
    parsed = xml.dom.minidom.parseString(doc.encode("utf-8"))
    assert parsed.documentElement.getAttribute("a") == safe.printable(text)


@pytest.mark.parametrize("keep_newlines", [False, True])
def test_printable_escapes_exactly_the_unsafe_characters(keep_newlines):
    """Printable ASCII takes a path that compiles no pattern: every character, alone and
    inside ASCII text, is escaped exactly as the pattern of unsafe characters says."""
    import re

    rx = re.compile(safe._UNSAFE_KEEP_LINES if keep_newlines else safe._UNSAFE)
    for code in list(range(0x300)) + [0x61c, 0x200e, 0x2028, 0x202e, 0x2066, 0x2069, 0x2192,
                                      0xd800, 0xdfff, 0xfffe, 0xffff, 0x1f600]:
        ch = chr(code)
        for text in (ch, f"GPU{ch}0", f"a\n{ch}"):
            want = rx.sub(lambda m: safe._escape_char(m), text)
            assert safe.printable(text, keep_newlines=keep_newlines) == want, (code, text)
    assert safe.printable("a\nb", keep_newlines=True) == "a\nb"
    assert safe.printable("a\nb") == "a\\x0ab"
