"""OpenSim's MuscleAnalysis as a computation: path lengths and moment arms over a motion.

Returns arrays and :class:`arthron.tables.Table` objects; writing them under OpenSim's file
names is :func:`arthron.tools.analyze_tool.write_path_analysis`, plotting them is
:func:`arthron.plots.plot_moment_arms`. The path geometry itself is
:mod:`arthron.multibody.paths`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelFileError
from ..models.model import Model
from ..models.motion import coordinates_from_table
from ..multibody.kinematics import Tree, compile_model
from ..multibody.paths import compile_paths, moment_arms
from ..tables import Table

__all__ = ["PathAnalysis", "path_analysis", "default_muscles", "coordinates_of_motion"]

#: a moment arm below this (m) counts as "the path does not cross the coordinate"
CROSSING_TOLERANCE = 1e-12


def default_muscles(model: Model) -> list:
    """The paths MuscleAnalysis reports by default: every muscle, or, in a model without
    muscles, every force with a path (ligaments, path springs)."""
    return list(model.muscles) or [n for n, f in model.forces.items() if f.path is not None]


def coordinates_of_motion(model: Model, motion) -> np.ndarray:
    """Coordinates (T, nq) in model order (rad, m) of a motion table (columns named by coordinate
    or by state path ``/jointset/<joint>/<coord>/value``; degrees when the header says
    ``inDegrees=yes``); coordinates missing from the table keep their default values."""
    return coordinates_from_table(model, motion, missing="default")


@dataclass
class PathAnalysis:
    """Path lengths and moment arms of some paths over a motion.

    time : (T,) s; names : the paths (m of them); coordinates : the model's coordinate names
    (nq, the columns of ``moment_arms``' last axis); lengths : (T, m) m; moment_arms :
    (T, m, nq) m (N·m per N of tension; rotational and translational coordinates alike);
    q : (T, nq) the coordinates used (rad, m).
    """

    time: np.ndarray
    names: list
    coordinates: list
    lengths: np.ndarray
    moment_arms: np.ndarray
    q: np.ndarray = field(repr=False, default=None)

    def crossed(self) -> list:
        """Names of the coordinates any of the paths has a non-zero moment arm about, in model
        order."""
        nz = np.any(np.abs(self.moment_arms) > CROSSING_TOLERANCE, axis=(0, 1))
        return [c for c, k in zip(self.coordinates, nz) if k]

    def length_table(self) -> Table:
        """OpenSim's ``MuscleAnalysis_Length`` table (one column per path, m)."""
        return Table(name="Length", time=np.array(self.time, float), labels=list(self.names),
                     data=np.array(self.lengths, float), in_degrees=False)

    def moment_arm_table(self, coordinate: str) -> Table:
        """OpenSim's ``MuscleAnalysis_MomentArm_<coordinate>`` table (one column per path, m).

        Raises ModelFileError for a coordinate the model does not have."""
        if coordinate not in self.coordinates:
            raise ModelFileError(f"no coordinate named '{coordinate}'")
        j = self.coordinates.index(coordinate)
        return Table(name=f"MomentArm_{coordinate}", time=np.array(self.time, float),
                     labels=list(self.names), data=np.array(self.moment_arms[:, :, j], float),
                     in_degrees=False)

    def rows(self, index) -> "PathAnalysis":
        """The analysis at some frames only (``index``: integer array or slice)."""
        return PathAnalysis(np.asarray(self.time)[index], list(self.names), list(self.coordinates),
                            np.asarray(self.lengths)[index], np.asarray(self.moment_arms)[index],
                            None if self.q is None else np.asarray(self.q)[index])


def path_analysis(model: Model, q, time=None, muscles=None, tree: Tree | None = None) -> PathAnalysis:
    """Lengths and moment arms of ``muscles`` (default :func:`default_muscles`) over coordinates.

    Parameters
    ----------
    model : Model
    q : (T, nq) coordinates in model order (rad, m), or a motion table (read by
        :func:`coordinates_of_motion`; its time is used)
    time : (T,) s (default: the table's, or 0 .. T-1)
    muscles : names of path forces
    tree : compiled tree (default compiled from ``model``)

    Returns
    -------
    PathAnalysis

    Raises
    ------
    ModelFileError for an unknown force name or one without a path, or no path to analyse
    (:func:`arthron.multibody.paths.compile_paths`).

    Source
    ------
    OpenSim's ``MuscleAnalysis`` (``Length``, ``MomentArm_<coordinate>`` storages); moment
    arms as :func:`arthron.multibody.paths.moment_arms` computes them (−∂L/∂q, OpenSim's
    ``computeMomentArm``).
    """
    tree = compile_model(model) if tree is None else tree
    muscles = default_muscles(model) if muscles is None else list(muscles)
    if not muscles:
        raise ModelFileError(f"model '{model.name}' has no muscle or other force with a path to "
                             "analyse", model.source)
    if hasattr(q, "labels"):
        if time is None:
            time = q.time
        q = coordinates_of_motion(model, q)
    q = np.atleast_2d(np.asarray(q, float))
    time = np.arange(q.shape[0], dtype=float) if time is None else np.asarray(time, float)
    ps = compile_paths(model, tree, forces=muscles)
    ma, L = moment_arms(ps, tree, q, return_lengths=True)
    return PathAnalysis(time=time, names=list(ps.names), coordinates=list(tree.coordinate_names),
                        lengths=L, moment_arms=ma, q=q)
