"""OpenSim's ForceReporter analysis as a computation: every force's record over the states an
AnalyzeTool visits.

OpenSim 4.6's ``ForceReporter`` records, at each state, ``Force::getRecordValues`` of every
force that applies force, in the model's order (the ForceSet, then the ExternalForces of the
tool's external loads), and, with ``include_constraint_forces``, the constraints' reaction
forces (not reproduced here: :func:`force_reporter` refuses it on a model with enabled
constraints). The columns of the passive elements are
:func:`arthron.multibody.force_records.force_records` (the same as StaticOptimization's
``_force.sto``); the actuators' are their ``getActuation`` at the AnalyzeTool's states:

* muscles of :data:`arthron.solvers.muscle_states.DEFAULT_STATE_TYPES`: the force at their
  default states (a coordinates file) or at the states a states file gives, frame by frame
  (:mod:`arthron.solvers.muscle_states`);
* ``CoordinateActuator``, ``PointActuator``, ``TorqueActuator``, ``PathActuator``:
  ``optimal_force`` × control, and the AnalyzeTool runs with every control 0 (it ignores a
  ``controls_file``; measured with OpenSim 4.6), so 0;
* ``ActivationCoordinateActuator``: activation × ``optimal_force``, the activation its
  ``default_activation`` or a states file's (measured with OpenSim 4.6);
* other actuators (plugin muscles ...) and forces whose record
  arthron does not reproduce are left out, named in :attr:`ForceReport.omitted`.

Source: OpenSim 4.6 ``ForceReporter::record`` (Analyses), ``AnalyzeTool::run``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import UnsupportedFeature
from ..models.model import Model
from ..multibody.force_records import force_records
from ..multibody.forces import activation_coordinate_force
from ..multibody.kinematics import Tree, compile_model, forward_kinematics
from ..tables import Table
from .inverse_dynamics import external_loads_from_setup
from .muscle_states import default_state_muscles

__all__ = ["ForceReport", "force_reporter", "ZERO_CONTROL_ACTUATORS"]

#: actuators whose force is ``optimal_force`` × control: 0 in an AnalyzeTool run
ZERO_CONTROL_ACTUATORS = ("CoordinateActuator", "PointActuator", "TorqueActuator", "PathActuator")

_DESCRIPTION = ["", "This file contains the forces exerted on a model during a simulation.", "",
                "A force is a generalized force, meaning that it can be either a force (N) or a "
                "torque (Nm).", "", "Units are S.I. units (second, meters, Newtons, ...)",
                "If the header above contains a line with 'inDegrees', this indicates whether "
                "rotational values are in degrees (yes) or radians (no).", ""]


@dataclass
class ForceReport:
    """ForceReporter records over T frames.

    time : (T,) s; labels : the columns (OpenSim's record labels, model order, then the
    ExternalForces' ``<body>_<name>_Fx ... _Tz``); data : (T, k) (N, N·m, m, J as each record);
    omitted : (type, name) of the forces arthron leaves out (OpenSim records them)."""

    time: np.ndarray
    labels: list
    data: np.ndarray
    omitted: list = field(default_factory=list)

    def to_table(self) -> Table:
        """OpenSim's ``ModelForces`` table (``<tool>_<analysis>_forces.sto``)."""
        return Table(name="ModelForces", time=np.array(self.time, float), labels=list(self.labels),
                     data=np.array(self.data, float), in_degrees=False, comments=list(_DESCRIPTION))

    def rows(self, index) -> "ForceReport":
        """The records at some frames only (integer array or slice)."""
        return ForceReport(np.asarray(self.time)[index], list(self.labels),
                           np.asarray(self.data)[index], list(self.omitted))


def force_reporter(model: Model, t, q, qd, *, tree: Tree | None = None, muscle_states=None,
                   default_fiber_lengths=None, external_loads=None, loads_table=None,
                   include_constraint_forces: bool = False) -> ForceReport:
    """The ForceReporter records of ``model`` at times ``t`` (T,) s, coordinates ``q`` and
    coordinate rates ``qd`` (T, nq; rad, m, rad/s, m/s; model order, q assembled).

    muscle_states : {muscle: {state: (T,) array}} of a states file (None: default states);
    default_fiber_lengths : {muscle: (default_fiber_length m, maximum_pennation_angle rad)}
    (:func:`arthron.solvers.muscle_states.default_state_tensions`); external_loads :
    arthron.io.setup.ExternalLoads or None (``loads_table``: its data, default its
    ``datafile``); include_constraint_forces : OpenSim's option.

    Returns ForceReport (module docstring). Raises UnsupportedFeature for
    ``include_constraint_forces`` on a model with enabled constraints (their reaction records are
    not reproduced), ModelFileError for an external force on a body the model lacks."""
    tree = compile_model(model) if tree is None else tree
    if include_constraint_forces and any(c.enabled for c in model.constraints):
        raise UnsupportedFeature(f"model '{model.name}': ForceReporter include_constraint_forces: the "
                                 "constraints' reaction forces are not reproduced")
    t = np.asarray(t, float)
    q, qd = np.atleast_2d(np.asarray(q, float)), np.atleast_2d(np.asarray(qd, float))
    T = len(t)
    dsm = default_state_muscles(model, tree, default_fiber_lengths, states=muscle_states)
    given = {}
    if dsm.muscles:
        ten = dsm.tensions(tree, q, qd)
        given.update((m.name, ten[:, k]) for k, m in enumerate(dsm.muscles))
    given.update((f.name, np.zeros(T)) for f in model.forces.values()
                 if f.applies_force and f.type in ZERO_CONTROL_ACTUATORS)
    given.update((f.name, activation_coordinate_force(f, muscle_states, T)) for f in model.forces.values()
                 if f.applies_force and f.type == "ActivationCoordinateActuator")
    rec = force_records(model, tree, q, qd, list(given))
    labels, data = rec.columns(given, T)
    if external_loads is not None:
        from .load_sharing import _external_columns
        if loads_table is None:
            loads_table = external_loads.load_table()
        loads = external_loads_from_setup(model, external_loads, loads_table, t)
        ext_labels, ext = _external_columns(tree, forward_kinematics(tree, q), loads)
        if ext is not None:
            labels, data = labels + list(ext_labels), np.hstack([data, ext])
    return ForceReport(t, labels, data, list(rec.omitted))
