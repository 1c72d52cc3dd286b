"""The abduction study of Sarshari et al. (2021) on the built-in shoulder–elbow model: speed targets.

Run:  python benchmarks/bench_shoulder_study.py [--quick]

* ``arthron demo`` as a user runs it: a fresh Python process, imports included (target < 15 s);
* the abduction load sharing alone: 131 frames (20°…150° by 1°), the 42 muscles as their 136
  strings plus the two ribcage multipliers, stability cone on (target < 1 s); its parts: building
  the problem (inverse dynamics, paths and moment arms) and the solve (box QP for all frames,
  Clarabel for the frames where the cone is active, the E-matrix reaction map);
* the kinematics (de Groot & Brand 2001 rhythm, 131 frames, constraints to 1e-9);
* the whole parameter study (9 subjects) as ``arthron study --parameter-study``, fresh process
  (target < 60 s).

There is no OpenSim side: OpenSim 4.6 has neither the ribcage point-on-ellipsoid constraints nor
a stability cone in its StaticOptimization, so no equivalent run exists to compare with (the
model's inverse dynamics against OpenSim is in benchmarks/bench_shoulder_elbow.py). Times are
wall-clock medians (3 runs; the fresh-process ones 3 and 1); other jobs share the two cores, so
the load average is printed.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fresh_process_env, median_time  # noqa: E402


def fresh(argv, n):
    """Median wall time of ``n`` fresh ``arthron`` processes (after one untimed run that
    caches the bytecode, as installed: ``_common.fresh_process_env``)."""
    env = fresh_process_env()
    ts = []
    for i in range(n + 1):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "arthron.cli", *argv, "-o", d], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=d)
            if i:
                ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), ts


def main():
    quick = "--quick" in sys.argv
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    from arthron.multibody.constraints import compile_constraints
    from arthron.multibody.kinematics import compile_model
    from arthron.solvers.shoulder_forces import abduction_problem, shoulder_load_sharing
    from arthron.solvers.shoulder_kinematics import solve_abduction
    from arthron.solvers.shoulder_study import glenoid_cone, scale_subject
    from arthron.tools.shoulder_study_tool import default_model

    model, spec = default_model()
    scaled, pcsa, _ = scale_subject(model, spec, spec.generic)
    tree = compile_model(scaled)
    cs = compile_constraints(scaled, tree)
    cone = glenoid_cone(scaled, spec, spec.generic, tree)
    kin = solve_abduction(scaled, spec.coordinates, constraints=cs, tree=tree)
    t_kin = median_time(lambda: solve_abduction(scaled, spec.coordinates, constraints=cs, tree=tree))
    names = [c.name for c in scaled.constraints]

    def build():
        return abduction_problem(scaled, kin.q, kin.qd, kin.qdd, kin.time, spec.coordinates,
                                 constraints=cs, muscles=list(pcsa), tree=tree, multiplier_names=names,
                                 reaction_joint=cone.joint)
    prob = build()
    t_build = median_time(build)

    def solve():
        import copy
        return shoulder_load_sharing(scaled, copy.copy(prob), cone, pcsa, tree=tree)
    res = solve()
    t_solve = median_time(solve)
    n_act = int(res.cone_active.sum())
    print(f"kinematics, {len(kin.time)} frames, max |c| {kin.constraint_residual.max():.1e}: {t_kin:.2f} s")
    print(f"load sharing, {len(kin.time)} frames, {len(res.muscles)} strings (42 muscles) + "
          f"{len(names)} multipliers, cone on ({n_act} frames active): build {t_build:.3f} s + "
          f"solve {t_solve:.3f} s = {t_build + t_solve:.3f} s (target < 1 s)")
    # a subject whose cone is active (glenoid inclination 15°): Clarabel on those frames
    from dataclasses import replace
    s15 = replace(spec.generic, inclination_deg=15.0)
    cone15 = glenoid_cone(scaled, spec, s15, tree)

    def solve15():
        import copy
        return shoulder_load_sharing(scaled, copy.copy(prob), cone15, pcsa, tree=tree)
    r15 = solve15()
    t15 = median_time(solve15)
    print(f"  with glenoid inclination 15° ({int(r15.cone_active.sum())} frames cone-active, Clarabel): "
          f"solve {t15:.3f} s, build + solve {t_build + t15:.3f} s")
    t_demo, all_demo = fresh(["demo"], 1 if quick else 3)
    print(f"arthron demo (fresh process, imports included): {t_demo:.1f} s "
          f"(runs {', '.join(f'{t:.1f}' for t in all_demo)}; target < 15 s)")
    if not quick:
        t_study, _ = fresh(["study", "--parameter-study"], 1)
        print(f"arthron study --parameter-study (9 subjects, fresh process): {t_study:.1f} s (target < 60 s)")


if __name__ == "__main__":
    main()
