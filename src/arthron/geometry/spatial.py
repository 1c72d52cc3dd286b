"""Spatial algebra shared by every layer: rotations, cross products, skew matrices.

One module for the small 3D helpers that the multibody core, paths, scaling, ligaments and
file readers all need, vectorized over leading (frame) axes. Conventions are OpenSim's:
body-fixed X-Y-Z angles for ``orientation`` / ``xyz_body_rotation`` (``R = Rx(a) Ry(b) Rz(c)``),
right-handed frames, a point ``x_B`` in frame B has coordinates ``R_AB x_B + p_AB`` in A.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["rotation_xyz", "xyz_from_matrix", "axis_angle", "rot_z", "frame_with_z", "skew",
           "cross"]


def rotation_xyz(angles) -> np.ndarray:
    """Rotation matrix of a body-fixed X-Y-Z sequence, ``R = Rx(a) Ry(b) Rz(c)``.

    OpenSim's convention for ``orientation`` of PhysicalOffsetFrames, wrap objects
    (``xyz_body_rotation``) and 3.x ``orientation_in_parent``.

    Parameters
    ----------
    angles : array_like, shape (3,) or (..., 3), radians.

    Returns
    -------
    ndarray, shape (3, 3) or (..., 3, 3).
    """
    a = np.asarray(angles, dtype=float)
    ca, sa = np.cos(a[..., 0]), np.sin(a[..., 0])
    cb, sb = np.cos(a[..., 1]), np.sin(a[..., 1])
    cc, sc = np.cos(a[..., 2]), np.sin(a[..., 2])
    R = np.empty(a.shape[:-1] + (3, 3))
    R[..., 0, 0] = cb * cc
    R[..., 0, 1] = -cb * sc
    R[..., 0, 2] = sb
    R[..., 1, 0] = ca * sc + sa * sb * cc
    R[..., 1, 1] = ca * cc - sa * sb * sc
    R[..., 1, 2] = -sa * cb
    R[..., 2, 0] = sa * sc - ca * sb * cc
    R[..., 2, 1] = sa * cc + ca * sb * sc
    R[..., 2, 2] = ca * cb
    return R


def xyz_from_matrix(R) -> np.ndarray:
    """Body-fixed X-Y-Z angles (3,) of a rotation (3, 3): the inverse of :func:`rotation_xyz`."""
    b = math.asin(max(-1.0, min(1.0, float(R[0, 2]))))
    a = math.atan2(-float(R[1, 2]), float(R[2, 2]))
    c = math.atan2(-float(R[0, 1]), float(R[0, 0]))
    return np.array([a, b, c])


def skew(r) -> np.ndarray:
    """The cross-product matrix ``[r]×`` (..., 3, 3) of vectors r (..., 3): ``[r]× x = r × x``."""
    r = np.asarray(r, float)
    z = np.zeros(r.shape[:-1])
    return np.stack([np.stack([z, -r[..., 2], r[..., 1]], -1),
                     np.stack([r[..., 2], z, -r[..., 0]], -1),
                     np.stack([-r[..., 1], r[..., 0], z], -1)], -2)


def axis_angle(axis, angle) -> np.ndarray:
    """Rotation (3, 3) by ``angle`` (rad) about ``axis`` (3,), normalized here (Rodrigues):
    ``R = u uᵀ + cos α (I − u uᵀ) + sin α [u]×``."""
    u = np.asarray(axis, float)
    u = u / np.linalg.norm(u)
    K = skew(u)
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def rot_z(theta) -> np.ndarray:
    """Rotation about z by θ (rad): shape (3, 3) for a scalar, (..., 3, 3) for an array."""
    th = np.asarray(theta, float)
    c, s = np.cos(th), np.sin(th)
    R = np.zeros(th.shape + (3, 3))
    R[..., 0, 0] = c
    R[..., 0, 1] = -s
    R[..., 1, 0] = s
    R[..., 1, 1] = c
    R[..., 2, 2] = 1.0
    return R


def frame_with_z(d) -> np.ndarray:
    """A rotation (3, 3) whose z column is the unit vector along d (Simbody's
    ``Rotation(d, ZAxis)``-like); the x axis is any perpendicular, chosen deterministically."""
    d = np.asarray(d, float) / np.linalg.norm(d)
    helper = np.array([1.0, 0, 0]) if abs(d[0]) < 0.9 else np.array([0, 1.0, 0])
    x = cross(helper, d)            # the same products and differences as np.cross, faster
    x /= np.linalg.norm(x)
    y = cross(d, x)
    return np.column_stack([x, y, d])


def cross(a, b) -> np.ndarray:
    """a × b over the last axis (3) with broadcasting; leaner than ``np.cross`` for (T, 3)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out
