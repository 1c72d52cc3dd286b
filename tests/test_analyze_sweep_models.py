"""Differences from OpenSim 4.6 found by benchmarks/sweep_analyses.py (generated AnalyzeTool
setups with every analysis arthron runs, on every model of the data), each on a small case with
OpenSim 4.6 run in the test."""
from __future__ import annotations

import numpy as np

from conftest import REF, needs_data, needs_opensim

PENDULUM = REF / "task6_pendulum" / "pendulum_off0.osim"

_ANALYSES = """
<Kinematics name="Kinematics"><on>true</on><step_interval>1</step_interval><in_degrees>true</in_degrees><coordinates>all</coordinates></Kinematics>
<MuscleAnalysis name="MuscleAnalysis"><on>true</on><step_interval>1</step_interval><muscle_list>all</muscle_list>
  <moment_arm_coordinate_list>q</moment_arm_coordinate_list><compute_moments>true</compute_moments></MuscleAnalysis>
<JointReaction name="JointReaction"><on>true</on><step_interval>1</step_interval><joint_names>all</joint_names>
  <apply_on_bodies>child</apply_on_bodies><express_in_frame>child</express_in_frame></JointReaction>
"""


def _setup(tmp_path, model, inputs, results, analyses=_ANALYSES):
    from conftest import analyze_tool_setup
    return analyze_tool_setup(tmp_path / f"{results.name}.xml", "sw", model, inputs, results, analyses)


def _run_both(tmp_path, setup):
    """OpenSim's and arthron's result folders (OpenSim's cwd tmp_path, no opensim.log)."""
    import opensim as osim
    from oracle import _cwd, _quiet
    from arthron.tools.analyze_tool import run_analyze
    _quiet(osim)
    with _cwd(tmp_path):
        osim.AnalyzeTool(str(setup)).run()
    run_analyze(setup, results_dir=tmp_path / "ours")
    return tmp_path / "osim", tmp_path / "ours"


def _motion(tmp_path, labels, cols):
    from arthron.io.sto import write_sto
    from arthron.tables import Table
    t = np.linspace(0, 1, 51)
    mot = tmp_path / "motion.mot"
    write_sto(mot, Table(name="m", time=t, labels=labels, data=np.column_stack([c(t) for c in cols]),
                         in_degrees=True))
    return mot


_STATES_REPORTER = ('<StatesReporter name="StatesReporter"><on>true</on><step_interval>1</step_interval>'
                    "</StatesReporter>")


def _arm26_with(tmp_path, name, forces_xml):
    """arm26 (the tutorial's) with ``forces_xml`` appended to its ForceSet, written as ``name``."""
    from conftest import ARM26_TUT
    src = (ARM26_TUT / "InverseKinematics" / "arm26.osim").read_text()
    end = src.rindex("</objects>", 0, src.index("</ForceSet>"))
    model = tmp_path / name
    model.write_text(src[:end] + forces_xml + src[end:])
    return model


def _bra_path() -> str:
    """The GeometryPath element of arm26's BRA, as XML text (for muscles added to the model)."""
    import re
    from conftest import ARM26_TUT
    src = (ARM26_TUT / "InverseKinematics" / "arm26.osim").read_text()
    bra = re.search(r'<(\w+) name="BRA">.*?</\1>', src, re.S).group(0)
    return re.search(r"<GeometryPath.*?</GeometryPath>", bra, re.S).group(0)


def _arm26_motion(tmp_path):
    return _motion(tmp_path, ["r_shoulder_elev", "r_elbow_flex"],
                   [lambda t: 30 + 20 * np.sin(2 * np.pi * t), lambda t: 60 + 30 * np.sin(3 * np.pi * t)])


@needs_data
@needs_opensim
def test_muscle_analysis_on_a_model_without_muscles_as_opensim(tmp_path):
    """A MuscleAnalysis on a model without muscles: OpenSim 4.6 writes its files with the time
    column only and runs the other analyses; arthron refused the whole setup ('no muscle or
    other force with a path to analyse')."""
    from arthron.io.sto import read_sto
    mot = _motion(tmp_path, ["q"], [lambda t: 30 * np.sin(2 * np.pi * t)])
    setup = _setup(tmp_path, PENDULUM, f"<coordinates_file>{mot}</coordinates_file>", tmp_path / "osim")
    theirs, ours = _run_both(tmp_path, setup)
    names = sorted(p.name for p in theirs.glob("*.sto"))
    assert "sw_MuscleAnalysis_Moment_q.sto" in names and len(names) == 24
    assert names == sorted(p.name for p in ours.glob("*.sto"))
    for n in names:
        a, b = read_sto(theirs / n), read_sto(ours / n)
        assert a.labels == b.labels, n
        assert np.abs(a.time - b.time).max() < 1e-9, n
        assert np.abs(a.data - b.data).max(initial=0) < 1e-8 * (1 + np.abs(a.data).max(initial=0)), n


