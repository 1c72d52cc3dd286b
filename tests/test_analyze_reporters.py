"""The AnalyzeTool's ForceReporter and MuscleAnalysis files against OpenSim 4.6 run in the test.

OpenSim 4.6's AnalyzeTool and arthron's run the same setups on arm26 (Thelen2003Muscle, plus a
CoordinateActuator from a force set file): once on the IK coordinates file (muscles at their
default, unequilibrated states) and once on the states file of a short forward simulation
OpenSim writes here (muscles at the file's fiber lengths; the helpers of
tests/test_analyze_states_file.py). Every file arthron writes is compared with OpenSim's of the
same name, every column: OpenSim prints 8 decimals, so 1e-8 absolute plus 1e-10 of each
column's largest value (forces of 1e4 N, powers of 1e7 W: rounding of the solvers' sums).
OpenSim's runs are made once per module.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from arthron.errors import ArthronWarning
from arthron.io.sto import read_sto
from arthron.tools.analyze_tool import run_analyze

from conftest import ARM26, DATA, GAIT_PIPE, GAIT_REF_MODEL, REF, needs_data, needs_opensim
from test_analyze_states_file import ACTUATOR, _compare, _converted_states, _forward, _run_opensim, _setup
from test_muscle_states import CONVERT, arm26_replaced

IK = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"
FR = """<ForceReporter name="ForceReporter"><on>true</on><step_interval>{n}</step_interval>
<include_constraint_forces>{c}</include_constraint_forces></ForceReporter>"""
MA = """<MuscleAnalysis name="{name}"><on>true</on><step_interval>{n}</step_interval>
<muscle_list>{muscles}</muscle_list><moment_arm_coordinate_list>all</moment_arm_coordinate_list>
<compute_moments>{moments}</compute_moments></MuscleAnalysis>"""


#: the files OpenSim 4.6's MuscleAnalysis writes that arthron writes for Thelen2003Muscle
THELEN_FILES = {"Length", "FiberLength", "NormalizedFiberLength", "PennationAngle", "TendonLength",
                "TendonForce", "FiberForce", "ActiveFiberForce", "PassiveFiberForce",
                "ActiveFiberForceAlongTendon", "PassiveFiberForceAlongTendon", "MuscleActuatorPower",
                "FiberVelocity", "NormFiberVelocity", "PennationAngularVelocity", "FiberActivePower",
                "FiberPassivePower", "TendonPower"}


def _coordinates_setup(folder: Path, name, model, motion, analyses, *, t0, t1, extra="") -> Path:
    """An AnalyzeTool setup on a coordinates file (results in osim_<name>)."""
    f = folder / f"{name}_setup.xml"
    f.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="{name}">
  <model_file>{model}</model_file><results_directory>osim_{name}</results_directory>
  <initial_time>{t0}</initial_time><final_time>{t1}</final_time>{extra}
  <AnalysisSet name="Analyses"><objects>{''.join(analyses)}</objects></AnalysisSet>
  <coordinates_file>{motion}</coordinates_file>
</AnalyzeTool></OpenSimDocument>""")
    return f


def _millard_equilibrium_arm26(folder):
    """arm26 with Millard2012EquilibriumMuscles of the Thelen muscles' parameters and paths:
    default fiber lengths 0.6..1.1 l_opt, every other one with a rigid tendon, fiber damping
    0 (the inverse force-velocity curve) .. 0.1 (damped equilibrium)."""
    def make(opensim, th, i):
        a = opensim.Millard2012EquilibriumMuscle(
            th.getName(), th.getMaxIsometricForce(), th.getOptimalFiberLength(),
            th.getTendonSlackLength(), th.getPennationAngleAtOptimalFiberLength())
        a.set_default_fiber_length(th.getOptimalFiberLength() * (0.6 + 0.1 * i))
        a.set_ignore_tendon_compliance(i % 2 == 1)
        a.set_fiber_damping(0.02 * i)
        return a
    return arm26_replaced(folder, "arm26_millard_equilibrium.osim", make)


