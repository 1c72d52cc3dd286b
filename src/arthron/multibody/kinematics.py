"""Kinematics of a compiled tree: poses, velocities, accelerations and velocity maps for T frames.

The tree (:mod:`arthron.multibody.tree`: nodes, topology) is compiled once by
:func:`compile_model`; this module holds the recursions over it.

Velocities follow Blajer & Czaplicki 2005, in 3D: each body's absolute velocity
``v = [v_C; ω]`` (mass-center velocity and angular velocity, both in ground) is
``v = D(q) q̇`` and its acceleration ``a = D(q) q̈ + γ(q, q̇)`` (their Eq. 2.3 form). ``D`` is
available explicitly (:func:`velocity_map`) and as the transposed operator ``Dᵀ w`` computed by
a backward sum over subtrees (:func:`apply_velocity_map_transpose`), which is what inverse
dynamics uses.

Frames are the leading axis of every array: ``q`` is (T, nq) in the model's coordinate order
(JointSet order), radians and metres.
"""
from __future__ import annotations

import numpy as np

from ..errors import OptionError
from ..geometry.spatial import cross
from .tree import Node, Tree, check_q, compile_model, default_coordinates, warn_degrees

__all__ = ["Tree", "Node", "compile_model", "forward_kinematics", "Kinematics", "velocity_map",
           "apply_velocity_map_transpose", "marker_positions", "default_coordinates",
           "station_positions", "qdot_from_speeds", "mobility_forces"]


# ----------------------------------------------------------------------------- node motions
def _fvals(func, x, order):
    """θ, θ', θ'' of an axis function (identity when func is None)."""
    if func is None:
        return x, np.ones_like(x), np.zeros_like(x)
    return func.value_and_derivatives(x, order)


def _ellip_local(radii, q0, q1, qd0=None, qd1=None):
    """Ellipsoid mobilizer translation p (T,3), its Jacobian (T,3,2) w.r.t. (q0, q1), and the
    bias p̈ at q̈ = 0.

    Simbody's Ellipsoid mobilizer places the M origin at ``p = (a n_x, b n_y, c n_z)`` where
    ``n`` is M's z axis in F (a point on the ellipsoid surface; it equals the point with normal
    n only on a sphere). With ``R = Rx(q0) Ry(q1) Rz(q2)``,
    ``n = (sin q1, -sin q0 cos q1, cos q0 cos q1)`` does not depend on q2.
    """
    s0, c0, s1, c1 = np.sin(q0), np.cos(q0), np.sin(q1), np.cos(q1)
    r = np.asarray(radii, float)
    p = r * np.stack([s1, -s0 * c1, c0 * c1], -1)
    z = np.zeros_like(q0)
    J = np.empty(q0.shape + (3, 2))
    J[:, :, 0] = r * np.stack([z, -c0 * c1, -s0 * c1], -1)
    J[:, :, 1] = r * np.stack([c1, s0 * s1, -c0 * s1], -1)
    bias = None
    if qd0 is not None:
        d00 = np.stack([z, s0 * c1, -c0 * c1], -1)
        d01 = np.stack([z, c0 * s1, s0 * s1], -1)
        d11 = np.stack([-s1, s0 * c1, -c0 * c1], -1)
        bias = r * (d00 * (qd0 ** 2)[:, None] + 2 * d01 * (qd0 * qd1)[:, None]
                    + d11 * (qd1 ** 2)[:, None])
    return p, J, bias


def _rmul(A, C):
    """A @ C for a stack A (T, 3, 3) and one constant matrix C (3, k): a single GEMM."""
    T = A.shape[0]
    if C.shape == (3, 3) and (C == np.eye(3)).all():
        return A
    return (np.ascontiguousarray(A).reshape(-1, 3) @ C).reshape(T, 3, C.shape[1])


def _rvec(A, x):
    """A @ x for a stack A (T, 3, 3) and one constant vector x (3,): (T, 3)."""
    return (np.ascontiguousarray(A).reshape(-1, 3) @ x).reshape(A.shape[0], 3)


