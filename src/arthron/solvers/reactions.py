"""Joint reaction loads by the E-matrix of the augmented joint coordinate method (seed 002).

Formulation (seed 002, Blajer & Czaplicki 2005, Eqs. 2.3-2.10, written in 3D)
---------------------------------------------------------------------------------
Bodies have absolute velocities ``v_b = [v_C; ω]`` (mass centre and angular velocity, ground
frame), mass matrix ``M = blockdiag(m_b I₃, I_C,b)`` and applied forces ``h`` (gravity ``m_b g``,
gyroscopic ``−ω × I_C ω``, external loads, body forces of actuators such as muscles along their
paths). The joint coordinates ``q`` give ``v = D(q) q̇`` and ``a = D q̈ + γ`` (Eq. 2.4-2.5,
:func:`arthron.multibody.kinematics.velocity_map`).

Every joint j gets six *open-constraint* coordinates ``z_j`` (Eq. 2.3): three translations along
and three rotations about the axes of the joint's child frame M, at the joint centre ``c_j``
(the origin of M). They are zero in the real motion. Their velocity map ``E`` (Eq. 2.4,
``v = D q̇ + E ż``) has, for joint j, a column block that moves the child subtree of j rigidly:

    ż_j = (u, 0):  v_C,b = R_M u,                 ω_b = 0        (b in subtree of j)
    ż_j = (0, r):  v_C,b = R_M r × (C_b − c_j),   ω_b = R_M r

(:func:`open_constraint_map`). The joint load (Eq. 2.10) is

    Λ_j = E_jᵀ (h − M (D q̈ + γ))                                   (6,) per joint and frame

with no matrix inversion: ``E_jᵀ w`` is the sum of the body wrenches of j's subtree, moved to
``c_j`` and expressed in M. Only the subtrees of the chosen joints are visited, so asking for
one joint costs only that joint's subtree (:attr:`JointLoads.work` counts it).
``Λ_j = [forces (N); moments about c_j (N·m)]`` in M axes, with the sign of seed 002: it is the
load the child subtree applies to the parent (``M p̈ = h − Cᵀ λ``, Eq. 2.2). The load the
parent applies to the child through the joint is ``−Λ_j``.

``Λ_j`` splits into the part along the joint's free directions and the constraint reaction:
with ``S_j`` (6 × k_j) the joint's motion subspace (relative twist ``[v at c_j; ω]`` of the
child w.r.t. the parent in M axes per unit coordinate speed),

    τ_j = −S_jᵀ Λ_j                        generalized forces the joint transmits (N·m or N),
    λ_j = Λ_j − S_j (S_jᵀ S_j)⁻¹ S_jᵀ Λ_j  constraint reaction (seed 002's λ, here 6 − k_j
                                            independent components, S_jᵀ λ_j = 0).

For Pin, Slider, Universal, Gimbal, Ball and Free joints and CustomJoints with constant axes
through the joint centre, λ_j is Λ_j with the free components zeroed; for coupled CustomJoints
(knee translations as splines of the angle) it is the Euclidean complement in the joint frame.

The classic formula (Eq. 2.11), ``λ = (C M⁻¹ Cᵀ)⁻¹ (C M⁻¹ h − ξ)`` with the implicit joint
constraints C in absolute coordinates, is :func:`classic_joint_loads` (cross-check and timing).

What is reported, in OpenSim's JointReaction conventions (verified on the pendulum of
``opensim-reference/task6_pendulum``)
---------------------------------------------------------------------------------------------
* **on child**: the force and moment the joint applies to the child body, moment about the
  joint centre (origin of the child frame M); **on parent**: its negative, moment about the
  origin of the parent frame F (``px, py, pz`` = that point).
* **in ground / child / parent / <body>**: vectors rotated into that body's frame; ``p`` is the
  point's position relative to that frame's origin, in its axes.
* **Mobility forces are included**: the generalized forces on the joint's own coordinates
  (CoordinateActuators, or whatever torque the motion requires) are transmitted by the joint,
  so they appear in the moment along the free axis; body forces (muscles along their paths,
  Point/TorqueActuators, external loads) are applied to the bodies and are not part of it.
* **Accelerations**: ``accelerations="motion"`` uses q̈ of the (splined) motion: the loads are
  those that make the motion happen. OpenSim's JointReaction instead integrates nothing but
  computes q̈ from the equations of motion with the actuator forces of ``forces_file``
  (``accelerations="forward"``, :func:`forward_accelerations`); both agree when the forces are
  consistent with the motion (inverse dynamics or static optimization without residuals).

Worked example (pendulum, m = 2 kg, COM 0.6 m below the pin, held still at q = 30° by a
CoordinateActuator ``tau = m g 0.6 sin 30° = 5.88399 N·m``): on rod in ground =
``(0, 19.6133, 0) N``, ``mz = 5.88399 N·m`` (the mobility torque), ``p = (0, 1, 0)``; on rod in
rod = ``(m g sin 30°, m g cos 30°, 0) = (9.80665, 16.98562, 0)``, ``p = (0, 0.1, 0)`` (the pin
is 0.1 m above the body origin). With ``tau = 0`` and ``accelerations="forward"`` the rod
falls (α = −7.9513 rad/s²) and on rod in ground is ``(−8.26327, 14.84250, 0)``, ``mz = 0``.

Model constraints (closed chains: PointConstraint, ConstantDistanceConstraint,
CoordinateCouplerConstraint) enter with Lagrange multipliers μ in forward dynamics
(:func:`forward_accelerations`, :func:`constraint_loads`): their body forces load the joints
like any applied force, their mobility forces (couplers) are transmitted by the joints. With the
motion's accelerations the equations of motion do not fix μ (the joints' generalized forces could
take any share); :func:`motion_constraint_multipliers` takes the least-squares μ, which leaves the
joints the smallest residual generalized forces and is exact when the applied forces are
consistent with the motion. :func:`joint_reactions` uses it when a forces file is given and
otherwise leaves μ out, with a warning (``constraint_forces``). A
PointConstraint's acceleration is held zero in the constraint's ancestor body, as Simbody's Ball
does (it differs from ground by ``2 ω_A × v_rel`` when spline speeds violate the velocity
constraint). Not included:
passive force elements of the model that are not actuators (springs, ligaments,
CoordinateLimitForce: a warning is issued).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ArthronWarning, SolverError, UnsupportedFeature
from ..multibody.kinematics import _cross
from ..multibody.kinematics import (Tree, apply_velocity_map_transpose, compile_model,
                                 forward_kinematics)
from ..multibody.forces import passive_forces
from ..models.model import GROUND, Model, Transform
from .actuators import actuator_forces, path_loads
from .inverse_dynamics import (ExternalLoad, body_wrenches_from_loads, coordinates_from_table,
                               external_loads_from_setup, inverse_dynamics)

__all__ = ["JointLoads", "JointReactionResult", "joint_loads", "open_constraint_map",
           "forward_accelerations", "mass_matrix", "constraint_loads", "motion_constraint_multipliers",
           "classic_joint_loads", "joint_reactions", "reaction_columns"]

_DESCRIPTION = [
    "This file contains the reaction forces and moments",
    "applied to the specified body of a joint pair and expressed  in the specified reference frame.",
    "Units are S.I. units (seconds, meters, Newtons, ...)",
]


# ----------------------------------------------------------------------------- joint data
@dataclass
class _JointInfo:
    name: str
    index: int                 # compiled (tree) joint index
    child_body: int
    parent_body: int           # -1 = ground
    XCM: Transform             # child frame M in the child body
    XPF: Transform             # parent frame F in the parent base body (or ground)
    coords: list               # coordinate indices the joint's nodes depend on (S column order)
    child_name: str
    parent_name: str


def _joint_infos(model: Model, tree: Tree) -> list:
    out = []
    for j, name in enumerate(tree.joint_names):
        jt = model.joints[name]
        _, XCM = model.frame_in_base(jt.child_frame)
        pb, XPF = model.frame_in_base(jt.parent_frame)
        coords = []
        for n in tree.joint_nodes[j]:
            for c in tree.nodes[n].coords:
                if c not in coords:
                    coords.append(c)
        cb = int(tree.joint_child_body[j])
        pbi = int(tree.joint_parent_body[j])
        out.append(_JointInfo(name=name, index=j, child_body=cb, parent_body=pbi, XCM=XCM, XPF=XPF,
                              coords=coords, child_name=tree.body_names[cb],
                              parent_name="ground" if pbi < 0 else tree.body_names[pbi]))
    return out


def _body_parent(tree: Tree) -> np.ndarray:
    bp = np.full(tree.nb, -1)
    bp[tree.joint_child_body] = tree.joint_parent_body
    return bp


def _select(model: Model, tree: Tree, joints) -> list:
    """Compiled joint indices of the requested joints (None / 'ALL': JointSet order)."""
    if joints is None or (isinstance(joints, str) and joints.upper() == "ALL") or \
            (not isinstance(joints, str) and len(joints) == 1 and str(joints[0]).upper() == "ALL"):
        names = list(model.joints)
    else:
        names = [joints] if isinstance(joints, str) else list(joints)
    out = []
    for n in names:
        if n not in tree.joint_names:
            raise SolverError(f"model '{model.name}' has no joint '{n}' (joints: "
                              f"{', '.join(model.joints)})")
        out.append(tree.joint_names.index(n))
    return out


def _subtree_union(tree: Tree, sel) -> list:
    """Bodies of the union of the selected joints' child subtrees, parents first."""
    rank = np.empty(tree.nb, int)
    rank[tree.joint_child_body] = np.arange(len(tree.joint_names))
    bp = _body_parent(tree)
    children = [[] for _ in range(tree.nb)]
    for b in range(tree.nb):
        if bp[b] >= 0:
            children[bp[b]].append(b)
    seen = set()
    stack = [int(tree.joint_child_body[j]) for j in sel]
    while stack:
        b = stack.pop()
        if b in seen:
            continue
        seen.add(b)
        stack.extend(children[b])
    return sorted(seen, key=lambda b: rank[b])


