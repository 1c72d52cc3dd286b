"""Muscles whose curves are splines in the model file: OpenSim ``Schutte1993Muscle_Deprecated``,
``Delp1990Muscle_Deprecated`` and ``RigidTendonMuscle``, vectorized over frames.

* :func:`muscle_spline` reads a muscle's curve property (``active_force_length_curve``,
  ``passive_force_length_curve``, ``tendon_force_length_curve``, ``force_velocity_curve``) from
  the muscle's verbatim XML as an :mod:`arthron.models.functions` function (SimmSpline and the
  other x-y functions), OpenSim 4.6's default curve of the class where absent.
* Schutte1993Muscle_Deprecated (Schutte et al. 1993; OpenSim 4.6 ``Schutte1993Muscle_Deprecated.cpp``,
  ``ActivationFiberLengthMuscle_Deprecated.cpp``):

  - :func:`schutte_isometric_force`: ``computeIsometricForce`` (the iterative search of the
    fiber length where tendon force = fiber force × cos α, to 0.01 N, replayed step by step);
  - :func:`schutte_static_optimization_force`: the force per unit activation of OpenSim's
    StaticOptimization with ``use_muscle_physiology`` (``StaticOptimizationTarget::
    prepareToOptimize`` calls ``calcInextensibleTendonActiveFiberForce(s, 1)``, which for this
    class is the isometric force at activation 1, passive force included, times the generic
    force-velocity factor ``1.8 − 1.8 / (1 + exp((0.04 − ṽ)/0.18))`` of
    ``ActivationFiberLengthMuscle_Deprecated::evaluateForceLengthVelocityCurve`` with
    ``ṽ = −cos α_opt L̇ / (v_max l_opt)``);
  - :func:`schutte_default_state_tensions`: ``computeActuation`` at the default states (fiber
    length 0 and activation 0: ``ActivationFiberLengthMuscle_Deprecated::setNull``; no
    ``default_fiber_length`` property): pennation 0, the whole path is tendon, force
    ``F_max f_T((L − l_s)/l_s)`` (0 for negative strain).
  ``Delp1990Muscle_Deprecated`` (Delp 1990; ``Delp1990Muscle_Deprecated.cpp``) shares these three
  with its own first guess and passive curve in ``computeIsometricForce`` (see there), and so
  does ``Thelen2003Muscle_Deprecated`` (``Thelen2003Muscle_Deprecated.cpp``) with Thelen's
  closed-form curves (Gaussian active, exponential-linear passive, tendon with its toe region
  plus 0.001 (1 + ε); defaults KshapeActive 0.5, KshapePassive 4, FmaxMuscleStrain 0.6,
  FmaxTendonStrain 0.033).
* RigidTendonMuscle (OpenSim 4.6 ``RigidTendonMuscle.cpp``, ``Muscle::
  calcInextensibleTendonActiveFiberForce``): fiber length ``sqrt(max(L − l_s, 0)² + w²)``
  (w = l_opt sin α_opt; ``max(L − l_s, 0)`` and cos α = 1 when w ≤ sqrt(ε)), cos α =
  max(L − l_s, 0) / l_f, normalized fiber velocity ``L̇ / (l_opt v_max)`` (the path's speed,
  not projected); force ``F_max (a f_L f_V + f_PE) cos α`` with f_PE clamped to [0, 10] and
  the activation a = the muscle's control (:func:`rigid_tendon_forces`).

Sources: OpenSim 4.6 source files named above, ``StaticOptimizationTarget.cpp``,
``SimmMacros.h``; Schutte LM et al. (1993) Improving the efficacy of electrical stimulation
induced leg cycle ergometry, J Biomech Eng 115:515-520.
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import ModelFileError, UnsupportedFeature
from .functions import (Constant, LinearFunction, NaturalCubicSpline, PiecewiseConstantFunction,
                        PiecewiseLinearFunction, SimmSpline)

__all__ = ["SPLINE_MUSCLE_TYPES", "muscle_spline", "schutte_isometric_force",
           "schutte_force_velocity", "schutte_static_optimization_force",
           "schutte_default_state_tensions", "rigid_tendon_fiber", "rigid_tendon_multipliers",
           "rigid_tendon_forces"]

#: the classes of this module
SPLINE_MUSCLE_TYPES = ("Schutte1993Muscle_Deprecated", "Delp1990Muscle_Deprecated",
                       "Thelen2003Muscle_Deprecated", "RigidTendonMuscle")

_ROUNDOFF_ERROR = 2e-13      # SimmMacros.h
_EPS = float(np.finfo(float).eps)
_SQRT_EPS = float(np.sqrt(_EPS))

# OpenSim 4.6 constructProperties() defaults (identical in both classes where shared)
_AFL = ([-5.307692, -4.307692, -1.923077, -0.884615, -0.269231, 0.230769, 0.461538, 0.52725,
         0.62875, 0.71875, 0.86125, 1.045, 1.2175, 1.43875, 1.5, 1.615385, 2.0, 2.961538,
         3.692308, 5.461538, 9.901902],
        [0.012188, 0.021899, 0.036466, 0.052493, 0.075312, 0.114158, 0.157859, 0.226667, 0.636667,
         0.856667, 0.95, 0.993333, 0.77, 0.246667, 0.193821, 0.133252, 0.072683, 0.044417,
         0.036341, 0.021899, 0.007332])
_PFL = ([-5.0, 0.998, 0.999, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.601, 1.602, 5.0],
        [0.0, 0.0, 0.0, 0.0, 0.035, 0.12, 0.26, 0.55, 1.17, 2.0, 2.0, 2.0, 2.0])
_TFL = ([-10.0, -0.002, -0.001, 0.0, 0.00131, 0.00281, 0.00431, 0.00581, 0.00731, 0.00881, 0.0103,
         0.0118, 0.0123, 9.2, 9.201, 9.202, 20.0],
        [0.0, 0.0, 0.0, 0.0, 0.0108, 0.0257, 0.0435, 0.0652, 0.0915, 0.123, 0.161, 0.208, 0.227,
         345.0, 345.0, 345.0, 345.0])
_FV = ([-1.001, -1.0, -0.95, -0.9, -0.85, -0.8, -0.75, -0.7, -0.65, -0.6, -0.55, -0.5, -0.45, -0.4,
        -0.35, -0.3, -0.25, -0.2, -0.15, -0.1, -0.05, 0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35,
        0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0],
       [0.0, 0.0, 0.010417, 0.021739, 0.034091, 0.047619, 0.0625, 0.078947, 0.097222, 0.117647,
        0.140625, 0.166667, 0.196429, 0.230769, 0.270833, 0.318182, 0.375, 0.444444, 0.53125,
        0.642857, 0.791667, 1.0, 1.482014, 1.601571, 1.655791, 1.686739, 1.706751, 1.720753,
        1.731099, 1.739055, 1.745365, 1.75049, 1.754736, 1.758312, 1.761364, 1.763999, 1.766298,
        1.768321, 1.770115, 1.771717, 1.773155, 1.774455])
_DEFAULTS = {"active_force_length_curve": _AFL, "passive_force_length_curve": _PFL,
             "tendon_force_length_curve": _TFL, "force_velocity_curve": _FV}

_XY = {"SimmSpline": SimmSpline, "NaturalCubicSpline": NaturalCubicSpline,
       "PiecewiseLinearFunction": PiecewiseLinearFunction,
       "PiecewiseConstantFunction": PiecewiseConstantFunction}


def _numbers(text, muscle, tag):
    try:
        return [float(v) for v in text.split()]
    except ValueError:
        raise ModelFileError(f"muscle '{muscle.name}': <{tag}> has a value that is not a number") from None


def _parse_function(body: str, muscle, prop: str):
    """The function element at the start of ``body`` (XML text) as a Function."""
    m = re.match(r"\s*<(\w+)(?:\s[^>]*)?(?:/>|>(.*?)</\1>)", body, re.S)
    if m is None:
        return None
    tag, inner = m.group(1), m.group(2) or ""
    if tag in _XY:
        xs = re.search(r"<x>(.*?)</x>", inner, re.S)
        ys = re.search(r"<y>(.*?)</y>", inner, re.S)
        if xs is None or ys is None:
            raise ModelFileError(f"muscle '{muscle.name}': {prop} ({tag}) has no <x> or <y>")
        x, y = _numbers(xs.group(1), muscle, prop), _numbers(ys.group(1), muscle, prop)
        if len(x) != len(y) or len(x) < 2:
            raise ModelFileError(f"muscle '{muscle.name}': {prop} ({tag}) has {len(x)} x and "
                                 f"{len(y)} y values")
        return _XY[tag](x, y, name=prop)
    if tag == "Constant":
        v = re.search(r"<value>(.*?)</value>", inner, re.S)
        return Constant(_numbers(v.group(1), muscle, prop)[0] if v else 0.0, name=prop)
    if tag == "LinearFunction":
        c = re.search(r"<coefficients>(.*?)</coefficients>", inner, re.S)
        a, b = _numbers(c.group(1), muscle, prop) if c else (1.0, 0.0)
        return LinearFunction(a, b, name=prop)
    raise UnsupportedFeature(f"muscle '{muscle.name}': {prop} is a {tag}; arthron reads the "
                             "x-y functions (SimmSpline, NaturalCubicSpline, PiecewiseLinear/"
                             "ConstantFunction), Constant and LinearFunction here")


def muscle_spline(muscle, prop: str, *, default: bool = True, memo: dict | None = None):
    """The curve property ``prop`` of ``muscle`` (its verbatim XML, ``unmodelled_xml``) as an
    :class:`arthron.models.functions.Function`: the 4.x form ``<prop><SimmSpline>..`` or the
    3.x form ``<SimmSpline name="prop">``. Absent: OpenSim 4.6's default curve of the class
    (``default=True``) or None.

    ``memo``: a dict that the functions of one computation over several muscles share (the
    callers here make one per call): a curve whose XML text (or default) was read before for
    another muscle is that same Function object, not parsed and fitted again (muscles of a
    model often share their curves; DAS4's 164 elements have a handful).

    Raises ModelFileError for a malformed curve, UnsupportedFeature for a function class not
    read here."""
    text = getattr(muscle, "unmodelled_xml", "") or ""
    m = re.search(rf"<{prop}>(.*?)</{prop}>", text, re.S)
    f = _parse_memo(m.group(1), muscle, prop, memo) if m else None
    if f is None:
        m = re.search(rf"(<(\w+)\s[^>]*name=\"{prop}\"[^>]*>.*?</\2>)", text, re.S)
        f = _parse_memo(m.group(1), muscle, prop, memo) if m else None
    if f is None and default and prop in _DEFAULTS:
        f = memo.get((prop, None)) if memo is not None else None
        if f is None:
            f = SimmSpline(*_DEFAULTS[prop], name=prop)
            if memo is not None:
                memo[(prop, None)] = f
    return f


def _parse_memo(body: str, muscle, prop: str, memo):
    """:func:`_parse_function` of ``body``, looked up in / recorded into ``memo`` by
    (prop, text)."""
    if memo is None:
        return _parse_function(body, muscle, prop)
    key = (prop, body)
    if key not in memo:
        memo[key] = _parse_function(body, muscle, prop)
    return memo[key]


def _prop(muscle, tag, default):
    text = getattr(muscle, "unmodelled_xml", "") or ""
    hit = re.search(rf"<{tag}>([^<]*)</{tag}>", text)
    if not hit or not hit.group(1).strip():
        return default
    try:
        return float(hit.group(1))
    except ValueError:
        raise ModelFileError(f"muscle '{muscle.name}': <{tag}> {hit.group(1)!r} is not a number") from None


def _calc_pennation(lf, lopt, alpha):
    """``ActivationFiberLengthMuscle_Deprecated::calcPennation`` (arrays)."""
    return _pennation(lf, lopt * np.sin(alpha))


class _Schutte:
    """One deprecated muscle's constants and curves: Schutte1993Muscle_Deprecated,
    Delp1990Muscle_Deprecated (the file's splines) or Thelen2003Muscle_Deprecated (Thelen's
    closed forms, ``Thelen2003Muscle_Deprecated.cpp``)."""

    def __init__(self, m, memo: dict | None = None):
        self.name = m.name
        self.type = m.type
        self.delp = m.type == "Delp1990Muscle_Deprecated"
        self.thelen = m.type == "Thelen2003Muscle_Deprecated"
        self.fmax = float(m.max_isometric_force)
        self.lopt = float(m.optimal_fiber_length)
        self.ls = float(m.tendon_slack_length)
        self.alpha = float(m.pennation_angle_at_optimal or 0.0)
        self.vmax = float(10.0 if m.max_contraction_velocity is None else m.max_contraction_velocity)
        if self.thelen:                        # OpenSim 4.6 constructProperties() defaults
            self.ka = float(getattr(m, "KshapeActive", 0.5))
            self.kp = float(getattr(m, "KshapePassive", 4.0))
            self.em = float(getattr(m, "FmaxMuscleStrain", 0.6))
            e0 = getattr(m, "FmaxTendonStrain", None)
            self.e0 = 0.033 if e0 is None else float(e0)
            return
        self.afl = muscle_spline(m, "active_force_length_curve", memo=memo)
        self.tfl = muscle_spline(m, "tendon_force_length_curve", memo=memo)
        self.pfl = muscle_spline(m, "passive_force_length_curve", default=self.delp, memo=memo)

    def active(self, ln):
        """The active force-length multiplier (``calcActiveForce``)."""
        if self.thelen:
            return np.exp(-(ln - 1.0) * (ln - 1.0) / self.ka)
        return self.afl.value(ln)

    def passive(self, ln):
        """Schutte: ``calcNonzeroPassiveForce(l̃, 0)``: the file's curve, or exp(8(l̃−1))/exp(4)
        when the property is OpenSim's default (absent from the file); Delp: the curve; Thelen:
        ``calcPassiveForce``, exponential, linear beyond 1 + FmaxMuscleStrain."""
        if self.thelen:
            kp, em = self.kp, self.em
            slope = (kp / em) * np.exp(kp * (1.0 + em - 1.0) / em) / np.exp(kp)
            with np.errstate(over="ignore"):
                ex = np.exp(kp * (ln - 1.0) / em) / np.exp(kp)
            return np.where(ln > 1.0 + em, 1.0 + slope * (ln - (1.0 + em)), ex)
        if self.pfl is None:
            return np.exp(8.0 * (ln - 1.0)) / np.exp(4.0)
        return self.pfl.value(ln)

    def _thelen_tendon(self, lt_norm):
        """``Thelen2003Muscle_Deprecated::calcTendonForce`` at the normalized tendon length."""
        rest = self.ls / self.lopt
        strain = (lt_norm - rest) / rest
        toe, toe_f, klin = 0.609 * self.e0, 0.333333, 1.712 / self.e0
        with np.errstate(over="ignore"):
            f = np.where(strain > toe, klin * (strain - toe) + toe_f,
                         np.where(strain > 0, toe_f * (np.exp(3.0 * strain / toe) - 1.0) / (np.exp(3.0) - 1.0),
                                  0.0))
        return f + 0.001 * (1.0 + strain)

    def tendon(self, lt, ls=None):
        """(normalized tendon force, its value in the stiffness estimate) at tendon length lt (m)
        as ``computeIsometricForce`` takes them; ``ls``: the tendon slack length to use instead
        of the muscle's (an array like lt: elements of several muscles that share this curve,
        :func:`_isometric_grouped`)."""
        if self.thelen:
            f = self._thelen_tendon(lt / self.lopt)
            return f, f
        strain = lt / (self.ls if ls is None else ls) - 1.0
        f = self.tfl.value(strain)
        return np.where(strain < 0.0, 0.0, f), f

    def default_tendon(self, L):
        """Normalized tendon force at fiber length 0 (``computeActuation`` at the default state)."""
        if self.thelen:
            return self._thelen_tendon(L / self.lopt)
        rest = self.ls / self.lopt
        strain = (L / self.lopt - rest) / rest
        return np.where(strain < 0.0, 0.0, self.tfl.value(strain))


def schutte_isometric_force(muscle, lengths, activation: float = 1.0):
    """Isometric tendon force (T,) N of a ``Schutte1993Muscle_Deprecated`` (or
    ``Delp1990Muscle_Deprecated``, ``Thelen2003Muscle_Deprecated``) at path lengths ``lengths`` (T,) m and ``activation``, and
    the fiber length (T,) m found: OpenSim 4.6's ``computeIsometricForce`` of the class replayed
    step by step (at most 100 iterations; stops when |tendon − fiber force| ≤ 0.01 N,
    stiffness-based steps capped at l_opt/2, proportional steps back after a sign change of the
    error). Delp1990: first guess l_f = L − l_s (Schutte: l_opt), passive curve always the
    spline (Schutte: exp(8(l̃−1))/exp(4) when the file has none).

    Raises UnsupportedFeature for a Delp1990Muscle_Deprecated with tendon_slack_length 0
    (OpenSim then iterates on a 0/0 tendon strain)."""
    p = muscle if isinstance(muscle, _Schutte) else _Schutte(muscle)
    L = np.atleast_1d(np.asarray(lengths, float))
    T = len(L)
    force = np.zeros(T)
    fiber = np.zeros(T)
    lopt, ls, fmax = p.lopt, p.ls, p.fmax
    if lopt < _ROUNDOFF_ERROR:
        return force, fiber
    w = lopt * np.sin(p.alpha)
    _check_slack(p)
    if ls < _ROUNDOFF_ERROR:
        cos_f = np.cos(np.arctan(w / L))
        lf = L / cos_f
        act = np.maximum(p.active(lf / lopt) * activation * fmax, 0.0)
        pas = p.passive(lf / lopt) * fmax
        if p.thelen:
            pas = np.maximum(pas, 0.0)
        return (act + pas) * cos_f, lf
    return _isometric_search(p, L, activation, lopt, ls, fmax, w)


def _check_slack(p):
    if p.ls < _ROUNDOFF_ERROR and p.delp and p.lopt >= _ROUNDOFF_ERROR:
        raise UnsupportedFeature(f"muscle '{p.name}' (Delp1990Muscle_Deprecated): "
                                 "tendon_slack_length 0 is not reproduced")


def _isometric_search(p, L, activation, lopt, ls, fmax, w):
    """The iteration of :func:`schutte_isometric_force` on the path lengths L (n,) for
    tendon_slack_length > 0: the muscle's constants ``lopt``, ``ls``, ``fmax``, ``w`` (l_opt
    sin α_opt) numbers, or arrays (n,) for elements of several muscles that share their curves
    (:func:`_isometric_grouped`; the same operations on each element as one muscle at a time);
    ``p`` gives the curves (``active``, ``passive``, ``tendon`` at each element's l_s). Returns
    (force, fiber length) (n,)."""
    T = len(L)
    force = np.zeros(T)
    fiber = np.zeros(T)
    arr = np.ndim(ls) > 0

    def sub(x, i):                    # a constant's value at the elements i
        return x[i] if arr else x
    short = L < ls
    fiber[short] = sub(w, short)
    idx = np.flatnonzero(~short)
    Li = L[idx]
    lopt, ls, fmax, w = (sub(x, idx) for x in (lopt, ls, fmax, w))
    lf = Li - ls if p.delp else (lopt.copy() if arr else np.full(len(idx), lopt))
    cos_f = np.cos(_pennation(lf, w))
    lt = Li - lf * cos_f
    lo = lt < ls
    with np.errstate(divide="ignore", invalid="ignore"):
        lt = np.where(lo, ls, lt)
        cl = np.cos(np.arctan(w / (Li - ls)))
        cos_f = np.where(lo, cl, cos_f)
        lf = np.where(lo, np.maximum((Li - ls) / cl, w), lf)
    err = np.zeros(len(idx))
    old_lf = np.zeros(len(idx))
    tf = np.zeros(len(idx))
    live = np.arange(len(idx))                         # positions in idx still iterating
    for i in range(100):
        if live.size == 0:
            break
        lfl, cfl, ltl, Ll = lf[live], cos_f[live], lt[live], Li[live]
        lo_l, ls_l, fm_l, w_l = (sub(x, live) for x in (lopt, ls, fmax, w))
        fl = p.active(lfl / lo_l)
        fpe = p.passive(lfl / lo_l)
        act = np.maximum(fl * activation, 0.0)
        pas = np.maximum(fpe, 0.0)
        fiber_force = (act + pas) * fm_l * cfl
        fse_f, fse = p.tendon(ltl, ls_l)
        tfl_ = fse_f * fm_l
        tf[live] = tfl_
        old_err = err[live] if i > 0 else tfl_ - fiber_force
        e = tfl_ - fiber_force
        err[live] = e
        done = np.abs(e) <= 0.01
        flip = (np.where(e >= 0, 1, -1) != np.where(old_err >= 0, 1, -1)) & ~done
        prev = old_lf[live]
        # sign change: step back proportionally towards the previous fiber length
        pct = np.abs(e) / (np.abs(e) + np.abs(old_err))
        new_lf = np.where(flip, lfl + pct * (prev - lfl), lfl)
        # same sign: stiffness-based step
        t_stiff = fse * fm_l / ls_l
        t_min = (act + pas) * 1200.0 * fm_l / (32.0 * ls_l)
        t_stiff = np.maximum(t_stiff, t_min)
        f_stiff = fm_l / lo_l * (fl + fpe)
        with np.errstate(divide="ignore", invalid="ignore"):
            dl = np.abs(e / (f_stiff / cfl + t_stiff))
        dl = np.where(np.abs(dl / lo_l) > 0.5, 0.5 * lo_l, dl)
        step = np.where(e > 0.0, lfl + dl, lfl - dl)
        new_lf = np.where(flip | done, new_lf, step)
        # old_fiber_length = the fiber length before this step (both branches)
        old_lf[live] = np.where(done, prev, lfl)
        keep = ~done
        lf_k = new_lf[keep]
        ls_k, w_k = sub(ls_l, keep), sub(w_l, keep)
        c_k = np.cos(_pennation(lf_k, w_k))
        L_k = Ll[keep]
        lt_k = L_k - lf_k * c_k
        below = lt_k < ls_k
        with np.errstate(divide="ignore", invalid="ignore"):
            cb = np.cos(np.arctan(w_k / (L_k - ls_k)))
            lt_k = np.where(below, ls_k, lt_k)
            lf_k = np.where(below, (L_k - ls_k) / cb, lf_k)
            c_k = np.where(below, cb, c_k)
        sel = live[keep]
        lf[sel], cos_f[sel], lt[sel] = lf_k, c_k, lt_k
        live = sel
    force[idx] = tf
    fiber[idx] = lf
    return force, fiber


def _pennation(lf, w):
    """:func:`_calc_pennation` with ``lopt sin α`` given (``w``, a number or an array like
    ``lf``)."""
    lf = np.asarray(lf, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = w / lf
    out = np.where(val >= 1.0, np.pi / 2, np.arcsin(np.clip(val, 0.0, 1.0)))
    return np.where((lf < _EPS) | np.isnan(val) | (val <= 0.0), 0.0, out)


def _isometric_grouped(ps, L, activation: float = 1.0):
    """:func:`schutte_isometric_force` of the muscles ``ps`` (_Schutte each) at their path
    lengths L (T, m): the muscles that share their curves (the same Function objects, from
    one memo of :func:`muscle_spline`) and class, neither Thelen2003 nor with l_opt or l_s
    below round-off, iterate together as one block of (frame, muscle) elements (their
    constants per element; the same operations on each element as one muscle at a time, so
    the same numbers); the others one by one. Returns (force, fiber length) (T, m)."""
    T, m = L.shape
    force, fiber = np.zeros((T, m)), np.zeros((T, m))
    groups: dict = {}
    for k, p in enumerate(ps):
        if p.thelen or p.lopt < _ROUNDOFF_ERROR or p.ls < _ROUNDOFF_ERROR:
            force[:, k], fiber[:, k] = schutte_isometric_force(p, L[:, k], activation)
        else:
            groups.setdefault((id(p.afl), id(p.tfl), id(p.pfl), p.delp), []).append(k)
    for cols in groups.values():
        g = [ps[k] for k in cols]
        p = g[0]
        const = [np.repeat(np.array(v, float), T) for v in
                 ([q.lopt for q in g], [q.ls for q in g], [q.fmax for q in g],
                  [q.lopt * np.sin(q.alpha) for q in g])]
        f, lf = _isometric_search(p, L[:, cols].T.ravel(), activation, *const)
        force[:, cols], fiber[:, cols] = f.reshape(len(cols), T).T, lf.reshape(len(cols), T).T
    return force, fiber


def schutte_force_velocity(v_norm):
    """``ActivationFiberLengthMuscle_Deprecated::evaluateForceLengthVelocityCurve(1, 1, ṽ)``:
    ``1.8 − 1.8 / (1 + exp((0.04 − ṽ)/0.18))`` (ṽ positive = shortening; exp(−17.33 |0|³) = 1)."""
    v = np.asarray(v_norm, float)
    with np.errstate(over="ignore"):
        return 1.8 - 1.8 / (1.0 + np.exp((0.04 - v) / 0.18))


def _check_vmax(p):
    if not p.vmax > 0.0:
        raise UnsupportedFeature(f"muscle '{p.name}' ({p.type}): "
                                 f"max_contraction_velocity {p.vmax:g}; OpenSim's force-velocity "
                                 "factor divides the lengthening speed by it (NaN or ±inf in "
                                 "StaticOptimization with use_muscle_physiology); use "
                                 "use_muscle_physiology false (force = activation × "
                                 "max_isometric_force)")


def schutte_static_optimization_force(muscles, lengths, speeds):
    """Force per unit activation (T, m) N of ``Schutte1993Muscle_Deprecated`` s (and
    ``Delp1990Muscle_Deprecated``, ``Thelen2003Muscle_Deprecated`` s: the same inherited
    method) in OpenSim 4.6's
    StaticOptimization with ``use_muscle_physiology``: ``ActivationFiberLengthMuscle_Deprecated::
    calcInextensibleTendonActiveFiberForce(s, 1)`` = :func:`schutte_isometric_force` at
    activation 1 × :func:`schutte_force_velocity` of ``−cos α_opt L̇ / (v_max l_opt)``.
    ``lengths``, ``speeds`` (T, m) path lengths (m) and lengthening speeds (m/s). Also returns
    the passive fiber force along the tendon (T, m) N at the fiber length found.

    Raises UnsupportedFeature for a muscle with ``max_contraction_velocity`` ≤ 0."""
    L = np.atleast_2d(np.asarray(lengths, float))
    V = np.broadcast_to(np.atleast_2d(np.asarray(speeds, float)), L.shape)
    out = np.zeros_like(L)
    passive = np.zeros_like(L)
    memo: dict = {}                   # the curves shared by the muscles, read once
    ps = [_Schutte(m, memo) for m in muscles]
    for p in ps:                      # the errors in the order of one muscle at a time
        _check_vmax(p)
        _check_slack(p)
    F, LF = _isometric_grouped(ps, L, 1.0)
    for k, p in enumerate(ps):
        f, lf = F[:, k], LF[:, k]
        v = -np.cos(p.alpha) * V[:, k] / (p.vmax * p.lopt)
        out[:, k] = f * schutte_force_velocity(v)
        ln = lf / p.lopt
        passive[:, k] = p.fmax * np.maximum(p.passive(ln), 0.0) * np.cos(_calc_pennation(lf, p.lopt, p.alpha))
    return out, passive


def schutte_default_state_tensions(muscles, lengths):
    """Tensions (T, m) N of ``Schutte1993Muscle_Deprecated`` s (and ``Delp1990Muscle_Deprecated``
    s: same ``calcTendonForce``, fiber velocity state 0; ``Thelen2003Muscle_Deprecated`` s:
    Thelen's tendon curve plus 0.001 (1 + ε)) at OpenSim 4.6's default states (fiber length 0,
    activation 0) and path lengths ``lengths`` (T, m) m: ``computeActuation`` =
    ``F_max f_T(ε)``, ε = (L − l_s)/l_s (0 where ε < 0), f_T the ``tendon_force_length_curve``
    (the file's, or the class default)."""
    L = np.atleast_2d(np.asarray(lengths, float))
    out = np.zeros_like(L)
    memo: dict = {}
    for k, m in enumerate(muscles):
        p = _Schutte(m, memo)
        out[:, k] = p.fmax * p.default_tendon(L[:, k])
    return out


def rigid_tendon_fiber(muscle, lengths, speeds=None):
    """``RigidTendonMuscle`` fiber state at path lengths (T,) m and lengthening speeds (T,) m/s:
    (normalized fiber length, cos α, normalized fiber velocity), as OpenSim 4.6's
    ``calcMuscleLengthInfo`` / ``calcFiberVelocityInfo``."""
    L = np.asarray(lengths, float)
    lopt = float(muscle.optimal_fiber_length)
    w = lopt * np.sin(float(muscle.pennation_angle_at_optimal or 0.0))
    z = np.maximum(L - float(muscle.tendon_slack_length), 0.0)
    if w > _SQRT_EPS:
        lf = np.sqrt(z * z + w * w)
        cos_a = z / lf
    else:                                   # OpenSim: no pennation, cos α = 1 even at l_f = 0
        lf, cos_a = z, np.ones_like(z)
    vmax = float(10.0 if muscle.max_contraction_velocity is None else muscle.max_contraction_velocity)
    v = np.zeros_like(L) if speeds is None else np.asarray(speeds, float) / (lopt * vmax)
    return lf / lopt, cos_a, v


def rigid_tendon_multipliers(muscle, lengths, speeds=None, memo: dict | None = None):
    """``RigidTendonMuscle`` multipliers at path lengths (T,) m and lengthening speeds (T,) m/s:
    (f_L, f_PE clamped to [0, 10], f_V, cos α), the file's curves (or the class defaults) at
    :func:`rigid_tendon_fiber`'s fiber state (``memo``: see :func:`muscle_spline`)."""
    ln, cos_a, v = rigid_tendon_fiber(muscle, lengths, speeds)
    fl = muscle_spline(muscle, "active_force_length_curve", memo=memo).value(ln)
    fp = np.clip(muscle_spline(muscle, "passive_force_length_curve", memo=memo).value(ln), 0.0, 10.0)
    fv = muscle_spline(muscle, "force_velocity_curve", memo=memo).value(v)
    return fl, fp, fv, cos_a


def rigid_tendon_forces(muscles, lengths, speeds=None, activation=0.0):
    """``RigidTendonMuscle`` forces (T, m) N: (tension at ``activation`` (scalar or (T, m)),
    force per unit activation ``F_max f_L f_V cos α`` (``Muscle::
    calcInextensibleTendonActiveFiberForce(s, 1)``, OpenSim's StaticOptimization F̂ with
    ``use_muscle_physiology``), passive force ``F_max f_PE cos α``). The tension is
    ``computeActuation``: ``F_max (a f_L f_V + f_PE) cos α`` with a the muscle's control, 0 in
    OpenSim's analyses without a controller (then only the passive force). Curves: the file's
    ``active_force_length_curve``, ``passive_force_length_curve``, ``force_velocity_curve``, or
    the class defaults; the passive multiplier clamped to [0, 10] as OpenSim 4.6's
    ``calcMuscleLengthInfo`` does."""
    L = np.atleast_2d(np.asarray(lengths, float))
    V = np.zeros_like(L) if speeds is None else np.broadcast_to(np.atleast_2d(np.asarray(speeds, float)), L.shape)
    a = np.broadcast_to(np.asarray(activation, float), L.shape)
    tension, per_act, passive = (np.zeros_like(L) for _ in range(3))
    memo: dict = {}
    for k, m in enumerate(muscles):
        fl, fp, fv, cos_a = rigid_tendon_multipliers(m, L[:, k], V[:, k], memo)
        fmax = float(m.max_isometric_force)
        per_act[:, k] = fmax * fl * fv * cos_a
        passive[:, k] = fmax * fp * cos_a
        tension[:, k] = a[:, k] * per_act[:, k] + passive[:, k]
    return tension, per_act, passive
