"""OpenSim model files (``.osim``): read into :class:`arthron.models.model.Model`, write 4.x.

Reading accepts the 4.x format (``Version="40000"``: sockets, PhysicalOffsetFrames owned by
joints) and the 3.x/2.x formats still found in real models (``<Joint>`` inside ``<Body>``,
``location_in_parent``/``orientation_in_parent``, ``<body>`` references, ``inertia_xx`` ...),
the way OpenSim 4.6 upgrades them in memory (the per-class version steps are in
:mod:`arthron.io.osim_upgrade`, applied to the document before it is read). Element names containing ``::`` (HuntCrossleyForce
contact parameters in several OpenSim example models) do not break parsing: libxml2 rejects them as QNames, so the file is re-read in recovery mode and
accepted only when every error is of that kind (``arthron.io.setup.parse_xml``).

Force elements and wrap objects go through a type -> (read, write) registry (``READERS``,
``WRITERS``; :func:`register`): each class arthron models (:mod:`arthron.models.forces`,
:mod:`arthron.models.wrap_objects`) is read into its dataclass fields and written from them, so
a model built in Python is written like one read from a file. Properties of a modelled
component that arthron does not use (appearance, control bounds, activation time constants
...) are kept as serialized XML in its ``unmodelled_xml`` and written back; only this module
reads or writes that field. Components arthron does not model at all (contact geometry and
forces, plugin classes such as ``Smith2018ArticularContactForce``, controllers, probes,
model-level components) are kept as their XML (``Model.verbatim``, ``UnmodelledForce.raw``)
and written back verbatim; they never make reading fail.

Writing always produces a ``Version="40000"`` document that OpenSim 4.6 loads and that means the
same as the input (same bodies, frames, joints, coordinates, constraints, markers, forces).
"""
from __future__ import annotations

import copy
import dataclasses
import math
import posixpath
import warnings
from pathlib import Path

import numpy as np
from lxml import etree

from ..errors import ArthronWarning, DataFileError, ModelFileError, UnsupportedFeature
from ..models import functions as fn
from .files import atomic_write, check_output
from .osim_functions import (function_property_names, function_to_xml, read_function_property,
                             wrap_inline_function_properties)
from .osim_upgrade import reversed_joint, set_objects as _objects, upgrade_model_element
from .setup import parse_xml
from ..models.forces import FORCE_TYPES, UnmodelledForce
from ..models.wrap_objects import WRAP_TYPES, UnmodelledWrapObject
from ..models.model import (
    GROUND, JOINT_TYPES, Body, Constraint, ContactGeometry, Coordinate, Geometry,
    GeometryPath, Joint, Marker, Model, OffsetFrame, PathPoint, PathWrap, TransformAxis,
    body_path,
)

__all__ = ["read_osim", "write_osim", "write_osims", "model_to_xml", "read_force_set", "READERS", "WRITERS"]

MODELLED_CONSTRAINTS = ("CoordinateCouplerConstraint", "PointConstraint", "WeldConstraint",
                        "PointOnLineConstraint", "ConstantDistanceConstraint")
PATH_POINT_TYPES = ("PathPoint", "ConditionalPathPoint", "MovingPathPoint")
# Muscle/ligament scalar properties arthron reads (and writes back when changed).
FORCE_SCALARS = (
    "max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
    "pennation_angle_at_optimal", "max_contraction_velocity", "optimal_force",
    "resting_length", "pcsa_force", "linear_stiffness", "slack_length", "transition_strain",
    "damping", "stiffness", "dissipation", "min_control", "max_control",
    "minimum_activation", "activation_time_constant", "deactivation_time_constant",
)


# ----------------------------------------------------------------------------- helpers
class _Ctx:
    def __init__(self, path):
        self.path = str(path) if path is not None else None

    def err(self, msg, elem=None):
        where = None
        if elem is not None:
            name = elem.get("name")
            where = f"line {elem.sourceline}: <{elem.tag}{' name=' + repr(name) if name else ''}>"
        return ModelFileError(msg, self.path, where)

    def floats(self, elem, n=None, tag=None, parent=None, finite=True):
        """The numbers of ``elem``'s text (``n`` of them when given), finite unless told
        otherwise; a missing element (None) is an error naming ``parent``."""
        if elem is None:
            raise self.err(f"missing <{tag}>", parent)
        txt = elem.text
        try:
            nums = list(map(float, txt.split())) if txt else []
        except ValueError:
            raise self.err(f"<{tag or elem.tag}> holds non-numeric text {elem.text!r}", elem) from None
        if n is not None and len(nums) != n:
            raise self.err(f"<{tag or elem.tag}> needs {n} number{'s' if n > 1 else ''}, has "
                           f"{len(nums)}", elem)
        if finite and not all(map(math.isfinite, nums)):
            raise self.err(f"<{tag or elem.tag}> holds a non-finite value {elem.text.strip()!r}", elem)
        return np.array(nums)

    def num(self, parent, tag, default, finite=True):
        """One number from the child ``<tag>`` of ``parent`` (``default`` when absent or empty)."""
        c = _child(parent, tag)
        if c is None or c.text is None or not c.text.strip():
            return float(default)
        return float(self.floats(c, 1, finite=finite)[0])


def _child(elem, tag):
    """The first child element named ``tag`` (``elem.find(tag)``; a plain name is looked up with
    lxml's C-level ``iterchildren``, twice as fast as ``find``, which parses a path)."""
    if elem is None:
        return None
    plain = _PLAIN_TAG.get(tag)
    if plain is None:
        plain = _PLAIN_TAG[tag] = not ("/" in tag or "[" in tag or "*" in tag or tag.startswith("."))
    if not plain:
        return elem.find(tag)
    return next(elem.iterchildren(tag), None)


#: tag -> whether it is a plain child name (not an ElementPath), memoized for :func:`_child`
_PLAIN_TAG: dict = {}


def _text(elem, tag, default=None):
    c = _child(elem, tag)
    if c is None or c.text is None:
        return default
    return c.text.strip()


def _bool(elem, tag, default=False):
    t = _text(elem, tag)
    if t is None:
        return default
    return t.lower() in ("true", "1", "yes")


def _strip_comments(elem):
    for c in elem.iter(etree.Comment):
        parent = c.getparent()
        if parent is not None:
            parent.remove(c)
    return elem


# Children of a joint and of a GeometryPath that the writer makes from the fields (the
# display properties of 3.x paths are dropped).
_JOINT_WRITTEN = ("socket_parent_frame", "socket_child_frame", "coordinates", "frames",
                  "SpatialTransform", "thoracic_ellipsoid_radii_x_y_z", "radii_x_y_z",
                  "scapula_winging_axis_origin", "scapula_winging_axis_direction", "reverse")
_CONSTRAINT_WRITTEN = (
    "isEnforced", "isDisabled", "frames", "independent_coordinate_names",
    "dependent_coordinate_name", "coupled_coordinates_function", "scale_factor", "socket_body_1",
    "socket_body_2", "socket_frame1", "socket_frame2", "body_1", "body_2", "location_body_1",
    "location_body_2", "line_direction_vec", "point_on_line", "point_on_follower",
    "constant_distance")
_PATH_WRITTEN = ("PathPointSet", "PathWrapSet", "VisibleObject", "display_preference",
                 "default_color")


def _rest(elem, written) -> str:
    """The children of ``elem`` other than ``written``, serialized (a component's
    ``unmodelled_xml``)."""
    return _unmodelled_to_text([c for c in elem if isinstance(c.tag, str) and c.tag not in written])


def _element(tag, name, unmodelled_xml):
    """A new element ``<tag name=...>`` holding the unmodelled children (an empty ``name`` is
    left out)."""
    e = etree.Element(tag, name=name) if name else etree.Element(tag)
    for c in _unmodelled_from_text(unmodelled_xml):
        e.append(c)
    return e


def _norm(path: str) -> str:
    p = posixpath.normpath(path)
    return p if p.startswith("/") else "/" + p


