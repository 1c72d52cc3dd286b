"""``arthron batch STUDY.toml``: every subject and trial of a study through the pipeline
scale → IK → ID → load sharing (static optimization) → joint reactions (any prefix), on a local
process pool or a Dask distributed cluster, with one folder per subject and trial, a summary
table, and resume.

Work is split into two kinds of task, each a plain function of picklable data run unchanged by
every executor (in-process, :class:`concurrent.futures.ProcessPoolExecutor`, or
``distributed.Client.submit``):

- :func:`subject_task` scales one subject (ScaleTool setup, :mod:`arthron.tools.scale_tool`;
  anthropometric, :mod:`arthron.tools.anthropometric_tool`; or the model as it is) and writes
  ``OUT/<subject>/<subject>.osim``;
- :func:`trial_task` runs one trial's steps with the subject's model through the tools
  (:mod:`~arthron.tools.ik_tool`, :mod:`~arthron.tools.id_tool`,
  :mod:`~arthron.tools.load_sharing_tool`, :mod:`~arthron.tools.analyze_tool`) into
  ``OUT/<subject>/<trial>/`` under OpenSim's file names (``<trial>_ik.mot``,
  ``<trial>_ik_marker_errors.sto``, ``<trial>_inverse_dynamics.sto``,
  ``<trial>_StaticOptimization_{activation,force}.sto``,
  ``<trial>_JointReaction_ReactionLoads.sto``). A C3D trial is first exported
  (:func:`arthron.tools.c3d_tool.export_c3d`) into ``input/`` of its folder.

Trials of a subject are submitted as soon as its model is written. A task never raises: an
error (a missing or malformed file, an unknown marker name, an infeasible frame) is recorded in
the trial's summary row with the file and line or key it names, and the other trials go on.

Resume: each step's outputs are written as one group (all or none,
:func:`arthron.io.files.output_group`), then a completion marker ``.done-<step>.json`` holding
a fingerprint of everything the step depends on (the study's options for it and the steps
before, the size and modification time of the input files) and the step's summary numbers.
A step whose marker matches and whose outputs exist is not recomputed (its numbers come from
the marker), so a killed run started again finishes the rest only.
"""
from __future__ import annotations

import csv
import hashlib
import io as _io
import json
import os
import time
import traceback
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as _cf_wait
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ArthronError, DataFileError, OptionError
from ..io.files import atomic_write, output_group
from ..io.study import Study, SubjectSpec, TrialSpec, read_study

__all__ = ["run_batch", "BatchResult", "subject_task", "trial_task", "check_study", "SUMMARY_COLUMNS",
           "read_summary", "write_summary", "subject_fingerprint", "marker_map_problems"]

#: columns of ``summary.csv`` (units in the names: mm, N·m as Nm, N, kg, s)
SUMMARY_COLUMNS = [
    "subject", "trial", "status", "failed_step", "error", "steps", "computed_steps", "resumed_steps",
    "time_s", "scaling", "subject_mass_kg", "markers_file", "ik_frames", "ik_markers",
    "ik_rms_mean_mm", "ik_rms_max_mm", "ik_max_marker_error_mm", "ik_max_error_marker",
    "id_peak_moment_Nm", "id_peak_moment_coordinate", "id_peak_residual_force_N",
    "so_max_muscle_activation", "so_peak_muscle_force_N", "jr_peak_force_N", "jr_peak_joint",
    "warnings", "folder"]

_NUMERIC = {"time_s", "subject_mass_kg", "ik_frames", "ik_markers", "ik_rms_mean_mm", "ik_rms_max_mm",
            "ik_max_marker_error_mm", "id_peak_moment_Nm", "id_peak_residual_force_N",
            "so_max_muscle_activation", "so_peak_muscle_force_N", "jr_peak_force_N"}

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


def _step_fingerprints(t: TrialSpec, subject_fp: str, steps) -> dict:
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
def _error_text(e: BaseException) -> str:
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
            row.update(status="failed", error=_error_text(e))
    row["warnings"] = _warning_text(caught)
    row["time_s"] = time.perf_counter() - t0
    return row


def _warning_text(caught) -> str:
    msgs = list(dict.fromkeys(str(w.message) for w in caught))
    return " | ".join(msgs[:5]) + (f" | (+{len(msgs) - 5} more)" if len(msgs) > 5 else "")


def _generic_model(s: SubjectSpec):
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
        model = _generic_model(s)
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
            row.update(status="failed", failed_step=step, error=_error_text(e))
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


