"""Wrapping of a straight path segment over wrap surfaces, vectorized over frames.

Every function takes the two end points of a path segment expressed in the wrap object's own
frame (arrays (T, 3), metres) and returns ``(status, r1, r2, length)``:

* ``status`` (T,) int: :data:`NO_WRAP`, :data:`INSIDE` (an end point lies inside the surface),
  :data:`WRAPPED` (a wrap was found but is optional: OpenSim then keeps the segment of the
  path whose wrap lengthens the path least) or :data:`MANDATORY` (the straight segment
  penetrates the object, so it must wrap);
* ``r1``, ``r2`` (T, 3): the tangent points where the path leaves the straight lines, in the
  wrap frame;
* ``length`` (T,): the length of the path on the surface between r1 and r2.

The semantics are those of OpenSim 4.6 (``WrapSphere::wrapLine``, ``WrapCylinder::wrapLine``,
``WrapEllipsoid::wrapLine``, ``WrapTorus::wrapLine``), including their choices where the
geometry is ambiguous and their quirks: the quadrant (``"+x"``, ``"-y"`` ...) restricts
wrapping to one side of the object; the cylinder's path is a helix from r1 to r2 whose tangent
points are placed by OpenSim's apex construction and, on paths with several wrap objects,
corrected by its iterative axial sliding; a far-side sphere wrap has a negative length; the
torus is wrapped as a cylinder laid on its ring at a point found by OpenSim's own variant of
MINPACK's Levenberg-Marquardt (Lmdif.cpp: Jacobian by forward differences of constant step
1e-5), replayed operation by operation because it stops on loose tolerances. These functions are reimplementations of the geometry, checked against
OpenSim in ``tests/test_wrapping.py``.

The ellipsoid (:mod:`arthron.geometry.wrap_ellipsoid`) replays OpenSim's own approximations step by step (wrap plane from the
"fan"/axis-plane estimates, its damped tangent-point search, the surface length as a sum of
~1 mm chords), because OpenSim's result is not the exact geodesic.

The obstacle-set method (:mod:`arthron.geometry.wrap_obstacles`; Garner & Pandy 2000: :func:`wrap_sphere_obstacle`,
:func:`wrap_cylinder_obstacle`, :func:`wrap_double_cylinder_obstacle`) follows the published
geometry: OpenSim 4.6 cannot evaluate its WrapSphereObst / WrapCylinderObst /
WrapDoubleCylinderObst (not registered), so these are checked against closed-form cases.
"""
from __future__ import annotations

import numpy as np

from .spatial import cross as _cross
from .wrap_common import (INSIDE, MANDATORY, NO_WRAP, WRAPPED, _divide_positive,  # noqa: F401
                          _dot, _norm, _rotate, _sgn, _unit)
from .wrap_ellipsoid import wrap_ellipsoid
from .wrap_kernels import kernels, use_kernel
from .wrap_obstacles import (DC_BOTH, DC_INSIDE, DC_NONE, DC_U, DC_V, _double_cylinder_obstacle,  # noqa: F401
                             wrap_cylinder_obstacle, wrap_double_cylinder_obstacle,
                             wrap_sphere_obstacle)
from ..errors import UnsupportedFeature

# The wrap classes registered below (WRAP_SURFACES); kept as a name for callers.
SUPPORTED = ("WrapSphere", "WrapCylinder", "WrapEllipsoid", "WrapTorus", "WrapSphereObst",
             "WrapCylinderObst", "WrapDoubleCylinderObst")

__all__ = ["NO_WRAP", "INSIDE", "WRAPPED", "MANDATORY", "SUPPORTED", "wrap_sphere",
           "wrap_cylinder", "wrap_ellipsoid", "wrap_torus", "wrap_segment",
           "wrap_cylinder_obstacle", "wrap_sphere_obstacle", "wrap_double_cylinder_obstacle",
           "DC_INSIDE", "DC_NONE", "DC_U", "DC_V", "DC_BOTH", "WRAP_SURFACES",
           "register_wrap_surface"]


