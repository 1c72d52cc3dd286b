"""Constrained dynamics: the model constraints' bias, loads and multipliers.

Model constraints (closed chains: PointConstraint, ConstantDistanceConstraint,
CoordinateCouplerConstraint, PointOnLineConstraint, PointOnEllipsoidConstraint, WeldConstraint;
:mod:`arthron.multibody.constraints`) enter the equations of motion
with Lagrange multipliers μ: ``M q̈ = Q + Dᵀh − DᵀMγ + Gᵀμ``, ``G q̈ + Ġq̇ = 0``
(Blajer & Czaplicki 2005, Eq. 2.2 form; G = ∂c/∂q). This module gives the constraint bias
``Ġq̇`` (:func:`constraint_bias`), the body loads and mobility forces of given multipliers
(:func:`constraint_loads`) and the multipliers of a motion whose accelerations are known
(:func:`motion_constraint_multipliers`). Forward dynamics with constraints is
:func:`arthron.multibody.forward_dynamics.forward_accelerations`.

A PointConstraint's acceleration is held zero in the constraint's ancestor body, as Simbody's
Ball constraint does (it differs from ground by ``2 ω_A × v_rel`` when spline speeds violate
the velocity constraint).
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedFeature
from .inverse_dynamics import ExternalLoad, inverse_dynamics
from .kinematics import Tree, forward_kinematics

__all__ = ["constraint_bias", "constraint_loads", "motion_constraint_multipliers", "redundant_rows",
           "independent_rows"]


#: singular values of a constraint Jacobian (m or rad per unit speed) below this are rounding
#: noise: rows that constrain nothing
_NOISE = 1e-10


def independent_singular_values(S):
    """True for the singular values S (T, k) (largest first) of constraint rows that constrain
    something: above an absolute 1e-10 (:data:`_NOISE`) and above 1e-12 of the largest. The
    rule of :func:`redundant_rows` and of the moment arms' coupling vectors
    (:func:`arthron.multibody.paths.coupling_vectors`)."""
    return S > np.maximum(_NOISE, 1e-12 * S[:, :1])


def redundant_rows(G):
    """``(W, drop)`` for constraint rows G (T, m, n) that are not independent, else
    ``(None, None)``: W (T, m, m) orthonormal combinations of the rows (G's left singular
    vectors), ``drop`` (T, m) True for those that constrain nothing (singular value below an
    absolute 1e-10 or 1e-12 of the largest: a loop the locked coordinates already close, as
    the welded condyles of GPK_v4_016, whose rows on the free coordinates are rounding noise).
    Their multipliers are set to 0 (Simbody's least-squares multipliers of redundant
    constraints); the model's own independent rows are unchanged."""
    T, m, n = G.shape
    U, S, _ = np.linalg.svd(G)
    keep = np.zeros((T, m), bool)
    k = min(m, n)
    keep[:, :k] = independent_singular_values(S)
    if keep.all():
        return None, None
    return U, ~keep


def independent_rows(G, b=None):
    """``(W, drop, G', b')``: the constraint rows G (T, m, n) (and their right-hand side b
    (T, m), optional) as the orthonormal combinations ``G' = Wᵀ G`` (``b' = Wᵀ b``) of
    :func:`redundant_rows`, the combinations that constrain nothing (``drop``) set to 0, so that
    a solve can give them a zero multiplier (a unit diagonal in place of ``G' G'ᵀ``); ``(None,
    None, G, b)`` when the rows are independent. The one transform of forward dynamics
    (:func:`~arthron.multibody.forward_dynamics.forward_accelerations`) and of
    :func:`motion_constraint_multipliers`."""
    W, drop = redundant_rows(G)
    if W is None:
        return None, None, G, b
    G = np.where(drop[:, :, None], 0.0, np.swapaxes(W, 1, 2) @ G)
    if b is not None:
        b = np.where(drop, 0.0, np.einsum("tji,tj->ti", W, b))
    return W, drop, G, b