# ------------------------------------------------------------------------------ executors
class _Inline:
    """Runs each task at submission (the sequential loop)."""

    def submit(self, fn, *args):
        f = Future()
        f.set_result(fn(*args))
        return f

    def wait(self, futures):
        return set(futures)

    def close(self):
        pass


def _warm_imports() -> None:
    """Import what the tasks use (once, in the process that forks the pool's workers, so that
    each worker starts with them loaded instead of paying the imports itself)."""
    from . import analyze_tool, anthropometric_tool, c3d_tool, id_tool, ik_tool  # noqa: F401
    from . import load_sharing_tool, scale_tool, static_optimization_tool  # noqa: F401
    from .. import runtime
    if not runtime.light_imports:     # the library's route: scipy's filters and splines
        import scipy.interpolate  # noqa: F401
        import scipy.signal  # noqa: F401


def _noop() -> int:
    return os.getpid()


class _Pool:
    """A local process pool. On Linux the workers are forked from this process after the tasks'
    modules are imported (each starts warm, with this process' ``runtime`` choices) when no
    other thread runs; otherwise they are spawned. BLAS is limited to one thread per worker (environment variables for
    spawned workers; threadpoolctl, when installed, in every task)."""

    def __init__(self, jobs):
        import multiprocessing as mp
        import sys
        self._env = {k: os.environ.get(k) for k in _BLAS_ENV}
        os.environ.update({k: "1" for k in _BLAS_ENV})    # inherited by spawned workers
        import threading
        # fork only from a single-threaded process (a thread holding a lock at the fork would
        # leave it held in the worker)
        method = "fork" if sys.platform.startswith("linux") and threading.active_count() == 1 else "spawn"
        if method == "fork":
            _warm_imports()
        self.ex = ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context(method))
        self.ex.submit(_noop).result()      # the workers start now, before any other thread

    def submit(self, fn, *args):
        return self.ex.submit(fn, *args)

    def wait(self, futures):
        return _cf_wait(futures, return_when=FIRST_COMPLETED).done

    def close(self):
        self.ex.shutdown(wait=True, cancel_futures=True)
        for k, v in self._env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class _Dask:
    """A Dask distributed client (given, or connected to ``address``)."""

    def __init__(self, client=None, address=None):
        try:
            import distributed
        except ImportError:
            raise OptionError("--scheduler needs the 'distributed' package (pip install "
                              "'arthron[cluster]')") from None
        self.distributed = distributed
        self.own = client is None
        if client is None:
            try:
                client = distributed.Client(address, timeout=20)
            except (OSError, TimeoutError, ValueError) as e:     # ValueError: not an address
                hint = " (give tcp://HOST:PORT)" if isinstance(e, ValueError) else ""
                raise OptionError(f"cannot reach the Dask scheduler at {address!r}: {e}{hint}") from None
        self.client = client

    def submit(self, fn, *args):
        return self.client.submit(fn, *args, pure=False)

    def wait(self, futures):
        return self.distributed.wait(list(futures), return_when="FIRST_COMPLETED").done

    def close(self):
        if self.own:
            self.client.close()


# ------------------------------------------------------------------------------ the run
@dataclass
class BatchResult:
    """What :func:`run_batch` did: ``rows`` (one dict per trial, :data:`SUMMARY_COLUMNS`, study
    order), ``subjects`` (one dict per subject), the ``summary`` CSV path (and ``parquet`` when
    pyarrow is installed), ``seconds``."""

    study: Study
    rows: list
    subjects: list
    summary: Path
    parquet: Path | None = None
    seconds: float = 0.0
    executor: str = ""
    failed: list = field(default_factory=list)

    @property
    def n_failed(self) -> int:
        return sum(r["status"] == "failed" for r in self.rows)


def _progress_bar(total_subjects, total_trials, enabled):
    """A rich progress bar of subjects and trials done, on stderr; silent when stderr is not a
    terminal or ``enabled`` is False. Returns (advance(kind), stop())."""
    if not enabled:
        return (lambda kind: None), (lambda: None)
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:
        return (lambda kind: None), (lambda: None)
    console = Console(stderr=True)
    if not console.is_terminal:
        return (lambda kind: None), (lambda: None)
    p = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                 TimeElapsedColumn(), console=console, transient=False)
    ids = {"subject": p.add_task("subjects", total=total_subjects),
           "trial": p.add_task("trials  ", total=total_trials)}
    p.start()
    return (lambda kind: p.advance(ids[kind])), p.stop


