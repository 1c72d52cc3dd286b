"""``arthron batch STUDY.toml``: every subject and trial of a study through the pipeline
scale → IK → ID → load sharing (static optimization) → joint reactions (any prefix), on a local
process pool or a Dask distributed cluster, with one folder per subject and trial, a summary
table, and resume.

Work is split into two kinds of task (:mod:`arthron.tools.batch_tasks`; this module runs them,
collects the summary and checks studies), each a plain function of picklable data run unchanged by
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
import io as _io
import os
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as _cf_wait
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ArthronError, OptionError
from ..io.files import atomic_write
from ..io.study import Study, TrialSpec, read_study
from .batch_tasks import (  # noqa: F401  (SUMMARY_COLUMNS and the tasks are public here too)
    _BLAS_ENV, SUMMARY_COLUMNS, error_text, generic_model, marker_map_problems, step_fingerprints,
    subject_fingerprint, subject_task, trial_task,
)

__all__ = ["run_batch", "BatchResult", "subject_task", "trial_task", "check_study", "SUMMARY_COLUMNS",
           "read_summary", "write_summary", "subject_fingerprint", "marker_map_problems"]

_NUMERIC = {"time_s", "subject_mass_kg", "ik_frames", "ik_markers", "ik_rms_mean_mm", "ik_rms_max_mm",
            "ik_max_marker_error_mm", "id_peak_moment_Nm", "id_peak_residual_force_N",
            "so_max_muscle_activation", "so_peak_muscle_force_N", "jr_peak_force_N"}


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
                    r = {"status": "failed", "error": f"worker failed: {error_text(e)}"}
                if what == "subject":
                    advance("subject")
                    subj_rows[s.name] = r
                    for t in extra:
                        if r["status"] == "failed":
                            rows[(s.name, t.name)] = _failed_row(t, study.steps, out, "scale",
                                                                 f"subject '{s.name}': {r['error']}")
                            advance("trial")
                            continue
                        fps = step_fingerprints(t, fp, study.steps)
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
                    model = generic_model(s)
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
