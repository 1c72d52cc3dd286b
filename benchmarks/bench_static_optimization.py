"""Static optimization: OpenSim 4.6's AnalyzeTool + StaticOptimization vs arthron's load sharing,
side by side in one process, with and without muscle physiology; the whole ``arthron so
--setup`` command on the largest muscle model of the data; the stability cone.

Run:  python benchmarks/bench_static_optimization.py [--quick] [--cases=arm26,gait2354,das4,cone]

Cases
-----
* arm26, 121 frames: the task-1 setup of opensim-reference (6 Hz, activation exponent 2).
* Gait2354 walk (OutputReference model and IK, 0.4-1.6 s, 73 frames): 54 muscles plus the 23
  residual and reserve actuators of ``gait2354_CMC_Actuators.xml``, GRF from
  ``subject01_walk1_grf.xml``, 6 Hz.

Both sides: construct the tool from the setup XML and run it, model loading and writing the
two result files included (arthron: ``run_static_optimization_from_setup``, outputs fsynced).
OpenSim and arthron run interleaved (rounds of one OpenSim run and, per mode, three arthron
runs; 7 rounds for arm26, 3 for Gait2354; medians over the rounds), arthron after 2 warm-up
runs, once with the compiled wrapping kernels loaded (``numba``: what any process that has wrapped a
million fan points runs) and once with the NumPy reference (``NumPy``: the wrapping route of a
fresh process's first commands; arm26 wraps 36k fan points per run). These are *repeated*
calls in one warm process (imports done, caches of the process warm; nothing of a call is
kept for the next: the model, the paths and the problem are built again each time). Then
arthron's parts: building the stacked problem (filtering, inverse dynamics, paths, moment
arms, F̂) and the batched QP alone. The agreement of activations (max |arthron − OpenSim|) is
printed too.

First call against repeated calls (arm26, :func:`first_calls`): fresh processes, alternating
between the sides, each timing its first call and the median of 5 more: OpenSim's
``AnalyzeTool(setup).run()`` (``import opensim`` not counted), arthron's
``run_static_optimization_from_setup`` (imports of the module not counted; the first call's
lazy imports are: scipy.interpolate and scipy.signal for the library's spline and filter
routes, ≈0.4 s) and ``arthron so --setup`` as a command (the wall time of the whole process:
interpreter, imports, NumPy wrapping route and arthron's own spline and filter routes, which
import neither). The ratios are OpenSim's first (or repeated) run over arthron's.

Whole command: the issue's 92-muscle gait model is not in ../shared/data; the largest muscle
model there, DAS4 (``arm-model/das4_v4.osim``, 164 muscle elements of
Schutte1993Muscle_Deprecated over 47 cylinders, 8 ellipsoids, 9 tori and 2 spheres; two wrist
couplers), runs instead: a generated 151-frame motion (1.5 s; elbow flexion, humeral elevation
and pronation; couplers' dependent coordinates filled from their functions), a reserve
CoordinateActuator (optimal force 100) on every independent coordinate, without muscle
physiology. ``arthron so --setup`` is timed as a fresh process (imports included, median of 3);
OpenSim's AnalyzeTool in process (one run, results in their own folder; about 4 minutes), with
the largest activation difference (muscles and reserves) over the frames away from the motion's
ends and over all frames. The Gait2354 walk's whole command is timed too.

Every figure depends on the machine's load (other sessions share its 2 cores): the load
average is printed at the start and the end.

Measured 2026-11-24 (2 cores shared with three other sessions):

* arm26, load ≈2 (OpenSim 0.370 / 0.367 s, its quiet-machine figure): arthron 17-18 ms with
  the kernels (≈21×, no physiology and physiology), 31-32 ms with NumPy (≈12×); the code before
  this change: 22.3 ms with the kernels (16.6×), 34 ms with NumPy (10.9×). A full run of this
  script at load ≈3 (OpenSim 0.77-0.79 s): 17.8× / 17.6× with the kernels, 10.9× / 10.6× NumPy.
* Gait2354 walk, load ≈3: 31.7× / 38.4× (kernels), 30.5× / 28.1× (NumPy).
* DAS4 whole command (151 frames, 203 actuators): 1.0-1.7 s depending on load (before:
  1.4-2.0 s), OpenSim 226 s (load ≈3); activations agree within 0.007 on frames 7-143, not at
  the first and last 6 frames (up to 0.77 on the thorax reserves). Gait2354 walk whole
  command 0.30-0.34 s.
* cone: 1.31-1.36× the unconstrained problem (SOC and 8 planes).

Path groups (paths with the same number of wrap objects wrapped as one block of (path, frame)
rows, ``multibody/path_geometry.py``), measured 2026-11-24 at load ≈1 (one session), this
change and the code before it run back to back, two runs each, OpenSim 0.367-0.371 s: arm26
18.2-18.9 ms with the kernels (19.4-20.2×; before 18.7-19.5 ms, 19.0-19.8×), 31.2-31.5 ms
NumPy (11.6-11.8×; before 32.6-33.0 ms, 11.2-11.3×); Gait2354 walk 65.5-65.9 ms with the
kernels (33.9-34.4×; before 67.1-71.8 ms, 31.5-33.8×).

NumPy wrapping route on coordinate arrays (fan, tangent search, cylinder; memo for cylinders),
measured 2026-11-24 at load ≈1.5-2.5 (three other sessions), the code before and after run
alternately: arm26 NumPy 31.2 / 33.1 ms (11.8× / 11.1×, no physiology / physiology) -> 26.8 /
27.3 ms (13.7× / 13.6×), kernels 18.5 / 20.0 -> 18.2 / 19.4 ms (20.2× / 19.1×), OpenSim
0.367-0.370 s. First call in a fresh process (arm26, both physiology settings): OpenSim
0.37 s, arthron's library call 0.54-0.56 s (scipy.interpolate and scipy.signal imported by the
first call), ``arthron so --setup`` 0.21-0.25 s for the whole process; repeated calls in that
process 27-29 ms. Gait2354 (quick runs, load ≈3): 67-74 ms both routes, before 67-74 ms; DAS4
whole command 0.86-0.89 s (before 0.95-1.37 s); cone 1.37× (before 1.35×).

Passive forces evaluated once for the equations of motion and the force file, the fan in
blocks of whole fan rows (no page faults), cylinders wrapped only on the rows that may wrap,
Newton steps without ``where=`` ufuncs, a cheaper path memo (results bit for bit unchanged),
measured 2026-11-24 at load 2.4-2.5, this change and the code before it run alternately,
OpenSim 0.363-0.378 s: arm26 NumPy 27.4 / 27.5 -> 22.6-23.1 / 24.3 ms (13.8× / 13.7× ->
15.8-16.1× / 15.1×), kernels 17.5-18.8 / 18.2 ms (19.4-20.9× / 20.2×, unchanged within the
noise); Gait2354 66-68 ms (32.9-34.0×, unchanged).

Fan, tangent search and path steps trimmed bit for bit (benchmarks/README.md, "the NumPy
route's floor"), measured 2026-11-24 with the code before and after in alternating fresh
processes (CPU time, load 1.5-2): arm26 NumPy 20.99 -> 20.76 ms / 21.91 -> 21.66 ms (no
physiology / physiology, -1 %); this script at load 2-2.5 (OpenSim 0.37-0.56 s): NumPy
22.6 ms, 16.4× (before 22.7 / 23.6 ms, 16.2× / 15.5×), runs at higher load 10-15×. Still short
of 20× on the NumPy route. DAS4 with muscle physiology (memo of the curves, grouped isometric
search): 0.80 -> 0.64 s in process.

Fixed costs around the solve (model read, output checks and writing; outputs byte-identical),
measured 2026-11-24, the code before and after in alternating fresh processes (medians of 60
calls, 5 processes each, load 1.7-2.1): arm26 NumPy 23.7 -> 22.0 ms wall (CPU 21.8 -> 20.1),
kernels 18.2 -> 16.5 ms wall (CPU 16.1 -> 14.6); read_osim(arm26) 2.37 -> 1.80 ms CPU; the two
.sto files 2.5-2.8 -> 1.4-1.5 ms wall (CPU 1.75 -> 0.95). This script at load 2.4-2.8 (OpenSim
0.366-0.370 s): kernels 16.8 / 19.2 ms (22.1× / 19.2×; before 19.1 / 19.2 ms, 19.3× / 19.1×),
NumPy 22.0 / 23.0 ms (16.8× / 16.0×; before 23.1 / 24.2 ms, 15.9× / 15.1×); repeated calls
in fresh processes 29.5 -> 23 ms. AnalyzeTool (bench_analyze_tool.py's setups, run_analyze
alone, medians of 7): arm26_ik 45.5 -> 34.2 ms wall, gait2354 118-128 -> 101-103 ms,
gait2354_setup 82-84 -> 75 ms (its 29-file fsync group no longer starts its threads one
scheduler wait at a time).

Path computation trimmed bit for bit (multibody/path_geometry.py, path_nodes.py,
geometry/wrap_ellipsoid.py; lengths, tangent points, moment arms, speeds and the SO files of
arm26, Gait2354, DAS4, Thoracoscapular and Lenhart2015 unchanged on both wrapping routes):
a row whose wraps after the first placed no node is final after the first pass (arm26's
TRIlong: no second pass), the lengthening only where a wrap is optional, one wrap object's
pass without the cached-position gather, the memo's keys made only when an object comes
again, the fan's plane and inside checks once per row. Measured 2026-11-24 (CPU time, the
code before and after alternating in one process, 50 calls each, load 1.2-1.8): arm26
``path_states`` 11.7 -> 9.4-9.6 ms NumPy, 6.4 -> 4.6 ms with the kernels (outside the wrap
functions 3.8 -> 1.9 ms); the whole
``run_static_optimization_from_setup`` 21.0-21.4 -> 18.7-19.3 ms NumPy, 15.8 -> 14.0 ms
kernels. This script, the two versions run back to back at load ≈2.5 (OpenSim 0.367-0.372 s):
arm26 NumPy 23.6 / 24.3 -> 21.1 / 22.0 ms (15.6× / 15.2× -> 17.6× / 16.7×, no physiology /
physiology), kernels 18.6 / 19.8 -> 17.2 / 17.2 ms (19.7× / 18.7× -> 21.6× / 21.4×);
Gait2354 walk (quick) 67-72 ms both before and after (31-34×). Moment arms and lengths of
Gait2354 (1,000 frames), Thoracoscapular (300) and DAS4 (151): unchanged or 1-5 % faster.

Around the paths, bit for bit (``solvers/box_qp.py``, ``multibody/paths.py``,
``path_compile.py``, ``tree.py``, ``solvers/filtering.py``; activations, forces, F̂, B, τ and
the written files of arm26 and the Gait2354 walk with and without muscle physiology on both
wrapping routes, and the moment arms, lengths and speeds of Gait2354, DAS4 and the
Thoracoscapular model unchanged; 64 QP problems, 164 infeasible frames among them, give the
same iterates): the box QP keeps z = Aᵀλ/w and b − Ax with each iterate and tries the line
search's halvings in blocks (4 per pass on arm26's 2 × 6 frames, 2 on Gait2354's 23 × 77);
the origin velocity map and the stacked node lists of the paths are kept on the poses for
the moment arms and the lengthening speeds; body rows gathered by one ``take``;
``compile_paths`` resolves each frame once and keeps the forces' property views;
``frame_with_z`` of a joint axis remembered; the speeds' spline evaluated once. Parts (CPU,
NumPy route, inside the whole call): QP 1.49 -> 1.13 ms (alone 1.16 / 1.27 -> 0.95 / 0.97 ms;
Gait2354's 13.6 -> 12.7 ms), lengthening speeds 0.63 -> 0.32 ms, moment arms 0.76 -> 0.68 ms,
compile_paths 0.32 -> 0.20 ms, compile_model 0.44 -> 0.36 ms. Measured 2026-11-24, the code
before and after in alternating fresh processes (CPU time, medians of 30 calls, 4 processes
each, load 0.5-1.5): arm26 NumPy 18.6 -> 18.3 ms / 19.4 -> 18.6 ms (no physiology /
physiology; wall 20.8 -> 20.5 / 21.5 -> 20.5 ms), kernels 13.5 -> 13.1 / 14.3 -> 13.5 ms
(wall 15.5 -> 15.2 / 16.3 -> 15.7 ms). This script, the two versions run back to back twice
at load 0.7-1.3 (OpenSim 0.369-0.371 s): NumPy 20.3-21.7 / 21.8-22.2 ms (17.1-18.2× /
16.7-16.9×) -> 20.0-20.1 / 20.5 ms (18.4-18.5× / 18.1×), kernels 16.0-17.4 / 17.0-18.1 ms
(21.4-23.1× / 20.4-21.7×) -> 15.5-15.8 / 15.9-16.2 ms (23.4-23.8× / 22.8-23.3×); Gait2354
walk (quick) 65.5-70.0 -> 61.2-65.7 ms (32.6-34.4× -> 34.3-37.0×). Path states, moment arms
and speeds (CPU, medians of 5): Gait2354 1,000 frames 117 -> 94 ms, Thoracoscapular 1,000
frames 307 -> 292 ms, DAS4 151 frames 265 -> 244 ms. Muscle physiology now adds ≈0.45 ms
(CPU: lengthening speeds 0.32, the Thelen curves 0.12; the QP takes as long). Still short of
20× on the NumPy route by 1.7-2.2 ms; what is left lies in the path computation (9.5 ms:
fan 3.1-3.4, its Newton steps at their bit-identical floor; tangent search 1.8; cylinders
1.45; path steps 1.9), reading the model (1.9 ms), writing (1.7-2.1 ms CPU, plus ≈2 ms of
fsync waits: wall − CPU), the setup and motion (≈1.1 ms), and, in these files, the QP
(≈1.1 ms, ≈60 NumPy calls per Newton iteration on 2 × 6 systems), the three scipy spline
fits (0.75 ms), moment arms (0.6 ms) and compile_model (0.36 ms).

All of today's changes together (the StaticOptimization also writes its ``_controls.xml``
now, as OpenSim does), this script at load 0.85-1.0, OpenSim 0.369-0.372 s: arm26 kernels
16.4 / 16.6 ms (22.7× / 22.3×, no physiology / physiology), NumPy 20.5 / 21.2 ms (18.1× /
17.4×); Gait2354 walk 62-64 ms (35.0-36.4×); first call 0.54 s, ``arthron so --setup`` 0.14 s;
cone 1.39× (SOC) / 1.41× (8 planes); DAS4 whole command (151 frames) 0.78-0.80 s.
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
from _common import DATA, GAIT, GAIT_IK, GAIT_MODEL, REF, ROOT, fresh_process_env, median_time  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from conftest import static_optimization_setup  # noqa: E402

from arthron.geometry import wrap_kernels  # noqa: E402
from arthron.io.sto import read_sto  # noqa: E402
from arthron.tools.static_optimization_tool import run_static_optimization_from_setup  # noqa: E402

ARM_MODEL = DATA / "opensim-models/Tutorials/Computed_Muscle_Control/InverseKinematics/arm26.osim"
ARM_IK = REF / "task1_arm26/IK/arm26_InverseKinematics.mot"
DAS4 = DATA / "arm-model/das4_v4.osim"


def setup_xml(name, model, ik, out, phys, t0, t1, force_set=None, grf=None):
    return static_optimization_setup(name, model, ik, out, t0, t1, physiology=phys, force_set=force_set, grf=grf)


def _load():
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _warm_median(fn, n=9, warm=2):
    for _ in range(warm):
        fn()
    return median_time(fn, n)


def main(quick=False, only=None):
    import opensim as osim
    osim.Logger.setLevelString("error")
    tmp = Path(tempfile.mkdtemp(prefix="arthron-bench-so-"))
    cases = [("arm26", ARM_MODEL, ARM_IK, 0.0, 1.0, None, None),
             ("gait2354", GAIT_MODEL, GAIT_IK, 0.4, 1.6, GAIT / "gait2354_CMC_Actuators.xml",
              GAIT / "subject01_walk1_grf.xml")]
    cases = [c for c in cases if only is None or c[0] in only]
    have_kernels = wrap_kernels.kernels() is not None      # numba imported, kernels loaded
    modes = ["numba", "NumPy"] if have_kernels else ["NumPy"]
    print(f"{'case':<10} {'physiology':<10} {'frames':>6} {'OpenSim s':>10} {'wrap':>6} {'arthron s':>10} "
          f"{'ratio':>7} {'build s':>8} {'QP s':>7} {'max|Δa|':>8}")
    setups = {}
    for name, model, ik, t0, t1, fs, grf in cases:
        for phys in (False, True):
            d = tmp / f"{name}_{int(phys)}"
            d.mkdir()
            setup = d / "setup.xml"
            setup.write_text(setup_xml(name, model, ik, d / "osim", phys, t0, t1, fs, grf))
            setups[(name, phys)] = setup
            holder = {}

            def ours():
                holder["r"] = run_static_optimization_from_setup(setup, results_dir=d / "ours")
            # OpenSim and arthron's modes interleaved, so that all see the same load: per round
            # one OpenSim run and, per mode, the median of 3 arthron runs
            t_os, t_ar = [], {mode: [] for mode in modes}
            for mode in modes:
                wrap_kernels.FORCE = mode == "numba"
                _warm_median(ours, 1, 2)
            for _ in range(1 if quick else (7 if name == "arm26" else 3)):
                t_os.append(median_time(lambda: osim.AnalyzeTool(str(setup)).run(), 1))
                for mode in modes:
                    wrap_kernels.FORCE = mode == "numba"
                    t_ar[mode].append(median_time(ours, 3))
            t_os = float(np.median(t_os))
            ref = read_sto(d / "osim" / f"{name}_StaticOptimization_activation.sto")
            for mode in modes:
                wrap_kernels.FORCE = mode == "numba"
                t_m = float(np.median(t_ar[mode]))
                ours()
                res, _ = holder["r"]
                prob = res.extra["problem"]
                from arthron.io.setup import read_external_loads
                from arthron.solvers.load_sharing import build_problem, solve_problem
                from arthron.tools.analyze_tool import model_with_force_sets, read_analyze_setup
                from arthron.tools.static_optimization_tool import control_bounds
                st = read_analyze_setup(setup)
                m = model_with_force_sets(st)
                mot = read_sto(ik)
                ext = read_external_loads(grf) if grf else None
                t_build = _warm_median(lambda: build_problem(
                    m, mot, external_loads=ext, lowpass_hz=6, time_range=(t0, t1), use_muscle_physiology=phys,
                    controls=control_bounds(m)), 3 if quick else 7, 1)
                t_qp = _warm_median(lambda: solve_problem(prob), 3 if quick else 7, 1)
                a = ref.data[:, [ref.labels.index(n) for n in res.names]]
                da = np.abs(res.activations - a).max() if a.shape == res.activations.shape else float("nan")
                print(f"{name:<10} {str(phys):<10} {len(res.time):>6} {t_os:>10.3f} {mode:>6} {t_m:>10.4f} "
                      f"{t_os / t_m:>7.1f} {t_build:>8.4f} {t_qp:>7.4f} {da:>8.4f}", flush=True)
            wrap_kernels.FORCE = None
    return tmp, setups


_FRESH_ARTHRON = """
import json, statistics, sys, time
t0 = time.perf_counter()
from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
t1 = time.perf_counter()
setup, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
ts = []
for _ in range(n):
    a = time.perf_counter()
    run_static_optimization_from_setup(setup, results_dir=out)
    ts.append(time.perf_counter() - a)
