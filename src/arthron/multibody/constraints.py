"""Kinematic constraints of a model: residuals, Jacobians, and assembly like OpenSim's.

Supported: PointConstraint (3 equations), WeldConstraint (6: origins coincide, axes align),
ConstantDistanceConstraint (1), PointOnLineConstraint (2: the follower point's offset from the
line along two normals to it),
CoordinateCouplerConstraint (1: ``q_dep = scale · f(q_ind)``), PointOnEllipsoidConstraint (1: a
point of one body on an ellipsoid fixed to another body or ground, ``Σ ((p_i − c_i)/r_i)² − 1``
with p in the ellipsoid's frame; the scapulothoracic constraints of Eq. 10 in Sarshari et al.
2021, the shoulder–elbow model; arthron's own, OpenSim has no such class), and locked
coordinates (fixed at their value). Other constraint classes raise :class:`UnsupportedFeature` when enabled.

:func:`assemble` reproduces ``Model::assemble``/Simbody's Assembler as OpenSim's tools call it
after setting coordinate values: the coordinates closest (unit weights) to the requested values
that satisfy the constraints, locked coordinates held.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFileError, SolverError, UnsupportedFeature
from ..geometry.spatial import rotation_xyz
from .kinematics import Tree, forward_kinematics, velocity_map
from ..models.model import Model, Transform

__all__ = ["ConstraintSet", "compile_constraints", "assemble"]


class ConstraintSet:
    """Constraints compiled against a :class:`Tree`.

    ``residuals(q)`` → (T, m); ``jacobian(q)`` → (T, m, nq) (∂c/∂q).
    """

    def __init__(self, model: Model, tree: Tree):
        self.tree = tree
        self.items = []
        for c in model.constraints:
            if not c.enabled:
                continue
            p = c.properties
            if c.type in ("PointConstraint", "WeldConstraint", "ConstantDistanceConstraint"):
                b1, X1 = model.frame_in_base(p["body_1"])
                b2, X2 = model.frame_in_base(p["body_2"])
                i1, i2 = tree.body_index(b1), tree.body_index(b2)
                if c.type == "PointConstraint":
                    l1 = X1.apply(p.get("location_body_1", np.zeros(3)))
                    l2 = X2.apply(p.get("location_body_2", np.zeros(3)))
                    self.items.append(("point", c.name, i1, l1, i2, l2))
                elif c.type == "ConstantDistanceConstraint":
                    l1 = X1.apply(p.get("location_body_1", np.zeros(3)))
                    l2 = X2.apply(p.get("location_body_2", np.zeros(3)))
                    self.items.append(("distance", c.name, i1, l1, i2, l2, float(p["constant_distance"])))
                else:
                    self.items.append(("weld", c.name, i1, X1, i2, X2))
            elif c.type == "PointOnLineConstraint":
                self.items.append(_line_item(model, tree, c))
            elif c.type == "PointOnEllipsoidConstraint":
                self.items.append(_ellipsoid_item(model, tree, c))
            elif c.type == "CoordinateCouplerConstraint":
                ind = [tree.coordinate_index(n) for n in p["independent_coordinates"]]
                if len(ind) != 1:
                    raise UnsupportedFeature(f"CoordinateCouplerConstraint '{c.name}' with {len(ind)} "
                                             "independent coordinates", model.source)
                dep = tree.coordinate_index(p["dependent_coordinate"])
                self.items.append(("coupler", c.name, ind[0], dep, p["function"], float(p.get("scale_factor", 1.0))))
            else:
                raise UnsupportedFeature(f"constraint type {c.type} ('{c.name}')", model.source)

    _ROWS = {"point": ("x", "y", "z"), "weld": ("rx", "ry", "rz", "x", "y", "z"),
             "distance": ("",), "coupler": ("",), "ellipsoid": ("",), "line": ("u", "v")}

    @property
    def size(self) -> int:
        return sum(len(self._ROWS[it[0]]) for it in self.items)

    def row_labels(self) -> list:
        """(m,) [(constraint name, kind, row label)] in the order of the residual rows; kind is
        "point", "weld", "distance", "coupler", "ellipsoid" (a PointOnEllipsoidConstraint) or
        "line" (a PointOnLineConstraint, two rows across the line);
        the label names the row (``<name>_x`` ...; the name itself for one-row constraints)."""
        return [(it[1], it[0], f"{it[1]}_{r}" if r else it[1]) for it in self.items
                for r in self._ROWS[it[0]]]

    def _points(self, kin, b, loc):
        if b < 0:
            return np.broadcast_to(loc, kin.o.shape[:1] + (3,))
        n = self.tree.body_node[b]
        return kin.o[:, n] + kin.R[:, n] @ loc

    def _frame_R(self, kin, b, X):
        if b < 0:
            return np.broadcast_to(X.R, kin.o.shape[:1] + (3, 3))
        return kin.R[:, self.tree.body_node[b]] @ X.R

    def _line_normals(self, kin, it) -> np.ndarray:
        """(T, 2, 3) world unit vectors normal to a PointOnLineConstraint's line (fixed in the
        line body): the residuals are the follower point's offset from the line along them."""
        return np.einsum("tij,kj->tki", self._frame_R(kin, it[2], Transform()), it[6])

    def _ellipsoid_frame(self, kin, it):
        """(R (T, 3, 3), o (T, 3)) of the ellipsoid frame E (centre, orientation) in ground."""
        XE = it[5]
        return self._frame_R(kin, it[4], XE), self._points(kin, it[4], XE.p)

    def _ellipsoid_local(self, kin, it) -> np.ndarray:
        """The constrained point in the ellipsoid frame E (origin at the centre), (T, 3)."""
        RE, oE = self._ellipsoid_frame(kin, it)
        return np.einsum("tji,tj->ti", RE, self._points(kin, it[2], it[3]) - oE)

    def ellipsoid_gradient(self, kin, it) -> np.ndarray:
        """World gradient ``g = R_E (2 p_E / r²)`` (T, 3) of a PointOnEllipsoidConstraint's
        Φ with respect to its point (1/m): the constraint force on the point is ``μ g``."""
        RE, _ = self._ellipsoid_frame(kin, it)
        return np.einsum("tij,tj->ti", RE, 2.0 * self._ellipsoid_local(kin, it) / it[6] ** 2)

    def residuals(self, q) -> np.ndarray:
        q = np.atleast_2d(q)
        kin = forward_kinematics(self.tree, q)
        out = []
        for it in self.items:
            if it[0] == "point":
                out.append(self._points(kin, it[2], it[3]) - self._points(kin, it[4], it[5]))
            elif it[0] == "distance":
                d = self._points(kin, it[2], it[3]) - self._points(kin, it[4], it[5])
                out.append((np.linalg.norm(d, axis=-1) - it[6])[:, None])
            elif it[0] == "coupler":
                _, _, ind, dep, f, s = it
                out.append((q[:, dep] - s * f.value(q[:, ind]))[:, None])
            elif it[0] == "ellipsoid":
                pE = self._ellipsoid_local(kin, it)
                out.append((np.sum((pE / it[6]) ** 2, axis=-1) - 1.0)[:, None])
            elif it[0] == "line":
                r = self._points(kin, it[4], it[5]) - self._points(kin, it[2], it[3])
                N = self._line_normals(kin, it)                       # (T, 2, 3)
                out.append(np.einsum("tki,ti->tk", N, r))
            else:  # weld: frame origins coincide and axes align
                _, _, i1, X1, i2, X2 = it
                R1, R2 = self._frame_R(kin, i1, X1), self._frame_R(kin, i2, X2)
                out.append(self._points(kin, i1, X1.p) - self._points(kin, i2, X2.p))
                # ½ Σ x1_i × x2_i: zero when the frames align, ≈ rotation vector from 1 to 2
                out.append(0.5 * np.cross(R1, R2, axisa=1, axisb=1, axisc=1).sum(axis=2))
        return np.concatenate(out, -1) if out else np.zeros((q.shape[0], 0))

    def jacobian(self, q) -> np.ndarray:
        q = np.atleast_2d(q)
        kin = forward_kinematics(self.tree, q)
        D = velocity_map(self.tree, q, kin, point="origin")
        T = q.shape[0]
        rows = []

        def point_jac(b, loc):
            if b < 0:
                return np.zeros((T, 3, self.tree.nq))
            n = self.tree.body_node[b]
            r = kin.R[:, n] @ loc
            return D[:, b, :3] + np.cross(D[:, b, 3:], r[:, :, None], axis=1)

        def world_point_jac(b, P):                     # material point of b at world P (T, 3)
            if b < 0:
                return np.zeros((T, 3, self.tree.nq))
            r = P - kin.o[:, self.tree.body_node[b]]
            return D[:, b, :3] + np.cross(D[:, b, 3:], r[:, :, None], axis=1)

        for it in self.items:
            if it[0] == "point":
                rows.append(point_jac(it[2], it[3]) - point_jac(it[4], it[5]))
            elif it[0] == "distance":
                d = self._points(kin, it[2], it[3]) - self._points(kin, it[4], it[5])
                u = d / np.linalg.norm(d, axis=-1, keepdims=True)
                rows.append(np.einsum("ti,tik->tk", u, point_jac(it[2], it[3]) - point_jac(it[4], it[5]))[:, None])
            elif it[0] == "coupler":
                _, _, ind, dep, f, s = it
                J = np.zeros((T, 1, self.tree.nq))
                J[:, 0, dep] = 1.0
                J[:, 0, ind] -= s * f.derivative(q[:, ind], 1)
                rows.append(J)
            elif it[0] == "line":
                # d/dt n·(P_f − P_l) = n·(v_f − v_l(P_f)) with v_l(P_f) the velocity of the line
                # body's material point at P_f (the terms of ṅ = ω_l × n cancel)
                P = self._points(kin, it[4], it[5])
                N = self._line_normals(kin, it)
                rows.append(np.einsum("tki,tiq->tkq", N, point_jac(it[4], it[5])
                                      - world_point_jac(it[2], P)))
            elif it[0] == "ellipsoid":
                # Φ̇ = g · (v₁(P) − v₂(P)): g the world gradient, v₂(P) the velocity of the
                # material point of the ellipsoid's body at P
                P = self._points(kin, it[2], it[3])
                g = self.ellipsoid_gradient(kin, it)
                rows.append(np.einsum("ti,tik->tk", g, point_jac(it[2], it[3])
                                      - world_point_jac(it[4], P))[:, None])
            else:  # weld
                _, _, i1, X1, i2, X2 = it
                rows.append(point_jac(i1, X1.p) - point_jac(i2, X2.p))
                R1, R2 = self._frame_R(kin, i1, X1), self._frame_R(kin, i2, X2)
                Jw1 = np.zeros((T, 3, self.tree.nq)) if i1 < 0 else D[:, i1, 3:]
                Jw2 = np.zeros((T, 3, self.tree.nq)) if i2 < 0 else D[:, i2, 3:]
                # d/dt (a × b) with ȧ = ω1 × a, ḃ = ω2 × b:
                #   (a bᵀ − (a·b) I) ω1 + ((a·b) I − b aᵀ) ω2
                ab = np.einsum("tji,tji->t", R1, R2)[:, None, None] * np.eye(3)
                A1 = np.einsum("tik,tjk->tij", R1, R2) - ab
                A2 = ab - np.einsum("tik,tjk->tij", R2, R1)
                rows.append(0.5 * (A1 @ Jw1 + A2 @ Jw2))
        return np.concatenate(rows, 1) if rows else np.zeros((T, 0, self.tree.nq))


