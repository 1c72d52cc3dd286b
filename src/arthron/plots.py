"""Figures of arthron's results (matplotlib, Agg backend). The only module that imports
matplotlib (extra ``plot``); it sits beside the solvers and tools and never inside them.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from .errors import ModelFileError, UnsupportedFeature
from .io.files import atomic_write
from .models.model import Model
from .multibody.kinematics import Tree, compile_model
from .solvers.muscle_analysis import CROSSING_TOLERANCE, coordinates_of_motion, default_muscles, path_analysis

__all__ = ["plot_moment_arms"]


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:   # pragma: no cover - depends on the environment
        raise UnsupportedFeature("plotting needs matplotlib (pip install 'arthron[plot]')") from None
    return plt


def plot_moment_arms(model: Model, q, out_dir, muscles=None, coordinates=None,
                     tree: Tree | None = None, prefix=None, ma=None, dpi: int = 120):
    """Plot moment arm against coordinate value, one PNG per coordinate (matplotlib, Agg).

    Parameters
    ----------
    model : Model
    q : (T, nq) coordinates in model order (rad, m), or a motion table
        (:class:`arthron.tables.Table`, read as
        :func:`arthron.solvers.muscle_analysis.coordinates_of_motion` reads it)
    out_dir : directory (created)
    muscles : names to plot (default: all muscles; if the model has none, all path forces)
    coordinates : names of the coordinates (default: every unlocked coordinate that a
                  selected path has a non-zero moment arm about)
    tree : compiled tree (default: compiled from ``model``)
    prefix : file prefix (default: the model name)
    ma : (T, n_muscles, nq) precomputed moment arms (as
         :func:`arthron.multibody.paths.moment_arms` returns them for ``muscles``), to avoid
         computing them again
    dpi : resolution

    Writes ``<prefix>_MomentArm_<coord>.png``: the x axis is the coordinate's value (degrees for
    rotational coordinates, metres otherwise), one line per muscle crossing it (metres), the
    frames joined in the order of ``q`` (the curve follows the motion). Returns the list of
    written paths.

    Raises
    ------
    arthron.errors.UnsupportedFeature when matplotlib is not installed (extra ``plot``);
    ModelFileError for an unknown muscle or coordinate name.
    """
    plt = _pyplot()
    tree = compile_model(model) if tree is None else tree
    muscles = default_muscles(model) if muscles is None else list(muscles)
    if hasattr(q, "labels"):
        q = coordinates_of_motion(model, q)
    q = np.atleast_2d(np.asarray(q, float))
    if ma is None:
        ma = path_analysis(model, q, muscles=muscles, tree=tree).moment_arms
    else:
        ma = np.asarray(ma, float)
    names = list(tree.coordinate_names)
    if coordinates is None:
        locked = {c for c in names if model.coordinates[c].locked}
        cols = [j for j, c in enumerate(names)
                if c not in locked and np.any(np.abs(ma[:, :, j]) > CROSSING_TOLERANCE)]
    else:
        cols = []
        for c in coordinates:
            if c not in names:
                raise ModelFileError(f"no coordinate named '{c}'", model.source)
            cols.append(names.index(c))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    prefix = prefix or model.name
    written = []
    for j in cols:
        c = names[j]
        rot = model.coordinates[c].motion_type == "rotational"
        x = np.rad2deg(q[:, j]) if rot else q[:, j]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for i, m in enumerate(muscles):
            if np.any(np.abs(ma[:, i, j]) > CROSSING_TOLERANCE):
                ax.plot(x, ma[:, i, j], label=m, lw=1.2)
        ax.axhline(0.0, color="0.6", lw=0.6)
        ax.set_xlabel(f"{c} ({'deg' if rot else 'm'})")
        ax.set_ylabel("moment arm (m)")
        ax.set_title(f"{prefix}: moment arms about {c}")
        if ax.lines[1:]:
            ax.legend(fontsize=7, ncol=2 if len(ax.lines) > 12 else 1, loc="best")
        fig.tight_layout()
        f = out / f"{prefix}_MomentArm_{c}.png"
        buf = io.BytesIO()
        fig.savefig(buf, dpi=dpi, format="png")
        plt.close(fig)
        atomic_write(f, buf.getvalue())     # whole or not at all, never onto an input
        written.append(f)
    return written
