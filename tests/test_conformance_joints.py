"""Conformance of every registered joint type (arthron.multibody.joints.JOINT_TYPES), without
OpenSim: a small chain built in Python with the joint type is run through the same checks:

* the velocity map D (mass centres and origins) against central differences of forward
  kinematics, the recursion's velocities against D q̇, its accelerations against differences of
  velocities, and the Dᵀ operator against the dense Dᵀ;
* the mass matrix (CRBA) against the kinetic-energy Hessian and against Dᵀ M D;
* inverse dynamics against an independent Newton–Euler recursion (joint wrenches from the leaves,
  then their virtual power on each joint's relative twist, with relative twists differenced from
  the poses), and ``τ(q̈) − τ(0) = M q̈``;
* forward dynamics inverting inverse dynamics;
* Simbody mobilities: for types whose first three speeds are angular velocities, ``u`` is the
  relative angular velocity ω_FM in F, and ``τ_u · u = τ_q · q̇``.

A new joint type is covered by registering it.
"""
from __future__ import annotations

import numpy as np
import pytest

from arthron.models.functions import Constant, LinearFunction, PolynomialFunction, SimmSpline
from arthron.models.model import Body, Coordinate, Joint, Model, OffsetFrame, TransformAxis
from arthron.multibody.forward_dynamics import forward_accelerations
from arthron.multibody.inverse_dynamics import inverse_dynamics
from arthron.multibody.joints import JOINT_TYPES
from arthron.multibody.kinematics import (apply_velocity_map_transpose, compile_model, forward_kinematics,
                                          mobility_forces, qdot_from_speeds, velocity_map)
from arthron.multibody.mass_matrix import mass_matrix

TYPES = sorted(JOINT_TYPES)
H = 1e-6


# ----------------------------------------------------------------------------- model building
def _custom_axes(jname, cn, rng):
    """Six TransformAxis of a CustomJoint: identity, spline-coupled and constant rotations;
    a translation coupled to the first angle by a cubic, an identity translation, a constant one."""
    def ax():
        a = rng.normal(size=3)
        return a / np.linalg.norm(a)
    spline = SimmSpline(np.linspace(-2.0, 2.0, 7), 0.6 * np.sin(np.linspace(-2.0, 2.0, 7)) + 0.1)
    return [
        TransformAxis("rotation1", [cn[0]], ax(), LinearFunction(1.0, 0.0)),
        TransformAxis("rotation2", [cn[1]], ax(), spline),
        TransformAxis("rotation3", [], ax(), Constant(0.3)),
        TransformAxis("translation1", [cn[0]], ax(), PolynomialFunction([0.02, -0.01, 0.03, 0.01])),
        TransformAxis("translation2", [cn[2]], ax(), None),
        TransformAxis("translation3", [], ax(), Constant(0.05)),
    ]


