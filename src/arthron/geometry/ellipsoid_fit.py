"""Least-squares ellipsoid fit to surface points (the ribcage ellipsoid of Sarshari et al. 2021,
whose base ellipsoid is fitted to the ribcage)."""
from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

from ..errors import DataFileError

__all__ = ["fit_ellipsoid", "ellipsoid_distance"]


def ellipsoid_distance(points, center, radii) -> np.ndarray:
    """Approximate signed distance (m) of ``points`` (n, 3) to the axis-aligned ellipsoid
    (``center`` (3,), ``radii`` (3,)): ``(‖(p − c)/r‖ − 1) · ‖p − c‖ / ‖(p − c)/r‖``, the radial
    distance along the ray from the centre (exact for a sphere; positive outside)."""
    d = np.asarray(points, float) - np.asarray(center, float)
    u = d / np.asarray(radii, float)
    nu = np.linalg.norm(u, axis=-1)
    nd = np.linalg.norm(d, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(nu > 0, nd * (1.0 - 1.0 / nu), -np.min(radii))


def fit_ellipsoid(points, *, center0=None, radii0=None, fixed_center=None):
    """Axis-aligned ellipsoid closest to ``points`` (n, 3) in the least-squares sense of the
    radial distance (:func:`ellipsoid_distance`), by scipy's trust-region least squares.

    Parameters
    ----------
    points : (n, 3) m, n ≥ 6
    center0, radii0 : starting values (default: centroid and half the bounding-box extents)
    fixed_center : sequence of (axis, value) pairs holding centre coordinates fixed (e.g.
        ``[(0, 0.0)]`` for a body symmetric about x = 0)

    Returns
    -------
    dict with ``center`` (3,), ``radii`` (3,), ``rms`` (m) and ``max`` (m) of the distances.

    Raises
    ------
    DataFileError for fewer than 6 finite points.
    """
    P = np.asarray(points, float).reshape(-1, 3)
    P = P[np.all(np.isfinite(P), axis=1)]
    if len(P) < 6:
        raise DataFileError(f"an ellipsoid fit needs at least 6 points, got {len(P)}")
    c0 = P.mean(axis=0) if center0 is None else np.asarray(center0, float)
    r0 = 0.5 * np.ptp(P, axis=0) if radii0 is None else np.asarray(radii0, float)
    r0 = np.maximum(r0, 1e-6)
    fixed = dict(fixed_center or ())
    free = [i for i in range(3) if i not in fixed]

    def unpack(x):
        c = c0.copy()
        for i, v in fixed.items():
            c[i] = v
        c[free] = x[:len(free)]
        return c, np.exp(x[len(free):])

    def res(x):
        c, r = unpack(x)
        return ellipsoid_distance(P, c, r)
    x0 = np.concatenate([c0[free], np.log(r0)])
    sol = least_squares(res, x0, method="trf", x_scale="jac")
    c, r = unpack(sol.x)
    d = ellipsoid_distance(P, c, r)
    return {"center": c, "radii": r, "rms": float(np.sqrt(np.mean(d ** 2))),
            "max": float(np.abs(d).max())}