def constraint_bias(tree: Tree, q, qd, constraints, kin=None) -> np.ndarray:
    """``b = Ġ q̇`` of the constraint rows, so that ``G q̈ + b = 0`` along the motion.

    Parameters
    ----------
    q, qd : (T, nq); constraints : :class:`~arthron.multibody.constraints.ConstraintSet`
    kin : optional Kinematics of (q, qd, q̈ = 0) (velocities and bias accelerations)

    Returns
    -------
    (T, m) in the units of the constraint rows per s² (m/s² for points and distances, rad/s²
    or m/s² for couplers).

    Raises
    ------
    UnsupportedFeature for constraint kinds other than point, distance, coupler, ellipsoid,
    line and weld.
    """
    cs = constraints
    q = np.atleast_2d(np.asarray(q, float))
    T = q.shape[0]
    kin0 = kin if kin is not None else forward_kinematics(tree, q, qd, np.zeros_like(q))

    def pt(b, loc):
        if b < 0:
            z = np.broadcast_to(np.asarray(loc, float), (T, 3))
            return z, np.zeros((T, 3)), np.zeros((T, 3))
        n = tree.body_node[b]
        r = kin0.R[:, n] @ loc
        w, al = kin0.w[:, n], kin0.al[:, n]
        return (kin0.o[:, n] + r, kin0.v[:, n] + np.cross(w, r),
                kin0.a[:, n] + np.cross(al, r) + np.cross(w, np.cross(w, r)))

    bp = tree.body_parent

    def chain(b):
        c = []
        while b >= 0:
            c.append(b)
            b = bp[b]
        return c

    out = []
    for it in cs.items:
        kind = it[0]
        if kind == "point":
            _, v1, a1 = pt(it[2], it[3])
            _, v2, a2 = pt(it[4], it[5])
            # Simbody's Ball constraint (OpenSim's PointConstraint) holds the relative acceleration
            # of the two points zero as seen in the constraint's ancestor body A (nearest common
            # ancestor of the two bodies): a_A,rel = a_rel − 2 ω_A × v_rel. Identical to a_rel = 0
            # when the velocity constraint holds; it matters when it does not (speeds read from
            # splines, e.g. with angular-velocity mobilities).
            c2 = set(chain(it[4]))
            anc = next((b for b in chain(it[2]) if b in c2), -1)
            bias = a1 - a2
            if anc >= 0:
                bias = bias - 2.0 * np.cross(kin0.w[:, tree.body_node[anc]], v1 - v2)
            out.append(bias)
        elif kind == "distance":
            p1, v1, a1 = pt(it[2], it[3])
            p2, v2, a2 = pt(it[4], it[5])
            d, dv = p1 - p2, v1 - v2
            L = np.linalg.norm(d, axis=-1)
            u = d / L[:, None]
            out.append((np.einsum("ti,ti->t", u, a1 - a2)
                        + (np.einsum("ti,ti->t", dv, dv) - np.einsum("ti,ti->t", u, dv) ** 2) / L)[:, None])
        elif kind == "coupler":
            _, _, ind, dep, f, sc = it
            out.append((-sc * f.derivative(q[:, ind], 2) * qd[:, ind] ** 2)[:, None])
        elif kind == "ellipsoid":
            out.append(_ellipsoid_bias(tree, kin0, cs, it, pt)[:, None])
        elif kind == "line":
            out.append(_line_bias(tree, kin0, cs, it, pt))
        elif kind == "weld":
            out.extend(_weld_bias(tree, kin0, cs, it, pt))
        else:
            raise UnsupportedFeature(f"{kind} constraint '{it[1]}' in forward dynamics for joint reactions")
    return np.concatenate(out, -1) if out else np.zeros((T, 0))


