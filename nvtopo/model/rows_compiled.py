"""The compiled tier of the row decoders (:mod:`.rows`): for a process that reads many
caches (``audit``, ``cluster``), a decoder per record class whose code tests each field
inline (``type(v0) is not int or not -L <= v0 <= L``), with no loop over a plan and no
call per leaf value: it reads a row in about half the time of the generic decoder.

Compiling costs most of a millisecond a class, which a single ``check --from`` would
pay for one file, so :func:`.rows.decode_rows` turns to this tier only from the third
model a process reads; a class is compiled on first use.  The code is made from the
field types and the class's own field names (identifiers of its definition, never text
of the input: the record's values are set as attributes, which keeps a new instance's
values inline and takes about half the time of filling its ``__dict__``), and a mismatch
anywhere is named by the generic decoder (``slow``), so the errors are the generic
tier's.
"""

from __future__ import annotations

import keyword
import sys
from typing import Any, Callable, Dict, List, Sequence, Tuple

from .codec import decoder as json_decoder
from .codec import fields_of
from .spec import LIMIT, _Bad, _all_ok, _leaf_ok

_NoneType = type(None)
_COMPILED: Dict[Any, Callable[[Any], Any]] = {}

#: The inline test of a leaf value ``{v}`` by its type set (others: a call).
_INLINE = {
    frozenset({str}): "type({v}) is not str",
    frozenset({str, _NoneType}): "{v} is not None and type({v}) is not str",
    frozenset({bool}): "type({v}) is not bool",
    frozenset({bool, _NoneType}): "{v} is not None and type({v}) is not bool",
    frozenset({int}): "type({v}) is not int or not -L <= {v} <= L",
    frozenset({int, _NoneType}):
        "{v} is not None and (type({v}) is not int or not -L <= {v} <= L)",
    frozenset({_NoneType}): "{v} is not None",
    frozenset({float}): "type({v}) is not float or not -L <= {v} <= L",
    frozenset({float, _NoneType}):
        "{v} is not None and (type({v}) is not float or not -L <= {v} <= L)",
    frozenset({int, float, _NoneType}):
        "{v} is not None and (type({v}) is not int and type({v}) is not float "
        "or not -L <= {v} <= L)",
}
#: The inline test of every value ``{v}`` of a container against a type set ``{t}``: one
#: C-level pass over their types, one over the numbers' magnitudes (others: a call).
_EVERY = {
    frozenset({int}): "not {t}.issuperset(map(type, {v})) "
                      "or max(map(abs, {v}), default=0) > L",
    frozenset({int, _NoneType}): "not {t}.issuperset(map(type, {v})) "
                                 "or max(map(abs, filter(None, {v})), default=0) > L",
    frozenset({str}): "not {t}.issuperset(map(type, {v}))",
    frozenset({str, _NoneType}): "not {t}.issuperset(map(type, {v}))",
}
_FAIL = "        raise _Bad('', None)"
#: Containers of at most this many values are tested value by value, inline (``_INLINE``):
#: for a few values (a link's five error counters) a loop is two to three times as fast as
#: the C-level passes of ``_EVERY``, whose iterators cost more than they save; the loop is
#: still ahead at 64 values on Python 3.11 and later, and only up to about 12 before.
_SMALL = 32 if sys.version_info >= (3, 11) else 8


#: The generic tier (:mod:`.rows`, which imports this module: handed over, not imported).
_GENERIC: List[Any] = []


def compiled_decoder(cls: type, generic: Any = None) -> Callable[[Any], Any]:
    """The compiled row decoder of a record class (built once; a class kept in its JSON
    form inside rows is read by its JSON decoder); ``generic``: the module :mod:`.rows`."""
    if generic is not None and not _GENERIC:
        _GENERIC.append(generic)
    rows = _GENERIC[0]
    hit = _COMPILED.get(cls)
    if hit is not None:
        return hit
    if rows._json_form(cls):
        fn = json_decoder(cls)
    else:
        _COMPILED[cls] = rows.row_decoder(cls)  # (a record that contains itself)
        fn = _compile(cls, rows)
    _COMPILED[cls] = fn
    return fn


def _lazy(env: Dict[str, Any], name: str, cls: type) -> Callable[[Any], Any]:
    """A stand-in for ``cls``'s decoder under ``name`` in a compiled decoder's globals: it
    compiles that decoder on first use and puts it in its place (a cache holds only some
    of the record kinds: the others are never compiled)."""
    def first(v: Any) -> Any:
        fn = env[name] = compiled_decoder(cls)
        return fn(v)
    return first