def _rot_apply_T(R, x):
    """Rᵀ x for stacked (T,3,3), (T,3)."""
    return np.einsum("tji,tj->ti", R, x)


# ----------------------------------------------------------------------------- the result of Eq. 2.10
@dataclass
class JointLoads:
    """Joint loads Λ_j = E_jᵀ(h − M(Dq̈ + γ)) of seed 002 Eq. 2.10 for selected joints.

    Attributes
    ----------
    names : list[str]          joint names, in the requested order (n joints)
    Lambda : (T, n, 6)         [force (N); moment about the joint centre (N·m)] in the axes of
                               the joint's child frame M; seed 002's sign (load of the child
                               subtree on the parent). On child = −Lambda.
    centre : (T, n, 3)         joint centre c_j (origin of M) in ground (m)
    R_M : (T, n, 3, 3)         orientation of M in ground
    parent_origin : (T, n, 3)  origin of the parent frame F in ground (m)
    work : dict                ``bodies``: body wrenches formed and summed (the subtree union),
                               ``columns``: columns of E used (6 per joint)
    """

    names: list
    Lambda: np.ndarray
    centre: np.ndarray
    R_M: np.ndarray
    parent_origin: np.ndarray
    work: dict
    infos: list = field(repr=False, default_factory=list)
    tree: Tree | None = field(repr=False, default=None)
    kin: object = field(repr=False, default=None)
    _S: dict = field(repr=False, default_factory=dict)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise SolverError(f"no joint '{name}' among the computed ones "
                              f"({', '.join(self.names)})") from None

    def on_child_in_ground(self, k: int):
        """(force (T,3) N, moment about the joint centre (T,3) N·m) applied by joint k to its child."""
        R = self.R_M[:, k]
        f = -np.einsum("tij,tj->ti", R, self.Lambda[:, k, :3])
        m = -np.einsum("tij,tj->ti", R, self.Lambda[:, k, 3:])
        return f, m

    def motion_subspace(self, k: int):
        """S_j (T, 6, k_j) in M axes, rows [v of the child point at c_j; ω], and its coordinates."""
        if k not in self._S:
            info = self.infos[k]
            S = _motion_subspace(self.tree, self.kin, info, self.centre[:, k], self.R_M[:, k])
            self._S[k] = S
        return self._S[k], [self.tree.coordinate_names[c] for c in self.infos[k].coords]

    def generalized_forces(self, k: int) -> np.ndarray:
        """τ_j = −S_jᵀ Λ_j (T, k_j): the generalized forces joint k transmits (N·m or N)."""
        S, _ = self.motion_subspace(k)
        return -np.einsum("tik,ti->tk", S, self.Lambda[:, k])

    def constraint_reaction(self, k: int) -> np.ndarray:
        """λ_j (T, 6) = Λ_j minus its part along the free directions (S_jᵀ λ_j = 0), M axes."""
        S, _ = self.motion_subspace(k)
        L = self.Lambda[:, k]
        if S.shape[-1] == 0:
            return L.copy()
        P = S @ np.linalg.pinv(S)
        return L - np.einsum("tij,tj->ti", P, L)


