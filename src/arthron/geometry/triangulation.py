"""Conforming Delaunay triangulation of a planar polygon with a target number of triangles
(the TPSM paper, Eq. 9: Σ_tp = ∪ σ_k).

The polygon's edges are kept as mesh edges (a *conforming* Delaunay triangulation: every
boundary segment is a Delaunay edge of the point set, so the triangles tile the polygon exactly).
The triangle count follows Euler's relation for a simply connected polygon triangulated with b
boundary and i interior vertices, ``T = b + 2 i - 2``: the function picks b and i to hit the target
exactly, spreads b points along the contour (all corners kept) and places the i interior points by
farthest-point sampling, far enough from the contour that they cannot encroach on a boundary
segment. Below ``m - 2`` triangles (m corners) the contour is simplified (Visvalingam) first, so the
domain shrinks; the returned ``area`` tells by how much. Pure NumPy + scipy.spatial.Delaunay.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import Delaunay

from ..errors import SolverError

__all__ = ["Triangulation", "triangulate_polygon", "polygon_area", "points_in_polygon",
           "clean_contour", "distance_to_polygon"]


@dataclass(frozen=True)
class Triangulation:
    """A triangulated planar region.

    Attributes
    ----------
    vertices : (V, 2) float
    triangles : (T, 3) int   counter-clockwise vertex indices
    boundary : (V,) bool   True for vertices on the contour
    contour : (b, 2) float   the (possibly simplified) polygon that was meshed, CCW
    """

    vertices: np.ndarray
    triangles: np.ndarray
    boundary: np.ndarray
    contour: np.ndarray

    @property
    def n_triangles(self) -> int:
        return int(self.triangles.shape[0])

    @property
    def areas(self) -> np.ndarray:
        V = self.vertices[self.triangles]
        e1, e2 = V[:, 1] - V[:, 0], V[:, 2] - V[:, 0]
        return 0.5 * (e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])

    @property
    def area(self) -> float:
        return float(self.areas.sum())

    @property
    def centroids(self) -> np.ndarray:
        return self.vertices[self.triangles].mean(axis=1)

    def edge_lengths(self) -> np.ndarray:
        """Unique edge lengths (for the mesh statistics of the TPSM paper Fig. 5)."""
        t = self.triangles
        e = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
        e = np.unique(e, axis=0)
        return np.linalg.norm(self.vertices[e[:, 0]] - self.vertices[e[:, 1]], axis=1)


def polygon_area(poly) -> float:
    """Signed area (shoelace); > 0 for counter-clockwise polygons."""
    p = np.asarray(poly, dtype=float)
    x, y = p[:, 0], p[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def points_in_polygon(pts, poly) -> np.ndarray:
    """Even-odd rule, vectorized: (N, 2) points, (m, 2) polygon → (N,) bool."""
    pts = np.asarray(pts, dtype=float)
    p = np.asarray(poly, dtype=float)
    a, b = p, np.roll(p, -1, axis=0)
    x, y = pts[:, 0:1], pts[:, 1:2]
    cond = (a[:, 1] > y) != (b[:, 1] > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        xint = a[:, 0] + (y - a[:, 1]) * (b[:, 0] - a[:, 0]) / (b[:, 1] - a[:, 1])
    return (np.count_nonzero(cond & (x < xint), axis=1) % 2) == 1


def distance_to_polygon(pts, poly) -> np.ndarray:
    """Distance from points (N, 2) to the polygon's edges (m, 2) → (N,)."""
    pts = np.asarray(pts, dtype=float)
    a = np.asarray(poly, dtype=float)
    b = np.roll(a, -1, axis=0)
    ab = b - a
    ap = pts[:, None, :] - a[None]
    t = np.clip(np.einsum("nmk,mk->nm", ap, ab) / np.einsum("mk,mk->m", ab, ab), 0.0, 1.0)
    d = ap - t[..., None] * ab
    return np.sqrt(np.einsum("nmk,nmk->nm", d, d).min(axis=1))


