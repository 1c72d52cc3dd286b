"""The geometry of compiled paths for T frames at once, as OpenSim 4.6's
``GeometryPath::computePath`` builds it (:func:`compute_paths`): active points, then each wrap
object tried on every segment of its range (:func:`arthron.geometry.wrapping.wrap_segment`,
the registry of wrap surfaces), with OpenSim's passes over several wrap objects. See
:mod:`arthron.multibody.paths`.

The paths with the same number of wrap objects are computed as one group whose rows are
(path, frame) pairs (:class:`_Group`): every step of the path computation runs once per
group rather than once per path, and a step's segments go to one wrap call per wrap object
(:func:`_compute_many`). Each row is computed on its own, so the results equal those of one
path at a time bit for bit (tests/test_paths.py)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..errors import UnsupportedFeature
from ..geometry import wrapping as _wr
from ..geometry.wrap_kernels import use_kernel
from .kinematics import Kinematics, Tree, check_q, forward_kinematics

from .path_compile import PathSet, _Path, shared_path_cache
from .path_nodes import (_cached_positions, _cached_rows, _choose_segments, _compact,
                         _remove_wrap_nodes, _seg_lengths, _update_cache)

_COND_TOL = 1e-5
_WRAP_TOL = 0.0005  # m: OpenSim stops iterating over several wrap objects below this change


# ---------------------------------------------------------------------------------- geometry
def _frames(tree: Tree, kin: Kinematics):
    """Body rotations (T, nb+1, 3, 3) and origins (T, nb+1, 3), ground appended last; kept on
    ``kin`` (read-only) for the next path function called with the same poses."""
    memo = getattr(kin, "_path_frames", None)
    if memo is not None and memo[0] is tree:
        return memo[1], memo[2]
    R = kin.body_R(tree)
    o = kin.body_origin(tree)
    T = R.shape[0]
    Rg = np.broadcast_to(np.eye(3), (T, 1, 3, 3))
    Rb, ob = np.concatenate([R, Rg], 1), np.concatenate([o, np.zeros((T, 1, 3))], 1)
    Rb.flags.writeable = ob.flags.writeable = False
    kin._path_frames = (tree, Rb, ob)
    return Rb, ob


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
        for ax, fn, c, lo, hi in terms:
            if fn is None:
                continue
            x = q[:, c] if c >= 0 else np.zeros(T)
            # As OpenSim 4.6's MovingPathPoint: the location at the coordinate clamped to
            # its range (outside it the point stands still), while the derivative (moment
            # arms, speeds) is the function's at the coordinate itself
            xc = np.clip(x, lo, hi)
            if c >= 0 and np.array_equal(xc, x):   # not clamped: value and slope in one pass
                val, der, _ = fn.value_and_derivatives(x, 1)
            else:
                val, der = fn.value(xc), (fn.derivative(x, 1) if c >= 0 else None)
            v[:, ax] = val
            if c >= 0:
                d = per_c.setdefault(c, np.zeros((T, 3)))
                d[:, ax] += der
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


def compute_paths(pathset: PathSet, tree: Tree, q, kin: Kinematics | None = None,
                  which=None) -> list:
    """Rebuild paths for T frames: a :class:`PathState` per path (``which``: indices).
    OptionError for a q of the wrong shape or not finite (:func:`~arthron.multibody.tree.check_q`)."""
    q = check_q(tree, q)
    if kin is None:
        kin = forward_kinematics(tree, q)
    Rb, ob = _frames(tree, kin)
    which = range(len(pathset.paths)) if which is None else which
    return [sd[0] for sd in _compute_many(pathset, [pathset.paths[i] for i in which], q, Rb, ob)]


def _run(gen):
    """Drive one path group's computation (:func:`_group_gen`), answering its wrap requests
    one by one."""
    memo = {}
    try:
        reqs = next(gen)
        while True:
            reqs = gen.send([_wrap_request(r, [r], memo) for r in reqs])
    except StopIteration as e:
        return e.value


#: Wrap classes whose rows cost far more than looking them up: rows already wrapped on the
#: same object within one path computation (later passes of applyWrapObjects, where the
#: neighbouring wrap did not move the segment) are reused (a row's result depends only on it).
_MEMO_TYPES = ("WrapEllipsoid", "WrapTorus")
#: ... and those that do on the NumPy route only (the compiled cylinder wraps a row in about
#: the time of its look-up; NumPy's takes several times that: arm26's TRIlong, whose three
#: wrap objects take up to 8 passes, skips two of its four cylinder calls)
_MEMO_TYPES_NUMPY = ("WrapCylinder",)
#: odd 64-bit multipliers of the row hash (one per word of a key row)
_HASH_MUL = (np.arange(1, 8, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)


def _row_hash(k):
    """A 64-bit hash per row of the uint64 words ``k`` (n, 7) (wrapping products summed, as one
    integer matrix-vector product)."""
    return k @ _HASH_MUL


def _row_keys(x1, x2, sg):
    """The rows' bits as uint64 words (n, 7) and their hashes (:func:`_row_hash`)."""
    key = np.empty((len(x1), 7))
    key[:, :3], key[:, 3:6], key[:, 6] = x1, x2, sg
    key = key.view(np.uint64)
    return key, _row_hash(key)


