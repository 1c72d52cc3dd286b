"""Inverse kinematics: joint coordinates from marker trajectories, like OpenSim's IK tool.

For every frame, the coordinates ``q`` minimise (OpenSim's ``InverseKinematicsSolver`` objective,
i.e. Simbody's Assembler with a ``Markers`` goal and one ``QValue`` goal per coordinate task)

    Σ_markers w_i ‖x_i(q) − x_i^obs‖² / Σ_markers w_i  +  Σ_coordinate-tasks w_j (q_j − q_j^ref)²

(the marker weights are normalised by their sum over the markers present in the frame, which
matters as soon as there are coordinate tasks)
over the unlocked coordinates, inside the ``range`` of clamped coordinates. Markers whose
observation is NaN in a frame are left out of that frame. Locked coordinates stay at their
default value.

Model constraints (CoordinateCouplerConstraint; Point and ConstantDistance constraints through
:mod:`arthron.multibody.constraints`; Weld is refused, it has no residuals there yet) are held
exactly by default, whatever ``constraint_weight`` says: that is what OpenSim 4.6's
InverseKinematicsTool does (measured: with weights 20, 5, 0.5 and 0.001 — set through the API or
a setup file — its results satisfy a PointConstraint (Thoracoscapular AC), a ConstantDistance
and a CoordinateCoupler constraint on arm26 to 1e-11, and equal its weight-inf results; arthron's
exact results are 3e-4°, 1.2e-4° and 5e-5° from them). Couplers eliminate their dependent
coordinate; for Point/ConstantDistance every step solves the linearised problem with the
constraint Jacobian as equality (KKT system) and is projected back onto the constraint manifold
(residuals below 1e-12). With ``penalty=True`` a finite weight ``w`` is what Simbody's
Assembler documents: a goal ``w |perr|²/2`` beside the marker goal, i.e. residuals ``√w perr(q)``
with Simbody's position errors (coupler ``q_d − s f(q_i)``; PointConstraint the 3 coordinates
of the point gap; ConstantDistance/Rod ``(|p|² − d²)/2``).

The solver is a bounded Levenberg–Marquardt (Gauss–Newton with a damping that vanishes near
the optimum, projected active-set bounds) with analytic Jacobians: for a marker on body b, the
column of coordinate c is ``Σ v_j + ω_j × (x − o_j)`` over the hinges j of c that lie between
ground and b (the same partial velocities as :func:`arthron.multibody.kinematics.velocity_map`).
It iterates to the optimum (step below ``1e-6``), so it matches OpenSim's optimum rather than
its accuracy-limited iterate. Frames solved in blocks take Newton steps near the optimum (the
second derivatives of the marker positions from the same hinge columns,
:meth:`~arthron.multibody.point_kinematics.StationKinematics.second_order`): quadratic instead of
linear convergence, about 4.6 instead of 8 iterations per frame on the Gait2354 walk. The marker positions and Jacobians come from the compiled tree
(:class:`arthron.multibody.point_kinematics.StationKinematics`); the iterations live in
:mod:`arthron.solvers.ik_levenberg_marquardt`. Writing the results to files is the tool layer's
(:mod:`arthron.tools.ik_tool`). Frame k starts from the solution of frame k−1; the first frame
from the model's default pose.

Source: the objective, the task and weight semantics, the frame selection (rows of the marker
file nearest to the start and final time) and the marker-error report follow OpenSim 4.6's
``InverseKinematicsTool`` / ``InverseKinematicsSolver`` / ``MarkersReference``.
"""
from __future__ import annotations

import math
import numbers
import time as _time
import warnings
from dataclasses import field
from types import SimpleNamespace

import numpy as np

from ..runtime import dataclass  # dataclasses.dataclass with shared __repr__/__eq__
from ..errors import (ArthronWarning, DataFileError, OptionError, SolverError, UnsupportedFeature,
                      attach_source)
from ..models.functions import GCVSpline
from ..models.model import Model, require_model
from ..multibody.constraints import compile_constraints
from ..multibody.kinematics import Tree, compile_model, marker_positions, warn_degrees
from ..multibody.point_kinematics import StationKinematics, compiled_available
from .. import runtime
from ..tables import Table, check_marker_trial, input_files
from .ik_levenberg_marquardt import LevenbergMarquardtIK, _interpolated_starts

__all__ = ["IKTasks", "CoordinateTask", "IKResult", "InverseKinematics", "solve_ik",
           "check_ik_options", "coordinate_reference"]


# ----------------------------------------------------------------------------------- tasks
@dataclass
class CoordinateTask:
    """An IKCoordinateTask: track a coordinate value with a weight.

    ``value_type``: ``"default_value"`` (the coordinate's default), ``"manual_value"``
    (``value``, radians or metres) or ``"from_file"`` (``values``: a callable time -> value).
    """

    weight: float
    value_type: str = "default_value"
    value: float = 0.0
    values: object = None


@dataclass
class IKTasks:
    """Marker weights (name -> weight) and coordinate tasks (name -> :class:`CoordinateTask`).

    ``marker_weights=None`` means every model marker found in the trial with weight 1 (as
    OpenSim's ``MarkersReference`` does with an empty weight set).
    """

    marker_weights: dict | None = None
    coordinate_tasks: dict = field(default_factory=dict)


