"""Closest point on an ellipse or an ellipsoid to given points, as OpenSim 4.6's
``WrapEllipsoid::findClosestPoint`` computes it (Eberly's Newton iteration on the Lagrange
multiplier, Graphics Gems IV), vectorized over points: what the ellipsoid wrap
(:mod:`arthron.geometry.wrap_ellipsoid`) projects its fan and surface points with."""
from __future__ import annotations

import numpy as np

__all__ = ["closest_ellipse", "closest_ellipsoid", "newton_ellipsoid"]

ROUNDOFF = 2e-13           # SimmMacros ROUNDOFF_ERROR (EQUAL_WITHIN_ERROR)
NEWTON_CHUNK = 8192        # points per block of the closest-point Newton iteration (its 12
#                            buffers stay in a 2 MiB L2 cache)


def _near_axis(a, b, a2, b2, u, v):
    """Eberly's special case of :func:`closest_ellipse` for points with ``u`` (radius ``a``)
    within round-off of 0 and ``v`` (radius ``b``) not: the closest (x, y). The case of a ``v``
    near 0 is this one with the axes swapped."""
    c1 = (a >= b) | (np.abs(v) >= b - a2 / b)
    yy = np.where(c1, np.where(v >= 0, b, -b), b2 * v / (b2 - a2) if b2 != a2 else 0.0)
    xx = np.where(c1, u, a * np.sqrt(np.abs(1 - (yy / b) ** 2)))
    return xx, yy


def closest_ellipse(a, b, u, v):
    """Closest point (x, y) on the ellipse (x/a)² + (y/b)² = 1 to (u, v), with the special
    cases near the axes and the Newton iteration on the Lagrange multiplier of Eberly's
    algorithm (Graphics Gems IV) as OpenSim uses it (64 steps, |f| < 1e-9)."""
    u = np.asarray(u, float)
    v = np.asarray(v, float)
    a2, b2 = a * a, b * b
    x = np.empty_like(u)
    y = np.empty_like(v)
    nx = np.abs(u) <= ROUNDOFF
    ny = np.abs(v) <= ROUNDOFF
    both = nx & ny
    if a < b:
        x[both] = np.where(u[both] < 0, -a, a)
        y[both] = v[both]
    else:
        x[both] = u[both]
        y[both] = np.where(v[both] < 0, -b, b)
    m = nx & ~ny
    if m.any():
        x[m], y[m] = _near_axis(a, b, a2, b2, u[m], v[m])
    m = ny & ~nx
    if m.any():
        y[m], x[m] = _near_axis(b, a, b2, a2, v[m], u[m])
    g = ~(nx | ny)
    if g.any():
        uu, vv = u[g], v[g]
        a2u2, b2v2 = a2 * uu * uu, b2 * vv * vv
        inside = (uu / a) ** 2 + (vv / b) ** 2 < 1.0
        t = np.where(inside, 0.0, max(a, b) * np.sqrt(uu * uu + vv * vv))
        act = np.ones(t.shape, bool)
        for _ in range(64):
            P, Q = t + a2, t + b2
            f = P * P * Q * Q - a2u2 * Q * Q - b2v2 * P * P
            act &= ~(np.abs(f) < 1e-9)
            if not act.any():
                break
            fp = 2.0 * (P * Q * (P + Q) - a2u2 * Q - b2v2 * P)
            t = np.where(act, t - f / np.where(act, fp, 1.0), t)
        x[g] = a2 * uu / (t + a2)
        y[g] = b2 * vv / (t + b2)
    return x, y


