"""Wrap geometry: closed-form cases, quadrant and penetration rules (OpenSim comparisons of
whole paths are in test_paths.py)."""
from __future__ import annotations

import numpy as np
import pytest

from arthron.errors import UnsupportedFeature
from arthron.geometry import wrapping as W


def _pair(a, b):
    return np.atleast_2d(np.asarray(a, float)), np.atleast_2d(np.asarray(b, float))


def test_sphere_great_circle():
    R = 0.05
    p1, p2 = _pair([-0.2, 0.01, 0.0], [0.2, 0.01, 0.0])
    st, r1, r2, L = W.wrap_sphere(p1, p2, R)
    assert st[0] == W.WRAPPED
    # tangent points: |r| = R and (p - r) ⟂ r
    for r, p in ((r1, p1), (r2, p2)):
        assert np.isclose(np.linalg.norm(r), R)
        assert abs(np.dot((p - r)[0], r[0])) < 1e-12
    ang = np.arccos(np.dot(r1[0], r2[0]) / R ** 2)
    assert np.isclose(L[0], R * ang)
    # tangents + arc are longer than the straight line
    total = np.linalg.norm(p1 - r1) + L[0] + np.linalg.norm(p2 - r2)
    assert total > 0.4


def test_sphere_no_wrap_when_line_misses_or_point_inside():
    st, *_ = W.wrap_sphere(*_pair([-0.2, 0.1, 0], [0.2, 0.1, 0]), 0.05)
    assert st[0] == W.NO_WRAP
    st, *_ = W.wrap_sphere(*_pair([0.0, 0.01, 0], [0.2, 0.01, 0]), 0.05)
    assert st[0] == W.INSIDE


def test_cylinder_perpendicular_plane_is_circle_arc():
    R = 0.02
    p1, p2 = _pair([-0.1, 0.005, 0.0], [0.1, 0.005, 0.0])
    st, r1, r2, L = W.wrap_cylinder(p1, p2, R, 0.2)
    assert st[0] == W.MANDATORY
    assert np.allclose([r1[0, 2], r2[0, 2]], 0.0)
    assert np.isclose(np.hypot(*r1[0, :2]), R) and np.isclose(np.hypot(*r2[0, :2]), R)
    ang = np.arccos(np.dot(r1[0, :2], r2[0, :2]) / R ** 2)
    assert np.isclose(L[0], R * ang)


def test_cylinder_quadrant_keeps_path_on_its_side():
    # a '+y' cylinder keeps the path on +y: a segment wholly on -y is an optional wrap over
    # the +y side (OpenSim's WrapCylinder returns "wrapped"), one piercing it must wrap
    R = 0.02
    st, r1, r2, L = W.wrap_cylinder(*_pair([-0.1, -0.05, 0], [0.1, -0.05, 0]), R, 0.2,
                                    axis=1, sign=1)
    assert st[0] == W.WRAPPED and r1[0, 1] > 0 and r2[0, 1] > 0
    # with a point on the active side, piercing the cylinder is mandatory
    st, r1, r2, L = W.wrap_cylinder(*_pair([-0.1, 0.005, 0], [0.1, -0.005, 0]), R, 0.2,
                                    axis=1, sign=1)
    assert st[0] == W.MANDATORY and r1[0, 1] > 0 and r2[0, 1] > 0


def test_cylinder_beyond_its_ends_does_not_wrap():
    st, *_ = W.wrap_cylinder(*_pair([-0.1, 0.005, 0.5], [0.1, 0.005, 0.5]), 0.02, 0.2)
    assert st[0] == W.NO_WRAP


def test_ellipsoid_with_equal_radii_is_the_sphere_wrap():
    R = 0.05
    rng = np.random.default_rng(0)
    p1 = np.column_stack([np.full(20, -0.15), rng.uniform(-0.02, 0.02, (20, 2))])
    p2 = np.column_stack([np.full(20, 0.15), rng.uniform(-0.02, 0.02, (20, 2))])
    st_s, r1s, r2s, Ls = W.wrap_sphere(p1, p2, R)
    st_e, r1e, r2e, Le = W.wrap_ellipsoid(p1, p2, [R, R, R])
    ok = st_s == W.WRAPPED
    assert ok.sum() > 10 and np.all(st_e[ok] == W.MANDATORY)
    # same tangent points up to OpenSim's tangent search tolerance; surface length is a
    # sum of ~1 mm chords (relative error ~1e-4)
    assert np.abs(r1s[ok] - r1e[ok]).max() < 1e-5
    assert np.abs(Ls[ok] - Le[ok]).max() < 2e-4 * Ls[ok].max()


def test_ellipsoid_vectorized_equals_one_by_one():
    rng = np.random.default_rng(1)
    p1 = rng.normal(0, 0.05, (15, 3)) + [-0.12, 0, 0]
    p2 = rng.normal(0, 0.05, (15, 3)) + [0.12, 0, 0]
    radii = [0.04, 0.03, 0.05]
    full = W.wrap_ellipsoid(p1, p2, radii)
    for i in range(15):
        one = W.wrap_ellipsoid(p1[i:i + 1], p2[i:i + 1], radii)
        for a, b in zip(full, one):
            assert np.allclose(a[i], b[0])


def test_torus_is_refused():
    class Obj:
        type = "WrapTorus"
        name = "t"
    with pytest.raises(UnsupportedFeature, match="WrapTorus"):
        W.wrap_segment(Obj(), np.zeros((1, 3)), np.ones((1, 3)))