# ----------------------------------------------------------------------------- reading
def read_osim(path) -> Model:
    """Read an OpenSim model file.

    Parameters
    ----------
    path : str or os.PathLike
        ``.osim`` file (4.x, 3.x or 2.x format).

    Returns
    -------
    Model
        SI units, radians; frame references as absolute component paths.

    Raises
    ------
    ModelFileError
        Malformed XML (with the line), no ``<Model>``, a socket or body reference that does not
        resolve, an unknown joint type, a joint whose child already has a parent (closed loop
        through joints).
    UnsupportedFeature
        Model features arthron cannot represent faithfully (reversed 3.x joints whose inverse
        transform is not a joint transform, see :func:`arthron.io.osim_upgrade.reversed_joint`;
        TransformAxis functions of several coordinates).

    Pre-4.0 files are first upgraded class by class as OpenSim 4.6 upgrades them in memory
    (:mod:`arthron.io.osim_upgrade`): names made valid (one ArthronWarning lists the renames),
    muscle control bounds, socket paths of constraints and of the forces kept verbatim,
    display and contact geometry, controllers.
    """
    ctx = _Ctx(path)
    try:
        # lxml, tolerant of OpenSim's '::' element names only (see io.setup.parse_xml)
        root = parse_xml(path)
    except DataFileError as e:
        raise ModelFileError(e.message, path, e.where) from None
    wrap_inline_function_properties(root, _FUNCTION_PROPS)
    version = _version(root, path)
    melem = root if root.tag == "Model" else root.find("Model")
    if melem is None:
        raise ModelFileError("no <Model> element", path)
    if version >= 40000:
        model = _read_v4(melem, ctx)
    else:
        model = _read_v3(melem, ctx, version)
    model.version = version
    model.source = str(path)
    _check_tree(model, ctx)
    return model


def _version(root, path) -> int:
    """The ``Version`` attribute of an ``<OpenSimDocument>`` (0 for a bare ``<Model>``)."""
    if root.tag != "OpenSimDocument":
        return 0
    v = (root.get("Version") or "0").strip() or "0"
    if not v.isdigit():
        raise ModelFileError(f"OpenSimDocument Version {v!r} is not an integer (OpenSim writes "
                             "e.g. Version=\"40000\")", path, f"line {root.sourceline}")
    return int(v)


def _read_common(melem, model: Model, ctx: _Ctx):
    model.name = melem.get("name", "model")
    g = _child(melem, "gravity")
    if g is not None:
        model.gravity = ctx.floats(g, 3)
    model.credits = _text(melem, "credits")
    model.publications = _text(melem, "publications")
    model.length_units = _text(melem, "length_units", "meters")
    model.force_units = _text(melem, "force_units", "N")


def _read_inertia_v4(belem, ctx):
    m = ctx.num(belem, "mass", 0)
    if m < 0 or m > _MAX_MASS:
        raise ctx.err(f"impossible mass {m} kg", _child(belem, "mass"))
    if m > _WARN_MASS:
        warnings.warn(f"{ctx.path}: line {_child(belem, 'mass').sourceline}: body "
                      f"'{belem.get('name')}' has a mass of {m:g} kg", ArthronWarning)
    com = ctx.floats(_child(belem, "mass_center"), 3) if _child(belem, "mass_center") is not None else np.zeros(3)
    ie = _child(belem, "inertia")
    if ie is not None:
        v = ctx.floats(ie, 6)
    else:
        v = np.array([ctx.num(belem, t, 0) for t in
                      ("inertia_xx", "inertia_yy", "inertia_zz", "inertia_xy", "inertia_xz", "inertia_yz")])
    if np.any(np.abs(v) > _MAX_MASS):
        raise ctx.err(f"impossible inertia {' '.join(f'{x:g}' for x in v)} kg m^2",
                      ie if ie is not None else belem)
    return m, com, _inertia_matrix(v)


# Above these a body mass (kg) or moment of inertia (kg m^2) is not a body but a unit or typing
# error: refused (their products overflow), warned.
_MAX_MASS, _WARN_MASS = 1e9, 1e4


def _inertia_matrix(v):
    xx, yy, zz, xy, xz, yz = v
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=float)


def _read_wraps(body_name, belem, ctx):
    out = []
    ws = _child(belem, "WrapObjectSet")
    for w in _objects(ws):
        reader = READERS.get(w.tag)
        if reader is None or w.tag not in WRAP_TYPES:
            warnings.warn(f"{ctx.path}: wrap object type {w.tag} kept verbatim", ArthronWarning)
            o = UnmodelledWrapObject(name=w.get("name", ""), type=w.tag, body=body_name,
                                     raw=_strip_comments(copy.deepcopy(w)))
        else:
            o = reader(w, ctx)
            o.body = body_name
        if not o.quadrant:
            o.quadrant = "all"
        out.append(o)
    return out


def _read_geometry_v4(felem, ctx):
    out = []
    ag = _child(felem, "attached_geometry")
    if ag is None:
        return out
    for g in ag:
        if not isinstance(g.tag, str):
            continue
        sf = _text(g, "scale_factors")
        out.append(Geometry(name=g.get("name", ""), kind=g.tag, mesh_file=_text(g, "mesh_file"),
                            scale_factors=ctx.floats(_child(g, "scale_factors"), 3) if sf else np.ones(3),
                            unmodelled_xml=_rest(g, ("scale_factors", "mesh_file"))))
    return out


def _resolve(ref: str | None, owner: str, model_frames: set, ctx, elem, what="frame"):
    """Resolve a socket path relative to its owner component path, as OpenSim does."""
    if ref is None or ref == "":
        raise ctx.err(f"missing {what} reference", elem)
    if ref.startswith("/"):
        cand = _norm(ref)
    else:
        cand = _norm(posixpath.join(owner, ref))
    if cand in model_frames:
        return cand
    # OpenSim also finds a connectee relative to the owner's ancestors, then by unique name.
    parts = owner.strip("/").split("/")
    for k in range(len(parts), -1, -1):
        c2 = _norm("/".join(parts[:k]) + "/" + ref)
        if c2 in model_frames:
            return c2
    base = ref.rstrip("/").split("/")[-1]
    hits = [f for f in model_frames if f.rsplit("/", 1)[-1] == base]
    if len(hits) == 1:
        return hits[0]
    if base == "ground":
        return GROUND
    raise ctx.err(f"{what} '{ref}' does not exist in the model", elem)


def _read_offset_frame(fe, owner_path, owner_tag, ctx):
    tr = _child(fe, "translation")
    ori = _child(fe, "orientation")
    return OffsetFrame(
        name=fe.get("name", ""), path=f"{owner_path}/{fe.get('name', '')}" if owner_path != "/" else f"/{fe.get('name', '')}",
        parent=_text(fe, "socket_parent", ".."),
        translation=ctx.floats(tr, 3) if tr is not None else np.zeros(3),
        orientation=ctx.floats(ori, 3) if ori is not None else np.zeros(3),
        owner=owner_tag, unmodelled_xml=_rest(fe, ("socket_parent", "translation", "orientation")))


def _read_coordinate(ce, joint_name, ctx):
    rng = _child(ce, "range")
    r = tuple(ctx.floats(rng, 2)) if rng is not None else (-np.pi, np.pi)
    return Coordinate(
        name=ce.get("name", ""), joint=joint_name,
        default_value=ctx.num(ce, "default_value", 0),
        default_speed_value=ctx.num(ce, "default_speed_value", 0),
        range=r, clamped=_bool(ce, "clamped", False), locked=_bool(ce, "locked", False),
        prescribed=_bool(ce, "prescribed", False),
        motion_type=(_text(ce, "motion_type", "") or "").lower() or "rotational",
        unmodelled_xml=_unmodelled_to_text(ce.findall("prescribed_function")))


def _read_spatial_transform(je, ctx):
    st = _child(je, "SpatialTransform")
    if st is None:
        return None
    axes = []
    for ta in st.findall("TransformAxis"):
        coords = (_text(ta, "coordinates", "") or "").split()
        ax = ctx.floats(_child(ta, "axis"), 3) if _child(ta, "axis") is not None else None
        try:
            f = read_function_property(ta, ctx.path)
        except ModelFileError:
            raise
        axes.append(TransformAxis(name=ta.get("name", ""), coordinates=coords, axis=ax, function=f))
    order = ["rotation1", "rotation2", "rotation3", "translation1", "translation2", "translation3"]
    by = {a.name: a for a in axes}
    default_axes = {"rotation1": (1, 0, 0), "rotation2": (0, 1, 0), "rotation3": (0, 0, 1),
                    "translation1": (1, 0, 0), "translation2": (0, 1, 0), "translation3": (0, 0, 1)}
    out = []
    for n in order:
        a = by.get(n)
        if a is None:
            a = TransformAxis(n, [], np.array(default_axes[n], float), None)
        if a.axis is None:
            a.axis = np.array(default_axes[n], float)
        if len(a.coordinates) > 1:
            raise UnsupportedFeature(
                f"TransformAxis '{n}' of joint '{je.get('name')}' depends on {len(a.coordinates)} "
                "coordinates; arthron supports one coordinate per axis", ctx.path, f"line {ta.sourceline}")
        out.append(a)
    return out


