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
It iterates to the optimum (step below ``1e-10``), so it matches OpenSim's optimum rather than
its accuracy-limited iterate. Frame k starts from the solution of frame k−1; the first frame
from the model's default pose.

Source: the objective, the task and weight semantics, the frame selection (rows of the marker
file nearest to the start and final time) and the marker-error report follow OpenSim 4.6's
``InverseKinematicsTool`` / ``InverseKinematicsSolver`` / ``MarkersReference``.
"""
from __future__ import annotations

import math
import time as _time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ArthronWarning, DataFileError, SolverError, UnsupportedFeature
from ..tables import Table
from ..io.sto import write_sto
from ..multibody.kinematics import Tree, compile_model, _ellip_local
from ..models.model import Model

__all__ = ["IKTasks", "CoordinateTask", "IKResult", "InverseKinematics", "solve_ik"]


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


def _interpolator(t, y):
    """The coordinate reference OpenSim's IK builds from a coordinate file: a
    ``GCVSplineSet(5, coordinates)`` (quintic natural interpolating GCV spline per column,
    :class:`arthron.models.functions.GCVSpline`); with fewer than 6 rows (too few for a quintic)
    the lower odd degree that fits, and linear interpolation below 2 rows."""
    from ..models.functions import GCVSpline
    t = np.asarray(t, float)
    y = np.asarray(y, float)
    for deg in (5, 3, 1):
        if len(t) >= deg + 1:
            sp = GCVSpline(deg, t, y)
            return lambda x, sp=sp: float(np.asarray(sp.value(np.atleast_1d(float(x))))[0])
    return lambda x: float(y[0])


# ------------------------------------------------------------------------ fast kinematics
def _scalar_fd(f):
    """A scalar evaluator x -> (f(x), f'(x)) with little overhead for the function types found
    in joint axes (Linear, Constant, SimmSpline, MultiplierFunction of those); other types go
    through their vectorized methods."""
    from ..models.functions import Constant, LinearFunction, MultiplierFunction, SimmSpline
    if f is None:
        return lambda x: (x, 1.0)
    if isinstance(f, MultiplierFunction):
        inner = _scalar_fd(f.function)
        s = float(f.scale)

        def mult(x):
            v, d = inner(x)
            return s * v, s * d
        return mult
    if isinstance(f, LinearFunction):
        a, b = float(f.slope), float(f.intercept)
        return lambda x: (a * x + b, a)
    if isinstance(f, Constant):
        c = float(f.value(0.0))
        return lambda x: (c, 0.0)
    if type(f) is SimmSpline and len(f.x) >= 3:
        import bisect
        xk = [float(v) for v in f.x]
        yk = [float(v) for v in f.y]
        bb, cc, dd = (list(map(float, f._b)), list(map(float, f._c)), list(map(float, f._d)))
        n = len(xk)
        eps = 2e-13

        def spline(x):
            if x < xk[0]:
                return yk[0] + (x - xk[0]) * bb[0], bb[0]
            if x > xk[-1]:
                return yk[-1] + (x - xk[-1]) * bb[-1], bb[-1]
            if abs(x - xk[0]) <= eps:
                return yk[0], bb[0]
            if abs(x - xk[-1]) <= eps:
                return yk[-1], bb[-1]
            k = min(max(bisect.bisect_right(xk, x) - 1, 0), n - 2)
            dx = x - xk[k]
            return (yk[k] + dx * (bb[k] + dx * (cc[k] + dx * dd[k])),
                    bb[k] + dx * (2.0 * cc[k] + 3.0 * dx * dd[k]))
        return spline

    def generic(x):
        xa = np.array([x])
        return float(f.value(xa)[0]), float(f.derivative(xa, 1)[0])
    return generic


def _vector_fd(f):
    """Like :func:`_scalar_fd` for arrays: x (B,) -> (f(x), f'(x))."""
    from ..models.functions import Constant, LinearFunction, MultiplierFunction, SimmSpline
    if f is None:
        return lambda x: (x, np.ones_like(x))
    if isinstance(f, MultiplierFunction):
        inner = _vector_fd(f.function)
        sc = float(f.scale)

        def mult(x):
            v, d = inner(x)
            return sc * v, sc * d
        return mult
    if isinstance(f, LinearFunction):
        a, b = float(f.slope), float(f.intercept)
        return lambda x: (a * x + b, np.full_like(x, a))
    if isinstance(f, Constant):
        c = float(f.value(0.0))
        return lambda x: (np.full_like(x, c), np.zeros_like(x))
    if type(f) is SimmSpline and len(f.x) >= 3:
        xk = np.asarray(f.x, float)
        yk = np.asarray(f.y, float)
        bb, cc, dd = (np.asarray(f._b, float), np.asarray(f._c, float), np.asarray(f._d, float))
        n = len(xk)

        def spline(x):
            k = np.clip(np.searchsorted(xk, x, side="right") - 1, 0, n - 2)
            dx = x - xk[k]
            v = yk[k] + dx * (bb[k] + dx * (cc[k] + dx * dd[k]))
            d = bb[k] + dx * (2.0 * cc[k] + 3.0 * dx * dd[k])
            lo = x < xk[0] + 2e-13
            hi = x > xk[-1] - 2e-13
            if lo.any() or hi.any():
                v = np.where(lo, yk[0] + np.minimum(x - xk[0], 0.0) * bb[0], v)
                d = np.where(lo, bb[0], d)
                v = np.where(hi, yk[-1] + np.maximum(x - xk[-1], 0.0) * bb[-1], v)
                d = np.where(hi, bb[-1], d)
            return v, d
        return spline
    return lambda x: (f.value(x), f.derivative(x, 1))


class _Chain:
    """The variable nodes of a :class:`Tree` with fixed nodes folded in, for one-frame FK and
    marker Jacobians with little Python overhead."""

    def __init__(self, tree: Tree, marker_names):
        nodes = tree.nodes
        # nearest variable ancestor and the fixed transform from it
        var_of = {0: (-1, np.eye(3), np.zeros(3))}  # node -> (var index, R, p) of node in var frame
        self.kind, self.parent, self.R0, self.p0 = [], [], [], []
        self.axis, self.K, self.K2, self.coord, self.func, self.terms = [], [], [], [], [], []
        self.radii, self.ccoords = [], []
        self.vfunc, self.vterms, self.ident = [], [], []
        for i in range(1, len(nodes)):
            nd = nodes[i]
            pv, Rp, pp = var_of[nd.parent]
            R0 = Rp @ nd.R0
            p0 = Rp @ nd.p0 + pp
            if nd.kind == "fixed":
                var_of[i] = (pv, R0, p0)
                continue
            k = len(self.kind)
            self.kind.append(nd.kind)
            self.parent.append(pv)
            self.R0.append(R0)
            self.p0.append(p0)
            a = None if nd.axis is None else np.asarray(nd.axis, float)
            self.axis.append(a)
            if a is not None:
                K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
                self.K.append(K)
                self.K2.append(K @ K)
            else:
                self.K.append(None)
                self.K2.append(None)
            self.coord.append(nd.coord)
            self.func.append(_scalar_fd(nd.func) if nd.kind == "rot" else None)
            self.vfunc.append(_vector_fd(nd.func) if nd.kind == "rot" else None)
            self.terms.append([(c_, _scalar_fd(f), np.asarray(ax, float)) for c_, f, ax in nd.terms])
            self.vterms.append([(c_, _vector_fd(f), np.asarray(ax, float)) for c_, f, ax in nd.terms])
            self.ident.append(bool(np.array_equal(R0, np.eye(3)) and not np.any(p0)))
            self.radii.append(nd.radii)
            self.ccoords.append(tuple(nd.coords))
            var_of[i] = (k, np.eye(3), np.zeros(3))
        self.n = len(self.kind)
        # hinge columns: (var node, coordinate)
        cols = []
        for k in range(self.n):
            if self.kind[k] == "rot":
                cols.append((k, self.coord[k]))
            else:
                for c in self.ccoords[k]:
                    cols.append((k, c))
        self.cols = cols
        self.col_node = np.array([c[0] for c in cols], int)
        self.col_coord = np.array([c[1] for c in cols], int)
        anc = [set() for _ in range(self.n)]
        for k in range(self.n):
            p = self.parent[k]
            anc[k] = (anc[p] | {p}) if p >= 0 else set()
        # markers
        self.marker_names = list(marker_names)
        mv, mloc = [], []
        for nm in self.marker_names:
            b, loc = tree.markers[nm]
            node = 0 if b < 0 else int(tree.body_node[b])
            v, R, p = var_of[node]
            mv.append(v)
            mloc.append(R @ np.asarray(loc, float) + p)
        self.m_var = np.array(mv, int).reshape(-1)
        self.m_loc = np.array(mloc, float).reshape(-1, 3)
        nm = len(self.marker_names)
        A = np.zeros((nm, len(cols)))
        for i, v in enumerate(mv):
            if v < 0:
                continue
            chain = anc[v] | {v}
            for j, (k, _) in enumerate(cols):
                if k in chain:
                    A[i, j] = 1.0
        self.A = A
        self._I3 = np.eye(3)
        self.nq = tree.nq
        self.Cmap = np.zeros((len(cols), tree.nq))
        self.Cmap[np.arange(len(cols)), self.col_coord] = 1.0
        self.AC = A[:, :, None] * self.Cmap[None, :, :]     # (nm, ncol, nq)

    def evaluate(self, q, rows=None, jac=True):
        """Marker positions (nm, 3) and Jacobian (nm, 3, nq) at one q (nq,).

        ``rows``: indices of the markers wanted (default all)."""
        n = self.n
        Rst = np.empty((n + 1, 3, 3))
        ost = np.empty((n + 1, 3))
        Rst[0] = np.eye(3)
        ost[0] = 0.0
        ncol = len(self.cols)
        W = np.zeros((ncol, 3))
        V = np.zeros((ncol, 3))
        O = np.zeros((ncol, 3))
        j = 0
        I3 = self._I3
        parent, R0, p0, kinds = self.parent, self.R0, self.p0, self.kind
        for k in range(n):
            p = parent[k] + 1
            Rp = Rst[p]
            Rf = Rp @ R0[k]
            of = ost[p] + Rp @ p0[k]
            kind = kinds[k]
            if kind == "rot":
                th, d1 = self.func[k](q[self.coord[k]])
                s, c = math.sin(th), math.cos(th)
                Rst[k + 1] = Rf @ (I3 + s * self.K[k] + (1.0 - c) * self.K2[k])
                ost[k + 1] = of
                W[j] = (Rf @ self.axis[k]) * d1
                O[j] = of
                j += 1
            elif kind == "trans":
                pl = np.zeros(3)
                dc = {}
                for c_, f, ax in self.terms[k]:
                    val, d1 = f(q[c_])
                    pl = pl + val * ax
                    dc[c_] = dc.get(c_, 0.0) + d1 * ax
                Rst[k + 1] = Rf
                ost[k + 1] = of + Rf @ pl
                for c_ in self.ccoords[k]:
                    V[j] = Rf @ dc[c_]
                    j += 1
            else:  # ellip
                c0, c1 = self.ccoords[k]
                pl, Jl, _ = _ellip_local(self.radii[k], np.array([q[c0]]), np.array([q[c1]]))
                Rst[k + 1] = Rf
                ost[k + 1] = of + Rf @ pl[0]
                Hv = Rf @ Jl[0]
                V[j] = Hv[:, 0]
                V[j + 1] = Hv[:, 1]
                j += 2
        mv = self.m_var if rows is None else self.m_var[rows]
        loc = self.m_loc if rows is None else self.m_loc[rows]
        P = np.einsum("mij,mj->mi", Rst[mv + 1], loc) + ost[mv + 1]
        if not jac:
            return P, None
        A = self.A if rows is None else self.A[rows]
        # point velocity per column: v + ω × (P − o)
        d = P[:, None, :] - O[None, :, :]
        cr = np.cross(W[None, :, :], d) + V[None, :, :]
        J = np.einsum("mj,mjx,jc->mxc", A, cr, self.Cmap)
        return P, J


    def evaluate_batch(self, Q):
        """Marker positions (B, nm, 3) and Jacobians (B, nm, 3, nq) at B poses Q (B, nq)."""
        Q = np.asarray(Q, float)
        B = Q.shape[0]
        n = self.n
        Rst = np.empty((n + 1, B, 3, 3))
        ost = np.empty((n + 1, B, 3))
        Rst[0] = np.eye(3)
        ost[0] = 0.0
        ncol = len(self.cols)
        W = np.zeros((ncol, B, 3))
        V = np.zeros((ncol, B, 3))
        O = np.zeros((ncol, B, 3))
        j = 0
        I3 = self._I3
        for k in range(n):
            p = self.parent[k] + 1
            Rp = Rst[p]
            if self.ident[k]:
                Rf, of = Rp, ost[p]
            else:
                Rf = Rp @ self.R0[k]
                of = ost[p] + Rp @ self.p0[k]
            kind = self.kind[k]
            if kind == "rot":
                th, d1 = self.vfunc[k](Q[:, self.coord[k]])
                sn, cs = np.sin(th), np.cos(th)
                Rr = I3 + sn[:, None, None] * self.K[k] + (1.0 - cs)[:, None, None] * self.K2[k]
                Rst[k + 1] = Rf @ Rr
                ost[k + 1] = of
                W[j] = (Rf @ self.axis[k]) * d1[:, None]
                O[j] = of
                j += 1
            elif kind == "trans":
                pl = np.zeros((B, 3))
                dc = {}
                for c_, f, ax in self.vterms[k]:
                    val, d1 = f(Q[:, c_])
                    pl += val[:, None] * ax
                    dc[c_] = dc.get(c_, 0.0) + d1[:, None] * ax
                Rst[k + 1] = Rf
                ost[k + 1] = of + np.einsum("bij,bj->bi", Rf, pl)
                for c_ in self.ccoords[k]:
                    V[j] = np.einsum("bij,bj->bi", Rf, np.broadcast_to(dc[c_], (B, 3)))
                    j += 1
            else:
                c0, c1 = self.ccoords[k]
                pl, Jl, _ = _ellip_local(self.radii[k], Q[:, c0], Q[:, c1])
                Rst[k + 1] = Rf
                ost[k + 1] = of + np.einsum("bij,bj->bi", Rf, pl)
                Hv = Rf @ Jl
                V[j] = Hv[:, :, 0]
                V[j + 1] = Hv[:, :, 1]
                j += 2
        mv = self.m_var + 1
        P = np.einsum("mbij,mj->bmi", Rst[mv], self.m_loc) + ost[mv].transpose(1, 0, 2)
        Wb, Vb, Ob = (a.transpose(1, 0, 2) for a in (W, V, O))
        d = P[:, :, None, :] - Ob[:, None, :, :]
        cr = np.cross(Wb[:, None, :, :], d) + Vb[:, None, :, :]
        J = np.swapaxes(cr, 2, 3) @ self.AC
        return P, J


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
    locations_file : where :meth:`write` puts them (OpenSim's ``report_marker_locations``
        output ``<name>_ik_model_marker_locations.sto``), or None
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
    output_motion_file: Path | None = None
    errors_file: Path | None = None
    marker_locations: np.ndarray | None = None
    locations_file: Path | None = None

    def degrees(self) -> np.ndarray:
        """q with rotational coordinates in degrees, (T, nq)."""
        out = np.array(self.q, copy=True)
        out[:, self.rotational] = np.rad2deg(out[:, self.rotational])
        return out

    def motion_table(self) -> Table:
        return Table(
            name="Coordinates", time=np.asarray(self.time, float), labels=list(self.coordinate_names),
            data=self.degrees(), in_degrees=True,
            comments=["Units are S.I. units (second, meters, Newtons, ...)",
                      "If the header above contains a line with 'inDegrees', this indicates whether "
                      "rotational values are in degrees (yes) or radians (no)."])

    def errors_table(self) -> Table:
        return Table(name="Model Marker Errors from IK", time=np.asarray(self.time, float),
                     labels=["total_squared_error", "marker_error_RMS", "marker_error_max"],
                     data=np.column_stack([self.total_squared_error, self.rms, self.max]),
                     in_degrees=False)

    def locations_table(self) -> Table:
        """Model marker locations in ground, OpenSim's ``Model Marker Locations from IK`` table
        (columns ``<marker>_tx``, ``_ty``, ``_tz``)."""
        if self.marker_locations is None:
            raise SolverError("IKResult has no marker locations")
        T = len(self.time)
        return Table(name="Model Marker Locations from IK", time=np.asarray(self.time, float),
                     labels=[f"{n}_t{a}" for n in self.marker_names for a in "xyz"],
                     data=np.asarray(self.marker_locations, float).reshape(T, -1), in_degrees=False)

    def write(self, motion_path=None, errors_path=None, locations_path=None) -> Path:
        """Write the ``.mot`` (degrees, OpenSim layout) and, when given or when the result came
        from a setup, ``<name>_ik_marker_errors.sto`` and (``report_marker_locations``)
        ``<name>_ik_model_marker_locations.sto``. Returns the motion path."""
        motion_path = Path(motion_path) if motion_path is not None else self.output_motion_file
        if motion_path is None:
            raise SolverError("IKResult.write: no output path given")
        motion_path.parent.mkdir(parents=True, exist_ok=True)
        write_sto(motion_path, self.motion_table())
        if errors_path is None:
            errors_path = self.errors_file
        if errors_path is not None:
            Path(errors_path).parent.mkdir(parents=True, exist_ok=True)
            write_sto(errors_path, self.errors_table())
        if locations_path is None:
            locations_path = self.locations_file
        if locations_path is not None:
            Path(locations_path).parent.mkdir(parents=True, exist_ok=True)
            write_sto(locations_path, self.locations_table())
        return motion_path


# ---------------------------------------------------------------------------------- solver
def _lm_update(a, Xn, rn, Jn, Pn, Qn, extra_ok, X, r, J, P, Q, cost, lam, its, act, tol):
    """One Levenberg–Marquardt acceptance over the active frames ``a`` (in place): a trial that
    does not increase the cost (and meets ``extra_ok``) is taken and λ shrinks; otherwise λ
    grows. A frame stops when its step or its cost decrease falls below tolerance, or λ explodes.
    """
    cn = np.einsum("bm,bm->b", rn, rn)
    ok = (cn <= cost[a] * (1 + 1e-15) + 1e-30) & extra_ok
    its[a] += 1
    acc = a[ok]
    if acc.size:
        dx = np.max(np.abs(Xn[ok] - X[acc]), axis=1)
        dec = cost[acc] - cn[ok]
        X[acc], r[acc], J[acc], P[acc], Q[acc] = Xn[ok], rn[ok], Jn[ok], Pn[ok], Qn[ok]
        cost[acc] = cn[ok]
        lam[acc] = np.maximum(lam[acc] * 0.1, 1e-12)
        conv = (dx < tol) | (dec <= 1e-16 * np.maximum(cost[acc], 1e-30))
        act[acc[conv]] = False
    rej = a[~ok]
    if rej.size:
        lam[rej] *= 10.0
        act[rej[lam[rej] > 1e20]] = False


class InverseKinematics:
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
    UnsupportedFeature for model constraints other than CoordinateCoupler, Point and
    ConstantDistance constraints (Weld: :mod:`arthron.multibody.constraints` has no residuals for
    it yet).
    """

    def __init__(self, model: Model, tasks: IKTasks | None = None, constraint_weight=math.inf,
                 marker_names_available=None, *, tree: Tree | None = None, penalty: bool = False):
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
        self.chain = _Chain(tr, names)
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
        # other constraint types (Point, Weld, ConstantDistance): residuals and Jacobians from
        # arthron.multibody.constraints; exact (projected Gauss-Newton on the constraint manifold)
        # with an infinite weight, penalty residuals sqrt(w)·c(q) otherwise
        from types import SimpleNamespace
        from ..multibody.constraints import compile_constraints
        others = [c for c in model.constraints if c.enabled and c.type != "CoordinateCouplerConstraint"]
        self.cset = None
        if others:
            proxy = SimpleNamespace(constraints=others, frame_in_base=model.frame_in_base,
                                    source=model.source, name=model.name)
            self.cset = compile_constraints(proxy, tr)
            for it in self.cset.items:
                if it[0] not in ("point", "distance"):
                    raise UnsupportedFeature(f"IK with a {it[0]} constraint ('{it[1]}'): only Point, "
                                             "ConstantDistance and CoordinateCoupler constraints",
                                             model.source)
            # Simbody's position error of a ConstantDistance (Rod) constraint is
            # (|p|² − d²)/2, which is what a finite constraint weight penalises
            self._dist_rows = []
            row = 0
            for it in self.cset.items:
                if it[0] == "distance":
                    self._dist_rows.append((row, float(it[6])))
                row += {"point": 3, "distance": 1}[it[0]]
        self.exact = self.cset is not None and math.isinf(self.constraint_weight)
        # PointConstraints only: their two points as pseudo-markers of a _Chain (one cheap
        # evaluation gives residuals and Jacobian)
        self._cchain = None
        if self.cset is not None and all(it[0] == "point" for it in self.cset.items):
            pts = {}
            for k, it in enumerate(self.cset.items):
                pts[f"#c{k}a"] = (it[2], np.asarray(it[3], float))
                pts[f"#c{k}b"] = (it[4], np.asarray(it[5], float))
            ctree = SimpleNamespace(nodes=tr.nodes, markers=pts, body_node=tr.body_node, nq=tr.nq)
            self._cchain = _Chain(ctree, list(pts))
        dependent = {d for d, _, _, _ in self.couplers} if math.isinf(self.constraint_weight) else set()
        free = ~self.locked
        for d in dependent:
            free[d] = False
        self.free = np.flatnonzero(free)
        self.dependent = sorted(dependent)
        self.lo = lo[self.free]
        self.hi = hi[self.free]

    # -------------------------------------------------------------- pieces
    def _expand(self, x, base):
        q = base.copy()
        q[self.free] = x
        if self.dependent:
            for d, i, f, s in self.couplers:
                if d in self.dependent:
                    q[d] = s * float(f.value(np.array([q[i]]))[0])
        return q

    def _dq_dx(self, q):
        """(nq, nfree) derivative of q with respect to the free variables."""
        M = np.zeros((self.nq, len(self.free)))
        M[self.free, np.arange(len(self.free))] = 1.0
        if self.dependent:
            pos = {c: k for k, c in enumerate(self.free)}
            for d, i, f, s in self.couplers:
                if d in self.dependent and i in pos:
                    M[d, pos[i]] = s * float(f.derivative(np.array([q[i]]), 1)[0])
        return M

    def _residual(self, x, base, obs, rows, sw_m, qref, jac=True):
        q = self._expand(x, base)
        P, Jm = self.chain.evaluate(q, rows, jac)
        rm = ((P - obs) * sw_m[:, None]).ravel()
        parts = [rm]
        if len(self.ctask_idx):
            parts.append(self.ctask_sw * (q[self.ctask_idx] - qref))
        pen = []
        if self.couplers and not self.dependent:
            sc = math.sqrt(self.constraint_weight)
            for d, i, f, s in self.couplers:
                pen.append(sc * (q[d] - s * float(f.value(np.array([q[i]]))[0])))
            parts.append(np.array(pen))
        soft = self.cset is not None and not self.exact
        if soft:
            sc = math.sqrt(self.constraint_weight)
            pc, pC = self._penalty(q[None])
            parts.append(sc * pc[0])
        r = np.concatenate(parts)
        self._last_P = P
        if not jac:
            return r, None, q
        nqf = self.nq
        Jq = [(Jm * sw_m[:, None, None]).reshape(-1, nqf)]
        if len(self.ctask_idx):
            Jc = np.zeros((len(self.ctask_idx), nqf))
            Jc[np.arange(len(self.ctask_idx)), self.ctask_idx] = self.ctask_sw
            Jq.append(Jc)
        if pen:
            sc = math.sqrt(self.constraint_weight)
            Jp = np.zeros((len(pen), nqf))
            for k, (d, i, f, s) in enumerate(self.couplers):
                Jp[k, d] = sc
                Jp[k, i] -= sc * s * float(f.derivative(np.array([q[i]]), 1)[0])
            Jq.append(Jp)
        if soft:
            Jq.append(math.sqrt(self.constraint_weight) * pC[0])
        Jq = np.vstack(Jq)
        if self.dependent:
            J = Jq @ self._dq_dx(q)
        else:
            J = Jq[:, self.free]
        return r, J, q

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

    def solve_frame(self, obs_all, x0, base, qref, tol=1e-6, max_iter=100):
        """Solve one frame.

        Parameters
        ----------
        obs_all : (nm, 3) observed positions of ``marker_names`` (m, NaN = missing)
        x0 : (nfree,) start; base : (nq,) full q holding the locked values
        qref : coordinate task targets

        Returns
        -------
        x (nfree,), q (nq,), iterations, marker errors (nm,) m (NaN where missing)
        """
        if self.exact:
            return self._solve_frame_exact(obs_all, x0, base, qref, tol, max_iter)
        ok = np.all(np.isfinite(obs_all), axis=1)
        rows = np.flatnonzero(ok)
        obs = obs_all[rows]
        w = self.marker_weights[rows]
        wtot = float(np.sum(w[w > 0]))
        # Simbody's Markers goal is Σ w|e|² / (2 Σw) over the markers present in the frame;
        # coordinate tasks add w (q − v)² / 2 each: both halves scaled by 2 here.
        sw = np.sqrt(w / wtot) if wtot > 0 else np.zeros_like(w)
        lo, hi = self.lo, self.hi
        x = np.clip(np.asarray(x0, float), lo, hi)
        r, J, q = self._residual(x, base, obs, rows, sw, qref)
        P = self._last_P
        cost = r @ r
        lam = 1e-6
        it = 0
        nx = len(x)
        err = np.full(len(obs_all), np.nan)
        if nx == 0:
            err[rows] = np.linalg.norm(P - obs, axis=1)
            return x, q, 0, err
        for it in range(1, max_iter + 1):
            g = J.T @ r
            H = J.T @ J
            at_lo = (x <= lo) & (g > 0)
            at_hi = (x >= hi) & (g < 0)
            act = at_lo | at_hi
            fr = ~act
            step = np.zeros(nx)
            diagH = np.maximum(np.diag(H), 1e-12)
            accepted = False
            for _ in range(30):
                Hf = H[np.ix_(fr, fr)] + lam * np.diag(diagH[fr])
                try:
                    step[fr] = -np.linalg.solve(Hf, g[fr])
                except np.linalg.LinAlgError:
                    lam *= 10.0
                    continue
                xn = np.clip(x + step, lo, hi)
                rn, Jn, qn = self._residual(xn, base, obs, rows, sw, qref)
                Pn = self._last_P
                cn = rn @ rn
                if cn <= cost * (1 + 1e-15) + 1e-30:
                    accepted = True
                    break
                lam *= 10.0
            if not accepted:
                break
            dx = xn - x
            x, r, J, q, P = xn, rn, Jn, qn, Pn
            dec = cost - cn
            cost = cn
            lam = max(lam * 0.1, 1e-12)
            if np.max(np.abs(dx)) < tol or dec <= 1e-16 * max(cost, 1e-30):
                break
        err[rows] = np.linalg.norm(P - obs, axis=1)
        return x, q, it, err

    def _penalty(self, Q):
        """Constraint errors (B, m) in Simbody's units (ConstantDistance: (|p|² − d²)/2) and
        their Jacobians (B, m, nq), for the finite-weight penalty."""
        c = self.cset.residuals(Q)
        C = self.cset.jacobian(Q)
        for r, d in self._dist_rows:
            e = c[:, r].copy()
            C[:, r, :] *= (e + d)[:, None]
            c[:, r] = e * (e + 2.0 * d) / 2.0
        return c, C

    # ------------------------------------------------ exact model constraints
    def _constraint(self, x, base, jac=True):
        """Constraint residuals c (m,) and their Jacobian (m, nfree) at the free variables x."""
        q = self._expand(x, base)
        if self._cchain is not None:
            P, J = self._cchain.evaluate(q, None, jac)
            c = (P[0::2] - P[1::2]).ravel()
            if not jac:
                return c, None
            Cq = (J[0::2] - J[1::2]).reshape(-1, self.nq)
        else:
            c = self.cset.residuals(q[None])[0]
            if not jac:
                return c, None
            Cq = self.cset.jacobian(q[None])[0]
        C = Cq @ self._dq_dx(q) if self.dependent else Cq[:, self.free]
        return c, C

    def _project(self, x, base, tol=1e-12, max_iter=30):
        """The point near x on the constraint manifold (minimum-norm Gauss-Newton steps, like
        :func:`arthron.multibody.constraints.assemble`). Returns (x, max |c|)."""
        lo, hi = self.lo, self.hi
        c, C = self._constraint(x, base)
        err = float(np.abs(c).max())
        for _ in range(max_iter):
            if err < tol:
                break
            dx = -np.linalg.lstsq(C, c, rcond=None)[0]
            a = 1.0
            for _ls in range(20):
                xn = np.clip(x + a * dx, lo, hi)
                cn, _ = self._constraint(xn, base, jac=False)
                en = float(np.abs(cn).max())
                if en < err or en < tol:
                    break
                a *= 0.5
            if en >= err and en >= tol:
                break
            x, c, err = xn, cn, en
            if err >= tol:
                _, C = self._constraint(x, base)
        return x, err

    def _solve_frame_exact(self, obs_all, x0, base, qref, tol=1e-6, max_iter=100):
        """:meth:`solve_frame` with the model constraints held exactly (``constraint_weight``
        infinite, as OpenSim's IK does): damped Gauss–Newton steps of the equality-constrained
        linearised problem (KKT system with the constraint Jacobian), each followed by a
        projection back onto the constraint manifold; a step is kept when the (feasible) cost
        decreases."""
        ok = np.all(np.isfinite(obs_all), axis=1)
        rows = np.flatnonzero(ok)
        obs = obs_all[rows]
        w = self.marker_weights[rows]
        wtot = float(np.sum(w[w > 0]))
        sw = np.sqrt(w / wtot) if wtot > 0 else np.zeros_like(w)
        lo, hi = self.lo, self.hi
        x, cerr = self._project(np.clip(np.asarray(x0, float), lo, hi), base)
        if cerr > 1e-9:
            raise SolverError(f"model '{self.model.name}': constraints cannot be satisfied at the "
                              f"start of the frame (max residual {cerr:.3g})", self.model.source)
        r, J, q = self._residual(x, base, obs, rows, sw, qref)
        P = self._last_P
        cost = r @ r
        nx = len(x)
        err = np.full(len(obs_all), np.nan)
        lam = 1e-6
        it = 0
        for it in range(1, max_iter + 1):
            c, C = self._constraint(x, base)
            g = J.T @ r
            H = J.T @ J
            m = C.shape[0]
            act = ((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0))
            fr = np.flatnonzero(~act)
            diagH = np.maximum(np.diag(H), 1e-12)
            accepted = False
            for _ in range(30):
                nf = len(fr)
                K = np.zeros((nf + m, nf + m))
                K[:nf, :nf] = H[np.ix_(fr, fr)] + lam * np.diag(diagH[fr])
                K[:nf, nf:] = C[:, fr].T
                K[nf:, :nf] = C[:, fr]
                rhs = np.concatenate([-g[fr], -c])
                sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
                step = np.zeros(nx)
                step[fr] = sol[:nf]
                if np.max(np.abs(step)) < tol:
                    break           # at the optimum: projection noise could only reject it
                xn, cerr = self._project(np.clip(x + step, lo, hi), base)
                if cerr <= 1e-9:
                    rn, Jn, qn = self._residual(xn, base, obs, rows, sw, qref)
                    cn = rn @ rn
                    if cn <= cost * (1 + 1e-15) + 1e-30:
                        accepted = True
                        break
                lam *= 10.0
            if not accepted:
                break
            dx = xn - x
            x, r, J, q, P = xn, rn, Jn, qn, self._last_P
            dec = cost - cn
            cost = cn
            lam = max(lam * 0.1, 1e-12)
            if np.max(np.abs(dx)) < tol or dec <= 1e-16 * max(cost, 1e-30):
                break
        if len(rows):
            err[rows] = np.linalg.norm(P - obs, axis=1)
        return x, q, it, err

    def marker_errors(self, q, obs_all):
        """Distances (nm,) between model and observed markers at q (NaN where missing)."""
        P, _ = self.chain.evaluate(q, None, jac=False)
        return np.linalg.norm(P - obs_all, axis=1)

    def _residual_batch(self, X, base, obs0, sw, qref):
        """Stacked residuals (B, m) and Jacobians (B, m, nfree) for B frames (no eliminated
        coordinates). ``obs0`` has missing markers set to 0 and ``sw`` 0 for them."""
        B = X.shape[0]
        Q = np.broadcast_to(base, (B, self.nq)).copy()
        Q[:, self.free] = X
        P, Jm = self.chain.evaluate_batch(Q)
        parts = [((P - obs0) * sw[:, :, None]).reshape(B, -1)]
        Js = [(Jm * sw[:, :, None, None]).reshape(B, -1, self.nq)]
        nc = len(self.ctask_idx)
        if nc:
            parts.append(self.ctask_sw * (Q[:, self.ctask_idx] - qref))
            Jc = np.zeros((nc, self.nq))
            Jc[np.arange(nc), self.ctask_idx] = self.ctask_sw
            Js.append(np.broadcast_to(Jc, (B, nc, self.nq)))
        if self.couplers:
            sc = math.sqrt(self.constraint_weight)
            pen = np.empty((B, len(self.couplers)))
            Jp = np.zeros((B, len(self.couplers), self.nq))
            for k, (d, i, f, s) in enumerate(self.couplers):
                pen[:, k] = sc * (Q[:, d] - s * f.value(Q[:, i]))
                Jp[:, k, d] = sc
                Jp[:, k, i] -= sc * s * f.derivative(Q[:, i], 1)
            parts.append(pen)
            Js.append(Jp)
        if self.cset is not None and not self.exact:   # penalty
            sc = math.sqrt(self.constraint_weight)
            pc, pC = self._penalty(Q)
            parts.append(sc * pc)
            Js.append(sc * pC)
        r = np.concatenate(parts, axis=1)
        J = np.concatenate(Js, axis=1)[:, :, self.free]
        return r, J, P, Q

    def _constraint_batch(self, X, base, jac=True):
        """PointConstraint residuals (B, m) and Jacobians (B, m, nfree) at B frames."""
        B = X.shape[0]
        Q = np.broadcast_to(base, (B, self.nq)).copy()
        Q[:, self.free] = X
        if jac:
            P, J = self._cchain.evaluate_batch(Q)
            C = (J[:, 0::2] - J[:, 1::2]).reshape(B, -1, self.nq)[:, :, self.free]
        else:
            P = np.stack([self._cchain.evaluate(q, None, False)[0] for q in Q])
            C = None
        return (P[:, 0::2] - P[:, 1::2]).reshape(B, -1), C

    def _project_batch(self, X, base, tol=1e-12, max_iter=30):
        """:meth:`_project` for B frames at once. Returns (X, max |c| per frame)."""
        lo, hi = self.lo, self.hi
        c, C = self._constraint_batch(X, base)
        err = np.abs(c).max(axis=1)
        X = X.copy()
        for _ in range(max_iter):
            a = np.flatnonzero(err >= tol)
            if a.size == 0:
                break
            Ca, ca = C[a], c[a]
            CCt = Ca @ np.swapaxes(Ca, 1, 2)
            m = CCt.shape[-1]
            lam = np.linalg.solve(CCt + 1e-300 * np.eye(m), ca[..., None])[..., 0]
            dx = -np.einsum("bmi,bm->bi", Ca, lam)
            Xn = np.clip(X[a] + dx, lo, hi)
            cn, Cn = self._constraint_batch(Xn, base)
            en = np.abs(cn).max(axis=1)
            ok = (en < err[a]) | (en < tol)
            if not ok.any():
                break
            b = a[ok]
            X[b], c[b], C[b], err[b] = Xn[ok], cn[ok], Cn[ok], en[ok]
            if not ok.all():       # those that did not improve: stop them (sequential fallback)
                err[a[~ok]] = np.where(err[a[~ok]] < 1e-9, err[a[~ok]], np.inf)
                if np.all(err[a[~ok]] == np.inf):
                    break
        return X, err

    def _block_observations(self, obs):
        """Per-frame marker weights of OpenSim's objective (Σw|e|²/Σw over the markers present):
        returns valid (B, nm), √(w/Σw) (B, nm) and the observations with gaps zeroed."""
        valid = np.all(np.isfinite(obs), axis=2)
        w = np.where(valid, self.marker_weights[None, :], 0.0)
        wtot = w.sum(axis=1, keepdims=True)
        sw = np.sqrt(np.divide(w, wtot, out=np.zeros_like(w), where=wtot > 0))
        return valid, sw, np.where(valid[:, :, None], obs, 0.0)

    def solve_block_exact(self, obs, X0, base, qref, tol=1e-6, max_iter=100):
        """:meth:`solve_block` with PointConstraints held exactly (the steps of
        :meth:`_solve_frame_exact`, vectorized over the frames). Frames that reach a coordinate
        bound or whose projection fails are flagged not converged (re-solved one by one)."""
        B, nx = X0.shape
        valid, sw, obs0 = self._block_observations(obs)
        lo, hi = self.lo, self.hi
        X, cerr = self._project_batch(np.clip(X0, lo, hi), base)
        r, J, P, Q = self._residual_batch(X, base, obs0, sw, qref)
        cost = np.einsum("bm,bm->b", r, r)
        lam = np.full(B, 1e-6)
        its = np.zeros(B, int)
        act = cerr <= 1e-9
        failed = ~act
        eye = np.eye(nx)
        for _ in range(max_iter):
            a = np.flatnonzero(act)
            if a.size == 0:
                break
            c, C = self._constraint_batch(X[a], base)
            m = C.shape[1]
            Ja, ra = J[a], r[a]
            g = np.einsum("bmi,bm->bi", Ja, ra)
            H = np.einsum("bmi,bmj->bij", Ja, Ja)
            dH = np.maximum(np.einsum("bii->bi", H), 1e-12)
            K = np.zeros((a.size, nx + m, nx + m))
            K[:, :nx, :nx] = H + (lam[a][:, None] * dH)[:, :, None] * eye
            K[:, :nx, nx:] = np.swapaxes(C, 1, 2)
            K[:, nx:, :nx] = C
            rhs = np.concatenate([-g, -c], axis=1)
            try:
                step = np.linalg.solve(K, rhs[:, :, None])[:, :nx, 0]
            except np.linalg.LinAlgError:
                failed[a] = True
                act[a] = False
                break
            # a step below the tolerance: at the optimum (projection noise could only reject it)
            tiny = np.max(np.abs(step), axis=1) < tol
            if tiny.any():
                act[a[tiny]] = False
                a, step = a[~tiny], step[~tiny]
                if a.size == 0:
                    break
            Xn, en = self._project_batch(np.clip(X[a] + step, lo, hi), base)
            rn, Jn, Pn, Qn = self._residual_batch(Xn, base, obs0[a], sw[a], qref[a])
            _lm_update(a, Xn, rn, Jn, Pn, Qn, en <= 1e-9, X, r, J, P, Q, cost, lam, its, act, tol)
        err = np.where(valid, np.linalg.norm(P - obs0, axis=2), np.nan)
        on_bound = np.any((X <= lo) | (X >= hi), axis=1)
        self._block_converged = ~act & (lam <= 1e20) & ~failed & ~on_bound
        return X, Q, its, err

    def solve_block(self, obs, X0, base, qref, tol=1e-6, max_iter=100):
        """Solve B independent frames together (bounded LM, vectorized over the frames).

        Parameters
        ----------
        obs : (B, nm, 3) m, NaN = missing; X0 : (B, nfree) starts; qref : (B, ntasks)

        Returns
        -------
        X (B, nfree), Q (B, nq), iterations (B,), marker errors (B, nm)
        """
        B, nx = X0.shape
        valid, sw, obs0 = self._block_observations(obs)
        lo, hi = self.lo, self.hi
        bounded = bool(np.any(np.isfinite(lo)) or np.any(np.isfinite(hi)))
        X = np.clip(X0, lo, hi)
        r, J, P, Q = self._residual_batch(X, base, obs0, sw, qref)
        cost = np.einsum("bm,bm->b", r, r)
        lam = np.full(B, 1e-6)
        its = np.zeros(B, int)
        act = np.ones(B, bool)
        eye = np.eye(nx)
        for _ in range(max_iter):
            a = np.flatnonzero(act)
            if a.size == 0:
                break
            Ja, ra = J[a], r[a]
            g = np.einsum("bmi,bm->bi", Ja, ra)
            H = np.einsum("bmi,bmj->bij", Ja, Ja)
            dH = np.maximum(np.einsum("bii->bi", H), 1e-12)
            A = H + (lam[a][:, None] * dH)[:, :, None] * eye
            if bounded:
                fixed = ((X[a] <= lo) & (g > 0)) | ((X[a] >= hi) & (g < 0))
                if fixed.any():
                    fr = ~fixed
                    A = A * (fr[:, :, None] & fr[:, None, :]) + fixed[:, :, None] * eye
                    g = np.where(fixed, 0.0, g)
            try:
                step = -np.linalg.solve(A, g[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                lam[a] *= 10.0
                continue
            Xn = np.clip(X[a] + step, lo, hi)
            rn, Jn, Pn, Qn = self._residual_batch(Xn, base, obs0[a], sw[a], qref[a])
            _lm_update(a, Xn, rn, Jn, Pn, Qn, True, X, r, J, P, Q, cost, lam, its, act, tol)
        err = np.where(valid, np.linalg.norm(P - obs0, axis=2), np.nan)
        self._block_converged = ~act & (lam <= 1e20)
        return X, Q, its, err

    def solve(self, time, observations, q0=None, progress=None, block: int = 16) -> IKResult:
        """Solve the frames in time order, each warm-started from the frames before it.

        With ``block=1`` every frame starts from the previous solution, linearly extrapolated
        from the one before. With ``block=B`` (default 16), the first frame is solved alone and
        then B frames at a time are solved together (one vectorized kinematics evaluation per
        iteration for all of them), each starting from the last solved frame linearly
        extrapolated to its time index. Every frame is still iterated to its own optimum; the
        blocks only change the starting points (checked equal to ``block=1`` to 1e-6 rad on
        the test trials).

        Parameters
        ----------
        time : (T,) s
        observations : (T, nm, 3) metres, columns in ``self.marker_names`` order, NaN = missing
        q0 : (nq,) start of the first frame (default: the model's default pose)
        progress : callable(i, T) or None
        block : int, frames solved together (8–16 is best; a frame that does not converge or
            jumps by more than 0.5 rad (m) from its predecessor is re-solved sequentially)

        Raises
        ------
        SolverError when a frame has no marker and no coordinate task to track.
        """
        tr = self.tree
        time = np.asarray(time, float)
        obs = np.asarray(observations, float)
        T = len(time)
        base = np.array(tr.default_q if q0 is None else q0, float)
        x = base[self.free].copy()
        xprev = None
        Q = np.empty((T, self.nq))
        E = np.full((T, len(self.marker_names)), np.nan)
        its = np.zeros(T, int)
        for k in range(T):
            if not np.any(np.all(np.isfinite(obs[k]), axis=1)) and len(self.ctask_idx) == 0:
                raise SolverError(f"frame at t={time[k]:g} s has no marker data to track")
        t0 = _time.perf_counter()
        block = int(block)
        blockable = not self.dependent and (not self.exact or self._cchain is not None)
        if block > 1 and blockable and T > 1:
            solve_block = self.solve_block_exact if self.exact else self.solve_block
            qrefs = np.array([self.coordinate_targets(t, tr.default_q) for t in time])
            qrefs = qrefs.reshape(T, len(self.ctask_idx))
            xk, q, it, err = self.solve_frame(obs[0], x, base, qrefs[0])
            X = np.empty((T, len(self.free)))
            X[0], Q[0], its[0], E[0] = xk, q, it, err
            if progress is not None:
                progress(1, T)
            k = 1
            while k < T:
                kk = np.arange(k, min(k + block, T))
                last = X[k - 1]
                vel = X[k - 1] - X[k - 2] if k >= 2 else np.zeros_like(last)
                starts = last[None, :] + (kk - (k - 1))[:, None] * vel[None, :]
                Xb, Qb, ib, eb = solve_block(obs[kk], starts, base, qrefs[kk])
                X[kk], Q[kk], its[kk], E[kk] = Xb, Qb, ib, eb
                bad = ~self._block_converged
                # ... or jumped away from its predecessor (another local optimum)
                prev = np.vstack([X[k - 1][None, :], Xb[:-1]])
                bad |= np.max(np.abs(Xb - prev), axis=1) > 0.5
                if bad.any():
                    # safety net: from the first frame that did not converge, go frame by frame
                    for kb in kk[int(np.argmax(bad)):]:
                        st = X[kb - 1] if kb < 2 else 2.0 * X[kb - 1] - X[kb - 2]
                        X[kb], Q[kb], it_, E[kb] = self.solve_frame(obs[kb], st, base, qrefs[kb])
                        its[kb] += it_
                k = kk[-1] + 1
                if progress is not None:
                    progress(k, T)
            return self._result(time, Q, E, its, _time.perf_counter() - t0)
        for k in range(T):
            qref = self.coordinate_targets(time[k], tr.default_q)
            # warm start: the previous solution, linearly extrapolated from the one before
            start = x if xprev is None else 2.0 * x - xprev
            xn, q, it, err = self.solve_frame(obs[k], start, base, qref)
            xprev, x = (x if k > 0 else None), xn
            Q[k] = q
            its[k] = it
            E[k] = err
            if progress is not None:
                progress(k + 1, T)
        return self._result(time, Q, E, its, _time.perf_counter() - t0)

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
            from ..multibody.kinematics import marker_positions
            _, locs = marker_positions(tr, Q, self.marker_names)
        return IKResult(time=time, coordinate_names=list(tr.coordinate_names), q=Q, rotational=rot,
                        marker_names=list(self.marker_names), marker_errors=E,
                        total_squared_error=tot, rms=rms, max=mx, iterations=its, solve_time=el,
                        model_name=self.model.name, marker_locations=locs)


# --------------------------------------------------------------------------------- helpers
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
             constraint_weight=math.inf, q0=None, progress=None, block: int = 16,
             penalty: bool = False) -> IKResult:
    """Inverse kinematics of a marker trial (see the module docstring).

    Parameters
    ----------
    model : Model
    trial : arthron.io.trc.MarkerTrial (positions in metres)
    tasks : IKTasks, optional
    time_range : (t0, t1) s, optional (default the whole trial)
    constraint_weight : float (a penalty weight only with ``penalty=True``)
    penalty : bool, see :class:`InverseKinematics` (default: constraints exact, like OpenSim 4.6)
    q0 : (nq,) start pose of the first frame
    block : frames solved together after the first (see :meth:`InverseKinematics.solve`);
        1 = strictly sequential

    Returns
    -------
    IKResult

    Raises
    ------
    DataFileError when no marker of the trial is in the problem or a tracked marker is NaN on
    every selected frame.
    """
    ik = InverseKinematics(model, tasks, constraint_weight, trial.labels, penalty=penalty)
    if not ik.marker_names:
        raise DataFileError(f"no marker of the trial matches a marker of model '{model.name}' "
                            "with a task", getattr(trial, "source", None))
    idx = _select_frames(trial.time, time_range)
    cols = [trial.labels.index(n) for n in ik.marker_names]
    obs = np.asarray(trial.positions, float)[idx][:, cols, :]
    allnan = ~np.any(np.all(np.isfinite(obs), axis=2), axis=0)
    if np.any(allnan):
        bad = [ik.marker_names[i] for i in np.flatnonzero(allnan)]
        warnings.warn(f"markers with no data in the time range are ignored: {', '.join(bad)}",
                      ArthronWarning, stacklevel=2)
    return ik.solve(np.asarray(trial.time, float)[idx], obs, q0=q0, progress=progress, block=block)


