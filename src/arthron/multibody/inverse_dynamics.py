"""Inverse dynamics of a compiled tree: ``τ = Dᵀ(M(Dq̈ + γ) − h)`` and the body wrenches it sums.

Formulation (Blajer & Czaplicki 2005, minimal form of Eq. 2.5, in 3D): with the body velocities
``v = [v_C; ω]`` (mass centres and angular velocities in ground), the velocity map ``D(q)``
(``v = D q̇``) and ``a = D q̈ + γ``,

    τ = Dᵀ (M (D q̈ + γ) − h),     M = blockdiag(m_b I₃, I_C,b),

where ``h`` holds gravity ``m_b g``, the gyroscopic moments ``−ω × I_C ω`` and applied loads
(:class:`ExternalLoad`: force at a point plus torque). ``Dᵀ`` is applied as a backward sum over
subtrees (:func:`arthron.multibody.kinematics.apply_velocity_map_transpose`) rather than as a
dense matrix. Constraints and coordinate locks are ignored (Simbody's
``calcResidualForceIgnoringConstraints``).
"""
from __future__ import annotations

import numpy as np

from ..geometry.spatial import cross
from .frames_last import inverse_dynamics_frames_last
from .kinematics import Tree, apply_velocity_map_transpose, forward_kinematics
from .loads import ExternalLoad, body_wrenches_from_loads

__all__ = ["ExternalLoad", "body_wrenches_from_loads", "inertial_wrenches", "inverse_dynamics"]


def inertial_wrenches(tree: Tree, kin, bodies=None, loads=()):
    """``M a − h`` of the listed bodies: the wrench each body's motion needs beyond its loads.

    Parameters
    ----------
    kin : Kinematics with velocities and accelerations
    bodies : body indices (default: all, in tree order)
    loads : :class:`ExternalLoad` list entering ``h`` (with gravity and the gyroscopic term)

    Returns
    -------
    F : (T, n, 3) ``m (a_C − g) − F_ext`` (N), M : (T, n, 3) ``I α + ω × I ω − M_ext`` about the
    mass centres (N·m), com : (T, n, 3) mass centres (m); all in ground. Only the body nodes
    are read (no stacking of all nodes); ``I α + ω × I ω`` is formed in the body frames, where
    I is constant.
    """
    Ui = np.arange(tree.nb) if bodies is None else np.asarray(bodies, int)
    nodes = tree.body_node[Ui]
    R = kin.nodes("R", nodes)
    w = kin.nodes("w", nodes)
    al = kin.nodes("al", nodes)
    rc = np.einsum("tbij,bj->tbi", R, tree.com[Ui])
    aC = kin.nodes("a", nodes) + cross(al, rc) + cross(w, cross(w, rc))
    F = tree.mass[Ui][None, :, None] * (aC - tree.gravity)               # m(a_C − g)
    I = tree.inertia[Ui]
    wb = np.einsum("tbji,tbj->tbi", R, w)
    alb = np.einsum("tbji,tbj->tbi", R, al)
    Mb = np.einsum("bij,tbj->tbi", I, alb) + cross(wb, np.einsum("bij,tbj->tbi", I, wb))
    Mc = np.einsum("tbij,tbj->tbi", R, Mb)
    loads = list(loads or ())
    if loads:
        Fe, Me = body_wrenches_from_loads(tree, kin, loads)
        F = F - Fe[:, Ui]
        Mc = Mc - Me[:, Ui]
    return F, Mc, kin.nodes("o", nodes) + rc


def inverse_dynamics(tree: Tree, q, qd, qdd, loads=(), applied=None, core: str = "frames_last") -> np.ndarray:
    """Generalized forces ``τ = Dᵀ(M(Dq̈ + γ) − h)`` for T frames at once.

    Parameters
    ----------
    tree : compiled model (:func:`arthron.multibody.kinematics.compile_model`)
    q, qd, qdd : (T, nq) coordinates (rad, m), speeds and accelerations, model order
    loads : iterable of :class:`ExternalLoad` sampled at the same T frames
    applied : (T, nq) or None, generalized forces applied by actuators/passive elements, moved
        to the right-hand side (``τ`` is then the residual)

    Returns
    -------
    (T, nq) generalized forces in model coordinate order (N·m or N), conjugate to q̇ (see
    :func:`arthron.multibody.kinematics.mobility_forces` for Simbody's speeds).

    ``core`` chooses the implementation, same numbers to 1e-12 relative:
    ``"frames_last"`` (default, :mod:`arthron.multibody.frames_last`: frames as the last axis,
    about 3× faster on long trials) or ``"reference"`` (this module's frames-first passes over
    :func:`~arthron.multibody.kinematics.forward_kinematics`). ValueError for another name.
    """
    if core == "frames_last":
        return inverse_dynamics_frames_last(tree, q, qd, qdd, loads, applied)
    if core != "reference":
        raise ValueError(f"unknown inverse-dynamics core {core!r} (frames_last or reference)")
    q = np.atleast_2d(np.asarray(q, float))
    kin = forward_kinematics(tree, q, qd, qdd)
    F, M, com = inertial_wrenches(tree, kin, None, loads)
    tau = apply_velocity_map_transpose(tree, kin, F, M, com=com)
    if applied is not None:
        tau = tau - applied
    return tau
