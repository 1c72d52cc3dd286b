"""The model compiled into a tree of nodes, with its topology, once (:func:`compile_model`).

Every joint is compiled into a short chain of *nodes* between its parent frame F and child
frame M. A node is a frame with a fixed pre-transform ``X0`` on its parent node followed by one
elementary motion:

* ``fixed``  -- nothing more (body frames, welds),
* ``rot``    -- rotation about a unit axis ``a`` (in the pre-transformed frame) by ``θ = f(q_c)``,
* ``trans``  -- translation ``p = Σ_i f_i(q_ci) t_i`` (OpenSim's CustomJoint translations, in F),
* ``ellip``  -- Simbody's Ellipsoid mobilizer translation ``p = (a n_x, b n_y, c n_z)`` on the
  ellipsoid of radii ``a, b, c``, with ``n`` the z axis of ``Rx(q0) Ry(q1)``:
  ``n = (sin q1, -sin q0 cos q1, cos q0 cos q1)``.

Which chain a joint becomes is its type's business (:mod:`arthron.multibody.joints`, one
registry): CustomJoint (``X_FM = (R1(θ1) R2(θ2) R3(θ3), Σ f_j t_j)``, body-fixed rotation
sequence as in Simbody's FunctionBased mobilizer), Pin, Slider, Weld, Ball, Gimbal, Free,
Universal, Planar, Ellipsoid and OpenSim's ScapulothoracicJoint.

The topology every algorithm needs (node parents and ancestors, body parents and children,
the hinge-node column layout and subtree masks, the joints' frames) is computed when the
:class:`Tree` is built and kept in its fields; algorithms never recompute or cache it.
"""
from __future__ import annotations

import warnings
from dataclasses import field

import numpy as np

from ..runtime import dataclass  # dataclasses.dataclass with shared __repr__/__eq__
from ..errors import ArthronWarning, ModelFileError, OptionError
from ..geometry.spatial import frame_with_z
from ..models.model import GROUND, Model, Transform, require_model
from .joints import joint_ops, joint_type

__all__ = ["Node", "Tree", "HingeLayout", "compile_model", "default_coordinates", "check_q",
           "warn_degrees"]


@dataclass
class Node:
    """One frame of the compiled tree (see the module docstring).

    ``parent`` node index (−1 for ground); fixed pre-transform ``R0`` (3, 3), ``p0`` (3,) on the
    parent node; ``kind`` of its motion; ``rot``: ``axis`` (local z after compilation), ``coord``
    and ``func`` (None: θ = q); ``trans``: ``terms`` [(coordinate, function or None, axis)];
    ``ellip``: ``radii``; ``coords`` the coordinates its motion depends on; ``joint`` its joint.
    """

    parent: int
    R0: np.ndarray
    p0: np.ndarray
    kind: str = "fixed"          # fixed | rot | trans | ellip
    axis: np.ndarray | None = None
    coord: int = -1
    func: object = None          # None means identity (θ = q)
    terms: list = field(default_factory=list)   # trans: [(coord, func or None, axis)]
    radii: np.ndarray | None = None
    coords: tuple = ()           # coordinates this node's motion depends on
    joint: str = ""


@dataclass
class HingeLayout:
    """The variable ("hinge") nodes of a tree and their coordinate columns.

    Attributes
    ----------
    nodes : list[int]         variable nodes, parents first
    cols : list[slice]        per hinge node: its columns in the node-column space (K columns)
    anc_cols : list           per hinge node: (m,) int columns of its hinge ancestors and itself
    P : (K, nq)               node column -> coordinate (0/1)
    identity : bool           P is a permutation (every coordinate in exactly one node column)
    perm : (K,) int           coordinate of each node column
    primary : (nq,) int       first node column of each coordinate (−1: none)
    dups : list               (column, primary column of the same coordinate) of the others
    node_body : (nh,) int     per hinge node: the body whose subtree it moves (its joint's child)
    subtree : (nb, nh)        1 where the body lies in the hinge node's subtree
    """

    nodes: list
    cols: list
    anc_cols: list
    P: np.ndarray
    identity: bool
    perm: np.ndarray
    primary: np.ndarray
    dups: list
    node_body: np.ndarray
    subtree: np.ndarray