def newton_ellipsoid(t, s0, s1, a2, b2, c2, a2u2, b2v2, c2w2):
    """Eberly's Newton steps on the Lagrange multiplier ``t`` of the rows ``s0:s1`` (in place),
    each row until |f| < 1e-9 (at most 64 steps); converged rows leave the working arrays
    once at least half have converged (until then they keep their t: every row takes the
    step, and ``np.where`` keeps the converged rows' old t, which costs a fraction of a ufunc
    with ``where=``; their t is written back when they leave and at the end).
    ``f = P²Q²R² − AQ²R² − BP²R² − CP²Q²`` and its derivative are evaluated factored, as
    ``f = (QR)²(P² − A) − P²(BR·R + CQ·Q)`` and
    ``f'/2 = (Q + R)·QR·(P² − A) + P(QR)² − P²(BR + CQ) − P(BR·R + CQ·Q)`` (14 and 11
    operations instead of 17 and 20; the compiled fan kernel evaluates the same expressions
    in the same order), into preallocated buffers (no temporaries).

    The same values with less work: equal radii share one array (``t + b²`` is ``t + a²``
    when b² = a²), and a block that starts at t = 0 everywhere (chord points inside the
    ellipsoid: the fan) takes its first step with P, Q, R, P², QR, (QR)² and (Q + R)·QR as
    numbers (``0 + a² = a²`` exactly; a product of two doubles is the same double as an
    array's element or as a number)."""
    sl = slice(s0, s1)
    tt, A, B, Cc = t[sl].copy(), a2u2[sl], b2v2[sl], c2w2[sl]
    ix = None             # where the working rows are in t: ``sl`` until the first compaction
    m = s1 - s0
    # 10 + nq arrays, not one (10 + nq, m) block: each small enough for the allocator to reuse its
    # memory from call to call (a fresh block costs a page fault per 4 KiB)
    nq = int(b2 != a2) + int(c2 != b2 and c2 != a2)     # arrays for Q and R beyond P's
    buf = [np.empty(m) for _ in range(10 + nq)]
    conv = np.empty(m, bool)

    def views(k):
        P, P2, QR, Q2R2, X, S, f, t1, t2, fp, *qr = (b[:k] for b in buf)
        Q = P if b2 == a2 else qr.pop(0)
        R = P if c2 == a2 else (Q if c2 == b2 else qr.pop(0))
        return P, Q, R, P2, QR, Q2R2, X, S, f, t1, t2, fp
    P, Q, R, P2, QR, Q2R2, X, S, f, t1, t2, fp = views(m)

    def f_of_t():      # into the buffers (views bound below), nothing rebound here
        np.add(tt, a2, out=P)
        if Q is not P:
            np.add(tt, b2, out=Q)
        if R is not P and R is not Q:
            np.add(tt, c2, out=R)
        np.multiply(P, P, out=P2)
        np.multiply(Q, R, out=QR)
        np.multiply(QR, QR, out=Q2R2)
        np.subtract(P2, A, out=X)                 # P² − A
        np.multiply(Q2R2, X, out=f)
        np.multiply(B, R, out=t1)                 # B R
        np.multiply(Cc, Q, out=t2)                # C Q
        np.multiply(t1, R, out=S)
        np.multiply(t2, Q, out=fp)
        np.add(S, fp, out=S)                      # B R² + C Q²
        np.multiply(P2, S, out=fp)
        np.subtract(f, fp, out=f)

    # t = 0 on every row: the first step's P, Q, R ... are numbers (see the docstring)
    k = None
    if not tt.any():
        k = (a2, b2, c2, a2 * a2, b2 * c2)
        k += (k[4] * k[4], (b2 + c2) * k[4])      # P, Q, R, P², QR, (QR)², (Q + R)·QR
        np.subtract(k[3], A, out=X)
        np.multiply(k[5], X, out=f)
        np.multiply(B, c2, out=t1)
        np.multiply(Cc, b2, out=t2)
        np.multiply(t1, c2, out=S)
        np.multiply(t2, b2, out=fp)
        np.add(S, fp, out=S)
        np.multiply(k[3], S, out=fp)
        np.subtract(f, fp, out=f)
    for _ in range(64):
        if k is None:
            f_of_t()
        c = conv[:m]
        np.abs(f, out=fp)
        np.less(fp, 1e-9, out=c)
        go = None
        if c.any():
            go = ~c
            ng = np.count_nonzero(go)
            if ng == 0 or ng < m // 2:        # write the rows' t back
                if ix is None:
                    t[sl] = tt
                else:
                    t[ix] = tt
            if ng == 0:
                return
            if ng < m // 2:   # compact (f and its parts evaluated again on the rows left, the
                # same values); else the converged rows stay, frozen by ``np.where``
                keep = np.flatnonzero(go)
                ix = keep + s0 if ix is None else ix[keep]
                tt, A, B, Cc = tt[keep], A[keep], B[keep], Cc[keep]
                m = ng
                P, Q, R, P2, QR, Q2R2, X, S, f, t1, t2, fp = views(m)
                k = None
                f_of_t()
                go = None
        if k is None:
            np.add(Q, R, out=fp)
            fp *= QR
            fp *= X
            np.multiply(P, Q2R2, out=X)
            fp += X
            S *= P
        else:         # the first step from t = 0: the same operations, numbers for arrays
            np.multiply(k[6], X, out=fp)
            fp += k[0] * k[5]
            S *= k[0]
        fp -= S
        t1 += t2                                  # B R + C Q
        t1 *= P2 if k is None else k[3]
        fp -= t1
        fp += fp                                  # f'
        k = None
        if go is None:
            np.divide(f, fp, out=fp)
            np.subtract(tt, fp, out=tt)
        else:         # a frozen row keeps its t, so its f stays converged
            with np.errstate(divide="ignore", invalid="ignore"):   # (on frozen rows only)
                np.divide(f, fp, out=fp)
            np.subtract(tt, fp, out=fp)
            tt = np.where(go, fp, tt)
    if ix is None:
        t[sl] = tt
    else:
        t[ix] = tt


