"""AnalyzeTool's BodyKinematics, Kinematics and PointKinematics against OpenSim 4.6's AnalyzeTool
run on the same setups (arm26 with its IK motion, the Gait2354 walk with its ground reactions):
same files, same labels, same rows, every column."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from arthron.errors import ArthronWarning, DataFileError
from arthron.io.sto import read_sto
from arthron.tools.analyze_tool import run_analyze

from conftest import ARM26, GAIT2354_SUBJECT, GAIT_PIPE, REF, TSM, needs_data, needs_opensim

ARM_MOT = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"
ARM_SO = REF / "task1_arm26" / "SO_phys" / "arm26_StaticOptimization_force.sto"
GAIT_MOT = GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot"
GAIT_GRF = GAIT_PIPE / "subject01_walk1_grf.xml"

EMPTY_FORCE_SET = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><ForceSet name="none"><objects /><groups /></ForceSet></OpenSimDocument>
"""

BODY = """<BodyKinematics name="{name}"><on>true</on><step_interval>{n}</step_interval>
<in_degrees>{deg}</in_degrees><bodies>{bodies}</bodies>
<express_results_in_body_local_frame>{local}</express_results_in_body_local_frame></BodyKinematics>"""
KIN = """<Kinematics name="{name}"><on>true</on><step_interval>{n}</step_interval>
<in_degrees>{deg}</in_degrees><coordinates>{coords}</coordinates></Kinematics>"""
POINT = """<PointKinematics name="PointKinematics"><on>true</on><step_interval>{n}</step_interval>
<body_name>{body}</body_name><relative_to_body_name>{rel}</relative_to_body_name>
<point_name>{pname}</point_name><point>{point}</point></PointKinematics>"""
JR = """<JointReaction name="JointReaction"><on>true</on><step_interval>1</step_interval>
<forces_file>{forces}</forces_file><joint_names>r_elbow</joint_names>
<apply_on_bodies>child</apply_on_bodies><express_in_frame>child</express_in_frame></JointReaction>"""


def _setup(tmp_path, name, model, motion, analyses, *, t0, t1, lowpass=6, grf=None,
           no_muscles=False) -> object:
    """An AnalyzeTool setup in tmp_path whose results go to tmp_path/osim; ``no_muscles``: the
    model's forces replaced by an empty ForceSet (OpenSim then realizes the accelerations under
    gravity and the external loads alone, as arthron does)."""
    fs = ""
    if no_muscles:
        (tmp_path / "no_forces.xml").write_text(EMPTY_FORCE_SET)
        fs = "<replace_force_set>true</replace_force_set><force_set_files>no_forces.xml</force_set_files>"
    f = tmp_path / f"{name}_setup.xml"
    f.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="{name}">
  <model_file>{model}</model_file>{fs}
  <results_directory>osim</results_directory>
  <initial_time>{t0}</initial_time><final_time>{t1}</final_time>
  <AnalysisSet name="Analyses"><objects>{''.join(analyses)}</objects></AnalysisSet>
  <external_loads_file>{grf or ''}</external_loads_file>
  <coordinates_file>{motion}</coordinates_file>
  <lowpass_cutoff_frequency_for_coordinates>{lowpass}</lowpass_cutoff_frequency_for_coordinates>
