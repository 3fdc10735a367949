"""Validate a JSON document nvtopo wrote against its JSON Schema (docs/schemas/).

One schema per document; schemas refer to each other by file name
(``model.schema.json#/$defs/gpu``), a reference relative to the referring schema's ``$id``
(``https://nvtopo.invalid/schemas/<file>``): the validators find each schema by its ``$id``
only, in a registry of docs/schemas/ (nothing is fetched).  Each validator is compiled once
per process.

:func:`check_cli` is what the CLI runner of the test suite (``cli_runner.make_runner``)
calls after every invocation: the JSON document a command printed (or wrote with
``-o``) is validated against the schema of that command.
"""

from __future__ import annotations

import functools
import json
import shlex
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jsonschema

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "docs" / "schemas"

#: Document name -> its schema file.
SCHEMAS: Dict[str, str] = {
    "model": "model.schema.json",
    "snapshot": "snapshot.schema.json",
    "check": "check.schema.json",
    "links": "links.schema.json",
    "ib": "ib.schema.json",
    "diff": "diff.schema.json",
    "audit": "audit.schema.json",
    "cluster": "cluster.schema.json",
    "layouts": "layouts.schema.json",
    "layout": "layout.schema.json",
    "collect": "collect.schema.json",
    "thresholds": "thresholds.schema.json",
    "catalog": "catalog.schema.json",
    "explain": "explain.schema.json",
    "trend": "trend.schema.json",
}


@functools.lru_cache(maxsize=None)
def schema(name: str) -> Dict[str, Any]:
    """The schema of a document (``model``, ``check`` ...), parsed."""
    return json.loads((SCHEMA_DIR / SCHEMAS[name]).read_text(encoding="utf-8"))


#: Every schema's ``$id`` is this and its file name: an identifier, not an address (the
#: reserved ``.invalid`` domain: a validator that fetches what it cannot find fails at once).
ID_BASE = "https://nvtopo.invalid/schemas/"


def schema_path(name: str) -> str:
    """The schema's path as the repository names it (for messages)."""
    return f"docs/schemas/{SCHEMAS[name]}"


