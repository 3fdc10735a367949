"""A small record codec: record fields <-> JSON objects, both ways, strictly.

Every typed record of the model is a class deriving from :class:`Record`, decorated with
:func:`record`: its annotated attributes are its fields, in order (a subclass may redefine
a field's type or default, keeping its place), constructed, compared and shown by
:class:`Record`'s generic methods (no code is generated per class, and no dataclass
machinery runs: importing the model stays cheap).  Its fields
become JSON keys in a declared order (the dataclass order, or ``__json_order__``), with
per-field rules given by :func:`fld`:

* ``key``: the JSON key where it differs from the attribute (``class``);
* ``omit``: when the key is left out: ``"none"`` (omitted when ``None``, never written as
  ``null``), ``"absent"`` (omitted when :data:`ABSENT`; may be ``null`` when present), or a
  predicate of the record (omitted when it holds; read back as ``None``).  Without it the key
  is always written, ``None`` as ``null``;
* ``missing``: the key may be missing when read (the field's default is used);
* ``size``: a ``Dict`` field has exactly that many keys;
* ``nest``: the field is written inside the object under that key (``"extra"``), whose
  other keys are kept in the record's ``extra`` attribute (the model's open maps).

A record class that reads and writes its object itself (an open map whose other keys sit
beside the known ones, in the order they were set: :class:`~nvtopo.model.host.Host`)
gives ``__json_read__(d)`` (a classmethod) and ``__json_write__(self)``.

Types come from the annotations: ``str``, ``int``, ``float``, ``bool``, ``None``,
``Optional[...]``, ``Union`` of leaf types, ``List[...]``, ``Dict[str, ...]``, ``Any`` and
nested records.  JSON types are exact: a bool is not an int, an int is not a float, and a
number must be finite and within :data:`LIMIT`.

:meth:`Record.from_dict` is strict: a missing key, a key it does not know, or a value of the
wrong type raises ``ValueError`` naming the path (``$.gpus[3].extra.nvml.pcie.max_gen:
expected int or null, got '5'``).  The encoder and the decoder of a class are built once, as
closures over a plan of its fields (no source is compiled at run time: ``check --from``
starts fast), so reading a sealed DGX H100 model takes about a millisecond.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar

from .spec import (  # noqa: F401  (ABSENT, LIMIT, MISSING: the codec's interface too)
    ABSENT, LIMIT, MISSING, _INT_N, _STR, _STR_N, _Bad, _MISS, _UNKNOWN, _all_ok, _describe,
    _leaf_ok, _non_null, _shown, _spec, _text_spec, is_record, where)

if TYPE_CHECKING:
    # tells type checkers (PEP 681) what ``@record`` gives a class: an ``__init__`` over
    # its fields, positional or keyword, with their defaults.  ``fld`` is deliberately not
    # declared a field specifier: a checker would then read ``fld("src")`` without
    # ``default=``/``factory=`` as a required field, while ``fld`` always gives a default
    # (``None`` or ABSENT); as a plain value, ``= fld(...)`` reads as "has a default", which
    # is what it does
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_kw: Any) -> Callable[[Any], Any]:
        """No-op at run time: nothing is imported for it on the start-up path."""
        return lambda f: f


class Spec:
    """What :func:`fld` declares about a field: its default, and its metadata (the source
    that states it, and its JSON rules)."""

    __slots__ = ("default", "factory", "metadata")

    def __init__(self, default: Any = MISSING, factory: Any = MISSING,
                 metadata: Optional[Dict[str, Any]] = None) -> None:
        self.default = default
        self.factory = factory
        self.metadata = metadata or {}


class Field:
    """A field of a record class: its name, annotation, default, metadata, and its JSON
    rules (:func:`fld`)."""

    __slots__ = ("name", "type", "default", "default_factory", "metadata", "key", "omit",
                 "missing", "nest", "size", "module", "_spec")

    def __init__(self, name: str, tp: Any, spec: Spec, module: str = "") -> None:
        meta = spec.metadata
        self.module = module
        self.name = name
        self.type = tp
        self.default = spec.default
        self.default_factory = spec.factory
        self.metadata = meta
        self.key = meta.get("key") or name
        self.omit = meta.get("omit")
        self.missing = bool(meta.get("missing"))
        self.nest = meta.get("nest")
        self.size = meta.get("size")
        self._spec: Optional[Tuple[Any, ...]] = None

    @property
    def spec(self) -> Tuple[Any, ...]:
        """The field's type as the codec reads it (built on first use)."""
        spec = self._spec
        if spec is None:
            tp = self.type
            # annotations as text (postponed) are read by the codec's own parser, in the
            # module of the class that declared the field
            spec = _text_spec(tp, self.module) if type(tp) is str else _spec(tp)
            if self.size is not None and spec[0] == "dict":
                spec = ("dict", spec[1], spec[2], self.size)
            if self.omit == "none":
                spec = _non_null(spec)  # omitted when None: never null in the document
            self._spec = spec
        return spec

    @property
    def factory(self) -> Any:
        return self.default_factory

    def when_missing(self) -> Optional[Callable[[], Any]]:
        """What a missing key reads as (``None``: the key is required)."""
        if self.omit is None and not self.missing:
            return None
        if self.omit == "absent":
            return lambda: ABSENT
        if self.missing and self.default_factory is not MISSING:
            return self.default_factory
        if self.missing:
            default = self.default
            return lambda: default
        return lambda: None