def _hinge_layout(tree) -> HingeLayout:
    anc = tree.node_ancestors
    N = len(tree.nodes)
    nq = len(tree.coordinate_names)
    hn = [i for i in range(1, N) if tree.nodes[i].kind != "fixed"]
    pos = {n: j for j, n in enumerate(hn)}
    cols, off, coord_of = [], 0, []
    for n in hn:
        k = len(tree.nodes[n].coords)
        cols.append(slice(off, off + k))
        coord_of += list(tree.nodes[n].coords)
        off += k
    anc_cols = []
    for n in hn:
        idx = []
        for m in anc[n] + [n]:
            if m in pos:
                sl = cols[pos[m]]
                idx += list(range(sl.start, sl.stop))
        anc_cols.append(np.array(idx, int))
    P = np.zeros((off, nq))
    P[np.arange(off), coord_of] = 1.0
    perm = np.array(coord_of, int)
    identity = off == nq and len(set(coord_of)) == nq
    primary = np.full(nq, -1)
    dups = []
    for a, cc in enumerate(coord_of):
        if primary[cc] < 0:
            primary[cc] = a
        else:
            dups.append((a, int(primary[cc])))
    jidx = {n: i for i, n in enumerate(tree.joint_names)}
    node_body = np.array([tree.joint_child_body[jidx[tree.nodes[n].joint]] for n in hn], int)
    nb = len(tree.body_names)
    S = np.zeros((nb, len(hn)))
    for b in range(nb):
        chain = set(anc[tree.body_node[b]] + [tree.body_node[b]])
        for j, i in enumerate(hn):
            if i in chain:
                S[b, j] = 1.0
    return HingeLayout(hn, cols, anc_cols, P, identity, perm, primary, dups, node_body, S)


@dataclass
class Tree:
    """A model compiled for kinematics and dynamics (see the module docstring).

    Attributes
    ----------
    nodes : list[Node]           parents come before children; node 0 is ground
    coordinate_names : list[str] model order (JointSet order)
    multibody_order : list[int]  coordinate indices in Simbody's mobility order (tree levels,
                                 then JointSet order): the column order of OpenSim's ID output
    body_names : list[str]
    body_node : (nb,) int        node of each body frame
    mass : (nb,), com : (nb, 3) body frame, inertia : (nb, 3, 3) about the COM, body frame
                                 (zero for a body of mass 0, as OpenSim/Simbody: the
                                 inertia of a massless body is ignored)
    gravity : (3,)
    joint_names : list[str]; joint_child_body : (nj,) body index of each joint's child
    joint_coords : list[list[int]] coordinate indices of each joint
    markers : dict name -> (body index or -1 for ground, (3,) location in the body frame)
    default_q : (nq,)
    angular_velocity_groups : list of (3,) coordinate-index triples whose Simbody mobilities
        (generalized speeds u) are the angular velocity ω_FM expressed in F rather than the
        Euler-angle rates: Ellipsoid, Scapulothoracic (its ellipsoid part), Ball and Free
        (rotations), as their joint types declare (:class:`arthron.multibody.joints.JointType`).
        See :func:`~arthron.multibody.kinematics.qdot_from_speeds`.
    joint_parent_body : (nj,) body index of each joint's parent (−1: ground)
    joint_nodes : list[list[int]] the variable nodes of each joint
    joint_parent_frame, joint_child_frame : list[Transform] each joint's F in its parent body
        (or ground) and M in its child body

    Topology, computed at construction (fields not passed to the constructor):

    node_parent : (N,) int              parent node (−1 for ground)
    node_ancestors : list[list[int]]    ancestors of each node, root first (self excluded)
    body_parent : (nb,) int             parent body through the body's joint (−1: ground)
    body_children : list[list[int]]     child bodies of each body
    body_order : list[int]              bodies, parents first (increasing body node)
    joint_node_coords : list[list[int]] coordinates the joint's nodes move, in node order (the
                                        column order of its motion subspace)
    hinges : HingeLayout                variable nodes, their coordinate columns and subtrees
    regular_mass : bool                 every body has positive mass and a regular inertia
    """

    nodes: list
    coordinate_names: list
    multibody_order: list
    body_names: list
    body_node: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia: np.ndarray
    gravity: np.ndarray
    joint_names: list
    joint_child_body: np.ndarray
    joint_parent_body: np.ndarray
    joint_coords: list
    joint_nodes: list
    markers: dict
    default_q: np.ndarray
    model_name: str = ""
    angular_velocity_groups: list = field(default_factory=list)
    joint_parent_frame: list = field(default_factory=list)
    joint_child_frame: list = field(default_factory=list)
    node_parent: np.ndarray = field(init=False, repr=False)
    node_ancestors: list = field(init=False, repr=False)
    body_parent: np.ndarray = field(init=False, repr=False)
    body_children: list = field(init=False, repr=False)
    body_order: list = field(init=False, repr=False)
    joint_node_coords: list = field(init=False, repr=False)
    hinges: HingeLayout = field(init=False, repr=False)
    regular_mass: bool = field(init=False, repr=False)

    def __post_init__(self):
        N = len(self.nodes)
        self.node_parent = np.array([nd.parent for nd in self.nodes], int)
        anc = [[] for _ in range(N)]
        for i in range(1, N):
            p = self.nodes[i].parent
            anc[i] = anc[p] + [p]
        self.node_ancestors = anc
        nb = len(self.body_names)
        bp = np.full(nb, -1)
        bp[np.asarray(self.joint_child_body, int)] = self.joint_parent_body
        self.body_parent = bp
        self.body_children = [[] for _ in range(nb)]
        for b in range(nb):
            if bp[b] >= 0:
                self.body_children[bp[b]].append(b)
        self.body_order = sorted(range(nb), key=lambda b: self.body_node[b])
        jnc = []
        for jn in self.joint_nodes:
            cl = []
            for n in jn:
                for c in self.nodes[n].coords:
                    if c not in cl:
                        cl.append(c)
            jnc.append(cl)
        self.joint_node_coords = jnc
        self.hinges = _hinge_layout(self)
        self.regular_mass = bool(np.all(np.asarray(self.mass) > 0)
                                 and np.all(np.abs(np.linalg.det(np.asarray(self.inertia).reshape(-1, 3, 3)))
                                            > 1e-300))

    @property
    def nq(self) -> int:
        return len(self.coordinate_names)

    @property
    def nb(self) -> int:
        return len(self.body_names)

    def coordinate_index(self, name: str) -> int:
        try:
            return self.coordinate_names.index(name)
        except ValueError:
            raise ModelFileError(f"model '{self.model_name}' has no coordinate '{name}'") from None

    def body_index(self, name: str) -> int:
        if name in ("ground", GROUND):
            return -1
        n = name[len("/bodyset/"):] if name.startswith("/bodyset/") else name
        try:
            return self.body_names.index(n)
        except ValueError:
            raise ModelFileError(f"model '{self.model_name}' has no body '{name}'") from None