def closest_ellipsoid(a, dims, p, axis=-1):
    """Closest point on the ellipsoid of radii ``a`` (3,) to points p (N, 3), OpenSim's
    ``WrapEllipsoid::findClosestPoint``: a coordinate within round-off of 0 (or ``axis`` if
    given) reduces the problem to that coordinate plane's ellipse (the narrowest when several
    qualify, judged by the unscaled ``dims``); otherwise Eberly's Newton iteration."""
    p = np.asarray(p, float)
    N = p.shape[0]
    out = np.empty_like(p)
    if axis >= 0:
        sp = np.full(N, axis)
    else:
        sp = np.full(N, -1)
        best = np.full(N, np.inf)
        for i in range(3):
            s = dims.sum() - dims[i]
            m = (np.abs(p[:, i]) <= ROUNDOFF) & (best > s)
            sp[m] = i
            best[m] = s
    pairs = {0: (1, 2), 1: (2, 0), 2: (0, 1)}
    for i, (j, k) in pairs.items():
        m = sp == i
        if m.any():
            out[m, i] = p[m, i]
            out[m, j], out[m, k] = closest_ellipse(a[j], a[k], p[m, j], p[m, k])
    g = sp < 0
    allg = bool(g.all())
    if allg or g.any():
        u, v, w = np.ascontiguousarray(p.T) if allg else p[g].T
        a2, b2, c2 = a ** 2
        a2u2, b2v2, c2w2 = a2 * u * u, b2 * v * v, c2 * w * w
        inside = (u / a[0]) ** 2 + (v / a[1]) ** 2 + (w / a[2]) ** 2 < 1.0
        t = np.where(inside, 0.0, a.max() * np.sqrt(u * u + v * v + w * w))
        n = len(t)
        # Newton steps, each point until |f| < 1e-9 (at most 64), in chunks that stay in the
        # cache; points leave the working arrays when they converge (same arithmetic per
        # point as one step at a time, so the same result)
        for s0 in range(0, n, NEWTON_CHUNK):
            newton_ellipsoid(t, s0, min(n, s0 + NEWTON_CHUNK), a2, b2, c2, a2u2, b2v2, c2w2)
        if allg:
            out[:, 0] = a2 * u / (t + a2)
            out[:, 1] = b2 * v / (t + b2)
            out[:, 2] = c2 * w / (t + c2)
        else:
            out[g] = np.stack([a2 * u / (t + a2), b2 * v / (t + b2), c2 * w / (t + c2)], 1)
    return out
