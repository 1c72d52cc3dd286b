"""arthron.solvers.filtering against OpenSim 4.6's Storage (pad, lowpassIIR) and GCVSplineSet,
and against the frame times of the stored InverseDynamicsTool outputs."""
from __future__ import annotations

import numpy as np
import pytest

from arthron.errors import DataFileError, SolverError
from arthron.solvers import filtering as FL
from conftest import ARM26_TUT, GAIT_PIPE, REF, needs_data, needs_opensim

ARM_IK = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"
GAIT_IK = GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot"
# 4.6 IK output with the .trc's ms-rounded times (0.417, 0.433, ...): needs resampling.
GAIT_IK_MS = REF / "task2_gait2354" / "IK_ourModel" / "subject01_walk1_ik.mot"

IK_FILES = {"arm26": ARM_IK, "gait2354": GAIT_IK, "gait2354_ms": GAIT_IK_MS}

REL = 1e-9


def read_mot(path):
    """Minimal .mot/.sto reader: header up to 'endheader', then labels, then numbers."""
    lines = path.read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if line.strip() == "endheader")
    labels = lines[end + 1].split("\t")
    data = np.array([[float(x) for x in line.split()] for line in lines[end + 2:] if line.strip()])
    return labels, data[:, 0], data[:, 1:]


def _rel(mine, ref):
    """max |mine - ref| relative to max(1, max |ref|) per column."""
    mine = np.asarray(mine, float)
    ref = np.asarray(ref, float)
    scale = np.maximum(1.0, np.abs(ref).max(axis=0))
    return float((np.abs(mine - ref) / scale).max())


def _storage_arrays(sto):
    n = sto.getSize()
    nc = sto.getColumnLabels().getSize() - 1
    t = np.array([sto.getStateVector(i).getTime() for i in range(n)])
    v = np.array([[sto.getStateVector(i).getData().get(j) for j in range(nc)] for i in range(n)])
    return t, v


def _osim_spline_eval(spline_set, ncols, ts, order):
    import opensim as osim
    out = np.empty((len(ts), ncols))
    comps = osim.StdVectorInt([0] * order)
    for j in range(ncols):
        f = spline_set.get(j)
        for i, t in enumerate(ts):
            v = osim.Vector(1, float(t))
            out[i, j] = f.calcValue(v) if order == 0 else f.calcDerivative(comps, v)
    return out


# --- pad and lowpassIIR --------------------------------------------------------------------