def _motion_subspace(tree, kin, info, c, RM):
    T = c.shape[0]
    col = {cc: i for i, cc in enumerate(info.coords)}
    S = np.zeros((T, 6, len(info.coords)))
    for n in tree.joint_nodes[info.index]:
        h = kin.hinge.get(n)
        if h is None:
            continue
        cl, Hw, Hv = h
        r = c - kin.o[:, n]
        for i, cc in enumerate(cl):
            S[:, :3, col[cc]] += Hv[:, :, i] + np.cross(Hw[:, :, i], r)
            S[:, 3:, col[cc]] += Hw[:, :, i]
    S[:, :3] = np.einsum("tji,tjk->tik", RM, S[:, :3])
    S[:, 3:] = np.einsum("tji,tjk->tik", RM, S[:, 3:])
    return S


def _frames_of(tree, kin, infos, sel):
    def Rb(b):
        return kin.node("R", tree.body_node[b])

    def ob(b):
        return kin.node("o", tree.body_node[b])

    T = kin.node("o", 0).shape[0]
    n = len(sel)
    c = np.empty((T, n, 3))
    RM = np.empty((T, n, 3, 3))
    pF = np.empty((T, n, 3))
    for k, j in enumerate(sel):
        inf = infos[j]
        b = inf.child_body
        c[:, k] = ob(b) + Rb(b) @ inf.XCM.p
        RM[:, k] = Rb(b) @ inf.XCM.R
        if inf.parent_body < 0:
            pF[:, k] = inf.XPF.p
        else:
            p = inf.parent_body
            pF[:, k] = ob(p) + Rb(p) @ inf.XPF.p
    return c, RM, pF


def _inertial_wrenches(tree, kin, Ui, loads, return_com=False):
    """``M a − h`` of the bodies Ui: force (T, n, 3) and moment about the mass centre (T, n, 3),
    ground frame (gravity, gyroscopic term and ``loads`` in h) [, mass centres (T, n, 3)].
    Only the body nodes are read (no stacking of all nodes); ``I α + ω × I ω`` is formed in
    the body frames, where I is constant."""
    Ui = np.asarray(Ui, int)
    nodes = tree.body_node[Ui]
    R = kin.nodes("R", nodes)
    w = kin.nodes("w", nodes)
    al = kin.nodes("al", nodes)
    rc = np.einsum("tbij,bj->tbi", R, tree.com[Ui])
    aC = kin.nodes("a", nodes) + _cross(al, rc) + _cross(w, _cross(w, rc))
    F = tree.mass[Ui][None, :, None] * (aC - tree.gravity)
    I = tree.inertia[Ui]
    wb = np.einsum("tbji,tbj->tbi", R, w)
    alb = np.einsum("tbji,tbj->tbi", R, al)
    Mb = np.einsum("bij,tbj->tbi", I, alb) + _cross(wb, np.einsum("bij,tbj->tbi", I, wb))
    Mc = np.einsum("tbij,tbj->tbi", R, Mb)
    if loads:
        Fe, Me = body_wrenches_from_loads(tree, kin, loads)
        F = F - Fe[:, Ui]
        Mc = Mc - Me[:, Ui]
    if return_com:
        return F, Mc, kin.nodes("o", nodes) + rc
    return F, Mc


def joint_loads(model: Model, tree: Tree, q, qd, qdd, loads=(), joints=None, kin=None) -> JointLoads:
    """Seed 002 Eq. 2.10, ``Λ_j = E_jᵀ(h − M(D q̈ + γ))``, for the chosen joints, all frames at once.

    Parameters
    ----------
    model : Model (for the joints' child and parent frames); tree : its compiled form
    q, qd, qdd : (T, nq) coordinates (rad, m), speeds, accelerations in model order
    loads : iterable of :class:`arthron.solvers.inverse_dynamics.ExternalLoad` sampled at the T
        frames (external loads and body forces of actuators/muscles, which enter ``h``)
    joints : None or "ALL" (every joint, JointSet order) or joint names
    kin : optional :class:`Kinematics` of (q, qd, qdd), to share

    Returns
    -------
    JointLoads (see there). ``Eᵀ(·)`` is evaluated as subtree sums: only the bodies of the
    chosen joints' subtrees are visited (``work["bodies"]``).

    Raises
    ------
    SolverError for an unknown joint name.
    """
    q = np.atleast_2d(np.asarray(q, float))
    qd = np.atleast_2d(np.asarray(qd, float))
    qdd = np.atleast_2d(np.asarray(qdd, float))
    sel = _select(model, tree, joints)
    infos = _joint_infos(model, tree)
    if kin is None:
        kin = forward_kinematics(tree, q, qd, qdd)
    U = _subtree_union(tree, sel)
    Ui = np.asarray(U, int)
    F, Mc, Cg = _inertial_wrenches(tree, kin, Ui, list(loads or ()), return_com=True)   # M a − h, bodies of U
    M0 = Mc + _cross(Cg, F)                                             # about the ground origin
    pos = {b: i for i, b in enumerate(U)}
    bp = _body_parent(tree)
    for i in range(len(U) - 1, -1, -1):                                 # subtree sums (E_jᵀ)
        p = bp[U[i]]
        if p in pos:
            F[:, pos[p]] += F[:, i]
            M0[:, pos[p]] += M0[:, i]
    c, RM, pF = _frames_of(tree, kin, infos, sel)
    T = q.shape[0]
    Lam = np.empty((T, len(sel), 6))
    for k, j in enumerate(sel):
        i = pos[infos[j].child_body]
        Fs = F[:, i]
        Ms = M0[:, i] - _cross(c[:, k], Fs)
        Lam[:, k, :3] = -_rot_apply_T(RM[:, k], Fs)
        Lam[:, k, 3:] = -_rot_apply_T(RM[:, k], Ms)
    return JointLoads(names=[infos[j].name for j in sel], Lambda=Lam, centre=c, R_M=RM,
                      parent_origin=pF, work={"bodies": len(U), "columns": 6 * len(sel)},
                      infos=[infos[j] for j in sel], tree=tree, kin=kin)


