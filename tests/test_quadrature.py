"""Gauss rules on triangles (seed 000, Eqs. 11-15)."""
from math import factorial

import numpy as np
import pytest

from arthron.errors import SolverError
from arthron.geometry.quadrature import RULE_POINTS, collapsed_gauss, map_to_triangles, triangle_rule

rng = np.random.default_rng(1)


@pytest.mark.parametrize("n", RULE_POINTS)
def test_monomials_exact_on_reference_triangle(n):
    rule = triangle_rule(n)
    assert rule.npoints == n
    assert np.isclose(rule.weights.sum(), 1.0, atol=1e-15)
    r, s = rule.rs.T
    for i in range(rule.degree + 1):
        for j in range(rule.degree + 1 - i):
            exact = 2.0 * factorial(i) * factorial(j) / factorial(i + j + 2)  # /area(=1/2)
            assert abs(np.dot(rule.weights, r**i * s**j) - exact) < 1e-14


@pytest.mark.parametrize("n", RULE_POINTS)
def test_not_exact_beyond_degree(n):
    rule = triangle_rule(n)
    d = rule.degree + 1
    r, s = rule.rs.T
    errs = [abs(np.dot(rule.weights, r**i * s**(d - i)) - 2.0 * factorial(i) * factorial(d - i) / factorial(d + 2))
            for i in range(d + 1)]
    assert max(errs) > 1e-6


@pytest.mark.parametrize("n", RULE_POINTS)
def test_random_polynomials_exact_on_arbitrary_triangles(n):
    rule = triangle_rule(n)
    ref = collapsed_gauss(7)  # exact to degree 12
    V = rng.uniform(-5, 5, (20, 2))
    tris = np.array([[3 * k, 3 * k + 1, 3 * k + 2] for k in range(6)])
    V = V[:18]
    coef = rng.normal(size=(rule.degree + 1, rule.degree + 1))

    def poly(p):
        x, y = p[..., 0], p[..., 1]
        return sum(coef[i, j] * x**i * y**j for i in range(rule.degree + 1)
                   for j in range(rule.degree + 1 - i))

    pts, w, areas = map_to_triangles(rule, V, tris)
    pr, wr, _ = map_to_triangles(ref, V, tris)
    got = np.sum(w * poly(pts), axis=1)
    exact = np.sum(wr * poly(pr), axis=1)
    scale = np.sum(np.abs(wr * poly(pr)), axis=1)
    assert np.all(np.abs(got - exact) <= 1e-12 * scale)
    assert np.all(areas > 0)


def test_collapsed_gauss_degree():
    rule = collapsed_gauss(4)
    r, s = rule.rs.T
    assert rule.degree == 6
    for i in range(7):
        for j in range(7 - i):
            assert abs(np.dot(rule.weights, r**i * s**j) - 2.0 * factorial(i) * factorial(j) / factorial(i + j + 2)) < 1e-15


def test_unknown_rule_raises():
    with pytest.raises(SolverError, match="no Gauss rule with 5 points"):
        triangle_rule(5)