def fld(src: str = "", *, key: Optional[str] = None, omit: Any = None, missing: bool = False,
        size: Optional[int] = None, nest: Optional[str] = None,
        default: Any = MISSING, factory: Any = MISSING) -> Any:
    """A record field: ``src`` says which source states it (the nvidia-smi flag, the NVML
    call, the sysfs file); the other arguments are the JSON rules of the module docstring.
    Without ``default`` or ``factory`` the default is ``None`` (or :data:`ABSENT` for
    ``omit="absent"``)."""
    if default is MISSING and factory is MISSING:
        default = ABSENT if omit == "absent" else None
    meta = {"src": src, "key": key, "omit": omit, "missing": missing, "size": size,
            "nest": nest}
    return Spec(default, factory, meta)


R = TypeVar("R", bound="Record")


@dataclass_transform()
def record(cls: Any) -> Any:
    """Make ``cls`` (a :class:`Record` subclass) a record: its annotated attributes become
    fields, after those of its bases (a redefined field keeps its place); ``= fld(...)``
    gives a field's default and rules, ``= value`` its default."""
    found: Dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in base.__dict__.get("__record_fields__", ()):
            found[f.name] = f
    for name, tp in cls.__dict__.get("__annotations__", {}).items():
        value = cls.__dict__.get(name, MISSING)
        spec = value if isinstance(value, Spec) else Spec(default=value)
        found[name] = Field(name, tp, spec, cls.__module__)
        if isinstance(value, Spec):  # instances carry their own values
            delattr(cls, name)
    cls.__record_fields__ = tuple(found.values())
    return cls


def fields(cls: Any) -> Tuple[Field, ...]:
    """The fields of a record class (or of a record), in order."""
    c: Any = cls if isinstance(cls, type) else type(cls)
    return c.__record_fields__



_PLANS: Dict[type, Tuple[Tuple[str, Any, Any], ...]] = {}
_NO = MISSING


def _init_plan(cls: type) -> Tuple[Tuple[str, Any, Any], ...]:
    plan = tuple((f.name, f.default, f.default_factory) for f in fields(cls))
    _PLANS[cls] = plan
    return plan


