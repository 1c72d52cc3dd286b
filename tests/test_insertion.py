"""Insertion surfaces: planes, frames, TPS height fields, area factor, mesh patches, registration."""
import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from arthron.errors import SolverError
from arthron.geometry.insertion import (PlanarInsertion, fit_plane, footprint_patch, hull_contour,
                                        insertion_from_mesh, insertion_from_points, register_reference,
                                        resample_contour)
from arthron.geometry.triangulation import polygon_area
from arthron.io.mesh import load_mesh

from conftest import DATA, LENHART, needs_data

FOOTPRINTS = DATA / "acl-footprints" / "data"
TIBIA_STL = LENHART.parent / "Geometry" / "lenhart2015-R-tibia-bone.stl"
rng = np.random.default_rng(7)


def test_fit_plane_recovers_plane_and_orientation():
    n = np.array([0.2, -0.3, 0.93])
    n /= np.linalg.norm(n)
    e1 = np.cross(n, [1, 0, 0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(n, e1)
    uv = rng.uniform(-5, 5, (50, 2)) * [2, 1]
    P = np.array([1.0, 2.0, 3.0]) + uv[:, :1] * e1 + uv[:, 1:] * e2
    o, ax = fit_plane(P, normal_hint=n)
    assert np.allclose(ax @ ax.T, np.eye(3), atol=1e-12)
    assert np.isclose(np.linalg.det(ax), 1.0)
    assert np.allclose(ax[2], n, atol=1e-12)
    assert np.allclose(o, P.mean(0))
    with pytest.raises(SolverError, match="collinear"):
        fit_plane(np.outer(np.arange(5.0), [1, 2, 3]))
    with pytest.raises(SolverError, match="at least 3"):
        fit_plane(P[:2])


def test_height_field_and_area_factor_on_a_sphere_cap():
    Rs = 20.0
    xy = rng.uniform(-4, 4, (120, 2))
    z = np.sqrt(Rs**2 - (xy**2).sum(1)) - Rs
    axes = np.eye(3)
    ins = insertion_from_points(np.column_stack([xy, z]), axes=axes, origin=np.zeros(3))
    # Γ interpolates its landmarks (λ = 0)
    assert np.max(np.abs(ins.gamma(xy) - z)) < 1e-10
    # area factor ≈ R/√(R² - r²) inside the cloud's hull (TPS approximation of the cap)
    pts = rng.uniform(-2.5, 2.5, (40, 2))
    exact = Rs / np.sqrt(Rs**2 - (pts**2).sum(1))
    assert np.max(np.abs(ins.area_factor(pts) - exact)) < 2e-3
    # flat insertion: factor 1
    flat = PlanarInsertion(np.zeros(3), np.eye(3), hull_contour(xy))
    assert np.all(flat.area_factor(pts) == 1.0)
    # bone-frame points lie on the surface
    r, J = ins.surface(pts)
    assert np.allclose(r[:, 2], ins.gamma(pts))


def test_hull_dilation_area():
    sq = np.array([[0, 0], [1, 0], [1, 1], [0, 1.0]])
    c = hull_contour(sq, dilate=0.1, n_arc=40)
    # Steiner: A + P d + π d² (polygonal arcs slightly less)
    assert abs(polygon_area(c) - (1 + 4 * 0.1 + np.pi * 0.01)) < 1e-3


def test_resample_and_register_reference_exactly():
    th = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    ref = np.column_stack([9 * np.cos(th), 5 * np.sin(th)])
    a = 0.4
    M = 1.3 * np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])  # similarity: arc length ∝
    b = np.array([2.0, -1.0])
    subj = ref @ M.T + b
    C = np.array([[3.0, 1.0], [-4.0, -0.5]])
    phi, mapped = register_reference(ref, C, subj, n_landmarks=16, ref_start=[10, 0],
                                     subject_start=np.array([9.0, 0.0]) @ M.T + b)
    assert np.allclose(mapped, C @ M.T + b, atol=1e-9)
    r = resample_contour(ref, 8, start=[0, 10])
    assert np.allclose(r[0], [0, 5], atol=1e-9) and r.shape == (8, 2)


def _clusters(side, min_n=5):
    X = np.loadtxt(FOOTPRINTS / side / "meanshape_ligs_color.xyz")
    P = X[X[:, 3] >= min_n, :3]
    tree = cKDTree(P)
    k, lab = connected_components(tree.sparse_distance_matrix(tree, 3.0), directed=False)
    sizes = np.bincount(lab)
    order = np.argsort(-sizes)
    return [P[lab == c] for c in order]


@needs_data
@pytest.mark.parametrize("side", ["tibia", "femur"])
def test_acl_footprint_point_clouds(side):
    """Consensus footprints (≥ 5 of 10 subjects) on the mean-shape bones, in mm."""
    cl = _clusters(side)
    big = cl[0]
    assert big.shape[0] > 50
    ins = insertion_from_points(big, name=f"{side} footprint")
    loc = ins.to_local(big)
    assert np.max(np.abs(ins.gamma(loc[:, :2]) - loc[:, 2])) < 1e-9  # Γ through the cloud
    assert np.sqrt(np.mean(loc[:, 2] ** 2)) < 3.0  # footprints are nearly planar (mm)
    A = ins.area_planar
    assert 60.0 < A < 400.0  # mm², cruciate footprint sizes
    xy = resample_contour(ins.contour, 50) * 0.9 + 0.1 * loc[:, :2].mean(0)
    assert np.all(ins.area_factor(xy) >= 1.0)


@needs_data
def test_insertion_from_lenhart_tibia_mesh():
    V, F = load_mesh(TIBIA_STL)
    # the tibial ACL strand points of Lenhart2015 (tibia_proximal_r frame, m)
    P = np.array([[0.010136, -0.020482, -0.00036186], [0.010071, -0.021322, 0.0039158],
                  [0.014123, -0.021793, 0.0014326], [0.014311, -0.021465, 0.0048355],
                  [0.016437, -0.020666, -0.0052185], [0.018517, -0.022158, -0.001854]])
    ins = insertion_from_mesh(V, F, P, tol=0.0025, dilate=0.001, name="ACL tibial", normal_hint=[0, 1, 0])
    assert ins.axes[2][1] > 0.8  # plateau: normal points up (y)
    idx = footprint_patch(V, F, P, tol=0.0025)
    loc = ins.to_local(V[idx])
    # Γ reproduces the mesh patch it was fitted to (a thinned subset, so check the RMS)
    assert np.sqrt(np.mean((ins.gamma(loc[:, :2]) - loc[:, 2]) ** 2)) < 2e-4
    # not touching: lifted 20 mm above the plateau
    with pytest.raises(SolverError, match="does not touch the mesh"):
        insertion_from_mesh(V, F, P + [0, 0.02, 0], tol=0.0025, name="ACL tibial")
    with pytest.raises(SolverError, match="at least 3"):
        footprint_patch(V, F, P[:2], tol=0.0025)


def test_degenerate_insertions_raise():
    line = np.outer(np.linspace(0, 1, 6), [1.0, 0.5, 0.2])
    with pytest.raises(SolverError, match="collinear"):
        insertion_from_points(line)
    with pytest.raises(SolverError, match="at least 3"):
        insertion_from_points(line[:2])
