"""numba kernels of the ellipsoid wrap (:mod:`arthron.geometry.wrap_ellipsoid`), imported
through :mod:`arthron.geometry._wrap_numba` (see there for the rules every kernel follows):

* :func:`fan_blades` — ``wrap_ellipsoid``'s fan: for each frame the 298 chord points, their
  closest ellipsoid points (``_closest_ellipsoid``, Eberly's Newton iteration) and the sum of
  the unit vectors from chord to surface;
* :func:`tangent_lm` — ``_tangent_lm`` (OpenSim's damped tangent-point search);
* :func:`surface_path` — ``_surface_path`` (the chord sum over the ellipsoid).
"""
from __future__ import annotations

import math

import numba
import numpy as np

_ROUNDOFF = 2e-13
_JIT = dict(cache=True, nogil=True, error_model="numpy")


#: fan points whose Newton iterations run side by side in :func:`fan_blades`
_LANES = 8


@numba.njit(**_JIT)
def fan_blades(R1, d12, a, num_fan, blades, special):
    """For each row: the chord points ``R1 + (k / num_fan) d12`` (k = 1 .. num_fan - 2), their
    closest ellipsoid points and the sum of the unit vectors from point to surface
    (``blades``, (N, 3)). A row with a chord point within round-off of a coordinate plane
    (the reference then takes the 2-D ellipse branch) gets ``special`` True and is left to the
    caller.

    The closest points: Eberly's Newton steps on the Lagrange multiplier (at most 64, until
    |f| < 1e-9) with f and f' factored and evaluated in the order of
    ``ellipsoid_closest.newton_ellipsoid``, on
    :data:`_LANES` fan points at a time (each point keeps its own start and its own stop at
    |f| < 1e-9; a stopped point is not updated), so that the processor overlaps the
    dependent divisions of independent points; the sum is taken in fan order. The result
    is bit for bit that of one point at a time."""
    amax = max(a[0], max(a[1], a[2]))
    a0 = a[0]
    a1 = a[1]
    a2 = a[2]
    A2 = a0 * a0
    B2 = a1 * a1
    C2 = a2 * a2
    L = _LANES
    nk = max(num_fan - 2, 0)
    us = np.empty(nk)
    vs = np.empty(nk)
    ws = np.empty(nk)
    ts = np.empty(nk)
    AA = np.zeros(L)
    BB = np.zeros(L)
    CC = np.zeros(L)
    t = np.zeros(L)
    go = np.zeros(L, np.bool_)
    for i in range(R1.shape[0]):
        special[i] = False
        for k in range(1, num_fan - 1):
            tk = k / num_fan
            u = R1[i, 0] + tk * d12[i, 0]
            v = R1[i, 1] + tk * d12[i, 1]
            w = R1[i, 2] + tk * d12[i, 2]
            if abs(u) <= _ROUNDOFF or abs(v) <= _ROUNDOFF or abs(w) <= _ROUNDOFF:
                special[i] = True
                break
            us[k - 1] = u
            vs[k - 1] = v
            ws[k - 1] = w
        blades[i, 0] = 0.0
        blades[i, 1] = 0.0
        blades[i, 2] = 0.0
        if special[i]:
            continue
        for s0 in range(0, nk, L):
            nl = min(L, nk - s0)
            for j in range(L):
                go[j] = j < nl
                if j >= nl:
                    t[j] = 0.0
                    continue
                u = us[s0 + j]
                v = vs[s0 + j]
                w = ws[s0 + j]
                AA[j] = A2 * u * u
                BB[j] = B2 * v * v
                CC[j] = C2 * w * w
                su = u / a0
                sv = v / a1
                sw = w / a2
                if su * su + sv * sv + sw * sw < 1.0:
                    t[j] = 0.0
                else:
                    t[j] = amax * math.sqrt(u * u + v * v + w * w)
            for _ in range(64):
                busy = False
                for j in range(L):
                    P = t[j] + A2
                    Q = t[j] + B2
                    R = t[j] + C2
                    P2 = P * P
                    QR = Q * R
                    Q2R2 = QR * QR
                    X = P2 - AA[j]
                    BR = BB[j] * R
                    CQ = CC[j] * Q
                    S = BR * R + CQ * Q
                    f = Q2R2 * X - P2 * S
                    if go[j]:
                        if abs(f) < 1e-9:
                            go[j] = False
                        else:
                            fp = (Q + R) * QR * X
                            fp = fp + P * Q2R2
                            fp = fp - S * P
                            fp = fp - (BR + CQ) * P2
                            fp = fp + fp
                            t[j] = t[j] - f / fp
                            busy = True
                if not busy:
                    break
            for j in range(nl):
                ts[s0 + j] = t[j]
        bx = 0.0
        by = 0.0
        bz = 0.0
        for k in range(nk):
            u = us[k]
            v = vs[k]
            w = ws[k]
            x = A2 * u / (ts[k] + A2)
            y = B2 * v / (ts[k] + B2)
            z = C2 * w / (ts[k] + C2)
            dx = x - u
            dy = y - v
            dz = z - w
            n = math.sqrt(dx * dx + dy * dy + dz * dz)
            if n > 0:
                bx += dx / n
                by += dy / n
                bz += dz / n
        blades[i, 0] = bx
        blades[i, 1] = by
        blades[i, 2] = bz


