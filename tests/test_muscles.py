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