def _joint_params(je, ctx):
    p = {}
    for t in ("thoracic_ellipsoid_radii_x_y_z", "radii_x_y_z"):
        if _child(je, t) is not None:
            p[t] = ctx.floats(_child(je, t), 3)
    if _child(je, "scapula_winging_axis_origin") is not None:
        p["scapula_winging_axis_origin"] = ctx.floats(_child(je, "scapula_winging_axis_origin"), 2)
    if _child(je, "scapula_winging_axis_direction") is not None:
        p["scapula_winging_axis_direction"] = ctx.num(je, "scapula_winging_axis_direction", 0)
    return p


def _read_v4(melem, ctx: _Ctx) -> Model:
    model = Model()
    groups = melem.find("ForceSet/groups")
    if groups is not None:
        model.unmodelled_xml["ForceSet/groups"] = _unmodelled_to_text([groups])
    _read_common(melem, model, ctx)
    frames: dict[str, OffsetFrame] = {}
    ground = _child(melem, "Ground")
    if ground is not None:
        model.ground_geometry = _read_geometry_v4(ground, ctx)
        model.ground_wrap_objects = _read_wraps("ground", ground, ctx)
        for comp in _child(ground, "components") if _child(ground, "components") is not None else []:
            if comp.tag == "PhysicalOffsetFrame":
                f = _read_offset_frame(comp, GROUND, "ground", ctx)
                frames[f.path] = f
    # Bodies and their offset frames.
    for be in _objects(_child(melem, "BodySet")):
        if be.tag != "Body":
            raise ctx.err(f"unknown body type <{be.tag}>", be)
        m, com, I = _read_inertia_v4(be, ctx)
        b = Body(name=be.get("name", ""), mass=m, mass_center=com, inertia=I,
                 geometry=_read_geometry_v4(be, ctx))
        b.wrap_objects = _read_wraps(b.name, be, ctx)
        if b.name in model.bodies:
            raise ctx.err(f"duplicate body '{b.name}'", be)
        model.bodies[b.name] = b
        comps = _child(be, "components")
        for comp in comps if comps is not None else []:
            if comp.tag == "PhysicalOffsetFrame":
                f = _read_offset_frame(comp, b.path, f"body:{b.name}", ctx)
                frames[f.path] = f
            elif isinstance(comp.tag, str):
                model.verbatim.append((f"body:{b.name}", comp))
    # Model-level components.
    comps = _child(melem, "components")
    for comp in comps if comps is not None else []:
        if not isinstance(comp.tag, str):
            continue
        if comp.tag == "PhysicalOffsetFrame":
            f = _read_offset_frame(comp, "", "model", ctx)
            f.path = "/" + f.name
            frames[f.path] = f
        else:
            model.verbatim.append(("components", comp))
    # Joints (frames first, so sockets resolve).
    jelems = _objects(_child(melem, "JointSet"))
    for je in jelems:
        jpath = f"/jointset/{je.get('name', '')}"
        fr = _child(je, "frames")
        for fe in fr if fr is not None else []:
            if fe.tag == "PhysicalOffsetFrame":
                f = _read_offset_frame(fe, jpath, f"joint:{je.get('name')}", ctx)
                frames[f.path] = f
    # Offset frames owned by constraints (4.x WeldConstraint keeps its frames like a joint).
    for ce in _objects(_child(melem, "ConstraintSet")):
        fr = _child(ce, "frames")
        for fe in fr if fr is not None else []:
            if fe.tag == "PhysicalOffsetFrame":
                f = _read_offset_frame(fe, f"/constraintset/{ce.get('name', '')}",
                                       f"constraint:{ce.get('name')}", ctx)
                frames[f.path] = f
    all_frames = set(frames) | {GROUND} | {b.path for b in model.bodies.values()}
    for f in frames.values():
        f.parent = _resolve(f.parent, f.path, all_frames, ctx, None)
    model.frames = frames
    for je in jelems:
        if je.tag not in JOINT_TYPES:
            raise ctx.err(f"unknown joint type <{je.tag}>", je)
        name = je.get("name", "")
        jpath = f"/jointset/{name}"
        pf = _resolve(_text(je, "socket_parent_frame"), jpath, all_frames, ctx, je, "parent frame")
        cf = _resolve(_text(je, "socket_child_frame"), jpath, all_frames, ctx, je, "child frame")
        coords = [_read_coordinate(c, name, ctx) for c in (_child(je, "coordinates") if _child(je, "coordinates") is not None else [])
                  if c.tag == "Coordinate"]
        j = Joint(name=name, type=je.tag, parent_frame=pf, child_frame=cf, coordinates=coords,
                  spatial_transform=_read_spatial_transform(je, ctx) if je.tag == "CustomJoint" else None,
                  parameters=_joint_params(je, ctx), unmodelled_xml=_rest(je, _JOINT_WRITTEN))
        model.joints[name] = j
    _classify_coordinates(model)
    # Constraints.
    for ce in _objects(_child(melem, "ConstraintSet")):
        model.constraints.append(_read_constraint(ce, all_frames, ctx, v4=True))
    for ce in _objects(_child(melem, ELLIPSOID_CONSTRAINT_SET)):
        if ce.tag == ELLIPSOID_CONSTRAINT:
            model.constraints.append(_read_ellipsoid_constraint(ce, all_frames, ctx))
    # Markers.
    for me in _objects(_child(melem, "MarkerSet")):
        loc = _child(me, "location")
        model.markers[me.get("name", "")] = Marker(
            name=me.get("name", ""),
            parent_frame=_resolve(_text(me, "socket_parent_frame"), f"/markerset/{me.get('name')}", all_frames, ctx, me),
            location=ctx.floats(loc, 3) if loc is not None else np.zeros(3),
            fixed=_bool(me, "fixed"),
            unmodelled_xml=_rest(me, ("socket_parent_frame", "location", "fixed")))
    # Forces.
    for fe in _objects(_child(melem, "ForceSet")):
        f = _read_force(fe, all_frames, model, ctx, v4=True)
        model.forces[f.name] = f
    model.contact_geometry = _read_contact_geometry(melem, all_frames, ctx)
    # Everything else at the model level is kept verbatim.
    known = {"credits", "publications", "length_units", "force_units", "gravity", "Ground",
             "BodySet", "JointSet", "ConstraintSet", "MarkerSet", "ForceSet", "components",
             ELLIPSOID_CONSTRAINT_SET}
    for c in melem:
        if isinstance(c.tag, str) and c.tag not in known:
            model.verbatim.append(("model", c))
    return model


def _read_contact_geometry(melem, all_frames, ctx) -> dict:
    """The ContactSpheres and ContactHalfSpaces of a 4.x ContactGeometrySet (the set is also
    kept verbatim and written back as it was)."""
    out = {}
    for ge in _objects(_child(melem, "ContactGeometrySet")):
        if ge.tag not in ("ContactSphere", "ContactHalfSpace"):
            continue
        name = ge.get("name", "")
        out[name] = ContactGeometry(
            name=name, kind=ge.tag,
            frame=_resolve(_text(ge, "socket_frame") or body_path(_text(ge, "body_name", "ground")),
                           f"/contactgeometryset/{name}", all_frames, ctx, ge),
            location=ctx.floats(_child(ge, "location"), 3) if _child(ge, "location") is not None
            else np.zeros(3),
            orientation=ctx.floats(_child(ge, "orientation"), 3)
            if _child(ge, "orientation") is not None else np.zeros(3),
            radius=ctx.num(ge, "radius", 0.0))
    return out


def _read_constraint(ce, all_frames, ctx, v4=True):
    props = {}
    t = ce.tag
    enabled = _bool(ce, "isEnforced", True) and not _bool(ce, "isDisabled", False)
    cpath = f"/constraintset/{ce.get('name', '')}"
    if t == "CoordinateCouplerConstraint":
        props["independent_coordinates"] = (_text(ce, "independent_coordinate_names", "") or "").split()
        props["dependent_coordinate"] = _text(ce, "dependent_coordinate_name")
        fe = _child(ce, "coupled_coordinates_function")
        props["function"] = read_function_property(fe, ctx.path) if fe is not None else None
        props["scale_factor"] = ctx.num(ce, "scale_factor", 1)
    elif t in ("PointConstraint", "WeldConstraint", "PointOnLineConstraint", "ConstantDistanceConstraint"):
        for k in ("1", "2"):
            ref = _text(ce, f"socket_body_{k}") if v4 else _text(ce, f"body_{k}")
            if ref is None:
                ref = _text(ce, f"socket_frame{k}") or _text(ce, f"body_{k}")
            if ref is not None:
                if not v4:
                    ref = body_path(ref)
                props[f"body_{k}"] = _resolve(ref, cpath, all_frames, ctx, ce, f"body_{k}")
        for tag in ("location_body_1", "location_body_2", "line_direction_vec", "point_on_line",
                    "point_on_follower", "location_body_1", "constant_distance"):
            if _child(ce, tag) is not None:
                vals = ctx.floats(_child(ce, tag), 1 if tag == "constant_distance" else 3)
                props[tag] = vals if vals.size > 1 else float(vals[0])
    return Constraint(name=ce.get("name", ""), type=t, properties=props, enabled=enabled,
                      unmodelled_xml=_rest(ce, _CONSTRAINT_WRITTEN) if v4 else "")