#: axis (its bytes) -> ``frame_with_z(axis)`` (read-only): a pure function of the axis, which
#: few distinct values take (joint axes), computed once per process
_FRAME_WITH_Z: dict = {}


def _frame_with_z(axis) -> np.ndarray:
    """:func:`arthron.geometry.spatial.frame_with_z` of a joint axis, remembered by its value."""
    a = np.asarray(axis, float)
    key = (a.shape, a.tobytes())
    Q = _FRAME_WITH_Z.get(key)
    if Q is None:
        if len(_FRAME_WITH_Z) > 4096:
            _FRAME_WITH_Z.clear()
        Q = frame_with_z(a)
        Q.flags.writeable = False
        _FRAME_WITH_Z[key] = Q
    return Q


def _rotations_about_z(nodes):
    """Re-express every ``rot`` node as a rotation about its local z axis.

    A rotation about a unit axis a equals ``Q Rz(θ) Qᵀ`` with Q a fixed rotation whose z column
    is a; Q goes into the node's pre-transform and Qᵀ into its children's. Body frames, node
    origins and hinge axes are unchanged; per frame the rotation is then a mix of two columns
    instead of a 3×3 product.
    """
    for i, nd in enumerate(nodes):
        if nd.kind != "rot" or np.array_equal(nd.axis, (0.0, 0.0, 1.0)):     # exactly z already
            continue
        Q = _frame_with_z(nd.axis)
        nd.R0 = nd.R0 @ Q
        nd.axis = np.array([0.0, 0.0, 1.0])
        for ch in nodes[i + 1:]:
            if ch.parent == i:
                ch.R0 = Q.T @ ch.R0
                ch.p0 = Q.T @ ch.p0


