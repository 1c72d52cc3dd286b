"""Muscle and ligament paths against OpenSim 4.6: lengths, moment arms, path forces."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ARM26, GAIT_PIPE, GAIT_REF_MODEL, GAIT2354, LENHART, REF, TSM, needs_data, \
    needs_opensim

from arthron.errors import ModelFileError
from arthron.io.osim import read_osim
from arthron.io.sto import read_sto
from arthron.multibody import paths as P
from arthron.models.motion import coordinates_from_table
from arthron.multibody.kinematics import apply_velocity_map_transpose, compile_model, \
    forward_kinematics

LENHART_PLUGINS = ("Smith2018ArticularContactForce", "Smith2018ContactMesh")

pytestmark = [needs_data]


def _setup(path, names=None):
    model = read_osim(path)
    tree = compile_model(model)
    ps = P.compile_paths(model, tree, forces=names)
    return model, tree, ps


def _random_q(model, tree, T, scale=0.5, seed=0):
    rng = np.random.default_rng(seed)
    names = tree.coordinate_names
    lo = np.array([model.coordinates[c].range[0] for c in names])
    hi = np.array([model.coordinates[c].range[1] for c in names])
    Q = tree.default_q + scale * (rng.uniform(lo, hi, (T, len(names))) - tree.default_q)
    Q[0] = tree.default_q
    locked = np.array([model.coordinates[c].locked for c in names])
    Q[:, locked] = tree.default_q[locked]   # OpenSim ignores setValue on locked coordinates
    return Q


def _opensim(path, names, Q, coords, ma_coords=None, remove=()):
    """OpenSim lengths (T, n) and computeMomentArm (T, n, len(ma_coords))."""
    import opensim as osim

    import oracle
    m, s = oracle.load(path, remove_types=remove)
    cs = m.getCoordinateSet()
    fs = m.getForceSet()
    gps = []
    for n in names:
        f = fs.get(n)
        for cls in (osim.PathActuator, osim.Ligament, osim.Blankevoort1991Ligament):
            x = cls.safeDownCast(f)
            if x is not None:
                gps.append(x.getGeometryPath())
                break
    ma_coords = ma_coords or []
    L = np.empty((len(Q), len(names)))
    MA = np.empty((len(Q), len(names), len(ma_coords)))
    for t, q in enumerate(Q):
        for j, c in enumerate(coords):
            cs.get(c).setValue(s, float(q[j]), False)
        m.realizePosition(s)
        for i, gp in enumerate(gps):
            L[t, i] = gp.getLength(s)
            for j, c in enumerate(ma_coords):
                MA[t, i, j] = gp.computeMomentArm(s, cs.get(c))
    return L, MA


# ------------------------------------------------------------------------------ Gait2354
@needs_opensim
def test_gait2354_all_muscles_random_poses():
    model, tree, ps = _setup(GAIT2354)
    assert len(ps.names) == 54
    Q = _random_q(model, tree, 12)
    L0, MA0 = _opensim(GAIT2354, ps.names, Q, tree.coordinate_names, tree.coordinate_names)
    MA1, L1 = P.moment_arms(ps, tree, Q, return_lengths=True)
    assert np.abs(L1 - L0).max() < 1e-6
    assert np.abs(MA1 - MA0).max() < 1e-6


@needs_opensim
def test_gait2354_walking_trial_lengths_and_moment_arms():
    """Whole IK trial (73 frames) of the OutputReference subject: conditional points on
    hip/knee muscles switch on and off, MovingPathPoints follow the knee angle."""
    model, tree, ps = _setup(GAIT_REF_MODEL)
    mot = read_sto(GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot")
    q = coordinates_from_table(model, mot, missing="default")
    cols = [tree.coordinate_index(c) for c in ("hip_flexion_r", "knee_angle_r", "ankle_angle_r")]
    L0, MA0 = _opensim(GAIT_REF_MODEL, ps.names, q, tree.coordinate_names,
                       [tree.coordinate_names[c] for c in cols])
    MA1, L1 = P.moment_arms(ps, tree, q, return_lengths=True)
    assert np.abs(L1 - L0).max() < 1e-6
    assert np.abs(MA1[:, :, cols] - MA0).max() < 1e-6
    # conditional points were both active and inactive in the trial
    states = P.compute_paths(ps, tree, q)
    i = ps.index("vas_int_r") if "vas_int_r" in ps.names else 0
    assert states[i].length.shape == (len(q),)


def test_gait2354_excursion_equals_analytic():
    model, tree, ps = _setup(GAIT2354)
    Q = _random_q(model, tree, 5, seed=3)
    ma = P.moment_arms(ps, tree, Q, coupled=False)
    ex = P.moment_arms_excursion(ps, tree, Q, h=1e-7)
    # away from the switching points of conditional points the two agree
    assert np.median(np.abs(ma - ex)) < 1e-9
    assert np.quantile(np.abs(ma - ex), 0.99) < 1e-6


def test_generalized_and_body_forces_consistent():
    model, tree, ps = _setup(GAIT2354)
    Q = _random_q(model, tree, 4, seed=5)
    rng = np.random.default_rng(1)
    ten = rng.uniform(0, 500, (len(Q), len(ps.names)))
    tau = P.path_generalized_forces(ps, tree, Q, ten)
    ma = P.moment_arms(ps, tree, Q, coupled=False)
    assert np.allclose(tau, np.einsum("tfq,tf->tq", ma, ten))
    loads = P.path_body_forces(ps, tree, Q, ten)
    kin = forward_kinematics(tree, Q)
    com = kin.body_com(tree)
    o = kin.body_origin(tree)
    M_com = loads.moment - np.cross(com - o, loads.force)
    tau2 = apply_velocity_map_transpose(tree, kin, loads.force, M_com) + loads.mobility
    assert np.allclose(tau, tau2, atol=1e-9)
    # the pulls of a path sum to zero over the bodies it crosses (ground excepted)
    assert np.abs(loads.force.sum(1)).max() < 1e-8 * ten.max()


@needs_opensim
@pytest.mark.parametrize("path", [GAIT2354, ARM26], ids=["gait2354", "arm26"])
def test_lengthening_speed_matches_opensim(path):
    """OpenSim's getLengtheningSpeed: Gait2354's moving path points, arm26's wraps (TRIlong over
    two cylinders and an ellipsoid, where OpenSim's speed and −r·q̇ differ by 1.2e-3 m/s: the
    sum of the points' relative velocities is reproduced, not −r·q̇)."""
    import opensim as osim

    import oracle
    model, tree, ps = _setup(path)
    Q = _random_q(model, tree, 3 if path == GAIT2354 else 20, seed=7)
    rng = np.random.default_rng(2)
    QD = rng.normal(0, 1, Q.shape)
    ours = P.lengthening_speeds(ps, tree, Q, QD)
    if path == ARM26:       # these states reach TRIlong's multi-wrap difference (−r·q̇ is 9.9e-4 off)
        assert np.abs(ours + np.einsum("tfq,tq->tf", P.moment_arms(ps, tree, Q, coupled=False), QD)).max() > 1e-4
    m, s = oracle.load(path)
    cs = m.getCoordinateSet()
    for t in range(len(Q)):
        for j, c in enumerate(tree.coordinate_names):
            cs.get(c).setValue(s, float(Q[t, j]), False)
            cs.get(c).setSpeedValue(s, float(QD[t, j]))
        m.realizeVelocity(s)
        ref = [osim.Muscle.safeDownCast(m.getForceSet().get(n)).getLengtheningSpeed(s)
               for n in ps.names]
        assert np.abs(np.array(ref) - ours[t]).max() < 1e-9


