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
kernels from numba's on-disk cache (compiled there at the first run, ≈5 s) lazily, only when
:func:`use_kernel` judges the problem large enough to pay for it (or numba is loaded
already), so commands with small wrapping problems never import numba.
"""
from __future__ import annotations

import os
import sys

_KERNELS = None
_FAILED = False
#: Newton solves (fan points) that NumPy may spend in this process before numba is imported.
#: Importing numba and loading the cached kernels costs ≈0.3–0.6 s here, about what NumPy
#: spends wrapping paths with this many fan points (arm26: 36k per 121 frames, ≈17 ms; the
#: shoulder–elbow model: 282k per 130 frames, ≈0.5 s), so a process never pays much more
#: than the better of the two (the rent-or-buy rule).
MIN_POINTS_TO_IMPORT = 250_000
_numpy_work = 0
#: None: decide by problem size (:func:`use_kernel`); False: always NumPy; True: always the
#: kernels where numba is installed (tests compare the two).
FORCE = None


def use_kernel(work: int = 0) -> bool:
    """Whether to run the compiled kernels on a problem of ``work`` Newton points (fan points
    of the ellipsoid; 0 for the cheaper loops): never when the environment variable
    ``ARTHRON_NO_NUMBA`` is set or numba cannot be loaded; always once numba is imported (by
    arthron or anything else in the process); otherwise when the Newton points of this call
    and of the earlier NumPy calls of the process reach :data:`MIN_POINTS_TO_IMPORT`."""
    global _numpy_work
    if FORCE is not None:
        return bool(FORCE) and kernels() is not None
    if _FAILED or os.environ.get("ARTHRON_NO_NUMBA"):
        return False
    if _KERNELS is not None or "numba" in sys.modules:
        return kernels() is not None
    if work <= 0:
        return False
    _numpy_work += work
    return _numpy_work >= MIN_POINTS_TO_IMPORT and kernels() is not None


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


__all__ = ["use_kernel", "kernels", "MIN_POINTS_TO_IMPORT"]
