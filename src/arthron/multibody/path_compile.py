"""Compiling a model's geometry paths (:func:`compile_paths`): path points, conditional and
moving points, the wrap objects they wrap over (typed wrap objects of
:mod:`arthron.models.wrap_objects`, their per-surface wrapping registered in
:mod:`arthron.geometry.wrapping`) and the enforced constraints used to couple moment arms.
See :mod:`arthron.multibody.paths` for the method and its agreement with OpenSim."""
from __future__ import annotations

import contextlib
import contextvars
import itertools
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ArthronWarning, ModelFileError, UnsupportedFeature
from ..geometry import wrapping as _wr
from .kinematics import Tree
from ..models.model import GROUND, FunctionBasedPath, Model, rotation_xyz


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
    moving: list            # [(k, R_BF (3,3), p_BF (3,), [(axis, func, coord, lo, hi)])]:
                            # the coordinate is clamped to its range [lo, hi] (as OpenSim 4.6)
    wraps: list             # [_Wrap]
    slots: list = field(default_factory=list)   # first tag offset of each wrap's nodes
    nslots: int = 0         # tag offsets in all (2 per wrap, 4 per WrapDoubleCylinderObst)


@dataclass
class _FunctionPath:
    """A compiled FunctionBasedPath: coordinate indices (model order) of the functions'
    arguments, and the functions (see :class:`arthron.models.model.FunctionBasedPath`)."""
    name: str
    type: str
    coords: np.ndarray      # (d,) coordinate indices
    length: object          # Function: one argument (d == 1) or MultivariatePolynomialFunction
    moment_arms: list       # [Function] per coordinate, or [] (then -∂length/∂q)
    speed: object           # Function of (q, q̇) (2d arguments), or None (then -Σ r q̇)


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
    properties : list        each path force's ``properties`` mapping (the live view of its
                             modelled properties, :attr:`arthron.models.forces.Force.properties`)
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

    @property
    def function_based(self) -> list:
        """Indices of the paths that are FunctionBasedPaths (no geometry: length, moment arms
        and speeds from functions of coordinates)."""
        return [i for i, p in enumerate(self.paths) if isinstance(p, _FunctionPath)]

    def geometric(self) -> "PathSet":
        """The PathSet without its FunctionBasedPaths (the paths that have points to draw)."""
        fb = set(self.function_based)
        return self if not fb else self.select([n for i, n in enumerate(self.names) if i not in fb])

    def select(self, names) -> "PathSet":
        """A PathSet restricted to the named forces (in the order given)."""
        idx = [self.index(n) for n in names]
        return PathSet([self.names[i] for i in idx], [self.types[i] for i in idx],
                       [self.paths[i] for i in idx], self.wrap_objects, self.nb,
                       self.coordinate_names, [self.properties[i] for i in idx],
                       self.constraints, self.locked, self.angular_speed_joints,
                       [n for n in self.approximate if n in names])


_SHARED = contextvars.ContextVar("arthron_shared_paths", default=None)


@contextlib.contextmanager
def shared_paths():
    """Within this context the paths of one model are compiled once and rebuilt once per set
    of frames: :func:`compile_paths` returns the same compiled path object for the same model,
    tree and force (whatever other forces are selected with it), and
    :func:`arthron.multibody.path_geometry.compute_paths` (and every path function built on it)
    takes a path's states at the same q and body poses (compared by a digest of their bytes)
    from the first computation, its arrays read-only. Every path is rebuilt row by row on its
    own, so the results equal separate computations bit for bit. The AnalyzeTool's analyses
    each need the paths at the same frames. Models must not change inside. Nested contexts
    join the outer one."""
    if _SHARED.get() is not None:
        yield
        return
    token = _SHARED.set({"compiled": {}, "states": {}, "keep": []})
    try:
        yield
    finally:
        _SHARED.reset(token)


