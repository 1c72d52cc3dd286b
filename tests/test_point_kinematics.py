"""Station positions and Jacobians from the compiled tree (arthron.multibody.point_kinematics),
the one-call value-and-slope of axis functions they use, and the layering of the IK solver."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from conftest import GAIT_REF_MODEL, LENHART, ROOT, TSM, needs_data


def _fd_check(tree, bodies, locs, q, h=1e-6, atol=1e-7):
    from arthron.multibody.point_kinematics import station_jacobian
    P, J = station_jacobian(tree, q, bodies, locs)
    for c in range(tree.nq):
        dq = np.zeros(tree.nq)
        dq[c] = h
        Pp, _ = station_jacobian(tree, q + dq, bodies, locs)
        Pm, _ = station_jacobian(tree, q - dq, bodies, locs)
        np.testing.assert_allclose(J[:, :, c], (Pp - Pm) / (2 * h), atol=atol)
    return P, J


@needs_data
@pytest.mark.parametrize("path", [GAIT_REF_MODEL, TSM], ids=["gait2354", "thoracoscapular"])
def test_station_jacobian_matches_finite_differences_and_tree(path):
    """Spline-driven CustomJoint translations (Gait2354 knees), Ellipsoid/Scapulothoracic
    mobilizers (Thoracoscapular): Jacobian = central differences; positions = the compiled
    tree's forward kinematics; one frame = a batch of frames."""
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model, forward_kinematics, station_positions
    from arthron.multibody.point_kinematics import marker_jacobian, station_jacobian
    tree = compile_model(read_osim(path))
    rng = np.random.default_rng(1)
    bodies = np.array([-1] + list(range(tree.nb)) * 2)
    locs = rng.normal(0, 0.1, (len(bodies), 3))
    Q = tree.default_q + rng.normal(0, 0.3, (4, tree.nq))
    P, J = _fd_check(tree, bodies, locs, Q[0])
    kin = forward_kinematics(tree, Q)
    ref = station_positions(tree, kin, bodies, locs)
    np.testing.assert_allclose(P, ref[0], atol=1e-12)
    Pb, Jb = station_jacobian(tree, Q, bodies, locs)
    np.testing.assert_allclose(Pb, ref, atol=1e-12)
    for k in range(len(Q)):
        Pk, Jk = station_jacobian(tree, Q[k], bodies, locs)
        np.testing.assert_allclose(Jb[k], Jk, atol=1e-12)
    # ground stations do not move
    assert np.all(J[0] == 0.0)
    names, Pm, Jm = marker_jacobian(tree, Q[0])
    assert names == list(tree.markers) and Pm.shape == (len(names), 3)
    assert Jm.shape == (len(names), 3, tree.nq)


@needs_data
@pytest.mark.parametrize("path", [GAIT_REF_MODEL, TSM, LENHART], ids=["gait2354", "thoracoscapular", "lenhart"])
def test_compiled_kernel_equals_numpy(path):
    """The numba kernel (multibody/station_kernel.py) gives the NumPy loop's positions and
    Jacobians to 1e-12 (spline-driven translations, ellipsoid mobilizers, rotations coupled by
    splines (Lenhart's knee), ground stations, one pose with row selection and a batch)."""
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.point_kinematics import StationKinematics, compiled_kernel
    if compiled_kernel() is None:
        pytest.skip("numba not installed")
    tree = compile_model(read_osim(path))
    rng = np.random.default_rng(5)
    bodies = np.array([-1] + list(range(tree.nb)) * 2)
    locs = rng.normal(0, 0.1, (len(bodies), 3))
    Q = tree.default_q + rng.normal(0, 0.5, (7, tree.nq))
    ref = StationKinematics(tree, bodies, locs)
    fast = StationKinematics(tree, bodies, locs)
    fast.compiled = True
    P0, J0 = ref.evaluate_batch(Q)
    P1, J1 = fast.evaluate_batch(Q)
    assert np.abs(P1 - P0).max() <= 1e-12 and np.abs(J1 - J0).max() <= 1e-12
    rows = np.array([0, 3, 4])
    p0, j0 = ref.evaluate(Q[2], rows)
    p1, j1 = fast.evaluate(Q[2], rows)
    assert np.abs(p1 - p0).max() <= 1e-12 and np.abs(j1 - j0).max() <= 1e-12
    assert fast.evaluate(Q[2], None, jac=False)[1] is None


