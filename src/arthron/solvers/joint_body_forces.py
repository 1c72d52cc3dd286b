"""Body forces at joints equivalent to the inverse-dynamics generalized forces, as OpenSim's
InverseDynamicsTool writes them for ``joints_to_report_body_forces``.

OpenSim 4.6 (``InverseDynamicsTool::run``, ``Joint::calcEquivalentSpatialForce`` and
``Joint::calcEquivalentSpatialForceForMobilizedBody``) reports, per listed joint and frame, a
spatial force ``(M, F)`` on the joint's child, expressed in ground, that the mobilizer's hinge
map H (``V_FM = H u``: angular and M-origin velocity of the child joint frame M in the parent
joint frame F, per generalized speed u) maps onto the joint's generalized forces, ``Hᵀ (M, F)
= τ``. The choice among the many such forces is OpenSim's:

1. ``F₀ = pinv(H_vᵀ) τ`` and ``M₀ = pinv(H_ωᵀ) τ`` (least-norm least-squares, Simbody's
   ``FactorQTZ`` with rank tolerance ``max(m, n)·ε^(7/8)``), their images
   ``f_v = H_vᵀ F₀``, ``f_ω = H_ωᵀ M₀``;
2. when both images are non-zero (> ε^(7/8)), the "more effective" one,
   ``|f_ω|/|M₀| > |f_v|/|F₀|`` → moment, is kept and the other explains the remainder:
   ``F = pinv(H_vᵀ)(τ − f_ω)``, ``M = M₀`` (else ``M = pinv(H_ωᵀ)(τ − f_v)``, ``F = F₀``);
   when only one is non-zero both are kept as computed.

So a PinJoint reports a pure moment along its axis, a CustomJoint whose translations follow
its rotation (Gait2354's knee) a pure moment when ``|∂p/∂q| < 1`` m/rad, a free joint its
three forces and three moments. The force acts at the origin of the child joint frame M (the
mobilizer's outboard frame); nothing is shifted. Joints built from several Simbody mobilized
bodies (ScapulothoracicJoint: Ellipsoid + winging Pin) report the sum of each mobilizer's
force, each at its own M origin, unshifted, as OpenSim does. For Ball, Free, Ellipsoid and
Scapulothoracic joints u is the angular velocity ω_FM in F (H = H_q̇ A(q)⁻¹) and τ the forces
conjugate to u, as the tool's generalized forces are. Welds report zeros.

Everything is computed from arthron's own kinematics (:func:`forward_kinematics` hinge
columns) and the generalized forces of :func:`arthron.solvers.inverse_dynamics.run_inverse_dynamics`,
vectorized over frames.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelFileError
from ..geometry.spatial import cross
from ..models.model import Model
from ..multibody.joints import joint_type
from ..multibody.kinematics import Tree, compile_model, forward_kinematics, mobility_forces
from ..tables import Table

__all__ = ["JointBodyForces", "equivalent_joint_forces", "joint_body_forces", "body_force_labels",
           "SIGNIFICANT"]

#: Simbody's ``SignificantReal`` (ε^(7/8)): OpenSim's threshold for a non-zero image
SIGNIFICANT = float(np.finfo(float).eps ** 0.875)


@dataclass
class JointBodyForces:
    """Equivalent body forces at joints (OpenSim's ``body_forces_at_joints.sto``).

    time : (T,) s; joints : joint names in column order; labels :
    ``<joint>_<child frame>_FX .. _FZ, _MX .. _MZ`` per joint; data : (T, 6·nj), forces N and
    moments N·m on the child at the child joint frame's origin, in ground.
    """

    time: np.ndarray
    joints: list
    labels: list
    data: np.ndarray

    def to_table(self) -> Table:
        return Table(name="Inverse Dynamics Body Forces at Specified Joints", time=self.time.copy(),
                     labels=list(self.labels), data=self.data.copy(), in_degrees=False)

    def column(self, label):
        return self.data[:, self.labels.index(label)]


def body_force_labels(model: Model, joints) -> list:
    """OpenSim's column labels: ``<joint>_<child frame name>_F{X,Y,Z}`` then ``_M{X,Y,Z}``."""
    out = []
    for name in joints:
        base = f"{name}_{model.joints[name].child_frame.rstrip('/').split('/')[-1]}"
        out += [f"{base}_F{a}" for a in "XYZ"] + [f"{base}_M{a}" for a in "XYZ"]
    return out


class _LeastNorm:
    """Least-norm least-squares solver of ``A x = b`` for a stack A (T, m, 3), factored once:
    singular values below ``tol·σ_max`` (and zero matrices) dropped, as Simbody's ``FactorQTZ``
    with its default rank tolerance. Closed forms for a zero stack and for one row (m = 1:
    ``x = a b / |a|²``), a batched SVD otherwise."""

    def __init__(self, A, tol):
        self.T, self.m = A.shape[0], A.shape[1]
        self.zero = not A.any()
        if self.zero:
            return
        if self.m == 1:
            self.a = A[:, 0, :]
            n2 = np.einsum("ti,ti->t", self.a, self.a)
            self.inv = np.where(n2 > 0, 1.0 / np.where(n2 > 0, n2, 1.0), 0.0)
            return
        U, s, Vt = np.linalg.svd(A, full_matrices=False)
        keep = (s > tol * s[:, :1]) & (s > 0)
        self.U, self.Vt = U, Vt
        self.sinv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)

    def solve(self, b, rows=slice(None)):
        """x (n, 3) for right-hand sides b (n, m) of the frames ``rows``."""
        if self.zero:
            return np.zeros((b.shape[0], 3))
        if self.m == 1:
            return self.a[rows] * (b[:, 0] * self.inv[rows])[:, None]
        c = np.einsum("tmk,tm->tk", self.U[rows], b) * self.sinv[rows]
        return np.einsum("tkn,tk->tn", self.Vt[rows], c)


