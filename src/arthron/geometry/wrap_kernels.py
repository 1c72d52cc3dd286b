"""Compiled (numba) kernels of the wrapping loops that NumPy evaluates slowly: the ellipsoid's
"fan" of closest-point Newton solves, its damped tangent-point search and its chord sum, and
the cylinder's wrap with its iterative tangent correction.

Each kernel (:mod:`arthron.geometry._wrap_numba`) replays, row by row, the same arithmetic as
the NumPy reference in :mod:`arthron.geometry.wrap_ellipsoid` and
:mod:`arthron.geometry.wrapping` (OpenSim 4.6's ``WrapEllipsoid::wrapLine`` /
``findClosestPoint`` / ``calcTangentPoint`` and ``WrapCylinder::wrapLine`` /
``_make_spiral_path``), so results agree with it to rounding (tests: 1e-12). The NumPy code
stays the reference and the fallback.

This module does not import numba; :func:`kernels` imports it (≈0.2–0.5 s) and loads the
kernels from numba's on-disk cache (compiled there at the first use, ≈5–10 s) lazily, only
when :func:`use_kernel` judges the work large enough to pay for it, so commands with small
wrapping problems never import numba, and a fresh installation compiles the kernels only for
large work.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

_KERNELS = None
_FAILED = False
_CACHED = None
#: The compiled kernels (names in :mod:`arthron.geometry._wrap_numba`).
KERNEL_NAMES = ("fan_blades", "tangent_lm", "surface_path", "wrap_cylinder", "torus_line_point")
#: the modules that define them (numba names its cache files after the defining module)
_KERNEL_MODULES = ("_wrap_numba", "_wrap_numba_ellipsoid")
#: Newton solves (fan points) that NumPy may spend in this process before numba is imported,
#: when numba's on-disk cache holds the kernels. Importing numba and loading the cached
#: kernels a model uses costs ≈0.45–0.7 s here (measured in a fresh ``arthron so`` process:
#: numba 0.2 s, its BLAS check importing scipy.linalg, ≈0.1 s per cached kernel loaded);
#: the kernels save ≈0.3 µs (arm26: 16 -> 5 ms of wrapping per 36k fan points) to ≈1.1 µs
#: (DAS4, cylinders and tori included: 0.65 -> 0.28 s per 332k fan points) of NumPy work per
#: fan point, so about a million fan points pay for the import and a process never pays
#: much more than twice the better of the two (the rent-or-buy rule). A single command on
#: DAS4 (151 frames) stays with NumPy; repeated runs in one process switch to the kernels.
MIN_POINTS_TO_IMPORT = 1_000_000
#: The same when the kernels are not in the cache yet: compiling them costs ≈5–10 s (once per
#: installation; the tests compile them too).
MIN_POINTS_TO_COMPILE = 10_000_000
_numpy_work = 0
#: None: decide by problem size (:func:`use_kernel`); False: always NumPy; True: always the
#: kernels where numba is installed (tests compare the two).
FORCE = None


def _cached() -> bool:
    """Whether numba's cache index holds every kernel, newer than the source of its module
    (``_wrap_numba.py`` and ``_wrap_numba_ellipsoid.py``; in ``NUMBA_CACHE_DIR`` when set, else
    in ``__pycache__`` beside the modules; elsewhere, e.g. numba's user-wide cache of a
    read-only installation, counts as not cached); checked once per process."""
    global _CACHED
    if _CACHED is None:
        found = set()
        try:
            for mod in _KERNEL_MODULES:
                src = Path(__file__).with_name(mod + ".py")
                t_src = src.stat().st_mtime
                if os.environ.get("NUMBA_CACHE_DIR"):
                    files = Path(os.environ["NUMBA_CACHE_DIR"]).rglob(f"{mod}.*.nbi")
                else:
                    files = src.with_name("__pycache__").glob(f"{mod}.*.nbi")
                found |= {f.name.split(".")[1].split("-")[0] for f in files
                          if f.stat().st_mtime >= t_src}
        except OSError:
            pass
        _CACHED = set(KERNEL_NAMES) <= found
    return _CACHED


def use_kernel(work: int = 0) -> bool:
    """Whether to run the compiled kernels on a problem of ``work`` Newton points (fan points
    of the ellipsoid; 0 for the cheaper loops): never when the environment variable
    ``ARTHRON_NO_NUMBA`` is set or numba cannot be loaded; always once arthron has loaded the
    kernels, or numba is imported already (by anything in the process) and its cache holds
    them; otherwise when the Newton points of this call and of the earlier NumPy calls of the
    process reach :data:`MIN_POINTS_TO_IMPORT` (:data:`MIN_POINTS_TO_COMPILE` while the
    kernels are not compiled yet)."""
    global _numpy_work
    if FORCE is not None:
        return bool(FORCE) and kernels() is not None
    if _FAILED or os.environ.get("ARTHRON_NO_NUMBA"):
        return False
    if _KERNELS is not None:
        return True
    cached = _cached()
    if cached and "numba" in sys.modules:
        return kernels() is not None
    if work <= 0:
        return False
    _numpy_work += work
    need = MIN_POINTS_TO_IMPORT if cached else MIN_POINTS_TO_COMPILE
    return _numpy_work >= need and kernels() is not None


def kernels():
    """The compiled kernels (a namespace), or None where numba is not installed."""
    global _KERNELS, _FAILED
    if _KERNELS is None and not _FAILED:
        try:
            from . import _wrap_numba
            _KERNELS = _wrap_numba
        except Exception:  # numba missing or unusable: NumPy reference instead
            _FAILED = True
    return _KERNELS


__all__ = ["use_kernel", "kernels", "MIN_POINTS_TO_IMPORT", "MIN_POINTS_TO_COMPILE", "KERNEL_NAMES"]
