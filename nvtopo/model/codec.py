"""A small record codec: dataclass fields <-> JSON objects, both ways, strictly.

Every typed record of the model is a dataclass deriving from :class:`Record`.  Its fields
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

Types come from the annotations: ``str``, ``int``, ``float``, ``bool``, ``None``,
``Optional[...]``, ``Union`` of leaf types, ``List[...]``, ``Dict[str, ...]``, ``Any`` and
nested records.  JSON types are exact: a bool is not an int, an int is not a float, and a
number must be finite and within :data:`LIMIT`.

:meth:`Record.from_dict` is strict: a missing key, a key it does not know, or a value of the
wrong type raises ``ValueError`` naming the path (``$.gpus[3].extra.nvml.pcie.max_gen:
expected int or null, got '5'``).  The encoder and the decoder of a class are generated once
(as Python source, compiled), so reading a sealed DGX H100 model takes a few milliseconds.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar

#: Largest magnitude of a number: 64-bit counters (times 4 for the InfiniBand data
#: counters, which count 4-byte words) fit, and every such number converts to a float.
LIMIT = 2 ** 72

_NoneType = type(None)


class _Absent:
    """The value of a field whose key was not in the document (``omit="absent"``)."""

    __slots__ = ()
    _it: Optional["_Absent"] = None

    def __new__(cls) -> "_Absent":
        if cls._it is None:
            cls._it = super().__new__(cls)
        return cls._it

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "ABSENT"


#: A key that is not there (as opposed to ``None``: a key whose value is ``null``).
ABSENT = _Absent()

_MISS = object()
_UNKNOWN = "no such key"


def fld(src: str = "", *, key: Optional[str] = None, omit: Any = None, missing: bool = False,
        size: Optional[int] = None, nest: Optional[str] = None,
        default: Any = dataclasses.MISSING, factory: Any = dataclasses.MISSING) -> Any:
    """A record field: ``src`` says which source states it (the nvidia-smi flag, the NVML
    call, the sysfs file); the other arguments are the JSON rules of the module docstring.
    Without ``default`` or ``factory`` the default is ``None`` (or :data:`ABSENT` for
    ``omit="absent"``)."""
    if default is dataclasses.MISSING and factory is dataclasses.MISSING:
        default = ABSENT if omit == "absent" else None
    meta = {"src": src, "key": key, "omit": omit, "missing": missing, "size": size,
            "nest": nest}
    if factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


class _Bad(Exception):
    """A mismatch, with its path gathered on the way out (innermost first)."""

    def __init__(self, what: str, value: Any, at: Any = None) -> None:
        super().__init__(what)
        self.what = what
        self.value = value
        self.path: List[Any] = [] if at is None else [at]


def _shown(v: Any) -> str:
    if v is _MISS:
        return "nothing (the key is missing)"
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def where(path: List[Any], root: str = "$") -> str:
    """``['pcie', 'nvml', 'extra', 3, 'gpus']`` (innermost first) -> ``$.gpus[3]...pcie``."""
    return root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in reversed(path))


R = TypeVar("R", bound="Record")


class Record:
    """Base of the model's typed records: :meth:`to_dict`, strict :meth:`from_dict`."""

    __slots__ = ()

    def to_dict(self) -> Dict[str, Any]:
        """The record as JSON data (fresh containers), keys in the declared order."""
        return encoder(type(self))(self)

    @classmethod
    def from_dict(cls: Type[R], d: Any, root: str = "$") -> R:
        """The record from JSON data; ``ValueError`` naming the path on any mismatch."""
        return decode(cls, d, root)


def decode(cls: Type[R], d: Any, root: str = "$") -> R:
    try:
        return decoder(cls)(d)
    except _Bad as bad:
        if bad.what == _UNKNOWN:
            raise ValueError(f"{where(bad.path, root)}: no such key") from None
        raise ValueError(f"{where(bad.path, root)}: expected {bad.what}, got "
                         f"{_shown(bad.value)}") from None


# --- type specs --------------------------------------------------------------------------
#
# ("leaf", frozenset of types) | ("any",) | ("list", item, nullable)
# | ("dict", value, nullable, size) | ("rec", cls, nullable)

