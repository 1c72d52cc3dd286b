"""Reading the OpenSim 4.x model document (``Version="40000"``: sockets, PhysicalOffsetFrames
owned by joints), and the element readers that the 3.x/2.x reader (:mod:`arthron.io.osim_v3`)
shares with it: inertia, wrap objects, offset frames, coordinates, spatial transforms, paths
(GeometryPath and FunctionBasedPath), forces through the type registry, constraints.

Entry point: :func:`arthron.io.osim.read_osim`, which parses the file, picks the reader by the
document's ``Version`` and checks the tree.
"""
from __future__ import annotations

import copy
import posixpath
import warnings

import numpy as np
from lxml import etree

from ..errors import ArthronWarning, ModelFileError, UnsupportedFeature
from ..models import functions as fn
from .osim_functions import read_function_property
from .osim_upgrade import set_objects as _objects
from ..models.forces import UnmodelledForce
from ..models.wrap_objects import WRAP_TYPES, UnmodelledWrapObject
from ..models.model import (
    GROUND, JOINT_TYPES, Body, Constraint, ContactGeometry, Coordinate, Geometry,
    FunctionBasedPath, GeometryPath, Joint, Marker, Model, OffsetFrame, PathPoint, PathWrap, TransformAxis,
    body_path,
)
from .osim_xml import (
    _CONSTRAINT_WRITTEN, _ELLIPSOID_VECTORS, _JOINT_WRITTEN, _PATH_WRITTEN, ELLIPSOID_CONSTRAINT,
    ELLIPSOID_CONSTRAINT_SET, FORCE_SCALARS, PATH_POINT_TYPES, READERS, _Ctx, _bool, _child, _norm,
    _read_contact_parameters, _rest, _strip_comments, _text, _unmodelled_from_text, _unmodelled_to_text,
    read_force_groups,
)


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
    if any(abs(x) > _MAX_MASS for x in v.tolist()):      # (finite: ctx.floats, ctx.num)
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
        # one pass over the children: the first <scale_factors> and <mesh_file>, the rest kept
        sf = mesh = None
        rest = []
        for c in g.iterchildren(etree.Element):
            tag = c.tag
            if tag == "scale_factors":
                sf = c if sf is None else sf
            elif tag == "mesh_file":
                mesh = c if mesh is None else mesh
            else:
                rest.append(c)
        out.append(Geometry(name=g.get("name", ""), kind=g.tag,
                            mesh_file=mesh.text.strip() if mesh is not None and mesh.text is not None else None,
                            scale_factors=ctx.floats(sf, 3) if sf is not None and sf.text is not None
                            and sf.text.strip() else np.ones(3),
                            unmodelled_xml=_unmodelled_to_text(rest)))
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


def _ground_element(melem):
    """The model's ``<Ground>`` element: a child of ``<Model>`` as OpenSim 4 writes it, or
    inside the property's own element, ``<ground><Ground name="ground">...</Ground></ground>``,
    which OpenSim 4.6 also reads (the form of an object property named by its property name,
    ``Object::updateFromXMLNode``). None when the model has neither."""
    ground = _child(melem, "Ground")
    if ground is None:
        ground = _child(_child(melem, "ground"), "Ground")
    return ground