def run_batch(study, *, jobs: int | None = None, scheduler: str | None = None, client=None,
              only=None, progress: bool = True, output=None) -> BatchResult:
    """Run a study (a :class:`~arthron.io.study.Study` or the path of its file).

    Parameters
    ----------
    jobs : worker processes of the local pool (default: the number of cores); 1 runs the
        tasks one after the other in this process (the sequential loop)
    scheduler : address of a Dask distributed scheduler (``tcp://host:8786``): the same tasks
        run on its workers (start them with ``OMP_NUM_THREADS=1``); needs ``distributed``
    client : a ``distributed.Client`` to use instead (e.g. on a ``LocalCluster``)
    only : names of subjects or ``subject/trial`` pairs to run (default all)
    progress : draw a progress bar of subjects and trials on a terminal
    output : the output folder (default the study's ``output``)

    Returns
    -------
    BatchResult; ``OUT/summary.csv`` (and ``summary.parquet`` with pyarrow) written whole.

    Raises
    ------
    DataFileError for a study file with structural errors (:func:`arthron.io.study.read_study`);
    OptionError for bad options (an unknown ``only`` name, an unreachable scheduler). Errors of
    subjects and trials are not raised: they are in the summary.
    """
    t_start = time.perf_counter()
    study = study if isinstance(study, Study) else read_study(study)
    out = Path(output) if output is not None else study.output
    subjects = _select(study, only)
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        raise OptionError(f"jobs must be a positive integer, got {jobs!r}")
    if client is not None or scheduler is not None:
        ex, kind = _Dask(client, scheduler), "dask"
    elif (jobs or os.cpu_count() or 1) == 1:
        ex, kind = _Inline(), "sequential"
    else:
        ex, kind = _Pool(jobs or os.cpu_count()), f"pool({jobs or os.cpu_count()})"
    n_trials = sum(len(ts) for _, ts in subjects)
    advance, stop = _progress_bar(len(subjects), n_trials, progress)
    rows, subj_rows, pending = {}, {}, {}
    try:
        for s, trials in subjects:
            fp = subject_fingerprint(s)
            pending[ex.submit(subject_task, s, str(out), fp)] = ("subject", s, trials, fp)
        while pending:
            for f in ex.wait(list(pending)):
                what, s, extra, fp = pending.pop(f)
                try:
                    r = f.result()
                except Exception as e:  # noqa: BLE001 — a worker that died: reported
                    r = {"status": "failed", "error": f"worker failed: {_error_text(e)}"}
                if what == "subject":
                    advance("subject")
                    subj_rows[s.name] = r
                    for t in extra:
                        if r["status"] == "failed":
                            rows[(s.name, t.name)] = _failed_row(t, study.steps, out, "scale",
                                                                 f"subject '{s.name}': {r['error']}")
                            advance("trial")
                            continue
                        fps = _step_fingerprints(t, fp, study.steps)
                        pending[ex.submit(trial_task, t, r["model"], str(out), study.steps, fps,
                                          str(study.path))] = ("trial", s, t, fp)
                else:
                    advance("trial")
                    if "subject" not in r:
                        r = _failed_row(extra, study.steps, out, "", r.get("error", ""))
                    rows[(s.name, extra.name)] = r
    finally:
        stop()
        ex.close()
    ordered = []
    for s, trials in subjects:
        sr = subj_rows.get(s.name, {})
        for t in trials:
            r = rows[(s.name, t.name)]
            r.update(scaling=s.scaling, subject_mass_kg=sr.get("subject_mass_kg", ""))
            if sr.get("warnings") and "scale" in study.steps:
                r["warnings"] = " | ".join(x for x in (sr["warnings"], r.get("warnings", "")) if x)
            ordered.append(r)
    csv_path, pq_path = write_summary(_whole_study(study, ordered, out), out)
    return BatchResult(study=study, rows=ordered, subjects=[subj_rows[s.name] for s, _ in subjects],
                       summary=csv_path, parquet=pq_path, seconds=time.perf_counter() - t_start,
                       executor=kind)


