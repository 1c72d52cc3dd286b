"""The OpenSim 2.x/3.x → 4.x upgrade of a model document, class by class.

OpenSim 4.6 reads a pre-4.0 ``.osim`` file by rewriting each element in memory before it reads
its properties (each class's ``updateFromXMLNode``, keyed by the document's ``Version``).
:func:`upgrade_model_element` applies the same rewriting to the ``<Model>`` element of a pre-4.0
document, before :mod:`arthron.io.osim` reads it, so that the components arthron models are read
with their 4.x meaning and the components it keeps verbatim (``UnmodelledForce.raw``,
``Model.verbatim``) are written back in a form OpenSim 4.6 loads under ``Version="40000"``.

What is done, per class (OpenSim's version step in brackets):

* every component name (``Object``, files before 4.0): whitespace is removed, as OpenSim does
  when it reads an old file; the characters OpenSim 4.x forbids in names besides whitespace
  (``\\ / * +``), which make OpenSim itself refuse the original, become ``_``. Every reference
  to a renamed body, coordinate, wrap object, contact geometry, actuator or force is updated,
  and one :class:`~arthron.errors.ArthronWarning` lists the renames.
* ``Muscle`` and all its subclasses (``Muscle::updateFromXMLNode``): before 20302,
  ``MusclePointSet``/``MuscleWrapSet`` become the ``GeometryPath``'s ``PathPointSet`` /
  ``PathWrapSet`` and ``pennation_angle`` becomes ``pennation_angle_at_optimal``; before 30513,
  ``min_control`` equal to 0 and ``max_control`` equal to 1 are removed so that the concrete
  muscle's default applies (for ``Thelen2003Muscle`` and ``Millard2012EquilibriumMuscle`` the
  default ``min_control`` is their default ``minimum_activation``, 0.01; a file that keeps 0
  fails to load in OpenSim 4 with "Minimum control cannot be less than minimum activation").
* ``PointToPointSpring`` (``body1``/``body2`` → sockets ``socket_body1``/``socket_body2``),
  ``PrescribedForce`` (``body`` → ``socket_frame``): body names become absolute frame paths.
* ``BushingForce``, ``FunctionBasedBushingForce``, ``ExpressionBasedBushingForce`` and the
  constraints ``WeldConstraint`` (``TwoFrameLinker::updateFromXMLNode``): ``body_1``/``body_2``
  with ``location_body_k``/``orientation_body_k`` become ``socket_frame1``/``socket_frame2``:
  the body itself when its offset is zero, else a ``PhysicalOffsetFrame`` named
  ``<body>_offset`` in the component's ``<frames>``.
* ``PointConstraint``, ``ConstantDistanceConstraint`` (``body_1``/``body_2`` →
  ``socket_body_1``/``socket_body_2``), ``PointOnLineConstraint`` (``line_body``/
  ``follower_body`` → ``socket_line_body``/``socket_follower_body``).
* every force and constraint: ``isDisabled`` becomes ``appliesForce`` / ``isEnforced``
  (negated).
* ``Controller`` (``PrescribedController`` ...): ``isDisabled`` → ``enabled`` (negated),
  ``actuator_list`` → ``socket_actuators`` (ForceSet paths).
* ``ContactGeometry`` (``ContactHalfSpace``, ``ContactSphere``, ``ContactMesh`` ...):
  ``body_name`` → ``socket_frame``; ``display_preference`` 0 → ``Appearance/visible`` false
  (other display preferences are dropped, as OpenSim's own printout of the upgraded model does).
* joints with ``<reverse>true`` (3.x): OpenSim swaps the joint's parent and child frames;
  arthron re-expresses the joint as a forward joint with the inverse transform where that is
  exact (:func:`reversed_joint`, applied by the 3.x reader).
* ``Body``: OpenSim builds ``inertia`` from ``inertia_xx`` ..., the joints' offset frames from
  ``location_in_parent``/``orientation_in_parent``/``location``/``orientation``, the
  two-frame linkers' frames and the meshes of ``DisplayGeometry`` (``scale_factors``,
  ``transform``) by printing the numbers with 6 significant digits; they are re-printed the
  same way here, so that arthron's reading of a 3.x file equals OpenSim's (tested to 1e-9).
* the remaining 3.x structure is read by :mod:`arthron.io.osim` (``_read_v3``): joints owned by
  bodies (offset frames ``<body>_offset`` owned by the joint), ``DisplayGeometry`` → ``Mesh``
  (on a ``<body>_geom_frame_<k>`` offset frame when transformed), markers' and path points'
  ``body`` → frame sockets, conditional/moving path point coordinates, coordinates'
  ``prescribed_function``, ForceSet groups, functions in their 3.x property wrappers.
* wrap objects, ``ProbeSet`` and ``ComponentSet`` elements are kept as they are
  (the last two with a warning when not empty).
* the 3.x property comments (descriptions of the old properties) and indentation are dropped.

Classes not listed keep their element unchanged; ``CoordinateLimitForce``,
``SpringGeneralizedForce``, ``CoordinateActuator``, ``PointActuator``, ``TorqueActuator``,
``ExpressionBasedPointToPointForce``, ``ExternalForce``, ``HuntCrossleyForce`` and
``ElasticFoundationForce`` name their coordinates, bodies and contact geometry the same way in
4.6 (checked against OpenSim 4.6's reading of 3.x files in ``tests/test_convert_legacy.py``).
"""
from __future__ import annotations