_LEAVES = (str, int, float, bool, _NoneType)
_NAMES = {str: "text", int: "int", float: "float", bool: "bool", _NoneType: "null"}


def _spec(tp: Any) -> Tuple[Any, ...]:
    if tp is Any:
        return ("any",)
    if tp is None or tp is _NoneType:
        return ("leaf", frozenset({_NoneType}))
    if tp in _LEAVES:
        return ("leaf", frozenset({tp}))
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:
        rest = [a for a in args if a is not _NoneType]
        nullable = len(rest) < len(args)
        if all(a in _LEAVES for a in rest):
            return ("leaf", frozenset(rest) | ({_NoneType} if nullable else frozenset()))
        if len(rest) != 1:
            raise TypeError(f"unsupported union {tp!r}")
        inner = _spec(rest[0])
        if inner[0] == "leaf":
            return ("leaf", inner[1] | {_NoneType})
        return _nullable(inner) if nullable else inner
    if origin in (list, List):
        return ("list", _spec(args[0]), False)
    if origin in (dict, Dict):
        if args[0] is not str:
            raise TypeError(f"JSON object keys are text: {tp!r}")
        return ("dict", _spec(args[1]), False, None)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return ("rec", tp, False)
    raise TypeError(f"no JSON form for {tp!r}")


def _nullable(spec: Tuple[Any, ...]) -> Tuple[Any, ...]:
    if spec[0] == "leaf":
        return ("leaf", spec[1] | {_NoneType})
    if spec[0] == "any":
        return spec
    return (spec[0], spec[1], True) + spec[3:]


def _non_null(spec: Tuple[Any, ...]) -> Tuple[Any, ...]:
    if spec[0] == "leaf":
        return ("leaf", spec[1] - {_NoneType})
    if spec[0] == "any":
        return spec
    return (spec[0], spec[1], False) + spec[3:]


def _describe(spec: Tuple[Any, ...]) -> str:
    kind = spec[0]
    if kind == "leaf":
        names = [_NAMES[t] for t in _LEAVES if t in spec[1]]
        return " or ".join(names)
    if kind == "any":
        return "any value"
    what = f"an object ({spec[1].__name__})" if kind == "rec" else \
        "a list" if kind == "list" else "an object"
    return what + (" or null" if spec[2] else "")


def _leaf_test(types: frozenset, var: str) -> str:
    """A Python expression: ``var`` is of one of the leaf ``types`` (numbers bounded)."""
    parts = []
    nums = [t for t in (int, float) if t in types]
    if _NoneType in types:
        parts.append(f"{var} is None")
    if str in types:
        parts.append(f"type({var}) is str")
    if bool in types:
        parts.append(f"type({var}) is bool")
    if nums:
        kinds = " or ".join(f"type({var}) is {t.__name__}" for t in nums)
        parts.append(f"(({kinds}) and -_L <= {var} <= _L)")
    return "(" + " or ".join(parts) + ")" if parts else "False"


# --- generated code ------------------------------------------------------------------------

_ENV: Dict[str, Any] = {"_Bad": _Bad, "_MISS": _MISS, "ABSENT": ABSENT, "_L": LIMIT,
                        "_UNKNOWN": _UNKNOWN}
_DECODERS: Dict[Any, Callable[[Any], Any]] = {}
_ENCODERS: Dict[Any, Callable[[Any], Any]] = {}
_COUNT = [0]


def _compile(src: str, name: str, env: Dict[str, Any]) -> Callable[..., Any]:
    ns = dict(_ENV, **env)
    exec(compile(src, f"<nvtopo.model.codec {name}>", "exec"), ns)  # noqa: S102 - our own source
    return ns[name]


def _fresh(prefix: str) -> str:
    _COUNT[0] += 1
    return f"{prefix}{_COUNT[0]}"