@numba.njit(**_JIT)
def _resid(r, d1, p, vs, vs4, a, a2, ee):
    n0 = 2.0 * r[0] / a2[0]
    n1 = 2.0 * r[1] / a2[1]
    n2 = 2.0 * r[2] / a2[2]
    e0 = vs[0] * r[0] + vs[1] * r[1] + vs[2] * r[2] + vs4
    s0 = r[0] / a[0]
    s1 = r[1] / a[1]
    s2 = r[2] / a[2]
    e1 = s0 * s0 + s1 * s1 + s2 * s2 - 1.0
    e2 = n0 * r[0] + n1 * r[1] + n2 * r[2] + d1
    e3 = n0 * p[0] + n1 * p[1] + n2 * p[2] + d1
    ee[0] = e0
    ee[1] = e1
    ee[2] = e2
    ee[3] = e3
    return e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3


@numba.njit(**_JIT)
def _inv4(M, inv):
    """Inverse of the 4x4 matrix M (overwritten by its LU factors) into inv: LU with partial
    pivoting, then the columns of the identity solved for (as LAPACK's gesv does for
    ``numpy.linalg.inv``); a zero pivot gives inf/NaN instead of an exception."""
    piv = np.empty(4, np.int64)
    for j in range(4):
        piv[j] = j
    for k in range(4):
        m = k
        big = abs(M[k, k])
        for i in range(k + 1, 4):
            if abs(M[i, k]) > big:
                big = abs(M[i, k])
                m = i
        if m != k:
            for c in range(4):
                tmp = M[k, c]
                M[k, c] = M[m, c]
                M[m, c] = tmp
            tp = piv[k]
            piv[k] = piv[m]
            piv[m] = tp
        for i in range(k + 1, 4):
            M[i, k] = M[i, k] / M[k, k]
            for c in range(k + 1, 4):
                M[i, c] -= M[i, k] * M[k, c]
    for j in range(4):
        y = np.empty(4)
        for i in range(4):
            s = 1.0 if piv[i] == j else 0.0
            for c in range(i):
                s -= M[i, c] * y[c]
            y[i] = s
        for i in range(3, -1, -1):
            s = y[i]
            for c in range(i + 1, 4):
                s -= M[i, c] * inv[c, j]
            inv[i, j] = s / M[i, i]


