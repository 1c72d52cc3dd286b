"""The thin-plate spline ligament model (TPSM, seed 000) and the multi-bundle baseline (MBM).

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
Paper sign note: seed 000 writes ŝ = (p - q)/l; here the force on the tibia points from its
insertion towards the femur, f ∝ (q - p), i.e. tension.

Sources: seed 000 (Eqs. 1-16, Figs. 6-10); Blankevoort & Huiskes (1991) for the toe-linear law as
implemented by OpenSim 4.6's Blankevoort1991Ligament.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import SolverError
from ..geometry.insertion import PlanarInsertion, fit_plane, resample_contour
from ..geometry.quadrature import TriangleRule, map_to_triangles, triangle_rule
from ..geometry.tps import ThinPlateSpline, fit_tps
from ..geometry.triangulation import Triangulation, triangulate_polygon
from ..models.motion import coordinates_from_table

__all__ = [
    "run_model", "ligament_poses", "Law", "Fibres", "Wrench", "TPSMLigament", "as_poses", "synthetic_acl", "synthetic_flexion",
    "reference_wrench", "force_error", "convergence_study", "tpsm_from_strands", "strand_fibres",
    "blankevoort_xml", "run_demo", "rot_z", "Strands", "strands_from_model", "wrench_table",
]


# ----------------------------------------------------------------------------------------------
# constitutive laws
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Law:
    """Fibre force-strain law: force per unit area = c · law(ε) (seed 000 Eq. 6).

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
    """Rotations about z by angles theta (T,) → (T, 3, 3)."""
    th = np.atleast_1d(np.asarray(theta, dtype=float))
    c, s = np.cos(th), np.sin(th)
    R = np.zeros(th.shape + (3, 3))
    R[..., 0, 0] = c
    R[..., 0, 1] = -s
    R[..., 1, 0] = s
    R[..., 1, 1] = c
    R[..., 2, 2] = 1.0
    return R


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
        """Ligament wrench on the tibia at poses (seed 000 Eqs. 6, 8, 10, 14).

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
    """A TPSM ligament (seed 000 Sec. 2): insertions, the insertion-to-insertion map φ and fields.

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
# adaptive reference (the benchmark of Eq. 16)
# ----------------------------------------------------------------------------------------------
def reference_wrench(lig: TPSMLigament, R=None, t=None, pole=None, *, rtol: float = 1e-7,
                     max_level: int = 16, start_triangles: int = 64, return_info: bool = False):
    """Adaptive integration of Eq. 8 over Σ_tp (the benchmark that replaces Matlab's integral2).

    The contour is triangulated, each triangle integrated by the 7-point degree-5 rule and by the
    same rule on its 4 midpoint children; triangles whose difference exceeds their share
    (area-proportional) of ``rtol`` × |F| (moments: × max(|M|, |F| √area)) are split, the others contribute the children's
    sum. The slack/taut boundary (a kink in the integrand) is resolved by the refinement.
    Vectorized over poses (the error test takes the worst pose). Cross-checked against
    ``scipy.integrate.dblquad`` in the tests.

    Returns Wrench (and a dict with the number of evaluations and triangles if ``return_info``).
    """
    if R is None:
        if lig.default_pose is None:
            raise SolverError(f"{lig.name}: no pose given and no default pose")
        R, t = lig.default_pose
    R, t, single = as_poses(R, t)
    rule = triangle_rule(7)
    mesh = lig.triangulate(max(start_triangles, lig.tibial.contour.shape[0]))
    tris = mesh.vertices[mesh.triangles]  # (K, 3, 2)
    area_total = mesh.area

    def integrate(tr):
        pts = np.einsum("gj,kjd->kgd", rule.barycentric, tr).reshape(-1, 2)
        vals = lig.integrand(pts, R, t, pole).reshape(R.shape[0], tr.shape[0], rule.npoints, 6)
        e1, e2 = tr[:, 1] - tr[:, 0], tr[:, 2] - tr[:, 0]
        A = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
        return np.einsum("tkgc,g,k->tkc", vals, rule.weights, A), A

    def children(tr):
        a, b, c = tr[:, 0], tr[:, 1], tr[:, 2]
        ab, bc, ca = (a + b) / 2, (b + c) / 2, (c + a) / 2
        return np.concatenate([np.stack(x, axis=1) for x in
                               ([a, ab, ca], [ab, b, bc], [ca, bc, c], [ab, bc, ca])])

    parent, _ = integrate(tris)
    est = parent.sum(axis=1)  # (T, 6)
    scale = np.maximum(np.linalg.norm(est[:, :3], axis=1), 1e-300)[:, None]
    # moments can cancel (symmetric insertions): measure them against |F| × insertion size too
    mscale = np.maximum(np.linalg.norm(est[:, 3:], axis=1), scale[:, 0] * np.sqrt(area_total))[:, None]
    total = np.zeros_like(est)
    nevals = tris.shape[0] * rule.npoints
    level = 0
    while tris.shape[0]:
        ch = children(tris)
        K = tris.shape[0]
        cv, A = integrate(ch)
        nevals += ch.shape[0] * rule.npoints
        csum = cv.reshape(cv.shape[0], 4, K, 6).sum(axis=1)
        err = np.abs(csum - parent)
        rel = np.maximum(err[..., :3].max(-1) / scale, err[..., 3:].max(-1) / mscale).max(axis=0)  # (K,)
        Ak = A.reshape(4, K).sum(axis=0)
        ok = rel <= rtol * Ak / area_total
        level += 1
        if level >= max_level:
            ok[:] = True
        total += csum[:, ok].sum(axis=1)
        bad = ~ok
        if not bad.any():
            break
        idx = np.nonzero(bad)[0]
        tris = ch.reshape(4, K, 3, 2)[:, idx].reshape(-1, 3, 2)
        parent = cv.reshape(cv.shape[0], 4, K, 6)[:, :, idx].reshape(cv.shape[0], -1, 6)
    pole_arr = np.zeros(3) if pole is None else np.asarray(pole, float)
    w = Wrench(total[0, :3], total[0, 3:], pole_arr) if single else Wrench(total[:, :3], total[:, 3:], pole_arr)
    if return_info:
        return w, {"evaluations": nevals, "levels": level}
    return w


