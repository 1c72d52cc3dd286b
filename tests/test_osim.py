"""Reading and writing .osim: OpenSim 4.6 loads what arthron writes and it means the same."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import oracle
from conftest import ARM26, GAIT2354, GAIT2354_SUBJECT, LENHART, TSM, needs_data, needs_opensim
from arthron.errors import ModelFileError
from arthron.io.osim import read_osim, write_osim
from arthron.multibody.kinematics import compile_model, forward_kinematics, marker_positions

PLUGINS = ("Smith2018ArticularContactForce", "Smith2018ContactMesh")
MODELS = [ARM26, GAIT2354, GAIT2354_SUBJECT, TSM, LENHART]


def _compare_with_opensim(original, written):
    """Masses, inertias, joint frames, default-pose body transforms and markers."""
    m0, s0 = oracle.load(original, remove_types=PLUGINS)
    m1, s1 = oracle.load(written, remove_types=PLUGINS)
    b0, b1 = oracle.body_table(m0), oracle.body_table(m1)
    assert b0.keys() == b1.keys()
    for k in b0:
        assert b1[k][0] == pytest.approx(b0[k][0], rel=1e-12)
        np.testing.assert_allclose(b1[k][1], b0[k][1], atol=1e-12)
        np.testing.assert_allclose(b1[k][2], b0[k][2], atol=1e-12, rtol=1e-12)
    P0, P1 = oracle.body_poses(m0, s0), oracle.body_poses(m1, s1)
    for k in P0:
        np.testing.assert_allclose(P1[k][0], P0[k][0], atol=1e-12)
        np.testing.assert_allclose(P1[k][1], P0[k][1], atol=1e-9)
    k0, k1 = oracle.marker_positions(m0, s0), oracle.marker_positions(m1, s1)
    assert k0.keys() == k1.keys()
    for k in k0:
        np.testing.assert_allclose(k1[k], k0[k], atol=1e-9)
    # Joint frames: parent and child frame transforms in ground.
    js0, js1 = m0.getJointSet(), m1.getJointSet()
    assert js0.getSize() == js1.getSize()
    for i in range(js0.getSize()):
        j0, j1 = js0.get(i), js1.get(js0.get(i).getName())
        for f0, f1 in ((j0.getParentFrame(), j1.getParentFrame()), (j0.getChildFrame(), j1.getChildFrame())):
            X0, X1 = f0.getTransformInGround(s0), f1.getTransformInGround(s1)
            np.testing.assert_allclose(oracle.vec(X1.p()), oracle.vec(X0.p()), atol=1e-9)
            np.testing.assert_allclose(oracle.mat33(X1.R()), oracle.mat33(X0.R()), atol=1e-12)
    assert m0.getForceSet().getSize() == m1.getForceSet().getSize()
    assert m0.getCoordinateSet().getSize() == m1.getCoordinateSet().getSize()
    assert m0.getConstraintSet().getSize() == m1.getConstraintSet().getSize()
    return m0, s0


@needs_data
@needs_opensim
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_round_trip_loads_in_opensim_and_means_the_same(path, tmp_path):
    model = read_osim(path)
    out = write_osim(tmp_path / path.name, model)
    assert 'Version="40000"' in out.read_text()[:200]
    m0, s0 = _compare_with_opensim(path, out)
    # arthron's own default pose and markers equal OpenSim's on the original file.
    tree = compile_model(model)
    kin = forward_kinematics(tree, tree.default_q[None])
    P0 = oracle.body_poses(m0, s0)
    for bi, b in enumerate(tree.body_names):
        np.testing.assert_allclose(kin.R[0, tree.body_node[bi]], P0[b][0], atol=1e-12)
        np.testing.assert_allclose(kin.o[0, tree.body_node[bi]], P0[b][1], atol=1e-9)
    names, X = marker_positions(tree, tree.default_q[None], kin=kin)
    K0 = oracle.marker_positions(m0, s0)
    for k, n in enumerate(names):
        np.testing.assert_allclose(X[0, k], K0[n], atol=1e-9)
    # masses equal to OpenSim's on the original file
    B0 = oracle.body_table(m0)
    for b in model.bodies.values():
        assert b.mass == pytest.approx(B0[b.name][0], rel=1e-12)
        np.testing.assert_allclose(b.inertia, B0[b.name][2], rtol=1e-12, atol=1e-15)


@needs_data
def test_lenhart_plugin_components_are_kept_verbatim(tmp_path):
    model = read_osim(LENHART)
    kept = [f for f in model.forces.values() if not f.modelled]
    assert {f.type for f in kept} >= {"Smith2018ArticularContactForce"}
    out = write_osim(tmp_path / "l.osim", model)
    text = out.read_text()
    assert text.count("<Smith2018ArticularContactForce") == 2
    assert text.count("<Blankevoort1991Ligament") == 76
    # and can be left out for a plain OpenSim
    out2 = write_osim(tmp_path / "l2.osim", model, exclude_types=("Smith2018ArticularContactForce",))
    assert "<Smith2018ArticularContactForce" not in out2.read_text()


V3_MODEL = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="30000">
<Model name="pendulum3x">
  <gravity> 0 -9.80665 0</gravity>
  <BodySet><objects>
    <Body name="ground"><mass>0</mass><mass_center>0 0 0</mass_center>
      <inertia_xx>0</inertia_xx><inertia_yy>0</inertia_yy><inertia_zz>0</inertia_zz>
      <inertia_xy>0</inertia_xy><inertia_xz>0</inertia_xz><inertia_yz>0</inertia_yz></Body>
    <Body name="rod1"><mass>2</mass><mass_center>0.01 -0.5 0.02</mass_center>
      <inertia_xx>0.1</inertia_xx><inertia_yy>0.02</inertia_yy><inertia_zz>0.1</inertia_zz>
      <inertia_xy>0.001</inertia_xy><inertia_xz>0</inertia_xz><inertia_yz>0</inertia_yz>
      <Joint><CustomJoint name="j1"><parent_body>ground</parent_body>
        <location_in_parent>0 1 0</location_in_parent><orientation_in_parent>0.1 0.2 0.3</orientation_in_parent>
        <location>0 0.1 0</location><orientation>0 0 0.2</orientation>
        <CoordinateSet><objects><Coordinate name="q1"><motion_type>rotational</motion_type>
          <default_value>0.4</default_value><range>-3 3</range><clamped>false</clamped><locked>false</locked></Coordinate>
          <Coordinate name="q2"><motion_type>rotational</motion_type><default_value>-0.3</default_value>
          <range>-3 3</range><clamped>false</clamped><locked>false</locked></Coordinate></objects></CoordinateSet>
        <reverse>false</reverse>
        <SpatialTransform>
          <TransformAxis name="rotation1"><function><LinearFunction><coefficients> 1 0</coefficients></LinearFunction></function>
            <coordinates>q1</coordinates><axis>0 0 1</axis></TransformAxis>
          <TransformAxis name="rotation2"><function><LinearFunction><coefficients> 1 0</coefficients></LinearFunction></function>
            <coordinates>q2</coordinates><axis>1 0 0</axis></TransformAxis>
          <TransformAxis name="rotation3"><function><Constant><value>0</value></Constant></function>
            <coordinates></coordinates><axis>0 1 0</axis></TransformAxis>
          <TransformAxis name="translation1"><function><Constant><value>0.05</value></Constant></function>
            <coordinates></coordinates><axis>1 0 0</axis></TransformAxis>
          <TransformAxis name="translation2"><function><Constant><value>0</value></Constant></function>
            <coordinates></coordinates><axis>0 1 0</axis></TransformAxis>
          <TransformAxis name="translation3"><function><Constant><value>0</value></Constant></function>
            <coordinates></coordinates><axis>0 0 1</axis></TransformAxis>
        </SpatialTransform></CustomJoint></Joint>
    </Body>
    <Body name="rod2"><mass>1</mass><mass_center>0 -0.3 0</mass_center>
      <inertia_xx>0.05</inertia_xx><inertia_yy>0.01</inertia_yy><inertia_zz>0.05</inertia_zz>
      <inertia_xy>0</inertia_xy><inertia_xz>0</inertia_xz><inertia_yz>0</inertia_yz>
      <Joint><PinJoint name="j2"><parent_body>rod1</parent_body>
        <location_in_parent>0 -1 0</location_in_parent><orientation_in_parent>0 0 0</orientation_in_parent>
        <location>0 0 0</location><orientation>0.3 0 0</orientation>
        <CoordinateSet><objects><Coordinate name="q3"><motion_type>rotational</motion_type>
          <default_value>0.7</default_value><range>-3 3</range></Coordinate></objects></CoordinateSet>
        <reverse>false</reverse></PinJoint></Joint>
    </Body>
  </objects></BodySet>
  <MarkerSet><objects><Marker name="tip"><body>rod2</body><location>0 -0.6 0.01</location><fixed>false</fixed></Marker></objects></MarkerSet>
</Model>
</OpenSimDocument>
"""


