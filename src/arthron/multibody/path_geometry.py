"""The geometry of compiled paths for T frames at once, as OpenSim 4.6's
``GeometryPath::computePath`` builds it (:func:`compute_paths`): active points, then each wrap
object tried on every segment of its range (:func:`arthron.geometry.wrapping.wrap_segment`,
the registry of wrap surfaces), with OpenSim's passes over several wrap objects. See
:mod:`arthron.multibody.paths`."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UnsupportedFeature
from ..geometry import wrapping as _wr
from .kinematics import Kinematics, Tree, forward_kinematics

from .path_compile import PathSet, _Path

_COND_TOL = 1e-5
_WRAP_TOL = 0.0005  # m: OpenSim stops iterating over several wrap objects below this change


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
        for ax, fn, c, lo, hi in terms:
            if fn is None:
                continue
            x = q[:, c] if c >= 0 else np.zeros(T)
            # As OpenSim 4.6's MovingPathPoint: the location at the coordinate clamped to
            # its range (outside it the point stands still), while the derivative (moment
            # arms, speeds) is the function's at the coordinate itself
            xc = np.clip(x, lo, hi)
            v[:, ax] = fn.value(xc)
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


def _gather(idx, arrays):
    """``[np.take_along_axis(a, idx, 1) for a in arrays]`` for arrays (T, K) and (T, K, d)
    with idx (T, K') (the same values by one flat ``np.take`` each, which costs a fraction of
    fancy indexing on the small arrays of a path)."""
    T, K = arrays[0].shape[:2]
    flat = (np.arange(T)[:, None] * K + idx).ravel()
    return [np.take(a.reshape(T * K, -1), flat, axis=0).reshape(idx.shape + a.shape[2:])
            for a in arrays]


def _compact(valid, *arrays):
    """Stable reorder putting valid entries first along axis 1."""
    order = np.argsort(~valid, axis=1, kind="stable")
    return [np.take_along_axis(valid, order, 1)] + _gather(order, arrays)


def _seg_lengths(st_P, tag, wobj, wlen):
    """Per-segment length (T, K-1) of a compacted node list (0 where a node is padding)."""
    d = _wr._norm(st_P[:, 1:] - st_P[:, :-1])
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
    return [sd[0] for sd in _compute_many(pathset, [pathset.paths[i] for i in which], q, Rb, ob)]


def _run(gen):
    memo = {}
    try:
        req = next(gen)
        while True:
            req = gen.send(_wrap_request(req, [req], memo))
    except StopIteration as e:
        return e.value


#: Wrap classes whose rows cost far more than looking them up: rows already wrapped on the
#: same object within one path computation (later passes of applyWrapObjects, where the
#: neighbouring wrap did not move the segment) are reused (a row's result depends only on it).
_MEMO_TYPES = ("WrapEllipsoid", "WrapTorus")


def _wrap_rows(wo, method, x1, x2, single, memo):
    """``wrap_segment`` over rows x1, x2 (n, 3) with ``single`` (bool or (n,)); rows equal
    bit for bit to rows wrapped before on ``wo`` with ``method`` (recorded in ``memo``, a dict
    for one path computation) are taken from there."""
    if memo is None or wo.type not in _MEMO_TYPES or len(x1) == 0:
        return _wr.wrap_segment(wo, x1, x2, method, single=single)
    sg = np.broadcast_to(np.asarray(single, bool), (len(x1),))
    key = np.ascontiguousarray(np.column_stack([x1, x2, sg]).astype(float))
    kv = key.view(np.dtype((np.void, key.itemsize * key.shape[1]))).ravel()
    ent = memo.get((id(wo), method))
    if ent is None:
        res = _wr.wrap_segment(wo, x1, x2, method, single=sg)
        memo[(id(wo), method)] = (kv, tuple(np.array(o) for o in res))
        return res
    old_k, old_res = ent
    n0 = len(old_k)
    _, first, inv = np.unique(np.concatenate([old_k, kv]), return_index=True,
                              return_inverse=True)
    src = first[inv.ravel()[n0:]]
    found = src < n0
    if not found.any():
        res = _wr.wrap_segment(wo, x1, x2, method, single=sg)
    else:
        res = tuple(o[np.minimum(src, n0 - 1)] for o in old_res)
        new = ~found
        if new.any():
            part = _wr.wrap_segment(wo, x1[new], x2[new], method, single=sg[new])
            for o, r in zip(res, part):
                o[new] = r
    new = ~found
    memo[(id(wo), method)] = (np.concatenate([old_k, kv[new]]),
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


def _compute_many(pathset: PathSet, paths, q, Rb, ob):
    """:func:`_compute_one` for several paths in lockstep: the wrap requests the paths make
    at the same step on the same wrap object (same method) go to one wrap_segment call over
    their stacked rows (every row is wrapped on its own, so the results are those of one call
    per request). A wrap object arthron cannot reproduce is reported as the sequential
    computation does (first path in model order)."""
    pre = _fixed_points(pathset, paths, q.shape[0], Rb, ob)
    gens = [_compute_gen(pathset, p, q, Rb, ob, x) for p, x in zip(paths, pre)]
    out = [None] * len(gens)
    pending = {}
    memo = {}
    try:
        for i, g in enumerate(gens):
            try:
                pending[i] = next(g)
            except StopIteration as e:
                out[i] = e.value
        while pending:
            groups = {}
            for i, req in pending.items():
                groups.setdefault((req[0], req[2]), []).append(i)
            nxt = {}
            for idx in groups.values():
                res = _wrap_request(pending[idx[0]], [pending[i] for i in idx], memo)
                res = [res] if len(idx) == 1 else res
                for i, r in zip(idx, res):
                    try:
                        nxt[i] = gens[i].send(tuple(r))
                    except StopIteration as e:
                        out[i] = e.value
            pending = nxt
    except UnsupportedFeature:
        return [_compute_one(pathset, p, q, Rb, ob) for p in paths]
    return out


def _compute_one(pathset: PathSet, path: _Path, q, Rb, ob):
    pre = _fixed_points(pathset, [path], q.shape[0], Rb, ob)[0]
    return _run(_compute_gen(pathset, path, q, Rb, ob, pre))


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


def _compute_gen(pathset: PathSet, path: _Path, q, Rb, ob, pre=None):
    T = q.shape[0]
    npts = len(path.body)
    if pre is None:
        loc0, dloc = _point_locals(path, q)
        P0 = ob[:, path.body] + (Rb[:, path.body] @ loc0[..., None])[..., 0]
    else:
        (P0, loc0), dloc = pre, []
    K = npts + path.nslots
    # node lists padded to K (zeros, ground, tag -1), valid nodes first
    P = np.zeros((T, K, 3))
    P[:, :npts] = P0
    loc = np.zeros((T, K, 3))
    loc[:, :npts] = loc0
    body = np.full((T, K), pathset.nb)
    body[:, :npts] = path.body
    tag = np.full((T, K), -1)
    wobj = np.full((T, K), -1)
    wlen = np.zeros((T, K))
    if path.cond:
        act = _active(path, q)
        tag[:, :npts] = np.where(act, np.arange(npts), -1)
        if not act.all():
            _, P, loc, body, tag, wobj, wlen = _compact(tag >= 0, P, loc, body, tag, wobj, wlen)
    else:   # every point active: the lists are compact already
        act = np.ones((T, npts), bool)
        tag[:, :npts] = np.arange(npts)
    G = P
    if path.wraps:
        (P, loc, body, tag, wobj, wlen), cache = yield from _apply_wraps(
            pathset, path, q, Rb, ob, act, P, loc, body, tag, wobj, wlen)
        G = _cached_positions(P, tag, npts, cache)
    length = _seg_lengths(G, tag, wobj, wlen).sum(1)
    return PathState(P, body, loc, tag, wlen, length, wobj, npts, G), dloc


def _cached_positions(P, tag, npts, cache):
    """Node positions with tangent points replaced by their cached ground positions (``P``
    itself when no node has a cached position)."""
    cG, cv = cache
    if not cv.any():
        return P
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
    rm = (tag >= t0) & (tag < t1) & mask[:, None]
    if not rm.any():      # node lists are kept compact: nothing to move
        return st
    keep = ~rm & (tag >= 0)
    tag = np.where(keep, tag, -1)
    return tuple(_compact(keep, P, loc, body, tag, wobj, wlen)[1:])


def _wrap_one(pathset, path, wi, st, act, Rb, ob, mask, cache, const=None):
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
    # what does not change between the passes of one path computation (``const``: per wrap)
    c = None if const is None else const.get(wi)
    if c is None:
        sub = act[:, w.start:w.end + 1]
        c = (sub.any(1), w.start + np.argmax(sub, 1), w.end - np.argmax(sub[:, ::-1], 1),
             Rb[:, wo.body] @ wo.R,                           # wrap frame in ground
             ob[:, wo.body] + Rb[:, wo.body] @ wo.p)
        if const is not None:
            const[wi] = c
    act_any, smp, emp, Rw, ow = c
    anyact = act_any & mask
    start = np.argmax(tag == smp[:, None], 1)
    end = np.argmax(tag == emp[:, None], 1)
    Xl = (P - ow[:, None]) @ Rw                   # nodes in the wrap frame
    Gp = _cached_positions(P, tag, npts, cache)
    Gl = Xl if Gp is P else (Gp - ow[:, None]) @ Rw
    if dbl:
        d = wo.dims
        vb = d["v_body"]
        Rv = Rb[:, vb] @ d["v_R"]                 # V cylinder frame in ground
        ov = ob[:, vb] + Rb[:, vb] @ d["v_p"]
        Ruv = np.einsum("tji,tjk->tik", Rw, Rv)   # ... in the U frame
        ouv = np.einsum("tji,tj->ti", Rw, ov - ow)
    best_k = np.full(T, -1)
    nodes = np.zeros((T, ns, 3))                  # tangent points, wrap (U) frame
    lens = np.zeros((T, ns))                      # surface length ending at the node
    valid = np.zeros((T, ns), bool)
    # every candidate segment of every frame in one wrap call (rows are independent), then
    # OpenSim's choice replayed segment by segment: a mandatory wrap ends the search
    pair = (anyact[:, None] & (tag[:, :-1] >= 0) & (tag[:, 1:] >= 0)
            & ~((wobj[:, :-1] >= 0) & (wobj[:, :-1] == wobj[:, 1:])))
    kr = np.arange(K - 1)
    pair &= (kr >= start[:, None]) & (kr < end[:, None])
    ti_, kk_ = np.nonzero(pair)                   # rows ordered by frame, then segment
    if len(ti_):
        fi = ti_ * K + kk_                        # flat node index of each row's first node
        Glf, Xlf = Gl.reshape(-1, 3), Xl.reshape(-1, 3)
        g1, g2 = Glf.take(fi, 0), Glf.take(fi + 1, 0)
        x1, x2 = (g1.copy(), g2.copy()) if Gl is Xl else (Xlf.take(fi, 0), Xlf.take(fi + 1, 0))
        straight = _wr._norm(g2 - g1)
        if dbl:
            case, q1, Q1, T1, t1, _, Lu, Lv = _wr._double_cylinder_obstacle(
                x1, x2, d["radius"], d["direction"], d["radius_v"],
                d["direction_v"], Ruv[ti_], ouv[ti_])
            uU = (case == _wr.DC_U) | (case == _wr.DC_BOTH)
            uV = (case == _wr.DC_V) | (case == _wr.DC_BOTH)
            status = np.where(case == _wr.DC_INSIDE, _wr.INSIDE,
                              np.where(uU | uV, _wr.WRAPPED, _wr.NO_WRAP))
            nd = np.stack([q1, Q1, T1, t1], 1)
            ln = np.stack([np.zeros_like(Lu), Lu, np.zeros_like(Lv), Lv], 1)
            vd = np.stack([uU, uU, uV, uV], 1)
            first = np.where(uU[:, None], q1, T1)
            last = np.where(uV[:, None], t1, Q1)
            mid = np.where(uU & uV, _wr._norm(T1 - Q1), 0.0)
            dl = (_wr._norm(first - g1) + Lu + mid + Lv
                  + _wr._norm(g2 - last) - straight)
        else:
            # OpenSim 4.6 skips the cylinder's tangent correction for a path's only wrap
            single = len(path.wraps) == 1
            status, r1, r2, L = yield (w.obj_id, wo, w.method, x1, x2, single, path.name)
            nd = np.stack([r1, r2], 1)
            ln = np.zeros((len(L), 2))
            ln[:, 1] = L
            vd = np.ones((len(ti_), 2), bool)
            dl = (_wr._norm(r1 - g1) + L + _wr._norm(g2 - r2)
                  - straight)
        # OpenSim tries the segments in order: a mandatory wrap is taken and ends the search,
        # else the optional wrap that lengthens the path least (the first of equals); the
        # code kept is that of the last segment tried. Per frame, over its rows at once:
        n = len(ti_)
        first_row = np.empty(n, bool)
        first_row[0] = True
        np.not_equal(ti_[1:], ti_[:-1], out=first_row[1:])
        starts = np.flatnonzero(first_row)
        ends = np.append(starts[1:], n)
        fr = ti_[starts]
        pos = np.arange(n)
        fm = np.minimum.reduceat(np.where(status == _wr.MANDATORY, pos, n), starts)
        hasm = fm < n
        code[fr] = status[np.where(hasm, fm, ends - 1)]
        key = np.where((status == _wr.WRAPPED) & (dl < np.inf), dl, np.inf)
        kmin = np.minimum.reduceat(key, starts)
        grp = np.repeat(np.arange(len(starts)), ends - starts)
        fmin = np.minimum.reduceat(np.where(key == kmin[grp], pos, n), starts)
        chosen = np.where(hasm, fm, np.where(kmin < np.inf, fmin, -1))
        ok = chosen >= 0
        tk, rt = fr[ok], chosen[ok]
        nodes[tk], lens[tk], valid[tk] = nd[rt], ln[rt], vd[rt]
        best_k[tk] = kk_[rt]
    has = best_k >= 0
    if not has.any():
        return (P, loc, body, tag, wobj, wlen), code
    # node locations in their bodies' frames and in ground
    nloc = nodes @ wo.R.T + wo.p                  # in the wrap object's body frame
    nG = ob[:, wo.body, None] + nloc @ np.swapaxes(Rb[:, wo.body], 1, 2)
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
    src = np.where(j <= kk, j, np.maximum(j - ns, 0))
    slot = j - kk - 1                             # 0..ns-1 on the inserted nodes
    isn = (slot >= 0) & (slot < ns)
    si = np.clip(slot, 0, ns - 1)

    ntag = np.where(valid, t0 + np.arange(ns), -1)
    # each node list with the new nodes appended, then gathered: old nodes up to the
    # segment, the new ones, the rest shifted by ns
    idx = np.where(isn, K + si, src)
    out = tuple(_gather(idx, [np.concatenate([a, v], 1) for a, v in
                              ((P, nG), (loc, nloc), (body, nbody), (tag, ntag), (wobj, nobj),
                               (wlen, lens))]))
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
    const = {}
    niter = 1 if nw < 2 else 8
    last = np.full(T, np.inf)
    done = np.zeros(T, bool)
    swapped = np.zeros(T, bool)
    for kk in range(niter):
        todo = ~done
        codes = []
        for i in range(nw):
            if nw >= 2 and i < 2 and swapped.any():
                st, c_a = yield from _wrap_one(pathset, path, i, st, act, Rb, ob,
                                               todo & ~swapped, cache, const)
                st, c_b = yield from _wrap_one(pathset, path, 1 - i, st, act, Rb, ob,
                                               todo & swapped, cache, const)
                codes.append(np.where(swapped, c_b, c_a))
            else:
                st, c = yield from _wrap_one(pathset, path, i, st, act, Rb, ob, todo, cache, const)
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
