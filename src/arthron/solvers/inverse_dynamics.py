"""Inverse dynamics: generalized forces from a motion, as OpenSim's InverseDynamicsTool gives them.

Formulation (Blajer & Czaplicki 2005, minimal form of Eq. 2.5 in 3D): with the body
velocities ``v = [v_C; ω]`` (mass centers and angular velocities in ground), the velocity map
``D(q)`` (``v = D q̇``) and ``a = D q̈ + γ``,

    τ = Dᵀ (M (D q̈ + γ) − h),     M = blockdiag(m_b I₃, I_C,b),

where ``h`` holds gravity ``m_b g``, the gyroscopic moments ``−ω × I_C ω`` and the external
loads (ExternalLoads: force at a point plus torque). ``Dᵀ`` is applied as a backward sum over
subtrees (:func:`arthron.multibody.kinematics.apply_velocity_map_transpose`) rather than as a
dense matrix. Like OpenSim's tool, constraints and coordinate locks are ignored
(Simbody's ``calcResidualForceIgnoringConstraints`` on the file's coordinate values) and muscles
are excluded by default (when they are not, they pull with their default-state forces). For Ellipsoid, Scapulothoracic, Ball and Free joints OpenSim's generalized speeds
are the angular velocity ω_FM (in F), not the Euler-angle rates: the tool reads the spline
derivatives as those speeds and reports forces conjugate to them; arthron does the same
(:func:`arthron.multibody.kinematics.qdot_from_speeds`, :func:`~arthron.multibody.kinematics.mobility_forces`).

The computation itself is :func:`arthron.multibody.inverse_dynamics.inverse_dynamics` (with
:class:`~arthron.multibody.inverse_dynamics.ExternalLoad` and
:func:`~arthron.multibody.inverse_dynamics.body_wrenches_from_loads`, importable from here too);
this module keeps OpenSim's preprocessing and :func:`run_inverse_dynamics`.

Preprocessing reproduces the tool: coordinates in degrees are converted for rotational
coordinates, optionally low-pass filtered (pad, resample, IIR; :mod:`arthron.solvers.filtering`),
then splined with OpenSim's quintic GCV spline and differentiated. External loads are splined
with a cubic GCV spline (PiecewiseLinearFunction for 2-3 rows, Constant for 1), as OpenSim's
ExternalForce does, and evaluated at the solve times.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..tables import Table, input_files

from ..errors import ArthronWarning, ModelFileError, attach_source
from ..multibody.forces import applied_generalized_forces
from ..models.functions import Constant, GCVSpline, PiecewiseLinearFunction
from ..multibody.inverse_dynamics import ExternalLoad, body_wrenches_from_loads, inverse_dynamics
from ..multibody.loads import slice_loads
from ..multibody.kinematics import Tree, compile_model, mobility_forces, qdot_from_speeds
from ..models.model import Model
from ..models.motion import coordinates_from_table
from .filtering import check_time_range, lowpass_cutoff, prepare_coordinates

__all__ = ["ExternalLoad", "body_wrenches_from_loads", "InverseDynamicsResult", "inverse_dynamics", "run_inverse_dynamics",
           "external_loads_from_setup", "coordinates_from_table"]


@dataclass
class InverseDynamicsResult:
    """Generalized forces.

    time : (T,) s; labels : OpenSim's ``<coordinate>_moment`` / ``_force``;
    coordinates : coordinate names in the same column order; generalized_forces : (T, nq) in
    N·m (rotational) or N (translational).
    """

    time: np.ndarray
    coordinates: list
    labels: list
    generalized_forces: np.ndarray
    q: np.ndarray | None = field(default=None, repr=False)
    qd: np.ndarray | None = field(default=None, repr=False)
    qdd: np.ndarray | None = field(default=None, repr=False)
    inputs: tuple = field(default=(), repr=False, compare=False)    # files read: write_sto refuses them

    def to_table(self):
        return Table(name="Inverse Dynamics Generalized Forces", time=self.time.copy(),
                     labels=list(self.labels), data=self.generalized_forces.copy(), in_degrees=False,
                     inputs=self.inputs)

    def column(self, label):
        return self.generalized_forces[:, self.labels.index(label)]


def _time_function(t, y):
    """OpenSim ExternalForce's interpolant of a data column."""
    n = len(t)
    if n == 1:
        return Constant(float(y[0]))
    if n < 4:
        return PiecewiseLinearFunction(t, y)
    return GCVSpline(3, t, y)