def _line_item(model: Model, tree: Tree, c):
    """("line", name, i_line, point on the line in the line's base body, i_follower, follower
    point in its base body, (2, 3) normals to the line in the line's base body) of a
    PointOnLineConstraint (OpenSim's, Simbody ``Constraint::PointOnLine``: two equations, the
    follower point's offset from the line along two directions normal to it)."""
    p = c.properties
    try:
        bl, Xl = model.frame_in_base(p["line_body"])
        bf, Xf = model.frame_in_base(p["follower_body"])
        d = np.asarray(p.get("line_direction_vec", [1.0, 0.0, 0.0]), float).reshape(3)
        on_line = np.asarray(p.get("point_on_line", np.zeros(3)), float).reshape(3)
        on_follower = np.asarray(p.get("point_on_follower", np.zeros(3)), float).reshape(3)
    except (KeyError, ValueError) as e:
        raise ModelFileError(f"PointOnLineConstraint '{c.name}': bad or missing property ({e})",
                             model.source) from None
    n = np.linalg.norm(d)
    if not np.isfinite(n) or n == 0.0:
        raise ModelFileError(f"PointOnLineConstraint '{c.name}': line_direction_vec must be a "
                             f"non-zero vector (got {d.tolist()})", model.source)
    d = Xl.R @ (d / n)
    e1 = np.cross(d, np.eye(3)[int(np.argmin(np.abs(d)))])
    e1 /= np.linalg.norm(e1)
    normals = np.array([e1, np.cross(d, e1)])
    return ("line", c.name, tree.body_index(bl), Xl.apply(on_line), tree.body_index(bf),
            Xf.apply(on_follower), normals)


