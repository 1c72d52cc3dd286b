"""A model's states over time read from a states file, as OpenSim 4.6's AnalyzeTool reads its
``states_file`` (the ``_states.sto`` of CMC or a forward simulation).

OpenSim (``AnalyzeTool::loadStatesFromFile``, ``Model::formStateStorage``, ``AnalyzeTool::run``)
takes each of the model's state variables from the column of the same label and sets the state
to it, row by row: the coordinates and their speeds come from the file as they are (no spline,
no filter: ``lowpass_cutoff_frequency_for_coordinates`` does not apply), the muscles' states
(activation, fiber length, ...) too; the accelerations the analyses report are those of forward
dynamics at these states (the analyses realize ``Stage::Acceleration``). This module reads the
columns; the dynamics are :func:`arthron.solvers.kinematics_analyses.analysis_states_of` and
:func:`arthron.solvers.reactions.joint_reactions`.

Labels (measured with OpenSim 4.6): the 4.x state paths ``/jointset/<joint>/<coordinate>/value``
and ``/speed``, ``/forceset/<muscle>/<state>``, and the 3.x labels ``<coordinate>``,
``<coordinate>_u``, ``<muscle>.<state>``; columns in any order. A state with no column keeps its
default value (the coordinate's ``default_value``, its ``default_speed_value``, the muscle's
default state: :mod:`arthron.solvers.muscle_states`), as OpenSim does with a warning; columns
that name no state of the model are ignored by OpenSim, named in a warning by arthron. A file in
degrees (``inDegrees=yes``) is refused by OpenSim ("Input Storage must have values for
Coordinates in meters or radians") and by arthron. A file with no coordinate column at all runs
in OpenSim at the default pose; arthron refuses it (DataFileError naming the file).

Frames: the rows from the last one at or before ``initial_time`` to the last one at or before
``final_time`` (``Storage::findIndex``), each row's index in the file kept for the analyses'
``step_interval`` (``Analysis::step`` records rows whose index is a multiple of it).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import ArthronWarning, DataFileError, UnsupportedFeature
from ..models.model import Model
from ..tables import check_times
from .filtering import check_time_range, find_index
from .muscle_states import millard_minimum_fiber_length, muscle_state_names

__all__ = ["ModelStates", "model_state_labels", "states_from_table", "states_report"]


@dataclass
class ModelStates:
    """A model's states at the rows of a states file.

    time : (T,) s; index : (T,) the rows' indices in the file; q : (T, nq) coordinates (rad, m),
    model order; u : (T, nq) generalized speeds (rad/s, m/s; for the rotations of
    ``tree.angular_velocity_groups``, Simbody's angular velocity, as OpenSim writes them);
    muscles : {muscle: {state: (T,) array}} of the muscle states the file gives, and the
    ActivationCoordinateActuators' ``activation`` (the others keep their defaults); energies :
    {force: (T,) array} of the BushingForces' ``dissipated_energy`` the file gives; missing : the 4.x labels of the model's states the file lacks; unknown : the
    file's labels that name no state of the model; source : the file; file_time (N,), file_u
    (N, nq) : the times and speeds of every row of the file (StaticOptimization splines them).
    """

    time: np.ndarray
    index: np.ndarray
    q: np.ndarray
    u: np.ndarray
    muscles: dict = field(default_factory=dict)
    energies: dict = field(default_factory=dict)
    missing: list = field(default_factory=list)
    unknown: list = field(default_factory=list)
    source: object = None
    file_time: np.ndarray = field(default=None, repr=False)
    file_u: np.ndarray = field(default=None, repr=False)

    def step_rows(self, step_interval: int, time=None) -> np.ndarray:
        """The frames an analysis with ``step_interval`` N records (``AnalyzeTool::run``: the
        first, every row whose index in the file is a multiple of N, the last), among the rows
        at ``time`` (default all of these states' rows; times of rows of the file)."""
        n = max(1, int(step_interval))
        index = self.index if time is None else self.index[np.searchsorted(self.time, time)]
        keep = index % n == 0
        keep[0] = keep[-1] = True
        return np.flatnonzero(keep)

    def speed_spline_accelerations(self, time_range=None):
        """(t, q, u, u̇) at the rows within ``time_range`` (``Storage::findIndex`` as above),
        u̇ the first derivative of quintic GCVSplines of the speeds over every row of the file:
        the accelerations OpenSim's StaticOptimization meets (``StaticOptimization::begin``
        splines the AnalyzeTool's states storage, ``GCVSplineSet(5, states)``, and takes the
        derivative of each speed's spline). DataFileError for a file of fewer than 6 rows."""
        from .filtering import GCVSplineSet
        if len(self.file_time) < 6:
            raise DataFileError(f"{len(self.file_time)} row(s): a StaticOptimization splines the "
                                "speeds with quintic GCVSplines, which need at least 6 rows", self.source)
        rows = np.arange(len(self.time))
        if time_range is not None:
            t0, t1 = time_range
            rows = np.arange(find_index(self.time, max(t0, self.time[0])),
                             find_index(self.time, min(t1, self.time[-1])) + 1)
        t = self.time[rows]
        udot = GCVSplineSet(self.file_time, self.file_u, 5).derivative(t, 1)
        return t, self.q[rows], self.u[rows], udot


def model_state_labels(model: Model) -> list:
    """[(4.x label, 3.x label, kind, owner, state)] of the model's state variables arthron
    reads: each coordinate's value and speed (kind "q" / "u", owner the coordinate), each
    applied muscle's states (kind "muscle", :func:`arthron.solvers.muscle_states.muscle_state_names`),
    each ActivationCoordinateActuator's ``activation`` (kind "actuator") and each
    BushingForce's ``dissipated_energy`` (kind "energy"), in the ForceSet's
    order (muscles that apply no force too: OpenSim gives them states)."""
    out = []
    for c in model.coordinates.values():
        base = f"/jointset/{c.joint}/{c.name}"
        out += [(f"{base}/value", c.name, "q", c.name, "value"),
                (f"{base}/speed", f"{c.name}_u", "u", c.name, "speed")]
    for f in model.forces.values():
        if f.name in model.muscles:
            out += [(f"/forceset/{f.name}/{s}", f"{f.name}.{s}", "muscle", f.name, s)
                    for s in muscle_state_names(f)]
        elif f.type == "ActivationCoordinateActuator":
            out.append((f"/forceset/{f.name}/activation", f"{f.name}.activation", "actuator", f.name,
                        "activation"))
        elif f.type == "BushingForce":
            # OpenSim 4.6 gives every BushingForce a 'dissipated_energy' state (J; default 0),
            # which no force depends on (measured with its Python API)
            out.append((f"/forceset/{f.name}/dissipated_energy", f"{f.name}.dissipated_energy",
                        "energy", f.name, "dissipated_energy"))
    return out


def states_from_table(model: Model, table, time_range=None) -> ModelStates:
    """The model's states at the rows of a states file read as ``table`` (see the module
    docstring for the labels, the missing and the unknown columns, the frames).

    Parameters
    ----------
    model : Model; table : arthron.tables.Table (radians); time_range : (initial_time,
    final_time) s or None (every row).

    Returns
    -------
    ModelStates; a warning (ArthronWarning) names the states left at their defaults and the
    columns ignored.

    Raises
    ------
    DataFileError (naming the file): ``inDegrees=yes``, no coordinate column, no rows, times not
    increasing, a NaN or infinite value of a state read (its column and time), a time range
    outside the file. UnsupportedFeature: a ``fiber_length`` or ``activation`` of a deprecated
    muscle class other than 0 (their default) (:func:`arthron.solvers.muscle_states.default_state_tensions`).
    """
    src = getattr(table, "source", None)
    if table.in_degrees:
        raise DataFileError("a states file must be in radians (inDegrees=no), as OpenSim's "
                            "AnalyzeTool requires ('Input Storage must have values for Coordinates "
                            "in meters or radians')", src)
    check_times(table.time, src, "the states file has no rows")
    first = {}
    for k, lab in enumerate(table.labels):
        first.setdefault(lab, k)
    labels = model_state_labels(model)
    col, missing, used = {}, [], set()
    for full, short, kind, owner, state in labels:
        k = first.get(full, first.get(short))
        if k is None:
            missing.append(full)
        else:
            col[(kind, owner, state)] = k
            used.add(table.labels[k])
    if not any(kind == "q" for kind, _, _ in col):
        raise DataFileError(f"no column gives a coordinate of model '{model.name}' (labels "
                            "'/jointset/<joint>/<coordinate>/value' or '<coordinate>'): not a states "
                            "file of this model", src)
    unknown = [lab for lab in table.labels if lab not in used]
    t = np.asarray(table.time, float)
    time_range = check_time_range(time_range, strict=False)
    t0, t1 = (-np.inf, np.inf) if time_range is None else time_range
    if t1 < t[0] or t0 > t[-1]:
        raise DataFileError(f"time range {t0:g}..{t1:g} s lies outside the states file "
                            f"({t[0]:g}..{t[-1]:g} s)", src)
    i0, i1 = find_index(t, max(t0, t[0])), find_index(t, min(t1, t[-1]))
    rows = np.arange(i0, i1 + 1)
    full = np.asarray(table.data, float)
    data = full[rows]
    bad = [(table.labels[k], float(t[rows][np.argmax(~np.isfinite(data[:, k]))]))
           for k in sorted(set(col.values())) if not np.isfinite(data[:, k]).all()]
    if bad:
        raise DataFileError(f"column {bad[0][0]!r} is not a finite number at t = {bad[0][1]:g} s", src)
    coords = list(model.coordinates.values())
    q = np.empty((len(rows), len(coords)))
    file_u = np.empty((len(t), len(coords)))
    for i, c in enumerate(coords):
        kq, ku = col.get(("q", c.name, "value")), col.get(("u", c.name, "speed"))
        q[:, i] = c.default_value if kq is None else data[:, kq]
        file_u[:, i] = (c.default_speed_value or 0.0) if ku is None else full[:, ku]
    if not np.isfinite(file_u).all():
        k = int(np.argmax(~np.isfinite(file_u).all(axis=0)))
        raise DataFileError(f"the speed of {coords[k].name!r} is not a finite number at t = "
                            f"{t[np.argmax(~np.isfinite(file_u[:, k]))]:g} s", src)
    u = file_u[rows].copy()
    muscles = {}
    for (kind, owner, state), k in col.items():
        if kind in ("muscle", "actuator"):
            muscles.setdefault(owner, {})[state] = data[:, k].copy()
    energies = {owner: data[:, k].copy() for (kind, owner, _), k in col.items() if kind == "energy"}
    # a deprecated muscle's states at their defaults (0, as OpenSim's StatesReporter writes
    # them) give the default-state force arthron reproduces; other values do not
    for m in [m for m in muscles if m in model.muscles and model.muscles[m].type.endswith("_Deprecated")
              and all(np.all(v == 0.0) for v in muscles[m].values())]:
        del muscles[m]
    deprecated = [m for m in muscles if m in model.muscles and model.muscles[m].type.endswith("_Deprecated")]
    if deprecated:
        m = model.muscles[deprecated[0]]
        raise UnsupportedFeature(f"muscle '{m.name}' ({m.type}): its force at the states file's "
                                 f"{' and '.join(muscles[m.name])} is not reproduced (only at its default "
                                 "states); remove those columns to use them", src)
    said = []
    if missing:
        said.append(f"{len(missing)} state(s) of model '{model.name}' not in the file keep their "
                    f"default values, as in OpenSim ({', '.join(missing[:6])}"
                    f"{' ...' if len(missing) > 6 else ''})")
    if unknown:
        said.append(f"{len(unknown)} column(s) name no state arthron reads and are ignored, as "
                    f"OpenSim ignores columns that name no state ({', '.join(unknown[:6])}{' ...' if len(unknown) > 6 else ''})")
    if said:
        warnings.warn(f"{src or 'states file'}: " + "; ".join(said), ArthronWarning, stacklevel=2)
    return ModelStates(time=t[rows].copy(), index=rows, q=q, u=u, muscles=muscles, energies=energies, missing=missing,
                       unknown=unknown, source=src, file_time=t, file_u=file_u)


#: the deprecated classes have no default-state properties: OpenSim 4.6 starts them at 0
#: (measured: every state of DAS4's 164 Schutte1993Muscle_Deprecated in its StatesReporter)
_DEPRECATED = {"Schutte1993Muscle_Deprecated": 0.0, "Delp1990Muscle_Deprecated": 0.0,
               "Thelen2003Muscle_Deprecated": 0.0}
#: OpenSim 4.6's default of each muscle state a model file does not set (``default_<state>``;
#: measured with OpenSim 4.6's Python API: ``get_default_activation`` of a new instance)
_STATE_DEFAULTS = {
    "activation": {"Thelen2003Muscle": 0.05, "Millard2012EquilibriumMuscle": 0.05,
                   "DeGrooteFregly2016Muscle": 0.5, **_DEPRECATED},
    "fiber_length": {"Thelen2003Muscle": 0.1, "Millard2012EquilibriumMuscle": 0.1,
                     "Millard2012AccelerationMuscle": 0.1, **_DEPRECATED},
    "fiber_velocity": {"Millard2012AccelerationMuscle": 0.0, "Delp1990Muscle_Deprecated": 0.0},
    "normalized_tendon_force": {"DeGrooteFregly2016Muscle": 0.5},
}


def states_report(model: Model, states: ModelStates):
    """OpenSim 4.6's StatesReporter on a states file: a ``ModelStates`` Table with a column per
    state variable of the model (4.x labels, model order: :func:`model_state_labels`) at the
    rows of ``states``: the file's values, and each state the file lacks at its default value
    (the coordinate's ``default_value`` / ``default_speed_value``, the muscle's
    ``default_<state>`` property or its class default; a Millard2012EquilibriumMuscle's
    ``fiber_length`` at least its minimum fiber length, where OpenSim clamps the default), as ``Model::formStateStorage`` fills
    the AnalyzeTool's states (``StatesReporter::record`` writes ``getStateVariableValues``).

    Returns a :class:`arthron.tables.Table` (time (T,) s, data (T, n) in rad, m, rad/s, m/s,
    the muscles' units). Raises UnsupportedFeature when a missing muscle state has no default
    arthron knows (a class outside :data:`_STATE_DEFAULTS`), naming the muscle and the state."""
    from ..models.muscles import muscle_property
    from ..tables import Table
    labels, cols = [], []
    coords = list(model.coordinates)
    for full, _, kind, owner, state in model_state_labels(model):
        labels.append(full)
        if kind in ("q", "u"):
            cols.append((states.q if kind == "q" else states.u)[:, coords.index(owner)])
            continue
        if kind == "energy":
            cols.append(np.asarray(states.energies.get(owner, np.zeros(len(states.time))), float))
            continue
        got = states.muscles.get(owner, {}).get(state)
        if got is None and kind == "actuator":
            got = np.full(len(states.time), float(model.forces[owner].default_activation))
        if got is None:
            m = model.muscles[owner]
            default = _STATE_DEFAULTS.get(state, {}).get(m.type)
            if default is None:
                raise UnsupportedFeature(f"muscle '{owner}' ({m.type}): the default of its state "
                                         f"'{state}', which the states file lacks, is not reproduced",
                                         states.source)
            value = muscle_property(m, f"default_{state}", default)
            if state == "fiber_length" and m.type == "Millard2012EquilibriumMuscle":
                value = max(float(value), millard_minimum_fiber_length(m))   # as OpenSim clamps it
            got = np.full(len(states.time), value)
        cols.append(np.asarray(got, float))
    data = np.column_stack(cols) if cols else np.zeros((len(states.time), 0))
    return Table(name="ModelStates", time=np.asarray(states.time, float), labels=labels, data=data,
                 in_degrees=False, comments=[
                     "", "This file contains the states of a model during a simulation.", "",
                     "Units are S.I. units (second, meters, Newtons, ...)",
                     "If the header above contains a line with 'inDegrees', this indicates whether "
                     "rotational values are in degrees (yes) or radians (no).", ""])
