"""Positions and Jacobians of points fixed on bodies (stations, markers), from the compiled tree.

For a station on body b, the column of coordinate c of its Jacobian ``∂x/∂q`` is
``Σ_j v_j + ω_j × (x − o_j)`` over the hinges j driven by c that lie between ground and b: the
partial velocities of :func:`arthron.multibody.kinematics.velocity_map`, evaluated for points
rather than mass centers. Inverse kinematics needs them at every iteration of every frame, so
this module evaluates them with little per-call overhead:

* the pose-independent part of a :class:`~arthron.multibody.kinematics.Tree` is folded once per
  tree (fixed nodes merged into the nearest variable ancestor, hinge columns and ancestor sets
  laid out) and kept in a module cache keyed on the tree object;
* a :class:`StationKinematics` holds one set of stations on that fold (their variable node,
  their location in its frame, which hinge columns move them) and evaluates one pose
  (:meth:`StationKinematics.evaluate`) or a batch of poses (:meth:`StationKinematics.evaluate_batch`).

Axis functions are evaluated through :meth:`arthron.models.functions.Function.value_and_derivative`.
The positions equal :func:`arthron.multibody.kinematics.marker_positions` (to rounding).

With ``StationKinematics.compiled`` set (and numba installed), the pose loop runs in the
compiled kernel of :mod:`arthron.multibody.station_kernel` (the functions still in NumPy);
the NumPy loop is the fallback and the reference (both agree to 1e-12).
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from ..geometry.spatial import cross, skew
from .kinematics import Tree, _ellip_local

__all__ = ["StationKinematics", "station_jacobian", "marker_jacobian", "compiled_kernel",
           "compiled_available"]


class _Fold:
    """The variable nodes of a tree with the fixed nodes folded in (pose independent)."""

    def __init__(self, tree: Tree):
        nodes = tree.nodes
        # node -> (variable index, R, p) of the node's frame in that variable node's frame
        var_of = {0: (-1, np.eye(3), np.zeros(3))}
        self.kind, self.parent, self.R0, self.p0 = [], [], [], []
        self.axis, self.K, self.K2, self.coord, self.func, self.terms = [], [], [], [], [], []
        self.radii, self.ccoords, self.ident, self.zaxis = [], [], [], []
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
            self.zaxis.append(a is not None and bool(np.array_equal(a, (0.0, 0.0, 1.0))))
            K = None if a is None else skew(a)
            self.K.append(K)
            self.K2.append(None if K is None else K @ K)
            self.coord.append(nd.coord)
            self.func.append(nd.func if nd.kind == "rot" else None)
            self.terms.append([(c_, f, np.asarray(ax, float)) for c_, f, ax in nd.terms])
            self.ident.append(bool(np.array_equal(R0, np.eye(3)) and not np.any(p0)))
            self.radii.append(nd.radii)
            self.ccoords.append(tuple(nd.coords))
            var_of[i] = (k, np.eye(3), np.zeros(3))
        self.var_of = var_of
        self.n = len(self.kind)
        cols = []                      # hinge columns: (variable node, coordinate)
        for k in range(self.n):
            if self.kind[k] == "rot":
                cols.append((k, self.coord[k]))
            else:
                cols.extend((k, c) for c in self.ccoords[k])
        self.cols = cols
        self.col_coord = np.array([c[1] for c in cols], int)
        anc = []
        for k in range(self.n):
            p = self.parent[k]
            anc.append((anc[p] | {p}) if p >= 0 else set())
        self.anc = anc
        self.nq = tree.nq
        self.Cmap = np.zeros((len(cols), tree.nq))
        self.Cmap[np.arange(len(cols)), self.col_coord] = 1.0


_FOLDS: dict = {}


def _fold(tree: Tree) -> _Fold:
    """The fold of ``tree``, computed once per tree object (dropped with the tree)."""
    key = id(tree)
    hit = _FOLDS.get(key)
    if hit is not None and hit[0]() is tree:
        return hit[1]
    f = _Fold(tree)
    _FOLDS[key] = (weakref.ref(tree), f)
    weakref.finalize(tree, _FOLDS.pop, key, None)
    return f


def _fd(f, x):
    """(θ, θ') of an axis function at x (identity when f is None)."""
    if f is None:
        return x, 1.0
    return f.value_and_derivative(x)


def _fd_batch(f, x):
    if f is None:
        return x, np.ones_like(x)
    return f.value_and_derivative(x)


_KERNEL: list = []


def compiled_kernel():
    """The numba kernel :func:`arthron.multibody.station_kernel.stations_batch_q`, or None when
    numba is not installed (imported on first call: numba's import and the cached kernel)."""
    if not _KERNEL:
        try:
            from .station_kernel import stations_batch_q
        except ImportError:
            stations_batch_q = None
        _KERNEL.append(stations_batch_q)
    return _KERNEL[0]


def compiled_available() -> bool:
    """Whether the compiled kernel can be used (numba importable), without importing it."""
    if _KERNEL:
        return _KERNEL[0] is not None
    import importlib.util
    return importlib.util.find_spec("numba") is not None


def _kernel_tables(fd: "_Fold"):
    """Pose-independent arrays of the fold laid out for the compiled kernel (once per fold)."""
    kt = getattr(fd, "_kernel", None)
    if kt is not None:
        return kt
    n = fd.n
    kind = np.array([0 if k == "rot" else 1 for k in fd.kind], np.int64)
    axis = np.zeros((n, 3))
    K = np.zeros((n, 3, 3))
    K2 = np.zeros((n, 3, 3))
    for k in range(n):
        if fd.kind[k] == "rot":
            axis[k] = fd.axis[k]
            K[k] = fd.K[k]
            K2[k] = fd.K2[k]
    kt = dict(kind=kind, parent=np.array(fd.parent, np.int64).reshape(n),
              R0=np.array(fd.R0, float).reshape(n, 3, 3), p0=np.array(fd.p0, float).reshape(n, 3),
              ident=np.array(fd.ident, np.bool_).reshape(n), axis=axis, K=K, K2=K2,
              col_node=np.array([c[0] for c in fd.cols], np.int64).reshape(len(fd.cols)),
              col_coord=fd.col_coord.astype(np.int64))
    col0 = {}
    for j, (k, _) in enumerate(fd.cols):
        col0.setdefault(k, j)
    kt["col0"] = col0
    # axis functions the kernel evaluates itself (identity, Constant, LinearFunction, SimmSpline
    # in MultiplierFunctions); the others stay in NumPy ("pre": evaluated before the call)
    knots: list = []
    pre = np.zeros(n, np.bool_)
    ncoord = np.zeros(n, np.int64)
    fspec = np.zeros((n, 3), np.int64)
    fpar = np.zeros((n, 3))
    tn, tc, tcol, tax, tsp, tpa = [], [], [], [], [], []
    for k in range(n):
        if fd.kind[k] == "rot":
            enc = _encode_function(fd.func[k], knots)
            if enc is None:
                pre[k] = True
            else:
                ncoord[k] = fd.coord[k]
                fspec[k], fpar[k] = enc
        elif fd.kind[k] == "trans":
            encs = [_encode_function(f, knots) for _, f, _ in fd.terms[k]]
            if any(e is None for e in encs):
                pre[k] = True
                continue
            j0 = col0[k]
            for (c_, _, ax), (sp, pa) in zip(fd.terms[k], encs):
                tn.append(k)
                tc.append(c_)
                tcol.append(j0 + list(fd.ccoords[k]).index(c_))
                tax.append(ax)
                tsp.append(sp)
                tpa.append(pa)
        else:
            pre[k] = True
    cat = (lambda i: np.concatenate([kn[i] for kn in knots]) if knots else np.zeros(1))
    kt.update(pre=pre, pre_nodes=[k for k in range(n) if pre[k]], ncoord=ncoord, fspec=fspec,
              fpar=fpar, X=cat(0), Y=cat(1), Bc=cat(2), Cc=cat(3), Dc=cat(4),
              t_node=np.array(tn, np.int64), t_coord=np.array(tc, np.int64),
              t_col=np.array(tcol, np.int64), t_axis=np.array(tax, float).reshape(-1, 3),
              t_spec=np.array(tsp, np.int64).reshape(-1, 3), t_par=np.array(tpa, float).reshape(-1, 3))
    fd._kernel = kt
    return kt


def _encode_function(f, knots):
    """(spec (kind, offset, n), params (scale, p0, p1)) of an axis function for the kernel, its
    spline knots and coefficients appended to ``knots``; None for a function kind the kernel
    does not evaluate."""
    from ..models.functions import (Constant, LinearFunction, MultiplierFunction,
                                    NaturalCubicSpline, SimmSpline)
    from .station_kernel import F_CONSTANT, F_IDENTITY, F_LINEAR, F_SPLINE
    scale = 1.0
    while type(f) is MultiplierFunction:
        scale *= f.scale
        f = f.function
    if f is None:
        return ((F_IDENTITY, 0, 0), (1.0, 0.0, 0.0)) if scale == 1.0 else None
    if type(f) is Constant:
        return (F_CONSTANT, 0, 0), (scale, float(f.constant), 0.0)
    if type(f) is LinearFunction:
        return (F_LINEAR, 0, 0), (scale, float(f.slope), float(f.intercept))
    if type(f) in (SimmSpline, NaturalCubicSpline) and len(f.x) >= 1:
        off = sum(len(kn[0]) for kn in knots)
        knots.append(tuple(np.asarray(a, float).reshape(-1) for a in (f.x, f.y, f._b, f._c, f._d)))
        return (F_SPLINE, off, len(f.x)), (scale, 0.0, 0.0)
    return None


class StationKinematics:
    """Ground positions and Jacobians of a fixed set of stations of a compiled tree.

    Parameters
    ----------
    tree : Tree
    bodies : (n,) int, body index of each station (-1 = ground)
    locations : (n, 3) m, station locations in their body frames
    names : optional list of n names (kept as ``names``)

    Attributes
    ----------
    compiled : bool (default False), evaluate with the numba kernel when numba is installed
        (:func:`compiled_kernel`); the numbers agree with the NumPy loop to 1e-12
    """

    compiled: bool = False

    def __init__(self, tree: Tree, bodies, locations, names=None):
        fold = _fold(tree)
        self.fold = fold
        self.tree = tree
        self.nq = tree.nq
        bodies = np.asarray(bodies, int).reshape(-1)
        locations = np.asarray(locations, float).reshape(-1, 3)
        if len(bodies) != len(locations):
            raise ValueError("StationKinematics: bodies and locations differ in length "
                             f"({len(bodies)} and {len(locations)})")
        self.names = list(names) if names is not None else None
        mv, mloc = [], []
        for b, loc in zip(bodies, locations):
            node = 0 if b < 0 else int(tree.body_node[b])
            v, R, p = fold.var_of[node]
            mv.append(v)
            mloc.append(R @ loc + p)
        self.m_var = np.array(mv, int).reshape(-1)
        self._mv64 = self.m_var.astype(np.int64)
        self.m_loc = np.array(mloc, float).reshape(-1, 3)
        self.A = _moved_by(fold)[self.m_var + 1]             # (n, ncol): column moves station
        self.AC = self.A[:, :, None] * fold.Cmap[None, :, :]  # (n, ncol, nq)

    @classmethod
    def for_markers(cls, tree: Tree, names) -> "StationKinematics":
        """The stations of the tree's markers ``names`` (``tree.markers`` order if None)."""
        names = list(tree.markers) if names is None else list(names)
        bodies = [tree.markers[n][0] for n in names]
        locs = np.array([tree.markers[n][1] for n in names], float).reshape(-1, 3)
        return cls(tree, bodies, locs, names)

    def __len__(self):
        return len(self.m_var)

    def evaluate(self, q, rows=None, jac=True):
        """Positions (n, 3) m and Jacobian (n, 3, nq) (None with ``jac=False``) at one pose.

        Parameters
        ----------
        q : (nq,) rad / m
        rows : indices of the stations wanted (default all)
        """
        if self.compiled and compiled_kernel() is not None:
            P, J = self._evaluate_compiled(np.asarray(q, float)[None, :])
            if rows is not None:
                P, J = P[:, rows], J[:, rows]
            return P[0], (J[0] if jac else None)
        fd = self.fold
        n = fd.n
        Rst = np.empty((n + 1, 3, 3))
        ost = np.empty((n + 1, 3))
        Rst[0] = np.eye(3)
        ost[0] = 0.0
        ncol = len(fd.cols)
        W = np.zeros((ncol, 3))
        V = np.zeros((ncol, 3))
        O = np.zeros((ncol, 3))
        j = 0
        I3 = np.eye(3)
        parent, R0, p0, kinds = fd.parent, fd.R0, fd.p0, fd.kind
        for k in range(n):
            p = parent[k] + 1
            Rp = Rst[p]
            Rf = Rp @ R0[k]
            of = ost[p] + Rp @ p0[k]
            kind = kinds[k]
            if kind == "rot":
                th, d1 = _fd(fd.func[k], q[fd.coord[k]])
                s, c = math.sin(th), math.cos(th)
                Rst[k + 1] = Rf @ (I3 + s * fd.K[k] + (1.0 - c) * fd.K2[k])
                ost[k + 1] = of
                W[j] = (Rf @ fd.axis[k]) * d1
                O[j] = of
                j += 1
            elif kind == "trans":
                pl = np.zeros(3)
                dc = {}
                for c_, f, ax in fd.terms[k]:
                    val, d1 = _fd(f, q[c_])
                    pl = pl + val * ax
                    dc[c_] = dc.get(c_, 0.0) + d1 * ax
                Rst[k + 1] = Rf
                ost[k + 1] = of + Rf @ pl
                for c_ in fd.ccoords[k]:
                    V[j] = Rf @ dc[c_]
                    j += 1
            else:  # ellip
                c0, c1 = fd.ccoords[k]
                pl, Jl, _ = _ellip_local(fd.radii[k], np.array([q[c0]]), np.array([q[c1]]))
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
        d = P[:, None, :] - O[None, :, :]
        cr = cross(W[None, :, :], d) + V[None, :, :]
        J = np.einsum("mj,mjx,jc->mxc", A, cr, fd.Cmap)
        return P, J

    def evaluate_batch(self, Q, hinges: bool = False):
        """Positions (B, n, 3) m and Jacobians (B, n, 3, nq) at B poses Q (B, nq).

        With ``hinges=True`` also the hinge columns :class:`Hinges` at those poses (what
        :meth:`second_order` needs; on the compiled route they come from the NumPy pose loop)."""
        Q = np.asarray(Q, float)
        if self.compiled and compiled_kernel() is not None:
            P, J = self._evaluate_compiled(Q)
            if hinges:
                _, _, W, V, O, W2, V2 = self._pose_loop(Q, True)
                return P, J, Hinges(W, V, O, W2, V2)
            return P, J
        Rst, ost, W, V, O, W2, V2 = self._pose_loop(Q, hinges)
        B = Q.shape[0]
        ncol = W.shape[0]
        mv = self.m_var + 1
        P = self._place(Rst, ost)
        # point velocity per column, v + ω × (P − o), component by component: (B, n, 3, ncol)
        Px, Py, Pz = (P[:, :, i, None] for i in range(3))
        Wx, Wy, Wz = (W[:, :, i].T[:, None, :] for i in range(3))
        Vx, Vy, Vz = (V[:, :, i].T[:, None, :] for i in range(3))
        Ox, Oy, Oz = (O[:, :, i].T[:, None, :] for i in range(3))
        dx, dy, dz = Px - Ox, Py - Oy, Pz - Oz
        cr = np.empty((B, len(mv), 3, ncol))
        cr[:, :, 0] = Wy * dz - Wz * dy + Vx
        cr[:, :, 1] = Wz * dx - Wx * dz + Vy
        cr[:, :, 2] = Wx * dy - Wy * dx + Vz
        if hinges:
            return P, cr @ self.AC, Hinges(W, V, O, W2, V2)
        return P, cr @ self.AC

    def positions_batch(self, Q):
        """Positions (B, n, 3) m at B poses Q (B, nq): those of :meth:`evaluate_batch`, without
        the Jacobian."""
        Q = np.asarray(Q, float)
        if self.compiled and compiled_kernel() is not None:
            return self._evaluate_compiled(Q)[0]
        return self._place(*self._pose_loop(Q)[:2])

    def evaluate_weighted(self, Q, sw, free, out, hinges: bool = False):
        """Positions (B, n, 3) m at B poses Q (B, nq), and the station Jacobians weighted per
        station and frame and restricted to the coordinates ``free``, written into
        ``out[:, :3n]``: ``out[b, 3m + i, f] = sw[b, m] ∂x_mi/∂q_free[f]`` (what a
        least-squares problem over weighted station residuals stacks; ``out`` (B, ≥3n,
        len(free)) C-contiguous, its other rows untouched). Returns P, or (P, Hinges) with
        ``hinges`` (as :meth:`evaluate_batch`).

        The same numbers as ``evaluate_batch(Q)[1][..., free] * sw`` (to rounding), computed
        only where a column moves a station (:meth:`_weighted_plan`): each such entry is
        ``ω_j × x_m + (v_j − ω_j × o_j)``, columns of the same coordinate summed."""
        Q = np.asarray(Q, float)
        B, n, nf = Q.shape[0], len(self.m_var), len(free)
        if self.compiled and compiled_kernel() is not None:
            res = self.evaluate_batch(Q, hinges)
            np.multiply(res[1][:, :, :, free], sw[:, :, None, None],
                        out=out[:, :3 * n].reshape(B, n, 3, nf))
            return (res[0], res[2]) if hinges else res[0]
        Rst, ost, W, V, O, W2, V2 = self._pose_loop(Q, hinges)
        P = self._place(Rst, ost)
        Wx, Wy, Wz = W[:, :, 0], W[:, :, 1], W[:, :, 2]       # (ncol, B)
        Ox, Oy, Oz = O[:, :, 0], O[:, :, 1], O[:, :, 2]
        Cx = V[:, :, 0] - (Wy * Oz - Wz * Oy)                  # v − ω × o
        Cy = V[:, :, 1] - (Wz * Ox - Wx * Oz)
        Cz = V[:, :, 2] - (Wx * Oy - Wy * Ox)
        PT = P.transpose(1, 2, 0)                               # (n, 3, B)
        swT = np.asarray(sw, float).T
        if not out.flags.c_contiguous:
            raise ValueError("StationKinematics.evaluate_weighted: out must be C-contiguous")
        flat = out.reshape(B, -1)
        flat[:, :3 * n * nf] = 0.0
        for layer, (mk, jk, idx) in enumerate(self._weighted_plan(free)):
            px, py, pz = PT[mk, 0], PT[mk, 1], PT[mk, 2]        # (K, B)
            wx, wy, wz = Wx[jk], Wy[jk], Wz[jk]
            s = swT[mk]
            for i, e in enumerate(((wy * pz - wz * py + Cx[jk]) * s,
                                   (wz * px - wx * pz + Cy[jk]) * s,
                                   (wx * py - wy * px + Cz[jk]) * s)):
                if layer == 0:
                    flat[:, idx[i]] = e.T
                else:
                    flat[:, idx[i]] += e.T
        if hinges:
            return P, Hinges(W, V, O, W2, V2)
        return P

    def _place(self, Rst, ost):
        """Positions (B, n, 3) of the stations from the frames Rst, ost of :meth:`_pose_loop`."""
        mv = self.m_var + 1
        return np.einsum("mbij,mj->bmi", Rst[mv], self.m_loc) + ost[mv].transpose(1, 0, 2)

    def _weighted_plan(self, free):
        """The (station, column) pairs of :meth:`evaluate_weighted` for the coordinates
        ``free`` (pose independent, once per ``free``): layers of pairs (stations (K,),
        columns (K,), flat indices into ``out[b]`` (3, K) of the x, y, z rows), each (station,
        coordinate) at most once per layer; a coordinate with several hinge columns (a knee's
        rotation and its coupled translation) adds its second column in a second layer."""
        free = np.asarray(free, int)
        key = free.tobytes()
        plans = self.__dict__.setdefault("_plans", {})
        plan = plans.get(key)
        if plan is not None:
            return plan
        fd = self.fold
        nf = len(free)
        where = {int(c): f for f, c in enumerate(free)}
        fcol = [where.get(int(c), -1) for c in fd.col_coord]
        seen: dict = {}
        layers: dict = {}
        for m, j in zip(*np.nonzero(self.A)):
            if fcol[j] < 0:
                continue
            layer = seen.get((m, fcol[j]), 0)
            seen[(m, fcol[j])] = layer + 1
            layers.setdefault(layer, []).append((m, j))
        plan = []
        for layer in sorted(layers):
            mk = np.array([m for m, _ in layers[layer]], np.intp)
            jk = np.array([j for _, j in layers[layer]], np.intp)
            f = np.array([fcol[j] for j in jk], np.intp)
            plan.append((mk, jk, np.stack([(3 * mk + i) * nf + f for i in range(3)])))
        plans[key] = plan
        return plan

    def _pose_loop(self, Q, second=False):
        """The frames of the variable nodes and the hinge columns at B poses: Rst (n+1, B, 3, 3),
        ost (n+1, B, 3), W, V, O (ncol, B, 3) (angular and linear velocity per unit column, axis
        origin) and, with ``second``, W2, V2 (ncol, B, 3): their derivatives along their own
        coordinate through the axis functions' second derivatives (else None)."""
        fd = self.fold
        B = Q.shape[0]
        n = fd.n
        bt = _batch_tables(fd)
        Rst = np.empty((n + 1, B, 3, 3))
        ost = np.empty((n + 1, B, 3))
        Rst[0] = np.eye(3)
        ost[0] = 0.0
        ncol = len(fd.cols)
        W = np.zeros((ncol, B, 3))
        V = np.zeros((ncol, B, 3))
        O = np.zeros((ncol, B, 3))
        W2 = V2 = None
        if second:
            W2 = np.zeros((ncol, B, 3))
            V2 = np.zeros((ncol, B, 3))
        # every rotation at once: M_k = R0_k (I + sin θ K + (1 − cos θ) K²), (nrot, B, 3, 3)
        rot = bt["rot"]
        D1, D2 = {}, {}
        if rot:
            TH = Q[:, bt["rot_coord"]]
            for i, f in bt["rot_func"]:
                TH[:, i], D1[i] = f.value_and_derivative(Q[:, bt["rot_coord"][i]])
                if second:
                    D2[i] = _second_derivative(f, Q[:, bt["rot_coord"][i]])
            TH = TH.T
            M = (bt["R0"][:, None] + np.sin(TH)[:, :, None, None] * bt["R0K"][:, None]
                 + (1.0 - np.cos(TH))[:, :, None, None] * bt["R0K2"][:, None])
        rot_index, p0_zero = bt["rot_index"], bt["p0_zero"]
        for k in range(n):
            p = fd.parent[k] + 1
            Rp = Rst[p]
            i = rot_index[k]
            if i >= 0:                        # rotation: one product for the frame and the angle
                np.matmul(Rp, M[i], out=Rst[k + 1])
                if p0_zero[k]:
                    ost[k + 1] = ost[p]
                else:
                    np.add(ost[p], Rp @ fd.p0[k], out=ost[k + 1])
                continue
            j = bt["col0"][k]
            if fd.ident[k]:
                Rf, of = Rp, ost[p]
            else:
                Rf = Rp @ fd.R0[k]
                of = ost[p] + Rp @ fd.p0[k]
            if fd.kind[k] == "trans":
                pl = np.zeros((B, 3))
                dc, dc2 = {}, {}
                for c_, f, ax in fd.terms[k]:
                    val, d1 = _fd_batch(f, Q[:, c_])
                    if second and f is not None:
                        dc2[c_] = dc2.get(c_, 0.0) + _second_derivative(f, Q[:, c_])[:, None] * ax
                    pl += val[:, None] * ax
                    dc[c_] = dc.get(c_, 0.0) + d1[:, None] * ax
                Rst[k + 1] = Rf
                ost[k + 1] = of + np.einsum("bij,bj->bi", Rf, pl)
                for c_ in fd.ccoords[k]:
                    V[j] = np.einsum("bij,bj->bi", Rf, np.broadcast_to(dc[c_], (B, 3)))
                    if c_ in dc2:
                        V2[j] = np.einsum("bij,bj->bi", Rf, dc2[c_])
                    j += 1
            else:
                c0, c1 = fd.ccoords[k]
                pl, Jl, _ = _ellip_local(fd.radii[k], Q[:, c0], Q[:, c1])
                Rst[k + 1] = Rf
                ost[k + 1] = of + np.einsum("bij,bj->bi", Rf, pl)
                Hv = Rf @ Jl
                V[j] = Hv[:, :, 0]
                V[j + 1] = Hv[:, :, 1]
        if rot:                # the rotation columns at once: ω = R_parent R0 axis θ', o = origin
            rc = bt["rot_col"]
            w = np.matmul(Rst[bt["rot_parent"]], bt["R0axis"][:, None, :, None])[..., 0]
            for i in D2:
                W2[rc[i]] = w[i] * D2[i][:, None]
            for i in D1:
                w[i] *= D1[i][:, None]
            W[rc] = w
            O[rc] = ost[bt["rot_node1"]]
        return Rst, ost, W, V, O, W2, V2

    @property
    def has_second_order(self) -> bool:
        """Whether :meth:`second_order` is exact for this tree (no Ellipsoid mobilizer: the
        cross terms of its two coordinates are not modelled there)."""
        return "ellip" not in self.fold.kind

    def second_order(self, P, R, h: "Hinges"):
        """Σ_m R_m · ∂²x_m/∂q∂q, (B, nq, nq): the second-order term of a least-squares Hessian
        (Newton's Σ rᵢ∇²rᵢ for residuals r = w (x − x_obs): pass R = w² (x − x_obs)).

        For hinge columns i, j both moving station m with i's node an ancestor of j's (or i = j),
        ∂²x/∂i∂j = ω_i × (v_j + ω_j × (x − o_j)) (the rigid motion of column i carries column j's
        velocity along); a column's own axis function adds its second derivative (ω f'' × (x − o)
        for a rotation, R_F Σ f'' a for a translation). The sum over the stations is taken per
        column first (Σ A r, Σ A x rᵀ), so no (B, n, ncol) array is formed.

        Parameters
        ----------
        P (B, n, 3) m and h from :meth:`evaluate_batch` (``hinges=True``) at the same poses;
        R (B, n, 3)
        """
        fd = self.fold
        B = P.shape[0]
        ncol = len(fd.cols)
        A = self.A
        W, V, O = (a.transpose(1, 0, 2) for a in (h.W, h.V, h.O))          # (B, ncol, 3)
        n = P.shape[1]
        # Σ_m A_mj r_m (B, ncol, 3) and Σ_m A_mj x_m r_mᵀ (B, ncol, 3, 3): one product with A
        PR = np.concatenate([R, (P[:, :, :, None] * R[:, :, None, :]).reshape(B, n, 9)], axis=2)
        T = (PR.transpose(0, 2, 1).reshape(B * 12, n) @ A).reshape(B, 12, ncol).transpose(0, 2, 1)
        Rs = T[:, :, :3]
        XR = T[:, :, 3:].reshape(B, ncol, 3, 3)
        wr = np.einsum("bjx,bjx->bj", W, Rs)
        s_ = XR[:, :, 0, 0] + XR[:, :, 1, 1] + XR[:, :, 2, 2] - np.einsum("bjx,bjx->bj", O, Rs)
        Z = ((XR @ W[:, :, :, None])[:, :, :, 0] - O * wr[:, :, None] - W * s_[:, :, None]
             + cross(V, Rs))
        U = (W @ Z.transpose(0, 2, 1)) * _ancestor_mask(fd)
        S = U + np.swapaxes(U, 1, 2)
        d = np.arange(ncol)
        S[:, d, d] -= U[:, d, d]
        if h.V2 is not None:
            S[:, d, d] += np.einsum("bjx,bjx->bj", h.V2.transpose(1, 0, 2), Rs)
            W2 = h.W2.transpose(1, 0, 2)
            XxR = np.stack([XR[:, :, 1, 2] - XR[:, :, 2, 1], XR[:, :, 2, 0] - XR[:, :, 0, 2],
                            XR[:, :, 0, 1] - XR[:, :, 1, 0]], axis=-1)      # Σ_m A x × r
            S[:, d, d] += np.einsum("bjx,bjx->bj", W2, XxR - cross(O, Rs))
        C = fd.Cmap
        return C.T @ S @ C

    def _evaluate_compiled(self, Q):
        """:meth:`evaluate_batch` through the compiled kernel: the functions of the axes
        (angles, translations, ellipsoid) in NumPy, the pose loop and the Jacobian compiled."""
        fd = self.fold
        kern = compiled_kernel()            # imports station_kernel before the tables use it
        kt = _kernel_tables(fd)
        B = Q.shape[0]
        n = fd.n
        ncol = len(fd.cols)
        TH = np.zeros((B, n))
        D1 = np.ones((B, n))
        PL = np.zeros((B, n, 3))
        VL = np.zeros((B, ncol, 3))
        for k in kt["pre_nodes"]:
            if fd.kind[k] == "rot":
                TH[:, k], D1[:, k] = _fd_batch(fd.func[k], Q[:, fd.coord[k]])
                continue
            j = kt["col0"].get(k, ncol)
            if fd.kind[k] == "trans":
                dc = {}
                for c_, f, ax in fd.terms[k]:
                    val, d1 = _fd_batch(f, Q[:, c_])
                    PL[:, k] += val[:, None] * ax
                    dc[c_] = dc.get(c_, 0.0) + d1[:, None] * ax
                for i, c_ in enumerate(fd.ccoords[k]):
                    VL[:, j + i] = dc[c_]
            else:
                c0, c1 = fd.ccoords[k]
                pl, Jl, _ = _ellip_local(fd.radii[k], Q[:, c0], Q[:, c1])
                PL[:, k] = pl
                VL[:, j] = Jl[:, :, 0]
                VL[:, j + 1] = Jl[:, :, 1]
        return kern(kt["kind"], kt["parent"], kt["R0"], kt["p0"], kt["ident"], kt["axis"], kt["K"],
                    kt["K2"], TH, D1, PL, VL, kt["col_node"], kt["col_coord"], self._mv64,
                    self.m_loc, self.A, int(self.nq), Q, kt["pre"], kt["ncoord"], kt["fspec"],
                    kt["fpar"], kt["X"], kt["Y"], kt["Bc"], kt["Cc"], kt["Dc"], kt["t_node"],
                    kt["t_coord"], kt["t_col"], kt["t_axis"], kt["t_spec"], kt["t_par"])


def station_jacobian(tree: Tree, q, bodies, locations):
    """Ground positions and Jacobians ``∂x/∂q`` of stations fixed on bodies.

    Parameters
    ----------
    tree : Tree
    q : (nq,) or (T, nq), rad / m
    bodies : (n,) int body indices (-1 = ground); locations : (n, 3) m in the body frames

    Returns
    -------
    P : (n, 3) or (T, n, 3) m; J : (n, 3, nq) or (T, n, 3, nq) m per unit coordinate
    """
    sk = StationKinematics(tree, bodies, locations)
    q = np.asarray(q, float)
    if q.ndim == 1:
        return sk.evaluate(q)
    return sk.evaluate_batch(q)


def marker_jacobian(tree: Tree, q, names=None):
    """:func:`station_jacobian` of the tree's markers ``names`` (all, in ``tree.markers`` order,
    if None). Returns (names, P, J)."""
    sk = StationKinematics.for_markers(tree, names)
    q = np.asarray(q, float)
    P, J = sk.evaluate(q) if q.ndim == 1 else sk.evaluate_batch(q)
    return sk.names, P, J


def _second_derivative(f, x):
    """f''(x) (B,) of an axis function: splines (also inside MultiplierFunctions) through one
    interval search, other functions through ``f.derivative(x, 2)``. Only the Newton term of
    IK uses it (outside the knots a spline continues as a line: 0)."""
    from ..models.functions import MultiplierFunction, SimmSpline
    scale = 1.0
    while type(f) is MultiplierFunction:
        scale *= f.scale
        f = f.function
    if isinstance(f, SimmSpline) and len(f.x) >= 2:
        xk = f.x
        k = np.searchsorted(xk[1:-1], x, side="right")
        d2 = 2.0 * f._c[k] + 6.0 * (x - xk[k]) * f._d[k]
        return scale * np.where((x < xk[0]) | (x > xk[-1]), 0.0, d2)
    return scale * np.asarray(f.derivative(x, 2), float)


class Hinges:
    """Hinge columns of a batch of poses (see :meth:`StationKinematics._pose_loop`)."""

    __slots__ = ("W", "V", "O", "W2", "V2")

    def __init__(self, W, V, O, W2, V2):
        self.W, self.V, self.O, self.W2, self.V2 = W, V, O, W2, V2


def _moved_by(fd: "_Fold"):
    """(n + 1, ncol): row v + 1 is 1 where hinge column j moves the frame of variable node v
    (the column's node is v or one of its ancestors); row 0 (ground) is 0. Once per fold."""
    m = getattr(fd, "_moved_by", None)
    if m is None:
        m = np.zeros((fd.n + 1, len(fd.cols)))
        for v in range(fd.n):
            chain = fd.anc[v] | {v}
            m[v + 1] = [1.0 if k in chain else 0.0 for k, _ in fd.cols]
        fd._moved_by = m
    return m


def _ancestor_mask(fd: "_Fold"):
    """(ncol, ncol): 1 where column i's node is an ancestor of column j's node or i = j."""
    m = getattr(fd, "_anc_mask", None)
    if m is None:
        nodes = [k for k, _ in fd.cols]
        m = np.array([[1.0 if (a == b or ki in fd.anc[kj]) else 0.0
                       for b, kj in enumerate(nodes)] for a, ki in enumerate(nodes)])
        fd._anc_mask = m
    return m


def _batch_tables(fd: "_Fold"):
    """Pose-independent arrays of the fold for :meth:`StationKinematics.evaluate_batch` (once
    per fold): the rotation nodes' ``R0``, ``R0 K``, ``R0 K²`` and ``R0 axis`` stacked, their
    coordinates and axis functions, and each node's first hinge column."""
    bt = getattr(fd, "_batch", None)
    if bt is not None:
        return bt
    rot = [k for k in range(fd.n) if fd.kind[k] == "rot"]
    R0 = np.array([fd.R0[k] for k in rot], float).reshape(-1, 3, 3)
    K = np.array([fd.K[k] for k in rot], float).reshape(-1, 3, 3)
    K2 = np.array([fd.K2[k] for k in rot], float).reshape(-1, 3, 3)
    ax = np.array([fd.axis[k] for k in rot], float).reshape(-1, 3)
    col0, j = [], 0
    for k in range(fd.n):
        col0.append(j)
        j += 1 if fd.kind[k] == "rot" else len(fd.ccoords[k])
    index = np.full(fd.n, -1, int)
    index[rot] = np.arange(len(rot))
    bt = dict(rot=rot, rot_index=index.tolist(), R0=R0, R0K=R0 @ K, R0K2=R0 @ K2,
              rot_col=np.array([col0[k] for k in rot], np.intp),
              rot_parent=np.array([fd.parent[k] + 1 for k in rot], np.intp),
              rot_node1=np.array([k + 1 for k in rot], np.intp),
              R0axis=np.einsum("kij,kj->ki", R0, ax),
              rot_coord=np.array([fd.coord[k] for k in rot], int),
              rot_func=[(i, fd.func[k]) for i, k in enumerate(rot) if fd.func[k] is not None],
              col0=col0, p0_zero=[not np.any(p) for p in fd.p0])
    fd._batch = bt
    return bt
