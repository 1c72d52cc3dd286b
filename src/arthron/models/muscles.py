"""Muscle and ligament force laws for static use, vectorized.

* :class:`MuscleParameters` collects max isometric force (N), optimal fiber length (m), tendon
  slack length (m), pennation at optimal fiber length (rad) and max contraction velocity
  (optimal fiber lengths per second) of every muscle of a model.
* Thelen2003 curves (OpenSim ``Thelen2003Muscle``): active force-length
  ``exp(-(l̃-1)²/γ)``, passive force-length ``(exp(k_PE (l̃-1)/ε0) - 1)/(exp(k_PE) - 1)`` for
  ``l̃ > 1`` (0 below), and the force-velocity relation of Thelen (2003) at full activation,
  solved for force (``Af`` = 0.25, ``Flen`` = 1.4).
* A rigid-tendon static estimate of the normalized fiber length and velocity from the path
  length and lengthening speed (:func:`rigid_tendon_fiber_state`), with the constant-thickness
  pennation model of OpenSim.
* Ligament laws: OpenSim ``Blankevoort1991Ligament`` (toe region quadratic up to the
  transition strain, linear beyond, damping on positive strain rate faded in by a smooth step
  over strains 0-0.01, never compressive) and OpenSim ``Ligament``
  (``pcsa_force * f(l / resting_length)`` for ``l > resting_length``, 0 otherwise).

Millard2012EquilibriumMuscle's quintic-Bézier curves are not reproduced:
:func:`force_length_velocity` raises :class:`arthron.errors.UnsupportedFeature` for that class.

Sources: OpenSim 4.6 ``Thelen2003Muscle.cpp``, ``Blankevoort1991Ligament.cpp``,
``Ligament.cpp``; Thelen (2003) J Biomech Eng 125:70-77; Blankevoort et al. (1991)
J Biomech Eng 113:263-269.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelFileError, UnsupportedFeature
from .functions import StepFunction

__all__ = ["MuscleParameters", "muscle_parameters", "thelen_active_force_length",
           "thelen_passive_force_length", "thelen_force_velocity", "rigid_tendon_fiber_state",
           "force_length_velocity", "blankevoort_force", "ligament_force", "ligament_forces"]

# Thelen2003Muscle defaults (OpenSim 4.6)
THELEN_DEFAULTS = {"KshapeActive": 0.45, "KshapePassive": 4.0, "FmaxMuscleStrain": 0.6,
                   "Af": 0.25, "Flen": 1.4}


@dataclass
class MuscleParameters:
    """Per-muscle parameters, arrays of shape (n,).

    names, types; max_isometric_force (N); optimal_fiber_length (m); tendon_slack_length (m);
    pennation_angle_at_optimal (rad); max_contraction_velocity (l_opt/s); ``thelen``: dict of
    arrays ``KshapeActive``, ``KshapePassive``, ``FmaxMuscleStrain``, ``Af``, ``Flen`` (the
    muscle's own values, OpenSim's defaults where absent).
    """

    names: list
    types: list
    max_isometric_force: np.ndarray
    optimal_fiber_length: np.ndarray
    tendon_slack_length: np.ndarray
    pennation_angle_at_optimal: np.ndarray
    max_contraction_velocity: np.ndarray
    thelen: dict | None = None


def muscle_parameters(model, names=None) -> MuscleParameters:
    """Collect :class:`MuscleParameters` of the model's muscles (or of ``names``).

    Raises ModelFileError naming the muscle when a required property is missing.
    """
    names = list(model.muscles) if names is None else list(names)
    cols = {k: [] for k in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                            "pennation_angle_at_optimal", "max_contraction_velocity")}
    types = []
    for n in names:
        f = model.forces.get(n)
        if f is None:
            raise ModelFileError(f"no force named '{n}'", model.source)
        p = f.properties
        for k in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length"):
            if k not in p:
                raise ModelFileError(f"muscle '{n}' has no {k}", model.source)
        cols["max_isometric_force"].append(p["max_isometric_force"])
        cols["optimal_fiber_length"].append(p["optimal_fiber_length"])
        cols["tendon_slack_length"].append(p["tendon_slack_length"])
        cols["pennation_angle_at_optimal"].append(p.get("pennation_angle_at_optimal", 0.0))
        cols["max_contraction_velocity"].append(p.get("max_contraction_velocity", 10.0))
        types.append(f.type)
    thelen = {k: np.array([_xml_float(model.forces[n], k, d) for n in names], float)
              for k, d in THELEN_DEFAULTS.items()}
    return MuscleParameters(names, types, *(np.asarray(cols[k], float) for k in cols),
                            thelen=thelen)


# ------------------------------------------------------------------------------ Thelen2003
def thelen_active_force_length(lce_norm, k_shape_active: float = 0.45):
    """Active force-length multiplier ``exp(-(l̃ - 1)² / γ)`` (``calcfal``)."""
    x = np.asarray(lce_norm, float)
    return np.exp(-((x - 1.0) ** 2) / k_shape_active)


def thelen_passive_force_length(lce_norm, k_shape_passive: float = 4.0,
                                fmax_muscle_strain: float = 0.6):
    """Passive force-length multiplier (``calcfpe``): 0 for ``l̃ <= 1``."""
    x = np.asarray(lce_norm, float)
    with np.errstate(over="ignore"):
        f = (np.exp(k_shape_passive * (x - 1.0) / fmax_muscle_strain) - 1.0) / \
            (np.exp(k_shape_passive) - 1.0)
    return np.where(x > 1.0, f, 0.0)


def thelen_force_velocity(v_norm, af: float = 0.25, flen: float = 1.4):
    """Force-velocity multiplier at full activation and optimal length.

    ``v_norm``: fiber velocity in max contraction velocities (negative = shortening).
    Shortening: Hill's hyperbola ``(1 + v) / (1 - v / Af)`` (0 at ``v <= -1``); lengthening:
    Thelen's branch solved for force, rising towards ``Flen``.
    """
    v = np.asarray(v_norm, float)
    con = (1.0 + v) / (1.0 - v / af)
    c = v * (2.0 + 2.0 / af) / (flen - 1.0)
    ecc = (c * flen + 1.0) / (1.0 + c)
    return np.where(v <= -1.0, 0.0, np.where(v <= 0.0, con, ecc))


def rigid_tendon_fiber_state(params: MuscleParameters, lengths, speeds=None):
    """Normalized fiber length, normalized fiber velocity and pennation for a rigid tendon.

    ``lengths`` (T, n) path lengths (m), ``speeds`` (T, n) lengthening speeds (m/s) or None.
    Constant-thickness pennation: ``h = l_opt sin α_opt``, fiber length
    ``l_f = sqrt(h² + (l - l_ts)²)``, ``cos α = (l - l_ts) / l_f``, fiber velocity
    ``v_f = v cos α``. Returns (l̃ (T, n), ṽ (T, n) in max contraction velocities, α (T, n)).
    """
    L = np.asarray(lengths, float)
    lo = params.optimal_fiber_length
    h = lo * np.sin(params.pennation_angle_at_optimal)
    along = np.maximum(L - params.tendon_slack_length, 1e-9)
    lf = np.sqrt(h * h + along * along)
    cos_a = along / lf
    v = np.zeros_like(L) if speeds is None else np.asarray(speeds, float) * cos_a
    return lf / lo, v / (lo * params.max_contraction_velocity), np.arccos(np.clip(cos_a, -1, 1))


def force_length_velocity(params: MuscleParameters, lengths, speeds=None):
    """Static muscle multipliers for a rigid tendon: (f_L active, f_PE passive, f_V, cos α),
    each (T, n). Thelen2003Muscle (and the deprecated Thelen/Schutte/Delp classes, which share
    the Gaussian active curve here) only.

    Raises UnsupportedFeature for Millard2012 muscles (quintic-Bézier curves not reproduced).
    """
    bad = [n for n, t in zip(params.names, params.types) if t.startswith("Millard")]
    if bad:
        raise UnsupportedFeature("Millard2012 force-length-velocity curves are not reproduced "
                                 f"(muscles {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''})")
    ln, vn, alpha = rigid_tendon_fiber_state(params, lengths, speeds)
    th = params.thelen or {k: np.full(len(params.names), v) for k, v in THELEN_DEFAULTS.items()}
    return (thelen_active_force_length(ln, th["KshapeActive"]),
            thelen_passive_force_length(ln, th["KshapePassive"], th["FmaxMuscleStrain"]),
            thelen_force_velocity(vn, th["Af"], th["Flen"]), np.cos(alpha))


# ------------------------------------------------------------------------------ ligaments
_DAMP_STEP = StepFunction(0.0, 0.01, 0.0, 1.0)


def blankevoort_force(lengths, slack_length, linear_stiffness, transition_strain=0.06,
                      lengthening_speeds=None, damping_coefficient=0.003):
    """Blankevoort1991Ligament total force (N), broadcast over (T, n).

    ``strain = (l - l0)/l0``; spring ``0`` (strain <= 0), ``k ε² / (2 ε_t)`` (toe),
    ``k (ε - ε_t/2)`` (linear); damping ``c ε̇`` only for ε > 0 and ε̇ > 0, faded in by a
    smooth step over ε in [0, 0.01]; the total is clipped at 0.
    """
    L = np.asarray(lengths, float)
    l0 = np.asarray(slack_length, float)
    k = np.asarray(linear_stiffness, float)
    et = np.asarray(transition_strain, float)
    e = (L - l0) / l0
    spring = np.where(e <= 0, 0.0, np.where(e < et, 0.5 * k / et * e * e, k * (e - et / 2)))
    if lengthening_speeds is None:
        return np.maximum(spring, 0.0)
    rate = np.asarray(lengthening_speeds, float) / l0
    damp = np.where((e > 0) & (rate > 0),
                    np.asarray(damping_coefficient, float) * rate * _DAMP_STEP.value(e), 0.0)
    return np.maximum(spring + damp, 0.0)


def ligament_force(lengths, resting_length, pcsa_force, force_length_curve):
    """OpenSim ``Ligament`` tension (N): ``pcsa_force * f(l / l_rest)`` where ``l > l_rest``,
    0 otherwise; ``force_length_curve`` is an :class:`arthron.models.functions.Function`."""
    L = np.asarray(lengths, float)
    x = L / np.asarray(resting_length, float)
    f = force_length_curve.value(x.ravel()).reshape(x.shape)
    return np.where(L > resting_length, np.asarray(pcsa_force, float) * f, 0.0)


def _xml_float(force, tag, default):
    raw = getattr(force, "raw", None)
    if raw is not None:
        e = raw.find(tag)
        if e is not None and e.text and e.text.strip():
            return float(e.text)
    return float(force.properties.get(tag, default))


def ligament_forces(model, names, lengths, lengthening_speeds=None):
    """Tensions (T, n) of the named Blankevoort1991Ligament / Ligament forces of ``model``
    for path ``lengths`` (T, n) (and speeds, for Blankevoort damping).

    Raises ModelFileError naming a force that is not a ligament, UnsupportedFeature for a
    Ligament without a force-length curve.
    """
    L = np.atleast_2d(np.asarray(lengths, float))
    out = np.zeros_like(L)
    for i, n in enumerate(names):
        f = model.forces.get(n)
        if f is None:
            raise ModelFileError(f"no force named '{n}'", model.source)
        if f.type == "Blankevoort1991Ligament":
            sp = None if lengthening_speeds is None else np.atleast_2d(lengthening_speeds)[:, i]
            out[:, i] = blankevoort_force(
                L[:, i], _xml_float(f, "slack_length", np.nan),
                _xml_float(f, "linear_stiffness", np.nan),
                _xml_float(f, "transition_strain", 0.06), sp,
                _xml_float(f, "damping_coefficient", 0.003))
        elif f.type == "Ligament":
            curve = f.properties.get("force_length_curve")
            if curve is None:
                raise UnsupportedFeature(f"Ligament '{n}' has no force_length_curve")
            out[:, i] = ligament_force(L[:, i], _xml_float(f, "resting_length", np.nan),
                                       _xml_float(f, "pcsa_force", np.nan), curve)
        else:
            raise ModelFileError(f"force '{n}' ({f.type}) is not a ligament", model.source)
    return out