def _weld_bias(tree, kin0, cs, it, pt):
    """Φ̈ at q̈ = 0 of a WeldConstraint's six rows (:class:`~arthron.multibody.constraints.ConstraintSet`
    order): the frame origins' relative acceleration (m/s²), then of ½ Σ a_i × b_i with a_i,
    b_i the frames' axes (ȧ = ω₁ × a, ä = α₁ × a + ω₁ × (ω₁ × a)):
    ½ Σ (ä_i × b_i + 2 ȧ_i × ḃ_i + a_i × b̈_i) (1/s²)."""
    T = kin0.o.shape[0]
    _, _, i1, X1, i2, X2 = it
    _, _, a1 = pt(i1, X1.p)
    _, _, a2 = pt(i2, X2.p)

    def spin(b):
        if b < 0:
            return np.zeros((T, 3)), np.zeros((T, 3))
        n = tree.body_node[b]
        return kin0.w[:, n], kin0.al[:, n]

    (w1, al1), (w2, al2) = spin(i1), spin(i2)
    A, B = cs._frame_R(kin0, i1, X1), cs._frame_R(kin0, i2, X2)          # columns: the axes
    rot = np.zeros((T, 3))
    for k in range(3):
        a, b = A[:, :, k], B[:, :, k]
        ad, bd = np.cross(w1, a), np.cross(w2, b)
        add = np.cross(al1, a) + np.cross(w1, ad)
        bdd = np.cross(al2, b) + np.cross(w2, bd)
        rot += 0.5 * (np.cross(add, b) + 2.0 * np.cross(ad, bd) + np.cross(a, bdd))
    return [a1 - a2, rot]


def _line_bias(tree, kin0, cs, it, pt):
    """Φ̈ at q̈ = 0 of a PointOnLineConstraint's two rows (m/s²): Φ_k = n_k·r with r = P_f − P_l
    (follower point minus the line's point) and n_k fixed in the line body (ṅ = ω × n), so
    Φ̈_k = (α × n_k + ω × (ω × n_k))·r + 2 (ω × n_k)·ṙ + n_k·r̈."""
    T = kin0.o.shape[0]
    P, vf, af = pt(it[4], it[5])
    Pl, vl, al = pt(it[2], it[3])
    if it[2] >= 0:
        n = tree.body_node[it[2]]
        w, alpha = kin0.w[:, n], kin0.al[:, n]
    else:
        w = alpha = np.zeros((T, 3))
    N = cs._line_normals(kin0, it)                                   # (T, 2, 3)
    wn = np.cross(w[:, None, :], N)
    ndd = np.cross(alpha[:, None, :], N) + np.cross(w[:, None, :], wn)
    return (np.einsum("tki,ti->tk", ndd, P - Pl) + 2.0 * np.einsum("tki,ti->tk", wn, vf - vl)
            + np.einsum("tki,ti->tk", N, af - al))


def _ellipsoid_bias(tree, kin0, cs, it, pt):
    """Φ̈ at q̈ = 0 of a PointOnEllipsoidConstraint (1/s²): with p_E the point in the ellipsoid
    frame E (on body 2), ṗ_E = R_Eᵀ v_rel and p̈_E = R_Eᵀ (a₁ − a₂(P) − 2 ω₂ × v_rel), where
    v_rel = v₁ − v₂(P) and a₂(P), v₂(P) belong to the material point of body 2 at P;
    Φ̈ = Σ 2 (ṗ_E,i² + p_E,i p̈_E,i) / r_i²."""
    T = kin0.o.shape[0]
    P, v1, a1 = pt(it[2], it[3])
    if it[4] >= 0:
        n = tree.body_node[it[4]]
        r = P - kin0.o[:, n]
        w, al = kin0.w[:, n], kin0.al[:, n]
        v2 = kin0.v[:, n] + np.cross(w, r)
        a2 = kin0.a[:, n] + np.cross(al, r) + np.cross(w, np.cross(w, r))
    else:
        w = v2 = a2 = np.zeros((T, 3))
    vrel = v1 - v2
    arel = a1 - a2 - 2.0 * np.cross(w, vrel)
    RE = cs._frame_R(kin0, it[4], it[5])
    pE = cs._ellipsoid_local(kin0, it)
    vE = np.einsum("tji,tj->ti", RE, vrel)
    aE = np.einsum("tji,tj->ti", RE, arel)
    return np.sum(2.0 * (vE ** 2 + pE * aE) / it[6] ** 2, axis=-1)