@needs_opensim
def test_reads_3x_format_like_opensim(tmp_path):
    src = tmp_path / "pendulum3x.osim"
    src.write_text(V3_MODEL)
    model = read_osim(src)
    assert model.version == 30000
    assert list(model.joints) == ["j1", "j2"]
    out = write_osim(tmp_path / "pendulum4x.osim", model)
    _compare_with_opensim(src, out)
    m0, s0 = oracle.load(src)
    tree = compile_model(model)
    names, X = marker_positions(tree, tree.default_q[None])
    np.testing.assert_allclose(X[0, 0], oracle.marker_positions(m0, s0)["tip"], atol=1e-12)


def test_element_names_with_double_colon_parse(tmp_path):
    text = V3_MODEL.replace("<MarkerSet>", "<ContactGeometrySet><objects/></ContactGeometrySet>"
                            "<ForceSet><objects><HuntCrossleyForce name='hc'><HuntCrossleyForce::ContactParametersSet>"
                            "<objects><HuntCrossleyForce::ContactParameters><stiffness>1e6</stiffness>"
                            "</HuntCrossleyForce::ContactParameters></objects></HuntCrossleyForce::ContactParametersSet>"
                            "</HuntCrossleyForce></objects></ForceSet><MarkerSet>")
    p = tmp_path / "hc.osim"
    p.write_text(text)
    model = read_osim(p)
    assert model.forces["hc"].modelled is False
    out = write_osim(tmp_path / "hc_out.osim", model)
    assert "<HuntCrossleyForce::ContactParameters>" in out.read_text()


