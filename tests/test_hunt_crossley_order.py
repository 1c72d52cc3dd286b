"""HuntCrossleyForce with several contacts, one of which pulls (fH (1 + 3/2 c v_n) <= 0):
OpenSim 4.6 (Simbody 3.9) stops applying the force's contacts at the first pulling one in its
GeneralContactSubsystem's sweep-and-prune order (half-space contacts first, spheres by the
start of their extent along the axis of largest spread, ties in ContactParameters order,
GCC's introsort above 16 surfaces). arthron reproduces the rule; the generalized forces of the
contact equal those of OpenSim's InverseDynamicsSolver (force on minus force off) on inline
models."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import needs_opensim
from arthron.io.osim import read_osim
from arthron.multibody.kinematics import compile_model
from arthron.multibody.forces import applied_generalized_forces

SPHERES = {
    "heel": "<ContactSphere name='heel'><socket_frame>/bodyset/foot</socket_frame>"
            "<location>-0.1 0 0</location><radius>0.05</radius></ContactSphere>",
    "toe": "<ContactSphere name='toe'><socket_frame>/bodyset/foot</socket_frame>"
           "<location>0.1 0 0</location><radius>0.05</radius></ContactSphere>",
}
FLOOR = ("<ContactHalfSpace name='floor'><socket_frame>/ground</socket_frame>"
         "<orientation>0 0 -1.5707963267949</orientation></ContactHalfSpace>")


def _params(groups, friction):
    mu = (0.8, 0.6, 0.2) if friction else (0.0, 0.0, 0.0)
    return "".join(
        f"<HuntCrossleyForce::ContactParameters><geometry>{' '.join(g)}</geometry>"
        f"<stiffness>{k}</stiffness><dissipation>{c}</dissipation>"
        f"<static_friction>{mu[0]}</static_friction><dynamic_friction>{mu[1]}</dynamic_friction>"
        f"<viscous_friction>{mu[2]}</viscous_friction></HuntCrossleyForce::ContactParameters>"
        for g, k, c in groups)


def _doc(bodies, joints, geometry, params):
    return f"""<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000"><Model name="m">
<Ground name="ground"/><gravity>0 -9.80665 0</gravity>
<BodySet name="bodyset"><objects>{bodies}</objects></BodySet>
<JointSet name="jointset"><objects>{joints}</objects></JointSet>
<ContactGeometrySet name="contactgeometryset"><objects>{geometry}</objects></ContactGeometrySet>
<ForceSet name="forceset"><objects><HuntCrossleyForce name="hc">
<HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>{params}</objects>
</HuntCrossleyForce::ContactParametersSet><transition_velocity>0.1</transition_velocity>
</HuntCrossleyForce></objects></ForceSet></Model></OpenSimDocument>"""


def _body(name):
    return (f"<Body name='{name}'><mass>1</mass><mass_center>0 0 0</mass_center>"
            "<inertia>0.01 0.01 0.01 0 0 0</inertia></Body>")


def _custom_joint(body, coords):
    """CustomJoint ground -> body: rotations about x, y, z then translations along x, y, z
    (coordinate name = body_axis), so the speeds are the coordinates' rates."""
    axes = ["1 0 0", "0 1 0", "0 0 1"]
    ta = ""
    for kind, start in (("rotation", 0), ("translation", 3)):
        for i in range(3):
            c = coords[start + i]
            inner = (f"<coordinates>{c}</coordinates>" if c else "<coordinates></coordinates>")
            fn = ("<LinearFunction><coefficients>1 0</coefficients></LinearFunction>" if c
                  else "<Constant><value>0</value></Constant>")
            ta += f"<TransformAxis name='{kind}{i + 1}'>{inner}<axis>{axes[i]}</axis>{fn}</TransformAxis>"
    cs = "".join(f"<Coordinate name='{c}'/>" for c in coords if c)
    return (f"<CustomJoint name='j{body}'><socket_parent_frame>/ground</socket_parent_frame>"
            f"<socket_child_frame>/bodyset/{body}</socket_child_frame><coordinates>{cs}</coordinates>"
            f"<SpatialTransform>{ta}</SpatialTransform></CustomJoint>")


def _contact_generalized_forces(path, q, qd):
    """(OpenSim, arthron) generalized forces (T, n) of the model's HuntCrossleyForce 'hc' in
    arthron's coordinate order: OpenSim's InverseDynamicsSolver residual with the force off
    minus with it on, at zero accelerations."""
    import opensim as osim
    osim.Logger.setLevelString("error")
    model = read_osim(path)
    tree = compile_model(model)
    names = list(tree.coordinate_names)
    app, _ = applied_generalized_forces(model, tree, q, qd, exclude=())
    res = []
    for on in (False, True):
        m = osim.Model(str(path))
        m.getForceSet().get("hc").set_appliesForce(on)
        s = m.initSystem()
        cs = m.getCoordinateSet()
        solver = osim.InverseDynamicsSolver(m)
        out = []
        for t in range(len(q)):
            for j, c in enumerate(names):
                cs.get(c).setValue(s, q[t, j], False)
                cs.get(c).setSpeedValue(s, qd[t, j])
            m.realizeVelocity(s)
            out.append(solver.solve(s, osim.Vector(s.getNU(), 0.0)).to_numpy())
        res.append(np.array(out))
    # one mobility per coordinate here (PlanarJoint, CustomJoint), in the CoordinateSet's order
    u = [cs.get(i).getName() for i in range(cs.getSize())]
    return (res[0] - res[1])[:, [u.index(c) for c in names]], app


