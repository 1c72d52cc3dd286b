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
from ..solvers.load_sharing import (DEFAULT_SPECIFIC_TENSION, LoadSharingResult, build_problem, solve_problem,
                                      stress_weights)
from .options import check_lowpass, check_positive, check_time_range
from .static_optimization_tool import control_bounds

__all__ = ["run_load_sharing", "add_reserves", "stress_weights", "DEFAULT_SPECIFIC_TENSION", "read_pcsa"]


def read_pcsa(path) -> dict:
    """{muscle: PCSA (m²)} from a text file of ``muscle PCSA_cm2`` lines (cm², as Sarshari et
    al. report them; ``#`` comments). Raises DataFileError naming the file and line for a
    malformed line or a PCSA that is not positive."""
    from pathlib import Path
    from ..errors import DataFileError
    from ..io.sto import _read_lines        # a missing, unreadable or binary file: one line naming it
    out = {}
    for k, line in enumerate(_read_lines(Path(path)), 1):
        t = line.split("#", 1)[0].split()
        if not t:
            continue
        if len(t) != 2:
            raise DataFileError("expected 'muscle PCSA_cm2'", path, f"line {k}")
        try:
            v = float(t[1])
        except ValueError:
            raise DataFileError(f"PCSA of '{t[0]}' is not a number: {t[1]!r}", path, f"line {k}") from None
        if not (np.isfinite(v) and v > 0):
            raise DataFileError(f"PCSA of '{t[0]}' must be positive, got {t[1]}", path, f"line {k}")
        out[t[0]] = v * 1e-4
    return out

def add_reserves(model: Model, optimal_force: float) -> Model:
    """A copy of the model with a CoordinateActuator ``<coordinate>_reserve`` (``optimal_force``,
    unbounded) on every unlocked coordinate that has none."""
    optimal_force = check_positive(optimal_force, "reserve optimal force")
    m = copy.copy(model)
    m.forces = dict(model.forces)
    have = {f.coordinate for f in model.forces.values()
            if f.type in ("CoordinateActuator", "ActivationCoordinateActuator")}
    for name, c in model.coordinates.items():
        if getattr(c, "locked", False) or name in have:
            continue
        f = CoordinateActuator(name=f"{name}_reserve")
        f.coordinate = name
        f.optimal_force = float(optimal_force)
        m.forces[f.name] = f
    return m


def run_load_sharing(model, motion, *, external_loads=None, lowpass_hz=None, time_range=None,
                     activation_exponent: float = 2.0, use_muscle_physiology: bool = True,
                     objective: str = "opensim", pcsa=None, specific_tension=None, cone=None,
                     emg=None, emg_mapping=None, reserves=None,
                     on_infeasible: str = "raise") -> LoadSharingResult:
    """Load sharing of files or objects.

    objective : ``"opensim"`` (Σ a^p, :func:`arthron.solvers.load_sharing.solve_problem`) or
    ``"stress"`` (Σ (f/PCSA)², muscle physiology off, forces 0 ≤ f ≤ F_max); pcsa : {muscle:
    m²} or a file for :func:`read_pcsa` (others: F_max / specific tension);
    reserves : optimal force of CoordinateActuators added on every coordinate (None: none);
    cone : StabilityCone or ``JOINT:BODY:AX,AY,AZ:AP_DEG:SI_DEG[:N_PLANES]``; emg : normalized
    EMG file (``emg_mapping``: dict or file of ``column muscle`` lines) — see
    :mod:`arthron.tools.load_sharing_extras`.

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
    if pcsa is not None and not isinstance(pcsa, dict):
        pcsa = read_pcsa(pcsa)
    if cone is not None or emg is not None:
        from .load_sharing_extras import run_with_cone_or_emg
        res = run_with_cone_or_emg(model, motion, external_loads=external_loads, lowpass_hz=lowpass_hz,
                                    time_range=time_range, objective=objective, pcsa=pcsa,
                                    specific_tension=specific_tension, cone=cone, emg=emg,
                                    emg_mapping=emg_mapping,
                                    use_muscle_physiology=use_muscle_physiology,
                                    on_infeasible=on_infeasible)
        res.extra["model"] = model
        return res
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
    res.extra["model"] = model        # the model solved (with its reserves)
    return res
