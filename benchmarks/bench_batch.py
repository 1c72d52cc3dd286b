"""``arthron batch`` throughput: scale + IK + ID on the Gait2354 pipeline, local process pool
against a plain sequential loop, and the Dask scheduling overhead per task.

Run:  python benchmarks/bench_batch.py [--subjects 4] [--trials 3] [--seconds 0.4] [--repeat 3]

The study: ``--subjects`` subjects scaled by subject01's ScaleTool setup with different masses
(55, 65, 75 ... kg), each with ``--trials`` trials cut from ``subject01_walk1.trc`` and its GRF
(``--seconds`` of frames each, at different starts), steps scale → ik → id.

Cases (every run into a fresh folder, so everything is computed; median of ``--repeat``):

* OpenSim 4.6: ScaleTool (mass set per subject), InverseKinematicsTool and
  InverseDynamicsTool on the same setups and time ranges, one after the other, for reference;
* sequential: ``run_batch(jobs=1)``, the same task functions called one after the other in
  this process (the plain loop a user would write around the tools);
* pool: ``run_batch(jobs=N)`` (N = the cores; spawned workers, one BLAS thread each),
  worker start-up included;
* dask: ``run_batch(client=...)`` on a ``LocalCluster`` of N single-threaded worker processes
  (cluster start-up excluded);
* scheduling overhead per task: the same study run again with every step already complete
  (each task only reads its completion markers, ~ms), with the inline loop, the pool and Dask;
  (time - inline time) / tasks.

Trials per minute count trials (scale is per subject, inside the time). Other processes share
this machine: the load average is printed; ratios below the core count are expected when it is
above zero.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "src"))

from arthron.tools.batch_tool import run_batch  # noqa: E402

PIPE = DATA / "opensim-models" / "Pipelines" / "Gait2354_Simbody"
GENERIC = DATA / "opensim-models" / "Models" / "Gait2354_Simbody" / "gait2354_simbody.osim"


def write_study(folder: Path, n_subjects: int, n_trials: int, seconds: float) -> Path:
    text = '[study]\nname = "bench"\noutput = "out"\nsteps = ["scale", "ik", "id"]\n\n[defaults]\nlowpass_hz = 6\n'
    for i in range(n_subjects):
        text += (f'\n[[subjects]]\nname = "s{i + 1}"\nscale_setup = "{PIPE / "subject01_Setup_Scale.xml"}"\n'
                 f'model = "{GENERIC}"\nmass = {55 + 10 * i}\n')
        for j in range(n_trials):
            t0 = 0.4 + (j * 0.37) % (2.0 - seconds)
            text += (f'\n  [[subjects.trials]]\n  name = "walk{j + 1}"\n'
                     f'  markers = "{PIPE / "subject01_walk1.trc"}"\n'
                     f'  external_loads = "{PIPE / "subject01_walk1_grf.xml"}"\n'
                     f'  ik_setup = "{PIPE / "subject01_Setup_IK.xml"}"\n'
                     f'  time_range = [{t0:.3f}, {t0 + seconds:.3f}]\n')
    p = folder / "study.toml"
    p.write_text(text)
    return p


def opensim_loop(osim, work: Path, n_subjects: int, n_trials: int, seconds: float):
    """The same scale + IK + ID with OpenSim 4.6's tools, one after the other (files copied
    into ``work``: 4.6 resolves names against the setup's folder and the cwd)."""
    for f in ("subject01_Setup_Scale.xml", "gait2354_Scale_MarkerSet.xml", "subject01_static.trc",
              "subject01_Setup_IK.xml", "subject01_walk1.trc", "subject01_walk1_grf.xml",
              "subject01_walk1_grf.mot"):
        if not (work / f).exists():
            (work / f).write_bytes((PIPE / f).read_bytes())
    if not (work / "gait2354_simbody.osim").exists():
        (work / "gait2354_simbody.osim").write_bytes(GENERIC.read_bytes())
    cwd = os.getcwd()
    os.chdir(work)
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)                 # OpenSim's tools print model summaries on stdout
    try:
        for i in range(n_subjects):
            sc = osim.ScaleTool(str(work / "subject01_Setup_Scale.xml"))
            sc.setSubjectMass(55 + 10 * i)
            sc.run()
            for j in range(n_trials):
                t0 = 0.4 + (j * 0.37) % (2.0 - seconds)
                ik = osim.InverseKinematicsTool(str(work / "subject01_Setup_IK.xml"))
                ik.set_model_file(str(work / "subject01_simbody.osim"))
                ik.setMarkerDataFileName(str(work / "subject01_walk1.trc"))
                ik.setStartTime(t0)
                ik.setEndTime(t0 + seconds)
                ik.setOutputMotionFileName(str(work / f"ik_{i}_{j}.mot"))
                ik.run()
                model = osim.Model(str(work / "subject01_simbody.osim"))
                model.initSystem()
                tool = osim.InverseDynamicsTool()
                tool.setModel(model)
                tool.setCoordinatesFileName(str(work / f"ik_{i}_{j}.mot"))
                tool.setStartTime(t0)
                tool.setEndTime(t0 + seconds)
                tool.setLowpassCutoffFrequency(6)
                ex = osim.ArrayStr()
                ex.append("Muscles")
                tool.setExcludedForces(ex)
                tool.setExternalLoadsFileName(str(work / "subject01_walk1_grf.xml"))
                tool.setResultsDir(str(work))
                tool.setOutputGenForceFileName(f"id_{i}_{j}.sto")
                tool.run()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
        os.chdir(cwd)