class Record:
    """Base of the model's typed records: keyword (or positional, in field order)
    construction with the fields' defaults, equality field by field, :meth:`to_dict`,
    strict :meth:`from_dict`."""

    __slots__ = ()

    def __init__(self, *args: Any, **kw: Any) -> None:
        cls = type(self)
        plan = _PLANS.get(cls) or _init_plan(cls)
        if len(args) > len(plan):
            raise TypeError(f"{cls.__name__}() takes {len(plan)} arguments, "
                            f"{len(args)} given")
        d = self.__dict__
        for i, (name, default, factory) in enumerate(plan):
            if i < len(args):
                if name in kw:
                    raise TypeError(f"{cls.__name__}() got two values for {name!r}")
                d[name] = args[i]
            elif name in kw:
                d[name] = kw.pop(name)
            elif factory is not _NO:
                d[name] = factory()
            elif default is not _NO:
                d[name] = default
            else:
                raise TypeError(f"{cls.__name__}() needs {name!r}")
        if kw:
            raise TypeError(f"{cls.__name__}() has no field {next(iter(kw))!r}")
        post = getattr(cls, "__post_init__", None)
        if post is not None:
            post(self)

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        plan = _PLANS.get(type(self)) or _init_plan(type(self))
        a, b = self.__dict__, other.__dict__
        return all(a[name] == b[name] for name, _, _ in plan)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        plan = _PLANS.get(type(self)) or _init_plan(type(self))
        return f"{type(self).__name__}(" + ", ".join(
            f"{name}={self.__dict__[name]!r}" for name, _, _ in plan) + ")"

    def to_dict(self) -> Dict[str, Any]:
        """The record as JSON data (fresh containers), keys in the declared order."""
        return encoder(type(self))(self)

    @classmethod
    def from_dict(cls: Type[R], d: Any, root: str = "$") -> R:
        """The record from JSON data; ``ValueError`` naming the path on any mismatch.  Lists
        and objects of plain values are taken over, not copied (:func:`decode`)."""
        return decode(cls, d, root)


def decode(cls: Type[R], d: Any, root: str = "$") -> R:
    """The record of class ``cls`` that the JSON data ``d`` holds (see :meth:`Record.from_dict`).

    Lists and objects of plain values (counters, labels, matrix rows) are taken over by the
    record, not copied: pass data freshly decoded (``json.loads``), as every caller does, or
    a copy of data still in use."""
    try:
        return decoder(cls)(d)
    except _Bad as bad:
        if bad.what == _UNKNOWN:
            raise ValueError(f"{where(bad.path, root)}: no such key") from None
        raise ValueError(f"{where(bad.path, root)}: expected {bad.what}, got "
                         f"{_shown(bad.value)}") from None


# --- decoding --------------------------------------------------------------------------------

_DECODERS: Dict[Any, Callable[[Any], Any]] = {}
_ENCODERS: Dict[Any, Callable[[Any], Any]] = {}
def _spec_decoder(spec: Tuple[Any, ...]) -> Callable[[Any], Any]:
    """A function: JSON value -> Python value of this spec (raises ``_Bad``)."""
    hit = _DECODERS.get(spec)
    if hit is not None:
        return hit
    kind = spec[0]
    if kind == "rec":  # built on first use: a cache holds only some of the record kinds
        cls, nullable = spec[1], spec[2]
        box = [_DECODERS.get(cls)]

        def fn(v: Any) -> Any:
            if v is None and nullable:
                return None
            rec = box[0]
            if rec is None:
                rec = box[0] = decoder(cls)
            return rec(v)
    elif kind == "any":
        def fn(v: Any) -> Any:
            return v
    elif kind == "leaf":
        ok = _leaf_ok(spec[1])

        def fn(v: Any) -> Any:
            if ok(v):
                return v
            raise _Bad(_describe(spec), v)
    else:
        made = _container_decoder(spec)
        _DECODERS[spec] = made
        return made
    _DECODERS[spec] = fn
    return fn


