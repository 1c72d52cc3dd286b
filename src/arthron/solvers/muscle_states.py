"""Muscle forces at OpenSim's *default* muscle states.

An AnalyzeTool driven by a coordinates file (or a JointReaction without ``forces_file``) gives
no muscle state, so OpenSim 4.6 realizes the model with every muscle's states at their default
values (``initSystem``, no equilibration): the force each muscle then applies along its path is
its ``computeActuation`` at those states, the path's length and lengthening speed. This module
gives those tensions, vectorized over frames, for the muscle classes whose default-state force
arthron reproduces (:data:`DEFAULT_STATE_TYPES`; :func:`default_state_tensions` dispatches):

* ``Thelen2003Muscle``: state fiber length ``default_fiber_length``; force = tendon force
  (:func:`thelen_default_state_tensions`).
* ``Millard2012EquilibriumMuscle``: elastic tendon, the tendon curve at ``default_fiber_length``;
  rigid tendon, the fiber's force at the path's length and speed and ``default_activation``
  (:func:`millard_default_state_tensions`).
* ``Millard2012AccelerationMuscle``: states activation, fiber length ``default_fiber_length`` and
  fiber velocity ``default_fiber_velocity``; force = the visco-elastic tendon force
  (:func:`millard_acceleration_default_state_tensions`).
* ``DeGrooteFregly2016Muscle``: states activation ``default_activation`` and normalized tendon
  force ``default_normalized_tendon_force``; force = ``F_iso`` × that state (elastic tendon), or
  the rigid tendon's fiber force along the tendon (:func:`degroote_default_state_tensions`).
* ``Schutte1993Muscle_Deprecated``, ``Delp1990Muscle_Deprecated``,
  ``Thelen2003Muscle_Deprecated``: states fiber length 0 and activation 0 (the deprecated
  classes have no default-state properties): the whole path is tendon, force
  ``F_max f_T((L − l_s)/l_s)`` (Thelen's: plus 0.001 (1 + ε))
  (:func:`arthron.models.spline_muscles.schutte_default_state_tensions`).
* ``RigidTendonMuscle``: no states; its activation is its control, 0 without a controller, so
  the passive fiber force along the tendon ``F_max f_PE(l̃) cos α``
  (:func:`arthron.models.spline_muscles.rigid_tendon_forces`).

Properties arthron does not model as fields are read from the muscle's verbatim XML
(``unmodelled_xml``), with OpenSim 4.6's defaults where absent.

The same functions take the states per frame (``states``: {muscle name: {state name: (T,)
array}}, e.g. from a states file, :mod:`arthron.solvers.states_file`): a state given there
replaces its default value, frame by frame (``fiber_length`` of Thelen2003Muscle,
Millard2012EquilibriumMuscle with an elastic tendon and Millard2012AccelerationMuscle,
``fiber_velocity`` of Millard2012AccelerationMuscle, ``activation`` of the rigid-tendon
Millard2012EquilibriumMuscle and DeGrooteFregly2016Muscle, ``normalized_tendon_force`` of
DeGrooteFregly2016Muscle with an elastic tendon); states absent there keep their defaults, as
OpenSim's ``Model::formStateStorage`` fills them. The default-state force is the special case
of no state given.

Sources: OpenSim 4.6 ``Thelen2003Muscle``, ``Millard2012EquilibriumMuscle``,
``Millard2012AccelerationMuscle``, ``MuscleFixedWidthPennationModel``,
``DeGrooteFregly2016Muscle`` (``calcMuscleLengthInfo``, ``calcFiberVelocityInfo``,
``calcMuscleDynamicsInfo``, ``computeActuation``); Thelen (2003) J Biomech Eng 125:70-77;
Millard et al. (2013) J Biomech Eng 135:021005; De Groote et al. (2016) Ann Biomed Eng
44:2922-2936.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import re
from dataclasses import dataclass

import numpy as np

from ..errors import UnsupportedFeature
from ..models.muscles import muscle_property as _xml_value
from ..models.muscles import (degroote_active_force_length, millard_curve_params,
                              degroote_force_velocity, degroote_passive_force_length,
                              millard_active_force_length_curve, millard_fiber_force_length_curve,
                              millard_force_velocity_curve, millard_tendon_force_length_curve)
from ..models.spline_muscles import rigid_tendon_forces, schutte_default_state_tensions

__all__ = ["DEFAULT_STATE_TYPES", "STATE_NAMES", "millard_minimum_fiber_length", "muscle_state_names", "default_state_tensions",
           "needs_lengthening_speeds", "shared_muscle_loads",
           "DefaultStateMuscles", "default_state_muscles",
           "thelen_default_state_tensions", "millard_default_state_tensions",
           "millard_acceleration_default_state_tensions", "degroote_default_state_tensions"]

#: the muscle classes whose default-state force arthron reproduces
DEFAULT_STATE_TYPES = ("Thelen2003Muscle", "Millard2012EquilibriumMuscle",
                       "Millard2012AccelerationMuscle", "DeGrooteFregly2016Muscle",
                       "Schutte1993Muscle_Deprecated", "Delp1990Muscle_Deprecated",
                       "Thelen2003Muscle_Deprecated", "RigidTendonMuscle")

#: the state variables of each class (OpenSim 4.6 ``getStateVariableNames``), before the
#: ``ignore_activation_dynamics`` / ``ignore_tendon_compliance`` flags remove some
STATE_NAMES = {"Thelen2003Muscle": ("activation", "fiber_length"),
               "Millard2012EquilibriumMuscle": ("activation", "fiber_length"),
               "Millard2012AccelerationMuscle": ("activation", "fiber_length", "fiber_velocity"),
               "DeGrooteFregly2016Muscle": ("activation", "normalized_tendon_force"),
               "Schutte1993Muscle_Deprecated": ("activation", "fiber_length"),
               "Delp1990Muscle_Deprecated": ("activation", "fiber_length", "fiber_velocity"),
               "Thelen2003Muscle_Deprecated": ("activation", "fiber_length"),
               "RigidTendonMuscle": ()}


def muscle_state_names(m) -> tuple:
    """The state variables OpenSim 4.6 gives muscle ``m`` (:data:`STATE_NAMES`):
    Millard2012EquilibriumMuscle and DeGrooteFregly2016Muscle have no ``activation`` with
    ``ignore_activation_dynamics`` and no ``fiber_length`` / ``normalized_tendon_force`` with
    ``ignore_tendon_compliance``. () for a class arthron does not model."""
    names = STATE_NAMES.get(m.type, ())
    if m.type in ("Millard2012EquilibriumMuscle", "DeGrooteFregly2016Muscle"):
        if _xml_value(m, "ignore_activation_dynamics", False):
            names = tuple(n for n in names if n != "activation")
        if _xml_value(m, "ignore_tendon_compliance", False):
            names = tuple(n for n in names if n not in ("fiber_length", "normalized_tendon_force"))
    return names


def _state(m, states, name, default):
    """The value of muscle ``m``'s state ``name``: its (T,) array in ``states`` when given
    there, else ``default`` (a scalar)."""
    got = (states or {}).get(m.name, {}).get(name)
    return default if got is None else np.asarray(got, float)


#: the classes whose default-state force does not depend on the paths' lengthening speeds
_NO_SPEED_TYPES = ("Thelen2003Muscle", "Schutte1993Muscle_Deprecated", "Delp1990Muscle_Deprecated",
                   "Thelen2003Muscle_Deprecated", "RigidTendonMuscle")


def needs_lengthening_speeds(muscles) -> bool:
    """Whether the default-state tensions of ``muscles`` depend on the paths' lengthening
    speeds (every supported class but ``Thelen2003Muscle``, ``Schutte1993Muscle_Deprecated``
    ``Delp1990Muscle_Deprecated``, ``Thelen2003Muscle_Deprecated`` and ``RigidTendonMuscle``)."""
    return any(m.type not in _NO_SPEED_TYPES for m in muscles)


@dataclass
class DefaultStateMuscles:
    """The muscles of a model that apply force at their default states.

    muscles : the applied muscles of :data:`DEFAULT_STATE_TYPES` (model order); paths : their
    compiled PathSet (None when there are none); others : the applied muscles of other classes
    (arthron applies no force for them); default_fiber_lengths : overrides as in
    :func:`default_state_tensions`; states : {muscle: {state: (T,) array}} replacing the default
    states frame by frame (:func:`default_state_tensions`; None: every state at its default)."""

    muscles: list
    paths: object
    others: list
    default_fiber_lengths: dict | None = None
    states: dict | None = None

    def rows(self, index) -> "DefaultStateMuscles":
        """The same muscles with their per-frame states at frames ``index`` (a slice or
        indices), for the chunks of frames the solvers work in."""
        if not self.states:
            return self
        return DefaultStateMuscles(self.muscles, self.paths, self.others, self.default_fiber_lengths,
                                   {m: {k: np.asarray(v)[index] for k, v in d.items()}
                                    for m, d in self.states.items()})

    def tensions(self, tree, q, qd, speeds=None) -> np.ndarray:
        """Tensions (T, m) N of the muscles at their default states at coordinates ``q`` and
        coordinate rates ``qd`` (T, nq) (:func:`default_state_tensions`); ``speeds``: the paths'
        lengthening speeds (T, m) when the caller has them already (else computed when needed)."""
        from ..multibody.paths import lengthening_speeds, path_lengths
        if not needs_lengthening_speeds(self.muscles):
            speeds = None
        elif speeds is None:
            speeds = lengthening_speeds(self.paths, tree, q, qd)
        return default_state_tensions(self.muscles, path_lengths(self.paths, tree, q), speeds,
                                      self.default_fiber_lengths, self.states)

    def path_loads(self, tree, q, qd):
        """(body loads, mobility forces (T, nq)) of the muscles' tensions at ``q``, ``qd``
        (T, nq) (:func:`arthron.multibody.paths.path_external_loads` of :meth:`tensions`), the poses
        and the paths built once for the lengths, the lengthening speeds and the forces. Within
        :func:`shared_muscle_loads` the result of the same muscles, tree, q, qd and states is
        computed once and shared (its arrays read-only)."""
        cache, key = _SHARED.get(), None
        if cache is not None:
            key = self._key(tree, q, qd)
            if key in cache:
                loads, mob = cache[key]
                return list(loads), mob
        from ..multibody.kinematics import forward_kinematics
        from ..multibody.paths import lengthening_speeds, path_external_loads, path_lengths, path_states
        q = np.atleast_2d(np.asarray(q, float))
        speeds_needed = needs_lengthening_speeds(self.muscles)
        kin = forward_kinematics(tree, q, np.broadcast_to(qd, q.shape) if speeds_needed else None)
        ps = path_states(self.paths, tree, q, kin)
        speeds = (lengthening_speeds(self.paths, tree, q, qd, kin, states=ps, kin_velocities=True)
                  if speeds_needed else None)
        ten = default_state_tensions(self.muscles, path_lengths(self.paths, tree, q, kin, states=ps),
                                     speeds, self.default_fiber_lengths, self.states)
        loads, mob = path_external_loads(self.paths, tree, q, ten, kin=kin, states=ps)
        if key is not None:
            for a in [mob] + [getattr(ld, f) for ld in loads for f in ("force", "point", "torque")]:
                a.flags.writeable = False
            cache[key] = (loads, mob)
        return list(loads), mob

    def _key(self, tree, q, qd):
        """What :meth:`path_loads` depends on: the tree, digests of q, qd and the per-frame
        states, the muscles and their default fiber lengths and maximum pennation angles."""
        from ..multibody.path_geometry import update_digest
        h = update_digest(hashlib.blake2b(digest_size=16), q, qd)
        for m in sorted(self.states or {}):
            for k in sorted(self.states[m]):
                h.update(f"{m}/{k}".encode())
                h.update(np.ascontiguousarray(self.states[m][k], float).tobytes())
        given = self.default_fiber_lengths or {}
        return (id(tree), h.hexdigest(),
                tuple((id(m), _default_fiber_length(m, given), _maximum_pennation_angle(m, given))
                      for m in self.muscles))

    def generalized_forces(self, tree, q, qd) -> np.ndarray:
        """Generalized forces (T, nq) of the muscles' default-state tensions (conjugate to the
        coordinate rates; :func:`arthron.multibody.paths.path_generalized_forces`)."""
        q = np.atleast_2d(q)
        if self.paths is None:
            return np.zeros_like(q, dtype=float)
        from ..multibody.paths import path_generalized_forces
        return path_generalized_forces(self.paths, tree, q, self.tensions(tree, q, qd))


_SHARED = contextvars.ContextVar("arthron_shared_muscle_loads", default=None)


@contextlib.contextmanager
def shared_muscle_loads():
    """Within this context :meth:`DefaultStateMuscles.path_loads` computes the loads of the
    same muscles (the same objects) on the same tree at the same q, qd and states once: the
    AnalyzeTool's kinematics analyses and its JointReaction each need the forward dynamics of
    a states file's muscles at the same frames. Inside, the paths are compiled and rebuilt
    once per set of frames too (:func:`arthron.multibody.paths.shared_paths`), for every
    analysis. The model must not change inside."""
    from ..multibody.paths import shared_paths
    token = _SHARED.set({})
    try:
        with shared_paths():
            yield
    finally:
        _SHARED.reset(token)


def default_state_muscles(model, tree, default_fiber_lengths=None, names=None,
                          states=None) -> DefaultStateMuscles:
    """The model's applied muscles (those named in ``names`` when given) split into those whose
    default-state force arthron applies and the others, their paths compiled once
    (:class:`DefaultStateMuscles`); ``states``: per-frame states replacing the defaults."""
    applied = [m for m in model.muscles.values() if m.applies_force
               and (names is None or m.name in names)]
    muscles = [m for m in applied if m.type in DEFAULT_STATE_TYPES]
    paths = None
    if muscles:
        from ..multibody.paths import compile_paths
        paths = compile_paths(model, tree, forces=[m.name for m in muscles])
    return DefaultStateMuscles(muscles, paths, [m for m in applied if m.type not in DEFAULT_STATE_TYPES],
                               default_fiber_lengths, states)


def default_state_tensions(muscles, lengths, speeds=None, default_fiber_lengths=None,
                           states=None) -> np.ndarray:
    """Tensions (T, m) N of ``muscles`` (classes in :data:`DEFAULT_STATE_TYPES`) at their
    default states, path lengths ``lengths`` (T, m) m and lengthening speeds ``speeds`` (T, m)
    m/s (needed when :func:`needs_lengthening_speeds`; None reads as 0).
    ``default_fiber_lengths``: {name: (default_fiber_length m, maximum_pennation_angle rad)}
    overriding the file's values (either may be None). ``states``: {name: {state: (T,) array}}
    replacing default states frame by frame (module docstring); a deprecated class's
    ``fiber_length`` or ``activation`` there is not reproduced (UnsupportedFeature).

    Raises UnsupportedFeature for a muscle of another class, ModelFileError for a property that
    is not a number."""
    L = np.atleast_2d(np.asarray(lengths, float))
    V = np.zeros_like(L) if speeds is None else np.broadcast_to(np.atleast_2d(np.asarray(speeds, float)), L.shape)
    out = np.zeros_like(L)
    schutte = lambda ms, l_, v_: schutte_default_state_tensions(ms, l_)        # noqa: E731  (three classes)
    dfl, st = default_fiber_lengths, states
    law = {"Thelen2003Muscle": lambda ms, l_, v_: thelen_default_state_tensions(ms, l_, dfl, st),
           "Millard2012EquilibriumMuscle": lambda ms, l_, v_: millard_default_state_tensions(
               ms, l_, v_, dfl, st),
           "Millard2012AccelerationMuscle": lambda ms, l_, v_: millard_acceleration_default_state_tensions(
               ms, l_, v_, dfl, st),
           "DeGrooteFregly2016Muscle": lambda ms, l_, v_: degroote_default_state_tensions(ms, l_, v_, st),
           "Schutte1993Muscle_Deprecated": schutte, "Delp1990Muscle_Deprecated": schutte,
           "Thelen2003Muscle_Deprecated": schutte,
           "RigidTendonMuscle": lambda ms, l_, v_: rigid_tendon_forces(ms, l_, v_, 0.0)[0]}
    for kind, f in law.items():
        cols = [k for k, m in enumerate(muscles) if m.type == kind]
        if cols:
            out[:, cols] = f([muscles[k] for k in cols], L[:, cols], V[:, cols])
    fixed = [m for m in muscles if m.type.endswith("_Deprecated") and (states or {}).get(m.name)]
    if fixed:
        raise UnsupportedFeature(f"muscle '{fixed[0].name}' ({fixed[0].type}): its force at given "
                                 f"{' and '.join(states[fixed[0].name])} is not reproduced (only at its "
                                 "default states, fiber length 0 and activation 0)")
    bad = [m for m in muscles if m.type not in law]
    if bad:
        raise UnsupportedFeature(f"muscle '{bad[0].name}' ({bad[0].type}): its force at the default "
                             "state is not reproduced")
    return out


def _default_fiber_length(m, given) -> float:
    """Muscle ``m``'s default fiber length (m): ``given[m.name][0]`` when not None, else the
    file's ``default_fiber_length``, else OpenSim's 0.1 m."""
    lce = given.get(m.name, (None, None))[0]
    return _xml_value(m, "default_fiber_length", 0.1) if lce is None else float(lce)


def _maximum_pennation_angle(m, given) -> float:
    """Muscle ``m``'s maximum pennation angle (rad): ``given[m.name][1]`` when not None, else
    the file's ``maximum_pennation_angle``, else OpenSim's acos 0.1."""
    pmax = given.get(m.name, (None, None))[1]
    return _xml_value(m, "maximum_pennation_angle", float(np.arccos(0.1))) if pmax is None else float(pmax)


def _thelen_fse(x, e0):
    """Thelen 2003's normalized tendon force at strain x (OpenSim's exact toe constants)."""
    t1 = np.exp(3.0)
    e_toe = 99.0 * e0 * t1 / (166.0 * t1 - 67.0)
    k_lin = 0.67 / (e0 - e_toe)
    toe = 0.33 / (np.exp(3.0) - 1.0) * (np.exp(3.0 * x / e_toe) - 1.0)
    return np.where(x > e_toe, k_lin * (x - e_toe) + 0.33, np.where(x > 0.0, toe, 0.0))


def thelen_default_state_tensions(muscles, lengths, default_fiber_lengths=None, states=None) -> np.ndarray:
    """Tensions (T, m) N of ``Thelen2003Muscle`` s at their default states and path lengths
    ``lengths`` (T, m) m: ``F_iso f_se((L − l_M cos φ)/l_s − 1)``, l_M the default fiber length
    (``default_fiber_lengths[name][0]``, else the file's ``default_fiber_length``, else 0.1 m)
    clamped at the fixed-width pennation model's minimum ``h / sin φ_max`` (h = l_opt sin φ_opt,
    φ_max = ``default_fiber_lengths[name][1]``, else the file's ``maximum_pennation_angle``, else
    acos 0.1), sin φ = h / l_M; f_se Thelen (2003)'s tendon curve with
    ``FmaxTendonStrain`` (0.04 when absent) and OpenSim's exact toe constants
    (``Thelen2003Muscle::calcfse``). What OpenSim's ``computeActuation`` returns there.
    ``states[name]["fiber_length"]`` (T,) m, when given, is l_M frame by frame."""
    L = np.atleast_2d(np.asarray(lengths, float))
    out = np.zeros_like(L)
    given = default_fiber_lengths or {}
    for k, m in enumerate(muscles):
        lce = _state(m, states, "fiber_length", _default_fiber_length(m, given))
        pmax = _maximum_pennation_angle(m, given)
        h = float(m.optimal_fiber_length) * np.sin(float(m.pennation_angle_at_optimal))
        lce = np.maximum(lce, h / np.sin(pmax))
        cos_phi = np.sqrt(1.0 - (h / lce) ** 2) if h > 0 else 1.0       # (unpennated: l_M = 0 too)
        e0 = 0.04 if m.FmaxTendonStrain is None else float(m.FmaxTendonStrain)
        strain = (L[:, k] - lce * cos_phi) / float(m.tendon_slack_length) - 1.0
        out[:, k] = float(m.max_isometric_force) * _thelen_fse(strain, e0)
    return out


def millard_default_state_tensions(muscles, lengths, speeds, default_fiber_lengths=None,
                                   states=None) -> np.ndarray:
    """Tensions (T, m) N of ``Millard2012EquilibriumMuscle`` s at their default states, path
    lengths ``lengths`` (T, m) m and lengthening speeds ``speeds`` (T, m) m/s: what OpenSim
    4.6's ``computeActuation`` (``MuscleDynamicsInfo::tendonForce``) returns there.

    Fiber length: elastic tendon, the state ``default_fiber_length`` (0.1 m, or
    ``default_fiber_lengths[name][0]``); rigid tendon (``ignore_tendon_compliance``), from the
    path, ``sqrt(h² + (L − l_s)²)``; both clamped at the minimum fiber length
    ``max(l_min,active l_opt, h / sin φ_max)`` (fixed-width pennation, h = l_opt sin φ_opt).
    Elastic tendon: ``F_iso f_T((L − l_M cos φ)/l_s)`` (TendonForceLengthCurve), whatever the
    activation and fiber velocity. Rigid tendon: the fiber's force along the tendon,
    ``F_iso (a f_L f_V(v) + f_PE + β v) cos φ`` ≥ 0 with v = L̇ cos φ / (l_opt v_max), a =
    ``default_activation`` (``ignore_activation_dynamics``: the control, 0 in the AnalyzeTool)
    clamped to [``minimum_activation``, 1], β = ``fiber_damping``; 0 when the fiber is clamped
    and shortening or the tendon is slack. Curves: :func:`arthron.models.muscles.millard_curves`.
    ``states[name]``: ``fiber_length`` (T,) m (elastic tendon) and ``activation`` (T,) (rigid
    tendon with activation dynamics) frame by frame instead of their defaults.
    Source: OpenSim 4.6 ``Millard2012EquilibriumMuscle::calcMuscleLengthInfo``,
    ``calcFiberVelocityInfo``, ``calcMuscleDynamicsInfo``, ``isFiberStateClamped``."""
    L = np.atleast_2d(np.asarray(lengths, float))
    V = np.broadcast_to(np.atleast_2d(np.asarray(speeds, float)), L.shape)
    out = np.zeros_like(L)
    given = default_fiber_lengths or {}
    elastic = {}                # tendon curve → [(column, F_iso, l_T / l_s)]: one evaluation each
    for k, m in enumerate(muscles):
        lopt, ls = float(m.optimal_fiber_length), float(m.tendon_slack_length)
        fiso, vmax = float(m.max_isometric_force), float(m.max_contraction_velocity)
        h = lopt * np.sin(float(m.pennation_angle_at_optimal))
        cp = millard_curve_params(m)                      # as OpenSim 4.6 finalizes them
        afl = cp["ActiveForceLengthCurve"]
        lce, lmin = _millard_fiber_length(m, cp, given, states, L[:, k])
        cos_phi = np.sqrt(1.0 - (h / lce) ** 2)
        lt = L[:, k] - lce * cos_phi
        if not _xml_value(m, "ignore_tendon_compliance", False):
            elastic.setdefault(_tendon_curve(m), []).append((k, fiso, lt / ls))
            continue
        if _xml_value(m, "ignore_activation_dynamics", False):
            a = 0.0
        else:
            a = _state(m, states, "activation", _xml_value(m, "default_activation", 0.05))
        amin = _xml_value(m, "minimum_activation", 0.01)
        a = np.clip(a, amin, 1.0)
        beta = _xml_value(m, "fiber_damping", 0.1)
        slack = lt < ls - 1e-14
        v = np.where(slack, 0.0, V[:, k] * cos_phi / (lopt * vmax))
        lN = lce / lopt
        fal = millard_active_force_length_curve(**afl).value(lN)
        fpe = millard_fiber_force_length_curve(**cp["FiberForceLengthCurve"]).value(lN)
        fv = np.where(slack, 1.0, millard_force_velocity_curve(**cp["ForceVelocityCurve"]).value(v))
        fm = np.maximum(fiso * (a * fal * fv + fpe + beta * v), 0.0)
        clamped = ((lce <= lmin) & (v <= 0)) | (lce < lmin)
        out[:, k] = np.where(clamped, 0.0, fm * cos_phi)
    for curve, cols in elastic.items():
        out[:, [k for k, _, _ in cols]] = (np.array([fiso for _, fiso, _ in cols])
                                           * curve.value(np.stack([x for _, _, x in cols], 1)))
    return out



def millard_minimum_fiber_length(m, given=None, cp=None) -> float:
    """A Millard2012EquilibriumMuscle's minimum fiber length (m), max(l̃_min l_opt,
    h / sin φ_max, 1e-14) with h = l_opt sin α_opt (``getMinimumFiberLength``), at which OpenSim
    4.6 clamps its fiber length and the ``fiber_length`` state's default (a default below it,
    such as the class's 0.1 m for a long fibre, starts the state at the minimum: sart_r of
    Lenhart et al. (2015)'s model, l_opt 0.387 m, starts at 0.4441 l_opt = 0.172 m).
    ``given``: {muscle: (default fiber length, maximum pennation angle)} overriding the file;
    ``cp``: its :func:`millard_curve_params`, when computed already."""
    cp = millard_curve_params(m) if cp is None else cp
    lopt = float(m.optimal_fiber_length)
    h = lopt * np.sin(float(m.pennation_angle_at_optimal))
    pmax = _maximum_pennation_angle(m, given or {})
    return max(cp["ActiveForceLengthCurve"]["min_norm_active_fiber_length"] * lopt, h / np.sin(pmax), 1e-14)


def _millard_fiber_length(m, cp, given, states, L):
    """(l_M (T,), minimum fiber length l_min) of Millard2012EquilibriumMuscle ``m`` (curve
    parameters ``cp`` = :func:`millard_curve_params`) at path lengths ``L`` (T,): with
    ``ignore_tendon_compliance`` sqrt(h² + (L − l_s)²), else the ``fiber_length`` state (its
    default); clamped at l_min = max(l̃_min l_opt, h / sin φ_max, 1e-14) as OpenSim clamps it."""
    ls = float(m.tendon_slack_length)
    h = float(m.optimal_fiber_length) * np.sin(float(m.pennation_angle_at_optimal))
    lmin = millard_minimum_fiber_length(m, given, cp)
    if _xml_value(m, "ignore_tendon_compliance", False):
        return np.maximum(np.sqrt(h * h + (L - ls) ** 2), lmin), lmin
    lce0 = _state(m, states, "fiber_length", _default_fiber_length(m, given))
    return np.broadcast_to(np.maximum(lce0, lmin), (len(L),)), lmin


def _tendon_curve(m):
    """The ``TendonForceLengthCurve`` of a Millard muscle (its properties from the file,
    OpenSim's defaults where absent)."""
    block = re.search(r"<TendonForceLengthCurve[^>]*?(?:/>|>(.*?)</TendonForceLengthCurve>)",
                      getattr(m, "unmodelled_xml", "") or "", re.S)
    props = {t: _xml_value(m, t, None, (block.group(1) or "") if block else "")
             for t in ("strain_at_one_norm_force", "stiffness_at_one_norm_force",
                       "norm_force_at_toe_end", "curviness")}
    if props["strain_at_one_norm_force"] is None:
        props["strain_at_one_norm_force"] = 0.049
    return _tendon_curve_of(tuple(props.items()))


@functools.lru_cache(maxsize=64)
def _tendon_curve_of(props):
    """The TendonForceLengthCurve of these properties (built once: most models give every
    muscle the same)."""
    return millard_tendon_force_length_curve(**dict(props))


def millard_acceleration_default_state_tensions(muscles, lengths, speeds,
                                                default_fiber_lengths=None, states=None) -> np.ndarray:
    """Tensions (T, m) N of ``Millard2012AccelerationMuscle`` s at their default states, path
    lengths ``lengths`` (T, m) m and lengthening speeds ``speeds`` (T, m) m/s: OpenSim 4.6's
    ``computeActuation`` (``MuscleDynamicsInfo::tendonForce``) there.

    States: fiber length l_M = ``default_fiber_length`` (0.1 m, or
    ``default_fiber_lengths[name][0]``), fiber velocity l̇_M = ``default_fiber_velocity`` (0).
    Fixed-width pennation with a maximum angle of π/2: sin φ = h / l_M (h = l_opt sin φ_opt;
    φ = π/2 when l_M ≤ h, φ = 0 without pennation), φ̇ = −(l̇_M / l_M) tan φ. Tendon length
    l_T = L − l_M cos φ and velocity l̇_T = L̇ − l̇_M cos φ + l_M sin φ φ̇. Force
    ``F_iso max(0, f_T(l_T/l_s) (1 + β_T l̇_T/l_s))``, f_T the TendonForceLengthCurve,
    β_T = ``tendon_force_length_damping`` (0.1): the tendon's Hunt-Crossley visco-elastic
    force, saturated at 0. Activation does not enter. ``states[name]``: ``fiber_length`` (T,) m
    and ``fiber_velocity`` (T,) m/s frame by frame instead of their defaults."""
    L = np.atleast_2d(np.asarray(lengths, float))
    V = np.broadcast_to(np.atleast_2d(np.asarray(speeds, float)), L.shape)
    out = np.zeros_like(L)
    given = default_fiber_lengths or {}
    for k, m in enumerate(muscles):
        lopt, ls = float(m.optimal_fiber_length), float(m.tendon_slack_length)
        popt = float(m.pennation_angle_at_optimal)
        lce = _state(m, states, "fiber_length", _default_fiber_length(m, given))
        dlce = _state(m, states, "fiber_velocity", _xml_value(m, "default_fiber_velocity", 0.0))
        bse = _xml_value(m, "tendon_force_length_damping", 0.1)
        h = lopt * np.sin(popt)
        phi = dphi = 0.0
        if popt > np.finfo(float).eps:
            phi = _acceleration_pennation(lce, h)
            dphi = -(dlce / lce) * np.tan(phi)
        lt = L[:, k] - lce * np.cos(phi)
        vt = V[:, k] - dlce * np.cos(phi) + lce * np.sin(phi) * dphi
        fse = _tendon_curve(m).value(lt / ls)
        out[:, k] = float(m.max_isometric_force) * np.maximum(fse * (1.0 + bse * vt / ls), 0.0)
    return out


def _acceleration_pennation(lce, h):
    """Millard2012AccelerationMuscle's pennation angle at fiber length ``lce``, width ``h`` > 0:
    asin(h / l_M), π/2 where l_M ≤ h (OpenSim 4.6 ``MuscleFixedWidthPennationModel``)."""
    ratio = np.divide(h, lce, out=np.full(np.shape(lce), np.inf), where=lce > 0)
    return np.where((lce > h) & (ratio < 1.0), np.arcsin(np.minimum(ratio, 1.0)), np.pi / 2)


def degroote_default_state_tensions(muscles, lengths, speeds, states=None) -> np.ndarray:
    """Tensions (T, m) N of ``DeGrooteFregly2016Muscle`` s at their default states, path
    lengths ``lengths`` (T, m) m and lengthening speeds ``speeds`` (T, m) m/s: OpenSim 4.6's
    ``computeActuation`` (``MuscleDynamicsInfo::tendonForce``) there.

    Elastic tendon: the normalized tendon force is the state, so the force is
    ``F_iso × default_normalized_tendon_force`` (0.5) whatever the path's length and speed.
    Rigid tendon (``ignore_tendon_compliance``): the fiber's force along the tendon,
    ``F_iso (a f_L(l̃) f_V(ṽ) + f_PE(l̃) + β ṽ) cos φ`` with l_M = sqrt((L − l_s)² + h²),
    cos φ = (L − l_s)/l_M, ṽ = L̇ cos φ / (l_opt v_max), a = ``default_activation`` (0.5;
    ``ignore_activation_dynamics``: the control, 0 in the AnalyzeTool), β = ``fiber_damping``
    (0), f_L with ``active_force_width_scale``, f_PE with
    ``passive_fiber_strain_at_one_norm_force`` (0 with ``ignore_passive_fiber_force``); no
    clamping (OpenSim 4.6 clamps neither the fiber length nor the force). Curves:
    :func:`arthron.models.muscles.degroote_active_force_length` ... ``states[name]``:
    ``normalized_tendon_force`` (elastic tendon) and ``activation`` (rigid tendon) (T,) frame by
    frame instead of their defaults."""
    L = np.atleast_2d(np.asarray(lengths, float))
    V = np.broadcast_to(np.atleast_2d(np.asarray(speeds, float)), L.shape)
    out = np.zeros_like(L)
    for k, m in enumerate(muscles):
        fiso = float(m.max_isometric_force)
        if not _xml_value(m, "ignore_tendon_compliance", False):
            out[:, k] = fiso * _state(m, states, "normalized_tendon_force",
                                      _xml_value(m, "default_normalized_tendon_force", 0.5))
            continue
        lopt, ls = float(m.optimal_fiber_length), float(m.tendon_slack_length)
        h = lopt * np.sin(float(m.pennation_angle_at_optimal))
        along = L[:, k] - ls
        lce = np.sqrt(along * along + h * h)
        cos_phi = along / lce
        v = V[:, k] * cos_phi / (lopt * float(m.max_contraction_velocity))
        a = 0.0 if _xml_value(m, "ignore_activation_dynamics", False) else _state(
            m, states, "activation", _xml_value(m, "default_activation", 0.5))
        fal = degroote_active_force_length(lce / lopt, _xml_value(m, "active_force_width_scale", 1.0))
        fpe = 0.0 if _xml_value(m, "ignore_passive_fiber_force", False) else degroote_passive_force_length(
            lce / lopt, _xml_value(m, "passive_fiber_strain_at_one_norm_force", 0.6))
        beta = _xml_value(m, "fiber_damping", 0.0)
        out[:, k] = fiso * (a * fal * degroote_force_velocity(v) + fpe + beta * v) * cos_phi
    return out