def force_error(model: Wrench, ref: Wrench) -> tuple:
    """Seed 000 Eq. 16: (e_F, e_M) = 100 |‖·‖_model - ‖·‖_ref| / ‖·‖_ref, in percent."""
    eF = 100.0 * np.abs(model.force_magnitude - ref.force_magnitude) / ref.force_magnitude
    eM = 100.0 * np.abs(model.moment_magnitude - ref.moment_magnitude) / ref.moment_magnitude
    return eF, eM


def convergence_study(lig: TPSMLigament, n_triangles, methods=("MBM", "TPSM-1", "TPSM-3", "TPSM-4"),
                      R=None, t=None, ref: Wrench | None = None, timing_repeats: int = 0):
    """Force/moment errors (Eq. 16) vs the adaptive reference for each method and mesh.

    Returns dict with "n_triangles", "reference" and per method arrays "eF", "eM", "n_fibres",
    and (if timing_repeats > 0) "us" (µs per single-pose wrench, best of repeats).
    """
    if R is None:
        R, t = lig.default_pose
    ref = ref or reference_wrench(lig, R, t)
    out = {"n_triangles": list(n_triangles), "reference": ref}
    meshes = {n: lig.triangulate(n) for n in n_triangles}
    for m in methods:
        eF, eM, nf, us = [], [], [], []
        for n in n_triangles:
            fib = lig.model(m, n, meshes[n])
            w = fib.wrench(R, t)
            a, b = force_error(w, ref)
            eF.append(float(a))
            eM.append(float(b))
            nf.append(fib.n)
            if timing_repeats:
                best = np.inf
                for _ in range(timing_repeats):
                    t0 = time.perf_counter()
                    fib.wrench(R, t)
                    best = min(best, time.perf_counter() - t0)
                us.append(best * 1e6)
        out[m] = {"eF": np.array(eF), "eM": np.array(eM), "n_fibres": np.array(nf)}
        if timing_repeats:
            out[m]["us"] = np.array(us)
    return out


