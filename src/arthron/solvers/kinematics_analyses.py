"""OpenSim's kinematics analyses as computations: BodyKinematics, Kinematics and PointKinematics
over the states OpenSim's AnalyzeTool builds from a coordinates file.

The states (:func:`analysis_states`) are those of OpenSim 4.6's AnalyzeTool: q and the speeds u
are the value and first derivative of the quintic splines of the coordinates, filtered first
with ``lowpass_cutoff_frequency_for_coordinates`` and on the frames of
:func:`arthron.solvers.filtering.prepare_coordinates`; q is assembled when the model has
constraints. The *accelerations* are not the splines' second derivatives: the analyses realize
the state to ``Stage::Acceleration``, i.e. the accelerations are those of forward dynamics under
the forces the model applies at these states (gravity, the external loads of the tool, springs,
limit forces, ligaments; muscles and actuators see below). arthron computes them with
:func:`arthron.multibody.forward_dynamics.forward_accelerations`, as its JointReaction does.

Muscles: the coordinates file gives no muscle state, so OpenSim applies each muscle's force at its
*default* (unequilibrated) state: for ``Thelen2003Muscle``, ``Millard2012EquilibriumMuscle``,
``Millard2012AccelerationMuscle`` and ``DeGrooteFregly2016Muscle`` arthron applies exactly that
force along the paths (:mod:`arthron.solvers.muscle_states`, whose
:func:`~arthron.solvers.muscle_states.thelen_default_state_tensions` and
:func:`~arthron.solvers.muscle_states.millard_default_state_tensions` this module re-exports).
Other muscle models and actuators apply no force in arthron (a warning names them), so the
accelerations of such models differ from OpenSim's; positions and velocities never depend on
forces.

On a states file (:mod:`arthron.solvers.states_file`) q and u are the file's rows and the
muscles pull at the file's states (:func:`analysis_states_of`, the same forward dynamics).

Results are typed objects whose ``to_table`` gives the tables OpenSim writes (labels, units,
names, descriptions); writing them is :mod:`arthron.tools.analyze_tool`.

Sources: OpenSim 4.6 ``BodyKinematics``, ``Kinematics``, ``PointKinematics`` (Analyses) and
``AnalyzeTool``; Simbody's ``Rotation::convertRotationToBodyFixedXYZ``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ArthronWarning, ModelFileError
from ..geometry.spatial import cross
from ..models.model import Model
from ..models.motion import coordinates_from_table
from ..multibody.forces import passive_forces
from ..multibody.forward_dynamics import forward_accelerations
from ..multibody.kinematics import Tree, _euler_xyz_rate_matrix, compile_model, forward_kinematics
from ..tables import Table
from .actuators import activation_actuator_forces, path_loads
from .filtering import lowpass_cutoff, prepare_coordinates
from .inverse_dynamics import external_loads_from_setup, frame_chunks, slice_loads
from .muscle_states import (default_state_muscles, millard_default_state_tensions,  # noqa: F401
                            thelen_default_state_tensions)

__all__ = ["AnalysisStates", "analysis_states", "analysis_states_of", "thelen_default_state_tensions",
           "millard_default_state_tensions", "BodyKinematicsResult", "body_kinematics",
           "CoordinateKinematicsResult", "coordinate_kinematics", "PointKinematicsResult",
           "point_kinematics", "body_fixed_xyz", "speed_derivatives", "CENTER_OF_MASS"]

#: the special body name of BodyKinematics for the whole-body centre of mass
CENTER_OF_MASS = "center_of_mass"
_RTD = 180.0 / np.pi
_DEGREES_NOTE = ("If the header above contains a line with 'inDegrees', this indicates whether "
                 "rotational values are in degrees (yes) or radians (no).")


# --------------------------------------------------------------------------------------
# states
# --------------------------------------------------------------------------------------
@dataclass
class AnalysisStates:
    """The states an AnalyzeTool run visits.

    time : (T,) s; q : (T, nq) coordinates (rad, m), model order; u : (T, nq) the speeds OpenSim
    sets (spline derivatives, rad/s, m/s); qd, qdd : (T, nq) coordinate rates and accelerations
    (forward dynamics); udot : (T, nq) the speeds' derivatives OpenSim reports (equal to qdd
    except for the coordinates of ``tree.angular_velocity_groups``, whose speeds are the
    mobilizer's angular velocity: u̇ = A q̈ + Ȧ q̇, :func:`speed_derivatives`).
    """

    time: np.ndarray
    q: np.ndarray
    u: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    udot: np.ndarray = field(repr=False, default=None)

    def __post_init__(self):
        if self.udot is None:
            self.udot = self.qdd


def analysis_states(model: Model, motion, *, lowpass_hz=None, time_range=None, external_loads=None,
                    loads_table=None, tree: Tree | None = None,
                    default_fiber_lengths: dict | None = None) -> AnalysisStates:
    """The states of OpenSim 4.6's AnalyzeTool on a coordinates file (see the module docstring).

    Parameters
    ----------
    model : Model; motion : Table of coordinates (degrees honoured; missing coordinates at their
    defaults); lowpass_hz : cut-off (Hz) or None/≤ 0 for none; time_range : (t0, t1) s or None;
    external_loads : arthron.io.setup.ExternalLoads or None (``loads_table``: its data, default
    its ``datafile``); tree : compiled tree (default compiled from ``model``);
    default_fiber_lengths : {muscle name: (default_fiber_length m, maximum_pennation_angle rad)}
    for the muscles whose file gives them (each of the two may be None: OpenSim's defaults).

    Returns
    -------
    AnalysisStates

    Raises
    ------
    OptionError (time range outside the data), DataFileError (motion not matching the model).
    """
    tree = compile_model(model) if tree is None else tree
    vals = coordinates_from_table(model, motion, missing="default")
    lp = lowpass_cutoff(lowpass_hz)      # (a str, NaN: OptionError, not a TypeError here)
    t, q, u, _ = prepare_coordinates(np.asarray(motion.time, float), vals, lp, time_range,
                                     source=getattr(motion, "source", None))
    return analysis_states_of(model, t, q, u, external_loads=external_loads, loads_table=loads_table,
                              tree=tree, default_fiber_lengths=default_fiber_lengths)


def analysis_states_of(model: Model, t, q, u, *, external_loads=None, loads_table=None,
                       tree: Tree | None = None, default_fiber_lengths: dict | None = None,
                       muscle_states: dict | None = None) -> AnalysisStates:
    """The states OpenSim 4.6's AnalyzeTool visits at coordinates ``q`` and speeds ``u``
    (T, nq) at times ``t`` (T,) s: q assembled when the model has constraints, the
    accelerations of forward dynamics there (module docstring). ``muscle_states``: {muscle:
    {state: (T,) array}} replacing the muscles' default states frame by frame (a states file,
    :mod:`arthron.solvers.states_file`); the other arguments as :func:`analysis_states`.

    Returns AnalysisStates."""
    tree = compile_model(model) if tree is None else tree
    t, q, u = np.asarray(t, float), np.asarray(q, float), np.asarray(u, float)
    if any(c.enabled for c in model.constraints):
        from ..multibody.constraints import assemble
        q = assemble(model, tree, q)
    qd = u
    if tree.angular_velocity_groups:
        from ..multibody.kinematics import qdot_from_speeds
        qd = qdot_from_speeds(tree, q, u)
    dsm = default_state_muscles(model, tree, default_fiber_lengths, states=muscle_states)
    if dsm.others:
        warnings.warn(f"model '{model.name}': {len(dsm.others)} muscles "
                      f"({', '.join(sorted({m.type for m in dsm.others}))}) "
                      "apply no force to the accelerations (OpenSim applies them at their "
                      "states): the accelerations differ from OpenSim's; positions "
                      "and velocities do not", ArthronWarning, stacklevel=2)
    loads = []
    if external_loads is not None:
        if loads_table is None:
            loads_table = external_loads.load_table()
        loads = external_loads_from_setup(model, external_loads, loads_table, t)
    cs = None
    if any(c.enabled for c in model.constraints):
        from ..multibody.constraints import compile_constraints
        cs = compile_constraints(model, tree)
    locked = np.array([c.locked for c in model.coordinates.values()])
    qdd = np.empty_like(q)
    for s in frame_chunks(len(t)):
        rows = dsm.rows(s)       # the chunk's states (muscles', ActivationCoordinateActuators')
        gen, chunk_loads = _applied(model, tree, q[s], qd[s], list(slice_loads(loads, s)), rows.states)
        if dsm.paths is not None:
            m_loads, m_gen = rows.path_loads(tree, q[s], qd[s])
            chunk_loads += m_loads
            if m_gen.any():
                gen = m_gen if gen is None else gen + m_gen
        qdd[s] = forward_accelerations(tree, q[s], qd[s], gen, chunk_loads, locked=locked,
                                       constraints=cs)
    return AnalysisStates(time=t, q=q, u=u, qd=qd, qdd=qdd, udot=speed_derivatives(tree, q, qd, qdd))


def speed_derivatives(tree: Tree, q, qd, qdd) -> np.ndarray:
    """u̇ (T, nq) of coordinate rates: q̈, except for the coordinates of
    ``tree.angular_velocity_groups`` (body-fixed X-Y-Z angles whose Simbody speeds are ω_FM in F,
    u = A(q) q̇), where u̇ = A q̈ + Ȧ q̇ (the inverse of
    :func:`arthron.multibody.kinematics.qdot_from_speeds`)."""
    udot = np.array(qdd, float, copy=True)
    for g in tree.angular_velocity_groups:
        c0, s0, c1, s1 = (np.cos(q[:, g[0]]), np.sin(q[:, g[0]]), np.cos(q[:, g[1]]),
                          np.sin(q[:, g[1]]))
        d0, d1 = qd[:, g[0]], qd[:, g[1]]
        A = _euler_xyz_rate_matrix(q[:, g[0]], q[:, g[1]])
        Ad = np.zeros_like(A)
        Ad[:, 1, 1] = -s0 * d0
        Ad[:, 2, 1] = c0 * d0
        Ad[:, 0, 2] = c1 * d1
        Ad[:, 1, 2] = -c0 * c1 * d0 + s0 * s1 * d1
        Ad[:, 2, 2] = -s0 * c1 * d0 - c0 * s1 * d1
        udot[:, g] = (np.einsum("tij,tj->ti", A, qdd[:, g])
                      + np.einsum("tij,tj->ti", Ad, qd[:, g]))
    return udot


def _applied(model, tree, q, qd, loads, states=None):
    """(mobility forces or None, body loads) of the passive elements OpenSim applies and of its
    ActivationCoordinateActuators (their activations in ``states``, else the defaults; every
    other actuator has control 0)."""
    pf = passive_forces(model, tree, q, qd, exclude=("Actuators",))
    aca = activation_actuator_forces(model, tree, len(q), states)
    if aca is not None:
        pf.mobility = pf.mobility + aca
    if pf.not_applied:
        warnings.warn(f"model '{model.name}' has force elements arthron does not apply: "
                      + ", ".join(f"{t_} {n}" for t_, n in pf.not_applied[:6]), ArthronWarning,
                      stacklevel=3)
    gen = pf.mobility if pf.mobility.any() else None
    loads = loads + (pf.loads or [])
    if pf.path_names:
        p_loads, p_gen = path_loads(pf.paths, tree, q, pf.tensions)
        loads += p_loads
        if p_gen.any():
            gen = p_gen if gen is None else gen + p_gen
    return gen, loads


# --------------------------------------------------------------------------------------
# BodyKinematics
# --------------------------------------------------------------------------------------
def body_fixed_xyz(R) -> np.ndarray:
    """Body-fixed X-Y-Z angles (rad) of rotation matrices R (..., 3, 3): R = Rx(a) Ry(b) Rz(c),
    b in [-π/2, π/2] (Simbody's ``convertRotationToBodyFixedXYZ``). Returns (..., 3)."""
    R = np.asarray(R, float)
    a = np.arctan2(-R[..., 1, 2], R[..., 2, 2])
    b = np.arctan2(R[..., 0, 2], np.hypot(R[..., 1, 2], R[..., 2, 2]))
    c = np.arctan2(-R[..., 0, 1], R[..., 0, 0])
    return np.stack([a, b, c], -1)


def _body_description(model_name: str, local: bool) -> list:
    frame = "the body-local frame" if local else "the ground frame"
    return ["", "This file contains the kinematics (positions and orientations,",
            "velocities and angular velocities, or accelerations and angular accelerations)",
            f"of the centers of mass of the body segments in model {model_name}.", "",
            "Body segment orientations are described using body-fixed X-Y-Z Euler angles.", "",
            f"Angular velocities and accelerations are expressed in {frame}.", "",
            "Units are S.I. units (seconds, meters, Newtons, ...)", _DEGREES_NOTE, ""]


@dataclass
class BodyKinematicsResult:
    """BodyKinematics of some bodies over T frames.

    time : (T,); bodies : names (nb'); position : (T, nb', 3) body COM in ground (m);
    angles : (T, nb', 3) body-fixed X-Y-Z angles of the body frame in ground (rad);
    velocity, acceleration : (T, nb', 3) of the COM (m/s, m/s²); angular_velocity,
    angular_acceleration : (T, nb', 3) (rad/s, rad/s²); all these in ground, or in each body's
    frame when ``local`` (positions and angles always in ground); center_of_mass : None or a
    dict ``pos``/``vel``/``acc`` of (T, 3) whole-body COM in ground; in_degrees : angles and
    angular rates written in degrees.
    """

    time: np.ndarray
    bodies: list
    position: np.ndarray
    angles: np.ndarray
    velocity: np.ndarray
    angular_velocity: np.ndarray
    acceleration: np.ndarray
    angular_acceleration: np.ndarray
    center_of_mass: dict | None
    local: bool = False
    in_degrees: bool = True
    model_name: str = ""

    def labels(self) -> list:
        out = [f"{b}_{s}" for b in self.bodies for s in ("X", "Y", "Z", "Ox", "Oy", "Oz")]
        return out + ([f"{CENTER_OF_MASS}_{s}" for s in "XYZ"] if self.center_of_mass is not None else [])

    def to_table(self, kind: str = "pos") -> Table:
        """OpenSim's ``Positions`` (``kind="pos"``), ``Velocities`` (``"vel"``) or
        ``Accelerations`` (``"acc"``) table: per body ``<body>_X/_Y/_Z`` (COM, m) and
        ``_Ox/_Oy/_Oz`` (angles, or angular velocity/acceleration; deg when ``in_degrees``), then
        ``center_of_mass_X/_Y/_Z`` when recorded."""
        lin, ang, name = {"pos": (self.position, self.angles, "Positions"),
                          "vel": (self.velocity, self.angular_velocity, "Velocities"),
                          "acc": (self.acceleration, self.angular_acceleration, "Accelerations")}[kind]
        ang = ang * _RTD if self.in_degrees else ang
        T = len(self.time)
        cols = np.concatenate([lin, ang], axis=2).reshape(T, -1)
        if self.center_of_mass is not None:
            cols = np.concatenate([cols, self.center_of_mass[kind]], axis=1)
        return Table(name=name, time=np.array(self.time, float), labels=self.labels(), data=cols,
                     in_degrees=bool(self.in_degrees),
                     comments=_body_description(self.model_name, self.local))

    def rows(self, index) -> "BodyKinematicsResult":
        """The result at some frames only (integer array or slice)."""
        com = None if self.center_of_mass is None else {k: v[index] for k, v in self.center_of_mass.items()}
        return BodyKinematicsResult(
            np.asarray(self.time)[index], list(self.bodies), self.position[index], self.angles[index],
            self.velocity[index], self.angular_velocity[index], self.acceleration[index],
            self.angular_acceleration[index], com, self.local, self.in_degrees, self.model_name)


def _com_kinematics(tree: Tree, kin, b: int, R=None):
    """(position, velocity, acceleration) (T, 3) of body b's COM in ground."""
    n = tree.body_node[b]
    R = kin.node("R", n) if R is None else R
    r = np.einsum("tij,j->ti", R, tree.com[b])
    w, al = kin.node("w", n), kin.node("al", n)
    p = kin.node("o", n) + r
    v = kin.node("v", n) + cross(w, r)
    a = kin.node("a", n) + cross(al, r) + cross(w, cross(w, r))
    return p, v, a


def body_kinematics(tree: Tree, states: AnalysisStates, bodies=None, *, local: bool = False,
                    in_degrees: bool = True) -> BodyKinematicsResult:
    """OpenSim's BodyKinematics over the states of :func:`analysis_states`.

    Parameters
    ----------
    tree : compiled model; states : AnalysisStates
    bodies : None or names, in OpenSim's ``<bodies>`` sense: ``all`` (every body in BodySet
        order, and the whole-body centre of mass), body names, ``center_of_mass``
    local : ``express_results_in_body_local_frame`` (velocities and accelerations, linear and
        angular, expressed in each body's frame); in_degrees : angles in degrees.

    Returns
    -------
    BodyKinematicsResult

    Raises
    ------
    ModelFileError naming a body the model does not have.
    """
    names = ["all"] if bodies is None else list(bodies)
    sel, com = [], False
    for n in names:
        if n == "all":
            sel, com = list(range(tree.nb)), True
            break
        if n == CENTER_OF_MASS:
            com = True
            continue
        if n not in tree.body_names:
            raise ModelFileError(f"model '{tree.model_name}' has no body '{n}'")
        sel.append(tree.body_names.index(n))
    T = len(states.time)
    P, A, V, W, Acc, Al = (np.zeros((T, len(sel), 3)) for _ in range(6))
    m = np.asarray(tree.mass, float)
    whole = {k: np.zeros((T, 3)) for k in ("pos", "vel", "acc")} if com else None
    for s in frame_chunks(T):             # bounded memory whatever the trial's length
        kin = forward_kinematics(tree, states.q[s], states.qd[s], states.qdd[s])
        for k, b in enumerate(sel):
            n = tree.body_node[b]
            R = kin.node("R", n)
            P[s, k], V[s, k], Acc[s, k] = _com_kinematics(tree, kin, b, R)
            A[s, k] = body_fixed_xyz(R)
            W[s, k], Al[s, k] = kin.node("w", n), kin.node("al", n)
            if local:
                for X in (V, W, Acc, Al):
                    X[s, k] = np.einsum("tji,tj->ti", R, X[s, k])
        if com:
            for b in range(tree.nb):
                if m[b] != 0.0:
                    for x, y in zip(whole.values(), _com_kinematics(tree, kin, b)):
                        x[s] += m[b] * y
    if com:
        whole = {k: x / m.sum() for k, x in whole.items()}
    return BodyKinematicsResult(np.array(states.time, float), [tree.body_names[b] for b in sel],
                                P, A, V, W, Acc, Al, whole, bool(local), bool(in_degrees),
                                tree.model_name)


# --------------------------------------------------------------------------------------
# Kinematics
# --------------------------------------------------------------------------------------
@dataclass
class CoordinateKinematicsResult:
    """OpenSim's Kinematics analysis: coordinates (names), q, u, udot (T, n) in rad, m (and per
    s, s²); ``rotational`` (n,) bool; ``in_degrees``: rotational columns written in degrees."""

    time: np.ndarray
    coordinates: list
    q: np.ndarray
    u: np.ndarray
    udot: np.ndarray
    rotational: np.ndarray
    in_degrees: bool = True

    def to_table(self, kind: str = "q") -> Table:
        """OpenSim's ``Coordinates`` (``kind="q"``), ``Speeds`` (``"u"``) or ``Accelerations``
        (``"dudt"``) table, one column per coordinate."""
        x, name = {"q": (self.q, "Coordinates"), "u": (self.u, "Speeds"),
                   "dudt": (self.udot, "Accelerations")}[kind]
        x = np.array(x, float)
        if self.in_degrees:
            x[:, self.rotational] *= _RTD
        return Table(name=name, time=np.array(self.time, float), labels=list(self.coordinates),
                     data=x, in_degrees=bool(self.in_degrees),
                     comments=["", "Units are S.I. units (second, meters, Newtons, ...)",
                               _DEGREES_NOTE, ""])

    def rows(self, index) -> "CoordinateKinematicsResult":
        return CoordinateKinematicsResult(np.asarray(self.time)[index], list(self.coordinates),
                                          self.q[index], self.u[index], self.udot[index],
                                          self.rotational, self.in_degrees)


def coordinate_kinematics(model: Model, tree: Tree, states: AnalysisStates, coordinates=None, *,
                          in_degrees: bool = True) -> CoordinateKinematicsResult:
    """OpenSim's Kinematics analysis: q, u and u̇ of ``coordinates`` (None or ``all``: every
    coordinate in CoordinateSet order).

    Raises ModelFileError naming a coordinate the model does not have."""
    names = list(tree.coordinate_names) if not coordinates or "all" in coordinates else list(coordinates)
    bad = [c for c in names if c not in tree.coordinate_names]
    if bad:
        raise ModelFileError(f"model '{model.name}' has no coordinate(s) {', '.join(bad)}")
    idx = [tree.coordinate_names.index(c) for c in names]
    rot = np.array([model.coordinates[c].motion_type == "rotational" for c in names], bool)
    return CoordinateKinematicsResult(np.array(states.time, float), names, states.q[:, idx],
                                      states.u[:, idx], states.udot[:, idx], rot, bool(in_degrees))


# --------------------------------------------------------------------------------------
# PointKinematics
# --------------------------------------------------------------------------------------
@dataclass
class PointKinematicsResult:
    """OpenSim's PointKinematics: position (T, 3) of the point in ground, or in the frame of the
    ``relative_to`` body (position relative to it); velocity and acceleration (T, 3) in ground,
    expressed in that body's frame when given (not relative to it, as OpenSim)."""

    time: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    body: str = "ground"
    relative_to: str | None = None
    point_name: str = "NONAME"

    def to_table(self, kind: str = "pos") -> Table:
        """OpenSim 4.6's ``PointPosition`` / ``PointVelocity`` / ``PointAcceleration`` tables
        (``kind`` ``pos``, ``vel``, ``acc``): columns ``state_0 state_1 state_2`` (the labels
        OpenSim 4.6 writes: its storages append Vec3 rows, which replace the column labels) and
        the header ``inDegrees=no``."""
        x, name = {"pos": (self.position, "PointPosition"), "vel": (self.velocity, "PointVelocity"),
                   "acc": (self.acceleration, "PointAcceleration")}[kind]
        return Table(name=name, time=np.array(self.time, float),
                     labels=["state_0", "state_1", "state_2"], data=np.array(x, float),
                     in_degrees=False, comments=["No description."])

    def rows(self, index) -> "PointKinematicsResult":
        return PointKinematicsResult(np.asarray(self.time)[index], self.position[index],
                                     self.velocity[index], self.acceleration[index], self.body,
                                     self.relative_to, self.point_name)


def point_kinematics(tree: Tree, states: AnalysisStates, body: str, point, *, relative_to=None,
                     point_name: str = "NONAME") -> PointKinematicsResult:
    """OpenSim's PointKinematics of ``point`` (3,) m, fixed in ``body`` (a body name, a
    ``/bodyset/`` path or ``ground``), over the states of :func:`analysis_states`;
    ``relative_to``: None/``none`` or a body (its frame: position relative to it, velocity and
    acceleration expressed in it).

    Raises ModelFileError naming a body the model does not have."""
    b = tree.body_index(body)
    rel = None if relative_to is None or str(relative_to).lower() == "none" else relative_to
    rb = None if rel is None else tree.body_index(rel)
    c = np.asarray(point, float).reshape(3)
    T = len(states.time)
    p, v, a = (np.zeros((T, 3)) for _ in range(3))
    for s in frame_chunks(T):             # bounded memory whatever the trial's length
        kin = forward_kinematics(tree, states.q[s], states.qd[s], states.qdd[s])
        if b < 0:
            p[s] = c
        else:
            n = tree.body_node[b]
            r = np.einsum("tij,j->ti", kin.node("R", n), c)
            w, al = kin.node("w", n), kin.node("al", n)
            p[s] = kin.node("o", n) + r
            v[s] = kin.node("v", n) + cross(w, r)
            a[s] = kin.node("a", n) + cross(al, r) + cross(w, cross(w, r))
        if rb is not None and rb >= 0:
            n = tree.body_node[rb]
            R = kin.node("R", n)
            p[s] = np.einsum("tji,tj->ti", R, p[s] - kin.node("o", n))
            v[s] = np.einsum("tji,tj->ti", R, v[s])
            a[s] = np.einsum("tji,tj->ti", R, a[s])
    return PointKinematicsResult(np.array(states.time, float), p, v, a, body, rel, point_name)
