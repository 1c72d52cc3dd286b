"""arthron as a library, used the way a new user does: objects built from NumPy arrays, paths given
where objects are expected, arrays of the wrong shape, empty or reversed motions, bad masses.

Each misuse must end in a typed arthron error naming the argument (or a correct result), never a
NumPy ``IndexError``/``ValueError`` from deep inside, an ``AttributeError``, or numbers computed
from the wrong columns. The correct path is checked against OpenSim 4.6 (marker positions and
muscle lengths at a pose set through a coordinate's default value).
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from conftest import ARM26, ARM26_TUT, needs_data, needs_opensim
import oracle

from arthron.errors import ArthronWarning, DataFileError, ModelFileError, OptionError
from arthron.io.osim import read_osim, write_osim
from arthron.io.sto import write_sto
from arthron.io.trc import read_trc, write_trc
from arthron.multibody.kinematics import compile_model, default_coordinates, forward_kinematics, marker_positions
from arthron.multibody.paths import compile_paths, moment_arms, path_lengths
from arthron.solvers.inverse_dynamics import run_inverse_dynamics
from arthron.solvers.inverse_kinematics import solve_ik
from arthron.solvers.load_sharing import build_problem, static_optimization
from arthron.solvers.reactions import joint_reactions
from arthron.tables import MarkerTrial, Table

pytestmark = needs_data
COORDS = ["r_shoulder_elev", "r_elbow_flex"]
TRC = ARM26_TUT / "InverseKinematics" / "arm26_elbow_flex.trc"


@pytest.fixture(scope="module")
def arm():
    return read_osim(ARM26)


def _motion(**kw):
    t = np.linspace(0.0, 1.0, 21)
    q = np.stack([0.3 * np.sin(np.pi * t), 0.5 + np.sin(np.pi * t)], 1)
    d = dict(name="m", time=t, labels=list(COORDS), data=q)
    d.update(kw)
    return Table(**d)


@needs_opensim
def test_pose_from_a_default_value_matches_opensim(arm, tmp_path):
    """Change a coordinate's default, compile, and read marker positions and muscle lengths at
    the default pose: OpenSim 4.6 at the same coordinate values gives the same numbers."""
    model = arm.copy()
    model.coordinates["r_shoulder_elev"].default_value = 0.4
    model.coordinates["r_elbow_flex"].default_value = 1.1
    tree = compile_model(model)
    q = default_coordinates(tree)
    names, P = marker_positions(tree, q)
    ps = compile_paths(model, tree)
    L = path_lengths(ps, tree, q[0])                     # one pose (nq,) is a frame too
    with oracle._cwd(tmp_path):
        om, s = oracle.load(ARM26)             # its log sink removed: no opensim.log beside the data
        om.getCoordinateSet().get("r_shoulder_elev").setValue(s, 0.4)
        om.getCoordinateSet().get("r_elbow_flex").setValue(s, 1.1)
        om.realizePosition(s)
        Po = np.array([om.getMarkerSet().get(n).getLocationInGround(s).to_numpy() for n in names])
        Lo = np.array([om.getMuscles().get(n).getLength(s) for n in ps.names])
    assert np.abs(P[0] - Po).max() < 1e-12
    assert np.abs(L[0] - Lo).max() < 1e-9


def test_coordinate_arrays_of_the_wrong_shape_are_refused(arm):
    """Before: (3,) for nq = 2 was cut to its first two values, a transposed (nq, T) array taken
    as nq frames of its first columns (silently wrong numbers), (1,) an IndexError."""
    tree = compile_model(arm)
    ps = compile_paths(arm, tree)
    for bad in (np.zeros(3), np.zeros(1), np.zeros((2, 5)), np.zeros((5, 3)), np.zeros((3, 4, 2))):
        for f in (lambda q: marker_positions(tree, q), lambda q: path_lengths(ps, tree, q),
                  lambda q: moment_arms(ps, tree, q), lambda q: forward_kinematics(tree, q)):
            with pytest.raises(OptionError, match=r"q must have shape \(T, nq\) or \(nq,\) with nq = 2 "
                                                  r"\(r_shoulder_elev, r_elbow_flex\)"):
                f(bad)
    with pytest.raises(OptionError, match=r"got \(2, 5\) \(transposed"):
        path_lengths(ps, tree, np.zeros((2, 5)))
    with pytest.raises(OptionError, match="qd must have shape"):
        forward_kinematics(tree, np.zeros(2), np.zeros(3))
    with pytest.raises(OptionError, match="no marker 'nope'.*r_acromion"):
        marker_positions(tree, np.zeros(2), names=["nope"])
    # the right shapes still work: (nq,), (T, nq), lists
    assert marker_positions(tree, [0.1, 0.2])[1].shape == (1, 3, 3)
    assert path_lengths(ps, tree, np.zeros((4, 2))).shape == (4, 6)


def test_tables_of_the_wrong_shape_are_refused_where_they_are_built():
    """Before: a transposed or 1-D ``data``, or as many times as columns, passed Table() and
    failed deep inside a solver with a NumPy broadcast/IndexError."""
    t = np.linspace(0, 1, 21)
    q = np.zeros((21, 2))
    with pytest.raises(OptionError, match=r"data must have shape \(T, n_labels\) = \(21, 2\).*"
                                          r"got \(2, 21\) \(transposed"):
        Table(name="m", time=t, labels=COORDS, data=q.T)
    with pytest.raises(OptionError, match=r"got \(21,\)"):
        Table(name="m", time=t, labels=COORDS, data=q[:, 0])
    with pytest.raises(OptionError, match=r"\(10, 2\) for 10 times"):
        Table(name="m", time=t[:10], labels=COORDS, data=q)
    with pytest.raises(OptionError, match=r"time must have shape \(T,\)"):
        Table(name="m", time=t[:, None], labels=COORDS, data=q)
    tab = Table(name="m", time=list(t), labels=COORDS, data=q.tolist())     # lists become arrays
    assert tab.time.dtype == float and tab.data.shape == (21, 2)
    P = np.zeros((5, 3, 3))
    with pytest.raises(OptionError, match=r"positions must have shape \(T, n_markers, 3\) = \(5, 3, 3\).*"
                                          r"got \(5, 9\)"):
        MarkerTrial(frames=np.arange(5), time=np.arange(5.0), labels=["a", "b", "c"],
                    positions=P.reshape(5, 9), data_rate=1, camera_rate=1, orig_data_rate=1,
                    orig_start_frame=1, orig_num_frames=5)


def test_solvers_refuse_paths_arrays_empty_and_reversed_motions(arm):
    """Before: a path for the model or motion was an AttributeError, 0 frames an IndexError,
    reversed times 'time range 1..0 s lies outside the data' (ID, SO) and a label count that
    differs from the columns was used as it came."""
    good = _motion()
    for solve in (run_inverse_dynamics, static_optimization, joint_reactions):
        with pytest.raises(OptionError, match="model must be an arthron Model, got str.*read_osim"):
            solve(str(ARM26), good)
        with pytest.raises(OptionError, match="motion must be an arthron Table, got str.*read_sto"):
            solve(arm, "walk_ik.mot")
        with pytest.raises(OptionError, match="motion must be an arthron Table, got ndarray"):
            solve(arm, good.data)
        with pytest.raises(DataFileError, match=r"no rows \(0 frames\)"):
            solve(arm, _motion(time=good.time[:0], data=good.data[:0]))
        with pytest.raises(DataFileError, match="strictly increasing: row 1 at t = 1 s, then row 2 at t = 0.95 s"):
            solve(arm, _motion(time=good.time[::-1].copy()))
        with pytest.raises(DataFileError, match=r"3 column label\(s\) for data of shape \(21, 2\)"):
            solve(arm, _motion(labels=COORDS + ["extra"]))


def test_static_optimization_names_a_misspelled_column(arm):
    """SO keeps a coordinate missing from the motion at its default (as OpenSim's AnalyzeTool);
    the warning now also names the column that matched nothing, the usual cause."""
    with pytest.warns(ArthronWarning, match="r_elbow_flex.*name no coordinate of model 'arm26': r_elbow_flx"):
        static_optimization(arm, _motion(labels=["r_shoulder_elev", "r_elbow_flx"]))


def test_ik_refuses_paths_and_bad_trials(arm):
    trial = read_trc(TRC)
    with pytest.raises(OptionError, match="model must be an arthron Model"):
        solve_ik(str(ARM26), trial)
    with pytest.raises(OptionError, match="trial must be an arthron MarkerTrial, got str.*read_trc"):
        solve_ik(arm, str(TRC))
    with pytest.raises(DataFileError, match="no frames"):
        solve_ik(arm, dataclasses.replace(trial, time=trial.time[:0], positions=trial.positions[:0],
                                          frames=trial.frames[:0]))
    with pytest.raises(DataFileError, match="strictly increasing"):       # before: solved silently
        solve_ik(arm, dataclasses.replace(trial, time=trial.time[::-1].copy()))


def test_negative_or_nan_body_mass_is_refused(arm):
    """OpenSim 4.6's initSystem refuses a negative mass ('has unspecified or negative mass');
    before, arthron computed inverse dynamics with it."""
    for m in (-1.0, np.nan):
        model = arm.copy()
        model.bodies["r_humerus"].mass = m
        with pytest.raises(ModelFileError, match="body 'r_humerus' has mass .* kg"):
            compile_model(model)
        with pytest.raises(ModelFileError, match="r_humerus"):
            run_inverse_dynamics(model, _motion())


def test_writers_name_swapped_arguments(arm, tmp_path):
    """write_osim(model, path) was a TypeError from pathlib; now one message saying which is which."""
    with pytest.raises(OptionError, match=r"write_osim\(path, model\): path must be a file name, got Model "
                                          r"\(arguments swapped\?\)"):
        write_osim(arm, tmp_path / "a.osim")
    with pytest.raises(OptionError, match=r"write_sto\(path, table\).*got Table"):
        write_sto(_motion(), tmp_path / "a.sto")
    trial = read_trc(TRC)
    with pytest.raises(OptionError, match=r"write_trc\(path, trial\).*got MarkerTrial"):
        write_trc(trial, tmp_path / "a.trc")
    assert not any(tmp_path.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_sto(tmp_path / "a.sto", _motion())        # the right order still writes
    assert (tmp_path / "a.sto").is_file()


def test_solver_options_checked_by_the_solvers(arm):
    """The tools checked time_range and lowpass_hz; the solvers called directly did not: a
    scalar time range was a TypeError, a NaN cut-off ran."""
    for solve in (run_inverse_dynamics, static_optimization, joint_reactions):
        with pytest.raises(OptionError, match="time range must be two numbers T0 T1, got 0.5"):
            solve(arm, _motion(), time_range=0.5)
        with pytest.raises(OptionError, match="low-pass cut-off must be a finite frequency"):
            solve(arm, _motion(), lowpass_hz=float("nan"))
    # one instant stays allowed (an AnalyzeTool setup with initial_time = final_time)
    assert run_inverse_dynamics(arm, _motion(), time_range=(0.5, 0.5)).generalized_forces.shape == (1, 2)


def test_one_name_is_not_its_letters(arm):
    """forces_to_exclude="Muscles" and compile_paths(forces="BRA") were read letter by letter."""
    motion = _motion()
    tau1 = run_inverse_dynamics(arm, motion, forces_to_exclude="All").generalized_forces
    tau2 = run_inverse_dynamics(arm, motion, forces_to_exclude=("All",)).generalized_forces
    np.testing.assert_array_equal(tau1, tau2)
    tree = compile_model(arm)
    assert compile_paths(arm, tree, forces="BRA").names == ["BRA"]


def test_path_functions_name_bad_coordinates_and_speeds(arm):
    from arthron.multibody.paths import lengthening_speeds, moment_arms_excursion
    tree = compile_model(arm)
    ps = compile_paths(arm, tree)
    q = _motion().data
    with pytest.raises(OptionError, match=r"no coordinate 5 in the model .*indices 0..1"):
        moment_arms_excursion(ps, tree, q, coordinates=[5])
    by_name = moment_arms_excursion(ps, tree, q, coordinates=["r_elbow_flex"])
    np.testing.assert_array_equal(by_name, moment_arms_excursion(ps, tree, q, coordinates=[1]))
    with pytest.raises(OptionError, match=r"qd must have shape .* got \(21, 3\)"):
        lengthening_speeds(ps, tree, q, np.zeros((21, 3)))


def test_scaling_and_reading_name_the_slip(arm):
    from arthron.solvers.scaling import scale_anthropometric
    with pytest.raises(OptionError, match=r"height is in metres: 175 .*centimetres\? give 1.75"):
        scale_anthropometric(arm, 70.0, 175.0)                  # before: scaled by ~100
    with pytest.raises(OptionError, match="model must be an arthron Model"):
        scale_anthropometric(str(ARM26), 70.0, 1.75)
    with pytest.raises(OptionError, match="already a Model"):
        read_osim(arm)


def test_static_optimization_takes_in_degrees_as_id_and_jr_do(arm):
    """run_inverse_dynamics and joint_reactions took in_degrees; static_optimization raised
    TypeError for it. Degrees with in_degrees=True give the radians' result."""
    rad = _motion()
    deg = _motion(data=np.rad2deg(rad.data))
    a = static_optimization(arm, rad).forces
    b = static_optimization(arm, deg, in_degrees=True).forces
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9)
    with pytest.raises(OptionError, match="low-pass cut-off must be a number"):
        static_optimization(arm, rad, lowpass_hz="six")


