"""The columns OpenSim's ForceReporter records for a model's force elements.

OpenSim 4.6's ``ForceReporter`` (which writes StaticOptimization's ``_force.sto``) walks the
model's forces in component order (the ForceSet, then the ExternalForces of the external
loads), skips those that do not apply force, and appends each one's
``Force::getRecordLabels`` / ``getRecordValues``. The classes arthron evaluates record
(labels and values checked against OpenSim 4.6 in tests/test_force_records.py):

* actuators and muscles: ``<name>``, their force (N or N·m; the caller supplies it);
* ``SpringGeneralizedForce``: ``<name>_Force``, the generalized force;
* ``CoordinateLimitForce``: ``<name>``, the generalized force, and ``PotentialEnergy`` (J,
  ``CoordinateLimitForce::computePotentialEnergy``);
* ``ExpressionBasedCoordinateForce``: ``<name>``, the generalized force;
* ``Ligament``: ``<name>``, its tension; ``PathSpring``: ``<name>_tension``;
* ``Blankevoort1991Ligament``: ``<name>.force_spring``, ``.force_damping``,
  ``.force_total`` (N), ``.length`` (m), ``.lengthening_speed`` (m/s), ``.strain``,
  ``.strain_rate`` (1/s);
* ``PointToPointSpring`` and ``ExpressionBasedPointToPointForce``:
  ``<name>.<body>.force.X/Y/Z`` and ``<name>.<body>.point.X/Y/Z`` for body1 then body2 (the
  force on that body and its point, in ground; ``ground`` for the ground);
* ``BushingForce``: ``<name>.<frame>.force.X/Y/Z`` and ``.torque.X/Y/Z`` for frame1 then
  frame2: the bushing's spatial force on the frame's body in ground, torque about the body's
  origin (OpenSim ``TwoFrameLinker::getRecordValues``);
* ``HuntCrossleyForce``: ``<name>.<frame>.force.X/Y/Z``, ``.torque.X/Y/Z`` per geometry of its
  contact parameters (the frame the geometry is fixed to), and ``SmoothSphereHalfSpaceForce``:
  ``<name>.Sphere...`` then ``<name>.HalfSpace...``: the force's spatial force on that
  geometry's body, as the bushing; ``ElasticFoundationForce`` on spheres and half-spaces: the
  HuntCrossleyForce's labels, all 0 (Simbody's elastic foundation acts on meshes only).

Other classes that apply force (bushings, contact, plugins ...) are returned as omitted so the
writer can name them.
"""
from __future__ import annotations

import numpy as np

from ..models.model import Model
from .forces import (COORDINATE_FORCE_TYPES, POINT_FORCE_TYPES, bushing_body_forces, contact_body_forces,
                     coordinate_force,
                     coordinate_limit_potential_energy, two_point_forces)
from .kinematics import Tree

__all__ = ["force_records", "ForceRecords"]

_PATH_RECORDS = ("Ligament", "PathSpring", "Blankevoort1991Ligament")
_BLANKEVOORT = ("force_spring", "force_damping", "force_total", "length", "lengthening_speed",
                "strain", "strain_rate")


class ForceRecords:
    """ForceReporter columns of a model's forces at T frames.

    entries : list of (labels, values): values (T, len(labels)) or None for a force whose
        value the caller has (the solved actuators: one label, the force's name), in OpenSim's
        order; omitted : (type, name) of forces that apply force but whose record arthron does
        not reproduce."""

    def __init__(self, entries, omitted):
        self.entries = entries
        self.omitted = omitted

    def columns(self, actuator_forces: dict, T: int):
        """(labels, (T, k) data) with the actuators' columns taken from ``actuator_forces``
        ({name: (T,) N or N·m})."""
        labels, cols = [], []
        for lab, vals in self.entries:
            labels += list(lab)
            cols.append(np.asarray(actuator_forces[lab[0]], float).reshape(T, 1) if vals is None else vals)
        return labels, (np.hstack(cols) if cols else np.zeros((T, 0)))


