"""Figures of arthron's results (matplotlib, Agg backend). The only module that imports
matplotlib (extra ``plot``); it sits beside the solvers and tools and never inside them.
"""
from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np

from .errors import ArthronWarning, DataFileError, ModelFileError, OptionError, UnsupportedFeature
from .io.files import atomic_write
from .models.model import Model
from .multibody.kinematics import Tree, compile_model
from .solvers.muscle_analysis import CROSSING_TOLERANCE, coordinates_of_motion, default_muscles, path_analysis

__all__ = ["plot_moment_arms", "plot_time_series", "column_unit", "select_columns",
           "plot_reaction_study", "plot_model_poses"]


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


# ------------------------------------------------------------------------------ time series
#: (suffix, quantity, unit) of OpenSim's output columns, tried in order (lower case)
_SUFFIX_UNITS = (
    ("_moment", "moment", "N·m"), ("_force", "force", "N"),                      # InverseDynamics
    ("_fx", "force", "N"), ("_fy", "force", "N"), ("_fz", "force", "N"),       # JointReaction
    ("_mx", "moment", "N·m"), ("_my", "moment", "N·m"), ("_mz", "moment", "N·m"),
    ("_px", "position", "m"), ("_py", "position", "m"), ("_pz", "position", "m"),  # JR, GRF
    ("_vx", "force", "N"), ("_vy", "force", "N"), ("_vz", "force", "N"),       # GRF .mot
    ("torque_x", "moment", "N·m"), ("torque_y", "moment", "N·m"), ("torque_z", "moment", "N·m"),
    ("_tx", "translation", "m"), ("_ty", "translation", "m"), ("_tz", "translation", "m"),
)
#: (file-name fragment, quantity, unit) of OpenSim's analyses whose columns are muscle names
_FILE_UNITS = (
    ("staticoptimization_activation", "activation", ""), ("staticoptimization_force", "force", "N"),
    ("_momentarm_", "moment arm", "m"), ("_moment_", "moment", "N·m"), ("fiberlength", "fiber length", "m"),
    ("tendonlength", "tendon length", "m"), ("_length", "length", "m"), ("fiberforce", "force", "N"),
    ("tendonforce", "force", "N"), ("_ligament", "force", "N"),
)


def column_unit(label: str, table, model=None) -> tuple[str, str]:
    """``(quantity, unit)`` of a column of an OpenSim results file, by OpenSim's conventions:

    * coordinates (names of ``model``'s coordinates or state paths ``/jointset/j/c/value``):
      rotational in deg (rad when the header says ``inDegrees=no``), translational in m; without
      a model, ``*_tx``/``_ty``/``_tz`` are translations (m) and other columns of a file whose
      header has ``inDegrees`` are angles;
    * InverseDynamics ``*_moment`` N·m, ``*_force`` N; JointReaction ``*_fx`` N, ``*_mx`` N·m,
      ``*_px`` m; GRF ``*_vx`` N, ``*_px`` m, ``*torque_x`` N·m;
    * columns named by muscle: the analysis in the file name (StaticOptimization activation,
      no unit; force N; MuscleAnalysis lengths and moment arms m, forces N).

    Returns ``("value", "")`` when nothing says.
    """
    low = label.lower()
    deg = table.in_degrees is not False
    name = label
    if label.startswith("/jointset/") and label.endswith("/value"):
        name = label.split("/")[-2]
    if model is not None and name in getattr(model, "coordinates", {}):
        c = model.coordinates[name]
        if c.motion_type == "rotational":
            return "angle", "deg" if deg else "rad"
        if c.motion_type == "translational":
            return "translation", "m"
        return "coordinate", ""
    for suf, qty, unit in _SUFFIX_UNITS:
        if low.endswith(suf):
            return qty, unit
    src = (Path(table.source).stem.lower() + "_") if getattr(table, "source", None) else ""
    for frag, qty, unit in _FILE_UNITS:
        if frag in src:
            return qty, unit
    if table.in_degrees is not None and model is None:
        return "angle", "deg" if table.in_degrees else "rad"
    return "value", ""


