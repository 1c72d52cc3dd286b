"""Force elements of a model's ForceSet as typed data, in OpenSim's vocabulary.

Every force class arthron models is a dataclass whose fields carry OpenSim's property names
(SI units, radians), so a model built in Python behaves exactly like one read from a file and
:func:`arthron.io.osim.write_osim` writes it from its fields:

* muscles (:class:`Muscle` and one subclass per OpenSim class: Thelen2003Muscle,
  Millard2012EquilibriumMuscle / AccelerationMuscle, RigidTendonMuscle,
  DeGrooteFregly2016Muscle and the deprecated Schutte1993, Delp1990, Thelen2003 classes);
* ligaments (:class:`Ligament`, :class:`Blankevoort1991Ligament`) and path springs and
  actuators (:class:`PathActuator`, :class:`PathSpring`, :class:`ClutchedPathSpring`,
  :class:`McKibbenActuator`);
* coordinate forces (:class:`SpringGeneralizedForce`, :class:`CoordinateLimitForce`,
  :class:`CoordinateActuator`) and body actuators (:class:`PointActuator`,
  :class:`TorqueActuator`).

Defaults are OpenSim's where arthron relies on them; a field that is None is absent (not
written: OpenSim's own default applies). ``FORCE_TYPES`` maps each OpenSim class name to its dataclass (registered once, with
:func:`register_force`); a force of any other class is an :class:`UnmodelledForce` (its file
element kept verbatim by ``arthron.io``). ``unmodelled_xml`` holds, as serialized XML text, the
properties of a modelled force that arthron does not use (appearance, control bounds,
activation time constants ...); only :mod:`arthron.io.osim` reads and writes it.

``Force(name, type, properties, path, modelled, raw)`` (the former generic form) still works:
it returns the registered dataclass of ``type`` with ``properties`` set as fields.
``force.properties`` is a live mapping view of the fields (``appliesForce`` is
``applies_force``).
"""
from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import field, fields
from typing import Any, ClassVar

import numpy as np

from ..runtime import dataclass  # dataclasses.dataclass with shared __repr__/__eq__

__all__ = [
    "Force", "UnmodelledForce", "FORCE_TYPES", "register_force", "make_force",
    "MUSCLE_TYPES", "PATH_FORCE_TYPES", "Muscle", "Thelen2003Muscle",
    "Millard2012EquilibriumMuscle", "Millard2012AccelerationMuscle", "RigidTendonMuscle",
    "DeGrooteFregly2016Muscle", "Schutte1993Muscle_Deprecated", "Delp1990Muscle_Deprecated",
    "Thelen2003Muscle_Deprecated", "Ligament", "Blankevoort1991Ligament", "PathActuator",
    "PathSpring", "ClutchedPathSpring", "McKibbenActuator", "SpringGeneralizedForce", "PointToPointSpring",
    "ExpressionBasedCoordinateForce", "ExpressionBasedPointToPointForce",
    "SmoothSphereHalfSpaceForce", "BushingForce",
    "CoordinateLimitForce", "CoordinateActuator", "ActivationCoordinateActuator", "PointActuator",
    "TorqueActuator",
]

MUSCLE_TYPES = (
    "Thelen2003Muscle", "Millard2012EquilibriumMuscle", "Millard2012AccelerationMuscle",
    "Schutte1993Muscle_Deprecated", "Delp1990Muscle_Deprecated", "RigidTendonMuscle",
    "DeGrooteFregly2016Muscle", "Thelen2003Muscle_Deprecated",
)
PATH_FORCE_TYPES = MUSCLE_TYPES + (
    "Ligament", "Blankevoort1991Ligament", "PathActuator", "PathSpring", "ClutchedPathSpring",
    "McKibbenActuator",
)

#: OpenSim class name -> dataclass of the force elements arthron models.
FORCE_TYPES: dict = {}


def register_force(cls):
    """Register a force dataclass under its OpenSim class name (``cls.opensim_type``)."""
    FORCE_TYPES[cls.opensim_type] = cls
    return cls


# ----------------------------------------------------------------------------- field kinds
def _num(default=None):
    return field(default=default, metadata={"kind": "float"})


def _txt(default=None):
    return field(default=default, metadata={"kind": "str"})


def _flag(default=None):
    return field(default=default, metadata={"kind": "bool"})