def coordinate_reference(t, y):
    """The coordinate reference OpenSim's IK builds from a coordinate file: a
    ``GCVSplineSet(5, coordinates)`` (quintic natural interpolating GCV spline per column,
    :class:`arthron.models.functions.GCVSpline`); with fewer than 6 rows (too few for a quintic)
    the lower odd degree that fits, and linear interpolation below 2 rows.

    Parameters
    ----------
    t : (n,) s; y : (n,) rad or m

    Returns
    -------
    callable time (s) -> value
    """
    t = np.asarray(t, float)
    y = np.asarray(y, float)
    for deg in (5, 3, 1):
        if len(t) >= deg + 1:
            sp = GCVSpline(deg, t, y)
            return lambda x, sp=sp: float(np.asarray(sp.value(np.atleast_1d(float(x))))[0])
    return lambda x: float(y[0])


# ---------------------------------------------------------------------------------- result
@dataclass
class IKResult:
    """Result of inverse kinematics.

    Attributes
    ----------
    time : (T,) s, the marker file's time column for the frames solved
    coordinate_names : list[str], model (CoordinateSet) order
    q : (T, nq) radians / metres
    rotational : (nq,) bool, coordinates written in degrees
    marker_names : list[str] markers in the solve (model ∩ trial ∩ tasks)
    marker_errors : (T, nm) m, distance model–experiment per marker (NaN when missing)
    total_squared_error, rms, max : (T,) m², m, m over the markers present in each frame
    iterations : (T,) int
    solve_time : float, seconds spent in the per-frame solves
    marker_locations : (T, nm, 3) m, model marker positions in ground at the solution

    The tables (:meth:`motion_table`, :meth:`errors_table`, :meth:`locations_table`) are what
    OpenSim's IK tool writes; :mod:`arthron.tools.ik_tool` writes them to files.
    """

    time: np.ndarray
    coordinate_names: list
    q: np.ndarray
    rotational: np.ndarray
    marker_names: list
    marker_errors: np.ndarray
    total_squared_error: np.ndarray
    rms: np.ndarray
    max: np.ndarray
    iterations: np.ndarray
    solve_time: float = 0.0
    model_name: str = ""
    marker_locations: np.ndarray | None = None
    inputs: tuple = field(default=(), repr=False, compare=False)    # files read: write_sto refuses them

    def degrees(self) -> np.ndarray:
        """q with rotational coordinates in degrees, (T, nq)."""
        out = np.array(self.q, copy=True)
        out[:, self.rotational] = np.rad2deg(out[:, self.rotational])
        return out

    def motion_table(self) -> Table:
        """The ``.mot`` OpenSim's IK tool writes: coordinates in model order, rotations in
        degrees (``inDegrees=yes``)."""
        return Table(
            name="Coordinates", time=np.asarray(self.time, float), labels=list(self.coordinate_names),
            data=self.degrees(), in_degrees=True, inputs=self.inputs,
            comments=["Units are S.I. units (second, meters, Newtons, ...)",
                      "If the header above contains a line with 'inDegrees', this indicates whether "
                      "rotational values are in degrees (yes) or radians (no)."])

    def errors_table(self) -> Table:
        """OpenSim's ``<name>_ik_marker_errors.sto``: total squared error, RMS and max (m)."""
        return Table(name="Model Marker Errors from IK", time=np.asarray(self.time, float),
                     labels=["total_squared_error", "marker_error_RMS", "marker_error_max"],
                     data=np.column_stack([self.total_squared_error, self.rms, self.max]), in_degrees=False)

    def locations_table(self) -> Table:
        """Model marker locations in ground, OpenSim's ``Model Marker Locations from IK`` table
        (columns ``<marker>_tx``, ``_ty``, ``_tz``)."""
        if self.marker_locations is None:
            raise SolverError("IKResult has no marker locations")
        T = len(self.time)
        return Table(name="Model Marker Locations from IK", time=np.asarray(self.time, float),
                     labels=[f"{n}_t{a}" for n in self.marker_names for a in "xyz"],
                     data=np.asarray(self.marker_locations, float).reshape(T, -1), in_degrees=False)

    def to_table(self) -> Table:
        """The motion table (:meth:`motion_table`)."""
        return self.motion_table()


# ---------------------------------------------------------------------------------- options
_VALUE_TYPES = ("default_value", "manual_value", "from_file")