# ------------------------------------------------------------------------------------ sphere
def wrap_sphere(p1, p2, radius: float, axis: int = -1, sign: int = 0):
    """Wrap the segment p1-p2 over a sphere of ``radius`` centred at the origin, as OpenSim
    4.6's ``WrapSphere`` does.

    The segment wraps only if the straight line crosses the sphere. The path lies in the plane
    through the centre and both points; without a quadrant (``axis`` -1) it takes the pair of
    tangent points closest to each other (status WRAPPED: OpenSim never calls a sphere wrap
    mandatory then). With a quadrant (``axis`` 0-2, ``sign`` ±1) and one end point on the
    active side the wrap is MANDATORY when the closest point of the line to the centre lies
    within 1 m of p1 along the line (OpenSim measures that in metres, not as a fraction) and
    inside the sphere; WRAPPED when the points are on opposite sides and that closest point
    on the inactive side; no wrap otherwise. Unless both points are on the active side, the
    tangent points are those facing the centre from the two points, swapped for the other
    pair when the path would run towards the inactive side; a far-side wrap (the surface path
    goes round the back) then gets OpenSim's *negative* length ``-R (2π - angle)``.

    Returns (status, r1, r2, length); see the module docstring.
    """
    p1 = np.asarray(p1, float)
    p2 = np.asarray(p2, float)
    R = float(radius)
    d1 = _norm(p1)
    d2 = _norm(p2)
    inside = (d1 < R) | (d2 < R)
    # intersections of the line p2 + l (p1 - p2) with the sphere, both inside (0, 1)
    ri = p1 - p2
    a = _dot(ri, ri)
    b = 2.0 * _dot(p2, ri)
    c = _dot(p2, p2) - R * R
    disc = b * b - 4 * a * c
    sq = np.sqrt(np.maximum(disc, 0.0))
    l1 = (-b + sq) / (2 * a)
    l2 = (-b - sq) / (2 * a)
    hit = (disc >= 0) & (l1 > 0) & (l1 < 1) & (l2 > 0) & (l2 < 1) & (l1 >= l2)
    # plane through centre, p1, p2
    u12, _ = _unit(p1 - p2)
    n, _ = _unit(_cross(u12, _unit(p2)[0]))
    cands = []
    for p, d in ((p1, d1), (p2, d2)):
        y = _unit(-p)[0]
        ang = np.arcsin(np.clip(R / np.maximum(d, R), -1, 1))
        reach = (d * np.cos(ang))[:, None]
        cands.append((p + _rotate(y, n, -ang) * reach, p + _rotate(y, n, ang) * reach))
    (r1a, r1b), (r2a, r2b) = cands
    n1a, n1b, n2a, n2b = (_unit(x)[0] for x in (r1a, r1b, r2a, r2b))
    j1, j2, j3, j4 = _dot(n1a, n2a), _dot(n1a, n2b), _dot(n1b, n2a), _dot(n1b, n2b)
    # OpenSim's chain of strict comparisons (ties fall to the later candidate)
    pick = np.where((j1 > j2) & (j1 > j3) & (j1 > j4), 0,
                    np.where((j2 > j3) & (j2 > j4), 1, np.where(j3 > j4, 2, 3)))
    pk = pick[:, None]
    r1 = np.where(pk < 2, r1a, r1b)
    r2 = np.where((pk == 0) | (pk == 2), r2a, r2b)
    status = np.where(hit, WRAPPED, NO_WRAP)
    far = np.zeros(len(p1), bool)
    if axis >= 0:
        on1 = _sgn(p1[:, axis]) == sign
        on2 = _sgn(p2[:, axis]) == sign
        either = on1 | on2
        t = _dot(-p1, u12)
        mm = p1 + t[:, None] * u12
        tt = -t
        mand = (_dot(mm, mm) < R * R) & (tt > 0) & (tt < 1)
        opt = (_sgn(p1[:, axis]) != _sgn(p2[:, axis])) & (_sgn(mm[:, axis]) != sign)
        status = np.where(hit & either, np.where(mand, MANDATORY, np.where(opt, WRAPPED, NO_WRAP)),
                          status)
        redo = ~(on1 & on2)
        sm = _unit(-p1 - p2)[0]
        c1 = _dot(n1a, sm) > _dot(n1b, sm)
        c2 = _dot(n2a, sm) > _dot(n2b, sm)
        q1, o1 = np.where(c1[:, None], r1a, r1b), np.where(c1[:, None], r1b, r1a)
        q2, o2 = np.where(c2[:, None], r2a, r2b), np.where(c2[:, None], r2b, r2a)
        flip = _dot(_unit((q1 - p1) + (q2 - p2))[0], np.eye(3)[axis] * sign) < 0.0
        q1 = np.where(flip[:, None], o1, q1)
        q2 = np.where(flip[:, None], o2, q2)
        fs = _dot(q1 + q2, (q1 - p1) + (q2 - p2)) < 0.0
        r1 = np.where(redo[:, None], q1, r1)
        r2 = np.where(redo[:, None], q2, r2)
        far = redo & fs
    ang = np.arccos(np.clip(_dot(_unit(r1)[0], _unit(r2)[0]), -1, 1))
    L = R * np.where(far, -(2 * np.pi - ang), ang)
    status = np.where(inside, INSIDE, status)
    ok = status >= WRAPPED
    return (status, np.where(ok[:, None], r1, 0.0), np.where(ok[:, None], r2, 0.0),
            np.where(ok, L, 0.0))


# ---------------------------------------------------------------------------------- cylinder
# Vectors of many rows as (3, n) arrays (each component contiguous), with the kernel's order
# of operations: a·b = (a0 b0 + a1 b1) + a2 b2, |a| = sqrt(a·a), a/|a| (0 where |a| = 0).
_C1, _C2 = [1, 2, 0], [2, 0, 1]
_DN = np.array([0.0, 0.0, 1.0])[:, None]


def _vdot(a, b):
    p = a * b
    return p[0] + p[1] + p[2]


def _vnorm(a):
    return np.sqrt(_vdot(a, a))


def _vunit(a):
    n = _vnorm(a)
    return _divide_positive(a, n), n


def _vcross(a, b):
    return a[_C1] * b[_C2] - a[_C2] * b[_C1]


def _vsgn(x):
    return np.where(x >= 0.0, 1, -1)