def _rotate_about_z(A, th):
    """A Rz(θ) for stacks A (T, 3, 3) and angles θ (T,)."""
    c, s = np.cos(th)[:, None], np.sin(th)[:, None]
    out = np.empty_like(A)
    a0, a1 = A[:, :, 0], A[:, :, 1]
    out[:, :, 0] = c * a0 + s * a1
    out[:, :, 1] = c * a1 - s * a0
    out[:, :, 2] = A[:, :, 2]
    return out


def _mv(R, x):
    """R @ x for stacks of 3×3 matrices (T, 3, 3) and vectors (T, 3) or (3,)."""
    if x.ndim == 1:
        return R @ x
    return (R @ x[..., None])[..., 0]


class Kinematics:
    """Node (and body) kinematics for T frames, all in ground.

    R : (T, N, 3, 3), o : (T, N, 3) node origins; when velocities were asked for:
    w : (T, N, 3) angular velocity, v : (T, N, 3) origin velocity; when accelerations were asked:
    al : (T, N, 3) angular acceleration, a : (T, N, 3) origin acceleration. ``hinge`` holds,
    per variable node, its ground-frame partial velocities (used by Dᵀ and by D).

    The recursion produces one contiguous array per node; the (T, N, ...) arrays above are
    stacked on first access, and :meth:`node` / the ``body_*`` helpers avoid stacking all nodes.
    """

    _FIELDS = ("R", "o", "w", "v", "al", "a")

    def __init__(self, R, o, w=None, v=None, al=None, a=None, hinge=None):
        self._lists = {}
        self._arrays = {}
        for k, x in zip(self._FIELDS, (R, o, w, v, al, a)):
            if isinstance(x, list):
                self._lists[k] = x
            elif x is not None:
                self._arrays[k] = x
        self.hinge = hinge

    def _get(self, k):
        if k in self._arrays:
            return self._arrays[k]
        lst = self._lists.get(k)
        if lst is None:
            return None
        arr = np.stack(lst, 1)
        self._arrays[k] = arr
        return arr

    R = property(lambda self: self._get("R"))
    o = property(lambda self: self._get("o"))
    w = property(lambda self: self._get("w"))
    v = property(lambda self: self._get("v"))
    al = property(lambda self: self._get("al"))
    a = property(lambda self: self._get("a"))

    def node(self, k: str, i: int):
        """Field ``k`` (``"R"``, ``"o"``, ``"w"`` ...) of node i: (T, 3, 3) or (T, 3)."""
        if k in self._lists:
            return self._lists[k][i]
        return self._arrays[k][:, i]

    def nodes(self, k: str, idx):
        """Field ``k`` of the listed nodes, stacked: (T, len(idx), ...)."""
        if k in self._arrays or k not in self._lists:
            return self._get(k)[:, idx]
        lst = self._lists[k]
        return np.stack([lst[i] for i in idx], 1)

    def body_R(self, tree):
        return self.nodes("R", tree.body_node)

    def body_origin(self, tree):
        return self.nodes("o", tree.body_node)

    def body_com(self, tree):
        return self.body_origin(tree) + np.einsum("tbij,bj->tbi", self.body_R(tree), tree.com)


