"""numba kernels of :mod:`arthron.geometry.wrap_kernels` (imported lazily from there); the
ellipsoid's are in :mod:`arthron.geometry._wrap_numba_ellipsoid` and importable from here.

Every kernel is the row-by-row form of a NumPy reference, with the same operations in the same
order (no fastmath, so no reassociation or fused multiply-adds):

* :func:`fan_blades` — ``wrap_ellipsoid``'s fan: for each frame the 298 chord points, their
  closest ellipsoid points (``_closest_ellipsoid``, Eberly's Newton iteration) and the sum of
  the unit vectors from chord to surface;
* :func:`tangent_lm` — ``_tangent_lm`` (OpenSim's damped tangent-point search);
* :func:`wrap_cylinder` — ``wrapping.wrap_cylinder`` whole, with ``_adjust_spiral`` (the
  iterative axial sliding of the tangent points, :func:`_adjust_row`);
* :func:`surface_path` — ``_surface_path`` (the chord sum over the ellipsoid);
* :func:`torus_line_point` — ``wrapping._torus_line_point`` (OpenSim's lmdif, Lmdif.cpp, on its
  torus residual).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ._wrap_numba_ellipsoid import _JIT, _clip1, fan_blades, surface_path, tangent_lm  # noqa: F401  (the kernels' namespace)


@numba.njit(**_JIT)
def _adjust_z(px, py, pz, rx, ry, rz, wx, wy, wz, thresh):
    """``wrapping._adjust_one`` for one point: (new z of r, moved)."""
    a0 = rx - px
    a1 = ry - py
    a2 = rz - pz
    b0 = wx - rx
    b1 = wy - ry
    b2 = wz - rz
    a = math.acos(_clip1(a2 / math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)))
    o = math.acos(_clip1(b2 / math.sqrt(b0 * b0 + b1 * b1 + b2 * b2)))
    d0 = wx - px
    d1 = wy - py
    d2 = wz - pz
    nd = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    d0 = d0 / nd
    d1 = d1 / nd
    d2 = d2 / nd
    den = d0 * d0 + d1 * d1
    along = (rx - px) * d0 + (ry - py) * d1
    z = pz + d2 * along / den
    nz = rz + 1.5 * (z - rz)
    if abs(a - o) > thresh and math.isfinite(nz):
        return nz, True
    return rz, False


@numba.njit(**_JIT)
def _adjust_row(p1, p2, r1, r2, i, R, lw, max_iter, thresh):
    """``wrapping._adjust_spiral`` for row i of r1, r2 (in place)."""
    sense = -1.0 if lw else 1.0
    for _ in range(max_iter):
        x1, y1, z1 = r1[i, 0], r1[i, 1], r1[i, 2]
        x2, y2, z2 = r2[i, 0], r2[i, 1], r2[i, 2]
        cz = x1 * y2 - y1 * x2
        cd = x1 * x2 + y1 * y2
        th = math.atan2(cz, cd)
        if lw:
            th = 2 * np.pi - th
        dz = z2 - z1
        L = math.sqrt((R * th) ** 2 + dz ** 2)
        q = L / 0.002
        if not (q >= 2.0) or q > 9e18:
            break
        t = 1.0 / int(q)
        ang = sense * t * th
        c = math.cos(ang)
        s = math.sin(ang)
        n1z, m1 = _adjust_z(p1[i, 0], p1[i, 1], p1[i, 2], x1, y1, z1,
                            c * x1 - s * y1, s * x1 + c * y1, z1 + t * dz, thresh)
        t2 = 1.0 - t
        ang = sense * t2 * th
        c = math.cos(ang)
        s = math.sin(ang)
        n2z, m2 = _adjust_z(p2[i, 0], p2[i, 1], p2[i, 2], x2, y2, z2,
                            c * x1 - s * y1, s * x1 + c * y1, n1z + t2 * dz, thresh)
        same = n1z == z1 and n2z == z2
        r1[i, 2] = n1z
        r2[i, 2] = n2z
        if not (m1 or m2) or same:
            break


@numba.njit(**_JIT)
def _dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@numba.njit(**_JIT)
def _cross3(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@numba.njit(**_JIT)
def _sub3(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@numba.njit(**_JIT)
def _add3(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@numba.njit(**_JIT)
def _mul3(k, a):
    return (k * a[0], k * a[1], k * a[2])


@numba.njit(**_JIT)
def _norm3(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@numba.njit(**_JIT)
def _unit3(a):
    n = _norm3(a)
    if n > 0:
        return (a[0] / n, a[1] / n, a[2] / n), n
    return (0.0, 0.0, 0.0), n


@numba.njit(**_JIT)
def _sgn(x):
    return 1 if x >= 0.0 else -1


@numba.njit(**_JIT)
def _slide(r, pn2, dpl, other_z, own_z):
    a = (r[0] - 10.0 * 0.0, r[1] - 10.0 * 0.0, r[2] - 10.0 * 1.0)
    b = (r[0] + 10.0 * 0.0, r[1] + 10.0 * 0.0, r[2] + 10.0 * 1.0)
    vec = _sub3(b, a)
    dp = _dot3(vec, pn2)
    ok = abs(dp) >= 1e-5
    t = (-dpl - _dot3(pn2, a)) / dp
    ok = ok and (t >= -1e-5) and (t <= 1 + 1e-5)
    rp = _add3(a, _mul3(t if ok else 0.0, vec))
    if ok and abs(rp[2] - other_z) < abs(own_z - other_z):
        return rp
    return r


@numba.njit(**_JIT)
def wrap_cylinder(p1, p2, R, length, axis, sign, adjust, max_iter, thresh,
                  status, r1o, r2o, Lo):
    """``wrapping.wrap_cylinder`` row by row (OpenSim 4.6's ``WrapCylinder::wrapLine``, the
    tangent correction on the rows with ``adjust``); outputs status, r1o, r2o, Lo."""
    r2sq = R * R
    dn = (0.0, 0.0, 1.0)
    constrained = axis >= 0
    cs = (0.0, 0.0, -0.5 * length)
    ce = (0.0, 0.0, 0.5 * length)
    v2, m2 = _unit3(_sub3(ce, cs))
    for i in range(p1.shape[0]):
        P1 = (p1[i, 0], p1[i, 1], p1[i, 2])
        P2 = (p2[i, 0], p2[i, 1], p2[i, 2])
        rho1 = math.hypot(P1[0], P1[1])
        rho2 = math.hypot(P2[0], P2[1])
        inside = rho1 ** 2 < r2sq or rho2 ** 2 < r2sq
        # closest points of the segment's line and the axis
        v1, m1 = _unit3(_sub3(P2, P1))
        cr = _cross3(v1, v2)
        den = _dot3(cr, cr)
        w = _sub3(cs, P1)
        t = _dot3(w, _cross3(v1, cr)) / den
        s = _dot3(w, _cross3(v2, cr)) / den
        near12 = _add3(P1, _mul3(s, v1))
        t12 = s / m1
        near00 = _add3(cs, _mul3(t, v2))
        dnn = _sub3(near12, near00)
        pierce = _dot3(dnn, dnn) < r2sq and t12 > 0 and t12 < 1
        st = 2
        if not constrained:
            st = 3 if pierce else 0
        p11 = (0.0, 0.0, P1[2])
        p22 = (0.0, 0.0, P2[2])
        # tangent points of each end point to the cross-section
        vv, _ = _unit3(_sub3(P1, p11))
        sin_t = R / max(rho1, 1e-300)
        pp = _add3(p11, _mul3(R * sin_t, vv))
        h = math.sqrt(max(r2sq - (R * sin_t) ** 2, 0.0))
        uu = _cross3(dn, vv)
        r1a = _add3(pp, _mul3(h, uu))
        r1b = _sub3(pp, _mul3(h, uu))
        vv, _ = _unit3(_sub3(P2, p22))
        sin_t = R / max(rho2, 1e-300)
        pp = _add3(p22, _mul3(R * sin_t, vv))
        h = math.sqrt(max(r2sq - (R * sin_t) ** 2, 0.0))
        uu = _cross3(dn, vv)
        r2a = _add3(pp, _mul3(h, uu))
        r2b = _sub3(pp, _mul3(h, uu))
        far = False
        long_wrap = False
        if constrained:
            ws = sign
            s1 = _sgn(P1[axis])
            s2 = _sgn(P2[axis])
            either = s1 == ws or s2 == ws
            opt = s1 != s2 and _sgn(near12[axis]) != ws
            st_c = 3 if pierce else (2 if opt else 0)
            st = st_c if either else 2
            r1am = _sub3(r1a, p11)
            r1bm = _sub3(r1b, p11)
            r2am = _sub3(r2a, p22)
            r2bm = _sub3(r2b, p22)
            cosa = _dot3(r1am, r2bm) / (_norm3(r1am) * _norm3(r2bm))
            cosb = _dot3(r1bm, r2am) / (_norm3(r1bm) * _norm3(r2am))
            alpha = math.acos(_clip1(cosa))
            beta = math.acos(_clip1(cosb))
            a_on = _sgn(r1a[axis]) == ws
            b_on = _sgn(r1b[axis]) == ws
            r2a_on = _sgn(r2a[axis]) == ws
            r2b_on = _sgn(r2b[axis]) == ws
            ab = alpha > beta
            if a_on and b_on:
                choose_ba = r2a_on
            elif a_on:
                choose_ba = False
            elif b_on:
                choose_ba = True
            elif r2a_on:
                choose_ba = True
            elif r2b_on:
                choose_ba = False
            else:
                choose_ba = not ab
            far = (not ab) if choose_ba else ab
            if not a_on and not b_on and not r2a_on and not r2b_on:
                far = True
            r1 = r1b if choose_ba else r1a
            r2 = r2a if choose_ba else r2b
            sum_musc = _add3(_sub3(r1, P1), _sub3(r2, P2))
            sum_r = _add3(_sub3(r1, p11), _sub3(r2, p22))
            long_wrap = _dot3(sum_r, sum_musc) < 0.0
        else:
            n1a, _ = _unit3(_sub3(r1a, p11))
            n1b, _ = _unit3(_sub3(r1b, p11))
            n2a, _ = _unit3(_sub3(r2a, p22))
            n2b, _ = _unit3(_sub3(r2b, p22))
            d1 = _dot3(n1a, n2a)
            d2 = _dot3(n1a, n2b)
            d3 = _dot3(n1b, n2a)
            d4 = _dot3(n1b, n2b)
            if d1 > d2 and d1 > d3 and d1 > d4:
                r1, r2 = r1a, r2a
            elif d2 > d3 and d2 > d4:
                r1, r2 = r1a, r2b
            elif d3 > d4:
                r1, r2 = r1b, r2a
            else:
                r1, r2 = r1b, r2b
        # apex line of the cylinder between the two points
        tt = rho1 / (rho1 + rho2)
        mpt = _add3(P1, _mul3(tt, _sub3(P2, P1)))
        axispt = (0.0, 0.0, mpt[2])
        l1, _ = _unit3(_sub3(P1, axispt))
        l2, _ = _unit3(_sub3(P2, axispt))
        pn, _ = _unit3(_cross3(l1, l2))
        vert1, _ = _unit3(_cross3(dn, pn))
        vert2, _ = _unit3(_cross3(pn, dn))
        apex1 = _add3(axispt, _mul3(R, vert1))
        apex2 = _add3(axispt, _mul3(R, vert2))
        e1 = _sub3(mpt, apex1)
        e2 = _sub3(mpt, apex2)
        dd1 = _dot3(e1, e1)
        dd2 = _dot3(e2, e2)
        first = (not (dd1 < dd2)) if far else (dd1 < dd2)
        apex = apex1 if first else apex2
        uu, _ = _unit3(_sub3(P1, apex))
        vv, _ = _unit3(_sub3(P2, apex))
        pn2, _ = _unit3(_cross3(uu, vv))
        dpl = -_dot3(P1, pn2)
        r1 = _slide(r1, pn2, dpl, p22[2], p11[2])
        r2 = _slide(r2, pn2, dpl, p11[2], p22[2])
        halfL = 0.5 * length
        out1 = r1[2] < -halfL or r1[2] > halfL
        out2 = r2[2] < -halfL or r2[2] > halfL
        if inside:
            st = 1
        if st >= 2 and out1 and out2:
            st = 0
        status[i] = st
        for j in range(3):
            r1o[i, j] = r1[j]
            r2o[i, j] = r2[j]
        if st >= 2 and adjust[i]:
            _adjust_row(p1, p2, r1o, r2o, i, R, long_wrap, max_iter, thresh)
        if st >= 2:
            x1, y1 = r1o[i, 0], r1o[i, 1]
            x2, y2 = r2o[i, 0], r2o[i, 1]
            th = math.atan2(x1 * y2 - y1 * x2, x1 * x2 + y1 * y2)
            if long_wrap:
                th = 2 * np.pi - th
            Lo[i] = math.sqrt((R * th) ** 2 + (r2o[i, 2] - r1o[i, 2]) ** 2)
        else:
            Lo[i] = 0.0
            for j in range(3):
                r1o[i, j] = 0.0
                r2o[i, j] = 0.0


# Lmdif.cpp's constants and Jacobian step (see wrapping._lmdif1)
_LM_STEP = 1e-5
_MACHEP = 1.2e-16
_DWARF = 1.0e-38


@numba.njit(**_JIT)
def _torus_fun(u, c2, c3, c4, c5, r):
    return c2 + 2.0 * u - 2.0 * r * (2.0 * c4 * u + 2.0 * c3) / math.sqrt(
        u * u * c4 + 2.0 * c3 * u + c5)


@numba.njit(**_JIT)
def _dmax(a, b):
    return a if a >= b else b


@numba.njit(**_JIT)
def _dmin(a, b):
    return a if a <= b else b


@numba.njit(**_JIT)
def _qrsolv1(r, qtb, sd):
    """``wrapping._qrsolv1`` for one problem: (x, sdiag)."""
    if sd != 0.0:
        if abs(r) < abs(sd):
            cotan = r / sd
            sn = 0.5 / math.sqrt(0.25 + 0.25 * cotan * cotan)
            cs = sn * cotan
        else:
            tan = sd / r
            cs = 0.5 / math.sqrt(0.25 + 0.25 * tan * tan)
            sn = cs * tan
        s = cs * r + sn * sd
        w = cs * qtb + sn * 0.0
    else:
        s = r
        w = qtb
    return (w / s if s != 0.0 else 0.0), s


@numba.njit(**_JIT)
def _lmpar1(r, qtb, d, delta, par):
    """``wrapping._lmpar1`` for one problem: (par, x)."""
    x = qtb / r if r != 0.0 else 0.0
    wa2 = d * x
    dxnorm = abs(wa2)
    fp = dxnorm - delta
    if fp <= 0.1 * delta:
        return 0.0, x
    parl = 0.0
    if r != 0.0:
        t = abs((d * (wa2 / dxnorm)) / r)
        parl = ((fp / delta) / t) / t
    gnorm = abs((r * qtb) / d)
    paru = gnorm / delta
    if paru == 0.0:
        paru = _DWARF / _dmin(delta, 0.1)
    par = _dmin(_dmax(par, parl), paru)
    if par == 0.0:
        par = gnorm / dxnorm
    for it in range(1, 11):
        if par == 0.0:
            par = _dmax(_DWARF, 0.001 * paru)
        x, sdiag = _qrsolv1(r, qtb, math.sqrt(par) * d)
        wa2 = d * x
        dxnorm = abs(wa2)
        temp = fp
        fp = dxnorm - delta
        if (abs(fp) <= 0.1 * delta) or ((parl == 0.0) and (fp <= temp) and (temp < 0.0)) \
                or (it == 10):
            break
        tn = abs((d * (wa2 / dxnorm)) / sdiag)
        parc = ((fp / delta) / tn) / tn
        if fp > 0.0:
            parl = _dmax(parl, par)
        if fp < 0.0:
            paru = _dmin(paru, par)
        par = _dmax(parl, par + parc)
    return par, x


@numba.njit(**_JIT)
def torus_line_point(p, q, r, out):
    """``wrapping._torus_line_point`` row by row: OpenSim 4.6's lmdif (Lmdif.cpp: one unknown,
    tolerances 1e-4, step bound 0.2, at most 500 evaluations, Jacobian by forward differences
    of step 1e-5) on OpenSim's residual along the line from p towards q; the point reached in
    out (N, 3)."""
    ftol = 1e-4
    xtol = 1e-4
    factor = 0.2
    maxfev = 500
    for i in range(p.shape[0]):
        n, _ = _unit3((q[i, 0] - p[i, 0], q[i, 1] - p[i, 1], q[i, 2] - p[i, 2]))
        P = (p[i, 0], p[i, 1], p[i, 2])
        c2 = 2.0 * (P[0] * n[0] + P[1] * n[1] + P[2] * n[2])
        c3 = P[0] * n[0] + P[1] * n[1]
        c4 = n[0] * n[0] + n[1] * n[1]
        c5 = P[0] * P[0] + P[1] * P[1]
        x = 0.0
        f = _torus_fun(x, c2, c3, c4, c5, r)
        fnorm = abs(f)
        nfev = 1
        it1 = True
        needj = True
        rr = 0.0
        diag = 1.0
        delta = 0.0
        xnorm = 0.0
        par = 0.0
        for _ in range(4 * maxfev):
            if needj:
                J = (_torus_fun(x + _LM_STEP, c2, c3, c4, c5, r) - f) / _LM_STEP
                acn = abs(J)
                rr = -J
                if it1:
                    diag = 1.0 if acn == 0.0 else acn
                    xnorm = abs(diag * x)
                    delta = factor * xnorm
                    if abs(delta) <= 1e-4:
                        delta = factor
                if fnorm == 0.0 or acn == 0.0:
                    break
                diag = _dmax(diag, acn)
                needj = False
            par, xs = _lmpar1(rr, -f, diag, delta, par)
            step = -xs
            xt = x + step
            pnorm = abs(diag * step)
            if it1:
                delta = _dmin(delta, pnorm)
            ft = _torus_fun(xt, c2, c3, c4, c5, r)
            nfev += 1
            fn1 = abs(ft)
            fn = fnorm
            actred = -1.0
            if 0.1 * fn1 < fn:
                qq = fn1 / fn
                actred = 1.0 - qq * qq
            t1 = abs(rr * step) / fn
            t2 = (math.sqrt(par) * pnorm) / fn
            prered = t1 * t1 + (t2 * t2) / 0.5
            dirder = -(t1 * t1 + t2 * t2)
            ratio = actred / prered if prered != 0.0 else 0.0
            if ratio <= 0.25:
                tmp = 0.5 if actred >= 0.0 else 0.5 * dirder / (dirder + 0.5 * actred)
                if 0.1 * fn1 >= fn or tmp < 0.1:
                    tmp = 0.1
                delta = tmp * _dmin(delta, pnorm / 0.1)
                par = par / tmp
            elif par == 0.0 or ratio >= 0.75:
                delta = pnorm / 0.5
                par = 0.5 * par
            ok = ratio >= 1e-4
            if ok:
                x = xt
                f = ft
                fnorm = fn1
                xnorm = abs(diag * xt)
                it1 = False
            needj = ok
            if ((abs(actred) <= ftol) and (prered <= ftol) and (0.5 * ratio <= 1.0)) \
                    or (delta <= xtol * xnorm) or (nfev >= maxfev) \
                    or ((abs(actred) <= _MACHEP) and (prered <= _MACHEP) and (0.5 * ratio <= 1.0)) \
                    or (delta <= _MACHEP * xnorm):
                break
        out[i, 0] = P[0] + x * n[0]
        out[i, 1] = P[1] + x * n[1]
        out[i, 2] = P[2] + x * n[2]
