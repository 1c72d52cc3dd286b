"""Actuator and path-actuator forces from a forces table (StaticOptimization's ``_force.sto``),
as mobility forces and body loads for inverse dynamics and joint reactions."""
from __future__ import annotations

import re
import warnings

import numpy as np

from ..errors import ArthronWarning, DataFileError, SolverError, UnsupportedFeature
from ..models.model import Model
from ..multibody.forces import activation_coordinate_force
from ..multibody.kinematics import Tree
from .inverse_dynamics import ExternalLoad


# ----------------------------------------------------------------------------- actuator forces
ACTUATOR_TYPES = ("CoordinateActuator", "ActivationCoordinateActuator", "PointActuator", "TorqueActuator",
                  "PathActuator")


def activation_actuator_forces(model: Model, tree: Tree, T: int, states=None):
    """(T, nq) generalized forces of the model's ActivationCoordinateActuators that apply force
    (:func:`arthron.multibody.forces.activation_coordinate_force`: activation × optimal force,
    the activation a states file's, ``states`` {name: {"activation": (T,)}}, or the default),
    or None when it has none: what OpenSim's AnalyzeTool applies of them (every other
    actuator's control is 0 there)."""
    acas = [f for f in model.forces.values() if f.type == "ActivationCoordinateActuator" and f.applies_force]
    if not acas:
        return None
    tau = np.zeros((T, tree.nq))
    for f in acas:
        tau[:, tree.coordinate_index(f.coordinate)] += activation_coordinate_force(f, states, T)
    return tau


def storage_values(times, t_src, y):
    """Values of one column ``y`` (N,) of a file sampled at ``t_src`` (N,), increasing, at
    ``times`` (T,), as OpenSim 4.6's ``Storage::getDataAtTime`` gives them: linear
    interpolation between the rows around each time, and *linear extrapolation* from the
    first two (last two) rows before the first (after the last) time; one row: its values.
    Returns (T,)."""
    times = np.asarray(times, float)
    t_src, y = np.asarray(t_src, float), np.asarray(y, float)
    if t_src.size < 2:
        return np.full(times.shape, y[0] if y.size else np.nan)
    val = np.interp(times, t_src, y)
    for lo, (i, j) in (((times < t_src[0]), (0, 1)), ((times > t_src[-1]), (-2, -1))):
        if lo.any() and t_src[j] != t_src[i]:
            slope = (y[j] - y[i]) / (t_src[j] - t_src[i])
            val[lo] = y[i] + (times[lo] - t_src[i]) * slope
    return val


