"""Ligament insertion surfaces: best-fit planes, local frames, TPS height fields, area factor,
and insertion patches cut from bone meshes (the TPSM paper, Secs. 2.2, 2.4 and Eq. 8).

An insertion Σ is described in its bone's frame by a local frame S_s (origin o, in-plane axes
e1, e2, normal n = e1 × e2), a planar contour Σ_p in (x, y) and a height field Γ(x, y) along n
fitted by a thin-plate spline with λ = 0 through the insertion's point cloud (the TPSM paper Sec. 3):

    r(x, y) = o + x e1 + y e2 + Γ(x, y) n,     ‖r_x × r_y‖ = sqrt(1 + Γ_x² + Γ_y²)      (Eq. 8)

Pure geometry: no model knowledge. Lengths are in whatever unit the caller uses (arthron: metres).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.spatial import ConvexHull, cKDTree

from ..errors import SolverError
from .tps import ThinPlateSpline, fit_tps
from .triangulation import clean_contour, polygon_area

__all__ = ["PlanarInsertion", "fit_plane", "orient_axes", "insertion_from_points", "insertion_from_mesh",
           "footprint_patch", "hull_contour", "resample_contour", "register_reference"]


def fit_plane(points, *, what: str = "insertion", normal_hint=None):
    """Best-fit plane of a point cloud (total least squares, SVD).

    Parameters
    ----------
    points : (n, 3) array_like, n ≥ 3, not collinear
    normal_hint : (3,) array_like, optional
        The normal is flipped to point along this direction (e.g. out of the bone).

    Returns
    -------
    origin : (3,) float   the centroid
    axes : (3, 3) float   rows e1 (largest spread), e2, n with e1 × e2 = n

    Raises
    ------
    SolverError  fewer than 3 points, non-finite, or collinear points (no plane).
    """
    P = np.asarray(points, dtype=float)
    if P.ndim != 2 or P.shape[1] != 3:
        raise SolverError(f"{what}: expected (n, 3) points, got shape {P.shape}")
    if P.shape[0] < 3:
        raise SolverError(f"{what}: a plane needs at least 3 points, got {P.shape[0]}")
    if not np.all(np.isfinite(P)):
        raise SolverError(f"{what}: non-finite coordinates")
    o = P.mean(axis=0)
    _, s, Vt = np.linalg.svd(P - o, full_matrices=False)
    if s[0] == 0.0 or s[1] <= 1e-9 * s[0]:
        raise SolverError(f"{what}: the {P.shape[0]} points are collinear (or coincide); "
                          "no insertion plane")
    e1, e2, n = Vt[0], Vt[1], np.cross(Vt[0], Vt[1])
    if normal_hint is not None and np.dot(n, normal_hint) < 0:
        e2, n = -e2, -n
    return o, np.vstack([e1, e2, n])


@dataclass(frozen=True)
class PlanarInsertion:
    """An insertion surface: local frame, planar contour Σ_p and height field Γ (the TPSM paper Sec. 2.4).

    Attributes
    ----------
    origin : (3,) float   origin of S_s in the bone frame
    axes : (3, 3) float   rows e1, e2, n (orthonormal, right-handed) in the bone frame
    contour : (m, 2) float   counter-clockwise planar contour in S_s
    height : ThinPlateSpline or None   Γ(x, y); None means flat (Γ = 0)
    name : str
    """

    origin: np.ndarray
    axes: np.ndarray
    contour: np.ndarray
    height: ThinPlateSpline | None = None
    name: str = "insertion"

    @property
    def area_planar(self) -> float:
        return polygon_area(self.contour)

    def to_local(self, pts) -> np.ndarray:
        """Bone-frame points (..., 3) → local (x, y, z) (..., 3)."""
        return (np.asarray(pts, dtype=float) - self.origin) @ self.axes.T

    def gamma(self, xy) -> np.ndarray:
        xy = np.asarray(xy, dtype=float)
        return np.zeros(xy.shape[:-1]) if self.height is None else self.height(xy)

    def to_bone(self, xy, z=None) -> np.ndarray:
        """Local (x, y) (..., 2), height z (default Γ(x, y)) → bone-frame points (..., 3)."""
        xy = np.asarray(xy, dtype=float)
        z = self.gamma(xy) if z is None else np.asarray(z, dtype=float)
        return self.origin + xy[..., 0:1] * self.axes[0] + xy[..., 1:2] * self.axes[1] + z[..., None] * self.axes[2]

    def surface(self, xy):
        """Bone-frame points r(x, y) and area factor ‖r_x × r_y‖ = sqrt(1 + Γ_x² + Γ_y²) (Eq. 8)."""
        xy = np.asarray(xy, dtype=float)
        if self.height is None:
            return self.to_bone(xy, np.zeros(xy.shape[:-1])), np.ones(xy.shape[:-1])
        z, g = self.height.value_and_gradient(xy)
        return self.to_bone(xy, z), np.sqrt(1.0 + np.einsum("...i,...i->...", g, g))

    def area_factor(self, xy) -> np.ndarray:
        return self.surface(xy)[1]


def hull_contour(xy, dilate: float = 0.0, n_arc: int = 4) -> np.ndarray:
    """Convex hull of planar points, optionally dilated by ``dilate`` (rounded corners with n_arc
    points per corner). Counter-clockwise (m, 2)."""
    xy = np.asarray(xy, dtype=float)
    hull = xy[ConvexHull(xy).vertices]  # CCW in 2-D
    if dilate <= 0:
        return hull
    out = []
    m = hull.shape[0]
    for k in range(m):
        prv, cur, nxt = hull[k - 1], hull[k], hull[(k + 1) % m]
        d_in, d_out = cur - prv, nxt - cur
        a0 = np.arctan2(-d_in[0], d_in[1])  # outward normal of incoming edge (CCW polygon)
        a1 = np.arctan2(-d_out[0], d_out[1])
        if a1 < a0:
            a1 += 2 * np.pi
        for a in np.linspace(a0, a1, n_arc):
            out.append(cur + dilate * np.array([np.cos(a), np.sin(a)]))
    return clean_contour(np.array(out))


def resample_contour(contour, n: int, start=None) -> np.ndarray:
    """n points equally spaced by arc length along a closed contour, beginning at the contour
    point nearest to ``start`` (a 2-vector; default: the first vertex), counter-clockwise."""
    c = clean_contour(contour)
    if start is not None:
        k = int(np.argmin(np.linalg.norm(c - np.asarray(start, dtype=float), axis=1)))
        c = np.roll(c, -k, axis=0)
    closed = np.vstack([c, c[:1]])
    seg = np.linalg.norm(np.diff(closed, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    t = np.arange(n) * s[-1] / n
    return np.column_stack([np.interp(t, s, closed[:, 0]), np.interp(t, s, closed[:, 1])])


def orient_axes(axes, e1_hint=None, normal_hint=None) -> np.ndarray:
    """Flip the normal towards ``normal_hint`` and turn e1 in the plane towards ``e1_hint``."""
    ax = np.array(axes, dtype=float)
    n = ax[2]
    if normal_hint is not None and np.dot(n, normal_hint) < 0:
        n = -n
    e1 = ax[0]
    if e1_hint is not None:
        h = np.asarray(e1_hint, dtype=float)
        h = h - np.dot(h, n) * n
        if np.linalg.norm(h) > 1e-12:
            e1 = h / np.linalg.norm(h)
    e1 = e1 - np.dot(e1, n) * n
    e1 /= np.linalg.norm(e1)
    return np.vstack([e1, np.cross(n, e1), n])


def insertion_from_points(cloud, contour_points=None, *, dilate: float = 0.0, name="insertion",
                          normal_hint=None, e1_hint=None, height_lambda: float = 0.0, axes=None,
                          origin=None, contour_mode: str = "hull") -> PlanarInsertion:
    """Build an insertion from a point cloud of its surface (the TPSM paper Secs. 2.2, 2.4, 3).

    The best-fit plane π of ``cloud`` (or the given ``axes``/``origin``) defines S_s (normal
    towards ``normal_hint``, e1 towards ``e1_hint``); the cloud is projected on π and Γ is the TPS
    (λ = ``height_lambda``, default 0) through the heights; the contour is the convex hull of the
    projected ``contour_points`` (default: the cloud), dilated by ``dilate``
    (``contour_mode="hull"``), or the projected ``contour_points`` in their order
    (``contour_mode="polygon"``).

    Raises SolverError for fewer than 3 points or collinear clouds.
    """
    P = np.asarray(cloud, dtype=float)
    if origin is None or axes is None:
        o, ax = fit_plane(P, what=name, normal_hint=normal_hint)
        origin = o if origin is None else np.asarray(origin, float)
        axes = orient_axes(ax, e1_hint, normal_hint) if axes is None else np.asarray(axes, float)
    loc = (P - origin) @ axes.T
    height = fit_tps(loc[:, :2], loc[:, 2], height_lambda, what=f"{name} height field Γ")
    cp = loc[:, :2] if contour_points is None else (np.asarray(contour_points, float) - origin) @ axes[:2].T
    if cp.shape[0] < 3:
        raise SolverError(f"{name}: a contour needs at least 3 points, got {cp.shape[0]}")
    contour = cp if contour_mode == "polygon" else hull_contour(cp, dilate)
    return PlanarInsertion(origin, axes, clean_contour(contour, name), height, name)


def footprint_patch(vertices, faces, footprint, *, tol: float, what: str = "footprint"):
    """Mesh vertices belonging to a footprint given as points near the bone surface.

    A footprint "touches" the mesh when at least one of its points is within ``tol`` of a mesh
    vertex (vertex distance: a fast, conservative proxy for the surface distance on bone meshes
    with sub-millimetre edges). The patch is the set of mesh vertices whose projection on the
    footprint's best-fit plane falls inside the footprint's convex hull grown by ``tol`` and that
    lie within 3 ``tol`` of a footprint point in 3-D (this keeps the opposite side of the bone out).

    Returns
    -------
    idx : (k,) int   indices of the patch vertices

    Raises
    ------
    SolverError  the footprint does not touch the mesh (no footprint point within ``tol``), or the
        patch has fewer than 3 vertices.
    """
    V = np.asarray(vertices, dtype=float)
    F = np.asarray(footprint, dtype=float)
    if F.ndim != 2 or F.shape[1] != 3 or F.shape[0] < 3:
        raise SolverError(f"{what}: a footprint needs at least 3 points (n, 3), got shape {F.shape}")
    tree = cKDTree(V)
    d, _ = tree.query(F)
    touching = d <= tol
    if not np.any(touching):
        raise SolverError(f"{what}: the footprint does not touch the mesh: nearest footprint point "
                          f"is {d.min():.4g} from the surface (tolerance {tol:.4g})")
    o, ax = fit_plane(F, what=what)
    floc = (F - o) @ ax[:2].T
    hull = hull_contour(floc, dilate=tol)
    from .triangulation import points_in_polygon
    vloc = (V - o) @ ax[:2].T
    near = cKDTree(F).query(V)[0] <= 3.0 * tol
    inside = points_in_polygon(vloc, hull) & near
    idx = np.nonzero(inside)[0]
    if idx.size < 3:
        raise SolverError(f"{what}: only {idx.size} mesh vertices under the footprint; "
                          "need at least 3 (footprint too small for the mesh resolution?)")
    return idx


def insertion_from_mesh(vertices, faces, footprint, *, tol: float, dilate: float = 0.0,
                        name: str = "insertion", normal_hint=None,
                        max_height_points: int = 400) -> PlanarInsertion:
    """Insertion from a bone mesh and a footprint (point cloud, contour or landmarks) on it.

    The patch of mesh vertices under the footprint (``footprint_patch``) gives the best-fit plane,
    the local frame and the TPS height field Γ (λ = 0; at most ``max_height_points`` landmarks,
    thinned uniformly); the contour is the dilated convex hull of the projected footprint.
    The normal points away from the bone (against the mean vertex normal direction inferred from
    the patch's position relative to the mesh centroid) unless ``normal_hint`` is given.

    Raises SolverError (footprint not touching the mesh, < 3 points, collinear footprint).
    """
    V = np.asarray(vertices, dtype=float)
    F = np.asarray(footprint, dtype=float)
    idx = footprint_patch(V, faces, F, tol=tol, what=name)
    patch = V[idx]
    if normal_hint is None:
        normal_hint = patch.mean(axis=0) - V.mean(axis=0)
    o, ax = fit_plane(patch, what=name, normal_hint=normal_hint)
    if patch.shape[0] > max_height_points:
        sel = np.linspace(0, patch.shape[0] - 1, max_height_points).round().astype(int)
        patch = patch[sel]
    loc = (patch - o) @ ax.T
    # drop near-duplicates in the plane (would make L singular with λ = 0)
    _, uniq = np.unique(np.round(loc[:, :2] / (1e-6 * np.ptp(loc[:, :2]) + 1e-300)), axis=0, return_index=True)
    loc = loc[np.sort(uniq)]
    height = fit_tps(loc[:, :2], loc[:, 2], 0.0, what=f"{name} height field Γ")
    cp = (F - o) @ ax[:2].T
    contour = hull_contour(cp, dilate)
    return PlanarInsertion(o, ax, clean_contour(contour, name), height, name)


def register_reference(ref_contour, ref_points, subject_contour, *, n_landmarks: int = 16,
                       ref_start=None, subject_start=None, lam: float = 0.0,
                       what: str = "reference registration"):
    """Register literature reference data on a subject's planar insertion (the TPSM paper Sec. 2.2).

    Landmarks are ``n_landmarks`` points equally spaced by arc length on the reference contour,
    homologs the same on the subject contour (starting at the points nearest to ``ref_start`` and
    ``subject_start``); φ_t (or φ_f) is the TPS through them with relaxation ``lam`` (the paper's
    simulations: 0). Returns (φ, mapped reference points (k, 2)).
    """
    L = resample_contour(ref_contour, n_landmarks, ref_start)
    H = resample_contour(subject_contour, n_landmarks, subject_start)
    phi = fit_tps(L, H, lam, what=what)
    return phi, phi(np.asarray(ref_points, dtype=float))


def with_contour(ins: PlanarInsertion, contour) -> PlanarInsertion:
    return replace(ins, contour=clean_contour(contour, ins.name))
