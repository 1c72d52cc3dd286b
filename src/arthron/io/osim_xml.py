"""The XML layer shared by the ``.osim`` reader (:mod:`arthron.io.osim`) and writer
(:mod:`arthron.io.osim_write`): element helpers, the property formats, and the type ->
(read, write) registry of the modelled force and wrap-object classes (``READERS``, ``WRITERS``,
:func:`register`)."""
from __future__ import annotations

import copy
import dataclasses
import functools
import math
import posixpath
import warnings

import numpy as np
from lxml import etree

from ..errors import ArthronWarning, ModelFileError
from .osim_functions import function_property_names, function_to_xml, read_function_property
from .osim_upgrade import set_objects as _objects
from ..models.forces import FORCE_TYPES, UnmodelledForce
from ..models.wrap_objects import WRAP_TYPES
from ..models.model import body_path

__all__ = ["READERS", "WRITERS", "register"]

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
    def __init__(self, path, forces=True):
        self.path = str(path) if path is not None else None
        self.forces = forces      # False: the ForceSet's forces are not read (read_osim)

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
    "constant_distance", "socket_line_body", "socket_follower_body")
_PATH_WRITTEN = ("PathPointSet", "PathWrapSet", "VisibleObject", "display_preference",
                 "default_color")


def _rest(elem, written) -> str:
    """The children of ``elem`` other than ``written``, serialized (a component's
    ``unmodelled_xml``)."""
    return _unmodelled_to_text([c for c in elem.iterchildren(etree.Element) if c.tag not in written])


def _element(tag, name, unmodelled_xml):
    """A new element ``<tag name=...>`` holding the unmodelled children (an empty ``name`` is
    left out)."""
    e = etree.Element(tag, name=name) if name else etree.Element(tag)
    for c in _unmodelled_from_text(unmodelled_xml):
        e.append(c)
    return e


@functools.lru_cache(maxsize=8192)
def _norm(path: str) -> str:
    """A component path normalized (``..`` and ``.`` resolved) and absolute; remembered (a
    pure function of the string: a model's sockets name the same few frames again and again)."""
    p = posixpath.normpath(path)
    return p if p.startswith("/") else "/" + p


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


#: arthron's point-on-ellipsoid constraint (no OpenSim 4.6 class) and the model-level element
#: that carries it in a file (OpenSim ignores unknown model properties silently)
ELLIPSOID_CONSTRAINT = "PointOnEllipsoidConstraint"
ELLIPSOID_CONSTRAINT_SET = "arthron_PointOnEllipsoidConstraintSet"
_ELLIPSOID_VECTORS = ("location", "center", "radii", "orientation", "base_radii", "reference_point")


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


def _function_holder(parent, tag, f):
    h = _sub(parent, tag)
    if f is not None:
        h.append(function_to_xml(f))
    return h


# ----------------------------------------------------------------------------- typed components
_RECOVER = etree.XMLParser(recover=True, remove_comments=True)


def read_force_groups(melem) -> dict:
    """The ObjectGroups of the model element's ForceSet: name -> member names (tuple), in file
    order (OpenSim's ``Set::getGroupNames``; members are whitespace separated)."""
    out = {}
    for g in melem.findall("ForceSet/groups/ObjectGroup"):
        members = g.findtext("members") or ""
        out[g.get("name", "")] = tuple(members.split())
    return out


def _unmodelled_to_text(elems) -> str:
    """Serialize the child elements arthron does not model (kept for lossless writing), in a
    canonical form: no comments, no whitespace-only text (what is read back from a written
    file gives the same string)."""
    out = []
    for c in elems:
        if not isinstance(c.tag, str):
            continue
        text = etree.tostring(c, encoding="unicode", with_tail=False)
        if len(c):              # not a leaf (a leaf's text is kept, its tail not written)
            text = _canonical(c, text)
        out.append(text)
    return "".join(out)


#: serialized element -> its canonical text (:func:`_canonical`); a pure function of the
#: string, so a model read again (a tool run in a warm process) finds its components' texts here
_CANONICAL: dict = {}
_CANONICAL_MAX, _CANONICAL_KEY_MAX = 2048, 4096     # at most ~16 MB of keys and texts


