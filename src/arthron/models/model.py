"""The internal musculoskeletal model: plain data, in OpenSim's vocabulary.

A :class:`Model` holds what arthron understands of an OpenSim model (bodies, frames, joints,
coordinates, constraints, markers, forces with their geometry paths, wrap objects) in SI units
and radians, as typed dataclasses (forces: :mod:`arthron.models.forces`; wrap objects:
:mod:`arthron.models.wrap_objects`). The file elements of components arthron does not model
at all (plugins, contact, controllers, probes) are kept in ``Model.verbatim``, and the
properties of modelled components that arthron does not use in their ``unmodelled_xml``
(serialized XML, read and written only by :mod:`arthron.io.osim`), so that
:func:`arthron.io.osim.write_osim` gives them back unchanged.

Frames are named by their absolute OpenSim component path: ``/ground``, ``/bodyset/femur_r``,
``/jointset/hip_r/pelvis_offset``, ``/bodyset/clavicle/cp_in_clavicle``. Every physical frame
resolves to a base body (or ground) and a fixed transform in it (:meth:`Model.frame_in_base`).

The model is data: solvers never mutate it (compile it with
:func:`arthron.multibody.kinematics.compile_model`).
"""
from __future__ import annotations

import copy
from dataclasses import field
from os import PathLike
from typing import Any

import numpy as np

from ..runtime import dataclass  # dataclasses.dataclass with shared __repr__/__eq__
from ..errors import ModelFileError, OptionError
from ..geometry.spatial import rotation_xyz  # noqa: F401  (OpenSim's X-Y-Z convention; re-exported)

GROUND = "/ground"


def body_path(name: str) -> str:
    """Absolute frame path of a body (``ground`` maps to ``/ground``)."""
    return GROUND if name == "ground" else f"/bodyset/{name}"


@dataclass
class Transform:
    """A rigid transform ``X_AB``: rotation ``R`` (3, 3) and translation ``p`` (3,) in metres.

    A point with coordinates ``x_B`` in B has coordinates ``R @ x_B + p`` in A.
    """

    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    p: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __matmul__(self, other: "Transform") -> "Transform":
        return Transform(self.R @ other.R, self.R @ other.p + self.p)

    def inverse(self) -> "Transform":
        return Transform(self.R.T, -self.R.T @ self.p)

    def apply(self, x) -> np.ndarray:
        return np.asarray(x, float) @ self.R.T + self.p


@dataclass
class OffsetFrame:
    """A PhysicalOffsetFrame: a fixed frame on a parent frame.

    Attributes
    ----------
    name : str
    path : str            absolute component path, e.g. ``/jointset/hip_r/pelvis_offset``
    parent : str          absolute path of the parent frame
    translation : (3,)    metres, in the parent frame
    orientation : (3,)    body-fixed X-Y-Z angles, radians
    owner : str           ``"joint:<name>"``, ``"body:<name>"`` or ``"model"`` (where it is written)
    unmodelled_xml : str, properties arthron does not use (io only)
    """

    name: str
    path: str
    parent: str
    translation: np.ndarray
    orientation: np.ndarray
    owner: str = "model"
    unmodelled_xml: str = field(default="", repr=False)

    def transform(self) -> Transform:
        return Transform(rotation_xyz(self.orientation), np.asarray(self.translation, float))


@dataclass
class Geometry:
    """Attached display geometry (Mesh or primitive): the mesh file name and scale factors (the
    rest, e.g. appearance, in ``unmodelled_xml``)."""

    name: str
    kind: str
    mesh_file: str | None = None
    scale_factors: np.ndarray = field(default_factory=lambda: np.ones(3))
    unmodelled_xml: str = field(default="", repr=False)


# Wrap objects are typed dataclasses of their own module (one per OpenSim class).
from .wrap_objects import WRAP_TYPES, UnmodelledWrapObject, WrapObject  # noqa: E402,F401


@dataclass
class Body:
    """A rigid body: mass (kg), mass center (3,) m in the body frame, inertia (3, 3) kg·m² about
    the mass center in the body frame.

    A body of mass 0 has no inertia in the dynamics, whatever ``inertia`` holds (kept as read,
    and written back): OpenSim's Simbody stores inertia per unit mass, which is zero for a
    massless body (e.g. MoBL-ARMS' ``thorax``, mass 0, inertia 1 1 1)."""

    name: str
    mass: float
    mass_center: np.ndarray
    inertia: np.ndarray
    geometry: list[Geometry] = field(default_factory=list)
    wrap_objects: list[WrapObject] = field(default_factory=list)
    unmodelled_xml: str = field(default="", repr=False)

    @property
    def path(self) -> str:
        return body_path(self.name)