def wrap_cylinder(p1, p2, radius: float, length: float, axis: int = -1, sign: int = 0,
                  adjust_tangents: bool = False):
    """Wrap the segment p1-p2 over a cylinder of ``radius`` and ``length`` along z, centred at
    the origin, as OpenSim's ``WrapCylinder`` does.

    The tangent points are the 2-D tangents from each point to the cross-section, slid along
    the axis into the plane through p1, p2 and the cylinder's "apex" line; the surface path is
    the helix between them, of length ``sqrt((R θ)² + Δz²)`` (θ: the signed angle from r1 to
    r2 about the axis, ``2π - θ`` for a long wrap, as in OpenSim 4.6). No wrap when both
    tangent points lie beyond the cylinder's ends. ``adjust_tangents`` (bool or (T,)) replays
    OpenSim 4.6's iterative axial correction of the tangent points, which it applies on paths
    with two or more wrap objects (:func:`_adjust_spiral`).

    NumPy route: the rows' vectors as (3, T) arrays, every operation that of the compiled
    kernel in the same order (the results are the kernel's, bit for bit where the processor's
    libm agrees).

    Returns (status, r1, r2, length); see the module docstring.
    """
    p1 = np.asarray(p1, float)
    p2 = np.asarray(p2, float)
    T = p1.shape[0]
    R = float(radius)
    if use_kernel():
        status, r1, r2, L = np.empty(T, int), np.empty((T, 3)), np.empty((T, 3)), np.empty(T)
        adj = np.ascontiguousarray(np.broadcast_to(np.asarray(adjust_tangents, bool), (T,)))
        kernels().wrap_cylinder(np.ascontiguousarray(p1), np.ascontiguousarray(p2), R,
                                float(length), int(axis), int(sign), adj, 100,
                                float(np.deg2rad(0.1)), status, r1, r2, L)
        return status, r1, r2, L
    r2sq = R * R
    constrained = axis >= 0
    P1, P2 = np.ascontiguousarray(p1.T), np.ascontiguousarray(p2.T)      # (3, T)
    cs = np.array([0.0, 0.0, -0.5 * length])[:, None]
    ce = np.array([0.0, 0.0, 0.5 * length])[:, None]
    v2, m2 = _vunit(ce - cs)
    rho1 = np.hypot(P1[0], P1[1])
    rho2 = np.hypot(P2[0], P2[1])
    inside = (rho1 ** 2 < r2sq) | (rho2 ** 2 < r2sq)
    # closest points of the segment's line and the axis
    with np.errstate(invalid="ignore", divide="ignore"):
        v1, m1 = _vunit(P2 - P1)
        cr = _vcross(v1, v2)
        den = _vdot(cr, cr)
        w = cs - P1
        t = _vdot(w, _vcross(v1, cr)) / den
        s = _vdot(w, _vcross(v2, cr)) / den
        near12 = P1 + s * v1
        t12 = s / m1
        dnn = near12 - (cs + t * v2)
        pierce = (_vdot(dnn, dnn) < r2sq) & (t12 > 0) & (t12 < 1)
    if constrained:
        ws = sign
        s1, s2 = _vsgn(P1[axis]), _vsgn(P2[axis])
        either = (s1 == ws) | (s2 == ws)
        opt = (s1 != s2) & (_vsgn(near12[axis]) != ws)
        st_c = np.where(pierce, MANDATORY, np.where(opt, WRAPPED, NO_WRAP))
        status = np.where(either, st_c, WRAPPED)
    else:
        status = np.where(pierce, MANDATORY, NO_WRAP)
    status = np.where(inside, INSIDE, status)
    # the rest only for the rows that may wrap (the others' results are zeros); each row's
    # arithmetic does not depend on the others
    work = status >= WRAPPED
    adjust = np.broadcast_to(np.asarray(adjust_tangents, bool), (T,))
    T0 = T
    if not work.all():
        rows = np.flatnonzero(work)
        out_st = status
        r1o, r2o, Lo = np.zeros((T, 3)), np.zeros((T, 3)), np.zeros(T)
        if len(rows) == 0:
            return out_st, r1o, r2o, Lo
        P1, P2, p1, p2 = P1[:, rows], P2[:, rows], p1[rows], p2[rows]
        rho1, rho2, status, adjust = rho1[rows], rho2[rows], status[rows], adjust[rows]
        T = len(rows)
    zero = np.zeros(T)
    p11 = np.stack([zero, zero, P1[2]])
    p22 = np.stack([zero, zero, P2[2]])

    def tangents(p, p0, rho):
        vv, _ = _vunit(p - p0)
        sin_t = R / np.maximum(rho, 1e-300)
        pp = p0 + (R * sin_t) * vv
        h = np.sqrt(np.maximum(r2sq - (R * sin_t) ** 2, 0.0))
        uu = _vcross(_DN, vv)
        return pp + h * uu, pp - h * uu

    r1a, r1b = tangents(P1, p11, rho1)
    r2a, r2b = tangents(P2, p22, rho2)
    far = np.zeros(T, bool)
    long_wrap = np.zeros(T, bool)
    if constrained:
        r1am, r1bm = r1a - p11, r1b - p11
        r2am, r2bm = r2a - p22, r2b - p22
        with np.errstate(invalid="ignore", divide="ignore"):
            cosa = _vdot(r1am, r2bm) / (_vnorm(r1am) * _vnorm(r2bm))
            cosb = _vdot(r1bm, r2am) / (_vnorm(r1bm) * _vnorm(r2am))
        alpha = np.arccos(np.clip(cosa, -1, 1))
        beta = np.arccos(np.clip(cosb, -1, 1))
        a_on = _vsgn(r1a[axis]) == ws
        b_on = _vsgn(r1b[axis]) == ws
        r2a_on = _vsgn(r2a[axis]) == ws
        r2b_on = _vsgn(r2b[axis]) == ws
        ab = alpha > beta
        # choice "BA": r1 = r1b, r2 = r2a, far = not (alpha > beta)
        # choice "AB": r1 = r1a, r2 = r2b, far = (alpha > beta)
        choose_ba = np.where(a_on & b_on, r2a_on,
                             np.where(a_on & ~b_on, False,
                                      np.where(~a_on & b_on, True,
                                               np.where(r2a_on, True,
                                                        np.where(r2b_on, False, ~ab)))))
        none_on = ~a_on & ~b_on & ~r2a_on & ~r2b_on
        far = np.where(none_on, True, np.where(choose_ba, ~ab, ab))
        r1 = np.where(choose_ba, r1b, r1a)
        r2 = np.where(choose_ba, r2a, r2b)
        sum_musc = (r1 - P1) + (r2 - P2)
        sum_r = (r1 - p11) + (r2 - p22)
        long_wrap = _vdot(sum_r, sum_musc) < 0.0
    else:
        n1a, n1b = _vunit(r1a - p11)[0], _vunit(r1b - p11)[0]
        n2a, n2b = _vunit(r2a - p22)[0], _vunit(r2b - p22)[0]
        d1, d2, d3, d4 = _vdot(n1a, n2a), _vdot(n1a, n2b), _vdot(n1b, n2a), _vdot(n1b, n2b)
        # OpenSim's chain of strict comparisons (ties fall to the later candidate)
        pick = np.where((d1 > d2) & (d1 > d3) & (d1 > d4), 0,
                        np.where((d2 > d3) & (d2 > d4), 1, np.where(d3 > d4, 2, 3)))
        use_a1, use_a2 = pick <= 1, (pick == 0) | (pick == 2)
        r1 = np.where(use_a1, r1a, r1b)
        r2 = np.where(use_a2, r2a, r2b)
    # apex line of the cylinder between the two points
    with np.errstate(invalid="ignore", divide="ignore"):
        tt = rho1 / (rho1 + rho2)
        mpt = P1 + tt * (P2 - P1)
    axispt = np.stack([zero, zero, mpt[2]])
    l1 = _vunit(P1 - axispt)[0]
    l2 = _vunit(P2 - axispt)[0]
    pn = _vunit(_vcross(l1, l2))[0]
    vert1 = _vunit(_vcross(_DN, pn))[0]
    vert2 = _vunit(_vcross(pn, _DN))[0]
    apex1 = axispt + R * vert1
    apex2 = axispt + R * vert2
    e1, e2 = mpt - apex1, mpt - apex2
    dd1 = _vdot(e1, e1)
    dd2 = _vdot(e2, e2)
    first = np.where(far, ~(dd1 < dd2), dd1 < dd2)
    apex = np.where(first, apex1, apex2)
    uu = _vunit(P1 - apex)[0]
    vv = _vunit(P2 - apex)[0]
    pn2 = _vunit(_vcross(uu, vv))[0]
    dpl = -_vdot(P1, pn2)

    def slide(r, other_z, own_z):
        a = r - 10.0 * _DN
        b = r + 10.0 * _DN
        vec = b - a
        dp = _vdot(vec, pn2)
        ok = np.abs(dp) >= 1e-5
        with np.errstate(invalid="ignore", divide="ignore"):
            t = (-dpl - _vdot(pn2, a)) / dp
        ok &= (t >= -1e-5) & (t <= 1 + 1e-5)
        rp = a + np.where(ok, t, 0.0) * vec
        closer = np.abs(rp[2] - other_z) < np.abs(own_z - other_z)
        return np.where(ok & closer, rp, r)

    r1 = slide(r1, P2[2], P1[2]).T
    r2 = slide(r2, P1[2], P2[2]).T
    halfL = 0.5 * length
    out1 = (r1[:, 2] < -halfL) | (r1[:, 2] > halfL)
    out2 = (r2[:, 2] < -halfL) | (r2[:, 2] > halfL)
    beyond = out1 & out2
    status = np.where(beyond, NO_WRAP, status)
    ok = status >= WRAPPED
    adj = adjust & ok
    r1 = np.ascontiguousarray(r1)
    r2 = np.ascontiguousarray(r2)
    if adj.any():
        ai = np.where(adj)[0]
        r1[ai], r2[ai] = _adjust_spiral(p1[ai], p2[ai], r1[ai], r2[ai], R, long_wrap[ai])
    with np.errstate(invalid="ignore"):
        L = _spiral_length(r1, r2, R, long_wrap)
    r1, r2, L = np.where(ok[:, None], r1, 0.0), np.where(ok[:, None], r2, 0.0), np.where(ok, L, 0.0)
    if T == T0:
        return status, r1, r2, L
    out_st[rows], r1o[rows], r2o[rows], Lo[rows] = status, r1, r2, L
    return out_st, r1o, r2o, Lo


