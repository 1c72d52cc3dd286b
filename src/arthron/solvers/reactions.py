"""Joint reaction loads by the E-matrix of the augmented joint coordinate method
(Blajer & Czaplicki 2005).

Formulation (Blajer & Czaplicki 2005, Eqs. 2.3-2.10, written in 3D)
-------------------------------------------------------------------
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
``Λ_j = [forces (N); moments about c_j (N·m)]`` in M axes, with the sign of Blajer & Czaplicki: it is the
load the child subtree applies to the parent (``M p̈ = h − Cᵀ λ``, Eq. 2.2). The load the
parent applies to the child through the joint is ``−Λ_j``.

``Λ_j`` splits into the part along the joint's free directions and the constraint reaction:
with ``S_j`` (6 × k_j) the joint's motion subspace (relative twist ``[v at c_j; ω]`` of the
child w.r.t. the parent in M axes per unit coordinate speed),

    τ_j = −S_jᵀ Λ_j                        generalized forces the joint transmits (N·m or N),
    λ_j = Λ_j − S_j (S_jᵀ S_j)⁻¹ S_jᵀ Λ_j  constraint reaction (Blajer & Czaplicki's λ, here 6 − k_j
                                            independent components, S_jᵀ λ_j = 0).

For Pin, Slider, Universal, Gimbal, Ball and Free joints and CustomJoints with constant axes
through the joint centre, λ_j is Λ_j with the free components zeroed; for coupled CustomJoints
(knee translations as splines of the angle) it is the Euclidean complement in the joint frame.

The classic formula (Eq. 2.11), ``λ = (C M⁻¹ Cᵀ)⁻¹ (C M⁻¹ h − ξ)`` with the implicit joint
constraints C in absolute coordinates, is :func:`arthron.solvers.reactions_classic.classic_joint_loads`
(cross-check and timing).

The multibody parts this module uses live in :mod:`arthron.multibody`: forward kinematics and
the velocity map (``kinematics``), body wrenches ``M a − h`` (``inverse_dynamics``), forward
accelerations (``forward_dynamics``, CRBA ``mass_matrix``) and the model constraints'
multipliers and loads (``constrained_dynamics``). ``forward_accelerations``, ``mass_matrix``,
``constraint_loads`` and ``motion_constraint_multipliers`` stay importable from here.

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
  (``accelerations="forward"``, :func:`~arthron.multibody.forward_dynamics.forward_accelerations`); both agree when the forces are
  consistent with the motion (inverse dynamics or static optimization without residuals).

Worked example (pendulum, m = 2 kg, COM 0.6 m below the pin, held still at q = 30° by a
CoordinateActuator ``tau = m g 0.6 sin 30° = 5.88399 N·m``): on rod in ground =
``(0, 19.6133, 0) N``, ``mz = 5.88399 N·m`` (the mobility torque), ``p = (0, 1, 0)``; on rod in
rod = ``(m g sin 30°, m g cos 30°, 0) = (9.80665, 16.98562, 0)``, ``p = (0, 0.1, 0)`` (the pin
is 0.1 m above the body origin). With ``tau = 0`` and ``accelerations="forward"`` the rod
falls (α = −7.9513 rad/s²) and on rod in ground is ``(−8.26327, 14.84250, 0)``, ``mz = 0``.

Model constraints (closed chains: PointConstraint, ConstantDistanceConstraint,
CoordinateCouplerConstraint) enter with Lagrange multipliers μ in forward dynamics
(:mod:`arthron.multibody.forward_dynamics`, :mod:`arthron.multibody.constrained_dynamics`): their body forces load the joints
like any applied force, their mobility forces (couplers) are transmitted by the joints. With the
motion's accelerations the equations of motion do not fix μ (the joints' generalized forces could
take any share); :func:`~arthron.multibody.constrained_dynamics.motion_constraint_multipliers` takes the least-squares μ, which leaves the
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

from ..tables import Table, input_files

from ..errors import ArthronWarning, OptionError, SolverError
from ..geometry.spatial import cross
from ..models.model import GROUND, Model, Transform
from ..multibody.constrained_dynamics import constraint_loads as _constraint_loads
from ..multibody.constrained_dynamics import motion_constraint_multipliers as _motion_multipliers
from ..multibody.forces import passive_forces
from ..multibody.forward_dynamics import forward_accelerations
from ..multibody.inverse_dynamics import inertial_wrenches, inverse_dynamics
from ..multibody.frames_last import kinematics_frames_last
from ..multibody.kinematics import Tree, compile_model, forward_kinematics
from ..multibody.mass_matrix import mass_matrix
from .actuators import activation_actuator_forces, actuator_forces, path_loads
from .inverse_dynamics import coordinates_from_table, external_loads_from_setup, frame_chunks, slice_loads

__all__ = ["JointLoads", "JointReactionResult", "joint_loads", "open_constraint_map", "joint_reactions",
           "reaction_columns",
           # moved to arthron.multibody, importable from here for existing callers:
           "forward_accelerations", "mass_matrix", "constraint_loads", "motion_constraint_multipliers"]

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


def _joint_infos(tree: Tree) -> list:
    """Per compiled joint, its frames and bodies (read from the tree's fields)."""
    out = []
    for j, name in enumerate(tree.joint_names):
        cb = int(tree.joint_child_body[j])
        pbi = int(tree.joint_parent_body[j])
        out.append(_JointInfo(name=name, index=j, child_body=cb, parent_body=pbi,
                              XCM=tree.joint_child_frame[j], XPF=tree.joint_parent_frame[j],
                              coords=tree.joint_node_coords[j], child_name=tree.body_names[cb],
                              parent_name="ground" if pbi < 0 else tree.body_names[pbi]))
    return out


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
            raise OptionError(f"model '{model.name}' has no joint '{n}' (joints: "
                              f"{', '.join(model.joints)})", model.source)
        out.append(tree.joint_names.index(n))
    return out


def _subtree_union(tree: Tree, sel) -> list:
    """Bodies of the union of the selected joints' child subtrees, parents first."""
    children = tree.body_children
    seen = set()
    stack = [int(tree.joint_child_body[j]) for j in sel]
    while stack:
        b = stack.pop()
        if b in seen:
            continue
        seen.add(b)
        stack.extend(children[b])
    return sorted(seen, key=lambda b: tree.body_node[b])   # joint order: parents first


def _rot_apply_T(R, x):
    """Rᵀ x for stacked (T,3,3), (T,3)."""
    return np.einsum("tji,tj->ti", R, x)


# ----------------------------------------------------------------------------- the result of Eq. 2.10
@dataclass
class JointLoads:
    """Joint loads Λ_j = E_jᵀ(h − M(Dq̈ + γ)) (Blajer & Czaplicki 2005, Eq. 2.10) for selected joints.

    Attributes
    ----------
    names : list[str]          joint names, in the requested order (n joints)
    Lambda : (T, n, 6)         [force (N); moment about the joint centre (N·m)] in the axes of
                               the joint's child frame M; the paper's sign (load of the child
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
    _q: object = field(repr=False, default=None)

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
            if self.kin.hinge is None:        # frames-last kinematics carry no frames-first hinge
                self.kin = forward_kinematics(self.tree, self._q)     # data: the partial velocities
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


def joint_loads(model: Model, tree: Tree, q, qd, qdd, loads=(), joints=None, kin=None,
                core: str = "frames_last") -> JointLoads:
    """Blajer & Czaplicki 2005, Eq. 2.10: ``Λ_j = E_jᵀ(h − M(D q̈ + γ))``, for the chosen joints, all frames at once.

    Parameters
    ----------
    model : Model (for the joints' child and parent frames); tree : its compiled form
    q, qd, qdd : (T, nq) coordinates (rad, m), speeds, accelerations in model order
    loads : iterable of :class:`arthron.solvers.inverse_dynamics.ExternalLoad` sampled at the T
        frames (external loads and body forces of actuators/muscles, which enter ``h``)
    joints : None or "ALL" (every joint, JointSet order) or joint names
    kin : optional :class:`Kinematics` of (q, qd, qdd), to share
    core : "frames_last" (default) computes the kinematics on the frames-last core
        (:func:`arthron.multibody.frames_last.kinematics_frames_last`, seen as frames-first views);
        "reference" by :func:`arthron.multibody.kinematics.forward_kinematics`. Both agree to
        1e-12 relative (``tests/test_reactions_frames_last.py``).

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
    infos = _joint_infos(tree)
    if kin is None:
        if core == "reference":
            kin = forward_kinematics(tree, q, qd, qdd)
        elif core == "frames_last":
            kin = kinematics_frames_last(tree, q, qd, qdd).frames_first()
        else:
            raise ValueError(f"core must be 'frames_last' or 'reference', got {core!r}")
    U = _subtree_union(tree, sel)
    Ui = np.asarray(U, int)
    F, Mc, Cg = inertial_wrenches(tree, kin, Ui, loads)                # M a − h, bodies of U
    M0 = Mc + cross(Cg, F)                                             # about the ground origin
    pos = {b: i for i, b in enumerate(U)}
    bp = tree.body_parent
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
        Ms = M0[:, i] - cross(c[:, k], Fs)
        Lam[:, k, :3] = -_rot_apply_T(RM[:, k], Fs)
        Lam[:, k, 3:] = -_rot_apply_T(RM[:, k], Ms)
    return JointLoads(names=[infos[j].name for j in sel], Lambda=Lam, centre=c, R_M=RM,
                      parent_origin=pF, work={"bodies": len(U), "columns": 6 * len(sel)},
                      infos=[infos[j] for j in sel], tree=tree, kin=kin, _q=q)


def open_constraint_map(model: Model, tree: Tree, q, joints=None, kin=None) -> np.ndarray:
    """The matrix E of Blajer & Czaplicki 2005, Eq. 2.4, for the chosen joints, explicitly.

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
    infos = _joint_infos(tree)
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


# ----------------------------------------------------------------------------- former homes
def constraint_loads(cs, tree: Tree, q, mu, kin0=None):
    """:func:`arthron.multibody.constrained_dynamics.constraint_loads` with this module's former
    argument order ``(constraints, tree, q, mu)``, kept for existing callers."""
    return _constraint_loads(tree, q, cs, mu, kin0)


def motion_constraint_multipliers(tree: Tree, constraints, q, qd, qdd, generalized=None, loads=(),
                                  locked=None):
    """:func:`arthron.multibody.constrained_dynamics.motion_constraint_multipliers` with this
    module's former argument order ``(tree, constraints, q, qd, qdd, ...)``, kept for existing
    callers."""
    return _motion_multipliers(tree, q, qd, qdd, constraints, generalized, loads, locked)


# ----------------------------------------------------------------------------- OpenSim outputs
def _frame_keyword(model: Model, info: _JointInfo, frame: str):
    """(base body index or -1 for ground, transform in the base or None, label) of an
    ``express_in_frame`` entry, accepted as OpenSim 4.6 accepts it (measured): ``ground`` or
    ``/ground``; a body name or ``/bodyset/<body>``; the full path of an offset frame
    (``/jointset/pin/rod_offset``; its bare name is refused by OpenSim and here); the keywords
    ``child`` / ``parent`` in any case (the joint's child / parent body). ``Ground`` is refused."""
    if not isinstance(frame, str) or not frame.strip():
        raise OptionError(f"express_in_frame must be 'ground', 'child', 'parent' or a frame name, "
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
    raise OptionError(f"express_in_frame '{frame}' is not 'ground', 'child', 'parent', a body of model "
                      f"'{model.name}' ({', '.join(model.bodies)}) or the path of one of its frames "
                      "(OpenSim: \"must either be a Frame name or the keyword 'child' or 'parent'\")",
                      model.source)


def _on_keyword(on: str) -> bool:
    low = str(on).strip().lower()
    if low not in ("child", "parent"):
        raise OptionError(f"apply_on_bodies must be 'child' or 'parent', got {on!r}")
    return low == "child"


def _per_joint(value, n, what):
    if isinstance(value, str):
        return [value] * n
    v = list(value)
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise OptionError(f"{what} has {len(v)} entries for {n} joints (give one, or one per joint)")
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
    kin = loads.kin                      # body frames read per joint (none stacked for ground)
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
            R = np.broadcast_to(np.eye(3), (T, 3, 3)) if fb < 0 else kin.node("R", tree.body_node[fb])
            o = np.zeros((T, 3)) if fb < 0 else kin.node("o", tree.body_node[fb])
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

    time : (T,) s; labels : 9 per requested joint; data : (T, 9 n), N and N·m; loads : the
    :class:`JointLoads` (Λ, decomposition into generalized forces and λ; None for trials longer
    than one chunk of frames, :data:`arthron.solvers.inverse_dynamics.FRAME_CHUNK`, whose
    decomposition is not kept so that memory stays bounded); q, qd, qdd : the
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
    inputs: tuple = field(default=(), repr=False, compare=False)    # files read: write_sto refuses them

    def to_table(self):
        return Table(name="Joint Reaction Loads", time=np.array(self.time, float), labels=list(self.labels),
                     data=np.array(self.data, float), in_degrees=False, comments=list(_DESCRIPTION),
                     inputs=self.inputs)

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
    model : Model; motion_table : arthron.io.sto.Table of coordinates (degrees honoured), or
        the ModelStates of a states file (:mod:`arthron.solvers.states_file`: q and speeds as
        given, muscles at the file's states; ``accelerations="forward"``; no filter, no range)
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
        forces load the joints; without ``forces_table`` the muscles pull with their forces at
        their default, unequilibrated states, as in OpenSim:
        :mod:`arthron.solvers.muscle_states`, other muscle classes apply none, with a warning)
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
    JointReactionResult (``.to_table()`` gives OpenSim's ``_ReactionLoads`` table).

    Raises
    ------
    OptionError, a SolverError (unknown joint, bad ``on``/``in_frame``, bad ``accelerations``),
    DataFileError (motion or forces file not matching the model), UnsupportedFeature (muscle
    forces without path geometry).
    """
    from .filtering import lowpass_cutoff, prepare_coordinates
    if accelerations not in ("motion", "forward"):
        raise OptionError(f"accelerations must be 'motion' or 'forward', got {accelerations!r}")
    if constraint_forces not in ("auto", "least_squares", "none"):
        raise OptionError(f"constraint_forces must be 'auto', 'least_squares' or 'none', got {constraint_forces!r}")
    if constraint_forces == "auto":
        constraint_forces = "none" if forces_table is None else "least_squares"
    tree = tree or compile_model(model)
    _warn_unmodelled(model, accelerations, constraint_forces)
    sel = _select(model, tree, joints)                 # fail early on names, on/in keywords
    infos = _joint_infos(tree)
    for k, (o, f) in enumerate(zip(_per_joint(on, len(sel), "apply_on_bodies"),
                                   _per_joint(in_frame, len(sel), "express_in_frame"))):
        _on_keyword(o)
        _frame_keyword(model, infos[sel[k]], f)
    muscle_states = getattr(motion_table, "muscles", None)
    if muscle_states is not None:                # a states file's ModelStates: q, u as given
        if accelerations != "forward":
            raise OptionError("the joint reactions of a states file take the accelerations of "
                              "forward dynamics (accelerations='forward'), as OpenSim's JointReaction")
        t, q, qd = motion_table.time, motion_table.q, motion_table.u
        qdd = np.zeros_like(q)
    else:
        vals = coordinates_from_table(model, motion_table, in_degrees=in_degrees)
        lp = lowpass_cutoff(lowpass_hz)  # (a str, NaN: OptionError, not a TypeError here)
        t, q, qd, qdd = prepare_coordinates(np.asarray(motion_table.time, float), vals, lp, time_range,
                                            source=getattr(motion_table, "source", None))
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
    cs = None
    if any(c.enabled for c in model.constraints):
        from ..multibody.constraints import compile_constraints
        cs = compile_constraints(model, tree)
    locked = np.array([c.locked for c in model.coordinates.values()])
    muscles = None
    if forces_table is None and accelerations == "forward":
        # OpenSim's JointReaction without a forces file: the muscles pull at their default states
        from .muscle_states import default_state_muscles
        muscles = default_state_muscles(model, tree, states=muscle_states)
        if muscles.others:
            warnings.warn(f"model '{model.name}': {len(muscles.others)} muscles "
                          f"({', '.join(sorted({m.type for m in muscles.others}))}) apply no force "
                          "in the joint reactions (OpenSim applies them at their default states)",
                          ArthronWarning, stacklevel=2)
    # frames in chunks: peak memory bounded whatever the trial's length, same numbers
    chunks = frame_chunks(len(t))
    data = residual = jl = labels = None
    qdd_out = np.empty_like(qdd)
    for s_ in chunks:
        labels, d, jl_s, res_s, qdd_out[s_] = _reaction_chunk(
            model, tree, t[s_], q[s_], qd[s_], qdd[s_], slice_loads(loads, s_), forces_table,
            accelerations, constraint_forces, cs, locked, joints, on, in_frame,
            None if muscles is None else muscles.rows(s_))
        if data is None:
            data = np.empty((len(t), d.shape[1]))
            residual = None if res_s is None else np.empty((len(t), res_s.shape[1]))
        data[s_] = d
        if residual is not None:
            residual[s_] = res_s
        jl = jl_s if len(chunks) == 1 else None      # the per-frame decomposition of short trials
    qdd = qdd_out
    return JointReactionResult(time=t, labels=labels, data=data, loads=jl, q=q, qd=qd, qdd=qdd,
                               residual=residual, inputs=input_files(model, motion_table, forces_table, loads_table))


def _reaction_chunk(model, tree, t, q, qd, qdd, loads, forces_table, accelerations,
                    constraint_forces, cs, locked, joints, on, in_frame, muscles=None):
    """Joint reactions of one chunk of frames: (labels, data, JointLoads, residual, q̈).
    ``muscles``: DefaultStateMuscles whose default-state forces apply (no forces table), with
    the ActivationCoordinateActuators' forces at their states (:func:`activation_actuator_forces`)."""
    loads = list(loads)
    gen = None
    if forces_table is not None:
        gen, act_loads = actuator_forces(model, tree, forces_table, t, q=q)
        loads += act_loads
    elif muscles is not None and muscles.paths is not None:
        m_loads, m_gen = muscles.path_loads(tree, q, qd)
        loads += m_loads
        gen = m_gen if m_gen.any() else None
    # Passive elements act as in OpenSim's AnalyzeTool: springs and limit forces on their
    # coordinates, ligaments along their paths (body forces, so they change the reactions).
    pf = passive_forces(model, tree, q, qd, exclude=("Actuators",))
    if pf.not_applied:
        warnings.warn(f"model '{model.name}' has force elements arthron does not apply in joint reactions: "
                      + ", ".join(f"{t_} {n}" for t_, n in pf.not_applied[:6]), ArthronWarning, stacklevel=3)
    if muscles is not None:      # OpenSim's route without a forces file: its actuators at their
        aca = activation_actuator_forces(model, tree, len(q), muscles.states)   # states
        if aca is not None:
            pf.mobility = pf.mobility + aca
    if pf.mobility.any():
        gen = pf.mobility if gen is None else gen + pf.mobility
    loads += pf.loads or []
    if pf.path_names:
        p_loads, p_gen = path_loads(pf.paths, tree, q, pf.tensions)
        loads += p_loads
        if p_gen.any():
            gen = p_gen if gen is None else gen + p_gen
    mu = None
    if accelerations == "forward":
        qdd, mu = forward_accelerations(tree, q, qd, gen, loads, locked=locked, constraints=cs,
                                        return_multipliers=True)
    elif cs is not None and constraint_forces == "least_squares":
        mu, _ = _motion_multipliers(tree, q, qd, qdd, cs, gen, loads, locked=locked)
    if cs is not None and mu is not None:
        c_loads, c_gen = _constraint_loads(tree, q, cs, mu)
        loads = loads + c_loads
        gen = c_gen if gen is None else gen + c_gen
    jl = joint_loads(model, tree, q, qd, qdd, loads, joints)
    labels, data = reaction_columns(model, tree, jl, on, in_frame)
    residual = None
    if forces_table is not None:
        residual = inverse_dynamics(tree, q, qd, qdd, loads) - (0 if gen is None else gen)
    return labels, data, jl, residual, qdd