def _read_path(pe, owner, all_frames, model, ctx, v4=True):
    path = GeometryPath(unmodelled_xml=_rest(pe, _PATH_WRITTEN), name=pe.get("name", ""))
    pset = _child(pe, "PathPointSet")
    for pp in _objects(pset):
        if pp.tag not in PATH_POINT_TYPES:
            raise UnsupportedFeature(f"path point type <{pp.tag}> in '{owner}'", ctx.path,
                                     f"line {pp.sourceline}")
        if v4:
            frame = _resolve(_text(pp, "socket_parent_frame"), owner, all_frames, ctx, pp)
        else:
            bn = _text(pp, "body")
            if bn is None:
                raise ctx.err(f"path point of '{owner}' names no body", pp)
            frame = _resolve(body_path(bn), owner, all_frames, ctx, pp)
        loc = _child(pp, "location")
        p = PathPoint(name=pp.get("name", ""), kind=pp.tag, parent_frame=frame,
                      location=ctx.floats(loc, 3) if loc is not None else np.zeros(3))
        if pp.tag == "ConditionalPathPoint":
            cref = _text(pp, "socket_coordinate") if v4 else _text(pp, "coordinate")
            if cref is None:
                raise ctx.err(f"ConditionalPathPoint of '{owner}' names no coordinate", pp)
            p.coordinate = cref.rstrip("/").split("/")[-1]
            p.range = tuple(ctx.floats(_child(pp, "range"), 2, "range", pp))
        elif pp.tag == "MovingPathPoint":
            funcs, crds = [], []
            for ax in "xyz":
                funcs.append(read_function_property(_child(pp, f"{ax}_location"), ctx.path))
                cref = _text(pp, f"socket_{ax}_coordinate") if v4 else _text(pp, f"{ax}_coordinate")
                crds.append(cref.rstrip("/").split("/")[-1] if cref else None)
            p.location_functions = tuple(funcs)
            p.location_coordinates = tuple(crds)
        path.points.append(p)
    wset = _child(pe, "PathWrapSet")
    for w in _objects(wset):
        rng = _child(w, "range")
        rv = (-1, -1)
        if rng is not None and rng.text and rng.text.strip():
            rv = ctx.floats(rng, 2)
            if np.any(rv != np.round(rv)) or np.any(np.abs(rv) > 1e9):
                raise ctx.err(f"<range> of a PathWrap needs two integer path point indices, has "
                              f"{rng.text.strip()!r}", rng)
            rv = tuple(int(x) for x in rv)
        path.wraps.append(PathWrap(
            name=w.get("name", ""), wrap_object=_text(w, "wrap_object", ""),
            method=_text(w, "method", "hybrid") or "hybrid", range=rv,
            unmodelled_xml=_rest(w, ("wrap_object", "method", "range")) if v4 else ""))
    return path


def _read_force(fe, all_frames, model, ctx, v4=True):
    """A ForceSet element: the registered reader of its class, else an UnmodelledForce."""
    name = fe.get("name", "")
    pe = _child(fe, "GeometryPath")
    path = _read_path(pe, f"/forceset/{name}", all_frames, model, ctx, v4=v4) if pe is not None else None
    applies = _bool(fe, "appliesForce", True) and not _bool(fe, "isDisabled", False)
    reader = READERS.get(fe.tag)
    if reader is None:
        extra = {}
        for t in FORCE_SCALARS:
            v = _text(fe, t)
            if v is not None:
                try:
                    extra[t] = float(v)
                except ValueError:
                    pass
        if fe.tag in ("HuntCrossleyForce", "ElasticFoundationForce"):
            # their parameters, for the dynamics (the element is kept verbatim)
            ps = [c for c in fe if isinstance(c.tag, str) and c.tag.endswith("ContactParametersSet")]
            extra["contact_parameters"] = _read_contact_parameters(ps[0], ctx) if ps else []
            extra["transition_velocity"] = ctx.num(fe, "transition_velocity", 0.01)
        return UnmodelledForce(name=name, type=fe.tag, path=path, applies_force=applies, raw=fe,
                               extra=extra)
    f = reader(fe, ctx)
    f.path = path
    f.applies_force = applies
    return f


def _classify_coordinates(model: Model):
    """Motion type of each coordinate as OpenSim derives it from the joint."""
    for j in model.joints.values():
        if j.type == "CustomJoint" and j.spatial_transform is not None:
            for c in j.coordinates:
                # As OpenSim 4.6 classifies them: a coordinate that drives a rotation axis
                # through a LinearFunction is Rotational (the slope may be -1, as in
                # Lenhart2015's left knee), else one driving a translation axis through a
                # LinearFunction is Translational, anything else is Coupled.
                c.motion_type = "coupled"
                for kind, axes in (("rotational", j.spatial_transform[:3]),
                                   ("translational", j.spatial_transform[3:])):
                    if any(c.name in a.coordinates and (a.function is None or isinstance(a.function, fn.LinearFunction))
                           for a in axes):
                        c.motion_type = kind
                        break
        elif j.type in ("SliderJoint",):
            for c in j.coordinates:
                c.motion_type = "translational"
        elif j.type == "PlanarJoint":
            for k, c in enumerate(j.coordinates):
                c.motion_type = "rotational" if k == 0 else "translational"
        elif j.type == "FreeJoint":
            for k, c in enumerate(j.coordinates):
                c.motion_type = "rotational" if k < 3 else "translational"
        else:
            for c in j.coordinates:
                c.motion_type = "rotational"


def _check_tree(model: Model, ctx: _Ctx):
    """Each body must be the child of exactly one joint (no loops through joints)."""
    child_of = {}
    for j in model.joints.values():
        cb, _ = model.frame_in_base(j.child_frame)
        pb, _ = model.frame_in_base(j.parent_frame)
        if cb == GROUND:
            raise UnsupportedFeature(f"joint '{j.name}' has ground as its child frame (reversed joint)",
                                     ctx.path, f"joint '{j.name}'")
        if cb in child_of:
            raise ModelFileError(f"body '{cb}' is the child of joints '{child_of[cb]}' and '{j.name}'",
                                 ctx.path, f"joint '{j.name}'")
        child_of[cb] = j.name
    for b in model.bodies.values():
        if b.path not in child_of:
            warnings.warn(f"{ctx.path}: body '{b.name}' has no joint; it is not connected", ArthronWarning)


