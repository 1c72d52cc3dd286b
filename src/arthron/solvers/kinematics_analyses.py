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
*default* (unequilibrated) state: fiber length ``default_fiber_length`` (0.1 m unless the model
says otherwise), activation ``default_activation``. For ``Thelen2003Muscle`` that force is the
tendon's, ``F_iso f_se(l_T / l_s)`` with ``l_T = L − l_M cos φ`` (fixed-width pennation, fiber
clamped at its minimum length; Thelen 2003's tendon curve with OpenSim's exact toe constants),
whatever the activation: arthron applies exactly that along the paths
(:func:`thelen_default_state_tensions`). ``Millard2012EquilibriumMuscle`` s likewise, with an
elastic tendon (their TendonForceLengthCurve at the default fiber length) or a rigid one (the
fiber's force at the path's fiber length and velocity, default activation):
:func:`millard_default_state_tensions`. Other muscle models and actuators apply no force in
arthron (a warning names them), so the accelerations of such models differ from OpenSim's;
positions and velocities never depend on forces.

Results are typed objects whose ``to_table`` gives the tables OpenSim writes (labels, units,
names, descriptions); writing them is :mod:`arthron.tools.analyze_tool`.

Sources: OpenSim 4.6 ``BodyKinematics``, ``Kinematics``, ``PointKinematics`` (Analyses) and
``AnalyzeTool``; Simbody's ``Rotation::convertRotationToBodyFixedXYZ``.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ArthronWarning, ModelFileError
from ..geometry.spatial import cross
from ..models.model import Model
from ..models.motion import coordinates_from_table
from ..models.muscles import muscle_property as _xml_value
from ..multibody.forces import passive_forces
from ..multibody.forward_dynamics import forward_accelerations
from ..multibody.kinematics import Tree, _euler_xyz_rate_matrix, compile_model, forward_kinematics
from ..tables import Table
from .actuators import path_loads
from .filtering import prepare_coordinates
from .inverse_dynamics import external_loads_from_setup, frame_chunks, slice_loads