_BUSHING = """<BushingForce name="hip_bushing"><socket_frame1>/bodyset/r_humerus</socket_frame1>
<socket_frame2>/bodyset/r_ulna_radius_hand</socket_frame2><rotational_stiffness>10 10 10</rotational_stiffness>
<translational_stiffness>0 0 0</translational_stiffness><rotational_damping>0.1 0.1 0.1</rotational_damping>
<translational_damping>0 0 0</translational_damping></BushingForce>
"""


@needs_data
@needs_opensim
def test_states_reporter_with_a_bushing_force_as_opensim(tmp_path):
    """OpenSim 4.6 gives every BushingForce a state, ``dissipated_energy`` (0 on a coordinates
    file, the file's value on a states file); arthron's StatesReporter left the column out
    (found on the legacy bouncing_block model)."""
    from arthron.io.sto import read_sto, write_sto
    model = _arm26_with(tmp_path, "arm_bushing.osim", _BUSHING)
    rep = _STATES_REPORTER
    mot = _arm26_motion(tmp_path)
    setup = _setup(tmp_path, model, f"<coordinates_file>{mot}</coordinates_file>", tmp_path / "osim",
                   analyses=rep)
    theirs, ours = _run_both(tmp_path, setup)
    name = "sw_StatesReporter_states.sto"
    a, b = read_sto(theirs / name), read_sto(ours / name)
    assert "/forceset/hip_bushing/dissipated_energy" in a.labels
    assert a.labels == b.labels and np.abs(a.data - b.data).max() < 1e-8
    # a states file with the energy column: OpenSim reports the file's value
    states = read_sto(theirs / name)
    k = states.labels.index("/forceset/hip_bushing/dissipated_energy")
    states.data[:, k] = 0.5 + states.time
    sfile = tmp_path / "states.sto"
    states.source = None
    write_sto(sfile, states)
    setup2 = _setup(tmp_path, model, f"<states_file>{sfile}</states_file>", tmp_path / "osim2", analyses=rep)
    import opensim as osim
    from oracle import _cwd
    from arthron.tools.analyze_tool import run_analyze
    with _cwd(tmp_path):
        osim.AnalyzeTool(str(setup2)).run()
    run_analyze(setup2, results_dir=tmp_path / "ours2")
    a, b = read_sto(tmp_path / "osim2" / name), read_sto(tmp_path / "ours2" / name)
    assert np.allclose(a.data[:, k], 0.5 + a.time, atol=1e-8)
    assert a.labels == b.labels and np.abs(a.data - b.data).max() < 1e-8


@needs_data
@needs_opensim
def test_states_reporter_millard_default_fiber_length_clamped_as_opensim(tmp_path):
    """A Millard2012EquilibriumMuscle whose default fiber length (the class's 0.1 m here) lies
    below its minimum fiber length (0.4441 l_opt, l_opt 0.4 m): OpenSim 4.6 starts the
    fiber_length state at the minimum (0.178 m), arthron's StatesReporter wrote 0.1 (found on
    sart_r of the Lenhart et al. (2015) knee model)."""
    from arthron.io.sto import read_sto
    path = _bra_path()
    long_ = (f'<Millard2012EquilibriumMuscle name="long">{path}<max_isometric_force>100</max_isometric_force>'
             "<optimal_fiber_length>0.4</optimal_fiber_length><tendon_slack_length>0.05</tendon_slack_length>"
             "<pennation_angle_at_optimal>0</pennation_angle_at_optimal></Millard2012EquilibriumMuscle>"
             '<Millard2012EquilibriumMuscle name="short">' + path + "<max_isometric_force>100</max_isometric_force>"
             "<optimal_fiber_length>0.1</optimal_fiber_length><tendon_slack_length>0.1</tendon_slack_length>"
             "<pennation_angle_at_optimal>0.2</pennation_angle_at_optimal></Millard2012EquilibriumMuscle>")
    model = _arm26_with(tmp_path, "arm_millard.osim", long_)
    setup = _setup(tmp_path, model, f"<coordinates_file>{_arm26_motion(tmp_path)}</coordinates_file>",
                   tmp_path / "osim", analyses=_STATES_REPORTER)
    theirs, ours = _run_both(tmp_path, setup)
    name = "sw_StatesReporter_states.sto"
    a, b = read_sto(theirs / name), read_sto(ours / name)
    k = a.labels.index("/forceset/long/fiber_length")
    assert np.allclose(a.data[:, k], 0.4441 * 0.4, atol=1e-6)
    assert np.allclose(a.data[:, a.labels.index("/forceset/short/fiber_length")], 0.1)
    assert a.labels == b.labels and np.abs(a.data - b.data).max() < 1e-8