def _spiral_angle(r1, r2, long_wrap):
    """Angle of the helix about the axis: the signed angle from r1 to r2 about +z (in
    (-pi, pi]), replaced by ``2 pi - angle`` for a long (far-side) wrap, as OpenSim 4.6 does
    (so a long wrap whose signed angle is negative turns by more than a full circle)."""
    cz = r1[:, 0] * r2[:, 1] - r1[:, 1] * r2[:, 0]
    cd = r1[:, 0] * r2[:, 0] + r1[:, 1] * r2[:, 1]
    th = np.arctan2(cz, cd)
    return np.where(long_wrap, 2 * np.pi - th, th)


def _spiral_length(r1, r2, R, long_wrap):
    th = _spiral_angle(r1, r2, long_wrap)
    return np.sqrt((R * th) ** 2 + (r2[:, 2] - r1[:, 2]) ** 2)


def _adjust_z(px, py, pz, x, y, z, wx, wy, wz, thresh):
    """OpenSim's tangent correction of one tangent point r = (x, y, z) (arrays (n,)) against
    the helix point w: when the angles of p->r and r->w to the axis differ by more than
    ``thresh``, r slides along the axis 1.5 times towards the point of its axial line closest
    to the line p-w (OpenSim's ``IntersectLines`` with a vertical second line, written out:
    x and y of r do not change). Returns (new z, moved). (Floating-point warnings: the
    caller's ``errstate``; the cosines clipped to [-1, 1] by maximum/minimum, which is
    ``np.clip`` without its Python wrapper.)"""
    ax, ay, az = x - px, y - py, z - pz
    a = np.arccos(np.minimum(np.maximum(az / np.sqrt(ax * ax + ay * ay + az * az), -1.0), 1.0))
    bx, by, bz = wx - x, wy - y, wz - z
    o = np.arccos(np.minimum(np.maximum(bz / np.sqrt(bx * bx + by * by + bz * bz), -1.0), 1.0))
    dx, dy, dz = wx - px, wy - py, wz - pz
    nd = np.sqrt(dx * dx + dy * dy + dz * dz)
    dx, dy, dz = dx / nd, dy / nd, dz / nd
    den = dx * dx + dy * dy
    along = ax * dx + ay * dy
    zz = pz + dz * along / den
    nz = z + 1.5 * (zz - z)
    need = (np.abs(a - o) > thresh) & np.isfinite(nz)
    return np.where(need, nz, z), need


