"""Gauss quadrature rules on triangles (the TPSM paper, Sec. 2.6, Eqs. 11-15, Table 1).

Rules live on the reference right triangle {r ≥ 0, s ≥ 0, r + s ≤ 1} with vertex order
(0,0), (1,0), (0,1) as in Eq. 11. Weights sum to 1, so for a triangle σ_k of area A_k

    ∫_σk f dA ≈ A_k Σ_g W_g f(x(r_g, s_g))                                    (Eqs. 14-15, J_kg = A_k)

Rules (Dunavant 1985, the symmetric rules the paper's Table 1 tabulates for 1, 3 and 4 points):

=======  ======  ===============================================
points   degree  note
=======  ======  ===============================================
1        1       centroid
3        2       interior points (1/6, 1/6), (2/3, 1/6), (1/6, 2/3)
4        3       centroid weight -27/48 (negative)
6        4
7        5
=======  ======  ===============================================

``collapsed_gauss(m)`` gives the Duffy-collapsed Gauss-Legendre product rule (m² points, exact
to degree 2m-2) used as a high-order cross-check.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SolverError

__all__ = ["TriangleRule", "triangle_rule", "collapsed_gauss", "map_to_triangles", "RULE_POINTS"]


@dataclass(frozen=True)
class TriangleRule:
    """A quadrature rule on the reference triangle.

    Attributes
    ----------
    rs : (nG, 2) float   sampling points (r_g, s_g) (Eq. 14)
    weights : (nG,) float   W_g, summing to 1
    degree : int   polynomials of this total degree are integrated exactly
    """

    rs: np.ndarray
    weights: np.ndarray
    degree: int

    @property
    def npoints(self) -> int:
        return self.rs.shape[0]

    @property
    def barycentric(self) -> np.ndarray:
        """(nG, 3) barycentric coordinates [1 - r - s, r, s] (the shape functions of Eq. 11)."""
        r, s = self.rs[:, 0], self.rs[:, 1]
        return np.column_stack([1.0 - r - s, r, s])


def _orbit3(a: float) -> list:
    """The 3 permutations of barycentric (a, a, 1-2a) as (r, s)."""
    b = 1.0 - 2.0 * a
    return [(a, a), (b, a), (a, b)]


def _orbit6(a: float, b: float) -> list:
    c = 1.0 - a - b
    return [(a, b), (b, a), (b, c), (c, b), (c, a), (a, c)]


def _build(n: int) -> TriangleRule:
    if n == 1:
        return TriangleRule(np.array([[1 / 3, 1 / 3]]), np.array([1.0]), 1)
    if n == 3:
        return TriangleRule(np.array(_orbit3(1 / 6)), np.full(3, 1 / 3), 2)
    if n == 4:
        pts = [(1 / 3, 1 / 3)] + _orbit3(0.2)
        w = [-27 / 48] + [25 / 48] * 3
        return TriangleRule(np.array(pts), np.array(w), 3)
    if n == 6:
        a1, w1 = 0.44594849091596488632, 0.22338158967801146570
        a2, w2 = 0.09157621350977074346, 0.10995174365532186764
        pts = _orbit3(a1) + _orbit3(a2)
        return TriangleRule(np.array(pts), np.array([w1] * 3 + [w2] * 3), 4)
    if n == 7:
        s15 = np.sqrt(15.0)
        a1 = (6.0 - s15) / 21.0
        a2 = (6.0 + s15) / 21.0
        w1 = (155.0 - s15) / 1200.0
        w2 = (155.0 + s15) / 1200.0
        pts = [(1 / 3, 1 / 3)] + _orbit3(a1) + _orbit3(a2)
        w = [9 / 40] + [w1] * 3 + [w2] * 3
        return TriangleRule(np.array(pts), np.array(w), 5)
    raise SolverError(f"no Gauss rule with {n} points on the triangle; choose one of {RULE_POINTS}")


RULE_POINTS = (1, 3, 4, 6, 7)
_CACHE: dict = {}


def triangle_rule(npoints: int) -> TriangleRule:
    """The symmetric Gauss rule with ``npoints`` in {1, 3, 4, 6, 7} points (see module table).

    Raises SolverError for other counts."""
    npoints = int(npoints)
    if npoints not in _CACHE:
        _CACHE[npoints] = _build(npoints)
    return _CACHE[npoints]


def collapsed_gauss(m: int) -> TriangleRule:
    """Duffy-collapsed Gauss-Legendre rule, m² points, exact to degree 2m-2, weights > 0.

    r = u, s = v (1 - u) on the unit square, dr ds = (1 - u) du dv."""
    if m < 1:
        raise SolverError(f"collapsed Gauss rule needs m ≥ 1, got {m}")
    x, w = np.polynomial.legendre.leggauss(m)
    x = 0.5 * (x + 1.0)
    w = 0.5 * w
    u, v = np.meshgrid(x, x, indexing="ij")
    wu, wv = np.meshgrid(w, w, indexing="ij")
    r = u.ravel()
    s = (v * (1.0 - u)).ravel()
    W = (wu * wv * (1.0 - u)).ravel() * 2.0  # reference area 1/2 → weights sum to 1
    return TriangleRule(np.column_stack([r, s]), W, 2 * m - 2)


def map_to_triangles(rule: TriangleRule, vertices: np.ndarray, triangles: np.ndarray):
    """Sampling points and weights on a set of planar triangles (Eq. 11).

    Parameters
    ----------
    rule : TriangleRule
    vertices : (V, 2) float   planar vertex coordinates (x, y)
    triangles : (T, 3) int   vertex indices

    Returns
    -------
    points : (T, nG, 2) float   (x(r_g, s_g), y(r_g, s_g))
    weights : (T, nG) float   W_g · A_k (signed weights of Eq. 14 with J_kg = A_k)
    areas : (T,) float   triangle areas A_k = |J_k| / 2
    """
    V = np.asarray(vertices, dtype=float)[np.asarray(triangles)]  # (T, 3, 2)
    pts = np.einsum("gj,tjd->tgd", rule.barycentric, V)
    e1 = V[:, 1] - V[:, 0]
    e2 = V[:, 2] - V[:, 0]
    areas = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
    return pts, areas[:, None] * rule.weights[None, :], areas