def _wrap_rows(wo, method, x1, x2, single, memo):
    """``wrap_segment`` over rows x1, x2 (n, 3) with ``single`` (bool or (n,)); rows equal
    bit for bit to rows wrapped before on ``wo`` with ``method`` (recorded in ``memo``, a dict
    for one path computation) are taken from there (looked up by a hash of their bits,
    confirmed word by word; a row not found is wrapped)."""
    if (memo is None or len(x1) == 0 or (wo.type not in _MEMO_TYPES and (
            wo.type not in _MEMO_TYPES_NUMPY or use_kernel()))):
        return _wr.wrap_segment(wo, x1, x2, method, single=single)
    sg = np.broadcast_to(np.asarray(single, bool), (len(x1),))
    ent = memo.get((id(wo), method))
    if ent is None:   # the rows kept as they are; their keys made when the object comes again
        res = _wr.wrap_segment(wo, x1, x2, method, single=sg)
        memo[(id(wo), method)] = (None, (x1, x2, sg), tuple(np.array(o) for o in res))
        return res
    key, h = _row_keys(x1, x2, sg)
    old_k, old_h, old_res = ent if ent[0] is not None else (*_row_keys(*ent[1]), ent[2])
    order = np.argsort(old_h)     # (equal hashes: any of them; a row found has the same result)
    hs = old_h[order]
    hn = np.argsort(h)            # the rows' hashes looked up in increasing order (faster)
    pos = np.empty(len(h), np.intp)
    pos[hn] = np.searchsorted(hs, h[hn])
    np.minimum(pos, len(hs) - 1, out=pos)
    src = order[pos]
    found = (hs[pos] == h) & (old_k[src] == key).all(1)
    new = ~found
    if not found.any():
        res = _wr.wrap_segment(wo, x1, x2, method, single=sg)
    else:
        res = tuple(o[src] for o in old_res)
        if not new.any():
            return res
        part = _wr.wrap_segment(wo, x1[new], x2[new], method, single=sg[new])
        for o, r in zip(res, part):
            o[new] = r
    memo[(id(wo), method)] = (np.concatenate([old_k, key[new]]), np.concatenate([old_h, h[new]]),
                              tuple(np.concatenate([o, r[new]]) for o, r in zip(old_res, res)))
    return res


def _wrap_request(req, group, memo=None):
    """Answer the wrap requests ``group`` (same wrap object and method; ``req`` the first)
    with one wrap_segment call over their stacked rows (:func:`_wrap_rows`); a list of
    (status, r1, r2, L) for a group of several, the tuple for a group of one."""
    _, wo, method, x1, x2, single, name = req
    try:
        if len(group) == 1:
            return _wrap_rows(wo, method, x1, x2, single, memo)
        n = [len(g[3]) for g in group]
        sg = np.concatenate([np.full(k, g[5]) for k, g in zip(n, group)])
        res = _wrap_rows(wo, method, np.concatenate([g[3] for g in group]),
                         np.concatenate([g[4] for g in group]), sg, memo)
    except UnsupportedFeature as e:
        raise UnsupportedFeature(f"path of '{name}': {e.message}") from None
    cut = np.cumsum(n)[:-1]
    return list(zip(*[np.split(r, cut) for r in res]))


#: Rows (paths x frames) of one path group at most: beyond a few thousand rows the Python steps
#: a group saves cost less than the memory of its larger arrays (fresh pages, cache misses).
_MAX_ROWS = 4096


