"""The AnalyzeTool on a ``<states_file>`` against OpenSim 4.6 run in the test.

OpenSim writes the states files here: a forward simulation (its ``Manager``, a
``PrescribedController`` of constant excitations, ``getStatesTable`` written by the
``STOFileAdapter``) of arm26 (Thelen2003Muscle) and of gait10dof18musc (Millard2012EquilibriumMuscle),
and states of arm26 with its muscles converted to DeGrooteFregly2016Muscle and
Millard2012AccelerationMuscle (the forward run's coordinates and speeds, muscle states varied per
frame). Then OpenSim's AnalyzeTool and arthron's run the same setups and every file arthron
writes is compared with OpenSim's, column by column: the coordinates, speeds and muscle states
come from the file, the accelerations (Kinematics ``dudt``, BodyKinematics and PointKinematics
``acc``, and so the JointReaction loads) from forward dynamics with the muscles' forces at the
file's states. Tolerance: OpenSim writes 8 decimals (5e-9 of rounding), plus 1e-10 of each
column's largest value for the accelerations (up to 1e5 deg/s² here). OpenSim's runs are cached
per module.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from arthron.errors import ArthronWarning, DataFileError, UnsupportedFeature
from arthron.io.sto import read_sto
from arthron.tools.analyze_tool import run_analyze

from conftest import ARM26, DATA, needs_data, needs_opensim

GAIT10 = DATA / "opensim-models-legacy" / "gait10dof18musc_v30000.osim"

KIN = """<Kinematics name="Kinematics"><on>true</on><step_interval>1</step_interval>
<in_degrees>true</in_degrees><coordinates>all</coordinates></Kinematics>"""
BODY = """<BodyKinematics name="BodyKinematics"><on>true</on><step_interval>1</step_interval>
<in_degrees>true</in_degrees><bodies>all</bodies></BodyKinematics>"""
POINT = """<PointKinematics name="PointKinematics"><on>true</on><step_interval>{n}</step_interval>
<body_name>{body}</body_name><relative_to_body_name>{rel}</relative_to_body_name>
<point_name>p</point_name><point>0.01 -0.02 0.03</point></PointKinematics>"""
MUSCLE = """<MuscleAnalysis name="MuscleAnalysis"><on>true</on><step_interval>1</step_interval>
<muscle_list>all</muscle_list><moment_arm_coordinate_list>all</moment_arm_coordinate_list>
<compute_moments>true</compute_moments></MuscleAnalysis>"""
JR = """<JointReaction name="JointReaction"><on>true</on><step_interval>1</step_interval>
<forces_file /><joint_names>ALL</joint_names><apply_on_bodies>child</apply_on_bodies>
<express_in_frame>ground</express_in_frame></JointReaction>"""
SO = """<StaticOptimization name="StaticOptimization"><on>true</on><step_interval>{n}</step_interval>
<use_model_force_set>true</use_model_force_set><activation_exponent>2</activation_exponent>
<use_muscle_physiology>true</use_muscle_physiology>
<optimizer_convergence_criterion>0.0001</optimizer_convergence_criterion></StaticOptimization>"""


ACTUATOR = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><ForceSet name="acts"><objects>
<CoordinateActuator name="elbow_act"><coordinate>r_elbow_flex</coordinate><optimal_force>100</optimal_force>
<min_control>-10</min_control><max_control>10</max_control></CoordinateActuator>
</objects><groups /></ForceSet></OpenSimDocument>
"""


def _setup(folder: Path, name, model, states, analyses, *, t0=0, t1=10, extra="") -> Path:
    """An AnalyzeTool setup in ``folder`` (results in osim_<name>); t0 = None: no
    initial_time / final_time elements."""
    f = folder / f"{name}_setup.xml"
    times = "" if t0 is None else f"<initial_time>{t0}</initial_time><final_time>{t1}</final_time>"
    f.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="{name}">
  <model_file>{model}</model_file>
  <results_directory>osim_{name}</results_directory>
  {times}{extra}
  <AnalysisSet name="Analyses"><objects>{''.join(analyses)}</objects></AnalysisSet>
  <states_file>{states}</states_file>
