"""The compiled wrapping kernels (numba) against the NumPy reference they replace: the same
results to 1e-12 on the wrap surfaces alone and on whole models' paths (ellipsoids with the
fan, cylinders with the iterative tangent correction, obstacle sets), and the rule that decides
between them."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import ROOT, TSM, needs_data

from arthron.geometry import wrap_ellipsoid as WE
from arthron.geometry import wrap_kernels as WK
from arthron.geometry import wrapping as W

pytest.importorskip("numba")


@pytest.fixture
def both():
    """Run ``fn`` with NumPy and with the kernels; returns both results."""
    def run(fn):
        old = WK.FORCE
        try:
            WK.FORCE = False
            a = fn()
            WK.FORCE = True
            b = fn()
        finally:
            WK.FORCE = old
        return a, b
    return run


def _close(a, b, tol=1e-12):
    for x, y in zip(a, b):
        x, y = np.asarray(x, float), np.asarray(y, float)
        assert np.array_equal(np.isnan(x), np.isnan(y))
        assert np.nanmax(np.abs(x - y), initial=0.0) <= tol


def _segments(rng, n, scale):
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    mid = rng.normal(scale=0.3 * scale, size=(n, 3))
    return mid + 2.5 * scale * d, mid - 2.5 * scale * d


def test_ellipsoid_kernel_equals_numpy(both):
    rng = np.random.default_rng(1)
    radii = np.array([0.07, 0.15, 0.08])
    p1, p2 = _segments(rng, 400, 0.1)
    # a segment through a coordinate plane's chord points (the 2-D branch) and a degenerate one
    p1[0], p2[0] = [0.2, 0.0, 0.01], [-0.2, 0.0, 0.01]
    for axis, sign in ((-1, 0), (0, 1), (2, -1)):
        (a, b) = both(lambda: WE.wrap_ellipsoid(p1, p2, radii, axis, sign))
        assert (a[0] == W.MANDATORY).sum() > 100
        assert np.array_equal(a[0], b[0])
        _close(a[1:], b[1:])


def test_fan_kernel_equals_numpy(both):
    rng = np.random.default_rng(2)
    a = np.array([0.8, 1.3, 0.9])
    R1 = rng.normal(scale=0.6, size=(200, 3))
    d12 = rng.normal(scale=0.5, size=(200, 3))
    f, k = both(lambda: WE._fan_blades(R1, d12, a, a))
    _close([f], [k])


def test_cylinder_kernel_equals_numpy(both):
    rng = np.random.default_rng(3)
    p1, p2 = _segments(rng, 500, 0.05)
    p1[:, 2] += 0.05
    mask = rng.uniform(size=500) < 0.5
    for axis, sign in ((-1, 0), (1, 1), (0, -1)):
        for length, adj in ((0.3, True), (0.3, mask), (0.04, False)):
            a, b = both(lambda: W.wrap_cylinder(p1, p2, 0.02, length, axis, sign,
                                                adjust_tangents=adj))
            assert (a[0] >= W.WRAPPED).sum() > 100
            assert np.array_equal(a[0], b[0])
            _close(a[1:], b[1:])


@needs_data
def test_thoracoscapular_paths_kernel_equals_numpy(both):
    from arthron.io.osim import read_osim
    from arthron.multibody import paths as P
    from arthron.multibody.kinematics import compile_model
    m = read_osim(TSM)
    tree = compile_model(m)
    ps = P.compile_paths(m, tree)
    rng = np.random.default_rng(4)
    q = tree.default_q + rng.uniform(-0.3, 0.3, (40, tree.nq))
    a, b = both(lambda: P.moment_arms(ps, tree, q, return_lengths=True))
    _close(a, b)


def test_shoulder_elbow_paths_kernel_equals_numpy(both):
    from arthron.models.shoulder_elbow import build_shoulder_elbow_model
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.paths import compile_paths, path_lengths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = build_shoulder_elbow_model()
    tree = compile_model(m)
    ps = compile_paths(m, tree)
    rng = np.random.default_rng(0)
    q = tree.default_q + rng.uniform(-0.5, 0.5, (24, tree.nq))
    a, b = both(lambda: path_lengths(ps, tree, q))
    _close([a], [b])


def test_kernel_choice_by_problem_size(monkeypatch):
    monkeypatch.setattr(WK, "FORCE", None)
    monkeypatch.setenv("ARTHRON_NO_NUMBA", "1")
    assert not WK.use_kernel(10 ** 9)
    monkeypatch.delenv("ARTHRON_NO_NUMBA")
    assert WK.use_kernel(0) == (WK._KERNELS is not None or "numba" in sys.modules)
    # a fresh process: importing the path code, and a small wrapping problem, leave numba out;
    # it is imported once the NumPy work reaches the threshold (higher while the kernels are
    # not in numba's cache)
    code = ("import sys, numpy as np\n"
            "from arthron.multibody import paths\n"
            "from arthron.geometry import wrap_ellipsoid as WE, wrap_kernels as WK\n"
            "rng = np.random.default_rng(0)\n"
            "p = rng.normal(size=(50, 3)); WE.wrap_ellipsoid(p, -p, [0.5, 0.7, 0.6])\n"
            "small = 'numba' in sys.modules\n"
            "a = WK.use_kernel(WK.MIN_POINTS_TO_IMPORT - WK._numpy_work)\n"
            "b = WK.use_kernel(WK.MIN_POINTS_TO_COMPILE)\n"
            "print(small, a == WK._cached(), b, 'numba' in sys.modules)\n")
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    if "NUMBA_CACHE_DIR" in os.environ:
        env["NUMBA_CACHE_DIR"] = os.environ["NUMBA_CACHE_DIR"]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env).stdout
    assert out.split() == ["False", "True", "True", "True"]


def test_surface_path_kernel_equals_numpy(both):
    rng = np.random.default_rng(5)
    a = np.array([0.8, 1.3, 0.9])
    u = rng.normal(size=(300, 3))
    u /= np.linalg.norm(u / a, axis=1, keepdims=True)
    r1 = u
    r2 = np.roll(u, 1, 0) * rng.uniform(0.98, 1.0, (300, 1))
    r2[:5] = r1[:5] + 1e-4                       # shorter than one chord
    vs = np.cross(r1, r2)
    vs /= np.linalg.norm(vs, axis=1, keepdims=True)
    vs4 = -np.einsum("ij,ij->i", vs, r1)
    far = rng.uniform(size=300) < 0.3
    for factor in (1.0, 12.0):
        x, y = both(lambda: WE._surface_path(r1, r2, a, vs, vs4, far, factor))
        assert np.array_equal(x[3], y[3]) and x[3].max() > 100
        _close(x, y)


def test_torus_kernel_equals_numpy(both):
    rng = np.random.default_rng(6)
    p1, p2 = _segments(rng, 400, 0.04)
    for axis, sign, adj in ((-1, 0, False), (0, 1, True)):
        a, b = both(lambda: W.wrap_torus(p1, p2, 0.01, 0.05, axis, sign, adjust_tangents=adj))
        assert (a[0] >= W.WRAPPED).sum() > 100 and np.isfinite(a[3]).sum() > 100
        assert np.array_equal(a[0], b[0])
        _close(a[1:], b[1:])


@needs_data
def test_reused_wrap_rows_change_nothing(monkeypatch):
    """Rows already wrapped on an ellipsoid within one path computation are reused
    (path_geometry._wrap_rows): lengths and moment arms equal bit for bit those computed
    without reuse, and reuse happens on arm26 (its later wrap passes repeat rows; poses
    within ±1 rad, where TRIlong's ellipsoid wraps and the passes after the first run)."""
    from arthron.io.osim import read_osim
    from arthron.multibody import path_geometry as PG
    from arthron.multibody import paths as P
    from arthron.multibody.kinematics import compile_model
    from conftest import ARM26
    m = read_osim(ARM26)
    tree = compile_model(m)
    ps = P.compile_paths(m, tree)
    rng = np.random.default_rng(8)
    q = tree.default_q + rng.uniform(-1.0, 1.0, (60, tree.nq))
    calls = []
    orig = W.wrap_segment

    def counted(wo, x1, *a, **k):
        calls.append((wo.type, len(x1)))
        return orig(wo, x1, *a, **k)
    monkeypatch.setattr(PG._wr, "wrap_segment", counted)
    with_reuse = P.moment_arms(ps, tree, q, return_lengths=True)
    n_reuse = sum(n for t, n in calls if t == "WrapEllipsoid")
    calls.clear()
    monkeypatch.setattr(PG, "_MEMO_TYPES", ())
    without = P.moment_arms(ps, tree, q, return_lengths=True)
    n_all = sum(n for t, n in calls if t == "WrapEllipsoid")
    assert n_reuse < n_all
    for a, b in zip(with_reuse, without):
        assert np.array_equal(a, b)


def test_cache_check_finds_the_kernels_of_both_modules(tmp_path, monkeypatch):
    """numba names a kernel's cache index after the module defining it: the check sees the
    ellipsoid kernels (``_wrap_numba_ellipsoid.*.nbi``) beside the others, and a missing one
    (or one older than its source) means not cached."""
    where = {"fan_blades": "_wrap_numba_ellipsoid", "tangent_lm": "_wrap_numba_ellipsoid",
             "surface_path": "_wrap_numba_ellipsoid", "wrap_cylinder": "_wrap_numba",
             "torus_line_point": "_wrap_numba"}
    assert set(where) == set(WK.KERNEL_NAMES)
    sub = tmp_path / "arthron" / "geometry"
    sub.mkdir(parents=True)
    files = {k: sub / f"{m}.{k}-10.py311.nbi" for k, m in where.items()}
    for f in files.values():
        f.write_bytes(b"")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))

    def cached():
        monkeypatch.setattr(WK, "_CACHED", None)
        return WK._cached()
    assert cached()
    os.utime(files["tangent_lm"], (0, 0))          # older than _wrap_numba_ellipsoid.py
    assert not cached()
    files["tangent_lm"].unlink()
    assert not cached()