def timed(fn, repeat, fresh):
    times, res = [], None
    for _ in range(repeat):
        fresh()
        t = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--subjects", type=int, default=4)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=0.4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    n_tasks = a.subjects * (1 + a.trials)
    n_trials = a.subjects * a.trials
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.2f} (other processes share the machine)")
    print(f"study: {a.subjects} subjects x {a.trials} trials of {a.seconds:g} s (scale + ik + id), "
          f"{n_tasks} tasks")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        study = write_study(tmp, a.subjects, a.trials, a.seconds)
        out = tmp / "out"

        def fresh():
            shutil.rmtree(out, ignore_errors=True)

        def keep():
            pass
        run_batch(study, jobs=1, progress=False, only=["s1/walk1"])       # imports, caches warm
        t_seq, r = timed(lambda: run_batch(study, jobs=1, progress=False), a.repeat, fresh)
        assert r.n_failed == 0, [x["error"] for x in r.rows]
        frames = sum(x["ik_frames"] for x in r.rows)
        t_pool, r = timed(lambda: run_batch(study, jobs=a.jobs, progress=False), a.repeat, fresh)
        assert r.n_failed == 0
        # scheduling overhead of the pool: every step complete (before Dask starts threads here)
        t_inline, _ = timed(lambda: run_batch(study, jobs=1, progress=False), a.repeat, keep)
        t_pool0, _ = timed(lambda: run_batch(study, jobs=a.jobs, progress=False), a.repeat, keep)
        print(f"\n{'':34s}{'time s':>9s}{'trials/min':>12s}{'vs sequential':>15s}")
        print(f"{'sequential loop (jobs=1)':34s}{t_seq:9.2f}{60 * n_trials / t_seq:12.1f}{1.0:15.2f}")
        print(f"{f'process pool (jobs={a.jobs})':34s}{t_pool:9.2f}{60 * n_trials / t_pool:12.1f}"
              f"{t_seq / t_pool:15.2f}")
        try:
            import opensim as osim
        except ImportError:
            print("OpenSim 4.6 not installed (extra 'interop'): no OpenSim loop")
        else:
            osim.Logger.setLevelString("error")
            work = tmp / "opensim"
            work.mkdir()
            t_os, _ = timed(lambda: opensim_loop(osim, work, a.subjects, a.trials, a.seconds),
                            a.repeat, keep)
            print(f"{'OpenSim 4.6 tools, sequential':34s}{t_os:9.2f}{60 * n_trials / t_os:12.1f}"
                  f"{t_seq / t_os:15.2f}")
        try:
            import distributed
        except ImportError:
            print("dask: distributed is not installed (pip install 'arthron[cluster]')")
            return
        env = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
        os.environ.update(env)
        t = time.perf_counter()
        with distributed.LocalCluster(n_workers=a.jobs, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            t_start = time.perf_counter() - t
            from arthron.tools.batch_tool import _warm_imports
            client.run(_warm_imports)          # the workers import what the tasks use
            t_dask, r = timed(lambda: run_batch(study, client=client, progress=False), a.repeat, fresh)
            assert r.n_failed == 0
            print(f"{f'dask LocalCluster ({a.jobs} processes)':34s}{t_dask:9.2f}{60 * n_trials / t_dask:12.1f}"
                  f"{t_seq / t_dask:15.2f}   (cluster start-up {t_start:.1f} s, not included)")
            # scheduling overhead: every step complete, tasks only read their markers
            run_batch(study, jobs=1, progress=False)
            t_dask0, _ = timed(lambda: run_batch(study, client=client, progress=False), a.repeat, keep)
        print(f"\nscheduling overhead per task ({n_tasks} tasks, all steps already complete; inline "
              f"{1e3 * t_inline / n_tasks:.1f} ms/task):")
        print(f"  dask   {1e3 * (t_dask0 - t_inline) / n_tasks:8.1f} ms/task")
        print(f"  pool   {1e3 * (t_pool0 - t_inline) / n_tasks:8.1f} ms/task (worker start-up included: "
              f"{t_pool0 - t_inline:.2f} s in all)")
        print(f"\n{frames} IK frames per run; sequential compute {1e3 * t_seq / n_tasks:.0f} ms/task")


if __name__ == "__main__":
    main()
