"""Elements of whole public OpenSim models (github opensim-org/opensim-models) that arthron read
wrongly or refused when a new user ran them, each reproduced in a small model written by the
test and compared with OpenSim 4.6. The public files themselves are not copied."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import oracle
from conftest import needs_opensim, one_muscle_arm
from arthron.cli import main
from arthron.errors import ArthronWarning
from arthron.io.osim import read_osim, write_osim
from arthron.models.muscles import _curve_params, millard_curves
from arthron.solvers.kinematics_analyses import millard_default_state_tensions


def _slider_doc(forces, version=30000, body_extra=""):
    """A 3.x block on a SliderJoint (the Tug_of_War models), ``forces`` in its ForceSet."""
    return f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="{version}"><Model name="tug">
<gravity> 0 -9.80665 0</gravity>
<BodySet><objects>
<Body name="ground"><mass>0</mass><mass_center> 0 0 0</mass_center><inertia_xx>0</inertia_xx>
<inertia_yy>0</inertia_yy><inertia_zz>0</inertia_zz><inertia_xy>0</inertia_xy><inertia_xz>0</inertia_xz>
<inertia_yz>0</inertia_yz><Joint /></Body>
<Body name="block"><mass>20</mass><mass_center> 0 0 0</mass_center>
<inertia_xx>0.1333</inertia_xx><inertia_yy>0.1333</inertia_yy><inertia_zz>0.1333</inertia_zz>
<inertia_xy>0</inertia_xy><inertia_xz>0</inertia_xz><inertia_yz>0</inertia_yz>
<Joint><SliderJoint name="ground_block"><parent_body>ground</parent_body>
<location_in_parent>0 0 0</location_in_parent><orientation_in_parent>0 -1.5707963267949 0</orientation_in_parent>
<location>0 -0.05 0</location><orientation>0 -1.5707963267949 0</orientation>
<CoordinateSet><objects><Coordinate name="block_tz"><motion_type>translational</motion_type>
<default_value>0</default_value><range>-0.3 0.3</range><clamped>true</clamped></Coordinate></objects></CoordinateSet>
</SliderJoint></Joint>{body_extra}</Body>
</objects></BodySet>
<ForceSet><objects>{forces}</objects></ForceSet>
</Model></OpenSimDocument>"""


def _millard(name, side, fiber_curve, tendon_curve):
    return f"""<Millard2012EquilibriumMuscle name="{name}"><isDisabled>false</isDisabled>
<GeometryPath><PathPointSet><objects>
<PathPoint name="{name}-1"><location> 0 0.05 {side * 0.35}</location><body>ground</body></PathPoint>
<PathPoint name="{name}-2"><location> 0 0 {side * 0.05}</location><body>block</body></PathPoint>
</objects></PathPointSet></GeometryPath>
<max_isometric_force>1000</max_isometric_force><optimal_fiber_length>0.1</optimal_fiber_length>
<tendon_slack_length>0.2</tendon_slack_length><pennation_angle_at_optimal>0</pennation_angle_at_optimal>
<default_activation>1</default_activation><default_fiber_length>0.1</default_fiber_length>
<FiberForceLengthCurve>{fiber_curve}</FiberForceLengthCurve>
<TendonForceLengthCurve>{tendon_curve}</TendonForceLengthCurve>
</Millard2012EquilibriumMuscle>"""


# the optional properties written empty, as Tug_of_War_Millard.osim has them
_EMPTY_FIBER = ("<strain_at_zero_force>0</strain_at_zero_force><strain_at_one_norm_force>0.6"
                "</strain_at_one_norm_force><stiffness_at_one_norm_force></stiffness_at_one_norm_force>"
                "<curviness></curviness>")
_EMPTY_TENDON = ("<strain_at_one_norm_force>0.049</strain_at_one_norm_force>"
                 "<stiffness_at_one_norm_force></stiffness_at_one_norm_force>"
                 "<norm_force_at_toe_end></norm_force_at_toe_end><curviness> </curviness>")
# one given: arthron must use it, as OpenSim does
_GIVEN_FIBER = ("<strain_at_zero_force>0.05</strain_at_zero_force><strain_at_one_norm_force>0.5"
                "</strain_at_one_norm_force><stiffness_at_low_force>0.3</stiffness_at_low_force>"
                "<stiffness_at_one_norm_force>3.5</stiffness_at_one_norm_force><curviness>0.4</curviness>")


@needs_opensim
def test_muscle_curves_with_empty_optional_properties_like_opensim(tmp_path):
    """Tug_of_War_Millard.osim writes the optional properties of its Millard curves empty
    (``<curviness></curviness>``); OpenSim 4.6 takes them as unset and computes its defaults,
    arthron refused the file ('needs 1 number, has 0'). Now unset too: the fibre and tendon
    force-length curves equal OpenSim's (calcValue) on a grid of lengths, on the file and on
    arthron's rewrite of it, which OpenSim loads."""
    src = tmp_path / "tug.osim"
    src.write_text(_slider_doc(_millard("RightMuscle", -1, _EMPTY_FIBER, _EMPTY_TENDON)
                               + _millard("LeftMuscle", 1, _GIVEN_FIBER, _EMPTY_TENDON)))
    out = write_osim(tmp_path / "rewritten.osim", read_osim(src))
    x = np.linspace(0.9, 1.8, 37)
    xt = np.linspace(0.99, 1.08, 37)
    import opensim as osim
    for path in (src, out):
        model = read_osim(path)
        m, s = oracle.load(path)
        for name in ("RightMuscle", "LeftMuscle"):
            ours = millard_curves(model, name)[1].value(x)
            mus = osim.Millard2012EquilibriumMuscle.safeDownCast(m.getForceSet().get(name))
            fc = mus.getFiberForceLengthCurve()
            ref = np.array([fc.calcValue(float(v)) for v in x])
            np.testing.assert_allclose(ours, ref, atol=1e-9, rtol=0)
            assert ref.max() > 0.5                            # the curve is exercised
            # the tendon curve (kept verbatim) as the AnalyzeTool's default-state tension uses
            # it: elastic tendon at default_fiber_length 0.1 m, no pennation
            tc = mus.getTendonForceLengthCurve()
            L = 0.1 + 0.2 * xt
            got = millard_default_state_tensions([model.forces[name]], L[:, None], np.zeros((len(L), 1)))
            ref = 1000.0 * np.array([tc.calcValue(float(v)) for v in xt])
            np.testing.assert_allclose(got[:, 0], ref, atol=1e-6, rtol=1e-12)
            assert ref.max() > 500
        assert _curve_params(model.forces["RightMuscle"], "FiberForceLengthCurve")["curviness"] is None
        assert _curve_params(model.forces["LeftMuscle"], "FiberForceLengthCurve")["curviness"] == 0.4


def test_info_counts_meshes_of_offset_frames_and_warns_once(tmp_path, capsys):
    """``arthron info`` on double_pendulum.osim counted the meshes of the bodies only (2 of 4:
    the rods' cylinders hang on body-owned PhysicalOffsetFrames) and warned once per file with
    the model's folder ('.') instead of its name. Now every displayed mesh, as ``show`` draws
    them, and one warning naming the model file and the missing files."""
    mesh = ("<attached_geometry><Mesh name='{n}'><socket_frame>..</socket_frame>"
            "<scale_factors>0.1 0.1 0.1</scale_factors><mesh_file>{f}</mesh_file></Mesh></attached_geometry>")
    body = ("<Body name='rod1'><components><PhysicalOffsetFrame name='rod1_geom_frame_1'>"
            + mesh.format(n="rod1_geom_1", f="cylinder.obj")
            + "<socket_parent>..</socket_parent><translation>0 0.25 0</translation>"
            "<orientation>0 0 0</orientation></PhysicalOffsetFrame></components>"
            + mesh.format(n="rod1_geom_2", f="sphere.obj")
            + "<mass>1</mass><mass_center>0 0 0</mass_center><inertia>0 0 0 0 0 0</inertia></Body>")
    joint = ("<PinJoint name='pin1'><socket_parent_frame>/ground</socket_parent_frame>"
             "<socket_child_frame>/bodyset/rod1</socket_child_frame><coordinates>"
             "<Coordinate name='q1'><range>-1.57 1.57</range></Coordinate></coordinates></PinJoint>")
    src = tmp_path / "pendulum.osim"
    src.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><Model name="pendulum"><Ground name="ground"/>
<BodySet name="bodyset"><objects>{body}</objects></BodySet>
<JointSet name="jointset"><objects>{joint}</objects></JointSet></Model></OpenSimDocument>""")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert main(["info", str(src)]) == 0
    out = capsys.readouterr().out
    assert "meshes     2 referenced (2 files), 0 files found" in out
    mine = [str(x.message) for x in w if issubclass(x.category, ArthronWarning) and "mesh" in str(x.message)]
    assert len(mine) == 1 and "pendulum.osim" in mine[0]
    assert "cylinder.obj" in mine[0] and "sphere.obj" in mine[0]
    (tmp_path / "Geometry").mkdir()
    (tmp_path / "Geometry" / "cylinder.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    assert main(["info", str(src)]) == 0
    assert "meshes     2 referenced (2 files), 1 files found" in capsys.readouterr().out


def _millard_slider(muscles):
    """The slider with Millard muscles ``{name: (class, side, extra XML)}`` (4 cm thick fibres,
    l_opt 0.1 m, tendon slack 0.2 m: the path sweeps fibres from slack to beyond the active range)."""
    return _slider_doc("".join(
        f"""<{cls} name="{n}"><GeometryPath><PathPointSet><objects>
