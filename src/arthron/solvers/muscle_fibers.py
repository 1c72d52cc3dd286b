"""The fibre and tendon quantities OpenSim's MuscleAnalysis records, at the states an AnalyzeTool
visits: each muscle's default states (a coordinates file) or a states file's, frame by frame
(the same states as :mod:`arthron.solvers.muscle_states`).

OpenSim 4.6's ``MuscleAnalysis::record`` writes, per muscle, ``getFiberLength``,
``getNormalizedFiberLength``, ``getPennationAngle``, ``getTendonLength`` (the ``FiberLength``,
``NormalizedFiberLength``, ``PennationAngle``, ``TendonLength`` files), ``getActuation``
(``TendonForce``), ``getFiberForce``, ``getActiveFiberForce``, ``getPassiveFiberForce`` and
their ``...AlongTendon`` (× cos φ), the fibre velocities and powers, and, with
``compute_moments``, the moments ``moment arm × getActuation``. :func:`muscle_fibers` gives the
ones arthron reproduces exactly, per class (:data:`REPRODUCED`; the rest are missing from the
result, and the writer names them):

* every class of :data:`arthron.solvers.muscle_states.DEFAULT_STATE_TYPES` but
  Delp1990Muscle_Deprecated (OpenSim 4.6's AnalyzeTool writes NaN for it in every file but the
  lengths and moment arms): ``TendonForce`` (the force the muscle applies, ``getActuation``);
* ``Schutte1993Muscle_Deprecated``, ``Thelen2003Muscle_Deprecated``, at their default states
  (fiber length 0: the classes have no default-state property): fiber length, normalized fiber
  length and pennation 0 (``calcPennation`` of a zero fiber), tendon length the path's;
* ``RigidTendonMuscle``, every file but ``PennationAngularVelocity`` (NaN in OpenSim): the
  fiber along the tendon L − l_s (0 below), l_M = sqrt(that² + h²), cos φ = that / l_M (1
  unpennated), tendon l_s; fiber velocity L̇, activation the control (0): active force 0,
  passive F_iso f_PE (the file's curve, clamped to [0, 10]), along the tendon × cos φ; powers
  −passive L̇ (passive), 0 (active, tendon), −F L̇ (muscle);
* ``Thelen2003Muscle``, every file: fiber length l_M = the state (``default_fiber_length``)
  clamped at the pennation model's minimum h / sin φ_max as OpenSim clamps it (0 unpennated),
  pennation φ = asin(h / l_M) (fixed-width, h = l_opt sin φ_opt; φ_max where h / l_M ≥
  sin φ_max), tendon length L − l_M cos φ; tendon force F = F_iso f_se; fiber force F / cos φ
  (OpenSim's (a f_L f_V + f_PE) F_iso with f_V from the equilibrium), passive F_iso
  f_PE(l_M / l_opt) (Thelen 2003's exponential, ``KshapePassive``, ``FmaxMuscleStrain``),
  active the difference, along the tendon × cos φ; the fiber velocity from Thelen (2003)'s
  force-velocity relation inverted at a f_L f_V (:func:`thelen_fiber_velocity`), φ̇ =
  −(l̇_M / l_M) tan φ, l̇_T = L̇ − l̇_M cos φ + l_M sin φ φ̇; powers −active l̇_M, −passive
  l̇_M, −F l̇_T, −F L̇. Not its velocities at activation or f_L 0 (OpenSim throws);
* ``Millard2012EquilibriumMuscle``, every file: elastic tendon, l_M the state clamped at the
  minimum fiber length (as OpenSim clamps it), rigid tendon sqrt(h² + (L − l_s)²) clamped
  likewise; φ, the tendon length as above; velocities, forces and powers as OpenSim computes
  them (:func:`_millard_dynamics`);
* ``Millard2012AccelerationMuscle``, every file: l_M and l̇_M the states, φ = asin(h / l_M)
  (π/2 when l_M ≤ h), the tendon length, ``FiberVelocity`` l̇_M, ``NormFiberVelocity`` l̇_M /
  (l_opt v_max), ``PennationAngularVelocity`` −(l̇_M / l_M) tan φ; forces and powers with its
  compressive curves, damping and fiber mass
  (:func:`arthron.solvers.millard_acceleration.millard_acceleration_dynamics`; not where
  l_M ≤ h: OpenSim throws);
* ``DeGrooteFregly2016Muscle``, every file: elastic tendon, the tendon length from the
  normalized tendon force state through the inverse of the tendon curve OpenSim 4.6 uses
  (``calcTendonForceLengthInverseCurve``: l̃_T = ln((f̃_T + 0.2)/0.2)/k_T + 1,
  k_T = ln(6)/``tendon_strain_at_one_norm_force``; De Groote et al. (2016) print c2 = 0.995,
  c3 = 0.25), rigid tendon l_s; fiber length along the tendon L − l_T, l_M = sqrt(that² + h²),
  sin φ = h / l_M; velocities, forces and powers :func:`_degroote_dynamics`.

Sources: OpenSim 4.6 ``MuscleAnalysis::record``, ``Thelen2003Muscle``,
``Millard2012EquilibriumMuscle``, ``Millard2012AccelerationMuscle``,
``DeGrooteFregly2016Muscle`` (``calcMuscleLengthInfo``, ``calcFiberVelocityInfo``,
``calcMuscleDynamicsInfo``), ``MuscleFixedWidthPennationModel``; Thelen (2003) J Biomech Eng
125:70-77; Millard et al. (2013) J Biomech Eng 135:021005; De Groote et al. (2016) Ann Biomed
Eng 44:2922-2936.
"""
from __future__ import annotations

