"""Inverse kinematics and ScaleTool: OpenSim 4.6 vs arthron, side by side in one process.

Run:  python benchmarks/bench_ik_scale.py [--frames 2000] [--repeat 3]

Cases
-----
* IK, Gait2354 walk with the OutputReference model (73 frames, the stored 4.6 setup:
  accuracy 1e-5, constraint weight 20, 31 marker tasks, 4 coordinate tasks);
* IK, a long trial made by tiling the walk back and forth (``--frames``, 60 Hz);
* ScaleTool, the Gait2354 setup (measurements, manual scales, marker placement);
* IK, the Thoracoscapular shoulder model with its AC PointConstraint (``--tsm-frames``, a
  synthesized arm elevation assembled on the constraint, every model marker, 1 mm noise;
  accuracy 1e-9), with constraint weight inf and 20 (OpenSim 4.6 holds the constraint exactly
  at both, and so does arthron).

Both sides are timed as whole tools (read the setup, the model and the data, solve, write the
outputs; median of ``--repeat`` runs, the two tools alternating; OpenSim logging at error level). For IK the marker error of
every frame is compared (arthron reaches the optimum; OpenSim stops at its accuracy), and the
per-frame cost of arthron's solve alone is printed.

``--commands`` also times the whole commands as fresh processes (interpreter start, imports,
reading, solving, writing): ``arthron ik --setup`` on the walk and on the tiled trial and
``arthron scale --setup``, against ``python -c "import opensim; <Tool>(setup).run()"``. Both
sides run with bytecode available, as in an installed package: ``PYTHONDONTWRITEBYTECODE`` is
removed from the children's environment and ``PYTHONPYCACHEPREFIX`` points to a private
temporary folder (``_common.fresh_process_env``), and each command runs once untimed before it
is timed (otherwise, where ``PYTHONDONTWRITEBYTECODE`` is set, every arthron process compiles its
modules from source: some 50 ms that no installed arthron pays).

BLAS runs single-threaded (``OPENBLAS_NUM_THREADS`` etc. set to 1 here unless set); the load
average is printed before and after, since other jobs may share the machine: compare the
ratios, which are measured in the same time window.
"""
from __future__ import annotations

import argparse
import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fresh_process_env  # noqa: E402
from arthron.io.sto import read_sto  # noqa: E402
from arthron.io.trc import MarkerTrial, read_trc, write_trc  # noqa: E402
from arthron.tools.scale_tool import scale_from_setup  # noqa: E402
from arthron.tools.ik_tool import run_ik_from_setup  # noqa: E402

MODELS = DATA / "opensim-models"
GAIT = MODELS / "Pipelines" / "Gait2354_Simbody"
REF = DATA / "opensim-reference"
IK_SETUP = REF / "task2_gait2354" / "setups" / "ik_setup_refModel.xml"


def median_time(fn, n):
    ts, out = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def paired_medians(fa, fb, n):
    """Median times of ``fa`` and ``fb`` run alternately n times each (a load that changes
    during the measurement then weighs on both sides alike), and fa's last result."""
    ta, tb, out = [], [], None
    for _ in range(n):
        t0 = time.perf_counter()
        out = fa()
        ta.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fb()
        tb.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb), out


def make_setup(folder: Path, trc: Path, t0: float, t1: float) -> Path:
    raw = IK_SETUP.read_text()
    raw = (raw.replace("<workdir>/gait2354/ResultsIK_refModel", str(folder))
              .replace("<opensim-models>", str(MODELS))
              .replace("<workdir>/gait2354/subject01_walk1.trc", str(trc))
              .replace("<time_range>0.40000000000000002 1.6000000000000001</time_range>",
                       f"<time_range>{t0!r} {t1!r}</time_range>"))
    p = folder / "ik_setup.xml"
    p.write_text(raw)
    return p