def _vec(default):
    return field(default_factory=lambda: np.array(default, float), metadata={"kind": "vec"})


def _func():
    return field(default=None, metadata={"kind": "function"})


def _curve():
    return field(default=None, metadata={"kind": "curve"})


_ALIASES = {"appliesForce": "applies_force"}


#: class -> its property_fields (computed on first use)
_PROPERTY_FIELDS: dict = {}
#: class -> the names its property view knows (computed on first use)
_VIEW_KEYS: dict = {}


class _FieldView(MutableMapping):
    """The modelled properties of a force as a mapping (field name -> value; None = absent)."""

    __slots__ = ("_f",)

    def __init__(self, f):
        self._f = f

    def _keys(self):
        """The property names of the force's class (a frozenset, made once per class)."""
        cls = type(self._f)
        keys = _VIEW_KEYS.get(cls)
        if keys is None:
            keys = _VIEW_KEYS[cls] = frozenset(self._ordered_keys())
        return keys

    def _ordered_keys(self):
        return [n for n, _ in self._f.property_fields()] + ["applies_force"]

    def __getitem__(self, k):
        k = _ALIASES.get(k, k)
        extra = getattr(self._f, "extra", None)
        if k in self._keys():
            v = getattr(self._f, k)
            if v is None:
                raise KeyError(k)
            return v
        if extra is not None and k in extra:
            return extra[k]
        raise KeyError(k)

    def __setitem__(self, k, v):
        k = _ALIASES.get(k, k)
        if k in self._keys():
            setattr(self._f, k, v)
            return
        extra = getattr(self._f, "extra", None)
        if extra is None:
            raise KeyError(f"{self._f.type} '{self._f.name}' has no property '{k}'")
        extra[k] = v

    def __delitem__(self, k):
        k = _ALIASES.get(k, k)
        if k in self._keys():
            setattr(self._f, k, None)
        else:
            del self._f.extra[k]

    def __iter__(self):
        extra = getattr(self._f, "extra", None) or {}
        return iter([k for k in self._ordered_keys() if getattr(self._f, k) is not None] + list(extra))

    def __len__(self):
        return sum(1 for _ in self)


def make_force(name, type="", properties=None, path=None, modelled=True, raw=None):
    """A force element of OpenSim class ``type``: the registered dataclass with
    ``properties`` (OpenSim property names) set as its fields, or an :class:`UnmodelledForce`.

    Raises KeyError naming a property the class does not have.
    """
    cls = FORCE_TYPES.get(type)
    props = dict(properties or {})
    if cls is not None and modelled:
        f = cls(name=name, path=path)
        for k, v in props.items():
            f.properties[k] = v
        return f
    applies = bool(props.pop("appliesForce", True))
    return UnmodelledForce(name=name, type=type, path=path, applies_force=applies, raw=raw,
                           extra=props)


class _ForceMeta(type):
    def __call__(cls, *args, **kw):
        if cls is Force:     # the former generic constructor
            return make_force(*args, **kw)
        return super().__call__(*args, **kw)


@dataclass(eq=False)
class Force(metaclass=_ForceMeta):
    """Base of the force elements. Fields common to all: ``name``, ``type`` (OpenSim class),
    ``path`` (GeometryPath of path-based forces, else None), ``applies_force`` (OpenSim
    ``appliesForce``), ``unmodelled_xml`` (io only)."""

    name: str
    type: str = ""
    path: Any = None
    applies_force: bool = True
    unmodelled_xml: str = field(default="", repr=False)

    opensim_type: ClassVar[str] = ""
    modelled: ClassVar[bool] = True

    @classmethod
    def property_fields(cls):
        """(name, kind) of the OpenSim properties this class models, in writing order."""
        pf = _PROPERTY_FIELDS.get(cls)
        if pf is None:      # dataclass fields are fixed per class: computed once
            pf = _PROPERTY_FIELDS[cls] = tuple((f.name, f.metadata["kind"]) for f in fields(cls)
                                               if "kind" in f.metadata)
        return list(pf)

    @property
    def properties(self) -> MutableMapping:
        return _FieldView(self)

    @property
    def is_muscle(self) -> bool:
        return self.type in MUSCLE_TYPES


