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

The semantics are those of OpenSim 4.6 (``WrapSphere::wrapLine``, ``WrapCylinder::wrapLine``),
including their choices where the geometry is ambiguous: the quadrant (``"+x"``, ``"-y"``
...) restricts wrapping to one side of the object, wrapping happens only when the straight
line would pass through the object (or, with a quadrant, through its inactive side); the
cylinder's path is a helix from r1 to r2 whose tangent points are placed by OpenSim's apex
construction. These functions are reimplementations of the geometry, checked against OpenSim
in ``tests/test_wrapping.py``.

WrapEllipsoid and WrapTorus raise :class:`arthron.errors.UnsupportedFeature` (OpenSim's
ellipsoid algorithm is an iterative approximation arthron does not reproduce yet).
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedFeature

NO_WRAP, INSIDE, WRAPPED, MANDATORY = 0, 1, 2, 3

__all__ = ["NO_WRAP", "INSIDE", "WRAPPED", "MANDATORY", "wrap_sphere", "wrap_cylinder",
           "wrap_segment"]


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _unit(v):
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v), where=n > 0), n[..., 0]


def _sgn(x):
    """OpenSim's DSIGN: +1 for x >= 0, -1 otherwise."""
    return np.where(x >= 0.0, 1, -1)


def _rotate(v, axis, ang):
    """Rotate vectors v (T,3) about unit axes (T,3) by angles (T,) (right hand)."""
    c, s = np.cos(ang)[:, None], np.sin(ang)[:, None]
    return v * c + np.cross(axis, v) * s + axis * _dot(axis, v)[:, None] * (1 - c)


# ------------------------------------------------------------------------------------ sphere
def wrap_sphere(p1, p2, radius: float, axis: int = -1, sign: int = 0):
    """Wrap the segment p1-p2 over a sphere of ``radius`` centred at the origin.

    ``axis``/``sign`` give the quadrant (axis -1: all). The path lies in the plane through
    the centre and both points, on the side giving the shorter arc.

    Returns (status, r1, r2, length); see the module docstring.
    """
    p1 = np.asarray(p1, float)
    p2 = np.asarray(p2, float)
    T = p1.shape[0]
    if axis >= 0:
        raise UnsupportedFeature("WrapSphere with a quadrant other than 'all'")
    R = float(radius)
    d1 = np.linalg.norm(p1, axis=-1)
    d2 = np.linalg.norm(p2, axis=-1)
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
    n, _ = _unit(np.cross(u12, _unit(p2)[0]))
    cands = []
    for p, d in ((p1, d1), (p2, d2)):
        y = _unit(-p)[0]
        ang = np.arcsin(np.clip(R / np.maximum(d, R), -1, 1))
        reach = (d * np.cos(ang))[:, None]
        ra = p + _rotate(y, n, ang) * reach
        rb = p + _rotate(y, n, -ang) * reach
        cands.append((ra, rb))
    (r1a, r1b), (r2a, r2b) = cands
    combos = [(r1a, r2a), (r1a, r2b), (r1b, r2a), (r1b, r2b)]
    dots = np.stack([_dot(_unit(x)[0], _unit(y)[0]) for x, y in combos], 1)
    pick = np.argmax(dots, 1)
    r1 = np.choose(pick[:, None], [x for x, _ in combos])
    r2 = np.choose(pick[:, None], [y for _, y in combos])
    ang = np.arccos(np.clip(_dot(_unit(r1)[0], _unit(r2)[0]), -1, 1))
    L = R * ang
    status = np.where(inside, INSIDE, np.where(hit, WRAPPED, NO_WRAP))
    ok = status == WRAPPED
    return status, np.where(ok[:, None], r1, 0.0), np.where(ok[:, None], r2, 0.0), np.where(ok, L, 0.0)


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
    cr = np.cross(v1, v2)
    den = _dot(cr, cr)
    w = p3 - p1
    t = np.linalg.det(np.stack([w, v1, cr], 1)) / den
    s = np.linalg.det(np.stack([w, v2, cr], 1)) / den
    return p1 + s[:, None] * v1, s / m1, p3 + t[:, None] * v2, t / m2


