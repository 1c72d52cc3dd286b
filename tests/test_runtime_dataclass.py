"""arthron.runtime.dataclass makes the same classes as dataclasses.dataclass (shared
__repr__/__eq__ instead of compiled per class): checked against the standard decorator on the
same class bodies, and on the component classes that use it."""
from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import ClassVar

import numpy as np
import pytest

from arthron import runtime
from arthron.runtime import dataclass as arthron_dataclass


def _pair(**kw):
    def body():
        class Node:
            name: str
            mass: float = 1.0
            children: list = dataclasses.field(default_factory=list)
            hidden: int = dataclasses.field(default=0, repr=False, compare=False)

            def __post_init__(self):
                self.mass = float(self.mass)
        return Node
    return dataclasses.dataclass(body(), **kw), arthron_dataclass(body(), **kw)


@pytest.mark.parametrize("kw", [{}, {"eq": False}, {"repr": False}])
def test_same_behaviour_as_the_standard_decorator(kw):
    std, ours = _pair(**kw)
    assert str(inspect.signature(std)) == str(inspect.signature(ours))
    assert [f.name for f in dataclasses.fields(std)] == [f.name for f in dataclasses.fields(ours)]
    a_std, b_std = std("a", 2, [1], hidden=5), std("a", 2, [1], hidden=6)
    a, b = ours("a", 2, [1], hidden=5), ours("a", 2, [1], hidden=6)
    assert a.mass == 2.0 and isinstance(a.mass, float)              # __post_init__ ran
    assert (a == b) == (a_std == b_std)
    assert (a == ours("b")) == (a_std == std("b"))
    if kw.get("repr", True):
        assert repr(a).replace(ours.__qualname__, "X") == repr(a_std).replace(std.__qualname__, "X")
    else:                                             # object's own repr, as the standard one
        assert repr(a).startswith("<") and repr(a_std).startswith("<")
    assert (ours.__hash__ is None) == (std.__hash__ is None)
    assert ours.__dataclass_params__.eq == std.__dataclass_params__.eq
    assert ours.__dataclass_params__.repr == std.__dataclass_params__.repr
    c = dataclasses.replace(a, name="c")
    assert c.name == "c" and c.children == [1]
    assert dataclasses.asdict(a) == dataclasses.asdict(a_std)
    with pytest.raises(TypeError):
        ours()                                        # 'name' is required, as with the standard one


def test_recursive_repr_and_comparison_with_other_classes():
    _, ours = _pair()
    a = ours("a")
    a.children.append(a)
    assert repr(a).count("...") == 1
    assert (a == 3) is False and a.__eq__(3) is NotImplemented


def test_component_classes_pickle_and_copy():
    """The model's classes (used by Dask workers and deep copies of models) survive pickling
    and copying with equal fields."""
    from arthron.models.model import Body, Marker
    b = Body(name="femur", mass=9.3, mass_center=np.array([0.0, -0.17, 0.0]), inertia=np.eye(3) * 0.1)
    m = Marker(name="LASI", parent_frame="/bodyset/pelvis", location=np.array([0.01, 0.02, 0.03]))
    for obj in (b, m):
        for other in (pickle.loads(pickle.dumps(obj)), copy.deepcopy(obj)):
            assert type(other) is type(obj)
            for f in dataclasses.fields(obj):
                va, vb = getattr(obj, f.name), getattr(other, f.name)
                assert np.array_equal(va, vb) if isinstance(va, np.ndarray) else va == vb
    assert "name" in str(inspect.signature(Body))


def _lazy_bodies():
    class Base:
        """A base."""
        name: str
        kind: ClassVar[str] = "base"
        mass: float = 1.0

    class Child(Base):
        """A child."""
        scale: dataclasses.InitVar[float] = 2.0
        tags: list = dataclasses.field(default_factory=list)
        flag: bool = dataclasses.field(default=False, kw_only=True)
        count: int = dataclasses.field(default=0, init=False)

        def __post_init__(self, scale):
            self.mass = self.mass * scale
            self.count = len(self.tags)

    class NoDoc:
        x: int
        y: int = 3
    return Base, Child, NoDoc