import re
import warnings

import numpy as np
from lxml import etree

from ..errors import ArthronWarning, UnsupportedFeature
from ..models import functions as fn
from ..models.model import TransformAxis, body_path

__all__ = ["upgrade_model_element", "reversed_joint", "valid_name", "INVALID_NAME_CHARS"]

#: Characters OpenSim 4.x refuses in component names (``Component::finalizeFromProperties``).
INVALID_NAME_CHARS = "\\/*+"

# Elements whose text is the name of one component (body, coordinate, wrap object ...).
_SCALAR_REFS = {
    "parent_body", "body", "body_name", "body1", "body2", "body_1", "body_2", "line_body",
    "follower_body", "bodyA", "bodyB", "applied_to_body", "point_expressed_in_body",
    "force_expressed_in_body", "coordinate", "dependent_coordinate_name", "x_coordinate",
    "y_coordinate", "z_coordinate", "wrap_object", "actuator", "joint", "frame",
}
# Elements whose text is a whitespace-separated list of names.
_LIST_REFS = {"coordinates", "independent_coordinate_names", "geometry", "actuator_list",
              "members", "coordinate_names"}

_MUSCLE_TAG = re.compile(r"Muscle(_Deprecated)?$")
_TWO_FRAME_LINKERS = ("BushingForce", "FunctionBasedBushingForce", "ExpressionBasedBushingForce",
                      "WeldConstraint")
_TWO_BODY_SOCKETS = {
    "PointToPointSpring": (("body1", "socket_body1"), ("body2", "socket_body2")),
    "PrescribedForce": (("body", "socket_frame"),),
    "PointConstraint": (("body_1", "socket_body_1"), ("body_2", "socket_body_2")),
    "ConstantDistanceConstraint": (("body_1", "socket_body_1"), ("body_2", "socket_body_2")),
    "PointOnLineConstraint": (("line_body", "socket_line_body"),
                              ("follower_body", "socket_follower_body")),
}


def valid_name(name: str) -> str:
    """A component name OpenSim 4.x accepts: whitespace removed (what OpenSim does with names of
    pre-4.0 files), ``\\ / * +`` replaced by ``_``."""
    out = "".join(ch for ch in name if not ch.isspace())
    for ch in INVALID_NAME_CHARS:
        out = out.replace(ch, "_")
    return out