# ------------------------------------------------------------------------------ arm26
@needs_opensim
def test_arm26_wrapped_paths_over_ik_trial():
    """TRIlat/TRImed/BRA wrap a cylinder, BIClong a '-y' ellipsoid, TRIlong two cylinders and
    an ellipsoid (OpenSim's multi-object iterations with its cylinder tangent correction)."""
    model, tree, ps = _setup(ARM26)
    mot = read_sto(REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot")
    q = coordinates_from_table(model, mot, missing="default")
    rnd = _random_q(model, tree, 60, scale=1.0, seed=1)
    q = np.vstack([q, rnd])
    L0, MA0 = _opensim(ARM26, ps.names, q, tree.coordinate_names, tree.coordinate_names)
    MA1, L1 = P.moment_arms(ps, tree, q, return_lengths=True)
    assert np.abs(L1 - L0).max() < 1e-9
    assert np.abs(MA1 - MA0).max() < 1e-9
    states = P.compute_paths(ps, tree, q)
    active = [(st.wobj >= 0).any(1).sum() for st in states]
    assert min(active[ps.index(n)] for n in ("TRIlat", "BIClong", "TRIlong")) > 10
    # TRIlong wrapped over two objects at once in some frames
    i = ps.index("TRIlong")
    nobj = [len(set(w[w >= 0])) for w in states[i].wobj]
    assert max(nobj) >= 2


# ------------------------------------------------------------------------------ Thoracoscapular
def _assembled(path, tree, Q):
    """Poses satisfying the model's constraints, as OpenSim assembles them (IK results do)."""
    import oracle
    m, s = oracle.load(path)
    cs = m.getCoordinateSet()
    Q = np.array(Q, float)
    for t in range(len(Q)):
        for j, c in enumerate(tree.coordinate_names):
            if not cs.get(c).getLocked(s):
                cs.get(c).setValue(s, float(Q[t, j]), False)
        m.assemble(s)
        Q[t] = [cs.get(c).getValue(s) for c in tree.coordinate_names]
    return Q


def _trial(model, tree, T):
    """The smooth 1,000-frame style trial of benchmarks/bench_paths.py."""
    names = tree.coordinate_names
    lo = np.array([model.coordinates[c].range[0] for c in names])
    hi = np.array([model.coordinates[c].range[1] for c in names])
    t = np.linspace(0.0, 1.0, T)[:, None]
    k = 1 + np.arange(len(names)) % 3
    mid = np.clip(tree.default_q, lo, hi)
    Q = np.clip(mid + 0.25 * (hi - lo) * np.sin(2 * np.pi * k * t + np.arange(len(names))), lo, hi)
    locked = np.array([model.coordinates[c].locked for c in names])
    Q[:, locked] = tree.default_q[locked]
    return Q


@needs_opensim
def test_thoracoscapular_lengths_and_moment_arms():
    """33 muscles over ellipsoid, cylinder and sphere wraps, several over two objects; moment
    arms about every coordinate as computeMomentArm gives them (scapulothoracic
    angular-velocity speeds, AC point-constraint coupling). At poses violating the constraint
    the coupling is not defined the same way, hence assembled poses."""
    model, tree, ps = _setup(TSM)
    assert len(ps.names) == 33
    Q = _assembled(TSM, tree, _random_q(model, tree, 12, scale=0.5, seed=0))
    names = tree.coordinate_names
    L0, MA0 = _opensim(TSM, ps.names, Q, names, names)
    MA1, L1 = P.moment_arms(ps, tree, Q, return_lengths=True)
    assert np.abs(L1 - L0).max() < 1e-9
    assert np.abs(MA1 - MA0).max() < 1e-9


@needs_opensim
def test_thoracoscapular_whole_motion():
    """The benchmark's 1,000-frame motion: every length equals OpenSim's; moment arms on every
    10th frame, assembled. Paths over two wrap objects (one a cylinder) are active in it."""
    model, tree, ps = _setup(TSM)
    Q = _trial(model, tree, 1000)
    L0, _ = _opensim(TSM, ps.names, Q, tree.coordinate_names)
    L1 = P.path_lengths(ps, tree, Q)
    assert np.abs(L1 - L0).max() < 1e-9
    states = P.compute_paths(ps, tree, Q)
    multi = [n for n, st in zip(ps.names, states)
             if any(len(set(w[w >= 0])) >= 2 for w in st.wobj)]
    assert {"Infraspinatus_S", "TeresMajor"} <= set(multi)
    Qa = _assembled(TSM, tree, Q[::10])
    names = tree.coordinate_names
    _, MA0 = _opensim(TSM, ps.names, Qa, names, names)
    MA1 = P.moment_arms(ps, tree, Qa)
    assert np.abs(MA1 - MA0).max() < 1e-9


# ------------------------------------------------------------------------------ Lenhart2015
@needs_opensim
def test_lenhart_ligament_and_muscle_paths_knee_sweep():
    model, tree, ps = _setup(LENHART)
    Q = np.tile(tree.default_q, (10, 1))
    Q[:, tree.coordinate_index("knee_flex_r")] = np.linspace(0, np.deg2rad(100), 10)
    knee = ["knee_flex_r"]
    L0, MA0 = _opensim(LENHART, ps.names, Q, tree.coordinate_names, knee, LENHART_PLUGINS)
    MA1, L1 = P.moment_arms(ps, tree, Q, return_lengths=True)
    assert np.abs(L1 - L0).max() < 1e-6
    assert np.abs(MA1[:, :, [tree.coordinate_index("knee_flex_r")]] - MA0).max() < 1e-6


# ------------------------------------------------------------------------------ errors
def test_missing_wrap_object_names_the_muscle():
    model = read_osim(ARM26)
    model.forces["TRIlat"].path.wraps[0].wrap_object = "NoSuchCylinder"
    with pytest.raises(ModelFileError, match="TRIlat.*NoSuchCylinder"):
        P.compile_paths(model, compile_model(model))


def test_unsupported_wrap_type_names_the_muscle():
    from arthron.errors import UnsupportedFeature
    model = read_osim(ARM26)
    wo = next(w for b in model.bodies.values() for w in b.wrap_objects if w.name == "TRI")
    wo.type = "WrapConeObst"
    with pytest.raises(UnsupportedFeature, match=r"TRI\w*.*WrapConeObst"):
        P.compile_paths(model, compile_model(model))
    P.compile_paths(model, compile_model(model), forces=["BICshort"])   # others still work


def test_multi_wrap_paths_are_not_flagged_approximate():
    import warnings

    from arthron.errors import ArthronWarning
    for path in (ARM26, TSM):
        model = read_osim(path)
        tree = compile_model(model)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ArthronWarning)
            ps = P.compile_paths(model, tree, strict=True)
        assert ps.approximate == []