def _spec_decoder(spec: Tuple[Any, ...]) -> Callable[[Any], Any]:
    """A function: JSON value -> Python value of this spec (raises ``_Bad``)."""
    hit = _DECODERS.get(spec)
    if hit is not None:
        return hit
    kind = spec[0]
    if kind == "rec":
        rec = decoder(spec[1])
        if not spec[2]:
            fn = rec
        else:
            def fn(v: Any, _rec: Any = rec) -> Any:
                return None if v is None else _rec(v)
    elif kind == "any":
        def fn(v: Any) -> Any:
            return v
    elif kind == "leaf":
        name = _fresh("_leaf")
        src = (f"def {name}(v):\n"
               f"    if {_leaf_test(spec[1], 'v')}:\n        return v\n"
               f"    raise _Bad(_WHAT, v)\n")
        fn = _compile(src, name, {"_WHAT": _describe(spec)})
    else:
        fn = _container_decoder(spec)
    _DECODERS[spec] = fn
    return fn


def _container_decoder(spec: Tuple[Any, ...]) -> Callable[[Any], Any]:
    kind, item, nullable = spec[0], spec[1], spec[2]
    name = _fresh("_dec")
    want = "list" if kind == "list" else "dict"
    lines = [f"def {name}(v):",
             f"    if type(v) is not {want}:"]
    if nullable:
        lines.append("        if v is None:\n            return None")
    lines.append("        raise _Bad(_WHAT, v)")
    env: Dict[str, Any] = {"_WHAT": _describe(spec)}
    if kind == "dict":
        size = spec[3]
        if size is not None:
            lines.append(f"    if len(v) != {size}:\n"
                         f"        raise _Bad('an object of {size} keys', v)")
    if item[0] == "leaf":
        test = _leaf_test(item[1], "x")
        env["_IWHAT"] = _describe(item)
        if kind == "list":
            lines += ["    i = 0",
                      "    for x in v:",
                      f"        if not {test}:",
                      "            raise _Bad(_IWHAT, x, i)",
                      "        i += 1",
                      "    return list(v)"]
        else:
            lines += ["    for k, x in v.items():",
                      f"        if type(k) is not str or not {test}:",
                      "            raise _Bad(_IWHAT, x, k)",
                      "    return dict(v)"]
    else:
        env["_item"] = _spec_decoder(item)
        if kind == "list":
            lines += ["    out = []",
                      "    i = 0",
                      "    try:",
                      "        for x in v:",
                      "            out.append(_item(x))",
                      "            i += 1",
                      "    except _Bad as e:",
                      "        e.path.append(i)",
                      "        raise",
                      "    return out"]
        else:
            lines += ["    out = {}",
                      "    k = None",
                      "    try:",
                      "        for k, x in v.items():",
                      "            if type(k) is not str:",
                      "                raise _Bad('text keys', k)",
                      "            out[k] = _item(x)",
                      "    except _Bad as e:",
                      "        e.path.append(k)",
                      "        raise",
                      "    return out"]
    return _compile("\n".join(lines) + "\n", name, env)


class _Field:
    __slots__ = ("name", "key", "spec", "omit", "missing", "nest", "default", "factory")

    def __init__(self, f: dataclasses.Field, tp: Any) -> None:
        meta = f.metadata or {}
        self.name = f.name
        self.key = meta.get("key") or f.name
        self.omit = meta.get("omit")
        self.missing = bool(meta.get("missing"))
        self.nest = meta.get("nest")
        self.default = f.default
        self.factory = f.default_factory
        spec = _spec(tp)
        if spec[0] == "dict" and meta.get("size") is not None:
            spec = ("dict", spec[1], spec[2], meta.get("size"))
        if self.omit == "none":
            spec = _non_null(spec)  # omitted when None: never null in the document
        self.spec = spec


_LAYOUTS: Dict[type, List[_Field]] = {}


def fields_of(cls: type) -> List[_Field]:
    """The JSON fields of a record class, in document order (``extra`` included)."""
    hit = _LAYOUTS.get(cls)
    if hit is not None:
        return hit
    module = sys.modules.get(cls.__module__)
    hints = typing.get_type_hints(cls, vars(module) if module else None)
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    order = getattr(cls, "__json_order__", None) or tuple(by_name)
    out = [_Field(by_name[n], hints[n]) for n in order]
    _LAYOUTS[cls] = out
    return out


