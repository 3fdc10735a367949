"""Records as positional rows: the compact form of the sealed model cache.

The JSON form of a record (:mod:`.codec`) repeats every key in every object; the cache a
snapshot carries (``"derived"``, :mod:`nvtopo.snapshot.cache`) holds hundreds of records
of a few kinds, so there a record is written as a JSON array of its field values, in the
order of :func:`~.codec.fields_of` (a nested ``extra`` field included, as a field of its
own; the open ``extra`` map as an object).  A DGX H100 model is 46 kB so, not 120 kB, and
reads back in half the time.

Reading a row back is as strict as :meth:`~.codec.Record.from_dict`: exactly one value a
field, each of the field's type (its JSON types exact, numbers finite and within
:data:`~.spec.LIMIT`), nested records and containers likewise; anything else raises
``ValueError`` naming the path (``$[4][0][7]``: positions, then the field's key).  The
leaf fields of a record are checked by type set, a few C-level passes a record
(``set(map(type, ...))``), not a call a value.

A field left out of the JSON form by a predicate (``omit=`` a function) reads back as
``None``, so its row holds ``None`` there; one left out when ``None`` holds ``None``.  A
record class with fields that may be absent (``omit="absent"``: :class:`~.host.Host`,
:class:`~.host.Origin`, ``NvmlSystem``), or that reads its object itself, keeps its JSON
form (an object) inside a row, read by its strict JSON decoder.

:func:`rows_from_json` turns the JSON form into rows *without* checking any type (a
value of the wrong type stays where it was; a missing or unknown key gives a row of the
wrong length): tools and tests use it to write a cache of a given JSON form, well-formed
or not.
"""

from __future__ import annotations

import sys
from math import isfinite
from operator import itemgetter
from typing import Any, Callable, Dict, List, Optional, Tuple

from .codec import container_encoder
from .codec import decoder as json_decoder
from .codec import encoder as json_encoder
from .codec import fields_of
from .spec import LIMIT, _Bad, _all_ok, _describe, _leaf_ok, _shown, where

_NoneType = type(None)
_DECODERS: Dict[Any, Callable[[Any], Any]] = {}
_ENCODERS: Dict[Any, Callable[[Any], Any]] = {}


def _json_form(cls: type) -> bool:
    """A record class kept as an object inside rows (absent fields, or its own reader)."""
    return getattr(cls, "__json_read__", None) is not None or any(
        f.omit == "absent" for f in fields_of(cls))


def _nullable(spec: Tuple[Any, ...]) -> Tuple[Any, ...]:
    if spec[0] == "leaf":
        return ("leaf", spec[1] | {_NoneType})
    if spec[0] == "any":
        return spec
    return (spec[0], spec[1], True) + spec[3:]


def _row_spec(f: Any) -> Tuple[Any, ...]:
    """A field's type in a row: a field the JSON form may leave out holds ``None`` there."""
    return _nullable(f.spec) if f.omit is not None else f.spec


#: Models read by this process so far; from the third on, the compiled decoders are used.
_READ = [0]
COMPILE_FROM = 3


def decode_rows(cls: type, row: Any, root: str = "$") -> Any:
    """The record of class ``cls`` that ``row`` (freshly decoded JSON: its lists and
    objects of plain values are taken over) holds; ``ValueError`` naming the path on any
    mismatch.  From the :data:`COMPILE_FROM`-th row read in a process on, through the
    compiled decoders (:mod:`.rows_compiled`: the same answers, faster)."""
    _READ[0] += 1
    try:
        if _READ[0] >= COMPILE_FROM:
            from .rows_compiled import compiled_decoder
            return compiled_decoder(cls, sys.modules[__name__])(row)
        return row_decoder(cls)(row)
    except _Bad as bad:
        raise ValueError(f"{where(bad.path, root)}: expected {bad.what}, got "
                         f"{_shown(bad.value)}") from None


def encode_rows(o: Any) -> Any:
    """The record as rows (fresh containers)."""
    return row_encoder(type(o))(o)


# --- decoding ------------------------------------------------------------------------------

def _value_decoder(spec: Tuple[Any, ...]) -> Callable[[Any], Any]:
    """JSON value in a row -> Python value of this (non-leaf) spec; raises ``_Bad``."""
    hit = _DECODERS.get(spec)
    if hit is not None:
        return hit
    kind, nullable = spec[0], (spec[2] if len(spec) > 2 else True)
    if kind == "any":
        def fn(v: Any) -> Any:
            return v
    elif kind == "leaf":
        ok = _leaf_ok(spec[1])

        def fn(v: Any) -> Any:
            if ok(v):
                return v
            raise _Bad(_describe(spec), v)
    elif kind == "rec":
        cls = spec[1]
        box: List[Any] = []

        def fn(v: Any) -> Any:
            if v is None and nullable:
                return None
            if not box:
                box.append(row_decoder(cls))
            return box[0](v)
    else:
        made = _container_decoder(spec)
        _DECODERS[spec] = made
        return made
    _DECODERS[spec] = fn
    return fn


