"""Joint stability cone and EMG-assisted bounds for load sharing (Sarshari et al., the
shoulder–elbow model: Eq. 12's stability constraint ψ and the EMG-assisted scheme of their
ref. 69, Sarshari et al. 2021).

Stability cone
--------------
The force a joint applies to its child body (the glenoid on the humerus) is affine in the
controls: ``F(x) = F₀ + Σ_i x_i F_i`` with ``F_i`` the reaction change of a unit control
(its path's or actuator's body loads in the child subtree, and the constraint forces its
multipliers take there; E-matrix of Blajer & Czaplicki 2005,
:func:`arthron.solvers.reactions.joint_loads`) and ``F₀`` the reaction with no actuator force
(gravity, inertia, external loads). Expressed in a cone frame fixed in a body (z = the cone's
axis, pointing from the glenoid into the joint; y = the body's y axis made perpendicular to it,
superior–inferior; x = y × z, anterior–posterior) it must satisfy
``(F_x / tan α_AP)² + (F_y / tan α_SI)² ≤ F_z²`` with ``F_z ≥ 0``. Glenoid inclination and
version (their Eqs. 15–16) rotate the axis about x and y of that frame.

Default half-angles: 18.8° (AP) × 31.4° (SI), the elliptic cone of published OpenSim/Moco
shoulder work, after Lippitt et al. (1993), whose superior–inferior limit is about 31°.

Solving: all frames first as the plain QP (:func:`arthron.solvers.box_qp.solve_box_qp`); only
the frames whose reaction leaves the cone are solved again with the cone (second-order cone or
N inscribed planes, cvxpy + Clarabel, :func:`arthron.solvers.load_sharing_convex.solve_with_cone`).
A QP optimum inside the cone is also the cone problem's optimum, so the answer is exact.

EMG-assisted bounds
-------------------
Normalized EMG envelopes e(t) ∈ [0, 1] drive first-order activation dynamics
(``ȧ = (e − a)/τ``, τ = τ_act (0.5 + 1.5a) when e > a, τ_deact / (0.5 + 1.5a) otherwise;
30 / 40 ms, Thelen 2003's form), and ``f_EMG = a F̂`` (F̂ the muscle's force per activation at
the frame: F_max, or F_max f_L f_V cos α with muscle physiology). Those muscles get
``λ_l f_EMG ≤ f ≤ λ_u f_EMG`` (0.3 and 0.7); the others keep their bounds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OptionError, UnsupportedFeature
from ..models.model import Model
from ..multibody.inverse_dynamics import ExternalLoad
from ..multibody.constrained_dynamics import constraint_loads
from ..multibody.constraints import compile_constraints
from ..multibody.kinematics import Tree, compile_model, forward_kinematics
from ..multibody.paths import compile_paths, path_body_forces
from .load_sharing import LoadSharingProblem, LoadSharingResult, _actuator_unit_loads, solve_problem
from .reactions import joint_loads

__all__ = ["StabilityCone", "reaction_map", "solve_with_stability_cone", "cone_resolve", "ConeSolution",
           "emg_activation",
           "apply_emg_bounds", "DEFAULT_HALF_ANGLES"]

#: (AP, SI) half-angles in degrees of the default elliptic cone (see the module docstring)
DEFAULT_HALF_ANGLES = (18.8, 31.4)


@dataclass
class StabilityCone:
    """joint : joint name; body : body whose frame holds the axis; axis : (3,) in that body's
    frame, pointing from the socket into the joint; half_angles_deg : (AP, SI) in (0°, 90°);
    inclination_deg, version_deg : rotations of the axis about the cone frame's x (AP) and
    y (SI) axes; n_planes : None (second-order cone) or the number of inscribed planes."""

    joint: str
    body: str
    axis: tuple
    half_angles_deg: tuple = DEFAULT_HALF_ANGLES
    inclination_deg: float = 0.0
    version_deg: float = 0.0
    n_planes: int | None = None

    def check(self, model: Model):
        """OptionError for an unknown joint or body, a zero axis, half-angles outside (0°, 90°)
        or fewer than 3 planes."""
        if self.joint not in model.joints:
            raise OptionError(f"stability cone: model '{model.name}' has no joint '{self.joint}' "
                              f"(joints: {', '.join(model.joints)})")
        if self.body not in model.bodies:
            raise OptionError(f"stability cone: model '{model.name}' has no body '{self.body}' "
                              f"(bodies: {', '.join(model.bodies)})")
        a = np.asarray(self.axis, float)
        if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-12:
            raise OptionError(f"stability cone axis must be a non-zero 3-vector, got {self.axis!r}")
        for h in self.half_angles_deg:
            if not 0.0 < float(h) < 90.0:
                raise OptionError(f"stability cone half-angles must lie in (0°, 90°), got {h!r}")
        if self.n_planes is not None and int(self.n_planes) < 3:
            raise OptionError(f"a polyhedral cone needs at least 3 planes, got {self.n_planes!r}")

    def frame(self) -> np.ndarray:
        """(3, 3) columns x (AP), y (SI), z (axis) of the cone frame in the body's frame."""
        z = np.asarray(self.axis, float)
        z = z / np.linalg.norm(z)
        ref = np.array([0.0, 1.0, 0.0]) if abs(z[1]) < 0.9 else np.array([1.0, 0.0, 0.0])
        y = ref - z * (ref @ z)
        y /= np.linalg.norm(y)
        x = np.cross(y, z)
        R = np.column_stack([x, y, z])

        def rot(axis, ang):
            c, s = np.cos(ang), np.sin(ang)
            K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
            return np.eye(3) + s * K + (1 - c) * K @ K
        Rinc = rot(R[:, 0], np.radians(self.inclination_deg))
        Rver = rot(R[:, 1], np.radians(self.version_deg))
        return Rver @ Rinc @ R


