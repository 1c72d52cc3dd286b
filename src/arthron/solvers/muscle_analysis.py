"""OpenSim's MuscleAnalysis, as arthron writes it: path lengths and moment arms over a motion
as ``.sto`` files, and plots of moment arm against coordinate (``arthron paths``).

The path geometry itself is :mod:`arthron.multibody.paths`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ModelFileError, UnsupportedFeature
from ..tables import Table
from ..io.sto import write_sto
from ..multibody.kinematics import Tree, compile_model
from ..models.model import Model
from ..models.motion import coordinates_from_table
from ..multibody.paths import compile_paths, moment_arms

__all__ = ["write_path_analysis", "plot_moment_arms"]


def write_path_analysis(model: Model, motion_table, out_dir, muscles=None, prefix=None,
                        tree: Tree | None = None):
    """Write lengths and moment arms as OpenSim's MuscleAnalysis does.

    Parameters
    ----------
    model : Model
    motion_table : arthron.io.sto.Table
        Coordinates over time (columns named by coordinate or by its state path
        ``/jointset/<joint>/<coord>/value``; degrees if the header says ``inDegrees=yes``).
        Coordinates missing from the table keep their default values.
    out_dir : directory (created)
    muscles : names to include (default: all muscles; if the model has none, all path forces)
    prefix : file prefix (default: the model name)

    Writes ``<prefix>_MuscleAnalysis_Length.sto`` (one column per muscle, metres) and one
    ``<prefix>_MuscleAnalysis_MomentArm_<coord>.sto`` per coordinate that any selected path
    crosses (metres), and returns the list of written paths.
    """
    tree = compile_model(model) if tree is None else tree
    if muscles is None:
        muscles = list(model.muscles) or [n for n, f in model.forces.items() if f.path is not None]
    ps = compile_paths(model, tree, forces=list(muscles))
    q = coordinates_from_table(model, motion_table, missing="default")
    ma, L = moment_arms(ps, tree, q, return_lengths=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    prefix = prefix or model.name
    time = np.asarray(motion_table.time, float)
    written = []
    f = out / f"{prefix}_MuscleAnalysis_Length.sto"
    write_sto(f, Table(name="Length", time=time, labels=list(ps.names), data=L,
                       in_degrees=False))
    written.append(f)
    for j, c in enumerate(tree.coordinate_names):
        if not np.any(np.abs(ma[:, :, j]) > 1e-12):
            continue
        f = out / f"{prefix}_MuscleAnalysis_MomentArm_{c}.sto"
        write_sto(f, Table(name=f"MomentArm_{c}", time=time, labels=list(ps.names),
                           data=ma[:, :, j], in_degrees=False))
        written.append(f)
    return written


def plot_moment_arms(model: Model, q, out_dir, muscles=None, coordinates=None,
                     tree: Tree | None = None, prefix=None, ma=None, dpi: int = 120):
    """Plot moment arm against coordinate value, one PNG per coordinate (matplotlib, Agg).

    Parameters
    ----------
    model : Model
    q : (T, nq) coordinates in model order (rad, m), or a motion table
        (:class:`arthron.io.sto.Table`, read as :func:`write_path_analysis` reads it)
    out_dir : directory (created)
    muscles : names to plot (default: all muscles; if the model has none, all path forces)
    coordinates : names of the coordinates (default: every unlocked coordinate that a
                  selected path has a non-zero moment arm about)
    tree : compiled tree (default: compiled from ``model``)
    prefix : file prefix (default: the model name)
    ma : (T, n_muscles, nq) precomputed moment arms (as :func:`moment_arms` returns them for
         ``muscles``), to avoid computing them again
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
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:   # pragma: no cover - depends on the environment
        raise UnsupportedFeature("plotting moment arms needs matplotlib (extra 'plot')") from None
    tree = compile_model(model) if tree is None else tree
    if muscles is None:
        muscles = list(model.muscles) or [n for n, f in model.forces.items() if f.path is not None]
    muscles = list(muscles)
    if hasattr(q, "labels"):
        q = coordinates_from_table(model, q, missing="default")
    q = np.atleast_2d(np.asarray(q, float))
    if ma is None:
        ps = compile_paths(model, tree, forces=muscles)
        ma = moment_arms(ps, tree, q)
    else:
        ma = np.asarray(ma, float)
    names = list(tree.coordinate_names)
    if coordinates is None:
        locked = {c for c in names if model.coordinates[c].locked}
        cols = [j for j, c in enumerate(names)
                if c not in locked and np.any(np.abs(ma[:, :, j]) > 1e-12)]
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
            if np.any(np.abs(ma[:, i, j]) > 1e-12):
                ax.plot(x, ma[:, i, j], label=m, lw=1.2)
        ax.axhline(0.0, color="0.6", lw=0.6)
        ax.set_xlabel(f"{c} ({'deg' if rot else 'm'})")
        ax.set_ylabel("moment arm (m)")
        ax.set_title(f"{prefix}: moment arms about {c}")
        if ax.lines[1:]:
            ax.legend(fontsize=7, ncol=2 if len(ax.lines) > 12 else 1, loc="best")
        fig.tight_layout()
        f = out / f"{prefix}_MomentArm_{c}.png"
        fig.savefig(f, dpi=dpi)
        plt.close(fig)
        written.append(f)
    return written