def clean_contour(contour, what: str = "contour") -> np.ndarray:
    """Validate a contour: (m ≥ 3, 2), finite, drop a repeated closing point and consecutive
    duplicates, orient counter-clockwise. Raises SolverError if degenerate (zero area/collinear)."""
    c = np.asarray(contour, dtype=float)
    if c.ndim != 2 or c.shape[1] != 2:
        raise SolverError(f"{what}: expected (m, 2) planar points, got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise SolverError(f"{what}: non-finite coordinates")
    keep = np.linalg.norm(c - np.roll(c, 1, axis=0), axis=1) > 0
    c = c[keep] if keep.any() else c[:1]
    if c.shape[0] < 3:
        raise SolverError(f"{what}: a planar insertion needs at least 3 distinct contour points, "
                          f"got {c.shape[0]}")
    A = polygon_area(c)
    span = np.ptp(c, axis=0).max()
    if abs(A) <= 1e-9 * span * span:
        raise SolverError(f"{what}: the contour is degenerate (collinear points, zero area)")
    return c if A > 0 else c[::-1].copy()


def _simplify(c: np.ndarray, k: int) -> np.ndarray:
    """Visvalingam-Whyatt: drop the corner spanning the smallest triangle until k remain."""
    c = c.copy()
    while c.shape[0] > k:
        prv, nxt = np.roll(c, 1, axis=0), np.roll(c, -1, axis=0)
        ar = np.abs((c[:, 0] - prv[:, 0]) * (nxt[:, 1] - prv[:, 1])
                    - (nxt[:, 0] - prv[:, 0]) * (c[:, 1] - prv[:, 1]))
        c = np.delete(c, int(np.argmin(ar)), axis=0)
    return c


def _boundary_points(c: np.ndarray, b: int) -> np.ndarray:
    """b points on the polygon: all m corners plus b - m extra points on edges by length."""
    m = c.shape[0]
    seg = np.roll(c, -1, axis=0) - c
    L = np.linalg.norm(seg, axis=1)
    extra = b - m
    # largest-remainder split of `extra` points over edges, proportional to length
    share = extra * L / L.sum()
    nsplit = np.floor(share).astype(int)
    rem = extra - nsplit.sum()
    if rem > 0:
        nsplit[np.argsort(-(share - nsplit))[:rem]] += 1
    # refine: move points towards edges with the longest sub-segments (minimise max spacing)
    for _ in range(4 * m):
        sub = L / (nsplit + 1)
        i, j = int(np.argmax(sub)), None
        cand = np.where(nsplit > 0)[0]
        if cand.size == 0:
            break
        after = L[cand] / nsplit[cand]
        j = int(cand[np.argmin(after)])
        if i == j or L[j] / nsplit[j] >= sub[i]:
            break
        nsplit[i] += 1
        nsplit[j] -= 1
    out = []
    for k in range(m):
        t = np.arange(nsplit[k] + 1) / (nsplit[k] + 1)
        out.append(c[k] + t[:, None] * seg[k])
    return np.vstack(out)


def _hex_grid(c: np.ndarray, h: float) -> np.ndarray:
    lo, hi = c.min(axis=0), c.max(axis=0)
    dy = h * np.sqrt(3) / 2
    ys = np.arange(lo[1], hi[1] + dy, dy)
    xs = np.arange(lo[0] - h, hi[0] + h, h)
    X, Y = np.meshgrid(xs, ys)
    X = X + (np.arange(ys.size)[:, None] % 2) * h / 2
    g = np.column_stack([X.ravel(), Y.ravel()])
    return g[points_in_polygon(g, c)]


def _farthest_points(cand: np.ndarray, fixed: np.ndarray, k: int) -> np.ndarray:
    if k <= 0:
        return np.empty((0, 2))
    diff = cand[:, None, :] - fixed[None]
    d = np.min(np.einsum("nmk,nmk->nm", diff, diff), axis=1)  # squared distances
    cx, cy = cand[:, 0].copy(), cand[:, 1].copy()
    chosen = []
    for _ in range(k):
        j = int(np.argmax(d))
        chosen.append(j)
        np.minimum(d, (cx - cx[j]) ** 2 + (cy - cy[j]) ** 2, out=d)
        d[j] = -1.0
    return cand[chosen]


def _delaunay_inside(pts: np.ndarray, c: np.ndarray) -> np.ndarray:
    tri = Delaunay(pts).simplices
    V = pts[tri]
    cen = V.mean(axis=1)
    e1, e2 = V[:, 1] - V[:, 0], V[:, 2] - V[:, 0]
    ar = 0.5 * (e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
    tri = np.where((ar < 0)[:, None], tri[:, [0, 2, 1]], tri)
    span = np.ptp(pts, axis=0).max()
    keep = points_in_polygon(cen, c) & (np.abs(ar) > 1e-12 * span * span)
    return tri[keep]


def triangulate_polygon(contour, n_triangles: int, *, what: str = "planar insertion") -> Triangulation:
    """Triangulate a simple polygon into (about, usually exactly) ``n_triangles`` triangles.

    Parameters
    ----------
    contour : (m, 2) array_like
        The planar contour (e.g. Σ_tp of the TPSM paper), open or closed, any orientation.
    n_triangles : int ≥ 1
        Target number of triangles n_tr (Eq. 9). Exact when the contour is convex or the
        interior points do not have to be nudged; otherwise within a few triangles.
    what : str
        Name used in error messages.

    Returns
    -------
    Triangulation

    Raises
    ------
    SolverError
        ``n_triangles < 1``; a contour with fewer than 3 points or zero area.
    """
    if int(n_triangles) != n_triangles or n_triangles < 1:
        raise SolverError(f"{what}: triangles requested must be an integer ≥ 1, got {n_triangles!r}")
    N = int(n_triangles)
    c = clean_contour(contour, what)
    m = c.shape[0]
    if N + 2 < m:
        c = _simplify(c, N + 2)
        m = c.shape[0]
    A = polygon_area(c)
    P = float(np.linalg.norm(np.roll(c, -1, axis=0) - c, axis=1).sum())
    h = np.sqrt(4.0 * A / (np.sqrt(3.0) * N))  # equilateral triangles of side h tile A with N
    b = int(np.clip(round(P / h), m, N + 2))
    if (N - b) % 2:
        b = b + 1 if b + 1 <= N + 2 else b - 1
    if b < m:  # parity fix impossible without dropping a corner: drop one
        c = _simplify(c, b)
        m = b
    ni = (N - b + 2) // 2
    bpts = _boundary_points(c, b)
    ipts = np.empty((0, 2))
    if ni > 0:
        Lmax = np.max(np.linalg.norm(np.roll(bpts, -1, axis=0) - bpts, axis=1))
        grid = _hex_grid(c, min(h, Lmax) / 4.0)
        dist = distance_to_polygon(grid, c) if grid.size else np.empty(0)
        for margin in (0.55 * Lmax, 0.4 * h, 0.25 * h, 0.0):
            cand = grid[dist > margin]
            if cand.shape[0] >= ni:
                break
        ipts = _farthest_points(cand, bpts, min(ni, cand.shape[0]))
    pts = np.vstack([bpts, ipts])
    nb = bpts.shape[0]
    for _ in range(20):  # split boundary segments missing from the triangulation (encroached)
        tri = _delaunay_inside(pts, c)
        e = np.sort(np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]]), axis=1)
        edges = set(map(tuple, e))
        missing = [k for k in range(nb) if tuple(sorted((k, (k + 1) % nb))) not in edges]
        if not missing:
            break
        newb = []
        for k in range(nb):
            newb.append(pts[k])
            if k in missing:
                newb.append(0.5 * (pts[k] + pts[(k + 1) % nb]))
        bpts = np.array(newb)
        nb = bpts.shape[0]
        pts = np.vstack([bpts, ipts])
    used = np.unique(tri)
    remap = -np.ones(pts.shape[0], dtype=int)
    remap[used] = np.arange(used.size)
    boundary = np.zeros(pts.shape[0], dtype=bool)
    boundary[:nb] = True
    return Triangulation(pts[used], remap[tri], boundary[used], c)
