"""Conforming Delaunay triangulation with a target triangle count (seed 000, Eq. 9)."""
import numpy as np
import pytest
from scipy.spatial import Delaunay

from arthron.errors import SolverError
from arthron.geometry.triangulation import polygon_area, points_in_polygon, triangulate_polygon

th = np.linspace(0, 2 * np.pi, 36, endpoint=False)
OVAL = np.column_stack([9 * np.cos(th), 5 * np.sin(th) + np.cos(2 * th)])
L_SHAPE = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], float)


@pytest.mark.parametrize("n", [34, 45, 60, 100, 360])
def test_exact_count_and_tiles_polygon(n):
    T = triangulate_polygon(OVAL, n)
    assert T.n_triangles == n
    assert np.all(T.areas > 0)  # counter-clockwise, no degenerate triangles
    assert abs(T.area - polygon_area(OVAL)) < 1e-10 * polygon_area(OVAL)  # contour kept
    # every contour corner is a vertex
    d = np.min(np.linalg.norm(OVAL[:, None] - T.vertices[None], axis=2), axis=1)
    assert d.max() < 1e-12
    # Delaunay: the mesh is a subset of the Delaunay triangulation of its vertices
    ref = {tuple(sorted(t)) for t in Delaunay(T.vertices).simplices}
    assert all(tuple(sorted(t)) in ref for t in T.triangles)


@pytest.mark.parametrize("n", [1, 3, 10, 30])
def test_few_triangles_simplify_contour(n):
    T = triangulate_polygon(OVAL, n)
    assert T.n_triangles == n
    assert 0 < T.area <= polygon_area(OVAL) + 1e-12
    assert np.all(points_in_polygon(T.centroids, OVAL))


@pytest.mark.parametrize("n", [4, 10, 31, 120])
def test_nonconvex_polygon(n):
    T = triangulate_polygon(L_SHAPE, n)
    assert abs(T.area - 3.0) < 1e-12
    assert abs(T.n_triangles - n) <= 4
    assert np.all(points_in_polygon(T.centroids, L_SHAPE))


def test_convergence_of_mesh_size():
    h = [triangulate_polygon(OVAL, n).edge_lengths().max() for n in (50, 200, 800)]
    assert h[0] > h[1] > h[2]


@pytest.mark.parametrize("n", [0, -3, 2.5])
def test_bad_count_raises(n):
    with pytest.raises(SolverError, match="triangles requested"):
        triangulate_polygon(OVAL, n)


def test_degenerate_contour_raises():
    with pytest.raises(SolverError, match="collinear"):
        triangulate_polygon(np.array([[0, 0], [1, 1], [2, 2], [3, 3.0]]), 10)
    with pytest.raises(SolverError, match="at least 3"):
        triangulate_polygon(np.array([[0, 0], [1, 1.0]]), 10)