def _millard_acceleration_compressive_arm26(folder):
    """arm26's Millard2012AccelerationMuscles (tests/test_muscle_states.py) with their fiber
    compressive curves engaged at the default states: TRIlong pennated (0.6 rad) at 85° from
    the tendon (its cos-pennation curve engaged at 80°), TRIlat and TRImed at 0.4 and 0.5 l_opt
    (compressive length curve to 0.5 and, its slope and curviness set, 0.6 l_opt); masses,
    fiber and compressive dampings varied."""
    import opensim
    m = opensim.Model(str(CONVERT["Millard2012AccelerationMuscle"](folder)))
    ms = m.updMuscles()
    for i in range(ms.getSize()):
        a = opensim.Millard2012AccelerationMuscle.safeDownCast(ms.get(i))
        lopt = a.getOptimalFiberLength()
        if i == 0:
            a.set_pennation_angle_at_optimal(0.6)
            a.set_default_fiber_length(0.567 * lopt)
            a.upd_FiberCompressiveForceCosPennationCurve().set_engagement_angle_in_degrees(80)
        elif i in (1, 2):
            a.set_default_fiber_length((0.3 + 0.1 * i) * lopt)
        if i == 2:
            c = a.upd_FiberCompressiveForceLengthCurve()
            c.setOptionalProperties(-4.5, 0.7)
            c.set_norm_length_at_zero_force(0.6)
        a.set_mass(0.05 * (i + 1))
        a.set_fiber_damping(0.02 * i)
        a.set_fiber_compressive_force_length_damping(0.3 * i)
        a.set_fiber_compressive_force_cos_pennation_damping(0.5)
        a.set_fiber_force_length_damping(0.05)
        a.set_tendon_force_length_damping(0.2)
        a.set_default_activation(0.1 * i)
    path = folder / "arm26_millard_acceleration_compressive.osim"
    m.printToXML(str(path))
    return path


#: the MuscleAnalysis files arthron writes per class of the converted arm26 (TendonForce and the
#: moments for every class)
CONVERTED_FILES = {
    "Millard2012EquilibriumMuscle": set(THELEN_FILES) - {"Length", "TendonForce"},
    "Millard2012AccelerationMuscle": set(THELEN_FILES) - {"Length", "TendonForce"},
    "DeGrooteFregly2016Muscle": set(THELEN_FILES) - {"Length", "TendonForce"},
}


