"""Converting OpenSim 2.x/3.x models to 4.x (issue 14): the converted file loads in OpenSim 4.6
and means what OpenSim's in-memory upgrade of the original means.

Every comparison reads both files through the OpenSim API: the original (upgraded by OpenSim
in memory) and arthron's converted file. Tolerance 1e-9 (values are written with repr, so most
agree exactly).
"""
from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest

from conftest import ARM26, DATA, GAIT2354, TSM, needs_data, needs_opensim
from arthron.errors import ArthronWarning, UnsupportedFeature
from arthron.io.osim import read_osim, write_osim
from arthron.io.osim_upgrade import valid_name

LEGACY = DATA / "opensim-models-legacy"
TOL = 1e-9


def _convert(src, dst):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        write_osim(dst, read_osim(src))
    return [str(x.message) for x in w if issubclass(x.category, ArthronWarning)]


def _load(path):
    import oracle
    return oracle.load(path)


def _vec(v, n=3):
    return np.array([v.get(i) for i in range(n)])


def _simple_props(c):
    """Non-object properties of a component as OpenSim prints them (``name -> text``)."""
    out = {}
    for i in range(c.getNumProperties()):
        p = c.getPropertyByIndex(i)
        if p.isObjectProperty():
            continue
        out[p.getName()] = p.toString()
    return out


def _socket_frames(osim, c, s):
    """Ground transform (4,4) of the frame each socket connects to (other connectees: path)."""
    out = {}
    for n in c.getSocketNames():
        obj = c.getSocket(n).getConnecteeAsObject()
        f = osim.Frame.safeDownCast(obj)
        if f is not None:
            X = f.getTransformInGround(s)
            R = np.array([[X.R().get(i, j) for j in range(3)] for i in range(3)])
            out[n] = np.vstack([np.c_[R, _vec(X.p())], [0, 0, 0, 1]])
        else:
            out[n] = osim.Component.safeDownCast(obj).getAbsolutePathString()
    return out


def _meshes(osim, m, s):
    """Mesh name -> (file, scale factors, appearance, ground transform of its frame)."""
    out = {}
    for c in m.getComponentsList():
        g = osim.Mesh.safeDownCast(c)
        if g is None:
            continue
        X = g.getFrame().getTransformInGround(s)
        R = np.array([[X.R().get(i, j) for j in range(3)] for i in range(3)])
        a = g.get_Appearance()
        out[g.getName()] = (g.getGeometryFilename(), str(g.get_scale_factors()),
                            (a.get_visible(), str(a.get_color()), a.get_opacity()),
                            np.c_[R, _vec(X.p())])
    return out


def _poses(m, s):
    import oracle
    return oracle.body_poses(m, s), oracle.marker_positions(m, s)