</AnalyzeTool></OpenSimDocument>""")
    return f


def _run_opensim(setup: Path):
    import opensim
    cwd = os.getcwd()
    os.chdir(setup.parent)                 # opensim.log goes beside the setup
    try:
        opensim.AnalyzeTool(str(setup)).run()
    finally:
        os.chdir(cwd)


def _forward(model_path, out: Path, t_end: float, accuracy: float) -> Path:
    """OpenSim's forward simulation of ``model_path`` from its equilibrated default state under
    constant excitations (0.2, 0.23, ...), its states written as OpenSim 4.6 writes them."""
    import opensim
    m = opensim.Model(str(model_path))
    pc = opensim.PrescribedController()
    ms = m.getMuscles()
    for i in range(ms.getSize()):
        pc.addActuator(ms.get(i))
        pc.prescribeControlForActuator(ms.get(i).getName(), opensim.Constant(0.2 + 0.03 * i))
    m.addController(pc)
    s = m.initSystem()
    m.equilibrateMuscles(s)
    mgr = opensim.Manager(m)
    mgr.setIntegratorAccuracy(accuracy)
    s.setTime(0)
    mgr.initialize(s)
    mgr.integrate(t_end)
    opensim.STOFileAdapter.write(mgr.getStatesTable(), str(out))
    return out


def _relabel(src: Path, out: Path, rename=None, drop=(), add=(), header=None) -> Path:
    """A copy of the states file ``src`` with labels renamed (``rename(label)``), columns
    dropped (labels containing one of ``drop``), columns added (``(label, source label)``),
    header lines replaced (``header(line)``)."""
    lines = src.read_text().splitlines()
    h = lines.index("endheader")
    labels = lines[h + 1].split("\t")
    rows = [r.split("\t") for r in lines[h + 2:]]
    keep = [k for k, lab in enumerate(labels) if not any(d in lab for d in drop)]
    new_labels = [rename(labels[k]) if rename and k else labels[k] for k in keep] + [a for a, _ in add]
    cols = keep + [labels.index(b) for _, b in add]
    head = [f"nColumns={len(cols)}" if x.startswith("nColumns") else x for x in lines[:h + 1]]
    head = [header(x) for x in head] if header else head
    out.write_text("\n".join(head + ["\t".join(new_labels)] + ["\t".join(r[c] for c in cols) for r in rows]) + "\n")
    return out


def _shifted(src: Path, out: Path, dt: float) -> Path:
    """A copy of the states file ``src`` with its times moved by ``dt`` s."""
    lines = src.read_text().splitlines()
    h = lines.index("endheader")
    rows = [r.split("\t") for r in lines[h + 2:]]
    out.write_text("\n".join(lines[:h + 2] + ["\t".join([repr(float(r[0]) + dt)] + r[1:]) for r in rows]) + "\n")
    return out


def _short_label(lab: str) -> str:
    """OpenSim 3.x's label of a 4.x state path: ``coord``, ``coord_u``, ``muscle.state``."""
    p = lab.strip("/").split("/")
    if p[0] == "jointset":
        return p[2] if p[3] == "value" else p[2] + "_u"
    return f"{p[1]}.{p[2]}"