def select_columns(table, patterns, source=None) -> list:
    """Column labels of ``table`` matching ``patterns`` (exact names or shell globs such as
    ``hip_flexion_*`` or ``*_moment``), in the order given, each once.

    Raises OptionError when no pattern is given; DataFileError naming the file and the pattern
    that matches no column, or the column the file has twice (which of them is meant is unknown)."""
    import fnmatch
    patterns = [p for p in patterns if p]
    if not patterns:
        raise OptionError("--columns: give at least one column name or glob (e.g. 'hip_flexion_*')")
    out = []
    for pat in patterns:
        hits = [pat] if pat in table.labels else fnmatch.filter(table.labels, pat)
        if not hits:
            near = ", ".join(table.labels[:8]) + (" ..." if len(table.labels) > 8 else "")
            raise DataFileError(f"no column '{pat}' (columns: {near})", source or table.source)
        for h in hits:
            if list(table.labels).count(h) > 1:
                raise DataFileError(f"column '{h}' appears {list(table.labels).count(h)} times in the file",
                                    source or table.source)
        out += [h for h in hits if h not in out]
    return out


def plot_time_series(table, columns, out=None, *, model=None, title=None, dpi: int = 120):
    """Draw columns of a ``.sto``/``.mot`` table against time (matplotlib, Agg).

    Parameters
    ----------
    table : :class:`arthron.tables.Table` (as read by :func:`arthron.io.sto.read_sto`; values are
        drawn in the file's units)
    columns : names or globs (see :func:`select_columns`)
    out : PNG path to write (whole or not at all), or None
    model : optional model telling rotational from translational coordinates
    title : default: the file's name

    One panel per unit (sharing the time axis, labelled ``time (s)``), its y axis labelled with
    the quantity and unit of :func:`column_unit`, one line per column with a legend.
    Returns the matplotlib Figure (closed from pyplot's registry when written).

    Raises UnsupportedFeature without matplotlib (extra ``plot``); DataFileError for an unknown
    column or a table without rows. Columns holding NaN or infinite values are drawn with gaps
    and named in an ArthronWarning.
    """
    if out is not None and Path(out).suffix.lower() != ".png":
        raise OptionError(f"output {out}: give a .png file name (the figure is written as PNG)")
    plt = _pyplot()
    labels = select_columns(table, columns)
    if len(table.time) == 0:
        raise DataFileError("the file has no rows to plot", table.source)
    gaps = {lab: int((~np.isfinite(table.column(lab))).sum()) for lab in labels}
    gaps = {lab: k for lab, k in gaps.items() if k}
    if gaps:
        shown = ", ".join(f"{lab} ({k} of {len(table.time)})" for lab, k in list(gaps.items())[:6])
        warnings.warn(f"{table.source or table.name}: not-a-number or infinite values are left out of "
                      f"the lines (gaps): {shown}" + (" ..." if len(gaps) > 6 else ""), ArthronWarning,
                      stacklevel=2)
    groups = {}
    for lab in labels:
        groups.setdefault(column_unit(lab, table, model), []).append(lab)
    n = len(groups)
    fig, axes = plt.subplots(n, 1, figsize=(8, 2.2 + 2.3 * n), sharex=True, squeeze=False)
    for ax, ((qty, unit), labs) in zip(axes[:, 0], groups.items()):
        for lab in labs:
            ax.plot(table.time, table.column(lab), lw=1.3, label=lab)
        ax.set_ylabel(f"{qty} ({unit})" if unit else qty)
        ax.grid(True, lw=0.4, color="0.85")
        ax.legend(fontsize=7, ncol=2 if len(labs) > 8 else 1, loc="best")
    axes[-1, 0].set_xlabel("time (s)")
    src = Path(table.source).name if getattr(table, "source", None) else (table.name or "")
    axes[0, 0].set_title(title if title is not None else src)
    fig.tight_layout()
    if out is not None:
        buf = io.BytesIO()
        fig.savefig(buf, dpi=dpi, format="png")
        plt.close(fig)
        atomic_write(out, buf.getvalue())
    return fig


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
    import textwrap
    # wrapped to the figure's width (about 11 characters per inch at 10 pt)
    fig.suptitle("\n".join(textwrap.wrap(title, width=max(30, int(11 * 4.6 * cols)))), fontsize=10)
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
    states = (compute_paths(compile_paths(model, tree, forces=muscles).geometric(), tree, q, kin)
              if muscles else [])       # FunctionBasedPaths have no points to draw
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
