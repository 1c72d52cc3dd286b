"""Wrapping over an ellipsoid (OpenSim 4.6 ``WrapEllipsoid::wrapLine``), vectorized over frames.

OpenSim's own approximations are replayed step by step (wrap plane from the "fan"/axis-plane
estimates, its damped tangent-point search, the surface length as a sum of ~1 mm chords),
because OpenSim's result is not the exact geodesic. Returns as every wrap function
(:mod:`arthron.geometry.wrapping`).
"""
from __future__ import annotations

import numpy as np

from .ellipsoid_closest import NEWTON_CHUNK as _NEWTON_CHUNK, ROUNDOFF as _ROUNDOFF
from .ellipsoid_closest import closest_ellipsoid as _closest_ellipsoid, newton_ellipsoid as _newton_ellipsoid
from .spatial import cross as _cross
from .wrap_common import INSIDE, MANDATORY, NO_WRAP, _divide_positive, _dot, _norm, _sgn, _unit
from .wrap_kernels import kernels, use_kernel

__all__ = ["wrap_ellipsoid"]


# --------------------------------------------------------------------------------- ellipsoid
_MU_BLEND_MIN = 0.7073     # below: the "fan" estimate of the wrap plane only
_MU_BLEND_MAX = 0.9        # above: the axis-plane ("Frans") estimate only
_NUM_FAN = 300
_SV_BLEND = 0.3
_SEG = 0.001               # m, length of the chords of the surface path
SURFACE_CHORD = _SEG       # (public name: the renderer draws the same chords)
_FAN_BLOCK = 1 << 18       # fan points per block of frames (NumPy route)