@needs_data
@needs_opensim
@pytest.mark.parametrize("which", sorted(IK_FILES))
def test_pad_and_lowpass_match_storage(which):
    import opensim as osim
    path = IK_FILES[which]
    _, t, v = read_mot(path)
    sto = osim.Storage(str(path))
    t_file, v_file = _storage_arrays(sto)
    np.testing.assert_array_equal(t_file, t)  # same parsing of the file

    sto.pad(sto.getSize() // 2)
    tp_ref, vp_ref = _storage_arrays(sto)
    tp, vp = FL.pad(t, v, len(t) // 2)
    np.testing.assert_array_equal(tp, tp_ref)
    np.testing.assert_array_equal(vp, vp_ref)

    sto.lowpassIIR(6.0)
    tf_ref, vf_ref = _storage_arrays(sto)
    tf, vf = FL.storage_lowpass_iir(tp, vp, 6.0)
    np.testing.assert_array_equal(tf, tf_ref)  # times exactly, resampled grid included
    assert _rel(vf, vf_ref) < REL


@needs_data
@needs_opensim
@pytest.mark.parametrize("which", sorted(IK_FILES))
@pytest.mark.parametrize("cutoff", [6.0, None])
def test_gcvsplineset_matches_opensim(which, cutoff):
    """GCVSplineSet(5, storage) values and derivatives at the knots, between them and beyond."""
    import opensim as osim
    path = IK_FILES[which]
    _, t, v = read_mot(path)
    sto = osim.Storage(str(path))
    if cutoff:
        sto.pad(sto.getSize() // 2)
        sto.lowpassIIR(cutoff)
        t, v = FL.storage_lowpass_iir(*FL.pad(t, v, len(t) // 2), cutoff)
    ref_set = osim.GCVSplineSet(5, sto)
    ours = FL.GCVSplineSet(t, v, 5)
    ts = np.concatenate([t[::2], 0.5 * (t[1::4] + t[:-1:4]), [t[0] - 0.05, t[-1] + 0.05, t[-1]]])
    for order in (0, 1, 2):
        ref = _osim_spline_eval(ref_set, v.shape[1], ts, order)
        mine = ours.value(ts) if order == 0 else ours.derivative(ts, order)
        assert _rel(mine, ref) < REL, (which, cutoff, order, _rel(mine, ref))


# --- what the InverseDynamicsTool evaluates -----------------------------------------------

ID_CASES = {
    "arm26_6Hz": (ARM_IK, 6.0, (0.0, 1.0), REF / "task1_arm26" / "ID_filtered" /
                  "arm26_InverseDynamics.sto", 121),
    "arm26_unfiltered": (ARM_IK, -1.0, (0.0, 1.0), REF / "task1_arm26" / "ID_unfiltered" /
                         "arm26_InverseDynamics.sto", 121),
    "gait2354_C": (GAIT_IK, 6.0, (0.4, 1.6), REF / "task2_gait2354" /
                   "ResultsID_C_refModel_refIK" / "inverse_dynamics.sto", 73),
    "gait2354_D_ms_times": (GAIT_IK_MS, 6.0, (0.4, 1.6), REF / "task2_gait2354" /
                            "ResultsID_D_ourScaledModel_ourIK" / "inverse_dynamics.sto", 76),
}


@needs_data
@pytest.mark.parametrize("case", sorted(ID_CASES))
def test_output_times_equal_reference_id_times(case):
    """The frames equal the time column OpenSim 4.6 wrote (8 decimals), row for row: -2e-7 s
    start for filtered arm26, 76 frames from 0.392 s for ms-rounded gait times."""
    ik, fc, time_range, id_file, n_rows = ID_CASES[case]
    _, t, v = read_mot(ik)
    _, t_ref, _ = read_mot(id_file)
    t_out, q, qd, qdd = FL.prepare_coordinates(t, np.deg2rad(v), fc, time_range)
    assert len(t_ref) == n_rows
    assert q.shape == qd.shape == qdd.shape == (n_rows, v.shape[1])
    assert [f"{x:.8f}" for x in t_out] == [f"{x:.8f}" for x in t_ref]


@needs_data
@needs_opensim
@pytest.mark.parametrize("case", sorted(ID_CASES))
def test_prepare_coordinates_matches_opensim_pipeline(case):
    """q, qd, qdd equal OpenSim's Storage pad + lowpassIIR + GCVSplineSet(5) (the steps of
    InverseDynamicsTool::run) at the tool's frames, to 1e-9 relative."""
    import opensim as osim
    ik, fc, time_range, _, _ = ID_CASES[case]
    _, t, v = read_mot(ik)
    t_out, q, qd, qdd = FL.prepare_coordinates(t, np.deg2rad(v), fc, time_range)
    sto = osim.Storage(str(ik))
    if fc >= 0:
        sto.pad(sto.getSize() // 2)
        sto.lowpassIIR(fc)
    ref_set = osim.GCVSplineSet(5, sto)
    times, _ = _storage_arrays(sto)
    i0 = sto.findIndex(max(times[0], time_range[0]))
    i1 = sto.findIndex(min(times[-1], time_range[1]))
    np.testing.assert_array_equal(t_out, times[i0:i1 + 1])
    for order, mine in enumerate((q, qd, qdd)):
        ref = np.deg2rad(_osim_spline_eval(ref_set, v.shape[1], t_out, order))
        assert _rel(mine, ref) < REL, (case, order, _rel(mine, ref))


# --- properties and errors ------------------------------------------------------------------

def test_pad_reflects_and_negates():
    t = np.arange(5.0)
    v = np.array([0.0, 1.0, 4.0, 9.0, 16.0])
    tp, vp = FL.pad(t, v, 2)
    np.testing.assert_array_equal(tp, [-2, -1, 0, 1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(vp, [-4, -1, 0, 1, 4, 9, 16, 23, 28])
    with pytest.raises(SolverError):
        FL.pad(t, v, 5)


def test_lowpass_gain_and_dc():
    fs, fc = 100.0, 5.0
    t = np.arange(2000) / fs
    sig = np.c_[np.ones_like(t), np.sin(2 * np.pi * fc * t), np.sin(2 * np.pi * 30 * t)]
    out = FL.lowpass_iir(t, sig, fc)
    assert out.shape == sig.shape
    np.testing.assert_allclose(out[:, 0], 1.0, atol=1e-12)
    mid = slice(500, 1500)
    # forward-backward 3rd-order Butterworth: |H(fc)|^2 = 1/2
    assert np.abs(out[mid, 1]).max() == pytest.approx(0.5, rel=0.02)
    assert np.abs(out[mid, 2]).max() < 0.01


def test_resample_grid_accumulates_steps():
    t = np.array([0.0, 0.011, 0.02, 0.031, 0.04, 0.052, 0.06, 0.07])
    v = np.sin(t)
    tg, vg, dt = FL.resample(t, v, 0.009)
    expect = [0.0]
    while expect[-1] + 0.009 <= t[-1]:
        expect.append(expect[-1] + 0.009)
    np.testing.assert_array_equal(tg, expect)
    np.testing.assert_allclose(vg, np.sin(tg), atol=1e-6)
    assert dt == 0.009


def test_bad_inputs():
    t = np.linspace(0, 1, 20)
    v = np.c_[t, t ** 2]
    with pytest.raises(SolverError):
        FL.prepare_coordinates(t, v, lowpass_hz=0.0)
    with pytest.raises(SolverError):
        FL.prepare_coordinates(t, v[:5])
    with pytest.raises(SolverError):
        FL.prepare_coordinates(t[:4], v[:4])
    t_bad = t.copy()
    t_bad[5] = t_bad[4]
    with pytest.raises(DataFileError):
        FL.prepare_coordinates(t_bad, v)
    with pytest.raises(SolverError):
        FL.prepare_coordinates(t, v, time_range=(0.8, 0.2))
    t_out, q, qd, qdd = FL.prepare_coordinates(t, v, None, (0.3, 0.6))
    assert t_out[0] <= 0.3 < t_out[1] and t_out[-1] <= 0.6
    np.testing.assert_allclose(qd[:, 1], 2 * t_out, atol=1e-9)
    np.testing.assert_allclose(qdd[:, 1], 2.0, atol=1e-7)


@needs_data
@pytest.mark.parametrize("result", [
    REF / "task1_arm26" / "SO_phys" / "arm26_StaticOptimization_force.sto",
    REF / "task1_arm26" / "JR_child_in_child" / "arm26_JointReaction_ReactionLoads.sto",
])
def test_analyze_tool_frames_are_the_same(result):
    """AnalyzeTool (static optimization, joint reaction; 6 Hz, 0-1 s) reports the same frames."""
    _, t, v = read_mot(ARM_IK)
    _, t_ref, _ = read_mot(result)
    t_out = FL.prepare_coordinates(t, np.deg2rad(v), 6.0, (0.0, 1.0))[0]
    assert [f"{x:.8f}" for x in t_out] == [f"{x:.8f}" for x in t_ref]


@pytest.mark.parametrize("T, fc, dt", [(4, 6.0, 0.01), (136, 6.0, 0.01), (2000, 0.5, 0.001),
                                       (30000, 6.0, 0.01), (30000, 0.5, 0.001)])
def test_iir_pass_without_scipy_signal_equals_the_recursion(T, fc, dt, monkeypatch):
    """The numpy IIR pass (issue 11 finding 15: no scipy.signal import) against scipy's
    ``lfilter`` with the equivalent initial state and the sample-by-sample recursion in
    extended precision: sample by sample up to 20,000 samples, blocks beyond."""
    from scipy.signal import lfilter
    from arthron import runtime
    from arthron.solvers import filtering as F
    monkeypatch.setattr(runtime, "light_imports", True)
    rng = np.random.default_rng(T)
    x = np.cumsum(rng.standard_normal((T, 3)), axis=0)
    num, den = F._butter3_coefficients(dt, fc)
    x0, x1, x2 = x[0], x[1], x[2]
    zi = np.stack([num[1] * x2 + num[2] * x1 + num[3] * x0 - den[1] * x2 - den[2] * x1 - den[3] * x0,
                   num[2] * x2 + num[3] * x1 - den[2] * x2 - den[3] * x1, num[3] * x2 - den[3] * x2])
    ref = x.copy()
    if T > 3:
        ref[3:], _ = lfilter(num, den, x[3:], axis=0, zi=zi)
    got = F._iir_pass(num, den, x)
    tol = 1e-12 if fc * dt > 0.01 else 1e-7      # lfilter's own rounding grows as fc·dt → 0
    assert np.abs(got - ref).max() <= tol * np.abs(ref).max()
    if T <= 2000:
        nl, dl, xl = (np.asarray(v, np.longdouble) for v in (num, den, x))
        y = xl.copy()
        for n in range(3, T):
            y[n] = (nl[0] * xl[n] + nl[1] * xl[n - 1] + nl[2] * xl[n - 2] + nl[3] * xl[n - 3]
                    - dl[1] * y[n - 1] - dl[2] * y[n - 2] - dl[3] * y[n - 3])
        assert float(np.abs(got - y).max()) <= 1e-9 * float(np.abs(y).max())
