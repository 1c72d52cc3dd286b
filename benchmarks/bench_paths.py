"""Muscle lengths and moment arms over a 1,000-frame trial: arthron vs OpenSim 4.6.

For Gait2354 (54 muscles, 23 coordinates) and the Thoracoscapular shoulder model (33 muscles,
17 coordinates, ellipsoid/cylinder/sphere wraps), a smooth synthetic trial of 1,000 frames
inside the coordinate ranges (locked coordinates at their defaults) is evaluated

* by arthron: ``moment_arms(..., return_lengths=True)`` (all muscles x all coordinates, one
  vectorized call), model compilation timed separately;
* by OpenSim: per frame, ``Coordinate.setValue`` for every coordinate, ``realizePosition``,
  then ``GeometryPath.getLength`` and ``computeMomentArm`` for every muscle and coordinate.

OpenSim is timed on ``--osim-frames`` frames (default 100) and scaled to 1,000; both
numbers are printed, with the largest length and moment-arm differences from OpenSim over all
muscles and coordinates on those frames. For models with constraints (the Thoracoscapular
model's AC point constraint) the trial is first assembled by OpenSim, untimed, as IK results
satisfy the constraints (computeMomentArm's coupling is defined on such poses).
Run: ``python benchmarks/bench_paths.py [--osim-frames N]``.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from conftest import GAIT2354, TSM  # noqa: E402

from arthron.io.osim import read_osim  # noqa: E402
from arthron.multibody import paths as P  # noqa: E402
from arthron.multibody.kinematics import compile_model  # noqa: E402


def trial(model, tree, T=1000):
    names = tree.coordinate_names
    lo = np.array([model.coordinates[c].range[0] for c in names])
    hi = np.array([model.coordinates[c].range[1] for c in names])
    t = np.linspace(0.0, 1.0, T)[:, None]
    k = 1 + np.arange(len(names)) % 3
    mid = np.clip(tree.default_q, lo, hi)
    Q = mid + 0.25 * (hi - lo) * np.sin(2 * np.pi * k * t + np.arange(len(names)))
    Q = np.clip(Q, lo, hi)
    locked = np.array([model.coordinates[c].locked for c in names])
    Q[:, locked] = tree.default_q[locked]
    return Q


def assemble(path, tree, Q):
    import oracle
    m, s = oracle.load(path)
    cs = m.getCoordinateSet()
    coords = [cs.get(c) for c in tree.coordinate_names]
    Q = Q.copy()
    for t in range(len(Q)):
        for j, c in enumerate(coords):
            if not c.getLocked(s):
                c.setValue(s, float(Q[t, j]), False)
        m.assemble(s)
        Q[t] = [c.getValue(s) for c in coords]
    return Q


def run_arthron(path, T):
    t0 = time.perf_counter()
    model = read_osim(path)
    tree = compile_model(model)
    ps = P.compile_paths(model, tree, forces=list(model.muscles))
    t1 = time.perf_counter()
    Q = trial(model, tree, T)
    if ps.constraints:
        Q = assemble(path, tree, Q)
    t2 = time.perf_counter()
    ma, L = P.moment_arms(ps, tree, Q, return_lengths=True)
    t3 = time.perf_counter()
    return model, tree, ps, Q, t1 - t0, t3 - t2, (L, ma)


def run_opensim(path, tree, ps, Q, n):
    import opensim as osim

    import oracle
    m, s = oracle.load(path)
    cs = m.getCoordinateSet()
    coords = [cs.get(c) for c in tree.coordinate_names]
    gps = [osim.Muscle.safeDownCast(m.getForceSet().get(nm)).getGeometryPath() for nm in ps.names]
    L = np.empty((n, len(gps)))
    MA = np.empty((n, len(gps), len(coords)))
    t0 = time.perf_counter()
    for t in range(n):
        for j, c in enumerate(coords):
            if not c.getLocked(s):
                c.setValue(s, float(Q[t, j]), False)
        m.realizePosition(s)
        for i, gp in enumerate(gps):
            L[t, i] = gp.getLength(s)
            for j, c in enumerate(coords):
                MA[t, i, j] = gp.computeMomentArm(s, c)
    return time.perf_counter() - t0, (L, MA)


def main(argv=None):
    warnings.simplefilter("ignore")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--osim-frames", type=int, default=100)
    args = ap.parse_args(argv)
    print(f"{'model':<34}{'compile s':>10}{'arthron s':>11}{'OpenSim s':>12}{'ratio':>9}"
          f"{'max |dL| m':>12}{'max |dMA| m':>13}")
    for path in (GAIT2354, TSM):
        model, tree, ps, Q, tc, ta, (L, ma) = run_arthron(path, args.frames)
        n = min(args.osim_frames, args.frames)
        to, (L0, MA0) = run_opensim(path, tree, ps, Q, n)
        to_full = to * args.frames / n
        err = np.abs(L[:n] - L0).max()
        erm = np.abs(ma[:n] - MA0).max()
        print(f"{path.name:<34}{tc:>10.3f}{ta:>11.3f}{to_full:>12.2f}{to_full / ta:>9.1f}"
              f"{err:>12.2e}{erm:>13.2e}   (OpenSim measured {to:.2f} s on {n} frames)")


if __name__ == "__main__":
    main()