def reaction_map(model: Model, prob: LoadSharingProblem, joint: str, tree: Tree | None = None):
    """(C (T, 3, n), d (T, 3)): the force joint ``joint`` applies to its child body, in
    ground, as ``C x + d`` over the problem's controls.

    Every load on the joint's child subtree enters: muscles' path loads, Point/TorqueActuators'
    loads (a unit control times ``optimal_force``), and the forces of model constraints
    (PointConstraint, ConstantDistanceConstraint, WeldConstraint) on its bodies. Their
    multipliers are those the solution carries when they are eliminated (the least-squares
    ``μ = (G_fᵀ)⁺ (τ_f − B_f x)`` of :func:`arthron.solvers.load_sharing.solve_problem`, affine in
    x), so they fold into C and d. CoordinateCouplerConstraints act on coordinates, not on
    bodies, and do not enter.

    Generalized (mobility) forces do not enter either: at the problem's accelerations the force a
    joint transmits is fixed by Newton's law on its child subtree and the *body* loads on it
    (Blajer & Czaplicki 2005's ``Λ = Eᵀ(h − M(D q̈ + γ))``), whatever the generalized forces do.
    So a muscle on a ``FunctionBasedPath`` (OpenSim 4.5+), which has no points and applies only
    ``tension × r`` on its coordinates (OpenSim's mobility forces), has a zero column: its
    tension enters the equations of motion (the problem's B), not the reaction, exactly as in
    OpenSim's JointReaction, whose mobilizer reaction forces see such a path only through the
    accelerations. The same holds for the sliding part of MovingPathPoints (their point pulls
    do enter).
    """
    tree = tree or compile_model(model)
    T, n = prob.force_per_control.shape
    q, qd, qdd = prob.q, prob.qd, prob.qdd
    base = joint_loads(model, tree, q, qd, qdd, (), joints=[joint])
    R = base.R_M[:, 0]
    d = -np.einsum("tij,tj->ti", R, base.Lambda[:, 0, :3])
    C = np.zeros((T, 3, n))
    j = tree.joint_names.index(joint)
    sub = _subtree(tree, int(tree.joint_child_body[j]))
    mus = [i for i, k in enumerate(prob.kinds) if k == "muscle"]
    acts = [i for i, k in enumerate(prob.kinds) if k in ("PointActuator", "TorqueActuator")]
    inside = []
    for c in model.constraints:
        if c.enabled and c.type != "CoordinateCouplerConstraint":
            bodies = {str(c.properties.get(k, "")).rsplit("/", 1)[-1]
                      for k in ("body_1", "body_2", "socket_body", "socket_ellipsoid_frame")}
            if any(tree.body_names.index(b) in sub for b in bodies if b in tree.body_names):
                inside.append(c.name)
    mc = prob.G.shape[1] if (inside and prob.G is not None) else 0
    if inside and mc == 0:
        raise UnsupportedFeature(f"stability cone on '{joint}': constraint(s) {', '.join(inside)} act "
                                 "inside the joint's child subtree, but the problem has no constraint rows")
    K = len(mus) + len(acts) + mc
    if K == 0:
        return C, d
    # every unit load as one of K stacked copies of the frames through one E-matrix pass:
    # muscles (their paths' body loads for F̂ of tension), then actuators, then unit multipliers
    per_body = {}
    kin0 = forward_kinematics(tree, q)
    if mus:
        names = [prob.names[i] for i in mus]
        if prob.muscle_paths is not None and prob.muscle_paths[0].names == names:
            ps, sd = prob.muscle_paths           # wrapped once, when the problem was built
        else:
            ps, sd = compile_paths(model, tree, forces=names), None
        pl = path_body_forces(ps, tree, q, prob.force_per_control[:, mus], kin=kin0, states=sd)
        # a FunctionBasedPath has no points (K = 0): no body load, a zero column (docstring)
        for k, (body, P, f) in enumerate(pl.points):
            for b in np.unique(body):
                if b >= tree.nb:
                    continue                      # ground / padding
                mask = (body == b)[..., None]
                o = kin0.o[:, tree.body_node[b]][:, None, :]
                bname = tree.body_names[b]
                fb, tb = per_body.setdefault(bname, (np.zeros((K * T, 3)), np.zeros((K * T, 3))))
                fb[k * T:(k + 1) * T] = (mask * f).sum(axis=1)
                tb[k * T:(k + 1) * T] = (mask * np.cross(P - o, f)).sum(axis=1)
    loads = [ExternalLoad(body=bname, force=f, point=np.zeros((K * T, 3)), torque=tq, force_frame="ground",
                          point_frame=bname, name=f"paths_on_{bname}") for bname, (f, tq) in per_body.items()]

    def place(k, v, scale):
        a = np.zeros((K * T, 3))
        a[k * T:(k + 1) * T] = np.asarray(v, float) * scale[:, None]
        return a
    for k, i in enumerate(acts, start=len(mus)):
        loads += _actuator_unit_loads(model.forces[prob.names[i]],
                                      lambda v, k=k, i=i: place(k, v, prob.force_per_control[:, i]), K * T)
    qs, qds, qdds = (np.concatenate([a] * K) for a in (q, qd, qdd))
    k0 = len(mus) + len(acts)
    if mc:
        cs = compile_constraints(model, tree)
        mu = np.zeros((K * T, mc))
        for m in range(mc):
            mu[(k0 + m) * T:(k0 + m + 1) * T, m] = 1.0
        cl, _ = constraint_loads(tree, qs, cs, mu)
        loads += cl
    kin = forward_kinematics(tree, qs, qds, qdds)
    L = joint_loads(model, tree, qs, qds, qdds, loads, joints=[joint], kin=kin)
    F = -np.einsum("tij,tj->ti", L.R_M[:, 0], L.Lambda[:, 0, :3]).reshape(K, T, 3)
    for k, i in enumerate(mus + acts):
        C[:, :, i] = F[k] - d
    if mc:
        Fc = np.moveaxis(F[k0:] - d, 0, 2)                                   # (T, 3, mc)
        keep = prob.free_rows
        Pm = np.linalg.pinv(np.swapaxes(prob.G[:, :, keep], 1, 2))          # (T, mc, nf)
        FP = np.einsum("tim,tmf->tif", Fc, Pm)
        C = C - np.einsum("tif,tfn->tin", FP, prob.B[:, keep])
        d = d + np.einsum("tif,tf->ti", FP, prob.tau[:, keep])
    return C, d


