"""Motions (coordinates over time) mapped onto a model's coordinates.

One rule for every tool: columns are matched by coordinate name or 4.x state path
(``/jointset/<joint>/<coordinate>/value``, or a tail of it such as ``<joint>/<coordinate>/value``,
as OpenSim 4.6 matches them; a path naming another joint than the coordinate's is not read, and
named in the error or warning); degrees are converted for rotational coordinates
only (as OpenSim converts them: "coupled" coordinates stay as written).
"""
from __future__ import annotations

import warnings
from os import PathLike

import numpy as np

from ..errors import ArthronWarning, DataFileError, OptionError
from ..tables import check_times
from .model import Model, require_model

__all__ = ["coordinates_from_table"]


def coordinates_from_table(model: Model, table, *, in_degrees=None, path=None, locked_at_default=False,
                          missing: str = "error"):
    """Coordinate columns of a motion table, in model order and SI units.

    Column labels may be coordinate names or 4.x state paths (``/jointset/j/c/value``, or its
    tail ``j/c/value``, as OpenSim 4.6 reads them); a state path naming another joint than the
    coordinate's (``/jointset/WRONG/c/value``) is not read (OpenSim's AnalyzeTool does not read
    it either: it keeps the default value) and is named, with the coordinate's joint, in the
    error or warning about the missing coordinate (in a warning when it was locked). Coordinates missing from the file take their default value when locked; with
    ``locked_at_default`` locked coordinates take it whatever the file holds. (OpenSim's
    InverseDynamicsTool uses the file's values, locks and constraints being ignored.)
    ``missing``: ``"error"`` (an unlocked coordinate missing from the file is an error, as
    for the tools), ``"default"`` (it keeps its default value, with a warning naming them, as
    OpenSim's analyses of a partial motion do).

    Returns
    -------
    values : (T, nq)

    Raises
    ------
    DataFileError when an unlocked coordinate of the model is missing, naming them and the file;
    when the motion has no rows, as many labels as data columns, or times that do not strictly
    increase; or holds a NaN or infinite value of a coordinate (named with its time).
    OptionError when ``model`` is not a Model or ``table`` not a Table (a path, an array).
    """
    require_model(model)
    _check_table(table, path)
    src = path or getattr(table, "source", None)
    coords = list(model.coordinates.values())
    lab, other_states, misnamed = {}, [], []
    for k, l in enumerate(table.labels):
        name = l
        if "/" in l:
            parts = l.strip("/").split("/")
            if parts[-1] != "value" or len(parts) < 2:
                other_states.append(l)         # speeds, muscle states ...: not coordinate values
                continue
            name = parts[-2]
            c = model.coordinates.get(name)
            if c is not None and not _is_state_path(l, c):
                misnamed.append(f"'{l}' (coordinate '{name}' is in joint '{c.joint}': "
                                f"{_state_path(c)})")
                continue
        lab.setdefault(name, k)
    mis = (f"; column(s) naming a coordinate under another joint than its own are not read, as "
           f"OpenSim 4.6 does not read them: {', '.join(misnamed[:4])}{' ...' if len(misnamed) > 4 else ''}"
           if misnamed else "")
    deg = table.in_degrees if in_degrees is None else in_degrees
    if deg is None:
        deg = False
    T = len(table.time)
    out = np.empty((T, len(coords)))
    missing_names = []
    for i, c in enumerate(coords):
        k = lab.get(c.name)
        if (c.locked and locked_at_default) or (k is None and c.locked):
            out[:, i] = c.default_value
            continue
        if k is None:
            missing_names.append(c.name)
            out[:, i] = c.default_value       # kept only with missing="default"
            continue
        col = np.asarray(table.data[:, k], float)
        if deg and c.motion_type == "rotational":
            col = np.deg2rad(col)
        out[:, i] = col
    unknown = [lb for lb in lab if lb not in model.coordinates]     # a misspelling shows here
    if missing_names and missing == "default":
        warnings.warn(f"{src or 'motion'}: {len(missing_names)} coordinate(s) "
                      f"not in the motion keep their default values ({', '.join(missing_names[:6])}"
                      f"{' ...' if len(missing_names) > 6 else ''})"
                      + (f"; column(s) that name no coordinate of model '{model.name}': {', '.join(unknown[:6])}"
                         if unknown else "") + mis, ArthronWarning, stacklevel=2)
        missing_names, mis = [], ""
    if missing_names:
        raise DataFileError(
            f"motion does not match model '{model.name}': missing coordinate column(s) "
            f"{', '.join(missing_names)}" + (f"; unknown column(s) {', '.join(unknown[:10])}" if unknown else "")
            + (f"; state-path columns are read from their '/value' entries only (ignored: "
               f"{', '.join(other_states[:3])}{' ...' if len(other_states) > 3 else ''})"
               if other_states and not lab else "") + mis,
            src, "column labels")
    if mis:     # a locked coordinate took its default value
        warnings.warn(f"{src or 'motion'}: {mis[2:]}", ArthronWarning, stacklevel=2)
    bad = ~np.isfinite(out)
    if bad.any():
        r, i = (int(x[0]) for x in np.nonzero(bad))
        raise DataFileError(f"non-finite value {out[r, i]} of coordinate '{coords[i].name}' at time "
                            f"{float(table.time[r])} (row {r + 1})", src,
                            f"column '{coords[i].name}'")
    _warn_absurd(coords, out, np.asarray(table.time, float), deg, src)
    dt = np.diff(np.asarray(table.time, float))
    if dt.size and dt.min() < _MIN_DT:
        k = int(np.argmin(dt))
        warnings.warn(f"{src or 'motion'}: time step of {float(dt[k]):.3g} s at t = "
                      f"{float(table.time[k]):.6g} s (below {_MIN_DT:g} s; derivatives of the "
                      "coordinates will be meaningless)", ArthronWarning, stacklevel=2)
    return out


