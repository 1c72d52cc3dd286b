"""Joint types: one registry of what the multibody core needs to know about each OpenSim joint.

Every joint is compiled into a short chain of *elementary operations* from its parent frame F
to its child frame M (see :mod:`arthron.multibody.tree`):

* ``("fixed", Transform)``             a constant transform,
* ``("rot", axis, c, func)``           rotation about the unit ``axis`` by ``θ = func(q_c)``
                                       (``func`` None: θ = q_c),
* ``("trans", [(c, func, axis), …])``  translation ``Σ func(q_c) axis`` (expressed in the frame
                                       reached so far),
* ``("ellip", radii, c0, c1)``         Simbody's Ellipsoid mobilizer translation (on the
                                       ellipsoid of ``radii``, driven by the first two angles).

A :class:`JointType` says how to build those operations for a :class:`arthron.models.model.Joint`
(``ops``), how many coordinates of which motion type the joint has (``motion_types``; None when
the joint's spatial transform decides, as for CustomJoint), whether its first three coordinates'
Simbody mobilities (generalized speeds) are the angular velocity ω_FM in F rather than the
Euler-angle rates (``angular_velocity``: Ball, Free, Ellipsoid, Scapulothoracic; see
:func:`arthron.multibody.kinematics.qdot_from_speeds`), and which ``parameters`` it reads
(with example values; the conformance tests build one joint of every registered type from
them).

Adding a joint type means writing its ``ops`` and calling :func:`register_joint_type`; the
conformance suite (``tests/test_conformance_joints.py``) then runs it through finite-difference
and Newton–Euler checks. The transforms reproduce Simbody's mobilizers as OpenSim 4.6 builds
them (``PinJoint``: rotation about z of F; ``SliderJoint``: translation along x; ``Ball`` /
``Gimbal``: body-fixed X-Y-Z; ``ScapulothoracicJoint::extendAddToSystem``: Ellipsoid + winging
Pin + Weld).
"""
from __future__ import annotations

from dataclasses import field
from typing import Callable

import numpy as np

from ..runtime import dataclass  # dataclasses.dataclass with shared __repr__/__eq__
from ..errors import ModelFileError, UnsupportedFeature
from ..geometry.spatial import axis_angle, frame_with_z, rot_z
from ..models.functions import LinearFunction
from ..models.model import Model, Transform

__all__ = ["JointType", "JOINT_TYPES", "register_joint_type", "joint_type", "joint_ops"]


@dataclass(frozen=True)
class JointType:
    """What the multibody core needs to know about one joint type (see the module docstring).

    Attributes
    ----------
    name : str                      OpenSim class name (``"PinJoint"``)
    ops : callable                  ``ops(model, joint, C, cidx) -> list`` of elementary
                                    operations from F to M; ``C`` the joint's coordinate indices
                                    (its coordinate order), ``cidx`` name -> index of all
                                    coordinates (for CustomJoint axes)
    motion_types : tuple or None    ``"rotational"`` / ``"translational"`` per coordinate, in
                                    order; None: decided by the joint's spatial transform
    angular_velocity : bool         the first three coordinates' mobilities are ω_FM (in F)
    parameters : dict               joint parameters read by ``ops`` -> an example value
    mobilizers : tuple or None      the joint's Simbody mobilized bodies as groups of coordinate
                                    positions (``((0, 1, 2), (3,))``: OpenSim's
                                    ScapulothoracicJoint builds an Ellipsoid and a winging Pin);
                                    None: one mobilizer moving all its coordinates
    """

    name: str
    ops: Callable = field(repr=False)
    motion_types: tuple | None
    angular_velocity: bool = False
    parameters: dict = field(default_factory=dict)
    mobilizers: tuple | None = None


JOINT_TYPES: dict[str, JointType] = {}


def register_joint_type(name: str, ops: Callable, motion_types, *, angular_velocity: bool = False,
                        parameters: dict | None = None, mobilizers=None) -> JointType:
    """Register (or replace) a joint type; returns its :class:`JointType`."""
    jt = JointType(name, ops, None if motion_types is None else tuple(motion_types), angular_velocity,
                   dict(parameters or {}),
                   None if mobilizers is None else tuple(tuple(int(i) for i in g) for g in mobilizers))
    JOINT_TYPES[name] = jt
    return jt


def joint_type(name: str, joint: str = "", source=None) -> JointType:
    """The registered :class:`JointType` ``name``.

    Raises
    ------
    UnsupportedFeature when no such type is registered (``joint``: the joint's name, for the
    message; ``source``: the model file).
    """
    jt = JOINT_TYPES.get(name)
    if jt is None:
        raise UnsupportedFeature(f"joint type {name} ('{joint}')", source)
    return jt


def joint_ops(model: Model, j, cidx: dict) -> list:
    """Elementary operations from F to M of joint ``j`` (its registered type's ``ops``)."""
    jt = joint_type(j.type, j.name, model.source)
    if jt.motion_types is not None and len(j.coordinates) != len(jt.motion_types):
        raise ModelFileError(f"{j.type} '{j.name}' has {len(j.coordinates)} coordinates, "
                             f"expected {len(jt.motion_types)}", model.source, f"<{j.type} name='{j.name}'>")
    return jt.ops(model, j, [cidx[c.name] for c in j.coordinates], cidx)


def _parameter(model, j, name):
    """A joint parameter as a float array, or a ModelFileError naming the joint."""
    v = j.parameters.get(name)
    if v is None:
        raise ModelFileError(f"{j.type} '{j.name}' lacks '{name}'", model.source, f"<{j.type} name='{j.name}'>")
    return np.asarray(v, float)


# ----------------------------------------------------------------------------- the types
_EX, _EY, _EZ = np.eye(3)
_ROT, _TRANS = "rotational", "translational"


