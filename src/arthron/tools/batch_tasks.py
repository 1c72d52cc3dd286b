"""The two kinds of task of ``arthron batch`` (:mod:`arthron.tools.batch_tool`), plain functions
of picklable data that every executor runs unchanged: :func:`subject_task` (scale one subject)
and :func:`trial_task` (one trial's steps through the tools), with the fingerprints and
completion markers that make a killed run resume where it stopped. A task never raises: its
error, with the file and line or key it names, goes into its summary row."""
from __future__ import annotations

import hashlib
import json
import os
import time
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..errors import ArthronError, DataFileError, OptionError
from ..io.files import atomic_write, output_group
from ..io.study import SubjectSpec, TrialSpec

__all__ = ["subject_task", "trial_task", "subject_fingerprint", "step_fingerprints", "marker_map_problems",
           "error_text", "generic_model", "SUMMARY_COLUMNS"]

#: columns of ``summary.csv`` (units in the names: mm, N·m as Nm, N, kg, s)
SUMMARY_COLUMNS = [
    "subject", "trial", "status", "failed_step", "error", "steps", "computed_steps", "resumed_steps",
    "time_s", "scaling", "subject_mass_kg", "markers_file", "ik_frames", "ik_markers",
    "ik_rms_mean_mm", "ik_rms_max_mm", "ik_max_marker_error_mm", "ik_max_error_marker",
    "id_peak_moment_Nm", "id_peak_moment_coordinate", "id_peak_residual_force_N",
    "so_max_muscle_activation", "so_peak_muscle_force_N", "jr_peak_force_N", "jr_peak_joint",
    "warnings", "folder"]

#: study keys each step depends on (besides the steps before it)
_STEP_KEYS = {"ik": ("markers", "ik_setup", "time_range", "marker_map", "rotate", "force_location", "bodies"),
              "id": ("external_loads", "grf", "lowpass_hz", "forces_to_exclude"),
              "so": ("reserves", "activation_exponent"),
              "jr": ("joints",)}
_BLAS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


# ------------------------------------------------------------------------------ fingerprints
def _file_stamp(p) -> list:
    try:
        st = os.stat(p)
        return [str(p), st.st_size, st.st_mtime_ns]
    except OSError:
        return [str(p), None, None]


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _stamped(v):
    """A study value with file paths replaced by (path, size, mtime): a changed input changes
    the fingerprint."""
    if isinstance(v, Path):
        return _file_stamp(v)
    if isinstance(v, (list, tuple)):
        return [_stamped(x) for x in v]
    if isinstance(v, dict):
        return {k: _stamped(x) for k, x in v.items()}
    return v


def subject_fingerprint(s: SubjectSpec) -> str:
    """A digest of what a subject's model depends on: its study entry and the size and
    modification time of the files it names."""
    d = {k: v for k, v in asdict(s).items() if k not in ("trials", "key", "problems")}
    return _digest(_stamped({k: (Path(v) if isinstance(v, Path) else v) for k, v in d.items()}))


def step_fingerprints(t: TrialSpec, subject_fp: str, steps) -> dict:
    out, prev = {}, subject_fp
    opts = dict(t.options, markers=t.markers)
    for st in steps:
        if st == "scale":
            continue
        prev = _digest([prev, st, _stamped({k: opts.get(k) for k in _STEP_KEYS[st]})])
        out[st] = prev
    return out


# ------------------------------------------------------------------------------ markers
def _marker_path(folder: Path, step: str) -> Path:
    return folder / f".done-{step}.json"


def _completed(folder: Path, step: str, fp: str):
    """The marker of a completed step (dict) when its fingerprint matches and its outputs
    exist, else None."""
    p = _marker_path(folder, step)
    try:
        m = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    if m.get("fingerprint") != fp or not all((folder / o).is_file() for o in m.get("outputs", [])):
        return None
    return m


def _mark_done(folder: Path, step: str, fp: str, outputs, metrics: dict, seconds: float):
    atomic_write(_marker_path(folder, step), json.dumps(
        {"fingerprint": fp, "outputs": [Path(o).name if Path(o).parent == folder else
                                        str(Path(o).relative_to(folder)) for o in outputs],
         "metrics": metrics, "seconds": seconds, "finished": time.time(), "pid": os.getpid()},
        indent=1, default=float))


# ------------------------------------------------------------------------------ the tasks
def error_text(e: BaseException) -> str:
    if isinstance(e, ArthronError):
        return str(e)
    tb = traceback.extract_tb(e.__traceback__)
    where = f" ({Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    return f"{type(e).__name__}: {e}{where}"


