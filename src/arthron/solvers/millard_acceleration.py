"""The force and power records of a Millard2012AccelerationMuscle at given states, as OpenSim 4.6
computes them (``Millard2012AccelerationMuscle::calcMuscleLengthInfo``,
``calcFiberVelocityInfo``, ``calcAccelerationMuscleInfo``, ``calcMuscleDynamicsInfo``;
``MuscleFixedWidthPennationModel``; Millard et al. (2013) J Biomech Eng 135:021005).

The muscle has a fiber mass: its states are activation a, fiber length l_M and fiber velocity
l̇_M. Besides the active force-length, force-velocity, passive fiber and tendon curves it has two
compressive curves that keep the fiber from collapsing (:func:`fiber_compressive_force_length_curve`,
:func:`fiber_compressive_force_cos_pennation_curve`) and Hunt-Crossley damping on every elastic
element. Its records (:func:`millard_acceleration_dynamics`) are the fiber force, its active and
passive parts, the tendon force, and the powers of the active fiber, the passive fiber (with the
fiber mass' kinetic energy rate), the tendon and the whole muscle.
"""
from __future__ import annotations

import re

import numpy as np

from ..models.muscles import (MuscleCurve, _corner, _curve_params, _scale_curviness,
                              millard_active_force_length_curve, millard_fiber_force_length_curve,
                              millard_force_velocity_curve)
from ..models.muscles import muscle_property as _xml_value
from .muscle_states import _tendon_curve

__all__ = ["ACCELERATION_DEFAULTS", "fiber_compressive_force_length_curve",
           "fiber_compressive_force_cos_pennation_curve", "millard_acceleration_dynamics"]

#: OpenSim 4.6's defaults of the Millard2012AccelerationMuscle properties that OpenSim leaves out
#: of the file when they have them (``constructProperties``)
ACCELERATION_DEFAULTS = {"default_activation": 0.0, "default_fiber_velocity": 0.0,
                         "tendon_force_length_damping": 0.1,
                         "fiber_compressive_force_length_damping": 1.0,
                         "fiber_force_length_damping": 1e-2,
                         "fiber_compressive_force_cos_pennation_damping": 1.0,
                         "fiber_damping": 1e-2, "mass": 0.1}


def fiber_compressive_force_length_curve(norm_length_at_zero_force=0.5, stiffness_at_zero_length=None,
                                         curviness=None) -> MuscleCurve:
    """OpenSim's FiberCompressiveForceLengthCurve: normalized compressive force at normalized
    fiber length, one Bézier corner from (0, 1) with slope k to (l̃_max, 0) with slope 0, 0
    beyond l̃_max (``norm_length_at_zero_force``); unset, k = −2/l̃_max and curviness 0.5 (as
    ``ensureCurveUpToDate``; equal to OpenSim's ``calcValue`` to 2e-15)."""
    lmax = float(norm_length_at_zero_force)
    k = -2.0 / lmax if stiffness_at_zero_length is None else float(stiffness_at_zero_length)
    c = _scale_curviness(0.5 if curviness is None else curviness)
    return MuscleCurve([_corner(0.0, 1.0, k, lmax, 0.0, 0.0, c)], 0.0, lmax, 1.0, 0.0, k, 0.0)


def fiber_compressive_force_cos_pennation_curve(engagement_angle_in_degrees=85.0,
                                                stiffness_at_perpendicular=None,
                                                curviness=None) -> MuscleCurve:
    """OpenSim's FiberCompressiveForceCosPennationCurve: normalized compressive force at cos φ,
    one Bézier corner from (0, 1) with slope k to (cos φ_e, 0) with slope 0, 0 beyond
    (φ_e = ``engagement_angle_in_degrees``); unset, k = −2/cos φ_e and curviness 0.1 (as
    ``ensureCurveUpToDate``; equal to OpenSim's ``calcValue`` to 2e-15)."""
    x1 = float(np.cos(np.radians(engagement_angle_in_degrees)))
    k = -2.0 / x1 if stiffness_at_perpendicular is None else float(stiffness_at_perpendicular)
    c = _scale_curviness(0.1 if curviness is None else curviness)
    return MuscleCurve([_corner(0.0, 1.0, k, x1, 0.0, 0.0, c)], 0.0, x1, 1.0, 0.0, k, 0.0)