def chain_model(jtype: str, seed: int = 0) -> Model:
    """ground -Pin-> base -jtype-> link1 -jtype-> link2, with random offset frames and inertias."""
    rng = np.random.default_rng(seed)
    jt = JOINT_TYPES[jtype]
    m = Model(name=f"chain_{jtype}", gravity=np.array([0.0, -9.80665, 0.0]))

    def body(name, mass):
        A = rng.normal(size=(3, 3))
        m.bodies[name] = Body(name, mass, rng.normal(0, 0.05, 3) + [0.0, -0.12, 0.0],
                              A @ A.T * 0.004 + 0.01 * np.eye(3))

    def frame(joint, base, xyz, scale=0.4):
        p = f"/jointset/{joint}/{base}_offset_{joint}"
        m.frames[p] = OffsetFrame(name=f"{base}_offset_{joint}", path=p,
                                  parent="/ground" if base == "ground" else f"/bodyset/{base}",
                                  translation=np.asarray(xyz, float) + rng.normal(0, 0.03, 3),
                                  orientation=rng.normal(0, scale, 3), owner=f"joint:{joint}")
        return p

    body("base", 2.0)
    body("link1", 1.5)
    body("link2", 0.8)
    m.joints["root"] = Joint("root", "PinJoint", frame("root", "ground", [0.0, 1.0, 0.0]),
                             frame("root", "base", [0.0, 0.05, 0.0]), [Coordinate("root_q", "root")])
    parent = "base"
    for k, child in ((1, "link1"), (2, "link2")):
        jn = f"j{k}"
        if jt.motion_types is None:      # spatial transform decides: CustomJoint
            mts = ("rotational", "rotational", "translational")
        else:
            mts = jt.motion_types
        coords = [Coordinate(f"{jn}_{i}", jn, motion_type=mt, range=(-2.0, 2.0)) for i, mt in enumerate(mts)]
        st = _custom_axes(jn, [c.name for c in coords], rng) if jt.motion_types is None else None
        m.joints[jn] = Joint(jn, jtype, frame(jn, parent, [0.02, -0.25, 0.01]),
                             frame(jn, child, [0.0, 0.04, 0.0]), coords, spatial_transform=st,
                             parameters={k_: np.array(v, copy=True) if isinstance(v, np.ndarray) else v
                                         for k_, v in jt.parameters.items()})
        parent = child
    return m


def _states(tree, T=3, seed=1):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-0.7, 0.7, (T, tree.nq))
    return q, rng.normal(0, 1.0, (T, tree.nq)), rng.normal(0, 3.0, (T, tree.nq))


def _vee(W):
    return np.stack([W[..., 2, 1] - W[..., 1, 2], W[..., 0, 2] - W[..., 2, 0], W[..., 1, 0] - W[..., 0, 1]], -1) / 2


# ----------------------------------------------------------------------------- Newton–Euler
def newton_euler(model, tree, q, qd, qdd, loads=()):
    """Independent check: Newton–Euler from the leaves to the root, body by body.

    For each body b with parent joint j (centre c_j) and child joints k: the force and moment
    (about c_j) the joint applies to b are
    f_j = m(a_C − g) − F_ext + Σ_k f_k,  m_j = I α + ω×Iω + (C − c_j)×m(a_C − g) − M_ext,c_j
          + Σ_k [m_k + (c_k − c_j) × f_k].
    Returns {joint name: (f (T,3), m (T,3))} on the child, in ground.
    """
    from arthron.multibody.inverse_dynamics import body_wrenches_from_loads
    kin = forward_kinematics(tree, q, qd, qdd)
    nb = tree.nb
    out = {}
    Fe, Me = body_wrenches_from_loads(tree, kin, list(loads)) if loads else (0 * kin.o[:, :nb], 0 * kin.o[:, :nb])
    order = list(range(len(tree.joint_names)))[::-1]
    centre = {}
    for j in order:
        name = tree.joint_names[j]
        b = tree.joint_child_body[j]
        _, X = model.frame_in_base(model.joints[name].child_frame)
        n = tree.body_node[b]
        R, o = kin.R[:, n], kin.o[:, n]
        centre[name] = o + R @ X.p
    for j in order:
        name = tree.joint_names[j]
        b = tree.joint_child_body[j]
        n = tree.body_node[b]
        R, o, w, al, a = kin.R[:, n], kin.o[:, n], kin.w[:, n], kin.al[:, n], kin.a[:, n]
        rc = R @ tree.com[b]
        aC = a + np.cross(al, rc) + np.cross(w, np.cross(w, rc))
        I = R @ tree.inertia[b] @ np.swapaxes(R, 1, 2)
        fin = tree.mass[b] * (aC - tree.gravity) - Fe[:, b]
        cj = centre[name]
        mom = (np.einsum("tij,tj->ti", I, al) + np.cross(w, np.einsum("tij,tj->ti", I, w))
               + np.cross(o + rc - cj, fin) - Me[:, b])
        f = fin.copy()
        for k in range(len(tree.joint_names)):
            if tree.joint_parent_body[k] == b:
                fk, mk = out[tree.joint_names[k]]
                f += fk
                mom += mk + np.cross(centre[tree.joint_names[k]] - cj, fk)
        out[name] = (f, mom)
    return out


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(params=TYPES)
def chain(request):
    model = chain_model(request.param)
    return request.param, model, compile_model(model)