def _container_decoder(spec: Tuple[Any, ...]) -> Callable[[Any], Any]:
    """Lists and objects keyed by text (a JSON object's keys always are)."""
    kind, item, nullable = spec[0], spec[1], spec[2]
    want: Any = list if kind == "list" else dict
    size = spec[3] if kind == "dict" else None
    leaf = item[0] == "leaf"
    every = _all_ok(item[1]) if leaf else None
    sub = None if leaf else _spec_decoder(item)

    def first_bad(pairs: Any) -> _Bad:
        """The mismatch of the first bad item (the slow path: errors only)."""
        ok = _leaf_ok(item[1]) if leaf else None
        for at, x in pairs:
            if ok is not None:
                if not ok(x):
                    return _Bad(_describe(item), x, at)
            else:
                try:
                    sub(x)  # type: ignore[misc]
                except _Bad as e:
                    e.path.append(at)
                    return e
        return _Bad(_describe(spec), None)

    if kind == "list":
        def fn(v: Any) -> Any:
            if type(v) is not want:
                if nullable and v is None:
                    return None
                raise _Bad(_describe(spec), v)
            if leaf:
                if every(v):  # type: ignore[misc]
                    return v  # (taken over, not copied: see decode)
                raise first_bad(enumerate(v))
            try:
                return [sub(x) for x in v]  # type: ignore[misc]
            except _Bad:
                raise first_bad(enumerate(v)) from None
    else:
        def fn(v: Any) -> Any:
            if type(v) is not want:
                if nullable and v is None:
                    return None
                raise _Bad(_describe(spec), v)
            if size is not None and len(v) != size:
                raise _Bad(f"an object of {size} keys", v)
            if leaf:
                if every(v.values()):  # type: ignore[misc]
                    return v  # (taken over, not copied: see decode)
                raise first_bad(v.items())
            try:
                return {k: sub(x) for k, x in v.items()}  # type: ignore[misc]
            except _Bad:
                raise first_bad(v.items()) from None
    return fn


_LAYOUTS: Dict[type, List[Field]] = {}


def fields_of(cls: type) -> List[Field]:
    """The JSON fields of a record class, in document order (``extra`` included)."""
    hit = _LAYOUTS.get(cls)
    if hit is not None:
        return hit
    flds = fields(cls)
    order = getattr(cls, "__json_order__", None)
    if order:
        by_name = {f.name: f for f in flds}
        flds = tuple(by_name[n] for n in order)
    out = list(flds)
    _LAYOUTS[cls] = out
    return out


def _plan(flds: List[Field]) -> List[Tuple[Any, ...]]:
    """(key, attribute, leaf test or None, decoder or None, missing, spec) per field."""
    out = []
    for f in flds:
        leaf = f.spec[0] == "leaf"
        out.append((f.key, f.name, _leaf_ok(f.spec[1]) if leaf else None,
                    None if leaf else _spec_decoder(f.spec), f.when_missing(), f.spec))
    return out


def decoder(cls: type) -> Callable[[Any], Any]:
    """The decoder of a record class (built once)."""
    hit = _DECODERS.get(cls)
    if hit is not None:
        return hit
    box: List[Callable[[Any], Any]] = []
    _DECODERS[cls] = lambda v: box[0](v)  # (a record that contains itself)
    fn = _record_decoder(cls)
    box.append(fn)
    _DECODERS[cls] = fn
    return fn


def _groups(plan: List[Tuple[Any, ...]]) -> Tuple[Any, ...]:
    """The plan split for speed: required text, text-or-null and int-or-null fields (most
    of the model: checked inline, no call per value), and the rest."""
    groups: Dict[Any, List[Tuple[str, str]]] = {_STR: [], _STR_N: [], _INT_N: []}
    rest = []
    for entry in plan:
        key, attr, ok, sub, miss, spec = entry
        if ok is not None and miss is None and spec[1] in groups:
            groups[spec[1]].append((key, attr))
        else:
            rest.append(entry)
    strs, strs_n, ints_n = (tuple(groups[k]) for k in (_STR, _STR_N, _INT_N))
    return strs, strs_n, ints_n, len(strs) + len(strs_n) + len(ints_n), tuple(rest)