# ----------------------------------------------------------------------------------------------
# the embedded default: a synthetic, anatomically plausible ACL
# ----------------------------------------------------------------------------------------------
_MM = 1e-3
# tibia frame (right knee, OpenSim convention): x anterior, y superior, z lateral; origin at the
# centre of the tibial plateau. Femur frame at full extension: parallel, origin on the flexion
# axis (transepicondylar, along z) 22 mm above and 4 mm behind the tibial origin.
SYNTH_FEMUR_ORIGIN = np.array([-4.0, 22.0, 0.0]) * _MM


def _frame(normal, e1_hint):
    n = np.asarray(normal, float)
    n = n / np.linalg.norm(n)
    e1 = np.asarray(e1_hint, float)
    e1 = e1 - np.dot(e1, n) * n
    e1 /= np.linalg.norm(e1)
    return np.vstack([e1, np.cross(n, e1), n])


def _oval(a, b, n, skew=0.0, taper=0.0, phase=0.0):
    th = np.linspace(0, 2 * np.pi, n, endpoint=False) + phase
    x = a * np.cos(th) * (1.0 + skew * np.sin(th))
    y = b * np.sin(th) * (1.0 - taper * np.cos(th))
    return np.column_stack([x, y])


def _synthetic_side(centre, normal, e1_hint, contour_mm, height_mm, seed):
    """Point cloud (tibia/femur frame, m) of a curved footprint and its 3-D contour."""
    ax = _frame(normal, e1_hint)
    rng = np.random.default_rng(seed)
    lo, hi = contour_mm.min(0) - 2.5, contour_mm.max(0) + 2.5
    gx, gy = np.meshgrid(np.arange(lo[0], hi[0] + 1e-9, 2.0), np.arange(lo[1], hi[1] + 1e-9, 2.0))
    xy = np.column_stack([gx.ravel(), gy.ravel()]) + rng.uniform(-0.4, 0.4, (gx.size, 2))
    cloud = centre + (xy[:, :1] * ax[0] + xy[:, 1:] * ax[1] + height_mm(xy)[:, None] * ax[2]) * _MM
    cont = centre + (contour_mm[:, :1] * ax[0] + contour_mm[:, 1:] * ax[1]
                     + height_mm(contour_mm)[:, None] * ax[2]) * _MM
    return cloud, cont, ax