def open_constraint_map(model: Model, tree: Tree, q, joints=None, kin=None) -> np.ndarray:
    """The matrix E of seed 002 Eq. 2.4 for the chosen joints, explicitly.

    Returns
    -------
    E : (T, nb, 6, 6 n): rows [v_C; ω] of each body (ground), as
        :func:`arthron.multibody.kinematics.velocity_map`; columns: for each chosen joint, unit
        translations along then rotations about the axes of its child frame M at the joint
        centre (z_j of Eq. 2.3). Column block j is non-zero on j's child subtree only.
    """
    q = np.atleast_2d(np.asarray(q, float))
    kin = kin or forward_kinematics(tree, q)
    sel = _select(model, tree, joints)
    infos = _joint_infos(model, tree)
    c, RM, _ = _frames_of(tree, kin, infos, sel)
    Cg = kin.body_com(tree)
    T = q.shape[0]
    E = np.zeros((T, tree.nb, 6, 6 * len(sel)))
    for k, j in enumerate(sel):
        for b in _subtree_union(tree, [j]):
            E[:, b, :3, 6 * k:6 * k + 3] = RM[:, k]
            E[:, b, 3:, 6 * k + 3:6 * k + 6] = RM[:, k]
            r = Cg[:, b] - c[:, k]
            # v_C = (R_M e_i) × r  ->  column i = −[r]× R_M e_i
            E[:, b, :3, 6 * k + 3:6 * k + 6] = -np.cross(r[:, :, None], RM[:, k], axis=1)
    return E


# ----------------------------------------------------------------------------- forward dynamics
@dataclass
class _HingeLayout:
    nodes: list             # variable (hinge) nodes, parents first
    cols: list              # per hinge node: slice of its columns in the node-column space (K)
    anc_cols: list          # per hinge node: columns of its hinge ancestors and itself
    P: np.ndarray           # (K, nq) node column -> coordinate
    identity: bool          # P is a permutation (every coordinate in exactly one node column)
    perm: np.ndarray        # coordinate of each node column
    primary: np.ndarray     # (nq,) first node column of each coordinate (−1: none)
    dups: list              # (column, primary column of the same coordinate) of the others
    node_body: np.ndarray   # per hinge node: the body whose subtree it moves (its joint's child)
    body_parent: np.ndarray  # (nb,) parent body (−1: ground)
    body_order: list        # bodies, parents first


def _hinge_layout(tree) -> _HingeLayout:
    lay = getattr(tree, "_arthron_reactions_layout", None)
    if lay is not None:
        return lay
    N = len(tree.nodes)
    anc = [[] for _ in range(N)]
    for i in range(1, N):
        anc[i] = anc[tree.nodes[i].parent] + [tree.nodes[i].parent]
    hn = [i for i in range(1, N) if tree.nodes[i].kind != "fixed"]
    pos = {n: j for j, n in enumerate(hn)}
    cols, off, coord_of = [], 0, []
    for n in hn:
        k = len(tree.nodes[n].coords)
        cols.append(slice(off, off + k))
        coord_of += list(tree.nodes[n].coords)
        off += k
    anc_cols = []
    for n in hn:
        idx = []
        for m in anc[n] + [n]:
            if m in pos:
                sl = cols[pos[m]]
                idx += list(range(sl.start, sl.stop))
        anc_cols.append(np.array(idx, int))
    P = np.zeros((off, tree.nq))
    P[np.arange(off), coord_of] = 1.0
    perm = np.array(coord_of, int)
    identity = off == tree.nq and len(set(coord_of)) == tree.nq
    primary = np.full(tree.nq, -1)
    dups = []
    for a, cc in enumerate(coord_of):
        if primary[cc] < 0:
            primary[cc] = a
        else:
            dups.append((a, int(primary[cc])))
    jidx = {n: i for i, n in enumerate(tree.joint_names)}
    node_body = np.array([tree.joint_child_body[jidx[tree.nodes[n].joint]] for n in hn], int)
    order = sorted(range(tree.nb), key=lambda b: tree.body_node[b])      # nodes are parents first
    lay = _HingeLayout(hn, cols, anc_cols, P, identity, perm, primary, dups, node_body,
                       _body_parent(tree), order)
    tree._arthron_reactions_layout = lay
    return lay


def mass_matrix(tree: Tree, q, kin=None) -> np.ndarray:
    """The generalized mass matrix ``Dᵀ M D`` (seed 002 Eq. 2.9) by the composite-rigid-body
    algorithm, for T frames at once, without forming D.

    Every variable node n of the tree moves its subtree with spatial velocity columns
    ``Φ_n = [H_ω; H_v + (o_n − p) × H_ω]`` (angular; velocity of the point at p, a point fixed in
    ground at the root body's origin of the frame), and
    ``M = Σ_{m ancestor-or-self of n} Φ_mᵀ I^c_n Φ_n (+ transpose)``, with ``I^c_n`` the spatial
    inertia of n's subtree about p: ``[[J, [h]×], [−[h]×, m]]``, J the
    rotational inertia about p, h the first mass moment, summed over subtrees leaves first.

    Parameters
    ----------
    q : (T, nq); kin : optional Kinematics of q (velocities not needed)

    Returns
    -------
    (T, nq, nq) in model coordinate order (kg·m², kg·m, kg).
    """
    q = np.atleast_2d(np.asarray(q, float))
    kin = kin or forward_kinematics(tree, q)
    lay = _hinge_layout(tree)
    T, nq = q.shape[0], tree.nq
    Mk = _node_mass_matrix(tree, kin, T)
    if lay.identity:
        out = np.empty((nq, nq, T))
        out[lay.perm[:, None], lay.perm[None, :]] = Mk
    else:
        Y = (lay.P.T @ Mk.reshape(Mk.shape[0], -1)).reshape(nq, -1, T)
        out = np.einsum("kbt,bl->klt", Y, lay.P)
    return np.ascontiguousarray(out.transpose(2, 0, 1))


def _node_mass_matrix(tree, kin, T, lower=False):
    """The CRBA mass matrix in node-column space, frames last: (K, K, T) (see
    :func:`mass_matrix`). Columns are ordered parents first, so the pairs (descendant,
    ancestor) are the lower triangle; ``lower=True`` fills only that (and the diagonal blocks)."""
    lay = _hinge_layout(tree)
    nb = tree.nb
    K = lay.P.shape[0]
    if K == 0:
        return np.zeros((0, 0, T))
    # Frames on the last axis from here on: every operation is on contiguous (T,) rows.
    nodes = tree.body_node
    R = np.empty((nb, 3, 3, T))
    c = np.empty((nb, 3, T))
    for b, n in enumerate(nodes):
        R[b] = kin.node("R", n).transpose(1, 2, 0)
        c[b] = kin.node("o", n).T
    # Spatial quantities about a point moving with the root body (its origin, per frame) rather
    # than the ground origin: the same M, without the cancellation m|c|² − … far from the origin.
    ref = kin.node("o", nodes[lay.body_order[0]]).T.copy()                        # (3, T)
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
    for b in lay.body_order[::-1]:
        p = lay.body_parent[b]
        if p >= 0:
            J[p] += J[b]
            hb[p] += hb[b]
            ms[p] += ms[b]
    nh = len(lay.nodes)
    Jc, hc, mcs = J[lay.node_body], hb[lay.node_body], ms[lay.node_body]
    Phi = np.empty((K, 6, T))
    for j, n in enumerate(lay.nodes):
        _, Hw, Hv = kin.hinge[n]
        sl = lay.cols[j]
        w = Hw.transpose(2, 1, 0)
        Phi[sl, :3] = w
        if tree.nodes[n].kind == "rot":
            Phi[sl, 3:] = _cross_tl((kin.node("o", n).T - ref)[None], w)  # o × H_ω (H_v = 0)
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