def actuator_forces(model: Model, tree: Tree, forces_table, times, q=None, kin=None, path=None):
    """Mobility forces and body loads of the actuators in a forces file (e.g. SO's ``_force.sto``).

    Each column is an actuator's *force* (OpenSim's ``overrideActuation`` value, as written by
    StaticOptimization): for a CoordinateActuator it is the generalized force itself
    (N·m or N, not scaled by ``optimal_force``), on Simbody's mobility: for the rotations of
    Ellipsoid, Scapulothoracic, Ball and Free joints (``tree.angular_velocity_groups``) that is
    the moment about F's axes, conjugate to u = ω_FM, returned as ``τ_q = A(q)ᵀ τ_u``; a
    PointActuator applies ``value × direction``
    at its point, a TorqueActuator ``value × axis`` on bodyA and the opposite on bodyB; muscles
    and PathActuators pull along their paths (needs :mod:`arthron.multibody.paths`). Values are
    linearly interpolated at ``times`` and, outside the file's times, linearly extrapolated
    from its first or last two rows with an ArthronWarning (:func:`storage_values`, OpenSim's
    ``Storage::getDataAtTime``, which JointReaction uses; they were held constant before).

    Returns
    -------
    generalized : (T, nq) mobility forces conjugate to q̇, model order (CoordinateActuators;
        moving path points);
    loads : list of ExternalLoad (body forces; path forces as one force + moment per body).

    ``q`` (T, nq) is needed when the file holds path forces (geometry of the paths at each frame).

    Columns that name no actuator of the model are ignored with one warning naming them, as
    OpenSim's JointReaction does (``JointReaction::loadForcesFromFile`` looks up each actuator's
    column by name): StaticOptimization's ``_force.sto`` also holds the external forces
    (``<body>_<force>_Fx``, ``_px``, ``_Tx`` ...) and the residual/reserve actuators of the
    setup's ``force_set_files``, which a JointReaction setup without those actuators ignores.

    Raises
    ------
    DataFileError when an actuator of the model has no column (OpenSim would then silently
    ignore the whole file).
    UnsupportedFeature for muscle/path forces when path geometry is not available.
    """
    src = path or getattr(forces_table, "source", None)
    times = np.asarray(times, float)
    T = times.size
    acts = {n: f for n, f in model.forces.items()
            if f.type in ACTUATOR_TYPES or f.is_muscle}
    labels = list(forces_table.labels)
    unknown = [l for l in labels if l not in acts]
    if unknown:
        warnings.warn(_ignored_columns_message(unknown, model, src), ArthronWarning, stacklevel=3)
    missing = [n for n in acts if n not in labels]
    if missing:
        raise DataFileError(f"forces file has no column for actuator(s) {', '.join(missing[:10])} of model "
                            f"'{model.name}' (OpenSim would then ignore the whole file)", src,
                            "column labels")
    t_src = np.asarray(forces_table.time, float)
    data = np.asarray(forces_table.data, float)
    if t_src.size > 1 and T and acts:        # (no actuator of the model in the file: nothing extrapolated)
        # outside by rounding (OpenSim's files print 6 significant digits: 0.999999 for 1)
        # is not worth a warning: a thousandth of the file's time step
        tol = max(1e-9 * max(1.0, float(np.abs(t_src).max())), 1e-3 * float(np.median(np.diff(t_src))))
        out = times[(times < t_src[0] - tol) | (times > t_src[-1] + tol)]
        if out.size:
            warnings.warn(f"{src}: the forces cover {t_src[0]:g}–{t_src[-1]:g} s; at {out.size} frame(s) "
                          f"outside ({out.min():g}–{out.max():g} s) they are extrapolated linearly from "
                          "the file's first or last two rows, as OpenSim's Storage::getDataAtTime does",
                          ArthronWarning, stacklevel=3)
    gen = np.zeros((T, tree.nq))
    gen_u = np.zeros((T, tree.nq))      # CoordinateActuators: forces on Simbody's mobilities
    loads = []
    path_forces = []
    for k, lab in enumerate(labels):
        if lab not in acts:
            continue
        val = storage_values(times, t_src, data[:, k])
        f = acts[lab]
        if not f.applies_force:
            continue                  # disabled: applies nothing, as in OpenSim
        if f.type in ("PointActuator", "TorqueActuator", "CoordinateActuator",
                      "ActivationCoordinateActuator") and not f.modelled:
            raise UnsupportedFeature(f"{f.type} '{lab}' is not a typed force (build it with "
                                     "arthron.models.forces or read it with arthron.io.osim)", src)
        if f.type in ("CoordinateActuator", "ActivationCoordinateActuator"):
            gen_u[:, tree.coordinate_index(f.coordinate)] += val
        elif f.type == "PointActuator":
            body = (f.body or "").rsplit("/", 1)[-1]
            point = np.asarray(f.point, float)
            d = np.asarray(f.direction, float)
            d = d / np.linalg.norm(d)
            pg, fg = bool(f.point_is_global), bool(f.force_is_global)
            loads.append(ExternalLoad(body=body, force=val[:, None] * d, point=np.broadcast_to(point, (T, 3)),
                                      force_frame="ground" if fg else body,
                                      point_frame="ground" if pg else body, name=lab))
        elif f.type == "TorqueActuator":
            a = np.asarray(f.axis, float)
            a = a / np.linalg.norm(a)
            ba, bb = (f.bodyA or "").rsplit("/", 1)[-1], (f.bodyB or "").rsplit("/", 1)[-1]
            tg = bool(f.torque_is_global)
            frame = "ground" if tg else ba
            if ba:
                loads.append(ExternalLoad(body=ba, torque=val[:, None] * a, force_frame=frame, name=lab))
            if bb:
                loads.append(ExternalLoad(body=bb, torque=-val[:, None] * a, force_frame=frame, name=lab))
        elif np.any(val):
            path_forces.append((lab, f, val))
    if path_forces:
        try:
            from ..multibody import paths as _paths  # another developer's module (path geometry)
        except ImportError:
            names = ", ".join(n for n, _, _ in path_forces[:6])
            raise UnsupportedFeature(
                f"forces along muscle/actuator paths ({names}{' ...' if len(path_forces) > 6 else ''}) need "
                "arthron.multibody.paths, which is not available; pass the path forces as body loads "
                "(ExternalLoad list) to joint_loads instead", src) from None
        if q is None:
            raise SolverError("path forces need the coordinates q of the frames")
        ps = _paths.compile_paths(model, tree, forces=[n for n, _, _ in path_forces])
        ten = np.column_stack([v for _, _, v in path_forces])
        p_loads, p_gen = path_loads(ps, tree, q, ten, kin=kin)
        loads += p_loads
        gen += p_gen                # moving path points: mobility forces on their coordinates
    groups = [g for g in tree.angular_velocity_groups if gen_u[:, g].any()]
    if groups:
        # CoordinateActuators act on Simbody's mobilities: for Ellipsoid/Ball/Free rotations
        # the force is conjugate to u = ω_FM (moments about F's axes); τ_q = Aᵀ τ_u.
        if q is None:
            raise SolverError("CoordinateActuators on angular-velocity mobilities need the coordinates q")
        from ..multibody.kinematics import _euler_xyz_rate_matrix
        qq = np.atleast_2d(q)
        for g in groups:
            A = _euler_xyz_rate_matrix(qq[:, g[0]], qq[:, g[1]])
            gen_u[:, g] = np.einsum("tji,tj->ti", A, gen_u[:, g])
    return gen + gen_u, loads