def forward_kinematics(tree: Tree, q, qd=None, qdd=None) -> Kinematics:
    """Poses (and velocities, accelerations) of every node for T frames.

    Parameters
    ----------
    q : (T, nq) or (nq,) coordinates (rad, m), model order.
    qd, qdd : same shape, optional: speeds and accelerations. ``qdd`` needs ``qd``; passing
        ``qdd = 0`` gives the bias accelerations γ.

    Returns
    -------
    Kinematics (see its docstring). ``hinge[n]`` = (coords, Hω (T,3,k), Hv (T,3,k)): the
    angular and origin-velocity contribution of node n's motion per unit speed of each of its
    coordinates, in ground.
    """
    q = check_q(tree, q)
    T = q.shape[0]
    N = len(tree.nodes)
    want_v = qd is not None
    want_a = qdd is not None
    if want_v:
        qd = check_q(tree, qd, "qd")
    if want_a:
        if not want_v:
            raise OptionError("accelerations qdd need speeds qd")
        qdd = check_q(tree, qdd, "qdd")
    # Per-node contiguous arrays while recursing (stacked once at the end).
    R = [np.broadcast_to(np.eye(3), (T, 3, 3))] + [None] * (N - 1)
    o = [np.zeros((T, 3))] + [None] * (N - 1)
    w = [np.zeros((T, 3))] + [None] * (N - 1) if want_v else None
    v = [np.zeros((T, 3))] + [None] * (N - 1) if want_v else None
    al = [np.zeros((T, 3))] + [None] * (N - 1) if want_a else None
    a = [np.zeros((T, 3))] + [None] * (N - 1) if want_a else None
    hinge = {}
    for i in range(1, N):
        nd = tree.nodes[i]
        p = nd.parent
        Rp = R[p]
        Rf = _rmul(Rp, nd.R0)
        if nd.p0.any():
            r = _rvec(Rp, nd.p0)
            of = o[p] + r
        else:
            r = None
            of = o[p]
        if want_v:
            wp = w[p]
            vf = v[p] if r is None else v[p] + cross(wp, r)
            if want_a:
                alp = al[p]
                af = a[p] if r is None else a[p] + cross(alp, r) + cross(wp, cross(wp, r))
        kind = nd.kind
        if kind == "fixed":
            R[i], o[i] = Rf, of
            if want_v:
                w[i], v[i] = wp, vf
                if want_a:
                    al[i], a[i] = alp, af
            continue
        if kind == "rot":
            x = q[:, nd.coord]
            th, d1, d2 = _fvals(nd.func, x, 2 if want_a else 1)
            R[i] = _rotate_about_z(Rf, th)           # Rf Rz(θ)
            o[i] = of
            k = Rf[:, :, 2]                          # the rotation axis (local z) in ground
            Hw = (k * d1[:, None])[:, :, None]
            hinge[i] = ((nd.coord,), Hw, np.zeros_like(Hw))
            if want_v:
                thd = d1 * qd[:, nd.coord]
                wrel = k * thd[:, None]
                w[i] = wp + wrel
                v[i] = vf
                if want_a:
                    thdd = d2 * qd[:, nd.coord] ** 2 + d1 * qdd[:, nd.coord]
                    al[i] = alp + k * thdd[:, None] + cross(wp, wrel)
                    a[i] = af
            continue
        if kind == "trans":
            # axes in ground once: (T, 3, m); then p, its Jacobian and bias are sums
            RA = _rmul(Rf, np.column_stack([ax for _, _, ax in nd.terms]))
            cl = list(nd.coords)
            pg = np.zeros((T, 3))
            Hv = np.zeros((T, 3, len(cl)))
            bias_g = np.zeros((T, 3)) if want_a else None
            for j, (c, f, ax) in enumerate(nd.terms):
                val, d1, d2 = _fvals(f, q[:, c], 2 if want_a else 1)
                pg += val[:, None] * RA[:, :, j]
                Hv[:, :, cl.index(c)] += d1[:, None] * RA[:, :, j]
                if want_a and f is not None:
                    bias_g += (d2 * qd[:, c] ** 2)[:, None] * RA[:, :, j]
        else:  # ellip
            c0, c1 = nd.coords
            if want_a:
                pl, Jl, biasl = _ellip_local(nd.radii, q[:, c0], q[:, c1], qd[:, c0], qd[:, c1])
                bias_g = _mv(Rf, biasl)
            else:
                pl, Jl, _ = _ellip_local(nd.radii, q[:, c0], q[:, c1])
            cl = [c0, c1]
            pg = _mv(Rf, pl)
            Hv = Rf @ Jl
        R[i] = Rf
        o[i] = of + pg
        hinge[i] = (tuple(cl), np.zeros_like(Hv), Hv)
        if want_v:
            vrel = (Hv @ qd[:, cl][..., None])[..., 0]
            w[i] = wp
            v[i] = vf + cross(wp, pg) + vrel
            if want_a:
                accrel = (Hv @ qdd[:, cl][..., None])[..., 0]
                if bias_g is not None:
                    accrel = accrel + bias_g
                al[i] = alp
                a[i] = (af + cross(alp, pg) + cross(wp, cross(wp, pg))
                        + 2 * cross(wp, vrel) + accrel)
    return Kinematics(R=R, o=o, w=w, v=v, al=al, a=a, hinge=hinge)