#: MuscleAnalysis setups of the moment-arm coordinate list: (name, model, motion, muscle_list,
#: moment_arm_coordinate_list)
COORDINATE_LISTS = [("arm_bra_all", "arm26", IK, "BRA", "all"),
                    ("walk_two_all", "walk", None, "soleus_r tib_ant_r", "all"),
                    ("walk_one_list", "walk", None, "soleus_r",
                     "pelvis_tx hip_flexion_r mtp_angle_r lumbar_extension subtalar_angle_l")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """OpenSim 4.6's results on the setups, computed once: {name: setup}."""
    if not (DATA.is_dir() and IK.exists()):
        pytest.skip("../shared/data is absent")
    pytest.importorskip("opensim")
    import opensim
    opensim.Logger.setLevelString("error")
    d = tmp_path_factory.mktemp("reporters")
    (d / "acts.xml").write_text(ACTUATOR)
    acts = "<force_set_files>acts.xml</force_set_files>"
    states = _forward(ARM26, d / "arm_states.sto", 0.1, 1e-5)
    setups = {
        "coords": _coordinates_setup(d, "coords", ARM26, IK, [
            FR.format(n=1, c="true"), MA.format(name="MuscleAnalysis", n=1, muscles="all", moments="true")],
            t0=0.1, t1=0.6, extra=acts),
        "coords_step": _coordinates_setup(d, "coords_step", ARM26, IK, [
            FR.format(n=3, c="false").replace('"ForceReporter"', '"FR"'),
            MA.format(name="MA", n=4, muscles="BIClong TRIlong BRA", moments="false")],
            t0=0, t1=1, extra="<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>"),
        "states": _setup(d, "states", ARM26, states.name, [
            FR.format(n=1, c="false"), MA.format(name="MuscleAnalysis", n=2, muscles="all", moments="true")],
            t0=0.01, t1=0.09, extra=acts),
    }
    setups["walk"] = _coordinates_setup(
        d, "walk", GAIT_REF_MODEL, GAIT_PIPE / "subject01_walk1_ik.mot", [FR.format(n=2, c="false")],
        t0=0.6, t1=0.9, extra=f"<external_loads_file>{GAIT_PIPE / 'subject01_walk1_grf.xml'}</external_loads_file>"
                               "<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>")
    walk = GAIT_PIPE / "subject01_walk1_ik.mot"
    for name, model, motion, muscles, coords in COORDINATE_LISTS:
        ma = MA.format(name="MA", n=1, muscles=muscles, moments="true").replace(
            "<moment_arm_coordinate_list>all", f"<moment_arm_coordinate_list>{coords}")
        setups[name] = _coordinates_setup(d, name, {"arm26": ARM26, "walk": GAIT_REF_MODEL}[model],
                                          {"arm26": IK, "walk": walk}[model], [ma], t0=0.6, t1=0.7)
    convert = dict(CONVERT, Millard2012EquilibriumMuscle=_millard_equilibrium_arm26)
    convert["Millard2012AccelerationMuscle_compressive"] = _millard_acceleration_compressive_arm26
    for kind in [*CONVERTED_FILES, "Millard2012AccelerationMuscle_compressive"]:
        model = convert[kind](d)
        ma = MA.format(name="MuscleAnalysis", n=1, muscles="all", moments="true")
        setups[kind] = _coordinates_setup(d, kind, model.name, IK, [FR.format(n=1, c="false"), ma],
                                          t0=0.2, t1=0.5)
        st = _converted_states(model, states, d / f"{kind}_states.sto")
        setups[kind + "_states"] = _setup(d, kind + "_states", model.name, st.name,
                                          [FR.format(n=1, c="false"), ma], t0=0, t1=1)
    for cls in DEPRECATED_LENGTHS:                # arm26's Thelen muscles as these classes
        model = d / f"arm26_{cls}.osim"
        model.write_text(ARM26.read_text().replace("<Thelen2003Muscle ", f"<{cls} ").replace(
            "</Thelen2003Muscle>", f"</{cls}>"))
        setups[cls] = _coordinates_setup(d, cls, model.name, IK, [
            MA.format(name="MuscleAnalysis", n=1, muscles="all", moments="true")], t0=0.2, t1=0.4)
    setups["clamped"] = _coordinates_setup(d, "clamped", _thelen_clamped_arm26(d), IK, [
        MA.format(name="MuscleAnalysis", n=1, muscles="all", moments="true")], t0=0.2, t1=0.4)
    setups["das4"] = _coordinates_setup(d, "das4", DAS4, _das4_motion(d), [
        MA.format(name="MA", n=1, muscles="trap_scap_1 delt_scap_5 FCR ECU", moments="true").replace(
            "<moment_arm_coordinate_list>all", "<moment_arm_coordinate_list>flexion deviation")], t0=0, t1=1)
    for name, s in setups.items():
        if name == "das4":                      # its <defaults> would change OpenSim's class
            _run_opensim_apart(s)               # defaults for the rest of this process
        else:
            _run_opensim(s)
    return setups


def _run_opensim_apart(setup: Path):
    """OpenSim's AnalyzeTool on ``setup`` in a process of its own."""
    import subprocess
    import sys
    subprocess.run([sys.executable, "-c", "import os, sys, opensim; os.chdir(sys.argv[1]); "
                    "opensim.Logger.setLevelString('error'); opensim.AnalyzeTool(sys.argv[2]).run()",
                    str(setup.parent), str(setup)], check=True, capture_output=True)


DAS4 = DATA / "arm-model" / "das4_v4.osim"


def _thelen_clamped_arm26(folder: Path) -> str:
    """arm26 with default fiber lengths at or below the pennation model's minimum h / sin φ_max
    (TRIlong 0.02 m < 0.0280, TRImed 0.001 m < 0.0179), just above it (TRIlat 0.0279 m > 0.0179)
    and 0 for the unpennated BIClong."""
    import opensim
    m = opensim.Model(str(ARM26))
    ms = m.updMuscles()
    for i, lce in enumerate([0.02, 0.0279, 0.001, 0.0, 0.05, 0.03]):
        opensim.Thelen2003Muscle.safeDownCast(ms.get(i)).setDefaultFiberLength(lce)
    m.finalizeFromProperties()
    m.printToXML(str(folder / "arm26_clamped.osim"))
    return "arm26_clamped.osim"
#: MuscleAnalysis files arthron writes for arm26 converted to these classes (besides Length,
#: the moment arms, TendonForce and the moments; Delp1990Muscle_Deprecated: OpenSim writes NaN)
DEPRECATED_LENGTHS = {
    "Schutte1993Muscle_Deprecated": {"FiberLength", "NormalizedFiberLength", "PennationAngle", "TendonLength"},
    "Thelen2003Muscle_Deprecated": {"FiberLength", "NormalizedFiberLength", "PennationAngle", "TendonLength"},
    "RigidTendonMuscle": set(THELEN_FILES) - {"Length", "TendonForce", "PennationAngularVelocity"},
    "Delp1990Muscle_Deprecated": set()}


def _das4_motion(folder: Path) -> str:
    """A wrist flexion of DAS4 from its default pose (21 rows; the coupled coordinates left
    out: OpenSim and arthron assemble them)."""
    from arthron.io.osim import read_osim
    model = read_osim(DAS4)
    names = [c for c in model.coordinates if not c.startswith("proximal_distal")]
    t = np.linspace(0, 1, 21)
    vals = np.array([[model.coordinates[c].default_value for c in names]] * len(t))
    vals[:, names.index("flexion")] += 0.6 * np.sin(np.pi * t)
    rows = "".join("\t".join(f"{x:.17g}" for x in (ti, *r)) + "\n" for ti, r in zip(t, vals))
    (folder / "das4.mot").write_text(f"das4\nversion=1\nnRows={len(t)}\nnColumns={len(names) + 1}\n"
                                     "inDegrees=no\nendheader\ntime\t" + "\t".join(names) + "\n" + rows)
    return "das4.mot"


def _arthron(setup: Path, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        files = run_analyze(setup, results_dir=setup.parent / f"arthron_{setup.stem}", **kw)
    return files, [str(x.message) for x in w if issubclass(x.category, ArthronWarning)]


@needs_data
@needs_opensim
@pytest.mark.parametrize("name", ["coords", "coords_step", "states"])
def test_force_reporter_every_column_as_opensim(runs, name):
    """``<tool>_ForceReporter_forces.sto``: the six Thelen muscles' forces (at their default
    fiber length on a coordinates file: 1e4 N; at the states file's fiber lengths) and the force
    set's CoordinateActuator (0: the AnalyzeTool runs at control 0), labels in the model's order,
    step_interval's rows, equal to OpenSim's 8 decimals; include_constraint_forces on a model
    without constraints adds nothing, as in OpenSim."""
    setup = runs[name]
    files, _ = _arthron(setup)
    fr = [f for f in files if "_forces.sto" in f.name]
    assert len(fr) == 1
    ref_dir = setup.parent / f"osim_{name}"
    assert _compare(fr, ref_dir) < 1e-7
    got = read_sto(fr[0])
    assert got.labels[:6] == ["TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA"]
    assert np.abs(got.data[:, :6]).max() > 100.0                  # the muscles pull
    if name != "coords_step":
        assert got.labels[-1] == "elbow_act" and not got.data[:, -1].any()


@needs_data
@needs_opensim
def test_force_reporter_on_the_gait2354_walk_with_ground_reactions(runs):
    """The Gait2354 walk (54 Thelen muscles at their default states: up to 1.8e5 N) with its
    ground reactions: the muscles' columns, then each ExternalForce's
    ``<body>_<name>_Fx ... _Tz`` (force and torque in ground, point in the body), every other
    frame of a 6 Hz filtered motion, equal to OpenSim's 8 decimals."""
    setup = runs["walk"]
    files, _ = _arthron(setup)
    assert [f.name for f in files] == ["walk_ForceReporter_forces.sto"]
    _compare(files, setup.parent / "osim_walk")
    got = read_sto(files[0])
    assert len(got.labels) == 54 + 18 and got.labels[54].startswith("calcn_r_") and got.labels[-1].endswith("_Tz")
    assert np.abs(got.data[:, 54:]).max() > 500                  # the ground reactions are there


@needs_data
@needs_opensim
@pytest.mark.parametrize("name", ["coords", "coords_step", "states"])
def test_muscle_analysis_files_as_opensim(runs, name):
    """MuscleAnalysis of arm26's Thelen muscles: lengths, fiber and tendon lengths, pennation,
    the tendon, fiber, active and passive forces (and along the tendon), the muscle-tendon power,
    the moment arms and (compute_moments) the moments, at the default fiber length (a
    coordinates file: forces of 1e4 N) or the states file's; every column as OpenSim's 8
    decimals. The fiber velocity files (Thelen's inverted force-velocity curve) are left out,
    named in one warning."""
    setup = runs[name]
    files, said = _arthron(setup)
    ma = [f for f in files if "_MuscleAnalysis_" in f.name or "_MA_" in f.name]
    kinds = {f.stem.split("_MuscleAnalysis_" if "_MuscleAnalysis_" in f.name else "_MA_")[1] for f in ma}
    moments = {k for k in kinds if k.startswith("Moment")}
    assert kinds - moments == THELEN_FILES
    want = {"MomentArm_r_elbow_flex", "MomentArm_r_shoulder_elev"}
    assert moments == (want | {"Moment_r_elbow_flex", "Moment_r_shoulder_elev"} if name != "coords_step" else want)
    ref = setup.parent / f"osim_{name}"        # (without compute_moments OpenSim writes no moment arms)
    assert _compare([f for f in ma if (ref / f.name).exists() or "MomentArm" not in f.name], ref) < 1e-6
    assert not [s for s in said if "not written" in s]


@needs_data
@needs_opensim
@pytest.mark.parametrize("name", ["Millard2012EquilibriumMuscle", "Millard2012AccelerationMuscle",
                                  "DeGrooteFregly2016Muscle", "Millard2012EquilibriumMuscle_states",
                                  "Millard2012AccelerationMuscle_states",
                                  "DeGrooteFregly2016Muscle_states",
                                  "Millard2012AccelerationMuscle_compressive",
                                  "Millard2012AccelerationMuscle_compressive_states"])
def test_converted_muscles_files_as_opensim(runs, name):
    """arm26 with its muscles converted to Millard2012EquilibriumMuscle (elastic and rigid
    tendons, damping), Millard2012AccelerationMuscle and DeGrooteFregly2016Muscle (elastic and
    rigid tendons), on the IK motion (default states) and on states files varying every muscle
    state per frame: the ForceReporter file, and the MuscleAnalysis files arthron writes for
    the class (Millard equilibrium: all, its elastic tendons' fiber velocity by OpenSim's own
    Newton iteration from its inverse force-velocity curve, or that curve without damping;
    DeGroote: all, its elastic tendons' fiber velocity by the analytic inverse force-velocity
    curve; Millard acceleration: all, its forces and powers with its fiber mass, damping and
    compressive curves, engaged in the ``_compressive`` model at its default states: passive
    forces down to −28 N) equal to OpenSim's 8 decimals and, value by value, to 1e-11 relative
    (measured ≤ 1e-12: DeGroote's sinh inverse reaches 1e53 m/s at these unequilibrated
    states); the files not written are named in one warning."""
    setup = runs[name]
    kind = name.replace("_states", "").replace("_compressive", "")
    files, said = _arthron(setup)
    ma = [f for f in files if "_MuscleAnalysis_" in f.name]
    kinds = {f.stem.split("_MuscleAnalysis_")[1] for f in ma}
    assert {k for k in kinds if not k.startswith("Moment")} == CONVERTED_FILES[kind] | {"Length", "TendonForce"}
    assert {k for k in kinds if k.startswith("Moment_")} == {"Moment_r_elbow_flex", "Moment_r_shoulder_elev"}
    assert not [s for s in said if "not written" in s]
    ref = setup.parent / f"osim_{name}"
    fr = [f for f in files if "_forces.sto" in f.name]
    _compare(ma + fr, ref)
    for f in ma + fr:                 # and value by value: DeGroote's velocities reach 1e53 here
        got, want = read_sto(f).data, read_sto(ref / f.name).data
        assert (np.abs(got - want) <= 1e-8 + 1e-11 * np.abs(want)).all(), f.name
    assert np.abs(read_sto(fr[0]).data).max() > 10.0
    if name == "Millard2012AccelerationMuscle_compressive":      # the compressive curves push
        passive = read_sto(ref / f"{name}_MuscleAnalysis_PassiveFiberForce.sto").data[0]
        assert (passive[:3] < -1.0).all()


@needs_data
def test_constraint_forces_on_a_constrained_model_skip_the_force_reporter(tmp_path):
    """``include_constraint_forces`` on the Thoracoscapular model (an AC PointConstraint): the
    constraints' reaction records are not reproduced, so the ForceReporter is skipped with one
    warning naming the setup and the option, no file written; without the option its file is
    written (33 Millard muscles, then the passive forces)."""
    from conftest import TSM, TSM_ID
    motion = TSM_ID / "ThorascapularShoulderModel_static.mot"
    for flag in ("true", "false"):
        setup = _coordinates_setup(tmp_path, f"tsm_{flag}", TSM, motion, [FR.format(n=1, c=flag)],
                                   t0=0, t1=0.05)
        files, said = _arthron(setup)
        skipped = [s for s in said if "skipped" in s and "include_constraint_forces" in s]
        if flag == "true":
            assert files == [] and len(skipped) == 1 and str(setup) in skipped[0]
            assert not (tmp_path / f"arthron_tsm_{flag}_setup").exists()
        else:
            assert [f.name for f in files] == [f"tsm_{flag}_ForceReporter_forces.sto"] and not skipped
            assert read_sto(files[0]).data.shape[1] >= 33


@needs_data
@needs_opensim
@pytest.mark.parametrize("name", [c[0] for c in COORDINATE_LISTS])
def test_moment_arm_and_moment_files_for_every_listed_coordinate(runs, name):
    """``moment_arm_coordinate_list`` ``all`` is every coordinate of the model, as in OpenSim
    4.6, crossed by a listed muscle or not (arm26's BRA: the shoulder too; two Gait2354 muscles
    on the walk: all 23 coordinates, the pelvis' six, the lumbar and the left leg's at 0); an
    explicit list, each coordinate named (pelvis_tx, the uncrossed hip and lumbar, the locked
    mtp): MomentArm_ and Moment_ files for each, every column as OpenSim's 8 decimals (about
    the coordinates no listed muscle crosses OpenSim writes 0, arthron 0 or rounding noise
    below 1e-16 m)."""
    from arthron.io.osim import read_osim
    setup = runs[name]
    files, said = _arthron(setup)
    ref = setup.parent / f"osim_{name}"
    mine = {f.name for f in files if "_Moment" in f.name}
    assert mine == {f.name for f in ref.glob("*_Moment*")}
    model = read_osim(ARM26 if name.startswith("arm") else GAIT_REF_MODEL)
    coords = (list(model.coordinates) if name.endswith("_all") else
              dict((c[0], c[4]) for c in COORDINATE_LISTS)[name].split())
    assert mine == {f"{name}_MA_{k}_{c}.sto" for c in coords for k in ("MomentArm", "Moment")}
    _compare([f for f in files if "_Moment" in f.name], ref)
    zero = [f for f in files if "_Moment" in f.name and np.abs(read_sto(f).data).max() < 1e-12]
    assert (0 < len(zero) < len(mine)) if name != "walk_one_list" else len(zero) == len(mine)
    assert not said


@needs_data
@needs_opensim
@pytest.mark.parametrize("name", [*DEPRECATED_LENGTHS, "das4"])
def test_length_files_of_deprecated_and_rigid_tendon_muscles(runs, name):
    """arm26 converted to Schutte1993Muscle_Deprecated and Thelen2003Muscle_Deprecated (and
    four of DAS4's Schutte muscles over a wrist flexion): at their default states, fiber
    length 0 (these classes have no default-state property), OpenSim writes fiber length,
    normalized fiber length and pennation 0 and the whole path as tendon; arthron the same
    files, every column as OpenSim's 8 decimals; their fiber velocity, fiber forces and powers
    (OpenSim: NaN or the values of a zero-length fiber) are named in one warning.
    RigidTendonMuscle (no states; activation = control = 0): every file but
    PennationAngularVelocity (NaN in OpenSim): fiber at the path's length less the tendon slack
    length, pennated at fixed width, passive forces only, fiber velocity the path's.
    Delp1990Muscle_Deprecated: OpenSim 4.6's AnalyzeTool writes NaN in every file but Length
    and the moment arms; arthron writes those two and names the rest."""
    setup = runs[name]
    files, said = _arthron(setup)
    ref = setup.parent / f"osim_{name}"
    sep = "_MA_" if name == "das4" else "_MuscleAnalysis_"
    kinds = {f.stem.split(sep)[1] for f in files}
    want = DEPRECATED_LENGTHS.get(name, DEPRECATED_LENGTHS["Schutte1993Muscle_Deprecated"])
    moments = {"MomentArm", "Moment"} - ({"Moment"} if name.startswith("Delp") else set())
    coords = ["flexion", "deviation"] if name == "das4" else ["r_shoulder_elev", "r_elbow_flex"]
    assert kinds == want | {"Length"} | ({"TendonForce"} if want else set()) | {
        f"{k}_{c}" for k in moments for c in coords}
    # (DAS4's tendon forces at the whole path as tendon, up to 4e4 N, multiply the path lengths'
    # and moment arms' differences (1e-11 m, wrapping) by their stiffness F_max f_T'/l_s and
    # force: measured 2e-10 of the TendonForce column, 6e-9 of the Moment columns)
    _compare(files, ref, rtol_acc=2e-8 if name == "das4" else 1e-10)
    assert len([s for s in said if "not written" in s]) == 1
    if "FiberLength" in want and name != "RigidTendonMuscle":
        assert not read_sto(ref / f"{setup.stem.replace('_setup', '')}{sep}FiberLength.sto").data.any()


@needs_data
@needs_opensim
def test_thelen_fiber_clamped_at_the_minimum_length(runs):
    """Thelen2003Muscle fibers at or below the fixed-width pennation model's minimum length
    h / sin φ_max at their default states: OpenSim 4.6 clamps the fiber there (pennation
    φ_max = acos 0.1, fiber force 10 × the tendon force: 3.9e5 N, powers of 4.6e10 W) and an
    unpennated fiber of length 0 is the whole path as tendon (1.7e4 N); every MuscleAnalysis
    file arthron writes equal to OpenSim's 8 decimals (1e-10 of the column), all files
    written."""
    setup = runs["clamped"]
    files, said = _arthron(setup)
    kinds = {f.stem.split("_MuscleAnalysis_")[1] for f in files}
    assert {k for k in kinds if not k.startswith("Moment")} == THELEN_FILES and not said
    _compare(files, setup.parent / "osim_clamped")
    lce = read_sto(setup.parent / "osim_clamped" / "clamped_MuscleAnalysis_FiberLength.sto").data[0]
    assert lce[0] > 0.02 and lce[2] > 0.001 and lce[3] == 0       # clamped, and 0 unpennated