</AnalyzeTool></OpenSimDocument>""")
    return f


def _opensim(setup, monkeypatch):
    import opensim
    opensim.Logger.setLevelString("error")
    monkeypatch.chdir(setup.parent)           # opensim.log goes beside the setup
    opensim.AnalyzeTool(str(setup)).run()


def _compare(files, ref_dir, *, accelerations=True, atol=1e-8, rtol=1e-11) -> dict:
    """Every file against OpenSim's of the same name: header name, inDegrees, labels, times;
    values to ``atol`` (default 1e-8: OpenSim writes 8 decimals, 5e-9 of rounding) plus ``rtol``
    of the column's largest value (forward-dynamics accelerations reach 6e6 deg/s² on the
    walk). Returns the worst absolute difference per file."""
    worst = {}
    for f in files:
        ref, got = read_sto(ref_dir / f.name), read_sto(f)
        assert (got.name, got.in_degrees, got.labels) == (ref.name, ref.in_degrees, ref.labels), f.name
        np.testing.assert_allclose(got.time, ref.time, rtol=0, atol=1e-12)
        if not accelerations and ("_acc" in f.name or "_dudt" in f.name):
            continue
        d = np.abs(got.data - ref.data)
        tol = atol + rtol * np.abs(ref.data).max(axis=0)
        assert (d <= tol).all(), (f.name, ref.labels[int(np.argmax((d - tol).max(axis=0)))], d.max())
        worst[f.name] = float(d.max())
    return worst


@needs_data
@needs_opensim
def test_arm26_without_muscles_every_column_as_opensim(tmp_path, monkeypatch):
    """arm26 with its force set replaced by an empty one, IK motion filtered at 6 Hz, every body
    in degrees, the coordinates, a hand point: positions, velocities and (gravity-driven)
    accelerations as OpenSim's to its 8 decimals (measured worst: 5e-9 everywhere, i.e. the
    rounding of OpenSim's file)."""
    setup = _setup(tmp_path, "arm", ARM26, ARM_MOT, [
        BODY.format(name="BodyKinematics", n=1, deg="true", bodies="all", local="false"),
        KIN.format(name="Kinematics", n=1, deg="true", coords="all"),
        POINT.format(n=1, body="r_ulna_radius_hand", rel="ground", pname="hand", point="0.01 -0.3 0.02")],
        t0=0, t1=1, no_muscles=True)
    _opensim(setup, monkeypatch)
    files = run_analyze(setup, results_dir=tmp_path / "arthron")
    names = sorted(f.name for f in files)
    assert names == sorted(p.name for p in (tmp_path / "osim").iterdir())
    assert len(names) == 9 and "arm_BodyKinematics_pos_global.sto" in names
    worst = _compare(files, tmp_path / "osim")
    assert max(worst.values()) < 1e-8
    body = read_sto(tmp_path / "arthron" / "arm_BodyKinematics_pos_global.sto")
    assert body.labels[-3:] == ["center_of_mass_X", "center_of_mass_Y", "center_of_mass_Z"]