<PathPoint name="{n}-1"><location> 0 0.05 {side * 0.35}</location><body>ground</body></PathPoint>
<PathPoint name="{n}-2"><location> 0 0 {side * 0.05}</location><body>block</body></PathPoint>
</objects></PathPointSet></GeometryPath><max_isometric_force>1000</max_isometric_force>
<optimal_fiber_length>0.1</optimal_fiber_length><tendon_slack_length>0.2</tendon_slack_length>{extra}</{cls}>"""
        for n, (cls, side, extra) in muscles.items()))


_FV = ("<ForceVelocityCurve><concentric_slope_at_vmax>0.05</concentric_slope_at_vmax>"
       "<eccentric_slope_at_vmax>0.02</eccentric_slope_at_vmax></ForceVelocityCurve>")
_AF = "<ActiveForceLengthCurve><minimum_value>0.05</minimum_value></ActiveForceLengthCurve>"


@needs_opensim
def test_millard_curves_as_opensim_finalizes_them(tmp_path):
    """OpenSim 4.6 adjusts a Millard2012EquilibriumMuscle's curves when it finalizes the muscle:
    with fibre damping (the default 0.1) or a rigid tendon the active force-length minimum and
    the force-velocity slopes at vmax become 0; without damping and with an elastic tendon they
    are raised to 0.1 and half the slopes near vmax. arthron used the file's values (0.1 by
    default): f_L was 0.1 too high outside the plateau for every damped Millard muscle without
    an explicit minimum of 0 (Tug_of_War_Millard.osim gives 0.1, OpenSim uses 0). Now the
    three curves equal OpenSim's (calcValue on a grid) in each case, on the file and on
    arthron's rewrite of it."""
    cases = {"dflt": "", "hill": "<fiber_damping>0</fiber_damping>",
             "hill_own": "<fiber_damping>0</fiber_damping>" + _AF + _FV,
             "rigid": "<fiber_damping>0.0005</fiber_damping><ignore_tendon_compliance>true"
                      "</ignore_tendon_compliance>" + _AF + _FV,
             "damped": "<fiber_damping>0.2</fiber_damping>" + _AF + _FV,
             "hill_small": "<fiber_damping>0.0009</fiber_damping><min_control>0.02</min_control>" + _FV}
    src = tmp_path / "millard.osim"
    src.write_text(_millard_slider({n: ("Millard2012EquilibriumMuscle", 1, x) for n, x in cases.items()}))
    out = write_osim(tmp_path / "rewritten.osim", read_osim(src))
    x = np.linspace(0.3, 2.0, 40)
    v = np.linspace(-1.1, 1.1, 40)
    import opensim as osim
    for path in (src, out):
        model = read_osim(path)
        m, _ = oracle.load(path)
        for n in cases:
            mus = osim.Millard2012EquilibriumMuscle.safeDownCast(m.getForceSet().get(n))
            fl, fp, fv = millard_curves(model, n)
            for ours, ref, grid in ((fl, mus.getActiveForceLengthCurve(), x),
                                    (fp, mus.getFiberForceLengthCurve(), x),
                                    (fv, mus.getForceVelocityCurve(), v)):
                np.testing.assert_allclose(ours.value(grid), [ref.calcValue(float(g)) for g in grid],
                                           atol=1e-12, rtol=0)
    # the cases differ where it matters
    assert millard_curves(model, "dflt")[0].value(np.array([0.3]))[0] == 0.0
    assert millard_curves(model, "hill")[0].value(np.array([0.3]))[0] == pytest.approx(0.1)


@needs_opensim
def test_millard_static_optimization_force_per_activation_like_opensim(tmp_path):
    """OpenSim 4.6's StaticOptimization (use_muscle_physiology) takes a Millard2012
    EquilibriumMuscle's force per activation from ``calcInextensibleTendonActiveFiberForce``,
    which projects the fibre force with the pennation angle of the *normalized* fibre length
    (asin(h / l̃)) and is 0 at or below the minimum fibre length. arthron used
    F_max f_L f_V cos α: 13 % low for the 23° bifemsh_r of Gait10dof18musc, so its activations
    differed by up to 0.02 from OpenSim's. Now equal on a pennated muscle (default and own
    maximum_pennation_angle) and a Millard2012AccelerationMuscle (which projects with
    cos α), over lengths from slack to beyond the active range and speeds of both signs."""
    from arthron.solvers.load_sharing import build_problem
    from arthron.tables import Table
    pen = "<pennation_angle_at_optimal>0.4</pennation_angle_at_optimal>"
    src = tmp_path / "pennated.osim"
    src.write_text(_millard_slider({
        "R": ("Millard2012EquilibriumMuscle", -1, pen),
        "L": ("Millard2012AccelerationMuscle", 1, pen),
        "M": ("Millard2012EquilibriumMuscle", 1, pen + "<maximum_pennation_angle>0.6</maximum_pennation_angle>")}))
    t = np.linspace(0, 2, 81)
    z = 0.29 * np.sin(2 * np.pi * t / 2) + 0.01 * np.sin(6 * np.pi * t)
    motion = Table(name="slide", time=t, labels=["block_tz"], data=z[:, None], in_degrees=False)
    model = read_osim(src)
    prob = build_problem(model, motion, use_muscle_physiology=True)
    m, s = oracle.load(src)
    c = m.getCoordinateSet().get("block_tz")
    names = ["R", "L", "M"]
    ref = np.empty((len(prob.time), 3))
    for k in range(len(prob.time)):
        c.setValue(s, prob.q[k, 0], False)
        c.setSpeedValue(s, prob.qd[k, 0])
        m.realizeVelocity(s)
        ref[k] = [m.getMuscles().get(n).calcInextensibleTendonActiveFiberForce(s, 1.0) for n in names]
    ours = prob.force_per_control[:, [prob.names.index(n) for n in names]]
    np.testing.assert_allclose(ours, ref, atol=1e-8 * ref.max(), rtol=0)
    # exercised: active, zero below the minimum fibre length, the two projections differ
    assert (ref == 0).any() and (ref > 100).any()
    assert np.abs(ref[:, 2] - ref[:, 1]).max() > 1.0


def _leg_with_markers():
    """A planar pelvis, hip, knee and an oblique ankle pin (no range clamping) with twelve
    markers, as Leg6Dof9Musc has them."""
    def pin(name, parent, child, coord, default, ptrans, orient="0 0 0", rng="-3 3"):
        return f"""<PinJoint name="{name}"><socket_parent_frame>{parent}_offset</socket_parent_frame>
<socket_child_frame>{child}_offset</socket_child_frame><coordinates><Coordinate name="{coord}">
<default_value>{default}</default_value><range>{rng}</range></Coordinate></coordinates><frames>
<PhysicalOffsetFrame name="{parent}_offset"><socket_parent>/bodyset/{parent}</socket_parent><translation>{ptrans}</translation><orientation>{orient}</orientation></PhysicalOffsetFrame>
<PhysicalOffsetFrame name="{child}_offset"><socket_parent>/bodyset/{child}</socket_parent><translation>0 0 0</translation><orientation>{orient}</orientation></PhysicalOffsetFrame></frames></PinJoint>"""

    def mk(n, b, loc):
        return f"<Marker name='{n}'><socket_parent_frame>/bodyset/{b}</socket_parent_frame><location>{loc}</location></Marker>"
    planar = """<PlanarJoint name="ground_pelvis"><socket_parent_frame>/ground</socket_parent_frame>
<socket_child_frame>/bodyset/pelvis</socket_child_frame><coordinates>
<Coordinate name="pelvis_tilt"><default_value>0.02</default_value><range>-1.57 1.57</range></Coordinate>
<Coordinate name="pelvis_tx"><default_value>0.06</default_value><range>-1 1</range></Coordinate>
<Coordinate name="pelvis_ty"><default_value>1.06</default_value><range>-1 3</range></Coordinate></coordinates></PlanarJoint>"""
    joints = (planar + pin("hip_r", "pelvis", "femur_r", "hip_flexion_r", -0.175, "-0.074 -0.069 0.087", rng="-2.09 2.09")
              + pin("knee_r", "femur_r", "tibia_r", "knee_angle_r", -0.647, "-0.004 -0.48 0", rng="-2.09 0.17")
              + pin("ankle_r", "tibia_r", "calcn_r", "ankle_angle_r", 0.097, "0 -0.483 0", "0.18 0.11 -0.02",
                    rng="-1.57 1.57"))
    markers = (mk("RASI", "pelvis", "0.002 -0.0015 0.13") + mk("LASI", "pelvis", "0.002 -0.0015 -0.132")
               + mk("SACR", "pelvis", "-0.196 -0.0015 0.01") + mk("THU", "femur_r", "0.0025 -0.275 0.084")
               + mk("THF", "femur_r", "0.061 -0.334 -0.012") + mk("THR", "femur_r", "0.008 -0.396 0.076")
               + mk("SHU", "tibia_r", "-0.033 -0.089 0.072") + mk("SHF", "tibia_r", "0.04 -0.127 0.016")
               + mk("SHR", "tibia_r", "-0.019 -0.175 0.081") + mk("HEE", "calcn_r", "-0.015 0.058 0.003")
               + mk("MID", "calcn_r", "0.127 0.036 0.062") + mk("TOE", "calcn_r", "0.273 0.022 -0.019"))
    bodies = "".join(f"<Body name='{n}'><mass>1</mass><mass_center>0 -0.2 0</mass_center>"
                     "<inertia>0.1 0.01 0.1 0 0 0</inertia></Body>" for n in ("pelvis", "femur_r", "tibia_r", "calcn_r"))
    return f"""<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000"><Model name="leg">
<Ground name="ground"/><BodySet name="bodyset"><objects>{bodies}</objects></BodySet>
<JointSet name="jointset"><objects>{joints}</objects></JointSet>
<MarkerSet name="markerset"><objects>{markers}</objects></MarkerSet></Model></OpenSimDocument>"""