_EXTERNAL_FORCE_COLUMN = re.compile(r"_(F|p|T)[xyz]$")


def _ignored_columns_message(unknown, model, src) -> str:
    """One warning line naming the ignored columns, external-force columns grouped by force."""
    ext = sorted({l[:-3] for l in unknown if _EXTERNAL_FORCE_COLUMN.search(l)})
    other = [l for l in unknown if not _EXTERNAL_FORCE_COLUMN.search(l)]
    parts = []
    if ext:
        parts.append("external force(s) " + ", ".join(f"{e}_*" for e in ext))
    if other:
        forces = [l for l in other if l in model.forces]
        rest = [l for l in other if l not in model.forces]
        if rest:
            parts.append(", ".join(rest[:20]) + (" ..." if len(rest) > 20 else "")
                         + " (no such actuator)")
        if forces:
            parts.append(", ".join(forces) + " (force elements, not actuators)")
    where = f"{src}: " if src is not None else ""
    return (f"{where}forces file columns that name no actuator of model '{model.name}' are "
            f"ignored, as OpenSim does: {'; '.join(parts)}")


def path_loads(pathset, tree: Tree, q, tensions, kin=None, states=None):
    """Path tensions (T, n) as body loads: one force at each body origin plus the moment about
    it (:func:`arthron.multibody.paths.path_body_forces`), and the mobility forces of moving path
    points (T, nq). ``kin``, ``states``: the poses and the paths already built at ``q``
    (:func:`arthron.multibody.paths.path_external_loads`)."""
    from ..multibody.paths import path_external_loads
    return path_external_loads(pathset, tree, q, tensions, kin=kin, states=states)
