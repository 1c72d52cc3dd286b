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
torus is wrapped as a cylinder laid on its ring at a point found by MINPACK's
Levenberg-Marquardt. These functions are reimplementations of the geometry, checked against
OpenSim in ``tests/test_wrapping.py``.

The ellipsoid wrap replays OpenSim's own approximations step by step (wrap plane from the
"fan"/axis-plane estimates, its damped tangent-point search, the surface length as a sum of
~1 mm chords), because OpenSim's result is not the exact geodesic.

The obstacle-set method (Garner & Pandy 2000: :func:`wrap_sphere_obstacle`,
:func:`wrap_cylinder_obstacle`, :func:`wrap_double_cylinder_obstacle`) follows the published
geometry: OpenSim 4.6 cannot evaluate its WrapSphereObst / WrapCylinderObst /
WrapDoubleCylinderObst (not registered), so these are checked against closed-form cases.
"""
from __future__ import annotations

import numpy as np

from .spatial import cross as _cross
from ..errors import UnsupportedFeature

NO_WRAP, INSIDE, WRAPPED, MANDATORY = 0, 1, 2, 3
# The wrap classes registered below (WRAP_SURFACES); kept as a name for callers.
SUPPORTED = ("WrapSphere", "WrapCylinder", "WrapEllipsoid", "WrapTorus", "WrapSphereObst",
             "WrapCylinderObst", "WrapDoubleCylinderObst")

__all__ = ["NO_WRAP", "INSIDE", "WRAPPED", "MANDATORY", "SUPPORTED", "wrap_sphere",
           "wrap_cylinder", "wrap_ellipsoid", "wrap_torus", "wrap_segment",
           "wrap_cylinder_obstacle", "wrap_sphere_obstacle", "wrap_double_cylinder_obstacle",
           "DC_INSIDE", "DC_NONE", "DC_U", "DC_V", "DC_BOTH", "WRAP_SURFACES",
           "register_wrap_surface"]


def _norm(v, keepdims=False):
    """Euclidean norm over the last axis, bit for bit ``np.linalg.norm(v, axis=-1)`` (the
    square root of ``add.reduce(v * v)``, which sums a 3-vector's squares in order): for
    3-vectors as ``sqrt(x*x + y*y + z*z)``, several times faster than a reduction over an axis
    of length 3 on large arrays."""
    if v.shape[-1] != 3:
        return np.sqrt(np.add.reduce(v * v, axis=-1, keepdims=keepdims))
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    n = np.sqrt(x * x + y * y + z * z)
    return n[..., None] if keepdims else n


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _unit(v):
    n = _norm(v, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v), where=n > 0), n[..., 0]


def _sgn(x):
    """OpenSim's DSIGN: +1 for x >= 0, -1 otherwise."""
    return np.where(x >= 0.0, 1, -1)


def _rotate(v, axis, ang):
    """Rotate vectors v (T,3) about unit axes (T,3) by angles (T,) (right hand)."""
    c, s = np.cos(ang)[:, None], np.sin(ang)[:, None]
    return v * c + _cross(axis, v) * s + axis * _dot(axis, v)[:, None] * (1 - c)


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
def _closest_on_axis(p):
    out = np.zeros_like(p)
    out[:, 2] = p[:, 2]
    return out


def _intersect_lines(p1, p2, p3, p4):
    """Closest points of the lines p1-p2 and p3-p4: (point on 1, s along 1 (0 at p1, 1 at p2),
    point on 2, t along 2)."""
    v1, m1 = _unit(p2 - p1)
    v2, m2 = _unit(p4 - p3)
    cr = _cross(v1, v2)
    den = _dot(cr, cr)
    w = p3 - p1
    t = _dot(w, _cross(v1, cr)) / den      # det[w; v1; cr]
    s = _dot(w, _cross(v2, cr)) / den
    return p1 + s[:, None] * v1, s / m1, p3 + t[:, None] * v2, t / m2


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

    Returns (status, r1, r2, length); see the module docstring.
    """
    p1 = np.asarray(p1, float)
    p2 = np.asarray(p2, float)
    T = p1.shape[0]
    R = float(radius)
    r2sq = R * R
    dn = np.array([0.0, 0.0, 1.0])
    constrained = axis >= 0
    rho1 = np.hypot(p1[:, 0], p1[:, 1])
    rho2 = np.hypot(p2[:, 0], p2[:, 1])
    inside = (rho1 ** 2 < r2sq) | (rho2 ** 2 < r2sq)
    cs = np.broadcast_to([0.0, 0.0, -0.5 * length], (T, 3))
    ce = np.broadcast_to([0.0, 0.0, 0.5 * length], (T, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        near12, t12, near00, _ = _intersect_lines(p1, p2, cs, ce)
    pierce = (_dot(near12 - near00, near12 - near00) < r2sq) & (t12 > 0) & (t12 < 1)
    status = np.full(T, WRAPPED)
    if not constrained:
        status = np.where(pierce, MANDATORY, NO_WRAP)
    p11 = _closest_on_axis(p1)
    p22 = _closest_on_axis(p2)

    def tangents(p, p0, rho):
        vv, _ = _unit(p - p0)
        sin_t = R / np.maximum(rho, 1e-300)
        pp = p0 + (R * sin_t)[:, None] * vv
        h = np.sqrt(np.maximum(r2sq - (R * sin_t) ** 2, 0.0))[:, None]
        uu = _cross(dn, vv)
        return pp + h * uu, pp - h * uu

    r1a, r1b = tangents(p1, p11, rho1)
    r2a, r2b = tangents(p2, p22, rho2)
    far = np.zeros(T, bool)
    long_wrap = np.zeros(T, bool)
    if constrained:
        ws = sign
        s1, s2 = _sgn(p1[:, axis]), _sgn(p2[:, axis])
        either = (s1 == ws) | (s2 == ws)
        opt = (s1 != s2) & (_sgn(near12[:, axis]) != ws)
        st_c = np.where(pierce, MANDATORY, np.where(opt, WRAPPED, NO_WRAP))
        status = np.where(either, st_c, WRAPPED)
        r1am, r1bm = r1a - p11, r1b - p11
        r2am, r2bm = r2a - p22, r2b - p22
        cosa = _dot(r1am, r2bm) / (_norm(r1am) * _norm(r2bm))
        cosb = _dot(r1bm, r2am) / (_norm(r1bm) * _norm(r2am))
        alpha = np.arccos(np.clip(cosa, -1, 1))
        beta = np.arccos(np.clip(cosb, -1, 1))
        a_on = _sgn(r1a[:, axis]) == ws
        b_on = _sgn(r1b[:, axis]) == ws
        r2a_on = _sgn(r2a[:, axis]) == ws
        r2b_on = _sgn(r2b[:, axis]) == ws
        ab = alpha > beta
        # choice "BA": r1 = r1b, r2 = r2a, far = not (alpha > beta)
        # choice "AB": r1 = r1a, r2 = r2b, far = (alpha > beta)
        choose_ba = np.where(a_on & b_on, r2a_on,
                             np.where(a_on & ~b_on, False,
                                      np.where(~a_on & b_on, True,
                                               np.where(r2a_on, True,
                                                        np.where(r2b_on, False, ~ab)))))
        none_on = ~a_on & ~b_on & ~r2a_on & ~r2b_on
        far = np.where(choose_ba, ~ab, ab)
        far = np.where(none_on, True, far)
        r1 = np.where(choose_ba[:, None], r1b, r1a)
        r2 = np.where(choose_ba[:, None], r2a, r2b)
        sum_musc = (r1 - p1) + (r2 - p2)
        sum_r = (r1 - p11) + (r2 - p22)
        long_wrap = _dot(sum_r, sum_musc) < 0.0
    else:
        n1a, n1b = _unit(r1a - p11)[0], _unit(r1b - p11)[0]
        n2a, n2b = _unit(r2a - p22)[0], _unit(r2b - p22)[0]
        combos = [(r1a, r2a), (r1a, r2b), (r1b, r2a), (r1b, r2b)]
        dots = np.stack([_dot(n1a, n2a), _dot(n1a, n2b), _dot(n1b, n2a), _dot(n1b, n2b)], 1)
        # OpenSim's chain of strict comparisons (ties fall to the later candidate)
        d1, d2, d3, d4 = dots.T
        pick = np.where((d1 > d2) & (d1 > d3) & (d1 > d4), 0,
                        np.where((d2 > d3) & (d2 > d4), 1, np.where(d3 > d4, 2, 3)))
        r1 = np.choose(pick[:, None], [x for x, _ in combos])
        r2 = np.choose(pick[:, None], [y for _, y in combos])
    # apex line of the cylinder between the two points
    tt = rho1 / (rho1 + rho2)
    mpt = p1 + tt[:, None] * (p2 - p1)
    axispt = _closest_on_axis(mpt)
    l1 = _unit(p1 - axispt)[0]
    l2 = _unit(p2 - axispt)[0]
    pn = _unit(_cross(l1, l2))[0]
    vert1 = _unit(_cross(dn, pn))[0]
    vert2 = _unit(_cross(pn, dn))[0]
    apex1 = axispt + R * vert1
    apex2 = axispt + R * vert2
    dd1 = _dot(mpt - apex1, mpt - apex1)
    dd2 = _dot(mpt - apex2, mpt - apex2)
    first = np.where(far, ~(dd1 < dd2), dd1 < dd2)
    apex = np.where(first[:, None], apex1, apex2)
    uu = _unit(p1 - apex)[0]
    vv = _unit(p2 - apex)[0]
    pn2 = _unit(_cross(uu, vv))[0]
    dpl = -_dot(p1, pn2)

    def slide(r, p_own, p_other_axis, p_own_axis):
        a = r - 10.0 * dn
        b = r + 10.0 * dn
        vec = b - a
        dp = _dot(vec, pn2)
        ok = np.abs(dp) >= 1e-5
        with np.errstate(invalid="ignore", divide="ignore"):
            t = (-dpl - _dot(pn2, a)) / dp
        ok &= (t >= -1e-5) & (t <= 1 + 1e-5)
        rp = a + np.where(ok, t, 0.0)[:, None] * vec
        z = rp[:, 2]
        closer = np.abs(z - p_other_axis[:, 2]) < np.abs(p_own_axis[:, 2] - p_other_axis[:, 2])
        return np.where((ok & closer)[:, None], rp, r)

    r1 = slide(r1, p1, p22, p11)
    r2 = slide(r2, p2, p11, p22)
    halfL = 0.5 * length
    out1 = (r1[:, 2] < -halfL) | (r1[:, 2] > halfL)
    out2 = (r2[:, 2] < -halfL) | (r2[:, 2] > halfL)
    beyond = out1 & out2
    status = np.where(inside, INSIDE, status)
    status = np.where((status >= WRAPPED) & beyond, NO_WRAP, status)
    ok = status >= WRAPPED
    adj = np.broadcast_to(np.asarray(adjust_tangents, bool), (T,)) & ok
    if adj.any():
        ai = np.where(adj)[0]
        r1 = r1.copy()
        r2 = r2.copy()
        r1[ai], r2[ai] = _adjust_spiral(p1[ai], p2[ai], r1[ai], r2[ai], R, long_wrap[ai])
    with np.errstate(invalid="ignore"):
        L = _spiral_length(r1, r2, R, long_wrap)
    return (status, np.where(ok[:, None], r1, 0.0), np.where(ok[:, None], r2, 0.0),
            np.where(ok, L, 0.0))


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


def _spiral_point(r, th, dz, sense, t):
    """Helix point at fraction t (T,): ``r`` turned by ``sense t th`` about the axis and moved
    ``t dz`` along it (OpenSim 4.6 evaluates it from the current start tangent point)."""
    a = sense * t * th
    c, s = np.cos(a), np.sin(a)
    return np.stack([c * r[:, 0] - s * r[:, 1], s * r[:, 0] + c * r[:, 1], r[:, 2] + t * dz], 1)


def _adjust_one(p, r, w, thresh):
    """OpenSim's tangent correction of one tangent point ``r`` (T,3) against the helix point
    ``w``: when the angles of p->r and r->w to the axis differ by more than ``thresh``, r slides
    along the axis 1.5 times towards the point of its axial line closest to the line p-w
    (OpenSim's ``IntersectLines`` with a vertical second line, written out: x and y of r do
    not change). Returns (new r, moved)."""
    pr = r - p
    rw = w - r
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.arccos(np.clip(pr[:, 2] / _norm(pr), -1, 1))
        o = np.arccos(np.clip(rw[:, 2] / _norm(rw), -1, 1))
        d = w - p
        d = d / _norm(d)[:, None]
        den = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]
        along = (r[:, 0] - p[:, 0]) * d[:, 0] + (r[:, 1] - p[:, 1]) * d[:, 1]
        z = p[:, 2] + d[:, 2] * along / den
        nz = r[:, 2] + 1.5 * (z - r[:, 2])
    need = (np.abs(a - o) > thresh) & np.isfinite(nz)
    out = r.copy()
    out[:, 2] = np.where(need, nz, r[:, 2])
    return out, need


def _adjust_spiral(p1, p2, r1, r2, R, long_wrap, max_iter=100, thresh=np.deg2rad(0.1)):
    """OpenSim 4.6's axial sliding of the tangent points (``WrapCylinder::_make_spiral_path``
    for a path with several wrap objects). The helix is cut in ~2 mm segments; when it has two
    or more, r1 is corrected against the helix point after the first segment, then r2 against
    the point one segment before the end, that point being taken on the helix turned from
    the *corrected* r1 with the angle and rise of the uncorrected one (OpenSim evaluates it
    through a lambda that reads the current r1). Repeated, at most ``max_iter`` times, on the
    frames where a point moved."""
    r1 = r1.copy()
    r2 = r2.copy()
    idx = np.arange(len(r1))
    sense_all = np.where(long_wrap, -1.0, 1.0)
    for _ in range(max_iter):
        if len(idx) == 0:
            break
        a1, a2, lw = r1[idx], r2[idx], long_wrap[idx]
        th = _spiral_angle(a1, a2, lw)
        dz = a2[:, 2] - a1[:, 2]
        L = np.sqrt((R * th) ** 2 + dz ** 2)
        nseg = np.maximum((L / 0.002).astype(int), 1)
        ok = nseg >= 2        # the check happens at the second of >= 2 helix points
        if not ok.all():
            idx, a1, a2, th, dz, nseg = idx[ok], a1[ok], a2[ok], th[ok], dz[ok], nseg[ok]
            if len(idx) == 0:
                break
        sense = sense_all[idx]
        t = 1.0 / nseg
        n1, m1 = _adjust_one(p1[idx], a1, _spiral_point(a1, th, dz, sense, t), thresh)
        n2, m2 = _adjust_one(p2[idx], a2, _spiral_point(n1, th, dz, sense, 1.0 - t), thresh)
        # a frame whose points did not change at all would repeat the same step until the
        # iteration limit: it is final already
        same = np.all(n1 == a1, -1) & np.all(n2 == a2, -1)
        r1[idx] = n1
        r2[idx] = n2
        idx = idx[(m1 | m2) & ~same]
    return r1, r2


# ------------------------------------------------------------------------------------ torus
_TORUS_CYL_LENGTH = 10000.0


_EPSMCH = np.finfo(float).eps
_DWARF = np.finfo(float).tiny


def _lmpar1(r, qtb, d, delta, par):
    """MINPACK's ``lmpar`` for one unknown and one residual (vectorized over frames): the
    Levenberg-Marquardt parameter ``par`` and the solution x of ``(r² + par d²) x = r qtb``
    whose scaled length ``|d x|`` is within 10 % of ``delta`` (or the Gauss-Newton x when
    that is shorter than 1.1 delta)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        xg = np.where(r != 0.0, qtb / r, 0.0)
        dx = np.abs(d * xg)
        fp = dx - delta
        gn = fp <= 0.1 * delta
        t = np.abs(d * (d * xg / dx) / r)
        parl = np.where(r != 0.0, ((fp / delta) / t) / t, 0.0)
        gnorm = np.abs(r * qtb / d)
        paru = gnorm / delta
        paru = np.where(paru == 0.0, _DWARF / np.minimum(delta, 0.1), paru)
        par = np.minimum(np.maximum(par, parl), paru)
        par = np.where(par == 0.0, gnorm / dx, par)
        x = xg.copy()
        act = ~gn
        for it in range(1, 11):
            if not act.any():
                break
            par = np.where(act & (par == 0.0), np.maximum(_DWARF, 0.001 * paru), par)
            s2 = r * r + par * d * d
            xn = r * qtb / s2
            x = np.where(act, xn, x)
            dxn = np.abs(d * xn)
            temp = fp
            fpn = dxn - delta
            fp = np.where(act, fpn, fp)
            stop = (np.abs(fpn) <= 0.1 * delta) | ((parl == 0.0) & (fpn <= temp) & (temp < 0.0)) \
                | (it == 10)
            t = np.abs(d * (d * xn / dxn)) / np.sqrt(s2)
            parc = ((fpn / delta) / t) / t
            upd = act & ~stop
            parl = np.where(upd & (fpn > 0.0), np.maximum(parl, par), parl)
            paru = np.where(upd & (fpn < 0.0), np.minimum(paru, par), paru)
            par = np.where(upd, np.maximum(parl, par + parc), par)
            act = upd
    return np.where(gn, 0.0, par), x