def _solve_spd_tl(A, b):
    """x with A x = b for symmetric positive definite A (n, n, T) (lower triangle read),
    b (n, T), frames last: Cholesky and two substitutions, each step a vector operation over
    the frames. Returns None when a pivot is not positive (singular or indefinite A)."""
    n, T = b.shape
    L = np.zeros_like(A)
    for j in range(n):
        d = A[j, j] - np.einsum("kt,kt->t", L[j, :j], L[j, :j]) if j else A[j, j].copy()
        if not np.all(d > 0):
            return None
        L[j, j] = np.sqrt(d)
        if j + 1 < n:
            r = A[j + 1:, j] - np.einsum("ikt,kt->it", L[j + 1:, :j], L[j, :j]) if j else A[j + 1:, j]
            L[j + 1:, j] = r / L[j, j]
    y = np.empty_like(b)
    for i in range(n):
        y[i] = (b[i] - np.einsum("kt,kt->t", L[i, :i], y[:i])) / L[i, i]
    x = np.empty_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - np.einsum("kt,kt->t", L[i + 1:, i], x[i + 1:])) / L[i, i]
    return x


def _cross_tl(a, b):
    """a × b over axis −2 (components), frames last: (..., 3, T)."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0, :] = a[..., 1, :] * b[..., 2, :] - a[..., 2, :] * b[..., 1, :]
    out[..., 1, :] = a[..., 2, :] * b[..., 0, :] - a[..., 0, :] * b[..., 2, :]
    out[..., 2, :] = a[..., 0, :] * b[..., 1, :] - a[..., 1, :] * b[..., 0, :]
    return out


def _constraint_bias(cs, tree, q, qd, kin0):
    """b = Ġ q̇ of the constraint rows (so that G q̈ + b = 0 along the motion), (T, m)."""
    T = q.shape[0]

    def pt(b, loc):
        if b < 0:
            z = np.broadcast_to(np.asarray(loc, float), (T, 3))
            return z, np.zeros((T, 3)), np.zeros((T, 3))
        n = tree.body_node[b]
        r = kin0.R[:, n] @ loc
        w, al = kin0.w[:, n], kin0.al[:, n]
        return (kin0.o[:, n] + r, kin0.v[:, n] + np.cross(w, r),
                kin0.a[:, n] + np.cross(al, r) + np.cross(w, np.cross(w, r)))

    bp = _body_parent(tree)

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
        else:
            raise UnsupportedFeature(f"{kind} constraint '{it[1]}' in forward dynamics for joint reactions")
    return np.concatenate(out, -1) if out else np.zeros((T, 0))


def constraint_loads(cs, tree, q, mu, kin0=None):
    """Body loads and mobility forces of constraint multipliers ``mu`` (T, m) (sign of
    :func:`forward_accelerations`: generalized constraint force ``Gᵀ mu``).

    PointConstraint: ``mu`` (N, ground) on body 1 at its point, ``−mu`` on body 2;
    ConstantDistanceConstraint: ``mu u`` and ``−mu u`` along the line of the points;
    CoordinateCouplerConstraint: mobility forces ``mu`` on the dependent and
    ``−mu s f'(q_ind)`` on the independent coordinate (transmitted by their joints).

    Returns
    -------
    loads : list of ExternalLoad; generalized : (T, nq)
    """
    q = np.atleast_2d(q)
    T = q.shape[0]
    kin0 = kin0 or forward_kinematics(tree, q)
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
        else:
            raise UnsupportedFeature(f"{kind} constraint '{it[1]}' in joint reactions")
        for b, loc, sgn in ((it[2], it[3], 1.0), (it[4], it[5], -1.0)):
            if b >= 0:
                loads.append(ExternalLoad(body=tree.body_names[b], force=sgn * f, point=pos(b, loc),
                                          name=f"constraint_{it[1]}"))
    return loads, gen


def forward_accelerations(tree: Tree, q, qd, generalized=None, loads=(), locked=None,
                          constraints=None, return_multipliers=False):
    """q̈ from the equations of motion (seed 002 Eq. 2.9), with model constraints if given.

    ``D̄ᵀMD̄ q̈ = Q + Dᵀh − DᵀMγ + Gᵀμ``, ``G q̈ + Ġq̇ = 0`` (G = ∂c/∂q of
    :class:`arthron.multibody.constraints.ConstraintSet`). This is what OpenSim's JointReaction
    uses: it realizes accelerations with the actuator forces of ``forces_file`` applied.

    Without model constraints the mass matrix comes from the composite-rigid-body algorithm
    (:func:`mass_matrix`, frames last) and is factored by a Cholesky vectorized over the frames;
    the bias ``Dᵀ(Mγ − h)`` is one inverse-dynamics pass at q̈ = 0 (subtree sums). With
    constraints the augmented system ``[M −Gᵀ; G 0]`` is solved frame by frame (batched LAPACK).

    Parameters
    ----------
    q, qd : (T, nq); generalized : (T, nq) or None, mobility forces (CoordinateActuators), N·m or N
    loads : ExternalLoad list (body forces: external loads, muscles along paths)
    locked : (nq,) bool or None, coordinates held at zero acceleration (OpenSim's locked ones)
    constraints : ConstraintSet or None (point, distance and coupler constraints)
    return_multipliers : also return μ (T, m) (see :func:`constraint_loads`)

    Returns
    -------
    (T, nq) accelerations (rad/s², m/s²) [, μ].
    """
    q = np.atleast_2d(np.asarray(q, float))
    qd = np.atleast_2d(np.asarray(qd, float))
    T, nq = q.shape
    kin0 = forward_kinematics(tree, q, qd, np.zeros_like(q))
    F, Mc, com = _inertial_wrenches(tree, kin0, np.arange(tree.nb), list(loads or ()), return_com=True)
    bias = apply_velocity_map_transpose(tree, kin0, F, Mc, com=com)                    # Dᵀ(Mγ − h)
    rhs = -bias if generalized is None else np.asarray(generalized, float) - bias
    free = np.ones(nq, bool) if locked is None else ~np.asarray(locked, bool)
    fi = np.flatnonzero(free)
    qdd = np.zeros((T, nq))
    m = 0 if constraints is None else constraints.size
    lay = _hinge_layout(tree)
    if m == 0 and np.all(lay.primary[fi] >= 0):
        # CRBA in node-column space, frames last; coordinates acting in several nodes (knee
        # translations as functions of the angle) have their columns summed into the first;
        # Cholesky over the frames.
        Mk = _node_mass_matrix(tree, kin0, T, lower=lay.identity)
        for a, a0 in lay.dups:
            Mk[a0] += Mk[a]
        for a, a0 in lay.dups:
            Mk[:, a0] += Mk[:, a]
        cf = np.sort(lay.primary[fi])               # free coordinates' columns, parents first
        x = _solve_spd_tl(Mk[cf[:, None], cf[None, :]], np.ascontiguousarray(rhs[:, lay.perm[cf]].T))
        if x is not None:
            qdd[:, lay.perm[cf]] = x.T
            return (qdd, np.zeros((T, 0))) if return_multipliers else qdd
    Mb = mass_matrix(tree, q, kin0)                                                     # CRBA
    if m == 0:
        qdd[:, fi] = np.linalg.solve(Mb[:, fi][:, :, fi], rhs[:, fi, None])[..., 0]
        mu = np.zeros((T, 0))
    else:
        G = constraints.jacobian(q)[:, :, fi]
        b = _constraint_bias(constraints, tree, q, qd, kin0)
        nf = fi.size
        K = np.zeros((T, nf + m, nf + m))
        K[:, :nf, :nf] = Mb[:, fi][:, :, fi]
        K[:, :nf, nf:] = -np.swapaxes(G, 1, 2)
        K[:, nf:, :nf] = G
        sol = np.linalg.solve(K, np.concatenate([rhs[:, fi], -b], -1)[..., None])[..., 0]
        qdd[:, fi] = sol[:, :nf]
        mu = sol[:, nf:]
    return (qdd, mu) if return_multipliers else qdd


def motion_constraint_multipliers(tree: Tree, constraints, q, qd, qdd, generalized=None, loads=(),
                                  locked=None):
    """Multipliers μ of the model constraints for the motion's own accelerations.

    With q̈ given, the equations of motion ``τ_ID(q, q̇, q̈) = Q + Gᵀμ + r`` (τ_ID = Dᵀ(M(Dq̈ + γ)
    − h) by inverse dynamics with the body ``loads``; Q the applied mobility forces
    ``generalized``) do not determine μ by themselves: the joints' own generalized forces r
    could take any part of the load. μ is chosen to leave the least ``‖r‖`` over the unlocked
    coordinates (least squares, ``μ = (G Gᵀ)⁻¹ G (τ_ID − Q)``, G = ∂c/∂q of the unlocked
    coordinates, full row rank). When the applied forces are consistent with the motion
    (r = 0 possible, e.g. the forces of a forward simulation or of a static optimization that
    includes the constraints) this is the exact μ, the one :func:`forward_accelerations` finds;
    otherwise r is the smallest residual in the coordinates' units (N·m and N weighted alike)
    and the joints transmit it as mobility forces.

    Returns
    -------
    mu : (T, m) in the sign of :func:`forward_accelerations` (see :func:`constraint_loads`);
    residual : (T, nq) r, the generalized forces left to the joints (locked coordinates: all
    of theirs).
    """
    q = np.atleast_2d(np.asarray(q, float))
    T, nq = q.shape
    need = inverse_dynamics(tree, q, qd, qdd, list(loads or ()))
    if generalized is not None:
        need = need - np.asarray(generalized, float)
    free = np.ones(nq, bool) if locked is None else ~np.asarray(locked, bool)
    G = constraints.jacobian(q)[:, :, free]
    A = G @ np.swapaxes(G, 1, 2)
    mu = np.linalg.solve(A, np.einsum("tmk,tk->tm", G, need[:, free])[..., None])[..., 0]
    r = need.copy()
    r[:, free] -= np.einsum("tmk,tm->tk", G, mu)
    return mu, r


# ----------------------------------------------------------------------------- classic formula
def _skew(r):
    z = np.zeros(r.shape[:-1])
    return np.stack([np.stack([z, -r[..., 2], r[..., 1]], -1),
                     np.stack([r[..., 2], z, -r[..., 0]], -1),
                     np.stack([-r[..., 1], r[..., 0], z], -1)], -2)


def classic_joint_loads(model: Model, tree: Tree, q, qd, tau, loads=(), joints=None,
                        chunk: int = 1024, constraints=None, locked=None, return_multipliers=False):
    """The classic formula (seed 002 Eq. 2.11) ``λ = (C M⁻¹ Cᵀ)⁻¹ (C M⁻¹ h − ξ)``, cross-check.

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
    from dataclasses import replace
    return replace(ld, force=None if ld.force is None else ld.force[sl],
                   point=None if ld.point is None else ld.point[sl],
                   torque=None if ld.torque is None else ld.torque[sl])


def _regular_mass(tree):
    if np.any(tree.mass <= 0):
        return False
    return bool(np.all(np.abs(np.linalg.det(tree.inertia)) > 1e-300))


def _classic_chunk(model, tree, q, qd, tau, loads, sel, constraints=None, locked=None):
    T = q.shape[0]
    nb = tree.nb
    infos = _joint_infos(model, tree)
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
                                                            - np.swapaxes(G[:, :3], 1, 2) @ _skew(r))
        r0 += nr
    if mc:
        xi_c = _constraint_bias(constraints, tree, q, qd, kin)   # relative point accelerations, q̈ = 0
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
                        C[:, r0, 6 * b + 3:6 * b + 6] += sgn * (gw - np.einsum("ti,tij->tj", gv, _skew(r)))
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
                C[:, r0:r0 + nr, 6 * b + 3:6 * b + 6] += -sgn * U @ _skew(r)
            r0 += nr
        rows += mc
    xi = np.einsum("tri,ti->tr", C, gam)
    if mc:
        # C_m p̈ = C_m γ − b: b = relative point acceleration at q̈ = 0 holds C_m γ plus the
        # centripetal (and, for distances, the velocity) terms that p̈ does not carry
        xi[:, rows - mc:] -= xi_c
    if _regular_mass(tree):
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


