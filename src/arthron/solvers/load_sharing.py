"""Load sharing: OpenSim's StaticOptimization, for all frames at once.

Per frame the unknowns are the controls ``x`` of the model's actuators (muscle activations,
reserve and residual actuator controls); model constraints add multipliers μ. The equations
of motion of every coordinate (Blajer & Czaplicki 2005 form, forces conjugate to q̇)::

    Σ_i B_i(q) F̂_i x_i + Gᵀ μ = τ_ID(q, q̇, q̈) − Q_passive

with ``B_i`` the generalized force of a unit actuator force (muscles: the moment arms
−∂l/∂q; CoordinateActuators: a unit vector; Point/TorqueActuators: Jᵀ of a unit load), ``F̂_i``
the force per unit control (muscles: max isometric force, or with ``use_muscle_physiology``
``F_max f_L(l̃) f_V(ṽ) cos α`` at a rigid tendon, OpenSim's
``Muscle::calcInextensibleTendonActiveFiberForce``; other actuators: ``optimal_force``),
``τ_ID`` by inverse dynamics with gravity and external loads, ``Q_passive`` the passive
elements OpenSim applies (springs, coordinate limit forces, ligaments). μ is eliminated with a
null-space basis of G (rows ``Nᵀ``) and recovered afterwards by least squares.

Objective (OpenSim's ``StaticOptimizationTarget::objectiveFunc``): ``Σ_i |x_i|^p`` over all
actuators, every control weighted alike (a reserve's ``optimal_force`` is what makes it cheap
or dear), bounds ``min_control ≤ x ≤ max_control`` (OpenSim 4.6: Thelen2003Muscle and
Millard2012EquilibriumMuscle never below ``minimum_activation`` = 0.01; a
Millard2012AccelerationMuscle or DeGrooteFregly2016Muscle down to its ``min_control``). As in OpenSim the muscles' forces
are overridden by ``x F̂``: passive fibre force is *not* applied (``passive_fiber_force=True``
adds it as a known force, which OpenSim does not do). With weights ``w_i`` per control
(``weights``) the objective is ``Σ w_i |x_i|^p``: Σ (f_i/PCSA_i)² of the shoulder–elbow model
of Sarshari et al. (2021/2022, Eq. 12) is ``w_i = (F̂_i / PCSA_i)²``.

p = 2 is solved by :func:`arthron.solvers.box_qp.solve_box_qp` (all frames together, exact
active set); other exponents by :mod:`arthron.solvers.load_sharing_convex` (cvxpy + Clarabel).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ArthronWarning, OptionError, SolverError, UnsupportedFeature
from ..models.model import Model
from ..models.motion import coordinates_from_table
from ..models.muscles import (force_length_velocity, millard_inextensible_tendon_active_force,
                              muscle_parameters, muscle_property)
from ..multibody.constraints import assemble, compile_constraints
from ..multibody.force_records import force_records
from ..multibody.forces import passive_forces, passive_generalized_forces
from ..multibody.inverse_dynamics import ExternalLoad, inverse_dynamics
from ..multibody.kinematics import Tree, compile_model, forward_kinematics, qdot_from_speeds
from ..multibody.paths import compile_paths, lengthening_speeds, moment_arms, path_states
from ..tables import Table, input_files
from .box_qp import solve_box_qp
from .filtering import check_time_range, lowpass_cutoff, prepare_coordinates
from .inverse_dynamics import external_loads_from_setup

__all__ = ["LoadSharingProblem", "LoadSharingResult", "static_optimization", "build_problem",
           "solve_problem", "actuator_bounds", "stress_weights", "DEFAULT_SPECIFIC_TENSION", "SO_ACTUATOR_TYPES", "InfeasibleFrames"]

#: the actuator classes StaticOptimization solves for (besides muscles)
SO_ACTUATOR_TYPES = ("CoordinateActuator", "ActivationCoordinateActuator", "PointActuator", "TorqueActuator")
#: the classes that act on one coordinate (OpenSim's CoordinateActuator and its subclass)
_COORDINATE_ACTUATORS = ("CoordinateActuator", "ActivationCoordinateActuator")
#: muscle classes whose minimum activation OpenSim 4.6 holds at ≥ 0.01
MIN_ACTIVATION_CLASSES = ("Thelen2003Muscle", "Millard2012EquilibriumMuscle")


class InfeasibleFrames(SolverError):
    """Frames whose equations of motion cannot be met inside the actuators' bounds; ``report``
    lists (time, {coordinate: reserve needed (N·m or N)})."""

    def __init__(self, msg, report):
        super().__init__(msg)
        self.report = report


@dataclass
class LoadSharingProblem:
    """The stacked per-frame problem.

    time : (T,); names : the actuators (n); kinds : 'muscle' or the actuator class;
    coordinates : the rows' coordinate names (model order, nq);
    B : (T, nq, n) generalized force per unit control (F̂ included); tau : (T, nq) right-hand
    side; lower, upper : (T, n) control bounds; force_per_control : (T, n) F̂;
    G : (T, mc, nq) constraint Jacobian or None; free_rows : (nq,) bool (False: locked
    coordinates, whose row the lock absorbs); q, qd, qdd : (T, nq).
    """

    time: np.ndarray
    names: list
    kinds: list
    coordinates: list
    B: np.ndarray
    tau: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    force_per_control: np.ndarray
    G: np.ndarray | None
    free_rows: np.ndarray
    q: np.ndarray = field(repr=False, default=None)
    qd: np.ndarray = field(repr=False, default=None)
    qdd: np.ndarray = field(repr=False, default=None)
    passive: np.ndarray | None = field(repr=False, default=None)
    #: ForceReporter columns of the external loads: (labels, (T, k) values in ground)
    external_columns: tuple = field(repr=False, default=((), None))
    #: (PathSet of the muscles, their paths rebuilt at q: :func:`arthron.multibody.paths.path_states`)
    #: or None; lets the reaction of a joint reuse the wrapped paths
    muscle_paths: tuple | None = field(repr=False, default=None)
    #: ForceReporter records of the model's forces in OpenSim's order
    #: (:class:`arthron.multibody.force_records.ForceRecords`) or None
    force_records: object = field(repr=False, default=None)

    def reduced(self):
        """(A (T, r, n), b (T, r), N (T, nq, r)): the rows with the constraint multipliers
        eliminated (``A = Nᵀ B``, ``b = Nᵀ τ``), N spanning the null space of G on the free
        coordinates."""
        T, nq, _ = self.B.shape
        keep = np.flatnonzero(self.free_rows)
        if self.G is None or self.G.shape[1] == 0:
            N = np.zeros((T, nq, keep.size))
            N[:, keep, np.arange(keep.size)] = 1.0
        else:
            Gf = self.G[:, :, keep]
            _, s, vt = np.linalg.svd(Gf)             # (T, mc), (T, k, k)
            rank = int(np.max(np.sum(s > 1e-10 * s[:, :1], axis=1)))
            Nk = np.swapaxes(vt[:, rank:, :], 1, 2)  # (T, k, k-rank)
            N = np.zeros((T, nq, Nk.shape[2]))
            N[:, keep, :] = Nk
        A = np.einsum("tqr,tqn->trn", N, self.B)
        b = np.einsum("tqr,tq->tr", N, self.tau)
        return A, b, N


@dataclass
class LoadSharingResult:
    """Controls and forces per frame.

    time : (T,) s; names : actuators; activations : (T, n) controls (activations of muscles);
    forces : (T, n) N or N·m (``x F̂``; OpenSim's ``_force.sto``); multipliers : (T, mc)
    constraint multipliers (sign of :func:`arthron.multibody.constrained_dynamics.constraint_loads`);
    (with ``passive_fiber_force`` the muscles' passive fibre force along the tendon is included);
    residual : (T, nq) generalized-force residual of the equations of motion (N·m, N; locked
    coordinates 0); objective : (T,) Σ w|x|^p; feasible : (T,) bool; coordinates : (nq,)
    """

    time: np.ndarray
    names: list
    activations: np.ndarray
    forces: np.ndarray
    multipliers: np.ndarray
    residual: np.ndarray
    objective: np.ndarray
    feasible: np.ndarray
    coordinates: list
    extra: dict = field(default_factory=dict)
    inputs: tuple = field(default=(), repr=False, compare=False)    # files read: write_sto refuses them

    def activation_table(self) -> Table:
        """OpenSim's ``<name>_StaticOptimization_activation.sto`` table."""
        return Table(name="Static Optimization", time=np.array(self.time, float), labels=list(self.names),
                     data=np.array(self.activations, float), in_degrees=False, inputs=self.inputs)

    def report_table(self) -> Table:
        """Per frame: ``objective``, ``max_residual`` (N·m or N), ``feasible`` (1/0) and, with a
        stability cone, ``cone_active`` (1/0) and ``cone_angle_deg`` (angle of the reaction from
        the cone's axis)."""
        cols = {"objective": self.objective, "max_residual": np.abs(self.residual).max(axis=1),
                "feasible": self.feasible.astype(float)}
        for k in ("cone_active", "cone_angle_deg"):
            if k in self.extra:
                cols[k] = np.asarray(self.extra[k], float)
        return Table(name="Load sharing report", time=np.array(self.time, float), labels=list(cols),
                     data=np.column_stack(list(cols.values())), in_degrees=False, inputs=self.inputs)

    def force_table(self) -> Table:
        """OpenSim's ``<name>_StaticOptimization_force.sto`` table (its ForceReporter's
        ``ModelForces``): every force of the model that applies force, in the model's order,
        with OpenSim's record labels (the solved actuators' forces; the passive elements'
        records at the frame's q, q̇: :mod:`arthron.multibody.force_records`), then each
        ExternalForce as ``<body>_<name>_{Fx,Fy,Fz,px,py,pz,Tx,Ty,Tz}`` in ground.

        Warns (ArthronWarning) naming the forces whose records arthron leaves out."""
        T = len(self.time)
        rec = self.extra.get("force_records")
        if rec is None:
            labels, data = list(self.names), np.array(self.forces, float)
        else:
            if rec.omitted:
                warnings.warn("the force file leaves out the ForceReporter columns OpenSim 4.6 "
                              "writes for " + ", ".join(f"{a} '{b}'" for a, b in rec.omitted),
                              ArthronWarning, stacklevel=2)
            forces = np.asarray(self.forces, float)
            labels, data = rec.columns({n: forces[:, i] for i, n in enumerate(self.names)}, T)
        ext_labels, ext = self.extra.get("external_columns", ((), None))
        if ext is not None and len(ext_labels):
            labels, data = labels + list(ext_labels), np.hstack([data, ext])
        return Table(name="ModelForces", time=np.array(self.time, float), labels=labels,
                     data=data, in_degrees=False, inputs=self.inputs)


# ------------------------------------------------------------------------------ building
def _external_columns(tree: Tree, kin, loads):
    """ForceReporter's record of each ExternalForce: force and torque in ground, point in the
    body it is applied to (as OpenSim 4.6 writes them; measured on the Gait2354 walk)."""
    labels, cols = [], []
    T = kin.o.shape[0]

    def in_ground(v, frame):
        if v is None:
            return np.zeros((T, 3))
        if frame in (None, "", "ground"):
            return np.asarray(v, float)
        R = kin.R[:, tree.body_node[tree.body_names.index(frame)]]
        return np.einsum("tij,tj->ti", R, v)
    for ld in loads:
        b = tree.body_node[tree.body_names.index(ld.body)]
        if ld.point is None:
            p = kin.o[:, b]
        elif ld.point_frame in (None, "", "ground"):
            p = np.asarray(ld.point, float)
        else:
            n = tree.body_node[tree.body_names.index(ld.point_frame)]
            p = kin.o[:, n] + np.einsum("tij,tj->ti", kin.R[:, n], ld.point)
        p_body = np.einsum("tji,tj->ti", kin.R[:, b], p - kin.o[:, b])
        cols += [in_ground(ld.force, ld.force_frame), p_body, in_ground(ld.torque, ld.force_frame)]
        labels += [f"{ld.body}_{ld.name}_{c}" for c in ("Fx", "Fy", "Fz", "px", "py", "pz", "Tx", "Ty", "Tz")]
    return tuple(labels), (np.hstack(cols) if cols else None)



def actuator_bounds(model: Model, names, controls=None):
    """(lower, upper) control bounds (n,) as OpenSim 4.6 sets them: ``min_control`` /
    ``max_control`` from ``controls`` ({name: (min, max)}, e.g. read from the file), defaults
    muscles 0..1 (Thelen2003Muscle and Millard2012EquilibriumMuscle: ``max(min_control, 0.01)``,
    their ``minimum_activation``), other actuators −∞..∞."""
    controls = controls or {}
    lo, hi = [], []
    for n in names:
        f = model.forces[n]
        mn, mx = controls.get(n, (None, None))
        if f.is_muscle:
            mn = 0.0 if mn is None else mn
            mx = 1.0 if mx is None else mx
            if f.type in MIN_ACTIVATION_CLASSES:
                mn = max(mn, 0.01)
        else:
            mn = -np.inf if mn is None else mn
            mx = np.inf if mx is None else mx
        lo.append(mn)
        hi.append(mx)
    return np.array(lo, float), np.array(hi, float)


def _actuator_unit_loads(f, place, rows: int) -> list:
    """The body loads (ExternalLoads of ``rows`` samples) of a unit control of the
    Point/TorqueActuator ``f`` (optimal force left out): ``place(v)`` returns the (rows, 3)
    samples carrying the vector ``v`` ((3,) or per frame) where the load acts (zero elsewhere)."""
    loads = []
    if f.type == "PointActuator":
        body = (f.body or "").rsplit("/", 1)[-1]
        d = np.asarray(f.direction, float)
        d = d / np.linalg.norm(d)
        loads.append(ExternalLoad(body=body, force=place(d),
                                  point=np.broadcast_to(np.asarray(f.point, float), (rows, 3)).copy(),
                                  force_frame="ground" if f.force_is_global else body,
                                  point_frame="ground" if f.point_is_global else body))
    elif f.type == "TorqueActuator":
        a = np.asarray(f.axis, float)
        a = a / np.linalg.norm(a)
        ba, bb = (f.bodyA or "").rsplit("/", 1)[-1], (f.bodyB or "").rsplit("/", 1)[-1]
        frame = "ground" if f.torque_is_global else ba
        for body, sgn in ((ba, 1.0), (bb, -1.0)):
            if body and body != "ground":
                loads.append(ExternalLoad(body=body, torque=place(sgn * a), force_frame=frame))
    return loads


def _unit_actuator_columns(model: Model, tree: Tree, acts, q, kin):
    """Generalized forces (T, nq, k) of a unit force of each non-muscle actuator.

    Point and torque actuators: one inverse-dynamics pass over k stacked copies of the frames
    (the k-th copy carries the k-th actuator's unit load) minus one without loads:
    ``τ_ID(load) − τ_ID(none) = −Jᵀ load``."""
    T = q.shape[0]
    out = np.zeros((T, tree.nq, len(acts)))
    body_acts = [(k, f) for k, f in enumerate(acts) if f.type not in _COORDINATE_ACTUATORS]
    groups = {c: (g, j) for g in tree.angular_velocity_groups for j, c in enumerate(g)}
    for k, f in enumerate(acts):
        if f.type in _COORDINATE_ACTUATORS:
            c = tree.coordinate_index(f.coordinate)
            if c in groups:
                # Ellipsoid/Ball/Free rotations: the actuator acts on Simbody's mobility
                # u = ω_FM, τ_q = Aᵀ τ_u (as arthron.solvers.actuators.actuator_forces)
                from ..multibody.kinematics import _euler_xyz_rate_matrix
                g, j = groups[c]
                A = _euler_xyz_rate_matrix(q[:, g[0]], q[:, g[1]])
                out[:, list(g), k] = A[:, j, :]
            else:
                out[:, c, k] = 1.0
    if not body_acts:
        return out
    K = len(body_acts)
    qs = np.concatenate([q] * K)
    zero = np.zeros_like(qs)
    loads = []

    def block(j, v):
        a = np.zeros((K * T, 3))
        a[j * T:(j + 1) * T] = v
        return a
    for j, (k, f) in enumerate(body_acts):
        loads += _actuator_unit_loads(f, lambda v, j=j: block(j, v), K * T)
    base = inverse_dynamics(tree, q, np.zeros_like(q), np.zeros_like(q), [])
    with_loads = inverse_dynamics(tree, qs, zero, zero, loads).reshape(K, T, tree.nq)
    for j, (k, _) in enumerate(body_acts):
        out[:, :, k] = base - with_loads[j]
    return out


def build_problem(model: Model, motion, *, external_loads=None, loads_table=None, lowpass_hz=None,
                  time_range=None, use_muscle_physiology: bool = True, controls=None,
                  passive_fiber_force: bool = False, tree: Tree | None = None,
                  actuators=None, in_degrees=None) -> LoadSharingProblem:
    """Set up the per-frame problem of OpenSim's StaticOptimization for a motion.

    Parameters
    ----------
    model : Model (its muscles and its Coordinate/Point/TorqueActuators are the unknowns,
        disabled ones left out, as OpenSim 4.6)
    motion : Table of coordinates (``.mot`` of IK; degrees honoured; coordinates missing from
        it take their defaults, dependent coordinates of couplers are filled from the
        constraints by assembly before filtering), or a states file's ModelStates (q and u as
        given, the accelerations :meth:`~arthron.solvers.states_file.ModelStates.speed_spline_accelerations`)
    external_loads : arthron.io.setup.ExternalLoads or None; loads_table its data (default read)
    lowpass_hz, time_range : as AnalyzeTool's ``lowpass_cutoff_frequency_for_coordinates``,
        ``initial_time``/``final_time``; the accelerations to meet are OpenSim's
        StaticOptimization's: the derivative of the spline of the speeds
        (:func:`arthron.solvers.filtering.prepare_coordinates` ``accelerations="speeds"``)
    use_muscle_physiology : OpenSim's option (F̂ = F_max f_L f_V cos α, Millard2012 muscles as
        :func:`arthron.models.muscles.millard_inextensible_tendon_active_force`; else F̂ = F_max)
    controls : {actuator: (min_control, max_control)} overriding :func:`actuator_bounds`
    actuators : names to solve for (default: every enabled muscle and actuator)
    in_degrees : bool or None: rotational columns in degrees (None: the motion's ``in_degrees``,
        as :func:`arthron.solvers.inverse_dynamics.run_inverse_dynamics`)

    Raises
    ------
    SolverError (no actuators, more rows than actuators), UnsupportedFeature (muscle classes
    whose curves are not reproduced), ModelFileError (loads on unknown bodies).
    """
    # the options before the motion is read and assembled (as run_inverse_dynamics)
    time_range, lp = check_time_range(time_range, strict=False), lowpass_cutoff(lowpass_hz)
    tree = tree or compile_model(model)
    if actuators is None:
        actuators = [n for n, f in model.forces.items() if f.applies_force
                     and (f.is_muscle or f.type in SO_ACTUATOR_TYPES)]
    if not actuators:
        raise SolverError(f"model '{model.name}' has no muscles or actuators to share the load")
    actuators = [actuators] if isinstance(actuators, str) else list(actuators)
    for what, names in (("actuators", actuators), ("controls", controls or {})):
        unknown = [n for n in names if n not in model.forces]
        if unknown:             # (a name typed by hand: a KeyError deep inside, or ignored, before)
            raise OptionError(f"{what} names {', '.join(map(repr, unknown[:5]))}, not forces of model "
                              f"'{model.name}' (its muscles and actuators: {', '.join(list(model.forces)[:8])}"
                              f"{' ...' if len(model.forces) > 8 else ''})")
    cons = [c for c in model.constraints if c.enabled]
    if hasattr(motion, "speed_spline_accelerations"):     # a states file's ModelStates
        t, q, qd, qdd = motion.speed_spline_accelerations(time_range)
        if cons:
            q = assemble(model, tree, q)
    else:
        vals = coordinates_from_table(model, motion, missing="default", in_degrees=in_degrees)
        if cons:
            vals = assemble(model, tree, vals)
        if time_range is None:
            time_range = (float(motion.time[0]), float(motion.time[-1]))
        # the target accelerations as OpenSim's StaticOptimization takes them (the speeds' spline)
        t, q, qd, qdd = prepare_coordinates(np.asarray(motion.time, float), vals, lp, time_range,
                                            accelerations="speeds", source=getattr(motion, "source", None))
    if tree.angular_velocity_groups:
        qd, qdd = qdot_from_speeds(tree, q, qd, qdd)
    T = t.size
    pf = passive_forces(model, tree, q, qd, ("Muscles", "Actuators"))
    applied, not_applied = passive_generalized_forces(tree, q, pf), pf.not_applied
    if not_applied:
        warnings.warn(f"model '{model.name}': force elements left out of the static optimization: "
                      + ", ".join(f"{a} {b}" for a, b in not_applied[:8]), ArthronWarning)
    loads = []
    if external_loads is not None:
        if loads_table is None:
            loads_table = external_loads.load_table()
        loads = external_loads_from_setup(model, external_loads, loads_table, t)
    tau = inverse_dynamics(tree, q, qd, qdd, loads, applied=applied)
    kin = forward_kinematics(tree, q)
    external_columns = _external_columns(tree, kin, loads)
    records = force_records(model, tree, q, qd, actuators, passive=pf)
    mus = [n for n in actuators if model.forces[n].is_muscle]
    other = [model.forces[n] for n in actuators if not model.forces[n].is_muscle]
    bad = [f.name for f in other if f.type not in SO_ACTUATOR_TYPES]
    if bad:
        raise SolverError(f"static optimization: actuator(s) {', '.join(bad)} of model '{model.name}' "
                          f"are not of the classes {', '.join(SO_ACTUATOR_TYPES)} or muscles")
    n = len(actuators)
    B = np.zeros((T, tree.nq, n))
    fhat = np.ones((T, n))
    passive = None
    muscle_paths = None
    col = {a: i for i, a in enumerate(actuators)}
    if mus:
        ps = compile_paths(model, tree, forces=mus)
        sd = path_states(ps, tree, q, kin)
        muscle_paths = (ps, sd)
        R, L = moment_arms(ps, tree, q, kin, return_lengths=True, coupled=False, states=sd)
        par = muscle_parameters(model, mus)
        if use_muscle_physiology or passive_fiber_force:
            v = lengthening_speeds(ps, tree, q, qd, kin, R, states=sd)   # as OpenSim
            try:
                fl, fp, fv, cosa = force_length_velocity(par, L, v)
            except UnsupportedFeature as e:          # name the model file
                raise UnsupportedFeature(e.message, model.source, e.where) from None
        fmax = np.broadcast_to(par.max_isometric_force, (T, len(mus)))
        fm = fmax * fl * fv * cosa if use_muscle_physiology else fmax
        mil = [i for i, t in enumerate(par.types) if t.startswith("Millard")]
        if use_muscle_physiology and mil:        # OpenSim's Millard F̂ (see the function)
            fm = np.array(fm, float)
            pmax = [muscle_property(model.forces[mus[i]], "maximum_pennation_angle", float(np.arccos(0.1)))
                    for i in mil]
            fm[:, mil] = millard_inextensible_tendon_active_force(par, L, v, mil,
                                                                  maximum_pennation_angle=pmax)
        idx = [col[m] for m in mus]
        fhat[:, idx] = fm
        B[:, :, idx] = np.swapaxes(R, 1, 2) * fm[:, None, :]
        if passive_fiber_force:
            passive = fmax * fp * cosa
            tau = tau - np.einsum("tmq,tm->tq", R, passive)
    if other:
        U = _unit_actuator_columns(model, tree, other, q, kin)
        opt = np.array([float(f.optimal_force) for f in other])
        idx = [col[f.name] for f in other]
        fhat[:, idx] = opt
        B[:, :, idx] = U * opt
    lo, hi = actuator_bounds(model, actuators, controls)
    G = None
    free_rows = np.ones(tree.nq, bool)
    for name, c in model.coordinates.items():
        if getattr(c, "locked", False):
            free_rows[tree.coordinate_index(name)] = False
    if cons:
        cs = compile_constraints(model, tree)
        G = cs.jacobian(q)
    kinds = ["muscle" if model.forces[a].is_muscle else model.forces[a].type for a in actuators]
    return LoadSharingProblem(time=t, names=list(actuators), kinds=kinds,
                              coordinates=list(tree.coordinate_names), B=B, tau=tau,
                              lower=np.broadcast_to(lo, (T, n)).copy(),
                              upper=np.broadcast_to(hi, (T, n)).copy(), force_per_control=fhat,
                              G=G, free_rows=free_rows, q=q, qd=qd, qdd=qdd, passive=passive,
                              external_columns=external_columns, muscle_paths=muscle_paths,
                              force_records=records)


#: N/m² — PCSA = F_max / σ when no PCSA is given (a common value in upper-limb models;
#: the stress objective's optimum does not depend on it when every PCSA is derived this way)
DEFAULT_SPECIFIC_TENSION = 0.6e6


def stress_weights(prob, pcsa=None, specific_tension=None):
    """Objective weights (n,) of Σ (f_i / (PCSA_i σ))² in the problem's controls: muscles
    ``(F̂_i / (PCSA_i σ))²`` (F̂ the force per unit control, frame-independent without muscle
    physiology), other actuators 1 (their controls², as OpenSim). ``pcsa``: {muscle: m²};
    the others get ``F_max / σ``.

    Raises OptionError for a non-positive PCSA or specific tension, or a PCSA of an unknown muscle.
    """
    sigma = DEFAULT_SPECIFIC_TENSION if specific_tension is None else float(specific_tension)
    if not (np.isfinite(sigma) and sigma > 0):
        raise OptionError(f"specific tension must be a positive number (N/m²), got {specific_tension!r}")
    pcsa = dict(pcsa or {})
    unknown = [k for k in pcsa if k not in prob.names]
    if unknown:
        raise OptionError(f"PCSA given for {', '.join(unknown)}, which are not muscles of the problem")
    fh = np.asarray(prob.force_per_control, float)
    if np.ptp(fh, axis=0).max() > 1e-9 * (1 + np.abs(fh).max()):
        raise OptionError("the stress objective needs a force per activation that does not change "
                          "over frames: use it without muscle physiology")
    w = np.ones(len(prob.names))
    for i, (n, k) in enumerate(zip(prob.names, prob.kinds)):
        if k != "muscle":
            continue
        a = pcsa.get(n)
        if a is None:
            a = fh[0, i] / sigma
        elif not a > 0:
            raise OptionError(f"PCSA of '{n}' must be positive, got {a!r}")
        w[i] = (fh[0, i] / (a * sigma)) ** 2
    return w


# ------------------------------------------------------------------------------ solving
def _diagnose(prob: LoadSharingProblem, A, b, N, frames):
    """Smallest reserve set per infeasible frame: minimize Σ|r_j| (an L1 norm favours few
    coordinates) over coordinate reserves r with the actuators inside their bounds, each
    finite range narrowed by 0.1 % at both ends so that the reserve found leaves the frame
    strictly feasible."""
    from scipy.optimize import linprog
    report = []
    n = A.shape[2]
    nq = N.shape[1]
    for t in frames:
        # variables: x (n), r⁺ (nq), r⁻ (nq); Nᵀ(B x + r⁺ − r⁻) = Nᵀ τ
        Aeq = np.hstack([A[t], N[t].T, -N[t].T])
        c = np.concatenate([np.zeros(n), np.ones(2 * nq)])
        lo, hi = prob.lower[t].copy(), prob.upper[t].copy()
        fin = np.isfinite(lo) & np.isfinite(hi)
        lo[fin], hi[fin] = lo[fin] + 1e-3 * (hi[fin] - lo[fin]), hi[fin] - 1e-3 * (hi[fin] - lo[fin])
        bounds = [(a if np.isfinite(a) else None, c if np.isfinite(c) else None)
                  for a, c in zip(lo, hi)] + [(0, None)] * (2 * nq)
        r = linprog(c, A_eq=Aeq, b_eq=b[t], bounds=bounds, method="highs")
        need = {}
        if r.status == 0:
            rr = r.x[n:n + nq] - r.x[n + nq:]
            need = {prob.coordinates[j]: float(rr[j]) for j in np.flatnonzero(np.abs(rr) > 1e-8)}
        report.append((float(prob.time[t]), need))
    return report


def solve_problem(prob: LoadSharingProblem, *, activation_exponent: float = 2.0, weights=None,
                  on_infeasible: str = "raise", tol: float = 1e-10, multiplier_weights=None,
                  multiplier_bounds=None) -> LoadSharingResult:
    """Solve a :class:`LoadSharingProblem` for all frames.

    weights : (n,) positive objective weights (default 1: OpenSim); activation_exponent : p ≥ 1
    (2: the batched dual Newton QP; otherwise cvxpy + Clarabel, imported only then);
    multiplier_weights : (mc,) positive weights of the constraint multipliers in the objective
    (Σ w x² + Σ w_μ μ², the multipliers as unknowns of Eq. 12 of Sarshari et al.; p = 2 only),
    with ``multiplier_bounds`` ((mc,), (mc,)) (default unbounded). Without them the multipliers
    are free and eliminated (OpenSim: the constraints take what they must);
    on_infeasible : ``"raise"`` (InfeasibleFrames naming each infeasible frame by its time
    with the smallest reserve set that would make it feasible), ``"warn"`` or ``"ignore"``
    (the frames are flagged in ``feasible``).
    """
    if on_infeasible not in ("raise", "warn", "ignore"):
        raise OptionError(f"on_infeasible must be raise, warn or ignore, not {on_infeasible!r}")
    p = float(activation_exponent)
    if not np.isfinite(p) or p < 1:
        raise OptionError(f"activation exponent must be a number ≥ 1, got {activation_exponent!r}")
    if multiplier_weights is not None:
        return _solve_with_multipliers(prob, weights, multiplier_weights, multiplier_bounds,
                                       p, on_infeasible, tol)
    A, b, N = prob.reduced()
    T, _, n = A.shape
    try:
        w = np.ones(n) if weights is None else np.asarray(weights, float)
    except (TypeError, ValueError):
        w = None
    if w is None or w.shape != (n,) or np.any(~(w > 0)):
        raise OptionError(f"objective weights must be positive numbers, one per actuator ({n}, in the order "
                          f"of the problem's actuators), got {type(weights).__name__} {weights!r:.80}")
    if A.shape[1] > n:
        raise SolverError(f"static optimization: {A.shape[1]} equations of motion but only {n} actuators"
                          + _unactuated_hint(prob))
    if p == 2.0:
        # Σ w x² = ½ Σ (2w) x²
        r = solve_box_qp(A, b, 2.0 * w, prob.lower, prob.upper, tol=tol)
        x, ok = r.x, r.ok
    else:
        from .load_sharing_convex import solve_power_objective
        x, ok = solve_power_objective(A, b, w, prob.lower, prob.upper, p)
    forces = x * prob.force_per_control
    if prob.passive is not None:           # passive fibre force applied as a known force
        forces[:, [i for i, k in enumerate(prob.kinds) if k == "muscle"]] += prob.passive
    gen = np.einsum("tqn,tn->tq", prob.B, x)
    rest = prob.tau - gen
    mc = 0 if prob.G is None else prob.G.shape[1]
    mu = np.zeros((T, mc))
    if mc:
        keep = prob.free_rows
        Gt = np.swapaxes(prob.G[:, :, keep], 1, 2)
        mu = np.stack([np.linalg.lstsq(Gt[k], rest[k, keep], rcond=None)[0] for k in range(T)])
        rest = rest - np.einsum("tmq,tm->tq", prob.G, mu)
    rest[:, ~prob.free_rows] = 0.0
    obj = (w * np.abs(x) ** p).sum(axis=1)
    res = LoadSharingResult(time=prob.time, names=list(prob.names), activations=x, forces=forces,
                            multipliers=mu, residual=rest, objective=obj, feasible=np.asarray(ok),
                            coordinates=list(prob.coordinates))
    res.extra["external_columns"] = prob.external_columns
    res.extra["force_records"] = prob.force_records
    bad = np.flatnonzero(~res.feasible)
    if bad.size and on_infeasible != "ignore":
        report = _diagnose(prob, A, b, N, bad[:20])
        res.extra["infeasible"] = report
        msg = _infeasible_message(prob, report, bad.size, T)
        if on_infeasible == "raise":
            raise InfeasibleFrames(msg, report)
        warnings.warn(msg, ArthronWarning)
    return res


def _infeasible_message(prob: LoadSharingProblem, report, n_bad: int, T: int) -> str:
    """One line for ``n_bad`` infeasible frames of ``T``: the coordinates no actuator moves (if
    any), the reserves of the first three frames of ``report`` ([(time, {coordinate: reserve})],
    N or N·m) and, when it holds more, the largest reserve per coordinate over its frames."""
    idle = _idle_coordinates(prob)
    msg = f"static optimization infeasible at {n_bad} of {T} frame(s) (actuators at their bounds)"
    if idle:
        msg += f"; no actuator acts on {_some(idle)}: add reserve actuators (CoordinateActuators) on them"
    msg += "; " + "; ".join(f"t = {t:.6g} s: reserve needed on " + (
        ", ".join(f"{c} {v:.4g}" for c, v in need.items()) or "(no reserve set found)") for t, need in report[:3])
    if n_bad > 3:
        peak = {}
        for t, need in report:
            for c, v in need.items():
                if abs(v) > abs(peak.get(c, (0.0, t))[0]):
                    peak[c] = (v, t)
        msg += f"; ... {n_bad - 3} more frame(s)" + (
            f", largest reserves over the first {len(report)}: "
            + ", ".join(f"{c} {v:.4g} (t = {t:.6g} s)" for c, (v, t) in peak.items()) if peak else "")
    return msg


def _idle_coordinates(prob: LoadSharingProblem) -> list:
    """The free coordinates that no actuator moves in any frame: rows of B zero to rounding
    (below 1e-9 of its largest entry)."""
    size = np.abs(prob.B).max(axis=(0, 2))                    # (nq,)
    return [c for i, c in enumerate(prob.coordinates)
            if prob.free_rows[i] and size[i] <= 1e-9 * size.max(initial=0.0)]


def _some(names, k: int = 12) -> str:
    """``len(names)`` coordinate(s): the first ``k`` names, then how many more."""
    more = f" and {len(names) - k} more" if len(names) > k else ""
    return f"{len(names)} coordinate(s): {', '.join(names[:k])}{more}"


def _unactuated_hint(prob: LoadSharingProblem) -> str:
    """The end of the message of a problem with more equations than actuators: the coordinates
    no actuator moves (:func:`_idle_coordinates`) and what to do."""
    idle = _idle_coordinates(prob)
    if not idle:
        return "; add reserve actuators (CoordinateActuators) on the coordinates the muscles do not span"
    return (f"; no actuator acts on {_some(idle)}; add reserve actuators (CoordinateActuators) on them, "
            "or lock them in the model")


def _solve_with_multipliers(prob, weights, mweights, mbounds, p, on_infeasible, tol):
    """Multipliers as weighted, bounded unknowns: rows of the free coordinates,
    ``[B, Gᵀ] [x; μ] = τ``."""
    if p != 2.0:
        raise OptionError("weighted constraint multipliers need activation exponent 2")
    if prob.G is None or prob.G.shape[1] == 0:
        raise OptionError("multiplier weights given, but the model has no enabled constraints")
    T, nq, n = prob.B.shape
    mc = prob.G.shape[1]
    wm = np.asarray(mweights, float)
    if wm.shape != (mc,) or np.any(~(wm > 0)):
        raise OptionError(f"multiplier weights must be {mc} positive numbers")
    lo_m, hi_m = (np.full(mc, -np.inf), np.full(mc, np.inf)) if mbounds is None else \
        (np.broadcast_to(np.asarray(mbounds[0], float), (mc,)), np.broadcast_to(np.asarray(mbounds[1], float), (mc,)))
    if np.any(lo_m > hi_m):
        raise OptionError("multiplier bounds must have lower ≤ upper")
    w = np.ones(n) if weights is None else np.asarray(weights, float)
    if w.shape != (n,) or np.any(~(w > 0)):
        raise OptionError("objective weights must be positive, one per actuator")
    keep = prob.free_rows
    A = np.concatenate([prob.B[:, keep], np.swapaxes(prob.G[:, :, keep], 1, 2)], axis=2)
    b = prob.tau[:, keep]
    lo = np.hstack([prob.lower, np.broadcast_to(lo_m, (T, mc))])
    hi = np.hstack([prob.upper, np.broadcast_to(hi_m, (T, mc))])
    r = solve_box_qp(A, b, 2.0 * np.concatenate([w, wm]), lo, hi, tol=tol)
    x, mu = r.x[:, :n], r.x[:, n:]
    forces = x * prob.force_per_control
    if prob.passive is not None:
        forces[:, [i for i, k in enumerate(prob.kinds) if k == "muscle"]] += prob.passive
    rest = prob.tau - np.einsum("tqn,tn->tq", prob.B, x) - np.einsum("tmq,tm->tq", prob.G, mu)
    rest[:, ~keep] = 0.0
    res = LoadSharingResult(time=prob.time, names=list(prob.names), activations=x, forces=forces,
                            multipliers=mu, residual=rest, objective=(w * x * x).sum(1) + (wm * mu * mu).sum(1),
                            feasible=np.asarray(r.ok), coordinates=list(prob.coordinates))
    res.extra["external_columns"] = prob.external_columns
    res.extra["force_records"] = prob.force_records
    bad = np.flatnonzero(~r.ok)
    if bad.size and on_infeasible != "ignore":
        msg = (f"load sharing with bounded multipliers infeasible at {bad.size} of {T} frame(s): t = "
               + ", ".join(f"{prob.time[k]:.6g} s" for k in bad[:20]))
        if on_infeasible == "raise":
            raise InfeasibleFrames(msg, [(float(prob.time[k]), {}) for k in bad])
        warnings.warn(msg, ArthronWarning)
    return res


def static_optimization(model: Model, motion, *, activation_exponent: float = 2.0,
                        use_muscle_physiology: bool = True, weights=None,
                        on_infeasible: str = "raise", **kw) -> LoadSharingResult:
    """OpenSim's StaticOptimization on a motion: :func:`build_problem` then
    :func:`solve_problem` (keywords of both). Returns a :class:`LoadSharingResult`.

    ``model``: a Model; ``motion``: a Table of coordinates, (T, n) columns named by coordinate
    or 4.x state path, degrees honoured (``in_degrees``, default the Table's); ``lowpass_hz`` Hz, ``time_range``
    (t0, t1) s. Raises OptionError (bad options, a path for the model or motion), DataFileError
    (a motion that does not fit the model), :class:`InfeasibleFrames` (with
    ``on_infeasible="raise"``)."""
    prob = build_problem(model, motion, use_muscle_physiology=use_muscle_physiology, **kw)
    res = solve_problem(prob, activation_exponent=activation_exponent, weights=weights,
                        on_infeasible=on_infeasible)
    res.extra["problem"] = prob
    res.inputs = input_files(model, motion, kw.get("loads_table"))
    return res
