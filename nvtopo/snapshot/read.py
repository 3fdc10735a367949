"""Reading input bytes, within bounds, and decoding them.

Every ``--from`` input (and a ``--layout-file``) is read here: a regular file, standard
input (``-``), or a pipe handed to nvtopo (``<(cmd)``), never more than
:data:`MAX_INPUT_BYTES`; devices, FIFOs and sockets named on the command line are refused
(one would block, another never end).  Input whose decoding would cost far more than any
real snapshot or nvidia-smi text is refused before it is decoded (:func:`_check_bulk`).

Content, not the file name, says what an input is: the one registry of readers
(:mod:`nvtopo.probes.readers`) recognises a snapshot (JSON) and each text a ticket may
hold (``docs/ticket-inputs.md``).  Gzip-compressed input (``node.json.gz``; recognised by its magic bytes,
whatever its name) is decompressed first, never past the bound plain input has
(:func:`gunzip`), so a gzip bomb costs what a 64 MiB file does, and in time linear in its
size, of at most :data:`MAX_GZIP_MEMBERS` members.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import sys
import zlib
from typing import Optional, Tuple, Union

from ..errors import NvtopoError

#: Larger inputs are refused: no real snapshot or topo text comes near this.
MAX_INPUT_BYTES = 64 * 1024 * 1024

#: Names of this process's standard input, read as ``-`` is.
STDIN_NAMES = ("-", "/dev/stdin", "/proc/self/fd/0", "/dev/fd/0")
_FD_ALIAS = re.compile(r"/(?:dev/fd|proc/self/fd)/([0-9]+)")


def read_bytes(path: str, option: str = "--from", limit: int = MAX_INPUT_BYTES,
               what: str = "a snapshot or topo output", content: bool = True
               ) -> Tuple[bytes, str]:
    """Read ``path`` (``-`` or ``/dev/stdin`` for stdin) as bytes; returns ``(data, where)``.

    Raises :class:`NvtopoError` for missing, unreadable or oversized input, and for
    anything that is not a regular file (a FIFO would block, a device never end),
    except standard input and descriptors handed to nvtopo (``<(cmd)``'s ``/dev/fd/63``).
    Never more than ``limit`` + 1 bytes are read.  ``option`` names the option in the
    error about an empty name, ``what`` the input expected in the one about a large file.
    Every file nvtopo reads comes through here (``--from``, ``--layout-file``, ``--fabric``,
    ``--thresholds``, a directory's ``collect.json``).  ``content=False``: the bounds on snapshots' and
    nvidia-smi texts' content (:func:`_check_bulk`) are left to the caller, which holds the
    data to bounds of its own (an ``ibnetdiscover`` dump has more lines than any
    nvidia-smi text; a manifest counts its JSON values with :func:`json_values_within`).
    """
    if path == "":
        raise NvtopoError("empty file name", where=option)
    if path in STDIN_NAMES:
        where = "<stdin>"
        data = sys.stdin.buffer.read(limit + 1)
    else:
        where = path
        data = _read_file(path, limit)
    return within_bounds(data, where, limit, what, content=content), where


def within_bounds(data: bytes, where: str, limit: int = MAX_INPUT_BYTES,
                  what: str = "a snapshot or topo output", content: bool = True) -> bytes:
    """Input bytes already read (at most ``limit`` + 1 of them), held to the bounds every
    input is held to: at most ``limit`` bytes, decompressed when gzip (never past
    ``limit``), and no more JSON values or text than any real input holds.  Returns the
    (decompressed) bytes; a one-line :class:`NvtopoError` naming ``where`` otherwise."""
    if len(data) > limit:
        raise NvtopoError(f"file is larger than {_size(limit)}; not {what}", where=where)
    if data.startswith(GZIP_MAGIC):
        data = gunzip(data, where, limit, what)
    if content:
        _check_bulk(data, where)
    return data


#: The first two bytes of every gzip member (RFC 1952).
GZIP_MAGIC = b"\x1f\x8b"
#: Bytes asked of the decompressor at a time.
_GUNZIP_STEP = 1024 * 1024
#: Compressed bytes given to the decompressor at a time: what it does not use of them (the
#: start of the next member) is all that is copied when a member ends, so reading costs
#: time in proportion to the input whatever its number of members.
_GUNZIP_FEED = 64 * 1024
#: The most gzip members read: ``gzip -c a b > c`` makes two, nvtopo writes one; a file of
#: thousands of (empty) members is no snapshot, and each member costs a decompressor.
MAX_GZIP_MEMBERS = 1024


def gunzip(data: bytes, where: str, limit: int = MAX_INPUT_BYTES,
           what: str = "a snapshot or topo output") -> bytes:
    """The decompressed bytes of gzip ``data`` (one member or several, as ``gunzip``
    reads them, at most :data:`MAX_GZIP_MEMBERS`), never more than ``limit`` + 1 of them
    held: more is refused as plain input that large is.  Truncated or corrupt data, and
    bytes after the last member that are neither a member nor zero padding, are one-line
    errors naming ``where``.  Time is linear in the size of ``data`` (the compressed bytes
    are fed :data:`_GUNZIP_FEED` at a time, never the whole rest once per member)."""
    view = memoryview(data)
    size = len(data)
    out = bytearray()
    pos = 0  # compressed bytes given to a decompressor so far (less what it gave back)
    members = 0
    while True:
        members += 1
        if members > MAX_GZIP_MEMBERS:
            raise NvtopoError(f"more than {MAX_GZIP_MEMBERS:,} gzip members; not {what}",
                              where=where)
        unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending: Union[bytes, memoryview] = b""
        try:
            while not unzip.eof:
                if not pending and pos < size:
                    pending = view[pos:pos + _GUNZIP_FEED]
                    pos += len(pending)
                chunk = unzip.decompress(pending, min(_GUNZIP_STEP, limit + 1 - len(out)))
                out += chunk
                if len(out) > limit:
                    raise NvtopoError(f"gzip data decompresses to more than {_size(limit)}; "
                                      f"not {what}", where=where)
                pending = unzip.unconsumed_tail
                if not chunk and not pending and pos >= size and not unzip.eof:
                    raise NvtopoError("truncated gzip file (the compressed data ends early)",
                                      where=where)
        except zlib.error as exc:
            raise NvtopoError(f"corrupt gzip data ({exc})", where=where) from None
        pos -= len(unzip.unused_data)  # the start of what follows this member
        if data[pos:pos + 2] != GZIP_MAGIC:
            break
    if data.count(b"\0", pos) != size - pos:
        raise NvtopoError(f"{size - pos:,} bytes after the gzip data are not gzip data",
                          where=where)
    return bytes(out)


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit // 1024} KiB"


def _read_file(path: str, limit: int) -> bytes:
    """A regular file's first ``limit`` + 1 bytes.  Opened without blocking
    and checked on the open descriptor (no race with a file swapped for a FIFO)."""
    import stat

    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
             | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        why = "no such file (a broken link?)" if os.path.islink(path) else "no such file"
        raise NvtopoError(why, where=path) from None
    except PermissionError:
        raise NvtopoError("permission denied", where=path) from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device with nothing behind it)
            raise NvtopoError(f"not a regular file ({_kind_of(path)})", where=path) from None
        raise NvtopoError(f"cannot read: {exc.strerror or exc}", where=path) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise NvtopoError("is a directory, not a file", where=path)
        handed = _FD_ALIAS.fullmatch(path) is not None and stat.S_ISFIFO(mode)
        if not stat.S_ISREG(mode) and not handed:
            raise NvtopoError(f"not a regular file ({_kind_of(path, mode)})", where=path)
        if handed:  # a pipe handed to nvtopo: read it as standard input is read
            os.set_blocking(fd, True)
        # a file's size, not the bound, is what a read sets aside first (a small file of a
        # 64 MiB bound held 64 MiB); a file that grew, or says 0 (procfs), is read on
        want = min(limit + 1, os.fstat(fd).st_size + 1) if not handed else limit + 1
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            data = fh.read(want)
            if len(data) == want and want <= limit:
                data += fh.read(limit + 1 - want)
            return data
    except OSError as exc:
        raise NvtopoError(f"cannot read: {exc.strerror or exc}", where=path) from None
    finally:
        if fd >= 0:
            os.close(fd)


def _kind_of(path: str, mode: Optional[int] = None) -> str:
    import stat

    if mode is None:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return "not openable"
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "not a regular file")


#: A bare nvidia-smi text (or one kept as a snapshot's evidence) is never larger: a
#: 1024-device topo matrix is about 5 MB in 1,100 lines, ``nvidia-smi -q`` of 8 GPUs 5,000
#: lines.  Parsing takes time and memory in proportion (``check`` of the 1024-device
#: matrix: 8 s, 400 MB peak; of 8 MiB of 4,000-cell rows: 7 s, 600 MB; 64 MiB of one-cell
#: rows took 200 s and 4.6 GB), so more is refused.
MAX_TEXT_BYTES = 8 * 1024 * 1024
MAX_TEXT_LINES = 100_000
#: A snapshot nvtopo writes is never larger (a DGX H100's is 0.5 MB, a DGX-2's 0.6 MB, a
#: simulated 144-GPU NVLink domain's 17.6 MiB with 950,000 values; a larger one is not
#: written: :func:`nvtopo.snapshot.file_text`).  Decoding a JSON string may take four bytes
#: a character (one emoji in 64 MiB of ASCII: 0.6 GB), so JSON past this is refused before
#: it is decoded.
MAX_JSON_BYTES = 32 * 1024 * 1024
#: Most JSON values (commas and brackets, counted before decoding) a snapshot larger than
#: :data:`_COUNT_PAST` bytes may hold: a DGX H100 snapshot holds about 17,000, a DGX-2
#: 23,000 and a simulated 144-GPU domain 950,000.  A value costs up to ~100 bytes decoded (64 MiB of ``{},`` decode to 1.7 GB),
#: so this bounds what decoding a hostile file costs; a smaller file cannot hold enough
#: values to matter (4 MiB: 1.4 million at most), and is not counted.
MAX_JSON_VALUES = 2_000_000
_COUNT_PAST = 4 * 1024 * 1024


def _check_bulk(data: bytes, where: str) -> None:
    """Refuse input whose decoding would cost far more memory or time than any real
    snapshot or nvidia-smi text: too many JSON values, or text past :data:`MAX_TEXT_BYTES`
    (UTF-16 and UTF-32 text may take two and four times the bytes)."""
    head = data[:4]
    width = 4 if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)) else \
        2 if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else 1
    start = data[:64].lstrip(b"\xef\xbb\xbf\xff\xfe\x00 \t\r\n")
    if start.startswith(b"{"):
        if len(data) > MAX_JSON_BYTES:
            raise NvtopoError(f"JSON larger than {MAX_JSON_BYTES // (1024 * 1024)} MiB; not a "
                              "snapshot nvtopo wrote", where=where)
        if len(data) > _COUNT_PAST:
            json_values_within(data, where, MAX_JSON_VALUES, "a snapshot nvtopo wrote")
    elif len(data) > MAX_TEXT_BYTES * width:
        raise NvtopoError(f"text is larger than {MAX_TEXT_BYTES // (1024 * 1024)} MiB; not "
                          "nvidia-smi output", where=where)
    elif data.count(b"\n") > MAX_TEXT_LINES:
        raise NvtopoError(f"text has more than {MAX_TEXT_LINES:,} lines; not nvidia-smi "
                          "output", where=where)



def json_values_within(data: bytes, where: str, most: int, what: str) -> None:
    """Refuse JSON ``data`` of more than ``most`` values (commas and brackets, counted
    before decoding: a value costs up to ~100 bytes decoded), naming ``where``."""
    values = data.count(b",") + data.count(b"[") + data.count(b"{")
    if values > most:
        raise NvtopoError(f"holds more than {most:,} JSON values ({values:,}); not {what}",
                          where=where)


def decode_bytes(data: bytes, where: str) -> str:
    """Decode input bytes: UTF-8, or UTF-16 with a BOM (PowerShell redirects)."""
    if not data.strip():
        raise NvtopoError("file is empty", where=where)
    for bom, enc in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                     (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            try:
                return data.decode(enc)
            except UnicodeDecodeError:
                raise NvtopoError(f"not valid {enc.upper()} text", where=where) from None
    # a name that says gzip over bytes that are not: say so (content decides, not names)
    named = " (named .gz, but not gzip data)" if where.lower().endswith(".gz") else ""
    if b"\x00" in data:
        raise NvtopoError(f"binary file (contains NUL bytes){named}; expected a snapshot or "
                          "nvidia-smi topo text", where=where)
    text = data.decode("utf-8", errors="replace")
    bad = text.count("\ufffd")
    if bad and bad > max(2, len(text) // 100):
        raise NvtopoError(f"binary file (not UTF-8 text){named}; expected a snapshot or "
                          "nvidia-smi topo text", where=where)
    return text


def is_json(text: str) -> bool:
    """Whether decoded input is JSON, as the readers' registry says it
    (:func:`nvtopo.probes.readers.is_json`; imported here only when asked, so reading a
    sealed snapshot imports no reader)."""
    from ..probes import readers

    return readers.is_json(text)