def synthetic_acl(l0: float = 0.027, c: float = 100e6, law: Law = QUADRATIC, *,
                  n_contour_landmarks: int = 12, contour_lambda: float = 0.1 * _MM**2) -> TPSMLigament:
    """A synthetic but anatomically plausible right-knee ACL built from scratch (no input files).

    Subject data: tibial footprint 18 × 11 mm (area ≈ 150 mm²) on a gently curved intercondylar
    surface, femoral footprint 16 × 9 mm (≈ 110 mm²) on the lateral condyle's notch wall, both
    as point clouds with digitized 16-point contours; literature-like reference data: elliptic
    contours with four bundle centroids (two anteromedial, two posterolateral). The model follows
    seed 000 step by step: best-fit planes and frames, TPS registration φ_t, φ_f of the reference
    contours (λ = 0), mapped centroids, insertion-to-insertion map φ from the centroids (λ = 0)
    plus ``n_contour_landmarks`` contour landmarks (λ = ``contour_lambda``: the paper's 0.1 mm²),
    TPS height fields Γ (λ = 0). At full extension (the default pose) fibres are 17-41 mm long
    (median 28 mm; anteromedial fibres longer), so l0 = 27 mm leaves the ligament partially
    slack (54 % of the insertion taut) and l0 = 10 mm fully taut (the paper's two cases). c: stiffness per unit area (Pa, paper: 100 MPa).
    """
    # --- subject tibial insertion (tibia frame) ------------------------------------------------
    ct = np.array([9.0, 1.0, -2.5]) * _MM
    cont_t = _oval(9.0, 5.6, 16, skew=0.07, taper=0.10)
    cloud_t, c3_t, _ = _synthetic_side(
        ct, [0.12, 1.0, 0.05], [1.0, 0.0, 0.0], cont_t,
        lambda xy: -(xy[:, 0] ** 2) / (2 * 45.0) + (xy[:, 1] ** 2) / (2 * 30.0) + 0.25 * np.sin(xy[:, 0] / 3.0), 0)
    from ..geometry.insertion import insertion_from_points
    tib = insertion_from_points(cloud_t, c3_t, name="ACL tibial insertion", normal_hint=[0, 1, 0],
                                e1_hint=[1, 0, 0], contour_mode="polygon")
    # --- subject femoral insertion (femur frame) -----------------------------------------------
    cf = np.array([-3.0, 0.5, 5.5]) * _MM  # ≈ (-7, 22.5, 5.5) mm in the tibia frame at extension
    cont_f = _oval(8.0, 4.6, 16, skew=-0.06, taper=0.08, phase=0.1)
    cloud_f, c3_f, _ = _synthetic_side(
        cf, [0.05, -0.25, -1.0], [-0.35, 1.0, 0.0], cont_f,
        lambda xy: (xy[:, 0] ** 2) / (2 * 35.0) + (xy[:, 1] ** 2) / (2 * 50.0), 1)
    fem = insertion_from_points(cloud_f, c3_f, name="ACL femoral insertion", normal_hint=[0, 0, -1],
                                e1_hint=[-0.35, 1.0, 0.0], contour_mode="polygon")
    # --- literature-like reference data (S_rt, S_rf, mm) ----------------------------------------
    ref_t = _oval(9.5, 5.0, 40)
    ref_f = _oval(8.5, 4.2, 40)
    cen_t = np.array([[5.0, 1.2], [1.8, 2.2], [-1.8, -1.6], [-5.2, -0.8]])  # AM1, AM2, PL1, PL2
    cen_f = np.array([[4.6, 0.6], [1.6, 2.0], [-1.6, -1.8], [-4.8, -0.4]])
    from ..geometry.insertion import register_reference
    tc_mm = tib.contour / _MM
    fc_mm = fem.contour / _MM
    _, Ct = register_reference(ref_t, cen_t, tc_mm, ref_start=[10, 0], subject_start=[20, 0])
    _, Cf = register_reference(ref_f, cen_f, fc_mm, ref_start=[10, 0], subject_start=[20, 0])
    Kt = resample_contour(tib.contour, n_contour_landmarks, [1.0, 0.0])
    Kf = resample_contour(fem.contour, n_contour_landmarks, [1.0, 0.0])
    lam = np.r_[np.zeros(len(Ct)), np.full(n_contour_landmarks, contour_lambda)]
    phi = fit_tps(np.vstack([Ct * _MM, Kt]), np.vstack([Cf * _MM, Kf]), lam,
                  what="ACL insertion-to-insertion map φ")
    return TPSMLigament(tib, fem, phi, c, l0, law, "ACL (synthetic)",
                        (np.eye(3), SYNTH_FEMUR_ORIGIN.copy()),
                        {"tibial_centroids": Ct * _MM, "femoral_centroids": Cf * _MM,
                         "tibial_contour_landmarks": Kt, "femoral_contour_landmarks": Kf})


def synthetic_flexion(angles_deg):
    """Poses (R (T,3,3), t (T,3)) of the synthetic femur in the tibia frame for knee flexion
    angles (degrees): rotation about the femur's z axis (flexion axis) through its origin."""
    th = np.deg2rad(np.atleast_1d(np.asarray(angles_deg, float)))
    return rot_z(-th), np.broadcast_to(SYNTH_FEMUR_ORIGIN, (th.size, 3)).copy()


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