def _ellipsoid_item(model: Model, tree: Tree, c):
    """("ellipsoid", name, i_body, location in the body, i_socket, X (ellipsoid frame in the
    socket's base body), radii (3,)) of a PointOnEllipsoidConstraint (properties: see
    :class:`arthron.models.model.Constraint`)."""
    p = c.properties
    try:
        b1, X1 = model.frame_in_base(p["socket_body"])
        b2, X2 = model.frame_in_base(p.get("socket_ellipsoid_frame", "/ground"))
        loc = np.asarray(p["location"], float).reshape(3)
        radii = np.asarray(p["radii"], float).reshape(3)
        center = np.asarray(p.get("center", np.zeros(3)), float).reshape(3)
        orient = np.asarray(p.get("orientation", np.zeros(3)), float).reshape(3)
    except (KeyError, ValueError) as e:
        raise ModelFileError(f"PointOnEllipsoidConstraint '{c.name}': bad or missing property "
                             f"({e})", model.source) from None
    if not (np.all(np.isfinite(radii)) and np.all(radii > 0)):
        raise ModelFileError(f"PointOnEllipsoidConstraint '{c.name}': radii must be positive "
                             f"(got {radii.tolist()})", model.source)
    XE = X2 @ Transform(rotation_xyz(orient), center)
    i1 = tree.body_index(b1)
    i2 = tree.body_index(b2)
    return ("ellipsoid", c.name, i1, X1.apply(loc), i2, XE, radii)