def read_v4(melem, ctx: _Ctx) -> Model:
    model = Model()
    model.force_groups = read_force_groups(melem)
    _read_common(melem, model, ctx)
    frames: dict[str, OffsetFrame] = {}
    ground = _ground_element(melem)
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
    for f, _ in _owned_frames(melem, "ConstraintSet", "constraint", ctx):
        frames[f.path] = f
    for f, _ in _owned_frames(melem, "ForceSet", "force", ctx, modelled_only=True):
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
    _read_constraints(melem, model, all_frames, ctx)
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
    for fe in _objects(_child(melem, "ForceSet")) if ctx.forces else ():
        f = _read_force(fe, all_frames, model, ctx, v4=True)
        model.forces[f.name] = f
    model.contact_geometry = _read_contact_geometry(melem, all_frames, ctx)
    # Everything else at the model level is kept verbatim.
    known = {"credits", "publications", "length_units", "force_units", "gravity", "Ground", "ground",
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
        if t == "PointOnLineConstraint":     # 4.x sockets (3.x line_body/follower_body upgraded)
            for k in ("line_body", "follower_body"):
                ref = _text(ce, f"socket_{k}") if v4 else _text(ce, k)
                if ref is not None:
                    props[k] = _resolve(ref if v4 else body_path(ref), cpath, all_frames, ctx, ce, k)
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
            rv = ctx.floats(rng, 2).tolist()       # finite
            if not all(x.is_integer() and abs(x) <= 1e9 for x in rv):
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
    fbp = _child(fe, "FunctionBasedPath") if pe is None else None
    if fbp is not None:
        path = _read_function_based_path(fbp, name, ctx)
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
    if _child(fe, "frames") is not None:    # read into model.frames (see _owned_frames)
        f.unmodelled_xml = _unmodelled_to_text(
            [e for e in _unmodelled_from_text(f.unmodelled_xml) if e.tag != "frames"])
    if isinstance(path, FunctionBasedPath):   # read into f.path (written from it)
        f.unmodelled_xml = _unmodelled_to_text(
            [e for e in _unmodelled_from_text(f.unmodelled_xml) if e.tag != "FunctionBasedPath"])
    f.path = path
    f.applies_force = applies
    return f


_FBP_FUNCTIONS = ("length_function", "moment_arm_functions", "lengthening_speed_function")


def _read_function_based_path(pe, force, ctx):
    """A ``FunctionBasedPath`` element as :class:`FunctionBasedPath`, or None (the element then
    stays in the force's kept XML, and :func:`_warn_function_based_paths` names the force and
    the reason) when one of its functions is of a type arthron cannot evaluate."""
    from .osim_functions import read_function
    cps = (_text(pe, "coordinate_paths") or "").split()
    fns = {}
    try:
        for tag in _FBP_FUNCTIONS:
            holder = _child(pe, tag)
            kids = [] if holder is None else [c for c in holder if isinstance(c.tag, str)]
            fns[tag] = [read_function(c, ctx.path) for c in kids]
    except UnsupportedFeature as e:
        ctx.fbp_unsupported = getattr(ctx, "fbp_unsupported", {})
        ctx.fbp_unsupported[force] = e.message
        return None
    return FunctionBasedPath(
        coordinates=[c.rstrip("/").split("/")[-1] for c in cps], coordinate_paths=cps,
        length_function=(fns["length_function"] or [None])[0],
        moment_arm_functions=fns["moment_arm_functions"],
        lengthening_speed_function=(fns["lengthening_speed_function"] or [None])[0],
        unmodelled_xml=_rest(pe, ("coordinate_paths",) + _FBP_FUNCTIONS),
        name=pe.get("name", ""))


def _classify_coordinates(model: Model):
    """Motion type of each coordinate as OpenSim derives it from the joint."""
    for j in model.joints.values():
        if j.type == "CustomJoint" and j.spatial_transform is not None:
            for c in j.coordinates:
                # As OpenSim 4.6's CustomJoint::constructCoordinates classifies them: over the six
                # axes in order, an axis the coordinate drives through a LinearFunction of slope
                # exactly ±1 makes it Rotational (rotation axes) or Translational (translation
                # axes; a later such axis wins); any other function makes it Coupled unless a
                # pure axis came before. So the lumbar coordinates that drive each vertebra by a
                # fraction (Full_Body_with_ball: slope 0.089) are Coupled: labelled ``_force`` in
                # ID, not converted from degrees in motion files. An axis without a function
                # counts as the identity; no axis at all: Coupled here (OpenSim's Undefined).
                mt = None
                for k, a in enumerate(j.spatial_transform[:6]):
                    if c.name not in a.coordinates:
                        continue
                    if a.function is None or (isinstance(a.function, fn.LinearFunction)
                                              and abs(a.function.slope) == 1.0):
                        mt = "rotational" if k < 3 else "translational"
                    elif mt is None:
                        mt = "coupled"
                c.motion_type = mt or "coupled"
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


def _owned_frames(melem, set_tag: str, owner: str, ctx, modelled_only: bool = False):
    """(frame, element) of the PhysicalOffsetFrames that the components of ``set_tag`` own in
    their ``<frames>``, parents not resolved yet: a WeldConstraint keeps its frames like a joint
    (``set_tag="ConstraintSet"``, owner ``constraint``); a 4.x BushingForce keeps the offsets of
    its two frames, as OpenSim's ``TwoFrameLinker`` and its 3.x upgrade do (``"ForceSet"``,
    owner ``force``, ``modelled_only``: unmodelled forces are written back verbatim, frames
    included). Their paths are ``/<set>/<component>/<frame>``; the writer puts them back."""
    prefix = "/constraintset" if set_tag == "ConstraintSet" else "/forceset"
    for ce in _objects(_child(melem, set_tag)):
        if modelled_only and ce.tag not in READERS:
            continue
        fr = _child(ce, "frames")
        for fe in fr if fr is not None else []:
            if fe.tag == "PhysicalOffsetFrame":
                name = ce.get("name", "")
                yield _read_offset_frame(fe, f"{prefix}/{name}", f"{owner}:{name}", ctx), fe

def _read_constraints(melem, model, all_frames, ctx):
    """The ConstraintSet (4.x form) and arthron's point-on-ellipsoid constraints."""
    for ce in _objects(_child(melem, "ConstraintSet")):
        model.constraints.append(_read_constraint(ce, all_frames, ctx, v4=True))
    for ce in _objects(_child(melem, ELLIPSOID_CONSTRAINT_SET)):
        if ce.tag == ELLIPSOID_CONSTRAINT:
            model.constraints.append(_read_ellipsoid_constraint(ce, all_frames, ctx))


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