def _group_key(pathset: PathSet, path: _Path):
    """Paths with equal keys are computed together (:func:`_group_gen`): those with the same
    number of wrap objects, none a WrapDoubleCylinderObst (such a path is a group alone)."""
    if any(pathset.wrap_objects[w.obj_id].type == "WrapDoubleCylinderObst" for w in path.wraps):
        return ("alone", id(path))
    return ("wraps", len(path.wraps))


def update_digest(h, *arrays):
    """Feed the shapes and float64 bytes of ``arrays`` to the hash ``h`` (hashlib); returns
    ``h``. The key of the frame-keyed caches (shared paths, muscle loads)."""
    for a in arrays:
        a = np.ascontiguousarray(a, float)
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h


def _frames_digest(q, Rb, ob) -> str:
    """A digest of the bytes (and shapes) of q and the body poses."""
    return update_digest(hashlib.blake2b(digest_size=16), q, Rb, ob).hexdigest()


def _frozen(sd):
    """A path's (PathState, moving-point terms) with its arrays made read-only (shared)."""
    st = sd[0]
    if st is not None:
        for a in vars(st).values():
            if isinstance(a, np.ndarray):
                a.flags.writeable = False
    return sd


def _compute_many(pathset: PathSet, paths, q, Rb, ob):
    """:func:`_compute_paths` of ``paths``; within
    :func:`arthron.multibody.path_compile.shared_paths` a path already rebuilt at the same q
    and body poses is taken from there (its arrays read-only), the others computed together
    and kept."""
    shared = shared_path_cache()
    if shared is None:
        return _compute_paths(pathset, paths, q, Rb, ob)
    cache, fk = shared["states"], _frames_digest(q, Rb, ob)
    out = [cache.get((id(p), fk)) for p in paths]
    todo = [i for i, sd in enumerate(out) if sd is None]
    if todo:
        for i, sd in zip(todo, _compute_paths(pathset, [paths[i] for i in todo], q, Rb, ob)):
            out[i] = cache[(id(paths[i]), fk)] = _frozen(sd)
            shared["keep"].append(paths[i])         # its id stays its own
    return out