def blankevoort_xml(fibres: Fibres, *, tibia_frame: str = "/bodyset/tibia_proximal_r",
                    femur_frame: str = "/bodyset/femur_distal_r", prefix: str = "TPSM",
                    big_transition_strain: float = 1e3) -> str:
    """OpenSim 4.6 ``Blankevoort1991Ligament`` components for each fibre (XML text, to be placed
    in a model's ``<ForceSet><objects>``). Path: P1 on the femur (q_n), P2 on the tibia (p_n),
    like Lenhart2015's strands.

    Exact force mapping: "blankevoort" law → linear_stiffness = w_n c_n, transition_strain ε_t,
    slack_length = l0_n; "quadratic" law c ε² → the Blankevoort toe region with
    transition_strain = ``big_transition_strain`` and linear_stiffness = 2 w c ε_t (exact while
    ε < ε_t). Other laws cannot be expressed and raise SolverError, as do negative weights
    (Gauss rules with a negative weight, e.g. the 4-point rule: use 1, 3, 6 or 7 points).
    """
    kind = fibres.law.kind
    if kind == "blankevoort":
        et = fibres.law.transition_strain
        k = fibres.weight * fibres.c
    elif kind == "quadratic":
        et = big_transition_strain
        k = 2.0 * fibres.weight * fibres.c * et
    else:
        raise SolverError(f"{fibres.label}: a {kind!r} fibre law has no Blankevoort1991Ligament equivalent")
    if np.any(k <= 0):
        raise SolverError(f"{fibres.label}: {int(np.sum(k <= 0))} fibres have non-positive stiffness "
                          "(negative quadrature weights?); OpenSim ligaments need positive stiffness")
    out = []
    for i in range(fibres.n):
        q = " ".join(repr(float(v)) for v in fibres.q[i])
        p = " ".join(repr(float(v)) for v in fibres.p[i])
        nm = f"{prefix}{i + 1}"
        out.append(
            f'<Blankevoort1991Ligament name="{nm}">\n'
            f'  <appliesForce>true</appliesForce>\n'
            f'  <GeometryPath name="geometrypath"><PathPointSet><objects>\n'
            f'    <PathPoint name="{nm}-P1"><socket_parent_frame>{femur_frame}</socket_parent_frame>'
            f'<location>{q}</location></PathPoint>\n'
            f'    <PathPoint name="{nm}-P2"><socket_parent_frame>{tibia_frame}</socket_parent_frame>'
            f'<location>{p}</location></PathPoint>\n'
            f'  </objects></PathPointSet></GeometryPath>\n'
            f'  <linear_stiffness>{float(k[i])!r}</linear_stiffness>\n'
            f'  <transition_strain>{float(et)!r}</transition_strain>\n'
            f'  <damping_coefficient>0</damping_coefficient>\n'
            f'  <slack_length>{float(fibres.l0[i])!r}</slack_length>\n'
            f'</Blankevoort1991Ligament>')
    return "\n".join(out)


def wrench_table(wrench: Wrench, time, name: str = "LigamentWrench", prefix: str = "ACL_on_tibia_in_tibia",
                 extra: dict | None = None):
    """An ``arthron.io.sto.Table`` with the wrench over a motion (labels ``<prefix>_fx.._mz``)."""
    from ..tables import Table
    labels, data = wrench.to_table(prefix)
    F = np.atleast_2d(data)
    cols, labs = [F], list(labels)
    for k, v in (extra or {}).items():
        labs.append(k)
        cols.append(np.asarray(v, float).reshape(-1, 1))
    return Table(name, np.asarray(time, float), labs, np.hstack(cols), in_degrees=False)


DEMO_TRIANGLES = (15, 20, 30, 45, 60, 90, 120, 180, 240, 360, 500, 720)