def _number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _checked(*, tasks=None, time_range=None, constraint_weight=math.inf, block=None, q0=None,
             nq=None, accuracy=None, penalty=False):
    """:func:`check_ik_options`, returning the normalized values
    ``(time_range, constraint_weight, block, q0)``."""
    if tasks is not None:
        if not isinstance(tasks, IKTasks):
            raise OptionError(f"tasks must be IKTasks, not {type(tasks).__name__}")
        for n, w in (tasks.marker_weights or {}).items():
            if not _number(w) or not math.isfinite(w) or w < 0:
                raise OptionError(f"marker task '{n}': weight must be a finite number >= 0, "
                                  f"got {w!r}")
        for n, t in tasks.coordinate_tasks.items():
            if not isinstance(t, CoordinateTask):
                raise OptionError(f"coordinate task '{n}' must be a CoordinateTask, "
                                  f"not {type(t).__name__}")
            if not _number(t.weight) or not math.isfinite(t.weight) or t.weight < 0:
                raise OptionError(f"coordinate task '{n}': weight must be a finite number >= 0, "
                                  f"got {t.weight!r}")
            if t.value_type not in _VALUE_TYPES:
                raise OptionError(f"coordinate task '{n}': value_type must be one of "
                                  f"{', '.join(_VALUE_TYPES)}, got {t.value_type!r}")
            if t.value_type == "manual_value" and (not _number(t.value)
                                                    or not math.isfinite(t.value)):
                raise OptionError(f"coordinate task '{n}': manual value must be a finite number, "
                                  f"got {t.value!r}")
            if t.value_type == "from_file" and not callable(t.values):
                raise OptionError(f"coordinate task '{n}': from_file needs ``values``, a callable "
                                  "time -> value")
    if time_range is not None:
        try:
            tr = tuple(float(v) for v in time_range)
        except (TypeError, ValueError):
            raise OptionError(f"time_range must be two numbers (s), got {time_range!r}") from None
        if len(tr) != 2 or any(math.isnan(v) for v in tr):
            raise OptionError(f"time_range must be two numbers (s), got {time_range!r}")
        if tr[1] < tr[0]:
            raise OptionError(f"time_range ends before it starts ({tr[0]:g} > {tr[1]:g} s)")
        time_range = tr
    if not _number(constraint_weight) or math.isnan(constraint_weight) or constraint_weight < 0:
        raise OptionError(f"constraint_weight must be a number >= 0 (inf = exact), "
                          f"got {constraint_weight!r}")
    if block is not None and (not isinstance(block, numbers.Integral) or isinstance(block, bool)
                              or block < 1):
        raise OptionError(f"block must be an integer >= 1, got {block!r}")
    if q0 is not None:
        q0 = np.asarray(q0, float)
        if nq is not None and q0.shape != (nq,):
            raise OptionError(f"q0 must have shape ({nq},), got {q0.shape}")
        if not np.all(np.isfinite(q0)):
            raise OptionError("q0 must be finite")
    if accuracy is not None and (not _number(accuracy) or not math.isfinite(accuracy)
                                 or accuracy <= 0):
        raise OptionError(f"accuracy must be a finite number > 0, got {accuracy!r}")
    if not isinstance(penalty, (bool, np.bool_)):
        raise OptionError(f"penalty must be True or False, got {penalty!r}")
    return time_range, float(constraint_weight), (None if block is None else int(block)), q0


def check_ik_options(*, tasks=None, time_range=None, constraint_weight=math.inf, block=None,
                     q0=None, nq=None, accuracy=None, penalty=False) -> None:
    """Check the option values of an IK solve, in one place, before any computation.

    Parameters
    ----------
    tasks : IKTasks or None: marker and coordinate task weights finite and >= 0, coordinate
        ``value_type`` one of ``default_value``, ``manual_value`` (finite ``value``),
        ``from_file`` (callable ``values``)
    time_range : None or (t0, t1) s with t0 <= t1 (±inf allowed: clipped to the data)
    constraint_weight : >= 0, ``inf`` = exact
    block : None (the default of :meth:`InverseKinematics.solve`) or int >= 1
    q0 : None or (nq,) finite
    accuracy : None or finite > 0 (OpenSim's setting; arthron iterates to the optimum)
    penalty : bool

    Raises
    ------
    OptionError (an :class:`arthron.errors.ArthronError` and a ``ValueError``) naming the option.
    """
    _checked(tasks=tasks, time_range=time_range, constraint_weight=constraint_weight,
             block=block, q0=q0, nq=nq, accuracy=accuracy, penalty=penalty)


