"""Load-sharing problems beyond the plain QP, through cvxpy with the Clarabel conic solver.

* :func:`solve_power_objective`: ``Σ w_i |x_i|^p`` for any p ≥ 1 (OpenSim's
  ``activation_exponent``), equality and bounds as in :mod:`arthron.solvers.load_sharing`.
* :func:`solve_with_cone` (Clarabel directly): ``Σ w_i x_i²`` with, per frame, a reaction ``F(x) = C_t x + d_t``
  (N, in the cone's frame: axis z) kept inside an elliptic cone
  ``(F_x / tan α_x)² + (F_y / tan α_y)² ≤ F_z²``, ``F_z ≥ 0`` (second-order cone), or inside
  its polyhedral approximation with ``n_planes`` tangent planes (inscribed).

For the power objective one parametrized cvxpy problem is built (Parameters for the frame's
data) and re-solved for every frame (never rebuilt). cvxpy is imported here only, so that paths that do not need it do
not pay its import time (2–3 s).
"""
from __future__ import annotations

import numpy as np

from ..errors import SolverError

__all__ = ["solve_power_objective", "solve_with_cone", "cone_angle"]


def _cp():
    try:
        import cvxpy as cp
    except ImportError as e:            # pragma: no cover - a declared dependency
        raise SolverError(f"this load-sharing problem needs cvxpy and clarabel: {e}") from None
    return cp


def _bounds(cp, x, lb, ub, T, n):
    """Bound constraints on the components whose bounds are finite in some frame (an infinite
    bound costs Clarabel its conditioning: it is left out, or 1e6 where finite elsewhere).
    Returns (constraints, setter(t))."""
    lbb, ubb = np.broadcast_to(lb, (T, n)), np.broadcast_to(ub, (T, n))
    il = np.flatnonzero(np.isfinite(lbb).any(axis=0))
    iu = np.flatnonzero(np.isfinite(ubb).any(axis=0))
    lo, hi = cp.Parameter(il.size), cp.Parameter(iu.size)
    cons = ([x[il] >= lo] if il.size else []) + ([x[iu] <= hi] if iu.size else [])

    def setter(t):
        if il.size:
            lo.value = np.where(np.isfinite(lbb[t, il]), lbb[t, il], -1e6)
        if iu.size:
            hi.value = np.where(np.isfinite(ubb[t, iu]), ubb[t, iu], 1e6)
    return cons, setter


def solve_power_objective(A, b, w, lb, ub, p: float):
    """Frames of ``min Σ w|x|^p s.t. A x = b, lb ≤ x ≤ ub``. Returns (x (T, n), ok (T,))."""
    cp = _cp()
    T, m, n = A.shape
    x = cp.Variable(n)
    Ap, bp = cp.Parameter((m, n)), cp.Parameter(m)
    bcons, set_bounds = _bounds(cp, x, lb, ub, T, n)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(w, cp.power(cp.abs(x), p)))),
                      [Ap @ x == bp] + bcons)
    out, ok = np.zeros((T, n)), np.zeros(T, bool)
    for t in range(T):
        Ap.value, bp.value = A[t], b[t]
        set_bounds(t)
        try:
            prob.solve(solver=cp.CLARABEL)
        except cp.error.SolverError:
            continue
        if prob.status in ("optimal", "optimal_inaccurate") and x.value is not None:
            out[t], ok[t] = x.value, np.abs(A[t] @ x.value - b[t]).max() < 1e-6 * (1 + np.abs(b[t]).max())
    return out, ok


def cone_angle(F, tan_x, tan_y):
    """Angle (deg) of reactions F (T, 3) (cone frame) from the axis z, and the elliptic-cone
    ratio ``sqrt((F_x/tan α_x)² + (F_y/tan α_y)²) / F_z`` (≤ 1 inside; inf for F_z ≤ 0)."""
    F = np.asarray(F, float)
    ang = np.degrees(np.arctan2(np.hypot(F[:, 0], F[:, 1]), F[:, 2]))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.hypot(F[:, 0] / tan_x, F[:, 1] / tan_y) / F[:, 2]
    r = np.where(F[:, 2] > 0, r, np.inf)
    return ang, r


def solve_with_cone(A, b, w, lb, ub, C, d, tan_x, tan_y, *, n_planes=None, frames=None):
    """Frames of ``min Σ w x² s.t. A x = b, lb ≤ x ≤ ub, C x + d in the cone``.

    A (T, m, n), b (T, m), C (T, 3, n), d (T, 3); tan_x, tan_y: tangents of the half-angles
    about the cone frame's x and y axes; n_planes: None for the second-order cone, else the
    number of inscribed tangent planes; frames: the frames to solve (default all).
    Clarabel is called directly (its conic form ``A x + s = b, s ∈ K``: zero cone for the
    equations of motion, non-negative cone for the finite bounds and the planes, a
    second-order cone of dimension 3), without cvxpy's canonicalization per frame.
    Returns (x (T, n), ok (T,)) — ok False where no solution meets the cone.
    """
    import clarabel
    from scipy import sparse
    T, m, n = A.shape
    w = np.broadcast_to(np.asarray(w, float), (n,))
    lbb, ubb = np.broadcast_to(lb, (T, n)), np.broadcast_to(ub, (T, n))
    P = sparse.diags(2.0 * w).tocsc()
    q = np.zeros(n)
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    eye = np.eye(n)
    out, ok = np.zeros((T, n)), np.zeros(T, bool)
    for t in (range(T) if frames is None else frames):
        il, iu = np.flatnonzero(np.isfinite(lbb[t])), np.flatnonzero(np.isfinite(ubb[t]))
        rows = [A[t], -eye[il], eye[iu]]
        rhs = [b[t], -lbb[t, il], ubb[t, iu]]
        cones = [clarabel.ZeroConeT(m), clarabel.NonnegativeConeT(il.size + iu.size)]
        Ct, dt = C[t], d[t]
        if n_planes is None:
            rows.append(-np.vstack([Ct[2], Ct[0] / tan_x, Ct[1] / tan_y]))
            rhs.append(np.array([dt[2], dt[0] / tan_x, dt[1] / tan_y]))
            cones.append(clarabel.SecondOrderConeT(3))
        else:
            k = int(n_planes)
            th = 2 * np.pi * (np.arange(k) + 0.5) / k
            c, s_, cpk = np.cos(th)[:, None], np.sin(th)[:, None], np.cos(np.pi / k)
            rows.append(c * Ct[0] / tan_x + s_ * Ct[1] / tan_y - cpk * Ct[2])
            rhs.append(-(c[:, 0] * dt[0] / tan_x + s_[:, 0] * dt[1] / tan_y - cpk * dt[2]))
            cones.append(clarabel.NonnegativeConeT(k))
        Am = sparse.csc_matrix(np.vstack(rows))
        solver = clarabel.DefaultSolver(P, q, Am, np.concatenate(rhs), cones, settings)
        sol = solver.solve()
        if str(sol.status) in ("Solved", "AlmostSolved"):
            x = np.asarray(sol.x)
            out[t] = x
            ok[t] = np.abs(A[t] @ x - b[t]).max() < 1e-6 * (1 + np.abs(b[t]).max())
    return out, ok