def _compare(orig, conv, n_random=3, seed=0):
    """Compare OpenSim's reading of the original with its reading of the converted file."""
    import opensim as osim
    import oracle
    m1, s1 = _load(orig)
    m2, s2 = _load(conv)
    # counts
    for get in ("getBodySet", "getJointSet", "getCoordinateSet", "getMarkerSet", "getForceSet",
                "getConstraintSet", "getContactGeometrySet"):
        assert getattr(m1, get)().getSize() == getattr(m2, get)().getSize(), get
    assert m1.getName() == m2.getName()
    # masses, mass centers, inertias
    t1, t2 = oracle.body_table(m1), oracle.body_table(m2)
    assert t1.keys() == t2.keys()
    for b in t1:
        assert abs(t1[b][0] - t2[b][0]) <= TOL
        np.testing.assert_allclose(t1[b][1], t2[b][1], atol=TOL, rtol=0)
        np.testing.assert_allclose(t1[b][2], t2[b][2], atol=TOL, rtol=0)
    # coordinate properties
    cs1, cs2 = m1.getCoordinateSet(), m2.getCoordinateSet()
    for i in range(cs1.getSize()):
        c1 = cs1.get(i)
        c2 = cs2.get(c1.getName())
        for attr in ("getDefaultValue", "getDefaultSpeedValue", "getRangeMin", "getRangeMax",
                     "getDefaultClamped", "getDefaultLocked", "getMotionType",
                     "getDefaultIsPrescribed"):
            assert getattr(c1, attr)() == pytest.approx(getattr(c2, attr)(), abs=TOL), (c1.getName(), attr)
    # default pose and random poses: bodies, markers, path lengths
    rng = np.random.default_rng(seed)
    names = [cs1.get(i).getName() for i in range(cs1.getSize())]
    for k in range(n_random + 1):
        if k:
            vals = {n: rng.uniform(max(cs1.get(n).getRangeMin(), -1.5), min(cs1.get(n).getRangeMax(), 1.5))
                    for n in names}
            oracle.set_coordinates(m1, s1, vals)
            oracle.set_coordinates(m2, s2, vals)
        (b1, mk1), (b2, mk2) = _poses(m1, s1), _poses(m2, s2)
        for b in b1:
            np.testing.assert_allclose(b1[b][0], b2[b][0], atol=TOL, rtol=0, err_msg=b)
            np.testing.assert_allclose(b1[b][1], b2[b][1], atol=TOL, rtol=0, err_msg=b)
        for mk in mk1:
            np.testing.assert_allclose(mk1[mk], mk2[mk], atol=TOL, rtol=0, err_msg=mk)
        fs1, fs2 = m1.getForceSet(), m2.getForceSet()
        for i in range(fs1.getSize()):
            for cast in (osim.PathActuator, osim.Ligament):      # muscles are PathActuators
                p1 = cast.safeDownCast(fs1.get(i))
                if p1 is not None:
                    p2 = cast.safeDownCast(fs2.get(p1.getName()))
                    assert p1.getLength(s1) > 0
                    assert p1.getLength(s1) == pytest.approx(p2.getLength(s2), abs=TOL), p1.getName()
    # wrap objects
    for i in range(m1.getBodySet().getSize()):
        w1 = m1.getBodySet().get(i).getWrapObjectSet()
        w2 = m2.getBodySet().get(m1.getBodySet().get(i).getName()).getWrapObjectSet()
        assert w1.getSize() == w2.getSize()
        for k in range(w1.getSize()):
            p1 = _simple_props(w1.get(k))
            p1.pop("Appearance", None)
            p2 = {n: v for n, v in _simple_props(w2.get(w1.get(k).getName())).items() if n in p1}
            assert p1 == p2, w1.get(k).getName()
    # display geometry (3.x DisplayGeometry -> Mesh, on an offset frame when transformed)
    g1, g2 = _meshes(osim, m1, s1), _meshes(osim, m2, s2)
    assert g1.keys() == g2.keys()
    for n in g1:
        assert g1[n][:3] == g2[n][:3], n
        np.testing.assert_allclose(g1[n][3], g2[n][3], atol=TOL, rtol=0, err_msg=n)
    # forces: the upgraded property values and socket connectees
    fs1, fs2 = m1.getForceSet(), m2.getForceSet()
    for i in range(fs1.getSize()):
        f1 = fs1.get(i)
        f2 = fs2.get(f1.getName())
        assert f1.getConcreteClassName() == f2.getConcreteClassName()
        assert _simple_props(f1) == _simple_props(f2), f1.getName()
        sf1, sf2 = _socket_frames(osim, f1, s1), _socket_frames(osim, f2, s2)
        assert sf1.keys() == sf2.keys()
        for n in sf1:
            if isinstance(sf1[n], str):
                assert sf1[n] == sf2[n]
            else:
                np.testing.assert_allclose(sf1[n], sf2[n], atol=TOL, rtol=0)
    # constraints
    k1, k2 = m1.getConstraintSet(), m2.getConstraintSet()
    for i in range(k1.getSize()):
        c1 = k1.get(i)
        c2 = k2.get(c1.getName())
        assert c1.getConcreteClassName() == c2.getConcreteClassName()
        p1, p2 = _simple_props(c1), _simple_props(c2)
        # 3.x WeldConstraint offsets live in <frames> in 4.x (compared through the sockets)
        assert p1 == p2, c1.getName()
        sf1, sf2 = _socket_frames(osim, c1, s1), _socket_frames(osim, c2, s2)
        for n in sf1:
            np.testing.assert_allclose(sf1[n], sf2[n], atol=TOL, rtol=0)
    return m1, m2


# ----------------------------------------------------------------------------- shared legacy files
@needs_data
@needs_opensim
@pytest.mark.parametrize("name", ["arm26_v20303", "bouncing_block_v20303",
                                  "gait10dof18musc_v30000"])
def test_legacy_files_convert_to_what_opensim_reads(name, tmp_path):
    src = LEGACY / f"{name}.osim"
    out = tmp_path / f"{name}.osim"
    _convert(src, out)
    assert b'Version="40000"' in out.read_bytes()[:200]
    m1, m2 = _compare(src, out)
    import opensim as osim
    n_mesh = sum(osim.Mesh.safeDownCast(c) is not None for c in m2.getComponentsList())
    assert n_mesh == src.read_text().count("<DisplayGeometry>") > 0
    # the property OpenSim refused before the upgrade: min_control of these muscles
    fs2 = m2.getForceSet()
    for i in range(fs2.getSize()):
        mu = osim.Muscle.safeDownCast(fs2.get(i))
        if mu is not None and mu.getConcreteClassName() in ("Thelen2003Muscle",
                                                             "Millard2012EquilibriumMuscle"):
            assert mu.getMinControl() == pytest.approx(0.01)


@needs_data
def test_legacy_conversion_is_stable_on_the_next_round_trip(tmp_path):
    for name in ("bouncing_block_v20303", "arm26_v20303"):
        a, b = (tmp_path / f"{name}_{k}.osim" for k in "ab")
        _convert(LEGACY / f"{name}.osim", a)
        _convert(a, b)
        assert a.read_bytes() == b.read_bytes()