def velocity_map(tree: Tree, q, kin: Kinematics | None = None, point="com"):
    """The velocity map D(q) of Blajer & Czaplicki 2005: body velocities per unit coordinate speed.

    Parameters
    ----------
    q : (T, nq)
    point : ``"com"`` (Blajer & Czaplicki's v_C) or ``"origin"`` (body frame origins).

    Returns
    -------
    D : (T, nb, 6, nq): rows 0-2 the linear velocity of the body point, rows 3-5 the angular
        velocity, both in ground.
    """
    q = np.atleast_2d(np.asarray(q, float))
    if kin is None:
        kin = forward_kinematics(tree, q)
    T = q.shape[0]
    anc = tree.node_ancestors
    pts = kin.body_com(tree) if point == "com" else kin.body_origin(tree)
    D = np.zeros((T, tree.nb, 6, tree.nq))
    for b in range(tree.nb):
        n = tree.body_node[b]
        for m in anc[n] + [n]:
            h = kin.hinge.get(m)
            if h is None:
                continue
            cl, Hw, Hv = h
            r = pts[:, b] - kin.o[:, m]
            for k, c in enumerate(cl):
                D[:, b, 3:, c] += Hw[:, :, k]
                D[:, b, :3, c] += Hv[:, :, k] + cross(Hw[:, :, k], r)
    return D


def apply_velocity_map_transpose(tree: Tree, kin: Kinematics, F, M, com=None):
    """``Dᵀ w`` for body wrenches w = (F, M) without forming D (a backward sum over subtrees).

    Parameters
    ----------
    F : (T, nb, 3) forces at the body mass centers, ground frame (N).
    M : (T, nb, 3) moments (N·m), ground frame.
    com : (T, nb, 3) body mass centers in ground, if already known.

    Returns
    -------
    (T, nq) generalized forces ``Σ_b (∂v_C/∂q̇)ᵀ F_b + (∂ω/∂q̇)ᵀ M_b``.
    """
    T = F.shape[0]
    hn, S = tree.hinges.nodes, tree.hinges.subtree
    if not hn:
        return np.zeros((T, tree.nq))
    if com is None:
        com = kin.body_com(tree)
    G = M + cross(com, F)                    # moments about the ground origin
    # subtree sums for every hinge node at once: (nh, nb) @ (nb, T·3)
    Fs = (S.T @ np.ascontiguousarray(F.transpose(1, 0, 2)).reshape(tree.nb, -1)).reshape(-1, T, 3)
    Gs = (S.T @ np.ascontiguousarray(G.transpose(1, 0, 2)).reshape(tree.nb, -1)).reshape(-1, T, 3)
    tau = np.zeros((T, tree.nq))
    for j, i in enumerate(hn):
        cl, Hw, Hv = kin.hinge[i]
        Fj = Fs[j]
        Mj = Gs[j] - cross(kin.node("o", i), Fj)   # subtree moment about the node origin
        if tree.nodes[i].kind == "rot":
            tau[:, cl[0]] += np.einsum("ti,ti->t", Hw[:, :, 0], Mj)
        else:
            tau[:, list(cl)] += np.einsum("tik,ti->tk", Hw, Mj) + np.einsum("tik,ti->tk", Hv, Fj)
    return tau


def marker_positions(tree: Tree, q, names=None, kin: Kinematics | None = None) -> tuple[list, np.ndarray]:
    """Marker positions in ground.

    Returns
    -------
    names : list[str], positions : (T, n_markers, 3) metres.

    Parameters: q (T, nq) or (nq,), rad / m, model order; names: marker names (default all);
    kin: poses already computed for ``q``. OptionError for a bad ``q`` shape or an unknown name.
    """
    if kin is None:
        kin = forward_kinematics(tree, q)
    names = list(tree.markers) if names is None else list(names)
    unknown = [n for n in names if n not in tree.markers]
    if unknown:
        raise OptionError(f"no marker {', '.join(map(repr, unknown[:5]))} in the model (markers: "
                          f"{', '.join(list(tree.markers)[:10])}{' ...' if len(tree.markers) > 10 else ''})")
    bi = np.array([tree.markers[n][0] for n in names], int)
    loc = np.array([tree.markers[n][1] for n in names], float).reshape(-1, 3)
    return names, station_positions(tree, kin, bi, loc)


