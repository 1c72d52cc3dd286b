"""OpenSim's one-argument ``Function`` classes as vectorized evaluators.

Every class reproduces the value and the first and second derivatives that OpenSim 4.6 computes
(``Function::calcValue`` / ``calcDerivative``), including its behaviour outside the knot range and
at the knots themselves, so that a model evaluated by arthron agrees with OpenSim to rounding:

========================== ===============================================================
class                      OpenSim behaviour reproduced
========================== ===============================================================
:class:`Constant`          ``Constant``: the value, derivatives 0.
:class:`LinearFunction`    ``LinearFunction``: ``slope*x + intercept`` (``<coefficients>``).
:class:`PolynomialFunction` ``PolynomialFunction``: coefficients from highest order down.
:class:`SimmSpline`        ``SimmSpline``: the cubic spline of SIMM (Forsythe, Malcolm and
                           Moler's end conditions: third derivatives from divided differences;
                           2 points give a line), linear extrapolation with the end slope.
:class:`NaturalCubicSpline` ``NaturalCubicSpline``: the same algorithm as ``SimmSpline``.
:class:`GCVSpline`         ``GCVSpline``: Woltring's GCVSPL natural spline of odd degree
                           ``2m-1`` fitted on load (4.x refits from ``x``/``y``); with the error
                           variance 0 that OpenSim uses it interpolates the data. Outside the
                           knots it continues as the degree ``m-1`` polynomial GCVSPL's
                           ``SPLDER`` evaluates.
:class:`PiecewiseLinearFunction` ``PiecewiseLinearFunction``: linear between points, end
                           slopes outside.
:class:`PiecewiseConstantFunction` ``PiecewiseConstantFunction``.
:class:`StepFunction`      ``StepFunction`` (SimTK ``Function::Step``, quintic smooth step).
:class:`Sine`              ``Sine``: ``amplitude*sin(omega*x + phase) + offset``.
:class:`MultiplierFunction` ``MultiplierFunction``: ``scale * function(x)``.
========================== ===============================================================

Where OpenSim locates ``x`` in its knots with a binary search, the same search is replayed
(vectorized), so that at a knot the same polynomial piece is used as in OpenSim.

:mod:`arthron.io.osim_functions` reads them from OpenSim 4.x XML and the 3.x forms
(``<function>`` wrappers, ``natCubicSpline``) and writes 4.x XML; ``xml_tag`` is each class's
OpenSim element name. The multi-argument ``MultivariatePolynomialFunction`` is in
:mod:`arthron.models.multivariate`, OpenSim's Lepton expressions in
:mod:`arthron.models.expressions`.
"""
from __future__ import annotations


import numpy as np

from ..errors import UnsupportedFeature
from .natural_splines import NaturalSpline

__all__ = [
    "Function",
    "Constant",
    "LinearFunction",
    "PolynomialFunction",
    "SimmSpline",
    "NaturalCubicSpline",
    "GCVSpline",
    "PiecewiseLinearFunction",
    "PiecewiseConstantFunction",
    "StepFunction",
    "Sine",
    "MultiplierFunction",
    "scale_function",
]

# Constants of OpenSim's SimmMacros.h, used by the SIMM-derived classes.
_TINY_NUMBER = 1e-7
_ROUNDOFF_ERROR = 2e-13


def _fmt(v: float) -> str:
    """Shortest text that reads back to the same double."""
    v = float(v)
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def _fmt_list(values) -> str:
    return " ".join(_fmt(v) for v in np.asarray(values, dtype=float).ravel())