@dataclass(eq=False)
class UnmodelledForce(Force):
    """A force class arthron does not model (contact, bushings, plugins ...): ``raw`` is its file
    element (written back verbatim by ``arthron.io``), ``extra`` scalar properties known (for a
    ``HuntCrossleyForce`` also ``contact_parameters``: a list of dicts ``geometry`` (names),
    ``stiffness``, ``dissipation``, ``static_friction``, ``dynamic_friction``,
    ``viscous_friction``, and ``transition_velocity``, which inverse dynamics applies)."""

    raw: Any = field(default=None, repr=False)
    extra: dict = field(default_factory=dict)
    modelled: ClassVar[bool] = False


# ----------------------------------------------------------------------------- muscles
@dataclass(eq=False)
class Muscle(Force):
    """Common muscle properties (OpenSim ``Muscle``; defaults as OpenSim's): max isometric force
    (N), optimal fiber length (m), tendon slack length (m), pennation angle at optimal fiber
    length (rad), max contraction velocity (optimal fiber lengths / s)."""

    max_isometric_force: float = _num(1000.0)
    optimal_fiber_length: float = _num(0.1)
    tendon_slack_length: float = _num(0.2)
    pennation_angle_at_optimal: float = _num(0.0)
    max_contraction_velocity: float = _num(10.0)


@register_force
@dataclass(eq=False)
class Thelen2003Muscle(Muscle):
    """OpenSim ``Thelen2003Muscle`` (Thelen 2003): curve shape parameters as OpenSim's."""

    type: str = "Thelen2003Muscle"
    opensim_type: ClassVar[str] = "Thelen2003Muscle"
    FmaxTendonStrain: float | None = _num()
    FmaxMuscleStrain: float = _num(0.6)
    KshapeActive: float = _num(0.45)
    KshapePassive: float = _num(5.0)     # OpenSim 4.6 Thelen2003Muscle::constructProperties
    Af: float = _num(0.25)
    Flen: float = _num(1.4)


@register_force
@dataclass(eq=False)
class Thelen2003Muscle_Deprecated(Thelen2003Muscle):
    """OpenSim ``Thelen2003Muscle_Deprecated``: :class:`Thelen2003Muscle`'s properties with the
    deprecated class's defaults (OpenSim 4.6)."""

    type: str = "Thelen2003Muscle_Deprecated"
    opensim_type: ClassVar[str] = "Thelen2003Muscle_Deprecated"
    # OpenSim 4.6's defaults of the deprecated class (read back from OpenSim in
    # tests/test_convert_legacy.py)
    KshapeActive: float = _num(0.5)
    KshapePassive: float = _num(4.0)
    Af: float = _num(0.3)
    Flen: float = _num(1.8)


@register_force
@dataclass(eq=False)
class Millard2012EquilibriumMuscle(Muscle):
    """OpenSim ``Millard2012EquilibriumMuscle`` (Millard et al. 2013). The curve properties of
    its ``ActiveForceLengthCurve``, ``FiberForceLengthCurve`` and ``ForceVelocityCurve``
    (dicts of OpenSim property name -> value; absent = OpenSim's default, None = all
    defaults). Which curves OpenSim actually uses also depends on ``fiber_damping`` and
    ``ignore_tendon_compliance`` (kept verbatim; ``arthron.models.muscles.millard_curve_params``)."""

    type: str = "Millard2012EquilibriumMuscle"
    opensim_type: ClassVar[str] = "Millard2012EquilibriumMuscle"
    ActiveForceLengthCurve: dict | None = _curve()
    FiberForceLengthCurve: dict | None = _curve()
    ForceVelocityCurve: dict | None = _curve()


@register_force
@dataclass(eq=False)
class Millard2012AccelerationMuscle(Millard2012EquilibriumMuscle):
    """OpenSim ``Millard2012AccelerationMuscle`` (Millard et al. 2013): the curve properties of
    :class:`Millard2012EquilibriumMuscle`; its other properties are kept verbatim."""

    type: str = "Millard2012AccelerationMuscle"
    opensim_type: ClassVar[str] = "Millard2012AccelerationMuscle"


@register_force
@dataclass(eq=False)
class RigidTendonMuscle(Muscle):
    """OpenSim ``RigidTendonMuscle``: the :class:`Muscle` properties (inextensible tendon)."""

    type: str = "RigidTendonMuscle"
    opensim_type: ClassVar[str] = "RigidTendonMuscle"