def test_missing_conditional_coordinate_names_the_muscle():
    model = read_osim(GAIT2354)
    name, pt = next((n, p) for n, f in model.forces.items() for p in f.path.points
                    if p.kind == "ConditionalPathPoint")
    pt.coordinate = "no_such_coordinate"
    with pytest.raises(ModelFileError, match=f"{name}.*no_such_coordinate"):
        P.compile_paths(model, compile_model(model))


# ------------------------------------------------------ torus, sphere quadrant, obstacles
def _wrap_model(tmp_path, objects):
    """A small OpenSim model: a body on a pin (z) and a slider (x) from ground; a path from
    ground to the body over the given wrap objects, which sit on ground; written as .osim."""
    import opensim as osim
    m = osim.Model()
    m.setName("wraptest")
    g = m.getGround()
    b = osim.Body("arm", 1.0, osim.Vec3(0), osim.Inertia(0.1))
    j = osim.PinJoint("pin", g, osim.Vec3(0, 0, 0), osim.Vec3(0), b, osim.Vec3(0, 0.12, 0),
                      osim.Vec3(0))
    j.updCoordinate().setName("theta")
    j.updCoordinate().setRangeMin(-3.0)
    j.updCoordinate().setRangeMax(3.0)
    m.addBody(b)
    m.addJoint(j)
    mus = osim.Thelen2003Muscle("mus", 100.0, 0.1, 0.1, 0.0)
    mus.addNewPathPoint("origin", g, osim.Vec3(0.01, 0.06, 0.003))
    mus.addNewPathPoint("insertion", b, osim.Vec3(0.012, -0.05, 0.004))
    for o in objects:
        g.addWrapObject(o)
        mus.updGeometryPath().addPathWrap(o)
    m.addForce(mus)
    m.finalizeConnections()
    path = tmp_path / "wraptest.osim"
    m.printToXML(str(path))
    return path


