"""Fake sysfs trees as reviewable text: the ``.sysfs`` text archive, its loader and dumper.

One entry per line, paths relative to the sysfs root (the directory that
plays the role of /sys)::

    # comment                 (blank lines and lines starting with # are ignored)
    PATH = VALUE              a file holding VALUE and a newline (sysfs files end in one)
    PATH =raw VALUE           a file holding exactly VALUE (no newline added)
    PATH =tar VALUE           VALUE and a newline, NUL-padded to 4096 bytes, as GNU tar
                              stores a sysfs file (sysfs reports st_size 4096)
    PATH -> TARGET            a symbolic link (relative targets, as in the real /sys)
    PATH/                     an empty directory
    PATH ! ERRNO [message]    the file exists but reading it fails with ERRNO (EINVAL,
                              EACCES, EIO, ...): kept apart and injected by the probe's
                              reader, because no plain file fails like that (and file
                              modes do not stop root)

VALUE escapes: ``\\n`` newline, ``\\t`` tab, ``\\0`` NUL, ``\\\\`` backslash.

:func:`materialize` writes an archive out as a real directory tree (with real
symlinks) and returns the injected read errors for
:func:`nvtopo.probes.sysfs.capture`; :func:`dump` turns a snapshot's sysfs
evidence back into an archive, so a problem seen in the field becomes a fixture.
"""

from __future__ import annotations

import errno as errno_mod
import os
from typing import Any, Dict, Iterable, List, Tuple

TAR_BLOCK = 4096


def _unescape(s: str) -> str:
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            out.append({"n": "\n", "t": "\t", "0": "\0", "\\": "\\"}.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _escape(s: str) -> str:
    return (s.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
            .replace("\0", "\\0"))


class ArchiveError(ValueError):
    """A line of a ``.sysfs`` archive cannot be read."""


def parse(text: str, where: str = "archive") -> List[Tuple[str, str, str]]:
    """Entries ``(kind, path, value)`` with kind ``file``, ``link``, ``dir`` or ``fault``.

    Paths hold no spaces (sysfs paths have none): the first space ends the path.
    """
    entries = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        path, sep, rest = line.partition(" ")
        if not sep:
            if not path.endswith("/"):
                raise ArchiveError(f"{where}:{no}: not an archive entry: {line!r}")
            entries.append(("dir", path.rstrip("/"), ""))
        else:
            op, _, value = rest.partition(" ")
            if op == "->":
                entries.append(("link", path, value.strip()))
            elif op == "=":
                entries.append(("file", path, _unescape(value) + "\n"))
            elif op == "=raw":
                entries.append(("file", path, _unescape(value)))
            elif op == "=tar":
                content = _unescape(value) + "\n"
                pad = max(TAR_BLOCK - len(content.encode()), 0)
                entries.append(("file", path, content + "\0" * pad))
            elif op == "!":
                entries.append(("fault", path, value.strip()))
            else:
                raise ArchiveError(f"{where}:{no}: unknown operator {op!r} in {line!r}")
        if entries[-1][1].startswith("/") or ".." in entries[-1][1].split("/"):
            raise ArchiveError(f"{where}:{no}: path must be relative and stay inside the root")
    return entries


def _fault_text(spec: str) -> str:
    name, _, msg = spec.partition(" ")
    code = getattr(errno_mod, name, None)
    if not msg:
        msg = os.strerror(code) if code is not None else "I/O error"
    return f"{name}: {msg}"


def materialize(text: str, dest: str, where: str = "archive") -> Dict[str, str]:
    """Write the archive under ``dest``; return the injected read errors (path -> error).

    The returned paths are resolved inside ``dest`` (as the probe resolves them).
    """
    from .probes.sysfs import resolve_path

    faults: Dict[str, str] = {}
    links = []
    for kind, path, value in parse(text, where):
        full = os.path.join(dest, path)
        if kind == "dir":
            os.makedirs(full, exist_ok=True)
        elif kind == "link":
            links.append((full, value))
        else:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as fh:
                if kind == "file":
                    fh.write(value.encode("utf-8"))
            if kind == "fault":
                faults[path] = _fault_text(value)
    for full, target in links:
        os.makedirs(os.path.dirname(full), exist_ok=True)
        os.symlink(target, full)

    def readlink(key: str) -> Any:
        try:
            return os.readlink(os.path.join(dest, key))
        except OSError:
            return None

    cache: Dict[str, str] = {}
    return {resolve_path(p, readlink, cache): e for p, e in faults.items()}


def load_file(path: str, dest: str) -> Dict[str, str]:
    with open(path, encoding="utf-8") as fh:
        return materialize(fh.read(), dest, where=path)


def dump(evidence: Dict[str, Any], header: Iterable[str] = ()) -> str:
    """A ``.sysfs`` archive of a sysfs evidence map (files, links, errors, empty dirs).

    Names a directory listing holds but the probe never read (``lifespan``,
    ``power``) become empty placeholder files, so listings survive; absent
    files (ENOENT) are left out.
    """
    lines = [f"# {h}" for h in header]
    body: Dict[str, str] = {}
    for path, content in (evidence.get("files") or {}).items():
        body[path] = f"{path} = {_escape(content)}"
    for path, target in (evidence.get("links") or {}).items():
        body[path] = f"{path} -> {target}"
    for path, err in (evidence.get("errors") or {}).items():
        name = err.split(":", 1)[0]
        if name == "ENOENT":
            continue  # absent: simply not there
        body[path] = f"{path} ! {name} {err.split(':', 1)[1].strip()}".rstrip()
    dirs = evidence.get("dirs") or {}
    known = set(body) | set(dirs)
    prefixes = {k.rsplit("/", i)[0] for k in known for i in range(1, k.count("/") + 1)}
    for path, names in dirs.items():
        if not names and path not in body:
            body[path] = f"{path}/"
        for n in names:
            child = f"{path}/{n}"
            if child not in known and child not in prefixes:
                # listed but never read: an empty placeholder keeps the listing intact
                body[child] = f"{child} =raw"
    lines.extend(body[k] for k in sorted(body))
    return "\n".join(lines) + "\n"