def compile_constraints(model: Model, tree: Tree) -> ConstraintSet:
    """Compile the enabled constraints of ``model`` against ``tree``."""
    return ConstraintSet(model, tree)


def assemble(model: Model, tree: Tree, q_desired, *, tol=1e-12, max_iter=300, constraints=None):
    """Coordinates closest to ``q_desired`` that satisfy the constraints, as ``Model::assemble``.

    Minimizes ``Σ w_i (q_i − q_desired,i)²`` subject to the constraints, vectorized over frames
    (each frame independent). As in OpenSim, locked coordinates are held at their value in
    ``q_desired`` and the dependent coordinate of a CoordinateCouplerConstraint is not tracked
    (weight ~0: it follows from its independent coordinate); every other coordinate has weight 1.
    A clamped coordinate stays within its range, as OpenSim's AssemblySolver restricts it
    (``Assembler::restrictQ``): one the solution leaves outside is held at its bound and its
    frame solved again (OpenSim's restricted optimizer stops short of an active bound, by 2e-5
    rad on the Thoracoscapular model's axial_rot).
    Solved by sequential quadratic programming with the objective's Hessian (Gauss–Newton on the
    constraints): each step is the weighted projection of ``q_desired`` onto the constraints
    linearized at the current iterate, backtracked only if it makes the constraint error grow.
    Where that stalls short of the constraints (strongly curved constraints far from
    ``q_desired``), weighted minimum-norm Newton steps finish onto them: the pose then
    satisfies the constraints but may be slightly farther from ``q_desired`` than the optimum
    (8e-5 rad from OpenSim's assembly on a point held on a line of a moving body).

    Parameters
    ----------
    q_desired : (T, nq) or (nq,)

    Returns
    -------
    (T, nq) assembled coordinates.

    Raises
    ------
    SolverError if the constraints cannot be satisfied to ``tol`` (metres / radians).
    """
    cs = constraints or compile_constraints(model, tree)
    q0 = np.atleast_2d(np.asarray(q_desired, float)).copy()
    if cs.size == 0:
        return q0
    free = np.array([not c.locked for c in model.coordinates.values()])
    winv = np.ones(tree.nq)                       # inverse weights
    for it in cs.items:
        if it[0] == "coupler":
            winv[it[3]] = 1e8                     # the dependent coordinate is not tracked
    winv = np.broadcast_to(winv[free], (q0.shape[0], int(free.sum()))).copy()
    q = _assemble_weighted(model, cs, q0, free, winv, tol, max_iter)
    # clamped coordinates stay within their ranges, as OpenSim's AssemblySolver restricts them
    # (Assembler::restrictQ): one left outside is held at its bound and the frame re-solved
    cl = [i for i, c in enumerate(model.coordinates.values()) if c.clamped and free[i]]
    if cl:
        lo = np.array([min(model.coordinates[n].range) for n in tree.coordinate_names])
        hi = np.array([max(model.coordinates[n].range) for n in tree.coordinate_names])
        col = np.cumsum(free) - 1                 # a free coordinate's column in winv
        for _ in range(len(cl)):
            out = [(t, i) for i in cl for t in np.flatnonzero((q[:, i] < lo[i]) | (q[:, i] > hi[i]))]
            if not out:
                break
            for t, i in out:
                q0[t, i] = min(max(q[t, i], lo[i]), hi[i])
                winv[t, col[i]] = 1e-10
            rows = sorted({t for t, _ in out})
            q[rows] = _assemble_weighted(model, cs, q0[rows], free, winv[rows], tol, max_iter)
    return q