def wrap_cylinder(p1, p2, radius: float, length: float, axis: int = -1, sign: int = 0,
                  adjust_tangents: bool = False):
    """Wrap the segment p1-p2 over a cylinder of ``radius`` and ``length`` along z, centred at
    the origin, as OpenSim's ``WrapCylinder`` does.

    The tangent points are the 2-D tangents from each point to the cross-section, slid along
    the axis into the plane through p1, p2 and the cylinder's "apex" line; the surface path is
    the helix between them, of length ``sqrt((R θ)² + Δz²)``. No wrap when both tangent points
    lie beyond the cylinder's ends. ``adjust_tangents`` replays OpenSim's iterative axial
    correction of the tangent points (used when several segments or wrap objects are drawn;
    OpenSim skips it for a path's single wrap when visualization is off).

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
        uu = np.cross(dn, vv)
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
        cosa = _dot(r1am, r2bm) / (np.linalg.norm(r1am, axis=-1) * np.linalg.norm(r2bm, axis=-1))
        cosb = _dot(r1bm, r2am) / (np.linalg.norm(r1bm, axis=-1) * np.linalg.norm(r2am, axis=-1))
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
    pn = _unit(np.cross(l1, l2))[0]
    vert1 = _unit(np.cross(dn, pn))[0]
    vert2 = _unit(np.cross(pn, dn))[0]
    apex1 = axispt + R * vert1
    apex2 = axispt + R * vert2
    dd1 = _dot(mpt - apex1, mpt - apex1)
    dd2 = _dot(mpt - apex2, mpt - apex2)
    first = np.where(far, ~(dd1 < dd2), dd1 < dd2)
    apex = np.where(first[:, None], apex1, apex2)
    uu = _unit(p1 - apex)[0]
    vv = _unit(p2 - apex)[0]
    pn2 = _unit(np.cross(uu, vv))[0]
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
    if adjust_tangents:
        r1, r2 = _adjust_spiral(p1, p2, r1, r2, R, long_wrap)
    L = _spiral_length(r1, r2, R, long_wrap)
    status = np.where(inside, INSIDE, status)
    status = np.where((status >= WRAPPED) & beyond, NO_WRAP, status)
    ok = status >= WRAPPED
    return (status, np.where(ok[:, None], r1, 0.0), np.where(ok[:, None], r2, 0.0),
            np.where(ok, L, 0.0))


def _spiral_angle(r1, r2, R, long_wrap):
    u = r1.copy()
    u[:, 2] = 0.0
    v = r2.copy()
    v[:, 2] = 0.0
    th = np.arccos(np.clip(_dot(u, v) / (np.linalg.norm(u, axis=-1) * np.linalg.norm(v, axis=-1)),
                           -1, 1))
    return np.where(long_wrap, 2 * np.pi - th, th)


def _spiral_length(r1, r2, R, long_wrap):
    th = _spiral_angle(r1, r2, R, long_wrap)
    return np.hypot(R * th, r2[:, 2] - r1[:, 2])


def _spiral_point(r1, r2, R, long_wrap, t):
    """Point at fraction t (T,) of the helix from r1 to r2."""
    u = r1.copy()
    u[:, 2] = 0
    v = r2.copy()
    v[:, 2] = 0
    th = _spiral_angle(r1, r2, R, long_wrap)
    ax = _unit(np.cross(u, v))[0]
    sense = np.where(long_wrap, -1.0, 1.0)
    ang = sense * t * th
    rad = _rotate(u / R, ax, ang) * R
    base = np.zeros_like(r1)
    base[:, 2] = r1[:, 2] + t * (r2[:, 2] - r1[:, 2])
    return base + rad


def _adjust_spiral(p1, p2, r1, r2, R, long_wrap, max_iter=50, thresh=np.deg2rad(0.1)):
    """OpenSim's axial sliding of the tangent points until the straight lines meet the helix
    tangentially (within ``thresh``); each pass moves a point 1.5 times towards the
    intersection of the lines."""
    dn = np.array([0.0, 0.0, 1.0])
    r1 = r1.copy()
    r2 = r2.copy()
    for _ in range(max_iter):
        L = _spiral_length(r1, r2, R, long_wrap)
        nseg = np.maximum((L / 0.002).astype(int), 1)
        t = 1.0 / nseg
        w1 = _spiral_point(r1, r2, R, long_wrap, t)
        w2 = _spiral_point(r1, r2, R, long_wrap, 1.0 - t)
        moved = np.zeros(len(r1), bool)
        for r, p, w in ((r1, p1, w1), (r2, p2, w2)):
            pr = _unit(r - p)[0]
            rw = _unit(w - r)[0]
            a = np.arccos(np.clip(pr[:, 2], -1, 1))
            o = np.arccos(np.clip(rw[:, 2], -1, 1))
            need = np.abs(a - o) > thresh
            if not need.any():
                continue
            pa = r.copy()
            pa[:, 2] = p[:, 2]
            wa = r.copy()
            wa[:, 2] = w[:, 2]
            with np.errstate(invalid="ignore", divide="ignore"):
                _, _, inter, _ = _intersect_lines(p, w, pa, wa)
            new = r + 1.5 * (inter - r)
            ok = need & np.all(np.isfinite(new), -1)
            r[ok] = new[ok]
            moved |= ok
        if not moved.any():
            break
    return r1, r2


# ---------------------------------------------------------------------------------- dispatch
def wrap_segment(wo, p1, p2):
    """Wrap p1-p2 (T, 3), given in the wrap frame, over a compiled wrap object ``wo``
    (:class:`arthron.models.paths.WrapObjectData`). Returns (status, r1, r2, length)."""
    t = wo.type
    if t == "WrapSphere":
        return wrap_sphere(p1, p2, wo.dims["radius"], wo.axis, wo.sign)
    if t == "WrapCylinder":
        return wrap_cylinder(p1, p2, wo.dims["radius"], wo.dims.get("length", 1.0),
                             wo.axis, wo.sign)
    raise UnsupportedFeature(f"{t} '{wo.name}': arthron does not reproduce OpenSim's "
                             f"{t} wrapping yet")
