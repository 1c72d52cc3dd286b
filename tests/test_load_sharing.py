"""Load sharing (static optimization): the batched QP, arm26 against OpenSim's stored SO, the
Gait2354 walk against OpenSim 4.6 run here, setups, CLI and bad input."""
from __future__ import annotations

import copy
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

from conftest import (ARM26_TUT, DATA, GAIT_PIPE, GAIT_REF_MODEL, REF, ROOT, needs_data, needs_opensim,
                      static_optimization_setup)

from arthron.errors import OptionError
from arthron.solvers.box_qp import solve_box_qp

SO_REF = REF / "task1_arm26"
ARM_MODEL = ARM26_TUT / "InverseKinematics" / "arm26.osim"
ARM_IK = SO_REF / "IK" / "arm26_InverseKinematics.mot"
DATA_DAS4 = DATA / "arm-model" / "das4_v4.osim"


# ------------------------------------------------------------------------------ the QP
def test_box_qp_matches_scipy_and_flags_infeasible_frames():
    from scipy.optimize import minimize
    rng = np.random.default_rng(3)
    T, m, n = 40, 5, 25
    A = rng.normal(size=(T, m, n))
    b = np.einsum("tmn,tn->tm", A, rng.uniform(0.01, 0.6, (T, n)))
    w = rng.uniform(0.5, 2.0, n)
    r = solve_box_qp(A, b, w, 0.01, 1.0)
    assert r.ok.all() and np.abs(r.residual).max() < 1e-9
    for k in range(4):
        s = minimize(lambda x: 0.5 * (w * x * x).sum(), np.full(n, 0.1), jac=lambda x: w * x,
                     bounds=[(0.01, 1.0)] * n, method="SLSQP", options={"ftol": 1e-15, "maxiter": 500},
                     constraints=[{"type": "eq", "fun": lambda x: A[k] @ x - b[k], "jac": lambda x: A[k]}])
        # the exact optimum is never worse than SLSQP's
        assert 0.5 * (w * r.x[k] ** 2).sum() <= 0.5 * (w * s.x ** 2).sum() + 1e-10
        assert np.abs(r.x[k] - s.x).max() < 1e-6
    b[3] *= 1e3                      # no solution inside the bounds
    r = solve_box_qp(A, b, w, 0.01, 1.0)
    assert not r.ok[3] and r.ok[np.arange(T) != 3].all()


# ------------------------------------------------------------------------------ arm26
def _arm(phys):
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.solvers.load_sharing import static_optimization
    return static_optimization(read_osim(ARM_MODEL), read_sto(ARM_IK), lowpass_hz=6, time_range=(0, 1),
                               use_muscle_physiology=phys)


@needs_data
@pytest.mark.parametrize("phys,folder", [(False, "SO_nonphys"), (True, "SO_phys")])
def test_arm26_matches_opensim_static_optimization(phys, folder):
    """4.6's SO (IPOPT, tolerance 1e-4) against the exact optimum of the same problem: every
    activation within 5e-3 and never a higher objective; the equations of motion are met."""
    from arthron.io.sto import read_sto
    res = _arm(phys)
    ref = read_sto(SO_REF / folder / "arm26_StaticOptimization_activation.sto")
    assert list(ref.labels) == res.names and len(ref.time) == len(res.time) == 121
    assert np.abs(ref.time - res.time).max() < 1e-9
    a_ref = ref.data
    assert np.abs(res.activations - a_ref).max() < 5e-3
    assert np.all(res.objective <= (a_ref ** 2).sum(axis=1) + 1e-12)
    assert np.abs(res.residual).max() < 1e-6
    assert res.activations.min() >= 0.01 - 1e-12          # Thelen2003Muscle: minimum_activation
    fref = read_sto(SO_REF / folder / "arm26_StaticOptimization_force.sto")
    f = fref.data[:, [fref.labels.index(n) for n in res.names]]
    # forces = activation × force per activation: errors scale with the activation errors
    assert np.abs(res.forces - f).max() < 5e-3 * 1.2 * 1000


def _check_control_set(path, activations, reference):
    """The ControlSet written beside the activations: OpenSim 4.6's layout line for line (the
    reference file with its numbers masked, for every control's first nodes), one ControlLinear
    per activation column, a node per written row with the row's time and activation."""
    import re
    from lxml import etree
    root = etree.parse(str(path)).getroot()
    ref = etree.parse(str(reference)).getroot()
    controls = root.findall("ControlSet/objects/ControlLinear")
    assert [c.get("name") for c in controls] == activations.labels
    assert [e.tag for e in controls[0]] == [e.tag for e in ref.find("ControlSet/objects/ControlLinear")]
    for j, c in enumerate(controls):
        t = np.array([float(x.text) for x in c.findall("x_nodes/ControlLinearNode/t")])
        v = np.array([float(x.text) for x in c.findall("x_nodes/ControlLinearNode/value")])
        assert np.array_equal(t, activations.time) and np.array_equal(v, activations.data[:, j])
    mask = lambda line: re.sub(r"<(t|value)>[^<]*<", r"<\1>N<", line)  # noqa: E731
    ours, theirs = Path(path).read_text().splitlines(), Path(reference).read_text().splitlines()
    head = len(ours) if len(ours) == len(theirs) else 20
    assert [mask(x) for x in ours[:head]] == [mask(x) for x in theirs[:head]]


@needs_data
@needs_opensim
def test_control_set_reads_back_in_opensim(tmp_path):
    """OpenSim 4.6 reads the ControlSet arthron writes beside the activations: the same controls,
    and at every node time the control value is the written activation (to rounding of the
    17 digits)."""
    import opensim as osim
    from arthron.io.sto import read_sto
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    from conftest import static_optimization_setup
    setup = tmp_path / "so.xml"
    setup.write_text(static_optimization_setup("arm26", ARM_MODEL, ARM_IK, tmp_path / "res", 0, 0.3,
                                               physiology=False))
    _, written = run_static_optimization_from_setup(setup)
    act = read_sto(written[0])
    cs = osim.ControlSet(str(written[2]))
    assert [cs.get(i).getName() for i in range(cs.getSize())] == act.labels
    got = np.array([[cs.get(j).getControlValue(float(t)) for j in range(cs.getSize())] for t in act.time])
    assert np.abs(got - act.data).max() < 1e-15


