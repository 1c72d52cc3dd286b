"""Options of ``arthron so`` beyond OpenSim: the stability cone (``--cone``) and EMG-assisted
bounds (``--emg``), parsed here and handed to :mod:`arthron.solvers.load_sharing_cone`."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataFileError, OptionError
from ..io.sto import read_sto
from ..models.model import Model
from ..solvers.load_sharing import LoadSharingResult, build_problem, solve_problem, stress_weights
from ..solvers.load_sharing_cone import StabilityCone, apply_emg_bounds, solve_with_stability_cone
from .static_optimization_tool import control_bounds

__all__ = ["parse_cone", "read_emg", "run_with_cone_or_emg"]


def parse_cone(text) -> StabilityCone:
    """``JOINT:BODY:AX,AY,AZ:AP_DEG:SI_DEG[:N_PLANES]`` (a StabilityCone is passed through).

    Raises OptionError for a malformed specification."""
    if isinstance(text, StabilityCone):
        return text
    parts = str(text).split(":")
    if len(parts) not in (5, 6):
        raise OptionError(f"--cone must be JOINT:BODY:AX,AY,AZ:AP_DEG:SI_DEG[:N_PLANES], got {text!r}")
    try:
        axis = tuple(float(v) for v in parts[2].split(","))
        ap, si = float(parts[3]), float(parts[4])
        planes = int(parts[5]) if len(parts) == 6 else None
    except ValueError:
        raise OptionError(f"--cone: numbers expected in {text!r}") from None
    if len(axis) != 3:
        raise OptionError(f"--cone axis must have 3 components, got {parts[2]!r}")
    return StabilityCone(parts[0], parts[1], axis, (ap, si), n_planes=planes)


def read_emg(path, model: Model, mapping=None):
    """(time (T,), envelopes (T, k), muscle names (k,)) of a normalized EMG ``.sto/.mot``;
    columns named by muscle, or mapped by ``mapping`` (a dict, or a text file of
    ``column muscle`` lines).

    Raises DataFileError naming the file for columns that name no muscle of the model."""
    table = read_sto(path)
    if mapping is not None and not isinstance(mapping, dict):
        mp = {}
        from ..io.sto import _read_lines    # a missing, unreadable or binary file: one line naming it
        for k, line in enumerate(_read_lines(Path(mapping)), 1):
            if line.strip() and not line.lstrip().startswith("#"):
                bits = line.split()
                if len(bits) != 2:
                    raise DataFileError("expected 'column muscle'", mapping, f"line {k}")
                mp[bits[0]] = bits[1]
        mapping = mp
    mapping = mapping or {}
    names = [mapping.get(c, c) for c in table.labels]
    bad = [c for c, n in zip(table.labels, names) if n not in model.muscles]
    if bad:
        raise DataFileError(f"EMG column(s) {', '.join(bad)} name no muscle of model '{model.name}'",
                            path, "column labels")
    return np.asarray(table.time, float), np.asarray(table.data, float), names


def run_with_cone_or_emg(model: Model, motion, *, external_loads=None, lowpass_hz=None, time_range=None,
                         objective="opensim", pcsa=None, specific_tension=None, cone=None, emg=None,
                         emg_mapping=None, use_muscle_physiology=True, emg_bounds=(0.3, 0.7),
                         on_infeasible="raise") -> LoadSharingResult:
    """Load sharing with a stability cone and/or EMG-assisted bounds (p = 2).

    Raises OptionError (bad cone, unknown joint/body, half-angles outside (0°, 90°)),
    DataFileError (EMG columns naming no muscle), the solver's errors.
    """
    cone = parse_cone(cone) if cone is not None else None
    if cone is not None:
        cone.check(model)
    phys = use_muscle_physiology and objective == "opensim"
    prob = build_problem(model, motion, external_loads=external_loads, lowpass_hz=lowpass_hz,
                         time_range=time_range, use_muscle_physiology=phys, controls=control_bounds(model))
    weights = None
    if objective == "stress":
        weights = stress_weights(prob, pcsa, specific_tension)
        prob.lower[:, [i for i, k in enumerate(prob.kinds) if k == "muscle"]] = 0.0
    if emg is not None:
        t, e, names = read_emg(emg, model, emg_mapping)
        apply_emg_bounds(prob, t, e, names, *emg_bounds)
    if cone is not None:
        res = solve_with_stability_cone(model, prob, cone, weights=weights, on_infeasible=on_infeasible)
    else:
        res = solve_problem(prob, weights=weights, on_infeasible=on_infeasible)
        res.extra["problem"] = prob
    return res