def station_positions(tree: Tree, kin: Kinematics, bodies, locations) -> np.ndarray:
    """Ground positions (T, n, 3) of points fixed on bodies (index -1 = ground)."""
    bodies = np.asarray(bodies, int)
    nodes = np.where(bodies < 0, 0, tree.body_node[np.maximum(bodies, 0)])
    return kin.o[:, nodes] + np.einsum("tnij,nj->tni", kin.R[:, nodes], np.asarray(locations, float))


# ----------------------------------------------------------------------------- Simbody mobilities
def _euler_xyz_rate_matrix(q0, q1):
    """A(q) with ω_F = A q̇ for body-fixed X-Y-Z angles: columns x̂, Rx(q0) ŷ, Rx(q0)Ry(q1) ẑ.

    Shapes: q0, q1 (T,) -> (T, 3, 3).
    """
    c0, s0, c1, s1 = np.cos(q0), np.sin(q0), np.cos(q1), np.sin(q1)
    A = np.zeros(q0.shape + (3, 3))
    A[:, 0, 0] = 1.0
    A[:, 1, 1] = c0
    A[:, 2, 1] = s0
    A[:, 0, 2] = s1
    A[:, 1, 2] = -s0 * c1
    A[:, 2, 2] = c0 * c1
    return A


def qdot_from_speeds(tree: Tree, q, u, udot=None):
    """Coordinate rates from Simbody generalized speeds (and accelerations).

    For coordinates in ``tree.angular_velocity_groups`` the speeds are ``u = ω_FM`` (in F), so
    ``q̇ = A(q)⁻¹ u`` and ``q̈ = A⁻¹ (u̇ − Ȧ q̇)``; every other coordinate has ``q̇ = u``.
    This is how OpenSim's tools read a coordinates file for such joints: they set each
    coordinate's *speed* (u) to the spline derivative of its value.

    Parameters
    ----------
    q, u : (T, nq); udot : (T, nq) or None

    Returns
    -------
    qd : (T, nq), and qdd : (T, nq) when ``udot`` is given.
    """
    q = np.atleast_2d(q)
    qd = np.array(u, float, copy=True)
    qdd = None if udot is None else np.array(udot, float, copy=True)
    for g in tree.angular_velocity_groups:
        A = _euler_xyz_rate_matrix(q[:, g[0]], q[:, g[1]])
        qg = np.linalg.solve(A, np.asarray(u)[:, g][..., None])[..., 0]
        qd[:, g] = qg
        if udot is not None:
            c0, s0, c1, s1 = np.cos(q[:, g[0]]), np.sin(q[:, g[0]]), np.cos(q[:, g[1]]), np.sin(q[:, g[1]])
            d0, d1 = qg[:, 0], qg[:, 1]
            Ad = np.zeros_like(A)                      # dA/dt
            Ad[:, 1, 1] = -s0 * d0
            Ad[:, 2, 1] = c0 * d0
            Ad[:, 0, 2] = c1 * d1
            Ad[:, 1, 2] = -c0 * c1 * d0 + s0 * s1 * d1
            Ad[:, 2, 2] = -s0 * c1 * d0 - c0 * s1 * d1
            rhs = np.asarray(udot)[:, g] - np.einsum("tij,tj->ti", Ad, qg)
            qdd[:, g] = np.linalg.solve(A, rhs[..., None])[..., 0]
    return qd if udot is None else (qd, qdd)


def mobility_forces(tree: Tree, q, tau):
    """Generalized forces conjugate to Simbody's speeds u from those conjugate to q̇.

    ``τ_u = A⁻ᵀ τ_q`` for ``tree.angular_velocity_groups`` (moments about the F axes), the
    identity elsewhere; this is what OpenSim reports for those coordinates.

    Shapes: q, tau (T, nq) -> (T, nq).
    """
    q = np.atleast_2d(q)
    out = np.array(tau, float, copy=True)
    for g in tree.angular_velocity_groups:
        A = _euler_xyz_rate_matrix(q[:, g[0]], q[:, g[1]])
        out[:, g] = np.linalg.solve(np.swapaxes(A, 1, 2), np.asarray(tau)[:, g][..., None])[..., 0]
    return out