def compile_model(model: Model) -> Tree:
    """Compile a :class:`Model` into a :class:`Tree`.

    Raises
    ------
    ModelFileError for joints that do not form a tree rooted at ground.
    UnsupportedFeature for joint types arthron does not implement.
    """
    _check_masses(require_model(model))
    coords = list(model.coordinates.values())
    cnames = [c.name for c in coords]
    cidx = {n: i for i, n in enumerate(cnames)}
    body_names = list(model.bodies)
    bidx = {f"/bodyset/{n}": i for i, n in enumerate(body_names)}
    # Order joints parent-first (BFS by level, JointSet order within a level, as OpenSim's
    # multibody graph does).
    joints = list(model.joints.values())
    info = {}
    for j in joints:
        pb, XPF = model.frame_in_base(j.parent_frame)
        cb, XCM = model.frame_in_base(j.child_frame)
        info[j.name] = (pb, XPF, cb, XCM)
    placed = {GROUND}
    order = []
    remaining = joints[:]
    while remaining:
        level = [j for j in remaining if info[j.name][0] in placed]
        if not level:
            names = ", ".join(j.name for j in remaining)
            raise ModelFileError(f"joints not connected to ground: {names}", model.source)
        for j in level:
            placed.add(info[j.name][2])
        order += level
        placed_now = {id(j) for j in level}         # (by identity: no field-by-field __eq__)
        remaining = [j for j in remaining if id(j) not in placed_now]
    nodes = [Node(parent=-1, R0=np.eye(3), p0=np.zeros(3), joint="ground")]
    body_node = np.full(len(body_names), -1)
    node_of = {GROUND: 0}
    joint_nodes = {}
    for j in order:
        pb, XPF, cb, XCM = info[j.name]
        ops = [("fixed", XPF)] + joint_ops(model, j, cidx) + [("fixed", XCM.inverse())]
        parent = node_of[pb]
        pending = Transform()
        jn = []
        for op in ops:
            if op[0] == "fixed":
                pending = pending @ op[1]
                continue
            n = Node(parent=parent, R0=pending.R.copy(), p0=pending.p.copy(), kind=op[0], joint=j.name)
            if op[0] == "rot":
                n.axis, n.coord, n.func = op[1], op[2], op[3]
                n.coords = (op[2],)
            elif op[0] == "trans":
                n.terms = op[1]
                n.coords = tuple(sorted({c for c, _, _ in op[1]}))
            elif op[0] == "ellip":
                n.radii, n.coords = np.asarray(op[1], float), (op[2], op[3])
            nodes.append(n)
            parent = len(nodes) - 1
            jn.append(parent)
            pending = Transform()
        nodes.append(Node(parent=parent, R0=pending.R.copy(), p0=pending.p.copy(), joint=j.name))
        node_of[cb] = len(nodes) - 1
        body_node[bidx[cb]] = len(nodes) - 1
        joint_nodes[j.name] = jn
    if np.any(body_node < 0):
        missing = [body_names[i] for i in np.where(body_node < 0)[0]]
        raise ModelFileError(f"bodies without a joint: {', '.join(missing)}", model.source)
    _rotations_about_z(nodes)
    mb_order = [cidx[c.name] for j in order for c in j.coordinates]
    av_groups = [[cidx[c.name] for c in j.coordinates[:3]] for j in order
                 if joint_type(j.type, j.name, model.source).angular_velocity]
    markers = {}
    for mk in model.markers.values():
        base, X = model.frame_in_base(mk.parent_frame)
        markers[mk.name] = (bidx.get(base, -1), X.apply(mk.location))
    bodies = [model.bodies[n] for n in body_names]
    return Tree(
        nodes=nodes, coordinate_names=cnames, multibody_order=mb_order, body_names=body_names,
        body_node=body_node,
        mass=np.array([b.mass for b in bodies], float),
        com=np.array([b.mass_center for b in bodies], float).reshape(-1, 3),
        # A massless body has no inertia, whatever its file says: Simbody stores a body's
        # inertia per unit mass (MassProperties' unit inertia is zero when the mass is zero),
        # so OpenSim ignores the inertia of a body of mass 0.
        inertia=np.array([b.inertia if b.mass != 0 else np.zeros((3, 3)) for b in bodies],
                         float).reshape(-1, 3, 3),
        gravity=np.asarray(model.gravity, float),
        joint_names=[j.name for j in order],
        joint_child_body=np.array([bidx[info[j.name][2]] for j in order]),
        joint_parent_body=np.array([bidx.get(info[j.name][0], -1) for j in order]),
        joint_coords=[[cidx[c.name] for c in j.coordinates] for j in order],
        joint_nodes=[joint_nodes[j.name] for j in order],
        joint_parent_frame=[info[j.name][1] for j in order],
        joint_child_frame=[info[j.name][3] for j in order],
        markers=markers,
        default_q=np.array([c.default_value for c in coords], float),
        model_name=model.name,
        angular_velocity_groups=av_groups,
    )


