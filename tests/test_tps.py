"""Thin-plate splines (seed 000, Eqs. 1-5)."""
import numpy as np
import pytest
from scipy.interpolate import RBFInterpolator

from arthron.errors import SolverError
from arthron.geometry.tps import fit_tps, tps_kernel

rng = np.random.default_rng(0)


def _landmarks(n=25):
    return rng.uniform(-10, 10, size=(n, 2))


def test_interpolates_landmarks_exactly_with_zero_lambda():
    P = _landmarks()
    z = np.sin(P[:, 0] / 3) + 0.1 * P[:, 1] ** 2
    f = fit_tps(P, z)
    assert np.max(np.abs(f(P) - z)) < 1e-10 * max(1.0, np.abs(z).max())
    uv = np.column_stack([z, np.cos(P[:, 1])])
    phi = fit_tps(P, uv)
    assert np.max(np.abs(phi(P) - uv)) < 1e-10


def test_large_lambda_tends_to_affine_least_squares():
    P = _landmarks(30)
    z = 1.0 + 2.0 * P[:, 0] - 0.5 * P[:, 1] + rng.normal(0, 1.0, 30)
    A = np.column_stack([np.ones(30), P])
    coef = np.linalg.lstsq(A, z, rcond=None)[0]
    pts = rng.uniform(-10, 10, (50, 2))
    prev = np.inf
    for lam in (1e4, 1e6, 1e8):
        f = fit_tps(P, z, lam)
        err = np.max(np.abs(f(pts) - np.column_stack([np.ones(50), pts]) @ coef))
        assert err < prev
        prev = err
    assert prev < 1e-4  # deviation shrinks like 1/λ


def test_affine_map_reproduced_exactly():
    P = _landmarks()
    M = np.array([[1.3, -0.4], [0.2, 0.9]])
    b = np.array([3.0, -7.0])
    phi = fit_tps(P, P @ M.T + b, lam=rng.uniform(0, 1, len(P)))  # any λ: affine has no warp
    pts = rng.uniform(-20, 20, (100, 2))
    assert np.allclose(phi(pts), pts @ M.T + b, atol=1e-10)
    assert np.allclose(phi.gradient(pts), np.broadcast_to(M, (100, 2, 2)), atol=1e-10)
    assert np.allclose(phi.a, 0.0, atol=1e-12)


def test_matches_scipy_rbfinterpolator_including_per_landmark_lambda():
    P = _landmarks()
    z = np.cos(P[:, 0] / 4) * P[:, 1]
    lam = rng.uniform(0, 2, len(P))
    ours = fit_tps(P, z, lam)
    ref = RBFInterpolator(P, z, kernel="thin_plate_spline", degree=1, smoothing=lam)
    pts = rng.uniform(-12, 12, (200, 2))
    assert np.allclose(ours(pts), ref(pts), rtol=1e-9, atol=1e-9)


def test_gradient_matches_finite_differences():
    P = _landmarks()
    z = np.sin(P[:, 0] / 3) * np.cos(P[:, 1] / 5)
    f = fit_tps(P, z, 0.05)
    pts = rng.uniform(-9, 9, (40, 2))
    h = 1e-6
    fd = np.column_stack([(f(pts + [h, 0]) - f(pts - [h, 0])) / (2 * h),
                          (f(pts + [0, h]) - f(pts - [0, h])) / (2 * h)])
    assert np.allclose(f.gradient(pts), fd, atol=1e-6)
    v, g = f.value_and_gradient(pts)
    assert np.allclose(v, f(pts), atol=1e-12) and np.allclose(g, f.gradient(pts), atol=1e-12)
    # the gradient at a landmark is finite (g'(0) = 0)
    assert np.all(np.isfinite(f.gradient(P)))


def test_lambda_scales_with_length_squared():
    """λ has units of length²: the paper's λ = 0.1 in mm is λ = 1e-7 in m (same map)."""
    P = _landmarks()
    uv = P + rng.normal(0, 1, P.shape)
    lam = np.where(np.arange(len(P)) % 2 == 0, 0.1, 0.0)
    f_mm = fit_tps(P, uv, lam)
    f_m = fit_tps(P * 1e-3, uv * 1e-3, lam * 1e-6)
    pts = rng.uniform(-10, 10, (30, 2))
    assert np.allclose(f_m(pts * 1e-3) * 1e3, f_mm(pts), atol=1e-9)


def test_kernel_value():
    assert tps_kernel(np.array([0.0]))[0] == 0.0
    assert np.isclose(tps_kernel(np.array([4.0]))[0], 4.0 * np.log(2.0))


@pytest.mark.parametrize("P, msg", [
    (np.array([[0.0, 0.0], [1.0, 0.0]]), "at least 3"),
    (np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]), "collinear"),
    (np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]), "coincide"),
])
def test_bad_landmarks_raise(P, msg):
    with pytest.raises(SolverError, match=msg):
        fit_tps(P, np.zeros(len(P)), what="test field")


def test_negative_lambda_raises():
    with pytest.raises(SolverError, match="λ"):
        fit_tps(_landmarks(5), np.zeros(5), -1.0)
