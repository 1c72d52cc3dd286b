"""Process-wide choices that change where time goes, never the results.

``light_imports`` — the ``arthron`` command sets it: a command on a short trial then fits its
coordinate splines and runs OpenSim's low-pass IIR with arthron's numpy routes
(:mod:`arthron.models.natural_splines`,
:func:`arthron.solvers.filtering._all_pole`) instead of importing ``scipy.interpolate`` and
``scipy.signal`` (0.5–1 s of a command's start-up on this kind of machine). A library session
keeps it False and uses scipy's compiled routines (``make_interp_spline``, ``lfilter``), which
are faster per call once imported. Both routes give the same numbers (to 1e-12 relative,
tested).

:func:`keep_freed_memory` — the ``arthron`` program calls it for a single job (every command
but ``batch``; not ``cli.main(argv)`` called from Python): glibc's allocator then keeps the memory a phase of the command frees (the text
of the motion file, the spline systems, one block of frames of the inverse dynamics) for the
next phase instead of handing it back to the kernel, which costs a page fault per 4 KiB when the
next phase touches fresh memory again (measured on the 10,000-frame Gait2354 inverse dynamics:
about 10,000 page faults, some 10 ms of a 0.25 s command), and the heap the command starts
with is advised for transparent huge pages (:func:`_heap_in_huge_pages`: a page fault per
2 MiB instead of per 4 KiB). Nothing else changes: the memory is returned when the command
ends.

:func:`dataclass` — :func:`dataclasses.dataclass` for arthron's component classes, with the same
classes as a result (fields, ``__init__`` and its signature, equality, ``repr``, hashing,
``__dataclass_params__``), but ``__repr__`` and ``__eq__`` shared by all of them
(:func:`_dataclass_repr`, :func:`_dataclass_eq`) instead of generated and compiled once per
class: Python 3.11 compiles every generated method from source at import, some 0.1 ms each
(measured on an ``arthron ik`` command: 7 ms of the 28 ms of arthron's imports for
``__repr__``/``__eq__``). The ``__init__`` is made by dataclasses itself when the class is first
instantiated or its ``__init__`` first looked up (:class:`_LazyInit`: ``inspect.signature``,
``help`` and ``dataclasses.replace`` see the standard one; :func:`_generated_init`): a command
uses about a third of the ~70 component classes, and compiling the others' ``__init__`` cost
some 5 ms of every command's start-up. Frozen, ordered, slotted and ``unsafe_hash`` classes go
to :func:`dataclasses.dataclass` unchanged, as do classes without a docstring or with an
``__init__`` of their own.
"""
from __future__ import annotations

import dataclasses as _dc
import sys
from _thread import get_ident as _get_ident