def external_loads_from_setup(model: Model, ext, table, times) -> list:
    """Sample the ExternalForces of an ExternalLoads object at ``times``.

    Parameters
    ----------
    ext : arthron.io.setup.ExternalLoads
    table : arthron.io.sto.Table, the loads data file
    times : (T,) solve times

    Raises
    ------
    ModelFileError if a force is applied to (or expressed in) a body the model lacks.
    """
    loads = []
    res = ext.resolve(table)
    for name, r in res.items():
        for b in (r.applied_to_body, r.force_expressed_in_body, r.point_expressed_in_body):
            if b and b != "ground" and b not in model.bodies:
                raise ModelFileError(f"ExternalForce '{name}' names body '{b}', which model "
                                     f"'{model.name}' lacks", getattr(ext, "path", None))
        t = np.asarray(r.time, float)

        def sample(arr):
            if arr is None:
                return None
            with attach_source(getattr(table, "source", None) or getattr(ext, "path", None)):
                return np.stack([_time_function(t, arr[:, k]).value(times) for k in range(3)], -1)

        loads.append(ExternalLoad(body=r.applied_to_body, force=sample(r.force), point=sample(r.point),
                                  torque=sample(r.torque), force_frame=r.force_expressed_in_body or "ground",
                                  point_frame=r.point_expressed_in_body or "ground", name=name))
    return loads


#: frames solved at once by the tools' solvers (inverse dynamics, joint reactions): bounds the
#: peak memory of long trials (issue 11 finding 14) without changing any number
FRAME_CHUNK = 5000


def frame_chunks(T: int, size: int | None = None) -> list:
    """Slices covering ``range(T)`` in chunks of ``size`` frames (default :data:`FRAME_CHUNK`)."""
    n = int(size or FRAME_CHUNK)
    return [slice(a, min(T, a + n)) for a in range(0, T, n)] or [slice(0, 0)]


def _labels(model: Model, names):
    coords = model.coordinates
    return [f"{n}_moment" if coords[n].motion_type == "rotational" else f"{n}_force" for n in names]