def _lmdif1(fun, T, ftol=1e-4, xtol=1e-4, factor=0.2, maxfev=500):
    """MINPACK's ``lmdif`` (mode 1, forward-difference Jacobian, epsfcn 0, gtol 0) for one
    unknown and one residual, started at 0, vectorized over T problems with masks: the same
    trust-region steps, step acceptance and stopping tests, so it stops where OpenSim's
    ``lmdif_C`` stops. ``fun(x, idx)`` returns the residuals of the problems ``idx``."""
    eps = np.sqrt(_EPSMCH)
    x = np.zeros(T)
    allidx = np.arange(T)
    f = fun(x, allidx)
    fnorm = np.abs(f)
    nfev = np.ones(T, int)
    it1 = np.ones(T, bool)              # first outer iteration
    needj = np.ones(T, bool)
    J = np.zeros(T)
    diag = np.ones(T)
    delta = np.zeros(T)
    xnorm = np.zeros(T)
    par = np.zeros(T)
    done = fnorm == 0.0                 # gnorm = 0 <= gtol
    for _ in range(4 * maxfev):
        act = ~done
        if not act.any():
            break
        jj = act & needj
        if jj.any():
            i = np.where(jj)[0]
            h = eps * np.abs(x[i])
            h = np.where(h == 0.0, eps, h)
            J[i] = (fun(x[i] + h, i) - f[i]) / h
            nfev[i] += 1
            acn = np.abs(J[i])
            first = it1[i]
            dg = np.where(acn == 0.0, 1.0, acn)
            diag[i] = np.where(first, dg, np.maximum(diag[i], acn))
            xn = np.abs(diag[i] * x[i])
            dl = factor * xn
            delta[i] = np.where(first, np.where(dl == 0.0, factor, dl), delta[i])
            xnorm[i] = np.where(first, xn, xnorm[i])
            needj[i] = False
            done[i] |= fnorm[i] == 0.0
        i = np.where(~done)[0]
        if len(i) == 0:
            break
        par[i], xs = _lmpar1(J[i], f[i], diag[i], delta[i], par[i])
        step = -xs
        xt = x[i] + step
        pnorm = np.abs(diag[i] * step)
        delta[i] = np.where(it1[i], np.minimum(delta[i], pnorm), delta[i])
        ft = fun(xt, i)
        nfev[i] += 1
        fn1 = np.abs(ft)
        fn = fnorm[i]
        with np.errstate(divide="ignore", invalid="ignore"):
            actred = np.where(0.1 * fn1 < fn, 1.0 - (fn1 / fn) ** 2, -1.0)
            t1 = np.abs(J[i] * step) / fn
            t2 = np.sqrt(par[i]) * pnorm / fn
            prered = t1 * t1 + t2 * t2 / 0.5
            dirder = -(t1 * t1 + t2 * t2)
            ratio = np.where(prered != 0.0, actred / prered, 0.0)
            tmp = np.where(actred >= 0.0, 0.5, 0.5 * dirder / (dirder + 0.5 * actred))
        tmp = np.where((0.1 * fn1 >= fn) | (tmp < 0.1), 0.1, tmp)
        low = ratio <= 0.25
        high = ~low & ((par[i] == 0.0) | (ratio >= 0.75))
        dnew = np.where(low, tmp * np.minimum(delta[i], pnorm / 0.1),
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
            | ((np.abs(actred) <= _EPSMCH) & (prered <= _EPSMCH) & (0.5 * ratio <= 1.0)) \
            | (delta[i] <= _EPSMCH * xnorm[i]) | (fnorm[i] == 0.0)
        done[i] = stop
    return x


def _torus_line_point(p, q, r):
    """OpenSim's ``WrapTorus::findClosestPoint`` pass from p towards q: MINPACK's
    Levenberg-Marquardt (:func:`_lmdif1`, tolerances 1e-4, step bound 0.2) on OpenSim's
    residual along the line, started at p. The residual is the stationarity condition of the
    distance to a circle of radius ``2 r`` in the z = 0 plane (as OpenSim writes it); where it
    has no root near p the search stops near a minimum of its magnitude. Returns the point on
    the line (T, 3)."""
    n = _unit(q - p)[0]
    c2 = 2.0 * _dot(p, n)
    c3 = p[:, 0] * n[:, 0] + p[:, 1] * n[:, 1]
    c4 = n[:, 0] ** 2 + n[:, 1] ** 2
    c5 = p[:, 0] ** 2 + p[:, 1] ** 2

    def fun(u, i):
        g = c4[i] * u + c3[i]
        return c2[i] + 2.0 * u - 2.0 * r * (2.0 * g) / np.sqrt(u * u * c4[i] + 2.0 * c3[i] * u
                                                               + c5[i])

    u = _lmdif1(fun, len(p))
    return p + u[:, None] * n


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

    def dist(a):
        rho = np.hypot(a[:, 0], a[:, 1])
        return np.sqrt(np.maximum(_dot(a, a) + r * r - 2.0 * r * rho, 0.0))

    first = dist(a1) < dist(a2)
    found = np.ones(T, bool)
    if axis >= 0:
        s1 = _sgn(a1[:, axis]) == sign
        s2 = _sgn(a2[:, axis]) == sign
        first = np.where(s1 & s2, first, s1)
        found = s1 | s2
    a = np.where(first[:, None], a1, a2)
    rho = np.hypot(a[:, 0], a[:, 1])
    c = np.zeros((T, 3))
    c[:, 0] = a[:, 0] * r / rho
    c[:, 1] = a[:, 1] * r / rho
    X = _unit(-c)[0]
    Y = np.broadcast_to([0.0, 0.0, -1.0], (T, 3))
    Z = _cross(X, Y)
    Rm = np.stack([X, Y, Z], 1)                         # rows: cylinder axes in torus frame
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


# --------------------------------------------------------------------------------- ellipsoid
_ROUNDOFF = 2e-13          # SimmMacros ROUNDOFF_ERROR (EQUAL_WITHIN_ERROR)
_MU_BLEND_MIN = 0.7073     # below: the "fan" estimate of the wrap plane only
_MU_BLEND_MAX = 0.9        # above: the axis-plane ("Frans") estimate only
_NUM_FAN = 300
_SV_BLEND = 0.3
_SEG = 0.001               # m, length of the chords of the surface path
_NEWTON_CHUNK = 16384      # points per block of the closest-point Newton iteration


def _closest_ellipse(a, b, u, v):
    """Closest point (x, y) on the ellipse (x/a)² + (y/b)² = 1 to (u, v), with the special
    cases near the axes and the Newton iteration on the Lagrange multiplier of Eberly's
    algorithm (Graphics Gems IV) as OpenSim uses it (64 steps, |f| < 1e-9)."""
    u = np.asarray(u, float)
    v = np.asarray(v, float)
    a2, b2 = a * a, b * b
    x = np.empty_like(u)
    y = np.empty_like(v)
    nx = np.abs(u) <= _ROUNDOFF
    ny = np.abs(v) <= _ROUNDOFF
    both = nx & ny
    if a < b:
        x[both] = np.where(u[both] < 0, -a, a)
        y[both] = v[both]
    else:
        x[both] = u[both]
        y[both] = np.where(v[both] < 0, -b, b)
    m = nx & ~ny
    if m.any():
        vv = v[m]
        c1 = (a >= b) | (np.abs(vv) >= b - a2 / b)
        yy = np.where(c1, np.where(vv >= 0, b, -b), b2 * vv / (b2 - a2) if b2 != a2 else 0.0)
        xx = np.where(c1, u[m], a * np.sqrt(np.abs(1 - (yy / b) ** 2)))
        x[m], y[m] = xx, yy
    m = ny & ~nx
    if m.any():
        uu = u[m]
        c1 = (b >= a) | (np.abs(uu) >= a - b2 / a)
        xx = np.where(c1, np.where(uu >= 0, a, -a), a2 * uu / (a2 - b2) if a2 != b2 else 0.0)
        yy = np.where(c1, v[m], b * np.sqrt(np.abs(1 - (xx / a) ** 2)))
        x[m], y[m] = xx, yy
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


def _newton_ellipsoid(t, ix, a2, b2, c2, a2u2, b2v2, c2w2):
    """Eberly's Newton steps on the Lagrange multiplier ``t`` of the rows ``ix`` (in place),
    each row until |f| < 1e-9 (at most 64 steps); converged rows leave the working arrays
    once at least half have converged (until then they are skipped by ``where``). Each operation of ``f = P²Q²R² - AQ²R² - BP²R² - CP²Q²`` and
    ``f' = 2(PQR(QR + PR + PQ) - AQR(Q + R) - BPR(P + R) - CPQ(P + Q))`` is evaluated in the
    order the formula reads, into preallocated buffers (no temporaries)."""
    tt, A, B, Cc = t[ix], a2u2[ix], b2v2[ix], c2w2[ix]
    m = len(ix)
    buf = np.empty((12, m))
    conv = np.empty(m, bool)
    P, Q, R, P2, Q2, R2, f, t1, PQ, PR, QR, s1 = buf
    for _ in range(64):
        np.add(tt, a2, out=P)
        np.add(tt, b2, out=Q)
        np.add(tt, c2, out=R)
        np.multiply(P, P, out=P2)
        np.multiply(Q, Q, out=Q2)
        np.multiply(R, R, out=R2)
        np.multiply(P2, Q2, out=f)
        f *= R2
        np.multiply(A, Q2, out=t1)
        t1 *= R2
        f -= t1
        np.multiply(B, P2, out=t1)
        t1 *= R2
        f -= t1
        np.multiply(Cc, P2, out=t1)
        t1 *= Q2
        f -= t1
        c = conv[:m]
        np.abs(f, out=t1)
        np.less(t1, 1e-9, out=c)
        go = None
        if c.any():
            t[ix] = tt
            go = ~c
            ng = np.count_nonzero(go)
            if ng == 0:
                return
            if ng < m // 2:   # compact; else the converged rows stay, frozen by ``where``
                ix, tt, A, B, Cc = ix[go], tt[go], A[go], B[go], Cc[go]
                Pg, Qg, Rg, fg = P[go], Q[go], R[go], f[go]
                m = ng
                P, Q, R, P2, Q2, R2, f, t1, PQ, PR, QR, s1 = buf[:, :m]
                P[:], Q[:], R[:], f[:] = Pg, Qg, Rg, fg
                go = None
        np.multiply(P, Q, out=PQ)
        np.multiply(P, R, out=PR)
        np.multiply(Q, R, out=QR)
        np.multiply(PQ, R, out=s1)                # P Q R
        np.add(QR, PR, out=P2)
        P2 += PQ
        s1 *= P2
        np.multiply(A, QR, out=t1)
        np.add(Q, R, out=P2)
        t1 *= P2
        s1 -= t1
        np.multiply(B, PR, out=t1)
        np.add(P, R, out=P2)
        t1 *= P2
        s1 -= t1
        np.multiply(Cc, PQ, out=t1)
        np.add(P, Q, out=P2)
        t1 *= P2
        s1 -= t1
        s1 *= 2.0                                 # f'
        if go is None:
            np.divide(f, s1, out=s1)
            tt = tt - s1
        else:         # a frozen row keeps its t, so its f stays converged
            np.divide(f, s1, out=s1, where=go)
            np.subtract(tt, s1, out=tt, where=go)
    t[ix] = tt


def _closest_ellipsoid(a, dims, p, axis=-1):
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
            m = (np.abs(p[:, i]) <= _ROUNDOFF) & (best > s)
            sp[m] = i
            best[m] = s
    pairs = {0: (1, 2), 1: (2, 0), 2: (0, 1)}
    for i, (j, k) in pairs.items():
        m = sp == i
        if m.any():
            out[m, i] = p[m, i]
            out[m, j], out[m, k] = _closest_ellipse(a[j], a[k], p[m, j], p[m, k])
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
        for s0 in range(0, n, _NEWTON_CHUNK):
            _newton_ellipsoid(t, np.arange(s0, min(n, s0 + _NEWTON_CHUNK)), a2, b2, c2,
                              a2u2, b2v2, c2w2)
        if allg:
            out[:, 0] = a2 * u / (t + a2)
            out[:, 1] = b2 * v / (t + b2)
            out[:, 2] = c2 * w / (t + c2)
        else:
            out[g] = np.stack([a2 * u / (t + a2), b2 * v / (t + b2), c2 * w / (t + c2)], 1)
    return out


def _tangent_lm(pe, r, p, a, vs, vs4):
    """OpenSim's ``WrapEllipsoid::calcTangentPoint``: from the start ``r`` (N,3), a damped
    Gauss-Newton search for a point on the ellipsoid, in the plane (vs, vs4), whose tangent
    plane holds p. Replayed step by step (damping, step doubling, tolerance 1e-8 on the sum of
    squared residuals, 50 iterations) because OpenSim uses the point where the search stops,
    which is not always the exact tangent point. Scaled coordinates, centre at the origin."""
    r = np.array(r, float)
    N = len(r)
    a2 = a * a
    near = np.abs(pe) < 1e-4
    r[near] = p[near]

    d1 = -_dot(2.0 * r / a2, r)
    ee, ssq = _lm_resid(r, d1, p, vs, vs4, a, a2)
    ssqo = ssq.copy()
    alpha = np.full(N, 0.01)
    nit = np.zeros(N, int)
    pu = _unit(p)[0]
    run = ~near
    while True:
        run &= (ssq > 1e-8) & (nit < 50)
        if not run.any():
            break
        nit += run
        ri = np.where(run)[0]        # the Jacobian products of the rows still searching
        rr, pr = r[ri], p[ri]
        D = np.zeros((len(ri), 4, 4))
        D[:, :3, 0] = vs[ri]
        D[:, :3, 1] = 2.0 * rr / a2
        D[:, :3, 2] = 2.0 * (2.0 * rr) / a2
        D[:, :3, 3] = 2.0 * pr / a2
        D[:, 3, 2] = 1.0
        D[:, 3, 3] = 1.0
        pcos = _dot(_unit(pr - rr)[0], pu[ri])
        dd = np.ones(N)
        dd[ri] = np.where(pcos > 0.1, 1.0 - np.abs(pcos) ** 100, 1.0)
        v = np.zeros((N, 4))
        v[ri] = -np.einsum("nij,nj->ni", D, ee[ri])
        D2 = np.zeros((N, 4, 4))
        D2[ri] = np.einsum("nik,njk->nij", D, D)
        diag = np.diagonal(D2, axis1=1, axis2=2).copy()
        vt = np.zeros((N, 4))
        inner = run.copy()
        k2 = 0
        while inner.any() and k2 < 1000:
            idx = np.where(inner)[0]
            M = D2[idx].copy()
            M[:, np.arange(4), np.arange(4)] = diag[idx] * (1.0 + alpha[idx, None])
            inv = np.linalg.inv(M)
            vt[idx] = dd[idx, None] * np.einsum("nij,nj->ni", inv, v[idx]) / 16.0
            r[idx] += vt[idx, :3]
            d1[idx] += vt[idx, 3]
            ee_i, ss_i = _lm_resid(r[idx], d1[idx], p[idx], vs[idx], vs4[idx], a, a2)
            ee[idx] = ee_i
            ssqo[idx] = ssq[idx]
            ssq[idx] = ss_i
            alpha[idx] *= 4.0
            k2 += 1
            inner[idx] = ssq[idx] >= ssqo[idx]
        alpha[run] /= 8.0
        fakt = np.where(run, 0.5, 0.0)
        ls = run.copy()
        k2 = 0
        while ls.any() and k2 < 1000:
            idx = np.where(ls)[0]
            fakt[idx] *= 2.0
            r[idx] += vt[idx, :3] * fakt[idx, None]
            d1[idx] += vt[idx, 3] * fakt[idx]
            ee_i, ss_i = _lm_resid(r[idx], d1[idx], p[idx], vs[idx], vs4[idx], a, a2)
            ee[idx] = ee_i
            ssqo[idx] = ssq[idx]
            ssq[idx] = ss_i
            k2 += 1
            ls[idx] = ssq[idx] <= ssqo[idx]
        idx = np.where(run)[0]
        r[idx] -= vt[idx, :3] * fakt[idx, None]
        d1[idx] -= vt[idx, 3] * fakt[idx]
        ee_i, ss_i = _lm_resid(r[idx], d1[idx], p[idx], vs[idx], vs4[idx], a, a2)
        ee[idx] = ee_i
        ssq[idx] = ss_i
        ssqo[idx] = ss_i
    return r


def _lm_resid(r, d1, p, vs, vs4, a, a2):
    nr = 2.0 * r / a2
    e0 = _dot(vs, r) + vs4
    s = np.square(r / a)
    e1 = s[:, 0] + s[:, 1] + s[:, 2] - 1.0
    e2 = _dot(nr, r) + d1
    e3 = _dot(nr, p) + d1
    ee = np.stack([e0, e1, e2, e3], 1)
    return ee, e0 * e0 + e1 * e1 + e2 * e2 + e3 * e3


def _surface_path(r1, r2, a, vs, vs4, far, factor):
    """OpenSim's ``CalcDistanceOnEllipsoid``: points on the ellipse section at equal angles
    about the point where the plane crosses the coordinate axis most normal to it, joined
    by chords (about 1 mm long, at most 499). Returns (length (scaled), first interior point,
    last interior point, number of points)."""
    N = len(r1)
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
        f2 = a0 / a
        qc = (_dot(f2, f2) - 1.0)[:, None]
        for b0 in range(0, N, nb):
            b = slice(b0, b0 + nb)
            phi = np.arange(1, K)[None, :] * dphi[b, None]
            rdir = (np.cos(phi)[..., None] * ar1[b, None, :]
                    + np.sin(phi)[..., None] * vsy[b, None, :])
            f1 = rdir / a
            qa = _dot(f1, f1)
            qb = 2 * _dot(f1, f2[b, None, :])
            m3 = (-qb + np.sqrt(np.maximum(qb * qb - 4 * qa * qc[b], 0.0))) / (2 * qa)
            sp = a0[b, None, :] + m3[..., None] * rdir
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
                tt = np.arange(1, _NUM_FAN - 1) / _NUM_FAN
                blades = np.empty((len(fi), 3))
                nb = max(1, (1 << 18) // len(tt))   # frames per block: memory ~2**18 points
                for b0 in range(0, len(fi), nb):
                    fb = fi[b0:b0 + nb]
                    sv = R1[fb, None, :] + tt[None, :, None] * d12[fb, None, :]
                    cp = _closest_ellipsoid(a, dims, sv.reshape(-1, 3)).reshape(sv.shape)
                    blades[b0:b0 + nb] = _unit(cp - sv)[0].sum(1)
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
            fw = np.where(np.isinf(fan_w),
                          1.0 - (mub - _MU_BLEND_MIN) / (_MU_BLEND_MAX - _MU_BLEND_MIN), fan_w)
            fw = np.minimum(fw, 1.0)
            bis = 0.5 * (orig + c1f[:, axis])
            moved = c1f.copy()
            moved[:, axis] = c1f[:, axis] + fw * (bis - c1f[:, axis])
            proj = _closest_ellipsoid(a, dims, moved)
            c1f = np.where((fw > 0)[:, None], proj, c1f)
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


# ----------------------------------------------------------------- obstacle set (Garner & Pandy)
DC_INSIDE, DC_NONE, DC_U, DC_V, DC_BOTH = -1, 0, 1, 2, 3


def _obstacle_arc(P, S, R):
    """Tangent points Q (from P) and T (to S) on the circle of signed radius R (sign: wrap
    direction, + right-handed about z) in the xy plane, the arc angle and the contact test
    (Garner & Pandy: no contact when the wrap would exceed 180 degrees). P, S (T, 2)."""
    dP = P[:, 0] ** 2 + P[:, 1] ** 2
    dS = S[:, 0] ** 2 + S[:, 1] ** 2
    inside = (dP - R * R < 0.0) | (dS - R * R < 0.0)
    rp = np.sqrt(np.maximum(dP - R * R, 0.0))
    rs = np.sqrt(np.maximum(dS - R * R, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        Q = np.stack([(R * P[:, 0] - rp * P[:, 1]) * R / dP,
                      (R * P[:, 1] + rp * P[:, 0]) * R / dP], 1)
        Tt = np.stack([(R * S[:, 0] + rs * S[:, 1]) * R / dS,
                       (R * S[:, 1] - rs * S[:, 0]) * R / dS], 1)
    contact = R * (Q[:, 0] * Tt[:, 1] - Q[:, 1] * Tt[:, 0]) >= 0.0
    d2 = ((Q - Tt) ** 2).sum(1)
    ang = np.arccos(np.clip(1.0 - 0.5 * d2 / (R * R), -1.0, 1.0))
    return inside, contact, Q, Tt, ang


def wrap_cylinder_obstacle(p, s, radius: float, direction: int = 1):
    """Garner & Pandy's (2000) cylinder obstacle: the segment p-s (T, 3), in the obstacle
    frame (cylinder axis z through the origin, infinitely long), wraps round the cylinder in
    the given ``direction`` (+1 right-handed about +z, as OpenSim's ``wrapDirection``
    "righthand"; -1 left-handed) whenever that keeps the wrap under 180 degrees (otherwise the
    path has left the obstacle). The tangent points follow from the 2-D tangents in the
    cross-section; along the axis they divide the rise from p to s in proportion to the
    unrolled lengths, so p-q, the helix q-t and t-s form one straight line on the unrolled
    cylinder (a geodesic). Status INSIDE when an end point lies inside the cylinder, WRAPPED
    (never mandatory) on contact, else NO_WRAP.

    OpenSim's ``WrapCylinderObst`` (not available in OpenSim 4.6's Python and not registered
    for .osim files) follows the same construction but with 0.8 times the radius and a
    surface length without the axial rise; this function keeps the published geometry.

    Returns (status, q, t, length on the surface).
    """
    p = np.asarray(p, float)
    s = np.asarray(s, float)
    R = float(direction) * float(radius)
    inside, contact, Q, Tt, ang = _obstacle_arc(p[:, :2], s[:, :2], R)
    pq = np.hypot(Q[:, 0] - p[:, 0], Q[:, 1] - p[:, 1])
    ts = np.hypot(Tt[:, 0] - s[:, 0], Tt[:, 1] - s[:, 1])
    arc = abs(R) * ang
    tot = pq + ts + arc
    with np.errstate(divide="ignore", invalid="ignore"):
        qz = p[:, 2] + (s[:, 2] - p[:, 2]) * pq / tot
        tz = s[:, 2] + (p[:, 2] - s[:, 2]) * ts / tot
    q = np.column_stack([Q, qz])
    t = np.column_stack([Tt, tz])
    status = np.where(inside, INSIDE, np.where(contact, WRAPPED, NO_WRAP))
    ok = status == WRAPPED
    L = np.hypot(arc, tz - qz)
    return (status, np.where(ok[:, None], q, 0.0), np.where(ok[:, None], t, 0.0),
            np.where(ok, L, 0.0))


def wrap_sphere_obstacle(p, s, radius: float):
    """Garner & Pandy's (2000) sphere obstacle: the path lies in the plane through p, s and the
    centre and wraps the great circle between the tangent points when the straight segment
    would pass through the sphere (the wrap then stays under 180 degrees). Status INSIDE when
    an end point lies inside the sphere or p, s and the centre are collinear (no unique plane,
    as OpenSim's ``WrapSphereObst`` treats it), WRAPPED on contact, else NO_WRAP. (OpenSim's
    class, unavailable in OpenSim 4.6, uses 0.8 times the radius; the published geometry is
    kept here.)

    Returns (status, q, t, length on the surface)."""
    p = np.asarray(p, float)
    s = np.asarray(s, float)
    R = float(radius)
    X, dp = _unit(p)
    Zr = _cross(p, s)
    collinear = _norm(Zr) <= 1e-7
    Z = _unit(Zr)[0]
    Y = _unit(_cross(Z, X))[0]
    P2 = np.column_stack([dp, np.zeros(len(p))])
    S2 = np.column_stack([_dot(s, X), _dot(s, Y)])
    inside, contact, Q, Tt, ang = _obstacle_arc(P2, S2, R)
    q = X * Q[:, :1] + Y * Q[:, 1:]
    t = X * Tt[:, :1] + Y * Tt[:, 1:]
    status = np.where(inside | collinear, INSIDE, np.where(contact, WRAPPED, NO_WRAP))
    ok = status == WRAPPED
    return (status, np.where(ok[:, None], q, 0.0), np.where(ok[:, None], t, 0.0),
            np.where(ok, R * ang, 0.0))


def wrap_double_cylinder_obstacle(p, s, radius_u: float, direction_u: int, radius_v: float,
                                  direction_v: int, R_uv, o_uv, max_iter: int = 200,
                                  tol: float = 1e-13):
    """Garner & Pandy's (2000) double-cylinder obstacle: the path from p to s wraps first
    round cylinder U, then round cylinder V, each in its own direction (see
    :func:`wrap_cylinder_obstacle`), either, both or neither as the contact tests decide.

    ``p``, ``s`` (T, 3) are in U's obstacle frame (axis z through the origin); V's frame is
    given in U's by ``R_uv`` ((3, 3) or (T, 3, 3): V's axes as columns) and ``o_uv`` ((3,) or
    (T, 3): V's origin), so V may sit on another body. Case per frame: U alone when the
    straight path touches U and the path leaving U misses V; V alone likewise; both when each
    is touched (by the straight path or by the path over the other cylinder). With both, the
    common tangent Q-T between the cylinders is found by alternating the single-cylinder
    solutions (U for p->T, then V for Q->s) until T moves less than ``tol``; if one cylinder
    then loses contact the other is used alone.

    Returns ``(case, q, Q, T, t, length)``: case :data:`DC_INSIDE` (an end point inside a
    cylinder: straight path), :data:`DC_NONE`, :data:`DC_U`, :data:`DC_V` or
    :data:`DC_BOTH`; q, Q the tangent points on U and T, t those on V (U frame; for a cylinder
    not wrapped, q = Q = p and T = t = s), and the total path length from p to s.
    """
    return _double_cylinder_obstacle(p, s, radius_u, direction_u, radius_v, direction_v,
                                     R_uv, o_uv, max_iter, tol)[:6]


def _double_cylinder_obstacle(p, s, radius_u, direction_u, radius_v, direction_v, R_uv, o_uv,
                              max_iter=200, tol=1e-13):
    """:func:`wrap_double_cylinder_obstacle` returning also the surface lengths on U (q to Q)
    and on V (T to t), 0 for a cylinder not wrapped: (case, q, Q, T, t, L, Lu, Lv)."""
    p = np.asarray(p, float)
    s = np.asarray(s, float)
    n = len(p)
    Ruv = np.broadcast_to(np.asarray(R_uv, float), (n, 3, 3))
    ouv = np.broadcast_to(np.asarray(o_uv, float), (n, 3))
    to_v = lambda x: np.einsum("tji,tj->ti", Ruv, x - ouv)
    to_u = lambda x: np.einsum("tij,tj->ti", Ruv, x) + ouv
    ru, du, rv, dv = float(radius_u), int(direction_u), float(radius_v), int(direction_v)

    stU, qU, QU, LU = wrap_cylinder_obstacle(p, s, ru, du)
    stV, TVv, tVv, LV = wrap_cylinder_obstacle(to_v(p), to_v(s), rv, dv)
    TV, tV = to_u(TVv), to_u(tVv)
    inside = (stU == INSIDE) | (stV == INSIDE)
    cu = stU == WRAPPED
    cv = stV == WRAPPED
    stV2, T2v, _, _ = wrap_cylinder_obstacle(to_v(np.where(cu[:, None], QU, p)), to_v(s), rv, dv)
    stU2, *_ = wrap_cylinder_obstacle(p, np.where(cv[:, None], TV, s), ru, du)
    both = ~inside & ((cu & cv) | (cu & (stV2 == WRAPPED)) | (cv & (stU2 == WRAPPED)))
    # alternate the two single wraps on the frames touching both
    T = np.where(cv[:, None], TV, to_u(T2v))
    q, Q, t = qU.copy(), QU.copy(), tV.copy()
    Lu, Lv = LU.copy(), LV.copy()
    okU = np.zeros(n, bool)
    okV = np.zeros(n, bool)
    idx = np.where(both)[0]
    for _ in range(max_iter):
        if len(idx) == 0:
            break
        sU, a, b, la = wrap_cylinder_obstacle(p[idx], T[idx], ru, du)
        Qi = np.where((sU == WRAPPED)[:, None], b, p[idx])
        sV, c, d, lb = wrap_cylinder_obstacle(np.einsum("tji,tj->ti", Ruv[idx], Qi - ouv[idx]),
                                              np.einsum("tji,tj->ti", Ruv[idx], s[idx] - ouv[idx]),
                                              rv, dv)
        Tn = np.einsum("tij,tj->ti", Ruv[idx], c) + ouv[idx]
        tn = np.einsum("tij,tj->ti", Ruv[idx], d) + ouv[idx]
        Tn = np.where((sV == WRAPPED)[:, None], Tn, s[idx])
        moved = _norm(Tn - T[idx])
        q[idx], Q[idx], t[idx] = a, b, tn
        T[idx] = Tn
        Lu[idx], Lv[idx] = la, lb
        okU[idx] = sU == WRAPPED
        okV[idx] = sV == WRAPPED
        go = (moved > tol) & okU[idx] & okV[idx]
        idx = idx[go]
    both &= okU & okV
    case = np.where(inside, DC_INSIDE, np.where(both, DC_BOTH, np.where(
        cu & ~both, DC_U, np.where(cv & ~both, DC_V, DC_NONE))))
    # frames wrapping one cylinder: its single solution
    onlyU = case == DC_U
    onlyV = case == DC_V
    q = np.where(onlyU[:, None], qU, q)
    Q = np.where(onlyU[:, None], QU, Q)
    Lu = np.where(onlyU, LU, Lu)
    T = np.where(onlyV[:, None], TV, T)
    t = np.where(onlyV[:, None], tV, t)
    Lv = np.where(onlyV, LV, Lv)
    nrm = lambda a, b: _norm(a - b)
    L = np.select([case == DC_BOTH, onlyU, onlyV],
                  [nrm(p, q) + Lu + nrm(Q, T) + Lv + nrm(t, s),
                   nrm(p, q) + Lu + nrm(Q, s),
                   nrm(p, T) + Lv + nrm(t, s)], nrm(p, s))
    # unused points: the path's neighbours
    useU = (case == DC_BOTH) | onlyU
    useV = (case == DC_BOTH) | onlyV
    q = np.where(useU[:, None], q, p)
    Q = np.where(useU[:, None], Q, p)
    T = np.where(useV[:, None], T, s)
    t = np.where(useV[:, None], t, s)
    Lu = np.where(useU, Lu, 0.0)
    Lv = np.where(useV, Lv, 0.0)
    return case, q, Q, T, t, L, Lu, Lv


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