def test_a_default_value_in_degrees_is_named(arm):
    """Setting ``default_value = 90`` for a right angle was taken as 90 rad without a word."""
    model = arm.copy()
    model.coordinates["r_elbow_flex"].default_value = 90.0
    with pytest.warns(ArthronWarning, match=r"r_elbow_flex = 90 \(degrees\? convert with numpy.deg2rad\)"):
        compile_model(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.coordinates["r_elbow_flex"].default_value = np.deg2rad(90.0)
        compile_model(model)


def test_state_path_labels_read_and_misspelled(arm):
    """4.x state paths (/jointset/<joint>/<coordinate>/value) give the same forces as names; a
    table of state paths none of which ends in /value is named as such."""
    plain = _motion()
    paths = [f"/jointset/{arm.coordinates[c].joint}/{c}/value" for c in COORDS]
    speeds = [p.replace("/value", "/speed") for p in paths]
    states = _motion(labels=paths + speeds, data=np.c_[plain.data, np.zeros_like(plain.data)])
    np.testing.assert_array_equal(run_inverse_dynamics(arm, states).generalized_forces,
                                  run_inverse_dynamics(arm, plain).generalized_forces)
    bad = _motion(labels=[p.replace("/value", "/valu") for p in paths])
    with pytest.raises(DataFileError, match=r"read from their '/value' entries only \(ignored: "
                                            r"/jointset/r_shoulder/r_shoulder_elev/valu"):
        run_inverse_dynamics(arm, bad)


def test_static_optimization_names_unknown_actuators_controls_and_bad_weights(arm):
    """actuators=["nope"] was a KeyError, actuators="BRA" a KeyError 'B', controls of an unknown
    force silently ignored, weights of the wrong type a TypeError from float()."""
    m = _motion()
    with pytest.raises(OptionError, match="actuators names 'nope', not forces of model 'arm26'.*BRA"):
        static_optimization(arm, m, actuators=["nope"])
    with pytest.raises(OptionError, match="controls names 'nope'"):
        static_optimization(arm, m, controls={"nope": (0.0, 1.0)})
    with pytest.raises(OptionError, match=r"one per actuator \(6, .*got dict"):
        static_optimization(arm, m, weights={"BRA": 2.0})
    one = build_problem(arm, m, actuators="BRA")           # one name, not the letters B, R, A
    assert list(one.names) == ["BRA"]


def test_results_are_never_written_over_the_files_they_were_computed_from(tmp_path):
    """The tools refused to write over their inputs; the solvers' result tables did not know
    them: ``write_sto("walk.mot", run_inverse_dynamics(model, read_sto("walk.mot")).to_table())``
    replaced the motion by its forces. Results now carry their input files (Table.inputs)."""
    import shutil
    from arthron.io.sto import read_sto
    src = ARM26_TUT / "InverseKinematics"
    for name in ("arm26.osim", "arm26_elbow_flex.trc"):
        shutil.copy(src / name, tmp_path / name)
    model = read_osim(tmp_path / "arm26.osim")
    trial = read_trc(tmp_path / "arm26_elbow_flex.trc")
    ik = solve_ik(model, trial)
    write_sto(tmp_path / "ik.mot", ik.motion_table())
    with pytest.raises(DataFileError, match="refusing to overwrite"):
        write_sto(tmp_path / "arm26_elbow_flex.trc", ik.motion_table())
    motion = read_sto(tmp_path / "ik.mot")
    kept = (tmp_path / "ik.mot").read_bytes()
    results = [run_inverse_dynamics(model, motion).to_table(),
               joint_reactions(model, motion).to_table(),
               static_optimization(model, motion).activation_table()]
    for table in results:
        for target in ("ik.mot", "arm26.osim"):
            with pytest.raises(DataFileError, match="refusing to overwrite"):
                write_sto(tmp_path / target, table)
    assert (tmp_path / "ik.mot").read_bytes() == kept
    write_sto(tmp_path / "id.sto", results[0])           # anywhere else is fine
    assert read_sto(tmp_path / "id.sto").data.shape == results[0].data.shape


@needs_data
def test_a_motion_too_short_for_the_splines_names_itself(arm, tmp_path):
    """A 4-row motion: the quintic GCVSplines of OpenSim's tools need 6 rows. The error named
    neither the motion nor a way out ("a degree-5 GCVSpline needs at least 6 samples"); now it
    names the file (ID, SO, JR share the same preparation) and a low-pass filter, whose padding
    adds rows, lets it run."""
    from arthron.io.sto import read_sto
    t = np.arange(4) * 0.01
    names = list(arm.coordinates)
    p = tmp_path / "short.mot"
    write_sto(p, Table(name="short", time=t, labels=names, data=np.full((4, len(names)), 0.3), in_degrees=False))
    from arthron.errors import SolverError
    with pytest.raises(SolverError, match=r"short\.mot.*4 row\(s\) of coordinates.*at least 6 rows"):
        run_inverse_dynamics(arm, read_sto(p))
    with pytest.raises(SolverError, match=r"short\.mot.*at least 6 rows"):
        static_optimization(arm, read_sto(p))
    res = run_inverse_dynamics(arm, read_sto(p), lowpass_hz=6)
    assert res.generalized_forces.shape == (4, len(names)) and np.all(np.isfinite(res.generalized_forces))
