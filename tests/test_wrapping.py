"""Wrap geometry: closed-form cases, quadrant and penetration rules (OpenSim comparisons of
whole paths are in test_paths.py)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import needs_opensim

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


def test_fan_in_blocks_equals_the_whole_fan_and_cylinder_rows_alone(monkeypatch):
    """The NumPy fan in blocks of whole fan rows (running sum carried in fan order) equals the
    fan over all its points at once bit for bit, with one block, several, and a row with chord
    points on a coordinate plane (the whole-fan route); a cylinder wraps each row as it would
    alone (only the rows that may wrap are computed)."""
    from arthron.geometry import wrap_ellipsoid as WE
    from arthron.geometry import wrap_kernels as WK
    monkeypatch.setattr(WK, "FORCE", False)
    rng = np.random.default_rng(7)
    a = np.array([1.15, 0.92, 0.93])
    tt = np.arange(1, 299) / 300
    for n in (5, 37, 200):                       # 1, 2 and 8 blocks
        R1 = rng.normal(scale=0.5, size=(n, 3))
        d12 = rng.normal(scale=0.4, size=(n, 3))
        if n == 37:
            R1[3, 0] = d12[3, 0] = 0.0           # every chord point of row 3 on x = 0
        assert np.array_equal(WE._fan_numpy(R1, d12, a, a, tt), WE._fan_numpy_whole(R1, d12, a, a, tt))
    p1 = rng.normal(scale=0.05, size=(300, 3))
    p2 = rng.normal(scale=0.05, size=(300, 3))
    for axis, sign in ((-1, 0), (0, 1)):
        many = W.wrap_cylinder(p1, p2, 0.02, 0.06, axis, sign, adjust_tangents=True)
        assert 10 < (many[0] >= W.WRAPPED).sum() < 290
        for i in (0, 1, 2, int(np.argmax(many[0] >= W.WRAPPED))):
            one = W.wrap_cylinder(p1[i:i + 1], p2[i:i + 1], 0.02, 0.06, axis, sign, adjust_tangents=True)
            assert all(np.array_equal(x[i:i + 1], y) for x, y in zip(many, one))


def test_obstacle_set_objects_are_refused_by_wrap_segment():
    class Obj:
        type = "WrapDoubleCylinderObst"
        name = "t"
    with pytest.raises(UnsupportedFeature, match="WrapDoubleCylinderObst"):
        W.wrap_segment(Obj(), np.zeros((1, 3)), np.ones((1, 3)))


# ------------------------------------------------------------------ OpenSim, one segment
class _OsimSegment:
    """OpenSim 4.6 evaluating one path segment: two free bodies carry the end points (at their
    origins, placed by the joints' translations), the wrap objects are on ground, centred at
    the origin unless given otherwise. Returns path lengths and OpenSim's tangent points."""

    def __init__(self, objects):
        import opensim as osim
        osim.Logger.setLevelString("error")
        m = osim.Model()
        g = m.getGround()
        self.joints = []
        act = osim.PathActuator()
        act.setName("seg")
        for k in range(2):
            b = osim.Body(f"b{k}", 1.0, osim.Vec3(0), osim.Inertia(1))
            j = osim.FreeJoint(f"j{k}", g, b)
            m.addBody(b)
            m.addJoint(j)
            self.joints.append(j)
            act.addNewPathPoint(f"p{k}", b, osim.Vec3(0))
        m.addForce(act)
        for o in objects:
            g.addWrapObject(o)
        for o in objects:
            act.updGeometryPath().addPathWrap(o)
        self.m, self.s, self.gp = m, m.initSystem(), act.getGeometryPath()

    def lengths(self, p1, p2):
        out = np.empty(len(p1))
        for t in range(len(p1)):
            for j, p in zip(self.joints, (p1[t], p2[t])):
                for c in range(3):
                    j.get_coordinates(c).setValue(self.s, 0.0, False)
                    j.get_coordinates(3 + c).setValue(self.s, float(p[c]), False)
            self.m.realizePosition(self.s)
            out[t] = self.gp.getLength(self.s)
        return out


def _osim_cylinder(R, length, quadrant):
    import opensim as osim
    c = osim.WrapCylinder()
    c.setName("cyl")
    c.set_radius(R)
    c.set_length(length)
    c.set_quadrant(quadrant)
    return c


def _osim_sphere(R, quadrant):
    import opensim as osim
    sp = osim.WrapSphere()
    sp.setName("sph")
    sp.set_radius(R)
    sp.set_quadrant(quadrant)
    return sp


def _osim_torus(inner, outer, quadrant):
    import opensim as osim
    t = osim.WrapTorus()
    t.setName("tor")
    t.set_inner_radius(inner)
    t.set_outer_radius(outer)
    t.set_quadrant(quadrant)
    return t


def _far_sphere():
    """A second wrap object the path never reaches: OpenSim then treats the path as one with
    several wrap objects (iterations, cylinder tangent correction)."""
    import opensim as osim
    sp = osim.WrapSphere()
    sp.setName("far")
    sp.set_radius(0.001)
    sp.set_translation(osim.Vec3(10, 10, 10))
    return sp


def _segment_length(st, r1, r2, L, p1, p2):
    w = st >= W.WRAPPED
    return np.where(w, np.linalg.norm(r1 - p1, axis=1) + L + np.linalg.norm(p2 - r2, axis=1),
                    np.linalg.norm(p2 - p1, axis=1))


@needs_opensim
@pytest.mark.parametrize("quadrant", ["all", "x", "-y", "-z"])
@pytest.mark.parametrize("several", [False, True])
def test_cylinder_segment_matches_opensim(quadrant, several):
    """Random segments around a cylinder, alone on its path or with another wrap object
    (then OpenSim slides the tangent points along the axis until the straight lines meet the
    helix within 0.1°, evaluating the helix from the corrected start point; long wraps take
    2π minus the signed angle)."""
    R, length = 0.01, 0.08
    axis, sign = {"all": (-1, 0), "x": (0, 1), "-y": (1, -1), "-z": (2, -1)}[quadrant]
    objs = [_osim_cylinder(R, length, quadrant)] + ([_far_sphere()] if several else [])
    rng = np.random.default_rng(3)
    p1 = rng.uniform(-0.05, 0.05, (150, 3))
    p2 = rng.uniform(-0.05, 0.05, (150, 3))
    ref = _OsimSegment(objs).lengths(p1, p2)
    st, r1, r2, L = W.wrap_cylinder(p1, p2, R, length, axis, sign, adjust_tangents=several)
    ours = _segment_length(st, r1, r2, L, p1, p2)
    assert (st >= W.WRAPPED).sum() > 20
    # the correction's 0.1° test can flip on round-off after many sliding steps: 1e-9 m level
    assert np.abs(ours - ref).max() < (1e-7 if several else 1e-12)


@needs_opensim
@pytest.mark.parametrize("quadrant", ["all", "x", "-y", "+z", "-x"])
def test_sphere_segment_matches_opensim(quadrant):
    """Random segments around a sphere with and without a quadrant: OpenSim's sidedness
    rules, including its negative surface length for far-side wraps."""
    R = 0.02
    axis, sign = {"all": (-1, 0), "x": (0, 1), "-y": (1, -1), "+z": (2, 1), "-x": (0, -1)}[quadrant]
    rng = np.random.default_rng(5)
    p1 = rng.uniform(-0.06, 0.06, (600, 3))
    p2 = rng.uniform(-0.06, 0.06, (600, 3))
    # segments through the sphere's neighbourhood
    p2 = np.where((np.arange(600) % 2 == 0)[:, None], -p1 + rng.normal(0, 0.01, (600, 3)), p2)
    ref = _OsimSegment([_osim_sphere(R, quadrant)]).lengths(p1, p2)
    st, r1, r2, L = W.wrap_sphere(p1, p2, R, axis, sign)
    ours = _segment_length(st, r1, r2, L, p1, p2)
    assert (st >= W.WRAPPED).sum() > 100
    assert np.abs(ours - ref).max() < 1e-12
    if quadrant != "all":
        assert (st == W.MANDATORY).any()
    if quadrant == "-x":
        assert (L < 0).any()      # OpenSim's far-side length is negative


@needs_opensim
@pytest.mark.parametrize("quadrant", ["all", "x", "-y"])
@pytest.mark.parametrize("several", [False, True])
def test_torus_segment_matches_opensim(quadrant, several):
    """Segments through and around the ring of a torus (OpenSim: closest point of the line to
    the ring by MINPACK's Levenberg-Marquardt, then a cylinder tangent to the ring)."""
    inner, outer = 0.01, 0.04
    axis, sign = {"all": (-1, 0), "x": (0, 1), "-y": (1, -1)}[quadrant]
    rng = np.random.default_rng(2)
    n = 300
    p1 = np.c_[rng.uniform(-0.05, 0.05, (n, 2)), rng.uniform(0.02, 0.08, n)]
    p2 = np.c_[rng.uniform(-0.05, 0.05, (n, 2)), rng.uniform(-0.08, -0.02, n)]
    objs = [_osim_torus(inner, outer, quadrant)] + ([_far_sphere()] if several else [])
    ref = _OsimSegment(objs).lengths(p1, p2)
    st, r1, r2, L = W.wrap_torus(p1, p2, inner, outer, axis, sign, adjust_tangents=several)
    wrapped = (st >= W.WRAPPED) & np.isfinite(L)
    ours = _segment_length(np.where(wrapped, st, W.NO_WRAP), r1, r2, L, p1, p2)
    assert wrapped.sum() > 50
    assert np.abs(ours - ref).max() < 1e-9


@needs_opensim
def test_torus_far_from_the_ring_within_tolerance():
    """Segments anywhere near the torus: where OpenSim's residual has no root near the start
    its Levenberg-Marquardt (OpenSim's Lmdif.cpp, fixed finite-difference step 1e-5) stops on a
    plateau; arthron replays that search step by step and stops where it does (~1e-4 m apart
    when the search was standard MINPACK's)."""
    inner, outer = 0.015, 0.05
    rng = np.random.default_rng(7)
    p1 = rng.uniform(-0.1, 0.1, (300, 3))
    p2 = rng.uniform(-0.1, 0.1, (300, 3))
    ref = _OsimSegment([_osim_torus(inner, outer, "all")]).lengths(p1, p2)
    st, r1, r2, L = W.wrap_torus(p1, p2, inner, outer)
    wrapped = (st >= W.WRAPPED) & np.isfinite(L)
    ours = _segment_length(np.where(wrapped, st, W.NO_WRAP), r1, r2, L, p1, p2)
    err = np.abs(ours - ref)
    assert np.median(err) < 1e-12
    assert err.max() < 1e-9


# ------------------------------------------------------------------ obstacle set (Garner & Pandy)
def _wrap_angle(p, s, direction):
    """Angle from p to s about +z, measured in the wrap direction, in [0, 2π)."""
    a = np.arctan2(s[:, 1], s[:, 0]) - np.arctan2(p[:, 1], p[:, 0])
    return np.mod(direction * a, 2 * np.pi)


@pytest.mark.parametrize("direction", [1, -1])
def test_cylinder_obstacle_closed_form(direction):
    """Cross-section: tangent + arc + tangent with the arc in the wrap direction, contact while
    the arc stays under 180°; with a rise, the unrolled path is one straight line."""
    R = 0.01
    rng = np.random.default_rng(11)
    p = np.c_[rng.uniform(-0.05, 0.05, (400, 2)), rng.uniform(-0.03, 0.03, 400)]
    s = np.c_[rng.uniform(-0.05, 0.05, (400, 2)), rng.uniform(-0.03, 0.03, 400)]
    st, q, t, L = W.wrap_cylinder_obstacle(p, s, R, direction)
    dp, ds = np.hypot(*p[:, :2].T), np.hypot(*s[:, :2].T)
    inside = (dp < R) | (ds < R)
    dp, ds = np.maximum(dp, R), np.maximum(ds, R)
    arc = _wrap_angle(p, s, direction) - np.arccos(R / np.maximum(dp, R)) - np.arccos(
        R / np.maximum(ds, R))
    arc = np.mod(arc, 2 * np.pi)
    contact = ~inside & (arc <= np.pi)
    assert np.array_equal(st == W.INSIDE, inside)
    assert np.array_equal(st == W.WRAPPED, contact)
    c = contact
    lxy = np.sqrt(dp ** 2 - R ** 2) + np.sqrt(ds ** 2 - R ** 2) + R * arc
    total = (np.linalg.norm(q - p, axis=1) + L + np.linalg.norm(s - t, axis=1))
    assert np.allclose(total[c], np.hypot(lxy, s[:, 2] - p[:, 2])[c], rtol=0, atol=1e-14)
    # tangent points on the surface, straight parts tangent to it
    assert np.allclose(np.hypot(*q[c, :2].T), R) and np.allclose(np.hypot(*t[c, :2].T), R)
    assert np.abs(np.einsum("ij,ij->i", (q - p)[c, :2], q[c, :2])).max() < 1e-14
    assert np.abs(np.einsum("ij,ij->i", (s - t)[c, :2], t[c, :2])).max() < 1e-14
    assert c.sum() > 50 and (~c & ~inside).sum() > 50


def test_sphere_obstacle_is_the_shortest_great_circle_wrap():
    """The sphere obstacle equals the OpenSim-checked WrapSphere (quadrant 'all') geometry:
    same contact (the straight segment crosses the sphere), tangent points and length."""
    R = 0.02
    rng = np.random.default_rng(12)
    p = rng.uniform(-0.06, 0.06, (500, 3))
    s = np.where((np.arange(500) % 2 == 0)[:, None], -p + rng.normal(0, 0.01, (500, 3)),
                 rng.uniform(-0.06, 0.06, (500, 3)))
    st, q, t, L = W.wrap_sphere_obstacle(p, s, R)
    st0, r1, r2, L0 = W.wrap_sphere(p, s, R)
    assert np.array_equal(st == W.WRAPPED, st0 == W.WRAPPED)
    ok = st == W.WRAPPED
    assert ok.sum() > 100
    assert np.abs(q[ok] - r1[ok]).max() < 1e-14 and np.abs(t[ok] - r2[ok]).max() < 1e-14
    assert np.abs(L[ok] - L0[ok]).max() < 1e-14
    st, *_ = W.wrap_sphere_obstacle(np.array([[0.05, 0, 0]]), np.array([[-0.05, 0, 0]]), R)
    assert st[0] == W.INSIDE          # collinear with the centre: no unique plane


def test_double_cylinder_obstacle_belts():
    """Two parallel pulleys of radius R, 2a apart; P below U, S below V. Both left-handed:
    the path runs over the top (open belt). Opposite directions: it crosses between them
    (crossed belt, common tangent of length sqrt((2a)² - (2R)²)). With a rise the unrolled
    path stays straight only in the open-belt case (same helix angle), checked as well."""
    a, R, b = 0.05, 0.01, 0.03
    P = np.array([[-a, -b, 0.0]]) + [a, 0, 0]     # U frame: U at the origin
    S = np.array([[a, -b, 0.0]]) + [a, 0, 0]
    case, q, Q, T, t, L = W.wrap_double_cylinder_obstacle(P, S, R, -1, R, -1, np.eye(3),
                                                          [2 * a, 0, 0])
    open_belt = 2 * np.sqrt(b * b - R * R) + 2 * R * (np.pi - np.arccos(R / b)) + 2 * a
    assert case[0] == W.DC_BOTH and abs(L[0] - open_belt) < 1e-14
    assert np.allclose(Q[0], [0, R, 0]) and np.allclose(T[0], [2 * a, R, 0])
    P3, S3 = P + [0, 0, -0.02], S + [0, 0, 0.03]
    case, q, Q, T, t, L = W.wrap_double_cylinder_obstacle(P3, S3, R, -1, R, -1, np.eye(3),
                                                          [2 * a, 0, 0])
    assert case[0] == W.DC_BOTH and abs(L[0] - np.hypot(open_belt, 0.05)) < 1e-12
    # crossed: over the top of U (left-handed), under V going up to S above V (right-handed)
    S2 = np.array([[2 * a, b, 0.0]])
    case, q, Q, T, t, L = W.wrap_double_cylinder_obstacle(P, S2, R, -1, R, 1, np.eye(3),
                                                          [2 * a, 0, 0])
    g = np.arccos(2 * R / (2 * a))              # tangent direction of the crossed belt
    cross = 2 * np.sqrt(b * b - R * R) + np.sqrt((2 * a) ** 2 - (2 * R) ** 2) \
        + 2 * R * (1.5 * np.pi - np.arccos(R / b) - g)
    assert case[0] == W.DC_BOTH and abs(L[0] - cross) < 1e-12


def test_fan_plane_and_inside_checks_equal_the_pointwise_tests():
    """The NumPy fan's checks over whole rows (a chord point's coordinate within round-off of
    0: a window around each coordinate's crossing; every chord point inside the ellipsoid: the
    fan's two ends) agree with the tests on every chord point as computed, on random rows and
    on rows with a chord point exactly on a coordinate plane, a constant coordinate, or 0/0."""
    from arthron.geometry import wrap_ellipsoid as WE
    from arthron.geometry.ellipsoid_closest import ROUNDOFF
    rng = np.random.default_rng(21)
    tt = np.arange(1, 299) / 300
    a = np.array([1.15, 0.92, 0.93])
    hits = inside = 0
    for trial in range(1500):
        R1 = rng.normal(scale=0.5, size=(4, 3))
        d12 = rng.normal(scale=0.5, size=(4, 3))
        k, i = rng.integers(0, len(tt)), rng.integers(0, 3)
        if trial % 3 == 0:      # a chord point on the plane of coordinate i (as computed or near)
            R1[0, i] = -tt[k] * d12[0, i]
        if trial % 7 == 0:
            d12[1, i] = 0.0
        if trial % 11 == 0:
            R1[2, i] = d12[2, i] = 0.0
        x = R1[:, None, :] + tt[None, :, None] * d12[:, None, :]     # as _fan_numpy computes
        plane = bool((np.abs(x) <= ROUNDOFF).any())
        assert WE._on_plane(R1, d12, tt) == plane
        hits += plane
        if WE._all_inside(R1, d12, tt, a):
            inside += 1
            assert (((x / a) ** 2).sum(-1) < 1.0).all()
    assert 300 < hits < 1400 and inside > 0


def test_double_cylinder_obstacle_cases_and_consistency():
    """Skewed cylinders: each frame's case follows the contact tests, and a path over both is
    consistent (each wrap is the single-cylinder wrap between its neighbours: the common
    tangent Q-T touches both)."""
    rng = np.random.default_rng(13)
    n = 400
    ang = np.deg2rad(35.0)
    Ruv = np.array([[1, 0, 0], [0, np.cos(ang), -np.sin(ang)], [0, np.sin(ang), np.cos(ang)]])
    ouv = np.array([0.06, 0.01, 0.0])
    p = np.c_[rng.uniform(-0.05, 0.0, n), rng.uniform(-0.05, 0.05, n), rng.uniform(-0.03, 0.03, n)]
    s = np.c_[rng.uniform(0.06, 0.11, n), rng.uniform(-0.05, 0.05, n), rng.uniform(-0.03, 0.03, n)]
    ru, rv = 0.012, 0.008
    case, q, Q, T, t, L = W.wrap_double_cylinder_obstacle(p, s, ru, 1, rv, -1, Ruv, ouv)
    assert {W.DC_NONE, W.DC_U, W.DC_V, W.DC_BOTH} <= set(case.tolist())
    to_v = lambda x: (x - ouv) @ Ruv
    b = case == W.DC_BOTH
    st, q1, Q1, _ = W.wrap_cylinder_obstacle(p[b], T[b], ru, 1)
    assert np.all(st == W.WRAPPED) and np.abs(q1 - q[b]).max() < 1e-10
    assert np.abs(Q1 - Q[b]).max() < 1e-10
    st, T1, t1, _ = W.wrap_cylinder_obstacle(to_v(Q[b]), to_v(s[b]), rv, -1)
    assert np.all(st == W.WRAPPED) and np.abs(T1 - to_v(T[b])).max() < 1e-10
    # single-cylinder frames: the other cylinder is not touched by the path
    u = case == W.DC_U
    st, *_ = W.wrap_cylinder_obstacle(to_v(Q[u]), to_v(s[u]), rv, -1)
    assert not np.any(st == W.WRAPPED)
    v = case == W.DC_V
    st, *_ = W.wrap_cylinder_obstacle(p[v], T[v], ru, 1)
    assert not np.any(st == W.WRAPPED)
    # the wrapped path is never shorter than the straight line
    assert np.all(L >= np.linalg.norm(s - p, axis=1) - 1e-15)