def constraint_loads(tree: Tree, q, constraints, mu, kin=None):
    """Body loads and mobility forces of constraint multipliers ``mu`` (T, m) (sign of
    :func:`~arthron.multibody.forward_dynamics.forward_accelerations`: generalized constraint
    force ``Gᵀ mu``).

    PointConstraint: ``mu`` (N, ground) on body 1 at its point, ``−mu`` on body 2;
    PointOnEllipsoidConstraint: ``mu g`` on the point's body at the point and ``−mu g`` on the
    ellipsoid's body there (g = world gradient of Φ, 1/m; mu in N·m);
    ConstantDistanceConstraint: ``mu u`` and ``−mu u`` along the line of the points;
    PointOnLineConstraint: ``Σ mu_k n_k`` (N; n_k the two normals to the line) on the follower
    at its point, its opposite on the line's body at the same point;
    CoordinateCouplerConstraint: mobility forces ``mu`` on the dependent and
    ``−mu s f'(q_ind)`` on the independent coordinate (transmitted by their joints).

    Returns
    -------
    loads : list of ExternalLoad; generalized : (T, nq)
    """
    cs = constraints
    q = np.atleast_2d(q)
    T = q.shape[0]
    kin0 = kin or forward_kinematics(tree, q)
    loads, gen = [], np.zeros((T, tree.nq))
    r0 = 0

    def pos(b, loc):
        n = tree.body_node[b]
        return kin0.o[:, n] + kin0.R[:, n] @ loc

    for it in cs.items:
        kind = it[0]
        if kind == "point":
            f = mu[:, r0:r0 + 3]
            r0 += 3
        elif kind == "distance":
            d = (pos(it[2], it[3]) if it[2] >= 0 else it[3]) - (pos(it[4], it[5]) if it[4] >= 0 else it[5])
            f = mu[:, r0:r0 + 1] * d / np.linalg.norm(d, axis=-1, keepdims=True)
            r0 += 1
        elif kind == "coupler":
            _, _, ind, dep, fn, sc = it
            gen[:, dep] += mu[:, r0]
            gen[:, ind] -= mu[:, r0] * sc * fn.derivative(q[:, ind], 1)
            r0 += 1
            continue
        elif kind in ("line", "ellipsoid"):
            if kind == "line":
                # Σ μ_k n_k on the follower at its point, the opposite on the line's body there
                f = np.einsum("tk,tki->ti", mu[:, r0:r0 + 2], cs._line_normals(kin0, it))
                b_on, loc, b_off = it[4], it[5], it[2]
                r0 += 2
            else:
                # μ g on the point's body at P, −μ g on the ellipsoid's body at the same point
                f = mu[:, r0:r0 + 1] * cs.ellipsoid_gradient(kin0, it)
                b_on, loc, b_off = it[2], it[3], it[4]
                r0 += 1
            P = pos(b_on, loc) if b_on >= 0 else np.broadcast_to(loc, (T, 3))
            for b, sgn in ((b_on, 1.0), (b_off, -1.0)):
                if b >= 0:
                    loads.append(ExternalLoad(body=tree.body_names[b], force=sgn * f, point=P,
                                              name=f"constraint_{it[1]}"))
            continue
        elif kind == "weld":
            # rows: origins (force μ at frame 1's origin on body 1, −μ at frame 2's on body 2),
            # then ½ Σ a_i × b_i, whose Jacobian ½ (A₁ J_ω1 + A₂ J_ω2) makes the torques
            # ½ A₁ᵀ μ_r on body 1 and ½ A₂ᵀ μ_r on body 2 (ground frame)
            _, _, i1, X1, i2, X2 = it
            f, mr = mu[:, r0:r0 + 3], mu[:, r0 + 3:r0 + 6]
            r0 += 6
            R1, R2 = cs._frame_R(kin0, i1, X1), cs._frame_R(kin0, i2, X2)
            ab = np.einsum("tji,tji->t", R1, R2)[:, None, None] * np.eye(3)
            A1 = np.einsum("tik,tjk->tij", R1, R2) - ab
            A2 = ab - np.einsum("tik,tjk->tij", R2, R1)
            for b, X, sgn, Ak in ((i1, X1, 1.0, A1), (i2, X2, -1.0, A2)):
                if b >= 0:
                    loads.append(ExternalLoad(body=tree.body_names[b], force=sgn * f, point=pos(b, X.p),
                                              torque=0.5 * np.einsum("tji,tj->ti", Ak, mr),
                                              name=f"constraint_{it[1]}"))
            continue
        else:
            raise UnsupportedFeature(f"{kind} constraint '{it[1]}' in joint reactions")
        for b, loc, sgn in ((it[2], it[3], 1.0), (it[4], it[5], -1.0)):
            if b >= 0:
                loads.append(ExternalLoad(body=tree.body_names[b], force=sgn * f, point=pos(b, loc),
                                          name=f"constraint_{it[1]}"))
    return loads, gen