def _state_path(c) -> str:
    """The state path of coordinate ``c``'s value, ``/jointset/<joint>/<coordinate>/value``."""
    return f"/jointset/{c.joint}/{c.name}/value"


def _is_state_path(label: str, c) -> bool:
    """Whether a column label with '/' reads coordinate ``c``'s value as OpenSim 4.6 reads it
    (``Storage::getStateIndex``): the whole state path, or a tail of it at a '/' without the
    leading '/' (``r_elbow/r_elbow_flex/value``). A label naming another joint
    (``/jointset/WRONG/r_elbow_flex/value``) does not: OpenSim's AnalyzeTool then warns "Did not
    find column /jointset/r_elbow/r_elbow_flex/value" and keeps the coordinate's default."""
    full = _state_path(c)
    return label == full or (not label.startswith("/") and full.endswith("/" + label))


def _check_table(table, path) -> None:
    """The motion is a Table whose labels match its columns, with rows whose times strictly
    increase (else the spline and the time range fail later with messages about neither)."""
    if not all(hasattr(table, a) for a in ("time", "labels", "data")):
        hint = (" (read the file first: arthron.io.sto.read_sto(path))" if isinstance(table, (str, PathLike))
                else " (build one: arthron.tables.Table(name, time (T,), labels, data (T, n)))")
        raise OptionError(f"motion must be an arthron Table, got {type(table).__name__}{hint}")
    src = path or getattr(table, "source", None)
    shape = np.shape(table.data)
    if len(shape) != 2 or shape[1] != len(table.labels):
        raise DataFileError(f"{len(table.labels)} column label(s) for data of shape {shape}", src, "column labels")
    check_times(table.time, src, "the motion has no rows (0 frames)")


#: A time step below this (s) is not a sampling interval of measured motion.
_MIN_DT = 1e-6


# Beyond its range by more than this, a coordinate value is not a pose but a unit or data error.
_MARGIN = {"rotational": 2 * np.pi, "translational": 10.0}


def _with_unit(value: float, motion_type: str, in_degrees: bool) -> str:
    """A coordinate value (rad or m) as the motion file gives it: degrees for a rotation of a
    file in degrees, else rad or m."""
    if motion_type == "rotational":
        return f"{np.degrees(value):.6g}°" if in_degrees else f"{value:.6g} rad"
    return f"{value:.6g} m"


def _warn_absurd(coords, out, time, in_degrees, src):
    """Warn once (naming columns and times) on coordinate values far outside the coordinate's
    range: degrees read as radians, millimetres as metres, spikes. Rotational values above 4π in a
    file that says ``inDegrees=no`` are named as a probable degree/radian mismatch."""
    far, degree_like = [], []
    for i, c in enumerate(coords):
        margin = _MARGIN.get(c.motion_type)
        if margin is None:
            continue
        lo, hi = float(min(c.range)), float(max(c.range))
        col = out[:, i]
        off = (col < lo - margin) | (col > hi + margin)
        if off.any():
            k = int(np.argmax(np.abs(col) * off))
            far.append(f"{c.name} = {_with_unit(float(col[k]), c.motion_type, in_degrees)} at "
                       f"t = {float(time[k]):.6g} (range {_with_unit(lo, c.motion_type, in_degrees)} to "
                       f"{_with_unit(hi, c.motion_type, in_degrees)})")
            if c.motion_type == "rotational" and not in_degrees and np.abs(col).max() > 4 * np.pi:
                degree_like.append(c.name)
    if far:
        msg = (f"{src or 'motion'}: {len(far)} coordinate(s) far outside their ranges "
               f"({'; '.join(far[:5])}{' ...' if len(far) > 5 else ''})")
        if degree_like:
            msg += (f"; {', '.join(degree_like[:5])} look like degrees in a file read as radians "
                    "(inDegrees=no)")
        warnings.warn(msg, ArthronWarning, stacklevel=3)