def force_records(model: Model, tree: Tree, q, qd, actuators, passive=None) -> ForceRecords:
    """The ForceReporter records of ``model``'s forces at q, qd (T, nq; rad, m, model order).

    ``actuators``: the names whose force the caller supplies (the solved actuators); other
    enabled muscles and actuators are omitted. ``passive``: the
    :class:`~arthron.multibody.forces.PassiveForces` evaluated at the same q, qd when the
    caller has them (their elements' generalized forces, path lengths and speeds, two-point
    forces and kinematics are taken from there instead of being evaluated again). Raises what
    the passive-force evaluation raises (ModelFileError for a coordinate or body the model
    lacks ...)."""
    from ..models.muscles import blankevoort_force, ligament_forces
    q = np.atleast_2d(np.asarray(q, float))
    qd = np.atleast_2d(np.asarray(qd, float))
    T = q.shape[0]
    acts = set(actuators)
    forces = [f for f in model.forces.values() if f.applies_force]
    have_coord = passive.coordinate_forces if passive is not None else {}
    have_paths = {}
    if passive is not None and passive.lengths is not None:
        have_paths = {n: (passive.lengths[:, i], passive.speeds[:, i])
                      for i, n in enumerate(passive.path_names)}
    have_points = {r[0].name: r for r in passive.two_point} if passive is not None else {}
    kin = passive.kinematics if passive is not None else None

    def kinematics():          # at q, qd, evaluated once for every element that needs them
        nonlocal kin
        if kin is None:
            from .kinematics import forward_kinematics
            kin = forward_kinematics(tree, q, qd)
        return kin
    paths = [f.name for f in forces if f.type in _PATH_RECORDS and f.name not in acts
             and f.name not in have_paths]
    lv = dict(have_paths)
    if paths:
        from .paths import compile_paths, lengthening_speeds, path_lengths
        ps = compile_paths(model, tree, forces=paths)
        L, V = path_lengths(ps, tree, q), lengthening_speeds(ps, tree, q, qd)
        lv.update((n, (L[:, i], V[:, i])) for i, n in enumerate(ps.names))
    points = dict(have_points)
    todo = [f for f in forces if f.type in POINT_FORCE_TYPES and f.name not in acts
            and f.name not in have_points]
    if todo:
        points.update((r[0].name, r) for r in two_point_forces(model, tree, q, qd, todo, kin=kinematics()))
    entries, omitted = [], []
    for f in forces:
        n = f.name
        if n in acts:
            entries.append(([n], None))
        elif f.type in COORDINATE_FORCE_TYPES:
            tau = have_coord.get(n)
            if tau is None:
                tau = coordinate_force(model, tree, f, q, qd)
            tau = np.array(tau, float).reshape(T)
            if f.type == "SpringGeneralizedForce":
                entries.append(([f"{n}_Force"], tau[:, None]))
            elif f.type == "CoordinateLimitForce":
                pe = coordinate_limit_potential_energy(model, tree, f, q)
                entries.append(([n, "PotentialEnergy"], np.column_stack([tau, pe])))
            else:
                entries.append(([n], tau[:, None]))
        elif f.type in _PATH_RECORDS:
            l, v = lv[n]
            if f.type == "Blankevoort1991Ligament":
                l0 = float(f.slack_length)
                k, et, c = float(f.linear_stiffness), float(f.transition_strain), float(f.damping_coefficient)
                spring = blankevoort_force(l, l0, k, et)
                total = blankevoort_force(l, l0, k, et, v, c)
                entries.append(([f"{n}.{s}" for s in _BLANKEVOORT], np.column_stack(
                    [spring, total - spring, total, l, v, (l - l0) / l0, v / l0])))
            else:
                tension = ligament_forces(model, [n], l[:, None], v[:, None])
                entries.append(([n if f.type == "Ligament" else f"{n}_tension"], tension))
        elif f.type in POINT_FORCE_TYPES:
            _, b1, b2, P1, P2, F1 = points[n]
            labels = []
            for b in (b1 or "ground", b2 or "ground"):
                labels += [f"{n}.{b}.{kind}.{a}" for kind in ("force", "point") for a in "XYZ"]
            entries.append((labels, np.hstack([F1, P1, -F1, P2])))
        elif f.type == "BushingForce":
            labels, cols = [], []
            for frame, F, M in bushing_body_forces(model, tree, q, qd, f, kin=kinematics()):
                labels += [f"{n}.{frame}.{kind}.{a}" for kind in ("force", "torque") for a in "XYZ"]
                cols += [F, M]
            entries.append((labels, np.hstack(cols)))
        elif f.type in ("HuntCrossleyForce", "SmoothSphereHalfSpaceForce") or (
                f.type == "ElasticFoundationForce" and _on_spheres_and_half_spaces(model, f)):
            labels, cols = [], []
            for part, F, M in contact_body_forces(model, tree, q, qd, f, kin=kinematics()):
                labels += [f"{n}.{part}.{kind}.{a}" for kind in ("force", "torque") for a in "XYZ"]
                cols += [F, M]
            entries.append((labels, np.hstack(cols) if cols else np.zeros((T, 0))))
        else:
            omitted.append((f.type, n))
    return ForceRecords(entries, omitted)


def _on_spheres_and_half_spaces(model, f) -> bool:
    names = [g for p_ in f.extra.get("contact_parameters", []) for g in p_["geometry"]]
    return all(g in model.contact_geometry for g in names)