@needs_opensim
@pytest.mark.parametrize("kind", ["torus", "sphere+x", "torus+cylinder"])
def test_small_models_torus_and_quadrant_sphere(tmp_path, kind):
    """Whole paths (lengths and moment arms) over a torus ring, a '+x' sphere and a torus
    with a cylinder on the same path, against OpenSim over a sweep of the joint."""
    import opensim as osim
    objs = []
    if kind.startswith("torus"):
        t = osim.WrapTorus()
        t.setName("ring")
        t.set_inner_radius(0.008)
        t.set_outer_radius(0.03)
        t.set_xyz_body_rotation(osim.Vec3(1.5707963, 0, 0))
        objs.append(t)
    if kind == "sphere+x":
        sp = osim.WrapSphere()
        sp.setName("ball")
        sp.set_radius(0.02)
        sp.set_quadrant("+x")
        sp.set_translation(osim.Vec3(0.01, 0.0, 0.0))
        objs.append(sp)
    if kind == "torus+cylinder":
        c = osim.WrapCylinder()
        c.setName("cyl")
        c.set_radius(0.01)
        c.set_length(0.1)
        c.set_translation(osim.Vec3(0.03, 0.09, 0.0))
        objs.append(c)
    path = _wrap_model(tmp_path, objs)
    model, tree, ps = _setup(path)
    Q = np.linspace(-2.5, 2.5, 61)[:, None]
    L0, MA0 = _opensim(path, ps.names, Q, tree.coordinate_names, tree.coordinate_names)
    MA1, L1 = P.moment_arms(ps, tree, Q, return_lengths=True)
    wrapped = np.array([(st.wobj[t] >= 0).any() for st in P.compute_paths(ps, tree, Q)
                        for t in range(len(Q))])
    assert wrapped.sum() > 5 and (~wrapped).sum() > 5
    # the torus's ring search is OpenSim's own Lmdif.cpp replayed (its fixed finite-difference
    # step included), so a second object changes nothing: 3e-16 m seen (3e-7 m before)
    tol = 1e-9
    assert np.abs(L1 - L0).max() < tol
    assert np.abs(MA1 - MA0).max() < 10 * tol


@needs_opensim
@pytest.mark.parametrize("direction", ["righthand", "lefthand"])
def test_cylinder_obstacle_in_a_path(tmp_path, direction):
    """A path over a WrapCylinderObst (OpenSim 4.6 cannot load it, so the model is written
    with a WrapCylinder and edited): its length is the obstacle geometry between the path
    points, and analytic moment arms equal tendon excursion."""
    import opensim as osim

    from arthron.geometry import wrapping as W
    c = osim.WrapCylinder()
    c.setName("cyl")
    c.set_radius(0.01)
    c.set_length(0.1)
    c.set_translation(osim.Vec3(0.0, 0.03, 0.0))
    path = _wrap_model(tmp_path, [c])
    txt = path.read_text()
    i = txt.index('<WrapCylinder name="cyl">')
    j = txt.index("</WrapCylinder>") + len("</WrapCylinder>")
    path.write_text(txt[:i] + '<WrapCylinderObst name="cyl"><translation>0 0.03 0</translation>'
                    f"<radius>0.01</radius><length>0.1</length><wrapDirection>{direction}"
                    "</wrapDirection></WrapCylinderObst>" + txt[j:])
    model, tree, ps = _setup(path)
    Q = np.linspace(-2.5, 2.5, 41)[:, None]
    st = P.compute_paths(ps, tree, Q)[0]
    wrapped = (st.wobj >= 0).any(1)
    assert wrapped.sum() > 5 and (~wrapped).sum() > 5
    # direct: path points in the obstacle frame (ground, translated)
    kin = forward_kinematics(tree, Q)
    Rb, ob = P._frames(tree, kin)
    pth = ps.paths[0]
    pts = [ob[:, b] + np.einsum("tij,j->ti", Rb[:, b], l) for b, l in zip(pth.body, pth.loc)]
    p1, p2 = pts[0] - [0, 0.03, 0], pts[1] - [0, 0.03, 0]
    s_, q_, t_, L_ = W.wrap_cylinder_obstacle(p1, p2, 0.01, 1 if direction == "righthand" else -1)
    ok = s_ == W.WRAPPED
    ref = np.where(ok, np.linalg.norm(q_ - p1, axis=1) + L_ + np.linalg.norm(p2 - t_, axis=1),
                   np.linalg.norm(p2 - p1, axis=1))
    assert np.array_equal(ok, wrapped)
    assert np.abs(st.length - ref).max() < 1e-14
    ma = P.moment_arms(ps, tree, Q, coupled=False)
    ex = P.moment_arms_excursion(ps, tree, Q, h=1e-7)
    assert np.abs(ma - ex).max() < 1e-6