import numpy as np

from ..models.muscles import muscle_property as _xml_value
from ..models.muscles import (MuscleCurve, degroote_active_force_length, degroote_force_velocity,
                              degroote_passive_force_length, millard_active_force_length_curve,
                              millard_curve_params, millard_fiber_force_length_curve,
                              millard_force_velocity_curve, thelen_active_force_length,
                              thelen_passive_force_length)
from ..models.spline_muscles import rigid_tendon_fiber, rigid_tendon_multipliers
from .millard_acceleration import millard_acceleration_dynamics
from .muscle_states import (DEFAULT_STATE_TYPES, _acceleration_pennation, _default_fiber_length,
                            _maximum_pennation_angle, _millard_fiber_length, _state, _tendon_curve,
                            default_state_tensions)

__all__ = ["MUSCLE_ANALYSIS_FILES", "REPRODUCED", "muscle_fibers", "thelen_fiber_velocity"]

#: the per-muscle files of OpenSim 4.6's MuscleAnalysis besides Length and the moment arms
MUSCLE_ANALYSIS_FILES = ("FiberLength", "NormalizedFiberLength", "PennationAngle", "TendonLength",
                         "FiberVelocity", "NormFiberVelocity", "PennationAngularVelocity",
                         "TendonForce", "FiberForce", "ActiveFiberForce", "PassiveFiberForce",
                         "ActiveFiberForceAlongTendon", "PassiveFiberForceAlongTendon",
                         "FiberActivePower", "FiberPassivePower", "TendonPower",
                         "MuscleActuatorPower")

_LENGTHS = ("FiberLength", "NormalizedFiberLength", "PennationAngle", "TendonLength")
_FORCES = ("FiberForce", "ActiveFiberForce", "PassiveFiberForce", "ActiveFiberForceAlongTendon",
           "PassiveFiberForceAlongTendon")
#: the quantities :func:`muscle_fibers` reproduces per class (module docstring)
REPRODUCED = {
    "Thelen2003Muscle": MUSCLE_ANALYSIS_FILES,
    "Millard2012EquilibriumMuscle": MUSCLE_ANALYSIS_FILES,
    "Millard2012AccelerationMuscle": MUSCLE_ANALYSIS_FILES,
    "DeGrooteFregly2016Muscle": MUSCLE_ANALYSIS_FILES,
    "Schutte1993Muscle_Deprecated": _LENGTHS + ("TendonForce",),
    "Thelen2003Muscle_Deprecated": _LENGTHS + ("TendonForce",),
    "RigidTendonMuscle": tuple(k for k in MUSCLE_ANALYSIS_FILES if k != "PennationAngularVelocity"),
}
_EPS = np.finfo(float).eps