def test_compiled_function_kinds_equal_value_and_derivative():
    """The kernel's own evaluation of axis functions (Constant, LinearFunction, SimmSpline and
    NaturalCubicSpline inside MultiplierFunctions) equals Function.value_and_derivative,
    outside the knots, on them and between them; other kinds are left to NumPy."""
    from arthron.models.functions import (Constant, LinearFunction, MultiplierFunction,
                                          NaturalCubicSpline, PiecewiseLinearFunction, SimmSpline)
    from arthron.multibody.point_kinematics import _encode_function, compiled_kernel
    if compiled_kernel() is None:
        pytest.skip("numba not installed")
    from arthron.multibody.station_kernel import _feval
    xk = np.array([-1.2, -0.3, 0.0, 0.4, 1.1, 2.0])
    yk = np.array([0.01, -0.02, 0.015, 0.03, -0.01, 0.002])
    funcs = [Constant(0.3), LinearFunction(-1.7, 0.2), SimmSpline(xk, yk), NaturalCubicSpline(xk, yk),
             SimmSpline(xk[:2], yk[:2]), MultiplierFunction(SimmSpline(xk, yk), 1.3),
             MultiplierFunction(MultiplierFunction(LinearFunction(2.0, 0.1), 0.5), -3.0), None]
    a = np.concatenate([xk, xk + 1e-14, xk - 1e-14, np.linspace(-3, 4, 57)])
    for f in funcs:
        knots = []
        (ft, off, n), (sc, p0, p1) = _encode_function(f, knots)
        X, Y, Bc, Cc, Dc = (np.concatenate([k[i] for k in knots]) if knots else np.zeros(1) for i in range(5))
        got = np.array([_feval(ft, sc, off, n, p0, p1, X, Y, Bc, Cc, Dc, float(x)) for x in a])
        ref = (a, np.ones_like(a)) if f is None else f.value_and_derivative(a)
        np.testing.assert_allclose(got[:, 0], ref[0], rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(got[:, 1], ref[1], rtol=1e-14, atol=1e-15)
    assert _encode_function(PiecewiseLinearFunction(xk, yk), []) is None


@needs_data
@pytest.mark.parametrize("path", [GAIT_REF_MODEL, LENHART], ids=["gait2354", "lenhart"])
def test_second_order_term_matches_finite_differences(path):
    """StationKinematics.second_order (the Newton term of IK: Σ R·∂²x/∂q∂q) equals central
    differences of Jᵀ R: spline-driven knee translations (Gait2354), rotations coupled to a
    coordinate through splines (Lenhart's knee), ground stations; the compiled route gives the
    same hinge columns and term."""
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.point_kinematics import StationKinematics, compiled_kernel
    tree = compile_model(read_osim(path))
    rng = np.random.default_rng(3)
    bodies = np.array([-1] + list(range(tree.nb)) * 2)
    locs = rng.normal(0, 0.1, (len(bodies), 3))
    sk = StationKinematics(tree, bodies, locs)
    assert sk.has_second_order
    Q = tree.default_q + rng.normal(0, 0.3, (3, tree.nq))
    R = rng.normal(0, 1, (3, len(bodies), 3))
    P, J, h = sk.evaluate_batch(Q, hinges=True)
    P2, J2 = sk.evaluate_batch(Q)
    assert np.array_equal(P, P2) and np.array_equal(J, J2)
    S = sk.second_order(P, R, h)
    fd = np.zeros_like(S)
    for c in range(tree.nq):
        dq = np.zeros(tree.nq)
        dq[c] = 1e-6
        Jp, Jm = sk.evaluate_batch(Q + dq)[1], sk.evaluate_batch(Q - dq)[1]
        fd[:, :, c] = np.einsum("bmxi,bmx->bi", (Jp - Jm) / 2e-6, R)
    assert np.abs(S - fd).max() < 1e-7 * max(1.0, np.abs(S).max())
    assert np.array_equal(S, np.swapaxes(S, 1, 2))
    if compiled_kernel() is not None:
        sk.compiled = True
        Pc, Jc, hc = sk.evaluate_batch(Q, hinges=True)
        np.testing.assert_allclose(sk.second_order(Pc, R, hc), S, rtol=0, atol=1e-11)


@needs_data
@pytest.mark.parametrize("path", [GAIT_REF_MODEL, TSM, LENHART], ids=["gait2354", "thoracoscapular", "lenhart"])
def test_weighted_jacobian_rows_equal_evaluate_batch(path):
    """StationKinematics.evaluate_weighted (the weighted, free-column Jacobian rows IK stacks,
    built only where a column moves a station) equals evaluate_batch's Jacobian restricted and
    weighted, to 1e-15 m: coordinates with two hinge columns (Gait2354's knee rotation and its
    spline-driven translation), Ellipsoid mobilizers, ground stations, a subset of free
    coordinates, both routes; positions_batch equals evaluate_batch's positions."""
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.point_kinematics import StationKinematics, compiled_kernel
    tree = compile_model(read_osim(path))
    rng = np.random.default_rng(7)
    bodies = np.array([-1] + list(range(tree.nb)) * 2)
    locs = rng.normal(0, 0.1, (len(bodies), 3))
    Q = tree.default_q + rng.normal(0, 0.3, (5, tree.nq))
    sw = rng.uniform(0, 1, (5, len(bodies)))
    for compiled in (False, True):
        if compiled and compiled_kernel() is None:
            continue
        sk = StationKinematics(tree, bodies, locs)
        sk.compiled = compiled
        P0, J0, h0 = sk.evaluate_batch(Q, hinges=True)
        for free in (np.arange(tree.nq), np.arange(0, tree.nq, 3)):
            out = np.full((5, 3 * len(bodies) + 2, len(free)), 7.0)
            P, h = sk.evaluate_weighted(Q, sw, free, out, hinges=True)
            assert np.array_equal(P, P0) and np.array_equal(h.W, h0.W)
            ref = (J0[:, :, :, free] * sw[:, :, None, None]).reshape(5, -1, len(free))
            assert np.abs(out[:, :3 * len(bodies)] - ref).max() <= 1e-15
            assert np.all(out[:, 3 * len(bodies):] == 7.0)          # the other rows untouched
            assert np.array_equal(sk.evaluate_weighted(Q, sw, free, out), P0)
        assert np.array_equal(sk.positions_batch(Q), P0)
    sk.compiled = False
    with pytest.raises(ValueError):
        sk.evaluate_weighted(Q, sw, np.arange(tree.nq), np.zeros((5, tree.nq, 3 * len(bodies))).swapaxes(1, 2))


@needs_data
def test_fold_cached_per_tree():
    """The pose-independent folding is computed once per tree and released with it."""
    import gc
    from arthron.io.osim import read_osim
    from arthron.multibody import point_kinematics as pk
    from arthron.multibody.kinematics import compile_model
    tree = compile_model(read_osim(GAIT_REF_MODEL))
    a = pk.StationKinematics.for_markers(tree, None)
    b = pk.StationKinematics(tree, [0], [[0.0, 0.0, 0.0]])
    assert a.fold is b.fold and id(tree) in pk._FOLDS
    assert not any(k.startswith("_fold") for k in vars(tree))     # nothing attached to Tree
    key = id(tree)
    del tree, a, b
    gc.collect()
    assert key not in pk._FOLDS


def test_value_and_derivative_equals_value_and_derivative():
    """Function.value_and_derivative (the joint-axis fast path) against value/derivative:
    floats for a float, arrays for arrays, equal to rounding (exact at the end knots and
    outside)."""
    from arthron.models.functions import (Constant, GCVSpline, LinearFunction, MultiplierFunction,
                                          SimmSpline)
    xk = np.array([-2.0, -1.2, -0.5, 0.0, 0.4, 1.1])
    yk = np.array([0.1, -0.3, 0.25, 0.0, 0.6, 0.2])
    fs = [SimmSpline(xk, yk), SimmSpline(xk[:3], yk[:3]), SimmSpline(xk[:2], yk[:2]),
          MultiplierFunction(SimmSpline(xk, yk), 1.7), LinearFunction(0.3, -0.2), Constant(0.8),
          GCVSpline(5, xk, yk)]
    x = np.concatenate([np.linspace(-3, 2, 101), xk, xk + 1e-14, xk - 1e-14])
    for f in fs:
        v, d = f.value_and_derivative(x)
        np.testing.assert_allclose(v, f.value(x), rtol=0, atol=1e-14)
        np.testing.assert_allclose(d, f.derivative(x, 1), rtol=0, atol=1e-12)
        for xi in x[::7]:
            vs, ds = f.value_and_derivative(float(xi))
            assert isinstance(float(vs), float)
            assert abs(vs - f.value(xi)) <= 1e-14 and abs(ds - f.derivative(xi, 1)) <= 1e-12
    s = fs[0]
    for xi in (-3.0, xk[0], xk[-1], 1.5):          # ends and outside: exact
        assert s.value_and_derivative(xi) == (float(s.value(xi)), float(s.derivative(xi, 1)))


_FORBIDDEN = ("arthron.io", "lxml", "matplotlib")


def _imports(path: Path):
    """Absolute module names imported anywhere in a module (also inside functions)."""
    tree = ast.parse(path.read_text())
    pkg = ".".join(path.relative_to(ROOT / "src").with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                out.append(".".join(base + ([node.module] if node.module else [])))
            else:
                out.append(node.module)
    return out


@pytest.mark.parametrize("name", ["solvers/inverse_kinematics.py",
                                  "solvers/ik_levenberg_marquardt.py",
                                  "solvers/marker_placer.py", "multibody/point_kinematics.py"])
def test_ik_layers_do_not_import_io(name):
    """IK, its Levenberg–Marquardt iterations, the MarkerPlacer and the station kinematics are
    free of files: no arthron.io, lxml or matplotlib import (not even inside a function), no
    higher layer, and under 800 lines."""
    path = ROOT / "src" / "arthron" / name
    mods = _imports(path)
    bad = [m for m in mods if m.startswith(_FORBIDDEN) or m.startswith(("arthron.tools",
                                                                        "arthron.cli"))]
    assert not bad, bad
    if name.startswith("multibody"):
        assert not [m for m in mods if m.startswith("arthron.solvers")]
    assert len(path.read_text().splitlines()) <= 800
