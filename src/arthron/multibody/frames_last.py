"""Inverse dynamics with frames as the *last* axis: the fast NumPy core.

The same formulation as :mod:`arthron.multibody.inverse_dynamics` (Blajer & Czaplicki 2005,
minimal form of their Eq. 2.5 in 3D, ``τ = Dᵀ(M(Dq̈ + γ) − h)``, evaluated as the recursive
Newton–Euler passes: a forward pass for node poses, velocities and accelerations, body
wrenches ``M a − h``, and ``Dᵀw`` as subtree sums), but every per-node quantity is held with
the frames last — a rotation is (3, 3, T), a vector (3, T) — so each 3×3 or 3-vector operation
on all frames is a handful of operations on contiguous rows of T numbers, and products with the
pose-independent parts (pre-transforms ``R0``, ``p0``, mass centres, inertias) are single small
matrix products. The frames-first implementation
(:func:`arthron.multibody.inverse_dynamics.inverse_dynamics` with ``core="reference"``) is the
reference; both agree to 1e-12 relative (``tests/test_frames_last.py``).

Shapes: ``q, qd, qdd`` (T, nq) in, ``τ`` (T, nq) out, as everywhere in arthron; only the
internal arrays are frames-last.
"""
from __future__ import annotations

import numpy as np

from .kinematics import Kinematics, Tree, _ellip_local, _fvals
from .loads import body_wrenches_from_loads, slice_loads

__all__ = ["inverse_dynamics_frames_last", "kinematics_frames_last", "velocity_map_transpose_frames_last",
           "FramesLastKinematics"]


def _cross(a, b):
    """a × b for (3, T) vectors."""
    a0, a1, a2 = a
    b0, b1, b2 = b
    out = np.empty(a.shape if a.shape == b.shape else (3,) + np.broadcast_shapes(a0.shape, b0.shape))
    o0, o1, o2 = out
    np.multiply(a1, b2, out=o0)                # written in place: fewer passes over memory
    o0 -= a2 * b1
    np.multiply(a2, b0, out=o1)
    o1 -= a0 * b2
    np.multiply(a0, b1, out=o2)
    o2 -= a1 * b0
    return out


def _mv(R, x):
    """R x for R (3, 3, T) and x (3, T): (3, T)."""
    return R[:, 0] * x[0] + R[:, 1] * x[1] + R[:, 2] * x[2]


def _mtv(R, x):
    """Rᵀ x for R (3, 3, T) and x (3, T): (3, T)."""
    return R[0] * x[0] + R[1] * x[1] + R[2] * x[2]


_EYE = np.eye(3)


def _is_identity(C):
    return C.shape == (3, 3) and bool((C == _EYE).all())


# Products with constant (pose-independent) factors are written out element-wise, skipping zero
# entries (pre-transforms and inertias are mostly sparse): no BLAS call, whose threads stall
# when other processes load the machine, and no work on zeros.
def _comb(rows, coefs):
    """Σ_k coefs[k] rows[k] for (…, T) rows and constant coefficients (a new array)."""
    out = None
    for x, c in zip(rows, coefs):
        if c == 0.0:
            continue
        t = x * c if c != 1.0 else x
        out = (t.copy() if t is x else t) if out is None else out + t
    return np.zeros_like(rows[0]) if out is None else out


def _rv(R, x):
    """R x for R (3, 3, T) and a constant x (3,): (3, T)."""
    return _comb((R[:, 0], R[:, 1], R[:, 2]), x)


def _rc(R, C):
    """R C for R (3, 3, T) and a constant C (3, 3): (3, 3, T), as three (3 × 3)(3 × T) products
    (below OpenBLAS's threading threshold up to T ≈ 29,000)."""
    return np.matmul(C.T, R)


def _cv(C, x):
    """C x for a constant C (3, 3) and x (3, T): (3, T)."""
    return C @ x