def _block(m, tag) -> str:
    """The text of the muscle's ``<tag ...> ... </tag>`` element ("" when absent)."""
    hit = re.search(rf"<{tag}[\s>].*?</{tag}>", getattr(m, "unmodelled_xml", "") or "", re.S)
    return hit.group(0) if hit else ""


def _compressive_curves(m):
    fk = _block(m, "FiberCompressiveForceLengthCurve")
    fc = _block(m, "FiberCompressiveForceCosPennationCurve")
    return (fiber_compressive_force_length_curve(
                _xml_value(m, "norm_length_at_zero_force", 0.5, fk),
                _xml_value(m, "stiffness_at_zero_length", None, fk), _xml_value(m, "curviness", None, fk)),
            fiber_compressive_force_cos_pennation_curve(
                _xml_value(m, "engagement_angle_in_degrees", 85.0, fc),
                _xml_value(m, "stiffness_at_perpendicular", None, fc), _xml_value(m, "curviness", None, fc)))


def _saturated(elastic, visco):
    """(visco, elastic + visco) with OpenSim's saturation: a viscoelastic element whose force
    would change sign gives 0 (its visco part −elastic)."""
    vem = elastic + visco
    neg = vem < 0
    return np.where(neg, -elastic, visco), np.where(neg, 0.0, vem)


