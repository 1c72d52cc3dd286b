"""Writing OpenSim 4.x model files (``Version="40000"``) from :class:`arthron.models.model.Model`:
:func:`write_osim`, :func:`write_osims`, :func:`model_to_xml`, :func:`force_to_xml`. The
document written means the same as the model (same bodies, frames, joints, coordinates,
constraints, markers, forces); components kept verbatim are written back as they were read."""
from __future__ import annotations

import copy
import warnings
from pathlib import Path

from lxml import etree

from ..errors import ArthronWarning, DataFileError, ModelFileError
from ..models import functions as fn
from .files import atomic_write, check_output, output_path
from .osim_functions import function_to_xml
from ..models.model import GROUND, Constraint, FunctionBasedPath, GeometryPath, Joint, Model, OffsetFrame
from .osim_xml import (
    _ELLIPSOID_VECTORS, ELLIPSOID_CONSTRAINT, ELLIPSOID_CONSTRAINT_SET, WRAPS_WRITERS, WRITERS,
    _element, _fmt, _function_holder, _geometry_elems, _set, _sub, _unmodelled_from_text,
)

__all__ = ["write_osim", "write_osims", "model_to_xml", "force_to_xml"]


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
    owned = [fr for fr in model.frames.values() if fr.owner == f"force:{f.name}"]
    if owned:           # the offset frames of a BushingForce (OpenSim's TwoFrameLinker)
        fe = _set(e, "frames", None)
        for fr in owned:
            fe.append(_frame_elem(fr))
    if isinstance(f.path, FunctionBasedPath):
        e.append(_function_based_path_elem(f.path, model))
    elif f.path is not None:
        e.append(_path_elem(f.path, model))
    return e


def _function_based_path_elem(p: FunctionBasedPath, model: Model):
    """An OpenSim 4.5+ ``<FunctionBasedPath>`` from its fields (kept properties after them).
    The coordinates are written as the component paths read (``coordinate_paths``) when they
    still name the same coordinates, else as ``/jointset/<joint>/<coordinate>``."""
    e = etree.Element("FunctionBasedPath", name=p.name) if p.name else etree.Element("FunctionBasedPath")
    same = [c.rstrip("/").split("/")[-1] for c in p.coordinate_paths] == list(p.coordinates)
    paths = p.coordinate_paths if same else [
        f"/jointset/{model.coordinates[c].joint}/{c}" if c in model.coordinates else c
        for c in p.coordinates]
    _sub(e, "coordinate_paths", " ".join(paths))
    for tag, fns in (("length_function", [p.length_function]),
                     ("moment_arm_functions", list(p.moment_arm_functions)),
                     ("lengthening_speed_function", [p.lengthening_speed_function])):
        h = _sub(e, tag)
        for f in fns:
            if f is not None:
                h.append(function_to_xml(f))
    for c in _unmodelled_from_text(p.unmodelled_xml):
        e.append(c)
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
        for k in ("line_body", "follower_body"):        # PointOnLineConstraint
            if k in p:
                _set(e, f"socket_{k}", p[k])
        for tag in ("location_body_1", "location_body_2", "line_direction_vec", "point_on_line",
                    "point_on_follower", "constant_distance"):
            if tag in p:
                _set(e, tag, _fmt(p[tag]))
    return e


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


def _same(a: Model, b: Model, *fields) -> bool:
    return all(getattr(a, f) is getattr(b, f) for f in fields)


def _object_set(m, reuse: dict, tag: str, name: str):
    """Append the set ``tag`` to the model element: a copy of the identical one of a model
    written alongside (``reuse``; returns None, nothing to fill) or a new ``<tag name=...>``
    whose ``<objects>`` element is returned for the caller to fill."""
    if tag in reuse:
        m.append(copy.deepcopy(reuse[tag]))
        return None
    return _sub(_sub(m, tag, name=name), "objects")


def _components(parent, model: Model, owner: str, verbatim: str | None = None) -> None:
    """``<components>`` of ``parent``: the offset frames ``owner`` owns, then the verbatim
    components kept at ``verbatim`` (only when there is any)."""
    frames = [f for f in model.frames.values() if f.owner == owner]
    others = [e for s, e in model.verbatim if s == verbatim] if verbatim else []
    if frames or others:
        comps = _sub(parent, "components")
        for f in frames:
            comps.append(_frame_elem(f))
        for o in others:
            comps.append(copy.deepcopy(o))


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
    _components(ground, model, "ground")
    ag = _sub(ground, "attached_geometry")
    for g in _geometry_elems(model.ground_geometry):
        ag.append(g)
    _wrapset(ground, model.ground_wrap_objects)
    bobjs = _object_set(m, reuse, "BodySet", "bodyset")
    for b in (model.bodies.values() if bobjs is not None else ()):
        be = etree.SubElement(bobjs, "Body", name=b.name)
        _components(be, model, f"body:{b.name}", f"body:{b.name}")
        ag = _sub(be, "attached_geometry")
        for g in _geometry_elems(b.geometry):
            ag.append(g)
        _wrapset(be, b.wrap_objects)
        _sub(be, "mass", repr(float(b.mass)))
        _sub(be, "mass_center", _fmt(b.mass_center))
        I = b.inertia
        _sub(be, "inertia", _fmt([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]))
    jobjs = _object_set(m, reuse, "JointSet", "jointset")
    for j in (model.joints.values() if jobjs is not None else ()):
        jobjs.append(_joint_elem(model, j))
    cs = _sub(m, "ConstraintSet", name="constraintset")
    cobjs = _sub(cs, "objects")
    ellipsoidal = [c for c in model.constraints if c.type == ELLIPSOID_CONSTRAINT]
    for c in model.constraints:
        if c.type != ELLIPSOID_CONSTRAINT:
            cobjs.append(_constraint_elem(c, model))
    if ellipsoidal:
        _ellipsoid_constraints_elem(m, ellipsoidal)
    fobjs = _object_set(m, reuse, "ForceSet", "forceset")
    if fobjs is not None:
        for f in model.forces.values():
            fobjs.append(_force_elem(f, model))
        if model.force_groups:
            groups = _sub(fobjs.getparent(), "groups")
            for name, members in model.force_groups.items():
                _sub(_sub(groups, "ObjectGroup", name=name), "members", " ".join(members))
    mobjs = _object_set(m, reuse, "MarkerSet", "markerset")
    for mk in (model.markers.values() if mobjs is not None else ()):
        me = _element("Marker", mk.name, mk.unmodelled_xml)
        _set(me, "socket_parent_frame", mk.parent_frame)
        _set(me, "location", _fmt(mk.location))
        _set(me, "fixed", str(bool(mk.fixed)).lower())
        mobjs.append(me)
    _components(m, model, "model", "components")
    for s_, e in model.verbatim:
        if s_ == "model":
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
    path = output_path(path, "write_osim", "model")
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