def _whole_study(study: Study, rows, out) -> list:
    """Rows for every trial of the study, in its order: the ones just run, else those of the
    existing ``summary.csv`` (a run with ``only``), else ``not run``."""
    new = {(r["subject"], r["trial"]): r for r in rows}
    old = {}
    if len(new) < len(study.trials()) and (Path(out) / "summary.csv").is_file():
        try:
            old = {(r["subject"], r["trial"]): r for r in read_summary(Path(out) / "summary.csv")}
        except (OSError, csv.Error, KeyError):
            old = {}
    whole = []
    for s, t in study.trials():
        r = new.get((s.name, t.name)) or old.get((s.name, t.name))
        if r is None:
            r = _failed_row(t, study.steps, out, "", "")
            r.update(status="not run", scaling=s.scaling)
        whole.append(r)
    return whole


def _failed_row(t: TrialSpec, steps, out, step, error) -> dict:
    row = {c: "" for c in SUMMARY_COLUMNS}
    row.update(subject=t.subject, trial=t.name, status="failed", failed_step=step, error=error,
               steps=" ".join(steps), markers_file=str(t.markers),
               folder=str(Path(out) / t.subject / t.name), time_s=0.0)
    return row


def _select(study: Study, only):
    if not only:
        return [(s, list(s.trials)) for s in study.subjects]
    want = set(only)
    names = {s.name for s in study.subjects} | {f"{s.name}/{t.name}" for s, t in study.trials()}
    unknown = sorted(want - names)
    if unknown:
        raise OptionError(f"--only names {unknown} that the study {study.path.name} lacks")
    sel = []
    for s in study.subjects:
        ts = [t for t in s.trials if s.name in want or f"{s.name}/{t.name}" in want]
        if ts:
            sel.append((s, ts))
    return sel


def _cell(v):
    if isinstance(v, float):
        return repr(v)
    return "" if v is None else str(v)


def write_summary(rows, out) -> tuple:
    """Write ``out/summary.csv`` (always) and ``out/summary.parquet`` (when pyarrow is
    installed), each whole or not at all. Returns (csv path, parquet path or None)."""
    out = Path(out)
    buf = _io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SUMMARY_COLUMNS)
    for r in rows:
        w.writerow([_cell(r.get(c, "")) for c in SUMMARY_COLUMNS])
    csv_path = atomic_write(out / "summary.csv", buf.getvalue())
    pq_path = None
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return csv_path, None
    cols = {c: [r.get(c, "") for r in rows] for c in SUMMARY_COLUMNS}
    for c, v in cols.items():
        if c in _NUMERIC:             # rows merged from an earlier summary.csv hold text
            cols[c] = [float("nan") if x in ("", None) else float(x) for x in v]
        else:
            cols[c] = [str(x) for x in v]
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(cols), sink)
    pq_path = atomic_write(out / "summary.parquet", sink.getvalue().to_pybytes())
    return csv_path, pq_path


def read_summary(path) -> list:
    """The rows of a ``summary.csv`` (dicts of strings)."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def check_study(path) -> tuple:
    """Check a study without computing: the file's structure (raises like
    :func:`arthron.io.study.read_study`), then every subject's and trial's files and the
    marker names of ``marker_map`` against the trial files and the subjects' (generic) models.

    Returns (Study, list of problem messages, each naming the study file and key)."""
    from ..io.c3d import read_c3d
    from ..io.trc import read_trc
    study = read_study(path)
    problems = []
    for s in study.subjects:
        problems += s.problems
        markers = None
        if not s.problems:
            try:
                if s.scaling == "scaletool":
                    from .scale_tool import read_marker_set, read_scale_setup
                    from ..io.osim import read_osim
                    st = read_scale_setup(s.scale_setup, model_given=s.model is not None)
                    model = read_osim(s.model or st.model_file)
                    if st.marker_set_file is not None:
                        model.markers.update(read_marker_set(st.marker_set_file, model))
                else:
                    model = _generic_model(s)
                markers = set(model.markers)
            except ArthronError as e:
                problems.append(f"{study.path}: {s.key}: {e}")
        for t in s.trials:
            problems += t.problems
            if t.problems or not t.options.get("marker_map"):
                continue
            try:
                labels = (read_c3d(t.markers).markers.labels if t.markers.suffix.lower() == ".c3d"
                          else read_trc(t.markers).labels)
            except ArthronError as e:
                problems.append(f"{study.path}: {t.key}.markers: {e}")
                continue
            problems += [str(e) for e in marker_map_problems(t, labels, markers if markers is not None
                                                             else set((t.options["marker_map"]).values()),
                                                             study.path)]
    return study, problems