def _foot(tmp_path, geometry_order, params_geometry, friction):
    joint = ("<PlanarJoint name='p'><socket_parent_frame>/ground</socket_parent_frame>"
             "<socket_child_frame>/bodyset/foot</socket_child_frame><coordinates>"
             "<Coordinate name='rz'/><Coordinate name='tx'/><Coordinate name='ty'/>"
             "</coordinates></PlanarJoint>")
    geometry = FLOOR + "".join(SPHERES[k] for k in geometry_order)
    p = tmp_path / f"foot_{'_'.join(geometry_order)}_{'_'.join(params_geometry)}_{friction}.osim"
    p.write_text(_doc(_body("foot"), joint, geometry,
                      _params([(params_geometry, 600000, 1.5)], friction)))
    return p


@needs_opensim
@pytest.mark.parametrize("friction", [True, False])
def test_two_sphere_foot_first_pulling_contact_ends_the_force(tmp_path, friction):
    """Heel at x = -0.1 and toe at x = +0.1 on a planar foot pressed 2 cm into the floor and
    rocked (rz' = ±6 rad/s) so that one sphere pulls: the heel (first along x) pulling drops
    the toe's push too, the toe pulling keeps the heel's; with the foot turned by π the toe
    comes first and the roles swap. The same in every order of the geometry in the
    ContactParameters and in the ContactGeometrySet, with friction and without."""
    q = np.array([[0.0, 0.0, 0.03], [0.0, 0.0, 0.03], [np.pi, 0.0, 0.03], [np.pi, 0.0, 0.03],
                  [0.0, 0.02, 0.03]])
    qd = np.array([[6.0, 0.3, 0.0], [-6.0, 0.3, 0.0], [6.0, -0.2, 0.0], [-6.0, -0.2, 0.0],
                   [0.0, 0.5, -0.1]])
    results = []
    for geometry_order in (("heel", "toe"), ("toe", "heel")):
        for params in (("floor", "heel", "toe"), ("floor", "toe", "heel"), ("toe", "heel", "floor")):
            g_os, g_ar = _contact_generalized_forces(_foot(tmp_path, geometry_order, params, friction), q, qd)
            np.testing.assert_allclose(g_ar, g_os, rtol=0, atol=1e-9 * np.abs(g_os).max())
            results.append(g_os)
    for g in results[1:]:
        np.testing.assert_allclose(g, results[0], rtol=0, atol=1e-9 * np.abs(g).max())
    g = results[0]
    # state 0: toe (second along x) pulls, the heel pushes: applied; state 1: the heel (first)
    # pulls: nothing at all although the toe is 2 cm deep and pushing
    assert np.abs(g[0]).max() > 100 and np.abs(g[1]).max() == 0
    # foot turned: the toe is first (x = -0.1); state 2 (the heel, second, pulls): the toe's push;
    # state 3 (the toe pulls): nothing
    assert np.abs(g[2]).max() > 100 and np.abs(g[3]).max() == 0
    assert np.abs(g[4]).max() > 100                                # both push: both applied
    # the toe alone does push in state 1: dropping it is the rule, not a missing contact
    toe_only = _foot(tmp_path, ("heel", "toe"), ("floor", "toe"), friction)
    g_os, g_ar = _contact_generalized_forces(toe_only, q[1:2], qd[1:2])
    assert np.abs(g_os).max() > 100
    np.testing.assert_allclose(g_ar, g_os, rtol=0, atol=1e-9 * np.abs(g_os).max())