def test_registry_covers_the_model_joint_types():
    from arthron.models.model import JOINT_TYPES as MODEL_TYPES
    assert set(MODEL_TYPES) <= set(JOINT_TYPES)


def test_velocity_map_equals_finite_differences(chain):
    _, model, tree = chain
    q, qd, qdd = _states(tree)
    kin = forward_kinematics(tree, q, qd, qdd)
    for point in ("com", "origin"):
        D = velocity_map(tree, q, kin, point=point)
        for k in range(tree.nq):
            e = np.zeros(tree.nq)
            e[k] = H
            kp, km = forward_kinematics(tree, q + e), forward_kinematics(tree, q - e)
            pp = kp.body_com(tree) if point == "com" else kp.body_origin(tree)
            pm = km.body_com(tree) if point == "com" else km.body_origin(tree)
            np.testing.assert_allclose(D[:, :, :3, k], (pp - pm) / (2 * H), atol=1e-7, err_msg=f"{point} q{k}")
            dR = (kp.body_R(tree) - km.body_R(tree)) / (2 * H)
            w = _vee(dR @ np.swapaxes(kin.body_R(tree), -1, -2))
            np.testing.assert_allclose(D[:, :, 3:, k], w, atol=1e-7, err_msg=f"ω q{k}")
    # the recursion's body velocities are D q̇
    D = velocity_map(tree, q, kin)
    v = np.einsum("tbik,tk->tbi", D, qd)
    nodes = tree.body_node
    vc = kin.v[:, nodes] + np.cross(kin.w[:, nodes], kin.body_com(tree) - kin.body_origin(tree))
    np.testing.assert_allclose(v[:, :, :3], vc, atol=1e-12)
    np.testing.assert_allclose(v[:, :, 3:], kin.w[:, nodes], atol=1e-12)
    # Dᵀ as an operator
    rng = np.random.default_rng(5)
    F, M = rng.normal(size=(2, q.shape[0], tree.nb, 3))
    ref = np.einsum("tbik,tbi->tk", D[:, :, :3], F) + np.einsum("tbik,tbi->tk", D[:, :, 3:], M)
    np.testing.assert_allclose(apply_velocity_map_transpose(tree, kin, F, M), ref, atol=1e-12)


def test_accelerations_equal_finite_differences_of_velocities(chain):
    _, model, tree = chain
    q, qd, qdd = _states(tree)
    kin = forward_kinematics(tree, q, qd, qdd)
    qp, qdp = q + H * qd + 0.5 * H * H * qdd, qd + H * qdd
    qm, qdm = q - H * qd + 0.5 * H * H * qdd, qd - H * qdd
    kp, km = forward_kinematics(tree, qp, qdp), forward_kinematics(tree, qm, qdm)
    np.testing.assert_allclose(kin.v, (kp.o - km.o) / (2 * H), atol=1e-7)
    np.testing.assert_allclose(kin.w, _vee((kp.R - km.R) / (2 * H) @ np.swapaxes(kin.R, -1, -2)), atol=1e-7)
    np.testing.assert_allclose(kin.a, (kp.v - km.v) / (2 * H), atol=2e-6)
    np.testing.assert_allclose(kin.al, (kp.w - km.w) / (2 * H), atol=2e-6)