def _subtree(tree: Tree, b0: int) -> set:
    seen, stack = set(), [b0]
    while stack:
        b = stack.pop()
        if b not in seen:
            seen.add(b)
            stack.extend(tree.body_children[b])
    return seen


def solve_with_stability_cone(model: Model, prob: LoadSharingProblem, cone: StabilityCone, *,
                              weights=None, on_infeasible: str = "raise",
                              tree: Tree | None = None) -> LoadSharingResult:
    """Σ w x² (p = 2) with the reaction of ``cone.joint`` on its child kept inside the cone.

    Returns a LoadSharingResult whose ``extra`` holds ``cone_active`` (T,) bool (the cone
    changed the solution), ``cone_angle_deg`` (T,) angle of the reaction from the axis,
    ``cone_ratio`` (T,) (≤ 1 inside), ``cone_off_outside`` (T,) bool (the unconstrained optimum
    leaves the cone), ``reaction`` (T, 3) N in the cone frame and ``objective_without_cone``.
    Frames where the cone cannot be met are infeasible (named by time: InfeasibleFrames with
    ``on_infeasible="raise"``).
    """
    tree = tree or compile_model(model)
    cone.check(model)
    free = solve_problem(prob, weights=weights, on_infeasible=on_infeasible)
    C, d = reaction_map(model, prob, cone.joint, tree)
    Rb = forward_kinematics(tree, prob.q).R[:, tree.body_node[tree.body_names.index(cone.body)]]
    w = np.ones(len(prob.names)) if weights is None else np.asarray(weights, float)
    sol = cone_resolve(prob, free, C, d, cone, Rb, w, on_infeasible=on_infeasible)
    res = _result(prob, sol.x, sol.feasible, weights)
    res.extra.update(cone_active=sol.active, cone_angle_deg=sol.angle_deg, cone_ratio=sol.ratio,
                     cone_off_outside=sol.outside, reaction=sol.reaction, objective_without_cone=free.objective,
                     problem=prob)
    return res