def _converted_states(model_path, arm_states: Path, out: Path) -> Path:
    """States of a converted arm26: the forward run's coordinates and speeds, each muscle state
    OpenSim gives the model varied smoothly over the frames (activations 0.1..0.6, fiber lengths
    0.6..1.1 l_opt, fiber velocities ±0.1 m/s, normalized tendon forces 0.1..0.7)."""
    import opensim
    m = opensim.Model(str(model_path))
    m.initSystem()
    names = [m.getStateVariableNames().get(i) for i in range(m.getNumStateVariables())]
    tab = read_sto(arm_states)
    x = (tab.time - tab.time[0]) / (tab.time[-1] - tab.time[0])
    cols = []
    for n in names:
        if n.startswith("/jointset/"):
            cols.append(tab.data[:, tab.labels.index(n)])
            continue
        _, _, musc, state = n.split("/")
        k = m.getMuscles().getIndex(musc)
        lopt = m.getMuscles().get(musc).getOptimalFiberLength()
        cols.append({"activation": 0.1 + 0.5 * x * (1 + k) / 6,
                     "fiber_length": lopt * (0.6 + 0.5 * x ** (1 + k % 3)),
                     "fiber_velocity": 0.1 * np.sin(3 * x + k),
                     "normalized_tendon_force": 0.1 + 0.6 * x * (1 + k) / 6}[state])
    data = np.column_stack(cols)
    lines = ["states", "inDegrees=no", f"nColumns={len(names) + 1}", f"nRows={len(x)}", "endheader",
             "\t".join(["time", *names])]
    lines += ["\t".join(f"{v:.17g}" for v in (t, *row)) for t, row in zip(tab.time, data)]
    out.write_text("\n".join(lines) + "\n")
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """OpenSim 4.6's states files and AnalyzeTool results, computed once: {name: setup}."""
    if not (DATA.is_dir() and GAIT10.exists()):
        pytest.skip("../shared/data is absent")
    pytest.importorskip("opensim")
    import opensim
    opensim.Logger.setLevelString("error")
    d = tmp_path_factory.mktemp("states")
    arm = _forward(ARM26, d / "arm_states.sto", 0.3, 1e-6)
    gait = _forward(GAIT10, d / "gait_states.sto", 0.05, 1e-5)
    from test_muscle_states import CONVERT
    setups = {
        "arm": _setup(d, "arm", ARM26, arm.name, [
            KIN, BODY, POINT.format(n=4, body="r_ulna_radius_hand", rel="r_humerus"), MUSCLE, JR],
            t0=0.05, t1=0.25),
        "short": _setup(d, "short", ARM26, _relabel(arm, d / "short.sto", _short_label).name, [KIN, JR]),
        "nofib": _setup(d, "nofib", ARM26, _relabel(arm, d / "nofib.sto", drop=("fiber_length",)).name,
                        [KIN, JR]),
        "unknown": _setup(d, "unknown", ARM26, _relabel(
            arm, d / "unknown.sto", add=[("/forceset/FOO/activation", "/forceset/BRA/activation")]).name,
            [KIN, JR]),
        "nocoord": _setup(d, "nocoord", ARM26, _relabel(arm, d / "nocoord.sto", drop=("/jointset/",)).name,
                          [KIN]),
        "so": _setup(d, "so", ARM26, arm.name, [SO.format(n=3)], t0=0.02, t1=0.28),
        "late": _setup(d, "late", ARM26, _shifted(arm, d / "late.sto", 0.85).name, [KIN], t0=None),
        "gait": _setup(d, "gait", GAIT10, gait.name, [
            KIN, BODY, POINT.format(n=3, body="calcn_r", rel="pelvis"), MUSCLE, JR]),
    }
    for kind, convert in CONVERT.items():
        model = convert(d)
        states = _converted_states(model, arm, d / f"{kind}_states.sto")
        setups[kind] = _setup(d, kind, model.name, states.name, [KIN, JR])
    for s in setups.values():
        _run_opensim(s)
    jr = JR.replace("<forces_file />", "<forces_file>osim_so/so_StaticOptimization_force.sto</forces_file>")
    jr = jr.replace("<step_interval>1", "<step_interval>2").replace(">child<", ">parent<").replace(">ground<", ">child<")
    setups["jrf"] = _setup(d, "jrf", ARM26, arm.name, [jr, KIN], t0=0.02, t1=0.28)
    _run_opensim(setups["jrf"])
    return setups


def _compare(files, ref_dir: Path, rtol_acc=1e-10) -> float:
    """Every file as OpenSim's of the same name: labels, times, values to 1e-8 (OpenSim's 8
    decimals) plus ``rtol_acc`` of the column's largest value. Returns the worst difference."""
    worst = 0.0
    for f in files:
        ref, got = read_sto(ref_dir / f.name), read_sto(f)
        assert (got.labels, got.in_degrees) == (ref.labels, ref.in_degrees), f.name
        np.testing.assert_allclose(got.time, ref.time, rtol=0, atol=1e-8)
        d = np.abs(got.data - ref.data)
        tol = 1e-8 + rtol_acc * np.abs(ref.data).max(axis=0)
        assert (d <= tol).all(), (f.name, ref.labels[int(np.argmax((d - tol).max(axis=0)))], d.max())
        worst = max(worst, float(d.max()))
    return worst


