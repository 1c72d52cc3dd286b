"""The thin-plate spline ligament model (TPSM) and the multi-bundle baseline (MBM).

A ligament is a continuous set of infinitesimal fibres joining each point P of the tibial
insertion Σ_t (body A, "tibia") to its homolog Q on the femoral insertion Σ_f (body B, "femur"):

    (x, y) --φ--> (u, v),   P = r_t(x, y) = o_t + x e1 + y e2 + Γ_t(x, y) n,   Q = r_f(u, v)

Each fibre pulls with force per unit area f = c · law(ε) along ŝ, ε = (l - l0)/l0 (Eq. 6), and the
ligament wrench is the integral over Σ_t (Eq. 8), computed by Gauss quadrature on a triangulation
of the planar insertion Σ_tp (Eqs. 9-15). Quadrature points become **fibres** precomputed once:

    p_n (tibia frame), q_n (femur frame), weight w_n = W_g A_k ‖r_x × r_y‖ (m²), c_n, l0_n

and per pose only the rigid transform, lengths, strains and weighted sums remain (vectorized over
poses: all pose arrays have the pose axis first).

Conventions (SI): metres, newtons, Pa for c (force per unit insertion area per unit law value).
A pose is the femur frame in the tibia frame: x_tibia = R x_femur + t, R (T, 3, 3), t (T, 3).
The wrench returned is the one the ligament applies **to the tibia**, expressed in the tibia frame,
moment about ``pole`` (tibia-frame point, default its origin); the femur receives the opposite.
Paper sign note: the TPSM paper writes ŝ = (p - q)/l; here the force on the tibia points from its
insertion towards the femur, f ∝ (q - p), i.e. tension.

Sources: the TPSM paper (Eqs. 1-16, Figs. 6-10); Blankevoort & Huiskes (1991) for the toe-linear law as
implemented by OpenSim 4.6's Blankevoort1991Ligament.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..errors import ModelFileError, SolverError, UnsupportedFeature
from ..geometry.insertion import PlanarInsertion, fit_plane
from ..geometry.quadrature import TriangleRule, map_to_triangles, triangle_rule
from ..geometry.spatial import rot_z as _rot_z
from ..geometry.tps import ThinPlateSpline, fit_tps
from ..geometry.triangulation import Triangulation, triangulate_polygon
from ..multibody.kinematics import forward_kinematics
from ..tables import Table

__all__ = [
    "ligament_poses", "Law", "QUADRATIC", "Fibres", "Wrench", "TPSMLigament", "as_poses",
    "tpsm_from_strands", "strand_fibres", "rot_z", "Strands", "strands_from_model", "wrench_table",
]


# ----------------------------------------------------------------------------------------------
# constitutive laws
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Law:
    """Fibre force-strain law: force per unit area = c · law(ε) (the TPSM paper Eq. 6).

    kind : "quadratic" (c ε², the paper's law), "linear" (c ε), "blankevoort" (toe region
        c ε²/(2 ε_t) for 0 ≤ ε < ε_t, then c (ε - ε_t/2); OpenSim's Blankevoort1991Ligament
        with linear_stiffness = w c) or "callable" (``func(eps) -> values``, vectorized, must be 0
        for ε ≤ 0 if fibres cannot push).
    transition_strain : ε_t for "blankevoort" (OpenSim default 0.06).
    """

    kind: str = "quadratic"
    transition_strain: float = 0.06
    func: Callable | None = None

    def __post_init__(self):
        if self.kind not in ("quadratic", "linear", "blankevoort", "callable"):
            raise SolverError(f"unknown fibre law {self.kind!r}")
        if self.kind == "callable" and not callable(self.func):
            raise SolverError("fibre law 'callable' needs func(eps)")
        if self.kind == "blankevoort" and not self.transition_strain > 0:
            raise SolverError(f"Blankevoort transition strain must be > 0, got {self.transition_strain}")

    def __call__(self, eps) -> np.ndarray:
        e = np.asarray(eps, dtype=float)
        if self.kind == "quadratic":
            return np.where(e > 0, e * e, 0.0)
        if self.kind == "linear":
            return np.where(e > 0, e, 0.0)
        if self.kind == "blankevoort":
            et = self.transition_strain
            return np.where(e <= 0, 0.0, np.where(e < et, 0.5 * e * e / et, e - 0.5 * et))
        return np.asarray(self.func(e), dtype=float)


QUADRATIC = Law("quadratic")


# ----------------------------------------------------------------------------------------------
# poses and results
# ----------------------------------------------------------------------------------------------
def rot_z(theta) -> np.ndarray:
    """Rotations about z by angles theta (T,) → (T, 3, 3) (a scalar gives (1, 3, 3)); the
    formula of :func:`arthron.geometry.spatial.rot_z`."""
    return _rot_z(np.atleast_1d(np.asarray(theta, dtype=float)))


def as_poses(R, t=None):
    """Normalize poses: (R (3,3)|(T,3,3), t (3,)|(T,3)) or homogeneous (4,4)|(T,4,4) →
    (R (T,3,3), t (T,3), single: bool)."""
    R = np.asarray(R, dtype=float)
    if t is None:
        if R.shape[-2:] != (4, 4):
            raise SolverError(f"pose: expected (T, 4, 4) transforms or (R, t), got {R.shape}")
        R, t = R[..., :3, :3], R[..., :3, 3]
    t = np.asarray(t, dtype=float)
    single = R.ndim == 2
    R = np.broadcast_to(R.reshape((-1, 3, 3)), (max(R.reshape(-1, 9).shape[0], t.reshape(-1, 3).shape[0]), 3, 3))
    t = np.broadcast_to(t.reshape((-1, 3)), (R.shape[0], 3))
    if R.shape[-2:] != (3, 3):
        raise SolverError(f"pose: rotation must be (T, 3, 3), got {R.shape}")
    return np.ascontiguousarray(R), np.ascontiguousarray(t), single and t.shape[0] == 1


@dataclass(frozen=True)
class Wrench:
    """Ligament wrench on the tibia in the tibia frame, per pose.

    force : (T, 3) N;  moment : (T, 3) N·m about ``pole`` (tibia frame, m)."""

    force: np.ndarray
    moment: np.ndarray
    pole: np.ndarray

    @property
    def force_magnitude(self) -> np.ndarray:
        return np.linalg.norm(self.force, axis=-1)

    @property
    def moment_magnitude(self) -> np.ndarray:
        return np.linalg.norm(self.moment, axis=-1)

    def to_table(self, prefix: str = "ligament_on_tibia_in_tibia"):
        """(labels, data (T, 6)) with OpenSim-style labels ``<prefix>_fx .. _mz``."""
        labels = [f"{prefix}_{k}" for k in ("fx", "fy", "fz", "mx", "my", "mz")]
        return labels, np.hstack([self.force, self.moment])


def _assemble(R, tp, S):
    """Force and moment (about c_t) from the per-pose sums S (T, 16) = Σ g [q', 1, p', p'⊗q']."""
    T = R.shape[0]
    s_q, s_1, s_p = S[:, 0:3], S[:, 3], S[:, 4:7]
    K = S[:, 7:16].reshape(T, 3, 3)  # Σ g p'_i q'_l
    F = (R @ s_q[:, :, None])[:, :, 0] + tp * s_1[:, None] - s_p  # Σ g (R q' + t' - p')
    A = K @ R.transpose(0, 2, 1)  # A_ij = Σ g p'_i (R q')_j
    M = np.stack([A[:, 1, 2] - A[:, 2, 1], A[:, 2, 0] - A[:, 0, 2], A[:, 0, 1] - A[:, 1, 0]], axis=1)
    M += np.cross(s_p, tp)  # Σ g p' × (R q' + t')
    return F, M


# ----------------------------------------------------------------------------------------------
# fibres: the precomputed, pose-independent part
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fibres:
    """A discrete set of fibres (TPSM quadrature points, MBM strands) ready for fast wrenches.

    Attributes
    ----------
    p : (N, 3) float   tibial ends in the tibia frame (m)
    q : (N, 3) float   femoral ends in the femur frame (m)
    weight : (N,) float   area weights w_n (m²; 1 for strands whose c is a force)
    c : (N,) float   stiffness per unit area c_k (Pa), or per strand (N) when weight = 1
    l0 : (N,) float   free (slack) lengths (m)
    law : Law
    xy : (N, 2) float or None   tibial local coordinates (for plots)
    label : str
    """

    p: np.ndarray
    q: np.ndarray
    weight: np.ndarray
    c: np.ndarray
    l0: np.ndarray
    law: Law = QUADRATIC
    xy: np.ndarray | None = None
    label: str = "fibres"
    _pre: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_pre", {})  # pose-independent tables (own dict: safe with replace())
        n = self.p.shape[0]
        for name in ("q", "weight", "c", "l0"):
            a = getattr(self, name)
            if a.shape[0] != n:
                raise SolverError(f"{self.label}: {name} has {a.shape[0]} rows, expected {n}")
        if np.any(self.l0 <= 0):
            raise SolverError(f"{self.label}: fibre free lengths must be > 0")
        ct, cf = self.p.mean(axis=0), self.q.mean(axis=0)
        pc, qc = self.p - ct, self.q - cf  # centred ends p', q' (better conditioned l²)
        kw = self.weight * self.c
        # l² = |R q' + t' - p'|² = X(R, t') · Y_n with t' = R c_f + t - c_t and
        #   X = [vec R, t', Rᵀt', |t'|², 1],  Y_n = [-2 p'⊗q', -2 p', 2 q', 1, |p'|² + |q'|²]
        Y = np.empty((17, n))
        Y[0:9] = -2.0 * np.einsum("ni,nj->ijn", pc, qc).reshape(9, n)
        Y[9:12] = -2.0 * pc.T
        Y[12:15] = 2.0 * qc.T
        Y[15] = 1.0
        Y[16] = np.einsum("ni,ni->n", pc, pc) + np.einsum("ni,ni->n", qc, qc)
        # per pose sums S = Σ_n g_n Z_n, g_n = w c law(ε)/l:  Z_n = [q', 1, p', p'⊗q']
        Z = np.empty((n, 16))
        Z[:, 0:3] = qc
        Z[:, 3] = 1.0
        Z[:, 4:7] = pc
        Z[:, 7:16] = np.einsum("ni,nj->nij", pc, qc).reshape(n, 9)
        kind = self.law.kind
        # quadratic: w c (l/l0 - 1)² / l = [w c / l0²] (l - l0)² / l;  linear: [w c / l0] (l - l0) / l
        a = kw / self.l0**2 if kind == "quadratic" else kw / self.l0 if kind == "linear" else kw
        self._pre.update(ct=ct, cf=cf, pc=pc, qc=qc, Y=Y, Z=np.ascontiguousarray(Z), kw=kw,
                         a=a, l0=np.ascontiguousarray(self.l0, dtype=float), kind=kind)

    @property
    def n(self) -> int:
        return int(self.p.shape[0])

    def lengths(self, R, t=None) -> np.ndarray:
        """Fibre lengths l (T, N) at poses (m) ((N,) for a single pose)."""
        R, t, single = as_poses(R, t)
        Q = np.einsum("tij,nj->tni", R, self.q) + t[:, None, :]
        l = np.linalg.norm(Q - self.p, axis=-1)
        return l[0] if single else l

    def strains(self, R, t=None) -> np.ndarray:
        """Fibre strains ε = (l - l0)/l0 (T, N)."""
        return self.lengths(R, t) / self.l0 - 1.0

    def tensions(self, R, t=None) -> np.ndarray:
        """Fibre forces w c law(ε) (T, N) in N."""
        eps = self.strains(R, t)
        return self._pre["kw"] * self.law(eps)

    def _g(self, L):
        """In place: L holds l² (…, N) on entry; returns g = w c law(ε)/l (a new or the same array)."""
        pre = self._pre
        np.sqrt(L, out=L)
        kind = pre["kind"]
        if kind == "quadratic":
            g = L - pre["l0"]
            np.maximum(g, 0.0, out=g)
            g *= g
            g *= pre["a"]
        elif kind == "linear":
            g = L - pre["l0"]
            np.maximum(g, 0.0, out=g)
            g *= pre["a"]
        else:
            g = self.law(L / pre["l0"] - 1.0)
            g *= pre["a"]
        g /= L
        return g

    def wrench(self, R, t=None, pole=None, chunk: int | None = None) -> Wrench:
        """Ligament wrench on the tibia at poses (the TPSM paper Eqs. 6, 8, 10, 14).

        Parameters
        ----------
        R, t : poses of the femur frame in the tibia frame, (T, 3, 3) and (T, 3) (or (3, 3), (3,)),
            or R as (T, 4, 4) homogeneous transforms with t None.
        pole : (3,) float, optional   moment pole in the tibia frame (default the origin).
        chunk : poses per block (memory ~ chunk × N doubles; default ≈ 64k / N, cache-sized).

        Returns
        -------
        Wrench with force (T, 3) N and moment (T, 3) N·m ((3,) each for a single pose).

        Cost per pose: l² from one product with the precomputed (17, N) table, a few elementwise
        passes (sqrt, strain, law, ÷ l) and one product with the (N, 16) table; the rest is 3 × 3.
        Fibres must have positive length (a zero-length fibre has no direction).
        """
        if t is not None and np.ndim(R) == 2:
            return self._wrench1(np.asarray(R, dtype=float), np.asarray(t, dtype=float), pole)
        R, t, single = as_poses(R, t)
        T = R.shape[0]
        pre = self._pre
        ct = pre["ct"]
        tp = R @ pre["cf"] + t - ct  # t' = R c_f + t - c_t   (T, 3)
        X = np.empty((T, 17))
        X[:, 0:9] = R.reshape(T, 9)
        X[:, 9:12] = tp
        X[:, 12:15] = (tp[:, None, :] @ R)[:, 0, :]  # Rᵀ t'
        X[:, 15] = np.einsum("ti,ti->t", tp, tp)
        X[:, 16] = 1.0
        Y, Z = pre["Y"], pre["Z"]
        if chunk is None:
            chunk = max(8, (1 << 16) // max(self.n, 1))
        S = np.empty((T, 16))
        for a in range(0, T, chunk):
            b = min(T, a + chunk)
            g = self._g(X[a:b] @ Y)
            np.matmul(g, Z, out=S[a:b])
        F, M = _assemble(R, tp, S)
        pole = np.zeros(3) if pole is None else np.asarray(pole, dtype=float)
        M += np.cross(ct - pole, F)
        if single:
            return Wrench(F[0], M[0], pole)
        return Wrench(F, M, pole)

    def _wrench1(self, R, t, pole) -> Wrench:
        """Single-pose path (same algebra, fewer small-array calls)."""
        pre = self._pre
        ct = pre["ct"]
        tp = R @ pre["cf"] + t - ct
        X = np.concatenate((R.ravel(), tp, tp @ R, (tp @ tp, 1.0)))
        S = self._g(X @ pre["Y"]) @ pre["Z"]
        (q0, q1, q2, s1, p0, p1, p2, k00, k01, k02, k10, k11, k12, k20, k21, k22) = S.tolist()
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = R.tolist()
        t0, t1, t2 = tp.tolist()
        F0 = r00 * q0 + r01 * q1 + r02 * q2 + t0 * s1 - p0
        F1 = r10 * q0 + r11 * q1 + r12 * q2 + t1 * s1 - p1
        F2 = r20 * q0 + r21 * q1 + r22 * q2 + t2 * s1 - p2
        # A_ij = Σ_l K_il R_jl ;  M = [A12 - A21, A20 - A02, A01 - A10] + s_p × t'
        A12 = k10 * r20 + k11 * r21 + k12 * r22
        A21 = k20 * r10 + k21 * r11 + k22 * r12
        A20 = k20 * r00 + k21 * r01 + k22 * r02
        A02 = k00 * r20 + k01 * r21 + k02 * r22
        A01 = k00 * r10 + k01 * r11 + k02 * r12
        A10 = k10 * r00 + k11 * r01 + k12 * r02
        c0, c1, c2 = ct.tolist()
        if pole is not None:
            pl = np.asarray(pole, dtype=float)
            c0, c1, c2 = c0 - pl[0], c1 - pl[1], c2 - pl[2]
        else:
            pl = np.zeros(3)
        M0 = A12 - A21 + p1 * t2 - p2 * t1 + c1 * F2 - c2 * F1
        M1 = A20 - A02 + p2 * t0 - p0 * t2 + c2 * F0 - c0 * F2
        M2 = A01 - A10 + p0 * t1 - p1 * t0 + c0 * F1 - c1 * F0
        return Wrench(np.array([F0, F1, F2]), np.array([M0, M1, M2]), pl)

    def wrench_direct(self, R, t=None, pole=None) -> Wrench:
        """Straightforward (slow, clear) evaluation of the same sums, for cross-checks."""
        R, t, single = as_poses(R, t)
        Q = np.einsum("tij,nj->tni", R, self.q) + t[:, None, :]
        d = Q - self.p
        l = np.linalg.norm(d, axis=-1)
        f = (self._pre["kw"] * self.law(l / self.l0 - 1.0) / l)[..., None] * d
        pole = np.zeros(3) if pole is None else np.asarray(pole, dtype=float)
        F = f.sum(axis=1)
        M = np.cross(self.p - pole, f).sum(axis=1)
        return Wrench(F[0], M[0], pole) if single else Wrench(F, M, pole)


# ----------------------------------------------------------------------------------------------
# the continuous model
# ----------------------------------------------------------------------------------------------
def _field(v, xy):
    if callable(v):
        return np.broadcast_to(np.asarray(v(xy), dtype=float), xy.shape[:-1])
    return np.broadcast_to(np.asarray(v, dtype=float), xy.shape[:-1])


@dataclass(frozen=True)
class TPSMLigament:
    """A TPSM ligament (the TPSM paper Sec. 2): insertions, the insertion-to-insertion map φ and fields.

    Attributes
    ----------
    tibial : PlanarInsertion   Σ_t in the tibia frame (integration domain: its contour Σ_tp)
    femoral : PlanarInsertion   Σ_f in the femur frame
    phi : ThinPlateSpline   φ: tibial local (x, y) → femoral local (u, v) (Sec. 2.3)
    c : float or callable (…, 2) → (…)   stiffness per unit area (Pa)
    l0 : float or callable   fibre free length (m); callables take tibial local (x, y)
    law : Law
    name : str
    default_pose : (R (3,3), t (3,)) or None   e.g. full extension
    """

    tibial: PlanarInsertion
    femoral: PlanarInsertion
    phi: ThinPlateSpline
    c: float | Callable = 1e8
    l0: float | Callable = 0.027
    law: Law = QUADRATIC
    name: str = "ligament"
    default_pose: tuple | None = None
    landmarks: dict = field(default_factory=dict, repr=False, compare=False)

    # -- geometry ------------------------------------------------------------------------------
    def fibre_ends(self, xy):
        """Tibial ends p (…, 3) (tibia frame), femoral ends q (…, 3) (femur frame) and the area
        factor ‖r_x × r_y‖ (…) for tibial local coordinates xy (…, 2) (Sec. 2.5)."""
        xy = np.asarray(xy, dtype=float)
        p, J = self.tibial.surface(xy)
        q = self.femoral.to_bone(self.phi(xy))
        return p, q, J

    def triangulate(self, n_triangles: int) -> Triangulation:
        return triangulate_polygon(self.tibial.contour, n_triangles, what=f"{self.name} tibial insertion")

    def _make(self, xy, w, label):
        xy = xy.reshape(-1, 2)
        p, q, _ = self.fibre_ends(xy)
        return Fibres(p, q, np.asarray(w, float).reshape(-1), _field(self.c, xy).copy(),
                      _field(self.l0, xy).copy(), self.law, xy, label)

    def fibres(self, n_triangles: int, rule: int | TriangleRule = 3, mesh: Triangulation | None = None) -> Fibres:
        """TPSM-nG fibres: Gauss points of ``rule`` on a triangulation of Σ_tp with
        ``n_triangles`` triangles, weights W_g A_k ‖r_x × r_y‖ (Eqs. 14-15)."""
        rule = triangle_rule(rule) if not isinstance(rule, TriangleRule) else rule
        mesh = mesh or self.triangulate(n_triangles)
        pts, w, _ = map_to_triangles(rule, mesh.vertices, mesh.triangles)
        xy = pts.reshape(-1, 2)
        J = self.tibial.area_factor(xy)
        return self._make(xy, w.reshape(-1) * J, f"TPSM-{rule.npoints} ({mesh.n_triangles} triangles)")

    def spatial_area(self, mesh: Triangulation) -> float:
        """Σ of the areas of the spatial triangles σ_kS (vertices lifted by Γ_t) (Sec. 3)."""
        P = self.tibial.to_bone(mesh.vertices)[mesh.triangles]
        return float(0.5 * np.linalg.norm(np.cross(P[:, 1] - P[:, 0], P[:, 2] - P[:, 0]), axis=1).sum())

    def mbm(self, n_triangles: int, mesh: Triangulation | None = None) -> Fibres:
        """The paper's MBM: one fibre per mesh vertex, each with the mean area
        (Σ spatial triangle areas) / (number of fibres) (Sec. 3)."""
        mesh = mesh or self.triangulate(n_triangles)
        nv = mesh.vertices.shape[0]
        return self._make(mesh.vertices, np.full(nv, self.spatial_area(mesh) / nv), f"MBM ({mesh.n_triangles} triangles)")

    def mbm_centroid(self, n_triangles: int, mesh: Triangulation | None = None) -> Fibres:
        """The modified MBM of Fig. 9: one fibre per triangle centroid with the mean area."""
        mesh = mesh or self.triangulate(n_triangles)
        nt = mesh.n_triangles
        return self._make(mesh.centroids, np.full(nt, self.spatial_area(mesh) / nt), f"MBM-centroid ({nt} triangles)")

    def model(self, method: str, n_triangles: int, mesh: Triangulation | None = None) -> Fibres:
        """``method`` in {"MBM", "MBM-centroid", "TPSM-1", "TPSM-3", "TPSM-4", "TPSM-6", "TPSM-7"}."""
        if method == "MBM":
            return self.mbm(n_triangles, mesh)
        if method == "MBM-centroid":
            return self.mbm_centroid(n_triangles, mesh)
        if method.startswith("TPSM-"):
            return self.fibres(n_triangles, int(method[5:]), mesh)
        raise SolverError(f"unknown ligament model {method!r}")

    def integrand(self, xy, R, t, pole=None):
        """Force and moment per unit planar area times ‖r_x × r_y‖ at xy (M, 2) for poses
        (T, …): returns (T, M, 6) (integrand of Eq. 8)."""
        R, t, _ = as_poses(R, t)
        p, q, J = self.fibre_ends(xy)
        Q = np.einsum("tij,nj->tni", R, q) + t[:, None, :]
        d = Q - p
        l = np.linalg.norm(d, axis=-1)
        c = _field(self.c, xy)
        l0 = _field(self.l0, xy)
        g = c * J * self.law(l / l0 - 1.0) / l
        f = g[..., None] * d
        pole = np.zeros(3) if pole is None else np.asarray(pole, dtype=float)
        return np.concatenate([f, np.cross(p - pole, f)], axis=-1)

    def with_(self, **kw) -> "TPSMLigament":
        return replace(self, **kw)


# ----------------------------------------------------------------------------------------------
# interop: OpenSim strands (multi-bundle ligaments) ⇄ TPSM
# ----------------------------------------------------------------------------------------------
def strand_fibres(tibial_points, femoral_points, slack_lengths, stiffness,
                  transition_strain: float = 0.06, label: str = "strands") -> Fibres:
    """The multi-bundle model of an OpenSim ligament: one Blankevoort1991 fibre per strand.

    tibial_points (n, 3) in the tibia frame, femoral_points (n, 3) in the femur frame (m),
    slack_lengths (n,) m, stiffness (n,) linear_stiffness in N (force per unit strain)."""
    P = np.asarray(tibial_points, float)
    n = P.shape[0]
    return Fibres(P, np.asarray(femoral_points, float), np.ones(n),
                  np.broadcast_to(np.asarray(stiffness, float), (n,)).copy(),
                  np.broadcast_to(np.asarray(slack_lengths, float), (n,)).copy(),
                  Law("blankevoort", transition_strain), None, label)


def tpsm_from_strands(tibial_points, femoral_points, slack_lengths, stiffness, *, mesh=None,
                      pose=None, transition_strain: float = 0.06, dilate: float | None = None,
                      mesh_tol: float = 0.0025, l0_mode: str = "strain", strain_lambda: float = 0.0,
                      name: str = "ligament") -> TPSMLigament:
    """Build a TPSM from an OpenSim ligament given as strands (e.g. Lenhart2015 ACLam1-6 + ACLpl1-6).

    Parameters
    ----------
    tibial_points : (n, 3)   strand attachment points on the tibia, tibia frame (m), n ≥ 3
    femoral_points : (n, 3)   homologous points on the femur, femur frame (m)
    slack_lengths : (n,) m;  stiffness : (n,) N (Blankevoort linear_stiffness per strand)
    mesh : (V, F) or Mesh, optional
        Tibia bone mesh in the tibia frame: the tibial insertion surface Γ_t is fitted (TPS, λ=0)
        through the mesh vertices under the footprint (the strand points must touch the mesh
        within ``mesh_tol``); without a mesh Γ_t goes through the strand points.
    pose : (R, t), default identity
        Reference pose (femur in tibia) at which strand strains are measured (``l0_mode="strain"``).
    dilate : float, optional
        The insertion contour is the convex hull of the projected strand points grown by
        ``dilate`` (default half the median nearest-neighbour spacing of the strands, so each
        strand owns about its share of area).
    l0_mode : "strain" (default) interpolates the strands' reference strains ε_i = l_i/l0_i - 1 by
        a TPS (λ = ``strain_lambda``) over the insertion and sets l0 = l_ref(x, y)/(1 + ε(x, y)),
        so each fibre has its strand's strain at the reference pose; "slack" interpolates the
        slack lengths themselves.

    The femoral insertion is the best-fit plane of the femoral points with Γ_f through them; φ
    maps the projected strand points exactly (λ = 0): each strand is one fibre of the TPSM. The
    stiffness per unit area is c = Σ k_i / A (A: area of Σ_t), so the total linear stiffness is
    preserved; the law is Blankevoort1991 with ``transition_strain``.

    Raises SolverError (fewer than 3 strands, collinear insertion, footprint not touching the mesh).
    """
    from ..geometry.insertion import insertion_from_mesh, insertion_from_points
    P = np.asarray(tibial_points, float)
    Q = np.asarray(femoral_points, float)
    if P.ndim != 2 or P.shape[1] != 3 or P.shape != Q.shape:
        raise SolverError(f"{name}: tibial and femoral strand points must both be (n, 3), got {P.shape}, {Q.shape}")
    n = P.shape[0]
    if n < 3:
        raise SolverError(f"{name}: a TPSM needs at least 3 strands (landmarks), got {n}")
    l0s = np.broadcast_to(np.asarray(slack_lengths, float), (n,))
    ks = np.broadcast_to(np.asarray(stiffness, float), (n,))
    R0, t0 = (np.eye(3), np.zeros(3)) if pose is None else (np.asarray(pose[0], float), np.asarray(pose[1], float))
    # femoral insertion first: its best-fit normal points away from the tibial insertion
    Qt = Q @ R0.T + t0
    fem = insertion_from_points(Q, name=f"{name} femoral insertion",
                                normal_hint=R0.T @ (Qt.mean(0) - P.mean(0)) * -1.0)
    if dilate is None:
        from scipy.spatial import cKDTree
        o, ax = fit_plane(P, what=f"{name} tibial insertion")
        xy = (P - o) @ ax[:2].T
        dilate = 0.5 * float(np.median(cKDTree(xy).query(xy, k=2)[0][:, 1]))
    hint = Qt.mean(0) - P.mean(0)  # tibial normal towards the femur
    if mesh is not None:
        V, F = mesh
        tib = insertion_from_mesh(V, F, P, tol=mesh_tol, dilate=dilate, name=f"{name} tibial insertion",
                                  normal_hint=hint)
    else:
        tib = insertion_from_points(P, dilate=dilate, name=f"{name} tibial insertion", normal_hint=hint)
    xy_t = tib.to_local(P)[:, :2]
    uv_f = fem.to_local(Q)[:, :2]
    phi = fit_tps(xy_t, uv_f, 0.0, what=f"{name} insertion-to-insertion map φ")
    lig = TPSMLigament(tib, fem, phi, 1.0, 1.0, Law("blankevoort", transition_strain), name, (R0, t0))
    # stiffness per unit area from the total linear stiffness over the (curved) insertion area
    mesh_fine = lig.triangulate(400)
    gp, gw, _ = map_to_triangles(triangle_rule(3), mesh_fine.vertices, mesh_fine.triangles)
    area = float(np.sum(gw.reshape(-1) * tib.area_factor(gp.reshape(-1, 2))))  # ∫ ‖r_x × r_y‖
    c = float(ks.sum() / area)
    strand_len = np.linalg.norm(Qt - P, axis=1)
    if l0_mode == "strain":
        eps_ref = fit_tps(xy_t, strand_len / l0s - 1.0, strain_lambda, what=f"{name} reference strain field")

        def l0_field(xy, _lig=lig, _eps=eps_ref, _R=R0, _t=t0):
            p, q, _ = _lig.fibre_ends(xy)
            l_ref = np.linalg.norm(q @ _R.T + _t - p, axis=-1)
            return l_ref / (1.0 + _eps(xy))
        l0 = l0_field
    elif l0_mode == "slack":
        l0 = fit_tps(xy_t, l0s, strain_lambda, what=f"{name} slack length field")
    else:
        raise SolverError(f"{name}: unknown l0_mode {l0_mode!r} (use 'strain' or 'slack')")
    return replace(lig, c=c, l0=l0, landmarks={"strand_xy": xy_t, "strand_uv": uv_f, "area": area,
                                               "total_stiffness": float(ks.sum()), "dilate": dilate})


def wrench_table(wrench: Wrench, time, name: str = "LigamentWrench", prefix: str = "ACL_on_tibia_in_tibia",
                 extra: dict | None = None):
    """A :class:`arthron.tables.Table` with the wrench over a motion (labels ``<prefix>_fx.._mz``;
    N, N·m), plus ``extra`` columns (name → (T,) values)."""
    labels, data = wrench.to_table(prefix)
    F = np.atleast_2d(data)
    cols, labs = [F], list(labels)
    for k, v in (extra or {}).items():
        labs.append(k)
        cols.append(np.asarray(v, float).reshape(-1, 1))
    return Table(name, np.asarray(time, float), labs, np.hstack(cols), in_degrees=False)


@dataclass(frozen=True)
class Strands:
    """Strands of a multi-bundle ligament read from a model: names, tibial points P (n, 3) in
    ``tibia_frame``, femoral points Q (n, 3) in ``femur_frame`` (m), slack lengths (m), linear
    stiffness (N) and transition strain per strand."""

    names: list
    P: np.ndarray
    Q: np.ndarray
    slack_length: np.ndarray
    stiffness: np.ndarray
    transition_strain: np.ndarray
    tibia_frame: str
    femur_frame: str

    def fibres(self) -> Fibres:
        """The model's own MBM (one Blankevoort fibre per strand)."""
        if not np.all(self.transition_strain == self.transition_strain[0]):
            raise SolverError("strands with different transition strains: build Fibres per group")
        return strand_fibres(self.P, self.Q, self.slack_length, self.stiffness, float(self.transition_strain[0]))

    def tpsm(self, **kw) -> TPSMLigament:
        """``tpsm_from_strands`` on these strands (keyword arguments passed on)."""
        kw.setdefault("transition_strain", float(np.mean(self.transition_strain)))
        return tpsm_from_strands(self.P, self.Q, self.slack_length, self.stiffness, **kw)


