"""Muscle and ligament paths: lengths, lengthening speeds, moment arms and path forces.

A path (OpenSim ``GeometryPath``) is an ordered list of path points on bodies:

* ``PathPoint``: fixed on its frame;
* ``ConditionalPathPoint``: part of the path only while its coordinate lies in ``range``
  (bounds widened by 1e-5, as OpenSim's ``isActive`` does);
* ``MovingPathPoint``: its x, y, z in the frame are functions of coordinates;

plus ``PathWrap`` entries that let the path wrap over wrap objects (WrapSphere, WrapCylinder,
WrapEllipsoid, WrapTorus, with or without a quadrant; see :mod:`arthron.geometry.wrapping`).
The path is rebuilt per frame as OpenSim 4.6's ``GeometryPath::computePath`` does it: active
points in order, then each wrap object tried on every segment of its point range; a segment
that penetrates the object is taken at once ("mandatory"), otherwise the wrap that lengthens
the path least; with two or more wrap objects up to 8 passes are made until the length
changes by less than 0.5 mm (with OpenSim's order swap after the first pass, its cylinder
tangent correction, and its use of the tangent points' ground positions cached at their first
use). The obstacle-set sphere, cylinder and double cylinder (WrapSphereObst, WrapCylinderObst,
WrapDoubleCylinderObst: Garner & Pandy's published geometry, which OpenSim 4.6 cannot
evaluate) wrap like optional wraps. A double cylinder's U cylinder is the wrap object's frame
on its body, its V cylinder a frame on another body (``wrapVcylHomeBody``,
``translationVcyl``, ``xyz_body_rotationVcyl``); the path gets up to four tangent points, q and
Q on U's body and T and t on V's body, so that each body receives the pulls of its own tangent
points (OpenSim's class, which cannot be loaded in 4.6, keeps only q and t, both on U's body,
with everything between them as the wrap length).

Moment arms are computed analytically from the path's unit tension: it pulls each node (path
point or tangent point) towards its neighbours on other bodies; the net pull ``f_k`` on node
``k`` gives the generalized force ``Σ_k f_k · ∂p_k/∂q̇`` (``∂p_k/∂q̇`` from the velocity map of
the node fixed on its body, plus the motion of a MovingPathPoint on its body), which is
``-∂l/∂q`` (:func:`moment_arms` with ``coupled=False``). :func:`moment_arms` returns by
default what OpenSim's ``computeMomentArm`` returns: the same generalized force per unit
*generalized speed* (Simbody's speeds are angular velocities for Ellipsoid/Scapulothoracic
joints, :func:`speed_map`) combined along the coupling vector of the enforced constraints
(:func:`coupling_vectors`). Tangent points slide on the wrap surface, which does not change the
length to first order, so they are treated as fixed on the wrap object's body, as OpenSim does.

Agreement with OpenSim 4.6 (``tests/test_paths.py``): lengths and moment arms to ~1e-14 on
Gait2354 (54 muscles, conditional and moving points), arm26 (including TRIlong over two
cylinders and an ellipsoid), all 33 Thoracoscapular muscles (paths over one to three wrap
objects, among them Infraspinatus, Teres major, Subscapularis and Supraspinatus_A over a
cylinder and another object) over whole motions, and all 120 Lenhart2015 muscles and
ligaments.

Everything is vectorized over frames: coordinates ``q`` are (T, nq) in model order (radians,
metres); results are (T, n_paths) or (T, n_paths, nq). There is a loop over paths and over a
path's points, never over frames.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ArthronWarning, ModelFileError, UnsupportedFeature
from ..geometry import wrapping as _wr
from .kinematics import Kinematics, Tree, _euler_xyz_rate_matrix, forward_kinematics, velocity_map
from ..models.model import GROUND, Model, rotation_xyz

__all__ = ["PathSet", "compile_paths", "path_lengths", "moment_arms", "lengthening_speeds",
           "path_generalized_forces", "path_body_forces", "PathLoads", "PathState",
           "compute_paths", "moment_arms_excursion", "coupling_vectors", "speed_map"]

_COND_TOL = 1e-5
_WRAP_TOL = 0.0005  # m: OpenSim stops iterating over several wrap objects below this change


# ---------------------------------------------------------------------------------- compile
@dataclass
class _Wrap:
    name: str               # PathWrap name
    obj: str                # wrap object name
    obj_id: int             # index of the wrap object in PathSet.wrap_objects
    start: int              # 0-based first point index of the range (inclusive)
    end: int                # 0-based last point index (inclusive)
    method: str


@dataclass
class _Path:
    name: str
    type: str
    body: np.ndarray        # (np,) body index (nb for ground)
    loc: np.ndarray         # (np, 3) location in the base body frame (default for moving)
    cond: list              # [(k, coord, lo, hi)]
    moving: list            # [(k, R_BF (3,3), p_BF (3,), [(axis, func, coord)])]
    wraps: list             # [_Wrap]
    slots: list = field(default_factory=list)   # first tag offset of each wrap's nodes
    nslots: int = 0         # tag offsets in all (2 per wrap, 4 per WrapDoubleCylinderObst)


@dataclass
class WrapObjectData:
    """A wrap object compiled: ``body`` index (nb = ground), pose ``R``, ``p`` of the wrap frame
    in the body frame, ``kind`` (``sphere`` | ``cylinder`` | ``ellipsoid`` | ``torus``),
    dimensions (``radius``, ``length``, ``radii``), quadrant axis (0-2, or -1 for all) and sign."""

    name: str
    type: str
    body: int
    R: np.ndarray
    p: np.ndarray
    dims: dict
    axis: int
    sign: int
    active: bool


@dataclass
class PathSet:
    """Pose-independent description of the model's paths (see :func:`compile_paths`).

    Attributes
    ----------
    names : list[str]        path-force names, ForceSet order
    types : list[str]        their OpenSim classes
    paths : list             compiled paths (internal)
    wrap_objects : list[WrapObjectData]
    nb : int                 number of bodies (index ``nb`` stands for ground)
    coordinate_names : list[str]
    approximate : list[str]  paths whose wrapping would match OpenSim only approximately
                             (none at present: every supported wrap is reproduced)
    """

    names: list
    types: list
    paths: list
    wrap_objects: list
    nb: int
    coordinate_names: list
    properties: list = field(default_factory=list)
    constraints: list = field(default_factory=list)
    locked: np.ndarray | None = None
    angular_speed_joints: list = field(default_factory=list)
    approximate: list = field(default_factory=list)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise ModelFileError(f"no path force named '{name}'") from None

    def select(self, names) -> "PathSet":
        """A PathSet restricted to the named forces (in the order given)."""
        idx = [self.index(n) for n in names]
        return PathSet([self.names[i] for i in idx], [self.types[i] for i in idx],
                       [self.paths[i] for i in idx], self.wrap_objects, self.nb,
                       self.coordinate_names, [self.properties[i] for i in idx],
                       self.constraints, self.locked, self.angular_speed_joints,
                       [n for n in self.approximate if n in names])


_QUADRANTS = {"x": (0, 1), "+x": (0, 1), "-x": (0, -1), "y": (1, 1), "+y": (1, 1),
              "-y": (1, -1), "z": (2, 1), "+z": (2, 1), "-z": (2, -1)}


def _quadrant(q: str, where: str):
    q = (q or "all").strip()
    if q.lower() in ("all", "unassigned"):
        return -1, 0
    k = q.lower()
    if k not in _QUADRANTS:
        raise ModelFileError(f"wrap object '{where}': quadrant '{q}' is not valid")
    return _QUADRANTS[k]


def _double_cylinder_frame(model, w, bidx):
    """The V cylinder of a WrapDoubleCylinderObst: body index ``v_body``
    (``wrapVcylHomeBody``), rotation ``v_R`` and origin ``v_p`` in that body's frame
    (``xyz_body_rotationVcyl``, ``translationVcyl``). The U cylinder is the wrap object's own
    frame."""
    home = w.wrapVcylHomeBody or ""
    if home in ("ground", GROUND):
        vpath = GROUND
    elif home in model.bodies:
        vpath = f"/bodyset/{home}"
    elif home.startswith("/bodyset/") and home[len("/bodyset/"):] in model.bodies:
        vpath = home
    else:
        raise ModelFileError(f"wrap obstacle '{w.name}': wrapVcylHomeBody '{home}' is not a "
                             "body of the model", model.source)
    base, X = model.frame_in_base(vpath)
    rot = np.zeros(3) if w.xyz_body_rotationVcyl is None else np.asarray(w.xyz_body_rotationVcyl, float)
    tr = np.zeros(3) if w.translationVcyl is None else np.asarray(w.translationVcyl, float)
    for tag, v in (("xyz_body_rotationVcyl", rot), ("translationVcyl", tr)):
        if v.shape != (3,):
            raise ModelFileError(f"wrap obstacle '{w.name}': <{tag}> must hold 3 numbers",
                                 model.source)
    return {"v_body": bidx[base], "v_R": X.R @ rotation_xyz(rot), "v_p": X.apply(tr)}


def compile_paths(model: Model, tree: Tree, forces=None, include_disabled: bool = True,
                  strict: bool = False) -> PathSet:
    """Compile the geometry paths of a model's path forces (muscles, ligaments, path actuators).

    Parameters
    ----------
    model : Model
    tree : Tree                    from :func:`arthron.multibody.kinematics.compile_model`
    forces : iterable of str, optional
        Force names to include (default: every force with a GeometryPath, ForceSet order).
    strict : bool
        Refuse (UnsupportedFeature) instead of warning for paths that arthron would reproduce
        only approximately (``PathSet.approximate``). Every wrap arthron supports now follows
        OpenSim 4.6 step by step, so this list is empty; the argument is kept for callers.

    Returns
    -------
    PathSet

    Raises
    ------
    ModelFileError
        naming the force, when a path point's frame does not exist, a ConditionalPathPoint or
        MovingPathPoint names a coordinate the model does not have, or a PathWrap names a wrap
        object that no body of the model carries.
        A WrapDoubleCylinderObst without radiusUcyl / radiusVcyl, with a wrapVcylHomeBody that
        is not a body of the model or a wrap direction other than righthand / lefthand.
    UnsupportedFeature
        naming the force, when it wraps over a wrap object type arthron does not reproduce.
    """
    nb = tree.nb
    bidx = {f"/bodyset/{n}": i for i, n in enumerate(tree.body_names)}
    bidx[GROUND] = nb
    cidx = {n: i for i, n in enumerate(tree.coordinate_names)}
    # wrap objects by name (OpenSim looks them up model-wide by name)
    wobjs, wid = [], {}
    all_wraps = [(GROUND, w) for w in model.ground_wrap_objects]
    for b in model.bodies.values():
        all_wraps += [(b.path, w) for w in b.wrap_objects]
    for bpath, w in all_wraps:
        base, X = model.frame_in_base(bpath)
        Rw = X.R @ rotation_xyz(w.xyz_body_rotation)
        pw = X.apply(w.translation)
        axis, sign = _quadrant(w.quadrant, w.name)
        try:
            dims = w.wrap_dims()
        except ModelFileError as e:
            raise ModelFileError(e.message, model.source) from None
        if w.type == "WrapDoubleCylinderObst":
            dims.update(_double_cylinder_frame(model, w, bidx))
        wid.setdefault(w.name, len(wobjs))
        wobjs.append(WrapObjectData(w.name, w.type, bidx[base], Rw, pw, dims, axis, sign,
                                    bool(w.active)))
    names, types, paths, props = [], [], [], []
    sel = None if forces is None else list(forces)
    items = model.forces.items() if sel is None else [(n, model.forces[n]) for n in sel]
    for name, f in items:
        if f.path is None:
            if sel is not None:
                raise ModelFileError(f"force '{name}' has no geometry path", model.source)
            continue
        pts = f.path.points
        if len(pts) < 2:
            raise ModelFileError(f"path of '{name}' has fewer than 2 points", model.source)
        body = np.empty(len(pts), int)
        loc = np.empty((len(pts), 3))
        cond, moving = [], []
        for k, pt in enumerate(pts):
            try:
                base, X = model.frame_in_base(pt.parent_frame)
            except ModelFileError:
                raise ModelFileError(f"path point '{pt.name}' of '{name}' is on frame "
                                     f"'{pt.parent_frame}', which does not exist",
                                     model.source) from None
            body[k] = bidx[base]
            loc[k] = X.apply(pt.location)
            if pt.kind == "ConditionalPathPoint":
                if pt.coordinate not in cidx:
                    raise ModelFileError(f"ConditionalPathPoint '{pt.name}' of '{name}' names "
                                         f"coordinate '{pt.coordinate}', which the model does "
                                         "not have", model.source)
                lo, hi = pt.range
                cond.append((k, cidx[pt.coordinate], float(lo), float(hi)))
            elif pt.kind == "MovingPathPoint":
                terms = []
                for ax in range(3):
                    fn = pt.location_functions[ax] if pt.location_functions else None
                    cn = pt.location_coordinates[ax] if pt.location_coordinates else None
                    if fn is None:
                        terms.append((ax, None, -1))
                        continue
                    if cn is None or cn not in cidx:
                        if cn is None and fn.is_constant():
                            terms.append((ax, fn, -1))
                            continue
                        raise ModelFileError(f"MovingPathPoint '{pt.name}' of '{name}' names "
                                             f"coordinate '{cn}', which the model does not have",
                                             model.source)
                    terms.append((ax, fn, cidx[cn]))
                moving.append((k, X.R.copy(), X.p.copy(), terms))
        wraps = []
        for pw in f.path.wraps:
            if pw.wrap_object not in wid:
                raise ModelFileError(f"path of '{name}' wraps over '{pw.wrap_object}', but no "
                                     "body of the model has a wrap object of that name",
                                     model.source)
            s, e = pw.range
            s0 = 0 if s < 1 else s - 1
            e0 = len(pts) - 1 if e < 1 else e - 1
            wo_t = wobjs[wid[pw.wrap_object]].type
            if wo_t not in _wr.SUPPORTED:
                raise UnsupportedFeature(f"path of '{name}' wraps over {wo_t} "
                                         f"'{pw.wrap_object}', which arthron does not reproduce",
                                         model.source)
            wraps.append(_Wrap(pw.name, pw.wrap_object, wid[pw.wrap_object], s0, e0,
                               pw.method))
        names.append(name)
        types.append(f.type)
        props.append(dict(f.properties))   # (PathSet.properties: kept for callers)
        ns = [4 if wobjs[w.obj_id].type == "WrapDoubleCylinderObst" else 2 for w in wraps]
        slots = [int(x) for x in np.concatenate([[0], np.cumsum(ns)[:-1]])] if ns else []
        paths.append(_Path(name, f.type, body, loc, cond, moving, wraps, slots, int(sum(ns))))
    approx = []   # paths reproduced only approximately: none (kept for PathSet.approximate)
    if approx:
        msg = (f"paths {', '.join(approx)} reproduce OpenSim's wrapping only approximately")
        if strict:
            raise UnsupportedFeature(msg, model.source)
        warnings.warn(msg, ArthronWarning, stacklevel=2)
    cons = _compile_constraints(model, tree, bidx, cidx)
    locked = np.array([model.coordinates[c].locked for c in tree.coordinate_names], bool)
    # joints whose Simbody mobilizer uses the angular velocity (in the mobilizer's F frame)
    # as generalized speeds instead of the X-Y-Z angle rates
    ang = [tuple(g) for g in tree.angular_velocity_groups]
    return PathSet(names, types, paths, wobjs, nb, list(tree.coordinate_names), props, cons,
                   locked, ang, approx)


def _compile_constraints(model, tree, bidx, cidx):
    """Enforced constraints as velocity-constraint makers (for the moment-arm coupling)."""
    out = []
    for c in model.constraints:
        if not c.enabled:
            continue
        p = c.properties
        if c.type in ("PointConstraint", "WeldConstraint"):
            b1, X1 = model.frame_in_base(p["body_1"])
            b2, X2 = model.frame_in_base(p["body_2"])
            l1 = X1.apply(np.asarray(p.get("location_body_1", np.zeros(3)), float))
            l2 = X2.apply(np.asarray(p.get("location_body_2", np.zeros(3)), float))
            out.append((c.type, c.name, bidx[b1], l1, bidx[b2], l2))
        elif c.type == "CoordinateCouplerConstraint":
            ind = p.get("independent_coordinates") or []
            if len(ind) != 1:
                out.append(("unsupported", c.name, c.type))
                continue
            out.append((c.type, c.name, cidx[p["dependent_coordinate"]], cidx[ind[0]],
                        p.get("function"), float(p.get("scale_factor", 1.0))))
        else:
            out.append(("unsupported", c.name, c.type))
    return out


# ---------------------------------------------------------------------------------- geometry
def _frames(tree: Tree, kin: Kinematics):
    """Body rotations (T, nb+1, 3, 3) and origins (T, nb+1, 3), ground appended last."""
    R = kin.body_R(tree)
    o = kin.body_origin(tree)
    T = R.shape[0]
    Rg = np.broadcast_to(np.eye(3), (T, 1, 3, 3))
    return np.concatenate([R, Rg], 1), np.concatenate([o, np.zeros((T, 1, 3))], 1)


@dataclass
class PathState:
    """One path rebuilt for T frames (padded node lists, valid nodes first).

    ``P`` (T, K, 3) node positions in ground, ``body`` (T, K) body index (nb = ground),
    ``loc`` (T, K, 3) node location in its body frame, ``tag`` (T, K): path-point index, or
    ``n_points + slot_w + i`` for the tangent points of wrap ``w`` (i = 0, 1; 0-3 for a
    WrapDoubleCylinderObst: q, Q on U, T, t on V), or -1 for padding;
    ``wlen`` (T, K): on the second tangent point on a surface, the length on the surface;
    ``length`` (T,); ``G`` (T, K, 3): the node positions OpenSim measures distances and
    force directions with (equal to ``P`` except for tangent points of paths with several
    wrap objects, see :func:`_apply_wraps`).
    """

    P: np.ndarray
    body: np.ndarray
    loc: np.ndarray
    tag: np.ndarray
    wlen: np.ndarray
    length: np.ndarray
    wobj: np.ndarray  # (T, K) wrap-object id of wrap nodes (+ n objects on a V cylinder), else -1
    npts: int
    G: np.ndarray | None = None  # (T, K, 3) positions used for distances and directions


def _point_locals(path: _Path, q):
    """Point locations in their base-body frames (T, np, 3) and the moving points' local
    derivatives: list of (k, coord, (T, 3) ∂loc/∂q)."""
    T = q.shape[0]
    loc = np.broadcast_to(path.loc, (T,) + path.loc.shape).copy()
    dloc = []
    for k, R, p, terms in path.moving:
        v = np.zeros((T, 3))
        per_c = {}
        for ax, fn, c in terms:
            if fn is None:
                continue
            x = q[:, c] if c >= 0 else np.zeros(T)
            v[:, ax] = fn.value(x)
            if c >= 0:
                d = per_c.setdefault(c, np.zeros((T, 3)))
                d[:, ax] += fn.derivative(x, 1)
        loc[:, k] = v @ R.T + p
        for c, d in per_c.items():
            dloc.append((k, c, d @ R.T))
    return loc, dloc


def _active(path: _Path, q):
    T = q.shape[0]
    act = np.ones((T, len(path.body)), bool)
    for k, c, lo, hi in path.cond:
        x = q[:, c]
        act[:, k] = (x >= lo - _COND_TOL) & (x <= hi + _COND_TOL)
    return act


def _compact(valid, *arrays):
    """Stable reorder putting valid entries first along axis 1."""
    order = np.argsort(~valid, axis=1, kind="stable")
    out = [np.take_along_axis(valid, order, 1)]
    for a in arrays:
        idx = order.reshape(order.shape + (1,) * (a.ndim - 2))
        out.append(np.take_along_axis(a, idx, 1))
    return out


def _seg_lengths(st_P, tag, wobj, wlen):
    """Per-segment length (T, K-1) of a compacted node list (0 where a node is padding)."""
    d = np.linalg.norm(st_P[:, 1:] - st_P[:, :-1], axis=-1)
    same = (wobj[:, :-1] >= 0) & (wobj[:, :-1] == wobj[:, 1:])
    seg = np.where(same, wlen[:, 1:], d)
    ok = (tag[:, :-1] >= 0) & (tag[:, 1:] >= 0)
    return np.where(ok, seg, 0.0)


def compute_paths(pathset: PathSet, tree: Tree, q, kin: Kinematics | None = None,
                  which=None) -> list:
    """Rebuild paths for T frames: a :class:`PathState` per path (``which``: indices)."""
    q = np.atleast_2d(np.asarray(q, float))
    if kin is None:
        kin = forward_kinematics(tree, q)
    Rb, ob = _frames(tree, kin)
    which = range(len(pathset.paths)) if which is None else which
    return [_compute_one(pathset, pathset.paths[i], q, Rb, ob)[0] for i in which]


def _compute_one(pathset: PathSet, path: _Path, q, Rb, ob):
    T = q.shape[0]
    npts = len(path.body)
    loc, dloc = _point_locals(path, q)
    body = np.broadcast_to(path.body, (T, npts))
    P = ob[:, path.body] + np.einsum("tkij,tkj->tki", Rb[:, path.body], loc)
    act = _active(path, q)
    tag = np.where(act, np.arange(npts), -1)
    K = npts + path.nslots
    pad = K - npts
    if pad:
        P = np.concatenate([P, np.zeros((T, pad, 3))], 1)
        loc = np.concatenate([loc, np.zeros((T, pad, 3))], 1)
        body = np.concatenate([body, np.full((T, pad), pathset.nb)], 1)
        tag = np.concatenate([tag, np.full((T, pad), -1)], 1)
    wobj = np.full((T, K), -1)
    wlen = np.zeros((T, K))
    _, P, loc, body, tag, wobj, wlen = _compact(tag >= 0, P, loc, body, tag, wobj, wlen)
    G = P
    if path.wraps:
        (P, loc, body, tag, wobj, wlen), cache = _apply_wraps(pathset, path, q, Rb, ob, act,
                                                              P, loc, body, tag, wobj, wlen)
        G = _cached_positions(P, tag, npts, cache)
    length = _seg_lengths(G, tag, wobj, wlen).sum(1)
    return PathState(P, body, loc, tag, wlen, length, wobj, npts, G), dloc


def _cached_positions(P, tag, npts, cache):
    """Node positions with tangent points replaced by their cached ground positions."""
    cG, cv = cache
    wi = np.clip(tag - npts, 0, cG.shape[1] - 1)
    isw = (tag >= npts)
    tt = np.arange(P.shape[0])[:, None]
    use = isw & cv[tt, wi]
    return np.where(use[..., None], cG[tt, wi], P)


def _update_cache(st, npts, cache, mask):
    """Cache the ground positions of tangent points present and not cached yet (OpenSim's
    Point caches its ground location at the first request in a realized state and does not
    see later changes of a tangent point's location within the same path computation)."""
    P, tag = st[0], st[3]
    cG, cv = cache
    tt = np.arange(P.shape[0])[:, None]
    isw = (tag >= npts) & mask[:, None]
    wi = np.clip(tag - npts, 0, cG.shape[1] - 1)
    new = isw & ~cv[tt, wi]
    ti, ki = np.where(new)
    cG[ti, wi[ti, ki]] = P[ti, ki]
    cv[ti, wi[ti, ki]] = True


def _remove_wrap_nodes(st, t0, t1, mask):
    """Remove the nodes tagged t0 <= tag < t1 (one wrap's tangent points) in frames ``mask``."""
    P, loc, body, tag, wobj, wlen = st
    keep = ~((tag >= t0) & (tag < t1) & mask[:, None]) & (tag >= 0)
    tag = np.where(keep, tag, -1)
    return tuple(_compact(keep, P, loc, body, tag, wobj, wlen)[1:])


def _wrap_one(pathset, path, wi, st, act, Rb, ob, mask, cache):
    """Remove wrap ``wi``'s tangent points and wrap again (frames in ``mask`` only), as one
    step of OpenSim's ``GeometryPath::applyWrapObjects``. Returns the new node lists and the
    result code OpenSim keeps for the wrap (the last segment tried, or the mandatory one).

    A WrapDoubleCylinderObst inserts up to four nodes: q, Q on the U cylinder (the wrap
    object's body, surface length on Q) and T, t on the V cylinder (its home body, surface
    length on t, wrap-object id + number of wrap objects), those of a cylinder not wrapped
    left out."""
    npts = len(path.body)
    w = path.wraps[wi]
    wo = pathset.wrap_objects[w.obj_id]
    dbl = wo.type == "WrapDoubleCylinderObst"
    ns = 4 if dbl else 2
    t0 = npts + path.slots[wi]
    P, loc, body, tag, wobj, wlen = _remove_wrap_nodes(st, t0, t0 + ns, mask)
    T, K = tag.shape
    code = np.zeros(T, int)
    if not wo.active:
        return (P, loc, body, tag, wobj, wlen), code
    sub = act[:, w.start:w.end + 1]
    anyact = sub.any(1) & mask
    smp = w.start + np.argmax(sub, 1)
    emp = w.end - np.argmax(sub[:, ::-1], 1)
    start = np.argmax(tag == smp[:, None], 1)
    end = np.argmax(tag == emp[:, None], 1)
    Rw = Rb[:, wo.body] @ wo.R                    # wrap frame in ground
    ow = ob[:, wo.body] + Rb[:, wo.body] @ wo.p
    Xl = np.einsum("tji,tkj->tki", Rw, P - ow[:, None])   # nodes in the wrap frame
    Gl = np.einsum("tji,tkj->tki", Rw, _cached_positions(P, tag, npts, cache) - ow[:, None])
    if dbl:
        d = wo.dims
        vb = d["v_body"]
        Rv = Rb[:, vb] @ d["v_R"]                 # V cylinder frame in ground
        ov = ob[:, vb] + Rb[:, vb] @ d["v_p"]
        Ruv = np.einsum("tji,tjk->tik", Rw, Rv)   # ... in the U frame
        ouv = np.einsum("tji,tj->ti", Rw, ov - ow)
    best_k = np.full(T, -1)
    best_dl = np.full(T, np.inf)
    nodes = np.zeros((T, ns, 3))                  # tangent points, wrap (U) frame
    lens = np.zeros((T, ns))                      # surface length ending at the node
    valid = np.zeros((T, ns), bool)
    mand = np.zeros(T, bool)
    for k in range(K - 1):
        cand = (anyact & (k >= start) & (k < end) & (tag[:, k] >= 0) & (tag[:, k + 1] >= 0)
                & ~((wobj[:, k] >= 0) & (wobj[:, k] == wobj[:, k + 1])) & ~mand)
        if not cand.any():
            continue
        ci = np.where(cand)[0]
        g1, g2 = Gl[ci, k], Gl[ci, k + 1]
        straight = np.linalg.norm(g2 - g1, axis=-1)
        if dbl:
            case, q1, Q1, T1, t1, _, Lu, Lv = _wr._double_cylinder_obstacle(
                Xl[ci, k], Xl[ci, k + 1], d["radius"], d["direction"], d["radius_v"],
                d["direction_v"], Ruv[ci], ouv[ci])
            uU = (case == _wr.DC_U) | (case == _wr.DC_BOTH)
            uV = (case == _wr.DC_V) | (case == _wr.DC_BOTH)
            status = np.where(case == _wr.DC_INSIDE, _wr.INSIDE,
                              np.where(uU | uV, _wr.WRAPPED, _wr.NO_WRAP))
            nd = np.stack([q1, Q1, T1, t1], 1)
            ln = np.stack([np.zeros_like(Lu), Lu, np.zeros_like(Lv), Lv], 1)
            vd = np.stack([uU, uU, uV, uV], 1)
            first = np.where(uU[:, None], q1, T1)
            last = np.where(uV[:, None], t1, Q1)
            mid = np.where(uU & uV, np.linalg.norm(T1 - Q1, axis=-1), 0.0)
            dl = (np.linalg.norm(first - g1, axis=-1) + Lu + mid + Lv
                  + np.linalg.norm(g2 - last, axis=-1) - straight)
        else:
            try:
                # OpenSim 4.6 skips the cylinder's tangent correction for a path's only wrap
                single = len(path.wraps) == 1
                status, r1, r2, L = _wr.wrap_segment(wo, Xl[ci, k], Xl[ci, k + 1], w.method,
                                                     single=single)
            except UnsupportedFeature as e:
                raise UnsupportedFeature(f"path of '{path.name}': {e.message}") from None
            nd = np.stack([r1, r2], 1)
            ln = np.stack([np.zeros_like(L), L], 1)
            vd = np.ones((len(ci), 2), bool)
            dl = (np.linalg.norm(r1 - g1, axis=-1) + L + np.linalg.norm(g2 - r2, axis=-1)
                  - straight)
        code[ci] = status
        is_m = status == _wr.MANDATORY
        take = is_m | ((status == _wr.WRAPPED) & (dl < best_dl[ci]))
        tk = ci[take]
        nodes[tk], lens[tk], valid[tk] = nd[take], ln[take], vd[take]
        best_dl[tk] = dl[take]
        best_k[tk] = k
        mand[ci[is_m]] = True
    has = best_k >= 0
    if not has.any():
        return (P, loc, body, tag, wobj, wlen), code
    # node locations in their bodies' frames and in ground
    nloc = nodes @ wo.R.T + wo.p                  # in the wrap object's body frame
    nG = ob[:, wo.body, None] + np.einsum("tij,tkj->tki", Rb[:, wo.body], nloc)
    nbody = np.full((T, ns), wo.body)
    nobj = np.full((T, ns), w.obj_id)
    if dbl:   # T, t sit on the V cylinder's body
        gV = ow[:, None] + np.einsum("tij,tkj->tki", Rw, nodes[:, 2:])
        nG[:, 2:] = gV
        nloc[:, 2:] = np.einsum("tji,tkj->tki", Rb[:, vb], gV - ob[:, vb, None])
        nbody[:, 2:] = vb
        nobj[:, 2:] = w.obj_id + len(pathset.wrap_objects)
    j = np.arange(K)[None, :]
    kk = np.where(has, best_k, K)[:, None]
    src = np.clip(np.where(j <= kk, j, j - ns), 0, K - 1)
    slot = j - kk - 1                             # 0..ns-1 on the inserted nodes
    isn = (slot >= 0) & (slot < ns)
    si = np.clip(slot, 0, ns - 1)

    def ins(arr, v):
        ex = (1,) * (arr.ndim - 2)
        out = np.take_along_axis(arr, src.reshape(src.shape + ex), 1)
        v = np.take_along_axis(v, si.reshape(si.shape + ex), 1)
        return np.where(isn.reshape(isn.shape + ex), v, out)

    ntag = np.where(valid, t0 + np.arange(ns), -1)
    out = (ins(P, nG), ins(loc, nloc), ins(body, nbody), ins(tag, ntag), ins(wobj, nobj),
           ins(wlen, lens))
    if dbl:   # drop the nodes of a cylinder not wrapped
        keep = out[3] >= 0
        out = out[:4] + (np.where(keep, out[4], -1), np.where(keep, out[5], 0.0))
        out = tuple(_compact(keep, *out)[1:])
    return out, code


def _apply_wraps(pathset, path, q, Rb, ob, act, P, loc, body, tag, wobj, wlen):
    """OpenSim's ``GeometryPath::applyWrapObjects`` for T frames.

    With two or more wrap objects, up to 8 passes are made (each frame stops when its length
    changes by less than 0.5 mm); after the first pass, if the first object did not wrap and
    the second had a point inside it, the first two are swapped. OpenSim measures distances
    with ground positions of tangent points that its ``Point`` caches at their first use
    within a path computation, so later passes move the tangent points but not the positions
    used for the straight segments; this is reproduced (returned ``cache``).
    """
    T, K = tag.shape
    npts = len(path.body)
    nw = len(path.wraps)
    st = (P, loc, body, tag, wobj, wlen)
    ns = max(path.nslots, 1)
    cache = (np.zeros((T, ns, 3)), np.zeros((T, ns), bool))
    niter = 1 if nw < 2 else 8
    last = np.full(T, np.inf)
    done = np.zeros(T, bool)
    swapped = np.zeros(T, bool)
    for kk in range(niter):
        todo = ~done
        codes = []
        for i in range(nw):
            if nw >= 2 and i < 2 and swapped.any():
                st, c_a = _wrap_one(pathset, path, i, st, act, Rb, ob, todo & ~swapped, cache)
                st, c_b = _wrap_one(pathset, path, 1 - i, st, act, Rb, ob, todo & swapped, cache)
                codes.append(np.where(swapped, c_b, c_a))
            else:
                st, c = _wrap_one(pathset, path, i, st, act, Rb, ob, todo, cache)
                codes.append(c)
        _update_cache(st, npts, cache, todo)
        if nw < 2:
            break
        G = _cached_positions(st[0], st[3], npts, cache)
        length = _seg_lengths(G, st[3], st[4], st[5]).sum(1)
        conv = todo & (np.abs(length - last) < _WRAP_TOL)
        last = np.where(todo, length, last)
        done |= conv
        if kk == 0:
            sw = todo & ~conv & (codes[0] == _wr.NO_WRAP) & (codes[1] == _wr.INSIDE)
            if sw.any():
                swapped |= sw
                st = _remove_wrap_nodes(st, npts + path.slots[0], npts + path.slots[1], sw)
        if done.all():
            break
    return st, cache


# ---------------------------------------------------------------------------------- public API
def path_lengths(pathset: PathSet, tree: Tree, q, kin: Kinematics | None = None) -> np.ndarray:
    """Path lengths (T, n_paths) in metres.

    Parameters
    ----------
    pathset : PathSet          from :func:`compile_paths`
    tree : Tree
    q : (T, nq) or (nq,)       coordinates, model order, rad / m
    kin : Kinematics, optional  poses already computed for ``q``

    Raises
    ------
    UnsupportedFeature for wrap objects arthron cannot reproduce (see
    :mod:`arthron.geometry.wrapping`).

    Source: OpenSim ``GeometryPath::computePath`` / ``calcLengthAfterPathComputation``.
    """
    states = compute_paths(pathset, tree, q, kin)
    return np.stack([s.length for s in states], 1)


def _node_forces(st: PathState, nb: int):
    """Net unit pull on every node (T, K, 3): towards the next node minus towards the previous,
    zero across segments whose two nodes are on the same body (no work there) and on the
    surface part of a wrap."""
    X = st.P if st.G is None else st.G
    d = X[:, 1:] - X[:, :-1]
    n = np.linalg.norm(d, axis=-1, keepdims=True)
    u = np.divide(d, n, out=np.zeros_like(d), where=n > 0)
    ok = (st.tag[:, :-1] >= 0) & (st.tag[:, 1:] >= 0)
    same = st.body[:, :-1] == st.body[:, 1:]
    u = np.where((ok & ~same)[..., None], u, 0.0)
    f = np.zeros_like(st.P)
    f[:, :-1] += u
    f[:, 1:] -= u
    return f


def _moment_arms_from_states(pathset, tree, q, kin, states_dloc):
    T = q.shape[0]
    nq = tree.nq
    D = velocity_map(tree, q, kin, point="origin")                   # (T, nb, 6, nq)
    D = np.concatenate([D, np.zeros((T, 1, 6, nq))], 1)             # ground last
    Rb, ob = _frames(tree, kin)
    out = np.empty((T, len(states_dloc), nq))
    tt = np.arange(T)[:, None]
    for i, (st, dloc) in enumerate(states_dloc):
        f = _node_forces(st, pathset.nb)
        b = st.body
        r = st.P - ob[tt, b]
        m = np.cross(r, f)
        Dv = D[tt, b, :3]        # (T, K, 3, nq)
        Dw = D[tt, b, 3:]
        ma = np.einsum("tki,tkiq->tq", f, Dv) + np.einsum("tki,tkiq->tq", m, Dw)
        # moving points: motion of the point on its body
        for k, c, dl in dloc:
            pos = st.tag == k                                        # (T, K)
            fk = np.einsum("tk,tki->ti", pos, f)
            bk = pathset.paths[i].body[k]
            ma[:, c] += np.einsum("ti,tij,tj->t", fk, Rb[:, bk], dl)
        out[:, i] = ma
    return out


def speed_map(pathset: PathSet, q) -> np.ndarray:
    """``N`` (T, nq, nq) with ``q̇ = N u``: OpenSim's generalized speeds ``u`` are the
    coordinate rates except for Ellipsoid / Scapulothoracic / Ball / Free joints, whose first three
    speeds are the angular velocity of the mobilizer expressed in its parent frame
    (``u = [e_x, Rx(q0) e_y, Rx(q0) Ry(q1) e_z] q̇``)."""
    q = np.atleast_2d(np.asarray(q, float))
    T, nq = q.shape
    N = np.broadcast_to(np.eye(nq), (T, nq, nq)).copy()
    for i0, i1, i2 in pathset.angular_speed_joints:
        E = _euler_xyz_rate_matrix(q[:, i0], q[:, i1])
        ix = np.array([i0, i1, i2])
        N[:, ix[:, None], ix[None, :]] = np.linalg.inv(E)
    return N


def coupling_vectors(pathset: PathSet, tree: Tree, q, kin: Kinematics | None = None):
    """OpenSim's moment-arm coupling vectors (T, nq, nq), column k for coordinate k.

    Column k is the generalized-speed vector (OpenSim's ``u``, see :func:`speed_map`)
    closest to the unit speed of coordinate k that satisfies the model's enforced constraints
    (PointConstraint, WeldConstraint,
    CoordinateCouplerConstraint with one independent coordinate) and keeps the other locked
    coordinates still, scaled so that its k-th entry is 1 (``MomentArmSolver``'s
    ``computeCouplingVector``: Simbody's ``projectU``, here with unit weights). Returns None
    when the model has no enforced constraints (the coupling is then the identity).

    Raises UnsupportedFeature for other enforced constraint types.
    """
    if not pathset.constraints:
        return None
    q = np.atleast_2d(np.asarray(q, float))
    if kin is None:
        kin = forward_kinematics(tree, q)
    T, nq = q.shape
    D = velocity_map(tree, q, kin, point="origin")
    D = np.concatenate([D, np.zeros((T, 1, 6, nq))], 1)
    Rb, ob = _frames(tree, kin)
    rows = []

    def jv(b, loc):
        r = np.einsum("tij,j->ti", Rb[:, b], loc)
        w = D[:, b, 3:].transpose(0, 2, 1)                        # (T, nq, 3)
        return D[:, b, :3] + np.cross(w, r[:, None, :]).transpose(0, 2, 1)

    for c in pathset.constraints:
        if c[0] == "unsupported":
            raise UnsupportedFeature(f"moment-arm coupling through {c[2]} '{c[1]}'")
        if c[0] in ("PointConstraint", "WeldConstraint"):
            _, _, b1, l1, b2, l2 = c
            rows.append(jv(b1, l1) - jv(b2, l2))
            if c[0] == "WeldConstraint":
                rows.append(D[:, b1, 3:] - D[:, b2, 3:])
        else:
            _, _, dep, ind, fn, sc = c
            g = np.zeros((T, 1, nq))
            g[:, 0, dep] = 1.0
            g[:, 0, ind] -= sc * (np.ones(T) if fn is None else fn.derivative(q[:, ind], 1))
            rows.append(g)
    G = np.concatenate(rows, 1) @ speed_map(pathset, q)   # (T, m, nq), per unit speed u
    locked = pathset.locked if pathset.locked is not None else np.zeros(nq, bool)
    C = np.zeros((T, nq, nq))
    for k in range(nq):
        free = ~locked.copy()
        free[k] = True
        Gf = G[:, :, free]
        ek = np.zeros(free.sum())
        ek[np.where(np.where(free)[0] == k)[0][0]] = 1.0
        pinv = np.linalg.pinv(Gf @ Gf.transpose(0, 2, 1), rcond=1e-12)
        u = ek - np.einsum("tmi,tmn,tn->ti", Gf, pinv, Gf @ ek)
        col = np.zeros((T, nq))
        col[:, free] = u
        C[:, :, k] = col / col[:, k:k + 1]
    return C


def moment_arms(pathset: PathSet, tree: Tree, q, kin: Kinematics | None = None,
                return_lengths: bool = False, coupled: bool = True):
    """Moment arms ``r = -∂l/∂q`` (T, n_paths, nq): metres for rotational coordinates,
    dimensionless for translational ones.

    Analytic (node pulls times point velocity maps, see the module docstring). With
    ``coupled`` (default) the result is what OpenSim's ``computeMomentArm`` returns: the
    generalized force of a unit tension per unit generalized speed (:func:`speed_map`:
    different from ``-∂l/∂q`` for EllipsoidJoint/ScapulothoracicJoint angles), combined along
    :func:`coupling_vectors` for models with constraints; with ``coupled=False`` the plain
    ``-∂l/∂q_k`` with all other coordinates held is returned.
    With ``return_lengths`` the lengths (T, n_paths) are returned too.

    Source: OpenSim ``MomentArmSolver::solve`` with ``GeometryPath::addInEquivalentForces``.
    """
    q = np.atleast_2d(np.asarray(q, float))
    if kin is None:
        kin = forward_kinematics(tree, q)
    Rb, ob = _frames(tree, kin)
    sd = [_compute_one(pathset, p, q, Rb, ob) for p in pathset.paths]
    ma = _moment_arms_from_states(pathset, tree, q, kin, sd)
    if coupled:
        if pathset.angular_speed_joints:
            ma = np.einsum("tfj,tjk->tfk", ma, speed_map(pathset, q))
        C = coupling_vectors(pathset, tree, q, kin)
        if C is not None:
            ma = np.einsum("tfj,tjk->tfk", ma, C)
    if return_lengths:
        return ma, np.stack([s.length for s, _ in sd], 1)
    return ma


def moment_arms_excursion(pathset: PathSet, tree: Tree, q, coordinates=None,
                          h: float = 1e-6) -> np.ndarray:
    """Tendon-excursion moment arms ``-(l(q + h e_j) - l(q - h e_j)) / 2h`` (T, n_paths, nq).

    ``coordinates``: indices to differentiate (others are left 0). Central differences with
    step ``h`` (rad or m).
    """
    q = np.atleast_2d(np.asarray(q, float))
    T = q.shape[0]
    cols = range(tree.nq) if coordinates is None else coordinates
    out = np.zeros((T, len(pathset.paths), tree.nq))
    for j in cols:
        qp, qm = q.copy(), q.copy()
        qp[:, j] += h
        qm[:, j] -= h
        dl = path_lengths(pathset, tree, qp) - path_lengths(pathset, tree, qm)
        out[:, :, j] = -dl / (2 * h)
    return out


def lengthening_speeds(pathset: PathSet, tree: Tree, q, qd, kin: Kinematics | None = None):
    """Lengthening speeds ``dl/dt = -r(q) · q̇`` (T, n_paths), m/s.

    Source: OpenSim ``GeometryPath::getLengtheningSpeed`` (same quantity).
    """
    qd = np.atleast_2d(np.asarray(qd, float))
    return -np.einsum("tfq,tq->tf", moment_arms(pathset, tree, q, kin, coupled=False), qd)


def path_generalized_forces(pathset: PathSet, tree: Tree, q, tensions,
                            kin: Kinematics | None = None) -> np.ndarray:
    """Generalized forces (T, nq) of path tensions (T, n_paths) or (n_paths,), newtons:
    ``τ = Σ_f tension_f r_f(q)`` (N·m for rotational, N for translational coordinates)."""
    q = np.atleast_2d(np.asarray(q, float))
    ten = np.broadcast_to(np.asarray(tensions, float), (q.shape[0], len(pathset.paths)))
    return np.einsum("tfq,tf->tq", moment_arms(pathset, tree, q, kin, coupled=False), ten)


@dataclass
class PathLoads:
    """Forces that path tensions apply.

    points : list per path of (body (T, K) int, nb = ground / padding, point (T, K, 3) ground
             position, force (T, K, 3) N in ground); padding rows have zero force.
    force : (T, nb, 3) total force on each body, ground frame (N)
    moment : (T, nb, 3) total moment about each body's origin, ground frame (N·m)
    mobility : (T, nq) generalized forces from moving path points sliding on their bodies
    """

    points: list
    force: np.ndarray
    moment: np.ndarray
    mobility: np.ndarray


def path_body_forces(pathset: PathSet, tree: Tree, q, tensions,
                     kin: Kinematics | None = None) -> PathLoads:
    """Point forces that path tensions (T, n_paths) apply on the bodies they cross.

    Each node (path point or wrap tangent point) is pulled towards its neighbours along the
    path; nodes on the same body as their neighbour exchange no force (OpenSim's
    ``GeometryPath::addInEquivalentForces``). ``Dᵀ`` of these loads plus ``mobility`` equals
    :func:`path_generalized_forces`.
    """
    q = np.atleast_2d(np.asarray(q, float))
    if kin is None:
        kin = forward_kinematics(tree, q)
    T = q.shape[0]
    ten = np.broadcast_to(np.asarray(tensions, float), (T, len(pathset.paths)))
    Rb, ob = _frames(tree, kin)
    nb = pathset.nb
    Fb = np.zeros((T, nb + 1, 3))
    Mb = np.zeros((T, nb + 1, 3))
    mob = np.zeros((T, tree.nq))
    pts = []
    tt = np.arange(T)[:, None]
    for i, p in enumerate(pathset.paths):
        st, dloc = _compute_one(pathset, p, q, Rb, ob)
        f = _node_forces(st, nb) * ten[:, i, None, None]
        pts.append((st.body, st.P, f))
        r = st.P - ob[tt, st.body]
        np.add.at(Fb, (tt.repeat(st.body.shape[1], 1), st.body), f)
        np.add.at(Mb, (tt.repeat(st.body.shape[1], 1), st.body), np.cross(r, f))
        for k, c, dl in dloc:
            fk = np.einsum("tk,tki->ti", st.tag == k, f)
            mob[:, c] += np.einsum("ti,tij,tj->t", fk, Rb[:, p.body[k]], dl)
    return PathLoads(pts, Fb[:, :nb], Mb[:, :nb], mob)