def set_objects(set_elem):
    """Children of a ``<XxxSet><objects>`` (or of the set itself, for loose 3.x files)."""
    if set_elem is None:
        return []
    objs = set_elem.find("objects")
    container = objs if objs is not None else set_elem
    return [c for c in container.iterchildren(etree.Element) if c.tag not in ("groups", "objects")]


def _text(elem, tag):
    c = elem.find(tag)
    return None if c is None or c.text is None else c.text.strip()


def _new(tag, text=None, **attrib):
    e = etree.Element(tag, **attrib)
    if text is not None:
        e.text = text
    return e


def _replace(elem, old, new_elem):
    """Put ``new_elem`` where child ``old`` is (or append it), removing ``old``."""
    c = elem.find(old)
    if c is None:
        elem.append(new_elem)
    else:
        new_elem.tail = c.tail
        elem.replace(c, new_elem)


# ----------------------------------------------------------------------------- names
def _rename_components(melem, path):
    """Make every ``name`` valid for OpenSim 4.x and update the references to renamed names.
    Returns the list of (old, new)."""
    renames: dict[str, str] = {}
    for e in melem.iter():
        if not isinstance(e.tag, str):
            continue
        n = e.get("name")
        if n is None:
            continue
        v = valid_name(n)
        if v != n:
            parent = e.getparent()
            siblings = {c.get("name") for c in (parent if parent is not None else [])
                        if isinstance(c.tag, str) and c is not e}
            base, k = v, 1
            while v in siblings:
                v = f"{base}_{k}"
                k += 1
            e.set("name", v)
            if n in renames and renames[n] != v:
                warnings.warn(f"{path}: '{n}' names several components renamed differently "
                              f"('{renames[n]}', '{v}'); references use the first",
                              ArthronWarning)
            else:
                renames.setdefault(n, v)
    if not renames:
        return []
    for e in melem.iter():
        if not isinstance(e.tag, str) or len(e) or e.text is None:
            continue
        t = e.text.strip()
        if e.tag in _SCALAR_REFS and t in renames:
            e.text = renames[t]
        elif e.tag in _LIST_REFS:
            toks = t.split()
            if any(x in renames for x in toks):
                e.text = " ".join(renames.get(x, x) for x in toks)
    pairs = sorted(renames.items())
    warnings.warn(f"{path}: {len(pairs)} component name(s) OpenSim 4 forbids were changed: "
                  + ", ".join(f"'{a}' -> '{b}'" for a, b in pairs), ArthronWarning)
    return pairs


# ----------------------------------------------------------------------------- classes
def _upgrade_muscle(e, version):
    if version <= 20301:
        gp = e.find("GeometryPath")
        if gp is not None:
            for old, new in (("MusclePointSet", "PathPointSet"), ("MuscleWrapSet", "PathWrapSet")):
                for c in gp.findall(old):
                    c.tag = new
        else:
            sets = [c for c in e if c.tag in ("MusclePointSet", "MuscleWrapSet")]
            if sets:
                gp = etree.SubElement(e, "GeometryPath")
                for c in sets:
                    e.remove(c)
                    c.tag = "PathPointSet" if c.tag == "MusclePointSet" else "PathWrapSet"
                    gp.append(c)
        for c in e.findall("pennation_angle"):
            c.tag = "pennation_angle_at_optimal"
    if version < 30513:
        for tag, default in (("min_control", 0.0), ("max_control", 1.0)):
            c = e.find(tag)
            if c is not None:
                try:
                    v = float((c.text or "").strip())
                except ValueError:
                    continue
                if abs(v - default) <= 1e-12 * max(1.0, abs(default)):
                    e.remove(c)


def _applies(e, tag_new):
    """``isDisabled`` → ``appliesForce``/``isEnforced`` (negated)."""
    c = e.find("isDisabled")
    if c is None:
        return
    disabled = (c.text or "").strip().lower() in ("true", "1")
    n = _new(tag_new, "false" if disabled else "true")
    _replace(e, "isDisabled", n)