def run_demo(out_dir, n_triangles=DEMO_TRIANGLES, verbose: bool = True) -> dict:
    """``arthron ligament --demo``: the seed 000 study on the embedded synthetic ACL.

    Writes into ``out_dir``: ``tpsm_errors.csv`` (force/moment errors, Eq. 16, of MBM, MBM-centroid,
    TPSM-1/3/4 vs the adaptive reference for l0 = 27 mm and 10 mm) and ``acl_wrench_flexion.sto``
    (TPSM-3, 360 triangles, l0 = 27 mm, 0-120° flexion). Returns a summary dict and prints it.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    methods = ("MBM", "MBM-centroid", "TPSM-1", "TPSM-3", "TPSM-4")
    rows, summary = [], {}
    for l0 in (0.027, 0.010):
        lig = synthetic_acl(l0=l0)
        st = convergence_study(lig, list(n_triangles), methods)
        key = f"l0={l0 * 1e3:.0f}mm"
        summary[key] = {"reference_force_N": float(st["reference"].force_magnitude)}
        for m in methods:
            e = st[m]["eF"]
            above = [n for n, v in zip(n_triangles, e) if v >= 10.0]
            cross = None if above and above[-1] == n_triangles[-1] else \
                (n_triangles[n_triangles.index(above[-1]) + 1] if above else n_triangles[0])
            summary[key][m] = {"below_10pct_from": cross,
                               "eF_at": {int(n): float(v) for n, v in zip(n_triangles, e)}}
            for n, a, b, nf in zip(n_triangles, st[m]["eF"], st[m]["eM"], st[m]["n_fibres"]):
                rows.append(f"{l0 * 1e3:.0f},{m},{n},{nf},{a:.6g},{b:.6g}")
    (out / "tpsm_errors.csv").write_text("l0_mm,method,n_triangles,n_fibres,force_error_pct,moment_error_pct\n"
                                         + "\n".join(rows) + "\n")
    lig = synthetic_acl(l0=0.027)
    ang = np.linspace(0.0, 120.0, 121)
    R, t = synthetic_flexion(ang)
    w = lig.fibres(360, 3).wrench(R, t)
    from ..io.sto import write_sto
    write_sto(out / "acl_wrench_flexion.sto",
              wrench_table(w, ang / 100.0, extra={"knee_flexion_deg": ang}))
    summary["files"] = [str(out / "tpsm_errors.csv"), str(out / "acl_wrench_flexion.sto")]
    if verbose:
        for key in ("l0=27mm", "l0=10mm"):
            print(f"synthetic ACL, {key}: reference |F| = {summary[key]['reference_force_N']:.1f} N")
            for m in methods:
                e = summary[key][m]["eF_at"]
                print(f"  {m:13s} force error {e.get(30, float('nan')):7.2f}% @30  {e.get(45, float('nan')):7.2f}% @45"
                      f"  {e.get(360, float('nan')):7.3f}% @360   <10% from {summary[key][m]['below_10pct_from']} triangles")
        print("wrote", ", ".join(summary["files"]))
    return summary


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
    from ..errors import ModelFileError
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
# real models: `arthron ligament MODEL.osim --ligament ACL --mesh TIBIA.stl --motion M.mot -o OUT.sto`
# ----------------------------------------------------------------------------------------------
def _body_name(frame: str) -> str:
    return frame[len("/bodyset/"):] if frame.startswith("/bodyset/") else frame.strip("/")


def ligament_poses(model, tree, q, tibia_frame: str, femur_frame: str):
    """Poses (R (T,3,3), t (T,3)) of ``femur_frame`` in ``tibia_frame`` for coordinates q (T, nq)
    (model order, SI), from arthron's forward kinematics. Frames must be bodies."""
    from ..errors import UnsupportedFeature
    from ..multibody.kinematics import forward_kinematics
    for fr in (tibia_frame, femur_frame):
        if not fr.startswith("/bodyset/") and "/" in fr.strip("/"):
            raise UnsupportedFeature(f"ligament attached to {fr}: only body frames are supported")
    kin = forward_kinematics(tree, np.atleast_2d(q))
    bt, bf = tree.body_index(_body_name(tibia_frame)), tree.body_index(_body_name(femur_frame))
    R, o = kin.body_R(tree), kin.body_origin(tree)
    Rt, Rf = R[:, bt], R[:, bf]
    return Rt.transpose(0, 2, 1) @ Rf, np.einsum("tji,tj->ti", Rt, o[:, bf] - o[:, bt])