@contextmanager
def _one_blas_thread():
    """Limit BLAS threads of this process while a task runs, when threadpoolctl is installed
    (pool workers get the environment variables at start; Dask workers should be started with
    ``OMP_NUM_THREADS=1``)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(1):
        yield


def subject_task(s: SubjectSpec, out_root: str, fingerprint: str) -> dict:
    """Make one subject's model (the ``scale`` step) into ``out_root/<subject>/<subject>.osim``.

    Returns a dict: ``status`` (``ok``/``resumed``/``failed``), ``model`` (path), ``error``,
    ``scaling``, ``subject_mass_kg``, ``time_s``, ``warnings``. Never raises."""
    t0 = time.perf_counter()
    folder = Path(out_root) / s.name
    row = {"subject": s.name, "scaling": s.scaling, "model": str(folder / f"{s.name}.osim"),
           "status": "ok", "error": "", "warnings": ""}
    with warnings.catch_warnings(record=True) as caught, _one_blas_thread():
        warnings.simplefilter("always")
        try:
            if s.problems:
                raise DataFileError("; ".join(s.problems))
            done = _completed(folder, "scale", fingerprint)
            if done is not None:
                row.update(done["metrics"], status="resumed")
            else:
                row.update(_scale_subject(s, folder, fingerprint))
        except Exception as e:  # noqa: BLE001 — every failure is reported, never raised
            row.update(status="failed", error=error_text(e))
    row["warnings"] = _warning_text(caught)
    row["time_s"] = time.perf_counter() - t0
    return row


def _warning_text(caught) -> str:
    msgs = list(dict.fromkeys(str(w.message) for w in caught))
    return " | ".join(msgs[:5]) + (f" | (+{len(msgs) - 5} more)" if len(msgs) > 5 else "")


def generic_model(s: SubjectSpec):
    from ..io.osim import read_osim
    from .scale_tool import read_marker_set
    model = read_osim(s.model)
    if s.marker_set is not None:          # GenericModelMaker's marker_set_file: replaces same names
        for n, mk in read_marker_set(s.marker_set, model).items():
            model.markers.pop(n, None)
            model.markers[n] = mk
    return model


def _scale_subject(s: SubjectSpec, folder: Path, fp: str) -> dict:
    from ..io.osim import write_osim
    t0 = time.perf_counter()
    target = folder / f"{s.name}.osim"
    outputs = [target]
    metrics = {}
    if s.scaling == "scaletool":
        from .scale_tool import scale_from_setup, write_scale_set
        res = scale_from_setup(s.scale_setup, model=s.model, mass=s.mass)
        model = res.model
        with output_group():
            write_osim(target, model)
            outputs.append(write_scale_set(folder / f"{s.name}_scaleSet_applied.xml", res.scale_set))
        if res.static_errors:
            e = np.array(list(res.static_errors.values()), float)
            metrics["static_rms_mm"] = float(1e3 * np.sqrt(np.nanmean(e ** 2)))
    else:
        model = generic_model(s)
        if s.scaling == "anthropometric":
            from .anthropometric_tool import run_anthropometric_scale
            model, _, _ = run_anthropometric_scale(model, s.mass, s.height, s.gender, static=s.static)
        write_osim(target, model)
    metrics["subject_mass_kg"] = float(model.total_mass())
    _mark_done(folder, "scale", fp, outputs, metrics, time.perf_counter() - t0)
    return metrics


def _trial_markers(t: TrialSpec, folder: Path):
    """The MarkerTrial (metres) of a trial; a C3D is first exported
    (:func:`arthron.tools.c3d_tool.export_c3d`: ``.trc``, GRF ``.mot``, ExternalLoads with
    ``bodies`` on its platforms) into ``folder/input``."""
    from ..io.trc import read_trc
    o = t.options
    if t.markers.suffix.lower() == ".c3d":
        from .c3d_tool import export_c3d
        res = export_c3d(t.markers, folder / "input", rotation=o.get("rotate"),
                         force_location=o.get("force_location") or "origin", bodies=o.get("bodies"))
        return read_trc(res.trc)
    if o.get("rotate") is not None or o.get("bodies") is not None or o.get("force_location") is not None:
        raise OptionError("rotate, bodies and force_location apply to a .c3d trial only")
    return read_trc(t.markers)


def marker_map_problems(t: TrialSpec, trial_labels, model_markers, study_path) -> list:
    """Errors (DataFileError naming the study file and key) for a trial's ``marker_map`` naming
    a label the trial lacks or a marker the model lacks."""
    out = []
    labels, markers = set(trial_labels), set(model_markers)
    for k, v in (t.options.get("marker_map") or {}).items():
        if k not in labels:
            out.append(DataFileError(f"marker '{k}' is not in the trial file {t.markers.name}",
                                     study_path, f"{t.key}.marker_map.{k}"))
        if v not in markers:
            out.append(DataFileError(f"marker '{v}' (for '{k}') is not a marker of the subject's model",
                                     study_path, f"{t.key}.marker_map.{k}"))
    return out


def _apply_marker_map(trial, t: TrialSpec, model, study_path):
    import copy
    probs = marker_map_problems(t, trial.labels, model.markers, study_path)
    if probs:
        raise probs[0] if len(probs) == 1 else DataFileError(
            "; ".join(f"{p.where}: {p.message}" for p in probs), study_path)
    mm = t.options.get("marker_map") or {}
    if not mm:
        return trial
    trial = copy.copy(trial)
    trial.labels = [mm.get(n, n) for n in trial.labels]
    return trial


def _external_loads(ext_path, grf):
    if ext_path is None:
        if grf is not None:
            raise OptionError("grf needs external_loads (the ExternalLoads template naming the bodies)")
        return None
    from ..io.setup import read_external_loads
    ext = read_external_loads(ext_path)
    if grf is not None:
        ext.datafile = Path(grf)
    return ext


def trial_task(t: TrialSpec, model_file: str, out_root: str, steps, fingerprints: dict,
               study_path: str = "") -> dict:
    """Run one trial's steps (``steps`` without ``scale``) with the subject's model.

    Returns the trial's summary row (:data:`SUMMARY_COLUMNS`). Never raises: the first failing
    step's error (with the file and line or study key it names) is in ``error`` and
    ``failed_step``; the steps before it stay done."""
    t0 = time.perf_counter()
    folder = Path(out_root) / t.subject / t.name
    row = {c: "" for c in SUMMARY_COLUMNS}
    row.update(subject=t.subject, trial=t.name, status="ok", steps=" ".join(steps),
               markers_file=str(t.markers), folder=str(folder))
    computed, resumed = [], []
    step = "inputs"
    with warnings.catch_warnings(record=True) as caught, _one_blas_thread():
        warnings.simplefilter("always")
        try:
            if t.problems:
                raise DataFileError("; ".join(t.problems))
            state = {}
            for step in [s for s in steps if s != "scale"]:
                fp = fingerprints[step]
                done = _completed(folder, step, fp)
                if done is not None:
                    row.update(done["metrics"])
                    resumed.append(step)
                    continue
                s0 = time.perf_counter()
                outs, metrics = _STEP_FUNCS[step](t, model_file, folder, state, study_path)
                _mark_done(folder, step, fp, outs, metrics, time.perf_counter() - s0)
                row.update(metrics)
                computed.append(step)
        except Exception as e:  # noqa: BLE001 — every failure is reported, never raised
            row.update(status="failed", failed_step=step, error=error_text(e))
    if not computed and resumed and row["status"] == "ok":
        row["status"] = "resumed"
    row.update(computed_steps=" ".join(computed), resumed_steps=" ".join(resumed),
               warnings=_warning_text(caught), time_s=time.perf_counter() - t0)
    return row


def _model(model_file, state):
    if "model" not in state:
        from ..io.osim import read_osim
        state["model"] = read_osim(model_file)
    return state["model"]


def _motion(folder, t, state):
    if "motion" not in state:
        from ..io.sto import read_sto
        state["motion"] = read_sto(folder / f"{t.name}_ik.mot")
    return state["motion"]


def _loads(t, folder, state):
    """The trial's ExternalLoads (``external_loads`` with ``grf`` as its datafile; for a C3D
    trial without them, its platforms on ``bodies`` as exported into ``input/``), or None."""
    if "ext" not in state:
        ext = t.options.get("external_loads")
        if ext is None and t.markers.suffix.lower() == ".c3d":
            xml = folder / "input" / f"{t.markers.stem}_external_loads.xml"
            if xml.is_file():
                if not t.options.get("bodies"):
                    raise OptionError(f"{t.markers.name} has force platforms: name the body on each "
                                      "(bodies = [\"calcn_r\", \"calcn_l\"]) or give external_loads")
                ext = xml
        state["ext"] = _external_loads(ext, t.options.get("grf"))
    return state["ext"]


def _step_ik(t, model_file, folder, state, study_path):
    from .ik_tool import run_ik
    model = _model(model_file, state)
    trial = _trial_markers(t, folder)
    trial = _apply_marker_map(trial, t, model, study_path)
    res = run_ik(model, trial, setup=t.options.get("ik_setup"), time_range=t.options.get("time_range"))
    mot = folder / f"{t.name}_ik.mot"
    err = folder / f"{t.name}_ik_marker_errors.sto"
    res.write(mot, err)
    e = np.asarray(res.marker_errors, float)
    k = int(np.nanargmax(np.nanmax(e, axis=0))) if e.size else 0
    outs = [mot, err] + sorted((folder / "input").glob("*")) if (folder / "input").is_dir() else [mot, err]
    return outs, {"ik_frames": int(len(res.time)), "ik_markers": int(len(res.marker_names)),
                  "ik_rms_mean_mm": float(1e3 * np.mean(res.rms)), "ik_rms_max_mm": float(1e3 * np.max(res.rms)),
                  "ik_max_marker_error_mm": float(1e3 * np.nanmax(e)) if e.size else float("nan"),
                  "ik_max_error_marker": res.marker_names[k] if e.size else ""}


def _step_id(t, model_file, folder, state, study_path):
    from .id_tool import run_id
    model = _model(model_file, state)
    run = run_id(model, _motion(folder, t, state), external_loads=_loads(t, folder, state),
                 lowpass_hz=t.options.get("lowpass_hz"),
                 forces_to_exclude=tuple(t.options.get("forces_to_exclude") or ("Muscles",)))
    out = run.write(folder / f"{t.name}_inverse_dynamics.sto")
    r = run.result
    tau = np.asarray(r.generalized_forces, float)
    mom = [i for i, lb in enumerate(r.labels) if lb.endswith("_moment")]
    frc = [i for i, lb in enumerate(r.labels) if lb.endswith("_force")]
    m = {}
    if mom:
        peaks = np.max(np.abs(tau[:, mom]), axis=0)
        k = int(np.argmax(peaks))
        m.update(id_peak_moment_Nm=float(peaks[k]), id_peak_moment_coordinate=r.coordinates[mom[k]])
    if frc:
        m["id_peak_residual_force_N"] = float(np.max(np.abs(tau[:, frc])))
    return [out], m


def _so_model(model_file, t, state):
    model = _model(model_file, state)
    if t.options.get("reserves") is not None:
        from .load_sharing_tool import add_reserves
        model = add_reserves(model, t.options["reserves"])
    return model


def _step_so(t, model_file, folder, state, study_path):
    from .load_sharing_tool import run_load_sharing
    from .static_optimization_tool import write_static_optimization
    model = _so_model(model_file, t, state)
    res = run_load_sharing(model, _motion(folder, t, state), external_loads=_loads(t, folder, state),
                           lowpass_hz=t.options.get("lowpass_hz"),
                           activation_exponent=t.options.get("activation_exponent") or 2.0)
    with output_group():
        outs = write_static_optimization(res, folder, t.name)
    musc = [i for i, n in enumerate(res.names) if n in model.forces and model.forces[n].is_muscle]
    m = {}
    if musc:
        m.update(so_max_muscle_activation=float(np.max(np.asarray(res.activations)[:, musc])),
                 so_peak_muscle_force_N=float(np.max(np.abs(np.asarray(res.forces)[:, musc]))))
    return outs, m


def _step_jr(t, model_file, folder, state, study_path):
    from ..io.sto import read_sto
    from ..tables import Table
    from .analyze_tool import run_joint_reaction, write_joint_reactions
    model = _so_model(model_file, t, state)
    forces = read_sto(folder / f"{t.name}_StaticOptimization_force.sto")
    keep = [i for i, n in enumerate(forces.labels) if n in model.forces]   # not the external forces
    forces = Table(name=forces.name, time=forces.time, labels=[forces.labels[i] for i in keep],
                   data=np.asarray(forces.data)[:, keep], in_degrees=False)
    res = run_joint_reaction(model, _motion(folder, t, state), forces=forces,
                             external_loads=_loads(t, folder, state), joints=t.options.get("joints"),
                             lowpass_hz=t.options.get("lowpass_hz"), accelerations="forward",
                             time_range=(float(forces.time[0]), float(forces.time[-1])))
    out = write_joint_reactions(res, folder / f"{t.name}_JointReaction_ReactionLoads.sto")
    tab = res.to_table()
    best, joint = -1.0, ""
    for j, lb in enumerate(tab.labels):
        if lb.endswith("_fx") and not lb.startswith("ground_"):
            base = lb[:-3]
            cols = [tab.labels.index(base + s) for s in ("_fx", "_fy", "_fz")]
            peak = float(np.max(np.linalg.norm(np.asarray(tab.data)[:, cols], axis=1)))
            if peak > best:
                best, joint = peak, base
    m = {"jr_peak_force_N": best, "jr_peak_joint": joint} if joint else {}
    return [out], m


_STEP_FUNCS = {"ik": _step_ik, "id": _step_id, "so": _step_so, "jr": _step_jr}