@needs_opensim
def test_ik_keeps_the_turn_opensim_finds(tmp_path):
    """arthron's IK on Leg6Dof9Musc's markers (moved by a motion) returned the ankle at 327°
    for −33° over the whole trial: the first frame's Levenberg–Marquardt steps from the default
    pose crossed a whole turn of an unclamped pin (the same pose, another angle, outside the
    coordinate's range; muscle paths with ConditionalPathPoints on it would differ), where
    OpenSim 4.6's InverseKinematicsTool, started from the same default pose, gave −33°. Now
    every 2π-periodic coordinate (unclamped, uncoupled, a pure rotation angle) is brought to
    the turn nearest the start (then the frame before): on poses whose first frame crossed
    turns before (knee −360°, ankle +360°/+720°) arthron recovers the exact angles; OpenSim's
    tool gives the same poses, on the same turns for two of the three."""
    from arthron.io.trc import write_trc
    from arthron.multibody.kinematics import compile_model, marker_positions
    from arthron.solvers.inverse_kinematics import solve_ik
    from arthron.solvers.marker_placer import place_markers
    from arthron.tables import MarkerTrial
    import opensim as osim
    src = tmp_path / "leg.osim"
    src.write_text(_leg_with_markers())
    model = read_osim(src)
    tree = compile_model(model)
    assert list(tree.coordinate_names) == ["pelvis_tilt", "pelvis_tx", "pelvis_ty", "hip_flexion_r",
                                           "knee_angle_r", "ankle_angle_r"]
    rng = np.random.default_rng(0)
    base = np.array([np.radians(62.78), -0.35, 1.57, np.radians(70.85), np.radians(-25.2), np.radians(-32.68)])
    poses = [base + rng.normal(0, 0.3, 6) * np.array([1, 0.3, 0.3, 1, 1, 1]) for _ in range(40)]
    same_turn = 0
    for k in (27, 29, 35):           # first frames whose solution crossed a turn before the fix
        t = np.linspace(0, 0.04, 5)
        q = poses[k][None, :] + np.outer(t, [0.5, 0.1, -0.1, -0.8, 1.0, 0.7])
        names, P = marker_positions(tree, q)
        trial = MarkerTrial(frames=np.arange(1, 6), time=t, labels=list(names), positions=P,
                            data_rate=100.0, camera_rate=100.0, orig_data_rate=100.0,
                            orig_start_frame=1, orig_num_frames=5)
        ours = solve_ik(model, trial).q
        np.testing.assert_allclose(ours, q, atol=1e-7, rtol=0)
        # the ScaleTool's MarkerPlacer solves the static pose the same way (its ankle came out
        # at 314.6° for −45.4° on Leg6Dof9Musc's scaled markers)
        _, q_static, _ = place_markers(model, trial)
        np.testing.assert_allclose(q_static, q[0], atol=1e-7, rtol=0)
        trc = tmp_path / f"pose{k}.trc"
        write_trc(trc, trial)
        from test_inverse_kinematics import _opensim_ik      # OpenSim's tool, accuracy 1e-9
        _opensim_ik(src, trc, tmp_path, np.inf, list(names), f"pose{k}_ik")
        ref = osim.TimeSeriesTable(str(tmp_path / f"pose{k}_ik.mot"))
        labels = list(ref.getColumnLabels())
        R = ref.getMatrix().to_numpy()[:, [labels.index(n) for n in tree.coordinate_names]]
        R[:, [0, 3, 4, 5]] = np.radians(R[:, [0, 3, 4, 5]])
        # the same pose (OpenSim's own turn follows its optimizer's path: for pose 27 its
        # ankle also comes out a turn away, at 323°, outside the coordinate's range)
        turns = (ours - R) / (2 * np.pi)
        assert np.abs(turns - np.round(turns)).max() < 1e-6
        same_turn += int(np.abs(ours - R).max() < 1e-6)
    assert same_turn >= 2


@needs_opensim
def test_hunt_crossley_sphere_on_sphere_like_opensim(tmp_path):
    """SoccerKickingModel's HuntCrossleyForces put the ball's ContactSphere against the toes'
    spheres; arthron evaluated half-space/sphere pairs only and refused the model in inverse
    dynamics. Now sphere/sphere too (Simbody's Hertz contact with the effective radius
    r₁r₂/(r₁+r₂), the point shifted by the relative stiffness, Hunt–Crossley dissipation and
    friction): a ball on a slider resting on a ground half-space and kicked by a toe sphere on
    a pin, surfaces of different stiffness, dissipation and friction. OpenSim 4.6's
    InverseDynamicsSolver at states in and out of contact equals arthron's, on the file and on
    arthron's rewrite."""
    from test_public_model_elements import assert_id_matches_opensim

    def cp(geoms, k, c, mus, mud, muv):
        return (f"<HuntCrossleyForce::ContactParameters><geometry>{geoms}</geometry><stiffness>{k}</stiffness>"
                f"<dissipation>{c}</dissipation><static_friction>{mus}</static_friction><dynamic_friction>{mud}"
                f"</dynamic_friction><viscous_friction>{muv}</viscous_friction></HuntCrossleyForce::ContactParameters>")
    src = tmp_path / "kick.osim"
    src.write_text(f"""<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000"><Model name="kick">
<gravity>0 -9.80665 0</gravity><Ground name="ground"/><BodySet name="bodyset"><objects>
<Body name="ball"><mass>0.45</mass><mass_center>0 0 0</mass_center><inertia>0.005 0.005 0.005 0 0 0</inertia></Body>
<Body name="toes_r"><mass>0.2</mass><mass_center>0.03 0 0</mass_center><inertia>0.0001 0.0002 0.0001 0 0 0</inertia></Body>
</objects></BodySet><JointSet name="jointset"><objects>
<SliderJoint name="ball_tx"><socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/ball</socket_child_frame>
<coordinates><Coordinate name="ball_x"><default_value>0.2</default_value><range>-1 1</range></Coordinate></coordinates></SliderJoint>
<PinJoint name="toe"><socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/toes_r</socket_child_frame>
<coordinates><Coordinate name="toe_angle"><default_value>0</default_value><range>-3 3</range></Coordinate></coordinates></PinJoint>
</objects></JointSet><ForceSet name="forceset"><objects>
<HuntCrossleyForce name="foot_ball"><HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>
{cp("ball", 1e6, 1.0, 0.8, 0.4, 0.4)}{cp("tip_big_toe_r", 3e6, 0.5, 0.9, 0.6, 0.1)}
</objects></HuntCrossleyForce::ContactParametersSet><transition_velocity>0.2</transition_velocity></HuntCrossleyForce>
<HuntCrossleyForce name="ball_ground"><HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>
{cp("ball ground", 5e5, 0.8, 0.7, 0.5, 0.2)}
</objects></HuntCrossleyForce::ContactParametersSet><transition_velocity>0.1</transition_velocity></HuntCrossleyForce>
</objects></ForceSet><ContactGeometrySet name="contactgeometryset"><objects>
<ContactSphere name="ball"><socket_frame>/bodyset/ball</socket_frame><location>0.01 0.01 -0.005</location><orientation>0 0 0</orientation><radius>0.13</radius></ContactSphere>
<ContactSphere name="tip_big_toe_r"><socket_frame>/bodyset/toes_r</socket_frame><location>0.07 0 0</location><orientation>0 0 0</orientation><radius>0.04</radius></ContactSphere>
<ContactHalfSpace name="ground"><socket_frame>/ground</socket_frame><location>0 -0.11 0</location><orientation>0 0 -1.5707963267949</orientation></ContactHalfSpace>
</objects></ContactGeometrySet></Model></OpenSimDocument>""")
    rng = np.random.default_rng(3)
    n = 12
    q = np.column_stack([rng.uniform(0.12, 0.3, n), rng.uniform(-1.0, 1.0, n)])
    qd, qdd = rng.uniform(-2, 2, q.shape), rng.uniform(-3, 3, q.shape)
    for path in (src, write_osim(tmp_path / "rewritten.osim", read_osim(src))):
        _, app = assert_id_matches_opensim(path, q, qd, qdd)
    # both contacts matter: the toe on the ball at some states (tens of N), never at others
    dist = np.hypot(q[:, 0] + 0.01 - 0.07 * np.cos(q[:, 1]), 0.01 - 0.07 * np.sin(q[:, 1]))
    assert (dist < 0.17).sum() >= 3 and (dist > 0.17).sum() >= 3
    assert np.abs(app[:, 1]).max() > 10.0
    # the ball presses 1 cm into the ground half-space: friction along the slider every frame
    off = dist > 0.17
    assert np.all(np.abs(app[off, 0]) > 0.1)