def _fixed_width_angle(lce, h, pmax):
    """OpenSim's ``MuscleFixedWidthPennationModel::calcPennationAngle``: asin(h / l_M), the
    maximum angle where h / l_M ≥ sin φ_max or l_M ≤ the minimum fiber length."""
    lmin = max(h / np.sin(pmax), 1e-14)
    s = np.divide(h, lce, out=np.full(np.shape(lce), np.inf), where=lce > 0)
    ok = (lce > lmin) & (s < np.sin(pmax))
    return np.where(ok, np.arcsin(np.minimum(s, 1.0)), pmax)


def thelen_fiber_velocity(m, a, fal, afalfv) -> np.ndarray:
    """Normalized fiber velocity (l_opt v_max per s) of Thelen2003Muscle ``m`` at activation
    ``a``, active force-length multiplier ``fal`` and normalized force ``afalfv`` = a f_L f_V
    (T,): Thelen (2003) Eqs. 6-7 inverted, linearly extrapolated below 0 and above
    ``fv_linear_extrap_threshold`` (0.95) × a f_L ``Flen`` (OpenSim 4.6
    ``Thelen2003Muscle::calcdlceN``)."""
    af, flen = float(m.Af), float(m.Flen)
    thresh = _xml_value(m, "fv_linear_extrap_threshold", 0.95)
    afl = a * fal
    k = 0.25 + 0.75 * a

    def b_db(f):
        conc = f <= afl
        b = np.where(conc, afl + f / af, (2 + 2 / af) * (afl * flen - f) / (flen - 1))
        db = np.where(conc, 1 / af, (2 + 2 / af) * -1.0 / (flen - 1))
        return b, db
    inside = (afalfv > 0) & (afalfv < afl * flen * thresh)
    b, _ = b_db(afalfv)
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = k * (afalfv - afl) / b
    f0 = np.where(afalfv <= 0, 0.0, thresh * afl * flen)
    b0, db0 = b_db(f0)
    slope = k / b0 - (k * (f0 - afl) / (b0 * b0)) * db0
    extrap = k * (f0 - afl) / b0 + slope * (afalfv - f0)
    return np.where(inside, direct, extrap)


def _fv_inverse_curve(params):
    """Millard2012EquilibriumMuscle's ``fvInvCurve``: OpenSim 4.6's ForceVelocityInverseCurve
    of the muscle's ForceVelocityCurve properties with the slopes at ±v_max half the slopes
    near v_max (``extendFinalizeFromProperties``): the force-velocity Bézier corners with x
    and y swapped, extended linearly with the inverse end slopes (equal to OpenSim's
    ``calcValue`` to 1e-14)."""
    p = dict(params, concentric_slope_at_vmax=0.5 * params["concentric_slope_near_vmax"],
             eccentric_slope_at_vmax=0.5 * params["eccentric_slope_near_vmax"])
    c = millard_force_velocity_curve(**p)
    return MuscleCurve(list(zip(c.Y, c.X)), c.y0, c.y1, c.x0, c.x1, 1.0 / c.dydx0, 1.0 / c.dydx1)


def _damped_fiber_velocity(curve, inverse, fiso, a, fal, fpe, fse, beta, cos):
    """Normalized fiber velocity (T,) of an elastic-tendon Millard2012EquilibriumMuscle with
    fiber damping β > 0, as OpenSim 4.6's ``calcDampedNormFiberVelocity`` iterates it: from the
    inverse of the force-velocity curve at (f_T/cos φ − f_PE)/(a f_L) (a, f_L, cos φ at least
    0.01; clipped to ±1), Newton steps on F_iso (a f_L f_V(ṽ) + f_PE + β ṽ) cos φ − F_iso f_T
    while it exceeds 1e-10 F_iso N, at most 20. NaN where it does not converge (OpenSim then
    throws)."""
    tol = max(1e-10 * fiso, 1e-14 * 100)
    fv0 = (fse / np.maximum(cos, 0.01) - fpe) / (np.maximum(a, 0.01) * np.maximum(fal, 0.01))
    v = np.clip(inverse.value(fv0), -1.0, 1.0)
    a, fal, fpe, fse, cos = (np.broadcast_to(x, v.shape) for x in (a, fal, fpe, fse, cos))
    err = np.full_like(v, np.inf)
    for _ in range(20):
        i = np.flatnonzero(np.abs(err) > tol)      # the frames still iterating
        if not i.size:
            break
        fv, dfv = curve.value_and_derivative(v[i])
        fm = fiso * (a[i] * fal[i] * fv) + (fiso * fpe[i] + fiso * beta * v[i])
        err[i] = fm * cos[i] - fse[i] * fiso
        go = np.abs(err[i]) > tol
        derr = fiso * (a[i] * fal[i] * dfv + beta) * cos[i]
        v[i] = np.where(go, v[i] - err[i] / np.where(go, derr, 1.0), v[i])
    return np.where(np.abs(err) <= tol, v, np.nan)


