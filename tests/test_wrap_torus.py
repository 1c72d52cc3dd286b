"""OpenSim 4.6's WrapTorus on a whole path: a body on a pin with a muscle crossing a torus of
MoBL-ARMS's dimensions (inner radius 8 mm, outer 16 mm, as its ECRL / EDC wrist tori), lengths
and moment arms against OpenSim over a sweep of the pin, by the NumPy route and the kernels.

The poses include segments far from the ring, where the closest-point search of
``WrapTorus::findClosestPoint`` has no root near its start and its Levenberg-Marquardt
(OpenSim's Lmdif.cpp) stops on its 1e-4 tolerances at a point that depends on every step of
the iteration, here on the Jacobian's constant finite-difference step of 1e-5: standard MINPACK
(step sqrt(eps)|x|) stops elsewhere by up to 1 mm in path length. The first model puts at the
pin angle 0 the segment of MoBL-ARMS's ECRL (origin -> tangent point on Elbow_PT_ECRL, in the
ECRL torus frame) at frame 32 of an OpenSim-assembled motion, where the two differed."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import needs_opensim

from arthron.geometry import wrap_kernels as WK
from arthron.geometry import wrapping as W
from arthron.io.osim import read_osim
from arthron.multibody import paths as P
from arthron.multibody.kinematics import compile_model

# MoBL-ARMS ECRL, mobl.mot frame 32: the segment wrapped over the ECRL torus (torus frame, m)
_ECRL_P1 = (0.04111433537047083, 0.1349788749263899, -0.2251289783162682)
_ECRL_P2 = (0.02140299347322715, 0.04894611768370898, -0.09672042948290777)

_MODELS = {
    # pin about the torus axis through the origin point; the insertion at angle 0 is _ECRL_P2
    "ecrl_segment": dict(rot=(0.0, 0.0, 0.0), origin=_ECRL_P1, pin=_ECRL_P1,
                         insertion=tuple(b - a for a, b in zip(_ECRL_P1, _ECRL_P2))),
    # a tilted torus under a path that sweeps through and far around the ring
    "tilted": dict(rot=(-1.26, 0.43, -0.38), origin=(0.036, 0.025, -0.011),
                   pin=(-0.016, 0.004, -0.03), insertion=(0.147, 0.053, 0.124)),
}


def _torus_pin_model(path, rot, origin, pin, insertion, several):
    """Ground holds the torus (and, with ``several``, a sphere the path never reaches, which
    makes OpenSim treat the path as one with several wrap objects: passes, cylinder tangent
    correction); a body on a pin (ground z) carries the insertion."""
    import opensim as osim
    osim.Logger.setLevelString("error")
    m = osim.Model()
    m.setName("torus_pin")
    g = m.getGround()
    b = osim.Body("hand", 1.0, osim.Vec3(0), osim.Inertia(0.01))
    j = osim.PinJoint("wrist", g, osim.Vec3(*pin), osim.Vec3(0), b, osim.Vec3(0), osim.Vec3(0))
    c = j.updCoordinate()
    c.setName("flexion")
    c.setRangeMin(-3.0)
    c.setRangeMax(3.0)
    m.addBody(b)
    m.addJoint(j)
    mus = osim.Thelen2003Muscle("ext", 100.0, 0.1, 0.1, 0.0)
    mus.addNewPathPoint("origin", g, osim.Vec3(*origin))
    mus.addNewPathPoint("insertion", b, osim.Vec3(*insertion))
    t = osim.WrapTorus()
    t.setName("ring")
    t.set_inner_radius(0.008)
    t.set_outer_radius(0.016)
    t.set_xyz_body_rotation(osim.Vec3(*rot))
    g.addWrapObject(t)
    mus.updGeometryPath().addPathWrap(t)
    if several:
        sp = osim.WrapSphere()
        sp.setName("far")
        sp.set_radius(0.001)
        sp.set_translation(osim.Vec3(10, 10, 10))
        g.addWrapObject(sp)
        mus.updGeometryPath().addPathWrap(sp)
    m.addForce(mus)
    m.finalizeConnections()
    m.printToXML(str(path))
    return path


def _opensim_sweep(path, Q):
    import opensim as osim
    m = osim.Model(str(path))
    s = m.initSystem()
    c = m.getCoordinateSet().get("flexion")
    gp = osim.Muscle.safeDownCast(m.getForceSet().get("ext")).getGeometryPath()
    L, R = np.empty(len(Q)), np.empty(len(Q))
    for t, q in enumerate(Q):
        c.setValue(s, float(q), False)
        m.realizePosition(s)
        L[t] = gp.getLength(s)
        R[t] = gp.computeMomentArm(s, c)
    return L, R


@needs_opensim
@pytest.mark.parametrize("several", [False, True])
@pytest.mark.parametrize("name", sorted(_MODELS))
def test_torus_on_a_pin_matches_opensim(tmp_path, monkeypatch, name, several):
    monkeypatch.chdir(tmp_path)                       # opensim.log goes here
    path = _torus_pin_model(tmp_path / "torus_pin.osim", several=several, **_MODELS[name])
    Q = np.sort(np.r_[np.linspace(-2.8, 2.8, 140), 0.0])      # 0: the ECRL segment itself
    L0, R0 = _opensim_sweep(path, Q)
    model = read_osim(path)
    tree = compile_model(model)
    ps = P.compile_paths(model, tree)
    routes = {}
    for route in ("numpy", "kernels"):
        if route == "kernels":
            pytest.importorskip("numba")
        monkeypatch.setattr(WK, "FORCE", route == "kernels")
        MA, L1 = P.moment_arms(ps, tree, Q[:, None], return_lengths=True)
        wrapped = (P.compute_paths(ps, tree, Q[:, None])[0].wobj >= 0).any(1)
        assert wrapped.sum() > 100
        # OpenSim's own iteration replayed: rounding-level agreement (1e-11 m seen with the
        # far sphere, whose passes and tangent correction iterate on these lengths)
        assert np.abs(L1[:, 0] - L0).max() < 1e-9, route
        assert np.abs(MA[:, 0, 0] - R0).max() < 1e-9, route
        routes[route] = (L1, MA)
    np.testing.assert_allclose(routes["numpy"][0], routes["kernels"][0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(routes["numpy"][1], routes["kernels"][1], rtol=0, atol=1e-12)


def _minpack_line_point(p, q, r):
    """``wrapping._torus_line_point`` as MINPACK's own lmdif (scipy.optimize.leastsq: forward
    differences of step sqrt(eps)|x|) would run it, row by row, with OpenSim's arguments."""
    from scipy.optimize import leastsq
    out = np.empty_like(p)
    for i, (a, b) in enumerate(zip(p, q)):
        n = (b - a) / np.linalg.norm(b - a)
        c2, c3 = 2.0 * a @ n, a[0] * n[0] + a[1] * n[1]
        c4, c5 = n[0] * n[0] + n[1] * n[1], a[0] * a[0] + a[1] * a[1]

        def res(u):
            return [c2 + 2.0 * u[0] - 2.0 * r * (2.0 * c4 * u[0] + 2.0 * c3)
                    / np.sqrt(u[0] * u[0] * c4 + 2.0 * c3 * u[0] + c5)]
        u = leastsq(res, [0.0], ftol=1e-4, xtol=1e-4, gtol=0.0, maxfev=500, factor=0.2)[0][0]
        out[i] = a + u * n
    return out