def _mobilizer_force(Hw, Hv, f):
    """OpenSim's spatial force of one mobilized body: Hw, Hv (T, 3, nu) in ground, f (T, nu)
    -> (M, F) each (T, 3)."""
    HwT, HvT = np.swapaxes(Hw, 1, 2), np.swapaxes(Hv, 1, 2)
    tol = max(HwT.shape[1], 3) * SIGNIFICANT
    pv, pw = _LeastNorm(HvT, tol), _LeastNorm(HwT, tol)
    Fv, Fw = pv.solve(f), pw.solve(f)
    fv = np.einsum("tki,ti->tk", HvT, Fv)
    fw = np.einsum("tki,ti->tk", HwT, Fw)
    nfv, nfw = np.linalg.norm(fv, axis=1), np.linalg.norm(fw, axis=1)
    nFv, nFw = np.linalg.norm(Fv, axis=1), np.linalg.norm(Fw, axis=1)
    both = (nfv > SIGNIFICANT) & (nfw > SIGNIFICANT)
    with np.errstate(divide="ignore", invalid="ignore"):
        torque_first = both & (nfw / nFw > nfv / nFv)
    force_first = both & ~torque_first
    if torque_first.any():
        i = np.flatnonzero(torque_first)
        Fv[i] = pv.solve(f[i] - fw[i], i)
    if force_first.any():
        i = np.flatnonzero(force_first)
        Fw[i] = pw.solve(f[i] - fv[i], i)
    return Fw, Fv


def _mobilizers(model: Model, tree: Tree, j: int):
    """Coordinate-index groups of joint j's Simbody mobilized bodies."""
    coords = tree.joint_coords[j]
    jt = joint_type(model.joints[tree.joint_names[j]].type, tree.joint_names[j], model.source)
    groups = jt.mobilizers or (tuple(range(len(coords))),)
    return [[coords[k] for k in g] for g in groups if len(coords)]