def test_mass_matrix_equals_kinetic_energy_hessian_and_DtMD(chain):
    _, model, tree = chain
    q, _, _ = _states(tree)
    T = q.shape[0]
    M = mass_matrix(tree, q)
    np.testing.assert_allclose(M, np.swapaxes(M, 1, 2), atol=1e-14)

    def energy(u):
        kin = forward_kinematics(tree, q, u)
        nodes = tree.body_node
        R, w = kin.R[:, nodes], kin.w[:, nodes]
        vc = kin.v[:, nodes] + np.cross(w, np.einsum("tbij,bj->tbi", R, tree.com))
        wb = np.einsum("tbji,tbj->tbi", R, w)
        return 0.5 * (np.einsum("b,tbi,tbi->t", tree.mass, vc, vc)
                      + np.einsum("tbi,bij,tbj->t", wb, tree.inertia, wb))

    E = np.eye(tree.nq)
    Mh = np.empty_like(M)
    for k in range(tree.nq):
        for l in range(tree.nq):
            ek, el = np.tile(E[k], (T, 1)), np.tile(E[l], (T, 1))
            Mh[:, k, l] = energy(ek + el) - energy(ek) - energy(el)      # ½(e_k+e_l)ᵀM(e_k+e_l) − …
    np.testing.assert_allclose(M, Mh, atol=1e-12)
    kin = forward_kinematics(tree, q)
    D = velocity_map(tree, q, kin)
    R = kin.body_R(tree)
    IG = R @ tree.inertia[None] @ np.swapaxes(R, -1, -2)
    Md = (np.einsum("tbiq,b,tbir->tqr", D[:, :, :3], tree.mass, D[:, :, :3])
          + np.einsum("tbiq,tbij,tbjr->tqr", D[:, :, 3:], IG, D[:, :, 3:]))
    np.testing.assert_allclose(M, Md, atol=1e-13)


def test_inverse_dynamics_equals_newton_euler(chain):
    _, model, tree = chain
    q, qd, qdd = _states(tree)
    tau = inverse_dynamics(tree, q, qd, qdd)
    ne = newton_euler(model, tree, q, qd, qdd)
    kin = forward_kinematics(tree, q)
    # τ_k = Σ_j f_j · ∂v_rel,j/∂q̇_k + m_j · ∂ω_rel,j/∂q̇_k: the joints' wrenches on their children
    # (moments about the joint centres c_j) times the relative twist of child and parent at c_j,
    # differenced from the poses.
    ref = np.zeros_like(tau)
    for k in range(tree.nq):
        e = np.zeros(tree.nq)
        e[k] = H
        kp, km = forward_kinematics(tree, q + e), forward_kinematics(tree, q - e)
        for j, name in enumerate(tree.joint_names):
            f, m = ne[name]
            cb, pb = tree.joint_child_body[j], tree.joint_parent_body[j]
            XM = tree.joint_child_frame[j]

            def twist(kk, b, point):          # (velocity of the body point at `point`, ω)·dt
                if b < 0:
                    return np.zeros_like(point), np.zeros((point.shape[0], 3, 3))
                n = tree.body_node[b]
                R0, o0 = kin.R[:, n], kin.o[:, n]
                local = np.einsum("tji,tj->ti", R0, point - o0)          # the point, fixed in b
                return kk.o[:, n] + np.einsum("tij,tj->ti", kk.R[:, n], local), kk.R[:, n]

            n = tree.body_node[cb]
            c = kin.o[:, n] + kin.R[:, n] @ XM.p
            dv, dw = 0.0, 0.0
            for b, sgn in ((cb, 1.0), (pb, -1.0)):
                if b < 0:
                    continue
                xp, Rp = twist(kp, b, c)
                xm, Rm = twist(km, b, c)
                dv = dv + sgn * (xp - xm) / (2 * H)
                R0 = kin.R[:, tree.body_node[b]]
                dw = dw + sgn * _vee((Rp - Rm) / (2 * H) @ np.swapaxes(R0, -1, -2))
            ref[:, k] += np.einsum("ti,ti->t", f, dv) + np.einsum("ti,ti->t", m, dw)
    np.testing.assert_allclose(tau, ref, atol=2e-6 * max(1.0, np.abs(tau).max()))
    # τ is affine in q̈ with the mass matrix as slope
    tau0 = inverse_dynamics(tree, q, qd, np.zeros_like(qdd))
    np.testing.assert_allclose(tau - tau0, np.einsum("tij,tj->ti", mass_matrix(tree, q), qdd), atol=1e-11)


