"""Shoulder motion without measurements: scapular-plane abduction from the de Groot & Brand
(2001) regression, solved on a model's kinematics with its constraints held.

de Groot JH, Brand R (2001) "A three-dimensional regression model of the shoulder rhythm",
Clin Biomech 16(9):735–743, regress the thorax-based Euler angles (degrees, Delft convention:
clavicle and scapula Y–Z–X, humerus Y–Z–Y) of the clavicle and the scapula on the humeral
plane of elevation Hy and elevation Hz::

    Cy = −4.983 + 0.120 Hy − 0.242 Hz + 0.851 C0y     Sy = −1.203 + 0.140 Hy − 0.049 Hz + 0.901 S0y
    Cz =  3.917 − 0.046 Hy + 0.123 Hz + 0.493 C0z     Sz =  3.095 − 0.079 Hy + 0.396 Hz + 0.414 S0z
                                                      Sx =  0.659 − 0.028 Hy + 0.184 Hz + 0.886 S0x

with the rest orientations C0 = (−28.573, 11.680, 7.482)° and S0 = (32.047, 10.669, −10.320)°
(their mean subject). Clavicle axial rotation is not regressed (its rest value is kept as a
weak target); the humerus is given "no axial rotation" in Codman's sense (Y–Z–Y angles
(Hy, Hz, −Hy)), or a constant external rotation ρ about its long axis (Hy, Hz, −Hy − ρ): the
regression does not give the humerus's axial rotation, nor does Sarshari et al. (2021) say
which their kinematics tool uses.

Sarshari et al. (2021), "A Matlab toolbox for scaled-generic modeling of shoulder and elbow",
Sci Rep 11:20806, generate their abduction "without measurement data" with their kinematics
tool (their ref. 63). Here, at each elevation, the model's coordinates closest to the
regression's bone orientations are found subject to the model's constraints (the scapular
landmarks TS and AI on their ribcage ellipsoids), held to ``tol`` (default 1e-9):
``min ‖r(q)‖² s.t. c(q) = 0`` by Gauss–Newton steps on the KKT system of the linearized
problem (``r``'s Jacobian by central differences, vectorized over frames; ``c``'s from the
constraint set), each frame warm-started from the previous one on a coarse grid, then all
frames refined together. The bone frames are built from landmarks as in the Delft
convention (van der Helm 1994): clavicle X̂ = SC→AC, Ẑ ⟂ X̂ and the thorax's Ŷ; scapula X̂ =
TS→AA, Ẑ normal to (AI, AA, TS) pointing backwards; humerus Ŷ = (EL+EM)/2→GH, Ẑ ⟂ Ŷ and
EM→EL. Thorax axes: the model's (OpenSim: x anterior, y superior, z right) mapped onto the
Delft thorax (X right, Y superior, Z posterior).

The coordinates are then splined in time (quintic, scipy) and the spline's velocities and
accelerations are projected onto the constraint manifold (``G q̇ = 0``, ``G q̈ + Ġ q̇ = 0``,
G = ∂c/∂q, Ġq̇ by central differences of G along q̇), so that inverse dynamics sees a motion
that satisfies the constraints at the velocity and acceleration levels too.

Shapes: frames are the leading axis; angles in degrees at the boundary of this module's
public regression functions, radians in coordinates.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import OptionError, SolverError
from ..models.model import Model
from ..multibody.constraints import compile_constraints
from ..multibody.kinematics import Tree, compile_model, marker_positions
from ..multibody.point_kinematics import StationKinematics

__all__ = ["DEGROOT_BRAND_2001", "CLAVICLE_REST", "SCAPULA_REST", "degroot_brand_2001",
           "euler_matrix", "euler_angles", "delft_bone_frames", "AbductionKinematics",
           "abduction_targets", "solve_abduction", "thorax_axes", "project_motion", "LANDMARKS", "MODEL_TO_DELFT"]

#: (intercept, Hy, Hz, rest) coefficients of de Groot & Brand (2001), Table of their Eq.
DEGROOT_BRAND_2001 = {
    "Cy": (-4.983, 0.120, -0.242, 0.851), "Cz": (3.917, -0.046, 0.123, 0.493),
    "Sy": (-1.203, 0.140, -0.049, 0.901), "Sz": (3.095, -0.079, 0.396, 0.414),
    "Sx": (0.659, -0.028, 0.184, 0.886),
}
#: rest orientations (Y, Z, X) in degrees, de Groot & Brand (2001)
CLAVICLE_REST = (-28.573, 11.680, 7.482)
SCAPULA_REST = (32.047, 10.669, -10.320)
#: landmark roles → default marker names
LANDMARKS = {"SC": "SC", "AC": "AC", "TS": "TS", "AI": "AI", "AA": "AA", "GH": "GH", "EL": "EL",
             "EM": "EM"}
#: rows: Delft thorax axes (X right, Y up, Z posterior) in an OpenSim thorax (x anterior, y up, z right)
MODEL_TO_DELFT = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])


def degroot_brand_2001(plane_deg, elevation_deg, clavicle_rest=CLAVICLE_REST,
                       scapula_rest=SCAPULA_REST):
    """Clavicle (Cy, Cz, Cx) and scapula (Sy, Sz, Sx) angles (T, 3) in degrees for humeral
    plane of elevation and elevation (T,) degrees (de Groot & Brand 2001; Cx = the rest value,
    not regressed)."""
    hy = np.atleast_1d(np.asarray(plane_deg, float))
    hz = np.atleast_1d(np.asarray(elevation_deg, float))
    hy, hz = np.broadcast_arrays(hy, hz)

    def reg(key, rest):
        a, b, c, d = DEGROOT_BRAND_2001[key]
        return a + b * hy + c * hz + d * rest
    C = np.column_stack([reg("Cy", clavicle_rest[0]), reg("Cz", clavicle_rest[1]),
                         np.full(hy.shape, float(clavicle_rest[2]))])
    S = np.column_stack([reg("Sy", scapula_rest[0]), reg("Sz", scapula_rest[1]),
                         reg("Sx", scapula_rest[2])])
    return C, S


def _axis_rot(axis: str, a):
    a = np.asarray(a, float)
    c, s = np.cos(a), np.sin(a)
    R = np.zeros(a.shape + (3, 3))
    i = "XYZ".index(axis)
    j, k = (i + 1) % 3, (i + 2) % 3
    R[..., i, i] = 1.0
    R[..., j, j] = c
    R[..., k, k] = c
    R[..., j, k] = -s
    R[..., k, j] = s
    return R


def euler_matrix(seq: str, angles_deg) -> np.ndarray:
    """(T, 3, 3) rotation of successive rotations about moving axes, e.g. ``"YZX"``:
    ``R = R_Y(a) R_Z(b) R_X(c)`` (angles (T, 3) degrees)."""
    a = np.radians(np.atleast_2d(np.asarray(angles_deg, float)))
    R = _axis_rot(seq[0], a[:, 0])
    for k in (1, 2):
        R = R @ _axis_rot(seq[k], a[:, k])
    return R


def euler_angles(seq: str, R) -> np.ndarray:
    """Inverse of :func:`euler_matrix` for ``"YZX"`` and ``"YZY"`` (T, 3) degrees (second
    angle in [−90°, 90°] for YZX, [0°, 180°] for YZY)."""
    R = np.asarray(R, float).reshape(-1, 3, 3)
    if seq == "YZX":
        # R = Ry(a) Rz(b) Rx(c): R[1,0] = sin b; R[1,1] = cos b cos c; R[1,2] = −cos b sin c;
        # R[0,0] = cos a cos b; R[2,0] = −sin a cos b
        b = np.arcsin(np.clip(R[:, 1, 0], -1, 1))
        a = np.arctan2(-R[:, 2, 0], R[:, 0, 0])
        c = np.arctan2(-R[:, 1, 2], R[:, 1, 1])
    elif seq == "YZY":
        # R = Ry(a) Rz(b) Ry(c): R[1,1] = cos b; R[0,1] = −cos a sin b; R[2,1] = sin a sin b;
        # R[1,0] = sin b cos c; R[1,2] = sin b sin c
        b = np.arccos(np.clip(R[:, 1, 1], -1, 1))
        a = np.arctan2(R[:, 2, 1], -R[:, 0, 1])
        c = np.arctan2(R[:, 1, 2], R[:, 1, 0])
    else:
        raise OptionError(f"Euler sequence must be YZX or YZY, got {seq!r}")
    return np.degrees(np.column_stack([a, b, c]))


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def delft_bone_frames(P: dict, to_delft=MODEL_TO_DELFT) -> dict:
    """Bone frames of the Delft convention from landmark positions ``P`` (role → (T, 3) in the
    thorax frame of the model): {"clavicle", "scapula", "humerus"} → (T, 3, 3) with columns
    X̂, Ŷ, Ẑ expressed in Delft thorax axes."""
    L = {k: np.einsum("ij,tj->ti", to_delft, np.asarray(v, float)) for k, v in P.items()}
    yt = np.array([0.0, 1.0, 0.0])
    xc = _unit(L["AC"] - L["SC"])
    zc = _unit(np.cross(xc, yt))
    clav = np.stack([xc, np.cross(zc, xc), zc], axis=-1)
    xs = _unit(L["AA"] - L["TS"])
    zs = _unit(np.cross(L["AI"] - L["TS"], xs))
    scap = np.stack([xs, np.cross(zs, xs), zs], axis=-1)
    yh = _unit(L["GH"] - 0.5 * (L["EL"] + L["EM"]))
    zh = _unit(np.cross(L["EL"] - L["EM"], yh))
    hum = np.stack([np.cross(yh, zh), yh, zh], axis=-1)
    return {"clavicle": clav, "scapula": scap, "humerus": hum}


@dataclass
class AbductionKinematics:
    """A generated motion.

    time : (T,) s; elevation_deg, plane_deg : (T,) humerothoracic elevation and plane;
    coordinates : the solved coordinate names; q, qd, qdd : (T, nq) all model coordinates
    (rad, rad/s, rad/s²; the others at their defaults); constraint_residual : (T,) max |c(q)|
    after solving; velocity_residual, acceleration_residual : (T,) max |G q̇|, |G q̈ + Ġq̇|;
    target_error_deg : (T, 3) angle between target and solved clavicle X̂, scapula and
    humerus frames (degrees); angles : {"clavicle", "scapula", "humerus"} → (T, 3) solved
    Delft Euler angles (degrees); targets : same for the regression targets.
    """

    time: np.ndarray
    elevation_deg: np.ndarray
    plane_deg: np.ndarray
    coordinates: list
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    constraint_residual: np.ndarray
    velocity_residual: np.ndarray
    acceleration_residual: np.ndarray
    target_error_deg: np.ndarray
    angles: dict = field(default_factory=dict)
    targets: dict = field(default_factory=dict)
    coordinate_names: list = field(default_factory=list)


def abduction_targets(elevation_deg, plane_deg=30.0, humeral_rotation_deg=0.0):
    """Target bone frames (Delft thorax axes) {"clavicle", "scapula", "humerus"} → (T, 3, 3)
    and the Euler angles {name: (T, 3) deg} for humerothoracic ``elevation_deg`` (T,) in the
    plane ``plane_deg`` (30°: the scapular plane, anterior of the frontal plane).
    ``humeral_rotation_deg``: external rotation of the humerus about its long axis from
    Codman's "no axial rotation" (Y–Z–Y angles (Hy, Hz, −Hy − ρ); for the right arm a positive
    third Y angle is internal rotation)."""
    hz = np.atleast_1d(np.asarray(elevation_deg, float))
    hy = np.broadcast_to(np.asarray(plane_deg, float), hz.shape)
    C, S = degroot_brand_2001(hy, hz)
    H = np.column_stack([hy, hz, -hy - float(humeral_rotation_deg)])
    ang = {"clavicle": C, "scapula": S, "humerus": H}
    R = {"clavicle": euler_matrix("YZX", C), "scapula": euler_matrix("YZX", S),
         "humerus": euler_matrix("YZY", H)}
    return R, ang


def thorax_axes(IJ, C7, PX, T8) -> np.ndarray:
    """Rows: the Delft thorax axes (X right, Y up, Z posterior) in the model's thorax frame,
    from the ISB thorax landmarks (Wu et al. 2005: Ŷ from the midpoint of PX and T8 to the
    midpoint of IJ and C7; the right-pointing axis normal to the plane of IJ, C7 and that
    lower midpoint; the posterior axis completing them)."""
    IJ, C7, PX, T8 = (np.asarray(v, float).reshape(3) for v in (IJ, C7, PX, T8))
    lo, hi = 0.5 * (PX + T8), 0.5 * (IJ + C7)
    y = _unit(hi - lo)
    right = _unit(np.cross(IJ - lo, C7 - lo))       # (front) × (back) about the up axis → right
    zpost = _unit(np.cross(right, y))
    right = np.cross(y, zpost)
    return np.vstack([right, y, zpost])


class _Problem:
    """Residuals r(q) and constraints c(q) of the abduction fit on the free coordinates."""

    ROLES = ("SC", "AC", "TS", "AI", "AA", "GH", "EL", "EM")

    def __init__(self, model, tree, coords, landmarks, constraints, fixed, weights):
        self.tree = tree
        self.idx = np.array([tree.coordinate_index(c) for c in coords], int)
        self.roles = dict(LANDMARKS, **(landmarks or {}))
        missing = [m for m in self.roles.values() if m not in tree.markers]
        if missing:
            raise OptionError(f"model '{model.name}' lacks the landmark marker(s) "
                              f"{', '.join(missing)} needed for the shoulder rhythm")
        self.names = [self.roles[k] for k in self.ROLES]
        self.sk = StationKinematics.for_markers(tree, self.names)
        self.cs = constraints
        self.fixed = fixed            # {coordinate index: target value (rad)}
        self.fixed_k = np.array([list(self.idx).index(i) for i in fixed], int)
        self.fixed_v = np.array(list(fixed.values()), float)
        self.w = weights
        self.q0 = tree.default_q.copy()
        self.to_delft = MODEL_TO_DELFT
        if all(n in tree.markers for n in ("IJ", "C7", "PX", "T8")):
            _, P = marker_positions(tree, self.q0[None], ["IJ", "C7", "PX", "T8"])
            self.to_delft = thorax_axes(*P[0])

    def full(self, x):
        q = np.broadcast_to(self.q0, x.shape[:-1] + (self.q0.size,)).copy()
        q[..., self.idx] = x
        return q

    def landmarks(self, x, jac=False):
        """Landmark positions (T, 8, 3) (and their Jacobians (T, 8, 3, nf))."""
        P, J = self.sk.evaluate_batch(self.full(x).reshape(-1, self.q0.size))
        return (P, J[..., self.idx]) if jac else P

    def frames(self, x):
        return self._frames(self.landmarks(x))

    def _frames(self, P):
        L = dict(zip(self.ROLES, np.moveaxis(P, 1, 0)))
        return delft_bone_frames(L, self.to_delft)

    def residual(self, x, Rt):
        """(T, nr) for x (T, nf) and targets Rt (dict of (T, 3, 3))."""
        return self._residual(self.landmarks(x), x, Rt)

    def _residual(self, P, x, Rt):
        F = self._frames(P)
        w = self.w
        r = [w["clavicle"] * (F["clavicle"][:, :, 0] - Rt["clavicle"][:, :, 0]),
             w["clavicle_axial"] * (F["clavicle"][:, :, 1:] - Rt["clavicle"][:, :, 1:]).reshape(-1, 6),
             w["scapula"] * (F["scapula"] - Rt["scapula"]).reshape(-1, 9),
             w["humerus"] * (F["humerus"] - Rt["humerus"]).reshape(-1, 9)]
        if self.fixed:
            r.append(w["coordinate"] * (x[:, self.fixed_k] - self.fixed_v))
        return np.concatenate(r, axis=1)

    def jac(self, x, Rt, h=1e-7):
        """(T, nr, nf): ∂r/∂P by central differences in the landmark positions (no kinematics),
        times the landmarks' Jacobians."""
        T, nf = x.shape
        P, JP = self.landmarks(x, jac=True)
        n = P.shape[1] * 3
        Pp = np.repeat(P[:, None], 2 * n, axis=1).reshape(T, 2 * n, n)
        e = np.arange(n)
        Pp[:, e, e] += h
        Pp[:, n + e, e] -= h
        Rr = {k: np.repeat(v, 2 * n, axis=0) for k, v in Rt.items()}
        xr = np.repeat(x, 2 * n, axis=0)
        r = self._residual(Pp.reshape(-1, n // 3, 3), xr, Rr).reshape(T, 2 * n, -1)
        dr = np.swapaxes((r[:, :n] - r[:, n:]) / (2 * h), 1, 2)               # (T, nr, n)
        J = np.einsum("trp,tpn->trn", dr, JP.reshape(T, n, nf))
        if self.fixed:
            k0 = J.shape[1] - len(self.fixed_k)
            J[:, k0:, :] = 0.0
            J[:, np.arange(k0, J.shape[1]), self.fixed_k] = self.w["coordinate"]
        return J

    def cons(self, x):
        q = self.full(x)
        return self.cs.residuals(q), self.cs.jacobian(q)[:, :, self.idx]


def _project(pb, x, tol, n=30):
    """Minimum-norm Newton steps onto ``c(x) = 0`` (T frames). Returns x, c, C."""
    c, C = pb.cons(x)
    for _ in range(n):
        if c.size == 0 or np.abs(c).max() < 0.1 * tol:
            break
        y = np.linalg.solve(C @ np.swapaxes(C, 1, 2), c[..., None])[..., 0]
        x = x - np.einsum("tmn,tm->tn", C, y)
        c, C = pb.cons(x)
    return x, c, C


def _gauss_newton(pb, x, Rt, tol, max_iter=100, max_step=0.2):
    """Batched projected Levenberg–Marquardt on the constraint manifold: iterates are first
    projected onto ``c = 0``; per frame the step solves the KKT system of
    ``min ‖r + J dx‖² + λ‖dx‖²  s.t.  C dx = 0`` (limited to ``max_step`` rad), is projected
    back onto ``c = 0`` and accepted when ``‖r‖²`` does not grow (λ ÷ 3), else λ × 10.
    Returns x and the final max |c| per frame."""
    T, nf = x.shape
    lam = np.full(T, 1e-4)
    x, c, C = _project(pb, x.copy(), tol)
    r = pb.residual(x, Rt)
    m = c.shape[1]
    eye = np.eye(nf)
    done = np.zeros(T, bool)
    for it in range(max_iter):
        act = np.flatnonzero(~done)
        if act.size == 0:
            break
        sub = {k: v[act] for k, v in Rt.items()}
        J = pb.jac(x[act], sub)
        K = np.zeros((act.size, nf + m, nf + m))
        K[:, :nf, :nf] = np.swapaxes(J, 1, 2) @ J + lam[act, None, None] * eye
        K[:, :nf, nf:] = np.swapaxes(C[act], 1, 2)
        K[:, nf:, :nf] = C[act]
        rhs = np.concatenate([-np.einsum("trn,tr->tn", J, r[act]), -c[act]], axis=1)
        dx = np.linalg.solve(K, rhs[..., None])[..., 0][:, :nf]
        big = np.abs(dx).max(axis=1, keepdims=True)
        dx = dx * np.minimum(1.0, max_step / np.maximum(big, 1e-300))
        xn, cn, Cn = _project(pb, x[act] + dx, tol)
        rn = pb.residual(xn, sub)
        ok = ((rn ** 2).sum(1) <= (r[act] ** 2).sum(1) * (1 + 1e-13) + 1e-30) \
            & (np.abs(cn).max(axis=1) < tol)
        a = act[ok]
        f0, f1 = (r[act] ** 2).sum(1), (rn ** 2).sum(1)
        flat = ok & (f0 - f1 <= 1e-10 * f0 + 1e-20)
        x[a], r[a], c[a], C[a] = xn[ok], rn[ok], cn[ok], Cn[ok]
        lam[act] = np.where(ok, np.maximum(lam[act] / 3, 1e-10), lam[act] * 10)
        small = np.abs(dx).max(axis=1) < 1e-8
        done[act] = (ok & small) | flat | (lam[act] >= 1e8)
    return x, np.abs(c).max(axis=1) if c.size else np.zeros(T)


def solve_abduction(model: Model, coordinates, *, elevation_deg=None, plane_deg: float = 30.0,
                    duration: float = 4.0, landmarks=None, fixed=None, constraints=None,
                    weights=None, tol: float = 1e-9, coarse_step_deg: float = 10.0,
                    tree: Tree | None = None, humeral_rotation_deg: float = 0.0) -> AbductionKinematics:
    """Scapular-plane abduction of ``model`` (see the module docstring).

    Parameters
    ----------
    coordinates : names of the coordinates solved for (the others stay at their defaults)
    elevation_deg : (T,) humerothoracic elevations, increasing (default 20°…150° by 1°, 131 frames)
    plane_deg : plane of elevation (30°: the scapular plane)
    duration : s, the motion's length (elevation linear in time: constant angular speed)
    landmarks : {role: marker name} overriding :data:`LANDMARKS`
    fixed : {coordinate: value (rad)} targets of coordinates not in the regression (elbow
        flexion, pronation; default: their default values)
    constraints : object with ``residuals(q) (T, m)`` and ``jacobian(q) (T, m, nq)`` (default:
        the model's enabled constraints, :func:`arthron.multibody.constraints.compile_constraints`)
    weights : {"clavicle", "clavicle_axial", "scapula", "humerus", "coordinate"} residual weights
    tol : constraint residual to hold (units of the constraint rows)
    humeral_rotation_deg : external rotation of the humerus from Codman's "no axial rotation"
        (degrees, constant over the motion; :func:`abduction_targets`)

    Returns
    -------
    :class:`AbductionKinematics`

    Raises
    ------
    OptionError for bad options or missing landmarks; SolverError if the constraints cannot be
    held to ``tol``.
    """
    tree = tree or compile_model(model)
    if elevation_deg is None:
        elevation_deg = np.arange(20.0, 150.0 + 1e-9, 1.0)
    el = np.asarray(elevation_deg, float).reshape(-1)
    if el.size < 4 or np.any(np.diff(el) <= 0) or not np.all(np.isfinite(el)):
        raise OptionError("elevations must be at least 4 increasing finite angles (degrees)")
    if not (np.isfinite(duration) and duration > 0):
        raise OptionError(f"duration must be positive (s), got {duration!r}")
    if not -90.0 < float(plane_deg) < 180.0:
        raise OptionError(f"plane of elevation must lie in (−90°, 180°), got {plane_deg!r}")
    if not (np.isfinite(humeral_rotation_deg) and abs(float(humeral_rotation_deg)) <= 90.0):
        raise OptionError(f"humeral rotation must lie in [−90°, 90°], got {humeral_rotation_deg!r}")
    coords = list(coordinates)
    for c in coords:
        if c not in model.coordinates:
            raise OptionError(f"model '{model.name}' has no coordinate '{c}'")
    cs = constraints if constraints is not None else compile_constraints(model, tree)
    w = {"clavicle": 1.0, "clavicle_axial": 0.1, "scapula": 1.0, "humerus": 1.0, "coordinate": 1.0}
    w.update(weights or {})
    fx = {}
    for name, v in (fixed or {}).items():
        if name not in coords:
            raise OptionError(f"fixed coordinate '{name}' is not among the solved coordinates")
        fx[tree.coordinate_index(name)] = float(v)
    pb = _Problem(model, tree, coords, landmarks, cs, fx, w)
    Rt_all, ang_t = abduction_targets(el, plane_deg, humeral_rotation_deg)
    Rt_all = {k: v for k, v in Rt_all.items()}
    # coarse grid, frame to frame from the model's default pose
    n_coarse = max(2, int(np.ceil((el[-1] - el[0]) / coarse_step_deg)) + 1)
    el_c = np.linspace(el[0], el[-1], n_coarse)
    if el.size <= n_coarse:            # few frames: solve them all in the sequence
        el_c = np.unique(np.concatenate([el_c, el]))
    n_coarse = el_c.size
    Rc, _ = abduction_targets(el_c, plane_deg, humeral_rotation_deg)
    x = tree.default_q[pb.idx][None].copy()
    xs = []
    for k in range(n_coarse):
        x, _ = _gauss_newton(pb, x, {n: v[k:k + 1] for n, v in Rc.items()}, tol)
        xs.append(x[0])
    xs = np.array(xs)
    x0 = np.column_stack([np.interp(el, el_c, xs[:, j]) for j in range(xs.shape[1])])
    x, cres = _gauss_newton(pb, x0, Rt_all, tol)
    if cres.max() > tol:
        raise SolverError(f"abduction of model '{model.name}': constraints held only to "
                          f"{cres.max():.3g} (asked {tol:g})", model.source)
    q = pb.full(x)
    t = (el - el[0]) / (el[-1] - el[0]) * float(duration)
    q, qd, qdd, vres, ares = project_motion(t, q, cs, pb.idx, tol)
    F = pb.frames(x)
    err = np.column_stack([
        np.degrees(np.arccos(np.clip(np.einsum("ti,ti->t", F["clavicle"][:, :, 0],
                                               Rt_all["clavicle"][:, :, 0]), -1, 1))),
        *[np.degrees(np.arccos(np.clip((np.einsum("tij,tij->t", F[b], Rt_all[b]) - 1) / 2, -1, 1)))
          for b in ("scapula", "humerus")]])
    ang = {"clavicle": euler_angles("YZX", F["clavicle"]), "scapula": euler_angles("YZX", F["scapula"]),
           "humerus": euler_angles("YZY", F["humerus"])}
    cfin = np.abs(cs.residuals(q)).max(axis=1) if cs.size else np.zeros(len(t))
    return AbductionKinematics(time=t, elevation_deg=el, plane_deg=np.full(el.shape, float(plane_deg)),
                               coordinates=coords, q=q, qd=qd, qdd=qdd, constraint_residual=cfin,
                               velocity_residual=vres, acceleration_residual=ares,
                               target_error_deg=err, angles=ang, targets=ang_t,
                               coordinate_names=list(tree.coordinate_names))


def project_motion(t, q, constraints, idx=None, tol: float = 1e-9):
    """Quintic splines of ``q`` (T, nq) over ``t`` (T,) (scipy ``make_interp_spline``, k = 5,
    natural end conditions), velocities and accelerations projected onto the constraints:
    ``q̇ ← q̇ − Gᵀ(GGᵀ)⁻¹Gq̇`` and ``q̈ ← q̈ − Gᵀ(GGᵀ)⁻¹(Gq̈ + Ġq̇)`` on the coordinates ``idx``
    (default all). Positions are kept (they satisfy the constraints already).

    Returns (q, qd, qdd, max |G q̇| (T,), max |G q̈ + Ġ q̇| (T,)) after projection.
    """
    from scipy.interpolate import make_interp_spline
    t = np.asarray(t, float)
    q = np.asarray(q, float)
    T, nq = q.shape
    idx = np.arange(nq) if idx is None else np.asarray(idx, int)
    k = 5 if T >= 6 else (3 if T >= 4 else 1)
    bc = None
    if k == 5:
        bc = ([(3, np.zeros(nq)), (4, np.zeros(nq))], [(3, np.zeros(nq)), (4, np.zeros(nq))])
    elif k == 3:
        bc = "natural"
    sp = make_interp_spline(t, q, k=k, bc_type=bc)
    qd = np.zeros_like(q)
    qdd = np.zeros_like(q)
    qd[:, idx] = sp.derivative(1)(t)[:, idx]
    qdd[:, idx] = sp.derivative(2)(t)[:, idx]
    if constraints is None or constraints.size == 0:
        z = np.zeros(T)
        return q, qd, qdd, z, z
    G = constraints.jacobian(q)[:, :, idx]
    GGt = G @ np.swapaxes(G, 1, 2)

    def proj(v, extra=None):
        rhs = np.einsum("tmn,tn->tm", G, v)
        if extra is not None:
            rhs = rhs + extra
        y = np.linalg.solve(GGt, rhs[..., None])[..., 0]
        return v - np.einsum("tmn,tm->tn", G, y)
    qd[:, idx] = proj(qd[:, idx])
    bias = _constraint_bias(constraints, q, qd, idx)
    qdd[:, idx] = proj(qdd[:, idx], bias)
    vres = np.abs(np.einsum("tmn,tn->tm", G, qd[:, idx])).max(axis=1)
    ares = np.abs(np.einsum("tmn,tn->tm", G, qdd[:, idx]) + _constraint_bias(constraints, q, qd, idx)).max(axis=1)
    return q, qd, qdd, vres, ares


def _constraint_bias(constraints, q, qd, idx, h=1e-6):
    """Ġ q̇ (T, m) by central differences of the Jacobian along q̇ (any constraint kind)."""
    s = np.linalg.norm(qd, axis=1, keepdims=True)
    s = np.where(s > 0, s, 1.0)
    d = qd / s
    Gp = constraints.jacobian(q + h * d)[:, :, idx]
    Gm = constraints.jacobian(q - h * d)[:, :, idx]
    return np.einsum("tmn,tn->tm", (Gp - Gm) / (2 * h), qd[:, idx]) * s