def decoder(cls: type) -> Callable[[Any], Any]:
    """The decoder of a record class (generated once)."""
    hit = _DECODERS.get(cls)
    if hit is not None:
        return hit
    # a placeholder first: a record may contain itself (not today, but cheap to allow)
    box: List[Callable[[Any], Any]] = []
    _DECODERS[cls] = lambda v: box[0](v)
    fn = _record_decoder(cls)
    box.append(fn)
    _DECODERS[cls] = fn
    return fn


def _record_decoder(cls: type) -> Callable[[Any], Any]:
    flds = fields_of(cls)
    name = _fresh("_rec")
    env: Dict[str, Any] = {"_cls": cls, "_new": object.__new__,
                           "_post": getattr(cls, "__post_init__", None),
                           "_WHAT": f"an object ({cls.__name__})"}
    top = [f for f in flds if f.nest is None]
    nested: Dict[str, List[_Field]] = {}
    for f in flds:
        if f.nest is not None:
            nested.setdefault(f.nest, []).append(f)
    body = [f"def {name}(d):",
            "    if type(d) is not dict:",
            "        raise _Bad(_WHAT, d)",
            "    get = d.get",
            "    k = None",
            "    try:"]
    required = 0
    attrs: List[str] = []

    def one(f: _Field, src: str, counter: str, ind: str, label: str) -> List[str]:
        var = f"a_{f.name}"
        attrs.append(f.name)
        out = [f"{ind}k = {label!r}",
               f"{ind}v = {src}.get({f.key!r}, _MISS)",
               f"{ind}if v is _MISS:"]
        if f.omit is None and not f.missing:
            out.append(f"{ind}    raise _Bad('a value', _MISS)")
        elif f.omit == "absent":
            out.append(f"{ind}    {var} = ABSENT")
        elif f.missing and f.factory is not dataclasses.MISSING:
            env[f"_fac_{f.name}"] = f.factory
            out.append(f"{ind}    {var} = _fac_{f.name}()")
        elif f.missing:
            env[f"_def_{f.name}"] = f.default
            out.append(f"{ind}    {var} = _def_{f.name}")
        else:
            out.append(f"{ind}    {var} = None")
        out.append(f"{ind}else:")
        if counter:
            out.append(f"{ind}    {counter} += 1")
        if f.spec[0] == "leaf":
            env[f"_W_{f.name}"] = _describe(f.spec)
            out += [f"{ind}    if not {_leaf_test(f.spec[1], 'v')}:",
                    f"{ind}        raise _Bad(_W_{f.name}, v)",
                    f"{ind}    {var} = v"]
        elif f.spec[0] == "any":
            out.append(f"{ind}    {var} = v")
        else:
            env[f"_d_{f.name}"] = _spec_decoder(f.spec)
            out.append(f"{ind}    {var} = _d_{f.name}(v)")
        return out

    for f in top:
        if f.nest is None and f.name == "extra" and "extra" in nested:
            keys = tuple(x.key for x in nested["extra"])
            env["_NESTED"] = frozenset(keys)
            body += ["        k = 'extra'",
                     "        x = get('extra', _MISS)",
                     "        if x is _MISS:",
                     "            raise _Bad('a value', _MISS)",
                     "        if type(x) is not dict:",
                     "            raise _Bad('an object', x)"]
            required += 1
            for nf in nested["extra"]:
                body += one(nf, "x", "", "        ", f"extra.{nf.key}")
            attrs.append("extra")
            body.append("        a_extra = {kk: vv for kk, vv in x.items() if kk not in _NESTED}"
                        " if len(x) > sum(1 for kk in _NESTED if kk in x) else {}")
            continue
        if f.omit is None and not f.missing:
            required += 1
            body += one(f, "d", "", "        ", f.key)
        else:
            body += one(f, "d", "n", "        ", f.key)
    body.insert(5, f"    n = {required}")
    body += ["    except _Bad as e:",
             "        e.path.append(k)",
             "        raise",
             "    if n != len(d):",
             f"        extra = [kk for kk in d if kk not in {tuple(f.key for f in top)!r}]",
             "        raise _Bad(_UNKNOWN, d[extra[0]] if extra else d, "
             "extra[0] if extra else None)",
             "    o = _new(_cls)",
             "    o.__dict__.update(" + ", ".join(f"{a}=a_{a}" for a in attrs) + ")"]
    if env["_post"] is not None:
        body += ["    try:",
                 "        _post(o)",
                 "    except ValueError as exc:",
                 "        raise _Bad(f'{_WHAT} ({exc})', d)"]
    body.append("    return o")
    return _compile("\n".join(body) + "\n", name, env)


