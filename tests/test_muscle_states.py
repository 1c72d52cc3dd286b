"""Muscle forces at OpenSim's default muscle states (arthron.solvers.muscle_states) for the
DeGrooteFregly2016Muscle and Millard2012AccelerationMuscle classes, against OpenSim 4.6: the
tensions at random states, and the accelerations an AnalyzeTool's BodyKinematics and Kinematics
report (forward dynamics under those forces). No data model uses these classes, so arm26's
Thelen2003Muscles are converted in the test: by OpenSim's own
``DeGrooteFregly2016Muscle.replaceMuscles`` (with some rigid tendons, fiber damping, wider
active curves, no passive force, no activation dynamics), and into
Millard2012AccelerationMuscles (default fiber lengths and velocities varied) through OpenSim's
API."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import oracle
from conftest import ARM26, needs_data, needs_opensim
from test_kinematics_analyses import ARM_MOT, BODY, KIN, _compare, _opensim, _setup


def _degroote_arm26(folder):
    """arm26 with DeGrooteFregly2016Muscles (OpenSim's replaceMuscles), properties varied."""
    import opensim
    opensim.Logger.setLevelString("error")
    m = opensim.Model(str(ARM26))
    opensim.DeGrooteFregly2016Muscle.replaceMuscles(m)
    ms = m.updMuscles()
    for j in range(ms.getSize()):
        d = opensim.DeGrooteFregly2016Muscle.safeDownCast(ms.get(j))
        d.set_default_normalized_tendon_force(0.2 + 0.15 * j)
        if j % 2:
            d.set_ignore_tendon_compliance(True)
            d.set_fiber_damping(0.01 * j)
            d.set_active_force_width_scale(1 + 0.1 * j)
        d.set_ignore_activation_dynamics(j == 3)
        d.set_ignore_passive_fiber_force(j == 5)
    m.finalizeFromProperties()
    path = folder / "arm26_degroote.osim"
    m.printToXML(str(path))
    return path


def arm26_replaced(folder, name, make):
    """arm26 with each Thelen muscle ``th`` (index ``i``) replaced by ``make(opensim, th, i)``, a
    muscle of another class on the same path, written to ``folder / name``."""
    import opensim
    opensim.Logger.setLevelString("error")
    m = opensim.Model(str(ARM26))
    ms = m.getMuscles()
    olds = [ms.get(i) for i in range(ms.getSize())]
    news = []
    for i, th in enumerate(olds):
        a = make(opensim, th, i)
        a.set_path(th.get_path())
        news.append(a)
    fs = m.updForceSet()
    for th in olds:
        fs.remove(fs.getIndex(th.getName()))
    for a in news:
        m.addForce(a)
    m.finalizeConnections()
    path = folder / name
    m.printToXML(str(path))
    return path


def _millard_acceleration_arm26(folder):
    """arm26 with Millard2012AccelerationMuscles of the Thelen muscles' parameters and paths,
    default fiber lengths 0.5..0.75 l_opt, default fiber velocities −0.05..0.15 m/s."""
    def make(opensim, th, i):
        a = opensim.Millard2012AccelerationMuscle(
            th.getName(), th.getMaxIsometricForce(), th.getOptimalFiberLength(),
            th.getTendonSlackLength(), th.getPennationAngleAtOptimalFiberLength())
        a.set_default_fiber_length(th.getOptimalFiberLength() * (0.5 + 0.05 * i))
        a.set_default_fiber_velocity(0.05 * (i - 2) * (i % 2))
        return a
    return arm26_replaced(folder, "arm26_millard_acceleration.osim", make)


CONVERT = {"DeGrooteFregly2016Muscle": _degroote_arm26,
           "Millard2012AccelerationMuscle": _millard_acceleration_arm26}


@needs_data
@needs_opensim
@pytest.mark.parametrize("kind", sorted(CONVERT))
def test_default_state_tensions_as_opensim(tmp_path, kind):
    """The forces arm26's converted muscles apply at their default states, at OpenSim's own
    path lengths and lengthening speeds of 6 states (random q and u), against OpenSim's
    getActuation (what computeActuation applies along the path). Measured worst: DeGroote
    3e-14 N of 350 N (elastic tendons: F_iso × default_normalized_tendon_force; rigid: the fiber
    force along the tendon), Millard acceleration 1.7e-10 N of 1.5e4 N (visco-elastic tendon
    force; OpenSim's getTendonForce reports its elastic part only, 4e3 N less)."""
    import opensim
    from arthron.io.osim import read_osim
    from arthron.solvers.muscle_states import default_state_tensions
    path = CONVERT[kind](tmp_path)
    mus = list(read_osim(path).muscles.values())
    assert {m.type for m in mus} == {kind}
    m = opensim.Model(str(path))
    s = m.initSystem()
    cs, ms = m.getCoordinateSet(), m.getMuscles()
    assert [ms.get(j).getName() for j in range(ms.getSize())] == [x.name for x in mus]
    rng = np.random.default_rng(0)
    q0 = [cs.get(i).getValue(s) for i in range(cs.getSize())]
    for trial in range(6):
        for i in range(cs.getSize()):
            cs.get(i).setValue(s, q0[i] + (trial > 0) * rng.uniform(-0.5, 0.5), False)
            cs.get(i).setSpeedValue(s, (trial > 0) * rng.uniform(-3, 3))
        m.realizeDynamics(s)
        get = lambda f: np.array([[getattr(ms.get(j), f)(s) for j in range(ms.getSize())]])
        ref = get("getActuation")[0]
        got = default_state_tensions(mus, get("getLength"), get("getLengtheningSpeed"))[0]
        assert (np.abs(ref) > 1).sum() >= 4
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12 * np.abs(ref).max() + 1e-12)


