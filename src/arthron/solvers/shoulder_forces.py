"""Muscle forces, constraint multipliers and the glenohumeral joint reaction along a generated
shoulder motion: the load sharing of Sarshari et al. (2021), "A Matlab toolbox for
scaled-generic modeling of shoulder and elbow", Sci Rep 11:20806, Eq. 12.

Per frame the unknowns are the muscle forces f (0 ≤ f ≤ f_max) and the multipliers λ of the
model's constraints (the scapulothoracic ellipsoid constraints: λ_TS, λ_AI, Eq. 11), with::

    minimize   Σ_i (f_i / PCSA_i)² + ε Σ_k λ_k²
    subject to Σ_i r_i(q) f_i + G(q)ᵀ λ = τ_ID(q, q̇, q̈) − τ_passive      (Eq. 11, one row per coordinate)
               λ ≥ 0                                                        (the ribcage pushes, never pulls)
               F_GH(f) inside the glenohumeral stability cone                (ψ ≤ 0 of Eq. 12)

r_i the moment arms −∂l_i/∂q (metres), G = ∂Φ/∂q the constraint Jacobian (its rows are the
"generalized moment arms of the constraints"), τ_ID by inverse dynamics (gravity and inertia,
:func:`arthron.multibody.inverse_dynamics.inverse_dynamics`), τ_passive the passive elements
OpenSim applies. The seed's P gives weights only to the muscles; the multipliers get a
negligible weight ε (1e-4 of the smallest muscle weight; the reaction changes by < 0.1 % down to 1e-6) so the
problem stays strictly convex. Each multiplier's sign is fixed so that λ ≥ 0 pushes its
landmark out of its ellipsoid (Φ grows outwards, Eq. 10).

The glenohumeral reaction (the force the glenoid applies to the humerus) is affine in f
through the E-matrix of Blajer & Czaplicki (2005) (:func:`arthron.solvers.load_sharing_cone.reaction_map`);
the cone is :class:`arthron.solvers.load_sharing_cone.StabilityCone`, solved exactly
(box QP for the frames where the cone is inactive, Clarabel where it is active).

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
from ..multibody.paths import compile_paths, moment_arms, moment_arms_excursion
from ..tables import Table
from .load_sharing import LoadSharingProblem
from .load_sharing_cone import StabilityCone, solve_with_stability_cone

__all__ = ["ShoulderForces", "abduction_problem", "shoulder_load_sharing", "moment_arm_check",
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


def abduction_problem(model: Model, q, qd, qdd, time, coordinates, *, constraints=None,
                      muscles=None, tree: Tree | None = None, multiplier_signs=None,
                      multiplier_names=None) -> LoadSharingProblem:
    """The per-frame problem of the module docstring as a :class:`LoadSharingProblem` whose
    unknowns are the muscles' activations (force per activation F̂ = max isometric force, no
    force–length–velocity scaling: the seed bounds the forces by f_max) followed by one
    column per constraint row (kind ``"multiplier"``, G's row, bounds [0, ∞)).

    Parameters
    ----------
    q, qd, qdd : (T, nq) all model coordinates; time : (T,)
    coordinates : the rows (names; the other coordinates' rows are not equations)
    constraints : constraint set (residuals/jacobian; default the model's)
    muscles : names (default every enabled muscle)
    multiplier_signs : (m,) ±1 per constraint row (default +1)
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
    R = moment_arms(ps, tree, q, kin, coupled=False)                      # (T, n, nq)
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
    upper = np.concatenate([np.ones((T, n)), np.full((T, m), np.inf)], axis=1)
    fhat = np.concatenate([np.broadcast_to(fmax, (T, n)), np.ones((T, m))], axis=1)
    return LoadSharingProblem(time=np.asarray(time, float), names=list(muscles) + names,
                              kinds=["muscle"] * n + ["multiplier"] * m,
                              coordinates=list(tree.coordinate_names), B=B, tau=tau, lower=lower,
                              upper=upper, force_per_control=fhat, G=None, free_rows=rows,
                              q=q, qd=qd, qdd=qdd)


def shoulder_load_sharing(model: Model, prob: LoadSharingProblem, cone: StabilityCone, pcsa: dict, *,
                          tree: Tree | None = None, on_infeasible: str = "raise",
                          elevation_deg=None) -> ShoulderForces:
    """Solve :func:`abduction_problem`'s problem with Σ (f/PCSA)² and the stability cone.

    pcsa : {muscle: m²} (muscles missing from it: F_max / 0.6 MPa, with a warning)

    Raises OptionError for non-positive PCSAs; InfeasibleFrames (``on_infeasible="raise"``)
    naming the frames where the equations of motion or the cone cannot be met.
    """
    tree = tree or compile_model(model)
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
    if missing:
        warnings.warn(f"no PCSA for {', '.join(missing[:8])}: F_max / 0.6 MPa used", ArthronWarning)
    if mul:
        w[mul] = MULTIPLIER_WEIGHT * w[mus].min()
    res = solve_with_stability_cone(model, prob, cone, weights=w, on_infeasible=on_infeasible, tree=tree)
    # reaction in the cone body's frame (the solver's, in the cone frame: no second E-matrix pass)
    Fb = np.einsum("ij,tj->ti", cone.frame(), np.asarray(res.extra["reaction"], float))
    kin = forward_kinematics(tree, prob.q)
    Rb = kin.R[:, tree.body_node[tree.body_names.index(cone.body)]]
    F = np.einsum("tij,tj->ti", Rb, Fb)
    j = tree.joint_names.index(cone.joint)
    child = tree.body_names[int(tree.joint_child_body[j])]
    rows = prob.free_rows
    return ShoulderForces(time=prob.time, muscles=[prob.names[i] for i in mus],
                          forces=res.forces[:, mus], multiplier_names=[prob.names[i] for i in mul],
                          multipliers=res.activations[:, mul],
                          coordinates=[c for c, k in zip(prob.coordinates, rows) if k],
                          tau=prob.tau[:, rows], reaction_scapula=Fb,
                          reaction_magnitude=np.linalg.norm(F, axis=1),
                          cone_angle_deg=np.asarray(res.extra["cone_angle_deg"], float),
                          cone_ratio=np.asarray(res.extra["cone_ratio"], float),
                          cone_active=np.asarray(res.extra["cone_active"], bool),
                          residual=np.abs(res.residual).max(axis=1), objective=res.objective,
                          feasible=res.feasible, joint=cone.joint, child=child, body=cone.body,
                          elevation_deg=None if elevation_deg is None else np.asarray(elevation_deg, float),
                          extra={"reaction_ground": F, "cone_off_outside": res.extra["cone_off_outside"]})


def moment_arm_check(model: Model, q, coordinates, muscles=None, tree: Tree | None = None,
                     h: float = 1e-6):
    """Moment arms by the two methods of the seed: geometric (the generalized force of a unit
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
