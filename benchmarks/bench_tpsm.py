"""Timing of the thin-plate spline ligament model (TPSM) wrench against the multi-bundle model (MBM).

Run:  python benchmarks/bench_tpsm.py [--quick]

Prints (synthetic ACL of ``arthron.solvers.tpsm_study.synthetic_acl``):
  * one-time setup (fits, triangulation, fibre precomputation) for 360 triangles, ms
  * one pose, TPSM-3 at 360 triangles, µs
  * a batch of 10,000 poses (0-120° flexion), µs per pose, TPSM-3 at 360 and 30 triangles
  * for error targets 10 %, 5 %, 2 %, 1 %: the coarsest mesh at which each method stays below
    the target on every finer tested mesh, its time (single pose, and per pose in a batch of
    1,000) and the MBM / TPSM time ratios (the TPSM paper, Fig. 8), for l0 = 27 mm (partially slack)
    and 10 mm (taut). A single pose costs ~12 µs of fixed NumPy call overhead whatever the
    number of fibres, so the batch ratio is the one that reflects the fibre counts.

Targets from issue 6 (NumPy only): one pose ≤ 25 µs; batch ≤ 6 µs/pose at 360 triangles and
≤ 1 µs/pose at 30; setup ≤ 50 ms. Timings are the best of several repeats (the machine may be
shared); OpenBLAS is limited to one thread unless OPENBLAS_NUM_THREADS is set, since threading
small products only adds noise.
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402

from arthron.solvers.tpsm_study import (convergence_study, reference_wrench, synthetic_acl,  # noqa: E402
                                        synthetic_flexion)


def best_of(fn, repeats, inner=1):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best


def main(quick: bool = False):
    rep = 3 if quick else 7
    print(f"numpy {np.__version__}, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}")

    # --- setup --------------------------------------------------------------------------------
    def setup():
        synthetic_acl().fibres(360, 3)
    setup()
    t_setup = best_of(setup, rep)
    lig = synthetic_acl()
    t_fib = best_of(lambda: lig.fibres(360, 3), rep)
    print(f"setup, 360 triangles: {t_setup * 1e3:.1f} ms (TPS fits + triangulation + fibres); "
          f"fibres alone {t_fib * 1e3:.1f} ms   [target ≤ 50 ms]")

    # --- one pose -----------------------------------------------------------------------------
    R, t = lig.default_pose
    f360 = lig.fibres(360, 3)
    f30 = lig.fibres(30, 3)
    one = best_of(lambda: f360.wrench(R, t), rep, 200)
    print(f"one pose, TPSM-3 @360 triangles ({f360.n} fibres): {one * 1e6:.1f} µs   [target ≤ 25 µs]")

    # --- batches ------------------------------------------------------------------------------
    Rs, ts = synthetic_flexion(np.linspace(0.0, 120.0, 10_000))
    for fib, target in ((f360, 6.0), (f30, 1.0)):
        fib.wrench(Rs[:10], ts[:10])
        b = best_of(lambda: fib.wrench(Rs, ts), rep)
        print(f"batch 10,000 poses, {fib.label}: {b / 1e4 * 1e6:.2f} µs/pose   [target ≤ {target} µs]")

    # --- equal accuracy -----------------------------------------------------------------------
    Ns = [15, 20, 30, 45, 60, 90, 120, 180, 240, 360, 500, 720, 1000, 1500, 2000]
    if quick:
        Ns = [15, 20, 30, 45, 60, 90, 120, 180, 240, 360, 500, 720]
    methods = ("MBM", "TPSM-1", "TPSM-3", "TPSM-4")
    Rb, tb = synthetic_flexion(np.linspace(0.0, 30.0, 1000))
    for l0 in (0.027, 0.010):
        L = synthetic_acl(l0=l0)
        ref = reference_wrench(L, rtol=1e-8)
        st = convergence_study(L, Ns, methods, ref=ref, timing_repeats=rep * 20)
        for m in methods:  # batch timing (1000 poses): the cost that scales with the fibres
            us = []
            for n in Ns:
                fib = L.model(m, n)
                us.append(best_of(lambda: fib.wrench(Rb, tb), rep) / 1000 * 1e6)
            st[m]["batch_us"] = np.array(us)
        print(f"\nl0 = {l0 * 1e3:.0f} mm: reference |F| = {ref.force_magnitude:.2f} N")
        print("  triangles      " + " ".join(f"{n:7d}" for n in Ns))
        for m in methods:
            print(f"  {m:8s} e_F %  " + " ".join(f"{e:7.2f}" for e in st[m]["eF"]))
            print(f"  {m:8s} fibres " + " ".join(f"{k:7d}" for k in st[m]["n_fibres"]))
            print(f"  {m:8s} µs 1   " + " ".join(f"{u:7.1f}" for u in st[m]["us"]))
            print(f"  {m:8s} µs/b   " + " ".join(f"{u:7.2f}" for u in st[m]["batch_us"]))
        print("  equal accuracy (coarsest mesh staying below the target on all finer meshes);")
        print("  times: single pose µs / batch µs per pose; ratios MBM/TPSM for single | batch:")
        for target in (10.0, 5.0, 2.0, 1.0):
            row = {}
            for m in methods:
                e = st[m]["eF"]
                ok = [i for i in range(len(Ns)) if np.all(e[i:] < target)]
                row[m] = (Ns[ok[0]], st[m]["us"][ok[0]], st[m]["batch_us"][ok[0]]) if ok else None
            txt = []
            for m in methods:
                txt.append(f"{m} " + (f"{row[m][0]:4d} tri {row[m][1]:5.1f}/{row[m][2]:5.2f}" if row[m] else "not reached"))
            ratios = []
            if row["MBM"]:
                for m in methods[1:]:
                    if row[m]:
                        ratios.append(f"{m} {row['MBM'][1] / row[m][1]:.1f}|{row['MBM'][2] / row[m][2]:.1f}")
            else:
                ratios.append(f"MBM does not stay below {target:g}% up to {Ns[-1]} triangles")
            print(f"  < {target:4.1f}%: " + " | ".join(txt) + "  →  " + ", ".join(ratios))

if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