@dataclass
class ContactGeometry:
    """An OpenSim ``ContactSphere`` or ``ContactHalfSpace``: on ``frame`` (a frame path), placed
    by ``location`` (3,) m and body-fixed X-Y-Z ``orientation`` (3,) rad; ``radius`` m for a
    sphere. A half-space is the solid region on the +x side of its placed frame's x axis (as
    Simbody's contact half-space)."""

    name: str
    kind: str
    frame: str
    location: np.ndarray
    orientation: np.ndarray
    radius: float = 0.0


@dataclass
class Coordinate:
    """A generalized coordinate (radians or metres).

    ``motion_type`` is ``"rotational"``, ``"translational"`` or ``"coupled"`` as OpenSim
    classifies it from the joint's transform axes.
    """

    name: str
    joint: str
    default_value: float = 0.0
    default_speed_value: float = 0.0
    range: tuple[float, float] = (-np.pi, np.pi)
    clamped: bool = False
    locked: bool = False
    prescribed: bool = False
    motion_type: str = "rotational"
    unmodelled_xml: str = field(default="", repr=False)


@dataclass
class TransformAxis:
    """One of a CustomJoint's six TransformAxis (rotation1..3, translation1..3).

    ``function`` maps the listed ``coordinates`` to an angle (rad) or a distance (m) along
    ``axis`` (unit vector in the joint's parent frame F for translations; for rotations, in the
    frame reached after the previous rotations: the sequence is body-fixed, as Simbody's
    FunctionBased mobilizer applies it).
    """

    name: str
    coordinates: list[str]
    axis: np.ndarray
    function: Any = None  # arthron.models.functions.Function or None (OpenSim default)


JOINT_TYPES = (
    "CustomJoint", "PinJoint", "WeldJoint", "BallJoint", "FreeJoint", "UniversalJoint",
    "SliderJoint", "PlanarJoint", "GimbalJoint", "EllipsoidJoint", "ScapulothoracicJoint",
)


@dataclass
class Joint:
    """A joint between a parent frame F and a child frame M (absolute frame paths).

    ``spatial_transform`` holds the six TransformAxis of a CustomJoint; for the other joint
    types arthron builds the equivalent axes (``PinJoint``: rotation about z; ``SliderJoint``:
    translation along x; ...) in :mod:`arthron.multibody.kinematics`. ``parameters`` holds the
    extra properties of EllipsoidJoint / ScapulothoracicJoint (radii, winging axis).
    """

    name: str
    type: str
    parent_frame: str
    child_frame: str
    coordinates: list[Coordinate] = field(default_factory=list)
    spatial_transform: list[TransformAxis] | None = None
    parameters: dict = field(default_factory=dict)
    unmodelled_xml: str = field(default="", repr=False)


@dataclass
class Marker:
    """A marker fixed to a frame: ``location`` (3,) m in that frame."""

    name: str
    parent_frame: str
    location: np.ndarray
    fixed: bool = False
    unmodelled_xml: str = field(default="", repr=False)


@dataclass
class PathPoint:
    """A path point on a frame.

    ``kind``: ``"PathPoint"``, ``"ConditionalPathPoint"`` (active when ``coordinate`` is within
    ``range``, radians or metres) or ``"MovingPathPoint"`` (``location_functions`` maps
    ``location_coordinates`` to x, y, z in metres; ``location`` holds the default).
    """

    name: str
    kind: str
    parent_frame: str
    location: np.ndarray
    coordinate: str | None = None
    range: tuple[float, float] | None = None
    location_functions: tuple | None = None
    location_coordinates: tuple | None = None
    unmodelled_xml: str = field(default="", repr=False)


@dataclass
class PathWrap:
    """A wrap object referenced by a path: ``method`` hybrid/midpoint/axial, ``range`` of path
    points (1-based, -1 = all)."""

    name: str
    wrap_object: str
    method: str = "hybrid"
    range: tuple[int, int] = (-1, -1)
    unmodelled_xml: str = field(default="", repr=False)


@dataclass
class GeometryPath:
    """A path force's GeometryPath: its points and wraps (``name``: the component's name,
    ``geometrypath`` by default; empty = unnamed)."""

    points: list[PathPoint] = field(default_factory=list)
    wraps: list[PathWrap] = field(default_factory=list)
    unmodelled_xml: str = field(default="", repr=False)
    name: str = "geometrypath"


