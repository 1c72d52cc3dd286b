"""Checks of the options the tools share (time range, low-pass cut-off, counts), in one place.

Bad values raise :class:`arthron.errors.OptionError` (also a ``ValueError``) before any file is
read or anything computed; the command line prints it as one line with exit status 2.
"""
from __future__ import annotations

import math

from ..errors import OptionError
from ..solvers.filtering import check_lowpass, check_time_range  # noqa: F401  (re-exported; the solvers check too)
from ..models.subject import SUBJECT_HEIGHT_M, SUBJECT_MASS_KG  # noqa: F401  (re-exported)

__all__ = ["check_time_range", "check_lowpass", "check_positive_int", "check_positive", "check_subject_size",
           "check_result_name",
           "SUBJECT_MASS_KG", "SUBJECT_HEIGHT_M"]



def check_positive_int(value, what: str) -> int:
    """``value`` as an int ≥ 1; OptionError naming ``what`` otherwise."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise OptionError(f"{what} must be a positive integer, got {value!r}") from None
    if n != value or n < 1:
        raise OptionError(f"{what} must be a positive integer, got {value!r}")
    return n


def check_positive(value, what: str) -> float:
    """``value`` as a finite float > 0; OptionError naming ``what`` otherwise."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{what} must be a positive number, got {value!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise OptionError(f"{what} must be a positive number, got {value!r}")
    return x


def check_subject_size(mass, height) -> tuple[float, float]:
    """(mass kg, height m) as floats: positive, finite and within :data:`SUBJECT_MASS_KG` and
    :data:`SUBJECT_HEIGHT_M`; OptionError naming the value otherwise (``--height 1750`` in mm)."""
    mass = check_positive(mass, "mass (kg)")
    height = check_positive(height, "height (m)")
    for v, what, (lo, hi) in ((mass, "mass (kg)", SUBJECT_MASS_KG), (height, "height (m)", SUBJECT_HEIGHT_M)):
        if not lo <= v <= hi:
            raise OptionError(f"{what} must lie in [{lo:g}, {hi:g}] (a human subject's), got {v:g}")
    return mass, height


def check_result_name(name, what: str = "--name") -> str:
    """A result name that prefixes output files inside the output folder (``<name>_...sto``,
    as OpenSim's tool name does): a non-empty file-name part with no path in it (no ``/`` or
    ``\\``, not ``.`` or ``..``, not absolute, no NUL), so the files cannot land outside the
    folder. Returns it; OptionError naming ``what`` otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise OptionError(f"{what} must be a non-empty name, got {name!r}")
    if any(c in name for c in "/\\\0") or name in (".", "..") or (len(name) > 1 and name[1] == ":"):
        raise OptionError(f"{what} {name!r}: a name for the output files, not a path (no '/', '\\', "
                          "'..' or drive): the files go into the output folder")
    return name