def strands_from_model(model, ligament: str, *, tibia_frame: str | None = None,
                       femur_frame: str | None = None) -> Strands:
    """Collect the Blankevoort1991Ligament strands whose names start with ``ligament`` (e.g.
    "ACL" → ACLam1..6, ACLpl1..6) from an ``arthron.io.read_osim`` model.

    Each strand must have exactly two fixed PathPoints on two frames shared by all strands; the
    tibial frame is ``tibia_frame`` or the one whose path contains "tib". Raises ModelFileError
    naming the offending element (no such strands, moving/conditional points, other frames).
    """
    src = getattr(model, "source", None) or getattr(model, "path", None)
    forces = model.forces.values() if isinstance(model.forces, dict) else model.forces
    sel = [f for f in forces if f.name.startswith(ligament) and f.type in ("Blankevoort1991Ligament",)]
    if not sel:
        raise ModelFileError(f"no Blankevoort1991Ligament named {ligament}* in the ForceSet", src)
    names, pts, l0, k, et = [], [], [], [], []
    for f in sel:
        where = f"<{f.type} name='{f.name}'>"
        pp = [] if f.path is None else f.path.points
        if len(pp) != 2 or any(getattr(p, "kind", "PathPoint") != "PathPoint" for p in pp):
            raise ModelFileError("a TPSM strand needs exactly two fixed PathPoints", src, where)
        names.append(f.name)
        pts.append({p.parent_frame: np.asarray(p.location, float) for p in pp})
        if len(pts[-1]) != 2:
            raise ModelFileError("both path points are on the same frame", src, where)
        try:
            l0.append(float(f.properties["slack_length"]))
            k.append(float(f.properties["linear_stiffness"]))
        except KeyError as exc:
            raise ModelFileError(f"missing property {exc}", src, where) from None
        et.append(float(f.properties.get("transition_strain", 0.06)))
    frames = set(pts[0])
    for n, p in zip(names, pts):
        if set(p) != frames:
            raise ModelFileError(f"strand is on frames {sorted(p)}, others on {sorted(frames)}", src,
                                 f"<Blankevoort1991Ligament name='{n}'>")
    if tibia_frame is None:
        tib = [fr for fr in frames if "tib" in fr.lower()]
        if len(tib) != 1:
            raise ModelFileError(f"cannot tell the tibial frame among {sorted(frames)}; pass tibia_frame", src)
        tibia_frame = tib[0]
    if tibia_frame not in frames:
        raise ModelFileError(f"strands are not attached to {tibia_frame}", src)
    femur_frame = femur_frame or next(fr for fr in frames if fr != tibia_frame)
    return Strands(names, np.array([p[tibia_frame] for p in pts]), np.array([p[femur_frame] for p in pts]),
                   np.array(l0), np.array(k), np.array(et), tibia_frame, femur_frame)


# ----------------------------------------------------------------------------------------------
# real models: poses of the two bones from arthron's kinematics
# ----------------------------------------------------------------------------------------------
def _body_name(frame: str) -> str:
    return frame[len("/bodyset/"):] if frame.startswith("/bodyset/") else frame.strip("/")


def ligament_poses(model, tree, q, tibia_frame: str, femur_frame: str):
    """Poses (R (T,3,3), t (T,3)) of ``femur_frame`` in ``tibia_frame`` for coordinates q (T, nq)
    (model order, SI), from arthron's forward kinematics. Frames must be bodies."""
    for fr in (tibia_frame, femur_frame):
        if not fr.startswith("/bodyset/") and "/" in fr.strip("/"):
            raise UnsupportedFeature(f"ligament attached to {fr}: only body frames are supported")
    kin = forward_kinematics(tree, np.atleast_2d(q))
    bt, bf = tree.body_index(_body_name(tibia_frame)), tree.body_index(_body_name(femur_frame))
    R, o = kin.body_R(tree), kin.body_origin(tree)
    Rt, Rf = R[:, bt], R[:, bf]
    return Rt.transpose(0, 2, 1) @ Rf, np.einsum("tji,tj->ti", Rt, o[:, bf] - o[:, bt])