def shared_path_cache():
    """The cache of the enclosing :func:`shared_paths` context (a dict), or None."""
    return _SHARED.get()


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
    forces : str or iterable of str, optional
        Force name(s) to include (default: every force with a GeometryPath, ForceSet order).
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
        A FunctionBasedPath without coordinates or length function, naming a coordinate the
        model does not have, or whose functions take a number of arguments other than its
        coordinates (twice them for the lengthening-speed function).
    UnsupportedFeature
        naming the force, when it wraps over a wrap object type arthron does not reproduce,
        or when its FunctionBasedPath depends on a rotation of a Ball, Free, Ellipsoid or
        Scapulothoracic joint (whose generalized speeds are angular velocities).

    Within :func:`shared_paths` the same model, tree, selection and ``strict`` give the same
    PathSet (compiled once), and each force's compiled path is the same object in every
    selection.
    """
    sel = None if forces is None else [forces] if isinstance(forces, str) else list(forces)
    shared = _SHARED.get()
    set_key = None
    if shared is not None:
        set_key = ("set", id(model), id(tree), None if sel is None else tuple(sel), bool(strict))
        if set_key in shared["compiled"]:
            return shared["compiled"][set_key]
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
    unknown = [n for n in sel or () if n not in model.forces]
    if unknown:         # a name typed by hand (--muscles, a MuscleAnalysis' muscle_list): name it
        with_path = [n for n, f in model.forces.items() if f.path is not None]
        raise ModelFileError(f"model '{model.name}' has no force named {', '.join(map(repr, unknown))} "
                             f"(forces with a path: {', '.join(with_path[:8])}"
                             f"{' ...' if len(with_path) > 8 else ''})", model.source)
    items = model.forces.items() if sel is None else [(n, model.forces[n]) for n in sel]
    in_base = {}        # frame path -> model.frame_in_base (the points of most paths share frames)
    for name, f in items:
        if f.path is None:
            if sel is not None:
                raise ModelFileError(f"force '{name}' has no geometry path", model.source)
            continue
        if isinstance(f.path, FunctionBasedPath):
            names.append(name)
            types.append(f.type)
            props.append(f.properties)
            paths.append(_compile_function_path(name, f, model, tree, cidx))
            continue
        if shared is not None and (id(model), id(tree), name) in shared["compiled"]:
            names.append(name)
            types.append(f.type)
            props.append(f.properties)
            paths.append(shared["compiled"][(id(model), id(tree), name)])
            continue
        pts = f.path.points
        if len(pts) < 2:
            raise ModelFileError(f"path of '{name}' has fewer than 2 points", model.source)
        body = np.empty(len(pts), int)
        loc = np.empty((len(pts), 3))
        cond, moving = [], []
        for k, pt in enumerate(pts):
            try:
                bx = in_base.get(pt.parent_frame)
                if bx is None:
                    bx = in_base[pt.parent_frame] = model.frame_in_base(pt.parent_frame)
                base, X = bx
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
                        terms.append((ax, None, -1, -np.inf, np.inf))
                        continue
                    if cn is None or cn not in cidx:
                        if cn is None and fn.is_constant:
                            terms.append((ax, fn, -1, -np.inf, np.inf))
                            continue
                        raise ModelFileError(f"MovingPathPoint '{pt.name}' of '{name}' names "
                                             f"coordinate '{cn}', which the model does not have",
                                             model.source)
                    lo, hi = (float(v) for v in model.coordinates[cn].range)
                    terms.append((ax, fn, cidx[cn], min(lo, hi), max(lo, hi)))
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
            if wo_t not in _wr.WRAP_SURFACES:
                raise UnsupportedFeature(f"path of '{name}' wraps over {wo_t} "
                                         f"'{pw.wrap_object}', which arthron does not reproduce",
                                         model.source)
            wraps.append(_Wrap(pw.name, pw.wrap_object, wid[pw.wrap_object], s0, e0,
                               pw.method))
        names.append(name)
        types.append(f.type)
        props.append(f.properties)
        ns = [4 if wobjs[w.obj_id].type == "WrapDoubleCylinderObst" else 2 for w in wraps]
        slots = [0, *itertools.accumulate(ns[:-1])] if ns else []
        paths.append(_Path(name, f.type, body, loc, cond, moving, wraps, slots, int(sum(ns))))
        if shared is not None:      # the model and tree kept: their ids stay theirs
            shared["compiled"][(id(model), id(tree), name)] = paths[-1]
            shared["keep"].append((model, tree))
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
    ps = PathSet(names, types, paths, wobjs, nb, list(tree.coordinate_names), props, cons,
                 locked, ang, approx)
    if set_key is not None:
        shared["compiled"][set_key] = ps
        shared["keep"].append((model, tree))
    return ps


def _compile_function_path(name, f, model, tree, cidx) -> _FunctionPath:
    """Check a FunctionBasedPath as OpenSim's ``extendFinalizeFromProperties`` /
    ``extendConnectToModel`` do, and compile it."""
    p = f.path
    if not p.coordinates:
        raise ModelFileError(f"FunctionBasedPath of '{name}' names no coordinate", model.source)
    for c in p.coordinates:
        if c not in cidx:
            raise ModelFileError(f"FunctionBasedPath of '{name}' names coordinate '{c}', which "
                                 "the model does not have", model.source)
    idx = np.array([cidx[c] for c in p.coordinates], int)
    ang = {i for g in tree.angular_velocity_groups for i in g}
    if ang & set(idx.tolist()):
        raise UnsupportedFeature(f"FunctionBasedPath of '{name}' depends on a rotation of a joint "
                                 "whose generalized speeds are angular velocities (Ball, Free, "
                                 "Ellipsoid, Scapulothoracic)", model.source)
    d = len(idx)

    def nargs(fn):
        return getattr(fn, "dimension", 1)

    if p.length_function is None:
        raise ModelFileError(f"FunctionBasedPath of '{name}' has no length_function", model.source)
    checks = [("length_function", p.length_function, d)]
    if p.moment_arm_functions:
        if len(p.moment_arm_functions) != d:
            raise ModelFileError(f"FunctionBasedPath of '{name}' has {len(p.moment_arm_functions)} "
                                 f"moment_arm_functions for {d} coordinates", model.source)
        checks += [("moment_arm_functions", fn, d) for fn in p.moment_arm_functions]
    if p.lengthening_speed_function is not None:
        checks.append(("lengthening_speed_function", p.lengthening_speed_function, 2 * d))
    for tag, fn, n in checks:
        if nargs(fn) != n:
            raise ModelFileError(f"FunctionBasedPath of '{name}': {tag} takes {nargs(fn)} "
                                 f"argument(s), {n} expected", model.source)
    return _FunctionPath(name, f.type, idx, p.length_function, list(p.moment_arm_functions),
                         p.lengthening_speed_function)


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
        elif c.type == "PointOnEllipsoidConstraint":
            # arthron's own constraint (OpenSim has none to copy): moment arms stay ∂L/∂q per
            # coordinate, its multiplier enters the equations of motion instead (Sarshari et al.
            # 2021, Eqs. 11-12)
            continue
        else:
            out.append(("unsupported", c.name, c.type))
    return out
