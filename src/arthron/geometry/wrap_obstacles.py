"""The obstacle-set method (Garner & Pandy 2000): sphere, single cylinder and double cylinder
obstacles, vectorized over frames. OpenSim 4.6 cannot evaluate its WrapSphereObst /
WrapCylinderObst / WrapDoubleCylinderObst, so these are checked against closed-form cases.
"""
from __future__ import annotations

import numpy as np

from .spatial import cross as _cross
from .wrap_common import INSIDE, NO_WRAP, WRAPPED, _dot, _norm, _unit


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
