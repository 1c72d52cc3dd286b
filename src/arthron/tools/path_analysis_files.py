"""MuscleAnalysis' length and moment-arm files as OpenSim 4.6 writes them
(``<prefix>_MuscleAnalysis_Length.sto``, ``_MomentArm_<coordinate>.sto``), for ``arthron
paths`` (:func:`write_path_analysis`) and the AnalyzeTool (:mod:`arthron.tools.analyze_tool`)."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ..errors import ArthronWarning, ModelFileError, OptionError
from ..io.files import check_output, check_output_dir, make_output_folder, output_group
from ..io.sto import write_sto
from ..models.model import Model
from ..multibody.kinematics import Tree
from ..solvers.muscle_analysis import PathAnalysis, coordinates_of_motion, path_analysis
from .options import check_result_name

__all__ = ["write_path_analysis"]


_MUSCLE_ANALYSIS_DESCRIPTION = [
    "", "This analysis gathers basic information about muscles during a simulation (e.g., forces, "
    "tendon lengths, moment arms, etc).", "", "Units are S.I. units (second, meters, Newtons, ...)",
    "If the header above contains a line with 'inDegrees', this indicates whether rotational "
    "values are in degrees (yes) or radians (no).", ""]


def _path_table_files(coords, out: Path, prefix: str, analysis: str = "MuscleAnalysis") -> list:
    return [out / f"{prefix}_{analysis}_Length.sto"] + [
        out / f"{prefix}_{analysis}_MomentArm_{c}.sto" for c in coords]


def _still_coordinates(res: PathAnalysis) -> list:
    """Coordinates the moment arms are undefined about (NaN) at some frame: they cannot move
    there (locked, and held by the model's constraints)."""
    nan = np.isnan(res.moment_arms).any(axis=(0, 1)) if res.moment_arms.size else []
    return [c for c, k in zip(res.coordinates, nan) if k]


def _write_path_tables(res: PathAnalysis, coords, out: Path, prefix: str,
                       analysis: str = "MuscleAnalysis") -> list:
    """Length and moment-arm files. Moment arms about a coordinate that cannot move are
    written NaN (OpenSim's MuscleAnalysis writes -nan or rounding noise there), with one
    warning naming those coordinates; a coordinate chosen by ``all`` that cannot move at any
    frame gets no file (:meth:`PathAnalysis.crossed`), named in the warning too."""
    files = _path_table_files(coords, out, prefix, analysis)
    for f in files:
        make_output_folder(f)
    still = _still_coordinates(res)
    with output_group():
        write_sto(files[0], res.length_table())
        for c, f in zip(coords, files[1:]):
            write_sto(f, res.moment_arm_table(c), allow_nan=c in still)
    if still:
        unwritten = [c for c in still if c not in coords]
        said = (["written as NaN"] if len(unwritten) < len(still) else []) + (
            ["no file for " + ", ".join(unwritten)] if unwritten else [])
        warnings.warn(f"moment arms about {', '.join(still)} are undefined (NaN) where these "
                      "coordinates cannot move (locked and held by the model's constraints); "
                      + "; ".join(said), ArthronWarning, stacklevel=3)
    return files


def write_path_analysis(model: Model, motion_table, out_dir, muscles=None, prefix=None,
                        tree: Tree | None = None):
    """Write lengths and moment arms as OpenSim's MuscleAnalysis does (``arthron paths``).

    Parameters
    ----------
    model : Model
    motion_table : arthron.tables.Table
        Coordinates over time (columns named by coordinate or by its state path
        ``/jointset/<joint>/<coord>/value``; degrees if the header says ``inDegrees=yes``).
        Coordinates missing from the table keep their default values; no filtering.
    out_dir : directory (created)
    muscles : names to include (default: all muscles; if the model has none, all path forces)
    prefix : file prefix (default: the model name)

    Writes ``<prefix>_MuscleAnalysis_Length.sto`` (one column per muscle, metres) and one
    ``<prefix>_MuscleAnalysis_MomentArm_<coord>.sto`` per coordinate that any selected path
    crosses (metres), and returns the list of written paths.
    """
    prefix = _file_prefix(prefix, model)
    check_output_dir(out_dir)
    q = coordinates_of_motion(model, motion_table)
    res = path_analysis(model, q, time=motion_table.time, muscles=muscles, tree=tree)
    out = Path(out_dir)
    files = _path_table_files(res.crossed(), out, prefix)
    for f in files:
        check_output(f)
    return _write_path_tables(res, res.crossed(), out, prefix)


def _file_prefix(prefix, model: Model) -> str:
    """The prefix of the output files: ``prefix``, else the model's name; a name, not a path
    (a model named ``../x`` would write outside the folder: OpenSim 4.6 refuses such a name,
    'Component ... contains invalid characters'). OptionError / ModelFileError otherwise."""
    if prefix:
        return check_result_name(prefix, "prefix")
    try:
        return check_result_name(model.name or "model", "model name")
    except OptionError as e:
        raise ModelFileError(e.message, model.source) from None