# ----------------------------------------------------------------------------- 3.x reading
def _read_v3(melem, ctx: _Ctx, version: int = 0) -> Model:
    # OpenSim's in-memory upgrade of each class (names, muscles, sockets of constraints and
    # verbatim forces, contact geometry), then the 3.x structure (bodies own joints).
    upgrade_model_element(melem, version, ctx.path)
    model = Model()
    _read_common(melem, model, ctx)
    frames: dict[str, OffsetFrame] = {}
    bodies = _objects(_child(melem, "BodySet"))
    joints_raw = []
    for be in bodies:
        name = be.get("name", "")
        m, com, I = _read_inertia_v4(be, ctx)
        geoms, gframes = _read_v3_geometry(name, _child(be, "VisibleObject"), ctx)
        for f in gframes:
            frames[f.path] = f
        if name == "ground":
            model.ground_geometry = geoms
            model.ground_wrap_objects = _read_wraps("ground", be, ctx)
            continue
        b = Body(name=name, mass=m, mass_center=com, inertia=I, geometry=geoms)
        b.wrap_objects = _read_wraps(name, be, ctx)
        model.bodies[name] = b
        jel = _child(be, "Joint")
        if jel is not None:
            for je in jel:
                if isinstance(je.tag, str):
                    joints_raw.append((name, je))
    all_frames = {GROUND} | {b.path for b in model.bodies.values()}
    for child_name, je in joints_raw:
        if je.tag not in JOINT_TYPES:
            raise ctx.err(f"unknown joint type <{je.tag}>", je)
        jname = je.get("name", "")
        parent = _text(je, "parent_body", "ground")
        ppath = body_path(parent)
        if ppath not in all_frames:
            raise ctx.err(f"parent body '{parent}' does not exist", je)
        jpath = f"/jointset/{jname}"
        lp = _child(je, "location_in_parent")
        op = _child(je, "orientation_in_parent")
        lc = _child(je, "location")
        oc = _child(je, "orientation")
        pf = OffsetFrame(f"{parent}_offset", f"{jpath}/{parent}_offset", ppath,
                         ctx.floats(lp, 3) if lp is not None else np.zeros(3),
                         ctx.floats(op, 3) if op is not None else np.zeros(3), owner=f"joint:{jname}")
        cf = OffsetFrame(f"{child_name}_offset", f"{jpath}/{child_name}_offset", body_path(child_name),
                         ctx.floats(lc, 3) if lc is not None else np.zeros(3),
                         ctx.floats(oc, 3) if oc is not None else np.zeros(3), owner=f"joint:{jname}")
        frames[pf.path] = pf
        frames[cf.path] = cf
        cset = _child(je, "CoordinateSet")
        coords = [_read_coordinate(c, jname, ctx) for c in _objects(cset) if c.tag == "Coordinate"]
        for c in coords:    # 3.x: an empty <prescribed_function/> is dropped, a function kept
            c.unmodelled_xml = _unmodelled_to_text(
                [e for e in _unmodelled_from_text(c.unmodelled_xml) if len(e)])
        jtype = je.tag
        st = _read_spatial_transform(je, ctx) if je.tag == "CustomJoint" else None
        if _bool(je, "reverse", False):
            jtype, st = reversed_joint(je.tag, st, coords, jname, ctx.path)
            warnings.warn(f"{ctx.path}: reversed 3.x joint '{jname}' ({je.tag}) is written as a "
                          f"forward {jtype} with the inverse transform", ArthronWarning)
        model.joints[jname] = Joint(
            name=jname, type=jtype, parent_frame=pf.path, child_frame=cf.path, coordinates=coords,
            spatial_transform=st, parameters=_joint_params(je, ctx))
    _read_v3_constraints(melem, model, frames, all_frames, ctx)
    for me in _objects(_child(melem, "MarkerSet")):
        bn = _text(me, "body", "ground")
        model.markers[me.get("name", "")] = Marker(
            name=me.get("name", ""), parent_frame=_resolve(body_path(bn), "/", all_frames, ctx, me),
            location=ctx.floats(_child(me, "location"), 3) if _child(me, "location") is not None
            else np.zeros(3), fixed=_bool(me, "fixed"))
    for fe in _objects(_child(melem, "ForceSet")):
        f = _read_force(fe, all_frames, model, ctx, v4=False)
        model.forces[f.name] = f
    groups = melem.find("ForceSet/groups")
    if groups is not None and len(groups):
        model.unmodelled_xml["ForceSet/groups"] = _unmodelled_to_text([groups])
    model.contact_geometry = _read_contact_geometry(melem, all_frames, ctx)
    for tag in ("ControllerSet", "ContactGeometrySet", "ProbeSet", "ComponentSet"):
        c = _child(melem, tag)
        if tag in ("ContactGeometrySet", "ControllerSet") and c is not None:
            if len(_objects(c)):
                model.verbatim.append(("model", c))    # upgraded (osim_upgrade)
        elif c is not None and len(_objects(c)):
            warnings.warn(f"{ctx.path}: 3.x <{tag}> is kept verbatim; OpenSim may not read it back "
                          "under Version 40000", ArthronWarning)
            model.verbatim.append(("model", c))
    return model


def _read_v3_geometry(body, vo, ctx):
    """Geometry of a 3.x body's ``VisibleObject``: the 2.x ``geometry_files`` list, or the
    ``GeometrySet`` of ``DisplayGeometry`` that OpenSim 4 upgrades to ``Mesh`` components named
    ``<body>_geom_<k>`` (color/opacity → ``Appearance``, display preference 0 → not visible),
    attached to the body or, when the DisplayGeometry has a ``transform``, to a
    PhysicalOffsetFrame ``<body>_geom_frame_<k>`` of the body. Returns (geometry, frames)."""
    geoms, frames = [], []
    if vo is None:
        return geoms, frames
    sf = _text(vo, "scale_factors")
    sfa = ctx.floats(_child(vo, "scale_factors"), 3) if sf else np.ones(3)
    for k, fnm in enumerate((_text(vo, "geometry_files", "") or "").split()):
        geoms.append(Geometry(name=f"{body}_geom_{k + 1}", kind="Mesh", mesh_file=fnm, scale_factors=sfa))
    owner, bpath = ("ground", GROUND) if body == "ground" else (f"body:{body}", body_path(body))
    for k, dg in enumerate(_objects(_child(vo, "GeometrySet")), start=1):
        fnm = _text(dg, "geometry_file")
        if dg.tag != "DisplayGeometry" or not fnm:
            continue
        dsf = ctx.floats(_child(dg, "scale_factors"), 3) if _text(dg, "scale_factors") else np.ones(3)
        app = etree.Element("Appearance")
        if _text(dg, "display_preference") == "0":
            _sub(app, "visible", "false")
        for tag in ("opacity", "color"):
            if _text(dg, tag):
                _sub(app, tag, " ".join(_text(dg, tag).split()))
        g = Geometry(name=f"{body}_geom_{k}", kind="Mesh", mesh_file=fnm, scale_factors=dsf * sfa,
                     unmodelled_xml=_unmodelled_to_text([app]))
        tr = ctx.floats(_child(dg, "transform"), 6) if _text(dg, "transform") else np.zeros(6)
        if not np.any(tr):
            geoms.append(g)
            continue
        g.unmodelled_xml = _unmodelled_to_text([etree.fromstring("<socket_frame>..</socket_frame>"), app])
        ag = etree.Element("attached_geometry")
        ag.extend(_geometry_elems([g]))
        fname = f"{body}_geom_frame_{k}"
        frames.append(OffsetFrame(fname, f"{bpath}/{fname}", bpath, tr[3:], tr[:3], owner=owner,
                                  unmodelled_xml=_unmodelled_to_text([ag])))
    return geoms, frames


def _read_v3_constraints(melem, model, frames, all_frames, ctx):
    """Constraints of an upgraded 3.x model: in their 4.x form (sockets, offset frames of
    WeldConstraint), read like 4.x constraints."""
    for ce in _objects(_child(melem, "ConstraintSet")):
        fr = _child(ce, "frames")
        for fe in fr if fr is not None else []:
            if fe.tag == "PhysicalOffsetFrame":
                f = _read_offset_frame(fe, f"/constraintset/{ce.get('name', '')}",
                                       f"constraint:{ce.get('name')}", ctx)
                f.parent = _resolve(f.parent, f.path, all_frames, ctx, fe)
                frames[f.path] = f
    model.frames = frames
    all_frames |= set(frames)
    _classify_coordinates(model)
    for ce in _objects(_child(melem, "ConstraintSet")):
        model.constraints.append(_read_constraint(ce, all_frames, ctx, v4=True))
    for ce in _objects(_child(melem, ELLIPSOID_CONSTRAINT_SET)):
        if ce.tag == ELLIPSOID_CONSTRAINT:
            model.constraints.append(_read_ellipsoid_constraint(ce, all_frames, ctx))


# ----------------------------------------------------------------------------- writing
def _fmt(x) -> str:
    if type(x) is float:
        return repr(x)
    return " ".join(map(repr, np.asarray(x, dtype=float).ravel().tolist()))


def _set(elem, tag, text, before=None):
    c = elem.find(tag)
    if c is None:
        c = etree.SubElement(elem, tag)
    c.text = text
    for k in list(c):
        c.remove(k)
    return c


_SubElement = etree.SubElement


def _sub(elem, tag, text=None, **attrib):
    c = _SubElement(elem, tag, attrib) if attrib else _SubElement(elem, tag)
    if text is not None:
        c.text = text
    return c


def _rel_to_joint(frame_path: str, jname: str) -> str:
    pre = f"/jointset/{jname}/"
    return frame_path[len(pre):] if frame_path.startswith(pre) else frame_path


def _frame_elem(f: OffsetFrame):
    e = _element("PhysicalOffsetFrame", f.name, f.unmodelled_xml)
    parent = f.parent
    if f.owner.startswith("body:") and parent == f"/bodyset/{f.owner[5:]}":
        parent = ".."
    _set(e, "socket_parent", parent)
    _set(e, "translation", _fmt(f.translation))
    _set(e, "orientation", _fmt(f.orientation))
    return e


def _geometry_elems(geoms):
    out = []
    for g in geoms:
        e = _element(g.kind, g.name, g.unmodelled_xml)
        if e.find("socket_frame") is None:
            _sub(e, "socket_frame", "..")
        _sub(e, "scale_factors", _fmt(g.scale_factors))
        if g.mesh_file:
            _sub(e, "mesh_file", g.mesh_file)
        out.append(e)
    return out


def _wrap_elem(w):
    if not w.modelled:
        return copy.deepcopy(w.raw)
    return WRAPS_WRITERS[w.type](w)


