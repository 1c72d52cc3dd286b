"""Shared pieces of the wrapping modules: the status codes every wrap function returns and the
small vector helpers (norms, dots, unit vectors, OpenSim's DSIGN, Rodrigues rotations) they use,
vectorized over the leading axes."""
from __future__ import annotations

import numpy as np

from .spatial import cross as _cross

NO_WRAP, INSIDE, WRAPPED, MANDATORY = 0, 1, 2, 3


def _norm(v, keepdims=False):
    """Euclidean norm over the last axis, bit for bit ``np.linalg.norm(v, axis=-1)`` (the
    square root of ``add.reduce(v * v)``, which sums a 3-vector's squares in order): for
    3-vectors as ``sqrt(x*x + y*y + z*z)``, several times faster than a reduction over an axis
    of length 3 on large arrays."""
    if v.shape[-1] != 3:
        return np.sqrt(np.add.reduce(v * v, axis=-1, keepdims=keepdims))
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    n = np.sqrt(x * x + y * y + z * z)
    return n[..., None] if keepdims else n


def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def _divide_positive(v, n, ok=None):
    """``v / n`` where ``ok`` (default ``n > 0``; ``n > 0`` wherever ``ok``), 0 elsewhere
    (``n`` and ``ok`` broadcast against ``v``): the values of
    ``np.divide(v, n, out=zeros, where=ok)``, without its masked loop (several times slower
    than a plain division)."""
    if ok is None:
        ok = n > 0
    if ok.all():
        return v / n
    out = v / np.where(ok, n, 1.0)
    out[~np.broadcast_to(ok, out.shape)] = 0.0
    return out


def _unit(v):
    n = _norm(v, keepdims=True)
    return _divide_positive(v, n), n[..., 0]


def _sgn(x):
    """OpenSim's DSIGN: +1 for x >= 0, -1 otherwise."""
    return np.where(x >= 0.0, 1, -1)


def _rotate(v, axis, ang):
    """Rotate vectors v (T,3) about unit axes (T,3) by angles (T,) (right hand)."""
    c, s = np.cos(ang)[:, None], np.sin(ang)[:, None]
    return v * c + _cross(axis, v) * s + axis * _dot(axis, v)[:, None] * (1 - c)
