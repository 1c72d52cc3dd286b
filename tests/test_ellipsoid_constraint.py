"""PointOnEllipsoidConstraint (Sarshari et al. 2021, Eq. 10): residual, analytic Jacobian,
acceleration bias and constraint loads against finite differences and an explicit formula on a
small model built in Python; assemble() holds it to 1e-12."""
from __future__ import annotations

import numpy as np
import pytest

from arthron.errors import DataFileError, ModelFileError
from arthron.geometry.spatial import rotation_xyz
from arthron.models.functions import Constant, LinearFunction
from arthron.models.model import (Body, Constraint, Coordinate, Joint, Marker, Model, OffsetFrame,
                                  TransformAxis)
from arthron.multibody.constrained_dynamics import constraint_bias, constraint_loads
from arthron.multibody.constraints import assemble, compile_constraints
from arthron.multibody.forward_dynamics import forward_accelerations
from arthron.multibody.inverse_dynamics import inverse_dynamics
from arthron.multibody.kinematics import compile_model, forward_kinematics, marker_positions

CENTER = np.array([0.01, -0.15, 0.06])
RADII = np.array([0.15, 0.21, 0.095])
ORIENT = np.array([0.1, -0.2, 0.3])
TS = np.array([-0.12, -0.01, 0.02])


def _ball(m, name, parent, child, ptr, ctr, coords):
    def frame(fname, par, tr):
        f = OffsetFrame(fname, f"/jointset/{name}/{fname}", par, np.asarray(tr, float), np.zeros(3),
                        owner=f"joint:{name}")
        m.frames[f.path] = f
        return f.path
    axes = [TransformAxis(f"rotation{i + 1}", [c], np.eye(3)[k], LinearFunction(1.0, 0.0))
            for i, (c, k) in enumerate(zip(coords, (1, 2, 0)))]
    axes += [TransformAxis(f"translation{i + 1}", [], np.eye(3)[i], Constant(0.0)) for i in range(3)]
    m.joints[name] = Joint(name, "CustomJoint", frame("p", parent, ptr), frame("c", child, ctr),
                           [Coordinate(c, name, 0.0) for c in coords], spatial_transform=axes)


def toy_model(ellipsoid_on="/bodyset/thorax") -> Model:
    """ground → thorax (moving: one coordinate, so the ellipsoid's body moves) → scapula (3
    rotations about a point) → arm (3 rotations); TS on the scapula stays on an oriented,
    off-centre ellipsoid on the thorax."""
    m = Model(name="toy_st")
    m.bodies["thorax"] = Body("thorax", 20.0, np.array([0, -0.2, 0.0]), np.diag([1.0, 0.5, 0.9]))
    m.bodies["scapula"] = Body("scapula", 0.7, np.array([-0.05, -0.05, 0.0]),
                               np.array([[0.001, 2e-4, 0], [2e-4, 0.002, 1e-4], [0, 1e-4, 0.0015]]))
    m.bodies["arm"] = Body("arm", 2.0, np.array([0.0, -0.15, 0.01]), np.diag([0.012, 0.002, 0.011]))
    m.frames["/jointset/trunk/p"] = OffsetFrame("p", "/jointset/trunk/p", "/ground", np.zeros(3),
                                                np.zeros(3), owner="joint:trunk")
    m.frames["/jointset/trunk/c"] = OffsetFrame("c", "/jointset/trunk/c", "/bodyset/thorax",
                                                np.zeros(3), np.zeros(3), owner="joint:trunk")
    m.joints["trunk"] = Joint("trunk", "PinJoint", "/jointset/trunk/p", "/jointset/trunk/c",
                              [Coordinate("lean", "trunk", 0.1)])
    _ball(m, "st", "/bodyset/thorax", "/bodyset/scapula", [0.08, 0.0, 0.14], [0.0, 0.02, 0.0],
          ["sy", "sz", "sx"])
    _ball(m, "gh", "/bodyset/scapula", "/bodyset/arm", [0.0, -0.03, -0.04], [0, 0, 0],
          ["hy", "hz", "hyy"])
    m.markers["TS"] = Marker("TS", "/bodyset/scapula", TS)
    m.constraints.append(Constraint("TS_on_ribcage", "PointOnEllipsoidConstraint", {
        "socket_body": "/bodyset/scapula", "location": TS, "socket_ellipsoid_frame": ellipsoid_on,
        "center": CENTER, "radii": RADII, "orientation": ORIENT}))
    return m