@needs_data
@needs_opensim
def test_assembly_keeps_clamped_coordinates_in_range_as_opensim():
    """OpenSim 4.6's assembly (AssemblySolver: ``Assembler::restrictQ``) keeps a clamped
    coordinate of a model with constraints within its range; arthron's assembly left the
    Thoracoscapular model's axial_rot (clamped at ±1.5708) where the motion put it. OpenSim's
    restricted optimizer stops short of an active bound (by 2e-5 rad here); arthron holds the
    coordinate at the bound."""
    import opensim as osim
    from conftest import TSM
    from oracle import _quiet
    from arthron.io.osim import read_osim
    from arthron.multibody.constraints import assemble
    from arthron.multibody.kinematics import compile_model
    _quiet(osim)
    m = read_osim(TSM)
    tree = compile_model(m)
    names = list(tree.coordinate_names)
    om = osim.Model(str(TSM))
    s = om.initSystem()
    cs = om.getCoordinateSet()
    rows = []
    for axial, elev in ((1.75, 0.3), (-1.9, 0.6), (1.2, 0.4)):
        q = np.array([m.coordinates[n].default_value for n in names])
        q[names.index("axial_rot")] = axial
        q[names.index("shoulder_elv")] = elev
        q[names.index("scapula_winging")] += 0.05            # off the AC PointConstraint
        for k, n in enumerate(names):
            cs.get(n).setValue(s, q[k], False)
        om.assemble(s)
        rows.append((q, [cs.get(n).getValue(s) for n in names]))
    got = assemble(m, tree, np.array([r[0] for r in rows]))
    want = np.array([r[1] for r in rows])
    k = names.index("axial_rot")
    assert np.all(np.abs(got[:, k]) <= 1.570795 + 1e-12)
    assert np.abs(want[:2, k] - np.sign(want[:2, k]) * 1.570795).max() < 1e-4
    assert np.abs(got - want).max() < 1e-4, np.abs(got - want).max(axis=0)


