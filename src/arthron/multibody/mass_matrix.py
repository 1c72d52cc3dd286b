"""The generalized mass matrix ``Dᵀ M D`` by the composite-rigid-body algorithm (CRBA).

Blajer & Czaplicki 2005, Eq. 2.9: ``M(q) = Dᵀ M D`` with ``M = blockdiag(m_b I₃, I_C,b)``.
Formed without D: every variable node's spatial columns meet the composite (subtree) spatial
inertias of its descendants (Featherstone's CRBA), for T frames at once with the frames on the
last axis of the work arrays (every operation is on contiguous (T,) rows).
"""
from __future__ import annotations

import numpy as np

from .frames_last import FramesLastKinematics, kinematics_frames_last
from .kinematics import Tree

__all__ = ["mass_matrix", "node_mass_matrix"]


def mass_matrix(tree: Tree, q, kin=None) -> np.ndarray:
    """The generalized mass matrix ``Dᵀ M D`` (Blajer & Czaplicki 2005, Eq. 2.9) by the composite-rigid-body
    algorithm, for T frames at once, without forming D.

    Every variable node n of the tree moves its subtree with spatial velocity columns
    ``Φ_n = [H_ω; H_v + (o_n − p) × H_ω]`` (angular; velocity of the point at p, a point fixed in
    ground at the root body's origin of the frame), and
    ``M = Σ_{m ancestor-or-self of n} Φ_mᵀ I^c_n Φ_n (+ transpose)``, with ``I^c_n`` the spatial
    inertia of n's subtree about p: ``[[J, [h]×], [−[h]×, m]]``, J the
    rotational inertia about p, h the first mass moment, summed over subtrees leaves first.

    Parameters
    ----------
    q : (T, nq); kin : optional kinematics of q (velocities not needed), frames-last
        (:func:`arthron.multibody.frames_last.kinematics_frames_last`, the default) or
        frames-first (:class:`arthron.multibody.kinematics.Kinematics`)

    Returns
    -------
    (T, nq, nq) in model coordinate order (kg·m², kg·m, kg).
    """
    q = np.atleast_2d(np.asarray(q, float))
    kin = kin or kinematics_frames_last(tree, q)
    lay = tree.hinges
    T, nq = q.shape[0], tree.nq
    Mk = node_mass_matrix(tree, kin, T)
    if lay.identity:
        out = np.empty((nq, nq, T))
        out[lay.perm[:, None], lay.perm[None, :]] = Mk
    else:
        Y = (lay.P.T @ Mk.reshape(Mk.shape[0], -1)).reshape(nq, -1, T)
        out = np.einsum("kbt,bl->klt", Y, lay.P)
    return np.ascontiguousarray(out.transpose(2, 0, 1))