def millard_acceleration_dynamics(m, a, lce, dlce, L, V) -> dict:
    """The MuscleAnalysis records of Millard2012AccelerationMuscle ``m`` at activation ``a``,
    fiber length ``lce`` (m), fiber velocity ``dlce`` (m/s), path length ``L`` (m) and
    lengthening speed ``V`` (m/s), each (T,).

    Pennation sin φ = h / l_M (h = l_opt sin φ_opt), φ̇ = −(l̇_M / l_M) tan φ; tendon l_T =
    L − l_M cos φ, l̇_T = L̇ − l̇_M cos φ + l_M sin φ φ̇; fiber velocity along the tendon
    l̇_AT = l̇_M cos φ − l_M sin φ φ̇. Multipliers f_L, f_V(l̇_M/(l_opt v_max)), f_PE (l̃_M),
    f_T (l_T/l_s), f_K (l̃_M), f_Cφ (cos φ) and their viscous parts f_T β_T l̇_T/l_s,
    f_PE β_PE l̇_M/l_opt, −f_K β_K l̇_M/l_opt, −f_Cφ β_Cφ l̇_AT/(l_opt cos φ_opt), β l̇_M/l_opt
    (each viscoelastic sum saturated at 0). Fiber force along the tendon
    F_iso((a f_L f_V + f_PEve − f_Kve + f_β) cos φ − f_Cφve), fiber force
    F_iso(a f_L f_V + f_PEve − f_Kve + f_β − f_Cφve cos φ), active F_iso a f_L f_V, passive
    F_iso(f_PEve − f_Kve − f_Cφve cos φ), tendon F_iso f_Tve; fiber acceleration
    (F_T − F_AT) cos φ / m + l_M φ̇²; powers: active −F_a l̇_M, passive −(d/dt KE + elastic
    power − viscous power), tendon −F_T l̇_T, muscle −F_T L̇.

    Returns {MuscleAnalysis file name: (T,)} (N, W) for FiberForce, ActiveFiberForce,
    PassiveFiberForce, their ...AlongTendon (× cos φ), TendonForce, FiberActivePower,
    FiberPassivePower, TendonPower, MuscleActuatorPower; {} where OpenSim throws (l_M ≤ h)."""
    d = {k: _xml_value(m, k, v) for k, v in ACCELERATION_DEFAULTS.items()}
    lopt, ls = float(m.optimal_fiber_length), float(m.tendon_slack_length)
    fiso, vmax = float(m.max_isometric_force), float(m.max_contraction_velocity)
    popt = float(getattr(m, "pennation_angle_at_optimal", 0.0) or 0.0)
    h = lopt * np.sin(popt)
    lce, dlce, L, V, a = (np.broadcast_to(np.asarray(x, float), np.shape(L)) for x in (lce, dlce, L, V, a))
    if not (lce > h).all():
        return {}                                # OpenSim's pennation derivatives throw there
    eps = np.finfo(float).eps
    sin = h / lce if popt > eps else np.zeros_like(lce)
    phi = np.arcsin(sin)
    cos = np.cos(phi)
    sin = np.sin(phi)
    dphi = -(dlce / lce) * np.tan(phi) if popt > eps else np.zeros_like(lce)
    tl = L - lce * cos
    dtl = V - dlce * cos + lce * sin * dphi
    dlce_at = dlce * cos - lce * sin * dphi
    # the curves as the file gives them (this class does not adjust them to fiber_damping as
    # Millard2012EquilibriumMuscle does; its active force-length curve's minimum defaults to 0)
    cp = {t: _curve_params(m, t) for t in ("ActiveForceLengthCurve", "FiberForceLengthCurve",
                                            "ForceVelocityCurve")}
    lN = lce / lopt
    fal = millard_active_force_length_curve(**cp["ActiveForceLengthCurve"]).value(lN)
    fpe = millard_fiber_force_length_curve(**cp["FiberForceLengthCurve"]).value(lN)
    fv = millard_force_velocity_curve(**cp["ForceVelocityCurve"]).value(dlce / (vmax * lopt))
    fse = _tendon_curve(m).value(tl / ls)
    kcurve, ccurve = _compressive_curves(m)
    fk, fc = kcurve.value(lN), ccurve.value(cos)
    dlN = dlce / lopt
    fse_v, fse_ve = _saturated(fse, fse * (dtl / ls) * d["tendon_force_length_damping"])
    fpe_v, fpe_ve = _saturated(fpe, fpe * dlN * d["fiber_force_length_damping"])
    fk_v, fk_ve = _saturated(fk, -fk * dlN * d["fiber_compressive_force_length_damping"])
    fc_v, fc_ve = _saturated(fc, -fc * dlce_at / (lopt * np.cos(popt))
                             * d["fiber_compressive_force_cos_pennation_damping"])
    fib_v = dlN * d["fiber_damping"]
    along = a * fal * fv + fpe_ve - fk_ve + fib_v
    fi = fiso * (along * cos - fc_ve)
    fj = fiso * along * sin
    fce = fi * cos + fj * sin
    fse_n = fiso * fse_ve
    mass = d["mass"]
    ddlce = (fse_n - fi) * cos / mass + lce * dphi * dphi
    ddphi = (sin * cos * (dlce * dlce - lce * ddlce) - lce * dlce * dphi) / (lce * lce * cos * cos)
    ddlce_at = ddlce * cos - lce * sin * ddphi - dphi * (2.0 * dlce * sin + lce * cos * dphi)
    active = a * fal * fv * fiso
    passive = ((fpe_ve - fk_ve) - fc_ve * cos) * fiso
    pe = (fpe * cos - fk * cos - fc) * fiso * dlce_at            # elastic fiber power
    visco = (-fpe_v * cos + fk_v * cos + fc_v) * fiso * dlce_at
    fib = -(fib_v * fiso * dlce)
    return dict(FiberForce=fce, ActiveFiberForce=active, PassiveFiberForce=passive,
                ActiveFiberForceAlongTendon=active * cos, PassiveFiberForceAlongTendon=passive * cos,
                TendonForce=fse_n, FiberActivePower=-active * dlce,
                FiberPassivePower=-(mass * dlce_at * ddlce_at + pe - visco - fib),
                TendonPower=-(fse * fiso * dtl + fse_v * fiso * dtl), MuscleActuatorPower=-fse_n * V)
