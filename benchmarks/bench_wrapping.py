"""Muscle-path wrapping: NumPy reference vs the compiled (numba) kernels, and what it does to
the two users that wait on it.

Run:  python benchmarks/bench_wrapping.py [--mode numpy|kernels|auto] [--skip-opensim]

* arm26 StaticOptimization (121 frames, no muscle physiology, the task-1 setup of
  opensim-reference): OpenSim 4.6's AnalyzeTool and arthron's
  ``run_static_optimization_from_setup`` (model read, paths, QP, two .sto files written),
  side by side in this process, medians of 7 alternating runs; then arthron's
  ``moment_arms(..., return_lengths=True)`` on the same 121 frames.
* The built-in shoulder–elbow model (136 strings, 17 DAS4 wrap objects incl. Garner & Pandy
  obstacle sets), 130 random frames around the default pose: ``path_lengths`` and
  ``moment_arms(..., return_lengths=True)``.

``--mode`` selects the wrapping code: ``numpy`` (the reference, as with ARTHRON_NO_NUMBA=1),
``kernels`` (numba forced; the import and first load happen before the timings), ``auto``
(arthron's own rule, :func:`arthron.geometry.wrap_kernels.use_kernel`). Run on an arthron
without ``wrap_kernels`` it measures that version as is. Other processes may share the
machine: compare figures of one run, or run the modes back to back.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_static_optimization as B  # noqa: E402

from arthron.io.osim import read_osim  # noqa: E402
from arthron.io.sto import read_sto  # noqa: E402
from arthron.multibody import paths as P  # noqa: E402
from arthron.multibody.kinematics import compile_model  # noqa: E402
from _common import median_time as med  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("numpy", "kernels", "auto"), default="auto")
    ap.add_argument("--skip-opensim", action="store_true")
    a = ap.parse_args()
    try:
        from arthron.geometry import wrap_kernels as WK
        WK.FORCE = {"numpy": False, "kernels": True, "auto": None}[a.mode]
        label = a.mode
    except ImportError:
        label = "this arthron (no kernels)"
    print(f"wrapping code: {label}")
    if a.mode == "kernels":   # import numba and load the cached kernels before timing
        from arthron.geometry import wrap_ellipsoid as WE
        WE.wrap_ellipsoid(np.array([[0.3, 0.01, 0.02]]), np.array([[-0.3, 0.02, 0.01]]),
                          [0.1, 0.12, 0.11])
        from arthron.geometry import wrapping as W
        W.wrap_cylinder(np.array([[0.1, 0.01, 0.02]]), np.array([[-0.1, 0.02, 0.05]]), 0.02,
                        0.3, adjust_tangents=True)
    tmp = Path(tempfile.mkdtemp(prefix="arthron-bench-wrap-"))
    setup = tmp / "setup.xml"
    setup.write_text(B.setup_xml("arm26", B.ARM_MODEL, B.ARM_IK, tmp / "osim", False, 0.0, 1.0))

    def ours():
        B.run_static_optimization_from_setup(setup, results_dir=tmp / "ours")
    ours()
    if not a.skip_opensim:
        import opensim as osim
        osim.Logger.setLevelString("error")

        def theirs():
            osim.AnalyzeTool(str(setup)).run()
        theirs()
        to, ta = [], []
        for _ in range(7):
            to.append(med(theirs, 1))
            ta.append(med(ours, 1))
        t_os, t_ar = statistics.median(to), statistics.median(ta)
        print(f"arm26 SO, 121 frames: OpenSim {t_os * 1e3:7.1f} ms  arthron {t_ar * 1e3:6.1f} ms  "
              f"ratio {t_os / t_ar:5.1f}x")
    else:
        print(f"arm26 SO, 121 frames: arthron {med(ours, 7) * 1e3:6.1f} ms")
    m = read_osim(B.ARM_MODEL)
    tree = compile_model(m)
    ps = P.compile_paths(m, tree)
    mot = read_sto(B.ARM_IK)
    q = np.zeros((len(mot.time), tree.nq))
    for j, c in enumerate(tree.coordinate_names):
        if c in mot.labels:
            v = mot.data[:, mot.labels.index(c)]
            q[:, j] = np.deg2rad(v) if mot.in_degrees else v
    print(f"arm26 moment_arms+lengths, {len(q)} frames: "
          f"{med(lambda: P.moment_arms(ps, tree, q, return_lengths=True), 9) * 1e3:6.1f} ms")
    from arthron.models.shoulder_elbow import build_shoulder_elbow_model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = build_shoulder_elbow_model()
    tree = compile_model(m)
    ps = P.compile_paths(m, tree)
    rng = np.random.default_rng(0)
    q = tree.default_q + rng.uniform(-0.5, 0.5, (130, tree.nq))
    t0 = time.perf_counter()
    P.path_lengths(ps, tree, q)
    t_first = time.perf_counter() - t0
    t_len = med(lambda: P.path_lengths(ps, tree, q), 3)
    t_ma = med(lambda: P.moment_arms(ps, tree, q, return_lengths=True), 3)
    print(f"shoulder-elbow, 130 frames x {len(m.forces)} strings: path_lengths "
          f"{t_len * 1e3:6.1f} ms (first call in the process {t_first * 1e3:6.1f} ms), moment_arms+lengths "
          f"{t_ma * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