def node_mass_matrix(tree: Tree, kin, T: int, lower: bool = False) -> np.ndarray:
    """The CRBA mass matrix in node-column space, frames last: (K, K, T) (see
    :func:`mass_matrix`). Columns are ordered parents first, so the pairs (descendant,
    ancestor) are the lower triangle; ``lower=True`` fills only that (and the diagonal blocks).
    ``kin`` frames-first or frames-last (:class:`~arthron.multibody.frames_last.FramesLastKinematics`,
    read without transposing)."""
    lay = tree.hinges
    nb = tree.nb
    K = lay.P.shape[0]
    if K == 0:
        return np.zeros((0, 0, T))
    # Frames on the last axis from here on: every operation is on contiguous (T,) rows.
    nodes = tree.body_node
    fl = isinstance(kin, FramesLastKinematics)

    def origin(n):                                                                # (3, T)
        return kin.o[n] if fl else kin.node("o", n).T

    R = np.empty((nb, 3, 3, T))
    c = np.empty((nb, 3, T))
    for b, n in enumerate(nodes):
        R[b] = kin.R[n] if fl else kin.node("R", n).transpose(1, 2, 0)
        c[b] = origin(n)
    # Spatial quantities about a point moving with the root body (its origin, per frame) rather
    # than the ground origin: the same M, without the cancellation m|c|² − … far from the origin.
    ref = origin(nodes[tree.body_order[0]]).copy()                                # (3, T)
    c += np.einsum("bijt,bj->bit", R, tree.com) - ref                             # mass centres
    m = tree.mass
    RI = np.einsum("bijt,bjl->bilt", R, tree.inertia)
    J = np.empty_like(R)                                                          # I_C in ground
    for i in range(3):
        for k in range(i, 3):
            J[:, i, k] = RI[:, i, 0] * R[:, k, 0] + RI[:, i, 1] * R[:, k, 1] + RI[:, i, 2] * R[:, k, 2]
            if k != i:
                J[:, k, i] = J[:, i, k]
    J -= m[:, None, None, None] * (c[:, :, None] * c[:, None, :])
    mc2 = m[:, None] * np.einsum("bit,bit->bt", c, c)
    for i in range(3):
        J[:, i, i] += mc2                                                         # about p
    # composite (subtree) sums per body, leaves first; a hinge node's subtree is its joint's
    # child body's (element-wise adds: no BLAS call, which other processes' threads can stall)
    hb = m[:, None, None] * c
    ms = m.copy()
    for b in tree.body_order[::-1]:
        p = tree.body_parent[b]
        if p >= 0:
            J[p] += J[b]
            hb[p] += hb[b]
            ms[p] += ms[b]
    nh = len(lay.nodes)
    Jc, hc, mcs = J[lay.node_body], hb[lay.node_body], ms[lay.node_body]
    Phi = np.empty((K, 6, T))
    for j, n in enumerate(lay.nodes):
        sl = lay.cols[j]
        if fl:
            h = kin.hinge[n]
            if h[0] == "rot":                                            # H_ω = k θ'
                w = (h[2] if h[3] is None else h[2] * h[3])[None]
            else:                                                        # H_ω = 0, H_v
                Phi[sl, :3] = 0.0
                Phi[sl, 3:] = h[2].transpose(1, 0, 2)
                continue
        else:
            _, Hw, Hv = kin.hinge[n]
            w = Hw.transpose(2, 1, 0)
        Phi[sl, :3] = w
        if tree.nodes[n].kind == "rot":
            Phi[sl, 3:] = _cross_tl((origin(n) - ref)[None], w)          # o × H_ω (H_v = 0)
        else:
            Phi[sl, 3:] = Hv.transpose(2, 1, 0)                          # H_ω = 0
    Mk = np.zeros((K, K, T))
    for j in range(nh):
        sl = lay.cols[j]
        own = np.arange(sl.start, sl.stop)
        w, v = Phi[sl, :3], Phi[sl, 3:]
        Jj, hj = Jc[j], hc[j][None]
        F = np.empty((own.size, 6, T))
        F[:, :3] = (Jj[None, :, 0] * w[:, None, 0] + Jj[None, :, 1] * w[:, None, 1]
                    + Jj[None, :, 2] * w[:, None, 2] + _cross_tl(hj, v))
        F[:, 3:] = mcs[j] * v - _cross_tl(hj, w)
        A = lay.anc_cols[j]
        PA = Phi[A]
        X = PA[:, None, 0] * F[None, :, 0]
        for i in range(1, 6):
            X += PA[:, None, i] * F[None, :, i]                          # (|A|, k, T)
        if not lower:
            Mk[A[:, None], own[None, :]] = X
        Mk[own[:, None], A[None, :]] = X.transpose(1, 0, 2)
    return Mk


def _cross_tl(a, b):
    """a × b over axis −2 (components), frames last: (..., 3, T)."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0, :] = a[..., 1, :] * b[..., 2, :] - a[..., 2, :] * b[..., 1, :]
    out[..., 1, :] = a[..., 2, :] * b[..., 0, :] - a[..., 0, :] * b[..., 2, :]
    out[..., 2, :] = a[..., 0, :] * b[..., 1, :] - a[..., 1, :] * b[..., 0, :]
    return out
