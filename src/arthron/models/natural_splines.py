"""Natural interpolating splines as GCVSPL builds them with zero error variance (the quintic of
OpenSim's coordinate splines in its tools, the cubic of its force splines), with GCVSPL's
Taylor extrapolation beyond the end knots.

Library use fits them with scipy's ``make_interp_spline``; under
:data:`arthron.runtime.light_imports` (the command line) short ones are solved here with numpy
(:class:`_NaturalQuintic`, :class:`_NaturalCubic`), sparing a command the scipy.interpolate
import. Both routes agree to 1e-12 relative (tests/test_functions.py).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import runtime

__all__ = ["NaturalSpline"]


#: up to this many knots the natural quintic (the splines of the coordinates in ID, JR and IK's
#: tools) is solved here (block tridiagonal, by block cyclic reduction beyond 64 knots: ≈ 3 µs
#: a knot for 23 coordinates) instead of importing scipy.interpolate (0.25–1 s of import time
#: per command); beyond, scipy's B-spline solver
_QUINTIC_DENSE_MAX = 50000


def _block_tridiagonal_solve(Lo, Di, Up, R):
    """Solve ``Lo_i X_{i−1} + Di_i X_i + Up_i X_{i+1} = R_i`` (2×2 blocks (n, 2, 2), right-hand
    sides (n, 2, k)) by block elimination (the block Thomas algorithm). The 2×2 algebra of the
    elimination (which does not depend on the right-hand sides) runs on plain floats; the
    right-hand sides are updated for all k columns at once."""
    n = Di.shape[0]
    lo, di, up = Lo.tolist(), Di.tolist(), Up.tolist()
    # forward elimination: W_i = (D'_i)^-1 and G_i = Lo_i W_{i-1}, D'_i = Di_i - G_i Up_{i-1}
    W = [None] * n
    G = [None] * n
    (a, b), (c, d) = di[0]
    det = a * d - b * c
    W[0] = ((d / det, -b / det), (-c / det, a / det))
    for i in range(1, n):
        (l00, l01), (l10, l11) = lo[i]
        (w00, w01), (w10, w11) = W[i - 1]
        g00, g01 = l00 * w00 + l01 * w10, l00 * w01 + l01 * w11
        g10, g11 = l10 * w00 + l11 * w10, l10 * w01 + l11 * w11
        G[i] = ((g00, g01), (g10, g11))
        (u00, u01), (u10, u11) = up[i - 1]
        (a, b), (c, d) = di[i]
        a -= g00 * u00 + g01 * u10
        b -= g00 * u01 + g01 * u11
        c -= g10 * u00 + g11 * u10
        d -= g10 * u01 + g11 * u11
        det = a * d - b * c
        W[i] = ((d / det, -b / det), (-c / det, a / det))
    Gs = np.array([((0.0, 0.0), (0.0, 0.0))] + G[1:]) if n > 1 else np.zeros((1, 2, 2))
    Ws = np.array(W)
    Rp = np.array(R, float)
    for i in range(1, n):
        Rp[i] -= Gs[i] @ Rp[i - 1]
    X = np.empty_like(Rp)
    X[-1] = Ws[-1] @ Rp[-1]
    for i in range(n - 2, -1, -1):
        X[i] = Ws[i] @ (Rp[i] - Up[i] @ X[i + 1])
    return X


def _inv2(A):
    """Inverses of a stack of 2×2 matrices (m, 2, 2)."""
    a, b, c, d = A[:, 0, 0], A[:, 0, 1], A[:, 1, 0], A[:, 1, 1]
    det = a * d - b * c
    out = np.empty_like(A)
    out[:, 0, 0] = d / det
    out[:, 0, 1] = -b / det
    out[:, 1, 0] = -c / det
    out[:, 1, 1] = a / det
    return out


#: below this many knots the block Thomas algorithm; above, block cyclic reduction
_CYCLIC_MIN = 64


def _block_cyclic_reduction(Lo, Di, Up, R):
    """Solve the block tridiagonal system of :func:`_block_tridiagonal_solve` by block cyclic
    reduction (Heller 1976; Golub & Van Loan, Matrix Computations, 4th ed., § 4.5.4): the odd
    unknowns are eliminated from the even equations, the half-size block tridiagonal system is
    solved the same way, and the odd unknowns follow. About log2(n) levels of vectorized 2×2
    algebra instead of n sequential steps; no pivoting, like the block Thomas algorithm it
    replaces for long trials (same numbers to 1e-13 relative on the coordinate splines)."""
    n = Di.shape[0]
    if n < _CYCLIC_MIN:
        return _block_tridiagonal_solve(Lo, Di, Up, R)
    ne, no = (n + 1) // 2, n // 2
    Lo_o, Up_o, R_o = Lo[1::2], Up[1::2], R[1::2]
    Dinv = _inv2(Di[1::2])
    alpha = Lo[2::2] @ Dinv[:ne - 1]                 # even 2e (e >= 1) <- odd 2e - 1
    beta = Up[0::2][:no] @ Dinv                       # even 2e (e < no) <- odd 2e + 1
    Lo2 = np.zeros((ne, 2, 2))
    Up2 = np.zeros((ne, 2, 2))
    Di2 = Di[0::2].copy()
    R2 = np.empty((ne,) + R.shape[1:])
    R2[0] = R[0]
    Lo2[1:] = -(alpha @ Lo_o[:ne - 1])
    Di2[1:] -= alpha @ Up_o[:ne - 1]
    np.subtract(R[2::2], alpha @ R_o[:ne - 1], out=R2[1:])
    Di2[:no] -= beta @ Lo_o
    Up2[:no] = -(beta @ Up_o)
    R2[:no] -= beta @ R_o
    Xe = _block_cyclic_reduction(Lo2, Di2, Up2, R2)
    rhs = R_o - Lo_o @ Xe[:no]
    m = min(no, ne - 1)
    rhs[:m] -= Up_o[:m] @ Xe[1:m + 1]
    X = np.empty_like(R)
    X[0::2] = Xe
    np.matmul(Dinv, rhs, out=X[1::2])
    return X


def _cyclic_reduction(a, b, c, d):
    """Solve the tridiagonal system ``a_i x_{i−1} + b_i x_i + c_i x_{i+1} = d_i`` (a, b, c (m,);
    d (m, k); ``a_0`` and ``c_{m−1}`` unused) by cyclic reduction (the scalar case of
    :func:`_block_cyclic_reduction`), all k columns at once; the natural cubic's system is
    diagonally dominant, where cyclic reduction needs no pivoting."""
    m = b.shape[0]
    if m == 1:
        return d / b[:, None]
    ne, no = (m + 1) // 2, m // 2
    ao, bo, co, do = a[1::2], b[1::2], c[1::2], d[1::2]
    alpha = a[2::2] / bo[:ne - 1]                    # even 2e (e >= 1) <- odd 2e - 1
    beta = c[0::2][:no] / bo                          # even 2e (e < no) <- odd 2e + 1
    a2 = np.zeros(ne)
    c2 = np.zeros(ne)
    b2 = b[0::2].copy()
    d2 = d[0::2].copy()
    a2[1:] = -alpha * ao[:ne - 1]
    b2[1:] -= alpha * co[:ne - 1]
    d2[1:] -= alpha[:, None] * do[:ne - 1]
    b2[:no] -= beta * ao
    c2[:no] = -beta * co
    d2[:no] -= beta[:, None] * do
    xe = _cyclic_reduction(a2, b2, c2, d2)
    rhs = do - ao[:, None] * xe[:no]
    k = min(no, ne - 1)
    rhs[:k] -= co[:k, None] * xe[1:k + 1]
    x = np.empty_like(d)
    x[0::2] = xe
    x[1::2] = rhs / bo[:, None]
    return x


class _NaturalQuintic:
    """The natural interpolating quintic spline (GCVSPL, half order 3, error variance 0) as
    piecewise quintic Hermite polynomials: unknown first and second derivatives at the knots
    (a block tridiagonal system, 2×2 blocks),
    fixed by C³/C⁴ continuity at interior knots and zero third and fourth derivatives at both
    ends (the conditions scipy's ``make_interp_spline(k=5, bc_type=...)`` imposes; same spline).
    ``y`` (n,) or (n, k). Evaluation inside the knots only (ends: see :class:`_NaturalSpline`)."""

    def __init__(self, x, y):
        n = x.size
        y2 = y.reshape(n, -1)
        h = np.diff(x)
        H = float(h.mean())
        # per interval: (c3, c4, c5) as linear maps of (y0, d0, s0, y1, d1, s1)
        hh = h[:, None]
        L = np.zeros((n - 1, 3, 6))
        # Δ = y1 − y0 − d0 h − s0 h²/2 ; Δ' = d1 − d0 − s0 h ; Δ'' = s1 − s0
        D = np.stack([np.stack([-np.ones_like(h), -h, -h * h / 2, np.ones_like(h), 0 * h, 0 * h], 1),
                      np.stack([0 * h, -np.ones_like(h), -h, 0 * h, np.ones_like(h), 0 * h], 1),
                      np.stack([0 * h, 0 * h, -np.ones_like(h), 0 * h, 0 * h, np.ones_like(h)], 1)], 1)
        L[:, 0] = (10 * D[:, 0] - 4 * hh * D[:, 1] + hh ** 2 / 2 * D[:, 2]) / hh ** 3
        L[:, 1] = (-15 * D[:, 0] + 7 * hh * D[:, 1] - hh ** 2 * D[:, 2]) / hh ** 4
        L[:, 2] = (6 * D[:, 0] - 3 * hh * D[:, 1] + hh ** 2 / 2 * D[:, 2]) / hh ** 5
        d3l, d4l = 6 * L[:, 0], 24 * L[:, 1]
        d3r = 6 * L[:, 0] + 24 * hh * L[:, 1] + 60 * hh ** 2 * L[:, 2]
        d4r = 24 * L[:, 1] + 120 * hh * L[:, 2]
        # unknowns X_i = (d_i H, s_i H²) per knot; at each knot two equations (third and fourth
        # derivative, scaled by H³ and H⁴): block tridiagonal, Lo_i X_{i−1} + Di_i X_i + Up_i X_{i+1} = R_i
        col_scale = np.array([1.0, 1 / H, 1 / H ** 2, 1.0, 1 / H, 1 / H ** 2])
        Lo = np.zeros((n, 2, 2))
        Di = np.zeros((n, 2, 2))
        Up = np.zeros((n, 2, 2))
        R = np.zeros((n, 2, y2.shape[1]))
        j = np.arange(n - 1)
        y0, y1 = y2[:-1], y2[1:]
        p0 = np.empty(y0.shape)             # the right-hand side's products, in two buffers
        p1 = np.empty(y0.shape)
        for r, (cl, cr, sc) in enumerate(((d3l, d3r, H ** 3), (d4l, d4r, H ** 4))):
            # interval j's left end: knot j's equations (+ at the first knot, − at interior ones)
            c = cl * sc * col_scale * np.where(j == 0, 1.0, -1.0)[:, None]
            Di[:-1, r] += c[:, 1:3]                  # (slices: knots j = 0 .. n − 2)
            Up[:-1, r] += c[:, 4:6]
            np.multiply(c[:, :1], y0, out=p0)
            np.multiply(c[:, 3:4], y1, out=p1)
            p0 += p1
            R[:-1, r] -= p0                          # − (c_y0 y0 + c_y1 y1)
            # its right end: knot j + 1's equations (+)
            c = cr * sc * col_scale
            Lo[1:, r] += c[:, 1:3]
            Di[1:, r] += c[:, 4:6]
            np.multiply(c[:, :1], y0, out=p0)
            np.multiply(c[:, 3:4], y1, out=p1)
            p0 += p1
            R[1:, r] -= p0
        del p0, p1                          # their memory reused by the solve
        z = _block_cyclic_reduction(Lo, Di, Up, R).reshape(2 * n, -1)
        self.x = x
        self.y = y2
        self.d = z[0::2] / H
        self.s = z[1::2] / H ** 2
        self._L = L
        self.trailing = y.shape[1:]

    def _coefficients(self):
        """Monomial coefficients per interval in u = t − x_i, (n − 1, degree + 1, k): formed on
        the first evaluation off the knots (at the knots the knot data are the values)."""
        c = self.__dict__.get("coef")
        if c is None:
            y2, d, s = self.y, self.d, self.s
            knots = np.stack([y2[:-1], d[:-1], s[:-1], y2[1:], d[1:], s[1:]], 1)
            c = np.einsum("ijk,ikc->ijc", self._L, knots)
            c = self.coef = np.concatenate([y2[:-1, None], d[:-1, None], s[:-1, None] / 2, c], 1)
        return c

    def end_derivatives(self, i):
        """(3, ...) value, first and second derivative at knot ``i`` (the ends' Taylor data)."""
        return np.stack([self.y[i], self.d[i], self.s[i]]).reshape((3,) + self.trailing)

    def __call__(self, a, order=0):
        a = np.asarray(a, float)
        i = np.clip(np.searchsorted(self.x, a, side="right") - 1, 0, self.x.size - 2)
        u = (a - self.x[i])[:, None]
        if order <= 2 and not u.any():    # at the knots (the tools' solve times): the knot data,
            knot = (self.y, self.d, self.s)[order][i]   # which Horner at u = 0 returns exactly
            return knot.reshape(a.shape + self.trailing)
        c = self._coefficients()[i]                       # (N, degree + 1, k)
        out = np.zeros((a.size, c.shape[2]))
        for p in range(c.shape[1] - 1, order - 1, -1):    # Horner on the order-th derivative
            f = math.factorial(p) / math.factorial(p - order)
            out = out * u + f * c[:, p]
        return out.reshape(a.shape + self.trailing)


class _NaturalCubic(_NaturalQuintic):
    """The natural interpolating cubic spline (GCVSPL half order 2, error variance 0): second
    derivatives M at the knots from the tridiagonal system (M = 0 at both ends), solved by the
    Thomas algorithm (diagonally dominant) on plain floats, or by cyclic reduction over all
    columns at once from 64 unknowns on; piecewise cubic monomials."""

    def __init__(self, x, y):
        n = x.size
        y2 = y.reshape(n, -1)
        h = np.diff(x)[:, None]
        slope = np.diff(y2, axis=0) / h
        M = np.zeros_like(y2)
        if n - 2 >= _CYCLIC_MIN:
            hv = h[:, 0]
            M[1:-1] = _cyclic_reduction(hv[:-1], 2.0 * (hv[:-1] + hv[1:]), hv[1:],
                                        6.0 * np.diff(slope, axis=0))
        elif n > 2:
            rhs = 6.0 * np.diff(slope, axis=0)                      # (n-2, k)
            hs = h[:, 0].tolist()
            diag = [2.0 * (a + b) for a, b in zip(hs[:-1], hs[1:])]
            m = n - 2
            cp = [0.0] * m                   # the elimination factors do not depend on y
            den = [diag[0]] + [0.0] * (m - 1)
            for i in range(1, m):
                cp[i - 1] = hs[i] / den[i - 1]
                den[i] = diag[i] - hs[i] * cp[i - 1]
            for k in range(rhs.shape[1]):    # plain floats: fast for the few columns of a file
                d = rhs[:, k].tolist()
                d[0] /= den[0]
                for i in range(1, m):
                    d[i] = (d[i] - hs[i] * d[i - 1]) / den[i]
                for i in range(m - 2, -1, -1):
                    d[i] -= cp[i] * d[i + 1]
                M[1:-1, k] = d
        c1 = slope - h * (2 * M[:-1] + M[1:]) / 6
        c3 = (M[1:] - M[:-1]) / (6 * h)
        self.x = x
        self.y = y2
        self.coef = np.stack([y2[:-1], c1, M[:-1] / 2, c3], 1)
        self.s = M
        hl = h[-1]
        self.d = np.concatenate([c1, (c1[-1] + M[-2] * hl + 3 * c3[-1] * hl ** 2)[None]])
        self.trailing = y.shape[1:]

    def end_derivatives(self, i):
        """(2, ...) value and first derivative at knot ``i`` (the ends' Taylor data)."""
        return np.stack([self.y[i], self.d[i]]).reshape((2,) + self.trailing)


#: up to this many knots the natural cubic is solved here (Thomas algorithm) instead of
#: importing scipy.interpolate
_CUBIC_THOMAS_MAX = 20000


class _NaturalSpline:
    """Natural interpolating spline of degree ``2m-1`` as GCVSPL (error variance 0) gives it.

    ``y`` may be 1-D (n,) or 2-D (n, k) for k columns sharing the knots ``x``. Inside the knots it
    is evaluated from scipy's B-spline; at and beyond ``x[-1]`` and below ``x[0]`` from the
    degree ``m-1`` Taylor polynomial at the end knot, as GCVSPL's ``SPLDER`` does (its search
    puts ``t >= x[n]`` in the extrapolation interval).
    """

    def __init__(self, x, y, half_order):
        m = int(half_order)
        self.m = m
        self.x0 = float(x[0])
        self.xn = float(x[-1])
        self.trailing = np.asarray(y).shape[1:]
        self.spline = None
        own = runtime.light_imports and (
            (m == 3 and 6 <= len(x) <= _QUINTIC_DENSE_MAX and _NaturalQuintic)
            or (m == 2 and 4 <= len(x) <= _CUBIC_THOMAS_MAX and _NaturalCubic))
        if own:
            self._quintic = own(np.asarray(x, float), np.asarray(y, float))
            return
        from scipy.interpolate import make_interp_spline

        zero = np.zeros(np.asarray(y).shape[1:])
        if m == 1:
            bc = None
        else:
            cond = [(r, zero) for r in range(m, 2 * m - 1)]
            bc = (cond, cond)
        self.spline = make_interp_spline(np.asarray(x, float), np.asarray(y, float), k=2 * m - 1,
                                         bc_type=bc, axis=0)
        self.trailing = np.asarray(y).shape[1:]

    def _end(self, at: float, k: int):
        """Value and the first ``m - 1`` derivatives at the end knot ``at`` (index ``k``): the
        Taylor data of the extrapolation, (m,) + trailing."""
        if self.spline is None:
            return self._quintic.end_derivatives(k)
        return np.stack([np.asarray(self.spline(at, r)) for r in range(self.m)])

    @functools.cached_property
    def left(self):
        """Taylor data at ``x[0]`` (computed when first needed: a time below the knots)."""
        return self._end(self.x0, 0)

    @functools.cached_property
    def right(self):
        """Taylor data at ``x[-1]`` (computed when first needed: a time at or above it)."""
        return self._end(self.xn, -1)

    def _taylor(self, taylor, dx, order):
        shape = dx.shape + self.trailing
        out = np.zeros(shape)
        dxe = dx.reshape(dx.shape + (1,) * len(self.trailing))
        for r in range(order, self.m):
            out = out + taylor[r] * dxe ** (r - order) / math.factorial(r - order)
        return out

    def __call__(self, a, order=0):
        a = np.asarray(a, dtype=float)
        if self.spline is None and order < self.m and a.ndim == 1 and a.size:
            # at a run of knots (the tools' solve times): the knot data, which the evaluation
            # below returns there (exactly: Horner at u = 0 inside, Taylor at dx = 0 at the end)
            own = self._quintic
            j = int(np.searchsorted(own.x, a[0]))
            run = own.x[j:j + a.size]
            if run.size == a.size and np.array_equal(run, a):
                knot = (own.y, own.d, own.s)[order][j:j + a.size]
                return knot.reshape(a.shape + self.trailing).copy()
        below = a < self.x0
        above = a >= self.xn
        inside = ~below & ~above
        out = np.zeros(a.shape + self.trailing)
        if inside.any():
            out[inside] = (self.spline(a[inside], order) if self.spline is not None
                           else self._quintic(a[inside], order))
        if below.any():
            out[below] = self._taylor(self.left, a[below] - self.x0, order)
        if above.any():
            out[above] = self._taylor(self.right, a[above] - self.xn, order)
        return out


#: public name of the natural spline
NaturalSpline = _NaturalSpline