def _frames_of(e):
    fr = e.find("frames")
    if fr is None:
        fr = etree.SubElement(e, "frames")
    return fr


def _upgrade_two_frame_linker(e):
    if e.find("body_1") is None and e.find("body_2") is None:
        return
    for k in ("1", "2"):
        body = _text(e, f"body_{k}")
        loc = _g6(_text(e, f"location_body_{k}") or "0 0 0")
        ori = _g6(_text(e, f"orientation_body_{k}") or "0 0 0")
        for tag in (f"location_body_{k}", f"orientation_body_{k}"):
            c = e.find(tag)
            if c is not None:
                e.remove(c)
        if body is None:
            continue
        try:
            zero = all(float(x) == 0.0 for x in (loc + " " + ori).split())
        except ValueError:      # malformed: kept in a frame, whose reading names the element
            zero = False
        if zero:
            ref = body_path(body)
        else:
            ref = f"{body}_offset"
            names = {f.get("name") for f in _frames_of(e)}
            if ref in names:
                ref = f"{body}_offset_{k}"
            f = etree.SubElement(_frames_of(e), "PhysicalOffsetFrame", name=ref)
            etree.SubElement(f, "socket_parent").text = body_path(body)
            etree.SubElement(f, "translation").text = loc
            etree.SubElement(f, "orientation").text = ori
        _replace(e, f"body_{k}", _new(f"socket_frame{k}", ref))
    # 4.x order: sockets before frames
    fr = e.find("frames")
    if fr is not None:
        e.remove(fr)
        s2 = e.find("socket_frame2") if e.find("socket_frame2") is not None else e.find("socket_frame1")
        s2.addnext(fr)


def _upgrade_body_sockets(e, pairs):
    for old, new in pairs:
        b = _text(e, old)
        if b is not None and e.find(new) is None:
            _replace(e, old, _new(new, body_path(b)))


def _upgrade_force(e, version):
    _applies(e, "appliesForce")
    if _MUSCLE_TAG.search(e.tag):
        _upgrade_muscle(e, version)
    if e.tag in _TWO_FRAME_LINKERS:
        _upgrade_two_frame_linker(e)
    if e.tag in _TWO_BODY_SOCKETS:
        _upgrade_body_sockets(e, _TWO_BODY_SOCKETS[e.tag])


def _upgrade_constraint(e):
    _applies(e, "isEnforced")
    if e.tag in _TWO_FRAME_LINKERS:
        _upgrade_two_frame_linker(e)
    if e.tag in _TWO_BODY_SOCKETS:
        _upgrade_body_sockets(e, _TWO_BODY_SOCKETS[e.tag])


def _upgrade_controller(e):
    """Controller (3.x → 4.x): ``isDisabled`` → ``enabled``; ``actuator_list`` (names) →
    list socket ``socket_actuators`` (ForceSet paths)."""
    c = e.find("isDisabled")
    if c is not None:
        disabled = (c.text or "").strip().lower() in ("true", "1")
        _replace(e, "isDisabled", _new("enabled", "false" if disabled else "true"))
    names = _text(e, "actuator_list")
    if names is not None and e.find("socket_actuators") is None:
        paths = " ".join(f"/forceset/{n}" for n in names.split())
        _replace(e, "actuator_list", _new("socket_actuators", paths))


def _upgrade_contact_geometry(e):
    b = _text(e, "body_name")
    if b is not None:
        _replace(e, "body_name", _new("socket_frame", body_path(b)))
    dp = e.find("display_preference")
    if dp is not None:
        hidden = (dp.text or "").strip() == "0"
        e.remove(dp)
        if hidden and e.find("Appearance") is None:
            a = etree.SubElement(e, "Appearance")
            etree.SubElement(a, "visible").text = "false"


