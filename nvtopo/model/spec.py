"""The type specs of the record codec (:mod:`nvtopo.model.codec`): what JSON form each
annotation allows, read from typing objects or from annotations written as text, and the
checks of leaf values.  Also the codec's shared pieces: :data:`ABSENT`, :data:`MISSING`,
:data:`LIMIT` and the mismatch error that gathers its path."""

from __future__ import annotations

import sys
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple

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

class AbsentAsNone:
    """A record field, read as ``None`` where its key was not in the document (the record
    holds :data:`ABSENT` there, which the codec writes as no key).  The codec reads and
    writes the record's ``__dict__`` directly, past this; readers see ``None``.  With
    ``order``, setting the field notes the key in the record's ``__dict__["_keys"]`` (the
    order keys were set in: see :class:`nvtopo.model.host.Host`)."""

    __slots__ = ("name", "order")

    def __init__(self, name: str, order: bool = False) -> None:
        self.name = name
        self.order = order

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__[self.name]
        return None if value is ABSENT else value

    def __set__(self, obj: Any, value: Any) -> None:
        d = obj.__dict__
        d[self.name] = value
        if self.order and value is not ABSENT:
            keys = d.setdefault("_keys", [])
            if self.name not in keys:
                keys.append(self.name)


def absent_as_none(cls: Any, order: bool = False) -> Any:
    """Make every ``omit="absent"`` field of the record class ``cls`` read as ``None`` where
    it is absent (:class:`AbsentAsNone`); the one that is set is :data:`ABSENT`."""
    for f in cls.__record_fields__:
        if f.omit == "absent":
            setattr(cls, f.name, AbsentAsNone(f.name, order))
    return cls


_MISS = object()
#: "No default": the field must be given.
MISSING = object()
_UNKNOWN = "no such key"


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


def is_record(tp: Any) -> bool:
    return isinstance(tp, type) and "__record_fields__" in tp.__dict__



# --- type specs --------------------------------------------------------------------------
#
# ("leaf", frozenset of types) | ("any",) | ("list", item, nullable)
# | ("dict", value, nullable, size) | ("rec", cls, nullable)

_LEAVES = (str, int, float, bool, _NoneType)
_NAMES = {str: "text", int: "int", float: "float", bool: "bool", _NoneType: "null"}


_SPECS: Dict[int, Tuple[Any, Tuple[Any, ...]]] = {}


def _spec(tp: Any) -> Tuple[Any, ...]:
    # by identity: typing caches its aliases (Optional[str] is one object), and hashing them
    # walks them in Python
    hit = _SPECS.get(id(tp))
    if hit is None or hit[0] is not tp:
        hit = _SPECS[id(tp)] = (tp, _make_spec(tp))
    return hit[1]


_TEXT_SPECS: Dict[Any, Tuple[Any, ...]] = {}
_TEXT_LEAVES = {"str": str, "int": int, "float": float, "bool": bool, "None": _NoneType,
                "NoneType": _NoneType}