def _adjust_spiral(p1, p2, r1, r2, R, long_wrap, max_iter=100, thresh=np.deg2rad(0.1)):
    """OpenSim 4.6's axial sliding of the tangent points (``WrapCylinder::_make_spiral_path``
    for a path with several wrap objects). The helix is cut in ~2 mm segments; when it has two
    or more, r1 is corrected against the helix point after the first segment, then r2 against
    the point one segment before the end, that point being taken on the helix turned from
    the *corrected* r1 with the angle and rise of the uncorrected one (OpenSim evaluates it
    through a lambda that reads the current r1). Repeated, at most ``max_iter`` times, on the
    frames where a point moved."""
    r1 = np.array(r1, float)
    r2 = np.array(r2, float)
    # only z of the tangent points moves: x, y and the helix angle are fixed per frame
    z1a, z2a = r1[:, 2].copy(), r2[:, 2].copy()
    th_all = _spiral_angle(r1, r2, long_wrap)
    # what is fixed per frame, one row each, gathered for the frames still moving in one take
    fixed = np.stack([p1[:, 0], p1[:, 1], p1[:, 2], p2[:, 0], p2[:, 1], p2[:, 2], r1[:, 0],
                      r1[:, 1], r2[:, 0], r2[:, 1], th_all, np.where(long_wrap, -1.0, 1.0)])
    idx = np.arange(len(r1))
    with np.errstate(invalid="ignore", divide="ignore"):
        for _ in range(max_iter):
            if len(idx) == 0:
                break
            z1, z2, th = z1a[idx], z2a[idx], th_all[idx]
            dz = z2 - z1
            L = np.sqrt((R * th) ** 2 + dz ** 2)
            nseg = np.maximum((L / 0.002).astype(int), 1)
            ok = nseg >= 2        # the check happens at the second of >= 2 helix points
            if not ok.all():
                idx, z1, z2, th, dz, nseg = idx[ok], z1[ok], z2[ok], th[ok], dz[ok], nseg[ok]
                if len(idx) == 0:
                    break
            q1x, q1y, q1z, q2x, q2y, q2z, xa, ya, xb, yb, _, sense = fixed[:, idx]
            t = 1.0 / nseg
            # helix point after the first segment, from r1
            ang = sense * t * th
            c, sn = np.cos(ang), np.sin(ang)
            n1, m1 = _adjust_z(q1x, q1y, q1z, xa, ya, z1,
                               c * xa - sn * ya, sn * xa + c * ya, z1 + t * dz, thresh)
            # helix point one segment before the end, turned from the corrected r1
            t2 = 1.0 - t
            ang = sense * t2 * th
            c, sn = np.cos(ang), np.sin(ang)
            n2, m2 = _adjust_z(q2x, q2y, q2z, xb, yb, z2,
                               c * xa - sn * ya, sn * xa + c * ya, n1 + t2 * dz, thresh)
            # a frame whose points did not change at all would repeat the same step until the
            # iteration limit: it is final already
            same = (n1 == z1) & (n2 == z2)
            z1a[idx] = n1
            z2a[idx] = n2
            idx = idx[(m1 | m2) & ~same]
    r1[:, 2] = z1a
    r2[:, 2] = z2a
    return r1, r2


# ------------------------------------------------------------------------------------ torus
_TORUS_CYL_LENGTH = 10000.0


# OpenSim 4.6's Lmdif.cpp (S. Moshier's C translation of MINPACK's lmdif, with changes marked
# "dkb") differs from MINPACK where it matters here: the forward-difference Jacobian takes a
# constant step of 1e-5 (MINPACK: sqrt(machine eps) |x|), the function evaluations of the
# Jacobian are not counted against maxfev, and its constants are MACHEP 1.2e-16 and DWARF 1e-38.
_LM_STEP = 1e-5
_MACHEP = 1.2e-16
_DWARF = 1.0e-38


def _dmax(a, b):
    """Lmdif.cpp's dmax1 (a when a >= b, else b)."""
    return np.where(a >= b, a, b)