def run_model(model_path, ligament: str, *, mesh=None, motion=None, out=None, n_triangles: int = 360,
              rule: int = 3, tibia_frame: str | None = None, include_mbm: bool = True):
    """The TPSM of a model's multi-strand ligament over a motion (``arthron ligament MODEL.osim``).

    Parameters
    ----------
    model_path : .osim file (read with ``arthron.io.read_osim``)
    ligament : strand name prefix, e.g. "ACL" (Blankevoort1991Ligament strands, see
        ``strands_from_model``)
    mesh : tibia bone mesh file (STL/VTP/OBJ, in the tibial body frame) or None (Γ_t through the
        strand points)
    motion : .mot/.sto with coordinate columns (missing coordinates keep defaults, with a
        warning; with ``inDegrees=yes`` only rotational coordinates are converted, as OpenSim
        does — "coupled" ones such as Lenhart2015's knee_flex_r stay as written); None → the
        default pose only
    out : .sto to write (optional)
    n_triangles, rule : TPSM discretization (default TPSM-3 on 360 triangles)

    Returns
    -------
    (table, info): an ``arthron.io.sto.Table`` with the wrench on the tibial body in its frame
    (``<lig>_tpsm_on_<body>_in_<body>_fx .. _mz``, and the same for the model's strands, ``_mbm_``,
    if ``include_mbm``), and a dict with the ligament, fibres and strands objects.
    """
    from ..io.mesh import load_mesh
    from ..io.osim import read_osim
    from ..tables import Table
    from ..io.sto import read_sto, write_sto
    from ..multibody.kinematics import compile_model
    model = read_osim(model_path)
    strands = strands_from_model(model, ligament, tibia_frame=tibia_frame)
    tree = compile_model(model)
    if motion is None:
        table_in = None
        q = np.asarray(tree.default_q, float)[None]
        time_ = np.zeros(1)
    else:
        table_in = read_sto(motion)
        q = coordinates_from_table(model, table_in, locked_at_default=True, missing="default")
        time_ = np.asarray(table_in.time, float)
    R, t = ligament_poses(model, tree, q, strands.tibia_frame, strands.femur_frame)
    m = load_mesh(mesh) if mesh is not None else None
    try:
        lig = strands.tpsm(mesh=m, name=ligament)
    except SolverError as exc:  # name the files: the strands come from the model, Γ_t from the mesh
        raise SolverError(exc.message, path=mesh if mesh is not None else model_path,
                          where=f"{ligament} strands of {model_path}" if mesh is not None else None) from None
    fib = lig.fibres(n_triangles, rule)
    body = _body_name(strands.tibia_frame)
    w = fib.wrench(R, t)
    labels, data = w.to_table(f"{ligament}_tpsm_on_{body}_in_{body}")
    labels, cols = list(labels), [np.atleast_2d(data)]
    mbm = strands.fibres()
    if include_mbm:
        lm, dm = mbm.wrench(R, t).to_table(f"{ligament}_mbm_on_{body}_in_{body}")
        labels += lm
        cols.append(np.atleast_2d(dm))
    table = Table(f"{ligament}_wrench", time_, labels, np.hstack(cols), in_degrees=False,
                  comments=[f"TPSM-{rule} on {n_triangles} triangles ({fib.n} fibres) built from "
                            f"{len(strands.names)} strands; moments about the {body} origin"])
    if out is not None:
        write_sto(out, table)
    return table, {"ligament": lig, "fibres": fib, "strands": strands, "mbm": mbm, "poses": (R, t)}


def export_model(model, strands: "Strands", fibres: Fibres, out, *, prefix: str | None = None):
    """Write ``model`` with the ligament's strands replaced by the TPSM's quadrature fibres.

    Each fibre becomes a ``Blankevoort1991Ligament`` (:func:`blankevoort_xml`) between the
    strands' femoral and tibial frames, so OpenSim 4.6 applies the TPSM wrench. The input model
    is not changed; the file is written whole or not at all (:func:`arthron.io.osim.write_osim`).

    Parameters
    ----------
    model : arthron.models.model.Model holding ``strands`` (e.g. from :func:`strands_from_model`)
    strands : Strands; fibres : Fibres (positive weights: Gauss rules 1, 3, 6 or 7)
    out : output .osim path
    prefix : name prefix of the new components (default ``<first strand prefix>_tpsm``)

    Returns
    -------
    the new Model.
    """
    from lxml import etree

    from ..io.osim import write_osim
    from ..models.model import Force
    new = model.copy()
    for n in strands.names:
        new.forces.pop(n, None)
    prefix = prefix or (strands.names[0].rstrip("0123456789") + "_tpsm")
    xml = blankevoort_xml(fibres, tibia_frame=strands.tibia_frame, femur_frame=strands.femur_frame,
                          prefix=prefix)
    for el in etree.fromstring(f"<objects>{xml}</objects>"):
        new.forces[el.get("name")] = Force(el.get("name"), el.tag, modelled=False, raw=el)
    write_osim(out, new)
    return new