# ----------------------------------------------------------------------------- OpenSim outputs
def _frame_keyword(model: Model, info: _JointInfo, frame: str):
    """(base body index or -1 for ground, transform in the base or None, label) of an
    ``express_in_frame`` entry, accepted as OpenSim 4.6 accepts it (measured): ``ground`` or
    ``/ground``; a body name or ``/bodyset/<body>``; the full path of an offset frame
    (``/jointset/pin/rod_offset``; its bare name is refused by OpenSim and here); the keywords
    ``child`` / ``parent`` in any case (the joint's child / parent body). ``Ground`` is refused."""
    if not isinstance(frame, str) or not frame.strip():
        raise SolverError(f"express_in_frame must be 'ground', 'child', 'parent' or a frame name, "
                          f"got {frame!r}")
    f = frame.strip()
    if f in ("ground", GROUND):
        return -1, None, "ground"
    name = f[len("/bodyset/"):] if f.startswith("/bodyset/") else f
    if name in model.bodies:
        return list(model.bodies).index(name), None, name
    if f in model.frames:
        base, X = model.frame_in_base(f)
        b = -1 if base == GROUND else list(model.bodies).index(base[len("/bodyset/"):])
        return b, X, model.frames[f].name
    low = f.lower()
    if low == "child":
        return info.child_body, None, info.child_name
    if low == "parent":
        return info.parent_body, None, info.parent_name
    raise SolverError(f"express_in_frame '{frame}' is not 'ground', 'child', 'parent', a body of model "
                      f"'{model.name}' ({', '.join(model.bodies)}) or the path of one of its frames "
                      "(OpenSim: \"must either be a Frame name or the keyword 'child' or 'parent'\")")