def _dmin(a, b):
    """Lmdif.cpp's dmin1 (a when a <= b, else b)."""
    return np.where(a <= b, a, b)


def _qrsolv1(r, qtb, sd):
    """MINPACK's ``qrsolv`` for one unknown as Lmdif.cpp computes it: the Givens rotation that
    eliminates ``sd`` (= sqrt(par) d) against ``r``; returns (x, sdiag) with
    sdiag = cos r + sin sd and x = cos qtb / sdiag."""
    with np.errstate(divide="ignore", invalid="ignore"):
        small = np.abs(r) < np.abs(sd)
        cotan = r / sd
        sin_a = 0.5 / np.sqrt(0.25 + 0.25 * cotan * cotan)
        tan = sd / r
        cos_b = 0.5 / np.sqrt(0.25 + 0.25 * tan * tan)
        cs = np.where(small, sin_a * cotan, cos_b)
        sn = np.where(small, sin_a, cos_b * tan)
        rot = sd != 0.0
        s = np.where(rot, cs * r + sn * sd, r)
        w = np.where(rot, cs * qtb + sn * 0.0, qtb)
        x = np.where(s != 0.0, w / s, 0.0)
    return x, s


def _lmpar1(r, qtb, d, delta, par):
    """MINPACK's ``lmpar`` for one unknown and one residual as Lmdif.cpp computes it
    (vectorized over problems): ``r`` the R factor of the Jacobian (-J), ``qtb`` = Qᵀf (-f),
    ``d`` the scale; the Levenberg-Marquardt parameter ``par`` and the step x solving
    ``(r² + par d²) x = r qtb`` whose scaled length ``|d x|`` is within 10 % of ``delta`` (or the
    Gauss-Newton x when that is shorter than 1.1 delta)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        nz = r != 0.0
        x = np.where(nz, qtb / r, 0.0)
        wa2 = d * x
        dxnorm = np.abs(wa2)
        fp = dxnorm - delta
        gn = fp <= 0.1 * delta
        t = np.abs((d * (wa2 / dxnorm)) / r)
        parl = np.where(nz, ((fp / delta) / t) / t, 0.0)
        gnorm = np.abs((r * qtb) / d)
        paru = gnorm / delta
        paru = np.where(paru == 0.0, _DWARF / _dmin(delta, 0.1), paru)
        par = _dmin(_dmax(par, parl), paru)
        par = np.where(par == 0.0, gnorm / dxnorm, par)
        act = ~gn
        for it in range(1, 11):
            if not act.any():
                break
            par = np.where(act & (par == 0.0), _dmax(_DWARF, 0.001 * paru), par)
            xn, sdiag = _qrsolv1(r, qtb, np.sqrt(par) * d)
            x = np.where(act, xn, x)
            wa2 = d * xn
            dxn = np.abs(wa2)
            temp = fp
            fpn = dxn - delta
            fp = np.where(act, fpn, fp)
            stop = (np.abs(fpn) <= 0.1 * delta) | ((parl == 0.0) & (fpn <= temp) & (temp < 0.0)) \
                | (it == 10)
            tn = np.abs((d * (wa2 / dxn)) / sdiag)
            parc = ((fpn / delta) / tn) / tn
            upd = act & ~stop
            parl = np.where(upd & (fpn > 0.0), _dmax(parl, par), parl)
            paru = np.where(upd & (fpn < 0.0), _dmin(paru, par), paru)
            par = np.where(upd, _dmax(parl, par + parc), par)
            act = upd
    return np.where(gn, 0.0, par), x


def _lmdif1(fun, T, ftol=1e-4, xtol=1e-4, factor=0.2, maxfev=500):
    """OpenSim 4.6's ``lmdif_C`` (Lmdif.cpp: mode 1, gtol 0, its forward-difference Jacobian of
    constant step 1e-5) for one unknown and one residual, started at 0, vectorized over T
    problems with masks: the same operations in the same order (QR factor, ``lmpar``,
    ``qrsolv`` for n = 1), trust-region updates, step acceptance and stopping tests, so it
    stops where OpenSim stops. ``fun(x, idx)`` returns the residuals of the problems ``idx``."""
    x = np.zeros(T)
    allidx = np.arange(T)
    f = fun(x, allidx)
    fnorm = np.abs(f)
    nfev = np.ones(T, int)                # Jacobian evaluations not counted (Lmdif.cpp)
    it1 = np.ones(T, bool)                # iter == 1: no successful step yet
    needj = np.ones(T, bool)
    r = np.zeros(T)                       # R of the QR factor of the Jacobian (-J)
    acn = np.zeros(T)                     # |J|
    diag = np.ones(T)
    delta = np.zeros(T)
    xnorm = np.zeros(T)
    par = np.zeros(T)
    done = np.zeros(T, bool)
    for _ in range(4 * maxfev):
        act = ~done
        if not act.any():
            break
        jj = act & needj
        if jj.any():
            i = np.where(jj)[0]
            J = (fun(x[i] + _LM_STEP, i) - f[i]) / _LM_STEP
            a = np.abs(J)
            acn[i] = a
            r[i] = -J
            first = it1[i]
            dg = np.where(a == 0.0, 1.0, a)
            diag[i] = np.where(first, dg, diag[i])
            xn = np.abs(diag[i] * x[i])
            dl = factor * xn
            delta[i] = np.where(first, np.where(np.abs(dl) <= 1e-4, factor, dl), delta[i])
            xnorm[i] = np.where(first, xn, xnorm[i])
            # the scaled gradient norm is 1, or 0 (f = 0 or J = 0): gtol = 0 stops there
            done[i] |= (fnorm[i] == 0.0) | (a == 0.0)
            diag[i] = _dmax(diag[i], a)
            needj[i] = False
        i = np.where(~done)[0]
        if len(i) == 0:
            break
        par[i], xs = _lmpar1(r[i], -f[i], diag[i], delta[i], par[i])
        step = -xs
        xt = x[i] + step
        pnorm = np.abs(diag[i] * step)
        delta[i] = np.where(it1[i], _dmin(delta[i], pnorm), delta[i])
        ft = fun(xt, i)
        nfev[i] += 1
        fn1 = np.abs(ft)
        fn = fnorm[i]
        with np.errstate(divide="ignore", invalid="ignore"):
            q = fn1 / fn
            actred = np.where(0.1 * fn1 < fn, 1.0 - q * q, -1.0)
            t1 = np.abs(r[i] * step) / fn
            t2 = (np.sqrt(par[i]) * pnorm) / fn
            prered = t1 * t1 + (t2 * t2) / 0.5
            dirder = -(t1 * t1 + t2 * t2)
            ratio = np.where(prered != 0.0, actred / prered, 0.0)
            tmp = np.where(actred >= 0.0, 0.5, 0.5 * dirder / (dirder + 0.5 * actred))
        tmp = np.where((0.1 * fn1 >= fn) | (tmp < 0.1), 0.1, tmp)
        low = ratio <= 0.25
        high = ~low & ((par[i] == 0.0) | (ratio >= 0.75))
        dnew = np.where(low, tmp * _dmin(delta[i], pnorm / 0.1),
                        np.where(high, pnorm / 0.5, delta[i]))
        pnew = np.where(low, par[i] / tmp, np.where(high, 0.5 * par[i], par[i]))
        delta[i] = dnew
        par[i] = pnew
        ok = ratio >= 1e-4
        x[i] = np.where(ok, xt, x[i])
        f[i] = np.where(ok, ft, f[i])
        fnorm[i] = np.where(ok, fn1, fn)
        xnorm[i] = np.where(ok, np.abs(diag[i] * xt), xnorm[i])
        it1[i] &= ~ok
        needj[i] = ok
        stop = ((np.abs(actred) <= ftol) & (prered <= ftol) & (0.5 * ratio <= 1.0)) \
            | (delta[i] <= xtol * xnorm[i]) | (nfev[i] >= maxfev) \
            | ((np.abs(actred) <= _MACHEP) & (prered <= _MACHEP) & (0.5 * ratio <= 1.0)) \
            | (delta[i] <= _MACHEP * xnorm[i])
        done[i] = stop
    return x


def _torus_line_point(p, q, r):
    """OpenSim 4.6's ``WrapTorus::findClosestPoint`` pass from p towards q: its
    Levenberg-Marquardt (:func:`_lmdif1`: Lmdif.cpp with tolerances 1e-4, step bound 0.2, the
    Jacobian by forward differences of step 1e-5) on OpenSim's residual along the line
    (``calcCircleResids``), started at p. The residual is the stationarity condition of the
    distance to a circle of radius ``2 r`` in the z = 0 plane (as OpenSim writes it); where it
    has no root near p the search stops near a minimum of its magnitude. Returns the point on
    the line (T, 3)."""
    if use_kernel():
        out = np.empty((len(p), 3))
        kernels().torus_line_point(np.ascontiguousarray(p, float), np.ascontiguousarray(q, float),
                                   float(r), out)
        return out
    n = _unit(q - p)[0]
    px, py, pz = p[:, 0], p[:, 1], p[:, 2]
    nx, ny, nz = n[:, 0], n[:, 1], n[:, 2]
    c2 = 2.0 * (px * nx + py * ny + pz * nz)
    c3 = px * nx + py * ny
    c4 = nx * nx + ny * ny
    c5 = px * px + py * py

    def fun(u, i):
        return c2[i] + 2.0 * u - 2.0 * r * (2.0 * c4[i] * u + 2.0 * c3[i]) / np.sqrt(
            u * u * c4[i] + 2.0 * c3[i] * u + c5[i])

    u = _lmdif1(fun, len(p))
    return p + u[:, None] * n


def torus_cylinder_frame(c):
    """Axes of the cylinder that :func:`wrap_torus` lays tangent to the torus circle at the
    circle points ``c`` (T, 3), in the torus frame: (T, 3, 3), rows X (towards the torus axis),
    Y (−z) and Z = X × Y (the cylinder's axis, along the circle), as OpenSim's ``WrapTorus``
    builds them."""
    X = _unit(-c)[0]
    Y = np.broadcast_to([0.0, 0.0, -1.0], X.shape)
    return np.stack([X, Y, _cross(X, Y)], 1)


def wrap_torus(p1, p2, inner_radius: float, outer_radius: float, axis: int = -1,
               sign: int = 0, adjust_tangents=False):
    """Wrap the segment p1-p2 over a torus (tube radius ``inner_radius`` round the circle of
    radius ``outer_radius`` in the z = 0 plane), as OpenSim 4.6's ``WrapTorus`` does: the point
    of the segment's line closest to the circle is searched from each end (OpenSim's residual,
    see :func:`_torus_line_point`), the nearer one kept (with a quadrant: the one on the active
    side, no wrap if neither is); a cylinder of the tube's radius is laid tangent to the circle
    at the corresponding circle point, active on the side facing the torus axis ("+x" of the
    cylinder frame), and the segment wrapped over it (:func:`wrap_cylinder`). OpenSim calls
    every torus wrap optional (WRAPPED); where the cylinder itself does not wrap, OpenSim still
    reports a wrap whose length change is undefined and never chosen: such frames get status
    WRAPPED and a NaN length.

    Returns (status, r1, r2, length); see the module docstring.
    """
    p1 = np.asarray(p1, float)
    p2 = np.asarray(p2, float)
    T = len(p1)
    r = float(outer_radius)
    a1 = _torus_line_point(p1, p2, r)
    a2 = _torus_line_point(p2, p1, r)

    def dist(a):   # as findClosestPoint writes it (NaN where it is negative, never chosen)
        x, y, z = a[:, 0], a[:, 1], a[:, 2]
        with np.errstate(invalid="ignore"):
            return np.sqrt(x * x + y * y + z * z + r * r - 2.0 * r * np.sqrt(x * x + y * y))

    first = dist(a1) < dist(a2)
    found = np.ones(T, bool)
    if axis >= 0:
        s1 = _sgn(a1[:, axis]) == sign
        s2 = _sgn(a2[:, axis]) == sign
        first = np.where(s1 & s2, first, s1)
        found = s1 | s2
    a = np.where(first[:, None], a1, a2)
    rho = np.sqrt(a[:, 0] * a[:, 0] + a[:, 1] * a[:, 1])
    c = np.zeros((T, 3))
    c[:, 0] = a[:, 0] * r / rho
    c[:, 1] = a[:, 1] * r / rho
    Rm = torus_cylinder_frame(c)                        # rows: cylinder axes in torus frame
    q1 = np.einsum("tij,tj->ti", Rm, p1 - c)
    q2 = np.einsum("tij,tj->ti", Rm, p2 - c)
    st, r1, r2, L = wrap_cylinder(q1, q2, inner_radius, _TORUS_CYL_LENGTH, 0, 1,
                                  adjust_tangents=adjust_tangents)
    r1 = np.einsum("tji,tj->ti", Rm, r1) + c
    r2 = np.einsum("tji,tj->ti", Rm, r2) + c
    cyl = found & (st >= WRAPPED)
    status = np.where(found, WRAPPED, NO_WRAP)
    L = np.where(cyl, L, np.where(found, np.nan, 0.0))
    return (status, np.where(cyl[:, None], r1, 0.0), np.where(cyl[:, None], r2, 0.0), L)


# ---------------------------------------------------------------------------------- dispatch
#: OpenSim wrap class -> function(wo, p1, p2, method, single) -> (status, r1, r2, length),
#: the per-surface wrapping of a segment given in the wrap frame. Adding a wrap surface is
#: registering it here (and its typed wrap object in arthron.models.wrap_objects).
WRAP_SURFACES: dict = {}


def register_wrap_surface(type_name: str, fn):
    """Register the segment wrapping of an OpenSim wrap class (see ``WRAP_SURFACES``)."""
    WRAP_SURFACES[type_name] = fn
    return fn


register_wrap_surface("WrapSphere", lambda wo, p1, p2, method, single: wrap_sphere(
    p1, p2, wo.dims["radius"], wo.axis, wo.sign))
register_wrap_surface("WrapCylinder", lambda wo, p1, p2, method, single: wrap_cylinder(
    p1, p2, wo.dims["radius"], wo.dims.get("length", 1.0), wo.axis, wo.sign,
    adjust_tangents=~np.asarray(single, bool)))
register_wrap_surface("WrapEllipsoid", lambda wo, p1, p2, method, single: wrap_ellipsoid(
    p1, p2, wo.dims["radii"], wo.axis, wo.sign, method))
register_wrap_surface("WrapCylinderObst", lambda wo, p1, p2, method, single: wrap_cylinder_obstacle(
    p1, p2, wo.dims["radius"], wo.dims.get("direction", 1)))
register_wrap_surface("WrapSphereObst", lambda wo, p1, p2, method, single: wrap_sphere_obstacle(
    p1, p2, wo.dims["radius"]))
register_wrap_surface("WrapTorus", lambda wo, p1, p2, method, single: wrap_torus(
    p1, p2, wo.dims.get("inner_radius", 0.01), wo.dims.get("outer_radius", 0.05), wo.axis,
    wo.sign, adjust_tangents=~np.asarray(single, bool)))


def _double_cylinder_segment(wo, p1, p2, method, single):
    raise UnsupportedFeature(f"WrapDoubleCylinderObst '{wo.name}': one segment cannot be wrapped "
                             "without the pose of its V cylinder (paths wrap it through "
                             "wrap_double_cylinder_obstacle)")


register_wrap_surface("WrapDoubleCylinderObst", _double_cylinder_segment)


def wrap_segment(wo, p1, p2, method: str = "hybrid", single: bool = True):
    """Wrap p1-p2 (T, 3), given in the wrap frame, over a compiled wrap object ``wo``
    (:class:`arthron.multibody.paths.WrapObjectData`), by the surface registered for its type
    (``WRAP_SURFACES``). ``single`` (bool or (T,)): OpenSim skips the cylinder's iterative
    tangent-point correction for these segments. Returns (status, r1, r2, length).

    Raises UnsupportedFeature for a type without a registered surface.
    """
    fn = WRAP_SURFACES.get(wo.type)
    if fn is None:
        raise UnsupportedFeature(f"{wo.type} '{wo.name}': arthron does not reproduce OpenSim's "
                                 f"{wo.type} wrapping yet")
    return fn(wo, p1, p2, method, single)
