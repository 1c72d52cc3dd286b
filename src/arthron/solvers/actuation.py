"""OpenSim 4.6's Actuation analysis at the AnalyzeTool's states: each actuator's force
(``getActuation``), speed (``getSpeed``) and power (``getPower``).

What OpenSim 4.6 records (measured against its AnalyzeTool on the Gait2354 walk with the CMC
actuators and on forward simulations' states files; the AnalyzeTool runs every control at 0):

* a muscle: force its tension at the AnalyzeTool's states (:mod:`arthron.solvers.muscle_states`:
  default states on a coordinates file, the file's on a states file), speed the path's
  lengthening speed (m/s), power −force × speed (``PathActuator::getPower``);
* a CoordinateActuator: force 0, speed the coordinate's generalized speed u (rad/s, m/s), power 0;
* a PathActuator: force 0, speed its path's lengthening speed (m/s), power −force × speed;
* an ActivationCoordinateActuator: force activation × ``optimal_force`` (its
  ``default_activation``, or a states file's activation), speed u, power force × speed;
* a PointActuator: force 0, speed the magnitude of the velocity in ground of its ``point``
  taken in its body (m/s: ``PointActuator::computeForce`` sets ``|v|``; with
  ``point_is_global`` too, as OpenSim 4.6 records it), power 0;
* a TorqueActuator: force 0, speed (ω_A − ω_B)·axis (rad/s; the bodies' angular velocities in
  ground, the unit axis as given, whatever ``torque_is_global``: as OpenSim 4.6 records it),
  power 0.

Other actuators (disabled ones, the deprecated muscle classes, plugins ...) are left out, named
in :attr:`ActuationResult.omitted`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..geometry.spatial import cross
from ..models.model import Model
from ..multibody.forces import activation_coordinate_force
from ..multibody.kinematics import Tree, forward_kinematics
from ..tables import Table
from .inverse_dynamics import frame_chunks
from .muscle_states import default_state_muscles

__all__ = ["ActuationResult", "actuation"]

_DESCRIPTION = [
    "", "This file contains either the forces, speeds, or powers developed",
    "by the actuators of a model during a simulation.", "",
    "An actuator force is a generalized force, meaning that it can be either a force (N) or a torque (Nm).", "",
    "An actuator speed is the rate at which an actuator shortens. Depending on the actuator,",
    "a speed can be either a translational speed (m/s) or an angular speed (deg/s or rad/s).", "",
    "An actuator power (Watts) is the rate at which an actuator does work.  Positive power means",
    "that the actuator is delivering energy to the model; negative power means that the actuator",
    "is absorbing energy from the model.", "", "Units are S.I. units (second, meters, Newtons, ...)",
    "If the header above contains a line with 'inDegrees', this indicates whether rotational values "
    "are in degrees (yes) or radians (no).", ""]


@dataclass
class ActuationResult:
    """time (T,) s; names: the actuators recorded, model order; force, speed, power (T, n)
    (N or N·m; m/s or rad/s; W); omitted: [(type, name)] of the actuators left out."""

    time: np.ndarray
    names: list
    force: np.ndarray
    speed: np.ndarray
    power: np.ndarray
    omitted: list = field(default_factory=list)

    def rows(self, rows) -> "ActuationResult":
        return ActuationResult(self.time[rows], self.names, self.force[rows], self.speed[rows],
                               self.power[rows], self.omitted)

    def to_table(self, kind: str) -> Table:
        """``kind`` "force", "speed" or "power": OpenSim's ``ActuatorForces`` /
        ``ActuatorSpeeds`` / ``ActuatorPowers`` table."""
        name = {"force": "ActuatorForces", "speed": "ActuatorSpeeds", "power": "ActuatorPowers"}[kind]
        return Table(name=name, time=np.asarray(self.time, float), labels=list(self.names),
                     data=np.asarray(getattr(self, kind), float), in_degrees=False,
                     comments=list(_DESCRIPTION))


def actuation(model: Model, tree: Tree, time, q, u, qd, *, muscle_states=None,
              default_fiber_lengths=None) -> ActuationResult:
    """Each actuator's force, speed and power (module docstring) at the states ``time`` (T,) s,
    coordinates ``q``, generalized speeds ``u`` and coordinate rates ``qd`` (T, nq), model
    order; ``muscle_states``: {muscle: {state: (T,) array}} of a states file (None: defaults);
    ``default_fiber_lengths`` as :func:`arthron.solvers.muscle_states.default_state_tensions`."""
    q, u, qd = (np.atleast_2d(np.asarray(x, float)) for x in (q, u, qd))
    T = q.shape[0]
    dsm = default_state_muscles(model, tree, default_fiber_lengths, states=muscle_states)
    tension = {}
    if dsm.muscles:
        from ..multibody.paths import lengthening_speeds
        V = lengthening_speeds(dsm.paths, tree, q, qd)
        F = dsm.tensions(tree, q, qd, speeds=V)
        for k, m in enumerate(dsm.muscles):
            tension[m.name] = (F[:, k], V[:, k])
    coords = list(model.coordinates)
    names, cols, omitted, points, torques, paths = [], [], [], [], [], []
    for name, f in model.forces.items():
        kind = f.type
        if not f.applies_force and (f.is_muscle or "Actuator" in kind):
            omitted.append((kind, name))
            continue
        if name in tension:
            force, speed = tension[name]
            cols.append((force, speed, -force * speed))
        elif kind == "PathActuator":
            paths.append((len(cols), name))
            cols.append((np.zeros(T), np.zeros(T), np.zeros(T)))
        elif kind == "CoordinateActuator" and f.coordinate in coords:
            cols.append((np.zeros(T), u[:, coords.index(f.coordinate)].copy(), np.zeros(T)))
        elif kind == "ActivationCoordinateActuator" and f.coordinate in coords:
            force, speed = activation_coordinate_force(f, muscle_states, T), u[:, coords.index(f.coordinate)].copy()
            cols.append((force, speed, force * speed))
        elif kind == "PointActuator" and f.body:
            points.append((len(cols), tree.body_index(f.body), np.asarray(f.point, float)))
            cols.append((np.zeros(T), np.zeros(T), np.zeros(T)))
        elif kind == "TorqueActuator" and f.bodyA and f.bodyB:
            axis = np.asarray(f.axis, float)
            torques.append((len(cols), tree.body_index(f.bodyA), tree.body_index(f.bodyB),
                            axis / max(np.linalg.norm(axis), 1e-300)))
            cols.append((np.zeros(T), np.zeros(T), np.zeros(T)))
        else:
            if f.is_muscle or "Actuator" in kind:
                omitted.append((kind, name))
            continue
        names.append(name)
    if paths:
        from ..multibody.paths import compile_paths, lengthening_speeds
        V = lengthening_speeds(compile_paths(model, tree, forces=[n for _, n in paths]), tree, q, qd)
        for j, (k, _) in enumerate(paths):
            cols[k] = (cols[k][0], V[:, j], -cols[k][0] * V[:, j])
    if points or torques:
        for s in frame_chunks(T):
            kin = forward_kinematics(tree, q[s], qd[s], np.zeros_like(q[s]))
            w = lambda b: (np.zeros((len(q[s]), 3)) if b < 0                # noqa: E731
                           else kin.node("w", tree.body_node[b]))
            for k, b, c in points:
                if b < 0:
                    continue
                n = tree.body_node[b]
                v = kin.node("v", n) + cross(w(b), np.einsum("tij,j->ti", kin.node("R", n), c))
                cols[k][1][s] = np.linalg.norm(v, axis=1)
            for k, a, b, axis in torques:
                cols[k][1][s] = (w(a) - w(b)) @ axis
    data = [np.column_stack([c[i] for c in cols]) if cols else np.zeros((T, 0)) for i in range(3)]
    return ActuationResult(np.asarray(time, float), names, *data, omitted=omitted)