def _container_decoder(spec: Tuple[Any, ...]) -> Callable[[Any], Any]:
    kind, item, nullable = spec[0], spec[1], spec[2]
    want: Any = list if kind == "list" else dict
    size = spec[3] if kind == "dict" and len(spec) > 3 else None
    every = _all_ok(item[1]) if item[0] == "leaf" else None
    sub = None if every is not None or item[0] == "any" else _value_decoder(item)

    def fn(v: Any) -> Any:
        if type(v) is not want:
            if nullable and v is None:
                return None
            raise _Bad(_describe(spec), v)
        if size is not None and len(v) != size:
            raise _Bad(f"an object of {size} keys", v)
        if every is not None:
            if not every(v if want is list else v.values()):
                raise _Bad(_describe(spec) + " of " + _describe(item), v)
            return v  # (taken over, not copied)
        if sub is None:
            return v
        try:
            if want is list:
                return [sub(x) for x in v]
            return {k: sub(x) for k, x in v.items()}
        except _Bad:
            pass
        for at, x in (enumerate(v) if want is list else v.items()):  # (errors only)
            try:
                sub(x)
            except _Bad as e:
                e.path.append(at)
                raise
        raise _Bad(_describe(spec), v)
    return fn


def row_decoder(cls: type) -> Callable[[Any], Any]:
    """The decoder of a record class's rows (built once)."""
    hit = _DECODERS.get(cls)
    if hit is not None:
        return hit
    if _json_form(cls):
        json_fn = json_decoder(cls)
        _DECODERS[cls] = json_fn
        return json_fn
    box: List[Callable[[Any], Any]] = []
    _DECODERS[cls] = lambda v: box[0](v)  # (a record that contains itself)
    fn = _record_decoder(cls)
    box.append(fn)
    _DECODERS[cls] = fn
    return fn


_ANY = None  # (a field of any type: no type set)
#: Past this many distinct type rows a record class tests its rows field by field.
MAX_SHAPES = 256


def omitted_by_predicate(flds: Any) -> Tuple[Tuple[str, str, Any], ...]:
    """(key, attribute, predicate) of the fields the JSON form leaves out where a predicate
    of the record holds: there a row must hold ``None`` (what the JSON form reads back)."""
    return tuple((f.key, f.name, f.omit) for f in flds if callable(f.omit))


def _types(spec: Tuple[Any, ...]) -> Optional[frozenset]:
    """The JSON (Python) types a value of this spec may have in a row."""
    kind = spec[0]
    if kind == "any":
        return _ANY
    if kind == "leaf":
        return spec[1]
    want = (dict if _json_form(spec[1]) else list) if kind == "rec" else \
        list if kind == "list" else dict
    return frozenset({want, _NoneType}) if spec[2] else frozenset({want})


def _record_decoder(cls: type) -> Callable[[Any], Any]:
    """A record class's row decoder.  A row is tested by the tuple of its values' types
    (one C-level pass): a type row seen before is known good but for the numbers' bounds
    (one ``max`` over them) and what its records and containers hold (decoded by a call
    each); a new one is tested field by field, then remembered."""
    flds = fields_of(cls)
    specs = [_row_spec(f) for f in flds]
    allowed = [_types(s) for s in specs]
    subs = [None if s[0] in ("leaf", "any") else _value_decoder(s) for s in specs]
    names = tuple(f.name for f in flds)
    n = len(flds)
    nested = frozenset(f.key for f in flds if f.nest == "extra")
    preds = omitted_by_predicate(flds)
    post = getattr(cls, "__post_init__", None)
    what = f"a row ({cls.__name__}, {n} values)"
    shapes: Dict[Tuple[type, ...], Tuple[Any, ...]] = {}
    new = object.__new__
    L = LIMIT

    def slow(row: Any) -> _Bad:
        """The first mismatch, field by field (errors only)."""
        if type(row) is not list or len(row) != n:
            return _Bad(what, row)
        for f, spec, v in zip(flds, specs, row):
            try:
                _value_decoder(spec)(v)
            except _Bad as e:
                e.path.append(f.key)
                return e
        return _Bad(what, row)

    def shape(ts: Tuple[type, ...]) -> Optional[Tuple[Any, ...]]:
        """What is left to test of rows of these types (None: a type no field allows)."""
        if not all(a is _ANY or t in a for t, a in zip(ts, allowed)):
            return None
        nums = [i for i, (t, s) in enumerate(zip(ts, specs))
                if s[0] == "leaf" and t in (int, float)]
        floats = [i for i in nums if ts[i] is float]
        rest = tuple((i, subs[i]) for i, t in enumerate(ts)
                     if subs[i] is not None and t is not _NoneType)
        got = (itemgetter(*nums, nums[0]) if nums else None,
               itemgetter(*floats, floats[0]) if floats else None, rest)
        if len(shapes) < MAX_SHAPES:
            shapes[ts] = got
        return got

    def fn(row: Any) -> Any:
        if type(row) is not list or len(row) != n:
            raise _Bad(what, row)
        ts = tuple(map(type, row))
        known = shapes.get(ts) or shape(ts)
        if known is None:
            raise slow(row)
        nums, floats, rest = known
        if nums is not None and (max(map(abs, nums(row))) > L or (
                floats is not None and not all(map(isfinite, floats(row))))):
            raise slow(row)
        o: Any = new(cls)
        d = o.__dict__
        d.update(zip(names, row))
        try:
            for i, sub in rest:
                d[names[i]] = sub(row[i])
        except _Bad:
            raise slow(row) from None
        if nested and not nested.isdisjoint(o.__dict__["extra"]):  # not in the JSON form
            raise _Bad("an extra map without the record's own keys", o.extra, "extra")
        for key, name, pred in preds:  # what the JSON form leaves out reads back as None
            if d[name] is not None and pred(o):
                raise _Bad("null (the JSON form leaves it out here)", d[name], key)
        if post is not None:
            try:
                post(o)
            except ValueError as exc:
                raise _Bad(f"{what} ({exc})", row) from None
        return o
    return fn