def tiled_trial(frames: int) -> MarkerTrial:
    """The walk trial tiled forward/backward (no jumps) to ``frames`` frames at 60 Hz."""
    tr = read_trc(GAIT / "subject01_walk1.trc")
    ok = np.all(np.isfinite(tr.positions), axis=(1, 2))
    P = tr.positions[ok]
    seq = np.concatenate([P, P[-2:0:-1]])
    reps = int(np.ceil(frames / len(seq)))
    Q = np.concatenate([seq] * reps)[:frames]
    t = np.round(np.arange(frames) / 60.0, 6)
    return MarkerTrial(frames=np.arange(1, frames + 1), time=t, labels=list(tr.labels), positions=Q,
                       data_rate=60.0, camera_rate=60.0, orig_data_rate=60.0, orig_start_frame=1,
                       orig_num_frames=frames, units="mm")


def opensim_ik(osim, setup: Path, out: Path):
    cwd = os.getcwd()
    os.chdir(setup.parent)  # 4.6's IK tool resolves names against the cwd
    try:
        tool = osim.InverseKinematicsTool(str(setup))
        tool.setOutputMotionFileName(str(out))
        tool.run()
    finally:
        os.chdir(cwd)


def ik_case(osim, label, setup: Path, repeat: int):
    folder = setup.parent

    def ours():
        r = run_ik_from_setup(setup)
        r.write(folder / "arthron.mot", folder / "arthron_errors.sto")
        return r
    if osim is not None:
        t_ar, t_os, r = paired_medians(ours, lambda: opensim_ik(osim, setup, folder / "osim.mot"),
                                       repeat)
        os_err = read_sto(folder / "subject01_ik_marker_errors.sto").column("marker_error_RMS")
        os_mot = read_sto(folder / "osim.mot")
    else:
        t_ar, r = median_time(ours, repeat)
    n = len(r.time)
    print(f"\n{label}: {n} frames")
    print(f"  arthron  tool {t_ar:8.3f} s   ({1e3 * t_ar / n:.2f} ms/frame; solve only "
          f"{1e3 * r.solve_time / n:.2f} ms/frame, {r.iterations.mean():.1f} LM iterations/frame)")
    if osim is not None:
        print(f"  OpenSim  tool {t_os:8.3f} s   ({1e3 * t_os / n:.2f} ms/frame)   ratio OpenSim/arthron "
              f"{t_os / t_ar:.2f}x")
        d = r.degrees() - np.column_stack([os_mot.column(c) for c in r.coordinate_names])
        rot = r.rotational
        print(f"  marker RMS arthron - OpenSim per frame: max {1e3 * np.max(r.rms - os_err):+.4f} mm, "
              f"min {1e3 * np.min(r.rms - os_err):+.4f} mm; mean RMS arthron "
              f"{1e3 * r.rms.mean():.3f} mm, OpenSim {1e3 * os_err.mean():.3f} mm")
        print(f"  max |angle diff| {np.abs(d[:, rot]).max():.4f} deg, "
              f"|translation diff| {np.abs(d[:, ~rot]).max():.2e} m")
        qo = np.column_stack([os_mot.column(c) for c in r.coordinate_names])
        qo[:, rot] = np.deg2rad(qo[:, rot])
        ja, jo = ik_objectives(setup, r.q, qo, r.time)
        print(f"  IK objective (weighted squared marker and coordinate errors) arthron <= OpenSim in "
              f"{int(np.sum(ja <= jo * (1 + 1e-9)))}/{len(ja)} frames (arthron/OpenSim: min "
              f"{np.min(ja / jo):.6f}, max {np.max(ja / jo):.9f})")
    return r