def run_inverse_dynamics(model: Model, motion, *, external_loads=None, loads_table=None,
                         lowpass_hz=None, time_range=None, in_degrees=None,
                         forces_to_exclude=("Muscles",), tree: Tree | None = None) -> InverseDynamicsResult:
    """OpenSim InverseDynamicsTool, end to end.

    Parameters
    ----------
    model : Model
    motion : arthron.io.sto.Table of coordinates (``.mot`` from IK; degrees honoured)
    external_loads : arthron.io.setup.ExternalLoads or None
    loads_table : Table of the loads data (default: the ExternalLoads ``datafile``)
    lowpass_hz : cut-off for the coordinates, Hz (None or ≤ 0: no filter)
    time_range : (t0, t1) s or None (the motion's first to last time)
    in_degrees : bool or None: whether the rotational columns are degrees (None: the table's
        ``in_degrees``, radians when that is None too; values that look like degrees read as
        radians are warned about)
    forces_to_exclude : OpenSim's property (``All``, ``Actuators``, ``Muscles`` in any case, ForceSet
        group or force names; class names too: :func:`arthron.multibody.force_exclusion.forces_to_exclude`).
        The passive elements that remain (springs, coordinate limit forces, ligaments) are
        applied as OpenSim applies them (:mod:`arthron.multibody.forces`); muscles not
        excluded pull with their forces at their default states, as in OpenSim's tool
        (:mod:`arthron.solvers.muscle_states`); elements that need states arthron does not
        have (other muscle classes, plugin classes) are left out with a warning.

    Returns
    -------
    InverseDynamicsResult with columns in OpenSim's order (Simbody mobility order).

    Raises
    ------
    OptionError for a bad ``time_range``/``lowpass_hz``, a ``model`` that is not a Model or a
    ``motion`` that is not a Table; DataFileError for a motion that does not match the model
    (missing coordinates, NaN, no rows, times not increasing); ModelFileError for a model
    arthron cannot compile (negative mass ...).
    """
    time_range, lp = check_time_range(time_range, strict=False), lowpass_cutoff(lowpass_hz)
    tree = tree or compile_model(model)
    vals = coordinates_from_table(model, motion, in_degrees=in_degrees)
    if time_range is None:  # the tool's default: the whole file (not the filter's padding)
        time_range = (float(motion.time[0]), float(motion.time[-1]))
    with attach_source(getattr(motion, "source", None)):
        t_out, q, qd, qdd = prepare_coordinates(np.asarray(motion.time, float), vals, lp, time_range,
                                                source=getattr(motion, "source", None))
    if tree.angular_velocity_groups:
        # OpenSim sets each coordinate's speed u to the spline derivative; for Ellipsoid-type
        # mobilizers u is an angular velocity, not the Euler-angle rate.
        qd, qdd = qdot_from_speeds(tree, q, qd, qdd)
    loads = []
    if external_loads is not None:
        if loads_table is None:
            loads_table = external_loads.load_table()
        loads = external_loads_from_setup(model, external_loads, loads_table, t_out)
    # muscles not excluded pull with their forces at their default states, as in OpenSim's tool
    from ..multibody.forces import active_forces
    from ..multibody.force_exclusion import forces_to_exclude as excluded
    from .muscle_states import default_state_muscles
    _, unmatched, differs = excluded(model, forces_to_exclude)
    if unmatched:           # a typo would otherwise leave the muscles pulling without a word
        warnings.warn(f"model '{model.name}': forces_to_exclude names {', '.join(map(repr, unmatched))}, which "
                      "match no force, ForceSet group or force class of the model (nor All, Actuators, "
                      "Muscles): they exclude nothing", ArthronWarning)
    if differs:
        why = ("OpenSim 4.6 looks names up among the model's ForceSet groups only when it has groups, "
               "and does not read class names")
        warnings.warn(f"model '{model.name}': forces_to_exclude {', '.join(map(repr, differs))} excluded "
                      f"here but not by OpenSim 4.6's InverseDynamicsTool ({why}): results differ from "
                      "OpenSim's on this setup", ArthronWarning)
    muscles = default_state_muscles(model, tree, names={f.name for f in active_forces(model, forces_to_exclude)
                                                        if f.is_muscle})
    pulled = {m.name for m in muscles.muscles}
    # frames in chunks: peak memory bounded whatever the trial's length, same numbers
    tau = np.empty_like(q)
    not_applied = []
    for s in frame_chunks(len(t_out)):
        applied, not_applied = applied_generalized_forces(model, tree, q[s], qd[s], forces_to_exclude)
        not_applied = [(t_, n) for t_, n in not_applied if n not in pulled]
        if pulled:
            applied = applied + muscles.generalized_forces(tree, q[s], qd[s])
        tau[s] = mobility_forces(tree, q[s], inverse_dynamics(tree, q[s], qd[s], qdd[s],
                                                              slice_loads(loads, s), applied=applied))
    if not_applied:
        warnings.warn(
            f"model '{model.name}': force elements OpenSim would apply but arthron's inverse "
            "dynamics cannot evaluate without states are left out: "
            + ", ".join(f"{t} {n}" for t, n in not_applied[:8]) + (" ..." if len(not_applied) > 8 else ""),
            ArthronWarning)
    order = tree.multibody_order
    names = [tree.coordinate_names[i] for i in order]
    return InverseDynamicsResult(time=t_out, coordinates=names, labels=_labels(model, names),
                                 generalized_forces=tau[:, order], q=q, qd=qd, qdd=qdd,
                                 inputs=input_files(model, motion, loads_table))
