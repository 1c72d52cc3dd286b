"""Load sharing on files given directly (``arthron so MODEL MOTION``): OpenSim's objective, or
the stress objective of the shoulder–elbow model of Sarshari et al. (Σ (f/PCSA)², their Eq. 12),
with optional reserve actuators, a joint stability cone and EMG-assisted bounds.
"""
from __future__ import annotations

import copy

import numpy as np

from ..errors import OptionError
from ..io.osim import read_osim
from ..io.setup import read_external_loads
from ..io.sto import read_sto
from ..models.forces import CoordinateActuator
from ..models.model import Model
from ..solvers.load_sharing import LoadSharingResult, build_problem, solve_problem
from .options import check_lowpass, check_positive, check_time_range
from .static_optimization_tool import control_bounds

__all__ = ["run_load_sharing", "add_reserves", "stress_weights", "DEFAULT_SPECIFIC_TENSION"]

#: N/m² — PCSA = F_max / σ when no PCSA is given (a common value in upper-limb models;
#: the stress objective's optimum does not depend on it when every PCSA is derived this way)
DEFAULT_SPECIFIC_TENSION = 0.6e6


def add_reserves(model: Model, optimal_force: float) -> Model:
    """A copy of the model with a CoordinateActuator ``<coordinate>_reserve`` (``optimal_force``,
    unbounded) on every unlocked coordinate that has none."""
    optimal_force = check_positive(optimal_force, "reserve optimal force")
    m = copy.copy(model)
    m.forces = dict(model.forces)
    have = {f.coordinate for f in model.forces.values() if f.type == "CoordinateActuator"}
    for name, c in model.coordinates.items():
        if getattr(c, "locked", False) or name in have:
            continue
        f = CoordinateActuator(name=f"{name}_reserve")
        f.coordinate = name
        f.optimal_force = float(optimal_force)
        m.forces[f.name] = f
    return m


def stress_weights(prob, pcsa=None, specific_tension=None):
    """Objective weights (n,) of Σ (f_i / (PCSA_i σ))² in the problem's controls: muscles
    ``(F̂_i / (PCSA_i σ))²`` (F̂ the force per unit control, frame-independent without muscle
    physiology), other actuators 1 (their controls², as OpenSim). ``pcsa``: {muscle: m²};
    the others get ``F_max / σ``.

    Raises OptionError for a non-positive PCSA or specific tension, or a PCSA of an unknown muscle.
    """
    sigma = DEFAULT_SPECIFIC_TENSION if specific_tension is None else check_positive(specific_tension,
                                                                                    "specific tension")
    pcsa = dict(pcsa or {})
    unknown = [k for k in pcsa if k not in prob.names]
    if unknown:
        raise OptionError(f"PCSA given for {', '.join(unknown)}, which are not muscles of the problem")
    fh = np.asarray(prob.force_per_control, float)
    if np.ptp(fh, axis=0).max() > 1e-9 * (1 + np.abs(fh).max()):
        raise OptionError("the stress objective needs a force per activation that does not change "
                          "over frames: use it without muscle physiology")
    w = np.ones(len(prob.names))
    for i, (n, k) in enumerate(zip(prob.names, prob.kinds)):
        if k != "muscle":
            continue
        a = pcsa.get(n)
        if a is None:
            a = fh[0, i] / sigma
        elif not a > 0:
            raise OptionError(f"PCSA of '{n}' must be positive, got {a!r}")
        w[i] = (fh[0, i] / (a * sigma)) ** 2
    return w


def run_load_sharing(model, motion, *, external_loads=None, lowpass_hz=None, time_range=None,
                     activation_exponent: float = 2.0, use_muscle_physiology: bool = True,
                     objective: str = "opensim", pcsa=None, specific_tension=None, cone=None,
                     emg=None, reserves=None, on_infeasible: str = "raise") -> LoadSharingResult:
    """Load sharing of files or objects.

    objective : ``"opensim"`` (Σ a^p, :func:`arthron.solvers.load_sharing.solve_problem`) or
    ``"stress"`` (Σ (f/PCSA)², muscle physiology off, forces 0 ≤ f ≤ F_max);
    reserves : optimal force of CoordinateActuators added on every coordinate (None: none);
    cone, emg : see :mod:`arthron.solvers.load_sharing_convex` (not yet on this path: OptionError).

    Raises OptionError for bad options; the readers' and solver's errors.
    """
    time_range = check_time_range(time_range)
    lowpass_hz = check_lowpass(lowpass_hz)
    if objective not in ("opensim", "stress"):
        raise OptionError(f"objective must be opensim or stress, not {objective!r}")
    model = model if isinstance(model, Model) else read_osim(model)
    motion = motion if hasattr(motion, "labels") else read_sto(motion)
    if external_loads is not None and not hasattr(external_loads, "forces"):
        external_loads = read_external_loads(external_loads)
    if reserves is not None:
        model = add_reserves(model, reserves)
    if cone is not None or emg is not None:
        from .load_sharing_extras import run_with_cone_or_emg
        return run_with_cone_or_emg(model, motion, external_loads=external_loads, lowpass_hz=lowpass_hz,
                                    time_range=time_range, objective=objective, pcsa=pcsa,
                                    specific_tension=specific_tension, cone=cone, emg=emg,
                                    use_muscle_physiology=use_muscle_physiology,
                                    on_infeasible=on_infeasible)
    phys = use_muscle_physiology and objective == "opensim"
    prob = build_problem(model, motion, external_loads=external_loads, lowpass_hz=lowpass_hz,
                         time_range=time_range, use_muscle_physiology=phys,
                         controls=control_bounds(model))
    weights = None
    p = activation_exponent
    if objective == "stress":
        weights = stress_weights(prob, pcsa, specific_tension)
        p = 2.0
        prob.lower[:, [i for i, k in enumerate(prob.kinds) if k == "muscle"]] = 0.0
    res = solve_problem(prob, activation_exponent=p, weights=weights, on_infeasible=on_infeasible)
    res.extra["problem"] = prob
    return res