def test_forward_dynamics_inverts_inverse_dynamics(chain):
    _, model, tree = chain
    q, qd, qdd = _states(tree)
    tau = inverse_dynamics(tree, q, qd, qdd)
    np.testing.assert_allclose(forward_accelerations(tree, q, qd, tau), qdd, atol=1e-9)
    # a locked coordinate keeps zero acceleration and the others follow the reduced equations
    locked = np.zeros(tree.nq, bool)
    locked[0] = True
    qdd_l = qdd.copy()
    qdd_l[:, 0] = 0.0
    tau_l = inverse_dynamics(tree, q, qd, qdd_l)
    np.testing.assert_allclose(forward_accelerations(tree, q, qd, tau_l, locked=locked), qdd_l, atol=1e-9)


def test_angular_velocity_mobilities(chain):
    """Speeds u of an angular-velocity group are the relative angular velocity of the joint's
    mobilizer (ω_FM in F: checked as a vector when the group's rotations are the joint's only
    rotations, by magnitude otherwise, with the joint's other speeds zero), and forces
    conjugate to u have the power of those conjugate to q̇."""
    jtype, model, tree = chain
    jt = JOINT_TYPES[jtype]
    groups = [list(g) for g in tree.angular_velocity_groups]
    assert len(groups) == (2 if jt.angular_velocity else 0)
    q, u, udot = _states(tree)
    for j in range(len(tree.joint_names)):
        g = list(tree.joint_coords[j][:3])
        if g in groups:
            for c in tree.joint_coords[j][3:]:
                u[:, c] = udot[:, c] = 0.0
    qd, qdd = qdot_from_speeds(tree, q, u, udot)
    kin = forward_kinematics(tree, q, qd, qdd)
    for j in range(len(tree.joint_names)):
        g = list(tree.joint_coords[j][:3])
        if g not in groups:
            continue
        cb, pb = tree.joint_child_body[j], tree.joint_parent_body[j]
        RF = kin.R[:, tree.body_node[pb]] @ tree.joint_parent_frame[j].R
        wF = kin.w[:, tree.body_node[pb]]
        wrel = kin.w[:, tree.body_node[cb]] - wF
        alrel = kin.al[:, tree.body_node[cb]] - kin.al[:, tree.body_node[pb]] - np.cross(wF, wrel)
        if jt.motion_types.count("rotational") == 3:
            np.testing.assert_allclose(np.einsum("tji,tj->ti", RF, wrel), u[:, g], atol=1e-12)
            np.testing.assert_allclose(np.einsum("tji,tj->ti", RF, alrel), udot[:, g], atol=1e-10)
        else:
            np.testing.assert_allclose(np.linalg.norm(wrel, axis=-1), np.linalg.norm(u[:, g], axis=-1), atol=1e-12)
    tau = inverse_dynamics(tree, q, qd, qdd)
    tu = mobility_forces(tree, q, tau)
    np.testing.assert_allclose(np.einsum("ti,ti->t", tu, u), np.einsum("ti,ti->t", tau, qd), rtol=1e-12, atol=1e-10)