@needs_data
@pytest.mark.parametrize("model", [ARM26, TSM, GAIT2354])
def test_4x_model_round_trip_is_byte_stable(tmp_path, model):
    a, b = tmp_path / "a.osim", tmp_path / "b.osim"
    src = tmp_path / "model.osim"
    shutil.copy(model, src)
    _convert(src, a)
    _convert(a, b)
    assert a.read_bytes() == b.read_bytes()


# ----------------------------------------------------------------------------- synthetic 3.x files
_COORD = """<Coordinate name="{n}"><motion_type>{mt}</motion_type><default_value>{d}</default_value>
<default_speed_value>0</default_speed_value><range>-2 2</range><clamped>false</clamped>
<locked>false</locked><prescribed_function/><prescribed>false</prescribed></Coordinate>"""


def _axis(name, coords, axis, func):
    return (f'<TransformAxis name="{name}"><coordinates>{coords}</coordinates><axis>{axis}</axis>'
            f'<function>{func}</function></TransformAxis>')


_LIN = "<LinearFunction><coefficients> 1 0</coefficients></LinearFunction>"
_ZERO = "<Constant><value>0</value></Constant>"


def _custom_3rot(q):
    axes = [_axis("rotation1", q[0], "0.2 0.1 0.97", _LIN), _axis("rotation2", q[1], "1 0 0", _LIN),
            _axis("rotation3", q[2], "0 1 0", _LIN),
            _axis("translation1", "", "1 0 0", _ZERO), _axis("translation2", "", "0 1 0", _ZERO),
            _axis("translation3", "", "0 0 1", _ZERO)]
    return "<SpatialTransform>" + "".join(axes) + "</SpatialTransform>"


def _body(name, parent, jtype, jname, coords, st="", reverse=False, mass=2.0):
    cs = "".join(_COORD.format(n=c, mt="rotational", d=0.3) for c in coords)
    return f"""<Body name="{name}"><mass>{mass}</mass><mass_center>0.01 -0.2 0.03</mass_center>
<inertia_xx>0.11</inertia_xx><inertia_yy>0.02</inertia_yy><inertia_zz>0.1</inertia_zz>
<inertia_xy>0.001</inertia_xy><inertia_xz>-0.002</inertia_xz><inertia_yz>0.003</inertia_yz>
<Joint><{jtype} name="{jname}"><parent_body>{parent}</parent_body>
<location_in_parent>0.05 -0.4 0.02</location_in_parent><orientation_in_parent>0.1 -0.2 0.3</orientation_in_parent>
<location>0.01 0.1 -0.03</location><orientation>-0.3 0.2 0.1</orientation>
<CoordinateSet><objects>{cs}</objects><groups/></CoordinateSet>{st}
<reverse>{'true' if reverse else 'false'}</reverse></{jtype}></Joint>
<WrapObjectSet><objects/><groups/></WrapObjectSet></Body>"""