print(json.dumps({"import": t1 - t0, "first": ts[0], "repeated": statistics.median(ts[1:]),
                  "numba": "numba" in sys.modules}))
"""
_FRESH_OPENSIM = """
import json, statistics, sys, time
t0 = time.perf_counter()
import opensim as osim
osim.Logger.setLevelString("error")
t1 = time.perf_counter()
setup, n = sys.argv[1], int(sys.argv[2])
ts = []
for _ in range(n):
    a = time.perf_counter()
    osim.AnalyzeTool(setup).run()
    ts.append(time.perf_counter() - a)
print(json.dumps({"import": t1 - t0, "first": ts[0], "repeated": statistics.median(ts[1:])}))
"""


def _fresh(code, args, cwd):
    import json
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], check=True,
                       capture_output=True, text=True, env=env, cwd=cwd)
    return json.loads(r.stdout.strip().splitlines()[-1])


def first_calls(setups, quick=False, rounds=None):
    """The first call in a fresh process against repeated calls in one process, for both
    sides: arthron's ``run_static_optimization_from_setup`` (library: imports not counted,
    but the first call's lazy imports are, e.g. scipy.interpolate and scipy.signal, and it
    stays on the NumPy wrapping route: a fresh process never imports numba for arm26),
    ``arthron so --setup`` as a command (wall time of the whole process: interpreter, imports,
    the NumPy route, light imports) and OpenSim's ``AnalyzeTool(setup).run()`` (``import
    opensim`` not counted). Fresh processes alternate between the sides; medians over the
    rounds."""
    rounds = rounds or (1 if quick else 3)
    if not any(name == "arm26" for name, _ in setups):
        return
    print("first call in a fresh process vs repeated calls (6 per process), medians of "
          f"{rounds} processes; seconds")
    print(f"{'case':<10} {'physiology':<10} {'OpenSim 1st':>11} {'OpenSim rep':>11} "
          f"{'arthron 1st':>11} {'arthron rep':>11} {'command':>8} {'ratio 1st':>9} "
          f"{'ratio rep':>9} {'ratio cmd':>9}")
    o = a = None
    for (name, phys), setup in setups.items():
        if name != "arm26":
            continue
        d = setup.parent
        o, a, c = [], [], []
        for _ in range(rounds):
            o.append(_fresh(_FRESH_OPENSIM, [setup, 6], d))
            a.append(_fresh(_FRESH_ARTHRON, [setup, d / "ours_fresh", 6], d))
            c.append(_command_time(setup, 1))
        med = lambda rs, k: float(np.median([r[k] for r in rs]))  # noqa: E731
        o1, orep, a1, arep, cmd = (med(o, "first"), med(o, "repeated"), med(a, "first"),
                                   med(a, "repeated"), float(np.median(c)))
        print(f"{name:<10} {str(phys):<10} {o1:>11.3f} {orep:>11.3f} {a1:>11.4f} {arep:>11.4f} "
              f"{cmd:>8.3f} {o1 / a1:>9.1f} {orep / arep:>9.1f} {o1 / cmd:>9.1f}"
              + ("  (numba was imported)" if any(r["numba"] for r in a) else ""), flush=True)
    if o is None:
        return
    print(f"(imports not counted above: arthron {med(a, 'import'):.2f} s, opensim "
          f"{med(o, 'import'):.2f} s; the command's wall time counts everything)", flush=True)


def large_model_inputs(folder: Path, n_frames: int = 151, physiology: bool = False) -> Path:
    """DAS4 with a reserve on every independent coordinate and a generated motion (see the
    module docstring); returns the AnalyzeTool setup written into ``folder``."""
    from arthron.io.osim import read_osim
    from arthron.io.sto import write_sto
    from arthron.tables import Table
    model = read_osim(DAS4)
    t = np.linspace(0.0, 1.5, n_frames)
    s = 0.5 - 0.5 * np.cos(2 * np.pi * t / 1.5)
    names = list(model.coordinates)
    vals = np.array([[model.coordinates[c].default_value for c in names]] * n_frames)
    vals[:, names.index("EL_x")] = 0.2 + 1.6 * s
    vals[:, names.index("GH_z")] += 0.4 * s
    vals[:, names.index("PS_y")] = 0.3 + 1.0 * s
    dependent = set()
    for con in model.constraints:
        if con.type == "CoordinateCouplerConstraint" and con.enabled:
            dep = con.properties["dependent_coordinate"]
            ind = con.properties["independent_coordinates"][0]
            vals[:, names.index(dep)] = con.properties["function"].value(vals[:, names.index(ind)])
            dependent.add(dep)
    mot = folder / "das4_motion.mot"
    write_sto(mot, Table(name="das4 motion", time=t, labels=names, data=vals, in_degrees=False))
    acts = "".join(f'<CoordinateActuator name="{c}_reserve"><coordinate>{c}</coordinate>'
                   f"<optimal_force>100</optimal_force></CoordinateActuator>"
                   for c in names if c not in dependent and not model.coordinates[c].locked)
    fs = folder / "das4_reserves.xml"
    fs.write_text('<?xml version="1.0" encoding="UTF-8" ?>\n<OpenSimDocument Version="40000">'
                  f'<ForceSet name="reserves"><objects>{acts}</objects></ForceSet></OpenSimDocument>\n')
    for results in ("results", "results_opensim"):
        (folder / f"setup_{results}.xml").write_text(static_optimization_setup(
            "das4", DAS4, mot, folder / results, 0.0, 1.5, physiology=physiology, force_set=fs))
    return folder / "setup_results.xml"


def _command_time(setup: Path, n: int = 3) -> float:
    """Median wall time of a fresh ``arthron so --setup`` process (imports included; after one
    untimed run that caches the bytecode, as installed: ``_common.fresh_process_env``)."""
    env = fresh_process_env()
    cmd = [sys.executable, "-c", "import sys; from arthron.cli import main; sys.exit(main())",
           "so", "--setup", str(setup)]
    subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=setup.parent)
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=setup.parent)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def whole_command(setups, quick=False):
    import opensim as osim
    folder = Path(tempfile.mkdtemp(prefix="arthron-bench-so-das4-"))
    setup = large_model_inputs(folder)
    t_cmd = _command_time(setup, 1 if quick else 3)
    res = read_sto(folder / "results" / "das4_StaticOptimization_activation.sto")
    line = (f"whole command, DAS4 ({res.data.shape[1]} actuators, {len(res.time)} frames, no physiology): "
            f"arthron so --setup {t_cmd:.2f} s")
    if not quick:
        t0 = time.perf_counter()
        osim.AnalyzeTool(str(folder / "setup_results_opensim.xml")).run()
        t_os = time.perf_counter() - t0
        ref = read_sto(folder / "results_opensim" / "das4_StaticOptimization_activation.sto")
        da = np.abs(res.data - ref.data[:, [ref.labels.index(n) for n in res.labels]]).max(axis=1)
        line += (f"; OpenSim AnalyzeTool (in process, model loading included) {t_os:.1f} s, ratio "
                 f"{t_os / t_cmd:.1f}; max|Δa| frames 7..{len(da) - 8}: {da[7:-7].max():.4f}, "
                 f"all frames: {da.max():.3f}")
    print(line, flush=True)
    g = setups.get(("gait2354", True))
    if g is not None:
        print(f"whole command, Gait2354 walk (73 frames, physiology): arthron so --setup "
              f"{_command_time(g, 1 if quick else 3):.2f} s", flush=True)


def cone_case():
    """Thoracoscapular model (33 muscles, reserves 10 N·m), 21 frames of scapular-plane
    elevation: the whole problem without and with a glenohumeral cone (8° × 12°, SOC), and
    with 8 planes."""
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
    quick = "--quick" in sys.argv
    print(_load(), flush=True)
    only = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--cases=")]
    _, setups = main(quick, only[0].split(",") if only else None)
    first_calls(setups, quick)
    if not only or "das4" in only[0]:
        whole_command(setups, quick)
    if not only or "cone" in only[0]:
        cone_case()
    print(_load())