def _field_source(i: int, spec: Tuple[Any, ...], env: Dict[str, Any], rows: Any
                  ) -> List[str]:
    """The lines that test (and, for records and their containers, decode) field ``i``,
    raising ``_Bad``; ``env`` gets what the lines call."""
    v, t, kind = f"v{i}", f"t{i}", spec[0]
    if kind == "any":
        return []
    if kind == "leaf":
        test = _INLINE.get(spec[1])
        if test is None:
            env[t] = _leaf_ok(spec[1])
            test = f"not {t}({{v}})"
        return [f"    if {test.format(v=v)}:", _FAIL]
    if kind == "rec":
        env[t] = _lazy(env, t, spec[1])
        return [f"    if {v} is not None:", f"        {v} = {t}({v})"] if spec[2] \
            else [f"    {v} = {t}({v})"]
    item, want = spec[1], "list" if kind == "list" else "dict"
    null = f"{v} is not None and " if spec[2] else ""
    size = f" or len({v}) != {spec[3]}" if len(spec) > 3 and spec[3] is not None else ""
    lines = [f"    if {null}(type({v}) is not {want}{size}):", _FAIL]
    if item[0] == "leaf":
        values = v if want == "list" else f"{v}.values()"
        test = _EVERY.get(item[1])
        each = _INLINE.get(item[1]) if test is not None else None
        if test is None:
            env[t] = _all_ok(item[1])
            test = f"not {t}({{v}})"
        else:
            env[t] = item[1]
        if each is None:
            lines += [f"    if {null}({test.format(v=values, t=t)}):", _FAIL]
        else:  # (a few values: one inline test each; more: the C-level passes)
            lines += [f"    if {v} is not None:" if spec[2] else "    if True:",
                      f"        if len({v}) > {_SMALL}:",
                      f"            if {test.format(v=values, t=t)}:",
                      "                raise _Bad('', None)",
                      f"        else:",
                      f"            for e{i} in {values}:",
                      f"                if {each.format(v=f'e{i}')}:",
                      "                    raise _Bad('', None)"]
    elif item[0] != "any":
        env[t] = _lazy(env, t, item[1]) if item[0] == "rec" and not item[2] \
            else rows._value_decoder(item)
        made = f"[{t}(x) for x in {v}]" if want == "list" \
            else f"{{k: {t}(x) for k, x in {v}.items()}}"
        lines += [f"    if {v} is not None:" if spec[2] else "    if True:",
                  f"        {v} = {made}"]
    return lines


def _source(specs: List[Tuple[Any, ...]], env: Dict[str, Any], rows: Any,
            attrs: Sequence[str] = ()) -> str:
    """The text of the decoder: the row unpacked, each field tested or decoded, the
    values set on a new record (as attributes named ``attrs``, where given: the class's
    own field names, identifiers of its definition; else into its ``__dict__`` by the
    names ``N0``, ``N1``... of the namespace); a mismatch anywhere is named by ``slow``."""
    n = len(specs)
    vs = [f"v{i}" for i in range(n)]
    body = [f"    {', '.join(vs)}{',' if n == 1 else ''} = row"] if n else ["    pass"]
    for i, spec in enumerate(specs):
        body += _field_source(i, spec, env, rows)
    lines = ["def dec(row):",
             f"    if type(row) is not list or len(row) != {n}:",
             "        raise slow(row)",
             "    try:"]
    lines += ["    " + line for line in body]
    lines += ["    except _Bad:", "        raise slow(row) from None", "    o = new(cls)"]
    if attrs:  # (an attribute store keeps a new instance's values inline: about half the time)
        lines += [f"    o.{a} = {v}" for a, v in zip(attrs, vs)]
    else:
        lines += ["    d = o.__dict__"] + [f"    d[N{i}] = {v}" for i, v in enumerate(vs)]
    lines += ["    return o"]
    return "\n".join(lines) + "\n"


def _compile(cls: type, rows: Any) -> Callable[[Any], Any]:
    flds = fields_of(cls)
    specs = [rows._row_spec(f) for f in flds]
    generic = rows.row_decoder(cls)

    def slow(row: Any) -> _Bad:
        """The generic decoder's account of the mismatch (errors only)."""
        try:
            generic(row)
        except _Bad as e:
            return e
        return _Bad(f"a row ({cls.__name__})", row)

    env: Dict[str, Any] = {"slow": slow, "new": object.__new__, "cls": cls, "L": LIMIT,
                           "_Bad": _Bad}
    env.update((f"N{i}", f.name) for i, f in enumerate(flds))
    names = [f.name for f in flds]
    plain_set = getattr(cls, "__setattr__", None) is object.__setattr__ and all(
        n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("__")
        and not isinstance(getattr(cls, n, None), property) for n in names)
    code = compile(_source(specs, env, rows, names if plain_set else ()),
                   f"<rows of {cls.__name__}>", "exec")
    exec(code, env)  # noqa: S102 - made from the field types alone (see the docstring)
    body = env["dec"]
    nested = frozenset(f.key for f in flds if f.nest == "extra")
    preds = rows.omitted_by_predicate(flds)
    post = getattr(cls, "__post_init__", None)
    if not nested and not preds and post is None:
        return body

    def fn(row: Any) -> Any:
        o = body(row)
        d = o.__dict__
        if nested and not nested.isdisjoint(d["extra"]):
            raise slow(row)
        for _key, name, pred in preds:
            if d[name] is not None and pred(o):
                raise slow(row)
        if post is not None:
            try:
                post(o)
            except ValueError:
                raise slow(row) from None
        return o
    return fn