def _fields_decoder(plan: List[Tuple[Any, ...]]) -> Callable[[Any, Dict[str, Any]], int]:
    """Decode the plan's keys of an object into ``out``; returns how many keys were there
    (a record's own keys, and those of its nested ``extra`` object)."""
    strs, strs_n, ints_n, inline, rest = _groups(plan)
    L = LIMIT

    def fn(d: Any, out: Dict[str, Any]) -> int:
        get = d.get
        key = None
        try:
            for key, attr in strs:
                v = get(key, _MISS)
                if type(v) is not str:
                    raise _Bad("text", v)
                out[attr] = v
            for key, attr in strs_n:
                v = get(key, _MISS)
                if v is not None and type(v) is not str:
                    raise _Bad("text or null", v)
                out[attr] = v
            for key, attr in ints_n:
                v = get(key, _MISS)
                if v is not None and (type(v) is not int or not -L <= v <= L):
                    raise _Bad("int or null", v)
                out[attr] = v
            n = inline
            for key, attr, ok, sub, miss, spec in rest:
                v = get(key, _MISS)
                if v is _MISS:
                    if miss is None:
                        raise _Bad("a value", _MISS)
                    out[attr] = miss()
                    continue
                n += 1
                if ok is not None:
                    if not ok(v):
                        raise _Bad(_describe(spec), v)
                    out[attr] = v
                else:
                    out[attr] = sub(v)
        except _Bad as e:
            if e.value is _MISS:
                e.what = "a value"
            e.path.append(key)
            raise
        return n
    return fn


def _unknown(d: Dict[str, Any], known: frozenset) -> _Bad:
    extra = [k for k in d if k not in known]
    return _Bad(_UNKNOWN, d[extra[0]] if extra else d, extra[0] if extra else None)


def _record_decoder(cls: type) -> Callable[[Any], Any]:
    read = getattr(cls, "__json_read__", None)
    if read is not None:  # an open map that reads its object itself (model/host.py Host)
        def own(d: Any) -> Any:
            if type(d) is not dict:
                raise _Bad(f"an object ({cls.__name__})", d)
            return read(d)
        return own
    flds = fields_of(cls)
    what = f"an object ({cls.__name__})"
    nested = [f for f in flds if f.nest == "extra"]
    top = [f for f in flds if f.nest is None]
    plan = _plan([f for f in top if not (nested and f.name == "extra")])
    extra: Optional[Callable[[Any, Dict[str, Any]], None]] = None
    if nested:  # the extra object: the nested fields, and the keys this nvtopo does not know
        inner = _fields_decoder(_plan(nested))
        names = frozenset(f.key for f in nested)

        def read_extra(x: Any, out: Dict[str, Any]) -> None:
            if type(x) is not dict:
                raise _Bad("an object", x)
            n = inner(x, out)
            out["extra"] = {k: v for k, v in x.items() if k not in names} \
                if n != len(x) else {}
        extra = read_extra
    body = _fields_decoder(plan)
    known = frozenset(f.key for f in top)
    post = getattr(cls, "__post_init__", None)
    new = object.__new__

    def fn(d: Any) -> Any:
        if type(d) is not dict:
            raise _Bad(what, d)
        o: Any = new(cls)
        out = o.__dict__
        n = body(d, out)
        if extra is not None:
            try:
                extra(d.get("extra", _MISS), out)
            except _Bad as e:
                if e.value is _MISS:
                    e.what = "a value"
                e.path.append("extra")
                raise
            n += 1
        if n != len(d):
            raise _unknown(d, known)
        if post is not None:
            try:
                post(o)
            except ValueError as exc:
                raise _Bad(f"{what} ({exc})", d) from None
        return o
    return fn


# --- encoding ------------------------------------------------------------------------------


