"""Node lists of path groups (:mod:`arthron.multibody.path_geometry`): padded (rows, K) arrays
with the valid nodes first, their reordering, segment lengths, the cache of tangent points'
ground positions that OpenSim's ``Point`` keeps within one path computation, and OpenSim's
choice among the segments a wrap object was tried on."""
from __future__ import annotations

import numpy as np

from ..geometry import wrapping as _wr


def _clip_int(x, hi):
    """Integers ``x`` clipped to [0, hi] (``np.clip`` without its Python wrapper)."""
    x = np.maximum(x, 0)
    return np.minimum(x, hi, out=x)


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


def _cached_positions(P, tag, npts, cache):
    """Node positions with tangent points replaced by their cached ground positions (``P``
    itself when no node has a cached position); ``npts`` (N, 1) per row."""
    cG, cv = cache
    if not cv.any():
        return P
    N, ns = cv.shape
    f = np.arange(N)[:, None] * ns + _clip_int(tag - npts, ns - 1)   # flat slot index
    use = (tag >= npts) & cv.reshape(-1).take(f)
    return np.where(use[..., None], cG.reshape(-1, 3).take(f.ravel(), 0).reshape(P.shape), P)


def _cached_rows(tag, t, npts, cache):
    """Which of the nodes tagged ``tag`` (m,) in rows ``t`` (m,) have a cached ground
    position (see :func:`_cached_positions`): (indices, positions (k, 3)), or (None, None)."""
    cG, cv = cache
    if not cv.any():
        return None, None
    n = npts[t, 0]
    wi = _clip_int(tag - n, cG.shape[1] - 1)
    use = np.flatnonzero((tag >= n) & cv[t, wi])
    if not len(use):
        return None, None
    return use, cG[t[use], wi[use]]


def _update_cache(st, npts, cache, mask):
    """Cache the ground positions of tangent points present and not cached yet (OpenSim's
    Point caches its ground location at the first request in a realized state and does not
    see later changes of a tangent point's location within the same path computation)."""
    P, tag = st[0], st[3]
    cG, cv = cache
    N, ns = cv.shape
    f = np.arange(N)[:, None] * ns + _clip_int(tag - npts, ns - 1)   # flat slot index
    new = np.flatnonzero((tag >= npts) & mask[:, None] & ~cv.reshape(-1).take(f))
    if len(new):
        fs = f.reshape(-1).take(new)
        cG.reshape(-1, 3)[fs] = P.reshape(-1, 3).take(new, 0)
        cv.reshape(-1)[fs] = True


def _remove_wrap_nodes(st, t0, t1, mask):
    """Remove the nodes tagged t0 <= tag < t1 (one wrap's tangent points) in frames ``mask``."""
    P, loc, body, tag, wobj, wlen = st
    rm = (tag >= t0) & (tag < t1) & mask[:, None]
    if not rm.any():      # node lists are kept compact: nothing to move
        return st
    keep = ~rm & (tag >= 0)
    tag = np.where(keep, tag, -1)
    return tuple(_compact(keep, P, loc, body, tag, wobj, wlen)[1:])


def _choose_segments(ti_, status, dl, code):
    """OpenSim's choice of the segment a wrap is placed on, per row, from the results of every
    candidate segment of the rows (``ti_`` (n,) their rows, in order; ``status``, ``dl`` (n,)
    the wrap's status and the path's lengthening, None when no status is WRAPPED): the
    segments are tried in order, a mandatory wrap is taken and ends the search, else the
    optional wrap that lengthens the path least (the first of equals). Writes the code OpenSim
    keeps (that of the last segment tried, or the mandatory one) into ``code`` (rows);
    returns (rows with a wrap, the index of their chosen segment)."""
    n = len(ti_)
    first_row = np.empty(n, bool)
    first_row[0] = True
    np.not_equal(ti_[1:], ti_[:-1], out=first_row[1:])
    starts = np.flatnonzero(first_row)
    if len(starts) == n:   # one segment per row: its own result
        code[ti_] = status
        take = status == _wr.MANDATORY
        if dl is not None:
            take |= (status == _wr.WRAPPED) & (dl < np.inf)
        rt = np.flatnonzero(take)
        return ti_[rt], rt
    ends = np.append(starts[1:], n)
    fr = ti_[starts]
    pos = np.arange(n)
    fm = np.minimum.reduceat(np.where(status == _wr.MANDATORY, pos, n), starts)
    hasm = fm < n
    code[fr] = status[np.where(hasm, fm, ends - 1)]
    if dl is None:         # no optional wrap: the mandatory ones only
        chosen = np.where(hasm, fm, -1)
    else:
        key = np.where((status == _wr.WRAPPED) & (dl < np.inf), dl, np.inf)
        kmin = np.minimum.reduceat(key, starts)
        grp = np.repeat(np.arange(len(starts)), ends - starts)
        fmin = np.minimum.reduceat(np.where(key == kmin[grp], pos, n), starts)
        chosen = np.where(hasm, fm, np.where(kmin < np.inf, fmin, -1))
    ok = chosen >= 0
    return fr[ok], chosen[ok]