def _assemble_weighted(model: Model, cs, q0, free, winv, tol, max_iter):
    """:func:`assemble`'s solve: coordinates closest to ``q0`` (T, nq) in the metric of the
    inverse weights ``winv`` (T, number of free coordinates) satisfying the constraints ``cs``."""
    winv = winv[:, None, :]
    q = q0.copy()
    c = cs.residuals(q)
    err = np.abs(c).max(axis=1)
    for _ in range(max_iter):
        C = cs.jacobian(q)[:, :, free]                        # (T, m, nf)
        CW = C * winv                                         # C W⁻¹
        # min (q − q0)ᵀW(q − q0) s.t. c(q_k) + C (q − q_k) = 0
        rhs = c + np.einsum("tmk,tk->tm", C, (q0 - q)[:, free])
        CWCt = CW @ np.swapaxes(C, 1, 2)
        lam = np.linalg.solve(CWCt + 1e-14 * np.eye(CWCt.shape[-1]), rhs[..., None])[..., 0]
        step = np.zeros_like(q)
        step[:, free] = q0[:, free] - np.einsum("tmk,tm->tk", CW, lam) - q[:, free]
        alpha = np.ones(q.shape[0])
        for _ls in range(30):
            qn = q + alpha[:, None] * step
            cn = cs.residuals(qn)
            en = np.abs(cn).max(axis=1)
            bad = en > np.maximum(err, 1e-9)
            if not bad.any():
                break
            alpha = np.where(bad, 0.5 * alpha, alpha)
        q, c, err = qn, cn, en
        if err.max() < tol and np.abs(alpha[:, None] * step).max() < 1e-11:
            return q
    if err.max() >= max(tol, 1e-9):
        # stalled (strongly curved constraints far from q_desired, e.g. a point held on a line
        # of another moving body): finish with weighted minimum-norm Newton steps from the last
        # iterate onto the constraints, which converge quadratically there
        for _ in range(30):
            C = cs.jacobian(q)[:, :, free]
            CW = C * winv
            CWCt = CW @ np.swapaxes(C, 1, 2)
            lam = np.linalg.solve(CWCt + 1e-14 * np.eye(CWCt.shape[-1]), c[..., None])[..., 0]
            q[:, free] -= np.einsum("tmk,tm->tk", CW, lam)
            c = cs.residuals(q)
            err = np.abs(c).max(axis=1)
            if err.max() < max(tol, 1e-12):
                break
    if err.max() >= max(tol, 1e-9):
        raise SolverError(f"model '{model.name}': constraints not satisfied after {max_iter} "
                          f"iterations (max residual {err.max():.3g})", model.source)
    return q