#: see the module docstring
light_imports: bool = False

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed memory for reuse within the process (see the module
    docstring): blocks up to 32 MiB come from the heap instead of their own mappings, the heap
    is not trimmed below 256 MiB of free space, and it grows by 16 MiB steps. Returns whether
    the allocator took the settings (False off Linux/glibc: nothing is changed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = all([mallopt(_M_MMAP_THRESHOLD, 32 << 20) == 1,
              mallopt(_M_TRIM_THRESHOLD, 256 << 20) == 1,
              mallopt(_M_TOP_PAD, 16 << 20) == 1])
    if ok:
        _heap_in_huge_pages(ctypes)
    return ok


#: heap reserved (not touched) at the start of a command and marked for transparent huge pages
_HUGE_HEAP_BLOCKS, _HUGE_HEAP_BLOCK = 2, 30 << 20
_MADV_HUGEPAGE = 14
_HUGE_PAGE = 2 << 20


def _heap_in_huge_pages(ctypes) -> None:
    """Grow the heap by 60 MiB (below the 32 MiB mapping threshold set above, so from the heap
    itself; nothing is touched), mark it ``MADV_HUGEPAGE`` and free it again: what the command
    allocates next lands there, one page fault per 2 MiB instead of per 4 KiB where the kernel
    has transparent huge pages for advised memory (``madvise`` mode; otherwise nothing changes).
    This is what glibc's own ``glibc.malloc.hugetlb=1`` tunable does, which can only be set
    before a process starts (measured on the 10,000-frame ID: 17,000 → 6,000 page faults,
    about 9 ms of CPU)."""
    try:
        libc = ctypes.CDLL(None)
        malloc, free, madvise = libc.malloc, libc.free, libc.madvise
    except (OSError, AttributeError):
        return
    malloc.restype, malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    free.argtypes = [ctypes.c_void_p]
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    blocks = [malloc(_HUGE_HEAP_BLOCK) for _ in range(_HUGE_HEAP_BLOCKS)]
    for p in blocks:
        if p:                     # each block's whole huge pages (never memory beyond the block)
            a = (p + _HUGE_PAGE - 1) // _HUGE_PAGE * _HUGE_PAGE
            b = (p + _HUGE_HEAP_BLOCK) // _HUGE_PAGE * _HUGE_PAGE
            if b > a:
                madvise(a, b - a, _MADV_HUGEPAGE)
    for p in blocks:
        if p:
            free(p)


#: the collector's generation-0 threshold during a command (:func:`collect_less`; Python's is 700)
COMMAND_GC_THRESHOLD = 100_000


def collect_less() -> tuple:
    """Raise the cyclic garbage collector's generation-0 threshold to
    :data:`COMMAND_GC_THRESHOLD` allocations for the rest of the process (the ``arthron``
    program, for one job): with Python's 700, importing numpy and arthron, reading a model and
    solving start the collector some 50 times, each pass over the young objects of which
    almost none are garbage (measured on the Gait2354 walk's ``arthron ik``: 48 collections,
    5 ms). Reference cycles are still collected, after 100,000 net allocations instead of 700;
    objects without cycles are freed at once as always. Returns the previous thresholds."""
    import gc
    old = gc.get_threshold()
    gc.set_threshold(COMMAND_GC_THRESHOLD, *old[1:])
    return old


def end_process(status: int) -> None:
    """End the ``arthron`` program now with exit status ``status``, as the interpreter ends it
    after its main function returns, less the teardown: the standard streams are flushed and
    the ``atexit`` functions run, then :func:`os._exit` (the interpreter's final collections
    and the deallocation of every module and object, some 4 ms of a short command, are left
    to the operating system, which frees the process's memory at once). The command's files
    are written and closed before (outputs are whole or not at all,
    :mod:`arthron.io.files`). Returns without ending anything when another thread is alive or a
    stream cannot be flushed (a closed pipe): the interpreter then ends the process as usual."""
    import atexit
    import os
    import threading
    if threading.active_count() > 1 or not _streams_flushed():
        return
    atexit._run_exitfuncs()
    if _streams_flushed():
        os._exit(status)


def _streams_flushed() -> bool:
    """Flush the standard output and error streams; False when one cannot be (a closed pipe)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


# ----------------------------------------------------------------------- shared dataclass methods
_REPR_NAMES: dict = {}
_EQ_NAMES: dict = {}
_REPR_RUNNING: set = set()


def _names(cache, cls, attr):
    names = cache.get(cls)
    if names is None:
        names = cache[cls] = tuple(f.name for f in _dc.fields(cls) if getattr(f, attr))
    return names


def _dataclass_repr(self):
    """The ``__repr__`` :func:`dataclasses.dataclass` generates: ``Class(name=value!r, ...)``
    over the fields with ``repr=True``, ``...`` for a recursive reference."""
    key = (id(self), _get_ident())
    if key in _REPR_RUNNING:
        return "..."
    _REPR_RUNNING.add(key)
    try:
        return (self.__class__.__qualname__ + "("
                + ", ".join(f"{n}={getattr(self, n)!r}"
                            for n in _names(_REPR_NAMES, self.__class__, "repr")) + ")")
    finally:
        _REPR_RUNNING.discard(key)


def _dataclass_eq(self, other):
    """The ``__eq__`` :func:`dataclasses.dataclass` generates: same class, and the tuples of the
    fields with ``compare=True`` equal."""
    if other.__class__ is self.__class__:
        names = _names(_EQ_NAMES, self.__class__, "compare")
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
    return NotImplemented


class _LazyInit:
    """A dataclass's ``__init__`` until it is first looked up: then :func:`_generated_init`
    makes it, it replaces this descriptor in the class, and it is returned (bound to the
    instance being initialized, or unbound for a lookup on the class: ``inspect.signature``,
    ``help``). Creating a class thus costs no compilation of an ``__init__`` the process never
    calls (see the module docstring)."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        self.owner = owner

    def __get__(self, obj, cls=None):
        owner = self.owner
        init = _generated_init(owner)
        if owner.__dict__.get("__init__") is self:
            type.__setattr__(owner, "__init__", init)
        return init if obj is None else init.__get__(obj, cls)


#: dataclasses' own generator of ``__init__`` with the arguments of Python 3.10–3.12
_INIT_FN = getattr(getattr(_dc, "_init_fn", None), "__code__", None) is not None and \
    _dc._init_fn.__code__.co_varnames[:8] == ("fields", "std_fields", "kw_only_fields", "frozen",
                                              "has_post_init", "self_name", "globals", "slots") \
    and hasattr(_dc, "_fields_in_init_order")


def _generated_init(cls):
    """The ``__init__`` :func:`dataclasses.dataclass` generates for ``cls``, made by dataclasses
    itself: with dataclasses' generator (Python 3.10–3.12: ``_init_fn`` called as
    ``_process_class`` calls it), else by decorating a field-for-field copy of ``cls`` (same
    module and qualified name, the same fields and ``InitVar`` pseudo-fields in the same order
    with the same annotations, defaults, factories and flags, a ``__post_init__`` when ``cls``
    has one)."""
    fields = cls.__dataclass_fields__
    if _INIT_FN:
        init_fields = [f for f in fields.values() if f._field_type in (_dc._FIELD, _dc._FIELD_INITVAR)]
        std, kw_only = _dc._fields_in_init_order(init_fields)
        module = sys.modules.get(cls.__module__)
        fn = _dc._init_fn(init_fields, std, kw_only, False, hasattr(cls, "__post_init__"),
                          "__dataclass_self__" if "self" in fields else "self",
                          module.__dict__ if module is not None else {}, False)
        fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
        return fn
    ns: dict = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                "__annotations__": {}}
    for f in fields.values():
        if f._field_type is _dc._FIELD_CLASSVAR:
            continue
        ns["__annotations__"][f.name] = f.type
        fkw = dict(init=f.init, repr=f.repr, hash=f.hash, compare=f.compare, metadata=f.metadata)
        if getattr(f, "kw_only", _dc.MISSING) is not _dc.MISSING:
            fkw["kw_only"] = f.kw_only
        if f.default is not _dc.MISSING:
            fkw["default"] = f.default
        if f.default_factory is not _dc.MISSING:
            fkw["default_factory"] = f.default_factory
        ns[f.name] = _dc.field(**fkw)
    if hasattr(cls, "__post_init__"):
        ns["__post_init__"] = cls.__post_init__
    shadow = _dc.dataclass(type(cls.__name__, (), ns), repr=False, eq=False, match_args=False)
    return shadow.__dict__["__init__"]