@dataclass
class ConeSolution:
    """Load sharing with a stability cone, frame by frame (T frames, n controls).

    x : (T, n) controls; feasible : (T,) bool; outside : (T,) bool, the unconstrained optimum
    leaves the cone; active : (T,) bool, the cone changed the solution; reaction : (T, 3) N, the
    reaction in the cone frame; angle_deg : (T,) its angle from the axis; ratio : (T,) ≤ 1 inside;
    reaction_free : (T, 3) N and angle_free_deg : (T,) the same for the unconstrained optimum
    (the load sharing without the cone).
    """

    x: np.ndarray
    feasible: np.ndarray
    outside: np.ndarray
    active: np.ndarray
    reaction: np.ndarray
    angle_deg: np.ndarray
    ratio: np.ndarray
    reaction_free: np.ndarray
    angle_free_deg: np.ndarray


def cone_resolve(prob: LoadSharingProblem, free: LoadSharingResult, C, d, cone: StabilityCone, R_body,
                 weights, *, on_infeasible: str = "raise") -> ConeSolution:
    """Keep the reaction ``C x + d`` (ground, (T, 3, n) and (T, 3)) inside ``cone``: frames whose
    unconstrained optimum ``free`` leaves it are solved again with the cone (Clarabel,
    :func:`arthron.solvers.load_sharing_convex.solve_with_cone`; a QP optimum inside the cone is
    also the cone problem's optimum, so the other frames are exact as they are).

    R_body : (T, 3, 3) rotation of ``cone.body`` (body → ground); weights : (n,) of Σ w x².
    Frames where the cone cannot be met are infeasible and named by time (InfeasibleFrames with
    ``on_infeasible="raise"``, a warning with ``"warn"``, nothing with ``"ignore"``).
    """
    from .load_sharing import InfeasibleFrames
    from .load_sharing_convex import cone_angle, solve_with_cone
    Rc = np.einsum("ji,tkj->tik", cone.frame(), R_body)                 # ground → cone: (Rb Rf)ᵀ
    Cc = np.einsum("tij,tjn->tin", Rc, C)
    dc = np.einsum("tij,tj->ti", Rc, d)
    tx, ty = (np.tan(np.radians(a)) for a in cone.half_angles_deg)
    x = free.activations.copy()
    F0 = np.einsum("tin,tn->ti", Cc, x) + dc
    ang0, ratio0 = cone_angle(F0, tx, ty)
    outside = ~(ratio0 <= 1.0 + 1e-9)
    ok = free.feasible.copy()
    frames = np.flatnonzero(outside & ok)
    if frames.size:
        A, b, _ = prob.reduced()
        xs, oks = solve_with_cone(A, b, np.asarray(weights, float), prob.lower, prob.upper, Cc, dc, tx, ty,
                                  n_planes=cone.n_planes, frames=frames)
        x[frames], ok[frames] = xs[frames], oks[frames]
    F = np.einsum("tin,tn->ti", Cc, x) + dc
    ang, ratio = cone_angle(F, tx, ty)
    ok &= ratio <= 1.0 + 1e-5
    bad = np.flatnonzero(~ok)
    if bad.size and on_infeasible != "ignore":
        msg = ("stability cone on '" + cone.joint + "' cannot be met at t = "
               + ", ".join(f"{prob.time[k]:.6g} s" for k in bad[:20]) + (" ..." if bad.size > 20 else ""))
        if on_infeasible == "raise":
            raise InfeasibleFrames(msg, [(float(prob.time[k]), {}) for k in bad])
        import warnings
        from ..errors import ArthronWarning
        warnings.warn(msg, ArthronWarning)
    return ConeSolution(x=x, feasible=ok, outside=outside, active=outside & ok, reaction=F,
                        angle_deg=ang, ratio=ratio, reaction_free=F0, angle_free_deg=ang0)


