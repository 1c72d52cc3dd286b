"""Static optimization: OpenSim 4.6's AnalyzeTool + StaticOptimization vs arthron's load sharing,
side by side in one process, with and without muscle physiology.

Run:  python benchmarks/bench_static_optimization.py

Cases
-----
* arm26, 121 frames: the task-1 setup of opensim-reference (6 Hz, activation exponent 2).
* Gait2354 walk (OutputReference model and IK, 0.4-1.6 s, 73 frames): 54 muscles plus the 23
  residual and reserve actuators of ``gait2354_CMC_Actuators.xml``, GRF from
  ``subject01_walk1_grf.xml``, 6 Hz.

Both sides: construct the tool from the setup XML and run it, model loading and writing the
two result files included (arthron: ``run_static_optimization_from_setup``). Then arthron's
parts: building the stacked problem (filtering, inverse dynamics, paths, moment arms, F̂) and
the batched QP alone. Times are wall-clock medians of 3 runs. The agreement of activations
(max |arthron − OpenSim|) is printed too.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, GAIT, GAIT_IK, GAIT_MODEL, REF, ROOT, median_time  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from conftest import static_optimization_setup  # noqa: E402

from arthron.io.sto import read_sto  # noqa: E402
from arthron.tools.static_optimization_tool import run_static_optimization_from_setup  # noqa: E402

ARM_MODEL = DATA / "opensim-models/Tutorials/Computed_Muscle_Control/InverseKinematics/arm26.osim"
ARM_IK = REF / "task1_arm26/IK/arm26_InverseKinematics.mot"


def setup_xml(name, model, ik, out, phys, t0, t1, force_set=None, grf=None):
    return static_optimization_setup(name, model, ik, out, t0, t1, physiology=phys, force_set=force_set, grf=grf)


def main():
    import opensim as osim
    osim.Logger.setLevelString("error")
    tmp = Path(tempfile.mkdtemp(prefix="arthron-bench-so-"))
    cases = [("arm26", ARM_MODEL, ARM_IK, 0.0, 1.0, None, None),
             ("gait2354", GAIT_MODEL, GAIT_IK, 0.4, 1.6, GAIT / "gait2354_CMC_Actuators.xml",
              GAIT / "subject01_walk1_grf.xml")]
    print(f"{'case':<10} {'physiology':<10} {'frames':>6} {'OpenSim s':>10} {'arthron s':>10} "
          f"{'ratio':>7} {'build s':>8} {'QP s':>7} {'max|Δa|':>8}")
    for name, model, ik, t0, t1, fs, grf in cases:
        for phys in (False, True):
            d = tmp / f"{name}_{int(phys)}"
            d.mkdir()
            setup = d / "setup.xml"
            setup.write_text(setup_xml(name, model, ik, d / "osim", phys, t0, t1, fs, grf))
            t_os = median_time(lambda: osim.AnalyzeTool(str(setup)).run())
            holder = {}

            def ours():
                holder["r"] = run_static_optimization_from_setup(setup, results_dir=d / "ours")
            t_ar = median_time(ours)
            res, _ = holder["r"]
            prob = res.extra["problem"]
            from arthron.io.setup import read_external_loads
            from arthron.solvers.load_sharing import build_problem, solve_problem
            from arthron.tools.analyze_tool import model_with_force_sets
            from arthron.tools.analyze_tool import read_analyze_setup
            from arthron.tools.static_optimization_tool import control_bounds
            st = read_analyze_setup(setup)
            m = model_with_force_sets(st)
            mot = read_sto(ik)
            ext = read_external_loads(grf) if grf else None
            t_build = median_time(lambda: build_problem(m, mot, external_loads=ext, lowpass_hz=6,
                                                        time_range=(t0, t1), use_muscle_physiology=phys,
                                                        controls=control_bounds(m)))
            t_qp = median_time(lambda: solve_problem(prob))
            ref = read_sto(d / "osim" / f"{name}_StaticOptimization_activation.sto")
            a = ref.data[:, [ref.labels.index(n) for n in res.names]]
            da = np.abs(res.activations - a).max() if a.shape == res.activations.shape else float("nan")
            print(f"{name:<10} {str(phys):<10} {len(res.time):>6} {t_os:>10.3f} {t_ar:>10.3f} "
                  f"{t_os / t_ar:>7.1f} {t_build:>8.3f} {t_qp:>7.3f} {da:>8.4f}")


def cone_case():
    """Thoracoscapular model (33 muscles, reserves 10 N·m), 21 frames of scapular-plane
    elevation: the whole problem without and with a glenohumeral cone (8° × 12°, SOC), and
    with 8 planes."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_load_sharing import _elevation_motion
    from arthron.io.osim import read_osim
    from arthron.solvers.load_sharing import build_problem, solve_problem
    from arthron.solvers.load_sharing_cone import StabilityCone, solve_with_stability_cone
    from arthron.tools.load_sharing_tool import add_reserves
    tsm = DATA / "opensim-core/OpenSim/Tests/shared/ThoracoscapularShoulderModel.osim"
    m = add_reserves(read_osim(tsm), 10.0)
    mot = _elevation_motion(m)
    t_free = median_time(lambda: solve_problem(build_problem(m, mot, use_muscle_physiology=False)))
    holder = {}
    for planes in (None, 8):
        cone = StabilityCone("GlenoHumeral", "scapula", (0.727, 0.055, 0.685), (8.0, 12.0), n_planes=planes)

        def run():
            holder["r"] = solve_with_stability_cone(m, build_problem(m, mot, use_muscle_physiology=False), cone)
        t_cone = median_time(run)
        r = holder["r"]
        print(f"cone ({'SOC' if planes is None else f'{planes} planes'}): {int(r.extra['cone_active'].sum())} of "
              f"{len(r.time)} frames constrained; without cone {t_free:.3f} s, with {t_cone:.3f} s, "
              f"ratio {t_cone / t_free:.2f}")


if __name__ == "__main__":
    main()
    cone_case()