def _fan_blades(R1, d12, a, dims):
    """The fan's sum of unit vectors from the chord points ``R1 + k/300 d12`` (k = 1..298) to
    their closest ellipsoid points, (N, 3): the compiled kernel when
    :func:`~arthron.geometry.wrap_kernels.use_kernel` says so, else NumPy (:func:`_fan_numpy`);
    rows with a chord point on a coordinate plane go through :func:`_closest_ellipsoid`'s
    2-D branch."""
    N = len(R1)
    blades = np.empty((N, 3))
    todo = np.arange(N)
    if use_kernel(N * (_NUM_FAN - 2)):
        special = np.empty(N, bool)
        kernels().fan_blades(np.ascontiguousarray(R1), np.ascontiguousarray(d12),
                             np.ascontiguousarray(a), _NUM_FAN, blades, special)
        todo = np.where(special)[0]
    if len(todo) == 0:
        return blades
    tt = np.arange(1, _NUM_FAN - 1) / _NUM_FAN
    nb = max(1, _FAN_BLOCK // len(tt))   # frames per block
    for b0 in range(0, len(todo), nb):
        fb = todo[b0:b0 + nb]
        blades[fb] = _fan_numpy(R1[fb], d12[fb], a, dims, tt)
    return blades


def _fan_numpy(R1, d12, a, dims, tt):
    """:func:`_fan_blades` in NumPy for rows R1, d12 (n, 3), in blocks of whole fan rows
    (k = k0 … k1 − 1 of every row, at most :data:`_NEWTON_CHUNK` points): the chord points,
    Eberly's Newton iteration (:func:`_newton_ellipsoid`) and the unit vectors of a block, their
    running sum over the fan carried from block to block in fan order (the kernel's order).
    Every array of a block stays small, so the allocator reuses its memory (the whole fan's
    arrays at once, several 100 kB each, cost a page fault per 4 KiB of fresh memory in every
    call); the same values as :func:`_fan_numpy_whole`, which takes the calls with a chord
    point on a coordinate plane."""
    n = len(R1)
    K = len(tt)
    if _on_plane(R1, d12, tt):
        return _fan_numpy_whole(R1, d12, a, dims, tt)
    inside = _all_inside(R1, d12, tt, a)
    per = max(1, _NEWTON_CHUNK // max(n, 1))
    a2, b2, c2 = a ** 2
    acc = None
    for k0 in range(0, K, per):
        ts = tt[k0:k0 + per, None]
        u = R1[:, 0] + ts * d12[:, 0]                                   # (kc, n) each
        v = R1[:, 1] + ts * d12[:, 1]
        w = R1[:, 2] + ts * d12[:, 2]
        t, A, B, C = _fan_start(u, v, w, a, inside)
        _newton_ellipsoid(t, 0, t.size, a2, b2, c2, A, B, C)
        kc = u.shape[0]
        # this block's unit vectors after the running sum (row 0), summed in fan order: a
        # reduction over the outer axis of (rows, 3n) adds one row at a time
        buf = np.empty((kc + (acc is not None), 3, n))
        _fan_units(u, v, w, t.reshape(u.shape), a, buf if acc is None else buf[1:])
        if acc is not None:
            buf[0] = acc
        acc = np.add.reduce(buf.reshape(len(buf), 3 * n), axis=0).reshape(3, n)
    return acc.T.copy()


def _fan_numpy_whole(R1, d12, a, dims, tt):
    """:func:`_fan_blades` in NumPy for rows R1, d12 (n, 3): the chord points as coordinate
    arrays (K, n) (K = len(tt)), Eberly's Newton iteration on all points of the rows without a
    point on a coordinate plane at once (:func:`_newton_ellipsoid`), the unit vectors summed
    in fan order (the kernel's order); the other rows through :func:`_closest_ellipsoid`."""
    n = len(R1)
    u, v, w = (R1[:, i] + tt[:, None] * d12[:, i] for i in range(3))      # (K, n) each
    plane = ((np.abs(u) <= _ROUNDOFF) | (np.abs(v) <= _ROUNDOFF)
             | (np.abs(w) <= _ROUNDOFF)).any(0)
    out = np.empty((n, 3))
    if plane.any():
        sp = np.flatnonzero(plane)
        sv = R1[sp, None, :] + tt[None, :, None] * d12[sp, None, :]
        cp = _closest_ellipsoid(a, dims, sv.reshape(-1, 3)).reshape(sv.shape)
        out[sp] = _unit(cp - sv)[0].sum(1)
        gen = np.flatnonzero(~plane)
        if len(gen) == 0:
            return out
        u, v, w = u[:, gen], v[:, gen], w[:, gen]
    else:
        gen = slice(None)
    a2, b2, c2 = a ** 2
    t, A, B, C = _fan_start(u, v, w, a)
    m = len(t)
    for s0 in range(0, m, _NEWTON_CHUNK):
        _newton_ellipsoid(t, s0, min(m, s0 + _NEWTON_CHUNK), a2, b2, c2, A, B, C)
    K, nn = u.shape
    res = np.empty((K, 3, nn))
    _fan_units(u, v, w, t.reshape(u.shape), a, res)
    # summed over the fan in fan order: a reduction over the outer axis of (K, 3n) adds one
    # point at a time to each of the 3n sums (pairwise summation happens only along a
    # contiguous reduced axis, which this layout never has, even for a single row)
    out[gen] = np.add.reduce(res.reshape(K, 3 * nn), axis=0).reshape(3, nn).T
    return out


def _fan_start(u, v, w, a, inside=False):
    """Eberly's start for the chord points (u, v, w) (K, n) each: t (K·n,) (0 inside the
    ellipsoid of radii ``a``, ``max(a)·|x|`` outside; chord points rarely are; ``inside``: all
    are, known already) and the flattened ``a²u², b²v², c²w²`` of :func:`_newton_ellipsoid`."""
    a2, b2, c2 = a ** 2
    A, B, C = a2 * u * u, b2 * v * v, c2 * w * w
    t = np.zeros(u.size)
    if inside:
        return t, A.ravel(), B.ravel(), C.ravel()
    su, sv_, sw = u / a[0], v / a[1], w / a[2]
    out_ = ~(su * su + sv_ * sv_ + sw * sw < 1.0)     # outside
    if out_.any():
        t[out_.ravel()] = (a.max() * np.sqrt(u * u + v * v + w * w))[out_]
    return t, A.ravel(), B.ravel(), C.ravel()


_WINDOW = np.array([-2, -1, 0, 1])


def _on_plane(R1, d12, tt):
    """Whether a chord point ``R1 + tt_k d12`` (rows (n, 3), as :func:`_fan_numpy` computes
    them) has a coordinate within round-off of 0. Along a row each coordinate, as computed, is
    monotone in k (rounding is monotone), so its smallest magnitude is beside its sign change
    or, without one, at the end of the fan nearer the crossing: only the points of a window of
    four around the crossing −R1/d12 (clipped to the fan) are computed."""
    with np.errstate(divide="ignore", invalid="ignore"):
        kc = np.searchsorted(tt, (-R1 / d12).ravel())
    cand = np.minimum(np.maximum(kc[:, None] + _WINDOW, 0), len(tt) - 1).reshape(R1.shape + (4,))
    x = R1[..., None] + tt[cand] * d12[..., None]
    return bool((np.abs(x) <= _ROUNDOFF).any())


def _all_inside(R1, d12, tt, a):
    """Whether every chord point ``R1 + tt_k d12`` lies inside the ellipsoid of radii ``a``
    with the margin 1e-12 (then :func:`_fan_start`'s test holds for each as computed): the sum
    of squares is convex along the chord, so it is largest at the fan's two ends."""
    e = [R1 + tt[i] * d12 for i in (0, -1)]
    return bool(all(((x / a) ** 2).sum(1).max() < 1.0 - 1e-12 for x in e))


def _fan_units(u, v, w, t, a, res):
    """The unit vectors from the chord points (u, v, w) (K, n) each to their closest
    ellipsoid points (multipliers t (K, n)), written into ``res[:, j]`` (K, 3, n); a point on
    the surface gives a zero vector (d = 0 there; 0/1 = 0)."""
    a2, b2, c2 = a ** 2
    dx = a2 * u / (t + a2) - u
    dy = b2 * v / (t + b2) - v
    dz = c2 * w / (t + c2) - w
    nrm = np.sqrt(dx * dx + dy * dy + dz * dz)
    ok = nrm > 0
    if not ok.all():
        nrm = np.where(ok, nrm, 1.0)
    for j, d in enumerate((dx, dy, dz)):
        np.divide(d, nrm, out=res[:, j])


def _tangent_lm(pe, r, p, a, vs, vs4):
    """OpenSim's ``WrapEllipsoid::calcTangentPoint``: from the start ``r`` (N,3), a damped
    Gauss-Newton search for a point on the ellipsoid, in the plane (vs, vs4), whose tangent
    plane holds p. Replayed step by step (damping, step doubling, tolerance 1e-8 on the sum of
    squared residuals, 50 iterations) because OpenSim uses the point where the search stops,
    which is not always the exact tangent point. Scaled coordinates, centre at the origin.

    NumPy route: the rows still searching are kept side by side (the finished ones leave the
    working arrays); each row's arithmetic is that of one row at a time (the kernel's
    order), and the step doubling tries :data:`_LINE_BATCH` doublings at once (the later ones
    are thrown away for a row whose search stopped earlier)."""
    if use_kernel():
        out = np.empty((len(r), 3))
        kernels().tangent_lm(np.ascontiguousarray(pe, float), np.ascontiguousarray(r, float),
                             np.ascontiguousarray(p, float), np.ascontiguousarray(a, float),
                             np.ascontiguousarray(vs, float), np.ascontiguousarray(vs4, float),
                             out)
        return out
    r = np.array(r, float)
    p = np.asarray(p, float)
    near = np.abs(pe) < 1e-4
    r[near] = p[near]
    ix = np.flatnonzero(~near)                     # rows still searching (global index)
    if len(ix) == 0:
        return r
    a2 = a * a
    R, P, V, V4 = r[ix], p[ix], np.asarray(vs, float)[ix], np.asarray(vs4, float)[ix]
    n0 = 2.0 * R / a2
    d1 = -(n0[:, 0] * R[:, 0] + n0[:, 1] * R[:, 1] + n0[:, 2] * R[:, 2])
    E, ssq = _lm_resid(R, d1, P, V, V4, a, a2)
    pn = _norm(P)
    PU = _divide_positive(P, pn[:, None])
    Dp = 2.0 * P / a2                              # the Jacobian's p column (fixed)
    alpha = np.full(len(ix), 0.01)
    nit = 0
    diag = (np.arange(4), np.arange(4))
    # the Jacobian (rows, 4, 4): columns vs and the p column fixed, the last row (0, 0, 1, 1)
    D = np.zeros((len(ix), 4, 4))
    D[:, :3, 0] = V
    D[:, :3, 3] = Dp
    D[:, 3, 2:] = 1.0
    while True:
        run = ssq > 1e-8
        if nit >= 50 or not run.all():            # finished rows leave
            keep = run if nit < 50 else np.zeros(len(ix), bool)
            done = ~keep
            r[ix[done]] = R[done]
            if not keep.any():
                return r
            ix, R, P, V, V4, d1, E, ssq, PU, D, alpha = (
                x[keep] for x in (ix, R, P, V, V4, d1, E, ssq, PU, D, alpha))
        nit += 1
        m = len(ix)
        np.divide(2.0 * R, a2, out=D[:, :3, 1])
        np.multiply(D[:, :3, 1], 2.0, out=D[:, :3, 2])   # 2·(2R)/a² (doubling is exact)
        Q = P - R
        qn = _norm(Q)
        Q = _divide_positive(Q, qn[:, None])
        QU = Q * PU
        pcos = QU[:, 0] + QU[:, 1] + QU[:, 2]
        dd = np.where(pcos > 0.1, 1.0 - np.abs(pcos) ** 100, 1.0)
        v = -np.einsum("nij,nj->ni", D, E)
        # D Dᵀ, each entry summed over k in order (the kernel's order)
        D2 = D[:, :, None, 0] * D[:, None, :, 0]
        for k in (1, 2, 3):
            D2 += D[:, :, None, k] * D[:, None, :, k]
        dg = D2[:, diag[0], diag[1]].copy()
        vt = np.empty((m, 4))
        # damping: grow alpha until the step lowers the residual (each row on its own)
        inner = np.arange(m)
        k2 = 0
        while len(inner) and k2 < 1000:
            if len(inner) == m:                    # every row (the first pass): no gathers
                M = D2.copy()
                M[:, diag[0], diag[1]] = dg * (1.0 + alpha[:, None])
                vt = dd[:, None] * np.einsum("nij,nj->ni", np.linalg.inv(M), v) / 16.0
                R = R + vt[:, :3]
                d1 = d1 + vt[:, 3]
                E, si = _lm_resid(R, d1, P, V, V4, a, a2)
                up = si >= ssq
                ssq = si
                alpha *= 4.0
            else:
                M = D2[inner]
                M[:, diag[0], diag[1]] = dg[inner] * (1.0 + alpha[inner, None])
                vti = dd[inner, None] * np.einsum("nij,nj->ni", np.linalg.inv(M), v[inner]) / 16.0
                vt[inner] = vti
                Ri = R[inner] + vti[:, :3]
                di = d1[inner] + vti[:, 3]
                Ei, si = _lm_resid(Ri, di, P[inner], V[inner], V4[inner], a, a2)
                R[inner], d1[inner], E[inner] = Ri, di, Ei
                up = si >= ssq[inner]
                ssq[inner] = si
                alpha[inner] *= 4.0
            k2 += 1
            inner = inner[up]
        alpha /= 8.0
        # step doubling while the residual does not grow: R + vt·1, + vt·2, + vt·4, ...
        R, d1 = _line_search(R, d1, ssq, vt, P, V, V4, a, a2)
        E, ssq = _lm_resid(R, d1, P, V, V4, a, a2)


#: doublings of the step tried at once by :func:`_line_search`
_LINE_BATCH = 8
_DOUBLINGS = 2.0 ** np.arange(1, _LINE_BATCH + 1)


def _line_search(R, d1, ssq, vt, P, V, V4, a, a2):
    """OpenSim's step doubling, each row on its own: fakt = 1, 2, 4, ...; ``R += vt·fakt``
    while the residual does not grow (at most 1000 steps), then the last step taken back
    (``R − vt·fakt``, as OpenSim computes it). :data:`_LINE_BATCH` steps of all rows per
    residual evaluation, the points' coordinates as contiguous (K, rows) arrays
    (:func:`_lm_ssq`). Returns (R, d1) after the step back."""
    m = len(R)
    Rn, dn = R.copy(), d1.copy()
    fakt_end = np.zeros(m)
    rows = np.arange(m)
    fakt = 0.5
    k2 = 0
    vT, PT, VT = vt.T, P.T, V.T
    cur_R, cur_d, cur_s = R.T, d1, ssq
    while len(rows):
        K = min(_LINE_BATCH, 1000 - k2)
        vtr = vT if len(rows) == m else vT[:, rows]
        fk = fakt * _DOUBLINGS[:K]                 # fakt doubled K times (powers of two: exact)
        fakt = fk[-1]
        # the steps vt·fakt of all K doublings at once, added one after the other
        Rs = vtr[:3, None, :] * fk[None, :, None]  # (3, K, rows)
        ds = vtr[3][None, :] * fk[:, None]
        Rs[:, 0] += cur_R
        ds[0] += cur_d
        for k in range(1, K):
            Rs[:, k] += Rs[:, k - 1]
            ds[k] += ds[k - 1]
        if len(rows) == m:
            s = _lm_ssq(Rs, ds, PT, VT, V4, a, a2)
        else:
            s = _lm_ssq(Rs, ds, PT[:, rows], VT[:, rows], V4[rows], a, a2)
        prev = np.concatenate([cur_s[None], s[:-1]])
        grew = ~(s <= prev)                        # the step that ends the doubling
        k2 += K
        stop = grew.any(0) | (k2 >= 1000)
        ks = np.where(grew.any(0), np.argmax(grew, 0), K - 1)
        j = np.flatnonzero(stop)
        g = rows[j]
        Rn[g] = Rs[:, ks[j], j].T
        dn[g] = ds[ks[j], j]
        fakt_end[g] = fk[ks[j]]
        go = ~stop
        rows = rows[go]
        cur_R, cur_d, cur_s = Rs[:, -1, go], ds[-1, go], s[-1, go]
    return Rn - vt[:, :3] * fakt_end[:, None], dn - vt[:, 3] * fakt_end


def _lm_ssq(r, d1, p, vs, vs4, a, a2):
    """The sum of squares of :func:`_lm_resid` at the points r (3, K, n) (coordinates first),
    d1 (K, n), for p, vs (3, n) and vs4 (n,): the same operations in the same order on
    contiguous arrays."""
    r0, r1, r2 = r
    n0, n1, n2 = (2.0 * r0) / a2[0], (2.0 * r1) / a2[1], (2.0 * r2) / a2[2]
    e0 = vs[0] * r0
    e0 += vs[1] * r1
    e0 += vs[2] * r2
    e0 += vs4
    x = r0 / a[0]
    x *= x
    e1 = r1 / a[1]
    e1 *= e1
    e1 += x
    x = r2 / a[2]
    x *= x
    e1 += x
    e1 -= 1.0
    e2 = n0 * r0
    e2 += n1 * r1
    e2 += n2 * r2
    e2 += d1
    e3 = n0 * p[0]
    e3 += n1 * p[1]
    e3 += n2 * p[2]
    e3 += d1
    e0 *= e0
    e1 *= e1
    e0 += e1
    e2 *= e2
    e0 += e2
    e3 *= e3
    e0 += e3
    return e0


def _lm_resid(r, d1, p, vs, vs4, a, a2):
    """The search's residuals (..., 4) and their sum of squares (...) at r (..., 3), d1 (...)
    (p, vs, vs4 broadcast against them), each in the kernel's order."""
    nr = 2.0 * r / a2
    e = np.empty(r.shape[:-1] + (4,))
    x = vs * r
    e0, e1, e2, e3 = (e[..., i] for i in range(4))
    np.add(x[..., 0], x[..., 1], out=e0)
    e0 += x[..., 2]
    e0 += vs4
    x = r / a
    x *= x
    np.add(x[..., 0], x[..., 1], out=e1)
    e1 += x[..., 2]
    e1 -= 1.0
    x = nr * r
    np.add(x[..., 0], x[..., 1], out=e2)
    e2 += x[..., 2]
    e2 += d1
    x = nr * p
    np.add(x[..., 0], x[..., 1], out=e3)
    e3 += x[..., 2]
    e3 += d1
    x = e * e
    s = x[..., 0] + x[..., 1]
    s += x[..., 2]
    s += x[..., 3]
    return e, s


def section_points(a0, ar1, vsy, phi, radii):
    """Points (..., K, 3) of the ellipsoid of semi-axes ``radii`` (centred at the origin) on the
    rays from ``a0`` (..., 3) in the directions ``cos φ ar1 + sin φ vsy`` (unit vectors (..., 3)
    of the section's plane), at the angles ``phi`` (..., K): each ray's exit point (the larger
    root), as OpenSim's ``CalcDistanceOnEllipsoid`` samples the section of its wrap plane."""
    rdir = np.cos(phi)[..., None] * ar1[..., None, :] + np.sin(phi)[..., None] * vsy[..., None, :]
    f1 = rdir / radii
    f2 = a0 / radii
    qa = _dot(f1, f1)
    qb = 2 * _dot(f1, f2[..., None, :])
    qc = (_dot(f2, f2) - 1.0)[..., None]
    m3 = (-qb + np.sqrt(np.maximum(qb * qb - 4 * qa * qc, 0.0))) / (2 * qa)
    return a0[..., None, :] + m3[..., None] * rdir


def _surface_path(r1, r2, a, vs, vs4, far, factor):
    """OpenSim's ``CalcDistanceOnEllipsoid``: points on the ellipse section at equal angles
    about the point where the plane crosses the coordinate axis most normal to it, joined
    by chords (about 1 mm long, at most 499). Returns (length (scaled), first interior point,
    last interior point, number of points)."""
    N = len(r1)
    if use_kernel():
        L, first, last, npts = np.empty(N), np.empty((N, 3)), np.empty((N, 3)), np.empty(N, int)
        kernels().surface_path(*(np.ascontiguousarray(x, float) for x in (r1, r2, a, vs, vs4)),
                               np.ascontiguousarray(far, bool), float(factor), _SEG, L, first,
                               last, npts)
        return L, first, last, npts
    dr = r1 - r2
    ln = _norm(dr) / factor
    nseg = np.where(ln < _SEG, 1, np.minimum((ln / _SEG).astype(int), 499))
    nseg = np.maximum(nseg, 1)
    imax = np.argmax(np.abs(vs), 1)
    u = np.eye(3)[imax]
    mu = (-vs4) / _dot(vs, u)
    a0 = mu[:, None] * u
    ar1 = _unit(r1 - a0)[0]
    ar2 = _unit(r2 - a0)[0]
    phi0 = np.arccos(np.clip(_dot(ar1, ar2), -1, 1))
    dphi = np.where(far, -(2 * np.pi - phi0), phi0) / nseg
    vsz = _unit(_cross(ar1, ar2))[0]
    vsy = _cross(vsz, ar1)
    L = np.zeros(N)
    first, last, prev = r1.copy(), r2.copy(), r1.copy()
    K = int(nseg.max())
    if K > 1:
        # the interior points of a block of rows at once (n, K-1), the chords summed in order
        # as one at a time; blocks bound the memory to ~2**18 points
        nb = max(1, (1 << 18) // (K - 1))
        for b0 in range(0, N, nb):
            b = slice(b0, b0 + nb)
            phi = np.arange(1, K)[None, :] * dphi[b, None]
            sp = section_points(a0[b], ar1[b], vsy[b], phi, a)
            ns = nseg[b]
            act = np.arange(K - 1)[None, :] < (ns - 1)[:, None]
            prevs = np.concatenate([r1[b, None, :], sp[:, :-1]], 1)
            d = np.where(act, _norm(sp - prevs), 0.0)
            L[b] = np.cumsum(d, axis=1)[:, -1]
            has = (ns > 1)[:, None]
            first[b] = np.where(has, sp[:, 0], r1[b])
            last[b] = np.where(has, sp[np.arange(len(ns)), np.maximum(ns - 2, 0)], r2[b])
            prev[b] = np.where(has, last[b], r1[b])
    L += _norm(r2 - prev)
    short = ln < _SEG
    L = np.where(short, ln * factor, L)
    return L, first, last, np.where(short, 2, nseg + 1)


def wrap_ellipsoid(p1, p2, radii, axis: int = -1, sign: int = 0, method: str = "hybrid"):
    """Wrap the segment p1-p2 over the ellipsoid of semi-axes ``radii`` centred at the
    origin, as OpenSim's ``WrapEllipsoid`` does.

    The wrap happens only if the straight segment crosses the ellipsoid (then it is
    mandatory). The path lies in a plane through p1 and p2 that also holds a surface point c1
    estimated from the segment ("hybrid": closest points of the ellipsoid to points of the
    chord blended between the axis-plane and the "fan" estimates; "midpoint": closest point to
    the chord's midpoint; "axial": the axis-plane estimate); the tangent points from p1 and p2
    are exact in that plane and the surface length is OpenSim's chord sum. With a quadrant,
    c1 is moved to the active side and a wrong-way path is replaced by the far-side one.

    Returns (status, r1, r2, length); see the module docstring.
    """
    p1 = np.asarray(p1, float)
    p2 = np.asarray(p2, float)
    T = p1.shape[0]
    dims = np.asarray(radii, float)
    factor = 3.0 / dims.sum()
    a = dims * factor
    P1, P2 = p1 * factor, p2 * factor
    p1e = (np.square(P1 / a)).sum(1) - 1.0
    p2e = (np.square(P2 / a)).sum(1) - 1.0
    status = np.full(T, NO_WRAP)
    inside = (p1e < -1e-4) | (p2e < -1e-4)
    status[inside] = INSIDE
    p1p2 = P1 - P2
    ppm = _dot(_unit(P1)[0], _unit(P2)[0]) - 1.0
    f1 = p1p2 / a
    f2 = P2 / a
    aa = _dot(f1, f1)
    bb = 2 * _dot(f1, f2)
    cc = _dot(f2, f2) - 1.0
    disc = bb * bb - 4 * aa * cc
    sq = np.sqrt(np.maximum(disc, 0.0))
    l1 = (-bb + sq) / (2 * aa)
    l2 = (-bb - sq) / (2 * aa)
    hit = (~inside & ~(np.abs(ppm) < 1e-4) & (disc >= 0) & (l1 > 0) & (l1 < 1) & (l2 > 0)
           & (l2 < 1))
    r1o = np.zeros((T, 3))
    r2o = np.zeros((T, 3))
    Lo = np.zeros(T)
    idx = np.where(hit)[0]
    if len(idx) == 0:
        return status, r1o, r2o, Lo
    P1, P2, p1p2 = P1[idx], P2[idx], p1p2[idx]
    l1, l2 = l1[idx], l2[idx]
    N = len(idx)
    R1 = P2 + l1[:, None] * p1p2
    R2 = P2 + l2[:, None] * p1p2
    d12 = R2 - R1
    mu = np.abs(_unit(p1p2)[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        tpar = -R1 / d12   # where coordinate i of R1 + t d12 is 0
    best = np.argmax(mu, 1)
    rows = np.arange(N)
    tb = tpar[rows, best]
    mub = mu[rows, best].copy()
    sv_f = R1 + tb[:, None] * d12
    c1 = np.zeros((N, 3))
    fan_w = np.full(N, -np.inf)
    c1_f = np.zeros((N, 3))
    for i in range(3):
        m = best == i
        if m.any():
            c1_f[m] = _closest_ellipsoid(a, dims, sv_f[m], axis=i)
    if method in ("hybrid", "axial"):
        if method == "hybrid":
            s = np.ones(N)
            s = np.where((tb < 0) | (tb > 1), 0.0,
                         np.where(tb < _SV_BLEND, tb / _SV_BLEND,
                                  np.where(tb > 1 - _SV_BLEND, (1 - tb) / _SV_BLEND, 1.0)))
            fade = (mub > _MU_BLEND_MIN) & (s < 1.0)
            mub = np.where(fade, _MU_BLEND_MIN + s * (mub - _MU_BLEND_MIN), mub)
        use_f = np.full(N, method == "axial") | (mub > _MU_BLEND_MIN)
        c1 = np.where(use_f[:, None], c1_f, c1)
        if method == "hybrid":
            fan = mub < _MU_BLEND_MAX
            if fan.any():
                fi = np.where(fan)[0]
                mid = R1[fi] + 0.5 * d12[fi]
                blades = _fan_blades(R1[fi], d12[fi], a, dims)
                vsum = _unit(blades)[0]
                tc = mid + vsum
                cfan = _closest_ellipsoid(a, dims, tc)
                mf = mub[fi]
                pure = mf <= _MU_BLEND_MIN
                w = (mf - _MU_BLEND_MIN) / (_MU_BLEND_MAX - _MU_BLEND_MIN)
                blend = w[:, None] * c1[fi] + (1 - w)[:, None] * cfan
                cb = _closest_ellipsoid(a, dims, blend)
                c1[fi] = np.where(pure[:, None], cfan, cb)
                fan_w[fi] = np.where(pure, 1.0, 1 - w)
    else:  # midpoint
        c1 = _closest_ellipsoid(a, dims, R1 + 0.5 * d12)
    # starting points of the tangent searches
    use_c1 = np.ones(N, bool) if method != "axial" else ((tb > 0) & (tb < 1))
    start1 = np.where(use_c1[:, None], c1, R1)
    start2 = np.where(use_c1[:, None], c1, R2)
    if axis >= 0:
        flip = _sgn(c1[:, axis]) != sign
        if flip.any():
            orig = c1[:, axis].copy()
            c1f = c1.copy()
            c1f[:, axis] = -c1f[:, axis]
            start1 = np.where(flip[:, None], c1f, start1)
            start2 = np.where(flip[:, None], c1f, start2)
            # OpenSim recomputes an unset fan weight (-inf) only when
            # EQUAL_WITHIN_ERROR(fanWeight, -Infinity) holds, which it never does (-inf - -inf
            # is NaN): without the fan (the "midpoint" and "axial" methods, "hybrid" above
            # MU_BLEND_MAX) the flipped c1 is kept as it is
            fw = np.minimum(fan_w, 1.0)
            mv = flip & (fw > 0)
            if mv.any():
                bis = 0.5 * (orig[mv] + c1f[mv, axis])
                moved = c1f[mv].copy()
                moved[:, axis] = c1f[mv, axis] + fw[mv] * (bis - c1f[mv, axis])
                c1f[mv] = _closest_ellipsoid(a, dims, moved)
            c1 = np.where(flip[:, None], c1f, c1)
    vs = _unit(_cross(p1p2, P1 - c1))[0]
    vs4 = -_dot(vs, c1)
    # both tangent searches in one batch (each row is searched on its own)
    rr = _tangent_lm(np.concatenate([p1e[idx], p2e[idx]]), np.concatenate([start1, start2]),
                     np.concatenate([P1, P2]), a, np.concatenate([vs, vs]),
                     np.concatenate([vs4, vs4]))
    r1, r2 = rr[:N], rr[N:]
    far = np.zeros(N, bool)
    L, w1, w2, npts = _surface_path(r1, r2, a, vs, vs4, far, factor)
    if axis >= 0:
        wrong = (npts > 2) & ((_dot(_unit(P1 - r1)[0], _unit(w1 - r1)[0]) > 0)
                              | (_dot(_unit(P2 - r2)[0], _unit(w2 - r2)[0]) > 0))
        if wrong.any():
            Lf, *_ = _surface_path(r1, r2, a, vs, vs4, np.ones(N, bool), factor)
            L = np.where(wrong, Lf, L)
    status[idx] = MANDATORY
    r1o[idx] = r1 / factor
    r2o[idx] = r2 / factor
    Lo[idx] = L / factor
    return status, r1o, r2o, Lo
