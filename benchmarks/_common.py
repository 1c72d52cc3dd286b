"""Shared pieces of the benchmark scripts: data paths, timing, tiled trials, the environment of
fresh-process timings (:func:`fresh_process_env`)."""
from __future__ import annotations

import os
import statistics
import tempfile
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "src"))

REF = DATA / "opensim-reference"
ARM = DATA / "opensim-models/Models/Arm26/arm26.osim"
GAIT = DATA / "opensim-models/Pipelines/Gait2354_Simbody"
GAIT_MODEL = GAIT / "OutputReference/subject01_simbody.osim"
GAIT_IK = GAIT / "OutputReference/subject01_walk1_ik.mot"


_PYCACHE: list = []


def fresh_process_env(**extra) -> dict:
    """The environment of a benchmark's fresh ``python`` processes (arthron's and OpenSim's
    alike): this checkout's ``src`` on ``PYTHONPATH``, single-threaded BLAS, and bytecode cached
    as in an installed package. ``PYTHONDONTWRITEBYTECODE`` is removed and ``PYTHONPYCACHEPREFIX``
    points to one private temporary folder per benchmark run, so that after one untimed warm-up
    run of a command its modules (arthron's, numpy's, opensim's) load from bytecode instead of
    being compiled from source in every process (about 50 ms of an arthron command on a machine
    that sets ``PYTHONDONTWRITEBYTECODE``; a pip install has the bytecode). Run every timed
    command once untimed first."""
    if not _PYCACHE:
        _PYCACHE.append(tempfile.mkdtemp(prefix="arthron-bench-pyc-"))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONPYCACHEPREFIX=_PYCACHE[0])
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(v, "1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra)
    return env


def median_time(fn, n=3):
    """Median wall time (s) of ``n`` calls of ``fn``."""
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def tiled_motion(n_frames, motion=GAIT_IK):
    """The Gait2354 IK motion repeated to ``n_frames`` rows on a uniform time grid."""
    from arthron.io.sto import Table, read_sto
    mot = read_sto(motion)
    reps = int(np.ceil(n_frames / len(mot.time)))
    dt = mot.time[1] - mot.time[0]
    data = np.concatenate([mot.data] * reps)[:n_frames]
    t = mot.time[0] + dt * np.arange(n_frames)
    return Table(name="tiled", time=t, labels=mot.labels, data=data, in_degrees=mot.in_degrees)


def import_opensim():
    """The ``opensim`` module with its log at "error", or None (printed) when not installed:
    the benchmarks then time arthron alone."""
    try:
        import opensim as osim
    except ImportError:
        print("opensim not installed: arthron timings only")
        return None
    osim.Logger.setLevelString("error")
    return osim