@needs_opensim
def test_defaults_blocks_like_opensim(tmp_path):
    """A ``<defaults>`` block (gait2354_CMC_Actuators.xml has one: its default
    CoordinateActuator has optimal_force 1000) gives its properties to every element of its
    class that omits them, in OpenSim 4.6; arthron ignored it (an actuator without its own
    optimal_force got 1, not 1000). Now applied, in force set files and in models: the
    optimal forces equal OpenSim's, and a model's CoordinateLimitForce that takes its limits
    and stiffness from the model's defaults gives OpenSim's generalized forces. (OpenSim keeps
    the changed defaults for the rest of the process: they are put back at the end.)"""
    import opensim as osim
    from test_public_model_elements import _opensim_id
    from arthron.io.osim import read_force_set
    from arthron.multibody.forces import applied_generalized_forces
    from arthron.multibody.kinematics import compile_model
    from arthron.solvers.inverse_dynamics import inverse_dynamics

    def doc(body):
        return f'<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000">{body}</OpenSimDocument>'
    acts = tmp_path / "acts.xml"
    acts.write_text(doc("""<ForceSet name="acts"><defaults><CoordinateActuator name="default">
<optimal_force>1000</optimal_force></CoordinateActuator></defaults><objects>
<CoordinateActuator name="a"><coordinate>block_tz</coordinate></CoordinateActuator>
<CoordinateActuator name="b"><coordinate>block_tz</coordinate><optimal_force>5</optimal_force></CoordinateActuator>
</objects></ForceSet>"""))
    limit = """<defaults><CoordinateLimitForce name="default"><upper_stiffness>30</upper_stiffness>
<upper_limit>5</upper_limit><lower_stiffness>20</lower_stiffness><lower_limit>-0.1</lower_limit>
<damping>0.5</damping><transition>0.01</transition></CoordinateLimitForce></defaults>"""
    model_doc = _slider_doc("""<CoordinateLimitForce name="stop"><coordinate>block_tz</coordinate>
<upper_limit>0.1</upper_limit></CoordinateLimitForce>""", version=40000).replace(
        '<Model name="tug">', '<Model name="tug">' + limit)
    src = tmp_path / "limited.osim"
    src.write_text(model_doc.replace('OpenSimDocument Version="40000"', 'OpenSimDocument Version="30000"'))
    with oracle.opensim_defaults_kept(tmp_path) as keep:
        ours = {f.name: f.optimal_force for f in read_force_set(acts)}
        fs = osim.ForceSet(str(acts))
        ref = {fs.get(i).getName(): osim.CoordinateActuator.safeDownCast(fs.get(i)).getOptimalForce()
               for i in range(fs.getSize())}
        assert ours == ref == {"a": 1000.0, "b": 5.0}
        model = read_osim(src)
        tree = compile_model(model)
        q = np.linspace(-0.25, 0.25, 9)[:, None]          # beyond the ±0.1 m limits (translational)
        qd = np.linspace(-1, 1, 9)[:, None]
        qdd = np.zeros_like(q)
        app, not_applied = applied_generalized_forces(model, tree, q, qd)
        assert not_applied == []
        m, s = oracle.load(src)
        ref_id = _opensim_id(m, s, tree.coordinate_names, q, qd, qdd)
        np.testing.assert_allclose(inverse_dynamics(tree, q, qd, qdd) - app, ref_id, atol=1e-9, rtol=1e-12)
        assert np.abs(app).max() > 1.0                    # the limits (from the defaults) act
    assert osim.CoordinateActuator().getOptimalForce() == keep["CoordinateActuator"]["optimal_force"]
    assert osim.CoordinateLimitForce().get_upper_stiffness() == keep["CoordinateLimitForce"]["upper_stiffness"]


# ---------------------------------------------------------------- osim-rl models (PyPI osim-rl)
def _body3(name, parent, joint_xml):
    return f"""<Body name="{name}"><mass>2</mass><mass_center>0 0.1 0</mass_center>
<inertia_xx>0.1</inertia_xx><inertia_yy>0.05</inertia_yy><inertia_zz>0.1</inertia_zz>
<inertia_xy>0</inertia_xy><inertia_xz>0</inertia_xz><inertia_yz>0</inertia_yz>
<Joint>{joint_xml.format(parent=parent)}</Joint></Body>"""


_PIN3 = """<PinJoint name="back"><parent_body>{parent}</parent_body>
<location_in_parent>0 0.9 0</location_in_parent><orientation_in_parent>0 0 0</orientation_in_parent>
<location>0 0 0</location><orientation>0 0 0</orientation>
<CoordinateSet><objects><Coordinate name="lumbar"><motion_type>rotational</motion_type>
<default_value>0.3</default_value><range>-1 1</range></Coordinate></objects></CoordinateSet></PinJoint>"""
_WELD3 = """<WeldJoint name="back"><parent_body>{parent}</parent_body>
<location_in_parent>0.05 0.4 0</location_in_parent><orientation_in_parent>0 0 0.2</orientation_in_parent>
<location>0 -0.1 0</location><orientation>0 0 0</orientation></WeldJoint>"""


def _doc3(bodies):
    return f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="30000"><Model name="m"><gravity>0 -9.80665 0</gravity>