def test_malformed_xml_names_file_and_line(tmp_path):
    p = tmp_path / "bad.osim"
    p.write_text('<?xml version="1.0"?>\n<OpenSimDocument Version="40000">\n<Model name="x">\n<BodySet>\n</Model>')
    with pytest.raises(ModelFileError, match=r"bad\.osim.*line \d+"):
        read_osim(p)


@needs_data
def test_unknown_joint_type_is_a_clear_error(tmp_path):
    text = ARM26.read_text().replace("<CustomJoint name=\"r_elbow\">", "<HingeJointX name=\"r_elbow\">", 1)
    text = text.replace("</CustomJoint>\n\t\t\t</objects>", "</HingeJointX>\n\t\t\t</objects>", 1)
    p = tmp_path / "arm26_bad.osim"
    p.write_text(text)
    with pytest.raises(ModelFileError, match=r"arm26_bad\.osim.*HingeJointX"):
        read_osim(p)


@needs_data
def test_missing_socket_target_is_a_clear_error(tmp_path):
    text = ARM26.read_text().replace("<socket_parent_frame>/bodyset/r_humerus</socket_parent_frame>",
                                     "<socket_parent_frame>/bodyset/r_humerusXX</socket_parent_frame>", 1)
    p = tmp_path / "arm26_sock.osim"
    p.write_text(text)
    with pytest.raises(ModelFileError, match="r_humerusXX"):
        read_osim(p)