def _wrapset(parent, wraps):
    ws = _sub(parent, "WrapObjectSet", name="wrapobjectset")
    objs = _sub(ws, "objects")
    for w in wraps:
        objs.append(_wrap_elem(w))
    _sub(ws, "groups")


def _function_holder(parent, tag, f):
    h = _sub(parent, tag)
    if f is not None:
        h.append(function_to_xml(f))
    return h


def _joint_elem(model: Model, j: Joint):
    e = _element(j.type, j.name, j.unmodelled_xml)   # unmodelled properties (appearance ...)
    _sub(e, "socket_parent_frame", _rel_to_joint(j.parent_frame, j.name))
    _sub(e, "socket_child_frame", _rel_to_joint(j.child_frame, j.name))
    cs = _sub(e, "coordinates")
    for c in j.coordinates:
        ce = etree.SubElement(cs, "Coordinate", name=c.name)
        _sub(ce, "default_value", repr(float(c.default_value)))
        _sub(ce, "default_speed_value", repr(float(c.default_speed_value)))
        _sub(ce, "range", _fmt(c.range))
        _sub(ce, "clamped", str(bool(c.clamped)).lower())
        _sub(ce, "locked", str(bool(c.locked)).lower())
        for x in _unmodelled_from_text(c.unmodelled_xml):
            ce.append(x)
        _sub(ce, "prescribed", str(bool(c.prescribed)).lower())
    fr = _sub(e, "frames")
    for f in model.frames.values():
        if f.owner == f"joint:{j.name}":
            fr.append(_frame_elem(f))
    if j.type == "CustomJoint" and j.spatial_transform is not None:
        st = _sub(e, "SpatialTransform")
        for a in j.spatial_transform:
            ta = etree.SubElement(st, "TransformAxis", name=a.name)
            _sub(ta, "coordinates", " ".join(a.coordinates))
            _sub(ta, "axis", _fmt(a.axis))
            func = a.function
            if func is None:
                func = fn.LinearFunction(1.0, 0.0) if a.coordinates else fn.Constant(0.0)
            _function_holder(ta, "function", func)
    for k, v in j.parameters.items():
        _sub(e, k, _fmt(v))
    return e


def _path_elem(fpath: GeometryPath, model: Model):
    gp = _element("GeometryPath", fpath.name, fpath.unmodelled_xml)
    pps = etree.Element("PathPointSet")
    objs = _sub(pps, "objects")
    cpath = None
    for p in fpath.points:
        if cpath is None and p.kind != "PathPoint":
            cpath = {c.name: f"/jointset/{c.joint}/{c.name}" for c in model.coordinates.values()}
        pe = etree.SubElement(objs, p.kind, name=p.name)
        _sub(pe, "socket_parent_frame", p.parent_frame)
        if p.kind != "MovingPathPoint":
            _sub(pe, "location", _fmt(p.location))
        if p.kind == "ConditionalPathPoint":
            _sub(pe, "socket_coordinate", cpath.get(p.coordinate, p.coordinate))
            _sub(pe, "range", _fmt(p.range))
        elif p.kind == "MovingPathPoint":
            for ax, f, c in zip("xyz", p.location_functions, p.location_coordinates):
                if c is not None:
                    _sub(pe, f"socket_{ax}_coordinate", cpath.get(c, c))
            for ax, f in zip("xyz", p.location_functions):
                if f is not None:
                    _function_holder(pe, f"{ax}_location", f).tag = f"{ax}_location"
    _sub(pps, "groups")
    gp.insert(0, pps)
    pws = etree.Element("PathWrapSet")
    wobjs = _sub(pws, "objects")
    for w in fpath.wraps:
        we = _element("PathWrap", w.name, w.unmodelled_xml)
        _set(we, "wrap_object", w.wrap_object)
        _set(we, "method", w.method)
        _set(we, "range", " ".join(str(int(x)) for x in w.range))
        wobjs.append(we)
    _sub(pws, "groups")
    gp.insert(1, pws)
    return gp


def _force_elem(f, model: Model):
    """A ForceSet element: the registered writer of the force's class (from its fields), or
    the kept element of an unmodelled force."""
    if not f.modelled:
        if f.raw is None:
            raise ModelFileError(f"force '{f.name}' ({f.type}) is not modelled by arthron and has "
                                 "no file element to write back", model.source)
        return copy.deepcopy(f.raw)
    writer = WRITERS.get(f.type)
    if writer is None:
        raise ModelFileError(f"force '{f.name}': no writer for class {f.type}", model.source)
    e = writer(f)
    if f.path is not None:
        e.append(_path_elem(f.path, model))
    return e


def force_to_xml(force, model: Model | None = None) -> str:
    """One force element as OpenSim 4.x XML text (what :func:`write_osim` puts in the ForceSet).

    ``model`` resolves coordinate names of conditional and moving path points to their
    component paths; without it they are written as given.
    """
    e = _force_elem(force, model if model is not None else Model())
    return etree.tostring(e, encoding="unicode", pretty_print=True).rstrip()


def _constraint_elem(c: Constraint, model: Model):
    e = _element(c.type, c.name, c.unmodelled_xml)
    _sub(e, "isEnforced", str(bool(c.enabled)).lower())
    owned = [f for f in model.frames.values() if f.owner == f"constraint:{c.name}"]
    if owned:
        fr = _set(e, "frames", None)
        for f in owned:
            fr.append(_frame_elem(f))
    p = c.properties
    if c.type == "CoordinateCouplerConstraint":
        _set(e, "independent_coordinate_names", " ".join(p["independent_coordinates"]))
        _set(e, "dependent_coordinate_name", p["dependent_coordinate"])
        h = _set(e, "coupled_coordinates_function", None)
        if p.get("function") is not None:
            h.append(function_to_xml(p["function"]))
        _set(e, "scale_factor", repr(float(p.get("scale_factor", 1.0))))
    else:
        for k in ("1", "2"):
            if f"body_{k}" in p:
                tag = f"socket_frame{k}" if e.find(f"socket_frame{k}") is not None or c.type == "WeldConstraint" \
                    else f"socket_body_{k}"
                ref = p[f"body_{k}"]
                pre = f"/constraintset/{c.name}/"
                _set(e, tag, ref[len(pre):] if ref.startswith(pre) else ref)
        for tag in ("location_body_1", "location_body_2", "line_direction_vec", "point_on_line",
                    "point_on_follower", "constant_distance"):
            if tag in p:
                _set(e, tag, _fmt(p[tag]))
    return e


#: arthron's point-on-ellipsoid constraint (no OpenSim 4.6 class) and the model-level element
#: that carries it in a file (OpenSim ignores unknown model properties silently)
ELLIPSOID_CONSTRAINT = "PointOnEllipsoidConstraint"
ELLIPSOID_CONSTRAINT_SET = "arthron_PointOnEllipsoidConstraintSet"
_ELLIPSOID_VECTORS = ("location", "center", "radii", "orientation", "base_radii", "reference_point")


def _ellipsoid_constraints_elem(m, constraints):
    """Write PointOnEllipsoidConstraints (see :class:`arthron.models.model.Constraint`) into
    a model-level ``<arthron_PointOnEllipsoidConstraintSet>``, after a comment saying what
    OpenSim does with it: OpenSim 4.6 has no such constraint class and ignores the element, so
    in OpenSim the constrained points are free to leave their ellipsoids (the model has two
    more degrees of freedom there, and OpenSim's inverse dynamics gives the generalized forces
    without the constraint multipliers). arthron reads the element back."""
    names = ", ".join(c.name for c in constraints)
    warnings.warn(f"OpenSim 4.6 has no point-on-ellipsoid constraint: {names} written as "
                  f"<{ELLIPSOID_CONSTRAINT_SET}>, which OpenSim ignores (arthron reads it back)",
                  ArthronWarning, stacklevel=3)
    m.append(etree.Comment(
        f" arthron {ELLIPSOID_CONSTRAINT}s ({names}): a point of one body held on an ellipsoid "
        "fixed to another, sum(((p - center)/radii)^2) = 1 with p in the ellipsoid frame "
        "(Sarshari et al. 2021, Eq. 10). OpenSim 4.6 has no such constraint: it ignores this "
        "element, so in OpenSim these points may leave their ellipsoids. "))
    root = _sub(m, ELLIPSOID_CONSTRAINT_SET, name="pointonellipsoidconstraintset")
    objs = _sub(root, "objects")
    for c in constraints:
        e = _element(ELLIPSOID_CONSTRAINT, c.name, c.unmodelled_xml)
        p = c.properties
        _set(e, "isEnforced", str(bool(c.enabled)).lower())
        _set(e, "socket_body", p["socket_body"])
        _set(e, "socket_ellipsoid_frame", p.get("socket_ellipsoid_frame", GROUND))
        for k in _ELLIPSOID_VECTORS:
            if k in p:
                _set(e, k, _fmt(p[k]))
        objs.append(e)


