"""Many small box-constrained quadratic programs with equality constraints, solved at once.

For every frame t::

    minimize   ½ Σ_i w_i x_i²
    subject to A_t x = b_t,     l_t ≤ x ≤ u_t

(strictly convex: every ``w_i > 0``). The dual is smooth and concave with the closed-form
minimizer ``x(λ) = clip(A_tᵀ λ / w, l_t, u_t)``; its gradient is ``b_t − A_t x(λ)`` and its
generalized Hessian ``−A_t diag(free/w) A_tᵀ`` (free: the components strictly inside their
bounds). A semismooth Newton method on λ with a backtracking line search on the dual value
identifies the active set in a few iterations and then solves the frame exactly (to rounding);
all frames iterate together, each with its own step, as batched dense linear algebra.

Source: the dual (Lagrangian) formulation of bound-constrained least-norm problems, e.g.
Nocedal & Wright (2006) *Numerical Optimization* §16; semismooth Newton: Qi & Sun (1993) Math
Program 58:353-367. A frame whose equality cannot be met inside the bounds makes the dual
unbounded: it is reported as infeasible (``ok`` False), never looped on.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BoxQPResult", "solve_box_qp"]


@dataclass
class BoxQPResult:
    """x : (T, n) solution; lam : (T, m) equality multipliers (``w x = Aᵀ λ`` on free
    components); residual : (T, m) ``A x − b``; ok : (T,) bool, converged and feasible;
    iterations : the Newton iterations used."""

    x: np.ndarray
    lam: np.ndarray
    residual: np.ndarray
    ok: np.ndarray
    iterations: int


def _At(A, lam):
    """Aᵀλ per frame: (T, n)."""
    return (lam[:, None, :] @ A)[:, 0]


def _Ax(A, x):
    """A x per frame: (T, m)."""
    return (A @ x[..., None])[..., 0]


def _trial(A, b, lam, w, lb, ub):
    """At multipliers ``lam`` (k, m): the unclipped ``z = Aᵀλ / w``, the dual's minimizer
    ``x = clip(z, lb, ub)``, the dual's gradient ``g = b − A x`` and the dual value
    ``λ·g + ½ Σ w x²``; z and g are kept with the iterate (the next iteration's free set and
    right-hand side), not computed again."""
    z = _At(A, lam) / w
    x = np.clip(z, lb, ub)
    g = b - _Ax(A, x)
    return z, x, g, (lam * g).sum(1) + 0.5 * (w * x * x).sum(1)


#: step halvings of the line search tried together, for frames of at most (and above)
#: _SMALL = m·n entries: more halvings per pass mean fewer passes (NumPy calls), but more
#: rows evaluated past a row's first good step (measured: 4 on arm26's 2 × 6 frames, 2 on the
#: Gait2354 walk's 23 × 77; 0.94 and 11.4 ms against 1.14 and 12.2 ms one halving at a time)
_HALVINGS = (4, 2)
_SMALL = 256
#: the halved steps 2⁻¹ … 2⁻³⁹ (exact powers of two: what halving 39 times gives)
_STEPS = 0.5 ** np.arange(1, 40)


def solve_box_qp(A, b, w, lb, ub, *, tol: float = 1e-10, max_iter: int = 100,
                 lam0=None) -> BoxQPResult:
    """Solve the T problems of the module docstring together.

    Parameters
    ----------
    A : (T, m, n); b : (T, m); w : (n,) or (T, n), positive weights;
    lb, ub : (n,) or (T, n) bounds (±inf allowed; lb ≤ ub);
    tol : stop when ``max |A x − b| ≤ tol · (1 + max |b|)`` in every frame;
    lam0 : (T, m) starting multipliers (warm start), default those of the problem without bounds.

    Returns
    -------
    BoxQPResult; frames that did not converge within ``max_iter`` (infeasible equality inside
    the bounds, or a singular system) have ``ok`` False and their last iterate.
    """
    A = np.asarray(A, float)
    b = np.asarray(b, float)
    T, m, n = A.shape
    w = np.asarray(w, float)
    wt = np.broadcast_to(w, (T, n))
    lb = np.broadcast_to(np.asarray(lb, float), (T, n))
    ub = np.broadcast_to(np.asarray(ub, float), (T, n))
    if lam0 is None:
        # start from the bound-free least-norm solution: λ = (A W⁻¹ Aᵀ)⁻¹ b
        H0 = (A / wt[:, None, :]) @ np.swapaxes(A, 1, 2)
        H0 = H0 + (1e-12 * (1.0 + np.abs(H0).max(axis=(1, 2))))[:, None, None] * np.eye(m)
        lam = np.linalg.solve(H0, b[..., None])[..., 0]
    else:
        lam = np.array(lam0, float)
    scale = 1.0 + np.abs(b).max(axis=1)
    # z (unclipped Aᵀλ/w) and g (b − A x) of the current iterate of every frame, kept from
    # the evaluation that accepted it (the same values as computing them again)
    z, x, g, val = _trial(A, b, lam, wt, lb, ub)
    active = np.abs(g).max(axis=1) > tol * scale
    it = 0
    eye = np.eye(m)
    nh = _HALVINGS[m * n > _SMALL]
    delta = np.full(T, 1e-2)     # curvature lent to bound components (0 near the solution)
    idx = np.flatnonzero(active)
    while idx.size and it < max_iter:
        it += 1
        every = idx.size == T            # all frames: views instead of copies
        Ai, wi, lbi, ubi, bi = (A, wt, lb, ub, b) if every else (A[idx], wt[idx], lb[idx], ub[idx], b[idx])
        xi, lam_i, val_i, gi, zi = (x, lam, val, g, z) if every else (x[idx], lam[idx], val[idx], g[idx], z[idx])
        free = (xi > lbi) & (xi < ubi)
        # components at a bound whose unclipped value points inside count as free too
        free |= (zi > lbi) & (zi < ubi)
        dd = np.where(free, 1.0, delta[idx, None]) / wi
        H = (Ai * dd[:, None, :]) @ np.swapaxes(Ai, 1, 2)
        reg = 1e-12 * (1.0 + np.abs(H).max(axis=(1, 2)))
        H = H + reg[:, None, None] * eye
        try:
            d = np.linalg.solve(H, gi[..., None])[..., 0]
        except np.linalg.LinAlgError:
            d = np.linalg.lstsq(H[0], gi[0], rcond=None)[0][None] if len(idx) == 1 else \
                np.stack([np.linalg.lstsq(h, gg, rcond=None)[0] for h, gg in zip(H, gi)])
        # backtracking: the dual must not decrease (steps 1, 1/2, ... 2⁻³⁹, the first that
        # serves a row is taken): the full step on every row, then the rows it did not serve
        # try nh halved steps at once (each row's values are those of one step at a time:
        # per row the same operations; the steps after its first good one are not used)
        floor = val_i - 1e-14 * (1 + np.abs(val_i))
        lam_new = lam_i + d
        zt, xt, gt, vt = _trial(Ai, bi, lam_new, wi, lbi, ubi)
        good = vt >= floor
        step = np.where(good, 1.0, 0.0)              # 0: no step found (yet)
        if every and good.all():                     # every frame takes the full step
            lam, x, val, g, z = lam_new, xt, vt, gt, zt
        else:
            acc = np.flatnonzero(good)
            sel = idx[acc]
            lam[sel], x[sel], val[sel], g[sel], z[sel] = lam_new[acc], xt[acc], vt[acc], gt[acc], zt[acc]
        rest = np.flatnonzero(~good)
        for k0 in range(0, _STEPS.size, nh):
            if rest.size == 0:
                break
            s = _STEPS[k0:k0 + nh]
            K, R = s.size, rest.size
            rep = np.repeat(rest, K)
            tr = (lam_i[rest][:, None, :] + s[None, :, None] * d[rest][:, None, :]).reshape(R * K, m)
            zt, xt, gt, vt = _trial(Ai[rep], bi[rep], tr, wi[rep], lbi[rep], ubi[rep])
            good = (vt >= floor[rep]).reshape(R, K)
            hit = good.any(axis=1)
            first = np.argmax(good, axis=1)
            acc = np.flatnonzero(hit)
            if acc.size:
                j = acc * K + first[acc]                 # rows of the trials taken
                sel = idx[rest[acc]]
                lam[sel], x[sel], val[sel], g[sel], z[sel] = tr[j], xt[j], vt[j], gt[j], zt[j]
                step[rest[acc]] = s[first[acc]]
            rest = rest[~hit]
        done = step > 0.0
        full = step == 1.0
        di = delta[idx]
        di = np.where(full, di * 1e-3, np.minimum(di * 10.0, 1.0))
        delta[idx] = np.where(di < 1e-14, 0.0, di)
        gi = g[idx]
        conv = np.abs(gi).max(axis=1) <= tol * scale[idx]
        stalled = ~done & (delta[idx] >= 1.0)
        idx = idx[~(conv | stalled)]
    res = _Ax(A, x) - b
    ok = np.abs(res).max(axis=1) <= max(tol, 1e-9) * scale
    return BoxQPResult(x=x, lam=lam, residual=res, ok=ok, iterations=it)