@register_force
@dataclass(eq=False)
class DeGrooteFregly2016Muscle(Muscle):
    """OpenSim ``DeGrooteFregly2016Muscle`` (De Groote et al. 2016): the :class:`Muscle`
    properties; its other properties are kept verbatim."""

    type: str = "DeGrooteFregly2016Muscle"
    opensim_type: ClassVar[str] = "DeGrooteFregly2016Muscle"


@register_force
@dataclass(eq=False)
class Schutte1993Muscle_Deprecated(Muscle):
    """OpenSim ``Schutte1993Muscle_Deprecated`` (Schutte 1993): the :class:`Muscle` properties;
    its curves and other properties are kept verbatim."""

    type: str = "Schutte1993Muscle_Deprecated"
    opensim_type: ClassVar[str] = "Schutte1993Muscle_Deprecated"


@register_force
@dataclass(eq=False)
class Delp1990Muscle_Deprecated(Muscle):
    """OpenSim ``Delp1990Muscle_Deprecated`` (Delp 1990): the :class:`Muscle` properties; its
    curves and other properties are kept verbatim."""

    type: str = "Delp1990Muscle_Deprecated"
    opensim_type: ClassVar[str] = "Delp1990Muscle_Deprecated"


# ----------------------------------------------------------------------------- path forces
@register_force
@dataclass(eq=False)
class Ligament(Force):
    """OpenSim ``Ligament``: tension ``pcsa_force * f(l / resting_length)`` (N) beyond the
    resting length (m); ``force_length_curve`` is a :class:`arthron.models.functions.Function`."""

    type: str = "Ligament"
    opensim_type: ClassVar[str] = "Ligament"
    resting_length: float | None = _num()
    pcsa_force: float | None = _num()
    force_length_curve: Any = _func()


@register_force
@dataclass(eq=False)
class Blankevoort1991Ligament(Force):
    """OpenSim ``Blankevoort1991Ligament`` (Blankevoort et al. 1991): slack length (m), linear
    stiffness (N per unit strain), transition strain, damping coefficient (N·s per unit
    strain)."""

    type: str = "Blankevoort1991Ligament"
    opensim_type: ClassVar[str] = "Blankevoort1991Ligament"
    slack_length: float | None = _num()
    linear_stiffness: float | None = _num()
    transition_strain: float = _num(0.06)
    damping_coefficient: float = _num(0.003)


@register_force
@dataclass(eq=False)
class PathActuator(Force):
    """OpenSim ``PathActuator``: tension = control × ``optimal_force`` (N)."""

    type: str = "PathActuator"
    opensim_type: ClassVar[str] = "PathActuator"
    optimal_force: float = _num(1.0)


@register_force
@dataclass(eq=False)
class McKibbenActuator(PathActuator):
    """OpenSim ``McKibbenActuator``: a pneumatic artificial muscle along its path,
    ``thread_stiffness``, ``number_of_turns`` and ``cord_length`` (m) as OpenSim's."""

    type: str = "McKibbenActuator"
    opensim_type: ClassVar[str] = "McKibbenActuator"
    thread_stiffness: float | None = _num()
    number_of_turns: float | None = _num()
    cord_length: float | None = _num()


@register_force
@dataclass(eq=False)
class PathSpring(Force):
    """OpenSim ``PathSpring``: tension ``stiffness (l - resting_length)(1 + dissipation l̇)``
    beyond the resting length (m)."""

    type: str = "PathSpring"
    opensim_type: ClassVar[str] = "PathSpring"
    resting_length: float | None = _num()
    stiffness: float | None = _num()
    dissipation: float | None = _num()


@register_force
@dataclass(eq=False)
class ClutchedPathSpring(Force):
    """OpenSim ``ClutchedPathSpring``: a spring along its path engaged by a clutch control;
    ``stiffness`` (N/m), ``dissipation``, ``relaxation_time_constant`` (s) and
    ``initial_stretch`` (m) as OpenSim's properties."""

    type: str = "ClutchedPathSpring"
    opensim_type: ClassVar[str] = "ClutchedPathSpring"
    stiffness: float | None = _num()
    dissipation: float | None = _num()
    relaxation_time_constant: float | None = _num()
    initial_stretch: float | None = _num()