def _millard_dynamics(m, states, lce, phi, L, V, lmin) -> dict:
    """The velocity, force and power records of a Millard2012EquilibriumMuscle at fiber length
    ``lce`` (T,) (clamped), pennation ``phi``, path length ``L`` and speed ``V`` (OpenSim 4.6
    ``calcFiberVelocityInfo``, ``calcMuscleDynamicsInfo``): the rigid tendon's fiber velocity
    from the path (0 when the tendon buckles), the elastic tendon's from the damped force
    equilibrium a f_L f_V(ṽ) + f_PE + β ṽ = f_T / cos φ; a clamped fiber (at its minimum
    length and shortening) has velocity 0 and no fiber force; without damping the elastic
    tendon's velocity is the inverse force-velocity curve (:func:`_fv_inverse_curve`) at
    (f_T / cos φ − f_PE)/(a f_L). {} (not reproduced) where OpenSim's Newton iteration does not
    converge (:func:`_damped_fiber_velocity`) or a f_L is 0 without damping (OpenSim throws)."""
    T = len(lce)
    lopt, ls = float(m.optimal_fiber_length), float(m.tendon_slack_length)
    fiso, vmax = float(m.max_isometric_force), float(m.max_contraction_velocity)
    cp = millard_curve_params(m)
    lN = lce / lopt
    fal = millard_active_force_length_curve(**cp["ActiveForceLengthCurve"]).value(lN)
    fpe = millard_fiber_force_length_curve(**cp["FiberForceLengthCurve"]).value(lN)
    fvc = millard_force_velocity_curve(**cp["ForceVelocityCurve"])
    beta = _xml_value(m, "fiber_damping", 0.1)
    if _xml_value(m, "ignore_activation_dynamics", False):
        a = np.zeros(T)
    else:
        a = np.broadcast_to(_state(m, states, "activation", _xml_value(m, "default_activation", 0.05)), (T,))
    a = np.clip(a, _xml_value(m, "minimum_activation", 0.01), 1.0)
    cos, sin = np.cos(phi), np.sin(phi)
    lt = L - lce * cos
    rigid = _xml_value(m, "ignore_tendon_compliance", False)
    if rigid:
        dlce = np.where(lt < ls - 1e-14 * 100, 0.0, V * cos)       # SimTK::SignificantReal
        vN = dlce / (lopt * vmax)
    else:
        fse = _tendon_curve(m).value(lt / ls)
        inverse = _fv_inverse_curve(cp["ForceVelocityCurve"])
        if beta < 1e-14 * 100:                    # no damping: the inverse curve at the equilibrium's f_V
            if not ((a * fal > 1e-14 * 100) & (cos > 1e-14 * 100)).all():
                return {}                         # (OpenSim throws: a singularity)
            vN = inverse.value((fse / cos - fpe) / (a * fal))
        else:
            vN = _damped_fiber_velocity(fvc, inverse, fiso, a, fal, fpe, fse, beta, cos)
        if not np.isfinite(vN).all():
            return {}
        dlce = vN * lopt * vmax
    dphi = -(dlce / lce) * np.tan(phi)
    dtl = np.zeros(T) if rigid else V - dlce * cos + lce * sin * dphi
    clamped = ((lce <= lmin) & (dlce <= 0)) | (lce < lmin)
    dlce, vN, dphi = (np.where(clamped, 0.0, x) for x in (dlce, vN, dphi))
    dtl = np.where(clamped, V, dtl)
    fa = fiso * a * fal * fvc.value(vN)
    p1, p2 = fiso * fpe, fiso * beta * vN
    fm = fa + p1 + p2
    if rigid:
        neg = fm < 0
        fm, p2 = np.where(neg, 0.0, fm), np.where(neg, -fa - p1, p2)
    fa, p1, p2, fm = (np.where(clamped, 0.0, x) for x in (fa, p1, p2, fm))
    ft = fm * cos if rigid else fiso * fse
    return dict(FiberVelocity=dlce, NormFiberVelocity=vN, PennationAngularVelocity=dphi,
                FiberForce=fm, ActiveFiberForce=fa, PassiveFiberForce=p1 + p2,
                ActiveFiberForceAlongTendon=fa * cos, PassiveFiberForceAlongTendon=(p1 + p2) * cos,
                FiberActivePower=-(fa + p2) * dlce, FiberPassivePower=-p1 * dlce,
                TendonPower=-ft * dtl, MuscleActuatorPower=-ft * V)