def _phi_explicit(model, tree, q):
    """Eq. 10 written out: TS in the ellipsoid frame from marker and body poses."""
    kin = forward_kinematics(tree, q)
    _, P = marker_positions(tree, q, ["TS"], kin)
    P = P[:, 0]
    n = tree.body_node[tree.body_index("thorax")]
    RE = kin.R[:, n] @ rotation_xyz(ORIENT)
    oE = kin.o[:, n] + kin.R[:, n] @ CENTER
    pE = np.einsum("tji,tj->ti", RE, P - oE)
    return np.sum((pE / RADII) ** 2, -1) - 1.0


@pytest.fixture(scope="module")
def toy():
    m = toy_model()
    tree = compile_model(m)
    return m, tree, compile_constraints(m, tree)


def test_residual_equals_eq10_and_jacobian_equals_finite_differences(toy):
    m, tree, cs = toy
    rng = np.random.default_rng(3)
    q = rng.uniform(-0.6, 0.6, (5, tree.nq))
    assert cs.size == 1
    np.testing.assert_allclose(cs.residuals(q)[:, 0], _phi_explicit(m, tree, q), atol=1e-13)
    G = cs.jacobian(q)
    h = 1e-6
    for k in range(tree.nq):
        dq = np.zeros(tree.nq)
        dq[k] = h
        fd = (cs.residuals(q + dq) - cs.residuals(q - dq))[:, 0] / (2 * h)
        np.testing.assert_allclose(G[:, 0, k], fd, atol=1e-7 * max(1.0, np.abs(G).max()))
    assert np.abs(G[:, 0, tree.coordinate_index("hy")]).max() == 0.0   # arm does not move TS
    # the ellipsoid's body carries the scapula along: leaning the thorax leaves Φ unchanged
    assert np.abs(G[:, 0, tree.coordinate_index("lean")]).max() < 1e-13


def test_ellipsoid_on_ground_and_on_the_thorax_body_agree_when_the_thorax_is_at_rest():
    mg, mt = toy_model("/ground"), toy_model("/bodyset/thorax")
    tg, tt = compile_model(mg), compile_model(mt)
    q = np.random.default_rng(4).uniform(-0.5, 0.5, (4, tg.nq))
    q[:, tg.coordinate_index("lean")] = 0.0
    cg, ct = compile_constraints(mg, tg), compile_constraints(mt, tt)
    np.testing.assert_allclose(cg.residuals(q), ct.residuals(q), atol=1e-14)
    np.testing.assert_allclose(cg.jacobian(q)[:, :, 1:], ct.jacobian(q)[:, :, 1:], atol=1e-13)


def test_assemble_holds_the_constraint_to_1e_12(toy):
    m, tree, cs = toy
    q0 = np.random.default_rng(5).uniform(-0.4, 0.4, (6, tree.nq))
    assert np.abs(cs.residuals(q0)).max() > 1e-2
    q = assemble(m, tree, q0, constraints=cs)
    assert np.abs(cs.residuals(q)).max() < 1e-12
    assert np.abs(_phi_explicit(m, tree, q)).max() < 1e-12
    # the closest point: the correction is along the constraint normal Gᵀ (unit weights)
    G = cs.jacobian(q)[:, 0]
    d = q - q0
    cosang = np.einsum("tk,tk->t", d, G) / np.linalg.norm(d, axis=1) / np.linalg.norm(G, axis=1)
    np.testing.assert_allclose(np.abs(cosang), 1.0, atol=1e-6)


def test_bias_is_the_second_time_derivative_at_zero_acceleration(toy):
    """Φ(q(t)) along a smooth path: Φ̈ = G q̈ + Ġ q̇ by central differences in time."""
    m, tree, cs = toy
    rng = np.random.default_rng(6)
    a, b, w = rng.uniform(-0.4, 0.4, (3, tree.nq))
    w = 1.0 + 2.0 * np.abs(w)

    def qt(t):
        return a + b * np.sin(w * t)
    t, h = 0.37, 1e-4
    q = qt(t)[None]
    qd = (b * w * np.cos(w * t))[None]
    qdd = (-b * w ** 2 * np.sin(w * t))[None]
    fd = (cs.residuals(qt(t + h)) - 2 * cs.residuals(q) + cs.residuals(qt(t - h)))[0, 0] / h ** 2
    an = (cs.jacobian(q)[0, 0] @ qdd[0]) + constraint_bias(tree, q, qd, cs)[0, 0]
    assert abs(an - fd) < 1e-5 * max(1.0, abs(fd))