def test_osim_write_read_round_trip(chain, tmp_path):
    """The chain written as ``.osim`` and read back compiles to the same tree: coordinate names,
    inertias and body poses at random coordinates (exactly)."""
    from arthron.io.osim import read_osim, write_osim
    jtype, model, tree = chain
    path = write_osim(tmp_path / f"{jtype}.osim", model)
    back = read_osim(path)
    assert [j.type for j in back.joints.values()] == [j.type for j in model.joints.values()]
    # (motion types are not compared: OpenSim derives them from the axes, "coupled" for a spline)
    assert list(back.coordinates) == list(model.coordinates)
    t2 = compile_model(back)
    np.testing.assert_array_equal(t2.mass, tree.mass)
    np.testing.assert_array_equal(t2.com, tree.com)
    np.testing.assert_array_equal(t2.inertia, tree.inertia)
    q, _, _ = _states(tree)
    k1, k2 = forward_kinematics(tree, q), forward_kinematics(t2, q)
    np.testing.assert_allclose(k2.R, k1.R, rtol=0, atol=1e-15)
    np.testing.assert_allclose(k2.o, k1.o, rtol=0, atol=1e-15)


def test_registry_errors_and_new_type():
    """Unknown types and wrong coordinate counts are typed errors naming the joint; a type
    registered at run time compiles like the built-in ones."""
    from arthron.errors import ModelFileError, UnsupportedFeature
    from arthron.multibody.joints import register_joint_type
    model = chain_model("PinJoint")
    model.joints["j1"].type = "HingeOfMyOwn"
    with pytest.raises(UnsupportedFeature, match="HingeOfMyOwn.*'j1'"):
        compile_model(model)
    model = chain_model("PinJoint")
    model.joints["j2"].coordinates.append(Coordinate("extra", "j2"))
    with pytest.raises(ModelFileError, match="PinJoint 'j2' has 2 coordinates, expected 1"):
        compile_model(model)
    model = chain_model("EllipsoidJoint")
    del model.joints["j1"].parameters["radii_x_y_z"]
    with pytest.raises(ModelFileError, match="lacks 'radii_x_y_z'"):
        compile_model(model)
    try:      # a pin about x, registered here: compiles and moves like a Gimbal's first angle
        register_joint_type("XPinJoint", lambda model, j, C, cidx: [("rot", np.eye(3)[0], C[0], None)],
                            ("rotational",))
        a, b = chain_model("PinJoint"), chain_model("GimbalJoint")
        for m in (a, b):
            for jn in ("j1", "j2"):
                m.joints[jn].type = "XPinJoint"
                m.joints[jn].coordinates = m.joints[jn].coordinates[:1]
        ta, tb = compile_model(a), compile_model(b)
        q, qd, qdd = _states(ta)
        tau = inverse_dynamics(ta, q, qd, qdd)
        np.testing.assert_allclose(forward_accelerations(ta, q, qd, tau), qdd, atol=1e-9)
        assert tb.nq == ta.nq == 3
    finally:
        JOINT_TYPES.pop("XPinJoint", None)


def test_topology_is_computed_once_and_never_attached(chain):
    """Every algorithm reads the tree's topology fields; none attaches attributes to it."""
    from dataclasses import fields

    from arthron.multibody.kinematics import Tree
    _, model, tree = chain
    names = {f.name for f in fields(Tree)}
    assert set(vars(tree)) == names
    q, qd, qdd = _states(tree)
    kin = forward_kinematics(tree, q, qd, qdd)
    velocity_map(tree, q, kin)
    apply_velocity_map_transpose(tree, kin, *np.zeros((2, q.shape[0], tree.nb, 3)))
    forward_accelerations(tree, q, qd, inverse_dynamics(tree, q, qd, qdd))
    mass_matrix(tree, q)
    from arthron.solvers.reactions import joint_loads
    from arthron.solvers.reactions_classic import classic_joint_loads
    joint_loads(model, tree, q, qd, qdd)
    classic_joint_loads(model, tree, q, qd, np.zeros_like(q))
    assert set(vars(tree)) == names
    # the topology fields agree with the nodes
    for i, nd in enumerate(tree.nodes):
        assert tree.node_parent[i] == nd.parent
        assert tree.node_ancestors[i] == ([] if i == 0 else tree.node_ancestors[nd.parent] + [nd.parent])
    for b in range(tree.nb):
        assert all(tree.body_parent[c] == b for c in tree.body_children[b])
