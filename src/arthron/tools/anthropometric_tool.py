"""Anthropometric scaling on files (``arthron scale MODEL --mass KG --height M``): the model
scaled from the subject's gender, mass and height (:func:`arthron.solvers.scaling.scale_anthropometric`),
optionally with per-segment factors from a static trial's landmarks
(:func:`arthron.solvers.scaling.landmark_factors`). The ScaleTool setup workflow is
:mod:`arthron.tools.scale_tool`.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import OptionError
from ..io.osim import read_osim, write_osim
from ..io.trc import read_trc
from ..models.model import Model
from ..solvers.scaling import landmark_factors, scale_anthropometric
from .options import check_subject_size

__all__ = ["run_anthropometric_scale", "gender_name"]


def gender_name(gender: str) -> str:
    """``f``/``m`` (any case) → ``female``/``male``; ``female``/``male`` kept.
    OptionError otherwise."""
    g = {"f": "female", "m": "male"}.get(str(gender).strip().lower(), str(gender).strip().lower())
    if g not in ("female", "male"):
        raise OptionError(f"gender must be f or m (female or male), got {gender!r}")
    return g


def run_anthropometric_scale(model, mass, height, gender="m", *, static=None, output=None):
    """Scale ``model`` (Model or ``.osim`` path) to a subject.

    Parameters
    ----------
    mass : kg (> 0); height : m (> 0); gender : f, m, female or male
    static : MarkerTrial or ``.trc`` path of a static trial: per-segment factors from its
        landmarks (each applied on the three axes)
    output : ``.osim`` path to write (optional; whole or not at all)

    Returns
    -------
    (scaled Model, report, gender name)

    Raises
    ------
    OptionError (mass or height not a positive number or beyond a human's, unknown gender), the readers' and the
    solver's errors.
    """
    mass, height = check_subject_size(mass, height)
    g = gender_name(gender)
    model = model if isinstance(model, Model) else read_osim(model)
    factors = None
    if static is not None:
        trial = static if hasattr(static, "positions") else read_trc(static)
        factors = {b: [f] * 3 for b, f in landmark_factors(model, trial).items()}
    scaled, report = scale_anthropometric(model, mass, height, g, segment_factors=factors)
    if output is not None:
        write_osim(Path(output), scaled)
    return scaled, report, g