def _g6(text: str) -> str:
    """Numbers as OpenSim's upgrade re-prints them (C++ stream default: 6 significant digits)."""
    try:
        return " ".join("%g" % float(x) for x in text.split())
    except ValueError:
        return text


def _reprint(elem, tags):
    for tag in tags:
        c = elem.find(tag)
        if c is not None and c.text is not None and len(c) == 0:
            c.text = _g6(c.text)


def _upgrade_body(be):
    """Body (3.x → 4.0): OpenSim builds ``inertia`` from ``inertia_xx`` ..., the joint's
    ``PhysicalOffsetFrame`` translations/orientations from ``location_in_parent`` ... and the
    display meshes from ``DisplayGeometry`` by printing the numbers, so they keep 6 significant
    digits in memory; the same is done here so that arthron's reading equals OpenSim's."""
    _reprint(be, ("inertia_xx", "inertia_yy", "inertia_zz", "inertia_xy", "inertia_xz", "inertia_yz"))
    jel = be.find("Joint")
    for je in jel if jel is not None else []:
        if isinstance(je.tag, str):
            _reprint(je, ("location_in_parent", "orientation_in_parent", "location", "orientation"))
    # DisplayGeometry → Mesh (and its offset frame): scale factors and transform re-printed too
    for dg in be.iterfind("VisibleObject/GeometrySet/objects/DisplayGeometry"):
        _reprint(dg, ("scale_factors", "transform"))


def _strip_layout(melem):
    """Drop comments (3.x property descriptions, wrong for the 4.x properties) and
    whitespace-only text, so that the components kept verbatim are written pretty-printed."""
    for c in list(melem.iter(etree.Comment)):
        parent = c.getparent()
        if parent is not None:
            if c.tail and c.tail.strip():
                prev = c.getprevious()
                if prev is not None:
                    prev.tail = (prev.tail or "") + c.tail
                else:
                    parent.text = (parent.text or "") + c.tail
            parent.remove(c)
    for e in melem.iter():
        if len(e) and e.text is not None and not e.text.strip():
            e.text = None
        if e.tail is not None and not e.tail.strip():
            e.tail = None


def upgrade_model_element(melem, version: int, path=None) -> list:
    """Rewrite the ``<Model>`` element of a pre-4.0 document (``version`` < 40000) in place
    into the meaning OpenSim 4.6 gives it in memory (see the module docstring).

    Returns the (old, new) component renames. Emits one ArthronWarning listing them.
    """
    _strip_layout(melem)
    renames = _rename_components(melem, path)
    for be in set_objects(melem.find("BodySet")):
        _upgrade_body(be)
    for e in set_objects(melem.find("ForceSet")):
        _upgrade_force(e, version)
    for e in set_objects(melem.find("ConstraintSet")):
        _upgrade_constraint(e)
    for e in set_objects(melem.find("ContactGeometrySet")):
        _upgrade_contact_geometry(e)
    for e in set_objects(melem.find("ControllerSet")):
        _upgrade_controller(e)
    return renames


# ----------------------------------------------------------------------------- reversed joints
def _is_zero_axis(a) -> bool:
    f = a.function
    if a.coordinates:
        return False
    return f is None or (isinstance(f, fn.Constant) and f.constant == 0.0)


def _negated(f):
    if isinstance(f, fn.LinearFunction):
        return fn.LinearFunction(-f.slope, -f.intercept)
    if isinstance(f, fn.Constant):
        return fn.Constant(-f.constant)
    return fn.scale_function(f, -1.0)


def _axis(name, coords, axis, f):
    return TransformAxis(name, list(coords), np.array(axis, float), f)