@needs_data
def test_writer_never_overwrites_its_input(tmp_path):
    src = tmp_path / "arm26.osim"
    shutil.copy(ARM26, src)
    before = src.read_bytes()
    model = read_osim(src)
    with pytest.raises(ModelFileError, match="overwrite"):
        write_osim(src, model)
    assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arm26.osim"]


V3_MUSCLE = """<ForceSet><objects>
  <Thelen2003Muscle name="m1">
    <isDisabled>false</isDisabled>
    <GeometryPath>
      <PathPointSet><objects>
        <PathPoint name="m1-P1"><location>0.03 0.95 0.05</location><body>ground</body></PathPoint>
        <ConditionalPathPoint name="m1-P2"><location>0.04 -0.3 0.05</location><body>rod1</body>
          <coordinate>q1</coordinate><range>-0.5 0.5</range></ConditionalPathPoint>
        <MovingPathPoint name="m1-P3"><location>0 0 0</location><body>rod1</body>
          <x_location><SimmSpline><x>-3 0 3</x><y>0.02 0.04 0.03</y></SimmSpline></x_location>
          <x_coordinate>q2</x_coordinate>
          <y_location><SimmSpline><x>-3 0 3</x><y>-0.7 -0.6 -0.65</y></SimmSpline></y_location>
          <y_coordinate>q2</y_coordinate>
          <z_location><SimmSpline><x>-3 3</x><y>0.05 0.05</y></SimmSpline></z_location>
          <z_coordinate>q2</z_coordinate></MovingPathPoint>
        <PathPoint name="m1-P4"><location>0.03 -0.25 0.05</location><body>rod2</body></PathPoint>
      </objects></PathPointSet>
      <PathWrapSet><objects><PathWrap name="pw"><wrap_object>knob</wrap_object><method>hybrid</method>
        <range>-1 -1</range></PathWrap></objects></PathWrapSet>
    </GeometryPath>
    <max_isometric_force>500</max_isometric_force><optimal_fiber_length>0.1</optimal_fiber_length>
    <tendon_slack_length>0.3</tendon_slack_length><pennation_angle_at_optimal>0</pennation_angle_at_optimal>
  </Thelen2003Muscle></objects></ForceSet>"""
V3_WRAP = """<WrapObjectSet><objects><WrapCylinder name="knob"><xyz_body_rotation>0 0 0</xyz_body_rotation>
  <translation>0 -1 0</translation><quadrant>+x</quadrant><radius>0.04</radius><length>0.2</length>
  </WrapCylinder></objects></WrapObjectSet>"""


@needs_opensim
def test_3x_muscle_paths_read_like_opensim(tmp_path):
    """A 3.x muscle with a conditional point, a moving point (3.x ``x_coordinate`` form) and a
    cylinder wrap on a 3.x body: arthron's path length equals OpenSim's on the 3.x file and on
    arthron's 4.x output."""
    from arthron.multibody.paths import compile_paths, path_lengths
    text = V3_MODEL.replace("<MarkerSet>", V3_MUSCLE + "<MarkerSet>")
    text = text.replace('<Body name="rod2">', '<Body name="rod2">', 1)
    i = text.index("<Joint>", text.index('<Body name="rod1">'))
    text = text[:i] + V3_WRAP + text[i:]
    src = tmp_path / "muscle3x.osim"
    src.write_text(text)
    model = read_osim(src)
    out = write_osim(tmp_path / "muscle4x.osim", model)
    tree = compile_model(model)
    ps = compile_paths(model, tree)
    rng = np.random.default_rng(2)
    qs = np.array([[0.1, -0.2, 0.7]] + list(rng.uniform(-1.2, 1.2, (6, tree.nq))))
    ours = path_lengths(ps, tree, qs)[:, 0]
    for path in (src, out):
        m, s = oracle.load(path)
        cs = m.getCoordinateSet()
        mus = m.getMuscles().get("m1")
        L = []
        for q in qs:
            for k in range(cs.getSize()):
                cs.get(k).setValue(s, q[tree.coordinate_index(cs.get(k).getName())], False)
            m.realizePosition(s)
            L.append(mus.getGeometryPath().getLength(s))
        np.testing.assert_allclose(ours, L, atol=1e-9, err_msg=str(path.name))
    assert np.ptp(ours) > 0.01


