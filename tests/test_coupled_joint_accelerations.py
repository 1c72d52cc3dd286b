"""Which accelerations are right on a CustomJoint that couples rotations and translations to one
coordinate (issue 11, finding 7)?

Lenhart et al. (2015)'s left knee (``knee_l``): rotation1 = knee_flex_l, rotations 2-3 and all
three translations are splines of knee_flex_l (the "walker knee" pattern of several full-body
models). Along a smooth knee trajectory q(t), the acceleration of a point fixed on the tibia is
computed three ways: arthron's forward kinematics (analytic, with the velocity product terms),
OpenSim 4.6 (Simbody's ``calcBodyAccelerationFromUDot`` with u̇ = q̈), and central second
differences of the point's position from OpenSim's own ``getTransformInGround`` (independent of
either velocity formulation; error ~1e-6 m/s² at h = 1e-4 s).

Result (see README "Coupled CustomJoints: which accelerations to believe"): positions agree
exactly; arthron's accelerations equal the finite differences to 1e-6 m/s²; OpenSim's differ by
up to ~0.04 m/s² (0.5 % of the acceleration), and the difference is purely velocity-dependent
(zero when q̇ = 0). Inverse dynamics inherits that difference (up to ~1 N·m at the knee during
swing on a walking trial).
"""
from __future__ import annotations

import warnings

import numpy as np

from conftest import LENHART, needs_data, needs_opensim
from arthron.io.osim import read_osim
from arthron.multibody.kinematics import forward_kinematics
from arthron.multibody.tree import compile_model

STATION = np.array([0.0, -0.3, 0.05])   # m, in the tibia frame (mid-shaft, off the knee axes)
W = 2 * np.pi * 1.3


def _traj(tree, k, t):
    q = tree.default_q.copy()
    qd, qdd = np.zeros_like(q), np.zeros_like(q)
    q[k] = 0.7 + 0.6 * np.sin(W * t)
    qd[k] = 0.6 * W * np.cos(W * t)
    qdd[k] = -0.6 * W * W * np.sin(W * t)
    return q, qd, qdd


@needs_data
@needs_opensim
def test_coupled_knee_accelerations_arthron_vs_finite_differences_vs_opensim():
    import opensim as osim
    import oracle
    m, s = oracle.load(LENHART, remove_types=("Smith2018ArticularContactForce", "Smith2018ContactMesh"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        am = read_osim(LENHART)
    tree = compile_model(am)
    names = list(am.coordinates)
    k = names.index("knee_flex_l")
    cs, matter = m.getCoordinateSet(), m.getMatterSubsystem()
    body = m.getBodySet().get("tibia_l")
    node = tree.body_node[list(tree.body_names).index("tibia_l")]

    def set_state(q, qd):
        for i, n in enumerate(names):
            cs.get(n).setValue(s, float(q[i]), False)
            cs.get(n).setSpeedValue(s, float(qd[i]))
        m.realizeVelocity(s)

    def opensim_station_acc(q, qd, qdd):
        set_state(q, qdd)
        udot = osim.Vector(s.getU())          # u̇ = q̈ in OpenSim's mobility order
        set_state(q, qd)
        A = osim.VectorOfSpatialVec()
        matter.calcBodyAccelerationFromUDot(s, udot, A)
        a = A.get(int(body.getMobilizedBodyIndex()))
        al = np.array([a.get(0).get(j) for j in range(3)])
        ao = np.array([a.get(1).get(j) for j in range(3)])
        R = oracle.mat33(body.getTransformInGround(s).R())
        w = body.getAngularVelocityInGround(s)
        w = np.array([w.get(j) for j in range(3)])
        r = R @ STATION
        return ao + np.cross(al, r) + np.cross(w, np.cross(w, r))

    def opensim_station_pos(q):
        for i, n in enumerate(names):
            cs.get(n).setValue(s, float(q[i]), False)
        m.realizePosition(s)
        X = body.getTransformInGround(s)
        return oracle.vec(X.p()) + oracle.mat33(X.R()) @ STATION

    def arthron_station(q, qd, qdd):
        kin = forward_kinematics(tree, q[None], qd[None], qdd[None])
        R, o = kin.node("R", node)[0], kin.node("o", node)[0]
        a, al, w = kin.node("a", node)[0], kin.node("al", node)[0], kin.node("w", node)[0]
        r = R @ STATION
        return o + r, a + np.cross(al, r) + np.cross(w, np.cross(w, r))

    h = 1e-4
    err_arthron, err_opensim, scale = [], [], []
    for t in np.linspace(0.05, 0.7, 6):
        q, qd, qdd = _traj(tree, k, t)
        P = [opensim_station_pos(_traj(tree, k, t + d)[0]) for d in (-h, 0.0, h)]
        fd = (P[2] - 2 * P[1] + P[0]) / h ** 2
        pos, acc = arthron_station(q, qd, qdd)
        np.testing.assert_allclose(pos, P[1], atol=1e-12)          # same positions
        err_arthron.append(np.linalg.norm(acc - fd))
        err_opensim.append(np.linalg.norm(opensim_station_acc(q, qd, qdd) - fd))
        scale.append(np.linalg.norm(fd))
        # the difference is in the velocity terms only: with q̇ = 0 both agree to rounding
        z = np.zeros_like(qd)
        np.testing.assert_allclose(arthron_station(q, z, qdd)[1], opensim_station_acc(q, z, qdd),
                                   atol=1e-10)
    assert max(err_arthron) < 1e-4, err_arthron              # arthron = finite differences
    assert max(err_opensim) > 100 * max(err_arthron), (err_opensim, err_arthron)
    assert max(err_opensim) / max(scale) > 1e-3               # OpenSim off by > 0.1 %