def _check_masses(model: Model) -> None:
    """A negative or non-finite body mass, or a non-finite mass centre or inertia, is refused
    (ModelFileError naming the body), as OpenSim 4.6's ``Body::getMassProperties`` refuses a
    negative mass at ``initSystem`` ("has unspecified or negative mass"). A rotational
    default value more than 2π outside its range is warned about (degrees given for radians)."""
    for b in model.bodies.values():
        m = float(b.mass)
        if not np.isfinite(m) or m < 0:
            raise ModelFileError(f"body '{b.name}' has mass {m:g} kg: a mass must be finite and not "
                                 "negative (OpenSim 4.6 refuses it too)", model.source, f"<Body name='{b.name}'>")
        if not (np.all(np.isfinite(b.mass_center)) and np.all(np.isfinite(b.inertia))):
            raise ModelFileError(f"body '{b.name}' has a non-finite mass centre or inertia",
                                 model.source, f"<Body name='{b.name}'>")
    # a default set by hand in degrees (90 for a right angle) would be taken as 90 rad
    warn_degrees(model, [c.default_value for c in model.coordinates.values()],
                 f"model '{model.name}': rotational coordinate default value(s)", stacklevel=4)


def warn_degrees(model: Model, q, what: str, stacklevel: int = 3):
    """Warn (ArthronWarning) when a rotational value of the pose ``q`` ((nq,), radians, metres;
    the model's coordinate order) lies more than 2π outside its coordinate's range: a value
    given in degrees (90 for a right angle would be taken as 90 rad). ``what`` opens the
    message (e.g. "q0: rotational coordinate value(s)"); it names each such coordinate and
    value. Non-finite values are left to the callers' own checks. Returns ``q``."""
    far = [f"{c.name} = {float(v):g}" for c, v in zip(model.coordinates.values(), np.ravel(q))
           if c.motion_type == "rotational" and np.isfinite(v)
           and not min(c.range) - 2 * np.pi <= v <= max(c.range) + 2 * np.pi]
    if far:
        warnings.warn(f"{what} more than 2π outside their ranges, in radians: "
                      f"{', '.join(far[:5])}{' ...' if len(far) > 5 else ''} "
                      "(degrees? convert with numpy.deg2rad)", ArthronWarning, stacklevel=stacklevel)
    return q


def check_q(tree: Tree, q, name: str = "q") -> np.ndarray:
    """``q`` as a float array (T, nq) (one pose (nq,) becomes (1, nq)); OptionError naming the
    argument, its shape and the model's coordinate order when its last axis is not ``nq`` or it
    has more than two axes (a transposed (nq, T) array is named as such), and naming the first
    coordinate and frame (row) of a NaN or infinite value (which would come out of kinematics,
    path lengths and moment arms as NaN without a word). One ``np.isfinite`` over the array."""
    q = np.asarray(q, dtype=float)
    shape = q.shape
    if q.ndim == 1:
        q = q[None]
    if q.ndim != 2 or q.shape[1] != tree.nq:
        hint = " (transposed: frames are the leading axis, pass q.T)" if q.ndim == 2 and q.shape[0] == tree.nq else ""
        names = ", ".join(tree.coordinate_names[:8]) + (" ..." if tree.nq > 8 else "")
        raise OptionError(f"{name} must have shape (T, nq) or (nq,) with nq = {tree.nq} ({names}), "
                          f"got {shape}{hint}")
    if not np.isfinite(q).all():
        bad = ~np.isfinite(q)
        t, i = (int(k[0]) for k in np.nonzero(bad))
        where = f"frame {t} (of {len(q)}), " if len(shape) == 2 else ""
        more = f" ({int(bad.sum()) - 1} more non-finite value(s))" if bad.sum() > 1 else ""
        raise OptionError(f"{name} is {q[t, i]} at {where}coordinate '{tree.coordinate_names[i]}' "
                          f"of model '{tree.model_name}': a pose must be finite{more}")
    return q


def default_coordinates(tree: Tree, T: int = 1) -> np.ndarray:
    """Default coordinate values, shape (T, nq)."""
    return np.tile(tree.default_q, (T, 1))
