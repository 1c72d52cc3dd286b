"""OpenSim's MarkerPlacer: a static pose by inverse kinematics, then the model's markers moved
onto the observed ones.

The static-trial observations are averaged over the time range, the pose is solved to the
optimum (step tolerance 1e-12) with the IK tasks, and every non-``fixed`` marker with data is
moved to the averaged observation expressed in its parent frame at that pose.

Source: OpenSim 4.6 ``MarkerPlacer::processModel`` (including its quirk: the IK observations are
``TimeSeriesTable::averageRow`` over the rows inside the range, while markers move to the
``MarkerData`` average over the bracketing frame range, which can include one more frame).
"""
from __future__ import annotations

import copy
import math
import warnings

import numpy as np

from ..errors import ArthronWarning, DataFileError
from ..models.model import GROUND, Model
from ..multibody.kinematics import forward_kinematics
from .inverse_kinematics import InverseKinematics, check_ik_options
from .scaling import average_static

__all__ = ["place_markers"]


def _placement_copy(model: Model, new_joints: bool) -> Model:
    """A shallow copy of ``model`` with its own markers (and joints when ``new_joints``):
    what :func:`place_markers` changes."""
    out = copy.copy(model)
    out.markers = {n: copy.deepcopy(mk) for n, mk in model.markers.items()}
    if new_joints:
        out.joints = copy.deepcopy(model.joints)
    return out


def place_markers(model: Model, static_trial, tasks=None, time_range=None, *,
                  coordinate_values: dict | None = None, max_marker_movement=-1.0,
                  share: bool = False):
    """OpenSim's MarkerPlacer on a copy of ``model``.

    Parameters
    ----------
    static_trial : MarkerTrial (metres)
    tasks : IKTasks (marker weights, coordinate tasks)
    time_range : (t0, t1) s averaged (default: the first frame)
    coordinate_values : optional dict coordinate -> value (rad/m) used as start pose and for
        ``from_file`` tasks
    max_marker_movement : m; a marker moving more than this over the averaged frames draws an
        ArthronWarning (not positive: no check; see :func:`arthron.solvers.scaling.average_static`)
    share : if True the placed model is a new Model that shares the components placement
        leaves unchanged (bodies, frames, forces, ...) with ``model`` and has its own markers
        (and joints, when ``coordinate_values`` set default values): 3 ms less than the deep
        copy on Gait2354, for callers such as the ScaleTool whose ``model`` was made for this
        run; default a deep copy

    Returns
    -------
    (placed model, q (nq,) static pose, per-marker errors dict name -> m before moving)

    Raises
    ------
    OptionError for bad task weights or time range (:func:`~arthron.solvers.inverse_kinematics.check_ik_options`).
    DataFileError when no frame of the trial lies in the time range.
    """
    check_ik_options(tasks=tasks, time_range=time_range)
    if time_range is None:
        time_range = (static_trial.time[0], static_trial.time[0])
    times = np.asarray(static_trial.time, float)
    t0 = max(float(time_range[0]), times[0])
    t1 = min(float(time_range[1]), times[-1])
    # 4.6 quirk: the IK observations are TimeSeriesTable::averageRow over the rows with
    # t0 <= t <= t1, while the markers are moved to the MarkerData average over the
    # bracketing frame range (findFrameRange), which can include one more frame.
    sel = (times >= t0) & (times <= t1)
    if not np.any(sel):
        raise DataFileError(f"no frame of the static trial in {t0:g}–{t1:g} s",
                            getattr(static_trial, "source", None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ik_obs = np.nanmean(np.asarray(static_trial.positions, float)[sel], axis=0)
    avg = average_static(static_trial, (t0, t1), max_marker_movement)
    out = _placement_copy(model, bool(coordinate_values)) if share else model.copy()
    labels = list(static_trial.labels)
    for n in list(out.markers):
        if n not in labels:
            del out.markers[n]
    if coordinate_values:
        for n, v in coordinate_values.items():
            if n in out.coordinates:
                out.coordinates[n].default_value = float(v)
    ik = InverseKinematics(out, tasks, math.inf, labels)
    obs = np.array([ik_obs[labels.index(n)] for n in ik.marker_names], float).reshape(-1, 3)
    base = ik.tree.default_q.copy()
    qref = ik.coordinate_targets(float(time_range[0]), ik.tree.default_q)
    x, q, _, err = ik.solve_frame(obs, base[ik.free], base, qref, tol=1e-12)
    X, Q = np.array(x, float)[None, :], np.array(q, float)[None, :]
    ik.nearest_turn(0, X, Q, base[ik.free])      # the static pose on the default pose's turn
    q = Q[0]
    errors = dict(zip(ik.marker_names, map(float, err)))
    # move non-fixed markers with data
    kin = forward_kinematics(ik.tree, q[None])
    for n, mk in out.markers.items():
        if mk.fixed:
            continue
        p = avg[labels.index(n)]
        if not np.all(np.isfinite(p)):
            warnings.warn(f"marker {n} has no valid data in the static trial; it is not moved",
                          ArthronWarning, stacklevel=2)
            continue
        base_path, X = out.frame_in_base(mk.parent_frame)
        if base_path == GROUND:
            Rb, ob = np.eye(3), np.zeros(3)
        else:
            bi = ik.tree.body_index(base_path)
            node = ik.tree.body_node[bi]
            Rb, ob = kin.R[0, node], kin.o[0, node]
        p_base = Rb.T @ (p - ob)
        mk.location = X.R.T @ (p_base - X.p)
    return out, q, errors