@register_force
@dataclass(eq=False)
class PointToPointSpring(Force):
    """OpenSim ``PointToPointSpring`` (Simbody ``Force::TwoPointLinearSpring``): a force
    ``stiffness (d − rest_length)`` (N/m, m) along the line between ``point1`` fixed on ``body1``
    and ``point2`` on ``body2`` (points in their body frames, m; d their distance), pulling the
    points together when stretched and apart when compressed. ``body1``/``body2`` are the
    4.x sockets (``/bodyset/<name>`` or ``/ground``; the 3.x ``<body1>`` body names are read
    as those paths)."""

    type: str = "PointToPointSpring"
    opensim_type: ClassVar[str] = "PointToPointSpring"
    body1: str | None = field(default=None, metadata={"kind": "str", "xml": "socket_body1",
                                                      "xml_3x_body": "body1"})
    body2: str | None = field(default=None, metadata={"kind": "str", "xml": "socket_body2",
                                                      "xml_3x_body": "body2"})
    point1: np.ndarray = _vec([0.0, 0.0, 0.0])
    point2: np.ndarray = _vec([0.0, 0.0, 0.0])
    stiffness: float = _num(1.0)
    rest_length: float = _num(0.0)


# ----------------------------------------------------------------------------- coordinate forces
@register_force
@dataclass(eq=False)
class SpringGeneralizedForce(Force):
    """OpenSim ``SpringGeneralizedForce``: ``τ = −stiffness (q − rest_length) − viscosity q̇``
    on ``coordinate`` (N·m/rad or N/m; rad or m; N·m·s/rad or N·s/m)."""

    type: str = "SpringGeneralizedForce"
    opensim_type: ClassVar[str] = "SpringGeneralizedForce"
    coordinate: str | None = _txt()
    stiffness: float = _num(0.0)
    rest_length: float = _num(0.0)
    viscosity: float = _num(0.0)


@register_force
@dataclass(eq=False)
class BushingForce(Force):
    """OpenSim ``BushingForce``: linear rotational and translational springs and dampers on the
    deflection of ``frame2`` relative to ``frame1`` (socket paths): body-fixed X-Y-Z angles
    (rad) and the translation in frame1 (m); stiffness N·m/rad and N/m, damping N·m·s/rad and
    N·s/m (OpenSim ``BushingForce::computeForce`` with ``TwoFrameLinker``'s mapping to forces
    on the two frames)."""

    type: str = "BushingForce"
    opensim_type: ClassVar[str] = "BushingForce"
    frame1: str | None = field(default=None, metadata={"kind": "str", "xml": "socket_frame1"})
    frame2: str | None = field(default=None, metadata={"kind": "str", "xml": "socket_frame2"})
    rotational_stiffness: np.ndarray = _vec([0.0, 0.0, 0.0])
    translational_stiffness: np.ndarray = _vec([0.0, 0.0, 0.0])
    rotational_damping: np.ndarray = _vec([0.0, 0.0, 0.0])
    translational_damping: np.ndarray = _vec([0.0, 0.0, 0.0])


@register_force
@dataclass(eq=False)
class SmoothSphereHalfSpaceForce(Force):
    """OpenSim ``SmoothSphereHalfSpaceForce`` (Serrancolí et al. 2019; Simbody's smooth
    Hertz / Hunt–Crossley contact with Stribeck friction) between a ``ContactSphere`` and a
    ``ContactHalfSpace`` of the model's ContactGeometrySet (socket paths ``sphere`` and
    ``half_space``); OpenSim's defaults."""

    type: str = "SmoothSphereHalfSpaceForce"
    opensim_type: ClassVar[str] = "SmoothSphereHalfSpaceForce"
    sphere: str | None = field(default=None, metadata={"kind": "str", "xml": "socket_sphere"})
    half_space: str | None = field(default=None, metadata={"kind": "str", "xml": "socket_half_space"})
    stiffness: float = _num(1.0)
    dissipation: float = _num(0.0)
    static_friction: float = _num(0.0)
    dynamic_friction: float = _num(0.0)
    viscous_friction: float = _num(0.0)
    transition_velocity: float = _num(0.01)
    constant_contact_force: float = _num(1e-5)
    hertz_smoothing: float = _num(300.0)
    hunt_crossley_smoothing: float = _num(50.0)


