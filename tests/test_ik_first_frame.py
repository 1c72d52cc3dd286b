"""The first frame of an IK trial starts from the model's default pose; a start that far from
the motion can end in another local minimum of the marker objective. When that solution leaves
the range of an unclamped coordinate, the frame is solved again inside the ranges first
(``InverseKinematics.solve_first``), and the better solution is kept.

Found on the MoBL-ARMS model (Saul et al. 2015, osim-rl's copy): wrist deviation −38° with 1 mm
of marker error for markers made from a motion, where OpenSim 4.6's IK stays near the motion.
Reproduced here on DAS4 (shared data) with every model marker at random poses inside the
coordinates' ranges: markers made from the pose itself, so the global minimum is 0."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import DATA, needs_data

DAS4 = DATA / "arm-model" / "das4_v4.osim"


def _trials(model, tree, n, seed=1):
    from arthron.multibody.kinematics import marker_positions
    from arthron.tables import MarkerTrial
    rng = np.random.default_rng(seed)
    coords = list(model.coordinates.values())
    names = list(model.markers)
    for _ in range(n):
        q = tree.default_q.copy()
        for i, c in enumerate(coords):
            if not c.locked and np.all(np.isfinite(c.range)) and c.range[1] - c.range[0] < 7:
                q[i] = rng.uniform(*c.range)
        _, P = marker_positions(tree, q[None], names)
        yield q, MarkerTrial(frames=np.array([1]), time=np.array([0.0]), labels=names, positions=P,
                             data_rate=100.0, camera_rate=100.0, orig_data_rate=100.0,
                             orig_start_frame=1, orig_num_frames=1)


@needs_data
def test_first_frame_leaves_a_wrong_minimum(monkeypatch):
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.solvers import ik_levenberg_marquardt as lm
    from arthron.solvers.inverse_kinematics import solve_ik
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = read_osim(DAS4)
    tree = compile_model(model)
    trials = list(_trials(model, tree, 8))
    new = [solve_ik(model, mt).rms[0] for _, mt in trials]
    # every pose recovered: the markers fit to rounding (the global minimum)
    assert max(new) < 1e-6, np.round(np.array(new) * 1e3, 3)
    # from the default pose alone (the behaviour before), some of them are not
    monkeypatch.setattr(lm.LevenbergMarquardtIK, "solve_first",
                        lambda self, obs, x0, base, qref, solve: solve(obs, x0, base, qref))
    old = [solve_ik(model, mt).rms[0] for _, mt in trials]
    assert max(old) > 0.01 and all(b <= a + 1e-12 for a, b in zip(old, new))


GAIT2354 = DATA / "opensim-models" / "Models" / "Gait2354_Simbody" / "subject01_simbody.osim"


def _no_root_first(monkeypatch):
    from arthron.solvers import ik_levenberg_marquardt as lm
    monkeypatch.setattr(lm.LevenbergMarquardtIK, "_retry_from_root",
                        lambda self, obs, x0, base, qref, solve, a: a)


@needs_data
def test_first_frame_root_first_start(monkeypatch):
    """Poses anywhere in the coordinates' ranges (Gait2354, pelvis rotations up to ±90°): from
    the default pose, one of eight first frames ends 68 mm RMS from its markers (a local
    minimum the iterations stall in, as on bioscout's Full_Body_with_ball at 60 % of the
    ranges); the root-first, level-by-level start (``_root_first_start``), taken because that
    error is implausible for a fit, recovers the pose to rounding. No solution gets worse."""
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.solvers.inverse_kinematics import solve_ik
    model = read_osim(GAIT2354)
    tree = compile_model(model)
    trials = list(_trials(model, tree, 8, seed=0))
    new = np.array([solve_ik(model, mt).rms[0] for _, mt in trials])
    _no_root_first(monkeypatch)
    old = np.array([solve_ik(model, mt).rms[0] for _, mt in trials])
    assert old.max() > 0.05, np.round(old * 1e3, 3)          # the failure, reproduced
    assert np.all(new[old > 0.05] < 1e-6), np.round(new * 1e3, 4)
    assert np.all(new <= old + 1e-9)


def _poses_near_default(model, tree, n, frac, seed):
    """Trials of one frame at poses within ``frac`` of each coordinate's range around its
    default value (markers made from the pose: the global minimum is 0)."""
    from arthron.multibody.kinematics import marker_positions
    from arthron.tables import MarkerTrial
    rng = np.random.default_rng(seed)
    names = list(model.markers)
    for _ in range(n):
        q = tree.default_q.copy()
        for i, c in enumerate(model.coordinates.values()):
            if not c.locked and np.all(np.isfinite(c.range)) and c.range[1] - c.range[0] < 7:
                h = 0.5 * (c.range[1] - c.range[0]) * frac
                q[i] = np.clip(rng.uniform(q[i] - h, q[i] + h), *c.range)
        _, P = marker_positions(tree, q[None], names)
        yield MarkerTrial(frames=np.array([1]), time=np.array([0.0]), labels=names, positions=P,
                          data_rate=100.0, camera_rate=100.0, orig_data_rate=100.0,
                          orig_start_frame=1, orig_num_frames=1)


@needs_data
def test_first_frame_within_sixty_percent_of_the_ranges():
    """Poses within 60 % of every coordinate's range around the default pose (Gait2354): every
    first frame fits its markers to rounding from the default start (20 here; 40 of 40 at
    30 % and 40 of 40 at 60 % measured), so the root-first retry above 5 cm RMS is enough for them."""
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.solvers.inverse_kinematics import solve_ik
    model = read_osim(GAIT2354)
    tree = compile_model(model)
    rms = np.array([solve_ik(model, mt).rms[0] for mt in _poses_near_default(model, tree, 20, 0.6, 11)])
    assert rms.max() < 1e-6, np.round(rms * 1e3, 3)


@needs_data
@pytest.mark.xfail(strict=True, reason="a wrong minimum with the marker error of a fit is not caught "
                   "(always trying the root-first start recovers both, but costs the IK command ~10 ms, "
                   "0.121 -> 0.131 s on the Gait2354 walk)")
def test_first_frame_wrong_minimum_that_looks_like_a_fit():
    """Known limitation: at random poses over the coordinates' full ranges (Gait2354: hips
    flexed 120°, pelvis turned ±90° ...), two of 40 first frames end 5.2 mm and 33 mm RMS from
    markers made from the pose, errors a real trial's fit has (the walk's first frame:
    21.5 mm), so the retry above 5 cm RMS is not taken. Trying the root-first start on every
    first frame recovers both to rounding (measured), at 3.6 ms per trial in a library session
    and 10 ms in the ``arthron ik`` command (its stations on the NumPy route); it is not done:
    poses within 60 % of the ranges never end there (test above)."""
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.solvers.inverse_kinematics import solve_ik
    model = read_osim(GAIT2354)
    tree = compile_model(model)
    trials = list(_trials(model, tree, 40, seed=7))
    picked = [trials[2], trials[30]]
    rms = np.array([solve_ik(model, mt).rms[0] for _, mt in picked])
    assert rms.max() < 1e-6, np.round(rms * 1e3, 4)


@needs_data
def test_frames_after_a_bad_first_frame_recover(monkeypatch, tmp_path):
    """The frames after the first start from the one before, so a first frame in a wrong
    minimum kept the next ones there (on Full_Body_with_ball for six frames); with the first
    frame recovered, every frame fits. Checked against the generating motion and, where
    OpenSim 4.6 is installed, its objective ≤ OpenSim's InverseKinematicsTool in every frame
    (OpenSim 4.6 stays in the same wrong minimum here: 68.5 mm RMS in every frame)."""
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model, marker_positions
    from arthron.solvers.inverse_kinematics import solve_ik
    from arthron.tables import MarkerTrial
    model = read_osim(GAIT2354)
    tree = compile_model(model)
    poses = [q for q, _ in _trials(model, tree, 8, seed=0)]
    q0, q1 = poses[4], poses[0]
    T = 8
    s = np.linspace(0.0, 0.05, T)[:, None]
    Q = (1 - s) * q0[None] + s * q1[None]
    names = list(model.markers)
    _, P = marker_positions(tree, Q, names)
    trial = MarkerTrial(frames=np.arange(1, T + 1), time=np.arange(T) / 100.0, labels=names,
                        positions=P, data_rate=100.0, camera_rate=100.0, orig_data_rate=100.0,
                        orig_start_frame=1, orig_num_frames=T)
    new = solve_ik(model, trial, block=1).rms
    newb = solve_ik(model, trial).rms
    assert new.max() < 1e-6 and newb.max() < 1e-6, (np.round(new * 1e3, 4), np.round(newb * 1e3, 4))
    try:
        import opensim  # noqa: F401
    except ImportError:
        pass
    else:
        from arthron.io.trc import write_trc
        from test_inverse_kinematics import _opensim_ik
        trc = tmp_path / "trial.trc"
        write_trc(trc, trial)
        ref, errs = _opensim_ik(GAIT2354, trc, tmp_path, np.inf, names, "os")
        rms_os = errs.data[:, errs.labels.index("marker_error_RMS")]
        assert rms_os.shape[0] == T
        assert np.all(new <= rms_os + 1e-9)
    _no_root_first(monkeypatch)
    old = solve_ik(model, trial, block=1).rms
    assert old.min() > 0.02, np.round(old * 1e3, 3)      # every frame stayed in the wrong minimum
