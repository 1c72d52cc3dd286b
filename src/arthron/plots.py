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

__all__ = ["plot_moment_arms", "plot_reaction_study", "plot_model_poses"]


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


def _save(plt, fig, path, dpi):
    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    plt.close(fig)
    atomic_write(path, buf.getvalue())
    return Path(path)


def plot_reaction_study(curves: dict, path, *, published=None, mass: dict | None = None,
                        title: str = "Glenohumeral joint reaction, scapular-plane abduction",
                        dpi: int = 120):
    """Glenohumeral reaction force (N) against humerothoracic elevation (deg).

    curves : {label: (elevation_deg (T,), force (T,))}; the first is the reference (generic)
    and is drawn in every panel. With one curve: one panel; with more: one panel per variant
    group laid out like Fig. 5 of Sarshari et al. (2021) (gender, weight, height, glenoid
    inclination, rotator-cuff PCSA), the groups taken from the labels' keys
    (``female``, ``mass_*``, ``height_*``, ``inclination_*``, ``rc_*``).
    published : {label: [(elevation, force), ...]} points printed by Sarshari et al. (2021),
    drawn as markers. Writes ``path`` (PNG, whole or not at all); returns it.
    """
    plt = _pyplot()
    published = published or {}
    keys = list(curves)
    groups = [("gender", ("female",)), ("weight", ("mass_",)), ("height", ("height_",)),
              ("glenoid inclination", ("inclination_",)), ("rotator-cuff PCSA", ("rc_",))]
    panels = [(t, [k for k in keys[1:] if k.startswith(p)]) for t, p in groups]
    panels = [(t, ks) for t, ks in panels if ks] or [("", [])]
    n = len(panels)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
    ref = keys[0]
    for ax, (t, ks) in zip(axes.flat, panels):
        for k in [ref] + ks:
            el, f = curves[k]
            ax.plot(el, f, lw=2.0 if k == ref else 1.4, label=k, color="k" if k == ref else None)
        for lab, pts in published.items():
            if lab == ref or lab in ks:
                pts = np.asarray(pts, float).reshape(-1, 2)
                ax.plot(pts[:, 0], pts[:, 1], "o", mfc="none", ms=7,
                        label=f"{lab}: Sarshari et al. 2021")
        ax.set_xlabel("humerothoracic elevation (deg)")
        ax.set_ylabel("joint reaction force (N)")
        if t:
            ax.set_title(t)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(plt, fig, path, dpi)


def plot_model_poses(model: Model, q, path, *, labels=None, muscles=None, tree: Tree | None = None,
                     up: int = 1, dpi: int = 110):
    """A picture of the model at a few poses (one 3-D panel each, matplotlib off-screen): bones
    as lines between the origins of each body and its parent, the model's markers (landmarks)
    as dots, muscle paths (wrapping included) as thin red lines. q : (k, nq) coordinates;
    labels : k titles; up : the model's vertical axis (0, 1, 2; drawn vertical). Writes
    ``path`` (PNG, whole or not at all); returns it."""
    plt = _pyplot()
    from .multibody.kinematics import forward_kinematics, marker_positions
    from .multibody.path_geometry import compute_paths
    from .multibody.paths import compile_paths
    tree = tree or compile_model(model)
    q = np.atleast_2d(np.asarray(q, float))
    kin = forward_kinematics(tree, q)
    _, P = marker_positions(tree, q, kin=kin)
    muscles = list(muscles) if muscles is not None else [n for n, f in model.forces.items() if f.is_muscle]
    states = compute_paths(compile_paths(model, tree, forces=muscles), tree, q, kin) if muscles else []
    order = [i for i in range(3) if i != up] + [up]          # horizontal, horizontal, vertical
    O = kin.body_origin(tree)
    fig = plt.figure(figsize=(4.2 * len(q), 4.6))
    for k in range(len(q)):
        ax = fig.add_subplot(1, len(q), k + 1, projection="3d")
        for st in states:
            xyz = st.P[k][st.tag[k] >= 0][:, order]
            ax.plot(*xyz.T, color="tab:red", lw=0.4, alpha=0.5)
        for b, par in enumerate(tree.body_parent):
            if par >= 0:
                ax.plot(*np.column_stack([O[k, par], O[k, b]])[order], color="0.2", lw=2.5)
        pk = P[k][:, order]
        ax.scatter(*pk.T, s=10, color="tab:blue", depthshade=False)
        c = pk.mean(axis=0)
        lim = 0.6 * max(np.ptp(pk, axis=0).max(), 0.1)
        ax.set_xlim(c[0] - lim, c[0] + lim)
        ax.set_ylim(c[1] - lim, c[1] + lim)
        ax.set_zlim(c[2] - lim, c[2] + lim)
        ax.set_xlabel("xyz"[order[0]] + " (m)")
        ax.set_ylabel("xyz"[order[1]] + " (m)")
        ax.set_zlabel("xyz"[order[2]] + " (m, up)")
        ax.view_init(elev=12, azim=-125)
        if labels is not None:
            ax.set_title(str(labels[k]))
    fig.tight_layout()
    return _save(plt, fig, path, dpi)