# ------------------------------------------------------------ double-cylinder obstacle
_DC_OSIM = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
<Model name="elbow_dc">
  <ground name="ground"/>
  <BodySet name="bodyset"><objects>
    <Body name="humerus">
      <mass>2</mass><mass_center>0 -0.15 0</mass_center><inertia>0.01 0.002 0.01 0 0 0</inertia>
      <WrapObjectSet name="wrapobjectset"><objects>
        <WrapDoubleCylinderObst name="elbow_dc">
          <xyz_body_rotation>{urot}</xyz_body_rotation>
          <translation>{U[0]} {U[1]} {U[2]}</translation>
          <radiusUcyl>{ru}</radiusUcyl><radiusVcyl>{rv}</radiusVcyl>
          <wrapUcylDirection>{du}</wrapUcylDirection>
          <wrapVcylDirection>{dv}</wrapVcylDirection>
          <wrapVcylHomeBody>{home}</wrapVcylHomeBody>
          <xyz_body_rotationVcyl>{vrot}</xyz_body_rotationVcyl>
          <translationVcyl>{V[0]} {V[1]} {V[2]}</translationVcyl>
          <length>0.1</length>
        </WrapDoubleCylinderObst>
      </objects></WrapObjectSet>
    </Body>
    <Body name="ulna">
      <mass>1</mass><mass_center>0 -0.12 0</mass_center><inertia>0.005 0.001 0.005 0 0 0</inertia>
    </Body>
  </objects></BodySet>
  <JointSet name="jointset"><objects>
    <PinJoint name="shoulder">
      <socket_parent_frame>ground_offset</socket_parent_frame>
      <socket_child_frame>humerus_offset</socket_child_frame>
      <coordinates><Coordinate name="shoulder_flex"><range>-2 2</range></Coordinate></coordinates>
      <frames>
        <PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent>
          <translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
        <PhysicalOffsetFrame name="humerus_offset"><socket_parent>/bodyset/humerus</socket_parent>
          <translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
      </frames>
    </PinJoint>
    <PinJoint name="elbow">
      <socket_parent_frame>humerus_offset</socket_parent_frame>
      <socket_child_frame>ulna_offset</socket_child_frame>
      <coordinates><Coordinate name="elbow_flex"><range>-0.5 2.6</range></Coordinate></coordinates>
      <frames>
        <PhysicalOffsetFrame name="humerus_offset"><socket_parent>/bodyset/humerus</socket_parent>
          <translation>0 -0.3 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
        <PhysicalOffsetFrame name="ulna_offset"><socket_parent>/bodyset/ulna</socket_parent>
          <translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
      </frames>
    </PinJoint>
  </objects></JointSet>
  <ForceSet name="forceset"><objects>
    <Thelen2003Muscle name="TRI">
      <GeometryPath name="path">
        <PathPointSet><objects>
          <PathPoint name="origin"><socket_parent_frame>/ground</socket_parent_frame>
            <location>{p[0]} {p[1]} {p[2]}</location></PathPoint>
          <PathPoint name="insertion"><socket_parent_frame>/bodyset/ulna</socket_parent_frame>
            <location>{s[0]} {s[1]} {s[2]}</location></PathPoint>
        </objects></PathPointSet>
        <PathWrapSet><objects>
          <PathWrap name="pw"><wrap_object>elbow_dc</wrap_object><range>-1 -1</range></PathWrap>
        </objects></PathWrapSet>
      </GeometryPath>
      <max_isometric_force>500</max_isometric_force>
      <optimal_fiber_length>0.1</optimal_fiber_length>
      <tendon_slack_length>0.2</tendon_slack_length>
    </Thelen2003Muscle>
  </objects></ForceSet>
