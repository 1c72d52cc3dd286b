"""Compiled kinematics against OpenSim 4.6: poses, markers over whole trials, velocities."""
from __future__ import annotations

import numpy as np
import pytest

import oracle
from conftest import (ARM26, ARM26_TUT, GAIT_PIPE, GAIT_REF_MODEL, LENHART, TSM, needs_data,
                      needs_opensim)
from arthron.io.osim import read_osim
from arthron.io.sto import read_sto
from arthron.multibody.kinematics import (apply_velocity_map_transpose, compile_model,
                                       forward_kinematics, marker_positions, velocity_map)
from arthron.solvers.inverse_dynamics import coordinates_from_table

PLUGINS = ("Smith2018ArticularContactForce", "Smith2018ContactMesh")


def _opensim_markers_over_motion(model_path, q, tree):
    m, s = oracle.load(model_path)
    cs = m.getCoordinateSet()
    idx = [tree.coordinate_index(cs.get(i).getName()) for i in range(cs.getSize())]
    ms = m.getMarkerSet()
    names = [ms.get(i).getName() for i in range(ms.getSize())]
    out = np.empty((q.shape[0], len(names), 3))
    for t in range(q.shape[0]):
        for i in range(cs.getSize()):
            cs.get(i).setValue(s, q[t, idx[i]], False)
        m.realizePosition(s)
        for k in range(len(names)):
            out[t, k] = oracle.vec(ms.get(k).getLocationInGround(s))
    return names, out


@needs_data
@needs_opensim
@pytest.mark.parametrize("model_path,motion_path", [
    (ARM26, ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"),
    (GAIT_REF_MODEL, GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot"),
], ids=["arm26", "gait2354"])
def test_markers_over_every_ik_frame_equal_opensim(model_path, motion_path):
    model = read_osim(model_path)
    tree = compile_model(model)
    q = coordinates_from_table(model, read_sto(motion_path))
    names, X = marker_positions(tree, q)
    onames, OX = _opensim_markers_over_motion(model_path, q, tree)
    order = [names.index(n) for n in onames]
    assert np.abs(X[:, order] - OX).max() <= 1e-9


def _random_states(tree, model, T, seed):
    rng = np.random.default_rng(seed)
    lo = np.array([c.range[0] for c in model.coordinates.values()])
    hi = np.array([c.range[1] for c in model.coordinates.values()])
    q = lo + (hi - lo) * rng.uniform(0.2, 0.8, (T, tree.nq))
    return q, rng.normal(0, 1.0, (T, tree.nq)), rng.normal(0, 3.0, (T, tree.nq))


@needs_data
@pytest.mark.parametrize("path", [ARM26, GAIT_REF_MODEL, TSM, LENHART], ids=lambda p: p.name)
def test_velocities_and_accelerations_equal_finite_differences(path):
    """v = D q̇ and a = D q̈ + γ: checked against central differences of the poses."""
    model = read_osim(path)
    tree = compile_model(model)
    q, qd, qdd = _random_states(tree, model, 3, 1)
    h = 1e-6
    kin = forward_kinematics(tree, q, qd, qdd)
    kp = forward_kinematics(tree, q + h * qd + 0.5 * h * h * qdd, qd + h * qdd)
    km = forward_kinematics(tree, q - h * qd + 0.5 * h * h * qdd, qd - h * qdd)
    # origin velocity and acceleration by differences
    np.testing.assert_allclose(kin.v, (kp.o - km.o) / (2 * h), atol=2e-6)
    kpv = forward_kinematics(tree, q + h * qd + 0.5 * h * h * qdd, qd + h * qdd, np.zeros_like(qdd))
    kmv = forward_kinematics(tree, q - h * qd + 0.5 * h * h * qdd, qd - h * qdd, np.zeros_like(qdd))
    np.testing.assert_allclose(kin.a, (kpv.v - kmv.v) / (2 * h), atol=2e-5)
    np.testing.assert_allclose(kin.al, (kpv.w - kmv.w) / (2 * h), atol=2e-5)
    # angular velocity from dR/dt = [ω]× R
    dR = (kp.R - km.R) / (2 * h)
    W = dR @ np.swapaxes(kin.R, -1, -2)
    w = np.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], -1)
    np.testing.assert_allclose(kin.w, w, atol=1e-5)  # central differences, h = 1e-6
    # explicit D reproduces the recursion's body velocities, and Dᵀ operator equals D.T @ w
    D = velocity_map(tree, q, kin)
    com_v = kin.v[:, tree.body_node] + np.cross(kin.w[:, tree.body_node],
                                                kin.body_com(tree) - kin.body_origin(tree))
    v = np.einsum("tbik,tk->tbi", D, qd)
    np.testing.assert_allclose(v[:, :, :3], com_v, atol=1e-12)
    np.testing.assert_allclose(v[:, :, 3:], kin.w[:, tree.body_node], atol=1e-12)
    rng = np.random.default_rng(2)
    F, M = rng.normal(size=(3, tree.nb, 3)), rng.normal(size=(3, tree.nb, 3))
    tau = apply_velocity_map_transpose(tree, kin, F, M)
    ref = np.einsum("tbik,tbi->tk", D[:, :, :3], F) + np.einsum("tbik,tbi->tk", D[:, :, 3:], M)
    np.testing.assert_allclose(tau, ref, atol=1e-10)


@needs_data
@needs_opensim
def test_body_poses_random_states_all_joint_types_opensim():
    """Thoracoscapular (ScapulothoracicJoint) and Lenhart (spline-coupled CustomJoints)."""
    for path in (TSM, LENHART):
        model = read_osim(path)
        tree = compile_model(model)
        m, s = oracle.load(path, remove_types=PLUGINS)
        cs = m.getCoordinateSet()
        q, _, _ = _random_states(tree, model, 3, 3)
        for t in range(3):
            for i in range(cs.getSize()):
                cs.get(i).setValue(s, q[t, tree.coordinate_index(cs.get(i).getName())], False)
            for i in range(cs.getSize()):  # locked/clamped coordinates keep OpenSim's value
                q[t, tree.coordinate_index(cs.get(i).getName())] = cs.get(i).getValue(s)
            P = oracle.body_poses(m, s)
            kin = forward_kinematics(tree, q[t:t + 1])
            for bi, b in enumerate(tree.body_names):
                np.testing.assert_allclose(kin.R[0, tree.body_node[bi]], P[b][0], atol=1e-12)
                np.testing.assert_allclose(kin.o[0, tree.body_node[bi]], P[b][1], atol=1e-12)