<BodySet><objects><Body name="ground"><mass>0</mass><mass_center>0 0 0</mass_center>
<inertia_xx>0</inertia_xx><inertia_yy>0</inertia_yy><inertia_zz>0</inertia_zz><inertia_xy>0</inertia_xy>
<inertia_xz>0</inertia_xz><inertia_yz>0</inertia_yz><Joint /></Body>{bodies}</objects></BodySet>
</Model></OpenSimDocument>"""


def _poses_match(model_path, q):
    """Body poses of arthron and OpenSim 4.6 at coordinate values q (dict); max error."""
    from arthron.multibody.kinematics import compile_model, forward_kinematics
    model = read_osim(model_path)
    tree = compile_model(model)
    m, s = oracle.load(model_path)
    oracle.set_coordinates(m, s, q)
    kin = forward_kinematics(tree, np.array([[q[c] for c in tree.coordinate_names]]))
    Rb, ob = kin.body_R(tree), kin.body_origin(tree)
    ref = oracle.body_poses(m, s)
    assert sorted(ref) == sorted(tree.body_names)
    return max(max(np.abs(Rb[0, i] - ref[b][0]).max(), np.abs(ob[0, i] - ref[b][1]).max())
               for i, b in enumerate(tree.body_names))


@needs_opensim
def test_repeated_3x_joint_names_renamed_as_opensim(tmp_path):
    """gait9dof18musc_pros_20180507.osim (osim-rl) has two 3.x joints named 'back' (torso's
    PinJoint, head's WeldJoint). OpenSim 4.6 renames the second 'back_0'; arthron kept one
    joint per name, so the torso had no joint and compile_model refused the model ('joints not
    connected to ground: back'). Now renamed as OpenSim does, with a warning naming the file,
    the joint and its line; poses equal OpenSim's on the file and on arthron's rewrite."""
    src = tmp_path / "pros.osim"
    src.write_text(_doc3(_body3("torso", "ground", _PIN3) + _body3("head", "torso", _WELD3)))
    with pytest.warns(ArthronWarning, match=r"pros\.osim: joint names repeated.*'back' \(child body "
                      r"'head', line \d+\) -> 'back_0'"):
        model = read_osim(src)
    assert list(model.joints) == ["back", "back_0"]
    import opensim as osim
    m, _ = oracle.load(src)
    js = m.getJointSet()
    assert [js.get(i).getName() for i in range(js.getSize())] == ["back", "back_0"]
    assert osim.WeldJoint.safeDownCast(js.get("back_0")) is not None
    out = write_osim(tmp_path / "rewritten.osim", model)
    for path in (src, out):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ArthronWarning)
            assert _poses_match(path, {"lumbar": 0.7}) < 1e-14


_COMMENTED_V4 = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><Model name="m"><Ground name="ground"/>
<BodySet name="bodyset"><objects><Body name="arm"><mass>1</mass><mass_center>0 -0.2 0</mass_center>
<inertia>0.01 0.01 0.01 0 0 0</inertia></Body></objects></BodySet>
<JointSet name="jointset"><objects><PinJoint name="shoulder">
<socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/arm</socket_child_frame>
<coordinates><Coordinate name="q"><range>-2 2</range></Coordinate></coordinates></PinJoint></objects></JointSet>
<!--
<!--Markers in the model.-->
<MarkerSet name="markerset"><objects><Marker name="hand"><socket_parent_frame>/bodyset/arm</socket_parent_frame>
<location>0 -0.4 0.1</location></Marker></objects></MarkerSet>
</Model></OpenSimDocument>"""


@needs_opensim
def test_comment_holding_double_hyphen_read_as_opensim(tmp_path):
    """ue_RL.osim (osim-rl) comments a block out with an unclosed '<!--' before the next
    comment, so a comment holds '--': not well-formed XML 1.0, and arthron refused the file
    ('malformed XML: Double hyphen within comment'). OpenSim 4.6 reads it, the comment ending at
    its first '-->'. Now read the same way with a warning naming the file and line: the marker
    after the comment is there, at OpenSim's position."""
    src = tmp_path / "ue.osim"
    src.write_text(_COMMENTED_V4)
    with pytest.warns(ArthronWarning, match=r"ue\.osim: comment\(s\) holding '--' at line\(s\) 9"):
        model = read_osim(src)
    assert list(model.markers) == ["hand"]
    from arthron.multibody.kinematics import compile_model, marker_positions
    tree = compile_model(model)
    names, mk = marker_positions(tree, np.array([[0.8]]))
    m, s = oracle.load(src)
    oracle.set_coordinates(m, s, {"q": 0.8})
    ref = oracle.marker_positions(m, s)
    assert list(ref) == names == ["hand"]
    np.testing.assert_allclose(mk[0, 0], ref["hand"], atol=1e-15)
    # a real syntax error is still refused, with its line
    bad = tmp_path / "bad.osim"
    bad.write_text(_COMMENTED_V4.replace("<location>0 -0.4 0.1</location>", "<location>0 -0.4 0.1</locaton>"))
    from arthron.errors import ModelFileError
    with pytest.raises(ModelFileError, match=r"bad\.osim.*line 11.*malformed XML"):
        read_osim(bad)


_SCHUTTE_ARM = one_muscle_arm("Schutte1993Muscle_Deprecated", 0)


@needs_opensim
def test_schutte_muscle_static_optimization(tmp_path, capsys):
    """MoBL_ARMS_J.osim (osim-rl) has 50 Schutte1993Muscle_Deprecated muscles with
    ``max_contraction_velocity`` 0. arthron's StaticOptimization took Thelen's curves for them
    (their force-length curves are splines in the file): with use_muscle_physiology the force-
    velocity was NaN and ``arthron so`` ended in a scipy traceback ('A_eq must not contain
    values inf, nan'). Now refused with UnsupportedFeature naming the file and the muscle; without
    physiology (F = a F_max) the activations equal OpenSim 4.6's StaticOptimization (one muscle,
    unique solution)."""
    import glob
    import opensim as osim
    from conftest import static_optimization_setup
    from arthron.errors import UnsupportedFeature
    from arthron.io.sto import read_sto
    from arthron.solvers.load_sharing import static_optimization
    model_path = tmp_path / "arm.osim"
    model_path.write_text(_SCHUTTE_ARM)
    t = np.linspace(0, 1, 51)
    q = 0.6 + 0.4 * np.sin(2 * np.pi * t)
    mot = tmp_path / "arm.mot"
    mot.write_text(f"arm\nversion=1\nnRows={len(t)}\nnColumns=2\ninDegrees=no\nendheader\ntime\tflex\n"
                   + "".join(f"{a:.6f}\t{b:.12f}\n" for a, b in zip(t, q)))
    model = read_osim(model_path)
    with pytest.raises(UnsupportedFeature, match=r"arm\.osim.*muscle 'FLEX' \(Schutte1993Muscle_Deprecated\)"):
        static_optimization(model, read_sto(mot), use_muscle_physiology=True)
    setups = {}
    for who in ("osim", "arthron"):
        setups[who] = tmp_path / f"so_{who}.xml"
        setups[who].write_text(static_optimization_setup("arm", model_path, mot, tmp_path / f"res_{who}",
                                                         0.1, 0.9, physiology=False))
    with oracle.opensim_defaults_kept(tmp_path):
        osim.AnalyzeTool(str(setups["osim"])).run()
    assert main(["so", "--setup", str(setups["arthron"])]) == 0
    ref = osim.TimeSeriesTable(glob.glob(str(tmp_path / "res_osim" / "*_activation.sto"))[0])
    got = osim.TimeSeriesTable(glob.glob(str(tmp_path / "res_arthron" / "*_activation.sto"))[0])
    R = ref.getDependentColumn("FLEX").to_numpy()
    A = got.getDependentColumn("FLEX").to_numpy()
    assert len(R) == len(A) > 30 and R.max() > 0.02          # the muscle works
    np.testing.assert_allclose(A, R, atol=1e-6)
    setups["arthron"].write_text(setups["arthron"].read_text().replace(
        "<use_muscle_physiology>false", "<use_muscle_physiology>true"))
    assert main(["so", "--setup", str(setups["arthron"])]) != 0
    assert "muscle 'FLEX' (Schutte1993Muscle_Deprecated)" in capsys.readouterr().err


def _two_sphere_foot():
    return """<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000"><Model name="m">
<Ground name="ground"/><gravity>0 -9.80665 0</gravity>
<BodySet name="bodyset"><objects><Body name="foot"><mass>1</mass><mass_center>0 0 0</mass_center>
<inertia>0.01 0.01 0.01 0 0 0</inertia></Body></objects></BodySet>
<JointSet name="jointset"><objects><PlanarJoint name="p"><socket_parent_frame>/ground</socket_parent_frame>
<socket_child_frame>/bodyset/foot</socket_child_frame>
<coordinates><Coordinate name="rz"/><Coordinate name="tx"/><Coordinate name="ty"/></coordinates></PlanarJoint>
</objects></JointSet>
<ContactGeometrySet name="contactgeometryset"><objects>
<ContactHalfSpace name="floor"><socket_frame>/ground</socket_frame><orientation>0 0 -1.5707963267949</orientation></ContactHalfSpace>
<ContactSphere name="heel"><socket_frame>/bodyset/foot</socket_frame><location>-0.1 0 0</location><radius>0.05</radius></ContactSphere>
<ContactSphere name="toe"><socket_frame>/bodyset/foot</socket_frame><location>0.1 0 0</location><radius>0.05</radius></ContactSphere>
</objects></ContactGeometrySet>
<ForceSet name="forceset"><objects><HuntCrossleyForce name="hc">
<HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects><HuntCrossleyForce::ContactParameters>
<geometry>floor heel toe</geometry><stiffness>600000</stiffness><dissipation>1.5</dissipation>
<static_friction>0.8</static_friction><dynamic_friction>0.8</dynamic_friction><viscous_friction>0</viscous_friction>
</HuntCrossleyForce::ContactParameters></objects></HuntCrossleyForce::ContactParametersSet>
<transition_velocity>0.1</transition_velocity></HuntCrossleyForce></objects></ForceSet>
</Model></OpenSimDocument>"""


@needs_opensim
def test_hunt_crossley_pulling_contact_like_opensim(tmp_path):
    """In inverse dynamics of osim-rl's hop8dof9musc (two HuntCrossleyForces, heel and toe
    spheres on a platform) on a smooth motion, arthron's generalized forces were up to 8e4 N
    off OpenSim's at the frames where one sphere leaves the floor fast enough that
    fH (1 + 1.5 c v) < 0 (a pull) while the other pushes, and arthron warned. OpenSim 4.6
    (Simbody 3.9) ends the force's loop over its contacts at the first pulling one, in the
    contact subsystem's sweep order (the heel, at smaller x, first here): arthron now does the
    same, without a warning, and equals OpenSim in all these states (the rule in detail:
    tests/test_hunt_crossley_order.py)."""
    import opensim as osim
    from arthron.multibody.forces import applied_generalized_forces
    from arthron.multibody.kinematics import compile_model
    src = tmp_path / "foot.osim"
    src.write_text(_two_sphere_foot())
    model = read_osim(src)
    tree = compile_model(model)
    names = list(tree.coordinate_names)

    def opensim_contact(q, qd):
        out = []
        for applies in (True, False):
            m = osim.Model(str(src))
            m.getForceSet().get("hc").set_appliesForce(applies)
            s = m.initSystem()
            for j, c in enumerate(names):
                m.getCoordinateSet().get(c).setValue(s, q[j], False)
                m.getCoordinateSet().get(c).setSpeedValue(s, qd[j])
            m.realizeVelocity(s)
            out.append(osim.InverseDynamicsSolver(m).solve(s, osim.Vector(3, 0.0)).to_numpy())
        return out[1] - out[0]

    q = np.array([0.0, 0.0, 0.03])                      # both spheres 2 cm into the floor
    for qd, applied in (([0.0, 0.0, -0.1], True), ([2.0, 0.3, -0.1], True), ([6.0, 0.0, 0.0], True),
                        ([-6.0, 0.0, 0.0], False)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got, _ = applied_generalized_forces(model, tree, q[None], np.array([qd]), exclude=())
        assert not [x for x in w if issubclass(x.category, ArthronWarning)]
        ref = opensim_contact(q, qd)
        assert (np.abs(ref).max() > 100) == applied          # the heel pulling drops the toe too
        np.testing.assert_allclose(got[0], ref, rtol=1e-12, atol=1e-9)


_TORQUE_PENDULUM = """<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000"><Model name="lumbar">
<gravity>0 -9.80665 0</gravity>
<BodySet name="bodyset"><objects>
<Body name="pelvis"><mass>11</mass><mass_center>0 0.1 0</mass_center><inertia>0.1 0.09 0.06 0 0 0</inertia></Body>
<Body name="torso"><mass>26</mass><mass_center>0 0.3 0</mass_center><inertia>1.4 0.7 1.4 0 0 0</inertia></Body>
</objects></BodySet>
<JointSet name="jointset"><objects>
<PinJoint name="hip"><socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/pelvis</socket_child_frame>
<coordinates><Coordinate name="pelvis_tilt"><range>-1.5 1.5</range></Coordinate></coordinates></PinJoint>
<PinJoint name="back"><socket_parent_frame>pelvis_offset</socket_parent_frame><socket_child_frame>/bodyset/torso</socket_child_frame>
<coordinates><Coordinate name="lumbar_extension"><range>-1.5 1.5</range></Coordinate></coordinates>
<frames><PhysicalOffsetFrame name="pelvis_offset"><socket_parent>/bodyset/pelvis</socket_parent>
<translation>-0.1 0.08 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame></frames></PinJoint>
</objects></JointSet>
<ForceSet name="forceset"><objects>
<CoordinateActuator name="tilt"><coordinate>pelvis_tilt</coordinate><optimal_force>100</optimal_force>
<min_control>-inf</min_control><max_control>inf</max_control></CoordinateActuator>
<CoordinateActuator name="lumbar_ext"><coordinate>lumbar_extension</coordinate><optimal_force>10</optimal_force>
<min_control>-inf</min_control><max_control>inf</max_control></CoordinateActuator>
</objects></ForceSet></Model></OpenSimDocument>"""


@needs_opensim
def test_static_optimization_meets_the_speeds_spline_accelerations_like_opensim(tmp_path):
    """Rajagopal et al. (2016)'s full-body model (Rajagopal2015.osim) with reserves on a 21-frame
    motion: arthron's StaticOptimization activations of the lumbar CoordinateActuator were up to
    6.6 (5 %) off OpenSim 4.6's at the first and last frames, decaying inwards. OpenSim's
    StaticOptimization meets, as target accelerations, the derivative of a quintic GCVSpline
    fitted to the AnalyzeTool's speeds (``StaticOptimizationTarget::computeConstraintVector``),
    not the coordinates' spline's second derivative the InverseDynamicsTool uses; arthron now
    does the same. Two pins with one CoordinateActuator each (activations fixed by the equations,
    no optimizer tolerance in the way): every frame equals OpenSim's to 1e-7 relative, with
    and without a low-pass filter, where the InverseDynamicsTool's torques differ by over 0.5 %."""
    import opensim as osim
    from arthron.io.sto import read_sto
    from arthron.solvers.inverse_dynamics import run_inverse_dynamics
    from arthron.tools.static_optimization_tool import run_static_optimization
    osim.Logger.setLevelString("error")
    model_path = tmp_path / "lumbar.osim"
    model_path.write_text(_TORQUE_PENDULUM)
    t = np.linspace(0, 1, 21)
    q = np.column_stack([40 * np.sin(2 * np.pi * 0.9 * t + 0.3), 30 * np.sin(2 * np.pi * 1.3 * t + 1.1)])
    mot = tmp_path / "motion.mot"
    mot.write_text("motion\nversion=1\nnRows=21\nnColumns=3\ninDegrees=yes\nendheader\n"
                   "time\tpelvis_tilt\tlumbar_extension\n"
                   + "".join(f"{a:.6f}\t{b:.10f}\t{c:.10f}\n" for a, (b, c) in zip(t, q)))
    for lowpass in (-1, 6):
        setup = tmp_path / f"so{lowpass}.xml"
        setup.write_text(f"""<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000">
<AnalyzeTool name="so"><model_file>{model_path}</model_file><results_directory>{tmp_path}/os{lowpass}</results_directory>
<initial_time>0</initial_time><final_time>1</final_time><AnalysisSet name="Analyses"><objects>
<StaticOptimization name="StaticOptimization"><on>true</on><step_interval>1</step_interval>
<use_model_force_set>true</use_model_force_set><activation_exponent>2</activation_exponent>
<use_muscle_physiology>true</use_muscle_physiology><optimizer_convergence_criterion>1e-10</optimizer_convergence_criterion>
<optimizer_max_iterations>200</optimizer_max_iterations></StaticOptimization></objects></AnalysisSet>
<coordinates_file>{mot}</coordinates_file><lowpass_cutoff_frequency_for_coordinates>{lowpass}</lowpass_cutoff_frequency_for_coordinates>
</AnalyzeTool></OpenSimDocument>""")
        osim.AnalyzeTool(str(setup)).run()
        ref = read_sto(tmp_path / f"os{lowpass}" / "so_StaticOptimization_activation.sto")
        res = run_static_optimization(model_path, mot, lowpass_hz=lowpass)
        np.testing.assert_allclose(res.time, ref.time, atol=1e-9, rtol=0)
        ours = res.activations[:, [res.names.index(n) for n in ref.labels]]
        scale = np.abs(ref.data).max(axis=0)
        np.testing.assert_allclose(ours, ref.data, atol=1e-7 * scale.max(), rtol=0)
        # the case matters: the InverseDynamicsTool's accelerations give other torques at the ends
        idr = run_inverse_dynamics(read_osim(model_path), read_sto(mot), lowpass_hz=lowpass)
        tau = np.column_stack([idr.column(f"{c}_moment") for c in ("pelvis_tilt", "lumbar_extension")])
        assert np.abs(tau / [100, 10] - ref.data).max() > 5e-3 * scale.max()


_WELDED_CONDYLES = """<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000"><Model name="condyles">
<gravity>0 -9.80665 0</gravity>
<BodySet name="bodyset"><objects>
<Body name="thigh"><mass>8</mass><mass_center>0 -0.17 0</mass_center><inertia>0.1 0.03 0.1 0 0 0</inertia></Body>
<Body name="sagittal"><mass>0.1</mass><mass_center>0 0 0</mass_center><inertia>0.001 0.001 0.001 0 0 0</inertia></Body>
<Body name="med_cond"><mass>0.1</mass><mass_center>0 0 0</mass_center><inertia>0.001 0.001 0.001 0 0 0</inertia></Body>
<Body name="lat_cond"><mass>0.1</mass><mass_center>0 0 0</mass_center><inertia>0.001 0.001 0.001 0 0 0</inertia></Body>
<Body name="shank"><mass>3.5</mass><mass_center>0 -0.18 0</mass_center><inertia>0.05 0.005 0.05 0 0 0</inertia></Body>
</objects></BodySet>
<JointSet name="jointset"><objects>{joints}</objects></JointSet>
<ConstraintSet name="constraintset"><objects>
<WeldConstraint name="lat_cond_weld"><socket_frame1>lat_cond_offset</socket_frame1><socket_frame2>/bodyset/shank</socket_frame2>
<frames><PhysicalOffsetFrame name="lat_cond_offset"><socket_parent>/bodyset/lat_cond</socket_parent>
<translation>0 -0.03 0.02</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame></frames></WeldConstraint>
</objects></ConstraintSet>
<ForceSet name="forceset"><objects>{muscles}</objects></ForceSet>
<MarkerSet name="markerset"><objects>{markers}</objects></MarkerSet>
</Model></OpenSimDocument>"""


def _pin(name, parent, child, coord, at, rng=(-2.5, 0.5), locked=False, orient="0 0 0"):
    return f"""<PinJoint name="{name}"><socket_parent_frame>{parent}_offset</socket_parent_frame>
<socket_child_frame>{child}_offset</socket_child_frame><coordinates><Coordinate name="{coord}">
<range>{rng[0]} {rng[1]}</range><locked>{str(locked).lower()}</locked></Coordinate></coordinates>
<frames><PhysicalOffsetFrame name="{parent}_offset"><socket_parent>{'/ground' if parent == 'ground' else '/bodyset/' + parent}</socket_parent>
<translation>{at}</translation><orientation>{orient}</orientation></PhysicalOffsetFrame>
<PhysicalOffsetFrame name="{child}_offset"><socket_parent>/bodyset/{child}</socket_parent>
<translation>0 0 0</translation><orientation>{orient}</orientation></PhysicalOffsetFrame></frames></PinJoint>"""


def _condyles_doc():
    """The knee of GPK_v4_016.osim (bioscout's full-body model) in small: the tibial plateau
    welded to the medial condyle, the lateral condyle held to it by a WeldConstraint, both
    condyles on locked ad/abduction pins (a closed loop that holds them still)."""
    joints = (_pin("hip", "ground", "thigh", "hip_flexion", "0 1 0", (-1, 1.5))
              + _pin("knee", "thigh", "sagittal", "knee_angle", "0 -0.4 0")
              + _pin("med_cond_joint", "sagittal", "med_cond", "med_cond_adduction", "0 -0.02 0.02",
                     (-2, 2), True, "0 1.5707963267949 0")
              + _pin("lat_cond_joint", "sagittal", "lat_cond", "lat_cond_adduction", "0 -0.02 -0.02",
                     (-2, 2), True, "0 1.5707963267949 0")
              + """<WeldJoint name="plateau"><socket_parent_frame>med_cond_offset</socket_parent_frame>
<socket_child_frame>shank_offset</socket_child_frame><frames>
<PhysicalOffsetFrame name="med_cond_offset"><socket_parent>/bodyset/med_cond</socket_parent><translation>0 -0.03 -0.02</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
<PhysicalOffsetFrame name="shank_offset"><socket_parent>/bodyset/shank</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
</frames></WeldJoint>""")
    def muscle(name, p1, b1, p2, b2):
        return f"""<Thelen2003Muscle name="{name}"><GeometryPath name="path"><PathPointSet><objects>
<PathPoint name="{name}-P1"><location>{p1}</location><socket_parent_frame>{b1}</socket_parent_frame></PathPoint>
<PathPoint name="{name}-P2"><location>{p2}</location><socket_parent_frame>{b2}</socket_parent_frame></PathPoint>
</objects></PathPointSet></GeometryPath><max_isometric_force>1000</max_isometric_force>
<optimal_fiber_length>0.1</optimal_fiber_length><tendon_slack_length>0.3</tendon_slack_length></Thelen2003Muscle>"""
    muscles = (muscle("vas", "0.03 -0.2 0", "/bodyset/thigh", "0.04 -0.06 0", "/bodyset/shank")
               + muscle("rf", "0.05 1.05 0", "/ground", "0.04 -0.06 0.01", "/bodyset/shank")
               + muscle("bf", "-0.05 0.95 0", "/ground", "-0.03 -0.05 0", "/bodyset/shank"))
    markers = "".join(f"""<Marker name="{n}"><socket_parent_frame>/bodyset/{b}</socket_parent_frame>
<location>{loc}</location></Marker>""" for n, b, loc in (
        ("thigh_front", "thigh", "0.06 -0.2 0"), ("thigh_knee", "thigh", "0.05 -0.38 0.04"),
        ("shank_front", "shank", "0.05 -0.1 0"), ("ankle", "shank", "0 -0.4 0.04"),
        ("shank_back", "shank", "-0.04 -0.2 -0.03")))
    return _WELDED_CONDYLES.format(joints=joints, muscles=muscles, markers=markers)


def _knee_motion(tmp_path, T=21):
    """A hip and knee motion (degrees) over 1 s; the condyles stay at 0."""
    t = np.linspace(0, 1, T)
    q = np.column_stack([20 + 30 * np.sin(2 * np.pi * t), -40 - 35 * np.sin(2 * np.pi * 0.8 * t + 0.5),
                         np.zeros(T), np.zeros(T)])
    mot = tmp_path / "knee.mot"
    mot.write_text(f"knee\nversion=1\nnRows={T}\nnColumns=5\ninDegrees=yes\nendheader\n"
                   "time\thip_flexion\tknee_angle\tmed_cond_adduction\tlat_cond_adduction\n"
                   + "".join(f"{a:.6f}\t" + "\t".join(f"{v:.10f}" for v in row) + "\n" for a, row in zip(t, q)))
    return t, q, mot


@needs_opensim
def test_moment_arms_about_coordinates_a_weld_loop_holds(tmp_path):
    """GPK_v4_016.osim (the bioscout package's full-body model; Full_Body_with_ball.osim and
    Digital_Athlete.osim have the same knee) holds each knee's lateral condyle to the tibial
    plateau with a WeldConstraint, the condyles on locked ad/abduction pins. Two things went
    wrong: the constraint rows of that loop are rounding noise on the free coordinates, and
    arthron's coupling vectors inverted them, so moment arms came out arbitrary (0.08 m for a
    muscle that does not cross the hip); and about the condyles themselves (they cannot move)
    the moment arms were NaN at some frames, rounding noise at others, so ``arthron paths``
    stopped ('data contains NaN'). Now noise rows constrain nothing: moment arms about hip and
    knee equal OpenSim 4.6's computeMomentArm to 1e-12 (on GPK_v4_016, 31 frames: every
    MuscleAnalysis file to its 8 decimals); moment arms about the condyles are NaN at every
    frame (OpenSim writes -nan or noise there), get no file, and one warning names them.
    (OpenSim's AnalyzeTool and IK do not assemble this small model away from its default
    pose, so the command's files are checked against the direct values.)"""
    import opensim as osim
    from arthron.io.sto import read_sto
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.paths import compile_paths, moment_arms
    osim.Logger.setLevelString("error")
    src = tmp_path / "condyles.osim"
    src.write_text(_condyles_doc())
    t, qdeg, mot = _knee_motion(tmp_path)
    # direct: OpenSim's computeMomentArm about every coordinate at the motion's poses
    model = read_osim(src)
    tree = compile_model(model)
    q = np.radians(qdeg)
    R = moment_arms(compile_paths(model, tree), tree, q)
    m, s = oracle.load(src)
    cs = m.getCoordinateSet()
    names = list(tree.coordinate_names)
    for i in range(len(t)):
        for j, c in enumerate(names):
            cs.get(c).setValue(s, q[i, j], False)
        m.realizeVelocity(s)
        for k, f in enumerate(("vas", "rf", "bf")):
            gp = osim.PathActuator.safeDownCast(m.getForceSet().get(f)).getPath()
            for j in (0, 1):
                assert abs(R[i, k, j] - gp.computeMomentArm(s, cs.get(names[j]))) < 1e-12
    assert np.isnan(R[:, :, 2:]).all()
    assert np.abs(R[:, 0, 0]).max() < 1e-12 and np.abs(R[:, :, 1]).max() > 0.05   # vas: knee only
    # the command: the same numbers, no files for the condyles, one warning
    with pytest.warns(ArthronWarning, match="med_cond_adduction, lat_cond_adduction .*cannot move"):
        assert main(["paths", str(src), str(mot), "-o", str(tmp_path / "ours")]) == 0
    ours = sorted(f.name for f in (tmp_path / "ours").iterdir())
    assert ours == ["condyles_MuscleAnalysis_Length.sto", "condyles_MuscleAnalysis_MomentArm_hip_flexion.sto",
                    "condyles_MuscleAnalysis_MomentArm_knee_angle.sto"]
    for j, what in ((0, "MomentArm_hip_flexion"), (1, "MomentArm_knee_angle")):
        a = read_sto(tmp_path / "ours" / f"condyles_MuscleAnalysis_{what}.sto")
        assert a.labels == ["vas", "rf", "bf"]
        np.testing.assert_allclose(a.data, R[:, :, j], atol=1e-8, rtol=0)


def test_ik_holds_a_weld_constraint(tmp_path):
    """``arthron ik`` refused GPK_v4_016.osim ('IK with a weld constraint: only Point,
    ConstantDistance, ...'); OpenSim's IK holds every model constraint exactly, and so does
    arthron now with a WeldConstraint (its six rows). On markers made from a motion of the
    welded-condyles knee the motion comes back to 1e-4° (the TRC's precision) and the weld
    holds to 1e-10. (On
    GPK_v4_016 itself, 31 frames of a random motion: arthron to 1e-4°, OpenSim 4.6's tool to
    0.006°; on this small model OpenSim's tool stays at the default pose.)"""
    from arthron.io.trc import write_trc
    from arthron.io.sto import read_sto
    from arthron.multibody.constraints import compile_constraints
    from arthron.multibody.kinematics import compile_model, marker_positions
    from arthron.tables import MarkerTrial
    src = tmp_path / "condyles.osim"
    src.write_text(_condyles_doc())
    t, qdeg, _ = _knee_motion(tmp_path)
    model = read_osim(src)
    tree = compile_model(model)
    names, P = marker_positions(tree, np.radians(qdeg))
    T = len(t)
    trial = MarkerTrial(frames=np.arange(1, T + 1), time=t, labels=list(names), positions=P,
                        data_rate=20.0, camera_rate=20.0, orig_data_rate=20.0, orig_start_frame=1,
                        orig_num_frames=T, units="mm")
    write_trc(tmp_path / "knee.trc", trial)
    assert main(["ik", str(src), str(tmp_path / "knee.trc"), "-o", str(tmp_path / "ik.mot")]) == 0
    ik = read_sto(tmp_path / "ik.mot")
    got = ik.data[:, [ik.labels.index(c) for c in tree.coordinate_names]]
    np.testing.assert_allclose(got, qdeg, atol=1e-4, rtol=0)        # the TRC's precision
    res = compile_constraints(model, tree).residuals(np.radians(got))
    assert np.abs(res).max() < 1e-10


def test_path_functions_on_a_model_without_paths(tmp_path):
    """Model_Pose2Sim_simple.osim (the pose2sim package's model: no muscles) made
    ``path_lengths`` end in numpy's 'need at least one array to stack'; the path functions now
    return empty arrays there, as moment_arms and lengthening_speeds already did, and ``arthron
    paths`` names the model that has no path."""
    from arthron.errors import ArthronError
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.paths import compile_paths, lengthening_speeds, moment_arms, path_lengths
    src = tmp_path / "lumbar.osim"
    src.write_text(_TORQUE_PENDULUM)
    model = read_osim(src)
    tree = compile_model(model)
    ps = compile_paths(model, tree)
    q = np.zeros((3, tree.nq))
    assert path_lengths(ps, tree, q).shape == (3, 0)
    assert moment_arms(ps, tree, q).shape == (3, 0, 2)
    assert lengthening_speeds(ps, tree, q, q).shape == (3, 0)
    _, _, mot = _knee_motion(tmp_path)
    with pytest.raises(ArthronError, match="no muscle or other force with a path"):
        from arthron.tools.analyze_tool import write_path_analysis
        from arthron.io.sto import read_sto
        write_path_analysis(model, read_sto(mot), tmp_path / "out")


def _axis(name, coord, axis, slope):
    fn = (f"<LinearFunction name='function'><coefficients>{slope} 0</coefficients></LinearFunction>"
          if coord else "<Constant name='function'><value>0</value></Constant>")
    return (f"<TransformAxis name='{name}'><coordinates>{coord}</coordinates><axis>{axis}</axis>"
            f"{fn}</TransformAxis>")


_SPINE = """<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000"><Model name="spine">
<gravity>0 -9.80665 0</gravity>
<BodySet name="bodyset"><objects>
<Body name="pelvis"><mass>11</mass><mass_center>0.02 0.05 0.01</mass_center><inertia>0.1 0.09 0.06 0 0 0</inertia></Body>
<Body name="lumbar"><mass>3</mass><mass_center>0 0.05 0</mass_center><inertia>0.02 0.02 0.02 0 0 0</inertia></Body>
</objects></BodySet>
<JointSet name="jointset"><objects>
<CustomJoint name="ground_pelvis"><socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/pelvis</socket_child_frame>
<coordinates><Coordinate name="tilt"><range>-1 1</range></Coordinate><Coordinate name="slide"><range>-1 1</range></Coordinate>
</coordinates><SpatialTransform>{pelvis}</SpatialTransform></CustomJoint>
<CustomJoint name="L5_S1"><socket_parent_frame>pelvis_offset</socket_parent_frame><socket_child_frame>/bodyset/lumbar</socket_child_frame>
<coordinates><Coordinate name="flex_extension"><range>-1.2 0.45</range></Coordinate></coordinates>
<frames><PhysicalOffsetFrame name="pelvis_offset"><socket_parent>/bodyset/pelvis</socket_parent>
<translation>-0.1 0.08 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame></frames>
<SpatialTransform>{lumbar}</SpatialTransform></CustomJoint>
</objects></JointSet></Model></OpenSimDocument>"""


@needs_opensim
def test_coordinate_motion_types_as_opensim_classifies_them(tmp_path):
    """Full_Body_with_ball.osim and Digital_Athlete.osim (bioscout) drive each lumbar vertebra
    by a fraction of ``flex_extension`` (LinearFunction slope 0.089). OpenSim 4.6 calls such a
    coordinate Coupled (a pure axis needs slope exactly ±1; over the six axes a later pure axis
    wins); arthron called it Rotational, so ``arthron id`` labelled it ``_moment`` where
    OpenSim's InverseDynamicsTool writes ``_force`` (a label mismatch on the whole file) and
    converted it from degrees where OpenSim takes the file's number as radians. Now the motion
    types equal OpenSim's getMotionType, and so do the ``id`` file's labels and values."""
    from arthron.io.sto import read_sto
    pelvis = (_axis("rotation1", "tilt", "0 0 1", 1) + _axis("rotation2", "slide", "1 0 0", 1)
              + _axis("rotation3", "", "0 1 0", 0) + _axis("translation1", "slide", "1 0 0", -1)
              + _axis("translation2", "", "0 1 0", 0) + _axis("translation3", "", "0 0 1", 0))
    lumbar = (_axis("rotation1", "flex_extension", "0 0 1", 0.0889273) + _axis("rotation2", "", "1 0 0", 0)
              + _axis("rotation3", "", "0 1 0", 0) + _axis("translation1", "", "1 0 0", 0)
              + _axis("translation2", "", "0 1 0", 0) + _axis("translation3", "", "0 0 1", 0))
    src = tmp_path / "spine.osim"
    src.write_text(_SPINE.format(pelvis=pelvis, lumbar=lumbar))
    model = read_osim(src)
    m, s = oracle.load(src)
    kinds = {1: "rotational", 2: "translational", 3: "coupled"}
    ref = {c: kinds[m.getCoordinateSet().get(c).getMotionType()] for c in ("tilt", "slide", "flex_extension")}
    assert ref == {"tilt": "rotational", "slide": "translational", "flex_extension": "coupled"}
    assert {c: model.coordinates[c].motion_type for c in ref} == ref
    t = np.linspace(0, 1, 21)
    mot = tmp_path / "spine.mot"
    mot.write_text("spine\nversion=1\nnRows=21\nnColumns=4\ninDegrees=yes\nendheader\ntime\ttilt\tslide\tflex_extension\n"
                   + "".join(f"{a:.6f}\t{20 * np.sin(3 * a):.10f}\t{0.1 * np.cos(2 * a):.10f}\t{0.5 * np.sin(4 * a):.10f}\n"
                             for a in t))
    labels, _, data = oracle.run_id_tool(src, mot, tmp_path, (0, 1))
    assert main(["id", str(src), str(mot), "-o", str(tmp_path / "ours.sto")]) == 0
    ours = read_sto(tmp_path / "ours.sto")
    assert ours.labels == labels == ["tilt_moment", "slide_force", "flex_extension_force"]
    np.testing.assert_allclose(ours.data, data, atol=1e-7, rtol=1e-7)
    assert np.abs(data).max() > 1.0


@needs_opensim
def test_joint_reactions_through_a_weld_loop_the_locks_close(tmp_path):
    """``arthron jr`` on GPK_v4_016 (bioscout) refused ('weld constraint in forward dynamics for
    joint reactions'). The WeldConstraint now enters forward dynamics (its six rows' bias and
    the force and moment of its multipliers), and where the locked condyles make its rows
    redundant the constraint forces are shared among the weld and the locks by the
    minimum-norm multipliers, as Simbody's least-squares solve shares them. On GPK_v4_016
    (21 frames, OpenSim's SO forces) every JointReaction column equals OpenSim's to 6e-10
    relative, the condyle joints included. Here, the welded-condyles knee (no muscles, gravity
    and a hip CoordinateActuator at 0): arthron's forward accelerations and reactions on the
    children in ground equal OpenSim 4.6's (Simbody's udot and
    ``Joint::calcReactionOnChildExpressedInGround``) at the same states."""
    import re
    from arthron.io.sto import read_sto
    from arthron.solvers.reactions import joint_reactions
    src = tmp_path / "condyles.osim"
    src.write_text(re.sub(r"<ForceSet.*?</ForceSet>", "", _condyles_doc(), flags=re.S))
    _, _, mot = _knee_motion(tmp_path)
    model = read_osim(src)
    res = joint_reactions(model, read_sto(mot), accelerations="forward", on="child", in_frame="ground")
    m, s = oracle.load(src)
    cs = m.getCoordinateSet()
    names = list(model.coordinates)
    loop = 0.0
    for i in range(0, len(res.time), 4):
        for j, c in enumerate(names):
            cs.get(c).setValue(s, float(res.q[i, j]), False)
            cs.get(c).setSpeedValue(s, float(res.qd[i, j]))
        m.realizeAcceleration(s)
        udot = s.getUDot().to_numpy()
        np.testing.assert_allclose(res.qdd[i, :2], udot[:2], atol=1e-9, rtol=1e-9)
        for jn in ("hip", "knee", "med_cond_joint", "lat_cond_joint", "plateau"):
            sv = m.getJointSet().get(jn).calcReactionOnChildExpressedInGround(s)
            ref = np.r_[sv.get(1).to_numpy(), sv.get(0).to_numpy()]           # force, moment
            got = np.array([res.data[i, res.labels.index(f"{jn}_on_{m.getJointSet().get(jn).getChildFrame().findBaseFrame().getName()}_in_ground_{k}")]
                            for k in ("fx", "fy", "fz", "mx", "my", "mz")])
            np.testing.assert_allclose(got, ref, atol=1e-8, rtol=1e-9)
            if jn == "lat_cond_joint":
                loop = max(loop, np.abs(ref).max())
    assert loop > 0.01                    # the weld carries load: the split is exercised