def test_constraint_loads_are_G_transpose_mu_and_forward_dynamics_keeps_phi_ddot_zero(toy):
    m, tree, cs = toy
    rng = np.random.default_rng(7)
    q = assemble(m, tree, rng.uniform(-0.3, 0.3, (3, tree.nq)), constraints=cs)
    zero = np.zeros_like(q)
    mu = rng.normal(size=(3, 1)) * 5.0
    loads, gen = constraint_loads(tree, q, cs, mu)
    tau = inverse_dynamics(tree, q, zero, zero, list(loads)) - inverse_dynamics(tree, q, zero, zero)
    Gt_mu = np.einsum("tmk,tm->tk", cs.jacobian(q), mu)
    np.testing.assert_allclose(-tau + gen, Gt_mu, atol=1e-10)
    # forward dynamics with the constraint: G q̈ + Ġq̇ = 0
    qd = rng.normal(size=q.shape)
    G = cs.jacobian(q)
    qd -= np.einsum("tmk,tm->tk", G, np.linalg.solve(G @ np.swapaxes(G, 1, 2),
                                                     np.einsum("tmk,tk->tm", G, qd)[..., None])[..., 0])
    qdd = forward_accelerations(tree, q, qd, constraints=cs)
    acc = np.einsum("tmk,tk->tm", G, qdd) + constraint_bias(tree, q, qd, cs)
    assert np.abs(acc).max() < 1e-9


def test_bad_properties_are_typed_errors():
    m = toy_model()
    m.constraints[0].properties["radii"] = np.array([0.1, 0.0, 0.1])
    with pytest.raises(ModelFileError, match="radii must be positive"):
        compile_constraints(m, compile_model(m))
    m = toy_model()
    del m.constraints[0].properties["location"]
    with pytest.raises(ModelFileError, match="TS_on_ribcage"):
        compile_constraints(m, compile_model(m))


def test_ik_recovers_a_constrained_motion_and_holds_the_constraint():
    """Markers of an assembled motion (noise-free): IK holds Φ to 1e-9 and returns the pose."""
    from arthron.solvers.inverse_kinematics import solve_ik
    from arthron.tables import MarkerTrial
    m = toy_model()
    for name, body, loc in (("AA", "scapula", [0.0, 0.0, 0.0]), ("AI", "scapula", [-0.11, -0.12, 0.0]),
                            ("EL", "arm", [0.03, -0.3, 0.0]), ("EM", "arm", [-0.03, -0.3, 0.01]),
                            ("HM", "arm", [0.01, -0.15, 0.03]), ("T1", "thorax", [0.0, 0.1, -0.1]),
                            ("T2", "thorax", [0.1, 0.0, 0.1])):
        m.markers[name] = Marker(name, f"/bodyset/{body}", np.array(loc, float))
    tree = compile_model(m)
    cs = compile_constraints(m, tree)
    t = np.linspace(0, 1, 8)
    qd = 0.3 * np.sin(np.outer(t, np.arange(1, tree.nq + 1)))
    q = assemble(m, tree, qd, constraints=cs)
    names, P = marker_positions(tree, q)
    trial = MarkerTrial(frames=np.arange(1, 9), time=t, labels=list(names), positions=P,
                        data_rate=100.0, camera_rate=100.0, orig_data_rate=100.0,
                        orig_start_frame=1, orig_num_frames=8, units="m")
    res = solve_ik(m, trial, q0=q[0])
    assert np.abs(cs.residuals(res.q)).max() < 1e-9
    assert res.max.max() < 1e-6
    np.testing.assert_allclose(res.q, q, atol=1e-5)


def test_fit_ellipsoid_recovers_a_noisy_ellipsoid_and_rejects_too_few_points():
    from arthron.geometry.ellipsoid_fit import ellipsoid_distance, fit_ellipsoid
    rng = np.random.default_rng(0)
    u = rng.normal(size=(400, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    P = CENTER + u * RADII + rng.normal(scale=1e-4, size=u.shape)
    f = fit_ellipsoid(P)
    np.testing.assert_allclose(f["center"], CENTER, atol=3e-5)
    np.testing.assert_allclose(f["radii"], RADII, atol=3e-5)
    assert 0.7e-4 < f["rms"] < 1.3e-4
    # the radial distance is exact for a sphere
    np.testing.assert_allclose(ellipsoid_distance([[0.3, 0, 0], [0, 0.05, 0]], [0, 0, 0], [0.1] * 3),
                               [0.2, -0.05], atol=1e-15)
    with pytest.raises(DataFileError, match="at least 6 points"):
        fit_ellipsoid(P[:5])
