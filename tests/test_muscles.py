"""Muscle curves and ligament force laws against OpenSim 4.6."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import GAIT2354, LENHART, TSM, needs_data, needs_opensim

from arthron.io.osim import read_osim
from arthron.models import muscles as M
from arthron.multibody import paths as P
from arthron.models.functions import PiecewiseLinearFunction
from arthron.multibody.kinematics import compile_model

LENHART_PLUGINS = ("Smith2018ArticularContactForce", "Smith2018ContactMesh")


def test_thelen_curves_shape():
    x = np.array([0.5, 1.0, 1.5])
    assert np.allclose(M.thelen_active_force_length(x), np.exp(-0.25 / 0.45) * np.array([1, 0, 1])
                       + np.array([0, 1, 0]))
    assert M.thelen_passive_force_length(1.0) == 0.0
    assert np.isclose(M.thelen_passive_force_length(1.6), 1.0)   # ε0 = 0.6 gives F0
    assert M.thelen_force_velocity(0.0) == 1.0
    assert M.thelen_force_velocity(-1.0) == 0.0
    assert M.thelen_force_velocity(5.0) < 1.4 and M.thelen_force_velocity(0.1) > 1.0


def test_blankevoort_regions():
    k, l0, et = 1000.0, 0.1, 0.06
    L = l0 * (1 + np.array([-0.01, 0.0, 0.03, 0.06, 0.1]))
    f = M.blankevoort_force(L, l0, k, et)
    assert f[0] == 0 and f[1] == 0
    assert np.isclose(f[2], 0.5 * k / et * 0.03 ** 2)
    assert np.isclose(f[3], k * 0.03) and np.isclose(f[4], k * (0.1 - 0.03))


def test_ligament_law():
    curve = PiecewiseLinearFunction([1.0, 1.1], [0.0, 1.0])
    f = M.ligament_force(np.array([0.09, 0.1, 0.105]), 0.1, 200.0, curve)
    assert np.allclose(f, [0.0, 0.0, 100.0])


@needs_data
@needs_opensim
@pytest.mark.parametrize("path", [TSM, LENHART])
def test_millard_curves_match_opensim(path):
    """Every Millard2012 muscle's active/passive force-length and force-velocity curves
    (with the muscle's own curve properties) against OpenSim's curve objects."""
    import opensim as osim

    import oracle
    model = read_osim(path)
    m, s = oracle.load(path, remove_types=LENHART_PLUGINS)
    x = np.linspace(0.3, 2.0, 60)
    v = np.linspace(-1.2, 1.2, 60)
    par = M.muscle_parameters(model)
    for name, curves in zip(par.names, par.curves):
        mu = osim.Millard2012EquilibriumMuscle.safeDownCast(m.getForceSet().get(name))
        ref_a = [mu.getActiveForceLengthCurve().calcValue(float(t)) for t in x]
        ref_p = [mu.getFiberForceLengthCurve().calcValue(float(t)) for t in x]
        ref_v = [mu.getForceVelocityCurve().calcValue(float(t)) for t in v]
        assert np.abs(curves[0].value(x) - ref_a).max() < 1e-10, name
        assert np.abs(curves[1].value(x) - ref_p).max() < 1e-10, name
        assert np.abs(curves[2].value(v) - ref_v).max() < 1e-10, name
    fl, fp, fv, ca = M.force_length_velocity(par, np.full((2, len(par.names)), 0.3))
    assert fl.shape == (2, len(par.names)) and np.all(ca <= 1)


def test_muscle_curve_derivative():
    c = M.millard_force_velocity_curve()
    x = np.linspace(-0.95, 0.95, 7)
    h = 1e-6
    num = (c.value(x + h) - c.value(x - h)) / (2 * h)
    assert np.allclose(c.derivative(x), num, atol=1e-5)
    assert np.isclose(c.value(np.array([0.0]))[0], 1.0)


@needs_data
@needs_opensim
def test_blankevoort_lenhart_default_and_knee_sweep():
    import opensim as osim

    import oracle
    model = read_osim(LENHART)
    tree = compile_model(model)
    ligs = [n for n, f in model.forces.items() if f.type == "Blankevoort1991Ligament"]
    ps = P.compile_paths(model, tree, forces=ligs)
    T = 12
    Q = np.tile(tree.default_q, (T, 1))
    kf = tree.coordinate_index("knee_flex_r")
    Q[1:, kf] = np.linspace(0, np.deg2rad(110), T - 1)
    QD = np.zeros_like(Q)
    QD[:, kf] = 2.0   # rad/s, exercises the damping term
    L = P.path_lengths(ps, tree, Q)
    V = P.lengthening_speeds(ps, tree, Q, QD)
    F = M.ligament_forces(model, ligs, L, V)
    m, s = oracle.load(LENHART, remove_types=LENHART_PLUGINS)
    cs = m.getCoordinateSet()
    fs = m.getForceSet()
    objs = [osim.Blankevoort1991Ligament.safeDownCast(fs.get(n)) for n in ligs]
    for t in range(T):
        for j, c in enumerate(tree.coordinate_names):
            if not cs.get(c).getLocked(s):
                cs.get(c).setValue(s, float(Q[t, j]), False)
                cs.get(c).setSpeedValue(s, float(QD[t, j]))
        m.realizeVelocity(s)
        Lref = np.array([o.getLength(s) for o in objs])
        Fref = np.array([o.getTotalForce(s) for o in objs])
        assert np.abs(L[t] - Lref).max() < 1e-9
        assert np.abs(F[t] - Fref).max() < 1e-6 * max(1.0, np.abs(Fref).max())
    assert (F > 0).any() and (F == 0).any()


@needs_data
@needs_opensim
def test_thelen_multipliers_match_opensim_at_equilibrium():
    """At OpenSim's equilibrium fiber length, arthron's curves give OpenSim's multipliers."""
    import opensim as osim

    import oracle
    m, s = oracle.load(GAIT2354)
    m.equilibrateMuscles(s)
    m.realizeDynamics(s)
    fs = m.getMuscles()
    ln, fal, fpe = [], [], []
    for i in range(fs.getSize()):
        mu = osim.Thelen2003Muscle.safeDownCast(fs.get(i))
        ln.append(mu.getNormalizedFiberLength(s))
        fal.append(mu.getActiveForceLengthMultiplier(s))
        fpe.append(mu.getPassiveForceMultiplier(s))
    ln = np.array(ln)
    par = M.muscle_parameters(read_osim(GAIT2354))
    th = par.thelen
    assert np.allclose(M.thelen_active_force_length(ln, th["KshapeActive"]), fal, atol=1e-12)
    assert np.allclose(M.thelen_passive_force_length(ln, th["KshapePassive"],
                                                     th["FmaxMuscleStrain"]), fpe, atol=1e-12)


def _bisection_value(c, x):
    """A Millard curve's value with the Bézier parameter found as arthron found it before
    (60 bisection steps on the Bernstein form): the reference of the Newton inversion."""
    ends = c.X[:, 5]
    j = np.clip(np.searchsorted(ends, x, side="left"), 0, len(ends) - 1)
    lo, hi, k = np.zeros_like(x), np.ones_like(x), np.arange(6)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        xm = (M._BINOM * mid[:, None] ** k * (1.0 - mid[:, None]) ** (5 - k) * c.X[j]).sum(-1)
        lo, hi = np.where(xm < x, mid, lo), np.where(xm < x, hi, mid)
    u = 0.5 * (lo + hi)
    y = (M._BINOM * u[:, None] ** k * (1.0 - u[:, None]) ** (5 - k) * c.Y[j]).sum(-1)
    y = np.where(x <= c.x0, c.y0 + c.dydx0 * (x - c.x0), y)
    return np.where(x >= c.x1, c.y1 + c.dydx1 * (x - c.x1), y)


def _exact_value(c, x):
    """The curve's value at float x with u by 90 bisection steps in exact rational arithmetic
    (then rounded once): the truth both inversions approximate."""
    from fractions import Fraction as F
    j = int(np.clip(np.searchsorted(c.X[:, 5], x, side="left"), 0, len(c.X) - 1))
    X, Y, xf = [F(float(v)) for v in c.X[j]], [F(float(v)) for v in c.Y[j]], F(float(x))
    b = lambda P, u: sum(int(M._BINOM[k]) * u ** k * (1 - u) ** (5 - k) * P[k] for k in range(6))  # noqa: E731
    lo, hi = F(0), F(1)
    for _ in range(90):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if b(X, mid) < xf else (lo, mid)
    return float(b(Y, (lo + hi) / 2))


@pytest.mark.parametrize("curve", [
    M.millard_active_force_length_curve(), M.millard_active_force_length_curve(minimum_value=0.0),
    M.millard_fiber_force_length_curve(), M.millard_fiber_force_length_curve(0.1, 0.5, 0.3, 4.0, 0.2),
    M.millard_force_velocity_curve(), M.millard_force_velocity_curve(0.1, 0.2, 4.0, 0.05, 0.1, 1.6, 0.1, 1.0),
    M.millard_tendon_force_length_curve(), M.millard_tendon_force_length_curve(0.1, 20.0, 0.5, 0.9)])
def test_muscle_curve_newton_equals_bisection(curve):
    """The safeguarded Newton inversion of x(u) gives the value of the former 60-step
    bisection: to 1e-12 relative where the value exceeds 1e-2 of the curve's scale, to 2e-14
    of the scale everywhere (segment ends, outside the curve, a (T, m) array too); and the
    exact value (u in rational arithmetic) to 1e-12 relative at 40 points (the bisection:
    to 5e-7 near a segment start). Where the two
    inversions differ more it is the bisection that is off: it solves x(u) = x with x ≈ 1
    (tendon curve: x(u) − x(0) ≤ 0.05), so its u is absolute to ~1e-16 and its value off by up
    to ~1e-14 of the scale, relatively coarser near a segment's start where y ∝ u³; the
    Newton inversion solves x(u) − x(0) = x − x(0)."""
    c = curve
    x = np.concatenate([np.linspace(c.x0 - 0.2, c.x1 + 0.2, 20001), c.X[:, 0], c.X[:, 5],
                        np.nextafter(c.X[:, 5], 9.0), np.nextafter(c.X[:, 0], -9.0),
                        c.x0 + np.geomspace(1e-12, 1e-2, 50)])
    old, new = _bisection_value(c, x), c.value(x)
    scale = np.abs(c.Y).max()
    big = np.abs(old) > 1e-2 * scale
    assert np.all(np.abs(new - old)[big] <= 1e-12 * np.abs(old[big]))
    assert np.abs(new - old).max() <= 2e-14 * scale
    xs = np.concatenate([np.linspace(c.x0 + 1e-3, c.x1 - 1e-3, 30), c.x0 + np.geomspace(1e-9, 1e-3, 10)])
    exact = np.array([_exact_value(c, xi) for xi in xs])
    assert np.all(np.abs(c.value(xs) - exact) <= 1e-12 * np.abs(exact))
    assert np.array_equal(c.value(x.reshape(-1, 1)[:20000].reshape(200, 100)),
                          new[:20000].reshape(200, 100))
    assert np.isnan(c.value(np.array([np.nan]))[0]) == np.isnan(_bisection_value(c, np.array([np.nan]))[0])
    # the derivative is the quotient of the two Bézier derivatives at that u
    h = 1e-6
    xi = np.linspace(c.x0 + 0.01, c.x1 - 0.01, 101)
    assert np.allclose(c.derivative(xi), (c.value(xi + h) - c.value(xi - h)) / (2 * h), atol=1e-5 * scale)