def ik_objectives(setup: Path, q_ours, q_theirs, times):
    """OpenSim's IK objective per frame at both solutions: Σ w|x − x_obs|² / Σ w over the markers
    present in the frame, plus Σ w (q − q_task)² of the coordinate tasks (Simbody's Markers goal
    and the coordinate goals, both without their common factor 1/2)."""
    from arthron.io.osim import read_osim
    from arthron.io.setup import read_tool_setup
    from arthron.solvers.inverse_kinematics import InverseKinematics
    from arthron.tools.ik_tool import _ik_config
    from arthron.tools.setup_files import find_setup_file
    st = read_tool_setup(setup)
    model = read_osim(find_setup_file(st, st.get("model_file"), None))
    trial = read_trc(find_setup_file(st, st.get("marker_file"), None))
    cfg = _ik_config(st, model, None)
    ik = InverseKinematics(model, cfg["tasks"], cfg["constraint_weight"], trial.labels)
    cols = [trial.labels.index(n) for n in ik.marker_names]
    w = np.array(ik.ctask_w)
    out = []
    for q in (q_ours, q_theirs):
        J = np.empty(len(times))
        for k, t in enumerate(times):
            o = trial.positions[int(np.argmin(np.abs(trial.time - t)))][cols]
            P, _ = ik.chain.evaluate(q[k], None, False)
            ok = np.all(np.isfinite(o), 1)
            ref = ik.coordinate_targets(t, ik.tree.default_q)
            wm = ik.marker_weights[ok]
            J[k] = (np.sum(wm * np.sum((P - o)[ok] ** 2, 1)) / max(np.sum(wm), 1e-300)
                    + np.sum(w * (q[k][ik.ctask_idx] - ref) ** 2))
        out.append(J)
    return out


def scale_case(osim, repeat: int):
    setup = GAIT / "subject01_Setup_Scale.xml"
    out = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    search = [MODELS / "Models" / "Gait2354_Simbody"]

    def ours():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = scale_from_setup(setup, search_dirs=search)
        r.write(out)
        return r
    print("\nScaleTool Gait2354 (measurements + manual scales + marker placement, files written)")
    if osim is None:
        t_ar, _ = median_time(ours, repeat)
        print(f"  arthron  {t_ar:8.3f} s")
        return
    # 4.6 needs the generic model, marker set and static trial next to the setup
    work = Path(tempfile.mkdtemp(prefix="bench_scale_osim_"))
    for f in ("subject01_Setup_Scale.xml", "gait2354_Scale_MarkerSet.xml", "subject01_static.trc"):
        (work / f).write_bytes((GAIT / f).read_bytes())
    (work / "gait2354_simbody.osim").write_bytes(
        (MODELS / "Models" / "Gait2354_Simbody" / "gait2354_simbody.osim").read_bytes())

    def theirs():
        tool = osim.ScaleTool(str(work / "subject01_Setup_Scale.xml"))
        tool.run()
    t_ar, t_os, _ = paired_medians(ours, theirs, repeat)
    print(f"  arthron  {t_ar:8.3f} s")
    print(f"  OpenSim  {t_os:8.3f} s   ratio OpenSim/arthron {t_os / t_ar:.2f}x")