def _compute_paths(pathset: PathSet, paths, q, Rb, ob):
    """:func:`_compute_one` for several paths at once: the paths with the same number of wrap
    objects are computed as one group, their frames stacked as rows (:func:`_group_gen`),
    and the wrap requests the groups make at the same step on the same wrap object (same
    method) go to one wrap_segment call over their stacked rows. Every row is wrapped and
    chosen on its own, so the results are those of one path at a time, bit for bit. A wrap
    object arthron cannot reproduce is reported as the sequential computation does (first
    path in model order)."""
    pre = _fixed_points(pathset, paths, q.shape[0], Rb, ob)
    members = {}
    for i, p in enumerate(paths):
        members.setdefault(_group_key(pathset, p), []).append(i)
    # within a group, paths of equal node-list length K side by side (few blocks to sum)
    groups = [sorted(g, key=lambda i: len(paths[i].body) + paths[i].nslots)
              for g in members.values()]
    per = max(1, _MAX_ROWS // max(q.shape[0], 1))     # paths per group
    groups = [g[k:k + per] for g in groups for k in range(0, len(g), per)]
    gens = [_group_gen(pathset, [paths[i] for i in g], q, Rb, ob, [pre[i] for i in g])
            for g in groups]
    res = [None] * len(gens)
    pending = {}
    memo = {}
    try:
        for gi, g in enumerate(gens):
            try:
                pending[gi] = next(g)
            except StopIteration as e:
                res[gi] = e.value
        while pending:
            same = {}
            for gi, reqs in pending.items():
                for j, req in enumerate(reqs):
                    same.setdefault((req[0], req[2]), []).append((gi, j))
            answers = {gi: [None] * len(reqs) for gi, reqs in pending.items()}
            for idx in same.values():
                reqs = [pending[gi][j] for gi, j in idx]
                r = _wrap_request(reqs[0], reqs, memo)
                for (gi, j), rr in zip(idx, [r] if len(idx) == 1 else r):
                    answers[gi][j] = tuple(rr)
            nxt = {}
            for gi, a in answers.items():
                try:
                    nxt[gi] = gens[gi].send(a)
                except StopIteration as e:
                    res[gi] = e.value
            pending = nxt
    except UnsupportedFeature:
        return [_compute_one(pathset, p, q, Rb, ob) for p in paths]
    out = [None] * len(paths)
    for g, r in zip(groups, res):
        for i, sd in zip(g, r):
            out[i] = sd
    return out


def _compute_one(pathset: PathSet, path: _Path, q, Rb, ob):
    pre = _fixed_points(pathset, [path], q.shape[0], Rb, ob)
    return _run(_group_gen(pathset, [path], q, Rb, ob, pre))[0]


def _fixed_points(pathset: PathSet, paths, T, Rb, ob):
    """Per path, (P (T, np, 3) in ground, loc (T, np, 3) in the base bodies) of its points,
    for every path without moving points in one product over all their points (the same
    per-point arithmetic as one path at a time); None for a path with moving points. The
    stacked bodies and locations are kept per PathSet and list of paths."""
    cache = pathset.__dict__.setdefault("_fixed_cache", {})
    key = tuple(id(p) for p in paths)
    ent = cache.get(key)
    if ent is None or any(a is not b for a, b in zip(ent[4], paths)):
        fixed = [i for i, p in enumerate(paths) if not p.moving]
        cut = np.cumsum([0] + [len(paths[i].body) for i in fixed])
        body = np.concatenate([paths[i].body for i in fixed]) if fixed else np.zeros(0, int)
        loc = (np.concatenate([paths[i].loc for i in fixed]) if fixed else np.zeros((0, 3)))
        ent = cache[key] = (fixed, cut, body, loc, paths)   # paths: keeps the ids valid
    fixed, cut, body, loc0, _ = ent
    out = [None] * len(paths)
    if not fixed:
        return out
    loc = np.broadcast_to(loc0, (T,) + loc0.shape).copy()
    P = ob[:, body] + (Rb[:, body] @ loc[..., None])[..., 0]
    for j, i in enumerate(fixed):
        out[i] = (P[:, cut[j]:cut[j + 1]], loc[:, cut[j]:cut[j + 1]])
    return out


class _Group:
    """Paths computed together (:func:`_group_gen`), their frames stacked as rows (path-major:
    rows i·T … i·T + T − 1 are path i's T frames), node lists padded to the longest (K
    columns). Per row: ``npts`` (N, 1) the path's number of points, ``tt`` (N,) its frame."""

    def __init__(self, pathset: PathSet, paths, T):
        self.pathset, self.paths, self.T = pathset, paths, T
        n = np.array([len(p.body) for p in paths])
        self.npts = np.repeat(n, T)[:, None]
        self.ks = [len(p.body) + p.nslots for p in paths]
        self.K = max(self.ks)
        self.nw = len(paths[0].wraps)
        self.slots = paths[0].slots
        self.nslots = paths[0].nslots
        self.all_active = not any(p.cond for p in paths)   # no conditional point
        self.tt = np.arange(T * len(paths)) % T   # each row's frame
        # consecutive paths with equal K: row ranges whose lengths sum K - 1 segments
        self.blocks = []
        for i, k in enumerate(self.ks):
            if self.blocks and self.blocks[-1][2] == k:
                self.blocks[-1][1] = (i + 1) * T
            else:
                self.blocks.append([i * T, (i + 1) * T, k])

    def lengths(self, G, tag, wobj, wlen):
        """Path lengths (N,): each path's segments summed over its own K − 1 columns (the
        same sums as one path at a time)."""
        if len(self.blocks) == 1 and self.blocks[0][2] == self.K:
            return _seg_lengths(G, tag, wobj, wlen).sum(1)
        out = np.empty(len(G))
        for r0, r1, k in self.blocks:
            out[r0:r1] = _seg_lengths(G[r0:r1, :k], tag[r0:r1, :k], wobj[r0:r1, :k],
                                      wlen[r0:r1, :k]).sum(1)
        return out

    def wrap(self, wi, Rb, ob):
        """Per row, wrap ``wi`` of its path: its wrap objects ``wos`` (per path), request keys
        ``keys`` ((obj_id, method) list) and per-row index ``key`` into it, point range
        ``start``/``end``, ``active``; the wrap object's body frame ``Rbw``, ``obw`` and the
        wrap frame ``Rw``, ``ow`` in ground; ``Rt``, ``p`` the wrap frame in its body."""
        T, ws = self.T, [p.wraps[wi] for p in self.paths]
        wos = [self.pathset.wrap_objects[w.obj_id] for w in ws]
        keys = list(dict.fromkeys((w.obj_id, w.method) for w in ws))
        # the per-path integers, one row per (path, frame)
        iv = np.repeat(np.array([(wo.body, w.start, w.end, wo.active, w.obj_id,
                                  keys.index((w.obj_id, w.method))) for w, wo in zip(ws, wos)]), T, 0).T
        if len(ws) == 1:   # one path: its T frames (views and broadcasts, the same products)
            b = wos[0].body
            Rbw, obw, R, p, Rt = Rb[:, b], ob[:, b], wos[0].R, wos[0].p, wos[0].R.T.copy()
        else:
            rep = lambda v: np.repeat(np.asarray(v), T, 0)  # noqa: E731
            Rbw, obw = Rb[self.tt, iv[0]], ob[self.tt, iv[0]]
            R, p, Rt = rep([wo.R for wo in wos]), rep([wo.p for wo in wos]), rep([wo.R.T for wo in wos])
        return dict(ws=ws, wos=wos, keys=keys, key=iv[5], start=iv[1], end=iv[2],
                    active=iv[3].astype(bool), obj=iv[4], body=iv[0], Rbw=Rbw, obw=obw, Rw=Rbw @ R,
                    ow=obw + (Rbw @ p[..., None])[..., 0], Rt=Rt, p=np.broadcast_to(p, (len(iv[0]), 3)))


def _group_gen(pathset: PathSet, paths, q, Rb, ob, pre):
    """The computation of a group of paths (:func:`_group_key`) as a generator: it yields
    lists of wrap requests (obj_id, wrap object, method, x1, x2, single, path name) and
    receives their (status, r1, r2, length) results; returns a (PathState, moving-point
    terms) pair per path."""
    T = q.shape[0]
    g = _Group(pathset, paths, T)
    K, N = g.K, T * len(paths)
    P = np.zeros((N, K, 3))
    loc = np.zeros((N, K, 3))
    body = np.full((N, K), pathset.nb)
    tag = np.full((N, K), -1)
    wobj = np.full((N, K), -1)
    wlen = np.zeros((N, K))
    npm = int(g.npts.max())
    act = np.zeros((N, npm), bool)
    dlocs = []
    compact = []   # paths with an inactive conditional point in some frame
    for i, (path, x) in enumerate(zip(paths, pre)):
        rows, n = slice(i * T, (i + 1) * T), len(path.body)
        if x is None:
            loc0, dloc = _point_locals(path, q)
            P0 = ob[:, path.body] + (Rb[:, path.body] @ loc0[..., None])[..., 0]
        else:
            (P0, loc0), dloc = x, []
        dlocs.append(dloc)
        P[rows, :n] = P0
        loc[rows, :n] = loc0
        body[rows, :n] = path.body
        if path.cond:
            a = _active(path, q)
            act[rows, :n] = a
            tag[rows, :n] = np.where(a, np.arange(n), -1)
            if not a.all():
                compact.append(rows)
        else:   # every point active
            act[rows, :n] = True
            tag[rows, :n] = np.arange(n)
    for rows in compact:
        arrs = (P, loc, body, tag, wobj, wlen)
        for a, c in zip(arrs, _compact(tag[rows] >= 0, *(a[rows] for a in arrs))[1:]):
            a[rows] = c
    G = P
    if g.nw:
        (P, loc, body, tag, wobj, wlen), last = yield from _apply_wraps(
            g, Rb, ob, act, P, loc, body, tag, wobj, wlen)
        G = P if last is None else last[0]
    length = g.lengths(G, tag, wobj, wlen) if not g.nw or last is None else last[1]
    out = []
    for i, (path, k) in enumerate(zip(paths, g.ks)):
        rows = slice(i * T, (i + 1) * T)
        cut = [np.ascontiguousarray(a[rows, :k]) for a in (P, body, loc, tag, wlen, wobj)]
        Gi = cut[0] if G is P else np.ascontiguousarray(G[rows, :k])
        out.append((PathState(*cut[:5], length[rows].copy(), cut[5], len(path.body), Gi),
                    dlocs[i]))
    return out


def _wrap_one(g: _Group, wi, st, act, Rb, ob, mask, cache, const):
    """Remove wrap ``wi``'s tangent points and wrap again (rows in ``mask`` only), as one
    step of OpenSim's ``GeometryPath::applyWrapObjects``, for the rows of a path group.
    Returns the new node lists and the result code OpenSim keeps for the wrap (the last
    segment tried, or the mandatory one).

    A WrapDoubleCylinderObst (a group of one path) inserts up to four nodes: q, Q on the U
    cylinder (the wrap object's body, surface length on Q) and T, t on the V cylinder (its
    home body, surface length on t, wrap-object id + number of wrap objects), those of a
    cylinder not wrapped left out."""
    npts = g.npts
    c = const.get(wi)
    if c is None:   # what does not change between the passes of one path computation
        c = g.wrap(wi, Rb, ob)
        if g.all_active:   # every point active: the range's first and last point at once
            hi = np.minimum(c["end"], g.npts[:, 0] - 1)
            some = c["start"] <= hi
            c["act_any"] = some & c["active"]
            c["smp"] = np.where(some, c["start"], 0)
            c["emp"] = np.where(some, hi, act.shape[1] - 1)
        else:
            cols = np.arange(act.shape[1])
            sub = act & (cols >= c["start"][:, None]) & (cols <= c["end"][:, None])
            c["act_any"] = sub.any(1) & c["active"]
            c["smp"] = np.argmax(sub, 1)
            c["emp"] = act.shape[1] - 1 - np.argmax(sub[:, ::-1], 1)
        const[wi] = c
    wo = c["wos"][0]
    dbl = wo.type == "WrapDoubleCylinderObst"
    ns = 4 if dbl else 2
    t0 = npts + g.slots[wi]
    if c.get("placed"):   # this wrap's tangent points are in some node list
        st = _remove_wrap_nodes(st, t0, t0 + ns, mask)
    P, loc, body, tag, wobj, wlen = st
    N, K = tag.shape
    code = np.zeros(N, int)
    anyact = c["act_any"] & mask
    if not anyact.any():
        return (P, loc, body, tag, wobj, wlen), code
    Rw, ow = c["Rw"], c["ow"]
    start = np.argmax(tag == c["smp"][:, None], 1)
    end = np.argmax(tag == c["emp"][:, None], 1)
    if dbl:
        d = wo.dims
        vb = d["v_body"]
        Rv = Rb[g.tt, vb] @ d["v_R"]              # V cylinder frame in ground
        ov = ob[g.tt, vb] + Rb[g.tt, vb] @ d["v_p"]
        Ruv = np.einsum("tji,tjk->tik", Rw, Rv)   # ... in the U frame
        ouv = np.einsum("tji,tj->ti", Rw, ov - ow)
    best_k = np.full(N, -1)
    nodes = np.zeros((N, ns, 3))                  # tangent points, wrap (U) frame
    lens = np.zeros((N, ns))                      # surface length ending at the node
    valid = np.zeros((N, ns), bool)
    # every candidate segment of every row in one wrap call per wrap object (rows are
    # independent), then OpenSim's choice replayed segment by segment: a mandatory wrap ends
    # the search
    # (the segments between the range's first and last point, both in the node list of an
    # active row: valid nodes, the lists being compact; not on another wrap's surface)
    kr = np.arange(K - 1)
    pair = (kr >= start[:, None]) & (kr < end[:, None]) & anyact[:, None]
    pair &= ~((wobj[:, :-1] >= 0) & (wobj[:, :-1] == wobj[:, 1:]))
    ti_, kk_ = np.nonzero(pair)                   # ordered by row, then segment
    if len(ti_):
        n = len(ti_)
        # the rows' end nodes in the wrap frame (x1, x2), and the positions OpenSim measures
        # with (g1, g2: cached ground positions of tangent points, see _cached_positions)
        fi = ti_ * K + kk_                        # flat node index of each row's first node
        fi2 = np.concatenate([fi, fi + 1])
        Xe = ((P - ow[:, None]) @ Rw).reshape(-1, 3).take(fi2, 0)   # nodes in the wrap frame
        x1, x2 = Xe[:n], Xe[n:]

        def measured():   # g1, g2 and the straight length between them
            t2 = np.concatenate([ti_, ti_])
            use, cpos = _cached_rows(tag.reshape(-1).take(fi2), t2, npts, cache)
            if use is None:
                g1, g2 = x1.copy(), x2.copy()
            else:
                Ge = Xe.copy()
                tu = t2[use]
                Ge[use] = ((cpos - ow[tu])[:, None, :] @ Rw[tu])[:, 0]
                g1, g2 = Ge[:n], Ge[n:]
            return g1, g2, _wr._norm(g2 - g1)
        if dbl:
            g1, g2, straight = measured()
            case, q1, Q1, T1, t1, _, Lu, Lv = _wr._double_cylinder_obstacle(
                x1, x2, d["radius"], d["direction"], d["radius_v"],
                d["direction_v"], Ruv[ti_], ouv[ti_])
            uU = (case == _wr.DC_U) | (case == _wr.DC_BOTH)
            uV = (case == _wr.DC_V) | (case == _wr.DC_BOTH)
            status = np.where(case == _wr.DC_INSIDE, _wr.INSIDE,
                              np.where(uU | uV, _wr.WRAPPED, _wr.NO_WRAP))
            first = np.where(uU[:, None], q1, T1)
            last = np.where(uV[:, None], t1, Q1)
            mid = np.where(uU & uV, _wr._norm(T1 - Q1), 0.0)
            dl = (_wr._norm(first - g1) + Lu + mid + Lv
                  + _wr._norm(g2 - last) - straight)
            tk, rt = _choose_segments(ti_, status, dl, code)
            nodes[tk] = np.stack([q1[rt], Q1[rt], T1[rt], t1[rt]], 1)
            lens[tk, 1], lens[tk, 3] = Lu[rt], Lv[rt]
            valid[tk] = np.stack([uU[rt], uU[rt], uV[rt], uV[rt]], 1)
        else:
            # OpenSim 4.6 skips the cylinder's tangent correction for a path's only wrap;
            # one request per wrap object (and method) among the rows
            single = g.nw == 1
            keys = c["keys"]
            if len(keys) == 1:
                sel = [slice(None)]
            else:
                kr_ = c["key"][ti_]
                sel = [np.flatnonzero(kr_ == j) for j in range(len(keys))]
            reqs, used = [], []
            for j, s in enumerate(sel):
                if isinstance(s, slice) or len(s):
                    i0 = ti_[s][0] // g.T
                    reqs.append((keys[j][0], g.pathset.wrap_objects[keys[j][0]], keys[j][1],
                                 x1[s], x2[s], single, g.paths[i0].name))
                    used.append(s)
            res = yield reqs
            if len(used) == 1:
                status, r1, r2, L = res[0]
            else:
                status = np.empty(n, res[0][0].dtype)
                r1, r2, L = np.empty((n, 3)), np.empty((n, 3)), np.empty(n)
                for s, (a, b, e, f) in zip(used, res):
                    status[s], r1[s], r2[s], L[s] = a, b, e, f
            dl = None   # the lengthening matters only where a wrap is optional
            if (status == _wr.WRAPPED).any():
                g1, g2, straight = measured()
                dl = (_wr._norm(r1 - g1) + L + _wr._norm(g2 - r2)
                      - straight)
            tk, rt = _choose_segments(ti_, status, dl, code)
            nodes[tk, 0], nodes[tk, 1], lens[tk, 1], valid[tk] = r1[rt], r2[rt], L[rt], True
        best_k[tk] = kk_[rt]
    has = best_k >= 0
    if not has.any():
        return (P, loc, body, tag, wobj, wlen), code
    c["placed"] = True
    # the new nodes of the rows with a wrap (hr): locations in their bodies' frames and in
    # ground (row by row the same products; a double cylinder's for every row, then taken)
    hr = np.flatnonzero(has)
    sel = slice(None) if dbl else hr
    nodes, lens, valid = nodes[sel], lens[sel], valid[sel]
    Rt = c["Rt"] if c["Rt"].ndim == 2 else c["Rt"][sel]
    nloc = nodes @ Rt + c["p"][sel][:, None]      # in the wrap object's body frame
    nG = c["obw"][sel][:, None] + nloc @ np.swapaxes(c["Rbw"][sel], 1, 2)
    nbody = np.broadcast_to(c["body"][sel][:, None], valid.shape).copy()
    nobj = np.broadcast_to(c["obj"][sel][:, None], valid.shape).copy()
    if dbl:   # T, t sit on the V cylinder's body
        RbV = Rb[g.tt, vb]
        gV = ow[:, None] + np.einsum("tij,tkj->tki", Rw, nodes[:, 2:])
        nG[:, 2:] = gV
        nloc[:, 2:] = np.einsum("tji,tkj->tki", RbV, gV - ob[g.tt, vb][:, None])
        nbody[:, 2:] = vb
        nobj[:, 2:] = c["ws"][0].obj_id + len(g.pathset.wrap_objects)
        nG, nloc, nbody, nobj, valid, lens = (x[hr] for x in (nG, nloc, nbody, nobj, valid, lens))
    ntag = np.where(valid, t0[hr] + np.arange(ns), -1)
    # each node list gathered: old nodes up to the segment, then (ns places on) the rest
    # shifted by ns (one flat take per array), the new nodes written over their places
    j = np.arange(K)[None, :]
    kk = np.where(has, best_k, K)[:, None]
    src = np.where(j <= kk, j, np.maximum(j - ns, 0))
    srcf = (np.arange(N)[:, None] * K + src).ravel()
    at = ((hr * K + best_k[hr] + 1)[:, None] + np.arange(ns)).ravel()
    out = []
    for a, v in ((P, nG), (loc, nloc), (body, nbody), (tag, ntag), (wobj, nobj), (wlen, lens)):
        o = np.take(a.reshape(N * K, -1), srcf, axis=0)
        o[at] = v.reshape(len(at), -1)
        out.append(o.reshape(a.shape))
    out = tuple(out)
    if dbl:   # drop the nodes of a cylinder not wrapped
        keep = out[3] >= 0
        out = out[:4] + (np.where(keep, out[4], -1), np.where(keep, out[5], 0.0))
        out = tuple(_compact(keep, *out)[1:])
    return out, code


def _apply_wraps(g: _Group, Rb, ob, act, P, loc, body, tag, wobj, wlen):
    """OpenSim's ``GeometryPath::applyWrapObjects`` for the rows of a path group.

    With two or more wrap objects, up to 8 passes are made (each row stops when its length
    changes by less than 0.5 mm); after the first pass, if the first object did not wrap and
    the second had a point inside it, the first two are swapped. OpenSim measures distances
    with ground positions of tangent points that its ``Point`` caches at their first use
    within a path computation, so later passes move the tangent points but not the positions
    used for the straight segments; this is reproduced. Returned: the node lists and
    (G, lengths) of the last pass, which hold for the final node lists (None for one wrap
    object: then G is P, every tangent point cached where it was placed).
    """
    N, K = tag.shape
    npts = g.npts
    nw = g.nw
    st = (P, loc, body, tag, wobj, wlen)
    ns = max(g.nslots, 1)
    cache = (np.zeros((N, ns, 3)), np.zeros((N, ns), bool))
    const = {}
    niter = 1 if nw < 2 else 8
    last = np.full(N, np.inf)
    done = np.zeros(N, bool)
    swapped = np.zeros(N, bool)
    for kk in range(niter):
        todo = ~done
        codes = []
        for i in range(nw):
            if nw >= 2 and i < 2 and swapped.any():
                st, c_a = yield from _wrap_one(g, i, st, act, Rb, ob, todo & ~swapped, cache, const)
                st, c_b = yield from _wrap_one(g, 1 - i, st, act, Rb, ob, todo & swapped, cache, const)
                codes.append(np.where(swapped, c_b, c_a))
            else:
                st, c = yield from _wrap_one(g, i, st, act, Rb, ob, todo, cache, const)
                codes.append(c)
        if nw < 2:   # one pass: every tangent point's cached position is its position
            return st, None
        _update_cache(st, npts, cache, todo)
        G = _cached_positions(st[0], st[3], npts, cache)
        length = g.lengths(G, st[3], st[4], st[5])
        conv = todo & (np.abs(length - last) < _WRAP_TOL)
        last = np.where(todo, length, last)
        done |= conv
        if kk == 0:
            sw = todo & ~conv & (codes[0] == _wr.NO_WRAP) & (codes[1] == _wr.INSIDE)
            if sw.any():
                swapped |= sw
                st = _remove_wrap_nodes(st, npts + g.slots[0], npts + g.slots[1], sw)
            # A row (not swapped) where no wrap after the first placed a node is final: its
            # second pass removes the first wrap's nodes, which leaves the path points alone
            # (no cached position in play), and wraps the same segments again: the same node
            # lists, cached positions and length, so it converges there (OpenSim's second pass,
            # skipped)
            done |= todo & ~sw & ~(st[3] >= npts + g.slots[1]).any(1)
        if done.all():
            break
    return st, (G, length)