@numba.njit(**_JIT)
def tangent_lm(pe, r0, p, a, vs, vs4, out):
    """``_tangent_lm`` row by row: OpenSim's ``WrapEllipsoid::calcTangentPoint`` from the
    starts r0 (N, 3) towards the points p (N, 3) in the planes (vs, vs4); result in out."""
    a2 = a * a
    ee = np.empty(4)
    D = np.empty((4, 4))
    D2 = np.empty((4, 4))
    M = np.empty((4, 4))
    v = np.empty(4)
    vt = np.empty(4)
    dg = np.empty(4)
    r = np.empty(3)
    inv = np.empty((4, 4))
    for i in range(r0.shape[0]):
        pi = p[i]
        vsi = vs[i]
        if abs(pe[i]) < 1e-4:
            out[i, 0] = pi[0]
            out[i, 1] = pi[1]
            out[i, 2] = pi[2]
            continue
        r[0] = r0[i, 0]
        r[1] = r0[i, 1]
        r[2] = r0[i, 2]
        d1 = -((2.0 * r[0] / a2[0]) * r[0] + (2.0 * r[1] / a2[1]) * r[1]
               + (2.0 * r[2] / a2[2]) * r[2])
        ssq = _resid(r, d1, pi, vsi, vs4[i], a, a2, ee)
        ssqo = ssq
        alpha = 0.01
        pn = math.sqrt(pi[0] * pi[0] + pi[1] * pi[1] + pi[2] * pi[2])
        pu0 = pi[0] / pn if pn > 0 else 0.0
        pu1 = pi[1] / pn if pn > 0 else 0.0
        pu2 = pi[2] / pn if pn > 0 else 0.0
        nit = 0
        while ssq > 1e-8 and nit < 50:
            nit += 1
            for j in range(3):
                D[j, 0] = vsi[j]
                D[j, 1] = 2.0 * r[j] / a2[j]
                D[j, 2] = 2.0 * (2.0 * r[j]) / a2[j]
                D[j, 3] = 2.0 * pi[j] / a2[j]
            D[3, 0] = 0.0
            D[3, 1] = 0.0
            D[3, 2] = 1.0
            D[3, 3] = 1.0
            q0 = pi[0] - r[0]
            q1 = pi[1] - r[1]
            q2 = pi[2] - r[2]
            qn = math.sqrt(q0 * q0 + q1 * q1 + q2 * q2)
            if qn > 0:
                pcos = (q0 / qn) * pu0 + (q1 / qn) * pu1 + (q2 / qn) * pu2
            else:
                pcos = 0.0
            dd = 1.0 - abs(pcos) ** 100.0 if pcos > 0.1 else 1.0
            for j in range(4):
                v[j] = -(D[j, 0] * ee[0] + D[j, 1] * ee[1] + D[j, 2] * ee[2] + D[j, 3] * ee[3])
            for j in range(4):
                for k in range(4):
                    D2[j, k] = D[j, 0] * D[k, 0] + D[j, 1] * D[k, 1] + D[j, 2] * D[k, 2] \
                        + D[j, 3] * D[k, 3]
                dg[j] = D2[j, j]
            k2 = 0
            while True:
                for j in range(4):
                    for k in range(4):
                        M[j, k] = D2[j, k]
                    M[j, j] = dg[j] * (1.0 + alpha)
                _inv4(M, inv)
                for j in range(4):
                    vt[j] = dd * (inv[j, 0] * v[0] + inv[j, 1] * v[1] + inv[j, 2] * v[2]
                                  + inv[j, 3] * v[3]) / 16.0
                r[0] += vt[0]
                r[1] += vt[1]
                r[2] += vt[2]
                d1 += vt[3]
                ssqo = ssq
                ssq = _resid(r, d1, pi, vsi, vs4[i], a, a2, ee)
                alpha *= 4.0
                k2 += 1
                if not (ssq >= ssqo) or k2 >= 1000:
                    break
            alpha /= 8.0
            fakt = 0.5
            k2 = 0
            while True:
                fakt *= 2.0
                r[0] += vt[0] * fakt
                r[1] += vt[1] * fakt
                r[2] += vt[2] * fakt
                d1 += vt[3] * fakt
                ssqo = ssq
                ssq = _resid(r, d1, pi, vsi, vs4[i], a, a2, ee)
                k2 += 1
                if not (ssq <= ssqo) or k2 >= 1000:
                    break
            r[0] -= vt[0] * fakt
            r[1] -= vt[1] * fakt
            r[2] -= vt[2] * fakt
            d1 -= vt[3] * fakt
            ssq = _resid(r, d1, pi, vsi, vs4[i], a, a2, ee)
            ssqo = ssq
        out[i, 0] = r[0]
        out[i, 1] = r[1]
        out[i, 2] = r[2]


@numba.njit(**_JIT)
def _clip1(x):
    if x < -1.0:
        return -1.0
    if x > 1.0:
        return 1.0
    return x