@register_force
@dataclass(eq=False)
class ExpressionBasedPointToPointForce(Force):
    """OpenSim ``ExpressionBasedPointToPointForce``: a force of magnitude ``expression(d, ddot)``
    (N; d the distance between ``point1`` on ``body1`` and ``point2`` on ``body2``, m, ddot its
    rate) along the line between the points, a positive value pulling them together (as
    OpenSim 4.6 applies it); body names as OpenSim's ``body1``/``body2`` properties."""

    type: str = "ExpressionBasedPointToPointForce"
    opensim_type: ClassVar[str] = "ExpressionBasedPointToPointForce"
    body1: str | None = _txt()
    body2: str | None = _txt()
    point1: np.ndarray = _vec([0.0, 0.0, 0.0])
    point2: np.ndarray = _vec([0.0, 0.0, 0.0])
    expression: str = _txt("0.0")


@register_force
@dataclass(eq=False)
class ExpressionBasedCoordinateForce(Force):
    """OpenSim ``ExpressionBasedCoordinateForce``: generalized force ``expression(q, qdot)`` on
    ``coordinate`` (N·m or N), the expression in OpenSim's (Lepton's) grammar:
    :func:`arthron.models.expressions.lepton_expression` evaluates it."""

    type: str = "ExpressionBasedCoordinateForce"
    opensim_type: ClassVar[str] = "ExpressionBasedCoordinateForce"
    coordinate: str | None = _txt()
    expression: str = _txt("0.0")


@register_force
@dataclass(eq=False)
class CoordinateLimitForce(Force):
    """OpenSim ``CoordinateLimitForce``. As in OpenSim, limits and transition are in degrees and
    stiffnesses in N·m/deg (damping N·m·s/deg) for rotational coordinates; metres and N/m for
    translational ones."""

    type: str = "CoordinateLimitForce"
    opensim_type: ClassVar[str] = "CoordinateLimitForce"
    coordinate: str | None = _txt()
    upper_stiffness: float = _num(1.0)
    upper_limit: float = _num(0.0)
    lower_stiffness: float = _num(1.0)
    lower_limit: float = _num(0.0)
    damping: float = _num(0.001)
    transition: float = _num(0.1)


@register_force
@dataclass(eq=False)
class CoordinateActuator(Force):
    """OpenSim ``CoordinateActuator``: generalized force = control × ``optimal_force``."""

    type: str = "CoordinateActuator"
    opensim_type: ClassVar[str] = "CoordinateActuator"
    coordinate: str | None = _txt()
    optimal_force: float = _num(1.0)


@register_force
@dataclass(eq=False)
class ActivationCoordinateActuator(CoordinateActuator):
    """OpenSim ``ActivationCoordinateActuator``: generalized force = activation ×
    ``optimal_force``, the activation a state with first-order dynamics
    (``activation_time_constant``, s). Without states, OpenSim's tools evaluate it at
    ``default_activation`` (so OpenSim 4.6's InverseDynamicsTool applies
    ``default_activation × optimal_force`` unless actuators are excluded)."""

    type: str = "ActivationCoordinateActuator"
    opensim_type: ClassVar[str] = "ActivationCoordinateActuator"
    activation_time_constant: float = _num(0.01)
    default_activation: float = _num(0.5)


@register_force
@dataclass(eq=False)
class PointActuator(Force):
    """OpenSim ``PointActuator``: force ``control × optimal_force × direction`` (unit vector) at
    ``point`` on ``body`` (a body name); point and direction in the body frame unless
    ``point_is_global`` / ``force_is_global``."""

    type: str = "PointActuator"
    opensim_type: ClassVar[str] = "PointActuator"
    body: str | None = _txt()
    point: np.ndarray = _vec([0.0, 0.0, 0.0])
    point_is_global: bool = _flag(False)
    direction: np.ndarray = _vec([-1.0, 0.0, 0.0])
    force_is_global: bool = _flag(False)
    optimal_force: float = _num(1.0)


@register_force
@dataclass(eq=False)
class TorqueActuator(Force):
    """OpenSim ``TorqueActuator``: torque ``control × optimal_force × axis`` on ``bodyA`` and its
    opposite on ``bodyB`` (body names); axis in ground if ``torque_is_global``, else in bodyA."""

    type: str = "TorqueActuator"
    opensim_type: ClassVar[str] = "TorqueActuator"
    bodyA: str | None = _txt()
    bodyB: str | None = _txt()
    torque_is_global: bool = _flag(True)
    axis: np.ndarray = _vec([0.0, 0.0, 1.0])
    optimal_force: float = _num(1.0)
