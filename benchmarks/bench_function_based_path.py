"""FunctionBasedPath lengths, moment arms and lengthening speeds: arthron vs OpenSim 4.6.

arm26 with BIClong, TRIlong and BRA on FunctionBasedPaths (the model of
``tests/test_function_based_path.py``, built with the OpenSim API into a temporary folder)
over a 10,000-frame random trial:

* arthron: ``moment_arms`` + ``path_lengths`` + ``lengthening_speeds`` of the three paths
  (one vectorized call each, model compilation excluded);
* OpenSim: per frame ``setValue``/``setSpeedValue`` of both coordinates, ``realizeVelocity``,
  then ``getLength``, ``computeMomentArm`` (two coordinates) and ``getLengtheningSpeed`` of
  each path (model loaded beforehand, untimed); timed on ``--osim-frames`` frames (default
  500) and scaled.

Medians of 3 runs; the largest differences from OpenSim on the OpenSim frames are printed.
Other processes on the machine slow both sides; compare ratios, not seconds.
Run: ``python benchmarks/bench_function_based_path.py [--osim-frames N]``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "src"))

from _common import median_time  # noqa: E402
import oracle  # noqa: E402
from test_function_based_path import COORDS, MUSCLES, _build, _opensim_states, _states  # noqa: E402

from arthron.io.osim import read_osim  # noqa: E402
from arthron.multibody import paths as P  # noqa: E402
from arthron.multibody.kinematics import compile_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--osim-frames", type=int, default=500)
    ap.add_argument("--frames", type=int, default=10000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        src = _build(Path(d))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = read_osim(src)
        tree = compile_model(model)
        ps = P.compile_paths(model, tree, forces=MUSCLES)
        q, qd = _states(tree, T=args.frames, seed=1)

        def ours():
            return (P.path_lengths(ps, tree, q), P.moment_arms(ps, tree, q),
                    P.lengthening_speeds(ps, tree, q, qd))

        t_ours = median_time(ours)
        n = args.osim_frames
        import opensim as osim
        m, s = oracle.load(src)
        cs = m.getCoordinateSet()
        coords = [cs.get(c) for c in tree.coordinate_names]
        fbps = [osim.FunctionBasedPath.safeDownCast(
            osim.PathActuator.safeDownCast(m.getForceSet().get(mn)).getPath()) for mn in MUSCLES]
        cc = [cs.get(c) for c in COORDS]

        def theirs():
            for t in range(n):
                for j, c in enumerate(coords):
                    c.setValue(s, q[t, j], False)
                    c.setSpeedValue(s, qd[t, j])
                m.realizeVelocity(s)
                for k, f in enumerate(fbps):
                    f.getLength(s)
                    f.getLengtheningSpeed(s)
                    for c in (cc if k < 2 else cc[1:]):
                        f.computeMomentArm(s, c)

        t_osim = median_time(theirs)
        L, R, V = _opensim_states(src, q[:n], qd[:n], tree.coordinate_names)
        la, ma, va = ours()
        ci = [tree.coordinate_names.index(c) for c in COORDS]
        print(f"{args.frames} frames, 3 FunctionBasedPaths: arthron {t_ours * 1e3:.1f} ms; "
              f"OpenSim {t_osim * 1e3:.1f} ms on {n} frames -> {t_osim * args.frames / n * 1e3:.0f} ms "
              f"scaled; ratio {t_osim * args.frames / n / t_ours:.0f}x")
        print(f"max |diff| on {n} frames: length {np.abs(la[:n] - L).max():.1e} m, "
              f"moment arm {np.abs(ma[:n][:, :, ci] - R).max():.1e} m, "
              f"speed {np.abs(va[:n] - V).max():.1e} m/s")


if __name__ == "__main__":
    main()