@needs_data
def test_arm26_setup_writes_opensim_files(tmp_path):
    from arthron.io.sto import read_sto
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    raw = (SO_REF / "setups" / "so_setup_physiological.xml").read_text()
    raw = (raw.replace("<workdir>/arm26/results/SO_phys", str(tmp_path / "res"))
              .replace("<workdir>/arm26/results/IK", str(SO_REF / "IK"))
              .replace("<workdir>/arm26", str(ARM26_TUT / "InverseKinematics"))
              .replace("<step_interval>1</step_interval>", "<step_interval>5</step_interval>"))
    setup = tmp_path / "so.xml"
    setup.write_text(raw)
    res, written = run_static_optimization_from_setup(setup)
    assert [p.name for p in written] == ["arm26_StaticOptimization_activation.sto",
                                         "arm26_StaticOptimization_force.sto",
                                         "arm26_StaticOptimization_controls.xml"]
    a = read_sto(written[0])
    _check_control_set(written[2], a, SO_REF / "SO_phys" / "arm26_StaticOptimization_controls.xml")
    ref = read_sto(SO_REF / "SO_phys" / "arm26_StaticOptimization_activation.sto")
    assert a.labels == ref.labels
    # step_interval 5 with a 6 Hz filter keeps the frames OpenSim records (first, every 5th
    # row of the padded storage, last)
    from arthron.tools.analyze_tool import step_rows
    rows = step_rows(read_sto(ARM_IK).time, res.time, 5, True)
    assert 2 < len(a.time) < 121 and np.allclose(a.time, res.time[rows])
    assert np.abs(a.data - ref.data[rows]).max() < 5e-3
    # the command line runs the same setup
    import os
    r = subprocess.run([sys.executable, "-m", "arthron.cli", "so", "--setup", str(setup), "-o", str(tmp_path / "cli")],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 0, r.stderr
    b = read_sto(tmp_path / "cli" / "arm26_StaticOptimization_activation.sto")
    # the command sets arthron.runtime.light_imports (numpy low-pass instead of scipy's lfilter,
    # same numbers to 1e-12 relative), so equal to rounding, not bit for bit
    assert np.abs(b.data - a.data).max() < 1e-10 and "wrote" in r.stdout


@needs_data
def test_infeasible_frame_named_with_the_reserve_that_fixes_it():
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.solvers.load_sharing import InfeasibleFrames, static_optimization
    model = read_osim(ARM_MODEL)
    model.forces = {n: copy.copy(f) for n, f in model.forces.items()}
    for n in ("BIClong", "BICshort", "BRA"):
        model.forces[n].max_isometric_force *= 0.02          # flexors far too weak
    with pytest.raises(InfeasibleFrames) as e:
        static_optimization(model, read_sto(ARM_IK), lowpass_hz=6, time_range=(0, 1),
                            use_muscle_physiology=False)
    assert "r_elbow_flex" in str(e.value) and "t = " in str(e.value)
    from arthron.solvers.load_sharing import build_problem, solve_problem
    prob = build_problem(model, read_sto(ARM_IK), lowpass_hz=6, time_range=(0, 1),
                         use_muscle_physiology=False)
    bad = ~solve_problem(prob, on_infeasible="ignore").feasible
    assert len(e.value.report) == min(20, bad.sum()) and bad.sum() > 0
    # each frame is named by its time, and the reserve reported makes it feasible
    for t, need in e.value.report:
        k = int(np.argmin(np.abs(prob.time - t)))
        assert bad[k] and need and set(need) <= {"r_shoulder_elev", "r_elbow_flex"}
        for c, v in need.items():
            prob.tau[k, prob.coordinates.index(c)] -= v
    assert solve_problem(prob, on_infeasible="ignore").feasible[
        [int(np.argmin(np.abs(prob.time - t))) for t, _ in e.value.report]].all()


@needs_data
def test_speeds_file_beside_coordinates_is_refused_naming_its_line(tmp_path):
    """OpenSim 4.6 takes the speeds from a <speeds_file> (as stored, at the padded rows of the
    filtered coordinates); arthron does not reproduce that, so the setup is refused before
    anything is written, naming the element and its line; an empty <speeds_file> runs."""
    from arthron.errors import UnsupportedFeature
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    from conftest import static_optimization_setup
    speeds = tmp_path / "speeds.sto"
    speeds.write_text("x")
    text = static_optimization_setup("arm26", ARM_MODEL, ARM_IK, tmp_path / "res", 0, 0.1, physiology=False)
    setup = tmp_path / "so.xml"
    setup.write_text(text.replace("<coordinates_file>", f"<speeds_file>{speeds}</speeds_file>\n<coordinates_file>"))
    with pytest.raises(UnsupportedFeature, match="speeds_file") as e:
        run_static_optimization_from_setup(setup)
    assert "line 13" in str(e.value) and str(setup) in str(e.value)
    assert not (tmp_path / "res").exists()
    setup.write_text(text.replace("<coordinates_file>", "<speeds_file> </speeds_file>\n<coordinates_file>"))
    _, written = run_static_optimization_from_setup(setup)
    assert len(written) == 3


@needs_data
def test_too_few_actuators_names_the_coordinates_no_actuator_moves():
    """More equations of motion than actuators is refused before solving, and the message names
    the coordinates that no actuator moves (arm26 with only BRA: the shoulder)."""
    from arthron.errors import SolverError
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.solvers.load_sharing import static_optimization
    model = read_osim(ARM_MODEL)
    model.forces = {n: f for n, f in model.forces.items() if n == "BRA"}
    with pytest.raises(SolverError) as e:
        static_optimization(model, read_sto(ARM_IK), lowpass_hz=6, time_range=(0, 1),
                            use_muscle_physiology=False)
    msg = str(e.value)
    assert "2 equations of motion but only 1 actuators" in msg
    assert "no actuator acts on 1 coordinate(s): r_shoulder_elev;" in msg and "r_elbow_flex" not in msg


@needs_data
def test_bad_options():
    from arthron.tools.load_sharing_tool import run_load_sharing
    from arthron.tools.static_optimization_tool import run_static_optimization
    with pytest.raises(OptionError):
        run_static_optimization(ARM_MODEL, ARM_IK, activation_exponent=0.5)
    with pytest.raises(OptionError):
        run_load_sharing(ARM_MODEL, ARM_IK, objective="stress", use_muscle_physiology=False,
                         pcsa={"BRA": -1e-4})
    with pytest.raises(OptionError):
        run_load_sharing(ARM_MODEL, ARM_IK, objective="stress", pcsa={"nope": 1e-4},
                         use_muscle_physiology=False)


@needs_data
def test_stress_objective_with_derived_pcsa_is_opensims_without_physiology(tmp_path):
    """With PCSA = F_max/σ for every muscle, Σ(f/PCSA)² = σ² Σ a²: the same optimum as
    OpenSim's objective without physiology (bounds 0..1)."""
    from arthron.tools.load_sharing_tool import run_load_sharing
    a = run_load_sharing(ARM_MODEL, ARM_IK, objective="stress", lowpass_hz=6, time_range=(0, 1))
    b = run_load_sharing(ARM_MODEL, ARM_IK, objective="stress", lowpass_hz=6, time_range=(0, 1),
                         pcsa={"BICshort": 3 * 435.56 / 0.6e6})
    assert np.abs(a.residual).max() < 1e-6 and np.abs(b.residual).max() < 1e-6
    i = a.names.index("BICshort")
    assert np.all(b.forces[:, i] >= a.forces[:, i] - 1e-9)      # a larger PCSA takes more load
    assert b.forces[:, i].max() > 1.2 * a.forces[:, i].max()
    (tmp_path / "pcsa.txt").write_text(f"BICshort {3 * 435.56 / 0.6e6 * 1e4!r}  # cm2\n")
    c = run_load_sharing(ARM_MODEL, ARM_IK, objective="stress", lowpass_hz=6, time_range=(0, 1),
                         pcsa=tmp_path / "pcsa.txt")
    assert np.allclose(c.forces, b.forces, rtol=1e-9, atol=1e-9)


@needs_data
def test_cli_so(tmp_path):
    env = {"PYTHONPATH": str(ROOT / "src")}
    import os
    env = {**os.environ, **env}
    r = subprocess.run([sys.executable, "-m", "arthron.cli", "so", str(ARM_MODEL), str(ARM_IK),
                        "--lowpass", "6", "-o", str(tmp_path)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["arm26_StaticOptimization_activation.sto", "arm26_StaticOptimization_controls.xml",
                     "arm26_StaticOptimization_force.sto", "arm26_StaticOptimization_report.sto"]
    r = subprocess.run([sys.executable, "-m", "arthron.cli", "so", str(ARM_MODEL), str(ARM_IK),
                        "--activation-exponent", "nan", "-o", str(tmp_path / "x")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "exponent" in r.stderr
    assert not (tmp_path / "x").exists()


# ------------------------------------------------------------------------------ Gait2354
def _gait_setup(tmp_path, phys, t0=0.5, t1=0.7):
    xml = static_optimization_setup("gait", GAIT_REF_MODEL, GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot",
                                    tmp_path / "osim", t0, t1, physiology=phys,
                                    force_set=GAIT_PIPE / "gait2354_CMC_Actuators.xml",
                                    grf=GAIT_PIPE / "subject01_walk1_grf.xml")
    p = tmp_path / f"so_{int(phys)}.xml"
    p.write_text(xml)
    return p


@needs_data
@needs_opensim
@pytest.mark.parametrize("phys", [False, True])
def test_gait2354_walk_matches_opensim(tmp_path, phys):
    """54 muscles, 6 residuals and 17 reserves (the CMC actuator file), GRF, 6 Hz; 13 frames
    (0.5-0.7 s) to keep the test short. OpenSim 4.6's AnalyzeTool is run here on the same setup."""
    import opensim as osim
    from arthron.io.sto import read_sto
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    import oracle
    setup = _gait_setup(tmp_path, phys)
    osim.Logger.setLevelString("error")
    with oracle.opensim_defaults_kept(tmp_path):     # the actuator file's <defaults> stay in this test
        osim.AnalyzeTool(str(setup)).run()
    ref = read_sto(tmp_path / "osim" / "gait_StaticOptimization_activation.sto")
    res, written = run_static_optimization_from_setup(setup, results_dir=tmp_path / "ours")
    prob = res.extra["problem"]
    assert sum(k == "muscle" for k in prob.kinds) == 54 and len(res.names) == 77
    assert len(ref.time) == len(res.time) == 13 and np.abs(ref.time - res.time).max() < 1e-9
    a = ref.data[:, [ref.labels.index(n) for n in res.names]]
    assert np.abs(res.activations - a).max() < 1e-2
    assert np.abs(res.residual).max() < 1e-6
    # the two optima differ by OpenSim's tolerance and the small differences of the two
    # inverse dynamics (a few 1e-3 of the residual actuators' controls)
    assert np.all(res.objective <= (a ** 2).sum(axis=1) * (1 + 5e-4))
    ours = read_sto(written[0])
    assert ours.labels == ref.labels
    # the force file has OpenSim's ForceReporter columns: actuators, then the ExternalForces
    fo, fr = read_sto(written[1]), read_sto(tmp_path / "osim" / "gait_StaticOptimization_force.sto")
    assert fo.labels == fr.labels and len(fo.labels) == 77 + 18
    ext = slice(77, None)
    scale = np.abs(fr.data[:, ext]).max(axis=0) + 1e-3
    assert np.all(np.abs(fo.data[:, ext] - fr.data[:, ext]).max(axis=0) <= 1e-3 * scale)


# ------------------------------------------------------------------------------ closed chains
def _elevation_motion(model, n=21, duration=2.0):
    """Arm elevation in the scapular plane (plane of elevation 0.5 rad ≈ 30°): humeral
    elevation 0.35 → 1.55 rad with the scapula rotating upward and the clavicle rising; the
    AC PointConstraint is met by assembly."""
    from arthron.tables import Table
    t = np.linspace(0, duration, n)
    s = 0.5 - 0.5 * np.cos(np.pi * t / duration)
    names = list(model.coordinates)
    vals = np.array([[model.coordinates[c].default_value for c in names]] * n)
    vals[:, names.index("shoulder_elv")] = 0.35 + 1.2 * s
    vals[:, names.index("plane_elv")] = 0.5
    vals[:, names.index("scapula_upward_rot")] += 0.4 * s
    vals[:, names.index("clav_elev")] += 0.15 * s
    return Table(name="elevation", time=t, labels=names, data=vals, in_degrees=False)


@needs_data
def test_thoracoscapular_ac_constraint_multipliers():
    """Thoracoscapular shoulder model (33 muscles, AC PointConstraint), reserves on every
    coordinate: the equations of motion hold with the multipliers to 1e-6, and the multipliers
    are those forward dynamics finds with the solved forces applied."""
    from conftest import TSM
    from arthron.io.osim import read_osim
    from arthron.multibody.constraints import compile_constraints
    from arthron.multibody.forward_dynamics import forward_accelerations
    from arthron.multibody.kinematics import compile_model
    from arthron.solvers.load_sharing import build_problem, solve_problem
    from arthron.tools.load_sharing_tool import add_reserves
    model = add_reserves(read_osim(TSM), 10.0)
    prob = build_problem(model, _elevation_motion(model), use_muscle_physiology=False)
    res = solve_problem(prob)
    assert res.feasible.all() and res.multipliers.shape == (21, 3)
    assert np.abs(res.residual).max() < 1e-6
    mus = [i for i, k in enumerate(prob.kinds) if k == "muscle"]
    assert len(mus) == 33 and res.activations[:, mus].max() > 0.05
    tree = compile_model(model)
    # the solved forces applied as OpenSim applies them (reserves on the scapulothoracic
    # rotations act on Simbody's mobilities ω_FM; arthron.solvers.actuators converts)
    from arthron.solvers.actuators import actuator_forces
    gen, loads = actuator_forces(model, tree, res.force_table(), prob.time, q=prob.q)
    locked = np.array([model.coordinates[c].locked for c in tree.coordinate_names])
    _, mu = forward_accelerations(tree, prob.q, prob.qd, gen, loads, locked=locked,
                                  constraints=compile_constraints(model, tree), return_multipliers=True)
    # the splined, assembled motion meets the constraint's accelerations only approximately:
    # the multipliers agree to 1e-4 of their size
    assert np.abs(mu - res.multipliers).max() < 1e-4 * np.abs(res.multipliers).max()


@needs_data
def test_coupler_dependent_coordinate_missing_from_motion_is_filled():
    """DAS4 (164 muscles, two CoordinateCouplerConstraints at the wrist): the motion lacks both
    dependent coordinates; they are filled from the couplers, the multipliers solved, no hang."""
    from arthron.io.osim import read_osim
    from arthron.solvers.load_sharing import build_problem, solve_problem
    from arthron.tables import Table
    from arthron.tools.load_sharing_tool import add_reserves
    model = read_osim(DATA_DAS4)
    t = np.linspace(0, 1, 7)
    s = np.sin(np.pi * t)
    names = [c for c in model.coordinates if not c.startswith("proximal_distal")]
    vals = np.array([[model.coordinates[c].default_value for c in names]] * len(t))
    vals[:, names.index("flexion")] = 0.6 * s
    vals[:, names.index("deviation")] = 0.2 * s
    mot = Table(name="wrist", time=t, labels=names, data=vals, in_degrees=False)
    with pytest.warns(Warning):            # dependent coordinates missing: defaults, then assembled
        prob = build_problem(add_reserves(model, 10.0), mot, use_muscle_physiology=False)
    res = solve_problem(prob)
    assert res.feasible.all() and res.multipliers.shape == (7, 2)
    assert np.abs(res.residual).max() < 1e-6
    for con in model.constraints:
        dep = prob.coordinates.index(con.properties["dependent_coordinate"])
        ind = prob.coordinates.index(con.properties["independent_coordinates"][0])
        assert np.abs(prob.q[:, dep] - con.properties["function"].value(prob.q[:, ind])).max() < 1e-9
    assert np.abs(prob.q[:, prob.coordinates.index("proximal_distal_r3")]).max() > 0.1


# ------------------------------------------------------------------------------ seed mode
@pytest.fixture(scope="module")
def tsm_elevation():
    from conftest import TSM
    from arthron.io.osim import read_osim
    from arthron.solvers.load_sharing import build_problem
    from arthron.tools.load_sharing_tool import add_reserves
    if not TSM.exists():
        pytest.skip("Thoracoscapular model absent")
    model = add_reserves(read_osim(TSM), 10.0)
    return model, build_problem(model, _elevation_motion(model), use_muscle_physiology=False)


@needs_data
def test_reaction_map_is_the_e_matrix_reaction(tsm_elevation):
    """The affine map C x + d reproduces the E-matrix reaction with the muscle forces applied."""
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.paths import compile_paths
    from arthron.solvers.actuators import path_loads
    from arthron.solvers.load_sharing import solve_problem
    from arthron.solvers.load_sharing_cone import reaction_map
    from arthron.solvers.reactions import joint_loads
    model, prob = tsm_elevation
    res = solve_problem(prob)
    tree = compile_model(model)
    C, d = reaction_map(model, prob, "GlenoHumeral", tree)
    mus = [i for i, k in enumerate(prob.kinds) if k == "muscle"]
    ps = compile_paths(model, tree, forces=[prob.names[i] for i in mus])
    loads, _ = path_loads(ps, tree, prob.q, res.forces[:, mus])
    f, _ = joint_loads(model, tree, prob.q, prob.qd, prob.qdd, loads, joints=["GlenoHumeral"]).on_child_in_ground(0)
    assert np.abs(np.einsum("tin,tn->ti", C, res.activations) + d - f).max() < 1e-8 * np.abs(f).max()


@needs_data
def test_reaction_map_reuses_the_wrapped_paths_of_the_problem(tsm_elevation):
    """build_problem keeps the muscles' wrapped paths; the cone's reaction map reuses them and
    equals, bit for bit, the map that wraps the paths again."""
    import dataclasses
    from arthron.solvers.load_sharing_cone import reaction_map
    model, prob = tsm_elevation
    assert prob.muscle_paths is not None
    C1, d1 = reaction_map(model, prob, "GlenoHumeral")
    C2, d2 = reaction_map(model, dataclasses.replace(prob, muscle_paths=None), "GlenoHumeral")
    np.testing.assert_array_equal(C1, C2)
    np.testing.assert_array_equal(d1, d2)


@needs_data
@pytest.mark.parametrize("n_planes", [None, 8])
def test_glenohumeral_stability_cone(tsm_elevation, n_planes):
    """Arm elevation in the scapular plane, stress objective weights (here all 1), reaction of
    the glenoid on the humerus in a cone (8° × 12°) about its mean direction in the scapula
    frame: cone off, it leaves the cone on some frames; cone on, it is inside on every frame,
    the problem stays feasible and no frame is cheaper than without the cone."""
    from arthron.multibody.kinematics import compile_model, forward_kinematics
    from arthron.solvers.load_sharing import solve_problem
    from arthron.solvers.load_sharing_cone import StabilityCone, reaction_map, solve_with_stability_cone
    model, prob = tsm_elevation
    tree = compile_model(model)
    free = solve_problem(prob)
    C, d = reaction_map(model, prob, "GlenoHumeral", tree)
    F = np.einsum("tin,tn->ti", C, free.activations) + d
    Rb = forward_kinematics(tree, prob.q).R[:, tree.body_node[tree.body_names.index("scapula")]]
    Fs = np.einsum("tji,tj->ti", Rb, F)
    axis = Fs.mean(axis=0) / np.linalg.norm(Fs.mean(axis=0))
    cone = StabilityCone("GlenoHumeral", "scapula", tuple(axis), (8.0, 12.0), n_planes=n_planes)
    res = solve_with_stability_cone(model, prob, cone)
    e = res.extra
    assert 0 < e["cone_off_outside"].sum() < len(res.time)
    assert res.feasible.all() and np.abs(res.residual).max() < 1e-6
    assert e["cone_ratio"].max() <= 1 + 1e-6                       # inside on every frame
    assert np.all(res.objective >= e["objective_without_cone"] - 1e-9)
    assert np.array_equal(e["cone_active"], e["cone_off_outside"])
    inside = ~e["cone_off_outside"]
    assert np.allclose(res.activations[inside], free.activations[inside])
    # the reported angle is the angle of the reaction from the axis
    Fon = np.einsum("tin,tn->ti", C, res.activations) + d
    Fs_on = np.einsum("tji,tj->ti", Rb, Fon)
    ang = np.degrees(np.arccos(Fs_on @ axis / np.linalg.norm(Fs_on, axis=1)))
    assert np.allclose(ang, e["cone_angle_deg"], atol=1e-6) and ang.max() <= 12.0 + 1e-4


@needs_data
def test_cone_with_point_and_torque_actuators_and_a_constraint_in_the_subtree():
    """A PointActuator and a TorqueActuator on the humerus, and the AC PointConstraint inside
    the subtree of the scapulothoracic joint: the affine reaction map C x + d equals the
    E-matrix reaction with every solved load applied (paths, actuators, and the constraint
    forces of the solution's multipliers) to rounding; without the constraint forces it would
    be off by 75 %; it agrees with JointReaction on the solved forces (multipliers from
    forward dynamics) to 2e-4; a cone on that joint is met on every frame."""
    from conftest import TSM
    from arthron.io.osim import read_osim
    from arthron.models.forces import PointActuator, TorqueActuator
    from arthron.multibody.constrained_dynamics import constraint_loads
    from arthron.multibody.constraints import compile_constraints
    from arthron.multibody.kinematics import compile_model, forward_kinematics
    from arthron.solvers.actuators import actuator_forces
    from arthron.solvers.load_sharing import build_problem, solve_problem
    from arthron.solvers.load_sharing_cone import StabilityCone, reaction_map, solve_with_stability_cone
    from arthron.solvers.reactions import joint_loads
    from arthron.tables import Table
    from arthron.tools.load_sharing_tool import add_reserves
    from arthron.tools.static_optimization_tool import joint_reactions_of
    if not TSM.exists():
        pytest.skip("Thoracoscapular model absent")
    model = add_reserves(read_osim(TSM), 10.0)
    pa = PointActuator(name="pa", body="humerus", point=np.array([0.0, -0.1, 0.0]),
                       direction=np.array([0.0, 1.0, 0.0]), optimal_force=50.0)
    ta = TorqueActuator(name="ta", bodyA="humerus", bodyB="scapula", axis=np.array([0.0, 0.0, 1.0]),
                        optimal_force=5.0)
    model.forces.update(pa=pa, ta=ta)
    motion = _elevation_motion(model)
    prob = build_problem(model, motion, use_muscle_physiology=False)
    free = solve_problem(prob)
    assert np.abs(free.forces[:, [prob.names.index("pa"), prob.names.index("ta")]]).min() > 0.01
    tree = compile_model(model)
    forces = Table(name="f", time=prob.time, labels=list(prob.names), data=free.forces, in_degrees=False)
    _, loads = actuator_forces(model, tree, forces, prob.time, q=prob.q)
    cl, _ = constraint_loads(tree, prob.q, compile_constraints(model, tree), free.multipliers)
    for joint in ("GlenoHumeral", "scapulothoracic"):
        C, d = reaction_map(model, prob, joint, tree)
        F = np.einsum("tin,tn->ti", C, free.activations) + d
        f, _ = joint_loads(model, tree, prob.q, prob.qd, prob.qdd, loads + cl, joints=[joint]).on_child_in_ground(0)
        assert np.abs(F - f).max() < 1e-12 * np.abs(f).max()
        jr = joint_reactions_of(free, model, motion, joints=[joint])
        assert np.abs(F - jr.loads.on_child_in_ground(0)[0]).max() < 2e-4 * np.abs(f).max()
    f_open, _ = joint_loads(model, tree, prob.q, prob.qd, prob.qdd, loads, joints=["scapulothoracic"]).on_child_in_ground(0)
    assert np.abs(F - f_open).max() > 0.5 * np.abs(f).max()
    Rb = forward_kinematics(tree, prob.q).R[:, tree.body_node[tree.body_names.index("thorax")]]
    Fs = np.einsum("tji,tj->ti", Rb, F)
    axis = Fs.mean(axis=0) / np.linalg.norm(Fs.mean(axis=0))
    ang = np.degrees(np.arccos(Fs @ axis / np.linalg.norm(Fs, axis=1)))
    half = float(np.median(ang))          # about half the frames leave the cone when it is off
    res = solve_with_stability_cone(model, prob, StabilityCone("scapulothoracic", "thorax", tuple(axis),
                                                               (half, half)))
    e = res.extra
    assert 0 < e["cone_off_outside"].sum() < len(res.time)
    assert res.feasible.all() and np.abs(res.residual).max() < 1e-6
    assert e["cone_ratio"].max() <= 1 + 1e-6
    assert np.all(res.objective >= e["objective_without_cone"] - 1e-9)


@needs_data
def test_stability_cone_bad_input(tsm_elevation):
    from arthron.solvers.load_sharing_cone import StabilityCone, solve_with_stability_cone
    model, prob = tsm_elevation
    for cone, what in ((StabilityCone("nojoint", "scapula", (1, 0, 0)), "no joint 'nojoint'"),
                       (StabilityCone("GlenoHumeral", "nobody", (1, 0, 0)), "no body 'nobody'"),
                       (StabilityCone("GlenoHumeral", "scapula", (1, 0, 0), (0.0, 20.0)), "(0°, 90°)"),
                       (StabilityCone("GlenoHumeral", "scapula", (1, 0, 0), (20.0, 95.0)), "(0°, 90°)"),
                       (StabilityCone("GlenoHumeral", "scapula", (0, 0, 0)), "non-zero")):
        with pytest.raises(OptionError, match=re_escape(what)):
            solve_with_stability_cone(model, prob, cone)


def re_escape(s):
    import re
    return re.escape(s)


@needs_data
def test_emg_assisted_bounds():
    """A synthetic EMG envelope drives BIClong and TRIlat inside λ_l f_EMG ≤ f ≤ λ_u f_EMG on
    every frame; the other muscles keep their bounds; unknown columns are an error."""
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.solvers.load_sharing import build_problem, solve_problem
    from arthron.solvers.load_sharing_cone import apply_emg_bounds, emg_activation
    from arthron.tools.load_sharing_tool import add_reserves
    model = add_reserves(read_osim(ARM_MODEL), 100.0)
    prob = build_problem(model, read_sto(ARM_IK), lowpass_hz=6, time_range=(0, 1), use_muscle_physiology=False)
    lo0, hi0 = prob.lower.copy(), prob.upper.copy()
    te = np.linspace(-0.1, 1.1, 601)
    emg = np.column_stack([0.2 + 0.3 * np.sin(np.pi * np.clip(te, 0, 1)), 0.05 + 0 * te])
    a = apply_emg_bounds(prob, te, emg, ["BIClong", "TRIlat"])
    res = solve_problem(prob)
    assert res.feasible.all() and np.abs(res.residual).max() < 1e-6
    fmax = np.array([model.forces[n].max_isometric_force for n in ("BIClong", "TRIlat")])
    f = res.forces[:, [res.names.index("BIClong"), res.names.index("TRIlat")]]
    f_emg = a * fmax
    assert np.all(f >= 0.3 * f_emg - 1e-9) and np.all(f <= 0.7 * f_emg + 1e-9)
    others = [i for i, n in enumerate(res.names) if n not in ("BIClong", "TRIlat")]
    assert np.array_equal(prob.lower[:, others], lo0[:, others]) and np.array_equal(prob.upper[:, others], hi0[:, others])
    # activation dynamics: a step of EMG rises with ~30 ms and falls with ~40 ms time constants
    t = np.linspace(0, 0.5, 501)
    step = ((t >= 0.1) & (t < 0.3)).astype(float)
    act = emg_activation(t, step[:, None])[:, 0]
    rise, fall = act[np.searchsorted(t, 0.15)], act[np.searchsorted(t, 0.4)]
    assert act[np.searchsorted(t, 0.099)] == 0 and 0.5 < rise < 0.99 and act[np.searchsorted(t, 0.3)] > 0.9
    assert 0.02 < fall < 0.3 and act[-1] < 0.05 and np.all(np.diff(act[t >= 0.3]) <= 0)
    with pytest.raises(OptionError, match="names no muscle"):
        apply_emg_bounds(prob, te, emg, ["BIClong", "nomuscle"])
    with pytest.raises(OptionError, match="normalized"):
        emg_activation(te, 3 * emg)


@needs_data
def test_cli_so_cone_and_emg(tmp_path):
    """``arthron so --cone`` writes the per-frame report (cone active, angle); a cone on a joint
    the model lacks and EMG columns naming no muscle are one-line errors (exit 2)."""
    import os
    from conftest import TSM
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto, write_sto
    from arthron.tables import Table
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    mot = tmp_path / "elev.mot"
    write_sto(mot, _elevation_motion(read_osim(TSM), n=9))
    base = [sys.executable, "-m", "arthron.cli", "so", str(TSM), str(mot), "--reserves", "10", "--objective", "stress"]
    r = subprocess.run(base + ["--cone", "GlenoHumeral:scapula:0.73,0.05,0.68:8:12", "-o", str(tmp_path / "c")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    rep = read_sto(tmp_path / "c" / "ThoracoscapularShoulderModel_StaticOptimization_report.sto")
    assert rep.labels == ["objective", "max_residual", "feasible", "cone_active", "cone_angle_deg"]
    assert rep.data[:, 2].all() and rep.data[:, 1].max() < 1e-6 and rep.data[:, 4].max() < 12 + 1e-4
    (tmp_path / "pcsa.txt").write_text("# muscle cm2\nDELT1 10.5\nSUPSP -3\n")
    r = subprocess.run(base + ["--pcsa", str(tmp_path / "pcsa.txt"), "-o", str(tmp_path / "p")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "pcsa.txt" in r.stderr and "line 3" in r.stderr and "positive" in r.stderr
    r = subprocess.run(base + ["--cone", "GH:scapula:1,0,0:8:12", "-o", str(tmp_path / "d")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "no joint 'GH'" in r.stderr and not (tmp_path / "d").exists()
    emg = tmp_path / "emg.sto"
    write_sto(emg, Table(name="emg", time=np.linspace(0, 2, 5), labels=["DELT1", "biceps"],
                         data=np.full((5, 2), 0.2), in_degrees=False))
    r = subprocess.run(base + ["--emg", str(emg), "-o", str(tmp_path / "e")], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "emg.sto" in r.stderr and "biceps" in r.stderr


@needs_data
@needs_opensim
def test_arm26_activation_exponent_3_matches_opensim(tmp_path):
    """activation_exponent 3 (the cvxpy + Clarabel route) against OpenSim 4.6 run here on the
    same setup: objective Σ a³ never above OpenSim's (beyond Clarabel's tolerance) and
    activations within 1.5e-2. Σ a³ is flat near the 0.01 lower bound (gradient 3e-4), so
    IPOPT at OpenSim's tolerance 1e-4 stops further from the optimum there than with p = 2
    (measured: largest gap 0.011, on muscles near that bound)."""
    import opensim as osim
    from arthron.io.sto import read_sto
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    raw = (SO_REF / "setups" / "so_setup_nonphysiological.xml").read_text()
    raw = (raw.replace("<workdir>/arm26/results/SO_nonphys", str(tmp_path / "osim"))
              .replace("<workdir>/arm26/results/IK", str(SO_REF / "IK"))
              .replace("<workdir>/arm26", str(ARM26_TUT / "InverseKinematics"))
              .replace("<activation_exponent>2</activation_exponent>",
                       "<activation_exponent>3</activation_exponent>"))
    setup = tmp_path / "so3.xml"
    setup.write_text(raw)
    osim.Logger.setLevelString("error")
    osim.AnalyzeTool(str(setup)).run()
    ref = read_sto(tmp_path / "osim" / "arm26_StaticOptimization_activation.sto")
    res, _ = run_static_optimization_from_setup(setup, results_dir=tmp_path / "ours")
    assert len(ref.time) == len(res.time) == 121
    a = ref.data[:, [ref.labels.index(n) for n in res.names]]
    assert np.all(res.objective <= (a ** 3).sum(axis=1) + 1e-6)
    assert np.abs(res.activations - a).max() < 1.5e-2
    assert np.abs(res.residual).max() < 1e-5


@needs_data
def test_passive_fiber_force_option_and_cone_axis_rotation():
    """passive_fiber_force=True (not OpenSim's behaviour) adds F_max f_PE cos α as a known
    force: the reported forces include it and the equations of motion still hold. The
    cone axis turns by the glenoid inclination and version (about the frame's x and y)."""
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.paths import compile_paths, moment_arms
    from arthron.solvers.load_sharing import build_problem, solve_problem
    from arthron.solvers.load_sharing_cone import StabilityCone
    model = read_osim(ARM_MODEL)
    prob = build_problem(model, read_sto(ARM_IK), lowpass_hz=6, time_range=(0, 1),
                         use_muscle_physiology=True, passive_fiber_force=True)
    assert prob.passive.max() > 1.0                          # stretched muscles at some frame
    res = solve_problem(prob)
    tree = compile_model(model)
    R = moment_arms(compile_paths(model, tree, forces=res.names), tree, prob.q, coupled=False)
    tau_id = prob.tau + np.einsum("tmq,tm->tq", R, prob.passive)      # undo the known force
    assert np.abs(np.einsum("tmq,tm->tq", R, res.forces) - tau_id).max() < 1e-6
    base = StabilityCone("j", "b", (0.2, 0.1, 1.0)).frame()
    for inc, ver, col in ((10.0, 0.0, 1), (0.0, -7.0, 0)):
        f = StabilityCone("j", "b", (0.2, 0.1, 1.0), inclination_deg=inc, version_deg=ver).frame()
        assert np.allclose(f.T @ f, np.eye(3))
        ang = np.degrees(np.arccos(np.clip(f[:, 2] @ base[:, 2], -1, 1)))
        assert abs(ang - abs(inc or ver)) < 1e-9
        # the rotation is about the frame's x (inclination) or y (version) axis
        assert np.allclose(f[:, 1 - col], base[:, 1 - col])


@needs_data
def test_joint_reactions_from_the_solved_forces_without_a_file(tmp_path):
    """``arthron so --joint-reactions`` = ``arthron jr`` on the written force file."""
    import os
    from arthron.io.sto import read_sto
    from arthron.tools.analyze_tool import run_joint_reaction
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, "-m", "arthron.cli", "so", str(ARM_MODEL), str(ARM_IK), "--lowpass", "6",
                        "--joint-reactions", "-o", str(tmp_path)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    jr = read_sto(tmp_path / "arm26_JointReaction_ReactionLoads.sto")
    forces = read_sto(tmp_path / "arm26_StaticOptimization_force.sto")
    ref = run_joint_reaction(ARM_MODEL, ARM_IK, forces=forces, lowpass_hz=6, accelerations="forward")
    assert jr.labels == ref.labels and len(jr.time) == 121
    # the file round trip rounds the forces to the printed digits
    assert np.abs(jr.data - ref.to_table().data).max() < 1e-4 * np.abs(jr.data).max()


def _arm26_analyze_setup(tmp_path, analyses_extra=""):
    raw = (SO_REF / "setups" / "so_setup_physiological.xml").read_text()
    raw = (raw.replace("<workdir>/arm26/results/SO_phys", str(tmp_path / "res"))
              .replace("<workdir>/arm26/results/IK", str(SO_REF / "IK"))
              .replace("<workdir>/arm26", str(ARM26_TUT / "InverseKinematics"))
              .replace("<step_interval>1</step_interval>", "<step_interval>5</step_interval>")
              .replace("</StaticOptimization>", "</StaticOptimization>" + analyses_extra))
    setup = tmp_path / "so.xml"
    setup.write_text(raw)
    return setup


@needs_data
def test_static_optimization_inside_the_analyze_tool(tmp_path):
    """An AnalyzeTool setup with MuscleAnalysis and StaticOptimization: ``run_analyze`` writes
    both as OpenSim names them; the StaticOptimization files are those of ``arthron so
    --setup`` (same frames with step_interval 5) and within 5e-3 of OpenSim 4.6's stored run."""
    import warnings
    from arthron.io.sto import read_sto
    from arthron.tools.analyze_tool import run_analyze, step_rows
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    ma = ("<MuscleAnalysis name=\"MuscleAnalysis\"><on>true</on><step_interval>5</step_interval>"
          "<muscle_list>all</muscle_list><moment_arm_coordinate_list>r_elbow_flex</moment_arm_coordinate_list>"
          "</MuscleAnalysis>")
    setup = _arm26_analyze_setup(tmp_path, ma)
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # nothing skipped
        files = run_analyze(setup, results_dir=tmp_path / "analyze")
    from arthron.solvers.muscle_fibers import MUSCLE_ANALYSIS_FILES   # (and, as OpenSim, the other files)
    assert {f.name for f in files} == {"arm26_StaticOptimization_activation.sto",
                                       "arm26_StaticOptimization_force.sto",
                                       "arm26_StaticOptimization_controls.xml",
                                       "arm26_MuscleAnalysis_Length.sto",
                                       "arm26_MuscleAnalysis_MomentArm_r_elbow_flex.sto"} | {
        f"arm26_MuscleAnalysis_{k}.sto" for k in (*MUSCLE_ANALYSIS_FILES, "Moment_r_elbow_flex")}
    res, written = run_static_optimization_from_setup(setup, results_dir=tmp_path / "so")
    for f in written:
        if f.suffix == ".xml":      # the ControlSet: the same bytes
            assert (tmp_path / "analyze" / f.name).read_bytes() == f.read_bytes()
            continue
        a, b = read_sto(tmp_path / "analyze" / f.name), read_sto(f)
        assert a.labels == b.labels
        np.testing.assert_array_equal(a.time, b.time)
        np.testing.assert_array_equal(a.data, b.data)
    a = read_sto(tmp_path / "analyze" / "arm26_StaticOptimization_activation.sto")
    ref = read_sto(SO_REF / "SO_phys" / "arm26_StaticOptimization_activation.sto")
    rows = step_rows(read_sto(ARM_IK).time, res.time, 5, True)
    assert 2 < len(a.time) < 121 and a.labels == ref.labels
    assert np.abs(a.data - ref.data[rows]).max() < 5e-3


@needs_data
def test_joint_reactions_on_a_setup_run(tmp_path):
    """``arthron so --setup ... --joint-reactions`` writes ``<name>_JointReaction_ReactionLoads.sto``
    with the solved forces applied directly, at the frames of step_interval; it equals
    ``arthron jr`` on the force file written beside it (to the file's printed digits)."""
    import os
    from arthron.io.sto import read_sto
    from arthron.tools.analyze_tool import run_joint_reaction
    setup = _arm26_analyze_setup(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, "-m", "arthron.cli", "so", "--setup", str(setup), "--joint-reactions"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "arm26_JointReaction_ReactionLoads.sto" in r.stdout
    jr = read_sto(tmp_path / "res" / "arm26_JointReaction_ReactionLoads.sto")
    forces = read_sto(tmp_path / "res" / "arm26_StaticOptimization_force.sto")
    np.testing.assert_array_equal(jr.time, forces.time)
    assert 2 < len(jr.time) < 121
    ref = run_joint_reaction(ARM_MODEL, ARM_IK, forces=forces, lowpass_hz=6, accelerations="forward",
                             time_range=(0.0, 1.0))
    keep = [int(np.argmin(np.abs(ref.time - t))) for t in jr.time]
    assert np.abs(ref.time[keep] - jr.time).max() < 1e-9
    assert jr.labels == ref.labels
    assert np.abs(jr.data - ref.to_table().data[keep]).max() < 1e-4 * np.abs(jr.data).max()


@needs_data
def test_use_model_force_set_false_gives_inverse_dynamics():
    """use_model_force_set=false: one CoordinateActuator (optimal force 1) per unconstrained
    coordinate replaces the muscles, so the controls are the inverse-dynamics generalized
    forces at the accelerations StaticOptimization meets. (OpenSim 4.6 crashes, segmentation
    fault, on this arm26 setup, so arthron's own inverse dynamics is the reference.) Those
    accelerations are the derivative of the speeds' spline (OpenSim's StaticOptimizationTarget),
    not the InverseDynamicsTool's second derivative of the coordinates' spline: q and q̇ are the
    ID tool's, q̈ differs slightly."""
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.multibody.kinematics import compile_model
    from arthron.solvers.inverse_dynamics import inverse_dynamics, run_inverse_dynamics
    from arthron.tools.static_optimization_tool import run_static_optimization
    model = read_osim(ARM_MODEL)
    res = run_static_optimization(model, ARM_IK, lowpass_hz=6, time_range=(0, 1), use_model_force_set=False)
    assert res.names == ["r_shoulder_elev_actuator", "r_elbow_flex_actuator"]     # OpenSim's names
    prob, tree = res.extra["problem"], compile_model(model)
    assert list(tree.coordinate_names) == ["r_shoulder_elev", "r_elbow_flex"]
    tau = inverse_dynamics(tree, prob.q, prob.qd, prob.qdd)
    idr = run_inverse_dynamics(model, read_sto(ARM_IK), lowpass_hz=6, time_range=(0, 1))
    tau_id = np.column_stack([idr.column(f"{c}_moment") for c in ("r_shoulder_elev", "r_elbow_flex")])
    # measured 6.8e-7 of the largest torque; a cubic (not quintic) speeds' spline gives 3.3e-6
    assert 1e-8 < np.abs(tau - tau_id).max() < 2e-6 * np.abs(tau_id).max()
    assert np.abs(res.activations - tau).max() < 1e-8 * (1 + np.abs(tau).max())


@needs_data
def test_emg_file_with_a_mapping_file(tmp_path):
    """EMG columns mapped to muscles by a ``column muscle`` file drive those muscles' bounds
    through ``run_load_sharing``; a malformed mapping line is an error naming file and line."""
    from arthron.errors import DataFileError
    from arthron.io.sto import write_sto
    from arthron.tables import Table
    from arthron.tools.load_sharing_tool import run_load_sharing
    te = np.linspace(-0.1, 1.1, 121)
    write_sto(tmp_path / "emg.sto", Table(name="emg", time=te, labels=["ch1", "ch2"],
                                          data=np.column_stack([0.3 + 0 * te, 0.02 + 0 * te]), in_degrees=False))
    (tmp_path / "map.txt").write_text("# channel muscle\nch1 BIClong\nch2 TRIlong\n")
    res = run_load_sharing(ARM_MODEL, ARM_IK, lowpass_hz=6, time_range=(0, 1), reserves=100.0,
                           use_muscle_physiology=False, emg=tmp_path / "emg.sto", emg_mapping=tmp_path / "map.txt")
    i = res.names.index("BIClong")
    from arthron.io.osim import read_osim
    f = res.forces[:, i] / read_osim(ARM_MODEL).forces["BIClong"].max_isometric_force
    assert np.all(f >= 0.3 * 0.3 - 1e-6) and np.all(f <= 0.7 * 0.3 + 1e-6)
    assert np.abs(res.residual).max() < 1e-6
    (tmp_path / "bad.txt").write_text("ch1 BIClong extra\n")
    with pytest.raises(DataFileError, match="line 1"):
        run_load_sharing(ARM_MODEL, ARM_IK, emg=tmp_path / "emg.sto", emg_mapping=tmp_path / "bad.txt")


@needs_data
def test_weighted_and_bounded_constraint_multipliers(tsm_elevation):
    """Multipliers as unknowns (Eq. 12 of Sarshari et al.): with a tiny weight the solution is
    OpenSim's (free multipliers); with a bound on one component it holds, the equations of
    motion still close with the muscles taking the difference, and the cost rises."""
    from arthron.solvers.load_sharing import solve_problem
    model, prob = tsm_elevation
    free = solve_problem(prob)
    tiny = solve_problem(prob, multiplier_weights=np.full(3, 1e-8))
    assert np.abs(tiny.activations - free.activations).max() < 1e-3     # w_μ μ² ≈ 1e-4 of the cost
    assert np.abs(tiny.multipliers - free.multipliers).max() < 1e-2 * np.abs(free.multipliers).max()
    k = int(np.argmax(np.abs(free.multipliers).max(axis=0)))
    cap = 0.8 * np.abs(free.multipliers[:, k]).max()
    lo, hi = np.full(3, -np.inf), np.full(3, np.inf)
    lo[k], hi[k] = -cap, cap
    bounded = solve_problem(prob, multiplier_weights=np.full(3, 1e-8), multiplier_bounds=(lo, hi))
    assert bounded.feasible.all() and np.abs(bounded.residual).max() < 1e-6
    assert np.abs(bounded.multipliers[:, k]).max() <= cap + 1e-6
    assert np.all(bounded.objective >= tiny.objective - 1e-9) and np.any(bounded.objective > tiny.objective + 1e-6)
    with pytest.raises(OptionError):
        solve_problem(prob, multiplier_weights=np.full(2, 1.0))


@needs_data
def test_opensim_mode_does_not_import_cvxpy():
    """cvxpy costs 2-3 s to import: the p = 2 path (and the cone, which calls Clarabel
    directly) never imports it."""
    code = ("import sys; from arthron.tools.static_optimization_tool import run_static_optimization as r; "
            f"r({str(ARM_MODEL)!r}, {str(ARM_IK)!r}, lowpass_hz=6); print('cvxpy' in sys.modules)")
    import os
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


@needs_data
def test_cli_infeasible_is_one_line_naming_time_and_reserve(tmp_path):
    import os
    from arthron.io.osim import read_osim, write_osim
    model = read_osim(ARM_MODEL)
    for n in ("BIClong", "BICshort", "BRA"):
        model.forces[n].max_isometric_force *= 0.02
    weak = tmp_path / "weak.osim"
    write_osim(weak, model)
    r = subprocess.run([sys.executable, "-m", "arthron.cli", "so", str(weak), str(ARM_IK), "--lowpass", "6",
                        "--no-physiology", "-o", str(tmp_path / "out")], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "infeasible" in r.stderr and "t = " in r.stderr and "r_elbow_flex" in r.stderr
    assert not (tmp_path / "out").exists()


@needs_data
def test_stability_cone_that_cannot_be_met_is_named(tsm_elevation):
    """A cone pointing against the reaction (the glenoid would have to pull the humerus): the
    muscles cannot turn the reaction around, and the frames are named by time."""
    from arthron.solvers.load_sharing import InfeasibleFrames
    from arthron.solvers.load_sharing_cone import StabilityCone, solve_with_stability_cone
    model, prob = tsm_elevation
    cone = StabilityCone("GlenoHumeral", "scapula", (-0.727, -0.055, -0.685), (5.0, 5.0))
    with pytest.raises(InfeasibleFrames, match="cannot be met at t = "):
        solve_with_stability_cone(model, prob, cone)
    res = solve_with_stability_cone(model, prob, cone, on_infeasible="ignore")
    assert (~res.feasible).sum() > 0


@needs_data
@needs_opensim
@pytest.mark.parametrize("case", ["arm26", "gait2354"])
def test_force_per_activation_is_opensims(case):
    """use_muscle_physiology: F̂ = F_max f_L f_V cos α at a rigid tendon equals OpenSim 4.6's
    ``Muscle::calcInextensibleTendonActiveFiberForce(s, 1)`` at the same q, q̇ (a few frames)."""
    import opensim as osim
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.solvers.load_sharing import build_problem
    osim.Logger.setLevelString("error")
    if case == "arm26":
        path, mot, tr = ARM_MODEL, read_sto(ARM_IK), (0, 1)
    else:
        path, mot, tr = GAIT_REF_MODEL, read_sto(GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot"), (0.5, 1.2)
    prob = build_problem(read_osim(path), mot, lowpass_hz=6, time_range=tr)
    om = osim.Model(str(path))
    s = om.initSystem()
    cs, ms = om.getCoordinateSet(), om.getMuscles()
    names = [ms.get(j).getName() for j in range(ms.getSize())]
    cols = [prob.names.index(n) for n in names]
    for k in (0, len(prob.time) // 2, len(prob.time) - 1):
        for i, c in enumerate(prob.coordinates):
            cs.get(c).setValue(s, prob.q[k, i], False)
            cs.get(c).setSpeedValue(s, prob.qd[k, i])
        om.realizeVelocity(s)
        f = np.array([ms.get(j).calcInextensibleTendonActiveFiberForce(s, 1.0) for j in range(ms.getSize())])
        assert np.abs(prob.force_per_control[k, cols] - f).max() < 1e-6 * f.max()


@needs_data
@needs_opensim
def test_activation_coordinate_actuators_are_optimized_as_opensim(tmp_path):
    """OpenSim's StaticOptimization optimizes an ActivationCoordinateActuator like any
    CoordinateActuator (its optimal force times its control): arm26 with one on the elbow and
    one on the shoulder (force_set_files appended), OpenSim 4.6 run here on the same setup,
    activations (muscles and the two actuators) within its 1e-2 tolerance on every frame."""
    import opensim as osim
    from conftest import ARM26
    from arthron.io.sto import read_sto
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    fs = tmp_path / "acts.xml"
    fs.write_text("""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><ForceSet name="acts"><objects>
<ActivationCoordinateActuator name="elbow_act"><coordinate>r_elbow_flex</coordinate>
<optimal_force>20</optimal_force><min_control>-inf</min_control><max_control>inf</max_control>
<activation_time_constant>0.01</activation_time_constant><default_activation>0.5</default_activation>
</ActivationCoordinateActuator>
<ActivationCoordinateActuator name="shoulder_act"><coordinate>r_shoulder_elev</coordinate>
<optimal_force>20</optimal_force><min_control>-inf</min_control><max_control>inf</max_control>
</ActivationCoordinateActuator>
</objects><groups /></ForceSet></OpenSimDocument>""")
    setup = tmp_path / "so.xml"
    setup.write_text(static_optimization_setup("arm", str(ARM26), str(ARM_IK), str(tmp_path / "osim"),
                                               0.0, 0.5, physiology=False, force_set=str(fs)))
    osim.Logger.setLevelString("error")
    osim.AnalyzeTool(str(setup)).run()
    ref = read_sto(tmp_path / "osim" / "arm_StaticOptimization_activation.sto")
    res, _ = run_static_optimization_from_setup(setup, results_dir=tmp_path / "ours")
    assert {"elbow_act", "shoulder_act"} <= set(res.names)
    a = ref.data[:, [ref.labels.index(n) for n in res.names]]
    assert len(ref.time) == len(res.time)
    assert np.abs(res.activations - a).max() < 1e-2
    k = res.names.index("elbow_act")
    assert np.abs(a[:, k]).max() > 0.01          # it carries load in both solutions (seen: 0.028)
    assert np.abs(res.residual).max() < 1e-6


@needs_data
@needs_opensim
def test_opensim_writes_its_last_iterate_where_ipopt_stops(tmp_path):
    """Where IPOPT stops (``optimizer_max_iterations`` reached, "Restoration failed"), OpenSim
    4.6's StaticOptimization logs "OPTIMIZATION FAILED" and still writes its last iterate;
    arthron solves each frame's problem exactly and writes the optimum, whatever the setup's
    iteration cap. On arm26 (0-0.2 s, 25 frames) with the cap at 2, OpenSim's activations are
    off the optimum by up to 0.53 and its objective 2.3-454 times arthron's, while arthron's output
    is the one OpenSim reaches with its default 100 iterations (within 5e-3). This is the
    mechanism behind the last frame of Model_Pose2Sim_muscles_flex with the feet deep in the
    floor (README, "Where arthron and OpenSim differ on purpose")."""
    import opensim as osim
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.solvers.load_sharing import build_problem
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    raw = (SO_REF / "setups" / "so_setup_nonphysiological.xml").read_text()
    raw = (raw.replace("<workdir>/arm26/results/SO_nonphys", "RESULTS")
              .replace("<workdir>/arm26/results/IK", str(SO_REF / "IK"))
              .replace("<workdir>/arm26", str(ARM26_TUT / "InverseKinematics"))
              .replace("<final_time>1</final_time>", "<final_time>0.2</final_time>"))
    osim.Logger.setLevelString("error")
    out = {}
    for cap in (2, 100):
        setup = tmp_path / f"so_{cap}.xml"
        setup.write_text(raw.replace("RESULTS", str(tmp_path / f"osim{cap}"))
                            .replace("<optimizer_max_iterations>100<", f"<optimizer_max_iterations>{cap}<"))
        osim.AnalyzeTool(str(setup)).run()
        ref = read_sto(tmp_path / f"osim{cap}" / "arm26_StaticOptimization_activation.sto")
        res, _ = run_static_optimization_from_setup(setup, results_dir=tmp_path / f"ours{cap}")
        out[cap] = (ref.data[:, [ref.labels.index(n) for n in res.names]], res)
    (a2, r2), (a100, r100) = out[2], out[100]
    assert len(r2.time) == a2.shape[0] == 25
    np.testing.assert_allclose(r2.activations, r100.activations, atol=1e-12)   # the cap changes nothing
    assert np.abs(r2.activations - a100).max() < 5e-3
    assert np.all(r2.objective <= (a100 ** 2).sum(axis=1) + 1e-12)
    # OpenSim's capped output: its last iterate, far from the optimum
    assert np.abs(a2 - a100).max() > 0.3
    ratio = (a2 ** 2).sum(axis=1) / r2.objective
    assert ratio.min() > 2 and np.median(ratio) > 20, ratio
    # both outputs still meet the equations of motion of arthron's problem (arthron's exactly)
    prob = build_problem(read_osim(ARM_MODEL), read_sto(ARM_IK), lowpass_hz=6, time_range=(0, 0.2),
                         use_muscle_physiology=False)
    A, b, _ = prob.reduced()
    assert np.abs(np.einsum("trn,tn->tr", A, r2.activations) - b).max() < 1e-8
    assert np.abs(np.einsum("trn,tn->tr", A, a2) - b).max() < 1e-5


def _reserve_force_set(path, optimal_forces: dict):
    """Write a ForceSet file of a CoordinateActuator ``res_<coordinate>`` per entry of
    ``optimal_forces`` ({coordinate: optimal force}) at ``path``; returns the path."""
    reserves = "".join(f'<CoordinateActuator name="res_{c}"><coordinate>{c}</coordinate><optimal_force>'
                       f'{f}</optimal_force></CoordinateActuator>' for c, f in optimal_forces.items())
    path.write_text(f'<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="r"><objects>'
                    f'{reserves}</objects></ForceSet></OpenSimDocument>')
    return path


@needs_data
@needs_opensim
def test_lenhart_knee_with_ligaments_matches_opensim(tmp_path):
    """The Lenhart et al. (2015) full-body model (44 muscles over wrap objects, 76
    Blankevoort1991Ligament strands, a 6-DOF knee and patella: 52 coordinates; its plugin contact
    forces and meshes stripped so that plain OpenSim 4.6 loads it), a knee-flexion motion, a
    reserve on every coordinate: StaticOptimization without muscle physiology against OpenSim's
    run here. Activations within OpenSim's convergence tolerance (1e-2), the ligaments' records
    in the force file to the file's 8 decimals (known forces of the equations of motion), and
    arthron's objective at or below OpenSim's in every frame."""
    import re
    import opensim as osim
    from oracle import _cwd, _quiet
    from conftest import LENHART, static_optimization_setup
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto, write_sto
    from arthron.tables import Table
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    text = LENHART.read_text()
    text = re.sub(r"<(Smith2018\w+)\b[^>]*?/>", "", text)
    model_path = tmp_path / "lenhart_no_contact.osim"
    model_path.write_text(re.sub(r"<(Smith2018\w+)\b.*?</\1>", "", text, flags=re.S))
    model = read_osim(model_path)
    names = list(model.coordinates)
    t = np.linspace(0, 0.4, 21)
    Q = np.tile([c.default_value for c in model.coordinates.values()], (len(t), 1))
    Q[:, names.index("knee_flex_r")] = np.deg2rad(-10 - 40 * np.sin(np.pi * t / 0.4))
    Q[:, names.index("hip_flex_r")] = np.deg2rad(10 + 20 * np.sin(np.pi * t / 0.4))
    rot = np.array([c.motion_type == "rotational" for c in model.coordinates.values()])
    motion = tmp_path / "knee.mot"
    write_sto(motion, Table(name="knee", time=t, labels=names, data=np.where(rot, np.degrees(Q), Q),
                            in_degrees=True))
    force_set = _reserve_force_set(tmp_path / "reserves.xml", {c: 1000 if c.startswith("pelvis") else 100
                                                                for c in names})
    setup = tmp_path / "so.xml"
    setup.write_text(static_optimization_setup("len", model_path, motion, tmp_path / "osim", 0, 0.4,
                                               physiology=False, force_set=force_set))
    _quiet(osim)
    with _cwd(tmp_path):
        assert osim.AnalyzeTool(str(setup)).run()
    res, written = run_static_optimization_from_setup(setup, results_dir=tmp_path / "ours")
    a, b = (read_sto(d / "len_StaticOptimization_activation.sto") for d in (tmp_path / "osim", tmp_path / "ours"))
    assert a.labels == b.labels and len(a.labels) == 44 + 52 and np.array_equal(a.time, b.time)
    assert np.abs(a.data - b.data).max() < 1e-2
    theirs = (a.data ** 2).sum(axis=1)
    assert np.all(res.objective <= theirs * (1 + 1e-6) + 1e-9)
    assert np.abs(res.residual).max() < 1e-6
    fa, fb = (read_sto(d / "len_StaticOptimization_force.sto") for d in (tmp_path / "osim", tmp_path / "ours"))
    assert fa.labels == fb.labels
    lig = [k for k, lab in enumerate(fa.labels) if lab.split(".")[0] in model.forces
           and model.forces[lab.split(".")[0]].type == "Blankevoort1991Ligament"]
    assert len(lig) == 76 * 7     # force_spring, force_damping, force_total, length, lengthening_speed, strain, strain_rate
    assert np.abs(fa.data[:, lig] - fb.data[:, lig]).max() < 1e-8 + 1e-12 * np.abs(fa.data[:, lig]).max()


@needs_data
@needs_opensim
def test_constrained_model_where_opensim_fails_every_frame(tmp_path):
    """The Thoracoscapular model (ScapulothoracicJoint, AC PointConstraint) with a reserve on
    every coordinate: OpenSim 4.6's StaticOptimization asks every coordinate's acceleration to
    equal its spline's, which the constraint does not allow exactly, and IPOPT fails on every
    frame (measured: 101 of 101 frames "OPTIMIZATION FAILED" on this motion), writing its last
    iterate. arthron solves the equations of motion projected on the constraint's null space
    (multipliers eliminated): its residual is at rounding where OpenSim's output leaves
    newton-metres unmet."""
    import opensim as osim
    from oracle import _cwd, _quiet
    from conftest import TSM, static_optimization_setup, thoracoscapular_motion
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    motion = thoracoscapular_motion(tmp_path / "tsm.mot")
    model = read_osim(TSM)
    force_set = _reserve_force_set(tmp_path / "reserves.xml",
                                   {c: 50 for c, co in model.coordinates.items() if not co.locked})
    setup = tmp_path / "so.xml"
    setup.write_text(static_optimization_setup("tsm", TSM, motion, tmp_path / "osim", 0.45, 0.5,
                                               physiology=False, force_set=force_set))
    _quiet(osim)
    with _cwd(tmp_path):
        osim.AnalyzeTool(str(setup)).run()
    res, _ = run_static_optimization_from_setup(setup, results_dir=tmp_path / "ours")
    prob = res.extra["problem"]
    A, b, _ = prob.reduced()
    theirs = read_sto(tmp_path / "osim" / "tsm_StaticOptimization_activation.sto")
    assert np.allclose(theirs.time, res.time, atol=5e-9)     # (the file's 8 decimals)
    x = theirs.data[:, [theirs.labels.index(n) for n in prob.names]]
    unmet = np.abs(np.einsum("trn,tn->tr", A, x) - b).max(axis=1)
    ours = np.abs(np.einsum("trn,tn->tr", A, res.activations) - b).max(axis=1)
    assert res.feasible.all() and ours.max() < 1e-6
    assert unmet.min() > 1.0, unmet      # N·m: 60-73 measured on these frames
