"""Muscle and ligament paths: lengths, lengthening speeds, moment arms and path forces.

A path (OpenSim ``GeometryPath``) is an ordered list of path points on bodies:

* ``PathPoint``: fixed on its frame;
* ``ConditionalPathPoint``: part of the path only while its coordinate lies in ``range``
  (bounds widened by 1e-5, as OpenSim's ``isActive`` does);
* ``MovingPathPoint``: its x, y, z in the frame are functions of coordinates, evaluated (as
  OpenSim 4.6 does) at the coordinate clamped to its ``range``, so that beyond the range the
  point stands still; their derivatives (moment arms, speeds) are taken at the coordinate
  itself, as OpenSim's are;

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

FunctionBasedPaths (OpenSim 4.5+, :class:`arthron.models.model.FunctionBasedPath`) have no
points: their length is a function of some coordinates, their moment arms the moment-arm
functions or ``-∂length/∂q`` (OpenSim 4.6's ``FunctionBasedPath::computeMomentArm``, which
neither couples them through constraints nor maps them to angular-velocity speeds), their
lengthening speed the speed function of ``(q, q̇)`` or ``-Σ r q̇``; their tension applies only
the generalized forces ``tension × r`` on their coordinates (OpenSim's ``addInEquivalentForces``
applies mobility forces, no body forces): :func:`path_body_forces` puts them in ``mobility``,
and :func:`moment_arms_and_node_forces` (the node pulls of the E-matrix reaction) refuses such
paths (the reaction maps of the solvers give them zero columns: at given accelerations
generalized forces change no joint's transmitted force). They are evaluated here, above the geometry of :mod:`arthron.multibody.path_geometry`;
agreement with OpenSim 4.6 in ``tests/test_function_based_path.py``.

Everything is vectorized over frames: coordinates ``q`` are (T, nq) in model order (radians,
metres); results are (T, n_paths) or (T, n_paths, nq). There is a loop over paths and over a
path's points, never over frames.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..errors import OptionError, UnsupportedFeature
from .constrained_dynamics import independent_singular_values
from .kinematics import Kinematics, Tree, _euler_xyz_rate_matrix, check_q, forward_kinematics, velocity_map
from .path_compile import PathSet, WrapObjectData, _FunctionPath, compile_paths, shared_paths  # noqa: F401  (public API)
from ..geometry.spatial import cross as _cross
from ..geometry.wrap_common import _divide_positive, _norm as _wr_norm
from .path_geometry import (PathState, _compute_many, _compute_one, _frames,  # noqa: F401
                            compute_paths)

__all__ = ["moment_arms_and_node_forces", "PathSet", "compile_paths", "shared_paths", "path_lengths", "moment_arms", "lengthening_speeds", "path_states",
           "path_generalized_forces", "path_body_forces", "PathLoads", "PathState",
           "compute_paths", "path_external_loads", "moment_arms_excursion", "coupling_vectors", "speed_map",
           "WrapObjectData"]


# ------------------------------------------------------------------------ FunctionBasedPath
def _fn_values(fn, X):
    """A path function at arguments X (T, n): a MultivariatePolynomialFunction (``values``) or
    a one-argument Function of X[:, 0]."""
    return fn.values(X) if hasattr(fn, "values") else fn.value(X[:, 0])


def _fn_length(p: _FunctionPath, q):
    return _fn_values(p.length, q[:, p.coords])


def _fn_moment_arms(p: _FunctionPath, q):
    """(T, d): the moment-arm functions, or ``-∂length/∂q`` (OpenSim 4.6)."""
    X = q[:, p.coords]
    if p.moment_arms:
        return np.stack([_fn_values(f, X) for f in p.moment_arms], 1)
    if hasattr(p.length, "gradient"):
        return -p.length.gradient(X)
    return -p.length.derivative(X[:, 0], 1)[:, None]


def _fn_row(p: _FunctionPath, q, nq):
    row = np.zeros((q.shape[0], nq))
    np.add.at(row.T, p.coords, _fn_moment_arms(p, q).T)
    return row


def _geometry_states(pathset: PathSet, q, Rb, ob):
    """``_compute_many`` over the geometric paths; ``(None, [])`` in place of each
    FunctionBasedPath (aligned with ``pathset.paths``)."""
    fb = set(pathset.function_based)
    if not fb:
        return _compute_many(pathset, pathset.paths, q, Rb, ob)
    geo = [p for i, p in enumerate(pathset.paths) if i not in fb]
    sd = iter(_compute_many(pathset, geo, q, Rb, ob) if geo else ())
    return [(None, []) if i in fb else next(sd) for i in range(len(pathset.paths))]


# ---------------------------------------------------------------------------------- public API
def path_lengths(pathset: PathSet, tree: Tree, q, kin: Kinematics | None = None,
                 states=None) -> np.ndarray:
    """Path lengths (T, n_paths) in metres.

    Parameters
    ----------
    pathset : PathSet          from :func:`compile_paths`
    tree : Tree
    q : (T, nq) or (nq,)       coordinates, model order, rad / m
    kin : Kinematics, optional  poses already computed for ``q``
    states : the paths already rebuilt at ``q`` (:func:`path_states`), not recomputed

    Raises
    ------
    UnsupportedFeature for wrap objects arthron cannot reproduce (see
    :mod:`arthron.geometry.wrapping`).

    Source: OpenSim ``GeometryPath::computePath`` / ``calcLengthAfterPathComputation``.
    """
    q = check_q(tree, q)
    fb = pathset.function_based
    if states is not None:
        L = np.empty((q.shape[0], len(pathset.paths)))
        for i, (st, _) in enumerate(states):
            L[:, i] = _fn_length(pathset.paths[i], q) if st is None else st.length
        return L
    if not fb and pathset.paths:
        states = compute_paths(pathset, tree, q, kin)
        return np.stack([s.length for s in states], 1)
    L = np.empty((q.shape[0], len(pathset.paths)))
    geo = [i for i in range(len(pathset.paths)) if i not in fb]
    if geo:
        for i, st in zip(geo, compute_paths(pathset, tree, q, kin, which=geo)):
            L[:, i] = st.length
    for i in fb:
        L[:, i] = _fn_length(pathset.paths[i], q)
    return L


def path_states(pathset: PathSet, tree: Tree, q, kin: Kinematics | None = None) -> list:
    """The rebuilt paths at ``q`` (T, nq), one ``(PathState, moving-point terms)`` pair per path
    of ``pathset`` (all paths in lockstep, as :func:`moment_arms` computes them; ``(None, [])``
    for a FunctionBasedPath). Pass them as
    ``states=`` to :func:`moment_arms` and :func:`path_body_forces` at the same ``q`` to wrap
    the paths once for both."""
    q = check_q(tree, q)
    if kin is None:
        kin = forward_kinematics(tree, q)
    Rb, ob = _frames(tree, kin)
    return _geometry_states(pathset, q, Rb, ob)


def _origin_velocity_map(tree: Tree, q, kin: Kinematics):
    """``velocity_map(tree, q, kin, point="origin")`` (T, nb, 6, nq), kept on ``kin``
    (read-only, as :func:`~arthron.multibody.path_geometry._frames` keeps the poses) for the
    next path function called with the same poses: the moment arms and the lengthening speeds
    of one static optimization share it. It depends on the poses alone (``q`` gives only the
    number of frames)."""
    memo = getattr(kin, "_origin_velocity_map", None)
    if memo is not None and memo[0] is tree:
        return memo[1]
    D = velocity_map(tree, q, kin, point="origin")
    D.flags.writeable = False
    kin._origin_velocity_map = (tree, D)
    return D


def _stacked(states, kin):
    """The geometric paths of ``states`` (:func:`path_states`) side by side: ``(geo`` indices,
    their PathStates, node counts ``Ks``, P, X (the direction points, ``G`` where set), tag,
    body (T, ΣK), the segment vectors ``d = X[:, 1:] − X[:, :-1]`` and their norms ``n``
    (T, ΣK − 1)``)``; kept on ``kin`` for the same ``states`` (the moment arms and the
    lengthening speeds of one static optimization stack the same paths; read them, never
    write into them)."""
    keys = tuple(id(st) for st, _ in states)
    memo = getattr(kin, "_stacked_paths", None) if kin is not None else None
    if memo is not None and memo[0] is states and memo[1] == keys:
        return memo[2]
    geo = [i for i, (st, _) in enumerate(states) if st is not None]
    sts = [states[i][0] for i in geo]
    Ks = [st.P.shape[1] for st in sts]
    cat = (lambda xs: xs[0]) if len(sts) == 1 else (lambda xs: np.concatenate(xs, 1))  # noqa: E731
    X = cat([st.P if st.G is None else st.G for st in sts])
    d = X[:, 1:] - X[:, :-1]
    out = (geo, sts, Ks, cat([st.P for st in sts]), X, cat([st.tag for st in sts]),
           cat([st.body for st in sts]), d, _wr_norm(d))
    if kin is not None:
        kin._stacked_paths = (states, keys, out)
    return out


def _rows_of(a, flat):
    """``a[tt, b]`` for ``a`` (T, n, 3) and ``flat = tt·n + b`` (T, K): the same values,
    gathered by one ``take`` over the flattened first two axes (several times faster than
    indexing with two index arrays)."""
    return a.reshape(-1, 3).take(flat, axis=0)


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
    """−∂l/∂q (T, n_paths, nq) of the rebuilt paths: the node pulls of every geometric path side
    by side in one (T, ΣK) node list (segments never join two paths), their generalized forces
    through the nodes' bodies' velocity maps, summed per path; a FunctionBasedPath's row (its
    ``(None, [])`` entry) from its functions."""
    T = q.shape[0]
    nq = tree.nq
    n_paths = len(states_dloc)
    out = np.zeros((T, n_paths, nq))
    geo = np.array([i for i, (st, _) in enumerate(states_dloc) if st is not None], np.intp)
    for i, (st, _) in enumerate(states_dloc):
        if st is None:                                              # FunctionBasedPath
            out[:, i] = _fn_row(pathset.paths[i], q, nq)
    if geo.size == 0:
        return out
    D = _origin_velocity_map(tree, q, kin)                           # (T, nb, 6, nq)
    D = np.concatenate([D, np.zeros((T, 1, 6, nq))], 1)             # ground last
    Rb, ob = _frames(tree, kin)
    _, sts, Ks, P, X, tag, body, d, n = _stacked(states_dloc, kin)
    off = np.array([0, *itertools.accumulate(Ks[:-1])], np.intp)
    # unit pulls along each segment (see _node_forces), none across two paths
    ok = (tag[:, :-1] >= 0) & (tag[:, 1:] >= 0) & (body[:, :-1] != body[:, 1:]) & (n > 0)
    ok[:, off[1:] - 1] = False
    u = _divide_positive(d, n[..., None], ok[..., None])
    f = np.zeros_like(P)
    f[:, :-1] += u
    f[:, 1:] -= u
    tt = np.arange(T)[:, None]
    r = P - _rows_of(ob, tt * ob.shape[1] + body)
    m = _cross(r, f)                    # (np.cross's arithmetic, without its overhead)
    # the pulls (force, moment about the body origin) summed per (path, body) pair present,
    # then through that body's velocity map: ma[t, p] = Σ_β S[t, (p, β)] · D[t, β]
    ng = geo.size
    nb1 = D.shape[1]
    key = np.repeat(np.arange(ng), Ks) * nb1 + body                  # (T, ΣK) pair of each node
    present = np.zeros(ng * nb1, bool)
    present[key.ravel()] = True
    pairs = np.flatnonzero(present)
    lut = np.zeros(ng * nb1, np.intp)
    lut[pairs] = np.arange(pairs.size)
    npair = pairs.size
    slot = (tt * npair + lut[key]).ravel()
    S = np.empty((6, T, npair))
    for j in range(3):
        S[j] = np.bincount(slot, weights=f[..., j].ravel(), minlength=T * npair).reshape(T, npair)
        S[3 + j] = np.bincount(slot, weights=m[..., j].ravel(), minlength=T * npair).reshape(T, npair)
    S = np.moveaxis(S, 0, -1)                                        # (T, npair, 6)
    pair_path, pair_body = np.divmod(pairs, nb1)
    for beta in np.unique(pair_body):
        if beta == nb1 - 1:                                          # ground: no motion
            continue
        sel = np.flatnonzero(pair_body == beta)                      # one pair per path
        out[:, geo[pair_path[sel]]] += S[:, sel] @ D[:, beta]
    # moving points: motion of the point on its body
    for g, i in enumerate(geo):
        st, dloc = states_dloc[i]
        if not dloc:
            continue
        fi = f[:, off[g]:off[g] + Ks[g]]
        for k, c, dl in dloc:
            pos = st.tag == k                                        # (T, K)
            fk = np.einsum("tk,tki->ti", pos, fi)
            bk = pathset.paths[i].body[k]
            out[:, i, c] += np.einsum("ti,tij,tj->t", fk, Rb[:, bk], dl)
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


# a coordinate whose unit speed, projected onto the constraints, keeps less than this: it cannot move
_STILL = 1e-9


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
    q = check_q(tree, q)
    if kin is None:
        kin = forward_kinematics(tree, q)
    T, nq = q.shape
    D = _origin_velocity_map(tree, q, kin)
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
        # ek projected onto the null space of Gf; rows that are rounding noise (a loop the
        # locks already close, whose Jacobian on the free coordinates is ~1e-17) constrain
        # nothing: singular values below an absolute 1e-10 are dropped (relative to the
        # largest alone, noise-only rows were inverted and the speeds came out arbitrary)
        _, S, Vt = np.linalg.svd(Gf, full_matrices=False)
        keep = independent_singular_values(S)
        V = Vt * keep[:, :, None]
        u = ek - np.einsum("tri,trj,j->ti", V, V, ek)
        col = np.zeros((T, nq))
        col[:, free] = u
        # a coordinate that cannot move (dependent on locked ones only, or a locked one the
        # constraints hold, as the welded condyles of some full-body knees): its projected unit
        # speed is 0 to rounding, the moment arms about it are undefined: NaN (OpenSim's
        # computeMomentArm returns NaN there, or rounding noise divided by rounding noise)
        ck = col[:, k:k + 1]
        moves = np.abs(ck) > _STILL
        C[:, :, k] = np.where(moves, col / np.where(moves, ck, 1.0), np.nan)
    return C


def moment_arms(pathset: PathSet, tree: Tree, q, kin: Kinematics | None = None,
                return_lengths: bool = False, coupled: bool = True, states=None):
    """Moment arms ``r = -∂l/∂q`` (T, n_paths, nq): metres for rotational coordinates,
    dimensionless for translational ones.

    Analytic (node pulls times point velocity maps, see the module docstring). With
    ``coupled`` (default) the result is what OpenSim's ``computeMomentArm`` returns: the
    generalized force of a unit tension per unit generalized speed (:func:`speed_map`:
    different from ``-∂l/∂q`` for EllipsoidJoint/ScapulothoracicJoint angles), combined along
    :func:`coupling_vectors` for models with constraints; with ``coupled=False`` the plain
    ``-∂l/∂q_k`` with all other coordinates held is returned.
    With ``return_lengths`` the lengths (T, n_paths) are returned too. ``states``: the
    paths already rebuilt at ``q`` (:func:`path_states`), not recomputed.

    Source: OpenSim ``MomentArmSolver::solve`` with ``GeometryPath::addInEquivalentForces``.
    """
    q = check_q(tree, q)
    fb = pathset.function_based
    if pathset.paths and len(fb) == len(pathset.paths):     # no geometry: no kinematics needed
        ma = np.stack([_fn_row(p, q, tree.nq) for p in pathset.paths], 1)
        if return_lengths:
            return ma, np.stack([_fn_length(p, q) for p in pathset.paths], 1)
        return ma
    if kin is None:
        kin = forward_kinematics(tree, q)
    sd = path_states(pathset, tree, q, kin) if states is None else states
    ma = _moment_arms_from_states(pathset, tree, q, kin, sd)
    if coupled:
        if pathset.angular_speed_joints:
            ma = np.einsum("tfj,tjk->tfk", ma, speed_map(pathset, q))
        C = coupling_vectors(pathset, tree, q, kin)
        if C is not None:
            ma = np.einsum("tfj,tjk->tfk", ma, C)
        for i in fb:                              # OpenSim returns these as they are
            ma[:, i] = _fn_row(pathset.paths[i], q, tree.nq)
    if return_lengths:
        return ma, np.stack([_fn_length(pathset.paths[i], q) if s is None else s.length
                             for i, (s, _) in enumerate(sd)], 1)
    return ma


def moment_arms_and_node_forces(pathset: PathSet, tree: Tree, q, kin: Kinematics | None = None):
    """One geometry pass for both: the moment arms ``−∂l/∂q`` (T, n_paths, nq), uncoupled (as
    :func:`moment_arms` with ``coupled=False``), and per path ``(body (T, K), force (T, K, 3))``,
    the ground-frame force a unit tension applies at each node (padding rows zero; the
    ``points`` of :func:`path_body_forces` for unit tensions, without recomputing the paths)."""
    q = check_q(tree, q)
    if kin is None:
        kin = forward_kinematics(tree, q)
    fb = pathset.function_based
    if fb:
        raise UnsupportedFeature(
            f"the E-matrix reaction needs the forces a path applies on bodies; the "
            f"FunctionBasedPath of {', '.join(repr(pathset.names[i]) for i in fb)} applies "
            "generalized forces only (as OpenSim's FunctionBasedPath does), not body forces")
    Rb, ob = _frames(tree, kin)
    sd = _compute_many(pathset, pathset.paths, q, Rb, ob)
    ma = _moment_arms_from_states(pathset, tree, q, kin, sd)
    return ma, [(st.body, _node_forces(st, pathset.nb)) for st, _ in sd]


def moment_arms_excursion(pathset: PathSet, tree: Tree, q, coordinates=None,
                          h: float = 1e-6) -> np.ndarray:
    """Tendon-excursion moment arms ``-(l(q + h e_j) - l(q - h e_j)) / 2h`` (T, n_paths, nq).

    ``coordinates``: indices or names of the coordinates to differentiate (others are left 0;
    OptionError for one the model does not have). Central differences with step ``h`` (rad or m).
    """
    q = check_q(tree, q)
    T = q.shape[0]
    cols = range(tree.nq) if coordinates is None else [_coordinate_index(tree, c) for c in coordinates]
    out = np.zeros((T, len(pathset.paths), tree.nq))
    for j in cols:
        qp, qm = q.copy(), q.copy()
        qp[:, j] += h
        qm[:, j] -= h
        dl = path_lengths(pathset, tree, qp) - path_lengths(pathset, tree, qm)
        out[:, :, j] = -dl / (2 * h)
    return out


def _coordinate_index(tree: Tree, c) -> int:
    if isinstance(c, str) and c in tree.coordinate_names:
        return tree.coordinate_names.index(c)
    if isinstance(c, (int, np.integer)) and -tree.nq <= c < tree.nq:
        return int(c) % tree.nq
    raise OptionError(f"no coordinate {c!r} in the model (coordinates: {', '.join(tree.coordinate_names[:10])}"
                      f"{' ...' if tree.nq > 10 else ''}; names or indices 0..{tree.nq - 1})")


def lengthening_speeds(pathset: PathSet, tree: Tree, q, qd, kin: Kinematics | None = None,
                       moment_arms_uncoupled=None, states=None, kin_velocities: bool = False):
    """Lengthening speeds dl/dt (T, n_paths), m/s, as OpenSim 4.6's
    ``GeometryPath::getLengtheningSpeed`` computes them: over each pair of consecutive points
    of the current path (path points and wrap tangent points, with the positions OpenSim
    measures directions with, ``PathState.G``), the relative velocity of the two points (each
    moving with its body, a moving path point also along its coordinate) projected on their
    unit direction, summed. This is ``-r(q) · q̇`` with ``r`` the moment arms wherever the
    path's force directions and its points coincide; on paths over several wrap objects
    OpenSim's speed and its moment arms differ slightly (arm26's TRIlong: 1.2e-3 m/s at random
    speeds), and this returns OpenSim's speed (to 2e-15). A FunctionBasedPath gives its
    ``lengthening_speed_function`` of ``(q, q̇)``, or ``-r · q̇``.

    q, qd : (T, nq) coordinates and their rates; kin : poses at ``q`` (computed if None);
    kin_velocities : ``kin`` holds the velocities at this ``qd`` too
    (``forward_kinematics(tree, q, qd)``): the bodies' velocities are read from it (equal to
    rounding; not a velocity map times q̇, 5× faster);
    states : :func:`path_states` at ``q`` when already built; moment_arms_uncoupled : the
    moment arms (T, n_paths, nq) of :func:`moment_arms` (``coupled=False``), used only for
    FunctionBasedPaths without a speed function.
    """
    q = check_q(tree, q)
    qd = np.broadcast_to(check_q(tree, qd, "qd"), q.shape)
    T = q.shape[0]
    n = len(pathset.paths)
    v = np.zeros((T, n))
    fb = set(pathset.function_based)
    if len(fb) < n:
        if kin is None:
            kin = forward_kinematics(tree, q)
        if states is None:
            states = path_states(pathset, tree, q, kin)
        if kin_velocities:
            Vo, W = kin.nodes("v", tree.body_node), kin.nodes("w", tree.body_node)
        else:
            D = _origin_velocity_map(tree, q, kin)                       # (T, nb, 6, nq)
            Vo = np.einsum("tbiq,tq->tbi", D[:, :, :3], qd)
            W = np.einsum("tbiq,tq->tbi", D[:, :, 3:], qd)
        Vo = np.concatenate([Vo, np.zeros((T, 1, 3))], 1)                 # ground last
        W = np.concatenate([W, np.zeros((T, 1, 3))], 1)
        Rb, ob = _frames(tree, kin)
        tt = np.arange(T)[:, None]
        # every geometric path's node list side by side (T, ΣK): the nodes' velocities and
        # the segments' unit directions in one pass, then each path's sum over its own
        # segments (the same per-path sums as one path at a time)
        geo, sts, Ks, P, X, tag, b, d, nrm = _stacked(states, kin)
        off = np.array([0, *itertools.accumulate(Ks)], np.intp)
        fi = tt * Vo.shape[1] + b                                       # (T, ΣK) rows of (T·(nb+1), 3)
        vel = _rows_of(Vo, fi) + _cross(_rows_of(W, fi), P - _rows_of(ob, fi))
        for g, i in enumerate(geo):                                     # moving path points
            for k, c, dl in states[i][1]:
                bk = pathset.paths[i].body[k]
                vk = np.einsum("tij,tj->ti", Rb[:, bk], dl) * qd[:, c:c + 1]
                vel[:, off[g]:off[g + 1]] += (sts[g].tag == k)[..., None] * vk[:, None, :]
        ok = (tag[:, :-1] >= 0) & (tag[:, 1:] >= 0) & (nrm > 0)
        u = _divide_positive(d, nrm[..., None], ok[..., None])
        dv = vel[:, 1:] - vel[:, :-1]
        for g, i in enumerate(geo):
            s = slice(off[g], off[g + 1] - 1)
            v[:, i] = np.einsum("tki,tki->t", dv[:, s], u[:, s])
    for i in fb:
        p = pathset.paths[i]
        if p.speed is not None:
            v[:, i] = _fn_values(p.speed, np.concatenate([q[:, p.coords], qd[:, p.coords]], 1))
        else:
            r = (moment_arms_uncoupled[:, i] if moment_arms_uncoupled is not None
                 else _fn_row(p, q, tree.nq))
            v[:, i] = -np.einsum("tq,tq->t", r, qd)
    return v


def path_generalized_forces(pathset: PathSet, tree: Tree, q, tensions,
                            kin: Kinematics | None = None) -> np.ndarray:
    """Generalized forces (T, nq) of path tensions (T, n_paths) or (n_paths,), newtons:
    ``τ = Σ_f tension_f r_f(q)`` (N·m for rotational, N for translational coordinates)."""
    q = check_q(tree, q)
    ten = np.broadcast_to(np.asarray(tensions, float), (q.shape[0], len(pathset.paths)))
    return np.einsum("tfq,tf->tq", moment_arms(pathset, tree, q, kin, coupled=False), ten)


@dataclass
class PathLoads:
    """Forces that path tensions apply.

    points : list per path of (body (T, K) int, nb = ground / padding, point (T, K, 3) ground
             position, force (T, K, 3) N in ground); padding rows have zero force.
    force : (T, nb, 3) total force on each body, ground frame (N)
    moment : (T, nb, 3) total moment about each body's origin, ground frame (N·m)
    mobility : (T, nq) generalized forces from moving path points sliding on their bodies,
               and those of FunctionBasedPaths (``tension × r`` on their coordinates; their
               ``points`` entry is empty)
    """

    points: list
    force: np.ndarray
    moment: np.ndarray
    mobility: np.ndarray


def path_body_forces(pathset: PathSet, tree: Tree, q, tensions,
                     kin: Kinematics | None = None, states=None) -> PathLoads:
    """Point forces that path tensions (T, n_paths) apply on the bodies they cross.

    Each node (path point or wrap tangent point) is pulled towards its neighbours along the
    path; nodes on the same body as their neighbour exchange no force (OpenSim's
    ``GeometryPath::addInEquivalentForces``). ``Dᵀ`` of these loads plus ``mobility`` equals
    :func:`path_generalized_forces`. ``states``: the paths already rebuilt at ``q``
    (:func:`path_states`), not recomputed.
    """
    q = check_q(tree, q)
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
    if states is None:     # all paths in lockstep (bit for bit what one at a time gives)
        states = _geometry_states(pathset, q, Rb, ob)
    bins, forces, moments = [], [], []
    for i, (p, (st, dloc)) in enumerate(zip(pathset.paths, states)):
        if st is None:     # FunctionBasedPath: generalized forces only (OpenSim's mobility forces)
            pts.append((np.full((T, 0), nb), np.zeros((T, 0, 3)), np.zeros((T, 0, 3))))
            mob += _fn_row(p, q, tree.nq) * ten[:, i, None]
            continue
        f = _node_forces(st, nb) * ten[:, i, None, None]
        pts.append((st.body, st.P, f))
        r = st.P - _rows_of(ob, tt * ob.shape[1] + st.body)
        bins.append(tt * (nb + 1) + st.body)
        forces.append(f)
        moments.append(np.cross(r, f))
        for k, c, dl in dloc:
            fk = np.einsum("tk,tki->ti", st.tag == k, f)
            mob[:, c] += np.einsum("ti,tij,tj->t", fk, Rb[:, p.body[k]], dl)
    if bins:    # each body's sum over the nodes on it, in path and node order (as np.add.at)
        idx = np.concatenate(bins, 1).ravel()
        for acc, vals in ((Fb, forces), (Mb, moments)):
            v = np.concatenate(vals, 1).reshape(-1, 3)
            for c in range(3):
                acc[..., c] = np.bincount(idx, v[:, c], T * (nb + 1)).reshape(T, nb + 1)
    return PathLoads(pts, Fb[:, :nb], Mb[:, :nb], mob)


def path_external_loads(pathset: PathSet, tree: Tree, q, tensions, kin: Kinematics | None = None,
                        states=None):
    """Path tensions (T, n_paths) N as body loads: ([ExternalLoad] one force at each body's
    origin plus the moment about it, ground frame, from :func:`path_body_forces`; mobility
    forces (T, nq) of moving path points and FunctionBasedPaths). ``kin``, ``states``: the
    poses and the paths already built at ``q``."""
    from .loads import ExternalLoad
    T = np.atleast_2d(q).shape[0]
    pl = path_body_forces(pathset, tree, q, tensions, kin=kin, states=states)
    loads = []
    for b in range(tree.nb):
        if not (pl.force[:, b].any() or pl.moment[:, b].any()):
            continue
        loads.append(ExternalLoad(body=tree.body_names[b], force=pl.force[:, b], point=np.zeros((T, 3)),
                                  torque=pl.moment[:, b], force_frame="ground",
                                  point_frame=tree.body_names[b],
                                  name=f"paths_on_{tree.body_names[b]}"))
    return loads, pl.mobility