def tsm_case(osim, frames: int, repeat: int):
    from arthron.io.osim import read_osim
    from arthron.multibody.constraints import assemble
    from arthron.multibody.kinematics import compile_model, marker_positions
    from arthron.solvers.inverse_kinematics import IKTasks, solve_ik
    from arthron.tools.ik_tool import write_ik_result
    path = DATA / "opensim-core" / "OpenSim" / "Tests" / "shared" / "ThoracoscapularShoulderModel.osim"
    model = read_osim(path)
    tree = compile_model(model)
    names = tree.coordinate_names
    q = np.tile(tree.default_q, (frames, 1))
    ph = np.linspace(0.0, 2.0 * np.pi * max(1, frames // 120), frames)
    s = 0.5 - 0.5 * np.cos(ph)
    for n, a in {"plane_elv": 0.5, "shoulder_elv": 0.9, "axial_rot": -0.4, "clav_elev": 0.15,
                 "clav_prot": -0.1, "scapula_upward_rot": 0.3, "scapula_abduction": 0.1,
                 "scapula_winging": 0.1, "ground_thorax_rot_z": 0.05}.items():
        q[:, names.index(n)] += a * s
    q = assemble(model, tree, q)
    mk = list(tree.markers)
    _, P = marker_positions(tree, q, mk)
    P = P + np.random.default_rng(3).normal(0, 1e-3, P.shape)
    folder = Path(tempfile.mkdtemp(prefix="bench_tsm_"))
    trc = folder / "tsm.trc"
    write_trc(trc, MarkerTrial(frames=np.arange(1, frames + 1), time=np.arange(frames) / 60.0,
                               labels=mk, positions=P, data_rate=60.0, camera_rate=60.0,
                               orig_data_rate=60.0, orig_start_frame=1, orig_num_frames=frames,
                               units="mm"))
    tasks = IKTasks({n: 1.0 for n in mk})
    for w in (float("inf"), 20.0):
        def ours():
            tr = read_trc(trc)
            r = solve_ik(read_osim(path), tr, tasks, constraint_weight=w)
            write_ik_result(r, folder / "arthron.mot", folder / "arthron_err.sto")
            return r
        t_ar, r = median_time(ours, repeat)
        print(f"\nIK Thoracoscapular (AC PointConstraint, constraint_weight {w:g}; both tools hold it "
              f"exactly): {frames} frames")
        print(f"  arthron  tool {t_ar:8.3f} s   ({1e3 * t_ar / frames:.2f} ms/frame; solve only "
              f"{1e3 * r.solve_time / frames:.2f} ms/frame)")
        if osim is None:
            continue

        def theirs():
            tool = osim.InverseKinematicsTool()
            om = osim.Model(str(path))
            tool.setModel(om)
            tool.setMarkerDataFileName(str(trc))
            tool.setStartTime(0.0)
            tool.setEndTime(float((frames - 1) / 60.0))
            tool.setOutputMotionFileName(str(folder / "osim.mot"))
            tool.setResultsDir(str(folder))
            tool.setName("tsm")
            tool.set_constraint_weight(w)
            tool.set_accuracy(1e-9)
            for n in mk:
                t = osim.IKMarkerTask()
                t.setName(n)
                t.setWeight(1.0)
                tool.getIKTaskSet().cloneAndAppend(t)
            cwd = os.getcwd()
            os.chdir(folder)
            try:
                tool.run()
            finally:
                os.chdir(cwd)
        t_os, _ = median_time(theirs, repeat)
        mot = read_sto(folder / "osim.mot")
        err = read_sto(folder / "tsm_ik_marker_errors.sto").column("marker_error_RMS")
        d = r.degrees() - np.column_stack([mot.column(c) for c in r.coordinate_names])
        print(f"  OpenSim  tool {t_os:8.3f} s   ({1e3 * t_os / frames:.2f} ms/frame)   ratio "
              f"OpenSim/arthron {t_os / t_ar:.2f}x")
        print(f"  max |angle diff| {np.abs(d[:, r.rotational]).max():.2e} deg; marker RMS arthron - "
              f"OpenSim per frame: max {1e3 * np.max(r.rms - err):+.5f} mm")


def _load():
    return "load average %.2f %.2f %.2f (%d CPUs)" % (*os.getloadavg(), os.cpu_count() or 0)


def _fresh(cmd, cwd, env, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
        ts.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, cmd[:4]))} failed:\n{r.stderr[-2000:]}")
    return statistics.median(ts)