def _read_ellipsoid_constraint(ce, all_frames, ctx) -> Constraint:
    cpath = f"/{ELLIPSOID_CONSTRAINT_SET}/{ce.get('name', '')}"
    props = {"socket_body": _resolve(_text(ce, "socket_body"), cpath, all_frames, ctx, ce, "socket_body"),
             "socket_ellipsoid_frame": _resolve(_text(ce, "socket_ellipsoid_frame") or GROUND, cpath,
                                                all_frames, ctx, ce, "socket_ellipsoid_frame")}
    for k in _ELLIPSOID_VECTORS:
        if _child(ce, k) is not None:
            props[k] = ctx.floats(_child(ce, k), 3)
    for k in ("location", "radii"):
        if k not in props:
            raise ctx.err(f"{ELLIPSOID_CONSTRAINT} '{ce.get('name', '')}' has no <{k}>", ce)
    return Constraint(name=ce.get("name", ""), type=ELLIPSOID_CONSTRAINT, properties=props,
                      enabled=_bool(ce, "isEnforced", True),
                      unmodelled_xml=_rest(ce, ("isEnforced", "socket_body", "socket_ellipsoid_frame")
                                           + _ELLIPSOID_VECTORS))


def _same(a: Model, b: Model, *fields) -> bool:
    return all(getattr(a, f) is getattr(b, f) for f in fields)


def model_to_xml(model: Model, *, like=None) -> etree._ElementTree:
    """Build the OpenSim 4.x document of a model (``Version="40000"``).

    ``like``: optional ``(other model, its document)`` just built, whose components this model
    shares (the same objects, unchanged since): the BodySet, JointSet, ForceSet and MarkerSet
    elements whose components are all shared are copied from that document instead of being
    built again (what :func:`write_osims` does for a ScaleTool's scaled and placed models)."""
    reuse = {}
    if like is not None:
        other, odoc = like
        oroot = odoc.getroot() if hasattr(odoc, "getroot") else odoc
        om = oroot.find("Model")
        if om is not None:
            if _same(model, other, "bodies", "frames", "verbatim"):
                reuse["BodySet"] = om.find("BodySet")
            if _same(model, other, "joints", "frames"):
                reuse["JointSet"] = om.find("JointSet")
            if _same(model, other, "forces", "joints", "unmodelled_xml"):
                reuse["ForceSet"] = om.find("ForceSet")
            if _same(model, other, "markers"):
                reuse["MarkerSet"] = om.find("MarkerSet")
        reuse = {k: v for k, v in reuse.items() if v is not None}
    doc = etree.Element("OpenSimDocument", Version="40000")
    m = _sub(doc, "Model", name=model.name)
    if model.credits is not None:
        _sub(m, "credits", model.credits)
    if model.publications is not None:
        _sub(m, "publications", model.publications)
    _sub(m, "length_units", model.length_units)
    _sub(m, "force_units", model.force_units)
    _sub(m, "gravity", _fmt(model.gravity))
    ground = _sub(m, "Ground", name="ground")
    gframes = [f for f in model.frames.values() if f.owner == "ground"]
    if gframes:
        comps = _sub(ground, "components")
        for f in gframes:
            comps.append(_frame_elem(f))
    ag = _sub(ground, "attached_geometry")
    for g in _geometry_elems(model.ground_geometry):
        ag.append(g)
    _wrapset(ground, model.ground_wrap_objects)
    if "BodySet" in reuse:
        m.append(copy.deepcopy(reuse["BodySet"]))
    else:
        bs = _sub(m, "BodySet", name="bodyset")
        bobjs = _sub(bs, "objects")
    for b in (() if "BodySet" in reuse else model.bodies.values()):
        be = etree.SubElement(bobjs, "Body", name=b.name)
        bframes = [f for f in model.frames.values() if f.owner == f"body:{b.name}"]
        others = [e for s, e in model.verbatim if s == f"body:{b.name}"]
        if bframes or others:
            comps = _sub(be, "components")
            for f in bframes:
                comps.append(_frame_elem(f))
            for o in others:
                comps.append(copy.deepcopy(o))
        ag = _sub(be, "attached_geometry")
        for g in _geometry_elems(b.geometry):
            ag.append(g)
        _wrapset(be, b.wrap_objects)
        _sub(be, "mass", repr(float(b.mass)))
        _sub(be, "mass_center", _fmt(b.mass_center))
        I = b.inertia
        _sub(be, "inertia", _fmt([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]))
    if "JointSet" in reuse:
        m.append(copy.deepcopy(reuse["JointSet"]))
    else:
        js = _sub(m, "JointSet", name="jointset")
        jobjs = _sub(js, "objects")
        for j in model.joints.values():
            jobjs.append(_joint_elem(model, j))
    cs = _sub(m, "ConstraintSet", name="constraintset")
    cobjs = _sub(cs, "objects")
    ellipsoidal = [c for c in model.constraints if c.type == ELLIPSOID_CONSTRAINT]
    for c in model.constraints:
        if c.type != ELLIPSOID_CONSTRAINT:
            cobjs.append(_constraint_elem(c, model))
    if ellipsoidal:
        _ellipsoid_constraints_elem(m, ellipsoidal)
    if "ForceSet" in reuse:
        m.append(copy.deepcopy(reuse["ForceSet"]))
    else:
        fs = _sub(m, "ForceSet", name="forceset")
        fobjs = _sub(fs, "objects")
        for f in model.forces.values():
            fobjs.append(_force_elem(f, model))
        for g in _unmodelled_from_text(model.unmodelled_xml.get("ForceSet/groups", "")):
            fs.append(g)
    if "MarkerSet" in reuse:
        m.append(copy.deepcopy(reuse["MarkerSet"]))
    else:
        ms = _sub(m, "MarkerSet", name="markerset")
        mobjs = _sub(ms, "objects")
    for mk in (() if "MarkerSet" in reuse else model.markers.values()):
        me = _element("Marker", mk.name, mk.unmodelled_xml)
        _set(me, "socket_parent_frame", mk.parent_frame)
        _set(me, "location", _fmt(mk.location))
        _set(me, "fixed", str(bool(mk.fixed)).lower())
        mobjs.append(me)
    mframes = [f for f in model.frames.values() if f.owner == "model"]
    others = [e for s, e in model.verbatim if s == "components"]
    if mframes or others:
        comps = _sub(m, "components")
        for f in mframes:
            comps.append(_frame_elem(f))
        for o in others:
            comps.append(copy.deepcopy(o))
    for s, e in model.verbatim:
        if s == "model":
            m.append(copy.deepcopy(e))
    return etree.ElementTree(doc)


def _drop_layout_whitespace(root):
    """Whitespace-only text between elements (indentation kept in verbatim components) is
    dropped so that the whole document is pretty-printed the same way, whatever was read."""
    for e in root.iter():
        if len(e) and e.text is not None and not e.text.strip():
            e.text = None
        if e.tail is not None and not e.tail.strip():
            e.tail = None


def write_osim(path, model: Model, *, exclude_types=()) -> Path:
    """Write a model as an OpenSim 4.x ``.osim`` file.

    The file is written whole or not at all (temporary file in the same folder, then renamed),
    and never over the file the model was read from.

    Parameters
    ----------
    path : output file
    model : Model
    exclude_types : iterable of str
        OpenSim class names to leave out of the ForceSet and the model-level sets (for example
        plugin classes such as ``Smith2018ArticularContactForce`` when the file is meant for a
        plain OpenSim).

    Raises
    ------
    ModelFileError if ``path`` is the model's own source file.
    """
    path = Path(path)
    _write_osim(path, model, exclude_types)
    return path


def write_osims(items, *, exclude_types=()) -> list:
    """Write several models, ``items`` ``[(path, model), ...]`` in order, as :func:`write_osim`
    does each; a model that shares components with the one written before it (the same
    objects, such as the ScaleTool's placed model and its scaled model) has their elements
    copied from that document (:func:`model_to_xml`'s ``like``): the same files, 40 % less
    work for the second. Returns the paths.

    Raises
    ------
    ModelFileError if a path is its model's own source file.
    """
    out, like = [], None
    for path, model in items:
        tree = _write_osim(Path(path), model, exclude_types, like)
        like = (model, tree)
        out.append(Path(path))
    return out