def reversed_joint(jtype: str, axes, coordinates, jname: str, path=None):
    """The forward joint equal to a 3.x joint with ``<reverse>true`` (whose transform gives the
    parent joint frame in the child joint frame), as (joint type, six TransformAxis or None).

    OpenSim 4 upgrades such a joint by swapping its parent and child frames and lets Simbody
    build a reversed mobilizer; arthron re-expresses it as a forward joint with the inverse
    transform, exact when the inverse is again a CustomJoint transform: a ``WeldJoint``; a
    ``PinJoint`` or ``SliderJoint`` (the coordinate's function negated); a ``GimbalJoint``,
    ``UniversalJoint`` or ``CustomJoint`` without translations (rotation axes in reverse order,
    functions negated); a ``CustomJoint`` without rotations (translation functions negated).
    ``BallJoint`` and ``FreeJoint`` (angular-velocity speeds, or rotation with translation) are
    not re-expressed.

    Raises UnsupportedFeature for the other reversed joints.
    """
    if jtype == "WeldJoint":
        return jtype, None
    if jtype in ("PinJoint", "SliderJoint") and len(coordinates) == 1:
        c = coordinates[0].name
        neg = fn.LinearFunction(-1.0, 0.0)
        zero = fn.Constant(0.0)
        if jtype == "PinJoint":
            rot = [_axis("rotation1", [c], (0, 0, 1), neg), _axis("rotation2", [], (1, 0, 0), zero),
                   _axis("rotation3", [], (0, 1, 0), zero)]
            tr = [_axis(f"translation{k + 1}", [], e, fn.Constant(0.0))
                  for k, e in enumerate(((1, 0, 0), (0, 1, 0), (0, 0, 1)))]
        else:
            rot = [_axis(f"rotation{k + 1}", [], e, fn.Constant(0.0))
                   for k, e in enumerate(((1, 0, 0), (0, 1, 0), (0, 0, 1)))]
            tr = [_axis("translation1", [c], (1, 0, 0), neg), _axis("translation2", [], (0, 1, 0), zero),
                  _axis("translation3", [], (0, 0, 1), zero)]
        return "CustomJoint", rot + tr
    if jtype in ("GimbalJoint", "UniversalJoint") and len(coordinates) == (3 if jtype == "GimbalJoint" else 2):
        # body-fixed X-Y(-Z) rotations of the joint frames (Simbody's Gimbal / Universal)
        cn = [c.name for c in coordinates] + [None]
        axes = [_axis(f"rotation{k + 1}", [cn[k]] if cn[k] else [], e,
                      fn.LinearFunction(1.0, 0.0) if cn[k] else fn.Constant(0.0))
                for k, e in enumerate(((1, 0, 0), (0, 1, 0), (0, 0, 1)))]
        axes += [_axis(f"translation{k + 1}", [], e, fn.Constant(0.0))
                 for k, e in enumerate(((1, 0, 0), (0, 1, 0), (0, 0, 1)))]
        jtype = "CustomJoint"
    if jtype == "CustomJoint" and axes is not None:
        rot, tr = axes[:3], axes[3:]
        if all(_is_zero_axis(a) for a in tr):
            new_rot = [_axis(f"rotation{k + 1}", a.coordinates, a.axis,
                             _negated(a.function if a.function is not None else fn.Constant(0.0)))
                       for k, a in enumerate(reversed(rot))]
            return "CustomJoint", new_rot + list(tr)
        if all(_is_zero_axis(a) for a in rot):
            new_tr = [_axis(a.name, a.coordinates, a.axis,
                            _negated(a.function if a.function is not None else fn.Constant(0.0)))
                      for a in tr]
            return "CustomJoint", list(rot) + new_tr
    raise UnsupportedFeature(
        f"reversed joint '{jname}' ({jtype}, 3.x <reverse>true): its inverse transform is not a "
        "joint transform arthron can write (supported: WeldJoint, PinJoint, SliderJoint, "
        "GimbalJoint, UniversalJoint, CustomJoint with rotations only or translations only)", path, f"joint '{jname}'")