def container_encoder(spec: Tuple[Any, ...], cache: Dict[Any, Callable[[Any], Any]],
                      rec: Callable[[type], Callable[[Any], Any]]
                      ) -> Optional[Callable[[Any], Any]]:
    """How a value of this spec is written: ``None`` for "as it is" (leaves and Any); a
    record by ``rec`` (its encoder: to a JSON object here, to a row in ``rows``), lists and
    maps item by item; built once per spec in ``cache``."""
    kind = spec[0]
    if kind in ("leaf", "any"):
        return None
    hit = cache.get(spec)
    if hit is not None:
        return hit
    if kind == "rec":
        fn: Callable[[Any], Any] = rec(spec[1])
    else:
        item = container_encoder(spec[1], cache, rec)
        if item is None:
            fn = list if kind == "list" else dict
        elif kind == "list":
            def fn(v: Any, _i: Any = item) -> Any:
                return [None if x is None else _i(x) for x in v]
        else:
            def fn(v: Any, _i: Any = item) -> Any:
                return {k: None if x is None else _i(x) for k, x in v.items()}
    cache[spec] = fn
    return fn


def _value_encoder(spec: Tuple[Any, ...]) -> Optional[Callable[[Any], Any]]:
    """How a value of this spec is written as JSON: ``None`` for "as it is"."""
    return container_encoder(spec, _ENCODERS, encoder)


def encoder(cls: type) -> Callable[[Any], Dict[str, Any]]:
    """The encoder of a record class (built once)."""
    hit = _ENCODERS.get(cls)
    if hit is not None:
        return hit
    box: List[Callable[[Any], Any]] = []
    _ENCODERS[cls] = lambda v: box[0](v)
    fn = _record_encoder(cls)
    box.append(fn)
    _ENCODERS[cls] = fn
    return fn


_NONE, _ABSENT_KEY = "none", "absent"


def _encode_plan(flds: List[Field]) -> List[Tuple[Any, ...]]:
    return [(f.name, f.key, _value_encoder(f.spec), f.omit) for f in flds]


def _write(plan: List[Tuple[Any, ...]], o: Any, d: Dict[str, Any]) -> None:
    od = o.__dict__
    for attr, key, enc, omit in plan:
        v = od[attr]
        if omit is not None:
            if omit == _NONE:
                if v is None:
                    continue
            elif omit == _ABSENT_KEY:
                if v is ABSENT:
                    continue
            elif omit(o):
                continue
        # (a producer's None where null is not expected is written as null)
        d[key] = v if enc is None or v is None else enc(v)


def _record_encoder(cls: type) -> Callable[[Any], Dict[str, Any]]:
    write = getattr(cls, "__json_write__", None)
    if write is not None:  # (with __json_read__)
        return write
    flds = fields_of(cls)
    nested = [f for f in flds if f.nest == "extra"]
    top = [f for f in flds if f.nest is None]
    if not nested:
        plan = _encode_plan(top)

        def fn(o: Any) -> Dict[str, Any]:
            d: Dict[str, Any] = {}
            _write(plan, o, d)
            return d
        return fn
    at = [f.name for f in top].index("extra")
    before = _encode_plan(top[:at])
    after = _encode_plan(top[at + 1:])
    inner = _encode_plan(nested)

    def with_extra(o: Any) -> Dict[str, Any]:
        d: Dict[str, Any] = {}
        _write(before, o, d)
        x: Dict[str, Any] = {}
        _write(inner, o, x)
        x.update(o.extra)
        d["extra"] = x
        _write(after, o, d)
        return d
    return with_extra


def field_sources(cls: type) -> Dict[str, str]:
    """Attribute -> the source that states it (the ``src`` of :func:`fld`), for docs/tests."""
    return {f.name: (f.metadata or {}).get("src", "") for f in fields(cls)}


__all__ = ["ABSENT", "LIMIT", "MISSING", "Record", "record", "fld", "fields", "is_record",
           "decode", "decoder", "encoder", "fields_of", "field_sources", "where"]