# ---------------------------------------------------------------------------------- solver
class InverseKinematics(LevenbergMarquardtIK):
    """A compiled IK problem for one model and one set of tasks.

    Parameters
    ----------
    model : Model
    tasks : IKTasks, optional (all markers weight 1, no coordinate tasks)
    constraint_weight : float, ``inf`` = constraints enforced exactly; a finite weight is used
        only with ``penalty=True`` (otherwise constraints are exact, as OpenSim 4.6's IK tool
        holds them whatever the weight)
    penalty : bool, finite ``constraint_weight`` as a penalty (Simbody Assembler semantics)
    marker_names_available : list of str, the trial's marker labels (markers the trial lacks
        are not part of the problem)

    Raises
    ------
    OptionError for bad task weights, task values or constraint weight.
    UnsupportedFeature for model constraints other than CoordinateCoupler, Point,
    ConstantDistance, PointOnLine, PointOnEllipsoid and (held exactly, met at the default
    pose) Weld constraints.
    """

    def __init__(self, model: Model, tasks: IKTasks | None = None, constraint_weight=math.inf,
                 marker_names_available=None, *, tree: Tree | None = None, penalty: bool = False):
        check_ik_options(tasks=tasks, constraint_weight=constraint_weight, penalty=penalty)
        self.model = model
        self.tree = tree if tree is not None else compile_model(model)
        tasks = tasks or IKTasks()
        tr = self.tree
        avail = set(marker_names_available) if marker_names_available is not None else set(tr.markers)
        if tasks.marker_weights is None:
            names = [n for n in tr.markers if n in avail]
            weights = [1.0] * len(names)
        else:
            names, weights = [], []
            for n, w in tasks.marker_weights.items():
                if n in tr.markers and n in avail:
                    names.append(n)
                    weights.append(float(w))
        self.marker_names = names
        self.marker_weights = np.array(weights, float)
        self.chain = StationKinematics.for_markers(tr, names)
        self.chain.compiled = use_compiled()
        coords = list(model.coordinates.values())
        nq = tr.nq
        self.nq = nq
        self.locked = np.array([c.locked for c in coords], bool)
        lo = np.full(nq, -np.inf)
        hi = np.full(nq, np.inf)
        for i, c in enumerate(coords):
            if c.clamped:
                lo[i], hi[i] = float(c.range[0]), float(c.range[1])
        # coordinate tasks
        self.ctask_idx, self.ctask_w, self.ctask = [], [], []
        for n, t in tasks.coordinate_tasks.items():
            if t.weight == 0:
                continue
            self.ctask_idx.append(tr.coordinate_index(n))
            self.ctask_w.append(float(t.weight))
            self.ctask.append(t)
        self.ctask_idx = np.array(self.ctask_idx, int)
        self.ctask_sw = np.sqrt(np.array(self.ctask_w, float))
        # constraints
        self.couplers = []
        # OpenSim 4.6's IK tool holds model constraints exactly whatever its constraint_weight
        # (measured: see the module docstring); a penalty only when asked for
        self.requested_constraint_weight = float(constraint_weight)
        self.constraint_weight = float(constraint_weight) if penalty else math.inf
        for con in model.constraints:
            if not con.enabled:
                continue
            if con.type != "CoordinateCouplerConstraint":
                continue
            pr = con.properties
            ind = pr.get("independent_coordinates")
            ind = ind.split() if isinstance(ind, str) else list(ind)
            if len(ind) != 1:
                raise UnsupportedFeature(f"CoordinateCouplerConstraint '{con.name}' with "
                                         f"{len(ind)} independent coordinates", model.source)
            self.couplers.append((tr.coordinate_index(pr["dependent_coordinate"].strip()),
                                  tr.coordinate_index(ind[0].strip()), pr["function"],
                                  float(pr.get("scale_factor", 1.0))))
        # other constraint types: residuals and Jacobians from arthron.multibody.constraints; exact
        # (projected Gauss-Newton on the constraint manifold) or penalty residuals sqrt(w)·c(q)
        others = [c for c in model.constraints if c.enabled and c.type != "CoordinateCouplerConstraint"]
        self.cset = None
        if others:
            proxy = SimpleNamespace(constraints=others, frame_in_base=model.frame_in_base,
                                    source=model.source, name=model.name)
            self.cset = compile_constraints(proxy, tr)
            # a WeldConstraint (six rows) is held exactly from a default pose that meets it (GPK's
            # welded condyles); as a penalty its orientation error is not Simbody's. Simbody's
            # ConstantDistance (Rod) error (|p|² − d²)/2 is what a finite constraint weight penalises
            rows = np.cumsum([0] + [len(self.cset._ROWS[it[0]]) for it in self.cset.items])
            r0 = np.abs(self.cset.residuals(np.array([[c.default_value for c in coords]]))[0])
            for it, a, b in zip(self.cset.items, rows[:-1], rows[1:]):
                if it[0] not in ("point", "distance", "ellipsoid", "line") and not (
                        it[0] == "weld" and math.isinf(self.constraint_weight) and r0[a:b].max() < 1e-9):
                    raise UnsupportedFeature(
                        f"IK with a {it[0]} constraint ('{it[1]}') weighted {self.constraint_weight:g} "
                        "or not met at the default pose: only Point, ConstantDistance, PointOnLine, "
                        "PointOnEllipsoid and CoordinateCoupler constraints, and Weld held exactly "
                        "from a default pose that meets it", model.source)
            self._dist_rows = [(a, float(it[6])) for it, a in zip(self.cset.items, rows) if it[0] == "distance"]
        self.exact = self.cset is not None and math.isinf(self.constraint_weight)
        # PointConstraints only: their two points as stations (one cheap evaluation gives
        # residuals and Jacobian)
        self._cchain = None
        if self.cset is not None and all(it[0] == "point" for it in self.cset.items):
            bodies, locs = [], []
            for it in self.cset.items:
                bodies += [it[2], it[4]]
                locs += [np.asarray(it[3], float), np.asarray(it[5], float)]
            self._cchain = StationKinematics(tr, bodies, np.array(locs, float).reshape(-1, 3))
            self._cchain.compiled = self.chain.compiled
        dependent = {d for d, _, _, _ in self.couplers} if math.isinf(self.constraint_weight) else set()
        free = ~self.locked
        for d in dependent:
            free[d] = False
        self.free = np.flatnonzero(free)
        self.dependent = sorted(dependent)
        self.lo = lo[self.free]
        self.hi = hi[self.free]
        self._periodic = _whole_turn_coordinates(model, tr, self.couplers)[self.free]

    def nearest_turn(self, k, X, Q, ref):
        """Frame k's solution moved, in place, by whole turns of its 2π-periodic coordinates to
        the turn nearest ``ref`` (the start pose for the first frame, else the frame before), as
        OpenSim 4.6's IK finds it from there (a Levenberg–Marquardt step may cross a whole turn:
        the ankle of Leg6Dof9Musc came out at 327° for −33°). The pose is the same.

        ``X`` (K, n_free) free coordinates, ``Q`` (K, nq) all coordinates (rad, m), ``ref``
        (n_free,)."""
        if not self._periodic.any():
            return
        d = np.where(self._periodic, np.round((X[k] - ref) / (2 * np.pi)) * (2 * np.pi), 0.0)
        if d.any():
            X[k] = X[k] - d
            Q[k, self.free] = Q[k, self.free] - d

    # -------------------------------------------------------------- pieces

    def coordinate_targets(self, t: float, q_default) -> np.ndarray:
        out = np.empty(len(self.ctask))
        for k, task in enumerate(self.ctask):
            if task.value_type == "manual_value":
                out[k] = task.value
            elif task.value_type == "from_file":
                out[k] = float(task.values(t))
            else:
                out[k] = q_default[self.ctask_idx[k]]
        return out

    def marker_errors(self, q, obs_all):
        """Distances (nm,) between model and observed markers at q (NaN where missing)."""
        P, _ = self.chain.evaluate(q, None, jac=False)
        return np.linalg.norm(P - obs_all, axis=1)

    def solve(self, time, observations, q0=None, progress=None, block: int | None = None) -> IKResult:
        """Solve the frames in time order, each warm-started from the frames before it.

        With ``block=1`` every frame starts from the previous solution, linearly extrapolated
        from the one before. With ``block=B`` (default :data:`DEFAULT_BLOCK`, 64; 16 with exact
        Point constraints), the first frame is solved alone and
        then B frames at a time are solved together (one vectorized kinematics evaluation per
        iteration for all of them). Each frame of a block starts from one Gauss–Newton step
        from the last solved frame towards its own markers (:meth:`_linearized_starts`; with
        exact Point constraints, from the last solved frame linearly extrapolated to its time
        index; a remainder shorter than half a block joins the last block; in a block of
        12 frames or more every third frame is solved first and the frames between start from
        their interpolation, :meth:`_coarse_fine_block`), and the blocks take Newton steps
        near the optimum (the exact second-order
        term of the marker residuals, :meth:`StationKinematics.second_order`, when the model
        has no couplers, constraints or Ellipsoid mobilizers; a secant approximation of it
        otherwise). Every frame is still iterated to its own optimum; the blocks only change
        the starting points and the path (checked equal to ``block=1`` to 1e-6 rad on the test
        trials).

        Parameters
        ----------
        time : (T,) s
        observations : (T, nm, 3) metres, columns in ``self.marker_names`` order, NaN = missing
        q0 : (nq,) start of the first frame (default: the model's default pose)
        progress : callable(i, T) or None
        block : int or None, frames solved together (None: :data:`DEFAULT_BLOCK`; a frame that
            does not converge or jumps by more than 0.5 rad (m) from its predecessor is
            re-solved sequentially)

        Raises
        ------
        OptionError for a bad ``block`` or ``q0``.
        SolverError when a frame has no marker and no coordinate task to track.
        """
        _, _, block, q0 = _checked(block=block, q0=q0, nq=self.nq)
        tr = self.tree
        time = np.asarray(time, float)
        obs = np.asarray(observations, float)
        T = len(time)
        fast = use_compiled(T)
        for ch in (self.chain, self._cchain):
            if ch is not None:
                ch.compiled = fast
        base = np.array(tr.default_q if q0 is None else warn_degrees(self.model, q0, "q0: rotational coordinate value(s)"), float)
        x = base[self.free].copy()
        xprev = None
        Q = np.empty((T, self.nq))
        E = np.full((T, len(self.marker_names)), np.nan)
        its = np.zeros(T, int)
        if len(self.ctask_idx) == 0 and T:
            empty = ~np.any(np.all(np.isfinite(obs), axis=2), axis=1)
            if empty.any():
                k = int(np.argmax(empty))
                raise SolverError(f"frame at t={time[k]:g} s has no marker data to track")
        t0 = _time.perf_counter()
        if block is None:
            block = DEFAULT_BLOCK_EXACT if self.exact else DEFAULT_BLOCK
        blockable = not self.dependent and (not self.exact or self._cchain is not None)
        if block > 1 and blockable and T > 1:
            solve_block = self.solve_block_exact if self.exact else self.solve_block
            if any(t.value_type == "from_file" for t in self.ctask):
                qrefs = np.array([self.coordinate_targets(t, tr.default_q) for t in time])
            else:                                   # the same targets in every frame
                qrefs = np.tile(self.coordinate_targets(time[0], tr.default_q), (T, 1))
            qrefs = qrefs.reshape(T, len(self.ctask_idx))
            X = np.empty((T, len(self.free)))
            X[0], Q[0], its[0], E[0] = self.solve_first(obs[0], x, base, qrefs[0], self.solve_single)
            self.nearest_turn(0, X, Q, x)
            if progress is not None:
                progress(1, T)
            k = 1
            while k < T:
                # a short remainder joins the block before it (a block costs about as many
                # evaluations as its slowest frame has iterations, however few its frames)
                end = T if T - (k + block) < block // 2 else min(k + block, T)
                kk = np.arange(k, end)
                last = X[k - 1]
                vel = X[k - 1] - X[k - 2] if k >= 2 else np.zeros_like(last)
                starts = last[None, :] + (kk - (k - 1))[:, None] * vel[None, :]
                if not self.exact and len(kk) >= 4 * COARSE_STRIDE:
                    Xb, Qb, ib, eb, conv = self._coarse_fine_block(obs, kk, last, base, qrefs)
                else:
                    if not self.exact:
                        gn = self._linearized_starts(obs[kk], last, base, qrefs[kk])
                        starts = starts if gn is None else gn
                    Xb, Qb, ib, eb = solve_block(obs[kk], starts, base, qrefs[kk])
                    conv = self._block_converged
                X[kk], Q[kk], its[kk], E[kk] = Xb, Qb, ib, eb
                bad = ~conv
                # ... or jumped away from its predecessor (another local optimum)
                prev = np.vstack([X[k - 1][None, :], Xb[:-1]])
                bad |= np.max(np.abs(Xb - prev), axis=1) > 0.5
                if bad.any():
                    # safety net: from the first frame that did not converge, go frame by frame
                    for kb in kk[int(np.argmax(bad)):]:
                        st = X[kb - 1] if kb < 2 else 2.0 * X[kb - 1] - X[kb - 2]
                        X[kb], Q[kb], it_, E[kb] = self.solve_frame(obs[kb], st, base, qrefs[kb])
                        its[kb] += it_
                for kb in kk:
                    self.nearest_turn(kb, X, Q, X[kb - 1])
                k = kk[-1] + 1
                if progress is not None:
                    progress(k, T)
            return self._result(time, Q, E, its, _time.perf_counter() - t0)
        for k in range(T):
            qref = self.coordinate_targets(time[k], tr.default_q)
            # warm start: the previous solution, linearly extrapolated from the one before
            start = x if xprev is None else 2.0 * x - xprev
            solve = self.solve_frame if k else (lambda *a: self.solve_first(*a, solve=self.solve_frame))
            xn, q, it, err = solve(obs[k], start, base, qref)
            Q[k] = q
            one = xn[None, :].copy()
            self.nearest_turn(0, one, Q[k:k + 1], x)
            xn = one[0]
            xprev, x = (x if k > 0 else None), xn
            its[k] = it
            E[k] = err
            if progress is not None:
                progress(k + 1, T)
        return self._result(time, Q, E, its, _time.perf_counter() - t0)

    def _coarse_fine_block(self, obs, kk, x_last, base, qrefs):
        """A block in two passes: every :data:`COARSE_STRIDE`-th frame (and the last) from
        :meth:`_linearized_starts`, then the frames between them, started from the cubic
        through the four solved frames around them (:func:`_interpolated_starts`; a start far
        closer than any prediction from the frames before the block). Returns X, Q,
        iterations, marker errors and converged, (n, ...) over the block's frames ``kk``."""
        s = COARSE_STRIDE
        n = len(kk)
        coarse = np.zeros(n, bool)      # (np.unique / setdiff1d would import numpy.ma: 6 ms)
        coarse[s - 1::s] = True
        coarse[n - 1] = True
        ci, fi = np.flatnonzero(coarse), np.flatnonzero(~coarse)
        Xb = np.empty((n, len(x_last)))
        Qb = np.empty((n, self.nq))
        ib = np.zeros(n, int)
        eb = np.empty((n, obs.shape[1]))
        conv = np.zeros(n, bool)
        st = self._linearized_starts(obs[kk[ci]], x_last, base, qrefs[kk[ci]])
        if st is None:
            st = np.broadcast_to(x_last, (len(ci), len(x_last))).copy()
        Xb[ci], Qb[ci], ib[ci], eb[ci] = self.solve_block(obs[kk[ci]], st, base, qrefs[kk[ci]])
        conv[ci] = self._block_converged
        # the frames between: interpolated between the solved frames around them
        starts = _interpolated_starts(fi, np.r_[-1, ci], np.vstack([x_last[None, :], Xb[ci]]))
        starts = np.clip(starts, self.lo, self.hi)
        Xb[fi], Qb[fi], ib[fi], eb[fi] = self.solve_block(obs[kk[fi]], starts, base, qrefs[kk[fi]])
        conv[fi] = self._block_converged
        return Xb, Qb, ib, eb, conv

    def solve_single(self, obs_all, x0, base, qref, tol=1e-6):
        """One frame: with the Newton steps of :meth:`solve_block` (a block of one) where the
        problem allows blocks (no coupler-eliminated coordinate, no exact constraint), else
        :meth:`solve_frame`; a block that does not converge is solved again by
        :meth:`solve_frame`. Same arguments and results as :meth:`solve_frame`."""
        if self.dependent or self.exact:
            return self.solve_frame(obs_all, x0, base, qref, tol=tol)
        Xb, Qb, ib, eb = self.solve_block(np.asarray(obs_all, float)[None], np.asarray(x0, float)[None],
                                          base, np.asarray(qref, float)[None], tol=tol)
        if self._block_converged[0]:
            return Xb[0], Qb[0], int(ib[0]), eb[0]
        x, q, it, err = self.solve_frame(obs_all, x0, base, qref, tol=tol)
        return x, q, it + int(ib[0]), err

    def _linearized_starts(self, obs, x_last, base, qref):
        """Starts (B, nfree) of a block of frames: one Gauss–Newton step from the last solved
        frame's solution ``x_last`` towards each frame's own markers (its Jacobian evaluated
        once, at ``x_last``), i.e. the solution of the objective linearized there. Far better
        than extrapolating the last frames' motion for the frames at the end of a block (the
        Gait2354 walk: 500 → 450 iterations in blocks of 16)."""
        B, nx = obs.shape[0], len(x_last)
        valid, sw, obs0 = self._block_observations(obs)
        if self.couplers or self.cset is not None:
            X = np.broadcast_to(x_last, (B, nx)).copy()
            r, J, _, _ = self._residual_batch(X, base, obs0, sw, qref)
        else:
            q = np.array(base, float)
            q[self.free] = x_last
            P, Jm = self.chain.evaluate_batch(q[None])
            r = ((P - obs0) * sw[:, :, None]).reshape(B, -1)
            J = (Jm[:, :, :, self.free] * sw[:, :, None, None]).reshape(B, -1, nx)
            nc = len(self.ctask_idx)
            if nc:
                r = np.concatenate([r, self.ctask_sw * (q[self.ctask_idx] - qref)], axis=1)
                Jc = np.zeros((nc, self.nq))
                Jc[np.arange(nc), self.ctask_idx] = self.ctask_sw
                J = np.concatenate([J, np.broadcast_to(Jc[:, self.free], (B, nc, nx))], axis=1)
        g = np.einsum("bmi,bm->bi", J, r)
        H = np.swapaxes(J, 1, 2) @ J
        dH = np.maximum(np.einsum("bii->bi", H), 1e-12)
        try:
            step = -np.linalg.solve(H + (1e-6 * dH)[:, :, None] * np.eye(nx), g[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            return None
        return np.clip(x_last + step, self.lo, self.hi)

    def _result(self, time, Q, E, its, el):
        tr = self.tree
        sq = np.where(np.isfinite(E), E ** 2, 0.0)
        n = np.sum(np.isfinite(E), axis=1)
        tot = sq.sum(axis=1)
        rms = np.sqrt(tot / np.maximum(n, 1))
        mx = np.where(n > 0, np.nanmax(np.where(np.isfinite(E), E, -np.inf), axis=1), np.nan)
        rot = np.array([c.motion_type == "rotational" for c in self.model.coordinates.values()], bool)
        locs = None
        if self.marker_names:
            _, locs = marker_positions(tr, Q, self.marker_names)
        return IKResult(time=time, coordinate_names=list(tr.coordinate_names), q=Q, rotational=rot,
                        marker_names=list(self.marker_names), marker_errors=E,
                        total_squared_error=tot, rms=rms, max=mx, iterations=its, solve_time=el,
                        model_name=self.model.name, marker_locations=locs)


# --------------------------------------------------------------------------------- helpers
#: Frames solved together by default (:meth:`InverseKinematics.solve`): with Newton steps a
#: frame takes 4–5 iterations, and the per-iteration cost of a block is mostly fixed (one
#: vectorized kinematics evaluation), so longer blocks pay (Gait2354, NumPy route: the 73-frame
#: walk 47 → 39 ms from 16 to 64 frames, a 2,000-frame trial 1.57 → 1.09 s). With exact Point
#: constraints (projected KKT steps, :meth:`~LevenbergMarquardtIK.solve_block_exact`), 16.
DEFAULT_BLOCK = 64
DEFAULT_BLOCK_EXACT = 16
#: blocks of at least 4 strides are solved coarse frames first (:meth:`InverseKinematics.
#: _coarse_fine_block`; Gait2354 walk: 368 → 287 iterations, 37 → 33 ms CPU)
COARSE_STRIDE = 3

#: Frames from which the ``arthron`` command (``runtime.light_imports``) evaluates the station
#: kinematics with the compiled kernel: importing numba and loading the cached kernel costs
#: 0.5–1 s; with Newton steps in blocks of 64 the kernel saves about 0.2 ms per frame on a
#: full-body model (the second-order term's hinge columns are NumPy on both routes; measured
#: on a 2,000-frame Gait2354 trial: 0.67 s against 1.09 s in-process, but 1.25 s against
#: 1.02 s CPU as whole commands; break-even about 3,000 frames; 1,500 with Gauss–Newton
#: steps in blocks of 16).
COMPILED_MIN_FRAMES = 3000


def _whole_turn_coordinates(model: Model, tree: Tree, couplers) -> np.ndarray:
    """(nq,) bool: rotational coordinates a whole turn cannot tell apart in the pose: not
    clamped, in no CoordinateCouplerConstraint, moving only rotation nodes by the angle q (+ a
    constant), never a translation or an ellipsoid."""
    out = np.array([c.motion_type == "rotational" and not c.clamped
                    for c in model.coordinates.values()], bool)
    for d, i, _, _ in couplers:
        out[d] = out[i] = False
    for nd in tree.nodes:
        if nd.kind == "rot" and nd.coord >= 0 and nd.func is not None:
            if abs(getattr(nd.func, "slope", 0.0)) != 1.0 or type(nd.func).__name__ != "LinearFunction":
                out[nd.coord] = False
        elif nd.kind in ("trans", "ellip"):
            for c in nd.coords:
                if c >= 0:
                    out[c] = False
    return out


def use_compiled(n_frames: int | None = None) -> bool:
    """Whether IK evaluates its stations with the compiled kernel
    (:mod:`arthron.multibody.station_kernel`): when numba is installed, always in a library
    session, and in the ``arthron`` command from :data:`COMPILED_MIN_FRAMES` frames on (a short
    trial is done before numba would be imported). Same numbers either way (to 1e-12 per
    evaluation)."""
    if not compiled_available():
        return False
    if not runtime.light_imports:
        return True
    return n_frames is not None and n_frames >= COMPILED_MIN_FRAMES


def _select_frames(times, time_range):
    """Indices of the frames OpenSim's IK tool solves: from the row nearest to the start time
    to the row nearest to the final time (times clipped to the file's range)."""
    times = np.asarray(times, float)
    if time_range is None:
        return np.arange(len(times))
    t0 = max(float(time_range[0]), times[0])
    t1 = min(float(time_range[1]), times[-1])
    if t1 < t0:
        raise DataFileError(f"time range {time_range[0]:g}–{time_range[1]:g} s does not overlap "
                            f"the marker data ({times[0]:g}–{times[-1]:g} s)")
    i0 = int(np.argmin(np.abs(times - t0)))
    i1 = int(np.argmin(np.abs(times - t1)))
    return np.arange(i0, i1 + 1)


def solve_ik(model: Model, trial, tasks: IKTasks | None = None, *, time_range=None,
             constraint_weight=math.inf, q0=None, progress=None, block: int | None = None,
             penalty: bool = False) -> IKResult:
    """Inverse kinematics of a marker trial (see the module docstring).

    Parameters
    ----------
    model : Model
    trial : arthron.tables.MarkerTrial (positions in metres)
    tasks : IKTasks, optional
    time_range : (t0, t1) s, optional (default the whole trial)
    constraint_weight : float (a penalty weight only with ``penalty=True``)
    penalty : bool, see :class:`InverseKinematics` (default: constraints exact, like OpenSim 4.6)
    q0 : (nq,) start pose of the first frame, rad or m (degrees are warned about: warn_degrees)
    block : frames solved together after the first (default None: 64, 16 with exact Point
        constraints; see :meth:`InverseKinematics.solve`); 1 = strictly sequential

    Returns
    -------
    IKResult

    Raises
    ------
    OptionError for bad option values (see :func:`check_ik_options`).
    DataFileError when no marker of the trial is in the problem or a tracked marker is NaN on
    every selected frame.
    """
    time_range, constraint_weight, block, q0 = _checked(
        tasks=tasks, time_range=time_range, constraint_weight=constraint_weight, block=block,
        q0=q0, nq=len(require_model(model).coordinates), penalty=penalty)
    ik = InverseKinematics(model, tasks, constraint_weight, check_marker_trial(trial).labels, penalty=penalty)
    if not ik.marker_names:
        raise DataFileError(f"no marker of the trial matches a marker of model '{model.name}' "
                            "with a task", getattr(trial, "source", None))
    with attach_source(getattr(trial, "source", None)):
        idx = _select_frames(trial.time, time_range)
    cols = [trial.labels.index(n) for n in ik.marker_names]
    obs = np.asarray(trial.positions, float)[idx][:, cols, :]
    allnan = ~np.any(np.all(np.isfinite(obs), axis=2), axis=0)
    if np.any(allnan):
        bad = [ik.marker_names[i] for i in np.flatnonzero(allnan)]
        warnings.warn(f"markers with no data in the time range are ignored: {', '.join(bad)}",
                      ArthronWarning, stacklevel=2)
    with attach_source(getattr(trial, "source", None)):
        res = ik.solve(np.asarray(trial.time, float)[idx], obs, q0=q0, progress=progress,
                       block=block)
    _warn_metre_errors(res, trial)
    res.inputs = input_files(model, trial)      # (the motion table's: write_sto refuses them)
    return res


#: An RMS marker error above this (m) is not a fit but a unit or labelling mismatch.
RMS_WARNING = 0.5


def _warn_metre_errors(res, trial):
    """Warn once when the RMS marker error reaches decimetres: a trial in millimetres whose
    header says metres (or the reverse), or markers placed on the wrong bodies."""
    rms = np.asarray(res.rms, float)
    if rms.size and np.nanmax(rms) > RMS_WARNING:
        k = int(np.nanargmax(rms))
        worst = np.asarray(res.marker_errors, float)[k]
        j = int(np.nanargmax(worst))
        warnings.warn(f"{getattr(trial, 'source', None) or 'marker trial'}: IK marker errors of "
                      f"metres (RMS {float(rms[k]):.4g} m at t = {float(res.time[k]):.6g} s, marker "
                      f"'{res.marker_names[j]}' {float(worst[j]):.4g} m); check the trial's Units "
                      f"(read as {getattr(trial, 'units', '?')}) and the model's markers",
                      ArthronWarning, stacklevel=3)