class FramesLastKinematics:
    """Node kinematics for T frames, frames last (see the module docstring).

    ``R[i]`` (3, 3, T), ``o[i]``, ``w[i]``, ``v[i]``, ``al[i]``, ``a[i]`` (3, T) per node, in
    ground (``v`` None when not asked for); ``hinge[i]`` per variable node:
    ``("rot", coord, k (3, T), dθ/dq (T,) or None for θ = q)`` or ``("lin", coords, Hv (3, m, T))``
    (origin velocity per unit speed of each coordinate).
    """

    def __init__(self, R, o, w, v, al, a, hinge):
        self.R, self.o, self.w, self.v, self.al, self.a, self.hinge = R, o, w, v, al, a, hinge

    def frames_first(self) -> Kinematics:
        """The same kinematics as a :class:`arthron.multibody.kinematics.Kinematics` of (T, ...)
        views (no hinge data): what :func:`body_wrenches_from_loads` reads."""
        def tr(lst, axes):
            return None if lst is None else [x.transpose(axes) for x in lst]
        return Kinematics(R=tr(self.R, (2, 0, 1)), o=tr(self.o, (1, 0)), w=tr(self.w, (1, 0)),
                          v=tr(self.v, (1, 0)), al=tr(self.al, (1, 0)), a=tr(self.a, (1, 0)))


def kinematics_frames_last(tree: Tree, q, qd=None, qdd=None, origin_velocities: bool = True
                           ) -> FramesLastKinematics:
    """Poses (and velocities, accelerations) of every node, frames last.

    Parameters
    ----------
    q, qd, qdd : (T, nq) coordinates (rad, m), speeds, accelerations; ``qdd`` needs ``qd``.
    origin_velocities : False leaves ``v`` out (None): accelerations do not need it.

    Returns
    -------
    :class:`FramesLastKinematics`; equal to :func:`arthron.multibody.kinematics.forward_kinematics`
    (transposed) to rounding.
    """
    qT = np.ascontiguousarray(np.atleast_2d(np.asarray(q, float)).T)
    T = qT.shape[1]
    want_v = qd is not None
    want_a = qdd is not None
    if want_a and not want_v:
        raise ValueError("accelerations need speeds")
    qdT = np.ascontiguousarray(np.atleast_2d(np.asarray(qd, float)).T) if want_v else None
    qddT = np.ascontiguousarray(np.atleast_2d(np.asarray(qdd, float)).T) if want_a else None
    N = len(tree.nodes)
    eye = np.zeros((3, 3, T))
    eye[0, 0] = eye[1, 1] = eye[2, 2] = 1.0
    zero = np.zeros((3, T))
    R = [eye] + [None] * (N - 1)
    o = [zero] + [None] * (N - 1)
    w = [zero] + [None] * (N - 1) if want_v else None
    want_ov = want_v and origin_velocities
    v = [zero] + [None] * (N - 1) if want_ov else None
    al = [zero] + [None] * (N - 1) if want_a else None
    a = [zero] + [None] * (N - 1) if want_a else None
    order = 2 if want_a else 1
    hinge = {}
    for i in range(1, N):
        nd = tree.nodes[i]
        p = nd.parent
        Rp = R[p]
        Rf = Rp if _is_identity(nd.R0) else _rc(Rp, nd.R0)            # Rp R0
        if nd.p0.any():
            r = _rv(Rp, nd.p0)                                           # Rp p0
            of = o[p] + r
        else:
            r = None
            of = o[p]
        if want_v:
            wp = w[p]
            if want_ov:
                vf = v[p] if r is None else v[p] + _cross(wp, r)
            if want_a:
                alp = al[p]
                af = a[p] if r is None else a[p] + _cross(alp, r) + _cross(wp, _cross(wp, r))
        kind = nd.kind
        if kind == "fixed":
            R[i], o[i] = Rf, of
            if want_v:
                w[i] = wp
                if want_ov:
                    v[i] = vf
                if want_a:
                    al[i], a[i] = alp, af
            continue
        if kind == "rot":
            c = nd.coord
            if nd.func is None:                                         # θ = q: θ' = 1, θ'' = 0
                th, d1, d2 = qT[c], None, None
            else:
                th, d1, d2 = _fvals(nd.func, qT[c], order)
            cs, sn = np.cos(th), np.sin(th)
            Ri = np.empty((3, 3, T))                                    # Rf Rz(θ), written in
            tmp = sn * Rf[:, 1]                                         # place (fewer passes)
            np.multiply(Rf[:, 0], cs, out=Ri[:, 0])
            Ri[:, 0] += tmp                                             # cs Rf0 + sn Rf1
            np.multiply(Rf[:, 1], cs, out=Ri[:, 1])
            np.multiply(Rf[:, 0], sn, out=tmp)
            Ri[:, 1] -= tmp                                             # cs Rf1 − sn Rf0
            Ri[:, 2] = Rf[:, 2]
            R[i], o[i] = Ri, of
            k = Ri[:, 2]                                                # rotation axis in ground
            hinge[i] = ("rot", c, k, d1)
            if want_v:
                thd = qdT[c] if d1 is None else d1 * qdT[c]
                wrel = k * thd
                w[i] = wp + wrel
                if want_ov:
                    v[i] = vf
                if want_a:
                    thdd = qddT[c] if d1 is None else d1 * qddT[c] + d2 * qdT[c] ** 2
                    al[i] = alp + k * thdd + _cross(wp, wrel)
                    a[i] = af
            continue
        if kind == "trans":
            cl = list(nd.coords)
            pg = np.zeros((3, T))
            Hv = np.zeros((3, len(cl), T))
            bias_g = None
            for c, f, ax in nd.terms:
                val, d1, d2 = _fvals(f, qT[c], order)
                RA = _rv(Rf, ax)                                        # axis in ground (3, T)
                pg += val * RA
                Hv[:, cl.index(c)] += d1 * RA
                if want_a and f is not None:
                    b = (d2 * qdT[c] ** 2) * RA
                    bias_g = b if bias_g is None else bias_g + b
        else:  # ellip
            c0, c1 = nd.coords
            cl = [c0, c1]
            if want_a:
                pl, Jl, biasl = _ellip_local(nd.radii, qT[c0], qT[c1], qdT[c0], qdT[c1])
                bias_g = _mv(Rf, biasl.T)
            else:
                pl, Jl, _ = _ellip_local(nd.radii, qT[c0], qT[c1])
                bias_g = None
            pg = _mv(Rf, pl.T)
            Jl = Jl.transpose(1, 2, 0)                                  # (3, 2, T)
            Hv = np.stack([_mv(Rf, Jl[:, 0]), _mv(Rf, Jl[:, 1])], 1)
        R[i] = Rf
        o[i] = of + pg
        hinge[i] = ("lin", tuple(cl), Hv)
        if want_v:
            vrel = Hv[:, 0] * qdT[cl[0]]
            for j in range(1, len(cl)):
                vrel = vrel + Hv[:, j] * qdT[cl[j]]
            w[i] = wp
            if want_ov:
                v[i] = vf + _cross(wp, pg) + vrel
            if want_a:
                accrel = Hv[:, 0] * qddT[cl[0]]
                for j in range(1, len(cl)):
                    accrel = accrel + Hv[:, j] * qddT[cl[j]]
                if bias_g is not None:
                    accrel = accrel + bias_g
                al[i] = alp
                a[i] = (af + _cross(alp, pg) + _cross(wp, _cross(wp, pg))
                        + 2 * _cross(wp, vrel) + accrel)
    return FramesLastKinematics(R, o, w, v, al, a, hinge)


