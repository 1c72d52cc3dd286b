"""``record``: ``dataclasses.dataclass`` with the same behaviour and a third of its import cost.

Python 3.11's ``dataclass`` compiles generated source for ``__init__``, ``__repr__`` and
``__eq__`` of every class (about 0.3 ms per class, 50+ component classes on every command's
import path). ``record`` lets ``dataclass`` generate ``__init__`` only and gives the class a
shared ``__repr__`` and ``__eq__`` that do what the generated ones do: the repr
``Name(field=value!r, ...)`` over the fields with ``repr=True`` (``...`` on recursion), and
equality of the tuples of the ``compare=True`` fields between instances of exactly the same
class (``NotImplemented`` otherwise), ``__hash__`` set to None as ``dataclass(eq=True)`` does.
The class is a dataclass (``dataclasses.fields``, ``replace``, ``asdict`` work). Frozen,
ordered or hashed classes are handed to ``dataclass`` unchanged.
"""
from __future__ import annotations

import dataclasses
import reprlib

__all__ = ["record"]


@reprlib.recursive_repr()
def _repr(self):
    return (f"{self.__class__.__qualname__}("
            + ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)
            + ")")


def _eq(self, other):
    if other.__class__ is self.__class__:
        names = [f.name for f in dataclasses.fields(self) if f.compare]
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
    return NotImplemented


def record(cls=None, /, *, repr=True, eq=True, **kw):
    """``@record`` / ``@record(...)``: as ``@dataclass`` / ``@dataclass(...)`` (same
    arguments and behaviour; see the module text)."""
    def wrap(c):
        if kw.get("frozen") or kw.get("order") or kw.get("unsafe_hash"):
            return dataclasses.dataclass(c, repr=repr, eq=eq, **kw)
        own = c.__dict__
        has_repr, has_eq, has_hash = "__repr__" in own, "__eq__" in own, "__hash__" in own
        c = dataclasses.dataclass(c, repr=False, eq=False, **kw)
        if repr and not has_repr:
            c.__repr__ = _repr
        if eq and not has_eq:
            c.__eq__ = _eq
            if not has_hash:
                c.__hash__ = None
        return c
    return wrap if cls is None else wrap(cls)