def _result(prob, x, ok, weights):
    w = np.ones(x.shape[1]) if weights is None else np.asarray(weights, float)
    gen = np.einsum("tqn,tn->tq", prob.B, x)
    rest = prob.tau - gen
    mc = 0 if prob.G is None else prob.G.shape[1]
    mu = np.zeros((x.shape[0], mc))
    if mc:
        keep = prob.free_rows
        Gt = np.swapaxes(prob.G[:, :, keep], 1, 2)
        mu = np.stack([np.linalg.lstsq(Gt[k], rest[k, keep], rcond=None)[0] for k in range(x.shape[0])])
        rest = rest - np.einsum("tmq,tm->tq", prob.G, mu)
    rest[:, ~prob.free_rows] = 0.0
    forces = x * prob.force_per_control
    if prob.passive is not None:
        forces[:, [i for i, k in enumerate(prob.kinds) if k == "muscle"]] += prob.passive
    return LoadSharingResult(time=prob.time, names=list(prob.names), activations=x,
                             forces=forces, multipliers=mu, residual=rest,
                             objective=(w * x * x).sum(axis=1), feasible=np.asarray(ok),
                             coordinates=list(prob.coordinates),
                             extra={"external_columns": prob.external_columns,
                                    "force_records": prob.force_records})


# ------------------------------------------------------------------------------ EMG
def emg_activation(time, emg, tau_act: float = 0.030, tau_deact: float = 0.040):
    """Activations (T, k) from normalized EMG envelopes (T, k) sampled at ``time`` (s):
    first-order dynamics of the module docstring, integrated exactly over each sample interval
    with the rate frozen at its start (a(0) = e(0)). Raises OptionError for EMG outside [0, 1]."""
    e = np.atleast_2d(np.asarray(emg, float))
    if e.shape[0] != len(time):
        e = e.T
    if np.any(~np.isfinite(e)) or e.min() < -1e-9 or e.max() > 1 + 1e-9:
        raise OptionError("EMG envelopes must be normalized to [0, 1]")
    t = np.asarray(time, float)
    a = np.empty_like(e)
    a[0] = e[0]
    for k in range(1, len(t)):
        dt = t[k] - t[k - 1]
        prev = a[k - 1]
        tau = np.where(e[k] > prev, tau_act * (0.5 + 1.5 * prev), tau_deact / (0.5 + 1.5 * prev))
        a[k] = e[k] + (prev - e[k]) * np.exp(-dt / tau)
    return a


def apply_emg_bounds(prob: LoadSharingProblem, emg_time, emg, muscles, lam_l: float = 0.3,
                     lam_u: float = 0.7):
    """Set, in place, the bounds of ``muscles`` (names, one per EMG column) to
    ``λ_l f_EMG ≤ f ≤ λ_u f_EMG`` (controls ``λ a_EMG``; activations interpolated at the
    problem's frames). Returns the EMG activations at the frames (T, k).

    Raises OptionError for names that are not muscles of the problem or 0 ≤ λ_l ≤ λ_u violated.
    """
    if not 0.0 <= lam_l <= lam_u:
        raise OptionError(f"EMG bounds need 0 ≤ λ_l ≤ λ_u, got {lam_l}, {lam_u}")
    idx = []
    for m in muscles:
        if m not in prob.names or prob.kinds[prob.names.index(m)] != "muscle":
            raise OptionError(f"EMG column '{m}' names no muscle of the model")
        idx.append(prob.names.index(m))
    a = emg_activation(emg_time, emg)
    aT = np.column_stack([np.interp(prob.time, emg_time, a[:, k]) for k in range(a.shape[1])])
    prob.lower[:, idx] = lam_l * aT
    prob.upper[:, idx] = lam_u * aT
    return aT