# --- encoding ------------------------------------------------------------------------------

def _value_encoder(spec: Tuple[Any, ...]) -> Optional[Callable[[Any], Any]]:
    return container_encoder(spec, _ENCODERS, row_encoder)


def row_encoder(cls: type) -> Callable[[Any], Any]:
    """The encoder of a record class into rows (built once)."""
    hit = _ENCODERS.get(cls)
    if hit is not None:
        return hit
    if _json_form(cls):
        json_fn = json_encoder(cls)
        _ENCODERS[cls] = json_fn
        return json_fn
    plan: List[Tuple[Any, ...]] = []  # filled below, once fn is known (records nest)

    def fn(o: Any) -> List[Any]:
        od = o.__dict__
        out = []
        for name, enc, pred in plan:
            v = od[name]
            if pred is not None and pred(o):
                v = None  # the JSON form leaves it out: read back as None
            out.append(v if enc is None or v is None else enc(v))
        return out
    _ENCODERS[cls] = fn
    plan.extend((f.name, _value_encoder(f.spec), f.omit if callable(f.omit) else None)
                for f in fields_of(cls))
    return fn


# --- from the JSON form, unchecked ---------------------------------------------------------

def rows_from_json(cls: type, d: Any) -> Any:
    """The rows that the JSON form ``d`` of a ``cls`` record stands for, no type checked:
    a value of another type than the field's is kept as it is (so a row decoder refuses
    it as the JSON decoder refuses the object); a missing required key, an unknown key, or
    ``null`` where the JSON form allows none (a key it leaves out when ``None``) makes the
    row one value too long."""
    return _from_json(("rec", cls, False), d)


def _from_json(spec: Tuple[Any, ...], v: Any) -> Any:
    kind = spec[0]
    if kind == "rec":
        cls = spec[1]
        if type(v) is not dict or _json_form(cls):
            return v
        return _record_from_json(cls, v)
    if kind == "list" and type(v) is list:
        return [_from_json(spec[1], x) for x in v]
    if kind == "dict" and type(v) is dict:
        return {k: _from_json(spec[1], x) for k, x in v.items()}
    return v


def _allows_null(spec: Tuple[Any, ...]) -> bool:
    return spec[0] == "any" or (_NoneType in spec[1] if spec[0] == "leaf" else spec[2])


def _record_from_json(cls: type, d: Dict[str, Any]) -> List[Any]:
    flds = fields_of(cls)
    nested = [f for f in flds if f.nest == "extra"]
    x = d.get("extra") if nested else None
    inner = x if type(x) is dict else {}
    row: List[Any] = []
    seen, bad = set(), False
    for f in flds:
        if f.nest == "extra":
            src: Dict[str, Any] = inner
        else:
            src = d
            seen.add(f.key)
        if f.name == "extra" and nested:
            v = {k: y for k, y in inner.items() if k not in {g.key for g in nested}} \
                if type(x) is dict else x
        elif f.key in src:
            v = src[f.key]
            if v is None and not _allows_null(f.spec):  # (left out, it would read as None)
                bad = True
            v = _from_json(_row_spec(f), v)
        elif f.omit is not None:
            v = None
        elif f.missing:
            miss = f.when_missing()
            v = miss() if miss is not None else None
            v = encode_rows(v) if hasattr(v, "__record_fields__") else v
        else:
            v, bad = None, True
        row.append(v)
    if bad or any(k not in seen for k in d) or (nested and type(x) is not dict):
        row.append("(a key missing, unknown or of the wrong type)")
    return row


__all__ = ["decode_rows", "encode_rows", "row_decoder", "row_encoder", "rows_from_json"]
