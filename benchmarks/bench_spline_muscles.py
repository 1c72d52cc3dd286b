"""Spline-curve muscles (Schutte1993Muscle_Deprecated): OpenSim 4.6's StaticOptimization with
``use_muscle_physiology`` on DAS4 against arthron's, side by side in one process, and arthron's
force per activation alone.

Run:  python benchmarks/bench_spline_muscles.py [--rounds=3]

Case: DAS4 (``arm-model/das4_v4.osim``, 164 Schutte1993Muscle_Deprecated muscles), the slow
generated motion of ``tests/test_spline_muscles.py`` (21 frames over 1 s), reserves of 1 N·m
(the floating thorax's 1e4), StaticOptimization from 0.4 to 0.55 s (4 frames), 6 Hz. Both
sides construct the tool from the setup XML and run it (model loading and the result files
included; arthron: ``run_static_optimization_from_setup``), interleaved in rounds (one OpenSim
run, three arthron runs; medians). Then arthron's force per activation
(``force_length_velocity``: the replayed ``computeIsometricForce`` of 164 muscles) for 101
frames. The largest activation difference is printed. Other sessions share the machine: the
load average is printed at the start and the end.

Measured 2026-11-24 (2 cores shared with three other sessions, load 2.3-2.4; 2 rounds):
OpenSim 4.30 s, arthron 0.400 s (ratio 10.8; both mostly model loading and paths at 4 frames);
max |Δa| 4.9e-3; arthron's objective 0.26-0.34 % below OpenSim's at each frame; force per
activation of the 164 muscles for 101 frames 0.33 s (0.28 s once the passive curve is evaluated
once per step of the isometric search, median of 7).
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import DATA, ROOT, import_opensim

sys.path.insert(0, str(ROOT / "tests"))
DAS4 = DATA / "arm-model" / "das4_v4.osim"


def main(rounds: int = 3):
    from conftest import static_optimization_setup
    from test_spline_muscles import _das4_motion
    from arthron.io.osim import read_osim, write_osim
    from arthron.io.sto import read_sto
    from arthron.models.muscles import force_length_velocity, muscle_parameters
    from arthron.tools.load_sharing_tool import add_reserves
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    osim = import_opensim()
    print("load average at start:", os.getloadavg())
    tmp = Path(tempfile.mkdtemp(prefix="arthron-bench-spline-"))
    model = add_reserves(read_osim(DAS4), 1.0)
    for f in model.forces.values():
        if f.name.startswith("TH_") and f.name.endswith("_reserve"):
            f.optimal_force = 1e4
    write_osim(tmp / "das4r.osim", model)
    mot = _das4_motion(model, tmp / "m.mot")
    for who in ("osim", "arthron"):
        (tmp / f"so_{who}.xml").write_text(static_optimization_setup(
            "das4", tmp / "das4r.osim", mot, tmp / f"res_{who}", 0.4, 0.55, physiology=True))
    cwd = os.getcwd()
    os.chdir(tmp)                      # opensim.log lands here
    t_os, t_ar = [], []
    try:
        for _ in range(2):
            run_static_optimization_from_setup(tmp / "so_arthron.xml")
        for _ in range(rounds):
            t0 = time.perf_counter()
            osim.AnalyzeTool(str(tmp / "so_osim.xml")).run()
            t_os.append(time.perf_counter() - t0)
            for _ in range(3):
                t0 = time.perf_counter()
                run_static_optimization_from_setup(tmp / "so_arthron.xml")
                t_ar.append(time.perf_counter() - t0)
    finally:
        os.chdir(cwd)
    ref = read_sto(next((tmp / "res_osim").glob("*_activation.sto")))
    got = read_sto(next((tmp / "res_arthron").glob("*_activation.sto")))
    A = np.array([ref.data[:, ref.labels.index(n)] for n in got.labels]).T
    mo, ma = statistics.median(t_os), statistics.median(t_ar)
    print(f"DAS4 SO with physiology, 4 frames: OpenSim {mo:.2f} s, arthron {ma:.3f} s, "
          f"ratio {mo / ma:.1f}; max |Δa| {np.abs(A - got.data).max():.2e}; objective "
          f"arthron/OpenSim {((got.data ** 2).sum(1) / (A ** 2).sum(1)).round(4)}")
    m0 = read_osim(DAS4)
    par = muscle_parameters(m0, list(m0.muscles))
    rng = np.random.default_rng(0)
    L = (par.optimal_fiber_length + par.tendon_slack_length) * rng.uniform(0.8, 1.3, (101, len(par.names)))
    V = rng.uniform(-0.2, 0.2, L.shape)
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        force_length_velocity(par, L, V)
        ts.append(time.perf_counter() - t0)
    print(f"force per activation of 164 Schutte muscles, 101 frames: {statistics.median(ts):.3f} s")
    print("load average at end:", os.getloadavg())


if __name__ == "__main__":
    r = [int(a.split("=")[1]) for a in sys.argv[1:] if a.startswith("--rounds=")]
    main(r[0] if r else 3)