def _decorated(deco):
    Base, Child, NoDoc = _lazy_bodies()
    Base = deco(Base)
    ns = {k: v for k, v in vars(Child).items() if k not in ("__dict__", "__weakref__")}
    return Base, deco(type("Child", (Base,), ns)), deco(NoDoc)


@pytest.fixture(params=["generator", "copy"])
def init_route(request, monkeypatch):
    """Both routes of runtime._generated_init: dataclasses' own generator (Python 3.10–3.12)
    and the decorated field-for-field copy (other versions)."""
    if request.param == "copy":
        monkeypatch.setattr(runtime, "_INIT_FN", False)
    elif not runtime._INIT_FN:
        pytest.skip("dataclasses._init_fn has other arguments in this Python")
    return request.param


def test_init_made_on_first_use_has_the_standard_signature_and_behaviour(init_route):
    """The ``__init__`` made on first use (a class's first instance, or a lookup on the class:
    inspect.signature, help) is the standard decorator's: signature, annotations and help
    before any instance, defaults and factories, keyword-only and init=False fields, InitVar
    pseudo-fields passed to __post_init__, ClassVars left out, inherited fields first,
    classes without a docstring (dataclasses writes it from the signature), copying of an
    instance made before the class's first ``__init__`` call."""
    import pydoc
    std, ours = _decorated(dataclasses.dataclass), _decorated(arthron_dataclass)
    assert isinstance(vars(ours[1])["__init__"], runtime._LazyInit)       # not made yet
    c0 = ours[1].__new__(ours[1])
    c0.__dict__.update(name="n", mass=1.0, tags=[], flag=False, count=0)
    assert copy.deepcopy(c0).__dict__ == c0.__dict__
    assert isinstance(vars(ours[1])["__init__"], runtime._LazyInit)
    for s, o in zip(std, ours):
        assert str(inspect.signature(s)) == str(inspect.signature(o))
        assert s.__init__.__annotations__ == o.__init__.__annotations__
        assert s.__init__.__qualname__ == o.__init__.__qualname__
        assert s.__doc__ == o.__doc__ and o.__dataclass_params__.init
    assert "kind" not in str(inspect.signature(ours[1]))
    helps = [[ln for ln in pydoc.plain(pydoc.render_doc(c[1])).splitlines() if "__init__(" in ln]
             for c in (std, ours)]
    assert helps[0] == helps[1] and "name: 'str'" in helps[1][0]
    for C in (std[1], ours[1]):
        a = C("a", 3.0, 0.5, [1, 2], flag=True)
        assert (a.name, a.mass, a.tags, a.flag, a.count) == ("a", 1.5, [1, 2], True, 2)
        b = C("b")
        assert b.mass == 2.0 and b.tags == [] and b.tags is not C("c").tags
        with pytest.raises(TypeError):
            C("a", 1.0, 1.0, [], True)                 # flag is keyword-only
        with pytest.raises(TypeError):
            C()
        assert dataclasses.replace(a, name="z", scale=1.0).mass == 1.5
    assert not isinstance(vars(ours[1])["__init__"], runtime._LazyInit)   # made, in place
    assert ours[2](1).y == 3 and ours[0]("b").mass == 1.0


def test_subclass_without_fields_of_its_own_uses_the_base_init(init_route):
    """A plain subclass of a component class (no dataclass decorator) gets its base's
    ``__init__``, made on its first use through the subclass."""
    _, ours, _ = _decorated(arthron_dataclass)

    class Sub(ours):
        pass
    s = Sub("s", 1.0)
    assert s.mass == 2.0 and type(s) is Sub           # (scale 2 by default)
    assert not isinstance(vars(ours)["__init__"], runtime._LazyInit)