__all__ = ["AnalysisStates", "analysis_states", "thelen_default_state_tensions",
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
    lp = None if lowpass_hz is None or lowpass_hz <= 0 else float(lowpass_hz)
    t, q, u, _ = prepare_coordinates(np.asarray(motion.time, float), vals, lp, time_range)
    if any(c.enabled for c in model.constraints):
        from ..multibody.constraints import assemble
        q = assemble(model, tree, q)
    qd = u
    if tree.angular_velocity_groups:
        from ..multibody.kinematics import qdot_from_speeds
        qd = qdot_from_speeds(tree, q, u)
    applied = [m for m in model.muscles.values() if m.applies_force]
    thelen = [m for m in applied if m.type == "Thelen2003Muscle"]
    millard = [m for m in applied if m.type in _MILLARD]
    others = [m for m in applied if m.type != "Thelen2003Muscle" and m.type not in _MILLARD]
    if others:
        warnings.warn(f"model '{model.name}': {len(others)} muscles ({', '.join(sorted({m.type for m in others}))}) "
                      "apply no force to the accelerations (OpenSim applies them at their default, "
                      "unequilibrated states): the accelerations differ from OpenSim's; positions "
                      "and velocities do not", ArthronWarning, stacklevel=2)
    paths = None
    fiber = default_fiber_lengths or {}
    if thelen or millard:
        from ..multibody.paths import compile_paths
        paths = compile_paths(model, tree, forces=[m.name for m in thelen + millard])
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
        gen, chunk_loads = _applied(model, tree, q[s], qd[s], list(slice_loads(loads, s)))
        if paths is not None:
            from ..multibody.paths import path_lengths
            lengths = path_lengths(paths, tree, q[s])
            nt = len(thelen)
            tension = np.empty_like(lengths)
            tension[:, :nt] = thelen_default_state_tensions(thelen, lengths[:, :nt], fiber)
            if millard:
                speeds = _lengthening_speeds(millard, paths, tree, q[s], qd[s], nt)
                tension[:, nt:] = millard_default_state_tensions(millard, lengths[:, nt:], speeds, fiber)
            m_loads, m_gen = path_loads(paths, tree, q[s], tension)
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


def _thelen_fse(x, e0):
    """Thelen 2003's normalized tendon force at strain x (OpenSim's exact toe constants)."""
    t1 = np.exp(3.0)
    e_toe = 99.0 * e0 * t1 / (166.0 * t1 - 67.0)
    k_lin = 0.67 / (e0 - e_toe)
    toe = 0.33 / (np.exp(3.0) - 1.0) * (np.exp(3.0 * x / e_toe) - 1.0)
    return np.where(x > e_toe, k_lin * (x - e_toe) + 0.33, np.where(x > 0.0, toe, 0.0))


def thelen_default_state_tensions(muscles, lengths, default_fiber_lengths=None) -> np.ndarray:
    """Tensions (T, m) N of ``Thelen2003Muscle`` s at their default states and path lengths
    ``lengths`` (T, m) m: ``F_iso f_se((L − l_M cos φ)/l_s − 1)``, l_M the default fiber length
    (0.1 m, or ``default_fiber_lengths[name][0]``) clamped at the fixed-width pennation model's
    minimum ``h / sin φ_max`` (h = l_opt sin φ_opt, φ_max = acos 0.1 or
    ``default_fiber_lengths[name][1]``), sin φ = h / l_M; f_se Thelen (2003)'s tendon curve with
    ``FmaxTendonStrain`` (0.04 when absent) and OpenSim's exact toe constants
    (``Thelen2003Muscle::calcfse``). What OpenSim's ``computeActuation`` returns there."""
    L = np.atleast_2d(np.asarray(lengths, float))
    out = np.zeros_like(L)
    given = default_fiber_lengths or {}
    for k, m in enumerate(muscles):
        lce, pmax = given.get(m.name, (None, None))
        lce = 0.1 if lce is None else float(lce)
        pmax = np.arccos(0.1) if pmax is None else float(pmax)
        h = float(m.optimal_fiber_length) * np.sin(float(m.pennation_angle_at_optimal))
        lce = max(lce, h / np.sin(pmax))
        cos_phi = np.sqrt(1.0 - (h / lce) ** 2)
        e0 = 0.04 if m.FmaxTendonStrain is None else float(m.FmaxTendonStrain)
        strain = (L[:, k] - lce * cos_phi) / float(m.tendon_slack_length) - 1.0
        out[:, k] = float(m.max_isometric_force) * _thelen_fse(strain, e0)
    return out


_MILLARD = ("Millard2012EquilibriumMuscle",)


def millard_default_state_tensions(muscles, lengths, speeds, default_fiber_lengths=None) -> np.ndarray:
    """Tensions (T, m) N of ``Millard2012EquilibriumMuscle`` s at their default states, path
    lengths ``lengths`` (T, m) m and lengthening speeds ``speeds`` (T, m) m/s: what OpenSim
    4.6's ``computeActuation`` (``MuscleDynamicsInfo::tendonForce``) returns there.

    Fiber length: elastic tendon, the state ``default_fiber_length`` (0.1 m, or
    ``default_fiber_lengths[name][0]``); rigid tendon (``ignore_tendon_compliance``), from the
    path, ``sqrt(h² + (L − l_s)²)``; both clamped at the minimum fiber length
    ``max(l_min,active l_opt, h / sin φ_max)`` (fixed-width pennation, h = l_opt sin φ_opt).
    Elastic tendon: ``F_iso f_T((L − l_M cos φ)/l_s)`` (TendonForceLengthCurve), whatever the
    activation and fiber velocity. Rigid tendon: the fiber's force along the tendon,
    ``F_iso (a f_L f_V(v) + f_PE + β v) cos φ`` ≥ 0 with v = L̇ cos φ / (l_opt v_max), a =
    ``default_activation`` (``ignore_activation_dynamics``: the control, 0 in the AnalyzeTool)
    clamped to [``minimum_activation``, 1], β = ``fiber_damping``; 0 when the fiber is clamped
    and shortening or the tendon is slack. Curves: :func:`arthron.models.muscles.millard_curves`.
    Source: OpenSim 4.6 ``Millard2012EquilibriumMuscle::calcMuscleLengthInfo``,
    ``calcFiberVelocityInfo``, ``calcMuscleDynamicsInfo``, ``isFiberStateClamped``."""
    from ..models.muscles import millard_curve_params, millard_tendon_force_length_curve
    from ..models.muscles import (millard_active_force_length_curve, millard_fiber_force_length_curve,
                                  millard_force_velocity_curve)
    L = np.atleast_2d(np.asarray(lengths, float))
    V = np.broadcast_to(np.atleast_2d(np.asarray(speeds, float)), L.shape)
    out = np.zeros_like(L)
    given = default_fiber_lengths or {}
    for k, m in enumerate(muscles):
        lopt, ls = float(m.optimal_fiber_length), float(m.tendon_slack_length)
        fiso, vmax = float(m.max_isometric_force), float(m.max_contraction_velocity)
        lce0, pmax = given.get(m.name, (None, None))
        lce0 = _xml_value(m, "default_fiber_length", 0.1) if lce0 is None else float(lce0)
        pmax = _xml_value(m, "maximum_pennation_angle", float(np.arccos(0.1))) if pmax is None else float(pmax)
        h = lopt * np.sin(float(m.pennation_angle_at_optimal))
        cp = millard_curve_params(m)                      # as OpenSim 4.6 finalizes them
        afl = cp["ActiveForceLengthCurve"]
        lmin = max(afl["min_norm_active_fiber_length"] * lopt, h / np.sin(pmax), 1e-14)
        block = re.search(r"<TendonForceLengthCurve[^>]*?(?:/>|>(.*?)</TendonForceLengthCurve>)",
                          getattr(m, "unmodelled_xml", "") or "", re.S)
        tprops = {t: _xml_value(m, t, None, (block.group(1) or "") if block else "")
                  for t in ("strain_at_one_norm_force", "stiffness_at_one_norm_force",
                            "norm_force_at_toe_end", "curviness")}
        if tprops["strain_at_one_norm_force"] is None:
            tprops["strain_at_one_norm_force"] = 0.049
        if _xml_value(m, "ignore_tendon_compliance", False):
            lce = np.maximum(np.sqrt(h * h + (L[:, k] - ls) ** 2), lmin)
        else:
            lce = np.full(len(L), max(lce0, lmin))
        cos_phi = np.sqrt(1.0 - (h / lce) ** 2)
        lt = L[:, k] - lce * cos_phi
        if not _xml_value(m, "ignore_tendon_compliance", False):
            out[:, k] = fiso * millard_tendon_force_length_curve(**tprops).value(lt / ls)
            continue
        if _xml_value(m, "ignore_activation_dynamics", False):
            a = 0.0
        else:
            a = _xml_value(m, "default_activation", 0.05)
        amin = _xml_value(m, "minimum_activation", 0.01)
        a = min(max(a, amin), 1.0)
        beta = _xml_value(m, "fiber_damping", 0.1)
        slack = lt < ls - 1e-14
        v = np.where(slack, 0.0, V[:, k] * cos_phi / (lopt * vmax))
        lN = lce / lopt
        fal = millard_active_force_length_curve(**afl).value(lN)
        fpe = millard_fiber_force_length_curve(**cp["FiberForceLengthCurve"]).value(lN)
        fv = np.where(slack, 1.0, millard_force_velocity_curve(**cp["ForceVelocityCurve"]).value(v))
        fm = np.maximum(fiso * (a * fal * fv + fpe + beta * v), 0.0)
        clamped = ((lce <= lmin) & (v <= 0)) | (lce < lmin)
        out[:, k] = np.where(clamped, 0.0, fm * cos_phi)
    return out


def _lengthening_speeds(muscles, paths, tree, q, qd, offset):
    """Lengthening speeds (T, m) m/s of ``muscles`` (paths ``offset:`` of ``paths``) as OpenSim's
    ``GeometryPath::getLengtheningSpeed`` (:func:`arthron.multibody.paths.lengthening_speeds`:
    the points' relative velocities along the path, moving path points included)."""
    from ..multibody.paths import lengthening_speeds
    return lengthening_speeds(paths, tree, q, qd)[:, offset:]


def _applied(model, tree, q, qd, loads):
    """(mobility forces or None, body loads) of the passive elements OpenSim applies."""
    pf = passive_forces(model, tree, q, qd, exclude=("Actuators",))
    if pf.not_applied:
        warnings.warn(f"model '{model.name}' has force elements arthron does not apply: "
                      + ", ".join(f"{t_} {n}" for t_, n in pf.not_applied[:6]), ArthronWarning,
                      stacklevel=3)
    gen = pf.mobility if pf.mobility.any() else None
    loads = loads + (pf.loads or [])
    if pf.path_names:
        from ..multibody.paths import compile_paths
        p_loads, p_gen = path_loads(compile_paths(model, tree, forces=pf.path_names), tree, q, pf.tensions)
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