@numba.njit(**_JIT)
def surface_path(r1, r2, a, vs, vs4, far, factor, seg, L, first, last, npts):
    """``wrap_ellipsoid._surface_path`` row by row (OpenSim's ``CalcDistanceOnEllipsoid``):
    the chord sum (scaled) L, the first and last interior points and the number of points."""
    for i in range(r1.shape[0]):
        dx = r1[i, 0] - r2[i, 0]
        dy = r1[i, 1] - r2[i, 1]
        dz = r1[i, 2] - r2[i, 2]
        ln = math.sqrt(dx * dx + dy * dy + dz * dz) / factor
        if ln < seg:
            L[i] = ln * factor
            npts[i] = 2
            for j in range(3):
                first[i, j] = r1[i, j]
                last[i, j] = r2[i, j]
            continue
        q = ln / seg
        nseg = 499 if q >= 499.0 else max(int(q), 1)
        im = 0
        big = abs(vs[i, 0])
        for j in range(1, 3):
            if abs(vs[i, j]) > big:
                big = abs(vs[i, j])
                im = j
        mu = (-vs4[i]) / vs[i, im]
        a0 = np.zeros(3)
        a0[im] = mu
        u1 = np.empty(3)
        u2 = np.empty(3)
        for j in range(3):
            u1[j] = r1[i, j] - a0[j]
            u2[j] = r2[i, j] - a0[j]
        n1 = math.sqrt(u1[0] * u1[0] + u1[1] * u1[1] + u1[2] * u1[2])
        n2 = math.sqrt(u2[0] * u2[0] + u2[1] * u2[1] + u2[2] * u2[2])
        for j in range(3):
            u1[j] = u1[j] / n1 if n1 > 0 else 0.0
            u2[j] = u2[j] / n2 if n2 > 0 else 0.0
        c = u1[0] * u2[0] + u1[1] * u2[1] + u1[2] * u2[2]
        phi0 = math.acos(_clip1(c))
        dphi = (-(2 * np.pi - phi0) if far[i] else phi0) / nseg
        z0 = u1[1] * u2[2] - u1[2] * u2[1]
        z1 = u1[2] * u2[0] - u1[0] * u2[2]
        z2 = u1[0] * u2[1] - u1[1] * u2[0]
        nz = math.sqrt(z0 * z0 + z1 * z1 + z2 * z2)
        if nz > 0:
            z0 = z0 / nz
            z1 = z1 / nz
            z2 = z2 / nz
        else:
            z0 = 0.0
            z1 = 0.0
            z2 = 0.0
        y0 = z1 * u1[2] - z2 * u1[1]
        y1 = z2 * u1[0] - z0 * u1[2]
        y2 = z0 * u1[1] - z1 * u1[0]
        f20 = a0[0] / a[0]
        f21 = a0[1] / a[1]
        f22 = a0[2] / a[2]
        qc = f20 * f20 + f21 * f21 + f22 * f22 - 1.0
        px = r1[i, 0]
        py = r1[i, 1]
        pz = r1[i, 2]
        tot = 0.0
        for k in range(1, nseg):
            phi = k * dphi
            cp = math.cos(phi)
            sp = math.sin(phi)
            d0 = cp * u1[0] + sp * y0
            d1 = cp * u1[1] + sp * y1
            d2 = cp * u1[2] + sp * y2
            g0 = d0 / a[0]
            g1 = d1 / a[1]
            g2 = d2 / a[2]
            qa = g0 * g0 + g1 * g1 + g2 * g2
            qb = 2 * (g0 * f20 + g1 * f21 + g2 * f22)
            disc = qb * qb - 4 * qa * qc
            m3 = (-qb + math.sqrt(0.0 if disc < 0.0 else disc)) / (2 * qa)
            sx = a0[0] + m3 * d0
            sy = a0[1] + m3 * d1
            sz = a0[2] + m3 * d2
            ex = sx - px
            ey = sy - py
            ez = sz - pz
            tot += math.sqrt(ex * ex + ey * ey + ez * ez)
            if k == 1:
                first[i, 0] = sx
                first[i, 1] = sy
                first[i, 2] = sz
            px = sx
            py = sy
            pz = sz
        if nseg > 1:
            last[i, 0] = px
            last[i, 1] = py
            last[i, 2] = pz
        else:
            for j in range(3):
                first[i, j] = r1[i, j]
                last[i, j] = r2[i, j]
        ex = r2[i, 0] - px
        ey = r2[i, 1] - py
        ez = r2[i, 2] - pz
        L[i] = tot + math.sqrt(ex * ex + ey * ey + ez * ez)
        npts[i] = nseg + 1