def _degroote_dynamics(m, states, lce, along, h, V) -> dict:
    """The velocity, force and power records of a DeGrooteFregly2016Muscle (OpenSim 4.6
    ``calcFiberVelocityInfoHelper``, ``calcMuscleDynamicsInfoHelper``, explicit tendon
    dynamics) at fiber length ``lce`` (T,), fiber length along the tendon ``along``, width
    ``h``, path speed ``V``: elastic tendon, f_V = (f̃_T / cos φ − f_PE)/(a f_L) and the
    fiber velocity its analytic inverse (sinh((f_V − d4)/d1) − d3)/d2 (De Groote et al. 2016
    with OpenSim's d1, d4), the velocity along the tendon l̇_M / cos φ; rigid tendon, l̇_M =
    L̇ cos φ. Forces F_iso a f_L f_V (active), F_iso f_PE + F_iso β ṽ (passive; ``fiber_damping``
    β), powers −(active + damping) l̇_M, −F_iso f_PE l̇_M, −F_T l̇_T, −F_T L̇. {} (not
    reproduced) for an elastic tendon at a f_L = 0 (OpenSim divides by it) or in implicit
    tendon dynamics mode."""
    T = len(lce)
    lopt = float(m.optimal_fiber_length)
    fiso, vmax = float(m.max_isometric_force), float(m.max_contraction_velocity) * lopt
    lN = lce / lopt
    cos = along / lce
    fal = degroote_active_force_length(lN, _xml_value(m, "active_force_width_scale", 1.0))
    fpe = np.zeros(T) if _xml_value(m, "ignore_passive_fiber_force", False) else degroote_passive_force_length(
        lN, _xml_value(m, "passive_fiber_strain_at_one_norm_force", 0.6))
    beta = _xml_value(m, "fiber_damping", 0.0)
    if _xml_value(m, "ignore_activation_dynamics", False):
        a = np.zeros(T)                          # the control: 0 in the AnalyzeTool
    else:
        a = np.broadcast_to(_state(m, states, "activation", _xml_value(m, "default_activation", 0.5)), (T,))
    if _xml_value(m, "ignore_tendon_compliance", False):
        dlce = V * cos
        vN = dlce / vmax
        fv = degroote_force_velocity(vN)
        vt = np.zeros(T)
        ntf = None
    else:
        mode = getattr(m, "unmodelled_xml", "") or ""
        if "<tendon_compliance_dynamics_mode>implicit" in mode.replace(" ", ""):
            return {}
        if not (np.abs(a * fal) > 0).all():
            return {}
        ntf = np.broadcast_to(_state(m, states, "normalized_tendon_force",
                                     _xml_value(m, "default_normalized_tendon_force", 0.5)), (T,))
        fv = (ntf / cos - fpe) / (a * fal)
        d1, d2, d3, d4 = -0.3211346127989808, -8.149, -0.374, 0.8825327733249912
        vN = (np.sinh((fv - d4) / d1) - d3) / d2
        dlce = vN * vmax
        vt = V - dlce / cos
    fa, p1, p2 = fiso * a * fal * fv, fiso * fpe, fiso * beta * vN
    fm = fa + p1 + p2
    ft = fm * cos if ntf is None else fiso * ntf
    return dict(FiberVelocity=dlce, NormFiberVelocity=vN, PennationAngularVelocity=-dlce / lce * (h / along),
                FiberForce=fm, ActiveFiberForce=fa, PassiveFiberForce=p1 + p2,
                ActiveFiberForceAlongTendon=fa * cos, PassiveFiberForceAlongTendon=(p1 + p2) * cos,
                FiberActivePower=-(fa + p2) * dlce, FiberPassivePower=-p1 * dlce,
                TendonPower=-ft * vt, MuscleActuatorPower=-ft * V)