def _on_keyword(on: str) -> bool:
    low = str(on).strip().lower()
    if low not in ("child", "parent"):
        raise SolverError(f"apply_on_bodies must be 'child' or 'parent', got {on!r}")
    return low == "child"


def _per_joint(value, n, what):
    if isinstance(value, str):
        return [value] * n
    v = list(value)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise SolverError(f"{what} has {len(v)} entries for {n} joints (give one, or one per joint)")
    return v


def reaction_columns(model: Model, tree: Tree, loads: JointLoads, on="child", in_frame="ground"):
    """OpenSim JointReaction columns for the joints of ``loads``.

    Parameters
    ----------
    on : "child" | "parent", or one per joint (OpenSim's ``apply_on_bodies``)
    in_frame : "ground" | "child" | "parent" | a body or offset frame name, or one per joint
        (``express_in_frame``; the keywords name the joint's child/parent *body* frame, as
        OpenSim's labels ``_in_<body>`` show)

    Returns
    -------
    labels : list[str] ``<joint>_on_<body>_in_<frame>_{fx,fy,fz,mx,my,mz,px,py,pz}``
    data : (T, 9 n) forces (N), moments (N·m) about the joint centre (on child: origin of the
        child frame; on parent: origin of the parent frame) and that point (m), all in the frame.

    Raises
    ------
    SolverError for an ``on`` other than child/parent or a frame OpenSim would not find.
    """
    n = len(loads.names)
    ons = _per_joint(on, n, "apply_on_bodies")
    frames = _per_joint(in_frame, n, "express_in_frame")
    kin = loads.kin
    Rb = kin.R[:, tree.body_node]
    ob = kin.o[:, tree.body_node]
    T = loads.Lambda.shape[0]
    labels, cols = [], []
    for k, info in enumerate(loads.infos):
        child = _on_keyword(ons[k])
        fb, X, fname = _frame_keyword(model, info, frames[k])
        f, m = loads.on_child_in_ground(k)
        if child:
            p = loads.centre[:, k]
            body = info.child_name
        else:
            pF = loads.parent_origin[:, k]
            m = -m + np.cross(loads.centre[:, k] - pF, -f)
            f = -f
            p = pF
            body = info.parent_name
        if fb >= 0 or X is not None:
            R = np.broadcast_to(np.eye(3), (T, 3, 3)) if fb < 0 else Rb[:, fb]
            o = np.zeros((T, 3)) if fb < 0 else ob[:, fb]
            if X is not None:
                o = o + R @ X.p
                R = R @ X.R
            f, m, p = _rot_apply_T(R, f), _rot_apply_T(R, m), _rot_apply_T(R, p - o)
        root = f"{info.name}_on_{body}_in_{fname}"
        labels += [f"{root}_{s}" for s in ("fx", "fy", "fz", "mx", "my", "mz", "px", "py", "pz")]
        cols += [f, m, p]
    data = np.concatenate(cols, axis=1) if cols else np.zeros((T, 0))
    return labels, data


@dataclass
class JointReactionResult:
    """Joint reactions in OpenSim's JointReaction layout.

    time : (T,) s; labels : 9 per requested joint; data : (T, 9 n); loads : the
    :class:`JointLoads` (Λ, decomposition into generalized forces and λ); q, qd, qdd : the
    states used (rad, m); residual : (T, nq) or None, generalized forces the motion needs beyond
    the applied mobility forces (inverse dynamics minus CoordinateActuators, body forces
    accounted), N·m or N.
    """

    time: np.ndarray
    labels: list
    data: np.ndarray
    loads: JointLoads = field(repr=False, default=None)
    q: np.ndarray | None = field(repr=False, default=None)
    qd: np.ndarray | None = field(repr=False, default=None)
    qdd: np.ndarray | None = field(repr=False, default=None)
    residual: np.ndarray | None = field(repr=False, default=None)

    def to_table(self):
        from ..tables import Table
        return Table(name="Joint Reaction Loads", time=np.array(self.time, float), labels=list(self.labels),
                     data=np.array(self.data, float), in_degrees=False, comments=list(_DESCRIPTION))

    def write(self, path):
        """Write the ``.sto`` (whole or not at all); returns ``path``."""
        from ..io.sto import write_sto
        write_sto(path, self.to_table())
        return path

    def column(self, label: str) -> np.ndarray:
        return self.data[:, self.labels.index(label)]


def _warn_unmodelled(model: Model, accelerations: str, constraint_forces: str = "least_squares"):
    if accelerations == "motion" and constraint_forces == "none" and any(c.enabled for c in model.constraints):
        kinds = ", ".join(c.type for c in model.constraints if c.enabled)
        warnings.warn(f"model '{model.name}' has constraints ({kinds}); "
                      "with the motion's accelerations and no forces file their forces are not part of the "
                      "joint reactions (give the forces, or use constraint_forces='least_squares' or "
                      "accelerations='forward' to include them)",
                      ArthronWarning,
                      stacklevel=3)