</Model>
</OpenSimDocument>
"""


def _dc_model(tmp_path, **kw):
    """An elbow-like model: humerus on a shoulder pin (z) from ground, ulna on an elbow pin (z)
    0.3 m below; a 'triceps' from ground to the ulna over a WrapDoubleCylinderObst whose U
    cylinder is on the humerus near the elbow and whose V cylinder is on the ulna (axes z
    unless rotated), written as .osim text (OpenSim 4.6 cannot load the class)."""
    d = dict(U=(-0.009, -0.294, 0.0), V=(-0.01, -0.032, 0.0), ru=0.02, rv=0.012,
             du="righthand", dv="righthand", home="ulna", urot="0 0 0", vrot="0 0 0",
             p=(-0.03, -0.02, 0.0), s=(0.013, -0.12, 0.0))
    d.update(kw)
    path = tmp_path / "elbow_dc.osim"
    path.write_text(_DC_OSIM.format(**d))
    return path, d


def _dc_cases(st):
    """Per frame: which cylinders the path wraps ('-', 'U', 'V', 'B')."""
    code = {(): "-", (0,): "U", (1,): "V", (0, 1): "B"}
    return np.array([code[tuple(sorted(set(int(x) for x in r[(t >= 0) & (r >= 0)])))]
                     for r, t in zip(st.wobj, st.tag)])


def _belt(P, S, circles):
    """Closed-form planar path length from P to S (T, 2) over circles [(centre (T, 2), radius,
    direction +1 counter-clockwise / -1)] in order: common tangents of consecutive circles
    (a point is a circle of radius 0) and the arcs between tangent points."""
    chain = [(P, 0.0, 1)] + list(circles) + [(S, 0.0, 1)]
    L = 0.0
    arrive = None
    for (c1, r1, d1), (c2, r2, d2) in zip(chain[:-1], chain[1:]):
        D = c2 - c1
        dist = np.hypot(D[:, 0], D[:, 1])
        beta = np.arctan2(D[:, 1], D[:, 0]) + np.arccos((d2 * r2 - d1 * r1) / dist)
        n = np.c_[np.cos(beta), np.sin(beta)]      # left normal of the tangent direction
        t1, t2 = c1 - d1 * r1 * n, c2 - d2 * r2 * n
        L = L + np.hypot(*(t2 - t1).T)
        if arrive is not None:                     # arc on circle 1 from arrival to t1
            a = np.arctan2(*(t1 - c1).T[::-1]) - np.arctan2(*(arrive - c1).T[::-1])
            L = L + r1 * np.mod(d1 * a, 2 * np.pi)
        arrive = t2
    return L


def _dc_centres(ps, tree, Q, d):
    kin = forward_kinematics(tree, Q)
    Rb, ob = P._frames(tree, kin)
    hum, uln = tree.body_names.index("humerus"), tree.body_names.index("ulna")
    cu = ob[:, hum] + Rb[:, hum] @ np.asarray(d["U"], float)
    cv = ob[:, uln] + Rb[:, uln] @ np.asarray(d["V"], float)
    pth = ps.paths[0]
    pts = [ob[:, b] + np.einsum("tij,j->ti", Rb[:, b], lc) for b, lc in zip(pth.body, pth.loc)]
    return cu, cv, pts[0], pts[1]


@pytest.mark.parametrize("rise", [False, True])
@pytest.mark.parametrize("dv", ["righthand", "lefthand"])
def test_double_cylinder_obstacle_path_is_the_planar_belt(tmp_path, rise, dv):
    """Parallel cylinders (both axes z): the path's length over a sweep of the elbow at three
    shoulder angles equals the closed-form belt in the cross-section (tangents and arcs on
    the cylinders the path wraps; V in the same direction as U: open belt, every case occurs
    (no wrap, U alone, V alone, both); V the other way: crossed belt, both wrapped
    throughout), and with a rise hypot(belt, rise) (the unrolled path is straight); the length
    is continuous and the tangent points sit on the right bodies."""
    kw = dict(p=(-0.03, -0.02, -0.01), s=(0.013, -0.12, 0.02)) if rise else {}
    path, d = _dc_model(tmp_path, dv=dv, **kw)
    model, tree, ps = _setup(path)
    th = np.linspace(-0.5, 2.6, 125)
    Q = np.concatenate([np.c_[np.full_like(th, sh), th] for sh in (-0.6, 0.0, 0.6)])
    st = P.compute_paths(ps, tree, Q)[0]
    case = _dc_cases(st)
    if dv == "righthand":
        assert all((case == c).sum() >= 3 for c in "-UVB")
    else:
        assert np.all(case == "B")
    sv = 1 if dv == "righthand" else -1
    cu, cv, p, s = _dc_centres(ps, tree, Q, d)
    ref = np.full(len(Q), np.nan)
    for c, circ in (("-", []), ("U", [(cu[:, :2], d["ru"], 1)]), ("V", [(cv[:, :2], d["rv"], sv)]),
                    ("B", [(cu[:, :2], d["ru"], 1), (cv[:, :2], d["rv"], sv)])):
        m = case == c
        ref[m] = _belt(p[m, :2], s[m, :2], [(x[m], r, dd) for x, r, dd in circ])
    ref = np.hypot(ref, s[:, 2] - p[:, 2])
    assert np.abs(st.length - ref).max() < 1e-9
    # continuity: no jump beyond the largest moment arm times the step
    L = st.length.reshape(3, -1)
    assert np.abs(np.diff(L, axis=1)).max() < 0.05 * (th[1] - th[0])
    uln = tree.body_names.index("ulna")
    hum = tree.body_names.index("humerus")
    isw = st.wobj >= 0
    assert np.all(st.body[isw & (st.wobj == 0)] == hum)
    assert np.all(st.body[isw & (st.wobj == 1)] == uln)


@pytest.mark.parametrize("dirs", [("righthand", "righthand"), ("righthand", "lefthand")])
def test_double_cylinder_obstacle_moment_arms_and_forces(tmp_path, dirs):
    """Skewed V cylinder (rotated on the ulna) and a rise: analytic moment arms equal tendon
    excursion -dl/dq (central differences) to 1e-6 relative about both coordinates, and the
    body point forces map through D^T to the path's generalized forces."""
    path, d = _dc_model(tmp_path, du=dirs[0], dv=dirs[1], vrot="0.3 -0.2 0.1",
                        urot="-0.1 0.15 0", p=(-0.03, -0.02, -0.015), s=(0.013, -0.12, 0.02))
    model, tree, ps = _setup(path)
    rng = np.random.default_rng(4)
    Q = np.c_[rng.uniform(-0.6, 0.6, 80), rng.uniform(-0.5, 2.6, 80)]
    st = P.compute_paths(ps, tree, Q)[0]
    case = _dc_cases(st)
    assert (case == "B").sum() >= 5 and (case != "B").sum() >= 5
    ma = P.moment_arms(ps, tree, Q, coupled=False)
    ex = P.moment_arms_excursion(ps, tree, Q, h=1e-6)
    assert np.abs(ma).min() > 1e-4
    assert np.all(np.abs(ma - ex) <= 1e-6 * np.abs(ex))
    ten = rng.uniform(0, 500, (len(Q), 1))
    tau = P.path_generalized_forces(ps, tree, Q, ten)
    loads = P.path_body_forces(ps, tree, Q, ten)
    kin = forward_kinematics(tree, Q)
    M_com = loads.moment - np.cross(kin.body_com(tree) - kin.body_origin(tree), loads.force)
    tau2 = apply_velocity_map_transpose(tree, kin, loads.force, M_com) + loads.mobility
    assert np.abs(tau - tau2).max() < 1e-9 * np.abs(tau).max()
    # the ulna carries the V tangent points' pulls when V is wrapped: its force is not only
    # the insertion's pull along the last segment
    uln = tree.body_names.index("ulna")
    b = case == "B"
    assert np.abs(loads.force[b, uln]).max() > 1.0


def test_double_cylinder_obstacle_bad_input(tmp_path):
    path, _ = _dc_model(tmp_path, home="radius")
    model = read_osim(path)
    with pytest.raises(ModelFileError, match="elbow_dc.*wrapVcylHomeBody 'radius'"):
        P.compile_paths(model, compile_model(model))
    path, _ = _dc_model(tmp_path, rv=-1)
    model = read_osim(path)
    with pytest.raises(ModelFileError, match="elbow_dc.*radiusVcyl"):
        P.compile_paths(model, compile_model(model))
    path, _ = _dc_model(tmp_path, dv="sideways")
    model = read_osim(path)
    with pytest.raises(ModelFileError, match="elbow_dc.*wrapVcylDirection"):
        P.compile_paths(model, compile_model(model))