@needs_data
@needs_opensim
@pytest.mark.parametrize("kind", sorted(CONVERT))
def test_analyze_accelerations_with_these_muscles_as_opensim(tmp_path, monkeypatch, kind):
    """AnalyzeTool's BodyKinematics (every body and the whole-body COM) and Kinematics on
    arm26's IK motion with the converted muscles: every column as OpenSim's, the accelerations
    too (OpenSim realizes them under the muscles' default-state forces, as arthron now does;
    before, these muscles applied no force, with a warning). Measured worst: 5e-9 (the file's
    rounding) everywhere, except the Millard acceleration muscles' accelerations: 4.5e-8 deg/s²
    of 3.8e5 (1.2e-13 relative)."""
    from arthron.io.sto import read_sto
    from arthron.tools.analyze_tool import run_analyze
    path = CONVERT[kind](tmp_path)
    setup = _setup(tmp_path, "arm", path, ARM_MOT, [
        BODY.format(name="BodyKinematics", n=1, deg="true", bodies="all", local="false"),
        KIN.format(name="Kinematics", n=1, deg="true", coords="all")], t0=0, t1=1)
    _opensim(setup, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # every muscle applies its force
        files = run_analyze(setup, results_dir=tmp_path / "arthron")
    worst = _compare(files, tmp_path / "osim")
    assert max(worst.values()) < 1e-7
    dudt = read_sto(tmp_path / "osim" / "arm_Kinematics_dudt.sto")
    assert np.abs(dudt.data).max() > 1e4       # the muscles' forces drive the arm


JR_ALL = """<JointReaction name="JointReaction"><on>true</on><step_interval>1</step_interval>
<forces_file /><joint_names>ALL</joint_names><apply_on_bodies>child</apply_on_bodies>
<express_in_frame>ground</express_in_frame></JointReaction>"""


@needs_data
@needs_opensim
@pytest.mark.parametrize("kind", ["Thelen2003Muscle"] + sorted(CONVERT) + ["Gait2354"])
def test_joint_reaction_without_forces_file_as_opensim(tmp_path, monkeypatch, kind):
    """A JointReaction without <forces_file>: OpenSim realizes the model with the muscles at
    their default states, so their forces (tendon forces of unequilibrated fibres, 1e4 N and
    more) drive the accelerations and load the joints; arthron now applies the same forces
    (it applied none before, with a warning; it still warns that these are not the forces of
    the motion). arm26 with its Thelen muscles and converted, and the Gait2354 walk with its 54
    Thelen muscles and ground reactions (0.6-0.8 s): every column as OpenSim's. Measured
    worst: 9e-9 N of 2.3e4 N (arm26, Thelen), 5e-9 of 950 (DeGroote), 1.3e-8 of 3.6e4
    (Millard acceleration), 6e-9 of 4.0e5 (the walk): OpenSim's 8 decimals."""
    from arthron.errors import ArthronWarning
    from arthron.io.sto import read_sto
    from arthron.tools.analyze_tool import run_analyze
    from conftest import GAIT2354_SUBJECT
    from test_kinematics_analyses import GAIT_GRF, GAIT_MOT
    if kind == "Gait2354":
        setup = _setup(tmp_path, "walk", GAIT2354_SUBJECT, GAIT_MOT, [JR_ALL], t0=0.6, t1=0.8, grf=GAIT_GRF)
    else:
        model = ARM26 if kind == "Thelen2003Muscle" else CONVERT[kind](tmp_path)
        setup = _setup(tmp_path, "arm", model, ARM_MOT, [JR_ALL], t0=0, t1=1)
    _opensim(setup, monkeypatch)
    with pytest.warns(ArthronWarning, match="without <forces_file>.*default, unequilibrated states"):
        files = run_analyze(setup, results_dir=tmp_path / "arthron")
    ref = read_sto(tmp_path / "osim" / files[0].name)
    got = read_sto(files[0])
    assert got.labels == ref.labels and len(got.time) == len(ref.time)
    err = np.abs(got.data - ref.data).max()
    assert err < 2e-8 and np.abs(ref.data).max() > 500


@needs_data
@needs_opensim
@pytest.mark.parametrize("kind", sorted(CONVERT))
def test_static_optimization_with_these_muscles_as_opensim(tmp_path, kind):
    """StaticOptimization with muscle physiology: the force per activation F̂ of arm26's
    converted muscles equals OpenSim's calcInextensibleTendonActiveFiberForce(s, 1) at random
    states (measured 1e-12 N; DeGroote: the active fiber force along the fiber, as OpenSim's
    class returns it; Millard acceleration: its own curves, an active force-length curve down
    to 0 where the file omits it), and over 0.3 s of the IK trial arthron's activations
    equal OpenSim 4.6's within 1e-2 (measured 3.8e-3 DeGroote, 5.0e-3 Millard acceleration:
    OpenSim's activations meet arthron's equations of motion to 2e-6 N·m and its objective is
    never below arthron's, so the gap is IPOPT's tolerance). The Millard acceleration muscle
    has no minimum activation (OpenSim's activations reach 1.6e-7; with the 0.01 floor of the
    Thelen and Millard equilibrium classes the activations were 0.038 off); DeGroote
    muscles keep their file's min_control."""
    import opensim
    from conftest import REF, static_optimization_setup
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.models.muscles import force_length_velocity, muscle_parameters
    from arthron.solvers.load_sharing import build_problem, solve_problem
    from arthron.tools.static_optimization_tool import control_bounds
    path = CONVERT[kind](tmp_path)
    model = read_osim(path)
    names = list(model.muscles)
    m = opensim.Model(str(path))
    s = m.initSystem()
    cs, ms = m.getCoordinateSet(), m.getMuscles()
    rng = np.random.default_rng(1)
    q0 = [cs.get(i).getValue(s) for i in range(cs.getSize())]
    par = muscle_parameters(model, names)
    for trial in range(4):
        for i in range(cs.getSize()):
            cs.get(i).setValue(s, q0[i] + (trial > 0) * rng.uniform(-0.5, 0.5), False)
            cs.get(i).setSpeedValue(s, (trial > 0) * rng.uniform(-3, 3))
        m.realizeVelocity(s)
        ref = np.array([ms.get(j).calcInextensibleTendonActiveFiberForce(s, 1.0) for j in range(ms.getSize())])
        L = np.array([[ms.get(j).getLength(s) for j in range(ms.getSize())]])
        V = np.array([[ms.get(j).getLengtheningSpeed(s) for j in range(ms.getSize())]])
        fl, _, fv, ca = force_length_velocity(par, L, V)
        np.testing.assert_allclose((par.max_isometric_force * fl * fv * ca)[0], ref, rtol=0, atol=1e-9)
    ik = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"
    setup = tmp_path / "so.xml"
    setup.write_text(static_optimization_setup("so", path, ik, tmp_path / "osim", 0.0, 0.3,
                                               physiology=True))
    with oracle._cwd(tmp_path):
        opensim.AnalyzeTool(str(setup)).run()
    ref = read_sto(tmp_path / "osim" / "so_StaticOptimization_activation.sto")
    prob = build_problem(model, read_sto(ik), lowpass_hz=6, time_range=(0.0, 0.3),
                         use_muscle_physiology=True, controls=control_bounds(model))
    res = solve_problem(prob)
    a = ref.data[:, [ref.labels.index(n) for n in res.names]]
    assert len(res.time) == len(ref.time) >= 30
    assert np.abs(np.einsum("tqn,tn->tq", prob.B, a) - prob.tau).max() < 1e-5
    assert np.all(res.objective <= (a ** 2).sum(axis=1) + 1e-12)
    assert np.abs(res.activations - a).max() < 1e-2 and a.max() > 0.1


@needs_data
@needs_opensim
@pytest.mark.parametrize("kind", ["Thelen2003Muscle"] + sorted(CONVERT))
def test_inverse_dynamics_with_muscles_not_excluded_as_opensim(tmp_path, kind):
    """OpenSim's InverseDynamicsTool with an empty forces_to_exclude applies the muscles at
    their default states (780 N·m at arm26's shoulder); arthron now does too (it left them out
    with a warning before: 780 N·m off). arm26's IK motion at 6 Hz, its Thelen muscles and
    converted: every column as OpenSim's, no warning. Measured worst: 5e-9 N·m (the file's
    rounding)."""
    import opensim
    model = ARM26 if kind == "Thelen2003Muscle" else CONVERT[kind](tmp_path)
    opensim.Logger.setLevelString("error")
    got, ref = oracle.inverse_dynamics_with_muscles(model, ARM_MOT, tmp_path / "osim", oracle._cwd(tmp_path))
    assert got.labels == ref.labels and len(got.time) == len(ref.time)
    assert np.abs(got.generalized_forces - ref.data).max() < 1e-8 and np.abs(ref.data).max() > 5


@needs_data
def test_jr_without_forces_warns_that_the_muscles_pull_at_their_default_states(tmp_path):
    """``arthron jr MODEL MOTION --accelerations forward`` without --forces: one warning that
    the muscles pull with their default-state forces (not the motion's), and the reactions are
    those forces' (arm26's elbow: thousands of N); with the motion's accelerations, no warning."""
    from arthron.errors import ArthronWarning
    from arthron.tools.analyze_tool import run_joint_reaction
    with pytest.warns(ArthronWarning, match="default, unequilibrated states") as rec:
        res = run_joint_reaction(ARM26, ARM_MOT, joints=["r_elbow"], accelerations="forward",
                                 lowpass_hz=6)
    assert len(rec) == 1
    assert np.abs(res.data).max() > 1e3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_joint_reaction(ARM26, ARM_MOT, joints=["r_elbow"], accelerations="motion", lowpass_hz=6)


def test_other_muscle_classes_are_refused_by_name():
    """default_state_tensions names a muscle whose class it does not reproduce."""
    from arthron.errors import UnsupportedFeature
    from arthron.models.forces import DeGrooteFregly2016Muscle, Muscle
    from arthron.solvers.muscle_states import default_state_tensions
    ok = DeGrooteFregly2016Muscle(name="dg", max_isometric_force=300.0)
    np.testing.assert_array_equal(default_state_tensions([ok], [[0.3], [0.5]]), [[150.0], [150.0]])
    # (RigidTendonMuscle, then the deprecated classes, were the example until their
    # default-state forces were reproduced; every class arthron types now is)
    with pytest.raises(UnsupportedFeature, match="'pm' \\(PluginMuscle\\)"):
        default_state_tensions([ok, Muscle(name="pm", type="PluginMuscle")], [[0.3, 0.3]])


@needs_data
def test_path_loads_built_once_and_shared_within_the_context():
    """DefaultStateMuscles.path_loads (poses and paths built once for the lengths, speeds and
    forces) equals the loads of :meth:`tensions` bit for bit; inside ``shared_muscle_loads``
    a second DefaultStateMuscles of the same muscles at the same q, qd and states gets the
    same (read-only) result without recomputing, and other states or speeds are not mixed up."""
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.solvers.actuators import path_loads
    from arthron.solvers.muscle_states import default_state_muscles, shared_muscle_loads
    from test_analyze_states_file import GAIT10
    model = read_osim(GAIT10)
    tree = compile_model(model)
    rng = np.random.default_rng(2)
    T = 40
    q = np.array([c.default_value for c in model.coordinates.values()]) + 0.2 * rng.standard_normal((T, tree.nq))
    qd = rng.standard_normal((T, tree.nq))
    states = {m: {"fiber_length": float(model.muscles[m].optimal_fiber_length) * rng.uniform(0.7, 1.3, T)}
              for m in model.muscles}
    dsm = default_state_muscles(model, tree, states=states)
    ref_loads, ref_mob = path_loads(dsm.paths, tree, q, dsm.tensions(tree, q, qd))
    loads, mob = dsm.path_loads(tree, q, qd)
    assert np.array_equal(mob, ref_mob) and len(loads) == len(ref_loads) > 0
    for a, b in zip(loads, ref_loads):
        assert a.body == b.body and np.array_equal(a.force, b.force) and np.array_equal(a.torque, b.torque)
    with shared_muscle_loads():
        first = dsm.path_loads(tree, q, qd)
        again = default_state_muscles(model, tree, default_fiber_lengths={}, states=states).path_loads(tree, q, qd)
        assert again[1] is first[1] and all(a is b for a, b in zip(again[0], first[0]))
        assert not first[1].flags.writeable and not first[0][0].force.flags.writeable
        other = {m: {"fiber_length": v["fiber_length"] * 1.01} for m, v in states.items()}
        moved = default_state_muscles(model, tree, states=other).path_loads(tree, q, qd)
        faster = dsm.path_loads(tree, q, 2 * qd)
        assert not np.array_equal(moved[0][0].force, first[0][0].force)
        assert faster[1] is not first[1]
    assert np.array_equal(first[1], ref_mob)
    # the paths' lengthening speeds from the bodies' velocities of forward kinematics (what
    # path_loads does) equal those of the velocity map times q̇ to rounding
    from arthron.multibody.kinematics import forward_kinematics
    from arthron.multibody.paths import lengthening_speeds
    kin = forward_kinematics(tree, q, qd)
    fast = lengthening_speeds(dsm.paths, tree, q, qd, kin, kin_velocities=True)
    slow = lengthening_speeds(dsm.paths, tree, q, qd)
    assert np.abs(fast - slow).max() <= 1e-13 * np.abs(slow).max()