# ----------------------------------------------------------------------------- end to end
def joint_reactions(model: Model, motion_table, forces_table=None, external_loads=None, joints=None,
                    on="child", in_frame="ground", lowpass_hz=None, time_range=None, *,
                    accelerations="motion", loads_table=None, in_degrees=None,
                    constraint_forces="auto", tree: Tree | None = None) -> JointReactionResult:
    """Joint reactions of a motion, in OpenSim JointReaction's layout (``arthron jr``).

    Parameters
    ----------
    model : Model; motion_table : arthron.io.sto.Table of coordinates (degrees honoured)
    forces_table : Table of actuator forces (static optimization ``_force.sto``) or None
    external_loads : arthron.io.setup.ExternalLoads or None (GRF etc.; ``loads_table`` = its data,
        default its ``datafile``)
    joints : None / "ALL" / list of joint names; on : "child" | "parent" (or one per joint);
    in_frame : "ground" | "child" | "parent" | body name or frame path (or one per joint)
    lowpass_hz, time_range : coordinate preprocessing as OpenSim's AnalyzeTool
        (:func:`arthron.solvers.filtering.prepare_coordinates`)
    accelerations : "motion" (q̈ of the splined motion: the loads that produce the motion) or
        "forward" (q̈ from the equations of motion with the forces of ``forces_table``: OpenSim's
        JointReaction; locked coordinates held, model constraints with multipliers whose body
        forces load the joints)
    constraint_forces : with the motion's accelerations, how the model constraints' multipliers
        are found (:func:`motion_constraint_multipliers`): "least_squares" (the constraints carry
        what they can of the generalized forces the motion needs beyond the applied ones: exact
        when the forces are consistent with the motion), "none" (left out, with a warning), or
        "auto" (default): least squares when ``forces_table`` is given, else none: without
        applied forces all the generalized forces are residual and least squares would load
        the constraints with whatever they can take (up to ~280 N at the Thoracoscapular AC
        joint for a gravity-only moving trial), which nothing in the data supports

    Models with constraints have their coordinates assembled first (nearest configuration
    satisfying them), as OpenSim's tools do.

    Returns
    -------
    JointReactionResult (``.write(path)`` gives the ``.sto``).

    Raises
    ------
    SolverError (unknown joint, bad ``on``/``in_frame``, bad ``accelerations``),
    DataFileError (motion or forces file not matching the model), UnsupportedFeature (muscle
    forces without path geometry).
    """
    from .filtering import prepare_coordinates
    if accelerations not in ("motion", "forward"):
        raise SolverError(f"accelerations must be 'motion' or 'forward', got {accelerations!r}")
    if constraint_forces not in ("auto", "least_squares", "none"):
        raise SolverError(f"constraint_forces must be 'auto', 'least_squares' or 'none', got {constraint_forces!r}")
    if constraint_forces == "auto":
        constraint_forces = "none" if forces_table is None else "least_squares"
    tree = tree or compile_model(model)
    _warn_unmodelled(model, accelerations, constraint_forces)
    sel = _select(model, tree, joints)                 # fail early on names, on/in keywords
    infos = _joint_infos(model, tree)
    for k, (o, f) in enumerate(zip(_per_joint(on, len(sel), "apply_on_bodies"),
                                   _per_joint(in_frame, len(sel), "express_in_frame"))):
        _on_keyword(o)
        _frame_keyword(model, infos[sel[k]], f)
    vals = coordinates_from_table(model, motion_table, in_degrees=in_degrees)
    lp = None if lowpass_hz is None or lowpass_hz <= 0 else float(lowpass_hz)
    t, q, qd, qdd = prepare_coordinates(np.asarray(motion_table.time, float), vals, lp, time_range)
    if any(c.enabled for c in model.constraints):
        from ..multibody.constraints import assemble
        q = assemble(model, tree, q)      # as OpenSim's tools set the coordinates (assembly)
    if tree.angular_velocity_groups:
        # OpenSim's tools set each coordinate's speed u to the spline derivative; for
        # Ellipsoid-type mobilizers u is an angular velocity (as in inverse dynamics).
        from ..multibody.kinematics import qdot_from_speeds
        qd, qdd = qdot_from_speeds(tree, q, qd, qdd)
    loads = []
    if external_loads is not None:
        if loads_table is None:
            loads_table = external_loads.load_table()
        loads += external_loads_from_setup(model, external_loads, loads_table, t)
    gen = None
    if forces_table is not None:
        gen, act_loads = actuator_forces(model, tree, forces_table, t, q=q)
        loads += act_loads
    # Passive elements act as in OpenSim's AnalyzeTool: springs and limit forces on their
    # coordinates, ligaments along their paths (body forces, so they change the reactions).
    pf = passive_forces(model, tree, q, qd, exclude=("Actuators",))
    if pf.not_applied:
        warnings.warn(f"model '{model.name}' has force elements arthron does not apply in joint reactions: "
                      + ", ".join(f"{t_} {n}" for t_, n in pf.not_applied[:6]), ArthronWarning, stacklevel=2)
    if pf.mobility.any():
        gen = pf.mobility if gen is None else gen + pf.mobility
    if pf.path_names:
        from ..multibody.paths import compile_paths
        p_loads, p_gen = path_loads(compile_paths(model, tree, forces=pf.path_names), tree, q, pf.tensions)
        loads += p_loads
        if p_gen.any():
            gen = p_gen if gen is None else gen + p_gen
    cs = None
    if any(c.enabled for c in model.constraints):
        from ..multibody.constraints import compile_constraints
        cs = compile_constraints(model, tree)
    locked = np.array([c.locked for c in model.coordinates.values()])
    mu = None
    if accelerations == "forward":
        qdd, mu = forward_accelerations(tree, q, qd, gen, loads, locked=locked, constraints=cs,
                                        return_multipliers=True)
    elif cs is not None and constraint_forces == "least_squares":
        mu, _ = motion_constraint_multipliers(tree, cs, q, qd, qdd, gen, loads, locked=locked)
    if cs is not None and mu is not None:
        c_loads, c_gen = constraint_loads(cs, tree, q, mu)
        loads = loads + c_loads
        gen = c_gen if gen is None else gen + c_gen
    jl = joint_loads(model, tree, q, qd, qdd, loads, joints)
    labels, data = reaction_columns(model, tree, jl, on, in_frame)
    residual = None
    if forces_table is not None:
        residual = inverse_dynamics(tree, q, qd, qdd, loads) - gen
    return JointReactionResult(time=t, labels=labels, data=data, loads=jl, q=q, qd=qd, qdd=qdd,
                               residual=residual)