@dataclass
class FunctionBasedPath:
    """An OpenSim 4.5+ ``FunctionBasedPath``: a path force's length as a function of
    coordinates instead of points (e.g. a polynomial fitted by OpenSim's PolynomialPathFitter).

    ``coordinates``: the coordinate names, in the order of the functions' arguments
    (the file's component paths are kept in ``coordinate_paths`` for writing); ``length_function``: the length
    (m) of the coordinate values; ``moment_arm_functions``: one function per coordinate giving
    its moment arm (empty: the moment arms are ``-∂length/∂q``); ``lengthening_speed_function``:
    the lengthening speed (m/s) of the coordinate values followed by their speeds (None:
    ``-Σ moment arm × q̇``). Functions are :mod:`arthron.models.functions` objects of one
    argument (one coordinate) or :class:`~arthron.models.multivariate.MultivariatePolynomialFunction`.
    The path has no points: ``points`` and ``wraps`` are empty, and nothing is drawn (OpenSim
    draws no geometry for it either).
    """

    coordinates: list = field(default_factory=list)
    coordinate_paths: list = field(default_factory=list)
    length_function: Any = None
    moment_arm_functions: list = field(default_factory=list)
    lengthening_speed_function: Any = None
    unmodelled_xml: str = field(default="", repr=False)
    name: str = "path"

    @property
    def points(self) -> tuple:
        """No path points (a function-based path has none)."""
        return ()

    @property
    def wraps(self) -> tuple:
        """No wraps."""
        return ()


# Force elements are typed dataclasses of their own module (one per OpenSim class).
from .forces import FORCE_TYPES, MUSCLE_TYPES, PATH_FORCE_TYPES, Force, UnmodelledForce  # noqa: E402,F401


@dataclass
class Constraint:
    """A kinematic constraint.

    ``type``: CoordinateCouplerConstraint (``properties``: ``independent_coordinates``,
    ``dependent_coordinate``, ``function``, ``scale_factor``), PointConstraint
    (``body1``/``body2`` frame paths, ``location_body_1``/``_2``), WeldConstraint,
    PointOnLineConstraint (``line_body``/``follower_body`` frame paths, ``line_direction_vec``
    and ``point_on_line`` in the line body, ``point_on_follower`` in the follower body: the
    follower point stays on the line, two equations), ...

    ``PointOnEllipsoidConstraint`` (arthron's own; OpenSim 4.6 has no such class): a point of
    one body stays on an ellipsoid fixed to another frame, one equation
    ``Φ = Σ_i ((p_i − c_i) / r_i)² − 1 = 0`` with p the point expressed in the ellipsoid's frame
    (the scapulothoracic constraints of Sarshari et al. 2021, Eq. 10: TS and AI on the ribcage
    ellipsoids). ``properties``:

    - ``socket_body``: frame path of the point's body, e.g. ``"/bodyset/scapula"``;
    - ``location``: (3,) m, the point in that frame;
    - ``socket_ellipsoid_frame``: frame path the ellipsoid is fixed to (a body, an offset frame
      or ``"/ground"``; default ``"/ground"``);
    - ``center``: (3,) m, the ellipsoid centre in that frame (default 0);
    - ``radii``: (3,) m, the semi-axes along the ellipsoid's own x, y, z (positive);
    - ``orientation``: (3,) rad, body-fixed X-Y-Z angles of the ellipsoid axes in that frame
      (default 0);
    - optional, used only by anthropometric scaling (Eq. 14,
      :func:`arthron.solvers.scaling.dilate_point_on_ellipsoid`): ``base_radii`` (3,) m, the
      base ellipsoid the radii are an isotropic dilation of, and ``reference_point`` (3,) m,
      the point's position in the ellipsoid's frame body at the pose the dilation was made.

    Its multiplier μ (N·m) applies ``μ g`` to the point (g = world gradient of Φ, 1/m). In an
    ``.osim`` file it is written to ``<arthron_PointOnEllipsoidConstraintSet>`` at model
    level, which OpenSim 4.6 ignores (:mod:`arthron.io.osim`).
    """

    name: str
    type: str
    properties: dict = field(default_factory=dict)
    enabled: bool = True
    unmodelled_xml: str = field(default="", repr=False)


