"""Coordinate preprocessing as OpenSim 4.6's InverseDynamicsTool (and AnalyzeTool) do it.

OpenSim's ``InverseDynamicsTool::run`` prepares the coordinates in this order (reproduced here so
that arthron's inverse dynamics sees the same q, q̇, q̈ as OpenSim, frame for frame):

1. If ``lowpass_cutoff_frequency_for_coordinates >= 0``:

   a. ``Storage::pad(N/2)`` (integer division, N = number of rows): every column, the time
      column included, is extended at both ends by ``Signal::Pad``, i.e. reflected about the end
      sample and negated (``2*s[0] - s[k]``), which keeps value and slope continuous.
   b. ``Storage::lowpassIIR(fc)``: with ``dt_min`` the smallest time step of the padded storage
      and ``dt_avg`` its mean step, when ``dt_avg - dt_min > DBL_EPSILON`` the storage is first
      resampled (``Storage::resample(dt_min, 5)``): a quintic GCVSpline is fitted to every column
      and evaluated from the first time onwards at ``t += dt_min`` (accumulated, so the grid
      drifts from the original sample times) while ``t <= last time``. Then each column goes
      through ``Signal::LowpassIIR(dt_min, fc)``: a 3rd-order Butterworth (bilinear transform
      with pre-warping), run forwards then backwards, whose first three outputs in each pass are
      copies of the inputs. The padding is *not* removed.

2. Angles in degrees are converted to radians (here the caller passes SI values already).
3. ``GCVSplineSet(5, storage)``: a quintic GCVSpline (error variance 0, i.e. the natural
   interpolating quintic spline) per column over the storage times (padded and resampled ones
   when filtered).
4. The output frames are the storage times from ``findIndex(max(t_first, t0))`` to
   ``findIndex(min(t_last, t1))``, where ``findIndex(t)`` is the last row with time ``<= t``
   (0 if none). With filtering these are the resampled times, which is why a trial with
   ms-rounded times gives more frames on a slightly different grid, starting at or before t0.
   q, q̇, q̈ are the spline value and first and second derivatives there.

AnalyzeTool applies the same pad + ``lowpassIIR`` to its coordinates and fits the same quintic
GCVSplineSet.

Everything is vectorized over columns (and frames); the only loops are over the three filter
taps and the binary-search passes.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import runtime
from ..errors import DataFileError, OptionError, SolverError
from ..models.natural_splines import NaturalSpline

__all__ = [
    "pad",
    "resample",
    "lowpass_iir",
    "storage_lowpass_iir",
    "GCVSplineSet",
    "find_index",
    "prepare_coordinates",
]

_DBL_EPSILON = np.finfo(float).eps  # SimTK::Eps
_MAX_RESAMPLE_SIZE = 100000  # Storage::MAX_RESAMPLE_SIZE


def _as_2d(values, n_rows, what="values"):
    v = np.asarray(values, dtype=float)
    squeeze = v.ndim == 1
    if squeeze:
        v = v[:, None]
    if v.ndim != 2 or v.shape[0] != n_rows:
        raise SolverError(f"{what} must have shape (T,) or (T, n) with T = {n_rows}, "
                          f"got {np.shape(values)}")
    return v, squeeze


def _check_times(times, what="times"):
    t = np.asarray(times, dtype=float)
    if t.ndim != 1 or t.size < 1:
        raise SolverError(f"{what} must be a non-empty 1-D array, got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise DataFileError(f"{what} contain non-finite values")
    return t


def pad(times, values, n_pad):
    """Pad times and columns at both ends, as ``Storage::pad`` / ``Signal::Pad``.

    Each signal ``s`` (the time column too) gets ``n_pad`` samples before and after: reflected
    about the end sample and negated, ``2*s[0] - s[n_pad-i]`` before and
    ``2*s[-1] - s[-2-i]`` after, so value and slope are continuous.

    Parameters
    ----------
    times : array_like, shape (T,)
    values : array_like, shape (T,) or (T, n)
    n_pad : int
        0 <= n_pad <= T-1 (InverseDynamicsTool uses ``T // 2``).

    Returns
    -------
    times_padded : ndarray, shape (T + 2*n_pad,)
    values_padded : ndarray, shape (T + 2*n_pad,) or (T + 2*n_pad, n)

    Raises
    ------
    SolverError
        ``n_pad`` negative or larger than T-1 (OpenSim reads out of bounds there).
    """
    t = _check_times(times)
    v, squeeze = _as_2d(values, t.size)
    n = t.size
    n_pad = int(n_pad)
    if n_pad == 0:
        return t.copy(), (v[:, 0] if squeeze else v).copy()
    if n_pad < 0 or n_pad > n - 1:
        raise OptionError(f"pad size {n_pad} must be between 0 and T-1 = {n - 1}")
    pre = np.arange(n_pad, 0, -1)
    post = np.arange(n - 2, n - 2 - n_pad, -1)

    def _pad(s):
        return np.concatenate([2.0 * s[:1] - s[pre], s, 2.0 * s[-1:] - s[post]], axis=0)

    tp = _pad(t)
    vp = _pad(v)
    return tp, (vp[:, 0] if squeeze else vp)


class GCVSplineSet:
    """OpenSim's ``GCVSplineSet(degree, storage)`` with error variance 0, for all columns at once.

    Each column is the natural interpolating spline of odd ``degree`` through (times, column),
    the spline GCVSPL gives with error variance 0, extrapolated outside the data as GCVSPL's
    ``SPLDER`` does (see :class:`arthron.models.functions.GCVSpline`).

    Parameters
    ----------
    times : array_like, shape (T,), strictly increasing
    values : array_like, shape (T,) or (T, n)
    degree : int
        1, 3, 5 (default, what the tools use) or 7.

    Raises
    ------
    SolverError
        Fewer than ``degree + 1`` samples.
    DataFileError
        Times not strictly increasing (GCVSPL rejects them).
    """

    def __init__(self, times, values, degree: int = 5):
        t = _check_times(times)
        v, squeeze = _as_2d(values, t.size)
        half = min(max((int(degree) + 1) // 2, 1), 4)
        if t.size < 2 * half:
            raise SolverError(f"a degree-{2 * half - 1} GCVSpline needs at least {2 * half} "
                              f"samples, got {t.size}")
        if np.any(np.diff(t) <= 0):
            i = int(np.argmax(np.diff(t) <= 0))
            raise DataFileError(f"times must be strictly increasing (row {i + 1}: "
                                f"{t[i]!r} then {t[i + 1]!r})")
        self.times = t
        self.degree = 2 * half - 1
        self._squeeze = squeeze
        self._spline = NaturalSpline(t, v, half)

    def _out(self, r):
        return r[..., 0] if self._squeeze else r

    def value(self, t):
        """Values at times ``t`` (any shape); shape ``t.shape + (n,)`` (or ``t.shape`` for 1-D)."""
        return self._out(self._spline(np.asarray(t, float), 0))

    def derivative(self, t, order: int = 1):
        """``order``-th time derivative (1 or 2) at ``t``; same shape as :meth:`value`."""
        if order not in (1, 2):
            raise ValueError(f"order must be 1 or 2, got {order!r}")
        return self._out(self._spline(np.asarray(t, float), order))


def resample(times, values, dt, degree: int = 5):
    """``Storage::resample(dt, degree)``: spline every column, evaluate on an accumulated grid.

    The grid starts at ``times[0]`` and adds ``dt`` repeatedly (floating-point accumulation, as
    OpenSim's loop ``for (x = min; x <= max; x += dt)``) while ``x <= times[-1]``. When the span
    would need more than 100000 samples, ``dt`` is enlarged to span/100000 as OpenSim does.

    Returns
    -------
    t_new : ndarray, shape (T',)
    values_new : ndarray, shape (T',) or (T', n)
    dt : float
        The step actually used.
    """
    t = _check_times(times)
    dt = float(dt)
    if not dt > 0:
        raise OptionError(f"resampling step must be positive, got {dt!r}")
    span = t[-1] - t[0]
    if span / dt > _MAX_RESAMPLE_SIZE:
        new_dt = span / _MAX_RESAMPLE_SIZE
        warnings.warn(f"resampling at time step {new_dt} (but minimum time step is {dt})",
                      stacklevel=2)
        dt = new_dt
    splines = GCVSplineSet(t, values, degree)
    n_max = int(span / dt) + 3
    steps = np.full(n_max, dt)
    steps[0] = t[0]
    grid = np.cumsum(steps)  # sequential accumulation: same rounding as x += dt
    grid = grid[grid <= t[-1]]
    return grid, splines.value(grid), dt


def _butter3_coefficients(dt, cutoff_hz):
    """Numerator and denominator of OpenSim's 3rd-order low-pass (``Signal::LowpassIIR``)."""
    fs = 1.0 / dt
    fc = float(cutoff_hz)
    if fc >= 0.5 * fs:
        fc = 0.49 * fs
        warnings.warn("Cutoff frequency should be less than half sample frequency. Changing the "
                      f"cutoff frequency to 0.49*(Sample Frequency)...cutoff = {fc}",
                      stacklevel=3)
    wc = 2.0 * np.pi * fc
    wa = np.tan(wc * dt / 2.0)
    wa2 = wa * wa
    wa3 = wa * wa * wa
    denom = (wa + 1.0) * (wa * wa + wa + 1.0)
    num = np.array([wa3 / denom, 3.0 * wa3 / denom, 3.0 * wa3 / denom, wa3 / denom])
    den = np.array([1.0,
                    (3.0 * wa3 + 2.0 * wa2 - 2.0 * wa - 3.0) / denom,
                    (3.0 * wa3 - 2.0 * wa2 - 2.0 * wa + 3.0) / denom,
                    (wa - 1.0) * (wa2 - wa + 1.0) / denom])
    return num, den


_IIR_BLOCK = 8
_IIR_DIRECT_MAX = 20000
#: up to this many columns the direct recursion runs on Python floats, one column at a time
#: (a Python float step costs ~0.1 µs, a NumPy step on all columns ~1 µs)
_IIR_FLOAT_COLUMNS = 8


def _all_pole(a, f, y_hist):
    """``y[n] = f[n] − a1 y[n−1] − a2 y[n−2] − a3 y[n−3]`` for all n (all columns at once),
    with ``y_hist = (y[−1], y[−2], y[−3])``.

    Up to :data:`_IIR_DIRECT_MAX` samples the recursion runs sample by sample (OpenSim's order
    of operations). Longer signals go in blocks of :data:`_IIR_BLOCK` samples, one matrix
    product each (the impulse and initial-condition responses of the recursion: the same
    recursion, reordered): relative differences from the sample-by-sample recursion ≤ 1e-14 at
    usual cut-offs (6 Hz at 100 Hz), ≤ 3e-8 at extreme ones (0.5 Hz at 1 kHz)."""
    T = f.shape[0]
    a1, a2, a3 = a
    if T <= _IIR_DIRECT_MAX and f.ndim == 2 and f.shape[1] <= _IIR_FLOAT_COLUMNS:
        # few columns: the same recursion on Python floats, column by column (the same
        # IEEE operations in the same order, without a NumPy call per sample)
        b1, b2, b3 = float(a1), float(a2), float(a3)
        hist = np.broadcast_to(np.asarray(y_hist, float), (3, f.shape[1]))
        out = np.empty_like(f)
        for j in range(f.shape[1]):
            y1, y2, y3 = float(hist[0, j]), float(hist[1, j]), float(hist[2, j])
            col = []
            for fn in f[:, j].tolist():
                y1, y2, y3 = fn - b1 * y1 - b2 * y2 - b3 * y3, y1, y2
                col.append(y1)
            out[:, j] = col
        return out
    if T <= _IIR_DIRECT_MAX:
        y = np.empty((T + 3,) + f.shape[1:])
        y[2], y[1], y[0] = y_hist
        for n in range(T):
            y[n + 3] = f[n] - a1 * y[n + 2] - a2 * y[n + 1] - a3 * y[n]
        return y[3:]
    L = _IIR_BLOCK
    # responses of the recursion over one block: to a unit forcing at 0 (h) and to each history
    # value (P[:, j] for y[-1-j] = 1)
    h = np.zeros(L + 3)
    P = np.zeros((L + 3, 3))
    h[3] = 1.0
    P[2, 0] = P[1, 1] = P[0, 2] = 1.0
    for n in range(3, L + 3):
        if n > 3:
            h[n] = -a1 * h[n - 1] - a2 * h[n - 2] - a3 * h[n - 3]
        P[n] = -a1 * P[n - 1] - a2 * P[n - 2] - a3 * P[n - 3]
    h, P = h[3:], P[3:]
    idx = np.arange(L)
    G = np.where(idx[:, None] >= idx[None, :], h[np.abs(idx[:, None] - idx[None, :])], 0.0)
    y = np.empty_like(f)
    hist = np.asarray(y_hist, float)
    for b0 in range(0, T, L):
        b1 = min(T, b0 + L)
        n = b1 - b0
        y[b0:b1] = G[:n, :n] @ f[b0:b1] + P[:n] @ hist
        last = y[max(b0, b1 - 3):b1][::-1]
        hist = np.concatenate([last, hist[: 3 - last.shape[0]]]) if last.shape[0] < 3 else last
    return y


def _iir_pass(num, den, sig):
    """One pass of OpenSim's recursion (``Signal::LowpassIIR``): the first three outputs copy
    the input, then ``y[n] = Σ b_k x[n−k] − Σ a_k y[n−k]`` runs from sample 3 on (all columns
    at once): scipy's ``lfilter`` from the state equivalent to that history, or, where
    :data:`arthron.runtime.light_imports` is set (the command line), the numpy recursion
    :func:`_all_pole` without importing scipy.signal."""
    sig = np.asarray(sig, float)
    out = np.empty_like(sig)
    out[:3] = sig[:3]
    if sig.shape[0] > 3 and not runtime.light_imports:
        from scipy.signal import lfilter

        x0, x1, x2 = sig[0], sig[1], sig[2]
        # state of the transposed direct form II equivalent to the history y[0..2] = x[0..2]
        zi = np.stack([
            num[1] * x2 + num[2] * x1 + num[3] * x0 - den[1] * x2 - den[2] * x1 - den[3] * x0,
            num[2] * x2 + num[3] * x1 - den[2] * x2 - den[3] * x1,
            num[3] * x2 - den[3] * x2,
        ])
        out[3:], _ = lfilter(num, den, sig[3:], axis=0, zi=zi)
    elif sig.shape[0] > 3:
        f = (num[0] * sig[3:] + num[1] * sig[2:-1] + num[2] * sig[1:-2] + num[3] * sig[:-3])
        out[3:] = _all_pole(den[1:], f, (sig[2], sig[1], sig[0]))
    return out


def lowpass_iir(times, values, cutoff_hz):
    """``Signal::LowpassIIR`` on uniformly sampled data: 3rd-order Butterworth, forward and
    backward (zero phase, effectively 6th order).

    The sample interval is the smallest time step (what ``Storage::lowpassIIR`` passes after any
    resampling). A cut-off at or above half the sampling rate is lowered to 0.49·fs with a
    warning, as OpenSim does. The first three samples of each pass are copied, not filtered.
    Nothing is padded or resampled here; see :func:`storage_lowpass_iir` for that.

    Parameters
    ----------
    times : array_like, shape (T,), T >= 4
    values : array_like, shape (T,) or (T, n)
    cutoff_hz : float, > 0

    Returns
    -------
    ndarray, same shape as ``values``
    """
    t = _check_times(times)
    v, squeeze = _as_2d(values, t.size)
    if t.size < 4:
        raise SolverError(f"too few data points to filter ({t.size}; OpenSim needs 4)")
    if not cutoff_hz > 0:
        raise OptionError(f"low-pass cut-off must be positive, got {cutoff_hz!r}")
    dt = float(np.min(np.diff(t)))
    if dt < _DBL_EPSILON:
        raise DataFileError("times are not increasing; the data cannot be filtered")
    num, den = _butter3_coefficients(dt, cutoff_hz)
    out = _iir_pass(num, den, v)
    out = _iir_pass(num, den, out[::-1])[::-1].copy()
    return out[:, 0] if squeeze else out


def storage_lowpass_iir(times, values, cutoff_hz):
    """``Storage::lowpassIIR``: resample at the smallest step if the sampling is not uniform
    (``dt_avg - dt_min > DBL_EPSILON``), then :func:`lowpass_iir`.

    Returns
    -------
    t_new : ndarray, shape (T',)
        The (possibly resampled) times.
    values_filtered : ndarray, shape (T',) or (T', n)
    """
    t = _check_times(times)
    v, squeeze = _as_2d(values, t.size)
    if t.size < 2:
        raise SolverError("too few data points to filter")
    dtmin = float(np.min(np.diff(t)))
    avg = (t[-1] - t[0]) / (t.size - 1)
    if dtmin < _DBL_EPSILON:
        raise DataFileError("times are not strictly increasing; the data cannot be resampled "
                            "for filtering")
    if avg - dtmin > _DBL_EPSILON:
        t, v, dtmin = resample(t, v, dtmin, 5)
    if t.size < 4:
        raise SolverError(f"too few data points to filter ({t.size}; OpenSim needs 4)")
    if not cutoff_hz > 0:
        raise OptionError(f"low-pass cut-off must be positive, got {cutoff_hz!r}")
    num, den = _butter3_coefficients(dtmin, cutoff_hz)
    out = _iir_pass(num, den, v)
    out = _iir_pass(num, den, out[::-1])[::-1].copy()
    return t, (out[:, 0] if squeeze else out)


def find_index(times, t):
    """``Storage::findIndex``: the last row whose time is ``<= t`` (0 when ``t`` precedes all)."""
    times = np.asarray(times, dtype=float)
    return int(max(np.searchsorted(times, t, side="right") - 1, 0))


def check_time_range(time_range, strict: bool = True):
    """None, or (t0, t1) as floats with t0 < t1 (s; t0 ≤ t1 without ``strict``: one instant).
    OptionError otherwise."""
    if time_range is None:
        return None
    try:
        t0, t1 = (float(v) for v in time_range)
    except (TypeError, ValueError):
        raise OptionError(f"time range must be two numbers T0 T1, got {time_range!r}") from None
    if math.isnan(t0) or math.isnan(t1) or not (t0 < t1 or (not strict and t0 == t1)):
        raise OptionError(f"time range must be increasing (T0 < T1), got {t0:g} {t1:g}")
    return (t0, t1)


def check_lowpass(lowpass_hz):
    """None, or the cut-off frequency (Hz) as a float: finite; ≤ 0 means no filtering
    (OpenSim's -1). OptionError for NaN or infinity."""
    if lowpass_hz is None:
        return None
    try:
        f = float(lowpass_hz)
    except (TypeError, ValueError):
        raise OptionError(f"low-pass cut-off must be a number (Hz), got {lowpass_hz!r}") from None
    if not math.isfinite(f):
        raise OptionError(f"low-pass cut-off must be a finite frequency in Hz (or -1: none), got {lowpass_hz}")
    return f


def lowpass_cutoff(lowpass_hz):
    """The cut-off a tool filters the coordinates with: None for none (None, or ≤ 0 as OpenSim's
    -1), else the frequency (Hz) as a float; checked by :func:`check_lowpass` (OptionError for
    NaN, infinity or text)."""
    f = check_lowpass(lowpass_hz)
    return None if f is None or f <= 0 else f


def prepare_coordinates(times, values, lowpass_hz=None, time_range=None, accelerations="q",
                        source=None):
    """q, q̇, q̈ at the frames where OpenSim's InverseDynamicsTool solves.

    Parameters
    ----------
    times : array_like, shape (T,)
        Sample times of the coordinates file (s), increasing.
    values : array_like, shape (T, n) (or (T,))
        Coordinate values in SI units (rad, m); convert degrees first.
    lowpass_hz : float or None
        ``lowpass_cutoff_frequency_for_coordinates``. None or negative: no filtering (OpenSim's
        default -1). Positive: pad by T//2, resample if needed, 3rd-order Butterworth forwards and
        backwards (see the module docstring). 0 is rejected (OpenSim would run a degenerate
        filter).
    time_range : (float, float) or None
        The tool's ``time_range``; None means all the data.
    accelerations : "q" or "speeds"
        "q" (InverseDynamicsTool, AnalyzeTool's kinematics): q̈ is the second derivative of the
        coordinates' spline. "speeds" (OpenSim 4.6's StaticOptimization): q̈ is the first
        derivative of a second quintic GCVSpline fitted, over every row of the (padded,
        resampled) storage, to the speeds q̇ of the first one there: ``StaticOptimization::begin``
        splines AnalyzeTool's states storage (``GCVSplineSet(5, states)``) and
        ``StaticOptimizationTarget::computeConstraintVector`` takes the target acceleration
        as the derivative of the speed's spline. Inside a smooth trial the two agree closely;
        near its ends they differ (on a 21-frame trial of Rajagopal et al. (2016)'s model by up
        to 5 % of the lumbar torque at the first frame).
    source : the motion's file (or None), named in the errors about its rows

    Returns
    -------
    t_out : ndarray, shape (T',)
        Frame times: the rows of the (padded, resampled) storage from the last one at or before
        ``max(t_first, t0)`` to the last one at or before ``min(t_last, t1)``.
    q, qd, qdd : ndarray, shape (T', n) each (or (T',) for 1-D ``values``)
        Quintic-spline value, first and second time derivative at ``t_out``.

    Raises
    ------
    SolverError
        Bad shapes, cut-off 0, an empty time range; fewer than 6 rows (after the filter's
        padding: the quintic GCVSplines of OpenSim's tools need 6), naming ``source``.
    DataFileError
        Times not strictly increasing.
    """
    time_range, lowpass_hz = check_time_range(time_range, strict=False), check_lowpass(lowpass_hz)
    t = _check_times(times)
    v, squeeze = _as_2d(values, t.size)
    if time_range is not None:
        a, b = time_range       # floats, a <= b, no NaN (check_time_range)
        if b < t[0] or a > t[-1]:
            raise OptionError(f"time range {a:g}..{b:g} s lies outside the data "
                              f"({float(t[0]):g}..{float(t[-1]):g} s)")
    if lowpass_hz is not None and lowpass_hz >= 0:
        if lowpass_hz == 0:
            raise OptionError("lowpass_hz = 0 is not a usable cut-off (use None or a negative "
                              "value for no filtering)")
        t, v = pad(t, v, t.size // 2)
        t, v = storage_lowpass_iir(t, v, lowpass_hz)
    if t.size < 6:
        raise SolverError(f"{t.size} row(s) of coordinates: OpenSim's tools fit them with quintic "
                            "GCVSplines, which need at least 6 rows (a longer motion, or a low-pass "
                            "filter, whose padding adds rows)", source)
    splines = GCVSplineSet(t, v, 5)
    t0, t1 = (-np.inf, np.inf) if time_range is None else time_range
    start = t[0] if t[0] > t0 else t0
    final = t[-1] if t[-1] < t1 else t1
    i0 = find_index(t, start)
    i1 = find_index(t, final)
    if i1 < i0:
        raise OptionError(f"time_range ({t0}, {t1}) selects no frame of data spanning "
                          f"{t[0]}..{t[-1]} s")
    t_out = t[i0:i1 + 1].copy()
    q = splines.value(t_out)
    if accelerations == "q":
        qd = splines.derivative(t_out, 1)
        qdd = splines.derivative(t_out, 2)
    elif accelerations == "speeds":
        # the speeds at every row (the frames' among them: a spline's value at a time does not
        # depend on the other times evaluated with it)
        qd_all = splines.derivative(t, 1)
        qd = qd_all[i0:i1 + 1].copy()
        qdd = GCVSplineSet(t, qd_all, 5).derivative(t_out, 1)
    else:
        raise OptionError(f"accelerations must be 'q' or 'speeds', got {accelerations!r}")
    if squeeze:
        q, qd, qdd = q[:, 0], qd[:, 0], qdd[:, 0]
    return t_out, q, qd, qdd
