"""nvtopo.plain behaves as @dataclass does for what the check path's classes use: defaults
and factories, positional and keyword construction, __post_init__, fields not taken by
__init__, equality over compared fields, frozen instances and their hash, repr."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

import pytest

from nvtopo.plain import FrozenInstanceError, field, fields, plain


def _pair(frozen: bool):
    """The same class made by dataclasses and by plain."""
    made = []
    for deco, fld in ((dataclasses.dataclass(frozen=frozen), dataclasses.field),
                      (plain(frozen=frozen), field)):
        class C:
            kind: str
            n: int = 0
            tags: List[str] = fld(default_factory=list)
            label: Optional[str] = fld(default=None, compare=False)

            def size(self) -> int:
                return len(self.tags)
        made.append(deco(C))
    return made


@pytest.mark.parametrize("frozen", [False, True])
def test_construction_equality_and_hash_match_dataclasses(frozen):
    D, P = _pair(frozen)
    for args, kw in ((("a",), {}), (("a", 3), {}), (("a",), {"n": 2, "tags": ["x"]}),
                     ((), {"kind": "b", "label": "L"})):
        d, p = D(*args, **kw), P(*args, **kw)
        assert [getattr(p, f.name) for f in fields(P)] == \
            [getattr(d, f.name) for f in dataclasses.fields(D)]
        assert p.size() == d.size()
    assert P("a", label="x") == P("a", label="y")  # label is not compared
    assert P("a", 1) != P("a", 2) and P("a") != "a"
    assert P("a").tags is not P("a").tags  # a fresh list each time
    if frozen:
        assert hash(P("a", tags=(), label="x")) == hash(P("a", tags=(), label="y"))
        assert hash(P("a", tags=())) == hash(D("a", tags=()))  # the same fields hashed
        with pytest.raises(FrozenInstanceError):
            P("a").n = 3
        with pytest.raises(AttributeError):
            del P("a").kind
    else:
        assert P.__hash__ is None
        p = P("a")
        p.n = 5
        assert p.n == 5
    assert repr(P("a", 1)) == "C(kind='a', n=1, tags=[], label=None)"


def test_arguments_are_checked():
    _, P = _pair(False)
    with pytest.raises(TypeError):
        P()
    with pytest.raises(TypeError):
        P("a", 1, [], None, "extra")
    with pytest.raises(TypeError):
        P("a", kind="b")
    with pytest.raises(TypeError):
        P("a", nope=1)


def test_post_init_and_fields_not_in_init():
    @plain(frozen=True, eq=False)
    class R:
        items: tuple
        count: int = field(init=False)
        seen: Dict[str, int] = field(init=False, default_factory=dict)

        def __post_init__(self) -> None:
            object.__setattr__(self, "count", len(self.items))

    r = R((1, 2, 3))
    assert r.count == 3 and r.seen == {}
    assert r != R((1, 2, 3)) and r == r  # eq=False: identity, as dataclasses does
    assert hash(r) == object.__hash__(r)
    with pytest.raises(TypeError):
        R((1,), count=2)


def test_subclass_fields_follow_the_base():
    @plain
    class Base:
        a: int
        b: int = 2

    @plain
    class Sub(Base):
        c: int = 3

    assert [f.name for f in fields(Sub)] == ["a", "b", "c"]
    s = Sub(1, c=4)
    assert (s.a, s.b, s.c) == (1, 2, 4)


@pytest.mark.parametrize("frozen", [False, True])
def test_keyword_construction_fills_the_instance_as_the_field_by_field_path(frozen):
    """Keywords only (the fast path: the instance dict from a template) and positional
    arguments (field by field) give the same instance, its dict in field order, fresh
    factory values, __post_init__ run; a missing or unknown keyword still raises."""
    seen = []

    @plain(frozen=frozen)
    class C:
        kind: str
        n: int = 0
        tags: List[str] = field(default_factory=list)
        label: Optional[str] = field(default=None, compare=False)
        later: Dict[str, int] = field(default_factory=dict, init=False)

        def __post_init__(self) -> None:
            seen.append(self.kind)

    a, b = C(kind="a", label="L"), C("a", 0, [], "L")
    assert vars(a) == vars(b) and list(vars(a)) == ["kind", "n", "tags", "label", "later"]
    assert a.tags is not C(kind="a").tags and a.later == {} and a.label == "L"
    assert C(kind="x", tags=["t"]).tags == ["t"] and seen[-1] == "x"
    with pytest.raises(TypeError, match="missing argument 'kind'"):
        C(n=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'later'"):
        C(kind="a", later={})


def test_positional_construction_takes_the_template_path_alike():
    """Positional arguments, alone or with keywords, fill the instance as keywords do: the
    fields in order, a factory called only for a field no argument gives, __post_init__
    run; a field given twice, too many arguments or a missing one still raise."""
    made = []

    def factory() -> List[str]:
        made.append(1)
        return []

    @plain
    class C:
        kind: str
        n: int = 0
        tags: List[str] = field(default_factory=factory)
        label: Optional[str] = None

    assert vars(C("a", 2, ["t"])) == {"kind": "a", "n": 2, "tags": ["t"], "label": None}
    assert made == []  # (given: no factory call)
    c = C("a", label="L")
    assert list(vars(c)) == ["kind", "n", "tags", "label"] and c.label == "L" and made == [1]
    assert vars(C("a", 1, tags=["x"])) == vars(C(kind="a", n=1, tags=["x"])) and made == [1]
    with pytest.raises(TypeError, match="multiple values for 'n'"):
        C("a", 1, n=2)
    with pytest.raises(TypeError, match="takes 4 positional arguments"):
        C("a", 1, [], None, 5)
    with pytest.raises(TypeError, match="missing argument 'kind'"):
        C(n=1)