def muscle_fibers(muscles, lengths, speeds=None, default_fiber_lengths=None, states=None) -> tuple:
    """The MuscleAnalysis quantities arthron reproduces for ``muscles`` (typed muscles) at path
    lengths ``lengths`` (T, m) m and lengthening speeds ``speeds`` (T, m) m/s (None: 0), at their
    default states or the per-frame ``states`` ({muscle: {state: (T,)}}), with
    ``default_fiber_lengths`` as :func:`arthron.solvers.muscle_states.default_state_tensions`.

    Returns
    -------
    (values, reproduced): values {file name: (T, m) array} (NaN for the muscles not
    reproduced); reproduced {file name: (m,) bool}: which muscles' columns are OpenSim's
    (m, rad, m/s, rad/s, N, W as OpenSim records them; module docstring).
    """
    L = np.atleast_2d(np.asarray(lengths, float))
    T, nm = L.shape
    V = np.zeros_like(L) if speeds is None else np.broadcast_to(np.atleast_2d(np.asarray(speeds, float)), L.shape)
    values = {k: np.full((T, nm), np.nan) for k in MUSCLE_ANALYSIS_FILES}
    have = {k: np.zeros(nm, bool) for k in MUSCLE_ANALYSIS_FILES}
    given = default_fiber_lengths or {}
    idx = [k for k, m in enumerate(muscles) if m.type in DEFAULT_STATE_TYPES]
    if idx:
        values["TendonForce"][:, idx] = default_state_tensions([muscles[k] for k in idx], L[:, idx], V[:, idx],
                                                               default_fiber_lengths, states)
    for k, m in enumerate(muscles):
        if m.type not in REPRODUCED or (m.type.endswith("_Deprecated") and states and states.get(m.name)):
            continue
        got = {"TendonForce": values["TendonForce"][:, k]}
        lopt, ls = float(m.optimal_fiber_length), float(m.tendon_slack_length)
        popt = float(getattr(m, "pennation_angle_at_optimal", 0.0) or 0.0)
        h = lopt * np.sin(popt)
        lk = L[:, k]
        if m.type == "Thelen2003Muscle":
            pmax = _maximum_pennation_angle(m, given)
            lce = np.maximum(np.broadcast_to(_state(m, states, "fiber_length", _default_fiber_length(m, given)),
                                             (T,)), h / np.sin(pmax))   # clamped as OpenSim clamps it
            phi = _fixed_width_angle(lce, h, pmax) if popt > _EPS else np.zeros(T)
            cos = np.cos(phi)
            fiso = float(m.max_isometric_force)
            ft = got["TendonForce"]
            fpe = fiso * thelen_passive_force_length(
                lce / lopt, float(m.KshapePassive),
                float(m.FmaxMuscleStrain))
            fm = ft / cos
            got.update(FiberForce=fm, ActiveFiberForce=fm - fpe, PassiveFiberForce=fpe,
                       ActiveFiberForceAlongTendon=(fm - fpe) * cos, PassiveFiberForceAlongTendon=fpe * cos,
                       MuscleActuatorPower=-ft * V[:, k])
            a = np.broadcast_to(_state(m, states, "activation", _xml_value(m, "default_activation", 0.05)), (T,))
            fal = thelen_active_force_length(lce / lopt, float(m.KshapeActive))
            if (a > _EPS).all() and (fal > _EPS).all():          # else OpenSim's velocities throw
                dlce = thelen_fiber_velocity(m, a, fal, (fm - fpe) / fiso) * float(m.max_contraction_velocity) * lopt
                dphi = -(dlce / lce) * np.tan(phi) if popt > _EPS else np.zeros(T)
                dtl = V[:, k] - dlce * cos + lce * np.sin(phi) * dphi
                got.update(FiberVelocity=dlce, NormFiberVelocity=dlce / (float(m.max_contraction_velocity) * lopt),
                           PennationAngularVelocity=dphi, FiberActivePower=-(fm - fpe) * dlce,
                           FiberPassivePower=-fpe * dlce, TendonPower=-ft * dtl)
        elif m.type == "Millard2012EquilibriumMuscle":
            pmax = _maximum_pennation_angle(m, given)
            lce, lmin = _millard_fiber_length(m, millard_curve_params(m), given, states, lk)
            phi = _fixed_width_angle(lce, h, pmax) if popt > _EPS else np.zeros(T)
            got.update(_millard_dynamics(m, states, lce, phi, lk, V[:, k], lmin))
        elif m.type == "Millard2012AccelerationMuscle":
            lce = np.broadcast_to(_state(m, states, "fiber_length", _default_fiber_length(m, given)), (T,))
            dlce = np.broadcast_to(_state(m, states, "fiber_velocity",
                                          _xml_value(m, "default_fiber_velocity", 0.0)), (T,))
            phi = _acceleration_pennation(lce, h) if popt > _EPS else np.zeros(T)
            got.update(FiberVelocity=dlce, NormFiberVelocity=dlce / (lopt * float(m.max_contraction_velocity)),
                       PennationAngularVelocity=-(dlce / lce) * np.tan(phi))
            a = _state(m, states, "activation", _xml_value(m, "default_activation", 0.0))
            dyn = millard_acceleration_dynamics(m, a, lce, dlce, lk, V[:, k])
            dyn.pop("TendonForce", None)         # the force of muscle_states, the same
            got.update(dyn)
        elif m.type == "DeGrooteFregly2016Muscle":
            if _xml_value(m, "ignore_tendon_compliance", False):
                lt = np.full(T, ls)
            else:
                ntf = np.broadcast_to(_state(m, states, "normalized_tendon_force",
                                             _xml_value(m, "default_normalized_tendon_force", 0.5)), (T,))
                kt = np.log((1.0 + 0.2) / 0.2) / _xml_value(m, "tendon_strain_at_one_norm_force", 0.049)
                lt = ls * (np.log((ntf + 0.2) / 0.2) / kt + 1.0)
            along = lk - lt
            lce = np.sqrt(along * along + h * h)
            phi = np.arcsin(h / lce)
            got.update(_degroote_dynamics(m, states, lce, along, h, V[:, k]))
        elif m.type == "RigidTendonMuscle":
            ln, cos, vN = rigid_tendon_fiber(m, lk, V[:, k])
            lce, phi, lt = ln * lopt, np.arccos(np.clip(cos, -1.0, 1.0)), np.full(T, ls)
            fp = float(m.max_isometric_force) * rigid_tendon_multipliers(m, lk, V[:, k])[1]
            zero = np.zeros(T)                   # activation = the control: 0 in the AnalyzeTool
            got.update(FiberVelocity=V[:, k], NormFiberVelocity=vN, FiberForce=fp, ActiveFiberForce=zero,
                       PassiveFiberForce=fp, ActiveFiberForceAlongTendon=zero,
                       PassiveFiberForceAlongTendon=fp * cos, FiberActivePower=zero,
                       FiberPassivePower=-fp * V[:, k], TendonPower=zero,
                       MuscleActuatorPower=-got["TendonForce"] * V[:, k])
        else:                                    # Schutte1993, Thelen2003 deprecated: fiber length 0
            lce = phi = np.zeros(T)              # (ActivationFiberLengthMuscle_Deprecated::calcPennation: 0)
        if m.type not in ("DeGrooteFregly2016Muscle", "RigidTendonMuscle"):
            lt = lk - lce * np.cos(phi)
        got.update(FiberLength=lce, NormalizedFiberLength=lce / lopt, PennationAngle=phi, TendonLength=lt)
        for name, v in got.items():
            values[name][:, k], have[name][k] = v, True
    return values, have
