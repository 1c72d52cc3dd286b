"""Muscle forces, constraint multipliers and the glenohumeral joint reaction along a generated
shoulder motion: the load sharing of Sarshari et al. (2021), "A Matlab toolbox for
scaled-generic modeling of shoulder and elbow", Sci Rep 11:20806, Eq. 12.

Per frame the unknowns are the muscle forces f (0 ≤ f ≤ f_max) and the multipliers λ of the
model's constraints (the scapulothoracic ellipsoid constraints: λ_TS, λ_AI, Eq. 11), with::

    minimize   Σ_i (f_i / PCSA_i)² + ε Σ_k λ_k²       (i over the strings; with ``groups``
               Σ_m Σ_{s∈m} (A_s/A_m)(f_s/A_s)², = Σ_m (f_m/PCSA_m)² at equal string stress)
    subject to Σ_i r_i(q) f_i + G(q)ᵀ λ = τ_ID(q, q̇, q̈) − τ_passive      (Eq. 11, one row per coordinate)
               λ ≥ 0                                                        (the ribcage pushes, never pulls)
               F_GH(f) inside the glenohumeral stability cone                (ψ ≤ 0 of Eq. 12)

r_i the moment arms −∂l_i/∂q (metres), G = ∂Φ/∂q the constraint Jacobian (its rows are the
"generalized moment arms of the constraints"), τ_ID by inverse dynamics (gravity and inertia,
:func:`arthron.multibody.inverse_dynamics.inverse_dynamics`), τ_passive the passive elements
OpenSim applies. Sarshari et al.'s P weights only the muscles; the multipliers get a
negligible weight ε (1e-4 of the smallest muscle weight; the reaction changes by < 0.1 % down to 1e-6) so the
problem stays strictly convex. Each multiplier's sign is fixed so that λ ≥ 0 pushes its
landmark out of its ellipsoid (Φ grows outwards, Eq. 10).

The glenohumeral reaction (the force the glenoid applies to the humerus) is affine in f: the
force rows of the E-matrix reaction of Blajer & Czaplicki (2005), here by Newton's law on the
humerus–forearm subtree (:func:`reaction_force_map`; equal to
:func:`arthron.solvers.load_sharing_cone.reaction_map` to rounding, tested). The cone is
:class:`arthron.solvers.load_sharing_cone.StabilityCone`, solved exactly (box QP for the frames
where the cone is inactive, Clarabel where it is active).

Shapes: frames lead; forces N, moments N·m, angles degrees in outputs.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ArthronWarning, OptionError
from ..models.model import Model
from ..multibody.forces import applied_generalized_forces
from ..multibody.inverse_dynamics import inverse_dynamics
from ..multibody.kinematics import Tree, compile_model, forward_kinematics
from ..multibody.paths import (compile_paths, moment_arms, moment_arms_and_node_forces, moment_arms_excursion,
                               path_body_forces, path_states)
from ..tables import Table
from .load_sharing import LoadSharingProblem
from .load_sharing_cone import StabilityCone, cone_resolve

__all__ = ["ShoulderForces", "ShoulderProblem", "abduction_problem", "shoulder_load_sharing", "moment_arm_check",
           "reaction_force_map", "elevation_moment_arms",
           "MULTIPLIER_WEIGHT"]

#: weight of a constraint multiplier relative to the smallest muscle weight (see the docstring)
MULTIPLIER_WEIGHT = 1e-4


@dataclass
class ShoulderForces:
    """Load sharing along a motion.

    time : (T,) s; elevation_deg : (T,) or None; muscles : names (n); forces : (T, n) N;
    multiplier_names : (m,) constraint names; multipliers : (T, m) (λ ≥ 0 pushes the landmark
    out of its ellipsoid; units of the constraint rows' conjugate force); tau : (T, nq)
    inverse-dynamics generalized forces (N·m) of the rows ``coordinates``;
    reaction_scapula : (T, 3) N, the glenoid's force on the humerus in the cone body's frame;
    reaction_magnitude : (T,) N; cone_angle_deg : (T,) angle from the cone axis;
    cone_ratio : (T,) ≤ 1 inside the cone; cone_active : (T,) bool; residual : (T,)
    max |equation of motion residual| (N·m); objective : (T,); feasible : (T,) bool.
    extra : ``reaction_ground`` (T, 3) N; ``objective_without_cone`` (T,);
    ``reaction_magnitude_without_cone`` (T,) N and ``cone_angle_without_cone_deg`` (T,): the
    reaction of the optimum without the cone (equal to the solution where the cone is inactive),
    which shows how far the cone bent the solution and what it cost.
    """

    time: np.ndarray
    muscles: list
    forces: np.ndarray
    multiplier_names: list
    multipliers: np.ndarray
    coordinates: list
    tau: np.ndarray
    reaction_scapula: np.ndarray
    reaction_magnitude: np.ndarray
    cone_angle_deg: np.ndarray
    cone_ratio: np.ndarray
    cone_active: np.ndarray
    residual: np.ndarray
    objective: np.ndarray
    feasible: np.ndarray
    joint: str = ""
    child: str = ""
    body: str = ""
    elevation_deg: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    def force_table(self) -> Table:
        """OpenSim's ``_StaticOptimization_force.sto`` layout: muscle forces (N), then the
        constraint multipliers as ``<constraint>_lambda``."""
        return Table(name="ModelForces", time=np.array(self.time, float),
                     labels=list(self.muscles) + [f"{n}_lambda" for n in self.multiplier_names],
                     data=np.hstack([self.forces, self.multipliers]), in_degrees=False)

    def reaction_table(self) -> Table:
        """OpenSim JointReaction labels ``<joint>_on_<child>_in_<body>_f{x,y,z}`` (N), then
        ``<joint>_magnitude`` (N), ``<joint>_cone_angle`` (deg), ``<joint>_cone_active`` (1/0)
        and ``humerothoracic_elevation`` (deg)."""
        base = f"{self.joint}_on_{self.child}_in_{self.body}_f"
        labels = [base + c for c in "xyz"] + [f"{self.joint}_magnitude", f"{self.joint}_cone_angle",
                                               f"{self.joint}_cone_active"]
        cols = [self.reaction_scapula, self.reaction_magnitude[:, None], self.cone_angle_deg[:, None],
                self.cone_active.astype(float)[:, None]]
        if self.elevation_deg is not None:
            labels.append("humerothoracic_elevation")
            cols.append(np.asarray(self.elevation_deg, float)[:, None])
        return Table(name="JointReaction", time=np.array(self.time, float), labels=labels,
                     data=np.hstack(cols), in_degrees=False)

    def inverse_dynamics_table(self) -> Table:
        """``<coordinate>_moment`` (N·m) of the inverse dynamics (OpenSim's ID labels)."""
        return Table(name="Inverse Dynamics", time=np.array(self.time, float),
                     labels=[f"{c}_moment" for c in self.coordinates], data=np.array(self.tau, float),
                     in_degrees=False)


@dataclass
class ShoulderProblem(LoadSharingProblem):
    """A :class:`LoadSharingProblem` that also carries the reaction map of one joint:
    ``reaction`` = (joint, C (T, 3, n), d (T, 3)) (:func:`reaction_force_map`), or None."""

    reaction: tuple | None = field(repr=False, default=None)


def abduction_problem(model: Model, q, qd, qdd, time, coordinates, *, constraints=None,
                      muscles=None, tree: Tree | None = None, multiplier_signs=None,
                      multiplier_names=None, reaction_joint: str | None = None,
                      unilateral=None) -> ShoulderProblem:
    """The per-frame problem of the module docstring as a :class:`LoadSharingProblem` whose
    unknowns are the muscles' activations (force per activation F̂ = max isometric force, no
    force–length–velocity scaling: Sarshari et al. bound the forces by f_max) followed by one
    column per constraint row (kind ``"multiplier"``, G's row, bounds [0, ∞)). Muscles on
    FunctionBasedPaths (OpenSim 4.5+) enter with their functions' moment arms and, having no
    points, zero reaction columns (their generalized forces change no joint's transmitted
    force at the motion's accelerations: :func:`arthron.solvers.load_sharing_cone.reaction_map`).

    Parameters
    ----------
    q, qd, qdd : (T, nq) all model coordinates; time : (T,)
    coordinates : the rows (names; the other coordinates' rows are not equations)
    constraints : constraint set (residuals/jacobian; default the model's)
    muscles : names (default every enabled muscle)
    multiplier_signs : (m,) ±1 per constraint row (default +1)
    unilateral : (m,) bool per constraint row: True (default), the multiplier is bounded below
        by 0 (a contact that can only push, as the scapula on the ribcage, Sarshari et al.'s
        0 ≤ f̃ in Eq. 12); False, it is free (a bilateral joint such as a PointConstraint)
    reaction_joint : a joint whose reaction map (:func:`reaction_force_map`) is computed from
        the same path geometry as the moment arms (one pass) and kept in ``reaction``
    """
    from ..multibody.constraints import compile_constraints
    tree = tree or compile_model(model)
    q, qd, qdd = (np.atleast_2d(np.asarray(a, float)) for a in (q, qd, qdd))
    T = q.shape[0]
    cs = constraints if constraints is not None else compile_constraints(model, tree)
    if muscles is None:
        muscles = [n for n, f in model.forces.items() if f.is_muscle and f.applies_force]
    if not muscles:
        raise OptionError(f"model '{model.name}' has no muscles to share the load")
    applied, not_applied = applied_generalized_forces(model, tree, q, qd, ("Muscles", "Actuators"))
    if not_applied:
        warnings.warn(f"model '{model.name}': force elements left out of the load sharing: "
                      + ", ".join(f"{a} {b}" for a, b in not_applied[:8]), ArthronWarning)
    kin = forward_kinematics(tree, q)
    tau = inverse_dynamics(tree, q, qd, qdd, [], applied=applied)
    ps = compile_paths(model, tree, forces=muscles)
    if ps.function_based:
        # FunctionBasedPaths (OpenSim 4.5+): moment arms from their functions, no node pulls
        # (generalized forces only: zero reaction columns, as in load_sharing_cone.reaction_map)
        sd = path_states(ps, tree, q, kin)
        R = moment_arms(ps, tree, q, kin, coupled=False, states=sd)
        pl = path_body_forces(ps, tree, q, np.ones(len(muscles)), kin=kin, states=sd)
        node_forces = [(body, f) for body, _, f in pl.points]
    else:
        R, node_forces = moment_arms_and_node_forces(ps, tree, q, kin)     # (T, n, nq)
    fmax = np.array([float(model.forces[m].max_isometric_force) for m in muscles])
    m = cs.size
    G = cs.jacobian(q) if m else np.zeros((T, 0, tree.nq))
    sg = np.ones(m) if multiplier_signs is None else np.asarray(multiplier_signs, float)
    names = list(multiplier_names or [f"constraint_{k}" for k in range(m)])
    B = np.concatenate([np.swapaxes(R, 1, 2) * fmax, np.swapaxes(G, 1, 2) * sg], axis=2)
    rows = np.zeros(tree.nq, bool)
    for c in coordinates:
        rows[tree.coordinate_index(c)] = True
    n = len(muscles)
    lower = np.zeros((T, n + m))
    if unilateral is not None:
        uni = np.asarray(unilateral, bool).reshape(-1)
        if uni.shape != (m,):
            raise OptionError(f"unilateral needs one flag per constraint row ({m}), got {uni.size}")
        lower[:, n:][:, ~uni] = -np.inf
    if len(names) != m:
        raise OptionError(f"multiplier_names needs one name per constraint row ({m}), got {len(names)}")
    upper = np.concatenate([np.ones((T, n)), np.full((T, m), np.inf)], axis=1)
    fhat = np.concatenate([np.broadcast_to(fmax, (T, n)), np.ones((T, m))], axis=1)
    prob = ShoulderProblem(time=np.asarray(time, float), names=list(muscles) + names,
                           kinds=["muscle"] * n + ["multiplier"] * m,
                           coordinates=list(tree.coordinate_names), B=B, tau=tau, lower=lower,
                           upper=upper, force_per_control=fhat, G=None, free_rows=rows,
                           q=q, qd=qd, qdd=qdd)
    if reaction_joint is not None:
        C, d = reaction_force_map(model, prob, reaction_joint, tree,
                                  node_forces=[(b, f * fmax[i]) for i, (b, f) in enumerate(node_forces)])
        prob.reaction = (reaction_joint, C, d)
    return prob


def _subtree(tree: Tree, b0: int) -> list:
    out, stack = [], [b0]
    while stack:
        b = stack.pop()
        out.append(b)
        stack.extend(tree.body_children[b])
    return out


def reaction_force_map(model: Model, prob: LoadSharingProblem, joint: str, tree: Tree | None = None,
                       node_forces=None):
    """(C (T, 3, n), d (T, 3)): the force joint ``joint`` applies to its child, in ground, as
    ``C x + d`` over the problem's controls, by Newton's law on the child's subtree:
    ``F = Σ_b m_b (a_G,b − g) − Σ (muscle forces on the subtree's bodies)`` (the force rows of the
    E-matrix reaction of Blajer & Czaplicki 2005 without the moment rows, which the cone does not
    use; equal to :func:`arthron.solvers.load_sharing_cone.reaction_map` to rounding, one path
    pass over T frames instead of an E-matrix pass over T × n). Multiplier columns are zero
    (the ribcage constraints act on the scapula, outside the subtree). ``node_forces``: per
    muscle (body (T, K), force (T, K, 3)) at its force per control, if already computed.

    Raises OptionError when a model constraint acts on a body of the subtree.
    """
    tree = tree or compile_model(model)
    j = tree.joint_names.index(joint)
    sub = _subtree(tree, int(tree.joint_child_body[j]))
    subnames = {tree.body_names[b] for b in sub}
    for c in model.constraints:
        if c.enabled:
            bodies = {str(v).rsplit("/", 1)[-1] for k, v in c.properties.items()
                      if k in ("body_1", "body_2", "socket_body", "socket_ellipsoid_frame")}
            if bodies & subnames:
                raise OptionError(f"reaction of '{joint}': constraint '{c.name}' acts inside its child subtree")
    q, qd, qdd = prob.q, prob.qd, prob.qdd
    T, n = prob.force_per_control.shape
    kin = forward_kinematics(tree, q, qd, qdd)
    g = np.asarray(model.gravity, float)
    d = np.zeros((T, 3))
    for b in sub:
        body = model.bodies[tree.body_names[b]]
        if body.mass <= 0:
            continue
        nd = tree.body_node[b]
        r = kin.R[:, nd] @ np.asarray(body.mass_center, float)
        aG = kin.a[:, nd] + np.cross(kin.al[:, nd], r) + np.cross(kin.w[:, nd], np.cross(kin.w[:, nd], r))
        d += body.mass * (aG - g)
    C = np.zeros((T, 3, n))
    mus = [i for i, k in enumerate(prob.kinds) if k == "muscle"]
    if mus:
        if node_forces is None:
            ps = compile_paths(model, tree, forces=[prob.names[i] for i in mus])
            pl = path_body_forces(ps, tree, q, prob.force_per_control[:, mus], kin=kin)
            node_forces = [(body, f) for body, _, f in pl.points]
        subarr = np.array(sub)
        for k, (body, f) in zip(mus, node_forces):
            C[:, :, k] = -(np.isin(body, subarr)[..., None] * f).sum(axis=1)
    return C, d


def shoulder_load_sharing(model: Model, prob: LoadSharingProblem, cone: StabilityCone, pcsa: dict, *,
                          tree: Tree | None = None, on_infeasible: str = "raise",
                          elevation_deg=None, groups: dict | None = None) -> ShoulderForces:
    """Solve :func:`abduction_problem`'s problem with Σ (f/PCSA)² and the stability cone.

    pcsa : {muscle: m²} (muscles missing from it: F_max / 0.6 MPa, with a warning)
    groups : {muscle: [strings]} when the problem's "muscles" are strings of fewer muscles
        (Sarshari et al.'s 42 muscles of up to 20 strings each). Each string s of muscle m
        (PCSA A_m = Σ A_s) then weighs (A_s/A_m)(f_s/A_s)² = f_s²/(A_m A_s): the muscle's term is
        the volume-weighted mean squared stress of its strings, (f_m/A_m)² when they carry equal
        stress, so Eq. 12's Σ over the 42 muscle forces does not depend on how many strings a
        muscle is drawn with. Without ``groups`` every string is its own muscle: Σ_s (f_s/A_s)²,
        which counts a muscle of k equal strings k times ((f_s/A_s)² = (f_m/A_m)² per string).

    All frames are solved first without the cone (batched box QP,
    :func:`arthron.solvers.load_sharing.solve_problem`); the frames whose reaction leaves the
    cone are solved again with it (Clarabel, :func:`arthron.solvers.load_sharing_convex.solve_with_cone`):
    a QP optimum inside the cone is also the cone problem's optimum, so the answer is exact.

    Raises OptionError for non-positive PCSAs; InfeasibleFrames (``on_infeasible="raise"``)
    naming the frames where the equations of motion or the cone cannot be met.
    """
    from .load_sharing import solve_problem
    tree = tree or compile_model(model)
    cone.check(model)
    n_all = len(prob.names)
    mus = [i for i, k in enumerate(prob.kinds) if k == "muscle"]
    mul = [i for i, k in enumerate(prob.kinds) if k == "multiplier"]
    fh = prob.force_per_control[0]
    w = np.ones(n_all)
    missing = []
    for i in mus:
        a = pcsa.get(prob.names[i])
        if a is None:
            missing.append(prob.names[i])
            a = fh[i] / 0.6e6
        if not (a > 0):
            raise OptionError(f"PCSA of '{prob.names[i]}' must be positive, got {a!r}")
        w[i] = (fh[i] / (a * 1e6)) ** 2           # (f / PCSA)², stress in MPa: dimensionless
    if groups:
        idx = {prob.names[i]: i for i in mus}
        for g, strings in groups.items():
            ks = [idx[s] for s in strings if s in idx]
            if len(ks) > 1:
                a_s = fh[ks] / np.sqrt(w[ks]) / 1e6      # the strings' PCSAs (m²)
                w[ks] *= a_s / a_s.sum()                   # f_s² / (A_m A_s)
    if missing:
        warnings.warn(f"no PCSA for {', '.join(missing[:8])}: F_max / 0.6 MPa used", ArthronWarning)
    if mul:
        w[mul] = MULTIPLIER_WEIGHT * w[mus].min()
    free = solve_problem(prob, weights=w, on_infeasible=on_infeasible)
    pre = getattr(prob, "reaction", None)
    C, d = pre[1:] if pre is not None and pre[0] == cone.joint else reaction_force_map(model, prob, cone.joint, tree)
    Rb = forward_kinematics(tree, prob.q).R[:, tree.body_node[tree.body_names.index(cone.body)]]
    sol = cone_resolve(prob, free, C, d, cone, Rb, w, on_infeasible=on_infeasible)
    x, ok, outside, Fc, ang, ratio = sol.x, sol.feasible, sol.outside, sol.reaction, sol.angle_deg, sol.ratio
    rows = prob.free_rows
    rest = prob.tau - np.einsum("tqn,tn->tq", prob.B, x)
    rest[:, ~rows] = 0.0
    Fb = np.einsum("ij,tj->ti", cone.frame(), Fc)
    F = np.einsum("tij,tj->ti", Rb, Fb)
    j = tree.joint_names.index(cone.joint)
    child = tree.body_names[int(tree.joint_child_body[j])]
    forces = x * prob.force_per_control
    return ShoulderForces(time=prob.time, muscles=[prob.names[i] for i in mus],
                          forces=forces[:, mus], multiplier_names=[prob.names[i] for i in mul],
                          multipliers=x[:, mul],
                          coordinates=[c for c, k in zip(prob.coordinates, rows) if k],
                          tau=prob.tau[:, rows], reaction_scapula=Fb,
                          reaction_magnitude=np.linalg.norm(F, axis=1), cone_angle_deg=ang,
                          cone_ratio=ratio, cone_active=outside & ok,
                          residual=np.abs(rest).max(axis=1), objective=(w * x * x).sum(axis=1),
                          feasible=ok, joint=cone.joint, child=child, body=cone.body,
                          elevation_deg=None if elevation_deg is None else np.asarray(elevation_deg, float),
                          extra={"reaction_ground": F, "cone_off_outside": outside,
                                 "objective_without_cone": free.objective,
                                 # the optimum without the cone (how far the cone bent it)
                                 "reaction_magnitude_without_cone": np.linalg.norm(sol.reaction_free, axis=1),
                                 "cone_angle_without_cone_deg": sol.angle_free_deg})


def moment_arm_check(model: Model, q, coordinates, muscles=None, tree: Tree | None = None,
                     h: float = 1e-6):
    """Moment arms by the two methods of Sarshari et al. (2021): geometric (the generalized force of a unit
    tension, :func:`arthron.multibody.paths.moment_arms` with the other coordinates held) and
    tendon excursion ``−∂l/∂q`` by central differences of the path lengths (step ``h`` rad).

    Returns (geometric (T, n, k), excursion (T, n, k)) in metres for the ``coordinates`` (k).
    """
    tree = tree or compile_model(model)
    if muscles is None:
        muscles = [n for n, f in model.forces.items() if f.is_muscle and f.applies_force]
    ps = compile_paths(model, tree, forces=list(muscles))
    idx = [tree.coordinate_index(c) for c in coordinates]
    q = np.atleast_2d(np.asarray(q, float))
    g = moment_arms(ps, tree, q, coupled=False)[:, :, idx]
    e = moment_arms_excursion(ps, tree, q, coordinates=idx, h=h)[:, :, idx]
    return g, e


def elevation_moment_arms(model: Model, q, muscles, coordinates=("GH_y", "GH_z", "GH_yy"), *,
                          humerus: str = "humerus", center: str = "GH", elbow: str = "EL",
                          up=(0.0, 1.0, 0.0), tree: Tree | None = None):
    """Glenohumeral moment arms about the humerus's elevation axis, the scapula held: what
    cadaver studies of scapular-plane abduction measure (e.g. Ackland et al. 2008, J Anat
    213:383; review Hik & Ackland 2019, J Anat 234:1).

    The moment ``m`` (about the ``center`` marker, ground frame) of a unit tension on the
    humerus and the bodies distal to it follows from the generalized forces of the three
    glenohumeral ``coordinates`` (``τ = Jᵀ m``; ``J`` (3, 3) the humerus's angular velocity
    per coordinate rate, exact: the angular rows of
    :func:`arthron.multibody.kinematics.velocity_map`); the elevation axis is
    ``n = (GH→elbow) × up`` (a positive moment arm raises the arm). Away from the
    Y–Z–Y singularity (arm hanging straight down) J is invertible.

    q : (T, nq) rad; muscles : names; up : the thorax's up direction in ground.
    Returns (moments (T, n, 3) N·m per N of tension, elevation moment arms (T, n) m).
    Raises OptionError for unknown coordinates, bodies or markers.
    """
    from ..multibody.kinematics import marker_positions, velocity_map
    tree = tree or compile_model(model)
    for c in coordinates:
        if c not in model.coordinates:
            raise OptionError(f"model '{model.name}' has no coordinate '{c}'")
    if humerus not in model.bodies:
        raise OptionError(f"model '{model.name}' has no body '{humerus}'")
    for m in (center, elbow):
        if m not in model.markers:
            raise OptionError(f"model '{model.name}' has no marker '{m}'")
    q = np.atleast_2d(np.asarray(q, float))
    idx = [tree.coordinate_index(c) for c in coordinates]
    kin = forward_kinematics(tree, q)
    J = velocity_map(tree, q, kin)[:, tree.body_names.index(humerus), 3:][:, :, idx]   # ω (ground) per q̇
    ps = compile_paths(model, tree, forces=list(muscles))
    tau = moment_arms(ps, tree, q, coupled=False)[:, :, idx]
    mom = np.einsum("tij,tnj->tni", np.linalg.inv(np.swapaxes(J, 1, 2)), tau)     # J⁻ᵀ τ
    _, P = marker_positions(tree, q, [center, elbow], kin=kin)
    u = P[:, 1] - P[:, 0]
    n = np.cross(u, np.asarray(up, float))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    return mom, np.einsum("tni,ti->tn", mom, n)