def _tokens(text: str) -> List[str]:
    """The tokens of an annotation: names (dotted), ``[``, ``]`` and ``,``; whitespace
    skipped; anything else ends the list (the caller then refuses the annotation).  A
    scanner, not a regular expression: linear in the text."""
    out: List[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "[],":
            out.append(c)
            i += 1
        elif c == "_" or ("A" <= c <= "Z") or ("a" <= c <= "z"):
            j = i + 1
            while j < n and (text[j] in "_." or "A" <= text[j] <= "Z" or "a" <= text[j] <= "z"
                             or "0" <= text[j] <= "9"):
                j += 1
            out.append(text[i:j])
            i = j
        else:
            break
    return out


def _text_spec(text: str, module: str) -> Tuple[Any, ...]:
    """The spec of an annotation written as text (``from __future__ import annotations``),
    read by a small parser of the forms the model uses (``Optional[Dict[str, int]]``, a
    record's name ...): no ``eval``, no typing objects, so importing the model and building
    its decoders stay cheap.  A form it does not know raises ``TypeError``."""
    hit = _TEXT_SPECS.get(text)  # a form naming no record: the same in every module
    if hit is not None:
        return hit
    key = (module, text)
    hit = _TEXT_SPECS.get(key)
    if hit is not None:
        return hit
    local = []
    toks = _tokens(text)
    if "".join(toks) != "".join(text.split()):
        raise TypeError(f"annotation {text!r} is not a form the codec reads")
    pos = 0

    def tree() -> Tuple[str, List[Any]]:
        nonlocal pos
        name = toks[pos].rpartition(".")[2]
        pos += 1
        args: List[Any] = []
        if pos < len(toks) and toks[pos] == "[":
            pos += 1
            args.append(tree())
            while toks[pos] == ",":
                pos += 1
                args.append(tree())
            if toks[pos] != "]":
                raise TypeError(f"annotation {text!r}: expected ]")
            pos += 1
        return name, args

    def convert(node: Tuple[str, List[Any]]) -> Tuple[Any, ...]:
        name, args = node
        if name in _TEXT_LEAVES and not args:
            return ("leaf", frozenset({_TEXT_LEAVES[name]}))
        if name == "Any":
            return ("any",)
        if name in ("Optional", "Union"):
            specs = [convert(a) for a in args] + ([("leaf", frozenset({_NoneType}))]
                                                  if name == "Optional" else [])
            return _union(specs, text)
        if name in ("List", "list") and len(args) == 1:
            return ("list", convert(args[0]), False)
        if name in ("Dict", "dict") and len(args) == 2:
            if args[0] != ("str", []):
                raise TypeError(f"JSON object keys are text: {text!r}")
            return ("dict", convert(args[1]), False, None)
        obj = vars(sys.modules[module]).get(name)
        if is_record(obj) and not args:
            local.append(name)
            return ("rec", obj, False)
        raise TypeError(f"no JSON form for {text!r}")

    hit = convert(tree())
    if pos != len(toks):
        raise TypeError(f"annotation {text!r} is not a form the codec reads")
    _TEXT_SPECS[key if local else text] = hit
    return hit


def _union(specs: List[Tuple[Any, ...]], what: Any) -> Tuple[Any, ...]:
    """A union of specs: of leaves (``Union[int, float]``, ``Optional[str]``), or one other
    spec, maybe null."""
    nullable = any(x == ("leaf", frozenset({_NoneType})) for x in specs)
    rest = [x for x in specs if x != ("leaf", frozenset({_NoneType}))]
    if all(x[0] == "leaf" for x in rest):
        types: frozenset = frozenset()
        for x in rest:
            types |= x[1]
        return ("leaf", types | ({_NoneType} if nullable else frozenset()))
    if len(rest) != 1:
        raise TypeError(f"unsupported union {what!r}")
    return _nullable(rest[0]) if nullable else rest[0]


def _make_spec(tp: Any) -> Tuple[Any, ...]:
    if tp is Any:
        return ("any",)
    if tp is None or tp is _NoneType:
        return ("leaf", frozenset({_NoneType}))
    if tp in _LEAVES:
        return ("leaf", frozenset({tp}))
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:
        return _union([_spec(a) for a in args], tp)
    if origin in (list, List):
        return ("list", _spec(args[0]), False)
    if origin in (dict, Dict):
        if args[0] is not str:
            raise TypeError(f"JSON object keys are text: {tp!r}")
        return ("dict", _spec(args[1]), False, None)
    if is_record(tp):
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


#: Leaf types read inline (no call per value): text, text or null, int, int or null.
_STR, _STR_N, _INT, _INT_N = (frozenset({str}), frozenset({str, _NoneType}), frozenset({int}),


                              frozenset({int, _NoneType}))


_LEAF_OK: Dict[frozenset, Callable[[Any], bool]] = {}


def _leaf_ok(types: frozenset) -> Callable[[Any], bool]:
    """A test: the value is of one of the leaf ``types`` (exact types; numbers bounded)."""
    hit = _LEAF_OK.get(types)
    if hit is not None:
        return hit
    ts = frozenset(t for t in types if t is not _NoneType)
    nullable = _NoneType in types
    num = int in ts or float in ts
    L = LIMIT
    if len(ts) == 1 and not num:
        (t,) = tuple(ts)
        if nullable:
            def ok(v: Any) -> bool:
                return v is None or type(v) is t
        else:
            def ok(v: Any) -> bool:
                return type(v) is t
    elif not ts:
        def ok(v: Any) -> bool:
            return v is None
    else:
        def ok(v: Any) -> bool:
            t = type(v)
            if t in ts:
                return (t is not int and t is not float) or -L <= v <= L
            return nullable and v is None
    _LEAF_OK[types] = ok
    return ok


def _all_ok(types: frozenset) -> Callable[[Any], bool]:
    """A test: every value of an iterable is of the leaf ``types`` (one loop, no call per
    value for the common sets)."""
    L = LIMIT
    if types == _INT_N:
        def every(xs: Any) -> bool:
            for x in xs:
                if x is not None and (type(x) is not int or not -L <= x <= L):
                    return False
            return True
    elif types == _INT:
        def every(xs: Any) -> bool:
            for x in xs:
                if type(x) is not int or not -L <= x <= L:
                    return False
            return True
    elif types == _STR or types == _STR_N:
        def every(xs: Any) -> bool:  # (no Python call per value: a matrix's cells)
            return types.issuperset(map(type, xs))
    else:
        ok = _leaf_ok(types)

        def every(xs: Any) -> bool:
            return all(map(ok, xs))
    return every