def _arthron(setup: Path, **kw):
    return run_analyze(setup, results_dir=setup.parent / f"arthron_{setup.stem}", **kw)


@needs_data
@needs_opensim
def test_arm26_forward_simulation_states_every_column_as_opensim(runs):
    """arm26's forward simulation (Thelen2003Muscle: the tendon force at the file's fiber
    lengths), analyses from 0.05 to 0.25 s: Kinematics, BodyKinematics, PointKinematics with
    step_interval 4 (the file's rows are not evenly spaced: the rows kept are those whose index
    in the file is a multiple of 4), MuscleAnalysis (lengths, moment arms and, since arthron
    writes them, the 17 fiber, tendon, force and power files and the 2 moment files OpenSim
    writes: 13 + 19 files), JointReaction of every joint without a forces file. Every column as OpenSim's (measured worst 1.3e-8 deg/s²
    on accelerations of 300 deg/s², 5e-9 elsewhere); q and u are the file's, not splined."""
    setup = runs["arm"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # every state given, every column known
        files = _arthron(setup)
    ref_dir = setup.parent / "osim_arm"
    assert {f.name for f in files} <= {p.name for p in ref_dir.iterdir()}
    assert len(files) == 13 + 19 and "arm_JointReaction_ReactionLoads.sto" in {f.name for f in files}
    assert _compare(files, ref_dir) < 1e-7
    q = read_sto(ref_dir / "arm_Kinematics_u.sto")
    st = read_sto(setup.parent / "arm_states.sto")
    rows = np.searchsorted(st.time, q.time - 1e-8)
    np.testing.assert_allclose(q.data[:, 1], np.degrees(st.column("/jointset/r_elbow/r_elbow_flex/speed")[rows]),
                               atol=1e-8)
    assert q.time[0] <= 0.05 < q.time[1] and q.time[-1] <= 0.25
    p = read_sto(setup.parent / "arthron_arm_setup" / "arm_PointKinematics_p_acc.sto")
    assert 3 < len(p.time) < len(q.time) / 3


@needs_data
@needs_opensim
@pytest.mark.parametrize("name", ["short", "nofib", "unknown"])
def test_labels_missing_and_unknown_columns_as_opensim(runs, name):
    """OpenSim 3.x labels (``r_elbow_flex``, ``r_elbow_flex_u``, ``BRA.fiber_length``) read as
    the 4.x paths; fiber lengths absent: the muscles at their default fiber lengths (OpenSim's
    formStateStorage fills a missing state with its default), named in a warning; a column naming
    no state: ignored (OpenSim silently), named in a warning. Results as OpenSim's."""
    setup = runs[name]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        files = _arthron(setup)
    said = " ".join(str(w.message) for w in rec if issubclass(w.category, ArthronWarning))
    if name == "short":
        assert said == ""
    elif name == "nofib":
        assert f"{name}.sto" in said and "/forceset/BRA/fiber_length" in said and "default" in said
    else:
        assert f"{name}.sto" in said and "/forceset/FOO/activation" in said and "ignored" in said
    assert _compare(files, setup.parent / f"osim_{name}") < 1e-7
    if name == "nofib":            # the file's fiber lengths matter: other accelerations
        a = read_sto(setup.parent / "osim_nofib" / "nofib_Kinematics_dudt.sto").data
        b = read_sto(setup.parent / "osim_short" / "short_Kinematics_dudt.sto").data
        assert np.abs(a - b).max() > 1e3


@needs_data
@needs_opensim
def test_gait10dof_millard_forward_simulation_as_opensim(runs):
    """gait10dof18musc's forward simulation (18 Millard2012EquilibriumMuscles, elastic tendons:
    the tendon curve at the file's fiber lengths; a 3.0 model file): every column of the
    kinematics analyses, the MuscleAnalysis and the JointReaction as OpenSim's (measured worst
    4.9e-7 deg/s² on accelerations of 4.4e4 deg/s², 5e-9 elsewhere)."""
    setup = runs["gait"]
    files = _arthron(setup)
    assert len(files) >= 14
    assert _compare(files, setup.parent / "osim_gait") < 1e-6


@needs_data
@needs_opensim
@pytest.mark.parametrize("kind", ["DeGrooteFregly2016Muscle", "Millard2012AccelerationMuscle"])
def test_converted_arm26_states_per_frame_as_opensim(runs, kind):
    """arm26 with its muscles converted (DeGrooteFregly2016Muscle: some rigid tendons, so both
    the normalized tendon force and the activation states drive the force;
    Millard2012AccelerationMuscle: fiber length and fiber velocity), every muscle state varied
    over the frames: Kinematics (its dudt) and JointReaction as OpenSim's (measured worst 5e-9,
    and 1.2e-7 deg/s² on Millard2012AccelerationMuscle accelerations of 1.1e6 deg/s²)."""
    setup = runs[kind]
    files = _arthron(setup)
    assert _compare(files, setup.parent / f"osim_{kind}") < 1e-6


@needs_data
@needs_opensim
def test_no_coordinate_column_is_refused_naming_the_file(runs):
    """A states file without any coordinate column: OpenSim runs at the model's default pose
    (its q file holds the default values); arthron refuses it, naming the file."""
    setup = runs["nocoord"]
    q = read_sto(setup.parent / "osim_nocoord" / "nocoord_Kinematics_q.sto")
    assert np.abs(q.data).max() == 0.0                   # arm26's defaults are 0
    with pytest.raises(DataFileError, match="no column gives a coordinate") as e:
        _arthron(setup)
    assert "nocoord.sto" in str(e.value)
    assert not (setup.parent / "arthron_nocoord_setup").exists()


@needs_data
@needs_opensim
def test_degrees_and_equilibration_are_refused_controls_ignored(runs):
    """In degrees: refused (OpenSim too: 'Input Storage must have values for Coordinates in
    meters or radians'). solve_for_equilibrium_for_auxiliary_states: UnsupportedFeature naming
    the setup; a controls_file: ignored with a warning, as OpenSim 4.6's AnalyzeTool ignores it."""
    d = runs["arm"].parent
    deg = _relabel(d / "arm_states.sto", d / "deg.sto",
                   header=lambda x: "inDegrees=yes" if x.startswith("inDegrees") else x)
    setup = _setup(d, "deg", ARM26, deg.name, [KIN])
    with pytest.raises(DataFileError, match="radians") as e:
        _arthron(setup)
    assert "deg.sto" in str(e.value)
    with pytest.raises(Exception, match="radians"):
        _run_opensim(setup)
    eq = _setup(d, "eq", ARM26, "arm_states.sto", [KIN],
                extra="<solve_for_equilibrium_for_auxiliary_states>true</solve_for_equilibrium_for_auxiliary_states>")
    with pytest.raises(UnsupportedFeature, match="solve_for_equilibrium_for_auxiliary_states") as e:
        _arthron(eq)
    assert "eq_setup.xml" in str(e.value)
    # an elbow CoordinateActuator (100 N·m per unit control) and controls of 1: OpenSim 4.6's
    # AnalyzeTool ignores the controls file (the actuator pulls at control 0), arthron too
    (d / "act.xml").write_text(ACTUATOR)
    (d / "ctl.sto").write_text("controls\nversion=1\nnRows=2\nnColumns=2\ninDegrees=no\nendheader\n"
                               "time\telbow_act\n0\t1\n1\t1\n")
    ctl = _setup(d, "ctl", ARM26, "arm_states.sto", [KIN],
                 extra="<force_set_files>act.xml</force_set_files><controls_file>ctl.sto</controls_file>")
    _run_opensim(ctl)
    with pytest.warns(ArthronWarning, match="controls_file> is ignored"):
        files = _arthron(ctl)
    assert _compare(files, d / "osim_ctl") < 1e-7
    ref = read_sto(d / "osim_short" / "short_Kinematics_dudt.sto")
    np.testing.assert_allclose(read_sto(d / "osim_ctl" / "ctl_Kinematics_dudt.sto").data, ref.data, atol=1e-7)


@needs_data
@needs_opensim
def test_cli_analyze_setup_on_a_states_file(runs, tmp_path, capsys):
    """``arthron analyze --setup`` on a states-file setup writes OpenSim's files."""
    from arthron.cli import main
    setup = runs["short"]
    assert main(["analyze", "--setup", str(setup), "--output-dir", str(tmp_path / "out")]) == 0
    files = sorted((tmp_path / "out").iterdir())
    assert [f.name for f in files] == ["short_JointReaction_ReactionLoads.sto", "short_Kinematics_dudt.sto",
                                       "short_Kinematics_q.sto", "short_Kinematics_u.sto"]
    assert _compare(files, setup.parent / "osim_short") < 1e-7


@needs_data
@needs_opensim
def test_setup_without_times_runs_from_0_to_1_s_as_opensim(runs):
    """A setup with neither initial_time nor final_time: OpenSim 4.6 takes its defaults, 0 and
    1 s (not the whole file): states from 0.85 to 1.15 s give rows up to 1 s only, in OpenSim
    and in arthron."""
    setup = runs["late"]
    files = _arthron(setup)
    q = read_sto(setup.parent / "osim_late" / "late_Kinematics_q.sto")
    assert q.time[0] == pytest.approx(0.85) and 0.99 < q.time[-1] <= 1.0
    assert _compare(files, setup.parent / "osim_late") < 1e-7


@needs_data
@needs_opensim
def test_static_optimization_on_a_states_file_as_opensim(runs):
    """StaticOptimization (muscle physiology, step_interval 3) on arm26's forward-simulation
    states from 0.02 to 0.28 s: OpenSim meets the derivatives of quintic GCVSplines of the file's
    speeds over all its rows, and so does arthron: the generalized forces of the two tools'
    muscle forces agree to 3e-10 N·m of 0.6 (splines of the rows in the time range alone give
    differences of 3e-3); arthron's objective (sum of squared activations) is at or below
    OpenSim's at every frame (OpenSim's IPOPT, convergence criterion 1e-4, stops 1–18 % above it
    on these activations of 0.01–0.1), activations within 5.2e-3."""
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.paths import compile_paths, path_generalized_forces
    from arthron.solvers.states_file import states_from_table
    setup = runs["so"]
    files = _arthron(setup)
    assert sorted(f.name for f in files) == ["so_StaticOptimization_activation.sto",
                                             "so_StaticOptimization_controls.xml",
                                             "so_StaticOptimization_force.sto"]
    model = read_osim(ARM26)
    tree = compile_model(model)
    states = states_from_table(model, read_sto(setup.parent / "arm_states.sto"))
    paths = compile_paths(model, tree, forces=list(model.muscles))
    tau, act = [], []
    for d in (setup.parent / "osim_so", files[0].parent):
        f = read_sto(d / "so_StaticOptimization_force.sto")
        rows = np.searchsorted(states.time, f.time - 1e-7)
        assert np.abs(states.time[rows] - f.time).max() < 1e-8
        tau.append(path_generalized_forces(paths, tree, states.q[rows],
                                           f.data[:, [f.labels.index(m) for m in model.muscles]]))
        act.append(read_sto(d / "so_StaticOptimization_activation.sto"))
    assert np.abs(tau[0] - tau[1]).max() < 1e-7 and np.abs(tau[0]).max() > 0.3
    ref, got = act
    assert got.labels == ref.labels and len(got.time) == len(ref.time) > 15
    np.testing.assert_allclose(got.time, ref.time, atol=1e-8)
    assert ((got.data ** 2).sum(axis=1) <= (ref.data ** 2).sum(axis=1) + 1e-9).all()
    assert np.abs(got.data - ref.data).max() < 6e-3


@needs_data
@needs_opensim
def test_joint_reaction_with_a_forces_file_on_a_states_file_as_opensim(runs):
    """A JointReaction whose forces_file is OpenSim's StaticOptimization forces, on the states
    file (every joint, on the parent, in the child frame, step_interval 2) beside a Kinematics:
    every column as OpenSim's (measured 5e-9)."""
    setup = runs["jrf"]
    files = _arthron(setup)
    assert len(files) == 4
    assert _compare(files, setup.parent / "osim_jrf") < 1e-7