def _is_identity(f) -> bool:
    return f is None or (isinstance(f, LinearFunction) and f.slope == 1.0 and f.intercept == 0.0)


def _xyz(C):
    """Body-fixed X-Y-Z rotations by the first three coordinates."""
    return [("rot", _EX, C[0], None), ("rot", _EY, C[1], None), ("rot", _EZ, C[2], None)]


def _custom(model, j, C, cidx):
    def axis_coordinate(a):
        c = cidx.get(a.coordinates[0])
        if c is None:
            raise ModelFileError(f"joint '{j.name}' axis '{a.name}' names unknown coordinate "
                                 f"'{a.coordinates[0]}'", model.source)
        return c

    ops = []
    st = j.spatial_transform
    where = f"<CustomJoint name='{j.name}'>"
    if st is None or len(st) != 6:
        raise ModelFileError(f"CustomJoint '{j.name}' has no <SpatialTransform> (six TransformAxis "
                             "elements)", model.source, where)
    for a in st:
        n = float(np.linalg.norm(a.axis)) if a.axis is not None and np.shape(a.axis) == (3,) else 0.0
        if not np.isfinite(n) or n == 0.0:
            raise ModelFileError(f"TransformAxis '{a.name}' of CustomJoint '{j.name}' has no "
                                 f"direction (axis {a.axis})", model.source, where)
    rot, tr = st[:3], st[3:]
    # Axes are used as written: OpenSim 4.x only re-derives "independent" axes
    # (SpatialTransform::constructIndependentAxes) when upgrading pre-1.9 documents.
    terms, const_p = [], np.zeros(3)
    for a in tr:
        ax = a.axis / np.linalg.norm(a.axis)
        if a.coordinates:
            c = axis_coordinate(a)
            terms.append((c, None if _is_identity(a.function) else a.function, ax))
        elif a.function is not None:
            const_p = const_p + float(a.function.value(0.0)) * ax
    if np.any(const_p):
        ops.append(("fixed", Transform(np.eye(3), const_p)))
    if terms:
        ops.append(("trans", terms))
    for a in rot:
        ax = a.axis / np.linalg.norm(a.axis)
        if a.coordinates:
            c = axis_coordinate(a)
            ops.append(("rot", ax, c, None if _is_identity(a.function) else a.function))
        elif a.function is not None:
            ang = float(a.function.value(0.0))
            if ang != 0.0:
                ops.append(("fixed", Transform(axis_angle(ax, ang), np.zeros(3))))
    return ops


def _weld(model, j, C, cidx):
    return []


def _pin(model, j, C, cidx):
    return [("rot", _EZ, C[0], None)]


def _slider(model, j, C, cidx):
    return [("trans", [(C[0], None, _EX)])]


def _ball(model, j, C, cidx):
    return _xyz(C)


def _universal(model, j, C, cidx):
    return [("rot", _EX, C[0], None), ("rot", _EY, C[1], None)]


def _free(model, j, C, cidx):
    return [("trans", [(C[3], None, _EX), (C[4], None, _EY), (C[5], None, _EZ)])] + _xyz(C)


def _planar(model, j, C, cidx):
    return [("trans", [(C[1], None, _EX), (C[2], None, _EY)]), ("rot", _EZ, C[0], None)]


def _ellipsoid(model, j, C, cidx):
    radii = _parameter(model, j, "radii_x_y_z")
    return [("ellip", radii, C[0], C[1])] + _xyz(C)


def _scapulothoracic(model, j, C, cidx):
    r = _parameter(model, j, "thoracic_ellipsoid_radii_x_y_z")
    wo = np.asarray(j.parameters.get("scapula_winging_axis_origin", np.zeros(2)), float)
    wd = float(j.parameters.get("scapula_winging_axis_direction", 0.0))
    Rz90 = rot_z(np.pi / 2)
    W = Transform(frame_with_z(np.array([-np.sin(wd), np.cos(wd), 0.0])), np.array([wo[0], wo[1], 0.0]))
    return ([("fixed", Transform(Rz90, np.zeros(3))),
             ("ellip", np.array([r[1], r[0], r[2]]), C[0], C[1])] + _xyz(C)
            + [("fixed", Transform(Rz90.T, np.zeros(3))), ("fixed", W), ("rot", _EZ, C[3], None),
               ("fixed", W.inverse())])


register_joint_type("CustomJoint", _custom, None)
register_joint_type("PinJoint", _pin, (_ROT,))
register_joint_type("SliderJoint", _slider, (_TRANS,))
register_joint_type("WeldJoint", _weld, ())
register_joint_type("BallJoint", _ball, (_ROT,) * 3, angular_velocity=True)
register_joint_type("GimbalJoint", _ball, (_ROT,) * 3)
register_joint_type("UniversalJoint", _universal, (_ROT,) * 2)
register_joint_type("FreeJoint", _free, (_ROT,) * 3 + (_TRANS,) * 3, angular_velocity=True)
register_joint_type("PlanarJoint", _planar, (_ROT, _TRANS, _TRANS))
register_joint_type("EllipsoidJoint", _ellipsoid, (_ROT,) * 3, angular_velocity=True,
                    parameters={"radii_x_y_z": np.array([0.05, 0.08, 0.11])})
register_joint_type("ScapulothoracicJoint", _scapulothoracic, (_ROT,) * 4, angular_velocity=True,
                    parameters={"thoracic_ellipsoid_radii_x_y_z": np.array([0.07, 0.15, 0.08]),
                                "scapula_winging_axis_origin": np.array([-0.02, 0.03]),
                                "scapula_winging_axis_direction": 0.4},
                    mobilizers=((0, 1, 2), (3,)))