@functools.lru_cache(maxsize=None)
def validator(name: str) -> Any:
    """A compiled Draft 2020-12 validator for one document (made once per process), its
    references resolved through the schemas' ``$id`` (no file name, no path)."""
    cls = jsonschema.Draft202012Validator
    root = schema(name)
    cls.check_schema(root)
    store = {schema(n)["$id"]: schema(n) for n in SCHEMAS}
    try:  # jsonschema >= 4.18 resolves references through `referencing`
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
    except ImportError:  # older jsonschema 4.x: its own resolver, same store
        resolver = jsonschema.RefResolver(base_uri=root["$id"], referrer=root, store=store)
        return cls(root, resolver=resolver)
    registry = Registry().with_resources(
        (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
        for uri, doc in store.items())
    return cls(root, registry=registry)


def _where(path: Sequence[Any]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def problems(doc: Any, name: str, limit: int = 5) -> List[str]:
    """Where and why ``doc`` does not match the schema (at most ``limit``; [] when it does)."""
    out = []
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(map(str, e.path)))
    for err in errors[:limit]:
        best = jsonschema.exceptions.best_match([err])
        out.append(f"{_where(best.absolute_path)}: {best.message[:300]}")
    return out


def validate(doc: Any, name: str, what: str = "document") -> None:
    """Raise AssertionError naming ``what`` and the schema when ``doc`` does not match."""
    found = problems(doc, name)
    if found:
        raise AssertionError(f"{what} does not match {schema_path(name)}:\n  "
                             + "\n  ".join(found))


# --- the CLI hook -------------------------------------------------------------------------

#: Commands whose JSON output needs --format json, and the schema of that output.
_FORMAT_JSON = {"show": "model", "check": "check", "links": "links", "ib": "ib",
                "diff": "diff", "audit": "audit", "cluster": "cluster", "checks": "catalog",
                "explain": "explain",
                "trend": "trend"}
#: Commands that always print (or write with -o) JSON.
_ALWAYS_JSON = {"snapshot": "snapshot", "simulate": "snapshot"}
_HELP = {"--help", "-h", "--version"}


def _option(args: Sequence[str], long: str, short: Optional[str] = None) -> Optional[str]:
    """The value of an option (the last one given), in every spelling click accepts."""
    value = None
    it = iter(range(len(args)))
    for i in it:
        a = args[i]
        if a == "--":
            break
        if a == long or (short is not None and a == short):
            if i + 1 < len(args):
                value = args[i + 1]
                next(it, None)
        elif a.startswith(long + "="):
            value = a[len(long) + 1:]
        elif short is not None and a.startswith(short) and not a.startswith("--") \
                and len(a) > len(short):
            value = a[len(short):]
    return value


def document_of(args: Any) -> Optional[Tuple[str, str, Optional[str]]]:
    """For a command line (the args given to the runner): ``(command, schema name, output
    file or None)`` when the command writes one JSON document, else None."""
    if args is None:
        return None
    argv = shlex.split(args) if isinstance(args, str) else [str(a) for a in args]
    if not argv or _HELP & set(argv):
        return None
    cmd, rest = argv[0], argv[1:]
    output = None
    if cmd == "snapshot" and _option(rest, "--format") == "nccl-topo":
        return None  # an NCCL topology file (XML), not a snapshot
    if cmd == "collect" and rest and rest[0] in ("slurm", "ray"):
        # the manifest, DIR/collect.json (the snapshots beside it are the snapshot schema's)
        out_dir = _option(rest[1:], "--output", "-o")
        return (f"collect {rest[0]}", "collect",
                str(Path(out_dir) / "collect.json")) if out_dir else None
    if cmd in ("show", "check", "snapshot", "simulate", "cluster"):
        output = _option(rest, "--output", "-o")
        if output is not None and output != "-":
            import os
            import stat

            from nvtopo import output as out_mod

            if out_mod._stream(output) is not None \
                    or out_mod._stream(os.path.realpath(output)) is not None:
                output = "-"  # -o /dev/stdout, or a link to it: the document is on stdout
            else:
                try:
                    if not stat.S_ISREG(os.stat(output).st_mode):
                        return None  # a device or FIFO took the document: nothing to read back
                except OSError:
                    pass
        output = None if output in (None, "-") else output
    if cmd in _ALWAYS_JSON:
        return cmd, _ALWAYS_JSON[cmd], output
    if cmd in _FORMAT_JSON:
        if _option(rest, "--format") == "json":
            return cmd, _FORMAT_JSON[cmd], output
        return None
    if cmd == "layouts":
        # the group's own option (--format VALUE) comes before a subcommand
        i = 0
        while i < len(rest) and rest[i].startswith("-"):
            i += 2 if rest[i] == "--format" else 1
        sub = rest[i] if i < len(rest) else None
        if sub == "show" and _option(rest[i + 1:], "--format") == "table":
            return None  # the readable form
        if sub in ("show", "capture"):
            return f"layouts {sub}", "layout", None
        if sub is None and _option(rest, "--format") == "json":
            return "layouts", "layouts", None
        if sub == "list" and _option(rest[i + 1:], "--format") == "json":
            return "layouts", "layouts", None
    return None


def check_cli(args: Any, result: Any) -> None:
    """Validate the JSON document of a CLI invocation that succeeded (exit status 0 or 1)
    against its command's schema; AssertionError naming the command and the schema."""
    if getattr(result, "exit_code", None) not in (0, 1):
        return
    found = document_of(args)
    if found is None:
        return
    cmd, name, output = found
    if output is not None:
        where = f"the file {output} written by `nvtopo {cmd}`"
        try:
            raw = Path(output).read_bytes()
            if raw[:2] == b"\x1f\x8b":  # -o FILE.gz: written gzip-compressed
                import gzip

                raw = gzip.decompress(raw)
            text = raw.decode("utf-8")
        except OSError as exc:
            raise AssertionError(f"`nvtopo {cmd}` exited {result.exit_code} but {output} "
                                 f"cannot be read: {exc}") from None
    else:
        where = f"the standard output of `nvtopo {cmd}`"
        text = result.stdout
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise AssertionError(f"{where} (exit status {result.exit_code}) is not JSON "
                             f"({exc}); schema {schema_path(name)}") from None
    validate(doc, name, what=where)
