"""Conformance of every registered force element and wrap surface, without OpenSim.

* every class of ``arthron.models.forces.FORCE_TYPES``: ``.osim`` write → read gives the same
  component, field by field (values different from the defaults);
* every wrap class of ``arthron.models.wrap_objects.WRAP_TYPES`` (each has a registered
  surface in ``arthron.geometry.wrapping.WRAP_SURFACES``): write → read equality, and on a path
  that wraps over it, analytic moment arms equal −dl/dq by central differences;
* passive generalized forces: SpringGeneralizedForce is −dV/dq of its potential, a ligament's
  (Blankevoort1991Ligament, Ligament) is −F(l) dl/dq, CoordinateLimitForce follows OpenSim's
  documented law (stiffness beyond the limits, zero between them).

Adding a force element or a wrap surface means registering it and passing this file.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from arthron.geometry.wrapping import WRAP_SURFACES
from arthron.io.osim import READERS, WRITERS, read_osim, write_osim
from arthron.models import forces as F
from arthron.models import wrap_objects as W
from arthron.models.functions import SimmSpline
from arthron.models.model import GeometryPath, PathPoint, PathWrap
from arthron.multibody.forces import applied_generalized_forces, passive_forces
from arthron.multibody.kinematics import compile_model
from arthron.multibody.paths import compile_paths, moment_arms, path_lengths
from conftest import ARM26, GAIT2354, GAIT2354_SUBJECT, LENHART, TSM, needs_data
from test_python_model import _equal, build_python_model

MODELS = [ARM26, GAIT2354, GAIT2354_SUBJECT, TSM, LENHART]


def _path():
    return GeometryPath(
        [PathPoint("P1", "PathPoint", "/bodyset/upper", np.array([-0.02, -0.05, 0.0])),
         PathPoint("P2", "PathPoint", "/bodyset/lower", np.array([-0.025, 0.03, 0.0]))],
        [PathWrap("wrap", "elbow_cyl", "hybrid", (-1, -1))])


def _sample_value(cls, name, kind, rng):
    if kind == "float":
        return float(np.round(rng.uniform(0.01, 2.0), 6))
    if kind == "bool":
        d = {f.name: f.default for f in dataclasses.fields(cls)}.get(name)
        return not bool(d)
    if kind == "vec":
        return np.round(rng.uniform(-1, 1, 3), 6)
    if kind == "function":
        x = np.linspace(1.0, 1.2, 5)
        return SimmSpline(x, (x - 1.0) ** 2 * 10.0)
    if kind == "curve":
        return {"min_norm_active_fiber_length": 0.45, "minimum_value": 0.12} \
            if name == "ActiveForceLengthCurve" else {"strain_at_one_norm_force": 0.65} \
            if name == "FiberForceLengthCurve" else {"isometric_slope": 4.5}
    if kind == "str":
        return {"coordinate": "q2", "body": "lower", "bodyA": "upper", "bodyB": "lower"}.get(name, "x")
    raise AssertionError(kind)


def _sample_force(type_name, seed=0):
    cls = F.FORCE_TYPES[type_name]
    rng = np.random.default_rng(seed)
    f = cls(name=f"sample_{type_name}")
    for name, kind in cls.property_fields():
        setattr(f, name, _sample_value(cls, name, kind, rng))
    if type_name in F.PATH_FORCE_TYPES:
        f.path = _path()
    f.applies_force = False
    return f


@pytest.mark.parametrize("type_name", sorted(F.FORCE_TYPES))
def test_force_write_read_equal(type_name, tmp_path):
    assert type_name in READERS and type_name in WRITERS
    m = build_python_model()
    f = _sample_force(type_name)
    m.forces[f.name] = f
    back = read_osim(write_osim(tmp_path / "m.osim", m))
    _equal(f, back.forces[f.name], type_name)
    _equal(m, back)


# ------------------------------------------------------------------------------ wrap surfaces
def _wrap_object(type_name):
    """A wrap object of each class at the elbow of the Python model, sized so that the
    triceps-like path wraps over it for the poses of the test."""
    common = dict(name="elbow_cyl", body="upper", translation=np.array([0.0, -0.3, 0.0]))
    if type_name == "WrapSphere":
        return W.WrapSphere(radius=0.02, **common)
    if type_name == "WrapCylinder":
        return W.WrapCylinder(radius=0.02, length=0.1, quadrant="-x", **common)
    if type_name == "WrapEllipsoid":
        return W.WrapEllipsoid(radii=np.array([0.02, 0.025, 0.03]), **common)
    if type_name == "WrapTorus":
        # the path threads the ring: torus axis (its z) along the upper arm
        return W.WrapTorus(inner_radius=0.015, outer_radius=0.035,
                           xyz_body_rotation=np.array([np.pi / 2, 0.0, 0.0]), **common)
    if type_name == "WrapSphereObst":
        return W.WrapSphereObst(radius=0.02, **common)
    if type_name == "WrapCylinderObst":
        return W.WrapCylinderObst(radius=0.02, length=0.1, wrapDirection="righthand", **common)
    if type_name == "WrapDoubleCylinderObst":
        return W.WrapDoubleCylinderObst(
            radiusUcyl=0.015, radiusVcyl=0.015, wrapUcylDirection="righthand",
            wrapVcylDirection="righthand", wrapUcylHomeBody="upper", wrapVcylHomeBody="lower",
            xyz_body_rotationVcyl=np.zeros(3), translationVcyl=np.array([0.0, -0.03, 0.0]),
            length=0.1, **common)
    raise AssertionError(f"no sample for {type_name}: add one when registering a wrap class")


def _model_over(type_name):
    m = build_python_model()
    m.bodies["upper"].wrap_objects = [_wrap_object(type_name)]
    return m


def test_every_wrap_class_has_a_surface():
    assert set(W.WRAP_TYPES) <= set(WRAP_SURFACES)
    assert set(W.WRAP_TYPES) <= set(READERS) and set(W.WRAP_TYPES) <= set(WRITERS)


@pytest.mark.parametrize("type_name", sorted(W.WRAP_TYPES))
def test_wrap_object_write_read_equal(type_name, tmp_path):
    m = _model_over(type_name)
    back = read_osim(write_osim(tmp_path / "m.osim", m))
    _equal(m.bodies["upper"].wrap_objects, back.bodies["upper"].wrap_objects, type_name)


@pytest.mark.parametrize("type_name", sorted(W.WRAP_TYPES))
def test_wrapped_moment_arms_equal_finite_differences(type_name):
    m = _model_over(type_name)
    tree = compile_model(m)
    ps = compile_paths(m, tree, forces=["triceps"])
    q = np.column_stack([np.linspace(-0.5, 1.0, 7), np.linspace(0.6, 2.2, 7)])
    L = path_lengths(ps, tree, q)
    r = moment_arms(ps, tree, q)
    # the path wraps (longer than the straight line) at some of these poses
    straight = compile_paths(build_python_model_nowrap(), compile_model(build_python_model_nowrap()),
                             forces=["triceps"])
    Ls = path_lengths(straight, tree, q)
    assert (L > Ls + 1e-6).any(), f"{type_name}: the path never wraps"
    h = 1e-6
    for k in range(2):
        dq = np.zeros_like(q)
        dq[:, k] = h
        fd = -(path_lengths(ps, tree, q + dq) - path_lengths(ps, tree, q - dq)) / (2 * h)
        # OpenSim's wrap algorithms (which arthron reproduces) are not all exactly shortest
        # paths, so tangent points held fixed give −dl/dq only approximately: the cylinder
        # without its tangent correction to ~5e-7 m; the ellipsoid, whose surface path lies in
        # the plane through the tangent points rather than on a geodesic, to ~2e-5 m (0.07 %);
        # the torus, whose tangent points come from a Levenberg–Marquardt search stopped at a
        # relative tolerance of 1e-4, to ~5e-6 m
        tol = {"WrapEllipsoid": 5e-5, "WrapTorus": 1e-5}.get(type_name, 2e-6)
        np.testing.assert_allclose(r[:, 0, k], fd[:, 0], atol=tol, err_msg=type_name)


def build_python_model_nowrap():
    m = build_python_model()
    m.forces["triceps"].path.wraps = []
    return m


# ------------------------------------------------------------------------------ passive forces
def test_spring_generalized_force_is_minus_dV_dq():
    m = build_python_model()
    tree = compile_model(m)
    s = m.forces["shoulder_spring"]
    q = np.column_stack([np.linspace(-1, 1.5, 9), np.full(9, 1.0)])
    tau = passive_forces(m, tree, q, np.zeros_like(q)).mobility
    h = 1e-6

    def V(qq):
        return 0.5 * s.stiffness * (qq[:, 0] - s.rest_length) ** 2

    dq = np.zeros_like(q)
    dq[:, 0] = h
    np.testing.assert_allclose(tau[:, 0], -(V(q + dq) - V(q - dq)) / (2 * h), atol=1e-8)


def test_coordinate_limit_force_law():
    m = build_python_model()
    tree = compile_model(m)
    c = m.forces["elbow_limit"]
    w = np.pi / 180
    deg = np.array([0.0, 5.0, 20.0, 60.0, 110.0, 125.0, 130.0, 150.0])
    q = np.column_stack([np.zeros(deg.size), deg * w])
    tau = passive_forces(m, tree, q, np.zeros_like(q)).mobility[:, 1]
    # OpenSim CoordinateLimitForce: full stiffness beyond limit + transition, none inside
    far_up = deg >= c.upper_limit + c.transition
    far_lo = deg <= c.lower_limit - c.transition
    inside = (deg >= c.lower_limit) & (deg <= c.upper_limit)
    np.testing.assert_allclose(tau[far_up], -c.upper_stiffness * (deg[far_up] - c.upper_limit) / w * w,
                               rtol=1e-12)
    np.testing.assert_allclose(tau[far_lo], c.lower_stiffness * (c.lower_limit - deg[far_lo]) / w * w,
                               rtol=1e-12)
    np.testing.assert_allclose(tau[inside], 0.0, atol=1e-12)


@pytest.mark.parametrize("type_name", ["Blankevoort1991Ligament", "Ligament"])
def test_ligament_generalized_force_is_minus_tension_times_dl_dq(type_name):
    from arthron.models.muscles import ligament_forces
    m = build_python_model_nowrap()
    path = m.forces.pop("triceps").path
    if type_name == "Blankevoort1991Ligament":
        lig = F.Blankevoort1991Ligament("lig", path=path, slack_length=0.2, linear_stiffness=500.0)
    else:
        x = np.linspace(1.0, 1.5, 6)
        lig = F.Ligament("lig", path=path, resting_length=0.2, pcsa_force=300.0,
                         force_length_curve=SimmSpline(x, (x - 1.0) ** 2 * 4.0))
    m.forces["lig"] = lig
    tree = compile_model(m)
    q = np.column_stack([np.linspace(-0.5, 1.0, 6), np.linspace(0.3, 2.2, 6)])
    tau, _ = applied_generalized_forces(m, tree, q, np.zeros_like(q), exclude=("Muscles", "shoulder_spring",
                                                                               "elbow_limit"))
    ps = compile_paths(m, tree, forces=["lig"])
    L = path_lengths(ps, tree, q)
    T = ligament_forces(m, ["lig"], L)
    assert (T > 0).any()
    h = 1e-6
    for k in range(2):
        dq = np.zeros_like(q)
        dq[:, k] = h
        dl = (path_lengths(ps, tree, q + dq) - path_lengths(ps, tree, q - dq)) / (2 * h)
        np.testing.assert_allclose(tau[:, k], -T[:, 0] * dl[:, 0], atol=1e-6 * max(1.0, T.max()))


# ------------------------------------------------------------------------------ real models
@needs_data
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_real_model_components_read_back_equal(path, tmp_path):
    """Every typed component of the 3.x and 4.x example models (muscles of several classes,
    ligaments, actuators, wrap objects of every kind they use) reads back equal after
    write_osim, field by field."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = read_osim(path)
        back = read_osim(write_osim(tmp_path / path.name, m))
    _equal(m.forces, back.forces, "forces")
    for b in m.bodies:
        _equal(m.bodies[b].wrap_objects, back.bodies[b].wrap_objects, f"{b}.wrap_objects")
    _equal(m.ground_wrap_objects, back.ground_wrap_objects, "ground_wrap_objects")
    _equal(m.joints, back.joints, "joints")
    _equal(m.constraints, back.constraints, "constraints")
    _equal(m.markers, back.markers, "markers")
