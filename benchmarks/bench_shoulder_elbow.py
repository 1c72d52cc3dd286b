"""The built-in shoulder–elbow model: build, export, load and inverse dynamics, arthron vs OpenSim 4.6.

Run:  python benchmarks/bench_shoulder_elbow.py
Prints wall times (median of 5; other processes may share the machine) of: importing the
builder and building the model in a fresh process (the tables are parsed once and cached);
building again in the same process; OpenSim loading the exported .osim (``Model`` +
``initSystem``) against arthron's compile; inverse dynamics of 130 frames (arthron, vectorized)
against OpenSim's InverseDynamicsSolver frame by frame, and the path lengths of all strings.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fresh_process_env, median_time  # noqa: E402

from arthron.errors import ArthronWarning  # noqa: E402
from arthron.io.osim import write_osim  # noqa: E402
from arthron.models.shoulder_elbow import build_shoulder_elbow_model  # noqa: E402
from arthron.multibody.inverse_dynamics import inverse_dynamics  # noqa: E402
from arthron.multibody.kinematics import compile_model  # noqa: E402
from arthron.multibody.paths import compile_paths, path_lengths  # noqa: E402


def main():
    src = str(Path(__file__).resolve().parents[1] / "src")
    code = ("import time; t=time.perf_counter(); "
            "from arthron.models.shoulder_elbow import build_shoulder_elbow_model as b; b(); "
            "print(time.perf_counter()-t)")
    env = fresh_process_env(PYTHONPATH=src)     # bytecode cached as installed: one untimed run
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)
    fresh = sorted(float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                        text=True, check=True).stdout) for _ in range(3))[1]
    print(f"import + first build (fresh process): {fresh * 1e3:8.1f} ms")
    print(f"build again (cached tables):          {median_time(build_shoulder_elbow_model, 5) * 1e3:8.1f} ms")
    m = build_shoulder_elbow_model()
    t_compile = median_time(lambda: compile_model(m), 5)
    tree = compile_model(m)
    rng = np.random.default_rng(0)
    T = 130
    Q = tree.default_q + rng.uniform(-0.5, 0.5, (T, tree.nq))
    QD = rng.normal(size=Q.shape)
    QDD = rng.normal(size=Q.shape)
    t_id = median_time(lambda: inverse_dynamics(tree, Q, QD, QDD), 5)
    ps = compile_paths(m, tree)
    t_len = median_time(lambda: path_lengths(ps, tree, Q), 3)
    print(f"arthron compile_model:                {t_compile * 1e3:8.1f} ms")
    print(f"arthron ID, {T} frames:                {t_id * 1e3:8.1f} ms")
    print(f"arthron path lengths, {T} frames x {len(m.forces)} strings: {t_len * 1e3:8.1f} ms")
    try:
        import opensim as osim
    except ImportError:
        print("OpenSim not installed: no comparison")
        return
    osim.Logger.setLevelString("error")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "se.osim"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ArthronWarning)
            write_osim(path, m)
        old = os.getcwd()
        os.chdir(d)
        try:
            def load():
                om = osim.Model(str(path))
                om.initSystem()
            t_load = median_time(load, 5)
            om = osim.Model(str(path))
            s = om.initSystem()
        finally:
            os.chdir(old)
        fs = om.getForceSet()
        for i in range(fs.getSize()):
            fs.get(i).setAppliesForce(s, False)
        cset = om.getCoordinateSet()
        idx = [0] * tree.nq
        for n in tree.coordinate_names:
            s.setU(osim.Vector(tree.nq, 0.0))
            cset.get(n).setSpeedValue(s, 1.0)
            idx[int(np.argmax([s.getU().get(i) for i in range(tree.nq)]))] = tree.coordinate_index(n)
        ids = osim.InverseDynamicsSolver(om)

        def os_id():
            for k in range(T):
                s.setQ(osim.Vector(Q[k, idx].tolist()))
                s.setU(osim.Vector(QD[k, idx].tolist()))
                ids.solve(s, osim.Vector(QDD[k, idx].tolist()))
        t_osid = median_time(os_id, 3)
    print(f"OpenSim load + initSystem:            {t_load * 1e3:8.1f} ms  (ratio to arthron build+compile "
          f"{t_load / (median_time(build_shoulder_elbow_model, 3) + t_compile):.1f})")
    print(f"OpenSim ID, {T} frames:                {t_osid * 1e3:8.1f} ms  (ratio {t_osid / t_id:.1f})")


if __name__ == "__main__":
    main()
