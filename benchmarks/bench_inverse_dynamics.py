"""Inverse dynamics: OpenSim 4.6's InverseDynamicsTool vs arthron, side by side in one process.

Run:  python benchmarks/bench_inverse_dynamics.py
Prints wall times (median of 3) and ratios for arm26 (121 frames), Gait2354 walk (73 frames) and
a 10,000-frame trial made by tiling the Gait2354 motion. Both sides include the preprocessing
(6 Hz filter, splines) and exclude model loading; arthron's per-frame solver cost is also shown
without preprocessing (median of 5), for the default frames-last core
(:mod:`arthron.multibody.frames_last`) and the frames-first reference
(``inverse_dynamics(..., core="reference")``). For scale: a compiled rigid-body library
(Pinocchio's RNEA) needs about 2.3 µs per frame on Gait2354. BLAS runs single-threaded
(OMP/OPENBLAS/MKL_NUM_THREADS=1, set before numpy is imported); the load average is printed
before and after (other jobs slow both sides alike).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (import_opensim, ARM, DATA, GAIT, GAIT_IK, GAIT_MODEL,  # noqa: E402
                     median_time, tiled_motion)

from arthron.io.osim import read_osim  # noqa: E402
from arthron.io.setup import read_external_loads  # noqa: E402
from arthron.io.sto import read_sto, write_sto  # noqa: E402
from arthron.multibody.kinematics import compile_model  # noqa: E402
from arthron.solvers.inverse_dynamics import inverse_dynamics, run_inverse_dynamics  # noqa: E402

ARM_IK = DATA / "opensim-models/Tutorials/Computed_Muscle_Control/OutputReference/InverseKinematics/arm26_InverseKinematics.mot"
GRF_XML = GAIT / "subject01_walk1_grf.xml"


def opensim_id(osim, model, coords, t0, t1, lowpass, ext=None):
    out = tempfile.mkdtemp()

    def run():
        tool = osim.InverseDynamicsTool()
        tool.setModel(model)
        tool.setCoordinatesFileName(str(coords))
        tool.setStartTime(t0)
        tool.setEndTime(t1)
        tool.setLowpassCutoffFrequency(lowpass)
        ex = osim.ArrayStr()
        ex.append("Muscles")
        tool.setExcludedForces(ex)
        if ext:
            tool.setExternalLoadsFileName(str(ext))
        tool.setResultsDir(out)
        tool.setOutputGenForceFileName("id.sto")
        tool.run()
    return run


def main():
    osim = import_opensim()
    rows = []
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()}); "
          f"BLAS threads: {os.environ['OPENBLAS_NUM_THREADS']}")
    cwd = os.getcwd()
    cases = [
        ("arm26 (121 frames)", ARM, ARM_IK, None, (0.0, 1.0), 6.0),
        ("Gait2354 walk (73 frames)", GAIT_MODEL, GAIT_IK, GRF_XML, (0.4, 1.6), 6.0),
    ]
    tmp = Path(tempfile.mkdtemp())
    long = tiled_motion(10_000)
    long_path = tmp / "tiled_10000.mot"
    write_sto(long_path, long)
    cases.append(("Gait2354 tiled (10,000 frames)", GAIT_MODEL, long_path, None, (long.time[0], long.time[-1]), -1.0))
    for label, model_path, coords, ext, (t0, t1), lp in cases:
        model = read_osim(model_path)
        tree = compile_model(model)
        motion = read_sto(coords)
        extl = read_external_loads(ext) if ext else None
        res = run_inverse_dynamics(model, motion, external_loads=extl, lowpass_hz=lp, time_range=(t0, t1), tree=tree)
        T = len(res.time)
        ta = median_time(lambda: run_inverse_dynamics(model, motion, external_loads=extl, lowpass_hz=lp,
                                                      time_range=(t0, t1), tree=tree))
        q, qd, qdd = res.q, res.qd, res.qdd
        ts = median_time(lambda: inverse_dynamics(tree, q, qd, qdd), n=5)
        tr = median_time(lambda: inverse_dynamics(tree, q, qd, qdd, core="reference"), n=5)
        to = float("nan")
        if osim is not None:
            os.chdir(model_path.parent)
            om = osim.Model(str(model_path))
            om.initSystem()
            os.chdir(cwd)
            to = median_time(opensim_id(osim, om, coords, t0, t1, lp, ext), n=1 if T > 1000 else 3)
        rows.append((label, T, to, ta, ts, tr))
    print(f"{'case':34s} {'frames':>7s} {'OpenSim s':>10s} {'arthron s':>10s} {'ratio':>7s} "
          f"{'OpenSim µs/fr':>14s} {'arthron µs/fr':>14s} {'solver µs/fr':>13s} {'reference':>10s}")
    for label, T, to, ta, ts, tr in rows:
        print(f"{label:34s} {T:7d} {to:10.4f} {ta:10.4f} {to / ta:7.1f} {1e6 * to / T:14.1f} "
              f"{1e6 * ta / T:14.1f} {1e6 * ts / T:13.2f} {1e6 * tr / T:10.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
