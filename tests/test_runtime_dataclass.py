"""arthron.runtime.dataclass makes the same classes as dataclasses.dataclass (shared
__repr__/__eq__ instead of compiled per class): checked against the standard decorator on the
same class bodies, and on the component classes that use it."""
from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import numpy as np
import pytest

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