@needs_opensim
def test_torus_search_is_opensims_lmdif_not_minpacks(tmp_path, monkeypatch):
    """The discriminating row: MoBL-ARMS's ECRL segment (frame 32) wrapped alone. Its
    closest-point searches stop where OpenSim's Lmdif.cpp (constant Jacobian step 1e-5) stops:
    the wrapped length is OpenSim's to rounding, while the stopping points of MINPACK's own
    lmdif (step sqrt(eps)|x|, 3e-6 and 5e-5 m further along the line) give a length 0.1 mm
    or more off."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(WK, "FORCE", False)
    p1, p2 = np.array([_ECRL_P1]), np.array([_ECRL_P2])
    path = _torus_pin_model(tmp_path / "row.osim", several=False, **_MODELS["ecrl_segment"])
    L0, _ = _opensim_sweep(path, np.array([0.0]))

    def wrapped_length():
        st, r1, r2, L = W.wrap_torus(p1, p2, 0.008, 0.016)
        assert st[0] == W.WRAPPED
        return np.linalg.norm(r1 - p1) + L[0] + np.linalg.norm(p2 - r2)
    assert abs(wrapped_length() - L0[0]) < 1e-12
    monkeypatch.setattr(W, "_torus_line_point", _minpack_line_point)
    assert abs(wrapped_length() - L0[0]) > 1e-4