def _v3(bodies, name="toy", constraints="", forces="", markers="", extra="", version=30000):
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="{version}"><Model name="{name}">
<gravity>0 -9.80665 0</gravity><BodySet><objects>
<Body name="ground"><mass>0</mass><mass_center>0 0 0</mass_center><inertia_xx>1</inertia_xx>
<inertia_yy>1</inertia_yy><inertia_zz>1</inertia_zz><inertia_xy>0</inertia_xy><inertia_xz>0</inertia_xz>
<inertia_yz>0</inertia_yz><Joint/></Body>
{bodies}</objects><groups/></BodySet>
<ConstraintSet><objects>{constraints}</objects><groups/></ConstraintSet>
<ForceSet><objects>{forces}</objects><groups/></ForceSet>
<MarkerSet><objects>{markers}</objects><groups/></MarkerSet>{extra}
</Model></OpenSimDocument>"""


def _marker(name, body, loc="0.02 -0.1 0.05"):
    return f"<Marker name=\"{name}\"><body>{body}</body><location>{loc}</location><fixed>false</fixed></Marker>"


def _two_bodies(rev1=False, rev2=False, b1="thigh", b2="shank", q1=("q1", "q2", "q3"), q2="knee"):
    return (_body(b1, "ground", "CustomJoint", "hip", list(q1), _custom_3rot(q1), reverse=rev1)
            + _body(b2, b1, "PinJoint", "knee_joint", [q2], reverse=rev2, mass=1.5))


def _write(tmp_path, text, name="model.osim"):
    p = tmp_path / name
    p.write_text(text)
    return p


@needs_opensim
@pytest.mark.parametrize("rev1,rev2", [(True, False), (False, True), (True, True)])
def test_reversed_joints(tmp_path, rev1, rev2):
    markers = _marker("mt", "thigh") + _marker("ms", "shank")
    src = _write(tmp_path, _v3(_two_bodies(rev1, rev2), markers=markers))
    out = tmp_path / "out.osim"
    msgs = _convert(src, out)
    assert sum("reversed 3.x joint" in m for m in msgs) == rev1 + rev2
    _compare(src, out, n_random=4)


@needs_opensim
@pytest.mark.parametrize("jtype,n", [("GimbalJoint", 3), ("UniversalJoint", 2), ("SliderJoint", 1),
                                     ("WeldJoint", 0)])
def test_reversed_joint_types(tmp_path, jtype, n):
    coords = [f"c{k}" for k in range(n)]
    bodies = (_body("thigh", "ground", "CustomJoint", "hip", ["q1", "q2", "q3"], _custom_3rot(["q1", "q2", "q3"]))
              + _body("shank", "thigh", jtype, "j", coords, reverse=True, mass=1.5))
    src = _write(tmp_path, _v3(bodies, markers=_marker("ms", "shank")))
    out = tmp_path / "out.osim"
    _convert(src, out)
    _compare(src, out, n_random=3)


def test_reversed_joint_with_rotation_and_translation_is_unsupported(tmp_path):
    axes = [_axis("rotation1", "q1", "0 0 1", _LIN), _axis("rotation2", "", "1 0 0", _ZERO),
            _axis("rotation3", "", "0 1 0", _ZERO), _axis("translation1", "q2", "1 0 0", _LIN),
            _axis("translation2", "", "0 1 0", _ZERO), _axis("translation3", "", "0 0 1", _ZERO)]
    st = "<SpatialTransform>" + "".join(axes) + "</SpatialTransform>"
    src = _write(tmp_path, _v3(_body("b", "ground", "CustomJoint", "j", ["q1", "q2"], st, reverse=True)))
    with pytest.raises(UnsupportedFeature, match="reversed joint 'j'"):
        read_osim(src)


_NAMED_FORCES = """<CoordinateLimitForce name="knee limit"><isDisabled>false</isDisabled>
<coordinate>{q}</coordinate><upper_stiffness>20</upper_stiffness><upper_limit>10</upper_limit>
<lower_stiffness>20</lower_stiffness><lower_limit>-90</lower_limit><damping>0.1</damping>
<transition>5</transition></CoordinateLimitForce>
<CoordinateActuator name="knee act"><isDisabled>false</isDisabled><min_control>-1</min_control>
<max_control>1</max_control><coordinate>{q}</coordinate><optimal_force>50</optimal_force>
</CoordinateActuator>
<PointToPointSpring name="spring"><isDisabled>false</isDisabled><body1>{b1}</body1>
<body2>shank</body2><point1>0 0 0</point1><point2>0 0.1 0</point2><stiffness>100</stiffness>
<rest_length>0.3</rest_length></PointToPointSpring>"""


@needs_opensim
def test_names_with_whitespace_are_made_valid_like_opensim(tmp_path):
    # OpenSim removes whitespace from names but does not update references to them: the
    # renamed coordinate is referenced by nothing here, so that OpenSim can read the original
    text = _v3(_two_bodies(q2="knee angle"), name="3D Gait Model with Simple Arms",
               forces=_NAMED_FORCES.format(b1="thigh", q="q1"),
               markers=_marker("R knee", "thigh") + _marker("ms", "shank"))
    src = _write(tmp_path, text)
    out = tmp_path / "out.osim"
    msgs = _convert(src, out)
    ren = [m for m in msgs if "were changed" in m]
    assert len(ren) == 1
    for old in ("3D Gait Model with Simple Arms", "knee angle", "knee limit", "knee act", "R knee"):
        assert f"'{old}' -> '{valid_name(old)}'" in ren[0]
    m = read_osim(out)
    assert m.name == "3DGaitModelwithSimpleArms"
    assert "kneeangle" in m.coordinates and m.forces["kneelimit"].coordinate == "q1"
    # OpenSim removes the whitespace from the original's names the same way
    _compare(src, out)


@needs_opensim
def test_body_names_opensim_cannot_upgrade_are_made_valid(tmp_path):
    """A body name with whitespace or '/' makes OpenSim 4.6 refuse the 3.x original (it names
    the joint's offset frame after the body before removing whitespace), and so does a force
    naming a coordinate OpenSim renamed; arthron's file loads, with every reference renamed."""
    import opensim as osim
    import oracle
    text = _v3(_two_bodies(b1="upper leg/L", q2="knee angle"),
               forces=_NAMED_FORCES.format(b1="upper leg/L", q="knee angle"),
               markers=_marker("mk", "upper leg/L"))
    src = _write(tmp_path, text)
    out = tmp_path / "out.osim"
    msgs = _convert(src, out)
    assert any("'upper leg/L' -> 'upperleg_L'" in m for m in msgs)
    m1 = read_osim(src)
    m2, s2 = _load(out)
    assert m2.getMarkerSet().get("mk").getParentFrame().getName() == "upperleg_L"
    assert m2.getForceSet().get("kneelimit").getPropertyByName("coordinate").toString() == "kneeangle"
    spring = m2.getForceSet().get("spring")
    assert osim.Component.safeDownCast(spring.getSocket("body1").getConnecteeAsObject()) \
        .getAbsolutePathString() == "/bodyset/upperleg_L"
    poses = oracle.body_poses(m2, s2)
    from arthron.multibody.kinematics import forward_kinematics
    from arthron.multibody.tree import compile_model
    t = compile_model(m1)
    kin = forward_kinematics(t, np.array([[c.default_value for c in m1.coordinates.values()]]))
    for i, b in enumerate(t.body_names):
        np.testing.assert_allclose(kin.o[0, t.body_node[i]], poses[b][1], atol=TOL)


def test_valid_name():
    assert valid_name("3D Gait Model\twith Arms") == "3DGaitModelwithArms"
    assert valid_name("a/b*c+d\\e") == "a_b_c_d_e"
    assert valid_name("plain_name.1") == "plain_name.1"


_CONSTRAINTS = """
<PointConstraint name="pc"><isDisabled>false</isDisabled><body_1>thigh</body_1><body_2>shank</body_2>
<location_body_1>0 -0.4 0</location_body_1><location_body_2>0 0.02 0</location_body_2></PointConstraint>
<WeldConstraint name="wc"><isDisabled>true</isDisabled><body_1>ground</body_1>
<location_body_1>0.1 0.2 0.3</location_body_1><orientation_body_1>0.1 0.2 0.3</orientation_body_1>
<body_2>shank</body_2><location_body_2>0 0 0</location_body_2><orientation_body_2>0 0 0</orientation_body_2>
</WeldConstraint>
<PointOnLineConstraint name="pol"><isDisabled>true</isDisabled><line_body>ground</line_body>
<line_direction_vec>0 1 0</line_direction_vec><point_on_line>0 0 0</point_on_line>
<follower_body>thigh</follower_body><point_on_follower>0 0.1 0</point_on_follower></PointOnLineConstraint>
<ConstantDistanceConstraint name="cdc"><isDisabled>true</isDisabled><body_1>thigh</body_1>
<body_2>shank</body_2><location_body_1>0 0 0</location_body_1><location_body_2>0 0.1 0</location_body_2>
<constant_distance>0.5</constant_distance></ConstantDistanceConstraint>
<CoordinateCouplerConstraint name="ccc"><isDisabled>true</isDisabled>
<coupled_coordinates_function><LinearFunction><coefficients>0.5 0.1</coefficients></LinearFunction>
</coupled_coordinates_function><independent_coordinate_names>q1</independent_coordinate_names>
<dependent_coordinate_name>knee</dependent_coordinate_name><scale_factor>1</scale_factor>
</CoordinateCouplerConstraint>"""


@needs_opensim
def test_constraints_referencing_bodies_become_sockets(tmp_path):
    src = _write(tmp_path, _v3(_two_bodies(), constraints=_CONSTRAINTS))
    out = tmp_path / "out.osim"
    _convert(src, out)
    text = out.read_text()
    assert "<socket_follower_body>/bodyset/thigh</socket_follower_body>" in text
    assert "<socket_body_1>/bodyset/thigh</socket_body_1>" in text
    m = read_osim(out)
    weld = next(c for c in m.constraints if c.name == "wc")
    assert weld.properties["body_1"] == "/constraintset/wc/ground_offset"
    assert weld.properties["body_2"] == "/bodyset/shank"
    assert not weld.enabled
    _compare(src, out, n_random=2)


_THELEN = """<Thelen2003Muscle name="{name}"><isDisabled>false</isDisabled>
<min_control>{lo}</min_control><max_control>{hi}</max_control>
<GeometryPath><PathPointSet><objects>
<PathPoint name="p1"><location>0 -0.1 0.02</location><body>thigh</body></PathPoint>
<PathPoint name="p2"><location>0 -0.05 0.02</location><body>shank</body></PathPoint>
</objects><groups/></PathPointSet></GeometryPath>
<max_isometric_force>800</max_isometric_force><optimal_fiber_length>0.1</optimal_fiber_length>
<tendon_slack_length>0.2</tendon_slack_length><pennation_angle_at_optimal>0.1</pennation_angle_at_optimal>
</Thelen2003Muscle>"""


@needs_opensim
@pytest.mark.parametrize("version", [20303, 30000])
def test_actuators_with_old_control_bounds(tmp_path, version):
    forces = (_THELEN.format(name="m_default", lo=0, hi=1) + _THELEN.format(name="m_set", lo=0.02, hi=0.9)
              + """<CoordinateActuator name="act"><isDisabled>false</isDisabled><min_control>0</min_control>
<max_control>1</max_control><coordinate>knee</coordinate><optimal_force>10</optimal_force></CoordinateActuator>
<BushingForce name="bush"><isDisabled>false</isDisabled><body_1>thigh</body_1><body_2>shank</body_2>
<location_body_1>0 -0.4 0</location_body_1><orientation_body_1>0 0 0.1</orientation_body_1>
<location_body_2>0 0 0</location_body_2><orientation_body_2>0 0 0</orientation_body_2>
<rotational_stiffness>1 2 3</rotational_stiffness><translational_stiffness>4 5 6</translational_stiffness>
<rotational_damping>0.1 0.1 0.1</rotational_damping><translational_damping>0 0 0</translational_damping>
</BushingForce>""")
    src = _write(tmp_path, _v3(_two_bodies(), forces=forces, version=version))
    out = tmp_path / "out.osim"
    _convert(src, out)
    m1, m2 = _compare(src, out, n_random=1)
    import opensim as osim
    mu = osim.Muscle.safeDownCast(m2.getForceSet().get("m_default"))
    assert mu.getMinControl() == pytest.approx(0.01)    # Thelen2003Muscle's default
    mu = osim.Muscle.safeDownCast(m2.getForceSet().get("m_set"))
    assert (mu.getMinControl(), mu.getMaxControl()) == (pytest.approx(0.02), pytest.approx(0.9))


# ----------------------------------------------------------------------------- convert --check
@needs_data
def test_cli_convert_check_reports_largest_differences(tmp_path, capsys):
    from arthron.cli import main
    out = tmp_path / "gait.osim"
    assert main(["convert", str(LEGACY / "gait10dof18musc_v30000.osim"), str(out), "--check"]) == 0
    text = capsys.readouterr().out
    for q in ("mass (kg)", "inertia (kg m^2)", "force properties", "offset frames", "body origins, 6 poses",
              "body rotations", "path lengths, 6 poses"):
        assert q in text
    assert "check passed" in text
    try:
        import opensim  # noqa: F401
        assert "OpenSim 4: loaded" in text
    except ImportError:
        pass


@needs_data
def test_check_finds_a_changed_model(tmp_path):
    """The check is not vacuous: a converted file that differs from the original (a body's
    mass and a joint offset changed after conversion) is reported with the differences."""
    from arthron.tools.convert_tool import check_conversion
    out = tmp_path / "arm.osim"
    m = read_osim(LEGACY / "arm26_v20303.osim")
    m.bodies["r_humerus"].mass += 0.5
    m.forces["BIClong"].optimal_fiber_length += 0.002
    f = next(f for f in m.frames.values() if f.path.endswith("r_humerus_offset"))
    f.translation = f.translation + np.array([0.0, 0.01, 0.0])
    write_osim(out, m)
    res = check_conversion(LEGACY / "arm26_v20303.osim", out, use_opensim=False)
    assert not res.ok
    rows = {q.split(",")[0]: (d, w) for q, d, w in res.rows}
    assert rows["mass (kg)"] == (pytest.approx(0.5), "r_humerus")
    assert rows["force properties"] == (pytest.approx(0.002), "BIClong.optimal_fiber_length")
    assert rows["offset frames in their body"][0] == pytest.approx(0.01)
    assert rows["body origins"][0] > 0.009
    assert rows["path lengths"][0] > 1e-4
    assert "FAILED" in res.report()


# ----------------------------------------------------------------------------- force classes
_PATH_POINTS = """<GeometryPath><PathPointSet><objects>
<PathPoint name="p1"><location>0 -0.1 0.02</location><body>thigh</body></PathPoint>
<ConditionalPathPoint name="p2"><location>0 -0.3 0.04</location><body>thigh</body><range>-1 1</range>
<coordinate>knee</coordinate></ConditionalPathPoint>
<MovingPathPoint name="p3"><location>0 0 0</location><body>shank</body>
<x_location><SimmSpline><x>-2 0 2</x><y>0.01 0.02 0.015</y></SimmSpline></x_location><x_coordinate>knee</x_coordinate>
<y_location><Constant><value>0.05</value></Constant></y_location><y_coordinate>knee</y_coordinate>
<z_location><LinearFunction><coefficients>0.01 0.02</coefficients></LinearFunction></z_location>
<z_coordinate>knee</z_coordinate></MovingPathPoint>
</objects><groups/></PathPointSet></GeometryPath>"""

_FORCES = {
    "TorqueActuator": """<TorqueActuator name="tq"><isDisabled>false</isDisabled><min_control>-1</min_control>
<max_control>1</max_control><bodyA>thigh</bodyA><bodyB>shank</bodyB><torque_is_global>false</torque_is_global>
<axis>0 0 1</axis><optimal_force>30</optimal_force></TorqueActuator>""",
    "PointActuator": """<PointActuator name="pa"><isDisabled>false</isDisabled><body>shank</body>
<point>0 0.1 0</point><point_is_global>false</point_is_global><direction>1 0 0</direction>
<force_is_global>false</force_is_global><optimal_force>20</optimal_force></PointActuator>""",
    "SpringGeneralizedForce": """<SpringGeneralizedForce name="sgf"><isDisabled>false</isDisabled>
<coordinate>knee</coordinate><stiffness>10</stiffness><rest_length>0.1</rest_length><viscosity>0.5</viscosity>
</SpringGeneralizedForce>""",
    "PathActuator": f"""<PathActuator name="pact"><isDisabled>false</isDisabled>{_PATH_POINTS}
<optimal_force>100</optimal_force></PathActuator>""",
    "Ligament": f"""<Ligament name="lig"><isDisabled>false</isDisabled>{_PATH_POINTS}
<resting_length>0.2</resting_length><pcsa_force>500</pcsa_force>
<force_length_curve><SimmSpline><x>0 1 2</x><y>0 0 1</y></SimmSpline></force_length_curve></Ligament>""",
    "PrescribedForce": """<PrescribedForce name="pf"><isDisabled>false</isDisabled><body>shank</body>
<pointIsGlobal>false</pointIsGlobal><forceIsGlobal>true</forceIsGlobal><FunctionSet name="forceFunctions">
<objects><Constant><value>1</value></Constant><Constant><value>2</value></Constant>
<Constant><value>3</value></Constant></objects></FunctionSet></PrescribedForce>""",
    "CoordinateLimitForce": """<CoordinateLimitForce name="clf"><isDisabled>true</isDisabled>
<coordinate>knee</coordinate><upper_stiffness>20</upper_stiffness><upper_limit>10</upper_limit>
<lower_stiffness>20</lower_stiffness><lower_limit>-90</lower_limit><damping>0.1</damping>
<transition>5</transition></CoordinateLimitForce>""",
    "RigidTendonMuscle": _THELEN.format(name="rt", lo=0, hi=1).replace("Thelen2003Muscle", "RigidTendonMuscle"),
    "Millard2012EquilibriumMuscle": _THELEN.format(name="mil", lo=0, hi=1).replace(
        "Thelen2003Muscle", "Millard2012EquilibriumMuscle"),
    "Schutte1993Muscle_Deprecated": _THELEN.format(name="sch", lo=0, hi=1).replace(
        "Thelen2003Muscle", "Schutte1993Muscle_Deprecated"),
    "Thelen2003Muscle_Deprecated": _THELEN.format(name="thd", lo=0, hi=1).replace(
        "Thelen2003Muscle", "Thelen2003Muscle_Deprecated"),
    "Millard2012AccelerationMuscle": _THELEN.format(name="mac", lo=0, hi=1).replace(
        "Thelen2003Muscle", "Millard2012AccelerationMuscle"),
    "Delp1990Muscle_Deprecated": _THELEN.format(name="delp", lo=0, hi=1).replace(
        "Thelen2003Muscle", "Delp1990Muscle_Deprecated"),
    "CoordinateActuator": """<CoordinateActuator name="ca"><isDisabled>false</isDisabled>
<coordinate>knee</coordinate></CoordinateActuator>""",
    "ExpressionBasedPointToPointForce": """<ExpressionBasedPointToPointForce name="ebf">
<isDisabled>false</isDisabled><body1>thigh</body1><body2>shank</body2><point1>0 0 0</point1>
<point2>0 0.1 0</point2><expression>0.1*d</expression></ExpressionBasedPointToPointForce>""",
}


@needs_opensim
@pytest.mark.parametrize("cls", sorted(_FORCES))
def test_force_classes_of_3x_files(tmp_path, cls):
    """Each force class (modelled or kept verbatim) as OpenSim's upgrade reads it: properties,
    socket connectees, path lengths (conditional and moving path points included)."""
    src = _write(tmp_path, _v3(_two_bodies(), forces=_FORCES[cls], markers=_marker("mk", "shank")))
    out = tmp_path / "out.osim"
    _convert(src, out)
    _compare(src, out, n_random=2)


@needs_opensim
def test_controllers_of_3x_files(tmp_path):
    import opensim as osim
    forces = _FORCES["PointActuator"] + """<CoordinateActuator name="act"><isDisabled>false</isDisabled>
<coordinate>knee</coordinate><optimal_force>10</optimal_force></CoordinateActuator>"""
    extra = """<ControllerSet name="Controllers"><objects><PrescribedController name="pc">
<isDisabled>false</isDisabled><actuator_list>pa act</actuator_list><FunctionSet name="ControlFunctions">
<objects><Constant name="f1"><value>0.5</value></Constant><Constant name="f2"><value>0.2</value></Constant>
</objects><groups/></FunctionSet><interpolation_method>1</interpolation_method></PrescribedController>
</objects><groups/></ControllerSet>"""
    src = _write(tmp_path, _v3(_two_bodies(), forces=forces, extra=extra))
    out = tmp_path / "out.osim"
    msgs = _convert(src, out)
    assert not any("ControllerSet" in m for m in msgs)
    assert "<socket_actuators>/forceset/pa /forceset/act</socket_actuators>" in out.read_text()
    m1, m2 = _compare(src, out, n_random=1)
    c1 = osim.PrescribedController.safeDownCast(m1.getControllerSet().get("pc"))
    c2 = osim.PrescribedController.safeDownCast(m2.getControllerSet().get("pc"))
    assert c1.getNumActuators() == c2.getNumActuators() == 2
    assert _simple_props(c1) == _simple_props(c2)


@needs_opensim
def test_prescribed_coordinate_of_3x_file(tmp_path):
    import opensim as osim
    text = _v3(_two_bodies()).replace(
        '<Coordinate name="knee"><motion_type>rotational</motion_type><default_value>0.3</default_value>',
        '<Coordinate name="knee"><motion_type>rotational</motion_type><default_value>0.3</default_value>'
        '<prescribed_function><LinearFunction><coefficients> 2 0.1</coefficients></LinearFunction>'
        '</prescribed_function><prescribed>true</prescribed>', 1)
    assert "<prescribed>true</prescribed>" in text
    src = _write(tmp_path, text)
    out = tmp_path / "out.osim"
    _convert(src, out)
    m1, m2 = _compare(src, out, n_random=0)
    f1 = m1.getCoordinateSet().get("knee").getPrescribedFunction()
    f2 = m2.getCoordinateSet().get("knee").getPrescribedFunction()
    for t in (0.0, 0.7):
        assert f1.calcValue(osim.Vector(1, t)) == f2.calcValue(osim.Vector(1, t)) == pytest.approx(2 * t + 0.1)


@needs_opensim
def test_force_groups_of_3x_files(tmp_path):
    forces = _THELEN.format(name="m 1", lo=0, hi=1) + _THELEN.format(name="m2", lo=0, hi=1)
    text = _v3(_two_bodies(), forces=forces).replace(
        "</objects><groups/></ForceSet>",
        '</objects><groups><ObjectGroup name="flexors"><members>m2</members></ObjectGroup>'
        "</groups></ForceSet>")
    src = _write(tmp_path, text)
    out = tmp_path / "out.osim"
    _convert(src, out)
    m1, m2 = _compare(src, out, n_random=0)
    g1, g2 = m1.getForceSet().getGroup("flexors"), m2.getForceSet().getGroup("flexors")
    assert [g1.getMembers().get(i).getName() for i in range(g1.getMembers().getSize())] == \
        [g2.getMembers().get(i).getName() for i in range(g2.getMembers().getSize())] == ["m2"]


@needs_opensim
def test_muscle_of_a_20301_file(tmp_path):
    """Before 20302 a muscle held its MusclePointSet directly and named the pennation angle
    ``pennation_angle`` (Muscle::updateFromXMLNode)."""
    import opensim as osim
    f = (_THELEN.format(name="m", lo=0, hi=1).replace("<GeometryPath>", "").replace("</GeometryPath>", "")
         .replace("PathPointSet", "MusclePointSet").replace("pennation_angle_at_optimal", "pennation_angle"))
    src = _write(tmp_path, _v3(_two_bodies(), forces=f, version=20301))
    out = tmp_path / "out.osim"
    _convert(src, out)
    m1, m2 = _compare(src, out, n_random=2)
    mu = osim.Muscle.safeDownCast(m2.getForceSet().get("m"))
    assert mu.getPennationAngleAtOptimalFiberLength() == 0.1
    assert read_osim(src).forces["m"].path is not None


@needs_data
@needs_opensim
def test_numbers_opensim_reprints_when_upgrading(tmp_path):
    """OpenSim's upgrade builds inertias, joint offset frames, two-frame-linker frames and
    display meshes by printing the 3.x numbers (6 significant digits): the converted file holds
    the same values as OpenSim's reading of the original, not the file's digits."""
    text = (LEGACY / "bouncing_block_v20303.osim").read_text()
    text = text.replace("<transform> 0 0 0 0 0.25 0</transform>",
                        "<transform> 0.123456789 0 0 0.0123456789 0.25 0</transform>", 1)
    text = text.replace("<scale_factors> 0.6 5 0.6</scale_factors>",
                        "<scale_factors> 0.612345678 5 0.6</scale_factors>", 1)
    text = text.replace("<location_body_2>0 0.5 0</location_body_2>",
                        "<location_body_2>0 0.512345678 0</location_body_2>", 1)
    text = text.replace("<location>0 0.5 0</location>", "<location>0 0.512345678 0</location>", 1)
    text = text.replace("<inertia_xx>0.53333333</inertia_xx>", "<inertia_xx>0.5333333333</inertia_xx>", 1)
    src = _write(tmp_path, text)
    out = tmp_path / "out.osim"
    _convert(src, out)
    m1, m2 = _compare(src, out, n_random=1)
    assert "0.512346" in out.read_text() and "0.512345678" not in out.read_text()


@needs_opensim
def test_check_reports_a_file_opensim_refuses(tmp_path, capsys):
    """A 30515 file (after the min_control step) whose Thelen muscle keeps min_control 0 is
    refused by OpenSim as the original is; ``--check`` says so and exits with 1."""
    from arthron.cli import main
    src = _write(tmp_path, _v3(_two_bodies(), forces=_THELEN.format(name="m", lo=0, hi=1), version=30515))
    out = tmp_path / "out.osim"
    assert main(["convert", str(src), str(out), "--check"]) == 1
    text = capsys.readouterr().out
    assert "OpenSim 4: refused the file" in text and "check FAILED" in text


def test_malformed_3x_linker_offset_is_a_typed_error(tmp_path):
    from arthron.errors import ModelFileError
    bad = _CONSTRAINTS.replace("<location_body_1>0.1 0.2 0.3</location_body_1>",
                               "<location_body_1>0.1 oops 0.3</location_body_1>")
    src = _write(tmp_path, _v3(_two_bodies(), constraints=bad))
    with pytest.raises(ModelFileError, match="non-numeric"):
        read_osim(src)