def test_double_cylinder_obstacle_with_a_via_point_and_another_obstacle(tmp_path):
    """The double cylinder on a path with a via point on the humerus and a WrapSphereObst
    before it (several wrap objects: the multi-pass wrapping): U, V and the sphere are all
    wrapped on most poses, the length stays continuous and analytic moment arms equal tendon
    excursion."""
    path, d = _dc_model(tmp_path)
    txt = path.read_text()
    txt = txt.replace('</WrapDoubleCylinderObst>', '</WrapDoubleCylinderObst><WrapSphereObst '
                      'name="ball"><translation>-0.03 -0.15 0.004</translation><radius>0.012'
                      '</radius></WrapSphereObst>')
    txt = txt.replace('<PathWrap name="pw">', '<PathWrap name="pb"><wrap_object>ball'
                      '</wrap_object></PathWrap><PathWrap name="pw">')
    txt = txt.replace('<PathPoint name="insertion">', '<PathPoint name="via"><socket_parent_frame>'
                      '/bodyset/humerus</socket_parent_frame><location>-0.025 -0.2 0.002'
                      '</location></PathPoint><PathPoint name="insertion">')
    path.write_text(txt)
    model, tree, ps = _setup(path)
    th = np.linspace(-0.5, 2.6, 63)
    Q = np.concatenate([np.c_[np.full_like(th, sh), th] for sh in (-0.6, 0.0, 0.6)])
    st = P.compute_paths(ps, tree, Q)[0]
    nobj = np.array([len(set(w[(t >= 0) & (w >= 0)].tolist())) for w, t in zip(st.wobj, st.tag)])
    assert (nobj == 3).sum() > len(Q) // 2
    assert np.abs(np.diff(st.length.reshape(3, -1), axis=1)).max() < 0.05 * (th[1] - th[0])
    ma = P.moment_arms(ps, tree, Q, coupled=False)
    ex = P.moment_arms_excursion(ps, tree, Q, h=1e-6)
    assert np.abs(ma).min() > 1e-4
    assert np.all(np.abs(ma - ex) <= 1e-6 * np.abs(ex))


@pytest.mark.parametrize("path", [ARM26, TSM], ids=["arm26", "thoracoscapular"])
def test_lockstep_wrapping_equals_one_path_at_a_time(path, monkeypatch):
    """moment_arms/compute_paths wrap the paths in lockstep, one wrap_segment call per wrap
    object and step over the stacked rows of every path; every row is wrapped on its own, so
    node lists and lengths equal those of the paths computed one at a time, bit for bit (both
    on the NumPy route: the process may otherwise switch to the compiled kernels between the
    two, whose results agree to rounding only)."""
    from arthron.geometry import wrap_kernels
    from arthron.multibody.path_geometry import _compute_one, _frames
    monkeypatch.setattr(wrap_kernels, "FORCE", False)
    from arthron.multibody.kinematics import forward_kinematics
    model, tree, ps = _setup(path)
    Q = _random_q(model, tree, 40, scale=0.3, seed=3)
    Rb, ob = _frames(tree, forward_kinematics(tree, Q))
    many = P.compute_paths(ps, tree, Q)
    assert sum(len(p.wraps) for p in ps.paths) >= 5
    for p, st in zip(ps.paths, many):
        one, _ = _compute_one(ps, p, Q, Rb, ob)
        for f in ("P", "loc", "body", "tag", "wlen", "wobj", "length", "G"):
            np.testing.assert_array_equal(getattr(st, f), getattr(one, f), err_msg=p.name)



def test_path_groups_equal_one_path_at_a_time_on_das4(monkeypatch):
    """compute_paths stacks the frames of the paths with the same number of wrap objects
    (one group per count) and wraps each group's rows together, over several wrap objects
    and surface types at one step, paths of different point counts padded to the longest:
    on DAS4 (cylinders, ellipsoids, spheres, tori; paths with 0 to 4 wrap objects, conditional
    and moving points) node lists, lengths and moment-arm terms equal those of the paths one at
    a time, bit for bit, with NumPy and with the compiled kernels; also when the groups are cut
    into blocks of a few paths (_MAX_ROWS, for many frames)."""
    from arthron.geometry import wrap_kernels as WK
    from arthron.multibody.path_geometry import _compute_many, _compute_one, _frames, _group_key
    from conftest import DATA
    model, tree, ps = _setup(DATA / "arm-model" / "das4_v4.osim")
    ps = ps.geometric()
    Q = _random_q(model, tree, 12, scale=0.3, seed=5)
    Rb, ob = _frames(tree, forward_kinematics(tree, Q))
    keys = {_group_key(ps, p) for p in ps.paths}
    assert len(keys) >= 4 and len(keys) < len(ps.paths) / 10
    types = {ps.wrap_objects[w.obj_id].type for p in ps.paths for w in p.wraps}
    assert {"WrapCylinder", "WrapEllipsoid", "WrapSphere", "WrapTorus"} <= types
    from arthron.multibody import path_geometry as PG
    old = WK.FORCE
    try:
        for force, rows in ((False, PG._MAX_ROWS), (True, PG._MAX_ROWS), (False, 50)):
            WK.FORCE = force
            monkeypatch.setattr(PG, "_MAX_ROWS", rows)
            many = _compute_many(ps, ps.paths, Q, Rb, ob)
            for p, (st, dl) in zip(ps.paths, many):
                one, dl1 = _compute_one(ps, p, Q, Rb, ob)
                for f in ("P", "loc", "body", "tag", "wlen", "wobj", "length", "G"):
                    np.testing.assert_array_equal(getattr(st, f), getattr(one, f), err_msg=p.name)
                assert len(dl) == len(dl1)
                for (k, c, d), (k1, c1, d1) in zip(dl, dl1):
                    assert (k, c) == (k1, c1)
                    np.testing.assert_array_equal(d, d1)
    finally:
        WK.FORCE = old


def test_lockstep_reports_unsupported_wrap_as_sequential(monkeypatch):
    """A wrap surface without a registered wrapping is reported for the first path (model
    order) that reaches it, as one path at a time would: TRIlong (its second wrap object is
    the ellipsoid TRIlonghh), not BIClong, whose first wrap object is an ellipsoid."""
    from arthron.errors import UnsupportedFeature
    from arthron.geometry import wrapping as W
    model, tree, ps = _setup(ARM26)
    Q = _random_q(model, tree, 10, scale=0.3, seed=1)
    monkeypatch.delitem(W.WRAP_SURFACES, "WrapEllipsoid")
    with pytest.raises(UnsupportedFeature, match="path of 'TRIlong'.*WrapEllipsoid"):
        P.moment_arms(ps, tree, Q)