@dataclass
class Model:
    """An OpenSim model as data. See the module docstring.

    Attributes
    ----------
    name : str
    gravity : (3,) m/s²
    bodies : dict name -> Body (ground excluded)
    frames : dict path -> OffsetFrame (PhysicalOffsetFrames anywhere in the model)
    joints : dict name -> Joint, in JointSet order
    constraints : list[Constraint]
    markers : dict name -> Marker
    forces : dict name -> Force, in ForceSet order
    force_groups : dict name -> tuple of force names, the ForceSet's ObjectGroups (OpenSim's
        ``forces_to_exclude`` names them; members that are not forces of the model are kept)
    contact_geometry : dict name -> ContactGeometry, the ContactSpheres and ContactHalfSpaces of
        the ContactGeometrySet (read for the contact forces; the set itself is written back
        verbatim)
    verbatim : list of (set_name, lxml element): components arthron does not model, written back
    source : str or None, the file read
    version : int, the ``OpenSimDocument Version`` read
    unmodelled_xml : dict location -> serialized XML arthron keeps but does not use (io only)
    """

    name: str = "model"
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, -9.80665, 0.0]))
    bodies: dict = field(default_factory=dict)
    frames: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)
    constraints: list = field(default_factory=list)
    markers: dict = field(default_factory=dict)
    forces: dict = field(default_factory=dict)
    force_groups: dict = field(default_factory=dict)
    ground_geometry: list = field(default_factory=list)
    ground_wrap_objects: list = field(default_factory=list)
    credits: str | None = None
    publications: str | None = None
    length_units: str = "meters"
    force_units: str = "N"
    contact_geometry: dict = field(default_factory=dict)
    verbatim: list = field(default_factory=list)
    source: str | None = None
    version: int = 40000
    unmodelled_xml: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ queries
    @property
    def coordinates(self) -> dict:
        """All coordinates by name, in JointSet order (OpenSim's CoordinateSet order)."""
        out = {}
        for j in self.joints.values():
            for c in j.coordinates:
                out[c.name] = c
        return out

    @property
    def muscles(self) -> dict:
        return {n: f for n, f in self.forces.items() if f.is_muscle}

    def copy(self) -> "Model":
        """A deep copy (functions, arrays and kept XML included)."""
        return copy.deepcopy(self)

    def frame_in_base(self, path: str) -> tuple[str, Transform]:
        """Resolve a frame path to its base body path and the fixed transform ``X_BF``.

        Raises
        ------
        ModelFileError if the path names no body, ground or offset frame of the model.
        """
        X = Transform()
        seen = set()
        p = path
        while True:
            if p == GROUND:
                return GROUND, X
            if p.startswith("/bodyset/") and p[len("/bodyset/"):] in self.bodies:
                return p, X
            fr = self.frames.get(p)
            if fr is None or p in seen:
                raise ModelFileError(f"frame '{path}' does not resolve to a body (stuck at '{p}')",
                                     self.source)
            seen.add(p)
            X = fr.transform() @ X
            p = fr.parent

    def total_mass(self) -> float:
        return float(sum(b.mass for b in self.bodies.values()))

    def summary(self) -> dict:
        """Counts used by ``arthron info``."""
        kinds: dict[str, int] = {}
        for j in self.joints.values():
            kinds[j.type] = kinds.get(j.type, 0) + 1
        fk: dict[str, int] = {}
        for f in self.forces.values():
            fk[f.type] = fk.get(f.type, 0) + 1
        return {
            "name": self.name,
            "bodies": len(self.bodies),
            "mass": self.total_mass(),
            "joints": kinds,
            "coordinates": len(self.coordinates),
            "constraints": [c.type for c in self.constraints],
            "markers": len(self.markers),
            "forces": fk,
            "muscles": len(self.muscles),
            "verbatim": [f"{s}: {e.tag} {e.get('name', '')}".strip() for s, e in self.verbatim
                         if not (e.tag.endswith("Set") and not len(e.findall("objects/*")))]
            + [f"ForceSet: {f.type} {f.name}" for f in self.forces.values() if not f.modelled],
        }


def require_model(model, what: str = "model") -> "Model":
    """``model`` when it is a :class:`Model`; else OptionError naming the argument and the
    reader to use (a path given where a solver takes a Model is the usual slip: the tools in
    :mod:`arthron.tools` take paths, the solvers take Models)."""
    if isinstance(model, Model):
        return model
    hint = ("read the file first: arthron.io.osim.read_osim(path), or use the tool of "
            "arthron.tools that takes paths" if isinstance(model, (str, PathLike)) else "")
    raise OptionError(f"{what} must be an arthron Model, got {type(model).__name__} {str(model)[:80]!r}"
                      + (f" ({hint})" if hint else ""))
