"""Reading OpenSim 3.x and 2.x model documents (bodies own their joints,
``location_in_parent``/``orientation_in_parent``, ``VisibleObject`` geometry), after OpenSim 4.6's
in-memory upgrade of each class (:func:`arthron.io.osim_upgrade.upgrade_model_element`).

Entry point: :func:`arthron.io.osim.read_osim`, which calls :func:`read_v3` for a document whose
``Version`` is below 40000. The element readers shared with the 4.x form (inertia, wrap objects,
coordinates, constraints, forces) are those of :mod:`arthron.io.osim_v4`.
"""
from __future__ import annotations

import warnings

import numpy as np
from lxml import etree

from ..errors import ArthronWarning
from ..models.model import GROUND, JOINT_TYPES, Body, Geometry, Joint, Marker, Model, OffsetFrame, body_path
from .osim_upgrade import reversed_joint, set_objects as _objects, upgrade_model_element
from .osim_v4 import (
    _classify_coordinates, _joint_params, _owned_frames, _read_common, _read_constraints,
    _read_contact_geometry, _read_coordinate, _read_force, _read_inertia_v4, _read_spatial_transform,
    _read_wraps, _resolve,
)
from .osim_xml import (
    _Ctx, _bool, _child, _geometry_elems, _sub, _text, _unmodelled_from_text, _unmodelled_to_text,
    read_force_groups,
)


def read_v3(melem, ctx: _Ctx, version: int = 0) -> Model:
    """The :class:`Model` of a 3.x/2.x ``<Model>`` element ``melem`` (upgraded in place first);
    errors as :func:`arthron.io.osim.read_osim`."""
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
    renamed = []
    for child_name, je in joints_raw:
        if je.tag not in JOINT_TYPES:
            raise ctx.err(f"unknown joint type <{je.tag}>", je)
        jname = je.get("name", "")
        if jname in model.joints:
            # 3.x bodies own their joints, so two may share a name (the 'back' PinJoint and
            # WeldJoint of osim-rl's gait9dof18musc_pros); OpenSim 4.6 makes the names in its
            # JointSet unique in file order as Component::finalizeFromProperties does: name_0,
            # name_1, ... (the first not taken)
            k = 0
            while f"{jname}_{k}" in model.joints:
                k += 1
            renamed.append(f"'{jname}' (child body '{child_name}', line {je.sourceline}) -> '{jname}_{k}'")
            jname = f"{jname}_{k}"
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
    if renamed:
        warnings.warn(f"{ctx.path}: joint names repeated; renamed as OpenSim 4.6 does: " + "; ".join(renamed),
                      ArthronWarning)
    _read_v3_constraints(melem, model, frames, all_frames, ctx)
    for me in _objects(_child(melem, "MarkerSet")):
        bn = _text(me, "body", "ground")
        model.markers[me.get("name", "")] = Marker(
            name=me.get("name", ""), parent_frame=_resolve(body_path(bn), "/", all_frames, ctx, me),
            location=ctx.floats(_child(me, "location"), 3) if _child(me, "location") is not None
            else np.zeros(3), fixed=_bool(me, "fixed"))
    for f, fe in _owned_frames(melem, "ForceSet", "force", ctx, modelled_only=True):     # upgraded two-frame linkers (BushingForce)
        f.parent = _resolve(f.parent, f.path, all_frames, ctx, fe)
        model.frames[f.path] = f
        all_frames.add(f.path)
    for fe in _objects(_child(melem, "ForceSet")) if ctx.forces else ():
        f = _read_force(fe, all_frames, model, ctx, v4=False)
        model.forces[f.name] = f
    model.force_groups = read_force_groups(melem)
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
    for f, fe in _owned_frames(melem, "ConstraintSet", "constraint", ctx):
        f.parent = _resolve(f.parent, f.path, all_frames, ctx, fe)
        frames[f.path] = f
    model.frames = frames
    all_frames |= set(frames)
    _classify_coordinates(model)
    _read_constraints(melem, model, all_frames, ctx)