def _hinge_columns(model: Model, tree: Tree, kin, joints):
    """H in ground per coordinate (conjugate to q̇): (T, nq, 6) [angular | M-origin linear],
    each column about the M origin of its coordinate's mobilizer; only ``joints`` filled."""
    T = kin.node("o", 0).shape[0]
    H = np.zeros((T, tree.nq, 6))
    nodes = tree.nodes
    for j in joints:
        chain = tree.joint_nodes[j]
        for grp in _mobilizers(model, tree, j):
            gset = set(grp)
            mine = [n for n in chain if gset & set(nodes[n].coords)]
            if not mine:
                continue
            last = mine[-1]
            oM = kin.node("o", last)
            for n in mine:
                cl, Hw, Hv = kin.hinge[n]
                after = chain[chain.index(n) + 1: chain.index(last) + 1]
                # exact zero lever when nothing between n and M moves the origin (Simbody's
                # H of a rotation has no linear part there)
                moved = any(nodes[m].p0.any() or nodes[m].kind in ("trans", "ellip") for m in after)
                lever = oM - kin.node("o", n) if moved else None
                for k, c in enumerate(cl):
                    if c not in gset:
                        continue
                    H[:, c, :3] += Hw[:, :, k]
                    H[:, c, 3:] += Hv[:, :, k]
                    if lever is not None:
                        H[:, c, 3:] += cross(Hw[:, :, k], lever)
    return H


def equivalent_joint_forces(model: Model, q, tau, joints, tree: Tree | None = None) -> np.ndarray:
    """OpenSim's ``Joint::calcEquivalentSpatialForce`` for T frames (module docstring).

    Parameters
    ----------
    q : (T, nq) coordinates (rad, m), model order (as the inverse dynamics used them)
    tau : (T, nq) generalized forces conjugate to Simbody's speeds u (N·m, N), model order
    joints : joint names (repeats allowed)

    Returns
    -------
    (T, len(joints), 6): force (N) then moment (N·m) on each joint's child at its child joint
    frame's origin, in ground.

    Raises
    ------
    ModelFileError for a joint the model lacks (and, from :func:`compile_model`, for joint
    types arthron does not implement).
    """
    tree = tree or compile_model(model)
    q = np.atleast_2d(np.asarray(q, float))
    tau = np.atleast_2d(np.asarray(tau, float))
    T = q.shape[0]
    jidx = {n: i for i, n in enumerate(tree.joint_names)}
    missing = [n for n in joints if n not in jidx]
    if missing:
        raise ModelFileError(f"model '{model.name}' has no joint {', '.join(map(repr, missing))}",
                             model.source)
    idx = [jidx[n] for n in joints]
    out = np.zeros((T, len(joints), 6))
    if not idx or T == 0:
        return out
    kin = forward_kinematics(tree, q)
    Hq = _hinge_columns(model, tree, kin, sorted(set(idx)))
    # speeds u: H_u = H_q̇ A⁻¹, i.e. Hᵀ rows transform as generalized forces (A⁻ᵀ)
    Hu = np.stack([mobility_forces(tree, q, Hq[:, :, r]) for r in range(6)], -1)
    cache = {}
    for k, j in enumerate(idx):
        if j not in cache:
            M = np.zeros((T, 3))
            F = np.zeros((T, 3))
            for grp in _mobilizers(model, tree, j):
                Hg = Hu[:, grp]                                 # (T, nu, 6)
                Mw, Fv = _mobilizer_force(np.swapaxes(Hg[..., :3], 1, 2),
                                          np.swapaxes(Hg[..., 3:], 1, 2), tau[:, grp])
                M += Mw
                F += Fv
            cache[j] = np.concatenate([F, M], -1)
        out[:, k] = cache[j]
    return out


def joint_body_forces(model: Model, result, joints, tree: Tree | None = None) -> JointBodyForces:
    """Equivalent body forces at ``joints`` of an inverse-dynamics result
    (:class:`arthron.solvers.inverse_dynamics.InverseDynamicsResult`, which keeps ``q``).

    Returns :class:`JointBodyForces` with OpenSim's labels and the result's times.
    """
    tree = tree or compile_model(model)
    ci = [tree.coordinate_index(c) for c in result.coordinates]
    tau = np.zeros((len(result.time), tree.nq))
    tau[:, ci] = result.generalized_forces
    data = equivalent_joint_forces(model, result.q, tau, joints, tree)
    return JointBodyForces(time=np.asarray(result.time, float).copy(), joints=list(joints),
                           labels=body_force_labels(model, joints),
                           data=data.reshape(len(result.time), -1))
