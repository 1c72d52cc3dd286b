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
* DeGrooteFregly2016 curves (OpenSim ``DeGrooteFregly2016Muscle``; De Groote et al. 2016 with
  OpenSim's constants): :func:`degroote_active_force_length`,
  :func:`degroote_passive_force_length`, :func:`degroote_force_velocity`.
* Ligament laws: OpenSim ``Blankevoort1991Ligament`` (toe region quadratic up to the
  transition strain, linear beyond, damping on positive strain rate faded in by a smooth step
  over strains 0-0.01, never compressive) and OpenSim ``Ligament``
  (``pcsa_force * f(l / resting_length)`` for ``l > resting_length``, 0 otherwise).

* Millard2012 curves (OpenSim ``ActiveForceLengthCurve``, ``FiberForceLengthCurve``,
  ``ForceVelocityCurve``, ``TendonForceLengthCurve``): smooth segmented quintic Bézier curves built from the curve
  properties exactly as OpenSim 4.6's ``SmoothSegmentedFunctionFactory`` builds them
  (:class:`MuscleCurve`, :func:`millard_curves`).

Sources: OpenSim 4.6 ``Thelen2003Muscle.cpp``, ``SmoothSegmentedFunctionFactory.cpp``,
``SegmentedQuinticBezierToolkit.cpp``, ``Blankevoort1991Ligament.cpp``, ``Ligament.cpp``;
``DeGrooteFregly2016Muscle.h``; Millard et al. (2013) J Biomech Eng 135:021005; De Groote et al.
(2016) Ann Biomed Eng 44:2922-2936; Thelen (2003) J Biomech Eng 125:70-77;
Blankevoort et al. (1991) J Biomech Eng 113:263-269.
"""
from __future__ import annotations

import re
from math import comb
from dataclasses import dataclass

import numpy as np

from ..errors import ModelFileError, UnsupportedFeature
from .functions import StepFunction
from .spline_muscles import (SPLINE_MUSCLE_TYPES, rigid_tendon_multipliers, schutte_force_velocity,
                             schutte_static_optimization_force)

__all__ = ["MuscleParameters", "muscle_parameters", "muscle_property", "thelen_active_force_length",
           "MuscleCurve", "millard_curves", "millard_curve_params", "millard_active_force_length_curve",
           "millard_fiber_force_length_curve", "millard_force_velocity_curve",
           "millard_tendon_force_length_curve", "degroote_active_force_length",
           "degroote_passive_force_length", "degroote_force_velocity",
           "thelen_passive_force_length", "thelen_force_velocity", "rigid_tendon_fiber_state",
           "force_length_velocity", "millard_inextensible_tendon_active_force", "blankevoort_force", "ligament_force", "ligament_forces"]

# Thelen2003Muscle defaults (OpenSim 4.6)
THELEN_DEFAULTS = {"KshapeActive": 0.45, "KshapePassive": 5.0, "FmaxMuscleStrain": 0.6,
                   "Af": 0.25, "Flen": 1.4}


@dataclass
class MuscleParameters:
    """Per-muscle parameters, arrays of shape (n,).

    names, types; max_isometric_force (N); optimal_fiber_length (m); tendon_slack_length (m);
    pennation_angle_at_optimal (rad); max_contraction_velocity (l_opt/s); ``thelen``: dict of
    arrays ``KshapeActive``, ``KshapePassive``, ``FmaxMuscleStrain``, ``Af``, ``Flen`` (the
    muscle's own values, OpenSim's defaults where absent); ``curves``: per muscle the Millard
    curves or None; ``degroote``: per muscle None or the DeGrooteFregly2016Muscle properties
    ``active_force_width_scale``, ``passive_fiber_strain_at_one_norm_force``,
    ``ignore_passive_fiber_force``; ``spline``: per muscle the muscle itself for the classes
    whose curves are splines in the file (Schutte1993Muscle_Deprecated, RigidTendonMuscle;
    :mod:`arthron.models.spline_muscles`), else None.
    """

    names: list
    types: list
    max_isometric_force: np.ndarray
    optimal_fiber_length: np.ndarray
    tendon_slack_length: np.ndarray
    pennation_angle_at_optimal: np.ndarray
    max_contraction_velocity: np.ndarray
    thelen: dict | None = None
    curves: list | None = None
    degroote: list | None = None
    spline: list | None = None


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
        for k in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length"):
            if getattr(f, k, None) is None:
                raise ModelFileError(f"muscle '{n}' has no {k}", model.source)
        cols["max_isometric_force"].append(f.max_isometric_force)
        cols["optimal_fiber_length"].append(f.optimal_fiber_length)
        cols["tendon_slack_length"].append(f.tendon_slack_length)
        cols["pennation_angle_at_optimal"].append(_value(f, "pennation_angle_at_optimal", 0.0))
        cols["max_contraction_velocity"].append(_value(f, "max_contraction_velocity", 10.0))
        types.append(f.type)
    thelen = {k: np.array([float(getattr(model.forces[n], k, d)) for n in names], float)
              for k, d in THELEN_DEFAULTS.items()}
    curves = [millard_curves(model, n) if t.startswith("Millard") else None
              for n, t in zip(names, types)]
    degroote = [None if t != "DeGrooteFregly2016Muscle" else {
        "active_force_width_scale": muscle_property(model.forces[n], "active_force_width_scale", 1.0),
        "passive_fiber_strain_at_one_norm_force": muscle_property(
            model.forces[n], "passive_fiber_strain_at_one_norm_force", 0.6),
        "ignore_passive_fiber_force": muscle_property(model.forces[n], "ignore_passive_fiber_force", False)}
        for n, t in zip(names, types)]
    spline = [model.forces[n] if t in SPLINE_MUSCLE_TYPES else None for n, t in zip(names, types)]
    return MuscleParameters(names, types, *(np.asarray(cols[k], float) for k in cols),
                            thelen=thelen, curves=curves, degroote=degroote, spline=spline)


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
    each (T, n). Thelen2003Muscle, Millard2012 muscles (their own Bézier curves, OpenSim 4.6) and
    DeGrooteFregly2016Muscle (De Groote et al. 2016's curves; its cos α is returned as 1: OpenSim
    4.6's ``calcInextensibleTendonActiveFiberForce`` of this class is the active fiber force
    along the fiber, not projected on the tendon). RigidTendonMuscle: the file's splines at
    OpenSim's fiber length and unprojected fiber velocity
    (:func:`arthron.models.spline_muscles.rigid_tendon_multipliers`).
    Schutte1993Muscle_Deprecated, Delp1990Muscle_Deprecated and Thelen2003Muscle_Deprecated:
    f_L is the isometric tendon force at activation 1 over F_max (OpenSim's
    ``computeIsometricForce``, passive force included), f_V the deprecated classes' generic
    force-velocity factor, cos α 1, f_PE the passive force along the tendon at that fiber
    length over F_max (:func:`arthron.models.spline_muscles.schutte_static_optimization_force`),
    so that ``F_max f_L f_V cos α`` is OpenSim's StaticOptimization force per activation.
    ``speeds`` None reads as 0.

    Raises UnsupportedFeature for other muscle classes and for a deprecated-class muscle with
    max_contraction_velocity ≤ 0 (MoBL_ARMS_J's: OpenSim's force-velocity factor is then NaN,
    0 or 1.8).
    """
    spl = [i for i, t in enumerate(params.types) if t in SPLINE_MUSCLE_TYPES]
    if spl and (params.spline is None or any(params.spline[i] is None for i in spl)):
        raise UnsupportedFeature(f"muscle '{params.names[spl[0]]}': its curves are missing "
                                 "(build MuscleParameters with muscle_parameters)")
    sch = [i for i in spl if params.types[i].endswith("_Deprecated")]
    L2 = np.atleast_2d(np.asarray(lengths, float))
    V2 = np.zeros_like(L2) if speeds is None else np.atleast_2d(np.asarray(speeds, float))
    if sch:
        fhat_s, pas_s = schutte_static_optimization_force([params.spline[i] for i in sch],
                                                          L2[:, sch], V2[:, sch])
    ln, vn, alpha = rigid_tendon_fiber_state(params, lengths, speeds)
    th = params.thelen or {k: np.full(len(params.names), v) for k, v in THELEN_DEFAULTS.items()}
    fl = thelen_active_force_length(ln, th["KshapeActive"])
    fp = thelen_passive_force_length(ln, th["KshapePassive"], th["FmaxMuscleStrain"])
    fv = thelen_force_velocity(vn, th["Af"], th["Flen"])
    curves = params.curves or [None] * len(params.names)
    memo: dict = {}                   # RigidTendonMuscle curves shared by muscles, read once
    for i, (t, c) in enumerate(zip(params.types, curves)):
        if t.startswith("Millard"):
            if c is None:
                raise UnsupportedFeature(f"muscle '{params.names[i]}': Millard curves missing "
                                         "(build MuscleParameters with muscle_parameters)")
            fl[:, i], fp[:, i], fv[:, i] = c[0].value(ln[:, i]), c[1].value(ln[:, i]), \
                c[2].value(vn[:, i])
        elif t == "DeGrooteFregly2016Muscle":
            dg = (params.degroote or [None] * len(params.names))[i]
            if dg is None:
                raise UnsupportedFeature(f"muscle '{params.names[i]}': DeGroote properties missing "
                                         "(build MuscleParameters with muscle_parameters)")
            fl[:, i] = degroote_active_force_length(ln[:, i], dg["active_force_width_scale"])
            fp[:, i] = 0.0 if dg["ignore_passive_fiber_force"] else degroote_passive_force_length(
                ln[:, i], dg["passive_fiber_strain_at_one_norm_force"])
            fv[:, i] = degroote_force_velocity(vn[:, i])
            alpha[:, i] = 0.0
        elif t in ("Schutte1993Muscle_Deprecated", "Delp1990Muscle_Deprecated",
                   "Thelen2003Muscle_Deprecated"):
            k = sch.index(i)
            fmax = params.max_isometric_force[i]
            v = -np.cos(params.pennation_angle_at_optimal[i]) * V2[:, i] / (
                params.max_contraction_velocity[i] * params.optimal_fiber_length[i])
            fv[:, i] = schutte_force_velocity(v)
            with np.errstate(divide="ignore", invalid="ignore"):
                fl[:, i] = np.where(fmax > 0, fhat_s[:, k] / (fmax * fv[:, i]), 0.0)
                fp[:, i] = np.where(fmax > 0, pas_s[:, k] / fmax, 0.0)
            fl[:, i] = np.where(np.isfinite(fl[:, i]), fl[:, i], 0.0)
            alpha[:, i] = 0.0
        elif t == "RigidTendonMuscle":
            fl[:, i], fp[:, i], fv[:, i], cos_r = rigid_tendon_multipliers(params.spline[i], L2[:, i],
                                                                           V2[:, i], memo)
            alpha[:, i] = np.arccos(np.clip(cos_r, -1.0, 1.0))
        elif not t.startswith("Thelen"):
            raise UnsupportedFeature(f"muscle '{params.names[i]}' ({t}): force-length-velocity "
                                     "curves not reproduced")
    return fl, fp, fv, np.cos(alpha)


def millard_inextensible_tendon_active_force(params: MuscleParameters, lengths, speeds, which, *,
                                             maximum_pennation_angle=None) -> np.ndarray:
    """Active fibre force along the tendon (T, n) N of Millard2012 muscles at activation 1 and
    a rigid tendon, as OpenSim 4.6's ``Millard2012EquilibriumMuscle::
    calcInextensibleTendonActiveFiberForce(s, 1)`` returns it (the force per unit activation
    of its StaticOptimization with ``use_muscle_physiology``).

    ``lengths``, ``speeds`` (T, n) path lengths (m) and lengthening speeds (m/s) of the n
    muscles of ``params``; ``which``: indices of the Millard muscles among them (the k columns
    returned, (T, k)); ``maximum_pennation_angle`` (k,) rad (default acos 0.1, OpenSim's). Fibre length
    ``l_f = sqrt(h² + (l - l_ts)²)`` and velocity ``v_f = v cos φ(l_f)`` with ``h = l_opt sin α_opt``;
    ``F = F_max f_L(l̃) f_V(ṽ) cos φ̃``, 0 where ``l_f ≤ l_min = max(l_opt ×
    min_norm_active_fiber_length, h / sin φ_max)``. As in OpenSim 4.6's
    ``calcActiveFiberForceAlongTendon``, the projection angle φ̃ is the pennation model's angle
    at the *normalized* fibre length ``l̃ = l_f / l_opt`` (``asin(h / l̃)``, h in metres; φ_max
    where ``h / l̃ ≥ sin φ_max``), not at ``l_f``: for a pennated muscle this is larger than
    ``F_max f_L f_V cos φ(l_f)`` (by 9 % for the 23° bifemsh_r of Gait10dof18musc). A
    ``Millard2012AccelerationMuscle`` projects with ``cos φ(l_f)``, as its OpenSim class does.
    """
    L = np.atleast_2d(np.asarray(lengths, float))
    V = np.atleast_2d(np.asarray(speeds, float))
    ln, vn, alpha = rigid_tendon_fiber_state(params, L, V)
    cos_f = np.cos(alpha)
    which = list(which)
    pmax = np.full(len(which), np.arccos(0.1)) if maximum_pennation_angle is None \
        else np.asarray(maximum_pennation_angle, float)
    curves = params.curves or [None] * len(params.names)
    out = np.zeros((len(L), len(which)))
    for k, i in enumerate(which):
        c = curves[i]
        if c is None:
            raise UnsupportedFeature(f"muscle '{params.names[i]}': Millard curves missing "
                                     "(build MuscleParameters with muscle_parameters)")
        lo = params.optimal_fiber_length[i]
        h = lo * np.sin(params.pennation_angle_at_optimal[i])
        lmin = max(c[0].x0 * lo, h / np.sin(pmax[k]), 1e-14)   # x0: min_norm_active_fiber_length
        if params.types[i] == "Millard2012AccelerationMuscle":   # its own projection: cos φ(l_f)
            phi_t = np.arccos(np.clip(cos_f[:, i], -1.0, 1.0))
        elif h > np.finfo(float).eps:
            sin_t = h / ln[:, i]
            phi_t = np.where((ln[:, i] > h) & (sin_t < np.sin(pmax[k])),
                             np.arcsin(np.clip(sin_t, -1.0, 1.0)), pmax[k])
        else:
            phi_t = np.zeros(len(L))
        f = params.max_isometric_force[i] * c[0].value(ln[:, i]) * c[2].value(vn[:, i]) * np.cos(phi_t)
        out[:, k] = np.where(ln[:, i] * lo > lmin, f, 0.0)
    return out


# ------------------------------------------------------------------------------ Millard2012
# Defaults of OpenSim 4.6's ActiveForceLengthCurve, FiberForceLengthCurve, ForceVelocityCurve.
MILLARD_DEFAULTS = {
    "ActiveForceLengthCurve": {"min_norm_active_fiber_length": 0.4441,
                               "transition_norm_fiber_length": 0.73,
                               "max_norm_active_fiber_length": 1.8123,
                               "shallow_ascending_slope": 0.8616, "minimum_value": 0.1},
    "FiberForceLengthCurve": {"strain_at_zero_force": 0.0, "strain_at_one_norm_force": 0.7,
                              "stiffness_at_low_force": None, "stiffness_at_one_norm_force": None,
                              "curviness": None},
    "ForceVelocityCurve": {"concentric_slope_at_vmax": 0.0, "concentric_slope_near_vmax": 0.25,
                           "isometric_slope": 5.0, "eccentric_slope_at_vmax": 0.0,
                           "eccentric_slope_near_vmax": 0.15,
                           "max_eccentric_velocity_force_multiplier": 1.4,
                           "concentric_curviness": 0.6, "eccentric_curviness": 0.9},
}


def _corner(x0, y0, dydx0, x1, y1, dydx1, curviness):
    """Control points (x (6,), y (6,)) of a quintic Bézier 'corner' from (x0, y0) with slope
    dydx0 to (x1, y1) with slope dydx1: the two inner pairs sit at ``curviness`` of the way
    towards the intersection of the end tangents."""
    if abs(dydx0 - dydx1) > np.sqrt(np.finfo(float).eps):
        xc = (y1 - y0 - x1 * dydx1 + x0 * dydx0) / (dydx0 - dydx1)
    else:
        xc = 0.5 * (x0 + x1)
    yc = (xc - x1) * dydx1 + y1
    xm0, ym0 = x0 + curviness * (xc - x0), y0 + curviness * (yc - y0)
    xm1, ym1 = x1 + curviness * (xc - x1), y1 + curviness * (yc - y1)
    return (np.array([x0, xm0, xm0, xm1, xm1, x1]), np.array([y0, ym0, ym0, ym1, ym1, y1]))


_BINOM = np.array([1.0, 5.0, 10.0, 10.0, 5.0, 1.0])
_BINOM4 = np.array([1.0, 4.0, 6.0, 4.0, 1.0])


# Bernstein → power basis of a quintic: the coefficient of u^k is sum_i _POWER[k, i] P_i
_POWER = np.array([[(-1.0) ** (k - i) * comb(5, i) * comb(5 - i, k - i) if i <= k else 0.0
                    for i in range(6)] for k in range(6)])


def _horner(c, u):
    """sum_k c[k] u^k (c (n, ...) power-basis coefficients, u (...))."""
    out = c[-1]
    for k in range(c.shape[0] - 2, -1, -1):
        out = out * u + c[k]
    return out


def _powers(u):
    """(u^0 ... u^5, (1 − u)^0 ... (1 − u)^5) for the Bernstein bases at u (...)."""
    t = 1.0 - u
    up, tp = [None, u], [None, t]
    for _ in range(4):
        up.append(up[-1] * u)
        tp.append(tp[-1] * t)
    return up, tp


def _bernstein_sum(pw, P):
    """sum_k C(n, k) u^k (1 − u)^(n−k) P[k] (P (n + 1, ...), n = 5 or 4; ``pw`` =
    :func:`_powers` of u), without forming the basis."""
    up, tp = pw
    n = P.shape[0] - 1
    binom = _BINOM if n == 5 else _BINOM4
    out = tp[n] * P[0] + up[n] * P[n]
    for k in range(1, n):
        out = out + binom[k] * (up[k] * tp[n - k]) * P[k]
    return out


class MuscleCurve:
    """A smooth segmented curve of quintic Bézier corners (OpenSim's SmoothSegmentedFunction),
    extended linearly beyond its end points.

    ``value(x)`` and ``derivative(x)`` are vectorized over any shape of ``x``. The Bézier
    parameter u of ``x`` on its segment (x(u) = x, x increasing in u on [0, 1]) is found, as
    OpenSim's SmoothSegmentedFunction does, by Newton's method, here safeguarded by bisection
    (a step leaving the bracket [lo, hi] of the root bisects it) and run to machine precision
    on all points at once: the u of a bisection to machine precision, in about 6 iterations
    instead of 60 (x(u) − x(0) in the Bernstein basis, so that u is accurate relative to its
    size near a segment's start).
    """

    def __init__(self, segments, x0, x1, y0, y1, dydx0, dydx1):
        self.X = np.array([s[0] for s in segments])
        self.Y = np.array([s[1] for s in segments])
        self.x0, self.x1, self.y0, self.y1 = x0, x1, y0, y1
        self.dydx0, self.dydx1 = dydx0, dydx1
        self._dX = self.X - self.X[:, :1]                  # control points of x(u) − x(0)
        self._dXdu = 5.0 * np.diff(self.X, axis=1)         # of x'(u)
        self._dYdu = 5.0 * np.diff(self.Y, axis=1)         # of y'(u)
        self._cx = self._dX @ _POWER.T                      # x(u) − x(0) in the power basis
        self._dcx = self._cx[:, 1:] * np.arange(1.0, 6.0)

    def _u(self, x):
        """(segment index, Bézier parameter u, :func:`_powers` of u) of abscissae
        ``x`` (any shape); points outside [x0, x1] (and NaN) get u at the nearer end of the
        first / last segment (their value is the linear extension)."""
        x = np.asarray(x, float)
        ends = self.X[:, 5]
        j = np.clip(np.searchsorted(ends, x, side="left"), 0, len(ends) - 1)
        start, width = self.X[j, 0], self.X[j, 5] - self.X[j, 0]
        r = np.clip(np.nan_to_num(x - start, nan=0.0), 0.0, width)   # target of x(u) − x(0)
        c, dc = self._cx.T[:, j], self._dcx.T[:, j]      # (6, ...), (5, ...): rows contiguous
        lo, hi = np.zeros_like(r), np.ones_like(r)
        u = r / width
        for _ in range(100):            # Newton in the power basis (cheap), bracketed
            f = _horner(c, u) - r
            below = f < 0.0
            lo = np.where(below, u, lo)
            hi = np.where(below, hi, u)
            un = u - f / _horner(dc, u)
            bad = ~((un >= lo) & (un <= hi))           # out of the bracket (or f' = 0): bisect
            if bad.any():
                un = np.where(bad, 0.5 * (lo + hi), un)
            step = np.abs(un - u).max(initial=0.0)
            u = un
            if step <= 1e-12:
                break
        # one Newton step in the Bernstein basis: u to its rounding (the power basis loses
        # up to ~1e-14 to cancellation)
        pw = _powers(u)
        u = np.clip(u - (_bernstein_sum(pw, self._dX.T[:, j]) - r) / _bernstein_sum(pw, self._dXdu.T[:, j]),
                    0.0, 1.0)
        return j, u, _powers(u)

    def _value_at(self, x, j, pw):
        y = _bernstein_sum(pw, self.Y.T[:, j])
        y = np.where(x <= self.x0, self.y0 + self.dydx0 * (x - self.x0), y)
        return np.where(x >= self.x1, self.y1 + self.dydx1 * (x - self.x1), y)

    def _derivative_at(self, x, j, pw):
        d = _bernstein_sum(pw, self._dYdu.T[:, j]) / _bernstein_sum(pw, self._dXdu.T[:, j])
        d = np.where(x <= self.x0, self.dydx0, d)
        return np.where(x >= self.x1, self.dydx1, d)

    def value(self, x):
        x = np.asarray(x, float)
        j, u, pw = self._u(x)
        return self._value_at(x, j, pw)

    def value_and_derivative(self, x):
        """(value(x), derivative(x)) with the curve parameter found once: the same numbers as
        :meth:`value` and :meth:`derivative`."""
        x = np.asarray(x, float)
        j, u, pw = self._u(x)
        return self._value_at(x, j, pw), self._derivative_at(x, j, pw)

    def derivative(self, x):
        x = np.asarray(x, float)
        j, u, pw = self._u(x)
        return self._derivative_at(x, j, pw)


def _scale_curviness(c):
    return 0.1 + 0.8 * c


def millard_active_force_length_curve(min_norm_active_fiber_length=0.4441,
                                      transition_norm_fiber_length=0.73,
                                      max_norm_active_fiber_length=1.8123,
                                      shallow_ascending_slope=0.8616, minimum_value=0.1):
    """OpenSim's ActiveForceLengthCurve (five Bézier corners, curviness 1)."""
    x0, x1, x2, x3 = (min_norm_active_fiber_length, transition_norm_fiber_length, 1.0,
                      max_norm_active_fiber_length)
    ylow, dydx = minimum_value, shallow_ascending_slope
    c = _scale_curviness(1.0)
    xd = 0.05 * x2
    xs = x2 - xd
    y1 = 1 - dydx * (xs - x1)
    dydx01 = 1.25 * y1 / (x1 - x0)
    x01, y01 = x0 + 0.5 * (x1 - x0), 0.5 * y1
    x1s, y1s = x1 + 0.5 * (xs - x1), y1 + 0.5 * (1 - y1)
    x23 = (x2 + xd) + 0.5 * (x3 - (x2 + xd))
    y23 = 0.5
    dydx23 = -1.0 / ((x3 - xd) - (x2 + xd))
    segs = [_corner(x0, ylow, 0.0, x01, y01, dydx01, c),
            _corner(x01, y01, dydx01, x1s, y1s, dydx, c),
            _corner(x1s, y1s, dydx, x2, 1.0, 0.0, c),
            _corner(x2, 1.0, 0.0, x23, y23, dydx23, c),
            _corner(x23, y23, dydx23, x3, ylow, 0.0, c)]
    return MuscleCurve(segs, x0, x3, ylow, ylow, 0.0, 0.0)


def millard_fiber_force_length_curve(strain_at_zero_force=0.0, strain_at_one_norm_force=0.7,
                                     stiffness_at_low_force=None,
                                     stiffness_at_one_norm_force=None, curviness=None):
    """OpenSim's FiberForceLengthCurve (passive); optional parameters default as OpenSim
    computes them: k_iso = 2/(e_iso - e_0), k_low = 0.2, curviness 0.75."""
    e0, e1 = strain_at_zero_force, strain_at_one_norm_force
    k_iso = 2.0 / (e1 - e0) if stiffness_at_one_norm_force is None else stiffness_at_one_norm_force
    k_low = 0.2 if stiffness_at_low_force is None else stiffness_at_low_force
    c = _scale_curviness(0.75 if curviness is None else curviness)
    x_zero, x_iso = 1 + e0, 1 + e1
    dx = min(0.1 / k_iso, 0.1 * (x_iso - x_zero))
    x_low = x_zero + dx
    x_foot = x_zero + 0.5 * (x_low - x_zero)
    y_low = k_low * (x_low - x_foot)
    segs = [_corner(x_zero, 0.0, 0.0, x_low, y_low, k_low, c),
            _corner(x_low, y_low, k_low, x_iso, 1.0, k_iso, c)]
    return MuscleCurve(segs, x_zero, x_iso, 0.0, 1.0, 0.0, k_iso)


def millard_force_velocity_curve(concentric_slope_at_vmax=0.0, concentric_slope_near_vmax=0.25,
                                 isometric_slope=5.0, eccentric_slope_at_vmax=0.0,
                                 eccentric_slope_near_vmax=0.15,
                                 max_eccentric_velocity_force_multiplier=1.4,
                                 concentric_curviness=0.6, eccentric_curviness=0.9):
    """OpenSim's ForceVelocityCurve (four Bézier corners through -1, -0.9, 0, 0.9, 1 max
    contraction velocities)."""
    fmax = max_eccentric_velocity_force_multiplier
    dC, dNC, dI = concentric_slope_at_vmax, concentric_slope_near_vmax, isometric_slope
    dE, dNE = eccentric_slope_at_vmax, eccentric_slope_near_vmax
    cC, cE = _scale_curviness(concentric_curviness), _scale_curviness(eccentric_curviness)
    xNC = -0.9
    yNC = 0.5 * dNC * (xNC + 1) + 0.5 * dC * (xNC + 1)
    xNE = 0.9
    yNE = fmax + 0.5 * dNE * (xNE - 1) + 0.5 * dE * (xNE - 1)
    segs = [_corner(-1.0, 0.0, dC, xNC, yNC, dNC, cC),
            _corner(xNC, yNC, dNC, 0.0, 1.0, dI, cC),
            _corner(0.0, 1.0, dI, xNE, yNE, dNE, cE),
            _corner(xNE, yNE, dNE, 1.0, fmax, dE, cE)]
    return MuscleCurve(segs, -1.0, 1.0, 0.0, fmax, dC, dE)


def millard_tendon_force_length_curve(strain_at_one_norm_force=0.049,
                                      stiffness_at_one_norm_force=None,
                                      norm_force_at_toe_end=None, curviness=None):
    """OpenSim's TendonForceLengthCurve: normalized tendon force (0 below the slack length)
    at normalized tendon length l_T / l_s; two Bézier corners from (1, 0) through the toe to
    (x_toe, f_toe), linear with slope k_iso beyond. The three optional properties are all
    given or all absent (then OpenSim's fitted values k_iso = 1.375/e_iso, f_toe = 2/3,
    curviness 0.5; ``TendonForceLengthCurve::ensureCurveUpToDate``)."""
    e_iso = float(strain_at_one_norm_force)
    k_iso = 1.375 / e_iso if stiffness_at_one_norm_force is None else stiffness_at_one_norm_force
    f_toe = 2.0 / 3.0 if norm_force_at_toe_end is None else norm_force_at_toe_end
    c = _scale_curviness(0.5 if curviness is None else curviness)
    x_iso = 1.0 + e_iso
    x_toe = (f_toe - 1.0) / k_iso + x_iso
    x_foot = 1.0 + (x_toe - 1.0) / 10.0
    y_mid = 0.5 * f_toe
    x_mid = (y_mid - 1.0) / k_iso + x_iso
    dydx_mid = y_mid / (x_mid - x_foot)
    x_ctrl = x_foot + 0.5 * (x_mid - x_foot)
    y_ctrl = dydx_mid * (x_ctrl - x_foot)
    segs = [_corner(1.0, 0.0, 0.0, x_ctrl, y_ctrl, dydx_mid, c),
            _corner(x_ctrl, y_ctrl, dydx_mid, x_toe, f_toe, k_iso, c)]
    return MuscleCurve(segs, 1.0, x_toe, 0.0, f_toe, 0.0, k_iso)


def _curve_params(force, tag):
    """A Millard curve's properties of the muscle (OpenSim defaults where absent; a
    Millard2012AccelerationMuscle's active force-length curve goes down to 0, as that class
    constructs it)."""
    out = dict(MILLARD_DEFAULTS[tag])
    if tag == "ActiveForceLengthCurve" and getattr(force, "type", "") == "Millard2012AccelerationMuscle":
        out["minimum_value"] = 0.0
    own = getattr(force, tag, None) or {}
    for k in out:
        if own.get(k) is not None:
            out[k] = float(own[k])
    return out


def millard_curve_params(force) -> dict:
    """The properties of the three curves of a Millard2012 muscle (``force``) as OpenSim 4.6
    uses them: the muscle's own values, OpenSim's defaults where absent, then adjusted as
    ``Millard2012EquilibriumMuscle::extendFinalizeFromProperties`` adjusts them. With an
    elastic tendon and no fibre damping (``fiber_damping`` < 0.001, the classic Hill model)
    the active force-length ``minimum_value`` is raised to at least 0.1 and the force-velocity
    slopes at vmax to at least half the slopes near vmax; otherwise (damped model, the default
    ``fiber_damping`` 0.1, or a rigid tendon) ``minimum_value`` and the slopes at vmax are
    lowered to 0. So the ``<minimum_value>0.1</minimum_value>`` of Tug_of_War_Millard.osim is
    0 in OpenSim.

    Returns {"ActiveForceLengthCurve": {...}, "FiberForceLengthCurve": {...},
    "ForceVelocityCurve": {...}}.
    """
    afl = _curve_params(force, "ActiveForceLengthCurve")
    fpe = _curve_params(force, "FiberForceLengthCurve")
    fv = _curve_params(force, "ForceVelocityCurve")
    damping = muscle_property(force, "fiber_damping", 0.1)
    rigid = muscle_property(force, "ignore_tendon_compliance", False)
    if not rigid and damping < 0.001:                 # classic Hill model, elastic tendon
        afl["minimum_value"] = max(afl["minimum_value"], 0.1)
        fv["concentric_slope_at_vmax"] = max(fv["concentric_slope_at_vmax"],
                                             0.5 * fv["concentric_slope_near_vmax"])
        fv["eccentric_slope_at_vmax"] = max(fv["eccentric_slope_at_vmax"],
                                            0.5 * fv["eccentric_slope_near_vmax"])
    else:                                             # damped model (or rigid tendon)
        afl["minimum_value"] = min(afl["minimum_value"], 0.0)
        fv["concentric_slope_at_vmax"] = min(fv["concentric_slope_at_vmax"], 0.0)
        fv["eccentric_slope_at_vmax"] = min(fv["eccentric_slope_at_vmax"], 0.0)
    return {"ActiveForceLengthCurve": afl, "FiberForceLengthCurve": fpe, "ForceVelocityCurve": fv}


def millard_curves(model, name):
    """(active force-length, passive force-length, force-velocity) :class:`MuscleCurve` of a
    Millard2012EquilibriumMuscle, with the muscle's own curve properties as OpenSim 4.6
    finalizes them (:func:`millard_curve_params`)."""
    p = millard_curve_params(model.forces[name])
    return (millard_active_force_length_curve(**p["ActiveForceLengthCurve"]),
            millard_fiber_force_length_curve(**p["FiberForceLengthCurve"]),
            millard_force_velocity_curve(**p["ForceVelocityCurve"]))


# ------------------------------------------------------------------------------ DeGrooteFregly2016
# The curve constants of OpenSim 4.6's DeGrooteFregly2016Muscle (De Groote et al. 2016, with
# OpenSim's adjustments: f_L(1) = 1, f_V(-1) = 0 and f_V(0) = 1, the passive curve 0 at the
# minimum normalized fiber length 0.2).
_DG_ACTIVE = ((0.8150671134243542, 1.055033428970575, 0.162384573599574, 0.063303448465465),
              (0.433004984392647, 0.716775413397760, -0.029947116970696, 0.200356847296188),
              (0.1, 1.0, 0.353553390593274, 0.0))
_DG_KPE = 4.0
_DG_MIN_NORM_FIBER_LENGTH = 0.2
_DG_FV = (-0.3211346127989808, -8.149, -0.374, 0.8825327733249912)


def degroote_active_force_length(lce_norm, width_scale: float = 1.0):
    """Active force-length multiplier of DeGrooteFregly2016Muscle: the sum of three
    Gaussian-like terms ``b1 exp(-½ (x - b2)² / (b3 + b4 x)²)`` at ``x = (l̃ - 1)/s + 1``
    (``s`` = ``active_force_width_scale``). Shape of ``lce_norm``."""
    x = (np.asarray(lce_norm, float) - 1.0) / float(width_scale) + 1.0
    return sum(b1 * np.exp(-0.5 * (x - b2) ** 2 / (b3 + b4 * x) ** 2) for b1, b2, b3, b4 in _DG_ACTIVE)


def degroote_passive_force_length(lce_norm, strain_at_one_norm_force: float = 0.6):
    """Passive force-length multiplier of DeGrooteFregly2016Muscle,
    ``(exp(k (l̃ - 1)/e0) - c) / (exp(k) - c)``, k = 4, c = ``exp(k (0.2 - 1)/e0)`` (0 at
    l̃ = 0.2, negative below), e0 = ``passive_fiber_strain_at_one_norm_force``."""
    e0 = float(strain_at_one_norm_force)
    off = np.exp(_DG_KPE * (_DG_MIN_NORM_FIBER_LENGTH - 1.0) / e0)
    x = np.asarray(lce_norm, float)
    return (np.exp(_DG_KPE * (x - 1.0) / e0) - off) / (np.exp(_DG_KPE) - off)


def degroote_force_velocity(v_norm):
    """Force-velocity multiplier of DeGrooteFregly2016Muscle at normalized fiber velocity
    ``v_norm`` (in ``max_contraction_velocity`` × optimal fiber lengths per s; -1 → 0, 0 → 1):
    ``d1 asinh(d2 v + d3) + d4``."""
    d1, d2, d3, d4 = _DG_FV
    t = d2 * np.asarray(v_norm, float) + d3
    return d1 * np.log(t + np.sqrt(t * t + 1.0)) + d4


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


def muscle_property(force, tag, default, text=None):
    """A property of a force that the reader kept verbatim (``unmodelled_xml``, or ``text``):
    a float, a bool when ``default`` is a bool, or ``default`` when absent or written empty
    (``<curviness></curviness>``: unset in OpenSim, which then uses its default).

    Raises ModelFileError naming the force and the element when the value is not a number."""
    text = (getattr(force, "unmodelled_xml", "") or "") if text is None else text
    hit = re.search(rf"<{tag}>([^<]*)</{tag}>", text)
    v = hit.group(1).strip() if hit else ""
    if not v:
        return default
    if isinstance(default, bool):
        return v.lower() == "true"
    try:
        return float(v)
    except ValueError:
        raise ModelFileError(f"muscle '{force.name}': <{tag}> {v!r} is not a number") from None


def _value(force, name, default):
    v = getattr(force, name, None)
    return float(default if v is None else v)


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
                L[:, i], _value(f, "slack_length", np.nan), _value(f, "linear_stiffness", np.nan),
                _value(f, "transition_strain", 0.06), sp, _value(f, "damping_coefficient", 0.003))
        elif f.type == "Ligament":
            curve = getattr(f, "force_length_curve", None)
            if curve is None:
                raise UnsupportedFeature(f"Ligament '{n}' has no force_length_curve")
            out[:, i] = ligament_force(L[:, i], _value(f, "resting_length", np.nan),
                                       _value(f, "pcsa_force", np.nan), curve)
        elif f.type == "PathSpring":
            # OpenSim PathSpring::getTension: stretch (l − resting_length, 0 below it) ×
            # (1 + dissipation l̇) × stiffness
            stretch = np.maximum(L[:, i] - _value(f, "resting_length", np.nan), 0.0)
            sp = 0.0 if lengthening_speeds is None else np.atleast_2d(lengthening_speeds)[:, i]
            out[:, i] = (stretch * (1.0 + _value(f, "dissipation", np.nan) * sp)
                         * _value(f, "stiffness", np.nan))
        else:
            raise ModelFileError(f"force '{n}' ({f.type}) is not a ligament", model.source)
    return out