@needs_data
def test_read_force_set_typed_actuators():
    """read_force_set gives typed residual and reserve actuators (Gait2354's CMC actuator
    file: 3 PointActuators, 3 TorqueActuators, CoordinateActuators), each written back from
    its fields reads back the same."""
    from arthron.io.osim import READERS, WRITERS, _Ctx, read_force_set
    from arthron.models.forces import CoordinateActuator, PointActuator, TorqueActuator
    from conftest import GAIT_PIPE
    fs = read_force_set(GAIT_PIPE / "gait2354_CMC_Actuators.xml")
    by = {f.name: f for f in fs}
    assert len(fs) == 23
    fy = by["FY"]
    assert isinstance(fy, PointActuator) and fy.body == "pelvis" and fy.optimal_force == 8.0
    np.testing.assert_array_equal(fy.point, [-0.0724376, 0, 0])
    np.testing.assert_array_equal(fy.direction, [0, 1, 0])
    assert fy.force_is_global and not fy.point_is_global and fy.applies_force
    mx = by["MX"]
    assert isinstance(mx, TorqueActuator) and (mx.bodyA, mx.bodyB) == ("pelvis", "ground")
    np.testing.assert_array_equal(mx.axis, [1, 0, 0])
    ca = [f for f in fs if isinstance(f, CoordinateActuator)]
    assert len(ca) == 17 and all(f.coordinate for f in ca)
    for f in fs:
        back = READERS[f.type](WRITERS[f.type](f), _Ctx(None))
        for name, _ in f.property_fields():
            np.testing.assert_array_equal(getattr(back, name), getattr(f, name))
        assert back.unmodelled_xml == f.unmodelled_xml


@needs_data
def test_read_without_forces_is_the_same_kinematics(tmp_path):
    """``read_osim(forces=False)`` (the IK tool's read) gives the model of the full read
    without its forces: the same bodies, frames, joints, constraints and markers (the same
    marker positions at a random pose) and no force, and does not read the forces' paths (a
    path point on a missing frame, an error of the full read, is not raised)."""
    full, kin = read_osim(GAIT2354_SUBJECT), read_osim(GAIT2354_SUBJECT, forces=False)
    assert len(full.forces) == 54 and kin.forces == {}
    for part in ("bodies", "frames", "joints", "constraints", "markers"):
        assert repr(getattr(kin, part)) == repr(getattr(full, part)), part
    cf, ck = compile_model(full), compile_model(kin)
    q = np.random.default_rng(3).uniform(-0.3, 0.3, (4, len(cf.coordinate_names)))
    (nk, xk), (nf, xf) = marker_positions(ck, q), marker_positions(cf, q)
    assert nk == nf and len(nk) == 39
    np.testing.assert_array_equal(xk, xf)
    text = GAIT2354_SUBJECT.read_text()
    i = text.index("<socket_parent_frame>", text.index("<ForceSet"))
    j = text.index("</socket_parent_frame>", i)
    p = tmp_path / "bad_path.osim"
    p.write_text(text[:i] + "<socket_parent_frame>/bodyset/nobody" + text[j:])
    with pytest.raises(ModelFileError, match="nobody"):
        read_osim(p)
    assert read_osim(p, forces=False).forces == {}
