"""A fidelity sweep of the AnalyzeTool: every model in ../shared/data that OpenSim 4.6 loads, one
generated motion each, every analysis arthron runs, file by file against OpenSim 4.6.

For each ``.osim`` under the data (the Lenhart knee with its ``Smith2018*`` plugin elements
stripped in a temporary copy; models OpenSim cannot load are named and skipped), a smooth 1-s
motion of 51 rows is written (every unlocked coordinate within ±25 % of its range around its
default, each at its own frequency; degrees) and an AnalyzeTool setup with Kinematics,
BodyKinematics (local and ground frames, two analyses), PointKinematics, MuscleAnalysis (all
muscles, compute_moments, a few moment-arm coordinates), ForceReporter, Actuation,
StatesReporter and JointReaction (all joints, child, child frame), lowpass 6 Hz. OpenSim
(``osim.AnalyzeTool(setup).run()``, cwd a temporary folder, no opensim.log) and arthron
(:func:`arthron.tools.analyze_tool.run_analyze`) write into separate folders; every file both
wrote is compared (labels, times, max |Δ| / (1 + max |column|)) and files only one side wrote are
named. With ``--states``, the muscle models are run again on OpenSim's StatesReporter output as
the setup's ``states_file``.

    nice -n 10 python benchmarks/sweep_analyses.py [--only SUBSTRING] [--no-states] [--tol 1e-7]

Prints one line per model and file above the tolerance, then a table model x file.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "src"))

# arthron writes these even without compute_moments, the deprecated classes' fibre files are not
# written: known and deliberate (see the AnalyzeTool docs)
KNOWN_ONLY_OURS = ()


def _models():
    return sorted(p for p in DATA.rglob("*.osim"))


def _loadable_copy(path: Path, tmp: Path) -> Path:
    """The model itself, or for the Lenhart knee a copy without the Smith2018 plugin elements."""
    text = path.read_text()
    if "Smith2018" not in text:
        return path
    text = re.sub(r"<(Smith2018\w+)\b[^>]*?/>", "", text)
    text = re.sub(r"<(Smith2018\w+)\b.*?</\1>", "", text, flags=re.S)
    out = tmp / path.name
    # geometry paths stay resolvable next to the original
    text = text.replace("<geometry_path>", "<geometry_path>")
    out.write_text(text)
    return out


def _motion(osim, model_path: Path, out: Path):
    """A 51-row, 1-s motion of every unlocked coordinate, degrees; returns the model facts."""
    from arthron.io.sto import write_sto
    from arthron.tables import Table
    m = osim.Model(str(model_path))
    s = m.initSystem()
    t = np.linspace(0.0, 1.0, 51)
    labels, cols, coords = [], [], []
    cs = m.getCoordinateSet()
    for i in range(cs.getSize()):
        c = cs.get(i)
        lo, hi = c.getRangeMin(), c.getRangeMax()
        if not np.isfinite(lo) or not np.isfinite(hi) or hi - lo > 1e3:
            lo, hi = -1.0, 1.0
        d = c.getDefaultValue()
        d = min(max(d, lo), hi)
        coords.append(c.getName())
        if c.getDefaultLocked():
            v = np.full_like(t, d)
        else:
            a = 0.25 * (hi - lo) if hi - lo < 6 else 0.3   # a full turn's range: ±0.3
            f = 0.5 + 0.37 * i
            v = d + a * np.sin(2 * np.pi * f * t + 0.3 * i)
        labels.append(c.getName())
        cols.append(v)
    Q = np.column_stack(cols)
    if m.getConstraintSet().getSize():
        # a model with constraints: each row assembled by OpenSim (the coordinates as goals), so
        # that both tools start from poses that satisfy the constraints (a motion far from them
        # leaves the assembly's solution to each assembler, and OpenSim's may fail)
        for r in range(len(t)):
            for i in range(cs.getSize()):
                cs.get(i).setValue(s, Q[r, i], False)
            try:
                m.assemble(s)
            except Exception:
                pass
            Q[r] = [cs.get(i).getValue(s) for i in range(cs.getSize())]
    rot = np.array([cs.get(i).getMotionType() == 1 for i in range(cs.getSize())])   # Rotational
    cols = [np.degrees(Q[:, i]) if rot[i] else Q[:, i] for i in range(len(labels))]
    write_sto(out, Table(name="motion", time=t, labels=labels, data=np.column_stack(cols),
                         in_degrees=True))
    bodies = [m.getBodySet().get(i).getName() for i in range(m.getBodySet().getSize())]
    muscles = m.getMuscles().getSize()
    return coords, bodies, muscles


def _setup(path: Path, model: Path, inputs: str, results: Path, coords, bodies):
    ma = " ".join(coords[:3]) if coords else "all"
    body = bodies[-1] if bodies else "ground"
    an = f"""