def _write_osim(path, model, exclude_types, like=None):
    try:
        check_output(path, [model.source] if model.source is not None else [])
    except DataFileError as e:
        raise ModelFileError(e.message, path) from None
    tree = model_to_xml(model, like=like)
    if exclude_types:
        ex = set(exclude_types)
        for e in list(tree.getroot().iter()):
            if isinstance(e.tag, str) and e.tag in ex and e.getparent() is not None:
                e.getparent().remove(e)
    _drop_layout_whitespace(tree.getroot())
    atomic_write(path, etree.tostring(tree, pretty_print=True, xml_declaration=True, encoding="UTF-8"),
                 sources=[model.source])
    return tree


# ----------------------------------------------------------------------------- typed components
_RECOVER = etree.XMLParser(recover=True, remove_comments=True)


def _unmodelled_to_text(elems) -> str:
    """Serialize the child elements arthron does not model (kept for lossless writing), in a
    canonical form: no comments, no whitespace-only text (what is read back from a written
    file gives the same string)."""
    out = []
    for c in elems:
        if not isinstance(c.tag, str):
            continue
        if not len(c):          # a leaf: nothing to strip (its text is kept, its tail not written)
            out.append(etree.tostring(c, encoding="unicode", with_tail=False))
            continue
        c = copy.deepcopy(c)
        etree.strip_elements(c, etree.Comment, etree.ProcessingInstruction, with_tail=False)
        for x in c.iter():
            if x.text is not None and not x.text.strip() and len(x):
                x.text = None
            if x.tail is not None and not x.tail.strip():
                x.tail = None
        out.append(etree.tostring(c, encoding="unicode", with_tail=False))
    return "".join(out)


def _unmodelled_from_text(text: str):
    """The child elements of an ``unmodelled_xml`` string (tolerant of OpenSim's ``::`` tags)."""
    if not text:
        return []
    root = etree.fromstring(f"<unmodelled>{text}</unmodelled>", _RECOVER)
    return [c for c in root if isinstance(c.tag, str)]


_INFINITE_OK = ("min_control", "max_control")


def _float_or_inf(elem, ctx):
    v = float(ctx.floats(elem, 1, finite=False)[0])
    if np.isnan(v):
        raise ctx.err(f"<{elem.tag}> is NaN", elem)
    return v


def _read_prop(elem, kind, ctx):
    if kind == "float":
        # OpenSim's control bounds default to +-Inf; every other property must be finite.
        if elem.tag in _INFINITE_OK:
            return _float_or_inf(elem, ctx)
        try:                                    # one finite number: the common case
            v = float(elem.text)
        except (TypeError, ValueError):
            v = math.nan
        if math.isfinite(v):
            return v
        return float(ctx.floats(elem, 1)[0])    # the checks and their messages
    if kind == "str":
        return (elem.text or "").strip()
    if kind == "bool":
        return (elem.text or "").strip().lower() in ("true", "1", "yes")
    if kind == "vec":
        return ctx.floats(elem, 3)
    if kind == "function":
        return read_function_property(elem, ctx.path)
    if kind == "curve":
        out = {}
        for c in elem:
            if isinstance(c.tag, str):
                out[c.tag] = float(ctx.floats(c, 1)[0])
        return out
    raise ValueError(kind)


_CONTACT_NUMBERS = ("stiffness", "dissipation", "static_friction", "dynamic_friction",
                    "viscous_friction")


def _read_contact_parameters(elem, ctx) -> list:
    """HuntCrossleyForce's ``contact_parameters`` (a ``HuntCrossleyForce::ContactParametersSet``)
    as a list of dicts."""
    out = []
    for pe in _objects(elem):
        if not pe.tag.endswith("ContactParameters"):
            continue
        d = {"geometry": (_text(pe, "geometry", "") or "").split()}
        for t in _CONTACT_NUMBERS:
            d[t] = ctx.num(pe, t, 1.0 if t == "stiffness" else 0.0)
        out.append(d)
    return out


def _write_prop(parent, tag, kind, v):
    if kind == "float":
        _sub(parent, tag, repr(float(v)))
    elif kind == "str":
        _sub(parent, tag, str(v))
    elif kind == "bool":
        _sub(parent, tag, "true" if v else "false")
    elif kind == "vec":
        _sub(parent, tag, _fmt(v))
    elif kind == "function":
        _function_holder(parent, tag, v)
    elif kind == "curve":
        c = _sub(parent, tag)
        for k, x in v.items():
            _sub(c, k, repr(float(x)))
    else:
        raise ValueError(kind)


# Elements of a force that the common reader handles itself (never unmodelled).
_FORCE_HANDLED = ("appliesForce", "isDisabled", "GeometryPath")


def _xml_fields(cls):
    """(attribute, XML tag, kind) of the OpenSim properties a component dataclass models."""
    return [(f.name, f.metadata.get("xml", f.name), f.metadata["kind"])
            for f in dataclasses.fields(cls) if "kind" in f.metadata]


def _typed_reader(cls, handled=()):
    """The reader of a registered component dataclass: its fields from the children named
    like them (OpenSim property names), the other children (except ``handled``, which the
    caller reads) kept as ``unmodelled_xml``."""
    by_tag = {tag: (attr, kind) for attr, tag, kind in _xml_fields(cls)}
    # 3.x property names holding a body name where 4.x has a socket path
    v3_body = {f.metadata["xml_3x_body"]: f.name for f in dataclasses.fields(cls)
               if "xml_3x_body" in f.metadata}

    def read(elem, ctx):
        obj = cls(name=elem.get("name", ""))
        rest = []
        for c in elem:
            if not isinstance(c.tag, str):
                continue
            hit = by_tag.get(c.tag)
            if hit is None and c.tag in v3_body and (c.text or "").strip():
                setattr(obj, v3_body[c.tag], body_path(c.text.strip()))
                continue
            if hit is not None:
                if hit[1] == "curve" or c.text is not None and c.text.strip() or len(c):
                    setattr(obj, hit[0], _read_prop(c, hit[1], ctx))
            elif c.tag not in handled:
                rest.append(c)
        obj.unmodelled_xml = _unmodelled_to_text(rest)
        return obj
    return read


def _typed_writer(cls, head=None):
    """The writer of a registered component dataclass: the element from the fields (None = not
    written, OpenSim's default applies), then the unmodelled properties. ``head(obj, elem)``
    writes what the caller handles (``appliesForce`` of forces)."""
    spec = _xml_fields(cls)

    def write(obj):
        e = etree.Element(obj.type, name=obj.name)
        if head is not None:
            head(obj, e)
        for attr, tag, kind in spec:
            v = getattr(obj, attr)
            if v is not None:
                _write_prop(e, tag, kind, v)
        for c in _unmodelled_from_text(obj.unmodelled_xml):
            e.append(c)
        return e
    return write


def _applies_force(f, e):
    _sub(e, "appliesForce", "true" if f.applies_force else "false")


#: OpenSim class name -> reader(element, ctx) / writer(component) -> element.
READERS: dict = {}
WRITERS: dict = {}


def register(type_name, reader, writer):
    """Register the (read, write) pair of an OpenSim class."""
    READERS[type_name] = reader
    WRITERS[type_name] = writer


for _t, _cls in FORCE_TYPES.items():
    register(_t, _typed_reader(_cls, _FORCE_HANDLED), _typed_writer(_cls, _applies_force))
WRAPS_WRITERS: dict = {}
for _t, _cls in WRAP_TYPES.items():
    register(_t, _typed_reader(_cls), _typed_writer(_cls))
    WRAPS_WRITERS[_t] = WRITERS[_t]


# Every function-valued property name arthron knows (read in both of OpenSim's forms).
_FUNCTION_PROPS = function_property_names(FORCE_TYPES, WRAP_TYPES)


def _force_from_element(elem, ctx):
    """A typed force from a ForceSet element (no path: paths need the model's frames)."""
    reader = READERS.get(elem.tag)
    applies = _bool(elem, "appliesForce", True) and not _bool(elem, "isDisabled", False)
    if reader is None:
        return UnmodelledForce(name=elem.get("name", ""), type=elem.tag, applies_force=applies,
                               raw=elem)
    f = reader(elem, ctx)
    f.applies_force = applies
    return f



def read_force_set(path) -> list:
    """The force elements of an OpenSim ``ForceSet`` file (e.g. a tool's ``force_set_files``:
    residual and reserve actuators), typed (:mod:`arthron.models.forces`), in file order.
    ``<defaults>`` are ignored. Path-based forces are returned without their path.

    Raises
    ------
    DataFileError for a missing or malformed file or one that is not a ForceSet,
    ModelFileError for a malformed property.
    """
    root = parse_xml(path)
    wrap_inline_function_properties(root, _FUNCTION_PROPS)
    fs = root if root.tag == "ForceSet" else root.find("ForceSet")
    if fs is None:
        raise DataFileError("not a <ForceSet> file", path)
    ctx = _Ctx(path)
    return [_force_from_element(el, ctx) for el in _objects(fs)]