def _canonical(c, serialized: str) -> str:
    """``c`` (serialized as ``serialized``) without comments, processing instructions and
    whitespace-only text between elements: what :func:`_unmodelled_to_text` keeps. The text
    depends on the serialization alone (tag, attributes, namespaces, text, children, tails),
    so it is remembered by it (up to :data:`_CANONICAL_MAX` strings of at most
    :data:`_CANONICAL_KEY_MAX` characters)."""
    text = _CANONICAL.get(serialized)
    if text is not None:
        return text
    c = copy.deepcopy(c)
    etree.strip_elements(c, etree.Comment, etree.ProcessingInstruction, with_tail=False)
    for x in c.iter():
        if x.text is not None and not x.text.strip() and len(x):
            x.text = None
        if x.tail is not None and not x.tail.strip():
            x.tail = None
    text = etree.tostring(c, encoding="unicode", with_tail=False)
    if len(serialized) <= _CANONICAL_KEY_MAX:
        if len(_CANONICAL) >= _CANONICAL_MAX:
            _CANONICAL.clear()
        _CANONICAL[serialized] = text
    return text


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
        # A curve's optional properties written empty (``<curviness></curviness>``, as the
        # public Tug_of_War_Millard.osim has them) are unset in OpenSim 4.6, which then
        # computes their defaults: left out here too (written back left out).
        out = {}
        for c in elem:
            if isinstance(c.tag, str) and (c.text or "").strip():
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
        first = {}
        for c in elem.iterchildren(etree.Element):     # the elements (no comments)
            tag = c.tag                                  # (lxml makes the string at each access)
            if tag in by_tag or tag in v3_body:
                # a property given twice: OpenSim 4.6 reads the first element (bioscout's
                # actuators_so.xml repeats <point> and <optimal_force>)
                if tag in first:
                    _warn_duplicate(ctx, elem, c, first[tag])
                    continue
                first[tag] = c
            hit = by_tag.get(tag)
            if hit is None and tag in v3_body and (c.text or "").strip():
                setattr(obj, v3_body[tag], body_path(c.text.strip()))
                continue
            if hit is not None:
                text = c.text
                if hit[1] == "curve" or text is not None and text.strip() or len(c):
                    setattr(obj, hit[0], _read_prop(c, hit[1], ctx))
            elif tag not in handled:
                rest.append(c)
        obj.unmodelled_xml = _unmodelled_to_text(rest)
        return obj
    return read


def _warn_duplicate(ctx, elem, c, kept):
    """Warn (once per element and tag) that the repeated property ``c`` of ``elem`` is ignored
    when its value differs from the first one's, ``kept`` (OpenSim reads the first)."""
    if (c.text or "").split() == (kept.text or "").split() and len(c) == len(kept) == 0:
        return
    warnings.warn(f"{ctx.path}: line {c.sourceline}: <{c.tag}> of {elem.tag} '{elem.get('name', '')}' "
                  f"given again; the first (line {kept.sourceline}) is used, as OpenSim does",
                  ArthronWarning, stacklevel=2)


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


# 3.x and 4.x names of one property: a default never fills one when the object has the other
_SAME_PROPERTY = {"isDisabled": "appliesForce", "appliesForce": "isDisabled"}


def apply_defaults(root) -> int:
    """Apply a document's ``<defaults>`` as OpenSim 4.6 does: each ``<T name="default">``
    child of a ``<defaults>`` block is the default object of class T, so every T element of
    the document takes the default's properties it does not give itself (e.g. the
    ``optimal_force`` 1000 of gait2354_CMC_Actuators.xml's default CoordinateActuator).
    Modifies ``root`` in place (copies of the default's property elements are appended) and
    returns the number of properties filled. (OpenSim also keeps the changed default objects
    for the rest of the process; arthron applies them to their own document only.)"""
    blocks = [d for d in root.iter("defaults")]
    if not blocks:
        return 0
    inside = {id(e) for d in blocks for e in d.iter()}
    n = 0
    for block in blocks:
        for dflt in block:
            if not isinstance(dflt.tag, str):
                continue
            props = [c for c in dflt if isinstance(c.tag, str)]
            for el in root.iter(dflt.tag):
                if id(el) in inside:
                    continue
                have = {c.tag for c in el if isinstance(c.tag, str)}
                for c in props:
                    if c.tag in have or _SAME_PROPERTY.get(c.tag) in have:
                        continue
                    el.append(copy.deepcopy(c))
                    n += 1
    return n