_COUPLED_ROTATIONS = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
<Model name="hd">
<gravity>0 0 0</gravity>
<BodySet name="bodyset"><objects>
<Body name="b"><mass>2</mass><mass_center>0.1 0.2 0.05</mass_center><inertia>0.3 0.2 0.1 0.01 0.02 0.03</inertia></Body>
</objects></BodySet>
<JointSet name="jointset"><objects>
<CustomJoint name="j"><socket_parent_frame>ground_offset</socket_parent_frame><socket_child_frame>b_offset</socket_child_frame>
<coordinates><Coordinate name="q"><default_value>0</default_value><range>-3 3</range></Coordinate></coordinates>
<frames>
<PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
<PhysicalOffsetFrame name="b_offset"><socket_parent>/bodyset/b</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
</frames>
<SpatialTransform>
<TransformAxis name="rotation1"><coordinates>q</coordinates><axis>0 0 1</axis><LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction></TransformAxis>
<TransformAxis name="rotation2"><coordinates>q</coordinates><axis>1 0 0</axis><LinearFunction name="function"><coefficients>0.5 0</coefficients></LinearFunction></TransformAxis>
<TransformAxis name="rotation3"><coordinates>q</coordinates><axis>0 1 0</axis><LinearFunction name="function"><coefficients>0.8 0</coefficients></LinearFunction></TransformAxis>
<TransformAxis name="translation1"><coordinates/><axis>1 0 0</axis><Constant name="function"><value>0</value></Constant></TransformAxis>
<TransformAxis name="translation2"><coordinates/><axis>0 1 0</axis><Constant name="function"><value>0</value></Constant></TransformAxis>
<TransformAxis name="translation3"><coordinates/><axis>0 0 1</axis><Constant name="function"><value>0</value></Constant></TransformAxis>
</SpatialTransform></CustomJoint>
</objects></JointSet>
</Model></OpenSimDocument>
"""


@needs_opensim
def test_coupled_rotations_accelerations_obey_lagrange(tmp_path):
    """One coordinate turning a CustomJoint's three rotation axes (1, 0.5, 0.8 × q), free
    motion without gravity: Lagrange's equation gives q̈ = −½ m'(q) q̇² / m(q) with m(q) the mass
    matrix, here from OpenSim 4.6 (central differences). arthron's forward accelerations obey it;
    OpenSim 4.6's do not (−0.052 against −1.556 rad/s²): Simbody's FunctionBased mobilizer
    builds HDot with the whole angular velocity where the rotations before each axis belong,
    which the sweep found as 1.6e-5 relative on the Lenhart et al. (2015) model's knee_l (its
    rotations are splines of knee_flex_l). Not copied."""
    import opensim as osim
    from oracle import _quiet
    from arthron.io.osim import read_osim
    from arthron.multibody.forward_dynamics import forward_accelerations
    from arthron.multibody.kinematics import compile_model
    _quiet(osim)
    path = tmp_path / "coupled.osim"
    path.write_text(_COUPLED_ROTATIONS)
    om = osim.Model(str(path))
    s = om.initSystem()
    c = om.getCoordinateSet().get(0)

    def mass(q):
        c.setValue(s, q)
        M = osim.Matrix()
        om.getMatterSubsystem().calcM(s, M)
        return M.get(0, 0)

    tree = compile_model(read_osim(path))
    for q0, qd in ((0.4, 3.0), (-1.1, 2.0), (2.0, -4.0)):
        h = 1e-5
        exact = -0.5 * (mass(q0 + h) - mass(q0 - h)) / (2 * h) * qd ** 2 / mass(q0)
        got = forward_accelerations(tree, np.array([[q0]]), np.array([[qd]]))[0, 0]
        assert abs(got - exact) < 1e-7 * (1 + abs(exact)), (q0, qd, got, exact)


@needs_data
@needs_opensim
def test_states_reporter_with_deprecated_muscles_as_opensim(tmp_path):
    """A model with deprecated muscle classes (Schutte1993Muscle_Deprecated,
    Thelen2003Muscle_Deprecated): OpenSim 4.6's StatesReporter writes their activation and
    fiber_length at 0 (the classes have no default-state properties); arthron skipped the
    StatesReporter (found on DAS4, 164 Schutte1993 muscles)."""
    import warnings
    from arthron.io.sto import read_sto
    path = _bra_path()
    props = ("<max_isometric_force>100</max_isometric_force><optimal_fiber_length>0.1</optimal_fiber_length>"
             "<tendon_slack_length>0.1</tendon_slack_length><pennation_angle_at_optimal>0.1</pennation_angle_at_optimal>")
    extra = "".join(f'<{t} name="{n}">{path}{props}</{t}>' for t, n in (
        ("Schutte1993Muscle_Deprecated", "sch"), ("Thelen2003Muscle_Deprecated", "thd")))
    model = _arm26_with(tmp_path, "arm_deprecated.osim", extra)
    mot = _arm26_motion(tmp_path)
    setup = _setup(tmp_path, model, f"<coordinates_file>{mot}</coordinates_file>", tmp_path / "osim",
                   analyses=_STATES_REPORTER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, ours = _run_both(tmp_path, setup)
    name = "sw_StatesReporter_states.sto"
    a = read_sto(theirs / name)
    assert "/forceset/sch/fiber_length" in a.labels and "/forceset/thd/activation" in a.labels
    b = read_sto(ours / name)
    assert a.labels == b.labels and np.abs(a.data - b.data).max() < 1e-8
    # OpenSim's file as the states file: the deprecated muscles' states at 0, their defaults,
    # are accepted (arthron refused any such column)
    setup2 = _setup(tmp_path, model, f"<states_file>{theirs / name}</states_file>", tmp_path / "osim2",
                    analyses=_STATES_REPORTER)
    from arthron.tools.analyze_tool import run_analyze
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_analyze(setup2, results_dir=tmp_path / "ours2")
    b2 = read_sto(tmp_path / "ours2" / name)
    assert b2.labels == a.labels and np.abs(a.data - b2.data).max() < 1e-8
