"""Plain record classes for the start-up path: what ``@dataclass`` gives the check path's
small classes (an ``__init__`` with defaults and factories, ``__post_init__``, field-wise
``==``, a ``repr``, frozen instances with a hash), without generating and compiling code
for every class at import.  ``check --from`` imports about ten such classes on every run;
made by :mod:`dataclasses` they cost a few milliseconds of a start-up whose target is a
few milliseconds over importing typer and Rich (``benchmarks/bench_check_startup.py``).

Only what these classes use is supported: ``field(default=, default_factory=, init=,
compare=)``, ``plain(frozen=, eq=)``, single inheritance of fields.  Class variables are
not annotated in these classes (an annotation is a field).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple

if TYPE_CHECKING:
    # tells type checkers (PEP 681) what ``@plain`` generates: an ``__init__`` over the
    # annotated fields (positional or keyword), ``field(...)`` declaring a field
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_kw: Any) -> Callable[[Any], Any]:
        """No-op at run time: nothing is imported for it on the start-up path."""
        return lambda f: f

_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen instance."""


class Field:
    __slots__ = ("name", "default", "default_factory", "init", "compare")

    def __init__(self, default: Any = _MISSING, default_factory: Any = _MISSING,
                 init: bool = True, compare: bool = True) -> None:
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.compare = compare


def field(*, default: Any = _MISSING, default_factory: Any = _MISSING, init: bool = True,
          compare: bool = True) -> Any:
    """A field's default, factory, and whether ``__init__`` takes it and ``==`` compares it
    (as :func:`dataclasses.field`)."""
    return Field(default, default_factory, init, compare)


def fields(obj: Any) -> Tuple[Field, ...]:
    """The fields of a plain class (or instance), in order."""
    c: Any = obj if isinstance(obj, type) else type(obj)
    return c.__plain_fields__


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _gather_fields(cls: type) -> Tuple[Field, ...]:
    """The fields of ``cls``, its bases' first, each named; a ``field(...)`` without a default
    leaves no class attribute behind, one with a default leaves the default."""
    found: Dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in base.__dict__.get("__plain_fields__", ()):
            found[f.name] = f
    for name in cls.__dict__.get("__annotations__", {}):
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, Field):
            f = value
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        else:
            f = Field(default=value)
        f.name = name
        found[name] = f
    return tuple(found.values())


def _make_init(qual: str, flds: Tuple[Field, ...],
               post: Optional[Callable[[Any], None]]) -> Callable[..., None]:
    """The ``__init__`` of a plain class named ``qual`` with fields ``flds``."""
    takes = tuple(f for f in flds if f.init)
    later = tuple(f for f in flds if not f.init and (f.default is not _MISSING
                                                       or f.default_factory is not _MISSING))
    setter = object.__setattr__
    # the common call (keywords only, every field without a default given): the instance
    # dict filled in field order from a template, no call per field
    names = frozenset(f.name for f in takes)
    required = frozenset(f.name for f in takes
                         if f.default is _MISSING and f.default_factory is _MISSING)
    template = {f.name: (f.default if f.default is not _MISSING else None)
                for f in flds if f.init or f in later}
    made = tuple((f.name, f.default_factory) for f in flds
                 if (f.init or f in later) and f.default_factory is not _MISSING)
    # positional too: the fields the first n arguments give, and those still required
    order = tuple(f.name for f in takes)
    given = tuple(frozenset(order[:n]) for n in range(len(order) + 1))
    still = tuple(required - given[n] for n in range(len(order) + 1))

    def __init__(self: Any, *args: Any, **kw: Any) -> None:
        n = len(args)
        if n < len(given) and names.issuperset(kw) and still[n].issubset(kw) \
                and given[n].isdisjoint(kw):
            d = getattr(self, "__dict__", None)
            if d is not None:
                d.update(template)
                if n:
                    d.update(zip(order, args))
                for name, factory in made:
                    if name not in kw and name not in given[n]:
                        d[name] = factory()
                d.update(kw)
                if post is not None:
                    post(self)
                return
        if len(args) > len(takes):
            raise TypeError(f"{qual}() takes {len(takes)} positional arguments, "
                            f"{len(args)} given")
        for i, f in enumerate(takes):
            if i < len(args):
                if f.name in kw:
                    raise TypeError(f"{qual}() got multiple values for {f.name!r}")
                v = args[i]
            elif f.name in kw:
                v = kw.pop(f.name)
            elif f.default_factory is not _MISSING:
                v = f.default_factory()
            elif f.default is not _MISSING:
                v = f.default
            else:
                raise TypeError(f"{qual}() missing argument {f.name!r}")
            setter(self, f.name, v)
        if kw:
            raise TypeError(f"{qual}() got an unexpected keyword argument "
                            f"{next(iter(kw))!r}")
        for f in later:
            setter(self, f.name, f.default_factory() if f.default_factory is not _MISSING
                   else f.default)
        if post is not None:
            post(self)

    return __init__


def _add_eq(cls: type, compared: Tuple[str, ...], frozen: bool) -> None:
    """Field-wise ``==`` over ``compared``; a hash over them when ``frozen``, none otherwise."""
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in compared)

    cls.__eq__ = __eq__  # type: ignore[assignment]
    if frozen:
        def __hash__(self: Any) -> int:
            return hash(tuple(getattr(self, n) for n in compared))

        cls.__hash__ = __hash__  # type: ignore[assignment]
    else:
        cls.__hash__ = None  # type: ignore[assignment]


@dataclass_transform(field_specifiers=(field,))
def plain(cls: Optional[type] = None, *, frozen: bool = False, eq: bool = True) -> Any:
    """Make ``cls`` a plain record class (see the module docstring); used as ``@plain`` or
    ``@plain(frozen=True)``."""

    def wrap(cls: type) -> type:
        flds = _gather_fields(cls)
        cls.__plain_fields__ = flds  # type: ignore[attr-defined]
        compared = tuple(f.name for f in flds if f.compare)
        post: Optional[Callable[[Any], None]] = getattr(cls, "__post_init__", None)
        qual = cls.__name__

        def __repr__(self: Any) -> str:
            return f"{qual}(" + ", ".join(
                f"{f.name}={getattr(self, f.name, '?')!r}" for f in flds) + ")"

        cls.__init__ = _make_init(qual, flds, post)  # type: ignore[misc]
        if "__repr__" not in cls.__dict__:
            cls.__repr__ = __repr__  # type: ignore[assignment]
        if eq and "__eq__" not in cls.__dict__:
            _add_eq(cls, compared, frozen)
        if frozen:
            cls.__setattr__ = _frozen_setattr  # type: ignore[assignment]
            cls.__delattr__ = _frozen_delattr  # type: ignore[assignment]
        return cls

    return wrap if cls is None else wrap(cls)


__all__ = ["FrozenInstanceError", "field", "fields", "plain"]
