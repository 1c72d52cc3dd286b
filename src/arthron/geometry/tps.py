"""Thin-plate splines with per-landmark relaxation (the TPSM paper, Eqs. 1-5).

A thin-plate spline (TPS) is the function

    t(x, y) = α0 + α1 x + α2 y + Σ_i a_i g_i(x, y),   g_i = r_i² log r_i          (Eqs. 1-2)

whose coefficients C = [a; α] solve the (n+3)×(n+3) system

    [G + Λ  P] [a]   [t]
    [Pᵀ     0] [α] = [0],     G_ij = g_i(x_j, y_j),  P = [1 x y],  Λ = diag(λ_i)   (Eqs. 3-5)

λ_i = 0 interpolates landmark i exactly; λ_i → ∞ relaxes it towards the affine least-squares fit.
λ has the units of g, i.e. length² of the landmark coordinates: the paper's λ = 0.1 for
coordinates in millimetres is λ = 1e-7 for the same landmarks in metres (the fitted map is the
same, see ``tests/test_tps.py``).

scipy's ``RBFInterpolator(kernel="thin_plate_spline", degree=1, smoothing=λ)`` builds the same
system (it adds ``smoothing[i]`` to the kernel diagonal and only rescales the monomial basis,
which does not change the solution), so both give the same function; the test suite checks it.
The solve here is our own because the model also needs the coefficients and the first
derivatives (for the area factor ‖r_x × r_y‖, Eq. 8) at many points, vectorized.

Values may be scalar (a height field Γ, shape ``(n,)``) or vectors (a 2D→2D map φ, shape
``(n, 2)``; each component is an independent TPS sharing L, as in the paper).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..errors import SolverError

__all__ = ["ThinPlateSpline", "tps_kernel", "fit_tps"]


def tps_kernel(r2: np.ndarray) -> np.ndarray:
    """g = r² log r written with r²: ½ r² log r², with g(0) = 0 (Eq. 2)."""
    r2 = np.asarray(r2, dtype=float)
    out = np.zeros_like(r2)
    pos = r2 > 0.0
    out[pos] = 0.5 * r2[pos] * np.log(r2[pos])
    return out


@dataclass(frozen=True)
class ThinPlateSpline:
    """A fitted thin-plate spline t: R² → R^k (Eq. 1).

    Attributes
    ----------
    landmarks : (n, 2) float
        Landmarks P_i = (x_i, y_i).
    a : (n, k) float
        RBF coefficients a_i (first n rows of C, Eq. 3).
    alpha : (3, k) float
        Affine coefficients α0, α1, α2 (last 3 rows of C).
    lam : (n,) float
        The relaxation λ_i used (units: length²).
    scalar : bool
        True when fitted to scalar values: evaluation then drops the trailing axis.
    """

    landmarks: np.ndarray
    a: np.ndarray
    alpha: np.ndarray
    lam: np.ndarray
    scalar: bool

    @property
    def n(self) -> int:
        return self.landmarks.shape[0]

    @property
    def coefficients(self) -> np.ndarray:
        """C, shape (n+3, k): a stacked over α (Eq. 3)."""
        return np.vstack([self.a, self.alpha])

    def _diff(self, pts):
        pts = np.asarray(pts, dtype=float)
        if pts.shape[-1] != 2:
            raise SolverError(f"TPS evaluation points must have 2 coordinates, got shape {pts.shape}")
        d = pts[..., None, :] - self.landmarks  # (..., n, 2)
        return pts, d, np.einsum("...ij,...ij->...i", d, d)

    def __call__(self, pts) -> np.ndarray:
        """Values t(x, y) at points of shape (..., 2) → (...,) scalar or (..., k)."""
        pts, _, r2 = self._diff(pts)
        val = tps_kernel(r2) @ self.a + self.alpha[0] + pts @ self.alpha[1:]
        return val[..., 0] if self.scalar else val

    def gradient(self, pts) -> np.ndarray:
        """First derivatives at points (..., 2) → (..., 2) for scalar fields [t_x, t_y], or
        (..., k, 2) Jacobian rows [∂t_k/∂x, ∂t_k/∂y] for maps.

        ∂g_i/∂x = (x - x_i)(2 log r_i + 1) = (x - x_i)(log r_i² + 1), zero at r_i = 0.
        """
        pts, d, r2 = self._diff(pts)
        fac = np.zeros_like(r2)
        pos = r2 > 0.0
        fac[pos] = np.log(r2[pos]) + 1.0
        dg = d * fac[..., None]  # (..., n, 2)
        jac = np.einsum("...nj,nk->...kj", dg, self.a) + self.alpha[1:].T  # (..., k, 2)
        return jac[..., 0, :] if self.scalar else jac

    def value_and_gradient(self, pts):
        """Both at once (one distance computation): (values, gradients) as above."""
        pts, d, r2 = self._diff(pts)
        pos = r2 > 0.0
        lg = np.zeros_like(r2)
        lg[pos] = np.log(r2[pos])
        val = (0.5 * r2 * lg) @ self.a + self.alpha[0] + pts @ self.alpha[1:]
        fac = np.where(pos, lg + 1.0, 0.0)
        jac = np.einsum("...nj,nk->...kj", d * fac[..., None], self.a) + self.alpha[1:].T
        if self.scalar:
            return val[..., 0], jac[..., 0, :]
        return val, jac

    def bending_energy(self) -> np.ndarray:
        """aᵀ G a per component (proportional to the bending energy of the warp), shape (k,)."""
        d = self.landmarks[:, None, :] - self.landmarks[None, :, :]
        G = tps_kernel(np.einsum("ijk,ijk->ij", d, d))
        return np.einsum("ik,ij,jk->k", self.a, G, self.a)


def fit_tps(landmarks, values, lam=0.0, *, what: str = "TPS") -> ThinPlateSpline:
    """Fit a thin-plate spline through landmarks (the TPSM paper, Eqs. 1-5).

    Parameters
    ----------
    landmarks : (n, 2) array_like
        Landmarks P_i = (x_i, y_i); n ≥ 3 and not all collinear.
    values : (n,) or (n, k) array_like
        Prescribed values t_i (heights z_i for a field Γ, homologs (u_i, v_i) for a map φ).
    lam : float or (n,) array_like, default 0
        Relaxation λ_i ≥ 0 added to the diagonal of G (units length², see the module doc).
    what : str
        Name used in error messages (e.g. ``"tibial height field"``).

    Returns
    -------
    ThinPlateSpline

    Raises
    ------
    SolverError
        Fewer than 3 landmarks, collinear or repeated landmarks (singular L), negative λ,
        mismatched shapes or non-finite input.
    """
    P = np.asarray(landmarks, dtype=float)
    t = np.asarray(values, dtype=float)
    if P.ndim != 2 or P.shape[1] != 2:
        raise SolverError(f"{what}: landmarks must have shape (n, 2), got {P.shape}")
    n = P.shape[0]
    if n < 3:
        raise SolverError(f"{what}: a thin-plate spline needs at least 3 landmarks, got {n}")
    scalar = t.ndim == 1
    t2 = t[:, None] if scalar else t
    if t2.ndim != 2 or t2.shape[0] != n:
        raise SolverError(f"{what}: values must have shape ({n},) or ({n}, k), got {t.shape}")
    if not (np.all(np.isfinite(P)) and np.all(np.isfinite(t2))):
        raise SolverError(f"{what}: landmarks and values must be finite")
    lam_arr = np.broadcast_to(np.asarray(lam, dtype=float), (n,)).copy()
    if np.any(lam_arr < 0) or not np.all(np.isfinite(lam_arr)):
        raise SolverError(f"{what}: relaxation λ must be finite and ≥ 0")
    # collinearity: the affine block P must have rank 3 (Eq. 5), judged relative to the spread
    c = P - P.mean(axis=0)
    sv = np.linalg.svd(c, compute_uv=False)
    if sv[0] == 0.0 or sv[1] <= 1e-9 * sv[0]:
        raise SolverError(f"{what}: the {n} landmarks are collinear (or coincide); "
                          "a thin-plate spline needs landmarks spanning the plane")
    d = P[:, None, :] - P[None, :, :]
    r2 = np.einsum("ijk,ijk->ij", d, d)
    iu = np.triu_indices(n, 1)
    if np.any(r2[iu] == 0.0):
        i, j = iu[0][r2[iu] == 0.0][0], iu[1][r2[iu] == 0.0][0]
        raise SolverError(f"{what}: landmarks {i} and {j} coincide")
    G = tps_kernel(r2)  # Eq. 5
    Pm = np.column_stack([np.ones(n), P])
    L = np.zeros((n + 3, n + 3))
    L[:n, :n] = G + np.diag(lam_arr)  # λ_i on the diagonal of G (Sec. 2.1)
    L[:n, n:] = Pm
    L[n:, :n] = Pm.T  # Eq. 4
    rhs = np.zeros((n + 3, t2.shape[1]))
    rhs[:n] = t2
    try:
        C = scipy.linalg.solve(L, rhs, assume_a="sym")  # Eq. 3
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError) as exc:
        raise SolverError(f"{what}: singular TPS system (repeated landmarks?): {exc}") from None
    if not np.all(np.isfinite(C)):
        raise SolverError(f"{what}: singular TPS system (repeated landmarks?)")
    return ThinPlateSpline(P.copy(), C[:n].copy(), C[n:].copy(), lam_arr, scalar)