@needs_data
@needs_opensim
def test_lengthening_speed_matches_opensim_on_the_thoracoscapular_model():
    """Paths over the ribcage, humeral head and elbow wraps of a model with a ScapulothoracicJoint:
    OpenSim's speeds u of its ellipsoid mobilizer are angular velocities, so the coordinates'
    rates are ``qdot_from_speeds(u)``; locked coordinates keep u = 0 (OpenSim holds them)."""
    import opensim as osim

    import oracle
    from arthron.multibody.kinematics import qdot_from_speeds
    model, tree, ps = _setup(TSM)
    rng = np.random.default_rng(0)
    names = list(tree.coordinate_names)
    Q = _random_q(model, tree, 5, seed=3)
    locked = np.array([model.coordinates[c].locked for c in names])
    U = rng.normal(0, 1, Q.shape)
    U[:, locked] = 0.0
    r = qdot_from_speeds(tree, Q, U)
    ours = P.lengthening_speeds(ps, tree, Q, r[0] if isinstance(r, tuple) else r)
    m, s = oracle.load(TSM)
    cs = m.getCoordinateSet()
    for t in range(len(Q)):
        for j, c in enumerate(names):
            cs.get(c).setValue(s, float(Q[t, j]), False)
            cs.get(c).setSpeedValue(s, float(U[t, j]))
        m.realizeVelocity(s)
        ref = [osim.Muscle.safeDownCast(m.getForceSet().get(n)).getLengtheningSpeed(s) for n in ps.names]
        assert np.abs(np.array(ref) - ours[t]).max() < 1e-9      # seen 1.3e-15


@needs_data
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_pose_is_an_error_naming_coordinate_and_frame(bad):
    """A NaN or infinite coordinate value in q (or qd) given to the path functions is an
    OptionError (a ValueError) naming the coordinate and the frame, from the one shape check
    they share (tree.check_q), not NaN lengths and moment arms; forward kinematics too."""
    from arthron.errors import OptionError
    from arthron.multibody.kinematics import forward_kinematics
    model = read_osim(ARM26)
    tree = compile_model(model)
    ps = P.compile_paths(model, tree)
    q = np.tile(tree.default_q, (4, 1))
    q[2, tree.coordinate_index("r_elbow_flex")] = bad
    calls = [lambda: P.path_lengths(ps, tree, q), lambda: P.moment_arms(ps, tree, q),
             lambda: P.path_states(ps, tree, q), lambda: P.compute_paths(ps, tree, q),
             lambda: P.moment_arms_and_node_forces(ps, tree, q),
             lambda: P.path_generalized_forces(ps, tree, q, np.ones((4, len(ps.paths)))),
             lambda: P.lengthening_speeds(ps, tree, q, np.zeros_like(q)),
             lambda: P.lengthening_speeds(ps, tree, q[[0]], q[[2]]),
             lambda: forward_kinematics(tree, q)]
    for call in calls:
        with pytest.raises(OptionError, match=r"at frame 2 \(of 4\), coordinate 'r_elbow_flex'"
                                              if call is not calls[-2] else r"frame 0 \(of 1\), coordinate 'r_elbow_flex'"):
            call()
    with pytest.raises(ValueError, match=r"q is .* coordinate 'r_elbow_flex' of model 'arm26'"):
        P.path_lengths(ps, tree, q[2])
    assert np.isfinite(P.path_lengths(ps, tree, tree.default_q)).all()


def test_double_cylinder_stretches_are_drawn_on_the_cylinders(tmp_path):
    """arthron show draws a path's stretch on each cylinder of a WrapDoubleCylinderObst along
    the cylinder (the helix between its tangent points, as a single cylinder's), not as the
    chord: with a rise along the axes, every drawn point between the nodes lies on the U or
    the V cylinder (distance from its axis = its radius to 1e-12 m), 23 per wrapped stretch,
    and the drawn polyline is as long as the path (to 1e-4; the chords were up to 2.2 % short)."""
    from arthron.render import ModelScene
    path, d = _dc_model(tmp_path, p=(-0.03, -0.02, -0.01), s=(0.013, -0.12, 0.02))
    model, tree, ps = _setup(path)
    th = np.linspace(-0.5, 2.6, 40)
    Q = np.concatenate([np.c_[np.full_like(th, sh), th] for sh in (-0.6, 0.6)])
    st = P.compute_paths(ps, tree, Q)[0]
    case = _dc_cases(st)
    assert all((case == c).sum() >= 2 for c in "UVB")
    cu, cv, _, _ = _dc_centres(ps, tree, Q, d)     # cylinder axes: ground z through the centres
    scene = ModelScene.build(model, Q, None, meshes=False)
    worst = 0.0
    for k in range(len(Q)):
        drawn = scene.paths[k][scene.path_names.index("TRI")]
        nodes = st.P[k][st.tag[k] >= 0]
        extra = drawn[~np.any(np.all(drawn[:, None] == nodes[None], axis=2), axis=1)]
        on_u = np.abs(np.hypot(*(extra - cu[k])[:, :2].T) - d["ru"]) < 1e-12
        on_v = np.abs(np.hypot(*(extra - cv[k])[:, :2].T) - d["rv"]) < 1e-12
        assert np.all(on_u | on_v), (k, case[k])
        assert len(extra) == 23 * {"-": 0, "U": 1, "V": 1, "B": 2}[case[k]], (k, case[k])
        L = float(np.linalg.norm(np.diff(drawn, axis=0), axis=1).sum())
        worst = max(worst, abs(L - st.length[k]) / st.length[k])
    assert worst < 1e-4, worst