# --- encoding ------------------------------------------------------------------------------


def _value_encoder(spec: Tuple[Any, ...]) -> Optional[Callable[[Any], Any]]:
    """How a value of this spec is written: ``None`` for "as it is" (leaves and Any)."""
    kind = spec[0]
    if kind in ("leaf", "any"):
        return None
    hit = _ENCODERS.get(spec)
    if hit is not None:
        return hit
    if kind == "rec":
        rec = encoder(spec[1])
        fn: Callable[[Any], Any] = rec if not spec[2] else (
            lambda v, _r=rec: None if v is None else _r(v))
    else:
        item = _value_encoder(spec[1])
        if kind == "list":
            if item is None:
                def fn(v: Any) -> Any:
                    return list(v)
            else:
                def fn(v: Any, _i: Any = item) -> Any:
                    return [_i(x) for x in v]
        else:
            if item is None:
                def fn(v: Any) -> Any:
                    return dict(v)
            else:
                def fn(v: Any, _i: Any = item) -> Any:
                    return {k: _i(x) for k, x in v.items()}
        if spec[2]:
            inner = fn
            fn = lambda v, _f=inner: None if v is None else _f(v)  # noqa: E731
    _ENCODERS[spec] = fn
    return fn


def encoder(cls: type) -> Callable[[Any], Dict[str, Any]]:
    """The encoder of a record class (generated once)."""
    hit = _ENCODERS.get(cls)
    if hit is not None:
        return hit
    box: List[Callable[[Any], Any]] = []
    _ENCODERS[cls] = lambda v: box[0](v)
    fn = _record_encoder(cls)
    box.append(fn)
    _ENCODERS[cls] = fn
    return fn


def _record_encoder(cls: type) -> Callable[[Any], Dict[str, Any]]:
    flds = fields_of(cls)
    name = _fresh("_enc")
    env: Dict[str, Any] = {}
    nested: Dict[str, List[_Field]] = {}
    for f in flds:
        if f.nest is not None:
            nested.setdefault(f.nest, []).append(f)
    body = [f"def {name}(o):", "    d = {}"]

    def one(f: _Field, target: str) -> List[str]:
        enc = _value_encoder(f.spec)
        if enc is not None:  # (a producer's None where null is not expected is written as null)
            env[f"_e_{f.name}"] = enc
            val = f"None if v is None else _e_{f.name}(v)"
        else:
            val = "v"
        out = [f"    v = o.{f.name}"]
        if f.omit is None:
            out.append(f"    {target}[{f.key!r}] = {val}")
        elif f.omit == "none":
            out.append(f"    if v is not None:\n        {target}[{f.key!r}] = {val}")
        elif f.omit == "absent":
            out.append(f"    if v is not ABSENT:\n        {target}[{f.key!r}] = {val}")
        else:
            env[f"_omit_{f.name}"] = f.omit
            out.append(f"    if not _omit_{f.name}(o):\n        {target}[{f.key!r}] = {val}")
        return out

    for f in flds:
        if f.nest is not None:
            continue
        if f.name == "extra" and "extra" in nested:
            body.append("    x = {}")
            for nf in nested["extra"]:
                body += one(nf, "x")
            body += ["    x.update(o.extra)", "    d['extra'] = x"]
            continue
        body += one(f, "d")
    body.append("    return d")
    return _compile("\n".join(body) + "\n", name, env)


def field_sources(cls: type) -> Dict[str, str]:
    """Attribute -> the source that states it (the ``src`` of :func:`fld`), for docs/tests."""
    return {f.name: (f.metadata or {}).get("src", "") for f in dataclasses.fields(cls)}


__all__ = ["ABSENT", "LIMIT", "Record", "fld", "decode", "decoder", "encoder", "fields_of",
           "field_sources", "where"]