def commands_case(frames: int, repeat: int):
    """Whole commands as fresh processes, arthron and OpenSim alternating per case."""
    ws = Path(tempfile.mkdtemp(prefix="bench_ik_cmd_"))
    try:
        for p in GAIT.iterdir():
            if p.is_file():
                shutil.copy(p, ws / p.name)
        shutil.copy(GAIT / "OutputReference" / "subject01_simbody.osim", ws / "subject01_simbody.osim")
        shutil.copy(MODELS / "Models" / "Gait2354_Simbody" / "gait2354_simbody.osim", ws)
        write_trc(ws / "tiled.trc", tiled_trial(frames))
        raw = (ws / "subject01_Setup_IK.xml").read_text()
        (ws / "setup_tiled.xml").write_text(
            raw.replace("subject01_walk1.trc", "tiled.trc").replace("subject01_walk1_ik.mot", "tiled_ik.mot")
               .replace("<time_range> 0.4 1.6</time_range>", f"<time_range>0 {(frames - 1) / 60.0!r}</time_range>"))
        env = fresh_process_env()         # bytecode cached (as installed), BLAS single-threaded
        subprocess.run([sys.executable, "-c", "import opensim, arthron.cli"], cwd=ws, env=env)
        osim = "import opensim\nopensim.Logger.setLevelString('error')\n"
        cases = [("ik --setup, walk (73 frames)", ["ik", "--setup", "subject01_Setup_IK.xml"],
                  "opensim.InverseKinematicsTool('subject01_Setup_IK.xml').run()", repeat),
                 (f"ik --setup, tiled ({frames} frames)", ["ik", "--setup", "setup_tiled.xml"],
                  "opensim.InverseKinematicsTool('setup_tiled.xml').run()", max(1, repeat - 2)),
                 ("scale --setup", ["scale", "--setup", "subject01_Setup_Scale.xml"],
                  "opensim.ScaleTool('subject01_Setup_Scale.xml').run()", repeat)]
        print(f"\nWhole commands, fresh processes (median; {_load()})")
        print(f"  {'command':34s} {'arthron (s)':>11s} {'OpenSim (s)':>11s} {'OpenSim/arthron':>16s}")
        for name, a, o, n in cases:
            _fresh([sys.executable, "-m", "arthron.cli", *a], ws, env, 1)     # untimed: bytecode
            _fresh([sys.executable, "-c", osim + o], ws, env, 1)              # of what it imports
            ta, to = [], []
            for _ in range(n):         # alternately
                ta.append(_fresh([sys.executable, "-m", "arthron.cli", *a], ws, env, 1))
                to.append(_fresh([sys.executable, "-c", osim + o], ws, env, 1))
            # the ScaleTool setup writes subject01_simbody.osim: give the OutputReference model back
            shutil.copy(GAIT / "OutputReference" / "subject01_simbody.osim", ws / "subject01_simbody.osim")
            ta, to = statistics.median(ta), statistics.median(to)
            print(f"  {name:34s} {ta:11.3f} {to:11.3f} {to / ta:15.2f}x", flush=True)
        print(f"  (python start alone: {_fresh([sys.executable, '-c', 'pass'], ws, env, repeat):.3f} s; "
              f"python -c 'import numpy, lxml.etree': "
              f"{_fresh([sys.executable, '-c', 'import numpy, lxml.etree'], ws, env, repeat):.3f} s)")
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-opensim", action="store_true")
    ap.add_argument("--tsm-frames", type=int, default=240)
    ap.add_argument("--only-tsm", action="store_true")
    ap.add_argument("--no-tsm", action="store_true")
    ap.add_argument("--only-scale", action="store_true", help="the ScaleTool case only")
    ap.add_argument("--commands", action="store_true", help="also time the whole commands as fresh processes")
    a = ap.parse_args()
    try:
        from arthron.solvers.inverse_kinematics import use_compiled
        kernel = use_compiled()
    except ImportError:                  # an older arthron (before the compiled kernel)
        kernel = False
    print(f"{_load()}; BLAS threads OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}; "
          f"station kernel compiled (numba): {kernel}")
    osim = None
    if not a.no_opensim:
        try:
            import opensim as osim
            osim.Logger.setLevelString("error")
        except ImportError:
            print("opensim not installed: arthron only")
    if a.only_scale:
        scale_case(osim, a.repeat)
        print(f"\n{_load()}")
        return
    if not a.no_tsm:
        tsm_case(osim, a.tsm_frames, a.repeat)
    if a.only_tsm:
        return
    base = Path(tempfile.mkdtemp(prefix="bench_ik_"))
    (base / "walk").mkdir()
    ik_case(osim, "IK Gait2354 walk", make_setup(base / "walk", GAIT / "subject01_walk1.trc", 0.4, 1.6),
            a.repeat)
    (base / "long").mkdir()
    tr = tiled_trial(a.frames)
    trc = base / "long" / "tiled.trc"
    write_trc(trc, tr)
    ik_case(osim, f"IK tiled walk", make_setup(base / "long", trc, 0.0, float(tr.time[-1])),
            max(1, a.repeat - 2))
    scale_case(osim, a.repeat)
    if a.commands and osim is not None:
        commands_case(a.frames, a.repeat)
    print(f"\n{_load()}")


if __name__ == "__main__":
    main()