<Kinematics name="Kinematics"><on>true</on><step_interval>1</step_interval><in_degrees>true</in_degrees><coordinates>all</coordinates></Kinematics>
<BodyKinematics name="BodyKinematics"><on>true</on><step_interval>1</step_interval><in_degrees>true</in_degrees><bodies>all</bodies><express_results_in_body_local_frame>false</express_results_in_body_local_frame></BodyKinematics>
<BodyKinematics name="BodyKinematicsLocal"><on>true</on><step_interval>1</step_interval><in_degrees>true</in_degrees><bodies>all</bodies><express_results_in_body_local_frame>true</express_results_in_body_local_frame></BodyKinematics>
<PointKinematics name="PointKinematics"><on>true</on><step_interval>1</step_interval><in_degrees>true</in_degrees><body_name>{body}</body_name><relative_to_body_name>ground</relative_to_body_name><point_name>P</point_name><point>0.01 0.02 0.03</point></PointKinematics>
<MuscleAnalysis name="MuscleAnalysis"><on>true</on><step_interval>1</step_interval><in_degrees>true</in_degrees><muscle_list>all</muscle_list><moment_arm_coordinate_list>{ma}</moment_arm_coordinate_list><compute_moments>true</compute_moments></MuscleAnalysis>
<ForceReporter name="ForceReporter"><on>true</on><step_interval>1</step_interval><include_constraint_forces>false</include_constraint_forces></ForceReporter>
<Actuation name="Actuation"><on>true</on><step_interval>1</step_interval><in_degrees>true</in_degrees></Actuation>
<StatesReporter name="StatesReporter"><on>true</on><step_interval>1</step_interval><in_degrees>true</in_degrees></StatesReporter>
<JointReaction name="JointReaction"><on>true</on><step_interval>1</step_interval><joint_names>all</joint_names><apply_on_bodies>child</apply_on_bodies><express_in_frame>child</express_in_frame></JointReaction>
"""
    path.write_text(f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><AnalyzeTool name="sw">
<model_file>{model}</model_file><replace_force_set>false</replace_force_set><force_set_files/>
<results_directory>{results}</results_directory><initial_time>0</initial_time><final_time>1</final_time>
<solve_for_equilibrium_for_auxiliary_states>false</solve_for_equilibrium_for_auxiliary_states>
<AnalysisSet name="Analyses"><objects>{an}</objects></AnalysisSet>{inputs}
</AnalyzeTool></OpenSimDocument>""")
    return path