def _as_x(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


def _check_order(order: int, cls: str) -> int:
    if order not in (1, 2):
        raise ValueError(f"{cls}.derivative: order must be 1 or 2, got {order!r}")
    return int(order)


def _opensim_search(knots: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Index k with knots[k] <= a <= knots[k+1], found as OpenSim's SIMM-style binary search does.

    ``a`` must lie within [knots[0], knots[-1]] (values outside are clipped first). The loop runs
    over all points at once; it needs about log2(n) passes.
    """
    n = len(knots)
    a = np.clip(a, knots[0], knots[-1])
    if n >= 2:
        # a point strictly between two knots has one interval, found by searchsorted; only
        # points on a knot need the search's own choice
        k = np.minimum(np.searchsorted(knots, a, side="right") - 1, n - 2)
        on = (a == knots[k]) | (a == knots[np.minimum(k + 1, n - 1)])
        if not on.any():
            return k
        if not on.all():
            k[on] = _simm_binary_search(knots, a[on])
            return k
    return _simm_binary_search(knots, a)


def _simm_binary_search(knots: np.ndarray, a: np.ndarray) -> np.ndarray:
    """OpenSim's SIMM-style binary search itself, pass by pass over all points at once (the
    reference of :func:`_opensim_search`'s fast path); ``a`` within [knots[0], knots[-1]]."""
    n = len(knots)
    i = np.zeros(a.shape, dtype=np.intp)
    j = np.full(a.shape, n, dtype=np.intp)
    k = np.zeros(a.shape, dtype=np.intp)
    active = np.ones(a.shape, dtype=bool)
    for _ in range(4 * max(n, 2).bit_length() + 8):
        if not active.any():
            break
        kk = (i + j) // 2
        kk1 = np.minimum(kk + 1, n - 1)
        lt = a < knots[kk]
        gt = ~lt & (a > knots[kk1])
        j = np.where(active & lt, kk, j)
        i = np.where(active & gt, kk, i)
        done = active & ~lt & ~gt
        k = np.where(done, kk, k)
        active &= ~done
    return np.minimum(k, max(n - 2, 0))


class Function:
    """Base class: a scalar function of one variable, as OpenSim's ``Function``.

    Attributes
    ----------
    name : str or None
        The XML ``name`` attribute.
    """

    xml_tag = "Function"

    def __init__(self, name: str | None = None):
        self.name = name

    # -- evaluation -------------------------------------------------------------------------
    def value(self, x) -> np.ndarray:
        """Value at ``x`` (float or ndarray of any shape); returns an ndarray of the same shape."""
        raise NotImplementedError

    def derivative(self, x, order: int = 1) -> np.ndarray:
        """First (``order=1``) or second (``order=2``) derivative at ``x``; same shape as ``x``."""
        raise NotImplementedError

    def __call__(self, x) -> np.ndarray:
        return self.value(x)

    def value_and_derivative(self, x):
        """``(value(x), derivative(x, 1))`` in one call: floats for a Python float ``x``, arrays
        otherwise. Subclasses make it cheap for the per-frame kinematics of joint axes."""
        return self.value(x), self.derivative(x, 1)

    def value_and_derivatives(self, x, order: int = 2):
        """``(value(x), derivative(x, 1), derivative(x, 2))`` (the last None for ``order=1``)
        for an array ``x``: what the kinematics of a joint axis needs; subclasses share the
        work of the three (same numbers)."""
        return self.value(x), self.derivative(x, 1), (self.derivative(x, 2) if order > 1 else None)

    @property
    def is_constant(self) -> bool:
        """True when the function does not depend on its argument (a ``Constant``)."""
        return False

    def __repr__(self) -> str:
        nm = f" name={self.name!r}" if self.name else ""
        return f"<{type(self).__name__}{nm}>"


class Constant(Function):
    """``Constant``: ``value`` everywhere; derivatives 0."""

    xml_tag = "Constant"

    def __init__(self, value: float, name: str | None = None):
        super().__init__(name)
        self.constant = float(value)

    def value(self, x):
        return np.full(_as_x(x).shape, self.constant)

    def derivative(self, x, order=1):
        _check_order(order, "Constant")
        return np.zeros(_as_x(x).shape)

    def value_and_derivative(self, x):
        if isinstance(x, float):
            return self.constant, 0.0
        return self.value(x), self.derivative(x, 1)

    @property
    def is_constant(self):
        return True


class LinearFunction(Function):
    """``LinearFunction``: ``slope*x + intercept``; XML ``<coefficients>slope intercept``."""

    xml_tag = "LinearFunction"

    def __init__(self, slope: float = 1.0, intercept: float = 0.0, name: str | None = None):
        super().__init__(name)
        self.slope = float(slope)
        self.intercept = float(intercept)

    def value(self, x):
        return self.slope * _as_x(x) + self.intercept

    def derivative(self, x, order=1):
        order = _check_order(order, "LinearFunction")
        return np.full(_as_x(x).shape, self.slope if order == 1 else 0.0)

    def value_and_derivative(self, x):
        if isinstance(x, float):
            return self.slope * x + self.intercept, self.slope
        return self.value(x), self.derivative(x, 1)


class PolynomialFunction(Function):
    """``PolynomialFunction``: coefficients from the highest order to the constant term."""

    xml_tag = "PolynomialFunction"

    def __init__(self, coefficients, name: str | None = None):
        super().__init__(name)
        self.coefficients = np.atleast_1d(np.asarray(coefficients, dtype=float)).copy()

    def _horner(self, coefs, x):
        out = np.zeros(x.shape)
        for c in coefs:
            out = out * x + c
        return out

    def value(self, x):
        return self._horner(self.coefficients, _as_x(x))

    def derivative(self, x, order=1):
        order = _check_order(order, "PolynomialFunction")
        c = self.coefficients
        for _ in range(order):
            deg = len(c) - 1
            if deg <= 0:
                c = np.zeros(1)
                break
            c = c[:-1] * np.arange(deg, 0, -1)
        return self._horner(c, _as_x(x))

    @property
    def is_constant(self):
        return len(self.coefficients) <= 1 or not np.any(self.coefficients[:-1])


class _XYFunction(Function):
    """A function defined by knots ``x`` (strictly increasing) and values ``y``."""

    min_points = 2

    def __init__(self, x, y, name: str | None = None):
        super().__init__(name)
        self.x = np.atleast_1d(np.asarray(x, dtype=float)).copy()
        self.y = np.atleast_1d(np.asarray(y, dtype=float)).copy()
        if self.x.ndim != 1 or self.x.shape != self.y.shape:
            raise ValueError(f"{type(self).__name__}: x and y must be 1-D of equal length "
                             f"(got {self.x.shape} and {self.y.shape})")
        if len(self.x) < self.min_points:
            raise ValueError(f"{type(self).__name__}: needs at least {self.min_points} points, "
                             f"got {len(self.x)}")
        if not np.all(np.isfinite(self.x)) or not np.all(np.isfinite(self.y)):
            raise ValueError(f"{type(self).__name__}: x and y must be finite")


class SimmSpline(_XYFunction):
    """``SimmSpline``: SIMM's cubic interpolating spline (OpenSim ``SimmSpline.cpp``).

    The coefficients are computed with the same tridiagonal elimination as OpenSim (end
    conditions: the third derivative at each end equals that of the cubic through the first or
    last four points; three points give zero end third derivative conditions, two points a
    straight line; knot spacings below 1e-7 are replaced by 1e-7). Outside ``[x[0], x[-1]]`` the
    function continues linearly with the end slope (second derivative 0). Within 2e-13 of an end
    knot it returns the end value.

    Parameters
    ----------
    x, y : array_like, shape (n,), n >= 2
        Knots (increasing) and values.
    """

    xml_tag = "SimmSpline"

    def __init__(self, x, y, name: str | None = None):
        super().__init__(x, y, name)
        self._b, self._c, self._d = self._coefficients(list(map(float, self.x)),
                                                       list(map(float, self.y)))

    @staticmethod
    def _coefficients(x, y):
        # Same arithmetic, in the same order, as SimmSpline::calcCoefficients.
        n = len(x)
        b = [0.0] * n
        c = [0.0] * n
        d = [0.0] * n
        if n == 2:
            t = max(_TINY_NUMBER, x[1] - x[0])
            b[0] = b[1] = (y[1] - y[0]) / t
            return np.array(b), np.array(c), np.array(d)
        nm1, nm2 = n - 1, n - 2
        d[0] = max(_TINY_NUMBER, x[1] - x[0])
        c[1] = (y[1] - y[0]) / d[0]
        for i in range(1, nm1):
            d[i] = max(_TINY_NUMBER, x[i + 1] - x[i])
            b[i] = 2.0 * (d[i - 1] + d[i])
            c[i + 1] = (y[i + 1] - y[i]) / d[i]
            c[i] = c[i + 1] - c[i]
        b[0] = -d[0]
        b[nm1] = -d[nm2]
        c[0] = 0.0
        c[nm1] = 0.0
        if n > 3:
            d31 = max(_TINY_NUMBER, x[3] - x[1])
            d20 = max(_TINY_NUMBER, x[2] - x[0])
            d1 = max(_TINY_NUMBER, x[nm1] - x[n - 3])
            d2 = max(_TINY_NUMBER, x[nm2] - x[n - 4])
            d30 = max(_TINY_NUMBER, x[3] - x[0])
            d3 = max(_TINY_NUMBER, x[nm1] - x[n - 4])
            c[0] = c[2] / d31 - c[1] / d20
            c[nm1] = c[nm2] / d1 - c[n - 3] / d2
            c[0] = c[0] * d[0] * d[0] / d30
            c[nm1] = -c[nm1] * d[nm2] * d[nm2] / d3
        for i in range(1, n):
            t = d[i - 1] / b[i - 1]
            b[i] -= t * d[i - 1]
            c[i] -= t * c[i - 1]
        c[nm1] /= b[nm1]
        for j in range(nm1):
            i = nm2 - j
            c[i] = (c[i] - d[i] * c[i + 1]) / b[i]
        b[nm1] = (y[nm1] - y[nm2]) / d[nm2] + d[nm2] * (c[nm2] + 2.0 * c[nm1])
        for i in range(nm1):
            b[i] = (y[i + 1] - y[i]) / d[i] - d[i] * (c[i + 1] + 2.0 * c[i])
            d[i] = (c[i + 1] - c[i]) / d[i]
            c[i] *= 3.0
        c[nm1] *= 3.0
        d[nm1] = d[nm2]
        return np.array(b), np.array(c), np.array(d)

    def _locate(self, a):
        """Masks (below, above, at start, at end, interior) and interval index per point."""
        x = self.x
        n = len(x)
        below = a < x[0]
        above = a > x[-1]
        rest = ~below & ~above
        at0 = rest & (np.abs(a - x[0]) <= _ROUNDOFF_ERROR)
        atn = rest & ~at0 & (np.abs(a - x[-1]) <= _ROUNDOFF_ERROR)
        inner = rest & ~at0 & ~atn
        if n < 3:
            k = np.zeros(a.shape, dtype=np.intp)
        else:
            k = _opensim_search(x, np.where(inner, a, x[0]))
        return below, above, at0, atn, inner, k

    def value(self, x):
        return self._evaluate(_as_x(x), (0,))[0]

    def derivative(self, x, order=1):
        order = _check_order(order, type(self).__name__)
        return self._evaluate(_as_x(x), (order,))[0]

    def value_and_derivatives(self, x, order: int = 2):
        """Value, slope and (``order=2``) second derivative with the interval found once; the
        same numbers as :meth:`value` and :meth:`derivative`."""
        a = _as_x(x)
        if order > 1:
            return tuple(self._evaluate(a, (0, 1, 2)))
        return tuple(self._evaluate(a, (0, 1))) + (None,)

    def _evaluate(self, a, orders):
        """The value (order 0) and derivatives (1, 2) at ``a``, in the order asked."""
        b, c, d, xk, yk = self._b, self._c, self._d, self.x, self.y
        below, above, at0, atn, inner, k = self._locate(a)
        dx = a - xk[k]
        res = []
        for order in orders:
            if order == 0:
                out = yk[k] + dx * (b[k] + dx * (c[k] + dx * d[k]))
                out = np.where(below, yk[0] + (a - xk[0]) * b[0], out)
                out = np.where(above, yk[-1] + (a - xk[-1]) * b[-1], out)
                out = np.where(at0, yk[0], out)
                out = np.where(atn, yk[-1], out)
            elif order == 1:
                out = b[k] + dx * (2.0 * c[k] + 3.0 * dx * d[k])
                out = np.where(below | at0, b[0], out)
                out = np.where(above | atn, b[-1], out)
            else:
                out = 2.0 * c[k] + 6.0 * dx * d[k]
                out = np.where(at0, 2.0 * c[0], out)
                out = np.where(atn, 2.0 * c[-1], out)
                out = np.where(below | above, 0.0, out)
            res.append(out)
        return res

    def value_and_derivative(self, x):
        """Value and slope in one pass (the interval found once, by bisection; at an interior
        knot either neighbouring cubic may be used, equal to rounding)."""
        xk, yk, b, c, d = self.x, self.y, self._b, self._c, self._d
        n = len(xk)
        if isinstance(x, float):
            import bisect
            if x < xk[0]:
                return float(yk[0] + (x - xk[0]) * b[0]), float(b[0])
            if x > xk[-1]:
                return float(yk[-1] + (x - xk[-1]) * b[-1]), float(b[-1])
            if abs(x - xk[0]) <= _ROUNDOFF_ERROR:
                return float(yk[0]), float(b[0])
            if abs(x - xk[-1]) <= _ROUNDOFF_ERROR:
                return float(yk[-1]), float(b[-1])
            k = min(max(bisect.bisect_right(self._xlist(), x) - 1, 0), max(n - 2, 0))
            dx = x - float(xk[k])
            bk, ck, dk = float(b[k]), float(c[k]), float(d[k])
            return (float(yk[k]) + dx * (bk + dx * (ck + dx * dk)),
                    bk + dx * (2.0 * ck + 3.0 * dx * dk))
        a = _as_x(x)
        if n >= 2:       # the interval, clipped to the first and last (one search, no clip)
            k = np.searchsorted(xk[1:-1], a, side="right")
        else:
            k = np.zeros(a.shape, dtype=np.intp)
        tab = self._table()
        xv, yv, bv, cv, dv3 = tab[k].T if a.ndim == 1 else np.moveaxis(tab[k], -1, 0)
        dx = a - xv
        v = yv + dx * (bv + dx * (cv + dx * dv3))
        dv = bv + dx * (2.0 * cv + 3.0 * dx * dv3)
        lo = a < xk[0] + _ROUNDOFF_ERROR
        hi = a > xk[-1] - _ROUNDOFF_ERROR
        if lo.any() or hi.any():
            v = np.where(lo, yk[0] + np.minimum(a - xk[0], 0.0) * b[0], v)
            dv = np.where(lo, b[0], dv)
            v = np.where(hi, yk[-1] + np.maximum(a - xk[-1], 0.0) * b[-1], v)
            dv = np.where(hi, b[-1], dv)
        return v, dv

    def _table(self):
        """(n, 5) knots and coefficients (x, y, b, c, d) side by side, one row per interval
        (one gather per evaluation), cached per knot array."""
        t = getattr(self, "_tab", None)
        if t is None or t[0] is not self.x or t[1] is not self._b:
            t = self._tab = (self.x, self._b, np.column_stack([self.x, self.y, self._b, self._c,
                                                                self._d]))
        return t[2]

    def _xlist(self):
        """The knots as a Python list (for :mod:`bisect`), cached per knot array."""
        xl = getattr(self, "_xl", None)
        if xl is None or xl[0] is not self.x:
            xl = self._xl = (self.x, [float(v) for v in self.x])
        return xl[1]


class NaturalCubicSpline(SimmSpline):
    """``NaturalCubicSpline``: the same algorithm as :class:`SimmSpline` (OpenSim 4.6 even loads
    a ``<NaturalCubicSpline>`` element as a ``SimmSpline``)."""

    xml_tag = "NaturalCubicSpline"


class PiecewiseLinearFunction(_XYFunction):
    """``PiecewiseLinearFunction``: straight segments between the points; outside, the first or
    last segment's slope continues. The derivative at an interior knot is that of the segment
    OpenSim's binary search picks; second derivatives are 0."""

    xml_tag = "PiecewiseLinearFunction"

    def __init__(self, x, y, name: str | None = None):
        super().__init__(x, y, name)
        dx = np.maximum(_TINY_NUMBER, np.diff(self.x))
        self._b = np.append(np.diff(self.y) / dx, 0.0)
        self._b[-1] = self._b[-2]

    def _locate(self, a):
        x = self.x
        below = a < x[0]
        above = a > x[-1]
        rest = ~below & ~above
        at0 = rest & (np.abs(a - x[0]) <= _ROUNDOFF_ERROR)
        atn = rest & ~at0 & (np.abs(a - x[-1]) <= _ROUNDOFF_ERROR)
        inner = rest & ~at0 & ~atn
        k = _opensim_search(x, np.where(inner, a, x[0]))
        return below, above, at0, atn, k

    def value(self, x):
        a = _as_x(x)
        xk, yk, b = self.x, self.y, self._b
        below, above, at0, atn, k = self._locate(a)
        out = yk[k] + (a - xk[k]) * b[k]
        out = np.where(below, yk[0] + (a - xk[0]) * b[0], out)
        out = np.where(above, yk[-1] + (a - xk[-1]) * b[-1], out)
        out = np.where(at0, yk[0], out)
        out = np.where(atn, yk[-1], out)
        return out

    def derivative(self, x, order=1):
        order = _check_order(order, "PiecewiseLinearFunction")
        a = _as_x(x)
        if order == 2:
            return np.zeros(a.shape)
        b = self._b
        below, above, at0, atn, k = self._locate(a)
        out = b[k]
        out = np.where(below | at0, b[0], out)
        out = np.where(above | atn, b[-1], out)
        return out


class PiecewiseConstantFunction(_XYFunction):
    """``PiecewiseConstantFunction``: ``y[k]`` on the interval OpenSim's binary search picks
    (``y[0]`` at and below the first knot, ``y[-1]`` at and above the last); derivatives 0."""

    xml_tag = "PiecewiseConstantFunction"
    min_points = 1

    def value(self, x):
        a = _as_x(x)
        xk, yk = self.x, self.y
        lo = (a < xk[0]) | (np.abs(a - xk[0]) <= _ROUNDOFF_ERROR)
        hi = ~lo & ((a > xk[-1]) | (np.abs(a - xk[-1]) <= _ROUNDOFF_ERROR))
        if len(xk) >= 2:
            k = _opensim_search(xk, np.where(lo | hi, xk[0], a))
            out = yk[k]
        else:
            out = np.full(a.shape, yk[0])
        out = np.where(lo, yk[0], out)
        out = np.where(hi, yk[-1], out)
        return out

    def derivative(self, x, order=1):
        _check_order(order, "PiecewiseConstantFunction")
        return np.zeros(_as_x(x).shape)


class GCVSpline(_XYFunction):
    """``GCVSpline``: natural spline of odd degree ``2*half_order-1`` through the data.

    OpenSim 4.x refits the spline from ``x``/``y`` when it is loaded, with Woltring's GCVSPL in
    "known error variance" mode (SimTK ``SplineFitter::fitFromErrorVariance``), unit weights. With
    ``error_variance = 0`` (what ``GCVSplineSet`` and the tools use) GCVSPL drives the smoothing
    parameter to its lower bound, which leaves the natural interpolating spline (derivatives
    ``half_order .. 2*half_order-2`` zero at both ends) to about 1e-15 relative. That spline is
    computed here directly (scipy B-spline collocation). Outside ``[x[0], x[-1]]`` GCVSPL's
    ``SPLDER`` continues with the polynomial of degree ``half_order-1`` that matches the end
    value and first ``half_order-1`` derivatives; that is reproduced too (so the second
    derivative of a quintic spline is constant outside and its third is 0).

    Parameters
    ----------
    degree : int
        1, 3, 5 or 7 (OpenSim clamps other values the same way: ``half_order = (degree+1)//2``
        within 1..4).
    x, y : array_like, shape (n,), n >= degree+1
    error_variance : float
        Only 0 is supported (:class:`~arthron.errors.UnsupportedFeature` otherwise).

    Raises
    ------
    ValueError
        Too few points, non-increasing ``x``.
    UnsupportedFeature
        ``error_variance != 0`` (a smoothing, not interpolating, fit).
    """

    xml_tag = "GCVSpline"

    def __init__(self, degree, x, y, error_variance: float = 0.0, name: str | None = None):
        half = (int(degree) + 1) // 2
        self.half_order = min(max(half, 1), 4)
        self.min_points = 2 * self.half_order
        super().__init__(x, y, name)
        if np.any(np.diff(self.x) <= 0):
            raise ValueError("GCVSpline: x must be strictly increasing")
        self.error_variance = float(error_variance)
        if self.error_variance != 0.0:
            raise UnsupportedFeature(
                f"GCVSpline with error_variance={self.error_variance} (a smoothing fit) is not "
                "implemented; only the interpolating fit (error_variance 0) is")
        self._fit()

    @property
    def degree(self) -> int:
        return 2 * self.half_order - 1

    def _fit(self):
        self._nat = NaturalSpline(self.x, self.y, self.half_order)

    def _eval(self, x, order):
        return self._nat(_as_x(x), order)

    def value(self, x):
        return self._eval(x, 0)

    def derivative(self, x, order=1):
        return self._eval(x, _check_order(order, "GCVSpline"))


class StepFunction(Function):
    """``StepFunction`` (SimTK ``Function::Step``): ``start_value`` up to
    ``transition_start_time``, ``end_value`` from ``transition_end_time`` on, and in between
    ``y0 + (y1-y0)*(10s^3 - 15s^4 + 6s^5)`` with ``s = (x-x0)/(x1-x0)``."""

    xml_tag = "StepFunction"

    def __init__(self, transition_start_time=0.0, transition_end_time=1.0, start_value=0.0,
                 end_value=1.0, name: str | None = None):
        super().__init__(name)
        self.transition_start_time = float(transition_start_time)
        self.transition_end_time = float(transition_end_time)
        self.start_value = float(start_value)
        self.end_value = float(end_value)

    def _s(self, a):
        x0, x1 = self.transition_start_time, self.transition_end_time
        s = (a - x0) / (x1 - x0)
        return np.clip(s, 0.0, 1.0), (a > x0) & (a < x1)

    def value(self, x):
        a = _as_x(x)
        s, _ = self._s(a)
        f = s * s * s * (10.0 + s * (6.0 * s - 15.0))
        return self.start_value + (self.end_value - self.start_value) * f

    def derivative(self, x, order=1):
        order = _check_order(order, "StepFunction")
        a = _as_x(x)
        s, mid = self._s(a)
        w = 1.0 / (self.transition_end_time - self.transition_start_time)
        dy = self.end_value - self.start_value
        if order == 1:
            f = 30.0 * s * s * (1.0 + s * (s - 2.0)) * w
        else:
            f = 60.0 * s * (1.0 + s * (2.0 * s - 3.0)) * w * w
        return np.where(mid, dy * f, 0.0)

    @property
    def is_constant(self):
        return self.start_value == self.end_value


class Sine(Function):
    """``Sine``: ``amplitude*sin(omega*x + phase) + offset``."""

    xml_tag = "Sine"

    def __init__(self, amplitude=1.0, omega=1.0, phase=0.0, offset=0.0, name: str | None = None):
        super().__init__(name)
        self.amplitude = float(amplitude)
        self.omega = float(omega)
        self.phase = float(phase)
        self.offset = float(offset)

    def value(self, x):
        return self.amplitude * np.sin(self.omega * _as_x(x) + self.phase) + self.offset

    def derivative(self, x, order=1):
        order = _check_order(order, "Sine")
        arg = self.omega * _as_x(x) + self.phase
        if order == 1:
            return self.amplitude * self.omega * np.cos(arg)
        return -self.amplitude * self.omega * self.omega * np.sin(arg)

    @property
    def is_constant(self):
        return self.amplitude == 0.0 or self.omega == 0.0


class MultiplierFunction(Function):
    """``MultiplierFunction``: ``scale * function(x)`` (how OpenSim's ScaleTool scales joint
    translations and moving path points).

    Parameters
    ----------
    function : Function
        The wrapped function.
    scale : float
    """

    xml_tag = "MultiplierFunction"

    def __init__(self, function: Function, scale: float = 1.0, name: str | None = None):
        super().__init__(name)
        if not isinstance(function, Function):
            raise TypeError("MultiplierFunction: function must be an arthron Function")
        self.function = function
        self.scale = float(scale)

    def value(self, x):
        return self.scale * self.function.value(x)

    def derivative(self, x, order=1):
        return self.scale * self.function.derivative(x, _check_order(order, "MultiplierFunction"))

    def value_and_derivative(self, x):
        v, d = self.function.value_and_derivative(x)
        return self.scale * v, self.scale * d

    def value_and_derivatives(self, x, order: int = 2):
        v, d1, d2 = self.function.value_and_derivatives(x, order)
        return self.scale * v, self.scale * d1, (None if d2 is None else self.scale * d2)

    @property
    def is_constant(self):
        return self.function.is_constant


    def __repr__(self):
        return f"<MultiplierFunction scale={self.scale!r} of {self.function!r}>"


def scale_function(f: Function, factor: float) -> MultiplierFunction:
    """Scale ``f`` by ``factor`` the way OpenSim's ScaleTool writes it.

    A :class:`MultiplierFunction` gets its ``scale`` multiplied (a new object is returned; the
    input is not modified); any other function is wrapped in a new ``MultiplierFunction``.
    """
    if isinstance(f, MultiplierFunction):
        return MultiplierFunction(f.function, f.scale * float(factor), name=f.name)
    return MultiplierFunction(f, float(factor))