@needs_opensim
def test_equal_sweep_starts_keep_the_contact_parameters_order(tmp_path):
    """Two spheres at the same x (the sweep axis), mirrored in z, on a foot rolling about x so
    that one pulls: the tie is broken by the order the geometry is listed in the
    ContactParameters (Simbody's addBody order), not by the ContactGeometrySet's."""
    coords = ("roll", None, None, None, "h", None)
    joint = _custom_joint("foot", coords)
    spheres = {n: f"<ContactSphere name='{n}'><socket_frame>/bodyset/foot</socket_frame>"
                  f"<location>0.3 0 {z}</location><radius>0.05</radius></ContactSphere>"
               for n, z in (("inner", -0.04), ("outer", 0.04))}
    q = np.array([[0.0, 0.03]] * 2)
    qd = np.array([[20.0, 0.0], [-20.0, 0.0]])
    found = {}
    for geometry_order in (("inner", "outer"), ("outer", "inner")):
        for params in (("floor", "inner", "outer"), ("floor", "outer", "inner")):
            p = tmp_path / f"tie_{'_'.join(geometry_order)}_{'_'.join(params)}.osim"
            p.write_text(_doc(_body("foot"), joint, FLOOR + "".join(spheres[k] for k in geometry_order),
                              _params([(params, 600000, 1.5)], True)))
            g_os, g_ar = _contact_generalized_forces(p, q, qd)
            np.testing.assert_allclose(g_ar, g_os, rtol=0, atol=1e-9 * max(np.abs(g_os).max(), 1.0))
            found[geometry_order, params] = g_os
    for params in (("floor", "inner", "outer"), ("floor", "outer", "inner")):
        np.testing.assert_array_equal(found[("inner", "outer"), params], found[("outer", "inner"), params])
    a, b = found[("inner", "outer"), ("floor", "inner", "outer")], found[("inner", "outer"), ("floor", "outer", "inner")]
    # in each state the sphere listed first decides: all or the other's push
    assert {np.abs(a[0]).max() == 0, np.abs(b[0]).max() == 0} == {True, False}
    assert {np.abs(a[1]).max() == 0, np.abs(b[1]).max() == 0} == {True, False}


@needs_opensim
def test_random_states_many_surfaces_and_sphere_pairs_like_opensim(tmp_path, monkeypatch):
    """Two free bodies with 8 spheres each, a floor and a slope (18 surfaces: GCC's
    introsort, whose order of the two half-spaces' equal starts is not the listed one) in two
    ContactParameters of different stiffness, geometry listed in a shuffled order; random poses
    near the floor and random speeds (sphere/sphere contacts between the bodies included):
    arthron's generalized forces equal OpenSim's in every state, and they would not with the
    contacts taken in another order."""
    import arthron.multibody.forces as forces
    rng = np.random.default_rng(4)
    spheres = [(f"{b}{i}", b, rng.uniform(-0.08, 0.08, 3), rng.uniform(0.02, 0.05))
               for b in "AB" for i in range(8)]
    names = ["floor", "wall"] + [s[0] for s in spheres]
    rng.shuffle(names)
    geometry = ("<ContactHalfSpace name='wall'><socket_frame>/ground</socket_frame><location>0 0.01 0</location>"
                "<orientation>0.1 0 -1.37</orientation></ContactHalfSpace>" + FLOOR)
    geometry += "".join(f"<ContactSphere name='{n}'><socket_frame>/bodyset/{b}</socket_frame>"
                        f"<location>{' '.join(map(str, loc))}</location><radius>{r}</radius></ContactSphere>"
                        for n, b, loc, r in spheres)
    coords = {b: tuple(f"{b}_{k}" for k in ("rx", "ry", "rz", "tx", "ty", "tz")) for b in "AB"}
    p = tmp_path / "many.osim"
    p.write_text(_doc(_body("A") + _body("B"), _custom_joint("A", coords["A"]) + _custom_joint("B", coords["B"]),
                      geometry, _params([(names[:9], 600000, 1.5), (names[9:], 300000, 2.5)], True)))
    T = 120
    q = np.zeros((T, 12))
    for off, shift in ((0, 0.0), (6, 0.06)):
        q[:, off:off + 3] = rng.normal(0, 0.6, (T, 3))
        q[:, off + 3] = rng.uniform(-0.1, 0.1, T) + shift
        q[:, off + 4] = rng.uniform(0.0, 0.08, T)
        q[:, off + 5] = rng.uniform(-0.05, 0.05, T)
    qd = rng.normal(0, 1.5, (T, 12))
    model = read_osim(p)
    order = [list(compile_model(model).coordinate_names).index(c) for c in coords["A"] + coords["B"]]
    qa, qda = np.empty_like(q), np.empty_like(qd)
    qa[:, order], qda[:, order] = q, qd
    g_os, g_ar = _contact_generalized_forces(p, qa, qda)
    scale = np.abs(g_os).max()
    assert (np.abs(g_os).max(axis=1) > 0).sum() > T // 3              # many states in contact
    np.testing.assert_allclose(g_ar, g_os, rtol=0, atol=1e-10 * scale)
    tree = compile_model(model)
    # the same contacts in reverse order, or the half-spaces' tie kept in the listed order,
    # miss OpenSim's forces somewhere
    real = forces._hunt_crossley_contact_order
    monkeypatch.setattr(forces, "_hunt_crossley_contact_order", lambda *a: -real(*a))
    rev, _ = applied_generalized_forces(model, tree, qa, qda, exclude=())
    assert np.abs(rev - g_ar).max() > 1.0
    monkeypatch.setattr(forces, "_hunt_crossley_contact_order", real)
    monkeypatch.setattr(forces, "_libstdcxx_sort_order", lambda keys: list(np.argsort(keys, kind="stable")))
    stable, _ = applied_generalized_forces(model, tree, qa, qda, exclude=())
    assert np.abs(stable - g_ar).max() > 1.0
