"""External loads on bodies (:class:`ExternalLoad`) and the wrenches they apply at the body
mass centres (:func:`body_wrenches_from_loads`); both are importable from
:mod:`arthron.multibody.inverse_dynamics` too."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .kinematics import Tree

__all__ = ["ExternalLoad", "body_wrenches_from_loads", "slice_loads"]


@dataclass
class ExternalLoad:
    """A load applied to a body, sampled at the solve times.

    Attributes
    ----------
    body : str                body name the load is applied to
    force : (T, 3) N or None  in ``force_frame`` (``"ground"`` or a body name)
    point : (T, 3) m or None  in ``point_frame``; None = the body origin
    torque : (T, 3) N·m or None, in ``force_frame``
    """

    body: str
    force: np.ndarray | None = None
    point: np.ndarray | None = None
    torque: np.ndarray | None = None
    force_frame: str = "ground"
    point_frame: str = "ground"
    name: str = ""


def body_wrenches_from_loads(tree: Tree, kin, loads):
    """External loads -> wrenches at the body mass centers.

    Parameters
    ----------
    tree : compiled model; kin : its Kinematics for the T frames; loads : iterable of
    :class:`ExternalLoad` sampled at those frames (force N, point m, torque N·m).

    Returns
    -------
    F, M : (T, nb, 3) each, forces (N) and moments about the mass centers (N·m), ground frame.

    Raises
    ------
    ModelFileError when a load names a body the tree lacks.
    """
    T = kin.R.shape[0]
    F = np.zeros((T, tree.nb, 3))
    M = np.zeros((T, tree.nb, 3))
    Rb = kin.body_R(tree)
    ob = kin.body_origin(tree)
    com = kin.body_com(tree)

    def frame_R(name):
        if name in ("ground", "/ground", None, ""):
            return None
        return Rb[:, tree.body_index(name)]

    for ld in loads:
        b = tree.body_index(ld.body)
        if b < 0:
            continue  # loads on ground do nothing
        Rf = frame_R(ld.force_frame)
        if ld.force is not None:
            f = ld.force if Rf is None else np.einsum("tij,tj->ti", Rf, ld.force)
            if ld.point is None:
                p = ob[:, b]
            else:
                Rp = frame_R(ld.point_frame)
                if Rp is None:
                    p = ld.point
                else:
                    pb = tree.body_index(ld.point_frame)
                    p = ob[:, pb] + np.einsum("tij,tj->ti", Rp, ld.point)
            F[:, b] += f
            M[:, b] += np.cross(p - com[:, b], f)
        if ld.torque is not None:
            M[:, b] += ld.torque if Rf is None else np.einsum("tij,tj->ti", Rf, ld.torque)
    return F, M


def slice_loads(loads, s: slice) -> list:
    """The :class:`ExternalLoad` list restricted to the frames ``s`` (arrays sliced, not copied)."""
    def cut(a):
        return a if a is None or np.ndim(a) < 2 else a[s]
    return [replace(L, force=cut(L.force), point=cut(L.point), torque=cut(L.torque)) for L in loads]