#: the dataclasses internals :func:`_generated_init` reads (else every ``__init__`` is made at once)
_LAZY_INIT = all(hasattr(_dc, n) for n in ("_FIELD_CLASSVAR", "_FIELD_INITVAR", "_FIELD"))


def dataclass(cls=None, /, **kw):
    """:func:`dataclasses.dataclass` with shared ``__repr__`` and ``__eq__`` and an ``__init__``
    generated on first use (see the module docstring); same arguments, same resulting class
    behaviour."""
    def wrap(c):
        if any(kw.get(k) for k in ("order", "unsafe_hash", "frozen", "slots")):
            return _dc.dataclass(c, **kw)
        want_init = kw.get("init", True)
        want_repr, want_eq = kw.get("repr", True), kw.get("eq", True)
        class_hash = c.__dict__.get("__hash__", _dc.MISSING)
        explicit_hash = not (class_hash is _dc.MISSING
                             or (class_hash is None and "__eq__" in c.__dict__))
        own_repr, own_eq = "__repr__" in c.__dict__, "__eq__" in c.__dict__
        # (dataclasses writes the signature into a missing docstring: that needs the __init__)
        lazy = _LAZY_INIT and want_init and bool(c.__doc__) and "__init__" not in c.__dict__
        c = _dc.dataclass(c, **{**kw, "init": want_init and not lazy, "repr": False, "eq": False})
        if lazy:
            c.__init__ = _LazyInit(c)
        if want_repr and not own_repr:
            c.__repr__ = _dataclass_repr
        if want_eq:
            if not own_eq:
                c.__eq__ = _dataclass_eq
            if not explicit_hash:
                c.__hash__ = None             # as dataclasses does for eq=True, frozen=False
        params = c.__dataclass_params__
        params.init, params.repr, params.eq = want_init, want_repr, want_eq
        return c
    return wrap if cls is None else wrap(cls)
