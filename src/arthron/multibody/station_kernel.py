"""Compiled station positions and Jacobians (numba) for
:meth:`arthron.multibody.point_kinematics.StationKinematics.evaluate_batch`.

The NumPy loop of ``evaluate_batch`` pays a few microseconds of interpreter overhead for every
array operation of every hinge, which is most of inverse kinematics' time. This module does the
same geometry frame by frame in one compiled loop: the pose of every variable node
(``R = R_parent R0 · Rodrigues(θ)`` for a rotation, ``o = o_parent + R_parent p0 + R_f p_local``
for a translation or an ellipsoid), the hinge columns (``ω`` and origin of rotations, ``v`` of
translations), station positions and ``J[m, :, c] = Σ_j A[m, j] (ω_j × (x_m − o_j) + v_j)`` over
the columns j of coordinate c. The axis functions are evaluated in the kernel too
(:func:`stations_batch_q`) when they are identities, ``Constant``, ``LinearFunction`` or
``SimmSpline``/``NaturalCubicSpline`` inside ``MultiplierFunction``s (encoded as tables by
:func:`arthron.multibody.point_kinematics._encode_function`); any other function, and the
ellipsoid mobilizer, is evaluated in NumPy before the call.

Importing this module imports numba (≈0.3–0.5 s) and loads the kernel from numba's on-disk
cache (compiled once per installation). :mod:`arthron.multibody.point_kinematics` imports it
only when asked to (``StationKinematics.compiled``); NumPy stays the reference: both agree to
1e-12 (``tests/test_point_kinematics.py``).
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["stations_batch", "stations_batch_q"]


#: function kinds the kernel evaluates itself (others are evaluated in NumPy before the call)
F_IDENTITY, F_CONSTANT, F_LINEAR, F_SPLINE = 0, 1, 2, 3
#: arthron.models.functions._ROUNDOFF_ERROR (the knot tolerance of SimmSpline)
_ROUNDOFF = 2e-13


@numba.njit(cache=True, nogil=True)
def _feval(ft, sc, off, n, p0, p1, X, Y, Bc, Cc, Dc, a):  # pragma: no cover - compiled
    """Value and slope of an encoded function at a (``Function.value_and_derivative``): identity,
    constant, linear, or a SimmSpline / NaturalCubicSpline (knots X[off:off+n], coefficients),
    times the product ``sc`` of the MultiplierFunction scales around it."""
    if ft == 0:
        return a, 1.0
    if ft == 1:
        return sc * p0, 0.0
    if ft == 2:
        return sc * (p0 * a + p1), sc * p0
    lo = 0
    hi = n
    while lo < hi:                    # searchsorted(side="right") - 1, clipped to [0, n - 2]
        mid = (lo + hi) // 2
        if a < X[off + mid]:
            hi = mid
        else:
            lo = mid + 1
    k = lo - 1
    if k > n - 2:
        k = n - 2
    if k < 0:
        k = 0
    i = off + k
    dx = a - X[i]
    v = Y[i] + dx * (Bc[i] + dx * (Cc[i] + dx * Dc[i]))
    dv = Bc[i] + dx * (2.0 * Cc[i] + 3.0 * dx * Dc[i])
    if a < X[off] + _ROUNDOFF:
        v = Y[off] + min(a - X[off], 0.0) * Bc[off]
        dv = Bc[off]
    last = off + n - 1
    if a > X[last] - _ROUNDOFF:
        v = Y[last] + max(a - X[last], 0.0) * Bc[last]
        dv = Bc[last]
    return sc * v, sc * dv


@numba.njit(cache=True, nogil=True)
def stations_batch_q(kind, parent, R0, p0, ident, axis, K, K2, th, d1, pl, vloc, col_node,
                     col_coord, m_var, m_loc, A, nq, Q, pre, ncoord, fspec, fpar, X, Y, Bc, Cc, Dc,
                     t_node, t_coord, t_col, t_axis, t_spec, t_par):  # pragma: no cover - compiled
    """:func:`stations_batch` with the axis functions evaluated here from the poses Q (B, nq),
    except for the nodes flagged ``pre`` (their th/d1 or pl/vloc are given). fspec (nv, 3) and
    fpar (nv, 3) encode each rotation's function (kind, offset, n; scale, p0, p1) and ncoord (nv,)
    its coordinate; the translation terms are t_node, t_coord, t_col (the term's column),
    t_axis (nt, 3), t_spec (nt, 3), t_par (nt, 3)."""
    B = Q.shape[0]
    nv = kind.shape[0]
    for b in range(B):
        for k in range(nv):
            if pre[k] or kind[k] != 0:
                continue
            v, d = _feval(fspec[k, 0], fpar[k, 0], fspec[k, 1], fspec[k, 2], fpar[k, 1],
                          fpar[k, 2], X, Y, Bc, Cc, Dc, Q[b, ncoord[k]])
            th[b, k] = v
            d1[b, k] = d
        for t in range(t_node.shape[0]):
            k = t_node[t]
            v, d = _feval(t_spec[t, 0], t_par[t, 0], t_spec[t, 1], t_spec[t, 2], t_par[t, 1],
                          t_par[t, 2], X, Y, Bc, Cc, Dc, Q[b, t_coord[t]])
            c = t_col[t]
            for r in range(3):
                pl[b, k, r] += v * t_axis[t, r]
                vloc[b, c, r] += d * t_axis[t, r]
    return stations_batch(kind, parent, R0, p0, ident, axis, K, K2, th, d1, pl, vloc, col_node,
                          col_coord, m_var, m_loc, A, nq)


@numba.njit(cache=True, nogil=True)
def stations_batch(kind, parent, R0, p0, ident, axis, K, K2, th, d1, pl, vloc, col_node, col_coord,
                   m_var, m_loc, A, nq):  # pragma: no cover - compiled
    """Positions (B, n, 3) and Jacobians (B, n, 3, nq) of n stations at B poses.

    kind (nv,) 0 rotation, 1 translation/ellipsoid; parent (nv,) variable parent (-1 ground);
    R0 (nv, 3, 3), p0 (nv, 3) fixed transform from the parent; ident (nv,) R0 = I and p0 = 0;
    axis, K, K2 (nv, 3[, 3]) rotation axis, [axis]×, [axis]×²; th, d1 (B, nv) angle and its
    slope (rotations); pl (B, nv, 3) local translation; vloc (B, ncol, 3) local velocity of the
    translation columns; col_node (ncol,), col_coord (ncol,); m_var (n,), m_loc (n, 3) station
    node and location in that node's frame; A (n, ncol) 1 where column j moves station m.
    """
    B = th.shape[0]
    nv = kind.shape[0]
    ncol = col_node.shape[0]
    nm = m_var.shape[0]
    P = np.empty((B, nm, 3))
    J = np.zeros((B, nm, 3, nq))
    Rst = np.empty((nv + 1, 3, 3))
    ost = np.empty((nv + 1, 3))
    W = np.zeros((ncol, 3))
    V = np.zeros((ncol, 3))
    O = np.zeros((ncol, 3))
    Rf = np.empty((3, 3))
    of = np.empty(3)
    Rr = np.empty((3, 3))
    for b in range(B):
        for i in range(3):
            for j in range(3):
                Rst[0, i, j] = 1.0 if i == j else 0.0
            ost[0, i] = 0.0
        j = 0
        for k in range(nv):
            p = parent[k] + 1
            if ident[k]:
                for r in range(3):
                    for c in range(3):
                        Rf[r, c] = Rst[p, r, c]
                    of[r] = ost[p, r]
            else:
                for r in range(3):
                    for c in range(3):
                        Rf[r, c] = (Rst[p, r, 0] * R0[k, 0, c] + Rst[p, r, 1] * R0[k, 1, c]
                                    + Rst[p, r, 2] * R0[k, 2, c])
                    of[r] = ost[p, r] + (Rst[p, r, 0] * p0[k, 0] + Rst[p, r, 1] * p0[k, 1]
                                         + Rst[p, r, 2] * p0[k, 2])
            if kind[k] == 0:
                s = np.sin(th[b, k])
                omc = 1.0 - np.cos(th[b, k])
                for r in range(3):
                    for c in range(3):
                        Rr[r, c] = (1.0 if r == c else 0.0) + s * K[k, r, c] + omc * K2[k, r, c]
                for r in range(3):
                    for c in range(3):
                        Rst[k + 1, r, c] = Rf[r, 0] * Rr[0, c] + Rf[r, 1] * Rr[1, c] + Rf[r, 2] * Rr[2, c]
                    ost[k + 1, r] = of[r]
                    W[j, r] = (Rf[r, 0] * axis[k, 0] + Rf[r, 1] * axis[k, 1]
                               + Rf[r, 2] * axis[k, 2]) * d1[b, k]
                    O[j, r] = of[r]
                    V[j, r] = 0.0
                j += 1
            else:
                for r in range(3):
                    for c in range(3):
                        Rst[k + 1, r, c] = Rf[r, c]
                    ost[k + 1, r] = of[r] + (Rf[r, 0] * pl[b, k, 0] + Rf[r, 1] * pl[b, k, 1]
                                             + Rf[r, 2] * pl[b, k, 2])
                while j < ncol and col_node[j] == k:
                    for r in range(3):
                        V[j, r] = (Rf[r, 0] * vloc[b, j, 0] + Rf[r, 1] * vloc[b, j, 1]
                                   + Rf[r, 2] * vloc[b, j, 2])
                        W[j, r] = 0.0
                        O[j, r] = 0.0
                    j += 1
        for m in range(nm):
            v = m_var[m] + 1
            x0 = Rst[v, 0, 0] * m_loc[m, 0] + Rst[v, 0, 1] * m_loc[m, 1] + Rst[v, 0, 2] * m_loc[m, 2] + ost[v, 0]
            x1 = Rst[v, 1, 0] * m_loc[m, 0] + Rst[v, 1, 1] * m_loc[m, 1] + Rst[v, 1, 2] * m_loc[m, 2] + ost[v, 1]
            x2 = Rst[v, 2, 0] * m_loc[m, 0] + Rst[v, 2, 1] * m_loc[m, 1] + Rst[v, 2, 2] * m_loc[m, 2] + ost[v, 2]
            P[b, m, 0] = x0
            P[b, m, 1] = x1
            P[b, m, 2] = x2
            for jj in range(ncol):
                a = A[m, jj]
                if a == 0.0:
                    continue
                dx = x0 - O[jj, 0]
                dy = x1 - O[jj, 1]
                dz = x2 - O[jj, 2]
                c = col_coord[jj]
                J[b, m, 0, c] += a * (W[jj, 1] * dz - W[jj, 2] * dy + V[jj, 0])
                J[b, m, 1, c] += a * (W[jj, 2] * dx - W[jj, 0] * dz + V[jj, 1])
                J[b, m, 2, c] += a * (W[jj, 0] * dy - W[jj, 1] * dx + V[jj, 2])
    return P, J