#: frames per pass of :func:`inverse_dynamics_frames_last`: longer trials are solved in
#: near-equal blocks of at most this many frames (the work arrays then stay closer to the caches:
#: 10,000 Gait2354 frames ~13 % faster in two blocks than in one; same numbers)
FRAME_BLOCK = 5000


def inverse_dynamics_frames_last(tree: Tree, q, qd, qdd, loads=(), applied=None) -> np.ndarray:
    """Generalized forces ``τ = Dᵀ(M(Dq̈ + γ) − h)`` for T frames, computed frames last.

    Parameters and result as :func:`arthron.multibody.inverse_dynamics.inverse_dynamics`:
    q, qd, qdd (T, nq) (rad, m, per s, per s²); loads: :class:`ExternalLoad` list sampled at the
    T frames; applied: (T, nq) generalized forces moved to the right-hand side. Returns (T, nq)
    N·m or N, conjugate to q̇. Trials longer than :data:`FRAME_BLOCK` frames are solved in
    blocks.
    """
    q = np.atleast_2d(np.asarray(q, float))
    qd = np.atleast_2d(np.asarray(qd, float))
    qdd = np.atleast_2d(np.asarray(qdd, float))
    T = q.shape[0]
    n = -(-T // FRAME_BLOCK)
    if n <= 1:
        return _inverse_dynamics_block(tree, q, qd, qdd, loads, applied)
    size = -(-T // n)
    out = np.empty((T, tree.nq))
    loads = list(loads or ())
    for a in range(0, T, size):
        s = slice(a, a + size)
        out[s] = _inverse_dynamics_block(tree, q[s], qd[s], qdd[s], slice_loads(loads, s),
                                         None if applied is None else np.asarray(applied)[s])
    return out


def _inverse_dynamics_block(tree, q, qd, qdd, loads, applied):
    kin = kinematics_frames_last(tree, q, qd, qdd, origin_velocities=False)
    T = kin.o[0].shape[1]
    nb = tree.nb
    g = np.asarray(tree.gravity, float)
    F = np.empty((nb, 3, T))
    G = np.empty((nb, 3, T))
    Mc = np.empty((nb, 3, T))
    com = np.empty((nb, 3, T))
    for b in range(nb):
        n = tree.body_node[b]
        Rb, wb_, alb_ = kin.R[n], kin.w[n], kin.al[n]
        rc = _rv(Rb, tree.com[b])                                       # R c  (3, T)
        aC = kin.a[n] + _cross(alb_, rc) + _cross(wb_, _cross(wb_, rc))
        F[b] = tree.mass[b] * (aC - g[:, None])                        # m (a_C − g)
        I = tree.inertia[b]
        wl = _mtv(Rb, wb_)                                              # body frame
        all_ = _mtv(Rb, alb_)
        Mc[b] = _mv(Rb, _cv(I, all_) + _cross(wl, _cv(I, wl)))          # I α + ω × I ω, ground
        com[b] = kin.o[n] + rc
    loads = list(loads or ())
    if loads:
        Fe, Me = body_wrenches_from_loads(tree, kin.frames_first(), loads)
        F -= Fe.transpose(1, 2, 0)
        Mc -= Me.transpose(1, 2, 0)
    for b in range(nb):
        G[b] = Mc[b] + _cross(com[b], F[b])                             # about the ground origin
    tau = _transpose_map(tree, kin, F, G)
    if applied is not None:
        tau = tau - applied
    return tau


def _transpose_map(tree, kin, F, G):
    """``Dᵀw`` from forces F at the mass centres and moments G about the ground origin, both
    (nb, 3, T) and overwritten by their subtree sums (element-wise, leaves first); then each
    hinge's partial velocities. Returns (T, nq)."""
    T = F.shape[2]
    hn = tree.hinges.nodes
    tau = np.zeros((tree.nq, T))
    if hn:
        for b in tree.body_order[::-1]:                                 # subtree sums
            p = tree.body_parent[b]
            if p >= 0:
                F[p] += F[b]
                G[p] += G[b]
        nbody = tree.hinges.node_body                                   # a hinge moves its
        for j, i in enumerate(hn):                                      # joint's child subtree
            h = kin.hinge[i]
            Fj = F[nbody[j]]
            Mj = G[nbody[j]] - _cross(kin.o[i], Fj)                     # about the node origin
            if h[0] == "rot":
                _, c, k, d1 = h
                kM = k[0] * Mj[0] + k[1] * Mj[1] + k[2] * Mj[2]
                tau[c] += kM if d1 is None else d1 * kM
            else:
                _, cl, Hv = h
                for m, c in enumerate(cl):
                    tau[c] += Hv[0, m] * Fj[0] + Hv[1, m] * Fj[1] + Hv[2, m] * Fj[2]
    return np.ascontiguousarray(tau.T)


def velocity_map_transpose_frames_last(tree: Tree, kin: FramesLastKinematics, F, M) -> np.ndarray:
    """``Dᵀw`` for body wrenches w = (F, M) on the frames-last kinematics (same result as
    :func:`arthron.multibody.kinematics.apply_velocity_map_transpose` to 1e-12 relative).

    Parameters
    ----------
    kin : :func:`kinematics_frames_last` of the T frames (poses suffice)
    F : (T, nb, 3) forces at the body mass centres (N), M : (T, nb, 3) moments (N·m), ground.

    Returns
    -------
    (T, nq) generalized forces ``Σ_b (∂v_C/∂q̇)ᵀ F_b + (∂ω/∂q̇)ᵀ M_b``.
    """
    nb = tree.nb
    Ft = np.ascontiguousarray(np.asarray(F, float).transpose(1, 2, 0))
    Gt = np.ascontiguousarray(np.asarray(M, float).transpose(1, 2, 0))
    for b in range(nb):
        n = tree.body_node[b]
        com = kin.o[n] + _rv(kin.R[n], tree.com[b])
        Gt[b] += _cross(com, Ft[b])                                     # about the ground origin
    return _transpose_map(tree, kin, Ft, Gt)
