"""The classic formula for joint reactions (Blajer & Czaplicki 2005, Eq. 2.11): a cross-check.

``λ = (C M⁻¹ Cᵀ)⁻¹ (C M⁻¹ h − ξ)`` in absolute coordinates (6 per body), with every joint's
implicit constraints C. It gives the same joint loads as the E-matrix of
:func:`arthron.solvers.reactions.joint_loads` (Eq. 2.10) at a higher cost (a dense solve per
frame over all constraints); the tests and ``benchmarks/bench_reactions.py`` use it to check
and time the E-matrix.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import SolverError, UnsupportedFeature
from ..geometry.spatial import skew
from ..models.model import Model
from ..multibody.constrained_dynamics import constraint_bias
from ..multibody.inverse_dynamics import body_wrenches_from_loads
from ..multibody.kinematics import Tree, forward_kinematics
from .reactions import _frames_of, _joint_infos, _motion_subspace, _select

__all__ = ["classic_joint_loads"]


def classic_joint_loads(model: Model, tree: Tree, q, qd, tau, loads=(), joints=None,
                        chunk: int = 1024, constraints=None, locked=None, return_multipliers=False):
    """The classic formula (Blajer & Czaplicki 2005, Eq. 2.11) ``λ = (C M⁻¹ Cᵀ)⁻¹ (C M⁻¹ h − ξ)``, cross-check.

    Absolute coordinates: 6 per body (``[v_C; ω]``). For every joint, the constraint rows are
    ``Z_jᵀ`` (orthonormal complement of the motion subspace S_j, M axes) applied to the relative
    twist of the child w.r.t. the parent at the joint centre; ``ξ = C γ``. The mobility forces
    ``tau`` (the joints' generalized forces, e.g. from inverse dynamics) are applied as wrench
    pairs ``±S_j(S_jᵀS_j)⁻¹τ_j`` on child and parent; the accelerations are those of the
    equations of motion, so with ``tau`` from inverse dynamics of (q, qd, qdd) the result equals
    :func:`joint_loads` for that qdd. All joints' constraints enter (no selection is possible in
    Eq. 2.11); ``joints`` only selects what is returned. Vectorized over frames in chunks.

    Closed chains: ``constraints`` (a ConstraintSet with point, distance or coordinate coupler
    constraints) add their rows to C (relative velocity of the two points, along the line for a
    distance; for a coupler ``q̇_dep − s f'(q_ind) q̇_ind`` written on the two joints' relative
    twists ν_j as ``q̇_c = e_cᵀ (S_jᵀS_j)⁻¹S_jᵀ ν_j``), with their own multipliers. ``tau``
    excludes the couplers' forces: they are the multipliers' mobility forces, which the joints
    transmit and which the returned Λ includes. ``locked`` coordinates (bool (nq,)) become
    constrained directions of their joints. When a body is massless (M singular) the equivalent augmented system
    ``[M Cᵀ; C 0][p̈; λ] = [h; ξ]`` is solved instead.

    Returns
    -------
    Lambda : (T, n, 6), same convention as :attr:`JointLoads.Lambda`
    [, mu : (T, m) multipliers of ``constraints`` in the sign of :func:`forward_accelerations`]
    """
    q = np.atleast_2d(np.asarray(q, float))
    qd = np.atleast_2d(np.asarray(qd, float))
    tau = np.atleast_2d(np.asarray(tau, float))
    T = q.shape[0]
    sel = _select(model, tree, joints)
    out = np.empty((T, len(sel), 6))
    mc = 0 if constraints is None else constraints.size
    mus = np.empty((T, mc))
    loads = list(loads or ())
    for s in range(0, T, chunk):
        sl = slice(s, min(T, s + chunk))
        ld = [_slice_load(x, sl) for x in loads]
        out[sl], mus[sl] = _classic_chunk(model, tree, q[sl], qd[sl], tau[sl], ld, sel, constraints, locked)
    return (out, mus) if return_multipliers else out


def _slice_load(ld, sl):
    return replace(ld, force=None if ld.force is None else ld.force[sl],
                   point=None if ld.point is None else ld.point[sl],
                   torque=None if ld.torque is None else ld.torque[sl])


def _classic_chunk(model, tree, q, qd, tau, loads, sel, constraints=None, locked=None):
    T = q.shape[0]
    nb = tree.nb
    infos = _joint_infos(tree)
    kin = forward_kinematics(tree, q, qd, np.zeros_like(q))
    alls = list(range(len(infos)))
    c, RM, _ = _frames_of(tree, kin, infos, alls)
    nodes = tree.body_node
    R = kin.R[:, nodes]
    w = kin.w[:, nodes]
    rc = np.einsum("tbij,bj->tbi", R, tree.com)
    Cg = kin.o[:, nodes] + rc
    gam = np.concatenate([kin.a[:, nodes] + np.cross(kin.al[:, nodes], rc) + np.cross(w, np.cross(w, rc)),
                          kin.al[:, nodes]], -1).reshape(T, 6 * nb)
    IG = R @ tree.inertia[None] @ np.swapaxes(R, -1, -2)
    hF = tree.mass[None, :, None] * tree.gravity + np.zeros((T, nb, 3))
    hM = -np.cross(w, np.einsum("tbij,tbj->tbi", IG, w))
    if loads:
        Fe, Me = body_wrenches_from_loads(tree, kin, loads)
        hF = hF + Fe
        hM = hM + Me
    S_all, Z_all, Y_all = [], [], []
    rows = 0
    lk = np.zeros(tree.nq, bool) if locked is None else np.asarray(locked, bool)
    for j, inf in enumerate(infos):
        S = _motion_subspace(tree, kin, inf, c[:, j], RM[:, j])
        keep = [i for i, cc in enumerate(inf.coords) if not lk[cc]]
        S = S[:, :, keep]
        k = S.shape[-1]
        if k:
            U, _, _ = np.linalg.svd(S, full_matrices=True)
            Z = U[:, :, k:]
            Y = S @ np.linalg.inv(np.swapaxes(S, 1, 2) @ S)            # S (SᵀS)⁻¹
        else:
            Z = np.broadcast_to(np.eye(6), (T, 6, 6))
            Y = np.zeros((T, 6, 0))
        S_all.append(S)
        Z_all.append(Z)
        Y_all.append(Y)
        rows += Z.shape[-1]
        # mobility forces as wrench pairs at c (ground axes)
        if k:
            Wm = np.einsum("tik,tk->ti", Y, tau[:, [inf.coords[i] for i in keep]])
            f = np.einsum("tij,tj->ti", RM[:, j], Wm[:, :3])
            m = np.einsum("tij,tj->ti", RM[:, j], Wm[:, 3:])
            for b, sgn in ((inf.child_body, 1.0), (inf.parent_body, -1.0)):
                if b < 0:
                    continue
                hF[:, b] += sgn * f
                hM[:, b] += sgn * (m + np.cross(c[:, j] - Cg[:, b], f))
    h = np.concatenate([hF, hM], -1).reshape(T, 6 * nb)
    mc = 0
    if constraints is not None and constraints.size:
        mc = constraints.size
        for it in constraints.items:
            if it[0] not in ("point", "distance", "coupler"):
                raise UnsupportedFeature(f"{it[0]} constraint '{it[1]}' in the classic formula "
                                         "(point, distance and coordinate coupler constraints only)")
            if it[0] == "coupler" and (lk[it[2]] or lk[it[3]]):
                raise SolverError(f"CoordinateCouplerConstraint '{it[1]}' couples a locked coordinate")
    C = np.zeros((T, rows + mc, 6 * nb))
    xi_c = np.zeros((T, mc))
    r0 = 0
    for j, inf in enumerate(infos):
        Z = Z_all[j]
        nr = Z.shape[-1]
        if nr == 0:
            continue
        G = np.concatenate([np.einsum("tij,tjk->tik", RM[:, j], Z[:, :3]),
                            np.einsum("tij,tjk->tik", RM[:, j], Z[:, 3:])], 1)   # (T,6,nr) ground
        for b, sgn in ((inf.child_body, 1.0), (inf.parent_body, -1.0)):
            if b < 0:
                continue
            r = c[:, j] - Cg[:, b]
            # twist at c = [v_C − [r]× ω; ω]
            C[:, r0:r0 + nr, 6 * b:6 * b + 3] += sgn * np.swapaxes(G[:, :3], 1, 2)
            C[:, r0:r0 + nr, 6 * b + 3:6 * b + 6] += sgn * (np.swapaxes(G[:, 3:], 1, 2)
                                                            - np.swapaxes(G[:, :3], 1, 2) @ skew(r))
        r0 += nr
    if mc:
        xi_c = constraint_bias(tree, q, qd, constraints, kin)   # relative point accelerations, q̈ = 0
        joint_of = {cc: j for j, inf in enumerate(infos) for cc in inf.coords}
        for it in constraints.items:
            if it[0] == "coupler":
                # q̇_dep − s f'(q_ind) q̇_ind = 0 on the joints' relative twists ν (Eq. 2.1 form):
                # q̇_c = e_cᵀ Y_jᵀ ν_j with Y_j = S_j (S_jᵀS_j)⁻¹, since ν_j = S_j q̇_j on the joints'
                # constraint manifold (Z_jᵀ ν_j = 0); its reaction is a pair of mobility wrenches.
                _, _, ind, dep, fn, sc = it
                for cc, coef in ((dep, np.ones(T)), (ind, -sc * fn.derivative(q[:, ind], 1))):
                    j = joint_of[cc]
                    inf = infos[j]
                    kc = [x for x in inf.coords if not lk[x]].index(cc)
                    y = Y_all[j][:, :, kc] * coef[:, None]                        # (T, 6), M axes
                    gv = np.einsum("tij,tj->ti", RM[:, j], y[:, :3])
                    gw = np.einsum("tij,tj->ti", RM[:, j], y[:, 3:])
                    for b, sgn in ((inf.child_body, 1.0), (inf.parent_body, -1.0)):
                        if b < 0:
                            continue
                        r = c[:, j] - Cg[:, b]
                        C[:, r0, 6 * b:6 * b + 3] += sgn * gv
                        C[:, r0, 6 * b + 3:6 * b + 6] += sgn * (gw - np.einsum("ti,tij->tj", gv, skew(r)))
                r0 += 1
                continue
            P = {}
            for b, loc in ((it[2], it[3]), (it[4], it[5])):
                if b >= 0:
                    n = tree.body_node[b]
                    P[b] = kin.o[:, n] + kin.R[:, n] @ loc
            d = (P[it[2]] if it[2] >= 0 else it[3]) - (P[it[4]] if it[4] >= 0 else it[5])
            U = np.broadcast_to(np.eye(3), (T, 3, 3)) if it[0] == "point" else \
                (d / np.linalg.norm(d, axis=-1, keepdims=True))[:, None, :]
            nr = U.shape[1]
            for b, sgn in ((it[2], 1.0), (it[4], -1.0)):
                if b < 0:
                    continue
                r = P[b] - Cg[:, b]
                C[:, r0:r0 + nr, 6 * b:6 * b + 3] += sgn * U            # v_p = v_C − [r]× ω
                C[:, r0:r0 + nr, 6 * b + 3:6 * b + 6] += -sgn * U @ skew(r)
            r0 += nr
        rows += mc
    xi = np.einsum("tri,ti->tr", C, gam)
    if mc:
        # C_m p̈ = C_m γ − b: b = relative point acceleration at q̈ = 0 holds C_m γ plus the
        # centripetal (and, for distances, the velocity) terms that p̈ does not carry
        xi[:, rows - mc:] -= xi_c
    if tree.regular_mass:
        Minv = np.zeros((T, nb, 6, 6))
        Minv[:, :, :3, :3] = np.eye(3) / tree.mass[None, :, None, None]
        Minv[:, :, 3:, 3:] = np.linalg.inv(IG)
        CM = np.einsum("trbi,tbij->trbj", C.reshape(T, rows, nb, 6), Minv).reshape(T, rows, 6 * nb)
        A = CM @ np.swapaxes(C, 1, 2)
        rhs = np.einsum("tri,ti->tr", CM, h) - xi
        lam = np.linalg.solve(A, rhs[..., None])[..., 0]
    else:
        # A massless body (arm26's 'base') makes M singular and Eq. 2.11 inapplicable: solve the
        # equivalent augmented system [M Cᵀ; C 0] [p̈; λ] = [h; ξ] instead.
        n6 = 6 * nb
        K = np.zeros((T, n6 + rows, n6 + rows))
        for b in range(nb):
            K[:, 6 * b:6 * b + 3, 6 * b:6 * b + 3] = np.eye(3) * tree.mass[b]
            K[:, 6 * b + 3:6 * b + 6, 6 * b + 3:6 * b + 6] = IG[:, b]
        K[:, :n6, n6:] = np.swapaxes(C, 1, 2)
        K[:, n6:, :n6] = C
        rhs = np.concatenate([h, xi], -1)
        lam = np.linalg.solve(K, rhs[..., None])[..., 0][:, n6:]
    mu = -lam[:, rows - mc:]
    tau_all = tau
    if mc and any(it[0] == "coupler" for it in constraints.items):
        # couplers' mobility forces (Gᵀμ on their coordinates) are transmitted by the joints
        tau_all = tau.copy()
        r0 = 0
        for it in constraints.items:
            if it[0] == "coupler":
                _, _, ind, dep, fn, sc = it
                tau_all[:, dep] += mu[:, r0]
                tau_all[:, ind] -= mu[:, r0] * sc * fn.derivative(q[:, ind], 1)
            r0 += {"point": 3, "distance": 1, "coupler": 1}[it[0]]
    out = np.empty((T, len(sel), 6))
    offs = np.cumsum([0] + [Z.shape[-1] for Z in Z_all])
    for k, j in enumerate(sel):
        inf = infos[j]
        L = np.einsum("tik,tk->ti", Z_all[j], lam[:, offs[j]:offs[j + 1]])
        if Y_all[j].shape[-1]:
            free = [cc for cc in inf.coords if not lk[cc]]
            L = L - np.einsum("tik,tk->ti", Y_all[j], tau_all[:, free])
        out[:, k] = L
    return out, mu