def motion_constraint_multipliers(tree: Tree, q, qd, qdd, constraints, generalized=None, loads=(),
                                  locked=None):
    """Multipliers μ of the model constraints for the motion's own accelerations.

    With q̈ given, the equations of motion ``τ_ID(q, q̇, q̈) = Q + Gᵀμ + r`` (τ_ID = Dᵀ(M(Dq̈ + γ)
    − h) by inverse dynamics with the body ``loads``; Q the applied mobility forces
    ``generalized``) do not determine μ by themselves: the joints' own generalized forces r
    could take any part of the load. μ is chosen to leave the least ``‖r‖`` over the unlocked
    coordinates (least squares, ``μ = (G Gᵀ)⁻¹ G (τ_ID − Q)``, G = ∂c/∂q of the unlocked
    coordinates, full row rank). When the applied forces are consistent with the motion
    (r = 0 possible, e.g. the forces of a forward simulation or of a static optimization that
    includes the constraints) this is the exact μ, the one :func:`~arthron.multibody.forward_dynamics.forward_accelerations` finds;
    otherwise r is the smallest residual in the coordinates' units (N·m and N weighted alike)
    and the joints transmit it as mobility forces.

    Returns
    -------
    mu : (T, m) in the sign of :func:`~arthron.multibody.forward_dynamics.forward_accelerations` (see :func:`constraint_loads`);
    residual : (T, nq) r, the generalized forces left to the joints (locked coordinates: all
    of theirs).
    """
    q = np.atleast_2d(np.asarray(q, float))
    T, nq = q.shape
    need = inverse_dynamics(tree, q, qd, qdd, list(loads or ()))
    if generalized is not None:
        need = need - np.asarray(generalized, float)
    free = np.ones(nq, bool) if locked is None else ~np.asarray(locked, bool)
    G0 = constraints.jacobian(q)[:, :, free]
    W, drop, G, _ = independent_rows(G0)     # rows the locks make redundant carry nothing
    A = G @ np.swapaxes(G, 1, 2)
    if W is not None:
        A = A + drop[:, :, None] * np.eye(A.shape[1])
    mu = np.linalg.solve(A, np.einsum("tmk,tk->tm", G, need[:, free])[..., None])[..., 0]
    if W is not None:
        mu = np.einsum("tij,tj->ti", W, mu)
    r = need.copy()
    r[:, free] -= np.einsum("tmk,tm->tk", G0, mu)
    return mu, r