@needs_data
@needs_opensim
def test_arm26_options_and_joint_reaction_in_one_setup(tmp_path, monkeypatch):
    """arm26 with its muscles, as a user's setup (BIClong given a default_fiber_length of
    0.12 m): a subset of bodies with the whole-body COM, results in the bodies' frames, radians,
    step_interval 4; a subset of coordinates; a point relative to the humerus; and a
    JointReaction in the same AnalysisSet. Every column as OpenSim's, the accelerations too:
    OpenSim drives them with the muscles' tendon forces at their default, unequilibrated states
    (elbow accelerations of −2.6e5 deg/s²), and so does arthron. Measured worst: 5e-9 (file
    rounding) except dudt, 1.2e-8 deg/s² on 2.6e5."""
    text = ARM26.read_text().replace('<Thelen2003Muscle name="BIClong">',
                                     '<Thelen2003Muscle name="BIClong"><default_fiber_length>0.12'
                                     "</default_fiber_length>", 1)
    assert "0.12</default_fiber_length>" in text
    (tmp_path / "arm26_dfl.osim").write_text(text)
    setup = _setup(tmp_path, "arm", tmp_path / "arm26_dfl.osim", ARM_MOT, [
        BODY.format(name="BK", n=4, deg="false", bodies="r_humerus center_of_mass", local="true"),
        KIN.format(name="Kinematics", n=1, deg="true", coords="r_elbow_flex"),
        POINT.format(n=3, body="r_ulna_radius_hand", rel="r_humerus", pname="wrist", point="0 -0.25 0"),
        JR.format(forces=ARM_SO)], t0=0.1, t1=0.9)
    _opensim(setup, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # every muscle is a Thelen2003Muscle: nothing left out
        files = run_analyze(setup, results_dir=tmp_path / "arthron")
    names = sorted(f.name for f in files)
    assert names == sorted(p.name for p in (tmp_path / "osim").iterdir())
    assert "arm_BK_vel_bodyLocal.sto" in names and "arm_PointKinematics_wrist_acc.sto" in names
    worst = _compare([f for f in files if "Reaction" not in f.name], tmp_path / "osim")
    assert max(worst.values()) < 1e-7
    bk = read_sto(tmp_path / "arthron" / "arm_BK_pos_global.sto")
    assert bk.labels == ["r_humerus_X", "r_humerus_Y", "r_humerus_Z", "r_humerus_Ox", "r_humerus_Oy",
                         "r_humerus_Oz", "center_of_mass_X", "center_of_mass_Y", "center_of_mass_Z"]
    assert len(bk.time) < len(read_sto(tmp_path / "arthron" / "arm_Kinematics_q.sto").time) / 3
    # the JointReaction of the mixed setup is the one a setup with it alone gives
    alone = _setup(tmp_path, "jr", tmp_path / "arm26_dfl.osim", ARM_MOT, [JR.format(forces=ARM_SO)],
                   t0=0.1, t1=0.9)
    (ref,) = run_analyze(alone, results_dir=tmp_path / "alone")
    got = read_sto(tmp_path / "arthron" / "arm_JointReaction_ReactionLoads.sto")
    np.testing.assert_array_equal(got.data, read_sto(ref).data)


@needs_data
@needs_opensim
def test_gait2354_walk_with_ground_reactions_as_opensim(tmp_path, monkeypatch):
    """The Gait2354 walk (subject01_simbody with its 54 muscles, its IK motion filtered at 6 Hz,
    0.6–1.4 s) with its ground reactions: every body, three coordinates every third frame, the
    heel relative to the pelvis. Worst differences: 5e-9 (file rounding) except the
    accelerations, 1.6e-6 deg/s² on body angular accelerations of 6.0e6 deg/s² (3e-13 relative)
    and 2.4e-7 on coordinate accelerations of 8.0e6."""
    setup = _setup(tmp_path, "walk", GAIT2354_SUBJECT, GAIT_MOT, [
        BODY.format(name="BodyKinematics", n=1, deg="true", bodies="all", local="false"),
        KIN.format(name="Kin", n=3, deg="true", coords="pelvis_tx hip_flexion_r knee_angle_r"),
        POINT.format(n=1, body="calcn_r", rel="pelvis", pname="heel", point="0 0.01 -0.005")],
        t0=0.6, t1=1.4, grf=GAIT_GRF)
    _opensim(setup, monkeypatch)
    files = run_analyze(setup, results_dir=tmp_path / "arthron")
    assert sorted(f.name for f in files) == sorted(p.name for p in (tmp_path / "osim").iterdir())
    worst = _compare(files, tmp_path / "osim")
    assert worst["walk_Kin_q.sto"] < 1e-8 and worst["walk_PointKinematics_heel_pos.sto"] < 1e-8
    assert len(read_sto(tmp_path / "arthron" / "walk_Kin_u.sto").time) == 17


@needs_data
@needs_opensim
def test_scapulothoracic_speeds_and_their_derivatives_as_opensim(tmp_path, monkeypatch):
    """The Thoracoscapular shoulder model (an ellipsoid ScapulothoracicJoint, whose speeds are the
    scapula's angular velocity, not the angles' rates; AC and other constraints) on a moving,
    assembled motion, force set replaced: Kinematics' u and dudt of the scapula's coordinates
    are the mobilizer's speeds and their derivatives, u̇ = A q̈ + Ȧ q̇ (1.9e3 deg/s² off if q̈
    were written). Measured worst: 2.4e-7 deg in the angles and 8.3e-8 deg in q (OpenSim
    re-assembles the motion to its own tolerance), 3.6e-5 deg/s² in dudt (2e-9 of 1.6e4)."""
    from arthron.io.osim import read_osim
    from arthron.io.sto import write_sto
    from arthron.multibody.constraints import assemble
    from arthron.multibody.kinematics import compile_model
    from arthron.tables import Table
    model = read_osim(TSM)
    tree = compile_model(model)
    coords = list(model.coordinates.values())
    assert tree.angular_velocity_groups
    t = np.linspace(0, 1, 101)
    amp = np.where([c.motion_type == "rotational" for c in coords], 0.15, 0.005) * [not c.locked for c in coords]
    q = tree.default_q + amp * np.sin(2 * np.pi * t[:, None] * (1 + 0.1 * np.arange(len(coords))))
    write_sto(tmp_path / "tsm_q.mot", Table(name="tsm", time=t, labels=[c.name for c in coords],
                                            data=assemble(model, tree, q), in_degrees=False))
    setup = _setup(tmp_path, "tsm", TSM, tmp_path / "tsm_q.mot", [
        BODY.format(name="BodyKinematics", n=1, deg="true", bodies="scapula humerus", local="false"),
        KIN.format(name="Kinematics", n=1, deg="true", coords="all"),
        POINT.format(n=1, body="humerus", rel="none", pname="elbow", point="0 -0.3 0")],
        t0=0, t1=1, lowpass=-1, no_muscles=True)
    _opensim(setup, monkeypatch)
    files = run_analyze(setup, results_dir=tmp_path / "arthron")
    worst = _compare(files, tmp_path / "osim", atol=5e-7, rtol=1e-8)
    assert worst["tsm_Kinematics_u.sto"] < 1e-8


@needs_data
@pytest.mark.parametrize("analysis,element,bad", [
    (BODY.format(name="BK", n=1, deg="true", bodies="r_humerus femur_r", local="false"), "bodies", "femur_r"),
    (KIN.format(name="K", n=1, deg="true", coords="r_elbow_flex knee_angle_r"), "coordinates", "knee_angle_r"),
    (POINT.format(n=1, body="tibia", rel="none", pname="p", point="0 0 0"), "body_name", "tibia"),
    (POINT.format(n=1, body="r_humerus", rel="pelvis", pname="p", point="0 0 0"), "relative_to_body_name", "pelvis"),
    (POINT.format(n=1, body="r_humerus", rel="none", pname="p", point="0 0"), "point", "0 0"),
])
def test_bad_values_name_the_setup_and_the_element(tmp_path, analysis, element, bad):
    setup = _setup(tmp_path, "arm", ARM26, ARM_MOT,
                   [KIN.format(name="Fine", n=1, deg="true", coords="all"), analysis], t0=0, t1=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ArthronWarning)
        with pytest.raises(DataFileError, match=f"<{element}>.*{bad}") as e:
            run_analyze(setup, results_dir=tmp_path / "out")
    assert str(setup) in str(e.value) and "line " in str(e.value)
    assert not (tmp_path / "out").exists()        # nothing written, not even the valid analysis


@needs_data
def test_cli_analyze_runs_the_kinematics_analyses_and_refuses_bad_ones(tmp_path, capsys):
    """``arthron analyze --setup``: the nine files written and printed; a bad body name is one
    line naming the setup, its line and the element, exit status 2, nothing written."""
    from arthron.cli import main
    good = [BODY.format(name="BodyKinematics", n=1, deg="true", bodies="all", local="false"),
            KIN.format(name="Kinematics", n=1, deg="false", coords="all"),
            POINT.format(n=1, body="r_ulna_radius_hand", rel="none", pname="hand", point="0 -0.3 0")]
    setup = _setup(tmp_path, "arm", ARM26, ARM_MOT, good, t0=0, t1=1)
    assert main(["analyze", "--setup", str(setup), "--output-dir", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert len(list((tmp_path / "a").iterdir())) == 9 and out.count("arm_") == 9
    q = read_sto(tmp_path / "a" / "arm_Kinematics_q.sto")
    assert q.in_degrees is False and q.labels == ["r_shoulder_elev", "r_elbow_flex"]
    bad = _setup(tmp_path, "bad", ARM26, ARM_MOT, [good[0].replace("<bodies>all", "<bodies>r_humerus femur")],
                 t0=0, t1=1)
    assert main(["analyze", "--setup", str(bad), "--output-dir", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0] and "<bodies>" in err[0] and "'femur'" in err[0]
    assert not (tmp_path / "b").exists()


@needs_data
def test_long_trials_in_chunks_of_frames_give_the_same_numbers(monkeypatch):
    """States, body and point kinematics computed in chunks of 7 frames (bounded memory for long
    trials) equal the one-chunk computation bit for bit (on one wrapping route: the process may
    switch from NumPy to the compiled kernels between the two runs, which agree to rounding)."""
    import arthron.solvers.inverse_dynamics as inverse_dynamics
    from arthron.geometry import wrap_kernels
    monkeypatch.setattr(wrap_kernels, "FORCE", False)
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.solvers.kinematics_analyses import analysis_states, body_kinematics, point_kinematics
    model = read_osim(ARM26)
    tree = compile_model(model)
    mot = read_sto(ARM_MOT)

    def run():
        st = analysis_states(model, mot, lowpass_hz=6, tree=tree)
        bk = body_kinematics(tree, st, ["all"], local=True)
        pk = point_kinematics(tree, st, "r_ulna_radius_hand", [0, -0.25, 0], relative_to="r_humerus")
        return [st.qdd, st.udot] + [bk.to_table(k).data for k in ("pos", "vel", "acc")] + \
               [pk.to_table(k).data for k in ("pos", "vel", "acc")]
    whole = run()
    monkeypatch.setattr(inverse_dynamics, "FRAME_CHUNK", 7)
    assert len(inverse_dynamics.frame_chunks(len(mot.time))) > 10
    for a, b in zip(run(), whole):
        np.testing.assert_array_equal(a, b)


@needs_data
@needs_opensim
def test_thoracoscapular_with_its_millard_muscles_as_opensim(tmp_path, monkeypatch):
    """The Thoracoscapular model with its 33 Millard2012EquilibriumMuscles kept (16 with an
    elastic tendon, 17 rigid): OpenSim realizes the accelerations under the muscles' default-
    state forces; arthron applies the same tensions (millard_default_state_tensions), so
    the accelerations follow OpenSim's. Positions and velocities to OpenSim's assembly
    tolerance. Measured worst: 0.10 deg/s² in dudt of 7.5e6 (1.4e-8; 7.5e6 off, i.e. 100 %,
    without the muscles' forces), 3.7e-8 of a column's largest value in the bodies'
    accelerations. The rigid-tendon muscles' force depends on the lengthening speed: with
    −r·q̇ alone (r = OpenSim's computeMomentArm, which leaves out the MovingPathPoints'
    motion of the LatissimusDorsi paths) dudt was 147 deg/s² off."""
    from arthron.io.osim import read_osim
    from arthron.io.sto import write_sto
    from arthron.multibody.constraints import assemble
    from arthron.multibody.kinematics import compile_model
    from arthron.tables import Table
    model = read_osim(TSM)
    tree = compile_model(model)
    coords = list(model.coordinates.values())
    t = np.linspace(0, 0.5, 51)
    amp = np.where([c.motion_type == "rotational" for c in coords], 0.15, 0.005) * [not c.locked for c in coords]
    q = tree.default_q + amp * np.sin(2 * np.pi * t[:, None] * (1 + 0.1 * np.arange(len(coords))))
    mot = tmp_path / "tsm_q.mot"
    write_sto(mot, Table(name="tsm", time=t, labels=[c.name for c in coords],
                         data=assemble(model, tree, q), in_degrees=False))
    setup = _setup(tmp_path, "tsmm", TSM, mot, [
        BODY.format(name="BodyKinematics", n=1, deg="true", bodies="scapula humerus", local="false"),
        KIN.format(name="Kinematics", n=1, deg="true", coords="all")],
        t0=0, t1=0.5, lowpass=-1)
    _opensim(setup, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # every muscle is now applied
        files = run_analyze(setup, results_dir=tmp_path / "arthron")
    _compare(files, tmp_path / "osim", accelerations=False, atol=5e-7, rtol=1e-8)
    worst = _compare([f for f in files if "_acc" in f.name or "_dudt" in f.name], tmp_path / "osim",
                     atol=5e-7, rtol=1e-6)
    assert worst["tsmm_Kinematics_dudt.sto"] < 1.0


@needs_data
@needs_opensim
@pytest.mark.parametrize("ignore_activation_dynamics", [False, True])
def test_millard_default_state_tensions_as_opensim(tmp_path, ignore_activation_dynamics):
    """The tendon forces of the Thoracoscapular model's Millard2012EquilibriumMuscles (elastic
    and rigid tendons) at their default states, at OpenSim's own path lengths and lengthening
    speeds of 6 states (random q and u), against OpenSim's getTendonForce / getActuation.
    Measured worst: 8e-11 N of 1.8e4 N."""
    import opensim
    from arthron.io.osim import read_osim
    from arthron.solvers.kinematics_analyses import millard_default_state_tensions
    opensim.Logger.setLevelString("error")
    text = TSM.read_text()
    if ignore_activation_dynamics:
        text = text.replace("<minimum_activation>", "<ignore_activation_dynamics>true"
                            "</ignore_activation_dynamics><minimum_activation>")
    path = tmp_path / "tsm.osim"
    path.write_text(text)
    mus = list(read_osim(path).muscles.values())
    m = opensim.Model(str(path))
    s = m.initSystem()
    cs, ms = m.getCoordinateSet(), m.getMuscles()
    assert [ms.get(j).getName() for j in range(ms.getSize())] == [x.name for x in mus]
    assert {x.type for x in mus} == {"Millard2012EquilibriumMuscle"}
    rng = np.random.default_rng(0)
    q0 = [cs.get(i).getValue(s) for i in range(cs.getSize())]
    for trial in range(6):
        for i in range(cs.getSize()):
            if not cs.get(i).getLocked(s):
                cs.get(i).setValue(s, q0[i] + (trial > 0) * rng.uniform(-0.3, 0.3), False)
                cs.get(i).setSpeedValue(s, (trial > 0) * rng.uniform(-2, 2))
        m.realizeDynamics(s)
        get = lambda f: np.array([[getattr(ms.get(j), f)(s) for j in range(ms.getSize())]])
        ref = get("getTendonForce")[0]
        np.testing.assert_array_equal(get("getActuation")[0], ref)
        got = millard_default_state_tensions(mus, get("getLength"), get("getLengtheningSpeed"))[0]
        assert (ref > 0).sum() >= 10
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9)