def _compare(a_dir: Path, b_dir: Path):
    """{file: (relative difference or a note)} for files either side wrote."""
    from arthron.io.sto import read_sto
    out = {}
    fa = {p.name for p in a_dir.glob("*.sto")} if a_dir.exists() else set()
    fb = {p.name for p in b_dir.glob("*.sto")} if b_dir.exists() else set()
    for n in sorted(fa | fb):
        if n not in fb:
            out[n] = "only OpenSim"
            continue
        if n not in fa:
            out[n] = "only arthron"
            continue
        a, b = read_sto(a_dir / n), read_sto(b_dir / n)
        if a.labels != b.labels:
            extra = sorted(set(a.labels) ^ set(b.labels))[:4]
            out[n] = f"labels differ {len(a.labels)} vs {len(b.labels)} {extra}"
            continue
        if a.time.shape != b.time.shape or np.abs(a.time - b.time).max(initial=0) > 1e-9:
            out[n] = f"times differ {a.time.shape} vs {b.time.shape}"
            continue
        if a.data.size == 0:
            out[n] = (0.0, "(time only)")
            continue
        d = np.abs(a.data - b.data)
        scale = 1.0 + np.nanmax(np.abs(a.data), axis=0)
        nan_a, nan_b = np.isnan(a.data), np.isnan(b.data)
        if (nan_a != nan_b).any():
            out[n] = f"NaN pattern differs (OpenSim {nan_a.sum()}, arthron {nan_b.sum()})"
            continue
        rel = np.nan_to_num(d / scale, nan=0.0)
        j = int(np.argmax(rel.max(axis=0)))
        out[n] = (float(rel.max()), a.labels[j])
    return out


def _run_pair(osim, setup: Path, work: Path, ours: Path):
    from arthron.tools.analyze_tool import run_analyze
    t0 = time.perf_counter()
    old = os.getcwd()
    os.chdir(work)
    try:
        osim.AnalyzeTool(str(setup)).run()
    finally:
        os.chdir(old)
    t1 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_analyze(setup, results_dir=ours)
    return t1 - t0, time.perf_counter() - t1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--no-states", action="store_true")
    ap.add_argument("--tol", type=float, default=1e-7)
    args = ap.parse_args(argv)
    import opensim as osim
    osim.Logger.setLevelString("error")
    try:
        osim.Logger.removeFileSink()
    except Exception:
        pass
    print(f"load {os.getloadavg()[0]:.2f}")
    table = {}
    for path in _models():
        rel = str(path.relative_to(DATA))
        if args.only not in rel:
            continue
        with tempfile.TemporaryDirectory(prefix="sweep_an_") as tmp:
            tmp = Path(tmp)
            try:
                model = _loadable_copy(path, tmp)
                coords, bodies, muscles = _motion(osim, model, tmp / "motion.mot")
            except Exception as e:
                print(f"SKIP {rel}: OpenSim cannot load it ({str(e).splitlines()[0][:120]})")
                continue
            inputs = (f"<coordinates_file>{tmp / 'motion.mot'}</coordinates_file>"
                      "<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>")
            setup = _setup(tmp / "setup.xml", model, inputs, tmp / "osim", coords, bodies)
            variants = [("coords", setup, tmp / "osim", tmp / "ours")]
            for name, s, od, ad in variants:
                try:
                    to, ta = _run_pair(osim, s, tmp, ad)
                except Exception as e:
                    print(f"FAIL {rel} [{name}]: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                    traceback.print_exc(limit=3)
                    continue
                res = _compare(od, ad)
                table[(rel, name)] = res
                print(f"== {rel} [{name}] OpenSim {to:.1f} s, arthron {ta:.1f} s, {len(res)} files")
                for f, v in res.items():
                    if isinstance(v, str) or v[0] > args.tol:
                        print(f"   {f}: {v}")
                if name == "coords" and muscles and not args.no_states:
                    st = od / "sw_StatesReporter_states.sto"
                    if st.exists():
                        s2 = _setup(tmp / "setup_states.xml", model,
                                    f"<states_file>{st}</states_file>", tmp / "osim_states",
                                    coords, bodies)
                        variants.append(("states", s2, tmp / "osim_states", tmp / "ours_states"))
    print("\nmodel [variant] | file | max relative difference")
    for (rel, name), res in table.items():
        worst = max((v[0] for v in res.values() if not isinstance(v, str)), default=0.0)
        notes = sum(isinstance(v, str) for v in res.values())
        print(f"{rel} [{name}] | {len(res)} files | worst {worst:.1e} | {notes} notes")
        for f, v in res.items():
            print(f"    {f.removeprefix('sw_')}: " + (v if isinstance(v, str) else f"{v[0]:.1e} ({v[1]})"))


if __name__ == "__main__":
    main()
